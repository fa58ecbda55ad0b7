"""The stages after the search on a synthetic news day: what ``nlsim dedup`` spends on copies, clusters, topic
groups and the report's files as the day grows.

Builds a news day of N headlines (:func:`news_day`): Chinese (THUCNews titles cut and joined to other
THUCNews characters) and English (BBC words), 60% of them in near-duplicate families (a wire story's
copies, each the text as sent, with a prefix such as ``UPDATE 1-``, a suffix, or a character dropped;
family sizes Pareto-distributed up to 40), a few wire stories of 200 to 2,000 copies, the rest single items,
with times over one day and ten sources. Then runs ``nlsim dedup`` on it in a fresh process with the small
test model (``paraphrase-MiniLM-L3-v2``, threshold 0.9, topic groups at 0.8, ``--convert none``) and records
the wall time, the peak RSS, each stage's time (the run record ``--json`` prints, the report stage
included) and the size of the report's files. The embedding cache of ``NLSIM_HOME`` is used: a second run
of a size spends its time after the search.

    python benchmarks/bench_newsday.py --sizes 20000 50000 [--keep DIR]
    python benchmarks/bench_newsday.py --sizes 2000                # a quick check of the script

Writes ``benchmarks/results/newsday.json`` and ``.md`` (with the CPU's model name); a run at other sizes than
the default writes ``newsday-sizes<sizes>.json`` and ``.md`` beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, positive, print_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODEL = "paraphrase-MiniLM-L3-v2"
SIZES = [20000, 50000]
"""The news days of the committed figures (``results/newsday.json``): headlines a day."""
FILES = ("index.html", "stories.json", "report.xlsx", "pairs.csv", "members.csv", "pairs.parquet")


def news_day(n: int, seed: int = 0, start: str = "2024-08-01T00:00:00Z", prefix: str = "it") -> pd.DataFrame:
    """A synthetic news day of ``n`` headlines (see the module doc); the same ``n`` and ``seed`` give the same
    day."""
    rng = random.Random(seed)
    thuc = pd.read_parquet(ROOT / "data/thucnews.parquet")["title"].tolist()
    bbc = pd.read_parquet(ROOT / "data/bbc.parquet")
    words = " ".join(bbc["description"].fillna("").tolist()).split()
    zh_chars = "".join(thuc)
    sources = ["Reuters", "AP", "AFP", "CNA", "Xinhua", "BBC", "UDN", "Liberty Times", "ETtoday", "Yahoo"]
    t0 = pd.Timestamp(start)
    hours = 24
    rows: list[tuple[str, pd.Timestamp]] = []

    def story() -> str:
        if rng.random() < 0.55:
            s = rng.choice(thuc)
            k = rng.randint(0, len(zh_chars) - 20)
            return s[: max(4, len(s) // 2)] + zh_chars[k : k + rng.randint(6, 14)]
        return " ".join(rng.choice(words) for _ in range(rng.randint(8, 16))).capitalize()

    def copy(t: str) -> str:
        r = rng.random()
        if r < 0.3:
            return t  # the wire's text as sent
        if r < 0.5:
            return rng.choice(["", "【快訊】", "UPDATE 1-", "BREAKING: "]) + t
        if r < 0.75:
            return t + rng.choice(["。", "!", " (update)", "（圖）", " - report"])
        pos = rng.randrange(len(t))
        return t[:pos] + t[pos + 1 :]

    giants = [2000, 1200, 600, 200] if n >= 50000 else ([1000, 400, 200] if n >= 20000 else [200])
    for size in giants:
        base = story()
        first = t0 + pd.Timedelta(minutes=rng.randint(0, hours * 60))
        rows += [(copy(base), first + pd.Timedelta(minutes=rng.randint(0, 600))) for _ in range(size)]
    while len(rows) < n * 0.6:
        base = story()
        first = t0 + pd.Timedelta(minutes=rng.randint(0, hours * 60))
        size = min(int(rng.paretovariate(1.3)) + 1, 40)
        rows += [(copy(base), first + pd.Timedelta(minutes=rng.randint(0, 300))) for _ in range(size)]
    while len(rows) < n:
        rows.append((story(), t0 + pd.Timedelta(minutes=rng.randint(0, hours * 60))))
    rows = rows[:n]
    rng.shuffle(rows)
    return pd.DataFrame(
        {
            "id": [f"{prefix}-{i:07d}" for i in range(len(rows))],
            "title": [r[0] for r in rows],
            "source": [rng.choice(sources) for _ in rows],
            "url": [f"https://news.example.com/{prefix}/{i}" for i in range(len(rows))],
            "published_at": pd.to_datetime([r[1] for r in rows], utc=True),
        }
    )


def run_day(corpus: Path, out: Path) -> dict:
    """One ``nlsim dedup`` of ``corpus`` into ``out`` in a fresh process: wall seconds, peak RSS (MB), the
    stages' seconds, the counts and the report files' sizes (MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    args = ["--corpus", str(corpus), "--model", MODEL, "--convert", "none", "--threshold", "0.9"]
    args += ["--topic-threshold", "0.8", "--backend", "torch", "--no-progress", "--json", "--out", str(out)]
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "nlsim", "dedup", *args], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"]
        raise SystemExit(f"bench_newsday.py: nlsim dedup failed: {lines[-1]}")
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    record = json.loads(proc.stdout)
    counts = record["counts"]
    return {
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(peak),
        **{f"{k}_s": v for k, v in record["timings_s"].items()},
        "pairs": counts["pairs"],
        "clusters": counts["clusters"],
        "topics": counts["topics"],
        "largest": int(pd.read_parquet(out / "clusters.parquet")["size"].max()),
        **{f"{f}_mb": round((out / f).stat().st_size / 2**20, 1) for f in FILES},
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description="Time the stages after the search (copies, clusters, topic groups, the report's files) "
        "on a synthetic news day of each size, with the small test model."
    )
    ap.add_argument(
        "--sizes", type=positive(), nargs="+", default=SIZES, help="headlines a day (default: 20000 50000)"
    )
    ap.add_argument(
        "--keep",
        type=Path,
        help="keep the corpora and reports in this folder (default: none, a temporary one)",
    )
    ns = ap.parse_args(argv)
    # a run at other sizes (a quick check) writes beside the committed figures, never over them
    stem = RESULTS / ("newsday" if ns.sizes == SIZES else f"newsday-sizes{'_'.join(map(str, ns.sizes))}")
    host = machine()  # the load average before the benchmark's own runs
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = ns.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for n in ns.sizes:
            corpus = work / f"newsday{n}.parquet"
            news_day(n).to_parquet(corpus, index=False)
            rows.append({"items": n, **run_day(corpus, work / f"report{n}")})
            print(json.dumps(rows[-1]), flush=True)
    print(f"machine: {host}")
    cols = ["items", "wall_s", "peak_rss_mb", "copies_s", "neighbors_s", "cluster_s", "report_s", "pairs"]
    cols += ["clusters", "largest", *(f"{f}_mb" for f in FILES[:3])]
    table = print_table(rows, cols)
    from nlsim.io.atomic import atomic_write_text

    atomic_write_text(stem.with_suffix(".json"), json.dumps({"machine": host, "rows": rows}, indent=2) + "\n")
    atomic_write_text(stem.with_suffix(".md"), f"machine: {host}\n\n{table}\n")
    print(f"wrote {stem}.json and .md")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
