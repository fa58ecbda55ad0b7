"""The moving average of the trained weights: what validation reads is what training keeps and hands on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from stsb_helpers import stsb_sample

from nlsim.training.bi_encoder import train_encoder
from nlsim.training.config import CrossEncoderConfig
from nlsim.training.cross_encoder import train_cross_encoder
from nlsim.training.weight_average import WeightAverage
from tests.training.test_bi_encoder import FAST_MODEL, cfg, weights_hash


@pytest.fixture(scope="module")
def small_pairs() -> pd.DataFrame:
    return stsb_sample(train=32, validation=16, test=16)


def test_the_average_follows_the_steps_and_the_stepped_weights_come_back() -> None:
    w = torch.nn.Parameter(torch.zeros(3))
    changed: list[int] = []
    average = WeightAverage([w], decay=0.9, changed=lambda: changed.append(1))
    expected = np.zeros(3)
    for step in range(1, 40):
        with torch.no_grad():
            w.add_(1.0)
        average.update()
        decay = min(0.9, (1 + step) / (10 + step))
        expected = decay * expected + (1 - decay) * w.detach().numpy()
    with average.applied():
        assert np.allclose(w.detach().numpy(), expected) and expected[0] < 39.0
    assert w.tolist() == [39.0] * 3 and len(changed) == 2  # in, then out: a compiled runner reads them again
    with pytest.raises(ValueError, match="decay"):
        WeightAverage([w], decay=1.0)


def test_the_bi_encoder_keeps_the_averaged_weights_it_validated(small_pairs: pd.DataFrame) -> None:
    from nlsim.encoders import load_encoder

    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    plain, averaged = load_encoder(FAST_MODEL), load_encoder(FAST_MODEL)
    train_encoder(plain, train, val, cfg(epochs=2), log=lambda _: None)
    out = train_encoder(averaged, train, val, cfg(epochs=2, weight_average=0.8), log=lambda _: None)
    assert weights_hash(plain.model) != weights_hash(averaged.model)
    kept = out["validation_embeddings"]  # what validation read: the averaged weights, as they are left
    assert np.allclose(np.stack(list(kept.values())), averaged.encode(list(kept), progress=False), atol=1e-6)


def test_the_cross_encoder_keeps_the_averaged_weights_it_validated(small_pairs: pd.DataFrame) -> None:
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    base = dict(epochs=2, batch_size=8, threads=1, log_every=0, seed=5, temperature_lr=1e-2)
    plain = train_cross_encoder(FAST_MODEL, train, val, CrossEncoderConfig(**base), log=lambda _: None)
    run = train_cross_encoder(
        FAST_MODEL, train, val, CrossEncoderConfig(**base, weight_average=0.8), log=lambda _: None
    )
    predicted = run.ce.predict(val["text_a"].tolist(), val["text_b"].tolist(), progress=False)
    assert np.allclose(run.validation_scores, predicted, atol=1e-5)
    assert not np.allclose(run.validation_scores, plain.validation_scores, atol=1e-4)
