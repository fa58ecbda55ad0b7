"""What the report page is given (:mod:`nlsim.report.page`), read without a browser."""

from __future__ import annotations

import pytest

from nlsim.report.page import script_fold


def _folded(fold: dict[str, str], text: str) -> str:
    """``text`` as the page's search reads it (``fold`` in ``report.js``)."""
    return "".join(fold.get(ch, ch) for ch in text)


@pytest.mark.parametrize("query", ["颱風", "臺風", "頭髮", "以後", "後來", "乾燥", "裡面"])
def test_a_traditional_query_finds_a_simplified_title_whose_traditional_form_the_page_does_not_hold(
    query: str,
) -> None:
    """A newsroom's day has stories in Simplified Chinese only: an editor typing the Traditional word (颱風
    for 台风, 頭髮 for 头发, 以後 for 以后) finds the Simplified title, as a Simplified query finds a
    Traditional one."""
    titles = ["台风凯米今晚登陆", "头发护理", "以后再说 后来", "干燥天气", "里面的人"]
    fold = script_fold(titles)
    hay = "\n".join(_folded(fold, t) for t in titles)
    assert _folded(fold, query) in hay


def hair_below_report() -> tuple[object, object, object, object, object]:
    """A report at the six-decimal threshold 0.881349: a story linked at exactly the threshold (c0-c1), one
    at 0.97 (d0-d1), and a near miss 0.0000004 below the threshold (c0-d0: 0.8813486)."""
    import pandas as pd

    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table
    from nlsim.report.near_misses import near_miss_pairs, near_miss_table
    from nlsim.report.record import RunRecord

    frame = pd.DataFrame(
        {
            "id": ["c0", "c1", "d0", "d1"],
            "title": ["Floods in the north", "Northern floods", "Budget vote", "The budget vote"],
            "source": ["AP"] * 4,
            "published_at": pd.to_datetime(["2024-08-01T08:00Z"] * 4, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.881349, 0.97]})
    below = pd.DataFrame({"a": [0], "b": [2], "similarity": [0.8813486]})
    labels, clusters = batch_clusters(frame, pairs)
    cluster_of = {i: c for i, c in zip(frame["id"], labels, strict=True) if c is not None}
    near = near_miss_table(pairs_table(frame, near_miss_pairs(below, labels, 10), labels), cluster_of)
    record = RunRecord(model="m", threshold=0.881349)
    return pairs_table(frame, pairs, labels), clusters, record, frame, near


def _shown(value: float, digits: int) -> str:
    """A score as the page's script shows it (``score`` in ``report.js``)."""
    import math

    p = 10**digits
    return f"{math.floor(value * p + 1e-7) / p:.{digits}f}"


def test_a_score_a_hair_below_a_six_decimal_threshold_is_below_it_in_the_page_data() -> None:
    """docs/report.md: a score below the threshold never reads as the threshold. The page's data held the
    scores rounded to 6 decimals before its script cut them to the threshold's: at the threshold 0.881349 a
    near miss of 0.8813486 was held as 0.881349, shown as the threshold and counted "at or above" it. The
    data now holds scores cut, never rounded up (0.881348); a score at the threshold stays the threshold."""
    from nlsim.report.page import page_data
    from nlsim.report.review import review_section

    pairs, clusters, record, frame, near = hair_below_report()
    data = page_data(pairs, clusters, record, frame, near_misses=near)
    assert data["threshold"] == 0.881349 and data["scoreDigits"] == 6
    (miss,) = data["nearMisses"]
    assert miss["similarity"] == 0.881348 and _shown(miss["similarity"], 6) == "0.881348"
    links = sorted(p["similarity"] for c in data["clusters"] for p in c["pairs"])
    assert links == [0.881349, 0.97]  # the float32 of 0.881349 is the threshold itself, 0.97 is 0.97
    assert [_shown(v, 6) for v in links] == ["0.881349", "0.970000"]
    assert sorted(c["max_similarity"] for c in data["clusters"]) == [0.881349, 0.97]
    heading = review_section(data)
    assert "the best pair below the threshold" in heading and "at or above" not in heading


