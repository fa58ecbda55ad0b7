"""Which backend and precision a model runs on, chosen on the machine in hand and checked for quality, and
the one loop that chooses, builds and falls back for both model kinds (:func:`settle`).

An *inference path* is a backend and a precision: ``onnx-fp32`` and ``torch-fp32`` are lossless (the ONNX
export is checked against torch when it is made); ``onnx-int8`` (ONNX Runtime, dynamic int8, per-channel
weights, attention products and embeddings kept in fp32), ``torch-bf16`` (the model cast to bfloat16,
pooling in fp32), ``torch-fp16`` (on a GPU) and ``torch-int8`` (``torch.ao`` dynamic int8 linear layers)
are lossy.

The choice (:func:`select`), for ``backend="auto"`` / ``precision="auto"``:

1. **candidates**: what the options allow, pruned by the CPU's features (:mod:`nlsim.inference.cpu`): int8
   only with VNNI or AMX-INT8, bf16 only with ``avx512_bf16`` or AMX-BF16, ONNX only with onnxruntime; for
   a model on a GPU (:mod:`nlsim.inference.gpu`), torch fp32 and the half precisions the GPU has;
2. **the quality check** (:mod:`nlsim.inference.lossy_verdict`): a lossy path stays a candidate only when
   the model's stored quality check passed it (on the device the model is on); no record, no lossy path;
3. **the probe** (:mod:`nlsim.inference.probe`): when more than one candidate is left, each is timed on
   a few synthetic batches once per CPU kind, thread count and model architecture (where only the exact
   CPU paths are left, not for a job too small to repay the timing:
   :func:`nlsim.inference.probe.too_small_to_probe`; the first exact path is then taken: ONNX on a CPU
   with AVX-512, torch without, :data:`nlsim.inference.paths.ONNX_FP32_ISA`);
4. **the pick** (:func:`decide`, deterministic given the probe): the fastest lossless candidate, unless a
   lossy one that passed the quality check is at least :data:`LOSSY_MIN_GAIN` times faster. A model on a
   GPU is probed too (once per GPU kind and architecture): a half precision is not always faster there.
   Only where no probe is at hand (``NLSIM_PROBE=off``, or ``cached`` with none cached) does a half
   precision that passed win unmeasured on a GPU (tensor cores), bf16 before fp16.

Where the CPU's features settle the order (:func:`untimed_path`: ``torch-bf16`` on a CPU with AMX-BF16,
unless ``NLSIM_PROBE=off``), nothing is timed: that path is the first the quality check measures, and once it
passes it is taken, and the other lossy paths need no check; where it fails, the others are checked
unmeasured and the probe times what is left when a job chooses.

A forced backend or precision narrows the candidates; forcing both takes that path, checked or not (the
run says so). The choice (:class:`Choice`) is logged and kept in the run record.

Example:
    >>> probe = {"onnx-fp32": 330.0, "torch-fp32": 160.0, "onnx-int8": 700.0}
    >>> checks = {"onnx-int8": (True, "passed", None)}
    >>> decide(["onnx-fp32", "torch-fp32", "onnx-int8"], {}, probe, checks).path
    'onnx-int8'
    >>> failed = {"onnx-int8": (False, "failed", None)}
    >>> decide(["onnx-fp32", "torch-fp32", "onnx-int8"], {}, probe, failed).path
    'onnx-fp32'
    >>> gpu = {"torch-bf16": (True, "passed", None), "torch-fp16": (True, "passed", None)}
    >>> decide(["torch-fp32", "torch-bf16", "torch-fp16"], {}, {}, gpu, on_gpu=True).path
    'torch-bf16'
    >>> h100 = {"torch-fp32": 9272.0, "torch-bf16": 5790.0, "torch-fp16": 6100.0}
    >>> decide(["torch-fp32", "torch-bf16", "torch-fp16"], {}, h100, gpu, on_gpu=True).path
    'torch-fp32'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from nlsim.environment import probe_mode
from nlsim.errors import ConfigError
from nlsim.inference.cpu import CpuInfo, cpu_info
from nlsim.inference.gpu import gpu_info
from nlsim.inference.lossy_verdict import (
    Verdict,
    entry_key,
    load_quality_check,
    quality_verdict,
    record_entry,
)
from nlsim.inference.paths import PATHS, candidates, check_options, is_lossy, missing_isa, split_path
from nlsim.inference.probe import probe_rates, too_small_to_probe
from nlsim.inference.target import Target
from nlsim.progress import say, warn

LOSSY_MIN_GAIN = 1.10
"""A lossy path that passed the quality check is taken only when the probe found it this many times faster
than the best lossless one (below that, the exact numbers win)."""


UNTIMED_ON_AMX = "torch-bf16"
"""The path a CPU with AMX-BF16 takes without a probe once its quality check passed it
(:func:`untimed_path`)."""


def untimed_path(cands: list[str], cpu: CpuInfo, on_gpu: bool, mode: str) -> str:
    """The lossy path the CPU's features pick without timing, or ``""``: ``torch-bf16`` where the CPU has
    AMX-BF16 (and the process may use its tiles, :func:`nlsim.inference.cpu.amx_usable`), the model runs
    on the CPU, ``torch-bf16`` is among ``cands`` and probes are read at all (``mode`` ``on`` or ``cached``:
    this rule times nothing either; ``off`` keeps its rule, the first candidate in path order).

    AMX's tiles multiply bf16 several times faster than the CPU's fp32 units. On the Intel Xeon measured
    (2 cores, 2 threads) every probe ranked torch-bf16 first for both models
    (``benchmarks/results/probe_intel_xeon_bf16.md``: e5-small 170-309 texts a second against 156-186 for
    onnx-int8 and 58-65 for torch-fp32; the cross-encoder 143-226 pair readings against 101-133 and 43-60),
    and a job widens its lead: torch runs its batches in inference lanes, the probe one batch at a time
    (the chain's reports embedded 550-600 texts a second in bf16). Timing them cost a cold chain about a
    minute (docs/measurements.md), onnx-int8's exports included.

    Example:
        >>> amx = CpuInfo("Xeon", ("avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"), 2)
        >>> cands = ["onnx-fp32", "torch-fp32", "onnx-int8", "torch-bf16"]
        >>> untimed_path(cands, amx, False, "on"), untimed_path(cands, amx, False, "cached")
        ('torch-bf16', 'torch-bf16')
        >>> untimed_path(cands, amx, False, "off"), untimed_path(cands, amx, True, "on")
        ('', '')
        >>> zen4 = CpuInfo("EPYC", ("avx512_vnni", "avx512_bf16"), 2)
        >>> untimed_path(cands, zen4, False, "on")
        ''
    """
    if on_gpu or mode == "off" or "amx_bf16" not in cpu.flags or UNTIMED_ON_AMX not in cands:
        return ""
    return UNTIMED_ON_AMX


@dataclass
class Choice:
    """The inference path a model runs on, why, and what was weighed."""

    path: str
    reason: str
    requested: dict[str, str] = field(default_factory=dict)
    forced: bool = False
    probe: dict[str, float] = field(default_factory=dict)
    quality_check: str = ""
    quality_check_file: str = ""
    quality_check_figures: dict[str, Any] | None = None
    excluded: dict[str, str] = field(default_factory=dict)
    cpu: str = ""
    device: str = "cpu"

    @property
    def backend(self) -> str:
        return split_path(self.path)[0]

    @property
    def precision(self) -> str:
        return split_path(self.path)[1]

    @property
    def lossy(self) -> bool:
        return is_lossy(self.path)

    @property
    def tag(self) -> str:
        """What keys the outputs of a lossy path in a cache: the path, and ``@cuda`` where it ran on a GPU
        (half precision on a GPU and on a CPU are different arithmetic); ``""`` for the exact paths."""
        return entry_key(self.path, self.device) if self.lossy else ""

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "precision": self.precision, **asdict(self)}

    def describe(self) -> str:
        """One line for the log: the path, why, and where it runs (the GPU, or the CPU)."""
        check = f"; quality check: {self.quality_check}" if self.lossy and self.quality_check else ""
        where = f"CPU {self.cpu}" if self.device == "cpu" else f"GPU {self.device}"
        return f"{self.path} ({self.reason}{check}; {where})"


def decide(
    cands: list[str],
    excluded: dict[str, str],
    probe: dict[str, float],
    checks: dict[str, Verdict],
    *,
    forced_precision: bool = False,
    on_gpu: bool = False,
    untimed: str = "",
) -> Choice:
    """Pick among ``cands`` (see the module docstring). ``checks[path]`` is :func:`quality_verdict`'s
    answer; with ``forced_precision`` a lossy path needs no quality check (the user asked for it);
    ``on_gpu``: without a probe of a lossless path, a lossy path that passed wins unmeasured; ``untimed``
    (:func:`untimed_path`): taken where the quality check passed it, nothing else weighed.
    Deterministic.

    Example:
        >>> passed = {"torch-bf16": (True, "passed", None)}
        >>> decide(["torch-fp32", "torch-bf16"], {}, {}, passed, untimed="torch-bf16").reason
        'the CPU has AMX-BF16: torch-bf16 taken without a probe'
    """
    excluded = dict(excluded)
    allowed = []
    for path in cands:
        ok, why, _ = checks.get(path, (not is_lossy(path), "not checked", None))
        if ok or forced_precision:
            allowed.append(path)
        else:
            excluded[path] = f"quality check: {why}"
    if not allowed:
        allowed = ["torch-fp32"]  # always possible
    if untimed in allowed:
        return _decide_untimed(untimed, allowed, excluded, checks)
    if on_gpu and not any(probe.get(p, 0.0) > 0 for p in allowed if not is_lossy(p)):
        return _decide_on_gpu(allowed, excluded, checks)
    order = {p: i for i, p in enumerate(dict.fromkeys([*cands, *PATHS]))}  # cands' order, then PATHS'

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
    verdict = checks.get(best)
    return Choice(
        path=best,
        reason=reason,
        probe={k: round(v, 1) for k, v in probe.items()},
        quality_check=verdict[1] if verdict and is_lossy(best) else "",
        quality_check_figures=verdict[2] if verdict else None,
        excluded=excluded,
    )


def _decide_on_gpu(allowed: list[str], excluded: dict[str, str], checks: dict[str, Verdict]) -> Choice:
    """The pick for a model on a GPU with no probe at hand: the first lossy path allowed (bf16, then fp16:
    tensor cores), else torch fp32."""
    lossy = [p for p in PATHS if p in allowed and is_lossy(p)]
    best = lossy[0] if lossy else "torch-fp32"
    reason = "half precision on the GPU" if lossy else "the exact path on the GPU"
    reason = reason if len(allowed) > 1 else "the only candidate"
    return _unweighed(best, reason, "not chosen", allowed, excluded, checks)


def _decide_untimed(
    path: str, allowed: list[str], excluded: dict[str, str], checks: dict[str, Verdict]
) -> Choice:
    """The pick where the CPU's features settle it (:func:`untimed_path`): ``path``, which passed."""
    reason = f"the CPU has AMX-BF16: {path} taken without a probe"
    return _unweighed(
        path, reason, f"not timed: {path} is taken on a CPU with AMX-BF16", allowed, excluded, checks
    )


def _unweighed(
    best: str,
    reason: str,
    why_not: str,
    allowed: list[str],
    excluded: dict[str, str],
    checks: dict[str, Verdict],
) -> Choice:
    """The choice of ``best`` made without a probe, each other allowed path excluded with ``why_not``."""
    for p in allowed:
        if p != best:
            excluded.setdefault(p, why_not)
    verdict = checks.get(best)
    return Choice(
        path=best,
        reason=reason,
        quality_check=verdict[1] if verdict and is_lossy(best) else "",
        quality_check_figures=verdict[2] if verdict else None,
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
    job_items: int = 0,
) -> Selection:
    """Choose ``target``'s inference path (see the module docstring). Runners built while probing are
    returned so that the chosen one is not built twice.

    ``probe_missing``: time the candidates the cached probe lacks (else they count as unmeasured);
    ``use_probe``: read the cached probe at all (else the first candidate in :data:`PATHS` order that the
    quality check allows); ``exclude``: paths to leave out, with why (e.g. one whose set-up failed);
    ``job_items``: the size of the job the path is for (0: unknown), below which the paths the cached probe
    lacks are not timed when they are all exact CPU paths (:func:`nlsim.inference.probe.too_small_to_probe`;
    a lossy path, or a GPU's half precision, is taken on a timing only). A model on a GPU is probed per GPU
    kind (:mod:`nlsim.inference.probe`)."""
    import torch  # deferred: heavy or optional, loaded only when needed

    check_options(backend, precision)
    cpu = cpu or cpu_info()
    threads = int(threads or torch.get_num_threads())
    gpu = gpu_info(target.device)
    if onnx_ok is None:
        from nlsim.inference.onnx import onnxruntime_available

        onnx_ok = onnxruntime_available()
    cands, excluded = _candidates(backend, precision, cpu, onnx_ok, gpu, exclude or {})
    requested = {"backend": backend, "precision": precision}
    device = str(target.device)
    record, found = (None, "")
    if any(is_lossy(p) for p in cands):
        record, found = load_quality_check(target.kind, target.identity(), target.folder())
    checks = {p: quality_verdict(record, p, device) for p in cands if is_lossy(p)}
    forced_precision = precision != "auto"
    runners: dict[str, Any] = {}
    alive = [p for p in cands if forced_precision or checks.get(p, (True,))[0]]
    probe: dict[str, float] = {}
    small, too_small, unexported = "", False, ""  # too_small: a job too small to time, its paths untimed
    mode = "off" if not use_probe else "on" if probe_missing else "cached"
    settled = "" if forced_precision else untimed_path(alive, cpu, gpu is not None, mode)
    if len(alive) > 1 and use_probe and not settled:
        exact_cpu = gpu is None and not any(is_lossy(p) for p in alive)  # else the timing picks precision
        small = (
            too_small_to_probe(target, alive, threads, cpu, job_items) if probe_missing and exact_cpu else ""
        )
        probe = probe_rates(
            target, alive, threads, cpu, runners, excluded, time_missing=probe_missing and not small, gpu=gpu
        )
        cands = [p for p in cands if p not in excluded]
        too_small = bool(small) and not any(probe.get(p, 0.0) > 0 for p in alive)
        if too_small:
            cands, unexported = no_export_first(target, cands)
    choice = decide(
        cands,
        excluded,
        probe,
        checks,
        forced_precision=forced_precision,
        on_gpu=gpu is not None,
        untimed=settled,
    )
    if too_small:
        choice.reason += f"; not timed: {small}{unexported}"
    choice.requested, choice.forced = requested, backend != "auto" and precision != "auto"
    _where(choice, cpu, gpu, device)
    # a path whose figures came from a later record than the model's own names that record's file
    choice.quality_check_file = (
        record_entry(record, entry_key(choice.path, device)).get("checked_in") or found
    )
    if choice.lossy and not choice.quality_check:
        _, why, figures = quality_verdict(record, choice.path, device)
        choice.quality_check, choice.quality_check_figures = why, figures
    return Selection(choice, runners)


def _where(choice: Choice, cpu: CpuInfo, gpu: Any, device: str) -> None:
    """Say in ``choice`` where it runs (the CPU, or the GPU), and in its reason what the CPU lacks to run
    its path fast (:func:`nlsim.inference.paths.missing_isa`): only a precision asked for gets such a path,
    ``auto`` leaves it out."""
    choice.cpu, choice.device = cpu.describe(), device if gpu is None else f"{device}: {gpu.describe()}"
    lacking = missing_isa(choice.path, cpu) if gpu is None else ""
    if lacking:
        choice.reason += f"; {lacking}: likely slower than fp32"


def _candidates(
    backend: str, precision: str, cpu: CpuInfo, onnx_ok: bool, gpu: Any, exclude: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """:func:`select`'s candidates (:func:`nlsim.inference.paths.candidates`) less ``exclude``'s, and why
    each other path is out; a :class:`ConfigError` when none is left."""
    cands, excluded = candidates(backend, precision, cpu, onnx_ok=onnx_ok, gpu=gpu)
    for path, why in exclude.items():
        if path in cands and path != "torch-fp32":
            cands.remove(path)
            excluded[path] = why
    if not cands:
        where = "here" if gpu is None else f"on the GPU ({gpu.name})"
        raise ConfigError(
            f"no way to run backend={backend!r} precision={precision!r} {where}: "
            + "; ".join(f"{p}: {why}" for p, why in excluded.items() if why)
        )
    return cands, excluded


def no_export_first(target: Target, cands: list[str]) -> tuple[list[str], str]:
    """``cands`` for a job too small to time them (:func:`too_small_to_probe`), with ``torch-fp32`` first
    where the ONNX export is not made yet, and the words that say so (else ``""``): the exact paths give the
    same numbers, and ONNX Runtime was at most 17% faster than torch on the CPUs measured, while e5-small's
    export takes about 3 s on 2 cores (its word-embedding table left out; 10-15 s with it), which a job
    under :data:`~nlsim.inference.probe.PROBE_PAYOFF` times the probe's items cannot repay (the baseline's
    1,236 validation and test texts: about 19 s in torch fp32)."""
    onnx_first = [p for p in cands if split_path(p)[0] == "onnx"][:1] == cands[:1]
    if "torch-fp32" not in cands or not onnx_first:
        return cands, ""
    from nlsim.inference.onnx import export_made  # deferred: onnxruntime is optional

    if export_made(target):
        return cands, ""
    first = ["torch-fp32"] + [p for p in cands if p != "torch-fp32"]
    return first, " (torch-fp32 first: no ONNX export yet, which a job this small cannot repay)"


def settle(
    target: Target,
    what: str,
    *,
    backend: str = "auto",
    precision: str = "auto",
    threads: int | None = None,
    announce_as: Callable[[str, Choice], None] | None = None,
    job_items: int = 0,
) -> tuple[Choice, Any]:
    """The one loop that chooses, builds and falls back, for a model of any kind: :func:`select` the path,
    build its runner (``None``: torch fp32), and when a path cannot be set up here, leave it out and choose
    again, with a warning that says why (a forced path, or torch fp32, raises instead). The choice is
    announced (:func:`announce`; ``what`` names the model), unless it is plain torch fp32 that was asked
    for. ``job_items``: the size of the job the path is settled for (:func:`select`).

    Example:
        >>> import torch
        >>> from types import SimpleNamespace
        >>> t = Target(kind="encoder", identity=lambda: "x", weights=lambda: "x",
        ...            model=torch.nn.Linear(2, 2), forward=lambda m, f: m(f["x"]), tokenizer=None,
        ...            max_length=8, check_batches=list, probe_shapes=(), output="y")
        >>> choice, runner = settle(t, "a model", backend="torch", precision="fp32")
        >>> choice.path, runner is None
        ('torch-fp32', True)
    """
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
            job_items=job_items,
        )
        choice = sel.choice
        try:
            runner = sel.runners.get(choice.path) or target.build(choice.path, threads)
            break
        except Exception as exc:  # noqa: BLE001 - another path always works; say why this one did not
            if choice.forced or choice.path == "torch-fp32":
                raise
            why = f"could not be set up ({type(exc).__name__}: {exc})"
            warn(f"{what}: {choice.path} {why}; choosing again")
            excluded[choice.path] = why
    if not (choice.forced and choice.path == "torch-fp32"):  # plain torch, asked for: nothing to say
        (announce_as or announce)(what, choice)
    return choice, runner


@dataclass
class LossyWorth:
    """Which lossy paths can pay off where a model runs (:func:`weigh_lossy`): those worth a quality check
    (``keep``, fastest first where the probe timed them), why each other cannot (``skipped``), the probe's
    items per second by path (``rates``; empty without a probe, or on a GPU) and the runners the probe built
    on the way (``runners``), so that a quality check does not build them again."""

    keep: list[str]
    skipped: dict[str, str]
    rates: dict[str, float] = field(default_factory=dict)
    runners: dict[str, Any] = field(default_factory=dict)
    enough: str = ""
    """The path :func:`untimed_path` takes here, first in ``keep``: once it passes, the others need no check
    (``""``: the probe ordered ``keep``)."""


def weigh_lossy(
    target: Target, threads: int | None = None, cpu: CpuInfo | None = None, *, keep_runners: bool = False
) -> LossyWorth:
    """The lossy paths that can pay off where ``target`` runs, and why each other lossy path cannot.

    On a GPU: the half precisions it has (:meth:`nlsim.inference.gpu.GpuInfo.half_paths`), checked there.
    On the CPU, a lossy path is worth its quality check only when the CPU has the instructions for it
    (:func:`candidates` with ``auto``) and the probe (:func:`probe_rates`, cached per CPU kind) finds it
    at least :data:`LOSSY_MIN_GAIN` times faster than the best lossless path: ``auto`` would never take
    any other. On a CPU without VNNI or bf16 instructions nothing is left, and nothing is probed. Without
    a probe (``NLSIM_PROBE=off``, or ``cached`` with nothing cached) every CPU candidate is checked: nothing
    says it cannot pay off; so is a lossy path the probe holds no timing of (``cached`` with only some
    paths cached). On a CPU with AMX-BF16 nothing is probed (:func:`untimed_path`): torch-bf16 first, the
    others after it unmeasured, and ``enough`` says that once it passes they need no check.
    ``keep_runners``: keep the runners the probe built (else they are let go).
    """
    import torch  # deferred: heavy or optional, loaded only when needed

    from nlsim.inference.onnx import onnxruntime_available

    cpu = cpu or cpu_info()
    threads = int(threads or torch.get_num_threads())
    gpu = gpu_info(target.device)
    cands, excluded = candidates("auto", "auto", cpu, onnx_ok=onnxruntime_available(), gpu=gpu)
    skipped = {p: why for p, why in excluded.items() if is_lossy(p)}
    lossy = [p for p in cands if is_lossy(p)]
    if not lossy or gpu is not None:
        return LossyWorth(lossy, skipped)
    return _worth_on_cpu(target, cands, lossy, skipped, threads, cpu, keep_runners)


def _worth_on_cpu(
    target: Target,
    cands: list[str],
    lossy: list[str],
    skipped: dict[str, str],
    threads: int,
    cpu: CpuInfo,
    keep_runners: bool,
) -> LossyWorth:
    """:func:`weigh_lossy` for a model on the CPU: the probe decides, unless the CPU's features settle the
    order (:func:`untimed_path`: then nothing is timed, that path first, the others after it unmeasured)."""
    mode = probe_mode()
    open_paths = [p for p in lossy if p not in skipped]
    first = untimed_path(open_paths, cpu, False, mode)
    if first:
        return LossyWorth([first, *(p for p in open_paths if p != first)], skipped, enough=first)
    rates: dict[str, float] = {}
    runners: dict[str, Any] = {}
    if mode != "off":
        rates = probe_rates(target, cands, threads, cpu, runners, skipped, time_missing=mode == "on")
    best = max((rates.get(p, 0.0) for p in cands if not is_lossy(p)), default=0.0)
    keep = []
    for path in lossy:
        if path in skipped:
            continue
        rate = rates.get(path, 0.0)
        if best > 0 and path in rates and rate < LOSSY_MIN_GAIN * best:  # one never timed may pay off
            skipped[path] = (
                f"not faster on this CPU: {rate:.0f} items/s in the probe against {best:.0f} for the best "
                f"lossless path (needs {LOSSY_MIN_GAIN}x)"
            )
        else:
            keep.append(path)
    order = {p: i for i, p in enumerate(keep)}
    keep.sort(key=lambda p: (-rates.get(p, 0.0), order[p]))  # fastest first; the unmeasured in path order
    kept = {p: r for p, r in runners.items() if p in keep} if keep_runners else {}
    return LossyWorth(keep, skipped, {p: r for p, r in rates.items() if r > 0}, kept)


def announce(what: str, choice: Choice) -> None:
    """Say which path a model runs on (the log line every run prints); a lossy path that was asked for and
    not passed by the quality check is a warning."""
    line = f"{what}: {choice.describe()}"
    asked = choice.requested.get("precision") not in (None, "auto")
    if asked and choice.lossy and not choice.quality_check.startswith("passed"):
        warn(f"{line} -- asked for; the quality check has not passed it")
    else:
        say(line)
