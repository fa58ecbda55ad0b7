"""Exact copies (nlsim.clusters.copies): found before the search, one item for the cluster rule."""

import pandas as pd

from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.copies import copy_key, find_copies
from nlsim.clusters.rules import ConnectedComponents, Link, SharedSupport


def test_a_key_ignores_case_width_space_and_punctuation_but_not_words_or_numbers():
    assert copy_key("Rain in Taipei.") == copy_key("  RAIN  in taipei ")
    assert copy_key("ＡＢＣ１２３") == copy_key("abc123")  # full-width forms (NFKC)
    assert copy_key("「颱風」來了！") == copy_key("颱風來了")
    assert copy_key("Q3 profit") != copy_key("Q4 profit")
    assert copy_key("上漲0.67%") != copy_key("上漲0.68%")
    assert copy_key(" ... ") == ""


def test_texts_without_words_are_nobodys_copies():
    found = find_copies(["a", "b", "c"], ["...", "!!", "--"])
    assert found.count == 0 and found.groups() == []


def test_the_earliest_copy_leads_its_group_and_undated_ones_follow():
    times = pd.to_datetime(["2024-05-02", None, "2024-05-01", "2024-05-03"], utc=True)
    found = find_copies(["late", "undated", "early", "other"], ["x", "x", "x", "y"], times)
    assert found.groups() == [["early", "late", "undated"]]
    assert found.rep_of() == {"late": "early", "undated": "early"}
    assert found.count == 2


def test_copies_further_apart_than_the_time_window_are_not_copies():
    times = pd.to_datetime(["2024-05-01 00:00", "2024-05-01 20:00", "2024-05-03 00:00"], utc=True)
    assert find_copies(["a", "b", "c"], ["x"] * 3, times).groups() == [["a", "b", "c"]]
    assert find_copies(["a", "b", "c"], ["x"] * 3, times, window_hours=24).groups() == [["a", "b"]]


def test_an_editors_not_the_same_story_keeps_two_copies_apart():
    found = find_copies(["a", "b", "c", "d"], ["x"] * 4, cannot=[("a", "c")])
    assert found.groups() == [["a", "b", "d"]]  # c alone: apart from a, so in a group of its own
    assert "c" not in found.rep_of()


def test_pairs_link_each_copy_to_its_representative_smaller_row_first():
    found = find_copies(["b", "a", "c"], ["x", "x", "x"], pd.to_datetime(["2024-01-02"] * 3, utc=True))
    a, b = found.pairs()
    assert sorted(zip(a.tolist(), b.tolist(), strict=True)) == [
        (0, 1),
        (1, 2),
    ]  # "a" (row 1) leads: ties by id
    a, b = found.pairs(rows=[2])
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(1, 2)]


def _many_copies(n: int) -> tuple[list[Link], dict[str, str]]:
    """n copies linked as a 10-nearest-neighbour search links them (every copy ties at the top, and the
    search gives each the same first rows), plus two other items."""
    ids = [f"c{i:04d}" for i in range(n)]
    links = [Link(ids[i], ids[j], 1.0) for i in range(n) for j in range(11) if i != j]
    links += [Link(ids[0], "other", 0.93), Link("other", "third", 0.95)]
    found = find_copies([*ids, "other", "third"], ["same"] * n + ["o", "t"])
    return links, found.rep_of()


def test_without_copies_the_support_rule_leaves_most_of_many_copies_out():
    links, _ = _many_copies(150)
    grouped = {i for g in SharedSupport(min_share=0.4).clusters(links) for i in g if i.startswith("c")}
    assert len(grouped) < 50  # what an editor saw: most copies in no cluster


def test_every_copy_joins_its_representatives_cluster_under_each_rule():
    links, rep_of = _many_copies(150)
    for rule in (SharedSupport(min_share=0.4), ConnectedComponents()):
        clusters = rule.clusters(links, copies=rep_of)
        holding = [g for g in clusters if "c0000" in g]
        assert len(holding) == 1 and sum(m.startswith("c") for m in holding[0]) == 150, rule.name


def test_a_copy_group_linked_to_nothing_is_a_cluster_of_its_own():
    rep_of = find_copies(["a", "b", "c", "x", "y"], ["s", "s", "s", "p", "q"]).rep_of()
    assert SharedSupport(min_share=0.4).clusters([Link("x", "y", 0.9)], copies=rep_of) == [
        ["a", "b", "c"],
        ["x", "y"],
    ]


def test_a_cannot_link_between_a_copy_and_another_item_keeps_the_whole_group_apart():
    rep_of = find_copies(["a", "b", "x"], ["s", "s", "p"]).rep_of()
    links = [Link("a", "x", 0.95), Link("b", "x", 0.95)]
    clusters = ConnectedComponents().clusters(links, LinkConstraints.from_pairs(cannot=[("b", "x")]), rep_of)
    assert clusters == [["a", "b"]]


def test_a_group_of_copies_weighs_in_the_support_rule_as_its_copies_would():
    """A bridge x links to the three copies of story A and the two of story B: x joins A (it links to all
    of A's items), and A with x stays apart from B (2 of the 8 item pairs between them are linked, below
    0.4), read with the copies grouped or not."""
    a, b = ["a1", "a2", "a3"], ["b1", "b2"]
    links = [Link(x, y, 1.0) for g in (a, b) for i, x in enumerate(g) for y in g[i + 1 :]]
    links += [Link("x", m, 0.9) for m in a + b]
    rule = SharedSupport(min_share=0.4)
    rep_of = find_copies([*a, *b, "x"], ["A", "A", "A", "B", "B", "X"]).rep_of()
    assert (
        rule.clusters(links) == rule.clusters(links, copies=rep_of) == [["a1", "a2", "a3", "x"], ["b1", "b2"]]
    )
