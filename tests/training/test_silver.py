"""Silver pairs: the pool leaves held-out texts out, drawing never repeats annotated pairs, labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from stsb_helpers import stsb_sample, write_stsb_corpus

from nlsim.errors import ConfigError
from nlsim.training.config import FinetuneConfig, SilverConfig
from nlsim.training.finetune import SILVER_PARQUET, finetune
from nlsim.training.reranker import cosine_to_score_map
from nlsim.training.silver import draw_silver_pairs, label_silver_pairs, silver_pool


def random_unit(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_pool_drops_held_out_texts_and_duplicates() -> None:
    pool = silver_pool(["a", "b", "a", "c", "d"], held_out={"c"}, categories=["x", "y", "x", "z", "y"])
    assert pool["text"].tolist() == ["a", "b", "d"]
    assert pool["category"].tolist() == ["x", "y", "y"]


def test_draw_gives_ordered_unique_pairs_and_skips_annotated_ones() -> None:
    texts = [f"headline {i}" for i in range(40)]
    emb = random_unit(40)
    full = draw_silver_pairs(texts, emb, SilverConfig(anchors=40, seed=2), categories=["x", "y"] * 20)
    assert (full["a"] < full["b"]).all()
    assert not full.duplicated(["a", "b"]).any()
    assert set(full["source"]) <= {"semantic-near", "semantic-mid", "lexical", "same-category", "random"}
    assert "same-category" in set(full["source"])
    # the same draw with one of its pairs marked annotated: exactly that pair goes
    first = full.iloc[0]
    annotated = {tuple(sorted((texts[int(first["a"])], texts[int(first["b"])])))}
    again = draw_silver_pairs(texts, emb, SilverConfig(anchors=40, seed=2), ["x", "y"] * 20, annotated)
    keys = set(zip(again["a"], again["b"], strict=True))
    assert (int(first["a"]), int(first["b"])) not in keys
    assert len(again) == len(full) - 1


def test_draw_needs_three_texts_and_valid_settings() -> None:
    with pytest.raises(ConfigError, match="at least 3"):
        draw_silver_pairs(["a", "b"], random_unit(2), SilverConfig())
    with pytest.raises(ConfigError, match="teacher"):
        SilverConfig(teacher="oracle").check()


def test_a_missing_silver_corpus_fails_before_any_training(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no-such.tsv: no such file"):
        FinetuneConfig.of(silver_corpus=str(tmp_path / "no-such.tsv")).check()


def test_labels_follow_the_teacher() -> None:
    cross = np.array([0.2, 0.9])
    cos = np.array([0.80, 0.95])
    slope, intercept = cosine_to_score_map(np.array([0.8, 0.9, 1.0]), np.array([0.0, 0.5, 1.0]))
    assert (slope, intercept) == (5.0, -4.0)
    np.testing.assert_allclose(label_silver_pairs(cross, cos, "cross-encoder"), [0.2, 0.9])
    # ensemble: mean of 0.2 and 5*0.80-4 = 0 -> 0.1; of 0.9 and 0.75 -> 0.825
    np.testing.assert_allclose(label_silver_pairs(cross, cos, "ensemble", (slope, intercept)), [0.1, 0.825])
    clipped = label_silver_pairs(np.array([0.5]), np.array([2.0]), "ensemble", (1, 0))  # 0.5*0.5 + 0.5*2
    np.testing.assert_allclose(clipped, [1.0])
    with pytest.raises(ConfigError, match="cosines"):
        label_silver_pairs(cross, None, "ensemble")


@pytest.mark.slow
def test_finetune_with_silver_pairs_never_draws_held_out_texts(tmp_path: Path) -> None:
    pairs = stsb_sample(train=24, validation=12, test=8)
    held = set(pairs.loc[pairs["split"] != "train", ["text_a", "text_b"]].to_numpy().ravel())
    corpus = write_stsb_corpus(tmp_path / "corpus.tsv", skip=24, n=56, extra=sorted(held))
    cfg = FinetuneConfig.of(
        model="paraphrase-MiniLM-L3-v2",
        conversion="none",
        epochs=1,
        batch_size=8,
        max_length=48,
        out=str(tmp_path / "model"),
        eval_test=False,
        eval_before=False,
        calibrate_level=None,
        threads=1,
        log_every=0,
        silver_corpus=str(corpus),
        silver_anchors=20,
        cross_encoder_epochs=1,
        reranker=False,
    )
    res = finetune(cfg, pairs=pairs, log=lambda _: None)
    silver = pd.read_parquet(tmp_path / "model" / SILVER_PARQUET)
    assert len(silver) == res.silver["pairs"] > 20
    assert not (set(silver["text_a"]) | set(silver["text_b"])) & held
    assert silver["score"].between(0, 1).all() and (silver["split"] == "train").all()
    assert res.n_train == 24
    assert res.steps == int(np.ceil((24 + len(silver)) / 8))
    assert str(corpus) in res.data_files
    assert "Silver pairs:" in (tmp_path / "model" / "README.md").read_text()
