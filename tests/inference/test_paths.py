"""The inference paths the options and the CPU allow: refused combinations, the CPU's instructions each
lossy path needs, and the order that breaks ties."""

from __future__ import annotations

import pytest

from nlsim.errors import ConfigError
from nlsim.inference.cpu import CpuInfo
from nlsim.inference.paths import PATHS, candidates, check_options

VNNI_ONLY = CpuInfo("EPYC", ("avx2", "avx512f", "avx512_vnni"), 2)
AMX = CpuInfo("Xeon", ("avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"), 2)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_a_half_precision_on_onnx_runtime_is_refused_naming_why(precision: str) -> None:
    with pytest.raises(ConfigError, match=f"precision '{precision}' runs on torch only"):
        check_options("onnx", precision)


def test_int8_instructions_do_not_stand_for_bf16_ones() -> None:
    """A CPU with VNNI and no bf16 instructions tries int8, not bf16 (it would be emulated in fp32)."""
    cands, why = candidates("auto", "auto", VNNI_ONLY, onnx_ok=True)
    assert cands == ["onnx-fp32", "torch-fp32", "onnx-int8", "torch-int8"]
    assert "bf16" in why["torch-bf16"]


def test_the_paths_come_in_the_order_that_breaks_ties() -> None:
    order = ["onnx-fp32", "torch-fp32", "onnx-int8", "torch-bf16", "torch-int8"]
    assert candidates("auto", "auto", AMX, onnx_ok=True)[0] == order
    assert [p for p in PATHS if p in order] == order


def test_onnx_runtime_asked_for_on_a_cpu_without_avx512() -> None:
    """Without AVX-512 torch fp32 goes before ONNX Runtime's, but ``backend=onnx`` leaves torch out: the
    ONNX paths are the candidates, as they are."""
    plain = CpuInfo("old", ("avx2", "avx_vnni"), 2)
    assert candidates("onnx", "auto", plain, onnx_ok=True)[0] == ["onnx-fp32", "onnx-int8"]
