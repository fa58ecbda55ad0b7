"""Judge reads a report folder only when it is one run: every file its ``run.json`` lists has the SHA-256
recorded there. A ``clusters.parquet`` copied in from another report, or the half-moved report of a run
killed while moving it in (``run.json`` still the earlier run's), is refused naming the file, never judged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nlsim.errors import StateError
from nlsim.evaluation.judge import judge_report
from nlsim.io.lock import LOCK_NAME
from tests.command import nlsim
from tests.evaluation.test_judge import FAST_MODEL, judge, refused, write_report
from tests.faults import fault_env


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = write_report(tmp_path_factory.mktemp("judge-one-run"))
    args = [
        "dedup",
        "--corpus",
        "corpus.parquet",
        "--out",
        "other",
        "--model",
        FAST_MODEL,
        "--convert",
        "none",
    ]
    proc = nlsim(*args, "--threshold", "0.5", "--no-cache", "--no-progress", cwd=folder)  # another run
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder


@pytest.fixture()
def report(written: Path, tmp_path: Path) -> Path:
    for name in ("rep", "other"):
        shutil.copytree(written / name, tmp_path / name, symlinks=True)
    for name in ("pairs.tsv", "corpus.parquet"):
        shutil.copy(written / name, tmp_path / name)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("name", ["clusters.parquet", "pairs.parquet"])
def test_a_file_copied_in_from_another_report_is_refused_by_name(report: Path, name: str) -> None:
    shutil.copy(report / "other" / name, report / "rep" / name)
    with pytest.raises(StateError, match=r"run\.json") as err:
        judge_report(report / "rep", report / "pairs.tsv", corpus=report / "corpus.parquet")
    assert name in str(err.value) and "not one run" in str(err.value)
    refused(judge(report, "pairs.tsv"), 1, name, "not one run")


@pytest.mark.slow
def test_a_report_without_its_run_record_is_refused(report: Path) -> None:
    (report / "rep" / "run.json").unlink()
    refused(judge(report, "pairs.tsv", "--corpus", "corpus.parquet"), 1, "run.json")


@pytest.mark.slow
def test_a_run_killed_while_its_report_was_moved_in_is_named_not_judged(report: Path) -> None:
    """Fault point ``report-move``: killed after the first file was moved in; run.json is the earlier run's
    and the staging folder holds the rest. Judge refuses, saying a killed run left the folder half moved."""
    args = ["dedup", "--corpus", "corpus.parquet", "--out", "rep", "--model", FAST_MODEL, "--convert", "none"]
    proc = nlsim(
        *args, "--threshold", "0.5", "--no-cache", "--no-progress", cwd=report, **fault_env("report-move")
    )
    assert proc.returncode != 0
    assert [p for p in (report / "rep").iterdir() if p.name.startswith(".staging-")]
    line = refused(judge(report, "pairs.tsv"), 1, "killed")
    assert ".staging-" in line and "rep" in line
    assert (report / "rep" / LOCK_NAME).exists()  # the killed run's lock: stale, and said to be


def test_a_report_folder_held_by_a_run_at_its_work_is_judged_and_one_being_written_is_not(
    report: Path,
) -> None:
    """A batch run holds its folder from its start: until it stages its report, the folder is the last
    whole run's, judged with a word that a run is under way; once it stages, the folder is refused."""
    from tests.dedup.test_lock import _start_holder

    holder = _start_holder(report / "rep")
    try:
        proc = judge(report, "pairs.tsv")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert f"a run is under way (pid {holder.pid}" in proc.stderr
        (report / "rep" / ".staging-0123").mkdir()
        line = refused(judge(report, "pairs.tsv"), 1, "is writing the report")
        assert f"pid {holder.pid}" in line
    finally:
        holder.kill()
        holder.wait()
