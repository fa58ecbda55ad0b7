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
