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


def test_a_cosine_scores_each_pair_of_its_own_texts_in_float64() -> None:
    from nlsim.encoders.scoring import pair_scorer

    enc = _CountingEncoder()
    scores = pair_scorer(enc)(["a cat", "a cat"], ["a cat", "stocks"])
    e = enc.encode(["a cat", "stocks"])
    assert scores.dtype == np.float64
    np.testing.assert_allclose(scores, [1.0, float(e[0] @ e[1])], rtol=1e-6)
    assert scores[1] < 0.99  # the second pair's b text, not its a text


def test_a_cosine_passes_its_batch_size_and_progress_to_the_encoder() -> None:
    from nlsim.encoders.scoring import pair_scorer

    seen: list[tuple[int, bool]] = []

    class Recording(_CountingEncoder):
        def encode(self, texts: Sequence[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
            seen.append((batch_size, progress))
            return super().encode(texts)

    pair_scorer(Recording(), batch_size=7, progress=True)(["a"], ["b"])
    pair_scorer(Recording(), batch_size=5, progress=True, remember=True)(["a"], ["b"])
    assert seen == [(7, True), (5, True)]


def test_a_cosine_given_kept_embeddings_takes_them_and_adds_what_it_embeds() -> None:
    from nlsim.encoders.scoring import pair_scorer

    enc = _CountingEncoder()
    kept = {"a cat": enc.encode(["a cat"])[0]}
    enc.jobs.clear()
    score = pair_scorer(enc, kept=kept)  # no remember=True: kept implies it
    score(["a cat"], ["dog"])
    score(["dog"], ["a cat"])
    assert enc.jobs == [["dog"]]  # "a cat" taken from kept, "dog" embedded once
    assert sorted(kept) == ["a cat", "dog"]  # the caller's memory holds what the scorer embedded


def test_known_scores_keep_a_repeated_pairs_last_score_and_its_order() -> None:
    from nlsim.encoders.scoring import known_first, known_scores

    assert known_scores(["a", "a"], ["b", "b"], [0.1, 0.9]) == {("a", "b"): 0.9}
    known = known_scores(["a", "b"], ["b", "a"], [0.25, 0.75])  # an asymmetric model: (b, a) is another pair
    assert known_first(known, _CountingEncoder())(["a", "b"], ["b", "a"]).tolist() == [0.25, 0.75]


def test_a_remembered_scorer_tells_apart_two_lists_of_pairs_in_another_order() -> None:
    calls: list[list[str]] = []

    def score(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        calls.append(list(a))
        return np.array([float(x < y) for x, y in zip(a, b, strict=True)])

    memo = remembered(score)
    assert memo(["a", "z"], ["m", "m"]).tolist() == [1.0, 0.0]
    assert memo(["z", "a"], ["m", "m"]).tolist() == [0.0, 1.0]
    assert calls == [["a", "z"], ["z", "a"]]
