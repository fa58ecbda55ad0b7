"""Models earn their place: score each model on the validation split, promote only a better one.

A model is scored by what its report would use: the rerank score when it carries a reranker, else the
cosine; its **threshold** is its own calibrated one (the reranker's, else ``calibration.json``; the zero-shot
model uses the store's zero-shot calibration). On the validation pairs of the *current* annotations it gets
a Spearman and the same-story precision, recall and F1 of ``score >= threshold``.

The gate: a candidate becomes the current model when it is at least as good as the current one on both
(Spearman and same-story F1) and better on one of them; with no current model, the zero-shot baseline is
what it must beat. Otherwise it is kept in the store, not promoted, and the reason is said.

Example:
    >>> decide({"spearman": 90.0, "f1": 0.80}, {"spearman": 89.0, "f1": 0.80}, "v0001")
    (True, 'beats v0001 on validation: Spearman 90.00 >= 89.00 and same-story F1 0.800 >= 0.800, one ...')
    >>> decide({"spearman": 91.0, "f1": 0.70}, {"spearman": 89.0, "f1": 0.80}, "v0001")[0]
    False
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.encoders import load_encoder
from nlsim.evaluation.calibration import load_calibration, threshold_metrics
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
) -> dict[str, Any]:
    """A model's Spearman and same-story P/R/F1 at its own threshold on ``validation`` (see the module "
    "doc)."""
    encoder = load_encoder(str(model))
    reranker = load_reranker(getattr(encoder, "path", None))
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
    gold = validation["score"].to_numpy(dtype=np.float64)
    m = metrics_from_scores(scores, gold)
    at = threshold_metrics(scores, gold, threshold, level) if np.isfinite(threshold) else {"f1": 0.0}
    return {
        "model": str(model),
        "scorer": kind,
        "spearman": m.spearman,
        "pearson": m.pearson,
        "threshold": round(threshold, 6),
        "level": level,
        **{k: at[k] for k in ("precision", "recall", "f1") if k in at},
        "n": m.n,
        "split_digest": split_digest(validation),
    }


def decide(candidate: dict[str, Any], incumbent: dict[str, Any], name: str) -> tuple[bool, str]:
    """Whether ``candidate`` replaces ``incumbent`` (called ``name``), and why (see the module doc)."""
    cs, isp = float(candidate["spearman"]), float(incumbent["spearman"])
    cf, ifl = float(candidate.get("f1", 0.0)), float(incumbent.get("f1", 0.0))
    figures = f"Spearman {cs:.2f} {'>=' if cs >= isp else '<'} {isp:.2f} and same-story F1 {cf:.3f} " + (
        f"{'>=' if cf >= ifl else '<'} {ifl:.3f}"
    )
    if cs >= isp and cf >= ifl and (cs > isp or cf > ifl):
        return True, f"beats {name} on validation: {figures}, one of them better"
    if cs == isp and cf == ifl:
        return False, f"no better than {name} on validation: {figures}"
    return False, f"does not beat {name} on validation: {figures}"
