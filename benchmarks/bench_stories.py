"""Stories inside topics: tight story clusters, topic groups around them, judged on validation and folds.

A report's clusters are stories; a large cluster held by a chain of links just above the threshold tells
of one topic (an exam year, a saga, a property project's promotions), not one story. This benchmark judges,
on the same scored pairs, the two levels a report can have:

- **stories**: the support rule with the series veto (the default, ``support 0.4``), and variants where a
  merge into a group of ``N`` items or more also needs a share ``S`` of the member pairs between its halves
  linked and/or their links to score the threshold plus ``M`` on average (``--large N:S:M,...``; ``-`` for
  no condition): cluster-level precision, recall and F1 (``nlsim judge``'s figures), and the purity by
  cluster size (the share of judged pairs inside clusters of 2, 3-4, 5-9, 10+, 5+ and 3+ items that are
  the same story);
- **the editors' verdicts**, as the training pairs would give them (every training pair of the pair file a
  verdict: same story joins, any lower level keeps apart): each story variant again with them, parting a
  group along the weakest links (``+train-order``, today's) or by a minimum cut of the scores
  (``+train-min-cut``, :mod:`nlsim.clusters.cuts`), or by a minimum cut inside the clusters of 5 or more
  items only, the smaller ones kept as the rule made them (``+train-large-min-cut``); ``--no-verdicts``
  leaves them out;
- **topics** around each story variant: the stories (kept whole) and single items linked at the topic
  threshold, gathered by a topic rule (``components`` or the support rule at a share, ``--topic-shares``):
  how many judged pairs fall inside topic groups and the share of them the editors scored at the 0.75 level
  or above (topic precision), and the share of the pairs at 0.75 or above that a topic holds (coverage).
  The topic threshold is on the bi-encoder's cosine, the one stored with the model (or calibrated here as
  the training calibrates it: the validation pairs' cosines at the 0.75 level); ``--topic-margins`` moves
  it.

Folds: the validation pairs are cut in 5 folds (stratified by same story, seed 0); for each fold, the
story variant is chosen on the other four (the best F1 among the variants whose 5+ purity reaches
``--purity``; where none does, the purest at 5+ among those whose F1 is within 0.01 of the one-level
rule's, the first variant) and judged on it; the pooled held-out figures say what choosing on
validation is worth.

The story links come from a report of each model at its story threshold (``nlsim dedup --model current
--model-store STORE --threshold T --no-series-veto --cluster-rule components --near-misses 0
--no-topics``; cached per model version in ``benchmarks/results/cache/stories/``), the topic links from
the same neighbour search over the report's cached embeddings, down to the lowest topic threshold
measured. Figures go to ``benchmarks/results/stories_TAG.md`` and ``.json``. The test split is never read.

The clusters judged are the benchmark's own, not a report's, and so are its figures: they are built from
the story links alone, each exact copy an item of its own (a report reads a group of exact copies as one
item), with none of the editors' verdicts from a verdict store (only the training pairs, in the
``+train-`` variants). A report of the same model can score otherwise, and a variant the benchmark finds
better can do worse there (docs/experiments.md, "The training pairs' 'not the same story' inside large
clusters"). The figures' ``.md`` and ``.json`` say so too.

    python benchmarks/bench_stories.py --model-store STORE [--model-store STORE ...]
        [--large 5:-:0.01,5:0.6:-] [--topic-shares 0,0.2,0.3] [--purity 0.8] [--tag NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _common import RESULTS, check_model_stores, machine, numbers, run_nlsim
from bench_cluster_rule import read_scores, stratified_folds

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from nlsim.clusters.constraints import LinkConstraints  # noqa: E402
from nlsim.clusters.cuts import CUTS, min_cut_apart  # noqa: E402
from nlsim.clusters.rules import (  # noqa: E402
    DEFAULT_LARGE,
    DEFAULT_LARGE_MARGIN,
    DEFAULT_LARGE_SHARE,
    ConnectedComponents,
    Link,
    SharedSupport,
)
from nlsim.clusters.topics import DEFAULT_TOPIC_SUPPORT, TOPIC_LEVEL, topic_groups  # noqa: E402
from nlsim.evaluation.levels import SAME_STORY as STORY  # noqa: E402
from nlsim.io.atomic import atomic_write_parquet, atomic_write_text  # noqa: E402

PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
CORPUS = ROOT / "data" / "thucnews.parquet"
CACHE = RESULTS / "cache" / "stories"
LEFT_OUT = (
    "The clusters judged here are this benchmark's own, not a report's: built from the story links alone, "
    "each exact copy an item of its own (a report reads a group of exact copies as one item), with none of "
    "the editors' verdicts from a verdict store (only the training pairs, in the +train- variants). A report "
    "of the same model can score otherwise, and a variant found better here can do worse there "
    "(docs/experiments.md, \"The training pairs' 'not the same story' inside large clusters\")."
)
"""What the benchmark's clusters leave out of a report's, said with its figures."""
LARGE_CUT = "large-min-cut"
"""The verdicts cut inside large clusters only (:func:`large_cut`)."""
BANDS = {"2": (2, 2), "3-4": (3, 4), "5-9": (5, 9), "10+": (10, 10**9), "5+": (5, 10**9), "3+": (3, 10**9)}


def training_verdicts() -> LinkConstraints:
    """Every training pair of the pair file as an editor's verdict: same story a must-link, any lower level
    a cannot-link (what the training labels would say if each were a verdict)."""
    from nlsim.io.pairs import load_pairs

    pairs = load_pairs(PAIRS)
    train = pairs[pairs["split"] == "train"]
    story = train["score"].to_numpy() >= STORY - 1e-9
    ends = list(zip(train["id_a"].astype(str), train["id_b"].astype(str), strict=True))
    return LinkConstraints.from_pairs(
        must=[p for p, s in zip(ends, story, strict=True) if s],
        cannot=[p for p, s in zip(ends, story, strict=True) if not s],
    )


@dataclass(frozen=True)
class Model:
    """One training: its store, version, story threshold (on the rerank score), topic threshold (on the
    cosine) and the validation pairs."""

    store: Path
    version: str
    trained: str
    """A digest of the version's ``training.json``: two trainings that share a version name (the same
    recipe and data, other arithmetic or dropout masks) keep apart in the cache."""
    threshold: float
    topic_threshold: float
    validation: pd.DataFrame
    """The validation pairs (``id_a``, ``id_b``, ``score``) with the model's ``rerank`` and ``cosine``."""


