"""The kill tests' hook: a process started with :func:`fault_env` SIGKILLs itself when it reaches the fault
point (:mod:`nlsim.faults`) that ``NLSIM_FAULT_AT`` names, exactly as if the machine had killed it there.

The hook is ``tests/fault_hook/sitecustomize.py``: :func:`fault_env` puts its folder first on the
subprocess's ``PYTHONPATH``, so Python imports it at start-up and it installs the hook with
:func:`nlsim.faults.set_fault_hook`. nlsim itself never reads ``NLSIM_FAULT_AT``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nlsim.faults import set_fault_hook

FAULT_ENV = "NLSIM_FAULT_AT"
HOOK_DIR = Path(__file__).resolve().parent / "fault_hook"
ROOT = Path(__file__).resolve().parent.parent


def fault_env(stage: str, pythonpath: str = str(ROOT), signal: str = "KILL") -> dict[str, str]:
    """The environment variables that make a subprocess kill itself at ``stage`` (``pythonpath``: where
    the process finds nlsim; the hook's folder goes in front of it; ``signal``: ``KILL``, or ``TERM`` for
    a stop the process may clean up after)."""
    path = os.pathsep.join([str(HOOK_DIR), pythonpath])
    return {FAULT_ENV: stage, "NLSIM_FAULT_SIGNAL": signal, "PYTHONPATH": path}


@contextlib.contextmanager
def interrupted_at(point: str) -> Iterator[None]:
    """Within it, a run in this process is interrupted (``KeyboardInterrupt``, as Ctrl-C) when it reaches
    the fault point ``point``, and must be: the block raises it, and the hook is gone after."""

    def killed(reached: str) -> None:
        if reached == point:
            raise KeyboardInterrupt(reached)

    set_fault_hook(killed)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        set_fault_hook(None)
