"""Bigger than memory, and the cost curve.

``stream``: a synthetic corpus of N items (10k, 100k, 1M; random words, with planted near-copies) written
to Parquet in chunks, then streamed through ``nlsim.streaming``: chunks of ``--chunk`` rows -> embeddings
-> one shard per chunk on disk -> index built from the shards -> k-NN graph shard by shard. The embedding
function is ``HashingEmbedder`` (a fast, non-semantic STAND-IN: the real encoder would take hours at 1M on
2 cores), so the figures show the pipeline's memory, not the encoder's speed. Every stage runs in its own
process, so each peak RSS is that stage's own.

``e5``: the same streaming embedding stage with the real multilingual-e5-small on ``--e5-items`` THUCNews
titles (measured, not extrapolated): its peak RSS is what a real run needs per worker, whatever N.

``plot``: the cost curve (time and memory against corpus size for embedding and for search) from the
saved results of this script, ``make_vectors.py`` and ``bench_search.py``; embedding time at sizes above the
measured count is extrapolated from the measured throughput and marked so.

Usage:
    nice -n 10 python benchmarks/bench_scale.py stream [--sizes 10000 100000 1000000]
    nice -n 10 python benchmarks/bench_scale.py e5 [--e5-items 2000]
    python benchmarks/bench_scale.py plot
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import BASE_META, CACHE, RESULTS, machine, peak_rss_mb, print_table, run_child  # noqa: E402

STREAM_JSON = RESULTS / "stream.json"
E5_JSON = RESULTS / "stream_e5.json"
SEARCH_JSON = RESULTS / "search.json"
PLOT = RESULTS / "cost_curve.png"


def make_corpus(path: Path, n: int, seed: int = 0, chunk: int = 100_000) -> None:
    """``n`` synthetic titles of 6-10 random-letter words (uniform over 50,000); every 10th item is a
    near-copy of the one before (last word changed). Written chunk by chunk (bounded memory)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, int(rng.integers(3, 9)))) for _ in range(50_000)])
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = None
    try:
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            lengths = rng.integers(6, 11, m)
            words = vocab[rng.integers(0, len(vocab), (m, 10))]
            titles = [" ".join(words[i, : lengths[i]]) for i in range(m)]
            for i in range(1, m, 10):
                titles[i] = titles[i - 1].rsplit(" ", 1)[0] + " copy"
            table = pa.table({"id": [f"s{start + i:07d}" for i in range(m)], "title": titles})
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def stage(name: str, n: int, chunk: int, k: int, threshold: float, graph: bool = True) -> dict:
    """One stage in this process: ``embed`` or ``index`` (index + graph)."""
    import faiss
    from nlsim.streaming import (
        HashingEmbedder,
        ShardSet,
        build_index_from_shards,
        embed_to_shards,
        shard_neighbor_pairs,
    )

    faiss.omp_set_num_threads(2)
    work = CACHE / f"stream-{n}"
    corpus = work / "corpus.parquet"
    shards_dir = work / "shards"
    t = time.perf_counter()
    if name == "embed":
        shutil.rmtree(shards_dir, ignore_errors=True)
        shards = embed_to_shards(
            corpus,
            HashingEmbedder(384),
            shards_dir,
            text_fields=("title",),
            batch_size=chunk,
            resume=False,
            progress=False,
        )
        row = {"items": len(shards), "shards": len(shards.shards), "embed_s": time.perf_counter() - t}
    else:
        shards = ShardSet(shards_dir)
        index = build_index_from_shards(shards, use_gpu=False)
        build_s = time.perf_counter() - t
        row = {
            "index": index.describe(),
            "index_s": build_s,
            "graph_s": "not run",
            "pairs": "not run",
            "index_bytes_est": int(index.ntotal * shards.dim * 4),
        }
        if graph:
            t = time.perf_counter()
            pairs = shard_neighbor_pairs(index, shards, k=k, threshold=threshold, progress=False)
            row.update(graph_s=time.perf_counter() - t, pairs=len(pairs))
    row["peak_rss_mb"] = peak_rss_mb()
    return row


