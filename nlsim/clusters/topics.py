"""Topic groups: the stories, and single items, that share a topic and entity set.

A report has two levels. Its clusters are *stories*: items an editor would call the same story (the
rubric's 1.0), held together tightly by links at the story threshold (:mod:`nlsim.clusters.rules`). A
*topic group* gathers the stories and single items that tell of one topic and entity at the rubric's 0.75
level, "same topic and same specific place or entity, not the same event": one year's 考研, a court saga,
one property project's promotions. A topic is read from the links at the *topic threshold* (the score
calibrated at that level, below the story threshold), with the series veto's other years and other
figures counting: they are one topic's other events.

- Each story starts as one group and is never parted (``start`` of
  :meth:`~nlsim.clusters.rules.ClusterRule.clusters`); the share of linked member pairs between two groups
  counts the links between their items.
- The topic rule (the support rule at its own share: :class:`~nlsim.clusters.rules.SharedSupport`) joins
  units into groups; a group of two units or more is a topic (a story alone is no topic group).
- The editors' verdicts: a pair scored at the 0.75 level or above joins the two items' topics, one scored
  0.5 or below keeps them apart (:func:`topic_constraints`).

Example:
    >>> from nlsim.clusters.rules import Link, SharedSupport
    >>> stories = [["a1", "a2"], ["b1", "b2"]]
    >>> links = [Link("a1", "a2", 0.9), Link("b1", "b2", 0.9), Link("a1", "b1", 0.8), Link("a2", "b2", 0.81)]
    >>> links += [Link("b2", "x", 0.8), Link("y", "z", 0.8)]
    >>> topic_groups(stories, links, SharedSupport(min_share=0.4))
    [['a1', 'a2', 'b1', 'b2'], ['y', 'z']]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nlsim.clusters.assign import assign_groups
from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.order import CLUSTER_PREFIX, OrderKey
from nlsim.clusters.rules import ClusterRule, Link

TOPIC_PREFIX = "t-"
"""A topic's id: ``"t-" + its key member's id`` (the earliest member, :mod:`nlsim.clusters.order`)."""
TOPIC_LEVEL = 0.75
"""The rubric's level of "same topic and entity": the level the topic threshold is calibrated for."""
DEFAULT_TOPIC_RULE = "support"
DEFAULT_TOPIC_SUPPORT = 0.2
"""The topic groups' rule and share by default (docs/experiments.md, "Stories inside topics")."""
APART_BELOW = 0.75
"""A verdict below this level keeps two items' topics apart; one at it or above joins them."""


def topic_groups(
    stories: Iterable[Sequence[str]],
    links: Iterable[Link],
    rule: ClusterRule,
    constraints: LinkConstraints | None = None,
) -> list[list[str]]:
    """The topic groups of ``links`` (at or above the topic threshold) over the ``stories`` (each kept
    whole) and the items linked: sorted item lists, sorted by their first id; only groups of two units (a
    story, or an item in no story) or more (see the module doc)."""
    story_of = {m: story[0] for story in stories for m in story}
    groups = rule.clusters(list(links), constraints, start=story_of)
    return [g for g in groups if len({story_of.get(m, m) for m in g}) > 1]


def topic_constraints(verdicts: Iterable[tuple[str, str, float]]) -> LinkConstraints:
    """The editors' verdicts ``(id_a, id_b, score)`` at the topic level: at :data:`APART_BELOW` or above,
    the two items share a topic (must-link); below it, they do not (cannot-link).

    >>> c = topic_constraints([("a", "b", 0.75), ("c", "d", 0.5), ("e", "f", 1.0)])
    >>> sorted(c.must_link), sorted(c.cannot_link)
    ([('a', 'b'), ('e', 'f')], [('c', 'd')])
    """
    rows = list(verdicts)
    return LinkConstraints.from_pairs(
        must=[(a, b) for a, b, s in rows if s >= APART_BELOW],
        cannot=[(a, b) for a, b, s in rows if s < APART_BELOW],
    )


@dataclass(frozen=True)
class TopicUpdate:
    """The topic of every item in a topic group (``assignment``) and each topic's anchor, its key member's
    order key (kept across daily runs, as a cluster's is)."""

    assignment: dict[str, str]
    anchors: dict[str, OrderKey]


def assign_topics(
    previous: Mapping[str, str],
    anchors: Mapping[str, OrderKey],
    keys: Mapping[str, OrderKey],
    *,
    groups: Iterable[Iterable[str]],
    new_ids: Iterable[str],
    regrouping: bool = False,
) -> TopicUpdate:
    """Stable ids for topic groups, named as clusters are (:func:`nlsim.clusters.assign.assign_groups`: a
    daily run's topics keep the ids of earlier runs, and items arriving in publication order get the ids a
    batch run gives them), ``"t-" + key member``. Only the items of ``groups`` are in a topic: a topic whose
    other members expired is none once one unit is left (a story, or an item, alone is no topic group), and
    its item loses the id, as a batch run over the kept items gives (a cluster keeps its id on a last kept
    member; a topic of one item, listed as one, would hold that item without the rest of its story).

    Example:
        >>> from nlsim.clusters.order import order_key_of
        >>> keys = {i: order_key_of(f"2024-01-0{n}", i) for n, i in enumerate("abc", start=1)}
        >>> day1 = assign_topics({}, {}, keys, groups=[["a", "b"]], new_ids=["a", "b"])
        >>> day2 = assign_topics(day1.assignment, day1.anchors, keys, groups=[["a", "b", "c"]], new_ids=["c"])
        >>> day1.assignment, day2.assignment["c"]
        ({'a': 't-a', 'b': 't-a'}, 't-a')
        >>> assign_topics({"b": "t-a"}, day1.anchors, keys, groups=[], new_ids=["c"])  # a expired
        TopicUpdate(assignment={}, anchors={})
    """
    groups = [list(map(str, g)) for g in groups]
    grouped = {m for g in groups if len(g) > 1 for m in g}
    as_cluster = {i: CLUSTER_PREFIX + t[len(TOPIC_PREFIX) :] for i, t in previous.items()}
    cluster_anchors = {CLUSTER_PREFIX + t[len(TOPIC_PREFIX) :]: k for t, k in anchors.items()}
    upd = assign_groups(
        as_cluster, cluster_anchors, keys, groups=groups, new_ids=new_ids, regrouping=regrouping
    )

    def topic(cid: str) -> str:
        return TOPIC_PREFIX + cid[len(CLUSTER_PREFIX) :]

    assignment = {i: topic(c) for i, c in upd.assignment.items() if i in grouped}
    held = set(assignment.values())
    return TopicUpdate(assignment, {t: k for c, k in upd.anchors.items() if (t := topic(c)) in held})
