"""A benchmark given a bad argument says which, in one line, with exit code 2, before any work and without
writing anything."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_cluster_rule  # noqa: E402
import bench_ensemble  # noqa: E402
import bench_local_scaling  # noqa: E402
import bench_rerank_weight  # noqa: E402
import bench_stories  # noqa: E402
import bench_story_misses  # noqa: E402
import bench_story_threshold  # noqa: E402


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A model store with a promoted model (the benchmarks' checks read no further than the pointer)."""
    (tmp_path / "models" / "versions" / "v0001-9708f408").mkdir(parents=True)
    (tmp_path / "models" / "versions" / "v0001-9708f408" / "store.json").write_text("{}")  # registered
    (tmp_path / "models" / "CURRENT.json").write_text(json.dumps({"version": "v0001-9708f408"}))
    return tmp_path / "models"


def _refused(main, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:  # noqa: ANN001
    results = BENCH / "results"
    before = {p: p.stat().st_mtime_ns for p in results.iterdir()} if results.is_dir() else {}
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err
    after = {p: p.stat().st_mtime_ns for p in results.iterdir()} if results.is_dir() else {}
    assert after == before
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--large", "5:x:0.02"], "--large"),
        (["--large", "1:0.01"], "--large"),
        (["--supports", "a,b"], "--supports"),
        (["--supports", "2"], "--supports"),
        (["--shares", "0.3,x"], "--shares"),
        (["--scores", "/no/such/pairs.parquet"], "/no/such/pairs.parquet"),
        (["--model-store", "/no/such/models"], "/no/such/models"),
        (["--threshold", "0.9", "--threshold", "0.8"], "--threshold"),
    ],
)
def test_the_cluster_rule_benchmark_refuses_a_bad_argument_in_one_line(
    argv: list[str], named: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if "--model-store" not in argv and "--scores" not in argv:
        argv = [*argv, "--model-store", str(store)]
    assert named in _refused(bench_cluster_rule.main, argv, capsys)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--large", "5:x:0.02"], "--large"),
        (["--large", "5:0.02"], "--large"),
        (["--topic-shares", "a,b"], "--topic-shares"),
        (["--topic-shares", "1.5"], "--topic-shares"),
        (["--topic-margins", "0,x"], "--topic-margins"),
        (["--purity", "0"], "--purity"),
        (["--model-store", "/no/such/models"], "/no/such/models"),
    ],
)
def test_the_stories_benchmark_refuses_a_bad_argument_in_one_line(
    argv: list[str], named: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--model-store", str(store), *argv]
    assert named in _refused(bench_stories.main, argv, capsys)


@pytest.mark.parametrize(
    ("main", "argv", "named"),
    [
        (bench_story_threshold.main, ["--offsets", "0:0.1:0"], "--offsets"),
        (bench_story_threshold.main, ["--offsets", "0:x:0.1"], "--offsets"),
        (bench_story_threshold.main, ["--offsets", "0,x"], "--offsets"),
        (bench_local_scaling.main, ["--ks", "5,x"], "--ks"),
        (bench_local_scaling.main, ["--ks", "0"], "--ks"),
        (bench_local_scaling.main, ["--mutual", "-1"], "--mutual"),
        (bench_local_scaling.main, ["--alphas", "a"], "--alphas"),
        (bench_ensemble.main, ["--k", "0"], "--k"),
    ],
)
def test_list_and_count_options_are_refused_in_one_line(
    main,
    argv: list[str],
    named: str,
    store: Path,
    capsys: pytest.CaptureFixture[str],  # noqa: ANN001
) -> None:
    argv = ["--model-store", str(store), "--model-store", str(store), *argv]
    assert named in _refused(main, argv, capsys)


@pytest.mark.parametrize(
    "main",
    [
        bench_stories.main,
        bench_story_threshold.main,
        bench_local_scaling.main,
        bench_ensemble.main,
        bench_story_misses.main,
        bench_rerank_weight.main,
    ],
)
def test_a_missing_model_store_is_named_before_any_work(
    main,
    store: Path,
    capsys: pytest.CaptureFixture[str],  # noqa: ANN001
) -> None:
    """The second store is checked before the first one's minutes of scoring, not after."""
    stores = ["--model-store", str(store)] if main is not bench_rerank_weight.main else []
    line = _refused(main, [*stores, "--model-store", "/no/such/models"], capsys)
    assert "--model-store" in line and "/no/such/models" in line


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["profile", "--variants", "fp32,fp23"], "--variants"),
        (["profile", "--loops", "bi-encoder,cross"], "--loops"),
        (["profile", "--steps", "0"], "--steps"),
        (["side-by-side", "--rounds", "-1"], "--rounds"),
    ],
)
def test_the_training_step_benchmark_refuses_a_typo_before_timing_anything(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``profile --variants fp32,fp23`` timed fp32 for minutes, then ended in a KeyError; a mistyped loop ran
    the cross-encoder's loop under the typo's name."""
    import bench_finetune_speed

    assert named in _refused(bench_finetune_speed.main, argv, capsys)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["make", "--taus", "0,x"], "--taus"),
        (["make", "--n", "0"], "--n"),
        (["curve", "--sizes", "10000,1e5"], "--sizes"),
        (["graph", "--n", "1000", "--sweep", "--nprobes", "1,x"], "--nprobes"),
        (["graph", "--n", "1000", "--ms", "16,0"], "--ms"),
    ],
)
def test_the_realistic_benchmark_refuses_a_bad_list_before_any_work(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``make --taus 0,x`` fitted the model to the real vectors first, then ended in a ValueError."""
    import bench_realistic

    assert named in _refused(bench_realistic.main, argv, capsys)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--sizes", "10000", "--methods", "ivf", "hsnw"], "--methods"),
        (["--sizes", "10000", "--methods", "ivf:x"], "--methods"),
        (["--sizes", "0"], "--sizes"),
        (["--k", "0"], "--k"),
    ],
)
def test_the_search_benchmark_refuses_a_typo_before_any_run(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--methods ivf hsnw`` ran ivf (minutes at 1M), then the typo's child failed with a traceback and
    the ivf row was never written."""
    import bench_search

    assert named in _refused(bench_search.main, argv, capsys)


def test_the_search_benchmark_takes_the_documented_methods() -> None:
    import bench_search

    assert [bench_search.method_name(m) for m in ("exact", "ivf:2", "st")] == ["exact", "ivf:2", "st"]


def test_the_dedup_benchmark_names_a_missing_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    import bench_dedup

    assert "/no/such/corpus.parquet" in _refused(
        bench_dedup.main, ["--corpus", "/no/such/corpus.parquet"], capsys
    )


@pytest.mark.slow
def test_the_dedup_benchmark_says_why_nlsim_failed(tmp_path: Path) -> None:
    """A run that nlsim refused ended in ``CalledProcessError: ... returned non-zero exit status 2``, its
    reason thrown away (the child's stderr went to /dev/null)."""
    import os

    import bench_dedup

    bad = tmp_path / "titles.parquet"
    bad.write_text("id,title\n1,a\n")
    env = {**os.environ, "NLSIM_HOME": str(tmp_path / "home")}
    with pytest.raises(SystemExit) as exc:
        bench_dedup.run_once(["--corpus", str(bad), "--out", str(tmp_path / "out")], env)
    message = str(exc.value.code)
    assert message.startswith("bench_dedup.py: nlsim dedup failed: ") and "titles.parquet" in message
    assert "\n" not in message


def test_a_dedup_run_on_another_corpus_writes_beside_the_committed_figures() -> None:
    import bench_dedup

    parser = bench_dedup.build_parser()
    assert bench_dedup.stem_of(parser, parser.parse_args([])) == "dedup"
    assert bench_dedup.stem_of(parser, parser.parse_args(["--corpus", "/tmp/small.parquet"])) == (
        "dedup-corpus_tmp_small.parquet"
    )


def test_two_trainings_sharing_a_version_name_never_read_each_others_scores(tmp_path: Path) -> None:
    """The cluster rule benchmark cached a store's scored pairs by version name alone: a second seed's store
    (the same recipe and data trained again or elsewhere: the same name) was judged on the first one's
    scores, silently."""
    stores = []
    for seed in (42, 7):
        store = tmp_path / f"models-{seed}"
        (store / "versions" / "v0001-9708f408").mkdir(parents=True)
        (store / "versions" / "v0001-9708f408" / "store.json").write_text("{}")  # registered
        (store / "CURRENT.json").write_text(json.dumps({"version": "v0001-9708f408"}))
        (store / "versions" / "v0001-9708f408" / "training.json").write_text(json.dumps({"seed": seed}))
        stores.append(store)
    a, b = (bench_cluster_rule.scores_cache(s, 0.84) for s in stores)
    assert a != b and a.name.startswith("v0001-9708f408-") and a.name.endswith("-floor0.84.parquet")


def test_an_ensemble_of_other_trainings_under_the_same_names_is_scored_afresh() -> None:
    """bench_ensemble.py keyed its cached scores by the version names, --names, k and floor: stores trained
    again (the same recipe and data: the same version names) were judged on the earlier trainings' scores."""
    import numpy as np

    first = [("v0001-9708f408", None, np.zeros((3, 2), np.float32), []) for _ in range(2)]
    again = [("v0001-9708f408", None, np.ones((3, 2), np.float32), []) for _ in range(2)]
    key = bench_ensemble.cache_tag(first, ["42", "7"], 10, 0.84)
    assert key == bench_ensemble.cache_tag(first, ["42", "7"], 10, 0.84)
    assert key != bench_ensemble.cache_tag(again, ["42", "7"], 10, 0.84)


@pytest.mark.parametrize(
    ("script", "argv", "named"),
    [
        ("bench_startup", ["--repeats", "0"], "--repeats"),
        ("bench_startup", ["--corpus", "/no/such/titles.parquet"], "/no/such/titles.parquet"),
        ("bench_process", ["--repeats", "0"], "--repeats"),
        ("bench_process", ["--variants", "st,nlsim-fp23"], "--variants"),
        ("bench_process", ["--corpus", "/no/such/titles.parquet"], "/no/such/titles.parquet"),
        ("bench_probe", ["--repeats", "-1"], "--repeats"),
        ("bench_probe_rounds", ["--runs", "0"], "--runs"),
    ],
)
def test_the_speed_benchmarks_refuse_an_empty_run_up_front(
    script: str, argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench_startup.py --repeats 0`` started and timed the warm-up run, then ended in an IndexError over no
    runs; ``bench_process.py --repeats 0`` and ``--variants`` typos likewise, or with exit 1."""
    import importlib

    assert named in _refused(importlib.import_module(script).main, argv, capsys)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--model", "/no/such/model", "--corpus", "data/thucnews.parquet"], "/no/such/model"),
        (["--paths", "torch-fp32,onnx-fp23"], "onnx-fp23"),
        (["--corpus", "/no/such/titles.parquet"], "/no/such/titles.parquet"),
    ],
)
def test_the_reranker_benchmark_refuses_a_typo_before_searching_the_corpus(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_rerank.py --paths torch-fp32,onnx-fp23`` searched the corpus for candidates and timed
    torch-fp32 before the typo ended it in a traceback."""
    import bench_rerank

    monkeypatch.chdir(BENCH.parent)
    assert named in _refused(bench_rerank.main, argv, capsys)


def test_the_story_model_benchmark_names_an_unrun_recipe_before_scoring(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``bench_story_model.py --names typo`` loaded e5 and scored every annotated pair first, then said so."""
    import bench_story_model

    line = _refused(bench_story_model.main, ["--names", "no-such-recipe"], capsys)
    assert "--names" in line and "no-such-recipe" in line


def test_the_story_scores_benchmark_names_a_missing_misses_file(capsys: pytest.CaptureFixture[str]) -> None:
    import bench_story_scores

    line = _refused(bench_story_scores.main, ["--misses", "/no/such/misses.json"], capsys)
    assert "--misses" in line and "/no/such/misses.json" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--names", "f4-e3,no-such-recipe"],
        ["report", "--names", "no-such-recipe+f4-e3@orig", "--tag", "x"],
        ["curve", "--names", "no-such-recipe"],
        ["batches", "--names", "no-such-recipe"],
    ],
)
def test_the_same_story_benchmark_names_a_recipe_never_run(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report --names typo`` wrote an empty table over the committed ``same_story.md`` (exit 0); ``curve``
    and ``batches`` ended in a FileNotFoundError traceback."""
    import bench_same_story

    (tmp_path / "f4-e3").mkdir()
    monkeypatch.setattr(bench_same_story, "CACHE", tmp_path)
    line = _refused(bench_same_story.main, argv, capsys)
    assert "--names" in line and "no-such-recipe" in line and "f4-e3" not in line


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--summary-story", "support-0.4+large5:-:0.2"], "--summary-story"),
        (["--large", "5:-:0.01", "--summary-topic", "support-0.3"], "--summary-story"),
        (["--topic-shares", "0,0.3"], "--summary-topic"),
    ],
)
def test_the_stories_summary_across_models_names_a_rule_that_is_not_measured(
    argv: list[str], named: str, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With several stores, a --summary-story or --summary-topic that the run does not measure (a typo, or
    the default rule left out of --large) dropped the summary across the models without a word."""
    argv = ["--model-store", str(store), "--model-store", str(store), *argv]
    assert named in _refused(bench_stories.main, argv, capsys)


def test_the_documented_stories_command_measures_its_summary_rules() -> None:
    """experiments.md's three-seed command: ``--large 5:-:0.02 --topic-shares 0.2 --topic-margins 0``."""
    parser = argparse.ArgumentParser()
    args = argparse.Namespace(
        model_store=[Path("a"), Path("b"), Path("c")],
        summary_story=bench_stories.large_rule_name(5, None, 0.02),
        summary_topic="support-0.2",
    )
    bench_stories.check_summary_rules(
        parser, args, bench_stories.parse_large(parser, "5:-:0.02"), ["support-0.2"]
    )


def test_a_store_without_a_reranker_is_named_not_an_assertion(store: Path) -> None:
    """The story benchmarks met a current model without a calibrated reranker with a bare AssertionError."""
    with pytest.raises(SystemExit, match="v0001-9708f408: no calibrated reranker"):
        bench_stories.model_of(store)


@pytest.mark.slow
def test_a_failed_nlsim_run_ends_in_one_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A wide report that nlsim refused ended the cluster and story benchmarks in a CalledProcessError
    traceback below nlsim's own error."""
    import _common

    cmd = [sys.executable, "-m", "nlsim", "dedup", "--corpus", str(tmp_path / "none.parquet")]
    cmd += ["--out", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as exc:
        _common.run_nlsim(cmd, BENCH.parent)
    assert str(exc.value.code) == "nlsim dedup failed (exit 1); its error is above"
    assert "none.parquet" in capfd.readouterr().err


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--test-once", "components+vteo", "--threshold", "0.88"], "components+vteo"),
        (["--test-once", "support-0.45+veto", "--threshold", "0.88"], "support-0.45+veto"),
        (["--test-once", "components+veto"], "--threshold"),
    ],
)
def test_the_test_split_rule_is_checked_before_the_pairs_are_read(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--test-once`` with a mistyped rule, or without the calibrated thresholds, scored every set first
    (minutes with a store) and only then said so, with exit 1."""
    assert named in _refused(bench_cluster_rule.main, ["--scores", str(_pairs_file(tmp_path)), *argv], capsys)


def _pairs_file(folder: Path, columns: tuple[str, ...] = bench_cluster_rule.SCORE_COLUMNS) -> Path:
    import pandas as pd

    path = folder / "pairs-42.parquet"
    pd.DataFrame({c: ["x"] for c in columns}).to_parquet(path)
    return path


@pytest.mark.parametrize("content", ["not parquet", "columns"])
def test_a_scores_file_that_is_not_a_reports_pairs_is_named(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--scores`` of a CSV, or of a Parquet table without the report's columns, ended in an ArrowInvalid
    or KeyError traceback."""
    if content == "columns":
        path = _pairs_file(tmp_path, ("id_a", "id_b", "score"))
    else:
        path = tmp_path / "pairs-42.parquet"
        path.write_text("id_a,id_b,score\n1,2,0.9\n")
    line = _refused(bench_cluster_rule.main, ["--scores", str(path)], capsys)
    assert "--scores" in line and "pairs-42.parquet" in line
    assert ("similarity" in line) == (content == "columns")


@pytest.mark.parametrize("rule", ["components+veto", "support-0.4+veto", "average"])
def test_the_documented_test_once_rules_are_taken(rule: str, tmp_path: Path) -> None:
    args = argparse.Namespace(test_once=rule, scores=[tmp_path], threshold=[0.88], model_store=tmp_path)
    bench_cluster_rule.check_test_once(argparse.ArgumentParser(), args, [0.3, 0.4, 0.5, 0.6, 0.7])


def test_an_only_filter_matching_no_case_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``bench_bad_inputs.py --only typo`` printed an empty table and exited 0: read as every case passed."""
    import bench_bad_inputs

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))  # the benchmark sets its own; restored after
    assert "--only" in _refused(bench_bad_inputs.main, ["--only", "zzzz_no_such_case"], capsys)


@pytest.mark.parametrize(
    "argv", [["embed", "--n", "0"], ["search", "--sample", "0"], ["search", "--k", "-1"]]
)
def test_the_gpu_benchmark_refuses_a_count_below_one(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench_gpu.py embed --n 0`` loaded the model, then ended in a ValueError over no vectors."""
    import bench_gpu

    assert argv[1] in _refused(bench_gpu.main, argv, capsys)


def test_the_gpu_embedding_benchmark_without_a_gpu_says_it_needs_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench_gpu.py embed --n 10`` on a machine without a GPU timed nlsim's side (each precision a row of
    errors), then ended in a traceback from sentence-transformers: "Torch not compiled with CUDA enabled"."""
    import bench_gpu
    import torch

    def gpu_work(args: object) -> dict[str, object]:
        raise AssertionError("Torch not compiled with CUDA enabled")  # what the work met without a GPU

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # no GPU, wherever the test runs
    monkeypatch.setattr(bench_gpu, "embed", gpu_work)
    line = _refused(bench_gpu.main, ["embed", "--n", "10"], capsys)
    assert line.startswith("bench_gpu.py: error: embed needs a CUDA GPU") and "--device cpu" in line, line


@pytest.mark.parametrize(
    ("argv", "named"),
    [(["--sets", "thucnews,bcc"], "--sets"), (["--variants", "st,nlsim-fp23"], "--variants")],
)
def test_the_embedding_benchmark_refuses_an_unknown_set_or_variant(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--sets thucnews,bcc``: the first child process loaded its model and embedded every THUCNews title
    before failing, and the benchmark ended in a RuntimeError traceback; an unknown variant exited 1."""
    import bench_embedding

    assert named in _refused(bench_embedding.main, argv, capsys)


def test_a_report_before_any_recipe_ran_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_same_story.py report`` on a fresh clone (no cache folder) ended in a FileNotFoundError."""
    import bench_same_story

    monkeypatch.setattr(bench_same_story, "CACHE", tmp_path / "same_story")
    assert "no recipe has been run yet" in _refused(bench_same_story.main, ["report"], capsys)


def test_the_side_by_side_benchmark_names_the_extra_it_lacks_before_any_training(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_finetune_speed.py side-by-side`` without the [bench] extra trained nlsim's warm-up first and
    then ended in a ModuleNotFoundError for datasets: what it lacks and the extra to install are now said
    before any training."""
    import importlib.util

    import bench_finetune_speed

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "datasets" else real(name, *a)
    )
    monkeypatch.setattr(bench_finetune_speed, "side_by_side", lambda args: pytest.fail("it trained"))
    said = _refused(bench_finetune_speed.main, ["side-by-side", "--steps", "2"], capsys)
    assert "datasets" in said and "pip install -e '.[bench]'" in said


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--epochs", "0"], "--epochs"),
        (["--cross-encoder-epochs", "-1"], "--cross-encoder-epochs"),
        (["--threads", "0"], "--threads"),
        (["--train-pairs", "-5"], "--train-pairs"),
    ],
)
def test_the_eta_benchmark_refuses_a_count_below_its_least_before_training(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_eta.py --train-pairs -5`` trained on every training pair but the last five, and ``--epochs 0``,
    ``--cross-encoder-epochs -1`` or ``--threads 0`` went on to read the pairs and start the training."""
    import bench_eta

    import nlsim.training.finetune

    monkeypatch.setattr(nlsim.training.finetune, "finetune", lambda *a, **k: pytest.fail("it trained"))
    assert named in _refused(bench_eta.main, argv, capsys)
