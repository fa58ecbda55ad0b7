"""The chain's targets: cold and warm runs of the main job, and how well its report judges "same story".

Runs ``nlsim pipeline`` (what ``bash run.sh`` runs, without the package install) in a subprocess:

1. **cold**: a fresh ``NLSIM_HOME`` (the e5 conversion, no cached embeddings or cross-encoder scores), a
   fresh model store and report folder: baseline, fine-tuning of the bi-encoder and the reranker, evaluation,
   promotion, the report over the 10,000 bundled titles, the judge;
2. **warm**: the same command again, unchanged annotations: the model is reused, embeddings and
   cross-encoder scores come from the caches;
3. **zero-shot**: ``nlsim dedup`` with the zero-shot base model and its same-story calibration over the same
   corpus, judged the same way, printed beside the promoted model's report.

Prints the seconds of each run and of each chain stage, and the same-story precision, recall and F1 of each
report on the merged validation pairs (``nlsim judge``); writes ``benchmarks/results/pipeline.json`` and
``.md``. Targets: the promoted model's report, judged at the cluster level, same-story F1 >= 0.78 at
precision >= 0.80 (what two editors reach with each other); cold <= 20 min and warm <= 2 min on 2 cores.

    python benchmarks/bench_pipeline.py                  # cold, warm, zero-shot
    python benchmarks/bench_pipeline.py --skip-cold --work /tmp/nlsim-bench   # warm + zero-shot on a kept run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import RESULTS, machine, print_table

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
CORPUS = ROOT / "data" / "thucnews.parquet"


def nlsim(args: list[str], env: dict[str, str], log: Path) -> float:
    """Run ``python -m nlsim ARGS``; returns its wall seconds (output appended to ``log``)."""
    start = time.perf_counter()
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"\n$ nlsim {' '.join(args)}\n")
        fh.flush()
        proc = subprocess.run(
            [sys.executable, "-m", "nlsim", *args], cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT
        )
    if proc.returncode != 0:
        sys.exit(f"nlsim {' '.join(args)} failed (exit {proc.returncode}); see {log}")
    return time.perf_counter() - start


def judge(report: Path, env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "nlsim", "judge", "--report", str(report), "--pairs", str(PAIRS), "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--work", default=None, help="folder for the store, reports and NLSIM_HOME (default: new)"
    )
    parser.add_argument("--skip-cold", action="store_true", help="reuse a cold run already in --work")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="nlsim-bench-pipeline-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "NLSIM_HOME": str(work / "home"),
        "NLSIM_PROGRESS": "lines",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    chain = [
        "pipeline",
        "--pairs",
        str(PAIRS),
        "--corpus",
        str(CORPUS),
        "--out",
        str(work / "report"),
        "--model-store",
        str(work / "models"),
    ] + (["--threads", str(args.threads)] if args.threads else [])
    log = work / "bench.log"
    host = machine()
    print(f"machine: {host}\nwork folder: {work} (log {log})")
    runs = []
    if not args.skip_cold:
        cold = nlsim(chain, env, log)
        record = json.loads((work / "report" / "pipeline.json").read_text())
        runs.append({"run": "cold", "seconds": round(cold, 1), **record["timings_s"]})
        print(f"cold: {cold:.0f} s")
    warm = nlsim(chain, env, log)
    record = json.loads((work / "report" / "pipeline.json").read_text())
    runs.append({"run": "warm", "seconds": round(warm, 1), **record["timings_s"]})
    print(f"warm: {warm:.0f} s (trained: {record['trained']})")
    base = record["baseline"]["model"]
    zero = nlsim(
        [
            "dedup",
            "--corpus",
            str(CORPUS),
            "--out",
            str(work / "zero-shot-report"),
            "--model",
            base,
            "--calibration",
            str(work / "models" / "zero-shot" / "calibration.json"),
        ],
        env,
        log,
    )
    judged = [
        {
            **judge(work / "zero-shot-report", env),
            "report": f"zero-shot {base} (cosine, same-story calibration)",
        },
        {
            **judge(work / "report", env),
            "report": "promoted " + (record["current"] or {"version": "(none: zero-shot)"})["version"],
        },
    ]
    print()
    stages = list(dict.fromkeys(k for r in runs for k in r if k not in ("run", "seconds")))
    stage_cols = ["run", "seconds", *stages]
    table1 = print_table(runs, stage_cols)
    print()
    rows = [
        {
            "report": j["report"],
            "precision": j["precision"],
            "recall": j["recall"],
            "F1": j["f1"],
            "F1 95%": "–".join(f"{x:.3f}" for x in j["f1_ci95"]) if j.get("f1_ci95") else "",
            "judged": j["judged_pairs"],
            "same story": j["same_story_pairs"],
            "reported pairs": j["reported_pairs"],
        }
        for j in judged
    ]
    table2 = print_table(
        rows, ["report", "precision", "recall", "F1", "F1 95%", "judged", "same story", "reported pairs"]
    )
    result = {
        "machine": host,
        "runs": runs,
        "judge": judged,
        "zero_shot_dedup_s": round(zero, 1),
        "decision": record["decision"],
        "before_after": record.get("baseline"),
        "work": str(work),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pipeline.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    (RESULTS / "pipeline.md").write_text(
        f"# The chain (`python benchmarks/bench_pipeline.py`)\n\nMachine: {host}\n\n{table1}\n\n"
        f"Same story on the validation pairs, at the cluster level (`nlsim judge`):\n\n{table2}\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
