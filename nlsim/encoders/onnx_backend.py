"""ONNX Runtime inference for :meth:`Encoder.encode` (optional; needs the ``onnxruntime`` package).

The encoder's torch model, with mean pooling, is exported once to ONNX (TorchScript exporter, dynamic
batch and sequence axes) into ``$NLSIM_HOME/onnx/<weights digest>/model.onnx`` with a manifest (the
:data:`KEEP_EXPORTS` most recently used are kept), checked
against torch on a few batches (max abs difference < 1e-4, else the export is refused), and run with
``onnxruntime``'s CPU provider. Same numbers as torch to ~1e-6; on CPU it runs several times faster.
Training (:meth:`Encoder.forward_texts`) always uses torch.

Example:
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="onnx")  # doctest: +SKIP
    >>> enc.options["backend"]  # doctest: +SKIP
    'onnx'
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nlsim.encoders.model_cache import ensure_model_folder, nlsim_home
from nlsim.errors import ConfigError, StateError
from nlsim.io.atomic import remove_tree
from nlsim.io.manifest import read_manifest

EXPORT_VERSION = 1
QUANTIZE_VERSION = 1
MAX_ABS_DIFF = 1e-4
KEEP_EXPORTS = 8  # most recently used exports kept under $NLSIM_HOME/onnx (e5: ~470 MB fp32, ~410 MB int8)
log = logging.getLogger(__name__)


def onnxruntime_available() -> bool:
    """True when ``onnxruntime`` can be imported."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class _Pooled(torch.nn.Module):
    """The encoder's model followed by mean pooling: (input_ids, attention_mask) -> (batch, dim)."""

    def __init__(self, model: torch.nn.Module, uses_types: bool) -> None:
        super().__init__()
        self.model = model
        self.uses_types = uses_types

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        kwargs: dict[str, torch.Tensor] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.uses_types:
            kwargs["token_type_ids"] = torch.zeros_like(input_ids)
        hidden = self.model(**kwargs).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


@contextlib.contextmanager
def eager_attention(model: torch.nn.Module) -> Any:
    before = getattr(model.config, "_attn_implementation", None)
    setter = getattr(model, "set_attn_implementation", None)
    if setter is not None and before not in (None, "eager"):
        setter("eager")
    try:
        yield
    finally:
        if setter is not None and before not in (None, "eager"):
            setter(before)


def _check_batches(encoder: Any) -> list[dict[str, np.ndarray]]:
    """A few padded batches of different shapes (1 row, long rows, mixed lengths) for the export check."""
    texts = [
        "a",
        "short title",
        "a somewhat longer headline about markets, rain and football " * 3,
        "中文新聞標題測試",
        "x " * 200,
    ]
    out = []
    for group in (texts[:1], texts, texts[1:4]):
        f = encoder.tokenizer(
            [encoder.prefix + t for t in group],
            padding=True,
            truncation=True,
            max_length=encoder.max_length,
            return_tensors="np",
        )
        out.append(
            {
                "input_ids": f["input_ids"].astype(np.int64),
                "attention_mask": f["attention_mask"].astype(np.int64),
            }
        )
    return out


def export_onnx(encoder: Any, out_dir: Path) -> None:
    """Export ``encoder``'s model + mean pooling to ``out_dir/model.onnx`` and check it against torch."""
    uses_types = "token_type_ids" in getattr(encoder.tokenizer, "model_input_names", [])
    model = encoder.model
    was_training = model.training
    model.eval()
    wrapper = _Pooled(model, uses_types).eval()
    example = _check_batches(encoder)[1]
    path = out_dir / "model.onnx"
    try:
        with eager_attention(model), warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                wrapper,
                (torch.from_numpy(example["input_ids"]), torch.from_numpy(example["attention_mask"])),
                str(path),
                dynamo=False,
                input_names=["input_ids", "attention_mask"],
                output_names=["embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "seq"},
                    "attention_mask": {0: "batch", 1: "seq"},
                    "embedding": {0: "batch"},
                },
                opset_version=17,
            )
        session = make_session(path, threads=1)
        worst = 0.0
        for batch in _check_batches(encoder):
            with torch.inference_mode():
                ref = wrapper(torch.from_numpy(batch["input_ids"]), torch.from_numpy(batch["attention_mask"]))
            got = session.run(None, batch)[0]
            worst = max(worst, float(np.abs(got - ref.numpy()).max()))
        if not worst < MAX_ABS_DIFF:
            raise StateError(f"ONNX export differs from torch by {worst:.2e} (limit {MAX_ABS_DIFF})")
        (out_dir / "check.json").write_text(json.dumps({"max_abs_diff": worst}) + "\n", encoding="utf-8")
    finally:
        if was_training:
            model.train()


