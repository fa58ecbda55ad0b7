"""The probe: how fast each inference path runs on this machine, timed once and cached.

When more than one candidate path is left, each is timed on a few synthetic batches (two shapes) once per
CPU kind, thread count and model architecture, or once per GPU kind and architecture for a model on a GPU (a
half precision is not always the faster there), and the items per second are cached in
``$NLSIM_HOME/probes/`` (made again when torch or onnxruntime change). ``NLSIM_PROBE`` says whether a run
may time what the cache lacks (:func:`nlsim.environment.probe_mode`). Where only the exact CPU paths are
left (ONNX and torch fp32: the same numbers), a job smaller than :data:`PROBE_PAYOFF` times what the timing
itself would run is not worth it (:func:`too_small_to_probe`): the exact ONNX path is taken without timing.
On a CPU with AMX-BF16 nothing is timed: torch-bf16 is taken once its quality check passed it
(:func:`nlsim.inference.choice.untimed_path`).

Example:
    >>> import numpy as np
    >>> batch = {"input_ids": np.zeros((4, 8), dtype=np.int64)}
    >>> time_runner(lambda b: None, [batch]) > 0
    True
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nlsim.inference.cpu import CpuInfo
from nlsim.inference.gpu import GpuInfo
from nlsim.io.atomic import atomic_write_text, why_not_kept
from nlsim.io.model_cache import nlsim_home
from nlsim.io.records import read_json_object
from nlsim.progress import counted, warn

if TYPE_CHECKING:
    from nlsim.inference.target import Target

PROBE_FORMAT = 1
PROBE_REPEATS = 3
"""Timed passes over the probe's batches at most, after one warm-up pass; the best counts."""
PROBE_ENOUGH_S = 2.0
"""The timed passes stop once they have lasted this many seconds together: a pass of seconds is timed well
enough once (a fine-tuned cross-encoder's fp32 pass takes about 5 s on 2 cores; the ranks the probe decides
are 1.1 times apart or more), a pass of a fraction of a second is timed :data:`PROBE_REPEATS` times."""
PROBE_PAYOFF = 10
"""The paths the cached probe lacks, all exact CPU paths, are timed only for a job of at least this many
times the items the timing runs itself (every pass over the probe's batches, for each path it lacks). The
exact paths give the same numbers, so the timing can only pay back in speed, and the faster one was 7%
and 17% faster on a 2-core AMD EPYC with avx2 only (e5's embedding: ONNX Runtime 71 items a second,
torch 66; the cross-encoder: 54 and 46): a timing that costs more than a tenth of the job cannot repay
itself. Measured there in cold ``bash run.sh`` runs: with the payoff at 4 (before), the cross-encoder's
two exact paths were timed (1,536 pair readings) before a job of 9,206 readings; the rerank stage took
138 s, its readings 95 s, so about 43 s went to the rest, against 11 s in a run whose job was too small to
time (56 s, readings 45 s): the timing took about 32 s, more than the 17% it could save
(docs/measurements.md)."""


def probe_file(arch: str, threads: int, cpu: CpuInfo, gpu: GpuInfo | None = None) -> Path:
    """``$NLSIM_HOME/probes/<cpu kind>-t<threads>/<architecture>.json``, or for a model on a GPU
    ``$NLSIM_HOME/probes/gpu-<gpu kind>/<architecture>.json`` (the CPU's threads do not time a GPU)."""
    where = f"gpu-{gpu.key}" if gpu is not None else f"{cpu.key}-t{threads}"
    return nlsim_home() / "probes" / where / f"{arch[:32]}.json"


def _versions() -> dict[str, str]:
    import torch  # deferred: heavy or optional, loaded only when needed

    out = {"torch": torch.__version__}
    try:
        import onnxruntime  # deferred: heavy or optional, loaded only when needed

        out["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    return out


def load_probe(arch: str, threads: int, cpu: CpuInfo, gpu: GpuInfo | None = None) -> dict[str, float]:
    """The cached probe (items/s by path) for this CPU kind and thread count (or this GPU kind) and
    architecture ({} if none, made with other library versions, or not as nlsim writes it: JSON that is
    not an object, a rate that is not a number of zero or more; the paths are then timed again)."""
    try:
        data = read_json_object(probe_file(arch, threads, cpu, gpu))
    except (OSError, ValueError):
        return {}
    if data.get("format") != PROBE_FORMAT or data.get("versions") != _versions():
        return {}
    rates = data.get("items_per_s")
    if not isinstance(rates, dict):
        return {}
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rates.values()):
        return {}  # true, a rate in quotes: not as nlsim writes it
    out = {str(k): float(v) for k, v in rates.items()}
    return out if all(math.isfinite(v) and v >= 0 for v in out.values()) else {}


def save_probe(
    arch: str, threads: int, cpu: CpuInfo, rates: dict[str, float], shapes: Any, gpu: GpuInfo | None = None
) -> Path:
    path = probe_file(arch, threads, cpu, gpu)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": PROBE_FORMAT,
        "cpu": cpu.as_dict(),
        **({"gpu": gpu.as_dict()} if gpu is not None else {}),
        "threads": threads,
        "versions": _versions(),
        "shapes": shapes,
        "items_per_s": {k: round(v, 2) for k, v in sorted(rates.items())},
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    atomic_write_text(path, json.dumps(payload, indent=2) + "\n")
    return path


