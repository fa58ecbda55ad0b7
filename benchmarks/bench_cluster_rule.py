"""Clusters judged as clusters: connected components against rules that need support inside the cluster,
with and without the series veto, by cluster size, on validation and on folds.

A report links two items when their pair scores at or above the threshold, and its clusters were the
connected components of those links: one weak link can join two stories, and a chain of links through a
topic (exam tips, one index's daily bulletins) makes one cluster. This benchmark compares, on the same
scored pairs, each rule judged with ``nlsim judge``'s cluster-level figures
(:func:`nlsim.evaluation.judge.judge_tables`) on the validation pairs:

- ``components``: connected components (:class:`nlsim.clusters.rules.ConnectedComponents`);
- ``support-S``: average linkage over the links (:class:`nlsim.clusters.rules.SharedSupport`): two groups
  merge while a share ``S`` or more of their member pairs are linked (``--supports``, default
  0.3,0.4,0.5,0.6,0.7);
- ``…+veto``: the same after the series veto (:mod:`nlsim.rerank.series`, its default tests): a pair
  whose headlines name other years, model codes, figures of one template (unless they share a model
  code) or a rise against a fall is held at 0.75, so it links nothing;
- ``…+veto1``: the same after the veto's first three tests (years, codes, template, no code spared), as
  it began; ``…+veto+dates``: the default tests and ``dates`` (two days named, none shared);
- ``support-S+veto+largeN-M``: the support rule with the veto, where a merge into a group of ``N`` items
  or more also needs the links between its two halves to score on average at least the threshold plus
  ``M`` (``--large N:M,...``; none by default): a large cluster must be held by links above the threshold;
- ``average``: average linkage on the scores (a pair never scored, or scored below the floor, counts 0);
- ``share-S``: while a cluster links fewer than a share ``S`` of its member pairs, its weakest link is cut
  (``--shares``, default 0.3 and 0.5);
- ``community``: Louvain communities of the score-weighted links (``networkx``, resolution 1, seed 0);
- ``editors``: components once the training split's verdicts cut and add links (the validation pairs,
  which judge, are never used).

Beside precision, recall and F1 it gives the purity by cluster size: the share of judged validation pairs
inside clusters of 2, 3-4, 5-9 and 10+ items that are the same story. On folds: the validation pairs are
cut in 5 folds (stratified by same story, seed 0); for each fold the rule (at the model's calibrated
threshold, ``--threshold``) and the rule and threshold (on the grid) are chosen on the four other folds
and judged on it; the pooled held-out figures say what choosing on validation is worth.

The scored pairs come from a report run at a lower threshold (``--floor``, default 0.84) with the store's
current model and its reranker, without the veto and with the components rule (``nlsim dedup --model
current --no-series-veto --cluster-rule components``), cached in
``benchmarks/results/cache/cluster_rule/`` per model version and training record; or from ``--scores FILE``
(a ``pairs.parquet`` of such a run; repeat it for several trainings, e.g. seeds: each is judged, and the
spread is printed). Figures go
to ``benchmarks/results/cluster_rule.md``/``.json`` and a plot ``cluster_rule.png``. The test split is
never read, but by ``--test-once RULE``: the rule chosen on validation and folds, judged on the test
pairs once (``cluster_rule_test_once.md``/``.json``).

    python benchmarks/bench_cluster_rule.py [--model-store models] [--floor 0.84] [--threshold 0.874]
        [--scores pairs.parquet ...] [--supports 0.3,0.4,0.5,0.6,0.7] [--shares 0.3,0.5] [--tag NAME]
        [--large 5:0.01,...]
    python benchmarks/bench_cluster_rule.py --veto-only
    python benchmarks/bench_cluster_rule.py --scores pairs.parquet --threshold 0.8808 \\
        --test-once components+veto
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from _common import RESULTS, check_files, check_model_stores, machine, numbers, run_nlsim, save_figure

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from nlsim.clusters.rules import ConnectedComponents, Link, SharedSupport  # noqa: E402
from nlsim.evaluation.levels import SAME_STORY as STORY  # noqa: E402 - after the path is set
from nlsim.io.atomic import atomic_write_parquet, atomic_write_text  # noqa: E402

PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
CORPUS = ROOT / "data" / "thucnews.parquet"
OUT = RESULTS / "cluster_rule"
CACHE = RESULTS / "cache" / "cluster_rule"
STEP = 0.01


def scored_pairs(store: Path, floor: float, folder: Path) -> pd.DataFrame:
    """Every candidate pair of the corpus scoring ``floor`` or more, with its score and titles (``id_a``,
    ``id_b``, ``score``, ``title_a``, ``title_b``), from a report run with the store's current model, the
    veto off (it is applied here) and the components rule; cached per model version."""
    cache = scores_cache(store, floor)
    if not cache.exists():
        cmd = [sys.executable, "-m", "nlsim", "dedup", "--corpus", str(CORPUS), "--out", str(folder)]
        cmd += ["--model", "current", "--model-store", str(store), "--threshold", str(floor), "--no-progress"]
        cmd += ["--no-series-veto", "--cluster-rule", "components", "--near-misses", "0"]
        run_nlsim(cmd, ROOT)
        # whole or not at all: a run stopped mid-write leaves no cut-off cache for the next to read
        atomic_write_parquet(pd.read_parquet(folder / "pairs.parquet"), cache)
    return read_scores(cache)


def scores_cache(store: Path, floor: float) -> Path:
    """The cached scored pairs of the store's current model at ``floor``: named by its version and a digest of
    its ``training.json``, so that two trainings sharing a version name (the same recipe and data, trained
    again or on another machine's arithmetic) never read each other's scores."""
    import hashlib

    current = json.loads((store / "CURRENT.json").read_text()) if (store / "CURRENT.json").exists() else {}
    tag = str(current.get("version", "current"))
    record = store / "versions" / tag / "training.json"
    trained = hashlib.sha256(record.read_bytes()).hexdigest()[:8] if record.is_file() else "unknown"
    return CACHE / f"{tag}-{trained}-floor{floor:g}.parquet"


def read_scores(path: Path) -> pd.DataFrame:
    """The scored pairs of a report's ``pairs.parquet`` (``similarity``: the score the threshold applies
    to), with the series veto's verdict of each (``vetoed``)."""
    return with_vetoes(pd.read_parquet(path))


