"""Prefect flow ``news-dedup-distributed``: ``news-dedup`` with the embedding and the neighbour search sharded
over Dask.

The run is :func:`nlsim.dedup.run.run_dedup`, as in ``news-dedup``; only its ``call`` differs: the
``embed`` and ``neighbors`` stages cut their work into shards (:mod:`nlsim.dedup.sharded`) and run each
shard as a task on a Dask worker (``DaskTaskRunner`` from ``prefect-dask``); every other stage is a task of
the flow as usual. Both flows write the same report (on a lossy inference path, ``--precision int8``, its
vectors depend on which texts share a batch, and shards batch them otherwise: docs/scale.md, section 4).

Where the shards run is a flow parameter:

* ``dask_address=None``: a local Dask cluster of ``n_workers`` processes, started for the run and stopped
  after it;
* ``dask_address="tcp://scheduler:8786"``: an existing cluster (``dask scheduler`` + ``dask worker``s on
  other machines, each with nlsim installed and the model available under ``NLSIM_HOME``).

Run it::

    python -m flows.dedup_distributed --corpus data/thucnews.parquet --out reports/thuc-dask \
        --threshold 0.95 --n-workers 2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.dedup import dedup_run
from flows.orchestration import config_flow, run_from_command_line, task_call
from nlsim.commands.dedup import add_dedup_options
from nlsim.commands.options import add_config_options
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import Call
from nlsim.dedup.sharded import (
    embed_shard,
    embed_shard_size,
    index_bytes,
    index_info,
    inference_path,
    search_shard,
    search_shard_size,
    shard_slices,
    write_shard_inputs,
)
from nlsim.encoders import MODELS
from nlsim.errors import ConfigError
from nlsim.options import option
from nlsim.search.neighbors import merge_pairs

LOCAL_WORKERS = 2
"""Workers of the local cluster a run starts when neither ``--dask-address`` nor ``--n-workers`` is given."""


@dataclass
class DaskOptions:
    """Where and how the shards run."""

    dask_address: str | None = option(
        None, help="scheduler address of an existing Dask cluster (default: start a local one)"
    )
    n_workers: int | None = option(
        None,
        help=f"workers of the local cluster (default {LOCAL_WORKERS}; not with --dask-address, whose cluster "
        "has the workers it has)",
    )
    threads_per_worker: int = option(1, help="threads per worker (and torch threads in it)")
    shard_size: int = option(2000, help="texts (or queries) per task")
    shared_dir: str | None = option(
        None,
        help="folder every worker can read, where the index and query vectors are written for the search "
        "tasks (default: a temporary folder for a local cluster; an existing cluster without it gets them "
        "as bytes in every task)",
    )

    def __post_init__(self) -> None:
        if self.dask_address and self.n_workers is not None:  # it would be ignored: the cluster has its own
            raise ConfigError(
                f"--n-workers {self.n_workers} does nothing with --dask-address {self.dask_address}: that "
                "cluster has the workers it has; leave one of them out (nothing is done yet)"
            )
        counts = {"--n-workers": self.local_workers, "--threads-per-worker": self.threads_per_worker}
        for flag, value in {**counts, "--shard-size": self.shard_size}.items():
            if int(value) < 1:  # a cluster of no worker or thread waits for ever; a shard of none loops
                raise ConfigError(f"{flag} must be >= 1, got {value}")
        shared = Path(self.shared_dir) if self.shared_dir else None
        if shared is not None and not (shared.is_dir() and os.access(shared, os.W_OK | os.X_OK)):
            found = (
                "a file" if shared.is_file() else "not a writable folder" if shared.is_dir() else "missing"
            )
            raise ConfigError(  # the search tasks write into it, after the whole embedding: say it now
                f"--shared-dir {self.shared_dir}: {found}; give an existing folder every worker can read"
            )

    @property
    def local_workers(self) -> int:
        """The workers of the local cluster (``--n-workers``, or :data:`LOCAL_WORKERS`)."""
        return LOCAL_WORKERS if self.n_workers is None else int(self.n_workers)


SCHEDULER_TIMEOUT_S = 10
"""Seconds the flow waits for the scheduler at ``--dask-address`` to answer before any work."""


def check_scheduler(address: str, timeout: float = SCHEDULER_TIMEOUT_S) -> None:
    """Refuse, before any work, a ``--dask-address`` no Dask scheduler answers at (the first shard's task
    found out 30 s after the corpus was read and the model loaded, with a traceback), within ``timeout``
    seconds in all: a port where something else listens takes the connection and never answers Dask's
    handshake (the check waited for ever), and a worker's address answers as a worker, not a scheduler."""
    import asyncio

    from distributed.comm import connect  # deferred: only this flow needs dask

    async def knock() -> str:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            reply = await comm.read()
        finally:
            comm.abort()
        return str(reply.get("type", "")) if isinstance(reply, dict) else ""

    try:
        kind = asyncio.run(asyncio.wait_for(knock(), timeout))
    except (OSError, ValueError, TypeError) as exc:  # a timeout included (TimeoutError is an OSError)
        why = " ".join(str(exc).split()) or f"no answer within {timeout:g} s"
        raise ConfigError(
            f"--dask-address {address}: no Dask scheduler answers there ({why}); "
            "start one (dask scheduler) or leave --dask-address out for a local cluster"
        ) from None
    if kind != "Scheduler":
        raise ConfigError(
            f"--dask-address {address}: not a Dask scheduler (it answers as {kind or 'something else'}); "
            "give the scheduler's address (dask scheduler prints it: 'Scheduler at: tcp://...')"
        )


