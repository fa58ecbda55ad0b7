"""The one cluster rule: new/grown/merged, the survivor rule, retention, regrouping after a model change,
and N daily updates == one batch over everything."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from nlsim.clusters.assign import assign_groups, drop_items, regroup, update_clusters
from nlsim.clusters.order import order_key_of, order_keys
from nlsim.clusters.table import batch_clusters

T = pd.Timestamp("2024-01-01", tz="UTC")


def _keys(spec: dict[str, int]) -> dict[str, tuple[int, int, str]]:
    return {i: order_key_of(T + pd.Timedelta(hours=h), i) for i, h in spec.items()}


def test_new_grown_merged_and_survivor_rule() -> None:
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4, "x": 5, "y": 6, "z": 7})
    d1 = update_clusters({}, {}, keys, new_ids=["a", "b", "c", "d"], pairs=[("b", "a"), ("c", "d")])
    assert d1.assignment == {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"}
    assert d1.events["status"].tolist() == ["new", "new"]
    # day 2: x joins c-c (grown); y bridges c-a and c-c (merged): the earliest key member (a) survives
    d2 = update_clusters(d1.assignment, d1.anchors, keys, new_ids=["x"], pairs=[("x", "d")])
    assert d2.assignment["x"] == "c-c" and d2.events["status"].tolist() == ["grown"]
    d3 = update_clusters(d2.assignment, d2.anchors, keys, new_ids=["y"], pairs=[("y", "d"), ("y", "b")])
    assert set(d3.assignment.values()) == {"c-a"}
    ev = d3.events.iloc[0]
    assert (ev["cluster_id"], ev["status"], ev["absorbed"], ev["added"]) == ("c-a", "merged", ["c-c"], ["y"])
    assert d3.merged_into == {"c-c": "c-a"}
    assert "c-c" not in d3.anchors


def test_old_lone_item_earlier_than_cluster_takes_over_like_batch() -> None:
    keys = _keys({"x": 1, "y": 2, "z": 3, "w": 4})
    d1 = update_clusters({}, {}, keys, new_ids=["x", "y", "z"], pairs=[("y", "z")])
    assert d1.assignment == {"y": "c-y", "z": "c-y"}
    d2 = update_clusters(d1.assignment, d1.anchors, keys, new_ids=["w"], pairs=[("w", "x"), ("w", "z")])
    assert d2.assignment == {"x": "c-x", "y": "c-x", "z": "c-x", "w": "c-x"}
    assert d2.events["status"].tolist() == ["merged"] and d2.merged_into == {"c-y": "c-x"}


def test_late_item_keeps_existing_id() -> None:
    keys = _keys({"early": 0, "a": 1, "b": 2})
    d1 = update_clusters({}, {}, keys, new_ids=["a", "b"], pairs=[("a", "b")])
    d2 = update_clusters(d1.assignment, d1.anchors, keys, new_ids=["early"], pairs=[("early", "b")])
    assert d2.assignment["early"] == "c-a" and d2.events["status"].tolist() == ["grown"]


def test_undated_items_sort_last() -> None:
    keys = {"u": order_key_of(None, "u"), **_keys({"v": 5})}
    d1 = update_clusters({}, {}, keys, new_ids=["u", "v"], pairs=[("u", "v")])
    assert d1.assignment == {"u": "c-v", "v": "c-v"}
    assert order_keys(["p", "q"], [None, "2024-01-01"]) == {
        "p": (1, 0, "p"),
        "q": order_key_of("2024-01-01", "q"),
    }


def test_drop_items_keeps_cluster_id_while_a_member_is_kept() -> None:
    keys = _keys({"a": 1, "b": 2, "c": 3, "n": 4})
    d1 = update_clusters({}, {}, keys, new_ids=["a", "b", "c"], pairs=[("a", "b"), ("b", "c")])
    assign, anchors = drop_items(d1.assignment, d1.anchors, ["a", "b"])
    assert assign == {"c": "c-a"} and anchors == {"c-a": keys["a"]}
    d2 = update_clusters(assign, anchors, keys, new_ids=["n"], pairs=[("n", "c")])
    assert d2.assignment == {"c": "c-a", "n": "c-a"}
    assert drop_items(d1.assignment, d1.anchors, ["a", "b", "c"]) == ({}, {})


@pytest.mark.parametrize("seed", range(20))
def test_daily_updates_equal_batch_components(seed: int) -> None:
    """Random graphs, items arriving in time order over 1-5 days: ids equal the batch rule's."""
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    ids = [f"i{j:03d}" for j in range(n)]
    rng.shuffle(ids)  # ids do not follow time order
    hours = sorted(rng.randint(0, 100) for _ in range(n))  # ties in time are broken by id
    times = [T + pd.Timedelta(hours=h) for h in hours]
    edges = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randint(0, 2 * n))}
    pairs = (
        pd.DataFrame(sorted(edges), columns=["a", "b"]).assign(similarity=0.9)
        if edges
        else pd.DataFrame({"a": [], "b": [], "similarity": []})
    )
    frame = pd.DataFrame({"id": ids, "title": ids, "source": "", "published_at": pd.Series(times)})
    batch, _ = batch_clusters(frame, pairs.astype({"a": "int64", "b": "int64"}))
    expected = {ids[j]: c for j, c in enumerate(batch) if c is not None}

    keys = order_keys(ids, times)
    # day boundaries at distinct hours, so that every item of a later day is later than earlier items
    cuts = sorted(rng.sample(sorted(set(hours)), min(len(set(hours)), rng.randint(0, 4))))
    day_of = [sum(h >= c for c in cuts) for h in hours]
    assign: dict[str, str] = {}
    anchors: dict = {}
    for d in range(len(cuts) + 1):
        new = [ids[j] for j in range(n) if day_of[j] == d]
        today = [(ids[a], ids[b]) for a, b in edges if max(day_of[a], day_of[b]) == d]
        upd = update_clusters(assign, anchors, keys, new_ids=new, pairs=today)
        for cid in upd.events["cluster_id"]:  # statuses are consistent with the ids
            assert cid in set(upd.assignment.values())
        assign, anchors = upd.assignment, upd.anchors
    assert assign == expected


