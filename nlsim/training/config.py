"""The configuration of a fine-tuning run: :class:`FinetuneConfig`.

A run's settings are records by concern: the pairs (:class:`DataSettings`), the bi-encoder's training
(:class:`BiEncoderSettings`), the reranker's (:class:`CrossEncoderSettings`), what both share
(:class:`RecipeSettings`), the silver pairs (:class:`SilverSettings`) and what is scored and calibrated
(:class:`EvaluationSettings`), each setting declared once with its help text (:func:`nlsim.options.option`).
Every option of ``nlsim finetune`` and every parameter of the ``finetune`` flow is one of them, by its flat
name (``--cross-encoder-epochs`` is ``cross_encoder.epochs``). The defaults are the settings chosen on the
validation split of ``annotations/thucnews_tw_pairs.tsv`` (``benchmarks/bench_quality.py select``).

Example:
    >>> cfg = FinetuneConfig.of(pairs="pairs.tsv", out="models/x", calibrate_level="same-story")
    >>> cfg.evaluation.calibrate_level, cfg.bi_encoder.loss, cfg.cross_encoder.reranker
    (0.875, 'cosent', True)
    >>> cfg.parameters()["cross_encoder_epochs"]
    3
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from nlsim.conversion import Conversion, check_mode
from nlsim.errors import ConfigError
from nlsim.evaluation.levels import DEFAULT_LEVEL, SAME_STORY, parse_level
from nlsim.inference.cpu import cpu_info
from nlsim.io.pairs import PAIR_FILE_FORMATS
from nlsim.models.settings import MOST_BATCH, check_batch_size, check_max_length, check_threads
from nlsim.options import (
    BadItem,
    Configuration,
    assign,
    comma_tuple,
    concern,
    option,
    option_like,
    options_of,
    typed_items,
)

DEFAULT_BASE = "multilingual-e5-small"
MIN_TRAIN_PAIRS = 4
"""The fewest training pairs a run trains on (:func:`nlsim.training.data.check_trainable`)."""
LOSSES = ("cosent", "mse")
TEACHERS = ("ensemble", "cross-encoder")

TrainPrecision = Literal["auto", "fp32", "bf16"]
TRAIN_PRECISIONS: tuple[str, ...] = get_args(TrainPrecision)
"""The arithmetic of the training steps: bf16 autocast where the hardware computes it (auto), or as named
(:mod:`nlsim.training.mixed_precision`)."""


@dataclass
class CrossEncoderConfig:
    """Training settings of the cross-encoder (the reranker, and the silver pairs' teacher) (what the
    defaults scored on validation: docs/experiments.md)."""

    epochs: int = 3
    batch_size: int = 16
    lr: float = 1e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_length: int = 128
    freeze_embeddings: bool = True
    frozen_layers: int = 4
    """Lower transformer layers kept frozen and run once per pair (:mod:`nlsim.training.split_encoder`)."""
    train_precision: str = "auto"
    seed: int = 42
    threads: int | None = None
    log_every: int = 50
    story_weight: float = 3.0
    """Weight in the loss of a pair scored at or above ``story_level`` (same story); 1 = unweighted.
    Same-story pairs are rare (about 7% of the training pairs): weighting them x3 raised the
    cross-encoder's same-story F1 on validation (docs/experiments.md)."""
    story_level: float = SAME_STORY
    rank_weight: float = 0.0
    """Weight of a same-story ranking term beside the graded loss (every same-story pair of a batch above
    every other pair of it: :mod:`nlsim.training.losses.story_ranking`); 0 = off, the default:
    out of fold it was no better than without (docs/experiments.md)."""
    temperature_lr: float = 0.0
    """Learning rate of a learned logit scale (a temperature: the head's logit times ``exp(s)``, ``s`` from
    0), which lets the output leave the bound that the last LayerNorm and the head's weights set
    (:meth:`nlsim.rerank.cross_encoder.CrossEncoder.score_bound`) faster than the head's weights grow at
    ``lr``; 0 = off, the default: out of fold it was no better than without (docs/experiments.md). The
    scale is folded into the head when training ends, so the saved model is an ordinary cross-encoder."""
    orders_per_epoch: int = 2
    """2: every pair is read in both orders each epoch; 1: once, in a random order (half the steps)."""
    drop_easy: float = 0.0
    """From the second epoch on, leave out the training sequences the model already scored within this
    much of their graded score when it last trained on them (:mod:`nlsim.training.easy_pairs`); the
    learning rate still moves by a whole epoch over a shortened one. 0 = off (every pair, every epoch):
    this function's default; the chain and ``nlsim finetune`` train with 0.1
    (``--cross-encoder-drop-easy``)."""
    easy_sample: float = 0.25
    """With ``drop_easy``: the share of the easy sequences an epoch still trains on, drawn afresh each
    epoch, their loss weighted by its inverse, so that the epoch's loss stays an unbiased estimate of the
    whole epoch's (without them, the scores of the pairs left out drift); 0 = leave every easy one out."""
    keep_best: bool = True
    """Keep the epoch with the best validation Spearman (else the last epoch: cross-validation folds, whose
    held-out pairs must not choose anything)."""

    def check(self, flags: Mapping[str, str] | None = None) -> None:
        """Refuse a setting that cannot work. ``flags``: the command-line flag of a field, named in its
        refusal in place of the field's own words (:data:`CROSS_ENCODER_FLAGS`)."""
        said = dict(flags or {})
        for name in ("epochs", "batch_size", "max_length"):
            if int(getattr(self, name)) < 1:
                flag = said.get(name, f"cross-encoder {name}")
                raise ConfigError(f"{flag} must be >= 1, got {getattr(self, name)}")
        if int(self.frozen_layers) < 0:
            flag = said.get("frozen_layers", "cross-encoder frozen layers")
            raise ConfigError(f"{flag} must be >= 0, got {self.frozen_layers}")
        if self.orders_per_epoch not in (1, 2):
            raise ConfigError(f"cross-encoder orders per epoch must be 1 or 2, got {self.orders_per_epoch}")
        if not 0 < self.lr < math.inf:
            raise ConfigError(f"{said.get('lr', 'cross-encoder lr')} must be > 0 and finite, got {self.lr}")
        if not 0 < self.story_weight < math.inf:
            flag = said.get("story_weight", "cross-encoder story weight")
            raise ConfigError(f"{flag} must be > 0 and finite, got {self.story_weight}")
        if not self.rank_weight >= 0:
            raise ConfigError(f"cross-encoder rank weight must be >= 0, got {self.rank_weight}")
        if not self.temperature_lr >= 0:
            raise ConfigError(f"cross-encoder temperature lr must be >= 0, got {self.temperature_lr}")
        if not 0 <= self.drop_easy < 1:
            flag = said.get("drop_easy", "cross-encoder drop-easy margin")
            raise ConfigError(f"{flag} must be in [0, 1), got {self.drop_easy}")
        if not 0 <= self.easy_sample <= 1:
            flag = said.get("easy_sample", "cross-encoder easy sample")
            raise ConfigError(f"{flag} must be in [0, 1], got {self.easy_sample}")


