"""The story level's cluster-level F1 on validation against the story threshold, for one or more trainings.

Is the spread of the story F1 across trainings the threshold each training calibrates (on the pairs, by
cross-validated F1: :mod:`nlsim.evaluation.calibration`), or the models themselves? For each model store,
the report's candidate pairs are scored once down to ``--floor`` (``nlsim dedup --threshold FLOOR
--no-series-veto --cluster-rule components``, cached per model version in
``benchmarks/results/cache/stories/``); then, at the calibrated threshold plus each of ``--offsets``, the
story clusters are made as the report makes them (the support rule at 0.4 with the series veto, a cluster
of 5+ items held only by links 0.02 above the threshold between its halves) and judged on the 825
validation pairs: precision, recall and F1 at the cluster level (``nlsim judge``'s figures), the judged
pairs inside clusters of 5+ items and their purity. The best offset of each training is an oracle reading
of validation, not a method: where it lies, and how far it moves the F1, says how much of the spread a
better threshold could take. Figures go to ``benchmarks/results/story_threshold_TAG.md``/``.json``/``.png``.
The test split is never read.

    python benchmarks/bench_story_threshold.py --model-store STORE [--model-store STORE ...]
        [--floor 0.80] [--offsets -0.04:0.04:0.005] [--tag NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import (
    RESULTS,
    check_model_stores,
    machine,
    numbers,
    run_nlsim,
    save_figure,
)
from bench_cluster_rule import read_scores
from bench_stories import CACHE, CORPUS, ROOT, Model, judge, links_of, model_of

from nlsim.clusters.rules import DEFAULT_LARGE, DEFAULT_LARGE_MARGIN, SharedSupport
from nlsim.io.atomic import (
    atomic_write_parquet,
    atomic_write_text,  # noqa: E402
)


def floor_scores(model: Model, floor: float) -> pd.DataFrame:
    """Every candidate pair scoring ``floor`` or more (no veto, components; the ``vetoed`` flag kept)."""
    cache = CACHE / f"{model.version}-{model.trained}-floor{floor:.6f}.parquet"
    if not cache.exists():
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "nlsim", "dedup", "--corpus", str(CORPUS), "--out", f"{tmp}/r"]
            cmd += ["--model", "current", "--model-store", str(model.store), "--threshold", str(floor)]
            cmd += ["--no-series-veto", "--cluster-rule", "components", "--near-misses", "0", "--no-topics"]
            run_nlsim([*cmd, "--no-progress"], ROOT)
            atomic_write_parquet(pd.read_parquet(f"{tmp}/r/pairs.parquet"), cache)  # whole or not at all
    return read_scores(cache)


def sweep(model: Model, scores: pd.DataFrame, offsets: list[float]) -> list[dict[str, Any]]:
    """The default story clusters at the calibrated threshold plus each offset, judged on validation."""
    rows = []
    for offset in offsets:
        t = model.threshold + offset
        links = links_of(scores[(scores["score"] >= t) & ~scores["vetoed"]])
        rule = SharedSupport(min_share=0.4, large=DEFAULT_LARGE, large_floor=t + DEFAULT_LARGE_MARGIN)
        got = judge(rule.clusters(links, None), model.validation)
        rows.append({"offset": round(offset, 4), "threshold": round(t, 6), **got})
    return rows


def parse_offsets(parser: argparse.ArgumentParser, text: str) -> list[float]:
    """``lo:hi:step`` (both ends included) or a comma list."""
    if ":" in text:
        try:
            lo, hi, step = (float(x) for x in text.split(":"))
        except ValueError:
            parser.error(f"argument --offsets: {text!r} is not lo:hi:step (three numbers) or a comma list")
        if step <= 0 or hi < lo:
            parser.error(f"argument --offsets: {text!r}: the step must be above 0 and hi at least lo")
        return [round(float(x), 4) + 0.0 for x in np.arange(lo, hi + step / 2, step)]  # no -0.0
    return numbers(parser, "--offsets", text)


def markdown(payload: dict[str, Any]) -> str:
    lines = ["# The story F1 against the story threshold", "", payload["machine"], ""]
    lines += ["| training | calibrated threshold | F1 there | best offset | its F1 | F1 over the offsets |"]
    lines += ["|---|---:|---:|---:|---:|---|"]
    for run in payload["runs"]:
        rows = run["rows"]
        at = next(r for r in rows if r["offset"] == 0)
        best = max(rows, key=lambda r: (r["f1"], -abs(r["offset"])))
        lo, hi = min(r["f1"] for r in rows), max(r["f1"] for r in rows)
        lines.append(
            f"| {run['version']} | {run['threshold']:.6f} | {at['f1']:.3f} | {best['offset']:+.3f} | "
            f"{best['f1']:.3f} | {lo:.3f}–{hi:.3f} |"
        )
    calibrated = [next(r for r in run["rows"] if r["offset"] == 0)["f1"] for run in payload["runs"]]
    oracle = [max(r["f1"] for r in run["rows"]) for run in payload["runs"]]
    lines += [
        "",
        "Spread (highest less lowest) at the calibrated thresholds: "
        f"{max(calibrated) - min(calibrated):.3f}; at each training's best offset: "
        f"{max(oracle) - min(oracle):.3f}.",
        "",
        "| training | offset | threshold | P | R | F1 | judged in 5+ | 5+ purity |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in payload["runs"]:
        for r in run["rows"]:
            purity = "" if r["purity_5+"] is None else f"{r['purity_5+']:.2f}"
            lines.append(
                f"| {run['version']} | {r['offset']:+.3f} | {r['threshold']:.4f} | {r['precision']:.3f} | "
                f"{r['recall']:.3f} | {r['f1']:.3f} | {r['n_5+']} | {purity} |"
            )
    return "\n".join(lines) + "\n"


def plot(payload: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in payload["runs"]:
        rows = run["rows"]
        ax.plot([r["offset"] for r in rows], [r["f1"] for r in rows], marker="o", ms=3, label=run["version"])
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("story threshold less the calibrated one")
    ax.set_ylabel("cluster-level F1 on validation")
    ax.set_title("The story F1 against the story threshold")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model-store",
        action="append",
        required=True,
        type=Path,
        help="a model store whose current model's story threshold is swept (repeatable)",
    )
    ap.add_argument("--floor", type=float, default=0.80, help="the lowest rerank score scored (default 0.80)")
    ap.add_argument(
        "--offsets",
        default="-0.04:0.04:0.005",
        help="moves of the threshold: lo:hi:step or a comma list (default: -0.04:0.04:0.005)",
    )
    ap.add_argument(
        "--tag", default="", help="write story_threshold_TAG.md/.json/.png (default: none, story_threshold.*)"
    )
    args = ap.parse_args(argv)
    offsets = parse_offsets(ap, args.offsets)
    check_model_stores(ap, args.model_store)
    if 0.0 not in offsets:
        offsets = sorted([*offsets, 0.0])
    runs = []
    for store in args.model_store:
        model = model_of(store)
        if model.threshold + min(offsets) < args.floor:
            ap.error(
                f"{store}: threshold {model.threshold:.4f}{min(offsets):+} is below --floor {args.floor}"
            )
        rows = sweep(model, floor_scores(model, args.floor), offsets)
        run = {"store": str(store), "version": model.version, "threshold": model.threshold, "rows": rows}
        runs.append(run)
        print(f"{model.version}: F1 {[r['f1'] for r in rows]}", flush=True)
    payload = {"machine": machine(), "floor": args.floor, "runs": runs}
    out = RESULTS / f"story_threshold{'_' + args.tag if args.tag else ''}"
    atomic_write_text(out.with_suffix(".json"), json.dumps(payload, indent=1, default=str))
    atomic_write_text(out.with_suffix(".md"), markdown(payload))
    plot(payload, out.with_suffix(".png"))
    print(markdown(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
