"""Tests of nlsim.dedup.sharded: search shards give the unsharded stage's pairs, from bytes or files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pandas as pd
import pytest

from nlsim.dedup.sharded import (
    embed_shard_size,
    index_bytes,
    index_info,
    inference_path,
    search_shard,
    search_shard_size,
    shard_slices,
    write_shard_inputs,
)
from nlsim.errors import ConfigError
from nlsim.search.index import SearchIndex, build_index
from nlsim.search.neighbors import knn_graph, merge_pairs, neighbor_pairs
from tests.search.test_index import clustered


@pytest.fixture(autouse=True)
def _restore_faiss_threads() -> Iterator[None]:
    """``search_shard(threads=...)`` sets FAISS's thread count for the whole process; put it back."""
    before = faiss.omp_get_max_threads()
    yield
    faiss.omp_set_num_threads(before)


def test_shards_from_files_equal_the_whole_graph(tmp_path: Path) -> None:
    x = clustered(150, 8, 32, noise=0.1)
    index = build_index(x, kind="ivf", nlist=8, nprobe=3, use_gpu=False)
    want = knn_graph(index, x, k=4, threshold=0.8, progress=False)
    index_path, query_path = write_shard_inputs(tmp_path / "in", index, x)
    rows = np.arange(len(x))
    parts = [
        search_shard(
            index_path, index_info(index), query_path, rows[a:b], k=4, threshold=0.8, threads=1, span=(a, b)
        )
        for a, b in shard_slices(len(x), 500)
    ]
    got = merge_pairs(parts)
    assert len(want) > 100
    assert got[["a", "b"]].equals(want[["a", "b"]])
    np.testing.assert_allclose(got["similarity"], want["similarity"], atol=1e-5)


def test_shards_from_bytes_equal_shards_from_files(tmp_path: Path) -> None:
    x = clustered(60, 5, 16, noise=0.1)
    index = build_index(x, kind="flat", use_gpu=False)
    blob, info = index_bytes(index)
    rows = np.arange(len(x))
    from_bytes = search_shard(blob, info, x[100:200], rows[100:200], k=3, threshold=0.7)
    index_path, query_path = write_shard_inputs(tmp_path, index, x)
    from_files = search_shard(
        index_path, info, query_path, rows[100:200], k=3, threshold=0.7, span=(100, 200)
    )
    assert len(from_bytes) > 0
    assert from_bytes.equals(from_files)


def test_a_queries_file_needs_its_span(tmp_path: Path) -> None:
    """Without ``span`` the rows of a queries file cannot be matched to their query rows: refused."""
    x = clustered(40, 5, 16, noise=0.1)
    index = build_index(x, kind="flat", use_gpu=False)
    index_path, query_path = write_shard_inputs(tmp_path, index, x)
    rows = np.arange(len(x))
    with pytest.raises(ConfigError, match="span"):
        search_shard(index_path, index_info(index), query_path, rows[50:100], k=3, threshold=0.7)
    with pytest.raises(ConfigError, match="span"):
        search_shard(
            index_path, index_info(index), query_path, rows[50:100], k=3, threshold=0.7, span=(0, 10)
        )


def test_a_worker_loads_the_encoder_once_however_it_is_asked() -> None:
    """``embed_shard`` asks for the encoder with its inference path; a caller that loaded it first without
    one (``benchmarks/bench_scale.py``, before its clock) got a second copy, loaded inside the timing."""
    from nlsim.dedup.sharded import cached_encoder

    first = cached_encoder("paraphrase-MiniLM-L3-v2", 1)
    assert cached_encoder("paraphrase-MiniLM-L3-v2", 1, "auto", "fp32") is first
    assert cached_encoder("paraphrase-MiniLM-L3-v2", threads=1, precision="fp32") is first


def test_an_empty_embedding_call_is_cut_into_no_shard() -> None:
    """A call of no texts is cut into no shard (the sharded encode then gives no vectors), never refused
    for a shard size below one."""
    assert embed_shard_size(0, 2000, 2) == 1
    assert shard_slices(0, embed_shard_size(0, 2000, 2)) == []
    assert shard_slices(3, 1) == [(0, 1), (1, 2), (2, 3)]


def test_an_encoder_that_settled_no_path_is_embedded_on_the_defaults() -> None:
    assert inference_path(object()) == {"backend": "auto", "precision": "fp32"}


def _batched(nlist: int, nprobe: int) -> SearchIndex:
    """A batched IVF index as far as the search's shard size goes (its vectors play no part)."""
    return SearchIndex(None, "ivf", "cpu", 256, {"nlist": nlist, "nprobe": nprobe, "search": "batched"})


