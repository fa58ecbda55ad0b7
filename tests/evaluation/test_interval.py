"""A same-story F1's bootstrap interval holds the F1, narrows with more pairs, is ``None`` on none."""

from __future__ import annotations

import numpy as np

from nlsim.evaluation.interval import f1_interval


def f1(predicted: np.ndarray, positive: np.ndarray) -> float:
    tp = (predicted & positive).sum()
    return float(2 * tp / (predicted.sum() + positive.sum()))


def test_the_interval_holds_the_f1_and_narrows_with_more_pairs() -> None:
    rng = np.random.default_rng(3)
    widths = []
    for n in (60, 600, 6000):
        positive = rng.random(n) < 0.2
        predicted = np.where(rng.random(n) < 0.8, positive, ~positive)
        lo, hi = f1_interval(predicted, positive)
        assert lo <= f1(predicted, positive) <= hi
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2] > 0


def test_a_perfect_grouping_has_no_spread_and_no_pair_has_no_interval() -> None:
    positive = np.array([True, False] * 20)
    assert f1_interval(positive, positive) == [1.0, 1.0]
    assert f1_interval(np.array([], dtype=bool), np.array([], dtype=bool)) is None
