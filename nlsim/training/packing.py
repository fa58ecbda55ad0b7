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
(:func:`segment_mean`). Inside a CPU's bf16 autocast the matrix gets rows of nothing after the real
tokens, up to a multiple of :data:`PACK_MULTIPLE` (:func:`pack_multiple`, :meth:`Packing.of`): they change
nothing the real tokens compute, and spare oneDNN a kernel compiled for every new token count.

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
import torch.nn.functional as F

from nlsim.training.dropout import attention, dropout


@dataclass(frozen=True)
class Packing:
    """Where the real tokens of a batch of sequences sit.

    ``lengths[b]``: the tokens of row ``b``; the packed matrix holds row 0's tokens, then row 1's, and so on.
    ``slots``: each packed token's place ``b * width + t`` in the padded ``(rows, width)`` layout the
    attention reads; ``segment``: each packed token's row; ``keys``: ``(rows, 1, 1, width)``, true where a
    key is a real token. ``pad``: rows of no token after the real ones (:attr:`tokens` of them), so that the
    packed matrix has a round number of rows (see :meth:`of`); they reach neither the attention nor the
    pooled vectors, and the gradient they pass back is zero.
    """

    lengths: torch.Tensor
    width: int
    slots: torch.Tensor
    segment: torch.Tensor
    keys: torch.Tensor
    pad: int = 0

    @property
    def rows(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def tokens(self) -> int:
        """The real tokens: the packed matrix's first rows (``pad`` more follow)."""
        return int(self.slots.shape[0])

    @classmethod
    def of(cls, lengths: Sequence[int] | np.ndarray, device: Any = "cpu", multiple: int = 1) -> Packing:
        """The packing of sequences of ``lengths`` tokens (each at least 1), its rows padded up to a
        multiple of ``multiple``.

        The padding is for oneDNN, which multiplies bf16 matrices on a CPU with a kernel it compiles for
        each shape and keeps in a cache of 1,024: a packed batch's token count differs from step to step,
        so without it nearly every step compiled the kernels of each of its matrix shapes anew (about 5 ms
        each, some 50 ms of a step of about 600 on one thread of a Xeon with AMX;
        ``benchmarks/bench_finetune_speed.py``).

        >>> p = Packing.of([3, 2], multiple=8)
        >>> p.tokens, p.pad, p.width
        (5, 3, 3)
        """
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
            pad=-int(n.sum()) % max(int(multiple), 1),
        )


PACK_MULTIPLE = 32
"""Packed rows are padded to a multiple of this many inside a CPU's bf16 autocast (:func:`pack_multiple`):
the k-step of the AMX bf16 tiles oneDNN multiplies with, and few enough shapes for its kernel cache."""


def pack_multiple(device: torch.device | str) -> int:
    """How many rows a packed batch on ``device`` is padded to a multiple of, here and now:
    :data:`PACK_MULTIPLE` inside a bf16 autocast on a CPU, where oneDNN compiles a matrix-product kernel
    for each new shape (:meth:`Packing.of`); else 1 (fp32 on a CPU multiplies with MKL, which compiles
    nothing, and its numbers stay those of the unpadded rows; a GPU's products compile nothing either).

    >>> pack_multiple("cpu")
    1
    >>> with torch.autocast("cpu", dtype=torch.bfloat16):
    ...     pack_multiple("cpu")
    32
    """
    device = torch.device(device)
    if device.type != "cpu" or not torch.is_autocast_enabled("cpu"):
        return 1
    return PACK_MULTIPLE if torch.get_autocast_dtype("cpu") == torch.bfloat16 else 1


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
    real = p.tokens
    q, k, v = (_padded(proj(x)[:real], p, heads) for proj in (att.query, att.key, att.value))
    ctx = attention(q, k, v, p.keys, _rate(att.dropout), float(att.scaling), bit_masks=bit_masks)
    ctx = _with_pad(ctx.transpose(1, 2).reshape(p.rows * p.width, -1).index_select(0, p.slots), p)
    out = layer.attention.output
    h = out.LayerNorm(_dropout(out.dense(ctx), _rate(out.dropout), p, bit_masks) + x)
    ffn = layer.output
    up = ffn.dense(layer.intermediate(h))
    return ffn.LayerNorm(_dropout(up, _rate(ffn.dropout), p, bit_masks) + h)


def _with_pad(t: torch.Tensor, p: Packing) -> torch.Tensor:
    """Real tokens' rows ``t`` followed by ``p.pad`` rows of zeros."""
    return F.pad(t, (0, 0, 0, p.pad)) if p.pad else t


def _dropout(t: torch.Tensor, rate: float, p: Packing, bit_masks: bool | None) -> torch.Tensor:
    """Dropout of the real tokens' rows; the padding rows are zeros. Masks are drawn for the real rows
    alone, so a run draws the same masks whatever the padding."""
    return _with_pad(dropout(t[: p.tokens], rate, bit_masks=bit_masks), p)


def _rate(module: Any) -> float:
    """A dropout module's rate while it trains, 0 in eval mode."""
    return float(module.p) if module.training else 0.0


def segment_mean(x: torch.Tensor, p: Packing) -> torch.Tensor:
    """Mean of each row's tokens ``(rows, hidden)``: mean pooling of packed tokens."""
    sums = x.new_zeros((p.rows, x.shape[-1])).index_add(0, p.segment, x[: p.tokens])
    return sums / p.lengths.to(sums.dtype)[:, None]
