"""Fine-tune a Sentence-BERT bi-encoder on graded pairs (scores in [0, 1]).

Mean pooling and cosine similarity (the encoder's own); loss = MSE between the cosine and the score (the
studies' choice) or CoSENT; AdamW with linear warm-up and decay; validation every epoch (or every N
steps) with the best checkpoint (validation Spearman) kept; seeds fixed, so a run on the same machine and
thread count repeats exactly. The word-embedding table (96M of e5's 118M parameters) can be frozen, which
cuts the step time ~4x and the optimizer memory by ~1 GB. Texts are script-converted first, as in the
dedup flow. :func:`finetune` writes a model folder that loads in transformers, sentence-transformers and
:func:`nlsim.encoders.load_encoder`, with ``calibration.json``, ``training.json`` and a model card
(``README.md``).

Example (a few seconds with the small English model):
    >>> import tempfile, pandas as pd
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "a dog", "stocks fall", "rain today"] * 4,
    ...                       "text_b": ["a kitten", "a puppy", "markets drop", "football"] * 4,
    ...                       "score": [1.0, 0.9, 0.8, 0.0] * 4,
    ...                       "split": ["train"] * 12 + ["validation"] * 4})
    >>> cfg = FinetuneConfig(model="paraphrase-MiniLM-L3-v2", epochs=1, batch_size=4, conversion="none",
    ...                      out=None, calibrate_level=None, eval_test=False, reranker=False)
    >>> res = finetune(cfg, pairs=pairs)  # doctest: +SKIP
    >>> res.best["epoch"]  # doctest: +SKIP
    1
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.errors import ConfigError

DEFAULT_BASE = "multilingual-e5-small"
TRAINING_JSON = "training.json"
SILVER_PARQUET = "silver_pairs.parquet"
CARD = "README.md"


@dataclass
class FinetuneConfig:
    """Everything that decides a fine-tuning run (saved in ``training.json`` and the card).

    ``train_size`` takes that many training pairs (a random subset drawn with ``subset_seed``, default
    ``seed``; nested: a smaller subset is a prefix of a larger one for one seed). ``eval_every`` = 0
    validates at the end of each epoch; N > 0 validates every N optimizer steps and at each epoch end.
    The defaults (CoSENT, lr 1e-4, 2 epochs, frozen word embeddings, ``tw2sp``, and a reranker beside the
    bi-encoder) are the settings chosen on the validation split of ``annotations/thucnews_tw_pairs.tsv``
    (``benchmarks/bench_quality.py select``); ``loss="mse"`` is the studies' cosine-MSE recipe.
    ``reranker=False`` trains the bi-encoder alone (about a quarter of the time).
    """

    pairs: str | None = None
    out: str | None = None
    model: str = DEFAULT_BASE
    conversion: str = "tw2sp"
    loss: str = "cosent"
    epochs: int = 2
    batch_size: int = 16
    lr: float = 1e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    max_length: int = 64
    freeze_embeddings: bool = True
    eval_every: int = 0
    seed: int = 42
    train_size: int | None = None
    subset_seed: int | None = None
    threads: int | None = None
    train_split: str = "train"
    val_split: str = "validation"
    test_split: str = "test"
    eval_test: bool = True
    eval_before: bool = True
    calibrate_level: float | None = 0.75
    log_every: int = 25
    progress_file: str | None = None
    silver_corpus: str | None = None
    silver_text_field: str | None = None
    silver_anchors: int = 1200
    silver_teacher: str = "ensemble"
    cross_encoder_epochs: int = 3
    cross_encoder_lr: float = 1e-4
    reranker: bool = True

    def check(self) -> None:
        from nlsim.conversion import check_mode
        from nlsim.losses import get_loss

        check_mode(self.conversion)
        get_loss(self.loss)
        for name in ("epochs", "batch_size", "max_length"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_size < 2 and self.loss == "cosent":
            raise ConfigError("cosent needs batch_size >= 2")
        if not self.lr > 0:
            raise ConfigError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.warmup_ratio < 1:
            raise ConfigError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.train_size is not None and self.train_size < 2:
            raise ConfigError(f"train_size must be >= 2, got {self.train_size}")
        if self.reranker:
            self.cross_encoder_config().check()
        if self.silver_corpus is not None:
            if not Path(self.silver_corpus).is_file():
                raise ConfigError(f"silver corpus {self.silver_corpus}: no such file")
            self.silver_config().check()
            self.cross_encoder_config().check()

    def silver_config(self) -> Any:
        from nlsim.silver import SilverConfig

        return SilverConfig(anchors=self.silver_anchors, teacher=self.silver_teacher, seed=self.seed)

    def cross_encoder_config(self) -> Any:
        from nlsim.cross_encoder import CrossEncoderConfig

        return CrossEncoderConfig(
            epochs=self.cross_encoder_epochs,
            lr=self.cross_encoder_lr,
            batch_size=self.batch_size,
            freeze_embeddings=self.freeze_embeddings,
            seed=self.seed,
            threads=self.threads,
        )


@dataclass
class FinetuneResult:
    """What a run produced: the best checkpoint's validation metrics, history, timings, and where it went."""

    config: dict[str, Any]
    best: dict[str, Any]
    history: list[dict[str, Any]]
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    calibration: dict[str, Any] | None = None
    model_dir: str | None = None
    seconds: float = 0.0
    seconds_per_epoch: list[float] = field(default_factory=list)
    steps: int = 0
    n_train: int = 0
    n_validation: int = 0
    n_test: int = 0
    trainable_parameters: int = 0
    total_parameters: int = 0
    data_files: dict[str, str] = field(default_factory=dict)
    silver: dict[str, Any] | None = None
    reranker: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU)."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def select_train_subset(train: pd.DataFrame, size: int | None, seed: int) -> pd.DataFrame:
    """``size`` rows of ``train`` drawn with ``seed`` (all rows, shuffled, when ``size`` is None).

    Subsets are nested: for one seed, the first ``size`` rows of a single permutation.

    Example:
        >>> df = pd.DataFrame({"x": range(10)})
        >>> small = select_train_subset(df, 3, 1)["x"].tolist()
        >>> select_train_subset(df, 6, 1)["x"].tolist()[:3] == small
        True
    """
    if size is not None and size > len(train):
        raise ConfigError(f"train_size {size} is larger than the {len(train)} training pairs")
    order = np.random.default_rng(seed).permutation(len(train))
    if size is not None:
        order = order[:size]
    return train.iloc[order].reset_index(drop=True)


