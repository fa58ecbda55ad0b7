"""The threshold of a pair, and where it came from: :func:`resolve_threshold`.

A given value (``--threshold``) comes first, then a calibration file (``--calibration``), then the
calibration stored with the model (``calibration.json``), then the model store's zero-shot calibration.
With a reranker, the threshold is on the rerank score: a given value, else the reranker's own calibration.
A calibration made for another model (another fingerprint) is refused: cosine scales differ between models.

Example:
    >>> from nlsim.models.settings import ModelSettings
    >>> ms = ModelSettings(name="paraphrase-MiniLM-L3-v2", convert="none", threshold=0.95)
    >>> resolve_threshold(ms, None).source
    'given with --threshold'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlsim.errors import ConfigError
from nlsim.evaluation.calibration import (
    CALIBRATION_JSON,
    TOPIC_CALIBRATION_JSON,
    Calibration,
    load_calibration,
    warn_other_conversion,
)
from nlsim.io.records import known_fields
from nlsim.models.settings import ModelSettings
from nlsim.progress import say, warn
from nlsim.rerank.reranker import Reranker


@dataclass(frozen=True)
class Levels:
    """The two thresholds a report reads its links at: the story clusters' and, when there are topic
    groups, the topic groups' (lower; ``None``: none)."""

    story: float
    topic: float | None = None


_USED = "the run groups the pairs by it all the same"


@dataclass
class Threshold:
    """The run's threshold, where it came from, and how well it did on the editors' labels."""

    value: float
    source: str
    calibration: Calibration | None = None


def _check_fingerprint(cal: Calibration, encoder: Any, where: Any) -> None:
    if cal.fingerprint and getattr(encoder, "fingerprint", None) and cal.fingerprint != encoder.fingerprint:
        raise ConfigError(
            f"{where} was calibrated for another model ({cal.model or 'unknown'}, fingerprint "
            f"{cal.fingerprint[:12]}), "
            f"not for {encoder.model_id} (fingerprint {encoder.fingerprint[:12]}): its threshold does not "
            "apply. "
            "Calibrate this model (nlsim calibrate) or pass --threshold"
        )


def resolve_threshold(
    ms: ModelSettings, encoder: Any, reranker: Reranker | None = None, fallback: Calibration | None = None
) -> Threshold:
    """Pick the threshold: explicit value > calibration file > the model's own ``calibration.json``
    (> the store's zero-shot calibration, ``fallback``). With a ``reranker`` the threshold is on the rerank
    score: explicit value > the reranker's calibration."""
    model_path = getattr(encoder, "path", None)
    _say_unused_calibration(ms, reranker)
    if reranker is not None:
        if ms.threshold is not None:
            return Threshold(float(ms.threshold), "given with --threshold, on the rerank score")
        if reranker.calibration is None:
            raise ConfigError(f"the reranker of {model_path} has no calibration: pass --threshold X (0-1)")
        cal = Calibration(**known_fields(Calibration, reranker.calibration))
        warn_other_conversion(cal.conversion, ms.convert, f"the rerank threshold of {model_path}", _USED)
        return Threshold(
            float(cal.threshold), f"rerank threshold stored with the model: {cal.describe()}", cal
        )
    if ms.threshold is not None:
        return Threshold(float(ms.threshold), "given with --threshold")
    if ms.calibration is not None:
        cal = load_calibration(ms.calibration)
        if cal is None:
            raise ConfigError(f"calibration file {ms.calibration} not found")
        _check_fingerprint(cal, encoder, ms.calibration)
        warn_other_conversion(cal.conversion, ms.convert, f"the threshold in {ms.calibration}", _USED)
        return Threshold(float(cal.threshold), f"calibration file {ms.calibration}: {cal.describe()}", cal)
    cal = load_calibration(model_path) if model_path is not None else None
    if cal is not None:
        _check_fingerprint(cal, encoder, Path(model_path) / CALIBRATION_JSON)
        warn_other_conversion(cal.conversion, ms.convert, f"the threshold of {model_path}", _USED)
        return Threshold(float(cal.threshold), f"calibration stored with the model: {cal.describe()}", cal)
    if fallback is not None:
        _check_fingerprint(fallback, encoder, "the model store's zero-shot calibration")
        return Threshold(
            float(fallback.threshold),
            f"zero-shot calibration of the model store: {fallback.describe()}",
            fallback,
        )
    raise ConfigError(
        f"no threshold for model {ms.name!r}: cosine scales differ between models, so nlsim has no "
        "default. "
        "Pass --model current (the model store's promoted model, with its calibration: what the daily "
        "deployment uses; --model-store names the store `nlsim pipeline` filled), --threshold X, or "
        "--calibration FILE made by `nlsim calibrate --model MODEL --pairs annotations/thucnews_tw_pairs.tsv "
        "--out FILE` (level same-story by default), or use a fine-tuned model folder (it carries "
        "calibration.json)."
    )


