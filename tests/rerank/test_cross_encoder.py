"""The cross-encoder teacher, with the small English model on a few dozen STS-B pairs."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from stsb_helpers import stsb_sample

from nlsim.errors import ConfigError
from nlsim.rerank.cross_encoder import CrossEncoder
from nlsim.rerank.target import cross_encoder_inference
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
    run = train_cross_encoder(FAST_MODEL, train, val, cfg, log=lambda _: None)
    return run.ce, run.history


@pytest.mark.slow
def test_training_lowers_the_loss_and_keeps_the_best_epoch(
    trained: tuple[CrossEncoder, list[dict]], small_pairs: pd.DataFrame
) -> None:
    from scipy.stats import spearmanr

    ce, history = trained
    assert [h["epoch"] for h in history] == [1, 2, 3]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    val = small_pairs[small_pairs["split"] == "validation"]
    a, b = val["text_a"].tolist(), val["text_b"].tolist()
    # every epoch is judged by its A-B readings; the last reads both orders too
    rho = spearmanr(ce.read(a, b), val["score"]).statistic
    assert round(float(rho) * 100, 2) == max(h["spearman"] for h in history)
    both = spearmanr(ce.predict(a, b), val["score"]).statistic
    assert [("spearman_both_orders" in h) for h in history] == [False, False, True]
    if history[-1]["spearman"] == max(h["spearman"] for h in history):  # the last epoch kept
        assert round(float(both) * 100, 2) == history[-1]["spearman_both_orders"]


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
    with pytest.raises(ConfigError, match="story weight"):
        CrossEncoderConfig(story_weight=0).check()
    with pytest.raises(ConfigError, match="rank weight"):
        CrossEncoderConfig(rank_weight=-1).check()
    with pytest.raises(ConfigError, match="temperature lr"):
        CrossEncoderConfig(temperature_lr=-0.1).check()
    with pytest.raises(ConfigError, match="drop-easy"):
        CrossEncoderConfig(drop_easy=1.0).check()


def _train_scores(
    small_pairs: pd.DataFrame, **settings: float
) -> tuple[np.ndarray, pd.DataFrame, list[dict]]:
    """One epoch on the small pairs (same data, seed and order every time) with ``settings`` changed: the
    trained model's scores of its training pairs, those pairs, and the training history; same story here is
    a score of 0.7 or more."""
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    cfg = CrossEncoderConfig(
        epochs=1, batch_size=8, threads=1, log_every=0, seed=3, story_level=0.7, **settings
    )
    run = train_cross_encoder(FAST_MODEL, train, val, cfg, log=lambda _: None)
    ce, history = run.ce, run.history
    return ce.predict(train["text_a"].tolist(), train["text_b"].tolist()), train, history


def _kept_sequences(lines: list[str]) -> list[tuple[int, int]]:
    """``(kept, all)`` of each epoch that left sequences out, from the training's log lines."""
    said = [re.search(r"epoch \d+: (\d+) of (\d+) pair sequences", line) for line in lines]
    return [(int(m.group(1)), int(m.group(2))) for m in said if m]


@pytest.mark.slow
def test_drop_easy_trains_later_epochs_on_the_pairs_still_missed(small_pairs: pd.DataFrame) -> None:
    """From the second epoch on, the sequences scored within the margin leave, but for the share of them
    drawn; same-story pairs stay even when every other sequence is easy; without a margin every epoch
    trains on every sequence."""
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    story = 2 * int((train["score"] >= 0.7).sum())  # both text orders
    every = 2 * len(train)
    kept: dict[tuple[float, float], list[tuple[int, int]]] = {}
    for margin, share in ((0.0, 0.25), (0.15, 0.0), (0.99, 0.0), (0.99, 0.5)):
        lines: list[str] = []
        cfg = CrossEncoderConfig(
            epochs=3,
            batch_size=8,
            threads=1,
            log_every=0,
            seed=3,
            story_level=0.7,
            drop_easy=margin,
            easy_sample=share,
        )
        run = train_cross_encoder(FAST_MODEL, train, val, cfg, log=lines.append)
        assert [h["epoch"] for h in run.history] == [1, 2, 3]
        kept[margin, share] = _kept_sequences(lines)
    assert kept[0.0, 0.25] == []
    (second, total), (third, _) = kept[0.15, 0.0]
    assert total == every and story <= third <= second < every
    assert kept[0.99, 0.0] == [(story, every), (story, every)]
    drawn = [n - story for n, _ in kept[0.99, 0.5]]  # about half of the others, drawn afresh each epoch
    assert all(0.25 * (every - story) < n < 0.75 * (every - story) for n in drawn), drawn