@dataclass
class SilverConfig:
    """How many silver pairs to draw and how to label them."""

    anchors: int = 1200
    teacher: str = "ensemble"
    seed: int = 0

    def check(self) -> None:
        if self.anchors < 1:
            raise ConfigError(f"silver anchors must be >= 1, got {self.anchors}")
        if self.teacher not in TEACHERS:
            raise ConfigError(f"unknown teacher {self.teacher!r} (use {', '.join(TEACHERS)})")


@dataclass(frozen=True, kw_only=True)
class DataSettings:
    """The annotated pairs a run trains, chooses and scores on, and the script conversion of their texts."""

    pairs: str | None = option(None, help=f"pair file ({PAIR_FILE_FORMATS}) with a split column")
    conversion: Conversion = option("tw2sp", help="script conversion of the pair texts", flags=("--convert",))
    train_size: int | None = option(
        None, help="use a random subset of this many training pairs (default: all of them)"
    )
    subset_seed: int | None = option(None, help="seed of the subset draw (default: --seed)", cli=False)
    train_split: str = option("train", help="split trained on", cli=False)
    val_split: str = option("validation", help="split the checkpoint and threshold are chosen on", cli=False)
    test_split: str = option("test", help="split scored once at the end", cli=False)

    def check(self) -> None:
        check_mode(self.conversion)
        if self.train_size is not None and self.train_size < MIN_TRAIN_PAIRS:
            raise ConfigError(f"--train-size must be >= {MIN_TRAIN_PAIRS}, got {self.train_size}")


