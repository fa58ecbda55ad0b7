"""The editors' first screen and tools on the report page, driven in Debian's Chromium with Playwright: the
stories listed latest activity first, each with its topic, a topic opened on its stories and single items;
verdict buttons on training pairs (the export's ``overrule`` column) and none on held-out pairs; a
"same story" mark between two clusters previewed as the story rule joins them; the card of the editors'
verdicts that changed a cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from nlsim.clusters.table import batch_clusters
from nlsim.io import editor_file
from nlsim.report.files import pairs_table, write_report
from nlsim.report.near_misses import near_miss_pairs, near_miss_table
from nlsim.report.record import JOINED, SPLIT, ClusterChange, EditorsRecord, RunRecord, StoryRule
from tests.report.test_review_page import chromium, stored  # noqa: F401 (a fixture)

MARKS = "Object.values(JSON.parse(localStorage.getItem('nlsim-review:batch-story00001') || '{}').marks || {})"

pytestmark = pytest.mark.slow
VISIBLE = "[...document.querySelectorAll('#clusters > li.cluster')].map(li => li.dataset.cluster)"
ROWS = [
    ("s0", "颱風海葵登陸臺東 全臺停班停課", "2024-08-01T08:00Z"),
    ("s1", "海葵颱風登陸臺東，全臺停班停課", "2024-08-01T09:00Z"),
    ("s2", "颱風海葵登陸：臺東縣停班停課", "2024-08-01T10:30Z"),
    ("x0", "颱風過後 臺東農損統計出爐", "2024-08-02T02:00Z"),
    ("t0", "海葵颱風災後 臺東搶修電力", "2024-08-03T04:00Z"),
    ("t1", "臺東電力搶修進度：八成恢復供電", "2024-08-03T05:00Z"),
    ("b0", "立法院三讀通過總預算案", "2024-08-05T03:00Z"),
    ("b1", "立法院今三讀通過中央政府總預算", "2024-08-05T04:00Z"),
    ("y0", "He said no twice and left again", "2024-08-04T05:00Z"),
]
TITLES = {i: t for i, t, _ in ROWS}


def story_report(folder: Path, editors: EditorsRecord | None = None, rule: StoryRule | None = None) -> Path:
    """A batch report at threshold 0.9: the typhoon story (3 items, the oldest), its follow-up on the power
    (2 items) and a lone item of the same topic group, the budget story (2 items, the latest) of no topic,
    one lone item of none; near misses between the stories."""
    frame = pd.DataFrame(ROWS, columns=["id", "title", "published_at"]).assign(source="wire", url="")
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    pairs = pd.DataFrame({"a": [0, 1, 4, 6], "b": [1, 2, 5, 7], "similarity": [0.97, 0.95, 0.96, 0.93]})
    below = pd.DataFrame({"a": [2, 5, 0], "b": [4, 6, 3], "similarity": [0.88, 0.85, 0.8]})
    labels, clusters = batch_clusters(frame, pairs)
    topic = {"c-s0": "p-s0", "c-t0": "p-s0"}
    clusters["topic_id"] = [topic.get(c) for c in clusters["cluster_id"]]
    topics = pd.DataFrame(
        {
            "topic_id": ["p-s0"],
            "size": [6],
            "stories": [3],
            "cluster_ids": [["c-s0", "c-t0"]],
            "member_ids": [["s0", "s1", "s2", "x0", "t0", "t1"]],
            "representative": ["s0"],
            "representative_title": [TITLES["s0"]],
            "first_published": pd.to_datetime(["2024-08-01T08:00Z"], utc=True),
            "last_published": pd.to_datetime(["2024-08-03T05:00Z"], utc=True),
        }
    )
    missed = near_miss_pairs(below, labels, 10)
    cluster_of = {i: c for i, c in zip(frame["id"], labels, strict=True) if c is not None}
    near = near_miss_table(pairs_table(frame, missed, labels), cluster_of)
    record = RunRecord(
        run_id="batch-story00001",
        model="m",
        threshold=0.9,
        threshold_source="given with --threshold",
        editors=editors,
        story_rule=rule,
    )
    write_report(
        folder,
        pairs_table(frame, pairs, labels),
        clusters,
        record,
        frame=frame,
        near_misses=near,
        topics=topics,
    )
    return folder / "index.html"


def test_the_first_screen_lists_stories_latest_first_each_with_its_topic_and_opens_a_topic(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    page = chromium.new_page()
    page.goto(story_report(tmp_path / "r").as_uri())
    # the stories, latest activity first (the largest, the typhoon, is the oldest: last)
    assert page.evaluate(VISIBLE) == ["c-b0", "c-t0", "c-s0"]
    assert page.input_value("#sort") == "recent"
    labels = page.eval_on_selector_all(
        "#clusters li.cluster", "lis => lis.map(li => (li.querySelector('.topic-label') || {}).textContent)"
    )
    assert labels[0] is None  # the budget story has no topic
    assert labels[1] == labels[2] == f"topic: {TITLES['s0']} · 3 stories"
    page.select_option("#sort", "size")  # the largest first, on request
    assert page.evaluate(VISIBLE)[0] == "c-s0"

    # a topic opened: its stories and its single item, and the list holds its stories only
    page.click("li[data-cluster='c-t0'] .topic-label")
    assert page.is_visible("#topic-view")
    assert not page.eval_on_selector(
        "li[data-cluster='c-t0'] details", "d => d.open"
    )  # the label, not the story
    stories = page.eval_on_selector_all(
        "#topic-view .topic-stories li", "lis => lis.map(li => li.dataset.cluster)"
    )
    assert stories == ["c-s0", "c-t0"]
    singles = page.eval_on_selector_all(
        "#topic-view .topic-singles li", "lis => lis.map(li => li.textContent)"
    )
    assert singles == [TITLES["x0"]]
    assert sorted(page.evaluate(VISIBLE)) == ["c-s0", "c-t0"]
    page.click("#topic-close")
    assert page.is_hidden("#topic-view") and len(page.evaluate(VISIBLE)) == 3
    page.close()


def test_training_pairs_have_verdict_buttons_that_overrule_and_held_out_pairs_say_why_not(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    training, held = editor_file.pair_id("s0", "s1"), editor_file.pair_id("b0", "b1")
    editors = EditorsRecord(
        source="pairs.tsv", scored_ids=[training, held], training_ids=[training], held_out_ids=[held]
    )
    context = chromium.new_context(accept_downloads=True)
    page = context.new_page()
    page.goto(story_report(tmp_path / "r", editors).as_uri())

    page.click("li[data-cluster='c-b0'] summary")  # the held-out pair: no buttons, and why
    held_row = "li[data-cluster='c-b0'] tr.rv-held"
    page.wait_for_selector(held_row)
    assert page.locator("li[data-cluster='c-b0'] tr.rv-held button.rv-level").count() == 0
    assert "held out" in page.text_content(held_row)
    assert "measure the model" in page.get_attribute(f"{held_row} td.rv", "title")

    page.click("li[data-cluster='c-s0'] summary")  # the training pair: buttons, and a word on overruling
    row = "li[data-cluster='c-s0'] tr.rv-row[data-overrule='1']"
    page.wait_for_selector(row)
    assert page.eval_on_selector_all(row, "rs => rs.length") == 1
    assert "your verdict overrules it" in page.text_content(row)
    plain = "li[data-cluster='c-s0'] tr.rv-row:not([data-overrule])"  # s1-s2: never scored
    page.click(f"{plain} button.rv-level[data-v='1']")
    page.click(f"{row} button.rv-level[data-v='0']")  # not the same story: overrules the annotator's score
    assert stored(page, "batch-story00001") == {("s0", "s1"): 0.0, ("s1", "s2"): 1.0}

    page.fill("#rv-annotator", "Mei")
    with page.expect_download() as done:
        page.click("#rv-export")
    export = tmp_path / "marks.csv"
    done.value.save_as(export)
    marks = pd.read_csv(export, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    page_columns = [*editor_file.COLUMNS, *editor_file.HASH_COLUMNS, editor_file.MARKED_AT]
    assert list(marks.columns) == [*page_columns, editor_file.OVERRULE]
    got = {(r.id_a, r.id_b): r.overrule for r in marks.itertuples()}
    assert got == {("s0", "s1"): "true", ("s1", "s2"): "false"}
    assert editor_file.scores_held(export) == 2  # an editors' file, which a draw never overwrites

    # an export of no overruling mark has no overrule column
    page.click("li[data-cluster='c-t0'] summary")
    page.click("li[data-cluster='c-t0'] tr.rv-row button.rv-level[data-v='1']")
    with page.expect_download() as done:
        page.click("#rv-export")
    done.value.save_as(export)
    marks = pd.read_csv(export, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert list(marks.columns) == page_columns
    context.close()


def _export(page: Any, button: str, path: Path) -> pd.DataFrame:
    """Click the page's export ``button``, keep the download at ``path``; its rows."""
    with page.expect_download() as done:
        page.click(button)
    done.value.save_as(path)
    return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")


