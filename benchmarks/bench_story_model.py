"""Does the story model (:mod:`nlsim.rerank.story`) decide same story better than the cross-encoder with
the series veto?

Reads the cross-encoder scores that ``bench_same_story.py run`` cached for each recipe named: out of
fold over train + validation (five folds) and train -> validation. For every pair it builds the story
model's inputs with the product's own code (:func:`nlsim.rerank.story.feature_matrix`; the bigram IDF of
the training split's texts; the *zero-shot* multilingual-e5-small cosine stands in for the fine-tuned
bi-encoder's, which these runs do not train), and compares, by best F1 and AP with a paired bootstrap
(1,000 resamples, each score at its own best threshold):

- ``cross-encoder + veto``: the cross-encoder's score, a vetoed pair held at 0.75 (the decision before);
- ``story model, out of fold``: fitted on four folds (:func:`nlsim.rerank.story.fit_logistic`, their
  out-of-fold cross-encoder scores), scored on the fifth;
- ``story model, as fine-tuning fits it``: fitted on the validation split with the cross-encoder trained on
  the training split (:func:`nlsim.rerank.story.fit_story_model`), its cross-fitted validation
  probabilities against the cross-encoder + veto on the same pairs.

The test split is never read. Writes ``benchmarks/results/story_model.md`` for the recipes of
docs/experiments.md (the default ``--names``); other recipes write ``story_model-namesNAMES.md`` beside it,
or ``story_model-TAG.md`` with ``--tag``, never over it. Figures: docs/experiments.md.

    python benchmarks/bench_same_story.py run --name g-f4-e3 --mode both       # or on a GPU machine:
    bash benchmarks/gpu_same_story.sh "g-f4-e3 --seed 42" "g-f4-e3-s7 --seed 7"  # (bring the cache back)
    python benchmarks/bench_story_model.py --names g-f4-e3,g-f4-e3-s7
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import RESULTS, sized_stem  # noqa: E402
from bench_same_story import STORY, best_f1, cpu_name, folds, load, paired_gain, scores  # noqa: E402

from nlsim.io.atomic import atomic_write_text  # noqa: E402

CORPUS = ROOT / "data" / "thucnews.parquet"
RECIPES = "g-f4-e3,g-f4-e3-s7,g-f6-e1-fp32,g-f6-e1-fp32-s7"
"""The recipes of the committed page (``results/story_model.md``, docs/experiments.md)."""


def zero_shot_cosines(pairs: pd.DataFrame) -> np.ndarray:
    from nlsim.encoders.registry import load_encoder

    texts = sorted(set(pairs["text_a"]) | set(pairs["text_b"]))
    row = {t: i for i, t in enumerate(texts)}
    emb = np.asarray(load_encoder("multilingual-e5-small").encode(texts, batch_size=64))
    return np.array(
        [float(emb[row[a]] @ emb[row[b]]) for a, b in zip(pairs["text_a"], pairs["text_b"], strict=True)]
    )


def vetoed(ce: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.where(x[:, -1] > 0, np.minimum(ce, 0.75), ce)


def line(name: str, s: np.ndarray, y: np.ndarray, base: np.ndarray | None) -> str:
    from sklearn.metrics import average_precision_score

    f1, _, p, r = best_f1(s, y)
    gain = " | "
    if base is not None:
        g = paired_gain(base, s, y)
        gain = " | ".join(f"{vb - va:+.3f} [{lo:+.3f}, {hi:+.3f}]" for va, vb, lo, hi in g.values())
    return f"| {name} | {average_precision_score(y, s):.3f} | {f1:.3f} ({p:.2f} / {r:.2f}) | {gain} |"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--names",
        default=RECIPES,
        help=f"recipes run with bench_same_story.py --mode both, separated by commas (default {RECIPES})",
    )
    ap.add_argument(
        "--tag",
        default="",
        help="results file name: story_model-TAG.md (default: none; other recipes than the default then "
        "write story_model-names<recipes>.md beside the committed page)",
    )
    return ap


def stem_of(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The results' file name: ``story_model-TAG``, else ``story_model`` for the committed recipes and
    ``story_model-namesNAMES`` for others (a run on other recipes never replaces the committed page)."""
    return f"story_model-{args.tag}" if args.tag else sized_stem("story_model", ap, args, besides=["tag"])


def main(argv: list[str] | None = None) -> None:
    from nlsim.rerank.story import BigramIdf, feature_matrix, fit_logistic, fit_story_model

    ap = build_parser()
    args = ap.parse_args(argv)
    missing = [n for n in args.names.split(",") if scores(n, "cv") is None or scores(n, "val") is None]
    if missing:  # before the zero-shot cosines of every pair, not after them
        ap.error(
            f"argument --names: no cached scores for {', '.join(missing)}: run "
            f"`bench_same_story.py run --name NAME --mode both` first"
        )
    pairs = load()
    fold = folds(pairs)
    y = pairs["score"].to_numpy() >= STORY
    val = (pairs["split"] == "validation").to_numpy()
    train = pairs[~val]
    idf = BigramIdf.of(train["text_a"].tolist() + train["text_b"].tolist())
    cosine = zero_shot_cosines(pairs)
    a, b = pairs["text_a"].tolist(), pairs["text_b"].tolist()
    lines = [
        "# The story model against the cross-encoder with the veto",
        "",
        f"CPU: {cpu_name()}; {len(y)} pairs ({int(y.sum())} same story) out of fold, {int(val.sum())} "
        f"validation pairs ({int(y[val].sum())}); the zero-shot cosine stands in for the bi-encoder's",
        "",
        "| recipe: score | AP | best F1 (P / R) | F1 gain [95%] | AP gain [95%] |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in args.names.split(","):
        oof, held = scores(name, "cv"), scores(name, "val")
        if oof is None or held is None:
            raise SystemExit(f"run `bench_same_story.py run --name {name} --mode both` first")
        ce = oof.set_index("pair_id").loc[pairs["pair_id"], "ce"].to_numpy()
        x = feature_matrix(ce, cosine, a, b, idf)
        story = np.zeros(len(y))
        for k in np.unique(fold):
            model = fit_logistic(x[fold != k], y[fold != k], idf)
            story[fold == k] = 1 / (1 + np.exp(-model.logits(x[fold == k])))
        base = vetoed(ce, x)
        lines += [line(f"{name}: cross-encoder + veto, out of fold", base, y, None)]
        lines += [line(f"{name}: story model, out of fold", story, y, base)]
        ce_val = held.set_index("pair_id").loc[pairs["pair_id"][val], "ce"].to_numpy()
        va, vb = [t for t, v in zip(a, val, strict=True) if v], [t for t, v in zip(b, val, strict=True) if v]
        fit = fit_story_model(ce_val, cosine[val], va, vb, y[val], idf)
        base_val = vetoed(ce_val, x[val])
        lines += [line(f"{name}: cross-encoder + veto, validation", base_val, y[val], None)]
        if fit is not None:
            lines += [
                line(
                    f"{name}: story model as fine-tuning fits it, validation", fit.held_out, y[val], base_val
                )
            ]
    text = "\n".join(lines) + "\n"
    out = RESULTS / f"{stem_of(ap, args)}.md"
    atomic_write_text(out, text)
    print(text + f"written to {out}")


if __name__ == "__main__":
    main()
