"""Reliability of daily runs under SIGKILL: every kill point on every day of a three-day sequence.

For each day d of three and each fault stage (``nlsim.faults.FAULT_STAGES``), the state and report
folder
are restored to what they were after day d-1 of an uninterrupted sequence, ``nlsim dedup --state`` is run as a
subprocess for day d with ``NLSIM_FAULT_AT=<stage>`` and the test suite's hook (``tests/faults.py``), which
SIGKILLs it there, and then:

- the state must open (manifest, checksums, identity) and be day d-1's or, after the commit, day d's;
- the last published report (``OUT/latest``) must verify against its ``run.json`` hashes and be day d-1's;
- day d is run again (taking over the stale lock), then the remaining days; the final state, and every
  report from day d on, must equal the uninterrupted sequence's, and no item may be missing.

    nice -n 10 python benchmarks/bench_reliability.py        # 18 kill points, ~5-10 min on 2 cores

Writes ``benchmarks/results/reliability.json`` and ``reliability.md`` (with the CPU's model name) and prints
the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.faults import fault_env  # noqa: E402
from tests.incremental_helpers import (  # noqa: E402
    FAST_MODEL,
    bbc_corpus,
    fault_cli_args,
    fault_config,
    report_content,
    run_daily,
    split_days,
    state_content,
)

sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import machine  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
POST_COMMIT = {"report-write", "report-publish"}


def _cli(corpus: Path, state: Path, out: Path, stage: str) -> subprocess.CompletedProcess:
    cmd = fault_cli_args(corpus, state, out)
    env = {**os.environ, **fault_env(stage, str(ROOT)), "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _restore(snap: Path | None, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    if snap is not None and snap.exists():
        shutil.copytree(snap, dest, symlinks=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)  # no options: --help, and a mistyped option, end here before any work
    from nlsim.dedup.state import open_state
    from nlsim.encoders import load_encoder
    from nlsim.faults import FAULT_STAGES
    from nlsim.report.files import verify_report

    host = machine()  # the CPU and the load average before the benchmark's own work
    work = Path(tempfile.mkdtemp(prefix="nlsim-bench-rel-"))
    t_start = time.perf_counter()
    try:
        corpus = bbc_corpus(n_other=60, n_rewrites=10)
        days = split_days(corpus, work / "in", ["2005-03-04", "2005-03-08"])
        enc = load_encoder(FAST_MODEL)
        ref_state, ref_out = work / "ref" / "state", work / "ref" / "out"
        ref_reports, snaps = [], [(None, None)]
        for d, path in enumerate(days):
            r = run_daily(fault_config(path, ref_out), ref_state, retention_days=None, encoder=enc)
            ref_reports.append((r.run_id, report_content(r.report_dir)))
            s_snap, o_snap = work / "snap" / f"state{d + 1}", work / "snap" / f"out{d + 1}"
            shutil.copytree(ref_state, s_snap, symlinks=True)
            shutil.copytree(ref_out, o_snap, symlinks=True)
            snaps.append((s_snap, o_snap))
        ref_final = state_content(ref_state)
        ref_ids = {str(i) for i in open_state(ref_state).items["id"]}
        print(
            f"reference: {len(days)} days, {len(ref_ids)} items, "
            f"{sum(1 for _ in open_state(ref_state).clusters.itertuples())} clusters"
        )

        rows = []
        for d in range(len(days)):
            for stage in FAULT_STAGES:
                state, out = work / "run" / "state", work / "run" / "out"
                _restore(snaps[d][0], state)
                _restore(snaps[d][1], out)
                proc = _cli(days[d], state, out, stage)
                killed = proc.returncode == -signal.SIGKILL
                row = {"day": d + 1, "stage": stage, "killed": killed}
                try:
                    st = open_state(state)
                    row["state_usable"] = st.generation == d + (1 if stage in POST_COMMIT else 0)
                except Exception as exc:  # noqa: BLE001 - recorded as a failure
                    row["state_usable"] = False
                    row["error"] = str(exc)[:200]
                if d == 0:
                    row["last_report_intact"] = not (out / "latest").exists()
                else:
                    try:
                        verify_report(out / "latest")
                        row["last_report_intact"] = report_content(out / "latest") == ref_reports[d - 1][1]
                    except Exception as exc:  # noqa: BLE001
                        row["last_report_intact"] = False
                        row["error"] = str(exc)[:200]
                compared = equal = 0
                for later in range(d, len(days)):
                    r = run_daily(fault_config(days[later], out), state, retention_days=None, encoder=enc)
                    compared += 1
                    equal += report_content(r.report_dir) == ref_reports[later][1]
                compared += 1
                equal += state_content(state) == ref_final
                final_ids = {str(i) for i in open_state(state).items["id"]}
                row.update(
                    runs_compared=compared,
                    runs_equal=equal,
                    items_lost=len(ref_ids - final_ids),
                    survived=bool(
                        killed
                        and row["state_usable"]
                        and row["last_report_intact"]
                        and equal == compared
                        and not (ref_ids - final_ids)
                    ),
                )
                rows.append(row)
                print(row, flush=True)
        table = pd.DataFrame(rows)
        summary = {
            "kill_points_tried": int(len(table)),
            "killed_as_planned": int(table["killed"].sum()),
            "survived": int(table["survived"].sum()),
            "runs_compared": int(table["runs_compared"].sum()),
            "runs_equal": int(table["runs_equal"].sum()),
            "items_lost": int(table["items_lost"].sum()),
            "items": len(ref_ids),
            "days": len(days),
            "model": FAST_MODEL,
            "elapsed_s": round(time.perf_counter() - t_start, 1),
        }
        md = write(summary, rows, host)
        print(md)
        return 0 if summary["survived"] == summary["kill_points_tried"] else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write(summary: dict, rows: list[dict], host: str) -> str:
    """``reliability.json`` and ``.md``, both naming the machine (``host``: the CPU's model and flags),
    written atomically; returns the Markdown."""
    from nlsim.io.atomic import atomic_write_text

    RESULTS.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        RESULTS / "reliability.json",
        json.dumps({"machine": host, "summary": summary, "rows": rows}, indent=1),
    )
    cols = [
        "day",
        "stage",
        "killed",
        "state_usable",
        "last_report_intact",
        "runs_compared",
        "runs_equal",
        "items_lost",
        "survived",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in rows]
    md = (
        f"# Kill-point reliability of daily runs\n\n{host}\n\n"
        + "\n".join(f"- {k}: {v}" for k, v in summary.items())
        + "\n\n"
        + "\n".join(lines)
        + "\n"
    )
    atomic_write_text(RESULTS / "reliability.md", md)
    return md


if __name__ == "__main__":
    sys.exit(main())
