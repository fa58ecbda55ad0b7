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
from dataclasses import fields
from typing import Any


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``data`` that are fields of the dataclass ``cls``."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}
