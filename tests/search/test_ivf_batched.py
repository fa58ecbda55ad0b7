"""Tests of nlsim.search.ivf_batched: batched IVF search gives FAISS's own hits."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from nlsim.errors import ConfigError
from nlsim.search import ivf_batched
from nlsim.search.index import build_index, load_index, save_index
from nlsim.search.neighbors import knn_graph
from tests.search.test_index import clustered, meta_for, unit


def faiss_search(index, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """FAISS's own per-query search of the same index."""
    sims, rows = index.index.search(np.ascontiguousarray(q), k)
    return sims, rows.astype(np.int64)


@pytest.mark.parametrize(("nlist", "nprobe"), [(16, 1), (16, 4), (32, 7), (8, 8)])
def test_same_hits_as_faiss(nlist: int, nprobe: int) -> None:
    x = clustered(300, 10, 32, noise=0.1)
    index = build_index(x, kind="ivf", nlist=nlist, nprobe=nprobe, use_gpu=False)
    sims, rows = ivf_batched.search_batched(index.index, x, 6, nprobe=nprobe)
    want_sims, want_rows = faiss_search(index, x, 6)
    np.testing.assert_allclose(sims, want_sims, atol=1e-5)
    assert (rows == want_rows).mean() > 0.999  # ties and last-bit rounding aside
    assert rows.dtype == np.int64 and sims.dtype == np.float32


def test_all_lists_probed_is_exact() -> None:
    x = unit(np.random.default_rng(3), 3000, 24)
    index = build_index(x, kind="ivf", nlist=16, nprobe=16, use_gpu=False)
    sims, rows = ivf_batched.search_batched(index.index, x, 6, nprobe=16)
    want_sims, want_rows = faiss.knn(x, x, 6, metric=faiss.METRIC_INNER_PRODUCT)
    np.testing.assert_allclose(sims, want_sims, atol=1e-5)
    assert (rows == want_rows).mean() > 0.999


def test_missing_hits_are_minus_one_as_in_faiss() -> None:
    x = unit(np.random.default_rng(5), 200, 8)
    index = build_index(x, kind="ivf", nlist=4, nprobe=1, use_gpu=False)
    sims, rows = ivf_batched.search_batched(index.index, x, 150, nprobe=1)  # each list holds fewer than 150
    assert (rows == -1).any()
    assert (sims[rows == -1] == ivf_batched.MISSING).all()
    assert (rows[rows >= 0] < 200).all()
    want_sims, want = faiss_search(index, x, 150)
    assert ((rows == -1) == (want == -1)).all()
    assert (want_sims[want == -1] == ivf_batched.MISSING).all()  # the same sentinel as FAISS


def test_index_batches_large_searches_only(monkeypatch: pytest.MonkeyPatch) -> None:
    x = unit(np.random.default_rng(7), 2000, 256)
    index = build_index(x, kind="ivf", nlist=8, nprobe=2, use_gpu=False)
    assert index.batched and "batched" in index.describe()
    calls: list[int] = []
    real = ivf_batched.search_batched

    def spy(ivf, q, k, *, nprobe):  # type: ignore[no-untyped-def]
        calls.append(len(q))
        return real(ivf, q, k, nprobe=nprobe)

    monkeypatch.setattr(ivf_batched, "search_batched", spy)
    index.search(x[:10], 3)  # 10 queries x 2 probes for 8 lists: FAISS's per-query search
    assert calls == []
    index.search(x, 3)
    assert calls == [2000]
    assert index.batch_size(4096) == 4096 and index.batch_size(10**6) == 10**6  # 128 * 8 lists < 4096


def test_batch_is_bounded_by_the_memory_budget() -> None:
    assert ivf_batched.batch_rows(2048, 16, 11) == 262_144
    big = ivf_batched.batch_rows(2048, 64, 51)  # partial hits would be 20 GB at 128 queries per list
    assert big * 64 * 51 * 12 <= ivf_batched.BUDGET_BYTES
    # never below what batching needs to pay
    assert ivf_batched.batch_rows(4096, 1, 10**6) >= ivf_batched.MIN_QUERIES_PER_LIST * 4096


