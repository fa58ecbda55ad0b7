"""A daily run's guard against a much weaker model: the model's recorded same-story F1 against that of the
model of the state's last run.

A daily run after a change of model (a promotion, or ``--model-store`` pointed at another store) compares
the two models' same-story F1 on the editors' validation pairs, as recorded, and refuses to go on when its
own is more than :data:`MAX_F1_DROP` lower, unless ``--accept-model-drop`` is given: a store's first version
is promoted when it beats its own zero-shot base, which says nothing of how it does on this newsroom's
stories, and a weak model makes hundreds of meaningless clusters in the window it embeds again.

Where the figures live: a model-store version keeps its evaluation in its ``store.json`` (``validation``:
one entry per set of validation pairs, conversion and level, keyed so, with the same-story F1 at the
model's own threshold, ``f1``), and a run's record keeps that ``store.json`` as its model's card
(``model_info.card.store``), so the state's last run record carries its model's figures. A model with no
store entry (the zero-shot model with the store's zero-shot calibration, a model folder, a
``--calibration`` file) has the F1 of the calibration behind its threshold (``threshold_calibration``, on
the pairs it was calibrated on). The cluster-level F1 of a judged report is not kept per version (it is in
the report's ``run.json`` and the chain's ``pipeline.json``), so the same-story F1 at the threshold is what
is compared: on the same validation pairs when both models were evaluated on them, else each model's
latest figure, and the line says so. A model with no recorded figure (a ``--threshold`` given by hand) is
not compared.

Example:
    >>> from nlsim.report.record import ModelCard, ModelInfo
    >>> def version(name, f1):
    ...     store = {"validation": {"d:none:1.0": {"f1": f1, "n": 492}}}
    ...     return ModelInfo(requested="current", version=name, fingerprint=name, card=ModelCard(store=store))
    >>> drop = model_drop(version("v0002-1a2b3c4d", 0.44), version("v0001-9f8e7d6c", 0.30))
    >>> round(drop.points, 2), drop.same_pairs
    (0.14, True)
    >>> model_drop(version("v0002-1a2b3c4d", 0.44), version("v0003-5e6f7a8b", 0.40)) is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nlsim.evaluation.figures import split_pairs
from nlsim.progress import counted
from nlsim.report.record import ModelInfo

MAX_F1_DROP = 0.10
"""How much lower (in F1) a daily run's model may score than the last run's before the run is refused."""


@dataclass(frozen=True)
class RecordedF1:
    """A model's same-story F1 as recorded, and where: ``key`` names the validation pairs, conversion and
    level of a store entry (``None``: the F1 of its threshold's calibration)."""

    value: float
    source: str
    key: str | None = None


def model_name(info: ModelInfo) -> str:
    """The model as a line names it: its store version, else its id."""
    return info.version or info.model_id or info.requested or "?"


def recorded_f1s(info: ModelInfo) -> list[RecordedF1]:
    """The model's recorded same-story F1s, oldest first: its store entry's evaluations, else the F1 of
    the calibration behind its threshold (none: nothing recorded)."""
    store: dict[str, Any] = info.card.store or {}
    found = []
    for key, figures in (store.get("validation") or {}).items():
        if isinstance(figures, dict) and figures.get("f1") is not None:
            n = figures.get("n")
            pairs = f"{n} validation pairs" if n else "its validation pairs"  # n as the store entry holds it
            if isinstance(n, int) and not isinstance(n, bool) and n:
                pairs = counted(n, "validation pair", "validation pairs")
            found.append(RecordedF1(float(figures["f1"]), f"its store evaluation on {pairs}", str(key)))
    cal = info.threshold_calibration
    if not found and cal is not None:
        pairs = split_pairs(cal.split, "pair" if cal.n == 1 else "pairs")
        found.append(RecordedF1(float(cal.f1), f"its threshold's calibration on {cal.n} {pairs}"))
    return found


@dataclass(frozen=True)
class ModelDrop:
    """A daily run's model scoring lower than the last run's: both figures, and whether they were measured
    on the same validation pairs."""

    before: RecordedF1
    after: RecordedF1
    last_model: str
    model: str
    same_pairs: bool

    @property
    def points(self) -> float:
        return self.before.value - self.after.value

    def describe(self) -> str:
        where = (
            "on the same validation pairs" if self.same_pairs else "each on its own latest validation pairs"
        )
        return (
            f"model {self.model} has same-story F1 {self.after.value:.3f} ({self.after.source}), "
            f"{self.points:.3f} below the {self.before.value:.3f} of {self.last_model}, the model of this "
            f"state's last run ({self.before.source}; compared {where})"
        )


def model_drop(last: ModelInfo, info: ModelInfo, limit: float = MAX_F1_DROP) -> ModelDrop | None:
    """The drop from ``last`` (the model of the state's last run) to ``info`` (this run's) when this run's
    model is another one and its recorded F1 is more than ``limit`` lower; else ``None``."""
    if not last.fingerprint or last.fingerprint == info.fingerprint:
        return None
    before, after = recorded_f1s(last), recorded_f1s(info)
    if not before or not after:
        return None
    keys = {f.key for f in before if f.key is not None} & {f.key for f in after if f.key is not None}
    same = bool(keys)
    if same:
        key = next(f.key for f in reversed(after) if f.key in keys)
        b = next(f for f in reversed(before) if f.key == key)
        a = next(f for f in reversed(after) if f.key == key)
    else:
        b, a = before[-1], after[-1]
    if b.value - a.value <= limit + 1e-12:
        return None
    return ModelDrop(b, a, model_name(last), model_name(info), same)


def refusal(drop: ModelDrop, limit: float = MAX_F1_DROP) -> str:
    """The one line a refused run ends with."""
    return (
        f"{drop.describe()}: more than {limit:.2f} lower, so this daily run stops before it embeds its "
        "window again; check --model and --model-store, roll the store back (nlsim models rollback "
        "--model-store STORE --reason WHY), or run again with --accept-model-drop to use this model anyway"
    )
