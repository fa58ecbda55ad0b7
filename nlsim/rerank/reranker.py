"""Rerank: a cross-encoder rescores the pairs the bi-encoder finds, and the two scores are combined.

The bi-encoder is fast (one vector per item, FAISS finds the neighbours) but reads each headline alone;
a cross-encoder (:mod:`nlsim.rerank.cross_encoder`) reads both headlines together and sees word-level
correspondences, at the cost of one forward pass per pair. A fine-tuned model folder can carry one in
``reranker/``: dedup then retrieves candidate pairs with the bi-encoder, rescores them, and keeps the
pairs whose *rerank score* reaches the threshold calibrated for it.

The rerank score of a pair is an estimate of its relatedness on the annotation scale (0-1)::

    score = weight * (slope * cosine + intercept) + (1 - weight) * cross_encoder

``slope``/``intercept`` map the bi-encoder's cosine onto the 0-1 scale (least squares on the gold
*training* pairs); ``weight`` is 0.5 by default, fixed in advance (a lower weight scored about the
same on validation but moves the candidate floor down and multiplies the pairs to rescore:
docs/experiments.md).
The cross-encoder's output is below 1, so a pair whose cosine is below the *candidate floor*
``(threshold - (1 - weight)) / weight`` mapped back to a cosine cannot reach the threshold: dedup
rescores only pairs at or above it, and loses none.

A reranker trained since the story model (:mod:`nlsim.rerank.story`) carries one. The story model decides
the pairs at or above its cosine gate (the candidate floor at the rerank score's own calibrated threshold
``T``) from the cross-encoder, the cosine and what the two headlines name, and a pair's score there is
its same-story probability ``p`` put on the rerank scale above ``T``: ``T + p * (max_score - T)``; below
the gate the score is the rerank score, which is under ``T`` there. The threshold is calibrated on these
scores as before; the candidate floor is the gate for a threshold at or above ``T``.

Example:
    >>> r = Reranker(cross_encoder=None, slope=2.0, intercept=-1.0, weight=0.5)
    >>> round(float(r.combine(np.array([0.9]), np.array([0.6]))[0]), 6)  # 0.5 * 0.8 + 0.5 * 0.6
    0.7
    >>> round(r.candidate_floor(0.7), 6)  # cosine 0.7 maps to 0.4, and 0.5 * 0.4 + 0.5 * 1.0 = 0.7
    0.7
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.encoders.encoder import NLSIM_JSON
from nlsim.encoders.registry import check_tokenizer_file
from nlsim.encoders.scoring import KnownScores, PairScorer, as_pair_scorer, known_first, known_scores
from nlsim.errors import StateError
from nlsim.evaluation.calibration import Calibration, check_threshold
from nlsim.io.atomic import atomic_write_text
from nlsim.io.manifest import check_files, read_manifest
from nlsim.io.model_cache import known_sha256
from nlsim.io.records import field_problems, read_json_object
from nlsim.rerank.cache import PairScoreCache, each_pair_once
from nlsim.rerank.cross_encoder import CrossEncoder
from nlsim.rerank.story import StoryModel
from nlsim.rerank.target import cross_encoder_inference

RERANKER_DIR = "reranker"
RERANKER_JSON = "reranker.json"
TRAINING_RECORD = "training.json"
"""The fine-tuning record of a model folder (:mod:`nlsim.training.finetune`): it names the reranker a model
was trained with, which is how a folder saved before manifests says it had one."""
DEFAULT_WEIGHT = 0.5


@dataclass
class Reranker:
    """A cross-encoder, the cosine-to-score line, the weight, and the calibration of the combined score."""

    cross_encoder: Any
    slope: float
    intercept: float
    weight: float = DEFAULT_WEIGHT
    calibration: dict[str, Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    backend: str = "auto"
    """How :meth:`cross_scores` runs by default (not stored: a run setting, see
    :mod:`nlsim.rerank.target`)."""
    precision: str = "fp32"
    """Precision of :meth:`cross_scores` by default: ``fp32`` (evaluation, calibration), ``auto`` in dedup."""
    inference: dict[str, Any] | None = None
    """The last job's inference path (:class:`nlsim.inference.choice.Choice` as a dict)."""
    story: StoryModel | None = None
    """The story model (:mod:`nlsim.rerank.story`): with one, it decides the pairs at or above its gate."""

    def mapped_cosine(self, cosines: np.ndarray) -> np.ndarray:
        """The bi-encoder's cosine on the 0-1 relatedness scale (the fitted line, not clipped)."""
        return self.slope * np.asarray(cosines, dtype=np.float64) + self.intercept

    def combine(self, cosines: np.ndarray, cross_scores: np.ndarray) -> np.ndarray:
        """The rerank score from the bi-encoder cosines and the cross-encoder scores (see the module doc)."""
        cross = np.asarray(cross_scores, dtype=np.float64)
        return self.weight * self.mapped_cosine(cosines) + (1.0 - self.weight) * cross

    def pair_scores(
        self, cosines: np.ndarray, cross_scores: np.ndarray, texts_a: Sequence[str], texts_b: Sequence[str]
    ) -> np.ndarray:
        """A pair's score: the rerank score (:meth:`combine`), or with a story model, at or above its cosine
        gate, its same-story probability on the rerank scale above the rerank score's own threshold ``T``:
        ``T + p * (max_score - T)`` (module doc). ``texts_a``/``texts_b``: the pairs' converted texts."""
        cos = np.asarray(cosines, dtype=np.float64)
        rerank = self.combine(cos, cross_scores)
        if self.story is None:
            return rerank
        inside = np.flatnonzero(cos >= self.story.cosine_gate)
        if len(inside):
            a, b = [texts_a[i] for i in inside], [texts_b[i] for i in inside]
            cross = np.asarray(cross_scores, dtype=np.float64)[inside]
            rerank[inside] = self.story_scale(self.story.probabilities(cross, cos[inside], a, b))
        return rerank

    def story_scale(self, probabilities: np.ndarray) -> np.ndarray:
        """Same-story probabilities on the rerank scale above the story model's rerank threshold ``T``."""
        assert self.story is not None
        low = self.story.rerank_threshold
        return low + np.asarray(probabilities, dtype=np.float64) * (self.max_score() - low)

    def candidate_floor(self, threshold: float) -> float:
        """The lowest cosine at which a pair can still reach ``threshold``: the cross-encoder's score is at
        most its :meth:`~nlsim.rerank.cross_encoder.CrossEncoder.score_bound` (a bound from its weights;
        1 when unknown), so a pair below this cosine cannot reach the threshold whatever it reads. With a
        story model, a threshold at or above its rerank threshold needs its gate (every pair from there on
        may reach it); a lower one, the rerank score's floor, which lies below the gate."""
        if self.story is not None and threshold >= self.story.rerank_threshold:
            return self.story.cosine_gate
        return self.rerank_floor(threshold)

    def rerank_floor(self, threshold: float) -> float:
        """The lowest cosine at which the rerank score (:meth:`combine`) can still reach ``threshold``."""
        if self.weight <= 0 or self.slope <= 0:
            return -1.0  # the cosine says nothing: every neighbour is a candidate
        need = (float(threshold) - (1.0 - self.weight) * self.cross_bound()) / self.weight
        return float(max(-1.0, min(1.0, (need - self.intercept) / self.slope)))

    def cross_bound(self) -> float:
        """The highest score the cross-encoder can give (1 without a cross-encoder or a known bound)."""
        bound = getattr(self.cross_encoder, "score_bound", None)
        return float(bound()) if bound is not None else 1.0

    @property
    def threshold(self) -> float | None:
        return None if self.calibration is None else float(self.calibration["threshold"])

    def max_score(self) -> float:
        """The highest score a pair can get (cosine 1, cross-encoder 1; with a story model, probability 1)."""
        return float(self.combine(np.array([1.0]), np.array([1.0]))[0])

    def cross_scores(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        progress: bool = False,
        backend: str | None = None,
        cache: PairScoreCache | None = None,
        precision: str | None = None,
    ) -> np.ndarray:
        """The cross-encoder's scores of already-converted text pairs, on the inference path chosen for the
        job (:func:`nlsim.rerank.target.cross_encoder_inference`; ``backend``/``precision`` default to the
        reranker's own settings); with ``cache``, pairs scored before are looked up."""
        backend = backend or self.backend
        precision = precision or self.precision
        a, b = list(texts_a), list(texts_b)
        choice, runner = cross_encoder_inference(self.cross_encoder, len(a), backend, precision)
        self.inference = choice.as_dict()

        def score(x: list[str], y: list[str]) -> np.ndarray:
            return self.cross_encoder.predict(x, y, progress=progress, runner=runner)

        if cache is not None:
            return cache.scores(a, b, score, tag=choice.tag)
        return each_pair_once(a, b, score, ordered=False)

    def cross_readings(
        self,
        first: Sequence[str],
        second: Sequence[str],
        progress: bool = False,
        backend: str | None = None,
        precision: str | None = None,
    ) -> np.ndarray:
        """The cross-encoder's probability of each pair read in one order (``first[i]`` then
        ``second[i]``), on the path :meth:`cross_scores` would take for a job of as many pairs; no cache
        (it keeps scores of both orders). Two pairs of the same texts in the same order are read once."""
        a, b = list(first), list(second)
        choice, runner = cross_encoder_inference(
            self.cross_encoder, len(a), backend or self.backend, precision or self.precision
        )
        self.inference = choice.as_dict()

        def read(x: list[str], y: list[str]) -> np.ndarray:
            return self.cross_encoder.read(x, y, progress=progress, runner=runner)

        return each_pair_once(a, b, read, ordered=True)

    @property
    def fingerprint(self) -> str:
        """What the rerank score depends on: the cross-encoder's weights and the combination."""
        blob = f"{self.cross_encoder.digest()}:{self.slope!r}:{self.intercept!r}:{self.weight!r}"
        if self.story is not None:
            blob += ":" + json.dumps(self.story.as_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def scorer(
        self, encoder: Any, known: KnownScores | None = None, seen: KnownScores | None = None
    ) -> PairScorer:
        """A pair scorer (for :func:`nlsim.evaluation.metrics.evaluate` and calibration): the rerank score.

        ``encoder``: the bi-encoder, or a pair scorer of its cosine; ``known``: the cross-encoder's fp32
        scores of pairs already scored (training's validation pass of the kept epoch), used for a call they
        cover; ``seen``: where the cross-encoder's scores this scorer computes are added."""
        cosine = as_pair_scorer(encoder)

        def fp32(texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
            got = self.cross_scores(texts_a, texts_b, precision="fp32")  # measurements: the exact numbers
            if seen is not None:
                seen.update(known_scores(texts_a, texts_b, got))
            return got

        cross = known_first(known, fp32) if known else fp32

        def score(texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
            return self.pair_scores(cosine(texts_a, texts_b), cross(texts_a, texts_b), texts_a, texts_b)

        return score

    def describe(self) -> str:
        if self.story is not None:
            return (
                f"reranker: the story model's same-story probability from cosine "
                f"{self.story.cosine_gate:.4f} on (cross-encoder, cosine, headlines), below it the "
                f"rerank score {self.weight:g} x ({self.slope:.4f} x cosine {self.intercept:+.4f}) + "
                f"{1 - self.weight:g} x cross-encoder"
            )
        return (
            f"reranker: {self.weight:g} x ({self.slope:.4f} x cosine {self.intercept:+.4f}) + "
            f"{1 - self.weight:g} x cross-encoder"
        )

    def save(self, model_dir: str | Path) -> Path:
        """Write ``MODEL/reranker/`` (the cross-encoder and ``reranker.json``)."""
        folder = Path(model_dir) / RERANKER_DIR
        self.cross_encoder.save(folder)
        meta = json.dumps(self.meta(), indent=2, ensure_ascii=False)
        atomic_write_text(folder / RERANKER_JSON, meta + "\n")
        return folder

    def meta(self) -> dict[str, Any]:
        """Everything but the cross-encoder's weights (``reranker.json``)."""
        return {
            "slope": self.slope,
            "intercept": self.intercept,
            "weight": self.weight,
            "calibration": self.calibration,
            "info": self.info,
            **({"story": self.story.as_dict()} if self.story is not None else {}),
        }


def has_reranker(model_dir: str | Path | None) -> bool:
    """Whether ``model_dir`` is a folder that carries a reranker."""
    return model_dir is not None and (Path(model_dir) / RERANKER_DIR / RERANKER_JSON).is_file()


def check_saved_reranker(model_dir: str | Path | None) -> None:
    """Refuse a model folder saved with a reranker whose reranker is missing or altered: every file the
    folder's manifest lists under ``reranker/`` (whatever the cross-encoder wrote) must be there as nlsim
    saved it (:mod:`nlsim.io.manifest`). A folder saved before manifests must still hold the reranker its
    training record names, with the tokenizer file nlsim saved it with. Without this a run would silently
    score with the bi-encoder alone at the reranker's threshold, or with a cross-encoder that computes
    something else."""
    if model_dir is None or not Path(model_dir).is_dir():
        return
    folder = Path(model_dir)
    manifest = read_manifest(folder)
    if manifest is not None:
        check_files(folder, manifest, under=RERANKER_DIR + "/", hash_file=known_sha256)
        return
    if has_reranker(folder):
        if (folder / NLSIM_JSON).is_file():  # a model folder nlsim saved: its reranker had the tokenizer file
            check_tokenizer_file(folder / RERANKER_DIR)
        return
    try:
        trained = read_json_object(folder / TRAINING_RECORD).get("reranker")
    except (OSError, ValueError):
        trained = None
    if trained is not None:
        raise StateError(
            f"{folder / RERANKER_DIR / RERANKER_JSON}: missing, though {folder / TRAINING_RECORD} records "
            "the reranker this model was trained with; restore the model folder, or pass --no-rerank to "
            "score with the bi-encoder alone"
        )


def load_reranker(model_dir: str | Path | None, threads: int | None = None) -> Reranker | None:
    """The reranker stored with a model folder, or ``None`` when it has none (its files checked first:
    :func:`check_saved_reranker`).

    Example:
        >>> load_reranker("multilingual-e5-small") is None
        True
    """
    check_saved_reranker(model_dir)
    if not has_reranker(model_dir):
        return None
    folder = Path(str(model_dir)) / RERANKER_DIR
    try:
        meta = read_json_object(folder / RERANKER_JSON, "the reranker's settings")
        story, info = meta.get("story"), meta.get("info") or {}
        if not isinstance(story, (dict, type(None))) or not isinstance(info, dict):
            raise TypeError(
                f"its {'info' if isinstance(story, (dict, type(None))) else 'story'} is no object"
            )
        reranker = Reranker(
            cross_encoder=None,
            slope=float(meta["slope"]),
            intercept=float(meta["intercept"]),
            weight=float(meta["weight"]),
            calibration=meta.get("calibration"),
            info=info,
            story=StoryModel.from_dict(story) if story is not None else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # the story model's parts of a kind
        raise StateError(f"{folder / RERANKER_JSON}: not a valid reranker file ({exc})") from exc
    for name in ("slope", "intercept", "weight"):
        if not np.isfinite(getattr(reranker, name)):
            raise StateError(f"{folder / RERANKER_JSON}: {name} is not a finite number")
    if reranker.calibration is not None:
        cal = reranker.calibration
        problems = field_problems(Calibration, cal) if isinstance(cal, dict) else ["it is no JSON object"]
        if problems:  # named in words: not Calibration.__init__'s "missing 7 required positional arguments"
            raise StateError(
                f"{folder / RERANKER_JSON}: its calibration is not one nlsim wrote: {'; '.join(problems)}; "
                "restore the model folder (a reranker is calibrated when it is trained) or pass --threshold X"
            )
        check_threshold(
            reranker.calibration.get("threshold"),
            f"{folder / RERANKER_JSON}: rerank threshold",
            low=-1.0,
            high=reranker.max_score(),
        )
    reranker.cross_encoder = CrossEncoder.load(folder, threads=threads)
    return reranker


def rerank_pairs(
    pairs: pd.DataFrame,
    texts: Sequence[str],
    reranker: Reranker,
    threshold: float,
    progress: bool = False,
    cache: PairScoreCache | None = None,
) -> pd.DataFrame:
    """Rescore candidate pairs (``a``, ``b`` row positions into ``texts``, ``similarity`` = cosine).

    Returns the pairs whose rerank score reaches ``threshold``, with ``similarity`` = the rerank score and
    the bi-encoder's ``cosine`` and the ``cross_encoder`` score beside it.
    """
    out = pairs.copy()
    if out.empty:
        return out.assign(cosine=pd.Series(dtype=np.float32), cross_encoder=pd.Series(dtype=np.float32))
    a = [texts[i] for i in out["a"].to_numpy()]
    b = [texts[i] for i in out["b"].to_numpy()]
    cross = reranker.cross_scores(a, b, progress=progress, cache=cache)
    cos = out["similarity"].to_numpy(dtype=np.float64)
    out["cosine"] = cos.astype(np.float32)
    out["cross_encoder"] = cross.astype(np.float32)
    out["similarity"] = reranker.pair_scores(cos, cross, a, b).astype(np.float32)
    return out[out["similarity"] >= threshold].reset_index(drop=True)


def reranker_summary(reranker: Reranker) -> dict[str, Any]:
    """What a run record keeps of a reranker (no weights)."""
    meta = reranker.meta()
    info = meta.pop("info")
    if "story" in meta:  # its weights, not its bigram table
        meta["story"] = {k: v for k, v in meta["story"].items() if k != "idf"}
    return {**meta, **info}
