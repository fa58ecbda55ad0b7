"""Same story or not: a logistic model over the rerank score's parts and the facts the headlines name.

The rerank score (:mod:`nlsim.rerank.reranker`) estimates a pair's relatedness on the rubric's 0-1 scale,
and at the top of that scale a story and a series read alike: the cross-encoder's score sits at its bound
for "恒指全日跌53點報21330" / "…報15509" (two sessions) and for two desks' reports of one session. The
*story model* decides the same-story question itself, from what the rerank score is made of and from what
the two headlines name:

- ``cross_encoder``: the cross-encoder's logit; ``cosine``: the fine-tuned bi-encoder's cosine;
- ``bigram_overlap``: IDF-weighted Jaccard overlap of the two texts' character bigrams, the IDF taken from
  the training pairs' texts (stored with the model, so a daily run reads what a batch run reads): a
  shared rare name weighs more than a shared common phrase;
- ``longest_shared``: the longest character run without digits that both texts hold;
- ``numbers_conflict`` (both hold numbers and share none) and ``numbers_shared`` (how many they share);
- ``template`` (one text once numbers are masked) and ``template_overlap`` (Jaccard overlap of the
  number-masked character trigrams): a daily bulletin with other figures;
- ``veto``: the series veto's tests fire (:func:`nlsim.rerank.series.series_conflict`: another year,
  model code, session or direction).

It is a standardised L2 logistic regression fitted on the *validation* pairs (same story: score ≥ the
calibration level), with the cross-encoder's scores of those pairs from its training's validation pass:
scores of pairs it was not trained on, which is what it gives a report's pairs. Fitted on the training
pairs instead it would learn to trust a cross-encoder that fits them almost perfectly. The pairs'
probabilities that calibrate its threshold are cross-fitted (five folds over validation, each scored by
a model fitted without it): :func:`fit_story_model`. Measured on five folds over train + validation
with out-of-fold cross-encoder scores (``benchmarks/bench_story_model.py``; docs/experiments.md, "A story
model, and the cross-encoder's recipes with batch 4"): best F1 0.634 against 0.607 for the cross-encoder
with the veto (seed 42), 0.608 against 0.603 (seed 7).

The story model re-decides the pairs the rerank score would have read, no others: it is fitted on, and
applied to, the pairs at or above its *cosine gate*, the rerank score's candidate floor at the rerank
score's own calibrated threshold (``rerank_threshold``). So a report reads as many candidate pairs with
the cross-encoder as before; a floor from the model's weights alone would sit far lower (the text
features can add much), and every neighbour would be read. How the reranker puts the probability on its
score scale: :meth:`nlsim.rerank.reranker.Reranker.pair_scores`. Every text feature is clipped to the
range the fitted pairs spanned.

Example:
    >>> idf = BigramIdf.of(["恒指全日跌53點報21330", "恒指全日漲12點", "京貿國際城在售"])
    >>> feats = pair_features("恒指全日跌53點報21330", "恒指全日跌53點報15509", idf)
    >>> dict(zip(FEATURES[2:], feats))["template"], dict(zip(FEATURES[2:], feats))["veto"]
    (1.0, 1.0)
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from nlsim.rerank.series import NUMBER, series_conflict, template_overlap

FEATURES = (
    "cross_encoder",
    "cosine",
    "bigram_overlap",
    "longest_shared",
    "numbers_conflict",
    "numbers_shared",
    "template",
    "template_overlap",
    "veto",
)
"""The story model's inputs, in its order: the two scores, then :func:`pair_features`."""
FOLDS = 5
"""Folds over the validation pairs for the cross-fitted probabilities that calibrate the threshold."""
MIN_CLASS = 10
"""Fewest same-story (and other) validation pairs a story model is fitted on; fewer, and none is."""
LOGIT_EPS = 1e-6


def runs(text: str, n: int) -> set[str]:
    """The character runs of length ``n`` in ``text``."""
    return {text[i : i + n] for i in range(len(text) - n + 1)}