def model_of(store: Path) -> Model:
    """The store's current model, its calibrated story threshold and its topic threshold: the one stored
    beside it (``topic_calibration.json``), else calibrated here as the training calibrates it (the cosine
    of the validation pairs at the 0.75 level)."""
    from nlsim.conversion import convert
    from nlsim.encoders import load_encoder
    from nlsim.encoders.scoring import pair_scorer
    from nlsim.evaluation.calibration import TOPIC_CALIBRATION_JSON, calibrate_scores, load_calibration
    from nlsim.io.pairs import load_pairs
    from nlsim.rerank.reranker import load_reranker

    current = json.loads((store / "CURRENT.json").read_text())
    folder = store / "versions" / current["version"]
    reranker = load_reranker(folder)
    if reranker is None or reranker.threshold is None:
        raise SystemExit(f"{folder}: no calibrated reranker (the story threshold is the reranker's)")
    pairs = load_pairs(PAIRS)
    val = pairs[pairs["split"] == "validation"].reset_index(drop=True)
    encoder = load_encoder(str(folder))
    a, b = convert(val["text_a"].tolist(), "tw2sp"), convert(val["text_b"].tolist(), "tw2sp")
    rerank = reranker.scorer(encoder)(a, b)
    cosine = pair_scorer(encoder)(a, b)
    stored = load_calibration(folder / TOPIC_CALIBRATION_JSON)
    topic = stored or calibrate_scores(np.asarray(cosine), val["score"].to_numpy(float), level=TOPIC_LEVEL)
    frame = val[["id_a", "id_b", "score"]].assign(rerank=rerank, cosine=cosine)
    record = folder / "training.json"
    trained = hashlib.sha256(record.read_bytes()).hexdigest()[:8] if record.exists() else "unknown"
    return Model(store, current["version"], trained, float(reranker.threshold), float(topic.threshold), frame)


