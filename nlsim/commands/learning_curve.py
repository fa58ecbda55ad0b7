"""``nlsim learning-curve``: test Spearman against training-set size, several seeds, with baselines."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from nlsim.commands.options import Formatter, add_config_options, config_from_args
from nlsim.training.config import LearningCurveConfig


def add_learning_curve_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``nlsim learning-curve`` and ``python -m flows.learning_curve``."""
    add_config_options(p, LearningCurveConfig)


def config_from(args: argparse.Namespace) -> LearningCurveConfig:
    return config_from_args(LearningCurveConfig, args)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "learning-curve",
        help="fine-tune on growing training subsets x seeds (resumable)",
        description="Test Spearman against training-set size: fine-tune on growing subsets, several seeds "
        "each.\n\n"
        + textwrap.fill(
            "Each run and the baselines are scored on the test split. Writes each run under OUT/runs/, the "
            "baselines' scores, a table and a plot of test Spearman against training size (mean and spread "
            "over the seeds). Finished runs are read back, not trained again, so a stopped curve resumes "
            "where it stopped.",
            100,
        ),
        formatter_class=Formatter,
    )
    add_learning_curve_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nlsim.training.learning_curve import run_learning_curve  # deferred: loads torch

    res = run_learning_curve(config_from(args))
    print(res.table_md)
    print(f"table: {res.table_path}\nplot: {res.plot_path}\n({res.trained} point(s) trained this time)")
    return 0
