"""The guard: a model's stored quality check of its lossy paths, judged against today's limits.

A lossy path stays a candidate only when the model's check passed it (:func:`guard_verdict`: on the
annotated validation pairs, Spearman ×100 at most :data:`MAX_SPEARMAN_LOSS` below fp32, same-story F1 at
the calibrated threshold not lower, and the vectors within :data:`MIN_COSINE` of fp32, or cross-encoder
scores within :data:`MAX_SCORE_DIFF` of fp32's and :data:`MEAN_SCORE_DIFF` on average). The check
(:mod:`nlsim.inference.lossy_check`) is made where pairs are at hand (``nlsim finetune`` when it writes the
model folder, ``nlsim calibrate``, the chain's baseline) and stored: ``MODEL/precision.json``
(``MODEL/reranker/precision.json``) or ``$NLSIM_HOME/precision/``. No record, no lossy path.

Example:
    >>> guard_verdict(None, "onnx-int8")[0], guard_verdict(None, "torch-fp32")[:2]
    (False, (True, 'lossless'))
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from nlsim.inference.paths import is_lossy
from nlsim.io.atomic import atomic_write_text
from nlsim.io.model_cache import nlsim_home

log = logging.getLogger(__name__)

MAX_SPEARMAN_LOSS = 0.5
"""A lossy path may lose at most this much Spearman (×100) against fp32 on the validation pairs."""
MIN_COSINE = 0.98
"""Bi-encoder: the lowest cosine between a lossy path's vector and fp32's, over the validation texts."""
MAX_SCORE_DIFF = 0.15
"""Cross-encoder: the largest difference between a lossy path's score (0-1) and fp32's on validation..."""
MEAN_SCORE_DIFF = 0.03
"""... and the mean difference (the reranker weighs the cross-encoder by 0.5: half of this in its score)."""
SAME_STORY = 1.0
"""The gold level of the guard's F1: a pair is same-story when its score is >= 1.0."""
GUARD_FORMAT = 1
GUARD_JSON = "precision.json"

Verdict = tuple[bool, str, dict[str, Any] | None]
"""Whether a path passed, why (one phrase), and its recorded figures."""


def guard_verdict(record: dict[str, Any] | None, path: str) -> Verdict:
    """Whether a lossy ``path`` passed its quality check in ``record`` (a stored guard), why, and its figures.

    The figures are judged here, against today's limits (not a stored yes/no).

    Example:
        >>> rec = {"kind": "encoder", "reference": {"spearman": 80.0, "f1": 0.5},
        ...        "paths": {"onnx-int8": {"spearman": 79.8, "f1": 0.5, "min_cosine": 0.991}}}
        >>> guard_verdict(rec, "onnx-int8")[:2]
        (True, 'passed: Spearman -0.20, same-story F1 0.500 -> 0.500, lowest cosine 0.9910')
        >>> guard_verdict(rec | {"paths": {"onnx-int8": {"spearman": 79.0, "f1": 0.5, "min_cosine": 0.99}}},
        ...               "onnx-int8")[:2]
        (False, 'failed: Spearman drops 1.00 (limit 0.5)')
    """
    if not is_lossy(path):
        return True, "lossless", None
    if not record:
        return False, "none recorded for this model (nlsim finetune or nlsim calibrate makes one)", None
    entry = (record.get("paths") or {}).get(path)
    if not entry:
        return False, "not checked for this model", None
    if entry.get("error"):
        return False, f"the check could not run it ({entry['error']})", entry
    if entry.get("not_checked"):
        return False, f"not checked ({entry['not_checked']})", entry
    ref = record.get("reference") or {}
    fails = []
    loss = _num(ref.get("spearman")) - _num(entry.get("spearman"))
    if not loss <= MAX_SPEARMAN_LOSS:
        fails.append(f"Spearman drops {loss:.2f} (limit {MAX_SPEARMAN_LOSS})")
    ref_f1, f1 = ref.get("f1"), entry.get("f1")
    if ref_f1 is not None and not _num(f1) >= _num(ref_f1):
        fails.append(f"same-story F1 drops {_num(ref_f1):.3f} -> {_num(f1):.3f}")
    agree = _agreement(record.get("kind"), entry, fails)
    if fails:
        return False, "failed: " + "; ".join(fails), entry
    f1_text = f", same-story F1 {_num(ref_f1):.3f} -> {_num(f1):.3f}" if ref_f1 is not None else ""
    return True, f"passed: Spearman {-loss:+.2f}{f1_text}, {agree}", entry


def _agreement(kind: str | None, entry: dict[str, Any], fails: list[str]) -> str:
    """How close a lossy path's outputs are to fp32's (one phrase); the limits it breaks go to ``fails``."""
    if kind == "cross-encoder":
        diff = _num(entry.get("max_score_diff"), math.inf)
        mean = _num(entry.get("mean_score_diff"), math.inf)
        if not diff <= MAX_SCORE_DIFF:
            fails.append(f"scores differ by up to {diff:.4f} (limit {MAX_SCORE_DIFF})")
        if not mean <= MEAN_SCORE_DIFF:
            fails.append(f"scores differ by {mean:.4f} on average (limit {MEAN_SCORE_DIFF})")
        return f"score difference {mean:.4f} on average, {diff:.4f} at most"
    low = _num(entry.get("min_cosine"))
    if not low >= MIN_COSINE:
        fails.append(f"lowest cosine to fp32 {low:.4f} (floor {MIN_COSINE})")
    return f"lowest cosine {low:.4f}"


def _num(value: Any, default: float = math.nan) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def guard_files(kind: str, identity: str, folder: Path | None) -> list[Path]:
    """Where a guard record may be, first found wins: the model's own folder, then ``$NLSIM_HOME``."""
    prefix = "ce-" if kind == "cross-encoder" else ""
    out = [folder / GUARD_JSON] if folder is not None else []
    return out + [nlsim_home() / "precision" / f"{prefix}{identity[:32]}.json"]


def load_guard(kind: str, identity: str, folder: Path | None = None) -> tuple[dict[str, Any] | None, str]:
    """The stored guard record of a model (``identity``: its fingerprint, or a cross-encoder's digest) and
    where it was found; a record made for other weights is ignored."""
    for path in guard_files(kind, identity, folder):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if record.get("identity") == identity and record.get("format") == GUARD_FORMAT:
            return record, str(path)
        if path.is_file():
            log.info("%s: made for other weights; not used", path)
    return None, ""


def save_guard(record: dict[str, Any], path: Path | None = None) -> Path:
    """Write a guard record (default: ``$NLSIM_HOME/precision/``)."""
    if path is None:
        path = guard_files(record["kind"], record["identity"], None)[-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path
