"""An intermediate cross-encoder trained on STS Benchmark (English) before our pairs.

Small annotated sets often gain from a first round of training on a larger task of the same kind. STS-B's
0-5 similarity (divided by 5) is graded like our 0-1 relatedness, and multilingual-e5 carries it across
languages. This script trains the product's cross-encoder recipe (lower 4 layers frozen, soft BCE, both
text orders; no same-story weighting, which is about our rubric) on STS-B train for one epoch, reports its
STS-B dev Spearman, and saves it under ``benchmarks/results/cache/intermediate/``. Then

    python benchmarks/bench_same_story.py run --name sts-f4-e3 --mode both --threads 1 \\
        --intermediate benchmarks/results/cache/intermediate/stsb-f4-e1

starts every fold's cross-encoder from it instead of from e5. No annotated pair of ours is read here, so
the folds stay clean. Figures: docs/finetuning.md.

    python benchmarks/explore_intermediate_sts.py [--epochs 1] [--threads 1] [--genres headlines,MSRpar]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_same_story import cpu_name  # noqa: E402 - after the repository is on the path

OUT = ROOT / "benchmarks" / "results" / "cache" / "intermediate"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="multilingual-e5-small")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--frozen", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--genres", default="", help="comma-separated STS-B genres to keep (all by default)")
    ap.add_argument("--dev-pairs", type=int, default=500, help="STS-B dev pairs scored after each epoch")
    ap.add_argument("--name", default="")
    args = ap.parse_args()

    from nlsim.evaluation.sts import load_stsb
    from nlsim.training.config import CrossEncoderConfig
    from nlsim.training.cross_encoder import train_cross_encoder

    train, dev = load_stsb("train"), load_stsb("validation")
    if args.genres:
        keep = set(args.genres.split(","))
        train, dev = train[train["genre"].isin(keep)], dev[dev["genre"].isin(keep)]
    dev = dev.sample(n=min(args.dev_pairs, len(dev)), random_state=0)
    name = args.name or f"stsb-f{args.frozen}-e{args.epochs}" + (f"-{args.genres}" if args.genres else "")
    cfg = CrossEncoderConfig(
        epochs=args.epochs,
        lr=args.lr,
        frozen_layers=args.frozen,
        story_weight=1.0,
        threads=args.threads,
        keep_best=False,
        log_every=100,
    )
    t0 = time.perf_counter()
    print(f"STS-B: {len(train)} training pairs, {len(dev)} dev pairs scored per epoch", flush=True)
    train, dev = train.reset_index(drop=True), dev.reset_index(drop=True)
    ce, history = train_cross_encoder(args.base, train, dev, cfg)
    folder = ce.save(OUT / name)
    meta = {
        "base": args.base,
        "train_pairs": len(train),
        "genres": args.genres or "all",
        "history": history,
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu": cpu_name(),
    }
    (folder / "intermediate.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(meta, indent=2))
    print(f"saved {folder}")


if __name__ == "__main__":
    main()