@dataclass(frozen=True, kw_only=True)
class BiEncoderSettings:
    """How the bi-encoder trains: its loss, epochs, learning rate and schedule, text length, frozen layers."""

    loss: Literal["cosent", "mse"] = option(
        "cosent", help="the loss: CoSENT (chosen on validation) or the studies' cosine MSE"
    )
    epochs: int = option(2, help="training epochs of the bi-encoder")
    lr: float = option(1e-4, help="peak learning rate (AdamW, linear warm-up and decay)")
    warmup_ratio: float = option(0.1, help="share of the steps spent warming up")
    weight_decay: float = option(0.01, help="AdamW weight decay")
    max_grad_norm: float = option(1.0, help="gradient clipping norm", cli=False)
    max_length: int = option(64, help="tokens per text, prefix included")
    frozen_layers: int = option(
        4,
        help="lower transformer layers of the bi-encoder kept frozen: run once per text, not trained",
    )
    fp32_epochs: int | None = option(
        None,
        help="bi-encoder epochs on a CPU without bf16 instructions (avx512_bf16 or AMX), where training "
        "runs in fp32 (default: --epochs, the same recipe as on every machine; 1, with "
        "--fp32-cross-encoder-epochs 1 and --fp32-cross-encoder-frozen-layers 6, is the faster fp32 "
        "recipe of earlier versions, whose reports judged 0.04-0.06 lower: docs/experiments.md)",
    )
    drop_easy: float = option(
        0.0,
        help="from its second epoch on, the bi-encoder leaves out the training pairs whose score lies within "
        "this much of the line that maps their cosine onto the score scale when it last trained on them; "
        "same-story pairs always stay (0 = off, the default: it lowered the bi-encoder's validation Spearman "
        "and made the report rerank more pairs, docs/experiments.md; nlsim/training/easy_pairs.py)",
    )
    easy_sample: float = option(
        0.25,
        help="with --drop-easy: the share of the easy pairs an epoch still trains on, drawn afresh each "
        "epoch, their loss weighted by its inverse (0 = leave all of them out)",
        needs="drop_easy",
    )
    log_every: int = option(25, help="log the loss every N steps", cli=False)

    def check(self) -> None:
        if self.loss not in LOSSES:
            raise ConfigError(f"unknown loss {self.loss!r} (use {', '.join(LOSSES)})")
        if int(self.epochs) < 1:
            raise ConfigError(f"--epochs must be >= 1, got {self.epochs}")
        check_max_length(self.max_length)  # what the encoder needs to load (nlsim.encoders.encoder.Encoder)
        if int(self.frozen_layers) < 0:
            raise ConfigError(f"--frozen-layers must be >= 0, got {self.frozen_layers}")
        if self.fp32_epochs is not None and int(self.fp32_epochs) < 1:
            raise ConfigError(f"--fp32-epochs must be >= 1, got {self.fp32_epochs}")
        if not 0 <= self.drop_easy < 1:
            raise ConfigError(f"--drop-easy must be in [0, 1), got {self.drop_easy}")
        if not 0 <= self.easy_sample <= 1:
            raise ConfigError(f"--easy-sample must be in [0, 1], got {self.easy_sample}")
        if not 0 < self.lr < math.inf:
            raise ConfigError(f"--lr must be > 0 and finite, got {self.lr}")
        if not 0 <= self.weight_decay < math.inf:  # AdamW would grow the weights, or make them NaN
            raise ConfigError(f"--weight-decay must be >= 0 and finite, got {self.weight_decay}")
        if not 0 <= self.warmup_ratio < 1:
            raise ConfigError(f"--warmup-ratio must be in [0, 1), got {self.warmup_ratio}")


CROSS_ENCODER_TRAINS = ("reranker", "silver_corpus")
"""What a cross-encoder trains for: the reranker, or the silver pairs' teacher; its training settings do
nothing without either (:func:`nlsim.options.option`'s ``needs``)."""


@dataclass(frozen=True, kw_only=True)
class CrossEncoderSettings:
    """The reranker: whether a cross-encoder trains beside the bi-encoder, how, and how its score is read
    (its training: :class:`CrossEncoderConfig`)."""

    reranker: bool = option(
        True,
        help="train the bi-encoder alone (the reranker, trained by default, takes about 3/4 of the time)",
        flags=("--no-reranker",),
    )
    epochs: int = option(
        3,
        help="epochs of the reranker's cross-encoder (and the silver teacher's; on a CPU without bf16 "
        "instructions: --fp32-cross-encoder-epochs)",
        name="cross_encoder_epochs",
        needs=CROSS_ENCODER_TRAINS,
    )
    lr: float = option(
        1e-4, help="learning rate of the cross-encoder", name="cross_encoder_lr", needs=CROSS_ENCODER_TRAINS
    )
    frozen_layers: int = option(
        4,
        help="lower transformer layers of the cross-encoder kept frozen: run once per pair, not trained",
        name="cross_encoder_frozen_layers",
        needs=CROSS_ENCODER_TRAINS,
    )
    fp32_epochs: int | None = option(
        None,
        help="epochs of the reranker's cross-encoder (and the silver teacher's) on a CPU without bf16 "
        "instructions (default: --cross-encoder-epochs; as --fp32-epochs)",
        name="fp32_cross_encoder_epochs",
        needs=CROSS_ENCODER_TRAINS,
    )
    fp32_frozen_layers: int | None = option(
        None,
        help="lower transformer layers of the cross-encoder kept frozen on a CPU without bf16 instructions "
        "(default: --cross-encoder-frozen-layers; as --fp32-epochs)",
        name="fp32_cross_encoder_frozen_layers",
        needs=CROSS_ENCODER_TRAINS,
    )
    story_weight: float = option(
        3.0,
        help="loss weight of the same-story training pairs (score >= 0.875) in the cross-encoder "
        "(1 = unweighted)",
        needs=CROSS_ENCODER_TRAINS,
    )
    drop_easy: float = option(
        0.1,
        help="from its second epoch on, the cross-encoder leaves out the training pairs (one text order at a "
        "time) it already scored within this much of their score when it last trained on them, but for a "
        "drawn share of them (--cross-encoder-easy-sample); same-story pairs always stay (0 = off: every "
        "pair every epoch; nlsim/training/easy_pairs.py; chosen on validation: docs/experiments.md)",
        name="cross_encoder_drop_easy",
        needs=CROSS_ENCODER_TRAINS,
    )
    easy_sample: float = option(
        0.25,
        help="with --cross-encoder-drop-easy: the share of the easy pairs an epoch still trains on, drawn "
        "afresh each epoch, their loss weighted by its inverse (0 = leave all of them out)",
        name="cross_encoder_easy_sample",
        needs="cross_encoder_drop_easy",
    )
    rerank_weight: float = option(
        0.5,
        help="share of the bi-encoder's mapped cosine in the rerank score (the rest is the cross-encoder's)",
        needs="reranker",
    )
    story_model: bool = option(
        False,
        help="fit a story model on validation that decides same story from the cross-encoder, the cosine "
        "and what the headlines name, for the pairs the rerank score would read (nlsim/rerank/story.py; "
        "off by default: a higher same-story F1 of the pairs, not of the report's clusters, "
        "docs/experiments.md)",
        needs="reranker",
    )

    def check(self) -> None:
        if self.fp32_frozen_layers is not None and int(self.fp32_frozen_layers) < 0:
            raise ConfigError(
                f"--fp32-cross-encoder-frozen-layers must be >= 0, got {self.fp32_frozen_layers}"
            )


