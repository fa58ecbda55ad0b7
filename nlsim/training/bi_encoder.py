"""The bi-encoder training loop (Sentence-BERT: siamese encoder, mean pooling, cosine similarity).

Loss = CoSENT or MSE between the cosine and the gold score (:mod:`nlsim.training.losses`); AdamW with linear
warm-up and decay; validation every epoch (or every N steps) with the best checkpoint (validation
Spearman) kept; seeds fixed, so a run on the same machine and thread count repeats exactly (in a cold
chain the frozen part's states are those its zero-shot reports kept, equal to its own to float rounding:
such a run repeats exactly too, and differs from a run alone by that rounding). The
word-embedding table (96M of e5's 118M parameters) can be frozen, which cuts the step time ~4x and the
optimizer memory by ~1 GB. With ``drop_easy``, an epoch after the first leaves out the pairs already scored
right (:mod:`nlsim.training.easy_pairs`).

Example (a few seconds with the small English model):
    >>> import pandas as pd
    >>> from nlsim.encoders import load_encoder
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "a dog", "stocks fall", "rain today"] * 2,
    ...                       "text_b": ["a kitten", "a puppy", "markets drop", "football"] * 2,
    ...                       "score": [1.0, 0.9, 0.8, 0.0] * 2})
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    >>> run = train_encoder(enc, pairs, pairs, FinetuneConfig.of(epochs=1, batch_size=4, log_every=0),
    ...                     log=lambda m: None)
    >>> run["steps"], run["best"]["epoch"]
    (2, 1)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from nlsim.encoders import load_encoder
from nlsim.encoders.batching import bucketed_batches
from nlsim.encoders.device import default_device
from nlsim.encoders.encoder import mean_pool
from nlsim.encoders.lanes import run_batches
from nlsim.encoders.scoring import Embeddings, pair_scorer
from nlsim.evaluation.levels import SAME_STORY
from nlsim.evaluation.metrics import evaluate
from nlsim.io.atomic import atomic_write_text
from nlsim.progress import say
from nlsim.training.clock import TrainingClock
from nlsim.training.config import FinetuneConfig
from nlsim.training.easy_pairs import line_errors, sample_easy, still_hard
from nlsim.training.losses import get_loss
from nlsim.training.mixed_precision import autocast
from nlsim.training.mixed_precision import resolve as resolve_precision
from nlsim.training.optim import EpochProgress, adamw, linear_schedule, set_seed
from nlsim.training.packing import segment_mean
from nlsim.training.split_encoder import FrozenStates, SplitEncoder, layer_count


def _prepared_texts(
    encoder: Any,
    split: SplitEncoder,
    train: pd.DataFrame,
    lanes: int = 1,
    precision: str = "fp32",
    exact: Collection[str] = (),
) -> tuple[list[str], FrozenStates, np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct training text, the frozen part's states of each (prefix added, tokenised once; in
    ``lanes`` lanes, in ``precision`` but for the texts in ``exact``, :meth:`SplitEncoder.prepare`), each
    pair's two rows into them, and where each text's states are lossy (``precision`` not fp32, the text not
    in ``exact``)."""
    unique = list(dict.fromkeys(train["text_a"].tolist() + train["text_b"].tolist()))
    where = {t: i for i, t in enumerate(unique)}
    lossy = np.fromiter(
        (precision != "fp32" and t not in exact for t in unique), dtype=bool, count=len(unique)
    )
    fp32 = np.flatnonzero(~lossy)  # (an fp32 pass runs them all alike)
    states = split.prepare(encoder.token_ids(unique), lanes=lanes, precision=precision, exact=fp32)
    rows_a = np.fromiter((where[t] for t in train["text_a"]), dtype=np.int64, count=len(train))
    rows_b = np.fromiter((where[t] for t in train["text_b"]), dtype=np.int64, count=len(train))
    return unique, states, rows_a, rows_b, lossy


