"""The chained pipeline: the one place that orders the chain, from annotated pairs to the judged report.

1. **load**: the annotated pairs (validated: no pair in two splits, and splits fine-tuning can train on) and,
   with a report, every input the report reads (its corpus, the pairs it is judged on, the editors' verdict
   store checked against the pair file): a bad one is refused before any training (:func:`load_inputs`);
2. **baseline**: the zero-shot base model scored on validation (and test) and calibrated at the report's
   level on validation (kept in the model store as its zero-shot calibration): the "before";
3. **finetune** (before it, on a cold chain with no promoted model, the **first report**,
   :func:`first_report`: the zero-shot report, in the report folder within minutes, replaced by step 6's)
   (:func:`nlsim.training.finetune.finetune`, bi-encoder and reranker) into a new version of the
   model store, unless a version with the same training fingerprint (annotations content, base model,
   settings: :mod:`nlsim.chain.fingerprint`) exists: then it is reused, and the run says so, once it has
   loaded it (every file checked against the manifest written when it was saved: a damaged version is
   refused by name, never evaluated from the figures its ``store.json`` keeps, never promoted);
4. **evaluate**: the candidate and the current model (or the zero-shot baseline) scored on the validation
   split (Spearman, same-story F1 at each one's own threshold, and the cross-validated same-story F1 with
   its interval); test metrics are the ones recorded once, when the model was trained;
5. **promote**: the candidate becomes current only when it beats the current one (or, with none, the
   zero-shot baseline) on Spearman and the cross-validated same-story F1 (:mod:`nlsim.chain.promotion`);
   otherwise it is kept, and the run says why;
6. **report**: :func:`nlsim.dedup.run.run_dedup` over the corpus with the *current* model (its calibration
   and reranker); zero-shot only when no model was ever promoted, and the report says so. The report's
   run judges itself (``--judge-pairs``: its ``judge`` stage, shown on its page) against the scored
   pairs of the validation split (:mod:`nlsim.evaluation.judge`), at the cluster level (two items are
   judged the same story when the report puts them in one cluster), with a 95% interval of its F1, and
   the chain records that judgement (the written folder is not judged a second time).

Every stage goes through ``call`` (:mod:`nlsim.orchestration`), and the ``news-pipeline`` flow makes each a
task: ``chain-load``, ``base-model``, ``baseline``, ``reuse-check`` or fine-tuning's own stages,
``evaluate`` (the candidate and the incumbent, in one task: :func:`evaluate_both`), ``promote``,
``quality-check`` (the lossy paths' quality check, :func:`quality_check_stage`) and the report's own
stages. The record goes to ``OUT/pipeline.json``. The
whole chain holds the model store's lock (one chain at a time on a store), and first finishes what a killed
chain left there (:meth:`nlsim.io.model_store.ModelStore.recover`).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.chain.config import PipelineConfig
from nlsim.chain.eta import ChainWork
from nlsim.chain.eta import describe as describe_eta
from nlsim.chain.fingerprint import (
    auto_precision,
    same_training,
    training_fingerprint,
    training_settings,
    unused_on,
    what_changed,
)
from nlsim.chain.promotion import cross_validated_f1, decide, figures, score_model, split_digest
from nlsim.clusters.verdicts import earlier_paths, store_path
from nlsim.dedup import stages
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.editors import read_editors
from nlsim.dedup.paths import check_quarantine_beside
from nlsim.dedup.run import STAGES, DedupResult, run_dedup
from nlsim.dedup.window import corpus_items
from nlsim.encoders import load_encoder, lower_states
from nlsim.encoders.device import default_device
from nlsim.encoders.scoring import Embeddings, KnownScores, known_scores, pair_scorer
from nlsim.errors import ConfigError, StateError
from nlsim.evaluation.calibration import (
    TOPIC_CALIBRATION_JSON,
    calibrate_scores,
    load_calibration,
    save_calibration,
    threshold_metrics,
)
from nlsim.evaluation.judge import describe
from nlsim.evaluation.metrics import convert_texts, metrics_from_scores, pair_similarities
from nlsim.inference.gpu import gpu_info
from nlsim.io.atomic import atomic_write_text
from nlsim.io.lock import GUARD_NAME
from nlsim.io.model_store import ModelStore
from nlsim.io.ownership import (
    check_claimable,
    check_outputs_apart,
    check_outside_stores,
    check_replaceable,
    check_writable,
    claimed,
    is_quarantine_file,
    resolved,
)
from nlsim.io.pairs import check_pinned, load_pairs, pin_note, pinned, pinned_digest
from nlsim.io.records import read_json_object
from nlsim.io.report_folder import check_report_replaceable
from nlsim.io.tables import check_input_file, estimated_rows
from nlsim.models.settings import CURRENT_MODEL
from nlsim.orchestration import Call, StageInfo, declare, direct, timed_call
from nlsim.progress import one_run, say
from nlsim.report.files import (
    CHAIN_PAGE,
    CHAIN_PAGE_TITLE,
    CHAIN_RECORD,
    hold_report_folder,
    is_chain_page,
    is_chain_record,
)
from nlsim.rerank.reranker import has_reranker, load_reranker
from nlsim.search.index import check_device
from nlsim.training import side_by_side
from nlsim.training.clock import timed_steps
from nlsim.training.data import (
    as_trained,
    check_test_scorable,
    check_trainable,
    once_as_read,
    overruled_note,
    read_for_training,
    split_pairs,
)
from nlsim.training.finetune import TRAINING_STAGES, finetune
from nlsim.training.validation import TOPIC_LEVEL, ScoredValidation

CHAIN_STAGES = {
    s.name: s
    for s in (
        StageInfo(
            "chain-load",
            "read and validate the annotated pairs and every input of the report (corpus, verdict store, "
            "judged pairs), before any training",
            io=True,
        ),
        StageInfo("base-model", "load the base encoder", io=True),
        StageInfo("reuse-check", "load the reused version, every file checked, before it is evaluated"),
        StageInfo("baseline", "score and calibrate the zero-shot base model on validation"),
        StageInfo("evaluate", "score the candidate and the current model (or zero-shot) on validation"),
        StageInfo("promote", "promote the candidate when it beats the current model", io=True),
        StageInfo(
            "quality-check",
            "check the report model's lossy inference paths against fp32 on validation "
            "(once per model, machine kind and thread count)",
            expensive=True,
        ),
    )
}
declare(*CHAIN_STAGES.values())
MARKERS_KEPT = 8
"""How many machine kinds a model's store entry remembers its quality check was settled for."""


@dataclass
class PipelineResult:
    """What the chain did: baseline, candidate, current model, the promotion decision, the report and its
    judgement."""

    record: dict[str, Any]
    report: DedupResult | None = None
    table: str = ""
    messages: list[str] = field(default_factory=list)


@dataclass
class Baseline:
    """The zero-shot baseline: its figures (the record's ``baseline``), and its scores of the converted
    validation and test pairs when this run computed them (fine-tuning then does not score the base model
    again: :func:`nlsim.training.finetune.finetune`'s ``before``), and the base model's vectors of their
    texts (``vectors``: the zero-shot quality check's fp32 reference, :func:`first_report`); none when the
    figures came from the cache."""

    metrics: dict[str, Any]
    known: KnownScores = field(default_factory=dict)
    vectors: Embeddings = field(default_factory=dict)

    def for_training(self, base: Any, max_length: int) -> KnownScores:
        """:attr:`known`, when fine-tuning would score these texts the same: none of them is cut at
        ``max_length`` (fine-tuning's) or at the base model's own length (the baseline's); else nothing."""
        texts = list({t for pair in self.known for t in pair})
        if not texts:
            return {}
        longest = max(len(ids) for ids in base.token_ids(texts))
        return self.known if longest < min(int(base.max_length), int(max_length)) else {}


