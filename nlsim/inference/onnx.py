"""ONNX Runtime inference paths (``onnx-fp32``, ``onnx-int8``) of any model kind (needs ``onnxruntime``).

A :class:`~nlsim.inference.target.Target`'s fp32 model with its pooling (and head) is exported once to ONNX
(TorchScript exporter, dynamic batch and sequence axes) into ``$NLSIM_HOME/onnx/<weights digest>/model.onnx``
(a cross-encoder's under ``ce-<digest>``) with a manifest (the :data:`KEEP_EXPORTS` most recently used are
kept), checked against torch on the target's check batches (max abs difference < 1e-4, else the export is
refused), and run with ``onnxruntime``'s CPU provider. The word-embedding table stays out of the graph
(:func:`table_outside`): the runner looks the rows up in the model's own table and gives them to the graph
as :data:`TABLE_INPUT`, so that the export and its int8 copy hold only the layers (e5-small: 83 MB
instead of 470, made in under a third of the time). Same numbers as torch to ~1e-6; on CPU it runs
several times faster. Training always uses torch. ``onnx-int8`` is the export's dynamically quantized copy
(:func:`quantized_model`).

Example:
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="onnx", threads=1)
    >>> enc.options["backend"], enc.encode(["hello"], progress=False).shape
    ('onnx', (1, 384))
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import json
import logging
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from nlsim.errors import ConfigError, StateError
from nlsim.io.atomic import atomic_write_text, remove_tree
from nlsim.io.manifest import file_problem, read_manifest
from nlsim.io.model_cache import ensure_model_folder, known_sha256, nlsim_home
from nlsim.io.records import read_json_object

EXPORT_VERSION = 2
QUANTIZE_VERSION = 1
MAX_ABS_DIFF = 1e-4
KEEP_EXPORTS = 8  # most recently used exports kept under $NLSIM_HOME/onnx (e5: 83 MB fp32, 22 MB int8)
TABLE_INPUT = "word_embeds"
"""The graph input that takes the word-embedding rows of the ids (:func:`table_outside`)."""
log = logging.getLogger(__name__)

Features = dict[str, np.ndarray]


class Exportable(Protocol):
    """What an export needs of a model (:class:`nlsim.inference.target.Target` has it)."""

    model: torch.nn.Module
    head: torch.nn.Module | None
    forward: Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor]
    output: str
    check_batches: Callable[[], list[Features]]
    weights: Callable[[], str]

    def export_name(self) -> str: ...


def onnxruntime_available() -> bool:
    """True when ``onnxruntime`` can be imported."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class _GivenRows(torch.nn.Module):
    """In the export, the model's word-embedding table: it returns the rows it was given for the ids (looked
    up outside the graph), so that the table is not in the graph."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: torch.Tensor | None = None

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        assert self.rows is not None, "the rows are given before each call"
        return self.rows


def word_table(model: torch.nn.Module) -> torch.nn.Embedding | None:
    """The model's word-embedding table, or ``None`` where it names none that is a plain
    ``nn.Embedding`` (a subclass may scale or change its rows in its own ``forward``, which a lookup
    outside the graph would miss: its table stays in the graph)."""
    getter = getattr(model, "get_input_embeddings", None)
    table = getter() if callable(getter) else None
    return table if type(table) is torch.nn.Embedding else None


def table_outside(model: torch.nn.Module) -> tuple[torch.nn.Module, _GivenRows | None]:
    """A copy of ``model`` for the export whose word-embedding table is a :class:`_GivenRows`, and that
    module (the graph then takes the rows as an input); a plain copy and ``None`` where it has no plain
    table (:func:`word_table`). ``model`` is never changed, so that a forward of it in another thread
    during an export computes what it always does; the copy shares the table's weight, not copied, and
    copies the rest (e5-small: 22 of its 118 million weights).

    Example:
        >>> emb = torch.nn.Embedding(10, 4)
        >>> model = torch.nn.Sequential(emb, torch.nn.Linear(4, 2))
        >>> model.get_input_embeddings = lambda: model[0]
        >>> graph, given = table_outside(model)
        >>> type(graph[0]).__name__, model[0] is emb, graph[1] is model[1]
        ('_GivenRows', True, False)
    """
    table = word_table(model)
    if table is None:
        return copy.deepcopy(model), None
    given = _GivenRows()
    return copy.deepcopy(model, memo={id(table): given, id(table.weight): table.weight}), given


def _reference_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` (one with a plain table, :func:`word_table`) that computes what it computes, its
    word-embedding table shared, not copied, to set in eval mode without changing ``model``."""
    table = word_table(model)
    return copy.deepcopy(model, memo={id(table): table})


