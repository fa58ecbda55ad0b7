"""Which backend and precision a model runs on, chosen on the machine in hand and checked for quality.

An *inference path* is a backend and a precision: ``onnx-fp32`` and ``torch-fp32`` are lossless (the ONNX
export is checked against torch when it is made); ``onnx-int8`` (ONNX Runtime, dynamic int8, per-channel
weights, attention products and embeddings kept in fp32), ``torch-bf16`` (the model cast to bfloat16,
pooling in fp32) and ``torch-int8`` (``torch.ao`` dynamic int8 linear layers) are lossy.

The choice (:func:`select`), for ``backend="auto"`` / ``precision="auto"``:

1. **candidates**: what the options allow, pruned by the CPU's features (:mod:`nlsim.inference.cpu`): int8
   only with VNNI or AMX-INT8, bf16 only with ``avx512_bf16`` or AMX-BF16, ONNX only with onnxruntime;
2. **the guard** (:mod:`nlsim.inference.guard`): a lossy path stays a candidate only when the model's
   stored quality check passed it; no record, no lossy path;
3. **the probe** (:mod:`nlsim.inference.probe`): when more than one candidate is left, each is timed on
   a few synthetic batches once per CPU kind, thread count and model architecture;
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

from dataclasses import asdict, dataclass, field
from typing import Any

from nlsim.errors import ConfigError
from nlsim.inference.cpu import CpuInfo, cpu_info
from nlsim.inference.guard import Verdict, guard_verdict, load_guard
from nlsim.inference.paths import PATHS, candidates, check_options, is_lossy, split_path
from nlsim.inference.probe import probe_mode, probe_rates
from nlsim.inference.target import Target
from nlsim.progress import say, warn

LOSSY_MIN_GAIN = 1.10
"""A guarded lossy path is taken only when the probe found it this many times faster than the best
lossless one (below that, the exact numbers win)."""


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
    guards: dict[str, Verdict],
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
        from nlsim.inference.onnx import onnxruntime_available

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

    from nlsim.inference.onnx import onnxruntime_available

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


def announce(what: str, choice: Choice) -> None:
    """Say which path a model runs on (the log line every run prints)."""
    line = f"{what}: {choice.describe()}"
    asked = choice.requested.get("precision") not in (None, "auto")
    if asked and choice.lossy and not choice.guard.startswith("passed"):
        warn(f"{line} -- asked for; the quality check has not passed it")
    else:
        say(line)
