"""The clusters table of a report: one row per cluster with its members, representative and scores.

The same builder serves a batch run (every cluster, all ``new``) and a daily run (the clusters the run
touched, with their status, or the whole window's clusters).

Representative: the earliest member (``"earliest"``, the default; the same as the key member while it is
kept) or the member with the highest summed similarity to the cluster's other members (``"central"``;
ties by the earliest rule).

Example:
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"id": ["x", "y", "z", "w"], "title": list("XYZW"), "source": ["s"] * 4,
    ...     "published_at": pd.to_datetime(["2024-01-02", "2024-01-01", None, None], utc=True)})
    >>> pairs = pd.DataFrame({"a": [0, 1], "b": [1, 2], "similarity": [0.9, 0.95]})
    >>> labels, clusters = batch_clusters(frame, pairs)
    >>> labels.tolist(), clusters["member_ids"].iloc[0]
    (['c-y', 'c-y', 'c-y', None], ['y', 'x', 'z'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nlsim.clusters.assign import assign_groups
from nlsim.clusters.order import order_keys, order_rank
from nlsim.clusters.rules import ClusterRule, ConnectedComponents, Link
from nlsim.errors import ConfigError
from nlsim.io import columns as report_columns

REPRESENTATIVES = ("earliest", "central")
TS = report_columns.TS
CLUSTERS_SCHEMA = report_columns.CLUSTERS.schema
"""``clusters.parquet`` (its columns are declared in :data:`nlsim.io.columns.CLUSTERS`): ``status``
new/grown/merged (a batch run's clusters are all new; after a model change also regrouped, and dissolved for
a cluster the new model broke up: listed last, with the members it had), ``added_ids`` the members that
joined in this run, ``absorbed`` the cluster ids merged into this one; ``weakest_link`` the lowest score
among the links that hold the cluster together (the weakest link of its strongest spanning tree: raise the
threshold past it and the cluster falls apart; empty for a cluster an editor's verdict joined without a
link)."""


def number_columns() -> dict[str, str]:
    """The clusters table's numeric columns and their dtypes (from its column table)."""
    spec = report_columns.table("clusters")
    return {c.name: c.dtype for c in spec.columns if c.format in ("number", "integer")}


def empty_table() -> pd.DataFrame:
    """The clusters table with no row (the columns of :data:`CLUSTERS_SCHEMA`)."""
    frame = pd.DataFrame({c: pd.Series(dtype=object) for c in report_columns.table("clusters").names})
    return frame.astype(number_columns())