def wide_scores(model: Model) -> pd.DataFrame:
    """Every candidate pair at or above the story threshold (no veto, components), cached: the links the
    story rules read."""
    cache = CACHE / f"{model.version}-{model.trained}-story{model.threshold:.6f}.parquet"
    if not cache.exists():
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "nlsim", "dedup", "--corpus", str(CORPUS), "--out", f"{tmp}/r"]
            cmd += [
                "--model",
                "current",
                "--model-store",
                str(model.store),
                "--threshold",
                str(model.threshold),
            ]
            cmd += ["--no-series-veto", "--cluster-rule", "components", "--near-misses", "0", "--no-topics"]
            run_nlsim([*cmd, "--no-progress"], ROOT)
            atomic_write_parquet(pd.read_parquet(f"{tmp}/r/pairs.parquet"), cache)  # whole or not at all
    return read_scores(cache)


def topic_links(model: Model, floor: float, k: int = 10) -> pd.DataFrame:
    """Each item's ``k`` nearest neighbours at or above the cosine ``floor`` (``id_a``, ``id_b``, ``score``:
    the cosine), as the report's neighbour search finds them (the embeddings from the cache the wide
    report filled)."""
    from nlsim.conversion import convert
    from nlsim.encoders import load_encoder
    from nlsim.encoders.cache import EmbeddingCache
    from nlsim.search.index import build_index
    from nlsim.search.neighbors import neighbor_pairs

    corpus = pd.read_parquet(CORPUS)
    texts = convert(corpus["title"].astype(str).tolist(), "tw2sp")
    encoder = load_encoder(str(model.store / "versions" / model.version))
    emb, _ = EmbeddingCache().get_or_compute(texts, encoder, "tw2sp", lambda: encoder.encode(texts))
    found = neighbor_pairs(build_index(emb, use_gpu=False), emb, np.arange(len(emb)), k=k, threshold=floor)
    ids = corpus["id"].astype(str).to_numpy()
    return pd.DataFrame({"id_a": ids[found["a"]], "id_b": ids[found["b"]], "score": found["similarity"]})


def links_of(frame: pd.DataFrame) -> list[Link]:
    return [Link(a, b, s) for a, b, s in zip(frame["id_a"], frame["id_b"], frame["score"], strict=True)]


def large_rule_name(size: int, share: float | None, margin: float | None) -> str:
    """The name of a ``--large`` variant of the default rule (``-``: no condition)."""
    return f"support-0.4+large{size}:{'-' if share is None else share}:{'-' if margin is None else margin}"


def story_rules(large: list[tuple[int, float | None, float | None]], threshold: float) -> dict[str, Any]:
    """The default rule and each ``--large`` variant at ``threshold``."""
    rules: dict[str, Any] = {"support-0.4": SharedSupport(min_share=0.4)}
    for size, share, margin in large:
        name = large_rule_name(size, share, margin)
        floor = None if margin is None else threshold + margin
        rules[name] = SharedSupport(min_share=0.4, large=size, large_share=share, large_floor=floor)
    return rules


