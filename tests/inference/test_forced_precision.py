"""A precision asked for on a CPU without the instructions that make it fast: what the run says."""

from __future__ import annotations

from pathlib import Path

import pytest
from target_helpers import linear_target

from nlsim.inference.choice import select
from nlsim.inference.cpu import CpuInfo
from nlsim.inference.target import Target

AVX2 = CpuInfo("a CPU", ("avx2",), cores=2)
ZEN4 = CpuInfo("a CPU", ("avx2", "avx512f", "avx512_vnni", "avx512_bf16"), cores=2)


def _target() -> Target:
    return linear_target("forced-precision-test")


@pytest.mark.parametrize(
    ("backend", "precision", "path", "words"),
    [
        ("torch", "bf16", "torch-bf16", "no avx512_bf16 or AMX-BF16 on this CPU"),
        ("torch", "int8", "torch-int8", "no VNNI or AMX-INT8 on this CPU"),
        ("auto", "bf16", "torch-bf16", "no avx512_bf16 or AMX-BF16 on this CPU"),
    ],
)
def test_a_precision_asked_for_on_a_cpu_without_its_instructions_is_run_and_said_to_be_slow(
    backend: str, precision: str, path: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--precision bf16`` on a CPU without avx512_bf16 or AMX-BF16 ran bf16 emulated in fp32 arithmetic,
    slower than fp32, and the run's line said only that it was the only candidate (and, without a passed
    check, that the check had not passed it): nothing told the operator why the job crawled. The path asked
    for still runs, and the choice's reason (the log line, the run record) says what the CPU lacks."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    choice = select(_target(), backend=backend, precision=precision, cpu=AVX2, onnx_ok=False).choice
    assert choice.path == path
    assert words in choice.reason and "slower than fp32" in choice.reason
    assert words in choice.describe()
    fast = select(_target(), backend=backend, precision=precision, cpu=ZEN4, onnx_ok=False).choice
    assert fast.path == path and "on this CPU" not in fast.reason
