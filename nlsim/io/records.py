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

import difflib
import json
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints


class NotAJsonObject(ValueError):
    """A file that holds no JSON object (:func:`read_json_object`); its message says why, in words, without
    the file's name (the reader says it, with what to do)."""


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words (a message's "a JSON null", not Python's "NoneType").

    >>> json_kind([1]), json_kind(None), json_kind(5.0), json_kind("a"), json_kind(True), json_kind({})
    ('list', 'null', 'number', 'string', 'boolean', 'object')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "list"


def read_json_object(path: str | Path, holds: str = "") -> dict[str, Any]:
    """The JSON object the file at ``path`` holds (a UTF-8 byte-order mark before it is skipped), or a
    :class:`NotAJsonObject` saying why not: not UTF-8 text, empty, not valid JSON (cut short, say), or JSON
    of another kind (``holds``: what the object holds, for the message). An :class:`OSError` (no such
    file) is the caller's.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "settings.json"
        >>> _ = path.write_text('\\ufeff{"max_length": 64}', encoding="utf-8")
        >>> read_json_object(path)
        {'max_length': 64}
        >>> _ = path.write_text("[64]", encoding="utf-8")
        >>> read_json_object(path, "settings")
        Traceback (most recent call last):
        ...
        nlsim.io.records.NotAJsonObject: not a JSON object of settings: a JSON list
        >>> _ = path.write_text('{"max_length": 6', encoding="utf-8")
        >>> read_json_object(path)
        Traceback (most recent call last):
        ...
        nlsim.io.records.NotAJsonObject: not valid JSON (Expecting ',' delimiter: line 1 column 17 (char 16))
    """
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotAJsonObject(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise NotAJsonObject("empty (not valid JSON)")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise NotAJsonObject(f"not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise NotAJsonObject(f"not a JSON object{f' of {holds}' if holds else ''}: a JSON {json_kind(value)}")
    return value


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


_KIND_WORDS = {
    str: "text",
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    dict: "an object",
    list: "a list",
    tuple: "a list",
}


def required_fields(cls: type) -> list[str]:
    """The fields of the dataclass ``cls`` without a default: those every record of it holds.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Point:
        ...     x: float
        ...     label: str = ""
        >>> required_fields(Point)
        ['x']
    """
    return [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]


def field_problems(cls: type, data: Mapping[str, Any]) -> list[str]:
    """What keeps ``data`` (a JSON object) from being read as the dataclass ``cls``, in plain words: the
    fields without a default it lacks, those whose value is of another kind (:func:`mistyped_fields`), and,
    when there is any such problem, its keys that are no field of ``cls`` (the closest field named: a
    misspelling); empty when it reads. Keys no field holds are no problem on their own: a newer nlsim may
    have written them (:func:`known_fields`).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Point:
        ...     x: float
        ...     y: float
        ...     label: str = ""
        >>> field_problems(Point, {"a": 1})
        ["it lacks the fields 'x' and 'y'", "'a' is not a field nlsim reads"]
        >>> field_problems(Point, {"x": 1, "y": "2", "lable": ""})
        ["field 'y' holds '2', not a number", "'lable' is not a field nlsim reads (did you mean 'label'?)"]
        >>> field_problems(Point, {"x": 1, "y": 2, "z": 3})
        []
    """
    names = [f.name for f in fields(cls)]
    lacks = [name for name in required_fields(cls) if name not in data]
    problems = [f"it lacks the field{'s' if len(lacks) > 1 else ''} {_listed(lacks)}"] if lacks else []
    problems += [f"field {name!r} {_mistyped(cls, data, name)}" for name in mistyped_fields(cls, data)]
    if problems:
        for key in (k for k in data if k not in names):
            like = difflib.get_close_matches(str(key), names, n=1, cutoff=0.75)
            problems.append(
                f"{key!r} is not a field nlsim reads" + (f" (did you mean {like[0]!r}?)" if like else "")
            )
    return problems


def _mistyped(cls: type, data: Mapping[str, Any], name: str) -> str:
    """``holds 'x', not a number``: the value of a field :func:`mistyped_fields` found, and the kind the
    field keeps (an entry of an object field, ``counts.items_in``: only that it is of another kind)."""
    if "." in name:
        return "is not the kind of value nlsim writes there"
    hint = get_type_hints(cls)[name]
    kinds = (
        [k for k in get_args(hint) if k is not type(None)]
        if get_origin(hint) in (Union, UnionType)
        else [hint]
    )
    kind = _KIND_WORDS.get(get_origin(kinds[0]) or kinds[0], "the kind of value nlsim writes there")
    value = data[name]
    return f"holds {'null' if value is None else repr(value)[:40]}, not {kind}"


def _listed(names: list[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'``."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


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
