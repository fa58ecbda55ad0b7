import json
import re
from dataclasses import replace

import pandas as pd
import pytest

from nlsim.clusters.table import batch_clusters
from nlsim.report.files import PAIRS_SCHEMA, pairs_table, verify_report, write_report
from nlsim.report.html import render_html
from nlsim.report.record import Counts, RunRecord


def page_json(page: str) -> dict:
    """The data the report page's script draws (the JSON embedded in the page)."""
    found = re.search(r"<script id='nlsim-data' type='application/json'>(.*?)</script>", page, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


@pytest.fixture
def report_inputs():
    frame = pd.DataFrame(
        {
            "id": ["n1", "n2", "n3"],
            "title": ["Flood <b>north</b>", "Flooding north", "Other"],
            "source": ["AP", "AFP", "X"],
            "published_at": pd.to_datetime(["2024-01-02T10:00Z", "2024-01-01T09:00Z", None], utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.93]})
    labels, clusters = batch_clusters(frame, pairs)
    return frame, pairs_table(frame, pairs, labels), clusters


def test_pairs_table_orders_each_pair_earliest_first(report_inputs):
    _, table, _ = report_inputs
    row = table.iloc[0]
    assert (row["id_a"], row["id_b"], row["cluster_id"]) == ("n2", "n1", "c-n2")
    assert row["title_a"] == "Flooding north" and row["source_b"] == "AP"
    assert row["published_at_a"] == pd.Timestamp("2024-01-01T09:00Z")


def test_report_files_schema_and_html(tmp_path, report_inputs):
    frame, table, clusters = report_inputs
    counts = Counts(items_in=3, pairs=1, clusters=1, clustered_items=2)  # the run counts, the report writes
    files = write_report(tmp_path, table, clusters, RunRecord(model="m", counts=counts), frame=frame)
    pairs = pd.read_parquet(files["pairs.parquet"])
    assert list(pairs.columns) == PAIRS_SCHEMA.names
    got = pd.read_parquet(files["clusters.parquet"])
    assert got["member_ids"].iloc[0].tolist() == ["n2", "n1"]
    page = files["index.html"].read_text()
    assert "<b>north</b>" not in page  # titles are data, never markup
    data = page_json(page)
    assert "Flood <b>north</b>" in [it["title"] for it in data["items"]]
    cluster = data["clusters"][0]  # the clusters table's row, keyed by column name
    assert cluster["cluster_id"] == "c-n2" and cluster["pairs"][0]["similarity"] == 0.93
    ids = [it["id"] for it in data["items"]]  # a column of items holds their indexes into the page's items
    assert [ids[i] for i in cluster["member_ids"]] == ["n2", "n1"] and ids[cluster["representative"]] == "n2"
    assert (ids[cluster["pairs"][0]["id_a"]], ids[cluster["pairs"][0]["id_b"]]) == ("n2", "n1")
    shown = {name: [c["name"] for c in spec if c["shown"]] for name, spec in data["columns"].items()}
    assert shown["items"] == ["id", "title", "source", "url", "published_at"]
    assert shown["pairs"] == ["id_a", "id_b", "similarity"]  # no reranker: no cosine, no cross-encoder
    assert "| c-n2 |  | new | 2 |" in files["summary.md"].read_text()  # no topic: the cell left empty
    assert files["overview.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "overview.png" in page
    assert verify_report(tmp_path)["pairs"] == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staging")]


def test_failed_write_leaves_previous_report(tmp_path, report_inputs, monkeypatch):
    frame, table, clusters = report_inputs
    write_report(tmp_path, table, clusters, RunRecord(model="m"), frame=frame)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("nlsim.report.files.render_markdown", boom)
    with pytest.raises(RuntimeError):
        write_report(tmp_path, table.iloc[:0], clusters.iloc[:0], RunRecord(model="other"), frame=frame)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (a ``finally`` aside, which the code must not rely on)."""


def test_a_move_killed_half_way_is_finished_by_the_next_run_never_left_mixed(tmp_path, report_inputs):
    from nlsim.faults import set_fault_hook
    from nlsim.report.files import finish_publishing

    frame, table, clusters = report_inputs
    write_report(tmp_path, table, clusters, RunRecord(model="old"), frame=frame)
    moves = []

    def kill_after_three(point: str) -> None:
        if point == "report-move":
            moves.append(point)
            if len(moves) == 3:
                raise Killed

    set_fault_hook(kill_after_three)
    try:
        with pytest.raises(Killed):
            write_report(tmp_path, table.iloc[:0], clusters.iloc[:0], RunRecord(model="new"), frame=frame)
    finally:
        set_fault_hook(None)
    with pytest.raises(ValueError, match="does not match run.json"):  # mixed: old run.json, 3 new files
        verify_report(tmp_path)
    assert [p.name for p in tmp_path.glob(".staging-*")]
    assert finish_publishing(tmp_path)  # what the next run into the folder does first
    assert verify_report(tmp_path)["model"] == "new"
    assert not list(tmp_path.glob(".staging-*"))
    # the next run itself starts with it, and a staging folder a kill left before every file was in is
    # only swept: the report stays the last whole one
    (tmp_path / ".staging-dead1234").mkdir()
    (tmp_path / ".staging-dead1234" / "pairs.parquet").write_bytes(b"half")
    write_report(tmp_path, table, clusters, RunRecord(model="third"), frame=frame)
    assert verify_report(tmp_path)["model"] == "third" and not list(tmp_path.glob(".staging-*"))


def test_a_second_run_into_a_report_folder_in_use_is_refused_and_touches_nothing(tmp_path, report_inputs):
    from nlsim.io.lock import LockedError, RunLock

    frame, table, clusters = report_inputs
    write_report(tmp_path, table, clusters, RunRecord(model="m"), frame=frame)
    (tmp_path / ".staging-live").mkdir()  # the other run's work in progress
    before = sorted(p.name for p in tmp_path.iterdir())
    with RunLock(tmp_path, what="report folder"), pytest.raises(LockedError):
        write_report(tmp_path, table.iloc[:0], clusters.iloc[:0], RunRecord(model="other"), frame=frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert verify_report(tmp_path)["model"] == "m"


def test_page_is_self_contained_and_its_data_inert(report_inputs):
    frame, table, clusters = report_inputs
    frame = frame.assign(title=["</script><script>alert(1)</script><!--", "Flooding north", "Other"])
    page = render_html(table, clusters, RunRecord(model="m", conversion="tw2sp"), frame)
    assert page.startswith('<!doctype html>\n<html lang="en">')
    assert page.count("</script>") == 2 and "<!--" not in page  # the title cannot close the data block
    assert page_json(page)["items"][1]["title"].startswith("</script><script>alert(1)")
    for remote in ("<link", "@import", "url(", "src='http", 'src="http', "//cdn", "<iframe"):
        assert remote not in page, remote
    assert "<style>" in page and "report.js" not in page  # CSS and script inline
    for font in ("Noto Sans CJK TC", "Noto Sans CJK SC", "PingFang TC", "Microsoft JhengHei"):
        assert font in page
    assert page_json(page)["cjkLang"] == "zh-Hant"


def test_page_links_only_http_urls(report_inputs):
    frame, table, clusters = report_inputs
    frame = frame.assign(url=["javascript:alert(1)", "https://news.example/a b", "http://x.example/1"])
    items = page_json(render_html(table, clusters, RunRecord(), frame))["items"]
    assert {it["id"]: it["url"] for it in items} == {"n2": None, "n1": None}  # javascript:, a space
    frame = frame.assign(url=["https://news.example/n1", "/relative", "nan"])
    items = page_json(render_html(table, clusters, RunRecord(), frame))["items"]
    assert {it["id"]: it["url"] for it in items} == {"n2": None, "n1": "https://news.example/n1"}


def _card_summary(tmp_path, **info):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = tmp_path / "model" / "learning_curve.png"
    curve.parent.mkdir()
    plt.figure(figsize=(2, 2)).savefig(curve)
    plt.close("all")
    metrics = {
        "before/validation": {"spearman": 79.7},
        "before/test": {"spearman": 77.51},
        "after/validation": {"spearman": 88.1},
        "after/test": {"spearman": 88.23},
    }
    model_info = {
        "requested": "current",
        "zero_shot": False,
        "version": "v0003-1a2b3c4d",
        "model_id": "models/versions/v0003-1a2b3c4d",
        "card": {
            "metrics": metrics,
            "trained": {"n_train": 1400, "n_validation": 300},
            "store": {"created": "2026-11-20T10:00:00+00:00"},
            "learning_curve": str(curve),
        },
        "threshold_calibration": {
            "threshold": 0.912,
            "level": 1.0,
            "precision": 0.8125,
            "recall": 0.7222,
            "f1": 0.7647,
            "n": 300,
            "n_positive": 18,
            "split": "validation",
        },
        **info,
    }
    return {
        "model": model_info["model_id"],
        "model_info": model_info,
        "threshold": 0.912,
        "threshold_source": "calibration stored with the model: threshold 0.9120 calibrated for level >= 1.0",
        "conversion": "tw2sp",
    }


def test_page_opens_with_the_model_card(tmp_path, report_inputs):
    frame, table, clusters = report_inputs
    files = write_report(
        tmp_path / "r", table, clusters, RunRecord.from_dict(_card_summary(tmp_path)), frame=frame
    )
    page = files["index.html"].read_text()
    card = page[page.index("id='model'") : page.index("id='overview'")]
    assert "v0003-1a2b3c4d" in card and "fine-tuned" in card
    for figure in ("79.70", "77.51", "88.10", "88.23", "0.812", "0.722", "0.765", "0.9120"):
        assert figure in card, figure
    assert "same story" in card and "300 validation pairs" in card and "1,400 annotated pairs" in card
    assert "calibration stored with the model" in card
    assert "<img src='learning_curve.png'" in card
    assert (tmp_path / "r" / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert "learning_curve.png" in verify_report(tmp_path / "r")["files"]
    assert "id='zero-shot'" not in page and "id='model-switch'" not in page


def test_page_says_zero_shot_and_model_switch_first(tmp_path, report_inputs):
    frame, table, clusters = report_inputs
    summary = _card_summary(tmp_path, zero_shot=True, version=None, card={})
    summary["model_switch"] = {
        "from_model": "intfloat/multilingual-e5-small",
        "to_model": "models/versions/v0003-1a2b3c4d",
        "details": ["model_id: a -> b"],
        "reembed": True,
        "reembedded": 1234,
    }
    page = render_html(table, clusters, RunRecord.from_dict(summary), frame)
    main = page[page.index("<main>") :]
    assert main.index("id='zero-shot'") < main.index("id='model-switch'") < main.index("id='model'")
    assert "No fine-tuned model has been promoted" in main
    assert "1,234 items" in main and "intfloat/multilingual-e5-small" in main
    assert "zero-shot (not fine-tuned)" in main and "learning_curve.png" not in main


@pytest.mark.slow
def test_daily_page_shows_status_added_items_and_absorbed(tmp_path):
    from nlsim.dedup.config import DedupConfig
    from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus

    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc, state, out = HashEncoder(), tmp_path / "state", tmp_path / "out"
    for day in days:
        cfg = DedupConfig.of(
            corpus=day,
            out=out,
            model="hash",
            convert="none",
            threshold=0.7,
            cache=False,
            progress=False,
            cluster_rule="components",  # the bridge x1 merges A and B under this rule only
        )
        run_daily(cfg, state, retention_days=None, encoder=enc)
    data = page_json((out / "latest" / "index.html").read_text())
    assert data["daily"] is True
    ids = [it["id"] for it in data["items"]]
    got = {
        c["cluster_id"]: (c["status"], [ids[i] for i in c["added_ids"]], c["absorbed"])
        for c in data["clusters"]
    }
    assert got == {"c-a1": ("merged", ["x1"], ["c-b1"]), "c-d1": ("new", ["d1", "d2"], [])}
    page = (out / "latest" / "index.html").read_text()
    assert "window/clusters.parquet" in page and "Clusters by status in this run" in page


def test_page_holds_every_cluster_and_says_how_many():
    n = 1200  # more than the old 500-cluster cap
    ids = [f"x{i}" for i in range(2 * n)]
    frame = pd.DataFrame(
        {
            "id": ids,
            "title": [f"Story {i // 2}" for i in range(2 * n)],
            "source": ["AP", "AFP"] * n,
            "published_at": pd.to_datetime(["2024-01-01"] * (2 * n), utc=True),
        }
    )
    raw = pd.DataFrame({"a": range(0, 2 * n, 2), "b": range(1, 2 * n, 2), "similarity": [0.95] * n})
    labels, clusters = batch_clusters(frame, raw)
    page = render_html(pairs_table(frame, raw, labels), clusters, RunRecord(model="m"), frame)
    data = page_json(page)
    assert len(data["clusters"]) == n and len(data["items"]) == 2 * n
    assert f"<title>Near-duplicate report · {n:,} clusters</title>" in page
    assert data["pageSize"] == 50  # drawn a page at a time; the page says which ones it shows


def test_a_page_of_one_cluster_says_one_cluster() -> None:
    frame = pd.DataFrame(
        {"id": ["a", "b"], "title": ["Story", "Story"], "source": ["AP", "AFP"],
         "published_at": pd.to_datetime(["2024-01-01"] * 2, utc=True)}
    )  # fmt: skip
    raw = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.95]})
    labels, clusters = batch_clusters(frame, raw)
    page = render_html(pairs_table(frame, raw, labels), clusters, RunRecord(model="m"), frame)
    assert "<title>Near-duplicate report · 1 cluster</title>" in page
    assert "1 cluster; the list needs JavaScript." in page and "1 clusters" not in page


def test_the_plain_line_says_how_often_a_grouping_is_one_story_or_that_nobody_measured_it(tmp_path):
    from nlsim.evaluation.judge import Judgement
    from nlsim.report.prose import plain_quality

    judged = RunRecord(threshold=0.9, judge=Judgement("p.tsv", "validation", 120, 30, 0.667, 0.8, 0.727))
    line = plain_quality(judged)
    assert "About two in three of the pairs this report groups together are truly one story" in line
    assert "it groups about four in five of the pairs editors call the same story" in line
    assert "judged on 120 of the editors&#x27; scored validation pairs, 30 of them the same story" in line
    summary = _card_summary(tmp_path)
    calibrated = RunRecord.from_dict(summary)  # precision 0.8125, recall 0.7222
    line = plain_quality(calibrated)
    assert "About four in five of the pairs this model links are truly the same story" in line
    assert "links about three in four of the pairs editors call the same story" in line
    given = RunRecord.from_dict({**summary, "threshold": 0.95})  # not the calibrated one
    assert "was not measured for this run" in plain_quality(given)


def test_the_plain_line_of_a_judged_report_that_groups_none_of_the_judged_pairs_says_so(tmp_path):
    """A report judged against the editors' pairs that puts none of them in one cluster (a quiet day, a
    threshold too high) has no precision (nothing grouped) and a recall of 0: the plain line read that as
    no judgement, and said the run had "no --judge-pairs" (or gave the calibration's "about four in five"
    instead). It says the report groups none of the pairs editors call the same story; a judgement of no
    pair at all (a daily window without them) is named as such, not as no --judge-pairs."""
    from nlsim.evaluation.judge import Judgement
    from nlsim.report.prose import plain_quality

    none_grouped = Judgement("p.tsv", "validation", 120, 30, None, 0.0, None)
    line = plain_quality(RunRecord(threshold=0.9, judge=none_grouped))
    assert "no <code>--judge-pairs</code>" not in line and "not measured" not in line
    assert "This report groups none of the 30 pairs editors call the same story" in line
    assert "judged on 120 of the editors&#x27; scored validation pairs, 30 of them the same story" in line
    calibrated = RunRecord.from_dict(_card_summary(tmp_path))
    line = plain_quality(replace(calibrated, judge=none_grouped))
    assert "four in five" not in line and "groups none of the 30 pairs" in line
    no_pair = Judgement("p.tsv", "validation", 0, 0, None, None, None)
    line = plain_quality(RunRecord(threshold=0.9, judge=no_pair))
    assert "not measured" in line and "no <code>--judge-pairs</code>" not in line
    assert "none of the editors&#x27; scored validation pairs could be judged" in line


def test_the_plain_line_trusts_clusters_by_size_warns_when_large_ones_are_weak_and_gives_topics() -> None:
    from nlsim.evaluation.judge import Judgement, SizePurity, TopicFigures
    from nlsim.report.prose import plain_quality

    def judged(two: float, large: float) -> RunRecord:
        bands = [SizePurity("2", 40, int(40 * two), two), SizePurity("3-4", 10, 8, 0.8)]
        bands += [SizePurity("3+", 30, 20, 0.667), SizePurity("5+", 20, int(20 * large), large)]
        judge = Judgement("p.tsv", "validation", 120, 30, 0.667, 0.8, 0.727, purity_by_size=bands)
        judge = replace(judge, topics=TopicFigures(judged=50, topical=40, precision=0.8, coverage=0.6))
        return RunRecord(threshold=0.9, judge=judge, counts=Counts(topics=4, topic_items=30))

    line = plain_quality(judged(0.9, 0.55))
    assert "clusters of 2 items: about nine in ten of their pairs are the same story (40 judged)" in line
    assert "clusters of 3+ items: about two in three" in line
    assert "clusters of 5+ items: about six in ten" in line
    assert "3-4" not in line  # the bands 2, 3+ and 5+ only
    assert "The large clusters are the weak ones" in line
    assert "4 topic group(s) gather 30 items; about four in five of the judged pairs inside one" in line
    assert "weak ones" not in plain_quality(judged(0.9, 0.85))  # large clusters nearly as pure: no warning
    # a share in words reads as a sentence at either end: never "almost none pairs the same story"
    ends = plain_quality(judged(0.0, 0.97))
    assert "clusters of 2 items: almost none of their pairs are the same story (40 judged)" in ends, ends
    assert "clusters of 5+ items: nearly all of their pairs are the same story (20 judged)" in ends, ends
    unjudged = plain_quality(RunRecord(threshold=0.9, counts=Counts(topics=4, topic_items=30)))
    assert "was not measured" in unjudged and "4 topic group(s) gather 30 items." in unjudged
    assert "By size" not in unjudged and "topic group" not in plain_quality(RunRecord(threshold=0.9))


@pytest.mark.parametrize(
    ("two", "large", "weak"),
    [(0.9, 0.8, True), (0.9, 0.75, True), (0.9, 0.81, False), (None, 0.5, False), (0.9, None, False)],
)
def test_the_plain_line_warns_of_weak_large_clusters_from_a_tenth_less_and_leaves_out_unjudged_sizes(
    two: float | None, large: float | None, weak: bool
) -> None:
    """The large clusters are the weak ones when their pairs are the same story a tenth less often than a
    pair's, or more (exactly a tenth warns); a size band no judged pair fell in (no clusters of two, or none
    of five or more, in this report) is left out of the line, and warns of nothing."""
    from nlsim.evaluation.judge import Judgement, SizePurity
    from nlsim.report.prose import plain_quality

    def band(name: str, share: float | None) -> SizePurity:
        return SizePurity(name, 20 if share is not None else 0, int(20 * (share or 0)), share)

    bands = [band("2", two), band("3+", 0.7), band("5+", large)]
    line = plain_quality(
        RunRecord(
            threshold=0.9,
            judge=Judgement("p.tsv", "validation", 120, 30, 0.7, 0.8, 0.75, purity_by_size=bands),
        )
    )
    assert ("The large clusters are the weak ones" in line) is weak, line
    assert ("clusters of 2 items" in line) is (two is not None), line
    assert ("clusters of 5+ items" in line) is (large is not None), line
    assert "clusters of 3+ items: about seven in ten" in line, line


def test_the_plain_line_of_a_judgement_without_purity_figures_gives_no_sizes() -> None:
    """A judgement recorded before the purity by cluster size was (or one whose every band is empty) says
    nothing by size: no empty "By size" sentence."""
    from nlsim.evaluation.judge import Judgement, SizePurity
    from nlsim.report.prose import plain_quality

    judge = Judgement("p.tsv", "validation", 120, 30, 0.7, 0.8, 0.75)
    empty = replace(judge, purity_by_size=[SizePurity(b, 0, 0, None) for b in ("2", "3+", "5+")])
    for j in (judge, empty):
        line = plain_quality(RunRecord(threshold=0.9, judge=j))
        assert "of the pairs this report groups together are truly one story" in line, line
        assert "By size" not in line and "plain-sizes" not in line, line


@pytest.mark.parametrize("conversion", ["tw2sp", "s2t", "none"])
def test_each_chinese_title_is_marked_with_its_own_script_in_a_mixed_corpus(tmp_path, conversion):
    """A newsroom's day holds Traditional and Simplified headlines side by side: each title on the page is
    marked with its own script (the font's glyph forms and a screen reader's voice follow it), whatever
    the run's conversion; a title that reads the same in both scripts keeps the run's."""
    frame = pd.DataFrame(
        {
            "id": ["tw", "cn", "en", "both"],
            "title": ["颱風凱米登陸 全臺停班停課", "台风凯米登陆 全台停班停课", "Typhoon lands", "大人"],
            "published_at": pd.to_datetime(["2024-07-24T08:00Z"] * 4, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.97, 0.96]})
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord(model="m", conversion=conversion)
    files = write_report(tmp_path, pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    data = page_json(files["index.html"].read_text())
    lang = {
        it["id"]: data.get("titleLang", {}).get(str(i), data["cjkLang"]) for i, it in enumerate(data["items"])
    }
    assert (lang["tw"], lang["cn"]) == ("zh-Hant", "zh-Hans")
    assert lang["both"] == data["cjkLang"]


def test_a_japanese_or_korean_title_is_not_marked_as_chinese(tmp_path):
    """A Japanese headline (kana beside its kanji) or a Korean one with hanja was marked ``zh-Hant``, the
    run's Chinese script, so its Han characters were drawn in Chinese glyph forms and a screen reader read
    it as Chinese: it is marked ``ja`` or ``ko``. A Taiwanese headline with the one kana Taiwan writes
    (の, for 的) or with a katakana middle dot between names is still Chinese."""
    frame = pd.DataFrame(
        {
            "id": ["ja", "ko", "no", "dot"],
            "title": [
                "東京都で大雨 台風が接近",
                "서울 大雨 경보",
                "日本の名店 來台展店",
                "蘋果・三星 營收創新高",
            ],
            "published_at": pd.to_datetime(["2024-07-24T08:00Z"] * 4, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.97, 0.96]})
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord(model="m", conversion="tw2sp")
    files = write_report(tmp_path, pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    data = page_json(files["index.html"].read_text())
    lang = {
        it["id"]: data.get("titleLang", {}).get(str(i), data["cjkLang"]) for i, it in enumerate(data["items"])
    }
    assert lang == {"ja": "ja", "ko": "ko", "no": "zh-Hant", "dot": "zh-Hant"}


def test_the_plain_line_says_when_the_threshold_was_measured_on_texts_converted_otherwise(tmp_path):
    """A model calibrated on tw2sp texts, run on a mixed day with --convert none: the page's first line of
    trust gives the calibration's figures, and says they were measured on texts converted otherwise."""
    from nlsim.report.prose import plain_quality

    summary = _card_summary(tmp_path)
    summary["model_info"]["threshold_calibration"]["conversion"] = "tw2sp"
    assert "converted" not in plain_quality(RunRecord.from_dict(summary))
    line = plain_quality(RunRecord.from_dict({**summary, "conversion": "none"}))
    assert "About four in five of the pairs this model links" in line
    assert "measured on texts converted by OpenCC tw2sp, this run&#x27;s by none" in line