def cluster_table(
    items: pd.DataFrame,
    assignment: Mapping[str, str],
    pairs: pd.DataFrame,
    *,
    clusters: list[str] | None = None,
    events: pd.DataFrame | None = None,
    representative: str = "earliest",
    default_status: str = "unchanged",
    topics: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per cluster (``clusters``, default: every cluster in ``assignment``), largest first.

    Args:
        items: ``id``, ``title``, ``source``, ``published_at`` of the items known to the run.
        assignment: cluster id of each clustered item.
        pairs: ``id_a``, ``id_b``, ``similarity`` of the pairs among the items (scores and "central").
        events: the run's ``cluster_id``, ``status``, ``added``, ``absorbed`` (others get ``default_status``).
        topics: the topic group of each item in one (:mod:`nlsim.clusters.topics`): a cluster's is its
            members'.
    """
    if representative not in REPRESENTATIVES:
        raise ConfigError(
            f"unknown representative rule {representative!r}; choose one of {', '.join(REPRESENTATIVES)}"
        )
    ids = items["id"].astype(str).to_numpy()
    cid = np.array([assignment.get(i) for i in ids], dtype=object)
    wanted = set(assignment.values()) if clusters is None else set(clusters)
    mask = np.array([c is not None and c in wanted for c in cid], dtype=bool)
    if not mask.any():
        return empty_table()
    rank = order_rank(ids.tolist(), items["published_at"])
    rows_idx = np.flatnonzero(mask)
    rows_idx = rows_idx[np.argsort(rank[rows_idx], kind="stable")]
    scores = _Scores.of(pairs, assignment, wanted)
    groups: dict[str, list[int]] = {}
    for r in rows_idx:
        groups.setdefault(cid[r], []).append(int(r))
    columns = _Columns.of(items, ids)
    ev = {} if events is None else {r.cluster_id: r for r in events.itertuples()}
    out = []
    for c, members in groups.items():
        if representative == "central" and len(members) > 1:
            rep = max(members, key=lambda r: (scores.strength.get(ids[r], 0.0), -rank[r]))
        else:
            rep = members[0]
        row = columns.row(c, members, rep, ev.get(c), scores.within.get(c, []), default_status)
        row["weakest_link"] = weakest_link(scores.links.get(c, []))
        row["topic_id"] = (topics or {}).get(ids[members[0]])
        out.append(row)
    table = pd.DataFrame(out, columns=report_columns.table("clusters").names)
    for c in ("first_published", "last_published"):
        table[c] = pd.to_datetime(table[c], utc=True)
    table = table.astype(number_columns())
    return table.sort_values(["size", "cluster_id"], ascending=[False, True], kind="mergesort").reset_index(
        drop=True
    )


@dataclass(frozen=True)
class _Scores:
    """The scores of the pairs inside the wanted clusters: each cluster's pair scores (``within``) and each
    item's summed score to its cluster's other members (``strength``, for the central representative)."""

    within: dict[str, list[float]]
    strength: dict[str, float]
    links: dict[str, list[tuple[str, str, float]]]

    @classmethod
    def of(cls, pairs: pd.DataFrame, assignment: Mapping[str, str], wanted: set[str]) -> _Scores:
        pa_ = pairs["id_a"].astype(str).to_numpy() if len(pairs) else np.array([], dtype=object)
        pb_ = pairs["id_b"].astype(str).to_numpy() if len(pairs) else np.array([], dtype=object)
        sims = pairs["similarity"].to_numpy(dtype=np.float64) if len(pairs) else np.array([])
        pair_c = np.array([assignment.get(a) for a in pa_], dtype=object)
        same = np.array([assignment.get(b) for b in pb_], dtype=object) == pair_c
        within: dict[str, list[float]] = {}
        strength: dict[str, float] = {}
        links: dict[str, list[tuple[str, str, float]]] = {}
        for a, b, c, s, ok in zip(pa_, pb_, pair_c, sims, same, strict=True):
            if ok and c in wanted:
                within.setdefault(c, []).append(s)
                links.setdefault(c, []).append((a, b, float(s)))
                strength[a] = strength.get(a, 0.0) + s
                strength[b] = strength.get(b, 0.0) + s
        return cls(within, strength, links)


def weakest_link(links: list[tuple[str, str, float]]) -> float:
    """The lowest score on the strongest spanning tree (forest) of ``links`` (``(a, b, score)`` inside one
    cluster): the link the cluster hangs on. NaN without links.

    >>> weakest_link([("a", "b", 0.97), ("b", "c", 0.91), ("a", "c", 0.95), ("c", "d", 0.93)])
    0.93
    """
    root: dict[str, str] = {}

    def find(x: str) -> str:
        root.setdefault(x, x)
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    weakest = float("nan")
    for a, b, s in sorted(links, key=lambda k: -k[2]):
        ra, rb = find(a), find(b)
        if ra != rb:
            root[ra] = rb
            weakest = s
    return weakest


@dataclass(frozen=True)
class _Columns:
    """The item columns a cluster's row is made from, aligned with the items' rows."""

    ids: np.ndarray
    titles: np.ndarray
    sources: np.ndarray
    times: pd.Series

    @classmethod
    def of(cls, items: pd.DataFrame, ids: np.ndarray) -> _Columns:
        sources = items["source"].astype(str).to_numpy() if "source" in items else np.full(len(items), "")
        times = pd.to_datetime(items["published_at"], utc=True)
        return cls(ids, items["title"].astype(str).to_numpy(), sources, times)

    def row(
        self, cid: str, members: list[int], rep: int, event: Any, scores: list[float], default_status: str
    ) -> dict[str, Any]:
        """One row of the clusters table (:data:`CLUSTERS_SCHEMA`)."""
        t = self.times.iloc[members]
        return {
            "cluster_id": cid,
            "status": event.status if event is not None else default_status,
            "size": len(members),
            "representative": self.ids[rep],
            "representative_title": self.titles[rep],
            "member_ids": [self.ids[r] for r in members],
            "added_ids": list(event.added) if event is not None else [],
            "absorbed": list(event.absorbed) if event is not None else [],
            "sources": sorted({self.sources[r] for r in members if self.sources[r]}),
            "first_published": t.min(),
            "last_published": t.max(),
            "max_similarity": max(scores) if scores else np.nan,
            "mean_similarity": float(np.mean(scores)) if scores else np.nan,
        }


def topic_table(items: pd.DataFrame, topics: Mapping[str, str], clusters: Mapping[str, str]) -> pd.DataFrame:
    """One row per topic group (``topics``: each member's topic id; ``clusters``: each clustered item's
    story cluster), its items earliest first, the earliest its representative, largest first (the columns
    of :data:`nlsim.io.columns.TOPICS`).

    Example:
        >>> frame = pd.DataFrame({"id": ["x", "y", "z"], "title": list("XYZ"),
        ...     "published_at": pd.to_datetime(["2024-01-02", "2024-01-01", None], utc=True)})
        >>> t = topic_table(frame, {"x": "t-y", "y": "t-y", "z": "t-y"}, {"x": "c-y", "y": "c-y"})
        >>> t[["topic_id", "size", "stories", "representative"]].values.tolist(), t["member_ids"][0]
        ([['t-y', 3, 2, 'y']], ['y', 'x', 'z'])
    """
    spec = report_columns.table("topics")
    ids = items["id"].astype(str).to_numpy()
    rank = order_rank(ids.tolist(), items["published_at"])
    titles = items["title"].astype(str).to_numpy()
    times = pd.to_datetime(items["published_at"], utc=True)
    members: dict[str, list[int]] = {}
    for r in np.argsort(rank, kind="stable"):
        topic = topics.get(ids[r])
        if topic is not None:
            members.setdefault(topic, []).append(int(r))
    rows = []
    for topic, rows_of in members.items():
        story_ids = sorted({clusters[ids[r]] for r in rows_of if ids[r] in clusters})
        t = times.iloc[rows_of]
        rows.append(
            {
                "topic_id": topic,
                "size": len(rows_of),
                "stories": len(story_ids) + sum(1 for r in rows_of if ids[r] not in clusters),
                "cluster_ids": story_ids,
                "member_ids": [ids[r] for r in rows_of],
                "representative": ids[rows_of[0]],
                "representative_title": titles[rows_of[0]],
                "first_published": t.min(),
                "last_published": t.max(),
            }
        )
    table = pd.DataFrame(rows, columns=spec.names) if rows else spec.empty()
    for c in ("first_published", "last_published"):
        table[c] = pd.to_datetime(table[c], utc=True)
    table = table.astype({"size": "int64", "stories": "int64"})
    return table.sort_values(["size", "topic_id"], ascending=[False, True], kind="mergesort").reset_index(
        drop=True
    )


def batch_clusters(
    frame: pd.DataFrame,
    pairs: pd.DataFrame,
    *,
    representative: str = "earliest",
    rule: ClusterRule | None = None,
) -> tuple[pd.Series, pd.DataFrame]:
    """Cluster the rows of ``frame`` linked by ``pairs`` (row positions ``a``, ``b``, ``similarity``) under
    ``rule`` (default: connected components), with nothing before: the cluster id of every row (``None``
    when unclustered) and the clusters table."""
    ids = frame["id"].astype(str).tolist()
    keys = order_keys(ids, frame["published_at"])
    a = pairs["a"].to_numpy(dtype=np.int64)
    b = pairs["b"].to_numpy(dtype=np.int64)
    id_pairs = pd.DataFrame(
        {
            "id_a": np.asarray(ids, dtype=object)[a],
            "id_b": np.asarray(ids, dtype=object)[b],
            "similarity": pairs["similarity"].to_numpy(),
        }
    )
    links = zip(id_pairs["id_a"], id_pairs["id_b"], id_pairs["similarity"], strict=True)
    groups = (rule or ConnectedComponents()).clusters(Link(x, y, float(s)) for x, y, s in links)
    upd = assign_groups({}, {}, keys, groups=groups, new_ids=ids)
    labels = pd.Series([upd.assignment.get(i) for i in ids], dtype=object)
    return labels, cluster_table(
        frame, upd.assignment, id_pairs, events=upd.events, representative=representative
    )