@dataclass
class BigramIdf:
    """Document frequencies of character bigrams over a set of texts (the training pairs' texts)."""

    texts: int
    df: dict[str, int]

    @classmethod
    def of(cls, texts: Iterable[str]) -> BigramIdf:
        distinct = set(texts)
        df: Counter[str] = Counter()
        for text in distinct:
            df.update(runs(text, 2))
        return cls(len(distinct), dict(sorted(df.items())))

    def idf(self, run: str) -> float:
        return math.log((self.texts + 1) / (self.df.get(run, 0) + 1))


def pair_features(a: str, b: str, idf: BigramIdf) -> list[float]:
    """The text features of a pair (``FEATURES[2:]``), from the texts as the models read them."""
    shared = set().union(*(runs(a, n) & runs(b, n) for n in range(2, 7)))
    words = [r for r in shared if not re.search(r"\d", r)]
    bigrams_a, bigrams_b = runs(a, 2), runs(b, 2)
    union = sum(idf.idf(r) for r in bigrams_a | bigrams_b)
    numbers_a, numbers_b = set(NUMBER.findall(a)), set(NUMBER.findall(b))
    return [
        sum(idf.idf(r) for r in bigrams_a & bigrams_b) / union if union else 0.0,
        float(max((len(r) for r in words), default=0)),
        float(bool(numbers_a) and bool(numbers_b) and not numbers_a & numbers_b),
        float(len(numbers_a & numbers_b)),
        float(NUMBER.sub("#", a) == NUMBER.sub("#", b) and a != b),
        template_overlap(a, b),
        float(series_conflict(a, b) is not None),
    ]


def cross_logits(cross_scores: Any) -> np.ndarray:
    """The cross-encoder's scores (in (0, 1)) as logits."""
    p = np.clip(np.asarray(cross_scores, dtype=np.float64), LOGIT_EPS, 1 - LOGIT_EPS)
    return np.log(p / (1 - p))


def feature_matrix(
    cross_scores: Any, cosines: Any, texts_a: Sequence[str], texts_b: Sequence[str], idf: BigramIdf
) -> np.ndarray:
    """The story model's inputs (``FEATURES``) of each pair, one row a pair."""
    text = np.array([pair_features(a, b, idf) for a, b in zip(texts_a, texts_b, strict=True)])
    text = text.reshape(len(texts_a), len(FEATURES) - 2)
    return np.column_stack([cross_logits(cross_scores), np.asarray(cosines, dtype=np.float64), text])


@dataclass
class StoryModel:
    """A fitted story model: ``p = sigmoid(intercept + sum(coef * (clip(x) - mean) / scale))``.

    The cross-encoder's logit and the cosine are not clipped; every text feature is clipped to
    ``[low, high]``, the range of the fitted pairs.
    """

    idf: BigramIdf
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    low: list[float]
    high: list[float]
    cosine_gate: float = -1.0
    """The model decides the pairs at or above this cosine (the rerank score's candidate floor at
    ``rerank_threshold``, when fine-tuning fits it)."""
    rerank_threshold: float = 0.0
    """The rerank score's own calibrated threshold, from which the gate was set."""

    def logits(self, x: np.ndarray) -> np.ndarray:
        x = np.array(x, dtype=np.float64, copy=True)
        x[:, 2:] = np.clip(x[:, 2:], self.low[2:], self.high[2:])
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return self.intercept + z @ np.asarray(self.coef)

    def probabilities(
        self, cross_scores: Any, cosines: Any, texts_a: Sequence[str], texts_b: Sequence[str]
    ) -> np.ndarray:
        """The same-story probability of each pair (float64)."""
        if len(texts_a) == 0:
            return np.zeros(0)
        x = feature_matrix(cross_scores, cosines, texts_a, texts_b, self.idf)
        return expit(self.logits(x))

    def as_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StoryModel:
        if list(d.get("features", [])) != list(FEATURES):
            raise ValueError(f"story model features {d.get('features')} are not {list(FEATURES)}")
        idf = d["idf"]
        model = cls(
            idf=BigramIdf(int(idf["texts"]), {str(k): int(v) for k, v in idf["df"].items()}),
            **{k: [float(v) for v in d[k]] for k in ("mean", "scale", "coef", "low", "high")},
            intercept=float(d["intercept"]),
            cosine_gate=float(d["cosine_gate"]),
            rerank_threshold=float(d["rerank_threshold"]),
        )
        for name in ("mean", "scale", "coef", "low", "high"):
            values = getattr(model, name)
            if len(values) != len(FEATURES) or not np.all(np.isfinite(values)):
                raise ValueError(f"story model {name}: {len(FEATURES)} finite numbers expected")
        numbers = (model.intercept, model.cosine_gate, model.rerank_threshold)
        if not all(math.isfinite(v) for v in numbers) or min(model.scale) <= 0:
            raise ValueError("story model: intercept not finite or a scale not positive")
        return model


