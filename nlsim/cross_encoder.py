"""A cross-encoder scorer: both texts through the encoder together, a 0-1 relatedness score out.

Used as the teacher that labels silver pairs (:mod:`nlsim.silver`): it reads the two headlines jointly,
so it sees word-level correspondences a bi-encoder's two separate vectors cannot, and it is cheap enough
to score a few thousand unlabelled pairs. Architecture: the base encoder (``<s> A </s></s> B </s>``), mean
pooling, a linear head, sigmoid; trained with binary cross-entropy against the graded score (soft labels),
both text orders; prediction averages the two orders, so ``score(a, b) == score(b, a)``.

Example (a few seconds with the small English model):
    >>> import pandas as pd
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "stocks fall"] * 4, "text_b": ["a kitten", "football"] * 4,
    ...                       "score": [1.0, 0.0] * 4})
    >>> ce, history = train_cross_encoder("paraphrase-MiniLM-L3-v2", pairs, pairs,
    ...                                   CrossEncoderConfig(epochs=1, batch_size=4))  # doctest: +SKIP
    >>> ce.predict(["a cat"], ["a kitten"]).shape  # doctest: +SKIP
    (1,)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.errors import ConfigError, StateError

HEAD = "head.safetensors"
CONFIG_JSON = "cross_encoder.json"
ONNX_MIN_PAIRS = 1000  # from here on, predict() runs through ONNX Runtime when it can (backend="auto")


@dataclass
class CrossEncoderConfig:
    """Training settings of the teacher (what the defaults scored on validation: docs/finetuning.md)."""

    epochs: int = 3
    batch_size: int = 16
    lr: float = 1e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_length: int = 128
    freeze_embeddings: bool = True
    seed: int = 42
    threads: int | None = None
    log_every: int = 50

    def check(self) -> None:
        for name in ("epochs", "batch_size", "max_length"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"cross-encoder {name} must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ConfigError(f"cross-encoder lr must be > 0, got {self.lr}")


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
        import torch

        self.model = model
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.head = torch.nn.Linear(int(model.config.hidden_size), 1)
        self._runner: Any = None

    @classmethod
    def from_base(cls, name_or_path: str, max_length: int = 128, threads: int | None = None) -> CrossEncoder:
        """A fresh cross-encoder over a base encoder (registry name or model folder)."""
        from nlsim.encoders import load_encoder

        enc = load_encoder(name_or_path, threads=threads)
        return cls(enc.model, enc.tokenizer, max_length)

    def save(self, folder: str | Path) -> Path:
        """Write the encoder and tokenizer (transformers layout), ``head.safetensors`` and
        ``cross_encoder.json``; :meth:`load` reads them back."""
        from safetensors.torch import save_file

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
        from safetensors.torch import load_file

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

    def runner(self, n_pairs: int, backend: str = "auto") -> Callable[[list[str], list[str]], Any] | None:
        """The ONNX runner (:mod:`nlsim.cross_encoder_onnx`) for a job of ``n_pairs``, or ``None`` for torch.

        ``auto`` takes ONNX for :data:`ONNX_MIN_PAIRS` pairs or more when ``onnxruntime`` is installed and
        the model is on the CPU (the export costs a few seconds once); a failed export falls back to torch.
        """
        from nlsim.encoders.onnx_backend import onnxruntime_available

        if backend == "torch" or self.model.training or next(self.model.parameters()).device.type != "cpu":
            return None
        if backend == "auto" and (n_pairs < ONNX_MIN_PAIRS or not onnxruntime_available()):
            return None
        if self._runner is None:
            from nlsim.cross_encoder_onnx import cross_encoder_runner

            try:
                self._runner = cross_encoder_runner(self)
            except (StateError, RuntimeError, ValueError) as exc:
                if backend == "onnx":
                    raise
                print(f"cross-encoder: ONNX export failed ({exc}); scoring with torch")
                return None
        return self._runner

    def predict(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        batch_size: int = 64,
        progress: bool = False,
        backend: str = "auto",
    ) -> np.ndarray:
        """Scores in (0, 1), the mean over both text orders; float64 ``(n,)``.

        ``backend``: ``torch``, ``onnx`` or ``auto`` (see :meth:`runner`); both give the same scores to ~1e-6.
        """
        import torch
        from tqdm.auto import tqdm

        if len(texts_a) != len(texts_b):
            raise ConfigError(f"{len(texts_a)} texts_a but {len(texts_b)} texts_b")
        onnx = self.runner(len(texts_a), backend)
        # batches of similar length pad little: order by combined length, restore the order at the end
        order = np.argsort([len(a) + len(b) for a, b in zip(texts_a, texts_b, strict=True)], kind="stable")
        was_training = self.model.training
        self.model.eval()
        out = np.zeros(len(texts_a), dtype=np.float64)
        starts = range(0, len(texts_a), batch_size)
        with torch.inference_mode():
            for s in tqdm(starts, desc="cross-encoder", unit="batch", disable=not progress):
                rows = order[s : s + batch_size]
                a, b = [texts_a[i] for i in rows], [texts_b[i] for i in rows]
                if onnx is not None:
                    ab, ba = torch.from_numpy(onnx(a, b)), torch.from_numpy(onnx(b, a))
                else:
                    ab, ba = self.logits(a, b), self.logits(b, a)
                out[rows] = ((torch.sigmoid(ab) + torch.sigmoid(ba)) / 2).double().numpy()
        self.model.train(was_training)
        return out


def train_cross_encoder(
    base: str | CrossEncoder,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: CrossEncoderConfig,
    log: Callable[[str], None] = print,
) -> tuple[CrossEncoder, list[dict[str, Any]]]:
    """Train on ``train`` (both orders), validate each epoch, keep the best epoch (validation Spearman).

    Pairs must already be script-converted. Returns the cross-encoder (best weights loaded) and the
    per-epoch history (``epoch``, ``train_loss``, ``spearman``, ``seconds``).
    """
    import torch
    from scipy.stats import spearmanr

    from nlsim.training import freeze_word_embeddings, linear_schedule, set_seed

    cfg.check()
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    set_seed(cfg.seed)
    ce = base if isinstance(base, CrossEncoder) else CrossEncoder.from_base(base, cfg.max_length, cfg.threads)
    ce._runner = None  # an ONNX export of earlier weights no longer applies
    if cfg.freeze_embeddings:
        freeze_word_embeddings(ce.model)
    text_a = train["text_a"].tolist() + train["text_b"].tolist()
    text_b = train["text_b"].tolist() + train["text_a"].tolist()
    scores = torch.tensor(np.concatenate([train["score"].to_numpy(dtype=np.float32)] * 2))
    params = ce.parameters()
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    per_epoch = math.ceil(len(text_a) / cfg.batch_size)
    total = per_epoch * cfg.epochs
    scheduler = linear_schedule(optimizer, int(round(cfg.warmup_ratio * total)), total)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    gen = torch.Generator().manual_seed(cfg.seed)
    history: list[dict[str, Any]] = []
    best: tuple[float, dict[str, Any] | None] = (-math.inf, None)
    ce.model.train()
    for epoch in range(1, cfg.epochs + 1):
        t0 = time.perf_counter()
        order = torch.randperm(len(text_a), generator=gen).tolist()
        losses: list[float] = []
        for k, start in enumerate(range(0, len(order), cfg.batch_size)):
            rows = order[start : start + cfg.batch_size]
            loss = loss_fn(ce.logits([text_a[i] for i in rows], [text_b[i] for i in rows]), scores[rows])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))
            if cfg.log_every and (k + 1) % cfg.log_every == 0:
                recent = np.mean(losses[-cfg.log_every :])
                log(f"  cross-encoder epoch {epoch} step {k + 1}/{per_epoch}: loss {recent:.4f}")
        pred = ce.predict(validation["text_a"].tolist(), validation["text_b"].tolist())
        rho = float(spearmanr(pred, validation["score"].to_numpy()).statistic) * 100
        rho = rho if math.isfinite(rho) else -math.inf
        row = {
            "epoch": epoch,
            "train_loss": round(float(np.mean(losses)), 5),
            "spearman": round(rho, 2),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        history.append(row)
        log(f"  cross-encoder epoch {epoch}: loss {row['train_loss']:.4f}, validation Spearman {rho:.2f}")
        if rho > best[0] or best[1] is None:
            # only what training changes: the frozen word-embedding table need not be copied
            state = {n: p.detach().clone() for n, p in ce.model.named_parameters() if p.requires_grad}
            state.update({f"head.{n}": t.detach().clone() for n, t in ce.head.state_dict().items()})
            best = (rho, state)
    assert best[1] is not None
    ce.model.load_state_dict({n: t for n, t in best[1].items() if not n.startswith("head.")}, strict=False)
    ce.head.load_state_dict({n[5:]: t for n, t in best[1].items() if n.startswith("head.")})
    ce.model.eval()
    return ce, history
