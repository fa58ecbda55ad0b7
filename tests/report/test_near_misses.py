"""What the report missed: ``near_misses.parquet``, the best candidate pairs just below the threshold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import DedupResult, run_dedup
from nlsim.report.near_misses import COSINE_MARGIN, NEAR_MISSES_SCHEMA

THRESHOLD = 0.65


def _run(corpus: Path, out: Path, encoder: object = None, **kw: object) -> DedupResult:
    cfg = DedupConfig.of(
        corpus=str(corpus),
        out=str(out),
        model=kw.pop("model", "paraphrase-MiniLM-L3-v2"),
        convert="none",
        text_fields=("title",),
        k=5,
        cache=False,
        progress=False,
        save_index=False,
        **kw,
    )
    return run_dedup(cfg, encoder=encoder)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "bbc.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:300].to_parquet(path)
    return path


def _cluster_of(result: DedupResult) -> dict[str, str]:
    return {m: c.cluster_id for c in result.clusters.itertuples() for m in c.member_ids}


def _apart(result: DedupResult, pairs: pd.DataFrame) -> list[bool]:
    """Per pair, whether the report left its two items out of one cluster."""
    cluster = _cluster_of(result)
    ends = zip(pairs["id_a"], pairs["id_b"], strict=True)
    return [cluster.get(a) is None or cluster.get(a) != cluster.get(b) for a, b in ends]


def _ids(pairs: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted(zip(pairs["id_a"], pairs["id_b"], strict=True))


@pytest.mark.slow
def test_a_cosine_report_lists_the_best_pairs_below_its_threshold(
    corpus: Path, tmp_path: Path, fast_encoder: object
) -> None:
    got = _run(corpus, tmp_path / "r", fast_encoder, threshold=THRESHOLD, near_misses=7)
    path = got.report_dir / "near_misses.parquet"
    assert pq.read_schema(path).remove_metadata() == NEAR_MISSES_SCHEMA
    near = pd.read_parquet(path)
    assert len(near) == 7 == got.summary["counts"]["near_misses"]
    sims = near["similarity"].to_numpy()
    assert (sims < THRESHOLD).all() and (sims >= THRESHOLD - COSINE_MARGIN - 1e-6).all()
    assert (np.diff(sims) <= 0).all()  # nearest the threshold first
    assert all(_apart(got, near))  # pairs the report already put in one cluster are not missed
    clusters = [None if pd.isna(c) else c for c in near["cluster_a"]]
    assert clusters == [_cluster_of(got).get(a) for a in near["id_a"]] and any(clusters)
    titles = pd.read_parquet(corpus).set_index("id")["title"]
    assert near["title_a"].tolist() == titles[near["id_a"]].tolist()

    # the report's own pairs are those of a run without near misses
    plain = _run(corpus, tmp_path / "plain", fast_encoder, threshold=THRESHOLD, near_misses=0)
    assert plain.pairs[["id_a", "id_b", "similarity"]].equals(got.pairs[["id_a", "id_b", "similarity"]])
    assert len(pd.read_parquet(plain.report_dir / "near_misses.parquet")) == 0
    # every near miss is a neighbour pair below the threshold that no earlier row outranks
    lower = _run(corpus, tmp_path / "lower", fast_encoder, threshold=THRESHOLD - COSINE_MARGIN, near_misses=0)
    below = lower.pairs[lower.pairs["similarity"] < THRESHOLD]
    best = below[_apart(got, below)].sort_values("similarity", ascending=False, kind="mergesort").head(7)
    assert _ids(best) == _ids(near)


@pytest.mark.slow
def test_a_reranked_report_lists_the_rescored_candidates_that_missed_the_rerank_threshold(
    corpus: Path, tmp_path: Path, small_reranked_model: Path
) -> None:
    from nlsim.rerank.reranker import load_reranker

    reranker = load_reranker(small_reranked_model)
    assert reranker is not None and reranker.threshold is not None
    got = _run(corpus, tmp_path / "r", model=str(small_reranked_model), near_misses=500)
    near = pd.read_parquet(got.report_dir / "near_misses.parquet")
    assert len(near) > 0
    assert (near["similarity"] < reranker.threshold).all()
    assert (near["cosine"] >= reranker.candidate_floor(reranker.threshold) - 1e-6).all()
    np.testing.assert_allclose(
        near["similarity"], reranker.combine(near["cosine"], near["cross_encoder"]), atol=1e-5
    )
    rerank = got.summary["rerank"]
    # near misses come from the candidates the cross-encoder rescored (those from the story floor up; the
    # search's candidates down to the topic threshold are more)
    assert rerank["rescored"] is not None and rerank["rescored"] <= rerank["candidates"]
    # (the kept pairs include exact copies, which are never rescored: the bound is the rescored count)
    assert all(_apart(got, near)) and len(near) <= rerank["rescored"]


@pytest.mark.slow
def test_a_daily_report_keeps_its_near_misses_when_written_again(
    tmp_path: Path, fast_encoder: object
) -> None:
    from tests.incremental_helpers import run_daily, split_days, story_corpus

    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    cfg = DedupConfig.of(
        corpus=days[0],
        out=str(tmp_path / "out"),
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        threshold=THRESHOLD,
        progress=False,
    )
    first = run_daily(cfg, tmp_path / "state", retention_days=None, encoder=fast_encoder)
    near = pd.read_parquet(first.report_dir / "near_misses.parquet")
    assert len(near) > 0 and (near["similarity"] < THRESHOLD).all()
    again = run_daily(cfg, tmp_path / "state", retention_days=None, encoder=fast_encoder)
    assert again.replayed
    assert pd.read_parquet(again.report_dir / "near_misses.parquet").equals(near)


def test_a_negative_count_of_near_misses_is_refused() -> None:
    from nlsim.errors import ConfigError

    with pytest.raises(ConfigError, match="--near-misses must be >= 0"):
        DedupConfig.of(corpus="c.parquet", out="out", threshold=0.9, near_misses=-1)


@pytest.mark.slow
def test_a_model_trained_before_topic_calibrations_says_it_makes_no_topic_groups(
    corpus: Path, tmp_path: Path, small_reranked_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A fine-tuned model folder without ``topic_calibration.json`` (trained by an earlier nlsim): the report
    has no topic groups, and says why and what to give; with ``--topic-threshold`` it has them again."""
    import logging
    import shutil

    older = tmp_path / "older-model"
    shutil.copytree(small_reranked_model, older)
    (older / "topic_calibration.json").unlink(missing_ok=True)
    with caplog.at_level(logging.INFO, logger="nlsim"):
        got = _run(corpus, tmp_path / "r", model=str(older))
    assert "no topic groups: the model has a calibration but no topic calibration" in caplog.text
    assert "--topic-threshold" in caplog.text
    assert got.summary["counts"]["topics"] in (0, None)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="nlsim"):
        _run(corpus, tmp_path / "r2", model=str(older), topic_threshold=0.5)
    assert "no topic groups" not in caplog.text


