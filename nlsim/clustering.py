"""Group near-duplicate pairs into clusters: connected components, stable ids, one representative each.

Rules (documented in the README, relied on by incremental runs):
- A cluster is a connected component of the graph whose edges are the reported pairs (similarity at or
  above the threshold). Items without a pair belong to no cluster.
- A cluster's **key member** is its earliest member by ``(published_at, id)`` (items without a time come
  after every timed item; ties broken by id). The cluster id is ``"c-" + key member id``, so it is the same
  whichever run, or order of runs, found the cluster.
- The **representative** is the earliest member (``"earliest"``, the default, the same as the key member) or
  the member with the highest summed similarity to the others (``"central"``; ties by the earliest rule).

Example:
    >>> import numpy as np, pandas as pd
    >>> pairs = pd.DataFrame({"a": [0, 1], "b": [1, 2], "similarity": [0.9, 0.95]})
    >>> ids = ["x", "y", "z", "w"]
    >>> times = pd.to_datetime(["2024-01-02", "2024-01-01", None, None], utc=True)
    >>> labels = cluster_labels(ids, times, pairs)
    >>> labels.tolist()
    ['c-y', 'c-y', 'c-y', None]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from nlsim.errors import ConfigError

REPRESENTATIVES = ("earliest", "central")


def order_key(ids: Sequence[str], times: pd.DatetimeIndex | pd.Series | np.ndarray) -> np.ndarray:
    """Rank of each row under the earliest-first rule (published_at, NaT last, then id)."""
    t = pd.to_datetime(pd.Series(np.asarray(times)), utc=True)
    frame = pd.DataFrame(
        {"nat": t.isna().to_numpy(), "t": t.fillna(pd.Timestamp(0, tz="UTC")).to_numpy(), "id": list(ids)}
    )
    order = frame.sort_values(["nat", "t", "id"], kind="mergesort").index.to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def components(n: int, pairs: pd.DataFrame) -> np.ndarray:
    """Connected-component label (0..m-1) of each of ``n`` rows; rows without a pair get -1."""
    labels = np.full(n, -1, dtype=np.int64)
    if len(pairs) == 0:
        return labels
    a = pairs["a"].to_numpy(dtype=np.int64)
    b = pairs["b"].to_numpy(dtype=np.int64)
    graph = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    linked = np.zeros(n, dtype=bool)
    linked[a] = True
    linked[b] = True
    labels[linked] = comp[linked]
    return labels


def cluster_labels(
    ids: Sequence[str], times: pd.DatetimeIndex | pd.Series | np.ndarray, pairs: pd.DataFrame
) -> pd.Series:
    """Cluster id of each row (``None`` for rows in no pair), by the key-member rule above."""
    ids = list(ids)
    comp = components(len(ids), pairs)
    rank = order_key(ids, times)
    out: list[str | None] = [None] * len(ids)
    key_of: dict[int, int] = {}
    for row in np.flatnonzero(comp >= 0):
        c = int(comp[row])
        if c not in key_of or rank[row] < rank[key_of[c]]:
            key_of[c] = int(row)
    for row in np.flatnonzero(comp >= 0):
        out[row] = f"c-{ids[key_of[int(comp[row])]]}"
    return pd.Series(out, dtype=object)


def _representatives(members: pd.DataFrame, pairs: pd.DataFrame, how: str) -> dict[str, int]:
    """Row of each cluster's representative."""
    if how not in REPRESENTATIVES:
        raise ConfigError(f"unknown representative rule {how!r}; choose one of {', '.join(REPRESENTATIVES)}")
    if how == "earliest":
        first = members.sort_values("rank", kind="mergesort").groupby("cluster_id", sort=False).head(1)
        return dict(zip(first["cluster_id"], first["row"], strict=True))
    strength = np.zeros(int(members["row"].max()) + 1)
    np.add.at(strength, pairs["a"].to_numpy(), pairs["similarity"].to_numpy())
    np.add.at(strength, pairs["b"].to_numpy(), pairs["similarity"].to_numpy())
    scored = members.assign(strength=-strength[members["row"].to_numpy()])
    best = (
        scored.sort_values(["strength", "rank"], kind="mergesort").groupby("cluster_id", sort=False).head(1)
    )
    return dict(zip(best["cluster_id"], best["row"], strict=True))


def build_clusters(
    frame: pd.DataFrame,
    pairs: pd.DataFrame,
    *,
    representative: str = "earliest",
) -> tuple[pd.Series, pd.DataFrame]:
    """Cluster the corpus rows linked by ``pairs`` (row positions ``a < b``, ``similarity``).

    Returns the cluster id of every row (``None`` when unclustered) and one row per cluster with
    ``cluster_id, size, representative, representative_title, member_ids, sources, first_published,
    last_published, max_similarity, mean_similarity``, largest clusters first (ties by cluster id).
    """
    labels = cluster_labels(frame["id"].tolist(), frame["published_at"], pairs)
    columns = [
        "cluster_id",
        "size",
        "representative",
        "representative_title",
        "member_ids",
        "sources",
        "first_published",
        "last_published",
        "max_similarity",
        "mean_similarity",
    ]
    clustered = labels.notna().to_numpy()
    if not clustered.any():
        empty = pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
        return labels, empty.astype(
            {"size": "int64", "max_similarity": "float32", "mean_similarity": "float32"}
        )
    rank = order_key(frame["id"].tolist(), frame["published_at"])
    members = pd.DataFrame(
        {
            "row": np.flatnonzero(clustered),
            "cluster_id": labels[clustered].to_numpy(),
            "rank": rank[clustered],
        }
    ).sort_values("rank", kind="mergesort")
    rep = _representatives(members, pairs, representative)
    pair_cluster = labels.to_numpy()[pairs["a"].to_numpy()]
    sim = pd.DataFrame({"cluster_id": pair_cluster, "similarity": pairs["similarity"].to_numpy()})
    sim_stats = sim.groupby("cluster_id")["similarity"].agg(["max", "mean"])
    rows = []
    ids = frame["id"].to_numpy()
    titles = frame["title"].to_numpy()
    sources = frame["source"].to_numpy()
    times = frame["published_at"]
    for cid, grp in members.groupby("cluster_id", sort=False):
        member_rows = grp["row"].to_numpy()
        t = times.iloc[member_rows]
        rows.append(
            {
                "cluster_id": cid,
                "size": len(member_rows),
                "representative": ids[rep[cid]],
                "representative_title": titles[rep[cid]],
                "member_ids": [str(x) for x in ids[member_rows]],
                "sources": sorted({str(s) for s in sources[member_rows] if s}),
                "first_published": t.min(),
                "last_published": t.max(),
                "max_similarity": float(sim_stats.loc[cid, "max"]),
                "mean_similarity": float(sim_stats.loc[cid, "mean"]),
            }
        )
    clusters = pd.DataFrame(rows, columns=columns)
    clusters = clusters.sort_values(["size", "cluster_id"], ascending=[False, True], kind="mergesort")
    clusters["first_published"] = pd.to_datetime(clusters["first_published"], utc=True)
    clusters["last_published"] = pd.to_datetime(clusters["last_published"], utc=True)
    return labels, clusters.reset_index(drop=True)
