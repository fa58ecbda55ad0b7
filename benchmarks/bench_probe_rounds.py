"""The probe's ranking on a machine whose speed moves: paths timed back to back against in rounds.

The probe (``nlsim.inference.probe``) ranks a model's inference paths by items a second and caches the
ranking for every later run. It times each path back to back (``time_runner``: a warm-up pass, then up to
three timed passes, the best counting). Timing the paths side by side instead, in rounds (every path's
warm-up, then one timed pass of each path a round; :func:`time_in_rounds` here), spreads one path's passes
over the whole timing; tried and not kept (docs/experiments.md). This script builds the runners of every
CPU candidate path of the bundled zero-shot e5 once (as the probe does on a CPU with VNNI or bf16), ranks
them on a quiet machine both ways, then again ``--runs`` times each way, alternating, while
``--hogs`` processes hold the CPU in spells of random length at random times (``--spell``, ``--gap``: a
host whose speed moves, as a shared one does). It prints how often each way found the quiet ranking's
fastest path, how many of the rates it timed were within a fifth of the quiet ones, and each path's items
a second (median and range).

    python benchmarks/bench_probe_rounds.py [--runs 8] [--hogs 2] [--spell 2 6] [--gap 4 12] [--threads 2]

Writes ``benchmarks/results/probe_rounds_<cpu family>_<avx2|bf16>.{json,md}`` (the CPU named in both); a
run at other settings than the defaults writes ``probe_rounds-<what differs>_...`` beside them.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import machine, machine_record, positive, print_table, sized_stem, write_results  # noqa: E402


def spells(
    seed: int, length: tuple[float, float], gap: tuple[float, float], total: float
) -> list[tuple[float, float]]:
    """Spells ``(start, end)`` in seconds from the start, each lasting between the two ``length`` seconds,
    between the two ``gap`` seconds apart, drawn from ``seed``, for ``total`` seconds."""
    import random

    rng, t, out = random.Random(seed), 0.0, []
    while t < total:
        t += rng.uniform(*gap)
        out.append((t, t + rng.uniform(*length)))
        t = out[-1][1]
    return out


def hog(schedule: list[tuple[float, float]], t0: float, stop: Any) -> None:
    """Hold one CPU during each spell of ``schedule`` (seconds after ``t0`` by the wall clock, so that
    several hogs hold theirs together), until ``stop`` is set."""
    while not stop.is_set():
        now = time.time() - t0
        if any(a <= now < b for a, b in schedule):
            x = 0
            for i in range(20_000):
                x += i * i
        else:
            time.sleep(0.02)


def time_in_rounds(
    runs: dict[str, Callable[[Any], Any]], batches: list[Any], repeats: int = 3, enough_s: float = 2.0
) -> dict[str, float]:
    """Items a second of each of ``runs`` over ``batches``: every run's warm-up pass, then rounds in which
    each run still due makes one timed pass, in the same order every round; the best pass of each counts.
    A run is due until it has made ``repeats`` timed passes or they have lasted ``enough_s`` seconds (the
    probe's ``PROBE_REPEATS`` and ``PROBE_ENOUGH_S``)."""
    items = sum(int(b["input_ids"].shape[0]) for b in batches)
    for run in runs.values():
        for b in batches:
            run(b)
    best, spent, passes = dict.fromkeys(runs, float("inf")), dict.fromkeys(runs, 0.0), dict.fromkeys(runs, 0)
    due = list(runs)
    while due:
        for name in due:
            t = time.perf_counter()
            for b in batches:
                runs[name](b)
            took = time.perf_counter() - t
            best[name] = min(best[name], took)
            spent[name] += took
            passes[name] += 1
        due = [n for n in due if passes[n] < repeats and spent[n] < enough_s]
    return {name: items / took for name, took in best.items()}


def rank(rates: dict[str, float]) -> list[str]:
    return sorted(rates, key=lambda k: rates[k], reverse=True)


def said(rates: dict[str, float]) -> str:
    return " > ".join(f"{p} {rates[p]:.0f}" for p in rank(rates))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder ranked (default: multilingual-e5-small)"
    )
    ap.add_argument(
        "--runs", type=positive(), default=8, help="rankings each way under load, alternating (default: 8)"
    )
    ap.add_argument(
        "--hogs", type=int, default=2, help="processes that hold the CPU in spells meanwhile (default: 2)"
    )
    ap.add_argument(
        "--spell",
        type=float,
        nargs=2,
        default=(2.0, 6.0),
        help="a spell's seconds: least, most (default: 2 6)",
    )
    ap.add_argument(
        "--gap", type=float, nargs=2, default=(4.0, 12.0), help="seconds between spells (default: 4 12)"
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the spells' lengths and times (default: 0)")
    ap.add_argument("--threads", type=positive(), default=2, help="torch CPU threads (default: 2)")
    return ap


def name_of(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """``probe_rounds``, or ``probe_rounds`` with the settings that differ from the defaults."""
    return sized_stem("probe_rounds", ap, args)


def main(argv: list[str] | None = None) -> None:
    ap = build_parser()
    args = ap.parse_args(argv)

    import tempfile

    import torch

    from nlsim.encoders import load_encoder
    from nlsim.encoders.planner import encoder_target
    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.paths import candidates
    from nlsim.inference.probe import PROBE_ENOUGH_S, PROBE_REPEATS, time_runner

    torch.set_num_threads(args.threads)
    paths, _ = candidates("auto", "auto", cpu_info(), onnx_ok=True)
    timed = encoder_target(load_encoder(args.model, backend="torch"))  # from the home's model cache
    with tempfile.TemporaryDirectory(prefix="nlsim-probe-rounds-") as home:
        os.environ["NLSIM_HOME"] = home  # the model's ONNX exports go there, not into the real home
        batches, _ = timed.probe_batches()
        built = {p: timed.build(p, args.threads) for p in paths}
        runs = {p: (lambda b, r=r: timed.run(r, b)) for p, r in built.items()}

        def in_rounds() -> dict[str, float]:
            return time_in_rounds(runs, batches, PROBE_REPEATS, PROBE_ENOUGH_S)

        def back_to_back() -> dict[str, float]:
            return {p: time_runner(run, batches) for p, run in runs.items()}

        ways = {"back to back": back_to_back, "in rounds": in_rounds}
        quiet = {way: timing() for way, timing in ways.items()}
        for way, rates in quiet.items():
            print(f"quiet, {way}: {' > '.join(rank(rates))} { ({k: round(v) for k, v in rates.items()}) }")
        fastest = rank(quiet["back to back"])[0]
        stop = mp.Event()
        schedule = spells(args.seed, (args.spell[0], args.spell[1]), (args.gap[0], args.gap[1]), 3600.0)
        t0 = time.time()
        hogs = [mp.Process(target=hog, args=(schedule, t0, stop), daemon=True) for _ in range(args.hogs)]
        for h in hogs:
            h.start()
        moved: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
        try:
            for i in range(args.runs):
                for way, timing in ways.items() if i % 2 == 0 else reversed(list(ways.items())):
                    rates = timing()
                    moved[way].append({k: round(v, 1) for k, v in rates.items()})
                    print(f"run {i + 1}, {way}: {said(rates)}", flush=True)
        finally:
            stop.set()
            for h in hogs:
                h.join()
    rows = []
    for way in ways:
        found = sum(rank(r)[0] == fastest for r in moved[way])
        spread = {
            p: f"{statistics.median(r[p] for r in moved[way]):.0f} ({min(r[p] for r in moved[way]):.0f}-"
            f"{max(r[p] for r in moved[way]):.0f})"
            for p in paths
        }
        near = sum(abs(r[p] / quiet[way][p] - 1) <= 0.2 for r in moved[way] for p in paths)
        rows.append(
            {
                "timed": way,
                "quiet ranking": " > ".join(rank(quiet[way])),
                f"{fastest} first, host moving": f"{found} of {len(moved[way])}",
                "rates within a fifth of quiet": f"{near} of {len(moved[way]) * len(paths)}",
                **spread,
            }
        )
    columns = [
        "timed",
        "quiet ranking",
        f"{fastest} first, host moving",
        "rates within a fifth of quiet",
        *paths,
    ]
    table = print_table(rows, columns)
    record = {
        "machine": machine_record(),
        "threads": args.threads,
        "model": args.model,
        "hogs": {"processes": args.hogs, "spell_s": args.spell, "gap_s": args.gap, "seed": args.seed},
        "quiet": quiet,
        "moving": moved,
    }
    head = (
        "# The probe's ranking on a moving host: paths timed back to back (the probe) against in rounds\n\n"
        f"{machine()}; "
        f"{args.threads} torch threads; {args.model}, every CPU candidate path; {args.runs} "
        f"runs each way, alternating, while {args.hogs} processes held the CPU in spells of "
        f"{args.spell[0]:g}-{args.spell[1]:g} s, {args.gap[0]:g}-{args.gap[1]:g} s apart (drawn from seed "
        f"{args.seed}); items a second: median (range).\n\n"
    )
    write_results(name_of(ap, args), record, head + table)


if __name__ == "__main__":
    main()