def cmd_stream(args: argparse.Namespace) -> None:
    rows = []
    where, when = machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for n in args.sizes:
        work = CACHE / f"stream-{n}"
        corpus = work / "corpus.parquet"
        if not corpus.is_file():
            t = time.perf_counter()
            make_corpus(corpus, n)
            print(f"made {corpus} ({n:,} items) in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        common = [
            "--n",
            str(n),
            "--chunk",
            str(args.chunk),
            "--k",
            str(args.k),
            "--threshold",
            str(args.threshold),
        ]
        emb = run_child([str(Path(__file__)), "_stage", "embed", *common], timeout=1800)
        graph = [] if n <= args.graph_max else ["--no-graph"]
        idx = run_child([str(Path(__file__)), "_stage", "index", *common, *graph], timeout=1800)
        row = {
            "n": n,
            "chunk": args.chunk,
            "embed_s": emb["embed_s"],
            "embed_peak_mb": emb["peak_rss_mb"],
            "shards": emb["shards"],
            "index": idx["index"],
            "index_s": idx["index_s"],
            "graph_s": idx["graph_s"],
            "index_peak_mb": idx["peak_rss_mb"],
            "index_gb": idx["index_bytes_est"] / 1e9,
            "pairs": idx["pairs"],
        }
        print(json.dumps(row), file=sys.stderr)
        rows.append(row)
        if not args.keep:
            shutil.rmtree(work / "shards", ignore_errors=True)
    title = (
        f"streaming (HashingEmbedder stand-in, chunks of {args.chunk:,} rows, shards on disk); "
        f"{where}; {when}"
    )
    print(f"\n{title}\n")
    table = print_table(
        rows,
        [
            "n",
            "shards",
            "embed_s",
            "embed_peak_mb",
            "index",
            "index_s",
            "graph_s",
            "index_peak_mb",
            "index_gb",
            "pairs",
        ],
    )
    record = {"title": title, "runs": rows, "command": " ".join(sys.argv)}
    STREAM_JSON.write_text(json.dumps(record, indent=1))
    STREAM_JSON.with_suffix(".md").write_text(f"{title}\n\n{table}\n")


def cmd_e5(args: argparse.Namespace) -> None:
    import pandas as pd
    import torch
    from nlsim.streaming import embed_to_shards

    torch.set_num_threads(2)
    where, when = machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    src = RESULTS.parent.parent / "data" / "thucnews.parquet"
    work = CACHE / "stream-e5"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pd.read_parquet(src, columns=["id", "title"]).head(args.e5_items).to_parquet(work / "corpus.parquet")
    from nlsim.encoders import load_encoder

    enc = load_encoder("multilingual-e5-small", threads=2)
    t = time.perf_counter()
    shards = embed_to_shards(
        work / "corpus.parquet",
        lambda texts: enc.encode(texts, progress=False),
        work / "shards",
        text_fields=("title",),
        convert_mode="tw2sp",
        batch_size=args.e5_chunk,
        resume=False,
        progress=False,
        info={"model": enc.model_id, "fingerprint": enc.fingerprint},
    )
    secs = time.perf_counter() - t
    row = {
        "items": len(shards),
        "chunk": args.e5_chunk,
        "seconds": secs,
        "items_per_s": len(shards) / secs,
        "peak_rss_mb": peak_rss_mb(),
        "machine": where,
        "date": when,
    }
    E5_JSON.write_text(json.dumps(row, indent=1))
    E5_JSON.with_name(f"stream_e5_{len(shards)}.json").write_text(json.dumps(row, indent=1))
    print(json.dumps(row, indent=1))
    shutil.rmtree(work, ignore_errors=True)