class _Graph(torch.nn.Module):
    """A target's ``forward`` as a module with positional tensor inputs (``names``), for the export; with
    ``given`` (:func:`table_outside`) it runs ``model`` (the copy whose table is ``given``) and takes one
    more input last, the ids' word-embedding rows."""

    def __init__(
        self,
        target: Exportable,
        names: list[str],
        given: _GivenRows | None = None,
        model: torch.nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.model = target.model if model is None else model
        self.head = target.head  # registered, so that the exporter sees its weights as the graph's
        self.fn = target.forward
        self.names = names
        self.given = given

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        if self.given is not None:
            self.given.rows, inputs = inputs[-1], inputs[:-1]
        return self.fn(self.model, dict(zip(self.names, inputs, strict=True)))


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


def export_onnx(target: Exportable, out_dir: Path) -> None:
    """Export ``target``'s model and forward to ``out_dir/model.onnx``, its word-embedding table left out
    (:func:`table_outside`: the export runs a copy, the model is never changed), and check it against
    torch."""
    batches = target.check_batches()
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in batches[0]]
    table = _table_array(target.model)
    model, given = table_outside(target.model)
    # without a table outside, the export's copy computes what the model does: no second copy for the check
    ref_model = model.eval() if given is None else _reference_copy(target.model).eval()
    refs = [_torch_outputs(target, ref_model, batch, names) for batch in batches]
    path = out_dir / "model.onnx"
    with eager_attention(model), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapper = _Graph(target, names, given, model.eval()).eval()
        sample = [torch.from_numpy(batches[1][n]) for n in names]
        inputs = names
        if given is not None:
            sample.append(torch.from_numpy(table_rows(table, batches[1]["input_ids"])))  # type: ignore[arg-type]
            inputs = [*names, TABLE_INPUT]
        with torch.no_grad():
            torch.onnx.export(
                wrapper,
                tuple(sample),
                str(path),
                dynamo=False,
                input_names=inputs,
                output_names=[target.output],
                dynamic_axes={**{n: {0: "batch", 1: "seq"} for n in inputs}, target.output: {0: "batch"}},
                opset_version=17,
            )
    runner = OnnxRunner(path, threads=1, table=table)
    worst = max(float(np.abs(runner(b) - ref).max()) for b, ref in zip(batches, refs, strict=True))
    if not worst < MAX_ABS_DIFF:
        raise StateError(f"ONNX export differs from torch by {worst:.2e} (limit {MAX_ABS_DIFF})")
    (out_dir / "check.json").write_text(json.dumps({"max_abs_diff": worst}) + "\n", encoding="utf-8")


def _torch_outputs(
    target: Exportable, model: torch.nn.Module, batch: Features, names: list[str]
) -> np.ndarray:
    """``target``'s fp32 torch outputs of ``batch`` with ``model`` (a copy of its model in eval mode): what
    the export must give."""
    with torch.inference_mode():
        return _Graph(target, names, model=model)(*(torch.from_numpy(batch[n]) for n in names)).numpy()


def _table_array(model: torch.nn.Module) -> np.ndarray | None:
    """The model's word-embedding table as an fp32 array in host memory (a view where it is one already),
    or ``None`` where it has none (:func:`word_table`)."""
    table = word_table(model)
    return None if table is None else table.weight.detach().to("cpu", torch.float32).numpy()


