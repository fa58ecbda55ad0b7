"""A model folder's fast tokenizer, loaded once per content of its files.

A cold chain loads the e5 folder four times (the baseline, the first report, fine-tuning, the reranker's
cross-encoder), then the fine-tuned model's folder and its reranker's for the report, and
``AutoTokenizer.from_pretrained`` takes two to four seconds for e5's 250,000 pieces. The tokenizer of a
folder whose tokenizer files (those a tokenizer reads: :func:`content_key`) hold the same bytes as at an
earlier load is that load's object: callers set truncation and padding with each call and change nothing
else, and a saved tokenizer leaves the last call's settings and the flags it was loaded with out
(:func:`save_tokenizer`), so a fine-tuned model's folder keys as its base model's does.

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
READ_BY_TOKENIZERS = frozenset({"config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt"})
"""Files a tokenizer reads besides those named for tokens or vocabularies (:func:`_read_by_tokenizers`)."""
LOAD_FLAGS = ("is_local", "local_files_only")
"""How a tokenizer was loaded, which transformers writes into a saved ``tokenizer_config.json``."""
KEPT = 4
"""Tokenizers held at most (a process loads a handful of models)."""
_loaded: dict[tuple[str, ...], Any] = {}


def _read_by_tokenizers(path: Path) -> bool:
    """Whether a tokenizer may read ``path``: the model's ``config.json``, the special and added tokens,
    and every file named for tokens, vocabularies, merges, BPE codes, a chat template or a sentencepiece
    model (not the weights, and not what a model folder says about its training: its card, calibrations,
    checks)."""
    name = path.name.lower()
    if path.suffix in WEIGHT_SUFFIXES:
        return False
    named = ("token", "vocab", "template", "bpe", "merges")
    return name in READ_BY_TOKENIZERS or any(n in name for n in named) or name.endswith((".model", ".spm"))


def content_key(folder: str | Path) -> tuple[str, ...]:
    """The name and SHA-256 of each file in ``folder`` (not its subfolders) a tokenizer may read
    (:func:`_read_by_tokenizers`), in name order: :func:`nlsim.io.model_cache.known_sha256`, which the
    model files' check hashes with too."""
    files = sorted(p for p in Path(folder).iterdir() if p.is_file() and _read_by_tokenizers(p))
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
    """``tokenizer.save_pretrained(folder)`` without the truncation and padding its last call set, nor the
    flags it was loaded with (:data:`LOAD_FLAGS`): a loaded tokenizer serves several encoders, and each call
    sets its own; the saved files do not depend on which encoder called last, nor on where the tokenizer
    was loaded from."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        backend.no_truncation()
        backend.no_padding()
    kwargs = getattr(tokenizer, "init_kwargs", None)
    if isinstance(kwargs, dict):
        for flag in LOAD_FLAGS:
            kwargs.pop(flag, None)
    tokenizer.save_pretrained(folder)
