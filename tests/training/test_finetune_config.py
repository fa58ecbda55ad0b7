"""FinetuneConfig.for_device (nlsim/training/config.py; named apart from tests/chain/test_config.py): the
settings training uses on the device and CPU in hand, and fp32_changes, what the run says of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nlsim.errors import ConfigError
from nlsim.training.config import FinetuneConfig, fp32_changes

AVX2_ONLY = "avx avx2 fma"
AMX = "avx2 avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8"


def test_a_cpu_without_bf16_trains_the_same_recipe_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    cfg = FinetuneConfig()
    assert cfg.for_device("cpu") is cfg  # 2 bi-encoder epochs, 3 cross-encoder epochs, 4 layers frozen
    assert (cfg.bi_encoder.epochs, cfg.cross_encoder.epochs, cfg.cross_encoder.frozen_layers) == (2, 3, 4)


def test_a_cpu_without_bf16_trains_the_fp32_recipe_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    cfg = FinetuneConfig.of(fp32_epochs=1, fp32_cross_encoder_epochs=1, fp32_cross_encoder_frozen_layers=6)
    on_cpu = cfg.for_device("cpu")
    assert (cfg.cross_encoder.frozen_layers, on_cpu.cross_encoder.frozen_layers) == (4, 6)
    assert (cfg.bi_encoder.epochs, on_cpu.bi_encoder.epochs) == (2, 1)
    assert (cfg.cross_encoder.epochs, on_cpu.cross_encoder.epochs) == (3, 1)
    assert (on_cpu.cross_encoder_config().frozen_layers, on_cpu.cross_encoder_config().epochs) == (6, 1)
    # only those: the bi-encoder's frozen layers, the step size and the learning rates are the default's
    assert (
        on_cpu.bi_encoder.frozen_layers,
        on_cpu.recipe.batch_size,
        on_cpu.bi_encoder.lr,
        on_cpu.cross_encoder.lr,
    ) == (
        4,
        16,
        1e-4,
        1e-4,
    )
    asked = FinetuneConfig.of(fp32_epochs=2, fp32_cross_encoder_epochs=3, fp32_cross_encoder_frozen_layers=2)
    on_cpu = asked.for_device("cpu")
    assert (on_cpu.bi_encoder.epochs, on_cpu.cross_encoder.epochs, on_cpu.cross_encoder.frozen_layers) == (
        2,
        3,
        2,
    )
    assert fp32_changes(asked, on_cpu) == "cross-encoder layers frozen 2, not 4"


def test_the_full_recipe_asked_for_fp32_is_the_config_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    cfg = FinetuneConfig.of(fp32_epochs=2, fp32_cross_encoder_epochs=3, fp32_cross_encoder_frozen_layers=4)
    assert cfg.for_device("cpu") is cfg


def test_the_fp32_changes_are_said_and_the_cross_encoders_only_with_a_reranker() -> None:
    fast = {"fp32_epochs": 1, "fp32_cross_encoder_epochs": 1, "fp32_cross_encoder_frozen_layers": 6}
    asked = FinetuneConfig.of(**fast)
    used = asked.with_(**asked.fp32_settings())
    assert fp32_changes(asked, used) == (
        "bi-encoder epochs 1, not 2; cross-encoder epochs 1, not 3; cross-encoder layers frozen 6, not 4"
    )
    assert fp32_changes(FinetuneConfig(), FinetuneConfig().with_(**FinetuneConfig().fp32_settings())) == ""
    alone = FinetuneConfig.of(reranker=False, **fast)
    assert fp32_changes(alone, alone.with_(**alone.fp32_settings())) == "bi-encoder epochs 1, not 2"
    # the silver pairs' teacher is a cross-encoder too
    silver = FinetuneConfig.of(reranker=False, silver_corpus="corpus.tsv", **fast)
    assert "cross-encoder epochs 1, not 3" in fp32_changes(silver, silver.with_(**silver.fp32_settings()))


@pytest.mark.parametrize("flags", [AMX, "avx2 avx512f avx512_bf16"])
def test_a_cpu_with_bf16_keeps_the_recipe_asked(monkeypatch: pytest.MonkeyPatch, flags: str) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", flags)
    cfg = FinetuneConfig.of(cross_encoder_frozen_layers=3)
    assert cfg.for_device("cpu") is cfg


def test_a_gpu_keeps_the_cross_encoder_frozen_layers_whatever_the_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    gpu = FinetuneConfig.of(batch_size=16, gpu_batch_size=32).for_device("cuda:0")
    assert (gpu.cross_encoder.frozen_layers, gpu.recipe.batch_size) == (4, 32)
    assert (gpu.bi_encoder.epochs, gpu.cross_encoder.epochs) == (2, 3)


def test_a_negative_fp32_frozen_count_is_refused() -> None:
    with pytest.raises(ConfigError, match="--fp32-cross-encoder-frozen-layers must be >= 0, got -1"):
        FinetuneConfig.of(fp32_cross_encoder_frozen_layers=-1).check()


@pytest.mark.parametrize(
    ("setting", "value", "flag"),
    [
        ("lr", 0.0, "--lr must be > 0"),
        ("warmup_ratio", 1.0, "--warmup-ratio must be in [0, 1)"),
        ("frozen_layers", -1, "--frozen-layers must be >= 0"),
        ("batch_size", 0, "--batch-size must be >= 1"),
        ("train_precision", "fp16", "--train-precision: unknown 'fp16'"),
        ("cross_encoder_epochs", 0, "--cross-encoder-epochs must be >= 1"),
        ("cross_encoder_lr", -1e-4, "--cross-encoder-lr must be > 0"),
        ("cross_encoder_frozen_layers", -2, "--cross-encoder-frozen-layers must be >= 0"),
        ("story_weight", 0.0, "--story-weight must be > 0"),
        ("cross_encoder_drop_easy", 1.0, "--cross-encoder-drop-easy must be in [0, 1)"),
        ("rerank_weight", 1.5, "--rerank-weight must be in [0, 1]"),
        ("weight_decay", -0.01, "--weight-decay must be >= 0 and finite, got -0.01"),
        ("weight_decay", float("nan"), "--weight-decay must be >= 0 and finite, got nan"),
        ("lr", float("inf"), "--lr must be > 0 and finite, got inf"),
        ("cross_encoder_lr", float("inf"), "--cross-encoder-lr must be > 0 and finite, got inf"),
        ("story_weight", float("inf"), "--story-weight must be > 0 and finite, got inf"),
        ("eval_every", -5, "--eval-every must be >= 0 (0: each epoch), got -5"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_by_its_flag(setting: str, value: object, flag: str) -> None:
    with pytest.raises(ConfigError) as err:
        FinetuneConfig.of(**{setting: value}).check()
    assert str(err.value).startswith(flag), err.value


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("fp32_epochs", "^--fp32-epochs must be >= 1, got 0$"),
        ("fp32_cross_encoder_epochs", "^--fp32-cross-encoder-epochs must be >= 1, got 0$"),
    ],
)
def test_a_zero_fp32_epoch_count_is_refused_naming_its_flag(field: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FinetuneConfig.of(**{field: 0}).check()


def test_the_fp32_cross_encoder_epochs_are_checked_only_where_a_cross_encoder_trains(tmp_path: Path) -> None:
    """As --cross-encoder-epochs: without a reranker or silver pairs no cross-encoder trains."""
    FinetuneConfig.of(reranker=False, fp32_cross_encoder_epochs=0).check()
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("id\ttext\n1\ta\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="--fp32-cross-encoder-epochs"):
        FinetuneConfig.of(reranker=False, silver_corpus=str(corpus), fp32_cross_encoder_epochs=0).check()


def test_the_bounds_of_the_settings_take_their_edges() -> None:
    """Each bound at its edge: what it allows passes the check, the next value is refused by its flag."""
    from nlsim.training.config import MAX_SEED, MIN_TRAIN_PAIRS

    for fine in (
        {"rerank_weight": 0.0},
        {"rerank_weight": 1.0},
        {"train_size": MIN_TRAIN_PAIRS},
        {"seed": MAX_SEED},
        {"batch_size": 1, "loss": "mse"},
        {"easy_sample": 1.0},
    ):
        FinetuneConfig.of(**fine).check()
    for refused, said in (
        ({"train_size": MIN_TRAIN_PAIRS - 1}, f"--train-size must be >= {MIN_TRAIN_PAIRS}"),
        ({"seed": MAX_SEED + 1}, "--seed must be a whole number from 0"),
        ({"batch_size": 1}, "--loss cosent needs --batch-size >= 2"),
        ({"drop_easy": 1.0}, "--drop-easy must be in [0, 1)"),
        ({"easy_sample": 1.5}, "--easy-sample must be in [0, 1]"),
    ):
        with pytest.raises(ConfigError, match=re.escape(said)):
            FinetuneConfig.of(**refused).check()


def test_the_cross_encoder_and_the_silver_pairs_train_with_the_recipes_shared_settings() -> None:
    cfg = FinetuneConfig.of(
        freeze_embeddings=False, threads=3, seed=7, frozen_layers=2, cross_encoder_frozen_layers=5
    )
    ce = cfg.cross_encoder_config()
    assert (ce.freeze_embeddings, ce.threads, ce.seed, ce.frozen_layers) == (False, 3, 7, 5)
    assert cfg.silver_config().seed == 7
    assert (
        cfg.fp32_settings()["cross_encoder_frozen_layers"] == 5
    )  # the cross-encoder's, not the bi-encoder's


def test_a_learning_curves_runs_train_the_recipe_asked_on_every_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A curve is a measurement: each point trains the epochs asked on a CPU without bf16 and the batch
    size and learning rate asked on a GPU; its threads do not make runs incomparable; a size of the
    fewest training pairs is a point."""
    from nlsim.training.config import MIN_TRAIN_PAIRS, LearningCurveConfig

    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    curve = LearningCurveConfig(
        pairs="p.tsv", out="curve", sizes=(MIN_TRAIN_PAIRS, 700), epochs=3, batch_size=8
    )
    run = curve.finetune_config(MIN_TRAIN_PAIRS, 1)
    assert run.for_device("cpu").bi_encoder.epochs == run.bi_encoder.fp32_epochs == 3  # pinned, as recorded
    on_gpu = run.for_device("cuda:0")
    assert (on_gpu.recipe.batch_size, on_gpu.bi_encoder.lr) == (8, curve.lr)
    assert "threads" not in curve.settings()
    with pytest.raises(ConfigError, match=f"every size must be >= {MIN_TRAIN_PAIRS}"):
        LearningCurveConfig(pairs="p.tsv", out="curve", sizes=(MIN_TRAIN_PAIRS - 1,))
