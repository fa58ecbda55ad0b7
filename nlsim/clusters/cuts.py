"""Keeping apart what an editor kept apart: which links a "not the same story" cuts.

A cluster rule's group can hold two items an editor said are not the same story, joined through a chain of
other links. Something in the chain must go. Two ways to choose what:

- ``order`` (the default): the links are joined again from the strongest down, and a link that would put
  the two items in one group is left out (:func:`nlsim.clusters.rules.ClusterRule.clusters`): the links
  cut are the weakest ones on the way, and with them any same-story link that happened to come later.
- ``min-cut``: the cheapest set of links whose removal parts the two items, their scores summed
  (:func:`min_cut_apart`, a minimum s-t cut on the group's links: as few and as weak links as can be);
  each group holding several such pairs is cut pair by pair until none is together. An editor's "same
  story" link is never cut unless nothing else parts the pair (the editor's "no" wins).

Example:
    >>> from nlsim.clusters.rules import Link
    >>> links = [Link("a", "b", 0.99), Link("b", "c", 0.95), Link("c", "d", 0.99), Link("a", "c", 0.91)]
    >>> min_cut_apart([["a", "b", "c", "d"]], links, [("a", "d")])  # one link cut (c-d)
    [['a', 'b', 'c']]

    (``order`` joins a-b and c-d, then leaves out b-c and a-c: two links cut, ``[['a', 'b'], ['c', 'd']]``.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, maximum_flow

from nlsim.clusters.constraints import pair_key

CUTS = ("order", "min-cut")
SCALE = 10_000
"""Scores become integer capacities (maximum_flow takes integers): four decimals kept."""
MUST = 10**9
"""The capacity of an editor's "same story" link: cut only when nothing else parts the pair."""


def min_cut_apart(
    groups: Iterable[Sequence[str]],
    links: Iterable[Any],
    cannot: Iterable[tuple[str, str]],
    must: Iterable[tuple[str, str]] = (),
) -> list[list[str]]:
    """``groups`` with every pair of ``cannot`` parted by minimum cuts of ``links`` (each with ``a``, ``b``,
    ``score``) inside its group; ``must`` pairs are links that cost :data:`MUST` to cut. Groups of two
    items or more, sorted lists, sorted by their first id."""
    apart = {pair_key(a, b) for a, b in cannot}
    forced = {pair_key(a, b) for a, b in must} - apart
    edges: dict[tuple[str, str], float] = {}
    for k in links:
        key = pair_key(k.a, k.b)
        if key not in apart:
            edges[key] = max(edges.get(key, 0.0), float(k.score))
    out: list[list[str]] = []
    todo = [list(g) for g in groups]
    while todo:
        group = todo.pop()
        inside = set(group)
        clash = next(((a, b) for a, b in sorted(apart) if a in inside and b in inside), None)
        if clash is None:
            if len(group) > 1:
                out.append(sorted(group))
            continue
        todo += _cut(group, edges, forced, clash)
    return sorted(out, key=lambda g: g[0])


def _cut(
    group: list[str], edges: dict[tuple[str, str], float], forced: set[tuple[str, str]], pair: tuple[str, str]
) -> list[list[str]]:
    """``group`` parted between ``pair`` by a minimum cut of its links: the connected parts that remain
    (the cut links dropped from ``edges`` and ``forced``)."""
    names = sorted(group)
    index = {m: i for i, m in enumerate(names)}
    inside = [k for k in set(edges) | forced if k[0] in index and k[1] in index]
    caps = [MUST if k in forced else max(1, int(round(edges[k] * SCALE))) for k in inside]
    rows = [index[a] for a, _ in inside] + [index[b] for _, b in inside]
    cols = [index[b] for _, b in inside] + [index[a] for a, _ in inside]
    n = len(names)
    graph = csr_matrix((np.array(caps * 2, dtype=np.int64), (rows, cols)), shape=(n, n))
    flow = maximum_flow(graph, index[pair[0]], index[pair[1]]).flow
    residual = (graph - flow).tocsr()
    residual.data = (residual.data > 0).astype(np.int64)
    residual.eliminate_zeros()
    source_side = _reachable(residual, index[pair[0]])
    kept = []
    for a, b in inside:
        if source_side[index[a]] != source_side[index[b]]:
            edges.pop((a, b), None)
            forced.discard((a, b))
        else:
            kept.append((index[a], index[b]))
    ka = [a for a, _ in kept]
    kb = [b for _, b in kept]
    adjacency = csr_matrix((np.ones(len(kept)), (ka, kb)), shape=(n, n))
    _, part = connected_components(adjacency, directed=False)
    return [[names[i] for i in np.flatnonzero(part == p)] for p in np.unique(part)]


def _reachable(residual: csr_matrix, source: int) -> np.ndarray:
    """Nodes reachable from ``source`` along edges with capacity left (the source side of the cut)."""
    seen = np.zeros(residual.shape[0], bool)
    seen[source] = True
    frontier = [source]
    while frontier:
        node = frontier.pop()
        for nxt in residual.indices[residual.indptr[node] : residual.indptr[node + 1]]:
            if not seen[nxt]:
                seen[nxt] = True
                frontier.append(int(nxt))
    return seen
