"""The GPU a model sits on: its name and whether it computes in bfloat16, which decide the half-precision
paths worth trying there.

On a CUDA device the lossy paths are the model cast to half precision: ``torch-bf16`` where the GPU has
bfloat16 arithmetic (Ampere and newer; :func:`torch.cuda.is_bf16_supported`), and ``torch-fp16``
everywhere. Both can run the matrix products on tensor cores, but a small model's batches can be set by
kernel launches and casts instead (an H100 embedded 5,790 items/s in bf16 against 9,272 in fp32), so
``auto`` takes a half precision that passed the quality check only where the probe, cached per GPU kind
(:attr:`GpuInfo.key`), finds it faster. int8 and ONNX Runtime run on the CPU only here.

Example:
    >>> gpu = GpuInfo(name="NVIDIA H100 80GB HBM3", bf16=True)
    >>> gpu.describe(), gpu.half_paths(), gpu.key
    ('NVIDIA H100 80GB HBM3 (bf16, fp16)', ('torch-bf16', 'torch-fp16'), 'NVIDIA-H100-80GB-HBM3')
    >>> GpuInfo(name="Tesla T4", bf16=False).half_paths()
    ('torch-fp16',)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuInfo:
    """A CUDA device's name and whether it has bfloat16 arithmetic."""

    name: str
    bf16: bool

    def describe(self) -> str:
        return f"{self.name} ({'bf16, fp16' if self.bf16 else 'fp16; no bf16'})"

    @property
    def key(self) -> str:
        """The GPU kind as a folder name (probes are cached under it)."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.name).strip("-")[:64] or "gpu"

    def half_paths(self) -> tuple[str, ...]:
        """The lossy paths this GPU runs fast, in the order a tie is broken (bf16 keeps fp32's range)."""
        return ("torch-bf16", "torch-fp16") if self.bf16 else ("torch-fp16",)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bf16": self.bf16}


def cuda_missing(device: str) -> str | None:
    """Why ``device`` cannot be used here: it names CUDA, and this torch is built without CUDA or sees no
    CUDA device (``None``: it can, or it names no GPU), in words for a person.

    Example:
        >>> cuda_missing("cpu") is None
        True
    """
    import torch  # deferred: heavy or optional, loaded only when needed

    if not device.startswith("cuda") or torch.cuda.is_available():
        return None
    why = "this torch is built without CUDA" if torch.version.cuda is None else "torch sees no CUDA device"
    return f"{why} (torch {torch.__version__})"


def gpu_info(device: Any) -> GpuInfo | None:
    """The :class:`GpuInfo` of a torch ``device`` (``None`` for the CPU)."""
    import torch  # deferred: heavy or optional, loaded only when needed

    device = torch.device(device)
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    return GpuInfo(
        name=torch.cuda.get_device_name(index),
        bf16=bool(torch.cuda.is_bf16_supported()),
    )
