"""Train the reranker stored beside a fine-tuned bi-encoder (:mod:`nlsim.rerank.reranker`).

The cross-encoder is trained on the training pairs (:mod:`nlsim.training.cross_encoder`); the line that
maps the bi-encoder's cosine onto the 0-1 score scale is fitted on the training pairs too; the combined
rerank score is then calibrated and scored on validation.

Example:
    >>> import numpy as np
    >>> cosine_to_score_map(np.array([0.8, 0.9, 1.0]), np.array([0.0, 0.5, 1.0]))
    (5.0, -4.0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nlsim.encoders.scoring import (
    KnownScores,
    PairScorer,
    as_pair_scorer,
    known_first,
    known_scores,
    remembered,
)
from nlsim.evaluation.calibration import calibrate_scores
from nlsim.evaluation.metrics import pair_similarities
from nlsim.progress import say
from nlsim.rerank.cache import PairScoreCache
from nlsim.rerank.reranker import DEFAULT_WEIGHT, Reranker
from nlsim.rerank.story import FEATURES, BigramIdf, fit_story_model
from nlsim.training.config import FinetuneConfig
from nlsim.training.cross_encoder import train_cross_encoder
from nlsim.training.data import PreparedPairs
from nlsim.training.side_by_side import SideBySide
from nlsim.training.validation import calibrate_encoder, evaluate_splits


def cosine_to_score_map(cosines: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """Least-squares line ``score ~ slope * cosine + intercept`` (fitted on gold training pairs).

    Example:
        >>> cosine_to_score_map(np.array([0.8, 0.9, 1.0]), np.array([0.0, 0.5, 1.0]))
        (5.0, -4.0)
    """
    slope, intercept = np.polyfit(np.asarray(cosines, dtype=np.float64), np.asarray(scores, np.float64), 1)
    return round(float(slope), 6), round(float(intercept), 6)


def train_reranker(
    encoder: Any,
    train: pd.DataFrame,
    validation: pd.DataFrame,
    cfg: Any,
    weight: float = DEFAULT_WEIGHT,
    log: Callable[[str], None] = say,
    beside: SideBySide | None = None,
) -> tuple[Reranker, KnownScores]:
    """Train the cross-encoder on ``train`` from ``cfg.model`` and fit the cosine line for ``encoder`` (the
    bi-encoder, or a pair scorer of its cosine).

    ``cfg`` is a :class:`nlsim.training.FinetuneConfig` (its ``cross_encoder_*`` settings); pairs are
    already converted. Returns the reranker, not yet calibrated (the cross-encoder's epoch history is in
    its ``info``), and the cross-encoder's fp32 scores of the validation pairs, which its training
    computed (:class:`nlsim.training.cross_encoder.TrainedCrossEncoder`). ``beside``: the cross-encoder
    already training beside the bi-encoder (:mod:`nlsim.training.side_by_side`), on the same pairs.
    """
    if beside is not None:
        log("reranker: the cross-encoder's later epochs take every thread")
        trained = beside.trained()
    else:
        log(f"reranker: training a cross-encoder from {cfg.model} on {len(train)} pairs (both orders)")
        trained = train_cross_encoder(cfg.model, train, validation, cfg.cross_encoder_config(), log=log)
    slope, intercept = cosine_to_score_map(pair_similarities(encoder, train), train["score"].to_numpy())
    best = max(trained.history, key=lambda h: h["spearman"])
    info = {
        "base_model": str(cfg.model),
        "cross_encoder_history": trained.history,
        "cross_encoder_best": best,
    }
    known = known_scores(validation["text_a"], validation["text_b"], trained.validation_scores)
    return Reranker(trained.ce, slope, intercept, weight, info=info), known


@dataclass
class FittedReranker:
    """:func:`fit_reranker`'s answer: the calibrated reranker, its metrics keyed ``"reranked/{split}"``, and
    its pair scorer (the pairs it scored remembered)."""

    reranker: Reranker
    metrics: dict[str, dict[str, Any]]
    scorer: PairScorer


def fit_reranker(
    encoder: Any,
    data: PreparedPairs,
    cfg: FinetuneConfig,
    log: Callable[[str], None] = say,
    beside: SideBySide | None = None,
) -> FittedReranker:
    """Train the reranker (:mod:`nlsim.rerank.reranker`) beside the fine-tuned ``encoder`` (or a pair scorer
    of its cosine), calibrate its score on validation, and score it. The cross-encoder's validation scores
    come from its training's validation pass of the kept epoch (fp32), not from a second pass over
    the same pairs. ``beside``: the cross-encoder already training (:mod:`nlsim.training.side_by_side`)."""
    reranker, known = train_reranker(
        encoder, data.train, data.validation, cfg, cfg.cross_encoder.rerank_weight, log, beside
    )
    seen = dict(known)  # the cross-encoder's scores of validation, and of the pairs scored below
    scorer = reranker.scorer(encoder, known, seen)
    if cfg.cross_encoder.story_model and cfg.evaluation.calibrate_level is not None:
        held = fit_story(reranker, encoder, data, cfg.evaluation.calibrate_level, known, log)
        if held is not None:  # validation is scored by models fitted without each pair's fold
            scorer = known_first(held, scorer)
    scorer = remembered(scorer)  # calibration and evaluation score validation once
    cal = calibrate_encoder(scorer, data, cfg, model="reranker")
    reranker.calibration = cal.as_dict() if cal is not None else None
    metrics = evaluate_splits(scorer, data, "reranked", cal)
    log(f"{reranker.describe()}; validation Spearman {metrics['reranked/validation']['spearman']:.2f}")
    keep_cross_scores(reranker, seen)
    return FittedReranker(reranker, metrics, scorer)


def keep_cross_scores(reranker: Reranker, scores: KnownScores) -> None:
    """The cross-encoder's fp32 scores fine-tuning computed (validation's in its training's last pass, the
    test split's when it was scored) put in the pair-score cache (:class:`nlsim.rerank.cache.PairScoreCache`,
    under the cross-encoder's digest), so that a report with this cross-encoder does not read those pairs
    again."""
    if scores:
        a, b = zip(*scores, strict=True)
        cache = PairScoreCache(None, reranker.cross_encoder.digest())
        cache.store(list(a), list(b), np.fromiter(scores.values(), dtype=np.float64, count=len(scores)))


def fit_story(
    reranker: Reranker,
    encoder: Any,
    data: PreparedPairs,
    level: float,
    known: KnownScores,
    log: Callable[[str], None] = say,
) -> KnownScores | None:
    """Fit the reranker's story model (:mod:`nlsim.rerank.story`) on the validation pairs: the
    cross-encoder's scores of them (``known``, from its training's validation pass), the bi-encoder's
    cosines, and the bigram IDF of the training pairs' texts, on the pairs at or above the rerank score's
    candidate floor at its own calibrated threshold. Sets ``reranker.story`` and returns the validation
    pairs' scores with the story model's part cross-fitted (:meth:`Reranker.pair_scores`, each probability
    from a model fitted without the pair's fold), for calibration and the validation figures; ``None``
    (and no story model) when :func:`~nlsim.rerank.story.fit_story_model` finds too few pairs of a class
    or an unsound fit."""
    val = data.validation
    a, b = val["text_a"].astype(str).tolist(), val["text_b"].astype(str).tolist()
    cross = np.array([known[(x, y)] for x, y in zip(a, b, strict=True)])
    cosines = as_pair_scorer(encoder)(a, b)
    idf = BigramIdf.of(data.train["text_a"].astype(str).tolist() + data.train["text_b"].astype(str).tolist())
    same = val["score"].to_numpy(dtype=np.float64) >= level - 1e-9  # as calibration reads the level
    # the pairs the rerank score would read at its own calibrated threshold: the story model decides those
    combined = reranker.combine(cosines, cross)
    rerank = calibrate_scores(combined, val["score"].to_numpy(), level)
    gate = reranker.candidate_floor(rerank.threshold)
    fitted = fit_story_model(cross, cosines, a, b, same, idf, gate, rerank.threshold)
    if fitted is None:
        log(
            f"story model: not fitted ({int(same.sum())} of {len(same)} validation pairs at level {level:g}, "
            "or a fit that does not rise with the cross-encoder and the cosine); the rerank score decides"
        )
        return None
    reranker.story = fitted.model
    scores = np.where(fitted.inside, reranker.story_scale(fitted.held_out), combined)
    coef = ", ".join(f"{n} {c:+.2f}" for n, c in zip(FEATURES, fitted.model.coef, strict=True))
    inside = fitted.inside
    log(
        f"story model: fitted on the {int(inside.sum())} of {len(same)} validation pairs at or above the "
        f"rerank score's candidate floor, cosine {gate:.4f} ({int(same[inside].sum())} same story): {coef}"
    )
    return known_scores(a, b, scores)
