"""The fault-test hook: a process kills itself at a named point, exactly as if the machine had killed it.

When the environment variable ``NLSIM_FAULT_AT`` names a point, the process sends itself SIGKILL when it
reaches :func:`fault_point` for that point (the kill tests and ``benchmarks/bench_reliability.py``).
Unset (always, outside tests), it does nothing.

Points of a daily run (:data:`FAULT_STAGES`): ``embed`` (after the first batch of new items is embedded),
``index-write`` (index files of the new generation written, tables not yet), ``state-write`` (new
generation complete, not yet renamed into place), ``manifest`` (just before the state's manifest is
replaced, i.e. the commit), ``report-write`` (report files half written) and ``report-publish`` (report
complete, ``latest`` not yet switched).

Points of the model store (:data:`STORE_FAULT_STAGES`): ``model-save`` (a model folder written in full,
not yet renamed into place), ``register`` (a new version in place, its ``store.json`` not yet written) and
``promote`` (``CURRENT.json`` moved, the decision not yet in ``history.jsonl``).

Example:
    >>> fault_point("embed")  # NLSIM_FAULT_AT is not set: nothing happens
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "NLSIM_FAULT_AT"
FAULT_STAGES = ("embed", "index-write", "state-write", "manifest", "report-write", "report-publish")
STORE_FAULT_STAGES = ("model-save", "register", "promote")


def fault_point(stage: str) -> None:
    """Kill this process with SIGKILL when ``$NLSIM_FAULT_AT == stage`` (test hook; no-op otherwise)."""
    if os.environ.get(FAULT_ENV) == stage:
        os.kill(os.getpid(), signal.SIGKILL)
