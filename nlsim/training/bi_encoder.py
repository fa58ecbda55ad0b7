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
from nlsim.encoders.batching import bucketed_batches
from nlsim.encoders.device import default_device
from nlsim.encoders.encoder import mean_pool
from nlsim.evaluation.metrics import evaluate
from nlsim.io.atomic import atomic_write_text
from nlsim.progress import say
from nlsim.training.clock import TrainingClock
from nlsim.training.config import FinetuneConfig
from nlsim.training.losses import get_loss
from nlsim.training.mixed_precision import autocast
from nlsim.training.mixed_precision import resolve as resolve_precision
from nlsim.training.optim import adamw, linear_schedule, set_seed
from nlsim.training.split_encoder import FrozenStates, SplitEncoder, layer_count


def _prepared_texts(
    encoder: Any, split: SplitEncoder, train: pd.DataFrame
) -> tuple[FrozenStates, np.ndarray, np.ndarray]:
    """The frozen part's states of every distinct training text (prefix added, tokenised once), and each
    pair's two rows into them."""
    unique = list(dict.fromkeys(train["text_a"].tolist() + train["text_b"].tolist()))
    where = {t: i for i, t in enumerate(unique)}
    states = split.prepare(encoder.token_ids(unique))
    rows_a = np.fromiter((where[t] for t in train["text_a"]), dtype=np.int64, count=len(train))
    rows_b = np.fromiter((where[t] for t in train["text_b"]), dtype=np.int64, count=len(train))
    return states, rows_a, rows_b


def _pooled(split: SplitEncoder, states: FrozenStates, rows: np.ndarray, chunk: int) -> torch.Tensor:
    """Mean-pooled vectors (with autograd) of text rows ``rows``, in their order; the rows run in
    length-sorted chunks of ``chunk``, each padded to its own longest text."""
    order = np.argsort(states.lengths[rows], kind="stable")
    parts = []
    for start in range(0, len(order), chunk):
        hidden, mask = split.forward(states, rows[order[start : start + chunk]])
        parts.append(mean_pool(hidden.float(), mask))
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.from_numpy(order)] = torch.arange(len(order))
    return torch.cat(parts)[inverse.to(parts[0].device)]


def train_encoder(
    encoder: Any,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: FinetuneConfig,
    log: Callable[[str], None] = say,
    on_rate: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune ``encoder`` in place on already-converted pairs; the best checkpoint is loaded at the end.

    The embedding block and the lower ``cfg.frozen_layers`` layers stay frozen and run once per distinct
    text (:mod:`nlsim.training.split_encoder`); batches hold pairs of similar length
    (:func:`nlsim.encoders.batching.bucketed_batches`); the step runs in ``cfg.train_precision``
    (:mod:`nlsim.training.mixed_precision`). Returns ``{"best": {...}, "history": [...],
    "seconds_per_epoch": [...], "steps": n, ...}``. Validation Spearman picks the checkpoint (ties: the
    earlier one). ``on_rate`` hears the measured seconds per step once (:class:`TrainingClock`).
    """
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    set_seed(cfg.seed)
    loss_fn = get_loss(cfg.loss)
    model = encoder.model
    encoder.max_length = int(cfg.max_length)
    total_params = sum(p.numel() for p in model.parameters())
    frozen = int(cfg.frozen_layers) if cfg.freeze_embeddings else 0  # trained embeddings: all layers train
    split = SplitEncoder(model, frozen, train_embeddings=not cfg.freeze_embeddings, pad_id=encoder.pad_id())
    device = split.device
    precision, why = resolve_precision(cfg.train_precision, device)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    trainable = sum(p.numel() for _, p in params)
    optimizer = adamw(params, cfg.lr, cfg.weight_decay)
    steps_per_epoch = math.ceil(len(train) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    scheduler = linear_schedule(optimizer, int(round(cfg.warmup_ratio * total)), total)
    t_prep = time.perf_counter()
    states, rows_a, rows_b = _prepared_texts(encoder, split, train)
    log(
        f"  bi-encoder: {len(states)} distinct texts through the frozen part in "
        f"{time.perf_counter() - t_prep:.1f} s; training {layer_count(model) - split.frozen_layers} of "
        f"{layer_count(model)} layers in {precision} ({why})"
    )
    scores = torch.tensor(train["score"].to_numpy(dtype=np.float32)).to(device)
    pair_lengths = states.lengths[rows_a] + states.lengths[rows_b]
    rng = np.random.default_rng(cfg.seed)

    history: list[dict[str, Any]] = []
    best: dict[str, Any] = {"spearman": -math.inf}
    best_state: dict[str, Any] | None = None
    trainable_names = {n for n, _ in params}
    # a fused optimizer step leaves torch's version counters alone: tell the encoder, or a compiled
    # inference runner (ONNX) would keep validating the old weights
    mark_changed = getattr(encoder, "mark_weights_changed", lambda: None)
    clock = TrainingClock("bi-encoder", total, cfg.epochs, log, on_rate=on_rate)

    def validate(epoch: int, step: int, train_loss: float) -> dict[str, Any]:
        nonlocal best, best_state
        with clock.pause():
            m = evaluate(encoder, validation, conversion=None)
        row = {"epoch": epoch, "step": step, "train_loss": round(train_loss, 5), **m.as_dict()}
        history.append(row)
        if cfg.progress_file:
            atomic_write_text(cfg.progress_file, json.dumps({"history": history}, indent=2))
        if m.spearman > best["spearman"]:
            best = dict(row)
            best_state = {
                n: t.detach().clone() for n, t in model.state_dict().items() if n in trainable_names
            }
        model.train()
        return row

    step = 0
    seconds_per_epoch: list[float] = []
    model.train()
    for epoch in range(1, cfg.epochs + 1):
        t0 = time.perf_counter()
        eval_time = 0.0
        losses: list[float] = []
        for rows in bucketed_batches(pair_lengths, cfg.batch_size, rng):
            with autocast(precision, device):
                emb = _pooled(split, states, np.concatenate([rows_a[rows], rows_b[rows]]), cfg.batch_size)
            u, v = emb[: len(rows)], emb[len(rows) :]
            loss = loss_fn(u, v, scores[torch.from_numpy(rows).to(device)])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.max_grad_norm:
                torch.nn.utils.clip_grad_norm_([p for _, p in params], cfg.max_grad_norm)
            optimizer.step()
            mark_changed()
            scheduler.step()
            step += 1
            clock.step()
            losses.append(float(loss.detach()))
            if cfg.log_every and step % cfg.log_every == 0:
                log(f"  step {step}/{total}: loss {np.mean(losses[-cfg.log_every :]):.4f}")
            if cfg.eval_every and step % cfg.eval_every == 0 and step % steps_per_epoch:
                te = time.perf_counter()
                validate(epoch, step, float(np.mean(losses[-cfg.eval_every :])))
                eval_time += time.perf_counter() - te
        seconds_per_epoch.append(round(time.perf_counter() - t0 - eval_time, 2))
        row = validate(epoch, step, float(np.mean(losses)))
        clock.epoch_done(
            epoch,
            f"loss {row['train_loss']:.4f}, validation Spearman {row['spearman']:.2f} "
            f"Pearson {row['pearson']:.2f} MSE {row['mse']:.4f}",
        )
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
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
        "frozen_layers": split.frozen_layers,
        "train_precision": precision,
    }


def load_base(cfg: FinetuneConfig) -> Any:
    """The base encoder, with ``cfg.max_length``."""
    encoder = load_encoder(cfg.model, threads=cfg.threads, device=default_device())
    encoder.max_length = int(cfg.max_length)
    return encoder
