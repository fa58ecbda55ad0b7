"""Time of a daily incremental run: N new items against a window of M kept items (default 1,000 vs 30,000).

The kept window is seeded directly into a state folder: M unit vectors drawn at random (seeded), dated over
the 30 days before the run, under the identity of the real model. A flat index searches every kept vector
whatever its value, so the search, index and commit times are those of a real window; only the pairs found
among kept items differ (there are none). The new items are real headlines (``data/thucnews.parquet``,
Traditional Chinese, converted with ``tw2sp``) embedded by the real model inside the run. Every stage is timed
by the run itself (``RunRecord.timings_s``), model loading included. Run r (1, 2, 3, ...) is day r: its
reference time moves on a day each run, so from run 2 on about ``kept / days`` items expire from the window
(the index is then rebuilt from the kept embeddings) while ``new`` items arrive. Each run is
``nlsim.dedup.run.run_dedup`` with a ``DedupConfig`` whose ``state`` is the seeded folder, as
``nlsim dedup --state`` runs it.

    nice -n 10 python benchmarks/bench_daily.py                      # e5-small, 1,000 vs 30,000
    python benchmarks/bench_daily.py --model paraphrase-MiniLM-L3-v2 --convert none --threshold 0.9
    python benchmarks/bench_daily.py --model paraphrase-MiniLM-L3-v2 --convert none --threshold 0.9 \
        --kept 300 --new 50 --runs 2 --out /tmp/daily-check          # a quick check of the script

Writes ``daily.json`` and ``daily.md`` (with the CPU's model name) into ``--out`` (default
``benchmarks/results/``, where a run at other sizes or settings than the defaults writes
``daily-<what differs>.json`` and ``.md`` beside the committed figures) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import machine, machine_record, positive, sized_stem  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
AS_OF = pd.Timestamp.now(tz="UTC").floor("D") - pd.Timedelta(days=60) + pd.Timedelta(hours=6)
"""The first run's clock: in the past, so that every later run's stays before now (a clock set in the future
is refused)."""


def seed_state(folder: Path, encoder, conversion: str, threshold: float, kept: int, days: float) -> None:  # noqa: ANN001
    """A committed state holding ``kept`` random unit vectors dated over ``days`` days before AS_OF."""
    from nlsim.clusters.table import empty_table
    from nlsim.dedup.state import StateIdentity, commit_state, empty_clusters, empty_pairs
    from nlsim.report.files import pairs_table
    from nlsim.search.index import build_index

    rng = np.random.default_rng(0)
    emb = rng.standard_normal((kept, encoder.dim)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    times = AS_OF - pd.to_timedelta(np.linspace(days * 86400 - 3600, 3600, kept), unit="s")
    times = pd.DatetimeIndex(times).as_unit("ns")
    items = pd.DataFrame(
        {
            "id": [f"kept-{i:06d}" for i in range(kept)],
            "content_hash": [f"{i:016x}" for i in range(kept)],
            "title": [f"kept item {i}" for i in range(kept)],
            "source": ["seed"] * kept,
            "url": [""] * kept,
            "published_at": times,
            "retain_from": times,
            "first_seen_run": ["seed"] * kept,
            "embedded_run": ["seed"] * kept,
            "raw_text": [f"kept item {i}" for i in range(kept)],
            "cluster_id": [None] * kept,
        }
    )
    identity = StateIdentity(
        model_id=encoder.model_id,
        fingerprint=encoder.fingerprint,
        dim=encoder.dim,
        conversion=conversion,
        text_fields=("title",),
        threshold=threshold,
    )
    # an empty report for the seeding "run" (a run reads it back if its report was never written)
    frame = items.iloc[:0][["id", "title", "source", "url", "published_at"]]
    no_pairs = pd.DataFrame(
        {"a": np.empty(0, np.int64), "b": np.empty(0, np.int64), "similarity": np.empty(0, np.float32)}
    )
    report = {
        "pairs": pairs_table(frame, no_pairs, pd.Series([], dtype=object)),
        "clusters": empty_table(),
        "window": empty_table(),
        "frame": frame,
    }
    commit_state(
        folder,
        identity=identity,
        index=build_index(emb, use_gpu=False),
        items=items,
        embeddings=emb,
        pairs=empty_pairs(),
        clusters=empty_clusters(),
        as_of=AS_OF - pd.Timedelta(hours=1),
        run={"run_id": "seed", "input_key": "seed"},
        report_tables=report,
    )


def new_items(n: int, offset: int, as_of: pd.Timestamp) -> pd.DataFrame:
    """``n`` THUCNews headlines published in the hour before ``as_of``."""
    f = pd.read_parquet(ROOT / "data" / "thucnews.parquet")
    part = f.iloc[offset : offset + n]
    return pd.DataFrame(
        {
            "id": part["id"].astype(str),
            "title": part["title"],
            "source": part["source"],
            "published_at": as_of - pd.to_timedelta(np.linspace(3000, 60, len(part)), unit="s"),
        }
    )


def markdown_table(frame: pd.DataFrame) -> str:
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder (default: multilingual-e5-small)"
    )
    p.add_argument(
        "--convert", default="tw2sp", help="OpenCC script conversion of the headlines (default: tw2sp)"
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=0.93,
        help="pair threshold (timing barely depends on it; e5's calibrated thresholds sit near 0.9) "
        "(default: 0.93)",
    )
    p.add_argument(
        "--kept", type=positive(), default=30_000, help="items in the seeded window (default: 30000)"
    )
    p.add_argument(
        "--new",
        type=positive(),
        default=1_000,
        help="new headlines each run embeds and matches (default: 1000)",
    )
    p.add_argument(
        "--days",
        type=positive(float),
        default=30.0,
        help="the window's retention in days, over which the kept items are dated (default: 30)",
    )
    p.add_argument(
        "--runs",
        type=positive(),
        default=3,
        help="consecutive daily runs, each with --new fresh items (default: 3)",
    )
    p.add_argument("--threads", type=positive(), default=None, help="torch threads (default: torch's choice)")
    p.add_argument(
        "--backend", default="auto", help="encoder backend: auto (as a real run), torch, onnx (default: auto)"
    )
    p.add_argument(
        "--precision",
        default="auto",
        help="encoder precision: auto (as a real run), fp32, bf16, fp16, int8 (default: auto)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help="folder for daily.json and daily.md (default: benchmarks/results, where a run at other sizes or "
        "settings writes daily-<what differs>.json and .md beside the committed figures)",
    )
    args = p.parse_args(argv)
    stem = (
        sized_stem("daily", p, args, besides=["out"]) if args.out.resolve() == RESULTS.resolve() else "daily"
    )
    host = machine()  # the CPU and the load average before the benchmark's own work

    import torch

    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup
    from nlsim.encoders import load_encoder
    from nlsim.io.atomic import atomic_write_text

    if args.threads:
        torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="nlsim-bench-daily-"))
    try:
        enc = load_encoder(args.model)
        t = time.perf_counter()
        seed_state(work / "state", enc, args.convert, args.threshold, args.kept, args.days)
        seed_s = time.perf_counter() - t
        rows = []
        for r in range(args.runs):
            # one run a day: each day the window moves on (about --kept/--days items expire) and --new arrive
            as_of = AS_OF + pd.Timedelta(days=r)
            corpus = work / f"day{r + 1}.parquet"
            new_items(args.new, r * args.new, as_of).to_parquet(corpus, index=False)
            cfg = DedupConfig.of(
                corpus=corpus,
                out=work / "out",
                model=args.model,
                convert=args.convert,
                threshold=args.threshold,
                text_fields=("title",),
                k=10,
                backend=args.backend,
                precision=args.precision,
                rerank=False,  # the seeded state's identity names no reranker
                cache=False,
                progress=False,
                state=work / "state",
                retention_days=args.days,
                as_of=as_of.isoformat(),
            )
            t = time.perf_counter()
            # the encoder is loaded inside the run, as a scheduled run does (its time is the "model" stage)
            res = run_dedup(cfg, encoder=None)
            wall = time.perf_counter() - t
            rows.append(
                {
                    "run": r + 1,
                    "wall_s": round(wall, 2),
                    **{f"{k}_s": v for k, v in res.stats.timings_s.items()},
                    **{k: getattr(res.stats.counts, k) for k in ("new", "expired", "kept", "pairs")},
                }
            )
        table = pd.DataFrame(rows)
        info = {
            "model": args.model,
            "conversion": args.convert,
            "kept": args.kept,
            "new": args.new,
            "window_days": args.days,
            "threshold": args.threshold,
            "backend": args.backend,
            "precision": args.precision,
            "seed_state_s": round(seed_s, 2),
            "torch_threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
            "machine": host,
            "cpu": machine_record(),
            "python": platform.python_version(),
            "date": pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
            "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        }
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / f"{stem}.json", json.dumps({"setup": info, "runs": rows}, indent=1))
        md = (
            "# Daily incremental run: time per stage\n\n"
            + "\n".join(f"- {k}: {v}" for k, v in info.items() if k != "cpu")
            + "\n\n"
            + markdown_table(table)
            + "\n"
        )
        atomic_write_text(args.out / f"{stem}.md", md)
        print(md)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