def test_a_search_shard_is_one_workers_share_but_never_too_small_to_batch() -> None:
    ivf = _batched(64, 8)
    assert search_shard_size(ivf, 10_001, 100, workers=4) == 2501  # the share rounded up, not down
    assert search_shard_size(ivf, 3000, 100, workers=None) == 3000  # a cluster of unknown size: one share
    few = _batched(100, 3)  # each list probed by 8 queries at least: 100 lists x 8 / 3 probes, rounded up
    assert search_shard_size(few, 100, 10, workers=4) == 267
    flat = build_index(clustered(10, 2, 8, noise=0.1), kind="flat", use_gpu=False)
    assert search_shard_size(flat, 10, 7, workers=2) == 7  # no batching: the shard size as given


def test_a_rewritten_index_file_of_the_same_size_is_read_again(tmp_path: Path) -> None:
    """A worker keeps the index it read; an index file written anew at the same path is another index."""
    x = clustered(20, 4, 16, noise=0.1)
    rows = np.arange(len(x))
    path = tmp_path / "index.faiss"
    got = []
    for i, vectors in enumerate([x, x[::-1].copy()]):
        index = build_index(vectors, kind="flat", use_gpu=False)
        faiss.write_index(index.cpu_index(), str(path))
        os.utime(path, ns=(i * 10**9, i * 10**9))
        got.append(search_shard(str(path), index_info(index), vectors, rows, k=3, threshold=0.7))
        assert got[-1].equals(knn_graph(index, vectors, k=3, threshold=0.7, progress=False))
    assert not got[0].equals(got[1])


def test_two_indexes_sent_as_bytes_are_each_searched() -> None:
    x = clustered(20, 4, 16, noise=0.1)
    rows = np.arange(len(x))
    for vectors in (x, x[::-1].copy()):
        index = build_index(vectors, kind="flat", use_gpu=False)
        blob, info = index_bytes(index)
        got = search_shard(blob, info, vectors, rows, k=3, threshold=0.7)
        assert got.equals(knn_graph(index, vectors, k=3, threshold=0.7, progress=False))


def test_a_shard_keeps_the_time_window_and_the_copies_of_its_search() -> None:
    """``times``/``window``, ``copies`` and ``same_text`` reach the shard's search: each changes the pairs."""
    x = clustered(30, 5, 16, noise=0.1)
    index = build_index(x, kind="flat", use_gpu=False)
    blob, info = index_bytes(index)
    rows = np.arange(len(x))
    times = pd.Series(pd.Timestamp("2024-01-01") + pd.to_timedelta(rows, unit="D"))
    copies = rows // 2 * 2
    kws: list[dict] = [
        {},
        {"times": times, "window": pd.Timedelta(days=3)},
        {"copies": copies},
        {"copies": copies, "same_text": rows // 4 * 4},
    ]
    got = []
    for kw in kws:
        got.append(search_shard(blob, info, x, rows, k=3, threshold=0.7, **kw))
        assert got[-1].equals(neighbor_pairs(index, x, rows, k=3, threshold=0.7, progress=False, **kw))
    assert len({len(g) for g in got}) == len(got)


def test_a_shard_sets_the_workers_faiss_threads() -> None:
    x = clustered(10, 2, 8, noise=0.1)
    index = build_index(x, kind="flat", use_gpu=False)
    blob, info = index_bytes(index)
    threads = faiss.omp_get_max_threads() + 1
    search_shard(blob, info, x, np.arange(len(x)), k=2, threshold=0.5, threads=threads)
    assert faiss.omp_get_max_threads() == threads


def test_a_shard_searches_a_batched_ivf_index_batched_as_the_run_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's index is the run's with its parameters: a batched IVF index is searched list by list
    (:mod:`nlsim.search.ivf_batched`) there too, not by FAISS's slower scan of wide vectors."""
    from nlsim.search import ivf_batched

    x = clustered(20, 5, 256, noise=0.1)
    index = build_index(x, kind="ivf", nlist=4, nprobe=2, use_gpu=False)
    rows = np.arange(len(x))
    want = knn_graph(index, x, k=3, threshold=0.7, progress=False)
    calls: list[int] = []
    search_batched = ivf_batched.search_batched

    def counted(ivf: object, queries: np.ndarray, k: int, *, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
        calls.append(len(queries))
        return search_batched(ivf, queries, k, nprobe=nprobe)

    monkeypatch.setattr(ivf_batched, "search_batched", counted)
    blob, info = index_bytes(index)
    got = search_shard(blob, info, x, rows, k=3, threshold=0.7)
    assert calls == [len(x)]
    assert got[["a", "b"]].equals(want[["a", "b"]])
