"""What an ensemble of trainings gives the report, not only the pairs: several trainings' scores averaged,
judged at the cluster level on the validation pairs.

``bench_story_scores.py`` found that the mean of two trainings' rerank scores lifts the validation pairs'
same-story F1 out of fold (0.546 against 0.507 alone on the three avx2 trainings). A report reads other
pairs: every candidate its search finds in the corpus, linked at a threshold calibrated on the validation
pairs and clustered by the default rule. This benchmark builds that report for each variant from the model
stores given (``--model-store``, two or more, each with a promoted model with its reranker):

- ``single-S``: one training alone (its own search and scores: the report ``nlsim dedup`` writes, but that
  the figures here are the cross-encoder's fp32 path);
- ``mean-S+S'``: the mean of two trainings' rerank scores, over the candidates either search finds (each
  training's k nearest neighbours above its candidate floor at ``--floor``); ``mean-all``: of every store;
- ``biS-ceS+S'``: one training's bi-encoder and search, with the mean of two trainings' cross-encoder scores
  (what a second cross-encoder alone, the cheaper half of a second training, would give).

For each: the threshold calibrated as the chain calibrates it (:func:`nlsim.evaluation.calibration.
calibrate_scores`, cross-validated, same-story level) on the validation pairs' scores of the variant, the
pairs' figures at it and out of fold, then the report at that threshold: the series veto, the default
cluster rule (support 0.4) and connected components, judged as ``nlsim judge`` judges a report (cluster-
level precision, recall, F1 with its interval; purity of the judged pairs inside clusters of 5+ items;
``bench_cluster_rule.py``'s functions). The scores are cached in ``benchmarks/results/cache/ensemble/``
(three stores: about 10 minutes of cross-encoder work on a 2-core CPU). The test split is never read.
Figures go to ``benchmarks/results/ensemble[_TAG].md``/``.json``/``.png``.

    python benchmarks/bench_ensemble.py --model-store STORE-42 --model-store STORE-7 \\
        --model-store STORE-11 [--names 42,7,11] [--floor 0.84] [--k 10] [--tag NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from _common import CACHE, RESULTS, check_model_stores, machine, save_figure
from bench_cluster_rule import CORPUS, PAIRS, held, judged, rule_groups, with_vetoes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nlsim.evaluation.levels import SAME_STORY  # noqa: E402 - after the path is set
from nlsim.io.atomic import atomic_write_parquet, atomic_write_text  # noqa: E402

RULES = ("support-0.4+veto", "components+veto")
"""The default rule (support 0.4 with the series veto) and connected components with the veto."""


def _model(store: Path, titles: list[str]) -> tuple[str, object, np.ndarray, list[str]]:
    """A store's current version, its reranker, the corpus embeddings and the converted corpus texts."""
    from nlsim.conversion import convert
    from nlsim.encoders import load_encoder
    from nlsim.encoders.cache import EmbeddingCache
    from nlsim.io.model_store import ModelStore
    from nlsim.rerank.reranker import load_reranker

    folder = ModelStore(store).current()
    reranker = load_reranker(folder) if folder is not None else None
    if folder is None or reranker is None or reranker.threshold is None:
        raise SystemExit(f"{store}: no promoted model with a calibrated reranker")
    if reranker.story is not None:
        raise SystemExit(
            f"{folder}: holds a story model, so its scores are not the rerank scores averaged here"
        )
    conversion = json.loads((folder / "training.json").read_text(encoding="utf-8"))["config"]["conversion"]
    texts = convert(titles, conversion)
    emb, _ = EmbeddingCache().get_or_compute(texts, load_encoder(folder), conversion)
    return folder.name, reranker, emb, texts


def _found(reranker: object, emb: np.ndarray, k: int, floor: float) -> np.ndarray:
    """The candidate pairs ``(a, b)``, ``a < b``, of one training's search: each item's ``k`` nearest
    neighbours at or above the cosine from which its rerank score can reach ``floor``."""
    from nlsim.search.index import build_index
    from nlsim.search.neighbors import knn_graph

    graph = knn_graph(
        build_index(emb, use_gpu=False), emb, k=k, threshold=reranker.candidate_floor(floor), progress=False
    )
    return np.unique(np.sort(graph[["a", "b"]].to_numpy().astype(np.int64), axis=1), axis=0)


def cache_tag(models: list[tuple], names: list[str], k: int, floor: float) -> str:
    """The scores' cache key: the settings and each training's own vectors (not its version name alone,
    which two trainings of one recipe and data share: a store trained again, or on another machine)."""
    digest = hashlib.sha256(f"{[m[0] for m in models]}|{names}|{k}|{floor}".encode())
    for m in models:
        digest.update(np.ascontiguousarray(m[2]).tobytes())
    return digest.hexdigest()[:12]


