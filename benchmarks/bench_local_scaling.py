"""Story links read against each item's neighbourhood: do dense topics make impure large stories?

Inside an exam year, a saga or one product's promotions every item has many neighbours that the rerank
score reads as one story, and the story clusters of 5+ items that hold them are the impure ones. Two
readings of the scores that look at each item's neighbourhood are measured here against the report's
(the rerank score at its calibrated threshold), on the same candidate pairs:

- **local scaling** (``--ks``, ``--alphas``; the CSLS of cross-lingual word retrieval, on the rerank
  score): each item's density ``r`` is the mean of its ``k`` highest rerank scores among the candidate
  pairs scored down to ``--floor`` (the floor for each one it lacks), and a pair's score becomes
  ``s - alpha * ((r_a + r_b) / 2 - median r)``. Its story threshold is calibrated again on the validation
  pairs' scores read the same way, as the chain calibrates the rerank score (cross-validated F1 at the
  same-story level);
- **mutual neighbours** (``--mutual``): a link only between two items that are each among the other's
  ``m`` highest-scoring candidates, at the calibrated threshold.

Each variant's story clusters are made as the report makes them (the support rule at 0.4 with the series
veto, a cluster of 5+ items held only by links 0.02 above its threshold between its halves) and judged on
the 825 validation pairs: cluster-level precision, recall and F1 (``nlsim judge``'s figures) and the
judged pairs inside clusters of 5+ and 3+ items with their purity. Folds: the variant is chosen on four
folds as ``bench_stories.py`` chooses (the best F1 among those whose 5+ purity reaches 0.80; where none
does, the purest at 5+ within 0.01 F1 of the report's) and judged on the fifth. The candidate pairs come
from ``nlsim dedup --threshold FLOOR --no-series-veto --cluster-rule components`` of each model, cached as
``bench_story_threshold.py`` caches them. Figures go to ``benchmarks/results/local_scaling_TAG.md``/
``.json``/``.png``. The test split is never read.

    python benchmarks/bench_local_scaling.py --model-store STORE [--model-store STORE ...]
        [--floor 0.78] [--ks 5,10] [--alphas 0.25,0.5] [--mutual 5,7] [--tag NAME]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import (
    RESULTS,
    check_model_stores,
    machine,
    numbers,
    save_figure,
)
from bench_stories import STORY, Model, folds, judge, links_of, model_of
from bench_story_threshold import floor_scores

from nlsim.clusters.rules import DEFAULT_LARGE, DEFAULT_LARGE_MARGIN, SharedSupport
from nlsim.evaluation.calibration import calibrate_scores
from nlsim.io.atomic import atomic_write_text  # noqa: E402

REPORT = "report (rerank score)"


def ends(scores: pd.DataFrame) -> pd.DataFrame:
    """Each scored pair twice, once from each end (``id``, ``other``, ``score``)."""
    a = scores[["id_a", "id_b", "score"]].set_axis(["id", "other", "score"], axis=1)
    b = scores[["id_b", "id_a", "score"]].set_axis(["id", "other", "score"], axis=1)
    return pd.concat([a, b], ignore_index=True)


def densities(scores: pd.DataFrame, k: int, floor: float) -> dict[str, float]:
    """Each item's mean of its ``k`` highest scores (``floor`` for each one it lacks)."""
    both = ends(scores).sort_values("score", ascending=False)
    top = both.groupby("id", sort=False).head(k)
    total = top.groupby("id")["score"].agg(["sum", "count"])
    return ((total["sum"] + (k - total["count"]) * floor) / k).to_dict()


def scaled(
    frame: pd.DataFrame, column: str, dens: dict[str, float], alpha: float, centre: float, floor: float
):
    ra = frame["id_a"].map(dens).fillna(floor).to_numpy()
    rb = frame["id_b"].map(dens).fillna(floor).to_numpy()
    return frame[column].to_numpy() - alpha * ((ra + rb) / 2 - centre)


def stories(scores: pd.DataFrame, threshold: float) -> list[list[str]]:
    """The report's story clusters of ``scores`` at ``threshold``."""
    links = links_of(scores[(scores["score"] >= threshold) & ~scores["vetoed"]])
    rule = SharedSupport(min_share=0.4, large=DEFAULT_LARGE, large_floor=threshold + DEFAULT_LARGE_MARGIN)
    return rule.clusters(links, None)


def variants(
    model: Model, scores: pd.DataFrame, floor: float, ks: list[int], alphas: list[float], mutual: list[int]
) -> tuple[list[dict[str, Any]], dict[str, list[list[str]]]]:
    """Each variant's threshold, its story clusters and their judgement on validation."""
    val = model.validation
    rows: list[dict[str, Any]] = []
    kept: dict[str, list[list[str]]] = {}

    def add(name: str, groups: list[list[str]], threshold: float, cv_f1: float | None) -> None:
        kept[name] = groups
        got = judge(groups, val)
        rows.append({"variant": name, "threshold": round(threshold, 6), "cv_f1": cv_f1, **got})
        print(f"{model.version} {name}: F1 {got['f1']}, 5+ {got['purity_5+']} ({got['n_5+']})", flush=True)

    add(REPORT, stories(scores, model.threshold), model.threshold, None)
    for k in ks:
        dens = densities(scores, k, floor)
        centre = float(np.median(list(dens.values())))
        for alpha in alphas:
            cal = calibrate_scores(
                scaled(val, "rerank", dens, alpha, centre, floor), val["score"].to_numpy(), level=STORY
            )
            moved = scores.assign(score=scaled(scores, "score", dens, alpha, centre, floor))
            add(f"local scaling k={k} alpha={alpha}", stories(moved, cal.threshold), cal.threshold, cal.cv_f1)
    if mutual:
        both = ends(scores)
        both["rank"] = both.groupby("id")["score"].rank(ascending=False, method="first")
        rank = dict(zip(zip(both["id"], both["other"], strict=True), both["rank"], strict=True))
        worse = np.array(
            [max(rank[(a, b)], rank[(b, a)]) for a, b in zip(scores["id_a"], scores["id_b"], strict=True)]
        )
        for m in mutual:
            add(f"mutual top {m}", stories(scores[worse <= m], model.threshold), model.threshold, None)
    return rows, kept