def with_vetoes(pairs: pd.DataFrame) -> pd.DataFrame:
    """Scored pairs (``id_a``, ``id_b``, ``similarity``, ``title_a``, ``title_b``) as :func:`read_scores`
    gives them: ``score`` and the series veto's verdicts."""
    from nlsim.rerank.series import FIRST_TESTS, TESTS, series_conflict

    out = pd.DataFrame(
        {"id_a": pairs["id_a"].astype(str), "id_b": pairs["id_b"].astype(str), "score": pairs["similarity"]}
    )
    titles = list(zip(pairs["title_a"].astype(str), pairs["title_b"].astype(str), strict=True))
    return out.assign(
        vetoed=[series_conflict(a, b) is not None for a, b in titles],
        vetoed_first=[series_conflict(a, b, FIRST_TESTS, False) is not None for a, b in titles],
        vetoed_dates=[series_conflict(a, b, (*TESTS, "dates")) is not None for a, b in titles],
    )


def components(ids: list[str], edges: pd.DataFrame) -> list[list[str]]:
    """Connected components (of two or more items) of ``edges`` over ``ids``."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    pos = {item: i for i, item in enumerate(ids)}
    a = edges["id_a"].map(pos).to_numpy()
    b = edges["id_b"].map(pos).to_numpy()
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(len(ids), len(ids)))
    _, labels = connected_components(graph, directed=False)
    groups = pd.Series(ids).groupby(labels).agg(list)
    return [g for g in groups if len(g) > 1]


def average_linkage(
    members: list[str], scores: dict[tuple[str, str], float], threshold: float
) -> list[list[str]]:
    """``members`` (one component) split by average linkage cut at ``threshold`` (missing pairs count 0)."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    if len(members) == 2:
        return [members]
    n = len(members)
    dist = np.ones((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            s = scores.get((members[i], members[j]), scores.get((members[j], members[i]), 0.0))
            dist[i, j] = dist[j, i] = 1.0 - s
    np.fill_diagonal(dist, 0.0)
    tree = linkage(squareform(dist, checks=False), method="average")
    labels = fcluster(tree, t=1.0 - threshold + 1e-9, criterion="distance")
    groups = pd.Series(members).groupby(labels).agg(list)
    return [g for g in groups if len(g) > 1]


def judged(groups: list[list[str]], links: pd.DataFrame, validation: pd.DataFrame, ids: list[str]) -> dict:
    """The cluster-level judge of ``groups`` (and the reported pairs ``links``) on the validation pairs,
    with the purity by cluster size."""
    from nlsim.evaluation.judge import judge_tables

    clusters = pd.DataFrame({"cluster_id": [f"c{i}" for i in range(len(groups))], "member_ids": groups})
    figures = judge_tables(clusters, links[["id_a", "id_b"]], validation, items=ids)
    out = {k: figures[k] for k in ("precision", "recall", "f1", "f1_ci95")} | {"clusters": len(groups)}
    for band in figures["purity_by_size"]:  # n_BIN and purity_BIN, as `nlsim judge` gives them
        out |= {f"n_{band.band}": band.judged, f"purity_{band.band}": band.share}
    return out | {"largest": max((len(g) for g in groups), default=0)}


def inside_links(members: list[str], links: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``links`` whose two ends are both among ``members``."""
    return links[links["id_a"].isin(members) & links["id_b"].isin(members)]


def link_share(members: list[str], links: pd.DataFrame, share: float) -> list[list[str]]:
    """``members`` (one component of ``links``) split until every cluster links at least ``share`` of its
    member pairs: the weakest link of a cluster short of it is cut, and the cluster is split again."""
    inside = inside_links(members, links).sort_values("score")
    n = len(members)
    if len(inside) >= share * n * (n - 1) / 2:
        return [members]
    rest = inside.iloc[1:]
    return [g for part in components(members, rest) for g in link_share(part, rest, share)]


def community(members: list[str], links: pd.DataFrame) -> list[list[str]]:
    """``members`` (one component of ``links``) split into Louvain communities of the score-weighted links."""
    import networkx as nx

    if len(members) < 3:
        return [members]
    graph = nx.Graph()
    inside = inside_links(members, links)
    graph.add_weighted_edges_from(zip(inside["id_a"], inside["id_b"], inside["score"], strict=True))
    parts = nx.community.louvain_communities(graph, weight="weight", resolution=1.0, seed=0)
    return [sorted(p) for p in parts if len(p) > 1]


def with_verdicts(links: pd.DataFrame, train: pd.DataFrame) -> pd.DataFrame:
    """``links`` with the editors' verdicts of the training split applied: a link between two items the
    editors scored below same story is cut, and two items they scored the same story are linked."""
    below = train[train["score"] < STORY]
    rejected = {frozenset(p) for p in zip(below["id_a"], below["id_b"], strict=True)}
    kept = [frozenset(p) not in rejected for p in zip(links["id_a"], links["id_b"], strict=True)]
    story = train[train["score"] >= STORY]
    return pd.concat([links[kept], story.assign(score=1.0)[["id_a", "id_b", "score"]]], ignore_index=True)


def rule_groups(
    pairs: pd.DataFrame,
    ids: list[str],
    t: float,
    supports: list[float],
    shares: list[float],
    train: pd.DataFrame | None,
    scores: dict[tuple[str, str], float],
    large: Sequence[tuple[int, float]] = (),
) -> dict[str, list[list[str]]]:
    """Every rule's groups at threshold ``t`` (see the module doc)."""

    links = pairs[pairs["score"] >= t]

    def kept(frame: pd.DataFrame) -> list[Link]:
        return [Link(a, b, s) for a, b, s in zip(frame["id_a"], frame["id_b"], frame["score"], strict=True)]

    as_links = {
        "": kept(links),
        "+veto1": kept(links[~links["vetoed_first"]]),
        "+veto": kept(links[~links["vetoed"]]),
        "+veto+dates": kept(links[~links["vetoed_dates"]]),
    }
    rules: dict[str, list[list[str]]] = {}
    for tag, chosen in as_links.items():
        rules[f"components{tag}"] = ConnectedComponents().clusters(chosen)
        for sup in supports if tag in ("", "+veto1", "+veto") else ():
            rules[f"support-{sup:g}{tag}"] = SharedSupport(min_share=sup).clusters(chosen)
            for size, margin in large if tag == "+veto" else ():
                rule = SharedSupport(min_share=sup, large=size, large_floor=t + margin)
                rules[f"support-{sup:g}{tag}+large{size}-{margin:g}"] = rule.clusters(chosen)
    comps = components(ids, links)
    rules["average"] = [g for comp in comps for g in average_linkage(comp, scores, float(t))]
    if train is not None:
        rules["editors"] = components(ids, with_verdicts(links, train))
    for share in shares:
        rules[f"share-{share:g}"] = [g for comp in comps for g in link_share(comp, links, share)]
    rules["community"] = [g for comp in comps for g in community(comp, links)]
    return rules


def held(groups: list[list[str]], links: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``links`` whose two items share one of ``groups``."""
    cluster = {m: i for i, g in enumerate(groups) for m in g}
    keep = np.array(
        [
            a in cluster and cluster[a] == cluster.get(b)
            for a, b in zip(links["id_a"], links["id_b"], strict=True)
        ],
        dtype=bool,
    )
    return links[keep]


def measure(
    pairs: pd.DataFrame,
    validation: pd.DataFrame,
    ids: list[str],
    floor: float,
    supports: list[float],
    shares: list[float],
    train: pd.DataFrame | None = None,
    extra: float | None = None,
    large: Sequence[tuple[int, float]] = (),
) -> tuple[list[dict], dict[tuple[float, str], list[list[str]]]]:
    """Every rule judged at each threshold from ``floor`` to 0.96 (and at ``extra``, the calibrated
    threshold), with every rule's groups (for the folds)."""
    scores = {(a, b): s for a, b, s in zip(pairs["id_a"], pairs["id_b"], pairs["score"], strict=True)}
    grid = [float(t) for t in np.round(np.arange(floor, 0.96, STEP), 2)]
    if extra is not None:
        grid = sorted({*grid, round(extra, 6)})
    rows, kept = [], {}
    for t in grid:
        links = pairs[pairs["score"] >= t]
        line = []
        for rule, groups in rule_groups(pairs, ids, t, supports, shares, train, scores, large).items():
            kept[(t, rule)] = groups
            rows.append(
                {"threshold": t, "rule": rule, **judged(groups, held(groups, links), validation, ids)}
            )
            line.append(f"{rule} {rows[-1]['f1']}")
        print(f"threshold {t:.4f}: F1 " + ", ".join(line))
    return rows, kept


def stratified_folds(judged_pairs: pd.DataFrame, k: int = 5, seed: int = 0) -> np.ndarray:
    """A fold number for each judged pair: same-story and other pairs dealt out in turn after a shuffle."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(judged_pairs), dtype=np.int64)
    story = judged_pairs["score"].to_numpy() >= STORY - 1e-9
    for part in (np.flatnonzero(story), np.flatnonzero(~story)):
        fold[rng.permutation(part)] = np.arange(len(part)) % k
    return fold


def folds(
    kept: dict[tuple[float, str], list[list[str]]], validation: pd.DataFrame, threshold: float | None
) -> dict:
    """Choose on four folds of the validation pairs, judge on the fifth: the rule at the calibrated
    ``threshold`` (``rule``) and the rule and threshold on the grid (``rule+threshold``); the pooled
    held-out precision, recall and F1 (the cluster-level figures of ``nlsim judge``), and each fold's
    choice."""
    fold = stratified_folds(validation)
    story = validation["score"].to_numpy() >= STORY - 1e-9
    a, b = validation["id_a"].to_numpy(), validation["id_b"].to_numpy()
    together = {}
    for key, groups in kept.items():
        cluster = {m: i for i, g in enumerate(groups) for m in g}
        together[key] = np.array(
            [x in cluster and cluster[x] == cluster.get(y) for x, y in zip(a, b, strict=True)]
        )

    def f1(key: tuple[float, str], mask: np.ndarray) -> float:
        tp = int((together[key] & story & mask).sum())
        p, r = tp / max(1, int((together[key] & mask).sum())), tp / max(1, int((story & mask).sum()))
        return 2 * p * r / (p + r) if tp else 0.0

    candidates = {"rule": [k for k in kept if threshold is not None and np.isclose(k[0], threshold)]}
    candidates["rule+threshold"] = list(kept)
    out: dict = {}
    for what, keys in candidates.items():
        if not keys:
            continue
        tp = grouped = 0
        chosen = []
        for f in range(5):
            best = max(keys, key=lambda k: (f1(k, fold != f), k[1]))
            held_out = fold == f
            tp += int((together[best] & story & held_out).sum())
            grouped += int((together[best] & held_out).sum())
            chosen.append(f"{best[1]} @ {best[0]:.4f} (held-out F1 {f1(best, held_out):.3f})")
        p, r = tp / max(1, grouped), tp / max(1, int(story.sum()))
        out[what] = {
            "precision": round(p, 4),
            "recall": round(r, 4),
            "f1": round(2 * p * r / (p + r), 4) if tp else 0.0,
            "chosen": chosen,
        }
    return out


def joint_folds(
    kept_of_runs: list[dict[tuple[float, str], list[list[str]]]],
    validation: pd.DataFrame,
    thresholds: list[float],
) -> dict:
    """One rule for every scored-pairs set, chosen on four folds (the largest F1 summed over the sets, each
    at its calibrated threshold) and judged on the fifth: each set's pooled held-out F1 and the choices."""
    fold = stratified_folds(validation)
    story = validation["score"].to_numpy() >= STORY - 1e-9
    a, b = validation["id_a"].to_numpy(), validation["id_b"].to_numpy()
    together: list[dict[str, np.ndarray]] = []
    for kept, t in zip(kept_of_runs, thresholds, strict=True):
        per: dict[str, np.ndarray] = {}
        for (th, rule), groups in kept.items():
            if np.isclose(th, t):
                cluster = {m: i for i, g in enumerate(groups) for m in g}
                per[rule] = np.array(
                    [x in cluster and cluster[x] == cluster.get(y) for x, y in zip(a, b, strict=True)]
                )
        together.append(per)
    rules = sorted(set.intersection(*(set(p) for p in together)))

    def f1(got: np.ndarray, mask: np.ndarray) -> float:
        tp = int((got & story & mask).sum())
        p, r = tp / max(1, int((got & mask).sum())), tp / max(1, int((story & mask).sum()))
        return 2 * p * r / (p + r) if tp else 0.0

    chosen = []
    tp = [0] * len(together)
    grouped = [0] * len(together)
    for f in range(5):
        best = max(rules, key=lambda r: (sum(f1(p[r], fold != f) for p in together), r))
        chosen.append(best)
        for i, p in enumerate(together):
            tp[i] += int((p[best] & story & (fold == f)).sum())
            grouped[i] += int((p[best] & (fold == f)).sum())
    f1s = []
    for i in range(len(together)):
        p, r = tp[i] / max(1, grouped[i]), tp[i] / max(1, int(story.sum()))
        f1s.append(round(2 * p * r / (p + r), 4) if tp[i] else 0.0)
    return {"f1_of_each": f1s, "chosen": chosen}


def plot(table: pd.DataFrame, threshold: float | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharex=True)
    for ax, what in zip(axes, ("precision", "recall", "f1"), strict=True):
        for rule, frame in table.groupby("rule"):
            ax.plot(frame["threshold"], frame[what].astype(float), marker=".", label=rule)
        if threshold is not None:
            ax.axvline(threshold, color="grey", linestyle=":", label="calibrated threshold")
        ax.set_title(f"cluster-level {what} (validation)")
        ax.set_xlabel("rerank-score threshold")
    axes[0].legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _row(r: dict) -> str:
    ci = r["f1_ci95"] or [None, None]
    pur = " | ".join(f"{r[f'purity_{b}']} ({r[f'n_{b}']})" for b in BINS)
    return (
        f"| {r['threshold']:.4f} | {r['rule']} | {r['clusters']} | {r['largest']} | {r['precision']} | "
        f"{r['recall']} | {r['f1']} [{ci[0]}, {ci[1]}] | {pur} |"
    )


BINS = ("2", "3-4", "5-9", "10+", "5+")
HEAD = [
    "| threshold | rule | clusters | largest | precision | recall | F1 [95% CI] | purity 2 (pairs) "
    "| 3-4 | 5-9 "
    "| 10+ | 5+ |",
    "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
]


def markdown(runs: list[dict], header: str) -> str:
    """The figures of every scored-pairs set (``runs``: name, threshold, table, folds)."""
    lines = [f"# Clustering rule, judged at the cluster level ({header})", ""]
    lines += ["Purity: the share of judged validation pairs inside clusters of that size that are the same "]
    lines += ["story (in brackets: how many judged pairs fall there).", ""]
    for run in runs:
        table, threshold = run["table"], run["threshold"]
        lines += [f"## {run['name']}", ""]
        if threshold is not None:
            at = table[np.isclose(table["threshold"], threshold)]
            lines += [f"At the model's calibrated threshold ({threshold:.4f}):", "", *HEAD]
            lines += [_row(r) for r in at.to_dict("records")]
            lines += [""]
        best = table.loc[table.groupby("rule")["f1"].idxmax()]
        lines += ["Best F1 of each rule on the grid (chosen on validation: flatters it):", "", *HEAD]
        lines += [_row(r) for r in best.to_dict("records")]
        lines += ["", "Chosen on four folds of the validation pairs, judged on the fifth (pooled):", ""]
        for what, fig in run["folds"].items():
            lines += [f"- {what}: P {fig['precision']}, R {fig['recall']}, F1 {fig['f1']}; chose "]
            lines[-1] += "; ".join(fig["chosen"])
        lines += ["", "<details><summary>every threshold</summary>", "", *HEAD]
        lines += [_row(r) for r in table.to_dict("records")]
        lines += ["", "</details>", ""]
    if len(runs) > 1 and all(r["threshold"] is not None for r in runs):
        lines += ["## Across the scored-pairs sets (each at its calibrated threshold)", ""]
        rules = runs[0]["table"]["rule"].unique()
        joint = runs[0].get("joint")
        if joint:
            lines += ["One rule for every set, chosen on four folds (summed F1, each set at its calibrated "]
            lines += ["threshold) and judged on the fifth: pooled held-out F1 "]
            lines[-1] += f"{', '.join(map(str, joint['f1_of_each']))}; chose {', '.join(joint['chosen'])}."
            lines += [""]
        lines += ["| rule | F1 of each | spread | purity 5+ of each |", "|---|---|---:|---|"]
        for rule in rules:
            f1s, p5 = [], []
            for run in runs:
                t = run["table"]
                row = t[(t["rule"] == rule) & np.isclose(t["threshold"], run["threshold"])].iloc[0]
                f1s.append(row["f1"])
                p5.append(row["purity_5+"])
            spread = round(max(f1s) - min(f1s), 4) if None not in f1s else None
            lines.append(f"| {rule} | {', '.join(map(str, f1s))} | {spread} | {', '.join(map(str, p5))} |")
    return "\n".join(lines) + "\n"


def veto_on_annotated(scored: pd.DataFrame) -> str:
    """What the series veto does to the editors' pairs of the training and validation splits: how many it
    fires on, why, and how many of those are the same story (the veto's mistakes)."""
    from nlsim.rerank.series import FIRST_TESTS, TESTS, series_conflict

    lines = [
        "| tests | split | pairs | same story | vetoed | of them same story | why | scores of the vetoed |"
    ]
    lines += ["|---|---|---:|---:|---:|---:|---|---|"]
    for split, (name, tests, spare) in itertools.product(
        ("train", "validation"),
        (("first", FIRST_TESTS, False), ("default", TESTS, True), ("+dates", (*TESTS, "dates"), True)),
    ):
        part = scored[scored["split"] == split]
        why = pd.Series(
            [
                series_conflict(a, b, tests, spare)
                for a, b in zip(part["text_a"], part["text_b"], strict=True)
            ],
            index=part.index,
        )
        hit = part[why.notna()]
        story = int((part["score"] >= STORY - 1e-9).sum())
        wrong = int((hit["score"] >= STORY - 1e-9).sum())
        lines.append(
            f"| {name} | {split} | {len(part)} | {story} | {len(hit)} | {wrong} | "
            f"{why.value_counts().to_dict()} | {hit['score'].value_counts().sort_index().to_dict()} |"
        )
    return "\n".join(lines) + "\n"


def calibrated_threshold(store: Path) -> float | None:
    """The current model's calibrated rerank threshold, from the store (None when unknown)."""
    try:
        current = json.loads((store / "CURRENT.json").read_text())
        folder = store / "versions" / str(current["version"])
        return float(json.loads((folder / "reranker.json").read_text())["calibration"]["threshold"])
    except (OSError, KeyError, TypeError, ValueError):
        return None


SCORE_COLUMNS = ("id_a", "id_b", "similarity", "title_a", "title_b")


def check_scores(parser: argparse.ArgumentParser, paths: list[Path]) -> None:
    """Each ``--scores`` file is a Parquet table with the columns of a report's ``pairs.parquet`` that
    :func:`read_scores` reads (its schema only is read here)."""
    import pyarrow.parquet as pq

    for path in paths:
        try:
            columns = set(pq.read_schema(path).names)
        except Exception as exc:  # noqa: BLE001 - not Parquet at all, cut short: named, not a traceback
            parser.error(f"argument --scores: {path} is not a Parquet table ({type(exc).__name__}: {exc})")
        missing = [c for c in SCORE_COLUMNS if c not in columns]
        if missing:
            parser.error(
                f"argument --scores: {path} has no {', '.join(missing)} column "
                "(a report's pairs.parquet, e.g. of nlsim dedup --no-series-veto --cluster-rule components)"
            )


def check_test_once(parser: argparse.ArgumentParser, args: argparse.Namespace, supports: list[float]) -> None:
    """``--test-once RULE`` names a rule :func:`test_once` judges, each set has its calibrated threshold:
    checked before the pairs are scored (minutes), not after."""
    tags = ("", "+veto1", "+veto")
    rules = [f"components{t}" for t in (*tags, "+veto+dates")] + ["average", "community"]
    rules += [f"support-{s:g}{t}" for s in supports for t in tags]
    if args.test_once not in rules:
        parser.error(f"argument --test-once: no rule {args.test_once!r} (rules: {', '.join(rules)})")
    if args.scores and not args.threshold:
        parser.error("argument --test-once: give each --scores its calibrated --threshold")
    if not args.scores and not args.threshold and calibrated_threshold(args.model_store.resolve()) is None:
        parser.error(f"argument --test-once: no calibrated threshold in {args.model_store}: give --threshold")


def parse_large(parser: argparse.ArgumentParser, text: str) -> list[tuple[int, float]]:
    """``--large N:M,...``: a group size N (2 or more) and a margin M above the threshold, per variant."""
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        try:
            size, margin = item.split(":")
            out.append((int(size), float(margin)))
        except ValueError:
            parser.error(f"argument --large: {item!r} is not N:M (a group size and a margin, e.g. 5:0.01)")
        if out[-1][0] < 2:
            parser.error(f"argument --large: {item!r}: the group size must be 2 or more")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument(
        "--model-store",
        type=Path,
        default=ROOT / "models",
        help="the model store whose current model scores the pairs, without --scores (default: models)",
    )
    parser.add_argument("--floor", type=float, default=0.84, help="lowest rerank score kept (default 0.84)")
    parser.add_argument(
        "--threshold",
        type=float,
        action="append",
        default=None,
        help="the model's calibrated threshold (once per --scores; default: read from the store)",
    )
    parser.add_argument(
        "--scores",
        type=Path,
        action="append",
        default=None,
        help="a pairs.parquet of scored pairs (repeatable; default: none, a report of the store's current "
        "model at --floor)",
    )
    parser.add_argument(
        "--supports",
        default="0.3,0.4,0.5,0.6,0.7",
        help="support shares to try (default 0.3,0.4,0.5,0.6,0.7)",
    )
    parser.add_argument(
        "--shares", default="0.3,0.5", help="minimum shares of linked member pairs to try (default 0.3,0.5)"
    )
    parser.add_argument(
        "--veto-only", action="store_true", help="only print what the series veto does to the editors' pairs"
    )
    parser.add_argument(
        "--large",
        default="",
        help="variants of support+veto where a merge into N+ items needs links M above the threshold on "
        "average: N:M,... (e.g. 5:0.01; none by default)",
    )
    parser.add_argument(
        "--tag",
        default="",
        help="write cluster_rule_TAG.md/.json/.png instead (default: none, cluster_rule.*)",
    )
    parser.add_argument(
        "--test-once",
        metavar="RULE",
        default=None,
        help="judge only RULE (e.g. components+veto, the default), at each set's --threshold, on the test "
        "split: once, for the rule chosen on validation and folds (cluster_rule_test_once[_TAG].md/.json)",
    )
    args = parser.parse_args(argv)
    if args.veto_only:
        from nlsim.io.pairs import load_pairs

        print(veto_on_annotated(load_pairs(PAIRS)))
        return
    shares = numbers(parser, "--shares", args.shares, float, 0, 1)
    supports = numbers(parser, "--supports", args.supports, float, 0, 1)
    large = parse_large(parser, args.large)
    if args.scores:
        check_files(parser, "--scores", args.scores)
        check_scores(parser, args.scores)
    else:
        check_model_stores(parser, [args.model_store])
    if args.threshold and len(args.threshold) != len(args.scores or [args.model_store]):
        parser.error("argument --threshold: give one per --scores (or one for the store's current model)")
    if args.test_once:
        check_test_once(parser, args, supports)
    from nlsim.io.pairs import load_pairs

    header = machine()
    if args.scores:
        sets = [(str(p), read_scores(p)) for p in args.scores]
        thresholds = args.threshold or [None] * len(sets)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            sets = [("current model", scored_pairs(args.model_store.resolve(), args.floor, Path(tmp) / "r"))]
        thresholds = args.threshold or [calibrated_threshold(args.model_store.resolve())]
    ids = pd.read_parquet(CORPUS, columns=["id"])["id"].astype(str).tolist()
    scored = load_pairs(PAIRS).astype({"id_a": str, "id_b": str})
    if args.test_once:
        test_once(args.test_once, sets, thresholds, scored, ids, header, args.tag, supports)
        return
    validation = scored[scored["split"] == "validation"][["id_a", "id_b", "score"]].reset_index(drop=True)
    train = scored[scored["split"] == "train"][["id_a", "id_b", "score"]]
    runs, kept_of_runs = [], []
    for (name, pairs), threshold in zip(sets, thresholds, strict=True):
        rows, kept = measure(
            pairs, validation, ids, args.floor, supports, shares, train=train, extra=threshold, large=large
        )
        runs.append(
            {
                "name": name,
                "threshold": threshold,
                "table": pd.DataFrame(rows),
                "folds": folds(kept, validation, threshold),
            }
        )
        kept_of_runs.append(kept)
    if len(runs) > 1 and all(t is not None for t in thresholds):
        runs[0]["joint"] = joint_folds(kept_of_runs, validation, [float(t) for t in thresholds])
    out = OUT.with_name(f"{OUT.name}_{args.tag}") if args.tag else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = [{k: (v.to_dict("records") if k == "table" else v) for k, v in r.items()} for r in runs]
    atomic_write_text(
        out.with_suffix(".json"),
        json.dumps({"machine": header, "floor": args.floor, "runs": payload}, indent=1, default=str),
    )
    atomic_write_text(out.with_suffix(".md"), markdown(runs, header))
    plot(runs[0]["table"], runs[0]["threshold"], out.with_suffix(".png"))
    print(out.with_suffix(".md").read_text())


def test_once(
    rule: str,
    sets: list[tuple[str, pd.DataFrame]],
    thresholds: list[float | None],
    scored: pd.DataFrame,
    ids: list[str],
    header: str,
    tag: str,
    supports: list[float],
) -> None:
    """``rule`` judged on the test split at each set's calibrated threshold: the one reading of the test
    pairs, for the rule chosen on validation and folds (``support-S+veto`` for a share S of ``supports``)."""
    if any(t is None for t in thresholds):
        raise SystemExit("--test-once needs each set's calibrated --threshold")
    test = scored[scored["split"] == "test"][["id_a", "id_b", "score"]].reset_index(drop=True)
    rows = []
    for (name, pairs), t in zip(sets, thresholds, strict=True):
        scores = {(a, b): s for a, b, s in zip(pairs["id_a"], pairs["id_b"], pairs["score"], strict=True)}
        wanted = [x for x in supports if rule.startswith(f"support-{x:g}")]
        groups = rule_groups(pairs, ids, float(t), wanted, [], None, scores)
        if rule not in groups:
            raise SystemExit(f"--test-once: no rule {rule!r} (rules: {', '.join(sorted(groups))})")
        links = pairs[pairs["score"] >= float(t)]
        chosen = groups[rule]
        rows.append(
            {"name": name, "threshold": t, "rule": rule, **judged(chosen, held(chosen, links), test, ids)}
        )
    lines = [f"# The chosen rule on the test split, scored once ({header})", ""]
    lines += [f"{len(test)} test pairs, {int((test['score'] >= STORY - 1e-9).sum())} same story.", ""]
    lines += [
        "| scored pairs | threshold | rule | clusters | largest | precision | recall | F1 [95% CI] "
        "| purity 2 (pairs) | 3-4 | 5-9 | 10+ | 5+ |",
        "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {r['name']} {_row(r)}" for r in rows]
    out = OUT.with_name(f"{OUT.name}_test_once" + (f"_{tag}" if tag else ""))
    atomic_write_text(
        out.with_suffix(".json"), json.dumps({"machine": header, "runs": rows}, indent=1, default=str)
    )
    atomic_write_text(out.with_suffix(".md"), "\n".join(lines) + "\n")
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
