"""The score columns of a pairs frame, normalised once.

A pairs frame holds ``similarity`` (the score the threshold applies to) and, after the rerank stage,
``cosine`` (the bi-encoder's) and ``cross_encoder``. Without a reranker the score is the cosine and there
is no cross-encoder score: :func:`with_scores` gives every score column :mod:`nlsim.io.columns` declares
(``SCORES``) as float32, ``cosine`` from ``similarity`` where the frame has none (:data:`SAME_AS`) and any
other score the frame lacks as NaN, so the clusters, the report tables and the page read the same columns.

Example:
    >>> import pandas as pd
    >>> scored = with_scores(pd.DataFrame({"a": [0], "b": [1], "similarity": [0.9]}))
    >>> list(scored.columns), float(scored["cosine"].iloc[0]) == float(scored["similarity"].iloc[0])
    (['a', 'b', 'similarity', 'cosine', 'cross_encoder'], True)
    >>> bool(scored["cross_encoder"].isna().all())
    True
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nlsim.io import columns

SCORES = tuple(c.name for c in columns.SCORES)
PAIR_FIELDS = [(c.name, c.type) for c in (*columns.PAIR_ENDS, *columns.SCORES)]
"""The leading columns of every pairs table (``pairs.parquet``, ``near_misses.parquet``): the two items and
the three scores (declared in :mod:`nlsim.io.columns`)."""
SIDE_FIELDS = [(c.name, c.type) for c in columns.sides()]
"""The trailing columns of every pairs table: what an editor reads of each item (the ``items`` columns
marked ``shown``, :func:`nlsim.io.columns.sides`)."""


SAME_AS = {"cosine": "similarity"}
"""A score a frame without it takes from another: without a reranker the score is the cosine."""


def with_scores(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` with every declared score column as float32: a score the frame lacks is the one
    :data:`SAME_AS` names (``cosine``: ``similarity``), else NaN (``cross_encoder`` without a reranker)."""
    scores: dict[str, np.ndarray] = {}
    for c in columns.SCORES:
        if c.name in pairs:
            scores[c.name] = _float32(pairs[c.name])
        elif c.name in SAME_AS:
            scores[c.name] = scores[SAME_AS[c.name]]
        else:
            scores[c.name] = np.full(len(pairs), np.nan, np.float32)
    return pairs.assign(**scores)


def _float32(column: pd.Series) -> np.ndarray:
    """A score column as float32 (a missing score, ``None`` or NaN, is NaN)."""
    return column.astype(np.float32).to_numpy()
