"""Incremental runs: stable cluster ids, the merge rule, and N daily runs == one run over everything."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nlsim.clusters.order import order_key_of
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup
from nlsim.dedup.state import open_state
from nlsim.errors import InputError
from tests.faults import interrupted_at
from tests.incremental_helpers import (
    FAST_MODEL,
    HashEncoder,
    batch_assignment,
    bbc_corpus,
    report_content,
    run_daily,
    split_days,
    state_assignment,
    state_pairs,
    story_corpus,
)

T = pd.Timestamp("2024-01-01", tz="UTC")


def _keys(spec: dict[str, int]) -> dict[str, tuple[int, int, str]]:
    return {i: order_key_of(T + pd.Timedelta(hours=h), i) for i, h in spec.items()}


# --- whole runs with a deterministic encoder -----------------------------------------------------------


def _config(corpus: Path, out: Path, **kw: object) -> DedupConfig:
    base = dict(
        model="hash",
        convert="none",
        threshold=0.7,
        k=20,
        cache=False,
        progress=False,
        save_index=False,
        text_fields=("title",),
        cluster_rule="components",  # story_corpus's bridge x1 joins A and B under this rule only
    )
    base.update(kw)
    return DedupConfig.of(corpus=corpus, out=out, **base)


@pytest.mark.slow
def test_three_daily_runs_keep_ids_and_report_changes(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    a1 = state_assignment(state)
    assert a1 == {"a1": "c-a1", "a2": "c-a1", "b1": "c-b1", "b2": "c-b1"}
    status = sorted(zip(r1.clusters["cluster_id"], r1.clusters["status"], strict=True))
    assert status == [("c-a1", "new"), ("c-b1", "new")]

    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    a2 = state_assignment(state)
    assert all(a2[i] == c for i, c in a1.items())  # every item keeps its id
    assert a2["a3"] == "c-a1" and a2["c1"] == a2["c2"] == "c-c1"
    status = dict(zip(r2.clusters["cluster_id"], r2.clusters["status"], strict=True))
    assert status == {"c-a1": "grown", "c-c1": "new"}
    assert r2.stats.counts.new == 3 and r2.stats.counts.skipped == 0

    r3 = run_daily(_config(days[2], out), state, retention_days=None, encoder=enc)
    a3 = state_assignment(state)
    assert {i for i, c in a3.items() if c == "c-a1"} == {"a1", "a2", "a3", "b1", "b2", "x1"}
    assert a3["c1"] == "c-c1" and a3["d1"] == a3["d2"] == "c-d1"
    status = dict(zip(r3.clusters["cluster_id"], r3.clusters["status"], strict=True))
    assert status == {"c-a1": "merged", "c-d1": "new"}
    merged = r3.clusters.set_index("cluster_id").loc["c-a1"]
    assert list(merged["absorbed"]) == ["c-b1"] and list(merged["added_ids"]) == ["x1"]
    assert r3.stats.counts.clusters_merged == 1 and r3.stats.counts.clusters_absorbed == 1

    # the report of the latest run is where `latest` points, and the state keeps every run's figures
    assert (out / "latest").resolve() == r3.report_dir.resolve()
    assert report_content(out / "latest")["run"]["counts"]["clusters_new"] == 1
    runs = sorted(p.stem for p in (state / "runs").glob("*.json"))
    assert runs == sorted([r1.run_id, r2.run_id, r3.run_id])
    saved = json.loads((state / "runs" / f"{r3.run_id}.json").read_text())
    assert saved["model"] == enc.model_id and saved["threshold"] == 0.7
    assert set(saved["timings_s"]) >= {"load", "embed", "index", "neighbors", "cluster", "commit", "report"}

    # the same items in one batch run: same clusters, same ids
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch"), encoder=enc)
    assert batch_assignment(batch.clusters) == a3


@pytest.mark.slow
def test_a_bridging_item_does_not_merge_two_stories_under_the_support_rule(tmp_path: Path) -> None:
    """The support rule reads every link of the window: x1 links to both stories but is no member of
    either strongly enough to join them, and three daily runs still equal one batch run."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    for day in days:
        run_daily(_config(day, out, cluster_rule="support"), state, retention_days=None, encoder=enc)
    daily = state_assignment(state)
    assert daily["a1"] == daily["a2"] == daily["a3"] == "c-a1" and daily["b1"] == daily["b2"] == "c-b1"
    assert daily.get("x1") in {"c-a1", "c-b1", None}  # it joins one story at most
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(
        _config(tmp_path / "all.parquet", tmp_path / "batch", cluster_rule="support"), encoder=enc
    )
    assert batch_assignment(batch.clusters) == daily


@pytest.mark.slow
def test_repeat_is_idempotent_and_edits_are_reembedded(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    before = report_content(r1.report_dir)
    again = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    assert again.replayed and again.run_id == r1.run_id
    assert report_content(again.report_dir) == before
    # an edited item (same id, other text) is re-embedded and matched again; the rest is skipped
    edited = pd.read_parquet(days[0])
    edited.loc[edited["id"] == "c1", "title"] = "alpha beta gamma delta"
    edited.to_parquet(tmp_path / "edited.parquet", index=False)
    r2 = run_daily(_config(tmp_path / "edited.parquet", out), state, retention_days=None, encoder=enc)
    c = r2.stats.counts
    assert (c.new, c.changed, c.skipped) == (0, 1, 5)
    assert state_assignment(state)["c1"] == "c-a1"


@pytest.mark.slow
def test_an_item_sent_again_with_a_corrected_time_takes_it(tmp_path: Path) -> None:
    """Same id, same text, another published_at: the window, the report and retention take the new time
    (it was skipped, and the window kept the old one for good)."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    resent = pd.read_parquet(days[0]).query("id == 'a2'")
    fixed = resent["published_at"].iloc[0] + pd.Timedelta(hours=30)
    resent.assign(published_at=fixed).to_parquet(tmp_path / "resent.parquet", index=False)
    r2 = run_daily(_config(tmp_path / "resent.parquet", out), state, retention_days=None, encoder=enc)
    c = r2.stats.counts
    assert (c.new, c.changed, c.skipped) == (0, 1, 0)
    items = open_state(state).items.set_index("id")
    assert items.loc["a2", "published_at"] == fixed and items.loc["a2", "retain_from"] == fixed
    assert state_assignment(state)["a2"] == "c-a1"  # the story keeps its id
    window = pd.read_parquet(r2.report_dir / "window" / "clusters.parquet").set_index("cluster_id")
    assert window.loc["c-a1", "last_published"] == fixed


@pytest.mark.slow
def test_an_item_sent_again_with_a_corrected_link_or_source_takes_it(tmp_path: Path) -> None:
    """Same id, text and time, another url or source: the report shows the correction (it was skipped, and
    the report kept the old link for good); a row sent again without its url keeps the kept one."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    first = pd.read_parquet(days[0]).assign(url=lambda d: "https://news.example/old/" + d["id"])
    first.to_parquet(tmp_path / "day1.parquet", index=False)
    run_daily(_config(tmp_path / "day1.parquet", out), state, retention_days=None, encoder=enc)
    resent = first.query("id in ['a2', 'b1', 'c1']").copy()
    resent.loc[resent["id"] == "a2", "url"] = "https://news.example/fixed/a2"
    resent.loc[resent["id"] == "b1", "source"] = "cna"
    resent.loc[resent["id"] == "c1", "url"] = ""  # not given again: the kept link stays
    resent.to_parquet(tmp_path / "resent.parquet", index=False)
    r2 = run_daily(_config(tmp_path / "resent.parquet", out), state, retention_days=None, encoder=enc)
    c = r2.stats.counts
    assert (c.new, c.changed, c.skipped) == (0, 2, 1)
    items = open_state(state).items.set_index("id")
    assert items.loc["a2", "url"] == "https://news.example/fixed/a2" and items.loc["b1", "source"] == "cna"
    assert items.loc["c1", "url"] == "https://news.example/old/c1"
    assert state_assignment(state)["a2"] == "c-a1" and state_assignment(state)["b1"] == "c-b1"
    members = pd.read_csv(r2.report_dir / "window" / "members.csv").set_index("item_id")
    assert members.loc["a2", "url"] == "https://news.example/fixed/a2"
    assert members.loc["b1", "source"] == "cna"
    # the same rows again after another day: the corrections are kept, nothing is changed again
    run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    r4 = run_daily(_config(tmp_path / "resent.parquet", out), state, retention_days=None, encoder=enc)
    assert (r4.stats.counts.changed, r4.stats.counts.skipped) == (0, 3)


@pytest.mark.slow
def test_a_changed_item_keeps_the_kept_values_its_row_leaves_empty(tmp_path: Path) -> None:
    """A row sent again with one field corrected and another left empty keeps the kept value of the empty
    one, whatever made it changed: its source or link was dropped (the report lost them), and a source
    corrected without the date lost the item's date and moved its retention to the run's clock."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    first = pd.read_parquet(days[0]).assign(url=lambda d: "https://news.example/old/" + d["id"], source="cna")
    first.to_parquet(tmp_path / "day1.parquet", index=False)
    run_daily(_config(tmp_path / "day1.parquet", out), state, retention_days=30.0, encoder=enc)
    kept = open_state(state).items.set_index("id")
    resent = first.query("id in ['a2', 'b1', 'c1']").copy()
    a2, b1, c1 = (resent["id"] == i for i in ("a2", "b1", "c1"))
    resent.loc[a2, ["url", "source"]] = ["https://news.example/fixed/a2", ""]  # link corrected, no source
    resent.loc[b1, ["title", "url", "source"]] = [f"{resent.loc[b1, 'title'].iloc[0]} eta", "", ""]  # text
    resent.loc[c1, ["source", "published_at"]] = ["reuters", pd.NaT]  # source corrected, no date
    resent.to_parquet(tmp_path / "resent.parquet", index=False)
    r2 = run_daily(_config(tmp_path / "resent.parquet", out), state, retention_days=30.0, encoder=enc)
    assert (r2.stats.counts.changed, r2.stats.counts.skipped) == (3, 0)
    items = open_state(state).items.set_index("id")
    assert items.loc["a2", "url"] == "https://news.example/fixed/a2" and items.loc["a2", "source"] == "cna"
    assert items.loc["b1", "title"].endswith(" eta") and items.loc["b1", "url"] == kept.loc["b1", "url"]
    assert items.loc["b1", "source"] == "cna"
    assert items.loc["c1", "source"] == "reuters"
    assert items.loc["c1", "published_at"] == kept.loc["c1", "published_at"]
    assert items.loc["c1", "retain_from"] == kept.loc["c1", "retain_from"]
    members = pd.read_csv(r2.report_dir / "window" / "members.csv").set_index("item_id")
    assert members.loc["a2", "source"] == "cna" and members.loc["b1", "url"] == kept.loc["b1", "url"]
    # the same rows again after another day: nothing is changed again
    run_daily(_config(days[1], out), state, retention_days=30.0, encoder=enc)
    r4 = run_daily(_config(tmp_path / "resent.parquet", out), state, retention_days=30.0, encoder=enc)
    assert (r4.stats.counts.changed, r4.stats.counts.skipped) == (0, 3)


@pytest.mark.slow
def test_a_day_without_news_keeps_the_window_and_a_first_day_without_news_is_refused(tmp_path: Path) -> None:
    """A day's file with the schema's columns and no row: nothing added, nothing expired, the clock stands
    still and the window is reported as it was; with no window yet there is nothing to report."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    empty = tmp_path / "empty.csv"
    pd.read_parquet(days[0]).head(0).to_csv(empty, index=False)
    with pytest.raises(InputError, match="empty.csv: the corpus has no rows and the state has no run yet"):
        run_daily(_config(empty, out), state, retention_days=1.0, encoder=enc)
    assert not state.exists() and not out.exists()  # a refused first day leaves no claimed folder behind
    with pytest.raises(InputError, match="empty.csv: the corpus has no rows$"):
        run_dedup(_config(empty, tmp_path / "batch"), encoder=enc)  # a batch run has nothing to report
    run_daily(_config(days[0], out), state, retention_days=1.0, encoder=enc)
    before = open_state(state)
    quiet = run_daily(_config(empty, out), state, retention_days=1.0, encoder=enc)
    c = quiet.stats.counts
    assert (c.items_in, c.new, c.expired, c.kept) == (0, 0, 0, len(before.items))
    after = open_state(state)
    assert after.as_of == before.as_of
    assert state_assignment(state) == {"a1": "c-a1", "a2": "c-a1", "b1": "c-b1", "b2": "c-b1"}
    window = pd.read_parquet(quiet.report_dir / "window" / "clusters.parquet")
    assert sorted(window["cluster_id"]) == ["c-a1", "c-b1"]
    # the next day goes on from the kept window as if the quiet day had not been
    r3 = run_daily(_config(days[1], out), state, retention_days=1.0, encoder=enc)
    assert r3.stats.counts.new == 3 and state_assignment(state)["a3"] == "c-a1"
    # a quiet day run again after a later one (its --date ended by the state's clock) leaves latest alone
    newest = (out / "latest").resolve()
    old = run_daily(
        _config(empty, out, date="2005-03-01", state=str(state)), state, retention_days=1.0, encoder=enc
    )
    assert old.stats.older_day and (out / "latest").resolve() == newest
    assert any("has no items, and its day (2005-03-01) ended by" in m for m in old.stats.messages)
    assert "This run's day had no items" in (old.report_dir / "index.html").read_text(encoding="utf-8")
    today = run_daily(
        _config(empty, out, date="2005-03-02", state=str(state)), state, retention_days=1.0, encoder=enc
    )
    assert not today.stats.older_day and (out / "latest").resolve() == today.report_dir.resolve()
    # a window emptied by retention is a window still: a day without news after it is reported, not refused
    run_daily(_config(empty, out), state, retention_days=1.0, encoder=enc, as_of="2005-03-09")
    assert len(open_state(state).items) == 0
    assert run_daily(_config(empty, out), state, retention_days=1.0, encoder=enc).stats.counts.kept == 0


@pytest.mark.slow
def test_retention_drops_old_items_and_refuses_too_old_ones(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, retention_days=1.0, encoder=enc)
    # day 3 as of 2005-03-03 06:00: day-1 items (before 03-02 06:00) leave the window
    r3 = run_daily(_config(days[2], out), state, retention_days=1.0, encoder=enc, as_of="2005-03-03 06:00")
    assert r3.stats.counts.expired == 6 and r3.stats.counts.kept == 3
    # what day 3 would have linked (A, B, d1) has left the window: no cluster remains
    assert state_assignment(state) == {}
    assert len(open_state(state).clusters) == 0 and r3.stats.counts.pairs == 0
    # a late item beside the day's own is too old, counted, and left out
    late = story_corpus().iloc[[0, 11]].assign(id=["late", "f9"])
    late.to_parquet(tmp_path / "late.parquet", index=False)
    r4 = run_daily(_config(tmp_path / "late.parquet", out), state, retention_days=1.0, encoder=enc)
    assert r4.stats.counts.too_old == 1 and r4.stats.counts.new == 1
    # a day with nothing but too-old items is a wrong clock or a wrong file: refused, the state kept
    before = (state / "MANIFEST.json").read_bytes()
    late.iloc[[0]].to_parquet(tmp_path / "only_late.parquet", index=False)
    refused = r"only_late.parquet: field 'published_at': its 1 item is older than the window"
    with pytest.raises(InputError, match=refused):
        run_daily(_config(tmp_path / "only_late.parquet", out), state, retention_days=1.0, encoder=enc)
    assert (state / "MANIFEST.json").read_bytes() == before


@pytest.mark.slow
def test_daily_runs_equal_single_run_with_real_encoder(tmp_path: Path, fast_encoder) -> None:  # noqa: ANN001
    """The real small model on BBC news split over three days: same pairs, same clusters, same ids as one
    batch run and as one incremental run over everything."""
    corpus = bbc_corpus(n_other=100, n_rewrites=20)
    days = split_days(corpus, tmp_path / "in", ["2005-03-04", "2005-03-08"])
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    kw = dict(model=FAST_MODEL, threshold=0.9, k=50, text_fields=("title", "description"))
    for d in days:
        run_daily(
            _config(d, tmp_path / "out", **kw), tmp_path / "state", retention_days=None, encoder=fast_encoder
        )
    one = run_daily(
        _config(tmp_path / "all.parquet", tmp_path / "out1", **kw),
        tmp_path / "state1",
        retention_days=None,
        encoder=fast_encoder,
    )
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch", **kw), encoder=fast_encoder)
    daily = state_assignment(tmp_path / "state")
    assert len(daily) > 50 and len(set(daily.values())) > 20
    assert daily == state_assignment(tmp_path / "state1") == batch_assignment(batch.clusters)
    batch_pairs = {tuple(sorted(p)) for p in zip(batch.pairs["id_a"], batch.pairs["id_b"], strict=True)}
    assert state_pairs(tmp_path / "state") == state_pairs(tmp_path / "state1") == batch_pairs
    emb_daily = np.load(next((tmp_path / "state").glob("generations/g000003-*/index/embeddings.npy")))
    assert emb_daily.shape == (len(corpus), fast_encoder.dim)
    assert one.stats.counts.clusters_new == len(batch.clusters)


@pytest.mark.slow
def test_undated_items_expire_by_the_day_first_seen(tmp_path: Path) -> None:
    corpus = story_corpus().assign(published_at=None)
    corpus.to_parquet(tmp_path / "undated.parquet", index=False)
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_daily(_config(tmp_path / "undated.parquet", out), state, retention_days=30, encoder=enc)
    today = pd.Timestamp.now(tz="UTC").floor("D")
    assert r1.run_id.startswith(today.strftime("%Y%m%d"))
    assert (open_state(state).items["retain_from"] == today).all()
    assert state_assignment(state)["b2"] == "c-a1"  # undated: ties broken by id, the bridge x1 joins all
    # a month later (a clock is never set in the future: the first run is put a month back instead)
    state, out = tmp_path / "state2", tmp_path / "out2"
    earlier = (today - pd.Timedelta(days=31)).isoformat()
    run_daily(
        _config(tmp_path / "undated.parquet", out), state, retention_days=30, encoder=enc, as_of=earlier
    )
    assert (open_state(state).items["retain_from"] == today - pd.Timedelta(days=31)).all()
    r2 = run_daily(
        _config(tmp_path / "undated.parquet", out),
        state,
        retention_days=30,
        encoder=enc,
        as_of=today.isoformat(),
    )
    # seen before (skipped), and now out of the window (expired): nothing is kept
    assert r2.stats.counts.expired == len(corpus) and r2.stats.counts.skipped == len(corpus)
    assert r2.stats.counts.kept == 0


def test_an_item_published_again_with_new_text_after_it_expired_comes_back(tmp_path: Path) -> None:
    corpus = story_corpus().assign(published_at=pd.Timestamp("2024-01-01", tz="UTC"))
    corpus.to_parquet(tmp_path / "day1.parquet", index=False)
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(tmp_path / "day1.parquet", out), state, retention_days=30, encoder=enc)
    again = corpus.iloc[:1].assign(title="a new text", published_at=pd.Timestamp("2024-03-01", tz="UTC"))
    again.to_parquet(tmp_path / "day2.parquet", index=False)
    r2 = run_daily(_config(tmp_path / "day2.parquet", out), state, retention_days=30, encoder=enc)
    counts = r2.stats.counts
    assert counts.expired == len(corpus) and counts.new == 1 and counts.kept == 1
    kept = open_state(state).items
    assert kept["id"].tolist() == [again["id"].iloc[0]]


