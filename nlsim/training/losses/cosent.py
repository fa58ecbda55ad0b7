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


def cosent_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    scores: torch.Tensor,
    scale: float = 20.0,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """CoSENT loss for one batch (``scale`` 20 as in the paper); with ``weights``, the term of pairs
    ``(i, j)`` counts ``weights_i * weights_j`` times (a pair drawn for a share of its kind stands for the
    ones not drawn: :func:`nlsim.training.easy_pairs.sample_easy`).

    Example:
        >>> u, v = torch.tensor([[1.0, 0.0], [1.0, 0.0]]), torch.tensor([[0.0, 1.0], [1.0, 0.0]])
        >>> scores = torch.tensor([1.0, 0.0])  # ranked the wrong way round: exp(20) counts once, then twice
        >>> plain = cosent_loss(u, v, scores)
        >>> twice = cosent_loss(u, v, scores, weights=torch.tensor([2.0, 1.0]))
        >>> round(float(twice - plain), 4)  # log(1 + 2e) - log(1 + e), e = exp(20)
        0.6931
    """
    cos = F.cosine_similarity(u, v, dim=-1) * scale
    diff = cos[None, :] - cos[:, None]  # diff[i, j] = cos_j - cos_i
    if weights is not None:
        log_w = torch.log(weights.to(cos.dtype))
        diff = diff + log_w[:, None] + log_w[None, :]
    scores = scores.to(cos.dtype)
    keep = scores[:, None] > scores[None, :]  # i should rank above j
    diff = diff.masked_fill(~keep, float("-inf"))
    flat = torch.cat([torch.zeros(1, dtype=cos.dtype, device=cos.device), diff.flatten()])
    return torch.logsumexp(flat, dim=0)
