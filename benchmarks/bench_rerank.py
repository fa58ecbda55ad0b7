"""The rerank stage's cost: the cross-encoder's pairs/s on each inference path, and whole reranked runs.

Needs a model folder with a reranker (``nlsim finetune --pairs annotations/thucnews_tw_pairs.tsv --out
finetuned/e5-thucnews``, or ``python benchmarks/bench_quality.py final``, which writes the default
``benchmarks/results/cache/models/e5-thucnews``).

1. Throughput: the cross-encoder scores ``--pairs`` candidate pairs of the corpus (each item's nearest
   neighbours by the model's own cosine, converted with ``tw2sp``) on each path of ``--paths`` (torch fp32,
   ONNX Runtime fp32 and int8, torch bf16 and int8; both text orders, length-sorted batches); prints pairs/s
   and the largest score difference from torch fp32, beside each path's quality on the validation pairs
   (Spearman ×100 of the rerank score, same-story F1 at the reranker's threshold: the figures of the
   quality check, :mod:`nlsim.training.lossy_check`).
2. With ``--full``: ``nlsim dedup`` on the corpus with the model, in fresh processes, ``--no-cache``:
   ``--precision fp32`` and ``--precision auto`` (the default); prints the wall time, the stages, the
   candidates (and the floor that bounds them), the path the cross-encoder ran on, and how many reported
   pairs differ between the two runs.

``--level 1.0`` first makes a copy of the model folder whose reranker is calibrated at that level on the
validation pairs (the chain calibrates at the same-story level, 0.875, which takes the same validation
pairs of the bundled annotations as 1.0; a folder trained at 0.75 has a lower threshold, hence many more
candidates) in ``benchmarks/results/cache/``, and uses the copy. ``--prepare``
stores the folder's quality check (``nlsim calibrate``), which ``--precision auto`` needs for a folder
trained before ``nlsim finetune`` made it.

    python benchmarks/bench_rerank.py --model finetuned/e5-thucnews --prepare --full [--level 1.0]

Writes ``benchmarks/results/rerank[-TAG].{json,md}``; without ``--tag``, a run at other settings than the
defaults (other ``--pairs``, another ``--corpus`` or ``--model``, ``--full``...) writes
``rerank-<what differs>.{json,md}`` (``rerank-pairs100``) beside the committed figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    CORPUS,
    RESULTS,
    check_files,
    given_path,
    machine,
    machine_record,
    positive,
    print_table,
    shown,
    sized_stem,
)

from nlsim.io.atomic import atomic_write_text  # noqa: E402

PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
PATHS = "torch-fp32,onnx-fp32,onnx-int8,torch-bf16,torch-int8"


def candidate_pairs(model: str, corpus: str, n: int, threads: int) -> tuple[list[str], list[str]]:
    """``n`` neighbour pairs of the corpus (converted texts), nearest first, each pair once."""
    from nlsim.conversion import convert
    from nlsim.encoders import load_encoder
    from nlsim.io.corpus import load_corpus
    from nlsim.search.index import build_index
    from nlsim.search.neighbors import neighbor_pairs

    texts = convert(load_corpus(corpus).texts(), "tw2sp")
    enc = load_encoder(model, threads=threads)
    emb = enc.encode(texts, progress=False)
    pairs = neighbor_pairs(
        build_index(emb, kind="flat", use_gpu=False), emb, np.arange(len(emb)), k=10, threshold=-1.0
    )
    pairs = pairs.sort_values("similarity", ascending=False).head(n)
    return [texts[i] for i in pairs["a"]], [texts[i] for i in pairs["b"]]


def throughput(model: str, a: list[str], b: list[str], threads: int, paths: list[str]) -> list[dict]:
    from nlsim.encoders import load_encoder
    from nlsim.inference.lossy_verdict import entry_key
    from nlsim.io.pairs import load_pairs
    from nlsim.rerank.reranker import load_reranker
    from nlsim.rerank.target import cross_encoder_target
    from nlsim.training.lossy_check import check_cross_encoder

    reranker = load_reranker(model, threads=threads)
    ce = reranker.cross_encoder
    target = cross_encoder_target(ce)
    rows, scores = [], {}
    for path in paths:
        runner = target.build(path, threads)  # exports and int8 copies: once, outside the clock
        ce.predict(a[:64], b[:64], runner=runner)
        t = time.perf_counter()
        scores[path] = ce.predict(a, b, runner=runner)
        wall = time.perf_counter() - t
        rows.append({"path": path, "pairs": len(a), "seconds": wall, "pairs_per_s": len(a) / wall})
        del runner
    ref = scores.get("torch-fp32")
    validation = load_pairs(str(PAIRS), split="validation")
    enc = load_encoder(model, threads=threads)
    lossy = [p for p in paths if p not in ("torch-fp32", "onnx-fp32")]
    check = check_cross_encoder(
        reranker, enc, validation, conversion="tw2sp", paths=lossy, threads=threads, look_first=False
    )
    base = rows[0]["pairs_per_s"]
    for r in rows:
        p = r["path"]
        r["x first"] = r["pairs_per_s"] / base
        if ref is not None:
            r["max |diff| vs fp32"] = f"{float(np.abs(scores[p] - ref).max()):.4f}"
        fig = check["paths"].get(entry_key(p, str(target.device))) or check["reference"]
        r["val Spearman"] = f"{fig.get('spearman', float('nan')):.2f}"
        r["val F1"] = f"{fig.get('f1', float('nan')):.3f}" if fig.get("f1") is not None else "n/a"
        r["quality check"] = fig.get("verdict", "exact") if p in lossy else "exact"
    return rows


def relevel(model: str, level: float, threads: int) -> str:
    """A copy of the model folder with its reranker calibrated at ``level`` on the validation pairs."""
    from nlsim.encoders import load_encoder
    from nlsim.evaluation.calibration import calibrate
    from nlsim.io.pairs import load_pairs
    from nlsim.rerank.reranker import RERANKER_DIR, RERANKER_JSON, load_reranker

    out = RESULTS / "cache" / f"rerank-{Path(model).name}-level-{level:g}"
    marker = out / ".relevel.json"
    if marker.is_file() and json.loads(marker.read_text()).get("from") == str(Path(model).resolve()):
        return str(out)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(model, out)
    enc = load_encoder(str(out), threads=threads)
    reranker = load_reranker(str(out), threads=threads)
    validation = load_pairs(str(PAIRS), split="validation")
    old = reranker.calibration or {}
    cal = calibrate(
        reranker.scorer(enc),
        validation,
        level=level,
        conversion=old.get("conversion", "tw2sp"),
        split="validation",
        model="reranker",
        pairs_file=str(PAIRS),
    )
    reranker.calibration = cal.as_dict()
    (out / RERANKER_DIR / RERANKER_JSON).write_text(json.dumps(reranker.meta(), indent=2) + "\n")
    atomic_write_text(
        marker, json.dumps({"from": str(Path(model).resolve()), "level": level, "cal": cal.as_dict()})
    )
    print(f"{out}: reranker recalibrated at level {level}: {cal.describe()}", flush=True)
    return str(out)


def prepare(model: str, threads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "nlsim",
                "calibrate",
                "--model",
                model,
                "--pairs",
                str(PAIRS),
                "--out",
                str(Path(tmp) / "c.json"),
                "--threads",
                str(threads),
            ],
            check=True,
            cwd=ROOT,
        )


def full_run(model: str, corpus: str, precision: str, keep: Path) -> dict:
    out = keep / f"dedup-{precision}"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nlsim",
            "dedup",
            "--corpus",
            corpus,
            "--out",
            str(out),
            "--model",
            model,
            "--no-progress",
            "--no-cache",
            "--precision",
            precision,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    run = json.loads((out / "run.json").read_text())
    return {
        "precision": precision,
        "wall_s": wall,
        "threshold": run["threshold"],
        "rerank": run["rerank"],
        "counts": run["counts"],
        "embedding": (run.get("model_info") or {}).get("inference"),
        "timings_s": run["timings_s"],
        "out": str(out),
    }


def compare_reports(a: str, b: str) -> dict:
    key = ["id_a", "id_b"]
    pa = pd.read_parquet(Path(a) / "pairs.parquet")[key]
    pb = pd.read_parquet(Path(b) / "pairs.parquet")[key]
    sa = set(map(tuple, pa.to_numpy()))
    sb = set(map(tuple, pb.to_numpy()))
    return {
        "pairs_fp32": len(sa),
        "pairs_auto": len(sb),
        "only_fp32": len(sa - sb),
        "only_auto": len(sb - sa),
    }


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--model",
        type=given_path,
        default=RESULTS / "cache" / "models" / "e5-thucnews",
        help="a model folder with a reranker (default: the repository's "
        "benchmarks/results/cache/models/e5-thucnews)",
    )
    ap.add_argument(
        "--pairs", type=positive(), default=2000, help="candidate pairs scored on each path (default: 2000)"
    )
    ap.add_argument(
        "--corpus",
        type=given_path,
        default=CORPUS,
        help="the corpus whose candidate pairs are scored (default: the repository's data/thucnews.parquet)",
    )
    ap.add_argument(
        "--paths", default=PATHS, help=f"the inference paths timed, comma-separated (default: {PATHS})"
    )
    ap.add_argument("--threads", type=positive(), default=2, help="CPU threads (default: 2)")
    ap.add_argument("--full", action="store_true", help="also time whole reranked dedup runs (fp32, auto)")
    ap.add_argument(
        "--no-throughput",
        dest="throughput",
        action="store_false",
        help="skip the paths' throughput (with --full: the whole runs only)",
    )
    ap.add_argument(
        "--level",
        type=float,
        default=None,
        help="recalibrate a copy's reranker at this level (default: none, the folder's own threshold)",
    )
    ap.add_argument("--prepare", action="store_true", help="store the folder's quality check first")
    ap.add_argument(
        "--tag",
        default="",
        help="results file suffix: rerank-TAG.json (default: none; a run at other settings than the "
        "defaults then writes rerank-<what differs>.json, e.g. rerank-pairs100.json, beside the committed "
        "figures)",
    )
    return ap


def stem_of(ap: argparse.ArgumentParser, ns: argparse.Namespace) -> str:
    """The results' file name: ``rerank-TAG``, else ``rerank`` with the sizes that differ from defaults."""
    return f"rerank-{ns.tag}" if ns.tag else sized_stem("rerank", ap, ns, besides=["tag", "prepare"])


