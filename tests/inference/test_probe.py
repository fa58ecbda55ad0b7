"""The probe's cache of timings: what a run does when it cannot keep them."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from target_helpers import linear_target

from nlsim.inference import probe
from nlsim.inference.cpu import CpuInfo

CPU = CpuInfo("a CPU", ("avx2",), cores=2)


def _target() -> SimpleNamespace:
    """What the probe needs of a model: an architecture, batches, and two paths that run at once."""
    batch = {"input_ids": np.zeros((4, 8), dtype=np.int64), "attention_mask": np.ones((4, 8), np.int64)}
    return SimpleNamespace(
        architecture=lambda: "probe-test",
        probe_batches=lambda: ([batch], [[4, 8]]),
        build=lambda path, threads: path,
        run=lambda runner, b: None,
    )


def test_timings_a_read_only_home_cannot_keep_leave_the_run_its_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """NLSIM_HOME on a read-only file system: an embedding job big enough to time its paths timed them, then
    stopped in 'nlsim embed: error: .../probes: Read-only file system' when it came to keep the timings,
    every run again, where the embedding cache in the same home goes on without keeping its vectors. The
    timings are used for this run's choice, the run says they were not kept, and the next run times again."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))

    def read_only(path: object, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(probe, "atomic_write_text", read_only)
    runners: dict[str, object] = {}
    with caplog.at_level("WARNING", logger="nlsim"):
        rates = probe.probe_rates(_target(), ["onnx-fp32", "torch-fp32"], 2, CPU, runners, {})
    assert set(rates) == {"onnx-fp32", "torch-fp32"} and all(r > 0 for r in rates.values())
    assert set(runners) == {"onnx-fp32", "torch-fp32"}
    assert "not kept (Read-only file system)" in caplog.text and "probes" in caplog.text
    assert probe.load_probe("probe-test", 2, CPU) == {}


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "null",
        '{"format": 1, "versions": VERSIONS, "items_per_s": {"torch-fp32": null}}',
        '{"format": 1, "versions": VERSIONS, "items_per_s": {"torch-fp32": true}}',  # read as 1 item/s
        '{"format": 1, "versions": VERSIONS, "items_per_s": {"torch-fp32": "120"}}',  # a rate in quotes
    ],
)
def test_a_probe_file_nlsim_never_writes_is_timed_again(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached probe holding JSON that is not an object, or a rate that is not a number (a file edited by
    hand, another tool's), stopped every run that read it with "AttributeError: 'list' object has no
    attribute 'get'" or "TypeError: float() argument must be ... not 'NoneType'", until it was found and
    deleted. It is read as no probe, as one made with other library versions is: the paths are timed
    again and the file is written anew."""
    import json

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    path = probe.probe_file("probe-test", 2, CPU)
    path.parent.mkdir(parents=True)
    path.write_text(text.replace("VERSIONS", json.dumps(probe._versions())), encoding="utf-8")
    assert probe.load_probe("probe-test", 2, CPU) == {}
    rates = probe.probe_rates(_target(), ["onnx-fp32", "torch-fp32"], 2, CPU, {}, {})
    assert probe.load_probe("probe-test", 2, CPU) == pytest.approx(rates, abs=0.01)


def test_timings_another_run_kept_meanwhile_are_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs timing different paths of one model at once (a job's exact paths, and the int8 paths a
    forced precision or a quality check weighs) each wrote the cache with what it had read before timing
    and what it timed: the last to finish dropped the other's timings, which the next run timed again.
    A run keeps the timings another run added to the cache while it timed, beside its own."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    target = _target()

    def build(path: str, threads: int) -> str:
        if path == "onnx-fp32":  # another run finishes its timing of the int8 paths meanwhile
            probe.save_probe("probe-test", 2, CPU, {"onnx-int8": 500.0, "torch-int8": 300.0}, [])
        return path

    target.build = build
    rates = probe.probe_rates(target, ["onnx-fp32", "torch-fp32"], 2, CPU, {}, {})
    kept = probe.load_probe("probe-test", 2, CPU)
    assert kept == pytest.approx({**rates, "onnx-int8": 500.0, "torch-int8": 300.0}, abs=0.01)


def test_a_lossy_path_the_cached_probe_never_timed_is_still_worth_its_quality_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under NLSIM_PROBE=cached, a cached probe that timed the exact paths but not the lossy ones (they had
    no quality check yet, or another run timed only what it chose among) left every lossy path out of the
    quality check as "not faster on this CPU: 0 items/s in the probe", a timing never made. A lossy path
    the probe has no timing of is checked, as every one is where there is no probe at all; one it timed
    too slow is still left out."""
    import torch

    from nlsim.inference.choice import weigh_lossy

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    monkeypatch.setenv("NLSIM_PROBE", "cached")
    model = torch.nn.Linear(2, 2)
    model.config = SimpleNamespace(to_dict=lambda: {"layers": 1})  # type: ignore[assignment]
    target = linear_target("x", model)
    zen4 = CpuInfo("a CPU", ("avx2", "avx512f", "avx512_vnni", "avx512_bf16"), cores=2)
    probe.save_probe(
        target.architecture(), 2, zen4, {"onnx-fp32": 100.0, "torch-fp32": 90.0, "torch-int8": 95.0}, []
    )
    worth = weigh_lossy(target, threads=2, cpu=zen4)
    assert "torch-bf16" in worth.keep and "torch-bf16" not in worth.skipped
    assert "torch-int8" in worth.skipped and "95 items/s" in worth.skipped["torch-int8"]
