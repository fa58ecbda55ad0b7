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
