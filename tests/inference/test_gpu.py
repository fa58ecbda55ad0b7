"""The GPU's inference paths, tested on the CPU: which paths a model on a GPU may take, that the quality
check is made and read there (keyed ``path@cuda``), that ``auto`` takes a half precision only when it passed,
and that an explicit precision never moves work off the GPU unsaid. CUDA is faked: the model's device and
the GPU's description are monkeypatched, the arithmetic runs on the CPU."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import nlsim.inference.choice as choice_module
import nlsim.training.lossy_check as making
from nlsim.errors import ConfigError
from nlsim.inference.choice import select, weigh_lossy
from nlsim.inference.cpu import CpuInfo
from nlsim.inference.gpu import GpuInfo
from nlsim.inference.lossy_verdict import RECORD_FORMAT, quality_verdict, save_quality_check
from nlsim.inference.paths import candidates
from nlsim.inference.target import Target

H100 = GpuInfo("NVIDIA H100 80GB HBM3", bf16=True)
PLAIN_CPU = CpuInfo("old", ("avx2",), 2)
GOOD = {"spearman": 79.9, "f1": 0.5, "min_cosine": 0.995}


class OnGpu(Target):
    """A target whose model says it sits on a CUDA device (its weights stay on the CPU)."""

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", 0)


def gpu_target(identity: str = "model-x") -> OnGpu:
    return OnGpu(
        kind="encoder",
        identity=lambda: identity,
        weights=lambda: identity,
        model=torch.nn.Linear(4, 4),
        forward=lambda m, f: m(f["x"].to(next(m.parameters()).dtype)),
        tokenizer=None,
        max_length=8,
        check_batches=list,
        probe_shapes=(),
        output="y",
    )


PROBED: dict[str, float] = {}
"""The rates the fake GPU's probe answers (none by default: no probe at hand)."""


@pytest.fixture()
def fake_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An H100 as far as the choice and the check can tell; its probe answers :data:`PROBED`, and is asked
    for the GPU's rates, never the CPU's."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2")
    PROBED.clear()

    def gpu_info(device: Any) -> GpuInfo | None:
        return H100 if torch.device(device).type == "cuda" else None

    def gpu_probe(
        target: Target, paths: list[str], *args: Any, gpu: GpuInfo | None = None, **kw: Any
    ) -> dict:
        assert gpu == H100, "a model on a GPU is probed on the GPU, keyed by its kind"
        return {p: PROBED[p] for p in paths if p in PROBED}

    for module in (choice_module, making):
        monkeypatch.setattr(module, "gpu_info", gpu_info)
    monkeypatch.setattr(choice_module, "probe_rates", gpu_probe)
    return tmp_path


def stored(identity: str, paths: dict[str, dict]) -> dict:
    return {
        "format": RECORD_FORMAT,
        "kind": "encoder",
        "identity": identity,
        "reference": {"path": "torch-fp32", "spearman": 80.0, "f1": 0.5},
        "paths": paths,
    }


def test_the_paths_of_a_model_on_a_gpu() -> None:
    assert candidates("auto", "auto", PLAIN_CPU, onnx_ok=True, gpu=H100)[0] == [
        "torch-fp32",
        "torch-bf16",
        "torch-fp16",
    ]
    keep, why = candidates("auto", "auto", PLAIN_CPU, onnx_ok=True, gpu=GpuInfo("Tesla T4", bf16=False))
    assert keep == ["torch-fp32", "torch-fp16"] and "no bf16" in why["torch-bf16"]
    assert "CPU only" in why["torch-int8"] and "CPU only" in why["onnx-int8"]
    assert candidates("auto", "int8", PLAIN_CPU, onnx_ok=True, gpu=H100)[0] == []
    # fp16 is a GPU path: not a candidate on a CPU, not even asked for
    assert candidates("auto", "fp16", PLAIN_CPU, onnx_ok=True)[0] == []
    assert "fp16" not in "".join(candidates("auto", "auto", PLAIN_CPU, onnx_ok=True)[0])


