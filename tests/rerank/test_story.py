"""The story model: its features, its fit on validation, its floor, and a report that it decides."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from stsb_helpers import small_reranker_config, stsb_sample

from nlsim.encoders.registry import load_encoder
from nlsim.encoders.scoring import as_pair_scorer
from nlsim.io.pairs import count_once
from nlsim.rerank.reranker import Reranker, load_reranker
from nlsim.rerank.story import (
    FEATURES,
    BigramIdf,
    StoryModel,
    cross_logits,
    fit_story_model,
    pair_features,
)
from nlsim.training.finetune import FinetuneResult, finetune

TEXTS = ["恒指全日跌53點報21330", "恒指全日漲12點", "京貿國際城在售", "佳能600D套機報4399元"]


def named(a: str, b: str) -> dict[str, float]:
    return dict(zip(FEATURES[2:], pair_features(a, b, BigramIdf.of(TEXTS)), strict=True))


def test_the_features_read_a_replaced_figure_a_shared_name_and_the_veto() -> None:
    series = named("恒指全日跌53點報21330", "恒指全日跌53點報15509")
    assert series["template"] == 1.0 and series["veto"] == 1.0 and series["numbers_shared"] == 1.0
    assert series["numbers_conflict"] == 0.0 and series["template_overlap"] == 1.0
    other = named("京貿國際城19800元", "京貿國際城在售")
    assert other["veto"] == 0.0 and other["template"] == 0.0 and other["longest_shared"] == 5.0
    assert named("2011年考研", "2010年考研")["numbers_conflict"] == 1.0
    assert (
        named("京貿國際城", "京貿國際城在售")["bigram_overlap"]
        > named("恒指全日", "恒指全日漲")["bigram_overlap"]
    )


def synthetic(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str], list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    same = rng.random(n) < 0.3
    cross = np.clip(np.where(same, 0.85, 0.55) + rng.normal(0, 0.12, n), 0.01, 0.99)
    cosine = np.where(same, 0.93, 0.88) + rng.normal(0, 0.03, n)
    a = [f"新聞{i}報{rng.integers(10, 99)}點" for i in range(n)]
    b = [f"新聞{i}報{rng.integers(10, 99)}點" if s else f"消息{i}" for i, s in enumerate(same)]
    return cross, cosine, a, b, same


def test_a_fit_needs_both_classes_and_gives_every_pair_a_cross_fitted_probability() -> None:
    cross, cosine, a, b, same = synthetic()
    idf = BigramIdf.of(a + b)
    fit = fit_story_model(cross, cosine, a, b, same, idf)
    assert fit is not None and fit.held_out.shape == (len(a),)
    assert fit.model.coef[0] > 0 and fit.model.coef[1] > 0
    full = fit.model.probabilities(cross, cosine, a, b)
    assert not np.allclose(full, fit.held_out)  # the held-out ones come from the fold models
    assert np.corrcoef(full, fit.held_out)[0, 1] > 0.9
    few = same & (np.cumsum(same) <= 9)
    assert fit_story_model(cross, cosine, a, b, few, idf) is None  # 9 same-story pairs: none fitted


def test_the_model_round_trips_and_a_damaged_one_is_refused() -> None:
    cross, cosine, a, b, same = synthetic()
    fit = fit_story_model(cross, cosine, a, b, same, BigramIdf.of(a + b))
    assert fit is not None
    back = StoryModel.from_dict(json.loads(json.dumps(fit.model.as_dict())))
    np.testing.assert_array_equal(
        back.probabilities(cross, cosine, a, b), fit.model.probabilities(cross, cosine, a, b)
    )
    bad = fit.model.as_dict()
    bad["coef"] = bad["coef"][:-1]
    with pytest.raises(ValueError, match="coef"):
        StoryModel.from_dict(bad)
    with pytest.raises(ValueError, match="features"):
        StoryModel.from_dict({**fit.model.as_dict(), "features": ["cosine"]})


def test_the_candidate_floor_loses_no_pair_that_could_pass_above_or_below_the_rerank_threshold() -> None:
    cross, cosine, a, b, same = synthetic()
    r = Reranker(cross_encoder=None, slope=2.0, intercept=-0.9, weight=0.5)
    rerank_threshold = 0.8
    gate = r.candidate_floor(rerank_threshold)
    fit = fit_story_model(cross, cosine, a, b, same, BigramIdf.of(a + b), gate, rerank_threshold)
    assert fit is not None and -1 < gate < 1
    r.story = fit.model
    rng = np.random.default_rng(1)
    n = 4000
    cos = rng.uniform(0.5, 1.0, n)
    ce = rng.uniform(0.0, 0.999, n)
    pick = rng.integers(0, len(a), n)
    scores = r.pair_scores(cos, ce, [a[i] for i in pick], [b[i] for i in pick])
    assert (scores[cos < gate] < rerank_threshold).all()  # below the gate: the rerank score, under T
    assert (scores[cos >= gate] >= rerank_threshold).all()  # at or above: T + p * (max - T)
    for threshold in (0.6, 0.75, rerank_threshold, 0.85, 0.9):
        floor = r.candidate_floor(threshold)
        assert (cos[scores >= threshold] >= floor).all()
        assert floor == (gate if threshold >= rerank_threshold else r.rerank_floor(threshold))


# --- fitted by fine-tuning, used by the report ---------------------------------------------------------


@pytest.fixture(scope="module")
def story_model(tmp_path_factory: pytest.TempPathFactory) -> FinetuneResult:
    out = tmp_path_factory.mktemp("story") / "model"
    cfg = small_reranker_config(out, story_model=True, cross_encoder_epochs=2)
    return finetune(cfg, pairs=stsb_sample(train=96, validation=60, test=16), log=lambda _: None)


@pytest.mark.slow
def test_finetune_fits_the_story_model_on_validation_and_calibrates_it(story_model: FinetuneResult) -> None:
    reranker = load_reranker(story_model.model_dir)
    assert reranker is not None and reranker.story is not None
    train = stsb_sample(train=96, validation=0, test=0)
    assert reranker.story.idf.texts == len(set(train["text_a"]) | set(train["text_b"]))
    threshold = reranker.threshold
    assert threshold is not None and 0 < threshold < reranker.max_score()
    summary = story_model.reranker
    assert summary is not None and "idf" not in summary["story"] and len(summary["story"]["coef"]) == 9
    card = (Path(str(story_model.model_dir)) / "README.md").read_text(encoding="utf-8")
    low, top = reranker.story.rerank_threshold, reranker.max_score()
    need = (
        "every pair the story model decides"
        if threshold <= low
        else f"at least {(threshold - low) / (top - low):.3f}"
    )
    assert "A story model decides same story" in card and need in card
    # validation is scored by the fold models (cross-fitted), test by the model fitted on all validation
    scorer = as_pair_scorer(load_encoder(story_model.model_dir))
    for split, own in (("validation", False), ("test", True)):
        pairs = count_once(stsb_sample(train=0, validation=60, test=16))  # as training reads them
        pairs = pairs[pairs["split"] == split]
        a, b = pairs["text_a"].tolist(), pairs["text_b"].tolist()
        full = reranker.pair_scores(scorer(a, b), reranker.cross_encoder.predict(a, b), a, b)
        rho = 100 * spearmanr(full, pairs["score"]).statistic
        assert (abs(rho - story_model.metrics[f"reranked/{split}"]["spearman"]) < 0.01) == own


def _dedup(model: str, corpus: Path, out: Path, **kw: object):  # noqa: ANN202 - DedupResult
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup

    cfg = DedupConfig.of(
        corpus=corpus, out=out, model=model, convert="none", text_fields=("title",), k=5, cache=False,
        progress=False, save_index=False, cluster_rule="components", **kw,
    )  # fmt: skip
    return run_dedup(cfg)


@pytest.mark.slow
def test_a_report_keeps_exactly_the_candidates_whose_story_probability_passes_daily_as_batch(
    story_model: FinetuneResult, repo_root: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "small.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:80].to_parquet(corpus)
    model = str(story_model.model_dir)
    reranker = load_reranker(model)
    assert reranker is not None and reranker.story is not None
    threshold = reranker.story.rerank_threshold  # at or above it the floor is the gate
    floor = reranker.candidate_floor(threshold)
    assert floor == reranker.story.cosine_gate
    got = _dedup(model, corpus, tmp_path / "batch", threshold=threshold)
    assert got.summary["rerank"]["candidate_floor"] == round(floor, 6) and len(got.pairs) > 0
    plain = _dedup(model, corpus, tmp_path / "plain", threshold=floor, rerank=False)
    assert len(plain.pairs) == got.summary["rerank"]["candidates"]
    a, b = plain.pairs["title_a"].tolist(), plain.pairs["title_b"].tolist()
    score = reranker.pair_scores(
        plain.pairs["similarity"].to_numpy(), reranker.cross_encoder.predict(a, b), a, b
    )
    expected = {tuple(p) for p in plain.pairs.loc[score >= threshold, ["id_a", "id_b"]].values.tolist()}
    assert {tuple(p) for p in got.pairs[["id_a", "id_b"]].values.tolist()} == expected
    daily = _dedup(model, corpus, tmp_path / "daily", threshold=threshold, state=str(tmp_path / "state"))
    key = ["id_a", "id_b"]
    pd.testing.assert_frame_equal(
        daily.pairs.sort_values(key).reset_index(drop=True)[[*key, "similarity"]],
        got.pairs.sort_values(key).reset_index(drop=True)[[*key, "similarity"]],
    )


def test_the_model_is_fitted_on_the_pairs_at_or_above_its_cosine_gate() -> None:
    cross, cosine, a, b, same = synthetic()
    gate = float(np.quantile(cosine, 0.3))
    fit = fit_story_model(
        cross, cosine, a, b, same, BigramIdf.of(a + b), cosine_gate=gate, rerank_threshold=0.8
    )
    assert fit is not None and fit.model.cosine_gate == gate and fit.model.rerank_threshold == 0.8
    below = cosine < gate
    assert (fit.inside == ~below).all()
    assert (fit.held_out[below] == 0).all() and (fit.held_out[~below] > 0).all()
    back = StoryModel.from_dict(json.loads(json.dumps(fit.model.as_dict())))
    assert (back.cosine_gate, back.rerank_threshold) == (gate, 0.8)


def test_the_story_model_is_asked_for_and_leaves_the_versions_trained_without_it_as_they_were() -> None:
    from nlsim.chain.fingerprint import training_settings
    from nlsim.training.config import FinetuneConfig

    assert FinetuneConfig().cross_encoder.story_model is False
    assert "story_model" not in training_settings(FinetuneConfig())  # the fingerprints from before it
    assert training_settings(FinetuneConfig.of(story_model=True))["story_model"] is True


def test_the_idf_counts_each_distinct_text_once_and_an_unseen_bigram_weighs_most() -> None:
    idf = BigramIdf.of(["京貿國際", "京貿國際", "恒指全日"])
    assert idf.texts == 2 and idf.df["京貿"] == 1
    assert idf.idf("京貿") == pytest.approx(np.log(3 / 2))
    assert idf.idf("佳能") == pytest.approx(np.log(3))  # in no text


def test_the_longest_shared_run_is_a_word_of_up_to_six_and_a_text_is_no_template_of_itself() -> None:
    assert named("京貿國際城在售", "京貿國際城在售樓盤")["longest_shared"] == 6.0
    assert named("2011年考研報名", "2011年考研")["longest_shared"] == 3.0  # 年考研: the year is no word
    same = named("恒指全日跌53點", "恒指全日跌53點")
    assert same["template"] == 0.0 and same["numbers_shared"] == 1.0 and same["numbers_conflict"] == 0.0
    assert named("佳", "能")["bigram_overlap"] == 0.0  # no bigrams at all


def a_model(**changes: object) -> StoryModel:
    n = len(FEATURES)
    fields: dict[str, object] = {
        "idf": BigramIdf.of(TEXTS),
        "mean": [0.0] * n,
        "scale": [1.0] * n,
        "coef": [0.0, 1.0] + [0.0] * (n - 2),
        "intercept": 0.0,
        "low": [0.0] * n,
        "high": [0.5] * n,
    }
    return StoryModel(**{**fields, **changes})  # type: ignore[arg-type]


def test_the_cosine_and_the_cross_encoder_are_not_clipped_but_the_text_features_are() -> None:
    model = a_model()
    x = np.zeros((1, len(FEATURES)))
    x[0, 1] = 0.9  # above the cosine's "high": taken as it is
    assert model.logits(x)[0] == pytest.approx(0.9)
    text = a_model(coef=[0.0, 0.0, 1.0] + [0.0] * (len(FEATURES) - 3))
    x[0, 2] = 0.9  # a text feature above its "high": clipped to it
    assert text.logits(x)[0] == pytest.approx(0.5)
    assert model.probabilities([], [], [], []).shape == (0,)


def test_a_scale_of_zero_or_a_coefficient_not_finite_is_refused() -> None:
    for name, values in (("scale", [1.0, 0.0] + [1.0] * 7), ("coef", [1.0, float("nan")] + [1.0] * 7)):
        damaged = a_model().as_dict() | {name: values}
        with pytest.raises(ValueError, match=name if name == "coef" else "scale"):
            StoryModel.from_dict(damaged)


def test_a_pair_at_the_gate_is_inside_ten_of_a_class_is_enough_and_the_seed_draws_the_folds() -> None:
    cross, cosine, a, b, same = synthetic()
    idf = BigramIdf.of(a + b)
    gate = float(np.sort(cosine)[50])
    fit = fit_story_model(cross, cosine, a, b, same, idf, cosine_gate=gate)
    assert fit is not None and fit.inside[cosine == gate].all() and fit.inside.sum() == len(a) - 50
    rng = np.random.default_rng(0)
    ten = np.arange(30) % 3 == 0  # ten same-story pairs of thirty
    ce, cos = (
        np.where(ten, 0.9, 0.6) + rng.normal(0, 0.05, 30),
        np.where(ten, 0.95, 0.85) + rng.normal(0, 0.02, 30),
    )
    texts = [f"新聞{i}" for i in range(30)]
    assert fit_story_model(ce, cos, texts, texts[::-1], ten, BigramIdf.of(texts)) is not None
    other = fit_story_model(cross, cosine, a, b, same, idf, cosine_gate=gate, seed=1)
    assert other is not None and not np.allclose(fit.held_out, other.held_out)


def test_no_model_when_the_fit_does_not_rise_with_the_cosine() -> None:
    cross, cosine, a, b, same = synthetic()
    flipped = 2 * cosine.mean() - cosine  # same-story pairs now have the lower cosines
    assert fit_story_model(cross, flipped, a, b, same, BigramIdf.of(a + b)) is None


def test_a_cross_encoder_score_at_its_bound_is_a_large_finite_logit() -> None:
    edge = np.log(1e-6 / (1 - 1e-6))
    np.testing.assert_allclose(cross_logits([0.0, 0.5, 1.0]), [edge, 0.0, -edge])
