"""Corpora bigger than memory: read in chunks, write embeddings in shards, build the index from the shards.

Peak memory is one chunk of rows, one shard of embeddings and the index itself, whatever the corpus size:

* :func:`iter_batches` reads Parquet, CSV/TSV or JSONL with pyarrow's streaming readers, ``batch_size``
  rows at a time (pandas frames).
* :func:`embed_to_shards` embeds each chunk with any ``embed(texts) -> float32 (n, dim)`` function (an
  :class:`nlsim.encoders.Encoder`'s ``encode``, or :class:`HashingEmbedder`, a fast stand-in) and writes one
  shard per chunk: ``emb-00000.npy`` + ``ids-00000.parquet``, each atomically, then ``manifest.json``
  (shard rows, SHA-256). An interrupted run resumes after its last complete shard.
* :class:`ShardSet` reads a shard folder (embeddings memory-mapped) and checks it.
* :func:`build_index_from_shards` trains (IVF) on a sample drawn across shards and adds shard by shard;
  :func:`shard_neighbor_pairs` searches shard by shard and merges the pairs.

Example:
    >>> import tempfile, pathlib, pandas as pd
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"id": [f"n{i}" for i in range(5)], "title": ["a b", "a b", "c", "d e", "f"]}).to_csv(
    ...     d / "news.csv", index=False)
    >>> shards = embed_to_shards(d / "news.csv", HashingEmbedder(16), d / "shards", batch_size=2,
    ...                          progress=False)
    >>> len(shards), shards.dim, len(shards.shards)
    (5, 16, 3)
    >>> index = build_index_from_shards(shards, use_gpu=False)
    >>> shard_neighbor_pairs(index, shards, k=2, threshold=0.99, progress=False)[["a", "b"]].values.tolist()
    [[0, 1]]
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim import __version__
from nlsim.atomic import atomic_path, atomic_save_npy, atomic_write_text, file_sha256
from nlsim.errors import ConfigError, InputError, StateError

MANIFEST = "manifest.json"
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
           ".ndjson": "jsonl"}


# --- reading ------------------------------------------------------------------------------------------

def _format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(path, None, None, f"unknown corpus format {path.suffix!r}; use .parquet, .csv, .tsv "
                         "or .jsonl")
    return fmt


def iter_batches(
    path: str | Path, *, columns: Sequence[str] | None = None, batch_size: int = 50_000
) -> Iterator[pd.DataFrame]:
    """Yield the file as pandas frames of at most ``batch_size`` rows, in file order, never all at once.

    ``columns`` selects columns (those absent from the file are skipped here; the caller decides whether
    they are required). CSV/TSV/JSONL are read in byte blocks (pyarrow), so a frame may hold fewer rows.
    """
    import pyarrow as pa

    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, None, "file not found")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    fmt = _format(path)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            cols = [c for c in columns if c in pf.schema_arrow.names] if columns else None
            for rb in pf.iter_batches(batch_size=batch_size, columns=cols):
                yield rb.to_pandas()
            return
        if fmt in ("csv", "tsv"):
            import pyarrow.csv as pcsv

            reader = pcsv.open_csv(
                path,
                read_options=pcsv.ReadOptions(block_size=1 << 22),
                parse_options=pcsv.ParseOptions(
                    delimiter="\t" if fmt == "tsv" else ",", newlines_in_values=True
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types={c: pa.string() for c in (columns or ())},
                    strings_can_be_null=False,
                    include_columns=None,
                ),
            )
        else:
            import pyarrow.json as pjson

            reader = pjson.open_json(path, read_options=pjson.ReadOptions(block_size=1 << 22))
        names = reader.schema.names
        cols = [c for c in columns if c in names] if columns else names
        for rb in reader:
            frame = rb.select(cols).to_pandas()
            for start in range(0, len(frame), batch_size):
                yield frame.iloc[start:start + batch_size].reset_index(drop=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise InputError(
            path, None, None, f"cannot read as {fmt.upper()} (truncated or corrupt?): {exc}"
        ) from exc


def batch_texts(frame: pd.DataFrame, text_fields: Sequence[str], *, path: str | Path = "", first_row: int = 1
                ) -> tuple[list[str], list[str]]:
    """``(ids, texts)`` of a chunk: non-empty text fields joined by a space (as ``Corpus.texts``).

    Raises :class:`InputError` naming the 1-based data row for a missing id or an empty title.
    """
    for col in ("id", "title"):
        if col not in frame.columns:
            raise InputError(path, None, col, "required column missing")
    ids = frame["id"].astype("string")
    bad_id = ids.isna() | (ids.str.strip() == "")
    if bad_id.any():
        raise InputError(path, first_row + int(np.flatnonzero(bad_id.to_numpy())[0]), "id", "missing id")
    parts = []
    for f in text_fields:
        if f in frame.columns:
            parts.append(frame[f].astype("string").fillna("").str.strip())
        elif f == "title":
            raise InputError(path, None, "title", "required column missing")
    title = frame["title"].astype("string").fillna("").str.strip()
    empty = (title == "").to_numpy()
    if empty.any():
        raise InputError(path, first_row + int(np.flatnonzero(empty)[0]), "title", "empty title")
    texts = [" ".join(p for p in row if p) for row in zip(*[p.tolist() for p in parts], strict=True)]
    return ids.tolist(), texts


# --- a fast stand-in embedding ------------------------------------------------------------------------

class HashingEmbedder:
    """A fast, NOT semantic, stand-in embedding: hashed character bigrams and words, L2-normalised.

    For tests and memory benchmarks of the streaming path, where the real encoder would take hours. Texts
    sharing many words/bigrams get high cosine, so near-copies still come out as neighbours.

    Example:
        >>> e = HashingEmbedder(32)
        >>> v = e(["breaking news today", "breaking news today!", "weather"])
        >>> v.shape, bool(v[0] @ v[1] > 0.8), bool(v[0] @ v[2] < 0.5)
        ((3, 32), True, True)
    """

    def __init__(self, dim: int = 384, seed: int = 0) -> None:
        self.dim = int(dim)
        self.seed = int(seed)
        self.model_id = f"hashing-{dim}"
        self.fingerprint = hashlib.sha256(f"hashing:{dim}:{seed}".encode()).hexdigest()[:16]

    def _features(self, text: str) -> list[str]:
        t = text.lower()
        return t.split() + [t[i:i + 2] for i in range(len(t) - 1)]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        seed = self.seed
        for i, text in enumerate(texts):
            row = out[i]
            for feat in self._features(text):
                h = zlib.crc32(feat.encode("utf-8"), seed)
                row[h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


# --- shards -------------------------------------------------------------------------------------------

class ShardSet:
    """A folder of embedding shards written by :func:`embed_to_shards` (or :class:`ShardWriter`)."""

    def __init__(self, folder: str | Path, *, verify: bool = False) -> None:
        self.folder = Path(folder)
        path = self.folder / MANIFEST
        if not path.is_file():
            raise StateError(f"no shards in {self.folder} ({MANIFEST} missing); embed the corpus first")
        try:
            self.manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise StateError(f"{path} is unreadable ({exc}); delete {self.folder} and embed again") from exc
        if verify:
            self.verify()

    @property
    def shards(self) -> list[dict[str, Any]]:
        return list(self.manifest["shards"])

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete"))

    def __len__(self) -> int:
        return int(sum(s["rows"] for s in self.shards))

    def offsets(self) -> np.ndarray:
        """Row position of each shard's first item (index rows follow shard order)."""
        return np.concatenate([[0], np.cumsum([s["rows"] for s in self.shards])]).astype(np.int64)

    def verify(self) -> None:
        """Check every shard file's size and SHA-256 against the manifest (StateError when not)."""
        for s in self.shards:
            for key in ("emb", "ids"):
                p = self.folder / s[key]
                ok = p.is_file() and p.stat().st_size == s[f"{key}_bytes"]
                if not ok or file_sha256(p) != s[f"{key}_sha256"]:
                    raise StateError(
                        f"shard file {p} is missing, truncated or corrupt; delete {self.folder} and embed "
                        "again (or delete that shard and its manifest entry to redo it)"
                    )

    def embeddings(self, i: int, *, mmap: bool = True) -> np.ndarray:
        """Shard ``i``'s embeddings (memory-mapped by default: pages are read on demand)."""
        return np.load(self.folder / self.shards[i]["emb"], mmap_mode="r" if mmap else None)

    def ids(self, i: int | None = None) -> np.ndarray:
        """Shard ``i``'s ids, or all ids in row order."""
        if i is not None:
            return pd.read_parquet(self.folder / self.shards[i]["ids"])["id"].to_numpy()
        return np.concatenate([self.ids(j) for j in range(len(self.shards))]) if self.shards else np.array([])

    def iter_shards(self, *, mmap: bool = True) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_row, embeddings)`` per shard."""
        offsets = self.offsets()
        for i in range(len(self.shards)):
            yield int(offsets[i]), self.embeddings(i, mmap=mmap)

    def sample(self, size: int, seed: int = 1234) -> np.ndarray:
        """``size`` rows drawn uniformly across all shards (only the drawn rows are read)."""
        n = len(self)
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(n, min(size, n), replace=False))
        offsets = self.offsets()
        parts = []
        for i in range(len(self.shards)):
            sel = rows[(rows >= offsets[i]) & (rows < offsets[i + 1])] - offsets[i]
            if sel.size:
                parts.append(np.asarray(self.embeddings(i)[sel], dtype=np.float32))
        return np.concatenate(parts) if parts else np.empty((0, self.dim), np.float32)


class ShardWriter:
    """Write embeddings shard by shard; the manifest is rewritten (atomically) after each shard.

    Example:
        >>> import tempfile
        >>> w = ShardWriter(tempfile.mkdtemp(), dim=4, info={"model": "demo"})
        >>> w.write(["a", "b"], np.eye(4, dtype="float32")[:2])
        >>> len(w.finish())
        2
    """

    def __init__(self, folder: str | Path, *, dim: int, info: dict[str, Any] | None = None,
                 resume: bool = False) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        info = dict(info or {})
        self.manifest: dict[str, Any] = {"dim": int(dim), "info": info, "shards": [], "complete": False,
                                         "nlsim_version": __version__}
        path = self.folder / MANIFEST
        if resume and path.is_file():
            old = ShardSet(self.folder).manifest
            if old.get("dim") != int(dim) or old.get("info") != info:
                raise StateError(
                    f"the shards in {self.folder} were written with other settings ({old.get('info')}, dim "
                    f"{old.get('dim')}); delete {self.folder} to embed again with {info}, dim {dim}"
                )
            self.manifest["shards"] = old["shards"]
        elif path.is_file():
            path.unlink()

    @property
    def done(self) -> int:
        """Shards already written (after a resume, the ones to skip)."""
        return len(self.manifest["shards"])

    def write(self, ids: Sequence[Any], emb: np.ndarray) -> None:
        emb = np.ascontiguousarray(emb, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[1] != self.manifest["dim"] or len(ids) != emb.shape[0]:
            raise ConfigError(f"shard of {len(ids)} ids and embeddings {emb.shape}, expected dim "
                              f"{self.manifest['dim']}")
        i = self.done
        emb_name, ids_name = f"emb-{i:05d}.npy", f"ids-{i:05d}.parquet"
        atomic_save_npy(self.folder / emb_name, emb)
        with atomic_path(self.folder / ids_name, suffix=".parquet") as tmp:
            pd.DataFrame({"id": pd.Series(list(ids), dtype="string")}).to_parquet(tmp, index=False)
        entry = {"emb": emb_name, "ids": ids_name, "rows": int(emb.shape[0])}
        for key, name in (("emb", emb_name), ("ids", ids_name)):
            p = self.folder / name
            entry[f"{key}_bytes"] = p.stat().st_size
            entry[f"{key}_sha256"] = file_sha256(p)
        self.manifest["shards"].append(entry)
        self._save()

    def _save(self) -> None:
        atomic_write_text(self.folder / MANIFEST, json.dumps(self.manifest, indent=1, ensure_ascii=False))

    def finish(self) -> ShardSet:
        """Mark the set complete and return it for reading."""
        self.manifest["complete"] = True
        self.manifest["rows"] = int(sum(s["rows"] for s in self.manifest["shards"]))
        self._save()
        return ShardSet(self.folder)


def embed_to_shards(
    path: str | Path,
    embed: Callable[[list[str]], np.ndarray],
    out: str | Path,
    *,
    text_fields: Sequence[str] = ("title", "description"),
    convert_mode: str = "none",
    batch_size: int = 50_000,
    info: dict[str, Any] | None = None,
    resume: bool = True,
    progress: bool = True,
) -> ShardSet:
    """Stream ``path`` through ``convert`` and ``embed`` into one shard per ``batch_size`` rows in ``out``.

    ``info`` (e.g. model id and fingerprint) is stored in the manifest; with ``resume`` an existing,
    incomplete shard folder written with the same ``info`` continues after its last shard.
    """
    from nlsim.conversion import convert

    probe = embed(["probe"])
    dim = int(probe.shape[1])
    settings = {"source": str(Path(path).resolve()), "text_fields": list(text_fields),
                "convert": convert_mode, "batch_size": int(batch_size), **(info or {})}
    writer = ShardWriter(out, dim=dim, info=settings, resume=resume)
    skip = writer.done
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(desc="embed shards", unit="item")
    first_row = 1
    t0 = time.perf_counter()
    try:
        for i, frame in enumerate(_fixed_batches(path, list({"id", "title", *text_fields}), batch_size)):
            if i < skip:
                first_row += len(frame)
                continue
            ids, texts = batch_texts(frame, text_fields, path=path, first_row=first_row)
            emb = embed(convert(texts, convert_mode))
            writer.write(ids, emb)
            first_row += len(frame)
            if bar is not None:
                bar.update(len(frame))
    finally:
        if bar is not None:
            bar.close()
    shards = writer.finish()
    if progress:
        print(f"embedded {len(shards):,} items into {len(shards.shards)} shards in "
              f"{time.perf_counter() - t0:.1f} s -> {out}")
    return shards


def _fixed_batches(path: str | Path, columns: list[str], batch_size: int) -> Iterator[pd.DataFrame]:
    """Frames of exactly ``batch_size`` rows (the last may be shorter), so shard boundaries are stable."""
    pending: list[pd.DataFrame] = []
    held = 0
    for frame in iter_batches(path, columns=columns, batch_size=batch_size):
        pending.append(frame)
        held += len(frame)
        while held >= batch_size:
            whole = pd.concat(pending, ignore_index=True)
            yield whole.iloc[:batch_size].reset_index(drop=True)
            rest = whole.iloc[batch_size:].reset_index(drop=True)
            pending, held = ([rest] if len(rest) else []), len(rest)
    if held:
        yield pd.concat(pending, ignore_index=True)


# --- index and graph from shards ----------------------------------------------------------------------

def build_index_from_shards(
    shards: ShardSet | str | Path,
    *,
    kind: str = "auto",
    use_gpu: bool | None = None,
    train_size: int | None = None,
    **kwargs: Any,
) -> Any:
    """An index of every shard's vectors, rows in shard order; only one shard is in memory at a time.

    IVF is trained on ``train_size`` vectors (default ``40 * nlist``) sampled across all shards.
    Other keyword arguments go to :func:`nlsim.index.new_index`.
    """
    from nlsim.index import FLAT_MAX, GPU_FLAT_MAX, default_nlist, gpu_count, new_index

    if not isinstance(shards, ShardSet):
        shards = ShardSet(shards)
    n = len(shards)
    train = None
    resolved = kind
    if kind == "auto":
        on_gpu = use_gpu is not False and gpu_count() > 0
        resolved = "flat" if n <= (GPU_FLAT_MAX if on_gpu else FLAT_MAX) else "ivf"
    if resolved == "ivf":
        nl = kwargs.get("nlist") or default_nlist(n)
        train = shards.sample(int(train_size) if train_size else 40 * nl, seed=kwargs.get("seed", 1234))
    index = new_index(shards.dim, n=n, kind=resolved, use_gpu=use_gpu, train=train, **kwargs)
    for _, emb in shards.iter_shards():
        index.add(np.asarray(emb, dtype=np.float32))
    return index


def shard_neighbor_pairs(
    index: Any, shards: ShardSet, *, k: int, threshold: float, **kwargs: Any
) -> pd.DataFrame:
    """The k-NN graph of all shard vectors against ``index`` (built from the same shards), shard by shard."""
    from nlsim.neighbors import merge_pairs, neighbor_pairs

    parts = []
    for first, emb in shards.iter_shards():
        rows = np.arange(first, first + len(emb))
        parts.append(neighbor_pairs(index, np.asarray(emb, dtype=np.float32), rows, k=k, threshold=threshold,
                                    **kwargs))
    return merge_pairs(parts)


# --- sharded embedding (one process or many) ----------------------------------------------------------

def shard_slices(n: int, shard_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` cutting ``n`` items into shards of ``shard_size`` (the last may be shorter).

    Example:
        >>> shard_slices(5, 2)
        [(0, 2), (2, 4), (4, 5)]
    """
    if shard_size < 1:
        raise ConfigError(f"shard_size must be >= 1, got {shard_size}")
    return [(s, min(s + shard_size, n)) for s in range(0, n, shard_size)]


@functools.lru_cache(maxsize=2)
def cached_encoder(model: str, threads: int | None = None) -> Any:
    """``load_encoder(model)``, loaded once per process (a Dask worker keeps its copy between shards)."""
    from nlsim.encoders import load_encoder

    return load_encoder(model, threads=threads)


def embed_texts(texts: Sequence[str], model: str, *, batch_size: int = 64, threads: int | None = None
                ) -> np.ndarray:
    """Embed one shard of (already converted) texts with the named model; what each worker runs.

    Example:
        >>> embed_texts(["hello"], "paraphrase-MiniLM-L3-v2").shape
        (1, 384)
    """
    return cached_encoder(model, threads).encode(list(texts), batch_size=batch_size, progress=False)
