"""Imported by Python at the start of a process whose ``PYTHONPATH`` holds this folder (the kill tests'
subprocesses, :func:`tests.faults.fault_env`): with ``NLSIM_FAULT_AT`` set, the process SIGKILLs itself at
that fault point (``NLSIM_FAULT_SIGNAL=TERM``: sends itself SIGTERM instead, as ``kill`` or a scheduler's
timeout would)."""

import os
import signal

_STAGE = os.environ.get("NLSIM_FAULT_AT")
_SIGNAL = getattr(signal, "SIG" + os.environ.get("NLSIM_FAULT_SIGNAL", "KILL"))

if _STAGE:
    from nlsim.faults import set_fault_hook

    def _kill(point: str) -> None:
        if point == _STAGE:
            os.kill(os.getpid(), _SIGNAL)

    set_fault_hook(_kill)
