"""Command-line options derived from a configuration dataclass (:mod:`nlsim.options`).

Example:
    >>> import argparse
    >>> from nlsim.dedup.config import DedupConfig
    >>> p = argparse.ArgumentParser()
    >>> add_config_options(p, DedupConfig)
    >>> cfg = config_from_args(DedupConfig, p.parse_args(["--corpus", "c.csv", "--out", "o", "--cpu"]))
    >>> cfg.corpus, cfg.use_gpu, cfg.text_fields
    ('c.csv', False, ('title', 'description'))
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from typing import Any, get_args, get_origin

from nlsim.options import Option, options_of


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
    """Add one configuration field to an argparse parser or group."""
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


def add_config_options(
    parser: Any, cls: type, *, only: Iterable[str] | None = None, skip: Iterable[str] = ()
) -> None:
    """Add the command-line fields of ``cls`` (optionally ``only`` some, or all but ``skip``)."""
    wanted = set(only) if only is not None else None
    for opt in options_of(cls):
        if not opt.cli or opt.name in skip or (wanted is not None and opt.name not in wanted):
            continue
        add_option(parser, opt)


def config_from_args(cls: type, args: argparse.Namespace, **overrides: Any) -> Any:
    """An instance of ``cls`` from parsed arguments (fields the parser did not define keep their defaults)."""
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    values.update(overrides)
    return cls(**values)


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help that keeps the description's line breaks."""
