"""Clusters judged as clusters: connected components against a rule that needs support inside the cluster.

A report links two items when their pair scores at or above the threshold, and its clusters are the
connected components of those links (:mod:`nlsim.clusters.assign`): one weak link can join two stories.
This benchmark compares that rule with three that need support inside the cluster, each applied inside
every component, and with one that lets the editors' own verdicts link and cut:

- **average linkage** (``average``): clusters are merged only while the average score over *all* pairs
  between them (a pair never scored, or scored below the floor, counts as 0) stays at or above the
  threshold, so a cluster needs support from most of its members' pairs, not one chain of links;
- **a minimum share of links** (``share-S``): while a cluster links fewer than a share ``S`` of its
  member pairs, its weakest link is cut and it falls apart along the cut (``--shares``, default 0.3 and 0.5);
- **a community split** (``community``): components of three items or more are split into Louvain
  communities of the score-weighted link graph (``networkx``, resolution 1, seed 0);
- **the editors' verdicts** (``editors``): connected components once the training split's scored pairs
  have their say: a link the editors scored below same story is cut, and two items they scored the same
  story are linked whatever the model says (the validation pairs, which judge, are never used).

It runs the report once at a lower threshold (``--floor``, default 0.84) with the store's current model and
its reranker (``nlsim dedup --model current``; cached embeddings and cross-encoder scores are reused), then
for each threshold of a grid builds every rule's clusters from the same scored pairs and judges them with
``nlsim judge``'s cluster-level figures (:func:`nlsim.evaluation.judge.judge_tables`) on the validation
pairs. Figures go to ``benchmarks/results/cluster_rule.md``/``.json`` and a plot ``cluster_rule.png``.
The test split is never read.

    python benchmarks/bench_cluster_rule.py [--model-store models] [--floor 0.84] [--threshold 0.874]
        [--shares 0.3,0.5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from _common import RESULTS, machine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from nlsim.evaluation.levels import SAME_STORY as STORY  # noqa: E402 - after the path is set

PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
CORPUS = ROOT / "data" / "thucnews.parquet"
OUT = RESULTS / "cluster_rule"
STEP = 0.01


def scored_pairs(store: Path, floor: float, folder: Path) -> pd.DataFrame:
    """Every candidate pair of the corpus scoring ``floor`` or more, with its score (``id_a``, ``id_b``,
    ``score``), from a report run with the store's current model."""
    cmd = [sys.executable, "-m", "nlsim", "dedup", "--corpus", str(CORPUS), "--out", str(folder)]
    cmd += ["--model", "current", "--model-store", str(store), "--threshold", str(floor), "--no-progress"]
    subprocess.run(cmd, check=True, cwd=ROOT)
    pairs = pd.read_parquet(folder / "pairs.parquet")  # "similarity": the score the threshold applies to
    return pd.DataFrame(
        {"id_a": pairs["id_a"].astype(str), "id_b": pairs["id_b"].astype(str), "score": pairs["similarity"]}
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
    """The cluster-level judge of ``groups`` (and the reported pairs ``links``) on the validation pairs."""
    from nlsim.evaluation.judge import judge_tables

    clusters = pd.DataFrame({"cluster_id": [f"c{i}" for i in range(len(groups))], "member_ids": groups})
    figures = judge_tables(clusters, links[["id_a", "id_b"]], validation, items=ids)
    return {k: figures[k] for k in ("precision", "recall", "f1", "f1_ci95")} | {"clusters": len(groups)}


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


def measure(
    pairs: pd.DataFrame,
    validation: pd.DataFrame,
    ids: list[str],
    floor: float,
    shares: list[float],
    train: pd.DataFrame | None = None,
) -> list[dict]:
    """Every rule judged at each threshold from ``floor`` to 0.96 (``editors``: components after the
    training split's verdicts, :func:`with_verdicts`, when ``train`` is given)."""
    scores = {(a, b): s for a, b, s in zip(pairs["id_a"], pairs["id_b"], pairs["score"], strict=True)}
    rows = []
    for t in np.round(np.arange(floor, 0.96, STEP), 2):
        links = pairs[pairs["score"] >= t]
        comps = components(ids, links)
        rules: dict[str, list[list[str]]] = {
            "components": comps,
            "average": [g for comp in comps for g in average_linkage(comp, scores, float(t))],
        }
        if train is not None:
            rules["editors"] = components(ids, with_verdicts(links, train))
        for share in shares:
            rules[f"share-{share:g}"] = [g for comp in comps for g in link_share(comp, links, share)]
        rules["community"] = [g for comp in comps for g in community(comp, links)]
        line = []
        for rule, groups in rules.items():
            together = {frozenset((a, b)) for g in groups for a in g for b in g if a < b}
            kept = links[
                [frozenset((a, b)) in together for a, b in zip(links["id_a"], links["id_b"], strict=True)]
            ]
            rows.append({"threshold": float(t), "rule": rule, **judged(groups, kept, validation, ids)})
            line.append(f"{rule} {rows[-1]['f1']}")
        print(f"threshold {t:.2f}: F1 " + ", ".join(line))
    return rows


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
    fig.savefig(path, dpi=110)


def markdown(table: pd.DataFrame, threshold: float | None, header: str) -> str:
    lines = [f"# Clustering rule, judged at the cluster level ({header})", ""]
    lines += [
        "| threshold | rule | clusters | precision | recall | F1 [95% CI] |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for row in table.itertuples():
        ci = row.f1_ci95 or [None, None]
        lines.append(
            f"| {row.threshold:.2f} | {row.rule} | {row.clusters} | {row.precision} | {row.recall} | "
            f"{row.f1} [{ci[0]}, {ci[1]}] |"
        )
    best = table.loc[table.groupby("rule")["f1"].idxmax()]
    lines += ["", "Best F1 of each rule on the grid:", ""]
    lines += [
        f"- {r.rule}: F1 {r.f1} at {r.threshold:.2f} (P {r.precision}, R {r.recall})"
        for r in best.itertuples()
    ]
    if threshold is not None:
        near = table[np.isclose(table["threshold"], round(threshold, 2))]
        lines += ["", f"At the model's calibrated threshold ({threshold:.3f}, rounded to the grid):", ""]
        lines += [f"- {r.rule}: P {r.precision}, R {r.recall}, F1 {r.f1}" for r in near.itertuples()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-store", type=Path, default=ROOT / "models")
    parser.add_argument("--floor", type=float, default=0.84, help="lowest rerank score kept (default 0.84)")
    parser.add_argument(
        "--threshold", type=float, default=None, help="the model's calibrated threshold, marked"
    )
    parser.add_argument(
        "--shares", default="0.3,0.5", help="minimum shares of linked member pairs to try (default 0.3,0.5)"
    )
    args = parser.parse_args()
    shares = [float(x) for x in args.shares.split(",") if x]
    from nlsim.io.pairs import load_pairs

    header = machine()
    with tempfile.TemporaryDirectory() as tmp:
        pairs = scored_pairs(args.model_store.resolve(), args.floor, Path(tmp) / "report")
    ids = pd.read_parquet(CORPUS, columns=["id"])["id"].astype(str).tolist()
    scored = load_pairs(PAIRS).astype({"id_a": str, "id_b": str})
    validation = scored[scored["split"] == "validation"][["id_a", "id_b", "score"]]
    train = scored[scored["split"] == "train"][["id_a", "id_b", "score"]]
    table = pd.DataFrame(measure(pairs, validation, ids, args.floor, shares, train=train))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".json").write_text(
        json.dumps({"machine": header, "floor": args.floor, "rows": table.to_dict("records")}, indent=1)
    )
    OUT.with_suffix(".md").write_text(markdown(table, args.threshold, header))
    plot(table, args.threshold, OUT.with_suffix(".png"))
    print(OUT.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
