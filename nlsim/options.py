"""Typed run configurations that describe their own options.

A setting is declared once, as a field of the record of its concern (:func:`option`: its default, help
text and command-line spelling in the field's metadata). A configuration is a dataclass of such records
(:func:`concern`), and may have settings of its own. Every setting has a flat name, unique in the
configuration (the field's name unless the field says otherwise): the command line's ``--flag``
(:mod:`nlsim.commands.options`), the Prefect flows' parameter (``config_flow`` in
``flows/orchestration.py``) and the key of :func:`parameters`. ``prefect.yaml`` may only name them
(``tests/flows/test_deployments.py``), so a run's parameters are written once.

:func:`options_of` walks a configuration's records; :func:`build` makes one from flat values, and
:func:`parameters` gives them back. A configuration that composes another's records (the chain's, of the
fine-tuning's and the report's) takes their settings as they are, and may leave out the ones it sets itself
(``omit``) or give some another default and help (``defaults``, ``helps``).

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True, kw_only=True)
    ... class Search:
    ...     k: int = option(10, help="neighbours per item")
    ...     gpu: bool = option(False, help="search on the GPU", name="use_gpu", flags=("--gpu",))
    >>> @dataclass(frozen=True, kw_only=True)
    ... class Demo(Configuration):
    ...     corpus: str = option(help="the corpus file")
    ...     search: Search = concern(Search, title="search")
    >>> [(o.name, o.path, o.flags) for o in options_of(Demo)]  # doctest: +NORMALIZE_WHITESPACE
    [('corpus', ('corpus',), ('--corpus',)), ('k', ('search', 'k'), ('--k',)),
     ('use_gpu', ('search', 'gpu'), ('--gpu',))]
    >>> cfg = Demo.of(corpus="news.csv", use_gpu=True)
    >>> cfg.search.gpu, cfg.parameters()
    (True, {'corpus': 'news.csv', 'k': 10, 'use_gpu': True})
    >>> cfg.with_(k=5).search
    Search(k=5, gpu=True)
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

T = TypeVar("T")
C = TypeVar("C", bound="Configuration")


def option(
    default: Any = MISSING,
    *,
    help: str,  # noqa: A002 - the argparse word
    flags: tuple[str, ...] | None = None,
    cli: bool = True,
    metavar: str | None = None,
    default_factory: Any = MISSING,
    name: str | None = None,
    needs: str | tuple[str, ...] | None = None,
    off: tuple[Any, ...] = (),
) -> Any:
    """A dataclass field with its help text and command-line flags.

    ``name``: the setting's flat name (the flows' parameter, the command line's destination, the key of
    :func:`parameters`; default: the field's name). ``flags``: the spelling on the command line (default
    ``--flat-name``). For a ``bool | None`` field, two flags set it to True and False (``("--gpu",
    "--cpu")``); for a ``bool`` field whose default is True, one flag turns it off (``("--no-cache",)``).
    ``cli=False`` keeps a field off the command line (still a flow parameter). ``needs``: the flat name of
    a setting without which this one does nothing: given on the command line without it, it is refused
    (where the configuration has that setting as an option; one that sets it itself is not asked); several
    names: any one of them makes it do something (refused when none of them is on); a need that does
    nothing itself, for want of its own need, counts as off (``--topic-support`` needs ``--topic-rule``,
    which needs ``--topics``). ``off``: the values
    of this setting, besides empty, false and None, that leave the settings needing it nothing to do
    (``--index flat`` for ``--nprobe``, which needs ``index_kind``).
    """
    meta = {"help": help, "flags": flags, "cli": cli, "metavar": metavar, "name": name, "needs": needs}
    meta["off"] = tuple(off)
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def concern(
    record: type,
    *,
    title: str,
    description: str | None = None,
    omit: tuple[str, ...] = (),
    defaults: Mapping[str, Any] | None = None,
    helps: Mapping[str, str] | None = None,
    needs: str | None = None,
) -> Any:
    """A field holding the record of one concern: its settings are options of the configuration.

    ``title`` and ``description`` head the record's group in ``--help``. ``omit``: the flat names of the
    record's settings that the configuration sets itself (they are no options of it, and keep the record's
    defaults until it sets them); ``defaults`` and ``helps``: another default or help text of some, by flat
    name; ``needs``: the flat name of the configuration's setting without which the record's settings do
    nothing (each one's own ``needs`` stays, unless the configuration sets that one itself). The field has a
    default when every setting of the record has one.
    """
    meta = {
        "concern": record,
        "title": title,
        "description": description,
        "omit": tuple(omit),
        "defaults": dict(defaults or {}),
        "helps": dict(helps or {}),
        "needs": needs,
    }
    known = {o.name for o in options_of(record)}
    unknown = (set(meta["omit"]) | set(meta["defaults"]) | set(meta["helps"])) - known
    if unknown:
        raise TypeError(f"{record.__name__} has no setting {', '.join(sorted(unknown))}")
    if any(o.required and o.name not in meta["defaults"] for o in options_of(record)):
        return dataclasses.field(metadata=meta)
    return dataclasses.field(
        default_factory=lambda: _build(record, {}, meta["omit"], meta["defaults"]), metadata=meta
    )


def option_like(cls: type, name: str) -> Any:
    """A field with the default, help and flags of ``cls``'s setting ``name`` (for a configuration that
    shares it without composing its record)."""
    opt = {o.name: o for o in options_of(cls)}[name]
    meta = {"help": opt.help, "flags": opt.flags, "cli": opt.cli, "metavar": opt.metavar, "name": None}
    meta["needs"], meta["off"] = opt.needs, opt.off
    return dataclasses.field(default=opt.default, metadata=meta)


@dataclass(frozen=True)
class Option:
    """One setting of a configuration, as the command line and the flows see it."""

    name: str
    """The flat name: the flows' parameter, the command line's destination, the key of :func:`parameters`."""
    path: tuple[str, ...]
    """The attributes that lead to it from the configuration (``("search", "k")``)."""
    type: Any
    default: Any
    required: bool
    help: str
    flags: tuple[str, ...]
    cli: bool
    metavar: str | None
    concern: str | None = None
    """The title of its record's group (``None``: a setting of the configuration itself)."""
    description: str | None = None
    """The description of its record's group."""
    needs: str | tuple[str, ...] | None = None
    """The flat name of the setting without which this one does nothing, or the names of the settings
    without all of which it does nothing (:func:`option`)."""
    within: str | None = None
    """The flat name of the setting its record needs (a report's settings need ``report``), where the
    setting has a need of its own (:attr:`needs`, the topic threshold's ``topics``): it does nothing without
    either."""
    off: tuple[Any, ...] = ()
    """The values, besides empty, false and None, at which the settings that need this one do nothing
    (:func:`option`)."""

    def is_off(self, value: Any) -> bool:
        """Whether the settings that need this one do nothing while it has ``value``."""
        return value in (None, "", False) or value in self.off

    @property
    def choices(self) -> tuple[Any, ...] | None:
        """The allowed values of a ``Literal`` field (or of ``Literal | None``)."""
        return literal_choices(self.type)

    @property
    def base_type(self) -> Any:
        """The field's type without ``None`` (``float | None`` -> ``float``)."""
        args = [a for a in get_args(self.type) if a is not type(None)]
        if get_origin(self.type) in (typing.Union, types.UnionType) and len(args) == 1:
            return args[0]
        return self.type


