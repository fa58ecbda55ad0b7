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
from typing import Any, get_args, get_origin

from nlsim.options import Option, build, options_of


def comma_list(value: str) -> tuple[str, ...]:
    """``"title,description"`` -> ``("title", "description")`` (``""`` -> ``()``)."""
    return tuple(v.strip() for v in value.split(",") if v.strip())


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
    if base is bool and len(opt.flags) == 2:
        group = parser.add_mutually_exclusive_group()
        on, off = opt.flags
        group.add_argument(
            on, dest=opt.name, action="store_const", const=True, default=opt.default, help=opt.help
        )
        group.add_argument(
            off, dest=opt.name, action="store_const", const=False, help=f"the opposite of {on}"
        )
        return
    if base is bool:
        action = "store_false" if opt.default is True else "store_true"
        parser.add_argument(*opt.flags, dest=opt.name, action=action, default=opt.default, help=opt.help)
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
        kwargs["type"] = comma_list if item is str else (lambda v, t=item: tuple(t(x) for x in comma_list(v)))
    elif base in (int, float):
        kwargs["type"] = base
    elif get_origin(base) is not None and get_args(base):
        kwargs["type"] = str
    parser.add_argument(*opt.flags, **kwargs)


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
    values = {o.name: getattr(args, o.name) for o in options_of(cls) if hasattr(args, o.name)}
    values.update(overrides)
    return build(cls, values)


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help that keeps the description's line breaks."""
