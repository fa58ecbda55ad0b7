"""Which backend and precision a model runs on, chosen on the machine in hand and checked for quality.

An *inference path* is a backend and a precision: ``onnx-fp32`` and ``torch-fp32`` are lossless (the ONNX
export is checked against torch when it is made); ``onnx-int8`` (ONNX Runtime, dynamic int8, per-channel
weights, attention products and embeddings kept in fp32), ``torch-bf16`` (the model cast to bfloat16,
pooling in fp32) and ``torch-int8`` (``torch.ao`` dynamic int8 linear layers) are lossy.

The choice (:func:`select`), for ``backend="auto"`` / ``precision="auto"``:

1. **candidates**: what the options allow, pruned by the CPU's features (:mod:`nlsim.encoders.cpu`): int8
   only with VNNI or AMX-INT8, bf16 only with ``avx512_bf16`` or AMX-BF16, ONNX only with onnxruntime;
2. **the guard**: a lossy path stays a candidate only when the model's quality check passed for it
   (:func:`guard_verdict`: on the annotated validation pairs, Spearman ×100 at most :data:`MAX_SPEARMAN_LOSS`
   below fp32, same-story F1 at the calibrated threshold not lower, and the vectors within
   :data:`MIN_COSINE` of fp32, or cross-encoder scores within :data:`MAX_SCORE_DIFF` of fp32's and
   :data:`MEAN_SCORE_DIFF` on average). The check is made
   where pairs are at hand (``nlsim finetune`` when it writes the model folder, ``nlsim calibrate``, the
   chain's baseline) and stored: ``MODEL/precision.json`` (``MODEL/reranker/precision.json``) or
   ``$NLSIM_HOME/precision/``. No record, no lossy path;
3. **the probe**: when more than one candidate is left, each is timed on a few synthetic batches (two
   shapes) once per CPU kind, thread count and model architecture, cached in ``$NLSIM_HOME/probes/``;
4. **the pick** (:func:`decide`, deterministic given the probe): the fastest lossless candidate, unless a
   guarded lossy one is at least :data:`LOSSY_MIN_GAIN` times faster.

A forced backend or precision narrows the candidates; forcing both takes that path, guard or not (the run
says so). The choice (:class:`Choice`) is logged and kept in the run record.

Example:
    >>> probe = {"onnx-fp32": 330.0, "torch-fp32": 160.0, "onnx-int8": 700.0}
    >>> guards = {"onnx-int8": (True, "passed", None)}
    >>> decide(["onnx-fp32", "torch-fp32", "onnx-int8"], {}, probe, guards).path
    'onnx-int8'
    >>> failed = {"onnx-int8": (False, "failed", None)}
    >>> decide(["onnx-fp32", "torch-fp32", "onnx-int8"], {}, probe, failed).path
    'onnx-fp32'
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nlsim.encoders.cpu import CpuInfo, cpu_info
from nlsim.encoders.model_cache import nlsim_home
from nlsim.errors import ConfigError
from nlsim.io.atomic import atomic_write_text

log = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "onnx")
PRECISIONS = ("auto", "fp32", "bf16", "int8")
PATHS = ("onnx-fp32", "torch-fp32", "onnx-int8", "torch-bf16", "torch-int8")
"""Every inference path, in the order that breaks ties."""
LOSSLESS = ("onnx-fp32", "torch-fp32")

MAX_SPEARMAN_LOSS = 0.5
"""A lossy path may lose at most this much Spearman (×100) against fp32 on the validation pairs."""
MIN_COSINE = 0.98
"""Bi-encoder: the lowest cosine between a lossy path's vector and fp32's, over the validation texts."""
MAX_SCORE_DIFF = 0.15
"""Cross-encoder: the largest difference between a lossy path's score (0-1) and fp32's on validation..."""
MEAN_SCORE_DIFF = 0.03
"""... and the mean difference (the reranker weighs the cross-encoder by 0.5: half of this in its score)."""
SAME_STORY = 1.0
"""The gold level of the guard's F1: a pair is same-story when its score is >= 1.0."""
LOSSY_MIN_GAIN = 1.10
"""A guarded lossy path is taken only when the probe found it this many times faster than the best
lossless one (below that, the exact numbers win)."""
PROBE_FORMAT = 1
GUARD_FORMAT = 1
GUARD_JSON = "precision.json"


