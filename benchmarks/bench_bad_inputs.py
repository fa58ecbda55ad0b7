"""Bad inputs through the real command line: the hostile-input cases of ``tests/hostile/cases.py`` (the
same cases ``tests/hostile/test_bad_inputs.py`` runs as slow tests), run here as one table.

For each case: does nlsim refuse it by name (one ``nlsim CMD: error: ...`` line, no traceback), does a
valid input load every row and give the right result, and is every user file byte for byte as it was? The
figures: cases refused by name, valid inputs right, user files lost or changed, wrong results with exit 0,
rows silently dropped.

    python benchmarks/bench_bad_inputs.py [--jobs 2] [--only SUBSTRING[,SUBSTRING...]]

Writes ``benchmarks/results/bad_inputs.json`` and ``bad_inputs.md`` (with the CPU's model name) and prints
the table; exits 1 when a case failed its checks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import machine, positive  # noqa: E402

from nlsim.io.atomic import atomic_write_text  # noqa: E402
from tests.hostile.cases import MODEL, all_cases, build_templates, cpu_name, run_case, summarise  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=positive(), default=2, help="cases run at a time (default 2)")
    parser.add_argument(
        "--only",
        default=None,
        help="only cases whose name holds this (or one of these, comma-separated) (default: every case)",
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="nlsim-bench-bad-"))
    # every case's caches and precision records go to the run's own folder, never into the user's
    os.environ["NLSIM_HOME"] = str(work / "_home")
    at_start = machine()  # the load average before the benchmark's own processes
    t0 = time.perf_counter()
    try:
        cases = all_cases(work)
        if args.only:
            cases = [c for c in cases if any(part in c.name for part in args.only.split(","))]
            if not cases:  # an empty table with exit 0 read as "every case passed"
                parser.error(f"argument --only: no case name holds {args.only!r}")
        build_templates(work)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda c: run_case(c, work / "cases"), cases))
        for r in rows:
            if not r["ok"]:
                print(f"FAILED {r['case']}: {'; '.join(r['problems'])}", flush=True)
        summary = summarise(rows)
        groups: dict[str, dict[str, int]] = {}
        for r in rows:
            gr = groups.setdefault(r["group"], {"cases": 0, "passed": 0})
            gr["cases"] += 1
            gr["passed"] += r["ok"]
        meta = {
            "cpu": cpu_name(),
            "machine": at_start,
            "cores": os.cpu_count(),
            "model": MODEL,
            "jobs": args.jobs,
            "elapsed_s": round(time.perf_counter() - t0, 1),
            "command": "python benchmarks/bench_bad_inputs.py"
            + (f" --only {args.only}" if args.only else ""),
        }
        md = render(summary, groups, rows, meta)
        print(md)
        if not args.only:
            RESULTS.mkdir(parents=True, exist_ok=True)
            atomic_write_text(
                RESULTS / "bad_inputs.json",
                json.dumps(
                    {"summary": summary, "groups": groups, "meta": meta, "cases": rows},
                    indent=1,
                    ensure_ascii=False,
                )
                + "\n",
            )
            atomic_write_text(RESULTS / "bad_inputs.md", md)
        return 0 if summary["cases that failed a check"] == 0 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def render(
    summary: dict[str, int],
    groups: dict[str, dict[str, int]],
    rows: list[dict[str, Any]],
    meta: dict[str, Any],
) -> str:
    lines = [
        "# Bad inputs through the command line",
        "",
        f"`{meta['command']}`: CPU {meta['cpu']} (lscpu model name); {meta['machine']}; "
        f"model {meta['model']}, {meta['jobs']} cases at a time, {meta['elapsed_s']:.0f} s in all.",
        "",
        "| figure | value |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in summary.items()],
        "",
        "| group | cases | passed every check |",
        "|---|---:|---:|",
        *[f"| {g} | {v['cases']} | {v['passed']} |" for g, v in groups.items()],
        "",
    ]
    failed = [r for r in rows if not r["ok"]]
    lines += [
        "Cases that failed a check: " + (", ".join(r["case"] for r in failed) if failed else "none."),
        "",
    ]
    lines += ["| case | group | exit | message (last stderr line) |", "|---|---|---:|---|"]
    for r in rows:
        msg = r["message"].replace("|", "\\|")
        if r["expect"] == "ok":
            msg = "(ran: every row loaded)" if r["ok"] else "; ".join(r["problems"]).replace("|", "\\|")
        lines.append(f"| {r['case']} | {r['group']} | {r['exit']} | {msg[:220]} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
