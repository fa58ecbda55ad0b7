"""Where a trained model's report loses the same-story pairs, and what it links that is not one story.

For the current model of each store given, on the annotated pairs (validation, and training for the
in-sample side):

- **the search**: the rank of each validation pair's partner among the item's nearest neighbours by the
  fine-tuned cosine over the whole corpus (the report searches ``k`` = 10): a same-story pair beyond it can
  never be reported, whatever the scorer reads;
- **the score**: where each validation pair the search can find falls by its rerank score as the report
  reads it (:meth:`nlsim.rerank.reranker.Reranker.pair_scores` with the cross-encoder in fp32, then the
  series veto's cap, :func:`nlsim.rerank.series.vetoed_scores`, on the converted texts): at or above the
  model's calibrated threshold ``T``, held by the veto from above ``T``, between ``--floor`` and ``T``, or
  below ``--floor``; the editors' scores of the pairs that are linked but are not one story; and the
  same-story pairs under ``T`` with their texts;
- **the parts of the score**: average precision and best F1 of same story for the bi-encoder's cosine, the
  cross-encoder's score and the rerank score, on validation (held out from training; ``T`` and the kept
  epoch were chosen on it, and a story model, ``--story-model``, is fitted on it: the benchmark says so) and
  on the training pairs (in sample: how well the recipe fits what it was trained on).

Figures go to ``benchmarks/results/story_misses.md``/``.json`` and a plot ``story_misses.png`` (the rerank
scores of the validation pairs by the editors' verdict, ``T`` marked). The test split is never read.

    python benchmarks/bench_story_misses.py --model-store models [--model-store STORE2 ...] [--floor 0.84]
        [--k 10] [--tag NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from _common import check_model_stores, machine, save_figure
from bench_same_story import best_f1, write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from nlsim.evaluation.levels import SAME_STORY as STORY  # noqa: E402 - after the path is set

PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
CORPUS = ROOT / "data" / "thucnews.parquet"
RANKS = 50
"""Neighbours ranked per item (a partner further away counts as beyond them)."""


def partner_ranks(emb: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For rows ``a[i]``, ``b[i]`` of the normalised ``emb``: the better of b's rank among a's neighbours and
    a's among b's (0 = nearest; :data:`RANKS` when beyond the first :data:`RANKS`)."""
    out = np.full(len(a), RANKS)
    for rows, other in ((a, b), (b, a)):
        sims = emb[rows] @ emb.T
        sims[np.arange(len(rows)), rows] = -np.inf
        order = np.argsort(-sims, axis=1)[:, :RANKS]
        hit = order == other[:, None]
        rank = np.where(hit.any(axis=1), hit.argmax(axis=1), RANKS)
        out = np.minimum(out, rank)
    return out


def part_figures(frame: pd.DataFrame) -> dict:
    """AP and best F1 of same story for each part of the score."""
    from sklearn.metrics import average_precision_score

    story = frame["story"].to_numpy()
    return {
        part: {
            "ap": round(float(average_precision_score(story, frame[part])), 4),
            "best_f1": round(best_f1(frame[part].to_numpy(), story)[0], 4),
        }
        for part in ("cosine", "cross_encoder", "rerank")
    }


