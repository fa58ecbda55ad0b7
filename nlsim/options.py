"""Typed run configurations that describe their own options.

A configuration is a dataclass whose fields carry their help text and command-line spelling in the
field's metadata (:func:`option`). The command line (:mod:`nlsim.commands.options`) and the Prefect flows'
parameters (``config_flow`` in ``flows/orchestration.py``) are derived from it, and ``prefect.yaml`` may
only name its fields (``tests/flows/test_deployments.py``), so a run's parameters are written once.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Demo:
    ...     corpus: str = option(help="the corpus file")
    ...     k: int = option(10, help="neighbours per item")
    >>> [(o.name, o.flags, o.help) for o in options_of(Demo)]
    [('corpus', ('--corpus',), 'the corpus file'), ('k', ('--k',), 'neighbours per item')]
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import MISSING, dataclass
from typing import Any, Literal, get_args, get_origin


def option(
    default: Any = MISSING,
    *,
    help: str,  # noqa: A002 - the argparse word
    flags: tuple[str, ...] | None = None,
    cli: bool = True,
    metavar: str | None = None,
    default_factory: Any = MISSING,
) -> Any:
    """A dataclass field with its help text and command-line flags.

    ``flags``: the spelling on the command line (default ``--field-name``). For a ``bool | None`` field, two
    flags set it to True and False (``("--gpu", "--cpu")``); for a ``bool`` field whose default is True,
    one flag turns it off (``("--no-cache",)``). ``cli=False`` keeps a field off the command line (still a
    flow parameter).
    """
    meta = {"help": help, "flags": flags, "cli": cli, "metavar": metavar}
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def option_like(cls: type, name: str) -> Any:
    """A field with the default and help of ``cls``'s field ``name`` (for a configuration that shares it)."""
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    if f.default_factory is not MISSING:
        return dataclasses.field(default_factory=f.default_factory, metadata=f.metadata)
    return dataclasses.field(default=f.default, metadata=f.metadata)


@dataclass(frozen=True)
class Option:
    """One field of a configuration, as the command line and the flows see it."""

    name: str
    type: Any
    default: Any
    required: bool
    help: str
    flags: tuple[str, ...]
    cli: bool
    metavar: str | None

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


def options_of(cls: type) -> list[Option]:
    """The fields of a configuration dataclass, in order, with their metadata."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        if "help" not in f.metadata:
            continue
        default = (
            f.default
            if f.default is not MISSING
            else (f.default_factory() if f.default_factory is not MISSING else MISSING)
        )
        out.append(
            Option(
                name=f.name,
                type=hints[f.name],
                default=default,
                required=default is MISSING,
                help=f.metadata["help"],
                flags=tuple(f.metadata.get("flags") or (f"--{f.name.replace('_', '-')}",)),
                cli=bool(f.metadata.get("cli", True)),
                metavar=f.metadata.get("metavar"),
            )
        )
    return out
