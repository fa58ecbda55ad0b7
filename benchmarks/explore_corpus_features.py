"""Does what the corpus knows of a pair's words tell the same story better than the cross-encoder alone?

A cross-encoder reads two headlines and nothing else. Two things the editors seem to use lie outside the
pair: how common the words are that two headlines share, and whether they share a template with other
numbers. "通州京贸国际城…19800" / "通州京贸国际城…26000" share a rare name (one housing project:
the same story to the editors); "恒指全日跌53点报21330" / "恒指全日跌53点报15509" share a template
that appears every day (two days' figures: related, not the same story). This measures that on the
cross-validated scores of ``bench_same_story.py`` (recipe ``--recipe``, default the product's ``f4-e3``),
with features of each annotated pair computed from the 10,000 bundled titles (``tw2sp`` text, as the
model reads them):

- ``rare``: the highest inverse document frequency in the corpus of a character run (2-6 characters, no
  digits) both headlines hold: a shared rare name against a shared common phrase;
- ``idf_overlap``: IDF-weighted Jaccard overlap of the two headlines' character bigrams;
- ``longest``: the longest character run (no digits) both hold;
- ``numbers_conflict``: both hold numbers and share none; ``numbers_shared``: how many they share;
- ``template``: the two are one text once every number is masked; ``template_overlap``: Jaccard overlap
  of character trigrams with numbers masked;
- ``cosine``: zero-shot multilingual-e5-small cosine (no fold's labels leak into any feature).

A logistic regression on the cross-encoder's out-of-fold logit plus the features is itself
cross-validated on the benchmark's own five folds (so each pair is scored by a combination fitted
without its fold), and compared with the cross-encoder alone by a paired bootstrap (1,000 resamples,
each score at its own best threshold). Prints AP and best F1 of each, and writes them to
``benchmarks/results/corpus_features.md``. The test split is never read. Figures: docs/finetuning.md.

    python benchmarks/explore_corpus_features.py [--recipe f4-e3]
"""

from __future__ import annotations

import argparse
import collections
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_same_story import STORY, best_f1, cpu_name, folds, load, paired_gain, scores  # noqa: E402

CORPUS = ROOT / "data" / "thucnews.parquet"
OUT = ROOT / "benchmarks" / "results" / "corpus_features.md"
NUMBER = re.compile(r"\d+(?:\.\d+)?")
NAMES = (
    "rare",
    "idf_overlap",
    "longest",
    "numbers_conflict",
    "numbers_shared",
    "template",
    "template_overlap",
)


def runs(text: str, n: int) -> set[str]:
    """The character runs of length ``n`` in ``text``."""
    return {text[i : i + n] for i in range(len(text) - n + 1)}


class CorpusStatistics:
    """Document frequencies of the corpus's character runs (1-6 characters) and the pair features above.

    >>> stats = CorpusStatistics(["恒指全日跌53点", "恒指全日涨12点", "京贸国际城在售"])
    >>> [round(v, 2) for v in stats.features("京贸国际城19800", "京贸国际城26000")][:1]
    [0.41]
    """

    def __init__(self, texts: list[str]) -> None:
        self.n = len(texts)
        self.df: collections.Counter[str] = collections.Counter()
        for text in texts:
            self.df.update(set().union(*(runs(text, n) for n in range(1, 7))))

    def idf(self, run: str) -> float:
        return math.log(self.n / (self.df.get(run, 0) + 1))

    def features(self, a: str, b: str) -> list[float]:
        shared = set().union(*(runs(a, n) & runs(b, n) for n in range(2, 7)))
        words = [r for r in shared if not re.search(r"\d", r)]
        bigrams_a, bigrams_b = runs(a, 2), runs(b, 2)
        union = sum(self.idf(r) for r in bigrams_a | bigrams_b)
        numbers_a, numbers_b = set(NUMBER.findall(a)), set(NUMBER.findall(b))
        masked_a, masked_b = NUMBER.sub("#", a), NUMBER.sub("#", b)
        tri_a, tri_b = runs(masked_a, 3), runs(masked_b, 3)
        return [
            max((self.idf(r) for r in words), default=0.0),
            sum(self.idf(r) for r in bigrams_a & bigrams_b) / union if union else 0.0,
            float(max((len(r) for r in words), default=0)),
            float(bool(numbers_a) and bool(numbers_b) and not numbers_a & numbers_b),
            float(len(numbers_a & numbers_b)),
            float(masked_a == masked_b and a != b),
            len(tri_a & tri_b) / max(1, len(tri_a | tri_b)),
        ]


