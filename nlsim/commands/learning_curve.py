"""``nlsim learning-curve``: test Spearman against training-set size, several seeds, with baselines."""

from __future__ import annotations

import argparse
from typing import Any

from nlsim.commands.finetune import add_training_options


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.replace(" ", "").split(",") if x)


def add_learning_curve_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``nlsim learning-curve`` and ``python -m flows.learning_curve``."""
    p.add_argument("--pairs", required=True)
    p.add_argument("--out", required=True, help="folder for runs/, baselines.json, the table and the plot")
    p.add_argument(
        "--sizes", type=_ints, default=(350, 700, 1050, 1400), help="comma-separated (default 350,...,1400)"
    )
    p.add_argument("--seeds", type=_ints, default=(1, 2, 3), help="comma-separated (default 1,2,3)")
    p.add_argument(
        "--baselines",
        default="zero-shot,tfidf-char2,use-m3",
        help="comma-separated: zero-shot, tfidf-char2, use-m3 ('' for none)",
    )
    add_training_options(p)


def config_from_args(args: argparse.Namespace) -> Any:
    from nlsim.learning_curve import LearningCurveConfig

    return LearningCurveConfig(
        pairs=args.pairs,
        out=args.out,
        sizes=tuple(args.sizes),
        seeds=tuple(args.seeds),
        baselines=tuple(b for b in args.baselines.split(",") if b),
        model=args.model,
        conversion=args.convert,
        loss=args.loss,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        max_length=args.max_length,
        freeze_embeddings=args.freeze_embeddings,
        threads=args.threads,
    )


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "learning-curve", help="fine-tune on growing training subsets x seeds (resumable)"
    )
    add_learning_curve_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nlsim.learning_curve import run_learning_curve

    res = run_learning_curve(config_from_args(args))
    print(res.table_md)
    print(f"table: {res.table_path}\nplot: {res.plot_path}\n({res.trained} point(s) trained this time)")
    return 0
