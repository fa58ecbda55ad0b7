"""Typed records read back from JSON that another version of nlsim may have written.

A record file (``run.json``, ``pipeline.json``, a calibration, an index's metadata) can hold entries a
newer nlsim added, or miss ones an older one did not write: :func:`known_fields` keeps the entries that
are fields of the dataclass, so the record reads with its own defaults for the rest.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Point:
    ...     x: int
    ...     y: int = 0
    >>> Point(**known_fields(Point, {"x": 1, "z": 9}))
    Point(x=1, y=0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``data`` that are fields of the dataclass ``cls``."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


_JSON_TYPES: dict[type, tuple[type, ...]] = {
    str: (str,),
    bool: (bool,),
    int: (int,),
    float: (int, float),
    dict: (dict,),
    list: (list,),
    tuple: (list,),
}


def mistyped_fields(cls: type, data: Mapping[str, Any]) -> list[str]:
    """The entries of ``data`` whose JSON value is not of the kind the dataclass ``cls`` declares for its
    field: a string where a number is kept, a number where an object is (a dataclass field reads from a JSON
    object, whose own entries are checked the same way: ``counts.items_in``). ``None`` is of the kind where
    the field's type allows it, and for a dataclass field (read with its defaults); a type this cannot tell
    (``Any``, a union of several kinds) is taken as it is.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Point:
        ...     x: float
        ...     y: float | None = None
        ...     tags: list[str] | None = None
        >>> mistyped_fields(Point, {"x": 1, "y": None, "tags": "a,b", "z": "?"})
        ['tags']
        >>> mistyped_fields(Point, {"x": "1.5"})
        ['x']
    """
    hints = get_type_hints(cls)
    wrong = []
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        hint = hints[f.name]
        kinds = list(get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,))
        nullable = type(None) in kinds
        kinds = [k for k in kinds if k is not type(None)]
        if len(kinds) != 1 or value is None and (nullable or is_dataclass(kinds[0])):
            continue
        kind = kinds[0]
        if is_dataclass(kind) and isinstance(kind, type):
            if not isinstance(value, dict):
                wrong.append(f.name)
            else:
                wrong += [f"{f.name}.{inner}" for inner in mistyped_fields(kind, value)]
            continue
        allowed = _JSON_TYPES.get(get_origin(kind) or kind)
        if allowed is None:
            continue
        if value is None or not isinstance(value, allowed) or isinstance(value, bool) and bool not in allowed:
            wrong.append(f.name)
    return wrong


def misfit(data: Mapping[str, Any], key: str) -> str:
    """What is wrong with ``key`` of a record nlsim wrote, in words: it is missing, or its value is of another
    kind than nlsim writes there (:func:`mistyped_fields`); both mean the file was edited by hand.

    >>> misfit({"count": "12"}, "count"), misfit({}, "run_id")[:12]
    ("has '12' for 'count', not the kind of value nlsim writes there (edited by hand)", "has no 'run_")
    """
    if key not in data:
        return f"has no {key!r} (every run nlsim commits writes it: the file was edited by hand)"
    shown = str(data[key])[:60]
    return f"has {shown!r} for {key!r}, not the kind of value nlsim writes there (edited by hand)"
