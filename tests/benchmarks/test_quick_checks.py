"""A quick check of a benchmark at a small size never replaces the figures and vectors the others use."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _common  # noqa: E402
import bench_embedding  # noqa: E402
import bench_lanes  # noqa: E402
import bench_rerank  # noqa: E402
import bench_scale  # noqa: E402
import bench_story_model  # noqa: E402
import make_vectors  # noqa: E402


def test_a_limited_make_vectors_run_writes_beside_the_base_vectors() -> None:
    assert make_vectors.output_paths(10_000, 10_000) == (_common.BASE_VECTORS, _common.BASE_META)
    vectors, meta = make_vectors.output_paths(300, 10_000)
    assert (vectors.name, meta.name) == ("thucnews_e5_300.npy", "thucnews_e5_300.json")
    assert vectors.parent == _common.BASE_VECTORS.parent and meta.parent == _common.BASE_META.parent


@pytest.mark.parametrize(
    ("argv", "written"),
    [
        (["--model", "paraphrase-MiniLM-L3-v2"], "thucnews_e5-modelparaphrase_MiniLM_L3_v2"),
        (["--convert", "none", "--limit", "3"], "thucnews_e5-convertnone_3"),
        (["--threads", "1"], "thucnews_e5"),
    ],
)
def test_vectors_of_another_model_or_conversion_are_never_taken_for_the_base_ones(
    argv: list[str], written: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make_vectors.py --model paraphrase-MiniLM-L3-v2`` (or another ``--corpus`` or ``--convert``) wrote
    its vectors over ``thucnews_e5.npy`` and its record: the scale and search benchmarks then replicated
    another model's vectors, their record agreeing with them, and nothing said so."""
    from types import SimpleNamespace

    import pandas as pd

    import nlsim.encoders

    def encode(texts: list[str], **kwargs: object) -> np.ndarray:
        return np.eye(len(texts), 4, dtype=np.float32)

    encoder = SimpleNamespace(model_id="m", fingerprint="f", encode=encode)
    monkeypatch.setattr(nlsim.encoders, "load_encoder", lambda *a, **k: encoder)
    monkeypatch.setattr(make_vectors, "choose_noise", lambda emb: {"noise": 0.3})
    monkeypatch.setattr(make_vectors, "BASE_VECTORS", tmp_path / "cache" / "thucnews_e5.npy")
    monkeypatch.setattr(make_vectors, "BASE_META", tmp_path / "thucnews_e5.json")
    monkeypatch.setattr(make_vectors, "CORPUS", tmp_path / "titles.parquet")
    pd.DataFrame({"id": ["1", "2", "3", "4"], "title": ["甲", "乙", "丙", "丁"]}).to_parquet(
        tmp_path / "titles.parquet"
    )
    assert make_vectors.main(["--corpus", str(tmp_path / "titles.parquet"), *argv]) == 0
    assert sorted(p.name for p in tmp_path.rglob("thucnews_e5*")) == [f"{written}.json", f"{written}.npy"]


def test_a_failed_embedding_run_leaves_no_vectors_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_embedding.py`` removed its folder of the children's vectors (``bench-emb-*`` under the
    temporary folder) only at a normal end: a child that failed, or Ctrl-C, left it behind, a copy of every
    set's vectors each time. It is removed however the run ends, and nothing is written."""
    import tempfile

    def failed(*args: object, **kwargs: object) -> dict[str, object]:
        assert list(tmp_path.glob("bench-emb-*")), "the children's folder"
        raise RuntimeError("the child failed")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(bench_embedding, "run_child", failed)
    monkeypatch.setattr(bench_embedding, "machine", lambda: "a machine")
    monkeypatch.setattr(bench_embedding, "RESULTS", tmp_path / "results")
    with pytest.raises(RuntimeError, match="the child failed"):
        bench_embedding.main(["--variants", "nlsim", "--n", "5"])
    assert list(tmp_path.iterdir()) == []


def test_a_small_e5_run_does_not_write_the_record_the_cost_curve_reads(tmp_path: Path) -> None:
    assert bench_scale.e5_paths(tmp_path, 200) == [tmp_path / "embed_e5_200.json"]
    assert tmp_path / "embed_e5.json" in bench_scale.e5_paths(tmp_path, 10_000)


