"""What fine-tuning hands its caller besides the model: the base model's figures from the caller's own
scores, and the trained model's scores of its validation pairs, as the saved model gives them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from stsb_helpers import small_reranker_config, stsb_sample

from nlsim.encoders import load_encoder
from nlsim.encoders.scoring import known_scores
from nlsim.evaluation.metrics import pair_similarities
from nlsim.rerank.reranker import load_reranker
from nlsim.training.finetune import finetune


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return stsb_sample(train=32, validation=24, test=16)


def test_the_callers_scores_of_the_base_model_stand_for_a_second_pass_when_they_cover_a_split(
    pairs: pd.DataFrame, tmp_path: Path
) -> None:
    held = pairs[pairs["split"].isin(["validation", "test"])]
    made_up = -held["score"].to_numpy()  # no model scores like this: the figures show whose they are
    known = known_scores(held["text_a"], held["text_b"], made_up)
    settings = {"eval_before": True, "reranker": False, "calibrate_level": None}
    given = finetune(small_reranker_config(tmp_path / "a", **settings), pairs=pairs, before=known)
    assert given.metrics["before/validation"]["spearman"] == -100.0
    assert given.metrics["before/test"]["spearman"] == -100.0
    first_test_pair = (held["text_a"].iloc[-1], held["text_b"].iloc[-1])
    partial = {k: v for k, v in known.items() if k != first_test_pair}  # test no longer covered
    mixed = finetune(small_reranker_config(tmp_path / "b", **settings), pairs=pairs, before=partial)
    assert mixed.metrics["before/validation"]["spearman"] == -100.0
    base = load_encoder("paraphrase-MiniLM-L3-v2")
    base.max_length = 48
    test = pairs[pairs["split"] == "test"]
    expected = 100 * spearmanr(pair_similarities(base, test), test["score"]).statistic
    assert mixed.metrics["before/test"]["spearman"] == pytest.approx(expected, abs=0.01)


def test_the_trained_models_validation_scores_are_what_the_saved_model_gives_them(
    pairs: pd.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "model"
    result = finetune(small_reranker_config(out), pairs=pairs)
    own = result.validation_scores
    assert own is not None and own.scorer == "reranker"
    reranker = load_reranker(out)
    assert reranker is not None and reranker.calibration is not None
    assert (own.threshold, own.level) == (reranker.calibration["threshold"], 0.6)
    validation = pairs[pairs["split"] == "validation"]
    saved = pair_similarities(reranker.scorer(load_encoder(str(out))), validation)
    ours = np.array([own.scores[i] for i in validation["pair_id"].astype(str)])
    assert np.allclose(ours, saved, atol=1e-5)
    assert "validation_scores" not in result.as_dict()  # training.json keeps figures, not every score
    cosine_only = finetune(small_reranker_config(tmp_path / "cosine", reranker=False), pairs=pairs)
    assert cosine_only.validation_scores is not None and cosine_only.validation_scores.scorer == "cosine"


def test_scoring_the_trained_model_on_validation_and_fitting_its_reranker_embed_no_text_again(
    pairs: pd.DataFrame, tmp_path: Path
) -> None:
    # training's last validation pass embedded validation with the weights it leaves, and training holds
    # the training texts' frozen states: calibration, the after-figures and the reranker's line take those
    encoder = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    real, trained, after = encoder.encode, [False], []

    def spy(texts: list[str], *args: object, **kwargs: object) -> np.ndarray:
        if trained[0]:
            after.extend(texts)
        return real(texts, *args, **kwargs)

    def call(name: str, fn, *args: object, **kwargs: object):  # noqa: ANN001, ANN202 - a stage runner
        out = fn(*args, **kwargs)
        trained[0] = trained[0] or name == "train"
        return out

    encoder.encode = spy  # type: ignore[method-assign]
    config = small_reranker_config(tmp_path / "m", precision_check=False)
    result = finetune(config, pairs=pairs, encoder=encoder, call=call)
    validation = pairs[pairs["split"] == "validation"]
    train, test = pairs[pairs["split"] == "train"], pairs[pairs["split"] == "test"]
    held = set(validation["text_a"]) | set(validation["text_b"])
    assert not set(after) & (held | set(train["text_a"]) | set(train["text_b"]))
    assert set(test["text_a"]) - held <= set(after)  # the test split is embedded: the spy sees the scoring
    fresh = 100 * spearmanr(pair_similarities(encoder, validation), validation["score"]).statistic
    assert result.metrics["after/validation"]["spearman"] == pytest.approx(fresh, abs=0.005)  # 2 decimals
