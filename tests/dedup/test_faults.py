"""Kill a daily run (SIGKILL, via ``NLSIM_FAULT_AT`` and the hook of :mod:`tests.faults`) at every stage:
the state and the last report stay usable, and the next run ends with exactly what an uninterrupted run
gives."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from nlsim.dedup.state import open_state
from nlsim.faults import FAULT_STAGES
from nlsim.io.lock import read_lock
from nlsim.report.files import verify_report
from tests.faults import fault_env
from tests.incremental_helpers import ROOT, bbc_corpus, report_content, run_daily, split_days, state_content
from tests.incremental_helpers import fault_cli_args as cli_args
from tests.incremental_helpers import fault_config as config

POST_COMMIT = {"report-write", "report-publish"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, fast_encoder) -> dict:  # noqa: ANN001
    """Day 1 committed (a snapshot to start each kill from) and day 2 run without interruption."""
    root = tmp_path_factory.mktemp("faults")
    days = split_days(bbc_corpus(n_other=40, n_rewrites=8), root / "in", ["2005-03-06"])
    run_daily(config(days[0], root / "out"), root / "state", retention_days=None, encoder=fast_encoder)
    shutil.copytree(root / "state", root / "snap-state", symlinks=True)
    shutil.copytree(root / "out", root / "snap-out", symlinks=True)
    r2 = run_daily(config(days[1], root / "out"), root / "state", retention_days=None, encoder=fast_encoder)
    assert r2.stats.counts.pairs > 0 and r2.stats.counts.clusters_grown + r2.stats.counts.clusters_new > 0
    return {
        "root": root,
        "days": days,
        "state": state_content(root / "state"),
        "report": report_content(root / "out" / "latest"),
        "day1_report": report_content(root / "snap-out" / "latest"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("stage", FAULT_STAGES)
def test_kill_at_stage_then_rerun_equals_uninterrupted(
    stage: str, reference: dict, tmp_path: Path, fast_encoder
) -> None:  # noqa: ANN001
    state, out = tmp_path / "state", tmp_path / "out"
    shutil.copytree(reference["root"] / "snap-state", state, symlinks=True)
    shutil.copytree(reference["root"] / "snap-out", out, symlinks=True)
    day2 = reference["days"][1]
    env = {**os.environ, **fault_env(stage), "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(
        cli_args(day2, state, out), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    # killed: its lock is left behind, the state opens and is either day 1 or the committed day 2
    assert read_lock(state) is not None
    st = open_state(state)
    assert st.generation == (2 if stage in POST_COMMIT else 1)
    # the last report is whole: day 1's (the new one is never half-visible)
    verify_report(out / "latest")
    assert report_content(out / "latest") == reference["day1_report"]
    # the next run takes over the stale lock and finishes with the uninterrupted result
    r = run_daily(config(day2, out), state, retention_days=None, encoder=fast_encoder)
    assert any("took over a stale lock" in m for m in r.messages)
    assert r.replayed == (stage in POST_COMMIT)
    assert state_content(state) == reference["state"]
    assert report_content(out / "latest") == reference["report"]
    assert read_lock(state) is None
    assert not list((state / "generations").glob(".tmp-*"))
