"""Two levels in one report: story clusters inside topic groups, in a batch run and over daily runs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from incremental_helpers import HashEncoder, run_daily

from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup
from nlsim.dedup.state import open_state

DAY0 = pd.Timestamp("2024-05-01", tz="UTC")
# with HashEncoder (bags of words): one registration story (a1, a2: cosine 0.83), one answers story (b1,
# b2: 0.83), the two stories linked at 0.5 (the same exam sitting's other news: one topic), a schedule
# item x linked to both at 0.55, an unrelated item z
ITEMS = [
    ("a1", "exam 2010 sitting registration opens monday", 1),
    ("b1", "exam 2010 sitting answers published math", 1),
    ("a2", "exam 2010 sitting registration opens today", 2),
    ("b2", "exam 2010 sitting answers published english", 2),
    ("x", "exam 2010 sitting venues announced", 3),
    ("z", "heavy rain in the south", 3),
]


def _corpus() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [i for i, _, _ in ITEMS],
            "title": [t for _, t, _ in ITEMS],
            "published_at": [DAY0 + pd.Timedelta(days=d - 1, hours=n) for n, (_, _, d) in enumerate(ITEMS)],
        }
    )


def _config(corpus: Path, out: Path, **kw: object) -> DedupConfig:
    settings: dict[str, object] = dict(
        model="hash",
        convert="none",
        threshold=0.7,
        topic_threshold=0.45,
        k=10,
        cache=False,
        progress=False,
        save_index=False,
        text_fields=("title",),
    )
    settings.update(kw)
    return DedupConfig.of(corpus=corpus, out=out, **settings)  # type: ignore[arg-type]


def test_a_batch_report_holds_stories_and_the_topic_around_them(tmp_path: Path) -> None:
    _corpus().to_parquet(tmp_path / "news.parquet", index=False)
    result = run_dedup(_config(tmp_path / "news.parquet", tmp_path / "out"), encoder=HashEncoder())
    out = tmp_path / "out"
    clusters = pd.read_parquet(out / "clusters.parquet")
    stories = {tuple(m): t for m, t in zip(clusters["member_ids"], clusters["topic_id"], strict=True)}
    assert stories == {("a1", "a2"): "t-a1", ("b1", "b2"): "t-a1"}
    topics = pd.read_parquet(out / "topics.parquet")
    assert topics["topic_id"].tolist() == ["t-a1"]
    assert topics["member_ids"].iloc[0].tolist() == ["a1", "b1", "a2", "b2", "x"]  # earliest first
    assert (topics["size"].iloc[0], topics["stories"].iloc[0]) == (5, 3)  # two stories and x
    assert sorted(topics["cluster_ids"].iloc[0]) == ["c-a1", "c-b1"]
    members = pd.read_csv(out / "members.csv", dtype=str)
    assert set(members["topic_id"]) == {"t-a1"}
    assert "topics" in pd.read_excel(out / "report.xlsx", sheet_name=None)
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert (run["counts"]["topics"], run["counts"]["topic_items"]) == (1, 5)
    assert result.stats.counts.clusters == 2
    # without topic groups: the same stories, no topic
    plain = run_dedup(
        _config(tmp_path / "news.parquet", tmp_path / "plain", topics=False), encoder=HashEncoder()
    )
    assert pd.read_parquet(tmp_path / "plain" / "topics.parquet").empty
    assert plain.clusters["topic_id"].isna().all()


def test_daily_runs_keep_story_and_topic_ids_and_equal_a_batch_run(tmp_path: Path) -> None:
    corpus = _corpus()
    state, out = tmp_path / "state", tmp_path / "daily"
    topics_by_day = []
    for day in (1, 2, 3):
        part = corpus[corpus["id"].isin([i for i, _, d in ITEMS if d == day])]
        path = tmp_path / f"day{day}.parquet"
        part.to_parquet(path, index=False)
        run_daily(_config(path, out), state, retention_days=None, encoder=HashEncoder())
        items = open_state(state).items
        topics_by_day.append(
            {i: t for i, t in zip(items["id"], items["topic_id"], strict=True) if pd.notna(t)}
        )
    # day 1: a1 and b1 share a topic; day 2 their stories form inside it; day 3 x joins: one id throughout
    assert topics_by_day[0] == {"a1": "t-a1", "b1": "t-a1"}
    assert topics_by_day[1] == dict.fromkeys(["a1", "b1", "a2", "b2"], "t-a1")
    assert topics_by_day[2] == dict.fromkeys(["a1", "b1", "a2", "b2", "x"], "t-a1")
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch"), encoder=HashEncoder())
    items = open_state(state).items
    assert {i: c for i, c in zip(items["id"], items["cluster_id"], strict=True) if pd.notna(c)} == {
        m: r.cluster_id for r in batch.clusters.itertuples() for m in r.member_ids
    }
    batch_topics = pd.read_parquet(tmp_path / "batch" / "topics.parquet")
    assert {
        m: t for t, ms in zip(batch_topics["topic_id"], batch_topics["member_ids"], strict=True) for m in ms
    } == (topics_by_day[2])
    # the day's report lists the topic of its stories
    latest = pd.read_parquet(out / "latest" / "topics.parquet")
    assert latest["topic_id"].tolist() == ["t-a1"]


def test_an_editors_verdict_below_the_topic_level_keeps_two_stories_in_other_topics(tmp_path: Path) -> None:
    _corpus().to_parquet(tmp_path / "news.parquet", index=False)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\n"
        f"p1\ttrain\ta1\tb1\t{ITEMS[0][1]}\t{ITEMS[1][1]}\t0.5\n",
        encoding="utf-8",
    )
    (tmp_path / "pairs.verdicts.csv").write_text(
        "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n,a1,b1,0.5,train,desk,marks.csv,\n",
        encoding="utf-8",
    )
    run_dedup(
        _config(tmp_path / "news.parquet", tmp_path / "out", annotated_pairs=str(pairs)),
        encoder=HashEncoder(),
    )
    clusters = pd.read_parquet(tmp_path / "out" / "clusters.parquet")
    topic_of = {tuple(m): t for m, t in zip(clusters["member_ids"], clusters["topic_id"], strict=True)}
    assert topic_of[("a1", "a2")] != topic_of[("b1", "b2")]