def together(groups: list[list[str]], a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For pairs ``(a, b)``: whether the two items share a group, and that group's size (0: none)."""
    where = {m: i for i, g in enumerate(groups) for m in g}
    size = np.array([len(g) for g in groups] + [0])
    ga = np.array([where.get(x, -1) for x in a])
    gb = np.array([where.get(y, -2) for y in b])
    same = ga == gb
    return same, np.where(same, size[ga], 0)


def judge(groups: list[list[str]], val: pd.DataFrame) -> dict[str, Any]:
    """Cluster-level precision, recall and F1 of ``groups`` on the judged pairs, and purity by size."""
    a, b = val["id_a"].to_numpy(), val["id_b"].to_numpy()
    story = val["score"].to_numpy() >= STORY - 1e-9
    same, size = together(groups, a, b)
    tp, inside = int((same & story).sum()), int(same.sum())
    p, r = tp / max(1, inside), tp / max(1, int(story.sum()))
    out: dict[str, Any] = {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / (p + r), 4) if tp else 0.0,
        "clusters": len(groups),
        "largest": max((len(g) for g in groups), default=0),
    }
    for band, (lo, hi) in BANDS.items():
        sel = same & (size >= lo) & (size <= hi)
        out[f"n_{band}"] = int(sel.sum())
        out[f"purity_{band}"] = round(float(story[sel].mean()), 4) if sel.any() else None
    return out


def judge_topics(topics: list[list[str]], val: pd.DataFrame) -> dict[str, Any]:
    """Judged pairs inside topic groups, the share at the 0.75 level or above, and the coverage."""
    a, b = val["id_a"].to_numpy(), val["id_b"].to_numpy()
    topical = val["score"].to_numpy() >= TOPIC_LEVEL - 1e-9
    same, _ = together(topics, a, b)
    return {
        "topics": len(topics),
        "topic_items": int(sum(len(t) for t in topics)),
        "largest_topic": max((len(t) for t in topics), default=0),
        "n_topic": int(same.sum()),
        "topic_precision": round(float(topical[same].mean()), 4) if same.any() else None,
        "topic_coverage": round(float(same[topical].mean()), 4) if topical.any() else None,
    }


def large_cut(
    stories: list[list[str]], links: list[Link], verdicts: LinkConstraints | None
) -> list[list[str]]:
    """``stories`` with the verdicts acting inside the clusters of :data:`DEFAULT_LARGE` items or more
    only, each parted by minimum cuts (:func:`nlsim.clusters.cuts.min_cut_apart`); smaller clusters are
    kept as the rule made them. The training pairs' "not the same story" where the large clusters join
    an exam year's, a saga's or a product's other events, without cutting the chains of small stories."""
    if not verdicts:
        return stories
    small = [g for g in stories if len(g) < DEFAULT_LARGE]
    large = [g for g in stories if len(g) >= DEFAULT_LARGE]
    inside = {m for g in large for m in g}
    kept = verdicts.restricted_to(inside)
    parted = min_cut_apart(large, links, kept.cannot_link, kept.must_link)
    return sorted(small + parted, key=lambda g: g[0])


def measure(
    model: Model,
    wide: pd.DataFrame,
    topical: pd.DataFrame,
    large: list,
    topic_rules: dict[str, Any],
    margins: list[float],
    verdicts: LinkConstraints | None = None,
) -> tuple[list[dict], dict[str, list[list[str]]]]:
    """Every story variant (with the veto; with the training verdicts too) and topic rule on one
    training's wide scores."""
    story_links = links_of(wide[(wide["score"] >= model.threshold) & ~wide["vetoed"]])
    val = model.validation
    rows, kept = [], {}
    variants: list[tuple[str, Any, LinkConstraints | None, str]] = []
    for name, rule in story_rules(large, model.threshold).items():
        variants.append((name, rule, None, "order"))
        if verdicts is not None:
            variants += [(f"{name}+train-{cut}", rule, verdicts, cut) for cut in (*CUTS, LARGE_CUT)]
    for name, rule, constraints, cut in variants:
        if cut == LARGE_CUT:
            stories = large_cut(rule.clusters(story_links), story_links, constraints)
        else:
            stories = rule.clusters(story_links, constraints, cut=cut)
        kept[name] = stories
        row = {"story_rule": name, **judge(stories, val)}
        for margin in margins:
            t = model.topic_threshold + margin
            links = links_of(topical[topical["score"] >= t])
            for tname, trule in topic_rules.items():
                topics = topic_groups(stories, links, trule)
                rows.append(
                    {**row, "topic_threshold": round(t, 6), "topic_rule": tname, **judge_topics(topics, val)}
                )
        print(
            f"{model.version} {name}: F1 {row['f1']}, 5+ purity {row['purity_5+']} ({row['n_5+']})",
            flush=True,
        )
    return rows, kept