def _pooled(
    split: SplitEncoder,
    states: FrozenStates,
    rows: np.ndarray,
    chunk: int,
    lanes: int = 1,
    precision: str = "fp32",
) -> torch.Tensor:
    """Mean-pooled vectors (with autograd) of text rows ``rows``, in their order, in length-sorted chunks
    of ``chunk``: packed, every text's real tokens alone (:mod:`nlsim.training.packing`), where the frozen
    part's states are cached; else each chunk padded to its own longest text (the embeddings train). With
    ``lanes`` > 1 (an inference pass: no autograd), the chunks run in that many lanes of one thread each
    (:func:`nlsim.encoders.lanes.run_batches`); each chunk in ``precision``
    (:func:`nlsim.training.mixed_precision.autocast`, in whichever thread runs it)."""
    order = np.argsort(states.lengths[rows], kind="stable")
    chunks = [rows[order[start : start + chunk]] for start in range(0, len(order), chunk)]
    parts: list[torch.Tensor] = [torch.empty(0)] * len(chunks)

    def pool(k: np.ndarray) -> None:  # k: the chunk's number, as a one-row batch
        part = chunks[int(k[0])]
        with autocast(precision, split.device):
            if states.states is not None:
                hidden, packing = split.forward_packed(states, part)
                parts[int(k[0])] = segment_mean(hidden.float(), packing)
            else:
                hidden, mask = split.forward(states, part)
                parts[int(k[0])] = mean_pool(hidden.float(), mask)

    numbers = [np.array([k]) for k in range(len(chunks))]
    if lanes > 1:
        run_batches(numbers, pool, lanes)
    else:
        for k in numbers:
            pool(k)
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.from_numpy(order)] = torch.arange(len(order))
    return torch.cat(parts)[inverse.to(parts[0].device)]


@dataclass
class _Run:
    """What one training run of the bi-encoder works with (built once by :func:`_start`), and what it
    keeps: the validation history and the best checkpoint."""

    encoder: Any
    split: SplitEncoder
    texts: list[str]
    """The distinct training texts, in the order of ``states``."""
    states: FrozenStates
    val_texts: list[str]
    """The distinct validation texts, in the order of ``val_states``."""
    val_states: FrozenStates
    rows_a: np.ndarray
    rows_b: np.ndarray
    scores: torch.Tensor
    precision: str
    params: list[tuple[str, torch.nn.Parameter]]
    optimizer: Any
    scheduler: Any
    clock: TrainingClock
    total: int
    progress: EpochProgress
    story: np.ndarray
    """True where a training pair is the same story (kept by ``drop_easy``)."""
    cosines: np.ndarray
    """Each training pair's cosine when the model last trained on it (inf: not yet)."""
    sampled: torch.Tensor | None = None
    """This epoch's loss weight of each pair for the easy ones drawn (``1 / easy_sample``), else 1; None:
    every pair weighs 1 (no pair left out)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] = field(default_factory=lambda: {"spearman": -math.inf})
    best_state: dict[str, torch.Tensor] | None = None
    best_embeddings: Embeddings = field(default_factory=dict)
    """The validation texts' embeddings by the best checkpoint (its validation pass)."""
    last_embeddings: Embeddings = field(default_factory=dict)
    """The same by the last validation pass (handed on when no checkpoint was kept: the last weights stay)."""
    training_pass: str = "fp32"
    """The arithmetic of the passes over training texts that feed training alone (their frozen pass, and
    the embedding pass the reranker's line is fitted on): bf16 on a CPU that trains in bf16."""
    lossy: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    """Where a training text (in the order of ``texts``) runs those passes in ``training_pass``: not one an
    evaluation reads too (validation's and the test split's stay fp32)."""
    spare: Callable[[], int] | None = None
    """Threads beside this training that have nothing left to do (the cross-encoder's, once its first epoch
    is over: :meth:`nlsim.training.side_by_side.SideBySide.spare_threads`); an embedding pass runs that many
    more lanes."""
    step: int = 0

    def mark_changed(self) -> None:
        """A fused optimizer step leaves torch's version counters alone: tell the encoder, or a compiled
        inference runner (ONNX) would keep validating the old weights."""
        getattr(self.encoder, "mark_weights_changed", lambda: None)()