def test_auto_on_a_gpu_takes_a_half_precision_only_where_the_check_passed_it_there(fake_gpu: Path) -> None:
    target = gpu_target()
    assert select(target, precision="auto").choice.path == "torch-fp32"  # no record: the exact path
    save_quality_check(stored("model-x", {"torch-bf16": GOOD, "torch-fp16": GOOD}))
    cpu_only = select(target, precision="auto").choice  # passed on a CPU: not a verdict for the GPU
    assert cpu_only.path == "torch-fp32" and "not checked on a GPU" in cpu_only.excluded["torch-bf16"]
    save_quality_check(
        stored("model-x", {"torch-bf16@cuda": {**GOOD, "spearman": 70.0}, "torch-fp16@cuda": GOOD})
    )
    picked = select(target, precision="auto").choice
    assert picked.path == "torch-fp16" and picked.quality_check.startswith("passed")
    assert "Spearman drops" in picked.excluded["torch-bf16"]
    assert picked.device.startswith("cuda:0") and "GPU cuda:0" in picked.describe()
    save_quality_check(stored("model-x", {"torch-bf16@cuda": GOOD, "torch-fp16@cuda": GOOD}))
    assert select(target, precision="auto").choice.path == "torch-bf16"  # bf16 first: fp32's range
    # asked for, a precision runs on the GPU whatever its check (and the log says so)
    assert select(target, precision="fp16").choice.path == "torch-fp16"
    with pytest.raises(ConfigError, match="on the GPU .*int8 runs on the CPU only"):
        select(target, precision="int8")


def test_auto_on_a_gpu_takes_a_half_precision_only_where_the_probe_finds_it_faster(fake_gpu: Path) -> None:
    """An H100 embedded 5,790 items/s in bf16 against 9,272 in fp32: a passed check is not enough."""
    target = gpu_target()
    save_quality_check(stored("model-x", {"torch-bf16@cuda": GOOD, "torch-fp16@cuda": GOOD}))
    PROBED.update({"torch-fp32": 9272.0, "torch-bf16": 5790.0, "torch-fp16": 6100.0})
    slow_half = select(target, precision="auto").choice
    assert slow_half.path == "torch-fp32" and slow_half.reason.startswith("fastest in the probe: 9272")
    assert (
        slow_half.probe["torch-bf16"] == 5790.0 and slow_half.excluded["torch-bf16"] == "slower in the probe"
    )
    PROBED.update({"torch-bf16": 9800.0})  # faster, but under LOSSY_MIN_GAIN: the exact numbers win
    assert select(target, precision="auto").choice.path == "torch-fp32"
    PROBED.update({"torch-bf16": 21000.0, "torch-fp16": 22000.0})
    fast = select(target, precision="auto").choice
    assert fast.path == "torch-fp16" and fast.quality_check.startswith("passed")
    # a half precision the check failed is not taken however fast
    save_quality_check(stored("model-x", {"torch-bf16@cuda": GOOD, "torch-fp16@cuda": {**GOOD, "f1": 0.4}}))
    assert select(target, precision="auto").choice.path == "torch-bf16"
    # asked for, a precision is taken whatever the probe says
    PROBED.update({"torch-fp16": 10.0})
    assert select(target, precision="fp16").choice.path == "torch-fp16"


def test_the_probe_of_a_gpu_is_cached_per_gpu_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nlsim.inference.probe import load_probe, probe_file, save_probe

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    rates = {"torch-fp32": 9272.0, "torch-bf16": 5790.0}
    path = save_probe("arch", 16, PLAIN_CPU, rates, [[256, 24]], gpu=H100)
    assert path == probe_file("arch", 2, PLAIN_CPU, H100)  # the CPU's threads do not time a GPU
    assert path.parent.name == "gpu-NVIDIA-H100-80GB-HBM3"
    assert load_probe("arch", 2, PLAIN_CPU, H100) == rates
    assert load_probe("arch", 16, PLAIN_CPU) == {}  # not the CPU's rates
    assert load_probe("arch", 16, PLAIN_CPU, GpuInfo("Tesla T4", bf16=False)) == {}


