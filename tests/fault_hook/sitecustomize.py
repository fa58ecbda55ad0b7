"""Imported by Python at the start of a process whose ``PYTHONPATH`` holds this folder (the kill tests'
subprocesses, :func:`tests.faults.fault_env`): with ``NLSIM_FAULT_AT`` set, the process SIGKILLs itself at
that fault point."""

import os
import signal

_STAGE = os.environ.get("NLSIM_FAULT_AT")

if _STAGE:
    from nlsim.faults import set_fault_hook

    def _kill(point: str) -> None:
        if point == _STAGE:
            os.kill(os.getpid(), signal.SIGKILL)

    set_fault_hook(_kill)