def _start(
    encoder: Any,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: FinetuneConfig,
    log: Callable[[str], None],
    on_rate: Callable[[float], None] | None,
    spare: Callable[[], int] | None = None,
    begin: Callable[[], None] | None = None,
    evaluated: Collection[str] = (),
) -> _Run:
    """The encoder cut at its frozen layers, every training and validation text run once through them (or
    its states taken where an embedding pass kept them, :meth:`SplitEncoder.prepare`), the optimizer. With
    ``spare``, the frozen pass runs in lanes on the training's threads and ``spare()`` more, then
    ``begin()`` (the side-by-side cross-encoder's threads, idle until then). On a CPU that trains in bf16
    the training texts go through the frozen part in bf16 (their states feed the training steps, which
    multiply in bf16 anyway), but for those validation or ``evaluated`` (the test split's) holds too:
    their vectors are evaluated, in fp32, as validation's are."""
    model = encoder.model
    encoder.max_length = int(cfg.bi_encoder.max_length)
    train_embeddings = not cfg.recipe.freeze_embeddings  # then every layer trains
    frozen = 0 if train_embeddings else int(cfg.bi_encoder.frozen_layers)
    split = SplitEncoder(model, frozen, train_embeddings=train_embeddings, pad_id=encoder.pad_id())
    precision, why = resolve_precision(cfg.recipe.train_precision, split.device)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    optimizer = adamw(params, cfg.bi_encoder.lr, cfg.bi_encoder.weight_decay)
    per_epoch = math.ceil(len(train) / cfg.recipe.batch_size)
    total = per_epoch * cfg.bi_encoder.epochs
    progress = EpochProgress(per_epoch)
    scheduler = linear_schedule(optimizer, int(round(cfg.bi_encoder.warmup_ratio * total)), total, progress)
    t_prep = time.perf_counter()
    lanes = _lanes(spare) or 1
    exact = {*validation["text_a"], *validation["text_b"], *evaluated}
    frozen_precision = precision if split.device.type == "cpu" else "fp32"  # a GPU's pass takes a second
    texts, states, rows_a, rows_b, lossy = _prepared_texts(
        encoder, split, train, lanes, frozen_precision, exact
    )
    val_texts, val_states, _, _, _ = _prepared_texts(encoder, split, validation, lanes)
    if begin is not None:
        begin()
    where = _frozen_pass_said(states, val_states, frozen_precision, int(lossy.sum()))
    log(
        f"  bi-encoder: {where} in {time.perf_counter() - t_prep:.1f} s"
        + (f" ({lanes} lanes)" if lanes > 1 else "")
        + "; training "
        f"{layer_count(model) - split.frozen_layers} of {layer_count(model)} layers in {precision} ({why})"
    )
    scores = torch.tensor(train["score"].to_numpy(dtype=np.float32)).to(split.device)
    clock = TrainingClock("bi-encoder", total, cfg.bi_encoder.epochs, log, on_rate=on_rate)
    return _Run(
        encoder,
        split,
        texts,
        states,
        val_texts,
        val_states,
        rows_a,
        rows_b,
        scores,
        precision,
        params,
        optimizer,
        scheduler,
        clock,
        total,
        progress,
        train["score"].to_numpy(dtype=np.float64) >= SAME_STORY - 1e-9,
        np.full(len(train), np.inf),
        training_pass=frozen_precision,
        lossy=lossy,
        spare=spare,
    )


def _frozen_pass_said(states: FrozenStates, val_states: FrozenStates, precision: str, lossy: int) -> str:
    """What the frozen pass over the training texts (``states``, ``lossy`` of them in ``precision``) and
    validation's did, for the log."""
    n, kept = len(states) + len(val_states), states.kept + val_states.kept
    where = (
        f"{n} distinct texts: {kept} from the states the zero-shot model's embedding passes kept, "
        f"{n - kept} through the frozen part"
        if kept
        else f"{n} distinct texts through the frozen part"
    )
    if lossy and states.states is not None and not states.kept:
        where += (
            f" ({lossy} of the {len(states)} training texts in {precision}; those an evaluation reads "
            "too, and validation's, in fp32)"
        )
    return where