def table_rows(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The word-embedding rows of ``ids`` (``[batch, seq]``): ``[batch, seq, dim]``, as the table would give
    them inside the graph.

    Example:
        >>> table_rows(np.arange(6, dtype=np.float32).reshape(3, 2), np.array([[2, 0]])).tolist()
        [[[4.0, 5.0], [0.0, 1.0]]]
    """
    return np.take(table, np.asarray(ids, dtype=np.int64), axis=0)


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
    """Runs an exported model: ``runner(features) -> outputs`` (the features the graph takes, as int64);
    where the graph takes :data:`TABLE_INPUT`, the rows of the ids come from ``table``, the model's
    word-embedding table."""

    def __init__(self, path: Path, threads: int | None = None, table: np.ndarray | None = None) -> None:
        self.path = path
        self.session = make_session(path, threads)
        self.inputs = [i.name for i in self.session.get_inputs()]
        if TABLE_INPUT in self.inputs and table is None:
            raise StateError(f"{path} takes the word-embedding rows ({TABLE_INPUT}): give the model's table")
        self.table = table

    def __call__(self, feats: Features) -> np.ndarray:
        given = {k: np.asarray(feats[k], dtype=np.int64) for k in self.inputs if k != TABLE_INPUT}
        if TABLE_INPUT in self.inputs:  # the ids' rows, whether or not the graph kept the ids as an input
            given[TABLE_INPUT] = table_rows(self.table, feats["input_ids"])  # type: ignore[arg-type]
        return self.session.run(None, given)[0]


def export_source(target: Exportable) -> str:
    """What an export of ``target`` is made from (its manifest's ``source``): the weights, the export's
    version, torch's."""
    return json.dumps(
        {"weights": target.weights(), "export": EXPORT_VERSION, "torch": torch.__version__}, sort_keys=True
    )


def export_cache(root: Path | None = None) -> Path:
    """Where ONNX exports are cached: ``root``, else ``$NLSIM_HOME/onnx``."""
    return root or nlsim_home() / "onnx"


def export_made(target: Any) -> bool:
    """Whether the fp32 export of ``target`` (a :class:`~nlsim.inference.target.Target`) is in the cache
    already, where :func:`onnx_runner` makes it, whole: its manifest names this source, and every file it
    lists is there with its size and SHA-256 (remembered while the file is unchanged,
    :func:`~nlsim.io.model_cache.known_sha256`), as :func:`onnx_runner` would find it. One cut short,
    altered or gone is not made: opening it would export the model again."""
    folder = export_cache() / target.export_name()
    manifest = read_manifest(folder)
    if (
        not manifest
        or manifest.get("source") != export_source(target)
        or "model.onnx" not in manifest["files"]
    ):
        return False
    return file_problem(folder, manifest, hash_file=known_sha256) is None


REFUSALS = "refused.json"
"""Beside the exports: the exports their check refused (:func:`export_refusal`)."""
REFUSALS_FORMAT = 1
KEEP_REFUSALS = 64


def _refusal_key(target: Exportable) -> str:
    """What an export's check depends on: what it is made from (:func:`export_source`) and the runtime."""
    import onnxruntime  # deferred: heavy or optional, loaded only when needed

    return json.dumps(
        {"source": export_source(target), "onnxruntime": onnxruntime.__version__}, sort_keys=True
    )


def _refusals(cache: Path) -> dict[str, Any]:
    """The refusals kept in ``cache`` by export folder name; none where the file is missing or not as nlsim
    writes it (a cache: the next refusal writes it again whole)."""
    try:
        data = read_json_object(cache / REFUSALS)
    except (OSError, ValueError):
        return {}
    exports = data.get("exports") if data.get("format") == REFUSALS_FORMAT else None
    return {k: v for k, v in exports.items() if isinstance(v, dict)} if isinstance(exports, dict) else {}


def export_refusal(target: Exportable, cache: Path) -> str:
    """Why the check refused the export of ``target`` with this torch and onnxruntime (kept in
    ``cache/refused.json`` when it did, :func:`keep_refusal`), with when; ``""`` where it did not.

    The check compares the export with torch on the same batches: for the same weights, exporter and
    runtime it refuses again, after the seconds an export takes. So a refused export is not made again
    until one of them changes (another key), and the path is left out at once, saying so."""
    kept = _refusals(cache).get(target.export_name(), {})
    if kept.get("key") != _refusal_key(target) or not isinstance(kept.get("why"), str):
        return ""
    return (
        f"{kept['why']}; refused on {str(kept.get('when', '?'))[:10]}, not exported again until torch, "
        f"onnxruntime or the weights change ({cache / REFUSALS})"
    )


def keep_refusal(target: Exportable, cache: Path, why: str) -> None:
    """Keep why the check refused the export of ``target`` (``why``), or with ``why`` empty, forget it; the
    :data:`KEEP_REFUSALS` latest are kept. Where the file cannot be written, the export is tried again next
    time, as before."""
    name = target.export_name()
    kept = _refusals(cache)
    if not why and name not in kept:
        return
    kept.pop(name, None)
    if why:
        when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        kept[name] = {"key": _refusal_key(target), "why": why, "when": when}
    payload = {"format": REFUSALS_FORMAT, "exports": dict(list(kept.items())[-KEEP_REFUSALS:])}
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache / REFUSALS, json.dumps(payload, indent=1) + "\n")


def onnx_runner(
    target: Exportable, *, threads: int | None = None, root: Path | None = None, precision: str = "fp32"
) -> OnnxRunner:
    """Export (once, cached by the weights' digest) and open the ONNX model of ``target``; with
    ``precision="int8"`` its dynamically quantized copy (:func:`quantized_model`). An export its check
    refused is not made again with the same torch, onnxruntime and weights (:func:`export_refusal`): a
    :class:`StateError` at once, saying why and when."""
    if not onnxruntime_available():
        raise ConfigError("backend='onnx' needs the onnxruntime package (pip install onnxruntime)")
    if precision not in ("fp32", "int8"):
        raise ConfigError(f"ONNX Runtime runs fp32 or int8, not {precision!r}")
    cache = export_cache(root)
    refused = export_refusal(target, cache)
    if refused:
        raise StateError(refused)
    try:
        folder = ensure_model_folder(
            cache / target.export_name(), lambda tmp: export_onnx(target, tmp), source=export_source(target)
        )
    except StateError as exc:  # the check's refusal: the same answer next time
        keep_refusal(target, cache, str(exc))
        raise
    keep_refusal(target, cache, "")
    path = quantized_model(folder, cache) if precision == "int8" else folder / "model.onnx"
    runner = OnnxRunner(path, threads, table=_table_array(target.model))
    evict_old_exports(cache, keep=[folder, path.parent])
    drop_stand_in_exports()
    return runner


def reduce_range_needed() -> bool:
    """ONNX Runtime's u8×s8 int8 kernels can saturate on x86 CPUs without VNNI; there the weights are
    quantized to 7 bits (``reduce_range``), as its documentation advises."""
    from nlsim.inference.cpu import cpu_info

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


def drop_stand_in_exports(home: Path | None = None) -> None:
    """Remove ``$NLSIM_HOME/probes/onnx/``, where earlier versions of the probe kept the ONNX exports of
    the models' stand-ins (copies with a cut word-embedding table, a few hundred MB in all), which nothing
    reads since exports leave the table out: only the folders nlsim made (by their manifest), and the
    folder itself once empty."""
    root = (home or nlsim_home()) / "probes" / "onnx"
    if not root.is_dir():
        return
    for folder in root.iterdir():
        if folder.is_dir() and read_manifest(folder):
            remove_tree(folder)
    with contextlib.suppress(OSError):
        root.rmdir()


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