def freeze_word_embeddings(model: Any) -> int:
    """Stop gradients into the word-embedding table; returns how many parameters were frozen."""
    emb = model.get_input_embeddings()
    emb.weight.requires_grad_(False)
    return int(emb.weight.numel())


def linear_schedule(optimizer: Any, warmup: int, total: int) -> Any:
    """LambdaLR: linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""
    import torch

    def factor(step: int) -> float:
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


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
        import torch

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
        import torch

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
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Fine-tune ``encoder`` in place on already-converted pairs; the best checkpoint is loaded at the end.

    Returns ``{"best": {...}, "history": [...], "seconds_per_epoch": [...], "steps": n, ...}``. Validation
    Spearman picks the checkpoint (ties: the earlier one).
    """
    import torch

    from nlsim.evaluation import evaluate
    from nlsim.losses import get_loss

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
            from nlsim.atomic import atomic_write_text

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


def convert_pairs(pairs: pd.DataFrame, conversion: str) -> pd.DataFrame:
    """A copy of ``pairs`` with ``text_a``/``text_b`` script-converted (the originals kept as ``orig_*``)."""
    from nlsim.evaluation import convert_texts

    out = pairs.copy()
    out["orig_text_a"], out["orig_text_b"] = out["text_a"], out["text_b"]
    out["text_a"] = convert_texts(out["text_a"].tolist(), conversion)
    out["text_b"] = convert_texts(out["text_b"].tolist(), conversion)
    return out


