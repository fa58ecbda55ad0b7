"""Same-story ranking: every same-story pair of a batch above every other pair of it (RankNet on logits).

``mean over (i, j) with story_i and not story_j of softplus(logit_j - logit_i)``: a loss on the
same-story decision itself, beside the cross-encoder's graded one (``CrossEncoderConfig.rank_weight``). A
batch without a same-story pair, or with nothing else, adds nothing.

Example:
    >>> import torch
    >>> logits = torch.tensor([3.0, -3.0])
    >>> round(float(story_ranking_loss(logits, torch.tensor([True, False]))), 4)  # softplus(-6)
    0.0025
    >>> float(story_ranking_loss(logits, torch.tensor([False, False])))  # no same-story pair
    0.0
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def story_ranking_loss(logits: torch.Tensor, story: torch.Tensor) -> torch.Tensor:
    """The mean pairwise logistic loss of the batch's (same story, other) pairs of pairs; 0 if it has none.

    ``story`` marks the batch's same-story pairs (boolean, one per logit).
    """
    if not bool(story.any()) or bool(story.all()):
        return logits.sum() * 0.0  # keeps the graph and the dtype
    diff = logits[~story][None, :] - logits[story][:, None]  # other j minus same story i
    return F.softplus(diff).mean()
