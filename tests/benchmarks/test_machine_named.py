"""Each benchmark's figures name the CPU they were measured on, and a run at other sizes or settings than
the committed figures' writes beside them, never over them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_daily  # noqa: E402

from nlsim.inference.cpu import cpu_info  # noqa: E402


@pytest.fixture
def fake_daily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """bench_daily with its work stubbed out (no model, no runs): what it writes, and where."""
    import nlsim.dedup.run
    import nlsim.encoders

    stats = SimpleNamespace(
        timings_s={"embed": 0.1}, counts=SimpleNamespace(new=5, expired=0, kept=300, pairs=0)
    )
    monkeypatch.setattr(nlsim.encoders, "load_encoder", lambda *a, **k: SimpleNamespace(dim=4))
    monkeypatch.setattr(nlsim.dedup.run, "run_dedup", lambda *a, **k: SimpleNamespace(stats=stats))
    monkeypatch.setattr(bench_daily, "seed_state", lambda *a, **k: None)
    monkeypatch.setattr(bench_daily, "RESULTS", tmp_path / "results")
    return tmp_path / "results"


def test_the_daily_benchmark_names_the_cpu_and_writes_a_quick_run_beside_the_figures(
    fake_daily: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``daily.md`` said ``machine: x86_64`` only, and ``--kept 300 --new 5`` replaced the committed
    ``daily.json`` and ``.md`` (30,000 kept, 1,000 new)."""
    assert bench_daily.main(["--kept", "300", "--new", "5", "--runs", "1"]) == 0
    assert sorted(p.name for p in fake_daily.iterdir()) == [
        "daily-kept300-new5-runs1.json",
        "daily-kept300-new5-runs1.md",
    ]
    model = cpu_info().model
    assert model and model in (fake_daily / "daily-kept300-new5-runs1.md").read_text()
    setup = json.loads((fake_daily / "daily-kept300-new5-runs1.json").read_text())["setup"]
    assert model in setup["machine"] and setup["cpu"]["model"] == model


