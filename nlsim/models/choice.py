"""The model a run judges with: :func:`load_model`, the ``model`` stage of a run (:mod:`nlsim.dedup.run`).

``current`` is the model store's promoted model, else the zero-shot default with the store's zero-shot
calibration; the reranker stored with a fine-tuned model comes with it (unless the run asks for none, or a
calibration file gives a cosine threshold); the threshold is
:func:`nlsim.models.threshold.resolve_threshold`'s. :class:`ModelChoice` holds the three and what the report
shows of them (:class:`~nlsim.report.record.ModelInfo`: the model card from the training record and the
store entry, :func:`model_summary`; the inference path, :func:`with_inference`).

Example:
    >>> from types import SimpleNamespace
    >>> from nlsim.models.settings import ModelSettings
    >>> encoder = SimpleNamespace(model_id="m", fingerprint="f" * 64, path=None)
    >>> chosen = load_model(ModelSettings(name="m", threshold=0.9, rerank=False), encoder)
    >>> chosen.threshold.value, chosen.floor, chosen.info.zero_shot, chosen.info.backend
    (0.9, 0.9, True, 'torch')
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from nlsim.encoders import load_encoder
from nlsim.encoders.registry import ALIASES, VERSION_LIKE
from nlsim.errors import ConfigError
from nlsim.evaluation.calibration import (
    TOPIC_CALIBRATION_JSON,
    Calibration,
    check_threshold,
    load_calibration,
)
from nlsim.io.model_store import CURRENT, HISTORY, VERSIONS, ZERO_SHOT, ModelStore, Promoted
from nlsim.io.ownership import MARKER, held_names, is_owned
from nlsim.io.records import mistyped_fields
from nlsim.models.settings import CURRENT_MODEL, DEFAULT_MODEL, ModelSettings
from nlsim.models.threshold import Levels, Threshold, resolve_threshold, resolve_topic_threshold
from nlsim.progress import say
from nlsim.report.record import ModelCard, ModelInfo, TrainingFacts
from nlsim.rerank.reranker import Reranker, check_saved_reranker, has_reranker, load_reranker


@dataclass
class ModelChoice:
    """The encoder, reranker and threshold of a run, and what the report says about them."""

    encoder: Any
    reranker: Reranker | None
    threshold: Threshold
    info: ModelInfo = field(default_factory=ModelInfo)
    topic: Threshold | None = None
    """The topic groups' threshold (:mod:`nlsim.clusters.topics`), on the cosine; ``None``: no topic
    groups."""

    @property
    def levels(self) -> Levels:
        """The story and topic thresholds (:class:`~nlsim.models.threshold.Levels`)."""
        return Levels(self.threshold.value, None if self.topic is None else self.topic.value)

    @property
    def story_floor(self) -> float:
        """The cosine from which a pair can reach the story threshold (the reranker's candidate floor): the
        candidates the reranker rescores."""
        if self.reranker is None:
            return self.threshold.value
        return self.reranker.candidate_floor(self.threshold.value)

    @property
    def floor(self) -> float:
        """The cosine down to which neighbours are searched: the story floor, or the topic threshold (on the
        cosine) when it is lower."""
        return self.story_floor if self.topic is None else min(self.story_floor, self.topic.value)


def _reranker_for(ms: ModelSettings, model_path: Path | None) -> Reranker | None:
    if ms.rerank is False:
        return None
    if not has_reranker(model_path):
        check_saved_reranker(model_path)  # saved with one that is gone: refused, not a silent bi-encoder run
        if ms.rerank:
            raise ConfigError(f"--rerank: model {ms.name!r} has no reranker (train one with nlsim finetune)")
        return None
    if ms.calibration is not None:
        if ms.rerank:
            raise ConfigError(
                "--rerank with --calibration: a calibration file calibrates cosines; the rerank threshold "
                "is the "
                "reranker's own or --threshold"
            )
        say(f"the reranker stored with {model_path} is not used: --calibration gives a cosine threshold")
        return None
    reranker = load_reranker(model_path, threads=ms.threads)
    reranker.backend, reranker.precision = ms.backend, ms.precision
    say(reranker.describe())
    return reranker


def _counts_by_split(labels: Any) -> bool:
    """Whether ``labels`` is ``editor_labels`` of the kind training writes: counts of pairs by split, by
    where they came from (``{"merged": {"train": 3}, "from_page": {}}``), or absent (``None``).

    >>> _counts_by_split({"merged": {"train": 3}, "from_page": {}}), _counts_by_split({"merged": 5})
    (True, False)
    """
    if labels is None:
        return True
    return isinstance(labels, dict) and all(
        isinstance(counts, dict)
        and all(isinstance(n, int) and not isinstance(n, bool) for n in counts.values())
        for counts in labels.values()
    )


def model_summary(folder: Path | None, store_info: dict[str, Any] | None) -> ModelCard:
    """What the report shows about a fine-tuned model: its training record and its store entry."""
    if folder is None:
        return ModelCard()
    metrics, trained = None, None
    try:
        training = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        training = None
    if isinstance(training, dict):  # else unreadable, or no record nlsim wrote (another tool's file)
        metrics = training.get("metrics", {})
        metrics = (
            {k: v for k, v in metrics.items() if isinstance(v, dict)} if isinstance(metrics, dict) else {}
        )
        facts = {f.name: training.get(f.name) for f in fields(TrainingFacts)}
        wrong = mistyped_fields(TrainingFacts, facts)
        if not _counts_by_split(facts["editor_labels"]):  # the card's line reads counts by split
            wrong = [*wrong, "editor_labels"]
        trained = TrainingFacts(**{k: v for k, v in facts.items() if k not in wrong})
    curve = folder / "learning_curve.png"
    return ModelCard(metrics, trained, store_info or None, str(curve) if curve.is_file() else None)


@dataclass(frozen=True)
class _Requested:
    """The encoder a run asks for, after ``current`` is resolved in the model store."""

    name: str
    zero_shot: bool | None = None
    version: str | None = None
    fallback: Calibration | None = None
    topic_fallback: Calibration | None = None
    store_info: dict[str, Any] | None = None
    promoted_at: str | None = None


def promoted_in(folder: str | Path) -> tuple[ModelStore, Promoted | None]:
    """``--model current``'s model store, checked as every command reading it checks it (it is there, and
    is a store: not a folder nlsim wrote as something else, :meth:`ModelStore.check_kind`, nor a folder of
    the user's, :func:`check_a_store`), and its promoted version (``None``: none was promoted), from one
    read of its pointer (:meth:`ModelStore.promoted`).

    Example:
        >>> import tempfile
        >>> store, promoted = promoted_in(tempfile.mkdtemp())
        >>> promoted is None
        True
    """
    store = ModelStore(folder)
    missing = store.missing()
    if missing is not None:  # a threshold given is meant for the promoted model, not for zero-shot
        raise ConfigError(
            f"--model current: {missing}; give --model-store the folder `nlsim pipeline` filled (its "
            "--model-store, default models/ under the folder it ran in), or run `nlsim pipeline "
            f"--model-store {store.root}` to make one there"
        )
    store.check_kind()
    check_a_store(store)
    return store, store.promoted()  # CURRENT.json read once: a promotion meanwhile mixes no two versions


def _resolve_current(ms: ModelSettings) -> _Requested:
    """``--model current``: the store's promoted model, else zero-shot e5 with the store's zero-shot
    calibration."""
    store, promoted = promoted_in(ms.store)
    if promoted is not None:
        current, at = promoted.folder, promoted.promoted_at
        say(f"current model of {store.root}: {current.name}")
        return _Requested(str(current), False, current.name, store_info=store.info(current), promoted_at=at)
    fallback = load_calibration(store.zero_shot_dir())
    # the zero-shot model is the one the store's zero-shot calibration was made for
    name = (fallback.model if fallback is not None and fallback.model else None) or DEFAULT_MODEL
    say(
        f"no model has been promoted in {store.root} yet: using zero-shot {name}"
        + (" with the store's zero-shot calibration" if fallback is not None else "")
    )
    if fallback is None and ms.threshold is None and ms.calibration is None:
        raise ConfigError(
            f"--model current: no model was ever promoted in {store.root} and it has no zero-shot "
            "calibration; run `nlsim pipeline` (trains, evaluates and promotes a model) or pass "
            "--calibration FILE / --threshold X"
        )
    topic = load_calibration(store.zero_shot_dir() / TOPIC_CALIBRATION_JSON)
    return _Requested(name, True, None, fallback, topic)


def check_not_a_version(ms: ModelSettings) -> None:
    """Refuse ``--model v0002`` (a name like a version of the model store ``--model-store`` names, and no
    folder there is, nor a registry name) before it is looked up as a Hugging Face hub name, whose refusal
    says nothing of the store: name the version's folder and the promotion that makes it current, or the
    versions the store has. A store nlsim did not write is not read.

    Example:
        >>> import tempfile
        >>> store = ModelStore(tempfile.mkdtemp() + "/models")
        >>> store.claim()
        >>> check_not_a_version(ModelSettings(name="v0002", store=str(store.root)))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --model v0002: no such model folder, and not a registry name; model ...
    """
    name = ms.name
    if not VERSION_LIKE.match(name) or Path(name).exists() or name.lower() in ALIASES:
        return
    store = ModelStore(ms.store)
    if store.missing() is not None or not is_owned(store.root, "model-store"):
        return
    try:
        folder = store.named(name)
    except ConfigError as exc:
        raise ConfigError(f"--model {name}: no such model folder, and not a registry name; {exc}") from None
    quoted = shlex.quote(str(store.root))
    raise ConfigError(
        f"--model {name}: no such model folder, and not a registry name; {folder.name} is a version of the "
        f"model store {store.root}: give its folder (--model {shlex.quote(str(folder))}), or make it current "
        f"(nlsim models promote {folder.name} --model-store {quoted} --reason WHY) and run with --model "
        "current"
    )


STORE_NAMES = (MARKER, CURRENT, VERSIONS, HISTORY, ZERO_SHOT)
"""What a model store holds (:mod:`nlsim.io.model_store`): a folder holding none of them is no store."""


def check_a_store(store: ModelStore) -> None:
    """Refuse a ``--model-store`` folder that holds files but none a model store holds (a folder of the
    user's, given by mistake): read as a store where no model was ever promoted, it would run the zero-shot
    model, or send the user to train one there. An empty folder is a store not filled yet.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "notes.txt").write_text("mine")
        >>> check_a_store(ModelStore(folder))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --model current: model store '...' is not a model store nlsim wrote (...
    """
    names = held_names(store.root)
    if not names or any((store.root / name).exists() for name in STORE_NAMES):
        return
    more = f", ... ({len(names)} in all)" if len(names) > 3 else ""
    raise ConfigError(
        f"--model current: model store '{store.root}' is not a model store nlsim wrote (no {MARKER}, "
        f"{CURRENT} or {VERSIONS}/; it holds {', '.join(names[:3])}{more}); give --model-store the folder "
        "`nlsim pipeline` filled (its --model-store, default models/ under the folder it ran in)"
    )


def load_model(ms: ModelSettings, encoder: Any = None) -> ModelChoice:
    """The encoder (``current``: the store's promoted model, else zero-shot e5 with the store's zero-shot
    calibration), its reranker and the threshold; says which. A name like a version of the model store is
    refused, naming it (:func:`check_not_a_version`)."""
    if ms.name != CURRENT_MODEL and encoder is None:
        check_not_a_version(ms)
    asked = _resolve_current(ms) if ms.name == CURRENT_MODEL else _Requested(ms.name)
    if encoder is None:
        encoder = load_encoder(asked.name, backend=ms.backend, precision=ms.precision, threads=ms.threads)
    model_path = getattr(encoder, "path", None)
    reranker = _reranker_for(ms, model_path)
    threshold = resolve_threshold(ms, encoder, reranker, asked.fallback)
    if reranker is not None:
        check_threshold(threshold.value, "rerank threshold", low=-1.0, high=reranker.max_score())
    say(f"model {encoder.model_id}; {threshold.source}")
    store_zero_shot = asked.fallback is not None and threshold.calibration is asked.fallback
    topic_fallback = asked.topic_fallback if store_zero_shot else None
    topic = resolve_topic_threshold(ms, encoder, threshold, topic_fallback, reranker is not None)
    if topic is not None:
        say(f"topic groups: {topic.source}")
    folder = Path(model_path) if model_path is not None else None
    zero_shot = asked.zero_shot
    if zero_shot is None:
        zero_shot = folder is None or not (folder / "training.json").exists()
    info = ModelInfo(
        requested=ms.name,
        zero_shot=zero_shot,
        version=asked.version,
        promoted_at=asked.promoted_at,
        model_id=encoder.model_id,
        fingerprint=encoder.fingerprint,
        path=str(model_path) if model_path is not None else None,
        card=model_summary(folder, asked.store_info),
        threshold_calibration=threshold.calibration,
    )
    return ModelChoice(encoder, reranker, threshold, with_inference(info, encoder), topic)


def with_inference(info: ModelInfo, encoder: Any) -> ModelInfo:
    """``info`` with the encoder's inference path (backend, precision, why, the quality check): the one
    chosen, or torch fp32 where every job was too small to choose one for
    (:meth:`nlsim.encoders.encoder.Encoder.path_taken`); before any job, what was asked."""
    taken = getattr(encoder, "path_taken", None)
    choice = taken() if callable(taken) else getattr(encoder, "choice", None)
    if choice is not None:
        return replace(info, backend=choice.backend, precision=choice.precision, inference=choice.as_dict())
    options = getattr(encoder, "options", {}) or {}
    return replace(
        info,
        backend=options.get("backend", "torch"),
        precision=options.get("precision", "fp32"),
        inference=None,
    )
