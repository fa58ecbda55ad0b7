"""The CPU in hand: its model name and the instruction sets that decide which precision pays off.

Low precision is only fast where the CPU has the instructions for it: int8 needs VNNI (``avx512_vnni``,
``avx_vnni``) or AMX-INT8 (``amx_int8``), otherwise ONNX Runtime and oneDNN fall back to slower
multiply-add sequences (and ONNX Runtime's u8×s8 path can saturate); bf16 needs ``avx512_bf16`` or
AMX-BF16 (``amx_bf16``), otherwise oneDNN emulates it with fp32 arithmetic. :func:`cpu_info` reads
``/proc/cpuinfo`` once (Linux; elsewhere the model name from :mod:`platform` and no flags, so only the
lossless paths are tried), and leaves out the AMX flags where the kernel does not let the process use
AMX's tiles (:func:`amx_usable`). ``NLSIM_CPU_FLAGS`` (space-separated) replaces the flags read, for tests and
for trying another machine's rules (:func:`nlsim.environment.cpu_flags`: one of :data:`ISA_FLAGS` misspelt
is refused).

Example:
    >>> cpu = CpuInfo(model="AMD EPYC", flags=("avx512f", "avx512_vnni", "avx512_bf16"), cores=2)
    >>> cpu.describe()
    'AMD EPYC (2 cores; avx512f avx512_vnni avx512_bf16; no AMX)'
    >>> cpu.int8_isa, cpu.bf16_isa
    ('avx512_vnni', 'avx512_bf16')
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlsim.environment import ISA_FLAGS, cpu_flags


@dataclass(frozen=True)
class CpuInfo:
    """A CPU's model name, the :data:`ISA_FLAGS` it has (:data:`nlsim.environment.ISA_FLAGS`), and its core
    count."""

    model: str
    flags: tuple[str, ...]
    cores: int = 0

    @property
    def has_amx(self) -> bool:
        return "amx_tile" in self.flags

    @property
    def int8_isa(self) -> str | None:
        """The instructions int8 matrix products run on here: ``amx_int8``, ``avx512_vnni``, ``avx_vnni``, or
        ``None`` (no VNNI: int8 is not worth trying)."""
        for flag in ("amx_int8", "avx512_vnni", "avx_vnni"):
            if flag in self.flags:
                return flag
        return None

    @property
    def bf16_isa(self) -> str | None:
        """``amx_bf16``, ``avx512_bf16``, or ``None`` (bf16 would be emulated: not worth trying)."""
        for flag in ("amx_bf16", "avx512_bf16"):
            if flag in self.flags:
                return flag
        return None

    @property
    def key(self) -> str:
        """A short id of the CPU kind (model name, ISA flags, cores): probes are cached under it."""
        blob = f"{self.model}|{' '.join(self.flags)}|{self.cores}"
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """One line: model name, cores, the ISA flags that matter, and whether it has AMX."""
        flags = " ".join(self.flags) or "no AVX2/AVX-512 flags read"
        amx = "AMX" if self.has_amx else "no AMX"
        return f"{self.model} ({self.cores} cores; {flags}; {amx})"

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "flags": list(self.flags), "cores": self.cores, "amx": self.has_amx}


def parse_cpuinfo(text: str) -> tuple[str, set[str]]:
    """The first ``model name`` and the ``flags`` of a ``/proc/cpuinfo`` text.

    Example:
        >>> model, flags = parse_cpuinfo("model name\\t: Intel Xeon\\nflags\\t\\t: fpu avx512f amx_tile\\n")
        >>> model, sorted(flags)
        ('Intel Xeon', ['amx_tile', 'avx512f', 'fpu'])
    """
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return model, flags


AMX_FLAGS = ("amx_tile", "amx_bf16", "amx_int8")


def amx_usable() -> bool:
    """Whether the kernel lets this process use AMX's tiles (Linux asks each process to request them; a
    virtual machine may list the flags and refuse): torch's own request, as its kernels make it."""
    import torch  # deferred: heavy, and loaded by every caller that would use AMX anyway

    init = getattr(getattr(torch._C, "_cpu", None), "_init_amx", None)
    return bool(init()) if init is not None else True


@functools.lru_cache(maxsize=1)
def _read() -> tuple[str, frozenset[str]]:
    """The model name and flags of ``/proc/cpuinfo``, the AMX flags left out where this process may not use
    the tiles (:func:`amx_usable`)."""
    try:
        model, flags = parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        model, flags = "", set()
    if flags & set(AMX_FLAGS) and not amx_usable():
        flags -= set(AMX_FLAGS)
    return model or platform.processor() or platform.machine() or "unknown CPU", frozenset(flags)


def cpu_info() -> CpuInfo:
    """The CPU of this machine (see the module docstring; ``NLSIM_CPU_FLAGS`` overrides the flags)."""
    model, flags = _read()
    override = cpu_flags()
    if override is not None:
        flags = override
    return CpuInfo(model=model, flags=tuple(f for f in ISA_FLAGS if f in flags), cores=os.cpu_count() or 0)