def test_regroup_keeps_ids_where_memberships_survive() -> None:
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    before = {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"}
    anchors = {"c-a": keys["a"], "c-c": keys["c"]}
    # the new model keeps {a, b} together and splits c from d; e (new today) joins d
    up = regroup(before, anchors, keys, pairs=[("a", "b"), ("d", "e")], new_ids=["e"])
    assert up.assignment == {"a": "c-a", "b": "c-a", "d": "c-c", "e": "c-c"}
    status = dict(zip(up.events["cluster_id"], up.events["status"], strict=True))
    assert status == {"c-c": "regrouped"}  # c-a unchanged, c-c lost c and gained e
    assert up.anchors["c-c"] == keys["c"]  # a kept id keeps its anchor


def test_regroup_reports_a_cluster_the_new_model_dissolves() -> None:
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "h": 7, "i": 8})
    before = {i: f"c-{c}" for i, c in zip("abcdefhi", "aacceehh", strict=True)}
    anchors = {cid: keys[cid[2:]] for cid in set(before.values())}
    # the new model keeps {a, b} and {h, i}, pairs nothing of c-c, and sends c-e's members to c-a and c-h
    up = regroup(before, anchors, keys, pairs=[("a", "b"), ("e", "a"), ("h", "i"), ("f", "h")])
    assert "c" not in up.assignment and "d" not in up.assignment
    assert up.assignment["e"] == "c-a" and up.assignment["f"] == "c-h"
    assert up.dissolved == {"c-c": ["c", "d"], "c-e": ["e", "f"]}
    assert up.merged_into == {}
    status = dict(zip(up.events["cluster_id"], up.events["status"], strict=True))
    assert status == {"c-a": "merged", "c-h": "merged", "c-c": "dissolved", "c-e": "dissolved"}


