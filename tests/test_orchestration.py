"""The seam between nlsim's runs and their orchestrators: stages declared once and read back, ``direct``
running a stage as it is given, and ``timed_call`` adding each stage's seconds under its group."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from nlsim import orchestration
from nlsim.orchestration import StageInfo, declare, direct, stage_info, timed_call


@pytest.fixture(autouse=True)
def _own_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test declares into a registry of its own: the runs' stages stay as they are."""
    monkeypatch.setattr(orchestration, "_STAGES", {})


def test_a_declared_stage_is_read_back_and_an_undeclared_one_is_unknown() -> None:
    declare(StageInfo("load", "read the input", io=True), StageInfo("embed", "embed", expensive=True))
    assert stage_info("load") == StageInfo("load", "read the input", io=True, expensive=False)
    assert stage_info("embed") == StageInfo("embed", "embed", io=False, expensive=True)
    assert stage_info("cluster") is None  # an orchestrator runs it as a plain task: no retries, no timeout


def test_a_stage_is_neither_io_nor_expensive_unless_declared_so() -> None:
    declare(StageInfo("cluster", "group the pairs"))
    info = stage_info("cluster")
    assert info is not None and (info.io, info.expensive) == (False, False)


def test_a_stage_declared_again_takes_its_latest_description() -> None:
    declare(StageInfo("report", "write the report"))
    declare(StageInfo("report", "write the report", io=True))
    assert stage_info("report") == StageInfo("report", "write the report", io=True)


def test_direct_runs_the_stage_with_its_positional_and_keyword_arguments() -> None:
    assert direct("join", lambda a, b, sep: sep.join([a, b]), "x", "y", sep="-") == "x-y"


def test_timed_call_runs_each_stage_through_the_call_it_wraps() -> None:
    seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def call(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append((name, args, kwargs))
        return fn(*args, **kwargs)

    timings: dict[str, float] = {}
    assert timed_call(call, timings)("join", lambda a, b, sep: sep.join([a, b]), "x", "y", sep="-") == "x-y"
    assert seen == [("join", ("x", "y"), {"sep": "-"})]
    assert set(timings) == {"join"}


def test_timed_call_adds_the_seconds_of_a_groups_stages_under_the_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter([0.0, 1.25, 10.0, 12.5, 20.0, 20.5])  # three stages: 1.25 s, 2.5 s, 0.5 s
    monkeypatch.setattr(orchestration, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    timings: dict[str, float] = {"first-report": 3.0}
    timed = timed_call(direct, timings, {"embed": "report", "cluster": "report"})
    timed("embed", lambda: None)
    timed("cluster", lambda: None)
    timed("check", lambda: None)  # in no group: under its own name
    assert timings == {"first-report": 3.0, "report": 3.75, "check": 0.5}


def test_timed_call_times_a_stage_that_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 4.0])
    monkeypatch.setattr(orchestration, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    timings: dict[str, float] = {}

    def broken() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        timed_call(direct, timings)("commit", broken)
    assert timings == {"commit": 4.0}


def test_timed_call_keeps_hundredths_of_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 0.234])
    monkeypatch.setattr(orchestration, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    timings: dict[str, float] = {}
    timed_call(direct, timings)("load", lambda: None)
    assert timings == {"load": 0.23}
