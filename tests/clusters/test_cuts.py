"""A "not the same story" parts a group: the weakest links on the way (order), or the cheapest set."""

from __future__ import annotations

import pytest

from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.cuts import min_cut_apart
from nlsim.clusters.rules import ConnectedComponents, Link, SharedSupport
from nlsim.errors import ConfigError

CHAIN = [Link("a", "b", 0.99), Link("b", "c", 0.95), Link("c", "d", 0.99), Link("a", "c", 0.91)]


def _cut_links(links: list[Link], clusters: list[list[str]]) -> int:
    where = {m: i for i, g in enumerate(clusters) for m in g}
    return sum(1 for k in links if where.get(k.a) is None or where.get(k.a) != where.get(k.b))


@pytest.mark.parametrize("rule", [ConnectedComponents(), SharedSupport(min_share=0.3)], ids=lambda r: r.name)
def test_a_minimum_cut_parts_the_pair_cutting_fewer_links_than_the_order(rule) -> None:  # noqa: ANN001
    cannot = LinkConstraints.from_pairs(cannot=[("a", "d")])
    order = rule.clusters(CHAIN, cannot)
    cheap = rule.clusters(CHAIN, cannot, cut="min-cut")
    for clusters in (order, cheap):
        assert not any({"a", "d"} <= set(g) for g in clusters)
    assert order == [["a", "b"], ["c", "d"]]  # b-c and a-c cut
    assert cheap == [["a", "b", "c"]]  # c-d cut
    assert _cut_links(CHAIN, cheap) < _cut_links(CHAIN, order)


def test_an_editors_same_story_link_is_cut_only_when_nothing_else_parts_the_pair() -> None:
    links = [Link("a", "b", 0.9), Link("b", "c", 0.9)]
    # a-b must stay: the cheapest cut that spares it is b-c
    assert min_cut_apart([["a", "b", "c"]], links, [("a", "c")], must=[("a", "b")]) == [["a", "b"]]
    # the pair itself said to be the same story and not: the "no" wins
    both = LinkConstraints.from_pairs(must=[("a", "c")], cannot=[("a", "c")])
    assert not any({"a", "c"} <= set(g) for g in ConnectedComponents().clusters(links, both, cut="min-cut"))


def test_several_pairs_in_one_group_are_each_parted() -> None:
    star = [Link("h", x, 0.9 + i / 100) for i, x in enumerate("abcd")]
    got = min_cut_apart([["a", "b", "c", "d", "h"]], star, [("a", "b"), ("c", "d")])
    for x, y in (("a", "b"), ("c", "d")):
        assert not any({x, y} <= set(g) for g in got)


def test_an_unknown_cut_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown cut 'widest'"):
        ConnectedComponents().clusters(CHAIN, LinkConstraints.from_pairs(cannot=[("a", "d")]), cut="widest")
