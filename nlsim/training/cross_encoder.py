"""Train the reranker's cross-encoder (:class:`nlsim.rerank.cross_encoder.CrossEncoder`) on graded pairs.

Binary cross-entropy against the graded score (soft labels), the rare same-story pairs weighted up
(``story_weight``), optionally a same-story ranking term beside it (``rank_weight``) and a learned logit
scale (``temperature_lr``, folded into the head at the end), both text orders, AdamW with linear warm-up and
decay, the best validation epoch (Spearman) kept. With ``drop_easy``, an epoch after the first leaves out
most of the sequences the model already scored within that margin of their score when it last trained on
them: a share ``easy_sample`` of them is drawn each epoch and weighted by its inverse (the same-story
pairs always stay: :mod:`nlsim.training.easy_pairs`).

Every pair, in both orders, is tokenised once and run once through the frozen lower layers
(:mod:`nlsim.training.split_encoder`; on a CPU the training pairs' pass in the training's arithmetic, bf16
where the CPU has it, 2.3 times as fast as fp32 on a Xeon with AMX: their states feed the training steps
alone, which multiply in bf16 anyway; the validation pairs' pass is fp32, as their scores are the quality
check's reference); a step trains the upper layers and the head on a batch of
sequences of similar length (:func:`nlsim.encoders.batching.bucketed_batches`), their real tokens packed
without padding (:mod:`nlsim.training.packing`), in bf16 autocast where the hardware computes it
(:mod:`nlsim.training.mixed_precision`). Validation reads the same cached states.
:class:`CrossEncoderTraining` is one run an epoch at a time (:mod:`nlsim.training.side_by_side` trains the
first epoch in a thread of its own, beside the bi-encoder, and the rest in the caller's).

Example (a few seconds with the small English model):
    >>> import pandas as pd
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "stocks fall"] * 4, "text_b": ["a kitten", "football"] * 4,
    ...                       "score": [1.0, 0.0] * 4})
    >>> run = train_cross_encoder("paraphrase-MiniLM-L3-v2", pairs, pairs,
    ...                           CrossEncoderConfig(epochs=1, batch_size=4, log_every=0), log=lambda m: None)
    >>> [h["epoch"] for h in run.history], run.ce.predict(["a cat"], ["a kitten"]).shape
    ([1], (1,))
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from nlsim.encoders.batching import bucketed_batches, sorted_batches
from nlsim.encoders.device import default_device
from nlsim.encoders.lanes import lanes_for, run_batches
from nlsim.evaluation.figures import CORRELATION_DIGITS, spearman_raw
from nlsim.progress import say
from nlsim.rerank.cross_encoder import CrossEncoder, pooled_logits
from nlsim.training.clock import Outlook, TrainingClock
from nlsim.training.config import CrossEncoderConfig
from nlsim.training.easy_pairs import LATER_EPOCH_SHARE, sample_easy, still_hard
from nlsim.training.losses.story_ranking import story_ranking_loss
from nlsim.training.mixed_precision import autocast
from nlsim.training.mixed_precision import resolve as resolve_precision
from nlsim.training.optim import EpochProgress, adamw, linear_schedule, set_seed
from nlsim.training.packing import segment_mean
from nlsim.training.split_encoder import FrozenStates, SplitEncoder, layer_count


def both_orders(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """``(first, second)`` texts of every pair read as A-B, then of every pair read as B-A."""
    a, b = frame["text_a"].tolist(), frame["text_b"].tolist()
    return a + b, b + a


def _states(
    ce: CrossEncoder, split: SplitEncoder, frame: pd.DataFrame, precision: str = "fp32"
) -> FrozenStates:
    """The frozen part's states of ``frame``'s pairs in both orders, its products in ``precision``."""
    first, second = both_orders(frame)
    ids, types = ce.pair_ids(first, second)
    return split.prepare(ids, types, reuse_kept=False, precision=precision)  # no pass keeps a pair's states


def _logits(
    ce: CrossEncoder, split: SplitEncoder, states: FrozenStates, rows: Any, log_scale: torch.Tensor | None
) -> torch.Tensor:
    """The head's logits of sequences ``rows``: from packed tokens (:mod:`nlsim.training.packing`) where the
    frozen part's states are cached, else from a padded batch (the embeddings train)."""
    if states.states is not None:
        hidden, packing = split.forward_packed(states, rows)
        logits = ce.head(segment_mean(hidden.float(), packing)).squeeze(-1)
    else:
        hidden, mask = split.forward(states, rows)
        logits = pooled_logits(ce.head, hidden.float(), mask)
    return logits if log_scale is None else logits * log_scale.exp()


