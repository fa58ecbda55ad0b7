"""The inference paths: a backend and a precision, and which of them the options and the device allow.

``onnx-fp32`` and ``torch-fp32`` are lossless (the ONNX export is checked against torch when it is made);
``onnx-int8`` (ONNX Runtime, dynamic int8, per-channel weights, attention products and embeddings kept in
fp32), ``torch-bf16`` (the model cast to bfloat16, pooling in fp32), ``torch-fp16`` (cast to float16, on a
GPU only) and ``torch-int8`` (``torch.ao`` dynamic int8 linear layers, on the CPU only) are lossy: a run
takes one only where the model's quality check passed it (:mod:`nlsim.inference.lossy_verdict`).

Example:
    >>> split_path("onnx-int8"), is_lossy("onnx-int8"), is_lossy("torch-fp32")
    (('onnx', 'int8'), True, False)
"""

from __future__ import annotations

from nlsim.errors import ConfigError
from nlsim.inference.cpu import CpuInfo
from nlsim.inference.gpu import GpuInfo

BACKENDS = ("auto", "torch", "onnx")
PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8")
PATHS = ("onnx-fp32", "torch-fp32", "onnx-int8", "torch-bf16", "torch-fp16", "torch-int8")
"""Every inference path, in the order that breaks ties."""
LOSSLESS = ("onnx-fp32", "torch-fp32")
LOSSY = tuple(p for p in PATHS if p not in LOSSLESS)
ONNX_FP32_ISA = "avx512f"
"""Where ONNX Runtime's fp32 kernels beat torch's: the exact ONNX path goes first (it breaks ties, and is
taken unmeasured) only on a CPU with AVX-512. Without it the two read at the same speed (a cross-encoder's
pair readings on an AMD EPYC with avx2 only: 59.5 a second with ONNX Runtime, 59.6 with torch,
docs/encoders.md) and the export costs seconds for nothing: torch fp32 goes first there."""


def split_path(path: str) -> tuple[str, str]:
    """``"onnx-int8"`` -> ``("onnx", "int8")``."""
    backend, _, precision = path.partition("-")
    return backend, precision


def is_lossy(path: str) -> bool:
    return path not in LOSSLESS


def cpu_only(backend: str, precision: str) -> bool:
    """Whether the options ask for a path that runs on the CPU only (ONNX Runtime, int8).

    >>> cpu_only("onnx", "fp32"), cpu_only("auto", "int8"), cpu_only("torch", "bf16")
    (True, True, False)
    """
    return backend == "onnx" or precision == "int8"


def check_options(backend: str, precision: str) -> None:
    """Refuse unknown values and combinations no path has (ONNX Runtime has no bf16 CPU kernels)."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if backend == "onnx" and precision in ("bf16", "fp16"):
        raise ConfigError(
            f"precision {precision!r} runs on torch only (ONNX Runtime has no {precision} CPU kernels)"
        )


def candidates(
    backend: str, precision: str, cpu: CpuInfo, *, onnx_ok: bool, gpu: GpuInfo | None = None
) -> tuple[list[str], dict[str, str]]:
    """The paths the options allow for a model on the CPU (``gpu=None``) or on ``gpu``, and why each other
    path is left out.

    On the CPU a forced precision is tried whatever the CPU (the user asked for it); ``auto`` only tries
    int8 with VNNI/AMX and bf16 with avx512_bf16/AMX-BF16; fp16 is a GPU path. On a GPU the paths are torch
    fp32 and the half precisions the GPU has (:meth:`GpuInfo.half_paths`); int8 and ONNX Runtime run on the
    CPU only, and asking for them there is refused rather than moved off the GPU unsaid. The paths come in
    the order that breaks ties (:data:`PATHS`), the exact ONNX path after torch's on a CPU without
    :data:`ONNX_FP32_ISA`.

    Example:
        >>> cpu = CpuInfo(model="x", flags=("avx512f",), cores=2)
        >>> candidates("auto", "auto", cpu, onnx_ok=True)[0]
        ['onnx-fp32', 'torch-fp32']
        >>> candidates("auto", "auto", CpuInfo(model="x", flags=("avx2",), cores=2), onnx_ok=True)[0]
        ['torch-fp32', 'onnx-fp32']
        >>> candidates("auto", "auto", cpu, onnx_ok=True, gpu=GpuInfo("H100", bf16=True))[0]
        ['torch-fp32', 'torch-bf16', 'torch-fp16']
    """
    check_options(backend, precision)
    keep: list[str] = []
    out: dict[str, str] = {}
    for path in PATHS:
        if gpu is None:
            why = _left_out(path, backend, precision, cpu, onnx_ok=onnx_ok)
        else:
            why = _left_out_on_gpu(path, backend, precision, gpu)
        if why:
            out[path] = why
        else:
            keep.append(path)
    if gpu is None and ONNX_FP32_ISA not in cpu.flags and {"onnx-fp32", "torch-fp32"} <= set(keep):
        keep.remove("onnx-fp32")
        keep.insert(keep.index("torch-fp32") + 1, "onnx-fp32")
    return keep, out


def _left_out(path: str, backend: str, precision: str, cpu: CpuInfo, *, onnx_ok: bool) -> str:
    """Why ``path`` is not a candidate on the CPU ('' when it is)."""
    b, p = split_path(path)
    if backend != "auto" and b != backend:
        return f"backend {backend} asked"
    if precision not in ("auto", p):
        return f"precision {precision} asked"
    if p == "fp16":
        return "fp16 runs on a GPU only (no fast fp16 arithmetic on CPUs)"
    if b == "onnx" and not onnx_ok:
        return "onnxruntime is not installed"
    if precision == "auto":
        return missing_isa(path, cpu)
    return ""


def missing_isa(path: str, cpu: CpuInfo) -> str:
    """What ``cpu`` lacks to run ``path`` fast ('' when nothing): int8 without VNNI or AMX-INT8, bf16
    without avx512_bf16 or AMX-BF16 fall back to slower instruction sequences (:mod:`nlsim.inference.cpu`).

    >>> missing_isa("torch-bf16", CpuInfo("x", ("avx2",)))
    'no avx512_bf16 or AMX-BF16 on this CPU'
    >>> missing_isa("onnx-int8", CpuInfo("x", ("avx_vnni",))), missing_isa("torch-fp32", CpuInfo("x", ()))
    ('', '')
    """
    p = split_path(path)[1]
    if p == "int8" and cpu.int8_isa is None:
        return "no VNNI or AMX-INT8 on this CPU"
    if p == "bf16" and cpu.bf16_isa is None:
        return "no avx512_bf16 or AMX-BF16 on this CPU"
    return ""


def _left_out_on_gpu(path: str, backend: str, precision: str, gpu: GpuInfo) -> str:
    """Why ``path`` is not a candidate for a model on ``gpu`` ('' when it is)."""
    b, p = split_path(path)
    if backend != "auto" and b != backend:
        return f"backend {backend} asked"
    if precision not in ("auto", p):
        return f"precision {precision} asked"
    if b == "onnx":
        return "ONNX Runtime runs on the CPU only here"
    if p == "int8":
        return "int8 runs on the CPU only"
    if p == "bf16" and not gpu.bf16:
        return f"{gpu.name} has no bf16 arithmetic"
    return ""