def test_a_verdict_that_splits_off_a_clusters_key_member_leaves_the_id_to_the_larger_piece() -> None:
    """c-a holds a (its key member), b, c and d; editors then say a is not the same story as b, c or d. The
    rule leaves a alone and b, c, d together: that piece keeps c-a (regrouped, nothing merged), a is alone.
    Without the verdict the same split (the rule's own) names the piece by its key member, as a batch run
    does."""
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4})
    d1 = assign_groups({}, {}, keys, groups=[["a", "b", "c", "d"]], new_ids=["a", "b", "c", "d"])
    apart = frozenset({("a", "b"), ("a", "c"), ("a", "d")})
    d2 = assign_groups(d1.assignment, d1.anchors, keys, groups=[["b", "c", "d"]], new_ids=[], apart=apart)
    assert d2.assignment == {"b": "c-a", "c": "c-a", "d": "c-a"}
    assert d2.events[["cluster_id", "status"]].values.tolist() == [["c-a", "regrouped"]]
    assert d2.merged_into == {} and d2.dissolved == {}
    plain = assign_groups(d1.assignment, d1.anchors, keys, groups=[["b", "c", "d"]], new_ids=[])
    assert plain.assignment == {"b": "c-b", "c": "c-b", "d": "c-b"}


def test_a_verdict_that_splits_a_cluster_leaves_the_id_to_the_larger_piece() -> None:
    """c-a holds a, b, c, d, e; editors then say a and c are not the same story, and the rule makes {a, b}
    and {c, d, e}: the larger piece keeps c-a, the other is named by its next member."""
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    d1 = assign_groups({}, {}, keys, groups=[list("abcde")], new_ids=list("abcde"))
    groups = [["a", "b"], ["c", "d", "e"]]
    d2 = assign_groups(d1.assignment, d1.anchors, keys, groups=groups, new_ids=[], apart={("a", "c")})
    assert d2.assignment == {"a": "c-b", "b": "c-b", "c": "c-a", "d": "c-a", "e": "c-a"}
    assert sorted(d2.events[["cluster_id", "status"]].values.tolist()) == [
        ["c-a", "regrouped"],
        ["c-b", "regrouped"],  # split off c-a: its items were reported there, it is no new story
    ]
    added = dict(zip(d2.events["cluster_id"], d2.events["added"].map(list), strict=True))
    assert added == {"c-a": [], "c-b": []}  # no item joined either piece: both were in c-a


def test_a_cluster_whose_members_no_group_holds_any_more_dissolves_as_in_a_batch_run() -> None:
    """c-a held a and b only through an editor's "same story" (no link joins them); once that verdict stops
    acting (one item's text changed), the rule leaves both alone. The cluster is reported dissolved, as a
    batch run over the same items would have no cluster; a group elsewhere does not keep it either."""
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4})
    d1 = assign_groups({}, {}, keys, groups=[["a", "b"]], new_ids=["a", "b"])
    for groups in ([], [["c", "d"]]):
        d2 = assign_groups(
            d1.assignment, d1.anchors, keys, groups=groups, new_ids=["a", "c", "d"][: 1 + 2 * len(groups)]
        )
        assert "a" not in d2.assignment and "b" not in d2.assignment
        assert d2.dissolved == {"c-a": ["a", "b"]}
        assert ["c-a", "dissolved"] in d2.events[["cluster_id", "status"]].values.tolist()


def test_a_pair_inside_one_cluster_changes_nothing_and_reports_nothing() -> None:
    """A day's pair between two members of one cluster (a day searched again finds them again) leaves the
    cluster as it was: no event, no ``grown`` without an item added."""
    keys = _keys({"a": 1, "b": 2, "c": 3})
    d1 = update_clusters({}, {}, keys, new_ids=["a", "b", "c"], pairs=[("a", "b"), ("b", "c")])
    d2 = update_clusters(d1.assignment, d1.anchors, keys, new_ids=[], pairs=[("a", "c")])
    assert d2.assignment == d1.assignment and d2.anchors == d1.anchors
    assert d2.events.empty and d2.merged_into == {}


def test_a_group_of_one_item_is_no_cluster() -> None:
    """A rule's group of a single item (the topic groups pass them on) names no cluster: the item stays
    alone, as in a batch run, on a first day and on a day the rule parts a cluster into items alone (c-a
    dissolves; a and b are not clusters of one)."""
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4})
    d1 = assign_groups({}, {}, keys, groups=[["a", "b"], ["c"]], new_ids=["a", "b", "c"])
    assert d1.assignment == {"a": "c-a", "b": "c-a"}
    assert d1.events[["cluster_id", "status"]].values.tolist() == [["c-a", "new"]]
    d2 = assign_groups(d1.assignment, d1.anchors, keys, groups=[["a"], ["b"], ["c", "d"]], new_ids=["d"])
    assert d2.assignment == {"c": "c-c", "d": "c-c"}
    assert d2.dissolved == {"c-a": ["a", "b"]}