def markdown(payload: dict[str, Any]) -> str:
    lines = ["# Story links read against each item's neighbourhood", "", payload["machine"], ""]
    lines += [
        f"Candidate pairs scored down to {payload['floor']}; 825 validation pairs; test never read.",
        "",
    ]
    for run in payload["runs"]:
        lines += [f"## {run['version']} ({run['store']})", ""]
        lines += ["| variant | threshold | P | R | F1 | largest | 5+ purity (judged) | 3+ purity (judged) |"]
        lines += ["|---|---:|---:|---:|---:|---:|---|---|"]
        for r in run["rows"]:
            p5 = "—" if r["purity_5+"] is None else f"{r['purity_5+']:.2f}"
            p3 = "—" if r["purity_3+"] is None else f"{r['purity_3+']:.2f}"
            lines.append(
                f"| {r['variant']} | {r['threshold']:.4f} | {r['precision']:.3f} | {r['recall']:.3f} | "
                f"**{r['f1']:.3f}** | {r['largest']} | {p5} ({r['n_5+']}) | {p3} ({r['n_3+']}) |"
            )
        f = run["folds"]
        lines += [
            "",
            f"Chosen on four folds, judged on the fifth: P {f['precision']}, R {f['recall']}, F1 {f['f1']}, "
            f"5+ purity {f['purity_5+']} ({f['n_5+']} judged); chosen: {', '.join(f['chosen'])}.",
            "",
        ]
    names = [r["variant"] for r in payload["runs"][0]["rows"]]
    lines += ["## Over the trainings", "", "| variant | mean F1 | spread | mean 5+ purity | judged in 5+ |"]
    lines += ["|---|---:|---:|---:|---|"]
    for name in names:
        got = [next(r for r in run["rows"] if r["variant"] == name) for run in payload["runs"]]
        f1 = [r["f1"] for r in got]
        pure = [r["purity_5+"] for r in got if r["purity_5+"] is not None]
        mean_pure = f"{np.mean(pure):.2f}" if pure else "—"
        lines.append(
            f"| {name} | {np.mean(f1):.3f} | {max(f1) - min(f1):.3f} | {mean_pure} | "
            f"{', '.join(str(r['n_5+']) for r in got)} |"
        )
    return "\n".join(lines) + "\n"


def plot(payload: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for run, marker in zip(payload["runs"], "osD^v", strict=False):
        rows = [r for r in run["rows"] if r["purity_5+"] is not None]
        ax.scatter(
            [r["f1"] for r in rows], [r["purity_5+"] for r in rows], marker=marker, label=run["version"]
        )
        base = run["rows"][0]
        if base["purity_5+"] is not None:
            ax.scatter(
                [base["f1"]], [base["purity_5+"]], marker=marker, s=160, facecolors="none", edgecolors="k"
            )
    ax.axhline(0.8, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("story F1 on validation (circled: the report's reading)")
    ax.set_ylabel("same story inside clusters of 5+ items")
    ax.set_title("Neighbourhood readings of the scores, each variant a point")
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
        help="a model store whose current model's candidate pairs are read (repeatable)",
    )
    ap.add_argument("--floor", type=float, default=0.78, help="the lowest rerank score scored (default 0.78)")
    ap.add_argument("--ks", default="5,10", help="neighbours in an item's density (default 5,10)")
    ap.add_argument("--alphas", default="0.25,0.5", help="weights of the density (default 0.25,0.5)")
    ap.add_argument("--mutual", default="5,7", help="mutual top-m neighbours ('' for none; default 5,7)")
    ap.add_argument(
        "--tag", default="", help="write local_scaling_TAG.md/.json/.png (default: none, local_scaling.*)"
    )
    args = ap.parse_args(argv)
    ks, alphas = numbers(ap, "--ks", args.ks, int, 1), numbers(ap, "--alphas", args.alphas, float, 0)
    mutual = numbers(ap, "--mutual", args.mutual, int, 1)
    check_model_stores(ap, args.model_store)
    runs = []
    for store in args.model_store:
        model = model_of(store)
        scores = floor_scores(model, args.floor)
        rows, kept = variants(
            model,
            scores,
            args.floor,
            ks,
            alphas,
            mutual,
        )
        run = {"store": str(store), "version": model.version, "threshold": model.threshold, "rows": rows}
        runs.append({**run, "folds": folds(kept, model.validation, 0.8)})
    payload = {"machine": machine(), "floor": args.floor, "runs": runs}
    out = RESULTS / f"local_scaling{'_' + args.tag if args.tag else ''}"
    atomic_write_text(out.with_suffix(".json"), json.dumps(payload, indent=1, default=str))
    atomic_write_text(out.with_suffix(".md"), markdown(payload))
    plot(payload, out.with_suffix(".png"))
    print(markdown(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
