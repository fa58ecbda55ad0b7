"""The chain's configuration is composed of the fine-tuning and report configurations: an option it shares
with them has their default and help, and reaches the run it belongs to."""

from __future__ import annotations

from dataclasses import MISSING, fields

import pytest

from nlsim.chain.config import REPORT_FIELDS, TRAINING_FIELDS, PipelineConfig
from nlsim.dedup.config import DedupConfig
from nlsim.training.config import FinetuneConfig

OWNERS = [(name, FinetuneConfig) for name in TRAINING_FIELDS] + [
    (name, DedupConfig) for name in REPORT_FIELDS
]


def _field(cls: type, name: str):  # noqa: ANN202 - a dataclasses.Field
    return {f.name: f for f in fields(cls)}[name]


@pytest.mark.parametrize(("name", "owner"), OWNERS)
def test_a_shared_option_has_its_owners_default_and_help(name: str, owner: type) -> None:
    mine, theirs = _field(PipelineConfig, name), _field(owner, name)
    assert mine.metadata["help"] == theirs.metadata["help"]
    if theirs.default_factory is not MISSING:
        assert mine.default_factory() == theirs.default_factory()
    else:
        assert mine.default == theirs.default


def _other(value: object) -> object:
    """A valid value other than ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2
    if isinstance(value, tuple):
        return value[:1]
    return {
        "cosent": "mse",
        "auto": "fp32",
        "components": "support",
        "support": "components",
        "earliest": "central",
    }[value]


@pytest.mark.parametrize(("name", "owner"), OWNERS)
def test_a_shared_option_reaches_its_run(name: str, owner: type) -> None:
    default = _field(PipelineConfig, name).default
    value = {"window_hours": 48.0, "use_gpu": False}.get(name) if default is None else _other(default)
    cfg = PipelineConfig(**{name: value})
    made = cfg.finetune_config("m") if owner is FinetuneConfig else cfg.dedup_config("m")
    assert getattr(made, name) == value


def test_every_option_of_the_chain_is_its_own_or_composed() -> None:
    """An option the chain declares again, with the same name as a fine-tuning or report option, must be
    listed as composed (so that its value reaches the run)."""
    shared = {f.name for f in fields(PipelineConfig)} & (
        {f.name for f in fields(FinetuneConfig)} | {f.name for f in fields(DedupConfig)}
    )
    own = {"pairs", "corpus", "out", "model_store", "convert", "judge_split", "threads"}
    assert shared - own == set(TRAINING_FIELDS) | set(REPORT_FIELDS)
