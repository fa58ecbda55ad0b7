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
``.md`` (``pipeline_TAG`` with ``--tag``; a shorter chain, ``--train-pairs``, ``--epochs`` or
``--cross-encoder-epochs``, or another ``--threads``, without a tag, ``pipeline-<what differs>``).
Targets: the promoted model's report, judged at the cluster level, same-story F1 >= 0.78 at precision
>= 0.80 (what two editors reach with each other); cold <= 20 min and warm <= 2 min on 2 cores.

The cold run's log is kept line by line with the second each line came (``bench.log``), from which the
script also prints when the first (zero-shot) report was ready, and the chain's estimate of the time left
(said once, after the bi-encoder's warm-up steps) against the time the rest of the chain then took.
``--avx2-only`` makes nlsim choose as on a CPU with avx2 and FMA only (``NLSIM_CPU_FLAGS``) and caps
the kernels of oneDNN, torch and MKL at AVX2 (``ONEDNN_MAX_CPU_ISA``, ``ATEN_CPU_CAPABILITY``,
``MKL_ENABLE_INSTRUCTIONS``); ONNX Runtime's own kernels still use what the CPU has. ``--no-amx`` makes
a CPU with AMX choose and compute as one with avx512_bf16 and no AMX (an AMD EPYC of the Zen 4 kind): its
flags without ``amx_*`` and oneDNN's kernels capped at ``AVX512_CORE_BF16``; ONNX Runtime's own kernels
still use what the CPU has, AMX included (its int8 matrix products: the onnx-int8 paths' speed is AMX's).

    python benchmarks/bench_pipeline.py                  # cold, warm, zero-shot
    python benchmarks/bench_pipeline.py --skip-cold --work /tmp/nlsim-bench   # warm + zero-shot on a kept run
    python benchmarks/bench_pipeline.py --avx2-only --cold-only --threads 2   # the cold chain, avx2 choices
    python benchmarks/bench_pipeline.py --no-amx --cold-only   # as on avx512_bf16 without AMX
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import RESULTS, machine, print_table, sized_stem

from nlsim.inference.cpu import cpu_info
from nlsim.io.atomic import atomic_write_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
CORPUS = ROOT / "data" / "thucnews.parquet"


AVX2_ONLY = {
    "NLSIM_CPU_FLAGS": "avx avx2 fma",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}
"""What ``--avx2-only`` sets: nlsim's choices and the kernels of oneDNN, torch and MKL as on an avx2 CPU."""


def no_amx(flags: frozenset[str]) -> dict[str, str]:
    """What ``--no-amx`` sets on a CPU with these ``/proc/cpuinfo`` flags: nlsim's choices and oneDNN's
    kernels as on this CPU without its AMX units (a CPU with avx512_bf16 and no AMX). A CPU without AMX is
    refused (``ValueError``): there would be nothing to take away.

    Example:
        >>> no_amx(frozenset({"avx2", "avx512_bf16", "amx_tile", "amx_bf16"}))["NLSIM_CPU_FLAGS"]
        'avx2 avx512_bf16'
    """
    if not any(f.startswith("amx") for f in flags):
        raise ValueError("--no-amx: this CPU has no AMX to take away; measure it without the option")
    kept = " ".join(sorted(f for f in flags if not f.startswith("amx")))
    return {"NLSIM_CPU_FLAGS": kept, "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}


def nlsim(
    args: list[str], env: dict[str, str], log: Path, timeline: list[tuple[float, str]] | None = None
) -> float:
    """Run ``python -m nlsim ARGS``; returns its wall seconds (output appended to ``log``, each line with
    the seconds since the start; ``timeline`` gets the same ``(seconds, line)``)."""
    start = time.perf_counter()
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"\n$ nlsim {' '.join(args)}\n")
        fh.flush()
        proc = subprocess.Popen(
            [sys.executable, "-m", "nlsim", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            t = time.perf_counter() - start
            fh.write(f"[{t:7.1f}] {line}")
            fh.flush()
            if timeline is not None:
                timeline.append((t, line.rstrip("\n")))
        proc.wait()
    if proc.returncode != 0:
        sys.exit(f"nlsim {' '.join(args)} failed (exit {proc.returncode}); see {log}")
    return time.perf_counter() - start


def clock_seconds(text: str) -> float:
    """The seconds of a time as nlsim prints it (``42 s``, ``3 min 05 s``, ``1 h 02 min``)."""
    m = re.fullmatch(r"(?:(\d+) h )?(?:(\d+) min)?(?: ?(\d+) s)?", text.strip())
    if m is None:
        raise ValueError(f"not a time nlsim prints: {text!r}")
    h, mi, se = (int(x) if x else 0 for x in m.groups())
    return 3600 * h + 60 * mi + se


def timeline_figures(timeline: list[tuple[float, str]], total: float) -> dict[str, float | None]:
    """From a cold chain's lines: when the first report was ready, and the chain's estimate of the time
    left (said once, after the bi-encoder's warm-up) against the time the chain then took to its end."""
    first = next((t for t, line in timeline if "first report ready in" in line), None)
    said = next(((t, line) for t, line in timeline if "estimated time on this machine: about" in line), None)
    out: dict[str, float | None] = {"first_report_ready_s": None if first is None else round(first, 1)}
    if said is not None:
        m = re.search(r"about (.+?) more", said[1])
        predicted = clock_seconds(m.group(1)) if m else None
        actual = total - said[0]
        out.update(
            eta_said_at_s=round(said[0], 1),
            eta_predicted_s=predicted,
            eta_actual_s=round(actual, 1),
            eta_error=None if predicted is None else round(predicted / actual - 1, 3),
        )
    return out


class LoadWatch:
    """The machine's 1-minute load average, sampled every 15 s while a run goes (others' work shows)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(15.0):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def summary(self) -> dict[str, float | None]:
        if not self.samples:
            return {"load_mean": None, "load_max": None}
        return {
            "load_mean": round(sum(self.samples) / len(self.samples), 1),
            "load_max": round(max(self.samples), 1),
        }


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


def cold_markdown(host: str, runs: list[dict], cold: dict[str, float | None], record: dict) -> str:
    """The ``--cold-only`` result as a page: stage seconds, first report, estimate, load, quality."""
    stages = [k for k in runs[0] if k not in ("run", "seconds")]
    lines = [
        "# The cold chain (`python benchmarks/bench_pipeline.py --cold-only`)",
        "",
        f"Machine: {host}",
        "",
        print_table(runs, ["run", "seconds", *stages]),
        "",
        ", ".join(f"{k} {v}" for k, v in cold.items()),
        "",
    ]
    base = record.get("baseline") or {}
    rows = [("zero-shot baseline", base)] + [
        (f"{name} {record[name]['version']}", (record[name] or {}).get("validation") or {})
        for name in ("candidate", "current")
        if record.get(name)
    ]
    lines += ["| model | validation Spearman | threshold | same-story P / R / F1 [95%] | F1 out of fold |"]
    lines += ["|---|---:|---:|---:|---:|"]
    for name, v in rows:  # the interval as the chain's before/after table gives it (cv_f1_ci95)
        if v:
            lines.append(
                f"| {name} | {v.get('spearman')} | {v.get('threshold')} | {v.get('precision')} / "
                f"{v.get('recall')} / {v.get('f1')} {v.get('cv_f1_ci95') or ''} | {v.get('cv_f1')} |"
            )
    j = record.get("judge") or {}
    if j:
        lines += [
            "",
            f"The report judged at the cluster level on {j.get('judged_pairs')} validation pairs "
            f"({j.get('same_story_pairs')} same story): P {j.get('precision')} R {j.get('recall')} "
            f"F1 {j.get('f1')} {j.get('f1_ci95')}",
        ]
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--work", default=None, help="folder for the store, reports and NLSIM_HOME (default: new)"
    )
    parser.add_argument("--skip-cold", action="store_true", help="reuse a cold run already in --work")
    parser.add_argument(
        "--threads", type=int, default=None, help="the chain's --threads (default: nlsim's, every core)"
    )
    parser.add_argument(
        "--avx2-only", action="store_true", help="choose and compute as on a CPU with avx2 only (above)"
    )
    parser.add_argument(
        "--no-amx",
        action="store_true",
        help="choose and compute as on this CPU without AMX: avx512_bf16 alone (above)",
    )
    parser.add_argument("--cold-only", action="store_true", help="the cold run only (no warm, no zero-shot)")
    parser.add_argument(
        "--tag", default="", help="suffix of the results' file names: pipeline_TAG.* (default: none)"
    )
    parser.add_argument(
        "--train-pairs",
        type=int,
        default=0,
        help="a shorter chain: the first N training pairs only (0, the default: all)",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="the bi-encoder's epochs on any CPU, the fp32 recipe's included (default: nlsim's)",
    )
    parser.add_argument(
        "--cross-encoder-epochs",
        type=int,
        default=None,
        help="the cross-encoder's epochs on any CPU, the fp32 recipe's included (default: nlsim's)",
    )
    return parser


def results_name(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """``pipeline[_cold]_TAG``; without ``--tag``, ``pipeline[_cold]`` (then ``_avx2`` or ``_no_amx`` for a
    CPU made to act as another) followed by the shorter chain's options that differ from the defaults: a
    short chain, or one on a CPU acting as another, never replaces the committed figures of the whole one."""
    stem = "pipeline_cold" if args.cold_only else "pipeline"
    if args.tag:
        return f"{stem}_{args.tag}"
    stem += "_avx2" if args.avx2_only else "_no_amx" if args.no_amx else ""
    # the cold run alone and the CPU acted as are named above; where the chain works names no figures
    return sized_stem(
        stem, parser, args, besides=["work", "skip_cold", "avx2_only", "no_amx", "cold_only", "tag"]
    )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    name = results_name(parser, args)
    if args.avx2_only and args.no_amx:
        parser.error("--avx2-only and --no-amx are two machines: give one")
    if args.skip_cold and args.cold_only:
        parser.error("--skip-cold with --cold-only leaves nothing to run: give one")
    try:
        forced = no_amx(frozenset(cpu_info().flags)) if args.no_amx else {}
    except ValueError as exc:  # a bad argument for this CPU: exit 2, in one line, as the others
        parser.error(str(exc))
    work = Path(args.work or tempfile.mkdtemp(prefix="nlsim-bench-pipeline-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "NLSIM_HOME": str(work / "home"),
        "NLSIM_PROGRESS": "lines",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PYTHONUNBUFFERED": "1",  # each line as it comes (the cold run's log is timed line by line)
        **(AVX2_ONLY if args.avx2_only else {}),
        **forced,
    }
    pairs = PAIRS
    if args.train_pairs:  # the other splits whole: the report is judged as usual
        import pandas as pd

        table = pd.read_csv(PAIRS, sep="\t", dtype=str, keep_default_na=False)
        train = table[table["split"] == "train"].head(args.train_pairs)
        pairs = work / f"pairs-{args.train_pairs}-train.tsv"
        pd.concat([train, table[table["split"] != "train"]]).to_csv(pairs, sep="\t", index=False)
    chain = [
        "pipeline",
        "--pairs",
        str(pairs),
        "--corpus",
        str(CORPUS),
        "--out",
        str(work / "report"),
        "--model-store",
        str(work / "models"),
    ] + (["--threads", str(args.threads)] if args.threads else [])
    for flag, value in (("epochs", args.epochs), ("cross-encoder-epochs", args.cross_encoder_epochs)):
        chain += [f"--{flag}", str(value), f"--fp32-{flag}", str(value)] if value else []
    log = work / "bench.log"
    host = machine()
    if args.avx2_only:
        host += "; avx2 choices forced (" + " ".join(f"{k}={v}" for k, v in AVX2_ONLY.items()) + ")"
    if forced:
        host += "; AMX taken away (NLSIM_CPU_FLAGS without amx_*, ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16)"
    print(f"machine: {host}\nwork folder: {work} (log {log})")
    runs = []
    cold_figures: dict[str, float | None] = {}
    if not args.skip_cold:
        timeline: list[tuple[float, str]] = []
        with LoadWatch() as load:
            cold = nlsim(chain, env, log, timeline)
        record = json.loads((work / "report" / "pipeline.json").read_text())
        runs.append({"run": "cold", "seconds": round(cold, 1), **record["timings_s"]})
        cold_figures = {**timeline_figures(timeline, cold), **load.summary()}
        print(f"cold: {cold:.0f} s; " + ", ".join(f"{k} {v}" for k, v in cold_figures.items()))
        for model in ("candidate", "current"):  # not ``name``: the results' file name
            v = (record.get(model) or {}).get("validation") or {}
            if v:
                print(
                    f"{model} {record[model]['version']}: validation Spearman {v.get('spearman'):.2f}, "
                    f"same-story F1 {v.get('f1'):.3f} {v.get('f1_ci95') or ''}, cross-validated "
                    f"{v.get('cv_f1')} {v.get('cv_f1_ci95') or ''}"
                )
        if record.get("judge"):
            j = record["judge"]
            print(f"report judged: P {j['precision']} R {j['recall']} F1 {j['f1']} {j.get('f1_ci95')}")
    if args.cold_only:
        result = {"machine": host, "runs": runs, "cold": cold_figures, "work": str(work), "record": record}
        RESULTS.mkdir(parents=True, exist_ok=True)
        atomic_write_text(RESULTS / f"{name}.json", json.dumps(result, indent=2, default=str))
        atomic_write_text(RESULTS / f"{name}.md", cold_markdown(host, runs, cold_figures, record))
        return 0
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
        "cold": cold_figures,
        "judge": judged,
        "zero_shot_dedup_s": round(zero, 1),
        "decision": record["decision"],
        "before_after": record.get("baseline"),
        "work": str(work),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULTS / f"{name}.json", json.dumps(result, indent=2, default=str))
    atomic_write_text(
        RESULTS / f"{name}.md",
        f"# The chain (`python benchmarks/bench_pipeline.py`)\n\nMachine: {host}\n\n{table1}\n\n"
        f"Same story on the validation pairs, at the cluster level (`nlsim judge`):\n\n{table2}\n",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
