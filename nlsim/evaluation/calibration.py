"""Calibrate the duplicate threshold: the cosine that best separates annotated pairs at or above a level.

On validation pairs, a pair is *positive* when its gold score >= ``level`` (default 1.0, "same story", the
question a duplicate report answers; 0.75 = "same topic and entity"). Every candidate threshold is tried; the
one with the best F1 of
``cosine >= threshold`` against the positives wins (ties: the higher threshold), and the threshold is put
half-way between the lowest cosine it accepts and the next lower one, so it does not sit on a data
point. The result is stored as ``calibration.json`` beside a model, or as a standalone file.

Example:
    >>> import numpy as np
    >>> cos, gold = np.array([0.95, 0.90, 0.85, 0.80]), np.array([1.0, 0.75, 0.5, 0.0])
    >>> cal = calibrate_scores(cos, gold, level=0.75)
    >>> cal.threshold, cal.f1
    (0.875, 1.0)
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.errors import ConfigError, StateError
from nlsim.evaluation.levels import DEFAULT_LEVEL, LEVELS, parse_level  # noqa: F401 - re-exported
from nlsim.io.atomic import atomic_write_text

CALIBRATION_JSON = "calibration.json"


@dataclass
class Calibration:
    """A calibrated cosine threshold and how well it separates the validation pairs."""

    threshold: float
    level: float
    precision: float
    recall: float
    f1: float
    n: int
    n_positive: int
    model: str = ""
    fingerprint: str = ""
    conversion: str = "none"
    split: str = "validation"
    pairs_file: str = ""
    pairs_sha256: str = ""
    created: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for logs: where the threshold comes from."""
        return (
            f"threshold {self.threshold:.4f} calibrated for level >= {self.level} on {self.n} {self.split} "
            f"pairs (P {self.precision:.3f} R {self.recall:.3f} F1 {self.f1:.3f}; "
            f"conversion {self.conversion}"
            f"{'; model ' + self.model if self.model else ''})"
        )


def calibrate_scores(
    cosines: np.ndarray, scores: np.ndarray, level: float = DEFAULT_LEVEL, **meta: Any
) -> Calibration:
    """Best-F1 threshold for ``cosine >= t`` against ``score >= level`` (see the module docstring)."""
    cos = np.asarray(cosines, dtype=np.float64)
    gold = np.asarray(scores, dtype=np.float64) >= level - 1e-9
    if cos.shape != gold.shape or cos.ndim != 1 or len(cos) == 0:
        raise ConfigError("cosines and scores must be non-empty 1-d arrays of one length")
    n_pos = int(gold.sum())
    if n_pos == 0 or n_pos == len(gold):
        raise ConfigError(
            f"level {level}: need pairs both at/above and below it ({n_pos} of {len(gold)} are above)"
        )
    order = np.argsort(-cos, kind="stable")
    c, g = cos[order], gold[order]
    tp = np.cumsum(g)
    fp = np.cumsum(~g)
    # only cut after the last of a run of equal cosines
    last = np.r_[c[1:] != c[:-1], True]
    tp, fp, idx = tp[last], fp[last], np.nonzero(last)[0]
    precision = tp / (tp + fp)
    recall = tp / n_pos
    f1 = np.where(tp > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0.0)
    best = int(np.flatnonzero(f1 >= f1.max() - 1e-12)[0])  # first = highest threshold among ties
    i = idx[best]
    below = c[i + 1] if i + 1 < len(c) else c[i] - 1e-3
    threshold = float((c[i] + below) / 2)
    return Calibration(
        threshold=round(threshold, 6),
        level=float(level),
        precision=round(float(precision[best]), 4),
        recall=round(float(recall[best]), 4),
        f1=round(float(f1[best]), 4),
        n=int(len(cos)),
        n_positive=n_pos,
        **meta,
    )