def folds(kept: dict[str, list[list[str]]], val: pd.DataFrame, purity: float) -> dict[str, Any]:
    """Choose the story rule on four folds, judge on the fifth (pooled)."""
    fold = stratified_folds(val)
    story = val["score"].to_numpy() >= STORY - 1e-9
    a, b = val["id_a"].to_numpy(), val["id_b"].to_numpy()
    flags = {name: together(groups, a, b) for name, groups in kept.items()}

    def figures(name: str, mask: np.ndarray) -> tuple[float, float | None]:
        same, size = flags[name]
        tp = int((same & story & mask).sum())
        p, r = tp / max(1, int((same & mask).sum())), tp / max(1, int((story & mask).sum()))
        big = same & mask & (size >= 5)
        return (2 * p * r / (p + r) if tp else 0.0), (float(story[big].mean()) if big.any() else None)

    tp = grouped = big_same = big_all = 0
    chosen = []
    for f in range(5):
        train = fold != f
        scored = {n: figures(n, train) for n in kept}
        pure = [n for n, (_, pur) in scored.items() if pur is None or pur >= purity]
        if pure:
            best = max(pure, key=lambda n: (scored[n][0], n))
        else:  # none reaches the purity: the purest whose F1 is within 0.01 of the one-level rule's
            floor = scored[next(iter(kept))][0] - 0.01
            near = [n for n, (f1, _) in scored.items() if f1 >= floor]
            best = max(near, key=lambda n: (scored[n][1] or 0.0, scored[n][0], n))
        chosen.append(best)
        same, size = flags[best]
        test = fold == f
        tp += int((same & story & test).sum())
        grouped += int((same & test).sum())
        big_same += int((same & test & (size >= 5) & story).sum())
        big_all += int((same & test & (size >= 5)).sum())
    p, r = tp / max(1, grouped), tp / max(1, int(story.sum()))
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / (p + r), 4) if tp else 0.0,
        "purity_5+": round(big_same / big_all, 4) if big_all else None,
        "n_5+": big_all,
        "chosen": chosen,
    }


def parse_large(parser: argparse.ArgumentParser, text: str) -> list[tuple[int, float | None, float | None]]:
    """``--large N:S:M,...``: a group size N (2 or more), a support share S and a margin M (``-``: none)."""
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        try:
            size, share, margin = item.split(":")
            out.append(
                (int(size), None if share == "-" else float(share), None if margin == "-" else float(margin))
            )
        except ValueError:
            parser.error(f"argument --large: {item!r} is not N:S:M (a size, a share or -, a margin or -)")
        if out[-1][0] < 2 or not 0 <= (out[-1][1] or 0) <= 1:
            parser.error(f"argument --large: {item!r}: the size must be 2 or more, the share within 0..1")
    return out


