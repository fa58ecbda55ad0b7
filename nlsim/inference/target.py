"""A model as its inference paths see it: one target that builds, probes and checks a path for any kind.

A :class:`Target` holds what differs between a bi-encoder and a cross-encoder as data (the quality check's
kind and identity, the fp32 torch model and its :attr:`~Target.forward` from features to outputs, the
tokenizer, the batches that check an ONNX export) and does the rest the same way for both: ``torch-fp32`` is
the model itself, ``torch-bf16``/``torch-fp16``/``torch-int8`` a :class:`TorchRunner` over a lossy copy on
the model's device (:func:`lossy_copy`), ``onnx-fp32``/``onnx-int8`` the ONNX Runtime runner
(:func:`nlsim.inference.onnx.onnx_runner`). Every runner takes the padded features (numpy ``input_ids``,
``attention_mask``, ``token_type_ids`` where the features carry them) and returns the outputs as numpy. The
two kinds' targets are made by :func:`nlsim.encoders.planner.encoder_target` and
:func:`nlsim.rerank.target.cross_encoder_target`.

Example:
    >>> import torch
    >>> m = quantize_int8(torch.nn.Sequential(torch.nn.Linear(4, 4)))
    >>> type(m[0]).__name__
    'Linear'
    >>> synthetic_batch(2, 3, 5000, np.random.default_rng(0), first=101)[:, 0].tolist()
    [101, 101]
    >>> half = lossy_copy(torch.nn.Linear(4, 4), "fp16")
    >>> half.weight.dtype, TorchRunner(half, lambda m, f: m(f["x"].half()), "fp16")({"x": np.ones((1, 4),
    ...     dtype=np.float32)}).dtype
    (torch.float16, dtype('float32'))
"""

from __future__ import annotations

import copy
import hashlib
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nlsim.inference.paths import split_path

Features = dict[str, np.ndarray]
"""Padded token features of one batch, as numpy arrays."""
Forward = Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor]
"""``forward(model, features) -> outputs``: the model's pooled vectors or pair logits, pooled in fp32."""

VOLATILE_CONFIG_KEYS = frozenset(
    {
        "_name_or_path",
        "name_or_path",
        "transformers_version",
        "architectures",
        "torch_dtype",
        "dtype",
        "_attn_implementation",
        "_attn_implementation_autoset",
        "attn_implementation",
        "output_attentions",
        "output_hidden_states",
        "return_dict",
        "use_cache",
        "gradient_checkpointing",
        "_commit_hash",
        "id2label",
        "label2id",
    }
)
"""Config keys that do not change what the model computes (left out of fingerprints and probe keys)."""

GPU_PROBE_ROWS = 4
"""The probe's batches on a GPU have this many times the rows (a GPU job's batch is 256 texts or pair
readings against a CPU's 64: :func:`nlsim.encoders.device.batch_size_for`)."""


def config_digest(config: Any) -> dict[str, Any]:
    """A model config as a sorted dict, less :data:`VOLATILE_CONFIG_KEYS` (what the numbers depend on)."""
    d = config.to_dict()
    return {k: v for k, v in sorted(d.items()) if k not in VOLATILE_CONFIG_KEYS}


def architecture_digest(*parts: Any) -> str:
    """SHA-256 of what speed depends on (config, shapes): the probe's key."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def synthetic_batch(
    rows: int, length: int, vocab: int, rng: np.random.Generator, first: int | None
) -> np.ndarray:
    """Random token ids (``rows`` × ``length``; the first column ``first`` when given): speed does not
    depend on which tokens they are."""
    ids = rng.integers(min(1000, vocab // 2), vocab, size=(rows, length), dtype=np.int64)
    if first is not None:
        ids[:, 0] = first
    return ids


def quantize_int8(model: torch.nn.Module) -> torch.nn.Module:
    """Dynamic int8 quantization of every ``nn.Linear`` (weights int8, activations quantized per batch), on a
    copy. Lossy: a run takes it only where the model's quality check passed it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # deferred: heavy or optional, loaded only when needed
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


HALF = {"bf16": torch.bfloat16, "fp16": torch.float16}
"""The half precisions a model is cast to, by name."""


def lossy_copy(model: torch.nn.Module, precision: str) -> torch.nn.Module:
    """A copy of ``model`` in bf16 or fp16 (every weight cast, on the model's device) or with dynamic int8
    linear layers (CPU); ``model`` is left as it is (training and saving keep fp32)."""
    if precision in HALF:
        return copy.deepcopy(model).eval().to(HALF[precision])
    if precision == "int8":
        return quantize_int8(model).eval()  # quantize_dynamic copies the model
    raise ValueError(precision)


def model_device(model: torch.nn.Module) -> torch.device:
    """Where ``model``'s weights are (the CPU for a model without parameters)."""
    first = next(model.parameters(), None)
    return first.device if first is not None else torch.device("cpu")


def to_tensors(feats: Features, device: torch.device) -> dict[str, torch.Tensor]:
    """Numpy features as tensors on ``device`` (copied to a GPU without blocking)."""
    out = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in feats.items()}
    if device.type != "cpu":
        out = {k: v.to(device, non_blocking=True) for k, v in out.items()}
    return out


