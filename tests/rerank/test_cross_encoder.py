"""The cross-encoder teacher, with the small English model on a few dozen STS-B pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from stsb_helpers import stsb_sample

from nlsim.errors import ConfigError
from nlsim.rerank.cross_encoder import CrossEncoder
from nlsim.rerank.onnx import cross_encoder_backend
from nlsim.training.config import CrossEncoderConfig
from nlsim.training.cross_encoder import train_cross_encoder

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


@pytest.fixture(scope="module")
def small_pairs() -> pd.DataFrame:
    return stsb_sample(train=48, validation=16, test=0)


@pytest.fixture(scope="module")
def trained(small_pairs: pd.DataFrame) -> tuple[CrossEncoder, list[dict]]:
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    cfg = CrossEncoderConfig(epochs=3, batch_size=8, lr=1e-4, threads=1, log_every=0, seed=3)
    return train_cross_encoder(FAST_MODEL, train, val, cfg, log=lambda _: None)


def test_training_lowers_the_loss_and_keeps_the_best_epoch(
    trained: tuple[CrossEncoder, list[dict]], small_pairs: pd.DataFrame
) -> None:
    from scipy.stats import spearmanr

    ce, history = trained
    assert [h["epoch"] for h in history] == [1, 2, 3]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    val = small_pairs[small_pairs["split"] == "validation"]
    rho = spearmanr(ce.predict(val["text_a"].tolist(), val["text_b"].tolist()), val["score"]).statistic
    assert round(float(rho) * 100, 2) == max(h["spearman"] for h in history)


def test_scores_are_symmetric_probabilities(trained: tuple[CrossEncoder, list[dict]]) -> None:
    ce, _ = trained
    a = ["A man is playing a guitar.", "Stocks fell sharply today.", "short"]
    b = ["Someone plays the guitar.", "A cat sleeps on the sofa.", "a somewhat longer second text"]
    ab, ba = ce.predict(a, b, batch_size=2), ce.predict(b, a, batch_size=3)
    assert ab.shape == (3,) and ((ab > 0) & (ab < 1)).all()
    np.testing.assert_allclose(ab, ba, atol=1e-5)


def test_mismatched_inputs_and_bad_settings_are_rejected(trained: tuple[CrossEncoder, list[dict]]) -> None:
    ce, _ = trained
    with pytest.raises(ConfigError, match="texts_a"):
        ce.predict(["a", "b"], ["c"])
    with pytest.raises(ConfigError, match="epochs"):
        CrossEncoderConfig(epochs=0).check()


def test_onnx_runner_gives_torch_scores(
    trained: tuple[CrossEncoder, list[dict]],
    small_pairs: pd.DataFrame,
    tmp_path,
    monkeypatch,  # noqa: ANN001
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    ce, _ = trained
    ce._onnx_runner = None
    a, b = small_pairs["text_a"].tolist(), small_pairs["text_b"].tolist()
    assert cross_encoder_backend(ce, 4) is None  # a small job stays on torch
    ref = ce.predict(a, b)
    runner = cross_encoder_backend(ce, len(a), "onnx")
    got = ce.predict(a, b, batch_size=16, runner=runner)
    assert runner is not None and list((tmp_path / "onnx").glob("ce-*/model.onnx"))
    np.testing.assert_allclose(got, ref, atol=1e-5)
    ce._onnx_runner = None