def _say_unused_calibration(ms: ModelSettings, reranker: Reranker | None) -> None:
    """Warn when ``--calibration`` is given but another threshold comes first: ``--threshold``, or the
    reranker's own calibration (the rerank score's scale is not the cosine's)."""
    if ms.calibration is None:
        return
    if ms.threshold is not None:
        warn(f"--calibration {ms.calibration} is not used: --threshold {ms.threshold:g} comes first")
    elif reranker is not None:
        warn(
            f"--calibration {ms.calibration} is not used: the model's reranker scores pairs on its own scale "
            "and reads its own calibration (give --threshold to set the rerank threshold)"
        )


def resolve_topic_threshold(
    ms: ModelSettings,
    encoder: Any,
    story: Threshold,
    fallback: Calibration | None = None,
    reranked: bool = False,
) -> Threshold | None:
    """The threshold of the topic groups (:mod:`nlsim.clusters.topics`), on the bi-encoder's cosine (a
    neighbour search finds such pairs at no cost; the cross-encoder is trained for same story): a given
    value (``--topic-threshold``) > the model's own topic calibration (``topic_calibration.json`` beside the
    model) > the model store's zero-shot one (``fallback``, given when the story threshold is the store's
    zero-shot one). ``None`` (no topic groups) with ``--no-topics``, for a model that has none, or when the
    story threshold is a cosine (``reranked`` false) the topic threshold does not lie below (said)."""
    if not ms.topics:
        return None
    if ms.topic_threshold is not None:
        found = Threshold(float(ms.topic_threshold), "given with --topic-threshold, on the cosine")
    else:
        model_path = getattr(encoder, "path", None)
        cal = load_calibration(Path(model_path) / TOPIC_CALIBRATION_JSON) if model_path is not None else None
        where = "stored with the model"
        if cal is None and fallback is not None:
            cal, where = fallback, "of the model store's zero-shot model"
        if cal is None:
            if model_path is not None and (Path(model_path) / CALIBRATION_JSON).is_file():
                say(
                    "no topic groups: the model has a calibration but no topic calibration beside it "
                    f"({TOPIC_CALIBRATION_JSON}, which nlsim finetune writes; a model trained before it has "
                    "none); give --topic-threshold (a cosine) to have them"
                )
            else:
                say(
                    "no topic groups: the model has no topic calibration (a registry model, a threshold "
                    "given with --threshold); give --topic-threshold (a cosine) to have them"
                )
            return None
        _check_fingerprint(cal, encoder, f"the topic calibration {where}")
        found = Threshold(
            float(cal.threshold), f"topic threshold {where}, on the cosine: {cal.describe()}", cal
        )
    if not reranked and found.value >= story.value:
        warn(
            f"the topic threshold {found.value:.4f} is not below the story threshold {story.value:.4f}: no "
            "topic groups in this report"
        )
        return None
    return found