@pytest.mark.slow
def test_a_daily_run_records_its_judgement_and_a_replay_keeps_it(tmp_path: Path) -> None:
    """The judgement names the day's corpus file (``{date}`` filled in) and the run's own report folder;
    it is made before the commit, so writing a committed run's report again (a repeated input, or a run
    killed after its commit) keeps it."""
    day = story_corpus()
    day = day[day["published_at"] < pd.Timestamp("2005-03-02", tz="UTC")]
    (tmp_path / "in").mkdir()
    day.to_parquet(tmp_path / "in" / "news-2005-03-01.parquet", index=False)
    pairs = _scored_day_one(tmp_path, day)
    template = str(tmp_path / "in" / "news-{date}.parquet")
    config = _config(template, tmp_path / "out", date="2005-03-01", judge_pairs=str(pairs))
    enc = HashEncoder()
    first = run_daily(config, tmp_path / "state", retention_days=None, encoder=enc)
    judged = json.loads((first.report_dir / "run.json").read_text())["judge"]
    day_file = tmp_path / "in" / "news-2005-03-01.parquet"
    assert judged["corpus"] == f"{day_file} with the window kept in {tmp_path / 'state'}"
    assert judged["report"] == str(first.report_dir)
    assert (judged["judged_pairs"], judged["same_story_pairs"], judged["f1"]) == (4, 2, 1.0)
    assert first.stats.judge is not None and first.stats.judge.to_dict() == judged
    assert "judge" in first.stats.timings_s

    assert "belong to this report&#x27;s window" in (first.report_dir / "index.html").read_text()

    # a repeated input writes the stored report again: it needs the pairs file no more
    pairs.rename(tmp_path / "pairs-moved.tsv")
    again = run_daily(config, tmp_path / "state", retention_days=None, encoder=enc)
    assert again.replayed
    assert json.loads((again.report_dir / "run.json").read_text())["judge"] == judged
    assert again.stats.judge == first.stats.judge
    # written again into another folder: the judgement names that folder
    elsewhere = config.with_(out=str(tmp_path / "out2"))
    moved = run_daily(elsewhere, tmp_path / "state", retention_days=None, encoder=enc)
    shown = json.loads((moved.report_dir / "run.json").read_text())["judge"]
    assert moved.replayed and shown == {**judged, "report": str(moved.report_dir)}

    # killed after its commit, before its report was published: the next run's report has the judgement
    (tmp_path / "pairs-moved.tsv").rename(pairs)
    cut = config.with_(out=str(tmp_path / "out-k"))
    with interrupted_at("report-publish"):
        run_daily(cut, tmp_path / "state-k", retention_days=None, encoder=enc)
    after = run_daily(cut, tmp_path / "state-k", retention_days=None, encoder=enc)
    assert after.replayed and after.stats.judge is not None
    shown = json.loads((after.report_dir / "run.json").read_text())["judge"]
    assert shown == {
        **judged,
        "report": str(tmp_path / "out-k" / "runs" / first.run_id),
        "corpus": f"{day_file} with the window kept in {tmp_path / 'state-k'}",
    }


def test_a_run_reads_one_days_file_even_past_midnight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``{date}`` without ``--date`` is today's date, taken once: a run that passes midnight reads, records
    and judges the file of the day it started."""
    import datetime
    import types

    import nlsim.dedup.settings as config_module

    days = iter([datetime.date(2005, 3, 1)])

    class Clock(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> Clock:  # type: ignore[override]
            day = next(days, datetime.date(2005, 3, 2))  # the first call, then past midnight
            return cls(day.year, day.month, day.day, 23, 59, tzinfo=tz)

    monkeypatch.setattr(config_module, "dt", types.SimpleNamespace(**{**vars(datetime), "datetime": Clock}))
    corpus = story_corpus()
    (tmp_path / "in").mkdir()
    corpus.to_parquet(tmp_path / "in" / "news-2005-03-01.parquet", index=False)
    title = dict(zip(corpus["id"], corpus["title"], strict=True))
    pd.DataFrame(
        {"id_a": ["a1"], "id_b": ["a2"], "text_a": [title["a1"]], "text_b": [title["a2"]], "score": [1.0]}
    ).assign(split="validation").to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    template = str(tmp_path / "in" / "news-{date}.parquet")
    result = run_dedup(
        _config(template, tmp_path / "out", judge_pairs=str(tmp_path / "pairs.tsv")), encoder=HashEncoder()
    )
    day_file = str(tmp_path / "in" / "news-2005-03-01.parquet")
    assert result.stats.corpus == day_file
    assert result.stats.judge is not None and result.stats.judge.corpus == day_file


def _scored_day_one(folder: Path, corpus: pd.DataFrame) -> Path:
    """Same-story and other pairs scored on items of the first day of :func:`story_corpus`."""
    title = dict(zip(corpus["id"], corpus["title"], strict=True))
    scored = [("a1", "a2", 1.0), ("b1", "b2", 1.0), ("a1", "b1", 0.0), ("c1", "d1", 0.25)]
    path = folder / "pairs.tsv"
    pd.DataFrame(
        {
            "id_a": [a for a, _, _ in scored],
            "id_b": [b for _, b, _ in scored],
            "text_a": [title[a] for a, _, _ in scored],
            "text_b": [title[b] for _, b, _ in scored],
            "score": [s for _, _, s in scored],
            "split": "validation",
        }
    ).to_csv(path, sep="\t", index=False)
    return path


@pytest.mark.slow
def test_a_window_that_no_longer_holds_the_scored_pairs_is_judged_on_none(tmp_path: Path) -> None:
    """Daily runs go on when retention has dropped every item the editors scored: 0 judged pairs (the
    figures undefined), recorded, and the state moves on."""
    corpus = story_corpus()
    pairs = _scored_day_one(tmp_path, corpus)
    days = split_days(corpus, tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    judged = []
    for day in days:
        config = _config(day, tmp_path / "out", judge_pairs=str(pairs))
        result = run_daily(config, tmp_path / "state", retention_days=0.5, encoder=enc)
        assert result.stats.judge is not None
        judged.append(result.stats.judge)
        shown = json.loads((result.report_dir / "run.json").read_text())["judge"]
        assert shown["judged_pairs"] == result.stats.judge.judged_pairs
    assert judged[0].judged_pairs == 4 and judged[0].f1 == 1.0
    assert judged[-1].judged_pairs == 0 and judged[-1].f1 is None
    assert judged[-1].corpus == f"{days[-1]} with the window kept in {tmp_path / 'state'}"
    assert open_state(tmp_path / "state").generation == 3


def test_a_daily_run_none_of_whose_scored_pairs_are_in_its_window_warns_and_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pair file none of whose ids is an item of the window (another corpus's, or items retention
    dropped) was judged on 0 pairs with a count in the judgement line only. The run now warns that nothing
    could be judged and why, in the words of the batch run's refusal, records it, and goes on (its
    figures undefined, the state committed); a batch run on the same file is refused, as before."""
    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _scored_day_one(tmp_path, corpus)
    scored = pd.read_csv(pairs, sep="\t")
    scored.assign(id_a="x-" + scored["id_a"], id_b="x-" + scored["id_b"]).to_csv(pairs, sep="\t", index=False)
    config = _config(tmp_path / "all.parquet", tmp_path / "out", judge_pairs=str(pairs))
    with caplog.at_level(logging.INFO, logger="nlsim"):
        daily = run_daily(config, tmp_path / "state", retention_days=None, encoder=HashEncoder())
    judged = daily.stats.judge
    assert judged is not None and (judged.judged_pairs, judged.pairs_not_in_corpus, judged.f1) == (0, 4, None)
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert line.startswith(f"--judge-pairs {pairs}: no pair could be judged: none of the 4 scored validation")
    assert "names two items of this run's window" in line and "their ids are not among its items" in line
    assert line in daily.stats.messages and open_state(tmp_path / "state").generation == 1
    with pytest.raises(InputError, match="none of the 4 scored validation pairs names two items of the"):
        run_dedup(config.with_(out=str(tmp_path / "batch")), encoder=HashEncoder())


