"""Command-line options derived from a configuration dataclass (:mod:`nlsim.options`).

Each setting is one option, spelled by its flat name (``--k``, ``--cluster-rule``) or its own flags; the
settings of one record are one group of ``--help``, headed by the record's concern.

Example:
    >>> import argparse
    >>> from nlsim.dedup.config import DedupConfig
    >>> p = argparse.ArgumentParser()
    >>> add_config_options(p, DedupConfig)
    >>> cfg = config_from_args(DedupConfig, p.parse_args(["--corpus", "c.csv", "--out", "o", "--cpu"]))
    >>> cfg.input.corpus, cfg.search.use_gpu, cfg.input.text_fields
    ('c.csv', False, ('title', 'description'))
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, get_args, get_origin

from nlsim.errors import ConfigError
from nlsim.models.settings import check_batch_size, check_max_length, check_threads
from nlsim.options import BadItem, Option, build, comma_tuple, needed_names, options_of, typed_items


def comma_list(value: str) -> tuple[str, ...]:
    """``"title,description"`` -> ``("title", "description")`` (``""`` -> ``()``)."""
    return comma_tuple(value)


KINDS = {int: "whole numbers", float: "numbers"}
"""How a list option's items are named when one cannot be read (:func:`list_of`)."""


def list_of(item: type) -> Any:
    """The argparse type of a comma-separated list of ``item`` (``"350,700"`` -> ``(350, 700)``), whose
    refusal names the item that is not one.

    Example:
        >>> list_of(int)("350, 700")
        (350, 700)
        >>> list_of(int)("350,seven")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: 'seven' is not one of the whole numbers asked, separated by commas
        >>> list_of(int)("350,,700")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: '350,,700' has an empty item; give the whole numbers asked, ...
    """

    def typed(value: str) -> tuple[Any, ...]:
        try:
            return typed_items(value, item)
        except BadItem as exc:
            kind = KINDS.get(item, item.__name__)
            if exc.item is None:
                raise argparse.ArgumentTypeError(
                    f"{value!r} has an empty item; give the {kind} asked, separated by single commas"
                ) from None
            raise argparse.ArgumentTypeError(
                f"{exc.item!r} is not one of the {kind} asked, separated by commas"
            ) from None

    typed.__name__ = f"list of {KINDS.get(item, item.__name__)}"
    return typed


def _checked_int(value: str, check: Any, flag: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    try:
        check(number)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag} ")) from None  # argparse names it
    return number


def threads_arg(value: str) -> int:
    """An argparse type for ``--threads``: a whole number of at least 1.

    Example:
        >>> threads_arg("2")
        2
        >>> threads_arg("0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be >= 1 (the CPU threads to use), got 0
    """
    return _checked_int(value, check_threads, "--threads")


def batch_size_arg(value: str) -> int:
    """An argparse type for ``--batch-size`` (texts per embedding batch): a whole number from 1 to 4,096.

    Example:
        >>> batch_size_arg("256")
        256
        >>> batch_size_arg("1000000000")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be at most 4,096 (texts embedded at once), got 1000000000
    """
    return _checked_int(value, check_batch_size, "--batch-size")


def max_length_arg(value: str) -> int:
    """An argparse type for ``--max-length``: a whole number of at least 4 tokens.

    Example:
        >>> max_length_arg("64")
        64
        >>> max_length_arg("2")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be at least 4 (two special tokens and the text), got 2
    """
    return _checked_int(value, check_max_length, "--max-length")


def seed_arg(value: str) -> int:
    """An argparse type for ``--seed``: a whole number from 0 to 4,294,967,295 (what numpy's random
    generators take; a negative seed ended ``nlsim annotate draw`` in a traceback).

    Example:
        >>> seed_arg("7")
        7
        >>> seed_arg("-1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a whole number from 0 to 4294967295, got -1
    """
    from nlsim.training.config import check_seed  # deferred: light, but only --seed needs it

    return _checked_int(value, lambda seed: check_seed(seed, "--seed"), "--seed")


def threshold_arg(value: str) -> float:
    """An argparse type for a similarity threshold: a number in [-1, 1] (a cosine or a rerank score).

    Example:
        >>> threshold_arg("0.85")
        0.85
        >>> threshold_arg("85")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: must be a number in [-1, 1] (a cosine or a rerank score), got 85
    """
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not (math.isfinite(number) and -1.0 <= number <= 1.0):
        raise argparse.ArgumentTypeError(
            f"must be a number in [-1, 1] (a cosine or a rerank score), got {value}"
        )
    return number


