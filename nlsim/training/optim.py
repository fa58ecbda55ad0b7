"""Optimisation helpers shared by the bi-encoder and cross-encoder training loops: seeding, AdamW with its
parameter groups, the learning-rate schedule, freezing the word-embedding table.

Example:
    >>> import torch
    >>> opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    >>> sched = linear_schedule(opt, warmup=2, total=4)
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(round(sched.get_last_lr()[0], 2)); opt.step(); sched.step()
    >>> lrs
    [0.5, 1.0, 1.0, 0.5]
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")
"""Parameters AdamW does not decay (biases and normalisation weights), as in BERT's recipe."""


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def adamw(named: Iterable[tuple[str, torch.nn.Parameter]], lr: float, weight_decay: float) -> Any:
    """AdamW over the parameters that train, biases and normalisation weights undecayed; the fused kernel
    where torch has it for the device (several times faster than the default on a CPU).

    Example:
        >>> lin = torch.nn.Linear(2, 1)
        >>> opt = adamw(lin.named_parameters(), lr=1e-3, weight_decay=0.01)
        >>> [g["weight_decay"] for g in opt.param_groups], sum(len(g["params"]) for g in opt.param_groups)
        ([0.01, 0.0], 2)
    """
    params = [(n, p) for n, p in named if p.requires_grad]
    groups = [
        {"params": [p for n, p in params if not any(k in n for k in NO_DECAY)], "weight_decay": weight_decay},
        {"params": [p for n, p in params if any(k in n for k in NO_DECAY)], "weight_decay": 0.0},
    ]
    groups = [g for g in groups if g["params"]] or groups[:1]
    try:
        return torch.optim.AdamW(groups, lr=lr, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=lr)


def linear_schedule(
    optimizer: Any, warmup: int, total: int, progress: Callable[[int], float] | None = None
) -> Any:
    """LambdaLR: linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``; ``progress``
    maps the optimizer steps taken onto the schedule's steps where they differ (an epoch shortened by
    :class:`EpochProgress`)."""

    def factor(taken: int) -> float:
        step = taken if progress is None else progress(taken)
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class EpochProgress:
    """Where in a schedule planned in whole epochs of ``per_epoch`` steps a loop is whose epochs may take
    fewer steps: a shortened epoch still moves the schedule by one epoch.

    Example:
        >>> progress = EpochProgress(per_epoch=10)
        >>> progress(5)  # an epoch of the planned length: one step is one schedule step
        5
        >>> progress.begin_epoch(steps_taken=10, epoch=2, steps=4)  # the second epoch takes 4 steps
        >>> progress(10), progress(12), progress(14)
        (10.0, 15.0, 20.0)
    """

    def __init__(self, per_epoch: int) -> None:
        self.per_epoch = per_epoch
        self.start_step = 0
        self.start: float = 0
        self.stride: float = 1

    def begin_epoch(self, steps_taken: int, epoch: int, steps: int) -> None:
        """Epoch ``epoch`` (from 1) starts after ``steps_taken`` optimizer steps and takes ``steps``."""
        self.start_step = steps_taken
        self.start = float((epoch - 1) * self.per_epoch)
        self.stride = self.per_epoch / max(1, steps)

    def __call__(self, taken: int) -> float:
        return self.start + (taken - self.start_step) * self.stride