def _daily_page(**counts: int | None) -> str:
    """A daily run's page of four clusters: c-b1 grown (3 items, 2024-01-01), c-a1 new (2 items,
    2024-01-03), c-c1 dissolved (2 undated items) and c-d1 new (2 undated items); sources AP and AFP in two
    clusters each, "<R&D>", BBC, Reuters and UPI in one."""
    frame = pd.DataFrame(
        {
            "id": ["a1", "a2", "b1", "b2", "b3", "c1", "c2", "d1", "d2"],
            "title": ["A", "A", "B", "B", "B", "C", "C", "D", "D"],
            "source": ["AP", "AFP", "AP", "Reuters", "<R&D>", "AFP", "BBC", "UPI", "UPI"],
            "published_at": pd.to_datetime(
                ["2024-01-03T10:00Z", "2024-01-03T11:00Z", "2024-01-01T10:00Z", "2024-01-01T11:00Z"]
                + ["2024-01-01T12:00Z", None, None, None, None],
                utc=True,
            ),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2, 3, 5, 7], "b": [1, 3, 4, 6, 8], "similarity": [0.95] * 5})
    labels, clusters = batch_clusters(frame, pairs)
    status = {"c-a1": "new", "c-b1": "grown", "c-c1": "dissolved", "c-d1": "new"}
    clusters["status"] = clusters["cluster_id"].map(status)
    figures = {"items_in": 9, "clusters": 3, "clusters_in_window": 5} | counts
    record = RunRecord(
        model="m", threshold=0.9, mode="incremental", run_id="daily-1", counts=Counts(**figures)
    )
    return render_html(pairs_table(frame, pairs, labels), clusters, record, frame)


