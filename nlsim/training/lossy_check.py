"""The quality check of a model's lossy inference paths, made: each against fp32 on annotated pairs.

For every lossy path worth it where the model runs (on the CPU ``onnx-int8``, ``torch-bf16``,
``torch-int8``; on a GPU ``torch-bf16`` and ``torch-fp16``, checked there; :mod:`nlsim.inference.paths`) the
validation pairs are scored with the path's outputs and with torch fp32's. A bi-encoder's record keeps, per
path (:func:`check_encoder`): Spearman ×100 against the gold scores, the same-story F1 of ``cosine >=
threshold`` (the model's calibrated threshold; gold ``>= 0.875``,
:data:`nlsim.evaluation.levels.SAME_STORY`, as everywhere), and the lowest and mean cosine between each
text's vector and its fp32 vector. A cross-encoder's (:func:`check_cross_encoder`, the bi-encoder's fp32
cosine in both): Spearman ×100 of the rerank score, its same-story F1 at the reranker's calibrated
threshold, and the largest and mean difference of the cross-encoder's scores from fp32's.
:func:`nlsim.inference.lossy_verdict.quality_verdict` judges the figures (what a run reads lives there, in
the inference room; making the check runs both model kinds, so it lives here, above them);
:func:`check_model` checks both of a model and :func:`store_checks` writes the records as
``quality_check.json`` in a model folder or under ``$NLSIM_HOME/quality-check/``, where the run that loads
the model finds them. The figures are :mod:`nlsim.evaluation.figures`' (one rounding everywhere).

Example (the small English model on a handful of pairs):
    >>> import pandas as pd
    >>> from nlsim.encoders import load_encoder
    >>> pairs = pd.DataFrame({"text_a": ["a cat sits", "stocks fall", "rain today", "a dog runs"],
    ...                       "text_b": ["a cat is sitting", "markets drop", "football", "a dog running"],
    ...                       "score": [1.0, 0.75, 0.0, 1.0]})
    >>> rec = check_encoder(load_encoder("paraphrase-MiniLM-L3-v2"), pairs, paths=["torch-bf16"])
    >>> rec["kind"], sorted(rec["paths"]), rec["paths"]["torch-bf16"]["min_cosine"] > 0.99
    ('encoder', ['torch-bf16'], True)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.encoders.planner import encoder_target
from nlsim.errors import ConfigError
from nlsim.evaluation.calibration import calibrate_scores
from nlsim.evaluation.figures import rates_at, spearman
from nlsim.evaluation.levels import SAME_STORY
from nlsim.evaluation.metrics import convert_texts
from nlsim.inference.choice import weigh_lossy
from nlsim.inference.cpu import cpu_info
from nlsim.inference.gpu import gpu_info
from nlsim.inference.lossy_verdict import (
    FIRST_LOOK,
    MAX_SCORE_DIFF,
    MAX_SPEARMAN_LOSS,
    MEAN_SCORE_DIFF,
    MIN_COSINE,
    QUALITY_CHECK_JSON,
    RECORD_FORMAT,
    borrow_checked,
    entry_key,
    home_file,
    item_limit_fails,
    load_quality_check,
    quality_verdict,
    save_quality_check,
    was_tried,
)
from nlsim.inference.paths import LOSSY, split_path
from nlsim.inference.target import Target
from nlsim.progress import say
from nlsim.rerank.cache import PairScoreCache
from nlsim.rerank.target import cross_encoder_target
from nlsim.training.first_look import FirstLook, read_with_first_look


def lossy_paths(paths: Sequence[str] | None = None) -> list[str]:
    """The lossy paths to check: ``paths`` or all, less ONNX ones without onnxruntime."""
    from nlsim.inference.onnx import onnxruntime_available  # deferred: onnxruntime is optional

    chosen = list(paths) if paths is not None else list(LOSSY)
    if not onnxruntime_available():
        chosen = [p for p in chosen if split_path(p)[0] != "onnx"]
    return [p for p in chosen if p in LOSSY]


def score_figures(scores: np.ndarray, gold: np.ndarray, threshold: float | None) -> dict[str, Any]:
    """Spearman ×100 and the same-story precision, recall and F1 of ``score >= threshold`` (no F1 without a
    threshold), as :mod:`nlsim.evaluation.figures` computes and rounds them."""
    out: dict[str, Any] = {"spearman": spearman(scores, gold)}
    if threshold is not None:
        at = rates_at(scores, gold, threshold, SAME_STORY)
        out.update(f1=at.f1, precision=at.precision, recall=at.recall)
    return out


def same_story_threshold(scores: np.ndarray, gold: np.ndarray) -> tuple[float | None, str]:
    """The best-F1 threshold at the same-story level on these scores, or ``None`` (and why) when the pairs
    have no same-story pair (or only such pairs): then the check has no F1 criterion."""
    try:
        return calibrate_scores(scores, gold, level=SAME_STORY).threshold, "calibrated here (same-story)"
    except ConfigError as exc:
        return None, f"no F1 criterion: {exc}"


def limits() -> dict[str, float]:
    return {
        "max_spearman_loss": MAX_SPEARMAN_LOSS,
        "min_cosine": MIN_COSINE,
        "max_score_diff": MAX_SCORE_DIFF,
        "mean_score_diff": MEAN_SCORE_DIFF,
        "f1": "not lower than fp32",  # type: ignore[dict-item]
    }


def record_base(
    kind: str, identity: str, n_pairs: int, threshold: float | None, source: str, **meta: Any
) -> dict:
    """The fields every quality check record has (the paths' figures are added by the caller)."""
    return {
        "format": RECORD_FORMAT,
        "kind": kind,
        "identity": identity,
        **meta,
        "n_pairs": n_pairs,
        "threshold": {
            "value": None if threshold is None else round(float(threshold), 6),
            "source": source,
            "gold_level": SAME_STORY,
        },
        "limits": limits(),
        "cpu": cpu_info().as_dict(),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def check_encoder(
    encoder: Any,
    pairs: pd.DataFrame,
    *,
    conversion: str | None = None,
    threshold: float | None = None,
    threshold_source: str = "",
    paths: Sequence[str] | None = None,
    threads: int | None = None,
    known: dict[str, np.ndarray] | None = None,
    look_first: bool = True,
    **meta: Any,
) -> dict[str, Any]:
    """The quality check record of ``encoder``'s lossy paths on ``pairs`` (``text_a``, ``text_b``, ``score``;
    converted with ``conversion`` first). ``threshold``: the model's calibrated cosine threshold (default:
    calibrated here, on the fp32 cosines, at the same-story level). ``known``: fp32 vectors of texts by
    these weights already computed (fine-tuning's validation pass), taken as the reference instead of
    embedding them again, and completed with those embedded here (:func:`fp32_vectors`). Each path reads a
    fifth of the texts first and stops where they break the cosine floor
    (:mod:`nlsim.training.first_look`; ``look_first=False``: every text, for every path's figures).
    ``meta`` goes into the record (e.g. ``pairs_file``)."""
    target = encoder_target(encoder)
    plan = plan_paths(target, paths, threads)
    ids = dict(model_id=encoder.model_id, conversion=conversion or "none", **meta)
    if plan.nothing_to_compare:
        record = record_base("encoder", encoder.fingerprint, len(pairs), threshold, threshold_source, **ids)
        return unscored(record, target, plan)
    unique, ia, ib, gold = pair_texts(pairs, conversion)
    ref = fp32_vectors(encoder, unique, known)
    cos_ref = pair_cosines(ref, ia, ib)
    if threshold is None:
        threshold, threshold_source = same_story_threshold(cos_ref, gold)
    record = record_base("encoder", encoder.fingerprint, len(pairs), threshold, threshold_source, **ids)
    record["reference"] = {"path": "torch-fp32", **score_figures(cos_ref, gold, threshold)}

    def agreement(rows: np.ndarray, vec: np.ndarray) -> dict[str, Any]:
        agree = (vec * ref[rows]).sum(axis=1)
        return {"min_cosine": round(float(agree.min()), 6), "mean_cosine": round(float(agree.mean()), 6)}

    def measure(runner: Any) -> dict[str, Any]:
        look = read_with_first_look(
            len(unique),
            lambda rows: encoder.encode([unique[i] for i in rows], progress=False, runner=runner),
            lambda rows, vec: bool(item_limit_fails("encoder", agreement(rows, vec))),
            look_first,
        )
        figures = agreement(look.rows, look.outputs)
        if look.stopped:
            return {**figures, FIRST_LOOK: first_look_figures(look, "texts")}
        return {**score_figures(pair_cosines(look.outputs, ia, ib), gold, threshold), **figures}

    return check_lossy_paths(record, target, plan, threads, measure)


@dataclass(frozen=True)
class PathPlan:
    """Which lossy paths a quality check measures (``chosen``, fastest first where the probe timed them),
    those it records as not checked, each with why (``not_checked``), the probe's items per second by path
    (``rates``) and the runners the probe built (``runners``: not built again)."""

    chosen: list[str]
    not_checked: dict[str, str]
    auto: bool = True
    """Chosen by what pays off here (``paths=None``), not asked for by name."""
    rates: dict[str, float] = field(default_factory=dict)
    runners: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    enough: str = ""
    """A path that, once passed, leaves the others unchecked (:attr:`LossyWorth.enough`)."""

    @property
    def nothing_to_compare(self) -> bool:
        """No lossy path to measure, none asked for: the fp32 pass over the pairs would serve nothing."""
        return self.auto and not self.chosen


def plan_paths(target: Target, paths: Sequence[str] | None, threads: int | None) -> PathPlan:
    """The lossy paths to measure for ``target`` (an encoder's or a cross-encoder's): ``paths``, or with
    ``paths=None`` only those that can pay off where the model runs
    (:func:`nlsim.inference.choice.weigh_lossy`), fastest first; the others are recorded as not checked,
    with why, and ``auto`` never takes them."""
    chosen = lossy_paths(paths)
    if paths is not None:
        return PathPlan(chosen, {}, auto=False)
    worth = weigh_lossy(target, threads, keep_runners=True)
    return PathPlan(
        [p for p in worth.keep if p in chosen],
        {p: why for p, why in worth.skipped.items() if p in chosen},
        rates=worth.rates,
        runners=worth.runners,
        enough=worth.enough if worth.enough in chosen else "",
    )


def outranked(path: str, passed: str, rates: dict[str, float], enough: str = "") -> str:
    """Why ``path`` needs no quality check here, or ``""``: the probe timed it no faster than ``passed``,
    a lossy path that passed, so that ``auto`` would never take it on this CPU (unmeasured, it is checked),
    or ``passed`` is the path the CPU's features pick untimed (``enough``,
    :func:`nlsim.inference.choice.untimed_path`).

    >>> outranked("torch-int8", "torch-bf16", {"torch-bf16": 150.0, "torch-int8": 99.0})
    'slower here than torch-bf16, which passed (99 items/s in the probe against 150)'
    >>> outranked("onnx-int8", "torch-bf16", {"torch-bf16": 150.0})
    ''
    >>> outranked("onnx-int8", "torch-bf16", {}, enough="torch-bf16")
    'torch-bf16 passed, and a CPU with AMX-BF16 takes it without timing the others'
    """
    if enough and passed == enough:
        return f"{passed} passed, and a CPU with AMX-BF16 takes it without timing the others"
    rate, best = rates.get(path, 0.0), rates.get(passed, 0.0)
    if not 0 < rate <= best:
        return ""
    return f"slower here than {passed}, which passed ({rate:.0f} items/s in the probe against {best:.0f})"


def unchecked_here(record: dict[str, Any] | None, target: Target, threads: int | None = None) -> list[str]:
    """The lossy paths worth checking where ``target`` runs (:func:`nlsim.inference.choice.weigh_lossy`)
    that ``record`` (a stored record, as :func:`nlsim.inference.lossy_verdict.load_quality_check` reads it)
    holds no figures for: those a check here would add. A record made on an avx2-only CPU leaves bf16 and
    int8 to a CPU that has the instructions; with no record, every path worth checking. A path the probe
    here finds no faster than one the record passed is not among them (:func:`outranked`), nor any other
    once the path a CPU with AMX-BF16 takes untimed passed (``enough``).

    Example:
        >>> from nlsim.encoders import load_encoder
        >>> from nlsim.encoders.planner import encoder_target
        >>> target = encoder_target(load_encoder("paraphrase-MiniLM-L3-v2"))
        >>> unchecked_here({"paths": {}}, target) == weigh_lossy(target).keep
        True
    """
    device = str(target.device)
    worth = weigh_lossy(target, threads)
    passed = [p for p in worth.keep if quality_verdict(record, p, device)[0]]
    # a path tried and failed (its error recorded) counts as checked: trying again would fail again; one
    # the probe finds no faster here than a path that passed would never be taken: it needs no check
    return [
        p
        for p in worth.keep
        if not was_tried(record, entry_key(p, device))
        and not any(outranked(p, q, worth.rates, worth.enough) for q in passed)
    ]


def _record_not_checked(record: dict[str, Any], target: Target, plan: PathPlan) -> None:
    record["paths"] = {}
    gpu = gpu_info(target.device)
    if gpu is not None:
        record["gpu"] = gpu.as_dict()
    for path, why in plan.not_checked.items():
        record["paths"][path] = {"not_checked": why, "passed": False, "verdict": f"not checked ({why})"}


def unscored(record: dict[str, Any], target: Target, plan: PathPlan) -> dict[str, Any]:
    """The record of a check with no lossy path to measure (an avx2-only CPU): each path not checked, with
    why, and no fp32 pass over the pairs, since nothing is compared with it."""
    _record_not_checked(record, target, plan)
    record["reference"] = {"path": "torch-fp32", "not_scored": "no lossy path is checked here"}
    return record


def check_lossy_paths(
    record: dict[str, Any],
    target: Target,
    plan: PathPlan,
    threads: int | None,
    measure: Callable[[Any], dict[str, Any]],
) -> dict[str, Any]:
    """Fill ``record["paths"]``: each path ``plan`` chose, fastest first, built by ``target`` on the
    model's device (or the probe's runner), its figures from ``measure(runner)``, and the verdict, until one
    passes: a chosen path the probe timed no faster than that one is recorded as not checked, with why
    (:func:`outranked`: ``auto`` would never take it here); each path ``plan`` did not choose as not
    checked, with why. A path that cannot be built or run is recorded with its error, and ``auto`` never
    takes it. Figures measured on a GPU are keyed ``path@cuda``
    (:func:`nlsim.inference.lossy_verdict.entry_key`)."""
    _record_not_checked(record, target, plan)
    device = str(target.device)
    entry: dict[str, Any]
    passed: str = ""
    for path in plan.chosen:
        why = outranked(path, passed, plan.rates, plan.enough) if passed and plan.auto else ""
        if why:
            plan.runners.pop(path, None)  # built by the probe, not needed: let it go now
            record["paths"][entry_key(path, device)] = {
                "not_checked": why,
                "passed": False,
                "verdict": f"not checked ({why})",
            }
            continue
        try:
            runner = plan.runners.pop(path, None) or target.build(path, threads)
            entry = measure(runner)
        except Exception as exc:  # noqa: BLE001 - recorded: the path is then never taken by auto
            entry = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            runner = None  # a lossy copy or an ONNX session holds tens to hundreds of MB: let it go now
        record["paths"][entry_key(path, device)] = entry
        ok, why, _ = quality_verdict(record, path, device)
        entry["passed"], entry["verdict"] = ok, why
        if ok and not passed:
            passed = path
    plan.runners.clear()
    return record


def pair_texts(
    pairs: pd.DataFrame, conversion: str | None
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The pairs' distinct texts (converted), the rows of each pair's two texts among them, and the gold
    scores: each text is embedded once."""
    a = convert_texts(pairs["text_a"].tolist(), conversion)
    b = convert_texts(pairs["text_b"].tolist(), conversion)
    unique = list(dict.fromkeys(a + b))
    where = {t: i for i, t in enumerate(unique)}
    ia = np.fromiter((where[t] for t in a), dtype=np.int64, count=len(a))
    ib = np.fromiter((where[t] for t in b), dtype=np.int64, count=len(b))
    return unique, ia, ib, pairs["score"].to_numpy(dtype=np.float64)


def fp32_vectors(encoder: Any, texts: list[str], known: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """The torch fp32 vectors of ``texts`` by ``encoder``: those in ``known`` (text -> vector by the same
    weights, e.g. fine-tuning's validation pass, which gives what :meth:`encode` gives) taken, the others
    embedded and added to ``known``.

    Example:
        >>> from nlsim.encoders import load_encoder
        >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
        >>> known = {"a": np.ones(384, dtype=np.float32)}
        >>> fp32_vectors(enc, ["a", "b"], known)[0, :2], sorted(known)
        (array([1., 1.], dtype=float32), ['a', 'b'])
    """
    known = {} if known is None else known
    todo = list(dict.fromkeys(t for t in texts if t not in known))
    if todo:
        known.update(zip(todo, encoder.encode(todo, progress=False, runner="torch"), strict=True))
    return np.stack([np.asarray(known[t], dtype=np.float32) for t in texts])


def pair_cosines(vectors: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """The cosine of each pair (unit vectors: the dot product of rows ``ia`` and ``ib``)."""
    return np.einsum("ij,ij->i", vectors[ia], vectors[ib]).astype(np.float64)


def describe_record(record: dict[str, Any]) -> list[str]:
    """One line per checked path, for the command line."""
    what = "cross-encoder" if record.get("kind") == "cross-encoder" else "encoder"
    ref = record.get("reference") or {}
    t = record["threshold"]["value"]
    f1 = f", same-story F1 {ref['f1']:.3f} at {t:.4f}" if ref.get("f1") is not None and t is not None else ""
    if ref.get("not_scored"):
        lines = [f"quality check of the {what}: {ref['not_scored']} (no fp32 pass over the pairs)"]
    else:
        lines = [
            f"quality check of the {what} on {record.get('n_pairs')} pairs: fp32 Spearman "
            f"{ref.get('spearman', float('nan')):.2f}{f1}"
        ]
    for key in record.get("paths") or {}:
        path, _, device = key.partition("@")
        lines.append(f"  {key}: {quality_verdict(record, path, device or 'cpu')[1]}")
    return lines


def say_record(record: dict[str, Any]) -> None:
    for line in describe_record(record):
        say(line)


def check_cross_encoder(
    reranker: Any,
    encoder: Any,
    pairs: pd.DataFrame,
    *,
    conversion: str | None = None,
    threshold: float | None = None,
    paths: Sequence[str] | None = None,
    threads: int | None = None,
    known: dict[str, np.ndarray] | None = None,
    look_first: bool = True,
    **meta: Any,
) -> dict[str, Any]:
    """The quality check record of the reranker's cross-encoder paths on ``pairs`` (converted with
    ``conversion``); ``threshold`` defaults to the reranker's calibrated one. The fp32 reference takes the
    cross-encoder's exact scores already in the pair-score cache (:class:`nlsim.rerank.cache.PairScoreCache`:
    fine-tuning leaves its validation pass's there) and reads only the others, keeping them there; the
    bi-encoder's fp32 vectors come from ``known`` where it has them (:func:`fp32_vectors`). Each path reads
    a fifth of the pairs first and stops where they break the largest score difference allowed
    (``look_first``: as :func:`check_encoder`)."""
    ce = reranker.cross_encoder
    target = cross_encoder_target(ce)
    plan = plan_paths(target, paths, threads)
    ids = dict(conversion=conversion or "none", **meta)
    if threshold is None:
        threshold = reranker.threshold
    source = "the reranker's calibration"
    if plan.nothing_to_compare:
        if threshold is None:
            source = "none (no lossy path checked)"
        return unscored(
            record_base("cross-encoder", ce.digest(), len(pairs), threshold, source, **ids), target, plan
        )
    unique, ia, ib, gold = pair_texts(pairs, conversion)
    a, b = [unique[i] for i in ia], [unique[i] for i in ib]
    cos = pair_cosines(fp32_vectors(encoder, unique, known), ia, ib)
    ref_ce = fp32_pair_scores(ce, a, b)
    ref = reranker.pair_scores(cos, ref_ce, a, b)
    if threshold is None:
        threshold, source = same_story_threshold(ref, gold)
    record = record_base("cross-encoder", ce.digest(), len(pairs), threshold, source, **ids)
    record["reference"] = {"path": "torch-fp32", **score_figures(ref, gold, threshold)}

    def agreement(rows: np.ndarray, got: np.ndarray) -> dict[str, Any]:
        diff = np.abs(got - ref_ce[rows])
        return {
            "max_score_diff": round(float(diff.max()), 6),
            "mean_score_diff": round(float(diff.mean()), 6),
        }

    def measure(runner: Any) -> dict[str, Any]:
        look = read_with_first_look(
            len(a),
            lambda rows: ce.predict([a[i] for i in rows], [b[i] for i in rows], runner=runner),
            lambda rows, got: bool(item_limit_fails("cross-encoder", agreement(rows, got))),
            look_first,
        )
        figures = agreement(look.rows, look.outputs)
        if look.stopped:
            return {**figures, FIRST_LOOK: first_look_figures(look, "pairs")}
        return {**score_figures(reranker.pair_scores(cos, look.outputs, a, b), gold, threshold), **figures}

    return check_lossy_paths(record, target, plan, threads, measure)


def first_look_figures(look: FirstLook, unit: str) -> dict[str, Any]:
    """How much of a path's pass a check read before a first look failed it (the entry's ``first_look``)."""
    return {"read": int(len(look.rows)), "of": int(look.of), "unit": unit}


def fp32_pair_scores(ce: Any, a: list[str], b: list[str]) -> np.ndarray:
    """The cross-encoder's exact scores of the pairs: those in its pair-score cache taken, the others read
    with torch fp32 (:meth:`CrossEncoder.predict`) and kept there."""
    return PairScoreCache(None, ce.digest()).scores(a, b, ce.predict, say_hits=False)


def check_model(
    encoder: Any,
    reranker: Any,
    pairs: pd.DataFrame,
    *,
    conversion: str | None = None,
    threshold: float | None = None,
    threshold_source: str = "",
    paths: Sequence[str] | None = None,
    threads: int | None = None,
    known: dict[str, np.ndarray] | None = None,
    **meta: Any,
) -> dict[str, dict[str, Any]]:
    """The quality check records of a model: ``{"encoder": ..., "reranker": ...}`` (the second only with a
    reranker). ``threshold`` is the bi-encoder's calibrated cosine threshold (the reranker has its own).
    ``known``: the bi-encoder's fp32 vectors of texts already computed (:func:`fp32_vectors`); both checks
    share them, and those either check embeds, so that no text is embedded in fp32 twice."""
    known = dict(known or {})
    out = {
        "encoder": check_encoder(
            encoder,
            pairs,
            conversion=conversion,
            threshold=threshold,
            threshold_source=threshold_source,
            paths=paths,
            threads=threads,
            known=known,
            **meta,
        )
    }
    say_record(out["encoder"])
    if reranker is not None:
        out["reranker"] = check_cross_encoder(
            reranker, encoder, pairs, conversion=conversion, paths=paths, threads=threads, known=known, **meta
        )
        say_record(out["reranker"])
    return out


def store_checks(records: dict[str, dict[str, Any]], folder: Path | None = None) -> list[Path]:
    """Write the records: into ``folder`` (a model folder being written: ``quality_check.json`` and
    ``reranker/quality_check.json``), else under ``$NLSIM_HOME/quality-check/``, where a record made on
    another CPU kind may be already: the paths it checked and the new one did not are kept
    (:func:`nlsim.inference.lossy_verdict.borrow_checked`), so that machines sharing one home do not undo
    each other's checks."""
    written = []
    for name, record in records.items():
        path = None
        if folder is not None:
            path = (
                folder / QUALITY_CHECK_JSON if name == "encoder" else folder / "reranker" / QUALITY_CHECK_JSON
            )
        else:
            before, _ = load_quality_check(record["kind"], record["identity"])
            if before is not None:
                record = borrow_checked(record, before, str(home_file(record["kind"], record["identity"])))
        written.append(save_quality_check(record, path))
    return written
