"""``nlsim pipeline``: the whole chain, from the annotated pairs to the judged report (see
:mod:`nlsim.chain.run`).

Every option is a setting of :class:`nlsim.chain.config.PipelineConfig`: the chain's own, and those of the
fine-tuning and report records it is composed of.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from nlsim.chain.config import PipelineConfig
from nlsim.commands.options import Formatter, add_config_options, config_from_args, refuse_option


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pipeline",
        help="the whole chain: baseline, fine-tune (cached), evaluate, promote, report, judge",
        description="Run the whole chain, from the annotated pairs to the judged report.\n\n"
        + textwrap.fill(
            "Convert, score the zero-shot baseline, fine-tune the bi-encoder and its reranker (reused when "
            "the annotations, base model and settings are unchanged), evaluate on validation, promote the "
            "new model only when it beats the current one, write the report with the current model and "
            "judge it against the validation pairs.",
            100,
        ),
        formatter_class=Formatter,
    )
    add_pipeline_options(p)
    p.add_argument("--json", action="store_true", help="print the chain's record as one JSON object")
    p.set_defaults(func=run)


MODEL_IS_NOT_AN_OPTION = (
    "--model is not an option of the chain, which trains its own model and reports with the model store's "
    "promoted one (--model-store FOLDER); the model it trains from is --base-model NAME"
)
"""Why ``--model`` (``nlsim dedup``'s) is refused by the chain, where argparse would read it as the start of
``--model-store`` (``nlsim pipeline --model current`` ran the chain on a new store named ``current``)."""


def add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    """The chain's options (:class:`~nlsim.chain.config.PipelineConfig`'s) for ``nlsim pipeline`` and
    ``python -m flows.pipeline``, and ``--model`` refused by name (:data:`MODEL_IS_NOT_AN_OPTION`)."""
    add_config_options(parser, PipelineConfig)
    refuse_option(parser, "--model", MODEL_IS_NOT_AN_OPTION)


def run(args: argparse.Namespace) -> int:
    from nlsim.chain.run import run_pipeline  # deferred: loads torch, `nlsim --help` stays fast
    from nlsim.evaluation.judge import Judgement, headline
    from nlsim.progress import counted

    result = run_pipeline(config_from_args(PipelineConfig, args))
    if args.json:
        print(json.dumps(result.record, default=str, ensure_ascii=False))
        return 0
    rec = result.record
    print(result.table)
    print(("promoted: " if rec["decision"]["promoted"] else "not promoted: ") + rec["decision"]["reason"])
    if result.report is not None:
        s = result.report.summary
        print(f"report: {result.report.report_dir.resolve()}")
        print(
            f"  {counted(s['items'], 'item', 'items')}, {counted(s['pairs'], 'pair', 'pairs')}, "
            f"{counted(s['clusters'], 'cluster', 'clusters')}; model {s['model']}, threshold {s['threshold']}"
        )
        print("  " + headline(Judgement.of(rec["judge"])))
    return 0
