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
from nlsim.encoders.encoder import weights_digest
from nlsim.errors import ConfigError, StateError
from nlsim.progress import progress_bar

HEAD = "head.safetensors"
CONFIG_JSON = "cross_encoder.json"


def pair_logits(model: Any, head: Any, feats: Any) -> Any:
    """``head(mean-pooled last hidden state)`` of tokenised pairs (``input_ids``, ``attention_mask``, and
    ``token_type_ids`` where used): the one forward of torch scoring, training and the ONNX export."""
    hidden = model(**feats).last_hidden_state
    mask = feats["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return head(pooled).squeeze(-1)


class CrossEncoder:
    """Scores text pairs jointly with a transformer encoder and a linear head (see the module doc)."""

    def __init__(self, model: Any, tokenizer: Any, max_length: int = 128) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.head = torch.nn.Linear(int(model.config.hidden_size), 1)

    def digest(self) -> str:
        """SHA-256 of what the cross-encoder computes (weights, head, max length), cached until it trains."""
        cached = getattr(self, "_digest", None)
        if cached is not None and not self.model.training:
            return cached
        h = hashlib.sha256(weights_digest(self.model).encode())
        for name, t in sorted(self.head.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().cpu().numpy().tobytes())
        h.update(str(self.max_length).encode())
        self._digest = h.hexdigest()
        return self._digest

    @classmethod
    def from_base(cls, name_or_path: str, max_length: int = 128, threads: int | None = None) -> CrossEncoder:
        """A fresh cross-encoder over a base encoder (registry name or model folder)."""
        enc = load_encoder(name_or_path, threads=threads, backend="torch")
        return cls(enc.model, enc.tokenizer, max_length)

    def save(self, folder: str | Path) -> Path:
        """Write the encoder and tokenizer (transformers layout), ``head.safetensors`` and
        ``cross_encoder.json``; :meth:`load` reads them back."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
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
        meta = json.loads((folder / CONFIG_JSON).read_text(encoding="utf-8"))
        ce = cls.from_base(str(folder), meta["max_length"], threads)  # loaded as it was trained
        ce.head.load_state_dict(load_file(str(folder / HEAD)))
        ce.model.eval()
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
        batch_size: int = 64,
        progress: bool = False,
        runner: Callable[[list[str], list[str]], Any] | None = None,
    ) -> np.ndarray:
        """Scores in (0, 1), the mean over both text orders; float64 ``(n,)``.

        ``runner(texts_a, texts_b) -> logits`` replaces torch's forward pass (e.g. the ONNX Runtime copy of
        :mod:`nlsim.rerank.onnx`, same scores to ~1e-6); ``None`` scores with torch.
        """
        if len(texts_a) != len(texts_b):
            raise ConfigError(f"{len(texts_a)} texts_a but {len(texts_b)} texts_b")
        onnx = runner
        # batches of similar length pad little: order by combined length, restore the order at the end
        order = np.argsort([len(a) + len(b) for a, b in zip(texts_a, texts_b, strict=True)], kind="stable")
        was_training = self.model.training
        self.model.eval()
        out = np.zeros(len(texts_a), dtype=np.float64)
        starts = range(0, len(texts_a), batch_size)
        with torch.inference_mode():
            for s in progress_bar(starts, desc="cross-encoder", unit="batch", enabled=progress):
                rows = order[s : s + batch_size]
                a, b = [texts_a[i] for i in rows], [texts_b[i] for i in rows]
                if onnx is not None:
                    ab, ba = torch.from_numpy(onnx(a, b)), torch.from_numpy(onnx(b, a))
                else:
                    ab, ba = self.logits(a, b), self.logits(b, a)
                out[rows] = ((torch.sigmoid(ab) + torch.sigmoid(ba)) / 2).double().numpy()
        self.model.train(was_training)
        return out
