"""The embedding and neighbour-search stages cut into shards, for workers in other processes or machines.

The Dask flow (``flows/dedup_distributed.py``) runs :func:`embed_shard` and :func:`search_shard` as tasks
on its workers and passes the sharded versions to the ``embed`` and ``neighbors`` stages
(:func:`nlsim.dedup.stages.embed`'s ``encode``, :func:`nlsim.dedup.stages.neighbors`' ``search``).
A worker loads the encoder once and keeps it (:func:`cached_encoder`); the index travels as bytes
(:func:`index_bytes`) and is read once per worker. Shards come back in input order, and the pairs of all
search shards are merged with :func:`nlsim.search.neighbors.merge_pairs`, so the result equals the
unsharded stage's.

Example:
    >>> shard_slices(5, 2)
    [(0, 2), (2, 4), (4, 5)]
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pandas as pd

from nlsim.encoders import load_encoder
from nlsim.errors import ConfigError
from nlsim.search import ivf_batched
from nlsim.search.index import SearchIndex
from nlsim.search.neighbors import neighbor_pairs


def shard_slices(n: int, shard_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` cutting ``n`` items into shards of ``shard_size`` (the last may be
    shorter)."""
    if shard_size < 1:
        raise ConfigError(f"shard_size must be >= 1, got {shard_size}")
    return [(s, min(s + shard_size, n)) for s in range(0, n, shard_size)]


