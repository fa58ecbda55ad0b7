import numpy as np
import pandas as pd
import pytest

from nlsim.clusters.order import order_rank
from nlsim.clusters.table import batch_clusters, topic_table
from nlsim.errors import ConfigError


def frame(ids, times=None, titles=None):
    n = len(ids)
    return pd.DataFrame(
        {
            "id": ids,
            "title": titles or [f"t{i}" for i in range(n)],
            "source": [f"s{i % 2}" for i in range(n)],
            "published_at": pd.to_datetime(times or [None] * n, utc=True),
        }
    )


def pairs(edges, sims=None):
    a, b = zip(*edges, strict=True) if edges else ((), ())
    return pd.DataFrame(
        {
            "a": np.array(a, dtype=np.int64),
            "b": np.array(b, dtype=np.int64),
            "similarity": np.array(sims or [0.9] * len(edges), dtype=np.float32),
        }
    )


def test_components_are_transitive_and_singletons_unlabelled():
    labels, _ = batch_clusters(frame(list("abcdef")), pairs([(0, 1), (1, 2), (4, 5)]))
    assert labels[0] == labels[1] == labels[2]
    assert labels[4] == labels[5] != labels[0]
    assert labels[3] is None


def test_order_key_puts_undated_last_then_by_id():
    rank = order_rank(
        ["b", "a", "c", "d"], pd.to_datetime([None, None, "2024-01-02", "2024-01-01"], utc=True)
    )
    assert rank.tolist() == [3, 2, 1, 0]


def test_cluster_id_is_earliest_member_whatever_the_row_order():
    f = frame(["x", "y", "z"], ["2024-01-03", "2024-01-01", "2024-01-02"])
    labels, _ = batch_clusters(f, pairs([(0, 1), (1, 2)]))
    assert set(labels) == {"c-y"}
    g = f.iloc[[2, 0, 1]].reset_index(drop=True)  # same items, other order
    labels2, _ = batch_clusters(g, pairs([(0, 1), (1, 2)]))
    assert set(labels2) == {"c-y"}


def test_build_clusters_table_and_representatives():
    f = frame(["a", "b", "c", "d", "e"], ["2024-01-02", "2024-01-01", "2024-01-03", None, None])
    p = pairs([(0, 1), (0, 2), (3, 4)], [0.95, 0.99, 0.91])
    labels, clusters = batch_clusters(f, p)
    assert labels.tolist() == ["c-b", "c-b", "c-b", "c-d", "c-d"]
    assert clusters["cluster_id"].tolist() == ["c-b", "c-d"]  # largest first
    first = clusters.iloc[0]
    assert first["size"] == 3 and first["representative"] == "b"
    assert list(first["member_ids"]) == ["b", "a", "c"]  # earliest first
    assert first["max_similarity"] == pytest.approx(0.99)
    assert first["mean_similarity"] == pytest.approx(0.97)
    _, central = batch_clusters(f, p, representative="central")
    assert central.iloc[0]["representative"] == "a"  # linked to both others


def test_no_pairs_gives_empty_table():
    labels, clusters = batch_clusters(frame(["a", "b"]), pairs([]))
    assert labels.isna().all() and len(clusters) == 0
    assert "member_ids" in clusters.columns


def test_unknown_representative_rule():
    with pytest.raises(ConfigError, match="unknown representative rule"):
        batch_clusters(frame(["a", "b"]), pairs([(0, 1)]), representative="longest")


def test_each_cluster_names_its_weakest_link():
    # a-b 0.97, b-c 0.91, a-c 0.95, c-d 0.93: the strongest spanning tree holds a-b, a-c, c-d; b-c is spare
    f = frame(list("abcdxy"), [f"2024-01-0{i}" for i in range(1, 7)])
    p = pairs([(0, 1), (1, 2), (0, 2), (2, 3), (4, 5)], [0.97, 0.91, 0.95, 0.93, 0.99])
    _, clusters = batch_clusters(f, p)
    weakest = dict(zip(clusters["cluster_id"], clusters["weakest_link"], strict=True))
    assert weakest == {"c-a": pytest.approx(0.93), "c-x": pytest.approx(0.99)}
    assert clusters["weakest_link"].dtype == np.float32
    assert "weakest_link" in batch_clusters(frame(["a", "b"]), pairs([]))[1].columns


def test_batch_clusters_follow_the_rule_given():
    from nlsim.clusters.rules import SharedSupport

    chain = pairs([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)])  # a path: one component, no support
    f = frame(list("abcdef"), [f"2024-01-0{i}" for i in range(1, 7)])
    assert batch_clusters(f, chain)[1]["size"].tolist() == [6]
    assert max(batch_clusters(f, chain, rule=SharedSupport())[1]["size"]) <= 3