@pytest.mark.parametrize(
    "argv", [["--runs", "0"], ["--kept", "-5"], ["--new", "x"], ["--days", "0"], ["--threads", "0"]]
)
def test_the_daily_benchmark_refuses_a_count_below_one(
    argv: list[str], fake_daily: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        bench_daily.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and argv[0] in err and "Traceback" not in err
    assert not fake_daily.exists()


def test_the_reliability_record_names_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``reliability.json`` and ``.md`` gave their elapsed time without the machine it was measured on."""
    import bench_reliability

    monkeypatch.setattr(bench_reliability, "RESULTS", tmp_path)
    host = bench_reliability.machine()
    bench_reliability.write({"kill_points_tried": 1, "elapsed_s": 3.0}, [{"day": 1, "stage": "embed"}], host)
    model = cpu_info().model
    assert model in (tmp_path / "reliability.md").read_text()
    assert model in json.loads((tmp_path / "reliability.json").read_text())["machine"]


def test_the_gpu_records_name_the_cpu_beside_the_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench_gpu.py`` named the GPU only: its CPU-side figures (exact search, the host) had no CPU."""
    import bench_gpu

    monkeypatch.setattr(
        bench_gpu, "search", lambda args: {"what": "search", "gpu": "no CUDA GPU", "rows": []}
    )
    bench_gpu.main(["search", "--out", str(tmp_path / "search.json")])
    record = json.loads((tmp_path / "search.json").read_text())
    assert cpu_info().model in record["machine"] and record["gpu"] == "no CUDA GPU"


def test_a_quality_step_names_the_machine_it_trained_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate's JSON under ``results/quality/`` gave seconds per epoch (and the precision the CPU chose
    decides its scores) without naming the CPU."""
    import bench_quality

    import nlsim.training.finetune

    done = SimpleNamespace(best={}, history=[], seconds_per_epoch=[1.0], seconds=1.0, reranker=None)
    monkeypatch.setattr(nlsim.training.finetune, "finetune", lambda *a, **k: done)
    monkeypatch.setattr(bench_quality, "RESULTS", tmp_path)
    monkeypatch.setattr(bench_quality, "TRAINED", tmp_path / "models")
    (tmp_path / "select").mkdir()
    row = bench_quality.train_candidate("c", "select", {"loss": "cosent"}, pairs=str(bench_quality.PAIRS))
    assert cpu_info().model in row["machine"]
    assert cpu_info().model in json.loads((tmp_path / "select" / "c.json").read_text())["machine"]


def test_the_cost_curve_names_the_machines_its_figures_were_measured_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_scale.py plot`` titled the redrawn curve with the CPU of the machine drawing it, not of those
    that measured the figures, and ``cost_curve.md`` named none."""
    import bench_scale

    chip = "CPU Test Chip 9000 (2 cores), 24 GiB RAM"
    base = {"items": 10_000, "items_per_s": 14.3, "encode_s": 700.0, "peak_rss_mb": 1800.0}
    e5 = {"items": 10_000, "seconds": 86.0, "items_per_s": 116.0, "peak_rss_mb": 2100.0, "method": "x"}
    search = {
        "runs": [{"method": "ivf", "n": 10_000, "total_s": 1.0, "peak_rss_mb": 900.0, "recall": 0.99}],
        "meta": {"runs_by_date": {"2026-11-22 03:47 UTC": {"machine": f"{chip}, load average at start 1.0"}}},
    }
    for name, record in (("base.json", base), ("e5.json", {**e5, "machine": f"{chip}, load average 2.0"})):
        (tmp_path / name).write_text(json.dumps(record))
    (tmp_path / "search.json").write_text(json.dumps(search))
    monkeypatch.setattr(bench_scale, "BASE_META", tmp_path / "base.json")
    monkeypatch.setattr(bench_scale, "E5_JSON", tmp_path / "e5.json")
    monkeypatch.setattr(bench_scale, "STREAM_E5_JSON", tmp_path / "none.json")
    monkeypatch.setattr(bench_scale, "SEARCH_JSON", tmp_path / "search.json")
    bench_scale.main(["plot", "--out", str(tmp_path / "out")])
    md = (tmp_path / "out" / "cost_curve.md").read_text()
    assert md.startswith(f"Measured on {chip}.\n")
    assert cpu_info().model not in md


def test_the_quality_figures_name_the_machine_in_their_json_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same-story, story-misses, story-scores and ensemble benchmarks named the CPU in their ``.md``
    only: their ``.json`` was the bare rows, which said nothing of the machine (and so of the arithmetic)
    that made the figures."""
    import bench_ensemble
    import bench_same_story

    model = cpu_info().model
    monkeypatch.setattr(bench_same_story, "OUT", tmp_path / "same_story")
    bench_same_story.write_results("story_misses", "# figures", [{"f1": 0.5}], lambda rows, path: None)
    (row,) = json.loads((tmp_path / "story_misses.json").read_text())
    assert model in row["machine"] and row["f1"] == 0.5
    monkeypatch.setattr(bench_ensemble, "markdown", lambda rows, header, stores: f"# {header}")
    monkeypatch.setattr(bench_ensemble, "plot", lambda rows, path: None)
    bench_ensemble.write(
        tmp_path / "ensemble", [{"variant": "mean", "f1": 0.6}], bench_ensemble.machine(), []
    )
    (row,) = json.loads((tmp_path / "ensemble.json").read_text())
    assert model in row["machine"] and row["f1"] == 0.6


def test_the_probe_and_lanes_benchmarks_print_the_cpu_with_their_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench_probe.py`` and ``bench_probe_rounds.py`` printed their timings and table without the CPU
    they were measured on (only their files named it)."""
    import _common

    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    _common.write_results("probe", {"machine": _common.machine_record()}, "| model | s |")
    out = capsys.readouterr().out
    assert cpu_info().model in out and "probe_" in out
