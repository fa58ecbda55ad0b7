"""Training losses for a bi-encoder on graded pairs: CoSENT (the default, chosen on validation) and cosine-MSE
(the studies' recipe, ``--loss mse``).

Each loss takes the two batches of (un-normalised) sentence vectors and the gold scores in [0, 1], and
optionally each pair's weight (``weights=``).
``story_ranking_loss`` is the cross-encoder's optional same-story ranking term (on its logits).

Example:
    >>> import torch
    >>> u, v = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0]])
    >>> float(get_loss("mse")(u, v, torch.tensor([1.0])))
    0.0
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from nlsim.errors import ConfigError
from nlsim.training.losses.cosent import cosent_loss
from nlsim.training.losses.cosine_mse import cosine_mse_loss
from nlsim.training.losses.story_ranking import story_ranking_loss

LossFn = Callable[..., torch.Tensor]
LOSSES: dict[str, LossFn] = {"mse": cosine_mse_loss, "cosent": cosent_loss}


def get_loss(name: str) -> LossFn:
    """The loss function called ``name`` (``mse`` or ``cosent``)."""
    try:
        return LOSSES[name]
    except KeyError:
        raise ConfigError(f"unknown loss {name!r} (use {', '.join(LOSSES)})") from None


__all__ = ["LOSSES", "LossFn", "cosent_loss", "cosine_mse_loss", "get_loss", "story_ranking_loss"]
