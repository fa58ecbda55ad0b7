"""Cluster rules: one interface, support inside a cluster, the editors' verdicts honoured, and N daily runs
equal to one batch run for every rule."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from nlsim.clusters.assign import assign_groups
from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.order import order_keys
from nlsim.clusters.rules import RULES, ClusterRule, ConnectedComponents, Link, SharedSupport, rule_named
from nlsim.errors import ConfigError

T = pd.Timestamp("2024-01-01", tz="UTC")


def _path(n: int, score: float = 0.95) -> list[Link]:
    return [Link(f"i{j}", f"i{j + 1}", score) for j in range(n - 1)]


def test_a_chain_through_a_topic_is_one_component_but_no_supported_cluster() -> None:
    chain = _path(6)  # i0-i1-i2-i3-i4-i5: each item links to its neighbours only
    assert ConnectedComponents().clusters(chain) == [[f"i{j}" for j in range(6)]]
    support = SharedSupport(min_share=0.5).clusters(chain)
    assert max(len(g) for g in support) <= 3
    # a clique is one cluster under both rules
    clique = [Link(f"i{x}", f"i{y}", 0.95) for x in range(5) for y in range(x + 1, 5)]
    assert (
        SharedSupport().clusters(clique)
        == ConnectedComponents().clusters(clique)
        == [[f"i{j}" for j in range(5)]]
    )


def test_two_stories_joined_by_one_link_fall_apart_under_support() -> None:
    a = [Link(f"a{x}", f"a{y}", 0.96) for x in range(4) for y in range(x + 1, 4)]
    b = [Link(f"b{x}", f"b{y}", 0.96) for x in range(4) for y in range(x + 1, 4)]
    bridge = [Link("a0", "b0", 0.99)]  # the strongest link of all: the score alone does not decide
    assert len(ConnectedComponents().clusters(a + b + bridge)) == 1
    assert SharedSupport().clusters(a + b + bridge) == [
        [f"a{j}" for j in range(4)],
        [f"b{j}" for j in range(4)],
    ]


def test_a_large_cluster_held_weakly_stops_below_the_large_size() -> None:
    """A merge into 5+ items whose links between the two halves score under 0.97 on average is refused: the
    refused merge does not happen, the smaller merges go on, and a merge held strongly goes through."""
    weak = [Link(f"i{x}", f"i{y}", 0.95) for x in range(6) for y in range(x + 1, 6)]
    strong = [Link(f"s{x}", f"s{y}", 0.99) for x in range(6) for y in range(x + 1, 6)]
    members = [f"i{j}" for j in range(6)]
    assert SharedSupport(min_share=0.4).clusters(weak) == [members]
    tight = SharedSupport(min_share=0.4, large=5, large_floor=0.97)
    held = tight.clusters(weak)
    assert max(len(g) for g in held) <= 4 and sorted(i for g in held for i in g) == members
    assert tight.clusters(strong) == [[f"s{j}" for j in range(6)]]


def test_a_large_cluster_needs_its_share_of_linked_pairs() -> None:
    """Two cliques of three joined by two links: 2 of the 9 pairs between them (0.22). A share of 0.2
    merges them; with 6+ items needing 0.5, they stay two clusters, and the cliques themselves hold."""
    a = [Link(f"a{x}", f"a{y}", 0.95) for x in range(3) for y in range(x + 1, 3)]
    b = [Link(f"b{x}", f"b{y}", 0.95) for x in range(3) for y in range(x + 1, 3)]
    bridge = [Link("a0", "b0", 0.95), Link("a1", "b1", 0.95)]
    assert len(SharedSupport(min_share=0.2).clusters(a + b + bridge)) == 1
    assert SharedSupport(min_share=0.2, large=6, large_share=0.5).clusters(a + b + bridge) == [
        ["a0", "a1", "a2"],
        ["b0", "b1", "b2"],
    ]


@pytest.mark.parametrize("rule", [ConnectedComponents(), SharedSupport()], ids=lambda r: r.name)
def test_the_editors_verdicts_are_honoured(rule: ClusterRule) -> None:
    links = [Link("a", "b", 0.95), Link("b", "c", 0.95), Link("a", "c", 0.95), Link("x", "y", 0.95)]
    # cannot-link: a and c never share a cluster, not even through b
    cut = rule.clusters(links, LinkConstraints.from_pairs(cannot=[("c", "a")]))
    assert not any({"a", "c"} <= set(g) for g in cut)
    # must-link: c and x join although no link says so; y comes along with x
    joined = rule.clusters(links, LinkConstraints.from_pairs(must=[("c", "x")]))
    assert ["a", "b", "c", "x", "y"] in joined
    # both on one pair: the editor's "no" wins
    both = rule.clusters(links, LinkConstraints.from_pairs(must=[("a", "x")], cannot=[("a", "x")]))
    assert not any({"a", "x"} <= set(g) for g in both)
    # a must-link between two items no link names makes a cluster of its own
    assert ["p", "q"] in rule.clusters(links, LinkConstraints.from_pairs(must=[("p", "q")]))


def test_rules_are_named() -> None:
    assert set(RULES) == {"components", "support"}
    assert isinstance(rule_named("components"), ConnectedComponents)
    with pytest.raises(ConfigError, match="unknown cluster rule 'louvain'"):
        rule_named("louvain")


def _random_links(rng: random.Random, ids: list[str]) -> list[Link]:
    n = len(ids)
    links = {}
    for _ in range(rng.randint(0, 3 * n)):
        x, y = rng.sample(range(n), 2)
        links[tuple(sorted((x, y)))] = round(rng.uniform(0.88, 0.99), 3)
    for _ in range(rng.randint(0, 3)):  # a few dense groups, where support holds
        members = rng.sample(range(n), min(n, rng.randint(3, 6)))
        for x in members:
            for y in members:
                if x < y:
                    links[(x, y)] = round(rng.uniform(0.9, 0.99), 3)
    return [Link(ids[x], ids[y], s) for (x, y), s in sorted(links.items())]


@pytest.mark.parametrize("rule", [ConnectedComponents(), SharedSupport()], ids=lambda r: r.name)
@pytest.mark.parametrize("seed", range(25))
def test_daily_runs_equal_a_batch_run(rule: ClusterRule, seed: int) -> None:
    """Random links, items arriving in time order over 1-5 days, each day's rule reading every link of the
    items seen so far (as the daily state keeps them): the ids equal the batch run's."""
    rng = random.Random(seed)
    n = rng.randint(5, 50)
    ids = [f"i{j:03d}" for j in range(n)]
    rng.shuffle(ids)  # ids do not follow time order
    hours = sorted(rng.randint(0, 100) for _ in range(n))
    keys = order_keys(ids, [T + pd.Timedelta(hours=h) for h in hours])
    links = _random_links(rng, ids)
    cannot = LinkConstraints.from_pairs(cannot=[(k.a, k.b) for k in links if rng.random() < 0.05])
    batch = assign_groups({}, {}, keys, groups=rule.clusters(links, cannot), new_ids=ids)

    cuts = sorted(rng.sample(sorted(set(hours)), min(len(set(hours)), rng.randint(0, 4))))
    day_of = {ids[j]: sum(h >= c for c in cuts) for j, h in enumerate(hours)}
    assign: dict[str, str] = {}
    anchors: dict = {}
    for d in range(len(cuts) + 1):
        seen = {i for i in ids if day_of[i] <= d}
        window = [k for k in links if k.a in seen and k.b in seen]
        groups = rule.clusters(window, cannot.restricted_to(seen))
        upd = assign_groups(assign, anchors, keys, groups=groups, new_ids=[i for i in ids if day_of[i] == d])
        live = set(upd.assignment.values())
        assert all(
            c in live or s == "dissolved"
            for c, s in zip(upd.events["cluster_id"], upd.events["status"], strict=True)
        )
        assign, anchors = upd.assignment, upd.anchors
    assert assign == batch.assignment


