"""Embed the 10,000 THUCNews titles with multilingual-e5-small once: the real vectors the scale benchmarks
replicate, and the measured encoder throughput the cost curve uses.

Writes ``benchmarks/results/cache/thucnews_e5.npy`` (15 MB, git-ignored) and
``benchmarks/results/thucnews_e5.json`` (model, fingerprint, throughput, peak RSS, the replication noise).
With ``--limit N`` below the corpus size it writes ``thucnews_e5_<N>.npy`` and ``thucnews_e5_<N>.json``
beside them instead, and with another ``--corpus``, ``--model`` or ``--convert``
``thucnews_e5-<what differs>.npy`` and ``.json``: a quick check never replaces the vectors and figures the
benchmarks use.

The texts are what the dedup pipeline embeds by default: ``data/thucnews.parquet`` titles converted with
``tw2sp``. Replication noise (used by ``bench_search.py``/``bench_scale.py``): chosen so that two noisy
copies of one title are about as similar as a title and its real nearest neighbour (median), i.e. copies
join real neighbourhoods instead of forming far-away islands.

Usage:
    nice -n 10 python benchmarks/make_vectors.py [--threads 2] [--batch-size 64]
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
    BASE_META,
    BASE_VECTORS,
    CORPUS,
    given_path,
    machine,
    peak_rss_mb,
    replicate,
    shown,
    sized_stem,
)

from nlsim.io.atomic import atomic_save_npy, atomic_write_text  # noqa: E402


def output_paths(items: int, corpus_items: int, setting: str = "") -> tuple[Path, Path]:
    """Where the vectors and their record go: the base files for the whole default corpus, model and
    conversion, else files tagged with what differs (``setting``, e.g. ``-modelX``) and the count
    (``thucnews_e5_<items>``), so a quick check or another text or model never replaces the vectors the
    benchmarks use."""
    tag = setting + (f"_{items}" if items < corpus_items else "")
    if not tag:
        return BASE_VECTORS, BASE_META
    return (
        BASE_VECTORS.with_name(f"{BASE_VECTORS.stem}{tag}.npy"),
        BASE_META.with_name(f"{BASE_META.stem}{tag}.json"),
    )


def choose_noise(base: np.ndarray, seed: int = 0) -> dict[str, float]:
    """Noise norm such that median cos(copy, copy') ~ median real nearest-neighbour cosine."""
    import faiss

    index = faiss.IndexFlatIP(base.shape[1])
    index.add(base)
    sims, _ = index.search(base, 2)
    nn_median = float(np.median(sims[:, 1]))
    best = None
    for noise in np.arange(0.05, 1.01, 0.01):
        a = replicate(base[:2000], 4000, float(noise), seed=seed + 1)
        b = replicate(base[:2000], 4000, float(noise), seed=seed + 2)
        cc = float(np.median(np.sum(a[2000:] * b[2000:], axis=1)))
        if best is None or abs(cc - nn_median) < abs(best[1] - nn_median):
            best = (float(round(noise, 2)), cc)
    return {
        "noise": best[0],
        "copy_copy_median_cos": round(best[1], 4),
        "real_nn_median_cos": round(nn_median, 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--corpus",
        type=given_path,
        default=CORPUS,
        help="the corpus whose titles are embedded (default: the repository's data/thucnews.parquet)",
    )
    ap.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder (default: multilingual-e5-small)"
    )
    ap.add_argument("--convert", default="tw2sp", help="OpenCC conversion of the titles (default: tw2sp)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default: 2)")
    ap.add_argument("--batch-size", type=int, default=64, help="texts per batch (default: 64)")
    ap.add_argument(
        "--limit",
        type=int,
        default=None,
        help="embed only the first N titles, a quick check (default: all of them)",
    )
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        ap.error(f"--limit must be a positive number of titles, not {args.limit}")

    import pandas as pd
    import torch

    from nlsim.conversion import convert
    from nlsim.encoders import load_encoder

    torch.set_num_threads(args.threads)
    where = machine()
    all_titles = pd.read_parquet(args.corpus, columns=["title"])["title"].tolist()
    titles = all_titles[: args.limit]
    # another corpus, model or conversion: other vectors, never taken for the base ones (the timing
    # settings, --threads and --batch-size, leave the vectors as they are)
    setting = sized_stem("", ap, args, besides=["threads", "batch_size", "limit"])
    vectors_path, meta_path = output_paths(len(titles), len(all_titles), setting)
    texts = convert(titles, args.convert)
    t = time.perf_counter()
    enc = load_encoder(args.model, threads=args.threads)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    emb = enc.encode(texts, batch_size=args.batch_size, progress=True)
    secs = time.perf_counter() - t
    vectors_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_save_npy(vectors_path, emb)
    meta = {
        "model": enc.model_id,
        "fingerprint": enc.fingerprint,
        "conversion": args.convert,
        "corpus": shown(args.corpus),
        "items": len(texts),
        "dim": int(emb.shape[1]),
        "encode_s": round(secs, 2),
        "items_per_s": round(len(texts) / secs, 1),
        "model_load_s": round(load_s, 2),
        "batch_size": args.batch_size,
        "torch_threads": args.threads,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "machine": where,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "replication": choose_noise(emb),
    }
    atomic_write_text(meta_path, json.dumps(meta, indent=2, ensure_ascii=False))
    print(json.dumps(meta, indent=2, ensure_ascii=False))
    print(f"wrote {vectors_path} and {meta_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
