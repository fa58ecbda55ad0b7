"""Near-duplicate graph at up to 1M on realistic synthetic vectors: distinct e5-like vectors, not copies.

``bench_search.py`` reaches 1M by replicating the 10,000 real e5 vectors with small noise; the copies of a
title share its IVF cell and its HNSW neighbourhood, which flatters both recall and speed. Here the N vectors
are drawn from a model fitted to the real ones, so no two of them are copies of each other or of a real one.

``make``: the model and the vectors. Spherical k-means (``--clusters``, 256) on the 10,000 real e5 vectors of
the THUCNews titles (``make_vectors.py``); per cluster a Gaussian with the covariance of that cluster's
residuals (its members minus their mean), shrunk towards the pooled within-cluster covariance with
``--shrink`` pseudo-points (small clusters borrow the common shape); cluster weights from the cluster sizes.
A vector is ``mean_c + s * L_c z`` (``z`` standard normal, ``L_c L_c' = cov_c``), L2-normalised; the spread
``s = alpha * exp(tau * g - tau^2 / 2)`` (``g`` standard normal: a log-normal spread per vector). For each
``tau`` of a small grid ``alpha`` is set by bisection so that the median nearest-neighbour cosine of 10,000
synthetic vectors equals that of the 10,000 real ones (equal size, so equal density); the ``tau`` kept is the
one with the smallest mean of the two-sample KS statistics of the 1st- and 10th-neighbour cosines. The
calibration uses its own draw; the figures reported compare the real vectors with the first 10,000 rows of
the file. Rows are made in fixed chunks with per-chunk seeds, so the first n rows of a larger file are the
file of n rows: ``graph`` and ``curve`` use prefixes. Checks: no synthetic vector has a neighbour at cosine
>= 0.9999 (all of the first 10,000, and ``--copy-sample`` random rows against all N), none is a copy of a
real vector. ANN difficulty at equal size (``ann_difficulty``): nlsim's IVF and HNSW recall@10 over all
10,000 rows, real against synthetic, so that what the model gets wrong is on record (per-cluster Gaussians
are easier than real titles for IVF, about as hard for HNSW). Writes ``results/cache/realistic_e5.npy``
(float32, git-ignored) with a ``.json`` sidecar, ``results/realistic_nn_cosine.png`` and the ``make`` part
of ``results/realistic.json``.

``graph``: the k = 10 near-duplicate graph (cosine >= ``--threshold``, 0.9) over the first N vectors, built
the way ``nlsim dedup --index ivf|hnsw|flat`` builds it (``nlsim.search.index.build_index``, then
``nlsim.search.neighbors.knn_graph``). Each measurement runs in a fresh process (peak RSS its own, the N
vectors included); wall and CPU seconds are recorded for the build and the graph. recall@10: for
``--sample`` random rows (2,000), the share of their exact 10 nearest neighbours (self excluded; exact from a
``faiss.IndexFlatIP`` over all N in its own process, cached) that the index returns; pair recall: the share
of those exact neighbours at cosine >= threshold present in the graph. ``--sweep``: per build setting (IVF
``--nlists``, HNSW ``--ms``) one process builds the index and measures recall and search time of the sample
for every search setting (``--nprobes`` / ``--ef-searches``); the cheapest setting of each build reaching
``--target`` recall (0.95) is ranked by estimated total (build + per-query time x N), the best ``--confirm``
are measured in full, and the fastest measured one reaching the target is reported.

``curve``: the cost (time, peak RSS) against N for one setting (or ``--from-sweep``: the setting the last
sweep of that method chose; IVF lists then scale as ``nlist_factor x`` nlsim's default for each N), the
exponent of each fitted on the measured points (when the largest size is below 1M, the fit is extrapolated to
1M and marked so). One curve per method is kept; ``results/realistic_cost_curve.png`` shows them all.

``dask``: the Dask flow's neighbour stage over the first N vectors: the index is built in one process, then
``flows.dedup_distributed.dask_call`` runs ``nlsim.dedup.stages.neighbors`` with the search sharded over a
local Dask cluster of ``--workers`` processes x 1 thread, through Prefect's ``DaskTaskRunner`` (one
temporary Prefect API for the process and its workers). Recorded: build and graph wall seconds (the graph
including the cluster's start), pairs, recall@10 and pair recall as for ``graph``, peak RSS of the main
process and of the largest child process.

Every command updates ``results/realistic.json`` and rewrites ``results/realistic.md`` from it.

Usage:
    nice -n 19 python benchmarks/bench_realistic.py make --n 1000000
    nice -n 19 python benchmarks/bench_realistic.py graph --n 1000000 --method ivf --sweep
    nice -n 19 python benchmarks/bench_realistic.py graph --n 1000000 --method hnsw --sweep --ms 16,24 \
        --ef-constructions 20,40
    nice -n 19 python benchmarks/bench_realistic.py graph --n 1000000 --method hnsw --hnsw-m 16 --ef-search 64
    nice -n 19 python benchmarks/bench_realistic.py graph --n 100000 --method ivf --nlist 1024 --nprobe 16
    nice -n 19 python benchmarks/bench_realistic.py curve --sizes 10000,100000,1000000 --method ivf \
        --from-sweep
    python benchmarks/bench_realistic.py graph --n 1000000 --method ivf          # nlsim's defaults
    python benchmarks/bench_realistic.py graph --n 1000000 --method ivf --nlist 2048 --nprobe 12
    python benchmarks/bench_realistic.py curve --sizes 10000,30000,100000,300000,1000000 --method ivf
    python benchmarks/bench_realistic.py dask --n 1000000 --workers 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import (  # noqa: E402
    CACHE,
    RESULTS,
    base_noise,
    load_base,
    machine,
    machine_record,
    numbers,
    peak_rss_mb,
    print_table,
    replicate,
    run_child,
    save_figure,
)

from nlsim.io.atomic import atomic_path, atomic_write_text  # noqa: E402

THREADS = 2
DIM = 384
CHUNK = 50_000
VECTORS = CACHE / "realistic_e5.npy"
VECTORS_META = CACHE / "realistic_e5.json"
OUT_JSON = RESULTS / "realistic.json"
OUT_MD = RESULTS / "realistic.md"
NN_PNG = RESULTS / "realistic_nn_cosine.png"
CURVE_PNG = RESULTS / "realistic_cost_curve.png"
QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
COPY_COS = 0.9999
TARGETS = {"n": 1_000_000, "total_s": 120.0, "recall": 0.95, "peak_rss_mb": 6 * 1024}


# ---------------------------------------------------------------------------------------------- helpers


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def _load_avg() -> float:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else float("nan")


def _faiss_threads() -> None:
    import faiss

    faiss.omp_set_num_threads(THREADS)


def _nn_cos(x: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Cosine of each row's 1st and k-th nearest neighbour within ``x`` (exact, self excluded)."""
    import faiss

    sims, rows = faiss.knn(x, x, k + 1, metric=faiss.METRIC_INNER_PRODUCT)
    own = rows == np.arange(len(x))[:, None]
    # drop the row itself (normally column 0; a tie with an exact copy may put it elsewhere)
    keep = ~own & (np.cumsum(~own, axis=1) <= k)
    s = np.where(keep, sims, np.nan)
    s = np.sort(np.where(np.isnan(s), -np.inf, s), axis=1)[:, ::-1]
    return s[:, 0].astype(np.float64), s[:, k - 1].astype(np.float64)


def _quantiles(a: np.ndarray) -> dict[str, float]:
    out = {f"q{int(q * 100):02d}": round(float(np.quantile(a, q)), 4) for q in QUANTILES}
    out["mean"] = round(float(np.mean(a)), 4)
    out["share_ge_0.9"] = round(float(np.mean(a >= 0.9)), 4)
    return out


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import ks_2samp

    return round(float(ks_2samp(a, b).statistic), 4)


def _read_results() -> dict[str, Any]:
    return json.loads(OUT_JSON.read_text()) if OUT_JSON.is_file() else {}


