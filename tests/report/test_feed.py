"""``stories.json``, the day's stories for other systems, and ``stories.png``, the stories over time: a daily
run's feed holds what ``clusters.parquet`` holds, in the page's first order; a failed run leaves the
previous feed intact."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.report.feed import FEED_SCHEMA_VERSION
from nlsim.report.files import verify_report
from nlsim.report.page import first_screen_order, page_zone
from tests.faults import interrupted_at
from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus


def _config(corpus: Path, out: Path) -> DedupConfig:
    return DedupConfig.of(
        corpus=corpus, out=out, model="hash", convert="none", threshold=0.7, k=20, cache=False,
        progress=False, save_index=False, text_fields=("title",), cluster_rule="components",
        timezone="Asia/Taipei",
    )  # fmt: skip


def _when(value: object) -> pd.Timestamp | None:
    return None if value is None or pd.isna(value) else pd.Timestamp(value)


def test_a_daily_runs_feed_matches_its_clusters_file(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out, enc = tmp_path / "state", tmp_path / "out", HashEncoder()
    run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    folder = out / "latest"
    feed = json.loads((folder / "stories.json").read_text(encoding="utf-8"))
    assert "stories.json" in verify_report(folder)["files"]  # hashed in run.json, with the others
    assert feed["schema_version"] == FEED_SCHEMA_VERSION and feed["run_id"] == r2.run_id
    assert feed["mode"] == "daily" and feed["timezone"] == "Asia/Taipei"
    assert feed["model"]["name"] == enc.model_id and feed["model"]["fingerprint"] == enc.fingerprint
    assert feed["as_of"].endswith("+08:00") and feed["written_at"].endswith("+08:00")
    # the spreadsheets give the same times as the feed: ISO 8601 with the run's offset
    sheet = pd.read_csv(folder / "members.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    times = {s["representative"]["id"]: s["representative"]["published_at"] for s in feed["stories"]}
    assert {i: sheet.set_index("item_id").loc[i, "published_at"] for i in times} == times
    assert all(t.endswith("+08:00") for t in times.values())

    clusters = pd.read_parquet(folder / "clusters.parquet")
    titles = dict(zip(story_corpus()["id"], story_corpus()["title"], strict=True))
    order = first_screen_order(clusters, page_zone("Asia/Taipei"))
    assert [s["cluster_id"] for s in feed["stories"]] == clusters["cluster_id"].iloc[order].tolist()
    assert {s["status"] for s in feed["stories"]} == {"grown", "new"}
    for story, row in zip(feed["stories"], clusters.iloc[order].itertuples(), strict=True):
        assert story["status"] == row.status and story["size"] == row.size
        assert story["topic_id"] == (None if pd.isna(row.topic_id) else row.topic_id)
        assert story["member_ids"] == list(row.member_ids) and story["added_ids"] == list(row.added_ids)
        assert [m["title"] for m in story["members"]] == [titles[m] for m in row.member_ids]
        assert story["representative"]["id"] == row.representative
        assert story["representative"]["title"] == titles[row.representative]
        for name in ("first_published", "last_published"):
            assert story[name].endswith("+08:00")  # ISO 8601, the run's offset
            assert _when(story[name]) == _when(getattr(row, name))


@pytest.mark.slow
def test_a_failed_daily_run_leaves_the_previous_feed_intact(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out, enc = tmp_path / "state", tmp_path / "out", HashEncoder()
    r1 = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    before = (out / "latest" / "stories.json").read_bytes()
    with interrupted_at("report-write"):
        run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    assert (out / "latest").resolve() == r1.report_dir.resolve()
    assert (out / "latest" / "stories.json").read_bytes() == before
    assert sorted(p.name for p in (out / "runs").iterdir() if not p.name.startswith(".")) == [r1.run_id]


def test_stories_png_is_written_beside_the_overview(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    r1 = run_daily(
        _config(days[0], tmp_path / "out"), tmp_path / "state", retention_days=None, encoder=HashEncoder()
    )
    png = r1.report_dir / "stories.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "stories.png" in verify_report(r1.report_dir)["files"]
    page = (r1.report_dir / "index.html").read_text(encoding="utf-8")
    assert "<img src='stories.png'" in page and "<img src='overview.png'" in page