def _shown(value: Any) -> str:
    if isinstance(value, tuple | list):
        return ",".join(map(str, value))
    return str(value)


def _help(opt: Option, extra: str = "") -> str:
    text = opt.help + extra
    if opt.required or opt.default is None or isinstance(opt.default, bool):
        return text
    return f"{text} (default: {_shown(opt.default)})"


def add_option(parser: Any, opt: Option) -> None:
    """Add one setting of a configuration to an argparse parser or group."""
    base = opt.base_type
    const = _GivenConst if opt.needs else argparse._StoreConstAction
    if base is bool and len(opt.flags) == 2:
        group = parser.add_mutually_exclusive_group()
        on, off = opt.flags
        group.add_argument(on, dest=opt.name, action=const, const=True, default=opt.default, help=opt.help)
        group.add_argument(off, dest=opt.name, action=const, const=False, help=f"the opposite of {on}")
        return
    if base is bool:
        said = opt.default is not True  # the flag says the opposite of the default
        parser.add_argument(
            *opt.flags, dest=opt.name, action=const, const=said, default=opt.default, help=opt.help
        )
        return
    kwargs: dict[str, Any] = {"dest": opt.name, "help": _help(opt)}
    if opt.metavar:
        kwargs["metavar"] = opt.metavar
    if opt.required:
        kwargs["required"] = True
    else:
        kwargs["default"] = opt.default
    if opt.choices is not None:
        kwargs["choices"] = opt.choices
    elif get_origin(base) is tuple or base is tuple:
        item = (get_args(base) or (str,))[0]
        kwargs["type"] = comma_list if item is str else list_of(item)
    elif base in (int, float):
        kwargs["type"] = base
    elif get_origin(base) is not None and get_args(base):
        kwargs["type"] = str
    if opt.needs:
        kwargs["action"] = _Given
    parser.add_argument(*opt.flags, **kwargs)


class _Refused(argparse.Action):
    """An option refused by name (:func:`refuse_option`), before any work (exit status 2)."""

    def __init__(self, *args: Any, why: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.why = why

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        parser.error(self.why)


def refuse_option(parser: argparse.ArgumentParser, flag: str, why: str) -> None:
    """Refuse ``flag`` by name, saying ``why``, before any work (exit status 2), with a value or without: an
    option of another command that argparse would otherwise read as the start of a longer one of
    ``parser``'s (``--model``, ``nlsim dedup``'s, as ``--model-store``). Hidden from the help.

    Example:
        >>> p = argparse.ArgumentParser(prog="x", exit_on_error=False)
        >>> _ = p.add_argument("--model-store")
        >>> refuse_option(p, "--model", "--model is not an option of x")
        >>> p.parse_args(["--model-st", "m"]).model_store
        'm'
    """
    parser.add_argument(flag, action=_Refused, nargs="?", why=why, help=argparse.SUPPRESS)


GIVEN = "given_options"
"""The attribute of parsed arguments that names the settings given on the command line with a ``needs``."""


class _Given(argparse._StoreAction):
    """Store the value, and note that the setting was given (its default is no sign that it was not)."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        super().__call__(parser, namespace, values, option)
        setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), self.dest})


class _GivenConst(argparse._StoreConstAction):
    """A flag's :class:`_Given`: store its value, and note that the setting was given."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        super().__call__(parser, namespace, values, option)
        setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), self.dest})


