"""The arithmetic a training step runs in: fp32, or bfloat16 autocast where the hardware has it.

``bf16`` autocast runs the matrix products of the trained layers in bfloat16 and keeps the weights, the
optimizer state, the loss and the pooled vectors in fp32. It pays off only where the hardware computes
bf16 natively: a CPU with ``avx512_bf16`` or AMX-BF16 (:mod:`nlsim.inference.cpu`), or a CUDA GPU that
supports it; elsewhere bf16 is emulated and slower, so ``auto`` stays in fp32. Evaluation, calibration
and the saved weights are fp32 either way. The quality of bf16 training against fp32 on the annotated
pairs is measured by ``benchmarks/bench_finetune_speed.py --quality`` (docs/experiments.md).

The autocast here keeps no cache of the weights' bf16 copies. torch keeps that cache for the whole process
(pytorch/pytorch#86136 made it global) and empties it whenever any thread leaves its outermost autocast
block: with two trainings side by side (:mod:`nlsim.training.side_by_side`), the other training's step
could empty it in the middle of this one's forward pass, so that a weight used twice (two chunks of a
batch) was cast once or twice depending on the timing, and its gradient summed in bf16 or in fp32: models
that differed in the sixth digit from one run to the next. Without the cache, each use casts the weight
afresh, whatever the other thread does (one cast of the trained weights per chunk: a small cost beside
the products).

Example:
    >>> import torch
    >>> resolve("fp32", torch.device("cpu"))
    ('fp32', 'asked for')
    >>> with autocast("fp32", torch.device("cpu")):
    ...     torch.ones(2).dtype
    torch.float32
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from nlsim.errors import ConfigError
from nlsim.inference.cpu import cpu_info
from nlsim.training.config import TRAIN_PRECISIONS


def resolve(setting: str, device: torch.device) -> tuple[str, str]:
    """``(precision, why)``: what ``setting`` (``auto``, ``fp32``, ``bf16``) means on ``device``."""
    if setting not in TRAIN_PRECISIONS:
        raise ConfigError(f"unknown training precision {setting!r} (use {', '.join(TRAIN_PRECISIONS)})")
    if setting != "auto":
        return setting, "asked for"
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return "bf16", "the GPU computes bf16"
        return "fp32", "the GPU has no bf16"
    isa = cpu_info().bf16_isa
    if isa is not None:
        return "bf16", f"the CPU has {isa}"
    return "fp32", "the CPU has no bf16 instructions (avx512_bf16 or AMX)"


def autocast(precision: str, device: torch.device) -> Any:
    """A context that runs the forward pass in ``precision`` (a no-op for fp32), without the cache of cast
    weights (see the module docstring: the same numbers whatever another thread does)."""
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()