def test_a_pair_at_a_threshold_of_seven_decimals_never_reads_below_it() -> None:
    """``--threshold 0.8813486`` (a pair's own score, read from pairs.parquet): the page's data held the
    threshold rounded (0.881349) and the pair that met it cut (0.881348), so a story's link read under the
    threshold it was kept by ("score ≥ threshold 0.881349" over 0.881348). The data now holds such a threshold
    at the next six-decimal number and a score at or above it never below that; a near miss under it stays
    under it."""
    import numpy as np
    import pandas as pd

    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table
    from nlsim.report.near_misses import near_miss_pairs, near_miss_table
    from nlsim.report.page import page_data
    from nlsim.report.record import RunRecord
    from nlsim.report.review import review_section

    frame = pd.DataFrame(
        {
            "id": ["c0", "c1", "d0"],
            "title": ["Floods in the north", "Northern floods", "Budget vote"],
            "source": ["AP"] * 3,
            "published_at": pd.to_datetime(["2024-08-01T08:00Z"] * 3, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": np.array([0.8813486], dtype=np.float32)})
    below = pd.DataFrame({"a": [0], "b": [2], "similarity": np.array([0.8813483], dtype=np.float32)})
    labels, clusters = batch_clusters(frame, pairs)
    cluster_of = {i: c for i, c in zip(frame["id"], labels, strict=True) if c is not None}
    near = near_miss_table(pairs_table(frame, near_miss_pairs(below, labels, 10), labels), cluster_of)
    record = RunRecord(model="m", threshold=0.8813486)
    data = page_data(pairs_table(frame, pairs, labels), clusters, record, frame, near_misses=near)
    digits = data["scoreDigits"]
    threshold = _shown(data["threshold"], digits)
    (link,) = [p["similarity"] for c in data["clusters"] for p in c["pairs"]]
    assert _shown(link, digits) >= threshold, (link, threshold)
    assert [_shown(c["max_similarity"], digits) >= threshold for c in data["clusters"]] == [True]
    (miss,) = data["nearMisses"]
    assert _shown(miss["similarity"], digits) < threshold, (miss, threshold)
    assert "the best pair below the threshold" in review_section(data)


def fall_back_report() -> tuple[object, object, object, object]:
    """A run in America/New_York on 2024-11-03, when 01:00-02:00 comes twice: story c-e1 (e1-e2, its last
    item at 01:50 of the first pass, 05:50 UTC), story c-l1 (l1-l2, its last item at 01:10 of the second,
    06:10 UTC, the later one), a lone item at 02:30 (its own minute once)."""
    import pandas as pd

    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table
    from nlsim.report.record import RunRecord

    times = ["2024-11-03T01:40-04:00", "2024-11-03T01:50-04:00", "2024-11-03T01:05-05:00"]
    times += ["2024-11-03T01:10-05:00", "2024-11-03T02:30-05:00"]
    frame = pd.DataFrame(
        {
            "id": ["e1", "e2", "l1", "l2", "x"],
            "title": ["Storm floods town", "Storm floods the town", "Mayor resigns", "Mayor quits", "Solo"],
            "source": "wire",
            "published_at": pd.to_datetime(times, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.95, 0.95]})
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord(model="m", threshold=0.9, timezone="America/New_York")
    return pairs_table(frame, pairs, labels), clusters, record, frame


def test_stories_in_the_hour_a_fall_back_repeats_follow_their_instants_and_show_their_offsets() -> None:
    """In the hour America/New_York's clocks repeat, c-e1's last item (01:50, UTC-04:00) came 20 minutes
    before c-l1's (01:10, UTC-05:00): latest activity first puts c-l1 first (the local times put c-e1
    first), and the page shows each time of that hour with its offset, a time outside it without."""
    from nlsim.io.columns import page_time
    from nlsim.report.page import first_screen_order, page_data, page_zone

    pairs, clusters, record, frame = fall_back_report()
    order = first_screen_order(clusters, page_zone("America/New_York"))
    assert clusters["cluster_id"].iloc[order].tolist() == ["c-l1", "c-e1"]
    data = page_data(pairs, clusters, record, frame)
    shown = {item["id"]: item["published_at"] for item in data["items"]}
    assert shown == {
        "e1": "2024-11-03 01:40 (UTC-04:00)",
        "e2": "2024-11-03 01:50 (UTC-04:00)",
        "l1": "2024-11-03 01:05 (UTC-05:00)",
        "l2": "2024-11-03 01:10 (UTC-05:00)",
    }
    assert page_time(frame["published_at"].iloc[4], page_zone("America/New_York")) == "2024-11-03 02:30"
    spans = {c["cluster_id"]: (c["first_published"], c["last_published"]) for c in data["clusters"]}
    assert spans["c-l1"] == ("2024-11-03 01:05 (UTC-05:00)", "2024-11-03 01:10 (UTC-05:00)")
    assert {c["cluster_id"]: c["period"] for c in data["clusters"]} == {
        "c-e1": "2024-11-03",
        "c-l1": "2024-11-03",
    }


def test_a_title_of_the_lengths_a_list_shows_whole_is_not_cut() -> None:
    """A title of :data:`TITLE_CHARS` characters is shown whole; a cut title's tooltip of
    :data:`TOOLTIP_CHARS` characters holds it whole, without an ellipsis."""
    from nlsim.report.page import TITLE_CHARS, TOOLTIP_CHARS, short_title

    assert short_title("x" * TITLE_CHARS) == ("x" * TITLE_CHARS, None)
    assert short_title("x" * TOOLTIP_CHARS)[1] == "x" * TOOLTIP_CHARS


def test_size_buckets_hold_their_upper_bounds() -> None:
    """A story of 5, 10 or 20 items is in the bucket that ends with it."""
    from nlsim.report.page import _size_bucket

    assert [_size_bucket(n) for n in (2, 3, 5, 10, 20, 21)] == ["2", "3", "4–5", "6–10", "11–20", "21+"]


def test_stories_are_counted_by_month_and_a_dissolved_story_does_not_stretch_the_days() -> None:
    """A daily run's dissolved cluster (listed with the members it had) is no story of the page: its old
    first item does not turn the day count into a month count. Counted by month, a story's period is its
    year and month."""
    import pandas as pd

    from nlsim.report.page import _periods, day_or_month

    clusters = pd.DataFrame(
        {
            "status": ["new", "dissolved"],
            "first_published": pd.to_datetime(["2024-08-01T00:00Z", "2023-01-01T00:00Z"], utc=True),
        }
    )
    assert day_or_month(clusters) == "day"
    assert _periods(["2024-08-01T09:30+08:00", None], "month") == ["2024-08", None]


def test_a_title_in_the_runs_own_script_is_not_marked_and_an_unknown_zone_is_utc() -> None:
    """Only a title whose script is another than the run's gets a ``lang`` of its own, and a run without a
    conversion has Chinese titles as ``zh``; a zone name that is no zone (a path) gives UTC."""
    import pandas as pd

    from nlsim.report.page import page_data, page_zone, title_langs
    from nlsim.report.record import RunRecord

    assert title_langs([{"title": "颱風登陸"}, {"title": "台风登陆"}], "zh-Hant") == {"1": "zh-Hans"}
    empty = pd.DataFrame({"cluster_id": [], "size": [], "member_ids": [], "representative": []})
    assert page_data(pd.DataFrame(), empty, RunRecord(model="m"), None)["cjkLang"] == "zh"
    assert page_zone("../../etc/passwd").key == "UTC"


def test_a_storys_pairs_and_copies_and_the_editors_cards_as_the_page_holds_them() -> None:
    """A story's pairs are held highest score first; only pairs marked as exact copies (not those with the
    mark missing) make copies; a verdict on an item the page does not hold has no card, and one that
    confirms the annotators' score says so."""
    import pandas as pd

    from nlsim.report.page import _copies, _Items, cluster_verdicts, page_data, page_tables
    from nlsim.report.record import ClusterChange, RunRecord

    frame = pd.DataFrame({"id": ["a", "b", "c"], "title": ["x", "y", "z"]})
    pairs = pd.DataFrame(
        {
            "id_a": ["a", "a"],
            "id_b": ["b", "c"],
            "similarity": [0.91, 0.97],
            "cluster_id": ["c-1", "c-1"],
            "exact_copy": [True, None],
        }
    )
    clusters = pd.DataFrame(
        {"cluster_id": ["c-1"], "size": [3], "member_ids": [["a", "b", "c"]], "representative": ["a"]}
    )
    data = page_data(pairs, clusters, RunRecord(model="m", threshold=0.9), frame)
    assert [p["similarity"] for p in data["clusters"][0]["pairs"]] == [0.97, 0.91]
    item = _Items(frame, page_tables(RunRecord())["items"])
    assert _copies(pairs, item) == {item("b"): item("a")}
    rows = [{"cluster_id": "c-1", "member_ids": [0, 1, 2]}]
    changes = [ClusterChange("a", "zz", 0.0, "split"), ClusterChange("a", "b", 1.0, "joined", confirms=True)]
    cards = cluster_verdicts(rows, changes, "abc".index, "abc")
    assert cards == {
        "c-1": [{"how": "joined", "a": 0, "b": 1, "other": None, "overrules": False, "confirms": True}]
    }