def zero_shot_scores(
    cfg: PipelineConfig, base: Any, validation: pd.DataFrame, test: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, Embeddings]:
    """The base model's cosines of the validation and test pairs (none for 2 test pairs or fewer), each text
    embedded once on an exact path, and those vectors (converted text -> vector), also kept for a cold
    chain's first report (:mod:`nlsim.encoders.lower_states`)."""
    embedded: Embeddings = {}
    scorer = pair_scorer(base, kept=embedded)
    scores = pair_similarities(scorer, validation, cfg.convert)
    test_scores = pair_similarities(scorer, test, cfg.convert) if len(test) > 2 else np.zeros(0)
    lower_states.keep_vectors(base, embedded)
    return scores, test_scores, embedded


def cached_baseline(cached: Path) -> dict[str, Any] | None:
    """The zero-shot baseline's cache (``baseline.json``: its key and figures), ``None`` where there is
    none, and an empty one where it is unreadable or its figures are not an object (a cache: a torn one is
    made again, never a reason to stop the chain)."""
    if not cached.is_file():
        return None
    try:
        data = read_json_object(cached, "the zero-shot figures and their key")
        if not isinstance(data.get("metrics"), dict):
            raise ValueError("its figures ('metrics') are not an object")
    except ValueError as exc:
        say(f"baseline: {cached} is unreadable ({exc}); the zero-shot figures are computed again")
        return {}
    return data


def baseline_stage(cfg: PipelineConfig, store: ModelStore, base: Any, pairs: pd.DataFrame) -> Baseline:
    """The zero-shot figures and calibration (cached in the store's ``zero-shot/`` by what they depend on:
    its ``baseline.json``, written after the calibration and removed before it is written again), with,
    above the topic level, the topic calibration of the zero-shot report's topic groups (at the topic level
    or below, none: an earlier run's is removed, as fine-tuning writes none there)."""
    validation = pairs[pairs["split"] == "validation"]
    test = pairs[pairs["split"] == "test"]
    folder = store.zero_shot_dir()
    key = {
        "base_fingerprint": base.fingerprint,
        "validation": split_digest(validation),
        "test": split_digest(test),
        "conversion": cfg.convert,
        "level": cfg.level,
    }
    cached = folder / "baseline.json"
    data = cached_baseline(cached)
    if data is not None:
        # a topic calibration at a story level, none at the topic level (one there is of another run)
        topics_known = (folder / TOPIC_CALIBRATION_JSON).is_file() == (cfg.level > TOPIC_LEVEL)
        if data.get("key") == key and load_calibration(folder) is not None and topics_known:
            say(f"baseline: zero-shot {cfg.base_model} figures reused ({cached})")
            return Baseline(data["metrics"])
    scores, test_scores, vectors = zero_shot_scores(cfg, base, validation, test)
    gold = validation["score"].to_numpy()
    cal = calibrate_scores(  # the scores above: validation is embedded once
        scores,
        gold,
        level=cfg.level,
        conversion=cfg.convert or "none",
        split="validation",
        model=base.model_id,
        fingerprint=base.fingerprint,
        pairs_file=str(cfg.pairs),
    )
    metrics = {
        "model": cfg.base_model,
        "scorer": "cosine",
        "spearman": metrics_from_scores(scores, gold).spearman,
        "threshold": cal.threshold,
        "level": cfg.level,
        **{k: v for k, v in threshold_metrics(scores, gold, cal.threshold, cfg.level).items() if k != "n"},
        **cross_validated_f1(scores, gold, cfg.level),
        "test_spearman": metrics_from_scores(test_scores, test["score"].to_numpy()).spearman
        if len(test) > 2
        else None,
        "split_digest": key["validation"],
    }
    folder.mkdir(parents=True, exist_ok=True)
    # the figures go first and come back last: a chain stopped between the writes leaves no figures of one
    # key beside the calibration of another for the next chain to take as its cache
    cached.unlink(missing_ok=True)
    save_calibration(cal, folder / "calibration.json")
    save_topic_calibration(cfg, base, scores, gold, folder / TOPIC_CALIBRATION_JSON)
    atomic_write_text(cached, json.dumps({"key": key, "metrics": metrics}, indent=2) + "\n")
    say(
        f"baseline: zero-shot {cfg.base_model}: validation Spearman {metrics['spearman']:.2f}, "
        f"{cal.describe()}"
    )
    scored = pd.concat([validation, test]) if len(test) > 2 else validation
    return Baseline(
        metrics,
        known_scores(
            convert_texts(scored["text_a"].tolist(), cfg.convert),
            convert_texts(scored["text_b"].tolist(), cfg.convert),
            np.concatenate([scores, test_scores]),
        ),
        vectors,
    )


def save_topic_calibration(
    cfg: PipelineConfig, base: Any, scores: np.ndarray, gold: np.ndarray, path: Path
) -> None:
    """The zero-shot report's topic groups' calibration (:mod:`nlsim.clusters.topics`), at ``path``: the
    base model's validation ``scores`` calibrated at the topic level, above it; at it or below, none (the
    story threshold is the topic level's), and an earlier run's is removed."""
    if cfg.level <= TOPIC_LEVEL:
        path.unlink(missing_ok=True)
        return
    topic = calibrate_scores(
        scores,
        gold,
        level=TOPIC_LEVEL,
        conversion=cfg.convert or "none",
        split="validation",
        model=base.model_id,
        fingerprint=base.fingerprint,
        pairs_file=str(cfg.pairs),
    )
    save_calibration(topic, path)


def evaluate_stage(
    cfg: PipelineConfig, store: ModelStore, version: Path, validation: pd.DataFrame, zero_shot: Any
) -> dict[str, Any]:
    """A version's validation figures (cached in its ``store.json`` by the validation pairs' digest:
    :func:`figures_key`), as the chain's report would score with it (``--no-rerank``: its bi-encoder
    alone)."""
    info = store.info(version) or {}
    cache = info.get("validation") or {}
    key = figures_key(cfg, validation)
    if key in cache:
        return cache[key]
    metrics = score_model(
        version,
        validation,
        cfg.convert,
        cfg.level,
        zero_shot_calibration=zero_shot,
        rerank=cfg.model.rerank is not False,
    )
    info["validation"] = {**cache, key: metrics}
    store.write_info(version, info)
    return metrics


def figures_key(cfg: PipelineConfig, validation: pd.DataFrame) -> str:
    """The key of a version's validation figures in its ``store.json``: the validation pairs' digest, the
    conversion and the level, and ``cosine`` where the report is made with ``--no-rerank`` (the bi-encoder's
    figures, kept apart from those of the rerank score the report uses otherwise)."""
    key = f"{split_digest(validation)}:{cfg.convert}:{cfg.level}"
    return f"{key}:cosine" if cfg.model.rerank is False else key


def seed_figures(
    cfg: PipelineConfig, store: ModelStore, version: Path, validation: pd.DataFrame, own: ScoredValidation
) -> bool:
    """Keep a version's validation figures (:func:`evaluate_stage`'s cache) from the scores its training
    gave the same validation pairs (:class:`nlsim.training.validation.ScoredValidation`: the model's own
    scorer and threshold, as :func:`nlsim.chain.promotion.score_model` would use), instead of loading the
    model and scoring them again. Only when they cover every validation pair at the report's level, with
    the scorer the report uses (not the rerank score for a report made with ``--no-rerank``); returns
    whether it did."""
    ids = validation["pair_id"].astype(str)
    if own.level != cfg.level or not ids.isin(own.scores.keys()).all():
        return False
    if cfg.model.rerank is False and own.scorer != "cosine":  # the report scores with the bi-encoder alone
        return False
    scores = np.array([own.scores[i] for i in ids], dtype=np.float64)
    info = store.info(version) or {}
    key = figures_key(cfg, validation)
    metrics = figures(version, own.scorer, scores, validation, own.threshold, cfg.level)
    info["validation"] = {**(info.get("validation") or {}), key: metrics}
    store.write_info(version, info)
    return True