def embed_shard_size(n_texts: int, shard_size: int, workers: int | None) -> int:
    """Texts per embedding task of a call of ``n_texts``: ``shard_size`` at most, fewer so that each of
    ``workers`` gets a share (``None``: unknown, e.g. a remote cluster: ``shard_size``). A daily run embeds
    512 texts a call, and a batch run of fewer texts than ``shard_size`` all in one: as one task each, one
    worker embedded while the others waited.

    Example:
        >>> embed_shard_size(512, 2000, 2), embed_shard_size(10_000, 2000, 2)
        (256, 2000)
        >>> embed_shard_size(512, 2000, None)
        2000
    """
    if not workers:
        return int(shard_size)
    return max(1, min(int(shard_size), -(-int(n_texts) // int(workers))))


def cached_encoder(
    model: str, threads: int | None = None, backend: str = "auto", precision: str = "fp32"
) -> Any:
    """``load_encoder(model)`` on the inference path ``backend`` / ``precision``, loaded once per process
    (a worker keeps its copy between shards), however the arguments are given."""
    return _cached_encoder(model, threads, backend, precision)


@functools.lru_cache(maxsize=2)
def _cached_encoder(model: str, threads: int | None, backend: str, precision: str) -> Any:
    return load_encoder(model, threads=threads, backend=backend, precision=precision)


def embed_shard(
    texts: Sequence[str],
    model: str,
    *,
    batch_size: int | None = None,
    threads: int | None = None,
    backend: str = "auto",
    precision: str = "fp32",
) -> np.ndarray:
    """Embed one shard of (already converted) texts with the named model: what each worker runs, on the
    inference path the run settled in its own process (:func:`inference_path`), so that every shard's
    vectors are the ones the run's own encoder gives.

    Example:
        >>> embed_shard(["hello"], "paraphrase-MiniLM-L3-v2").shape
        (1, 384)
    """
    encoder = cached_encoder(model, threads, backend, precision)
    return encoder.encode(list(texts), batch_size=batch_size, progress=False)


def inference_path(encoder: Any) -> dict[str, str]:
    """The ``backend`` and ``precision`` a worker loads the run's ``encoder`` with: the path the encoder
    settled (:meth:`~nlsim.encoders.encoder.Encoder.plan`: ``--backend``, ``--precision`` or the machine's
    choice for the whole job), else the defaults, which stay on torch fp32 as the encoder does for a job
    too small to choose (a shard is never bigger than its job)."""
    choice = getattr(encoder, "choice", None)
    if choice is None:
        return {"backend": "auto", "precision": "fp32"}
    return {"backend": str(choice.backend), "precision": str(choice.precision)}


def search_shard_size(
    index: SearchIndex, n_queries: int, shard_size: int, workers: int | None, k: int = 11
) -> int:
    """Queries per search task (``k`` hits each): ``shard_size``, raised towards the batch a batched IVF
    index asks for (:meth:`SearchIndex.batch_size`, so that batching pays), but not past one task per worker
    (``workers``; ``None``: unknown, e.g. a remote cluster) unless batching would then not pay.

    Example:
        >>> import numpy as np
        >>> from nlsim.search.index import build_index
        >>> x = np.random.default_rng(0).normal(size=(20_000, 256)).astype("float32")
        >>> ivf = build_index(x, kind="ivf", nlist=64, nprobe=8, use_gpu=False)
        >>> search_shard_size(ivf, 20_000, 2000, workers=2), search_shard_size(ivf, 20_000, 2000, workers=4)
        (8192, 5000)
    """
    want = index.batch_size(shard_size, k=k)
    if want <= shard_size:
        return int(shard_size)
    per_worker = -(-int(n_queries) // max(int(workers), 1)) if workers else int(n_queries)
    need = -(-ivf_batched.MIN_QUERIES_PER_LIST * int(index.params["nlist"]) // int(index.params["nprobe"]))
    return int(max(shard_size, need, min(want, per_worker)))


def index_bytes(index: SearchIndex) -> tuple[np.ndarray, dict[str, Any]]:
    """The index as bytes (and what :func:`search_shard` needs to rebuild the :class:`SearchIndex`)."""
    blob = faiss.serialize_index(index.cpu_index())
    return blob, index_info(index)


def index_info(index: SearchIndex) -> dict[str, Any]:
    """What :func:`search_shard` needs besides the FAISS index itself."""
    return {"kind": index.kind, "dim": index.dim, "params": dict(index.params)}


def write_shard_inputs(folder: Path, index: SearchIndex, queries: np.ndarray) -> tuple[str, str]:
    """Write the index (``index.faiss``) and the query vectors (``queries.npy``) into ``folder`` for workers
    that can read it (a local cluster, or a folder all workers mount): each task then carries two paths
    and a row range instead of the index and its queries, which at a million vectors are gigabytes per
    task. Returns the two paths."""
    folder.mkdir(parents=True, exist_ok=True)
    index_path, query_path = folder / "index.faiss", folder / "queries.npy"
    faiss.write_index(index.cpu_index(), str(index_path))
    np.save(query_path, np.ascontiguousarray(queries, dtype=np.float32))
    return str(index_path), str(query_path)


@functools.lru_cache(maxsize=2)
def _read_index(
    key: str, source: bytes | str, kind: str, dim: int, params: tuple[tuple[str, Any], ...]
) -> SearchIndex:
    if isinstance(source, str):
        raw = faiss.read_index(source)
    else:
        raw = faiss.deserialize_index(np.frombuffer(source, dtype=np.uint8))
    index = SearchIndex(raw, kind, "cpu", dim, dict(params))
    if kind == "ivf" and "nprobe" in index.params:
        index.set_search_params(nprobe=int(index.params["nprobe"]))
    return index


def search_shard(
    blob: np.ndarray | str,
    info: dict[str, Any],
    queries: np.ndarray | str,
    query_rows: np.ndarray,
    *,
    k: int,
    threshold: float,
    times: Any = None,
    window: Any = None,
    threads: int | None = None,
    span: tuple[int, int] | None = None,
    copies: np.ndarray | None = None,
    same_text: np.ndarray | None = None,
) -> pd.DataFrame:
    """One shard of the neighbour search, on a worker: the same pairs as
    :func:`nlsim.search.neighbors.neighbor_pairs` for these query rows.

    ``blob``: the index as bytes (:func:`index_bytes`) or the path of an index file
    (:func:`write_shard_inputs`); read once per worker either way. ``queries``: the shard's query vectors, or
    the path of a ``.npy`` file of all of them, of which rows ``span = (start, stop)`` are this shard's
    (memory-mapped). ``threads``: FAISS threads in this worker (default: FAISS's own, all cores), so that
    workers sharing a machine do not oversubscribe it."""
    if threads:
        faiss.omp_set_num_threads(int(threads))
    params = tuple(sorted(info["params"].items()))
    if isinstance(blob, str):
        stat = Path(blob).stat()
        index = _read_index(
            f"{blob}|{stat.st_size}|{stat.st_mtime_ns}", blob, info["kind"], int(info["dim"]), params
        )
    else:
        data = np.asarray(blob, dtype=np.uint8).tobytes()
        digest = hashlib.sha256(data).hexdigest()
        index = _read_index(digest, data, info["kind"], int(info["dim"]), params)
    if isinstance(queries, str):
        if span is None or span[1] - span[0] != len(query_rows):
            raise ConfigError(
                f"search_shard: queries from {queries} need span=(start, stop) covering the "
                f"{len(query_rows)} query rows, got {span}"
            )
        queries = np.load(queries, mmap_mode="r")[span[0] : span[1]]
    return neighbor_pairs(
        index,
        queries,
        query_rows,
        k=k,
        threshold=threshold,
        times=times,
        window=window,
        progress=False,
        copies=copies,
        same_text=same_text,
    )
