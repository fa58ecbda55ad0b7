"""Flow ``learning-curve`` on a tiny curve: table, plot, and a rerun that trains nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from stsb_helpers import write_stsb_sample

from nlsim.training.config import LearningCurveConfig


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_stsb_sample(tmp_path_factory.mktemp("lcflow"), train=8, validation=8, test=8)


@pytest.mark.slow
def test_learning_curve_flow(
    prefect_harness,
    pairs_file: Path,
    tmp_path: Path,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    import nlsim.training.learning_curve
    from flows.learning_curve import learning_curve_flow

    cfg = LearningCurveConfig(
        pairs=str(pairs_file),
        out=str(tmp_path / "lc"),
        sizes=(4, 8),
        seeds=(1,),
        baselines=("tfidf-char2",),
        model="paraphrase-MiniLM-L3-v2",
        conversion="none",
        epochs=1,
        batch_size=4,
        max_length=32,
        threads=1,
    )
    first = learning_curve_flow(**dataclasses.asdict(cfg))
    assert first["points"] == 2
    assert Path(first["plot"]).read_bytes()[:4] == b"\x89PNG"
    assert "| 8 | 1 |" in Path(first["table"]).read_text(encoding="utf-8")

    def no_training(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a finished point was retrained")

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", no_training)
    assert learning_curve_flow(**dataclasses.asdict(cfg))["points"] == 2


def test_list_parameters_written_as_on_the_command_line_are_the_lists_they_name() -> None:
    """`prefect deployment run 'learning-curve/manual' --param sizes=350,700` (the schema takes "a,b,c", as
    the command line writes it): the sizes 350 and 700, not the characters of the text (refused as "a value
    twice", a seed "," a traceback, a baseline 'z' unknown)."""
    from flows.learning_curve import learning_curve_flow
    from nlsim.errors import ConfigError

    given = {"sizes": "350,700", "seeds": "1, 2", "baselines": "zero-shot,tfidf-char2"}
    params = learning_curve_flow.validate_parameters({"pairs": "p.tsv", "out": "lc", **given})
    cfg = LearningCurveConfig(**params)
    assert (cfg.sizes, cfg.seeds, cfg.baselines) == ((350, 700), (1, 2), ("zero-shot", "tfidf-char2"))
    assert LearningCurveConfig(**{**params, "baselines": ""}).baselines == ()
    with pytest.raises(ConfigError, match="--seeds: 'x' is not a whole number"):
        LearningCurveConfig(**{**params, "seeds": "1,x"})
