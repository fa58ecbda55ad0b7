"""A benchmark stopped while it writes (Ctrl-C, a full disk, a killed job) leaves the file there as it was:
never a cut-off one that a later run reads back or that stands in for the committed figures."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_cluster_rule  # noqa: E402
import bench_stories  # noqa: E402
import bench_story_threshold  # noqa: E402

PAIRS = pd.DataFrame(
    {
        "id_a": ["1", "3"],
        "id_b": ["2", "4"],
        "similarity": [0.91, 0.87],
        "title_a": ["Storm closes the coast road", "Rates held"],
        "title_b": ["Coast road shut by storm", "Bank holds rates"],
    }
)
WRITE_PARQUET = pd.DataFrame.to_parquet


def _report(cmd: list[str], cwd: Path) -> None:
    """``nlsim dedup`` as the benchmarks run it, stubbed: a report whose ``pairs.parquet`` is ``PAIRS``."""
    out = Path(cmd[cmd.index("--out") + 1])
    out.mkdir(parents=True, exist_ok=True)
    WRITE_PARQUET(PAIRS, out / "pairs.parquet")  # whole: nlsim's report is written atomically


def _stopped_mid_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Parquet write from now on stops half-way, as a killed run's does."""

    def cut_off(frame: pd.DataFrame, path: object, *args: object, **kwargs: object) -> None:
        Path(str(path)).write_bytes(b"PAR1\x15\x04")  # the first bytes of a Parquet file, and no more
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_parquet", cut_off)


def _cluster_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], pd.DataFrame]:
    monkeypatch.setattr(bench_cluster_rule, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bench_cluster_rule, "run_nlsim", _report)
    store = tmp_path / "models"
    store.mkdir()
    return lambda: bench_cluster_rule.scored_pairs(store, 0.84, tmp_path / "report")


def _model(tmp_path: Path) -> bench_stories.Model:
    return bench_stories.Model(tmp_path / "models", "v0001-9708f408", "0a1b2c3d", 0.9, 0.8, pd.DataFrame())


def _stories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], pd.DataFrame]:
    monkeypatch.setattr(bench_stories, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bench_stories, "run_nlsim", _report)
    return lambda: bench_stories.wide_scores(_model(tmp_path))


def _story_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], pd.DataFrame]:
    monkeypatch.setattr(bench_story_threshold, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bench_story_threshold, "run_nlsim", _report)
    return lambda: bench_story_threshold.floor_scores(_model(tmp_path), 0.84)


@pytest.mark.parametrize("cached", [_cluster_rule, _stories, _story_threshold])
def test_a_run_stopped_while_caching_the_scored_pairs_leaves_no_cut_off_cache(
    cached: Callable[[Path, pytest.MonkeyPatch], Callable[[], pd.DataFrame]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cluster and story benchmarks wrote a report's scored pairs straight into their cache: a run
    stopped during the write left a cut-off Parquet file under the cache's name, and every later run took
    it for the cache and ended in an ArrowInvalid traceback until it was found and deleted by hand."""
    score = cached(tmp_path, monkeypatch)
    with monkeypatch.context() as stopped:
        _stopped_mid_write(stopped)
        with pytest.raises(KeyboardInterrupt):
            score()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    pairs = score()  # the next run scores afresh, and caches what it scored
    assert list(pairs["score"]) == [0.91, 0.87]
    assert list(pairs["id_a"]) == ["1", "3"]
