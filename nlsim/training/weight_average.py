"""An exponential moving average of the trained weights, validated and kept in their place.

Fine-tuning on a few hundred pairs moves the weights by noisy steps: the model at the end of an epoch is one
draw around where the steps lead, and which draw depends on the seed. The average of the weights over the
last steps sits nearer their centre. With ``decay`` above 0 the training keeps that average beside the
weights it steps (:meth:`WeightAverage.update` after each optimizer step, in fp32 whatever the step's
arithmetic), validates the averaged weights instead of the stepped ones (:meth:`WeightAverage.applied`),
and keeps them when they are the best. Early on the average follows the weights closely (its decay is
``min(decay, (1 + steps) / (10 + steps))``), so that it does not hold on to the starting point.

Example:
    >>> import torch
    >>> w = torch.nn.Parameter(torch.zeros(2))
    >>> average = WeightAverage([w], decay=0.5)
    >>> with torch.no_grad():
    ...     _ = w.add_(2.0)
    >>> average.update()  # the first step's decay is 2/11: 2/11 * 0 + 9/11 * 2
    >>> with average.applied():
    ...     [round(x, 3) for x in w.tolist()]
    [1.636, 1.636]
    >>> w.tolist()  # the stepped weights are back
    [2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch


class WeightAverage:
    """The moving average of ``params`` (see the module docstring); ``changed`` is called whenever the
    weights in place change outside an optimizer step (a compiled runner then reads them again)."""

    def __init__(
        self, params: Sequence[torch.Tensor], decay: float, changed: Callable[[], None] = lambda: None
    ) -> None:
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must be in (0, 1), got {decay}")
        self.params = list(params)
        self.decay = float(decay)
        self.changed = changed
        self.steps = 0
        self.average = [p.detach().float().clone() for p in self.params]

    @torch.no_grad()
    def update(self) -> None:
        """Move the average towards the weights after one optimizer step."""
        self.steps += 1
        decay = min(self.decay, (1 + self.steps) / (10 + self.steps))
        for kept, p in zip(self.average, self.params, strict=True):
            kept.lerp_(p.detach().float(), 1.0 - decay)

    @torch.no_grad()
    def put(self) -> None:
        """The averaged weights in place of the stepped ones, for good."""
        for p, kept in zip(self.params, self.average, strict=True):
            p.copy_(kept)
        self.changed()

    @contextmanager
    def applied(self) -> Iterator[None]:
        """The averaged weights in place of the stepped ones inside the block; the stepped ones after it."""
        stepped = [p.detach().clone() for p in self.params]
        self.put()
        try:
            yield
        finally:
            with torch.no_grad():
                for p, mine in zip(self.params, stepped, strict=True):
                    p.copy_(mine)
            self.changed()


@contextmanager
def maybe_applied(average: WeightAverage | None) -> Iterator[None]:
    """:meth:`WeightAverage.applied` when there is an average, else nothing."""
    if average is None:
        yield
        return
    with average.applied():
        yield