def literal_choices(tp: Any) -> tuple[Any, ...] | None:
    if get_origin(tp) is Literal:
        return get_args(tp)
    for arg in get_args(tp):
        if get_origin(arg) is Literal:
            return get_args(arg)
    return None


def _default(f: dataclasses.Field) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def options_of(cls: type) -> list[Option]:
    """The settings of a configuration dataclass, in order, its records' included (see the module
    docstring); two settings with one flat name are refused."""
    out = _walk(cls, (), None, None, (), {}, {}, None)
    seen: dict[str, Option] = {}
    for opt in out:
        if opt.name in seen:
            raise TypeError(
                f"{cls.__name__}: two settings named {opt.name!r} ({'.'.join(seen[opt.name].path)} and "
                f"{'.'.join(opt.path)}): give one another name"
            )
        seen[opt.name] = opt
    return out


def _walk(
    cls: type,
    prefix: tuple[str, ...],
    title: str | None,
    description: str | None,
    omit: tuple[str, ...],
    defaults: Mapping[str, Any],
    helps: Mapping[str, str],
    needs: str | None,
) -> list[Option]:
    records = {f.metadata["concern"] for f in dataclasses.fields(cls) if "concern" in f.metadata}
    hints = typing.get_type_hints(cls, localns={r.__name__: r for r in records}, include_extras=True)
    out: list[Option] = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if "concern" in meta:
            out += _walk(
                meta["concern"],
                (*prefix, f.name),
                meta["title"],
                meta["description"],
                (*omit, *meta["omit"]),
                {**meta["defaults"], **defaults},
                {**meta["helps"], **helps},
                meta["needs"] or needs,
            )
            continue
        if "help" not in meta:
            continue
        name = meta.get("name") or f.name
        if name in omit:
            continue
        default = defaults[name] if name in defaults else _default(f)
        out.append(
            Option(
                name=name,
                path=(*prefix, f.name),
                type=hints[f.name],
                default=default,
                required=default is MISSING,
                help=helps.get(name, meta["help"]),
                flags=tuple(meta.get("flags") or (f"--{name.replace('_', '-')}",)),
                cli=bool(meta.get("cli", True)),
                metavar=meta.get("metavar"),
                concern=title,
                description=description,
                needs=_needs(meta.get("needs"), omit) or needs,
                within=needs if needs and _needs(meta.get("needs"), omit) not in (None, needs) else None,
                off=tuple(meta.get("off") or ()),
            )
        )
    return out


