"""Editors' verdicts applied to a cluster rule's links: cannot-links cut the weakest links between the two
items, must-links join, a cannot-link wins over a chain of must-links."""

from __future__ import annotations

from nlsim.clusters.apply_constraints import apply_constraints, violations
from nlsim.clusters.assign import update_clusters
from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.order import order_key_of
from nlsim.clusters.weakest_link import weakest_links


def _clusters(links: list[tuple[str, str]], ids: str) -> dict[str, str]:
    keys = {i: order_key_of(f"2024-01-{n + 1:02d}", i) for n, i in enumerate(ids)}
    return update_clusters({}, {}, keys, new_ids=list(ids), pairs=links).assignment


def test_a_cannot_link_splits_a_chain_at_its_weakest_link() -> None:
    # a - b - c - d - e, a chain; "a and e are not the same story": the weakest link between them goes
    links = [("a", "b", 0.95), ("b", "c", 0.97), ("c", "d", 0.91), ("d", "e", 0.96)]
    out = apply_constraints(links, LinkConstraints.from_pairs(cannot=[("e", "a")]))
    assert out.cut == [("c", "d")]
    got = _clusters(out.links, "abcde")
    assert got == {"a": "c-a", "b": "c-a", "c": "c-a", "d": "c-d", "e": "c-d"}
    assert not violations(got, LinkConstraints.from_pairs(cannot=[("a", "e")]))
    # without the verdict it is one cluster, which the verdict's check names
    whole = _clusters([(a, b) for a, b, _ in links], "abcde")
    assert violations(whole, LinkConstraints.from_pairs(cannot=[("a", "e")])) == {"c-a"}


def test_a_direct_cannot_link_drops_that_link_only() -> None:
    links = [("a", "b", 0.99), ("b", "c", 0.92), ("a", "c", 0.93)]
    out = apply_constraints(links, LinkConstraints.from_pairs(cannot=[("a", "b")]))
    # a and b are kept apart: c goes with the stronger side (a, 0.93); b-c (0.92) is cut
    assert sorted(out.cut) == [("a", "b"), ("b", "c")]
    assert sorted(out.links) == [("a", "c")]


def test_a_component_without_a_cannot_link_keeps_every_link() -> None:
    links = [("a", "b", 0.91), ("b", "c", 0.92), ("x", "y", 0.95), ("y", "z", 0.99)]
    out = apply_constraints(links, LinkConstraints.from_pairs(cannot=[("x", "z")]))
    assert ("a", "b") in out.links and ("b", "c") in out.links
    assert out.cut == [("x", "y")]


def test_must_links_join_and_a_cannot_link_wins_over_their_chain() -> None:
    links = [("a", "b", 0.95)]
    c = LinkConstraints.from_pairs(must=[("b", "c"), ("c", "d")], cannot=[("a", "d")])
    out = apply_constraints(links, c)
    got = _clusters(out.links, "abcd")
    assert got["b"] == got["c"] == got["d"]  # joined by an editor, no scored link needed
    assert got.get("a") != got["d"] and out.cut == [("a", "b")]  # the scored link gives way to the verdicts
    assert out.joined == [("b", "c"), ("c", "d")] and not out.refused
    chain = apply_constraints(
        [], LinkConstraints.from_pairs(must=[("a", "b"), ("b", "c")], cannot=[("a", "c")])
    )
    assert chain.refused == [("b", "c")]  # the "no" wins over the chain of "yes"
    assert violations(_clusters(chain.links, "abc"), LinkConstraints.from_pairs(cannot=[("a", "c")])) == set()
    direct = apply_constraints([], LinkConstraints.from_pairs(must=[("p", "q")], cannot=[("p", "q")]))
    assert direct.links == [] and direct.refused == [("p", "q")]


def test_no_constraint_changes_nothing() -> None:
    links = [("a", "b", 0.9), ("c", "b", 0.8)]
    out = apply_constraints(links, LinkConstraints())
    assert sorted(out.links) == [("a", "b"), ("b", "c")] and not out.cut and not out.joined


def test_weakest_link_is_the_lowest_link_that_holds_the_cluster() -> None:
    assignment = {"a": "c-a", "b": "c-a", "c": "c-a", "d": "c-a", "x": "c-x", "y": "c-x"}
    links = [("a", "b", 0.99), ("b", "c", 0.90), ("a", "c", 0.95), ("c", "d", 0.93), ("x", "y", None)]
    # a-c 0.95 holds c better than b-c 0.90: the links holding c-a are 0.99, 0.95, 0.93
    assert weakest_links(assignment, [*links, ("a", "x", 0.5)]) == {"c-a": 0.93, "c-x": None}
