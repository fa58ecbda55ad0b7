"""Where the test suite's time goes: each test module's time, each worker's, and how long one worker waited
for the other at the end, from a timed run of the suite (``benchmarks/suite_timeline.py``).

    python benchmarks/bench_suite.py                  # bash test.sh, as CI runs it, timed
    python benchmarks/bench_suite.py -- -m "not slow" # bash test.sh -m "not slow"
    python benchmarks/bench_suite.py --read DIR       # the figures of a timeline written before

It runs ``bash test.sh`` in this checkout with the timeline plugin loaded into every pytest run
(``PYTEST_ADDOPTS=-p suite_timeline``), then prints, for each pytest run (the whole suite, then the avx2
pass): its wall time from the first test's start to the last test's end, each worker's busy time and end,
the tail (the first worker to finish waited that long for the last), and the slowest modules by the worker
time their tests took (fixtures' set-ups included). The CPU is named; the results go to
``benchmarks/results/suite_<cpu>_<kind>[_TAG].{md,json}``. Times are the host's of that hour: compare runs
on one host, one after the other, nothing else running.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import machine, machine_record, print_table, results_stem  # noqa: E402


def read_runs(folder: Path) -> list[dict[str, list[tuple[float, float, str]]]]:
    """The pytest runs in ``folder`` (``<run>-<worker>.tsv``), in the order they ran: each worker's spans."""
    runs: dict[str, dict[str, list[tuple[float, float, str]]]] = collections.defaultdict(dict)
    for path in sorted(folder.glob("*.tsv")):
        run, _, worker = path.stem.partition("-")
        spans = []
        for line in path.read_text(encoding="utf-8").splitlines():
            start, end, nodeid = line.split("\t")
            spans.append((float(start), float(end), nodeid))
        if spans:
            runs[run][worker] = spans
    return sorted(runs.values(), key=lambda r: min(s[0] for spans in r.values() for s in spans))


def figures(run: dict[str, list[tuple[float, float, str]]], top: int) -> dict[str, Any]:
    """One run's figures: wall, workers' busy time and end, the tail, the slowest modules."""
    t0 = min(s[0] for spans in run.values() for s in spans)
    ends = {w: max(s[1] for s in spans) - t0 for w, spans in run.items()}
    modules: collections.Counter[str] = collections.Counter()
    tests: collections.Counter[str] = collections.Counter()
    for spans in run.values():
        for start, end, nodeid in spans:
            modules[nodeid.split("::")[0]] += end - start
            tests[nodeid.split("::")[0]] += 1
    return {
        "tests": sum(len(spans) for spans in run.values()),
        "wall_s": round(max(ends.values()), 1),
        "workers": {
            w: {"busy_s": round(sum(e - s for s, e, _ in spans), 1), "end_s": round(ends[w], 1)}
            for w, spans in sorted(run.items())
        },
        "tail_s": round(max(ends.values()) - min(ends.values()), 1),
        "test_time_s": round(sum(modules.values()), 1),
        "slowest_modules": [
            {"module": m, "tests": tests[m], "seconds": round(d, 1)} for m, d in modules.most_common(top)
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--read",
        type=Path,
        help="summarise this timeline folder instead of running the suite (default: run the suite)",
    )
    ap.add_argument(
        "--top", type=int, default=20, help="how many of the slowest modules to list (default: 20)"
    )
    ap.add_argument("--tag", default="", help="added to the results' file names (default: none)")
    ap.add_argument("pytest_args", nargs="*", help="after --: passed to test.sh (and so to pytest)")
    args = ap.parse_args()
    record = machine_record()
    header = machine()
    print(header)
    if args.read is None:
        folder = Path(tempfile.mkdtemp(prefix="nlsim-suite-timeline-"))
        env = {
            **os.environ,
            "NLSIM_SUITE_TIMELINE": str(folder),
            "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p),
            "PYTEST_ADDOPTS": " ".join(
                p for p in (os.environ.get("PYTEST_ADDOPTS", ""), "-p suite_timeline") if p
            ),
        }
        start = time.perf_counter()
        rc = subprocess.call(["bash", "test.sh", *args.pytest_args], cwd=ROOT, env=env)
        total = time.perf_counter() - start
        print(
            f"bash test.sh {' '.join(args.pytest_args)}: exit {rc}, {total:.0f} s in all; timeline: {folder}"
        )
    else:
        folder, rc, total = args.read, None, None
    runs = [figures(run, args.top) for run in read_runs(folder)]
    if not runs:
        print(f"no timeline in {folder}", file=sys.stderr)
        return 1
    lines = [f"# The test suite's time ({time.strftime('%Y-%m-%d')})", "", header, ""]
    if total is not None:
        lines += [f"`bash test.sh {' '.join(args.pytest_args)}`: exit {rc}, **{total:.0f} s** in all.", ""]
    for i, run in enumerate(runs, 1):
        workers = ", ".join(
            f"{w} {f['busy_s']:.0f} s busy, ended at {f['end_s']:.0f} s" for w, f in run["workers"].items()
        )
        intro = (
            f"pytest run {i}: {run['tests']} tests, {run['wall_s']:.0f} s from the first test's start to the"
            f" last's end; {workers}; tail {run['tail_s']:.0f} s; test time {run['test_time_s']:.0f} s"
        )
        print(intro)
        table = print_table(run["slowest_modules"], ["module", "tests", "seconds"])
        lines += [intro, "", table, ""]
    if args.read is None:
        stem = results_stem("suite", record)
        stem = stem.with_name(stem.name + (f"_{args.tag}" if args.tag else ""))
        from nlsim.io.atomic import atomic_write_text

        atomic_write_text(stem.with_suffix(".md"), "\n".join(lines))
        data = {"machine": record, "exit": rc, "total_s": total, "args": args.pytest_args, "runs": runs}
        atomic_write_text(stem.with_suffix(".json"), json.dumps(data, indent=2) + "\n")
        print(f"written: {stem}.md, {stem}.json")
    return 0 if rc in (None, 0) else 1


if __name__ == "__main__":
    raise SystemExit(main())