def split_path(path: str) -> tuple[str, str]:
    """``"onnx-int8"`` -> ``("onnx", "int8")``."""
    backend, _, precision = path.partition("-")
    return backend, precision


def is_lossy(path: str) -> bool:
    return path not in LOSSLESS


def check_options(backend: str, precision: str) -> None:
    """Refuse unknown values and combinations no path has (ONNX Runtime has no bf16 CPU kernels)."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if backend == "onnx" and precision == "bf16":
        raise ConfigError("precision 'bf16' runs on torch only (ONNX Runtime has no bf16 CPU kernels)")


def candidates(
    backend: str, precision: str, cpu: CpuInfo, *, onnx_ok: bool, on_cpu: bool = True
) -> tuple[list[str], dict[str, str]]:
    """The paths the options allow on this machine, and why each other path is left out.

    A forced precision is tried whatever the CPU (the user asked for it); ``auto`` only tries int8 with
    VNNI/AMX and bf16 with avx512_bf16/AMX-BF16.

    Example:
        >>> cpu = CpuInfo(model="x", flags=("avx2",), cores=2)
        >>> candidates("auto", "auto", cpu, onnx_ok=True)[0]
        ['onnx-fp32', 'torch-fp32']
    """
    check_options(backend, precision)
    keep: list[str] = []
    out: dict[str, str] = {}
    for path in PATHS:
        b, p = split_path(path)
        if backend != "auto" and b != backend:
            out[path] = f"backend {backend} asked"
        elif precision == "auto" and p != "fp32" and not on_cpu:
            out[path] = "not on the CPU"
        elif precision not in ("auto", p):
            out[path] = f"precision {precision} asked"
        elif b == "onnx" and not on_cpu:
            out[path] = "ONNX Runtime runs on the CPU only here"
        elif b == "onnx" and not onnx_ok:
            out[path] = "onnxruntime is not installed"
        elif precision == "auto" and p == "int8" and cpu.int8_isa is None:
            out[path] = "no VNNI or AMX-INT8 on this CPU"
        elif precision == "auto" and p == "bf16" and cpu.bf16_isa is None:
            out[path] = "no avx512_bf16 or AMX-BF16 on this CPU"
        else:
            keep.append(path)
    return keep, out


# --- the guard ----------------------------------------------------------------------------------------


def guard_verdict(record: dict[str, Any] | None, path: str) -> tuple[bool, str, dict[str, Any] | None]:
    """Whether a lossy ``path`` passed its quality check in ``record`` (a stored guard), why, and its figures.

    The figures are judged here, against today's limits (not a stored yes/no).

    Example:
        >>> rec = {"kind": "encoder", "reference": {"spearman": 80.0, "f1": 0.5},
        ...        "paths": {"onnx-int8": {"spearman": 79.8, "f1": 0.5, "min_cosine": 0.991}}}
        >>> guard_verdict(rec, "onnx-int8")[:2]
        (True, 'passed: Spearman -0.20, same-story F1 0.500 -> 0.500, lowest cosine 0.9910')
        >>> guard_verdict(rec | {"paths": {"onnx-int8": {"spearman": 79.0, "f1": 0.5, "min_cosine": 0.99}}},
        ...               "onnx-int8")[:2]
        (False, 'failed: Spearman drops 1.00 (limit 0.5)')
    """
    if not is_lossy(path):
        return True, "lossless", None
    if not record:
        return False, "none recorded for this model (nlsim finetune or nlsim calibrate makes one)", None
    entry = (record.get("paths") or {}).get(path)
    if not entry:
        return False, "not checked for this model", None
    if entry.get("error"):
        return False, f"the check could not run it ({entry['error']})", entry
    if entry.get("not_checked"):
        return False, f"not checked ({entry['not_checked']})", entry
    ref = record.get("reference") or {}
    fails = []
    loss = _num(ref.get("spearman")) - _num(entry.get("spearman"))
    if not loss <= MAX_SPEARMAN_LOSS:
        fails.append(f"Spearman drops {loss:.2f} (limit {MAX_SPEARMAN_LOSS})")
    ref_f1, f1 = ref.get("f1"), entry.get("f1")
    if ref_f1 is not None and not _num(f1) >= _num(ref_f1):
        fails.append(f"same-story F1 drops {_num(ref_f1):.3f} -> {_num(f1):.3f}")
    if record.get("kind") == "cross-encoder":
        diff = _num(entry.get("max_score_diff"), math.inf)
        mean = _num(entry.get("mean_score_diff"), math.inf)
        if not diff <= MAX_SCORE_DIFF:
            fails.append(f"scores differ by up to {diff:.4f} (limit {MAX_SCORE_DIFF})")
        if not mean <= MEAN_SCORE_DIFF:
            fails.append(f"scores differ by {mean:.4f} on average (limit {MEAN_SCORE_DIFF})")
        agree = f"score difference {mean:.4f} on average, {diff:.4f} at most"
    else:
        low = _num(entry.get("min_cosine"))
        if not low >= MIN_COSINE:
            fails.append(f"lowest cosine to fp32 {low:.4f} (floor {MIN_COSINE})")
        agree = f"lowest cosine {low:.4f}"
    if fails:
        return False, "failed: " + "; ".join(fails), entry
    f1_text = f", same-story F1 {_num(ref_f1):.3f} -> {_num(f1):.3f}" if ref_f1 is not None else ""
    return True, f"passed: Spearman {-loss:+.2f}{f1_text}, {agree}", entry


def _num(value: Any, default: float = math.nan) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def guard_files(kind: str, identity: str, folder: Path | None) -> list[Path]:
    """Where a guard record may be, first found wins: the model's own folder, then ``$NLSIM_HOME``."""
    prefix = "ce-" if kind == "cross-encoder" else ""
    out = [folder / GUARD_JSON] if folder is not None else []
    return out + [nlsim_home() / "precision" / f"{prefix}{identity[:32]}.json"]


