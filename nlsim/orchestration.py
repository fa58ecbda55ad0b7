"""The seam between nlsim's runs and whoever orchestrates them.

A run (:func:`nlsim.dedup.run.run_dedup`, :func:`nlsim.training.finetune.finetune`, the chained
pipeline) calls each of its stages through ``call(name, function, *args, **kwargs)``. The command line
passes :func:`direct`; the Prefect flows pass a ``call`` that runs each stage as a task. Runs declare their
stages with :func:`declare` (what each does, whether it is I/O worth retrying, whether it is long enough to
need a timeout), and an orchestrator reads that with :func:`stage_info`.

Example:
    >>> declare(StageInfo("demo-load", "read the input", io=True))
    >>> stage_info("demo-load").io, direct("demo-load", len, [1, 2])
    (True, 2)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Call = Callable[..., Any]
"""``call(stage_name, function, *args, **kwargs) -> result``: how a stage is run."""


@dataclass(frozen=True)
class StageInfo:
    """What a stage does, for the logs and the orchestrators."""

    name: str
    doc: str
    io: bool = False
    expensive: bool = False


_STAGES: dict[str, StageInfo] = {}


def declare(*infos: StageInfo) -> None:
    """Make stages known to orchestrators."""
    for info in infos:
        _STAGES[info.name] = info


def stage_info(name: str) -> StageInfo | None:
    """What is known of the stage called ``name``."""
    return _STAGES.get(name)


def direct(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The plain ``call``: run the stage function here and now."""
    return fn(*args, **kwargs)


def timed_call(call: Call, timings: dict[str, float], groups: dict[str, str] | None = None) -> Call:
    """``call``, adding each stage's seconds to ``timings`` (under ``groups[name]`` when given)."""

    def timed(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(name, fn, *args, **kwargs)
        finally:
            key = (groups or {}).get(name, name)
            timings[key] = round(timings.get(key, 0.0) + time.perf_counter() - start, 2)

    return timed