def check_summary_rules(
    ap: argparse.ArgumentParser, args: argparse.Namespace, large: list[tuple], topics: list[str]
) -> None:
    """With several stores, ``--summary-story`` and ``--summary-topic`` must name rules this run measures:
    an unknown one left the summary across the models out of the results without a word."""
    if len(args.model_store) < 2:
        return
    stories = list(story_rules(large, 0.0))
    if args.summary_story not in stories:
        ap.error(
            f"argument --summary-story: {args.summary_story!r} is not measured (rules: {', '.join(stories)})"
        )
    if args.summary_topic not in topics:
        ap.error(
            f"argument --summary-topic: {args.summary_topic!r} is not measured (rules: {', '.join(topics)})"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model-store",
        action="append",
        required=True,
        type=Path,
        help="a model store whose current model's report is judged (repeatable)",
    )
    variants = "5:-:0.005,5:-:0.01,5:-:0.02,5:0.5:-,5:0.6:-,4:0.5:0.01,3:0.6:-,3:0.75:-"
    ap.add_argument(
        "--large",
        default=variants,
        help=f"story variants N:S:M,... ('-' for no condition; see above) (default: {variants})",
    )
    ap.add_argument(
        "--topic-shares",
        default="0,0.1,0.2,0.3,0.4",
        help="the topic rule's shares measured; 0: components (default: 0,0.1,0.2,0.3,0.4)",
    )
    ap.add_argument(
        "--topic-margins",
        default="-0.04,0,0.04,0.08,0.12",
        help="moves of the topic threshold measured (default: -0.04,0,0.04,0.08,0.12)",
    )
    ap.add_argument(
        "--purity",
        type=float,
        default=0.8,
        help="the 5+ purity a story variant must reach to be chosen on the folds (default: 0.8)",
    )
    ap.add_argument("--no-verdicts", action="store_true", help="leave out the training pairs as verdicts")
    ap.add_argument("--tag", default="", help="write stories_TAG.md/.json/.png (default: none, stories.*)")
    summary_story = large_rule_name(DEFAULT_LARGE, DEFAULT_LARGE_SHARE, DEFAULT_LARGE_MARGIN)
    ap.add_argument(
        "--summary-story",
        default=summary_story,
        help="the story rule whose figures are summed up across the models (several --model-store) "
        f"(default: {summary_story}, the report's)",
    )
    summary_topic = f"support-{DEFAULT_TOPIC_SUPPORT:g}"
    ap.add_argument(
        "--summary-topic",
        default=summary_topic,
        help=f"the topic rule summed up across the models (default: {summary_topic}, the report's)",
    )
    args = ap.parse_args(argv)
    large = parse_large(ap, args.large)
    topic_rules: dict[str, Any] = {}
    for share in numbers(ap, "--topic-shares", args.topic_shares, float, 0, 1):
        topic_rules["components" if share == 0 else f"support-{share:g}"] = (
            ConnectedComponents() if share == 0 else SharedSupport(min_share=share)
        )
    margins = numbers(ap, "--topic-margins", args.topic_margins)
    if not topic_rules or not margins:
        ap.error("--topic-shares and --topic-margins need one value or more each")
    if not 0 < args.purity <= 1:
        ap.error(f"argument --purity: {args.purity} is out of range (between 0 and 1)")
    check_summary_rules(ap, args, large, list(topic_rules))
    check_model_stores(ap, args.model_store)
    runs = []
    for store in args.model_store:
        model = model_of(store)
        wide = wide_scores(model)
        topical = topic_links(model, model.topic_threshold + min(margins))
        verdicts = None if args.no_verdicts else training_verdicts()
        rows, kept = measure(model, wide, topical, large, topic_rules, margins, verdicts)
        runs.append(
            {
                "store": str(store),
                "version": model.version,
                "threshold": model.threshold,
                "topic_threshold": model.topic_threshold,
                "rows": rows,
                "folds": folds(kept, model.validation, args.purity),
            }
        )
    tag = f"_{args.tag}" if args.tag else ""
    out = RESULTS / f"stories{tag}"
    payload = {
        "machine": machine(),
        "not_the_report": LEFT_OUT,
        "purity": args.purity,
        "story_rule": args.summary_story,
        "topic_rule": args.summary_topic,
        "runs": runs,
    }
    atomic_write_text(out.with_suffix(".json"), json.dumps(payload, indent=1, default=str))
    atomic_write_text(out.with_suffix(".md"), markdown(payload))
    print(markdown(payload))
    return 0