def _bars(page: str, heading: str) -> list[tuple[str, str, str]]:
    """One chart of the overview: each bar's label, the width of its fill and its count."""
    chart = page.split(f"<h3>{heading}</h3>")[1].split("</ul>")[0]
    return re.findall(r"class='label'>([^<]*)</span>.*?width:([\d.]+)%.*?class='count'>([^<]*)<", chart)


def test_the_overviews_charts_count_the_current_clusters_in_order_and_the_status_chart_every_one() -> None:
    """A daily page's overview: the size and day charts count the current clusters (a dissolved one left
    out), the sizes there are in the order of the buckets, the days in order with undated last, each bar's
    fill against the largest bar; the status chart counts every cluster listed, in the order of the
    statuses; the figures leave out one the run did not count, and the window's count is said only beside
    the run's."""
    page = _daily_page()
    assert _bars(page, "Clusters by size (items)") == [("2", "100.0", "2"), ("3", "50.0", "1")]
    assert _bars(page, "Clusters by day of their first item (UTC)") == [
        ("2024-01-01", "100.0", "1"),
        ("2024-01-03", "100.0", "1"),
        ("undated", "100.0", "1"),
    ]
    assert _bars(page, "Clusters by status in this run") == [
        ("new", "100.0", "2"),
        ("grown", "50.0", "1"),
        ("dissolved", "50.0", "1"),
    ]
    stats = page.split("<div class='stats'>")[1].split("</div></div>")[0]
    assert re.findall(r"class='n'>([^<]*)</span><span>([^<]*)<", stats) == [
        ("9", "items read"),
        ("3", "clusters"),
        ("5", "clusters in the window"),
    ]
    assert "(3 of the window's 5)" in page
    assert "of the window's" not in _daily_page(clusters=None)


