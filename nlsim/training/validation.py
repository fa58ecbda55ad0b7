"""Score and calibrate a trained model on the run's own splits (validation, and test when scored).

Example:
    >>> import pandas as pd
    >>> from nlsim.training.data import PreparedPairs
    >>> pairs = pd.DataFrame({"text_a": ["a", "b", "c"], "text_b": ["a", "x", "y"], "score": [1.0, 0.0, 0.5]})
    >>> same = lambda a, b: [1.0 if x == y else 0.0 for x, y in zip(a, b)]
    >>> data = PreparedPairs(pairs, pairs, pairs.iloc[:0], {})
    >>> evaluate_splits(same, data, "after")["after/validation"]["n"]
    3
"""

from __future__ import annotations

from typing import Any

from nlsim.evaluation.calibration import calibrate
from nlsim.evaluation.metrics import evaluate
from nlsim.training.config import FinetuneConfig
from nlsim.training.data import PreparedPairs


def evaluate_splits(encoder: Any, data: PreparedPairs, when: str) -> dict[str, dict[str, Any]]:
    """Metrics on validation (and test, when present), keyed ``"{when}/{split}"``.

    ``encoder`` is an encoder or a pair scorer (a reranker's :meth:`~nlsim.rerank.Reranker.scorer`).
    """
    out = {f"{when}/validation": evaluate(encoder, data.validation, None).as_dict()}
    if len(data.test):
        out[f"{when}/test"] = evaluate(encoder, data.test, None).as_dict()
    return out


def calibrate_encoder(encoder: Any, data: PreparedPairs, cfg: FinetuneConfig, **meta: Any) -> Any:
    """Calibrate the threshold on the (converted) validation pairs (``None`` without a level).

    ``encoder`` is an encoder or a pair scorer; ``meta`` goes to the calibration (e.g. ``model=``).
    """
    if cfg.calibrate_level is None:
        return None
    cal = calibrate(
        encoder,
        data.validation,
        level=cfg.calibrate_level,
        conversion=None,
        split=cfg.val_split,
        pairs_file=str(cfg.pairs or ""),
        pairs_sha256=next(iter(data.data_files.values()), ""),
        **meta,
    )
    cal.conversion = cfg.conversion
    return cal
