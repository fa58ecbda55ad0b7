"""Pair scoring with a bi-encoder: the cosine of the two texts' embeddings.

A *pair scorer* is any callable ``(texts_a, texts_b) -> np.ndarray`` of similarities; evaluation,
calibration and the reranker take one. :func:`pair_scorer` turns an encoder into one (each distinct text
embedded once).

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


def pair_scorer(encoder: Any, batch_size: int = 64, progress: bool = False) -> PairScorer:
    """A pair scorer from an encoder: cosine of L2-normalised embeddings, each distinct text embedded once."""

    def score(texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys(list(texts_a) + list(texts_b)))
        where = {t: i for i, t in enumerate(unique)}
        emb = encoder.encode(unique, batch_size=batch_size, progress=progress)
        ia = np.fromiter((where[t] for t in texts_a), dtype=np.int64, count=len(texts_a))
        ib = np.fromiter((where[t] for t in texts_b), dtype=np.int64, count=len(texts_b))
        return np.einsum("ij,ij->i", emb[ia], emb[ib]).astype(np.float64)

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
