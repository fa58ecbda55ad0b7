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


def test_the_cut_is_the_cheapest_by_score_not_the_fewest_links() -> None:
    """a and d apart: one strong link (a-b, 0.99) costs more than two weak ones (b-c1, b-c2, 0.1 each)."""
    links = [Link("a", "b", 0.99), Link("b", "c1", 0.1), Link("b", "c2", 0.1)]
    links += [Link("c1", "d", 0.99), Link("c2", "d", 0.99)]
    assert min_cut_apart([["a", "b", "c1", "c2", "d"]], links, [("a", "d")]) == [
        ["a", "b"],
        ["c1", "c2", "d"],
    ]


@pytest.mark.parametrize(("ab", "bc", "kept"), [(0.93, 0.94, ["b", "c"]), (0.94, 0.93, ["a", "b"])])
def test_scores_a_hundredth_apart_decide_the_cut(ab: float, bc: float, kept: list[str]) -> None:
    assert min_cut_apart([["a", "b", "c"]], [Link("a", "b", ab), Link("b", "c", bc)], [("a", "c")]) == [kept]


def test_a_pair_given_twice_costs_its_stronger_score() -> None:
    """a-b given at 0.1 and at 0.99: cutting it costs 0.99, more than b-c at 0.5."""
    links = [Link("a", "b", 0.1), Link("b", "c", 0.5), Link("b", "a", 0.99)]
    assert min_cut_apart([["a", "b", "c"]], links, [("a", "c")]) == [["a", "b"]]


def test_an_editors_same_story_pair_outweighs_any_set_of_links() -> None:
    """a and b are the same story (no link of theirs needed), and b links to c along two paths, each strong:
    parting a from c cuts both paths (1.8 in all), never the editor's pair."""
    links = [Link("b", "c", 0.9), Link("b", "x", 0.9), Link("x", "c", 0.9)]
    got = min_cut_apart([["a", "b", "c", "x"]], links, [("a", "c")], must=[("a", "b")])
    assert got == [["a", "b"], ["c", "x"]]
    verdicts = LinkConstraints.from_pairs(must=[("a", "b")], cannot=[("a", "c")])
    assert ConnectedComponents().clusters(links, verdicts, cut="min-cut") == [["a", "b"], ["c", "x"]]


def test_the_groups_come_sorted_by_their_first_id() -> None:
    links = [Link("z", "y", 0.9), Link("y", "a", 0.5), Link("a", "b", 0.9)]
    assert min_cut_apart([["a", "b", "y", "z"]], links, [("a", "z")]) == [["a", "b"], ["y", "z"]]
