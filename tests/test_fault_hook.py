"""The kill tests' hook lives in the tests: nlsim marks its fault points and never kills itself, a process
started with :func:`tests.faults.fault_env` is SIGKILLed at the point it names."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.command import ROOT
from tests.faults import FAULT_ENV, fault_env

REACH = (
    "from nlsim.faults import fault_point; fault_point('index-write'); fault_point('manifest'); "
    "print('alive')"
)


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", REACH], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_nlsim_alone_never_kills_itself_at_a_fault_point() -> None:
    proc = _run({FAULT_ENV: "manifest", "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and proc.stdout.strip() == "alive", proc.stderr[-2000:]


def test_the_tests_hook_kills_the_process_at_the_point_named() -> None:
    proc = _run(fault_env("manifest"))
    assert proc.returncode == -signal.SIGKILL and "alive" not in proc.stdout, proc.stderr[-2000:]
    elsewhere = _run(fault_env("report-write"))  # a point this process never reaches
    assert elsewhere.returncode == 0 and elsewhere.stdout.strip() == "alive", elsewhere.stderr[-2000:]


def test_the_catalogues_name_exactly_the_fault_points_nlsim_marks() -> None:
    """A point left out of :data:`~nlsim.faults.FAULT_STAGES` (or the store's, or the merge's) is a point no
    kill test stops at; one named there that nlsim no longer marks is a kill test that kills nothing."""
    import ast

    from nlsim import faults

    marked = set()
    for path in (ROOT / "nlsim").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "fault_point":
                (arg,) = node.args
                if isinstance(arg, ast.Subscript):  # MERGE_FAULT_STAGES[0]
                    marked.add(getattr(faults, arg.value.id)[arg.slice.value])  # type: ignore[attr-defined]
                else:
                    marked.add(ast.literal_eval(arg))
    stages = [*faults.FAULT_STAGES, *faults.STORE_FAULT_STAGES, *faults.MERGE_FAULT_STAGES]
    assert len(stages) == len(set(stages)) and marked == {*stages, "report-move"}


def test_the_hook_is_told_the_point_by_its_whole_name() -> None:
    from nlsim.faults import fault_point, set_fault_hook

    seen: list[str] = []
    set_fault_hook(seen.append)
    try:
        fault_point("index-write")
        fault_point("report-publish")
    finally:
        set_fault_hook(None)
    fault_point("manifest")  # removed: no longer told
    assert seen == ["index-write", "report-publish"]
