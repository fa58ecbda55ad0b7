"""A bi-encoder's inference paths: its :class:`~nlsim.inference.target.Target`, and when the path is decided.

:func:`encoder_target` describes an encoder to :mod:`nlsim.inference` (its fingerprint, its torch model
with mean pooling, the texts an ONNX export must reproduce). :class:`Planner` is what
:func:`nlsim.encoders.load_encoder` attaches to an encoder: the requested backend and precision, settled
(:func:`nlsim.inference.choice.settle`, the loop both model kinds share) at the first big ``encode`` (or
at load time when forced).

Example:
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch", precision="fp32")
    >>> enc.choice.path, encoder_target(enc).kind
    ('torch-fp32', 'encoder')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from nlsim.encoders.encoder import mean_pool
from nlsim.inference.choice import Choice, settle
from nlsim.inference.target import Features, Target

PROBE_SHAPES = ((64, 24), (32, 96))
"""(rows, tokens) of the probe's synthetic batches: titles, and title + lead."""
CHECK_TEXTS = [
    "a",
    "short title",
    "a somewhat longer headline about markets, rain and football " * 3,
    "中文新聞標題測試",
    "x " * 200,
]
"""Texts of different lengths and scripts whose vectors an ONNX export must reproduce."""


def uses_token_types(tokenizer: Any) -> bool:
    return "token_type_ids" in getattr(tokenizer, "model_input_names", [])


def pooled_forward(uses_types: bool) -> Any:
    """``forward(model, features) -> (batch, dim)`` mean-pooled vectors, pooled in fp32 whatever the
    model's dtype; zero ``token_type_ids`` are added where the model uses them."""

    def forward(model: torch.nn.Module, feats: dict[str, torch.Tensor]) -> torch.Tensor:
        if uses_types and "token_type_ids" not in feats:
            feats = {**feats, "token_type_ids": torch.zeros_like(feats["input_ids"])}
        out = model(**feats)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        if hidden.dtype != torch.float32:
            hidden = hidden.float()
        return mean_pool(hidden, feats["attention_mask"])

    return forward


def check_batches(encoder: Any) -> list[Features]:
    """A few padded batches of different shapes (1 row, long rows, mixed lengths) for the export check."""
    out = []
    for group in (CHECK_TEXTS[:1], CHECK_TEXTS, CHECK_TEXTS[1:4]):
        f = encoder.tokenizer(
            [encoder.prefix + t for t in group],
            padding=True,
            truncation=True,
            max_length=encoder.max_length,
            return_tensors="np",
        )
        out.append({k: f[k].astype(np.int64) for k in ("input_ids", "attention_mask")})
    return out


def encoder_target(encoder: Any) -> Target:
    """``encoder`` as :mod:`nlsim.inference` sees it (the quality check's identity: its fingerprint; the
    export's key: its weights' digest)."""
    return Target(
        kind="encoder",
        identity=lambda: encoder.fingerprint,
        weights=encoder.weights_digest,
        model=encoder.model,
        forward=pooled_forward(uses_token_types(encoder.tokenizer)),
        tokenizer=encoder.tokenizer,
        max_length=encoder.max_length,
        check_batches=lambda: check_batches(encoder),
        probe_shapes=PROBE_SHAPES,
        output="embedding",
        path=encoder.path,
    )


class Planner:
    """The requested ``backend`` and ``precision`` of an encoder, and the call that settles its path.
    ``eager``: decide and build at load time (a forced backend or precision), else at the first ``encode``
    of at least ``Encoder.AUTO_ONNX_MIN_TEXTS`` texts."""

    def __init__(self, backend: str = "auto", precision: str = "fp32", threads: int | None = None) -> None:
        self.backend = backend
        self.precision = precision
        self.threads = threads

    @property
    def eager(self) -> bool:
        return self.backend != "auto" or self.precision not in ("auto", "fp32")

    def settle(self, encoder: Any, n_texts: int = 0) -> tuple[Choice, Any]:
        """Choose the path for a job of ``n_texts`` texts and build its runner: the loop both model kinds
        share (:func:`nlsim.inference.choice.settle`)."""
        return settle(
            encoder_target(encoder),
            f"embedding with {encoder.name}",
            backend=self.backend,
            precision=self.precision,
            threads=self.threads,
            job_items=n_texts,
        )
