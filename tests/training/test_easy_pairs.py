"""Which pairs a later epoch leaves out (nlsim.training.easy_pairs)."""

from __future__ import annotations

import numpy as np

from nlsim.training.easy_pairs import line_errors, sample_easy, still_hard


def test_the_easy_pairs_drawn_weigh_as_the_ones_left_out() -> None:
    """Over many draws, the drawn easy pairs' weights add up to the number of easy pairs: the epoch's loss
    is an unbiased estimate of the loss over every pair; the hard ones are always kept, at weight 1."""
    hard = np.zeros(1000, dtype=bool)
    hard[:100] = True
    rng = np.random.default_rng(0)
    totals = []
    for _ in range(200):
        keep, weight = sample_easy(hard, 0.25, rng)
        assert keep[:100].all() and (weight[:100] == 1).all()
        totals.append(weight[100:][keep[100:]].sum())
    assert abs(np.mean(totals) - 900) < 10
    keep, weight = sample_easy(hard, 0.0, rng)
    assert (keep == hard).all() and (weight == 1).all()


def test_same_story_and_unseen_pairs_stay_and_an_empty_epoch_keeps_all() -> None:
    errors = np.array([0.01, 0.5, 0.01, np.inf])
    story = np.array([False, False, True, False])
    assert still_hard(errors, story, 0.1).tolist() == [False, True, True, True]
    assert still_hard(errors, story, 0.0).all()
    assert still_hard(np.array([0.01, 0.02]), np.array([False, False]), 0.1).all()


def test_line_errors_read_the_distance_from_the_fitted_line() -> None:
    cosines = np.array([0.2, 0.4, 0.6, 0.8, np.inf])
    scores = 2 * cosines[:4] - 0.4
    errors = line_errors(cosines, np.append(scores, 0.0))
    np.testing.assert_allclose(errors[:4], 0.0, atol=1e-9)
    assert errors[4] == np.inf
    assert np.isinf(
        line_errors(np.array([0.5, 0.5]), np.array([0.0, 1.0]))
    ).all()  # no line through one point
