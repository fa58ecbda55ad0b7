"""The top of the report page in Debian's Chromium with Playwright: the day in brief (its figures, its
largest stories and topic groups, each a link that opens them), the first screen in ``stories.json``'s
order, the stories plot beside the overview, the model switch said in words (fingerprints folded away), and
an older day whose items were all seen before."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.report.files import write_report
from nlsim.report.record import ModelInfo, ModelSwitch, RunRecord
from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus
from tests.report.test_review_page import chromium  # noqa: F401 (a fixture)
from tests.report.test_story_page import TITLES, VISIBLE, story_report

pytestmark = pytest.mark.slow
TOP = "el => el.getBoundingClientRect().top + window.scrollY"


def _config(corpus: Path, out: Path) -> DedupConfig:
    return DedupConfig.of(
        corpus=corpus, out=out, model="hash", convert="none", threshold=0.7, k=20, cache=False,
        progress=False, save_index=False, text_fields=("title",), cluster_rule="components",
    )  # fmt: skip


def _above_the_list(page: Any, selector: str) -> bool:
    return page.eval_on_selector(selector, TOP) < page.eval_on_selector("#list", TOP)


def test_the_day_in_brief_gives_the_days_figures_and_opens_its_largest_stories(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out, enc = tmp_path / "state", tmp_path / "out", HashEncoder()
    run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    counts = r2.stats.counts
    page = chromium.new_page()
    page.goto((out / "latest" / "index.html").as_uri())
    assert _above_the_list(page, "#brief")
    assert page.inner_text("#brief h2") == "The day in brief of 2005-03-02 (UTC)"
    figures = page.inner_text("#brief-figures")
    assert figures == (
        f"{counts.items_in} items read; {counts.clusters} stories ({counts.clusters_new} new, "
        f"{counts.clusters_grown} grown today) grouping {counts.clustered_items} items."
    )
    assert (counts.items_in, counts.clusters_new, counts.clusters_grown) == (3, 1, 1)
    clusters = pd.read_parquet(out / "latest" / "clusters.parquet")
    largest = clusters.sort_values(["size", "cluster_id"], ascending=[False, True], kind="mergesort")
    titles = dict(zip(story_corpus()["id"], story_corpus()["title"], strict=True))
    links = page.locator("#brief a.brief-story")
    assert links.all_inner_texts() == [titles[r] for r in largest["representative"]]
    links.first.click()  # the largest story opens in the list
    first = largest["cluster_id"].iloc[0]
    page.wait_for_selector(f"li[data-cluster='{first}'] details[open] .cbody")


def test_the_brief_opens_a_topic_group_and_the_first_screen_is_the_feeds_order(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    index = story_report(tmp_path / "r")
    page = chromium.new_page()
    page.goto(index.as_uri())
    assert page.inner_text("#brief h2") == "This run in brief"
    assert page.inner_text("#brief-figures") == "3 stories."  # a record without counts: the page's stories
    topic = page.locator("#brief a.brief-topic")
    assert topic.all_inner_texts() == [TITLES["s0"]]
    assert "3 stories, 6 items" in page.inner_text("#brief")
    topic.click()
    page.wait_for_selector("#topic-view:not([hidden])")
    assert TITLES["s0"] in page.inner_text("#topic-view h3")
    feed = json.loads((tmp_path / "r" / "stories.json").read_text(encoding="utf-8"))
    page.goto(index.as_uri())
    assert page.evaluate(VISIBLE) == [s["cluster_id"] for s in feed["stories"]]


def test_the_stories_plot_is_shown_beside_the_overview(chromium: Any, tmp_path: Path) -> None:  # noqa: F811
    index = story_report(tmp_path / "r")
    page = chromium.new_page()
    page.goto(index.as_uri())
    page.evaluate("document.getElementById('overview').scrollIntoView()")
    loaded = "img => img.complete && img.naturalWidth > 0"
    for name in ("overview.png", "stories.png"):
        img = f"#overview .plots img[src='{name}']"
        page.wait_for_function(f'({loaded})(document.querySelector("{img}"))')
        assert page.is_visible(img)
    boxes = [
        page.locator(f"#overview .plots img[src='{n}']").bounding_box()
        for n in ("overview.png", "stories.png")
    ]
    assert boxes[0]["y"] == pytest.approx(boxes[1]["y"], abs=2)  # side by side on a wide screen
    assert boxes[0]["x"] < boxes[1]["x"]


def _switched(folder: Path) -> Path:
    """The story report's data under a record of a model switch: version 1 to version 2 of the store."""
    story_report(folder)
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    switch = ModelSwitch(
        from_model="models/versions/v0001-aaaaaaaa",
        to_model="models/versions/v0002-bbbbbbbb",
        from_fingerprint="f" * 64,
        to_fingerprint="e" * 64,
        changed=["fingerprint"],
        details=["fingerprint: state has 'fff', this run uses 'eee'"],
        reembed=True,
        reembedded=1234,
    ).with_versions(
        ModelInfo(requested="current", version="v0001-aaaaaaaa", promoted_at="2026-02-20T09:00:00+00:00"),
        ModelInfo(requested="current", version="v0002-bbbbbbbb", promoted_at="2026-03-01T10:00:00+00:00"),
    )
    record = RunRecord.from_dict({**run, "mode": "incremental", "model_switch": None})
    frame = pd.DataFrame({"id": list(TITLES), "title": list(TITLES.values())})
    clusters = pd.read_parquet(folder / "clusters.parquet")
    write_report(
        folder,
        pd.read_parquet(folder / "pairs.parquet"),
        clusters,
        replace(record, model_switch=switch),
        frame,
    )
    return folder / "index.html"


