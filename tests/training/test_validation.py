"""Each scored split gets the same-story figures of the model's calibrated threshold (test: scored once)."""

from __future__ import annotations

import pandas as pd

from nlsim.evaluation.calibration import Calibration
from nlsim.training.data import PreparedPairs
from nlsim.training.validation import evaluate_splits


def overlap(texts_a: list[str], texts_b: list[str]) -> list[float]:
    """A toy scorer: the share of characters two texts have in common."""
    return [len(set(a) & set(b)) / len(set(a) | set(b)) for a, b in zip(texts_a, texts_b, strict=True)]


def test_the_calibrated_threshold_is_scored_on_every_split() -> None:
    pairs = pd.DataFrame(
        {
            "text_a": ["abcd", "abcd", "abcd", "wxyz"],
            "text_b": ["abcd", "abce", "wxyz", "wxya"],
            "score": [1.0, 1.0, 0.0, 0.5],
        }
    )
    cal = Calibration(threshold=0.7, level=1.0, precision=1.0, recall=1.0, f1=1.0, n=4, n_positive=2)
    data = PreparedPairs(pairs, pairs, pairs.iloc[:3], {})
    out = evaluate_splits(overlap, data, "after", cal)
    # overlaps 1.0, 0.6, 0.0, 0.6: only the first pair reaches 0.7; two pairs are same story
    assert out["after/validation"]["same_story"] == {
        "threshold": 0.7,
        "precision": 1.0,
        "recall": 0.5,
        "f1": 0.6667,
        "n": 4,
        "n_positive": 2,
    }
    assert out["after/test"]["same_story"]["n"] == 3
    assert "same_story" not in evaluate_splits(overlap, data, "after")["after/validation"]
