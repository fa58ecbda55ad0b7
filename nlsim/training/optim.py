"""Optimisation helpers shared by the bi-encoder and cross-encoder training loops: seeding, the learning-rate
schedule, freezing the word-embedding table.

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
from typing import Any

import numpy as np
import torch


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def freeze_word_embeddings(model: Any) -> int:
    """Stop gradients into the word-embedding table; returns how many parameters were frozen."""
    emb = model.get_input_embeddings()
    emb.weight.requires_grad_(False)
    return int(emb.weight.numel())


def linear_schedule(optimizer: Any, warmup: int, total: int) -> Any:
    """LambdaLR: linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""

    def factor(step: int) -> float:
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
