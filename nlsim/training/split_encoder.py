"""A transformer encoder cut in two for training: a frozen lower part run once, an upper part trained.

Fine-tuning on a few thousand short headlines spends most of a step in the encoder's lower layers, and
when those do not move their output for a given sequence is the same at every epoch. :class:`SplitEncoder`
runs the embedding block and the first ``frozen_layers`` transformer layers once per sequence (no
gradients, no dropout; a sequence whose output an embedding pass kept takes it,
:meth:`SplitEncoder.prepare`) and keeps their output (:class:`FrozenStates`); each training step then
runs only the upper layers, with autograd, from those states. With ``frozen_layers=0`` every transformer layer
trains and only the embedding block (its word, position and type embeddings and their LayerNorm) is run
once; with ``train_embeddings=True`` nothing is cached and the whole model trains. At least the top layer
always trains: a model with no more layers than ``frozen_layers`` keeps all but its top layer frozen
(:attr:`SplitEncoder.frozen_layers` says how many are).

The upper part reads exactly what the full model would compute from the same weights: the split forward
equals ``model(**features).last_hidden_state`` (tested), so the saved model needs nothing special.
It works with BERT-style encoders (``model.embeddings`` and ``model.encoder.layer``), which covers every
model of the registry; :func:`can_split` says whether a model is one.

Example (the small English model):
    >>> import torch
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    >>> split = SplitEncoder(enc.model, frozen_layers=2)
    >>> ids = enc.tokenizer(["a cat sits", "news"])["input_ids"]
    >>> states = split.prepare(ids)
    >>> hidden, mask = split.forward(states, [0, 1])
    >>> hidden.shape[0], mask.tolist()[1][:3], len(split.parameters()) > 0
    (2, [1, 1, 1], True)
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from nlsim.encoders import lower_states
from nlsim.encoders.batching import lengths_of, pad_batch, padded_width, sorted_batches
from nlsim.encoders.lanes import run_batches
from nlsim.encoders.layers import layer_mask
from nlsim.errors import ConfigError
from nlsim.training.mixed_precision import autocast
from nlsim.training.packing import Packing, pack_multiple, packed_layer

WIDTH_MULTIPLE = 8
"""Batches are padded to a multiple of this many tokens (:func:`nlsim.encoders.batching.padded_width`)."""


def can_split(model: Any) -> bool:
    """Whether ``model`` has the BERT layout :class:`SplitEncoder` cuts (embeddings, a list of layers)."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    return hasattr(model, "embeddings") and isinstance(layers, torch.nn.ModuleList)


def layer_count(model: Any) -> int:
    """How many transformer layers ``model`` has (0 when it is not BERT-style)."""
    return len(model.encoder.layer) if can_split(model) else 0


def frozen_layer_count(layers: int, asked: int, freeze_embeddings: bool = True) -> int:
    """How many of a model's ``layers`` transformer layers training keeps frozen when ``asked`` for: none
    with trained embeddings (every layer trains), else at most all but the top layer (which always trains).

    >>> frozen_layer_count(3, 4), frozen_layer_count(12, 4), frozen_layer_count(12, 4, False)
    (2, 4, 0)
    """
    if not freeze_embeddings:
        return 0
    return max(0, min(int(asked), int(layers) - 1))


@dataclass
class FrozenStates:
    """What the trained part of a :class:`SplitEncoder` starts from, one entry per sequence.

    ``states[i]`` is the frozen part's output for sequence ``i`` (``(length, hidden)``, float32, on the
    CPU), or ``None`` for every sequence when the embeddings train (then ``ids``/``types`` are read).
    """

    ids: list[list[int]]
    types: list[list[int]] | None
    lengths: np.ndarray
    states: list[torch.Tensor] | None
    kept: int = 0
    """How many of ``states`` were taken from :mod:`nlsim.encoders.lower_states` (the frozen part did not
    run for them)."""

    def __len__(self) -> int:
        return len(self.ids)


