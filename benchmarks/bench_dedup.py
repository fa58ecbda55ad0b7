"""End-to-end time and peak memory of the default dedup run (the README's main job).

Runs ``nlsim dedup`` on the bundled THUCNews corpus (10,000 headlines) with multilingual-e5-small and
``tw2sp``, in a fresh process each time: once with the embedding cache off (everything computed), once
reusing the cache (a rerun on unchanged input). Prints a table and writes
``benchmarks/results/dedup.{json,md}`` (another ``--corpus`` or ``--threshold``:
``dedup-corpusC[-thresholdT].{json,md}`` beside them).

    python benchmarks/bench_dedup.py [--corpus data/thucnews.parquet] [--threshold 0.95]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CORPUS, RESULTS, check_files, given_path, machine, print_table, sized_stem  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float, dict]:
    """Wall seconds, peak RSS (MB) of the child, and its run.json."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "nlsim", "dedup", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0:  # nlsim's own one-line error, not a CalledProcessError with the reason hidden
        lines = proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"]
        raise SystemExit(f"bench_dedup.py: nlsim dedup failed: {lines[-1]}")
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = Path(args[args.index("--out") + 1])
    # ru_maxrss of children is the max over all children so far: runs go in increasing-memory order below
    return wall, max(peak, before) / 1024, json.loads((out / "run.json").read_text())


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--corpus",
        type=given_path,
        default=CORPUS,
        help="the corpus of the timed nlsim dedup run (default: the repository's data/thucnews.parquet)",
    )
    ap.add_argument(
        "--threshold",
        type=float,
        default=0.95,
        help="the run's threshold, fixed so that the timing leaves calibration out (default: 0.95)",
    )
    return ap


def stem_of(ap: argparse.ArgumentParser, ns: argparse.Namespace) -> str:
    """``dedup``: the committed figures are the bundled corpus at 0.95; another corpus or threshold writes
    ``dedup-corpusC[-thresholdT]`` beside them."""
    return sized_stem("dedup", ap, ns)


def main(argv: list[str] | None = None) -> None:
    ap = build_parser()
    ns = ap.parse_args(argv)
    check_files(ap, "--corpus", [ns.corpus])
    stem = stem_of(ap, ns)
    host = machine()  # the load average before the benchmark's own runs
    env = {**os.environ, "NLSIM_HOME": os.environ.get("NLSIM_HOME", str(Path.home() / ".cache/nlsim"))}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache_env = {**env}
        base = ["--corpus", str(ns.corpus), "--threshold", str(ns.threshold), "--no-progress"]
        wall, peak, run = run_once([*base, "--out", f"{tmp}/cold", "--no-cache"], cache_env)
        rows.append(
            {
                "run": "no embedding cache",
                "wall_s": wall,
                "peak_rss_mb": peak,
                **{f"{k}_s": v for k, v in run["timings_s"].items()},
                "pairs": run["pairs"],
            }
        )
        run_once([*base, "--out", f"{tmp}/fill"], cache_env)  # fills the cache
        wall, _, run = run_once([*base, "--out", f"{tmp}/warm"], cache_env)
        rows.append(
            {
                "run": "rerun, unchanged input (cache hit)",
                "wall_s": wall,
                "peak_rss_mb": float("nan"),
                **{f"{k}_s": v for k, v in run["timings_s"].items()},
                "pairs": run["pairs"],
            }
        )
    cols = [
        "run",
        "wall_s",
        "peak_rss_mb",
        "load_s",
        "model_s",
        "convert_s",
        "embed_s",
        "index_s",
        "neighbors_s",
        "cluster_s",
        "pairs",
    ]
    print(f"machine: {host}")
    table = print_table(rows, cols)
    RESULTS.mkdir(exist_ok=True)
    from nlsim.io.atomic import atomic_write_text

    atomic_write_text(RESULTS / f"{stem}.json", json.dumps({"machine": host, "rows": rows}, indent=2))
    atomic_write_text(RESULTS / f"{stem}.md", f"machine: {host}\n\n{table}\n")
    print(f"wrote {RESULTS / stem}.json and .md")


if __name__ == "__main__":
    main()