def test_a_model_switch_says_in_words_which_model_and_what_changed(chromium: Any, tmp_path: Path) -> None:  # noqa: F811
    page = chromium.new_page()
    page.goto(_switched(tmp_path / "r").as_uri())
    banner = page.locator("#model-switch")
    assert _above_the_list(page, "#model-switch")
    text = banner.inner_text()
    before = "models/versions/v0001-aaaaaaaa (version v0001-aaaaaaaa of the model store, promoted 2026-02-20)"
    now = "models/versions/v0002-bbbbbbbb (version v0002-bbbbbbbb of the model store, promoted 2026-03-01)"
    assert f"Before this run the stories were made with {before}; this run uses {now}." in text
    assert "What changed: the model was retrained (a newer version was promoted)." in text
    assert "All 1,234 items of the window were embedded again" in text
    fingerprint = page.locator("#model-switch details li", has_text="f" * 64)
    assert not fingerprint.is_visible()  # folded away
    page.click("#model-switch details summary")
    assert fingerprint.is_visible()


def test_an_older_day_whose_items_were_all_seen_says_so_at_the_top(chromium: Any, tmp_path: Path) -> None:  # noqa: F811
    corpus = story_corpus().assign(published_at=lambda f: f["published_at"] + pd.DateOffset(years=21))
    days = split_days(corpus, tmp_path / "in", ["2026-03-02", "2026-03-03"])
    state, out, enc = tmp_path / "state", tmp_path / "out", HashEncoder()
    run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    again = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    assert again.stats.older_day and again.stats.all_seen
    page = chromium.new_page()
    page.goto((again.report_dir / "index.html").as_uri())
    notice = page.inner_text("#day-notice")
    assert "An older day." in notice and "this day was run after a later one" in notice
    assert f"runs/{again.run_id}/" in notice and "latest still shows the newer report" in notice
    assert "Nothing new. All 6 items of this run were already in the window with the same text" in notice
    assert _above_the_list(page, "#day-notice")
    page.goto((r2.report_dir / "index.html").as_uri())  # a day with new items: no such notice
    assert page.locator("#day-notice").count() == 0