class SplitEncoder:
    """A BERT-style ``model`` with its embedding block and first ``frozen_layers`` layers frozen and run
    once per sequence (see the module docstring)."""

    def __init__(
        self,
        model: Any,
        frozen_layers: int = 0,
        train_embeddings: bool = False,
        pad_id: int | None = None,
        bit_masks: bool | None = None,
    ) -> None:
        if not can_split(model):
            raise ConfigError(f"{type(model).__name__} is not a BERT-style encoder; it cannot be split")
        frozen_layers = int(frozen_layers)
        if frozen_layers < 0:
            raise ConfigError(f"frozen layers must be >= 0, got {frozen_layers}")
        if train_embeddings and frozen_layers:
            raise ConfigError("the lower layers cannot be frozen while the word embeddings train")
        self.model = model
        self.frozen_layers = frozen_layer_count(layer_count(model), frozen_layers)  # the top layer trains
        self.asked_frozen = frozen_layers
        self.train_embeddings = bool(train_embeddings)
        self.bit_masks = bit_masks  # packed layers' dropout masks (nlsim.training.dropout); None: by device
        pad = getattr(model.config, "pad_token_id", None) if pad_id is None else pad_id
        self.pad_id = int(pad) if pad is not None else 0
        for p in model.parameters():
            p.requires_grad_(False)
        for layer in model.encoder.layer[self.frozen_layers :]:
            for p in layer.parameters():
                p.requires_grad_(True)
        if self.train_embeddings:
            for p in model.embeddings.parameters():
                p.requires_grad_(True)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def parameters(self) -> list[torch.nn.Parameter]:
        """The parameters that train (the upper layers, and the embeddings when they train)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def prepare(
        self,
        ids: Sequence[Sequence[int]],
        types: Sequence[Sequence[int]] | None = None,
        batch_size: int = 128,
        reuse_kept: bool = True,
        lanes: int = 1,
        precision: str = "fp32",
        exact: Sequence[int] | np.ndarray = (),
    ) -> FrozenStates:
        """Run the frozen part once over tokenised sequences (``types``: token type ids, where the model
        reads them). A sequence whose states after this frozen part are kept (:mod:`nlsim.encoders.
        lower_states`: the zero-shot embedding passes of a cold chain keep every text's) takes them as they
        are: what the frozen part computes for it, to float rounding (the batch a text is padded in moves
        the last bits, about 1e-6). ``reuse_kept=False``: run every sequence (pair sequences, which no
        embedding pass keeps). ``lanes`` > 1: the batches run in that many lanes of one thread each
        (:func:`nlsim.encoders.lanes.run_batches`), the same numbers as on one thread. ``precision``: the
        pass's arithmetic (:func:`nlsim.training.mixed_precision.autocast`, in each lane), for states that
        feed only training steps; where it is lossy, the rows ``exact`` run in fp32 (whatever autocast the
        caller is in), in batches of their own (states an evaluation reads)."""
        ids = [list(x) for x in ids]
        type_rows = [list(x) for x in types] if types is not None else None
        lengths = lengths_of(ids)
        if self.train_embeddings:
            return FrozenStates(ids, type_rows, lengths, None)
        states: list[torch.Tensor | None] = [None] * len(ids)
        kept = self._kept_states() if reuse_kept and type_rows is None else {}
        for i, x in enumerate(ids):
            states[i] = kept.get(np.asarray(x, dtype=np.int64).tobytes()) if kept else None
        todo = np.asarray([i for i, s in enumerate(states) if s is None], dtype=np.int64)
        lossy = precision != "fp32"
        fp32 = np.zeros(len(ids), dtype=bool)  # rows kept apart from a lossy pass (none in an fp32 one)
        fp32[np.asarray(exact if lossy else (), dtype=np.int64)] = True
        was_training = self.model.training
        self.model.eval()
        device = self.device

        def run(rows: np.ndarray) -> None:
            padded = pad_batch(ids, rows, self.pad_id, type_rows, WIDTH_MULTIPLE)
            if not lossy:
                arithmetic: Any = contextlib.nullcontext()
            elif fp32[rows[0]]:  # fp32 even inside a caller's autocast
                arithmetic = torch.autocast(device.type, enabled=False)
            else:
                arithmetic = autocast(precision, device)
            with arithmetic:
                hidden, mask = self._embed(padded, device)
                if self.frozen_layers:
                    mask4 = layer_mask(self.model, hidden, mask)
                    for layer in self.model.encoder.layer[: self.frozen_layers]:
                        hidden = layer(hidden, attention_mask=mask4)
            hidden = hidden.float().cpu()
            for j, r in enumerate(rows):
                states[r] = hidden[j, : lengths[r]]

        groups = [g for g in (todo[~fp32[todo]], todo[fp32[todo]]) if len(g)]  # an fp32 pass: one, as before
        batches = [g[part] for g in groups for part in sorted_batches(lengths[g], batch_size)]
        run_batches(batches, run, min(lanes, len(batches)))  # one lane: in order, on this thread
        for r in todo:  # each its own tensor, made outside the lanes' inference mode: training reads them
            states[r] = states[r].clone()  # type: ignore[union-attr]
        self.model.train(was_training)
        done = [s for s in states if s is not None]
        return FrozenStates(ids, type_rows, lengths, done, kept=len(ids) - len(todo))

    def _kept_states(self) -> dict[bytes, torch.Tensor]:
        """The states :mod:`nlsim.encoders.lower_states` keeps now for this frozen part (by token ids), or
        none: none are kept, or they are another lower part's."""
        record = lower_states.current()
        if record is None or record.layers != self.frozen_layers or not record.states:
            return {}
        if record.digest != lower_states.lower_digest(self.model, self.frozen_layers):
            return {}
        return record.states

    def _embed(self, batch: dict[str, np.ndarray], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        tensors = {k: torch.from_numpy(v).to(device) for k, v in batch.items()}
        hidden = self.model.embeddings(
            input_ids=tensors["input_ids"], token_type_ids=tensors.get("token_type_ids")
        )
        return hidden, tensors["attention_mask"]

    def batch(self, inputs: FrozenStates, rows: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """What the upper layers start from for sequences ``rows``: their frozen states padded into one
        tensor ``(len(rows), width, hidden)`` (or, when the embeddings train, the embedding block's output,
        with autograd), and the attention mask, on the model's device."""
        rows = [int(r) for r in rows]
        device = self.device
        if inputs.states is None:
            padded = pad_batch(inputs.ids, rows, self.pad_id, inputs.types, WIDTH_MULTIPLE)
            return self._embed(padded, device)
        width = padded_width(int(inputs.lengths[rows].max()), WIDTH_MULTIPLE)
        dim = inputs.states[rows[0]].shape[-1]
        hidden = torch.zeros((len(rows), width, dim), dtype=torch.float32)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for j, r in enumerate(rows):
            k = int(inputs.lengths[r])
            hidden[j, :k] = inputs.states[r]
            mask[j, :k] = 1
        return hidden.to(device), mask.to(device)

    def upper(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The upper layers' last hidden state from :meth:`batch`'s output, with autograd."""
        mask4 = layer_mask(self.model, hidden, mask)
        for layer in self.model.encoder.layer[self.frozen_layers :]:
            hidden = layer(hidden, attention_mask=mask4)
        return hidden

    def forward(self, inputs: FrozenStates, rows: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The last hidden state ``(len(rows), width, hidden)`` of sequences ``rows`` and their attention
        mask, with autograd through the upper layers."""
        hidden, mask = self.batch(inputs, rows)
        return self.upper(hidden, mask), mask

    def forward_packed(self, inputs: FrozenStates, rows: Sequence[int]) -> tuple[torch.Tensor, Packing]:
        """The last hidden state of sequences ``rows`` as packed tokens ``(T, hidden)`` (row 0's tokens
        first, :mod:`nlsim.training.packing`: no padding in the linear layers) and their packing, with
        autograd through the upper layers. Needs the frozen part's cached states (not with
        ``train_embeddings``). Inside a CPU's bf16 autocast the packed rows are padded to a round number
        (:func:`nlsim.training.packing.pack_multiple`)."""
        if inputs.states is None:
            raise ConfigError("packed sequences need the frozen part's states: the embeddings train here")
        rows = [int(r) for r in rows]
        device = self.device
        packing = Packing.of(inputs.lengths[rows], device, pack_multiple(device))
        parts = [inputs.states[r] for r in rows]
        if packing.pad:
            parts.append(parts[0].new_zeros((packing.pad, parts[0].shape[-1])))
        hidden = torch.cat(parts).to(device)
        for layer in self.model.encoder.layer[self.frozen_layers :]:
            hidden = packed_layer(layer, hidden, packing, bit_masks=self.bit_masks)
        return hidden, packing