@pytest.mark.slow
def test_story_weight_pulls_the_same_story_pairs_up(small_pairs: pd.DataFrame) -> None:
    """Only the loss weight of the pairs at or above the story level differs: the weighted model fits those
    pairs closer (their squared error falls) at the cost of the rest."""
    errors = []
    for weight in (1.0, 10.0):
        pred, train, _ = _train_scores(small_pairs, story_weight=weight)
        story = (train["score"] >= 0.7).to_numpy()
        assert 3 <= story.sum() < len(train) - 3
        sq = (pred - train["score"].to_numpy()) ** 2
        errors.append((float(sq[story].mean()), float(sq[~story].mean())))
    (story_plain, rest_plain), (story_weighted, rest_weighted) = errors
    assert story_weighted < story_plain and rest_weighted > rest_plain


@pytest.mark.slow
def test_rank_weight_sets_the_same_story_pairs_apart(small_pairs: pd.DataFrame) -> None:
    """Only the weight of the same-story ranking term differs: with it, the training pairs at or above the
    story level stand further above the rest."""
    gaps = []
    for weight in (0.0, 5.0):
        pred, train, _ = _train_scores(small_pairs, rank_weight=weight)
        story = (train["score"] >= 0.7).to_numpy()
        gaps.append(float(pred[story].mean() - pred[~story].mean()))
    assert gaps[1] > gaps[0]


@pytest.mark.slow
def test_a_learned_logit_scale_moves_and_widens_the_scores(small_pairs: pd.DataFrame) -> None:
    """Only the learned logit scale differs: it moves away from 1 (recorded per epoch), and the saved model,
    with the scale folded into its head, spreads its training pairs' logits wider than without it."""
    spreads = []
    for lr in (0.0, 0.05):
        pred, _, history = _train_scores(small_pairs, temperature_lr=lr)
        spreads.append(float(np.std(np.log(pred / (1 - pred)))))
    assert spreads[1] > spreads[0]
    assert history[0]["logit_scale"] > 1.05


def test_the_learned_scale_is_folded_into_the_head(trained: tuple[CrossEncoder, list[dict]]) -> None:
    """The kept state's head is the trained head times ``exp(log_scale)``: its logits are the scaled ones."""
    import torch

    from nlsim.training.cross_encoder import _trained_state

    ce, _ = trained
    a, b = ["A man is playing a guitar.", "Stocks fell."], ["Someone plays the guitar.", "A cat sleeps."]
    with torch.no_grad():
        before = ce.logits(a, b).clone()
        head = {n: t.clone() for n, t in ce.head.state_dict().items()}
        state = _trained_state(ce, torch.tensor(float(np.log(2.0))))
        ce.head.load_state_dict({n[5:]: t for n, t in state.items() if n.startswith("head.")})
        try:
            torch.testing.assert_close(ce.logits(a, b), 2 * before, rtol=1e-5, atol=1e-5)
        finally:
            ce.head.load_state_dict(head)


