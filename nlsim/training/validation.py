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

from dataclasses import dataclass
from typing import Any

import numpy as np

from nlsim.evaluation.calibration import Calibration, calibrate, threshold_metrics
from nlsim.evaluation.levels import LEVELS
from nlsim.evaluation.metrics import metrics_from_scores, pair_similarities
from nlsim.training.config import FinetuneConfig
from nlsim.training.data import PreparedPairs


def evaluate_splits(
    encoder: Any, data: PreparedPairs, when: str, calibration: Calibration | None = None
) -> dict[str, dict[str, Any]]:
    """Metrics on validation (and test, when present), keyed ``"{when}/{split}"``.

    ``encoder`` is an encoder or a pair scorer (a reranker's :meth:`~nlsim.rerank.Reranker.scorer`). With
    the model's ``calibration``, each split also gets ``same_story``: the precision, recall and F1 of the
    calibrated threshold there (on test: the one same-story figure of the test split, scored once).
    """
    splits = {"validation": data.validation, **({"test": data.test} if len(data.test) else {})}
    out = {}
    for split, pairs in splits.items():
        scores = pair_similarities(encoder, pairs, None)
        gold = pairs["score"].to_numpy(dtype=np.float64)
        out[f"{when}/{split}"] = metrics_from_scores(scores, gold).as_dict()
        if calibration is not None:
            at = threshold_metrics(scores, gold, calibration.threshold, calibration.level)
            out[f"{when}/{split}"]["same_story"] = {"threshold": calibration.threshold, **at}
    return out


@dataclass
class ScoredValidation:
    """A trained model's own scores of its validation pairs, by pair id: the rerank score when it carries a
    calibrated reranker, else the cosine (``scorer``: ``"reranker"`` or ``"cosine"``, what a report of it
    uses), with the threshold calibrated on them at ``level``. The chain takes its figures from these
    instead of scoring the same pairs again (:func:`nlsim.chain.run.seed_figures`)."""

    scorer: str
    threshold: float
    level: float
    scores: dict[str, float]


def scored_validation(
    scorer: Any, data: PreparedPairs, kind: str, calibration: dict[str, Any] | None
) -> ScoredValidation | None:
    """:class:`ScoredValidation` of ``scorer`` (an encoder or a pair scorer) on ``data.validation``, at the
    threshold and level of ``calibration`` (:meth:`Calibration.as_dict`); ``None`` without one (no
    threshold to judge the scores at)."""
    if calibration is None:
        return None
    scores = pair_similarities(scorer, data.validation, None)
    ids = data.validation["pair_id"].astype(str)
    by_id = dict(zip(ids, scores.tolist(), strict=True))
    return ScoredValidation(kind, float(calibration["threshold"]), float(calibration["level"]), by_id)


TOPIC_LEVEL = LEVELS["same-topic-entity"]


def calibrate_encoder(
    encoder: Any, data: PreparedPairs, cfg: FinetuneConfig, level: float | None = None, **meta: Any
) -> Any:
    """Calibrate the threshold on the (converted) validation pairs (``None`` without a level).

    ``encoder`` is an encoder or a pair scorer; ``level``: the level to calibrate for (default: the run's
    ``calibrate_level``); ``meta`` goes to the calibration (e.g. ``model=``).
    """
    if cfg.evaluation.calibrate_level is None:
        return None
    cal = calibrate(
        encoder,
        data.validation,
        level=cfg.evaluation.calibrate_level if level is None else level,
        conversion=None,
        split=cfg.data.val_split,
        pairs_file=str(cfg.data.pairs or ""),
        pairs_sha256=next(iter(data.data_files.values()), ""),
        **meta,
    )
    cal.conversion = cfg.data.conversion
    return cal


def calibrate_topics(encoder: Any, data: PreparedPairs, cfg: FinetuneConfig, **meta: Any) -> Any:
    """The threshold at the topic level (``same-topic-entity``, 0.75), where a report reads its topic
    groups (:mod:`nlsim.clusters.topics`); ``None`` when the run calibrates nothing, or calibrates for that
    level already (its threshold is the story threshold then)."""
    if cfg.evaluation.calibrate_level is None or cfg.evaluation.calibrate_level <= TOPIC_LEVEL:
        return None
    return calibrate_encoder(encoder, data, cfg, TOPIC_LEVEL, **meta)
