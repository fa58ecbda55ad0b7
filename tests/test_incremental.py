"""Incremental runs: stable cluster ids, the merge rule, and N daily runs == one run over everything."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.clustering import cluster_labels
from nlsim.dedup import DedupConfig, run_dedup
from nlsim.incremental import drop_items, order_key_of, order_keys, run_incremental, update_clusters
from nlsim.state import open_state
from tests.incremental_helpers import (
    FAST_MODEL,
    HashEncoder,
    batch_assignment,
    bbc_corpus,
    report_content,
    split_days,
    state_assignment,
    state_pairs,
    story_corpus,
)

T = pd.Timestamp("2024-01-01", tz="UTC")


def _keys(spec: dict[str, int]) -> dict[str, tuple[int, int, str]]:
    return {i: order_key_of(T + pd.Timedelta(hours=h), i) for i, h in spec.items()}


# --- the pure rule ------------------------------------------------------------------------------------


def test_new_grown_merged_and_survivor_rule() -> None:
    keys = _keys({"a": 1, "b": 2, "c": 3, "d": 4, "x": 5, "y": 6, "z": 7})
    d1 = update_clusters({}, {}, keys, new_ids=["a", "b", "c", "d"], pairs=[("b", "a"), ("c", "d")])
    assert d1.assignment == {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"}
    assert d1.events["status"].tolist() == ["new", "new"]
    # day 2: x joins c-c (grown); y bridges c-a and c-c (merged): the earliest key member (a) survives
    d2 = update_clusters(d1.assignment, d1.anchors, keys, new_ids=["x"], pairs=[("x", "d")])
    assert d2.assignment["x"] == "c-c" and d2.events["status"].tolist() == ["grown"]
    d3 = update_clusters(d2.assignment, d2.anchors, keys, new_ids=["y"], pairs=[("y", "d"), ("y", "b")])
    assert set(d3.assignment.values()) == {"c-a"}
    ev = d3.events.iloc[0]
    assert (ev["cluster_id"], ev["status"], ev["absorbed"], ev["added"]) == ("c-a", "merged", ["c-c"], ["y"])
    assert d3.merged_into == {"c-c": "c-a"}
    assert "c-c" not in d3.anchors


def test_old_lone_item_earlier_than_cluster_takes_over_like_batch() -> None:
    keys = _keys({"x": 1, "y": 2, "z": 3, "w": 4})
    d1 = update_clusters({}, {}, keys, new_ids=["x", "y", "z"], pairs=[("y", "z")])
    assert d1.assignment == {"y": "c-y", "z": "c-y"}
    d2 = update_clusters(d1.assignment, d1.anchors, keys, new_ids=["w"], pairs=[("w", "x"), ("w", "z")])
    assert d2.assignment == {"x": "c-x", "y": "c-x", "z": "c-x", "w": "c-x"}
    assert d2.events["status"].tolist() == ["merged"] and d2.merged_into == {"c-y": "c-x"}


def test_late_item_keeps_existing_id() -> None:
    keys = _keys({"early": 0, "a": 1, "b": 2})
    d1 = update_clusters({}, {}, keys, new_ids=["a", "b"], pairs=[("a", "b")])
    d2 = update_clusters(d1.assignment, d1.anchors, keys, new_ids=["early"], pairs=[("early", "b")])
    assert d2.assignment["early"] == "c-a" and d2.events["status"].tolist() == ["grown"]


def test_undated_items_sort_last() -> None:
    keys = {"u": order_key_of(None, "u"), **_keys({"v": 5})}
    d1 = update_clusters({}, {}, keys, new_ids=["u", "v"], pairs=[("u", "v")])
    assert d1.assignment == {"u": "c-v", "v": "c-v"}
    assert order_keys(["p", "q"], [None, "2024-01-01"]) == {
        "p": (1, 0, "p"),
        "q": order_key_of("2024-01-01", "q"),
    }


def test_drop_items_keeps_cluster_id_while_a_member_is_kept() -> None:
    keys = _keys({"a": 1, "b": 2, "c": 3, "n": 4})
    d1 = update_clusters({}, {}, keys, new_ids=["a", "b", "c"], pairs=[("a", "b"), ("b", "c")])
    assign, anchors = drop_items(d1.assignment, d1.anchors, ["a", "b"])
    assert assign == {"c": "c-a"} and anchors == {"c-a": keys["a"]}
    d2 = update_clusters(assign, anchors, keys, new_ids=["n"], pairs=[("n", "c")])
    assert d2.assignment == {"c": "c-a", "n": "c-a"}
    assert drop_items(d1.assignment, d1.anchors, ["a", "b", "c"]) == ({}, {})


@pytest.mark.parametrize("seed", range(20))
def test_daily_updates_equal_batch_components(seed: int) -> None:
    """Random graphs, items arriving in time order over 1-5 days: ids equal the batch rule's."""
    rng = random.Random(seed)
    n = rng.randint(5, 60)
    ids = [f"i{j:03d}" for j in range(n)]
    rng.shuffle(ids)  # ids do not follow time order
    hours = sorted(rng.randint(0, 100) for _ in range(n))  # ties in time are broken by id
    times = [T + pd.Timedelta(hours=h) for h in hours]
    edges = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randint(0, 2 * n))}
    pairs = (
        pd.DataFrame(sorted(edges), columns=["a", "b"]).assign(similarity=0.9)
        if edges
        else pd.DataFrame({"a": [], "b": [], "similarity": []})
    )
    batch = cluster_labels(ids, pd.Series(times), pairs.astype({"a": "int64", "b": "int64"}))
    expected = {ids[j]: c for j, c in enumerate(batch) if c is not None}

    keys = order_keys(ids, times)
    # day boundaries at distinct hours, so that every item of a later day is later than earlier items
    cuts = sorted(rng.sample(sorted(set(hours)), min(len(set(hours)), rng.randint(0, 4))))
    day_of = [sum(h >= c for c in cuts) for h in hours]
    assign: dict[str, str] = {}
    anchors: dict = {}
    for d in range(len(cuts) + 1):
        new = [ids[j] for j in range(n) if day_of[j] == d]
        today = [(ids[a], ids[b]) for a, b in edges if max(day_of[a], day_of[b]) == d]
        upd = update_clusters(assign, anchors, keys, new_ids=new, pairs=today)
        for cid in upd.events["cluster_id"]:  # statuses are consistent with the ids
            assert cid in set(upd.assignment.values())
        assign, anchors = upd.assignment, upd.anchors
    assert assign == expected


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
    )
    base.update(kw)
    return DedupConfig(corpus=corpus, out=out, **base)


