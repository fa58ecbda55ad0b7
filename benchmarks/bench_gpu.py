"""GPU figures: embedding against sentence-transformers on the same GPU, and FAISS on the GPU at 1M vectors.

Run by ``scripts/gpu_check.sh`` on a machine whose torch sees a CUDA GPU; each subcommand prints a table
and writes a JSON record (``--out``) that names the CPU and the GPU. Without a CUDA GPU, ``embed`` says that
it needs one and exits 2 (``--device cpu`` times both on the CPU).

- ``embed``: N distinct texts (the bundled THUCNews titles, copies numbered to make them distinct) embedded
  by nlsim (``load_encoder(..., device="cuda", precision=P)`` for each precision asked) and by
  sentence-transformers ``encode`` on the same weights and GPU (its default batch 32, and batch 256), in
  one process after a warm-up each: items/s and the lowest cosine of each to nlsim's fp32 vectors.
- ``search``: 1,000,000 vectors near the real e5 vectors of the titles; FAISS exact inner-product search
  (k = 10) on the GPU, when the installed FAISS build sees one (``faiss.get_num_gpus()``), and nlsim's own
  index built with ``use_gpu=True``; recall@10 against exact search on the CPU for a sample of queries.

Usage::

    python benchmarks/bench_gpu.py embed --n 50000 --out gpu_embed.json
    python benchmarks/bench_gpu.py search --n 1000000 --out gpu_search.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import machine, needs_bench_extra, positive  # noqa: E402

from nlsim.io.atomic import atomic_write_text  # noqa: E402

MODEL = "multilingual-e5-small"


def distinct_titles(n: int) -> list[str]:
    """``n`` distinct texts: the bundled titles, then numbered copies of them."""
    titles = pd.read_parquet(ROOT / "data" / "thucnews.parquet")["title"].astype(str).tolist()
    return [
        titles[i % len(titles)] + ("" if i < len(titles) else f"（{i // len(titles)}）") for i in range(n)
    ]


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _timed(fn: Any) -> tuple[Any, float]:
    _sync()
    t0 = time.perf_counter()
    out = fn()
    _sync()
    return out, time.perf_counter() - t0


def gpu_name() -> str:
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU"
    return f"{torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA {torch.version.cuda})"


def no_gpu(device: str) -> str | None:
    """Why ``embed`` cannot run on ``device`` here: it names CUDA and torch sees no CUDA GPU (``None``:
    it can).

    Example:
        >>> no_gpu("cpu") is None
        True
    """
    from nlsim.inference.gpu import cuda_missing

    why = cuda_missing(device)
    if why is None:
        return None
    return (
        f"embed needs a CUDA GPU, and {why}: run it on a machine with one, or with --device cpu to time "
        "both on the CPU"
    )


def embed(args: argparse.Namespace) -> dict[str, Any]:
    from nlsim.encoders import load_encoder
    from nlsim.encoders.registry import registry_folder

    texts = distinct_titles(args.n)
    rows: list[dict[str, Any]] = []
    ref: np.ndarray | None = None
    for precision in args.precisions.split(","):
        try:
            enc = load_encoder(MODEL, device=args.device, precision=precision)
            enc.encode(texts[:1000], batch_size=args.batch_size, progress=False)  # warm-up
            vecs, secs = _timed(lambda enc=enc: enc.encode(texts, batch_size=args.batch_size, progress=False))
        except Exception as exc:  # a precision this build cannot run is a row, not a crash
            rows.append({"run": f"nlsim {precision}", "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        if ref is None:
            ref = vecs
        rows.append(
            {
                "run": f"nlsim {precision}",
                "path": str(getattr(enc, "choice", "")),
                "items_per_s": round(len(texts) / secs, 1),
                "seconds": round(secs, 2),
                "min_cos_to_fp32": round(float((vecs * ref).sum(axis=1).min()), 6),
            }
        )
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(registry_folder(MODEL)), device=args.device)
    prefixed = ["query: " + t for t in texts]
    for bs in (32, 256):
        st.encode(prefixed[:1000], batch_size=bs, normalize_embeddings=True)
        vecs, secs = _timed(lambda bs=bs: st.encode(prefixed, batch_size=bs, normalize_embeddings=True))
        rows.append(
            {
                "run": f"sentence-transformers batch {bs}",
                "items_per_s": round(len(texts) / secs, 1),
                "seconds": round(secs, 2),
                "min_cos_to_fp32": None if ref is None else round(float((vecs * ref).sum(axis=1).min()), 6),
            }
        )
    return {
        "what": "embedding",
        "gpu": gpu_name(),
        "n": len(texts),
        "batch_size": args.batch_size,
        "rows": rows,
    }


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors near the real e5 vectors of the titles (each a title's vector plus small noise)."""
    from nlsim.encoders import load_encoder

    base = load_encoder(MODEL).encode(distinct_titles(10_000), batch_size=256, progress=False)
    rng = np.random.default_rng(seed)
    x = base[rng.integers(0, len(base), n)] + rng.normal(0, 0.02, (n, base.shape[1])).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def search(args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    x = _vectors(args.n)
    k = args.k
    sample = np.random.default_rng(1).choice(len(x), args.sample, replace=False)
    cpu = faiss.IndexFlatIP(x.shape[1])
    cpu.add(x)
    _, exact = cpu.search(x[sample], k + 1)
    gpus = faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else 0
    record: dict[str, Any] = {"what": "search", "gpu": gpu_name(), "n": len(x), "k": k, "faiss_gpus": gpus}
    record["faiss"] = (
        f"{faiss.__version__} ({'GPU build' if hasattr(faiss, 'StandardGpuResources') else 'CPU'})"
    )
    rows: list[dict[str, Any]] = []
    if gpus:
        res = faiss.StandardGpuResources()
        index, build = _timed(lambda: faiss.index_cpu_to_gpu(res, 0, cpu))
        (_, hits), secs = _timed(lambda: index.search(x, k + 1))
        rows.append(_search_row("FAISS GpuIndexFlatIP, all queries", build, secs, hits[sample], exact, k))
        from nlsim.search.index import build_index

        for kind in ("flat", "ivf"):
            idx, build = _timed(lambda kind=kind: build_index(x, kind=kind, use_gpu=True))
            (_, hits), secs = _timed(lambda idx=idx: idx.search(x, k + 1))
            rows.append(
                _search_row(f"nlsim build_index({kind!r}, use_gpu=True)", build, secs, hits[sample], exact, k)
            )
    else:
        record["note"] = "the installed FAISS build sees no GPU: nothing to measure on the GPU"
    record["rows"] = rows
    return record


def _search_row(
    name: str, build: float, secs: float, hits: np.ndarray, exact: np.ndarray, k: int
) -> dict[str, Any]:
    recall = np.mean(
        [len(set(h[: k + 1]) & set(e[: k + 1])) / (k + 1) for h, e in zip(hits, exact, strict=True)]
    )
    return {
        "run": name,
        "build_s": round(build, 2),
        "search_s": round(secs, 2),
        "recall_at_k": round(float(recall), 4),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser(
        "embed",
        help="nlsim's encoder against sentence-transformers on the GPU (needs sentence-transformers)",
        description="Embed N distinct titles with nlsim at each precision and with sentence-transformers, on "
        "the same GPU: items/s and the lowest cosine to nlsim's fp32 vectors.",
    )
    e.add_argument("--n", type=positive(), default=50_000, help="texts embedded (default: 50000)")
    e.add_argument(
        "--batch-size", type=positive(), default=256, help="nlsim's texts per batch (default: 256)"
    )
    e.add_argument(
        "--precisions",
        default="fp32,auto,bf16,fp16",
        help="nlsim's precisions timed, comma-separated (default: fp32,auto,bf16,fp16)",
    )
    e.add_argument("--device", default="cuda", help="the torch device of both (default: cuda)")
    s = sub.add_parser(
        "search",
        help="FAISS exact search on the GPU at 1M vectors, and its recall",
        description="Search N vectors near the real e5 vectors with FAISS on the GPU and with nlsim's own "
        "index: time, and recall@k against exact search on the CPU.",
    )
    s.add_argument("--n", type=positive(), default=1_000_000, help="vectors searched (default: 1000000)")
    s.add_argument("--k", type=positive(), default=10, help="neighbours searched per vector (default: 10)")
    s.add_argument(
        "--sample", type=positive(), default=2000, help="queries whose recall is measured (default: 2000)"
    )
    for p in (e, s):
        p.add_argument("--out", default=None, help="write the JSON record here too (default: printed only)")
    args = ap.parse_args(argv)
    if args.cmd == "embed":  # before nlsim's precisions are timed, not at sentence-transformers' turn
        needs_bench_extra(ap, "embed", ("sentence_transformers",))
        missing = no_gpu(args.device)
        if missing is not None:  # not "Torch not compiled with CUDA enabled" after nlsim's side of the run
            print(f"bench_gpu.py: error: {missing}", file=sys.stderr)
            sys.exit(2)
    host = machine()  # the CPU (and the GPU torch sees) and the load average before the work
    record = {"machine": host, **(embed(args) if args.cmd == "embed" else search(args))}
    print(json.dumps(record, ensure_ascii=False, indent=1))
    if args.out:
        atomic_write_text(Path(args.out), json.dumps(record, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
