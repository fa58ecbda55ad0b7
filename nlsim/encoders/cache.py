"""Content-addressed cache of embedding matrices (``.npy``) under ``$NLSIM_HOME/embeddings``.

The key is the SHA-256 of the texts as embedded (after script conversion), the model fingerprint, the
conversion mode and ``max_length``, and the inference path when it is a lossy one (int8, bf16): change any
of them and the cache misses. Each entry is a ``.npy``
file and a ``.json`` sidecar (shape, dtype, SHA-256 of the ``.npy`` bytes), both written atomically, the
sidecar last. An entry whose file is missing, truncated or altered fails verification and is recomputed.

Example:
    >>> import tempfile
    >>> import numpy as np
    >>> cache = EmbeddingCache(tempfile.mkdtemp())
    >>> calls = []
    >>> def compute():
    ...     calls.append(1)
    ...     return np.ones((2, 3), dtype=np.float32)
    >>> parts = {"texts": ["a", "b"], "fingerprint": "f", "conversion": "none", "max_length": 256}
    >>> _, hit = cache.get_or_compute_parts(parts, compute)
    >>> _, hit2 = cache.get_or_compute_parts(parts, compute)
    >>> hit, hit2, len(calls)
    (False, True, 1)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nlsim.errors import StateError
from nlsim.io.atomic import atomic_save_npy, atomic_write_text, file_sha256, why_not_kept

log = logging.getLogger(__name__)
FORMAT = 1


def check_finite(vectors: np.ndarray, texts: Sequence[str], model: str) -> np.ndarray:
    """``vectors`` (one row per text), or a :class:`StateError` when a row holds NaN or an infinity: a
    model whose weights are broken (a fine-tuning that diverged, a folder of another tool with NaN weights)
    embeds texts as vectors that match nothing, and a run went on with them, finding no pair at all and
    saying nothing (and this cache kept them). Called where the vectors of a run are made, before they are
    cached, searched or written (``nlsim embed``, the embed stage of ``nlsim dedup``).

    Example:
        >>> check_finite(np.ones((1, 2), np.float32), ["a"], "m").shape
        (1, 2)
        >>> check_finite(np.array([[1.0, 0.0], [np.nan, 0.0]]), ["a", "b"], "m")
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: the model m embedded 1 of 2 texts as vectors that are not numbers (NaN ...
    """
    bad = ~np.isfinite(vectors).all(axis=1) if len(vectors) else np.zeros(0, bool)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise StateError(
            f"the model {model} embedded {int(bad.sum())} of {len(vectors)} texts as vectors that are not "
            f"numbers (NaN or infinite; the first, text {first + 1}: {texts[first]!r:.80}): its weights are "
            "broken (a fine-tuning that diverged, a damaged or foreign model folder); nothing was written: "
            "use another model, or train this one again"
        )
    return vectors


def default_cache_dir() -> Path:
    """``$NLSIM_HOME/embeddings``."""
    from nlsim.io.model_cache import nlsim_home

    return nlsim_home() / "embeddings"


def texts_digest(texts: Sequence[str]) -> str:
    """SHA-256 over the texts in order (length-prefixed, so ``["ab", "c"]`` differs from ``["a", "bc"]``)."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def cache_key(parts: Mapping[str, Any]) -> str:
    """SHA-256 of the key parts; a ``texts`` entry (list of strings) is hashed with :func:`texts_digest`.

    Example:
        >>> k1 = cache_key({"texts": ["a"], "fingerprint": "x", "conversion": "none", "max_length": 256})
        >>> k2 = cache_key({"texts": ["a"], "fingerprint": "x", "conversion": "tw2sp", "max_length": 256})
        >>> k1 != k2, len(k1)
        (True, 64)
    """
    norm: dict[str, Any] = {}
    for k, v in parts.items():
        if k == "texts":
            v = {"sha256": texts_digest(list(v)), "n": len(v)}
        norm[k] = v
    blob = json.dumps({"format": FORMAT, **norm}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _remove(*paths: Path) -> None:
    """Delete ``paths`` (an entry's sidecar first), as far as the folder lets: in a read-only cache a damaged
    entry stays, and it is said; it is never read as good (it fails its check again), and its sidecar is
    removed before a new matrix is written (:meth:`EmbeddingCache.store`), so a sidecar never describes a
    matrix it was not written for. A file that is not there is not said (a read-only file system refuses
    to delete even that: EROFS, not ENOENT)."""
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            if not os.path.lexists(path):
                continue
            log.warning("embedding cache: %s could not be removed (%s)", path, why_not_kept(exc))
            return


class EmbeddingCache:
    """A folder of cached embedding matrices keyed by content; see the module docstring.

    Args:
        root: cache folder (default ``$NLSIM_HOME/embeddings``).
    """

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def paths(self, key: str) -> tuple[Path, Path]:
        """The ``.npy`` file and ``.json`` sidecar of ``key``."""
        return self.root / f"{key}.npy", self.root / f"{key}.json"

    def load(self, key: str, *, n: int | None = None) -> np.ndarray | None:
        """The verified matrix for ``key``, or ``None`` if absent or corrupt (a corrupt entry is removed)."""
        npy, meta_path = self.paths(key)
        if not meta_path.is_file() or not npy.is_file():
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
                raise StateError("sidecar does not describe this entry")
            if npy.stat().st_size != meta["size"] or file_sha256(npy) != meta["sha256"]:
                raise StateError("file size or SHA-256 differs from the sidecar")
            arr = np.load(npy, allow_pickle=False)
            if list(arr.shape) != meta["shape"] or str(arr.dtype) != meta["dtype"]:
                raise StateError(f"shape {arr.shape} / dtype {arr.dtype} differ from the sidecar")
            if n is not None and arr.shape[0] != n:
                raise StateError(f"{arr.shape[0]} rows, expected {n}")
            if not np.isfinite(arr).all():
                raise StateError("non-finite values")
        except (OSError, ValueError, KeyError, StateError) as exc:
            log.warning("embedding cache entry %s is corrupt (%s); recomputing", npy, exc)
            _remove(meta_path, npy)
            return None
        return arr

    def store(self, key: str, arr: np.ndarray, *, info: Mapping[str, Any] | None = None) -> Path:
        """Write ``arr`` under ``key`` atomically (matrix first, sidecar last)."""
        npy, meta_path = self.paths(key)
        arr = np.ascontiguousarray(arr)
        meta_path.unlink(missing_ok=True)  # an entry without its sidecar is never read
        atomic_save_npy(npy, arr)
        meta = {
            "format": FORMAT,
            "key": key,
            "shape": list(arr.shape),
            "dtype": str(arr.dtype),
            "size": npy.stat().st_size,
            "sha256": file_sha256(npy),
            **({"info": dict(info)} if info else {}),
        }
        atomic_write_text(meta_path, json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
        return npy

    def get_or_compute_parts(
        self, key_parts: Mapping[str, Any], compute_fn: Callable[[], np.ndarray]
    ) -> tuple[np.ndarray, bool]:
        """``(matrix, hit)``: the cached matrix for ``key_parts``, or ``compute_fn()`` stored and returned."""
        key = cache_key(key_parts)
        n = len(key_parts["texts"]) if "texts" in key_parts else None
        cached = self.load(key, n=n)
        if cached is not None:
            return cached, True
        arr = np.asarray(compute_fn())
        if n is not None and arr.shape[0] != n:
            raise StateError(f"compute_fn returned {arr.shape[0]} rows for {n} texts")
        info = {k: v for k, v in key_parts.items() if k != "texts"}
        try:
            self.store(key, arr, info=info)
        except OSError as exc:  # a full or read-only NLSIM_HOME: the vectors are in hand; the cache saves
            npy, meta_path = self.paths(key)
            _remove(meta_path)  # no sidecar: a half-written entry is never read
            log.warning(
                "embedding cache: %s not kept (%s); the run goes on with the vectors it computed",
                npy,
                why_not_kept(exc),
            )
        return arr, False

    def get_or_compute(
        self,
        texts: Sequence[str],
        encoder: Any,
        conversion: str,
        compute_fn: Callable[[], np.ndarray] | None = None,
    ) -> tuple[np.ndarray, bool]:
        """``(embeddings, hit)`` for ``texts`` (already converted with ``conversion``) and ``encoder``.

        ``compute_fn`` defaults to ``encoder.encode(texts)``. The encoder's inference path for a job this size
        is decided first (:meth:`nlsim.encoders.Encoder.plan`): vectors from a lossy path (int8, bf16) are
        kept apart from the exact ones (``precision`` in the key).
        """
        plan = getattr(encoder, "plan", None)
        if plan is not None:
            plan(len(texts))
        parts = {
            "texts": list(texts),
            "fingerprint": encoder.fingerprint,
            "conversion": conversion,
            "max_length": int(getattr(encoder, "max_length", 0)),
        }
        tag = getattr(encoder, "vectors_tag", "")
        if isinstance(tag, str) and tag:
            parts["precision"] = tag  # absent for exact vectors: their keys stay what they were
        return self.get_or_compute_parts(parts, compute_fn or (lambda: encoder.encode(list(texts))))
