"""Dropout whose masks come 64 random bits at a time: the same dropout, a fraction of torch's cost on a CPU.

On a CPU, torch draws a dropout mask one random number per element (a Bernoulli draw): a mask of 1,600
tokens × 384 features takes about as long as half a 1,600 × 384 × 1,536 matrix product, and training
draws two such masks per layer and a larger one over the attention's probabilities (which also keeps
``scaled_dot_product_attention`` off its fused kernel). A step of the upper layers spent about a tenth of its
time there. Here one 64-bit draw of torch's own generator gives four 16-bit lanes; each lane's low 15 bits
decide one element: dropped when below ``round(p * 32768)``, so the dropout rate is ``p`` to within
1/65,536 (0.1 → 0.100006) and the kept elements are scaled by the exact inverse of the rate kept.
Everything else is dropout as torch does it: the masks follow ``torch.manual_seed``, they are drawn afresh
at each call, and the backward pass multiplies by the same mask. Inside :func:`drawn_from` a thread draws its
masks from a generator of its own instead (two trainings side by side, :mod:`nlsim.training.side_by_side`,
then never take each other's numbers). On a GPU torch's fused dropout is fast already and is used as it is
(:func:`bit_masks_for`).

Example:
    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> x = torch.ones(1000, 100)
    >>> y = dropout(x, 0.1)
    >>> round(float((y == 0).float().mean()), 2), round(float(y.max()), 4)
    (0.1, 1.1111)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

LANE_BITS = 15
"""The bits of a 16-bit lane that decide one element (a 63-bit draw leaves each lane's low 15 uniform)."""
LANES = 4
"""16-bit lanes in one 64-bit draw."""


_drawing = threading.local()
"""This thread's own generator of dropout masks (:func:`drawn_from`), if it has one."""


@contextmanager
def drawn_from(generator: torch.Generator) -> Iterator[None]:
    """Inside the block, the masks this thread draws (:func:`dropout`, :func:`attention`) come from
    ``generator``, not from torch's default one; other threads are not affected.

    Example:
        >>> with drawn_from(torch.Generator().manual_seed(3)):
        ...     a = dropout(torch.ones(64), 0.5)
        >>> with drawn_from(torch.Generator().manual_seed(3)):
        ...     b = dropout(torch.ones(64), 0.5)
        >>> bool(torch.equal(a, b))
        True
    """
    before = getattr(_drawing, "generator", None)
    _drawing.generator = generator
    try:
        yield
    finally:
        _drawing.generator = before


def bit_masks_for(device: torch.device | str) -> bool:
    """Whether :func:`dropout` and :func:`attention` draw their own masks on ``device``: on CPUs, where
    torch's Bernoulli masks are slow; not on GPUs, whose fused kernels are fast."""
    return torch.device(device).type == "cpu"


def _own_masks(device: torch.device, bit_masks: bool | None) -> bool:
    """``bit_masks`` where given, else :func:`bit_masks_for` ``device``."""
    return bit_masks_for(device) if bit_masks is None else bit_masks


def drop_threshold(p: float) -> int:
    """A lane whose low :data:`LANE_BITS` bits fall below this is dropped: ``p`` on a 15-bit scale."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout rate must be in [0, 1), got {p}")
    return int(round(p * (1 << LANE_BITS)))


def keep_scale(
    shape: torch.Size | tuple[int, ...], p: float, *, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """A mask of ``shape``: 0 where an element is dropped, ``1 / (1 - rate)`` where it is kept."""
    threshold = drop_threshold(p)
    n = math.prod(shape)
    own = getattr(_drawing, "generator", None)  # None: torch's default generator
    draws = torch.empty((n + LANES - 1) // LANES, dtype=torch.int64, device=device).random_(generator=own)
    lanes = draws.view(torch.int16)[:n].view(shape)
    keep = (lanes & ((1 << LANE_BITS) - 1)) >= threshold
    return keep.to(dtype).mul_((1 << LANE_BITS) / ((1 << LANE_BITS) - threshold))


def dropout(x: torch.Tensor, p: float, *, bit_masks: bool | None = None) -> torch.Tensor:
    """``F.dropout(x, p, training=True)``, with a mask from 64-bit draws where ``bit_masks`` (``None``:
    :func:`bit_masks_for` ``x``'s device)."""
    if p == 0.0:
        return x
    if not _own_masks(x.device, bit_masks):
        return F.dropout(x, p, training=True)
    return x * keep_scale(x.shape, p, dtype=x.dtype, device=x.device)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    keys: torch.Tensor,
    p: float,
    scale: float,
    *,
    bit_masks: bool | None = None,
) -> torch.Tensor:
    """``F.scaled_dot_product_attention(q, k, v, attn_mask=keys, dropout_p=p, scale=scale)`` with the
    attention probabilities' dropout mask from 64-bit draws where ``bit_masks`` (``None``:
    :func:`bit_masks_for` ``q``'s device). ``keys`` is a boolean mask, true where a key may be read; every
    query must have one. Without dropout it is torch's own call (its fused kernel)."""
    if p == 0.0 or not _own_masks(q.device, bit_masks):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keys, dropout_p=p, scale=scale)
    scores = torch.matmul(q * scale, k.transpose(-1, -2)).masked_fill(~keys, float("-inf"))
    probs = scores.softmax(dim=-1)
    return torch.matmul(probs * keep_scale(probs.shape, p, dtype=probs.dtype, device=probs.device), v)