def test_an_editor_gives_their_score_back_after_a_colleagues_overrule_by_marking_it_again(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Mei overrules the annotators' 0.75 of s0/s1 with 0 in the page; bob overrules her back to 0.75.
    Mei's *Export all marks* sends her old mark again: it undoes nothing. She marks 0 again in the page: the
    export carries the new mark's time, and her decision stands over bob's."""
    from nlsim.annotation.merge import merge_annotations
    from nlsim.clusters.verdicts import load_verdicts, store_path

    training = editor_file.pair_id("s0", "s1")
    editors = EditorsRecord(source="pairs.tsv", scored_ids=[training], training_ids=[training])
    pairs = tmp_path / "pairs.tsv"
    head = "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\n"
    pairs.write_text(head + f"p0\ts0\ts1\t{TITLES['s0']}\t{TITLES['s1']}\t0.75\ttrain\n", encoding="utf-8")

    def merged(path: Path) -> tuple[float, str]:
        merge_annotations(path, pairs, log=lambda _: None)
        held = load_verdicts(store_path(pairs)).get(("s0", "s1"))
        assert held is not None
        return held.score, held.annotator

    context = chromium.new_context(accept_downloads=True)
    page = context.new_page()
    page.goto(story_report(tmp_path / "r", editors).as_uri())
    page.fill("#rv-annotator", "Mei")
    row = "li[data-cluster='c-s0'] tr.rv-row[data-overrule='1']"
    page.click("li[data-cluster='c-s0'] summary")
    page.wait_for_selector(row)
    page.click(f"{row} button.rv-level[data-v='0']")
    first = _export(page, "#rv-export", tmp_path / "marks-1.csv")
    assert first[editor_file.MARKED_AT].tolist() == [m["at"] for m in page.evaluate(MARKS)]
    assert merged(tmp_path / "marks-1.csv") == (0.0, "Mei")

    bob = first.assign(score="0.75", annotator="bob")
    bob[editor_file.MARKED_AT] = pd.Timestamp.now(tz="UTC").isoformat()
    bob.to_csv(tmp_path / "bob.csv", index=False)
    assert merged(tmp_path / "bob.csv") == (0.75, "bob")
    page.wait_for_timeout(20)

    _export(page, "#rv-export-all", tmp_path / "marks-2.csv")  # her old mark, sent again
    assert merged(tmp_path / "marks-2.csv") == (0.75, "bob")
    page.click("#rv-marked summary")  # her marks, each with its buttons
    mine = "#rv-marked tr.rv-row button.rv-level"
    page.click(f"{mine}[data-v='0.75']")
    page.click(f"{mine}[data-v='0']")  # marked 0 again: a new decision
    _export(page, "#rv-export", tmp_path / "marks-3.csv")
    assert merged(tmp_path / "marks-3.csv") == (0.0, "Mei")
    context.close()


def test_a_same_story_mark_between_two_stories_previews_the_join_the_rule_makes(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    rule = StoryRule("support", min_share=0.4, large=5, large_floor=0.91)
    page = chromium.new_page()
    page.goto(story_report(tmp_path / "r", rule=rule).as_uri())
    # the near miss s2-t0 between the typhoon story and its follow-up, marked the same story
    near = page.locator("#rv-near tr.rv-row", has=page.locator(f"text={TITLES['t0']}")).filter(
        has=page.locator(f"text={TITLES['s2']}")
    )
    near.locator("button.rv-level[data-v='1']").click()
    assert page.evaluate(VISIBLE) == ["c-b0", "c-s0"]
    members = page.evaluate(
        "nlsimReport.data.clusters.filter(c => c.cluster_id === 'c-s0')"
        ".map(c => c.member_ids.map(i => nlsimReport.data.items[i].id))[0]"
    )
    assert members == ["s0", "s1", "s2", "t0", "t1"]  # a must-link joins whatever the large conditions say
    badge = page.text_content("li[data-cluster='c-s0'] .badge.preview")
    assert badge == "joined by your mark with c-t0 (preview)"
    assert page.text_content("li[data-cluster='c-s0'] .size") == "5 items"

    # a "not the same story" between the two stories as well: the editor's "no" wins over the chain; the
    # "same story" still joins its two items, and the rule parts the rest (must-links first, then the
    # strongest links, never two groups holding the "no")
    page.click("li[data-cluster='c-s0'] summary")
    pick = "li[data-cluster='c-s0'] tr[data-item] button.rv-pick"
    items = page.eval_on_selector_all(pick, "bs => bs.map(b => nlsimReport.data.items[b.dataset.item].id)")
    page.locator(pick).nth(items.index("s0")).click()
    page.locator(pick).nth(items.index("t1")).click()
    page.click("#rv-picked button.rv-level[data-v='0']")
    groups = page.evaluate(
        "Object.fromEntries(nlsimReport.data.clusters.map(c => "
        "[c.cluster_id, c.member_ids.map(i => nlsimReport.data.items[i].id)]))"
    )
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import Link, SharedSupport

    python_rule = SharedSupport(min_share=0.4, large=5, large_floor=0.91)
    links = [Link("s0", "s1", 0.97), Link("s1", "s2", 0.95), Link("t0", "t1", 0.96), Link("b0", "b1", 0.93)]
    both = LinkConstraints.from_pairs(must=[("s2", "t0")], cannot=[("s0", "t1")])
    assert (
        sorted(groups.values())
        == python_rule.clusters(links, both)
        == [["b0", "b1"], ["s0", "s1"], ["s2", "t0", "t1"]]
    )
    # each named as the next (batch) report names a cluster: by its earliest item, s2 for s2/t0/t1
    assert groups == {"c-b0": ["b0", "b1"], "c-s0": ["s0", "s1"], "c-s2": ["s2", "t0", "t1"]}

    # the same join the report's own rule makes (the port and the Python rule agree)
    assert python_rule.clusters(links, LinkConstraints.from_pairs(must=[("s2", "t0")]))[1] == members
    page.close()


def test_a_cluster_changed_by_editors_verdicts_shows_which_joined_or_split_it(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    editors = EditorsRecord(
        source="pairs.tsv",
        verdicts=2,
        acting=2,
        decisions=[["s0", "s2", 1.0], ["t1", "b0", 0.0]],
        cluster_changes=[
            ClusterChange("s0", "s2", 1.0, JOINED, ["c-s0"]),
            ClusterChange("t1", "b0", 0.0, SPLIT, ["c-t0", "c-b0"]),
        ],
    )
    page = chromium.new_page()
    page.goto(story_report(tmp_path / "r", editors).as_uri())
    badges = page.eval_on_selector_all(
        "#clusters li.cluster", "lis => lis.map(li => !!li.querySelector('.badge.verdicts'))"
    )
    assert dict(zip(page.evaluate(VISIBLE), badges, strict=True)) == {
        "c-b0": True,
        "c-t0": True,
        "c-s0": True,
    }
    page.click("li[data-cluster='c-s0'] summary")
    card = page.text_content("li[data-cluster='c-s0'] .verdict-card")
    assert f"joined: an editor said {TITLES['s0']} and {TITLES['s2']} are the same story" in card
    page.click("li[data-cluster='c-t0'] summary")
    card = page.text_content("li[data-cluster='c-t0'] .verdict-card")
    assert f"split: an editor said {TITLES['t1']} is not the same story as {TITLES['b0']}" in card
    assert "(in c-b0)" in card
    page.click("li[data-cluster='c-b0'] summary")
    assert "(in c-t0)" in page.text_content("li[data-cluster='c-b0'] .verdict-card")
    page.close()


def test_a_verdicts_note_is_shown_on_its_clusters_card_and_in_the_editors_decisions(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    """An editor's note on a verdict (the verdict store's ``notes``) was in neither the page's data nor the
    page: the cluster's card and the list of the editors' decisions now show it whole, as text (markup in
    it shown as written); a verdict without a note shows none. A verdict giving the annotators' own score
    is said on its card to confirm it, not to overrule it."""
    note = "Wire copy <b>of</b> the same flood, " + "sent again with a longer lead " * 6
    editors = EditorsRecord(
        source="pairs.tsv",
        verdicts=2,
        acting=2,
        decisions=[["s0", "s2", 1.0], ["t1", "b0", 0.0]],
        cluster_changes=[
            ClusterChange("s0", "s2", 1.0, JOINED, ["c-s0"], confirms=True),
            ClusterChange("t1", "b0", 0.0, SPLIT, ["c-t0", "c-b0"], overrules=True, notes=note),
        ],
        notes=[["t1", "b0", note]],
    )
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(story_report(tmp_path / "r", editors).as_uri())
    data = json.loads(page.text_content("#nlsim-data"))
    assert [d.get("notes") for d in data["editors"]["decisions"]] == [None, note]
    page.click("li[data-cluster='c-t0'] summary")
    card = page.text_content("li[data-cluster='c-t0'] .verdict-card")
    assert f"(overruling the annotators’ score)Editor’s note: {note}" in card
    assert page.locator("li[data-cluster='c-t0'] .verdict-card b").count() == 0  # text, never markup
    page.click("li[data-cluster='c-s0'] summary")
    confirmed = page.text_content("li[data-cluster='c-s0'] .verdict-card")
    assert "note" not in confirmed and "overruling" not in confirmed
    assert confirmed.endswith("(confirming the annotators’ score)")  # a confirmation is said as one
    page.click("#rv-decisions summary")
    rows = "#rv-decisions tbody tr"
    said = page.eval_on_selector_all(rows, "rows => rows.map(r => r.cells[0].textContent)")
    assert said == ["same story: joined", f"not the same story: kept apartEditor’s note: {note}"]
    assert errors == []
    page.close()


def test_a_cluster_no_verdict_changed_has_no_card(chromium: Any, tmp_path: Path) -> None:  # noqa: F811
    page = chromium.new_page()
    page.goto(story_report(tmp_path / "r", EditorsRecord(source="pairs.tsv")).as_uri())
    page.click("li[data-cluster='c-s0'] summary")
    assert page.locator(".verdict-card").count() == 0 and page.locator(".badge.verdicts").count() == 0
    assert json.loads(page.text_content("#nlsim-data"))["clusters"][0]["verdicts"] == []
    page.close()
