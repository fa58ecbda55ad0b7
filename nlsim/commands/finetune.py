"""``nlsim finetune``: fine-tune a bi-encoder (and its reranker) on annotated pairs and save the model folder.

Every option is a setting of :class:`nlsim.training.config.FinetuneConfig`, declared in the record of its
concern.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from nlsim.commands.options import Formatter, add_config_options, config_from_args, refuse_option
from nlsim.training.config import FinetuneConfig

NOT_OPTIONS = {
    "--rerank": (
        "--rerank is not an option of nlsim finetune (nlsim dedup's, which rescores a report's pairs with a "
        "model's reranker): the model trained carries a reranker unless --no-reranker is given, and "
        "--rerank-weight WEIGHT sets the bi-encoder's share of its score"
    ),
    "--gpu": (
        "--gpu is not an option of nlsim finetune (nlsim dedup's, which runs FAISS on the GPU): training "
        "runs on the GPU when torch sees one (NLSIM_DEVICE names another device), and --gpu-batch-size N "
        "sets its pairs per step there"
    ),
}
"""The options of other commands that ``nlsim finetune`` refuses by name, and why: argparse would read each
as the start of a longer option of its own that takes a value (``--rerank`` as ``--rerank-weight``,
``--gpu`` as ``--gpu-batch-size``), and say that one wants an argument."""


def add_finetune_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``nlsim finetune`` and ``python -m flows.finetune``: the settings of
    ``FinetuneConfig``, one group per concern (data, bi-encoder, training steps, evaluation, silver pairs,
    reranker), and the options of other commands it would read as the start of its own refused by name
    (:data:`NOT_OPTIONS`)."""
    add_config_options(p, FinetuneConfig)
    for key in ("pairs", "out"):
        p._option_string_actions[f"--{key}"].required = True  # required on the command line
    for flag, why in NOT_OPTIONS.items():
        refuse_option(p, flag, why)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "finetune",
        help="fine-tune an encoder on annotated pairs",
        description="Fine-tune an encoder (and its reranker) on annotated pairs and save the model folder."
        "\n\n"
        + textwrap.fill(
            "Train on the train split, keep the best validation checkpoint, evaluate, calibrate the "
            "threshold (same story by default), train the reranker and save a model folder with its card.",
            100,
        ),
        formatter_class=Formatter,
    )
    add_finetune_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nlsim.evaluation.metrics import metrics_table  # deferred: loads torch
    from nlsim.training.finetune import finetune, holding_model_out
    from nlsim.training.model_card import metrics_row_label

    cfg = config_from_args(FinetuneConfig, args)
    with holding_model_out(cfg.out):  # never in a model store; one run into --out at a time
        res = finetune(cfg)
    rows = [
        {"model": metrics_row_label(k), "conversion": args.conversion, "split": k.split("/")[1], **v}
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