class CountingEncoder(HashEncoder):
    """:class:`HashEncoder` counting the batches it embeds (``calls``): a run refused before any embedding
    embeds none."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def encode(self, texts: list[str], *args: object, **kw: object) -> np.ndarray:
        self.calls += 1
        return super().encode(texts)


def test_a_bad_judge_pairs_file_is_refused_before_any_embedding(tmp_path: Path) -> None:
    counting = CountingEncoder()
    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    config = _config(tmp_path / "all.parquet", tmp_path / "out", judge_pairs=str(tmp_path / "pairs-typo.tsv"))
    with pytest.raises(InputError, match="pairs-typo.tsv: file not found"):
        run_dedup(config, encoder=counting)
    config = config.with_(judge_pairs=str(_scored_day_one(tmp_path, corpus)), judge_split="test")
    with pytest.raises(InputError, match="pairs.tsv: field 'split': no pairs in split 'test'"):
        run_dedup(config, encoder=counting)
    assert counting.calls == 0 and not (tmp_path / "out" / "pairs.parquet").exists()


def test_judge_pairs_of_another_corpus_are_refused_in_a_batch_run_before_any_embedding(
    tmp_path: Path,
) -> None:
    """A batch run given the scored pairs of another corpus (``nlsim pipeline --corpus`` of a newsroom's own
    items with the bundled annotations) embedded, searched and clustered the whole corpus, then refused the
    pairs at the judge stage. The pairs are matched to the corpus as soon as it is loaded, so the same
    refusal comes before any embedding, as a bad ``--judge-pairs`` file's does."""

    counting = CountingEncoder()
    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _scored_day_one(tmp_path, corpus)
    scored = pd.read_csv(pairs, sep="\t")
    scored.assign(id_a="x-" + scored["id_a"], id_b="x-" + scored["id_b"]).to_csv(pairs, sep="\t", index=False)
    config = _config(tmp_path / "all.parquet", tmp_path / "out", judge_pairs=str(pairs))
    with pytest.raises(InputError, match="none of the 4 scored validation pairs names two items of the"):
        run_dedup(config, encoder=counting)
    corrected = _scored_day_one(tmp_path, corpus.assign(title=corpus["title"] + " (corrected)"))
    with pytest.raises(InputError, match="pairs.tsv: row 1, field 'text_a': none of the 4 scored"):
        run_dedup(config.with_(judge_pairs=str(corrected)), encoder=counting)
    assert counting.calls == 0 and not (tmp_path / "out" / "pairs.parquet").exists()


def test_scored_texts_the_window_no_longer_holds_are_counted_not_fatal(tmp_path: Path) -> None:
    """A corrected headline gives the item another text than the one the editors scored: a daily run
    counts such pairs and goes on; a batch run refuses pairs none of which matches its corpus."""
    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _scored_day_one(tmp_path, corpus.assign(title=corpus["title"] + " (corrected)"))
    config = _config(tmp_path / "all.parquet", tmp_path / "out", judge_pairs=str(pairs))
    daily = run_daily(config, tmp_path / "state", retention_days=None, encoder=HashEncoder())
    judged = daily.stats.judge
    assert judged is not None and (judged.judged_pairs, judged.mismatched_pairs, judged.f1) == (0, 4, None)
    page = (daily.report_dir / "index.html").read_text()
    assert "4 were left out: 4 name items whose text here is another one" in page
    assert open_state(tmp_path / "state").generation == 1
    with pytest.raises(InputError, match="pairs.tsv: row 1, field 'text_a': none of the 4 scored"):
        run_dedup(config.with_(out=str(tmp_path / "batch")), encoder=HashEncoder())


@pytest.mark.slow
def test_a_daily_runs_pair_figures_count_the_pairs_of_its_window(tmp_path: Path) -> None:
    """Same-story pairs found on an earlier day are still pairs of the window: a later day's figures
    counting the reported pairs only do not drop because today's report did not find them again."""
    corpus = story_corpus()
    pairs = _scored_day_one(tmp_path, corpus)
    days = split_days(corpus, tmp_path / "in", ["2005-03-02"])
    enc = HashEncoder()
    for day in days:
        config = _config(day, tmp_path / "out", judge_pairs=str(pairs))
        judged = run_daily(config, tmp_path / "state", retention_days=None, encoder=enc).stats.judge
        assert judged is not None and judged.pairs_only is not None
        assert judged.recall == judged.pairs_only.recall == 1.0, day


def test_a_cluster_left_with_one_item_is_no_cluster_in_the_windows_file(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, retention_days=1.0, encoder=enc)
    # a day later, 02:00: a1 (01:00 the day before) leaves the window, a2 (03:00) stays, alone in c-a1
    lone = tmp_path / "e1.parquet"
    story_corpus().query("id == 'e1'").to_parquet(lone, index=False)
    r2 = run_daily(_config(lone, out), state, retention_days=1.0, encoder=enc, as_of="2005-03-02 02:00")
    window = pd.read_parquet(r2.report_dir / "window" / "clusters.parquet")
    assert (window["size"] >= 2).all() and "c-a1" not in set(window["cluster_id"])
    assert r2.stats.counts.clusters_in_window == len(window)
    assert state_assignment(state).get("a2") == "c-a1"  # the state keeps its id for a copy to come


# --- editors' verdicts over three days and a promotion ---------------------------------------------------

FLOODS = "Floods hit the north of the country"
VERDICT_DAYS = [
    [
        ("a1", FLOODS, "2026-11-20T08:00Z"),
        ("a2", FLOODS + " again", "2026-11-20T09:00Z"),  # cosine 0.94 to a1: one cluster on day 1
        ("b1", "Stock markets fall sharply", "2026-11-20T10:00Z"),
        ("b2", "Stock markets fall sharply", "2026-11-20T11:00Z"),
        ("e1", "Football club wins the cup", "2026-11-20T12:00Z"),
    ],
    [("a3", FLOODS, "2026-11-21T08:00Z")],
    [("a4", FLOODS + " again", "2026-11-22T08:00Z")],
]


def _promote_copy(store: Any, scale: float) -> str:
    """A new version of the small English model (its weights scaled by ``scale``: another fingerprint,
    nearly the same vectors), promoted; its name."""
    import torch

    from nlsim.encoders import load_encoder

    enc = load_encoder(FAST_MODEL, backend="torch")
    with torch.no_grad():
        for p in enc.model.parameters():
            p.mul_(scale)
    enc.mark_weights_changed()
    version = store.new_version_dir(f"{int(scale * 1e6):016x}")
    enc.save(version)
    store.register(version, {"fingerprint": version.name[-8:]})
    store.promote(version, "test")
    return version.name


@pytest.mark.slow
def test_editors_verdicts_act_at_once_and_persist_across_days_and_a_promotion(
    tmp_path: Path,
    fast_encoder: Any,  # noqa: ARG001 - the small model, converted once
) -> None:
    """Day 1: a1 and a2 are one cluster. Editors then say a1/a2 are not the same story, b1/e1 are, and
    (a validation pair) b1/b2 are not. Day 2 (naming the pair file): the old cluster is split along the
    verdict (a3, a copy of a1, joins a1, a2 is alone), e1 joins b1, b1/b2 stay together (validation pairs
    never act). A new model is promoted. Day 3 (not naming the pair file): the window is embedded again
    with the new model and the verdicts, kept in the state, still act: a4 (a copy of a2) groups with a2,
    never with a1."""
    from nlsim.annotation.merge import merge_annotations
    from nlsim.io.model_store import ModelStore

    store = ModelStore(tmp_path / "models")
    store.claim()
    first_model = _promote_copy(store, 1.0)
    days = []
    for n, rows in enumerate(VERDICT_DAYS, start=1):
        frame = pd.DataFrame(rows, columns=["id", "title", "published_at"]).assign(source="wire")
        frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
        frame.to_parquet(tmp_path / f"day{n}.parquet", index=False)
        days.append(tmp_path / f"day{n}.parquet")
    state, out = tmp_path / "state", tmp_path / "out"

    def config(day: Path, **kw: object) -> DedupConfig:
        return DedupConfig.of(
            corpus=day, out=out, state=state, model="current", model_store=str(tmp_path / "models"),
            convert="none", threshold=0.9, cache=False, progress=False, save_index=False,
            text_fields=("title",), backend="torch", **kw,
        )  # fmt: skip

    r1 = run_dedup(config(days[0]))
    assert state_assignment(state) == {"a1": "c-a1", "a2": "c-a1", "b1": "c-b1", "b2": "c-b1"}
    assert r1.stats.editors is None

    # the editors' verdicts, merged as the page's export is
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\nq1\ttrain\tz1\tz2\tone\ttwo\t0\n",
        encoding="utf-8",
    )
    titles = {i: t for rows in VERDICT_DAYS for i, t, _ in rows}

    def marks(name: str, rows: list[tuple[str, str, str]]) -> Path:
        path = tmp_path / name
        pd.DataFrame(
            {
                "id_a": [a for a, _, _ in rows],
                "id_b": [b for _, b, _ in rows],
                "text_a": [titles[a] for a, _, _ in rows],
                "text_b": [titles[b] for _, b, _ in rows],
                "score": [s for _, _, s in rows],
                "annotator": "desk",
            }
        ).to_csv(path, index=False)
        return path

    merge_annotations(marks("train.csv", [("a1", "a2", "0"), ("b1", "e1", "1")]), pairs, log=lambda _: None)
    merge_annotations(marks("val.csv", [("b1", "b2", "0")]), pairs, split="validation", log=lambda _: None)

    r2 = run_dedup(config(days[1], annotated_pairs=str(pairs)))
    day2 = state_assignment(state)
    assert day2["a1"] == day2["a3"] == "c-a1" and "a2" not in day2  # split along the verdict, a2 alone
    assert day2["b1"] == day2["b2"] == day2["e1"] == "c-b1"  # joined; the validation verdict does not act
    status = dict(zip(r2.clusters["cluster_id"], r2.clusters["status"], strict=True))
    assert status == {"c-a1": "regrouped", "c-b1": "grown"}
    e = r2.stats.editors
    assert (e.verdicts, e.acting, e.must_link, e.cannot_link) == (3, 2, 1, 1)
    assert sorted(map(tuple, e.decisions)) == [("a1", "a2", 0.0), ("b1", "e1", 1.0)]
    assert open_state(state).verdicts is not None and len(open_state(state).verdicts) == 3
    page = (out / "latest" / "index.html").read_text(encoding="utf-8")
    assert "Editors’ decisions in this report" in page
    report_pairs = pd.read_parquet(out / "latest" / "pairs.parquet")
    assert ("a2", "a3") not in set(zip(report_pairs["id_a"], report_pairs["id_b"], strict=True))  # cut

    second_model = _promote_copy(store, 1.0001)
    assert second_model != first_model
    r3 = run_dedup(config(days[2]))  # no --annotated-pairs: the state's verdicts act
    assert r3.stats.model_switch is not None
    day3 = state_assignment(state)
    assert day3["a1"] == day3["a3"] == "c-a1" and day3["a2"] == day3["a4"] == "c-a2"
    assert day3["b1"] == day3["b2"] == day3["e1"] == "c-b1"
    assert r3.stats.editors.source == "the state" and r3.stats.editors.cannot_link == 1
    run = json.loads((out / "latest" / "run.json").read_text(encoding="utf-8"))
    assert run["editors"]["links_cut"] >= 1 and run["model_info"]["version"] == second_model
    # one batch run over the three days' items with the same verdicts makes the same clusters
    every = pd.concat([pd.read_parquet(d) for d in days], ignore_index=True)
    every.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(
        config(tmp_path / "all.parquet", annotated_pairs=str(pairs)).with_(state=None, out=tmp_path / "batch")
    )
    assert batch_assignment(batch.clusters) == day3


