"""Two readings of the trained models' validation scores that need no training: an average over trainings,
and one same-story threshold per news category.

Reads the per-pair rerank scores that ``bench_story_misses.py`` keeps (its JSON: every validation pair's
score as the report reads it, for each model store it was given) and compares, on the 715 validation pairs,
the same-story F1 of a threshold chosen out of fold (chosen by best F1 on four fifths, scored on the held-out
fifth, pooled over the folds and 20 repeats: the figure the chain calls cross-validated):

- **each training alone**, with one threshold;
- **the mean of several trainings' scores** (every pair and every triple of the stores given): what an
  ensemble of seeds would give, at two or three times the training and scoring cost;
- **one threshold per category** of the first item (THUCNews's ten, ``data/thucnews.parquet``), for a
  category with at least ``--min-positives`` same-story pairs in the four fifths, else the single one.

Average precision is given beside each. A story model's store (in sample on validation) is left out. The test
split is never read. Figures go to ``benchmarks/results/story_scores[_TAG].md``/``.json``/``.png``.

    python benchmarks/bench_story_scores.py [--misses benchmarks/results/story_misses_avx2_seeds.json]
        [--min-positives 3] [--tag NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from _common import RESULTS, check_files, machine, save_figure
from bench_same_story import write_results
from sklearn.metrics import average_precision_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from nlsim.evaluation.calibration import CV_FOLDS, CV_REPEATS, Cuts, f1_curve  # noqa: E402
from nlsim.evaluation.calibration import _folds as folds  # noqa: E402 - the chain's own stratified folds

CORPUS = ROOT / "data" / "thucnews.parquet"


def threshold(scores: np.ndarray, gold: np.ndarray) -> float:
    """The best-F1 threshold of ``scores`` (ties: the higher)."""
    cuts = Cuts.of(scores)
    tp, fp, pos = cuts.counts(gold)
    return float(cuts.thresholds[int(np.argmax(f1_curve(tp, fp, pos)))])


def out_of_fold_f1(scores: np.ndarray, gold: np.ndarray, groups: np.ndarray | None, min_pos: int) -> float:
    """Pooled held-out F1 of a threshold chosen on the other folds: one, or one per group with enough
    positives there."""
    rng = np.random.default_rng(0)
    tp = predicted = positives = 0
    for _ in range(CV_REPEATS):
        fold = folds(gold, rng)
        for k in range(CV_FOLDS):
            held, fit = fold == k, fold != k
            cut = np.full(len(scores), threshold(scores[fit], gold[fit]))
            if groups is not None:
                for g in np.unique(groups):
                    mine = fit & (groups == g)
                    if gold[mine].sum() >= min_pos:
                        cut[groups == g] = threshold(scores[mine], gold[mine])
            said = held & (scores >= cut)
            tp += int((said & gold).sum())
            predicted += int(said.sum())
            positives += int((held & gold).sum())
    return 2 * tp / max(predicted + positives, 1)


def measure(runs: list[dict], min_pos: int) -> list[dict]:
    frames = [pd.DataFrame(r["validation_pairs"]).set_index(["id_a", "id_b"]) for r in runs]
    keys = frames[0].index
    for r, f in zip(runs, frames, strict=True):
        if not f.index.equals(keys):
            raise SystemExit(f"{r['store']}: its validation pairs differ from {runs[0]['store']}'s")
    gold = frames[0]["story"].to_numpy(dtype=bool)
    category = pd.read_parquet(CORPUS, columns=["id", "category"]).set_index("id")["category"]
    groups = keys.get_level_values("id_a").map(category).to_numpy(dtype=str)
    names = [f"{r['version']} ({Path(r['store']).name})" for r in runs]
    rows = []
    for size in range(1, len(runs) + 1):
        for chosen in combinations(range(len(runs)), size):
            s = np.mean([frames[i]["rerank"].to_numpy() for i in chosen], axis=0)
            row = {
                "trainings": [names[i] for i in chosen],
                "ap": float(average_precision_score(gold, s)),
                "f1_out_of_fold": out_of_fold_f1(s, gold, None, min_pos),
            }
            if size == 1:
                row["f1_out_of_fold_per_category"] = out_of_fold_f1(s, gold, groups, min_pos)
            rows.append(row)
    return rows


def markdown(rows: list[dict], source: Path, min_pos: int) -> str:
    lines = [
        f"# Validation scores read two more ways ({machine()})",
        "",
        f"From `{source.relative_to(ROOT) if source.is_relative_to(ROOT) else source}`: the rerank scores of "
        "the 715 validation pairs as each report reads them. F1 out of fold: a threshold chosen on four "
        f"fifths by best F1, scored on the fifth, pooled over {CV_FOLDS} folds x {CV_REPEATS} repeats. Per "
        f"category: one threshold per THUCNews category of the first item with at least {min_pos} same-story "
        "pairs in the four fifths, else the single one.",
        "",
        "| trainings (scores averaged) | AP | F1 out of fold | F1 out of fold, a threshold per category |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        per = r.get("f1_out_of_fold_per_category")
        lines.append(
            f"| {' + '.join(r['trainings'])} | {r['ap']:.3f} | {r['f1_out_of_fold']:.3f} | "
            f"{'' if per is None else f'{per:.3f}'} |"
        )
    for size in sorted({len(r["trainings"]) for r in rows}):
        mean = np.mean([r["f1_out_of_fold"] for r in rows if len(r["trainings"]) == size])
        lines.append(f"\nMean F1 out of fold over the rows of {size} training(s): {mean:.3f}")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    sizes = [len(r["trainings"]) for r in rows]
    ax.scatter(sizes, [r["f1_out_of_fold"] for r in rows], label="one threshold")
    single = [r for r in rows if "f1_out_of_fold_per_category" in r]
    ax.scatter(
        [0.9] * len(single),
        [r["f1_out_of_fold_per_category"] for r in single],
        marker="x",
        label="per category",
    )
    ax.set_xlabel("trainings averaged")
    ax.set_ylabel("same-story F1 out of fold (validation)")
    ax.set_xticks(sorted(set(sizes)))
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--misses",
        type=Path,
        default=RESULTS / "story_misses_avx2_seeds.json",
        help="the JSON of a bench_story_misses.py run (default: "
        "benchmarks/results/story_misses_avx2_seeds.json)",
    )
    parser.add_argument(
        "--min-positives",
        type=int,
        default=3,
        help="same-story pairs a category needs for a threshold of its own (default: 3)",
    )
    parser.add_argument(
        "--tag",
        default="",
        help="write story_scores_TAG.md/.json/.png instead (default: none, story_scores.*)",
    )
    args = parser.parse_args(argv)
    check_files(parser, "--misses", [args.misses])
    runs = [r for r in json.loads(args.misses.read_text(encoding="utf-8")) if not r["story_model"]]
    if not runs:
        raise SystemExit(f"{args.misses}: no store without a story model")
    rows = measure(runs, args.min_positives)
    tag = f"_{args.tag}" if args.tag else ""
    write_results(f"story_scores{tag}", markdown(rows, args.misses.resolve(), args.min_positives), rows, plot)


if __name__ == "__main__":
    main()
