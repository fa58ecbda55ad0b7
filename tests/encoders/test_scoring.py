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


class _CountingEncoder:
    """An encoder stand-in: a text's embedding is its length and vowel count, normalised; it records
    every list of texts it embeds."""

    def __init__(self) -> None:
        self.jobs: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        self.jobs.append(list(texts))
        v = np.array([[len(t), sum(c in "aeiou" for c in t) + 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_a_remembering_cosine_embeds_each_text_once_over_its_calls_with_the_same_scores() -> None:
    from nlsim.encoders.scoring import pair_scorer

    enc = _CountingEncoder()
    kept = pair_scorer(enc, remember=True)
    plain = pair_scorer(_CountingEncoder())
    pairs = [
        (["a cat", "dog"], ["a kitten", "a cat"]),
        (["dog", "stocks"], ["a kitten", "dog"]),
        (["dog"], ["dog"]),
    ]
    for a, b in pairs:
        assert np.allclose(kept(a, b), plain(a, b))
    assert enc.jobs == [
        ["a cat", "dog", "a kitten"],
        ["stocks"],
    ]  # nothing embedded twice, nothing at all last
    forgetful = _CountingEncoder()
    again = pair_scorer(forgetful)
    again(["dog"], ["dog"])
    again(["dog"], ["dog"])
    assert forgetful.jobs == [["dog"], ["dog"]]


def test_known_scores_answer_a_call_they_cover_and_the_model_the_rest_whole() -> None:
    from nlsim.encoders.scoring import known_first, known_scores

    enc = _CountingEncoder()
    known = known_scores(["a cat", "dog"], ["a kitten", "fish"], [0.25, 0.75])
    score = known_first(known, enc)
    assert score(["dog", "a cat"], ["fish", "a kitten"]).tolist() == [0.75, 0.25]
    assert enc.jobs == []
    mixed = score(["dog", "bird"], ["fish", "fish"])  # one pair unknown: the whole call is computed
    assert enc.jobs == [["dog", "bird", "fish"]] and mixed[0] != 0.75
    assert known_first({}, enc)([], []).tolist() == []
