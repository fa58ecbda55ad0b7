"""The training pairs' "not the same story" inside large story clusters (:mod:`nlsim.clusters.scored_cut`)."""

from __future__ import annotations

import pytest

from nlsim.clusters.rules import Link
from nlsim.clusters.scored_cut import cut_size, part_large

# two stories of three (a b c, d e f), each held tightly, bridged by one weaker link c-d
STORIES = [Link(a, b, 0.97) for a, b in ("ab", "bc", "ac", "de", "ef", "df")] + [Link("c", "d", 0.9)]
SIX = [list("abcdef")]


def test_a_pair_scored_below_the_same_story_parts_a_large_cluster_at_its_weakest_links() -> None:
    assert part_large(SIX, STORIES, apart=[("a", "f")]) == [list("abc"), list("def")]


def test_a_small_cluster_is_kept_as_the_rule_made_it() -> None:
    assert part_large([list("abc")], STORIES, apart=[("a", "c")]) == [list("abc")]
    assert part_large([list("abc")], STORIES, apart=[("a", "c")], size=2) == [["b", "c"]]  # 'all'


def test_without_a_pair_scored_below_the_same_story_the_clusters_stay() -> None:
    assert part_large(SIX, STORIES, apart=[("a", "x")]) == SIX


def test_a_pair_scored_the_same_story_costs_the_most_to_cut() -> None:
    # without it the bridge c-d goes; with c-d scored the same story, the cut goes around it
    got = part_large(SIX, STORIES, apart=[("a", "f")], together=[("c", "d")])
    assert got != [list("abc"), list("def")]
    assert any("c" in g and "d" in g for g in got)


def test_exact_copies_count_as_items_and_are_never_parted() -> None:
    links = [Link("a", "b", 0.97), Link("b", "c", 0.9)]
    copies = {"a2": "a", "a3": "a"}
    group = [["a", "a2", "a3", "b", "c"]]  # three texts, five items: a large cluster
    got = part_large(group, links, apart=[("a2", "c")], copies=copies)
    assert got == [["a", "a2", "a3", "b"]]
    # the pair's copy that lost every link keeps its copies: a cluster of its own
    alone = part_large(
        [["a", "a2", "a3", "c", "d"]],
        [Link("a", "c", 0.9), Link("c", "d", 0.99)],
        [("a", "d")],
        copies=copies,
    )
    assert alone == [["a", "a2", "a3"], ["c", "d"]]


@pytest.mark.parametrize(("where", "size"), [("large", 5), ("all", 2), ("none", None)])
def test_where_the_pairs_act(where: str, size: int | None) -> None:
    assert cut_size(where) == size  # type: ignore[arg-type]
