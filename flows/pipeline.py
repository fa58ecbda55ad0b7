"""Prefect flow ``news-pipeline``: the chain of :func:`nlsim.chain.run.run_pipeline`, every stage a task.

load + convert → baseline → fine-tune (cached by fingerprint) → evaluate → promote → index → report (judged).
Its parameters are the settings of :class:`nlsim.chain.config.PipelineConfig` by their flat names (the
options of ``nlsim pipeline``). Served as ``news-pipeline/weekly`` (retrain when the annotations change;
the gate decides whether the daily report's model changes). Run it without a server::

    python -m flows.pipeline --pairs annotations/thucnews_tw_pairs.tsv --corpus data/thucnews.parquet
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from prefect.artifacts import create_markdown_artifact

from flows.orchestration import config_flow, fail, progress_artifacts, run_from_command_line, task_call
from nlsim.chain.config import PipelineConfig
from nlsim.chain.run import run_pipeline
from nlsim.commands.pipeline import add_pipeline_options
from nlsim.errors import NlsimError
from nlsim.evaluation.judge import Judgement, describe


def _body(**params: Any) -> Any:
    config = PipelineConfig.of(**params)
    try:
        with progress_artifacts("news-pipeline"):
            result = run_pipeline(config, call=task_call)
    except NlsimError as exc:
        return fail(f"{type(exc).__name__}: {exc}")
    rec = result.record
    md = f"# nlsim pipeline\n\n{result.table}\n\n**{rec['decision']['reason']}**\n"
    if "judge" in rec:
        md += f"\nReport `{rec['report']['folder']}`: {describe(Judgement.of(rec['judge']))}\n"
    create_markdown_artifact(md, key="news-pipeline", description="before/after, promotion, judged report")
    return rec


news_pipeline = config_flow(
    _body,
    (PipelineConfig,),
    name="news-pipeline",
    description="The chain: baseline, fine-tune (cached), evaluate, promote when better, report (judged).",
)


def add_options(parser: argparse.ArgumentParser) -> None:
    add_pipeline_options(parser)


def main(argv: list[str] | None = None) -> int:
    return run_from_command_line(
        news_pipeline, "python -m flows.pipeline", add_options, (PipelineConfig,), argv
    )


if __name__ == "__main__":
    sys.exit(main())
