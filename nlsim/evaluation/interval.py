"""The 95% interval of a same-story F1: percentiles of the F1 over bootstrap resamples of the judged pairs.

With a few dozen same-story pairs one or two of them move an F1 by several points; the interval says how
far. Used by the calibration (the F1 at the chosen threshold), the promotion gate (the cross-validated F1)
and ``nlsim judge`` (the report's F1).

Example:
    >>> import numpy as np
    >>> lo, hi = f1_interval(np.array([True] * 8 + [False] * 8), np.array([True, False] * 8))
    >>> lo < 0.5 < hi  # F1 0.5 on these 16 pairs, give or take a lot
    True
"""

from __future__ import annotations

import numpy as np

BOOTSTRAP = 1000
"""Resamples drawn."""


def f1_interval(predicted: np.ndarray, positive: np.ndarray, seed: int = 0) -> list[float] | None:
    """``[low, high]``: the 2.5th and 97.5th percentiles of the F1 of ``predicted`` against ``positive``
    (boolean arrays of one length) over :data:`BOOTSTRAP` resamples; ``None`` without a pair."""
    predicted = np.asarray(predicted, dtype=bool)
    positive = np.asarray(positive, dtype=bool)
    n = len(predicted)
    if n == 0:
        return None
    idx = np.random.default_rng(seed).integers(0, n, size=(BOOTSTRAP, n))
    tp = (predicted & positive)[idx].sum(axis=1)
    denom = predicted[idx].sum(axis=1) + positive[idx].sum(axis=1)
    f1 = np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)
    return [round(float(np.percentile(f1, 2.5)), 4), round(float(np.percentile(f1, 97.5)), 4)]
