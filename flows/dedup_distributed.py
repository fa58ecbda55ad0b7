"""Prefect flow ``news-dedup-distributed``: the ``news-dedup`` report with embedding sharded over Dask.

The texts are cut into shards; each shard is embedded by a task on a Dask worker (``DaskTaskRunner`` from
``prefect-dask``), which loads the encoder once and keeps it. Every other stage is the ``news-dedup``
flow's own task (``flows/dedup.py``), so both flows write the same report.

Where the shards run is a flow parameter:

* ``dask_address=None``: a local Dask cluster of ``n_workers`` processes, started for the run and stopped
  after it;
* ``dask_address="tcp://scheduler:8786"``: an existing cluster (``dask scheduler`` + ``dask worker``s on
  other machines, each with nlsim installed and the model available under ``NLSIM_HOME``).

Run it::

    python -m flows.dedup_distributed --corpus data/thucnews.parquet --out reports/thuc-dask \
        --threshold 0.95 --n-workers 2
    python -m flows.dedup_distributed ... --dask-address tcp://10.0.0.5:8786
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.dedup import (
    cluster_task,
    convert_task,
    index_task,
    load_corpus_task,
    load_encoder_task,
    publish_artifacts,
    report_task,
    save_index_task,
    search_and_rerank,
)
from nlsim import dedup as stages
from nlsim.dedup import DedupConfig, DedupResult
from nlsim.streaming import embed_texts, shard_slices


def make_task_runner(dask_address: str | None, n_workers: int = 2, threads_per_worker: int = 1) -> Any:
    """A ``DaskTaskRunner``: on the scheduler at ``dask_address``, or on a new local cluster."""
    from prefect_dask import DaskTaskRunner

    if dask_address:
        return DaskTaskRunner(address=dask_address)
    return DaskTaskRunner(
        cluster_class="distributed.LocalCluster",
        cluster_kwargs={"n_workers": int(n_workers), "threads_per_worker": int(threads_per_worker),
                        "processes": True, "dashboard_address": None},
    )


@task(name="embed-shard", retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE)
def embed_shard_task(texts: list[str], model: str, batch_size: int, threads: int) -> np.ndarray:
    return embed_texts(texts, model, batch_size=batch_size, threads=threads)


@flow(name="embed-shards", log_prints=True)
def embed_shards_flow(texts: list[str], model: str, batch_size: int = 64, shard_size: int = 2000,
                      threads: int = 1) -> np.ndarray:
    """Embed ``texts`` shard by shard on the flow's task runner; rows come back in input order."""
    slices = shard_slices(len(texts), shard_size)
    futures = [embed_shard_task.submit(texts[a:b], model, batch_size, threads) for a, b in slices]
    parts = [f.result() for f in futures]
    print(f"embedded {len(texts)} items in {len(slices)} shards")
    return np.concatenate(parts) if parts else np.empty((0, 0), np.float32)


@flow(name="news-dedup-distributed", log_prints=True)
def news_dedup_distributed(
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
    dask_address: str | None = None,
    n_workers: int = 2,
    threads_per_worker: int = 1,
    shard_size: int = 2000,
) -> dict[str, Any]:
    """``news-dedup`` with the embedding stage sharded over Dask (local cluster or ``dask_address``)."""
    config = DedupConfig(corpus=corpus, out=out, model=model, convert=convert, threshold=threshold,
                         calibration=calibration, text_fields=text_fields, k=k, window_hours=window_hours,
                         index_kind=index_kind, use_gpu=use_gpu, representative=representative,
                         quarantine=quarantine, batch_size=batch_size, cache=cache, rerank=rerank)
    timings: dict[str, float] = {}

    def timed(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        value = fn(*args, **kwargs)
        timings[name] = time.perf_counter() - t
        return value

    docs = timed("load", load_corpus_task, config)
    encoder, reranker, thr = timed("model", load_encoder_task, config)
    texts = timed("convert", convert_task, docs, config.convert)
    where = dask_address or f"local Dask cluster, {n_workers} workers x {threads_per_worker} threads"
    sharded = embed_shards_flow.with_options(
        task_runner=make_task_runner(dask_address, n_workers, threads_per_worker)
    )

    def compute() -> np.ndarray:
        return sharded(texts, model, batch_size=batch_size, shard_size=shard_size, threads=threads_per_worker)

    if cache:
        from nlsim.embedding_cache import EmbeddingCache

        emb, hit = timed("embed", EmbeddingCache().get_or_compute, texts, encoder, config.convert, compute)
    else:
        emb, hit = timed("embed", compute), False
    print("embeddings: reused from the cache" if hit else f"embedded {len(texts)} items on {where}")
    index = timed("index", index_task, emb, config)
    pairs, rerank_figures = search_and_rerank(timed, index, emb, docs, texts, reranker, thr, config)
    pair_table, clusters = timed("cluster", cluster_task, docs, pairs, config)
    if config.save_index:
        timed("save_index", save_index_task, index, emb, docs, encoder, config)
    summary = stages.make_summary(
        config, docs, encoder, thr, index, timings, hit, pair_table, clusters, rerank_figures
    )
    summary["embedding_runner"] = where
    files = report_task(config, docs, pair_table, clusters, summary)
    result = DedupResult(out=Path(out), files=files, summary=summary, pairs=pair_table, clusters=clusters)
    publish_artifacts(result)
    print(f"report: {Path(out).resolve()} - {summary['items']} items, {len(pair_table)} pairs, "
          f"{len(clusters)} clusters")
    return {**result.summary, "files": {k: str(v) for k, v in files.items()}}


def main(argv: list[str] | None = None) -> int:
    from nlsim.commands.dedup import add_dedup_options, dedup_params

    parser = argparse.ArgumentParser(prog="python -m flows.dedup_distributed",
                                     description=news_dedup_distributed.__doc__)
    add_dedup_options(parser)
    parser.add_argument("--dask-address", default=None,
                        help="scheduler address of an existing Dask cluster (default: start a local one)")
    parser.add_argument("--n-workers", type=int, default=2, help="workers of the local cluster")
    parser.add_argument("--threads-per-worker", type=int, default=1)
    parser.add_argument("--shard-size", type=int, default=2000, help="texts per embedding task")
    args = parser.parse_args(argv)
    news_dedup_distributed(
        **dedup_params(args),
        dask_address=args.dask_address, n_workers=args.n_workers, threads_per_worker=args.threads_per_worker,
        shard_size=args.shard_size,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
