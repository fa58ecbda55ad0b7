"""Training runs in bf16 only where the hardware computes it, and in what is asked for otherwise."""

from __future__ import annotations

import pytest
import torch

from nlsim.errors import ConfigError
from nlsim.training.mixed_precision import autocast, resolve


def test_auto_follows_the_cpu_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = torch.device("cpu")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx512f avx512_bf16")
    assert resolve("auto", cpu) == ("bf16", "the CPU has avx512_bf16")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2")
    precision, why = resolve("auto", cpu)
    assert precision == "fp32" and "no bf16" in why
    assert resolve("bf16", cpu) == ("bf16", "asked for")
    with pytest.raises(ConfigError, match="unknown training precision 'fp16'"):
        resolve("fp16", cpu)


def test_bf16_autocast_computes_matrix_products_in_bf16() -> None:
    a = torch.ones(4, 4)
    with autocast("bf16", torch.device("cpu")):
        assert (a @ a).dtype == torch.bfloat16
    with autocast("fp32", torch.device("cpu")):
        assert (a @ a).dtype == torch.float32
