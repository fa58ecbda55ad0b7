"""Near-duplicate graph at scale: exact vs approximate FAISS vs sentence-transformers, time / memory / recall.

Vectors: the real e5 embeddings of the 10,000 THUCNews titles (``make_vectors.py``), replicated with small
Gaussian noise up to N (``_common.replicate``; noise chosen there so copies sit at the distance of real
nearest neighbours). The graph: for every vector its ``k`` nearest neighbours at cosine >= ``threshold``,
unique pairs (``nlsim.search.neighbors.knn_graph``).

Each measurement runs in a fresh process, so "peak RSS" is that run's own high-water mark (the vectors
included: 1.5 GB at 1M x 384). Recall@k: for ``--sample`` random items, the share of their exact k nearest
neighbours (self excluded, ``faiss.knn`` brute force) that the approximate graph search returned.
The exact graph at 1M would take about an hour here: it is timed on ``--sample`` queries and
extrapolated linearly (marked so in the table).

Usage:
    nice -n 10 python benchmarks/bench_search.py                      # 100k and 1M, default methods
    nice -n 10 python benchmarks/bench_search.py --sizes 100000 --methods exact ivf hnsw st
    python benchmarks/bench_search.py --one ivf --n 100000            # one measurement, JSON out
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import (  # noqa: E402
    RESULTS,
    base_noise,
    load_base,
    machine,
    needs_bench_extra,
    peak_rss_mb,
    positive,
    print_table,
    replicate,
    run_child,
)

THREADS = 2


def _vectors(n: int) -> np.ndarray:
    return replicate(load_base(), n, base_noise(), seed=0)


def _exact_rows(x: np.ndarray, rows: np.ndarray, k: int) -> list[set[int]]:
    """Exact k nearest neighbours (self excluded) of ``x[rows]`` by brute force, no index copy."""
    import faiss

    _, nn = faiss.knn(x[rows], x, k + 1, metric=faiss.METRIC_INNER_PRODUCT)
    return [set([int(j) for j in r if j != q][:k]) for q, r in zip(rows, nn, strict=True)]


def one(method: str, n: int, k: int, threshold: float, sample: int, params: dict) -> dict:
    """One measurement in this process; returns the row for the table."""
    import faiss

    faiss.omp_set_num_threads(THREADS)
    t0 = time.perf_counter()
    x = _vectors(n)
    gen_s = time.perf_counter() - t0
    rng = np.random.default_rng(42)
    rows = np.sort(rng.choice(n, min(sample, n), replace=False))
    row: dict = {"method": method, "n": n, "k": k, "threshold": threshold}
    if method == "st":
        import torch
        from sentence_transformers.util import paraphrase_mining_embeddings

        torch.set_num_threads(THREADS)
        t = time.perf_counter()
        found = paraphrase_mining_embeddings(torch.from_numpy(x), top_k=k, max_pairs=n * k)
        kept = [p for p in found if p[0] >= threshold]
        row.update(
            build_s=0.0,
            graph_s=time.perf_counter() - t,
            pairs=len(kept),
            recall="exact",
            what="sentence-transformers paraphrase_mining_embeddings (exact, torch)",
        )
    elif method == "exact-sample":
        from nlsim.search.index import build_index
        from nlsim.search.neighbors import neighbor_pairs

        t = time.perf_counter()
        index = build_index(x, kind="flat", use_gpu=False)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        got = neighbor_pairs(index, x[rows], rows, k=k, threshold=threshold, progress=False)
        per_q = (time.perf_counter() - t) / len(rows)
        row.update(
            build_s=build_s,
            graph_s=per_q * n,
            pairs=f"~{len(got) * n // len(rows):,} (est.)",
            recall="exact",
            extrapolated=True,
            what=f"{index.describe()}; graph time EXTRAPOLATED from {len(rows):,} queries",
        )
    else:
        from nlsim.search.index import build_index
        from nlsim.search.neighbors import knn_graph

        kind, _, probe = method.partition(":")  # "ivf:4" = IVF with nprobe 4
        kind = {"exact": "flat"}.get(kind, kind)
        if probe:
            params = {**params, "nprobe": int(probe)}
        t = time.perf_counter()
        index = build_index(x, kind=kind, use_gpu=False, **params)
        build_s = time.perf_counter() - t
        t = time.perf_counter()
        pairs = knn_graph(index, x, k=k, threshold=threshold, progress=False)
        graph_s = time.perf_counter() - t
        row.update(
            build_s=build_s,
            graph_s=graph_s,
            pairs=len(pairs),
            what=index.describe(),
            peak_rss_graph_mb=peak_rss_mb(),
        )  # before the recall measurement adds its own
        if kind == "flat":
            row["recall"] = "exact"
        else:
            want = _exact_rows(x, rows, k)
            _, got = index.search(x[rows], k + 1)
            got_sets = [
                set([int(j) for j in r if j != q and j >= 0][:k]) for q, r in zip(rows, got, strict=True)
            ]
            row["recall"] = float(np.mean([len(g & w) / len(w) for g, w in zip(got_sets, want, strict=True)]))
            if kind == "ivf":  # the same index probed more or less deeply (search only, not the graph)
                curve = {}
                for probe in (1, 2, 4, 8, 16):
                    index.set_search_params(nprobe=probe)
                    t = time.perf_counter()
                    _, got = index.search(x[rows], k + 1)
                    sets = [
                        set([int(j) for j in r if j != q and j >= 0][:k])
                        for q, r in zip(rows, got, strict=True)
                    ]
                    curve[probe] = {
                        "recall": float(
                            np.mean([len(g & w) / len(w) for g, w in zip(sets, want, strict=True)])
                        ),
                        "ms_per_query": 1000 * (time.perf_counter() - t) / len(rows),
                    }
                row["recall_by_nprobe"] = curve
            # pair recall: exact pairs >= threshold among the sampled items that the approximate graph holds
            ex_keys = []
            for q, w in zip(rows, want, strict=True):
                for j in w:
                    if float(x[q] @ x[j]) >= threshold:
                        ex_keys.append(min(q, j) * n + max(q, j))
            graph_keys = pairs["a"].to_numpy() * n + pairs["b"].to_numpy()
            found = np.isin(np.array(ex_keys, dtype=np.int64), graph_keys)
            row["pair_recall"] = float(found.mean()) if len(ex_keys) else float("nan")
    row.setdefault("peak_rss_graph_mb", peak_rss_mb())
    row["total_s"] = row["build_s"] + row["graph_s"]
    row["gen_s"] = gen_s
    row["peak_rss_mb"] = peak_rss_mb()
    return row


METHODS = ("exact", "exact-sample", "ivf", "hnsw", "st")


def method_name(text: str) -> str:
    """An argparse ``type``: one of :data:`METHODS`, or ``ivf:NPROBE`` (a typo is refused before any run, not
    met by a child process after the methods before it ran, their rows lost)."""
    kind, colon, probe = text.partition(":")
    if text in METHODS or (kind == "ivf" and colon and probe.isdigit() and int(probe) > 0):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(METHODS)}, ivf:NPROBE")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        type=positive(),
        nargs="+",
        default=[100_000, 1_000_000],
        help="the numbers of vectors measured (default: 100000 1000000)",
    )
    ap.add_argument(
        "--methods",
        nargs="+",
        type=method_name,
        default=None,
        help="exact, exact-sample, ivf, ivf:NPROBE, hnsw, st (default: exact+ivf+hnsw+st at "
        "<=100k, exact-sample+ivf at larger sizes)",
    )
    ap.add_argument("--k", type=positive(), default=10, help="neighbours searched per vector (default: 10)")
    ap.add_argument(
        "--threshold",
        type=float,
        default=0.9,
        help="cosine cut-off of the graph (0.9, the default: about where e5 title neighbours sit)",
    )
    ap.add_argument(
        "--sample",
        type=positive(),
        default=2000,
        help="queries for recall (and exact extrapolation) (default: 2000)",
    )
    ap.add_argument("--nlist", type=int, default=None, help="IVF lists (default: nlsim's for the size)")
    ap.add_argument("--nprobe", type=int, default=None, help="IVF lists probed (default: nlsim's)")
    ap.add_argument("--ef-search", type=int, default=None, help="HNSW efSearch (default: nlsim's)")
    ap.add_argument("--hnsw-m", type=int, default=None, help="HNSW M (default: nlsim's)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument(
        "--out",
        default=str(RESULTS / "search.json"),
        help="the record every run is added to, its page (.md) beside it (default: "
        "benchmarks/results/search.json)",
    )
    args = ap.parse_args(argv)
    params = {
        k: v
        for k, v in {
            "nlist": args.nlist,
            "nprobe": args.nprobe,
            "ef_search": args.ef_search,
            "hnsw_m": args.hnsw_m,
        }.items()
        if v is not None
    }
    if args.one:
        print(json.dumps(one(args.one, args.n, args.k, args.threshold, args.sample, params)))
        return 0

    def methods_at(n: int) -> list[str]:
        return args.methods or (["exact", "ivf", "hnsw", "st"] if n <= 100_000 else ["exact-sample", "ivf"])

    if any("st" in methods_at(n) for n in args.sizes):  # before the methods before it are measured
        needs_bench_extra(ap, "the st method", ("sentence_transformers",))
    rows = []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    where = machine()
    for n in args.sizes:
        for m in methods_at(n):
            extra = [f"--{k.replace('_', '-')}={v}" for k, v in params.items()]
            cmd = [
                str(Path(__file__)),
                "--one",
                m,
                "--n",
                str(n),
                "--k",
                str(args.k),
                "--threshold",
                str(args.threshold),
                "--sample",
                str(args.sample),
                *extra,
            ]
            print(f"running {m} at n={n:,} ...", file=sys.stderr, flush=True)
            r = run_child(cmd, timeout=1800)
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    out = Path(args.out)
    old = json.loads(out.read_text()) if out.is_file() else {"runs": []}
    done = {(x["n"], x["method"]) for x in rows}
    runs = [r for r in old.get("runs", []) if (r["n"], r["method"]) not in done] + rows
    order = ["exact", "exact-sample", "ivf", "hnsw", "st"]
    runs.sort(key=lambda r: (r["n"], order.index(r["method"].split(":")[0]), r["method"]))
    for r in runs:
        st = [x for x in runs if x["n"] == r["n"] and x["method"] == "st"]
        r.pop("speedup_vs_st", None)
        if st:
            r["speedup_vs_st"] = st[0]["total_s"] / r["total_s"]
    cols = [
        "n",
        "method",
        "what",
        "build_s",
        "graph_s",
        "total_s",
        "peak_rss_graph_mb",
        "peak_rss_mb",
        "recall",
        "pair_recall",
        "pairs",
        "speedup_vs_st",
    ]
    print(f"\nnear-duplicate graph, k={args.k}, cosine >= {args.threshold}; {where}; {started}\n")
    table = print_table(runs, cols)
    meta = old.get("meta", {})
    meta.setdefault("runs_by_date", {})[started] = {
        "machine": where,
        "command": " ".join(sys.argv),
        "measured": sorted(f"{n}/{m}" for n, m in done),
    }
    meta.update({"k": args.k, "threshold": args.threshold})
    write_results(out, meta, runs, table)
    return 0


def write_results(out: Path, meta: dict, runs: list[dict], table: str) -> None:
    """The record of every run so far (``out``, runs of earlier days kept) and its page, each written whole
    or left as it was: a run stopped while writing never cuts the record short."""
    from nlsim.io.atomic import atomic_write_text

    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps({"meta": meta, "runs": runs}, indent=1))
    atomic_write_text(
        out.with_suffix(".md"),
        f"near-duplicate graph, k={meta['k']}, cosine >= {meta['threshold']}; runs: "
        + "; ".join(f"{d}: {v['machine']}" for d, v in meta["runs_by_date"].items())
        + f"\n\n{table}\n",
    )


if __name__ == "__main__":
    raise SystemExit(main())
