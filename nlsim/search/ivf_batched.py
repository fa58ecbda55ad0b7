"""Batched IVF search: FAISS's per-query hits, computed list by list with matrix products.

FAISS searches an ``IndexIVFFlat`` query by query: each query scans the ``nprobe`` lists nearest to it, one
vector at a time. When the queries are the corpus itself (the near-duplicate graph of a batch run) each list
is probed by hundreds of queries, and is scanned again for every one of them. Here the work is turned
around: the queries' probe lists are found as FAISS finds them (the ``nprobe`` nearest centroids of each
query), then each list is searched once by all the queries that probe it, with one BLAS matrix product and
FAISS's k-selection (``faiss.knn``); each query's ``nprobe`` partial top-k are merged into its top-k.

Every query sees exactly the vectors FAISS's own search would show it, so the hits are the same (up to the
order of ties and float rounding in the last bit); only the arithmetic is arranged to run several times
faster on a CPU (``benchmarks/bench_realistic.py``). It pays for large batches only: :func:`worth_it` says
when, and :class:`nlsim.search.index.SearchIndex` otherwise uses FAISS's search (a daily run that searches a
few hundred new items).

Memory: ``m * nprobe * k`` partial hits (12 bytes each) per call; the caller bounds ``m``
(:meth:`nlsim.search.index.SearchIndex.batch_size`). Vectors are read in place from the index's inverted
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


def worth_it(n_queries: int, nlist: int, nprobe: int) -> bool:
    """True when ``n_queries`` probe each list often enough for batching to beat FAISS's per-query search."""
    return n_queries * max(int(nprobe), 1) >= MIN_QUERIES_PER_LIST * max(int(nlist), 1)


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
        similarity ``-inf``, as in FAISS.
    """
    q = np.ascontiguousarray(queries, dtype=np.float32)
    m = q.shape[0]
    nlist = int(ivf.nlist)
    nprobe = max(1, min(int(nprobe), nlist))
    if m == 0 or ivf.ntotal == 0:
        return np.full((m, k), -np.inf, np.float32), np.full((m, k), -1, np.int64)
    _, probes = ivf.quantizer.search(q, nprobe)
    vectors, ids = _lists(ivf)
    # partial hits: slot (query, j) holds the top k of the query's j-th probed list
    part_sims = np.full((m * nprobe, k), -np.inf, np.float32)
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
    part_sims = part_sims.reshape(m, nprobe * k)
    part_rows = part_rows.reshape(m, nprobe * k)
    if nprobe > 1:
        top = np.argpartition(-part_sims, k - 1, axis=1)[:, :k]
        part_sims = np.take_along_axis(part_sims, top, axis=1)
        part_rows = np.take_along_axis(part_rows, top, axis=1)
    best = np.argsort(-part_sims, axis=1, kind="stable")
    return np.take_along_axis(part_sims, best, axis=1), np.take_along_axis(part_rows, best, axis=1)
