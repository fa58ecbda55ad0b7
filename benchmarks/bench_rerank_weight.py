"""The rerank score's weight: how the same-story decision moves between the cross-encoder and the cosine.

The rerank score is ``w x mapped cosine + (1 - w) x cross-encoder`` (:mod:`nlsim.rerank.reranker`). For
the store's current model, the validation pairs are scored once by the bi-encoder and once by the
cross-encoder (exact fp32), and for each weight of a grid this prints the Spearman, the average precision
of same story, the best F1 of any threshold, and the F1 of a threshold chosen out of fold (the calibration's
own procedure, :func:`nlsim.evaluation.calibration.cross_validated_cut`), with the cosine floor below which
no pair can reach that weight's best threshold (the lower the floor, the more neighbour pairs the report
must read with the cross-encoder). Figures go to ``benchmarks/results/rerank_weight.md``/``.json``. The
test split is never read.

    python benchmarks/bench_rerank_weight.py [--model-store models]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from _common import RESULTS, check_model_stores, machine

from nlsim.io.atomic import atomic_write_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
OUT = RESULTS / "rerank_weight"
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model-store",
        type=Path,
        default=ROOT / "models",
        help="the model store whose current model (with its reranker) is read (default: models)",
    )
    args = parser.parse_args(argv)
    check_model_stores(parser, [args.model_store])
    from dataclasses import replace

    from scipy.stats import spearmanr
    from sklearn.metrics import average_precision_score

    from nlsim.encoders import load_encoder
    from nlsim.evaluation.calibration import Cuts, cross_validated_cut
    from nlsim.evaluation.levels import SAME_STORY
    from nlsim.evaluation.metrics import pair_similarities
    from nlsim.io.model_store import ModelStore
    from nlsim.io.pairs import load_pairs
    from nlsim.rerank.reranker import load_reranker
    from nlsim.training.data import convert_pairs

    header = machine()
    version = ModelStore(args.model_store).current()
    if version is None:
        raise SystemExit(f"no current model in {args.model_store}: run `bash run.sh` first")
    encoder = load_encoder(str(version))
    reranker = load_reranker(version)
    pairs = load_pairs(PAIRS, split="validation")
    pairs = convert_pairs(pairs, json.loads((version / "training.json").read_text())["config"]["conversion"])
    a, b = pairs["text_a"].tolist(), pairs["text_b"].tolist()
    cosine = pair_similarities(encoder, pairs, None)
    cross = reranker.cross_scores(a, b, precision="fp32")
    gold = pairs["score"].to_numpy(dtype=np.float64)
    positive = gold >= SAME_STORY - 1e-9
    rows = []
    for w in WEIGHTS:
        combined = replace(reranker, weight=w)
        scores = combined.combine(cosine, cross)
        cuts = Cuts.of(scores)
        best, cv_f1 = cross_validated_cut(cuts, positive)
        order = np.sort(scores)[::-1]
        f1 = [2 * (positive & (scores >= t)).sum() / ((scores >= t).sum() + positive.sum()) for t in order]
        threshold = float(cuts.thresholds[best])
        rows.append(
            {
                "weight": w,
                "spearman": round(100 * float(spearmanr(scores, gold).statistic), 2),
                "ap": round(float(average_precision_score(positive, scores)), 4),
                "best_f1": round(float(max(f1)), 4),
                "cv_f1": round(cv_f1, 4),
                "cv_threshold": round(threshold, 4),
                "cosine_floor": round(combined.candidate_floor(threshold), 4) if w > 0 else None,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    lines = [f"# Rerank weight on the validation pairs ({header}; model {version.name})", ""]
    lines += [
        "| weight on the cosine | Spearman | same-story AP | best F1 | CV F1 | CV threshold | cosine floor |"
    ]
    lines += ["|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        floor = "every neighbour" if r["cosine_floor"] is None else r["cosine_floor"]
        lines.append(
            f"| {r['weight']} | {r['spearman']} | {r['ap']} | {r['best_f1']} | {r['cv_f1']} | "
            f"{r['cv_threshold']} | {floor} |"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        OUT.with_suffix(".json"), json.dumps({"machine": header, "model": version.name, "rows": rows})
    )
    atomic_write_text(OUT.with_suffix(".md"), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
