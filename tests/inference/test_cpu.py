"""The CPU in hand as the inference choice reads it: /proc/cpuinfo's first model name and flags, the flags
nlsim reads, the probe's key, AMX where torch cannot tell, and the one line that describes it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from nlsim.inference import cpu as cpu_module
from nlsim.inference.cpu import CpuInfo, amx_usable, cpu_info, parse_cpuinfo


def test_the_first_processors_model_name_and_flags_are_read() -> None:
    text = (
        "processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: fpu avx2 avx512f\n\n"
        "processor\t: 1\nmodel name\t: Other CPU\nflags\t\t: fpu\n"
    )
    assert parse_cpuinfo(text) == ("Intel Xeon", {"fpu", "avx2", "avx512f"})


def test_amx_is_its_tiles() -> None:
    """AMX is said where the CPU has AMX's tiles (``amx_tile``), whichever of AMX's number types it has."""
    int8_only = CpuInfo("x", ("avx512f", "amx_tile", "amx_int8"), 2)
    assert int8_only.has_amx and int8_only.describe().endswith("; AMX)")
    no_tiles = CpuInfo("x", ("avx512f", "amx_bf16"), 2)
    assert not no_tiles.has_amx and no_tiles.as_dict()["amx"] is False


def test_the_probes_key_tells_core_counts_apart() -> None:
    """A probe timed on 2 cores is not one of 16: the key of a CPU kind holds its core count."""
    flags = ("avx2", "avx512f")
    assert CpuInfo("EPYC", flags, 2).key != CpuInfo("EPYC", flags, 16).key
    assert CpuInfo("EPYC", flags, 2).key == CpuInfo("EPYC", flags, 2).key


def test_a_cpu_without_the_flags_read_says_so() -> None:
    assert CpuInfo("x", (), 2).describe() == "x (2 cores; no AVX2/AVX-512 flags read; no AMX)"


def test_amx_counts_where_torch_has_no_way_to_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch without the call that requests AMX's tiles leaves the flags as /proc/cpuinfo gives them."""
    monkeypatch.setattr(torch._C, "_cpu", SimpleNamespace(), raising=False)
    assert amx_usable() is True
    monkeypatch.setattr(torch._C, "_cpu", SimpleNamespace(_init_amx=lambda: False))
    assert amx_usable() is False


def test_the_flags_read_are_those_nlsim_reads_in_its_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        cpu_module, "_read", lambda: ("Xeon", frozenset({"fpu", "amx_tile", "avx2", "sse4_2"}))
    )
    monkeypatch.delenv("NLSIM_CPU_FLAGS", raising=False)
    assert cpu_info().flags == ("avx2", "amx_tile")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "")  # set and blank: a CPU with none
    assert cpu_info().flags == ()
