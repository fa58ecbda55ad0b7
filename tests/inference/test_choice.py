"""The pick among the inference paths (:mod:`nlsim.inference.choice`) on a small model: the probe's margin,
unchecked lossy paths, a precision asked for, and the fallback when a path cannot be set up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from target_helpers import linear_target

import nlsim.inference.choice as choice_module
from nlsim.errors import ConfigError
from nlsim.inference.choice import LOSSY_MIN_GAIN, Choice, announce, decide, select, settle
from nlsim.inference.cpu import CpuInfo
from nlsim.inference.target import Target

ZEN4 = CpuInfo("a CPU", ("avx2", "avx512f", "avx512_vnni", "avx512_bf16"), cores=2)
AMX = CpuInfo("a CPU", ("avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"), cores=2)
PASSED = (True, "passed", None)


class Broken(Target):
    """A target whose paths named in ``fails`` cannot be set up (their builds counted in ``tries``)."""

    fails: tuple[str, ...] = ()
    tries: list[str]

    def build(self, path: str, threads: int | None) -> Any:
        self.tries.append(path)
        if len(self.tries) > 3:
            raise SystemExit("the same path chosen again and again")
        if path in self.fails:
            raise RuntimeError(f"{path} broke")
        return super().build(path, threads)


def small_target(fails: tuple[str, ...] = ()) -> Broken:
    target = linear_target("choice-test", cls=Broken)
    target.fails, target.tries = fails, []
    return target


def test_a_lossy_path_exactly_the_margin_faster_is_taken() -> None:
    probe = {"onnx-fp32": 300.0, "torch-fp32": 200.0, "onnx-int8": 300.0 * LOSSY_MIN_GAIN}
    pick = decide(["onnx-fp32", "torch-fp32", "onnx-int8"], {}, probe, {"onnx-int8": PASSED})
    assert pick.path == "onnx-int8"


def test_a_lossy_path_with_no_verdict_is_not_taken() -> None:
    pick = decide(["torch-fp32", "onnx-int8"], {}, {"torch-fp32": 100.0, "onnx-int8": 900.0}, {})
    assert pick.path == "torch-fp32" and pick.excluded["onnx-int8"] == "quality check: not checked"


def test_a_precision_asked_for_is_timed_among_its_paths_checked_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--precision int8`` with no quality check: both int8 paths stay candidates, and the probe picks."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    rates = {"onnx-int8": 150.0, "torch-int8": 400.0}
    monkeypatch.setattr(choice_module, "probe_rates", lambda t, paths, *a, **k: {p: rates[p] for p in paths})
    choice = select(small_target(), precision="int8", cpu=ZEN4, onnx_ok=True).choice
    assert choice.path == "torch-int8" and choice.reason.startswith("fastest in the probe")


def test_bf16_asked_for_on_a_cpu_with_amx_is_the_only_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    choice = select(small_target(), precision="bf16", cpu=AMX, onnx_ok=True).choice
    assert (choice.path, choice.reason) == ("torch-bf16", "the only candidate")


def test_only_a_backend_and_a_precision_both_asked_for_force_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    for backend, precision, forced in (
        ("torch", "auto", False),
        ("auto", "fp32", False),
        ("torch", "fp32", True),
    ):
        options = {
            "backend": backend,
            "precision": precision,
            "cpu": ZEN4,
            "onnx_ok": True,
            "use_probe": False,
        }
        choice = select(small_target(), **options).choice
        assert choice.forced is forced, (backend, precision)


def test_torch_fp32_is_never_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The path every model can take stays a candidate even where it is asked to be left out, and where it
    cannot be set up the error is raised, not chosen around."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2")
    monkeypatch.setenv("NLSIM_PROBE", "off")
    choice = select(small_target(), backend="torch", precision="fp32", exclude={"torch-fp32": "broke"}).choice
    assert choice.path == "torch-fp32"
    target = small_target(fails=("torch-fp32",))
    with pytest.raises(RuntimeError, match="torch-fp32 broke"):
        settle(target, "a model")
    assert target.tries == ["torch-fp32"]


def test_a_path_that_cannot_be_set_up_is_chosen_around_unless_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx512f")
    monkeypatch.setenv("NLSIM_PROBE", "off")
    target = small_target(fails=("onnx-fp32",))
    choice, runner = settle(target, "a model")
    assert (choice.path, runner, target.tries) == ("torch-fp32", None, ["onnx-fp32", "torch-fp32"])
    with pytest.raises(RuntimeError, match="onnx-fp32 broke"):
        settle(small_target(fails=("onnx-fp32",)), "a model", backend="onnx", precision="fp32")
    with pytest.raises(ConfigError):
        select(small_target(), backend="onnx", precision="bf16")


def test_the_only_path_left_by_the_quality_check_is_the_only_candidate() -> None:
    failed = {"onnx-int8": (False, "failed", None)}
    pick = decide(["torch-fp32", "onnx-int8"], {}, {}, failed)
    assert (pick.path, pick.reason) == ("torch-fp32", "the only candidate")
    # lossy paths alone, none passed: the exact torch path, never an unpassed lossy one
    assert (
        decide(["onnx-int8", "torch-int8"], {}, {}, {"onnx-int8": failed["onnx-int8"]}).path == "torch-fp32"
    )


def test_only_a_lossy_path_tags_its_outputs() -> None:
    assert Choice("onnx-fp32", "x").tag == "" and Choice("torch-fp32", "x", device="cuda:0").tag == ""
    assert Choice("torch-bf16", "x", device="cuda:0").tag == "torch-bf16@cuda"


def test_an_exact_precision_asked_for_is_said_not_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[tuple[str, str]] = []
    monkeypatch.setattr(choice_module, "say", lambda line: said.append(("say", line)))
    monkeypatch.setattr(choice_module, "warn", lambda line: said.append(("warn", line)))
    announce("a model", Choice("onnx-fp32", "the only candidate", requested={"precision": "fp32"}))
    announce("a model", Choice("torch-int8", "the only candidate", requested={"precision": "int8"}))
    assert [kind for kind, _ in said] == ["say", "warn"]


def test_only_a_cpu_run_is_said_to_lack_what_its_path_needs() -> None:
    """bf16 on a CPU without avx512_bf16 is said to be likely slower than fp32; on a GPU the CPU's
    instructions do not matter, and the reason says nothing of them."""
    from types import SimpleNamespace

    from nlsim.inference.choice import _where

    cpu = CpuInfo("EPYC", ("avx2",))
    here = Choice("torch-bf16", "asked")
    _where(here, cpu, None, "cpu")
    assert here.reason == "asked; no avx512_bf16 or AMX-BF16 on this CPU: likely slower than fp32"
    assert here.device == "cpu"
    there = Choice("torch-bf16", "asked")
    _where(there, cpu, SimpleNamespace(describe=lambda: "NVIDIA H100"), "cuda")
    assert (there.reason, there.device) == ("asked", "cuda: NVIDIA H100")


def test_torch_fp32_already_first_is_left_first_without_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from nlsim.inference.choice import no_export_first

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    target = SimpleNamespace(weights=lambda: "ab" * 32, export_name=lambda: "ab" * 12)
    assert no_export_first(target, ["torch-fp32", "onnx-fp32"]) == (["torch-fp32", "onnx-fp32"], "")  # type: ignore[arg-type]
    first, said = no_export_first(target, ["onnx-fp32", "torch-fp32"])  # type: ignore[arg-type]
    assert first == ["torch-fp32", "onnx-fp32"] and said.startswith(" (torch-fp32 first: no ONNX export yet")
