"""The speed probe of a cold ``NLSIM_HOME``: its seconds, builds included, and each path's items a second.

The probe (``nlsim.inference.probe``) times each candidate inference path of a model architecture once per
CPU kind and thread count, on the model itself; its builds (the ONNX export and its int8 copy above all)
are part of its cost, and the runners it builds are the ones a quality check or a job then runs. This
script runs the whole probe of the bundled zero-shot e5 and of a cross-encoder built on it, each in a fresh
``NLSIM_HOME``, ``--repeats`` times, and prints the seconds and the items a second each path was timed at
(the ranks must not change from run to run).

    python benchmarks/bench_probe.py [--model multilingual-e5-small] [--repeats 2] [--threads 2]

Writes ``benchmarks/results/probe_<cpu family>_<avx2|bf16>.{json,md}`` (the CPU named in both); a run at
other settings than the defaults writes ``probe-<what differs>_<cpu family>_<avx2|bf16>`` beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import machine, machine_record, positive, print_table, sized_stem, write_results  # noqa: E402


def probe_once(target: Any, threads: int) -> tuple[float, dict[str, float]]:
    """Seconds of one whole probe of ``target`` (every CPU candidate path, builds included) in a fresh
    ``NLSIM_HOME``, and its rates."""
    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.paths import candidates
    from nlsim.inference.probe import probe_rates

    cpu = cpu_info()
    paths, _ = candidates("auto", "auto", cpu, onnx_ok=True)
    with tempfile.TemporaryDirectory(prefix="nlsim-probe-") as home:
        os.environ["NLSIM_HOME"] = home
        t = time.perf_counter()
        rates = probe_rates(target, paths, threads, cpu, {}, {})
        return time.perf_counter() - t, rates


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder probed (default: multilingual-e5-small)"
    )
    ap.add_argument(
        "--repeats", type=positive(), default=2, help="whole probes, each in a fresh NLSIM_HOME (default: 2)"
    )
    ap.add_argument("--threads", type=positive(), default=2, help="torch CPU threads (default: 2)")
    return ap


def name_of(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """``probe``, or ``probe`` with the settings that differ from the defaults (the committed figures')."""
    return sized_stem("probe", ap, args)


def main(argv: list[str] | None = None) -> None:
    ap = build_parser()
    args = ap.parse_args(argv)

    import torch

    from nlsim.encoders import load_encoder
    from nlsim.encoders.planner import encoder_target
    from nlsim.rerank.cross_encoder import CrossEncoder
    from nlsim.rerank.target import cross_encoder_target

    torch.set_num_threads(args.threads)
    targets = {
        "encoder": encoder_target(load_encoder(args.model, backend="torch")),
        "cross-encoder": cross_encoder_target(CrossEncoder.from_base(args.model)),
    }
    record: dict[str, Any] = {"machine": machine_record(), "threads": args.threads, "models": {}}
    rows = []
    for name, target in targets.items():
        runs: list[float] = []
        rates: list[dict[str, float]] = []
        for _ in range(args.repeats):
            seconds, got = probe_once(target, args.threads)
            runs.append(round(seconds, 1))
            rates.append({k: round(v, 1) for k, v in got.items()})
            print(f"{name}: {seconds:.1f} s, {rates[-1]}", flush=True)
        ranked = [sorted(r, key=r.get, reverse=True) for r in rates]
        rows.append(
            {
                "model": name,
                "probe seconds (median)": statistics.median(runs),
                "runs": ", ".join(f"{s:.1f}" for s in runs),
                "fastest first (each run)": " / ".join(" > ".join(r) for r in ranked),
            }
        )
        record["models"][name] = {"seconds": runs, "rates": rates}
    columns = ["model", "probe seconds (median)", "runs", "fastest first (each run)"]
    table = print_table(rows, columns)
    head = (
        f"# The probe on a cold NLSIM_HOME, builds included\n\n{machine()}; {args.threads} "
        f"torch threads; {args.model}; {args.repeats} runs each.\n\n"
    )
    write_results(name_of(ap, args), record, head + table)


if __name__ == "__main__":
    main()