def make_session(path: str | Path, threads: int | None = None) -> Any:
    """An ``onnxruntime`` CPU session with ``threads`` intra-op threads (default: torch's thread count)."""
    import onnxruntime as ort  # deferred: heavy or optional, loaded only when needed

    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads or torch.get_num_threads())
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-waiting on shared CPUs
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


class OnnxRunner:
    """Runs the exported model: ``runner(input_ids, attention_mask) -> (batch, dim)`` mean-pooled vectors."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        self.path = path
        self.session = make_session(path, threads)

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})[0]


def onnx_runner(
    encoder: Any, *, threads: int | None = None, root: Path | None = None, precision: str = "fp32"
) -> OnnxRunner:
    """Export (once, cached by the weights' digest) and open the ONNX model of ``encoder``; with
    ``precision="int8"`` its dynamically quantized copy (:func:`quantized_model`)."""
    if not onnxruntime_available():
        raise ConfigError("backend='onnx' needs the onnxruntime package (pip install onnxruntime)")
    digest = encoder.weights_digest()
    source = json.dumps(
        {"weights": digest, "export": EXPORT_VERSION, "torch": torch.__version__}, sort_keys=True
    )
    cache = root or nlsim_home() / "onnx"
    folder = cache / digest[:24]

    def build(tmp: Path) -> None:
        export_onnx(encoder, tmp)

    folder = ensure_model_folder(folder, build, source=source)
    path = folder / "model.onnx"
    if precision == "int8":
        path = quantized_model(folder, cache)
    elif precision != "fp32":
        raise ConfigError(f"ONNX Runtime runs fp32 or int8, not {precision!r}")
    runner = OnnxRunner(path, threads)
    evict_old_exports(cache, keep=[folder, path.parent])
    return runner


def reduce_range_needed() -> bool:
    """ONNX Runtime's u8×s8 int8 kernels can saturate on x86 CPUs without VNNI; there the weights are
    quantized to 7 bits (``reduce_range``), as its documentation advises."""
    from nlsim.encoders.cpu import cpu_info

    info = cpu_info()
    return info.int8_isa is None and any(f.startswith("avx") for f in info.flags)


def quantized_model(fp32_folder: Path, cache: Path) -> Path:
    """The int8 copy of an exported fp32 model (built once, cached beside it as ``<folder>-int8``).

    Dynamic quantization (:func:`onnxruntime.quantization.quantize_dynamic`): the weights of every
    ``MatMul`` with a constant weight (the linear layers) become int8, one scale per output channel;
    activations are quantized per batch at run time. What must stay fp32 does: the embedding tables, the
    attention products (two activations: ``MatMulConstBOnly``), LayerNorm, softmax, GELU, pooling.
    """
    reduce_range = reduce_range_needed()
    fp32 = fp32_folder / "model.onnx"
    manifest = read_manifest(fp32_folder) or {}
    sha = manifest.get("files", {}).get("model.onnx", {}).get("sha256", "")
    import onnxruntime  # deferred: heavy or optional, loaded only when needed

    settings = {
        "from": sha,
        "quantize": QUANTIZE_VERSION,
        "weight_type": "QInt8",
        "per_channel": True,
        "op_types": ["MatMul"],
        "MatMulConstBOnly": True,
        "reduce_range": reduce_range,
        "onnxruntime": onnxruntime.__version__,
    }
    folder = cache / f"{fp32_folder.name}-int8{'-rr' if reduce_range else ''}"

    def build(tmp: Path) -> None:
        # deferred: heavy or optional, loaded only when needed
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quiet = logging.getLogger()  # the quantizer logs advice on the root logger
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantize_dynamic(
                    str(fp32),
                    str(tmp / "model.onnx"),
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    reduce_range=reduce_range,
                    op_types_to_quantize=["MatMul"],
                    extra_options={"MatMulConstBOnly": True},
                )
        finally:
            quiet.setLevel(level)
        (tmp / "quantization.json").write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")

    ensure_model_folder(folder, build, source=json.dumps(settings, sort_keys=True))
    return folder / "model.onnx"


def evict_old_exports(cache: Path, keep: Path | list[Path]) -> None:
    """Mark ``keep`` (one folder or several) as just used and delete all but the :data:`KEEP_EXPORTS` most
    recently used exports (only folders that hold an export manifest, i.e. that nlsim made)."""
    kept = [keep] if isinstance(keep, Path) else list(keep)
    for folder in kept:
        with contextlib.suppress(OSError):
            os.utime(folder)
    folders = [p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".") and read_manifest(p)]
    folders.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in folders[KEEP_EXPORTS:]:
        if old not in kept:
            remove_tree(old)
