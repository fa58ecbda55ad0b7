"""A benchmark stopped while it writes (Ctrl-C, a full disk, a killed job) leaves the file there as it was:
never a cut-off one that a later run reads back or that stands in for the committed figures."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_cluster_rule  # noqa: E402
import bench_stories  # noqa: E402
import bench_story_threshold  # noqa: E402

PAIRS = pd.DataFrame(
    {
        "id_a": ["1", "3"],
        "id_b": ["2", "4"],
        "similarity": [0.91, 0.87],
        "title_a": ["Storm closes the coast road", "Rates held"],
        "title_b": ["Coast road shut by storm", "Bank holds rates"],
    }
)
WRITE_PARQUET = pd.DataFrame.to_parquet


def _report(cmd: list[str], cwd: Path) -> None:
    """``nlsim dedup`` as the benchmarks run it, stubbed: a report whose ``pairs.parquet`` is ``PAIRS``."""
    out = Path(cmd[cmd.index("--out") + 1])
    out.mkdir(parents=True, exist_ok=True)
    WRITE_PARQUET(PAIRS, out / "pairs.parquet")  # whole: nlsim's report is written atomically


def _stopped_mid_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Parquet write from now on stops half-way, as a killed run's does."""

    def cut_off(frame: pd.DataFrame, path: object, *args: object, **kwargs: object) -> None:
        Path(str(path)).write_bytes(b"PAR1\x15\x04")  # the first bytes of a Parquet file, and no more
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_parquet", cut_off)


def _cluster_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], pd.DataFrame]:
    monkeypatch.setattr(bench_cluster_rule, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bench_cluster_rule, "run_nlsim", _report)
    store = tmp_path / "models"
    store.mkdir()
    return lambda: bench_cluster_rule.scored_pairs(store, 0.84, tmp_path / "report")


def _model(tmp_path: Path) -> bench_stories.Model:
    return bench_stories.Model(tmp_path / "models", "v0001-9708f408", "0a1b2c3d", 0.9, 0.8, pd.DataFrame())


def _stories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], pd.DataFrame]:
    monkeypatch.setattr(bench_stories, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bench_stories, "run_nlsim", _report)
    return lambda: bench_stories.wide_scores(_model(tmp_path))


def _story_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], pd.DataFrame]:
    monkeypatch.setattr(bench_story_threshold, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bench_story_threshold, "run_nlsim", _report)
    return lambda: bench_story_threshold.floor_scores(_model(tmp_path), 0.84)


