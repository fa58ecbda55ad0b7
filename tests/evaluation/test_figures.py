"""The evaluation figures: correlations rounded to two decimals, rates at a threshold and a level."""

from __future__ import annotations

import numpy as np

from nlsim.evaluation.figures import pearson, rates_at, spearman, spearman_raw

SCORES = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.9, 0.5])
GOLD = np.array([0.0, 0.5, 0.25, 1.0, 0.5, 0.75, 0.25])


def test_correlations_are_rounded_to_two_decimals() -> None:
    assert round(spearman_raw(SCORES, GOLD), 6) == 72.739297
    assert spearman(SCORES, GOLD) == 72.74
    assert pearson(SCORES, GOLD) == 80.29


def test_a_score_at_the_threshold_is_predicted_positive() -> None:
    r = rates_at(np.array([0.5, 0.4]), np.array([1.0, 1.0]), threshold=0.5, level=0.875)
    assert (r.precision, r.recall) == (1.0, 0.5)


def test_a_gold_score_at_the_level_counts_even_a_hair_below_it() -> None:
    gold = np.array([0.875, 0.875 - 1e-12, 0.75])
    r = rates_at(np.array([0.9, 0.9, 0.9]), gold, threshold=0.5, level=0.875)
    assert (r.precision, r.recall) == (0.6667, 1.0)
