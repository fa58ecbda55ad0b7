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


def _square(score: float = 0.9) -> list[Link]:
    """a-b and c-d, and two of the four member pairs between {a, b} and {c, d} linked: a share of 0.5."""
    return [Link("a", "b", score), Link("c", "d", score), Link("a", "c", score), Link("b", "d", score)]


def test_a_share_exactly_at_the_rules_share_merges() -> None:
    """A share that reaches min_share, large_share, and a mean that reaches large_floor, each exactly, merges
    (0.9375 is exact in binary: the mean of its links is 0.9375, not a hair under)."""
    whole = [["a", "b", "c", "d"]]
    assert SharedSupport(min_share=0.5).clusters(_square()) == whole
    assert SharedSupport(min_share=0.5 + 1e-9).clusters(_square()) == [["a", "b"], ["c", "d"]]
    assert SharedSupport(min_share=0.4, large=4, large_share=0.5).clusters(_square()) == whole
    assert SharedSupport(min_share=0.4, large=4, large_share=0.6).clusters(_square()) != whole
    assert SharedSupport(min_share=0.4, large=4, large_floor=0.9375).clusters(_square(0.9375)) == whole
    assert SharedSupport(min_share=0.4, large=4, large_floor=0.94).clusters(_square(0.9375)) != whole


def test_a_refused_large_merge_lets_the_other_merges_of_its_component_go_on() -> None:
    """Five items linked weakly to each other (0.95, under the floor 0.97 that 5+ items need) and a pair y-z
    hanging off one of them: the refused merge into five items stops no other merge, and y and z join."""
    core = [f"i{j}" for j in range(5)]
    links = [Link(a, b, 0.95) for n, a in enumerate(core) for b in core[n + 1 :]]
    links += [Link("y", "z", 0.99), Link("z", "i0", 0.95)]
    got = SharedSupport(min_share=0.4, large=5, large_floor=0.97).clusters(links)
    assert ["y", "z"] in got
    assert max(len(g) for g in got) <= 4
    assert sorted(i for g in got for i in g if i.startswith("i")) == core


def test_an_editors_same_story_pair_is_joined_before_any_link() -> None:
    """b-x links; an editor said a and x are the same story and a and b are not: a joins x, and b, which
    would put a "not the same story" pair in the cluster, stays out, however strong its link."""
    links = [Link("b", "x", 0.99)]
    verdicts = LinkConstraints.from_pairs(must=[("a", "x")], cannot=[("a", "b")])
    for rule in (ConnectedComponents(), SharedSupport()):
        assert rule.clusters(links, verdicts) == [["a", "x"]], rule


def test_a_pair_given_twice_is_read_at_its_last_score() -> None:
    """a-b given at 0.5, then (as b-a) at 0.99: the cut between a and c keeps a-b, joined first at 0.99, and
    leaves b-c out (read at 0.5, b-c would be joined first and a left out)."""
    links = [Link("a", "b", 0.5), Link("b", "c", 0.9), Link("b", "a", 0.99)]
    apart = LinkConstraints.from_pairs(cannot=[("a", "c")])
    assert ConnectedComponents().clusters(links, apart) == [["a", "b"]]


def test_an_item_linked_to_itself_changes_no_cluster() -> None:
    """A self-link (a pair of one item) is dropped: it neither joins anything nor counts as a triangle that
    would merge a-b before the stronger b-c."""
    links = [Link("a", "b", 0.9), Link("b", "c", 0.91)]
    rule = SharedSupport(min_share=0.6)
    assert rule.clusters(links) == [["b", "c"]]
    assert rule.clusters([*links, Link("a", "a", 0.99)]) == [["b", "c"]]


def test_links_of_one_score_are_joined_as_a_daily_run_met_them() -> None:
    """u-a and v-b score alike, a-b joins first, and u and v are not the same story: the link whose later
    item came first (v-b: b came third, a fourth) is joined, as a daily run, which met it a day earlier,
    joined it; by id, u-a would come first."""
    keys = order_keys(["u", "v", "b", "a"], [T + pd.Timedelta(days=d) for d in range(4)])
    links = [Link("a", "b", 0.99), Link("u", "a", 0.9), Link("v", "b", 0.9)]
    apart = LinkConstraints.from_pairs(cannot=[("u", "v")])
    assert ConnectedComponents().clusters(links, apart) == [["a", "b", "u"]]
    assert ConnectedComponents().clusters(links, apart, order=keys) == [["a", "b", "v"]]


def test_merges_of_one_share_and_score_are_made_as_a_daily_run_met_them() -> None:
    """m links to a and to b alike, and at 0.6 only one of them can join it: b, which came first (a daily
    run met b and m a day before a), not a, which comes first by id."""
    keys = order_keys(["b", "m", "a"], [T + pd.Timedelta(days=d) for d in range(3)])
    links = [Link("a", "m", 0.9), Link("b", "m", 0.9)]
    rule = SharedSupport(min_share=0.6)
    assert rule.clusters(links) == [["a", "m"]]
    assert rule.clusters(links, order=keys) == [["b", "m"]]


def test_a_minimum_cut_never_parts_a_start_group() -> None:
    """p and q start in one group (a story inside a topic) linked weakly, r links to q strongly, and r and p
    are not the same story: the cheapest cut would drop p-q, but the group is never parted, so q-r is cut."""
    links = [Link("p", "q", 0.1), Link("q", "r", 0.99)]
    apart = LinkConstraints.from_pairs(cannot=[("p", "r")])
    start = {"p": "s", "q": "s"}
    for rule in (ConnectedComponents(), SharedSupport(min_share=0.2)):
        assert rule.clusters(links, apart, start=start, cut="min-cut") == [["p", "q"]], rule


