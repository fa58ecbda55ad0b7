"""``NLSIM_DEVICE``: a device this torch build can run, or one clear error (never a traceback later)."""

from __future__ import annotations

import pytest
import torch

from nlsim.encoders.device import default_device
from nlsim.errors import ConfigError


def test_cpu_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_DEVICE", "cpu")
    assert default_device() == torch.device("cpu")


@pytest.mark.parametrize(
    "name", ["garbage", "cuda", "cuda:1", "mps", "xpu", "hip", "vulkan", "meta", "mps:0"]
)
def test_a_device_this_build_lacks_is_one_config_error(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A type torch knows but this build or machine lacks (``mps``, ``xpu``, ``hip``, ``vulkan``) and one
    that holds no data (``meta``) are refused up front, as an unknown name and a missing GPU are."""
    if name.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.setenv("NLSIM_DEVICE", name)
    with pytest.raises(ConfigError, match=r"NLSIM_DEVICE="):
        default_device()


def test_a_missing_device_is_named_as_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name is read in any case; the message quotes the value as given, as the other variables' do."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.setenv("NLSIM_DEVICE", "CUDA:1")
    with pytest.raises(ConfigError, match=r"NLSIM_DEVICE='CUDA:1', but torch sees no CUDA device"):
        default_device()


@pytest.mark.parametrize("name", ["cuda:1", "CUDA:7"])
def test_a_gpu_number_past_those_torch_sees_is_refused(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``cuda:1`` on a machine with one GPU was taken, and the run died in torch ("invalid device
    ordinal") once the model was moved there; it is refused up front, naming the GPUs there are."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("NLSIM_DEVICE", name)
    with pytest.raises(ConfigError, match=rf"NLSIM_DEVICE='{name}', but torch sees 1 CUDA device \(cuda:0\)"):
        default_device()
    monkeypatch.setenv("NLSIM_DEVICE", "cuda:0")
    assert default_device() == torch.device("cuda:0")