def threshold_metrics(
    scores: np.ndarray, gold: np.ndarray, threshold: float, level: float
) -> dict[str, float]:
    """Precision, recall and F1 of ``score >= threshold`` against ``gold >= level`` (a threshold fixed
    beforehand, e.g. a model's stored calibration, applied to other pairs).

    Example:
        >>> threshold_metrics(np.array([0.9, 0.8, 0.7]), np.array([1.0, 0.5, 1.0]), 0.75, 1.0)
        {'precision': 0.5, 'recall': 0.5, 'f1': 0.5, 'n': 3, 'n_positive': 2}
    """
    pred = np.asarray(scores, dtype=np.float64) >= threshold
    pos = np.asarray(gold, dtype=np.float64) >= level - 1e-9
    tp = int((pred & pos).sum())
    precision = tp / int(pred.sum()) if pred.any() else 0.0
    recall = tp / int(pos.sum()) if pos.any() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "n": int(len(pred)),
        "n_positive": int(pos.sum()),
    }


def calibrate(
    encoder: Any,
    pairs: pd.DataFrame,
    level: float = DEFAULT_LEVEL,
    conversion: str | None = None,
    **meta: Any,
) -> Calibration:
    """Calibrate ``encoder`` (or a pair scorer) on ``pairs`` (already restricted to one split)."""
    from nlsim.evaluation.metrics import pair_similarities  # deferred: reading a calibration needs no torch

    cos = pair_similarities(encoder, pairs, conversion)
    meta.setdefault("model", str(getattr(encoder, "model_id", "") or getattr(encoder, "name", "")))
    if hasattr(encoder, "fingerprint"):
        meta.setdefault("fingerprint", encoder.fingerprint)
    return calibrate_scores(cos, pairs["score"].to_numpy(), level, conversion=conversion or "none", **meta)


def save_calibration(cal: Calibration, path: str | Path) -> Path:
    """Write ``cal`` as JSON to ``path``, or to ``path/calibration.json`` when ``path`` is a folder."""
    path = Path(path)
    if path.is_dir():
        path = path / CALIBRATION_JSON
    atomic_write_text(path, json.dumps(cal.as_dict(), indent=2, ensure_ascii=False) + "\n")
    return path


def load_calibration(model_path_or_file: str | Path | None) -> Calibration | None:
    """The calibration stored in a model folder (``calibration.json``) or in a standalone JSON file.

    Returns ``None`` when there is none (a registry name, a folder without the file); raises
    ``StateError`` for a file that exists but cannot be read.

    Example:
        >>> load_calibration("multilingual-e5-small") is None
        True
    """
    if model_path_or_file is None:
        return None
    path = Path(model_path_or_file)
    if path.is_dir():
        path = path / CALIBRATION_JSON
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError(f"a JSON object is expected, not {type(data).__name__}")
        known = {f for f in Calibration.__dataclass_fields__}
        cal = Calibration(**{k: v for k, v in data.items() if k in known})
    except (ValueError, TypeError) as exc:
        raise StateError(f"{path}: not a valid calibration file ({exc}); rerun `nlsim calibrate`") from exc
    check_threshold(cal.threshold, f"{path}: threshold", high=1.0)
    if not isinstance(cal.level, (int, float)) or not 0.0 < float(cal.level) <= 1.0:
        raise StateError(f"{path}: level {cal.level!r} is not in (0, 1]; rerun `nlsim calibrate`")
    return cal


def check_threshold(value: Any, what: str, *, low: float = -1.0, high: float = 1.0) -> float:
    """``value`` as a float when it is a finite number in ``[low, high]``; else a :class:`StateError`.

    Example:
        >>> check_threshold(float("nan"), "calibration.json: threshold")
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: calibration.json: threshold nan is not a number in [-1, 1]; recalibrate ...
    """
    try:
        t = float(value)
    except (TypeError, ValueError):
        t = float("nan")
    if not (np.isfinite(t) and low <= t <= high):
        raise StateError(
            f"{what} {value!r} is not a number in [{low:g}, {high:g}]; recalibrate (nlsim calibrate)"
        )
    return t
