"""What nlsim reads of a BERT-style encoder's layers: mean pooling of the last hidden state, the attention
mask the layers take, and a digest of a set of tensors.

Example:
    >>> import hashlib
    >>> h = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [9.0, 9.0]]])
    >>> mean_pool(h, torch.tensor([[1, 1, 0]])).tolist()
    [[2.0, 1.0]]
    >>> a, b = hashlib.sha256(), hashlib.sha256()
    >>> hash_tensors(a, "x.", {"w": torch.ones(2)}); hash_tensors(b, "x.", {"w": torch.ones(2)})
    >>> a.hexdigest() == b.hexdigest()
    True
"""

from __future__ import annotations

from typing import Any

import torch


def mean_pool(last_hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average the token vectors where ``attention_mask`` is 1.

    Example:
        >>> h = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [9.0, 9.0]]])
        >>> mean_pool(h, torch.tensor([[1, 1, 0]])).tolist()
        [[2.0, 1.0]]
    """
    mask = attention_mask.unsqueeze(-1).to(last_hidden.dtype)
    summed = (last_hidden * mask).sum(dim=1)
    counts = mask.sum(dim=1).clamp(min=1e-9)
    return summed / counts


def layer_mask(model: Any, hidden: torch.Tensor, mask: torch.Tensor) -> Any:
    """The attention mask the model's layers take, built as the model builds it."""
    from transformers.masking_utils import create_bidirectional_mask  # deferred: heavy module

    return create_bidirectional_mask(config=model.config, inputs_embeds=hidden, attention_mask=mask)


def hash_tensors(h: Any, prefix: str, state: dict[str, Any]) -> None:
    """Feed ``state``'s tensors (names with ``prefix``, dtypes, shapes and bytes) into the hash ``h``, in
    name order; ``position_ids`` buffers are left out (a constant range, absent from some files)."""
    for name in sorted(state):
        if name.endswith("position_ids"):
            continue
        _hash_value(h, prefix + name, state[name])


def _hash_value(h: Any, name: str, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.is_quantized:
            t = t.dequantize()
        t = t.to("cpu").contiguous().reshape(-1)
        h.update(f"{name}:{t.dtype}:{tuple(value.shape)}".encode())
        if t.numel():
            h.update(t.view(torch.uint8).numpy())  # the tensor's own bytes, not a copy of them
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _hash_value(h, f"{name}[{i}]", v)
    elif isinstance(value, (int, float, str, bool, type(None))):
        h.update(f"{name}={value!r}".encode())
    elif hasattr(value, "__getstate__") and type(value).__name__.endswith("PackedParams"):
        _hash_value(h, name, value.__getstate__())
    else:
        h.update(f"{name}:{type(value).__name__}".encode())
