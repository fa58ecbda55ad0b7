"""Models earn their place: score each model on the validation split, promote only a better one.

A model is scored by what its report would use: the rerank score when it carries a reranker (and the
report is not made with ``--no-rerank``), else the cosine; its **threshold** is its own calibrated one
(the reranker's, else ``calibration.json``; the zero-shot model uses the store's zero-shot calibration).
On the validation pairs of the *current* annotations it gets a Spearman, the same-story precision, recall
and F1 of ``score >= threshold``, and the **cross-validated same-story F1** (``cv_f1``): the validation
pairs cut into folds, a threshold chosen on four fifths and the pairs of the fifth scored with it, pooled
over folds and repeats (:func:`nlsim.evaluation.calibration.cross_validated_cut`), with a 95% bootstrap
interval of the F1.

The gate: a candidate becomes the current model when it is at least as good as the current one on both
Spearman and the cross-validated same-story F1, and better on one of them; with no current model, the
zero-shot baseline is what it must beat. The cross-validated figure does not depend on where one threshold
landed on one set of pairs, so a threshold that happens to sit well on the validation pairs does not
promote a model. Figures recorded before the cross-validated F1 existed are compared on the F1 at the
threshold. Otherwise the candidate is kept in the store, not promoted, and the reason is said.

Example:
    >>> decide({"spearman": 90.0, "cv_f1": 0.80}, {"spearman": 89.0, "cv_f1": 0.80}, "v0001")[1]
    'beats v0001 on validation: Spearman 90.00 >= 89.00 and same-story F1 (cross-validated) 0.800 >= ...'
    >>> decide({"spearman": 91.0, "cv_f1": 0.70}, {"spearman": 89.0, "cv_f1": 0.80}, "v0001")[0]
    False
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.encoders import load_encoder
from nlsim.evaluation.calibration import (
    CV_FOLDS,
    Cuts,
    cross_validated_cut,
    load_calibration,
    threshold_metrics,
)
from nlsim.evaluation.interval import f1_interval
from nlsim.evaluation.metrics import metrics_from_scores, pair_similarities
from nlsim.rerank.reranker import load_reranker


def split_digest(pairs: pd.DataFrame) -> str:
    """SHA-256 of the pairs a score was computed on (ids, texts, scores)."""
    h = hashlib.sha256()
    for r in pairs.sort_values("pair_id").itertuples(index=False):
        h.update(f"{r.pair_id}\x1f{r.text_a}\x1f{r.text_b}\x1f{float(r.score):.6g}\x1e".encode())
    return h.hexdigest()


def score_model(
    model: str | Path,
    validation: pd.DataFrame,
    conversion: str,
    level: float,
    *,
    zero_shot_calibration: Any = None,
    rerank: bool = True,
) -> dict[str, Any]:
    """A model's Spearman and same-story P/R/F1 at its own threshold on ``validation`` (see the module
    doc); ``rerank`` false: its bi-encoder's cosine at its ``calibration.json`` threshold, as a report made
    with ``--no-rerank`` uses it, whether it carries a reranker or not."""
    encoder = load_encoder(str(model))
    reranker = load_reranker(getattr(encoder, "path", None)) if rerank else None
    if reranker is not None and reranker.calibration is not None:
        scorer, threshold, kind = (
            reranker.scorer(encoder),
            float(reranker.calibration["threshold"]),
            "reranker",
        )
    else:
        cal = load_calibration(encoder.path) if encoder.path is not None else None
        cal = cal or zero_shot_calibration
        scorer, kind = encoder, "cosine"
        threshold = float(cal.threshold) if cal is not None else float("nan")
    scores = pair_similarities(scorer, validation, conversion)
    return figures(model, kind, scores, validation, threshold, level)


def figures(
    model: str | Path, kind: str, scores: np.ndarray, validation: pd.DataFrame, threshold: float, level: float
) -> dict[str, Any]:
    """:func:`score_model`'s figures from the model's ``scores`` of the ``validation`` rows (in their order),
    its own ``threshold`` and the report's ``level``; ``kind``: ``"reranker"`` or ``"cosine"``."""
    gold = validation["score"].to_numpy(dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    m = metrics_from_scores(scores, gold)
    at = threshold_metrics(scores, gold, threshold, level) if np.isfinite(threshold) else {"f1": 0.0}
    cv = cross_validated_f1(scores, gold, level)
    return {
        "model": str(model),
        "scorer": kind,
        "spearman": m.spearman,
        "pearson": m.pearson,
        "threshold": round(threshold, 6),
        "level": level,
        **{k: at[k] for k in ("precision", "recall", "f1") if k in at},
        **cv,
        "n": m.n,
        "split_digest": split_digest(validation),
    }


def cross_validated_f1(scores: np.ndarray, gold: np.ndarray, level: float) -> dict[str, Any]:
    """``cv_f1`` (the same-story F1 of a threshold chosen out of fold) of a model's validation scores, and
    ``cv_f1_ci95``: the 95% bootstrap interval of the F1 at the threshold the folds choose on all the pairs
    (the calibration's own threshold, for a model calibrated on these pairs); empty when the pairs are too
    few on one side of the level to cut into folds."""
    pos = np.asarray(gold, dtype=np.float64) >= level - 1e-9
    if min(int(pos.sum()), int((~pos).sum())) < CV_FOLDS:
        return {}
    cuts = Cuts.of(np.asarray(scores, dtype=np.float64))
    best, cv_f1 = cross_validated_cut(cuts, pos)
    ci = f1_interval(np.asarray(scores, dtype=np.float64) >= cuts.thresholds[best], pos)
    return {"cv_f1": round(cv_f1, 4), "cv_f1_ci95": ci}


def gate_figure(figures: dict[str, Any]) -> tuple[float, str]:
    """The same-story figure the gate compares: the cross-validated F1, else (figures recorded before it
    existed) the F1 at the model's threshold."""
    if figures.get("cv_f1") is not None:
        return float(figures["cv_f1"]), "same-story F1 (cross-validated)"
    return float(figures.get("f1") or 0.0), "same-story F1"


def decide(candidate: dict[str, Any], incumbent: dict[str, Any], name: str) -> tuple[bool, str]:
    """Whether ``candidate`` replaces ``incumbent`` (called ``name``), and why (see the module doc)."""
    cs, isp = float(candidate["spearman"]), float(incumbent["spearman"])
    both_cv = candidate.get("cv_f1") is not None and incumbent.get("cv_f1") is not None
    cf, what = gate_figure(candidate if both_cv else {"f1": candidate.get("f1")})
    ifl, _ = gate_figure(incumbent if both_cv else {"f1": incumbent.get("f1")})
    figures = f"Spearman {cs:.2f} {'>=' if cs >= isp else '<'} {isp:.2f} and {what} {cf:.3f} " + (
        f"{'>=' if cf >= ifl else '<'} {ifl:.3f}"
    )
    if cs >= isp and cf >= ifl and (cs > isp or cf > ifl):
        return True, f"beats {name} on validation: {figures}, one of them better"
    if cs == isp and cf == ifl:
        return False, f"no better than {name} on validation: {figures}"
    return False, f"does not beat {name} on validation: {figures}"
