"""A stand-in inference target for the tests of the path choice: a 2-by-2 linear layer read from ``x``,
no tokenizer, no probe shapes."""

from __future__ import annotations

from typing import TypeVar

import torch

from nlsim.inference.target import Target

T = TypeVar("T", bound=Target)


def linear_target(name: str, model: torch.nn.Module | None = None, cls: type[T] = Target) -> T:  # type: ignore[assignment]
    """A target of class ``cls`` named ``name`` (its identity and weights), over ``model`` (a new
    ``Linear(2, 2)`` by default)."""
    return cls(
        kind="encoder",
        identity=lambda: name,
        weights=lambda: name,
        model=model if model is not None else torch.nn.Linear(2, 2),
        forward=lambda m, f: m(f["x"]),
        tokenizer=None,
        max_length=8,
        check_batches=list,
        probe_shapes=(),
        output="y",
    )