@pytest.mark.slow
@pytest.mark.parametrize("count", [0, 20, 500])
def test_a_pair_read_in_one_order_changes_nothing_in_the_report(
    corpus: Path,
    tmp_path: Path,
    small_reranked_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    count: int,
) -> None:
    """The rerank stage reads a pair's second order only where it can reach the threshold, and the near
    misses finish those they may need: the pairs and the near misses are those of reading every pair
    twice."""
    import logging

    from nlsim.rerank import second_reading

    model = small_reranked_model
    with caplog.at_level(logging.INFO, logger="nlsim"):
        got = _run(corpus, tmp_path / "once", model=str(model), near_misses=count, topic_threshold=0.5)
    waited = [line for line in caplog.text.splitlines() if "waits (they cannot reach the threshold" in line]
    assert waited and " 0 of them in both orders" not in waited[0]
    monkeypatch.setattr(second_reading, "needs_second", lambda bounds, threshold: np.ones(len(bounds), bool))
    both = _run(corpus, tmp_path / "twice", model=str(model), near_misses=count, topic_threshold=0.5)
    topics = [pd.read_parquet(r.report_dir / "topics.parquet") for r in (got, both)]
    assert len(topics[0]) and topics[0].equals(topics[1])  # the topic groups keep the pairs read once
    for name in ("pairs.parquet", "near_misses.parquet"):
        one, two = (pd.read_parquet(r.report_dir / name) for r in (got, both))
        assert one[["id_a", "id_b"]].equals(two[["id_a", "id_b"]]), name
        np.testing.assert_allclose(one["similarity"], two["similarity"], atol=1e-6)
        np.testing.assert_allclose(one["cross_encoder"], two["cross_encoder"], atol=1e-6)
    assert got.summary["rerank"]["rescored"] == both.summary["rerank"]["rescored"]


@pytest.mark.slow
def test_a_cosine_report_with_topic_groups_lists_no_topic_link_as_a_near_miss(
    tmp_path: Path, fast_encoder: object
) -> None:
    """With topic groups the neighbour search goes down to the topic threshold (0.6 here, the story
    threshold 0.9), and every pair it found below the story threshold was a near miss: the queue of pairs
    "the model came close to grouping" listed links of 0.65 at a threshold of 0.9. Near misses are, as
    documented, the pairs down to 0.05 below the threshold; the topic groups keep their links."""
    titles = [
        "Floods hit the north of the country",
        "Floods hit the north of the country today",
        "Heavy rain causes floods in northern regions",
        "Heavy rain causes floods in the northern regions",
        "Stock markets fall sharply on Monday",
    ]
    stamps = pd.to_datetime([f"2024-05-01T0{k}:00Z" for k in range(len(titles))], utc=True)
    corpus = tmp_path / "floods.parquet"
    pd.DataFrame(
        {"id": [f"i{k}" for k in range(len(titles))], "title": titles, "published_at": stamps}
    ).to_parquet(corpus)
    got = _run(corpus, tmp_path / "r", fast_encoder, threshold=0.9, topic_threshold=0.6)
    assert got.summary["counts"]["topics"] == 1  # the two flood stories, linked below 0.9: one topic group
    near = pd.read_parquet(got.report_dir / "near_misses.parquet")
    assert (near["similarity"] >= 0.9 - COSINE_MARGIN - 1e-6).all(), near[["id_a", "id_b", "similarity"]]
    assert got.summary["counts"]["near_misses"] == len(near)