class WeightsWatch:
    """Notices a model's weights changing in place, the one way both model kinds do: torch's per-tensor
    version counters, plus the changes it is told of (:meth:`mark`) that those miss (a fused optimizer step
    leaves them alone). A runner, a chosen path or a digest made for the weights of one :meth:`version` is
    stale at any other.

    Example:
        >>> lin = torch.nn.Linear(2, 2)
        >>> watch = WeightsWatch(lin)
        >>> v = watch.version()
        >>> with torch.no_grad():
        ...     _ = lin.weight.add_(1.0)
        >>> watch.version() != v, watch.mark() or watch.version() == v + 2
        (True, True)
    """

    def __init__(self, *modules: torch.nn.Module) -> None:
        self.modules = modules
        self.changes = 0

    def mark(self) -> None:
        """Record a change the version counters miss."""
        self.changes += 1

    def version(self) -> int:
        return self.changes + sum(int(p._version) for m in self.modules for p in m.parameters())


class TorchRunner:
    """``runner(features) -> outputs`` (numpy, float32) of ``forward`` over a torch model (a lossy copy, or
    fp32), on the model's device: the features go there and the outputs come back."""

    def __init__(self, model: torch.nn.Module, forward: Forward, precision: str) -> None:
        self.model = model
        self.forward = forward
        self.precision = precision
        self.device = model_device(model)
        # torch on the CPU: an inference job may run its batches in lanes (nlsim.encoders.lanes)
        self.torch_cpu = torch.device(self.device).type == "cpu"

    def __call__(self, feats: Features) -> np.ndarray:
        with torch.inference_mode():
            return self.forward(self.model, to_tensors(feats, self.device)).float().cpu().numpy()


@dataclass
class Target:
    """A model of any kind as :func:`nlsim.inference.choice.select` and the quality check see it.

    ``kind``: ``"encoder"`` or ``"cross-encoder"`` (the quality check's kind, the probe's and the export's
    keys);
    ``identity()``: what the quality check record is keyed by (the weights and all that changes the numbers);
    ``weights()``: the digest of the current weights (the ONNX export's key); ``forward``: features ->
    outputs, for the fp32 model and its lossy copies alike;
    ``head``: a module ``forward`` uses besides ``model`` (kept fp32; part of the ONNX graph);
    ``token_types``: whether the features carry ``token_type_ids``; ``output``: the ONNX output's name;
    ``check_batches``: a few padded batches of different shapes that an ONNX export must reproduce;
    ``probe_shapes``: (rows, tokens) of the probe's synthetic batches; ``path``: the model's folder (its
    ``quality_check.json`` holds the quality check)."""

    kind: str
    identity: Callable[[], str]
    weights: Callable[[], str]
    model: torch.nn.Module
    forward: Forward
    tokenizer: Any
    max_length: int
    check_batches: Callable[[], list[Features]]
    probe_shapes: tuple[tuple[int, int], ...]
    output: str
    head: torch.nn.Module | None = None
    token_types: bool = False
    path: Path | str | None = None

    @property
    def device(self) -> torch.device:
        return model_device(self.model)

    @property
    def on_cpu(self) -> bool:
        return self.device.type == "cpu"

    def architecture(self) -> str:
        """What the probe is keyed by (speed depends on the architecture, not on the weights' values)."""
        return architecture_digest(self.kind, config_digest(self.model.config), self.probe_shapes)

    def folder(self) -> Path | None:
        """The model folder whose ``quality_check.json`` holds the quality check (``None``: only
        ``$NLSIM_HOME``)."""
        path = self.path
        return Path(path) if path is not None and Path(path).is_dir() else None

    def export_name(self) -> str:
        """The folder of this model's ONNX export under ``$NLSIM_HOME/onnx/``."""
        prefix = "ce-" if self.kind == "cross-encoder" else ""
        return f"{prefix}{self.weights()[:24]}"

    def build(self, path: str, threads: int | None) -> Any:
        """The runner of ``path`` (``None`` for plain torch fp32)."""
        backend, precision = split_path(path)
        if path == "torch-fp32":
            return None
        if backend == "onnx":
            from nlsim.inference import onnx  # deferred: onnxruntime is optional

            return onnx.onnx_runner(self, threads=threads, precision=precision)
        return TorchRunner(lossy_copy(self.model, precision), self.forward, precision)

    def probe_batches(self) -> tuple[list[Features], list[list[int]]]:
        """Synthetic batches for the probe, and their shapes (for the record): on a GPU
        :data:`GPU_PROBE_ROWS` times the rows, as its jobs run in larger batches."""
        tok = self.tokenizer
        vocab = int(getattr(self.model.config, "vocab_size", 0) or len(tok))
        first = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
        rng = np.random.default_rng(0)
        scale = GPU_PROBE_ROWS if self.device.type == "cuda" else 1
        batches, shapes = [], []
        for rows, length in self.probe_shapes:
            rows, length = rows * scale, min(length, self.max_length)
            ids = synthetic_batch(rows, length, vocab, rng, first)
            feats = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if self.token_types:
                feats["token_type_ids"] = np.zeros_like(ids)
            batches.append(feats)
            shapes.append([rows, length])
        return batches, shapes

    def run(self, runner: Any, batch: Features) -> Any:
        """One batch through ``runner`` (``None``: the fp32 torch model), outputs as numpy in host memory
        as the lossy runners give them: the probe then times a GPU's work to its end on every path."""
        if runner is not None:
            return runner(batch)
        with torch.inference_mode():
            return self.forward(self.model, to_tensors(batch, self.device)).float().cpu().numpy()