CROSS_ENCODER_FLAGS = {
    "epochs": "--cross-encoder-epochs",
    "lr": "--cross-encoder-lr",
    "frozen_layers": "--cross-encoder-frozen-layers",
    "story_weight": "--story-weight",
    "drop_easy": "--cross-encoder-drop-easy",
    "easy_sample": "--cross-encoder-easy-sample",
}
"""The command-line flag of each :class:`CrossEncoderConfig` field a :class:`CrossEncoderSettings` option
sets (:meth:`FinetuneConfig.cross_encoder_config`), named when the field is refused."""


MAX_SEED = 2**32 - 1
"""The largest seed training takes (numpy's global generator, which training seeds, takes no larger)."""


def check_seed(seed: int, flag: str) -> None:
    """Refuse a seed that training cannot take (a negative one, or one above :data:`MAX_SEED`), naming
    ``flag``.

    Example:
        >>> check_seed(-1, "--seed")
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --seed must be a whole number from 0 to 4294967295, got -1
    """
    if not 0 <= int(seed) <= MAX_SEED:
        raise ConfigError(f"{flag} must be a whole number from 0 to {MAX_SEED}, got {seed}")


@dataclass(frozen=True, kw_only=True)
class RecipeSettings:
    """What the training steps of both encoders share: pairs per step, frozen word embeddings, arithmetic,
    seed and threads."""

    batch_size: int = option(16, help=f"pairs per optimizer step, at most {MOST_BATCH:,}")
    gpu_batch_size: int = option(
        32,
        help="pairs per optimizer step when training runs on a GPU, where a step's time is set by kernel "
        "launches rather than arithmetic: half the steps of --batch-size 16; the learning rates are "
        f"scaled by the square root of its ratio to --batch-size; at most {MOST_BATCH:,}",
    )
    freeze_embeddings: bool = option(
        True,
        help="also train the word-embedding table (about 4x slower for e5; every layer then trains)",
        flags=("--unfreeze-embeddings",),
    )
    train_precision: TrainPrecision = option(
        "auto",
        help="arithmetic of the training steps: bf16 autocast where the CPU or GPU computes bf16 (auto), or "
        "fp32",
    )
    seed: int = option(42, help="random seed (data order, initialisation)")
    threads: int | None = option(
        None,
        help="CPU threads of torch and ONNX Runtime (default: theirs, every core)",
    )
    side_by_side: bool = option(
        True,
        help="train the reranker's cross-encoder one model at a time after the bi-encoder (by default, on a "
        "CPU with 2+ threads, its first epoch trains beside the bi-encoder on half the threads: "
        "nlsim/training/side_by_side.py)",
        flags=("--one-model-at-a-time",),
        needs="reranker",
    )

    def check(self) -> None:
        for name in ("batch_size", "gpu_batch_size"):  # 10**9 pairs a step: every pair's activations at once
            check_batch_size(getattr(self, name), f"--{name.replace('_', '-')}", "pairs per optimizer step")
        check_seed(self.seed, "--seed")
        check_threads(self.threads)
        if self.train_precision not in TRAIN_PRECISIONS:
            choices = ", ".join(TRAIN_PRECISIONS)
            raise ConfigError(f"--train-precision: unknown {self.train_precision!r} (use {choices})")