def test_a_bad_verdict_store_is_refused_before_any_embedding(tmp_path: Path) -> None:
    counting = CountingEncoder()
    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _scored_day_one(tmp_path, corpus)
    store = pairs.with_name(pairs.name + ".verdicts.csv")
    store.write_text("pair_id,id_a,id_b,score,split,annotator,source,decided_at\n,a1,b1,0.6,train,,,\n")
    config = _config(tmp_path / "all.parquet", tmp_path / "out", annotated_pairs=str(pairs))
    with pytest.raises(InputError) as err:
        run_dedup(config, encoder=counting)
    assert (err.value.file, err.value.row, err.value.field) == (str(store), 1, "score")
    assert counting.calls == 0 and not (tmp_path / "out" / "pairs.parquet").exists()
    # a good store: "a2 and b2 are not the same story" keeps x1's bridge from merging stories A and B; the
    # verdict on a1/b1 does not act: the pair file holds that pair in its validation split
    _store(pairs, [("a2", "b2", 0.0)])
    from nlsim.clusters.verdicts import Verdict, load_verdicts, save_verdicts

    save_verdicts(load_verdicts(store).updated([Verdict("a1", "b1", 0.0)]), store)  # the store says train
    result = run_dedup(config, encoder=counting)
    got = batch_assignment(result.clusters)
    assert got["a1"] != got["b1"] and got["a1"] == got["a2"] and got["b1"] == got["b2"]
    assert result.stats.editors is not None and result.stats.editors.cannot_link == 1


def _store(pairs: Path, rows: list[tuple[str, str, float]]) -> Path:
    """Training verdicts as a merge leaves them (those of an earlier call replaced): rows of the pair file
    (``stratum`` ``editor-loop:``) and of its verdict store (with the hashes of the items' titles in
    :func:`story_corpus`). The pair file's texts carry their ids: the story corpus repeats its titles (the
    copies), and a training pair with the texts of a validation pair is a leak the pair file refuses."""
    from nlsim.clusters.verdicts import Verdict, Verdicts, save_verdicts, store_path
    from nlsim.io.editor_file import text_sha256

    title = dict(zip(story_corpus()["id"], story_corpus()["title"], strict=True))
    frame = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    if "stratum" in frame.columns:
        frame = frame[~frame["stratum"].str.startswith("editor-loop")]
    merged = pd.DataFrame(
        {
            "id_a": [a for a, _, _ in rows],
            "id_b": [b for _, b, _ in rows],
            "text_a": [f"{title[a]} ({a})" for a, _, _ in rows],
            "text_b": [f"{title[b]} ({b})" for _, b, _ in rows],
            "score": [f"{s:g}" for _, _, s in rows],
            "split": "train",
            "stratum": "editor-loop:marks",
        }
    )
    pd.concat([frame, merged], ignore_index=True).fillna("").to_csv(pairs, sep="\t", index=False)
    store = store_path(pairs)
    verdicts = [
        Verdict(a, b, s, "train", "desk", "marks.csv", "", text_sha256(title[a]), text_sha256(title[b]))
        for a, b, s in rows
    ]
    save_verdicts(Verdicts.from_records(verdicts), store)
    return store


@pytest.mark.slow
def test_links_cut_count_a_chain_and_an_overruled_verdict_is_listed_apart(tmp_path: Path) -> None:
    """x1 bridges stories A (a1-a3) and B (b1, b2) under connected components. "a2/b2 are not the same
    story" has no link of its own to drop: the rule cuts x1's links to one side, and the record counts
    them. Then "a2/b1 and a3/b1 are the same story" with "a2/a3 are not": the second same-story verdict is
    overruled (a3 stays apart from b1) and is listed as such, not among the decisions that acted."""
    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _scored_day_one(tmp_path, corpus)
    config = _config(tmp_path / "all.parquet", tmp_path / "out", annotated_pairs=str(pairs))
    before = batch_assignment(run_dedup(config, encoder=HashEncoder()).clusters)
    assert len({before[i] for i in ("a1", "a2", "a3", "b1", "b2", "x1")}) == 1  # one bridged cluster

    _store(pairs, [("a2", "b2", 0.0)])
    result = run_dedup(config, encoder=HashEncoder())
    got = batch_assignment(result.clusters)
    assert got["a1"] == got["a2"] == got["a3"] and got["b1"] == got["b2"] and got["a1"] != got["b1"]
    other = [i for i in ("a1", "a2", "a3", "b1", "b2") if got[i] != got["x1"]]
    e = result.stats.editors
    assert e.links_cut == len(other) > 0 and e.overruled == []  # x1's links to the side it did not join
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["editors"]["links_cut"] == len(other)

    _store(pairs, [("a2", "b1", 1.0), ("a3", "b1", 1.0), ("a2", "a3", 0.0)])
    result = run_dedup(config, encoder=HashEncoder())
    got = batch_assignment(result.clusters)
    assert got["a2"] == got["b1"] != got.get("a3")
    e = result.stats.editors
    assert (e.must_link, e.cannot_link, e.refused) == (2, 1, 1)
    assert sorted(map(tuple, e.decisions)) == [("a2", "a3", 0.0), ("a2", "b1", 1.0)]
    assert e.overruled == [["a3", "b1", 1.0]]
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["editors"]["overruled"] == [["a3", "b1", 1.0]]


def test_a_same_story_verdict_joining_one_pair_is_said_in_the_singular(tmp_path: Path) -> None:
    """ "c1/e1 are the same story" joins one pair no link joined: the run said "joined 1 items no link
    joined" (a count of pairs, in the plural); it says "joined 1 pair"."""
    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _scored_day_one(tmp_path, corpus)
    config = _config(tmp_path / "all.parquet", tmp_path / "out", annotated_pairs=str(pairs))
    _store(pairs, [("c1", "e1", 1.0)])
    result = run_dedup(config, encoder=HashEncoder())
    assert result.stats.editors is not None and result.stats.editors.joined == 1
    said = [m for m in result.stats.messages if m.startswith("editors' verdicts")]
    assert len(said) == 1 and "1 same story (joined 1 pair no link joined)" in said[0], said


def test_an_editor_overrules_a_scored_training_pair_and_the_report_splits_along_it(tmp_path: Path) -> None:
    """The annotators scored x1/b1 0.75 (same topic, another event) in the training split: no verdict, so x1
    bridges stories A and B into one cluster and the pair is refused at merge. Merged with --overrule as
    "not the same story" (with a fresh "same story" c1/e1), the report cuts the cluster along it and joins
    c1's cluster with e1; the record says which clusters each verdict changed, and how many verdicts
    overrule the annotators, with the editor's note on x1/b1, and run.json reads back as the same record. The
    pair file keeps x1/b1's 0.75."""
    from nlsim.annotation.merge import merge_annotations
    from nlsim.report.record import JOINED, SPLIT, ClusterChange, RunRecord

    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _scored_day_one(tmp_path, corpus)
    title = dict(zip(corpus["id"], corpus["title"], strict=True))
    scored = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    own = pd.DataFrame(
        {"id_a": ["x1"], "id_b": ["b1"], "text_a": [title["x1"]], "text_b": [title["b1"]], "score": ["0.75"],
         "split": ["train"]}
    )  # fmt: skip
    pd.concat([scored, own], ignore_index=True).to_csv(pairs, sep="\t", index=False)
    config = _config(tmp_path / "all.parquet", tmp_path / "out", annotated_pairs=str(pairs))
    before = batch_assignment(run_dedup(config, encoder=HashEncoder()).clusters)
    assert len({before[i] for i in ("a1", "a2", "a3", "b1", "b2", "x1")}) == 1  # bridged by x1

    marks = tmp_path / "marks.csv"
    rows = [("x1", "b1", "0"), ("c1", "e1", "1")]
    pd.DataFrame(
        {"id_a": [a for a, _, _ in rows], "id_b": [b for _, b, _ in rows],
         "text_a": [title[a] for a, _, _ in rows], "text_b": [title[b] for _, b, _ in rows],
         "score": [s for _, _, s in rows], "annotator": "desk", "notes": ["x1 is last year's flood", ""]}
    ).to_csv(marks, index=False)  # fmt: skip
    with pytest.raises(InputError, match="--overrule"):
        merge_annotations(marks, pairs, log=lambda _: None)
    merge_annotations(marks, pairs, overrule=True, log=lambda _: None)
    after = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    assert after[["id_a", "id_b", "score"]].values.tolist()[-2:] == [["x1", "b1", "0.75"], ["c1", "e1", "1"]]

    result = run_dedup(config, encoder=HashEncoder())
    got = batch_assignment(result.clusters)
    assert got.get("x1") != got["b1"] and got["a1"] != got["b1"] and got["b1"] == got["b2"]
    assert got["c1"] == got["c2"] == got["e1"]
    e = result.stats.editors
    assert e is not None and e.annotators_overruled == 1
    split_clusters = sorted({c for c in (got.get("x1"), got["b1"]) if c is not None})
    assert e.cluster_changes == [
        ClusterChange("c1", "e1", 1.0, JOINED, [got["c1"]], False),
        ClusterChange("x1", "b1", 0.0, SPLIT, split_clusters, True, "x1 is last year's flood"),
    ]
    assert e.notes == [["x1", "b1", "x1 is last year's flood"]]  # the page shows it with the decision
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["editors"]["cluster_changes"][1]["change"] == "split"
    assert RunRecord.from_dict(run).editors == e


@pytest.mark.slow
def test_a_daily_state_remembers_the_scored_pairs_and_a_rebuilt_state_keeps_the_verdicts(
    tmp_path: Path,
) -> None:
    """Day 1 names the pair file (validation pairs a1/a2, b1/b2, ...) and a training verdict "a3 is not
    a1's story". Day 2 does not name it: the page still knows every scored pair it shows (the review
    queue skips them). A rebuilt state keeps the verdicts and the scored pairs, from the generation before
    when the last one's copy is damaged: a3 stays apart from a1;
    rebuilt naming the pair file after the verdicts' rows left its store, the verdicts no longer hold."""
    corpus = story_corpus()
    days = split_days(corpus, tmp_path / "in", ["2005-03-02", "2005-03-03"])
    pairs = _scored_day_one(tmp_path, corpus)
    _store(pairs, [("a1", "a3", 0.0), ("a2", "a3", 0.0)])
    enc, state = HashEncoder(), tmp_path / "state"
    base = _config(days[0], tmp_path / "out")
    run_daily(base.with_(annotated_pairs=str(pairs)), state, encoder=enc)
    two = run_daily(base.with_(corpus=str(days[1])), state, encoder=enc)  # no --annotated-pairs
    from nlsim.io.editor_file import pair_id

    e = two.stats.editors
    assert e is not None and pair_id("a1", "a2") in e.scored_ids and pair_id("a1", "a3") in e.scored_ids
    day2 = state_assignment(state)
    assert day2["a1"] == day2["a2"] and "a3" not in day2  # the verdicts kept apart what copies would join

    both = tmp_path / "in" / "days1-2.parquet"
    pd.concat([pd.read_parquet(d) for d in days[:2]], ignore_index=True).to_parquet(both, index=False)
    # the state is damaged where its current verdicts are (what a rebuild is for): the previous generation
    # holds them too
    (open_state(state).generation_dir / "verdicts.parquet").write_bytes(b"garbage")
    again = run_daily(base.with_(corpus=str(both)), state, encoder=enc, rebuild_state=True)
    assert state_assignment(state) == day2
    kept = again.stats.editors
    assert kept is not None and kept.cannot_link == 2 and pair_id("a1", "a2") in kept.scored_ids
    said = " ".join(again.stats.messages)
    assert "verdicts.parquet could not be read" in said and "kept 2 verdicts row(s) of g000001" in said, said
    # taking the verdicts back: rows removed from the store, the state rebuilt naming the pair file
    _store(pairs, [])
    run_daily(
        base.with_(corpus=str(both), annotated_pairs=str(pairs)), state, encoder=enc, rebuild_state=True
    )
    back = state_assignment(state)
    assert back["a1"] == back["a2"] == back["a3"]


