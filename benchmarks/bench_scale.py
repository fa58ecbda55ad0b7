"""Real-encoder throughput per embedding worker, and the cost curve.

``e5``: the embedding stage as one worker of the Dask flow runs it (``nlsim.dedup.sharded.embed_shard``,
the model loaded once and kept) on the first ``--e5-items`` THUCNews titles, converted with ``tw2sp``
(``nlsim.conversion.convert``) and cut into shards of ``--e5-chunk`` texts (measured, not extrapolated).
Each shard's vectors are dropped once counted, as a worker hands its shard back, so the peak RSS is that of
one worker (the model and one shard), whatever the corpus size. Writes ``embed_e5_<items>.json``, and
``embed_e5.json`` (the record ``plot`` reads) only from a run of at least ``FULL_ITEMS`` (10,000) titles,
the smallest size on the cost curve: a quick check with fewer never replaces the curve's figures.

``plot``: the cost curve (time and memory against corpus size for embedding and for search) from the
saved results of this script, ``make_vectors.py`` and ``bench_search.py``; embedding time at sizes above the
measured count is extrapolated from the measured throughput and marked so. Without ``embed_e5.json`` the
embedding figures come from ``stream_e5.json``, a measurement of the streaming module that nlsim no longer
has (``docs/scale.md``), else from ``make_vectors.py``.

Usage:
    nice -n 10 python benchmarks/bench_scale.py e5 [--e5-items 10000 --e5-chunk 2000]
    python benchmarks/bench_scale.py plot
    python benchmarks/bench_scale.py e5 --model paraphrase-MiniLM-L3-v2 --e5-items 200 --out /tmp/scale-check

``--out`` (both commands) writes the files into another folder than ``benchmarks/results/``; ``plot``
always reads the saved results from ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import (  # noqa: E402
    BASE_META,
    RESULTS,
    machine,
    peak_rss_mb,
    print_table,
    save_figure,
)

from nlsim.io.atomic import atomic_write_text  # noqa: E402

E5_JSON = RESULTS / "embed_e5.json"
STREAM_E5_JSON = RESULTS / "stream_e5.json"  # the streaming module's measurement (before it was removed)
E5_MODEL = "multilingual-e5-small"
FULL_ITEMS = 10_000  # the smallest size on the cost curve: a run with fewer items does not feed it
SEARCH_JSON = RESULTS / "search.json"
PLOT = RESULTS / "cost_curve.png"


def cmd_e5(args: argparse.Namespace) -> None:
    import pandas as pd
    import torch

    from nlsim.conversion import convert
    from nlsim.dedup.sharded import cached_encoder, embed_shard, shard_slices

    torch.set_num_threads(args.threads)
    where, when = machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    src = RESULTS.parent.parent / "data" / "thucnews.parquet"
    titles = pd.read_parquet(src, columns=["title"])["title"].astype(str).head(args.e5_items).tolist()
    enc = cached_encoder(args.model, args.threads)  # loaded once, before the clock, as a worker keeps it
    t = time.perf_counter()
    texts = convert(titles, args.convert)
    convert_s = time.perf_counter() - t
    done = 0
    for start, stop in shard_slices(len(texts), args.e5_chunk):
        emb = embed_shard(texts[start:stop], args.model, threads=args.threads)
        assert emb.shape == (stop - start, enc.dim), emb.shape
        done += len(emb)
        del emb  # handed back: a worker keeps no shard
    secs = time.perf_counter() - t
    row = {
        "items": done,
        "chunk": args.e5_chunk,
        "seconds": secs,
        "convert_s": convert_s,
        "embed_s": secs - convert_s,
        "items_per_s": done / secs,
        "peak_rss_mb": peak_rss_mb(),
        "model": enc.model_id,
        "conversion": args.convert,
        "threads": args.threads,
        "method": f"embed_shard, shards of {args.e5_chunk:,}",
        "machine": where,
        "date": when,
    }
    print(json.dumps(row, indent=1))
    for path in e5_paths(args.out, done):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(row, indent=1))
        print(f"wrote {path}")


def e5_paths(out: Path, items: int) -> list[Path]:
    """The files an e5 run of ``items`` titles writes into ``out``: ``embed_e5_<items>.json``, and
    ``embed_e5.json`` (what ``plot`` reads) only from a run of at least :data:`FULL_ITEMS`."""
    paths = [out / f"{E5_JSON.stem}_{items}.json"]
    if items >= FULL_ITEMS:
        paths.append(out / E5_JSON.name)
    return paths


def source_machines(records: list[dict]) -> str:
    """The machines (CPU, cores, memory: each record's ``machine`` line less its load) the figures of
    ``records`` were measured on: the plot redraws saved figures, so the machine drawing it is not theirs."""
    lines = [str(r["machine"]).split(", load")[0] for r in records if r.get("machine")]
    return "; ".join(dict.fromkeys(lines)) or "a machine not recorded"


def cmd_plot(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [10_000, 100_000, 1_000_000]
    base = json.loads(BASE_META.read_text())
    e5 = None
    for path in (E5_JSON, STREAM_E5_JSON):
        record = json.loads(path.read_text()) if path.is_file() else None
        # the curve is e5-small's (registry name or its hub id); a record of another model is left out
        if record is not None and record.get("model", E5_MODEL).endswith(E5_MODEL):
            e5 = record
            break
    # the older streaming measurement did not say how it embedded: through nlsim.streaming, shard by shard
    how = (e5 or {}).get("method", "streaming")
    if e5 is None:
        per_worker = "make_vectors.py peak at {:,} items, one call"
    elif how == "streaming":
        per_worker = "streaming peak per worker measured at {:,} items (constant in N, see the stream table)"
    else:
        per_worker = "peak of one embedding worker measured at {:,} items (the model and one shard)"
    search_record = json.loads(SEARCH_JSON.read_text()) if SEARCH_JSON.is_file() else {}
    search = search_record.get("runs", [])
    embedding = [e5] if e5 else []
    if e5 is None or e5["items"] < base["items"]:  # make_vectors' own measurement stands in a row
        embedding.append(base)
    measured_on = source_machines(
        [*embedding, *search_record.get("meta", {}).get("runs_by_date", {}).values()]
    )
    rows = []
    # embedding: a size measured by the e5 run (bench_scale.py e5) or by make_vectors.py is shown as
    # measured; other sizes are extrapolated from the e5 run's throughput (else make_vectors')
    src = e5 or base
    rate, measured = src["items_per_s"], src["items"]
    for n in sizes:
        if e5 and e5["items"] == n:
            secs, mem = e5["seconds"], e5["peak_rss_mb"]
            note = f"measured ({e5['items_per_s']:.1f}/s, {how}, bench_scale.py e5)"
        elif n == base["items"] and not (e5 and e5["items"] >= n):
            secs, mem = base["encode_s"], base["peak_rss_mb"]
            note = f"measured ({base['items_per_s']:.1f}/s, make_vectors.py, one call)"
        else:
            secs, mem = n / rate, src["peak_rss_mb"]
            note = (
                f"EXTRAPOLATED from {measured:,} measured items ({rate:.1f}/s); memory: "
                + per_worker.format(measured)
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
    fig.suptitle(f"nlsim cost curve, 384-d e5 vectors; measured on {measured_on}")
    fig.tight_layout()
    args.out.mkdir(parents=True, exist_ok=True)
    plot = args.out / PLOT.name
    save_figure(fig, plot, dpi=110)
    print(f"saved {plot}\n")
    table = print_table(rows, ["stage", "n", "seconds", "peak_rss_mb", "note"])
    atomic_write_text(args.out / "cost_curve.md", f"Measured on {measured_on}.\n\n{table}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser(
        "e5",
        help="real-encoder throughput and peak RSS of one embedding worker",
        description="Time one embedding worker of the real encoder on the THUCNews titles: items/s and peak "
        "RSS.",
    )
    e.add_argument("--e5-items", type=int, default=2000, help="THUCNews titles embedded (default: 2000)")
    e.add_argument("--e5-chunk", type=int, default=500, help="texts per shard (default: 500)")
    e.add_argument(
        "--model",
        default=E5_MODEL,
        help=f"encoder (the cost curve uses multilingual-e5-small) (default: {E5_MODEL})",
    )
    e.add_argument("--convert", default="tw2sp", help="OpenCC conversion of the titles (default: tw2sp)")
    e.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    e.add_argument(
        "--out", type=Path, default=RESULTS, help="folder for the JSON files (default: benchmarks/results)"
    )
    pl = sub.add_parser(
        "plot",
        help="the cost curve from the saved results",
        description="Draw the cost curve (cost_curve.png, cost_curve.md) from the saved results.",
    )
    pl.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help="folder for cost_curve.png and cost_curve.md (default: benchmarks/results)",
    )
    args = ap.parse_args(argv)
    if args.cmd == "e5" and min(args.e5_items, args.e5_chunk, args.threads) < 1:
        ap.error("--e5-items, --e5-chunk and --threads must be at least 1")
    {"e5": cmd_e5, "plot": cmd_plot}[args.cmd](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
