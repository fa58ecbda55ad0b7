"""FinetuneConfig.for_device (nlsim/training/config.py; named apart from tests/chain/test_config.py): the
settings training uses on the device and CPU in hand."""

from __future__ import annotations

import pytest

from nlsim.errors import ConfigError
from nlsim.training.config import FinetuneConfig

AVX2_ONLY = "avx avx2 fma"
AMX = "avx2 avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8"


def test_a_cpu_without_bf16_freezes_the_fp32_count_of_cross_encoder_layers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    cfg = FinetuneConfig()
    on_cpu = cfg.for_device("cpu")
    assert (cfg.cross_encoder_frozen_layers, on_cpu.cross_encoder_frozen_layers) == (4, 6)
    assert on_cpu.cross_encoder_config().frozen_layers == 6
    # only that: the bi-encoder, the epochs and the step size are the default's
    assert (on_cpu.frozen_layers, on_cpu.cross_encoder_epochs, on_cpu.batch_size) == (4, 3, 16)
    assert (
        FinetuneConfig(fp32_cross_encoder_frozen_layers=2).for_device("cpu").cross_encoder_frozen_layers == 2
    )


@pytest.mark.parametrize("flags", [AMX, "avx2 avx512f avx512_bf16"])
def test_a_cpu_with_bf16_keeps_the_cross_encoder_frozen_layers_asked(
    monkeypatch: pytest.MonkeyPatch, flags: str
) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", flags)
    cfg = FinetuneConfig(cross_encoder_frozen_layers=3)
    assert cfg.for_device("cpu") is cfg


def test_a_gpu_keeps_the_cross_encoder_frozen_layers_whatever_the_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    gpu = FinetuneConfig(batch_size=16, gpu_batch_size=32).for_device("cuda:0")
    assert (gpu.cross_encoder_frozen_layers, gpu.batch_size) == (4, 32)


def test_a_negative_fp32_frozen_count_is_refused() -> None:
    with pytest.raises(ConfigError, match="fp32 cross-encoder frozen layers must be >= 0, got -1"):
        FinetuneConfig(fp32_cross_encoder_frozen_layers=-1).check()
