"""The report page's cluster rule (``assets/rules.js``, what the review panel's preview runs) against the
report's own (:mod:`nlsim.clusters.rules`): the same links, verdicts and exact copies give the same groups
under every rule, its share and large-cluster conditions, and both cuts, in a real headless browser."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.rules import ClusterRule, ConnectedComponents, Link, SharedSupport
from tests.browser import Browser, require_browser

pytestmark = pytest.mark.slow


@dataclass
class Case:
    """One set of links with the editors' verdicts and the exact copies, under one rule and cut."""

    rule: dict[str, Any]
    links: list[tuple[str, str, float]]
    must: list[tuple[str, str]] = field(default_factory=list)
    cannot: list[tuple[str, str]] = field(default_factory=list)
    copies: dict[str, str] = field(default_factory=dict)
    cut: str = "order"
    order: dict[str, int] | None = None
    """Each id's rank under the order rule (earliest first), which settles exact ties; by id without it."""

    def python(self) -> list[list[str]]:
        rule: ClusterRule = (
            ConnectedComponents()
            if self.rule["name"] == "components"
            else SharedSupport(**{k: v for k, v in self.rule.items() if k != "name"})
        )
        return rule.clusters(
            [Link(a, b, s) for a, b, s in self.links],
            LinkConstraints.from_pairs(must=self.must, cannot=self.cannot),
            self.copies or None,
            cut=self.cut,
            order=self.order,
        )

    def js(self) -> str:
        return (
            f"nlsimRules.clusters({json.dumps(self.rule)}, {json.dumps(self.links)}, "
            f"{json.dumps({'must': self.must, 'cannot': self.cannot})}, {json.dumps(self.copies)}, "
            f"{json.dumps(self.cut)}, {json.dumps(self.order)})"
        )


COMPONENTS = {"name": "components"}
SUPPORT = {"name": "support", "min_share": 0.4}
LARGE = {"name": "support", "min_share": 0.4, "large": 5, "large_share": 0.6, "large_floor": 0.93}
CHAIN = [("a", "b", 0.95), ("b", "c", 0.95), ("c", "d", 0.95), ("a", "c", 0.93)]
AT_THRESHOLD = {"name": "support", "min_share": 0.3, "large": 5, "large_share": None, "large_floor": 0.91}
CHAIN_AT_THRESHOLD = [(a, b, 0.9) for a, b in zip("abcdef", "bcdef", strict=False)] + [
    (a, b, 0.9) for a, b in zip("abcd", "cdef", strict=True)
]
CUTS = [("a", "b", 0.99), ("b", "c", 0.95), ("c", "d", 0.99), ("a", "c", 0.91)]

