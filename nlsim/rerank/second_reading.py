"""A candidate pair's second reading, only where it can matter.

The cross-encoder's score of a pair is the mean of its two readings, each text first once
(:meth:`nlsim.rerank.cross_encoder.CrossEncoder.predict`), and most of a report's candidate pairs score far
below the threshold. After the first reading ``p1`` a pair's rerank score is at most
``combine(cosine, (p1 + bound) / 2)``, where ``bound`` is the highest score the cross-encoder can give
(:meth:`~nlsim.rerank.cross_encoder.CrossEncoder.score_bound`, from its weights alone). The rerank stage
reads the second order of every pair whose bound reaches the threshold, so every pair at or above it has
its exact score, as before; the others are :class:`Unread`. The near misses (the best pairs below the
threshold, for editors to review) need exact scores too: the near-miss stage finishes the unread pairs that
could still be among them (:func:`nlsim.dedup.stages.near_misses`), so its list is the one reading every
pair twice gives. A pair read twice is kept in the pair-score cache; a pair read once is not.

Only the exact fp32 paths are read this way (a lossy path's score could pass the bound by its rounding), and
not with a story model (its score is no combination of the two); otherwise every pair is read twice.

Example (bounds of three first readings at cosine 0.9, a line ``cosine`` → score of slope 1, weight 0.5,
bound 0.95):
    >>> import numpy as np
    >>> line = lambda cos, cross: 0.5 * (1.0 * cos + 0.0) + 0.5 * cross
    >>> upper_bounds(line, np.array([0.9, 0.9, 0.9]), np.array([0.1, 0.5, 0.95]), 0.95).round(4)
    array([0.7125, 0.8125, 0.925 ])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nlsim.progress import say
from nlsim.rerank.cache import PairScoreCache
from nlsim.rerank.target import cross_encoder_inference

BOUND_SLACK = 1e-6
"""Added to the cross-encoder's bound: float rounding in the forward pass may pass it by a hair."""


def upper_bounds(
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray],
    cosines: np.ndarray,
    first: np.ndarray,
    bound: float,
) -> np.ndarray:
    """The highest rerank score (``combine(cosines, cross)``, :meth:`nlsim.rerank.reranker.Reranker.combine`)
    each pair can get when its cross-encoder score is the mean of the first reading ``first`` and a second
    one of at most ``bound``."""
    return combine(cosines, (np.asarray(first, dtype=np.float64) + bound + BOUND_SLACK) / 2)


@dataclass
class Unread:
    """Candidate pairs read in one order only: window rows ``a`` and ``b``, their ``cosine``, the first
    reading (``first``: ``a``'s text first) and the highest rerank score the second reading could give
    them (``bound``, below the threshold), and how to read the second order (``second(pairs)``: the
    cross-encoder's scores of those pairs, both orders' mean, kept in the cache)."""

    pairs: pd.DataFrame
    second: Callable[[pd.DataFrame], np.ndarray]
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray]
    """The rerank score from the cosines and the cross-encoder's scores."""
    hold: Callable[[pd.DataFrame, np.ndarray], np.ndarray] | None = None
    """What the rerank stage does to a score read twice, done to the finished pairs' scores as well
    (``hold(rows, scores)``: the series veto, :func:`nlsim.rerank.series.vetoed_scores`), so that a pair
    finished later scores as one read twice at once."""

    def __len__(self) -> int:
        return len(self.pairs)

    def finish(self, take: np.ndarray) -> pd.DataFrame:
        """Read the second order of the unread pairs where ``take`` is true and return them scored (``a``,
        ``b``, ``similarity`` the rerank score, ``cosine``, ``cross_encoder``); they are read from then on."""
        rows = self.pairs[np.asarray(take, dtype=bool)].reset_index(drop=True)
        self.pairs = self.pairs[~np.asarray(take, dtype=bool)].reset_index(drop=True)
        if rows.empty:
            return rows.reindex(columns=["a", "b", "similarity", "cosine", "cross_encoder"])
        cross = np.asarray(self.second(rows), dtype=np.float64)
        cos = rows["cosine"].to_numpy(dtype=np.float64)
        scores = self.combine(cos, cross)
        if self.hold is not None:
            scores = self.hold(rows, scores)
        return pd.DataFrame(
            {
                "a": rows["a"].to_numpy(),
                "b": rows["b"].to_numpy(),
                "similarity": np.asarray(scores).astype(np.float32),
                "cosine": cos.astype(np.float32),
                "cross_encoder": cross.astype(np.float32),
            }
        )