@pytest.mark.parametrize("cached", [_cluster_rule, _stories, _story_threshold])
def test_a_run_stopped_while_caching_the_scored_pairs_leaves_no_cut_off_cache(
    cached: Callable[[Path, pytest.MonkeyPatch], Callable[[], pd.DataFrame]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cluster and story benchmarks wrote a report's scored pairs straight into their cache: a run
    stopped during the write left a cut-off Parquet file under the cache's name, and every later run took
    it for the cache and ended in an ArrowInvalid traceback until it was found and deleted by hand."""
    score = cached(tmp_path, monkeypatch)
    with monkeypatch.context() as stopped:
        _stopped_mid_write(stopped)
        with pytest.raises(KeyboardInterrupt):
            score()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    pairs = score()  # the next run scores afresh, and caches what it scored
    assert list(pairs["score"]) == [0.91, 0.87]
    assert list(pairs["id_a"]) == ["1", "3"]


WRITES = {"write_text", "write_bytes", "savefig", "to_parquet", "to_csv", "save", "savez"}
"""Calls that write a file in place: ``Path.write_text``, a figure's or frame's save, ``np.save``..."""

SCRATCH = {
    ("bench_daily.py", "corpus"): "a day's new items, in the run's own temporary folder",
    ("bench_embedding.py", "tok_config"): "a model folder's copy, made again when its ONNX file is missing",
    ("bench_embedding.py", "Path(args.emb_dir) / f'{args.child}-{name}.npy'"): "a child's vectors, in a temp",
    ("bench_newsday.py", "corpus"): "a made news day, in the run's folder",
    ("bench_pipeline.py", "log"): "the run's log, appended to as it goes",
    ("bench_pipeline.py", "pairs"): "the annotated pairs cut down, in the run's folder",
    ("bench_rerank.py", "out / RERANKER_DIR / RERANKER_JSON"): "a model copy, remade without its marker",
    ("bench_startup.py", "Path(args.out)"): "the vectors of the timed run (the write is timed as nlsim's)",
    ("st_encode.py", "args.out"): "a child's vectors for the parent run (the peer venv has no nlsim)",
}
"""Files written in place on purpose: in a folder the run made for itself, or read back by no one."""


def _in_place_writes(path: Path) -> list[tuple[str, str]]:
    """``(file, target)`` of each call in ``path`` that writes a file in place, outside a
    ``with atomic_path(...) as tmp`` block's temporary file."""
    import ast

    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    temporary = {
        item.optional_vars.id
        for node in ast.walk(tree)
        if isinstance(node, ast.With)
        for item in node.items
        if isinstance(item.optional_vars, ast.Name) and "atomic_path" in ast.unparse(item.context_expr)
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open" and len(node.args) > 1:
            mode = node.args[1]
            if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax"):
                found.append(ast.unparse(node.args[0]))
            continue
        if not isinstance(func, ast.Attribute) or func.attr not in WRITES:
            continue
        receiver = ast.unparse(func.value)
        if func.attr in ("save", "savez") and receiver != "np":
            continue
        if func.attr in ("write_text", "write_bytes"):
            found.append(receiver)
        elif node.args:
            found.append(ast.unparse(node.args[0]))
    return [(path.name, target) for target in found if target not in temporary]


def test_every_file_a_benchmark_writes_is_written_whole_or_not_at_all() -> None:
    """The figures (``.json``, ``.md``, ``.png``), the cached scores and the vectors the others read were
    written in place by most benchmarks: a run stopped mid-write left a cut-off file in place of the
    committed figures, or a cache that later runs read and failed on."""
    found = [
        f"{name}: {target}"
        for script in sorted(BENCH.glob("*.py"))
        for name, target in _in_place_writes(script)
        if (name, target) not in SCRATCH
    ]
    assert not found


def test_a_final_stage_stopped_while_copying_the_chosen_model_leaves_no_half_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench_quality.py final`` copied the chosen candidate straight into ``e5-thucnews``, and copied it
    only where that folder was missing: a run stopped during the copy left half a model folder, which
    every later run took for the model, scored, and named the chosen one in ``final.json``."""
    import shutil
    from types import SimpleNamespace

    import bench_quality

    chosen = tmp_path / "select" / "c1"
    chosen.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (chosen / name).write_text(name)
    best = {"name": "c1", "settings": {"conversion": "tw2sp"}, "best": {"epoch": 1, "spearman": 80.0}}
    monkeypatch.setattr(bench_quality, "ROOT", tmp_path)
    monkeypatch.setattr(bench_quality, "TRAINED", tmp_path)
    monkeypatch.setattr(bench_quality, "MODELS", tmp_path / "select")
    monkeypatch.setattr(bench_quality, "RESULTS", tmp_path / "quality")
    monkeypatch.setattr(bench_quality, "select_rows", lambda: [best])
    monkeypatch.setattr(bench_quality, "print_select", lambda rows: best)
    scored: list[list[str]] = []

    def evaluate(model: str, threads: object) -> dict:
        if model != "multilingual-e5-small":
            scored.append(sorted(p.name for p in Path(model).iterdir()))
        return {}

    monkeypatch.setattr(bench_quality, "evaluate_conversions", evaluate)
    copy = shutil.copyfile  # what copytree's copy2 calls for each file

    def stopped(src: str, dst: str, **kwargs: object) -> object:
        if Path(src).name == "tokenizer.json":
            raise KeyboardInterrupt
        return copy(src, dst, **kwargs)

    with monkeypatch.context() as stopping:
        stopping.setattr(shutil, "copyfile", stopped)
        with pytest.raises(KeyboardInterrupt):
            bench_quality.stage_final(SimpleNamespace(threads=1))
    assert not (tmp_path / "e5-thucnews").exists() and not scored
    bench_quality.stage_final(SimpleNamespace(threads=1))  # the next run copies the model whole
    assert scored == [["config.json", "model.safetensors", "tokenizer.json"]]
