"""A cross-encoder scorer: both texts through the encoder together, a 0-1 relatedness score out.

It reads the two headlines jointly, so it sees word-level correspondences a bi-encoder's two separate
vectors cannot: the reranker of :mod:`nlsim.rerank.reranker` and the teacher that labels silver pairs
(:mod:`nlsim.training.silver`). Training is :mod:`nlsim.training.cross_encoder`. Architecture: the base
encoder (``<s> A </s></s> B </s>``), mean
pooling, a linear head, sigmoid; trained with binary cross-entropy against the graded score (soft labels),
both text orders; prediction averages the two orders, so ``score(a, b) == score(b, a)``.

Example (an untrained head over the small English model):
    >>> ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2")
    >>> ce.predict(["a cat"], ["a kitten"]).shape
    (1,)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from nlsim.encoders import load_encoder
from nlsim.encoders.batching import lengths_of, pad_batch, sorted_batches
from nlsim.encoders.device import batch_size_for
from nlsim.encoders.encoder import mean_pool, weights_digest
from nlsim.encoders.lanes import lanes_for, run_batches
from nlsim.encoders.tokenizer_cache import save_tokenizer
from nlsim.errors import ConfigError, StateError
from nlsim.inference.target import WeightsWatch
from nlsim.io.records import NotAJsonObject, read_json_object
from nlsim.progress import Progress

HEAD = "head.safetensors"
CONFIG_JSON = "cross_encoder.json"


def pooled_logits(head: Any, hidden: Any, mask: Any) -> Any:
    """``head(mean-pooled hidden states)``: the scores (before the sigmoid) of a batch of pair sequences
    from the encoder's last hidden state; training reads it from cached lower layers
    (:mod:`nlsim.training.cross_encoder`)."""
    return head(mean_pool(hidden, mask)).squeeze(-1)


def pair_logits(model: Any, head: Any, feats: Any) -> Any:
    """:func:`pooled_logits` of tokenised pairs (``input_ids``, ``attention_mask``, and ``token_type_ids``
    where used): the one forward of torch scoring and the ONNX export."""
    return pooled_logits(head, model(**feats).last_hidden_state, feats["attention_mask"])


def saved_max_length(folder: Path) -> int:
    """The token limit a cross-encoder saved in ``folder`` was trained with (its :data:`CONFIG_JSON`), or
    a :class:`StateError` naming the file, and the key, when it is not the JSON object nlsim writes.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / CONFIG_JSON).write_text('{"max_length": "64"}', encoding="utf-8")
        >>> saved_max_length(folder)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: .../cross_encoder.json: 'max_length' holds '64', not a whole number ...
    """
    path = folder / CONFIG_JSON
    try:
        meta = read_json_object(path, "the cross-encoder's settings (max_length)")
    except NotAJsonObject as exc:
        raise StateError(f"{path}: {exc}; restore the model folder, or train the reranker again") from None
    value = meta.get("max_length")
    if isinstance(value, bool) or not isinstance(value, int) or value < 4:
        shown = "nothing" if value is None else repr(value)[:40]
        raise StateError(
            f"{path}: 'max_length' holds {shown}, not a whole number of tokens (4 or more) as nlsim writes "
            "it; restore the model folder, or train the reranker again"
        )
    return value


class CrossEncoder:
    """Scores text pairs jointly with a transformer encoder and a linear head (see the module doc)."""

    def __init__(self, model: Any, tokenizer: Any, max_length: int = 128) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.head = torch.nn.Linear(int(model.config.hidden_size), 1)
        self.path: Path | None = None  # the folder it was loaded from (its quality_check.json)
        self._watch = WeightsWatch(self.model, self.head)
        self._digest: tuple[tuple[int, int], str] | None = None  # ((weights version, max length), digest)

    def weights_version(self) -> int:
        """A number that moves whenever a weight changes (:class:`nlsim.inference.target.WeightsWatch`, the
        encoder's way too): a digest or an inference path made for other weights is stale."""
        return self._watch.version()

    def mark_weights_changed(self) -> None:
        """Record a change torch's version counters miss (a fused optimizer step)."""
        self._watch.mark()

    def digest(self) -> str:
        """SHA-256 of what the cross-encoder computes (weights, head, max length), cached until a weight or
        the max length changes."""
        version = (self.weights_version(), self.max_length)
        if self._digest is not None and self._digest[0] == version:
            return self._digest[1]
        h = hashlib.sha256(weights_digest(self.model).encode())
        for name, t in sorted(self.head.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().cpu().numpy().tobytes())
        h.update(str(self.max_length).encode())
        self._digest = (version, h.hexdigest())
        return self._digest[1]

    @classmethod
    def from_base(
        cls, name_or_path: str, max_length: int = 128, threads: int | None = None, device: Any = None
    ) -> CrossEncoder:
        """A fresh cross-encoder over a base encoder (registry name or model folder), on ``device``
        (default: the CPU)."""
        enc = load_encoder(name_or_path, threads=threads, backend="torch", device=device)
        ce = cls(enc.model, enc.tokenizer, max_length)
        ce.head.to(enc.device)
        return ce

    def save(self, folder: str | Path) -> Path:
        """Write the encoder and tokenizer (transformers layout), ``head.safetensors`` and
        ``cross_encoder.json``; :meth:`load` reads them back."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        save_tokenizer(self.tokenizer, folder)
        save_file({k: v.detach().contiguous() for k, v in self.head.state_dict().items()}, str(folder / HEAD))
        (folder / CONFIG_JSON).write_text(
            json.dumps({"max_length": self.max_length, "pooling": "mean", "head": "linear+sigmoid"}, indent=2)
            + "\n",
            encoding="utf-8",
        )
        return folder

    @classmethod
    def load(cls, folder: str | Path, threads: int | None = None) -> CrossEncoder:
        """A cross-encoder saved by :meth:`save` (raises ``StateError`` for a folder that is not one)."""
        folder = Path(folder)
        if not (folder / CONFIG_JSON).is_file() or not (folder / HEAD).is_file():
            raise StateError(f"{folder}: not a saved cross-encoder ({CONFIG_JSON} or {HEAD} missing)")
        ce = cls.from_base(str(folder), saved_max_length(folder), threads)  # loaded as it was trained
        ce.head.load_state_dict(load_file(str(folder / HEAD)))
        ce.model.eval()
        ce.path = folder
        return ce

    def parameters(self) -> list[Any]:
        return [p for p in self.model.parameters() if p.requires_grad] + list(self.head.parameters())

    def features(self, texts_a: Sequence[str], texts_b: Sequence[str], tensors: str = "pt") -> Any:
        """The tokenizer's pair encoding: ``input_ids``, ``attention_mask``, ``token_type_ids`` if used."""
        feats = self.tokenizer(
            list(texts_a),
            list(texts_b),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors=tensors,
        )
        if "token_type_ids" in feats and int(getattr(self.model.config, "type_vocab_size", 2)) < 2:
            feats.pop("token_type_ids")  # XLM-R style vocabularies have one segment type
        return feats

    def logits(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> Any:
        """Raw scores (before the sigmoid) of ``texts_a[i]`` read with ``texts_b[i]``, with autograd."""
        return pair_logits(self.model, self.head, self.features(texts_a, texts_b))

    def predict(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        batch_size: int | None = None,
        progress: bool = False,
        runner: Callable[[dict[str, np.ndarray]], Any] | None = None,
    ) -> np.ndarray:
        """Scores in (0, 1), the mean over both text orders; float64 ``(n,)``.

        Both orders of every pair are tokenised once, sorted by token length and cut into batches of
        ``2 * batch_size`` sequences (default: :func:`nlsim.encoders.device.batch_size_for` the model's
        device), each padded only to its own longest. ``runner(features) -> logits``
        (numpy arrays in, ``(rows,)`` out) replaces torch's fp32 forward pass: an inference path of
        :mod:`nlsim.rerank.target` (ONNX Runtime fp32 or int8, torch bf16 or int8); ``None`` scores
        with torch.
        """
        if len(texts_a) != len(texts_b):
            raise ConfigError(f"{len(texts_a)} texts_a but {len(texts_b)} texts_b")
        n = len(texts_a)
        probs = self.read(
            list(texts_a) + list(texts_b), list(texts_b) + list(texts_a), batch_size, progress, runner
        )
        return (probs[:n] + probs[n:]) / 2

    def read(
        self,
        first: Sequence[str],
        second: Sequence[str],
        batch_size: int | None = None,
        progress: bool = False,
        runner: Callable[[dict[str, np.ndarray]], Any] | None = None,
    ) -> np.ndarray:
        """The probability of each pair read in one order, ``first[i]`` then ``second[i]``; float64
        ``(n,)``. :meth:`predict` is the mean of both orders' readings; the rerank stage reads a pair's
        second order only where it can matter (:mod:`nlsim.rerank.second_reading`)."""
        if len(first) != len(second):
            raise ConfigError(f"{len(first)} first texts but {len(second)} second texts")
        n = len(first)
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        ids, types = self.pair_ids(first, second)
        lengths = lengths_of(ids)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        logits = np.zeros(n, dtype=np.float64)
        was_training = self.model.training
        self.model.eval()
        device = next(self.model.parameters()).device
        batch_size = batch_size_for(device) if batch_size is None else batch_size
        batches = sorted_batches(lengths, max(1, 2 * int(batch_size)))  # as many as predict

        def read_rows(rows: np.ndarray) -> None:
            batch = pad_batch(ids, rows, pad, types)
            if runner is not None:
                out = runner(batch)
            else:
                tensors = {k: torch.from_numpy(v).to(device) for k, v in batch.items()}
                out = pair_logits(self.model, self.head, tensors).float().cpu().numpy()
            logits[rows] = np.asarray(out, dtype=np.float64).reshape(-1)

        try:
            bar = Progress(n, "cross-encoder", "pair readings", enabled=progress)
            run_batches(batches, read_rows, lanes_for(device, runner, len(batches)), bar.update)
            bar.close()
        finally:
            self.model.train(was_training)
        return 1.0 / (1.0 + np.exp(-logits))

    def pair_ids(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> tuple[list[list[int]], Any]:
        """Token ids of each pair read as ``texts_a[i]`` then ``texts_b[i]`` (truncated at ``max_length``,
        not padded), and their token type ids when the model reads them (else ``None``)."""
        feats = self.tokenizer(
            list(texts_a),
            list(texts_b),
            truncation=True,
            max_length=self.max_length,
            padding=False,
            return_attention_mask=False,
        )
        types = feats.get("token_type_ids") if self.uses_token_types() else None
        return feats["input_ids"], types

    def uses_token_types(self) -> bool:
        """Whether the model reads ``token_type_ids`` (BERT does; XLM-R style vocabularies have one type)."""
        names = getattr(self.tokenizer, "model_input_names", [])
        return "token_type_ids" in names and int(getattr(self.model.config, "type_vocab_size", 2)) >= 2

    def score_bound(self) -> float:
        """An upper bound of any score this cross-encoder can give (1.0 when none is known).

        For a BERT-style model the last hidden state is a LayerNorm's output ``gamma * z + beta`` with each
        token's ``z`` centred and of norm at most ``sqrt(d)``, and mean pooling averages tokens, so the
        logit ``w . pooled + b`` is at most ``sqrt(d) * |centred(w * gamma)| + w . beta + b``: a bound from
        the weights alone, never from data. The rerank stage uses it to search fewer candidate pairs
        (:meth:`nlsim.rerank.reranker.Reranker.candidate_floor`), losing none.
        """
        norm = None
        if getattr(self.model.config, "model_type", "") in ("bert", "xlm-roberta", "roberta"):
            try:
                norm = self.model.encoder.layer[-1].output.LayerNorm
            except AttributeError:
                norm = None
        if norm is None or getattr(norm, "weight", None) is None:
            return 1.0
        with torch.no_grad():
            w = self.head.weight.detach().double().reshape(-1)
            gamma, beta = norm.weight.detach().double(), norm.bias.detach().double()
            v = w * gamma
            v = v - v.mean()
            bias = self.head.bias.detach().double()[0]
            bound = float(v.numel() ** 0.5 * v.norm() + (w * beta).sum() + bias)
        return float(min(1.0, 1.0 / (1.0 + np.exp(-bound))))