def test_the_default_rule_needs_support_inside_a_cluster() -> None:
    """A run with no --cluster-rule asks the support rule at share 0.4: a chain through a topic is cut where
    too few of the members link, and --cluster-rule components keeps it whole."""
    from nlsim.dedup.config import DedupConfig

    chain = [Link("a", "b", 0.95), Link("b", "c", 0.95), Link("a", "c", 0.93), Link("c", "d", 0.99)]
    default = DedupConfig.of(corpus="news.parquet", out="out").clustering
    assert (default.rule, default.support) == ("support", 0.4)
    assert rule_named(default.rule, default.support).clusters(chain) == [["a", "b", "c"]]
    components = DedupConfig.of(corpus="news.parquet", out="out", cluster_rule="components").clustering
    assert rule_named(components.rule, components.support).clusters(chain) == [["a", "b", "c", "d"]]
    # two of the four member pairs between {a, b} and {c, d} linked: joined at 0.4 and 0.5, not at 0.7
    square = [Link("a", "b", 0.9), Link("c", "d", 0.9), Link("a", "c", 0.9), Link("b", "d", 0.9)]
    assert rule_named("support", 0.4).clusters(square) == [["a", "b", "c", "d"]]
    assert rule_named("support", 0.7).clusters(square) != [["a", "b", "c", "d"]]
    with pytest.raises(ConfigError, match="cluster-support"):
        DedupConfig.of(corpus="news.parquet", out="out", cluster_support=0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_triangles_a_link_closes_are_counted_with_their_weights(seed: int) -> None:
    from nlsim.clusters.rules import _closed

    rng = random.Random(seed)
    n = 30
    pairs = [(x, y, 0.9) for x in range(n) for y in range(x + 1, n) if rng.random() < 0.2]
    pairs += pairs[:3]  # a pair given twice links once
    w = [rng.randint(1, 4) for _ in range(n)]
    near: dict[int, set[int]] = {i: set() for i in range(n)}
    for x, y, _ in pairs:
        near[x].add(y)
        near[y].add(x)
    assert _closed(n, pairs, w) == [sum(w[z] for z in near[x] & near[y]) for x, y, _ in pairs]
    assert _closed(n, [], w) == []


def test_each_component_is_merged_on_its_own_links() -> None:
    links = [Link("a", "b", 0.9), Link("b", "c", 0.9), Link("a", "c", 0.9)]
    links += [Link("x", "y", 0.9), Link("y", "z", 0.9)]
    rule = SharedSupport(min_share=0.6)
    assert rule.groups(links) == [["a", "b", "c"], ["x", "y"]]  # z: one of its two pairs linked
    assert rule.groups(links[:3]) + rule.groups(links[3:]) == rule.groups(links)
