"""Inference in lanes against one pass on every thread: the corpus embedded and pairs read by the
cross-encoder, both layouts in one process, alternating, on the bundled THUCNews titles.

``nlsim.encoders.lanes`` runs an inference job's batches in lanes of one torch thread each on a CPU with
two threads or more, in place of one pass on every thread (the plain loop, one lane). Each layout runs
``--repeats`` times, alternating (the host's hour moves both alike); the median throughput is reported,
with the largest difference between the two layouts' outputs (bit-identical on the machines measured so
far: a batch on one thread sums as on two).

    python benchmarks/bench_lanes.py [--model multilingual-e5-small] [--texts 2000] [--pairs 1000]
        [--repeats 3] [--threads 2]

Writes ``benchmarks/results/lanes_<cpu family>_<avx2|bf16>.{json,md}`` (the CPU named in both); a run at
other sizes or settings than the defaults (those of the committed figures) writes
``lanes-<what differs>_<cpu family>_<avx2|bf16>`` beside them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import machine, machine_record, positive, print_table, sized_stem, write_results  # noqa: E402


def measure(job: Any, n: int, layouts: list[int], repeats: int) -> tuple[dict[int, list[float]], float]:
    """Each layout's throughputs (items a second) over ``repeats`` alternating runs of ``job()``, and the
    largest difference between the layouts' outputs."""
    import numpy as np

    from nlsim.encoders import lanes

    rates: dict[int, list[float]] = {k: [] for k in layouts}
    outputs: dict[int, Any] = {}
    for _ in range(repeats):
        for k in layouts:
            with lanes.forced(k):
                start = time.perf_counter()
                outputs[k] = job()
                rates[k].append(n / (time.perf_counter() - start))
    first = outputs[layouts[0]]
    diff = max(float(np.abs(np.asarray(outputs[k]) - np.asarray(first)).max()) for k in layouts)
    return rates, diff


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder (default: multilingual-e5-small)"
    )
    parser.add_argument(
        "--texts", type=positive(), default=2000, help="titles embedded per run (default: 2000)"
    )
    parser.add_argument(
        "--pairs", type=positive(), default=1000, help="pairs read (one order) per run (default: 1000)"
    )
    parser.add_argument(
        "--repeats", type=positive(), default=3, help="runs of each layout, alternating (default: 3)"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0, the default: torch's)")
    return parser


def name_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """``lanes``, or ``lanes`` with the sizes or settings that differ from the defaults: a quick run at fewer
    texts, pairs or repeats writes beside the committed figures, never over them."""
    return sized_stem("lanes", parser, args)


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)

    import pandas as pd
    import torch

    from nlsim.encoders import load_encoder
    from nlsim.rerank.cross_encoder import CrossEncoder

    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    layouts = sorted({1, threads})
    print(machine())
    titles = pd.read_parquet(ROOT / "data" / "thucnews.parquet")["title"].astype(str).tolist()
    texts = titles[: args.texts]
    first, second = titles[: args.pairs], titles[args.pairs : 2 * args.pairs]
    enc = load_encoder(args.model, backend="torch")
    ce = CrossEncoder.from_base(args.model, 128, None, device="cpu")  # its head untrained: the cost only
    enc.encode(texts[:128], progress=False)  # warm-up: kernels set up, pages touched
    ce.read(first[:128], second[:128])
    rows = []
    record: dict[str, Any] = {"machine": machine_record(), "threads": threads, "jobs": {}}
    jobs = {
        f"embed {len(texts):,} titles ({args.model})": (
            lambda: enc.encode(texts, progress=False),
            len(texts),
        ),
        f"cross-encoder: read {len(first):,} pairs": (lambda: ce.read(first, second), len(first)),
    }
    for name, (job, n) in jobs.items():
        rates, diff = measure(job, n, layouts, args.repeats)
        medians = {k: statistics.median(v) for k, v in rates.items()}
        for k in layouts:
            layout = f"{k} lanes of 1 thread" if k > 1 else f"one pass on {threads} thread(s)"
            rows.append({"job": name, "layout": layout, "per second (median)": medians[k]})
        gain = medians[threads] / medians[1] - 1 if threads > 1 else 0.0
        rows.append({"job": name, "layout": "lanes' gain", "per second (median)": f"{gain:+.0%}"})
        record["jobs"][name] = {"rates": rates, "median": medians, "gain": gain, "max_abs_diff": diff}
        print(f"{name}: largest difference between the layouts' outputs {diff:.2g}", flush=True)
    table = print_table(rows, ["job", "layout", "per second (median)"])
    head = (
        f"# Inference in lanes\n\n{machine()}; {threads} torch threads; {args.repeats} runs each, "
        "alternating.\n\n"
    )
    diffs = "\n".join(
        f"- {k}: largest output difference {v['max_abs_diff']:.2g}" for k, v in record["jobs"].items()
    )
    write_results(name_of(parser, args), record, head + table + "\n\n" + diffs)


if __name__ == "__main__":
    main()