@dataclass(frozen=True, kw_only=True)
class SilverSettings:
    """Silver pairs: corpus pairs scored by teachers trained on the gold ones, added to the training pairs
    (drawn and labelled as :class:`SilverConfig` says)."""

    corpus: str | None = option(
        None,
        help="corpus (.parquet, .csv, .tsv, .jsonl or a .json array of objects, with id and a text column) "
        "to draw silver pairs from; texts of validation/test pairs are left out (default: none, the gold "
        "pairs only)",
        name="silver_corpus",
    )
    text_field: str | None = option(
        None,
        help="text column of the silver corpus (default: the first of title_zh_tw, title, text, title_zh_cn "
        "it has)",
        name="silver_text_field",
        needs="silver_corpus",
    )
    anchors: int = option(
        1200,
        help="silver anchor texts drawn (about 5 pairs each)",
        name="silver_anchors",
        needs="silver_corpus",
    )
    teacher: Literal["ensemble", "cross-encoder"] = option(
        "ensemble",
        help="who labels the silver pairs: ensemble (the mean of the cross-encoder and the bi-encoder) or "
        "the cross-encoder alone",
        name="silver_teacher",
        needs="silver_corpus",
    )

    def check(self) -> None:
        if self.corpus is not None and not Path(self.corpus).is_file():
            raise ConfigError(f"silver corpus {self.corpus}: no such file")


@dataclass(frozen=True, kw_only=True)
class EvaluationSettings:
    """What a run scores and calibrates: validation during training, the level of the threshold, the test
    split, the base model before training, the quality check of the lossy inference paths."""

    calibrate_level: float | str | None = option(
        DEFAULT_LEVEL,
        help="relatedness level the threshold is calibrated for: same-story (0.875: 1.0, or "
        "1 and 0.75 averaged) or same-topic-entity (0.75), or a number",
        flags=("--level",),
    )
    eval_every: int = option(0, help="validate every N steps (0: once per epoch)")
    eval_test: bool = option(True, help="do not score the test split", flags=("--no-test",))
    eval_before: bool = option(True, help="score the base model before training", cli=False)
    precision_check: bool = option(
        True,
        help="skip the quality check of the lossy inference paths (int8, bf16, fp16) against fp32 on "
        "validation when saving (without the check, runs use the exact fp32 paths only)",
        flags=("--no-precision-check",),
    )
    progress_file: str | None = option(None, help="JSON file updated with the validation history", cli=False)

    def __post_init__(self) -> None:
        if isinstance(self.calibrate_level, str):
            assign(self, "calibrate_level", parse_level(self.calibrate_level))

    def check(self) -> None:
        if self.calibrate_level is not None:
            parse_level(self.calibrate_level)
        if int(self.eval_every) < 0:
            raise ConfigError(f"--eval-every must be >= 0 (0: each epoch), got {self.eval_every}")