def needs_second(bounds: np.ndarray, threshold: float) -> np.ndarray:
    """Where a pair's second reading decides whether it reaches ``threshold``."""
    return np.asarray(bounds, dtype=np.float64) >= float(threshold)


def finish_near_misses(
    unread: Unread, best: pd.DataFrame, together: Callable[[np.ndarray, np.ndarray], np.ndarray], count: int
) -> pd.DataFrame:
    """The unread pairs that could be among the ``count`` best near misses, read twice and scored: those
    whose two items are apart (``together(a, b)`` false) and whose bound reaches the lowest score of
    ``best`` (the near misses found among the pairs read twice), or every apart one while ``best`` has
    fewer than ``count``."""
    if not len(unread) or count <= 0:
        return unread.finish(np.zeros(len(unread), dtype=bool))
    floor = float(best["similarity"].min()) if len(best) >= count else -np.inf
    pairs = unread.pairs
    apart = ~together(pairs["a"].to_numpy(), pairs["b"].to_numpy())
    return unread.finish(apart & (pairs["bound"].to_numpy(dtype=np.float64) >= floor))


def read_candidates(
    pairs: pd.DataFrame,
    texts: Mapping[int, str],
    reranker: Any,
    threshold: float,
    cache: PairScoreCache | None,
    progress: bool = False,
) -> tuple[pd.DataFrame, Unread | None]:
    """Rescore candidate pairs (``a``, ``b`` window rows, ``similarity`` their cosine) as
    :func:`nlsim.rerank.reranker.rerank_pairs` does, reading a pair's second order only where its bound
    reaches ``threshold`` (the module doc). Returns every pair with its ``cosine``, and its exact rerank
    score (``similarity``, with ``cross_encoder`` beside it) where it was read twice, NaN where once; and
    the pairs read once, :class:`Unread`; ``None`` for those where
    every pair is read twice (a lossy path, a story model, a scorer that reads no single order)."""
    from nlsim.rerank.reranker import rerank_pairs  # the reranker builds on this package's modules

    a = [texts[i] for i in pairs["a"].to_numpy()]
    b = [texts[i] for i in pairs["b"].to_numpy()]
    choice, _ = cross_encoder_inference(reranker.cross_encoder, len(a), reranker.backend, reranker.precision)
    one_order = hasattr(reranker.cross_encoder, "read")  # a scorer of its own reads both orders at once
    if reranker.story is not None or choice.tag or pairs.empty or not one_order:
        return rerank_pairs(pairs, texts, reranker, -np.inf, progress=progress, cache=cache), None
    cos = pairs["similarity"].to_numpy(dtype=np.float64)
    cross = cache.lookup(a, b) if cache is not None else np.full(len(a), np.nan)
    todo = np.isnan(cross)
    first = np.full(len(a), np.nan)
    rows = np.flatnonzero(todo)
    first[rows] = reranker.cross_readings([a[i] for i in rows], [b[i] for i in rows], progress=progress)
    bound = upper_bounds(reranker.combine, cos, first, reranker.cross_bound())
    decides = needs_second(bound, threshold)
    again = np.flatnonzero(todo & decides)
    x, y = [a[i] for i in again], [b[i] for i in again]
    cross[again] = (first[again] + reranker.cross_readings(y, x, progress=progress)) / 2
    if cache is not None:
        cache.store(x, y, cross[again])
    once = todo & ~decides
    say(
        f"cross-encoder: {len(a):,} candidate pairs, {len(a) - len(rows):,} scored before (cache), "
        f"{len(rows):,} read, {len(again):,} of them in both orders; the second reading of the other "
        f"{int(once.sum()):,} waits (they cannot reach the threshold {threshold:.4f}; the near misses "
        "finish those that may be among them)"
    )
    out = pairs.copy()
    out["cosine"] = cos.astype(np.float32)
    out["cross_encoder"] = cross.astype(np.float32)
    out["similarity"] = reranker.combine(cos, cross).astype(np.float32)
    unread = out[once].assign(first=first[once], bound=bound[once])[["a", "b", "cosine", "first", "bound"]]

    def second(rows: pd.DataFrame) -> np.ndarray:
        x = [texts[i] for i in rows["a"].to_numpy()]
        y = [texts[i] for i in rows["b"].to_numpy()]
        scores = (rows["first"].to_numpy(dtype=np.float64) + reranker.cross_readings(y, x)) / 2
        if cache is not None:
            cache.store(x, y, scores)
        return scores

    # a pair read once stays a candidate with its cosine (the topic groups' links), without a rerank score
    out.loc[once, ["similarity", "cross_encoder"]] = np.float32(np.nan)
    return out, Unread(unread.reset_index(drop=True), second, reranker.combine)
