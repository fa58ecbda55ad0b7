"""The reranker's cross-encoder as :mod:`nlsim.inference` sees it, and its path for a job of a given size.

:func:`cross_encoder_target` describes a cross-encoder to the one :class:`~nlsim.inference.target.Target`
(its digest, its model with mean pooling and the linear head, the pairs an ONNX export must reproduce);
:func:`cross_encoder_inference` decides, once per cross-encoder and setting, for a job of a given size.

Example:
    >>> from nlsim.rerank.cross_encoder import CrossEncoder
    >>> ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2")
    >>> choice, runner = cross_encoder_inference(ce, 10, backend="torch", precision="fp32")
    >>> choice.path, runner is None, cross_encoder_target(ce).kind
    ('torch-fp32', True, 'cross-encoder')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from nlsim.inference.choice import Choice, settle
from nlsim.inference.paths import cpu_only
from nlsim.inference.target import Features, Target
from nlsim.progress import warn
from nlsim.rerank.cross_encoder import pooled_logits

ONNX_MIN_PAIRS = 1000
"""From this many pairs on, ``backend="auto"`` looks beyond torch fp32 (exports cost seconds, once)."""
PROBE_SHAPES = ((128, 40), (64, 96))
"""(rows, tokens) of the probe's synthetic pair batches: two titles, and two longer texts."""
CHECK_PAIRS = [
    ("a", "b"),
    ("short title", "a somewhat longer headline about markets, rain and football " * 3),
    ("中文新聞標題測試", "台股大漲 科技股領軍"),
    ("x " * 200, "y"),
]
"""Pairs whose logits an ONNX export must reproduce."""


def check_batches(ce: Any) -> list[Features]:
    """The check pairs' features in three batches of different shapes."""
    out = []
    for rows in ([0], [0, 1, 2, 3], [1, 2]):
        a, b = [CHECK_PAIRS[i][0] for i in rows], [CHECK_PAIRS[i][1] for i in rows]
        out.append({k: np.asarray(v, dtype=np.int64) for k, v in ce.features(a, b, "np").items()})
    return out


def cross_encoder_target(ce: Any) -> Target:
    """``ce`` as :mod:`nlsim.inference` sees it (the quality check's identity and the export's key: its
    digest)."""
    head = ce.head

    def forward(model: torch.nn.Module, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        hidden = model(**feats).last_hidden_state
        return pooled_logits(
            head, hidden if hidden.dtype == torch.float32 else hidden.float(), feats["attention_mask"]
        )

    return Target(
        kind="cross-encoder",
        identity=ce.digest,
        weights=ce.digest,
        model=ce.model,
        forward=forward,
        tokenizer=ce.tokenizer,
        max_length=ce.max_length,
        check_batches=lambda: check_batches(ce),
        probe_shapes=PROBE_SHAPES,
        output="logit",
        head=head,
        token_types=ce.uses_token_types(),
        path=getattr(ce, "path", None),
    )


def cross_encoder_inference(
    ce: Any,
    n_pairs: int,
    backend: str = "auto",
    precision: str = "fp32",
    threads: int | None = None,
) -> tuple[Choice, Any]:
    """The inference path of ``ce`` for a job of ``n_pairs`` pairs and its runner (``None``: torch fp32).

    ``backend="auto"`` with ``precision`` ``"fp32"`` or ``"auto"`` stays on torch fp32 below
    :data:`ONNX_MIN_PAIRS` pairs; a model in training mode always does. The path is settled by the loop both
    model kinds share (:func:`nlsim.inference.choice.settle`: a path that cannot be set up is left out and
    the choice made again, with a warning) and kept on the cross-encoder for later jobs with the same
    settings, until its weights change (:meth:`CrossEncoder.weights_version`).
    """
    small = backend == "auto" and precision in ("auto", "fp32") and n_pairs < ONNX_MIN_PAIRS
    model = getattr(ce, "model", None)
    requested = {"backend": backend, "precision": precision}
    if model is None or model.training or small:
        why = "a small job" if small else "a model in training (or no torch model)"
        return Choice("torch-fp32", why, requested=requested), None
    if cpu_only(backend, precision) and next(model.parameters()).device.type != "cpu":
        warn(
            f"cross-encoder: backend={backend!r} precision={precision!r} runs on the CPU only; the "
            f"cross-encoder leaves the GPU ({next(model.parameters()).device}) for the CPU"
        )
        ce.model.to("cpu")
        ce.head.to("cpu")
    memo: dict[Any, Any] = ce.__dict__.setdefault("_inference", {})
    key = (backend, precision, threads, ce.weights_version())
    if key not in memo:
        memo.clear()
        readings = 2 * n_pairs  # a job reads each pair in both orders
        target = cross_encoder_target(ce)
        memo[key] = settle(
            target, "cross-encoder", backend=backend, precision=precision, threads=threads, job_items=readings
        )
    return memo[key]