def scored(store: Path, k: int, floor: float) -> tuple[str, float, bool, pd.DataFrame]:
    """The current version of ``store``, its calibrated threshold, whether it holds a story model, and the
    validation and training pairs with their cosine, cross-encoder score, rerank score, the score the
    report reads (``reported``: after the veto's cap) and, for validation, whether the search reaches them
    (``rank``, ``found``) and whether the report links them (``linked``: found, ``reported`` at or above
    the threshold). ``floor`` must lie under the threshold (checked before anything is scored)."""
    from nlsim.conversion import convert
    from nlsim.encoders import load_encoder
    from nlsim.encoders.cache import EmbeddingCache
    from nlsim.io.model_store import ModelStore
    from nlsim.io.pairs import load_pairs
    from nlsim.rerank.reranker import load_reranker
    from nlsim.rerank.series import vetoed_scores

    folder = ModelStore(store).current()
    if folder is None:
        raise SystemExit(f"{store}: no model has been promoted")
    reranker = load_reranker(folder)
    if reranker is None or reranker.threshold is None:
        raise SystemExit(f"{folder}: no calibrated reranker")
    threshold = float(reranker.threshold)
    if floor >= threshold:
        raise SystemExit(f"--floor {floor} is not under {folder.name}'s threshold {threshold:.4f}")
    conversion = json.loads((folder / "training.json").read_text(encoding="utf-8"))["config"]["conversion"]
    encoder = load_encoder(folder)
    corpus = pd.read_parquet(CORPUS, columns=["id", "title"])
    texts = convert(corpus["title"].astype(str).tolist(), conversion)
    emb, _ = EmbeddingCache().get_or_compute(texts, encoder, conversion)
    pos = {item: i for i, item in enumerate(corpus["id"].astype(str))}
    pairs = load_pairs(PAIRS)
    pairs = pairs[pairs["split"].isin(["train", "validation"])].reset_index(drop=True)
    a = pairs["id_a"].astype(str).map(pos).to_numpy()
    b = pairs["id_b"].astype(str).map(pos).to_numpy()
    text_a, text_b = [texts[i] for i in a], [texts[i] for i in b]
    cosine = np.einsum("ij,ij->i", emb[a], emb[b]).astype(np.float64)
    cross = reranker.cross_scores(text_a, text_b, precision="fp32")
    rerank = reranker.pair_scores(cosine, cross, text_a, text_b)
    val = (pairs["split"] == "validation").to_numpy()
    rank = np.full(len(pairs), -1)
    rank[val] = partner_ranks(emb, a[val], b[val])
    found = (rank >= 0) & (rank < k)
    reported = vetoed_scores(rerank, text_a, text_b)
    out = pairs[["split", "id_a", "id_b", "text_a", "text_b", "score"]].assign(
        story=pairs["score"].to_numpy() >= STORY,
        cosine=cosine,
        cross_encoder=cross,
        rerank=rerank,
        reported=reported,
        rank=rank,
        found=found,
        linked=found & (reported >= threshold),
    )
    return folder.name, threshold, reranker.story is not None, out


def where(frame: pd.DataFrame, threshold: float, floor: float) -> dict:
    """How many pairs of ``frame`` fall where (see the module doc): the ones the search cannot reach
    first, the others by the score the report reads."""
    found = frame["found"].to_numpy()
    s, raw = frame["reported"].to_numpy(), frame["rerank"].to_numpy()
    vetoed = (raw >= threshold) & (s < threshold)
    return {
        "pairs": len(frame),
        "beyond_k": int((~found).sum()),
        "linked": int(frame["linked"].sum()),
        "vetoed_from_above_T": int((found & vetoed).sum()),
        "floor_to_T": int((found & ~vetoed & (s >= floor) & (s < threshold)).sum()),
        "below_floor": int((found & ~vetoed & (s < floor)).sum()),
    }


def measure(store: Path, floor: float, k: int) -> dict:
    version, threshold, story_model, pairs = scored(store, k, floor)
    val = pairs[pairs["split"] == "validation"]
    linked = val[~val["story"] & val["linked"]]
    missed = val[val["story"] & ~val["linked"]]
    return {
        "store": str(store),
        "version": version,
        "story_model": story_model,
        "threshold": round(threshold, 6),
        "same_story": where(val[val["story"]], threshold, floor),
        "not_same_story": where(val[~val["story"]], threshold, floor),
        "linked_not_same_story_by_editors_score": {
            f"{score:g}": int(n) for score, n in linked["score"].value_counts().sort_index().items()
        },
        "validation": part_figures(val),
        "train_in_sample": part_figures(pairs[pairs["split"] == "train"]),
        "same_story_not_linked": [
            {
                "id_a": r.id_a,
                "id_b": r.id_b,
                "text_a": r.text_a,
                "text_b": r.text_b,
                "rank": int(r.rank),
                "reported": round(float(r.reported), 5),
            }
            for r in missed.itertuples()
        ],
        "validation_pairs": {
            "id_a": val["id_a"].astype(str).tolist(),
            "id_b": val["id_b"].astype(str).tolist(),
            "story": [bool(x) for x in val["story"]],
            "rank": [int(x) for x in val["rank"]],
            "rerank": [round(float(x), 5) for x in val["rerank"]],
            "reported": [round(float(x), 5) for x in val["reported"]],
        },
    }


