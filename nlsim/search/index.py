"""Vector index over L2-normalised embeddings: exact or approximate inner product, on CPU or GPUs.

``build_index`` picks the index (see :data:`FLAT_MAX` for the ``"auto"`` size rule) and the device;
``save_index`` / ``load_index`` persist it with metadata and file hashes, and refuse to load an index built
with another model, conversion or dimension, or one whose files are truncated or corrupt.

Inner product equals cosine similarity because the encoders return unit vectors.

Size rule for ``kind="auto"``:

* ``n <= FLAT_MAX`` (100,000) vectors, or ``n <= GPU_FLAT_MAX`` (5,000,000) on GPUs: ``"flat"``, exact
  (``IndexFlatIP``); the full k-NN graph of 100,000 vectors is ~4 TFLOP, one to two minutes on two cores.
* larger: ``"ivf"`` (``IndexIVFFlat``, ``nlist`` from :func:`default_nlist`, ``nprobe`` from
  :func:`default_nprobe`, trained on ``40 * nlist`` sampled vectors), measured in ``docs/scale.md``.

IVF search on the CPU (``ivf_search``): ``"batched"`` (the default) computes the hits of a large batch of
queries list by list with matrix products (:mod:`nlsim.search.ivf_batched`: the same hits as FAISS's
per-query search, several times faster for the near-duplicate graph of a whole corpus) and uses FAISS's
search for small batches; ``"queries"`` always uses FAISS's search. On GPUs FAISS's own search is used.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> emb = rng.normal(size=(100, 8)).astype("float32")
    >>> emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    >>> index = build_index(emb, use_gpu=False)
    >>> index.describe()
    'exact flat IP on cpu, 100 vectors'
    >>> sims, rows = index.search(emb[:2], 1)
    >>> rows.ravel().tolist()
    [0, 1]
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pandas as pd

from nlsim import __version__
from nlsim.errors import ConfigError, StateError
from nlsim.io.atomic import atomic_path, atomic_save_npy, atomic_write_text, file_sha256
from nlsim.io.records import known_fields, misfit, mistyped_fields, read_json_object
from nlsim.search import ivf_batched

KINDS = ("auto", "flat", "ivf", "hnsw")
IVF_SEARCHES = ("batched", "queries")
FLAT_MAX = 100_000
"""Largest corpus that ``kind="auto"`` indexes exactly on the CPU."""
GPU_FLAT_MAX = 5_000_000
"""Largest corpus that ``kind="auto"`` indexes exactly on GPUs."""
GPU_MAX_K = 2048
"""FAISS GPU indexes return at most this many neighbours per query."""
GPU_MAX_NPROBE = 2048
"""FAISS GPU IVF indexes visit at most this many lists per query (``nprobe``; a CPU index visits any
number, up to its lists)."""

INDEX_FILE = "index.faiss"
IDS_FILE = "ids.parquet"
EMB_FILE = "embeddings.npy"
META_FILE = "meta.json"
FORMAT_VERSION = 1


def gpu_count() -> int:
    """Number of GPUs FAISS can use: 0 with the CPU build (``faiss-cpu``) or without a visible GPU."""
    if not hasattr(faiss, "StandardGpuResources"):
        return 0
    try:
        return int(faiss.get_num_gpus())
    except Exception:  # pragma: no cover - broken driver
        return 0


def default_nlist(n: int) -> int:
    """IVF list count: a power of two near ``2 * sqrt(n)``, at most ``n // 39`` (FAISS wants 39 training
    points per centroid), at least 1. ``default_nlist(1_000_000) == 2048``.

    Measured on distinct e5-like vectors (``benchmarks/bench_realistic.py``, ``docs/scale.md``)."""
    if n <= 0:
        return 1
    nlist = 2 ** round(math.log2(max(2 * math.sqrt(n), 1)))
    return int(max(1, min(nlist, n // 39)))


def default_nprobe(nlist: int) -> int:
    """Lists visited per query: 16, at most ``nlist``. On distinct e5-like vectors
    (``benchmarks/bench_realistic.py``) fewer probes lose pairs silently: FAISS's per-query search with 2
    and 4 probes fell to recall@10 0.49 and 0.84 where it had sufficed on replicated vectors
    (``docs/scale.md``)."""
    return int(min(max(nlist, 1), 16))


def _as_matrix(emb: np.ndarray, dim: int | None = None, what: str = "embeddings") -> np.ndarray:
    arr = np.ascontiguousarray(emb, dtype=np.float32)
    if arr.ndim != 2:
        raise ConfigError(f"{what} must be a 2-D array (n, dim); got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise ConfigError(f"{what} have dimension {arr.shape[1]}, the index has {dim}")
    return arr


class SearchIndex:
    """A FAISS index with the facts needed to describe, search, grow and save it.

    Attributes:
        index: the underlying faiss index (a GPU/sharded one when ``device`` starts with ``"gpu"``).
        kind: ``"flat"``, ``"ivf"`` or ``"hnsw"``.
        device: ``"cpu"``, ``"gpu:0"`` or ``"gpu xN"`` (sharded over N GPUs).
        params: the index parameters (``nlist``, ``nprobe``, ``M``, ``ef_search``, ...).
    """

    def __init__(self, index: Any, kind: str, device: str, dim: int, params: dict[str, Any] | None = None):
        self.index = index
        self.kind = kind
        self.device = device
        self.dim = dim
        self.params = dict(params or {})

    @property
    def ntotal(self) -> int:
        """Number of vectors in the index."""
        return int(self.index.ntotal)

    @property
    def max_k(self) -> int | None:
        """The most hits one query can ask for: :data:`GPU_MAX_K` on GPUs, else no bound (``None``)."""
        return GPU_MAX_K if self.device.startswith("gpu") else None

    @property
    def exact(self) -> bool:
        """True for the exact (flat) index."""
        return self.kind == "flat"

    @property
    def batched(self) -> bool:
        """True for a CPU IVF index that searches large batches list by list
        (:mod:`nlsim.search.ivf_batched`)."""
        return self.kind == "ivf" and self.device == "cpu" and self.params.get("search") == "batched"

    def batch_size(self, default: int, k: int = 11) -> int:
        """Queries to pass to :meth:`search` at a time for ``k`` hits each: ``default``, or for batched IVF
        search :func:`nlsim.search.ivf_batched.batch_rows` (about 128 queries per list, partial hits
        bounded to about 1 GiB; 262,144 queries at 2,048 lists, 16 probes, k = 11)."""
        if self.batched:
            return max(int(default), ivf_batched.batch_rows(self.params["nlist"], self.params["nprobe"], k))
        return int(default)

    def describe(self) -> str:
        """One line for the run log, e.g. ``'exact flat IP on cpu, 10,000 vectors'``."""
        if self.kind == "flat":
            what = "exact flat IP"
        elif self.kind == "ivf":
            what = f"approximate IVF IP (nlist {self.params['nlist']}, nprobe {self.params['nprobe']}"
            what += ", batched)" if self.batched else ")"
        else:
            what = f"approximate HNSW IP (M {self.params['M']}, efSearch {self.params['ef_search']})"
        return f"{what} on {self.device}, {self.ntotal:,} vectors"

    def __repr__(self) -> str:
        return f"SearchIndex({self.describe()})"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` most similar rows for each query: ``(similarities float32 (m, k), rows int64 (m, k))``.

        Missing hits (fewer than ``k`` vectors, or an approximate index that found fewer) have row -1.
        """
        q = _as_matrix(queries, self.dim, "queries")
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        if self.device.startswith("gpu") and k > GPU_MAX_K:
            raise ConfigError(f"FAISS GPU indexes return at most {GPU_MAX_K} neighbours; asked for k={k}")
        if q.shape[0] == 0:
            return np.empty((0, k), np.float32), np.empty((0, k), np.int64)
        if self.batched and ivf_batched.worth_it(
            q.shape[0], self.params["nlist"], self.params["nprobe"], self.dim
        ):
            return ivf_batched.search_batched(self.index, q, k, nprobe=int(self.params["nprobe"]))
        sims, rows = self.index.search(q, k)
        return sims, rows.astype(np.int64, copy=False)

    def add(self, emb: np.ndarray) -> None:
        """Append vectors; they get rows ``ntotal .. ntotal + n - 1``.

        FAISS shards a flat index over several GPUs with its rows numbered in succession across the
        shards, and such an index takes one ``add`` only (a second one raised "only add() in a single pass
        is supported": a daily run adding its new items to the kept ones stopped there): one that holds
        vectors is grown on the CPU and sharded again."""
        arr = _as_matrix(emb, self.dim)
        if not arr.shape[0]:
            return
        if self.kind == "flat" and self.device.startswith("gpu x") and self.ntotal:
            cpu = self.cpu_index()
            cpu.add(arr)
            self.index, self.device = _to_gpus(cpu, int(self.device.removeprefix("gpu x")))
            return
        self.index.add(arr)

    def set_search_params(self, *, nprobe: int | None = None, ef_search: int | None = None) -> None:
        """Change the speed/recall trade-off of an approximate index: ``nprobe`` lists visited (at most the
        index's lists, and on GPUs at most :data:`GPU_MAX_NPROBE`), or HNSW's ``ef_search``."""
        if nprobe is not None and self.kind == "ivf":
            if int(nprobe) < 1:
                raise ConfigError(f"nprobe must be at least 1, got {nprobe}")
            nprobe = min(int(nprobe), int(self.params.get("nlist", nprobe)))
            if self.device.startswith("gpu"):  # FAISS's GPU search refuses more (a kept index's own count)
                nprobe = min(nprobe, GPU_MAX_NPROBE)
            space = faiss.GpuParameterSpace() if self.device.startswith("gpu") else faiss.ParameterSpace()
            space.set_index_parameter(self.index, "nprobe", int(nprobe))
            self.params["nprobe"] = int(nprobe)
        if ef_search is not None and self.kind == "hnsw":
            self.index.hnsw.efSearch = int(ef_search)
            self.params["ef_search"] = int(ef_search)

    def uncapped(self) -> SearchIndex:
        """The index without a bound on the hits a query returns (:attr:`max_k`): itself on the CPU, a CPU
        copy of it (its vectors in host memory, its probes kept) when it lives on GPUs. The search of a
        group of more exact copies than a GPU returns hits goes on there
        (:func:`nlsim.search.neighbors.neighbor_pairs`).

        Example:
            >>> import numpy as np
            >>> index = build_index(np.eye(3, dtype="float32"), use_gpu=False)
            >>> index.uncapped() is index, index.uncapped().max_k
            (True, None)
        """
        if self.max_k is None:
            return self
        cpu = SearchIndex(self.cpu_index(), self.kind, "cpu", self.dim, self.params)
        if self.kind == "ivf" and "nprobe" in self.params:
            cpu.set_search_params(nprobe=int(self.params["nprobe"]))
        return cpu

    def cpu_index(self) -> Any:
        """The index in CPU form (a copy when it lives on GPUs), as ``faiss.write_index`` needs."""
        if self.device == "cpu":
            return self.index
        return faiss.index_gpu_to_cpu(self.index)


