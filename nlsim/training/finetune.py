"""Fine-tune a Sentence-BERT bi-encoder (and its reranker) on graded pairs, and save the model folder.

:func:`finetune` chains the steps: prepare the pairs (:mod:`nlsim.training.data`), score the base model,
[draw silver pairs,] train the bi-encoder (:mod:`nlsim.training.bi_encoder`), score it, calibrate its
threshold, train the reranker (:mod:`nlsim.training.reranker`), and write a model folder that loads in
transformers, sentence-transformers and :func:`nlsim.encoders.load_encoder`, with ``calibration.json``,
``training.json``, ``reranker/`` and a model card (``README.md``, :mod:`nlsim.training.model_card`). The
``finetune`` flow runs the same functions one task each.

Example (a few seconds with the small English model):
    >>> import pandas as pd
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "a dog", "stocks fall", "rain today"] * 4,
    ...                       "text_b": ["a kitten", "a puppy", "markets drop", "football"] * 4,
    ...                       "score": [1.0, 0.9, 0.8, 0.0] * 4,
    ...                       "split": ["train"] * 12 + ["validation"] * 4})
    >>> pairs["text_a"] = pairs["text_a"] + pairs.index.astype(str)
    >>> cfg = FinetuneConfig.of(model="paraphrase-MiniLM-L3-v2", epochs=1, batch_size=4, conversion="none",
    ...                         out=None, calibrate_level=None, eval_test=False, reranker=False, log_every=0)
    >>> res = finetune(cfg, pairs=pairs, log=lambda m: None)
    >>> res.best["epoch"], res.n_train
    (1, 12)
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from nlsim.encoders import lower_states
from nlsim.encoders.scoring import Embeddings, KnownScores, known_first, pair_scorer
from nlsim.errors import ConfigError
from nlsim.evaluation.calibration import CALIBRATION_JSON, TOPIC_CALIBRATION_JSON, save_calibration
from nlsim.io.atomic import sweep_leftovers
from nlsim.io.editor_file import editor_labels
from nlsim.io.lock import RunLock
from nlsim.io.manifest import saved_folder
from nlsim.io.ownership import (
    check_outputs_apart,
    check_outside_stores,
    check_writable,
    is_owned,
    resolved,
)
from nlsim.orchestration import Call, StageInfo, declare, direct
from nlsim.progress import say
from nlsim.rerank.reranker import reranker_summary
from nlsim.training import side_by_side
from nlsim.training.bi_encoder import load_base, train_encoder
from nlsim.training.config import FP32_FLAGS, FinetuneConfig, fp32_changes
from nlsim.training.data import PreparedPairs, overruled_note, prepare_pairs
from nlsim.training.lossy_check import check_model, store_checks
from nlsim.training.model_card import model_card_markdown
from nlsim.training.reranker import fit_reranker
from nlsim.training.silver import make_silver_pairs
from nlsim.training.validation import (
    ScoredValidation,
    calibrate_encoder,
    calibrate_topics,
    evaluate_splits,
    scored_validation,
)

TRAINING_JSON = "training.json"
SILVER_PARQUET = "silver_pairs.parquet"
CARD = "README.md"


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
    editor_labels: dict[str, dict[str, int]] | None = None
    """The pairs merged from editors' files (:func:`nlsim.io.editor_file.editor_labels`), per split, and
    apart (``overruled``) the training pairs read with an editor's newer score from the verdict store."""
    validation_scores: ScoredValidation | None = None
    """The model's own scores of the validation pairs (in memory for the chain; not in ``training.json``)."""

    def as_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record.pop("validation_scores")
        return record


def add_silver_pairs(data: PreparedPairs, silver: Any) -> None:
    """Append the silver pairs (:class:`nlsim.training.silver.SilverPairs`) to ``data.train`` and note the
    corpus."""
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
    n_silver = len(silver.pairs) if silver is not None else 0
    return FinetuneResult(
        config=cfg.parameters(),
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
        editor_labels=editor_labels(
            pd.concat([data.train, data.validation]), overruled=data.overruled_in_train()
        ).as_dict(),
    )


