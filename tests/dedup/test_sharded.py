"""Tests of nlsim.dedup.sharded: search shards give the unsharded stage's pairs, from bytes or files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest

from nlsim.dedup.sharded import index_bytes, index_info, search_shard, shard_slices, write_shard_inputs
from nlsim.errors import ConfigError
from nlsim.search.index import build_index
from nlsim.search.neighbors import knn_graph, merge_pairs
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
