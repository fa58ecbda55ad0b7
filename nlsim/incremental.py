"""Stable cluster ids across incremental runs: carry ids over, grow clusters, merge them by a fixed rule.

Pure functions over item ids, order keys and pairs; no embeddings, no files. The batch rule is in
:mod:`nlsim.clustering` (a cluster is a connected component of the pairs; its id is ``"c-" + key member``,
the key member being its earliest member by ``(published_at, id)``, undated items last). An incremental run
applies that rule to *today's* pairs on top of what earlier runs decided:

- **Parts.** Before today, every kept item is either in a cluster (whose key member is remembered, even
  after retention dropped that member) or alone. Today's pairs join parts: existing clusters, old lone
  items and today's new items.
- **new**: a component with no existing cluster. Its id is ``"c-" + its earliest member`` (the batch rule).
- **grown**: one existing cluster gained members. It keeps its id.
- **merged**: a component holding two or more *old* parts (clusters, or an old lone item that now joins a
  cluster). The surviving id is the one of the old part whose key member is earliest by
  ``(published_at, id)``; a lone item's would-be id is ``"c-" + its id``. The other clusters are reported as
  merged into it. Today's items never take over an id that existed before today.

So an item keeps its cluster id unless its cluster merges into an earlier one. When items arrive in
publication order (each run's items no earlier than the items already kept), every id equals the one a
single batch run over all the items gives. An item that arrives late (published before the key member of the
cluster it joins) leaves the cluster's id unchanged: stability wins over the batch rule. Clusters never split.

Example:
    >>> keys = {"a": order_key_of("2024-01-01", "a"), "b": order_key_of("2024-01-02", "b"),
    ...         "c": order_key_of("2024-01-03", "c")}
    >>> day1 = update_clusters({}, {}, keys, new_ids=["a", "b"], pairs=[("a", "b")])
    >>> day1.assignment, day1.events["status"].tolist()
    ({'a': 'c-a', 'b': 'c-a'}, ['new'])
    >>> day2 = update_clusters(day1.assignment, day1.anchors, keys, new_ids=["c"], pairs=[("b", "c")])
    >>> day2.assignment["c"], day2.events["status"].tolist()
    ('c-a', ['grown'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

OrderKey = tuple[int, int, str]
"""``(undated 0/1, published_at in ns since the epoch, id)``: sorts like :func:`nlsim.clustering.order_key`."""

STATUSES = ("new", "grown", "merged")


def cluster_id_for(item_id: str) -> str:
    """The id a cluster gets from its key member (the rule of :mod:`nlsim.clustering`)."""
    return f"c-{item_id}"


def order_key_of(published_at: Any, item_id: str) -> OrderKey:
    """Order key of one item: dated items first, by time, then by id.

    >>> order_key_of(None, "x") > order_key_of("2030-01-01", "y")
    True
    """
    ts = pd.Timestamp(published_at) if published_at is not None else pd.NaT
    if ts is pd.NaT or pd.isna(ts):
        return (1, 0, str(item_id))
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return (0, int(ts.value), str(item_id))


def order_keys(ids: Sequence[str], times: Any) -> dict[str, OrderKey]:
    """Order keys of many items (``times`` aligned with ``ids``, datetime-like, NaT allowed)."""
    t = pd.to_datetime(pd.Series(list(times), dtype=object) if not isinstance(times, pd.Series) else times,
                       utc=True)
    nat = t.isna().to_numpy()
    ns = t.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").astype("int64")
    return {str(i): ((1, 0, str(i)) if n else (0, int(v), str(i))) for i, n, v in zip(ids, nat, ns, strict=True)}


@dataclass
class ClusterUpdate:
    """What one incremental run did to the clusters.

    Attributes:
        assignment: cluster id of every clustered item among the previous and new items (lone items absent).
        anchors: order key of each cluster's key member (the member its id came from), kept across runs.
        events: one row per cluster touched today: ``cluster_id``, ``status`` (new/grown/merged),
            ``added`` (item ids that joined it today), ``absorbed`` (cluster ids merged into it), ``size``
            (members among the items known to this run).
        merged_into: ``{old cluster id: surviving id}`` for every cluster that disappeared today.
    """

    assignment: dict[str, str]
    anchors: dict[str, OrderKey]
    events: pd.DataFrame
    merged_into: dict[str, str] = field(default_factory=dict)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def update_clusters(
    previous: Mapping[str, str],
    anchors: Mapping[str, OrderKey],
    keys: Mapping[str, OrderKey],
    *,
    new_ids: Iterable[str],
    pairs: Iterable[tuple[str, str]],
) -> ClusterUpdate:
    """Apply today's ``pairs`` (item id pairs at or above the threshold) to the previous clusters.

    Args:
        previous: cluster id of each clustered item known before today (items in no cluster absent).
        anchors: order key of the key member of each previous cluster.
        keys: order key of every item that appears in ``pairs`` or ``new_ids``.
        new_ids: the items first seen today (or re-embedded because their text changed).
        pairs: today's pairs; either end may be old or new.
    """
    new_set = set(map(str, new_ids))
    uf = _UnionFind()

    def node(item: str) -> str:
        cid = previous.get(item)
        return f"C\x00{cid}" if cid is not None else f"I\x00{item}"

    for a, b in pairs:
        uf.union(node(str(a)), node(str(b)))
    groups: dict[str, list[str]] = {}
    for n in list(uf.parent):
        groups.setdefault(uf.find(n), []).append(n)

    assignment = dict(previous)
    out_anchors = dict(anchors)
    merged_into: dict[str, str] = {}
    events: list[dict[str, Any]] = []
    for nodes in groups.values():
        if len(nodes) < 2:
            continue
        clusters = sorted(n.split("\x00", 1)[1] for n in nodes if n.startswith("C\x00"))
        items = sorted(n.split("\x00", 1)[1] for n in nodes if n.startswith("I\x00"))
        old_items = [i for i in items if i not in new_set]
        # Candidates for the surviving id: old clusters by their key member, old lone items by themselves.
        old_parts: list[tuple[OrderKey, str]] = [(anchors[c], c) for c in clusters]
        old_parts += [(keys[i], cluster_id_for(i)) for i in old_items]
        if old_parts:
            anchor, survivor = min(old_parts)
        else:
            anchor, first = min((keys[i], i) for i in items)
            survivor = cluster_id_for(first)
        absorbed = [c for c in clusters if c != survivor]
        for c in absorbed:
            merged_into[c] = survivor
            out_anchors.pop(c, None)
        if absorbed or (clusters and survivor not in clusters):
            status = "merged"
        elif clusters:
            status = "grown"
        else:
            status = "new"
        out_anchors[survivor] = anchor
        for item, cid in previous.items():
            if cid in merged_into:
                assignment[item] = survivor
        for i in items:
            assignment[i] = survivor
        events.append({"cluster_id": survivor, "status": status, "added": items, "absorbed": absorbed})
    # resolve chains (a cluster absorbed into a survivor that is itself absorbed cannot happen within a
    # run, as each component has one survivor), then count members
    sizes: dict[str, int] = {}
    for cid in assignment.values():
        sizes[cid] = sizes.get(cid, 0) + 1
    for e in events:
        e["size"] = sizes.get(e["cluster_id"], 0)
    frame = pd.DataFrame(events, columns=["cluster_id", "status", "added", "absorbed", "size"])
    frame = frame.sort_values("cluster_id", kind="mergesort").reset_index(drop=True)
    return ClusterUpdate(assignment=assignment, anchors=out_anchors, events=frame, merged_into=merged_into)


def drop_items(
    assignment: Mapping[str, str], anchors: Mapping[str, OrderKey], dropped: Iterable[str]
) -> tuple[dict[str, str], dict[str, OrderKey]]:
    """Forget ``dropped`` items (retention); a cluster keeps its id and key member while any member is kept.

    A cluster left with a single kept member stays a cluster (its pairs happened), so a later item that
    matches that member joins the same id.
    """
    gone = set(map(str, dropped))
    kept = {i: c for i, c in assignment.items() if i not in gone}
    alive = set(kept.values())
    return kept, {c: k for c, k in anchors.items() if c in alive}