TRAINING_STAGES = {
    s.name: s
    for s in (
        StageInfo("load-pairs", "read, split, convert and check the annotated pairs", io=True),
        StageInfo("load-base-model", "load the base encoder", io=True),
        StageInfo("evaluate-before", "score the base model on validation (and test)"),
        StageInfo("silver-pairs", "train teachers and label corpus pairs (silver)", expensive=True),
        StageInfo(
            "train",
            "train the bi-encoder, keep the best validation checkpoint (on a CPU, the reranker's "
            "cross-encoder begins beside it)",
            expensive=True,
        ),
        StageInfo("evaluate-after", "score the fine-tuned bi-encoder"),
        StageInfo("calibrate", "calibrate the threshold on validation"),
        StageInfo("calibrate-topics", "calibrate the topic groups' threshold on validation"),
        StageInfo("reranker", "train, calibrate and score the reranker", expensive=True),
        StageInfo(
            "quality-check", "check the lossy inference paths against fp32 on validation", expensive=True
        ),
        StageInfo("save-model", "write the model folder", io=True),
    )
}
declare(*TRAINING_STAGES.values())


def finetune(
    cfg: FinetuneConfig,
    *,
    pairs: pd.DataFrame | None = None,
    encoder: Any = None,
    log: Callable[[str], None] = say,
    call: Call = direct,
    on_rate: Callable[[float], None] | None = None,
    before: KnownScores | None = None,
) -> FinetuneResult:
    """Train on the train split, choose on validation, evaluate, calibrate and (with ``cfg.out``) save.

    ``pairs`` overrides ``cfg.data.pairs`` (a loaded table); ``encoder`` overrides loading ``cfg.model``;
    ``before``: the base model's scores of the (converted) validation and test pairs, when the caller has
    them (the chain's zero-shot baseline): a split they cover is not embedded again.
    Metrics before and after fine-tuning go in ``result.metrics`` keyed ``"{before|after}/{split}"``. Each
    step runs through ``call`` (:mod:`nlsim.orchestration`; the ``finetune`` flow makes them tasks).
    ``on_rate`` hears the bi-encoder's measured seconds per step once (the chain's time estimate).
    """
    t_start = time.perf_counter()
    if cfg.out:
        _check_out(cfg, log)
    data = call("load-pairs", prepare_pairs, cfg, pairs)
    if encoder is None:
        encoder = call("load-base-model", load_base, cfg)
    encoder.max_length = int(cfg.bi_encoder.max_length)
    cfg = _for_device(cfg, encoder, data, log)
    metrics: dict[str, dict[str, Any]] = {}
    if cfg.evaluation.eval_before:  # the caller's base model scores where they cover the splits (the chain's)
        metrics = call("evaluate-before", evaluate_splits, known_first(before or {}, encoder), data, "before")
    silver = None
    if cfg.silver.corpus:
        silver = call("silver-pairs", make_silver_pairs, data, cfg, log)
        add_silver_pairs(data, silver)
        log(f"training on {len(data.train)} pairs: gold + {len(silver.pairs)} silver")
    with_reranker = cfg.cross_encoder.reranker
    with side_by_side.started(cfg, data, encoder.device, log) as beside:
        bi_cfg = beside.bi_encoder_config(cfg) if beside is not None else cfg
        spare, begin = (beside.spare_threads, beside.begin) if beside is not None else (None, None)
        run = call(
            "train",
            train_encoder,
            encoder,
            data.train,
            data.validation,
            bi_cfg,
            log,
            on_rate,
            with_reranker,
            spare,
            begin,
            evaluated={*data.test["text_a"], *data.test["text_b"]},
        )
        # each text embedded once from here: validation's by the kept checkpoint, the training texts from
        # training's frozen states (the reranker's line is fitted on them)
        embedded = {**run["training_embeddings"], **run["validation_embeddings"]}
        cosine = pair_scorer(encoder, kept=embedded)
        meta = {"model": encoder.model_id, "fingerprint": encoder.fingerprint}
        cal = call("calibrate", calibrate_encoder, cosine, data, cfg, **meta)
        topic = call("calibrate-topics", calibrate_topics, cosine, data, cfg, **meta)
        metrics.update(call("evaluate-after", evaluate_splits, cosine, data, "after", cal))
        reranker, own_scorer = None, cosine
        if with_reranker:
            fitted = call("reranker", fit_reranker, cosine, data, cfg, log, beside)
            reranker, own_scorer = fitted.reranker, fitted.scorer
            metrics.update(fitted.metrics)
    result = make_result(cfg, data, run, metrics, cal, time.perf_counter() - t_start, silver, reranker)
    if reranker is not None and reranker.calibration is not None:  # what a report of it scores with
        result.validation_scores = scored_validation(own_scorer, data, "reranker", reranker.calibration)
    else:
        result.validation_scores = scored_validation(cosine, data, "cosine", cal.as_dict() if cal else None)
    if cfg.out:
        _check_and_save(cfg, call, encoder, data, result, cal, topic, silver, reranker, embedded)
    lower_states.keep_vectors(encoder, _fp32_only(embedded, run))  # a cold chain's report takes these
    result.seconds = round(time.perf_counter() - t_start, 1)
    log(
        f"done in {result.seconds:.0f} s; best validation Spearman {run['best']['spearman']:.2f} "
        f"(epoch {run['best']['epoch']}, step {run['best']['step']})"
    )
    return result


