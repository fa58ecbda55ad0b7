"""Cluster membership: one rule for a batch run and for a series of daily runs.

A cluster is a connected component of the graph whose edges are the reported pairs; items without a pair
belong to no cluster. Its id is ``"c-" + key member`` (the first member under :mod:`nlsim.clusters.order`).
A run applies today's pairs on top of what earlier runs decided (a batch run is the first run, with
nothing before it):

- **Parts.** Before today every kept item is either in a cluster (whose key member is remembered as its
  *anchor*, even after retention dropped that member) or alone. Today's pairs join parts: existing
  clusters, old lone items and today's new items.
- **new**: a component with no existing cluster; its id comes from its key member.
- **grown**: one existing cluster gained members; it keeps its id.
- **merged**: a component holding two or more *old* parts (clusters, or an old lone item that now joins a
  cluster). The surviving id is that of the old part whose anchor comes first (a lone item's would-be id
  is ``"c-" + its id``); the others are reported as merged into it. Today's items never take over an id
  that existed before today.

So an item keeps its cluster id unless its cluster merges into an earlier one. When items arrive in
publication order, every id equals the one a single batch run over all the items gives. An item that
arrives late (before the key member of the cluster it joins) leaves the cluster's id unchanged: stability
wins over the batch rule. Clusters never split, except when the model changes (:func:`regroup`).

Example:
    >>> from nlsim.clusters.order import order_key_of
    >>> keys = {i: order_key_of(f"2024-01-0{n}", i) for n, i in enumerate("abc", start=1)}
    >>> day1 = update_clusters({}, {}, keys, new_ids=["a", "b"], pairs=[("a", "b")])
    >>> day1.assignment, day1.events["status"].tolist()
    ({'a': 'c-a', 'b': 'c-a'}, ['new'])
    >>> day2 = update_clusters(day1.assignment, day1.anchors, keys, new_ids=["c"], pairs=[("b", "c")])
    >>> day2.assignment["c"], day2.events["status"].tolist()
    ('c-a', ['grown'])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from nlsim.clusters.order import OrderKey, cluster_id_for, key_member_of

STATUSES = ("new", "grown", "merged", "regrouped", "dissolved")
EVENT_COLUMNS = ("cluster_id", "status", "added", "absorbed", "size")


@dataclass
class ClusterUpdate:
    """What one run did to the clusters.

    Attributes:
        assignment: cluster id of every clustered item among the previous and new items (lone items absent).
        anchors: order key of each cluster's key member (the member its id came from), kept across runs.
        events: one row per cluster touched by the run: ``cluster_id``, ``status`` (new/grown/merged, or
            regrouped or dissolved after a model change), ``added`` (item ids that joined it), ``absorbed``
            (cluster ids merged into it), ``size`` (members among the items known to the run).
        merged_into: ``{old cluster id: surviving id}`` for every cluster that disappeared into another.
        dissolved: ``{old cluster id: its former members}`` for every cluster a model change broke up
            (its members now alone, or in several clusters): earliest member first.
    """

    assignment: dict[str, str]
    anchors: dict[str, OrderKey]
    events: pd.DataFrame
    merged_into: dict[str, str] = field(default_factory=dict)
    dissolved: dict[str, list[str]] = field(default_factory=dict)


def _components(nodes: list[str], edges: list[tuple[int, int]]) -> list[list[int]]:
    """Node indices of each connected component with two nodes or more."""
    n = len(nodes)
    if not edges:
        return []
    a = np.fromiter((e[0] for e in edges), dtype=np.int64, count=len(edges))
    b = np.fromiter((e[1] for e in edges), dtype=np.int64, count=len(edges))
    graph = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    order = np.argsort(label, kind="stable")
    cuts = np.flatnonzero(np.diff(label[order])) + 1
    return [g.tolist() for g in np.split(order, cuts) if len(g) > 1]


def events_frame(events: list[dict[str, object]], assignment: Mapping[str, str]) -> pd.DataFrame:
    """The events table of a run (:attr:`ClusterUpdate.events`): one row per event, with its cluster's
    ``size`` in ``assignment``, by cluster id."""
    sizes: dict[str, int] = {}
    for cid in assignment.values():
        sizes[cid] = sizes.get(cid, 0) + 1
    for e in events:
        e["size"] = sizes.get(str(e["cluster_id"]), 0)
    frame = pd.DataFrame(events, columns=list(EVENT_COLUMNS))
    return frame.sort_values("cluster_id", kind="mergesort").reset_index(drop=True)


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
    index: dict[str, int] = {}
    nodes: list[str] = []

    def node(item: str) -> int:
        cid = previous.get(item)
        name = f"C\x00{cid}" if cid is not None else f"I\x00{item}"
        i = index.get(name)
        if i is None:
            i = index[name] = len(nodes)
            nodes.append(name)
        return i

    edges = [(node(str(a)), node(str(b))) for a, b in pairs]
    assignment = dict(previous)
    out_anchors = dict(anchors)
    merged_into: dict[str, str] = {}
    events: list[dict[str, object]] = []
    reassign: dict[str, str] = {}
    for group in _components(nodes, edges):
        names = [nodes[i] for i in group]
        clusters = sorted(n.split("\x00", 1)[1] for n in names if n.startswith("C\x00"))
        items = sorted(n.split("\x00", 1)[1] for n in names if n.startswith("I\x00"))
        old_items = [i for i in items if i not in new_set]
        # candidates for the surviving id: old clusters by their anchor, old lone items by themselves
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
            reassign[c] = survivor
        if absorbed or (clusters and survivor not in clusters):
            status = "merged"
        elif clusters:
            status = "grown"
        else:
            status = "new"
        out_anchors[survivor] = anchor
        for i in items:
            assignment[i] = survivor
        events.append({"cluster_id": survivor, "status": status, "added": items, "absorbed": absorbed})
    if reassign:
        for item, cid in previous.items():
            if cid in reassign:
                assignment[item] = reassign[cid]
    return ClusterUpdate(assignment, out_anchors, events_frame(events, assignment), merged_into)


def assign_groups(
    previous: Mapping[str, str],
    anchors: Mapping[str, OrderKey],
    keys: Mapping[str, OrderKey],
    *,
    groups: Iterable[Iterable[str]],
    new_ids: Iterable[str],
    regrouping: bool = False,
    apart: Iterable[tuple[str, str]] = (),
) -> ClusterUpdate:
    """Name the ``groups`` a cluster rule (:mod:`nlsim.clusters.rules`) found among every item the run
    knows, keeping the ids of earlier runs.

    When the groups only grow and join the previous clusters (every old cluster's kept members in one
    group), this is :func:`update_clusters` applied to them: new, grown, merged, and the same survivor
    rule. When the rule split an old cluster (a support rule can, as links arrive or expire), each group
    takes the earliest of its claims: an old cluster whose key member it holds (or, when that member
    expired, whose kept members it holds most of), or an old item's own would-be id (``"c-" + id``) for an
    old item (one in ``previous`` read again today with a corrected text too) that is alone or whose
    cluster's key member went elsewhere; a group of today's items only
    takes its key member's id. An old cluster that holds two members kept ``apart`` (editors' "not the same
    story" verdicts that came after it was made, as :func:`~nlsim.clusters.constraints.pair_key` pairs) is
    split along them, and its id goes to the group holding most of its kept members (ties: the key
    member's group): the larger piece keeps the id. Each id goes to one group; a cluster whose members
    the rule now leaves alone is reported dissolved. Items arriving in publication order thus get the ids a
    batch run over all of them gives. ``regrouping`` (after a model change) names them by :func:`regroup`.

    Example:
        >>> from nlsim.clusters.order import order_key_of
        >>> keys = {i: order_key_of(f"2024-01-0{n}", i) for n, i in enumerate("abcd", start=1)}
        >>> day1 = assign_groups({}, {}, keys, groups=[["a", "b"]], new_ids=["a", "b"])
        >>> day2 = assign_groups(day1.assignment, day1.anchors, keys, groups=[["a", "c"], ["b", "d"]],
        ...     new_ids=["c", "d"])
        >>> sorted(day2.assignment.items()), day2.events["status"].tolist()
        ([('a', 'c-a'), ('b', 'c-b'), ('c', 'c-a'), ('d', 'c-b')], ['regrouped', 'regrouped'])
    """
    members = {f"g{n}": sorted(map(str, g)) for n, g in enumerate(groups)}
    members = {name: g for name, g in members.items() if len(g) > 1}
    spanning = [(g[0], m) for g in members.values() for m in g[1:]]
    new_set = set(map(str, new_ids))
    if regrouping:
        return regroup(previous, anchors, keys, pairs=spanning, new_ids=new_set)
    group_of = {m: name for name, g in members.items() for m in g}
    old_members = _members(previous)
    # an old cluster none of whose kept members a group holds (a verdict that joined them no longer acts)
    # is no longer together: not a case of groups that only grow
    together = ({group_of.get(m) for m in ms} for ms in old_members.values() if len(ms) > 1)
    if all(len(g) == 1 and None not in g for g in together):
        return update_clusters(previous, anchors, keys, new_ids=new_set, pairs=spanning)
    kept = {c: ms for c, ms in old_members.items() if len(ms) == 1 and ms[0] not in group_of}
    name_of, out_anchors = _name_by_claims(members, previous, anchors, keys, new_set, apart)
    assignment = {i: name_of[g] for g, items in members.items() for i in items}
    for cid, ms in kept.items():  # a cluster left with one kept member stays (see drop_items)
        assignment[ms[0]] = cid
        out_anchors[cid] = _old_anchor(cid, anchors, keys)
    old_sets = {cid: set(items) for cid, items in old_members.items()}
    events = _regroup_events(members, name_of, old_sets, previous, new_set)
    merged_into = _merged_into(old_sets, assignment)
    dissolved = _dissolved(previous, assignment, merged_into, old_sets, keys)
    events += [{"cluster_id": c, "status": "dissolved", "added": [], "absorbed": []} for c in dissolved]
    return ClusterUpdate(assignment, out_anchors, events_frame(events, assignment), merged_into, dissolved)


def _name_by_claims(
    members: Mapping[str, list[str]],
    previous: Mapping[str, str],
    anchors: Mapping[str, OrderKey],
    keys: Mapping[str, OrderKey],
    new_ids: set[str],
    apart: Iterable[tuple[str, str]] = (),
) -> tuple[dict[str, str], dict[str, OrderKey]]:
    """The id each group takes (``{group: id}``) and the anchors of those ids (see :func:`assign_groups`)."""
    group_of = {m: g for g, items in members.items() for m in items}
    split = {
        previous[x] for x, y in apart if previous.get(x) is not None and previous.get(x) == previous.get(y)
    }
    claims: list[tuple[OrderKey, str, str]] = []
    held: dict[str, str] = {}  # old cluster id -> the group that claims it
    for cid, items in _members(previous).items():
        anchor = _old_anchor(cid, anchors, keys)
        key = anchor.item_id
        kept_key = key in previous and previous[key] == cid
        home = group_of.get(key) if kept_key else None
        if not kept_key or cid in split:
            # its key member expired, or a verdict split it: the group holding most of its kept members
            # (ties: the key member's)
            homes = Counter(group_of[i] for i in items if i in group_of)
            home = min(homes, key=lambda g: (-homes[g], g != home, g)) if homes else None
        if home is not None:
            held[cid] = home
            claims.append((anchor, cid, home))
    for item, g in group_of.items():
        own = cluster_id_for(item)  # a key member's would-be id is its cluster's: held above, if at all
        # an old item read again today (a corrected text) is old: it claims its own id as it would unchanged
        old = item not in new_ids or item in previous
        if old and held.get(previous.get(item, "")) != g and own not in held:
            claims.append((keys[item], own, g))
    name_of: dict[str, str] = {}
    out_anchors: dict[str, OrderKey] = {}
    for anchor, cid, g in sorted(claims):
        if g not in name_of and cid not in out_anchors:
            name_of[g], out_anchors[cid] = cid, anchor
    for g, items in sorted(members.items()):
        if g in name_of:
            continue
        for item in sorted(items, key=keys.__getitem__):
            cid = cluster_id_for(item)
            if cid not in out_anchors:
                name_of[g], out_anchors[cid] = cid, keys[item]
                break
    return name_of, out_anchors


def drop_items(
    assignment: Mapping[str, str], anchors: Mapping[str, OrderKey], dropped: Iterable[str]
) -> tuple[dict[str, str], dict[str, OrderKey]]:
    """Forget ``dropped`` items (retention); a cluster keeps its id and anchor while any member is kept.

    A cluster left with a single kept member stays a cluster (its pairs happened), so a later item that
    matches that member joins the same id.
    """
    gone = set(map(str, dropped))
    kept = {i: c for i, c in assignment.items() if i not in gone}
    alive = set(kept.values())
    return kept, {c: k for c, k in anchors.items() if c in alive}


def regroup(
    previous: Mapping[str, str],
    anchors: Mapping[str, OrderKey],
    keys: Mapping[str, OrderKey],
    *,
    pairs: Iterable[tuple[str, str]],
    new_ids: Iterable[str] = (),
) -> ClusterUpdate:
    """Cluster the whole window again from ``pairs`` (after the model changed), keeping ids where
    memberships survive.

    The components are found afresh (:func:`update_clusters` with nothing before). Then each component takes
    the old id it shares most members with (ties: the earlier anchor), each old id going to one component
    at most; the others get the id of their key member (when that id is still free; else the component's
    first member whose id is free). ``events`` lists every cluster whose members changed: ``new``,
    ``grown`` (kept its id and all its kept members, gained some), ``merged`` (took in members of other
    old clusters) or ``regrouped`` (lost members); an old id that no component took is reported in
    ``merged_into`` when its members went to one cluster, and otherwise as ``dissolved`` (an event, and
    its former members in ``dissolved``): a story the new model no longer groups never vanishes unsaid.

    Example:
        >>> from nlsim.clusters.order import order_key_of
        >>> keys = {i: order_key_of(None, i) for i in "abcd"}
        >>> before = {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"}
        >>> up = regroup(before, {"c-a": keys["a"], "c-c": keys["c"]}, keys, pairs=[("a", "c"), ("b", "d")])
        >>> sorted(set(up.assignment.values())), up.events["status"].tolist()
        (['c-a', 'c-c'], ['regrouped', 'regrouped'])
    """
    fresh = update_clusters({}, {}, keys, new_ids=list(keys), pairs=pairs)
    members = _members(fresh.assignment)
    old_members = {cid: set(items) for cid, items in _members(previous, keys).items()}
    name_of, out_anchors = _name_components(members, previous, anchors, keys, fresh.anchors)
    assignment = {i: name_of[c] for i, c in fresh.assignment.items()}
    events = _regroup_events(members, name_of, old_members, previous, set(map(str, new_ids)))
    merged_into = _merged_into(old_members, assignment)
    dissolved = _dissolved(previous, assignment, merged_into, old_members, keys)
    events += [{"cluster_id": c, "status": "dissolved", "added": [], "absorbed": []} for c in dissolved]
    frame = events_frame(events, assignment)
    return ClusterUpdate(assignment, out_anchors, frame, merged_into, dissolved)


def _members(assignment: Mapping[str, str], known: Container[str] | None = None) -> dict[str, list[str]]:
    """The members of each cluster of ``assignment`` (those in ``known`` only, when given)."""
    members: dict[str, list[str]] = {}
    for item, cid in assignment.items():
        if known is None or item in known:
            members.setdefault(cid, []).append(item)
    return members


def _old_anchor(cid: str, anchors: Mapping[str, OrderKey], keys: Mapping[str, OrderKey]) -> OrderKey:
    """An old cluster's anchor; when it was not kept, its key member's key, else a key after every dated
    one."""
    if cid in anchors:
        return anchors[cid]
    return keys.get(key_member_of(cid), OrderKey.of_undated(cid))


def _name_components(
    members: Mapping[str, list[str]],
    previous: Mapping[str, str],
    anchors: Mapping[str, OrderKey],
    keys: Mapping[str, OrderKey],
    fresh_anchors: Mapping[str, OrderKey],
) -> tuple[dict[str, str], dict[str, OrderKey]]:
    """The id each fresh component takes (``{component: id}``) and the anchors of those ids: the old id it
    shares most members with (ties: the earlier anchor; each old id to one component at most), else the
    id of its first member whose id is free."""
    overlaps: list[tuple[int, OrderKey, str, str]] = []
    for comp, items in members.items():
        shared = Counter(previous[i] for i in items if i in previous)
        overlaps += [(-n, _old_anchor(old, anchors, keys), old, comp) for old, n in shared.items()]
    name_of: dict[str, str] = {}
    taken: set[str] = set()
    for _, _, old, comp in sorted(overlaps):
        if comp not in name_of and old not in taken:
            name_of[comp] = old
            taken.add(old)
    out_anchors: dict[str, OrderKey] = {}
    for comp, items in sorted(members.items()):
        if comp in name_of:
            out_anchors[name_of[comp]] = anchors.get(name_of[comp], fresh_anchors[comp])
            continue
        for item in sorted(items, key=keys.__getitem__):
            cid = cluster_id_for(item)
            if cid not in taken:
                name_of[comp], out_anchors[cid] = cid, keys[item]
                taken.add(cid)
                break
    return name_of, out_anchors


def _regroup_events(
    members: Mapping[str, list[str]],
    name_of: Mapping[str, str],
    old_members: Mapping[str, set[str]],
    previous: Mapping[str, str],
    new_ids: set[str],
) -> list[dict[str, object]]:
    """One event per regrouped cluster whose members changed: new, grown, merged or regrouped. A cluster
    absorbed another when it holds members of an old cluster whose id no group kept; a piece split off a
    cluster that lives on absorbed nothing, and is regrouped, not new, even under an id of its own: its
    items were reported in that cluster (a merge the support rule undid, as a later day's links changed the
    support, gives the id it absorbed back to the piece that holds its key member)."""
    events: list[dict[str, object]] = []
    kept = set(name_of.values())
    for comp, items in members.items():
        cid = name_of[comp]
        now = set(items)
        before = old_members.get(cid, set())
        absorbed = sorted({previous[i] for i in items if previous.get(i, cid) != cid} - kept)
        if now == before:
            continue
        if not before and not absorbed:
            status = "regrouped" if any(previous.get(i) is not None for i in items) else "new"
        elif before - now:
            status = "regrouped"
        elif absorbed:
            status = "merged"
        else:
            status = "grown"
        if status == "regrouped" and not before:  # a piece split off: its items were reported in a cluster
            # of before, so only today's items and those that were in none joined it
            added = sorted(
                i for i in now if i in new_ids or len(old_members.get(previous.get(i, ""), ())) < 2
            )
        else:
            added = sorted(i for i in now - before if i in new_ids or i not in previous or previous[i] != cid)
        events.append({"cluster_id": cid, "status": status, "added": added, "absorbed": absorbed})
    return events


def _merged_into(old_members: Mapping[str, set[str]], assignment: Mapping[str, str]) -> dict[str, str]:
    """The old ids no component took whose members all went to one cluster: ``{old id: that cluster}``."""
    current = set(assignment.values())
    merged_into: dict[str, str] = {}
    for old, items in old_members.items():
        if old in current:
            continue
        homes = {assignment.get(i) for i in items} - {None}
        if len(homes) == 1:
            merged_into[old] = str(homes.pop())
    return merged_into


def _dissolved(
    previous: Mapping[str, str],
    assignment: Mapping[str, str],
    merged_into: Mapping[str, str],
    old_members: Mapping[str, set[str]],
    keys: Mapping[str, OrderKey],
) -> dict[str, list[str]]:
    """The old clusters the new model broke up, with their former members still in the window (earliest
    first); a cluster whose members all expired just ends."""
    dissolved: dict[str, list[str]] = {}
    for cid in sorted(set(previous.values()) - set(assignment.values()) - set(merged_into)):
        former = sorted(old_members.get(cid, set()), key=keys.__getitem__)
        if former:
            dissolved[cid] = former
    return dissolved
