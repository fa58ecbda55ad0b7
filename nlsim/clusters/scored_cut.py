"""The annotated training pairs inside large story clusters: a pair scored below the same-story level parts
the cluster that holds it.

A story cluster of 5 items or more is where the score joins an exam year's, a saga's or one product's other
events (the rubric's 0.75, "same topic, another event") as confidently as one story. The annotated pair file
often holds a training pair inside such a cluster that the annotators scored below the same-story level.
:func:`part_large` reads each such pair as an editor's "not the same story" inside the large clusters only,
each cluster parted by minimum cuts of its links (:func:`nlsim.clusters.cuts.min_cut_apart`: as few and as
weak links as can be); a training pair scored the same story is a link that costs the most to cut. Smaller
clusters are kept as the rule made them: given everywhere, the same pairs cut the chains of small stories
too, and the report finds fewer of them (docs/experiments.md, "The training pairs' 'not the same story'
inside large clusters").

Exact copies (:mod:`nlsim.clusters.copies`) are read as their group's representative: a cut never parts
them.

Example:
    >>> from nlsim.clusters.rules import Link
    >>> links = [Link(a, b, 0.99) for a, b in ("ab", "cd", "de", "ce", "xy")] + [Link("b", "c", 0.9)]
    >>> part_large([["a", "b", "c", "d", "e"], ["x", "y"]], links, apart=[("a", "e"), ("x", "y")])
    [['a', 'b'], ['c', 'd', 'e'], ['x', 'y']]

    (The pair x-y is apart too, but its cluster is small: kept as the rule made it.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.copies import contract
from nlsim.clusters.cuts import min_cut_apart
from nlsim.clusters.rules import DEFAULT_LARGE, Link

ScoredCut = Literal["large", "all", "none"]
SCORED_CUTS: tuple[ScoredCut, ...] = ("large", "all", "none")
"""Where the training pairs act: in clusters of :data:`SCORED_CUT_SIZE` items or more (``large``), in every
cluster (``all``), or nowhere (``none``)."""
DEFAULT_SCORED_CUT: ScoredCut = "none"
"""Where the training pairs act by default (docs/experiments.md, "The training pairs' 'not the same story'
inside large clusters")."""
SCORED_CUT_SIZE = DEFAULT_LARGE
"""The items a cluster holds for ``large`` to part it: the large cluster of the story rule."""


def cut_size(where: ScoredCut) -> int | None:
    """The smallest cluster ``where`` parts (``None``: none).

    >>> cut_size("large"), cut_size("all"), cut_size("none")
    (5, 2, None)
    """
    return {"large": SCORED_CUT_SIZE, "all": 2, "none": None}[where]


def part_large(
    groups: Iterable[Sequence[str]],
    links: Iterable[Any],
    apart: Iterable[tuple[str, str]],
    together: Iterable[tuple[str, str]] = (),
    copies: Mapping[str, str] | None = None,
    size: int = SCORED_CUT_SIZE,
) -> list[list[str]]:
    """``groups`` with each group of ``size`` items or more parted between the pairs of ``apart`` it holds,
    by minimum cuts of ``links`` (each with ``a``, ``b``, ``score``) inside it; the pairs of ``together``
    cost the most to cut. ``copies`` maps each exact copy to its group's representative: copies stay
    together and count as items. Groups of two items or more, sorted lists, sorted by their first id."""
    rep_of = dict(copies or {})
    between, lifted, _ = contract(links, LinkConstraints.from_pairs(together, apart), rep_of)
    reps = [Link(a, b, score) for a, b, score in between]
    out: list[list[str]] = []
    large: list[list[str]] = []
    members: dict[str, list[str]] = {}
    for group in groups:
        if len(group) < size:
            out.append(sorted(group))
            continue
        mine: dict[str, list[str]] = {}
        for m in group:
            mine.setdefault(rep_of.get(m, m), []).append(m)
        members.update(mine)
        large.append(sorted(mine))
    inside = {r for g in large for r in g}
    cons = lifted.restricted_to(inside)
    placed: set[str] = set()
    for part in min_cut_apart(large, reps, cons.cannot_link, cons.must_link):
        placed.update(part)
        out.append(sorted(m for r in part for m in members[r]))
    for group in large:  # a representative the cuts left alone: its copies are a cluster of their own
        out += [sorted(members[r]) for r in group if r not in placed and len(members[r]) > 1]
    return sorted((g for g in out if len(g) > 1), key=lambda g: g[0])
