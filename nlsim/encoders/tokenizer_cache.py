"""A model folder's fast tokenizer, loaded once per content of its files.

A cold chain loads the e5 folder four times (the baseline, the first report, fine-tuning, the reranker's
cross-encoder), and ``AutoTokenizer.from_pretrained`` takes one to two seconds for e5's 250,000 pieces. The
tokenizer of a folder whose files (all but the weights) hold the same bytes as at an earlier load is that
load's object: callers set truncation and padding with each call and change nothing else, and a saved
tokenizer leaves the last call's settings out (:func:`save_tokenizer`).

Example:
    >>> from nlsim.encoders.registry import registry_folder
    >>> folder = registry_folder("paraphrase-MiniLM-L3-v2")
    >>> load_tokenizer(folder) is load_tokenizer(folder)
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nlsim.io.model_cache import known_sha256

WEIGHT_SUFFIXES = frozenset({".safetensors", ".bin", ".onnx", ".pt", ".pth", ".h5", ".msgpack", ".ot"})
"""Files a tokenizer never reads (the weights), left out of the key."""
KEPT = 4
"""Tokenizers held at most (a process loads a handful of models)."""
_loaded: dict[tuple[str, ...], Any] = {}


def content_key(folder: str | Path) -> tuple[str, ...]:
    """Each file's name and SHA-256 in ``folder`` (not its subfolders), the weights left out, in name
    order: :func:`nlsim.io.model_cache.known_sha256`, which the model files' check hashes with too."""
    files = sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix not in WEIGHT_SUFFIXES)
    return tuple(f"{path.name}:{known_sha256(path)}" for path in files)


def load_tokenizer(folder: str | Path, *, local_files_only: bool = True) -> Any:
    """``AutoTokenizer.from_pretrained(folder, use_fast=True)``, or the object an earlier call returned for
    a folder whose files held the same bytes. A folder without ``tokenizer.json`` is loaded each time."""
    from transformers import AutoTokenizer  # deferred: ~5 s to import, only loading needs it

    key = content_key(folder) if (Path(folder) / "tokenizer.json").is_file() else None
    if key is not None and key in _loaded:
        return _loaded[key]
    tok = AutoTokenizer.from_pretrained(str(folder), use_fast=True, local_files_only=local_files_only)
    if key is not None:
        if len(_loaded) >= KEPT:
            _loaded.pop(next(iter(_loaded)))
        _loaded[key] = tok
    return tok


def save_tokenizer(tokenizer: Any, folder: str | Path) -> None:
    """``tokenizer.save_pretrained(folder)`` without the truncation and padding its last call set: a loaded
    tokenizer serves several encoders, and each call sets its own; the saved files do not depend on which
    encoder called last."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        backend.no_truncation()
        backend.no_padding()
    tokenizer.save_pretrained(folder)