def split_pairs(pairs: pd.DataFrame, cfg: FinetuneConfig) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train (subset), validation and test frames from one pair table with a ``split`` column."""
    parts = []
    for name in (cfg.train_split, cfg.val_split, cfg.test_split):
        parts.append(pairs[pairs["split"] == name].reset_index(drop=True))
    train, val, test = parts
    if train.empty:
        raise ConfigError(f"no pairs in split {cfg.train_split!r}")
    if val.empty:
        raise ConfigError(f"no pairs in split {cfg.val_split!r}: the best checkpoint is chosen on it")
    sub_seed = cfg.seed if cfg.subset_seed is None else cfg.subset_seed
    return select_train_subset(train, cfg.train_size, sub_seed), val, test


@dataclass
class PreparedPairs:
    """Converted train (subset), validation and test pairs, and the data files with their SHA-256.

    ``held_out`` holds every validation and test text (original and converted, the test split's even when
    it is not scored) and ``annotated`` every annotated text pair ``(min, max)``, converted: silver pairs
    (:mod:`nlsim.silver`) avoid both.
    """

    train: pd.DataFrame
    validation: pd.DataFrame
    test: pd.DataFrame
    data_files: dict[str, str]
    held_out: set[str] = field(default_factory=set)
    annotated: set[tuple[str, str]] = field(default_factory=set)


def prepare_pairs(cfg: FinetuneConfig, pairs: pd.DataFrame | None = None) -> PreparedPairs:
    """Load (or take) the pairs, split them, draw the training subset and convert the script."""
    from nlsim.atomic import file_sha256
    from nlsim.pairs import load_pairs

    cfg.check()
    data_files: dict[str, str] = {}
    if pairs is None:
        if not cfg.pairs:
            raise ConfigError("no pairs given (cfg.pairs or pairs=)")
        pairs = load_pairs(cfg.pairs)
        data_files[str(cfg.pairs)] = file_sha256(cfg.pairs)
    every = convert_pairs(pairs, cfg.conversion)  # converted once, then split
    train, val, test = split_pairs(every, cfg)
    held_out: set[str] = set()
    for frame in (val, test):
        for col in ("text_a", "text_b", "orig_text_a", "orig_text_b"):
            held_out.update(frame[col].astype(str))
    annotated = {(min(a, b), max(a, b)) for a, b in zip(every["text_a"], every["text_b"], strict=True)}
    if not cfg.eval_test:
        test = test.iloc[0:0]
    return PreparedPairs(train, val, test, data_files, held_out, annotated)


def load_base(cfg: FinetuneConfig) -> Any:
    """The base encoder, with ``cfg.max_length``."""
    from nlsim.encoders import load_encoder

    encoder = load_encoder(cfg.model, threads=cfg.threads)
    encoder.max_length = int(cfg.max_length)
    return encoder


def evaluate_splits(encoder: Any, data: PreparedPairs, when: str) -> dict[str, dict[str, Any]]:
    """Metrics on validation (and test, when present), keyed ``"{when}/{split}"``.

    ``encoder`` is an encoder or a pair scorer (a reranker's :meth:`~nlsim.rerank.Reranker.scorer`).
    """
    from nlsim.evaluation import evaluate

    out = {f"{when}/validation": evaluate(encoder, data.validation, None).as_dict()}
    if len(data.test):
        out[f"{when}/test"] = evaluate(encoder, data.test, None).as_dict()
    return out


def calibrate_encoder(encoder: Any, data: PreparedPairs, cfg: FinetuneConfig, **meta: Any) -> Any:
    """Calibrate the threshold on the (converted) validation pairs (``None`` without a level).

    ``encoder`` is an encoder or a pair scorer; ``meta`` goes to the calibration (e.g. ``model=``).
    """
    from nlsim.calibration import calibrate

    if cfg.calibrate_level is None:
        return None
    cal = calibrate(
        encoder,
        data.validation,
        level=cfg.calibrate_level,
        conversion=None,
        split=cfg.val_split,
        pairs_file=str(cfg.pairs or ""),
        pairs_sha256=next(iter(data.data_files.values()), ""),
        **meta,
    )
    cal.conversion = cfg.conversion
    return cal


def fit_reranker(
    encoder: Any, data: PreparedPairs, cfg: FinetuneConfig, log: Callable[[str], None] = print
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Train the reranker (:mod:`nlsim.rerank`) beside the fine-tuned ``encoder``, calibrate its score on
    validation, and score it; returns the reranker and its metrics keyed ``"reranked/{split}"``."""
    from nlsim.rerank import train_reranker

    reranker = train_reranker(encoder, data.train, data.validation, cfg, log=log)
    scorer = reranker.scorer(encoder)
    cal = calibrate_encoder(scorer, data, cfg, model="reranker")
    reranker.calibration = cal.as_dict() if cal is not None else None
    metrics = evaluate_splits(scorer, data, "reranked")
    log(f"{reranker.describe()}; validation Spearman {metrics['reranked/validation']['spearman']:.2f}")
    return reranker, metrics


def add_silver_pairs(data: PreparedPairs, silver: Any) -> None:
    """Append the silver pairs (:class:`nlsim.silver.SilverPairs`) to ``data.train`` and note the corpus."""
    data.train = pd.concat([data.train, silver.pairs], ignore_index=True)
    data.data_files[silver.corpus] = silver.corpus_sha256


def make_result(
    cfg: FinetuneConfig,
    data: PreparedPairs,
    run: dict[str, Any],
    metrics: dict[str, dict[str, Any]],
    cal: Any,
    seconds: float,
    silver: Any = None,
    reranker: Any = None,
) -> FinetuneResult:
    """The run's record; with ``silver``, ``n_train`` counts the gold pairs and ``silver`` says the rest."""
    from nlsim.rerank import reranker_summary

    n_silver = len(silver.pairs) if silver is not None else 0
    return FinetuneResult(
        config=asdict(cfg),
        best=run["best"],
        history=run["history"],
        metrics=metrics,
        calibration=cal.as_dict() if cal else None,
        seconds=round(seconds, 1),
        seconds_per_epoch=run["seconds_per_epoch"],
        steps=run["steps"],
        n_train=len(data.train) - n_silver,
        n_validation=len(data.validation),
        n_test=len(data.test),
        trainable_parameters=run["trainable_parameters"],
        total_parameters=run["total_parameters"],
        data_files=data.data_files,
        silver=silver.summary() if silver is not None else None,
        reranker=reranker_summary(reranker) if reranker is not None else None,
    )


def finetune(
    cfg: FinetuneConfig,
    *,
    pairs: pd.DataFrame | None = None,
    encoder: Any = None,
    log: Callable[[str], None] = print,
) -> FinetuneResult:
    """Train on the train split, choose on validation, evaluate, calibrate and (with ``cfg.out``) save.

    ``pairs`` overrides ``cfg.pairs`` (a loaded table); ``encoder`` overrides loading ``cfg.model``.
    Metrics before and after fine-tuning go in ``result.metrics`` keyed ``"{before|after}/{split}"``.
    """
    t_start = time.perf_counter()
    data = prepare_pairs(cfg, pairs)
    if encoder is None:
        encoder = load_base(cfg)
    encoder.max_length = int(cfg.max_length)
    log(
        f"fine-tuning {encoder.name} on {len(data.train)} pairs (validation {len(data.validation)}, "
        f"test {len(data.test)}), conversion {cfg.conversion}, loss {cfg.loss}, {cfg.epochs} epoch(s), "
        f"lr {cfg.lr}, "
        f"bs {cfg.batch_size}, frozen embeddings {cfg.freeze_embeddings}, seed {cfg.seed}"
    )
    metrics = evaluate_splits(encoder, data, "before") if cfg.eval_before else {}
    silver = None
    if cfg.silver_corpus:
        from nlsim.silver import make_silver_pairs

        silver = make_silver_pairs(data, cfg, log=log)
        add_silver_pairs(data, silver)
        log(f"training on {len(data.train)} pairs: gold + {len(silver.pairs)} silver")
    run = train_encoder(encoder, data.train, data.validation, cfg, log=log)
    metrics.update(evaluate_splits(encoder, data, "after"))
    cal = calibrate_encoder(encoder, data, cfg)
    reranker = None
    if cfg.reranker:
        reranker, reranked = fit_reranker(encoder, data, cfg, log=log)
        metrics.update(reranked)
    result = make_result(cfg, data, run, metrics, cal, time.perf_counter() - t_start, silver, reranker)
    if cfg.out:
        save_model_folder(encoder, cfg.out, result, cal, silver, reranker)
    result.seconds = round(time.perf_counter() - t_start, 1)
    log(
        f"done in {result.seconds:.0f} s; best validation Spearman {run['best']['spearman']:.2f} "
        f"(epoch {run['best']['epoch']}, step {run['best']['step']})"
    )
    return result


def save_model_folder(
    encoder: Any, out: str | Path, result: FinetuneResult, cal: Any, silver: Any = None, reranker: Any = None
) -> Path:
    """Save the encoder, then ``calibration.json``, ``training.json``, the card, and the conversion.

    With ``silver`` (:class:`nlsim.silver.SilverPairs`), its labelled pairs go to ``silver_pairs.parquet``;
    with ``reranker`` (:class:`nlsim.rerank.Reranker`), it goes to ``reranker/``.
    """
    from nlsim.atomic import atomic_write_text
    from nlsim.calibration import save_calibration

    out = Path(out)
    encoder.base_model = getattr(encoder, "base_model", None) or getattr(encoder, "model_id", "")
    encoder.model_id = f"finetuned:{out.name}"
    encoder.name = out.name
    result.model_dir = str(out)
    encoder.save(out)
    nj = out / "nlsim.json"
    if nj.is_file():
        meta = json.loads(nj.read_text(encoding="utf-8"))
        meta["conversion"] = result.config.get("conversion", "none")
        meta["finetuned"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        atomic_write_text(nj, json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    if cal is not None:
        cal = copy.copy(cal)
        cal.model = encoder.model_id
        cal.fingerprint = encoder.fingerprint
        save_calibration(cal, out)
        result.calibration = cal.as_dict()
    atomic_write_text(
        out / TRAINING_JSON, json.dumps(result.as_dict(), indent=2, ensure_ascii=False, default=str)
    )
    if silver is not None:
        from nlsim.atomic import atomic_write_parquet

        atomic_write_parquet(silver.pairs, out / SILVER_PARQUET)
    if reranker is not None:
        reranker.save(out)
    atomic_write_text(out / CARD, model_card(result, encoder))
    return out


def silver_card_lines(silver: dict[str, Any] | None) -> list[str]:
    """The card's paragraph on silver pairs (none without them)."""
    if not silver:
        return []
    sources = ", ".join(f"{k} {v}" for k, v in silver["by_source"].items())
    ce = max(silver["cross_encoder_history"], key=lambda h: h["spearman"])
    return [
        f"Silver pairs: {silver['pairs']} drawn from `{silver['corpus']}` ({silver['pool_size']} texts after "
        f"leaving out every validation/test text; {sources}), labelled by the {silver['teacher']} teacher "
        f"(cross-encoder validation Spearman {ce['spearman']}, epoch {ce['epoch']}; first bi-encoder "
        f"{silver['teacher_bi_encoder_best']['spearman']}). They are in `{SILVER_PARQUET}`.",
        "",
    ]


def metrics_row_label(key: str) -> str:
    """``before/test`` -> ``before fine-tuning``; ``reranked/test`` -> ``after fine-tuning, reranked``."""
    when = key.split("/")[0]
    return "after fine-tuning, reranked" if when == "reranked" else f"{when} fine-tuning"


def reranker_card_lines(reranker: dict[str, Any] | None) -> list[str]:
    """The card's section on the reranker (none without one)."""
    if not reranker:
        return []
    best = reranker["cross_encoder_best"]
    lines = [
        "## Reranker",
        "",
        f"`reranker/` holds a cross-encoder fine-tuned from `{reranker['base_model']}` on the same training "
        f"pairs (kept epoch {best['epoch']}, validation Spearman {best['spearman']}). Dedup rescores the "
        "pairs the bi-encoder finds with it; the rerank score is "
        f"{reranker['weight']:g} x ({reranker['slope']:.4f} x cosine {reranker['intercept']:+.4f}) + "
        f"{1 - reranker['weight']:g} x cross-encoder, on the 0-1 relatedness scale. "
        "Its metrics are the `reranked` rows above.",
        "",
    ]
    c = reranker.get("calibration")
    if c:
        lines += [
            f"Rerank score >= {c['threshold']:.4f} marks a pair as related at level >= {c['level']} "
            f"(validation: precision {c['precision']:.3f}, recall {c['recall']:.3f}, F1 {c['f1']:.3f}).",
            "",
        ]
    return lines


def model_card(result: FinetuneResult, encoder: Any = None) -> str:
    """The Markdown model card: base model, data and hashes, sizes, parameters, seed, time, metrics."""
    from nlsim.evaluation import metrics_table

    cfg = result.config
    base = getattr(encoder, "base_model", None) or cfg.get("model")
    lines = [
        "---",
        "library_name: sentence-transformers",
        "pipeline_tag: sentence-similarity",
        f"base_model: {base}",
        "tags: [sentence-transformers, sentence-similarity, nlsim]",
        "---",
        "",
        f"# {Path(result.model_dir or cfg.get('out') or 'model').name}",
        "",
        f"A Sentence-BERT bi-encoder fine-tuned from `{base}` by `nlsim finetune` on graded "
        "relatedness pairs "
        "(scores 0-1). Mean pooling, L2 normalisation, cosine similarity"
        + (
            f"; every text is prefixed with `{encoder.prefix}`"
            if encoder is not None and encoder.prefix
            else ""
        )
        + f"; texts are converted with OpenCC `{cfg.get('conversion')}` before encoding.",
        "",
        "## Data",
        "",
        "| file | sha256 |",
        "|---|---|",
        *[f"| `{f}` | `{h}` |" for f, h in result.data_files.items()],
        "",
        f"Pairs: train {result.n_train}"
        + (
            f" (subset of {cfg['train_size']} drawn with seed "
            f"{cfg['subset_seed'] if cfg.get('subset_seed') is not None else cfg['seed']})"
            if cfg.get("train_size")
            else ""
        )
        + f", validation {result.n_validation}, test {result.n_test}.",
        "",
        *silver_card_lines(result.silver),
        "## Training",
        "",
        "| parameter | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in cfg.items() if k not in ("pairs", "out")],
        f"| trainable / total parameters | {result.trainable_parameters:,} / {result.total_parameters:,} |",
        f"| optimizer steps | {result.steps} |",
        f"| seconds per epoch (training only) | {', '.join(f'{s:.0f}' for s in result.seconds_per_epoch)} |",
        f"| total time (s) | {result.seconds:.0f} |",
        "",
        f"Best checkpoint (kept): epoch {result.best.get('epoch')}, step {result.best.get('step')}, "
        f"validation Spearman {result.best.get('spearman')}.",
        "",
        "## Metrics",
        "",
        "Spearman and Pearson x100 between cosine and gold score; "
        "MSE and MAE of the cosine against the score"
        + ("; `reranked` rows score the rerank score instead." if result.reranker else "."),
        "",
        metrics_table(
            [
                {
                    "model": metrics_row_label(k),
                    "conversion": cfg.get("conversion"),
                    "split": k.split("/")[1],
                    **v,
                }
                for k, v in result.metrics.items()
            ]
        ),
        "",
        "### Validation history",
        "",
        "| epoch | step | train loss | Spearman | Pearson | MSE |",
        "|---|---|---|---|---|---|",
        *[
            f"| {h['epoch']} | {h['step']} | {h['train_loss']} | {h['spearman']} | {h['pearson']} "
            f"| {h['mse']} |"
            for h in result.history
        ],
        "",
    ]
    lines += reranker_card_lines(result.reranker)
    if result.calibration:
        c = result.calibration
        lines += [
            "## Calibrated threshold",
            "",
            f"cosine >= {c['threshold']:.4f} marks a pair as related at level >= {c['level']} "
            f"(validation: precision {c['precision']:.3f}, recall {c['recall']:.3f}, F1 {c['f1']:.3f}, "
            f"{c['n_positive']} of {c['n']} pairs positive). Stored in `calibration.json`.",
            "",
        ]
    lines += [
        "## Use",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "model = SentenceTransformer('PATH')  # applies the prefix as the default prompt",
        "# or: from nlsim.encoders import load_encoder; load_encoder('PATH')",
        "```",
        "",
    ]
    return "\n".join(lines)
