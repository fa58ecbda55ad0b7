"""Metrics: Spearman/Pearson x100, MSE and MAE of the cosine; conversion applied before scoring."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlsim.errors import InputError
from nlsim.evaluation.metrics import (
    check_scorable,
    check_scores_differ,
    evaluate,
    metrics_from_scores,
    metrics_table,
)


def test_metrics_values() -> None:
    m = metrics_from_scores(np.array([0.2, 0.4, 0.6, 1.0]), np.array([0.0, 0.5, 0.25, 1.0]))
    assert m.spearman == pytest.approx(80.0)
    assert m.mse == pytest.approx(np.mean([0.04, 0.01, 0.1225, 0.0]), abs=1e-4)
    assert m.mae == pytest.approx(np.mean([0.2, 0.1, 0.35, 0.0]), abs=1e-4)
    assert m.n == 4


def test_evaluate_converts_before_scoring() -> None:
    pairs = pd.DataFrame({"text_a": ["軟體", "軟體"], "text_b": ["软件", "硬件"], "score": [1.0, 0.0]})
    seen: list[list[str]] = []

    def scorer(a: list[str], b: list[str]) -> np.ndarray:
        seen.append(list(a))
        return np.array([1.0 if x == y else 0.0 for x, y in zip(a, b, strict=True)])

    assert evaluate(scorer, pairs, "tw2sp").spearman == pytest.approx(100.0)
    assert seen[-1] == ["软件", "软件"]
    assert np.isnan(evaluate(scorer, pairs, "none").spearman)  # constant prediction: undefined
    assert "| spearman |" in metrics_table([{"model": "x", **evaluate(scorer, pairs, "tw2sp").as_dict()}])


def test_encoder_cosine_matches_numpy(fast_encoder) -> None:  # noqa: ANN001
    pairs = pd.DataFrame(
        {
            "text_a": ["a cat sits", "stocks fall", "a cat sits"],
            "text_b": ["a kitten sits", "it rains", "markets drop"],
            "score": [1.0, 0.0, 0.2],
        }
    )
    emb = fast_encoder.encode(
        ["a cat sits", "a kitten sits", "stocks fall", "it rains", "markets drop"], progress=False
    )
    cos = np.array([emb[0] @ emb[1], emb[2] @ emb[3], emb[0] @ emb[4]])
    m = evaluate(fast_encoder, pairs, "none")
    assert m.mse == pytest.approx(float(np.mean((cos - pairs["score"].to_numpy()) ** 2)), abs=1e-4)


def test_pair_texts_are_scored_and_trained_on_as_a_dedup_run_gives_them_to_the_model() -> None:
    """A pair file's text with an HTML entity or markup (``正源&#8226;尚峰``, three in the bundled pair file)
    was scored, trained and calibrated on as written, where a dedup run gives the model the text a page
    shows (``正源•尚峰``): a model learnt ``&#8226;`` and was judged on texts it never reads in a report.
    Pair texts go through the same reading (:func:`nlsim.io.cells.model_text`) before conversion."""
    from nlsim.evaluation.metrics import pair_similarities
    from nlsim.training.data import convert_pairs

    seen: list[str] = []

    def scorer(a: list[str], b: list[str]) -> np.ndarray:
        seen.extend(a + b)
        return np.ones(len(a))

    pairs = pd.DataFrame(
        {
            "text_a": ["正源&#8226;尚峰", "<b>Storm</b>\x0bwarning"],
            "text_b": ["AT&amp;T", "rain"],
            "score": [1.0, 0.0],
        }
    )
    pair_similarities(scorer, pairs, "none")
    assert seen == ["正源•尚峰", "Storm warning", "AT&T", "rain"]
    converted = convert_pairs(pairs, "none")
    assert converted["text_a"].tolist() == ["正源•尚峰", "Storm warning"]
    assert converted["orig_text_a"].tolist() == pairs["text_a"].tolist()  # the file's text kept as written


def test_pearson_is_not_spearman_and_input_must_be_one_dimensional_and_equal_in_length() -> None:
    m = metrics_from_scores(np.array([0.1, 0.2, 0.9]), np.array([0.0, 0.5, 1.0]))
    assert m.spearman == 100.0 and m.pearson == 91.77
    with pytest.raises(ValueError, match="1-d"):
        metrics_from_scores(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="equal in length"):
        metrics_from_scores(np.zeros(2), np.zeros(3))


def test_check_scorable_needs_three_pairs_with_differing_scores() -> None:
    check_scorable(pd.DataFrame({"score": [0.0, 0.5, 1.0]}), "p.tsv")
    with pytest.raises(InputError, match=r"2 pair\(s\) in the file"):
        check_scorable(pd.DataFrame({"score": [0.0, 1.0]}), "p.tsv")
    with pytest.raises(InputError, match="all have the score 0.5"):
        check_scorable(pd.DataFrame({"score": [0.5, 0.5, 0.5]}), "p.tsv", "test")
    check_scores_differ(pd.DataFrame({"score": []}), "p.tsv")


def test_metrics_table_columns_and_undefined_cells() -> None:
    table = metrics_table([{"model": "m", "spearman": float("nan"), "pearson": 80.123, "mse": 0.25}])
    assert table.splitlines()[0] == "| model | spearman | pearson | mse |"
    assert table.splitlines()[2] == "| m | undefined | 80.12 | 0.2500 |"
