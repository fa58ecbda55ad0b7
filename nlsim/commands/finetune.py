"""``nlsim finetune``: fine-tune a bi-encoder on annotated pairs and save it with its card and calibration."""

from __future__ import annotations

import argparse
from typing import Any

from nlsim.conversion import DEFAULT_MODE, MODES


def add_training_options(p: argparse.ArgumentParser) -> None:
    """Training options shared by ``finetune`` and ``learning-curve`` (defaults = ``FinetuneConfig``'s)."""
    p.add_argument("--model", default="multilingual-e5-small", help="base model: registry name or folder")
    p.add_argument(
        "--convert", default=DEFAULT_MODE, choices=MODES, help=f"script conversion (default {DEFAULT_MODE})"
    )
    p.add_argument(
        "--loss",
        default="cosent",
        choices=("mse", "cosent"),
        help="CoSENT (default, chosen on validation) or the studies' cosine MSE",
    )
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--max-length", type=int, default=64, help="tokens per text, prefix included (default 64)")
    p.add_argument(
        "--unfreeze-embeddings",
        dest="freeze_embeddings",
        action="store_false",
        help="also train the word-embedding table (about 4x slower for e5)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch threads")


def add_finetune_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``nlsim finetune`` and ``python -m flows.finetune``."""
    p.add_argument("--pairs", required=True, help="pair file (.tsv/.csv/.parquet) with a split column")
    p.add_argument("--out", required=True, help="model folder to write")
    add_training_options(p)
    p.add_argument("--warmup-ratio", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--eval-every", type=int, default=0, help="validate every N steps (default: each epoch)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--train-size", type=int, default=None, help="use a random subset of the training pairs")
    p.add_argument(
        "--level",
        type=float,
        default=0.75,
        help="relatedness level the threshold is calibrated for (0.75 same topic+entity, 1.0 same story)",
    )
    p.add_argument("--no-test", dest="eval_test", action="store_false", help="do not score the test split")
    g = p.add_argument_group(
        "silver pairs",
        "widen the gold training pairs with corpus pairs scored by teachers trained on them "
        "(a cross-encoder and a first bi-encoder; see docs/finetuning.md)",
    )
    g.add_argument(
        "--silver-corpus",
        default=None,
        help="corpus (.tsv/.csv/.parquet with id and a text column) to draw silver pairs from; "
        "texts of validation/test pairs are left out",
    )
    g.add_argument("--silver-text-field", default=None, help="text column of the silver corpus")
    g.add_argument("--silver-anchors", type=int, default=1200, help="anchor texts drawn (about 5 pairs each)")
    g.add_argument(
        "--silver-teacher",
        default="ensemble",
        choices=("ensemble", "cross-encoder"),
        help="who labels the silver pairs (default: mean of cross-encoder and bi-encoder)",
    )
    r = p.add_argument_group(
        "reranker",
        "a cross-encoder trained beside the bi-encoder and saved with it in reranker/: dedup rescores the "
        "pairs the bi-encoder finds (see docs/finetuning.md)",
    )
    r.add_argument(
        "--no-reranker",
        dest="reranker",
        action="store_false",
        help="train the bi-encoder alone (the reranker, trained by default, takes about 3/4 of the time)",
    )
    r.add_argument("--cross-encoder-epochs", type=int, default=3, help="also the silver teacher's")
    r.add_argument("--cross-encoder-lr", type=float, default=1e-4, help="also the silver teacher's")


def config_from_args(args: argparse.Namespace) -> Any:
    from nlsim.training import FinetuneConfig

    return FinetuneConfig(
        pairs=args.pairs,
        out=args.out,
        model=args.model,
        conversion=args.convert,
        loss=args.loss,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup_ratio=args.warmup_ratio,
        weight_decay=args.weight_decay,
        max_length=args.max_length,
        freeze_embeddings=args.freeze_embeddings,
        eval_every=args.eval_every,
        seed=args.seed,
        train_size=args.train_size,
        threads=args.threads,
        eval_test=args.eval_test,
        calibrate_level=args.level,
        silver_corpus=args.silver_corpus,
        silver_text_field=args.silver_text_field,
        silver_anchors=args.silver_anchors,
        silver_teacher=args.silver_teacher,
        cross_encoder_epochs=args.cross_encoder_epochs,
        cross_encoder_lr=args.cross_encoder_lr,
        reranker=args.reranker,
    )


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "finetune",
        help="fine-tune an encoder on annotated pairs",
        description="Train on the train split, keep the best validation checkpoint, "
        "evaluate, calibrate the threshold, train the reranker and save a model folder with its card.",
    )
    add_finetune_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nlsim.evaluation import metrics_table
    from nlsim.training import finetune, metrics_row_label

    res = finetune(config_from_args(args))
    rows = [
        {"model": metrics_row_label(k), "conversion": args.convert, "split": k.split("/")[1], **v}
        for k, v in res.metrics.items()
    ]
    print(metrics_table(rows))
    if res.calibration:
        c = res.calibration
        print(
            f"threshold {c['threshold']:.4f} for level >= {c['level']} (validation P {c['precision']:.3f} "
            f"R {c['recall']:.3f} F1 {c['f1']:.3f})"
        )
    rc = (res.reranker or {}).get("calibration")
    if rc:
        print(
            f"rerank threshold {rc['threshold']:.4f} for level >= {rc['level']} (validation P "
            f"{rc['precision']:.3f} R {rc['recall']:.3f} F1 {rc['f1']:.3f}); dedup and evaluate use it"
        )
    print(f"model: {res.model_dir}")
    return 0
