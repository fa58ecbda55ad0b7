"""The training fingerprint: what a fine-tuned model was made from.

A model's fingerprint is the SHA-256 of three parts: the annotated pairs' content (each pair's id, texts,
score and split, in pair-id order: a file rewritten with other line endings, column order or row order is
the same content, a pair given in several rows under several ids named by the smallest; the pairs as
training reads them, :func:`nlsim.clusters.verdicts.training_pairs`, so a training pair an editor overruled
counts with the editor's newer score and an overrule that changes a score is another fingerprint), the base
model's fingerprint (its weights, tokenizer and settings), and the training
settings. The model store keeps the parts beside each version, so a run can say *what* changed since a
cached model.

Example:
    >>> import pandas as pd
    >>> pairs = pd.DataFrame({"pair_id": ["p1"], "text_a": ["a"], "text_b": ["b"], "score": [0.5],
    ...                       "split": ["train"]})
    >>> fp, parts = training_fingerprint(pairs, "base-fp", {"epochs": 2})
    >>> len(fp), sorted(parts)
    (64, ['annotations', 'base_model', 'training'])
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd

from nlsim.io.pairs import annotations_digest
from nlsim.training.config import FinetuneConfig
from nlsim.training.data import SMALLEST_IDS

NOT_TRAINING = (
    "pairs",
    "out",
    "threads",
    "side_by_side",
    "log_every",
    "progress_file",
    "eval_test",
    "eval_before",
    "precision_check",
)
"""FinetuneConfig settings (by flat name) that do not change the trained model."""


FP32_EPOCHS = ("fp32_epochs", "fp32_cross_encoder_epochs", "fp32_cross_encoder_frozen_layers")
"""FinetuneConfig settings that stand in for the epochs and frozen layers on a CPU without bf16 instructions:
the epochs and layers trained there are the setting (:func:`training_settings`), not these."""


def training_settings(cfg: FinetuneConfig, device: Any = None) -> dict[str, Any]:
    """The settings that decide the model trained from ``cfg`` on ``device`` (a CPU: this machine's): on a
    CPU without bf16 instructions the ``fp32_*`` epochs and frozen layers, where given, take the place of
    the asked ones, so a model trained so is another version; elsewhere they change nothing and are left
    out.

    Example:
        >>> settings = training_settings(FinetuneConfig())  # as asked: no device
        >>> settings["epochs"], settings["cross_encoder_epochs"], "fp32_epochs" in settings
        (2, 3, False)
    """
    used = (cfg if device is None else cfg.for_device(device)).parameters()
    settings = {k: v for k, v in cfg.parameters().items() if k not in NOT_TRAINING + FP32_EPOCHS}
    if not settings.get("story_model"):  # off: the models trained before it existed, the same versions
        settings.pop("story_model", None)
    if not settings.get("drop_easy"):  # off: the same versions as before it existed
        settings.pop("drop_easy", None)
        settings.pop("easy_sample", None)
    if not settings.get("cross_encoder_drop_easy"):  # off: its share of easy pairs changes nothing
        settings.pop("cross_encoder_drop_easy", None)
        settings.pop("cross_encoder_easy_sample", None)
    return {**settings, **{k: used[k] for k in cfg.fp32_settings()}}


def training_fingerprint(
    pairs: pd.DataFrame, base_fingerprint: str, settings: dict[str, Any]
) -> tuple[str, dict]:
    """``(fingerprint, parts)`` of a model trained on ``pairs`` from a base with ``base_fingerprint``: a pair
    given in several rows under several ids is named by the smallest of them (read for training,
    :func:`nlsim.training.data.read_for_training`, it keeps the first row's, and the rows re-sorted are the
    same pairs: the same version)."""
    names = pairs.attrs.get(SMALLEST_IDS) or {}
    if names:
        pairs = pairs.assign(pair_id=[names.get(str(i), i) for i in pairs["pair_id"]])
    parts = {
        "annotations": annotations_digest(pairs),
        "base_model": base_fingerprint,
        "training": json.loads(json.dumps(settings, sort_keys=True, default=str)),
    }
    blob = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest(), parts


GPU_ONLY = ("gpu_batch_size",)
"""Training settings (by flat name) that only a training on a GPU uses: on a CPU the same model is trained
whatever they say (:meth:`~nlsim.training.config.FinetuneConfig.for_device`)."""


def unused_on(device: Any) -> tuple[str, ...]:
    """The training settings that change nothing of a model trained on ``device`` (:data:`GPU_ONLY` on a
    CPU): a version trained with other values of them is the same model there. They stay in the
    fingerprint, which is every version's name and must not change under the versions already trained.

    Example:
        >>> unused_on("cpu"), unused_on("cuda:0")
        (('gpu_batch_size',), ())
    """
    kind = getattr(device, "type", str(device).split(":")[0])
    return GPU_ONLY if kind == "cpu" else ()


def auto_precision(device: Any) -> str:
    """The arithmetic ``--train-precision auto`` trains in on ``device`` (this machine's CPU, or a GPU):
    :func:`nlsim.training.mixed_precision.resolve`."""
    import torch  # deferred: heavy, loaded only when needed

    from nlsim.training.mixed_precision import resolve

    return resolve("auto", device if isinstance(device, torch.device) else torch.device(str(device)))[0]


def _auto_as_asked(old: dict[str, Any], new: dict[str, Any], auto_here: str | None) -> dict[str, Any]:
    """``new``'s parts with ``--train-precision auto`` read as ``auto_here`` (what it trains in on the
    machine) where ``old`` asked that precision by name: the same arithmetic, the same model. Not the other
    way: a version asked ``auto`` may have been trained in either, where it was trained not being kept."""
    was, now = old.get("training") or {}, new.get("training") or {}
    if auto_here is None or now.get("train_precision") != "auto" or was.get("train_precision") != auto_here:
        return new
    return {**new, "training": {**now, "train_precision": auto_here}}


def _named_apart(parts: dict[str, Any], unused: tuple[str, ...] = ()) -> dict[str, Any]:
    """The training settings less the base model's name (``model``): the same weights named otherwise (a
    short name, the full hub name, a folder) are the same base model, which its fingerprint decides; and
    less the ``unused`` settings (:func:`unused_on`)."""
    return {k: v for k, v in (parts.get("training") or {}).items() if k != "model" and k not in unused}


def same_training(
    old: dict[str, Any], new: dict[str, Any], unused: tuple[str, ...] = (), auto_here: str | None = None
) -> bool:
    """Whether two fingerprints' parts train the same model: the same annotations, the same base model (by
    its fingerprint, whatever its name) and the same settings, but for those the machine training it does
    not use (``unused``: :func:`unused_on`), and with ``new``'s ``--train-precision auto`` the precision
    it trains in there (``auto_here``: :func:`auto_precision`) where ``old`` asked that one by name.

    Example:
        >>> old = {"annotations": "a", "base_model": "b", "training": {"model": "m", "epochs": 2}}
        >>> same_training(old, {**old, "training": {"model": "org/m", "epochs": 2}})
        True
        >>> same_training(old, {**old, "training": {"model": "m", "epochs": 3}})
        False
        >>> a = {**old, "training": {"model": "m", "epochs": 2, "gpu_batch_size": 32}}
        >>> b = {**old, "training": {"model": "m", "epochs": 2, "gpu_batch_size": 64}}
        >>> same_training(a, b), same_training(a, b, unused_on("cpu"))
        (False, True)
        >>> fp32 = {**old, "training": {"model": "m", "train_precision": "fp32"}}
        >>> auto = {**old, "training": {"model": "m", "train_precision": "auto"}}
        >>> same_training(fp32, auto, auto_here="fp32"), same_training(auto, fp32, auto_here="fp32")
        (True, False)
    """
    new = _auto_as_asked(old, new, auto_here)
    return (
        old.get("annotations") == new.get("annotations")
        and old.get("base_model") == new.get("base_model")
        and _named_apart(old, unused) == _named_apart(new, unused)
    )


def what_changed(
    old: dict[str, Any], new: dict[str, Any], unused: tuple[str, ...] = (), auto_here: str | None = None
) -> list[str]:
    """Which parts differ between two fingerprints' parts (for the run's message), but for the settings the
    machine training does not use (``unused``: :func:`unused_on`) and ``auto_here`` as
    :func:`same_training` reads it."""
    new = _auto_as_asked(old, new, auto_here)
    out = []
    if old.get("annotations") != new.get("annotations"):
        out.append("the annotated pairs changed")
    if old.get("base_model") != new.get("base_model"):
        out.append("the base model changed")
    was, now = _named_apart(old, unused), _named_apart(new, unused)  # the base model's name: see above
    changed = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k))
    if changed:
        out.append("training settings changed: " + ", ".join(changed))
    return out