def markdown(runs: list[dict], floor: float, k: int) -> str:
    lines = [
        f"# Where the report loses its same-story pairs ({machine()})",
        "",
        f"Validation pairs: 'beyond k': the partner is not among the item's {k} nearest neighbours by the "
        "fine-tuned cosine, nor the item among its partner's, so no report can find the pair; the others by "
        f"the score the report reads (the rerank score, cross-encoder in fp32, after the series veto's cap): "
        f"linked (at or above the model's calibrated threshold T), held by the veto from above T, between "
        f"{floor} and T, below {floor}. T and the kept epoch were chosen on these pairs; a store marked "
        "'story model' also fitted its story model on them (in sample for it).",
        "",
        "| store | version | T | class | pairs | beyond k | linked | vetoed from above T | floor–T | "
        "below floor |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        label = r["version"] + (" (story model)" if r["story_model"] else "")
        for name in ("same_story", "not_same_story"):
            w = r[name]
            lines.append(
                f"| {r['store']} | {label} | {r['threshold']:.4f} | {name.replace('_', ' ')} | "
                f"{w['pairs']} | {w['beyond_k']} | {w['linked']} | {w['vetoed_from_above_T']} | "
                f"{w['floor_to_T']} | {w['below_floor']} |"
            )
    lines += ["", "Linked but not one story, by the editors' score:", ""]
    for r in runs:
        counts = ", ".join(f"{s}: {n}" for s, n in r["linked_not_same_story_by_editors_score"].items())
        lines.append(f"- {r['version']} ({r['store']}): {counts or 'none'}")
    lines += [
        "",
        "The parts of the score, same story: AP / best F1 on validation (held out from training) and on the "
        "training pairs (in sample):",
        "",
        "| version | cosine val | cross-encoder val | rerank val | cosine train | cross-encoder train | "
        "rerank train |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        cells = [
            f"{r[side][part]['ap']:.3f} / {r[side][part]['best_f1']:.3f}"
            for side in ("validation", "train_in_sample")
            for part in ("cosine", "cross_encoder", "rerank")
        ]
        label = r["version"] + (" (story model: rerank val in sample)" if r["story_model"] else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(runs: list[dict], path: Path) -> None:
    """The validation pairs' rerank scores by the editors' verdict, one panel a store, T marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(7, 2.6 * len(runs)), squeeze=False)
    for ax, r in zip(axes[:, 0], runs, strict=True):
        s = np.asarray(r["validation_pairs"]["reported"])
        story = np.asarray(r["validation_pairs"]["story"])
        bins = np.linspace(float(s.min()), float(s.max()), 40)
        ax.hist(s[~story], bins=bins, alpha=0.6, label="not the same story")
        ax.hist(s[story], bins=bins, alpha=0.8, label="same story")
        ax.axvline(r["threshold"], color="k", linestyle="--", label="T")
        ax.set_yscale("log")
        ax.set_xlabel("rerank score, after the veto")
        ax.set_ylabel("pairs")
        ax.set_title(f"{r['version']}: validation pairs' rerank scores", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model-store",
        type=Path,
        action="append",
        required=True,
        help="a model store whose current model's report is read (repeat for more)",
    )
    parser.add_argument("--floor", type=float, default=0.84, help="the wide report's floor (default 0.84)")
    parser.add_argument(
        "--k", type=int, default=10, help=f"neighbours the report searches (default 10, at most {RANKS})"
    )
    parser.add_argument(
        "--tag",
        default="",
        help="write story_misses_TAG.md/.json/.png instead (default: none, story_misses.*)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.k <= RANKS:
        parser.error(f"--k must be between 1 and {RANKS}")
    check_model_stores(parser, args.model_store)
    runs = [measure(store, args.floor, args.k) for store in args.model_store]
    tag = f"_{args.tag}" if args.tag else ""
    write_results(f"story_misses{tag}", markdown(runs, args.floor, args.k), runs, plot)


if __name__ == "__main__":
    main()