HAND_MADE = [
    Case(COMPONENTS, CHAIN),  # the rules module's example: one chain, one cluster
    Case({"name": "support", "min_share": 0.5}, CHAIN),  # ... support at 0.5: d is left out
    Case(COMPONENTS, CHAIN, cannot=[("a", "d")]),  # a cannot-link through a chain
    Case(COMPONENTS, CUTS, cannot=[("a", "d")]),  # the cuts module's example, by order ...
    Case(COMPONENTS, CUTS, cannot=[("a", "d")], cut="min-cut"),  # ... and by the cheapest cut
    Case(SUPPORT, CUTS, must=[("a", "d"), ("e", "f")], cannot=[("b", "d")], cut="min-cut"),
    Case(SUPPORT, [("a", "b", 0.9), ("c", "d", 0.9)], must=[("b", "c")]),  # a join of two stories
    Case(SUPPORT, [("a", "b", 0.9), ("c", "d", 0.9)], must=[("b", "c")], cannot=[("a", "d")]),  # refused
    Case(COMPONENTS, [("a", "b", 0.9)], must=[("a", "b")], cannot=[("b", "a")]),  # the "no" wins
    # a dense core and a bridge: the large conditions refuse the weak merge into five items
    Case(
        LARGE,
        [
            ("a", "b", 0.99),
            ("a", "c", 0.98),
            ("b", "c", 0.97),
            ("c", "d", 0.92),
            ("d", "e", 0.99),
            ("c", "e", 0.9),
        ]
        + [("a", "d", 0.91), ("b", "e", 0.92)],
    ),
    # exact copies weigh as their copies: b's three copies outweigh c's one link
    Case(
        SUPPORT,
        [("a", "b", 0.95), ("b", "c", 0.9), ("a", "c", 0.2)],
        copies={"b2": "b", "b3": "b", "b4": "b"},
    ),
    Case(
        LARGE,
        [("x", "y", 0.96), ("y", "z", 0.95)],
        copies={"x2": "x", "x3": "x", "z2": "z"},
        cannot=[("x2", "z")],
    ),
    # ties everywhere: the order of ids (by code point, as Python sorts) decides; ids past the BMP and
    # in U+E000-U+FFFF, where UTF-16 order and code point order differ
    Case(
        SUPPORT,
        [("\U0001f600", "\ufb01", 0.9), ("\ufb01", "b", 0.9), ("b", "\U0001f600", 0.9), ("b", "c", 0.9)],
    ),
    Case(
        LARGE,
        [(a, b, 0.95) for a in "abcdef" for b in "abcdef" if a < b] + [("f", "g", 0.95), ("g", "h", 0.95)],
    ),
    # ties settled by arrival (the order rule's ranks), not by id: c came first, so b joins c, not a, and the
    # support rule merges in arrival order
    Case(COMPONENTS, [("a", "b", 0.9), ("b", "c", 0.9)], cannot=[("a", "c")], order={"a": 2, "b": 1, "c": 0}),
    Case(
        SUPPORT,
        [(a, b, 0.9) for a, b in ("ab", "bc", "cd", "de", "ea", "ac")],
        order={"a": 4, "b": 3, "c": 0, "d": 2, "e": 1},
    ),
    # a chain at the threshold (0.9), each item linked to the next two: under the support rule alone one
    # story of six, under the large conditions (a floor 0.01 over the threshold) no cluster of five or more
    Case(AT_THRESHOLD, CHAIN_AT_THRESHOLD),
    Case(  # two groups of three copies each, linked under the large floor: no six-item cluster
        {"name": "support", "min_share": 0.4, "large": 5, "large_share": None, "large_floor": 0.97},
        [("p", "q", 0.95)],
        copies={"p1": "p", "p2": "p", "q1": "q", "q2": "q"},
    ),
]


