"""The score columns of a pairs frame, normalised once.

A pairs frame holds ``similarity`` (the score the threshold applies to) and, after the rerank stage,
``cosine`` (the bi-encoder's) and ``cross_encoder``. Without a reranker the score is the cosine and there
is no cross-encoder score: :func:`with_scores` fills ``cosine`` from ``similarity`` and ``cross_encoder``
with NaN, every score as float32, so the clusters, the report tables and the page read the same three
columns.

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


def with_scores(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` with its three score columns as float32: ``cosine`` is ``similarity`` where the frame has
    none (no reranker), ``cross_encoder`` NaN where it has none."""
    similarity = _float32(pairs["similarity"])
    cosine = _float32(pairs["cosine"]) if "cosine" in pairs else similarity
    cross = (
        _float32(pairs["cross_encoder"])
        if "cross_encoder" in pairs
        else np.full(len(pairs), np.nan, np.float32)
    )
    return pairs.assign(similarity=similarity, cosine=cosine, cross_encoder=cross)


def _float32(column: pd.Series) -> np.ndarray:
    """A score column as float32 (a missing score, ``None`` or NaN, is NaN)."""
    return column.astype(np.float32).to_numpy()
