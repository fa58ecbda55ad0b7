"""Lower-layer states kept between two encoders that share their frozen lower part.

Fine-tuning keeps the word embeddings and the first ``layers`` transformer layers of the base model frozen
(:mod:`nlsim.training.split_encoder`), so for a given text the fine-tuned model's lower part computes
exactly what the base model's did. A cold chain embeds its corpus twice: for the zero-shot first report,
then with the fine-tuned model for the final one. While a :class:`LowerStates` is kept (:func:`kept`),
:meth:`nlsim.encoders.encoder.Encoder.encode` of a model whose frozen part has the kept digest runs in
torch fp32 and keeps each text's states after its lower part (the first encoder), or starts from them and
runs only the upper layers (the second): the same vectors as the whole model computes, a third less work
for e5's 4 of 12 frozen layers. A text is keyed by its token ids (prefix and truncation included), so a
text tokenised otherwise is simply computed again.

Example (the small English model: a second encoder with the same lower layer and another top layer):
    >>> import copy, torch
    >>> from nlsim.encoders import load_encoder
    >>> first = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    >>> second = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    >>> with torch.no_grad():
    ...     _ = second.model.encoder.layer[2].output.dense.weight.mul_(1.5)
    >>> with kept(first.model, layers=1) as states:
    ...     _ = first.encode(["a cat", "stocks fall"], progress=False)
    ...     v = second.encode(["a cat", "stocks fall"], progress=False)
    >>> states.computed, states.reused
    (2, 2)
    >>> bool(abs(v - second.encode(["a cat", "stocks fall"], progress=False)).max() < 1e-5)
    True
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from nlsim.encoders.layers import hash_tensors, layer_mask, mean_pool


def lower_digest(model: Any, layers: int) -> str:
    """SHA-256 of what a text's states after the lower part depend on: the model's embedding block and its
    first ``layers`` transformer layers (names, dtypes, shapes and bytes); ``""`` for a model that is not
    BERT-style (``model.embeddings``, ``model.encoder.layer``)."""
    if not can_cut(model, layers):
        return ""
    h = hashlib.sha256(f"lower:{int(layers)}:".encode())
    hash_tensors(h, "embeddings.", model.embeddings.state_dict())
    for i, layer in enumerate(model.encoder.layer[: int(layers)]):
        hash_tensors(h, f"layer.{i}.", layer.state_dict())
    return h.hexdigest()


def can_cut(model: Any, layers: int) -> bool:
    """Whether ``model`` is BERT-style with more than ``layers`` transformer layers (the upper part is not
    empty)."""
    stack = getattr(getattr(model, "encoder", None), "layer", None)
    return (
        hasattr(model, "embeddings") and isinstance(stack, torch.nn.ModuleList) and len(stack) > int(layers)
    )


@dataclass
class LowerStates:
    """The kept states: each text's (``(tokens, hidden)`` float32 on the CPU) by its token ids (as int64
    bytes), for the
    lower part whose :func:`lower_digest` is ``digest``."""

    digest: str
    layers: int
    states: dict[bytes, torch.Tensor] = field(default_factory=dict)
    computed: int = 0
    """Texts run through the whole model, their states kept."""
    reused: int = 0
    """Texts that started from kept states (only the upper layers run)."""

    def runner(self, model: Any) -> LowerStatesRunner:
        """The runner :meth:`~nlsim.encoders.encoder.Encoder.encode` calls for ``model``'s batches."""
        return LowerStatesRunner(self, model)


_kept: LowerStates | None = None
_lock = threading.Lock()


@contextmanager
def kept(model: Any, layers: int) -> Iterator[LowerStates]:
    """Keep the states after ``model``'s embedding block and first ``layers`` layers for every text an
    encoder with the same lower part embeds inside the block; dropped on leaving it. Nothing is kept for
    a model that cannot be cut there (yields an empty record that nothing uses)."""
    global _kept
    digest = lower_digest(model, layers) if layers > 0 else ""
    record = LowerStates(digest, int(layers))
    with _lock:
        previous, _kept = _kept, (record if digest else None)
    try:
        yield record
    finally:
        with _lock:
            _kept = previous


def current() -> LowerStates | None:
    """The states kept now (inside :func:`kept`), else ``None``."""
    return _kept


class LowerStatesRunner:
    """``runner(features) -> pooled (n, dim)`` (not normalised) for one padded batch: from the kept states
    when every text of the batch has them (the upper layers only), else through the whole model, keeping
    the states of the texts that had none."""

    def __init__(self, record: LowerStates, model: Any) -> None:
        self.record = record
        self.model = model

    def __call__(self, features: dict[str, np.ndarray]) -> np.ndarray:
        ids, mask = features["input_ids"], features["attention_mask"]
        lengths = mask.sum(axis=1).astype(np.int64)
        keys = [ids[j, : lengths[j]].astype(np.int64).tobytes() for j in range(len(ids))]
        layers = self.model.encoder.layer
        cut = self.record.layers
        device = next(self.model.parameters()).device
        attention = torch.from_numpy(mask).to(device)
        with torch.inference_mode():
            found = [self.record.states.get(k) for k in keys]
            if all(s is not None for s in found):
                hidden = torch.zeros((len(keys), ids.shape[1], found[0].shape[-1]), dtype=torch.float32)
                for j, s in enumerate(found):
                    hidden[j, : len(s)] = s
                hidden = hidden.to(device)
                self.record.reused += len(keys)
                below = None
            else:
                types = features.get("token_type_ids")
                hidden = self.model.embeddings(
                    input_ids=torch.from_numpy(ids).to(device),
                    token_type_ids=None if types is None else torch.from_numpy(types).to(device),
                )
                below = layers[:cut]
            mask4 = layer_mask(self.model, hidden, attention)
            if below is not None:
                for layer in below:
                    hidden = layer(hidden, attention_mask=mask4)
                states = hidden.float().cpu()
                for j, k in enumerate(keys):
                    if found[j] is None:
                        self.record.states[k] = states[j, : lengths[j]].clone()
                        self.record.computed += 1
            for layer in layers[cut:]:
                hidden = layer(hidden, attention_mask=mask4)
            return mean_pool(hidden.float(), attention).cpu().numpy()