@pytest.mark.parametrize(
    ("args", "said"),
    [((0.0,), "share must be in"), ((1.5,), "share must be in"), ((0.4, 2), "at least 3 items")],
)
def test_a_rule_that_cannot_work_is_refused(args: tuple, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        rule_named("support", *args)
    assert rule_named("support", 1.0, 3).min_share == 1.0


def test_a_start_group_naming_a_copy_holds_the_copys_representative() -> None:
    """x and p1 start in one story; p1 is a copy of p, which links to y: the story holds p and its copy, and
    y comes along with p; p1 ends in one cluster, never in two."""
    got = ConnectedComponents().clusters(
        [Link("p", "y", 0.9)], copies={"p1": "p"}, start={"p1": "s", "x": "s"}
    )
    assert got == [["p", "p1", "x", "y"]]


def _reference_average_linkage(links: list[Link], min_share: float) -> list[list[str]]:
    """Average linkage as SharedSupport's docstring defines it, recomputed from scratch before every merge:
    per component (its members in id order, a group named by its first member's place), the pair of groups
    with the largest share of linked member pairs, then the most triangles its links close (counted once,
    on the whole graph), then the higher mean score, then the lower places, merges while the share reaches
    ``min_share``."""
    near: dict[str, set[str]] = {}
    for k in links:
        near.setdefault(k.a, set()).add(k.b)
        near.setdefault(k.b, set()).add(k.a)
    out: list[list[str]] = []
    for members in ConnectedComponents().groups(links):
        place = {m: i for i, m in enumerate(members)}
        group = {i: {m} for i, m in enumerate(members)}
        inside = [k for k in links if k.a in place]
        while True:
            best = None
            for g in group:
                for h in group:
                    between = [k for k in inside if {k.a, k.b} & group[g] and {k.a, k.b} & group[h]]
                    between = [
                        k for k in between if not {k.a, k.b} <= group[g] and not {k.a, k.b} <= group[h]
                    ]
                    if g >= h or not between:
                        continue
                    n = len(between)
                    closed = sum(len(near[k.a] & near[k.b]) for k in between)
                    key = (
                        -n / (len(group[g]) * len(group[h])),
                        -closed / n,
                        -sum(k.score for k in between) / n,
                    )
                    if best is None or (key, g, h) < best:
                        best = (key, g, h)
            if best is None or -best[0][0] < min_share:
                break
            _, g, h = best
            group[g] |= group.pop(h)
        out += [sorted(members) for members in group.values() if len(members) > 1]
    return sorted(out, key=lambda g: g[0])


@pytest.mark.parametrize("seed", range(40))
def test_average_linkage_merges_as_its_definition_says(seed: int) -> None:
    """Random links (scores exact in binary, so that sums in any order tie exactly): the support rule's
    clusters equal those of average linkage recomputed from scratch before every merge, ties included."""
    rng = random.Random(seed)
    n = rng.randint(4, 10)
    ids = [f"i{j}" for j in range(n)]
    links: dict[tuple[int, int], float] = {}
    for _ in range(rng.randint(3, 3 * n)):
        x, y = sorted(rng.sample(range(n), 2))
        links[(x, y)] = rng.choice([0.875, 0.9375])
    chosen = [Link(ids[x], ids[y], s) for (x, y), s in sorted(links.items())]
    share = rng.choice([0.3, 0.4, 0.5, 0.6])
    assert SharedSupport(min_share=share).clusters(chosen) == _reference_average_linkage(chosen, share)


def test_a_large_merge_refused_between_two_groups_of_copies_keeps_them_apart() -> None:
    """p and q stand for three exact copies each, linked at 0.95, under the floor 0.97 that 5+ items need:
    as with every copy given its links, the merge into six items is refused and each group of copies is a
    cluster of its own (the refused link joins nothing afterwards); without the floor they are one."""
    copies = {"p1": "p", "p2": "p", "q1": "q", "q2": "q"}
    rule = SharedSupport(min_share=0.4, large=5, large_floor=0.97)
    p, q = ["p", "p1", "p2"], ["q", "q1", "q2"]
    every = [Link(a, b, 1.0) for g in (p, q) for n, a in enumerate(g) for b in g[n + 1 :]]
    every += [Link(a, b, 0.95) for a in p for b in q]
    assert rule.clusters(every) == [p, q]
    assert rule.clusters([Link("p", "q", 0.95)], copies=copies) == [p, q]
    assert SharedSupport(min_share=0.4).clusters([Link("p", "q", 0.95)], copies=copies) == [p + q]


def test_the_support_rule_made_without_a_share_takes_the_report_s_default() -> None:
    """The module says the support rule's share is 0.4, as a report's rule (``rule_named``) takes it: a
    :class:`SharedSupport` made without a share is that rule, not a stricter one. Five items all linked,
    and a sixth linked to two of them (a share of 2/5, exactly 0.4): one cluster of six at 0.4, the five
    alone at 0.5."""
    clique = ["c", "d", "e", "f", "g"]
    links = [Link(x, y, 0.95) for n, x in enumerate(clique) for y in clique[n + 1 :]]
    links += [Link("a", "c", 0.9), Link("a", "d", 0.9)]
    assert SharedSupport(min_share=0.5).clusters(links) == [clique]
    assert SharedSupport().clusters(links) == rule_named("support").clusters(links) == [["a", *clique]]
