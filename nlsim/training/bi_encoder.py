"""The bi-encoder training loop (Sentence-BERT: siamese encoder, mean pooling, cosine similarity).

Loss = CoSENT or MSE between the cosine and the gold score (:mod:`nlsim.training.losses`); AdamW with linear
warm-up and decay; validation every epoch (or every N steps) with the best checkpoint (validation
Spearman) kept; seeds fixed, so a run on the same machine and thread count repeats exactly. The
word-embedding table (96M of e5's 118M parameters) can be frozen, which cuts the step time ~4x and the
optimizer memory by ~1 GB.

Example (a few seconds with the small English model):
    >>> import pandas as pd
    >>> from nlsim.encoders import load_encoder
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "a dog", "stocks fall", "rain today"] * 2,
    ...                       "text_b": ["a kitten", "a puppy", "markets drop", "football"] * 2,
    ...                       "score": [1.0, 0.9, 0.8, 0.0] * 2})
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    >>> run = train_encoder(enc, pairs, pairs, FinetuneConfig(epochs=1, batch_size=4, log_every=0),
    ...                     log=lambda m: None)
    >>> run["steps"], run["best"]["epoch"]
    (2, 1)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

from nlsim.encoders import load_encoder
from nlsim.evaluation.metrics import evaluate
from nlsim.io.atomic import atomic_write_text
from nlsim.progress import say
from nlsim.training.config import FinetuneConfig
from nlsim.training.losses import get_loss
from nlsim.training.optim import freeze_word_embeddings, linear_schedule, set_seed


class _Tokenised:
    """Token ids of every distinct text, tokenised once; batches are padded on the fly."""

    def __init__(self, encoder: Any, texts: list[str]) -> None:
        unique = list(dict.fromkeys(texts))
        self.where = {t: i for i, t in enumerate(unique)}
        enc = encoder.tokenizer(
            [encoder.prefix + t for t in unique],
            padding=False,
            truncation=True,
            max_length=encoder.max_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        self.ids: list[list[int]] = enc["input_ids"]
        pid = encoder.tokenizer.pad_token_id
        self.pad = int(pid) if pid is not None else 0
        self.types = "token_type_ids" in getattr(encoder.tokenizer, "model_input_names", [])

    def batch(self, texts: list[str]) -> dict[str, Any]:
        seqs = [self.ids[self.where[t]] for t in texts]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[i, : len(s)] = 1
        out = {"input_ids": ids, "attention_mask": mask}
        if self.types:
            out["token_type_ids"] = torch.zeros_like(ids)
        return out

    def embed_sorted(self, encoder: Any, texts: list[str], chunk: int, device: Any) -> Any:
        """Mean-pooled vectors (with autograd) of ``texts`` in their order, embedded in length-sorted chunks.

        Sorting the 2 x batch texts by token length before cutting them into forward passes of ``chunk``
        pads each pass only to its own longest text.
        """
        lengths = [len(self.ids[self.where[t]]) for t in texts]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        parts = []
        for start in range(0, len(order), chunk):
            rows = order[start : start + chunk]
            feats = self.batch([texts[i] for i in rows])
            parts.append(encoder.embed({k: v.to(device) for k, v in feats.items()}))
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return torch.cat(parts)[inverse.to(device)]


def train_encoder(
    encoder: Any,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: FinetuneConfig,
    log: Callable[[str], None] = say,
) -> dict[str, Any]:
    """Fine-tune ``encoder`` in place on already-converted pairs; the best checkpoint is loaded at the end.

    Returns ``{"best": {...}, "history": [...], "seconds_per_epoch": [...], "steps": n, ...}``. Validation
    Spearman picks the checkpoint (ties: the earlier one).
    """
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    set_seed(cfg.seed)
    loss_fn = get_loss(cfg.loss)
    model = encoder.model
    encoder.max_length = int(cfg.max_length)
    total_params = sum(p.numel() for p in model.parameters())
    for p in model.parameters():
        p.requires_grad_(True)
    if cfg.freeze_embeddings:
        freeze_word_embeddings(model)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    trainable = sum(p.numel() for _, p in params)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")
    groups = [
        {
            "params": [p for n, p in params if not any(k in n for k in no_decay)],
            "weight_decay": cfg.weight_decay,
        },
        {"params": [p for n, p in params if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    try:  # the fused kernel runs the optimizer step several times faster on CPU than the default
        optimizer = torch.optim.AdamW(groups, lr=cfg.lr, fused=True)
    except (RuntimeError, TypeError):
        optimizer = torch.optim.AdamW(groups, lr=cfg.lr)
    steps_per_epoch = math.ceil(len(train) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    scheduler = linear_schedule(optimizer, int(round(cfg.warmup_ratio * total)), total)
    tok = _Tokenised(encoder, train["text_a"].tolist() + train["text_b"].tolist())
    device = getattr(encoder, "device", torch.device("cpu"))
    scores = torch.tensor(train["score"].to_numpy(dtype=np.float32)).to(device)
    text_a, text_b = train["text_a"].tolist(), train["text_b"].tolist()
    gen = torch.Generator().manual_seed(cfg.seed)

    history: list[dict[str, Any]] = []
    best: dict[str, Any] = {"spearman": -math.inf}
    best_state: dict[str, Any] | None = None
    trainable_names = {n for n, _ in params}
    # a fused optimizer step leaves torch's version counters alone: tell the encoder, or a compiled
    # inference runner (ONNX) would keep validating the old weights
    mark_changed = getattr(encoder, "mark_weights_changed", lambda: None)

    def validate(epoch: int, step: int, train_loss: float) -> None:
        nonlocal best, best_state
        m = evaluate(encoder, validation, conversion=None)
        row = {"epoch": epoch, "step": step, "train_loss": round(train_loss, 5), **m.as_dict()}
        history.append(row)
        if cfg.progress_file:
            atomic_write_text(cfg.progress_file, json.dumps({"history": history}, indent=2))
        log(
            f"  epoch {epoch} step {step}: loss {train_loss:.4f}, validation Spearman {m.spearman:.2f} "
            f"Pearson {m.pearson:.2f} MSE {m.mse:.4f}"
        )
        if m.spearman > best["spearman"]:
            best = dict(row)
            best_state = {
                n: t.detach().clone() for n, t in model.state_dict().items() if n in trainable_names
            }
        model.train()

    step = 0
    seconds_per_epoch: list[float] = []
    model.train()
    for epoch in range(1, cfg.epochs + 1):
        t0 = time.perf_counter()
        eval_time = 0.0
        order = torch.randperm(len(train), generator=gen).tolist()
        losses: list[float] = []
        for start in range(0, len(order), cfg.batch_size):
            rows = order[start : start + cfg.batch_size]
            emb = tok.embed_sorted(
                encoder,
                [text_a[i] for i in rows] + [text_b[i] for i in rows],
                chunk=cfg.batch_size,
                device=device,
            )
            u, v = emb[: len(rows)], emb[len(rows) :]
            loss = loss_fn(u, v, scores[rows])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.max_grad_norm:
                torch.nn.utils.clip_grad_norm_([p for _, p in params], cfg.max_grad_norm)
            optimizer.step()
            mark_changed()
            scheduler.step()
            step += 1
            losses.append(float(loss.detach()))
            if cfg.log_every and step % cfg.log_every == 0:
                rate = (time.perf_counter() - t0 - eval_time) / (start // cfg.batch_size + 1)
                log(f"  step {step}/{total}: loss {np.mean(losses[-cfg.log_every :]):.4f}, {rate:.2f} s/step")
            if cfg.eval_every and step % cfg.eval_every == 0 and start + cfg.batch_size < len(order):
                te = time.perf_counter()
                validate(epoch, step, float(np.mean(losses[-cfg.eval_every :])))
                eval_time += time.perf_counter() - te
        seconds_per_epoch.append(round(time.perf_counter() - t0 - eval_time, 2))
        validate(epoch, step, float(np.mean(losses)))
    model.eval()
    if best_state is not None:
        model.load_state_dict(best_state, strict=False)
        mark_changed()
    else:  # validation Spearman undefined throughout (constant scores): keep the last weights
        best = dict(history[-1])
    if hasattr(encoder, "refresh_fingerprint"):
        encoder.refresh_fingerprint()
    return {
        "best": best,
        "history": history,
        "seconds_per_epoch": seconds_per_epoch,
        "steps": step,
        "trainable_parameters": int(trainable),
        "total_parameters": int(total_params),
    }


def load_base(cfg: FinetuneConfig) -> Any:
    """The base encoder, with ``cfg.max_length``."""
    encoder = load_encoder(cfg.model, threads=cfg.threads)
    encoder.max_length = int(cfg.max_length)
    return encoder
