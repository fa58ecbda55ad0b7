"""A benchmark run from another folder than the repository's reads the repository's files by default and,
given a relative path, the file of the folder it is run from: never a file of the same name elsewhere."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

import pytest

from tests.help_text import parser_of

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))


def _parsed(script: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> argparse.Namespace:
    """``argv`` as ``script``'s own parser reads it (the parser caught where the script would parse)."""
    with monkeypatch.context() as caught:
        caught.setattr(sys, "argv", [str(BENCH / script)])
        parser = parser_of(lambda: runpy.run_path(str(BENCH / script), run_name="__main__"), caught)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    ("script", "option", "default"),
    [
        ("bench_dedup.py", "corpus", "data/thucnews.parquet"),
        ("bench_process.py", "corpus", "data/thucnews.parquet"),
        ("bench_rerank.py", "corpus", "data/thucnews.parquet"),
        ("bench_rerank.py", "model", "benchmarks/results/cache/models/e5-thucnews"),
        ("bench_startup.py", "corpus", "data/thucnews.parquet"),
        ("make_vectors.py", "corpus", "data/thucnews.parquet"),
    ],
)
def test_a_benchmark_run_from_another_folder_reads_the_repository_s_files(
    script: str, option: str, default: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cd /elsewhere && python /repo/benchmarks/bench_dedup.py`` ended in "--corpus: data/thucnews.parquet
    does not exist" (or read a ``data/thucnews.parquet`` of that folder), and a relative ``--corpus`` was
    checked in the folder run from but read by the timed processes, which run in the repository, there."""
    monkeypatch.chdir(tmp_path)
    assert Path(getattr(_parsed(script, [], monkeypatch), option)) == ROOT / default
    given = getattr(_parsed(script, [f"--{option}", "day.parquet"], monkeypatch), option)
    assert Path(given) == tmp_path / "day.parquet"


def test_a_quality_candidate_trained_from_another_folder_finds_the_repository_s_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_quality.py``'s candidates name the silver pairs' corpus (and the STS-B model they start from)
    by their path in the repository: run from another folder, the training looked for
    ``annotations/thucnews_corpus.tsv`` there. The candidate's record keeps the path as the recipe has
    it."""
    from types import SimpleNamespace

    import bench_quality

    import nlsim.training.finetune

    trained = []
    done = SimpleNamespace(best={}, history=[], seconds_per_epoch=[1.0], seconds=1.0, reranker=None)
    monkeypatch.setattr(nlsim.training.finetune, "finetune", lambda cfg, **k: trained.append(cfg) or done)
    monkeypatch.setattr(bench_quality, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(bench_quality, "TRAINED", tmp_path / "models")
    (tmp_path / "results" / "select").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    recipe = {"silver_corpus": "annotations/thucnews_corpus.tsv", "model": "multilingual-e5-small"}
    row = bench_quality.train_candidate("silver", "select", recipe, pairs=str(bench_quality.PAIRS))
    assert Path(trained[0].silver.corpus) == ROOT / "annotations" / "thucnews_corpus.tsv"
    assert trained[0].model == "multilingual-e5-small"
    assert row["settings"] == recipe
