"""Link constraints: pairs in either order, self-pairs dropped, restriction to known items."""

from __future__ import annotations

from nlsim.clusters.constraints import LinkConstraints


def test_a_self_pair_is_no_constraint() -> None:
    c = LinkConstraints.from_pairs(must=[("a", "a")], cannot=[("b", "b")])
    assert len(c) == 0 and not c


def test_requires_reads_a_pair_in_either_order_and_a_cannot_link_overrules_it() -> None:
    c = LinkConstraints.from_pairs(must=[("a", "b"), ("c", "d")], cannot=[("d", "c")])
    assert c.requires("b", "a") and c.requires("a", "b")
    assert not c.requires("c", "d") and c.forbids("c", "d")


def test_restricted_to_keeps_only_pairs_with_both_items_known() -> None:
    c = LinkConstraints.from_pairs(must=[("a", "b"), ("a", "z")], cannot=[("b", "z")])
    r = c.restricted_to(["a", "b"])
    assert r.must_link == frozenset({("a", "b")}) and r.cannot_link == frozenset()


def test_item_ids_are_stored_as_text() -> None:
    assert LinkConstraints.from_pairs(must=[(2, 1)]).requires("1", "2")  # type: ignore[list-item]
