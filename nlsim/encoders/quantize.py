"""Speed options for CPU inference: dynamic int8 quantization.

Example:
    >>> import torch
    >>> m = quantize_int8(torch.nn.Sequential(torch.nn.Linear(4, 4)))
    >>> type(m[0]).__name__
    'Linear'
"""

from __future__ import annotations

import warnings

import torch


def quantize_int8(model: torch.nn.Module) -> torch.nn.Module:
    """Dynamic int8 quantization of every ``nn.Linear`` (weights int8, activations quantized per batch).

    Lossy: check the Spearman drop on annotated pairs before using it (``docs/encoders.md``).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # deferred: heavy or optional, loaded only when needed
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