@dataclass(frozen=True, kw_only=True)
class FinetuneConfig(Configuration):
    """Everything that decides a fine-tuning run, by concern (saved flat in ``training.json`` and the card:
    :meth:`parameters`).

    ``data.train_size`` takes that many training pairs (a random subset drawn with ``subset_seed``, default
    ``seed``; nested: a smaller subset is a prefix of a larger one for one seed). ``evaluation.eval_every``
    = 0 validates at the end of each epoch; N > 0 validates every N optimizer steps and at each epoch end.
    The defaults (CoSENT, lr 1e-4, 2 epochs, frozen word embeddings, ``tw2sp``, and a reranker beside the
    bi-encoder) are the settings chosen on the validation split of ``annotations/thucnews_tw_pairs.tsv``
    (``benchmarks/bench_quality.py select``); ``loss="mse"`` is the studies' cosine-MSE recipe.
    ``reranker=False`` trains the bi-encoder alone (about a quarter of the time).
    """

    out: str | None = option(None, help="model folder to write")
    model: str = option(DEFAULT_BASE, help="base model: registry name or folder")
    data: DataSettings = concern(DataSettings, title="data")
    bi_encoder: BiEncoderSettings = concern(BiEncoderSettings, title="bi-encoder")
    recipe: RecipeSettings = concern(RecipeSettings, title="training steps (both encoders)")
    evaluation: EvaluationSettings = concern(EvaluationSettings, title="evaluation")
    silver: SilverSettings = concern(
        SilverSettings,
        title="silver pairs",
        description="widen the gold training pairs with corpus pairs scored by teachers trained on them "
        "(a cross-encoder and a first bi-encoder; see docs/finetuning.md)",
    )
    cross_encoder: CrossEncoderSettings = concern(
        CrossEncoderSettings,
        title="reranker",
        description="a cross-encoder trained beside the bi-encoder and saved with it in reranker/: dedup "
        "rescores the pairs the bi-encoder finds (see docs/finetuning.md)",
    )

    def check(self) -> None:
        """Refuse values that cannot work (before any training)."""
        if self.out is not None and not str(self.out).strip():  # None: the caller saves nothing, on purpose
            raise ConfigError("--out is empty: give the model folder to write (the run would save nothing)")
        self.data.check()
        self.bi_encoder.check()
        self.recipe.check()
        self.cross_encoder.check()
        self.evaluation.check()
        if self.recipe.batch_size < 2 and self.bi_encoder.loss == "cosent":
            raise ConfigError("--loss cosent needs --batch-size >= 2 (it compares the pairs of a batch)")
        fp32_epochs = self.cross_encoder.fp32_epochs
        if self.trains_cross_encoder and fp32_epochs is not None and int(fp32_epochs) < 1:
            raise ConfigError(f"--fp32-cross-encoder-epochs must be >= 1, got {fp32_epochs}")
        if self.cross_encoder.reranker:
            self.cross_encoder_config().check(CROSS_ENCODER_FLAGS)
            weight = self.cross_encoder.rerank_weight
            if not 0 <= weight <= 1:
                raise ConfigError(f"--rerank-weight must be in [0, 1], got {weight}")
        if self.silver.corpus is not None:
            self.silver.check()
            self.silver_config().check()
            self.cross_encoder_config().check(CROSS_ENCODER_FLAGS)

    def for_device(self, device: Any) -> FinetuneConfig:
        """The settings training uses on ``device``: on a GPU, ``gpu_batch_size`` pairs a step with the
        learning rates scaled by the square root of its ratio to ``batch_size``; on a CPU without bf16
        instructions (:attr:`nlsim.inference.cpu.CpuInfo.bf16_isa` is ``None``: training runs in fp32
        there), ``fp32_epochs``, ``fp32_cross_encoder_epochs`` and ``fp32_cross_encoder_frozen_layers``
        where they are given (by default they are not: the same recipe on every machine); elsewhere, as
        given.

        Example:
            >>> cfg = FinetuneConfig.of(batch_size=16, gpu_batch_size=64, lr=1e-4)
            >>> gpu = cfg.for_device("cuda:0")
            >>> gpu.recipe.batch_size, round(gpu.bi_encoder.lr, 6), round(gpu.cross_encoder.lr, 6)
            (64, 0.0002, 0.0002)
            >>> gpu.cross_encoder.frozen_layers  # bf16 or not, a GPU keeps the default's
            4
        """
        kind = getattr(device, "type", str(device).split(":")[0])
        if kind == "cpu":
            return self._for_cpu()
        recipe = self.recipe
        if kind != "cuda" or recipe.gpu_batch_size == recipe.batch_size:
            return self
        scale = math.sqrt(recipe.gpu_batch_size / recipe.batch_size)
        return self.with_(
            batch_size=recipe.gpu_batch_size,
            lr=self.bi_encoder.lr * scale,
            cross_encoder_lr=self.cross_encoder.lr * scale,
        )

    def _for_cpu(self) -> FinetuneConfig:
        """On this CPU: the ``fp32_*`` epochs and frozen cross-encoder layers where it has no bf16
        instructions and they are given (its training steps run in fp32 there), else as given."""
        fp32 = self.fp32_settings()
        asked = self.parameters()
        if cpu_info().bf16_isa is not None or all(asked[k] == v for k, v in fp32.items()):
            return self
        return self.with_(**fp32)

    @property
    def trains_cross_encoder(self) -> bool:
        """Whether the run trains a cross-encoder: the reranker's, or the silver pairs' teacher."""
        return bool(self.cross_encoder.reranker) or self.silver.corpus is not None

    def fp32_settings(self) -> dict[str, int]:
        """The settings a CPU without bf16 instructions trains with, by flat name: the ``fp32_*`` ones where
        given, else the asked ones (the default: one recipe on every machine).

        Example:
            >>> FinetuneConfig().fp32_settings()
            {'epochs': 2, 'cross_encoder_epochs': 3, 'cross_encoder_frozen_layers': 4}
            >>> FinetuneConfig.of(fp32_epochs=1, fp32_cross_encoder_frozen_layers=6).fp32_settings()
            {'epochs': 1, 'cross_encoder_epochs': 3, 'cross_encoder_frozen_layers': 6}
        """

        def given(fp32: int | None, asked: int) -> int:
            return int(asked if fp32 is None else fp32)

        bi, ce = self.bi_encoder, self.cross_encoder
        return {
            "epochs": given(bi.fp32_epochs, bi.epochs),
            "cross_encoder_epochs": given(ce.fp32_epochs, ce.epochs),
            "cross_encoder_frozen_layers": given(ce.fp32_frozen_layers, ce.frozen_layers),
        }

    def silver_config(self) -> SilverConfig:
        return SilverConfig(anchors=self.silver.anchors, teacher=self.silver.teacher, seed=self.recipe.seed)

    def cross_encoder_config(self) -> CrossEncoderConfig:
        return CrossEncoderConfig(
            epochs=self.cross_encoder.epochs,
            lr=self.cross_encoder.lr,
            batch_size=self.recipe.batch_size,
            freeze_embeddings=self.recipe.freeze_embeddings,
            frozen_layers=self.cross_encoder.frozen_layers,
            train_precision=self.recipe.train_precision,
            seed=self.recipe.seed,
            threads=self.recipe.threads,
            story_weight=self.cross_encoder.story_weight,
            drop_easy=self.cross_encoder.drop_easy,
            easy_sample=self.cross_encoder.easy_sample,
        )