def _write_results(data: dict[str, Any]) -> None:
    """The record of every run so far, and its page, each written whole or left as it was (the record holds
    hours of measurements: a run stopped while writing never cuts it short)."""
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT_JSON, json.dumps(data, indent=1, ensure_ascii=False))
    atomic_write_text(OUT_MD, render_md(data))
    print(f"wrote {OUT_JSON} and {OUT_MD}", file=sys.stderr)


def _vectors_meta() -> dict[str, Any]:
    if not VECTORS.is_file() or not VECTORS_META.is_file():
        sys.exit(f"{VECTORS} is missing: run `python benchmarks/bench_realistic.py make --n N` first")
    return json.loads(VECTORS_META.read_text())


def load_rows(n: int) -> np.ndarray:
    """The first ``n`` synthetic vectors, read into ordinary memory (no file mapping, whose pages would
    count in the peak RSS a second time)."""
    meta = _vectors_meta()
    if n > meta["rows"]:
        sys.exit(f"{VECTORS} holds {meta['rows']:,} vectors, {n:,} asked: run `make --n {n}` first")
    with open(VECTORS, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read_header = (
            np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(f)
        assert dtype == np.float32 and not fortran and shape[1] == DIM
        x = np.fromfile(f, dtype=np.float32, count=n * DIM)
    return x.reshape(n, DIM)


# ---------------------------------------------------------------------------------------------- model


class Model:
    """Per-cluster Gaussians fitted to the real vectors (see the module docstring)."""

    def __init__(self, means: np.ndarray, factors: np.ndarray, weights: np.ndarray, info: dict[str, Any]):
        self.means, self.factors, self.weights, self.info = means, factors, weights, info

    @classmethod
    def fit(cls, real: np.ndarray, clusters: int, shrink: float, seed: int) -> Model:
        import faiss

        d = real.shape[1]
        km = faiss.Kmeans(d, clusters, niter=25, seed=seed, spherical=True, verbose=False)
        km.train(real)
        _, lab = km.index.search(real, 1)
        lab = lab.ravel()
        sizes = np.bincount(lab, minlength=clusters)
        keep = np.nonzero(sizes)[0]
        means = np.stack([real[lab == c].mean(0) for c in keep]).astype(np.float64)
        remap = np.full(clusters, -1)
        remap[keep] = np.arange(len(keep))
        lab = remap[lab]
        res = real.astype(np.float64) - means[lab]
        pooled = res.T @ res / max(len(real) - len(keep), 1)
        factors = np.empty((len(keep), d, d), np.float32)
        for c in range(len(keep)):
            r = res[lab == c]
            scatter = r.T @ r  # = (n_c - 1) * sample covariance
            cov = (scatter + shrink * pooled) / (max(len(r) - 1, 0) + shrink)
            w, v = np.linalg.eigh(cov)
            factors[c] = (v * np.sqrt(np.clip(w, 0, None))).astype(np.float32)
        kept = sizes[keep]
        info = {
            "clusters": int(len(keep)),
            "cluster_size_min_median_max": [int(kept.min()), float(np.median(kept)), int(kept.max())],
            "shrink_pseudo_points": shrink,
            "kmeans": f"faiss spherical k-means, {clusters} centroids, 25 iterations, seed {seed}",
            "residual_variance_share": round(float((res**2).sum() / ((real - real.mean(0)) ** 2).sum()), 4),
        }
        return cls(means.astype(np.float32), factors, (kept / kept.sum()).astype(np.float64), info)

    def chunk(self, seed: int, index: int, alpha: float, tau: float, rows: int = CHUNK) -> np.ndarray:
        """The first ``rows`` rows of chunk ``index`` (all random draws made for the full chunk, so a
        prefix is the same whatever ``rows`` is)."""
        rng = np.random.default_rng([seed, index])
        lab = rng.choice(len(self.weights), CHUNK, p=self.weights)[:rows]
        z = rng.standard_normal((CHUNK, self.means.shape[1]), dtype=np.float32)[:rows]
        g = rng.standard_normal(CHUNK)[:rows]
        scale = (alpha * np.exp(tau * g - tau**2 / 2)).astype(np.float32)
        out = np.empty((rows, self.means.shape[1]), np.float32)
        order = np.argsort(lab, kind="stable")
        bounds = np.searchsorted(lab[order], np.arange(len(self.weights) + 1))
        for c in range(len(self.weights)):
            i = order[bounds[c] : bounds[c + 1]]
            if i.size:
                out[i] = self.means[c] + (z[i] @ self.factors[c].T) * scale[i, None]
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def sample(
        self, n: int, seed: int, alpha: float, tau: float, out: np.ndarray | None = None
    ) -> np.ndarray:
        """``n`` vectors (chunk by chunk; into ``out``, e.g. a memory-mapped file, when given)."""
        out = np.empty((n, self.means.shape[1]), np.float32) if out is None else out
        for i, start in enumerate(range(0, n, CHUNK)):
            stop = min(n, start + CHUNK)
            out[start:stop] = self.chunk(seed, i, alpha, tau, stop - start)
        return out


def calibrate(
    model: Model, real1: np.ndarray, real10: np.ndarray, taus: list[float], seed: int
) -> tuple[float, float, list[dict[str, Any]]]:
    """``(alpha, tau, trials)``: per tau, alpha matching the median 1-NN cosine at 10,000 vectors (bisection);
    the tau with the smallest mean KS statistic of the 1st- and 10th-NN cosine distributions."""
    m = len(real1)
    target = float(np.median(real1))
    trials: list[dict[str, Any]] = []
    for tau in taus:
        lo, hi = 0.5, 1.6
        best: dict[str, Any] | None = None
        for _ in range(9):
            alpha = (lo + hi) / 2
            s1, s10 = _nn_cos(model.sample(m, seed, alpha, tau))
            med = float(np.median(s1))
            row = {
                "tau": tau,
                "alpha": round(alpha, 4),
                "median_nn1": round(med, 4),
                "ks_nn1": _ks(real1, s1),
                "ks_nn10": _ks(real10, s10),
            }
            if best is None or abs(med - target) < abs(best["median_nn1"] - target):
                best = row
            if med > target:  # too tight: spread more
                lo = alpha
            else:
                hi = alpha
        assert best is not None
        best["ks_mean"] = round((best["ks_nn1"] + best["ks_nn10"]) / 2, 4)
        trials.append(best)
        print(f"calibration: {best}", file=sys.stderr, flush=True)
    chosen = min(trials, key=lambda r: r["ks_mean"])
    return float(chosen["alpha"]), float(chosen["tau"]), trials


def cmd_make(args: argparse.Namespace) -> int:
    _faiss_threads()
    started, where, load = _now(), machine(), _load_avg()
    t0 = time.perf_counter()
    real = load_base().astype(np.float32)
    real1, real10 = _nn_cos(real)
    model = Model.fit(real, args.clusters, args.shrink, args.seed)
    fit_s = time.perf_counter() - t0
    taus = [float(t) for t in args.taus.split(",")]
    t = time.perf_counter()
    alpha, tau, trials = calibrate(model, real1, real10, taus, seed=args.seed + 1)
    cal_s = time.perf_counter() - t
    settings = {
        "base": "thucnews_e5 (10,000 real multilingual-e5-small vectors of THUCNews titles, tw2sp)",
        "base_sha256": hashlib.sha256(real.tobytes()).hexdigest(),
        "clusters": args.clusters,
        "shrink": args.shrink,
        "seed": args.seed,
        "alpha": alpha,
        "tau": tau,
        "chunk": CHUNK,
    }
    vid = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    # the vectors, chunk by chunk into a memory-mapped .npy
    t = time.perf_counter()
    VECTORS.parent.mkdir(parents=True, exist_ok=True)
    tmp = VECTORS.with_suffix(".npy.tmp")
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(args.n, DIM))
    model.sample(args.n, args.seed, alpha, tau, out=out)
    out.flush()
    del out
    os.replace(tmp, VECTORS)
    atomic_write_text(VECTORS_META, json.dumps({"id": vid, "rows": args.n, **settings}, indent=1))
    gen_s = time.perf_counter() - t
    print(f"wrote {args.n:,} vectors to {VECTORS} in {gen_s:.1f} s", file=sys.stderr, flush=True)

    # equal-size comparison: the first 10,000 rows against the 10,000 real vectors
    x = np.load(VECTORS, mmap_mode="r")
    m = min(len(real), args.n)
    syn = np.ascontiguousarray(x[:m])
    syn1, syn10 = _nn_cos(syn)
    import faiss

    real_hit, _ = faiss.knn(syn, real, 1, metric=faiss.METRIC_INNER_PRODUCT)
    difficulty = {"real_10k": ann_difficulty(real), f"synthetic_{m // 1000}k": ann_difficulty(syn)}
    print(f"ANN difficulty at equal size: {difficulty}", file=sys.stderr, flush=True)
    # copies at full density: random rows against all N
    rng = np.random.default_rng(7)
    q = np.sort(rng.choice(args.n, min(args.copy_sample, args.n), replace=False))
    t = time.perf_counter()
    dense1 = _nn_to_all(np.ascontiguousarray(x[q]), q, x)
    dense_s = time.perf_counter() - t
    del x, syn
    checks = {
        "max_nn_cos_first_10k": round(float(syn1.max()), 6),
        f"max_nn_cos_{len(q)}_rows_vs_all": round(float(dense1.max()), 6),
        "max_cos_to_a_real_vector": round(float(real_hit.max()), 6),
        "copy_threshold": COPY_COS,
    }
    assert syn1.max() < COPY_COS, f"two synthetic vectors are copies: max NN cosine {syn1.max():.6f}"
    assert dense1.max() < COPY_COS, f"two synthetic vectors are copies: max NN cosine {dense1.max():.6f}"
    assert real_hit.max() < COPY_COS, f"a synthetic vector copies a real one: {real_hit.max():.6f}"
    dists: dict[str, Any] = {
        "real_10k": {"nn1": _quantiles(real1), "nn10": _quantiles(real10)},
        f"synthetic_{m // 1000}k": {"nn1": _quantiles(syn1), "nn10": _quantiles(syn10)},
    }
    series: dict[str, np.ndarray] = {"real, 10k": real1, f"synthetic, first {m:,}": syn1}
    series10: dict[str, np.ndarray] = {"real, 10k": real10, f"synthetic, first {m:,}": syn10}
    if args.n > m:
        dists[f"synthetic_at_{args.n}_sample_{len(q)}"] = {"nn1": _quantiles(dense1)}
        series[f"synthetic at N={args.n:,} ({len(q):,} rows)"] = dense1
        if not args.no_replicated:
            rep = replicate(real, args.n, base_noise(), seed=0)
            rep1 = _nn_to_all(np.ascontiguousarray(rep[q]), q, rep)
            del rep
            dists[f"replicated_at_{args.n}_sample_{len(q)}"] = {"nn1": _quantiles(rep1)}
            series[f"replicated at N={args.n:,} (bench_search)"] = rep1
    ks = {"nn1": _ks(real1, syn1), "nn10": _ks(real10, syn10)}
    _plot_nn(series, series10, ks, NN_PNG)
    data = _read_results()
    data["make"] = {
        "date": started,
        "machine": where,
        "machine_record": machine_record(),
        "load_average_at_start": load,
        "niceness": os.nice(0),
        "command": " ".join(sys.argv),
        "vectors": str(VECTORS.relative_to(RESULTS.parent.parent)),
        "vectors_id": vid,
        "rows": args.n,
        "settings": settings,
        "model": model.info,
        "calibration": {"target_median_nn1": round(float(np.median(real1)), 4), "trials": trials},
        "ks_equal_size": ks,
        "distributions": dists,
        "checks": checks,
        "ann_difficulty_equal_size": difficulty,
        "seconds": {
            "fit": round(fit_s, 1),
            "calibrate": round(cal_s, 1),
            "generate": round(gen_s, 1),
            "copy_check": round(dense_s, 1),
        },
        "plot": NN_PNG.name,
    }
    _write_results(data)
    print(json.dumps({k: data["make"][k] for k in ("settings", "ks_equal_size", "checks")}, indent=1))
    return 0


def ann_difficulty(x: np.ndarray, k: int = 10) -> dict[str, Any]:
    """How hard ``x`` is for the approximate indexes, all rows as queries: recall@k of nlsim's IVF (its
    default list count for ``len(x)``) at several nprobe and of nlsim's HNSW (M 16, efConstruction 40) at
    several efSearch; the share of 1-NN pairs whose two ends fall in different IVF lists; hubness (skewness
    of how often each row is among the others' k nearest)."""
    import faiss

    from nlsim.search.index import build_index

    rows = np.arange(len(x))
    _, exact = faiss.knn(x, x, k + 1, metric=faiss.METRIC_INNER_PRODUCT)
    want = _sets(rows, exact, k)
    out: dict[str, Any] = {}
    ivf = build_index(x, kind="ivf", use_gpu=False)
    out["ivf_nlist"] = ivf.params["nlist"]
    for p in (1, 4, 16, 64):
        ivf.set_search_params(nprobe=p)
        out[f"ivf_recall_nprobe_{p}"] = round(_recall(_sets(rows, ivf.search(x, k + 1)[1], k), want), 4)
    _, cell = ivf.index.quantizer.search(x, 1)
    first = np.array([next(j for j in r if j != q) for q, r in zip(rows, exact, strict=True)])
    out["nn1_in_other_list"] = round(float(np.mean(cell[rows, 0] != cell[first, 0])), 4)
    hnsw = build_index(x, kind="hnsw", use_gpu=False, hnsw_m=16, ef_construction=40)
    for ef in (16, 32, 64):
        hnsw.set_search_params(ef_search=ef)
        out[f"hnsw16_recall_ef_{ef}"] = round(_recall(_sets(rows, hnsw.search(x, k + 1)[1], k), want), 4)
    occ = np.bincount(np.array([j for s in want for j in s]), minlength=len(x)).astype(float)
    out["hubness_skew"] = round(float(((occ - occ.mean()) ** 3).mean() / occ.std() ** 3), 3)
    out["max_in_degree"] = int(occ.max())
    return out


def _nn_to_all(queries: np.ndarray, rows: np.ndarray, x: np.ndarray, block: int = 200_000) -> np.ndarray:
    """Nearest-neighbour cosine of ``queries`` (rows ``rows`` of ``x``) against all of ``x``, self excluded,
    exact, block by block (``x`` may be memory-mapped)."""
    import faiss

    best = np.full(len(rows), -np.inf)
    for start in range(0, len(x), block):
        part = np.ascontiguousarray(x[start : start + block])
        sims, hit = faiss.knn(queries, part, 2, metric=faiss.METRIC_INNER_PRODUCT)
        self_hit = hit + start == rows[:, None]
        sims = np.where(self_hit, -np.inf, sims)
        best = np.maximum(best, sims.max(axis=1))
    return best


def _plot_nn(
    series: dict[str, np.ndarray], series10: dict[str, np.ndarray], ks: dict[str, float], path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = [("black", "-"), ("tab:blue", "-"), ("tab:orange", "--"), ("tab:gray", ":")]
    lo = min(float(np.quantile(v, 0.002)) for v in [*series.values(), *series10.values()])
    bins = np.linspace(lo, 1.0, 90)
    for ax, ser, what, key in (
        (axes[0], series, "nearest neighbour", "nn1"),
        (axes[1], series10, "10th nearest neighbour", "nn10"),
    ):
        for (label, v), (color, ls) in zip(ser.items(), styles, strict=False):
            ax.hist(
                v, bins=bins, density=True, histtype="step", color=color, linestyle=ls, lw=1.6, label=label
            )
        ax.axvline(0.9, color="tab:red", lw=0.8, alpha=0.6)
        ax.set_xlabel(f"cosine to the {what}")
        ax.set_ylabel("density")
        ax.set_title(f"{what}: KS real vs synthetic at equal size = {ks[key]:.3f}", fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(
        "e5 title vectors: real 10k vs synthetic (per-cluster Gaussians); red line: graph threshold 0.9"
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------- measurement


def _exact_path(n: int, sample: int, k: int) -> Path:
    return CACHE / f"realistic_exact_{_vectors_meta()['id']}_{n}_{sample}_{k}.npz"


def _sample_rows(n: int, sample: int) -> np.ndarray:
    return np.sort(np.random.default_rng(42).choice(n, min(sample, n), replace=False))


def exact_child(n: int, sample: int, k: int) -> dict[str, Any]:
    """Exact ``k + 1`` nearest neighbours of the sampled rows (a ``faiss.IndexFlatIP`` over all N); cached."""
    import faiss

    _faiss_threads()
    path = _exact_path(n, sample, k)
    if path.is_file():
        return {"cached": str(path)}
    x = load_rows(n)
    rows = _sample_rows(n, sample)
    t = time.perf_counter()
    index = faiss.IndexFlatIP(DIM)
    index.add(x)
    sims, nn = index.search(x[rows], k + 1)
    with atomic_path(path, suffix=".npz") as tmp:  # whole or not at all: a cut-off cache is never read back
        np.savez(tmp, rows=rows, sims=sims, nn=nn)
    return {"computed": str(path), "seconds": round(time.perf_counter() - t, 1), "peak_rss_mb": peak_rss_mb()}


def _sets(rows: np.ndarray, nn: np.ndarray, k: int) -> list[set[int]]:
    return [set([int(j) for j in r if j != q and j >= 0][:k]) for q, r in zip(rows, nn, strict=True)]


def _recall(got: list[set[int]], want: list[set[int]]) -> float:
    return float(np.mean([len(g & w) / max(len(w), 1) for g, w in zip(got, want, strict=True)]))


def _pair_recall(
    x: np.ndarray, rows: np.ndarray, want: list[set[int]], pairs: Any, threshold: float
) -> float | None:
    """Share of the sample's exact neighbours at cosine >= threshold that are pairs of the graph."""
    n = len(x)
    ex_keys = [
        min(q, j) * n + max(q, j)
        for q, w in zip(rows, want, strict=True)
        for j in w
        if x[q] @ x[j] >= threshold
    ]
    graph_keys = pairs["a"].to_numpy() * n + pairs["b"].to_numpy()
    return float(np.isin(np.array(ex_keys, np.int64), graph_keys).mean()) if ex_keys else None


def _start_row(n: int, method: str, k: int, threshold: float) -> tuple[dict[str, Any], np.ndarray]:
    """The facts every measurement records first (settings, date, load, threads), and the first n vectors."""
    import faiss

    _faiss_threads()
    row: dict[str, Any] = {
        "n": n,
        "method": method,
        "k": k,
        "threshold": threshold,
        "date": _now(),
        "load_average_at_start": _load_avg(),
        "niceness": os.nice(0),
        "faiss_threads": faiss.omp_get_max_threads(),
        "vectors_id": _vectors_meta()["id"],
    }
    x = load_rows(n)
    row["vectors_mb"] = round(x.nbytes / 2**20, 1)
    return row, x


def dask_child(n: int, params: dict[str, Any], k: int, threshold: float, sample: int, workers: int) -> dict:
    """The Dask flow's neighbour stage over the first ``n`` vectors, in this (fresh) process: the index is
    built here (as the flow's ``index`` stage builds it), then ``flows.dedup_distributed.dask_call`` runs
    ``nlsim.dedup.stages.neighbors`` with its search sharded over a local Dask cluster of ``workers``
    processes x 1 thread (the flow's defaults), through Prefect's ``DaskTaskRunner``."""
    import resource
    import tempfile

    import pandas as pd
    from prefect.server.api.server import SubprocessASGIServer

    from flows.dedup_distributed import DaskOptions, dask_call
    from nlsim.dedup import stages
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.window import Window
    from nlsim.search.index import build_index

    row, x = _start_row(n, "ivf", k, threshold)
    row["runner"] = f"dask, {workers} workers x 1 thread"
    c, t = time.process_time(), time.perf_counter()
    index = build_index(x, kind="ivf", use_gpu=False, **params)
    row["build_s"], row["build_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    row["what"] = index.describe()
    row["params"] = dict(index.params)
    row["peak_rss_build_mb"] = round(peak_rss_mb(), 1)
    window = Window(
        items=pd.DataFrame({"id": np.arange(n).astype(str)}),
        n_base=0,
        embed_rows=np.arange(n),
        query_rows=np.arange(n),
        today_ids=[],
        embeddings=x,
        index=index,
    )
    # one Prefect API for this process and the Dask workers it starts (each would start its own otherwise)
    server = SubprocessASGIServer()
    server.start()
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = DedupConfig.of(corpus="synthetic", out=tmp, k=k, threshold=threshold, progress=False)
            call = dask_call(DaskOptions(n_workers=workers, threads_per_worker=1))
            t = time.perf_counter()
            pairs = call("neighbors", stages.neighbors, window, config.search, threshold)
            row["graph_s"] = time.perf_counter() - t
    finally:
        server.stop()
    row["total_s"] = row["build_s"] + row["graph_s"]
    row["pairs"] = len(pairs)
    row["shards"] = -(-n // index.batch_size(2000))
    row["peak_rss_main_mb"] = round(peak_rss_mb(), 1)
    row["peak_rss_worker_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    exact = np.load(_exact_path(n, sample, k))
    rows, want = exact["rows"], _sets(exact["rows"], exact["nn"], k)
    _, got = index.search(x[rows], k + 1)
    row["recall"] = _recall(_sets(rows, got, k), want)
    row["sample"] = len(rows)
    row["pair_recall"] = _pair_recall(x, rows, want, pairs, threshold)
    return row


def cmd_dask(args: argparse.Namespace) -> int:
    ensure_exact(args.n, args)
    params = {k: v for k, v in {"nlist": args.nlist, "nprobe": args.nprobe}.items() if v is not None}
    print(f"Dask flow's neighbour stage at n={args.n:,}, {args.workers} workers ...", file=sys.stderr)
    cmd = _child_args("_dask", args.n, params, args) + ["--workers", str(args.workers)]
    row = run_child(cmd, timeout=args.timeout)
    row.pop("wall_s", None)
    data = _read_results()
    data.setdefault("dask", {})[str(args.n)] = row
    _write_results(data)
    print(json.dumps({k: row[k] for k in ("what", "build_s", "graph_s", "total_s", "recall", "pair_recall")}))
    return 0


def measure_child(
    n: int,
    method: str,
    params: dict[str, Any],
    k: int,
    threshold: float,
    sample: int,
    grid: list[int],
    graph: bool,
) -> dict[str, Any]:
    """One measurement in this (fresh) process: build, graph, recall; ``grid``: search settings (nprobe or
    efSearch) whose sample recall and per-query time are measured on the same index."""

    from nlsim.search.index import build_index, default_nlist, default_nprobe
    from nlsim.search.neighbors import knn_graph

    row, x = _start_row(n, method, k, threshold)
    build_args = dict(params)
    if method == "ivf":  # record what nlsim's defaults resolve to when not given
        nl = int(build_args.get("nlist") or default_nlist(n))
        row["nlsim_default"] = {"nlist": default_nlist(n), "nprobe": default_nprobe(default_nlist(n))}
        row["nlist"], row["nprobe"] = nl, int(build_args.get("nprobe") or default_nprobe(nl))
    c, t = time.process_time(), time.perf_counter()
    index = build_index(x, kind=method, use_gpu=False, **build_args)
    row["build_s"], row["build_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    row["what"] = index.describe()
    row["params"] = dict(index.params)
    exact = np.load(_exact_path(n, sample, k))
    rows, want = exact["rows"], _sets(exact["rows"], exact["nn"], k)
    pairs = None
    if graph:
        c, t = time.process_time(), time.perf_counter()
        pairs = knn_graph(index, x, k=k, threshold=threshold, progress=False)
        row["graph_s"], row["graph_cpu_s"] = time.perf_counter() - t, time.process_time() - c
        row["total_s"] = row["build_s"] + row["graph_s"]
        row["total_cpu_s"] = row["build_cpu_s"] + row["graph_cpu_s"]
        row["pairs"] = len(pairs)
        row["peak_rss_graph_mb"] = round(peak_rss_mb(), 1)
    _, got = index.search(x[rows], k + 1)
    row["recall"] = _recall(_sets(rows, got, k), want)
    row["sample"] = len(rows)
    if pairs is not None:
        row["pair_recall"] = _pair_recall(x, rows, want, pairs, threshold)
    if grid:
        curve = []
        for v in grid:
            if method == "ivf":
                if v > index.params["nlist"]:
                    continue
                index.set_search_params(nprobe=v)
            elif method == "hnsw":
                index.set_search_params(ef_search=v)
            t = time.perf_counter()
            _, got = index.search(x[rows], k + 1)
            ms = 1000 * (time.perf_counter() - t) / len(rows)
            curve.append({"search": v, "recall": _recall(_sets(rows, got, k), want), "ms_per_query": ms})
        row["grid"] = curve
    row["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return row


def _params(args: argparse.Namespace) -> dict[str, Any]:
    if args.method == "ivf":
        p = {"nlist": args.nlist, "nprobe": args.nprobe, "ivf_search": args.ivf_search}
    elif args.method == "hnsw":
        p = {"hnsw_m": args.hnsw_m, "ef_search": args.ef_search, "ef_construction": args.ef_construction}
    else:
        p = {}
    return {k: v for k, v in p.items() if v is not None}


def ensure_exact(n: int, args: argparse.Namespace) -> None:
    """The exact neighbours of the sample at ``n`` (own process, cached), which recall is measured against."""
    ex = run_child(
        [str(Path(__file__)), "_exact", "--n", str(n), "--sample", str(args.sample), "--k", str(args.k)],
        timeout=args.timeout,
    )
    if "computed" in ex:
        print(f"exact neighbours of {args.sample:,} rows at n={n:,}: {ex['seconds']} s", file=sys.stderr)


def _child_args(sub: str, n: int, params: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """Arguments of a measuring child process (``_one`` or ``_dask``)."""
    return [
        str(Path(__file__)),
        sub,
        "--n",
        str(n),
        "--params",
        json.dumps(params),
        "--k",
        str(args.k),
        "--threshold",
        str(args.threshold),
        "--sample",
        str(args.sample),
    ]


def run_measure(
    n: int,
    method: str,
    params: dict[str, Any],
    args: argparse.Namespace,
    grid: list[int] | None = None,
    graph: bool = True,
) -> dict[str, Any]:
    """Exact neighbours (own process, cached), then the measurement (own process)."""
    ensure_exact(n, args)
    cmd = _child_args("_one", n, params, args) + ["--method", method]
    if grid:
        cmd += ["--grid", ",".join(map(str, grid))]
    if not graph:
        cmd += ["--no-graph"]
    print(
        f"measuring {method} {params} at n={n:,}{' (build + grid only)' if not graph else ''} ...",
        file=sys.stderr,
        flush=True,
    )
    row = run_child(cmd, timeout=args.timeout)
    row["machine"] = machine()
    brief = {
        k: row.get(k)
        for k in ("what", "build_s", "graph_s", "total_s", "peak_rss_mb", "recall", "pair_recall")
    }
    print(json.dumps(brief), file=sys.stderr, flush=True)
    return row


def _key(row: dict[str, Any]) -> str:
    return f"{row['n']}|{row['method']}|{json.dumps(row.get('params', {}), sort_keys=True)}"


def _store_runs(data: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    runs = {_key(r): r for r in data.get("runs", [])}
    for r in rows:
        if "graph_s" in r:
            runs[_key(r)] = r
    data["runs"] = sorted(runs.values(), key=lambda r: (r["n"], r["method"], r.get("total_s", 0)))


def cmd_graph(args: argparse.Namespace) -> int:
    data = _read_results()
    data.setdefault("machine_record", machine_record())
    if not args.sweep:
        row = run_measure(args.n, args.method, _params(args), args)
        _store_runs(data, [row])
        _write_results(data)
        return 0
    if args.method == "flat":
        sys.exit("--sweep is for the approximate indexes (ivf, hnsw)")
    from nlsim.search.index import default_nlist, default_nprobe

    started, where = _now(), machine()
    if args.method == "ivf":
        base = default_nlist(args.n)
        builds = [int(v) for v in args.nlists.split(",")] if args.nlists else [base // 2, base, base * 2]
        builds = sorted({b for b in builds if 1 <= b <= args.n // 39})
        grid = [int(v) for v in args.nprobes.split(",")]
        build_params = [{"nlist": b} for b in builds]
    else:
        grid = [int(v) for v in args.ef_searches.split(",")]
        build_params = [
            {"hnsw_m": int(m), "ef_construction": int(e)}
            for m in args.ms.split(",")
            for e in args.ef_constructions.split(",")
        ]
    probes = []
    for bp in build_params:
        r = run_measure(args.n, args.method, bp, args, grid=grid, graph=False)
        probes.append(r)
    cands = []
    for r in probes:
        ok = [g for g in r["grid"] if g["recall"] >= args.target]
        for g in r["grid"]:
            g["est_total_s"] = r["build_s"] + g["ms_per_query"] * args.n / 1000
        if ok:
            g = min(ok, key=lambda g: g["est_total_s"])
            p = dict(r["params"])
            p = (
                {"nlist": p["nlist"], "nprobe": g["search"]}
                if args.method == "ivf"
                else {"hnsw_m": p["M"], "ef_construction": p["ef_construction"], "ef_search": g["search"]}
            )
            cands.append({"params": p, "est_total_s": g["est_total_s"], "sample_recall": g["recall"]})
    cands.sort(key=lambda c: c["est_total_s"])
    confirmed = [run_measure(args.n, args.method, c["params"], args) for c in cands[: args.confirm]]
    good = [r for r in confirmed if r["recall"] >= args.target]
    chosen = min(good, key=lambda r: r["total_s"]) if good else None
    sweep = {
        "date": started,
        "machine": where,
        "command": " ".join(sys.argv),
        "n": args.n,
        "method": args.method,
        "target_recall": args.target,
        "builds": [
            {
                k: r.get(k)
                for k in (
                    "what",
                    "params",
                    "build_s",
                    "build_cpu_s",
                    "peak_rss_mb",
                    "grid",
                    "load_average_at_start",
                )
            }
            for r in probes
        ],
        "candidates": cands,
        "confirmed": [_key(r) for r in confirmed],
        "chosen": None
        if chosen is None
        else {
            "params": {
                k: v
                for k, v in chosen["params"].items()
                if k in ("nlist", "nprobe", "M", "ef_search", "ef_construction")
            },
            "what": chosen["what"],
            "total_s": chosen["total_s"],
            "recall": chosen["recall"],
            "peak_rss_graph_mb": chosen["peak_rss_graph_mb"],
        },
    }
    if args.method == "ivf":
        dl = default_nlist(args.n)
        dp = default_nprobe(dl)
        d = [g for r in probes if r["params"]["nlist"] == dl for g in r["grid"] if g["search"] == dp]
        sweep["nlsim_default"] = {"nlist": dl, "nprobe": dp, "sample_recall": d[0]["recall"] if d else None}
    data.setdefault("sweeps", {})[f"{args.method}@{args.n}"] = sweep
    _store_runs(data, confirmed)
    _write_results(data)
    if chosen is None:
        print(f"no setting reached recall {args.target} (widen --nprobes/--ef-searches)", file=sys.stderr)
    else:
        print(json.dumps(sweep["chosen"]), file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------------------- curve


def _fit_power(n: list[int], y: list[float]) -> float:
    return float(np.polyfit(np.log(n), np.log(y), 1)[0]) if len(n) >= 2 else float("nan")


def cmd_curve(args: argparse.Namespace) -> int:
    from nlsim.search.index import default_nlist

    data = _read_results()
    sizes = [int(s) for s in args.sizes.split(",")]
    params = _params(args)
    factor = args.nlist_factor
    if args.from_sweep:
        sw = [s for s in data.get("sweeps", {}).values() if s["method"] == args.method and s.get("chosen")]
        if not sw:
            sys.exit(f"no {args.method} sweep with a chosen setting in {OUT_JSON}: run `graph --sweep` first")
        s = max(sw, key=lambda s: (s["n"], s["date"]))
        ch = s["chosen"]["params"]
        if args.method == "ivf":
            params = {"nprobe": ch["nprobe"]}
            factor = ch["nlist"] / default_nlist(s["n"])
        else:
            params = {
                "hnsw_m": ch["M"],
                "ef_search": ch["ef_search"],
                "ef_construction": ch["ef_construction"],
            }
        print(f"setting from the sweep at n={s['n']:,}: {ch}", file=sys.stderr)
    rows = []
    for n in sizes:
        p = dict(params)
        if args.method == "ivf" and "nlist" not in p and factor:
            p["nlist"] = max(1, min(int(round(factor * default_nlist(n))), n // 39))
        rows.append(run_measure(n, args.method, p, args))
    ns = [r["n"] for r in rows]
    fit = {
        "time_exponent": round(_fit_power(ns, [r["total_s"] for r in rows]), 3),
        "build_exponent": round(_fit_power(ns, [r["build_s"] for r in rows]), 3),
        "graph_exponent": round(_fit_power(ns, [r["graph_s"] for r in rows]), 3),
        "rss_exponent": round(_fit_power(ns, [r["peak_rss_graph_mb"] for r in rows]), 3),
        "cpu_exponent": round(_fit_power(ns, [r["total_cpu_s"] for r in rows]), 3),
    }
    if len(ns) >= 2:
        slope, icpt = np.polyfit(ns, [r["peak_rss_graph_mb"] for r in rows], 1)
        fit["rss_mb_per_million"] = round(float(slope) * 1e6, 1)
        fit["rss_base_mb"] = round(float(icpt), 1)
        big = max(rows, key=lambda r: r["n"])
        if big["n"] < TARGETS["n"]:  # marked EXTRAPOLATED wherever shown
            ratio = TARGETS["n"] / big["n"]
            fit["extrapolated_to_1M"] = {
                "from_n": big["n"],
                "total_s": round(big["total_s"] * ratio ** fit["time_exponent"], 1),
                "total_cpu_s": round(big["total_cpu_s"] * ratio ** fit["cpu_exponent"], 1),
                "peak_rss_mb": round(fit["rss_base_mb"] + fit["rss_mb_per_million"], 1),
            }
    data.setdefault("curves", {})[args.method] = {
        "date": _now(),
        "machine": machine(),
        "command": " ".join(sys.argv),
        "method": args.method,
        "setting": params if not factor else {**params, "nlist_factor": round(factor, 3)},
        "rows": rows,
        "fit": fit,
        "plot": CURVE_PNG.name,
    }
    _store_runs(data, rows)
    _plot_curve(data["curves"], CURVE_PNG)
    _write_results(data)
    return 0


def _plot_curve(curves: dict[str, dict[str, Any]], path: Path) -> None:
    """Time and peak RSS against N, one line per method; dotted: the power-law fit extrapolated to 1M."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = {"ivf": "tab:blue", "hnsw": "tab:green", "flat": "tab:gray"}
    for pos, (method, cv) in enumerate(curves.items()):
        rows, fit, color = cv["rows"], cv["fit"], colors.get(method, "black")
        ns = np.array([r["n"] for r in rows], float)
        label = rows[-1]["what"].split(" on ")[0].replace("approximate ", "")
        a.loglog(ns, [r["total_s"] for r in rows], "o-", color=color, label=f"{label}: total")
        a.loglog(ns, [r["build_s"] for r in rows], "s--", color=color, alpha=0.5, ms=4, label="build")
        a.loglog(ns, [r["graph_s"] for r in rows], "^--", color=color, alpha=0.5, ms=4, label="graph search")
        for x, r in zip(ns, rows, strict=True):
            a.annotate(
                f"{r['recall']:.3f}",
                (x, r["total_s"]),
                textcoords="offset points",
                xytext=(5, 6 - 14 * pos),
                fontsize=7,
                color=color,
            )
        b.loglog(ns, [r["peak_rss_graph_mb"] for r in rows], "o-", color=color, label=label)
        ext = fit.get("extrapolated_to_1M")
        if ext:
            a.loglog([ns[-1], TARGETS["n"]], [rows[-1]["total_s"], ext["total_s"]], ":", color=color)
            a.annotate(
                f"N^{fit['time_exponent']:.2f}: ~{ext['total_s']:.0f} s (extrapolated)",
                (TARGETS["n"], ext["total_s"]),
                textcoords="offset points",
                xytext=(-150, 4),
                fontsize=7,
                color=color,
            )
            b.loglog(
                [ns[-1], TARGETS["n"]], [rows[-1]["peak_rss_graph_mb"], ext["peak_rss_mb"]], ":", color=color
            )
    ns_all = sorted({r["n"] for cv in curves.values() for r in cv["rows"]} | {TARGETS["n"]})
    b.loglog(ns_all, [n * DIM * 4 / 2**20 for n in ns_all], "k:", lw=0.8, label="the vectors alone")
    for ax, key, text in ((a, "total_s", "target 2 min at 1M"), (b, "peak_rss_mb", "target 6 GB")):
        ax.axhline(TARGETS[key], color="tab:red", lw=0.8, ls=":", label=text)
        ax.set_xlabel("vectors N")
        ax.legend(fontsize=7)
    a.set_ylabel("seconds (wall, 2 FAISS threads); labels: recall@10")
    b.set_ylabel("peak RSS, MB (the vectors included)")
    a.set_title("build + k=10 graph time", fontsize=10)
    b.set_title("peak RSS", fontsize=10)
    fig.suptitle(
        "near-duplicate graph on realistic synthetic e5 vectors: cost against N (dotted: extrapolated)"
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------- report


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return print_table(rows, cols)


def _difficulty_note(diff: dict[str, dict[str, Any]]) -> str:
    """One paragraph: is the synthetic set easier or harder than the real one for each index (equal size)."""
    real, syn = diff["real_10k"], next(v for k, v in diff.items() if k != "real_10k")
    parts = []
    for key, what in (
        ("ivf_recall_nprobe_16", f"IVF (nprobe 16 of {real['ivf_nlist']} lists)"),
        ("hnsw16_recall_ef_16", "HNSW (M 16, efSearch 16)"),
    ):
        d = syn[key] - real[key]
        verdict = "about as hard as" if abs(d) < 0.01 else "EASIER than" if d > 0 else "harder than"
        parts.append(
            f"for {what} the synthetic vectors are {verdict} the real ones "
            f"(recall@10 {syn[key]:.3f} vs {real[key]:.3f})"
        )
    return (
        "Caveat: at equal size, "
        + "; ".join(parts)
        + f". Share of 1-NN pairs split across IVF lists: {syn['nn1_in_other_list']:.2f} synthetic vs "
        f"{real['nn1_in_other_list']:.2f} real; hubness (skew of the 10-NN in-degree) "
        f"{syn['hubness_skew']:.1f} vs {real['hubness_skew']:.1f}. Per-cluster Gaussians keep neighbours "
        "inside their cluster more often than real titles do, so IVF recall measured on them is optimistic "
        "(a real corpus of the same size would need more probes); HNSW recall is representative."
    )


def _build_label(p: dict[str, Any]) -> str:
    if "nlist" in p:
        return f"IVF, nlist {p['nlist']}"
    if "M" in p:
        return f"HNSW, M {p['M']}, efConstruction {p['ef_construction']}"
    return "flat"


def render_md(data: dict[str, Any]) -> str:
    """``realistic.md`` from ``realistic.json``."""
    out = ["# Near-duplicate graph on realistic synthetic vectors", ""]
    out.append(
        "Written by `benchmarks/bench_realistic.py` (method in its docstring). Vectors: distinct draws from "
        "per-cluster Gaussians fitted to the 10,000 real multilingual-e5-small vectors of THUCNews titles, "
        "not noisy copies of them."
    )
    mk = data.get("make")
    if mk:
        st = mk["settings"]
        out += [
            "",
            "## Vectors",
            "",
            f"{mk['rows']:,} vectors, made {mk['date']} ({mk['machine']}; niceness {mk['niceness']}). Model: "
            f"{mk['model']['clusters']} clusters (sizes {mk['model']['cluster_size_min_median_max']}), "
            f"covariance shrunk with {st['shrink']} pseudo-points; spread alpha {st['alpha']}, "
            f"tau {st['tau']}. "
            f"Two-sample KS statistic, real 10k vs the first 10k synthetic: nearest-neighbour cosine "
            f"**{mk['ks_equal_size']['nn1']}**, 10th-neighbour cosine **{mk['ks_equal_size']['nn10']}**. "
            f"Copies: max NN cosine {mk['checks']} (all below {COPY_COS}). Plot: `{mk['plot']}`.",
            "",
        ]
        rows = []
        for name, d in mk["distributions"].items():
            for which, q in d.items():
                rows.append({"vectors": name, "neighbour": which, **q})
        cols = ["vectors", "neighbour", *[f"q{int(q * 100):02d}" for q in QUANTILES], "mean", "share_ge_0.9"]
        out.append(_table(rows, cols))
        diff = mk.get("ann_difficulty_equal_size")
        if diff:
            out += ["", "ANN difficulty at equal size (all 10,000 rows as queries, nlsim's indexes):", ""]
            out.append(
                _table(
                    [{"vectors": k, **v} for k, v in diff.items()], ["vectors", *next(iter(diff.values()))]
                )
            )
            out += ["", _difficulty_note(diff)]
        out += ["", "Calibration (alpha matched to the real median NN cosine per tau):", ""]
        out.append(
            _table(
                mk["calibration"]["trials"], ["tau", "alpha", "median_nn1", "ks_nn1", "ks_nn10", "ks_mean"]
            )
        )
    dask = data.get("dask", {})
    if dask:
        out += [
            "",
            "## The Dask flow's neighbour stage",
            "",
            "`bench_realistic.py dask --n N --workers 2`: the index built in the main process, then "
            "`flows.dedup_distributed.dask_call` runs the `neighbors` stage with its search sharded over a "
            "local Dask cluster (workers x 1 thread) through Prefect's `DaskTaskRunner`; `graph_s` includes "
            "starting the cluster and writing the index and queries for the workers. Peak RSS: the main "
            "process, and the largest child (a worker).",
            "",
        ]
        view = [{**r, "load": r.get("load_average_at_start")} for r in dask.values()]
        out.append(
            _table(
                view,
                [
                    "n",
                    "what",
                    "runner",
                    "shards",
                    "build_s",
                    "graph_s",
                    "total_s",
                    "peak_rss_main_mb",
                    "peak_rss_worker_mb",
                    "recall",
                    "pair_recall",
                    "pairs",
                    "load",
                    "date",
                ],
            )
        )
    runs = data.get("runs", [])
    if runs:
        out += [
            "",
            "## Graph runs",
            "",
            "Wall seconds with 2 FAISS threads; `*_cpu_s` = CPU seconds of the process "
            "(under load, wall > cpu/2). Peak RSS includes the N vectors (`vectors_mb`).",
        ]
        out.append("")
        view = [{**r, "load": r.get("load_average_at_start"), "nice": r.get("niceness")} for r in runs]
        out.append(
            _table(
                view,
                [
                    "n",
                    "what",
                    "build_s",
                    "graph_s",
                    "total_s",
                    "build_cpu_s",
                    "graph_cpu_s",
                    "peak_rss_graph_mb",
                    "vectors_mb",
                    "recall",
                    "pair_recall",
                    "pairs",
                    "load",
                    "nice",
                    "date",
                ],
            )
        )
    for name, sw in data.get("sweeps", {}).items():
        out += [
            "",
            f"## Sweep {name} (target recall@10 >= {sw['target_recall']})",
            "",
            f"{sw['date']}, {sw['machine']}.",
            "",
        ]
        rows = []
        for b in sw["builds"]:
            for g in b["grid"]:
                rows.append(
                    {
                        "index": _build_label(b["params"]),
                        "build_s": b["build_s"],
                        "search": g["search"],
                        "recall": g["recall"],
                        "ms_per_query": g["ms_per_query"],
                        "est_total_s": g["est_total_s"],
                    }
                )
        out.append(_table(rows, ["index", "build_s", "search", "recall", "ms_per_query", "est_total_s"]))
        out.append("")
        out.append("`search` = nprobe (IVF) or efSearch (HNSW); `est_total_s` = build + ms/query x N.")
        if "nlsim_default" in sw:
            d = sw["nlsim_default"]
            out.append(
                "nlsim's IVF default at this N (`dedup --index ivf`, or `auto` above 100,000): "
                f"nlist {d['nlist']}, "
                f"nprobe {d['nprobe']}: sample recall@10 {d['sample_recall']}."
            )
        ch = sw.get("chosen")
        out.append(
            f"Chosen (fastest measured with recall >= target): {ch['what']}, total {ch['total_s']:.1f} s, "
            f"recall {ch['recall']:.3f}."
            if ch
            else "No setting reached the target."
        )
    for cv in data.get("curves", {}).values():
        f = cv["fit"]
        out += [
            "",
            f"## Cost curve ({cv['method']}, {cv['setting']})",
            "",
            f"{cv['date']}, {cv['machine']}. Plot: `{cv['plot']}`.",
            "",
        ]
        out.append(
            _table(cv["rows"], ["n", "what", "build_s", "graph_s", "total_s", "peak_rss_graph_mb", "recall"])
        )
        sent = (
            f"Fitted on {len(cv['rows'])} sizes: total time grows as N^{f['time_exponent']} "
            f"(build N^{f['build_exponent']}, "
            f"graph search N^{f['graph_exponent']}); peak RSS as N^{f['rss_exponent']}"
        )
        if "rss_mb_per_million" in f:
            sent += (
                f", i.e. about {f['rss_mb_per_million']:,.0f} MB per million vectors "
                f"over a {f['rss_base_mb']:,.0f} MB base"
            )
        out += ["", sent + "."]
        ext = f.get("extrapolated_to_1M")
        if ext:
            out.append(
                f"EXTRAPOLATED (not measured) from {ext['from_n']:,} to 1,000,000 with these fits: "
                f"~{ext['total_s']:,.0f} s wall under the conditions of these runs, "
                f"~{ext.get('total_cpu_s', float('nan')):,.0f} CPU s (CPU time grows as "
                f"N^{f.get('cpu_exponent', float('nan'))}; on two otherwise idle cores wall is about half "
                f"the CPU time), ~{ext['peak_rss_mb']:,.0f} MB peak RSS, at the same setting (recall falls "
                "with N at a fixed nprobe or efSearch, so the setting that keeps 0.95 at 1M may cost more)."
            )
    at = [r for r in runs if r["n"] == TARGETS["n"] and r["method"] != "flat"]
    out += ["", "## Targets at 1M (ANN graph < 2 min on 2 cores, recall@10 >= 0.95, peak RSS < 6 GB)", ""]
    if not at:
        out.append("Not measured yet at 1,000,000.")
    for r in at:
        ok = [
            r["total_s"] < TARGETS["total_s"],
            r["recall"] >= TARGETS["recall"],
            r["peak_rss_graph_mb"] < TARGETS["peak_rss_mb"],
        ]
        out.append(
            f"- {r['what']}: {r['total_s']:.0f} s ({'met' if ok[0] else 'MISSED'}), recall {r['recall']:.3f} "
            f"({'met' if ok[1] else 'MISSED'}), peak RSS {r['peak_rss_graph_mb'] / 1024:.2f} GB "
            f"({'met' if ok[2] else 'MISSED'}); load {r.get('load_average_at_start')}, "
            f"niceness {r.get('niceness')}."
        )
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------- main


def _add_measure_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--method", choices=["ivf", "hnsw", "flat"], default="ivf", help="the FAISS index (default: ivf)"
    )
    p.add_argument("--k", type=int, default=10, help="neighbours searched per vector (default: 10)")
    p.add_argument(
        "--threshold", type=float, default=0.9, help="cosine at which a pair is an edge (default: 0.9)"
    )
    p.add_argument(
        "--sample", type=int, default=2000, help="rows whose recall is measured (>= 1000; default: 2000)"
    )
    p.add_argument("--nlist", type=int, default=None, help="IVF lists (default: nlsim's default_nlist(N))")
    p.add_argument(
        "--nprobe", type=int, default=None, help="IVF lists probed (default: nlsim's default_nprobe)"
    )
    p.add_argument(
        "--ivf-search",
        choices=["batched", "queries"],
        default=None,
        help="IVF search: list-by-list matrix products or FAISS's per-query search (default: nlsim's, "
        "batched)",
    )
    p.add_argument("--hnsw-m", type=int, default=None, help="HNSW M (default: nlsim's, 32)")
    p.add_argument("--ef-search", type=int, default=None, help="HNSW efSearch (default: nlsim's, 64)")
    p.add_argument(
        "--ef-construction", type=int, default=None, help="HNSW efConstruction (default: nlsim's, 40)"
    )
    p.add_argument(
        "--timeout", type=float, default=4 * 3600, help="seconds per child process (default: 14400)"
    )


def check_lists(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The comma lists and sizes of the public commands, checked before any work: a bad one is argparse's
    one-line error naming the option (exit 2), not a traceback after the model was fitted."""
    if args.cmd in ("make", "graph", "dask") and args.n < 1:
        ap.error(f"argument --n: {args.n} is out of range (at least 1)")
    if args.cmd == "make":
        numbers(ap, "--taus", args.taus, float, 0)
    if args.cmd == "curve":
        numbers(ap, "--sizes", args.sizes, int, 1)
    if args.cmd == "graph":
        numbers(ap, "--nlists", args.nlists or "", int, 1)
        for option in ("--nprobes", "--ms", "--ef-constructions", "--ef-searches"):
            numbers(ap, option, getattr(args, option[2:].replace("-", "_")), int, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # _dask, _exact and _one are the child processes' own commands: left out of the usage and the list
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="{make,graph,curve,dask}")
    p = sub.add_parser(
        "make",
        help="fit the model, write N synthetic vectors and the NN-cosine comparison",
        description="Fit the model of the real e5 vectors, write N synthetic vectors and compare their "
        "nearest-neighbour cosines with the real ones'.",
    )
    p.add_argument("--n", type=int, default=1_000_000, help="synthetic vectors written (default: 1000000)")
    p.add_argument(
        "--clusters", type=int, default=256, help="spherical k-means clusters of the model (default: 256)"
    )
    p.add_argument(
        "--shrink",
        type=float,
        default=10.0,
        help="pseudo-points of pooled covariance per cluster (default: 10)",
    )
    p.add_argument(
        "--taus",
        default="0,0.05,0.1,0.15,0.2",
        help="log-normal spread values tried (default: 0,0.05,0.1,0.15,0.2)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the model and the draw (default: 0)")
    p.add_argument(
        "--copy-sample",
        type=int,
        default=2000,
        help="rows checked for copies against all N (default: 2000)",
    )
    p.add_argument("--no-replicated", action="store_true", help="skip the replicated-vectors comparison")
    p = sub.add_parser(
        "graph",
        help="the k-NN graph over the first N vectors: time, RSS, recall",
        description="Build the near-duplicate graph over the first N vectors as nlsim dedup builds it: time, "
        "peak RSS, recall.",
    )
    p.add_argument("--n", type=int, required=True, help="the first N vectors of the file")
    _add_measure_args(p)
    p.add_argument(
        "--sweep", action="store_true", help="try several settings, keep the fastest reaching --target"
    )
    p.add_argument(
        "--target", type=float, default=0.95, help="with --sweep: the recall@10 to reach (default: 0.95)"
    )
    p.add_argument("--nlists", default=None, help="IVF sweep lists (default: nlsim's default x 1/2, 1, 2)")
    p.add_argument(
        "--nprobes",
        default="1,2,4,8,16,32,64,128",
        help="IVF sweep lists probed (default: 1,2,4,8,16,32,64,128)",
    )
    p.add_argument("--ms", default="16,32", help="HNSW sweep M values (default: 16,32)")
    p.add_argument("--ef-constructions", default="40", help="HNSW sweep efConstruction values (default: 40)")
    p.add_argument(
        "--ef-searches",
        default="16,32,64,128,256",
        help="HNSW sweep efSearch values (default: 16,32,64,128,256)",
    )
    p.add_argument(
        "--confirm", type=int, default=2, help="best estimated candidates measured in full (default: 2)"
    )
    p = sub.add_parser(
        "curve",
        help="time and peak RSS against N for one setting",
        description="Time and peak RSS of the graph against N for one setting, with the fitted exponent.",
    )
    p.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="the sizes N measured, comma-separated (default: 10000,100000,1000000)",
    )
    _add_measure_args(p)
    p.add_argument(
        "--nlist-factor",
        type=float,
        default=None,
        help="IVF lists = factor x nlsim's default per N (default: --nlist, else nlsim's default)",
    )
    p.add_argument(
        "--from-sweep", action="store_true", help="the setting chosen by the last sweep of --method"
    )
    p = sub.add_parser(
        "dask",
        help="the Dask flow's neighbour stage over the first N vectors, local workers",
        description="Run the Dask flow's neighbour stage over the first N vectors on a local cluster: time, "
        "pairs, recall, peak RSS.",
    )
    p.add_argument("--n", type=int, required=True, help="the first N vectors of the file")
    p.add_argument("--workers", type=int, default=2, help="local Dask workers, 1 thread each (default: 2)")
    p.add_argument("--nlist", type=int, default=None, help="IVF lists (default: nlsim's default_nlist(N))")
    p.add_argument("--nprobe", type=int, default=None, help="IVF lists probed (default: nlsim's)")
    p.add_argument("--k", type=int, default=10, help="neighbours searched per vector (default: 10)")
    p.add_argument(
        "--threshold", type=float, default=0.9, help="cosine at which a pair is an edge (default: 0.9)"
    )
    p.add_argument("--sample", type=int, default=2000, help="rows whose recall is measured (default: 2000)")
    p.add_argument(
        "--timeout", type=float, default=4 * 3600, help="seconds of the child process (default: 14400)"
    )
    child = "a child process of this benchmark (not run by hand)"
    p = sub.add_parser("_dask", description=f"The dask command's measurement: {child}.")
    p.add_argument("--n", type=int, required=True, help="the first N vectors")
    p.add_argument("--params", default="{}", help="the index's settings, JSON (default: {})")
    p.add_argument("--k", type=int, default=10, help="neighbours per vector (default: 10)")
    p.add_argument("--threshold", type=float, default=0.9, help="edge cosine (default: 0.9)")
    p.add_argument("--sample", type=int, default=2000, help="rows whose recall is measured (default: 2000)")
    p.add_argument("--workers", type=int, default=2, help="local Dask workers (default: 2)")
    p = sub.add_parser("_exact", description=f"Exact neighbours of the recall sample: {child}.")
    p.add_argument("--n", type=int, required=True, help="the first N vectors")
    p.add_argument("--sample", type=int, default=2000, help="rows whose neighbours are found (default: 2000)")
    p.add_argument("--k", type=int, default=10, help="neighbours per row (default: 10)")
    p = sub.add_parser("_one", description=f"One measurement of graph or curve: {child}.")
    p.add_argument("--n", type=int, required=True, help="the first N vectors")
    _add_measure_args(p)
    p.add_argument("--params", default="{}", help="the index's settings, JSON (default: {})")
    p.add_argument(
        "--grid", default="", help="search settings measured on one build, comma-separated (default: none)"
    )
    p.add_argument("--no-graph", action="store_true", help="recall and search time only, no graph")
    args = ap.parse_args(argv)
    if args.cmd in ("graph", "curve") and args.sample < 1000:
        ap.error("--sample: recall needs at least 1,000 query rows")
    check_lists(ap, args)
    if args.cmd == "make":
        return cmd_make(args)
    if args.cmd == "graph":
        return cmd_graph(args)
    if args.cmd == "curve":
        return cmd_curve(args)
    if args.cmd == "dask":
        return cmd_dask(args)
    if args.cmd == "_dask":
        row = dask_child(args.n, json.loads(args.params), args.k, args.threshold, args.sample, args.workers)
        print(json.dumps(row))
        return 0
    if args.cmd == "_exact":
        print(json.dumps(exact_child(args.n, args.sample, args.k)))
        return 0
    grid = [int(v) for v in args.grid.split(",") if v]
    row = measure_child(
        args.n,
        args.method,
        json.loads(args.params),
        args.k,
        args.threshold,
        args.sample,
        grid,
        not args.no_graph,
    )
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