def test_the_quality_check_runs_the_half_precisions_on_the_gpu(fake_gpu: Path) -> None:
    target = gpu_target()
    worth = weigh_lossy(target)
    keep, skipped = worth.keep, worth.skipped
    assert keep == ["torch-bf16", "torch-fp16"]
    assert all("CPU only" in skipped[p] for p in ("onnx-int8", "torch-int8"))
    seen: list[str] = []

    def measure(runner: Any) -> dict[str, Any]:
        seen.append(runner.precision)
        out = runner({"x": np.ones((2, 4), dtype=np.float32)})
        assert out.dtype == np.float32
        return dict(GOOD)

    record = {"kind": "encoder", "reference": {"spearman": 80.0, "f1": 0.5}}
    making.check_lossy_paths(record, target, making.plan_paths(target, None, 1), 1, measure)
    assert seen == ["bf16", "fp16"] and record["gpu"]["name"] == H100.name
    assert record["paths"]["torch-bf16@cuda"]["passed"] and record["paths"]["torch-fp16@cuda"]["passed"]
    assert "CPU only" in record["paths"]["torch-int8"]["not_checked"]
    assert not any("not on the CPU" in str(entry) for entry in record["paths"].values())
    assert quality_verdict(record, "torch-bf16", "cuda:0")[0]
    assert not quality_verdict(record, "torch-bf16")[0]  # on a CPU: not checked there


def test_an_explicit_precision_never_leaves_the_gpu_unsaid(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import nlsim.encoders.device as device_module
    from nlsim.encoders.registry import run_options

    monkeypatch.setattr(device_module, "default_device", lambda: torch.device("cuda"))
    assert run_options(None, None, "auto", "bf16") == ("cuda", "auto", "bf16")  # on the GPU, not the CPU
    assert run_options(None, None, "torch", "fp16") == ("cuda", "torch", "fp16")
    assert run_options(None, None, "auto", "auto")[0] == "cuda"
    caplog.set_level(logging.WARNING, logger="nlsim")
    assert run_options(None, None, "auto", "int8") == (None, "auto", "int8")
    assert "runs on the CPU only: the GPU (cuda) is left idle" in caplog.text
    with pytest.raises(ConfigError, match="int8.*CPU only"):
        run_options("cuda:0", None, "auto", "int8")


def test_the_probe_trusts_a_gpu_rate_only_beside_a_timed_exact_path() -> None:
    """A cached probe that lacks fp32 (an older cache, ``NLSIM_PROBE=cached``) cannot show a half precision
    to be faster: the unmeasured rule decides, as with no probe."""
    from nlsim.inference.choice import decide

    passed = {"torch-bf16": (True, "passed", None), "torch-fp16": (True, "passed", None)}
    cands = ["torch-fp32", "torch-bf16", "torch-fp16"]
    only_half = decide(cands, {}, {"torch-fp16": 5000.0}, passed, on_gpu=True)
    assert only_half.path == "torch-bf16" and only_half.reason == "half precision on the GPU"
    timed = decide(cands, {}, {"torch-fp32": 9000.0, "torch-fp16": 5000.0}, passed, on_gpu=True)
    assert timed.path == "torch-fp32"


def test_the_exact_path_is_timed_to_its_outputs_in_host_memory() -> None:
    """The probe compares the fp32 model with runners that hand back numpy: fp32 must too, or on a GPU its
    time would stop before the work ends."""
    target = Target(
        kind="encoder",
        identity=lambda: "x",
        weights=lambda: "x",
        model=torch.nn.Linear(4, 4),
        forward=lambda m, f: m(f["x"].float()),
        tokenizer=None,
        max_length=8,
        check_batches=list,
        probe_shapes=(),
        output="y",
    )
    out = target.run(None, {"x": np.ones((2, 4), dtype=np.float32)})
    assert isinstance(out, np.ndarray) and out.shape == (2, 4) and out.dtype == np.float32