def _validate(
    run: _Run, validation: pd.DataFrame, cfg: FinetuneConfig, epoch: int, loss: float
) -> dict[str, Any]:
    """Score validation, record the row, keep the checkpoint when it is the best so far. The validation
    texts are embedded from the frozen part's states (only the trained layers run), as the encoder would
    embed them."""
    with run.clock.pause():
        embedded = _embedded(run.split, run.val_states, run.val_texts, lanes=_lanes(run.spare))
        m = evaluate(pair_scorer(run.encoder, kept=embedded), validation, conversion=None)
    run.last_embeddings = embedded
    row = {"epoch": epoch, "step": run.step, "train_loss": round(loss, 5), **m.as_dict()}
    run.history.append(row)
    if cfg.evaluation.progress_file:
        atomic_write_text(cfg.evaluation.progress_file, json.dumps({"history": run.history}, indent=2))
    if m.spearman > run.best["spearman"]:
        run.best = dict(row)
        names = {n for n, _ in run.params}
        run.best_state = {
            n: t.detach().clone() for n, t in run.encoder.model.state_dict().items() if n in names
        }
        run.best_embeddings = embedded
    run.encoder.model.train()
    return row


def _plan_epoch(
    run: _Run, epoch: int, cfg: FinetuneConfig, rng: np.random.Generator, log: Callable[[str], None]
) -> list[np.ndarray]:
    """The epoch's batches of pair rows; from the second epoch on with ``drop_easy``, only the pairs
    :func:`still_hard` keeps (:mod:`nlsim.training.easy_pairs`), the schedule and the clock told of the
    shorter epoch."""
    pairs = np.arange(len(run.rows_a))
    margin, share = cfg.bi_encoder.drop_easy, cfg.bi_encoder.easy_sample
    if margin and epoch > 1:
        hard = still_hard(line_errors(run.cosines, run.scores.cpu().numpy()), run.story, margin)
        keep, weight = sample_easy(hard, share, rng)
        run.sampled = torch.from_numpy(weight.astype(np.float32)).to(run.split.device)
        pairs = pairs[keep]
    lengths = run.states.lengths[run.rows_a[pairs]] + run.states.lengths[run.rows_b[pairs]]
    batches = [pairs[b] for b in bucketed_batches(lengths, cfg.recipe.batch_size, rng)]
    if margin and epoch > 1:
        run.progress.begin_epoch(run.step, epoch, len(batches))
        run.clock.replan(run.step + len(batches) * (cfg.bi_encoder.epochs - epoch + 1))
        run.total = run.clock.total_steps
        log(
            f"  bi-encoder epoch {epoch}: {len(pairs)} of {len(run.rows_a)} pairs, {len(batches)} steps: "
            f"{int(hard.sum())} off their cosine's line by {margin:g} or more (or the same story), "
            f"{len(pairs) - int(hard.sum())} of the others drawn ({share:g}), weighted by its inverse"
        )
    return batches


def _train_epoch(
    run: _Run,
    validation: pd.DataFrame,
    cfg: FinetuneConfig,
    epoch: int,
    rng: np.random.Generator,
    log: Callable[[str], None],
) -> float:
    """One epoch of optimizer steps (validating every ``cfg.evaluation.eval_every`` steps when set); returns
    the seconds spent training, validation left out. With ``drop_easy``, each pair's cosine, as this
    forward pass saw it, goes to ``run.cosines``."""
    loss_fn = get_loss(cfg.bi_encoder.loss)
    device = run.split.device
    steps_per_epoch = run.progress.per_epoch
    t0, eval_time = time.perf_counter(), 0.0
    losses: list[float] = []
    run.encoder.model.train()
    chunk = _chunk(cfg.recipe.batch_size, run.precision, device, run.states.states is not None)
    for rows in _plan_epoch(run, epoch, cfg, rng, log):
        with autocast(run.precision, device):
            emb = _pooled(run.split, run.states, np.concatenate([run.rows_a[rows], run.rows_b[rows]]), chunk)
        if cfg.bi_encoder.drop_easy:  # only a later epoch that leaves pairs out reads them
            with torch.no_grad():
                pair_cos = torch.nn.functional.cosine_similarity(
                    emb[: len(rows)].float(), emb[len(rows) :].float()
                )
                run.cosines[rows] = pair_cos.cpu().numpy()
        idx = torch.from_numpy(rows).to(device)
        weights = None if run.sampled is None else run.sampled[idx]
        loss = loss_fn(emb[: len(rows)], emb[len(rows) :], run.scores[idx], weights=weights)
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.bi_encoder.max_grad_norm:
            torch.nn.utils.clip_grad_norm_([p for _, p in run.params], cfg.bi_encoder.max_grad_norm)
        run.optimizer.step()
        run.mark_changed()
        run.scheduler.step()
        run.step += 1
        run.clock.step()
        losses.append(float(loss.detach()))
        if cfg.bi_encoder.log_every and run.step % cfg.bi_encoder.log_every == 0:
            log(f"  step {run.step}/{run.total}: loss {np.mean(losses[-cfg.bi_encoder.log_every :]):.4f}")
        if (
            cfg.evaluation.eval_every
            and run.step % cfg.evaluation.eval_every == 0
            and run.step % steps_per_epoch
        ):
            te = time.perf_counter()
            _validate(run, validation, cfg, epoch, float(np.mean(losses[-cfg.evaluation.eval_every :])))
            eval_time += time.perf_counter() - te
    seconds = time.perf_counter() - t0 - eval_time
    row = _validate(run, validation, cfg, epoch, float(np.mean(losses)))
    run.clock.epoch_done(
        epoch,
        f"loss {row['train_loss']:.4f}, validation Spearman {row['spearman']:.2f} "
        f"Pearson {row['pearson']:.2f} MSE {row['mse']:.4f}",
    )
    return seconds


