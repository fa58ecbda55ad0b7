"""Packed sequences: the upper layers of a BERT-style encoder run on real tokens only, no padding.

A training step reads a batch of headlines of different lengths. Padded to the longest, a batch of sixteen
pair sequences of 20 to 50 tokens carries about a fifth padding, and every linear layer of the encoder (the
attention's four projections and the feed-forward block, nearly all of a step's arithmetic) computes on it
and back-propagates through it for nothing. Here the batch is one matrix of its real tokens ``(T, hidden)``
(:class:`Packing` says which row each token belongs to): the linear layers, the layer norms and the dropout
run on those ``T`` rows alone, and only the attention, which mixes the tokens of one sequence, places them
in a padded ``(rows, width)`` layout for the one call of ``scaled_dot_product_attention`` and takes them
back out. What a layer computes for a real token is what the model's own layer computes for it
(:func:`packed_layer` follows transformers' ``BertLayer``: self-attention, dense, dropout, residual and
LayerNorm, then the feed-forward block the same way; tested against it); mean pooling is a sum per row
(:func:`segment_mean`).

Example:
    >>> import torch
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    >>> layer = enc.model.encoder.layer[0].eval()
    >>> lengths = [3, 1]
    >>> p = Packing.of(lengths)
    >>> x = torch.randn(sum(lengths), enc.model.config.hidden_size)
    >>> packed_layer(layer, x, p).shape, p.rows
    (torch.Size([4, 384]), 2)
    >>> segment_mean(x, p).shape
    torch.Size([2, 384])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from nlsim.training.dropout import attention, dropout


@dataclass(frozen=True)
class Packing:
    """Where the real tokens of a batch of sequences sit.

    ``lengths[b]``: the tokens of row ``b``; the packed matrix holds row 0's tokens, then row 1's, and so on.
    ``slots``: each packed token's place ``b * width + t`` in the padded ``(rows, width)`` layout the
    attention reads; ``segment``: each packed token's row; ``keys``: ``(rows, 1, 1, width)``, true where a
    key is a real token.
    """

    lengths: torch.Tensor
    width: int
    slots: torch.Tensor
    segment: torch.Tensor
    keys: torch.Tensor

    @property
    def rows(self) -> int:
        return int(self.lengths.shape[0])

    @classmethod
    def of(cls, lengths: Sequence[int] | np.ndarray, device: Any = "cpu") -> Packing:
        """The packing of sequences of ``lengths`` tokens (each at least 1)."""
        n = np.asarray(lengths, dtype=np.int64)
        width = int(n.max()) if len(n) else 0
        segment = np.repeat(np.arange(len(n)), n)
        starts = np.concatenate([[0], np.cumsum(n)[:-1]]) if len(n) else np.zeros(0, np.int64)
        within = np.arange(int(n.sum())) - np.repeat(starts, n)
        slots = segment * width + within
        keys = np.arange(width)[None, :] < n[:, None]
        return cls(
            lengths=torch.from_numpy(n).to(device),
            width=width,
            slots=torch.from_numpy(slots).to(device),
            segment=torch.from_numpy(segment).to(device),
            keys=torch.from_numpy(keys).to(device)[:, None, None, :],
        )


def _padded(t: torch.Tensor, p: Packing, heads: int) -> torch.Tensor:
    """Packed ``(T, heads * d)`` as ``(rows, heads, width, d)``, zeros where there is no token."""
    out = t.new_zeros((p.rows * p.width, t.shape[-1])).index_copy(0, p.slots, t)
    return out.view(p.rows, p.width, heads, -1).transpose(1, 2)


def packed_layer(layer: Any, x: torch.Tensor, p: Packing, *, bit_masks: bool | None = None) -> torch.Tensor:
    """One ``BertLayer`` over packed tokens ``x`` ``(T, hidden)``: what the layer gives each real token of a
    padded batch, computed on the real tokens alone (dropout as the layer's modules are in train mode, its
    masks drawn as :mod:`nlsim.training.dropout` draws them; ``bit_masks=False``: torch's own)."""
    att = layer.attention.self
    heads = int(att.num_attention_heads)
    q, k, v = (_padded(proj(x), p, heads) for proj in (att.query, att.key, att.value))
    ctx = attention(q, k, v, p.keys, _rate(att.dropout), float(att.scaling), bit_masks=bit_masks)
    ctx = ctx.transpose(1, 2).reshape(p.rows * p.width, -1).index_select(0, p.slots)
    out = layer.attention.output
    h = out.LayerNorm(dropout(out.dense(ctx), _rate(out.dropout), bit_masks=bit_masks) + x)
    ffn = layer.output
    up = ffn.dense(layer.intermediate(h))
    return ffn.LayerNorm(dropout(up, _rate(ffn.dropout), bit_masks=bit_masks) + h)


def _rate(module: Any) -> float:
    """A dropout module's rate while it trains, 0 in eval mode."""
    return float(module.p) if module.training else 0.0


def segment_mean(x: torch.Tensor, p: Packing) -> torch.Tensor:
    """Mean of each row's tokens ``(rows, hidden)``: mean pooling of packed tokens."""
    sums = x.new_zeros((p.rows, x.shape[-1])).index_add(0, p.segment, x)
    return sums / p.lengths.to(sums.dtype)[:, None]
