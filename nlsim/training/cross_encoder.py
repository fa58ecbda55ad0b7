"""Train the reranker's cross-encoder (:class:`nlsim.rerank.cross_encoder.CrossEncoder`) on graded pairs.

Binary cross-entropy against the graded score (soft labels), the rare same-story pairs weighted up
(``story_weight``), both text orders, AdamW with linear warm-up and decay, the best validation epoch
(Spearman) kept.

Example (a few seconds with the small English model):
    >>> import pandas as pd
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "stocks fall"] * 4, "text_b": ["a kitten", "football"] * 4,
    ...                       "score": [1.0, 0.0] * 4})
    >>> ce, history = train_cross_encoder("paraphrase-MiniLM-L3-v2", pairs, pairs,
    ...                                   CrossEncoderConfig(epochs=1, batch_size=4, log_every=0),
    ...                                   log=lambda m: None)
    >>> [h["epoch"] for h in history], ce.predict(["a cat"], ["a kitten"]).shape
    ([1], (1,))
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr

from nlsim.progress import say
from nlsim.rerank.cross_encoder import CrossEncoder
from nlsim.training.config import CrossEncoderConfig
from nlsim.training.optim import freeze_word_embeddings, linear_schedule, set_seed


def train_cross_encoder(
    base: str | CrossEncoder,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: CrossEncoderConfig,
    log: Callable[[str], None] = say,
) -> tuple[CrossEncoder, list[dict[str, Any]]]:
    """Train on ``train`` (both orders), validate each epoch, keep the best epoch (validation Spearman).

    Pairs must already be script-converted. Returns the cross-encoder (best weights loaded) and the
    per-epoch history (``epoch``, ``train_loss``, ``spearman``, ``seconds``).
    """
    cfg.check()
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    set_seed(cfg.seed)
    ce = base if isinstance(base, CrossEncoder) else CrossEncoder.from_base(base, cfg.max_length, cfg.threads)
    ce._onnx_runner = None  # an ONNX export of earlier weights no longer applies
    if cfg.freeze_embeddings:
        freeze_word_embeddings(ce.model)
    text_a = train["text_a"].tolist() + train["text_b"].tolist()
    text_b = train["text_b"].tolist() + train["text_a"].tolist()
    scores = torch.tensor(np.concatenate([train["score"].to_numpy(dtype=np.float32)] * 2))
    weights = torch.where(scores >= cfg.story_level - 1e-9, float(cfg.story_weight), 1.0)
    params = ce.parameters()
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    per_epoch = math.ceil(len(text_a) / cfg.batch_size)
    total = per_epoch * cfg.epochs
    scheduler = linear_schedule(optimizer, int(round(cfg.warmup_ratio * total)), total)
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
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
            per_pair = loss_fn(ce.logits([text_a[i] for i in rows], [text_b[i] for i in rows]), scores[rows])
            loss = (per_pair * weights[rows]).sum() / weights[rows].sum()
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
