"""Topic groups (nlsim.clusters.topics): stories and single items gathered at the topic level."""

from __future__ import annotations

from nlsim.clusters.rules import ConnectedComponents, Link, SharedSupport
from nlsim.clusters.topics import topic_constraints, topic_groups


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
