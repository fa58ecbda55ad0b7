"""The 95% interval of a same-story F1: percentiles of the F1 over bootstrap resamples of the judged pairs.

With a few dozen same-story pairs one or two of them move an F1 by several points; the interval says how
far. Used by the calibration (the F1 at the chosen threshold), the promotion gate (the cross-validated F1)
and ``nlsim judge`` (the report's F1).

A resample may hold no predicted pair (the report groups none of the pairs drawn) or no positive one. Its
F1 is then what the figure it stands for says of such pairs: the calibration and the gate count an F1
with nothing predicted as 0 (:func:`nlsim.evaluation.figures.rates_at`), and so does
:func:`f1_interval`; ``nlsim judge`` calls it undefined, never 0, and :func:`defined_f1_interval` leaves
such a resample out, giving the interval over the others and how many it left out (counted as 0, the
resamples where the report groups no drawn pair would pull the interval's low end to 0 for a figure the
judge itself never gives as 0).

Example:
    >>> import numpy as np
    >>> lo, hi = f1_interval(np.array([True] * 8 + [False] * 8), np.array([True, False] * 8))
    >>> lo < 0.5 < hi  # F1 0.5 on these 16 pairs, give or take a lot
    True
    >>> one = np.array([True] + [False] * 19)  # one grouped pair of 20, 3 same-story pairs
    >>> f1_interval(one, np.arange(20) < 3)[0], defined_f1_interval(one, np.arange(20) < 3).left_out
    (0.0, 339)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP = 1000
"""Resamples drawn."""


def _draws(
    predicted: np.ndarray, positive: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per resample (:data:`BOOTSTRAP` of them, drawn with ``seed``): true positives, predicted, positives."""
    n = len(predicted)
    idx = np.random.default_rng(seed).integers(0, n, size=(BOOTSTRAP, n))
    return (predicted & positive)[idx].sum(axis=1), predicted[idx].sum(axis=1), positive[idx].sum(axis=1)


def _percentiles(f1: np.ndarray) -> list[float]:
    return [round(float(np.percentile(f1, 2.5)), 4), round(float(np.percentile(f1, 97.5)), 4)]


def f1_interval(predicted: np.ndarray, positive: np.ndarray, seed: int = 0) -> list[float] | None:
    """``[low, high]``: the 2.5th and 97.5th percentiles of the F1 of ``predicted`` against ``positive``
    (boolean arrays of one length) over :data:`BOOTSTRAP` resamples, a resample with nothing predicted or
    no positive counting as F1 0; ``None`` without a pair."""
    predicted = np.asarray(predicted, dtype=bool)
    positive = np.asarray(positive, dtype=bool)
    if len(predicted) == 0:
        return None
    tp, pred, pos = _draws(predicted, positive, seed)
    return _percentiles(np.where(pred + pos > 0, 2 * tp / np.maximum(pred + pos, 1), 0.0))


@dataclass(frozen=True)
class DefinedInterval:
    """An F1's interval over the resamples where the F1 is defined (``ci``: ``[low, high]``, ``None`` when
    none is), and how many of the :data:`BOOTSTRAP` resamples were left out (nothing predicted, or no
    positive)."""

    ci: list[float] | None
    left_out: int


def defined_f1_interval(predicted: np.ndarray, positive: np.ndarray, seed: int = 0) -> DefinedInterval:
    """The interval of :func:`f1_interval` for an F1 that is undefined (``None``, never 0) when nothing is
    predicted or nothing is positive: the resamples where it is undefined are left out and counted."""
    predicted = np.asarray(predicted, dtype=bool)
    positive = np.asarray(positive, dtype=bool)
    if len(predicted) == 0:
        return DefinedInterval(None, 0)
    tp, pred, pos = _draws(predicted, positive, seed)
    defined = (pred > 0) & (pos > 0)
    left_out = int(BOOTSTRAP - defined.sum())
    if not defined.any():
        return DefinedInterval(None, left_out)
    return DefinedInterval(_percentiles(2 * tp[defined] / (pred[defined] + pos[defined])), left_out)