def local_cluster_options(options: DaskOptions) -> dict[str, Any]:
    """The ``LocalCluster`` of a run without ``--dask-address``: ``n_workers`` processes."""
    return {
        "n_workers": options.local_workers,
        "threads_per_worker": int(options.threads_per_worker),
        "processes": True,
        "dashboard_address": None,
    }


def make_task_runner(options: DaskOptions, address: str | None = None) -> Any:
    """A ``DaskTaskRunner``: on the scheduler at ``address`` (a run's own local cluster) or
    ``dask_address``, else on a new local cluster of its own (started and stopped with each flow it
    runs)."""
    from prefect_dask import DaskTaskRunner  # deferred: only this flow needs dask

    if address or options.dask_address:
        return DaskTaskRunner(address=address or options.dask_address)
    return DaskTaskRunner(
        cluster_class="distributed.LocalCluster", cluster_kwargs=local_cluster_options(options)
    )


class RunCluster:
    """Where a run's shards go: the scheduler at ``--dask-address``, or one local cluster for the whole run,
    started at its first shard and stopped when the run ends, failed or not (``with``). A task runner that
    starts a cluster of its own does so for each flow it runs: one for the embedding and one for the search,
    and in a daily run one for every 512 texts, each worker loading the model again every time."""

    def __init__(self, options: DaskOptions) -> None:
        self.options = options
        self.cluster: Any = None

    def task_runner(self) -> Any:
        if self.options.dask_address:
            return make_task_runner(self.options)
        if self.cluster is None:
            import distributed  # deferred: only this flow needs dask

            self.cluster = distributed.LocalCluster(**local_cluster_options(self.options))
        return make_task_runner(self.options, address=self.cluster.scheduler_address)

    def close(self) -> None:
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            cluster.close()

    def __enter__(self) -> RunCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


embed_shard_task = task(
    embed_shard, name="embed-shard", retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE
)
search_shard_task = task(
    search_shard, name="search-shard", retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE
)


@flow(name="shards", log_prints=True)
def run_shards(kind: str, jobs: list[dict[str, Any]]) -> list[Any]:
    """Submit one task per shard on the flow's (Dask) task runner; results in shard order."""
    fn = embed_shard_task if kind == "embed" else search_shard_task
    futures = [fn.submit(*job["args"], **job["kwargs"]) for job in jobs]
    results = [f.result() for f in futures]
    print(f"{kind}: {len(jobs)} shards done")
    return results


def model_ref(encoder: Any) -> str:
    """How a worker loads the same encoder: its registry name, else its folder by its full path (a worker
    started in another folder reads a relative one under its own), else the hub name it was loaded by."""
    if encoder.name in MODELS:
        return str(encoder.name)
    folder = Path(encoder.path)
    return str(folder.resolve()) if folder.exists() else str(encoder.path)


