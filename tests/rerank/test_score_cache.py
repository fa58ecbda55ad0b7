"""The cross-encoder's score cache: a cache that cannot be written never costs the run its scores."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

import nlsim.rerank.cache as cache_module
from nlsim.rerank.cache import PairScoreCache


def test_a_full_disk_under_the_cache_leaves_the_scores_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The scores are computed, then the cache's file cannot be written (NLSIM_HOME's disk is full): the
    run gets its scores and is told they were not kept; the next run reads them again."""
    calls: list[int] = []

    def score(a: list[str], b: list[str]) -> np.ndarray:
        calls.append(len(a))
        return np.full(len(a), 0.9)

    def full(frame: object, path: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(cache_module, "atomic_write_parquet", full)
    with caplog.at_level("WARNING", logger="nlsim"):
        scores = PairScoreCache(tmp_path, "d" * 64).scores(["x", "y"], ["y", "z"], score)
    assert scores.tolist() == [0.9, 0.9]
    assert "not kept" in caplog.text and "No space left on device" in caplog.text
    assert not list(tmp_path.iterdir())
    monkeypatch.undo()
    PairScoreCache(tmp_path, "d" * 64).scores(["x"], ["y"], score)
    assert calls == [2, 1]