def whole_numbers(value: Any, flag: str) -> tuple[int, ...]:
    """A list of whole numbers given as a list, or as the command line writes it (``"350,700"``: the
    ``learning-curve`` flow's parameters take that too); an item that is not one is refused, naming ``flag``.

    Example:
        >>> whole_numbers("350, 700", "--sizes"), whole_numbers([1, 2], "--seeds")
        ((350, 700), (1, 2))
        >>> whole_numbers("350,seven", "--sizes")
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --sizes: 'seven' is not a whole number; give them separated by commas
        >>> whole_numbers("350,,700", "--sizes")
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --sizes: '350,,700' has an empty item; give whole numbers separated by ...
    """
    try:
        return typed_items(value, int)
    except BadItem as exc:
        if exc.item is None:
            raise ConfigError(
                f"{flag}: {value!r} has an empty item; give whole numbers separated by single commas"
            ) from None
        raise ConfigError(
            f"{flag}: {exc.item!r} is not a whole number; give them separated by commas"
        ) from None


DEFAULT_SIZES = (350, 700, 1050, 1400)
DEFAULT_SEEDS = (1, 2, 3)
DEFAULT_BASELINES = ("zero-shot", "tfidf-char2", "use-m3")


@dataclass
class LearningCurveConfig:
    """Sizes x seeds and the fine-tuning settings every run shares (see ``FinetuneConfig``)."""

    pairs: str = option(help=f"pair file ({PAIR_FILE_FORMATS}) with a split column")
    out: str = option(help="folder for runs/, baselines.json, the table and the plot")
    sizes: tuple[int, ...] = option(DEFAULT_SIZES, help="training sizes, comma-separated")
    seeds: tuple[int, ...] = option(DEFAULT_SEEDS, help="seeds, comma-separated")
    baselines: tuple[str, ...] = option(
        DEFAULT_BASELINES,
        help="baselines scored on the same test pairs: zero-shot, tfidf-char2, use-m3 ('' for none)",
    )
    model: str = option_like(FinetuneConfig, "model")
    conversion: Conversion = option_like(FinetuneConfig, "conversion")
    loss: Literal["cosent", "mse"] = option_like(FinetuneConfig, "loss")
    epochs: int = option_like(FinetuneConfig, "epochs")
    batch_size: int = option_like(FinetuneConfig, "batch_size")
    lr: float = option_like(FinetuneConfig, "lr")
    warmup_ratio: float = option_like(FinetuneConfig, "warmup_ratio")
    max_length: int = option_like(FinetuneConfig, "max_length")
    freeze_embeddings: bool = option_like(FinetuneConfig, "freeze_embeddings")
    train_precision: TrainPrecision = option_like(FinetuneConfig, "train_precision")
    """Compared by what it resolves to, not as given: each point records the precision it trained in
    (``nlsim.training.learning_curve.check_points_precision``)."""
    threads: int | None = option_like(FinetuneConfig, "threads")

    def __post_init__(self) -> None:
        # "350,700" as on the command line (a flow parameter given so) is the list it names, not characters
        self.sizes = whole_numbers(self.sizes, "--sizes")
        self.seeds = whole_numbers(self.seeds, "--seeds")
        self.baselines = comma_tuple(self.baselines)
        self.check()

    def check(self) -> None:
        """Refuse what cannot make a curve, before any training."""
        for flag, path in (("--pairs", self.pairs), ("--out", self.out)):
            if not str(path).strip():
                raise ConfigError(f"{flag} is empty: give a {'pair file' if flag == '--pairs' else 'folder'}")
        for name, values in (("--sizes", self.sizes), ("--seeds", self.seeds)):
            if not values:
                raise ConfigError(f"{name}: give at least one")
            if len(set(values)) != len(values):
                raise ConfigError(
                    f"{name} {','.join(map(str, values))}: a value twice would be one run counted twice"
                )
        if min(self.sizes) < MIN_TRAIN_PAIRS:
            raise ConfigError(
                f"--sizes: every size must be >= {MIN_TRAIN_PAIRS} (the fewest pairs a point trains on), "
                f"got {min(self.sizes)}"
            )
        for seed in self.seeds:  # each point trains with its own: every one is checked, not the first
            check_seed(seed, "--seeds")
        if len(set(self.baselines)) != len(self.baselines):
            raise ConfigError(
                f"--baselines {','.join(self.baselines)}: a baseline twice would be one row counted twice"
            )
        unknown = [b for b in self.baselines if b not in DEFAULT_BASELINES]
        if unknown:
            raise ConfigError(
                f"--baselines: unknown baseline {unknown[0]!r} (use {', '.join(DEFAULT_BASELINES)})"
            )
        self.finetune_config(self.sizes[0], self.seeds[0]).check()

    def finetune_config(self, size: int, seed: int) -> Any:
        return FinetuneConfig.of(
            pairs=self.pairs,
            out=None,
            model=self.model,
            conversion=self.conversion,
            loss=self.loss,
            epochs=self.epochs,
            fp32_epochs=self.epochs,  # a curve is a measurement: the epochs asked on every CPU
            batch_size=self.batch_size,
            gpu_batch_size=self.batch_size,  # and the batch size and learning rate asked on a GPU too
            lr=self.lr,
            warmup_ratio=self.warmup_ratio,
            max_length=self.max_length,
            freeze_embeddings=self.freeze_embeddings,
            train_precision=self.train_precision,
            seed=seed,
            train_size=size,
            threads=self.threads,
            eval_test=True,
            eval_before=False,
            reranker=False,  # the curve measures the bi-encoder: what each extra pair buys it
            calibrate_level=None,
        )

    def settings(self, *, with_pairs: bool = False, model: str | None = None) -> dict[str, Any]:
        """What makes runs comparable, by flat name: everything but the pair file's name, sizes, seeds,
        baselines, out, threads and the training precision as given (the pairs are compared by what they
        hold: each point records their digest, so one pair file named another way, ``./pairs.tsv`` or its
        absolute path, resumes the curve; and the precision by the one each point trained in).
        ``with_pairs``: the pair file's name as given included, as points written before hashed it;
        ``model``: the model named so (a point's, as it was given there), not as given now: the curve
        compares its models by what they are (``nlsim.training.learning_curve.check_points_model``).

        Example:
            >>> cfg = LearningCurveConfig(pairs="p.tsv", out="curve", model="models/x")
            >>> cfg.settings_key(model="./models/x") == cfg.settings_key(), cfg.settings(model="m")["model"]
            (False, 'm')
        """
        d = asdict(self)
        left_out = ("sizes", "seeds", "baselines", "out", "threads", "train_precision")
        for k in (*left_out, *(() if with_pairs else ("pairs",))):
            d.pop(k)
        if model is not None:
            d["model"] = model
        return d

    def settings_key(self, *, with_pairs: bool = False, model: str | None = None) -> str:
        """Hash of :meth:`settings`, which each point records."""
        d = self.settings(with_pairs=with_pairs, model=model)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def settings_changes(self, recorded: Any) -> list[str]:
        """Each setting of :meth:`settings` that ``recorded`` (a finished point's) holds otherwise, in words
        by its flag; none where ``recorded`` is no such record (a point written before points kept them).
        The model is left out: the curve compares it by what it is, not by its name.

        Example:
            >>> cfg = LearningCurveConfig(pairs="p.tsv", out="curve")
            >>> cfg.settings_changes({**cfg.settings(), "lr": 1e-3, "freeze_embeddings": False})
            ['--lr 0.001 there, 0.0001 now', '--unfreeze-embeddings given there, not given now']
        """
        if not isinstance(recorded, dict):
            return []
        options = {o.name: o for o in options_of(LearningCurveConfig)}
        out = []
        for name, now in self.settings().items():
            was = recorded.get(name, now)
            if was == now or name == "model":
                continue
            opt = options[name]
            if isinstance(now, bool):  # a flag that turns its default off: given or not
                said = {v: "not given" if v == opt.default else "given" for v in (was, now)}
                out.append(f"{opt.flags[0]} {said[was]} there, {said[now]} now")
            else:
                out.append(f"{opt.flags[0]} {was} there, {now} now")
        return out


