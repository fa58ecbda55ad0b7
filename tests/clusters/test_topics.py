"""Topic groups (nlsim.clusters.topics): stories and single items gathered at the topic level."""

from __future__ import annotations

from nlsim.clusters.order import order_key_of
from nlsim.clusters.rules import ConnectedComponents, Link, SharedSupport
from nlsim.clusters.topics import assign_topics, topic_constraints, topic_groups


def _clique(names: list[str], score: float) -> list[Link]:
    return [Link(a, b, score) for i, a in enumerate(names) for b in names[i + 1 :]]


EXAM_2010 = ["e1", "e2", "e3"]  # one story: the 2010 sitting's registration numbers
GUIDES = ["g1", "g2"]  # another story: two rewrites of one study guide


def test_stories_of_one_topic_and_a_single_item_make_one_topic_group() -> None:
    links = _clique(EXAM_2010, 0.95) + _clique(GUIDES, 0.93)
    links += [Link("e1", "g1", 0.8), Link("e2", "g2", 0.79), Link("e3", "g1", 0.8), Link("x", "e1", 0.81)]
    links += [Link("x", "e2", 0.8)]
    got = topic_groups([EXAM_2010, GUIDES], links, SharedSupport(min_share=0.3))
    assert got == [["e1", "e2", "e3", "g1", "g2", "x"]]


def test_a_story_alone_is_no_topic_and_a_topic_never_parts_a_story() -> None:
    links = _clique(EXAM_2010, 0.95) + [Link("e1", "y", 0.8)]  # y links to one of three: 1/3 < 0.5
    assert topic_groups([EXAM_2010], links, SharedSupport(min_share=0.5)) == []
    # under components, y joins: the story stays whole inside the topic
    assert topic_groups([EXAM_2010], links, ConnectedComponents()) == [["e1", "e2", "e3", "y"]]


def test_the_editors_verdicts_at_the_topic_level() -> None:
    links = _clique(EXAM_2010, 0.95) + _clique(GUIDES, 0.93) + [Link("e1", "g1", 0.8)]
    apart = topic_constraints([("e2", "g2", 0.5)])  # another topic: never one group
    assert topic_groups([EXAM_2010, GUIDES], links, ConnectedComponents(), apart) == []
    joined = topic_constraints([("e2", "z", 0.75)])  # same topic, no link needed
    assert topic_groups([EXAM_2010], _clique(EXAM_2010, 0.95), ConnectedComponents(), joined) == [
        ["e1", "e2", "e3", "z"]
    ]


def test_a_verdict_between_a_story_and_an_item_never_parts_the_story() -> None:
    """An editor said r and p are not related; p and q are one story, and r links to q as strongly as p
    does. The topic rule gathers r with the story, and parting r from p must leave the story whole: r is
    left out, never p (the tie between r-q and p-q broken by the ids' order once parted the story)."""
    story = ["a1c", "a2"]  # p sorts after r, so the tie first joined r to q and left p out
    links = [Link("a1", "a1c", 1.0), Link("a1", "a2", 0.83), Link("a1c", "a2", 0.83)]
    links += [Link("a2", "x", 0.6), Link("a1c", "x", 0.6)]
    apart = topic_constraints([("a1", "a1c", 0.0)])
    for rule in (ConnectedComponents(), SharedSupport(min_share=0.2)):
        assert topic_groups([story], links, rule, apart) == [["a1c", "a2", "x"]], rule


def test_a_story_member_without_a_link_at_the_topic_level_stays_in_its_storys_topic() -> None:
    """e2 is in e1's story (its story link scored by the reranker) but links to nothing at the topic level:
    the topic gathering e1's story with y holds e2 too."""
    for rule in (ConnectedComponents(), SharedSupport(min_share=0.2)):
        assert topic_groups([["e1", "e2"]], [Link("e1", "y", 0.8)], rule) == [["e1", "e2", "y"]], rule


def test_a_topic_left_with_one_item_after_the_others_expired_is_no_topic() -> None:
    """x and p1 were one topic; x expired, and p1b, a copy of p1, made a story with it: the story alone is
    no topic group, and p1 keeps no topic id that its story's other member lacks."""
    keys = {i: order_key_of(f"2024-01-0{n}", i) for n, i in enumerate(["x", "p1", "p1b"], start=1)}
    day2 = assign_topics({}, {}, keys, groups=[["x", "p1"]], new_ids=["x", "p1"])
    assert day2.assignment == {"x": "t-x", "p1": "t-x"}
    day3 = assign_topics({"p1": "t-x"}, day2.anchors, keys, groups=[], new_ids=["p1b"])
    assert (day3.assignment, day3.anchors) == ({}, {})


def test_the_default_topic_rule_joins_stories_a_quarter_of_whose_pairs_link() -> None:
    """A run with no --topic-rule gathers topics by support at 0.2: two stories of two, one of their four
    member pairs linked (0.25), make one topic; one of six (0.17) does not, though components would join."""
    from nlsim.dedup.config import DedupConfig

    rule = DedupConfig.of(corpus="news.parquet", out="out").clustering.topic_rule_named()
    quarter = _clique(["a1", "a2"], 0.95) + _clique(["b1", "b2"], 0.95) + [Link("a1", "b1", 0.8)]
    assert topic_groups([["a1", "a2"], ["b1", "b2"]], quarter, rule) == [["a1", "a2", "b1", "b2"]]
    sixth = _clique(["a1", "a2"], 0.95) + _clique(["b1", "b2", "b3"], 0.95) + [Link("a1", "b1", 0.8)]
    assert topic_groups([["a1", "a2"], ["b1", "b2", "b3"]], sixth, rule) == []
    assert topic_groups([["a1", "a2"], ["b1", "b2", "b3"]], sixth, ConnectedComponents()) != []


def test_a_topic_listed_with_one_item_is_no_topic() -> None:
    """A group of one item names no topic, even for an item that held one: x and p1 were one topic, x
    expired, and p1 listed alone keeps no topic id."""
    keys = {i: order_key_of(f"2024-01-0{n}", i) for n, i in enumerate(["x", "p1"], start=1)}
    day1 = assign_topics({}, {}, keys, groups=[["x", "p1"]], new_ids=["x", "p1"])
    day2 = assign_topics({"p1": "t-x"}, day1.anchors, keys, groups=[["p1"]], new_ids=[])
    assert (day2.assignment, day2.anchors) == ({}, {})


def test_topics_regrouped_after_a_model_change_keep_the_ids_their_members_share() -> None:
    """After a model change the topics {a, b} and {c, d} come back as {a, c} and {b, d}: regrouped, {b, d}
    keeps t-c, whose member d it holds, where a daily update would name it after b."""
    keys = {i: order_key_of(f"2024-01-0{n}", i) for n, i in enumerate("abcd", start=1)}
    before = {"a": "t-a", "b": "t-a", "c": "t-c", "d": "t-c"}
    anchors = {"t-a": keys["a"], "t-c": keys["c"]}
    groups = [["a", "c"], ["b", "d"]]
    regrouped = assign_topics(before, anchors, keys, groups=groups, new_ids=[], regrouping=True)
    assert regrouped.assignment == {"a": "t-a", "c": "t-a", "b": "t-c", "d": "t-c"}
    daily = assign_topics(before, anchors, keys, groups=groups, new_ids=[])
    assert daily.assignment["b"] == "t-b"