def _to_gpus(cpu_index: Any, ngpu: int) -> tuple[Any, str]:
    """Move ``cpu_index`` onto all ``ngpu`` GPUs, sharded (each GPU holds 1/ngpu of the vectors). An IVF
    index visits at most :data:`GPU_MAX_NPROBE` lists there: FAISS refuses to copy one with more probes."""
    if getattr(cpu_index, "nprobe", 0) > GPU_MAX_NPROBE:
        cpu_index.nprobe = GPU_MAX_NPROBE
    co = faiss.GpuMultipleClonerOptions()
    co.shard = True
    co.useFloat16 = False
    gpu_index = faiss.index_cpu_to_all_gpus(cpu_index, co=co, ngpu=ngpu)
    return gpu_index, ("gpu:0" if ngpu == 1 else f"gpu x{ngpu}")


def check_device(
    use_gpu: bool | None, kind: str = "auto", k: int | None = None, nprobe: int | None = None
) -> int:
    """Refuse a search asked for on a GPU (``--gpu``, ``use_gpu=True``) that cannot run there: no GPU seen
    by FAISS, or an HNSW index (CPU only); and ``k`` neighbours per item (``--k``, the item itself one more
    hit) that the GPU indexes it will run on do not return, or ``nprobe`` lists (``--nprobe``) more than
    their IVF search visits. The GPUs are those ``faiss.get_num_gpus()`` sees now. Returns their count.

    Example:
        >>> check_device(None) >= 0 and check_device(False, "hnsw") >= 0
        True
    """
    ngpu = gpu_count()
    if use_gpu is True and ngpu == 0:
        build = (
            "FAISS's GPU build sees none"
            if hasattr(faiss, "StandardGpuResources")
            else "the installed FAISS is its CPU build, faiss-cpu"
        )
        raise ConfigError(
            f"--gpu asks for the search on a GPU, and there is none to use ({build}); leave --gpu out "
            "(the default uses a GPU when FAISS sees one, else the CPU), or run on a machine with a CUDA GPU "
            "and FAISS's GPU build (docs/scale.md)"
        )
    if use_gpu is True and kind == "hnsw":
        raise ConfigError(
            "--gpu with --index hnsw: HNSW indexes run on the CPU only; use --index flat or ivf"
        )
    if ngpu and use_gpu is not False and kind != "hnsw" and k is not None and k + 1 > GPU_MAX_K:
        raise ConfigError(
            f"--k {k}: FAISS GPU indexes return at most {GPU_MAX_K} neighbours (the item itself and "
            f"{GPU_MAX_K - 1} others), and the search would run on this machine's GPU; give --k "
            f"{GPU_MAX_K - 1} or less, or --cpu, or --index hnsw (CPU only) (nothing is done yet)"
        )
    if ngpu and use_gpu is not False and kind in ("auto", "ivf") and (nprobe or 0) > GPU_MAX_NPROBE:
        raise ConfigError(
            f"--nprobe {nprobe}: FAISS GPU indexes visit at most {GPU_MAX_NPROBE} lists per item, and the "
            f"search would run on this machine's GPU; give --nprobe {GPU_MAX_NPROBE} or less, or --cpu "
            "(nothing is done yet)"
        )
    return ngpu