def test_a_title_that_holds_a_whole_article_is_cut_in_the_lists_and_whole_in_the_opened_story(
    chromium: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A feed that put an article's body in its title field: the day in brief and the story's row show its
    first 300 characters with "…" (the whole title in the tooltip), not 45,000 characters over a dozen
    screens; the opened story's items show it whole."""
    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table
    from nlsim.report.page import TITLE_CHARS

    body = "Floods hit the north " + "and the rain went on " * 2_000
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": [body, body, "Rates held", "Rates held again"],
            "source": ["AP", "AFP", "AP", "AFP"],
            "published_at": pd.to_datetime(["2024-08-01T08:00Z", "2024-08-01T09:00Z"] * 2, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.97, 0.93]})
    labels, clusters = batch_clusters(frame, pairs)
    write_report(tmp_path, pairs_table(frame, pairs, labels), clusters, RunRecord(model="m"), frame=frame)
    page = chromium.new_page()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto((tmp_path / "index.html").as_uri())
    shown = " ".join(body.split())[:TITLE_CHARS] + "…"
    brief = page.locator("#brief a.brief-story").first
    assert brief.inner_text() == shown
    assert page.eval_on_selector("#brief", "el => el.getBoundingClientRect().height") < 400
    row = "li[data-cluster='c-a'] > details > summary"
    assert page.inner_text(f"{row} .rep .t") == shown
    assert page.eval_on_selector(f"{row} .rep .t", "el => el.title").startswith("Floods hit the north and")
    assert page.eval_on_selector(row, "el => el.getBoundingClientRect().height") < 200
    assert _above_the_list(page, "#brief") and page.eval_on_selector("li[data-cluster='c-c']", TOP) < 900
    page.eval_on_selector("li[data-cluster='c-a'] details", "el => { el.open = true; }")
    whole = page.inner_text("li[data-cluster='c-a'] .cbody tbody td.t")
    assert whole == " ".join(body.split())


def test_the_guide_says_how_much_of_a_cut_title_its_tooltip_holds() -> None:
    """docs/report.md said a title cut in a list is whole in its tooltip; the tooltip holds its first
    :data:`~nlsim.report.page.TOOLTIP_CHARS` characters (a 45,000-character title is not whole there)."""
    from nlsim.report.page import TOOLTIP_CHARS, short_title

    guide = " ".join((Path(__file__).parents[2] / "docs" / "report.md").read_text(encoding="utf-8").split())
    _, tip = short_title("Floods " * 10_000)
    assert tip is not None and len(tip) == TOOLTIP_CHARS + 1  # its first characters and "…"
    assert f"its first {TOOLTIP_CHARS:,} characters in its tooltip" in guide
    assert "whole in its tooltip" not in guide


def test_a_day_of_one_item_seen_before_or_embedded_again_says_it_in_the_singular() -> None:
    """A day whose one item was already in the window said "All 1 items of this run were already in the
    window ... none was embedded again, and no story grew from them", and a model switch that embedded one
    item again "All 1 items of the window were embedded again"; both speak of the one item."""
    from nlsim.report.prose import day_notices, switch_notice
    from nlsim.report.record import Counts

    (notice,) = day_notices(RunRecord(model="m", counts=Counts(items_in=1), all_seen=True))
    assert (
        "Nothing new.</strong> The 1 item of this run was already in the window with the same text: it was "
        "not embedded again, and no story grew from it." in notice
    )
    switched = RunRecord(
        model="m",
        counts=Counts(items_in=1),
        all_seen=True,
        model_switch=ModelSwitch(from_model="a", to_model="b", reembed=True, reembedded=1),
    )
    assert "it is not new, but the whole window was embedded again" in day_notices(switched)[0]
    banner = switch_notice(ModelSwitch(from_model="a", to_model="b", reembed=True, reembedded=1))
    assert "The 1 item of the window was embedded again with the new model" in banner
    (many,) = day_notices(RunRecord(model="m", counts=Counts(items_in=2), all_seen=True))
    assert "All 2 items of this run were already in the window with the same text: none was embedded" in many
