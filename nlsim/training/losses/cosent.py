"""CoSENT: a ranking loss over all pairs of pairs in the batch (Su 2022; sentence-transformers' CoSENTLoss).

``log(1 + sum over (i, j) with score_i > score_j of exp(scale * (cos_j - cos_i)))``: only the order of
the cosines matters, which suits a Spearman objective and e5's bunched cosines.

Example:
    >>> import torch
    >>> u = torch.eye(2); v = torch.eye(2)
    >>> good = cosent_loss(u, v, torch.tensor([1.0, 1.0]))  # no ordered pair: log(1) = 0
    >>> float(good)
    0.0
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def cosent_loss(u: torch.Tensor, v: torch.Tensor, scores: torch.Tensor, scale: float = 20.0) -> torch.Tensor:
    """CoSENT loss for one batch (``scale`` 20 as in the paper)."""
    cos = F.cosine_similarity(u, v, dim=-1) * scale
    diff = cos[None, :] - cos[:, None]  # diff[i, j] = cos_j - cos_i
    scores = scores.to(cos.dtype)
    keep = scores[:, None] > scores[None, :]  # i should rank above j
    diff = diff.masked_fill(~keep, float("-inf"))
    flat = torch.cat([torch.zeros(1, dtype=cos.dtype, device=cos.device), diff.flatten()])
    return torch.logsumexp(flat, dim=0)
