"""The clusters table of a report: one row per cluster with its members, representative and scores.

The same builder serves a batch run (every cluster, all ``new``) and a daily run (the clusters the run
touched, with their status, or the whole window's clusters).

Representative: the earliest member (``"earliest"``, the default; the same as the key member while it is
kept) or the member with the highest summed similarity to the cluster's other members (``"central"``;
ties by the earliest rule).

A row holds every column :mod:`nlsim.io.columns` declares for the clusters table: the cluster's id, status,
size and absorbed ids come from the cluster rule and the run's events; every other column is made from the
cluster's members or links as its declaration says (``Column.reduce``, :func:`cluster_row`): a column added
to the declaration is computed with no other change. ``clusters.parquet``, the daily state, the page, its
review panel, ``summary.md`` and the artifacts all read these rows.

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

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nlsim.clusters.assign import assign_groups
from nlsim.clusters.order import order_keys, order_rank
from nlsim.clusters.rules import ClusterRule, ConnectedComponents, links_of
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
) -> pd.DataFrame:
    """One row per cluster (``clusters``, default: every cluster in ``assignment``), largest first.

    Args:
        items: ``id``, ``title``, ``source``, ``published_at`` of the items known to the run.
        assignment: cluster id of each clustered item.
        pairs: ``id_a``, ``id_b``, ``similarity`` of the pairs among the items (scores and "central").
        events: the run's ``cluster_id``, ``status``, ``added``, ``absorbed`` (others get ``default_status``).
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
    spec = report_columns.table("clusters")
    values = _ItemValues(items, ids)
    ev = {} if events is None else {r.cluster_id: r for r in events.itertuples()}
    out = []
    for c, members in groups.items():
        if representative == "central" and len(members) > 1:
            rep = max(members, key=lambda r: (scores.strength.get(ids[r], 0.0), -rank[r]))
        else:
            rep = members[0]
        event = ev.get(c)
        joined = set(event.added) if event is not None else set()
        added = [r for r in members if ids[r] in joined]
        parts = ClusterParts(members, rep, added, scores.links.get(c, []))
        row = cluster_row(spec, parts, values)
        row["cluster_id"] = c
        row["status"] = event.status if event is not None else default_status
        row["absorbed"] = list(event.absorbed) if event is not None else []
        out.append(row)
    table = pd.DataFrame(out, columns=spec.names)
    for col in spec.columns:
        if col.format == "time":
            table[col.name] = pd.to_datetime(table[col.name], utc=True)
    table = table.astype(number_columns())
    return table.sort_values(["size", "cluster_id"], ascending=[False, True], kind="mergesort").reset_index(
        drop=True
    )


@dataclass(frozen=True)
class _Scores:
    """The pairs inside the wanted clusters: each cluster's links (``(id_a, id_b, score)``) and each item's
    summed score to its cluster's other members (``strength``, for the central representative)."""

    strength: dict[str, float]
    links: dict[str, list[tuple[str, str, float]]]

    @classmethod
    def of(cls, pairs: pd.DataFrame, assignment: Mapping[str, str], wanted: set[str]) -> _Scores:
        pa_ = pairs["id_a"].astype(str).to_numpy() if len(pairs) else np.array([], dtype=object)
        pb_ = pairs["id_b"].astype(str).to_numpy() if len(pairs) else np.array([], dtype=object)
        sims = pairs["similarity"].to_numpy(dtype=np.float64) if len(pairs) else np.array([])
        pair_c = np.array([assignment.get(a) for a in pa_], dtype=object)
        same = np.array([assignment.get(b) for b in pb_], dtype=object) == pair_c
        strength: dict[str, float] = {}
        links: dict[str, list[tuple[str, str, float]]] = {}
        for a, b, c, s, ok in zip(pa_, pb_, pair_c, sims, same, strict=True):
            if ok and c in wanted:
                links.setdefault(c, []).append((a, b, float(s)))
                strength[a] = strength.get(a, 0.0) + s
                strength[b] = strength.get(b, 0.0) + s
        return cls(strength, links)


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
class ClusterParts:
    """What a cluster's row is made from: its members (rows of the items, earliest first), the
    representative's row, the rows of the members that joined in this run, and the links inside it
    (``(id_a, id_b, score)``)."""

    members: list[int]
    representative: int
    added: list[int]
    links: list[tuple[str, str, float]]


def _present(values: Sequence[Any]) -> list[Any]:
    return [v for v in values if not _missing(v)]


def _missing(v: Any) -> bool:
    return v is None or v is pd.NaT or (isinstance(v, float) and math.isnan(v))