def test_a_vector_cache_of_another_count_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors, meta = tmp_path / "v.npy", tmp_path / "v.json"
    np.save(vectors, np.zeros((300, 4), np.float32))
    meta.write_text(json.dumps({"items": 10_000}))
    monkeypatch.setattr(_common, "BASE_VECTORS", vectors)
    monkeypatch.setattr(_common, "BASE_META", meta)
    with pytest.raises(SystemExit, match="holds 300 vectors where v.json records 10,000"):
        _common.load_base()
    meta.write_text(json.dumps({"items": 300}))
    assert _common.load_base().shape == (300, 4)


@pytest.mark.parametrize(
    "argv", [["e5", "--e5-items", "0"], ["e5", "--e5-chunk", "-1"], ["e5", "--e5-items", "x"]]
)
def test_bad_sizes_are_refused_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench_scale.main(argv)
    assert exc.value.code == 2 and "Traceback" not in capsys.readouterr().err


def test_a_zero_limit_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        make_vectors.main(["--limit", "0"])
    assert exc.value.code == 2 and "--limit" in capsys.readouterr().err


def test_the_reliability_benchmark_answers_help_without_running() -> None:
    """``bench_reliability.py --help`` read no arguments and ran the whole benchmark (minutes of daily runs
    killed at every stage), ending by overwriting the committed ``reliability.json`` and ``.md``."""
    import subprocess

    results = BENCH / "results"
    before = {p: p.stat().st_mtime_ns for p in results.glob("reliability.*")}
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_reliability.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout and "reference:" not in proc.stdout
    assert {p: p.stat().st_mtime_ns for p in results.glob("reliability.*")} == before
    bad = subprocess.run(
        [sys.executable, str(BENCH / "bench_reliability.py"), "--days", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "unrecognized arguments: --days 2" in bad.stderr


@pytest.mark.parametrize(
    ("module", "argv", "stem"),
    [
        (bench_embedding, ["--variants", "st,nlsim"], "embedding"),
        (bench_embedding, ["--n", "200"], "embedding-n200"),
        (bench_embedding, ["--sets", "thucnews", "--n", "50"], "embedding-n50-setsthucnews"),
        (bench_embedding, ["--n", "2000", "--tag", "prelim-2000"], "embedding-prelim-2000"),
        (bench_rerank, [], "rerank"),
        (bench_rerank, ["--pairs", "100"], "rerank-pairs100"),
        (bench_rerank, ["--pairs", "1000", "--tag", "avx2int8"], "rerank-avx2int8"),
        (bench_story_model, [], "story_model"),
        (bench_story_model, ["--names", bench_story_model.RECIPES], "story_model"),
        (bench_story_model, ["--names", "g-f4-e3"], "story_model-namesg_f4_e3"),
        (bench_story_model, ["--names", "g-f4-e3", "--tag", "s7"], "story_model-s7"),
    ],
)
def test_a_quick_run_writes_beside_the_committed_figures(module, argv: list[str], stem: str) -> None:  # noqa: ANN001
    """``bench_embedding.py --n 200`` and ``bench_rerank.py --pairs 100`` replaced the committed
    ``embedding.json``/``rerank.json`` (every text, 2,000 pairs) with a quick run's figures, and
    ``bench_story_model.py --names g-f4-e3`` the committed ``story_model.md`` (four recipes), with no
    ``--tag`` to write elsewhere."""
    parser = module.build_parser()
    assert module.stem_of(parser, parser.parse_args(argv)) == stem


@pytest.mark.parametrize(
    ("module", "argv", "stem"),
    [
        (bench_embedding, ["--variants", "nlsim-int8"], "embedding-variantsnlsim_int8"),
        (bench_embedding, ["--model", "paraphrase-MiniLM-L3-v2"], "embedding-modelparaphrase_MiniLM_L3_v2"),
        (bench_embedding, ["--batch-size", "16", "--no-quality"], "embedding-batch-size16-no-quality"),
        (bench_embedding, ["--peer-python", "/opt/peer/bin/python"], "embedding"),
        (bench_rerank, ["--full", "--no-throughput"], "rerank-full-no-throughput"),
        (bench_rerank, ["--paths", "onnx-int8", "--level", "1"], "rerank-pathsonnx_int8-level1.0"),
        (bench_rerank, ["--prepare"], "rerank"),
    ],
)
def test_a_run_at_any_other_setting_writes_beside_the_committed_figures(
    module,  # noqa: ANN001
    argv: list[str],
    stem: str,
) -> None:
    """The results' names took the settings from a list of each script's own, which left most of them out:
    ``bench_embedding.py --variants nlsim-int8`` or ``--model paraphrase-MiniLM-L3-v2`` and
    ``bench_rerank.py --full --no-throughput`` wrote over the committed ``embedding`` and ``rerank``
    figures, which then named another model or held other rows; a list value was named with brackets
    turned into underscores (``gap_1.0_2.0_``)."""
    parser = module.build_parser()
    assert module.stem_of(parser, parser.parse_args(argv)) == stem


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        (bench_embedding, ["--n", "0"]),
        (bench_embedding, ["--repeats", "-1"]),
        (bench_embedding, ["--batch-size", "0"]),
        (bench_rerank, ["--pairs", "0"]),
        (bench_lanes, ["--texts", "0"]),
        (bench_lanes, ["--repeats", "0"]),
    ],
)
def test_a_count_below_one_is_refused_in_one_line(
    module,
    argv: list[str],
    capsys: pytest.CaptureFixture[str],  # noqa: ANN001
) -> None:
    with pytest.raises(SystemExit) as exc:
        module.build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and argv[0] in err and "not above 0" in err


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        ([], "pipeline"),
        (["--tag", "seed7"], "pipeline_seed7"),
        (["--train-pairs", "200"], "pipeline-train-pairs200"),
        (
            ["--avx2-only", "--cold-only", "--threads", "2", "--tag", "avx2_threads2"],
            "pipeline_cold_avx2_threads2",
        ),
        (["--cold-only", "--epochs", "1"], "pipeline_cold-epochs1"),
        (["--avx2-only", "--cold-only"], "pipeline_cold_avx2"),
        (["--cold-only", "--threads", "1"], "pipeline_cold-threads1"),
        (["--no-amx", "--cold-only", "--epochs", "1"], "pipeline_cold_no_amx-epochs1"),
        (["--no-amx", "--tag", "zen4"], "pipeline_zen4"),
    ],
)
def test_a_short_chain_never_replaces_the_whole_chains_figures(argv: list[str], name: str) -> None:
    """``bench_pipeline.py --train-pairs 200`` (a shorter chain) wrote over the committed ``pipeline.json``
    and ``.md``, and ``--tag`` was ignored unless ``--cold-only`` was given."""
    import bench_pipeline

    parser = bench_pipeline.build_parser()
    assert bench_pipeline.results_name(parser, parser.parse_args(argv)) == name


