"""Editors' verdicts as constraints on clusters: items that must share a cluster, items that must not.

An editor who marks a pair "same story" asks for a *must-link*: the two items end in one cluster whatever
the scores say. "Not the same story" is a *cannot-link*: the two items never end in one cluster, not even
through a chain of other links. A cluster rule (:mod:`nlsim.clusters`) takes the constraints with the links
and honours both; where they contradict each other, the cannot-link wins (an editor's "no" is never
overruled by a chain of "yes").

Example:
    >>> c = LinkConstraints.from_pairs(must=[("b", "a")], cannot=[("c", "a")])
    >>> c.requires("a", "b"), c.forbids("a", "c"), c.forbids("c", "a"), c.forbids("a", "b")
    (True, True, True, False)
    >>> bool(LinkConstraints()), len(c), len(c.restricted_to(["a", "b"]))
    (False, 2, 1)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The pair ``(a, b)`` in a fixed order, so that ``(a, b)`` and ``(b, a)`` are one key.

    >>> pair_key("b", "a")
    ('a', 'b')
    """
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class LinkConstraints:
    """Must-link and cannot-link item pairs, each stored as :func:`pair_key`.

    Attributes:
        must_link: pairs an editor said are the same story.
        cannot_link: pairs an editor said are not the same story.
    """

    must_link: frozenset[tuple[str, str]] = frozenset()
    cannot_link: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def from_pairs(
        cls, must: Iterable[tuple[str, str]] = (), cannot: Iterable[tuple[str, str]] = ()
    ) -> LinkConstraints:
        """Constraints from item-id pairs in any order; a self-pair is ignored."""
        return cls(
            must_link=frozenset(pair_key(str(a), str(b)) for a, b in must if a != b),
            cannot_link=frozenset(pair_key(str(a), str(b)) for a, b in cannot if a != b),
        )

    def requires(self, a: str, b: str) -> bool:
        """Whether an editor said ``a`` and ``b`` are the same story (and not also that they are not)."""
        key = pair_key(a, b)
        return key in self.must_link and key not in self.cannot_link

    def forbids(self, a: str, b: str) -> bool:
        """Whether an editor said ``a`` and ``b`` are not the same story."""
        return pair_key(a, b) in self.cannot_link

    def restricted_to(self, ids: Iterable[str]) -> LinkConstraints:
        """The constraints whose two items are both among ``ids`` (the items a run knows)."""
        known = set(ids)
        return LinkConstraints(
            must_link=frozenset(p for p in self.must_link if p[0] in known and p[1] in known),
            cannot_link=frozenset(p for p in self.cannot_link if p[0] in known and p[1] in known),
        )

    def __len__(self) -> int:
        return len(self.must_link) + len(self.cannot_link)

    def __bool__(self) -> bool:
        return bool(self.must_link or self.cannot_link)
