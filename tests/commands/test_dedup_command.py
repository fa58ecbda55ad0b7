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


def test_a_batch_run_of_one_pair_says_it_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = Counts(items_in=3, pairs=1, clusters=1, clustered_items=2)
    print_result(result(RunRecord(counts=counts, threshold=0.9), tmp_path))
    assert "3 items, 1 pair, 1 cluster (2 items in clusters); threshold 0.9" in capsys.readouterr().out


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


def test_a_daily_run_that_broke_up_clusters_says_how_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A day after a change of model or --convert breaks up kept clusters; its summary line said only
    "clusters new 0, grown 0, merged 0", as if nothing had changed."""
    counts = Counts(items_in=7, clusters_new=0, clusters_grown=0, clusters_merged=0, clusters_dissolved=18)
    print_result(result(RunRecord(mode="incremental", counts=counts, model="m", threshold=0.8), tmp_path))
    assert "clusters new 0, grown 0, merged 0, dissolved 18;" in capsys.readouterr().out
    quiet = Counts(items_in=7, clusters_new=1, clusters_grown=0, clusters_merged=0, clusters_dissolved=0)
    print_result(result(RunRecord(mode="incremental", counts=quiet, model="m", threshold=0.8), tmp_path))
    assert "dissolved" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("more", "refusal"),
    [
        (["--index", "flat", "--nprobe", "4"], "--nprobe does nothing with --index flat"),
        (["--index", "hnsw", "--nprobe", "4"], "--nprobe does nothing with --index hnsw"),
        (["--index", "flat", "--nlist", "64"], "--nlist does nothing with --index flat"),
        (["--index", "ivf", "--nlist", "64", "--nprobe", "4"], None),
        (["--index", "auto", "--nprobe", "4"], None),  # IVF above 100,000 items
        (["--nprobe", "4"], None),
        (["--index", "flat"], None),
    ],
)
def test_the_ivf_settings_are_refused_with_an_index_that_has_no_lists(
    more: list[str], refusal: str | None
) -> None:
    """``--nlist`` and ``--nprobe`` set an IVF index's lists: with ``--index flat`` or ``hnsw`` they would
    do nothing, and are refused before any work rather than ignored."""
    import argparse

    from nlsim.commands.dedup import add_dedup_options
    from nlsim.commands.options import config_from_args
    from nlsim.dedup.config import DedupConfig
    from nlsim.errors import ConfigError

    parser = argparse.ArgumentParser()
    add_dedup_options(parser)
    args = parser.parse_args(["--corpus", "c.csv", "--out", "rep", *more])
    if refusal is None:
        config_from_args(DedupConfig, args)
        return
    with pytest.raises(ConfigError) as err:
        config_from_args(DedupConfig, args)
    assert str(err.value).startswith(f"{refusal}: leave one of them out"), err.value
    assert "nothing is done yet" in str(err.value)