def test_the_last_kept_member_of_a_cluster_follows_its_group_into_an_earlier_cluster() -> None:
    """c-a's key member a expired and x is its one kept member; today's rule puts x in c-p's group, while
    c-m comes apart (so the groups do not only grow). x joins c-p (c-a merged into it): it is not left in
    a c-a of its own beside its group."""
    keys = _keys({"p": 1, "a": 2, "q": 3, "x": 4, "m": 5, "n": 6})
    previous = {"p": "c-p", "q": "c-p", "x": "c-a", "m": "c-m", "n": "c-m"}
    anchors = {"c-p": keys["p"], "c-a": keys["a"], "c-m": keys["m"]}
    kept_keys = {i: k for i, k in keys.items() if i != "a"}
    d = assign_groups(previous, anchors, kept_keys, groups=[["p", "q", "x"]], new_ids=[])
    assert d.assignment == {"p": "c-p", "q": "c-p", "x": "c-p"}
    assert d.merged_into == {"c-a": "c-p"} and d.dissolved == {"c-m": ["m", "n"]}


def test_a_verdict_that_splits_a_cluster_in_two_equal_pieces_leaves_the_id_with_its_key_member() -> None:
    """c-a holds a, b, c, d; editors say a and c are not the same story and the rule makes {a, b} and
    {c, d}: the pieces are as large, and the id stays with the piece holding its key member a."""
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4})
    d1 = assign_groups({}, {}, keys, groups=[list("abcd")], new_ids=list("abcd"))
    groups = [["a", "b"], ["c", "d"]]
    d2 = assign_groups(d1.assignment, d1.anchors, keys, groups=groups, new_ids=[], apart={("a", "c")})
    assert d2.assignment == {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"}


def test_an_old_item_read_again_with_a_corrected_text_names_its_piece_as_it_would_unchanged() -> None:
    """b (in c-a) comes again with a corrected text and the rule splits it off with y, an older item that
    was alone: the piece is c-b, as it is when b's text is unchanged and as a batch run names it, not c-y."""
    keys = _keys({"a": 1, "b": 2, "c": 3, "y": 4})
    previous = {"a": "c-a", "b": "c-a", "c": "c-a"}
    groups = [["a", "c"], ["b", "y"]]
    for new_ids in (["b"], []):
        d = assign_groups(previous, {"c-a": keys["a"]}, keys, groups=groups, new_ids=new_ids)
        assert d.assignment == {"a": "c-a", "c": "c-a", "b": "c-b", "y": "c-b"}


def test_a_cluster_whose_key_member_went_to_another_cluster_stays_with_most_of_its_members() -> None:
    """After a verdict split a off c-a (b, c, d kept the id) a joined e in c-e. When the groups change
    again (c-p comes apart), c-a stays with b, c and d, where most of its members are, and c-e with a and
    e: the id does not follow its former key member a."""
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "p": 6, "q": 7})
    previous = {"a": "c-e", "e": "c-e", "b": "c-a", "c": "c-a", "d": "c-a", "p": "c-p", "q": "c-p"}
    anchors = {"c-a": keys["a"], "c-e": keys["e"], "c-p": keys["p"]}
    d = assign_groups(previous, anchors, keys, groups=[["b", "c", "d"], ["a", "e"]], new_ids=[])
    assert d.assignment == {"b": "c-a", "c": "c-a", "d": "c-a", "a": "c-e", "e": "c-e"}
    assert d.dissolved == {"c-p": ["p", "q"]}


def test_regroup_reports_no_cluster_whose_members_all_left_the_window_as_dissolved() -> None:
    """After a model change, c-a's members a and b are no longer in the window (they expired): c-a just
    ends, with no dissolved event and no empty list of former members."""
    keys = _keys({"c": 3, "d": 4})
    previous = {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"}
    anchors = {"c-a": order_key_of(T, "a"), "c-c": keys["c"]}
    up = regroup(previous, anchors, keys, pairs=[("c", "d")])
    assert up.assignment == {"c": "c-c", "d": "c-c"}
    assert up.dissolved == {} and up.events.empty
