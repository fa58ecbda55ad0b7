"""The fault points: named places of a run where the kill tests stop the process, as if the machine had
been switched off there.

:func:`fault_point` marks a point; it does nothing unless a hook was installed with
:func:`set_fault_hook`. nlsim never installs one: the kill tests do, in the processes they start
(``tests/faults.py``, which SIGKILLs the process at the point ``NLSIM_FAULT_AT`` names; also used by
``benchmarks/bench_reliability.py``).

Points of a daily run (:data:`FAULT_STAGES`): ``embed`` (after the first batch of new items is embedded),
``index-write`` (index files of the new generation written, tables not yet), ``state-write`` (new
generation complete, not yet renamed into place), ``manifest`` (just before the state's manifest is
replaced, i.e. the commit), ``report-write`` (report files half written) and ``report-publish`` (report
complete, ``latest`` not yet switched).

A batch report has ``report-move`` (after each file of a complete report is moved into the folder).

Points of the model store (:data:`STORE_FAULT_STAGES`): ``model-save`` (a model folder written in full,
not yet renamed into place), ``register`` (a new version in place, its ``store.json`` not yet written) and
``promote`` (``CURRENT.json`` moved, the decision not yet in ``history.jsonl``).

A merge (``nlsim annotate merge``) has ``merge-verdicts`` (:data:`MERGE_FAULT_STAGES`: the verdict store
written, the pair file not yet: the merge is not committed, and a read rolls its verdicts back).

Example:
    >>> fault_point("embed")  # no hook installed: nothing happens
    >>> seen = []
    >>> set_fault_hook(seen.append)
    >>> fault_point("manifest")
    >>> set_fault_hook(None)
    >>> seen
    ['manifest']
"""

from __future__ import annotations

from collections.abc import Callable

FAULT_STAGES = ("embed", "index-write", "state-write", "manifest", "report-write", "report-publish")
STORE_FAULT_STAGES = ("model-save", "register", "promote")
MERGE_FAULT_STAGES = ("merge-verdicts",)

FaultHook = Callable[[str], None]
"""Called with the name of each fault point a run reaches."""

_hook: FaultHook | None = None


def set_fault_hook(hook: FaultHook | None) -> None:
    """Install ``hook`` (``None``: remove it); the kill tests' seam."""
    global _hook
    _hook = hook


def fault_point(stage: str) -> None:
    """A fault point named ``stage``: calls the installed hook, if any (none outside the kill tests)."""
    if _hook is not None:
        _hook(stage)
