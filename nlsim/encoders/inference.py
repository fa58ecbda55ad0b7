"""A bi-encoder's inference paths: how each is built, probed and chosen (:mod:`nlsim.encoders.precision`).

:class:`EncoderTarget` tells :func:`nlsim.encoders.precision.select` how to build an encoder's runner for
each path (``onnx-fp32``/``onnx-int8``: :func:`nlsim.encoders.onnx_backend.onnx_runner`; ``torch-bf16``/
``torch-int8``: :class:`TorchRunner` over a lossy copy of the model; ``torch-fp32``: the model itself) and
how to time it. :class:`Planner` is what :func:`nlsim.encoders.load_encoder` attaches to an encoder: the
requested backend and precision, decided at the first big ``encode`` (or at load time when forced).

Example:
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch", precision="fp32")
    >>> enc.choice.path
    'torch-fp32'
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nlsim.encoders.encoder import _config_digest, mean_pool
from nlsim.encoders.precision import (
    PATHS,
    Choice,
    Selection,
    Target,
    architecture_digest,
    probe_mode,  # noqa: F401 - re-exported
    select,
    split_path,
    synthetic_batch,
)
from nlsim.progress import say, warn

PROBE_SHAPES = ((64, 24), (32, 96))
"""(rows, tokens) of the probe's synthetic batches: titles, and title + lead."""


def lossy_copy(model: torch.nn.Module, precision: str) -> torch.nn.Module:
    """A copy of ``model`` in bf16 (every weight cast) or with dynamic int8 linear layers; ``model`` is
    left as it is (training and saving keep fp32)."""
    if precision == "bf16":
        return copy.deepcopy(model).eval().to(torch.bfloat16)
    if precision == "int8":
        from nlsim.encoders.quantize import quantize_int8

        return quantize_int8(model).eval()  # quantize_dynamic copies the model
    raise ValueError(precision)


class TorchRunner:
    """``runner(input_ids, attention_mask) -> (batch, dim)`` mean-pooled fp32 vectors from a lossy torch
    copy of the model (pooling in fp32 whatever the model's dtype)."""

    def __init__(self, model: torch.nn.Module, uses_types: bool, precision: str) -> None:
        self.model = model
        self.uses_types = uses_types
        self.precision = precision

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        ids = torch.from_numpy(np.ascontiguousarray(input_ids))
        mask = torch.from_numpy(np.ascontiguousarray(attention_mask))
        feats = {"input_ids": ids, "attention_mask": mask}
        if self.uses_types:
            feats["token_type_ids"] = torch.zeros_like(ids)
        with torch.inference_mode():
            out = self.model(**feats)
            hidden = (out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]).float()
            return mean_pool(hidden, mask).numpy()


def uses_token_types(tokenizer: Any) -> bool:
    return "token_type_ids" in getattr(tokenizer, "model_input_names", [])


class EncoderTarget(Target):
    """A bi-encoder as :func:`nlsim.encoders.precision.select` sees it."""

    kind = "encoder"

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.on_cpu = encoder.device.type == "cpu"

    def identity(self) -> str:
        return self.encoder.fingerprint

    def architecture(self) -> str:
        return architecture_digest("encoder", _config_digest(self.encoder.model.config), PROBE_SHAPES)

    def folder(self) -> Path | None:
        path = self.encoder.path
        return Path(path) if path is not None and Path(path).is_dir() else None

    def build(self, path: str, threads: int | None) -> Any:
        backend, precision = split_path(path)
        if path == "torch-fp32":
            return None
        if backend == "onnx":
            from nlsim.encoders.onnx_backend import onnx_runner

            return onnx_runner(self.encoder, threads=threads, precision=precision)
        model = lossy_copy(self.encoder.model, precision)
        return TorchRunner(model, uses_token_types(self.encoder.tokenizer), precision)

    def probe_batches(self) -> tuple[list[Any], Any]:
        tok = self.encoder.tokenizer
        vocab = int(getattr(self.encoder.model.config, "vocab_size", 0) or len(tok))
        first = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
        rng = np.random.default_rng(0)
        batches, shapes = [], []
        for rows, length in PROBE_SHAPES:
            length = min(length, self.encoder.max_length)
            ids = synthetic_batch(rows, length, vocab, rng, first)
            batches.append((ids, np.ones_like(ids)))
            shapes.append([rows, length])
        return batches, shapes

    def run(self, runner: Any, batch: Any) -> Any:
        ids, mask = batch
        if runner is not None:
            return runner(ids, mask)
        feats = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}
        if uses_token_types(self.encoder.tokenizer):
            feats["token_type_ids"] = torch.zeros_like(feats["input_ids"])
        with torch.inference_mode():
            return self.encoder.embed(feats)


class Planner:
    """The requested ``backend`` and ``precision`` of an encoder, and the calls that decide and build its
    path. ``eager``: decide and build at load time (a forced backend or precision), else at the first
    ``encode`` of at least ``Encoder.AUTO_ONNX_MIN_TEXTS`` texts."""

    def __init__(self, backend: str = "auto", precision: str = "fp32", threads: int | None = None) -> None:
        self.backend = backend
        self.precision = precision
        self.threads = threads

    @property
    def eager(self) -> bool:
        return self.backend != "auto" or self.precision not in ("auto", "fp32")

    def decide(self, encoder: Any, exclude: dict[str, str] | None = None) -> Selection:
        """Choose the path (see :func:`nlsim.encoders.precision.select`)."""
        target = EncoderTarget(encoder)
        if not target.on_cpu and self.backend == "auto" and self.precision in ("auto", "fp32"):
            return Selection(Choice("torch-fp32", "the model is on " + str(encoder.device), cpu="-"))
        mode = probe_mode()
        sel = select(
            target,
            backend=self.backend,
            precision=self.precision,
            threads=self.threads,
            probe_missing=mode == "on",
            use_probe=mode != "off",
            exclude=exclude,
        )
        return sel

    def build(self, encoder: Any, path: str) -> Any:
        return EncoderTarget(encoder).build(path, self.threads)

    @staticmethod
    def announce(what: str, choice: Choice) -> None:
        announce(what, choice)


def announce(what: str, choice: Choice) -> None:
    """Say which path a model runs on (the log line every run prints)."""
    line = f"{what}: {choice.describe()}"
    asked = choice.requested.get("precision") not in (None, "auto")
    if asked and choice.lossy and not choice.guard.startswith("passed"):
        warn(f"{line} -- asked for; the quality check has not passed it")
    else:
        say(line)


__all__ = ["PATHS", "EncoderTarget", "Planner", "TorchRunner", "announce", "lossy_copy", "probe_mode"]