def _epoch_batches(
    states: FrozenStates,
    n_pairs: int,
    cfg: CrossEncoderConfig,
    rng: np.random.Generator,
    keep: np.ndarray | None = None,
) -> list[np.ndarray]:
    """One epoch's batches of sequence rows: every pair in both orders (``orders_per_epoch=2``), or each
    pair once, in an order drawn at random (``1``: half the steps; over epochs both orders are seen); only
    the rows where ``keep`` is true, when given."""
    if cfg.orders_per_epoch == 2:
        rows = np.arange(len(states))
    else:
        rows = np.arange(n_pairs) + n_pairs * rng.integers(0, 2, size=n_pairs)
    if keep is not None:
        rows = rows[keep[rows]]
    return [rows[b] for b in bucketed_batches(states.lengths[rows], cfg.batch_size, rng)]


def sequence_probabilities(
    ce: CrossEncoder,
    split: SplitEncoder,
    states: FrozenStates,
    rows: np.ndarray,
    batch_size: int = 128,
    log_scale: torch.Tensor | None = None,
) -> np.ndarray:
    """The probabilities of the sequences ``rows`` of ``states`` (fp32, from the cached states), in the
    order of ``rows``."""
    rows = np.asarray(rows, dtype=np.int64)
    logits = np.zeros(len(rows), dtype=np.float64)
    was_training = ce.model.training
    ce.model.eval()
    batches = sorted_batches(states.lengths[rows], batch_size)

    def read_rows(batch: np.ndarray) -> None:
        logits[batch] = _logits(ce, split, states, rows[batch], log_scale).float().cpu().numpy()

    try:
        run_batches(batches, read_rows, lanes_for(split.device, None, len(batches)))
    finally:
        ce.model.train(was_training)
    return 1.0 / (1.0 + np.exp(-logits))


@dataclass
class _Run:
    """What one training run of the cross-encoder works with (built once by :func:`_start`)."""

    ce: CrossEncoder
    split: SplitEncoder
    states: FrozenStates
    val_states: FrozenStates
    precision: str
    scores: torch.Tensor
    story: torch.Tensor
    """True where a training sequence's pair is the same story (score at or above ``story_level``)."""
    weights: torch.Tensor
    log_scale: torch.Tensor | None
    """The learned logit scale's log (``cfg.temperature_lr > 0``), else None."""
    params: list[torch.nn.Parameter]
    optimizer: Any
    scheduler: Any
    clock: TrainingClock
    per_epoch: int
    progress: EpochProgress
    errors: np.ndarray
    """Each training sequence's |sigmoid(logit) - score| when the model last trained on it (inf: not yet)."""
    sampled: torch.Tensor
    """This epoch's loss weight of each sequence for the easy ones drawn (``1 / easy_sample``), else 1."""
    after_step: Callable[[], None] = lambda: None
    """Called after each optimizer step (it may raise, to stop the training)."""