def test_three_daily_runs_keep_ids_and_report_changes(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_incremental(_config(days[0], out), state, retention_days=None, encoder=enc)
    a1 = state_assignment(state)
    assert a1 == {"a1": "c-a1", "a2": "c-a1", "b1": "c-b1", "b2": "c-b1"}
    status = sorted(zip(r1.clusters["cluster_id"], r1.clusters["status"], strict=True))
    assert status == [("c-a1", "new"), ("c-b1", "new")]

    r2 = run_incremental(_config(days[1], out), state, retention_days=None, encoder=enc)
    a2 = state_assignment(state)
    assert all(a2[i] == c for i, c in a1.items())  # every item keeps its id
    assert a2["a3"] == "c-a1" and a2["c1"] == a2["c2"] == "c-c1"
    status = dict(zip(r2.clusters["cluster_id"], r2.clusters["status"], strict=True))
    assert status == {"c-a1": "grown", "c-c1": "new"}
    assert r2.stats.counts["new"] == 3 and r2.stats.counts["skipped"] == 0

    r3 = run_incremental(_config(days[2], out), state, retention_days=None, encoder=enc)
    a3 = state_assignment(state)
    assert {i for i, c in a3.items() if c == "c-a1"} == {"a1", "a2", "a3", "b1", "b2", "x1"}
    assert a3["c1"] == "c-c1" and a3["d1"] == a3["d2"] == "c-d1"
    status = dict(zip(r3.clusters["cluster_id"], r3.clusters["status"], strict=True))
    assert status == {"c-a1": "merged", "c-d1": "new"}
    merged = r3.clusters.set_index("cluster_id").loc["c-a1"]
    assert list(merged["absorbed"]) == ["c-b1"] and list(merged["added_ids"]) == ["x1"]
    assert r3.stats.counts["clusters_merged"] == 1 and r3.stats.counts["clusters_absorbed"] == 1

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


def test_repeat_is_idempotent_and_edits_are_reembedded(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_incremental(_config(days[0], out), state, retention_days=None, encoder=enc)
    before = report_content(r1.report_dir)
    again = run_incremental(_config(days[0], out), state, retention_days=None, encoder=enc)
    assert again.replayed and again.run_id == r1.run_id
    assert report_content(again.report_dir) == before
    # an edited item (same id, other text) is re-embedded and matched again; the rest is skipped
    edited = pd.read_parquet(days[0])
    edited.loc[edited["id"] == "c1", "title"] = "alpha beta gamma delta"
    edited.to_parquet(tmp_path / "edited.parquet", index=False)
    r2 = run_incremental(_config(tmp_path / "edited.parquet", out), state, retention_days=None, encoder=enc)
    c = r2.stats.counts
    assert (c["new"], c["changed"], c["skipped"]) == (0, 1, 5)
    assert state_assignment(state)["c1"] == "c-a1"


def test_retention_drops_old_items_and_refuses_too_old_ones(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    run_incremental(_config(days[0], out), state, retention_days=1.0, encoder=enc)
    # day 3 as of 2005-03-03 06:00: day-1 items (before 03-02 06:00) leave the window
    r3 = run_incremental(
        _config(days[2], out), state, retention_days=1.0, encoder=enc, as_of="2005-03-03 06:00"
    )
    assert r3.stats.counts["expired"] == 6 and r3.stats.counts["kept"] == 3
    # what day 3 would have linked (A, B, d1) has left the window: no cluster remains
    assert state_assignment(state) == {}
    assert len(open_state(state).clusters) == 0 and r3.stats.counts["pairs"] == 0
    late = story_corpus().iloc[[0]].assign(id="late")
    late.to_parquet(tmp_path / "late.parquet", index=False)
    r4 = run_incremental(_config(tmp_path / "late.parquet", out), state, retention_days=1.0, encoder=enc)
    assert r4.stats.counts["too_old"] == 1 and r4.stats.counts["new"] == 0


@pytest.mark.slow
def test_daily_runs_equal_single_run_with_real_encoder(tmp_path: Path, fast_encoder) -> None:  # noqa: ANN001
    """The real small model on BBC news split over three days: same pairs, same clusters, same ids as one
    batch run and as one incremental run over everything."""
    corpus = bbc_corpus(n_other=100, n_rewrites=20)
    days = split_days(corpus, tmp_path / "in", ["2005-03-04", "2005-03-08"])
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    kw = dict(model=FAST_MODEL, threshold=0.9, k=50, text_fields=("title", "description"))
    for d in days:
        run_incremental(
            _config(d, tmp_path / "out", **kw), tmp_path / "state", retention_days=None, encoder=fast_encoder
        )
    one = run_incremental(
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
    assert one.stats.counts["clusters_new"] == len(batch.clusters)


def test_undated_items_expire_by_the_day_first_seen(tmp_path: Path) -> None:
    corpus = story_corpus().assign(published_at=None)
    corpus.to_parquet(tmp_path / "undated.parquet", index=False)
    enc = HashEncoder()
    state, out = tmp_path / "state", tmp_path / "out"
    r1 = run_incremental(_config(tmp_path / "undated.parquet", out), state, retention_days=30, encoder=enc)
    today = pd.Timestamp.now(tz="UTC").floor("D")
    assert r1.run_id.startswith(today.strftime("%Y%m%d"))
    assert (open_state(state).items["retain_from"] == today).all()
    assert state_assignment(state)["b2"] == "c-a1"  # undated: ties broken by id, the bridge x1 joins all
    later = (today + pd.Timedelta(days=31)).isoformat()
    r2 = run_incremental(
        _config(tmp_path / "undated.parquet", out), state, retention_days=30, encoder=enc, as_of=later
    )
    # seen before (skipped), and now out of the window (expired): nothing is kept
    assert r2.stats.counts["expired"] == len(corpus) and r2.stats.counts["skipped"] == len(corpus)
    assert r2.stats.counts["kept"] == 0
