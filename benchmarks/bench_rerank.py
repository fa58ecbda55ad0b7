"""The rerank stage's cost: cross-encoder throughput (torch against ONNX Runtime) and a reranked dedup run.

Needs a model folder with a reranker (``nlsim finetune --pairs annotations/thucnews_tw_pairs.tsv --out
models/e5-thucnews``, or ``python benchmarks/bench_quality.py final``).

1. Throughput: the cross-encoder scores ``--pairs`` candidate pairs of the corpus (each item's nearest
   neighbours by the model's own cosine, converted with ``tw2sp``), with torch and with ONNX Runtime, both
   text orders; prints pairs/s and the largest difference between the two.
2. With ``--full``: ``nlsim dedup`` on the corpus with the model (its reranker and rerank threshold), in a
   fresh process; prints the candidates, the pairs kept and the per-stage seconds from ``run.json``.

Writes ``benchmarks/results/rerank.{json,md}``.

    python benchmarks/bench_rerank.py [--model models/e5-thucnews] [--pairs 2000] [--threads 2] [--full]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, print_table  # noqa: E402


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


def throughput(model: str, a: list[str], b: list[str], threads: int) -> list[dict]:
    from nlsim.rerank.reranker import load_reranker

    ce = load_reranker(model, threads=threads).cross_encoder
    ce.predict(a[:64], b[:64], backend="onnx")  # the one-off export, outside the timing
    rows, scores = [], {}
    for backend in ("torch", "onnx"):
        t = time.perf_counter()
        scores[backend] = ce.predict(a, b, backend=backend)
        wall = time.perf_counter() - t
        rows.append({"backend": backend, "pairs": len(a), "seconds": wall, "pairs_per_s": len(a) / wall})
    diff = float(np.abs(scores["onnx"] - scores["torch"]).max())
    for r in rows:
        r["max_abs_diff_vs_torch"] = f"{diff:.1e}" if r["backend"] == "onnx" else "-"
        r["speedup"] = r["pairs_per_s"] / rows[0]["pairs_per_s"]
    return rows


def full_run(model: str, corpus: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "nlsim",
                "dedup",
                "--corpus",
                corpus,
                "--out",
                tmp,
                "--model",
                model,
                "--no-progress",
                "--no-cache",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - t
        run = json.loads((Path(tmp) / "run.json").read_text())
    return {
        "wall_s": wall,
        "threshold": run["threshold"],
        "rerank": run["rerank"],
        "pairs": run["pairs"],
        "clusters": run["clusters"],
        "timings_s": run["timings_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="models/e5-thucnews")
    ap.add_argument("--corpus", default="data/thucnews.parquet")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="also time a whole reranked dedup run")
    ns = ap.parse_args()
    import torch

    torch.set_num_threads(ns.threads)
    a, b = candidate_pairs(ns.model, ns.corpus, ns.pairs, ns.threads)
    rows = throughput(ns.model, a, b, ns.threads)
    print(f"machine: {machine()}")
    table = print_table(
        rows, ["backend", "pairs", "seconds", "pairs_per_s", "speedup", "max_abs_diff_vs_torch"]
    )
    result: dict = {"machine": machine(), "model": ns.model, "threads": ns.threads, "throughput": rows}
    md = f"machine: {machine()}\n\n{table}\n"
    if ns.full:
        full = full_run(ns.model, ns.corpus)
        result["full_run"] = full
        line = (
            f"\nnlsim dedup --corpus {ns.corpus} --model {ns.model}: {full['wall_s']:.0f} s wall; threshold "
            f"{full['threshold']} (rerank score); {full['rerank']['candidates']} candidate pairs above the "
            f"floor {full['rerank']['candidate_floor']}, {full['rerank']['kept']} kept; "
            f"stages (s): {json.dumps(full['timings_s'])}\n"
        )
        print(line)
        md += line
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "rerank.json").write_text(json.dumps(result, indent=2))
    (RESULTS / "rerank.md").write_text(md)


if __name__ == "__main__":
    main()
