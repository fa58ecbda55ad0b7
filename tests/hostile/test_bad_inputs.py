"""Every hostile-input case (``tests/hostile/cases.py``) through the real command line, one slow test each.

A case meant to be refused must be refused by name (one line, no traceback); a case meant to work must
give the right result; in every case no user file may change. The selected cases run in one module
fixture, so that ``-k NAME`` runs just those: each command runs ``nlsim.cli.main`` in this process, one
at a time, as ``python -m nlsim`` would (its exit status, stdout and stderr; an uncaught exception's
traceback on stderr: :func:`tests.command.run_in_process`), which saves starting Python, torch and
transformers again for each of the ~290 cases; the cases that need a process of their own (environment
variables nlsim may read once per process, a lock naming the process that set the case up:
:func:`~tests.hostile.cases.needs_process`) run as real subprocesses, two at a time, and
``NLSIM_HOSTILE_PROCESS=1`` (or ``NLSIM_TEST_SUBPROCESS=1``, for every command-line test) runs every case
so. The templates some cases copy (a saved model, a state folder, a trained chain) are built once, when a
selected case needs them, by commands run in this process too (:func:`~tests.hostile.cases.prepare`). A
case's folder goes as soon
as the case passed (a failed one's stays until the module ends), and the templates when the module ends:
the cases' copies of models and stores came to about 4 GB over the run when they stayed to the end of the
session.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests import command
from tests.hostile.cases import all_cases, build_templates, case_folder, needs_process, run_case

WORK = Path(tempfile.gettempdir()) / f"nlsim-hostile-{uuid.uuid4().hex[:12]}"
"""Where the templates and the cases' folders go: made by :func:`results` when a case runs, and removed
when the module ends (collecting the cases makes nothing)."""
CASES = {c.name: c for c in all_cases(WORK)}
JOBS = int(os.environ.get("NLSIM_HOSTILE_JOBS", "2"))
"""How many of the cases that run as subprocesses run at a time."""
IN_PROCESS = command.IN_PROCESS and os.environ.get("NLSIM_HOSTILE_PROCESS", "") not in ("1", "true", "yes")
"""Whether the cases that need no process of their own run in this process (the default;
``NLSIM_TEST_SUBPROCESS=1`` or ``NLSIM_HOSTILE_PROCESS=1``: every case in a subprocess)."""
TEMPLATED = (
    "bad state",
    "valid state",
    "bad model folder",
    "model store",
    "valid model store",
    "judge",
    "series veto",
)


def _templated(case: Any) -> bool:
    """Whether ``case`` may need the templates: its group's cases do, or it sets its folder up (a
    dangerous-path case copies the saved model, so ``-k`` can select one without its group)."""
    return case.group in TEMPLATED or case.group.startswith("valid judge") or case.setup is not None


def run_and_sweep(name: str) -> dict[str, Any]:
    """Run one case; its folder goes once the case passed (its row holds all the test reads)."""
    row = run_case(CASES[name], WORK / "cases", in_process=IN_PROCESS)
    if row["ok"] and not row["user_files_changed"]:
        shutil.rmtree(case_folder(CASES[name], WORK / "cases"), ignore_errors=True)
    return row


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest) -> Iterator[dict[str, dict[str, Any]]]:
    """Run every selected case (two at a time) once for the module: its result row by case name."""
    names = [
        item.callspec.params["case"]
        for item in request.session.items
        if item.path == Path(__file__) and hasattr(item, "callspec") and "case" in item.callspec.params
    ]
    home = os.environ.get("NLSIM_HOME")
    os.environ["NLSIM_HOME"] = str(WORK / "_home")  # the cases' caches and probes stay in WORK
    WORK.mkdir()
    try:
        if any(_templated(CASES[n]) for n in names):
            build_templates(WORK)
        apart = [n for n in names if not IN_PROCESS or needs_process(CASES[n])]
        with ThreadPoolExecutor(max_workers=max(1, JOBS)) as pool:  # subprocesses: two at a time
            rows = list(pool.map(run_and_sweep, apart))
        rows += [run_and_sweep(n) for n in names if n not in apart]  # in this process: one at a time
        yield {r["case"]: r for r in rows}
    finally:
        if home is None:
            os.environ.pop("NLSIM_HOME", None)
        else:
            os.environ["NLSIM_HOME"] = home
        shutil.rmtree(WORK, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_case(results: dict[str, dict[str, Any]], case: str) -> None:
    row = results[case]
    assert row["user_files_changed"] == 0, row["problems"]
    assert not (row["exit"] == 0 and not row["ok"]), f"a wrong result with exit 0: {row['problems']}"
    assert row["ok"], f"{row['command']}: {'; '.join(row['problems'])}"