def fit_logistic(x: np.ndarray, y: np.ndarray, idf: BigramIdf) -> StoryModel:
    """A standardised L2 logistic regression (scikit-learn, ``C=1``) on rows ``x`` (``FEATURES``)."""
    from sklearn.linear_model import LogisticRegression

    low, high = x.min(axis=0), x.max(axis=0)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale <= 0] = 1.0
    lr = LogisticRegression(max_iter=1000).fit((x - mean) / scale, y)
    return StoryModel(
        idf=idf,
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=lr.coef_[0].tolist(),
        intercept=float(lr.intercept_[0]),
        low=low.tolist(),
        high=high.tolist(),
    )


@dataclass
class FittedStory:
    """:func:`fit_story_model`'s answer: the model fitted on the validation pairs at or above the gate
    (``inside``), and each such pair's cross-fitted probability (from a model fitted without its fold; 0
    outside), for the threshold's calibration."""

    model: StoryModel
    held_out: np.ndarray
    inside: np.ndarray


def fit_story_model(
    cross_scores: Any,
    cosines: Any,
    texts_a: Sequence[str],
    texts_b: Sequence[str],
    same_story: Any,
    idf: BigramIdf,
    cosine_gate: float = -1.0,
    rerank_threshold: float = 0.0,
    seed: int = 0,
) -> FittedStory | None:
    """Fit the story model on labelled pairs (the validation split) at or above ``cosine_gate`` (the pairs
    it will decide); ``None`` when it cannot be fitted soundly: fewer than
    :data:`MIN_CLASS` pairs of either class there, or a fit that does not rise with both the cross-encoder
    and the cosine.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = np.arange(60) % 3 == 0
        >>> ce = np.where(y, 0.9, 0.6) + rng.normal(0, 0.05, 60)
        >>> cos = np.where(y, 0.95, 0.85) + rng.normal(0, 0.02, 60)
        >>> texts = [f"新聞{i}" for i in range(60)]
        >>> fit = fit_story_model(ce, cos, texts, texts[::-1], y, BigramIdf.of(texts))
        >>> fit.held_out.shape, fit.model.coef[0] > 0
        ((60,), True)
    """
    from sklearn.model_selection import StratifiedKFold

    x_all = feature_matrix(cross_scores, cosines, texts_a, texts_b, idf)
    inside = x_all[:, 1] >= cosine_gate
    x, y = x_all[inside], np.asarray(same_story, dtype=bool)[inside]
    if min(int(y.sum()), int((~y).sum())) < MIN_CLASS:
        return None
    model = fit_logistic(x, y, idf)
    model.cosine_gate, model.rerank_threshold = float(cosine_gate), float(rerank_threshold)
    if model.coef[0] <= 0 or model.coef[1] <= 0:
        return None
    held = np.zeros(len(y))
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=seed).split(x, y):
        part = fit_logistic(x[train], y[train], idf)
        held[test] = expit(part.logits(x[test]))
    held_out = np.zeros(len(x_all))
    held_out[inside] = held
    return FittedStory(model, held_out, inside)