def _start(
    base: str | CrossEncoder,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: CrossEncoderConfig,
    log: Callable[[str], None],
    on_rate: Callable[[float], None] | None,
    later_pace: tuple[float, str] = (1.0, ""),
) -> _Run:
    """The cross-encoder, its frozen part run once over both splits' pairs, the optimizer and the clock
    (``later_pace``: the later epochs' seconds a step against the first's, and how the estimate says so).
    """
    if isinstance(base, CrossEncoder):
        ce = base
    else:
        ce = CrossEncoder.from_base(base, cfg.max_length, cfg.threads, device=default_device())
    ce._onnx_runner = None  # an ONNX export of earlier weights no longer applies
    frozen = int(cfg.frozen_layers) if cfg.freeze_embeddings else 0
    pad = ce.tokenizer.pad_token_id
    split = SplitEncoder(ce.model, frozen, train_embeddings=not cfg.freeze_embeddings, pad_id=pad)
    device = split.device
    ce.head.to(device)
    precision, why = resolve_precision(cfg.train_precision, device)
    t_prep = time.perf_counter()
    frozen_precision = precision if device.type == "cpu" else "fp32"  # a GPU's pass takes a second
    states, val_states = _states(ce, split, train, frozen_precision), _states(ce, split, validation)
    how = " (the training pairs' in bf16)" if frozen_precision == "bf16" else ""
    log(
        f"  cross-encoder: {len(states) + len(val_states)} pair sequences through the frozen part{how} in "
        f"{time.perf_counter() - t_prep:.1f} s; training {layer_count(ce.model) - split.frozen_layers} of "
        f"{layer_count(ce.model)} layers in {precision} ({why})"
    )
    scores = torch.tensor(np.concatenate([train["score"].to_numpy(dtype=np.float32)] * 2)).to(device)
    story = scores >= cfg.story_level - 1e-9
    weights = torch.where(story, float(cfg.story_weight), 1.0)
    named = [(n, p) for n, p in ce.model.named_parameters() if p.requires_grad]
    named += [(f"head.{n}", p) for n, p in ce.head.named_parameters()]
    optimizer = adamw(named, cfg.lr, cfg.weight_decay)
    log_scale = None
    if cfg.temperature_lr:
        log_scale = torch.zeros((), device=device, requires_grad=True)
        optimizer.add_param_group({"params": [log_scale], "lr": cfg.temperature_lr, "weight_decay": 0.0})
    per_epoch = math.ceil(len(train) * cfg.orders_per_epoch / cfg.batch_size)
    total = per_epoch * cfg.epochs
    progress = EpochProgress(per_epoch)
    scheduler = linear_schedule(optimizer, int(round(cfg.warmup_ratio * total)), total, progress)
    clock = TrainingClock(
        "cross-encoder", total, cfg.epochs, log, on_rate=on_rate, outlook=_outlook(cfg, per_epoch, later_pace)
    )
    params = [p for _, p in named]
    return _Run(
        ce,
        split,
        states,
        val_states,
        precision,
        scores,
        story,
        weights,
        log_scale,
        params,
        optimizer,
        scheduler,
        clock,
        per_epoch,
        progress,
        np.full(len(states), np.inf),
        torch.ones(len(states), device=device),
    )


def _outlook(cfg: CrossEncoderConfig, per_epoch: int, later_pace: tuple[float, str]) -> Outlook:
    """The later epochs as the clock's estimates foresee them: about :data:`LATER_EPOCH_SHARE` of the
    first's steps each where the easy pairs are left out, at ``later_pace``."""
    pace, said = later_pace
    share = LATER_EPOCH_SHARE if cfg.drop_easy else 1.0  # (a one-epoch clock has no outlook)
    if share < 1:
        said = ", ".join(s for s in (said, "without most easy pairs") if s)
    return Outlook(per_epoch, share=share, pace=pace, said=said)


def _plan_epoch(
    run: _Run,
    epoch: int,
    n_pairs: int,
    cfg: CrossEncoderConfig,
    rng: np.random.Generator,
    log: Callable[[str], None],
) -> list[np.ndarray]:
    """The epoch's batches; from the second epoch on with ``cfg.drop_easy``, only the sequences
    :func:`still_hard` keeps, the schedule and the clock told of the shorter epoch."""
    if not cfg.drop_easy or epoch == 1:
        return _epoch_batches(run.states, n_pairs, cfg, rng)
    hard = still_hard(run.errors, run.story.cpu().numpy(), cfg.drop_easy)
    keep, weight = sample_easy(hard, cfg.easy_sample, rng)
    run.sampled = torch.from_numpy(weight.astype(np.float32)).to(run.split.device)
    batches = _epoch_batches(run.states, n_pairs, cfg, rng, keep)
    run.progress.begin_epoch(run.clock.steps, epoch, len(batches))
    run.clock.replan(run.clock.steps + len(batches) * (cfg.epochs - epoch + 1))
    log(
        f"  cross-encoder epoch {epoch}: {int(keep.sum())} of {len(keep)} pair sequences, {len(batches)} "
        f"steps: {int(hard.sum())} still off their score by {cfg.drop_easy:g} or more (or the same story), "
        f"{int((keep & ~hard).sum())} of the others drawn ({cfg.easy_sample:g}), weighted by its inverse"
    )
    return batches