def test_the_filters_list_sources_most_clusters_first_and_offer_undated_and_status_in_a_daily_page() -> None:
    """The filters of a daily page: sources by the clusters they are in, most first, ties by name, each
    name escaped; the days in order with undated last (offered when any cluster listed is undated); the
    status filter and sort; the header says which daily run it is."""
    page = _daily_page()
    controls = page.split("id='controls'")[1].split("id='shown'")[0]
    sources = controls.split("id='f-source'")[1].split("</select>")[0]
    assert re.findall(r"<option value='([^']*)'>\u2068([^\u2069]*)\u2069 \((\d+)\)", sources) == [
        ("AFP", "AFP", "2"),
        ("AP", "AP", "2"),
        ("%3CR%26D%3E", "&lt;R&amp;D&gt;", "1"),
        ("BBC", "BBC", "1"),
        ("Reuters", "Reuters", "1"),
        ("UPI", "UPI", "1"),
    ]
    periods = controls.split("id='f-period'")[1].split("</select>")[0]
    assert re.findall(r"<option value='([^']*)'", periods) == ["", "2024-01-01", "2024-01-03", "undated"]
    assert "<label>Day <select id='f-period'" in controls
    assert "id='f-status'" in controls and "<option value='status'>by status</option>" in controls
    assert "daily run daily-1" in page.split("<main>")[0]


def test_a_batch_page_opens_on_the_warnings_then_the_brief_the_stories_and_review_with_no_daily_parts() -> (
    None
):
    """The page opens on what an editor comes for: the warnings (a zero-shot model), the day in brief, the
    stories, the review panel, the rubric, then the model card and the overview; a batch page says it is
    one and has no status filter or sort, no window and no status chart."""
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "title": ["Story", "Story"],
            "source": ["AP", "AFP"],
            "published_at": pd.to_datetime(["2024-01-01"] * 2, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.95]})
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord.from_dict(
        {"model": "m", "threshold": 0.9, "model_info": {"requested": "current", "zero_shot": True}}
    )
    page = render_html(pairs_table(frame, pairs, labels), clusters, record, frame)
    main = page[page.index("<main>") :]
    order = ["id='zero-shot'", "id='brief'", "id='list'", "id='review'", "id='rubric'", "id='model'"]
    assert [main.index(part) for part in order] == sorted(main.index(part) for part in order)
    assert main.index("id='model'") < main.index("id='overview'")
    header = page.split("<main>")[0]
    assert "batch run" in header and "daily run" not in header
    assert "id='f-status'" not in page and "value='status'" not in page
    assert "clusters in the window" not in page and "Clusters by status" not in page