def _chunk(batch_size: int, precision: str, device: torch.device, packed: bool) -> int:
    """How many texts of a step's batch (``batch_size`` pairs) go through the upper layers together: the
    whole batch (both sides of its pairs) where it trains ``packed`` in bf16 on a CPU (each chunk casts
    every trained weight to bf16 afresh, :mod:`nlsim.training.mixed_precision`; packed, one chunk pads
    nothing more), else chunks of the batch size (fp32 and a GPU keep the arithmetic they were measured
    with)."""
    if packed and precision == "bf16" and device.type == "cpu":
        return 2 * batch_size
    return batch_size


def train_encoder(
    encoder: Any,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: FinetuneConfig,
    log: Callable[[str], None] = say,
    on_rate: Callable[[float], None] | None = None,
    embed_training_texts: bool = False,
    spare: Callable[[], int] | None = None,
    begin: Callable[[], None] | None = None,
    evaluated: Collection[str] = (),
) -> dict[str, Any]:
    """Fine-tune ``encoder`` in place on already-converted pairs; the best checkpoint is loaded at the end.

    The embedding block and the lower ``cfg.bi_encoder.frozen_layers`` layers stay frozen and run once per
    distinct text (:mod:`nlsim.training.split_encoder`); batches hold pairs of similar length
    (:func:`nlsim.encoders.batching.bucketed_batches`); the step runs in ``cfg.recipe.train_precision``
    (:mod:`nlsim.training.mixed_precision`). Returns ``{"best": {...}, "history": [...],
    "seconds_per_epoch": [...], "steps": n, ...}``, with ``"validation_embeddings"``: the validation texts'
    embeddings by the weights it leaves (:data:`nlsim.encoders.scoring.Embeddings`, from the validation pass
    of the kept checkpoint, so that scoring validation again embeds nothing), and with
    ``embed_training_texts`` ``"training_embeddings"``: the training texts' by the same weights, from the
    frozen part's states (only the trained layers run; a caller fitting on the training pairs), and
    ``"lossy_embeddings"``: those of them embedded in the training's bf16 (:func:`_embedded_training_texts`),
    which no evaluation and no report may take. Validation
    Spearman picks the checkpoint (ties: the earlier one). ``on_rate`` hears the measured seconds per step
    once (:class:`TrainingClock`). ``spare()``: the threads beside this training that are idle now (the
    side-by-side cross-encoder's, before it begins and once its first epoch is over): the frozen pass and
    the embedding passes of validation and of the training texts run in that many more lanes, with the
    same numbers (:func:`_embedded`); ``begin()`` is called once the frozen pass is over (the cross-encoder
    beside it then begins). ``evaluated``: texts an evaluation reads besides validation's (the test
    split's), whose passes stay fp32 where the training runs in bf16 (:func:`_start`).
    """
    if cfg.recipe.threads:
        torch.set_num_threads(int(cfg.recipe.threads))
    set_seed(cfg.recipe.seed)
    model = encoder.model
    total_params = sum(p.numel() for p in model.parameters())
    run = _start(encoder, train, validation, cfg, log, on_rate, spare, begin, evaluated)
    rng = np.random.default_rng(cfg.recipe.seed)
    seconds_per_epoch = [
        round(_train_epoch(run, validation, cfg, epoch, rng, log), 2)
        for epoch in range(1, cfg.bi_encoder.epochs + 1)
    ]
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    best, embedded = run.best, run.best_embeddings
    if run.best_state is not None:
        model.load_state_dict(run.best_state, strict=False)
        run.mark_changed()
    else:  # validation Spearman undefined throughout (constant scores): keep the last weights
        best, embedded = dict(run.history[-1]), run.last_embeddings
    if hasattr(encoder, "refresh_fingerprint"):
        encoder.refresh_fingerprint()
    trained_texts = _embedded_training_texts(run) if embed_training_texts else {}
    return {
        "best": best,
        "history": run.history,
        "seconds_per_epoch": seconds_per_epoch,
        "steps": run.step,
        "trainable_parameters": int(sum(p.numel() for _, p in run.params)),
        "total_parameters": int(total_params),
        "frozen_layers": run.split.frozen_layers,
        "train_precision": run.precision,
        "validation_embeddings": embedded,
        "training_embeddings": trained_texts,
        "lossy_embeddings": {run.texts[i] for i in np.flatnonzero(run.lossy)} if trained_texts else set(),
    }