@pytest.mark.slow
def test_a_later_day_without_the_pair_file_still_knows_which_scored_pairs_are_training_pairs(
    tmp_path: Path,
) -> None:
    """Day 1 names the pair file: the annotators' training pair a1/a2 (its page offers the editor's
    overrule) and the validation pair b1/b2 (held out: never marked). Day 2 does not name it: its page
    must still tell the two apart (the state kept the scored pairs without their kind of split, so the
    training pair lost its verdict buttons and the validation pair its "held out" reason)."""
    from nlsim.io.editor_file import pair_id

    corpus = story_corpus()
    title = dict(zip(corpus["id"], corpus["title"], strict=True))
    scored = [("a1", "a2", 0.75, "train"), ("b1", "b2", 1.0, "validation")]
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(
        {"id_a": [a for a, _, _, _ in scored], "id_b": [b for _, b, _, _ in scored],
         "text_a": [title[a] for a, _, _, _ in scored], "text_b": [title[b] for _, b, _, _ in scored],
         "score": [s for _, _, s, _ in scored], "split": [x for _, _, _, x in scored]}
    ).to_csv(pairs, sep="\t", index=False)  # fmt: skip
    days = split_days(corpus, tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc, state = HashEncoder(), tmp_path / "state"
    base = _config(days[0], tmp_path / "out")
    one = run_daily(base.with_(annotated_pairs=str(pairs)), state, encoder=enc)
    two = run_daily(base.with_(corpus=str(days[1])), state, encoder=enc)  # no --annotated-pairs
    for run in (one, two):
        e = run.stats.editors
        assert e is not None
        assert (e.training_ids, e.held_out_ids) == ([pair_id("a1", "a2")], [pair_id("b1", "b2")]), e
    # a later run naming the file again goes by the file: b1/b2 moved to the training split
    pd.read_csv(pairs, sep="\t").assign(split="train").to_csv(pairs, sep="\t", index=False)
    three = run_daily(base.with_(corpus=str(days[2]), annotated_pairs=str(pairs)), state, encoder=enc)
    e = three.stats.editors
    assert e is not None and (e.training_ids, e.held_out_ids) == (
        sorted([pair_id("a1", "a2"), pair_id("b1", "b2")]),
        [],
    ), e


@pytest.mark.slow
def test_a_committed_day_run_again_after_a_merge_takes_the_new_verdicts(tmp_path: Path) -> None:
    """The same day with the same pair file is a replay of the committed run; once a verdict is merged
    into the pair file's store, running the day again is a new run, in which the verdict acts and is kept."""
    corpus = story_corpus()
    days = split_days(corpus, tmp_path / "in", ["2005-03-02"])
    pairs = _scored_day_one(tmp_path, corpus)
    enc, state = HashEncoder(), tmp_path / "state"
    config = _config(days[0], tmp_path / "out", annotated_pairs=str(pairs))
    first = run_daily(config, state, encoder=enc)
    assert run_daily(config, state, encoder=enc).replayed
    assert state_assignment(state)["a1"] == state_assignment(state)["a2"]
    _store(pairs, [("a2", "b2", 0.0), ("a1", "b2", 0.0)])
    again = run_daily(config, state, encoder=enc)
    assert not again.replayed and again.run_id != first.run_id
    assert again.stats.editors is not None and again.stats.editors.verdicts == 2
    assert len(open_state(state).verdicts) == 2


@pytest.mark.slow
def test_a_state_made_before_scored_pairs_were_kept_says_how_to_keep_them(tmp_path: Path) -> None:
    corpus = story_corpus()
    days = split_days(corpus, tmp_path / "in", ["2005-03-02"])
    pairs = _scored_day_one(tmp_path, corpus)
    _store(pairs, [("a1", "b2", 0.0)])
    enc, state = HashEncoder(), tmp_path / "state"
    base = _config(days[0], tmp_path / "out")
    run_daily(base.with_(annotated_pairs=str(pairs)), state, encoder=enc)
    # as an earlier nlsim left it: verdicts kept, scored pairs not (nor the editors' overruled verdicts,
    # declared with them)
    gen = open_state(state).generation_dir
    (gen / "scored.parquet").unlink()
    manifest = json.loads((state / "MANIFEST.json").read_text(encoding="utf-8"))
    del manifest["files"]["scored.parquet"]
    del manifest["last_run"]["editors"]["overruled"]
    (state / "MANIFEST.json").write_text(json.dumps(manifest), encoding="utf-8")
    two = run_daily(base.with_(corpus=str(days[1])), state, encoder=enc)
    assert any("not yet the pairs they scored" in m for m in two.stats.messages), two.stats.messages
    three = run_daily(base.with_(corpus=str(days[1]), annotated_pairs=str(pairs)), state, encoder=enc)
    assert not any("not yet the pairs they scored" in m for m in three.stats.messages)
    assert open_state(state).scored is not None
    # the state keeps them now: a later run without the pair file has nothing to say of them
    four = run_daily(base.with_(corpus=str(days[1])), state, encoder=enc)
    assert not any("not yet the pairs they scored" in m for m in four.stats.messages), four.stats.messages


@pytest.mark.slow
def test_three_daily_runs_read_times_without_an_offset_in_the_runs_time_zone(tmp_path: Path) -> None:
    """A CMS export writes the newsroom's clock without an offset (``2026/11/25 08:00``): with
    ``--timezone Asia/Taipei`` that is 00:00 UTC, and the days, the run's clock and the retention follow the
    instants, also beside a feed item that carries its offset. Each run says once how many it read so."""
    story = {"A": "alpha beta gamma delta", "B": "epsilon zeta eta theta", "C": "kappa lambda mu nu"}
    days = [
        [("a1", "A", "2026/11/24 20:00"), ("b1", "B", "2026/11/24 21:00")],
        [("a2", "A", "2026/11/25 08:00"), ("b2", "B", "2026/11/25 18:00")],
        # an RSS item with its offset (02:00 UTC), and a CMS item of 06:00 Taipei (22:00 UTC the day before)
        [("a3", "A", "Thu, 26 Nov 2026 10:00:00 +0800"), ("c1", "C", "2026/11/26 06:00")],
    ]
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    runs = []
    for n, rows in enumerate(days, start=1):
        path = tmp_path / f"day{n}.csv"
        lines = [f'{i},{story[s]},"{t}"' for i, s, t in rows]
        path.write_text("id,title,published_at\n" + "\n".join(lines) + "\n", encoding="utf-8")
        config = _config(path, out, timezone="Asia/Taipei")
        runs.append(run_daily(config, state, retention_days=1.0, encoder=enc))
    said = [[m for m in r.stats.messages if "have no offset" in m] for r in runs]
    assert [len(s) for s in said] == [1, 1, 1]
    read_so = "published_at times have no offset: read as Asia/Taipei time (--timezone)"
    assert said[0][0].endswith(f"2 of 2 {read_so}") and said[2][0].endswith(f"1 of 2 {read_so}")
    assert runs[1].stats.as_of == "2026-11-25T10:00:00+00:00"  # b2: 18:00 in Taipei
    # day 3's clock is the feed item's 02:00 UTC (its CMS item is earlier): the window starts at 02:00 UTC
    # on the 25th, before which a1, b1 and a2 (00:00 UTC) were published
    r3 = runs[2]
    assert r3.stats.as_of == "2026-11-26T02:00:00+00:00" and r3.run_id.startswith("20261126T020000Z")
    assert r3.stats.counts.expired == 3
    items = open_state(state).items.set_index("id")
    assert sorted(items.index) == ["a3", "b2", "c1"]
    assert items.loc["b2", "published_at"] == pd.Timestamp("2026-11-25T10:00:00Z")
    assert items.loc["c1", "published_at"] == pd.Timestamp("2026-11-25T22:00:00Z")
    assert "a3" not in state_assignment(state)  # story A's earlier items left the window


@pytest.mark.slow
def test_a_day_without_dates_says_where_its_clock_comes_from_and_the_clock_moves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nlsim.dedup.window as window_module

    corpus = story_corpus().assign(published_at=None)
    corpus.iloc[:6].to_parquet(tmp_path / "day1.parquet", index=False)
    corpus.iloc[6:].to_parquet(tmp_path / "day2.parquet", index=False)
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    today = pd.Timestamp("2026-11-20T16:00:00Z")  # the 21st has begun in Taipei
    monkeypatch.setattr(
        window_module, "day_start", lambda tz: today.tz_convert(tz).floor("D").tz_convert("UTC")
    )
    config = _config(tmp_path / "day1.parquet", out, timezone="Asia/Taipei")
    r1 = run_daily(config, state, retention_days=2, encoder=enc)
    (line,) = [m for m in r1.stats.messages if "has a date" in m]
    assert line == (
        f"no item of {tmp_path / 'day1.parquet'} has a date: the window's clock is 2026-11-20 16:00:00+00:00 "
        "(the start of today in Asia/Taipei, unless the state's is later); its items are kept from the day "
        "they were first seen (--as-of pins the clock)"
    )
    # three days later the clock has moved on: the first day's items expire, the second day's stay
    today = pd.Timestamp("2026-11-23T16:00:00Z")
    r2 = run_daily(config.with_(corpus=str(tmp_path / "day2.parquet")), state, retention_days=2, encoder=enc)
    assert r2.stats.as_of == "2026-11-23T16:00:00+00:00"
    assert r2.stats.counts.expired == 6 and r2.stats.counts.kept == 6
    # a dated day says nothing of it
    dated = story_corpus().iloc[:2].assign(id=["n1", "n2"], published_at=pd.Timestamp("2026-11-24", tz="UTC"))
    dated.to_parquet(tmp_path / "day3.parquet", index=False)
    r3 = run_daily(config.with_(corpus=str(tmp_path / "day3.parquet")), state, retention_days=2, encoder=enc)
    assert not [m for m in r3.stats.messages if "has a date" in m]


@pytest.mark.slow
def test_a_day_run_after_a_later_one_does_not_replace_latest(tmp_path: Path) -> None:
    """Days 25, 26, then 25 again (and, in a second state, 26 before 25 was ever run): a run of an older
    day publishes its report under runs/ and leaves latest (and LATEST) on the newer report; its record says
    that its items were all seen before, when they were. The next day moves latest on."""
    corpus = story_corpus().assign(published_at=lambda f: f["published_at"] + pd.DateOffset(years=21))
    days = split_days(corpus, tmp_path / "in", ["2026-03-02", "2026-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    assert not r1.stats.older_day and not r2.stats.all_seen
    again = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    assert again.run_id != r1.run_id and not again.replayed
    assert again.stats.older_day and again.stats.all_seen
    assert again.stats.counts.new == 0 and again.stats.counts.skipped == 6
    assert (again.report_dir / "run.json").is_file()  # its report is written, under runs/
    assert (out / "latest").resolve() == r2.report_dir.resolve()
    assert (out / "LATEST").read_text().strip() == r2.run_id
    saved = json.loads((again.report_dir / "run.json").read_text())
    assert saved["older_day"] is True and saved["all_seen"] is True
    assert any("a day older than the runs before it" in m for m in again.stats.messages)
    # the same older input once more is a replay of the last commit: latest still stays
    replay = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    assert replay.replayed and (out / "latest").resolve() == r2.report_dir.resolve()
    assert replay.run_id == again.run_id and any(again.run_id in m for m in replay.stats.messages)
    # the second day again, after another commit: a new run under a new id (nothing new in it), and the
    # report first published for that day stays as it was
    published = {p.name: p.read_bytes() for p in r2.report_dir.iterdir() if p.is_file()}
    second = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    assert not second.replayed and second.run_id != r2.run_id and second.stats.all_seen
    assert {p.name: p.read_bytes() for p in r2.report_dir.iterdir() if p.is_file()} == published
    assert json.loads((r2.report_dir / "run.json").read_text())["run_id"] == r2.run_id
    r3 = run_daily(_config(days[2], out), state, retention_days=None, encoder=enc)
    assert not r3.stats.older_day and (out / "latest").resolve() == r3.report_dir.resolve()

    # a day never run before, arriving after a later one: its items are new, latest still stays
    state2, out2 = tmp_path / "state2", tmp_path / "out2"
    late = run_daily(_config(days[1], out2), state2, retention_days=None, encoder=enc)
    early = run_daily(_config(days[0], out2), state2, retention_days=None, encoder=enc)
    assert early.stats.older_day and not early.stats.all_seen and early.stats.counts.new == 6
    assert (out2 / "latest").resolve() == late.report_dir.resolve()


@pytest.mark.slow
def test_a_day_run_after_a_later_one_does_not_undo_the_later_days_correction(tmp_path: Path) -> None:
    """The 25th, then the 26th with a corrected headline of an item of the 25th, then the 25th run again: the
    window keeps the 26th's headline (the older day's copy of the item is older), and says so; a corrected
    file of the 25th itself run again still corrects what the 25th's own run read."""
    corpus = story_corpus().assign(published_at=lambda f: f["published_at"] + pd.DateOffset(years=21))
    days = split_days(corpus, tmp_path / "in", ["2026-03-02", "2026-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    day1 = pd.read_parquet(days[0])
    fixed = day1[day1["id"] == "c1"].assign(title="kappa lambda mu corrected")
    day2 = pd.concat([pd.read_parquet(days[1]), fixed], ignore_index=True)
    day2.to_parquet(tmp_path / "day2.parquet", index=False)
    r2 = run_daily(_config(tmp_path / "day2.parquet", out), state, retention_days=None, encoder=enc)
    assert r2.stats.counts.changed == 1

    def title(item: str) -> str:
        items = open_state(state).items
        return str(items.loc[items["id"] == item, "title"].iloc[0])

    assert title("c1") == "kappa lambda mu corrected"
    again = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    assert again.stats.older_day and again.stats.counts.changed == 0
    assert title("c1") == "kappa lambda mu corrected"  # it went back to the 25th's headline
    assert any("c1" in m and "later day" in m for m in again.stats.messages)
    assert not again.stats.all_seen
    # the 25th's file corrected and run again: what only the 25th's run read is corrected
    day1.assign(title=day1["title"].where(day1["id"] != "d1", "omicron pi rho fixed")).to_parquet(
        tmp_path / "day1-fixed.parquet", index=False
    )
    fix = run_daily(_config(tmp_path / "day1-fixed.parquet", out), state, retention_days=None, encoder=enc)
    assert fix.stats.older_day and fix.stats.counts.changed == 1 and title("d1") == "omicron pi rho fixed"
    assert title("c1") == "kappa lambda mu corrected"


def _day(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    """A day's items from ``(id, title, hours after T)`` rows, from one source."""
    return pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "title": [r[1] for r in rows],
            "description": "",
            "source": "wire",
            "published_at": [T + pd.Timedelta(hours=r[2]) for r in rows],
        }
    )


@pytest.mark.slow
def test_a_cluster_split_by_a_corrected_headline_is_named_as_a_batch_run_names_it(tmp_path: Path) -> None:
    """a1, a2, a3 one story on the first day; on the second a1's headline is corrected to another story
    (with b1) and a2's lightly: the story left behind is a2 and a3, named by its earliest member, c-a2, as
    a batch run over the corrected items names it (it was c-a3: a2, read again, could not claim its id)."""
    a, b = "alpha beta gamma delta", "epsilon zeta eta theta"

    d1 = _day([("a1", a, 1), ("a2", a, 2), ("a3", a, 3)])
    d2 = _day([("a1", b, 1), ("b1", b, 26), ("a2", a + " kappa", 2)])
    d1.to_parquet(tmp_path / "d1.parquet", index=False)
    d2.to_parquet(tmp_path / "d2.parquet", index=False)
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(tmp_path / "d1.parquet", out), state, retention_days=None, encoder=enc)
    run_daily(_config(tmp_path / "d2.parquet", out), state, retention_days=None, encoder=enc)
    everything = pd.concat([d1[~d1["id"].isin(d2["id"])], d2], ignore_index=True)
    everything.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch"), encoder=enc)
    assert batch_assignment(batch.clusters) == {"a1": "c-a1", "b1": "c-a1", "a2": "c-a2", "a3": "c-a2"}
    assert state_assignment(state) == batch_assignment(batch.clusters)


@pytest.mark.slow
def test_a_copy_keeps_its_links_when_the_item_it_copied_is_corrected(tmp_path: Path) -> None:
    """b1 copies a1's headline the day after a1 (an exact copy: searched through a1, its links a1's); the
    third day a1's headline is corrected to another story. b1 is still the same story as c1 (cosine 0.75),
    as a batch run over the corrected items finds: the daily run lost every link of b1 with a1's old text
    and never searched b1, so b1 fell out of its story."""
    x, y = "delta gamma zeta beta", "gamma eps zeta delta"

    days = [
        _day([("a1", x, 1), ("c1", y, 2)]),
        _day([("b1", x, 26)]),
        _day([("a1", "omega psi chi phi", 1), ("d1", "unrelated words here", 50)]),
    ]
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    for n, d in enumerate(days):
        d.to_parquet(tmp_path / f"d{n}.parquet", index=False)
        run_daily(_config(tmp_path / f"d{n}.parquet", out), state, retention_days=None, encoder=enc)
    everything = pd.concat([days[0][days[0]["id"] != "a1"], days[1], days[2]], ignore_index=True)
    everything.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch"), encoder=enc)
    assert batch_assignment(batch.clusters) == {"c1": "c-c1", "b1": "c-c1"}
    assert state_assignment(state) == batch_assignment(batch.clusters)
    assert ("b1", "c1") in state_pairs(state)


class AngleEncoder:
    """Each text a unit vector in a plane at the angle its title names (``"story at 45"``): the cosines of
    a planned link graph."""

    model_id = "test:angles"
    name = "angles"
    path = None
    dim = 2
    fingerprint = "angles-v1"

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = True, **_: Any) -> np.ndarray:
        angles = np.deg2rad([float(t.split()[-1]) for t in texts])
        return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)


@pytest.mark.slow
def test_a_merge_the_support_rule_undoes_gives_the_absorbed_id_back_as_regrouped(tmp_path: Path) -> None:
    """Day 1: stories c-a (a, d) and c-b (b, c). Day 2: e and g link both, enough support to merge them:
    c-b is absorbed into c-a. Day 3: f1 and f2 link b, c, e and g, and the support between the two halves
    falls below the share: the rule splits them again, and the piece holding b takes c-b back, as a batch
    run over the three days names it. The id that vanished on day 2 comes back on day 3, reported as
    regrouped (its items were in c-a), not as a new story."""
    angles = {"a": 0, "b": 90, "c": 85, "d": 5, "e": 45, "g": 48, "f1": 70, "f2": 72}
    day_of = {"a": 1, "b": 1, "c": 1, "d": 1, "e": 2, "g": 2, "f1": 3, "f2": 3}
    order = ["a", "b", "c", "d", "e", "g", "f1", "f2"]
    corpus = pd.DataFrame(
        {
            "id": order,
            "title": [f"story at {angles[i]}" for i in order],
            "published_at": [T + pd.Timedelta(days=day_of[i] - 1, hours=n) for n, i in enumerate(order)],
        }
    )
    days = split_days(corpus, tmp_path / "in", ["2024-01-02", "2024-01-03"])
    kw = dict(model="angles", threshold=0.6, cluster_rule="support")
    state, out = tmp_path / "state", tmp_path / "out"
    runs = [run_daily(_config(d, out, **kw), state, encoder=AngleEncoder()) for d in days]
    status = [dict(zip(r.clusters["cluster_id"], r.clusters["status"], strict=True)) for r in runs]
    assert status[0] == {"c-a": "new", "c-b": "new"}
    assert status[1] == {"c-a": "merged"} and runs[1].stats.extra.merged_into == {"c-b": "c-a"}
    assert status[2] == {"c-a": "regrouped", "c-b": "regrouped"}
    assert runs[2].stats.counts.clusters_new == 0
    final = state_assignment(state)
    assert {i for i, c in final.items() if c == "c-b"} == {"b", "c", "e", "g", "f1", "f2"}
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch", **kw), encoder=AngleEncoder())
    assert batch_assignment(batch.clusters) == final


def _days_and_a_verdict(folder: Path, days: list[dict[str, str]], verdict: tuple[str, str, str]) -> Path:
    """``dayN.parquet`` for each day's ``{id: title}`` (N from 1), and a pair file holding one editors'
    verdict ``(id_a, id_b, score)`` on the first day's texts, merged as an editor merges it."""
    from nlsim.annotation.merge import merge_annotations

    for n, titles in enumerate(days, start=1):
        pd.DataFrame(
            {
                "id": list(titles),
                "title": list(titles.values()),
                "source": "wire",
                "published_at": [T + pd.Timedelta(days=n, hours=h) for h in range(len(titles))],
            }
        ).to_parquet(folder / f"day{n}.parquet", index=False)
    pairs = folder / "pairs.tsv"
    pairs.write_text("pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\n", encoding="utf-8")
    a, b, score = verdict
    texts = days[0]
    marks = folder / "marks.csv"
    pd.DataFrame(
        {"id_a": [a], "id_b": [b], "text_a": [texts[a]], "text_b": [texts[b]], "score": [score]}
    ).to_csv(marks, index=False)
    merge_annotations(marks, pairs, log=lambda _: None)
    return pairs


@pytest.mark.slow
def test_a_verdict_given_on_a_text_that_has_changed_no_longer_acts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Day 1: the editors say a and c are not the same story. Day 2 brings c again with a's title: the old
    verdict would keep apart two items that now read the same. It does not act (the verdict keeps the hashes
    of the texts it was given on), the run says so and its record lists it; the state keeps the verdict."""
    import logging

    first = {"a": "alpha beta gamma delta", "c": "kappa lambda mu nu", "e": "omicron pi rho sigma"}
    pairs = _days_and_a_verdict(tmp_path, [first, {"c": first["a"]}], ("a", "c", "0"))
    enc, state = HashEncoder(), tmp_path / "state"
    one = run_daily(
        _config(tmp_path / "day1.parquet", tmp_path / "out", annotated_pairs=str(pairs)), state, encoder=enc
    )
    assert one.stats.editors is not None and one.stats.editors.cannot_link == 1
    with caplog.at_level(logging.INFO, logger="nlsim"):
        two = run_daily(_config(tmp_path / "day2.parquet", tmp_path / "out"), state, encoder=enc)
    got = state_assignment(state)
    assert got.get("a") is not None and got.get("a") == got.get("c")  # the same title again: one story
    assert two.stats.editors is not None and two.stats.editors.text_changed == [["a", "c"]]
    assert "another text than an item of theirs carries now (a/c)" in caplog.text
    assert "merged with nlsim annotate merge, is the pair's verdict on the new text" in caplog.text
    assert len(open_state(state).verdicts) == 1  # kept: it acts again if an editor's text comes back


@pytest.mark.slow
def test_an_editors_mark_on_the_new_text_makes_a_verdict_whose_text_changed_act_again(tmp_path: Path) -> None:
    """Day 2's run says the editors' "not the same story" on a/c does not act (c's title changed to a's)
    until an editor decides on the new text. The editor marks the pair again in day 2's page, on the new
    text (the page's export: the texts' hashes, the mark's time, ``overrule`` true on a scored training
    pair), and the merge takes it (it refused the new text before); day 3, given the pair file, honours the
    verdict: a and c are kept apart again, no verdict set aside for its text."""
    import datetime as dt

    from nlsim.annotation.merge import merge_annotations
    from nlsim.io import editor_file

    first = {"a": "alpha beta gamma delta", "c": "kappa lambda mu nu", "e": "omicron pi rho sigma"}
    days = [first, {"c": first["a"]}, {"g": "tau upsilon phi chi"}]
    pairs = _days_and_a_verdict(tmp_path, days, ("a", "c", "0"))
    enc, state = HashEncoder(), tmp_path / "state"
    run_daily(
        _config(tmp_path / "day1.parquet", tmp_path / "out", annotated_pairs=str(pairs)), state, encoder=enc
    )
    two = run_daily(_config(tmp_path / "day2.parquet", tmp_path / "out"), state, encoder=enc)
    assert two.stats.editors is not None and two.stats.editors.text_changed == [["a", "c"]]
    joined = state_assignment(state)
    assert joined.get("a") is not None and joined.get("a") == joined.get("c")  # one title: one story
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)).isoformat(timespec="seconds")
    marks = tmp_path / "marks-day2.csv"
    pd.DataFrame(
        {
            "pair_id": [editor_file.pair_id("a", "c")],
            "id_a": ["a"],
            "id_b": ["c"],
            "text_a": [first["a"]],
            "text_b": [first["a"]],
            "score": ["0"],
            "annotator": "desk",
            "sha256_a": [editor_file.text_sha256(first["a"])],
            "sha256_b": [editor_file.text_sha256(first["a"])],
            editor_file.MARKED_AT: [later],
            editor_file.OVERRULE: ["true"],
        }
    ).to_csv(marks, index=False)
    assert merge_annotations(marks, pairs, log=lambda _: None).new_text == ("a/c",)
    three = run_daily(
        _config(tmp_path / "day3.parquet", tmp_path / "out", annotated_pairs=str(pairs)), state, encoder=enc
    )
    assert three.stats.editors is not None and three.stats.editors.text_changed == []
    assert three.stats.editors.cannot_link == 1
    got = state_assignment(state)
    assert got.get("a") is None or got.get("a") != got.get("c")  # kept apart again


@pytest.mark.slow
def test_a_story_joined_only_by_a_verdict_dissolves_once_the_verdict_stops_acting(tmp_path: Path) -> None:
    """Day 1: the editors say a and e are the same story; no link joins them, the verdict makes the cluster.
    Day 2 brings e again with another title: the verdict was given on e's old text and stops acting, so the
    cluster dissolves (the state keeps no story the rule does not make), as a batch run over the same items
    and verdicts has none."""

    first = {"a": "alpha beta gamma delta", "c": "kappa lambda mu nu", "e": "omicron pi rho sigma"}
    pairs = _days_and_a_verdict(tmp_path, [first, {"e": "omicron pi rho sigma tau"}], ("a", "e", "1"))
    enc, state = HashEncoder(), tmp_path / "state"
    kw = {"annotated_pairs": str(pairs)}
    run_daily(_config(tmp_path / "day1.parquet", tmp_path / "out", **kw), state, encoder=enc)
    assert state_assignment(state) == {"a": "c-a", "e": "c-a"}  # joined by the verdict alone
    two = run_daily(_config(tmp_path / "day2.parquet", tmp_path / "out", **kw), state, encoder=enc)
    assert two.stats.editors is not None and two.stats.editors.text_changed == [["a", "e"]]
    assert state_assignment(state) == {}
    assert two.stats.counts.clusters_dissolved == 1
    final = pd.concat([pd.read_parquet(tmp_path / f"day{n}.parquet") for n in (1, 2)])
    final.drop_duplicates("id", keep="last").to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch", **kw), encoder=enc)
    assert batch_assignment(batch.clusters) == {}


@pytest.mark.slow
def test_a_daily_run_searches_the_index_it_asks_for_not_the_one_an_earlier_run_kept(tmp_path: Path) -> None:
    """A day run with ``--index hnsw`` on a state whose kept index is flat searched the flat one (nothing
    had expired, so the kept index was reused) and kept it; an IVF index kept from a day run with
    ``--nprobe 2`` was searched with 2 probes on every later day that left ``--nprobe`` out (the default
    visits ``default_nprobe`` lists). Each day's run now searches the index and the probes it asks for."""
    from nlsim.search.index import default_nprobe

    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out, index_kind="flat"), state, retention_days=None, encoder=enc)
    assert open_state(state).index.kind == "flat"
    second = run_daily(_config(days[1], out, index_kind="hnsw"), state, retention_days=None, encoder=enc)
    assert open_state(state).index.kind == "hnsw"
    assert second.stats.index.startswith("approximate HNSW"), second.stats.index
    # the same day again, searched in an IVF index with 2 probes (another --index: a new run, no replay)
    run_daily(
        _config(days[1], out, index_kind="ivf", nlist=4, nprobe=2), state, retention_days=None, encoder=enc
    )
    kept = open_state(state).index
    assert (kept.kind, kept.params["nlist"], kept.params["nprobe"]) == ("ivf", 4, 2)
    again = run_daily(_config(days[2], out, index_kind="ivf"), state, retention_days=None, encoder=enc)
    assert open_state(state).index.params["nprobe"] == default_nprobe(4) == 4
    assert "nprobe 4" in again.stats.index, again.stats.index


