"""Pair scoring with a bi-encoder: the cosine of the two texts' embeddings.

A *pair scorer* is any callable ``(texts_a, texts_b) -> np.ndarray`` of similarities; evaluation,
calibration and the reranker take one. :func:`pair_scorer` turns an encoder into one (each distinct text
embedded once, or once over the scorer's life with ``remember=True``); :func:`known_first` answers from
scores already computed (the chain's zero-shot figures, a training run's validation pass) before it
computes any.

Example:
    >>> from nlsim.encoders import load_encoder
    >>> score = pair_scorer(load_encoder("paraphrase-MiniLM-L3-v2"))
    >>> [round(float(x), 3) for x in score(["a cat"], ["a cat"])]
    [1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

PairScorer = Callable[[Sequence[str], Sequence[str]], np.ndarray]


Embeddings = dict[str, np.ndarray]
"""Texts' L2-normalised embeddings by one model's weights, keyed by the text as it was embedded."""


def pair_scorer(
    encoder: Any,
    batch_size: int = 64,
    progress: bool = False,
    *,
    remember: bool = False,
    kept: Embeddings | None = None,
) -> PairScorer:
    """A pair scorer from an encoder: cosine of L2-normalised embeddings, each distinct text embedded once.

    ``remember``: keep every text's embedding for the scorer's life, so that a text is embedded once over
    all its calls, the texts a call has not seen embedded together (for a model whose weights stay as
    they are meanwhile: a trained model scored on its splits, calibrated, and fitted a reranker beside).
    ``kept``: that memory itself (implies ``remember``), shared with the caller: it may hold embeddings the
    same weights already gave (a training run's validation pass), and it holds what the scorer embeds.

    Example:
        >>> from nlsim.encoders import load_encoder
        >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
        >>> score = pair_scorer(enc, remember=True)
        >>> first = score(["a cat", "stocks fall"], ["a kitten", "markets drop"])
        >>> again = score(["a kitten"], ["a cat"])  # both texts embedded before: nothing is embedded
        >>> bool(abs(first[0] - again[0]) < 1e-6)
        True
    """
    remember = remember or kept is not None
    memory: Embeddings = {} if kept is None else kept

    def score(texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys(list(texts_a) + list(texts_b)))
        if not unique:
            return np.zeros(0, dtype=np.float64)
        where = {t: i for i, t in enumerate(unique)}
        if remember:
            new = [t for t in unique if t not in memory]
            if new:
                memory.update(
                    zip(new, encoder.encode(new, batch_size=batch_size, progress=progress), strict=True)
                )
            emb = np.stack([memory[t] for t in unique])
        else:
            emb = encoder.encode(unique, batch_size=batch_size, progress=progress)
        ia = np.fromiter((where[t] for t in texts_a), dtype=np.int64, count=len(texts_a))
        ib = np.fromiter((where[t] for t in texts_b), dtype=np.int64, count=len(texts_b))
        return np.einsum("ij,ij->i", emb[ia], emb[ib]).astype(np.float64)

    return score


KnownScores = dict[tuple[str, str], float]
"""Scores already computed, keyed by the text pair as it was scored (after conversion)."""


def known_scores(texts_a: Sequence[str], texts_b: Sequence[str], scores: Sequence[float]) -> KnownScores:
    """:data:`KnownScores` of the pairs ``zip(texts_a, texts_b)`` (a pair listed twice keeps its last
    score: one model gives one pair one score)."""
    return {(a, b): float(s) for a, b, s in zip(texts_a, texts_b, scores, strict=True)}


def known_first(known: KnownScores, compute: Any) -> PairScorer:
    """A pair scorer that answers a call from ``known`` when it holds every pair of the call, else from
    ``compute`` (an encoder or a pair scorer) for the whole call: the numbers of one call come from one
    place, never half from each.

    Example:
        >>> calls = []
        >>> score = known_first({("a", "b"): 0.5}, lambda a, b: calls.append(1) or np.zeros(len(a)))
        >>> score(["a"], ["b"]).tolist(), calls
        ([0.5], [])
        >>> score(["a", "x"], ["b", "y"]).tolist(), calls
        ([0.0, 0.0], [1])
    """
    fallback = as_pair_scorer(compute)

    def score(texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        pairs = list(zip(texts_a, texts_b, strict=True))
        if pairs and all(p in known for p in pairs):
            return np.array([known[p] for p in pairs], dtype=np.float64)
        return np.asarray(fallback(texts_a, texts_b), dtype=np.float64)

    return score


def remembered(scorer: PairScorer) -> PairScorer:
    """``scorer``, remembering what it returned for each list of pairs it has scored: calibration and
    evaluation score the same validation pairs, and a model's scores do not change in between.

    Example:
        >>> calls = []
        >>> score = remembered(lambda a, b: calls.append(1) or np.ones(len(a)))
        >>> _ = score(["x"], ["y"]); _ = score(["x"], ["y"]); len(calls)
        1
    """
    seen: dict[tuple[tuple[str, ...], tuple[str, ...]], np.ndarray] = {}

    def score(texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        key = (tuple(texts_a), tuple(texts_b))
        if key not in seen:
            seen[key] = np.asarray(scorer(texts_a, texts_b))
        return seen[key].copy()

    return score


def as_pair_scorer(scorer: Any) -> PairScorer:
    """``scorer`` itself when it is a pair scorer, :func:`pair_scorer` of it when it is an encoder."""
    return pair_scorer(scorer) if hasattr(scorer, "encode") else scorer