def dask_call(options: DaskOptions, cluster: RunCluster | None = None) -> Call:
    """The ``call`` of :func:`nlsim.dedup.run.run_dedup` that shards ``embed`` and ``neighbors``, on
    ``cluster`` (default: a task runner that starts a local cluster of its own for each stage it shards)."""
    runner = cluster.task_runner if cluster is not None else lambda: make_task_runner(options)

    def sharded(kind: str, jobs: list[dict[str, Any]]) -> list[Any]:
        if not jobs:  # nothing to search (a daily run of items all seen before): no cluster to start
            return []
        return run_shards.with_options(task_runner=runner())(kind, jobs)

    size = int(options.shard_size)
    threads = int(options.threads_per_worker)

    def call(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if name == "embed":
            texts, model, plan = args
            workers = None if options.dask_address else options.local_workers

            def encode(part: list[str], batch_size: int | None = None, progress: bool = False) -> np.ndarray:
                path = inference_path(model.encoder)  # --backend, --precision: as the run settled them
                jobs = [
                    {
                        "args": (part[a:b], model_ref(model.encoder)),
                        "kwargs": {"batch_size": batch_size, "threads": threads, **path},
                    }
                    for a, b in shard_slices(len(part), embed_shard_size(len(part), size, workers))
                ]
                parts = sharded("embed", jobs)
                return np.concatenate(parts) if parts else np.zeros((0, int(model.encoder.dim)), np.float32)

            return fn(texts, model, plan, encode=encode)
        if name == "neighbors":
            window, opts, floor, progress = args
            by_file = options.shared_dir is not None or not options.dask_address

            def search(index: Any, queries: np.ndarray, rows: np.ndarray, **kw: Any) -> pd.DataFrame:
                kw.pop("progress", None)
                if not options.dask_address:
                    kw["threads"] = threads  # local workers share this machine's cores
                workers = None if options.dask_address else options.local_workers
                per_task = search_shard_size(index, len(rows), size, workers, k=int(kw["k"]) + 1)
                slices = shard_slices(len(rows), per_task)
                if not by_file:
                    blob, info = index_bytes(index)
                    jobs = [{"args": (blob, info, queries[a:b], rows[a:b]), "kwargs": kw} for a, b in slices]
                    return merge_pairs(sharded("search", jobs))
                # the tasks carry paths: the index and the queries are written once, not pickled per task
                with tempfile.TemporaryDirectory(prefix="nlsim-search-", dir=options.shared_dir) as tmp:
                    index_path, query_path = write_shard_inputs(Path(tmp), index, queries)
                    jobs = [
                        {
                            "args": (index_path, index_info(index), query_path, rows[a:b]),
                            "kwargs": {**kw, "span": (a, b)},
                        }
                        for a, b in slices
                    ]
                    return merge_pairs(sharded("search", jobs))

            return fn(window, opts, floor, progress, search=search)
        return task_call(name, fn, *args, **kwargs)

    return call


def _body(**params: Any) -> Any:
    names = {f.name for f in fields(DaskOptions)}
    options = DaskOptions(**{k: v for k, v in params.items() if k in names})
    config = DedupConfig.of(**{k: v for k, v in params.items() if k not in names})
    if options.dask_address:
        check_scheduler(options.dask_address)
    where = (
        options.dask_address
        or f"local Dask cluster, {options.local_workers} workers x {options.threads_per_worker} threads"
    )
    print(f"embedding and search sharded on {where}")
    with RunCluster(options) as cluster:
        result = dedup_run(config, call=dask_call(options, cluster))
    return {**result, "embedding_runner": where} if isinstance(result, dict) else result


news_dedup_distributed = config_flow(
    _body,
    (DedupConfig, DaskOptions),
    name="news-dedup-distributed",
    description="The news-dedup run with its embedding and neighbour search sharded over Dask (a local "
    "cluster or a remote one).",
)


def add_options(parser: argparse.ArgumentParser) -> None:
    add_dedup_options(parser)
    add_config_options(parser, DaskOptions, group="Dask")


def main(argv: list[str] | None = None) -> int:
    return run_from_command_line(
        news_dedup_distributed,
        "python -m flows.dedup_distributed",
        add_options,
        (DedupConfig, DaskOptions),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
