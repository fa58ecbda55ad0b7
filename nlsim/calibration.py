"""Calibrate the duplicate threshold: the cosine that best separates annotated pairs at or above a level.

On validation pairs, a pair is *positive* when its gold score >= ``level`` (default 0.75, "same topic and
entity"; 1.0 = "same story"). Every candidate threshold is tried; the one with the best F1 of
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

from nlsim.atomic import atomic_write_text
from nlsim.errors import ConfigError, StateError

CALIBRATION_JSON = "calibration.json"
LEVELS = {"same-topic-entity": 0.75, "same-story": 1.0}


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


def parse_level(value: str | float) -> float:
    """A level from a number in (0, 1] or a name (``same-topic-entity`` 0.75, ``same-story`` 1.0)."""
    if isinstance(value, str) and value in LEVELS:
        return LEVELS[value]
    try:
        level = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"unknown level {value!r}: a number in (0, 1] or one of {', '.join(LEVELS)}"
        ) from None
    if not 0.0 < level <= 1.0:
        raise ConfigError(f"level must be in (0, 1], got {level}")
    return level


def calibrate_scores(
    cosines: np.ndarray, scores: np.ndarray, level: float = 0.75, **meta: Any
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


def calibrate(
    encoder: Any,
    pairs: pd.DataFrame,
    level: float = 0.75,  # noqa: F821
    conversion: str | None = None,
    **meta: Any,
) -> Calibration:
    """Calibrate ``encoder`` (or a pair scorer) on ``pairs`` (already restricted to one split)."""
    from nlsim.evaluation import pair_similarities

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
        known = {f for f in Calibration.__dataclass_fields__}
        return Calibration(**{k: v for k, v in data.items() if k in known})
    except (ValueError, TypeError) as exc:
        raise StateError(f"{path}: not a valid calibration file ({exc}); rerun `nlsim calibrate`") from exc
