"""Do the corpus's neighbourhoods tell the same story better than the cross-encoder alone?

Editors call two headlines the same story when they belong to one thread (one exam season, one housing
project, one camera model), even with other words. A thread is dense in the corpus, so two headlines of one
thread should share many nearest neighbours. This measures that on the cross-validated scores of
``bench_same_story.py`` (recipe ``--recipe``, default the product's ``f4-e3``): for each annotated pair,

- ``shared``: Jaccard overlap of the two headlines' ``--k`` nearest neighbours among the 10,000 bundled
  titles (zero-shot multilingual-e5-small on ``tw2sp`` text, exact FAISS inner product; zero-shot, so no
  fold's labels leak into the feature);
- ``mutual``: how many of the two is in the other's neighbours (0, 1 or 2);
- ``cosine``: their zero-shot cosine;

and a logistic regression on the cross-encoder's out-of-fold logit plus those features, itself
cross-validated (5 folds), against the cross-encoder's own out-of-fold score. Prints average precision
and best F1 of each. The test split is never read. Figures: docs/finetuning.md.

    python benchmarks/explore_neighbour_features.py [--recipe f4-e3] [--k 20]
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
from bench_same_story import STORY, best_f1, cpu_name, load, scores  # noqa: E402 - after the path is set

CORPUS = ROOT / "data" / "thucnews.parquet"


def neighbours(k: int) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
    """Each title's row, the zero-shot embeddings, and each row's ``k`` nearest other rows."""
    import faiss

    from nlsim.conversion import convert
    from nlsim.encoders.registry import load_encoder

    corpus = pd.read_parquet(CORPUS)
    emb = load_encoder("multilingual-e5-small").encode(
        convert(corpus["title"].tolist(), "tw2sp"), batch_size=64
    )
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    _, near = index.search(emb, k + 1)
    return {str(i): r for r, i in enumerate(corpus["id"])}, emb, near[:, 1:]


def features(pairs: pd.DataFrame, k: int) -> np.ndarray:
    row, emb, near = neighbours(k)
    out = []
    for a, b in zip(pairs["id_a"], pairs["id_b"], strict=True):
        ra, rb = row[a], row[b]
        na, nb = set(near[ra].tolist()), set(near[rb].tolist())
        out.append((len(na & nb) / len(na | nb), float(rb in na) + float(ra in nb), float(emb[ra] @ emb[rb])))
    return np.array(out)


def cross_validated(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    pred = np.zeros(len(y))
    for train, held in StratifiedKFold(5, shuffle=True, random_state=1).split(x, y):
        pred[held] = LogisticRegression().fit(x[train], y[train]).predict_proba(x[held])[:, 1]
    return pred


def main() -> None:
    from sklearn.metrics import average_precision_score

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", default="f4-e3")
    ap.add_argument("--k", type=int, default=20)
    args = ap.parse_args()
    oof = scores(args.recipe, "cv")
    if oof is None:
        raise SystemExit(f"run `bench_same_story.py run --name {args.recipe} --mode cv` first")
    pairs = load().set_index("pair_id").loc[oof["pair_id"]]
    y = oof["score"].to_numpy() >= STORY
    ce = np.clip(oof["ce"].to_numpy(), 1e-6, 1 - 1e-6)
    logit = np.log(ce / (1 - ce))
    f = features(pairs, args.k)
    print(f"CPU: {cpu_name()}; {len(y)} pairs, {int(y.sum())} same story; recipe {args.recipe}, k {args.k}")
    print("| score | AP | best F1 (P / R) |\n|---|---:|---:|")
    for name, s in [
        ("cross-encoder (out of fold)", ce),
        ("shared neighbours alone", f[:, 0]),
        ("cross-encoder + shared", cross_validated(np.c_[logit, f[:, 0]], y)),
        ("cross-encoder + shared + mutual + cosine", cross_validated(np.c_[logit, f], y)),
    ]:
        f1, _, p, r = best_f1(s, y)
        print(f"| {name} | {average_precision_score(y, s):.3f} | {f1:.3f} ({p:.2f} / {r:.2f}) |")


if __name__ == "__main__":
    main()