def quality_marker(cfg: PipelineConfig, validation: pd.DataFrame, device: Any) -> str:
    """What a model's quality check was settled for: the validation pairs, the conversion and the machine
    kind: the CPU's, and with it the run's thread count (the probe that decides which lossy CPU paths are
    worth checking times them at that count) or, where ``device`` is a GPU, the GPU's."""
    import torch  # deferred: heavy, loaded only when needed

    from nlsim.inference.cpu import cpu_info

    gpu = gpu_info(device)
    where = gpu.key if gpu else f"t{int(cfg.recipe.threads or torch.get_num_threads())}"
    return f"{split_digest(validation)}:{cfg.convert}:{cpu_info().key}:{where}"


def checked_for(store: ModelStore, version: Path) -> list[str]:
    """The :func:`quality_marker` values ``version``'s quality check was settled for (an older marker, a
    string with no machine kind, is stale: none)."""
    done = (store.info(version) or {}).get("quality_check")
    return done if isinstance(done, list) else []


def mark_checked(
    store: ModelStore, version: Path, marker: str, relied: list[dict[str, Any]] | None = None
) -> None:
    """Record that ``version``'s quality check is settled for ``marker`` (the latest few machine kinds are
    kept), with the figures it relied on (``relied``: :func:`relied_on`; none beyond the version folder's
    own records, which its manifest covers, when not given)."""
    kinds = [m for m in checked_for(store, version) if m != marker][-(MARKERS_KEPT - 1) :] + [marker]
    info = store.info(version) or {}
    kept = {m: v for m, v in (info.get("quality_check_records") or {}).items() if m in kinds}
    kept[marker] = relied or []
    store.write_info(version, {**info, "quality_check": kinds, "quality_check_records": kept})


def relied_on(records: list[tuple[str, str, Path | None]]) -> list[dict[str, Any]]:
    """The figures a settled quality check leaves a run to use: for each model part (kind, identity, folder)
    the paths its stored record (the folder's and ``$NLSIM_HOME``'s, :func:`load_quality_check`) has figures
    for."""
    from nlsim.inference.lossy_verdict import has_figures, load_quality_check

    out = []
    for kind, identity, folder in records:
        record = load_quality_check(kind, identity, folder)[0]
        checked = sorted(k for k in (record or {}).get("paths") or {} if has_figures(record, k))
        out.append({"kind": kind, "identity": identity, "folder": str(folder or ""), "checked": checked})
    return out


def lost_figures(
    store: ModelStore, version: Path, marker: str, kinds: tuple[str, ...] = ("encoder", "cross-encoder")
) -> str | None:
    """What a settled quality check (``marker``) relied on, of the model parts the report uses (``kinds``:
    :func:`checked_kinds`), and can no longer be read (a record under
    ``$NLSIM_HOME`` removed or damaged: its paths would silently be lost to every later report), or a path
    of those records, or of the version's own (:func:`own_records`), stopped after a first look under a
    limit that today's limits no longer break (:func:`nlsim.inference.lossy_verdict.stale_paths`: a check
    here reads it again; once it has, the figures kept under ``$NLSIM_HOME`` settle it, the folder's record
    never being rewritten); ``None`` when all of it holds."""
    from nlsim.inference.lossy_verdict import has_figures, load_quality_check, stale_paths

    kept = (store.info(version) or {}).get("quality_check_records") or {}
    if marker not in kept:
        return "the records it was settled with are not listed (an earlier nlsim settled it)"
    relied = [
        (e["kind"], e["identity"], Path(e["folder"]) if e.get("folder") else None, e.get("checked") or [])
        for e in kept[marker]
    ]
    for kind, identity, folder, checked in relied + own_records(version):
        if kind not in kinds:
            continue
        record = load_quality_check(kind, identity, folder)[0]
        stale = stale_paths(record)
        if stale:
            return f"the {kind}'s {', '.join(stale)} stopped after a first look under a limit since loosened"
        missing = [k for k in checked if not has_figures(record, k)]
        if missing:
            gone = ", ".join(missing)
            return f"the {kind}'s figures for {gone} are gone (its record was removed or damaged)"
    return None