def _train_epoch(
    run: _Run,
    epoch: int,
    batches: list[np.ndarray],
    cfg: CrossEncoderConfig,
    log: Callable[[str], None],
) -> float:
    """One epoch of optimizer steps over ``batches``; returns its mean loss. Each sequence's distance from
    its score, as this forward pass saw it, goes to ``run.errors``."""
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    device = run.split.device
    losses: list[float] = []
    run.ce.model.train()
    for k, rows in enumerate(batches):
        idx = torch.from_numpy(rows).to(device)
        with autocast(run.precision, device):
            logits = _logits(run.ce, run.split, run.states, rows, run.log_scale).float()
        per_pair = loss_fn(logits, run.scores[idx])
        with torch.no_grad():
            run.errors[rows] = (torch.sigmoid(logits) - run.scores[idx]).abs().cpu().numpy()
        weights = run.weights[idx] * run.sampled[idx]
        loss = (per_pair * weights).sum() / weights.sum()
        if cfg.rank_weight:
            loss = loss + cfg.rank_weight * story_ranking_loss(logits, run.story[idx])
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(run.params, 1.0)
        run.optimizer.step()
        run.ce.mark_weights_changed()  # a fused step leaves torch's version counters alone
        run.scheduler.step()
        run.clock.step()
        run.after_step()
        losses.append(float(loss.detach()))
        if cfg.log_every and (k + 1) % cfg.log_every == 0:
            recent = np.mean(losses[-cfg.log_every :])
            log(f"  cross-encoder epoch {epoch} step {k + 1}/{len(batches)}: loss {recent:.4f}")
    return float(np.mean(losses))


def _trained_state(ce: CrossEncoder, log_scale: torch.Tensor | None) -> dict[str, torch.Tensor]:
    """A copy of what training changes (the frozen part need not be copied), the head's as ``head.*``, with
    a learned logit scale folded into the head (its weight and bias times ``exp(log_scale)``): the copy
    scores as the training did, with no scale beside it."""
    state = {n: p.detach().clone() for n, p in ce.model.named_parameters() if p.requires_grad}
    factor = 1.0 if log_scale is None else float(log_scale.detach().exp())
    state.update({f"head.{n}": t.detach().clone() * factor for n, t in ce.head.state_dict().items()})
    return state


def _restore(ce: CrossEncoder, state: dict[str, torch.Tensor]) -> None:
    """Load a :func:`_trained_state` back and freeze the cross-encoder for scoring."""
    ce.model.load_state_dict({n: t for n, t in state.items() if not n.startswith("head.")}, strict=False)
    ce.head.load_state_dict({n[5:]: t for n, t in state.items() if n.startswith("head.")})
    for p in ce.model.parameters():
        p.requires_grad_(False)
    ce.model.eval()


@dataclass
class TrainedCrossEncoder:
    """:func:`train_cross_encoder`'s answer: the cross-encoder (the kept epoch's weights loaded), the
    per-epoch history, and the kept epoch's fp32 scores of the validation pairs (in their row order), from
    the cached frozen states: what :meth:`CrossEncoder.predict` gives them, so they need not be computed
    again.
    """

    ce: CrossEncoder
    history: list[dict[str, Any]]
    validation_scores: np.ndarray


def train_cross_encoder(
    base: str | CrossEncoder,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: CrossEncoderConfig,
    log: Callable[[str], None] = say,
    on_rate: Callable[[float], None] | None = None,
) -> TrainedCrossEncoder:
    """Train on ``train`` (both orders), validate each epoch, keep the best epoch (validation Spearman; the
    last one with ``cfg.keep_best=False``). Every epoch is judged by the Spearman of its A-B readings of the
    validation pairs (an epoch before the last reads only those: half the pass); the last epoch, or the one
    kept, reads both orders too, for the validation scores handed on.

    Pairs must already be script-converted. Returns the cross-encoder (best weights loaded), the per-epoch
    history (``epoch``, ``train_loss``, ``spearman``, ``seconds``) and the kept epoch's validation scores
    (:class:`TrainedCrossEncoder`). ``on_rate`` hears the measured seconds per step once
    (:class:`nlsim.training.clock.TrainingClock`).
    """
    cfg.check()
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    set_seed(cfg.seed)
    training = CrossEncoderTraining(base, train, validation, cfg, log, on_rate)
    while not training.done:
        training.epoch()
    return training.result()