def main(argv: list[str] | None = None) -> None:
    ap = build_parser()
    ns = ap.parse_args(argv)
    from nlsim.inference.paths import PATHS as KNOWN

    unknown = [p for p in ns.paths.split(",") if p not in KNOWN]
    if unknown:
        ap.error(f"argument --paths: unknown path {', '.join(unknown)}; choose from {', '.join(KNOWN)}")
    check_files(ap, "--corpus", [ns.corpus])
    if not ns.model.is_dir():
        ap.error(f"argument --model: {ns.model} is not a model folder (a trained model with its reranker)")
    import torch

    torch.set_num_threads(ns.threads)
    where = machine()
    print(f"machine: {where}", flush=True)
    model = relevel(str(ns.model), ns.level, ns.threads) if ns.level is not None else str(ns.model)
    if ns.prepare:
        prepare(model, ns.threads)
    result: dict = {
        "command": "python benchmarks/bench_rerank.py " + " ".join(sys.argv[1:]),
        "machine": where,
        "cpu": machine_record(),
        "model": shown(model),
        "threads": ns.threads,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    md = f"# Reranker cost\n\n`{result['command']}`\n\n{where}; {ns.threads} threads; {result['date']}.\n\n"
    if ns.throughput:
        a, b = candidate_pairs(model, str(ns.corpus), ns.pairs, ns.threads)
        rows = throughput(model, a, b, ns.threads, ns.paths.split(","))
        cols = ["path", "pairs", "seconds", "pairs_per_s", "x first", "max |diff| vs fp32"]
        table = print_table(rows, cols + ["val Spearman", "val F1", "quality check"])
        result["throughput"] = rows
        md += f"Cross-encoder throughput ({ns.pairs} candidate pairs, both orders):\n\n{table}\n"
    if ns.full:
        keep = Path(tempfile.mkdtemp(prefix="bench-rerank-"))
        runs = [full_run(model, str(ns.corpus), p, keep) for p in ("fp32", "auto")]
        diff = compare_reports(runs[0]["out"], runs[1]["out"])
        result["full_runs"] = runs
        result["pairs_difference"] = diff
        for r in runs:
            ce = (r["rerank"].get("inference") or {}).get("path")
            emb = (r["embedding"] or {}).get("path")
            rr = r["rerank"]
            line = (
                f"\n`nlsim dedup --corpus {shown(ns.corpus)} --model {shown(model)} "
                f"--precision {r['precision']} --no-cache`: {r['wall_s']:.0f} s wall; embedding {emb}, "
                f"cross-encoder {ce}; threshold "
                f"{r['threshold']} (rerank score); {rr['candidates']} candidate pairs above the floor "
                f"{rr['candidate_floor']} (cross-encoder bound {rr.get('cross_encoder_bound')}), "
                f"{rr['kept']} kept; stages (s): {json.dumps(r['timings_s'])}\n"
            )
            print(line, flush=True)
            md += line
        line = (
            f"\nReported pairs: {diff['pairs_fp32']} (fp32) and {diff['pairs_auto']} (auto); "
            f"{diff['only_fp32']} only in the fp32 run, {diff['only_auto']} only in the auto run.\n"
        )
        print(line)
        md += line
    stem = stem_of(ap, ns)
    RESULTS.mkdir(exist_ok=True)
    atomic_write_text(RESULTS / f"{stem}.json", json.dumps(result, indent=2, default=str) + "\n")
    atomic_write_text(RESULTS / f"{stem}.md", md)


if __name__ == "__main__":
    main()