def cmd_plot(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [10_000, 100_000, 1_000_000]
    base = json.loads(BASE_META.read_text())
    e5 = json.loads(E5_JSON.read_text()) if E5_JSON.is_file() else None
    search = json.loads(SEARCH_JSON.read_text())["runs"] if SEARCH_JSON.is_file() else []
    rows = []
    # embedding: a size measured by the streaming e5 run (bench_scale.py e5) or by make_vectors.py is shown
    # as measured; other sizes are extrapolated from the streaming e5 run's throughput (else make_vectors')
    src = e5 or base
    rate, measured = src["items_per_s"], src["items"]
    for n in sizes:
        if e5 and e5["items"] == n:
            secs, mem = e5["seconds"], e5["peak_rss_mb"]
            note = f"measured ({e5['items_per_s']:.1f}/s, streaming, bench_scale.py e5)"
        elif n == base["items"] and not (e5 and e5["items"] >= n):
            secs, mem = base["encode_s"], base["peak_rss_mb"]
            note = f"measured ({base['items_per_s']:.1f}/s, make_vectors.py, one call)"
        else:
            secs, mem = n / rate, src["peak_rss_mb"]
            note = (
                f"EXTRAPOLATED from {measured:,} measured items ({rate:.1f}/s); memory: streaming peak "
                f"per worker measured at {measured:,} items (constant in N, see the stream table)"
            )
        rows.append(
            {"stage": "embed (e5, 2 threads)", "n": n, "seconds": secs, "peak_rss_mb": mem, "note": note}
        )
    for method, label in (
        ("exact", "search exact flat"),
        ("exact-sample", "search exact flat"),
        ("ivf", "search IVF"),
        ("hnsw", "search HNSW"),
        ("st", "sentence-transformers"),
    ):
        for r in search:
            if r["method"] == method and r["n"] in sizes:
                note = "graph time EXTRAPOLATED from a query sample" if r.get("extrapolated") else "measured"
                if isinstance(r.get("recall"), float):
                    note += f"; recall@k {r['recall']:.3f}"
                rows.append(
                    {
                        "stage": label,
                        "n": r["n"],
                        "seconds": r["total_s"],
                        "peak_rss_mb": r.get("peak_rss_graph_mb") or r["peak_rss_mb"],
                        "note": note,
                    }
                )
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for stage_name in dict.fromkeys(r["stage"] for r in rows):
        pts = sorted((r for r in rows if r["stage"] == stage_name), key=lambda r: r["n"])
        xs = [r["n"] for r in pts]
        (line,) = ax1.plot(xs, [r["seconds"] for r in pts], marker="o", label=stage_name)
        for r in pts:
            if "EXTRAPOLATED" in r["note"]:
                ax1.plot(
                    [r["n"]],
                    [r["seconds"]],
                    marker="o",
                    markerfacecolor="white",
                    color=line.get_color(),
                    markersize=9,
                )
        ax2.plot(
            xs, [r["peak_rss_mb"] / 1024 for r in pts], marker="o", label=stage_name, color=line.get_color()
        )
    for ax, ylabel in ((ax1, "seconds (hollow = extrapolated)"), (ax2, "peak RSS, GB")):
        ax.set_xscale("log")
        ax.set_xlabel("corpus size (items)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    ax1.set_yscale("log")
    ax1.legend(fontsize=8)
    fig.suptitle(f"nlsim cost curve, 384-d e5 vectors; {machine().split(', load')[0]}")
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)
    print(f"saved {PLOT}\n")
    table = print_table(rows, ["stage", "n", "seconds", "peak_rss_mb", "note"])
    (RESULTS / "cost_curve.md").write_text(table + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stream")
    s.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    s.add_argument("--chunk", type=int, default=50_000)
    s.add_argument("--k", type=int, default=10)
    s.add_argument("--threshold", type=float, default=0.8)
    s.add_argument("--keep", action="store_true", help="keep the shard folders")
    s.add_argument(
        "--graph-max",
        type=int,
        default=100_000,
        help="run the k-NN graph stage only up to this size (bench_search.py times graphs)",
    )
    e = sub.add_parser("e5")
    e.add_argument("--e5-items", type=int, default=2000)
    e.add_argument("--e5-chunk", type=int, default=500)
    sub.add_parser("plot")
    st = sub.add_parser("_stage")
    st.add_argument("name")
    st.add_argument("--n", type=int)
    st.add_argument("--chunk", type=int)
    st.add_argument("--k", type=int)
    st.add_argument("--threshold", type=float)
    st.add_argument("--no-graph", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "_stage":
        print(json.dumps(stage(args.name, args.n, args.chunk, args.k, args.threshold, not args.no_graph)))
    else:
        {"stream": cmd_stream, "e5": cmd_e5, "plot": cmd_plot}[args.cmd](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