def time_runner(
    run: Callable[[Any], Any],
    batches: list[dict[str, np.ndarray]],
    repeats: int = PROBE_REPEATS,
    enough_s: float = PROBE_ENOUGH_S,
) -> float:
    """Items per second of ``run`` over ``batches``: one warm-up pass, then the best of at most ``repeats``
    timed passes, fewer once they have lasted ``enough_s`` seconds together."""
    items = sum(int(b["input_ids"].shape[0]) for b in batches)
    for b in batches:
        run(b)
    best, spent = math.inf, 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        for b in batches:
            run(b)
        took = time.perf_counter() - t
        best, spent = min(best, took), spent + took
        if spent >= enough_s:
            break
    return items / max(best, 1e-9)


def too_small_to_probe(target: Target, paths: list[str], threads: int, cpu: CpuInfo, job_items: int) -> str:
    """Why a job of ``job_items`` items (texts, or pair readings) on the CPU is not worth timing the
    ``paths`` the cached probe lacks (:data:`PROBE_PAYOFF`); ``""`` when it is, when nothing is missing, or
    when the job's size is not known (``job_items`` 0).

    Example:
        >>> from types import SimpleNamespace
        >>> batch = {"input_ids": np.zeros((64, 8), dtype=np.int64)}
        >>> t = SimpleNamespace(architecture=lambda: "doc-example", probe_batches=lambda: ([batch], []))
        >>> cpu = CpuInfo("a CPU", ())
        >>> too_small_to_probe(t, ["onnx-fp32", "torch-fp32"], 1, cpu, 5000)
        'a job of 5,000 items, under 10 times the 512 the probe would time'
        >>> too_small_to_probe(t, ["onnx-fp32", "torch-fp32"], 1, cpu, 5120)
        ''
    """
    if job_items <= 0:
        return ""
    cached = load_probe(target.architecture(), threads, cpu)
    missing = [p for p in paths if p not in cached]
    batches, _ = target.probe_batches()
    cost = sum(int(b["input_ids"].shape[0]) for b in batches) * (1 + PROBE_REPEATS) * len(missing)
    if not missing or job_items >= PROBE_PAYOFF * cost:
        return ""
    job = counted(job_items, "item", "items")
    return f"a job of {job}, under {PROBE_PAYOFF} times the {cost:,} the probe would time"


def probe_rates(
    target: Target,
    paths: list[str],
    threads: int,
    cpu: CpuInfo,
    runners: dict[str, Any],
    excluded: dict[str, str],
    *,
    time_missing: bool = True,
    gpu: GpuInfo | None = None,
) -> dict[str, float]:
    """Items per second of each of ``paths`` on this machine: the cached probe (per CPU kind, thread count
    and architecture; per GPU kind and architecture where ``gpu`` says the model sits on one), the paths
    it lacks timed now (``time_missing``) and added to it. They are timed on the model itself, and the
    runners built go to ``runners``: a quality check or a job that takes one does not build it again (an
    ONNX export holds no word-embedding table, :func:`nlsim.inference.onnx.table_outside`, so that the
    model's own is small and quick to make). A path that cannot be built gets rate 0 and goes to
    ``excluded`` with why. Outputs come back to host memory, so a GPU's work is timed to its end."""
    arch = target.architecture()
    probe = load_probe(arch, threads, cpu, gpu)
    missing = [p for p in paths if p not in probe]
    if missing and time_missing:
        batches, shapes = target.probe_batches()
        for path in missing:
            try:
                runner = target.build(path, threads)
            except Exception as exc:  # noqa: BLE001 - a path that cannot be built is left out, with why
                excluded[path] = f"could not be set up ({type(exc).__name__}: {exc})"
                probe[path] = 0.0
                continue
            runners[path] = runner
            probe[path] = time_runner(lambda b, r=runner: target.run(r, b), batches)
        _keep(arch, threads, cpu, {k: v for k, v in probe.items() if v > 0}, shapes, gpu)
    return probe


def _keep(
    arch: str, threads: int, cpu: CpuInfo, rates: dict[str, float], shapes: Any, gpu: GpuInfo | None
) -> None:
    """:func:`save_probe`, or where ``$NLSIM_HOME`` cannot take the file (read-only, full), a warning: the
    timings still decide this run's path, as the embedding cache's vectors a home cannot keep still serve
    the run (:mod:`nlsim.encoders.cache`); the next run times again. The timings another run kept there
    while this one timed (other paths of the same model) are kept beside these, which win where both
    timed a path."""
    try:
        save_probe(arch, threads, cpu, {**load_probe(arch, threads, cpu, gpu), **rates}, shapes, gpu)
    except OSError as exc:
        where = probe_file(arch, threads, cpu, gpu)
        warn(f"speed probe: {where} not kept ({why_not_kept(exc)}); this run takes the path it timed")
