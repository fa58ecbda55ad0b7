"""Batched IVF search: FAISS's per-query hits, computed list by list with matrix products.

FAISS searches an ``IndexIVFFlat`` query by query: each query scans the ``nprobe`` lists nearest to it, one
vector at a time. When the queries are the corpus itself (the near-duplicate graph of a batch run) each list
is probed by hundreds of queries, and is scanned again for every one of them. Here the work is turned
around: the queries' probe lists are found as FAISS finds them (the ``nprobe`` nearest centroids of each
query), then each list is searched once by all the queries that probe it, with one BLAS matrix product and
FAISS's k-selection (``faiss.knn``); each query's ``nprobe`` partial top-k are merged into its top-k.

Every query sees exactly the vectors FAISS's own search would show it, so the hits are the same, except
which of several exactly tied hits is kept at the k-th place, and float rounding in the last bit; only the
arithmetic is arranged to run several times faster on a CPU (``benchmarks/bench_realistic.py``). It pays
for large batches of wide vectors only: :func:`worth_it` says when, and
:class:`nlsim.search.index.SearchIndex` otherwise uses FAISS's search (a daily run that searches a few
hundred new items; narrow vectors, where FAISS's scan is faster).

Memory: ``m * nprobe * k`` partial hits of 12 bytes each per call, merged in chunks of
:data:`MERGE_ROWS` queries; the caller bounds ``m`` (:func:`batch_rows`,
:meth:`nlsim.search.index.SearchIndex.batch_size`). Vectors are read in place from the index's inverted
lists (no copy of the corpus), so the index must not change during a search.

Example:
    >>> import numpy as np
    >>> from nlsim.search.index import build_index
    >>> rng = np.random.default_rng(0)
    >>> emb = rng.normal(size=(2000, 16)).astype("float32")
    >>> emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    >>> index = build_index(emb, kind="ivf", nlist=8, nprobe=2, use_gpu=False, ivf_search="queries")
    >>> sims, rows = search_batched(index.index, emb, 3, nprobe=2)
    >>> bool((rows == index.search(emb, 3)[1]).mean() > 0.999)  # the same hits as FAISS's own search
    True
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np

MIN_QUERIES_PER_LIST = 8
"""Batched search is used when each IVF list is probed by at least this many queries on average."""
MIN_DIM = 256
"""... and when the vectors have at least this many dimensions: for narrow vectors (64, 128) FAISS's own
scan is faster than a matrix product per list (measured at 1 thread: 0.4-0.8x at d 64-128, 1.2-2.8x at
384, the dimension of every registry model)."""
BUDGET_BYTES = 1 << 30
"""Partial hits of one call at most (about 1 GiB): bounds the batch :func:`batch_rows` asks for."""
MISSING = float(-np.finfo(np.float32).max)
"""The similarity FAISS gives a missing hit (row -1) of an inner-product search."""
MERGE_ROWS = 65_536
"""Queries whose partial hits are merged at a time (bounds the merge's temporary arrays)."""


def worth_it(n_queries: int, nlist: int, nprobe: int, dim: int = MIN_DIM) -> bool:
    """True when ``n_queries`` probe each list often enough, and the vectors are wide enough, for batching
    to beat FAISS's per-query search."""
    return dim >= MIN_DIM and n_queries * max(int(nprobe), 1) >= MIN_QUERIES_PER_LIST * max(int(nlist), 1)


def batch_rows(nlist: int, nprobe: int, k: int) -> int:
    """Queries per call: about 128 per list (each list then searched by ~128 x nprobe queries at once),
    at most what :data:`BUDGET_BYTES` of partial hits allow, at least what :func:`worth_it` needs.
    ``batch_rows(2048, 16, 11) == 262144`` (0.55 GB of partial hits)."""
    want = 128 * max(int(nlist), 1)
    budget = BUDGET_BYTES // (max(int(nprobe), 1) * max(int(k), 1) * 12)
    floor = -(-MIN_QUERIES_PER_LIST * max(int(nlist), 1) // max(int(nprobe), 1))
    return int(max(min(want, budget), floor, 1))


def _lists(ivf: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Zero-copy views of each inverted list: its vectors ``(size, d)`` float32 and their row ids."""
    invlists = ivf.invlists
    d = ivf.d
    vectors: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    for lst in range(ivf.nlist):
        size = invlists.list_size(lst)
        if size == 0:
            vectors.append(np.empty((0, d), np.float32))
            ids.append(np.empty(0, np.int64))
            continue
        codes = faiss.rev_swig_ptr(invlists.get_codes(lst), size * invlists.code_size)
        vectors.append(codes.view(np.float32).reshape(size, d))
        ids.append(faiss.rev_swig_ptr(invlists.get_ids(lst), size))
    return vectors, ids


def search_batched(ivf: Any, queries: np.ndarray, k: int, *, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
    """Search ``queries`` in the IVF-Flat inner-product index ``ivf``, list by list.

    Args:
        ivf: a CPU ``faiss.IndexIVFFlat`` with ``METRIC_INNER_PRODUCT`` (not modified).
        queries: float32 ``(m, d)``.
        k: hits per query.
        nprobe: lists searched per query (the nearest centroids to it, as in FAISS).

    Returns:
        ``(similarities float32 (m, k), rows int64 (m, k))``, best first; missing hits have row -1 and
        similarity :data:`MISSING`, as in FAISS.
    """
    q = np.ascontiguousarray(queries, dtype=np.float32)
    m = q.shape[0]
    nlist = int(ivf.nlist)
    nprobe = max(1, min(int(nprobe), nlist))
    if m == 0 or ivf.ntotal == 0:
        return np.full((m, k), MISSING, np.float32), np.full((m, k), -1, np.int64)
    _, probes = ivf.quantizer.search(q, nprobe)
    vectors, ids = _lists(ivf)
    # partial hits: slot (query, j) holds the top k of the query's j-th probed list
    part_sims = np.full((m * nprobe, k), MISSING, np.float32)
    part_rows = np.full((m * nprobe, k), -1, np.int64)
    slots = probes.ravel()
    order = np.argsort(slots, kind="stable")
    bounds = np.searchsorted(slots[order], np.arange(nlist + 1))
    for lst in np.flatnonzero(np.diff(bounds)):
        size = len(ids[lst])
        if size == 0:
            continue
        where = order[bounds[lst] : bounds[lst + 1]]
        kk = min(k, size)
        sims, hits = faiss.knn(q[where // nprobe], vectors[lst], kk, metric=faiss.METRIC_INNER_PRODUCT)
        part_sims[where, :kk] = sims
        part_rows[where, :kk] = ids[lst][hits]
    return _merge(part_sims.reshape(m, nprobe * k), part_rows.reshape(m, nprobe * k), k)


def _merge(part_sims: np.ndarray, part_rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best ``k`` of its partial hits, best first, :data:`MERGE_ROWS` rows at a time."""
    m, width = part_sims.shape
    sims = np.empty((m, k), np.float32)
    rows = np.empty((m, k), np.int64)
    for a in range(0, m, MERGE_ROWS):
        b = min(a + MERGE_ROWS, m)
        ps, pr = part_sims[a:b], part_rows[a:b]
        if width > k:
            top = np.argpartition(ps, width - k, axis=1)[:, width - k :]
            ps, pr = np.take_along_axis(ps, top, axis=1), np.take_along_axis(pr, top, axis=1)
        best = np.argsort(-ps, axis=1, kind="stable")
        sims[a:b] = np.take_along_axis(ps, best, axis=1)
        rows[a:b] = np.take_along_axis(pr, best, axis=1)
    return sims, rows
