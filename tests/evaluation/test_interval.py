"""A same-story F1's bootstrap interval holds the F1, narrows with more pairs, is ``None`` on none."""

from __future__ import annotations

import numpy as np

from nlsim.evaluation.interval import DefinedInterval, defined_f1_interval, f1_interval


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


def test_a_resample_without_a_grouped_or_same_story_pair_is_left_out_where_its_f1_is_undefined() -> None:
    """One grouped pair of 20 judged (3 same story): a third of the resamples group none of the pairs they
    draw. Counted as F1 0 (as the calibration counts nothing predicted) they make the low end 0; where such
    an F1 is undefined (``nlsim judge``) they are left out and counted, and the interval is of the rest."""
    grouped, same_story = np.arange(20) == 0, np.arange(20) < 3
    assert f1_interval(grouped, same_story) == [0.0, 1.0]
    defined = defined_f1_interval(grouped, same_story)
    assert 300 < defined.left_out < 400
    assert defined.ci is not None and 0.0 < defined.ci[0] <= 0.5 <= defined.ci[1]
    assert defined_f1_interval(np.zeros(5, dtype=bool), np.ones(5, dtype=bool)) == DefinedInterval(None, 1000)


def test_the_interval_is_the_2_5th_and_97_5th_percentiles_of_a_thousand_resamples() -> None:
    rng = np.random.default_rng(11)
    positive = rng.random(80) < 0.25
    predicted = np.where(rng.random(80) < 0.75, positive, ~positive)
    draws = np.random.default_rng(0).integers(0, 80, size=(1000, 80))  # the resamples of seed 0
    f1s = [f1(predicted[i], positive[i]) for i in draws]
    want = [round(float(np.percentile(f1s, q)), 4) for q in (2.5, 97.5)]
    assert f1_interval(predicted, positive) == want
    assert defined_f1_interval(predicted, positive) == DefinedInterval(want, 0)


def test_a_resample_without_a_same_story_pair_is_left_out_even_when_it_groups_some() -> None:
    grouped, same_story = np.ones(20, dtype=bool), np.arange(20) == 0  # one same-story pair of 20
    assert 300 < defined_f1_interval(grouped, same_story).left_out < 400