@pytest.mark.slow
def test_onnx_runner_gives_torch_scores(
    trained: tuple[CrossEncoder, list[dict]],
    small_pairs: pd.DataFrame,
    tmp_path,
    monkeypatch,  # noqa: ANN001
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    ce, _ = trained
    a, b = small_pairs["text_a"].tolist(), small_pairs["text_b"].tolist()
    choice, runner = cross_encoder_inference(ce, 4)
    assert runner is None and choice.path == "torch-fp32"  # a small job stays on torch
    ref = ce.predict(a, b)
    choice, runner = cross_encoder_inference(ce, len(a), "onnx")
    got = ce.predict(a, b, batch_size=16, runner=runner)
    assert choice.path == "onnx-fp32" and list((tmp_path / "onnx").glob("ce-*/model.onnx"))
    np.testing.assert_allclose(got, ref, atol=1e-5)
    ce.__dict__.pop("_inference", None)


@pytest.mark.slow
def test_score_bound_holds_for_any_input(trained: tuple[CrossEncoder, list[dict]]) -> None:
    """The bound comes from the weights (final LayerNorm and head): no pair, however odd, scores above it."""
    ce, _ = trained
    bound = ce.score_bound()
    assert 0.5 < bound <= 1.0
    rng = np.random.default_rng(0)
    words = ["guitar", "stocks", "rain", "the", "a", "cat", "x", "!!", "bank", "2024", "plays", "fell"]
    a = [" ".join(rng.choice(words, size=rng.integers(1, 30))) for _ in range(200)]
    b = [" ".join(rng.choice(words, size=rng.integers(1, 30))) for _ in range(200)]
    scores = ce.predict(a + a[:20], b + a[:20])  # identical texts too
    assert scores.max() <= bound
    # and through the raw logits of random token ids
    feats = {"input_ids": rng.integers(1000, 30000, size=(64, 40)), "attention_mask": np.ones((64, 40), int)}
    if ce.uses_token_types():
        feats["token_type_ids"] = np.zeros((64, 40), int)
    from nlsim.rerank.target import cross_encoder_target

    logits = np.asarray(cross_encoder_target(ce).run(None, feats))
    assert (1 / (1 + np.exp(-logits))).max() <= bound


@pytest.mark.slow
def test_lossy_cross_encoder_paths_follow_the_quality_check_and_the_probe(
    trained: tuple[CrossEncoder, list[dict]],
    small_pairs: pd.DataFrame,
    tmp_path,
    monkeypatch,  # noqa: ANN001
) -> None:
    import torch

    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.lossy_verdict import RECORD_FORMAT, save_quality_check
    from nlsim.inference.probe import save_probe
    from nlsim.rerank.target import cross_encoder_target

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx512f avx512_vnni avx512_bf16")
    ce, _ = trained
    ce.__dict__.pop("_inference", None)
    target = cross_encoder_target(ce)
    rates = {"onnx-fp32": 100.0, "torch-fp32": 60.0, "onnx-int8": 250.0, "torch-bf16": 200.0}
    save_probe(target.architecture(), torch.get_num_threads(), cpu_info(), rates, [])
    n = 5000  # a big job (only the decision is made here)
    assert cross_encoder_inference(ce, n, precision="auto")[0].path == "onnx-fp32"  # no quality check yet
    ce.__dict__.pop("_inference", None)
    good = {"spearman": 80.0, "f1": 0.5, "max_score_diff": 0.05, "mean_score_diff": 0.01}
    save_quality_check(
        {
            "format": RECORD_FORMAT,
            "kind": "cross-encoder",
            "identity": ce.digest(),
            "reference": {"spearman": 80.1, "f1": 0.5},
            "paths": {"onnx-int8": {**good, "mean_score_diff": 0.2}, "torch-bf16": good},
        }
    )
    choice, runner = cross_encoder_inference(ce, n, precision="auto")
    assert choice.path == "torch-bf16" and "mean" not in choice.quality_check and runner is not None
    assert "on average" in choice.excluded["onnx-int8"]
    a, b = small_pairs["text_a"].tolist(), small_pairs["text_b"].tolist()
    np.testing.assert_allclose(ce.predict(a, b, runner=runner), ce.predict(a, b), atol=0.02)
    ce.__dict__.pop("_inference", None)


def test_the_digest_and_the_path_follow_the_weights() -> None:
    """A weight changed in place, in eval mode or by a fused optimizer step (which torch's version counters
    miss: the training loop marks it), makes a new digest: the quality check, the ONNX export and the chosen
    path made for the old weights are not reused (one way of noticing, the encoder's too)."""
    import torch

    ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2")
    ce.model.eval()
    first = ce.digest()
    with torch.no_grad():
        ce.head.weight.add_(0.5)
    second = ce.digest()
    assert second != first
    version = ce.weights_version()
    ce.mark_weights_changed()
    assert ce.weights_version() == version + 1
    choice, _ = cross_encoder_inference(ce, 5000, backend="torch", precision="fp32")
    assert choice.path == "torch-fp32" and len(ce.__dict__["_inference"]) == 1
    with torch.no_grad():
        ce.head.bias.add_(0.5)
    cross_encoder_inference(ce, 5000, backend="torch", precision="fp32")
    assert len(ce.__dict__["_inference"]) == 1 and ce.digest() not in (first, second)


def test_training_hands_back_the_kept_epochs_validation_scores_as_predict_gives_them(
    small_pairs: pd.DataFrame,
) -> None:
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    cfg = CrossEncoderConfig(epochs=2, batch_size=8, threads=1, log_every=0, seed=5, temperature_lr=1e-2)
    run = train_cross_encoder(FAST_MODEL, train, val, cfg, log=lambda _: None)
    predicted = run.ce.predict(val["text_a"].tolist(), val["text_b"].tolist(), progress=False)
    assert run.validation_scores.shape == (len(val),)
    assert np.allclose(run.validation_scores, predicted, atol=1e-5)


@pytest.mark.slow
def test_an_earlier_epoch_kept_hands_back_its_own_scores_of_both_orders(
    small_pairs: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first epoch judged best (its A-B Spearman highest): its weights come back, and the validation
    scores handed on are its readings of both orders, as predict gives them."""
    import nlsim.training.cross_encoder as training

    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    judged: list[int] = []
    real = training.spearman_raw

    def falling(pred: np.ndarray, gold: np.ndarray) -> float:
        judged.append(len(pred))
        return real(pred, gold) - 1000.0 * len(judged)  # each epoch judged worse than the one before

    monkeypatch.setattr(training, "spearman_raw", falling)
    read: list[int] = []
    reading = training.sequence_probabilities

    def counted(*args: object, **kwargs: object) -> np.ndarray:
        probs = reading(*args, **kwargs)  # type: ignore[arg-type]
        read.append(len(probs))
        return probs

    monkeypatch.setattr(training, "sequence_probabilities", counted)
    # a learned logit scale: the kept A-B readings are scaled, the B-A ones read with the scale folded in
    cfg = CrossEncoderConfig(epochs=2, batch_size=8, threads=1, log_every=0, seed=5, temperature_lr=1e-2)
    run = train_cross_encoder(FAST_MODEL, train, val, cfg, log=lambda _: None)
    assert judged == [len(val)] * 3  # epoch 1 (A-B), epoch 2 (A-B, then both orders)
    n = len(val)
    assert read == [n, 2 * n, n]  # the kept first epoch's B-A readings alone at the end: its A-B ones kept
    predicted = run.ce.predict(val["text_a"].tolist(), val["text_b"].tolist(), progress=False)
    np.testing.assert_allclose(run.validation_scores, predicted, atol=1e-5)
    judged.clear()

    def rising(pred: np.ndarray, gold: np.ndarray) -> float:
        judged.append(len(pred))
        return real(pred, gold) + 1000.0 * len(judged)  # each epoch judged better: the last one is kept

    monkeypatch.setattr(training, "spearman_raw", rising)
    last = train_cross_encoder(FAST_MODEL, train, val, cfg, log=lambda _: None)
    assert not np.allclose(last.validation_scores, run.validation_scores, atol=1e-4)  # another epoch's


@pytest.mark.slow
def test_a_bf16_training_runs_its_training_pairs_frozen_pass_in_bf16_and_keeps_validation_fp32(
    small_pairs: pd.DataFrame,
) -> None:
    """On a CPU the training pairs' frozen pass takes the training's bf16; the validation pairs' stays
    fp32, so the scores handed on (the quality check's fp32 reference) are still what predict gives."""
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    cfg = CrossEncoderConfig(epochs=1, batch_size=8, threads=1, log_every=0, seed=5, train_precision="bf16")
    lines: list[str] = []
    run = train_cross_encoder(FAST_MODEL, train, val, cfg, log=lines.append)
    assert any("through the frozen part (the training pairs' in bf16)" in line for line in lines)
    predicted = run.ce.predict(val["text_a"].tolist(), val["text_b"].tolist(), progress=False)
    np.testing.assert_allclose(run.validation_scores, predicted, atol=1e-5)


@pytest.fixture(scope="module")
def fresh() -> CrossEncoder:
    """An untrained cross-encoder over the small model, its head drawn from a fixed seed."""
    import torch

    torch.manual_seed(5)
    return CrossEncoder.from_base(FAST_MODEL, max_length=16, threads=1)


def test_a_saved_token_limit_must_be_a_whole_number_of_four_or_more(tmp_path) -> None:
    from nlsim.errors import StateError
    from nlsim.rerank.cross_encoder import CONFIG_JSON, saved_max_length

    for bad in ("true", "3", "0"):
        (tmp_path / CONFIG_JSON).write_text(f'{{"max_length": {bad}}}', encoding="utf-8")
        with pytest.raises(StateError, match=f"'max_length' holds {bad.title() if bad == 'true' else bad}"):
            saved_max_length(tmp_path)
    (tmp_path / CONFIG_JSON).write_text('{"max_length": 4}', encoding="utf-8")
    assert saved_max_length(tmp_path) == 4


def test_the_digest_follows_the_encoders_weights_and_the_token_limit(fresh: CrossEncoder) -> None:
    """Two cross-encoders with one head and one encoder but another token limit, or an encoder weight
    changed, compute other scores: their digests differ."""
    import torch

    first = fresh.digest()
    fresh.max_length = 17
    try:
        assert fresh.digest() != first
    finally:
        fresh.max_length = 16
    assert fresh.digest() == first
    weight = fresh.model.embeddings.word_embeddings.weight
    kept = weight[100].clone()
    with torch.no_grad():
        weight[100] += 1.0
    fresh.mark_weights_changed()
    try:
        assert fresh.digest() != first
    finally:
        with torch.no_grad():
            weight[100] = kept
        fresh.mark_weights_changed()
    assert fresh.digest() == first


def test_reading_pairs_keeps_the_models_mode_and_the_token_limit(fresh: CrossEncoder) -> None:
    """A read during training leaves the model training; pairs are cut at the token limit, and read with
    their token types (a BERT model); no pair reads as an empty float array."""
    long = " ".join(["floods"] * 40)
    ids, types = fresh.pair_ids([long, "rain"], ["storm", long])
    assert max(len(i) for i in ids) == 16 and types is not None and any(1 in t for t in types)
    fresh.model.train()
    try:
        fresh.read([long], ["storm"])
        assert fresh.model.training
    finally:
        fresh.model.eval()
    fresh.read([long], ["storm"])
    assert not fresh.model.training
    empty = fresh.predict([], [])
    assert empty.dtype == np.float64 and empty.shape == (0,)


def test_a_head_that_reads_no_text_scores_its_bound_for_every_pair() -> None:
    """With the head's weights times the last LayerNorm's gain the same in every dimension, the pooled,
    centred hidden state adds nothing: every pair scores sigmoid(w . beta + b), which is the bound exactly
    (a bound that left out the centring or the bias would miss it)."""
    import torch

    ce = CrossEncoder.from_base(FAST_MODEL, max_length=32, threads=1)
    norm = ce.model.encoder.layer[-1].output.LayerNorm
    with torch.no_grad():
        ce.head.weight.copy_((0.3 / norm.weight).reshape(1, -1))
        ce.head.bias.fill_(1.5)
    scores = ce.predict(["Floods in the north", "a"], ["Stocks fell sharply today.", "b c d e"])
    expected = 1 / (1 + np.exp(-float((ce.head.weight.reshape(-1) * norm.bias).sum().detach() + 1.5)))
    np.testing.assert_allclose(scores, expected, rtol=1e-4)
    assert ce.score_bound() == pytest.approx(expected, rel=1e-6)