def own_records(version: Path) -> list[tuple[str, str, Path, list[str]]]:
    """The quality check records ``version``'s folder holds (its ``quality_check.json`` and the
    reranker's, written when it was trained), as :func:`lost_figures` reads them: kind, identity, folder,
    and no paths it must have (the folder's manifest covers its files)."""
    from nlsim.inference.lossy_verdict import QUALITY_CHECK_JSON

    out = []
    for kind, folder in (("encoder", version), ("cross-encoder", version / "reranker")):
        try:
            identity = json.loads((folder / QUALITY_CHECK_JSON).read_text(encoding="utf-8"))["identity"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # no record, or a damaged one: the manifest check of the folder says so
        out.append((kind, str(identity), folder, []))
    return out


BI_ENCODER_ONLY = ":cosine"
"""The suffix of a :func:`quality_marker` a check of a model's bi-encoder alone was settled for (a report
made with ``--no-rerank``, which leaves its reranker unread): it settles no report that reranks."""


def checked_kinds(cfg: PipelineConfig) -> tuple[str, ...]:
    """The parts of the report's model its quality check covers: the bi-encoder, and the reranker's
    cross-encoder unless the report is made with ``--no-rerank`` (it never runs then).

    Example:
        >>> checked_kinds(PipelineConfig.of(rerank=False))
        ('encoder',)
    """
    return ("encoder",) if cfg.model.rerank is False else ("encoder", "cross-encoder")


def settled(cfg: PipelineConfig, store: ModelStore, current: Path, marker: str) -> bool:
    """Whether the quality check of the report's model ``current`` is settled for ``marker``: a check made
    for it, or, for a report of the bi-encoder alone (:data:`BI_ENCODER_ONLY`), one of the whole model,
    whose figures (of the parts the report uses: :func:`checked_kinds`) can all still be read
    (:func:`lost_figures`; what was lost is said, and the model checked again)."""
    done = checked_for(store, current)
    found = [m for m in dict.fromkeys((marker, marker.removesuffix(BI_ENCODER_ONLY))) if m in done]
    lost = [lost_figures(store, current, m, checked_kinds(cfg)) for m in found]
    if found and None not in lost:
        say(f"quality check of {current.name}: {lost[0]}; checked again")
    return None in lost


def quality_check_stage(
    cfg: PipelineConfig,
    store: ModelStore,
    base: Any,
    validation: pd.DataFrame,
    zero_shot: Any,
    known: Embeddings | None = None,
) -> dict[str, Any]:
    """The quality check of the lossy inference paths (:mod:`nlsim.training.lossy_check`) of the model
    the report uses (the current one, else the zero-shot base), made on the validation pairs once per model
    and machine kind (the CPU's and the thread count, or the GPU's where the model runs on one) and kept under
    ``$NLSIM_HOME/quality-check/``; what the report's ``--precision auto`` may then use. A fine-tuned
    folder carries its own record from ``nlsim finetune``: it is checked again here only for the paths it
    could not check where it was trained (:func:`unchecked_here`: a model trained on an avx2-only CPU, run
    on one with bf16 or VNNI). A check settled before is taken as settled only while the figures it relied
    on can still be read (:func:`lost_figures`: a record under ``$NLSIM_HOME`` removed or torn is made
    again, and said, never read as fewer lossy paths for good). ``known``: the base model's vectors of
    texts it already embedded on an exact path (the baseline's, :class:`Baseline`: torch fp32, or ONNX
    Runtime fp32 where its export was made before, the same numbers to the export check's 1e-4), taken as
    the zero-shot check's fp32 reference instead of embedding them again."""
    from nlsim.encoders.planner import encoder_target
    from nlsim.inference.lossy_verdict import load_quality_check
    from nlsim.rerank.reranker import load_reranker
    from nlsim.rerank.target import cross_encoder_target
    from nlsim.training.lossy_check import (
        check_cross_encoder,
        check_encoder,
        say_record,
        store_checks,
        unchecked_here,
    )

    if cfg.model.precision != "auto":
        return {"skipped": f"--precision {cfg.model.precision}"}
    current = store.current()
    marker = quality_marker(cfg, validation, default_device() if current is not None else base.device)
    if current is not None and cfg.model.rerank is False:  # the bi-encoder alone: settled apart
        marker = f"{marker}{BI_ENCODER_ONLY}"
    if current is not None and settled(cfg, store, current, marker):
        return {"model": current.name, "reused": True}
    encoder = load_encoder(str(current), threads=cfg.recipe.threads) if current is not None else base
    used = current is not None and "cross-encoder" in checked_kinds(cfg)  # --no-rerank: not the reranker's
    reranker = load_reranker(encoder.path, threads=cfg.recipe.threads) if used else None
    cal = load_calibration(current) if current is not None else zero_shot
    records: dict[str, dict[str, Any]] = {}
    found = load_quality_check("encoder", encoder.fingerprint, encoder.path)[0]
    if found is None or unchecked_here(found, encoder_target(encoder), cfg.recipe.threads):
        records["encoder"] = check_encoder(
            encoder,
            validation,
            conversion=cfg.convert,
            threshold=cal.threshold if cal is not None else None,
            threshold_source="the model's calibration" if cal is not None else "",
            threads=cfg.recipe.threads,
            pairs_file=str(cfg.pairs),
            split="validation",
            known=dict(known or {}) if current is None else None,
        )
        say_record(records["encoder"])
    ce = getattr(reranker, "cross_encoder", None)
    if ce is not None:
        found = load_quality_check("cross-encoder", ce.digest(), ce.path)[0]
        if found is None or unchecked_here(found, cross_encoder_target(ce), cfg.recipe.threads):
            records["reranker"] = check_cross_encoder(
                reranker,
                encoder,
                validation,
                conversion=cfg.convert,
                threads=cfg.recipe.threads,
                pairs_file=str(cfg.pairs),
            )
            say_record(records["reranker"])
    written = [str(p) for p in store_checks(records)]
    if current is not None:
        parts: list[tuple[str, str, Path | None]] = [("encoder", encoder.fingerprint, encoder.path)]
        if ce is not None:
            parts.append(("cross-encoder", ce.digest(), ce.path))
        mark_checked(store, current, marker, relied_on(parts))
    return {"model": current.name if current is not None else cfg.base_model, "written": written}


def promote_stage(
    store: ModelStore, candidate: Path, figures: dict[str, Any], incumbent: dict[str, Any], name: str
) -> dict[str, Any]:
    """Promote ``candidate`` when it beats the incumbent (see :mod:`nlsim.chain.promotion`) and no person
    made it not current (:meth:`~nlsim.io.model_store.ModelStore.demoted_by_hand`: a rollback by hand is
    not undone by the next chain that reuses the version); log either way."""
    current = store.current()
    if current is not None and current.name == candidate.name:
        decision = {
            "promoted": False,
            "current": candidate.name,
            "reason": f"{candidate.name} is already current",
        }
    else:
        ok, reason = decide(figures, incumbent, name)
        demoted = store.demoted_by_hand(candidate.name)
        if ok and demoted is not None:  # a person's rollback stands until a person undoes it
            ok = False
            reason = (
                f"{reason}, but was made not current by hand ({demoted.get('command') or 'by hand'} by "
                f"{demoted.get('by')} at {demoted.get('promoted_at') or demoted.get('at')}: "
                f"{demoted.get('reason')}); the gate leaves it so: nlsim models promote {candidate.name} "
                "makes it current again"
            )
        decision = {"promoted": ok, "candidate": candidate.name, "reason": f"{candidate.name} {reason}"}
        if ok:
            store.promote(candidate, decision["reason"])
        else:
            store.log({"decision": "kept, not promoted", **decision})
        decision["current"] = candidate.name if ok else (current.name if current else None)
    say(("promoted: " if decision["promoted"] else "not promoted: ") + decision["reason"])
    return decision


def before_after_table(record: dict[str, Any]) -> str:
    """The before/after table (validation; test as recorded once when each model was trained)."""
    rows = [("zero-shot " + record["baseline"]["model"], record["baseline"])]
    rows.append((f"candidate {record['candidate']['version']}", record["candidate"]["validation"]))
    cur = record.get("current")
    if cur and cur.get("version") != record["candidate"]["version"]:
        rows.append((f"current {cur['version']}", cur["validation"]))
    lines = [
        "| model | scorer | validation Spearman | same-story threshold | precision | recall | F1 [95%] | "
        "F1 cross-validated | test Spearman |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in rows:
        test = m.get("test_spearman")
        cv, ci = m.get("cv_f1"), m.get("cv_f1_ci95")
        f1_text = f"{m.get('f1', 0):.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
        lines.append(
            f"| {name} | {m['scorer']} | {m['spearman']:.2f} | {m['threshold']:.4f} | "
            f"{m.get('precision', 0):.3f} | {m.get('recall', 0):.3f} | {f1_text} | "
            f"{'' if cv is None else f'{cv:.3f}'} | {'' if test is None else f'{test:.2f}'} |"
        )
    return "\n".join(lines)


def _test_spearman(version: Path, rerank: bool = True) -> float | None:
    """The test Spearman recorded when ``version`` was trained: its rerank score's, else (or where the
    report is made with ``--no-rerank``, ``rerank`` false) its bi-encoder's; ``None`` where the record
    holds no such figure, or is not as nlsim writes it (not an object, a figure that is not a number)."""
    try:
        metrics = read_json_object(version / "training.json").get("metrics")
    except (OSError, ValueError):
        return None
    if not isinstance(metrics, dict):  # no figures as nlsim writes them
        return None
    for key in ("reranked/test", "after/test") if rerank else ("after/test",):
        if key in metrics:
            figure = metrics[key].get("spearman") if isinstance(metrics[key], dict) else None
            return figure if isinstance(figure, (int, float)) and not isinstance(figure, bool) else None
    return None


def reusable_lower_layers(cfg: PipelineConfig, base: Any) -> int:
    """How many lower layers of the base model the fine-tuned bi-encoder keeps frozen, when the chain's two
    reports can share the corpus's states after them (:mod:`nlsim.encoders.lower_states`): on a CPU with
    no lossy inference path (there the final report would embed in exact fp32 anyway), with the report's
    inference path left to ``auto``; else 0."""
    model = cfg.dedup_config(CURRENT_MODEL).model
    if model.backend != "auto" or model.precision != "auto" or base.device.type != "cpu":
        return 0
    if lossy_paths_here(base.device)[0]:
        return 0
    from nlsim.training.split_encoder import frozen_layer_count, layer_count

    layers = layer_count(base.model)
    return frozen_layer_count(layers, cfg.bi_encoder.frozen_layers, cfg.recipe.freeze_embeddings)


def lossy_paths_here(device: Any) -> tuple[int, bool]:
    """How many lossy inference paths the fine-tuning's quality check may measure where the model trains
    (the candidates of ``--precision auto`` there, on a CPU before the probe drops those not faster: none
    on a CPU without VNNI or bf16 instructions; one where the CPU's features pick it untimed,
    :func:`nlsim.inference.choice.untimed_path`: more only where it fails its check, which the estimate
    does not foresee), and whether they are built and timed first (on a CPU that probes them)."""
    from nlsim.environment import probe_mode
    from nlsim.inference.choice import untimed_path
    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.onnx import onnxruntime_available
    from nlsim.inference.paths import candidates, is_lossy

    cpu, gpu = cpu_info(), gpu_info(device)
    found, _ = candidates("auto", "auto", cpu, onnx_ok=onnxruntime_available(), gpu=gpu)
    lossy = [path for path in found if is_lossy(path)]
    if untimed_path(lossy, cpu, gpu is not None, probe_mode()):
        return 1, False
    return len(lossy), gpu is None


def incumbent_work(cfg: PipelineConfig, store: ModelStore, validation: pd.DataFrame) -> bool | None:
    """Whether the evaluate stage will score the current model on ``validation`` (its figures for these
    pairs are not in its ``store.json``), with its reranker; ``None``: no current model, or its figures
    are kept."""
    current = store.current()
    if current is None:
        return None
    kept = (store.info(current) or {}).get("validation") or {}
    if figures_key(cfg, validation) in kept:
        return None
    return has_reranker(current) and cfg.model.rerank is not False


def chain_work(
    cfg: PipelineConfig, base: Any, pairs: pd.DataFrame, store: ModelStore | None = None
) -> ChainWork:
    """What this chain's fine-tuning, evaluation and report will compute (:mod:`nlsim.chain.eta`), counted
    from the pairs (``pairs``: read for training, :func:`load_inputs`; counted as training reads them,
    :func:`~nlsim.training.data.as_trained`: converted, a pair given twice as the model reads it once, the
    training subset drawn), the corpus, the settings, where the model trains and (``store``) whether the
    current model has to be scored on these validation pairs (as the evaluation reads them,
    :func:`scored_pairs`)."""
    from nlsim.training.split_encoder import frozen_layer_count, layer_count

    training = cfg.finetune_config(None).for_device(base.device)  # what fine-tuning will use here
    train, validation, test = split_pairs(
        as_trained(pairs, str(cfg.pairs), training.data.conversion), training
    )
    texts = train["text_a"].tolist() + train["text_b"].tolist()
    text_tokens = float(np.mean([len(x) for x in base.token_ids(texts)])) if texts else 0.0
    pair_tokens = 2 * text_tokens - 2  # each text's own start token and the pair's separators
    try:
        items = estimated_rows(cfg.input.corpus_path)
    except ValueError:  # a {date} the corpus cannot take: said where the report reads it
        items = 0
    layers = layer_count(base.model) or 12
    lossy, built = lossy_paths_here(base.device) if training.evaluation.precision_check else (0, False)
    return ChainWork(
        train_pairs=len(train),
        validation_pairs=len(validation),
        text_tokens=text_tokens,
        pair_tokens=pair_tokens,
        epochs=training.bi_encoder.epochs,
        cross_encoder_epochs=training.cross_encoder.epochs,
        batch_size=training.recipe.batch_size,
        layers=layers,
        frozen=frozen_layer_count(
            layers, cfg.bi_encoder.frozen_layers, cfg.recipe.freeze_embeddings
        ),  # what training freezes
        cross_encoder_frozen=frozen_layer_count(
            layers, training.cross_encoder.frozen_layers, cfg.recipe.freeze_embeddings
        ),
        corpus_items=items if cfg.make_report else 0,
        report=cfg.make_report,
        reranker=cfg.cross_encoder.reranker,
        cross_encoder_drops_easy=bool(training.cross_encoder.drop_easy),
        side_by_side=side_by_side.applies(training, base.device),
        test_pairs=len(test),
        lossy_paths=lossy,
        built_paths=built,
        incumbent_reranker=None if store is None else incumbent_work(cfg, store, scored_pairs(cfg, pairs)[1]),
    )


def check_chain_paths(cfg: PipelineConfig) -> None:
    """Refuse, before any work, an output that would overwrite an input or a folder nlsim did not write."""
    check_device(
        cfg.search.use_gpu, cfg.search.index_kind, cfg.search.k, cfg.search.nprobe
    )  # not after the training
    check_inference_here(cfg)  # --precision fp16 on a CPU: not after the training either
    corpus = cfg.input.corpus_path if cfg.make_report else None  # --no-report reads no corpus
    # written as the corpus is read: first
    quarantine = cfg.input.quarantine_path if cfg.make_report else None
    inputs = {"--pairs": cfg.pairs, "--corpus": corpus}
    outputs = {"--out": cfg.report.out if cfg.make_report else None, "--model-store": cfg.model_store}
    # the model store is nlsim's alone: neither the report folder nor the quarantine file goes inside it
    check_outputs_apart(inputs, {**outputs, "--quarantine": quarantine}, folders=("--out", "--model-store"))
    if quarantine and resolved(cfg.model_store) in resolved(quarantine).parents:
        raise ConfigError(
            f"--quarantine {quarantine} lies inside --model-store {cfg.model_store}, which nlsim manages "
            "whole; choose a quarantine file outside it (nothing is written yet)"
        )
    check_outside_stores({"--out": outputs["--out"], "--quarantine": quarantine})  # nor inside another store
    for path in (cfg.pairs, corpus):  # a missing input: exit 1, as every command says it
        if path is not None:
            check_input_file(path)
    if quarantine:  # as nlsim dedup checks it, before the chain's first step reads the corpus
        check_writable(quarantine, what="--quarantine")
        check_quarantine_beside(quarantine, cfg.report.out)
        check_replaceable(quarantine, is_quarantine_file, what="--quarantine", kind="quarantine file")
    check_writable(cfg.model_store, what="--model-store")
    ModelStore(cfg.model_store).check_kind()
    check_claimable(cfg.model_store, "model-store", what="model store")  # claimed by the run
    if cfg.make_report:
        check_writable(cfg.report.out, what="--out")
        check_claimable(cfg.report.out, "report", what="--out")  # claimed by the run's hold of it
        check_report_replaceable(cfg.report.out)
        for name, ours in ((CHAIN_RECORD, is_chain_record), (CHAIN_PAGE, is_chain_page)):
            # written when the chain ends: a user's file under its name is refused now, not overwritten then
            check_replaceable(Path(cfg.report.out) / name, ours, what="--out's", kind="chain record")


def check_inference_here(cfg: PipelineConfig) -> None:
    """Refuse, before any work, a report ``--backend``/``--precision`` no inference path of this machine
    runs (fp16 on a CPU, int8 or ONNX Runtime on a GPU, ONNX Runtime not installed), which the report's
    model stage would refuse only once the chain had trained and promoted a model."""
    model = cfg.dedup_config(CURRENT_MODEL).model
    if not cfg.make_report or (model.backend, model.precision) == ("auto", "auto"):
        return
    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.onnx import onnxruntime_available
    from nlsim.inference.paths import candidates

    gpu = gpu_info(default_device())
    found, left = candidates(
        model.backend, model.precision, cpu_info(), onnx_ok=onnxruntime_available(), gpu=gpu
    )
    if not found:
        asked = " ".join(
            f"--{name} {value}"
            for name, value in (("backend", model.backend), ("precision", model.precision))
            if value != "auto"
        )
        where = "here" if gpu is None else f"on the GPU ({gpu.name})"
        raise ConfigError(
            f"{asked}: no way to run the report's model {where} (nothing is done yet): "
            + "; ".join(f"{path}: {why}" for path, why in left.items() if why)
        )


def load_version(version: Path) -> None:
    """Load a version the chain reuses (its encoder and reranker; every file checked against the manifest
    written when it was saved): its figures come from ``store.json``, so a damaged folder would otherwise
    be evaluated and promoted unread."""
    try:
        load_encoder(str(version), backend="torch")
        load_reranker(version)
    except (StateError, ConfigError) as exc:
        raise StateError(
            f"cannot reuse {version} (trained from the same annotations, base model and settings): {exc}. "
            "Run again with --force-train to train a new version (the damaged one is kept, never promoted)"
        ) from None


def load_inputs(cfg: PipelineConfig) -> pd.DataFrame:
    """The annotated pairs, validated, once every input the chain reads has been read and checked: with a
    report, its corpus (as the report loads it), the pairs it is judged on (ids, split) and the editors'
    verdicts (the store checked against the pair file). A bad row of any of them is refused now, by file,
    row and field, not after the baseline, the training and the registration of a new version; so are
    judged pairs none of which names two items of the corpus (pairs of another corpus, the report's
    judge stage would refuse: :func:`~nlsim.dedup.stages.check_judge_pairs`) and splits fine-tuning cannot
    train on (:func:`check_splits`). The pairs are returned as training reads them
    (:func:`~nlsim.clusters.verdicts.training_pairs`: a training pair
    an editor overruled with its newer score), so that the training fingerprint changes with an overrule."""
    pairs = load_pairs(cfg.pairs)
    if cfg.make_report:
        report = cfg.dedup_config(CURRENT_MODEL)
        corpus = stages.load(report.input)
        scored = stages.judge_pairs(report.report)
        items = corpus_items(corpus)  # the bundled pairs with an own --corpus: refused now, not at the report
        stages.check_judge_pairs(report.report, stages.JudgeScope.batch(report), items, scored)
        read_editors(report.clustering.annotated_pairs, None)
    read = read_for_training(cfg.pairs, pairs)
    check_splits(cfg, read.pairs)
    if read.overruled:
        say(overruled_note(len(read.overruled)))
    return read.pairs


def scored_pairs(cfg: PipelineConfig, pairs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pairs the chain's figures are made of (the zero-shot baseline's, the candidate's and the current
    model's, the quality check's), and their validation pairs: ``pairs`` (read for training,
    :func:`load_inputs`) with a pair given twice in a split as the model reads it (``--convert``) counted
    once (:func:`~nlsim.training.data.once_as_read`), as fine-tuning chooses its checkpoint on them and
    ``nlsim evaluate`` scores them."""
    scored = once_as_read(pairs, str(cfg.pairs), cfg.convert)
    return scored, scored[scored["split"] == "validation"].reset_index(drop=True)


def check_splits(cfg: PipelineConfig, pairs: pd.DataFrame) -> None:
    """Refuse (:class:`~nlsim.errors.InputError`, naming the pair file and the field) the annotated
    ``pairs`` fine-tuning would refuse, read as it reads them (:func:`~nlsim.training.data.as_trained`: one
    pair to the model in two splits or with two scores, converted with ``--convert``) and split
    (:func:`~nlsim.training.data.check_trainable`: a split with no pairs or too few, one score throughout,
    no validation pair on one side of the level; :func:`~nlsim.training.data.check_test_scorable`: test
    pairs too few for a Spearman, or of one score), which the baseline, scored and calibrated on the
    validation pairs first, would otherwise stop on in words that name neither, or score first."""
    training = cfg.finetune_config(None)
    read = as_trained(pairs, str(cfg.pairs), training.data.conversion)
    train, validation, test = split_pairs(read, training)
    check_trainable(train, validation, training, str(cfg.pairs))
    if training.evaluation.eval_test:
        check_test_scorable(test, training.data.test_split, str(cfg.pairs))


def run_pipeline(cfg: PipelineConfig, *, call: Call = direct) -> PipelineResult:
    """Run the chain (see the module docstring), holding the model store's lock and, with a report, the
    report folder's (:func:`~nlsim.report.files.hold_report_folder`: a second run into it is refused now,
    not after the training). A chain that fails before it writes the store leaves no trace of its claim
    of it (:func:`~nlsim.io.ownership.claimed`). A ``{date}`` in ``--corpus`` or ``--quarantine`` with no
    ``--date`` is the day the chain starts, for the whole chain: its checks, its first report and its
    report after a training that ran past midnight read the same day's file."""
    if cfg.input.date is None and cfg.input.dated:
        cfg = cfg.with_(date=cfg.input.run_date().isoformat())
    check_chain_paths(cfg)
    store = ModelStore(cfg.model_store)
    report = hold_report_folder(cfg.report.out) if cfg.make_report else nullcontext()
    claim = claimed(store.root, "model-store", what="model store", also=(GUARD_NAME,))
    with (
        one_run(),
        claim,
        store.lock() as lock,
        report,
        pinned(cfg.pairs, _undone(cfg), verdict_files(cfg.pairs)),
    ):
        if lock.message:
            say(lock.message)
        for done in store.recover():
            say(f"model store: {done}")
        return _chain(cfg, store, call)


def verdict_files(pairs: str) -> list[Path]:
    """The editors' verdict store of the pair file ``pairs`` (present or not) and any store under an earlier
    name: read by the chain's training (an overruled training pair's score) and by its reports (the
    verdicts that act on the clusters), each read checked against the bytes the chain read first
    (:func:`~nlsim.io.pairs.pinned`), as the pair file is."""
    return [store_path(pairs), *earlier_paths(pairs)]


def check_read_first(cfg: PipelineConfig) -> None:
    """Refuse (:class:`~nlsim.errors.StateError`, naming the file) a pair file or verdict store that
    changed since the chain read them first (:func:`~nlsim.io.pairs.check_pinned`)."""
    for path in (cfg.pairs, *verdict_files(cfg.pairs)):
        check_pinned(path)


def read_first(cfg: PipelineConfig) -> dict[str, Any]:
    """What the chain's record keeps of the editors' files as it read them first, and so as it trained,
    evaluated and reported with them: the pair file's SHA-256, and the verdict store's path and SHA-256
    (``None``: there was none)."""
    store = store_path(cfg.pairs)
    return {
        "pairs_sha256": pinned_digest(cfg.pairs),
        "verdict_store": {"path": str(store), "sha256": pinned_digest(store)},
    }


def _undone(cfg: PipelineConfig, promoted: str | None = None) -> str:
    """What a chain stopped by a change of its pair file (:func:`~nlsim.io.pairs.pinned`: the chain reads
    it at the start, and its training and its reports read it again) leaves as it was: before the
    promotion nothing is promoted; after it, the version promoted was trained and evaluated on the pairs
    read at the start. Either way the report folder keeps the report it had."""
    done = (
        "nothing is promoted"
        if promoted is None
        else f"{promoted} was trained and evaluated on the pairs read at the start and is promoted"
    )
    return done + (f", and {cfg.report.out} keeps the report it had" if cfg.make_report else "")


def _chain(cfg: PipelineConfig, store: ModelStore, call: Call) -> PipelineResult:
    with ExitStack() as kept:  # the lower-layer states of the texts embedded, from the baseline to the report
        return _chain_kept(cfg, store, call, kept)


def _chain_kept(cfg: PipelineConfig, store: ModelStore, call: Call, kept: ExitStack) -> PipelineResult:
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    timings: dict[str, float] = {}
    groups = {**dict.fromkeys(TRAINING_STAGES, "finetune"), **dict.fromkeys(STAGES, "report")}
    first_call = timed_call(call, timings, dict.fromkeys([*STAGES, "quality-check"], "first-report"))
    check_call = timed_call(call, timings)  # the report model's check, apart from fine-tuning's own
    call = timed_call(call, timings, groups)

    pairs = call("chain-load", load_inputs, cfg)
    scored, validation = scored_pairs(cfg, pairs)  # a pair given twice as the model reads it: once
    base = call("base-model", load_encoder, cfg.base_model)
    layers = reusable_lower_layers(cfg, base)
    if layers and first_report_due(cfg, store):  # a cold chain
        kept.enter_context(lower_states.kept(base.model, layers))
    baseline = call("baseline", baseline_stage, cfg, store, base, scored)
    first: dict[str, Any] = {}

    def before_training() -> float | None:  # the first report's seconds: the estimate's measure of embedding
        first.update(first_report(cfg, store, first_call, base, validation, baseline.vectors))
        return None if first.get("embeddings_cached") else first.get("seconds")

    known = baseline.for_training(base, cfg.bi_encoder.max_length)
    version, fingerprint, trained = candidate_version(
        cfg, store, call, base, pairs, started, before_training, known
    )
    zero_shot = load_calibration(store.zero_shot_dir())
    candidate, incumbent, name = call(
        "evaluate", evaluate_both, cfg, store, version, validation, baseline.metrics
    )
    check_read_first(cfg)  # trained and evaluated on the files as they are: else nothing is promoted
    decision = call("promote", promote_stage, store, version, candidate, incumbent, name)
    if decision["promoted"]:
        pin_note(cfg.pairs, _undone(cfg, version.name))
    current = store.current()
    record: dict[str, Any] = {
        "started_at": started,
        "pairs": cfg.pairs,
        **read_first(cfg),
        "fingerprint": fingerprint,
        "trained": trained,
        "baseline": baseline.metrics,
        "candidate": {"version": version.name, "path": str(version), "validation": candidate},
        "current": None
        if current is None
        else {
            "version": current.name,
            "validation": candidate if current == version else incumbent,
        },
        "decision": decision,
        "first_report": first or None,
        "timings_s": timings,
    }
    table = before_after_table(record)
    say("before/after on validation (test: recorded once, when each model was trained):\n" + table)
    report = None
    if cfg.make_report:  # the baseline's vectors: the fp32 reference where the report is zero-shot
        record["quality_check"] = check_call(
            "quality-check", quality_check_stage, cfg, store, base, validation, zero_shot, baseline.vectors
        )
        states = lower_states.current()
        reused, taken = (states.reused, states.taken) if states is not None else (0, 0)
        report = run_dedup(report_config(cfg, store), call=call)
        if states is not None and (states.reused > reused or states.taken > taken):
            say(
                f"report: {states.reused - reused:,} text(s) embedded from the states the zero-shot model "
                f"left after the {states.layers} frozen lower layers (only the layers above them run again); "
                f"{states.taken - taken:,} taken as fine-tuning embedded them (its training, validation and "
                "test texts: no layer runs again)"
            )
        judged = report.stats.judge
        if judged is None:  # the chain's report is always run with its pairs (PipelineConfig.dedup_config)
            raise RuntimeError(f"the report {report.report_dir} was not judged against {cfg.pairs}")
        record.update(
            report={"folder": str(report.report_dir), "summary": report.summary}, judge=judged.to_dict()
        )
        atomic_write_text(
            Path(cfg.report.out) / CHAIN_RECORD, json.dumps(record, indent=2, default=str, ensure_ascii=False)
        )
        atomic_write_text(Path(cfg.report.out) / CHAIN_PAGE, chain_page(record, table, describe(judged)))
    return PipelineResult(record=record, report=report, table=table)


def chain_page(record: dict[str, Any], table: str, judgement: str) -> str:
    """The chain's page (``pipeline.md``): what ran (the candidate trained by this run or reused), the
    promotion decision and why, the model the report was made with, the state of the editors' verdict store
    the chain read (its SHA-256: the one it trained and reported with, :func:`verdict_files`), the
    before/after table and the
    report's judgement."""
    decision = record["decision"]
    candidate = record["candidate"]["version"]
    how = (
        "trained by this run"
        if record["trained"]
        else "reused: trained before from the same annotations, base model and settings (not trained again)"
    )
    current = record.get("current")
    model = (
        f"the current model {current['version']}"
        if current
        else f"zero-shot {record['baseline']['model']} (no model promoted yet)"
    )
    verdicts = record["verdict_store"]
    lines = [
        f"- candidate {candidate}: {how}",
        ("- promoted: " if decision["promoted"] else "- not promoted: ") + decision["reason"],
        f"- report made with {model}",
        f"- editors' verdicts: {verdicts['path']} (SHA-256 {verdicts['sha256'][:12]})"
        if verdicts["sha256"]
        else f"- editors' verdicts: none ({verdicts['path']} does not exist)",
    ]
    return f"{CHAIN_PAGE_TITLE}" + "\n".join(lines) + f"\n\n{table}\n\n{judgement}\n"


def first_report(
    cfg: PipelineConfig,
    store: ModelStore,
    call: Call = direct,
    base: Any = None,
    validation: pd.DataFrame | None = None,
    known: Embeddings | None = None,
) -> dict[str, Any]:
    """The zero-shot report, written before training when the store has no promoted model (a cold chain),
    so that editors have a report within minutes instead of after the fine-tuning; the fine-tuned model's
    report replaces it in the same folder when the chain ends (both written as every report is: the files
    published together, ``run.json`` last). Its stages go through ``call`` (the chain's, with their seconds
    counted as ``first-report``, apart from the final report's). On a CPU with AMX-BF16, the zero-shot
    ``base`` model's quality check on ``validation`` comes first (:func:`quality_check_stage`;
    :func:`zero_shot_check_first`), so that the report may embed in bf16, which such a CPU takes without
    a probe; its fp32 reference takes ``known``, the baseline's vectors (:attr:`Baseline.vectors`).
    Returns what it wrote (``embeddings_cached``: its corpus's vectors all came from the embedding cache,
    so its seconds measure no embedding), or nothing when there is no first report to write
    (``--no-report``, ``--no-first-report``, or a promoted model whose report the folder already has)."""
    if not first_report_due(cfg, store):
        return {}
    say(
        f"first report: the zero-shot {cfg.base_model} report (not fine-tuned) is written now, before "
        "training; the fine-tuned model's report replaces it when the chain ends"
    )
    t0 = time.perf_counter()
    if base is not None and validation is not None and zero_shot_check_first(cfg, base):
        zero_shot = load_calibration(store.zero_shot_dir())
        call("quality-check", quality_check_stage, cfg, store, base, validation, zero_shot, known)
    checked = time.perf_counter()
    states = lower_states.current()
    taken = states.taken if states is not None else 0
    report = run_dedup(report_config(cfg, store), call=call)  # an earlier chain's record goes with its report
    seconds = round(time.perf_counter() - checked, 2)  # the report alone: the estimate's measure of one
    ready = time.perf_counter() - t0
    if states is not None and states.taken > taken:
        say(f"first report: {states.taken - taken:,} text(s) taken as the baseline embedded them")
    judged = report.stats.judge
    cached = bool(report.stats.embedding_cache_hit)  # every vector from the cache: no measure of embedding
    page = Path(report.report_dir) / "index.html"
    say(
        f"first report ready in {ready:.0f} s: {page} (zero-shot {cfg.base_model}"
        + (f", judged same-story F1 {judged.f1:.3f}" if judged is not None and judged.f1 is not None else "")
        + "); it will be replaced by the fine-tuned model's report when training ends"
    )
    return {
        "folder": str(report.report_dir),
        "model": f"zero-shot {cfg.base_model}",
        "seconds": seconds,
        "embeddings_cached": cached,
        "quality_check_seconds": round(checked - t0, 2),
        "judge": judged.to_dict() if judged is not None else None,
    }


def report_config(cfg: PipelineConfig, store: ModelStore) -> DedupConfig:
    """The chain's report run, with the store's current model: ``--rerank`` asks for the reranker stored
    with it, and a zero-shot report (no model promoted yet: the first report, or a candidate the gate kept
    out) has none, so it is made without one, and the run says so, instead of stopping the chain."""
    report = cfg.dedup_config(CURRENT_MODEL)
    if report.model.rerank is True and store.current() is None:
        say(
            f"--rerank: no model is promoted in {store.root} yet, and the zero-shot model has no reranker: "
            "this report is made without one"
        )
        return replace(report, model=replace(report.model, rerank=None))
    return report


def first_report_due(cfg: PipelineConfig, store: ModelStore) -> bool:
    """Whether the chain writes a first report (:func:`first_report`): a report is asked for, the first one
    is not turned off, and the store has no promoted model (a cold chain)."""
    return cfg.make_report and cfg.first_report and store.current() is None


def zero_shot_check_first(cfg: PipelineConfig, base: Any) -> bool:
    """Whether a cold chain checks the zero-shot model's lossy paths before its first report: on a CPU
    with AMX-BF16 (:func:`nlsim.inference.choice.untimed_path` names the path it takes untimed; there the
    chain does not share the lower layers' states between its reports, :func:`reusable_lower_layers`), with
    the report's precision left to ``auto``. Measured on a 2-core AMX CPU: the check took 38 s with the
    probe it timed (3 s since such a CPU takes torch-bf16 untimed), the first report's embedding in bf16
    22 s against 66 s in onnx-fp32 (docs/measurements.md). On a CPU with avx512_bf16 and no AMX (a 2-core
    AMD EPYC) the check took 54 s and failed every lossy path (bf16 by one validation pair), and its
    leaving out made the first report 35 s sooner, while a pass could save 17-22 s on the 10,000 titles
    (embedded at 299-326 a second in bf16 against 190-198 in onnx-fp32): not there, nor on a CPU with
    VNNI and no bf16, where only the int8 paths would be checked and nothing measured says they repay
    their builds before a first report. The fine-tuned model's check after training measures them
    there. Nor where the report's backend is ONNX (no torch-bf16), or where probes are off
    (``NLSIM_PROBE=off``: the first candidate in path order, never torch-bf16, would run the report)."""
    from nlsim.environment import probe_mode
    from nlsim.inference.choice import untimed_path
    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.onnx import onnxruntime_available
    from nlsim.inference.paths import candidates

    model = cfg.dedup_config(CURRENT_MODEL).model
    if model.precision != "auto" or base.device.type != "cpu":
        return False
    cpu = cpu_info()
    found, _ = candidates(model.backend, model.precision, cpu, onnx_ok=onnxruntime_available())
    return bool(untimed_path(found, cpu, False, probe_mode()))


def candidate_version(
    cfg: PipelineConfig,
    store: ModelStore,
    call: Call,
    base: Any,
    pairs: pd.DataFrame,
    started: str,
    before_training: Callable[[], float | None] | None = None,
    before: KnownScores | None = None,
) -> tuple[Path, str, bool]:
    """The version the chain evaluates: the one trained before from the same annotations, base model and
    settings (loaded and checked first), else a new one trained now (``before_training`` is called first:
    the chain's first report, returning its seconds, which the estimate of the time left uses; ``before``:
    the zero-shot scores of the baseline, given to fine-tuning). A version trained now keeps the validation
    figures its training measured (:func:`seed_figures`) and counts as quality-checked on this machine
    (:func:`mark_checked`: its training checked its lossy paths). Returns it, its training fingerprint,
    and whether it was trained by this run."""
    settings = training_settings(cfg.finetune_config(None), base.device)
    fingerprint, parts = training_fingerprint(pairs, base.fingerprint, settings)
    version = None if cfg.force_train else store.find(fingerprint)
    unused, auto_here = unused_on(base.device), auto_precision(base.device)
    if (
        version is None and not cfg.force_train
    ):  # the same base model named otherwise (a folder, its hub name), a setting unused here, or the
        # precision --train-precision auto trains in here asked by name
        version = next(
            (
                v
                for v in reversed(store.versions())
                if same_training((store.info(v) or {}).get("parts") or {}, parts, unused, auto_here)
            ),
            None,
        )
        fingerprint = (
            str((store.info(version) or {}).get("fingerprint", fingerprint)) if version else fingerprint
        )
    if version is not None:
        call("reuse-check", load_version, version)
        say(
            f"finetune: skipped, {version.name} was trained from the same annotations, base model and "
            "settings"
        )
        return version, fingerprint, False
    latest = next((v for v in reversed(store.versions()) if store.info(v)), None)
    if latest is not None:
        why = what_changed(store.info(latest).get("parts", {}), parts, unused, auto_here) or ["--force-train"]
        say(f"finetune: training a new version ({'; '.join(why)} since {latest.name})")
    first_seconds = before_training() if before_training is not None else None
    version = store.new_version_dir(fingerprint)
    work = chain_work(cfg, base, pairs, store)
    # the bi-encoder's steps already run when its rate after warm-up is heard
    said_after = sum(timed_steps(work.bi_encoder_steps()))
    settings_now = cfg.finetune_config(str(version))
    result = finetune(
        settings_now,
        call=call,
        on_rate=lambda rate: say(
            describe_eta(work.estimate(rate, bi_steps_done=said_after, first_report_s=first_seconds))
        ),
        before=before,
    )
    info = {"fingerprint": fingerprint, "parts": parts, "created": started, "seconds": result.seconds}
    store.register(version, {**info, "best": result.best})
    _, validation = scored_pairs(cfg, pairs)
    if result.validation_scores is not None:
        seed_figures(cfg, store, version, validation, result.validation_scores)
    if settings_now.evaluation.precision_check:  # its training checked its lossy paths here, moments ago
        mark_checked(store, version, quality_marker(cfg, validation, default_device()))
    return version, fingerprint, True


def evaluate_both(
    cfg: PipelineConfig, store: ModelStore, version: Path, validation: pd.DataFrame, baseline: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The candidate's figures and the incumbent's (the current model, or the zero-shot baseline when none
    was promoted or the candidate is current), each scored as the chain's report uses it (with
    ``--no-rerank``, its bi-encoder alone), and the incumbent's name."""
    zero_shot = load_calibration(store.zero_shot_dir())
    candidate = evaluate_stage(cfg, store, version, validation, zero_shot)
    rerank = cfg.model.rerank is not False
    candidate = {**candidate, "test_spearman": _test_spearman(version, rerank)}
    current = store.current()
    if current is None or current == version:
        return candidate, baseline, f"zero-shot {cfg.base_model}"
    incumbent = evaluate_stage(cfg, store, current, validation, zero_shot)
    incumbent = {**incumbent, "test_spearman": _test_spearman(current, rerank)}
    return candidate, incumbent, f"the current model {current.name}"