def across(payload: dict[str, Any], story_rule: str, topic_rule: str) -> list[str]:
    """The one-level rule (the first), ``story_rule`` and ``topic_rule`` at each model's stored topic
    threshold, model by model, with their mean and spread (highest less lowest): markdown lines."""
    rows = []
    for run in payload["runs"]:
        frame = pd.DataFrame(run["rows"])
        one = frame.iloc[0]
        mine = frame[frame["story_rule"] == story_rule]
        topic = mine[
            (mine["topic_rule"] == topic_rule) & np.isclose(mine["topic_threshold"], run["topic_threshold"])
        ]
        if mine.empty or topic.empty:
            return []
        s, t = mine.iloc[0], topic.iloc[0]
        rows.append(
            {
                "model": run["version"],
                "one-level F1": one["f1"],
                "story F1": s["f1"],
                "5+": s["purity_5+"],
                "n 5+": s["n_5+"],
                "3+": s["purity_3+"],
                "n 3+": s["n_3+"],
                "folds F1": run["folds"]["f1"],
                "folds 5+": run["folds"]["purity_5+"],
                "folds n 5+": run["folds"]["n_5+"],
                "topic 0.75+": t["topic_precision"],
                "n topic": t["n_topic"],
            }
        )
    frame = pd.DataFrame(rows)
    cols = list(frame.columns[1:])
    lines = [f"## Across the models: {story_rule}, topics {topic_rule} at the stored topic threshold", ""]
    lines += ["| model | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for _, r in frame.iterrows():
        lines.append(f"| {r['model']} | " + " | ".join(f"{r[c]}" for c in cols) + " |")
    num = frame[cols].apply(pd.to_numeric, errors="coerce")
    lines.append("| mean | " + " | ".join(f"{v:.4f}" for v in num.mean()) + " |")
    lines.append("| spread | " + " | ".join(f"{v:.4f}" for v in num.max() - num.min()) + " |")
    return [*lines, ""]


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# Stories inside topics ({payload['machine']})", "", LEFT_OUT, ""]
    for run in payload["runs"]:
        frame = pd.DataFrame(run["rows"])
        lines += [f"## {run['version']} (story threshold {run['threshold']:.4f}, topic threshold "]
        lines[-1] += f"{run['topic_threshold']:.4f})"
        lines += [
            "",
            "| story rule | P | R | F1 | clusters | largest | purity 2 | 3-4 | 5-9 | 10+ | 5+ | 3+ |",
        ]
        lines += ["|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for _, r in frame.drop_duplicates("story_rule").iterrows():
            pur = " | ".join(f"{r[f'purity_{b}']} ({r[f'n_{b}']})" for b in BANDS)
            lines.append(
                f"| {r['story_rule']} | {r['precision']} | {r['recall']} | {r['f1']} | {r['clusters']} | "
                f"{r['largest']} | {pur} |"
            )
        f = run["folds"]
        lines += ["", f"Chosen on four folds, judged on the fifth: P {f['precision']}, R {f['recall']}, "]
        lines[-1] += f"F1 {f['f1']}, 5+ purity {f['purity_5+']} ({f['n_5+']}); chose {', '.join(f['chosen'])}"
        lines += [
            "",
            "| story rule | topic threshold | topic rule | topics | items | largest | judged inside | ",
        ]
        lines[-1] += "at 0.75+ | coverage of 0.75+ |"
        lines += ["|---|---:|---|---:|---:|---:|---:|---:|---:|"]
        for _, r in frame.iterrows():
            lines.append(
                f"| {r['story_rule']} | {r['topic_threshold']:.4f} | {r['topic_rule']} | {r['topics']} | "
                f"{r['topic_items']} | {r['largest_topic']} | {r['n_topic']} | {r['topic_precision']} | "
                f"{r['topic_coverage']} |"
            )
        lines.append("")
    if len(payload["runs"]) > 1:
        lines += across(payload, payload["story_rule"], payload["topic_rule"])
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
