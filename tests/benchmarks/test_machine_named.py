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