def zero_shot_cosines(pairs: pd.DataFrame, titles: pd.DataFrame) -> np.ndarray:
    from nlsim.encoders.registry import load_encoder

    row = {item: r for r, item in enumerate(titles["id"])}
    emb = np.asarray(load_encoder("multilingual-e5-small").encode(titles["text"].tolist(), batch_size=64))
    return np.array(
        [float(emb[row[a]] @ emb[row[b]]) for a, b in zip(pairs["id_a"], pairs["id_b"], strict=True)]
    )


def cross_validated(x: np.ndarray, y: np.ndarray, fold: np.ndarray) -> np.ndarray:
    """Out-of-fold probabilities of a standardised logistic regression on the benchmark's folds."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pred = np.zeros(len(y))
    for k in np.unique(fold):
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        pred[fold == k] = model.fit(x[fold != k], y[fold != k]).predict_proba(x[fold == k])[:, 1]
    return pred


def main() -> None:
    from sklearn.metrics import average_precision_score

    from nlsim.conversion import convert

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", default="f4-e3")
    args = ap.parse_args()
    oof = scores(args.recipe, "cv")
    if oof is None:
        raise SystemExit(f"run `bench_same_story.py run --name {args.recipe} --mode cv` first")
    pairs = load()
    fold = folds(pairs)
    oof = oof.set_index("pair_id").loc[pairs["pair_id"]]
    y = pairs["score"].to_numpy() >= STORY
    ce = np.clip(oof["ce"].to_numpy(), 1e-6, 1 - 1e-6)
    logit = np.log(ce / (1 - ce))
    titles = pd.read_parquet(CORPUS, columns=["id", "title"])
    titles = titles.assign(id=titles["id"].astype(str), text=convert(titles["title"].tolist(), "tw2sp"))
    stats = CorpusStatistics(titles["text"].tolist())
    feats = np.array([stats.features(a, b) for a, b in zip(pairs["text_a"], pairs["text_b"], strict=True)])
    cosine = zero_shot_cosines(pairs, titles)
    lines = [
        "# Corpus features beside the cross-encoder (out of fold, train + validation)",
        "",
        f"CPU: {cpu_name()}; {len(y)} pairs, {int(y.sum())} same story; recipe {args.recipe}",
        "",
        "| score | AP | best F1 (P / R) | F1 gain over the cross-encoder [95%] | AP gain [95%] |",
        "|---|---:|---:|---:|---:|",
    ]
    rows = [("cross-encoder (out of fold)", ce)]
    rows += [(f"{name} alone", feats[:, i]) for i, name in enumerate(NAMES)]
    rows += [
        (f"cross-encoder + {name}", cross_validated(np.c_[logit, feats[:, i]], y, fold))
        for i, name in enumerate(NAMES)
    ]
    rows += [
        ("cross-encoder + all corpus features", cross_validated(np.c_[logit, feats], y, fold)),
        ("cross-encoder + all + zero-shot cosine", cross_validated(np.c_[logit, feats, cosine], y, fold)),
    ]
    for name, s in rows:
        f1, _, p, r = best_f1(s, y)
        gain = ""
        if name.startswith("cross-encoder +"):
            g = paired_gain(ce, s, y)
            gain = " | ".join(f"{vb - va:+.3f} [{lo:+.3f}, {hi:+.3f}]" for va, vb, lo, hi in g.values())
        else:
            gain = " | "
        lines.append(
            f"| {name} | {average_precision_score(y, s):.3f} | {f1:.3f} ({p:.2f} / {r:.2f}) | {gain} |"
        )
    text = "\n".join(lines) + "\n"
    OUT.write_text(text, encoding="utf-8")
    print(text + f"written to {OUT}")


if __name__ == "__main__":
    main()