class CrossEncoderTraining:
    """One training run of the cross-encoder (:func:`train_cross_encoder`), an epoch at a time: built with
    the frozen part run over both splits, then :meth:`epoch` until :attr:`done`, then :meth:`result`. The
    caller sets the threads and the seed (or a thread's own dropout generator,
    :func:`nlsim.training.dropout.drawn_from`) around each call; ``after_step`` is called after each
    optimizer step (it may raise, to stop the training)."""

    def __init__(
        self,
        base: str | CrossEncoder,
        train: pd.DataFrame,
        validation: pd.DataFrame,
        cfg: CrossEncoderConfig,
        log: Callable[[str], None] = say,
        on_rate: Callable[[float], None] | None = None,
        after_step: Callable[[], None] | None = None,
        later_pace: tuple[float, str] = (1.0, ""),
    ) -> None:
        cfg.check()
        self.cfg, self.log, self.n_train = cfg, log, len(train)
        self.run = _start(base, train, validation, cfg, log, on_rate, later_pace)
        if after_step is not None:
            self.run.after_step = after_step
        self.rng = np.random.default_rng(cfg.seed)
        self.gold = validation["score"].to_numpy()
        self.history: list[dict[str, Any]] = []
        self.best: tuple[float, dict[str, torch.Tensor] | None] = (-math.inf, None)
        self.kept: np.ndarray | None = None
        self.kept_first: np.ndarray | None = None
        """The kept epoch's readings of the validation pairs in the A-B order, when it was not the last
        (:meth:`result` reads the B-A order then)."""

    @property
    def done(self) -> bool:
        """Whether every epoch has trained."""
        return len(self.history) >= self.cfg.epochs

    def epoch(self) -> None:
        """Train the next epoch, validate it, and keep its weights when it is the best so far."""
        run, cfg, n = self.run, self.cfg, len(self.gold)
        epoch = len(self.history) + 1
        t0 = time.perf_counter()
        batches = _plan_epoch(run, epoch, self.n_train, cfg, self.rng, self.log)
        train_loss = _train_epoch(run, epoch, batches, cfg, self.log)
        seconds = time.perf_counter() - t0
        last = epoch == cfg.epochs
        with run.clock.pause():  # an epoch before the last is judged on one text order (A-B): half the pass
            probs = sequence_probabilities(
                run.ce, run.split, run.val_states, np.arange(2 * n if last else n), log_scale=run.log_scale
            )
        pred = (probs[:n] + probs[n:]) / 2 if last else None
        rho = spearman_raw(probs[:n], self.gold)  # every epoch's criterion: the A-B reading's Spearman
        rho = rho if math.isfinite(rho) else -math.inf
        row = {"epoch": epoch, "train_loss": round(train_loss, 5), "spearman": round(rho, CORRELATION_DIGITS)}
        if pred is not None:
            both = spearman_raw(pred, self.gold)
            row["spearman_both_orders"] = round(both, CORRELATION_DIGITS) if math.isfinite(both) else None
        note = ""
        if run.log_scale is not None:
            scale = float(run.log_scale.detach().exp())
            row["logit_scale"] = round(scale, 4)
            note = f", logit scale {scale:.2f}"
        self.history.append({**row, "seconds": round(seconds, 1)})
        both_said = f" (both orders {row['spearman_both_orders']:.2f})" if pred is not None else ""
        run.clock.epoch_done(epoch, f"loss {train_loss:.4f}, validation Spearman {rho:.2f}{both_said}{note}")
        if rho > self.best[0] or self.best[1] is None or not cfg.keep_best:
            self.best, self.kept = (rho, _trained_state(run.ce, run.log_scale)), pred
            self.kept_first = probs[:n] if pred is None else None

    def result(self) -> TrainedCrossEncoder:
        """The kept epoch's weights loaded, the history and its validation scores."""
        assert self.best[1] is not None
        _restore(self.run.ce, self.best[1])
        kept = self.kept
        if kept is None:  # an epoch before the last was kept: its B-A readings beside its A-B ones
            assert self.kept_first is not None
            run, n = self.run, len(self.gold)
            second = sequence_probabilities(run.ce, run.split, run.val_states, np.arange(n, 2 * n))
            kept = (self.kept_first + second) / 2
        return TrainedCrossEncoder(self.run.ce, self.history, kept)