def _fp32_only(embedded: Embeddings, run: dict[str, Any]) -> Embeddings:
    """The vectors of ``embedded`` that are fp32: not those the training embedded in bf16 (``run``'s
    ``lossy_embeddings``, :func:`nlsim.training.bi_encoder.train_encoder`), which no report may take."""
    return {t: v for t, v in embedded.items() if t not in run["lossy_embeddings"]}


def _for_device(
    cfg: FinetuneConfig, encoder: Any, data: PreparedPairs, log: Callable[[str], None]
) -> FinetuneConfig:
    """``cfg`` for the encoder's device (a GPU: larger steps; a CPU without bf16: the ``fp32_*`` settings
    given), said in the log with what the run trains on."""
    asked, cfg = cfg, cfg.for_device(encoder.device)
    fp32 = fp32_changes(asked, cfg)
    if fp32:
        log(f"{fp32}: this CPU has no bf16 instructions and trains in fp32 ({FP32_FLAGS})")
    log(
        f"fine-tuning {encoder.name} on {len(data.train)} pairs (validation {len(data.validation)}, "
        f"test {len(data.test)}), conversion {cfg.data.conversion}, loss {cfg.bi_encoder.loss}, "
        f"{cfg.bi_encoder.epochs} epoch(s), lr {cfg.bi_encoder.lr}, bs {cfg.recipe.batch_size}, frozen "
        f"embeddings {cfg.recipe.freeze_embeddings}, seed {cfg.recipe.seed}"
    )
    if data.overruled:
        log(overruled_note(data.overruled))
    return cfg


def _check_and_save(
    cfg: FinetuneConfig,
    call: Call,
    encoder: Any,
    data: PreparedPairs,
    result: FinetuneResult,
    cal: Any,
    topic: Any,
    silver: Any,
    reranker: Any,
    embedded: Embeddings | None = None,
) -> None:
    """The quality check of the lossy paths (when asked; ``embedded``: the trained bi-encoder's fp32
    vectors its training computed, the check's reference), then the model folder ``cfg.out``."""
    checks = None
    if cfg.evaluation.precision_check:
        checks = call("quality-check", quality_check, encoder, reranker, data, cal, cfg, embedded)
    extra = {TOPIC_CALIBRATION_JSON: partial(_save_topic, topic, encoder)} if topic is not None else None
    call("save-model", save_model_folder, encoder, cfg.out, result, cal, silver, reranker, extra, checks)


def check_model_out(out: str | Path) -> None:
    """Refuse, before training, a model folder nlsim may not replace: only a new or empty folder, or one
    nlsim wrote as a model folder, is ever replaced (never a folder that merely holds a ``config.json``)."""
    target = resolved(out)  # "models/new/../../mine" is mine/ once new/ is made: check where it leads
    if target.exists() and not target.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder")
    if target.is_dir() and any(target.iterdir()) and not is_owned(target, "model"):
        raise ConfigError(
            f"--out {out} is not empty and is not a model folder written by nlsim; refusing to replace it "
            "(give a new or empty folder)"
        )
    check_writable(out, what="--out")


def quality_check(
    encoder: Any,
    reranker: Any,
    data: PreparedPairs,
    cal: Any,
    cfg: FinetuneConfig,
    embedded: Embeddings | None = None,
) -> dict[str, dict[str, Any]]:
    """The quality check of the lossy inference paths (int8, bf16, fp16) of the trained bi-encoder and
    reranker against fp32 on the (converted) validation pairs, at the calibrated thresholds, on the device
    they trained on (:mod:`nlsim.training.lossy_check`); stored in the model folder as
    ``quality_check.json``. Its fp32 reference takes what training computed: the bi-encoder's vectors
    (``embedded``) and the cross-encoder's validation scores (the pair-score cache)."""
    return check_model(
        encoder,
        reranker,
        data.validation,
        conversion=None,
        threshold=cal.threshold if cal is not None else None,
        threshold_source="calibration.json" if cal is not None else "",
        threads=cfg.recipe.threads,
        pairs_file=str(cfg.data.pairs or ""),
        pairs_sha256=next(iter(data.data_files.values()), ""),
        split=cfg.data.val_split,
        pair_conversion=cfg.data.conversion,
        known=embedded,
    )