def _needs(needs: str | tuple[str, ...] | None, omit: tuple[str, ...]) -> str | tuple[str, ...] | None:
    """What a setting needs (:func:`option`) less the settings a configuration sets itself (``omit``)."""
    if isinstance(needs, tuple):
        kept = tuple(n for n in needs if n not in omit)
        return kept if len(kept) > 1 else (kept[0] if kept else None)
    return needs if needs and needs not in omit else None


def needed_names(needs: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The flat names in an :attr:`Option.needs` (none, one or several)."""
    if not needs:
        return ()
    return needs if isinstance(needs, tuple) else (needs,)


def build(cls: type[T], values: Mapping[str, Any]) -> T:
    """An instance of the configuration ``cls`` from its settings' values by flat name (the others take
    their defaults); a name that is no setting of ``cls`` is refused."""
    left = dict(values)
    made = _build(cls, left, (), {})
    if left:
        raise TypeError(f"{cls.__name__} has no setting {', '.join(sorted(left))}")
    return made


def _build(cls: type[T], left: dict[str, Any], omit: tuple[str, ...], defaults: Mapping[str, Any]) -> T:
    """``cls`` from the values ``left`` (each taken out as it is used), ``defaults`` where none is given."""
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if "concern" in meta:
            inner = {**meta["defaults"], **defaults}
            kwargs[f.name] = _build(meta["concern"], left, (*omit, *meta["omit"]), inner)
            continue
        name = meta.get("name") or f.name
        if "help" not in meta or name in omit:
            continue
        if name in left:
            kwargs[f.name] = left.pop(name)
        elif name in defaults:
            kwargs[f.name] = defaults[name]
    return cls(**kwargs)  # type: ignore[call-arg]


def parameters(config: Any) -> dict[str, Any]:
    """The settings of a configuration as plain values by flat name (:func:`build` makes it back)."""
    out = {}
    for opt in options_of(type(config)):
        value = config
        for attr in opt.path:
            value = getattr(value, attr)
        out[opt.name] = value
    return out


def assign(record: Any, name: str, value: Any) -> None:
    """Set a field of a frozen record while it is being made (``__post_init__``'s normalising)."""
    object.__setattr__(record, name, value)


def text_paths(record: Any, *names: str) -> None:
    """The fields ``names`` of ``record`` as text where a ``Path`` was given (one spelling in records)."""
    for name in names:
        value = getattr(record, name)
        if isinstance(value, Path):
            assign(record, name, str(value))


def comma_tuple(value: Any) -> tuple[str, ...]:
    """``"title,description"`` or a list -> ``("title", "description")``."""
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(value)


class BadItem(ValueError):
    """An item of a list :func:`typed_items` read that is not of the kind asked: ``item`` is that item as
    written, or ``None`` for an empty item between commas (``"350,,700"``, a trailing comma), which
    would otherwise have been read as the list without it."""

    def __init__(self, item: Any = None) -> None:
        super().__init__("an empty item" if item is None else item)
        self.item = item


def typed_items(value: Any, item: type) -> tuple[Any, ...]:
    """``"350,700"`` or a list -> its items as ``item`` (``(350, 700)``); an item that is not one, or an
    empty item between commas, is a :class:`BadItem` for the caller's message (the command line's, a
    configuration's). Blank text is the empty list.

    Example:
        >>> typed_items("350, 700", int), typed_items([1, 2], int), typed_items(" ", int)
        ((350, 700), (1, 2), ())
        >>> typed_items("350,seven", int)
        Traceback (most recent call last):
        ...
        nlsim.options.BadItem: seven
        >>> typed_items("350,,700", int)
        Traceback (most recent call last):
        ...
        nlsim.options.BadItem: an empty item
    """
    if isinstance(value, str) and value.strip() and any(not p.strip() for p in value.split(",")):
        raise BadItem()
    out = []
    for part in comma_tuple(value):
        if isinstance(part, item) and not isinstance(part, bool):
            out.append(part)
            continue
        try:
            out.append(item(str(part).strip()))
        except ValueError:
            raise BadItem(part) from None
    return tuple(out)


class Configuration:
    """What every configuration of records can do: be made from flat values (:meth:`of`), give them back
    (:meth:`parameters`) and be copied with some changed (:meth:`with_`)."""

    @classmethod
    def of(cls: type[C], **values: Any) -> C:
        """The configuration with these settings, by flat name (the others take their defaults)."""
        return build(cls, values)

    def parameters(self) -> dict[str, Any]:
        """The settings as plain values by flat name (the flows' parameters; ``training.json``)."""
        return parameters(self)

    def with_(self: C, **changes: Any) -> C:
        """A copy with some settings changed, by flat name."""
        return build(type(self), {**self.parameters(), **changes})
