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

Fine-tuning itself embeds the training, validation and test texts with the trained weights (the reranker
is fitted on their cosines); :func:`keep_vectors` keeps those vectors beside the states, by the trained
encoder's fingerprint, and the report's encoder with that fingerprint takes them as they are: no layer runs
for them (their vectors come from the same weights along another batching, equal to float rounding).

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
from collections.abc import Iterator, Mapping
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
    vectors: dict[str, dict[bytes, np.ndarray]] = field(default_factory=dict)
    """Whole L2-normalised vectors by the fingerprint of the encoder that gave them, then by token ids
    (:func:`keep_vectors`)."""
    taken: int = 0
    """Texts whose vector was taken as kept (no layer ran)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    """Held while a batch adds its states and counts (a job's batches may run in lanes,
    :mod:`nlsim.encoders.lanes`)."""

    def runner(self, model: Any, fingerprint: str = "") -> LowerStatesRunner:
        """The runner :meth:`~nlsim.encoders.encoder.Encoder.encode` calls for ``model``'s batches; with the
        encoder's ``fingerprint``, the vectors kept for it are taken (its output normalised)."""
        return LowerStatesRunner(self, model, self.vectors.get(fingerprint, {}) if fingerprint else {})


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


def keep_vectors(encoder: Any, embeddings: Mapping[str, np.ndarray]) -> int:
    """While states are kept (:func:`kept`), keep ``embeddings`` (text -> L2-normalised vector by
    ``encoder``'s present weights) for the encoder with ``encoder``'s fingerprint: its :meth:`encode` takes
    them instead of running the model. Returns how many were kept (none outside :func:`kept`)."""
    record = current()
    if record is None or not embeddings:
        return 0
    texts = list(embeddings)
    kept_here = record.vectors.setdefault(encoder.fingerprint, {})
    for ids, text in zip(encoder.token_ids(texts), texts, strict=True):
        kept_here[np.asarray(ids, dtype=np.int64).tobytes()] = np.asarray(embeddings[text], dtype=np.float32)
    return len(texts)


class LowerStatesRunner:
    """``runner(features) -> pooled (n, dim)`` for one padded batch: a text's kept vector where ``vectors``
    has one (normalised: for an encoder that normalises), the others from the kept states when every one of
    them has them (the upper layers only), else through the whole model, keeping the states of the texts
    that had none."""

    torch_cpu = True
    """A torch model: an inference job on the CPU may run its batches in lanes (:mod:`nlsim.encoders.lanes`;
    each batch adds its states and counts under the record's lock, and :meth:`Encoder.encode` gives no two
    batches of a job the same token ids, so a text's kept state never depends on which lane ran first)."""

    def __init__(
        self, record: LowerStates, model: Any, vectors: dict[bytes, np.ndarray] | None = None
    ) -> None:
        self.record = record
        self.model = model
        self.vectors = vectors or {}

    def __call__(self, features: dict[str, np.ndarray]) -> np.ndarray:
        mask = features["attention_mask"]
        lengths = mask.sum(axis=1).astype(np.int64)
        keys = [features["input_ids"][j, : lengths[j]].astype(np.int64).tobytes() for j in range(len(mask))]
        have = [self.vectors.get(k) for k in keys]
        todo = np.asarray([j for j, v in enumerate(have) if v is None], dtype=np.int64)
        with self.record.lock:
            self.record.taken += len(keys) - len(todo)
        if len(todo) == len(keys):
            return self._run(features, keys, lengths)
        if not len(todo):
            return np.stack(have)
        width = int(lengths[todo].max())
        part = {name: np.ascontiguousarray(a[todo, :width]) for name, a in features.items()}
        pooled = self._run(part, [keys[j] for j in todo], lengths[todo])
        out = np.empty((len(keys), pooled.shape[1]), dtype=pooled.dtype)
        out[todo] = pooled
        for j, v in enumerate(have):
            if v is not None:
                out[j] = v
        return out

    def _run(self, features: dict[str, np.ndarray], keys: list[bytes], lengths: np.ndarray) -> np.ndarray:
        """The pooled vectors of a padded batch none of whose vectors is kept."""
        ids, mask = features["input_ids"], features["attention_mask"]
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
                with self.record.lock:
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
                with self.record.lock:
                    for j, k in enumerate(keys):
                        if found[j] is None:
                            self.record.states[k] = states[j, : lengths[j]].clone()
                            self.record.computed += 1
            for layer in layers[cut:]:
                hidden = layer(hidden, attention_mask=mask4)
            return mean_pool(hidden.float(), attention).cpu().numpy()
