"""The evaluation figures, computed and rounded in one place: Spearman ×100, and precision, recall and F1.

Every figure nlsim reports of a model on graded pairs comes from here: the metrics of ``nlsim evaluate``
(:mod:`nlsim.evaluation.metrics`), the calibration and any fixed threshold applied to other pairs
(:mod:`nlsim.evaluation.calibration`), a report judged at the cluster level
(:mod:`nlsim.evaluation.judge`), the cross-encoder's validation Spearman per epoch
(:mod:`nlsim.training.cross_encoder`) and the quality check of the lossy inference paths
(:mod:`nlsim.training.lossy_check`). A correlation is shown with :data:`CORRELATION_DIGITS` decimals,
a precision, recall or F1 with :data:`RATE_DIGITS`.

Example:
    >>> import numpy as np
    >>> spearman(np.array([0.1, 0.5, 0.9, 0.2]), np.array([0.0, 0.5, 1.0, 0.25]))
    100.0
    >>> rates(tp=3, predicted=4, positives=6)
    Rates(precision=0.75, recall=0.5, f1=0.6)
    >>> rates(tp=0, predicted=0, positives=6).precision, rates(0, 0, 6, undefined=None).precision
    (0.0, None)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

CORRELATION_DIGITS = 2
"""Decimals of a Spearman or Pearson ×100 (a hundredth of a point: below what a seed moves)."""
RATE_DIGITS = 4
"""Decimals of a precision, recall or F1."""


def split_pairs(split: str | None, noun: str = "pairs") -> str:
    """Scored pairs of a split in words: ``validation pairs``, or ``pairs of every split`` for ``all``
    (``None``), never "all pairs" after a count.

    >>> split_pairs("validation"), split_pairs("all"), split_pairs(None, "rows")
    ('validation pairs', 'pairs of every split', 'rows of every split')
    """
    return f"{noun} of every split" if split in (None, "all") else f"{split} {noun}"


def spearman_raw(scores: np.ndarray, gold: np.ndarray) -> float:
    """Spearman ×100 of ``scores`` against ``gold``, unrounded (for comparisons and selection); NaN when it
    is undefined: fewer than 2 pairs, or either side constant."""
    scores = np.asarray(scores, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    if len(gold) < 2 or np.ptp(scores) == 0 or np.ptp(gold) == 0:
        return math.nan
    return float(stats.spearmanr(scores, gold).statistic) * 100


def spearman(scores: np.ndarray, gold: np.ndarray) -> float:
    """Spearman ×100, rounded to :data:`CORRELATION_DIGITS` (NaN when undefined)."""
    return round(spearman_raw(scores, gold), CORRELATION_DIGITS)


def pearson(scores: np.ndarray, gold: np.ndarray) -> float:
    """Pearson ×100, rounded to :data:`CORRELATION_DIGITS` (NaN when undefined, as for :func:`spearman`)."""
    scores = np.asarray(scores, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    if len(gold) < 2 or np.ptp(scores) == 0 or np.ptp(gold) == 0:
        return math.nan
    return round(float(stats.pearsonr(scores, gold).statistic) * 100, CORRELATION_DIGITS)


@dataclass(frozen=True)
class Rates:
    """Precision, recall and F1 (rounded to :data:`RATE_DIGITS`); a figure with nothing to divide by is
    the ``undefined`` value its caller asked for (0.0, or ``None`` where undefined must not read as 0)."""

    precision: float | None
    recall: float | None
    f1: float | None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def rates(tp: int, predicted: int, positives: int, undefined: float | None = 0.0) -> Rates:
    """:class:`Rates` from counts: ``tp`` true positives among ``predicted`` positive predictions, against
    ``positives`` gold positives."""
    precision = tp / predicted if predicted else None
    recall = tp / positives if positives else None
    f1 = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    elif undefined is not None:
        f1 = 2 * tp / max(predicted + positives, 1)

    def rounded(value: float | None) -> float | None:
        return undefined if value is None else round(value, RATE_DIGITS)

    return Rates(rounded(precision), rounded(recall), rounded(f1))


def rates_at(scores: np.ndarray, gold: np.ndarray, threshold: float, level: float) -> Rates:
    """:func:`rates` of ``score >= threshold`` against ``gold >= level`` (undefined figures 0.0)."""
    pred = np.asarray(scores, dtype=np.float64) >= threshold
    pos = np.asarray(gold, dtype=np.float64) >= level - 1e-9
    return rates(int((pred & pos).sum()), int(pred.sum()), int(pos.sum()))
