"""What the report missed: the best candidate pairs just below the threshold (``near_misses.parquet``).

The report keeps the pairs whose score reaches the threshold. The ones that came closest without reaching
it are where the model is least sure, and where an editor's verdict teaches it most: the report lists
them, nearest the threshold first, and the page puts them in a review queue of their own.

- With a reranker, the near misses are the candidates it rescored (every neighbour at or above the
  candidate floor) whose rerank score stayed below the threshold.
- Without one, the neighbour search goes :data:`COSINE_MARGIN` below the threshold: each item's ``k``
  nearest neighbours are the same whatever the floor, so the report's own pairs do not change, and the
  neighbours between the floor and the threshold are the near misses (with topic groups the search goes on
  down to the topic threshold: the pairs further below are topic links, not near misses,
  :func:`within_reach`).

Pairs whose two items the report already put in one cluster (through other pairs) are not missed and are
left out. At most ``--near-misses`` pairs are kept (0: none, and the search floor is not lowered).

Example:
    >>> pairs = pd.DataFrame({"a": [0, 1, 2], "b": [1, 2, 3], "similarity": [0.95, 0.85, 0.7]})
    >>> kept, below = split(pairs, 0.9)
    >>> kept["b"].tolist(), below["b"].tolist()
    ([1], [2, 3])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from nlsim.io import columns

COSINE_MARGIN = 0.05
"""Without a reranker, how far below the threshold (in cosine) the neighbour search goes for near misses."""
NEAR_MISSES_SCHEMA = columns.table("near_misses").schema
"""``near_misses.parquet`` (declared in :mod:`nlsim.io.columns`): the columns of ``pairs.parquet``, with
the cluster of each item (null for an item in no cluster) instead of the pair's; ``similarity`` is the score
the threshold applies to; rows nearest the threshold first."""


def search_floor(floor: float, threshold: float, reranked: bool, limit: int) -> float:
    """The cosine down to which neighbours are searched: the model's own ``floor`` (the threshold, or the
    reranker's candidate floor), lowered by :data:`COSINE_MARGIN` for a report without a reranker that keeps
    near misses.

    >>> search_floor(0.9, 0.9, reranked=False, limit=200), search_floor(0.9, 0.9, reranked=False, limit=0)
    (0.85, 0.9)
    """
    if reranked or limit <= 0:
        return floor
    return round(min(floor, threshold - COSINE_MARGIN), 9)


def within_reach(below: pd.DataFrame, threshold: float, reranked: bool) -> pd.DataFrame:
    """The candidate pairs below ``threshold`` that may be near misses: with a reranker, every one it
    rescored (``below`` holds those); without one, those whose score is within :data:`COSINE_MARGIN` of the
    threshold. A run with topic groups searches further down, to the topic threshold: the pairs between
    are topic links, not pairs the model came close to grouping.

    >>> below = pd.DataFrame({"a": [0, 1], "b": [1, 2], "similarity": [0.87, 0.65]})
    >>> within_reach(below, 0.9, reranked=False)["b"].tolist(), len(within_reach(below, 0.9, reranked=True))
    ([1], 2)
    """
    if reranked or below.empty:
        return below
    floor = round(threshold - COSINE_MARGIN, 9)  # the floor the search takes without topic groups
    return below[below["similarity"].to_numpy() >= floor].reset_index(drop=True)


def split(pairs: pd.DataFrame, threshold: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pairs reaching ``threshold`` (the report's) and the ones below it (candidate near misses)."""
    reach = pairs["similarity"].to_numpy() >= threshold
    return pairs[reach].reset_index(drop=True), pairs[~reach].reset_index(drop=True)


def together_in(labels: pd.Series) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``together(a, b)``: whether each pair of window rows is in one cluster (``labels``: each row's
    cluster id, ``None`` outside any).

    >>> together_in(pd.Series(["c1", "c1", None, None]))(np.array([0, 2]), np.array([1, 3])).tolist()
    [True, False]
    """
    cluster = labels.to_numpy(dtype=object)

    def together(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ca, cb = cluster[np.asarray(a, dtype=np.int64)], cluster[np.asarray(b, dtype=np.int64)]
        return np.array([x is not None and x == y for x, y in zip(ca, cb, strict=True)], dtype=bool)

    return together


def near_miss_pairs(below: pd.DataFrame, labels: pd.Series, limit: int) -> pd.DataFrame:
    """The best ``limit`` pairs of ``below`` (row positions ``a``, ``b``) whose items are not already in one
    cluster (``labels``: each window row's cluster id, ``None`` outside any), highest score first."""
    if limit <= 0 or below.empty:
        return below.iloc[:0]
    missed = below[~together_in(labels)(below["a"].to_numpy(), below["b"].to_numpy())]
    order = np.lexsort((missed["b"].to_numpy(), missed["a"].to_numpy(), -missed["similarity"].to_numpy()))
    return missed.iloc[order[:limit]].reset_index(drop=True)


def near_miss_table(report_pairs: pd.DataFrame, cluster_of: dict[str, str | None]) -> pd.DataFrame:
    """The report's table of near misses from the pairs table of the missed pairs (:func:`near_miss_pairs`
    through :func:`nlsim.report.files.pairs_table`): each item's cluster instead of the pair's, nearest
    the threshold first."""
    out = report_pairs.drop(columns=["cluster_id"], errors="ignore").copy()
    out["cluster_a"] = [cluster_of.get(str(i)) for i in out["id_a"]]
    out["cluster_b"] = [cluster_of.get(str(i)) for i in out["id_b"]]
    out = out.sort_values(["similarity", "id_a", "id_b"], ascending=[False, True, True], kind="mergesort")
    return out.reindex(columns=columns.table("near_misses").names).reset_index(drop=True)


def empty_table() -> pd.DataFrame:
    """A table of no near misses (a run that keeps none, or a stored report from before they were kept)."""
    return columns.table("near_misses").empty()
