"""The newest day run again with other settings: ``OUT/latest`` shows the day's whole report under them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from nlsim.dedup.run import run_dedup
from nlsim.dedup.state import open_state
from tests.dedup.test_daily import _config, _two_days
from tests.incremental_helpers import (
    HashEncoder,
    batch_assignment,
    report_content,
    run_daily,
    split_days,
    state_assignment,
    story_corpus,
)


def _day_report(folder: Path) -> dict[str, Any]:
    """What an editor reads of a day's report: each cluster's id, status, members and joined items, and the
    pairs."""
    shown = report_content(folder)
    clusters = {
        c["cluster_id"]: (c["status"], c["member_ids"], c["added_ids"], c["absorbed"])
        for c in shown["clusters"]
    }
    pairs = {(p["id_a"], p["id_b"], p["cluster_id"]) for p in shown["pairs"]}
    return {"clusters": clusters, "pairs": pairs}


def _run_json(out: Path) -> dict[str, Any]:
    return json.loads((out / "latest" / "run.json").read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("change", [{"index_kind": "hnsw"}, {"index_kind": "ivf", "nlist": 2}])
def test_the_last_day_run_again_with_another_index_publishes_its_whole_report(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """Another ``--index`` is a new run (the state keeps the index it asks for), whose report, published as
    ``latest``, is the day's: its clusters, their statuses and its pairs, never an empty one."""
    state, out, days, r2 = _two_days(tmp_path)
    before = _day_report(r2.report_dir)
    again = run_daily(_config(days[1], out, **change), state, retention_days=None, encoder=HashEncoder())
    assert not again.replayed and again.run_id != r2.run_id
    assert (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == before
    assert _run_json(out)["counts"]["clusters"] == 2


@pytest.mark.slow
def test_the_newest_day_run_again_after_an_older_days_run_publishes_its_whole_report(tmp_path: Path) -> None:
    """Days 1 and 2, day 1 again (an older day: ``latest`` stays on day 2), then day 2 again: ``latest``
    is day 2's report, its clusters and pairs as first published, never an empty one."""
    state, out, days, r2 = _two_days(tmp_path)
    before = _day_report(r2.report_dir)
    older = run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    assert older.stats.older_day and (out / "latest").resolve() == r2.report_dir.resolve()
    again = run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    assert (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == before


@pytest.mark.slow
def test_the_last_day_run_again_under_another_cluster_rule_clusters_under_it(tmp_path: Path) -> None:
    """Three days under ``--cluster-rule components`` (x1 joins stories A and B), the third again under
    ``support``: a new run that clusters the window under the support rule, as one batch run under it does,
    records that rule, and publishes the day's whole report (its new cluster too), never the old one."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    for day in days:
        last = run_daily(_config(day, out), state, retention_days=None, encoder=HashEncoder())
    assert len(set(state_assignment(state).values())) == 3  # A and B merged into c-a1, c-c1, c-d1
    again = run_daily(
        _config(days[2], out, cluster_rule="support"), state, retention_days=None, encoder=HashEncoder()
    )
    assert not again.replayed and again.run_id != last.run_id
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(
        _config(tmp_path / "all.parquet", tmp_path / "batch", cluster_rule="support"), encoder=HashEncoder()
    )
    assert state_assignment(state) == batch_assignment(batch.clusters)
    assert _run_json(out)["cluster_rule"].startswith("support")
    shown = _day_report(out / "latest")["clusters"]
    assert "c-d1" in shown and shown["c-d1"][0] == "new"  # the day's new story is still in its report
    assert "c-b1" in shown  # the story the components rule had merged is apart again


@pytest.mark.slow
def test_the_last_day_run_again_under_another_topic_rule_groups_topics_under_it(tmp_path: Path) -> None:
    """Three days with topic groups under ``--topic-rule components`` (x1 gathers stories A and B into one
    topic), the third again under ``support`` with a share of 1: a new run whose topic groups, in the report
    and in the state, are those of one batch run under that rule, never the old ones replayed."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    kw: dict[str, Any] = dict(topic_threshold=0.45, topic_rule="components", cluster_rule="support")
    for day in days:
        run_daily(_config(day, out, **kw), state, retention_days=None, encoder=HashEncoder())
    assert len(pd.read_parquet(out / "latest" / "topics.parquet")) == 1
    kw.update(topic_rule="support", topic_support=1.0)
    again = run_daily(_config(days[2], out, **kw), state, retention_days=None, encoder=HashEncoder())
    assert not again.replayed
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch", **kw), encoder=HashEncoder())
    batch = pd.read_parquet(tmp_path / "batch" / "topics.parquet")
    latest = pd.read_parquet(out / "latest" / "topics.parquet")
    assert latest["member_ids"].map(list).tolist() == batch["member_ids"].map(list).tolist()
    assert set(open_state(state).items["topic_id"].dropna()) == set(batch["topic_id"])


@pytest.mark.slow
def test_the_last_day_run_again_with_the_judges_pairs_is_judged(tmp_path: Path) -> None:
    """Day 2 run again with ``--judge-pairs`` it was first run without: its report is judged against them,
    and covers the day's clusters."""
    from tests.dedup.test_daily import _scored_day_one

    state, out, days, r2 = _two_days(tmp_path)
    pairs = _scored_day_one(tmp_path, story_corpus())
    again = run_daily(
        _config(days[1], out, judge_pairs=str(pairs)), state, retention_days=None, encoder=HashEncoder()
    )
    assert again.stats.judge is not None and _run_json(out)["judge"] is not None
    assert _day_report(out / "latest") == _day_report(r2.report_dir)


@pytest.mark.slow
def test_the_last_day_run_again_with_fewer_near_misses_keeps_as_many(tmp_path: Path) -> None:
    """Day 3 (at threshold 0.75, x1's links to stories A and B are near misses) run again with
    ``--near-misses 1``: its report keeps one near miss, and the day's clusters."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    for day in days:
        last = run_daily(_config(day, out, threshold=0.75), state, retention_days=None, encoder=HashEncoder())
    assert len(pd.read_parquet(out / "latest" / "near_misses.parquet")) == 2
    again = run_daily(
        _config(days[2], out, threshold=0.75, near_misses=1),
        state,
        retention_days=None,
        encoder=HashEncoder(),
    )
    assert len(pd.read_parquet(out / "latest" / "near_misses.parquet")) == 1
    assert again.stats.counts.near_misses == _run_json(out)["counts"]["near_misses"] == 1
    assert _day_report(out / "latest") == _day_report(last.report_dir)


@pytest.mark.slow
@pytest.mark.parametrize(
    "change",
    [{"as_of": "2005-03-04T00:00:00+00:00"}, {"timezone": "Asia/Taipei"}],
    ids=["a later clock", "another zone"],
)
def test_the_last_day_run_again_with_another_clock_or_zone_records_it(
    tmp_path: Path, change: dict[str, str]
) -> None:
    """Day 2 again with a later ``--as-of`` that expires nothing, or in another ``--timezone``: a new run
    whose record says the clock or the zone asked for, with the day's whole report."""
    state, out, days, r2 = _two_days(tmp_path)
    zone = {"timezone": change["timezone"]} if "timezone" in change else {}
    again = run_daily(
        _config(days[1], out, **zone),
        state,
        retention_days=None,
        as_of=change.get("as_of"),
        encoder=HashEncoder(),
    )
    assert not again.replayed and (out / "latest").resolve() == again.report_dir.resolve()
    shown = _run_json(out)
    assert {k: shown[k] for k in change} == change
    assert _day_report(out / "latest") == _day_report(r2.report_dir)


@pytest.mark.slow
def test_the_last_day_run_again_with_a_row_now_quarantined_counts_it(tmp_path: Path) -> None:
    """Day 2's file sent again with one more row, dated far in the future (set aside in the quarantine
    file): the report counts it quarantined, and shows the day's clusters."""
    state, out, days, r2 = _two_days(tmp_path)
    day2 = pd.read_parquet(days[1])
    bad = day2.iloc[[0]].assign(id="late1", published_at=pd.Timestamp("2099-01-01", tz="UTC"))
    pd.concat([day2, bad], ignore_index=True).to_parquet(tmp_path / "day2-bad.parquet", index=False)
    config = _config(tmp_path / "day2-bad.parquet", out, quarantine=str(tmp_path / "bad.csv"))
    run_daily(config, state, retention_days=None, encoder=HashEncoder())
    assert _run_json(out)["counts"]["quarantined"] == 1
    assert _day_report(out / "latest") == _day_report(r2.report_dir)


@pytest.mark.slow
def test_the_last_day_run_again_with_another_representative_shows_it_in_the_days_report(
    tmp_path: Path,
) -> None:
    """A chain p1 - p2 - p3 (p2 linked to both, p1 and p3 not linked), p1 on day 1 and the others on day 2,
    day 2 run again with ``--representative central``: a new run whose report lists the day's cluster, under
    its central item p2 where the first run showed the earliest, p1."""
    day0 = story_corpus()["published_at"].min()
    titles = {"p1": "w1 w2 w3 w4", "p2": "w1 w2 w3 w5", "p3": "w1 w2 w6 w5"}
    corpus = (
        story_corpus()
        .head(3)
        .assign(
            id=list(titles),
            title=list(titles.values()),
            published_at=[day0 + pd.Timedelta(days=d) for d in (0, 1, 1)],
        )
    )
    days = split_days(corpus, tmp_path / "in", ["2005-03-02"])
    state, out = tmp_path / "state", tmp_path / "out"
    for day in days:
        last = run_daily(_config(day, out), state, retention_days=None, encoder=HashEncoder())
    before = _day_report(last.report_dir)
    assert before["clusters"]["c-p1"][0] == "new"
    again = run_daily(
        _config(days[1], out, representative="central"), state, retention_days=None, encoder=HashEncoder()
    )
    assert not again.replayed and (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == before
    shown = pd.read_parquet(out / "latest" / "clusters.parquet").set_index("cluster_id")
    assert shown.at["c-p1", "representative"] == "p2"


@pytest.mark.slow
def test_the_last_day_run_again_with_an_item_of_an_earlier_day_sent_again_publishes_its_whole_report(
    tmp_path: Path,
) -> None:
    """Day 2's file also holds day 1's c1, sent again (skipped by day 2's run): day 2 run again with another
    ``--index`` is a new run whose report, as ``latest``, is the day's, never an empty one."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    day1, day2 = pd.read_parquet(days[0]), pd.read_parquet(days[1])
    pd.concat([day2, day1[day1["id"] == "c1"]], ignore_index=True).to_parquet(days[1], index=False)
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    assert r2.stats.counts.skipped == 1 and len(r2.clusters) == 2
    again = run_daily(
        _config(days[1], out, index_kind="hnsw"), state, retention_days=None, encoder=HashEncoder()
    )
    assert (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == _day_report(r2.report_dir)


@pytest.mark.slow
@pytest.mark.parametrize("change", ["one more item", "one item corrected"])
def test_the_last_day_run_again_with_an_item_more_or_corrected_publishes_its_whole_report(
    tmp_path: Path, change: str
) -> None:
    """Day 2's file sent again with one more item of that day (a lone story), or with one item's title
    corrected: a new run whose report, as ``latest``, lists the day's clusters with what it changed, never
    only the changed item."""
    state, out, days, r2 = _two_days(tmp_path)
    before = _day_report(r2.report_dir)
    day2 = pd.read_parquet(days[1])
    if change == "one more item":
        more = day2.iloc[[0]].assign(id="g1", title="brand new lone story here")
        day2 = pd.concat([day2, more], ignore_index=True)
    else:
        day2.loc[day2["id"] == "e1", "title"] = "tau upsilon phi psi"
    day2.to_parquet(tmp_path / "day2-again.parquet", index=False)
    again = run_daily(
        _config(tmp_path / "day2-again.parquet", out), state, retention_days=None, encoder=HashEncoder()
    )
    assert not again.replayed and (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == before
    assert _run_json(out)["counts"]["clusters"] == 2


@pytest.mark.slow
def test_the_last_day_run_again_with_another_nprobe_keeps_it(tmp_path: Path) -> None:
    """Day 2 run again with ``--index ivf --nlist 2``, then again with ``--nprobe 1``: the second is a new
    run, never a replay, and the state keeps the probes it asks for, with the day's whole report."""
    from nlsim.dedup.state import open_state

    state, out, days, r2 = _two_days(tmp_path)
    ivf = run_daily(
        _config(days[1], out, index_kind="ivf", nlist=2), state, retention_days=None, encoder=HashEncoder()
    )
    again = run_daily(
        _config(days[1], out, index_kind="ivf", nlist=2, nprobe=1),
        state,
        retention_days=None,
        encoder=HashEncoder(),
    )
    assert not again.replayed and again.run_id != ivf.run_id
    kept = open_state(state).index
    assert kept is not None and (kept.params["nlist"], kept.params["nprobe"]) == (2, 1)
    assert _day_report(out / "latest") == _day_report(r2.report_dir)


class _HashCross:
    """A cross-encoder that reads a pair as the hash encoder's cosine of its two texts."""

    def predict(self, a: list[str], b: list[str], progress: bool = False, runner: object = None) -> Any:
        import numpy as np

        ea, eb = HashEncoder().encode(a, progress=False), HashEncoder().encode(b, progress=False)
        return np.clip((ea * eb).sum(axis=1), 0.0, 1.0)

    def digest(self) -> str:
        return "hash-cross"


def _with_a_reranker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model of the run has a reranker: :class:`_HashCross` alone (weight 0), on the 0-1 scale."""
    from nlsim.models import choice
    from nlsim.rerank.reranker import Reranker

    def reranker(ms: Any, path: Any) -> Reranker | None:
        if ms.rerank is False:
            return None
        return Reranker(cross_encoder=_HashCross(), slope=1.0, intercept=0.0, weight=0.0)

    monkeypatch.setattr(choice, "_reranker_for", reranker)


def _series_days(tmp_path: Path) -> list[Path]:
    """Day 1: an index bulletin and a lone story; day 2: the next session's bulletin (one template, another
    figure: a series, held below the threshold by the veto) and another lone story."""
    day0 = story_corpus()["published_at"].min()
    rows = [
        ("s1", "index fell 53 points to 21330", 0),
        ("l1", "alpha beta gamma delta", 0),
        ("s2", "index fell 53 points to 15509", 1),
        ("l2", "epsilon zeta eta theta", 1),
    ]
    corpus = (
        story_corpus()
        .head(4)
        .assign(
            id=[r[0] for r in rows],
            title=[r[1] for r in rows],
            published_at=[day0 + pd.Timedelta(days=r[2], hours=i) for i, r in enumerate(rows)],
        )
    )
    return split_days(corpus, tmp_path / "in", ["2005-03-02"])


@pytest.mark.slow
@pytest.mark.parametrize("first_veto", [True, False], ids=["veto then none", "none then veto"])
def test_the_last_day_run_again_with_the_series_veto_changed_scores_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_veto: bool
) -> None:
    """Days 1 and 2 with a reranker, day 2 run again with the series veto turned the other way: a new run
    whose window is paired again under the new setting (the series pair links without the veto, and no
    longer with it), never the first report replayed."""
    _with_a_reranker(monkeypatch)
    days = _series_days(tmp_path)
    state, out = tmp_path / "state", tmp_path / "out"
    for day in days:
        config = _config(day, out, series_veto=first_veto)
        last = run_daily(config, state, retention_days=None, encoder=HashEncoder())
    linked = {tuple(sorted(m)) for m in pd.read_parquet(last.report_dir / "clusters.parquet")["member_ids"]}
    assert linked == (set() if first_veto else {("s1", "s2")})
    again = run_daily(
        _config(days[1], out, series_veto=not first_veto), state, retention_days=None, encoder=HashEncoder()
    )
    assert not again.replayed and again.run_id != last.run_id
    assert (out / "latest").resolve() == again.report_dir.resolve()
    shown = pd.read_parquet(out / "latest" / "clusters.parquet")
    listed = {
        tuple(sorted(m))
        for m, s in zip(shown["member_ids"], shown["status"], strict=True)
        if s != "dissolved"
    }
    assert listed == ({("s1", "s2")} if first_veto else set())
    pairs = open_state(state).pairs
    series = pairs[(pairs["id_a"] == "s1") & (pairs["id_b"] == "s2")]["similarity"]
    assert len(series) == first_veto and (series >= 0.7).all()  # the kept pair scored under the new setting
    assert "series_veto" in again.stats.model_switch.changed


@pytest.mark.slow
def test_the_last_day_run_again_with_its_judge_pairs_file_edited_in_place_is_judged_against_the_edit(
    tmp_path: Path,
) -> None:
    """Three days judged against ``pairs.tsv``; the editors correct the file under the same name (a1-b1
    now the same story) and day 3 is run again with the same options: a new run judged against the
    corrected pairs, never the first judgement replayed. The same file moved away afterwards: the run of
    the same input is still a replay, which needs the file no more."""
    from tests.dedup.test_daily import _scored_day_one

    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    pairs = _scored_day_one(tmp_path, story_corpus())
    for day in days:
        first = run_daily(
            _config(day, out, judge_pairs=str(pairs)), state, retention_days=None, encoder=HashEncoder()
        )
    assert first.stats.judge is not None and first.stats.judge.same_story_pairs == 2
    edited = pd.read_csv(pairs, sep="\t")
    edited.loc[(edited["id_a"] == "a1") & (edited["id_b"] == "b1"), "score"] = 1.0
    edited.to_csv(pairs, sep="\t", index=False)
    again = run_daily(
        _config(days[-1], out, judge_pairs=str(pairs)), state, retention_days=None, encoder=HashEncoder()
    )
    assert not again.replayed and again.run_id != first.run_id
    assert again.stats.judge is not None and again.stats.judge.same_story_pairs == 3
    assert _run_json(out)["judge"]["same_story_pairs"] == 3
    assert _day_report(out / "latest") == _day_report(first.report_dir)
    pairs.rename(tmp_path / "pairs-moved.tsv")
    replay = run_daily(
        _config(days[-1], out, judge_pairs=str(pairs)), state, retention_days=None, encoder=HashEncoder()
    )
    assert replay.replayed and replay.run_id == again.run_id
    assert replay.stats.judge is not None and replay.stats.judge.same_story_pairs == 3


@pytest.mark.slow
@pytest.mark.parametrize("change", [{}, {"index_kind": "hnsw"}], ids=["as first run", "another index"])
def test_an_older_day_run_again_lists_its_days_clusters_in_its_own_report(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """Days 1 and 2, then day 1 again (an older day: ``latest`` stays on day 2): its own report in ``runs/``
    lists the clusters day 1's report listed, with their statuses, as they stand (story A grew on day 2),
    as the newest day's report run again does; never an empty report."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    r2 = run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    first = _day_report(r1.report_dir)["clusters"]
    assert {c: s[0] for c, s in first.items()} == {"c-a1": "new", "c-b1": "new"}
    again = run_daily(_config(days[0], out, **change), state, retention_days=None, encoder=HashEncoder())
    assert again.stats.older_day and (out / "latest").resolve() == r2.report_dir.resolve()
    shown = _day_report(again.report_dir)["clusters"]
    assert {c: s[0] for c, s in shown.items()} == {"c-a1": "new", "c-b1": "new"}
    assert shown["c-a1"][1] == str(["a1", "a2", "a3"])  # as it stands: a3 joined it on day 2
    run = json.loads((again.report_dir / "run.json").read_text(encoding="utf-8"))
    assert run["counts"]["clusters"] == 2


@pytest.mark.slow
def test_a_pinned_later_clock_leaves_the_newest_day_and_the_next_one_not_older(tmp_path: Path) -> None:
    """Days 1 and 2, day 2 again with ``--as-of`` pinned a day after its items: the state's clock moves on,
    but the newest day is still day 2. Day 2 run again without ``--as-of`` is that day again (``latest`` on
    its whole report), never an older day; day 3, whose items are dated before the pinned clock but after
    every item the state has seen, is the next day, published as ``latest``."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    for day in days[:2]:
        r2 = run_daily(_config(day, out), state, retention_days=None, encoder=HashEncoder())
    before = _day_report(r2.report_dir)
    pinned = run_daily(
        _config(days[1], out), state, retention_days=None, as_of="2005-03-04T00:00Z", encoder=HashEncoder()
    )
    assert not pinned.stats.older_day and _day_report(out / "latest") == before
    again = run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    assert not again.stats.older_day and (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == before
    r3 = run_daily(_config(days[2], out), state, retention_days=None, encoder=HashEncoder())
    assert not r3.stats.older_day and (out / "latest").resolve() == r3.report_dir.resolve()
    assert r3.stats.counts.new == 3


@pytest.mark.slow
def test_a_day_run_again_whose_first_report_is_not_in_out_says_its_report_lists_what_it_changes(
    tmp_path: Path,
) -> None:
    """Days 1 and 2 into ``out``, then day 1 again into another ``--out``, which lacks day 1's report: the
    run cannot list the day's clusters again, and says so, naming the run and where its report was looked
    for, instead of an empty report without a word."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    elsewhere = tmp_path / "elsewhere"
    again = run_daily(_config(days[0], elsewhere), state, retention_days=None, encoder=HashEncoder())
    assert again.stats.older_day and not _day_report(again.report_dir)["clusters"]
    (line,) = [m for m in again.stats.messages if r1.run_id in m and "no report" in m]
    assert str(elsewhere / "runs" / r1.run_id) in line


@pytest.mark.slow
def test_a_dated_day_run_again_after_a_later_day_without_news_leaves_latest_on_the_newest_day(
    tmp_path: Path,
) -> None:
    """Days 1 and 2, then day 3 without news (``--date 2005-03-03``: the clock stands still at day 2's
    latest item), then day 2 again, with or without its ``--date``, and day 1 between: each is a day older
    than the quiet day, whose report stays ``latest``, in whatever order they are run. The quiet day run
    again is the newest day still, and day 3's file with its items moves ``latest`` on."""
    state, out, days, _ = _two_days(tmp_path)
    empty = tmp_path / "empty.parquet"
    pd.read_parquet(days[0]).head(0).to_parquet(empty, index=False)
    quiet = run_daily(
        _config(empty, out, date="2005-03-03", state=str(state)),
        state,
        retention_days=None,
        encoder=HashEncoder(),
    )
    assert not quiet.stats.older_day and (out / "latest").resolve() == quiet.report_dir.resolve()
    for day, date in ((days[1], "2005-03-02"), (days[0], None), (days[1], None)):
        config = _config(day, out, date=date, state=str(state))
        again = run_daily(config, state, retention_days=None, encoder=HashEncoder())
        assert again.stats.older_day, (day, date)
        assert (out / "latest").resolve() == quiet.report_dir.resolve(), (day, date)
        assert (out / "LATEST").read_text().strip() == quiet.run_id
    assert open_state(state).last_run["newest_day"] == "2005-03-03T00:00:00+00:00"
    once_more = run_daily(
        _config(empty, out, date="2005-03-03", state=str(state)),
        state,
        retention_days=None,
        encoder=HashEncoder(),
    )
    assert not once_more.stats.older_day
    assert (out / "latest").resolve() == once_more.report_dir.resolve()
    r3 = run_daily(_config(days[2], out), state, retention_days=None, encoder=HashEncoder())
    assert not r3.stats.older_day and (out / "latest").resolve() == r3.report_dir.resolve()


@pytest.mark.slow
def test_an_undated_item_first_seen_under_a_pinned_clock_does_not_move_the_days(tmp_path: Path) -> None:
    """Day 1, then day 2 with one item undated, run with ``--as-of`` pinned two days after it: the undated
    item is kept from the pinned clock, and that time made the next day, day 3, run without ``--as-of``
    and dated before the pin but after every dated item, a day older than the runs before it (``latest``
    stayed on day 2). The pin is no day of the undated item's: day 3 is the next day, published as
    ``latest``, and the undated item is still kept from the pinned clock."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    day2 = pd.read_parquet(days[1])
    day2.loc[day2["id"] == "e1", "published_at"] = pd.NaT
    day2.to_parquet(tmp_path / "day2-undated.parquet", index=False)
    state, out = tmp_path / "state", tmp_path / "out"
    run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    pin = "2005-03-05T00:00:00+00:00"
    r2 = run_daily(
        _config(tmp_path / "day2-undated.parquet", out),
        state,
        retention_days=None,
        as_of=pin,
        encoder=HashEncoder(),
    )
    assert not r2.stats.older_day and (out / "latest").resolve() == r2.report_dir.resolve()
    r3 = run_daily(_config(days[2], out), state, retention_days=None, encoder=HashEncoder())
    assert not r3.stats.older_day and (out / "latest").resolve() == r3.report_dir.resolve()
    assert (out / "LATEST").read_text().strip() == r3.run_id
    kept = open_state(state).items.set_index("id")
    assert kept.loc["e1", "retain_from"] == pd.Timestamp(pin)  # retention as before: from the pinned clock