def random_case(seed: int) -> Case:
    """A graph of a few dense stories bridged by weaker links, with ties, verdicts and copies."""
    rng = random.Random(seed)
    n = rng.randint(4, 30)
    ids = [f"i{k:02d}" for k in range(n)]
    story = {i: rng.randrange(max(1, n // 4)) for i in ids}
    scores = [0.9, 0.92, 0.95, 0.97] if seed % 2 else None  # even seeds: every score its own
    links = []
    for x in range(n):
        for y in range(x + 1, n):
            same = story[ids[x]] == story[ids[y]]
            if rng.random() < (0.7 if same else 0.08):
                score = rng.choice(scores) if scores else round(rng.uniform(0.9, 0.99), 6)
                links.append((ids[x], ids[y], score))
    pick = lambda k: [tuple(rng.sample(ids, 2)) for _ in range(k)]  # noqa: E731
    rule = rng.choice(
        [
            COMPONENTS,
            SUPPORT,
            {"name": "support", "min_share": 0.5},
            LARGE,
            {"name": "support", "min_share": 0.3, "large": 4, "large_share": None, "large_floor": 0.94},
        ]
    )
    copies: dict[str, str] = {}
    for rep in rng.sample(ids, rng.randint(0, 2)):
        for k in range(rng.randint(1, 3)):
            copies[f"{rep}c{k}"] = rep
    copy_ids = list(copies)
    for c in rng.sample(copy_ids, min(2, len(copy_ids))):  # a copy's own link is its representative's
        links.append((c, rng.choice(ids), round(rng.uniform(0.9, 0.99), 6)))
    to_copy = [(rng.choice(ids), c) for c in rng.sample(copy_ids, min(1, len(copy_ids)))]
    cannot = pick(rng.randint(0, 3)) + to_copy
    must = pick(rng.randint(0, 3))
    order = None
    if seed % 4 == 1:  # a quarter of the cases (tied scores): exact ties settled by arrival, not by id
        arrival = ids + copy_ids
        rng.shuffle(arrival)
        order = {i: n for n, i in enumerate(arrival)}
    cut = rng.choice(["order", "min-cut"])
    return Case(rule, links, must=must, cannot=cannot, copies=copies, cut=cut, order=order)


def test_the_pages_rule_gives_the_reports_groups(tmp_path: Path) -> None:
    require_browser()
    script = resources.files("nlsim.report").joinpath("assets", "rules.js").read_text(encoding="utf-8")
    page = tmp_path / "rules.html"
    page.write_text(f"<!doctype html><meta charset='utf-8'><script>{script}</script>", encoding="utf-8")
    cases = HAND_MADE + [random_case(seed) for seed in range(120)]
    with Browser() as browser:
        browser.open(page.as_uri())
        got = browser.evaluate("[" + ",".join(c.js() for c in cases) + "]")
    for n, (case, groups) in enumerate(zip(cases, got, strict=True)):
        assert groups == case.python(), (n, case)
    # the cases are not trivial: some verdicts part or join stories, some large merges are refused
    assert sum(len(g) > 2 for g in got) > 40
    assert got[3] != got[4]  # order and min-cut part the chain differently
    assert got[9] != Case(SUPPORT, HAND_MADE[9].links).python()  # the large conditions refused a merge
    chain = HAND_MADE.index(Case(AT_THRESHOLD, CHAIN_AT_THRESHOLD))
    alone = {"name": "support", "min_share": 0.3}
    assert Case(alone, CHAIN_AT_THRESHOLD).python() == [list("abcdef")]  # the support rule alone: one story
    assert got[chain] and max(len(g) for g in got[chain]) < 5  # the port: the chain holds no 5+ cluster
    by_arrival = HAND_MADE.index(
        Case(
            COMPONENTS,
            [("a", "b", 0.9), ("b", "c", 0.9)],
            cannot=[("a", "c")],
            order={"a": 2, "b": 1, "c": 0},
        )
    )
    assert got[by_arrival] == [["b", "c"]]  # by id, a and b would have been joined first
    assert sum(c.order is not None and c.python() != replace(c, order=None).python() for c in cases) > 3


def test_the_pages_support_rule_without_a_share_takes_the_reports_default(tmp_path: Path) -> None:
    """A support rule given no share is the Python class's (``DEFAULT_SUPPORT``, 0.4) in the page too, not
    a stricter one: five items all linked, and a sixth linked to two of them (a share of 2/5, exactly 0.4),
    are one cluster of six under both."""
    require_browser()
    script = resources.files("nlsim.report").joinpath("assets", "rules.js").read_text(encoding="utf-8")
    page = tmp_path / "rules.html"
    page.write_text(f"<!doctype html><meta charset='utf-8'><script>{script}</script>", encoding="utf-8")
    clique = ["c", "d", "e", "f", "g"]
    links = [(x, y, 0.95) for n, x in enumerate(clique) for y in clique[n + 1 :]]
    links += [("a", "c", 0.9), ("a", "d", 0.9)]
    cases = [Case({"name": "support"}, links), Case({"name": "support", "min_share": None}, links)]
    with Browser() as browser:
        browser.open(page.as_uri())
        got = browser.evaluate("[" + ",".join(c.js() for c in cases) + "]")
    assert cases[0].python() == [["a", *clique]]
    assert got == [[["a", *clique]]] * 2