FP32_FLAGS = "--fp32-epochs, --fp32-cross-encoder-epochs, --fp32-cross-encoder-frozen-layers"
_FP32_WORDS = {
    "epochs": "bi-encoder epochs",
    "cross_encoder_epochs": "cross-encoder epochs",
    "cross_encoder_frozen_layers": "cross-encoder layers frozen",
}


def fp32_changes(asked: FinetuneConfig, used: FinetuneConfig) -> str:
    """What ``used`` (:meth:`FinetuneConfig.for_device`) trains otherwise than ``asked`` among the fp32
    settings, in words ("" when nothing); the cross-encoder's only when one is trained (a reranker, or the
    silver pairs' teacher).

    Example:
        >>> asked = FinetuneConfig.of(epochs=2)
        >>> fp32_changes(asked, asked.with_(epochs=1, cross_encoder_frozen_layers=6))
        'bi-encoder epochs 1, not 2; cross-encoder layers frozen 6, not 4'
        >>> fp32_changes(asked, asked)
        ''
    """
    was, now = asked.parameters(), used.parameters()
    parts = [
        f"{_FP32_WORDS[name]} {now[name]}, not {was[name]}"
        for name in asked.fp32_settings()
        if now[name] != was[name] and (name == "epochs" or used.trains_cross_encoder)
    ]
    return "; ".join(parts)


def epochs_on_any_cpu(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` (:class:`FinetuneConfig`'s, by flat name) with the fp32 recipe's epochs set to the epochs
    they ask for, unless given: a run that measures a recipe (a benchmark's candidate, a test) then trains the
    same epochs on every kind of CPU.

    Example:
        >>> epochs_on_any_cpu({"epochs": 3, "cross_encoder_epochs": 2, "fp32_cross_encoder_epochs": 1})
        {'epochs': 3, 'cross_encoder_epochs': 2, 'fp32_cross_encoder_epochs': 1, 'fp32_epochs': 3}
    """
    out = dict(settings)
    for name in ("epochs", "cross_encoder_epochs"):
        if name in out:
            out.setdefault(f"fp32_{name}", out[name])
    return out