@contextlib.contextmanager
def holding_model_out(out: str | Path | None, log: Callable[[str], None] = say) -> Iterator[None]:
    """``nlsim finetune``'s (and its flow's) hold on its model folder for the whole run: refused inside a
    model store (:func:`~nlsim.io.ownership.check_outside_stores`: its versions are saved, registered and
    promoted by nlsim pipeline and nlsim models alone) and where it may not be replaced
    (:func:`check_model_out`), then locked beside it (``OUT.lock``, :meth:`~nlsim.io.lock.RunLock.beside`:
    the folder is built beside the old one and renamed into place, so a lock inside it would go with it).
    A second run into the same folder is refused now, naming the run that holds it, instead of both
    training and the last to finish replacing the other's model unsaid; a lock whose run is gone is taken
    over, and said. No ``out`` (a run that saves nothing, or an empty ``--out``, which :func:`finetune`
    refuses): nothing to hold."""
    if not out or not str(out).strip():
        yield
        return
    check_outside_stores({"--out": out})
    check_model_out(out)
    with RunLock.beside(resolved(out), what="--out") as lock:
        if lock.message:
            log(lock.message)
        yield


def _check_out(cfg: FinetuneConfig, log: Callable[[str], None]) -> None:
    """Before any work: the model folder apart from every input and nlsim's own to write; what a killed run
    left half-saved there removed."""
    model = cfg.model if Path(cfg.model).exists() else None
    inputs = {"--pairs": cfg.data.pairs, "--model": model, "--silver-corpus": cfg.silver.corpus}
    check_outputs_apart(inputs, {"--out": cfg.out})
    check_model_out(str(cfg.out))
    out = resolved(str(cfg.out))
    for path in sweep_leftovers(out.parent, out.name):  # a killed run's half-saved model (100s of MB)
        log(f"removed {path}, left by a killed run")


def _save_topic(topic: Any, encoder: Any, path: Path) -> None:
    """``topic_calibration.json``: the cosine's topic-level threshold, named after the saved model."""
    topic = copy.copy(topic)
    topic.model = encoder.model_id
    topic.fingerprint = encoder.fingerprint
    save_calibration(topic, path)


def save_model_folder(
    encoder: Any,
    out: str | Path,
    result: FinetuneResult,
    cal: Any,
    silver: Any = None,
    reranker: Any = None,
    extra_files: dict[str, Callable[[Path], None]] | None = None,
    checks: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """Write the whole model folder at once: the encoder, ``calibration.json``, ``training.json``, the card,
    the reranker (``reranker/``), silver pairs and the quality checks (``quality_check.json``,
    ``reranker/quality_check.json``) when there are; it replaces ``out`` only when nlsim wrote it
    (:func:`check_model_out`). ``extra_files``: more files, as ``{name: writer(path)}``."""
    out = Path(out)
    check_model_out(out)
    encoder.base_model = getattr(encoder, "base_model", None) or getattr(encoder, "model_id", "")
    encoder.model_id = f"finetuned:{out.name}"
    encoder.name = out.name
    result.model_dir = str(out)
    if cal is not None:
        cal = copy.copy(cal)
        cal.model = encoder.model_id
        cal.fingerprint = encoder.fingerprint
        result.calibration = cal.as_dict()
    with saved_folder(out, "model") as tmp:  # marked, and every file listed in manifest.json
        encoder.write_files(
            tmp,
            extra_meta={
                "conversion": result.config.get("conversion", "none"),
                "finetuned": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            },
        )
        if cal is not None:
            save_calibration(cal, tmp / CALIBRATION_JSON)
        (tmp / TRAINING_JSON).write_text(
            json.dumps(result.as_dict(), indent=2, ensure_ascii=False, default=str), encoding="utf-8"
        )
        if silver is not None:
            silver.pairs.to_parquet(tmp / SILVER_PARQUET, index=False)
        if reranker is not None:
            reranker.save(tmp)
        if checks:
            store_checks({k: v for k, v in checks.items() if k == "encoder" or reranker is not None}, tmp)
        for name, writer in (extra_files or {}).items():
            writer(tmp / name)
        (tmp / CARD).write_text(model_card_markdown(result, encoder), encoding="utf-8")
    return out