def resolved_kind(kind: str, n: int, use_gpu: bool | None = None) -> str:
    """The index ``kind`` builds for ``n`` vectors: ``"auto"`` by the size rule (the module docstring),
    any other kind as it is.

    Example:
        >>> resolved_kind("auto", 1_000, use_gpu=False), resolved_kind("auto", 200_000, use_gpu=False)
        ('flat', 'ivf')
    """
    if kind != "auto":
        return kind
    return "flat" if n <= (GPU_FLAT_MAX if _resolve_device(use_gpu, kind) else FLAT_MAX) else "ivf"


def _resolve_device(use_gpu: bool | None, kind: str) -> int:
    ngpu = check_device(use_gpu, kind)
    if use_gpu is False or kind == "hnsw":
        return 0
    return ngpu


def on_device(index: SearchIndex, use_gpu: bool | None = None) -> SearchIndex:
    """``index`` (as loaded: on the CPU) where :func:`build_index` would put a new one with ``use_gpu``: on
    every GPU FAISS sees, unless ``use_gpu`` is False or the index is HNSW (CPU only).

    Example:
        >>> import numpy as np
        >>> on_device(build_index(np.eye(4, dtype="float32"), use_gpu=False), use_gpu=False).device
        'cpu'
    """
    ngpu = _resolve_device(use_gpu, index.kind)
    if not ngpu or index.device != "cpu":
        return index
    moved, device = _to_gpus(index.index, ngpu)
    out = SearchIndex(moved, index.kind, device, index.dim, index.params)
    if index.kind == "ivf":
        out.set_search_params(nprobe=int(index.params["nprobe"]))
    return out


