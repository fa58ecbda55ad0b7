"""The training loops' time estimate against the time they then took, on real training steps.

Fine-tunes the bi-encoder and the reranker's cross-encoder (the chain's loops,
:func:`nlsim.training.finetune`) on the annotated pairs, with every optimizer step's time recorded (the
clock's ``step`` is wrapped here; the loops are nlsim's own). For each loop it prints:

- the estimate the clock said (after its warm-up steps: :mod:`nlsim.training.clock`), the step time the
  loop then took, and the error;
- the estimate the clock said before the warm-up was left out (the mean of the first 8 steps, warm-up
  included), against the step time after that point, and its error;
- the first steps' times against the median step (how slow the warm-up is on this machine).

Step time leaves out the validation between epochs, as the estimate does. The chain's whole-run estimate
is measured by ``bench_pipeline.py`` (``--cold-only``: said against taken). The figures go to
``benchmarks/results/eta.json`` only when both loops ran and each clock said its estimate before its last
step; otherwise the run says which loop fell short, exits 1 and leaves the file as it was.

    python benchmarks/bench_eta.py --train-pairs 600 --epochs 2 --cross-encoder-epochs 2 --threads 2
    python benchmarks/bench_eta.py --avx2-only ...   # nlsim's choices and kernels as on an avx2-only CPU
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import positive

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
OLD_FIRST_STEPS = 8
"""The earlier clock: the rate of the first 8 steps, warm-up included."""


def instrument(loops: list[dict[str, Any]]) -> None:
    """Record every :class:`TrainingClock`'s step times (and its paused time) into ``loops``."""
    from nlsim.training.clock import TrainingClock

    init, step = TrainingClock.__init__, TrainingClock.step

    def timed_init(self: TrainingClock, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._bench = {"what": self.what, "total": self.total_steps, "t0": self.started, "steps": []}
        loops.append(self._bench)

    def timed_step(self: TrainingClock) -> None:
        step(self)
        self._bench["steps"].append((self.now(), self.paused))
        if self._rate_at is not None and "said" not in self._bench:
            self._bench["said"] = {
                "step": self.steps,
                "remaining_s": self._rate_at * (self.total_steps - self.steps),
                "warmup_steps": self.warmup_steps,
            }

    TrainingClock.__init__ = timed_init  # type: ignore[method-assign]
    TrainingClock.step = timed_step  # type: ignore[method-assign]


def busy_between(steps: list[tuple[float, float]], t0: float, i: int, j: int) -> float:
    """Step time (paused time left out) from after step ``i`` (0: the clock's start) to after step ``j``."""
    t_i, p_i = (t0, 0.0) if i == 0 else steps[i - 1]
    t_j, p_j = steps[j - 1]
    return (t_j - t_i) - (p_j - p_i)


def figures(loop: dict[str, Any]) -> dict[str, Any]:
    steps, t0, n = loop["steps"], loop["t0"], len(loop["steps"])
    if n == 0:
        return {"loop": loop["what"], "steps": 0}
    times = np.diff([t0] + [t for t, _ in steps])
    out: dict[str, Any] = {
        "loop": loop["what"],
        "steps": n,
        "median_step_s": round(float(np.median(times)), 3),
    }
    out["first_steps_s"] = [round(float(x), 2) for x in times[:6]]
    said = loop.get("said")
    if said and said["step"] < n:  # said at the last step: no time left to check it against
        actual = busy_between(steps, t0, said["step"], n)
        out.update(
            said_at_step=said["step"],
            said_remaining_s=round(said["remaining_s"], 1),
            actual_remaining_s=round(actual, 1),
            error=round(said["remaining_s"] / actual - 1, 3),
        )
    if n > OLD_FIRST_STEPS:
        rate = busy_between(steps, t0, 0, OLD_FIRST_STEPS) / OLD_FIRST_STEPS
        actual = busy_between(steps, t0, OLD_FIRST_STEPS, n)
        out.update(
            old_remaining_s=round(rate * (n - OLD_FIRST_STEPS), 1),
            old_actual_remaining_s=round(actual, 1),
            old_error=round(rate * (n - OLD_FIRST_STEPS) / actual - 1, 3),
        )
    return out


LOOPS = ("bi-encoder", "cross-encoder")
"""The training loops timed: the bi-encoder's and the reranker's cross-encoder's."""


def missing_figures(rows: list[dict[str, Any]]) -> list[str]:
    """Why the loops' figures cannot stand, one line each: a loop that never ran, one that ran no step, or
    one whose clock never said its estimate (too few steps after its warm-up); none when they all can."""
    ran = {row["loop"] for row in rows}
    why = [f"{what}: the loop never ran" for what in LOOPS if what not in ran]
    for row in rows:
        if not row["steps"]:
            why.append(f"{row['loop']}: no training step ran")
        elif "said_remaining_s" not in row:
            why.append(
                f"{row['loop']}: its clock never said an estimate in {row['steps']} steps (too few after the "
                "warm-up: train on more pairs or epochs)"
            )
    return why


def results_name(args: argparse.Namespace) -> str:
    """``eta_TAG``; untagged, ``eta`` (``eta_avx2`` with ``--avx2-only``: a CPU made to act as another never
    replaces this machine's own figures)."""
    return "eta" + (f"_{args.tag}" if args.tag else "_avx2" if args.avx2_only else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--pairs",
        default=str(PAIRS),
        help="the annotated pairs trained on (default: annotations/thucnews_tw_pairs.tsv)",
    )
    parser.add_argument(
        "--train-pairs", type=int, default=0, help="the first N training pairs (0, the default: all)"
    )
    parser.add_argument(
        "--model", default="multilingual-e5-small", help="the base model (default: multilingual-e5-small)"
    )
    parser.add_argument("--epochs", type=positive(), default=2, help="epochs of the bi-encoder (default: 2)")
    parser.add_argument(
        "--cross-encoder-epochs",
        type=positive(),
        default=3,
        help="epochs of the reranker's cross-encoder (default: 3)",
    )
    parser.add_argument(
        "--threads", type=positive(), default=None, help="torch CPU threads (default: torch's, every core)"
    )
    parser.add_argument("--avx2-only", action="store_true", help="as bench_pipeline.py --avx2-only")
    parser.add_argument(
        "--tag",
        default="",
        help="write benchmarks/results/eta_TAG.json (default: none, eta.json; with --avx2-only, "
        "eta_avx2.json)",
    )
    args = parser.parse_args(argv)
    if args.train_pairs < 0:  # head(-5) would train on all but the last 5
        parser.error(f"argument --train-pairs: {args.train_pairs} is below 0 (0: every training pair)")
    if args.avx2_only:  # before torch is imported: its kernels are chosen when it loads
        from bench_pipeline import AVX2_ONLY

        os.environ.update(AVX2_ONLY)
    from _common import RESULTS, machine

    from nlsim.io.atomic import atomic_write_text
    from nlsim.io.pairs import load_pairs
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.finetune import finetune

    pairs = load_pairs(args.pairs)
    if args.train_pairs:
        train = pairs[pairs["split"] == "train"].head(args.train_pairs)
        pairs = pd.concat([train, pairs[pairs["split"] != "train"]], ignore_index=True)
    loops: list[dict[str, Any]] = []
    instrument(loops)
    host = machine() + ("; avx2 choices forced" if args.avx2_only else "")
    print(f"machine: {host}")
    cfg = FinetuneConfig.of(
        model=args.model,
        out=None,
        epochs=args.epochs,
        cross_encoder_epochs=args.cross_encoder_epochs,
        fp32_epochs=args.epochs,  # the epochs asked on every CPU, the fp32 recipe's included
        fp32_cross_encoder_epochs=args.cross_encoder_epochs,
        threads=args.threads,
        eval_test=False,
        eval_before=False,
        precision_check=False,
        calibrate_level=None,
    )
    start = time.perf_counter()
    finetune(
        cfg, pairs=pairs, log=lambda line: print(f"[{time.perf_counter() - start:7.1f}] {line}", flush=True)
    )
    rows = [figures(loop) for loop in loops]
    print(json.dumps(rows, indent=2))
    name = results_name(args)
    why = missing_figures(rows)
    if why:  # the figures of an earlier run stay as they are
        raise SystemExit(f"bench_eta.py: {'; '.join(why)}; {name}.json not written")
    load = os.getloadavg()[0]
    result = {"machine": host, "load_average_at_end": round(load, 1), "args": vars(args), "loops": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULTS / f"{name}.json", json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
