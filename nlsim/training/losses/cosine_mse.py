"""Cosine-similarity MSE: the Sentence-BERT regression objective
(sentence-transformers' CosineSimilarityLoss).

Example:
    >>> import torch
    >>> u = torch.tensor([[1.0, 0.0], [1.0, 0.0]]); v = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    >>> round(float(cosine_mse_loss(u, v, torch.tensor([0.0, 0.5]))), 4)
    0.125
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def cosine_mse_loss(
    u: torch.Tensor, v: torch.Tensor, scores: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean squared error between ``cos(u_i, v_i)`` and ``scores_i``; with ``weights``, their weighted
    mean."""
    cos = F.cosine_similarity(u, v, dim=-1)
    if weights is None:
        return F.mse_loss(cos, scores.to(cos.dtype))
    w = weights.to(cos.dtype)
    return ((cos - scores.to(cos.dtype)) ** 2 * w).sum() / w.sum()
