"""The quality check of the reranker's cross-encoder paths, and the checks of a whole model, stored.

:func:`check_cross_encoder` scores the validation pairs with each lossy path of the cross-encoder and with
torch fp32 (the bi-encoder's cosine from fp32 in both), and keeps per path: Spearman ×100 of the rerank
score, its same-story F1 at the reranker's calibrated threshold, and the largest and mean difference of
the cross-encoder's scores from fp32's (:data:`nlsim.encoders.precision.MAX_SCORE_DIFF`).
:func:`check_model` runs the bi-encoder's check (:mod:`nlsim.evaluation.precision_check`) and, when there is
a reranker, this one; :func:`store_checks` writes the records where runs look for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.encoders.precision import GUARD_JSON, save_guard
from nlsim.evaluation.precision_check import (
    check_encoder,
    check_paths,
    pair_cosines,
    pair_texts,
    record_base,
    same_story_threshold,
    say_record,
    score_figures,
)
from nlsim.rerank.inference import CrossEncoderTarget


def check_cross_encoder(
    reranker: Any,
    encoder: Any,
    pairs: pd.DataFrame,
    *,
    conversion: str | None = None,
    threshold: float | None = None,
    paths: Sequence[str] | None = None,
    threads: int | None = None,
    **meta: Any,
) -> dict[str, Any]:
    """The guard record of the reranker's cross-encoder paths on ``pairs`` (converted with
    ``conversion``); ``threshold`` defaults to the reranker's calibrated one."""
    ce = reranker.cross_encoder
    unique, ia, ib, gold = pair_texts(pairs, conversion)
    a, b = [unique[i] for i in ia], [unique[i] for i in ib]
    cos = pair_cosines(encoder.encode(unique, progress=False, runner="torch"), ia, ib)
    ref_ce = ce.predict(a, b)
    ref = reranker.combine(cos, ref_ce)
    source = "the reranker's calibration"
    if threshold is None:
        threshold = reranker.threshold
    if threshold is None:
        threshold, source = same_story_threshold(ref, gold)
    record = record_base(
        "cross-encoder",
        ce.digest(),
        len(pairs),
        threshold,
        source,
        conversion=conversion or "none",
        **meta,
    )
    record["reference"] = {"path": "torch-fp32", **score_figures(ref, gold, threshold)}

    def measure(runner: Any) -> dict[str, Any]:
        got = ce.predict(a, b, runner=runner)
        diff = np.abs(got - ref_ce)
        return {
            **score_figures(reranker.combine(cos, got), gold, threshold),
            "max_score_diff": round(float(diff.max()), 6),
            "mean_score_diff": round(float(diff.mean()), 6),
        }

    return check_paths(record, CrossEncoderTarget(ce), paths, threads, measure)


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
    **meta: Any,
) -> dict[str, dict[str, Any]]:
    """The guard records of a model: ``{"encoder": ..., "reranker": ...}`` (the second only with a
    reranker). ``threshold`` is the bi-encoder's calibrated cosine threshold (the reranker has its own)."""
    out = {
        "encoder": check_encoder(
            encoder,
            pairs,
            conversion=conversion,
            threshold=threshold,
            threshold_source=threshold_source,
            paths=paths,
            threads=threads,
            **meta,
        )
    }
    say_record(out["encoder"])
    if reranker is not None:
        out["reranker"] = check_cross_encoder(
            reranker, encoder, pairs, conversion=conversion, paths=paths, threads=threads, **meta
        )
        say_record(out["reranker"])
    return out


def store_checks(records: dict[str, dict[str, Any]], folder: Path | None = None) -> list[Path]:
    """Write the records: into ``folder`` (a model folder being written: ``precision.json`` and
    ``reranker/precision.json``), else under ``$NLSIM_HOME/precision/``."""
    written = []
    for name, record in records.items():
        path = None
        if folder is not None:
            path = folder / GUARD_JSON if name == "encoder" else folder / "reranker" / GUARD_JSON
        written.append(save_guard(record, path))
    return written