def test_a_topics_item_whose_cluster_kept_only_it_is_a_single_item_not_a_story() -> None:
    """A daily state keeps c-p0 on p1 after p0 expired: the topic of p1 and y has no story, two single
    items (a batch run over p1 and y gives the same), never a cluster the report does not list."""
    frame = pd.DataFrame(
        {
            "id": ["p1", "y", "a1", "a2"],
            "title": ["P", "Y", "A", "A"],
            "published_at": pd.to_datetime(
                ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"], utc=True
            ),
        }
    )
    topics = {"p1": "t-p1", "y": "t-p1", "a1": "t-a1", "a2": "t-a1"}
    table = topic_table(frame, topics, {"p1": "c-p0", "a1": "c-a1", "a2": "c-a1"})
    got = {
        t: (s, list(c))
        for t, s, c in zip(*table[["topic_id", "stories", "cluster_ids"]].T.values, strict=True)
    }
    assert got == {"t-p1": (2, []), "t-a1": (1, ["c-a1"])}


def test_the_central_representative_counts_links_on_either_side_and_breaks_ties_by_the_earliest():
    # c is linked to a and b, each time as the pair's second item: its summed score is the highest
    f = frame(["a", "b", "c"], ["2024-01-01", "2024-01-02", "2024-01-03"])
    _, clusters = batch_clusters(f, pairs([(0, 2), (1, 2)], [0.9, 0.9]), representative="central")
    assert clusters.iloc[0]["representative"] == "c"
    # two items, one link: each sums the same; the earlier (b) is the representative, as with "earliest"
    g = frame(["a", "b"], ["2024-01-02", "2024-01-01"])
    _, clusters = batch_clusters(g, pairs([(0, 1)]), representative="central")
    assert clusters.iloc[0]["representative"] == "b"


def test_a_clusters_scores_read_only_the_links_between_its_own_members():
    from nlsim.clusters.rules import SharedSupport

    # a path the support rule parts: the links between two clusters count in neither's scores
    f = frame(list("abcdef"), [f"2024-01-0{i}" for i in range(1, 7)])
    sims = [0.99, 0.97, 0.95, 0.93, 0.91]
    p = pairs([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], sims)
    labels, clusters = batch_clusters(f, p, rule=SharedSupport())
    assert len(clusters) > 1
    for row in clusters.itertuples():
        inside = [
            s
            for (a, b), s in zip(zip(p["a"], p["b"], strict=True), sims, strict=True)
            if labels[a] == labels[b] == row.cluster_id
        ]
        assert row.max_similarity == pytest.approx(max(inside))
        assert row.mean_similarity == pytest.approx(np.mean(inside))


def test_a_clusters_row_gives_its_first_and_last_times_its_sources_and_the_items_this_run_added():
    from nlsim.clusters.table import cluster_table

    items = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": list("ABCD"),
            "source": ["wire", "", None, "wire"],
            "published_at": pd.to_datetime(["2024-01-03", "2024-01-01", None, "2024-01-02"], utc=True),
        }
    )
    links = pd.DataFrame({"id_a": ["a", "b", "c"], "id_b": ["b", "c", "d"], "similarity": [0.9] * 3})
    events = pd.DataFrame(
        {"cluster_id": ["c-b"], "status": ["grown"], "added": [["a", "d"]], "absorbed": [[]], "size": [4]}
    )
    table = cluster_table(items, dict.fromkeys("abcd", "c-b"), links, events=events)
    row = table.iloc[0]
    assert row["first_published"] == pd.Timestamp("2024-01-01", tz="UTC")
    assert row["last_published"] == pd.Timestamp("2024-01-03", tz="UTC")
    assert list(row["sources"]) == ["wire"]  # an empty or missing source is no source
    assert list(row["added_ids"]) == ["d", "a"]  # earliest first, of the members this run added
    assert (row["status"], list(row["member_ids"])) == ("grown", ["b", "d", "a", "c"])


def test_topic_groups_are_listed_largest_first_with_their_first_and_last_times():
    items = pd.DataFrame(
        {
            "id": ["x", "y", "z", "w"],
            "title": list("XYZW"),
            "published_at": pd.to_datetime(
                ["2024-01-02", "2024-01-01", "2024-01-05", "2024-01-04"], utc=True
            ),
        }
    )
    table = topic_table(items, {"x": "t-y", "y": "t-y", "z": "t-y", "w": "t-w"}, {"x": "c-y", "y": "c-y"})
    assert table["topic_id"].tolist() == ["t-y", "t-w"]
    first = table.iloc[0]
    assert first["first_published"] == pd.Timestamp("2024-01-01", tz="UTC")
    assert first["last_published"] == pd.Timestamp("2024-01-05", tz="UTC")


def test_a_story_cluster_whose_other_members_are_not_among_the_items_is_no_story_of_its_topic():
    # the clusters map names c-v for x and for v, an item no longer held: x is a single item of its topic
    items = pd.DataFrame(
        {"id": ["x", "y"], "title": list("XY"), "published_at": pd.to_datetime([None, None], utc=True)}
    )
    table = topic_table(items, {"x": "t-x", "y": "t-x"}, {"x": "c-v", "v": "c-v"})
    assert (table.iloc[0]["stories"], list(table.iloc[0]["cluster_ids"])) == (2, [])
