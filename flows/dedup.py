"""Prefect flow ``news-dedup``: the near-duplicate report, one task per stage of :mod:`nlsim.dedup`.

Run it without a server (Prefect starts a temporary one)::

    python -m flows.dedup --corpus data/thucnews.parquet --out reports/thucnews --calibration CAL.json

Served as the deployment ``news-dedup/daily`` (see ``prefect.yaml`` and ``flows/serve.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from nlsim import dedup as stages
from nlsim.corpus import Corpus
from nlsim.dedup import DedupConfig, DedupResult

IO_RETRIES = 2


@task(name="load-corpus", retries=IO_RETRIES, retry_delay_seconds=2, cache_policy=NO_CACHE)
def load_corpus_task(config: DedupConfig) -> Corpus:
    return stages.load_stage(config)


@task(name="load-encoder", retries=IO_RETRIES, retry_delay_seconds=2, cache_policy=NO_CACHE)
def load_encoder_task(config: DedupConfig) -> tuple[Any, Any, stages.Threshold]:
    from nlsim.encoders import load_encoder

    encoder = load_encoder(config.model)
    reranker = stages.reranker_stage(config, getattr(encoder, "path", None))
    threshold = stages.resolve_threshold(config, getattr(encoder, "path", None), reranker)
    print(f"model {encoder.model_id}; {threshold.source}")
    return encoder, reranker, threshold


@task(name="convert", cache_policy=NO_CACHE)
def convert_task(corpus: Corpus, mode: str) -> list[str]:
    return stages.convert_stage(corpus, mode)


@task(name="embed", cache_policy=NO_CACHE)
def embed_task(texts: list[str], encoder: Any, config: DedupConfig) -> tuple[np.ndarray, bool]:
    emb, hit = stages.embed_stage(texts, encoder, config)
    print("embeddings: reused from the cache" if hit else f"embedded {len(texts)} items")
    return emb, hit


@task(name="index", cache_policy=NO_CACHE)
def index_task(emb: np.ndarray, config: DedupConfig) -> Any:
    return stages.index_stage(emb, config)


@task(name="neighbors", cache_policy=NO_CACHE)
def neighbors_task(
    index: Any, emb: np.ndarray, corpus: Corpus, threshold: float, config: DedupConfig
) -> pd.DataFrame:
    return stages.neighbors_stage(index, emb, corpus, threshold, config)


@task(name="rerank", cache_policy=NO_CACHE)
def rerank_task(
    candidates: pd.DataFrame, texts: list[str], reranker: Any, threshold: float, config: DedupConfig
) -> pd.DataFrame:
    return stages.rerank_stage(candidates, texts, reranker, threshold, config)


@task(name="cluster", cache_policy=NO_CACHE)
def cluster_task(
    corpus: Corpus, pairs: pd.DataFrame, config: DedupConfig
) -> tuple[pd.DataFrame, pd.DataFrame]:
    return stages.cluster_stage(corpus, pairs, config)


@task(name="save-index", retries=IO_RETRIES, retry_delay_seconds=2, cache_policy=NO_CACHE)
def save_index_task(index: Any, emb: np.ndarray, corpus: Corpus, encoder: Any, config: DedupConfig) -> Path:
    return stages.save_index_stage(index, emb, corpus, encoder, config)


@task(name="write-report", retries=IO_RETRIES, retry_delay_seconds=2, cache_policy=NO_CACHE)
def report_task(
    config: DedupConfig, corpus: Corpus, pairs: pd.DataFrame, clusters: pd.DataFrame, summary: dict[str, Any]
) -> dict[str, Path]:
    return stages.report_stage(config, corpus, pairs, clusters, summary)


def publish_artifacts(result: DedupResult) -> None:
    """The Markdown summary and the largest clusters as Prefect artifacts."""
    from nlsim.report import render_markdown

    create_markdown_artifact(
        render_markdown(result.pairs, result.clusters, result.summary),
        key="news-dedup-summary",
        description="near-duplicate report summary",
    )
    top = result.clusters.head(50)
    table = [
        {
            "cluster_id": r.cluster_id,
            "size": int(r.size),
            "representative": r.representative_title,
            "max_similarity": round(float(r.max_similarity), 4),
            "sources": ", ".join(r.sources),
        }
        for r in top.itertuples()
    ]
    if table:
        create_table_artifact(table, key="news-dedup-clusters", description="largest clusters")


def search_and_rerank(
    timed: Any,
    index: Any,
    emb: np.ndarray,
    docs: Corpus,
    texts: list[str],
    reranker: Any,
    thr: stages.Threshold,
    config: DedupConfig,
) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """The ``neighbors`` task, then (with a reranker) the ``rerank`` task on the candidates down to its
    floor; returns the pairs and the rerank figures for the summary (``None`` without a reranker)."""
    floor = reranker.candidate_floor(thr.value) if reranker is not None else thr.value
    pairs = timed("neighbors", neighbors_task, index, emb, docs, floor, config)
    if reranker is None:
        return pairs, None
    candidates = len(pairs)
    pairs = timed("rerank", rerank_task, pairs, texts, reranker, thr.value, config)
    return pairs, stages.rerank_figures(reranker, floor, candidates, len(pairs))


@flow(name="news-dedup", log_prints=True)
def news_dedup(
    corpus: str,
    out: str,
    model: str = stages.DEFAULT_MODEL,
    convert: str = "tw2sp",
    threshold: float | None = None,
    calibration: str | None = None,
    text_fields: str = "title,description",
    k: int = 10,
    window_hours: float | None = None,
    index_kind: str = "auto",
    use_gpu: bool | None = None,
    representative: str = "earliest",
    quarantine: str | None = None,
    batch_size: int = 64,
    cache: bool = True,
    rerank: bool | None = None,
    state: str | None = None,
    retention_days: float = 30.0,
    as_of: str | None = None,
    rebuild_state: bool = False,
) -> dict[str, Any]:
    """Near-duplicate report for ``corpus`` into the folder ``out``; returns the run summary.

    With ``state`` (a folder kept between runs) the run is incremental: only unseen items are embedded and
    matched against the kept window of ``retention_days``, cluster ids stay stable, and the report goes to
    ``out/runs/<run id>/`` (``out/latest`` points at it); see ``docs/operations.md``.
    """
    import time

    config = DedupConfig(
        corpus=corpus,
        out=out,
        model=model,
        convert=convert,
        threshold=threshold,
        calibration=calibration,
        text_fields=text_fields,
        k=k,
        window_hours=window_hours,
        index_kind=index_kind,
        use_gpu=use_gpu,
        representative=representative,
        quarantine=quarantine,
        batch_size=batch_size,
        cache=cache,
        rerank=rerank,
    )
    if state:
        return _incremental(config, state, retention_days, as_of, rebuild_state)
    timings: dict[str, float] = {}

    def timed(name: str, fn: Any, *args: Any) -> Any:
        t = time.perf_counter()
        value = fn(*args)
        timings[name] = time.perf_counter() - t
        return value

    docs = timed("load", load_corpus_task, config)
    encoder, reranker, thr = timed("model", load_encoder_task, config)
    texts = timed("convert", convert_task, docs, config.convert)
    emb, hit = timed("embed", embed_task, texts, encoder, config)
    index = timed("index", index_task, emb, config)
    pairs, rerank = search_and_rerank(timed, index, emb, docs, texts, reranker, thr, config)
    pair_table, clusters = timed("cluster", cluster_task, docs, pairs, config)
    if config.save_index:
        timed("save_index", save_index_task, index, emb, docs, encoder, config)
    summary = stages.make_summary(
        config, docs, encoder, thr, index, timings, hit, pair_table, clusters, rerank
    )
    files = report_task(config, docs, pair_table, clusters, summary)
    result = DedupResult(out=Path(out), files=files, summary=summary, pairs=pair_table, clusters=clusters)
    publish_artifacts(result)
    print(
        f"report: {Path(out).resolve()} - {summary['items']} items, {len(pair_table)} pairs, "
        f"{len(clusters)} clusters"
    )
    return {**result.summary, "files": {k: str(v) for k, v in files.items()}}


@task(name="incremental-dedup", cache_policy=NO_CACHE)
def incremental_task(
    config: DedupConfig, state: str, retention_days: float, as_of: str | None, rebuild_state: bool
) -> Any:
    from nlsim.incremental import run_incremental

    return run_incremental(
        config, state, retention_days=retention_days or None, as_of=as_of, rebuild_state=rebuild_state
    )


def _incremental(
    config: DedupConfig, state: str, retention_days: float, as_of: str | None, rebuild_state: bool
) -> dict[str, Any]:
    """The incremental run as one task (it holds the state's lock throughout), then its figures as
    Prefect artifacts: counts, per-stage timings, model and threshold, and the clusters touched today."""
    from nlsim.run_stats import RunStats

    result = incremental_task(config, state, retention_days, as_of, rebuild_state)
    stats = result.stats if isinstance(result.stats, dict) else result.stats.to_dict()
    md = RunStats(**{k: v for k, v in stats.items() if k in RunStats.__dataclass_fields__}).markdown()
    if result.replayed:
        md += "\nThis input was already committed; its stored report was written again.\n"
    md += f"\nReport: `{result.report_dir}`\n"
    create_markdown_artifact(
        md, key="news-dedup-daily-run", description="incremental run: counts and timings"
    )
    clusters = result.clusters if result.clusters is not None else pd.DataFrame()
    table = [
        {
            "cluster_id": r.cluster_id,
            "status": r.status,
            "size": int(r.size),
            "added": ", ".join(map(str, r.added_ids)),
            "absorbed": ", ".join(map(str, r.absorbed)),
            "representative": r.representative_title,
        }
        for r in clusters.head(100).itertuples()
    ]
    if table:
        create_table_artifact(
            table, key="news-dedup-daily-clusters", description="clusters new/grown/merged today"
        )
    print(f"run {result.run_id}: {stats['counts']}; report {result.report_dir}")
    return {**stats, "run_id": result.run_id, "replayed": result.replayed, "report": str(result.report_dir)}


def main(argv: list[str] | None = None) -> int:
    from nlsim.commands.dedup import add_dedup_options, add_state_options, dedup_params

    parser = argparse.ArgumentParser(prog="python -m flows.dedup", description=news_dedup.__doc__)
    add_dedup_options(parser)
    add_state_options(parser)
    args = parser.parse_args(argv)
    news_dedup(
        **dedup_params(args),
        state=args.state,
        retention_days=args.retention_days,
        as_of=args.as_of,
        rebuild_state=args.rebuild_state,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
