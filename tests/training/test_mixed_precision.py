"""Training runs in bf16 only where the hardware computes it, and in what is asked for otherwise."""

from __future__ import annotations

import threading

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


def _weight_gradient(other_thread_leaves_autocast: bool) -> torch.Tensor:
    """The gradient of a weight used twice in one bf16 forward pass, another thread entering and leaving an
    autocast block between the two uses or not."""
    gen = torch.Generator().manual_seed(0)
    w = torch.nn.Parameter(torch.randn(128, 128, generator=gen))
    x1, x2 = torch.randn(32, 128, generator=gen), torch.randn(32, 128, generator=gen)

    def other() -> None:
        with autocast("bf16", torch.device("cpu")):
            pass

    with autocast("bf16", torch.device("cpu")):
        y1 = x1 @ w
        if other_thread_leaves_autocast:
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        y2 = x2 @ w
    (y1.float().sum() + y2.float().pow(2).sum()).backward()
    assert w.grad is not None
    return w.grad


def test_another_threads_autocast_does_not_change_the_gradient() -> None:
    # torch's cache of cast weights is the process's: another thread leaving autocast empties it mid-pass
    assert torch.equal(_weight_gradient(False), _weight_gradient(True))
    assert torch.equal(_weight_gradient(False), _weight_gradient(False))
