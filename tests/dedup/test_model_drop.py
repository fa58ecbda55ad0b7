"""A daily run refuses a model whose recorded same-story F1 is much lower than that of the model of the
state's last run (``--model-store`` pointed at another store whose first version beat only its own
zero-shot base), unless ``--accept-model-drop``; a comparable model goes on without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.errors import ConfigError
from nlsim.io.manifest import saved_folder
from nlsim.io.model_store import ModelStore
from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus


def promoted_store(folder: Path, f1: float, digest: str) -> Path:
    """A store whose one version is promoted, its figures on validation as the chain records them."""
    store = ModelStore(folder)
    store.claim()
    version = store.new_version_dir(digest * 8)
    with saved_folder(version, "model") as tmp:
        (tmp / "config.json").write_text("{}")
    figures = {"scorer": "reranker", "spearman": 80.0, "threshold": 0.75, "f1": f1, "cv_f1": f1, "n": 492}
    store.register(version, {"fingerprint": digest * 8, "validation": {f"{digest}:tw2sp:1.0": figures}})
    store.promote(version, "beats its zero-shot base")
    return folder


def encoder(store: Path, dim: int) -> HashEncoder:
    """A quick encoder standing for the store's current version (loaded from its folder, as runs load it)."""
    enc = HashEncoder(dim)
    enc.path = str(ModelStore(store).current())  # type: ignore[misc]
    return enc


def config(day: Path, out: Path, store: Path, **kw: object) -> DedupConfig:
    return DedupConfig.of(
        corpus=day,
        out=out,
        model="current",
        model_store=str(store),
        convert="none",
        threshold=0.7,
        cache=False,
        progress=False,
        save_index=False,
        text_fields=("title",),
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.slow
def test_a_daily_run_refuses_a_model_far_below_the_last_runs_unless_asked(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    chinese = promoted_store(tmp_path / "models", 0.44, "a")
    english = promoted_store(tmp_path / "models-en", 0.30, "b")
    state, out = tmp_path / "state", tmp_path / "out"
    first = run_daily(config(days[0], out, chinese), state, encoder=encoder(chinese, 256))
    assert first.stats.info.version == "v0001-aaaaaaaa"
    manifest = (state / "MANIFEST.json").read_bytes()
    latest = (out / "LATEST").read_text()

    with pytest.raises(ConfigError) as refused:
        run_daily(config(days[1], out, english), state, encoder=encoder(english, 128))
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(
        "model v0001-bbbbbbbb has same-story F1 0.300 (its store evaluation on 492 validation pairs), 0.140 "
        "below the 0.440 of v0001-aaaaaaaa, the model of this state's last run"
    )
    assert "each on its own latest validation pairs" in line and "--accept-model-drop" in line
    # the rollback as it can be run: the command takes a store and refuses a move without a reason
    assert "nlsim models rollback --model-store STORE --reason WHY" in line
    assert (state / "MANIFEST.json").read_bytes() == manifest and (out / "LATEST").read_text() == latest

    accepted = run_daily(
        config(days[1], out, english, state=str(state), accept_model_drop=True),
        state,
        encoder=encoder(english, 128),
    )
    said = [m for m in accepted.stats.messages if "as --accept-model-drop asks" in m]
    assert len(said) == 1 and accepted.stats.model_switch is not None
    saved = json.loads((state / "runs" / f"{accepted.run_id}.json").read_text())
    assert saved["parameters" if "parameters" in saved else "messages"]  # the run was committed

    # back to a model within 0.10 of the last run's (0.38 against 0.30: a rise): no word, no refusal
    close = promoted_store(tmp_path / "models-close", 0.38, "c")
    third = run_daily(config(days[2], out, close), state, encoder=HashEncoder(64))
    assert not [m for m in third.stats.messages if "same-story F1" in m]


def test_accept_model_drop_needs_a_state(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--accept-model-drop works on a daily state"):
        DedupConfig.of(corpus="c.csv", out=str(tmp_path / "o"), threshold=0.9, accept_model_drop=True)


def test_an_f1_recorded_on_one_pair_is_said_in_the_singular() -> None:
    """A model's F1 recorded on one pair read "its store evaluation on 1 validation pairs" (and "its
    threshold's calibration on 1 validation pairs"); both now count the one pair."""
    from nlsim.dedup.model_drop import recorded_f1s
    from nlsim.evaluation.calibration import Calibration
    from nlsim.report.record import ModelCard, ModelInfo

    store = ModelInfo(card=ModelCard(store={"validation": {"v1": {"f1": 0.5, "n": 1}}}))
    assert [f.source for f in recorded_f1s(store)] == ["its store evaluation on 1 validation pair"]
    cal = Calibration(threshold=0.8, level=1.0, precision=1, recall=1, f1=1, n=1, n_positive=1)
    assert [f.source for f in recorded_f1s(ModelInfo(threshold_calibration=cal))] == [
        "its threshold's calibration on 1 validation pair"
    ]
    many = ModelInfo(card=ModelCard(store={"validation": {"v1": {"f1": 0.5, "n": 1234}}}))
    assert [f.source for f in recorded_f1s(many)] == ["its store evaluation on 1,234 validation pairs"]


def _model(name: str, *entries: tuple[str, float | None], cal_f1: float | None = None):  # noqa: ANN202
    """A run's model: its store entries (key, F1) oldest first, and the F1 of its threshold's calibration."""
    from nlsim.evaluation.calibration import Calibration
    from nlsim.report.record import ModelCard, ModelInfo

    store = {"validation": {k: {"f1": f1, "n": 400} for k, f1 in entries}} if entries else None
    cal = None
    if cal_f1 is not None:
        cal = Calibration(threshold=0.8, level=1.0, precision=1, recall=1, f1=cal_f1, n=50, n_positive=9)
    return ModelInfo(version=name, fingerprint=name, card=ModelCard(store=store), threshold_calibration=cal)


def test_a_drop_of_the_limit_itself_goes_on_and_a_run_before_fingerprints_is_not_compared() -> None:
    from nlsim.dedup.model_drop import model_drop
    from nlsim.report.record import ModelInfo

    assert model_drop(_model("v1", ("k", 0.40)), _model("v2", ("k", 0.30))) is None  # 0.10: not more
    assert model_drop(_model("v1", ("k", 0.41)), _model("v2", ("k", 0.30))) is not None
    before_fingerprints = ModelInfo(version="v1", fingerprint="", card=_model("v1", ("k", 0.90)).card)
    assert model_drop(before_fingerprints, _model("v2", ("k", 0.30))) is None


def test_the_drop_is_read_on_the_latest_validation_pairs_both_models_were_scored_on() -> None:
    from nlsim.dedup.model_drop import model_drop

    # both scored on k1 and k2 (k2 the later): on k2 the new model is 0.05 lower, on k1 0.3
    last = _model("v1", ("k1", 0.70), ("k2", 0.50))
    assert model_drop(last, _model("v2", ("k1", 0.40), ("k2", 0.45))) is None
    # no pairs in common: each model's latest figure
    assert model_drop(_model("v1", ("k1", 0.90), ("k2", 0.35)), _model("v2", ("k3", 0.30))) is None


def test_a_store_figure_comes_before_the_calibrations_and_an_empty_one_is_no_figure() -> None:
    from nlsim.dedup.model_drop import recorded_f1s

    both = recorded_f1s(_model("v1", ("k", 0.6), cal_f1=0.2))
    assert [(f.value, f.key) for f in both] == [(0.6, "k")]
    empty = recorded_f1s(_model("v1", ("k", None), cal_f1=0.2))
    assert [(f.value, f.key) for f in empty] == [(0.2, None)]
