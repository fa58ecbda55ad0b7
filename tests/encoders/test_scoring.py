"""Pair scorers: an encoder's cosine, and a scorer that remembers what it scored."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nlsim.encoders.scoring import remembered


def test_a_remembered_scorer_scores_each_list_of_pairs_once_and_hands_out_copies() -> None:
    calls: list[int] = []

    def score(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        calls.append(len(a))
        return np.array([float(x == y) for x, y in zip(a, b, strict=True)])

    memo = remembered(score)
    first = memo(["a", "b"], ["a", "c"])
    first[0] = 9.0  # a caller's change does not reach the next caller
    assert memo(["a", "b"], ["a", "c"]).tolist() == [1.0, 0.0]
    assert memo(["b"], ["b"]).tolist() == [1.0]
    assert calls == [2, 1]
