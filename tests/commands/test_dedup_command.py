"""``nlsim dedup``'s summary lines, read from the typed run record."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nlsim.commands.dedup import print_result
from nlsim.dedup.run import DedupResult
from nlsim.report.record import Counts, RunRecord


def result(record: RunRecord, tmp_path: Path) -> DedupResult:
    return DedupResult(
        out=tmp_path, report_dir=tmp_path, stats=record, pairs=pd.DataFrame(), clusters=pd.DataFrame()
    )


def test_a_batch_run_prints_its_counts_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    counts = Counts(items_in=12, pairs=5, clusters=2, clustered_items=6)
    print_result(result(RunRecord(counts=counts, threshold=0.9), tmp_path))
    out = capsys.readouterr().out
    assert "12 items, 5 pairs, 2 clusters (6 items in clusters); threshold 0.9" in out
    assert str(tmp_path / "pairs.parquet") in out


def test_a_daily_run_prints_what_it_did_and_none_where_it_counted_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = RunRecord(
        mode="incremental", counts=Counts(items_in=7, new=4, kept=30), model="m", threshold=0.8
    )
    print_result(result(record, tmp_path))
    out = capsys.readouterr().out
    assert "items in 7: new 4, changed None," in out
    assert "kept 30" in out
    assert "model m, threshold 0.8" in out
