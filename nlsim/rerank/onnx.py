"""ONNX Runtime inference for :meth:`nlsim.rerank.cross_encoder.CrossEncoder.predict` (needs ``onnxruntime``).

A reranker scores one pair per forward pass, in both text orders, so dedup's rerank stage runs tens of
thousands of passes on a corpus of 10,000 items. As for the encoders (:mod:`nlsim.encoders.onnx_backend`),
the cross-encoder's model with its pooling and head is exported once to ONNX (cached under
``$NLSIM_HOME/onnx/`` by the weights' digest), checked against torch on a few batches (max abs difference
of the logits < 1e-4, else the export is refused and torch is used), and run with the CPU provider.

Example:
    >>> ce = CrossEncoder.load("finetuned/e5-thucnews/reranker")  # doctest: +SKIP
    >>> runner = cross_encoder_runner(ce)  # doctest: +SKIP
    >>> runner.texts(["台股大漲"], ["台股上漲"]).shape  # doctest: +SKIP
    (1,)
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nlsim.encoders.model_cache import ensure_model_folder, nlsim_home
from nlsim.encoders.onnx_backend import (
    eager_attention,
    evict_old_exports,
    make_session,
    quantized_model,
)
from nlsim.errors import StateError
from nlsim.rerank.cross_encoder import pair_logits

EXPORT_VERSION = 1
MAX_ABS_DIFF = 1e-4
CHECK_PAIRS = [
    ("a", "b"),
    ("short title", "a somewhat longer headline about markets, rain and football " * 3),
    ("中文新聞標題測試", "台股大漲 科技股領軍"),
    ("x " * 200, "y"),
]


class _PairLogits(torch.nn.Module):
    """:func:`nlsim.rerank.cross_encoder.pair_logits` as a module with positional tensor inputs, for the "
    "export."""

    def __init__(self, model: torch.nn.Module, head: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.head = head

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        feats = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            feats["token_type_ids"] = token_type_ids
        return pair_logits(self.model, self.head, feats)


class CrossEncoderRunner:
    """``runner(features) -> logits`` (float32 ``(rows,)``) through the exported model; ``features`` are
    the tokenised pairs as numpy arrays (``input_ids``, ``attention_mask``, ``token_type_ids`` if used)."""

    def __init__(self, path: Path, ce: Any, threads: int | None = None) -> None:
        self.path = path
        self.ce = ce
        self.session = make_session(path, threads)
        self.inputs = [i.name for i in self.session.get_inputs()]

    def __call__(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, {k: np.asarray(feats[k], dtype=np.int64) for k in self.inputs})[0]

    def texts(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        """The logits of ``texts_a[i]`` read with ``texts_b[i]`` (one order)."""
        return self(dict(self.ce.features(texts_a, texts_b, "np")))


def export_cross_encoder(ce: Any, out_dir: Path) -> None:
    """Export ``ce`` to ``out_dir/model.onnx`` and check its logits against torch's."""
    wrapper = _PairLogits(ce.model, ce.head).eval()
    was_training = ce.model.training
    ce.model.eval()
    a, b = zip(*CHECK_PAIRS, strict=True)
    example = ce.features(list(a), list(b), "pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in example]
    axes = {n: {0: "batch", 1: "seq"} for n in names}
    path = out_dir / "model.onnx"
    try:
        with eager_attention(ce.model), warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                wrapper,
                tuple(example[n] for n in names),
                str(path),
                dynamo=False,
                input_names=names,
                output_names=["logit"],
                dynamic_axes={**axes, "logit": {0: "batch"}},
                opset_version=17,
            )
        runner = CrossEncoderRunner(path, ce, threads=1)
        worst = 0.0
        for rows in ([0], [0, 1, 2, 3], [1, 2]):
            ta, tb = [a[i] for i in rows], [b[i] for i in rows]
            with torch.inference_mode():
                ref = ce.logits(ta, tb).numpy()
            worst = max(worst, float(np.abs(runner.texts(ta, tb) - ref).max()))
        if not worst < MAX_ABS_DIFF:
            raise StateError(f"cross-encoder ONNX export differs from torch by {worst:.2e}")
        (out_dir / "check.json").write_text(json.dumps({"max_abs_diff": worst}) + "\n", encoding="utf-8")
    finally:
        ce.model.train(was_training)


def cross_encoder_runner(
    ce: Any, threads: int | None = None, root: Path | None = None, precision: str = "fp32"
) -> CrossEncoderRunner:
    """Export (once, cached by the weights' digest) and open the ONNX model of ``ce``; with
    ``precision="int8"`` its dynamically quantized copy
    (:func:`nlsim.encoders.onnx_backend.quantized_model`)."""
    digest = ce.digest()
    source = json.dumps(
        {"weights": digest, "export": EXPORT_VERSION, "torch": torch.__version__}, sort_keys=True
    )
    cache = root or nlsim_home() / "onnx"
    folder = ensure_model_folder(
        cache / f"ce-{digest[:24]}", lambda tmp: export_cross_encoder(ce, tmp), source=source
    )
    path = quantized_model(folder, cache) if precision == "int8" else folder / "model.onnx"
    runner = CrossEncoderRunner(path, ce, threads)
    evict_old_exports(cache, keep=[folder, path.parent])
    return runner
