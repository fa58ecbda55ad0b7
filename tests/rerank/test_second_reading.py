"""A candidate pair's second reading only where it can matter: the bound, and the pairs finished later."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from nlsim.rerank.cross_encoder import CrossEncoder
from nlsim.rerank.reranker import Reranker
from nlsim.rerank.second_reading import Unread, finish_near_misses, read_candidates, upper_bounds

TEXTS = [
    "a cat sits on the mat",
    "the cat is sitting on a mat",
    "stocks fall sharply in early trading",
    "markets drop as trading opens",
    "rain is expected in the north tomorrow",
    "football club signs a new striker",
    "a kitten on a rug",
    "the striker joins the club",
]


def reranker() -> Reranker:
    torch.manual_seed(0)
    ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2")
    with torch.no_grad():
        ce.head.weight.normal_(0, 0.5)
    return Reranker(cross_encoder=ce, slope=1.0, intercept=0.0, weight=0.5)


def candidates() -> pd.DataFrame:
    a, b = np.triu_indices(len(TEXTS), k=1)
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": a, "b": b, "similarity": rng.uniform(0.5, 1.0, len(a))})


def keys(frame: pd.DataFrame) -> list[tuple[int, int]]:
    return list(zip(frame["a"], frame["b"], strict=True))


def test_the_bound_holds_and_every_pair_that_can_reach_the_threshold_is_read_twice() -> None:
    rr = reranker()
    pairs = candidates()
    texts = dict(enumerate(TEXTS))
    full = rr.combine(
        pairs["similarity"].to_numpy(),
        rr.cross_encoder.predict([TEXTS[i] for i in pairs["a"]], [TEXTS[i] for i in pairs["b"]]),
    )
    threshold = float(np.quantile(full, 0.7))
    out, unread = read_candidates(pairs, texts, rr, threshold, None)
    assert unread is not None and 0 < len(unread) < len(pairs)
    assert keys(out) == keys(pairs)  # every candidate stays, with its cosine (the topic groups' links)
    np.testing.assert_allclose(out["cosine"], pairs["similarity"], atol=1e-6)
    scored = out[out["similarity"].notna()]
    assert len(scored) + len(unread) == len(pairs) and out["cross_encoder"].notna().sum() == len(scored)
    exact = dict(zip(keys(pairs), full, strict=True))
    np.testing.assert_allclose(scored["similarity"], [exact[k] for k in keys(scored)], atol=1e-6)
    assert {k for k, s in exact.items() if s >= threshold} <= set(keys(scored))
    waiting = [exact[k] for k in keys(unread.pairs)]
    assert (unread.pairs["bound"].to_numpy() >= np.array(waiting)).all()
    assert (np.array(waiting) < threshold).all()
    done = unread.finish(np.ones(len(unread), dtype=bool))
    np.testing.assert_allclose(done["similarity"], waiting, atol=1e-6)
    assert len(unread) == 0


def test_the_near_misses_finish_the_pairs_that_may_be_among_them() -> None:
    pairs = pd.DataFrame({"a": [0, 1, 2, 3], "b": [4, 5, 6, 7], "cosine": 0.8, "first": 0.0})
    pairs["bound"] = [0.9, 0.7, 0.5, 0.9]
    read: list[list[int]] = []

    def second(rows: pd.DataFrame) -> np.ndarray:
        read.append(rows["a"].tolist())
        return np.full(len(rows), 0.2)

    unread = Unread(pairs, second, lambda cos, cross: 0.5 * cos + 0.5 * cross)
    best = pd.DataFrame({"similarity": [0.8, 0.6]})
    together = lambda a, b: np.asarray(a) == 3  # noqa: E731 - rows 3 and 7 are in one cluster
    done = finish_near_misses(unread, best, together, count=2)
    assert read == [[0, 1]] and done["a"].tolist() == [0, 1]  # bounds from 0.6 up, apart
    np.testing.assert_allclose(done["similarity"], [0.5, 0.5])
    assert unread.pairs["a"].tolist() == [2, 3]
    finish_near_misses(unread, best.iloc[:1], together, count=2)  # fewer than asked: every apart one
    assert read[-1] == [2] and unread.pairs["a"].tolist() == [3]


def test_upper_bounds() -> None:
    got = upper_bounds(reranker().combine, np.array([1.0]), np.array([0.5]), 0.9)
    np.testing.assert_allclose(got, [0.5 + 0.5 * 0.7], atol=1e-5)