@pytest.mark.slow
def test_a_daily_run_searches_the_kept_index_on_the_gpus_a_batch_run_would_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state's index is saved in its CPU form and loaded on the CPU: a later day's run searched it
    there even where FAISS sees GPUs (with ``--gpu`` too), where a batch run and a day whose index is built
    again search on the GPUs. Without a GPU here, a stand-in for the GPU build's functions checks the
    plumbing (as ``tests/search/test_index.py`` does)."""
    from tests.search.test_index import sharded_like_faiss

    sharded_like_faiss(monkeypatch, 2)  # the kept index is sharded as FAISS shards it, and grown by the day
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    first = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    assert first.stats.index.endswith("on gpu x2, 6 vectors"), first.stats.index
    second = run_daily(_config(days[1], out, use_gpu=True), state, retention_days=None, encoder=enc)
    assert "on gpu x2" in second.stats.index, second.stats.index
    third = run_daily(_config(days[2], out, use_gpu=False), state, retention_days=None, encoder=enc)
    assert "on cpu" in third.stats.index, third.stats.index


@pytest.mark.slow
def test_a_daily_run_with_another_time_window_pairs_the_kept_items_again(tmp_path: Path) -> None:
    """A day run without the --window-hours of the runs before it left the kept items paired under the
    old window (a1 and a2, two hours apart, stayed unpaired beside their new copy a3; so did b1 and b2):
    the state's pairs mixed two settings until the items expired. A change of --k or --window-hours now
    pairs the window again, as a change of threshold does (the vectors are kept), and the run says so."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out, window_hours=1.0), state, retention_days=None, encoder=enc)
    assert ("a1", "a2") not in state_pairs(state)  # two hours apart
    second = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    assert {("a1", "a2"), ("b1", "b2"), ("a1", "a3")} <= state_pairs(state)  # a1's copies, and b1's
    said = " ".join(second.stats.messages)
    assert "window_hours: state has 1.0, this run uses None" in said and "pairing the window again" in said
    assert second.stats.model_switch is not None and not second.stats.model_switch.reembed
    third = run_daily(_config(days[2], out, k=3), state, retention_days=None, encoder=enc)
    assert "k: state has 20, this run uses 3" in " ".join(third.stats.messages)