def _embedded_training_texts(run: _Run) -> Embeddings:
    """Each distinct training text's embedding by the weights the run leaves (:func:`_embedded`): in the
    run's ``training_pass`` arithmetic where ``lossy``, else in fp32 (the texts an evaluation reads)."""
    lanes = _lanes(run.spare)
    if not run.lossy.any():
        return _embedded(run.split, run.states, run.texts, lanes=lanes)
    rows = np.arange(len(run.texts))
    vectors = _embedded(run.split, run.states, run.texts, lanes=lanes, rows=rows[~run.lossy])
    lossy = _embedded(
        run.split, run.states, run.texts, lanes=lanes, rows=rows[run.lossy], precision=run.training_pass
    )
    return vectors | lossy


def _lanes(spare: Callable[[], int] | None) -> int | None:
    """The lanes of a frozen or embedding pass now, when the training runs beside another (``spare``, the
    run's, given): the training's own threads plus those beside it that are idle, each batch or chunk on
    one thread whatever their number, so that the numbers do not depend on the timing; ``None`` otherwise
    (the calling thread, on all its threads)."""
    if spare is None:
        return None
    return torch.get_num_threads() + spare()


def _embedded(
    split: SplitEncoder,
    states: FrozenStates,
    texts: list[str],
    chunk: int = 64,
    lanes: int | None = None,
    rows: np.ndarray | None = None,
    precision: str = "fp32",
) -> Embeddings:
    """The L2-normalised embedding of each of ``texts`` (of those ``rows`` when given) by the model's
    present weights (eval mode; fp32 unless ``precision`` says otherwise), from the frozen part's
    ``states``: what :meth:`Encoder.encode` gives them, to float rounding, for the trained layers' work
    alone (about 2/3 of it for e5 with 4 layers frozen); ``chunk`` texts at a time, as
    :meth:`Encoder.encode` batches them on a CPU. With ``lanes`` given (and the states cached), each chunk
    runs on one thread, in that many lanes (:mod:`nlsim.encoders.lanes`; one lane: the calling thread, which
    then has one): the same numbers whatever ``lanes`` is. Without, the calling thread on all its threads.
    ``rows``: only those texts (default: all); ``precision``: the pass's arithmetic (bf16: vectors that
    feed a fit on the training pairs, never an evaluation)."""
    rows = np.arange(len(texts)) if rows is None else rows
    if not len(rows):
        return {}
    in_lanes = 1
    if lanes is not None and states.states is not None:
        in_lanes = 2 if lanes < 2 and torch.get_num_threads() > 1 else lanes  # one thread a chunk, always
    model = split.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            pooled = _pooled(split, states, rows, chunk, in_lanes, precision).float()
            vectors = torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().numpy()
    finally:
        model.train(was_training)
    return dict(zip([texts[i] for i in rows], vectors, strict=True))


def load_base(cfg: FinetuneConfig) -> Any:
    """The base encoder, with ``cfg.bi_encoder.max_length``."""
    encoder = load_encoder(cfg.model, threads=cfg.recipe.threads, device=default_device())
    encoder.max_length = int(cfg.bi_encoder.max_length)
    return encoder