def new_index(
    dim: int,
    *,
    n: int = 0,
    kind: str = "auto",
    use_gpu: bool | None = None,
    train: np.ndarray | None = None,
    nlist: int | None = None,
    nprobe: int | None = None,
    hnsw_m: int = 32,
    ef_construction: int = 40,
    ef_search: int = 64,
    train_iters: int = 10,
    seed: int = 1234,
    ivf_search: str = "batched",
) -> SearchIndex:
    """An empty index of dimension ``dim`` for ``n`` expected vectors, ready for :meth:`SearchIndex.add`.

    Used to build an index chunk by chunk (``nlsim.dedup.sharded``): ``n`` drives the ``"auto"`` choice and
    the IVF list count; an IVF index is trained on ``train`` (a sample of the vectors), which it needs.
    See :func:`build_index` for the other arguments.

    Example:
        >>> import numpy as np
        >>> new_index(8, n=10, use_gpu=False).describe()
        'exact flat IP on cpu, 0 vectors'
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown index kind {kind!r}; choose one of {', '.join(KINDS)}")
    if ivf_search not in IVF_SEARCHES:
        raise ConfigError(f"unknown IVF search {ivf_search!r}; choose one of {', '.join(IVF_SEARCHES)}")
    d = int(dim)
    if d <= 0:
        raise ConfigError(f"cannot build an index of dimension {dim}")
    ngpu = _resolve_device(use_gpu, kind)
    kind = resolved_kind(kind, n, use_gpu)
    params: dict[str, Any] = {}
    if kind == "flat":
        cpu = faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        cpu = faiss.IndexHNSWFlat(d, int(hnsw_m), faiss.METRIC_INNER_PRODUCT)
        cpu.hnsw.efConstruction = int(ef_construction)
        cpu.hnsw.efSearch = int(ef_search)
        params = {"M": int(hnsw_m), "ef_construction": int(ef_construction), "ef_search": int(ef_search)}
    else:
        if train is None or len(train) == 0:
            raise ConfigError("an IVF index must be trained: pass a sample of the vectors (train=...)")
        sample = _as_matrix(train, d, "training vectors")
        nl = int(nlist) if nlist else default_nlist(max(n, len(sample)))
        nl = max(1, min(nl, len(sample)))
        np_ = min(int(nprobe) if nprobe else default_nprobe(nl), nl)
        quantizer = faiss.IndexFlatIP(d)
        cpu = faiss.IndexIVFFlat(quantizer, d, nl, faiss.METRIC_INNER_PRODUCT)
        cpu.own_fields = True
        quantizer.this.disown()
        cpu.cp.seed = seed
        cpu.cp.niter = int(train_iters)
        cpu.train(sample)
        cpu.nprobe = np_
        params = {"nlist": nl, "nprobe": np_, "train_size": int(len(sample)), "search": ivf_search}
    if ngpu:
        index, device = _to_gpus(cpu, ngpu)
    else:
        index, device = cpu, "cpu"
    out = SearchIndex(index, kind, device, d, params)
    if kind == "ivf" and ngpu:
        out.set_search_params(nprobe=params["nprobe"])
    return out


def training_sample(emb: np.ndarray, size: int, seed: int = 1234) -> np.ndarray:
    """``size`` rows of ``emb`` drawn without replacement, in row order (all of them if fewer)."""
    n = len(emb)
    if size >= n:
        return np.asarray(emb)
    rng = np.random.default_rng(seed)
    return np.asarray(emb)[np.sort(rng.choice(n, size, replace=False))]


def build_index(
    emb: np.ndarray,
    *,
    kind: str = "auto",
    use_gpu: bool | None = None,
    nlist: int | None = None,
    nprobe: int | None = None,
    hnsw_m: int = 32,
    ef_construction: int = 40,
    ef_search: int = 64,
    train_size: int | None = None,
    train_iters: int = 10,
    seed: int = 1234,
    dim: int | None = None,
    ivf_search: str = "batched",
) -> SearchIndex:
    """Build an inner-product index holding ``emb`` (rows keep their order: row i is ``emb[i]``).

    Args:
        emb: float32 ``(n, dim)``, L2-normalised. May be empty when ``dim`` is given (flat/HNSW only).
        kind: ``"auto"`` (size rule in the module docstring), ``"flat"`` (exact), ``"ivf"``, ``"hnsw"``.
        use_gpu: ``None`` = GPUs when the FAISS GPU build sees some, ``True`` = required (error without),
            ``False`` = CPU. Several GPUs: the index is sharded over all of them.
        nlist, nprobe: IVF lists and lists visited per query (defaults: :func:`default_nlist`,
            :func:`default_nprobe`). ``train_size``: vectors sampled to train IVF (default ``40 * nlist``);
            ``train_iters``: k-means iterations.
        hnsw_m, ef_construction, ef_search: HNSW graph degree and beam widths.
        seed: sampling seed of IVF training (the build is deterministic for a given input).
        ivf_search: ``"batched"`` or ``"queries"`` (see the module docstring); CPU only.
    """
    if emb is None or (np.asarray(emb).size == 0 and dim is not None):
        arr = np.empty((0, int(dim or 0)), np.float32)
    else:
        arr = _as_matrix(emb)
    n, d = arr.shape
    if d == 0:
        raise ConfigError("cannot build an index of dimension 0 (pass dim= with empty embeddings)")
    train = None
    if kind in ("ivf", "auto") and n:
        nl = int(nlist) if nlist else default_nlist(n)
        train = training_sample(arr, min(n, int(train_size) if train_size else 40 * nl), seed)
    index = new_index(
        d,
        n=n,
        kind=kind,
        use_gpu=use_gpu,
        train=train,
        nlist=nlist,
        nprobe=nprobe,
        hnsw_m=hnsw_m,
        ef_construction=ef_construction,
        ef_search=ef_search,
        train_iters=train_iters,
        seed=seed,
        ivf_search=ivf_search,
    )
    index.add(arr)
    return index


@dataclass
class IndexMeta:
    """What a saved index was built from; ``load_index`` compares it with what the run expects.

    ``kind``, ``count`` and ``params`` describe the index; ``model_id``, ``fingerprint``, ``conversion`` and
    ``dim`` identify the vectors and must match for the index to be reused.
    """

    model_id: str
    fingerprint: str
    conversion: str
    dim: int
    count: int = 0
    kind: str = "flat"
    params: dict[str, Any] = field(default_factory=dict)
    nlsim_version: str = __version__
    format_version: int = FORMAT_VERSION
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    IDENTITY = ("model_id", "fingerprint", "conversion", "dim")

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexMeta:
        return cls(**known_fields(cls, data))


@dataclass(frozen=True)
class _Built:
    """A kind of index nlsim builds, as ``meta.json`` and the index file tell it."""

    params: tuple[str, ...]
    """The parameters it is searched with, kept in ``meta.json``."""
    faiss_type: str
    """The FAISS class its index file holds."""
    words: str
    """The kind in a message."""


_BUILT = {
    "flat": _Built((), "IndexFlat", "a flat index"),
    "ivf": _Built(("nlist", "nprobe"), "IndexIVF", "an IVF index"),
    "hnsw": _Built(("M", "ef_search"), "IndexHNSW", "an HNSW index"),
}
"""The kinds of index nlsim builds (:data:`KINDS` but ``auto``), each as :class:`_Built` tells it."""


def _unwritten(data: dict[str, Any]) -> list[str]:
    """The keys of a ``meta.json`` (its keys all there, each of its kind) holding a value nlsim never writes:
    a kind it does not build, a file without its size and SHA-256, an IVF or HNSW index without the
    parameters it is searched with."""
    if data["kind"] not in _BUILT:
        return ["kind"]
    listed = data["files"].values()
    if not all(
        isinstance(f, dict) and type(f.get("bytes")) is int and type(f.get("sha256")) is str for f in listed
    ):
        return ["files"]
    if not all(type(data["params"].get(p)) is int for p in _BUILT[data["kind"]].params):
        return ["params"]
    return []


def _check_read(raw: Any, ids: np.ndarray, meta: IndexMeta, folder: Path, fix: str) -> None:
    """Refuse an index file of another kind, dimension or count than ``meta.json`` says (edited by hand)."""
    held = next((k for k, b in _BUILT.items() if isinstance(raw, getattr(faiss, b.faiss_type))), None)
    if held != meta.kind:
        what = _BUILT[held].words if held is not None else f"a {type(raw).__name__}"
        raise StateError(f"{folder / INDEX_FILE} holds {what}, {META_FILE} says {meta.kind}; " + fix)
    if raw.d != meta.dim or raw.ntotal != meta.count or len(ids) != meta.count:
        raise StateError(
            f"{folder}: index has {raw.ntotal} vectors of dimension {raw.d} and {len(ids)} ids, "
            f"{META_FILE} says {meta.count} of dimension {meta.dim}; " + fix
        )


def _rebuild_hint(folder: Path) -> str:
    return f"delete {folder} (or run with a fresh index folder) and the index is rebuilt from the corpus"


def save_index(
    folder: str | Path,
    index: SearchIndex,
    ids: Any,
    meta: IndexMeta,
    *,
    embeddings: np.ndarray | None = None,
) -> IndexMeta:
    """Save ``index`` (CPU form), ``ids`` (row i's item id), optional ``embeddings`` and ``meta.json``.

    Each file is written atomically; ``meta.json`` is written last and holds the SHA-256 and size of every
    other file, so a folder caught half-rewritten or truncated is refused by :func:`load_index`.
    Returns the metadata as saved (``count``, ``kind``, ``params``, ``files`` filled in).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ids_arr = pd.Series(list(ids) if not isinstance(ids, (pd.Series, np.ndarray)) else ids)
    if len(ids_arr) != index.ntotal:
        raise ConfigError(f"{len(ids_arr)} ids for an index of {index.ntotal} vectors")
    if meta.dim != index.dim:
        raise ConfigError(f"meta.dim={meta.dim} but the index has dimension {index.dim}")
    files: dict[str, dict[str, Any]] = {}
    with atomic_path(folder / INDEX_FILE) as tmp:
        faiss.write_index(index.cpu_index(), str(tmp))
    with atomic_path(folder / IDS_FILE, suffix=".parquet") as tmp:
        pd.DataFrame({"id": ids_arr.to_numpy()}).to_parquet(tmp, index=False, engine="pyarrow")
    names = [INDEX_FILE, IDS_FILE]
    if embeddings is not None:
        emb = _as_matrix(embeddings, index.dim)
        if emb.shape[0] != index.ntotal:
            raise ConfigError(f"{emb.shape[0]} embeddings for an index of {index.ntotal} vectors")
        atomic_save_npy(folder / EMB_FILE, emb)
        names.append(EMB_FILE)
    else:
        (folder / EMB_FILE).unlink(missing_ok=True)
    for name in names:
        p = folder / name
        files[name] = {"sha256": file_sha256(p), "bytes": p.stat().st_size}
    saved = IndexMeta(
        model_id=meta.model_id,
        fingerprint=meta.fingerprint,
        conversion=meta.conversion,
        dim=index.dim,
        count=index.ntotal,
        kind=index.kind,
        params=dict(index.params),
        files=files,
    )
    atomic_write_text(folder / META_FILE, saved.to_json())
    return saved


def _expected_dict(expected: Any) -> dict[str, Any]:
    if expected is None:
        return {}
    if isinstance(expected, str):
        return {"fingerprint": expected}
    if isinstance(expected, IndexMeta):
        return {k: getattr(expected, k) for k in IndexMeta.IDENTITY}
    if isinstance(expected, dict):
        return {k: v for k, v in expected.items() if k in IndexMeta.IDENTITY}
    # an Encoder-like object: model_id, fingerprint, dim
    out = {k: getattr(expected, k) for k in ("model_id", "fingerprint", "dim") if hasattr(expected, k)}
    if not out:
        raise ConfigError(f"cannot compare an index with {type(expected).__name__}")
    return out


def check_meta(meta: IndexMeta, expected: Any, folder: str | Path = "index", hint: str | None = None) -> None:
    """Raise :class:`StateError` when ``meta`` does not match ``expected`` (see :func:`load_index`)."""
    want = _expected_dict(expected)
    diffs = [
        f"{k}: index has {getattr(meta, k)!r}, this run expects {v!r}"
        for k, v in want.items()
        if v is not None and getattr(meta, k) != v
    ]
    if diffs:
        raise StateError(
            f"the index in {folder} was built from other vectors ({'; '.join(diffs)}); "
            + (hint or _rebuild_hint(Path(folder)))
        )


def load_index(
    folder: str | Path,
    *,
    expected: Any = None,
    use_gpu: bool | None = False,
    load_embeddings: bool = False,
    verify: bool = True,
    hint: str | None = None,
) -> tuple[SearchIndex, np.ndarray, IndexMeta] | tuple[SearchIndex, np.ndarray, IndexMeta, np.ndarray]:
    """Load a folder written by :func:`save_index`: ``(index, ids, meta)`` (``+ embeddings`` if asked).

    Args:
        expected: what the run will put in / search with: an :class:`IndexMeta`, a dict with any of
            ``model_id fingerprint conversion dim``, an encoder (its ``model_id fingerprint dim``), or a
            fingerprint string. Any difference raises :class:`StateError` naming it.
        use_gpu: move the loaded index onto GPUs (``None`` = when available).
        verify: check every file's size and SHA-256 against ``meta.json`` (truncated/corrupt: StateError).
        hint: what the error says to do (default: delete the folder, and the index is built again); a
            daily state, whose index is not built apart from it, says how to rebuild the state.
    """
    folder = Path(folder)
    fix = hint or _rebuild_hint(folder)
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise StateError(f"no index in {folder} ({META_FILE} missing); " + (hint or "build one first"))
    try:
        data = read_json_object(meta_path, "the index's description")
        wrong = [f.name for f in fields(IndexMeta) if f.name not in data] or mistyped_fields(IndexMeta, data)
        wrong = wrong or _unwritten(data)
        meta = None if wrong else IndexMeta.from_dict(data)
    except (ValueError, TypeError, AttributeError) as exc:
        raise StateError(f"{meta_path} is unreadable ({exc}); " + fix) from exc
    if meta is None:  # every nlsim has written each of its keys: one missing or mistyped is a hand edit
        raise StateError(f"{meta_path} {misfit(data, wrong[0])}; " + fix)
    if meta.format_version != FORMAT_VERSION:
        raise StateError(
            f"{folder} holds index format {meta.format_version}, this nlsim reads {FORMAT_VERSION}; " + fix
        )
    check_meta(meta, expected, folder, hint=fix)
    names = [INDEX_FILE, IDS_FILE] + ([EMB_FILE] if load_embeddings else [])
    for name in names:
        p = folder / name
        info = meta.files.get(name)
        if info is None or not p.is_file():
            raise StateError(f"{p} is missing; " + fix)
        if verify:
            size = p.stat().st_size
            if size != info["bytes"]:
                raise StateError(
                    f"{p} is truncated or was rewritten: {size} bytes, {META_FILE} says {info['bytes']}; "
                    + fix
                )
            if file_sha256(p) != info["sha256"]:
                raise StateError(f"{p} is corrupt (SHA-256 differs from {META_FILE}); " + fix)
    try:
        raw = faiss.read_index(str(folder / INDEX_FILE))
        ids = pd.read_parquet(folder / IDS_FILE)["id"].to_numpy()
    except Exception as exc:  # faiss raises RuntimeError on garbage
        raise StateError(f"cannot read the index in {folder} ({exc}); " + fix) from exc
    _check_read(raw, ids, meta, folder, fix)
    ngpu = _resolve_device(use_gpu, meta.kind)
    if ngpu:
        idx, device = _to_gpus(raw, ngpu)
    else:
        idx, device = raw, "cpu"
    index = SearchIndex(idx, meta.kind, device, meta.dim, meta.params)
    if meta.kind == "ivf" and "nprobe" in meta.params:
        index.set_search_params(nprobe=int(meta.params["nprobe"]))
    if load_embeddings:
        emb = np.load(folder / EMB_FILE)
        return index, ids, meta, emb
    return index, ids, meta