def test_a_daily_run_with_the_automatic_index_does_not_keep_an_approximate_one_a_small_state_would_not_get(
    tmp_path: Path,
) -> None:
    """``--index auto`` picks the index by the window's size (exact up to 100,000 items): a day run with
    it after a day run with ``--index ivf`` kept searching the approximate IVF index (nothing had expired),
    where a day whose index is built again gets the exact one."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out, index_kind="ivf", nlist=2), state, retention_days=None, encoder=enc)
    assert open_state(state).index.kind == "ivf"
    second = run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    assert open_state(state).index.kind == "flat"
    assert second.stats.index.startswith("exact flat"), second.stats.index


def test_an_undated_day_run_by_its_date_takes_the_start_of_that_day_as_its_clock(tmp_path: Path) -> None:
    """A day whose items have no date takes the start of the run's day as its clock; a day run by date on a
    later one (``--date 2026-11-18``, run on the 25th: a backfill) took the start of today instead, so its
    items were kept from today and the run said "the start of today". It now takes the start of its date."""
    corpus = story_corpus().assign(published_at=None)
    (tmp_path / "in").mkdir()
    corpus.iloc[:6].to_parquet(tmp_path / "in" / "2026-11-18.parquet", index=False)
    config = _config(tmp_path / "in" / "{date}.parquet", tmp_path / "out", timezone="Asia/Taipei")
    run = run_daily(config.with_(date="2026-11-18"), tmp_path / "state", encoder=HashEncoder())
    assert run.stats.as_of == "2026-11-17T16:00:00+00:00"  # midnight in Taipei
    (line,) = [m for m in run.stats.messages if "has a date" in m]
    assert "the window's clock is 2026-11-17 16:00:00+00:00 (the start of 2026-11-18 in Asia/Taipei" in line
    retained = open_state(tmp_path / "state").items["retain_from"]
    assert (retained == pd.Timestamp("2026-11-17T16:00:00Z")).all()


@pytest.mark.slow
def test_an_undated_day_run_again_after_a_later_one_does_not_replace_latest(tmp_path: Path) -> None:
    """A day whose items have no date is told from another by its date, as a day without news is: run
    again after a later day (its ``{date}`` ended by the state's clock), it moved ``OUT/latest`` back to its
    own report. It is now a day older than the runs before it: its report goes under runs/, latest stays on
    the newer one, and the run says so; the newest day run again still moves latest."""
    corpus = story_corpus().assign(published_at=None)
    (tmp_path / "in").mkdir()
    corpus.iloc[:6].to_parquet(tmp_path / "in" / "2026-11-18.parquet", index=False)
    corpus.iloc[6:9].to_parquet(tmp_path / "in" / "2026-11-19.parquet", index=False)
    state, out = tmp_path / "state", tmp_path / "out"
    config = _config(tmp_path / "in" / "{date}.parquet", out, timezone="Asia/Taipei")
    enc = HashEncoder()
    run_daily(config.with_(date="2026-11-18"), state, encoder=enc)
    newer = run_daily(config.with_(date="2026-11-19"), state, encoder=enc)
    again = run_daily(config.with_(date="2026-11-18"), state, encoder=enc)
    assert not again.replayed and again.stats.older_day and again.stats.all_seen
    assert (again.report_dir / "run.json").is_file()  # its report is written, under runs/
    assert (out / "latest").resolve() == newer.report_dir.resolve()
    assert (out / "LATEST").read_text().strip() == newer.run_id
    (line,) = [m for m in again.stats.messages if "a day older than the runs before it" in m]
    assert "have no date, and its day (2026-11-18) ended by this state's clock" in line
    today = run_daily(config.with_(date="2026-11-19"), state, encoder=enc)
    assert not today.stats.older_day and (out / "latest").resolve() == today.report_dir.resolve()


@pytest.mark.slow
def test_an_undated_day_run_again_after_a_later_day_with_the_same_items_is_not_that_days_run(
    tmp_path: Path,
) -> None:
    """Two days whose items have no date and are the same items (nothing new on the 19th) had one input
    key once the state's clock was past both: the 18th run again after the 19th was taken for the 19th's
    run, replayed under its id, while it said it was an older day. Such a day is told from another by its
    date, as a day without news is: it is the 18th, an older day, under its own id; the 19th run again after
    it is the 19th, not that older day's run again, and takes latest."""
    corpus = story_corpus().assign(published_at=None)
    (tmp_path / "in").mkdir()
    for day in ("2026-11-18", "2026-11-19"):
        corpus.iloc[:6].to_parquet(tmp_path / "in" / f"{day}.parquet", index=False)
    state, out = tmp_path / "state", tmp_path / "out"
    config = _config(tmp_path / "in" / "{date}.parquet", out, timezone="Asia/Taipei")
    enc = HashEncoder()
    run_daily(config.with_(date="2026-11-18"), state, encoder=enc)
    newer = run_daily(config.with_(date="2026-11-19"), state, encoder=enc)
    again = run_daily(config.with_(date="2026-11-18"), state, encoder=enc)
    assert not again.replayed and again.stats.older_day and again.run_id != newer.run_id
    assert not any("was already committed" in m for m in again.stats.messages), again.stats.messages
    assert (out / "latest").resolve() == newer.report_dir.resolve()
    today = run_daily(config.with_(date="2026-11-19"), state, encoder=enc)
    assert not today.stats.older_day and (out / "latest").resolve() == today.report_dir.resolve()


@pytest.mark.slow
def test_an_undated_day_run_after_a_later_one_keeps_its_items_from_its_own_date(tmp_path: Path) -> None:
    """The items of a day without dates run after a later day (the 17th, backfilled after the 19th) were
    kept from the state's clock, the 19th, so they outlived the retention a run in order gives them: still
    in the window on the 20th, where run on the 17th they expire, and the 17th run again then added them
    back as new. They are kept from the start of their ``--date``, as that day's dated items would be kept
    from their times, and expire with them; the day run again once they expired is refused as too old."""
    corpus = story_corpus().assign(published_at=None)
    (tmp_path / "in").mkdir()
    for day, rows in (("2026-11-17", slice(4, 6)), ("2026-11-19", slice(0, 4)), ("2026-11-20", slice(6, 8))):
        corpus.iloc[rows].to_parquet(tmp_path / "in" / f"{day}.parquet", index=False)
    config = _config(tmp_path / "in" / "{date}.parquet", tmp_path / "out", timezone="Asia/Taipei")
    enc, windows = HashEncoder(), []
    for order in (("2026-11-17", "2026-11-19", "2026-11-20"), ("2026-11-19", "2026-11-17", "2026-11-20")):
        state = tmp_path / ("state-" + "-".join(d[-2:] for d in order))
        for day in order:
            run = run_daily(config.with_(date=day), state, encoder=enc, retention_days=2.5)
            assert run.stats.older_day == (order[0] == "2026-11-19" and day == "2026-11-17")
        items = open_state(state).items.set_index("id")
        windows.append(sorted(items.index))
    assert windows[1] == windows[0] == ["a1", "a2", "a3", "b1", "b2", "c2"]  # c1 and d1, of the 17th, expired
    with pytest.raises(
        InputError, match=r"older than the window \(no item has a date: their day is --date 2026-11-17"
    ):
        run_daily(config.with_(date="2026-11-17"), state, encoder=enc, retention_days=2.5)  # not back as new


@pytest.mark.slow
def test_a_daily_run_in_another_time_zone_than_the_states_last_run_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A daily run by hand that left out the deployment's ``--timezone Asia/Taipei`` read the day's CMS times
    in UTC, 8 hours late, moved the state's clock with them for good and showed the report in UTC, and said
    only "read as UTC time", as any run in UTC does: nothing told that the state's runs read their times in
    Asia/Taipei. The run now warns, naming both zones; a run back in the state's last zone says nothing."""
    enc, state, out = HashEncoder(), tmp_path / "state", tmp_path / "out"
    for day, rows in (("24", "a1,alpha beta gamma"), ("25", "a2,alpha beta gamma"), ("26", "a3,alpha beta")):
        (tmp_path / f"{day}.csv").write_text(f"id,title,published_at\n{rows},2026/11/{day} 08:00\n")
    first = run_daily(_config(tmp_path / "24.csv", out, timezone="Asia/Taipei"), state, encoder=enc)
    assert not [m for m in first.stats.messages if "time zone" in m]
    with caplog.at_level(logging.WARNING, logger="nlsim"):
        second = run_daily(_config(tmp_path / "25.csv", out), state, encoder=enc)
    said = [m for m in second.stats.messages if "is not the time zone of this state's last run" in m]
    assert len(said) == 1 and said[0].startswith("--timezone UTC is not") and "(Asia/Taipei" in said[0]
    assert said[0] in caplog.text
    again = run_daily(_config(tmp_path / "26.csv", out), state, encoder=enc)
    assert not [m for m in again.stats.messages if "is not the time zone" in m]


def _two_days(tmp_path: Path, name: str = "") -> tuple[Path, Path, list[Path], Any]:
    """Days 1 and 2 run into ``state{name}`` and ``out{name}``: the folders, the days' files and day 2's
    result."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / f"state{name}", tmp_path / f"out{name}"
    run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    assert len(r2.clusters) == 2 and (out / "latest").resolve() == r2.report_dir.resolve()
    return state, out, days, r2


@pytest.mark.slow
def test_the_last_day_run_again_under_another_input_key_gives_its_report_again(tmp_path: Path) -> None:
    """The last day run again after an upgrade (its input key hashed otherwise, as another nlsim hashes it)
    or with a setting that changes the key but nothing in the window: its items were all read by the state's
    last run and nothing changes, so it is that run again: its report written again, ``latest`` left on it,
    nothing committed; never an empty report published over it."""
    state, out, days, r2 = _two_days(tmp_path)

    def content(folder: Path) -> dict[str, Any]:  # the run's record keeps the key its commit kept
        shown = report_content(folder)
        shown["run"].pop("input_key")
        return shown

    published = content(r2.report_dir)
    manifest_path = state / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["last_run"]["input_key"] = "0" * 64  # the key an older nlsim computed
    manifest_path.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    committed = manifest_path.read_bytes()

    for retention in (None, 1000.0):  # the upgrade alone, then a longer retention too (nothing expires)
        again = run_daily(_config(days[1], out), state, retention_days=retention, encoder=HashEncoder())
        assert again.replayed and again.run_id == r2.run_id
        assert (out / "latest").resolve() == r2.report_dir.resolve()
        assert content(out / "latest") == published and len(again.clusters) == 2
        assert any(r2.run_id in m and "again" in m for m in again.stats.messages), again.stats.messages
        assert manifest_path.read_bytes() == committed  # nothing committed
    assert len(list((out / "runs").iterdir())) == 2  # days 1 and 2: no other report
    # the next day runs as ever, after the last run it extends
    r3 = run_daily(_config(days[2], out), state, retention_days=None, encoder=HashEncoder())
    assert not r3.replayed and (out / "latest").resolve() == r3.report_dir.resolve()


@pytest.mark.slow
def test_a_day_killed_before_its_report_then_run_again_under_another_key_gives_its_full_report(
    tmp_path: Path,
) -> None:
    """Day 2 killed after its commit, before its report; run again with a setting that changes its input
    key (a longer retention): ``latest`` is day 2's full report, as an uninterrupted run published it."""
    *_, uninterrupted = _two_days(tmp_path, "-ref")
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    with interrupted_at("report-write"):
        run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    assert not (out / "runs" / uninterrupted.run_id).exists()
    again = run_daily(_config(days[1], out), state, retention_days=1000.0, encoder=HashEncoder())
    assert again.replayed and again.run_id == uninterrupted.run_id and len(again.clusters) == 2
    assert (out / "latest").resolve() == again.report_dir.resolve()
    assert report_content(out / "latest") == report_content(uninterrupted.report_dir)
    assert len(list((out / "runs").iterdir())) == 2


@pytest.mark.slow
def test_the_last_day_run_again_after_an_upgrade_with_the_editors_files_gives_its_report_again(
    tmp_path: Path,
) -> None:
    """With the editors' pair file and verdicts named, as the deployment names them: the last day run
    again under another input key, its verdicts and scored pairs those the state keeps, is that run again."""
    corpus = story_corpus()
    days = split_days(corpus, tmp_path / "in", ["2005-03-02", "2005-03-03"])
    pairs = _scored_day_one(tmp_path, corpus)
    _store(pairs, [("a2", "c1", 0.0), ("a2", "b2", 0.0)])
    config = {"annotated_pairs": str(pairs)}
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out, **config), state, retention_days=None, encoder=HashEncoder())
    r2 = run_daily(_config(days[1], out, **config), state, retention_days=None, encoder=HashEncoder())
    assert len(r2.clusters) == 2 and len(open_state(state).verdicts) == 2
    manifest_path = state / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["last_run"]["input_key"] = "0" * 64  # the key an older nlsim computed
    manifest_path.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    again = run_daily(_config(days[1], out, **config), state, retention_days=None, encoder=HashEncoder())
    assert again.replayed and again.run_id == r2.run_id and len(again.clusters) == 2
    assert (out / "latest").resolve() == r2.report_dir.resolve()