def load_guard(kind: str, identity: str, folder: Path | None = None) -> tuple[dict[str, Any] | None, str]:
    """The stored guard record of a model (``identity``: its fingerprint, or a cross-encoder's digest) and
    where it was found; a record made for other weights is ignored."""
    for path in guard_files(kind, identity, folder):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if record.get("identity") == identity and record.get("format") == GUARD_FORMAT:
            return record, str(path)
        if path.is_file():
            log.info("%s: made for other weights; not used", path)
    return None, ""


def save_guard(record: dict[str, Any], path: Path | None = None) -> Path:
    """Write a guard record (default: ``$NLSIM_HOME/precision/``)."""
    if path is None:
        path = guard_files(record["kind"], record["identity"], None)[-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path


# --- the probe ----------------------------------------------------------------------------------------


def probe_file(arch: str, threads: int, cpu: CpuInfo) -> Path:
    """``$NLSIM_HOME/probes/<cpu kind>-t<threads>/<architecture>.json``."""
    return nlsim_home() / "probes" / f"{cpu.key}-t{threads}" / f"{arch[:32]}.json"


def _versions() -> dict[str, str]:
    import torch  # deferred: heavy or optional, loaded only when needed

    out = {"torch": torch.__version__}
    try:
        import onnxruntime  # deferred: heavy or optional, loaded only when needed

        out["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    return out


def load_probe(arch: str, threads: int, cpu: CpuInfo) -> dict[str, float]:
    """The cached probe (items/s by path) for this CPU kind, thread count and architecture ({} if none, or
    made with other library versions)."""
    try:
        data = json.loads(probe_file(arch, threads, cpu).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if data.get("format") != PROBE_FORMAT or data.get("versions") != _versions():
        return {}
    return {k: float(v) for k, v in (data.get("items_per_s") or {}).items()}


def save_probe(arch: str, threads: int, cpu: CpuInfo, rates: dict[str, float], shapes: Any) -> Path:
    path = probe_file(arch, threads, cpu)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": PROBE_FORMAT,
        "cpu": cpu.as_dict(),
        "threads": threads,
        "versions": _versions(),
        "shapes": shapes,
        "items_per_s": {k: round(v, 2) for k, v in sorted(rates.items())},
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    atomic_write_text(path, json.dumps(payload, indent=2) + "\n")
    return path


def time_runner(run: Callable[[Any], Any], batches: list[Any], repeats: int = 3) -> float:
    """Items per second of ``run`` over ``batches`` (one warm-up pass, then the best of ``repeats``)."""
    items = sum(_rows(b) for b in batches)
    for b in batches:
        run(b)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        for b in batches:
            run(b)
        best = min(best, time.perf_counter() - t)
    return items / max(best, 1e-9)


def _rows(batch: Any) -> int:
    first = next(iter(batch.values())) if isinstance(batch, dict) else batch[0]
    return int(first.shape[0])


def synthetic_batch(
    rows: int, length: int, vocab: int, rng: np.random.Generator, first: int | None
) -> np.ndarray:
    """Random token ids (``rows`` × ``length``; the first column ``first`` when given): speed does not
    depend on which tokens they are."""
    ids = rng.integers(min(1000, vocab // 2), vocab, size=(rows, length), dtype=np.int64)
    if first is not None:
        ids[:, 0] = first
    return ids


# --- the pick -----------------------------------------------------------------------------------------


@dataclass
class Choice:
    """The inference path a model runs on, why, and what was weighed."""

    path: str
    reason: str
    requested: dict[str, str] = field(default_factory=dict)
    forced: bool = False
    probe: dict[str, float] = field(default_factory=dict)
    guard: str = ""
    guard_file: str = ""
    guard_figures: dict[str, Any] | None = None
    excluded: dict[str, str] = field(default_factory=dict)
    cpu: str = ""

    @property
    def backend(self) -> str:
        return split_path(self.path)[0]

    @property
    def precision(self) -> str:
        return split_path(self.path)[1]

    @property
    def lossy(self) -> bool:
        return is_lossy(self.path)

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "precision": self.precision, **asdict(self)}

    def describe(self) -> str:
        """One line for the log."""
        guard = f"; quality check: {self.guard}" if self.lossy and self.guard else ""
        return f"{self.path} ({self.reason}{guard}; CPU {self.cpu})"


def decide(
    cands: list[str],
    excluded: dict[str, str],
    probe: dict[str, float],
    guards: dict[str, tuple[bool, str, Any]],
    *,
    forced_precision: bool = False,
) -> Choice:
    """Pick among ``cands`` (see the module docstring). ``guards[path]`` is :func:`guard_verdict`'s answer;
    with ``forced_precision`` a lossy path needs no guard (the user asked for it). Deterministic."""
    excluded = dict(excluded)
    allowed = []
    for path in cands:
        ok, why, _ = guards.get(path, (not is_lossy(path), "not checked", None))
        if ok or forced_precision:
            allowed.append(path)
        else:
            excluded[path] = f"quality check: {why}"
    if not allowed:
        allowed = ["torch-fp32"]  # always possible
    order = {p: i for i, p in enumerate(PATHS)}

    def rate(p: str) -> float:
        return probe.get(p, 0.0)

    ranked = sorted(allowed, key=lambda p: (-rate(p), order[p]))
    lossless = [p for p in ranked if not is_lossy(p)]
    best = ranked[0]
    if is_lossy(best) and lossless and not forced_precision:
        if rate(best) < LOSSY_MIN_GAIN * rate(lossless[0]):
            best = lossless[0]
    if len(allowed) == 1:
        reason = "the only candidate"
    elif rate(best) > 0:
        slower = [p for p in ranked if p != best and rate(p) > 0]
        vs = f"; {', '.join(f'{p} {rate(p):.0f}' for p in slower)}" if slower else ""
        reason = f"fastest in the probe: {rate(best):.0f} items/s{vs}"
        if best != ranked[0]:
            reason += f" (lossless kept: {ranked[0]} is under {LOSSY_MIN_GAIN}x faster)"
    else:
        reason = "first of the candidates (no probe)"
    for p in allowed:
        if p != best:
            excluded.setdefault(p, "slower in the probe" if rate(p) > 0 else "not chosen")
    verdict = guards.get(best)
    return Choice(
        path=best,
        reason=reason,
        probe={k: round(v, 1) for k, v in probe.items()},
        guard=verdict[1] if verdict and is_lossy(best) else "",
        guard_figures=verdict[2] if verdict else None,
        excluded=excluded,
    )


# --- the whole selection ------------------------------------------------------------------------------


class Target:
    """What :func:`select` needs from a model (an encoder or a cross-encoder); see the two implementations,
    :class:`nlsim.encoders.inference.EncoderTarget` and :class:`nlsim.rerank.inference.CrossEncoderTarget`."""

    kind = "encoder"
    on_cpu = True

    def identity(self) -> str:  # pragma: no cover - interface
        """What the guard record is keyed by (the weights and all that changes the numbers)."""
        raise NotImplementedError

    def architecture(self) -> str:  # pragma: no cover - interface
        """What the probe is keyed by (speed depends on the architecture, not on the weights' values)."""
        raise NotImplementedError

    def folder(self) -> Path | None:
        """The model folder whose ``precision.json`` holds the guard (``None``: only ``$NLSIM_HOME``)."""
        return None

    def build(self, path: str, threads: int | None) -> Any:  # pragma: no cover - interface
        """The runner of ``path`` (``None`` for plain torch fp32)."""
        raise NotImplementedError

    def probe_batches(self) -> tuple[list[Any], Any]:  # pragma: no cover - interface
        """Synthetic batches for the probe, and their shapes (for the record)."""
        raise NotImplementedError

    def run(self, runner: Any, batch: Any) -> Any:  # pragma: no cover - interface
        """One batch through ``runner`` (``None``: torch fp32)."""
        raise NotImplementedError


@dataclass
class Selection:
    """:func:`select`'s answer: the choice, and the runners already built on the way (for the probe)."""

    choice: Choice
    runners: dict[str, Any] = field(default_factory=dict)


def select(
    target: Target,
    *,
    backend: str = "auto",
    precision: str = "auto",
    threads: int | None = None,
    cpu: CpuInfo | None = None,
    onnx_ok: bool | None = None,
    probe_missing: bool = True,
    use_probe: bool = True,
    exclude: dict[str, str] | None = None,
) -> Selection:
    """Choose ``target``'s inference path (see the module docstring). Runners built while probing are
    returned so that the chosen one is not built twice.

    ``probe_missing``: time the candidates the cached probe lacks (else they count as unmeasured);
    ``use_probe``: read the cached probe at all (else the first candidate in :data:`PATHS` order that the
    guard allows); ``exclude``: paths to leave out, with why (e.g. one whose set-up failed)."""
    import torch  # deferred: heavy or optional, loaded only when needed

    check_options(backend, precision)
    cpu = cpu or cpu_info()
    threads = int(threads or torch.get_num_threads())
    if onnx_ok is None:
        from nlsim.encoders.onnx_backend import onnxruntime_available

        onnx_ok = onnxruntime_available()
    cands, excluded = candidates(backend, precision, cpu, onnx_ok=onnx_ok, on_cpu=target.on_cpu)
    for path, why in (exclude or {}).items():
        if path in cands and path != "torch-fp32":
            cands.remove(path)
            excluded[path] = why
    requested = {"backend": backend, "precision": precision}
    if not cands:
        raise ConfigError(
            f"no way to run backend={backend!r} precision={precision!r} here: "
            + "; ".join(f"{p}: {why}" for p, why in excluded.items() if why)
        )
    record, where = (None, "")
    if any(is_lossy(p) for p in cands):
        record, where = load_guard(target.kind, target.identity(), target.folder())
    guards = {p: guard_verdict(record, p) for p in cands if is_lossy(p)}
    forced_precision = precision != "auto"
    forced = backend != "auto" and precision != "auto"
    runners: dict[str, Any] = {}
    alive = [p for p in cands if forced_precision or guards.get(p, (True,))[0]]
    probe: dict[str, float] = {}
    if len(alive) > 1 and use_probe:
        probe = probe_rates(target, alive, threads, cpu, runners, excluded, time_missing=probe_missing)
        cands = [p for p in cands if p not in excluded]
    choice = decide(cands, excluded, probe, guards, forced_precision=forced_precision)
    choice.requested, choice.forced, choice.cpu = requested, forced, cpu.describe()
    choice.guard_file = where
    if choice.lossy and not choice.guard:
        ok, why, figures = guard_verdict(record, choice.path)
        choice.guard, choice.guard_figures = why, figures
    return Selection(choice, runners)


def probe_mode() -> str:
    """``NLSIM_PROBE``: ``on`` (default: time what the cache lacks), ``cached`` (use cached probes, never
    time: tests, reproducible runs), ``off`` (ignore probes: the first candidate in path order)."""
    mode = os.environ.get("NLSIM_PROBE", "on").strip().lower()
    return mode if mode in ("on", "cached", "off") else "on"


def probe_rates(
    target: Target,
    paths: list[str],
    threads: int,
    cpu: CpuInfo,
    runners: dict[str, Any],
    excluded: dict[str, str],
    *,
    time_missing: bool = True,
) -> dict[str, float]:
    """Items per second of each of ``paths`` on this machine: the cached probe (per CPU kind, thread count
    and architecture), the paths it lacks timed now (``time_missing``) and added to it. A path that
    cannot be built gets rate 0 and goes to ``excluded`` with why; runners built go to ``runners``."""
    arch = target.architecture()
    probe = load_probe(arch, threads, cpu)
    missing = [p for p in paths if p not in probe]
    if missing and time_missing:
        batches, shapes = target.probe_batches()
        for path in missing:
            try:
                runner = runners[path] = target.build(path, threads)
            except Exception as exc:  # noqa: BLE001 - a path that cannot be built is left out, with why
                excluded[path] = f"could not be set up ({type(exc).__name__}: {exc})"
                probe[path] = 0.0
                continue
            probe[path] = time_runner(lambda b, r=runner: target.run(r, b), batches)
        save_probe(arch, threads, cpu, {k: v for k, v in probe.items() if v > 0}, shapes)
    return probe


def worth_checking(
    target: Target, threads: int | None = None, cpu: CpuInfo | None = None
) -> tuple[list[str], dict[str, str]]:
    """The lossy paths that can pay off on this machine, and why each other lossy path cannot.

    A lossy path is worth its quality check only when the CPU has the instructions for it
    (:func:`candidates` with ``auto``) and the probe (:func:`probe_rates`, cached per CPU kind) finds it
    at least :data:`LOSSY_MIN_GAIN` times faster than the best lossless path: ``auto`` would never take
    any other. On a CPU without VNNI or bf16 instructions nothing is left, and nothing is probed. Without
    a probe (``NLSIM_PROBE=off``, or ``cached`` with nothing cached) every CPU candidate is checked: nothing
    says it cannot pay off.
    """
    import torch  # deferred: heavy or optional, loaded only when needed

    from nlsim.encoders.onnx_backend import onnxruntime_available

    cpu = cpu or cpu_info()
    threads = int(threads or torch.get_num_threads())
    cands, excluded = candidates("auto", "auto", cpu, onnx_ok=onnxruntime_available(), on_cpu=target.on_cpu)
    skipped = {p: why for p, why in excluded.items() if is_lossy(p)}
    lossy = [p for p in cands if is_lossy(p)]
    if not lossy:
        return [], skipped
    mode = probe_mode()
    rates: dict[str, float] = {}
    if mode != "off":
        rates = probe_rates(target, cands, threads, cpu, {}, skipped, time_missing=mode == "on")
    best = max((rates.get(p, 0.0) for p in cands if not is_lossy(p)), default=0.0)
    keep = []
    for path in lossy:
        if path in skipped:
            continue
        rate = rates.get(path, 0.0)
        if best > 0 and rate < LOSSY_MIN_GAIN * best:
            skipped[path] = (
                f"not faster on this CPU: {rate:.0f} items/s in the probe against {best:.0f} for the best "
                f"lossless path (needs {LOSSY_MIN_GAIN}x)"
            )
        else:
            keep.append(path)
    return keep, skipped


def architecture_digest(*parts: Any) -> str:
    """SHA-256 of what speed depends on (config, shapes): the probe's key."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