def test_narrow_vectors_keep_faiss_search(monkeypatch: pytest.MonkeyPatch) -> None:
    x = unit(np.random.default_rng(4), 3000, 64)
    index = build_index(x, kind="ivf", nlist=8, nprobe=2, use_gpu=False)
    monkeypatch.setattr(ivf_batched, "search_batched", lambda *a, **k: pytest.fail("batched search used"))
    index.search(x, 3)  # 64 dimensions: FAISS's scan is faster
    assert not ivf_batched.worth_it(3000, 8, 2, 64) and ivf_batched.worth_it(3000, 8, 2, 384)


def test_merge_in_chunks_equals_one_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    x = clustered(300, 10, 32, noise=0.1)
    index = build_index(x, kind="ivf", nlist=16, nprobe=4, use_gpu=False)
    whole = ivf_batched.search_batched(index.index, x, 5, nprobe=4)
    monkeypatch.setattr(ivf_batched, "MERGE_ROWS", 7)
    chunked = ivf_batched.search_batched(index.index, x, 5, nprobe=4)
    assert (whole[1] == chunked[1]).all() and (whole[0] == chunked[0]).all()


def test_nprobe_is_checked_and_clamped() -> None:
    x = unit(np.random.default_rng(6), 500, 16)
    index = build_index(x, kind="ivf", nlist=4, nprobe=2, use_gpu=False)
    with pytest.raises(ConfigError, match="nprobe must be at least 1"):
        index.set_search_params(nprobe=0)
    index.set_search_params(nprobe=50)
    assert index.params["nprobe"] == 4 and index.index.nprobe == 4


def test_queries_mode_never_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    x = unit(np.random.default_rng(8), 2000, 16)
    index = build_index(x, kind="ivf", nlist=8, nprobe=2, use_gpu=False, ivf_search="queries")
    assert not index.batched and index.batch_size(4096) == 4096
    monkeypatch.setattr(ivf_batched, "search_batched", lambda *a, **k: pytest.fail("batched search used"))
    index.search(x, 3)
    with pytest.raises(ConfigError, match="unknown IVF search"):
        build_index(x, kind="ivf", ivf_search="rows", use_gpu=False)


def test_graph_is_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    x = clustered(200, 8, 256, noise=0.03)
    used: list[int] = []
    real = ivf_batched.search_batched
    monkeypatch.setattr(ivf_batched, "search_batched", lambda *a, **k: used.append(1) or real(*a, **k))
    batched = build_index(x, kind="ivf", nlist=16, nprobe=3, use_gpu=False)
    plain = build_index(x, kind="ivf", nlist=16, nprobe=3, use_gpu=False, ivf_search="queries")
    got = knn_graph(batched, x, k=5, threshold=0.8, progress=False)
    want = knn_graph(plain, x, k=5, threshold=0.8, progress=False)
    assert len(want) > 100
    keys = set(zip(got["a"], got["b"], strict=True))
    want_keys = set(zip(want["a"], want["b"], strict=True))
    assert len(keys ^ want_keys) <= len(want_keys) // 500  # ties at the k-th hit aside
    assert used  # the batched path did the search


def test_saved_index_keeps_its_search_mode(tmp_path: Path) -> None:
    x = unit(np.random.default_rng(9), 1000, 32)
    index = build_index(x, kind="ivf", nlist=8, nprobe=2, use_gpu=False)
    save_index(tmp_path / "ix", index, np.arange(len(x)), meta_for())
    loaded, _, _ = load_index(tmp_path / "ix", expected=meta_for())
    assert loaded.batched
    assert (index.search(x, 4)[1] == loaded.search(x, 4)[1]).all()