def _angles_corpus(rows: list[tuple[str, str, int, int]]) -> pd.DataFrame:
    """Items from ``(id, title, day, hour)`` rows (titles ``"story at <angle>"``, :class:`AngleEncoder`)."""
    return pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "title": [r[1] for r in rows],
            "published_at": [T + pd.Timedelta(days=r[2] - 1, hours=r[3]) for r in rows],
        }
    )


@pytest.mark.slow
@pytest.mark.parametrize("window_hours", [None, 72.0])
def test_a_group_that_gains_copies_on_a_later_day_asks_for_as_many_neighbours_as_in_a_batch_run(
    tmp_path: Path, window_hours: float | None
) -> None:
    """k = 2. Day 1: g and a copy of it (at 0 degrees), x and y beside it (10 and -12), z at 40 with w1
    and w2 (60 and 62) nearer to it than g is. The group g asks for two neighbours and meets x and y; z
    meets w1 and w2: two stories. Day 2: a third copy of g, so the group now asks for three neighbours, as
    a batch run over both days asks: its third is z, which joins the two stories. The daily run searched
    the group again and ends with the batch run's one cluster, with a time window too (its pair with z
    is one of two earlier items, which no earlier day found)."""
    rows = [
        ("g", "story at 0", 1, 0),
        ("g1", "STORY AT 0", 1, 1),
        ("x", "story at 10", 1, 2),
        ("y", "story at -12", 1, 3),
        ("z", "story at 40", 1, 4),
        ("w1", "story at 60", 1, 5),
        ("w2", "story at 62", 1, 6),
        ("g2", "Story at 0", 2, 0),
    ]
    corpus = _angles_corpus(rows)
    days = split_days(corpus, tmp_path / "in", ["2024-01-02"])
    kw = dict(model="angles", threshold=0.6, k=2, window_hours=window_hours)
    state, out = tmp_path / "state", tmp_path / "out"
    for day in days:
        run_daily(_config(day, out, **kw), state, encoder=AngleEncoder())
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch", **kw), encoder=AngleEncoder())
    assert set(batch_assignment(batch.clusters).values()) == {"c-g"}  # the case needs g's third neighbour
    assert state_assignment(state) == batch_assignment(batch.clusters)


@pytest.mark.slow
def test_a_verdict_that_parts_a_big_group_leaves_none_of_the_groups_extra_neighbours(tmp_path: Path) -> None:
    """k = 2. Day 1: g and two copies of it (at 0 degrees) ask for three neighbours and meet x, y (10 and
    -12) and z (40), which w1 and w2 (60 and 62) are nearer to: one story. Day 2: the editors say g and
    its copy g2 are not the same story: the parts (g with g1, and g2) each ask for two neighbours, as in a
    batch run over both days with the verdict, and meet x and y only. The daily run ends with the batch
    run's clusters: the link day 1 made to z, the group's third neighbour, is no longer one."""
    first = {
        "g": "story at 0",
        "g1": "STORY AT 0",
        "g2": "Story at 0",
        "x": "story at 10",
        "y": "story at -12",
        "z": "story at 40",
        "w1": "story at 60",
        "w2": "story at 62",
    }
    pairs = _days_and_a_verdict(tmp_path, [first, {"u": "story at 170"}], ("g", "g2", "0"))
    kw = dict(model="angles", threshold=0.6, k=2)
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(tmp_path / "day1.parquet", out, **kw), state, encoder=AngleEncoder())
    day2 = _config(tmp_path / "day2.parquet", out, annotated_pairs=str(pairs), **kw)
    run_daily(day2, state, encoder=AngleEncoder())
    everything = pd.concat([pd.read_parquet(tmp_path / f"day{n}.parquet") for n in (1, 2)], ignore_index=True)
    everything.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(
        _config(tmp_path / "all.parquet", tmp_path / "batch", annotated_pairs=str(pairs), **kw),
        encoder=AngleEncoder(),
    )
    got = batch_assignment(batch.clusters)
    assert got["z"] == got["w1"] != got["x"]  # the case needs z to be no neighbour of the parts
    assert state_assignment(state) == got


@pytest.mark.slow
def test_the_last_day_run_again_after_a_regrouping_run_of_it_gives_the_regrouping_report_again(
    tmp_path: Path,
) -> None:
    """The last day run again with another threshold (a new run: the window paired again, nothing new to
    read), then once more under another input key (a longer retention): that is the regrouping run again,
    its report written again, nothing committed; never an empty report published over it."""
    state, out, days, _ = _two_days(tmp_path)
    regrouped = run_daily(
        _config(days[1], out, threshold=0.75), state, retention_days=None, encoder=HashEncoder()
    )
    assert not regrouped.replayed and (out / "latest").resolve() == regrouped.report_dir.resolve()
    manifest_path = state / "MANIFEST.json"
    committed = manifest_path.read_bytes()
    published = report_content(regrouped.report_dir)
    again = run_daily(
        _config(days[1], out, threshold=0.75), state, retention_days=1000.0, encoder=HashEncoder()
    )
    assert again.replayed and again.run_id == regrouped.run_id, again.stats.messages
    assert (out / "latest").resolve() == regrouped.report_dir.resolve()
    assert report_content(out / "latest") == published
    assert manifest_path.read_bytes() == committed


@pytest.mark.slow
def test_the_last_day_run_again_with_an_item_too_old_for_the_window_gives_its_report_again(
    tmp_path: Path,
) -> None:
    """The last day's file holds an item older than the retention (not added, ``too_old``, as in its first
    run): run again under another input key, it is that run again, never an empty report over its own."""
    corpus = story_corpus()
    days = split_days(corpus, tmp_path / "in", ["2005-03-02", "2005-03-03"])
    day2 = pd.read_parquet(days[1])
    old = day2.iloc[[2]].assign(
        id="old1", title="archive item", published_at=day2["published_at"].iloc[2] - pd.Timedelta(days=90)
    )
    pd.concat([day2, old], ignore_index=True).to_parquet(days[1], index=False)
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, encoder=HashEncoder())
    r2 = run_daily(_config(days[1], out), state, encoder=HashEncoder())
    assert r2.stats.counts.too_old == 1 and len(r2.clusters) == 2
    manifest_path = state / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["last_run"]["input_key"] = "0" * 64  # the key an older nlsim computed
    manifest_path.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    committed = manifest_path.read_bytes()
    again = run_daily(_config(days[1], out), state, encoder=HashEncoder())
    assert again.replayed and again.run_id == r2.run_id, again.stats.messages
    assert (out / "latest").resolve() == r2.report_dir.resolve() and len(again.clusters) == 2
    assert manifest_path.read_bytes() == committed


class BatchNoiseEncoder(HashEncoder):
    """:class:`HashEncoder` with a trace of each text's place in the batch it is embedded in, as a CPU's
    kernels sum otherwise for another batch: one text embedded in two places gets two vectors a hair apart
    (the later place's a hair nearer every other text)."""

    model_id = "test:hash-words-noise"
    name = "hash-words-noise"

    def __init__(self) -> None:
        super().__init__(192)
        self.dim = 192 + 64
        self.fingerprint = "hash-words-noise-v1"

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = True, **_: Any) -> np.ndarray:
        words = HashEncoder(self.dim - 64).encode(texts)
        noise = np.zeros((len(texts), 64), np.float32)
        for i in range(len(texts)):
            noise[i, i % 64] = 1e-3 * (64 - i % 64)  # a lower norm, a higher cosine, the later the place
        out = np.hstack([words, noise])
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.mark.slow
def test_an_item_between_two_parts_of_one_text_joins_the_part_a_daily_run_met_first(tmp_path: Path) -> None:
    """A headline sent twice a day apart is two groups of copies under ``--window-hours`` (b1, b2 in the
    morning; a1, a2 after midnight, 19 hours later), and an item between them (n, the afternoon's version)
    links to both with one text's score. Each part was scored by its own vector, and a text's vectors
    differ in their last bits by the batch it was embedded in (an AMX Xeon's kernels against an EPYC's):
    the batch run put n with whichever part the noise favoured (here the later), where the daily run had
    put it with the morning's, the only part there then. Every part of one text is scored by its first
    copy's vector, and a tie is settled by the order the items came in: both runs put n with b1 and b2."""
    text = "storm hits the north coast"
    rows = [  # the later part first in the file
        ("a1", text, pd.Timedelta(days=1, hours=1)),
        ("a2", text, pd.Timedelta(days=1, hours=1, minutes=30)),
        ("n", f"{text} tonight", pd.Timedelta(hours=16)),
        ("b1", text, pd.Timedelta(hours=6)),
        ("b2", text, pd.Timedelta(hours=6, minutes=30)),
    ]
    corpus = pd.DataFrame(
        {"id": [r[0] for r in rows], "title": [r[1] for r in rows], "published_at": [T + r[2] for r in rows]}
    )
    kw: dict[str, Any] = dict(model="hash-noise", window_hours=12.0, cluster_rule="support")
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(
        _config(tmp_path / "all.parquet", tmp_path / "batch", **kw), encoder=BatchNoiseEncoder()
    )
    days = split_days(corpus.sort_values("published_at"), tmp_path / "in", ["2024-01-02"])
    state = tmp_path / "state"
    for day in days:
        run_daily(_config(day, tmp_path / "out", **kw), state, encoder=BatchNoiseEncoder())
    together = {
        frozenset(m for m, c in state_assignment(state).items() if c == cluster) for cluster in ("c-b1",)
    }
    assert together == {frozenset({"b1", "b2", "n"})}
    assert batch_assignment(batch.clusters) == state_assignment(state)