def check_needs(cls: type, args: argparse.Namespace) -> None:
    """Refuse a setting given on the command line without the setting it needs (``option(needs=...)``),
    where ``cls`` has that one as an option.

    Example:
        >>> from nlsim.dedup.config import DedupConfig
        >>> p = argparse.ArgumentParser()
        >>> add_config_options(p, DedupConfig)
        >>> args = p.parse_args(["--corpus", "c.csv", "--out", "o", "--retention-days", "7"])
        >>> check_needs(DedupConfig, args)
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --retention-days works with --state: give --state with it, or leave ...
    """
    found = needless(cls, getattr(args, GIVEN, ()), lambda name: getattr(args, name, None), cli=True)
    if found is None:
        return
    opt, needed = found
    flag, other = _given_flag(opt, args), needed.flags[0]
    options = {o.name: o for o in options_of(cls) if o.cli}
    # else a need of what it needs (--topics for --topic-support): no other setting of its group to name
    direct = needed.name in needed_names(opt.needs)
    group = opt.within if needed.name == opt.within else opt.needs if direct else None
    also = [options[n].flags[0] for n in needed_names(group) if n in options and n != needed.name]
    if needed.default is True and also:  # --no-reranker, unless --silver-corpus gives it something to do
        given = " or ".join(also)
        raise ConfigError(
            f"{flag} does nothing with {other} unless {given} is given: leave {flag} out, or give {given} "
            "(nothing is done yet)"
        )
    stands = getattr(args, needed.name, None)
    if stands in needed.off:  # a value that leaves it nothing to do (--index flat for --nprobe)
        raise ConfigError(
            f"{flag} does nothing with {other} {stands}: leave one of them out (nothing is done yet)"
        )
    if needed.default is True:  # a setting on by default, turned off by its flag (--no-report)
        raise ConfigError(f"{flag} does nothing with {other}: leave one of them out (nothing is done yet)")
    raise ConfigError(
        f"{flag} works with {other}: give {other} with it, or leave {flag} out (nothing is done yet)"
    )


def needless(
    cls: type, given: Iterable[str], value: Callable[[str], Any], *, cli: bool = False
) -> tuple[Option, Option] | None:
    """The first setting of ``cls`` among those ``given`` (flat names) that does nothing as the setting it
    needs (``option(needs=...)``) stands (``value(name)`` empty, false, None or one of its ``off``
    values: ``--index flat`` for ``--nprobe``), with that one (of several
    it needs any one of, the first, where all are off); else None.
    ``cli``: only the command line's settings count (one off it keeps its default there).

    Example:
        >>> from nlsim.chain.config import PipelineConfig
        >>> opt, needed = needless(PipelineConfig, ["use_gpu"], {"use_gpu": True, "report": False}.get)
        >>> opt.name, needed.name
        ('use_gpu', 'report')
        >>> needless(PipelineConfig, ["use_gpu"], {"use_gpu": True, "report": True}.get) is None
        True
    """
    options = {o.name: o for o in options_of(cls) if o.cli or not cli}
    for name in sorted(given):
        opt = options.get(name)
        if opt is not None and (idle := _idle_need(opt, options, value)) is not None:
            return opt, idle
    return None


def _idle_need(opt: Option, options: Mapping[str, Option], value: Callable[[str], Any]) -> Option | None:
    """The setting that leaves ``opt`` nothing to do, following what its needs need in turn
    (``--topic-support`` needs ``--topic-rule``, which needs ``--topics``): of a group where every member
    is off or idle itself, the first off one (or the first member's own idle need); else None."""
    for group in (opt.within, opt.needs):  # the record's need first (--no-report), then its own
        needed = [options[n] for n in needed_names(group) if n in options and n != opt.name]
        if not needed:
            continue
        idle = [n if n.is_off(value(n.name)) else _idle_need(n, options, value) for n in needed]
        if all(i is not None for i in idle):
            return idle[0]
    return None


def _given_flag(opt: Option, args: argparse.Namespace) -> str:
    """The flag of ``opt`` that gave its value in ``args`` (the second of a pair like ``--gpu``/``--cpu``
    when it gave ``False``)."""
    value = getattr(args, opt.name, None)
    return opt.flags[1] if len(opt.flags) == 2 and opt.base_type is bool and value is False else opt.flags[0]


def add_config_options(parser: Any, cls: type, *, group: str | None = None) -> None:
    """Add the command-line settings of ``cls``: its own to ``parser`` (or to a group titled ``group``),
    each record's to a group headed by its concern."""
    groups: dict[str | None, Any] = {None: parser.add_argument_group(group) if group else parser}
    for opt in options_of(cls):
        if not opt.cli:
            continue
        if opt.concern not in groups:
            groups[opt.concern] = parser.add_argument_group(opt.concern, opt.description)
        add_option(groups[opt.concern], opt)


def config_from_args(cls: type, args: argparse.Namespace, **overrides: Any) -> Any:
    """An instance of ``cls`` from parsed arguments (settings the parser did not define keep their
    defaults); ``overrides`` by flat name."""
    check_needs(cls, args)
    values = {o.name: getattr(args, o.name) for o in options_of(cls) if hasattr(args, o.name)}
    values.update(overrides)
    return build(cls, values)


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help that keeps the description's line breaks."""
