"""Calibrate the duplicate threshold: the score that best separates annotated pairs at or above a level.

On validation pairs, a pair is *positive* when its gold score >= ``level`` (default 0.875, "same story", the
question a duplicate report answers: 1.0, or two annotators' 1 and 0.75; 0.75 = "same topic and entity").
Every cut between two distinct scores is a candidate threshold, put half-way between the lowest score it
accepts and the next lower one, so it does not sit on a data point.

The threshold is chosen where the **cross-validated F1** is best: the validation pairs are cut into 5
folds (stratified by the level, 20 repeats), each candidate's F1 is computed on each fold and averaged
(ties: the higher threshold). With a few dozen positive pairs the single best-F1 cut on all of them moves
by a pair or two from one annotation batch to the next; the fold average prefers a threshold that is good
on every part of the pairs. Two honest figures come with it: ``cv_f1``, the F1 of the whole procedure out
of fold (on 4/5 the threshold is chosen, on the fifth it is scored; pooled over folds and repeats), and a
95% bootstrap interval of the F1 at the chosen threshold (``f1_ci95``). ``method="best-f1"`` takes the
plain best cut instead. The result is stored as ``calibration.json`` beside a model, or as a standalone
file.

Example:
    >>> import numpy as np
    >>> cos, gold = np.array([0.95, 0.90, 0.85, 0.80]), np.array([1.0, 0.75, 0.5, 0.0])
    >>> cal = calibrate_scores(cos, gold, level=0.75, method="best-f1")
    >>> cal.threshold, cal.f1
    (0.875, 1.0)
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.errors import ConfigError, InputError, StateError
from nlsim.evaluation.figures import RATE_DIGITS, rates, rates_at, split_pairs
from nlsim.evaluation.interval import f1_interval
from nlsim.evaluation.levels import DEFAULT_LEVEL, LEVELS, parse_level  # noqa: F401 - re-exported
from nlsim.io.atomic import atomic_write_text
from nlsim.io.records import field_problems, known_fields
from nlsim.progress import warn

CALIBRATION_JSON = "calibration.json"
TOPIC_CALIBRATION_JSON = "topic_calibration.json"
"""Beside a model: the threshold of its cosine calibrated at the topic level (``same-topic-entity``, 0.75),
where a report's topic groups are read (:mod:`nlsim.clusters.topics`); a reranker keeps its own in
``reranker.json``."""
CALIBRATION_KEYS = {"threshold", "level", "n", "n_positive"}
"""Keys every calibration file nlsim writes holds (how an existing one is told from a user's file)."""


@dataclass
class Calibration:
    """A calibrated cosine threshold and how well it separates the validation pairs."""

    threshold: float
    level: float
    precision: float
    recall: float
    f1: float
    n: int
    n_positive: int
    model: str = ""
    fingerprint: str = ""
    conversion: str = "none"
    split: str = "validation"
    pairs_file: str = ""
    pairs_sha256: str = ""
    created: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    method: str = "best-f1"
    """How the threshold was chosen: ``cross-validated`` (the default now) or ``best-f1``."""
    cv_f1: float | None = None
    """F1 of the threshold choice out of fold (see the module docstring)."""
    f1_ci95: list[float] | None = None
    """95% bootstrap interval of ``f1`` at the chosen threshold."""
    fallback: str = ""
    """Why ``method`` is not the one asked for (empty when it is): said by :meth:`describe` too."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for logs: where the threshold comes from."""
        ci = f" [{self.f1_ci95[0]:.3f}, {self.f1_ci95[1]:.3f}]" if self.f1_ci95 else ""
        cv = f", {self.method} F1 out of fold {self.cv_f1:.3f}" if self.cv_f1 is not None else ""
        return (
            f"threshold {self.threshold:.4f} calibrated for level >= {self.level} on {self.n} "
            f"{split_pairs(self.split)} "
            f"(P {self.precision:.3f} R {self.recall:.3f} F1 {self.f1:.3f}{ci}{cv}; "
            f"conversion {self.conversion}"
            f"{'; model ' + self.model if self.model else ''})"
            f"{'; ' + self.fallback if self.fallback else ''}"
        )


CV_FOLDS = 5
CV_REPEATS = 20


@dataclass(frozen=True)
class Cuts:
    """Every candidate threshold of a set of scores: the sorted scores, the positions where a cut can go
    (after the last of a run of equal scores) and the threshold of each cut."""

    order: np.ndarray
    ends: np.ndarray
    thresholds: np.ndarray

    @classmethod
    def of(cls, scores: np.ndarray) -> Cuts:
        order = np.argsort(-scores, kind="stable")
        s = scores[order]
        ends = np.nonzero(np.r_[s[1:] != s[:-1], True])[0]
        below = np.r_[s[ends[:-1] + 1], s[ends[-1]] - 1e-3]
        return cls(order, ends, (s[ends] + below) / 2)

    def counts(
        self, positive: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """True and false positives at each cut, and the positives, over ``rows`` (default: all)."""
        g = positive[self.order]
        w = np.ones(len(g), dtype=bool) if rows is None else rows[self.order]
        tp = np.cumsum(g & w)[self.ends]
        fp = np.cumsum(~g & w)[self.ends]
        return tp, fp, int((positive & (True if rows is None else rows)).sum())


def f1_curve(tp: np.ndarray, fp: np.ndarray, positives: int) -> np.ndarray:
    """F1 at each cut from its counts (0 where nothing true is accepted)."""
    return np.where(tp > 0, 2 * tp / np.maximum(tp + fp + positives, 1), 0.0)


def _folds(gold: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A fold number per pair, stratified: positives and negatives each dealt round-robin in random order."""
    fold = np.empty(len(gold), dtype=np.int64)
    for part in (np.flatnonzero(gold), np.flatnonzero(~gold)):
        fold[rng.permutation(part)] = np.arange(len(part)) % CV_FOLDS
    return fold


def cross_validated_cut(cuts: Cuts, gold: np.ndarray, seed: int = 0) -> tuple[int, float]:
    """The cut whose F1 averaged over held-out folds is best (ties: the higher threshold), and the F1 of
    choosing a threshold that way out of fold (chosen on 4/5 by best F1, scored on the held-out fifth,
    pooled over folds and repeats)."""
    rng = np.random.default_rng(seed)
    mean = np.zeros(len(cuts.ends))
    tp_out = fp_out = pos_out = 0
    for _ in range(CV_REPEATS):
        fold = _folds(gold, rng)
        for k in range(CV_FOLDS):
            held = fold == k
            tp, fp, pos = cuts.counts(gold, held)
            mean += f1_curve(tp, fp, pos)
            tp_in, fp_in, pos_in = cuts.counts(gold, ~held)
            chosen = int(np.argmax(f1_curve(tp_in, fp_in, pos_in)))
            tp_out, fp_out, pos_out = tp_out + tp[chosen], fp_out + fp[chosen], pos_out + pos
    best = int(np.flatnonzero(mean >= mean.max() - 1e-12)[0])
    cv_f1 = 2 * tp_out / max(tp_out + fp_out + pos_out, 1)
    return best, float(cv_f1)


def calibrate_scores(
    cosines: np.ndarray,
    scores: np.ndarray,
    level: float = DEFAULT_LEVEL,
    method: str = "cross-validated",
    **meta: Any,
) -> Calibration:
    """The threshold for ``score >= threshold`` against ``gold >= level`` (see the module docstring);
    ``cosines`` are the model's scores of the pairs (a cosine, or a rerank score)."""
    cos = np.asarray(cosines, dtype=np.float64)
    gold = np.asarray(scores, dtype=np.float64) >= level - 1e-9
    if cos.shape != gold.shape or cos.ndim != 1 or len(cos) == 0:
        raise ConfigError("cosines and scores must be non-empty 1-d arrays of one length")
    if method not in ("cross-validated", "best-f1"):
        raise ConfigError(f"unknown calibration method {method!r} (use cross-validated or best-f1)")
    n_pos = int(gold.sum())
    if n_pos == 0 or n_pos == len(gold):
        raise ConfigError(
            f"level {level}: need pairs both at/above and below it ({n_pos} of {len(gold)} are above)"
        )
    cuts = Cuts.of(cos)
    tp, fp, _ = cuts.counts(gold)
    f1 = f1_curve(tp, fp, n_pos)
    cv_f1 = None
    fallback = ""
    if method == "cross-validated" and min(n_pos, len(gold) - n_pos) >= CV_FOLDS:
        best, cv_f1 = cross_validated_cut(cuts, gold)
    else:  # too few pairs on one side for folds: the plain best cut
        if method == "cross-validated":
            fallback = (
                f"method best-f1, not the cross-validated asked for: {n_pos} pair(s) at or above level "
                f"{level} "
                f"and {len(gold) - n_pos} below, and {CV_FOLDS} folds need {CV_FOLDS} on each side"
            )
        method = "best-f1"
        best = int(np.flatnonzero(f1 >= f1.max() - 1e-12)[0])  # first = highest threshold among ties
    threshold = _stored_threshold(float(cuts.thresholds[best]), cos)
    at = rates(int(tp[best]), int(tp[best] + fp[best]), n_pos)
    return Calibration(
        threshold=threshold,
        level=float(level),
        precision=float(at.precision or 0.0),
        recall=float(at.recall or 0.0),
        f1=float(at.f1 or 0.0),
        n=int(len(cos)),
        n_positive=n_pos,
        method=method,
        fallback=fallback,
        cv_f1=None if cv_f1 is None else round(cv_f1, RATE_DIGITS),
        f1_ci95=f1_interval(cos >= threshold, gold),
        **meta,
    )


def _stored_threshold(threshold: float, scores: np.ndarray) -> float:
    """``threshold`` to 6 decimals where that accepts the same scores, else as it is: two scores closer
    than that (a cut between 0.5 and 0.5000004) must not have their cut rounded onto the lower one, which
    the stored threshold would then accept."""
    rounded = round(threshold, 6)
    return rounded if np.array_equal(scores >= rounded, scores >= threshold) else threshold


def threshold_metrics(
    scores: np.ndarray, gold: np.ndarray, threshold: float, level: float
) -> dict[str, float]:
    """Precision, recall and F1 of ``score >= threshold`` against ``gold >= level`` (a threshold fixed
    beforehand, e.g. a model's stored calibration, applied to other pairs).

    Example:
        >>> threshold_metrics(np.array([0.9, 0.8, 0.7]), np.array([1.0, 0.5, 1.0]), 0.75, 1.0)
        {'precision': 0.5, 'recall': 0.5, 'f1': 0.5, 'n': 3, 'n_positive': 2}
    """
    at = rates_at(scores, gold, threshold, level)
    positives = int((np.asarray(gold, dtype=np.float64) >= level - 1e-9).sum())
    return {**at.as_dict(), "n": int(len(np.asarray(scores))), "n_positive": positives}


def check_calibratable(
    pairs: pd.DataFrame,
    level: float,
    source: str | Path,
    split: str,
    *,
    way_out: str = "another --level, or another --split",
) -> None:
    """Refuse (:class:`~nlsim.errors.InputError`: what the pair file holds, exit status 1), before a model
    is loaded and the pairs embedded, pairs no threshold can be calibrated on: none at all, or none on one
    side of ``level``; the message names the file, the field and the split, and ``way_out``. ``nlsim
    calibrate`` and ``nlsim finetune`` (its validation split, :func:`nlsim.training.data.check_trainable`)
    refuse them so.

    Example:
        >>> check_calibratable(pd.DataFrame({"score": [0.5, 0.25]}), 1.0, "p.tsv", "test")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: p.tsv: field 'score': none of the 2 pairs of split 'test' is at or above ...
    """
    if pairs.empty:
        raise InputError(source, None, None, "no pairs to calibrate on (the file holds a header only)")
    above = int((pairs["score"].to_numpy(dtype=np.float64) >= level - 1e-9).sum())
    if 0 < above < len(pairs):
        return
    which = "none of the {} pairs{} is" if above == 0 else "all of the {} pairs{} are"
    of = f" of split {split!r}" if split != "all" else ""
    raise InputError(
        source,
        None,
        "score",
        f"{which.format(len(pairs), of)} at or above level {level}; a threshold needs pairs on both sides of "
        f"it ({way_out})",
    )


def calibrate(
    encoder: Any,
    pairs: pd.DataFrame,
    level: float = DEFAULT_LEVEL,
    conversion: str | None = None,
    **meta: Any,
) -> Calibration:
    """Calibrate ``encoder`` (or a pair scorer) on ``pairs`` (already restricted to one split)."""
    from nlsim.evaluation.metrics import pair_similarities  # deferred: reading a calibration needs no torch

    cos = pair_similarities(encoder, pairs, conversion)
    meta.setdefault("model", str(getattr(encoder, "model_id", "") or getattr(encoder, "name", "")))
    if hasattr(encoder, "fingerprint"):
        meta.setdefault("fingerprint", encoder.fingerprint)
    return calibrate_scores(cos, pairs["score"].to_numpy(), level, conversion=conversion or "none", **meta)


def save_calibration(cal: Calibration, path: str | Path) -> Path:
    """Write ``cal`` as JSON to ``path``, or to ``path/calibration.json`` when ``path`` is a folder."""
    path = Path(path)
    if path.is_dir():
        path = path / CALIBRATION_JSON
    atomic_write_text(path, json.dumps(cal.as_dict(), indent=2, ensure_ascii=False) + "\n")
    return path


def load_calibration(model_path_or_file: str | Path | None) -> Calibration | None:
    """The calibration stored in a model folder (``calibration.json``) or in a standalone JSON file.

    Returns ``None`` when there is none (a registry name, a folder without the file); raises
    ``StateError`` for a file that exists but cannot be read.

    Example:
        >>> load_calibration("multilingual-e5-small") is None
        True
    """
    if model_path_or_file is None:
        return None
    path = Path(model_path_or_file)
    if path.is_dir():
        path = path / CALIBRATION_JSON
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError(f"a JSON object is expected, not {type(data).__name__}")
    except (ValueError, TypeError) as exc:
        raise StateError(f"{path}: not a valid calibration file ({exc}); rerun `nlsim calibrate`") from exc
    problems = field_problems(Calibration, data)
    if problems:  # named in words: not Calibration.__init__'s "missing 7 required positional arguments"
        raise StateError(
            f"{path}: not a valid calibration file: {'; '.join(problems)}; rerun `nlsim calibrate`"
        )
    cal = Calibration(**known_fields(Calibration, data))
    check_threshold(cal.threshold, f"{path}: threshold", high=1.0)
    if not isinstance(cal.level, (int, float)) or not 0.0 < float(cal.level) <= 1.0:
        raise StateError(f"{path}: level {cal.level!r} is not in (0, 1]; rerun `nlsim calibrate`")
    return cal


def warn_other_conversion(calibrated: str, used: str, where: Any, effect: str) -> None:
    """Warn when ``where`` (a model folder, a calibration file, a threshold) was calibrated on texts
    converted with ``calibrated`` while they are read here converted with ``used`` (``--convert``): its
    threshold and figures are those of texts it was not made for. ``effect`` says what is done all the
    same. Nothing when the two agree or either is not known (empty).

    Example:
        >>> warn_other_conversion("none", "none", "models/v0001", "it is used all the same")  # agree: silent
    """
    if calibrated and used and calibrated != used:
        warn(
            f"--convert {used}: {where} was calibrated on texts converted with {calibrated!r}; {effect}: "
            f"give --convert {calibrated} to read the texts as the model was trained to"
        )


def check_threshold(value: Any, what: str, *, low: float = -1.0, high: float = 1.0) -> float:
    """``value`` as a float when it is a finite number in ``[low, high]``; else a :class:`StateError`.

    Example:
        >>> check_threshold(float("nan"), "calibration.json: threshold")
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: calibration.json: threshold nan is not a number in [-1, 1]; recalibrate ...
    """
    try:
        t = float(value)
    except (TypeError, ValueError):
        t = float("nan")
    if not (np.isfinite(t) and low <= t <= high):
        raise StateError(
            f"{what} {value!r} is not a number in [{low:g}, {high:g}]; recalibrate (nlsim calibrate)"
        )
    return t