ItemReduce = Callable[[Sequence[Any], ClusterParts], Any]
ITEM_REDUCE: dict[str, ItemReduce] = {
    "representative": lambda v, c: v[c.representative],
    "all": lambda v, c: [v[r] for r in c.members],
    "added": lambda v, c: [v[r] for r in c.added],
    "distinct": lambda v, c: sorted({x for x in _present([v[r] for r in c.members]) if x != ""}),
    "min": lambda v, c: min(_present([v[r] for r in c.members]), default=None),
    "max": lambda v, c: max(_present([v[r] for r in c.members]), default=None),
}
"""How a column of ``source="item.<column>"`` is made from its members' values (``v``: the items column,
by row): :data:`nlsim.io.columns.REDUCE`."""
LINK_REDUCE: dict[str, Callable[[list[tuple[str, str, float]]], float]] = {
    "max": lambda links: max((s for *_, s in links), default=np.nan),
    "mean": lambda links: float(np.mean([s for *_, s in links])) if links else np.nan,
    "weakest": lambda links: weakest_link(links),
}
"""How a column of ``source="score"`` is made from the scores of the links inside its cluster."""


class _ItemValues:
    """The items' columns a cluster's row reads, by row: each read once, as the cluster column holds it
    (a time as a UTC timestamp, text as text; missing: ``None``)."""

    def __init__(self, items: pd.DataFrame, ids: np.ndarray) -> None:
        self.items = items
        self.cache: dict[tuple[str, bool], Sequence[Any]] = {("id", False): ids, ("id", True): ids}

    def of(self, column: report_columns.Column) -> Sequence[Any]:
        field = column.item_field
        assert field is not None
        timed = column.format == "time"
        key = (field, timed)
        if key not in self.cache:
            if field not in self.items:
                self.cache[key] = [None] * len(self.items)
            elif timed:
                self.cache[key] = list(pd.to_datetime(self.items[field], utc=True))
            else:
                self.cache[key] = [None if _missing(v) else str(v) for v in self.items[field].tolist()]
        return self.cache[key]


def cluster_row(spec: report_columns.Table, cluster: ClusterParts, values: _ItemValues) -> dict[str, Any]:
    """The columns of one cluster's row that are made from its members and links, each as its declaration
    says (``Column.reduce``); the cluster rule's own (id, status, absorbed) are the caller's. ``size``
    is the number of members."""
    row: dict[str, Any] = {"size": len(cluster.members)}
    for column in spec.columns:
        if not column.reduce:
            continue
        if column.source == "score":
            row[column.name] = LINK_REDUCE[column.reduce](cluster.links)
        else:
            row[column.name] = ITEM_REDUCE[column.reduce](values.of(column), cluster)
    return row


def topic_table(items: pd.DataFrame, topics: Mapping[str, str], clusters: Mapping[str, str]) -> pd.DataFrame:
    """One row per topic group (``topics``: each member's topic id; ``clusters``: each clustered item's
    story cluster), its items earliest first, the earliest its representative, largest first (the columns
    of :data:`nlsim.io.columns.TOPICS`). A cluster of one item (a daily state keeps the id on the last
    kept member of a cluster whose others expired) is no story: its item is one of the topic's single
    items, as in a batch run over the same items.

    Example:
        >>> frame = pd.DataFrame({"id": ["x", "y", "z"], "title": list("XYZ"),
        ...     "published_at": pd.to_datetime(["2024-01-02", "2024-01-01", None], utc=True)})
        >>> t = topic_table(frame, {"x": "t-y", "y": "t-y", "z": "t-y"}, {"x": "c-y", "y": "c-y"})
        >>> t[["topic_id", "size", "stories", "representative"]].values.tolist(), t["member_ids"][0]
        ([['t-y', 3, 2, 'y']], ['y', 'x', 'z'])
        >>> lone = topic_table(frame, {"x": "t-y", "y": "t-y"}, {"x": "c-w"})  # c-w kept only x
        >>> lone[["stories", "cluster_ids"]].values.tolist()
        [[2, []]]
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
    held = set(ids.tolist())
    sizes = Counter(c for i, c in clusters.items() if i in held)
    story_of = {i: c for i, c in clusters.items() if sizes[c] > 1}
    rows = []
    for topic, rows_of in members.items():
        story_ids = sorted({story_of[ids[r]] for r in rows_of if ids[r] in story_of})
        t = times.iloc[rows_of]
        rows.append(
            {
                "topic_id": topic,
                "size": len(rows_of),
                "stories": len(story_ids) + sum(1 for r in rows_of if ids[r] not in story_of),
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
    groups = (rule or ConnectedComponents()).clusters(links_of(id_pairs, "similarity"))
    upd = assign_groups({}, {}, keys, groups=groups, new_ids=ids)
    labels = pd.Series([upd.assignment.get(i) for i in ids], dtype=object)
    return labels, cluster_table(
        frame, upd.assignment, id_pairs, events=upd.events, representative=representative
    )
