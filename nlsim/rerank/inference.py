"""The inference paths of the reranker's cross-encoder, chosen as the bi-encoder's are.

The same machinery as :mod:`nlsim.encoders.precision` (candidates by CPU features, the stored quality
check, a cached probe, a deterministic pick): :class:`CrossEncoderTarget` builds each path's runner
(``onnx-fp32``/``onnx-int8``: :func:`nlsim.rerank.onnx.cross_encoder_runner`; ``torch-bf16``/``torch-int8``:
:class:`TorchPairRunner` over a lossy copy; ``torch-fp32``: the model itself) and
:func:`cross_encoder_inference` decides, once per cross-encoder and setting, for a job of a given size.

Example:
    >>> from nlsim.rerank.cross_encoder import CrossEncoder
    >>> ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2")
    >>> choice, runner = cross_encoder_inference(ce, 10, backend="torch", precision="fp32")
    >>> choice.path, runner is None
    ('torch-fp32', True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from nlsim.encoders.encoder import _config_digest, mean_pool
from nlsim.encoders.inference import announce, lossy_copy, probe_mode
from nlsim.encoders.precision import (
    Choice,
    Target,
    architecture_digest,
    select,
    split_path,
    synthetic_batch,
)
from nlsim.progress import warn
from nlsim.rerank.cross_encoder import pair_logits

ONNX_MIN_PAIRS = 1000
"""From this many pairs on, ``backend="auto"`` looks beyond torch fp32 (exports cost seconds, once)."""
PROBE_SHAPES = ((128, 40), (64, 96))
"""(rows, tokens) of the probe's synthetic pair batches: two titles, and two longer texts."""


class TorchPairRunner:
    """``runner(features) -> logits`` from a lossy torch copy of the cross-encoder's model (pooling and the
    linear head in fp32)."""

    def __init__(self, model: torch.nn.Module, head: torch.nn.Module, precision: str) -> None:
        self.model = model
        self.head = head
        self.precision = precision

    def __call__(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in feats.items()}
        with torch.inference_mode():
            hidden = self.model(**tensors).last_hidden_state.float()
            return self.head(mean_pool(hidden, tensors["attention_mask"])).squeeze(-1).numpy()


class CrossEncoderTarget(Target):
    """A cross-encoder as :func:`nlsim.encoders.precision.select` sees it."""

    kind = "cross-encoder"

    def __init__(self, ce: Any) -> None:
        self.ce = ce
        self.on_cpu = next(ce.model.parameters()).device.type == "cpu"

    def identity(self) -> str:
        return self.ce.digest()

    def architecture(self) -> str:
        return architecture_digest("cross-encoder", _config_digest(self.ce.model.config), PROBE_SHAPES)

    def folder(self) -> Path | None:
        path = getattr(self.ce, "path", None)
        return Path(path) if path is not None and Path(path).is_dir() else None

    def build(self, path: str, threads: int | None) -> Any:
        backend, precision = split_path(path)
        if path == "torch-fp32":
            return None
        if backend == "onnx":
            from nlsim.rerank.onnx import cross_encoder_runner

            return cross_encoder_runner(self.ce, threads=threads, precision=precision)
        return TorchPairRunner(lossy_copy(self.ce.model, precision), self.ce.head, precision)

    def probe_batches(self) -> tuple[list[Any], Any]:
        tok = self.ce.tokenizer
        vocab = int(getattr(self.ce.model.config, "vocab_size", 0) or len(tok))
        first = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
        rng = np.random.default_rng(0)
        batches, shapes = [], []
        for rows, length in PROBE_SHAPES:
            length = min(length, self.ce.max_length)
            ids = synthetic_batch(rows, length, vocab, rng, first)
            feats = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if self.ce.uses_token_types():
                feats["token_type_ids"] = np.zeros_like(ids)
            batches.append(feats)
            shapes.append([rows, length])
        return batches, shapes

    def run(self, runner: Any, batch: Any) -> Any:
        if runner is not None:
            return runner(batch)
        with torch.inference_mode():
            tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
            return pair_logits(self.ce.model, self.ce.head, tensors)


def cross_encoder_inference(
    ce: Any,
    n_pairs: int,
    backend: str = "auto",
    precision: str = "fp32",
    threads: int | None = None,
) -> tuple[Choice, Any]:
    """The inference path of ``ce`` for a job of ``n_pairs`` pairs and its runner (``None``: torch fp32).

    ``backend="auto"`` with ``precision`` ``"fp32"`` or ``"auto"`` stays on torch fp32 below
    :data:`ONNX_MIN_PAIRS` pairs; a model in training mode or off the CPU always does. The decision is kept
    on the cross-encoder for later jobs with the same settings (until its weights change); a path that
    cannot be set up is left out and the choice made again (with a warning).
    """
    small = backend == "auto" and precision in ("auto", "fp32") and n_pairs < ONNX_MIN_PAIRS
    model = getattr(ce, "model", None)
    requested = {"backend": backend, "precision": precision}
    if model is None or model.training or small:
        why = "a small job" if small else "a model in training (or no torch model)"
        return Choice("torch-fp32", why, requested=requested), None
    target = CrossEncoderTarget(ce)
    if not target.on_cpu:
        return Choice("torch-fp32", "the model is not on the CPU", requested=requested), None
    digest = ce.digest()
    memo: dict[Any, Any] = ce.__dict__.setdefault("_inference", {})
    key = (backend, precision, threads, digest)
    if key in memo:
        return memo[key]
    mode = probe_mode()
    excluded: dict[str, str] = {}
    while True:
        sel = select(
            target,
            backend=backend,
            precision=precision,
            threads=threads,
            probe_missing=mode == "on",
            use_probe=mode != "off",
            exclude=excluded,
        )
        choice = sel.choice
        try:
            runner = sel.runners.get(choice.path) or target.build(choice.path, threads)
            break
        except Exception as exc:  # noqa: BLE001 - another path always works; say why this one did not
            if choice.forced or choice.path == "torch-fp32":
                raise
            warn(
                f"cross-encoder: {choice.path} could not be set up ({type(exc).__name__}: {exc}); "
                "choosing again"
            )
            excluded[choice.path] = f"could not be set up ({type(exc).__name__}: {exc})"
    announce("cross-encoder", choice)
    memo.clear()
    memo[key] = (choice, runner)
    return choice, runner