def scores(
    models: list[tuple], ids: pd.Series, names: list[str], k: int, floor: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The validation pairs and the union of the trainings' candidates, each with every training's
    cosine (``cosN``), its mapped cosine (``mapN``), cross-encoder score (``ceN``) and rerank score
    (``rrN``), and for candidates whether training N's own search finds them (``foundN``); ``models``:
    :func:`_model`'s for each store, ``ids``: the corpus's item ids."""
    from nlsim.io.pairs import load_pairs

    cache = CACHE / "ensemble" / cache_tag(models, names, k, floor)
    if (cache / "candidates.parquet").exists():
        return pd.read_parquet(cache / "validation.parquet"), pd.read_parquet(cache / "candidates.parquet")
    pos = {item: i for i, item in enumerate(ids)}
    pairs = load_pairs(PAIRS)
    pairs = pairs[pairs["split"] == "validation"].reset_index(drop=True)
    val = pd.DataFrame({"a": pairs["id_a"].astype(str).map(pos), "b": pairs["id_b"].astype(str).map(pos)})
    val = val.assign(id_a=pairs["id_a"].astype(str), id_b=pairs["id_b"].astype(str), score=pairs["score"])
    found = {n: _found(rr, emb, k, floor) for n, (_, rr, emb, _) in zip(names, models, strict=True)}
    union = np.unique(np.concatenate(list(found.values())), axis=0)
    cand = pd.DataFrame({"a": union[:, 0], "b": union[:, 1]})
    key = union[:, 0] * len(ids) + union[:, 1]
    for n, (version, rr, emb, texts) in zip(names, models, strict=True):
        cand[f"found{n}"] = np.isin(key, found[n][:, 0] * len(ids) + found[n][:, 1])
        for frame in (val, cand):
            a, b = frame["a"].to_numpy(), frame["b"].to_numpy()
            ta, tb = [texts[i] for i in a], [texts[i] for i in b]
            cos = np.einsum("ij,ij->i", emb[a], emb[b]).astype(np.float64)
            ce = rr.cross_scores(ta, tb, precision="fp32")
            frame[f"cos{n}"], frame[f"map{n}"], frame[f"ce{n}"] = cos, rr.mapped_cosine(cos), ce
            frame[f"rr{n}"] = rr.pair_scores(cos, ce, ta, tb)
        print(f"{n} ({version}): {len(val)} validation and {len(cand)} candidate pairs scored", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    atomic_write_parquet(val, cache / "validation.parquet")
    atomic_write_parquet(cand, cache / "candidates.parquet")
    return val, cand


def variants(names: list[str]) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """Each variant's bi-encoders (mapped cosines averaged), cross-encoders (scores averaged) and searches
    (candidates found by any of them)."""
    out = {f"single-{n}": ([n], [n], [n]) for n in names}
    for i, j in itertools.combinations(names, 2):
        out[f"mean-{i}+{j}"] = ([i, j], [i, j], [i, j])
        for b, o in ((i, j), (j, i)):
            out[f"bi{b}-ce{b}+{o}"] = ([b], [b, o], [b])
    if len(names) > 2:
        out["mean-all"] = (names, names, names)
    return out


def variant_scores(frame: pd.DataFrame, bis: list[str], ces: list[str], weight: float) -> np.ndarray:
    """The rerank score of a variant: ``weight`` x the mean mapped cosine + the rest x the mean cross-encoder
    score (with one training's both, exactly its rerank score)."""
    mapped = np.mean([frame[f"map{n}"] for n in bis], axis=0)
    cross = np.mean([frame[f"ce{n}"] for n in ces], axis=0)
    return weight * mapped + (1.0 - weight) * cross


def measure(
    name: str,
    spec: tuple,
    val: pd.DataFrame,
    cand: pd.DataFrame,
    corpus: pd.DataFrame,
    weight: float,
    floor: float,
) -> dict:
    """A variant's calibrated threshold, its pairs' figures and the report's at that threshold (``corpus``:
    the items' ids and titles)."""
    from nlsim.evaluation.calibration import calibrate_scores

    bis, ces, searches = spec
    cal = calibrate_scores(variant_scores(val, bis, ces, weight), val["score"].to_numpy(), SAME_STORY)
    score = variant_scores(cand, bis, ces, weight)
    keep = cand[[f"found{n}" for n in searches]].any(axis=1).to_numpy() & (score >= floor)
    a, b = cand["a"].to_numpy()[keep], cand["b"].to_numpy()[keep]
    pairs = with_vetoes(
        pd.DataFrame(
            {
                "id_a": corpus["id"].to_numpy()[a],
                "id_b": corpus["id"].to_numpy()[b],
                "similarity": score[keep],
                "title_a": corpus["title"].to_numpy()[a],
                "title_b": corpus["title"].to_numpy()[b],
            }
        )
    )
    by_pair = {(x, y): s for x, y, s in zip(pairs["id_a"], pairs["id_b"], pairs["score"], strict=True)}
    groups = rule_groups(pairs, corpus["id"].tolist(), cal.threshold, [0.4], [], None, by_pair)
    links = pairs[pairs["score"] >= cal.threshold]
    validation = val[["id_a", "id_b", "score"]]
    reports = {r: judged(groups[r], held(groups[r], links), validation, corpus["id"].tolist()) for r in RULES}
    return {
        "variant": name,
        "threshold": cal.threshold,
        "pairs": {"precision": cal.precision, "recall": cal.recall, "f1": cal.f1, "cv_f1": cal.cv_f1},
        "links": int(len(links)),
        "reports": reports,
    }


def markdown(rows: list[dict], header: str, stores: list[str]) -> str:
    lines = [
        f"# Ensembles of trainings, judged as reports ({header})",
        "",
        "Stores: "
        + ", ".join(stores)
        + ". Validation pairs; the threshold calibrated on each variant's scores.",
        "",
        "| variant | threshold | pairs: F1 at it; out of fold | links | report, support 0.4 + veto: "
        "P / R / F1 [95%] | purity 5+ (judged pairs) | components + veto: F1 |",
        "|---|---:|---|---:|---|---|---:|",
    ]
    for r in rows:
        d, c = r["reports"][RULES[0]], r["reports"][RULES[1]]
        lines.append(
            f"| {r['variant']} | {r['threshold']:.4f} | {r['pairs']['f1']:.3f}; {r['pairs']['cv_f1']:.3f} | "
            f"{r['links']} | {d['precision']:.3f} / {d['recall']:.3f} / **{d['f1']:.3f}** "
            f"[{d['f1_ci95'][0]:.3f}, {d['f1_ci95'][1]:.3f}] | {d['purity_5+']} ({d['n_5+']}) | "
            f"{c['f1']:.3f} |"
        )
    lines += ["", "| kind | mean report F1 (support 0.4 + veto) | spread (max - min) |", "|---|---:|---:|"]
    kinds = {
        "one training": lambda v: v.startswith("single-"),
        "the mean of two trainings": lambda v: v.startswith("mean-") and v != "mean-all",
        "one bi-encoder, two cross-encoders": lambda v: v.startswith("bi"),
    }
    for kind, chosen in kinds.items():
        f1 = [r["reports"][RULES[0]]["f1"] for r in rows if chosen(r["variant"])]
        if f1:
            lines.append(f"| {kind} | {np.mean(f1):.3f} | {max(f1) - min(f1):.3f} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.35 * len(rows) + 1.5))
    for y, r in enumerate(rows):
        d = r["reports"][RULES[0]]
        ax.errorbar(d["f1"], y, xerr=[[d["f1"] - d["f1_ci95"][0]], [d["f1_ci95"][1] - d["f1"]]], fmt="o")
    ax.set_yticks(range(len(rows)), [r["variant"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("report's cluster-level F1 on validation (support 0.4 + veto), 95% interval")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model-store",
        type=Path,
        action="append",
        required=True,
        help="a model store whose current model is one training of the ensemble (repeatable: two or more)",
    )
    parser.add_argument("--names", default="", help="a short name per store (default 1, 2, ...)")
    parser.add_argument(
        "--floor", type=float, default=0.84, help="lowest score of a candidate (default 0.84)"
    )
    parser.add_argument("--k", type=int, default=10, help="neighbours searched per item (default 10)")
    parser.add_argument(
        "--tag", default="", help="write ensemble_TAG.md/.json/.png instead (default: none, ensemble.*)"
    )
    args = parser.parse_args(argv)
    stores = [s.resolve() for s in args.model_store]
    names = args.names.split(",") if args.names else [str(i + 1) for i in range(len(stores))]
    if len(stores) < 2 or len(names) != len(stores):
        parser.error("give two or more --model-store, and as many --names if any")
    if args.k < 1:
        parser.error(f"argument --k: {args.k} is out of range (at least 1)")
    check_model_stores(parser, stores)
    corpus = pd.read_parquet(CORPUS, columns=["id", "title"]).astype(str)
    models = [_model(s, corpus["title"].tolist()) for s in stores]
    weights = {float(m[1].weight) for m in models}
    if len(weights) != 1:
        raise SystemExit(f"the stores' rerankers weigh the cosine differently ({sorted(weights)})")
    val, cand = scores(models, corpus["id"], names, args.k, args.floor)
    weight = weights.pop()
    rows = [measure(n, spec, val, cand, corpus, weight, args.floor) for n, spec in variants(names).items()]
    out = RESULTS / (f"ensemble_{args.tag}" if args.tag else "ensemble")
    write(out, rows, machine(), [f"{n}: {m[0]}" for n, m in zip(names, models, strict=True)])


def write(out: Path, rows: list[dict], header: str, stores: list[str]) -> None:
    """Print the figures and write them to ``out`` ``.md``, ``.json`` (each row naming the machine they were
    made on: ``header``, the CPU and a GPU in use) and ``.png``."""
    text = markdown(rows, header, stores)
    print(text)
    atomic_write_text(out.with_suffix(".md"), text + "\n")
    made_on = [{**r, "machine": header} for r in rows]
    atomic_write_text(out.with_suffix(".json"), json.dumps(made_on, indent=1, default=float))
    plot(rows, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