@pytest.mark.parametrize(
    ("tag", "avx2_only", "name"),
    [
        ("", False, "eta"),
        ("", True, "eta_avx2"),
        ("loaded", True, "eta_loaded"),
        ("loaded", False, "eta_loaded"),
    ],
)
def test_an_untagged_avx2_only_eta_run_writes_beside_the_machines_own(
    tag: str, avx2_only: bool, name: str
) -> None:
    """``bench_eta.py --avx2-only`` without ``--tag`` wrote over this machine's own ``eta.json``, as
    ``bench_pipeline.py --avx2-only`` did over ``pipeline_cold.*``."""
    import argparse

    import bench_eta

    assert bench_eta.results_name(argparse.Namespace(tag=tag, avx2_only=avx2_only)) == name


def test_no_amx_takes_the_amx_flags_and_kernels_away_and_refuses_a_cpu_without_them() -> None:
    import bench_pipeline

    flags = frozenset({"fma", "avx2", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"})
    forced = bench_pipeline.no_amx(flags)
    assert forced == {"NLSIM_CPU_FLAGS": "avx2 avx512_bf16 fma", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}
    with pytest.raises(ValueError, match="no AMX to take away"):
        bench_pipeline.no_amx(frozenset({"avx2", "avx512_bf16"}))


def test_no_amx_on_a_cpu_without_amx_is_a_bad_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--no-amx`` on a CPU without AMX ended with exit 1 and a bare line, not as the other bad arguments
    (exit 2, ``bench_pipeline.py: error: ...``), before any work."""
    import bench_pipeline

    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx512_bf16")  # the CPU nlsim takes this one for
    with pytest.raises(SystemExit) as exc:
        bench_pipeline.main(["--no-amx", "--cold-only", "--work", str(tmp_path / "work")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "error: --no-amx: this CPU has no AMX to take away" in err, err
    assert not (tmp_path / "work").exists()


def test_skip_cold_with_cold_only_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--skip-cold --cold-only`` made the work folder, printed the machine and ended in an
    UnboundLocalError traceback (no cold run's record to write)."""
    import bench_pipeline

    with pytest.raises(SystemExit) as exc:
        bench_pipeline.main(["--skip-cold", "--cold-only", "--work", str(tmp_path / "work")])
    assert exc.value.code == 2 and "leaves nothing to run" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()


def test_a_cold_run_writes_its_figures_under_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``bench_pipeline.py --cold-only`` run wrote ``results/current.json`` and ``.md``: the loop that
    printed the candidate's and the current model's figures reused the variable holding the file name."""
    import bench_pipeline

    def chain(args: list[str], env: dict[str, str], log: Path, timeline: object = None) -> float:
        report = Path(args[args.index("--out") + 1])
        report.mkdir(parents=True)
        figures = {"spearman": 80.0, "f1": 0.57}
        record = {
            "timings_s": {"finetune": 1.0},
            "candidate": {"version": "v0001", "validation": figures},
            "current": {"version": "v0001", "validation": figures},
        }
        (report / "pipeline.json").write_text(json.dumps(record), encoding="utf-8")
        return 2.0

    monkeypatch.setattr(bench_pipeline, "nlsim", chain)
    monkeypatch.setattr(bench_pipeline, "RESULTS", tmp_path / "results")
    assert bench_pipeline.main(["--cold-only", "--work", str(tmp_path / "work"), "--tag", "t"]) == 0
    written = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert written == ["pipeline_cold_t.json", "pipeline_cold_t.md"]


def test_avx2_only_and_no_amx_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    import bench_pipeline

    with pytest.raises(SystemExit) as exc:
        bench_pipeline.main(["--avx2-only", "--no-amx"])
    assert exc.value.code == 2 and "two machines" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        ([], "lanes"),
        (["--texts", "2000", "--pairs", "1000"], "lanes"),
        (["--texts", "100"], "lanes-texts100"),
        (["--repeats", "1", "--threads", "1"], "lanes-repeats1-threads1"),
    ],
)
def test_a_quick_lanes_run_writes_beside_the_committed_figures(argv: list[str], name: str) -> None:
    """``bench_lanes.py --texts 100`` replaced the committed ``lanes_amd_epyc_avx2.*`` (measured with the
    documented ``--texts 2000 --pairs 1000``) on the machine that measured them."""
    parser = bench_lanes.build_parser()
    assert bench_lanes.name_of(parser, parser.parse_args(argv)) == name


@pytest.mark.parametrize(
    ("script", "argv", "name"),
    [
        ("bench_probe", [], "probe"),
        ("bench_probe", ["--repeats", "1"], "probe-repeats1"),
        ("bench_probe_rounds", ["--runs", "8"], "probe_rounds"),
        ("bench_probe_rounds", ["--spell", "2", "6"], "probe_rounds"),
        ("bench_probe_rounds", ["--runs", "2", "--gap", "1", "2"], "probe_rounds-runs2-gap1.0_2.0"),
    ],
)
def test_a_quick_probe_run_writes_beside_the_committed_figures(
    script: str, argv: list[str], name: str
) -> None:
    """``bench_probe.py --repeats 1`` and ``bench_probe_rounds.py --runs 2`` replaced the committed
    ``probe_*`` and ``probe_rounds_*`` figures of the machine they ran on."""
    import importlib

    module = importlib.import_module(script)
    parser = module.build_parser()
    assert module.name_of(parser, parser.parse_args(argv)) == name


def test_a_results_page_that_cannot_be_written_leaves_the_committed_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_results truncated the committed ``.md`` before writing the new one: a run that failed (or was
    stopped) while writing left the committed page empty."""
    import bench_same_story

    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    monkeypatch.setattr(bench_same_story, "OUT", tmp_path / "same_story")
    record = {"machine": {"flags": []}, "rows": []}
    stem = _common.results_stem("lanes", record["machine"]).name
    (tmp_path / f"{stem}.md").write_text("committed\n")
    (tmp_path / "same_story.md").write_text("committed\n")
    with pytest.raises(UnicodeEncodeError):
        _common.write_results("lanes", record, "a page with a lone surrogate \ud800")
    with pytest.raises(UnicodeEncodeError):
        bench_same_story.write_results("same_story", "a page \ud800", [], lambda rows, path: None)
    assert (tmp_path / f"{stem}.md").read_text() == "committed\n"
    assert (tmp_path / "same_story.md").read_text() == "committed\n"


def test_the_realistic_record_of_every_run_survives_a_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``realistic.json`` keeps every run so far (hours of measurements); it was truncated before being
    written again, so a run stopped or failing while writing lost the whole record."""
    import bench_realistic

    monkeypatch.setattr(bench_realistic, "OUT_JSON", tmp_path / "realistic.json")
    monkeypatch.setattr(bench_realistic, "OUT_MD", tmp_path / "realistic.md")
    (tmp_path / "realistic.json").write_text('{"runs": ["hours of them"]}')
    with pytest.raises(UnicodeEncodeError):
        bench_realistic._write_results({"runs": ["a lone surrogate \ud800"]})
    assert (tmp_path / "realistic.json").read_text() == '{"runs": ["hours of them"]}'


@pytest.mark.parametrize(
    ("loops", "why"),
    [
        ({"bi-encoder": 40}, "cross-encoder: the loop never ran"),
        (
            {"bi-encoder": 40, "cross-encoder": 3},
            "cross-encoder: its clock never said an estimate in 3 steps",
        ),
        ({"bi-encoder": 40, "cross-encoder": 40}, None),
    ],
)
def test_the_eta_benchmark_writes_its_figures_only_when_every_loop_gave_them(
    loops: dict[str, int], why: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_eta.py`` wrote ``eta.json`` over the last run's figures whatever its own run gave: a training
    whose cross-encoder never ran, or whose loop was too short for its clock to say an estimate, left a
    file without the estimate's error (or ended in a ZeroDivisionError when the estimate came at the last
    step), with exit 0."""
    import bench_eta

    import nlsim.training.finetune
    from nlsim.training.clock import TrainingClock

    for name in ("__init__", "step"):  # the benchmark wraps them: put back after the test
        monkeypatch.setattr(TrainingClock, name, getattr(TrainingClock, name))

    def finetune(cfg: object, **kwargs: object) -> None:
        for what, steps in loops.items():
            ticks = iter(range(1, 1000))  # a second a call: every step takes time
            clock = TrainingClock(what, steps, 1, lambda line: None, now=lambda t=ticks: float(next(t)))
            for _ in range(steps):
                clock.step()

    monkeypatch.setattr(nlsim.training.finetune, "finetune", finetune)
    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    monkeypatch.setattr(sys, "argv", ["bench_eta.py"])
    (tmp_path / "eta.json").write_text('{"loops": "the last run\'s"}')
    if why is None:
        assert bench_eta.main() == 0
        record = json.loads((tmp_path / "eta.json").read_text())
        assert [loop["loop"] for loop in record["loops"]] == ["bi-encoder", "cross-encoder"]
        assert all("error" in loop for loop in record["loops"])
        return
    with pytest.raises(SystemExit) as exc:
        bench_eta.main()
    assert why in str(exc.value.code) and "eta.json not written" in str(exc.value.code)
    assert (tmp_path / "eta.json").read_text() == '{"loops": "the last run\'s"}'


def test_the_search_record_and_its_page_survive_a_failed_write(tmp_path: Path) -> None:
    """``search.json`` keeps the runs of every day so far, ``search.md`` their table; both were truncated
    before being written again, so a run failing or stopped while writing left them cut short."""
    import bench_search

    out = tmp_path / "search.json"
    out.write_text('{"runs": ["days of them"]}')
    out.with_suffix(".md").write_text("| the table of every day |\n")
    meta = {"k": 10, "threshold": 0.9, "runs_by_date": {"today": {"machine": "EPYC"}}}
    with pytest.raises(UnicodeEncodeError):
        bench_search.write_results(out, meta, [{"method": "flat"}], "| a lone surrogate \ud800 |")
    assert out.with_suffix(".md").read_text() == "| the table of every day |\n"
    bench_search.write_results(out, meta, [], "| t |")
    assert json.loads(out.read_text())["meta"]["k"] == 10 and "EPYC" in out.with_suffix(".md").read_text()


@pytest.mark.parametrize(
    ("argv", "stem"),
    [
        ([], "newsday"),
        (["--sizes", "300"], "newsday-sizes300"),
        (["--sizes", "300", "600"], "newsday-sizes300_600"),
    ],
)
def test_a_quick_news_day_writes_beside_the_committed_figures(
    argv: list[str], stem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_newsday.py --sizes 300`` (a quick check of the script) replaced the committed ``newsday.json``
    and ``.md`` (20,000 and 50,000 headlines) with its own figures."""
    import bench_newsday
    import pandas as pd

    monkeypatch.setattr(bench_newsday, "RESULTS", tmp_path)
    monkeypatch.setattr(bench_newsday, "news_day", lambda n: pd.DataFrame({"id": [str(n)], "title": ["x"]}))
    monkeypatch.setattr(bench_newsday, "run_day", lambda corpus, out: {"wall_s": 1.0})
    bench_newsday.main(argv)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{stem}.json", f"{stem}.md"]


@pytest.mark.parametrize("size", ["0", "-5", "x"])
def test_a_news_day_of_no_headlines_is_refused_in_one_line(
    size: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench_newsday.py --sizes 300 0`` ran the model over the 300-headline day first, then
    ended with nlsim's "the corpus has no rows"; ``--sizes -5`` made and ran a day of 195 headlines."""
    import bench_newsday

    monkeypatch.setattr(bench_newsday, "RESULTS", tmp_path)
    monkeypatch.setattr(bench_newsday, "run_day", lambda corpus, out: pytest.fail("a day was run"))
    with pytest.raises(SystemExit) as exc:
        bench_newsday.main(["--sizes", "300", size])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--sizes" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "stem"),
    [
        ([], "startup"),
        (
            ["--model", "paraphrase-MiniLM-L3-v2", "--repeats", "1"],
            "startup-modelparaphrase_MiniLM_L3_v2-repeats1",
        ),
        (["--precision", "fp32"], "startup-precisionfp32"),
    ],
)
def test_a_quick_startup_run_writes_beside_the_committed_figures(
    argv: list[str], stem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_startup.py --model paraphrase-MiniLM-L3-v2 --repeats 1`` (the small model, once) replaced the
    committed ``startup.json`` and ``.md`` (multilingual-e5-small, median of 3) with its own figures."""
    import subprocess
    from types import SimpleNamespace

    import bench_startup

    timed = json.dumps({"marks": [["first batch", 0.1]], "path": "onnx-fp32"})
    run = SimpleNamespace(returncode=0, stdout=timed + "\n", stderr="")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: run)  # the timed processes, not run
    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    monkeypatch.chdir(BENCH.parent)
    bench_startup.main(argv)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{stem}.json", f"{stem}.md"]


def test_a_quick_whole_process_run_writes_beside_the_committed_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_process.py --variants nlsim-fp32 --repeats 1`` (a quick check of one path) replaced the
    committed ``process.json`` and ``.md`` (three variants, median of 3) with its own figures."""
    import bench_process

    def run_once(cmd: list[str]) -> tuple[float, str]:
        out = Path(cmd[cmd.index("--out") + 1])
        out.with_suffix(".json").write_text(json.dumps({"inference": {"path": "onnx-fp32"}}))
        return 1.0, ""

    monkeypatch.setattr(bench_process, "run_once", run_once)
    monkeypatch.setattr(bench_process, "RESULTS", tmp_path)
    bench_process.main(["--variants", "nlsim-fp32", "--repeats", "1", "--no-quality"])
    stem = "process-variantsnlsim_fp32-repeats1-no-quality"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{stem}.json", f"{stem}.md"]


@pytest.mark.parametrize("fails", [False, True])
def test_a_whole_process_run_leaves_no_vectors_behind(
    fails: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_process.py`` left the vectors of every variant (15 MB each for the bundled corpus) in a
    ``bench-process-*`` folder of the system's temporary folder after every run, ended or failed."""
    import tempfile

    import bench_process

    def run_once(cmd: list[str]) -> tuple[float, str]:
        out = Path(cmd[cmd.index("--out") + 1])
        out.write_bytes(b"vectors")
        out.with_suffix(".json").write_text(json.dumps({"inference": {"path": "onnx-fp32"}}))
        if fails:
            raise RuntimeError("nlsim embed failed")
        return 1.0, ""

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(bench_process, "run_once", run_once)
    monkeypatch.setattr(bench_process, "RESULTS", tmp_path / "results")
    argv = ["--variants", "nlsim-fp32", "--repeats", "1", "--no-quality"]
    if fails:
        with pytest.raises(RuntimeError):
            bench_process.main(argv)
    else:
        bench_process.main(argv)
    assert not list((tmp_path / "tmp").iterdir())


def test_the_startup_benchmark_times_the_settings_it_parsed_into_a_file_of_the_run_s_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_startup.py`` started its timed processes with the command line of the Python process
    (``sys.argv``), not the settings it had parsed: ``main([...])`` timed another program's arguments, and a
    relative ``--corpus`` was read again in the repository, where the processes run. Each run wrote its
    matrix to ``/tmp/nlsim-bench-startup.npy``, so two runs at once wrote over each other's."""
    import subprocess
    from types import SimpleNamespace

    import bench_startup

    timed: list[list[str]] = []

    def run(cmd: list[str], *args: object, **kwargs: object) -> SimpleNamespace:
        timed.append(cmd)
        out = json.dumps({"marks": [["first batch", 0.1]], "path": "onnx-fp32"})
        return SimpleNamespace(returncode=0, stdout=out + "\n", stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(_common, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(sys, "argv", ["pytest", "--model", "another-model", "-k", "startup"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "day.parquet").write_bytes(b"")
    outs = []
    for _ in range(2):
        timed.clear()
        bench_startup.main(["--corpus", "day.parquet", "--repeats", "1"])
        children = [cmd for cmd in timed if "--child" in cmd]
        assert len(children) == 2  # the warm-up and the timed run
        for cmd in children:
            assert cmd[cmd.index("--corpus") + 1] == str(tmp_path / "day.parquet")
            assert cmd[cmd.index("--model") + 1] == "multilingual-e5-small" and "-k" not in cmd
        outs.append(children[0][children[0].index("--out") + 1])
    assert outs[0] != outs[1] and "/tmp/nlsim-bench-startup.npy" not in outs
    (written,) = (tmp_path / "results").glob("startup-*.json")  # beside the committed startup.json
    record = json.loads(written.read_text())
    assert record["command"] == "python benchmarks/bench_startup.py --corpus day.parquet --repeats 1"


@pytest.mark.parametrize(
    ("argv", "stem"),
    [([], "xlsx"), (["--sizes", "300"], "xlsx-sizes300"), (["--repeat", "1"], "xlsx-repeat1")],
)
def test_a_quick_spreadsheet_run_writes_beside_the_committed_figures(
    argv: list[str], stem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_xlsx.py --sizes 300`` replaced the committed ``xlsx.md`` (20,000 and 50,000 items, best of
    2) with its own figures."""
    import bench_xlsx
    import pandas as pd

    def write(tables: object, path: Path) -> None:
        pd.DataFrame({"a": [1]}).to_excel(path)

    monkeypatch.setattr(bench_xlsx, "RESULTS", tmp_path)
    monkeypatch.setattr(bench_xlsx, "report_tables", lambda n: {"clusters": pd.DataFrame({"a": [n]})})
    monkeypatch.setattr(bench_xlsx, "WRITERS", {"openpyxl": write})
    monkeypatch.setattr(bench_xlsx, "read_back", lambda path: {})
    bench_xlsx.main(argv)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{stem}.md"]


def test_the_stories_benchmark_says_its_clusters_are_not_a_report_s(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``bench_stories.py`` judged clusters of its own, made without a report's reading of exact copies as
    one item and without the editors' verdicts of a verdict store, and neither its ``--help`` nor its
    figures said so: a variant it found better did worse in the report (docs/experiments.md)."""
    import bench_stories

    with pytest.raises(SystemExit) as exc:
        bench_stories.main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert exc.value.code == 0
    assert "each exact copy an item of its own" in shown and "verdicts from a verdict store" in shown
    page = bench_stories.markdown({"machine": "CPU Test Chip 9000", "runs": []})
    assert "each exact copy an item of its own" in page and "not a report's" in page
