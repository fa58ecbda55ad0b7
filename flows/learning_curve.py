"""Prefect flow ``learning-curve``: baselines, then every (size, seed) run, then the table and the plot.

Finished runs are read back, not retrained, so a stopped flow resumes. Artifacts: the summary table and
the plot (as a Markdown image with the PNG's path). Run it without a server::

    python -m flows.learning_curve --pairs annotations/thucnews_tw_pairs.tsv --out reports/learning-curve
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Any

import pandas as pd
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from nlsim import learning_curve as lc
from nlsim.learning_curve import LearningCurveConfig


@task(name="load-pairs", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE)
def load_pairs_task(path: str) -> pd.DataFrame:
    from nlsim.pairs import load_pairs

    return load_pairs(path)


@task(name="baselines", cache_policy=NO_CACHE)
def baselines_task(config: LearningCurveConfig, pairs: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return lc.run_baselines(config, pairs)


@task(name="train-point", task_run_name="train-size{size}-seed{seed}", cache_policy=NO_CACHE)
def point_task(config: LearningCurveConfig, size: int, seed: int, pairs: pd.DataFrame) -> dict[str, Any]:
    return lc.run_one(config, size, seed, pairs)


@task(name="summarize", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE)
def summary_task(
    config: LearningCurveConfig, rows: list[dict[str, Any]], baselines: dict[str, dict[str, Any]]
) -> lc.LearningCurveResult:
    return lc.write_summary(config, rows, baselines)


@flow(name="learning-curve", log_prints=True)
def learning_curve_flow(config: LearningCurveConfig) -> dict[str, Any]:
    """Test Spearman against training size (mean +/- sd over seeds), with the baselines."""
    pairs = load_pairs_task(config.pairs)
    baselines = baselines_task(config, pairs) if config.baselines else {}
    rows = [point_task(config, size, seed, pairs) for size in config.sizes for seed in config.seeds]
    res = summary_task(config, rows, baselines)
    create_table_artifact(
        res.summary.round(4).to_dict("records"),
        key="learning-curve-table",
        description="test metrics per training size (mean and sd over seeds)",
    )
    png = base64.b64encode(res.plot_path.read_bytes()).decode()
    create_markdown_artifact(
        f"{res.table_md}\n\n![learning curve](data:image/png;base64,{png})\n\nPlot file: `{res.plot_path}`",
        key="learning-curve-plot",
        description="learning curve plot",
    )
    print(res.table_md)
    return {"table": str(res.table_path), "plot": str(res.plot_path), "points": len(rows)}


def main(argv: list[str] | None = None) -> int:
    from nlsim.commands.learning_curve import add_learning_curve_options, config_from_args

    parser = argparse.ArgumentParser(
        prog="python -m flows.learning_curve", description=learning_curve_flow.__doc__
    )
    add_learning_curve_options(parser)
    learning_curve_flow(config_from_args(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
