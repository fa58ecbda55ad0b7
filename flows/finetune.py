"""Prefect flow ``finetune``: [silver pairs ->] train -> evaluate -> calibrate [-> reranker] -> save.

Each stage is a task calling :mod:`nlsim.training`; the metrics table (before/after, validation/test) and
the Markdown model card are published as artifacts. Run it without a server::

    python -m flows.finetune --pairs annotations/thucnews_tw_pairs.tsv --out models/e5-thucnews
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from nlsim import training as stages
from nlsim.training import FinetuneConfig, PreparedPairs

IO_RETRIES = 2


@task(name="load-pairs", retries=IO_RETRIES, retry_delay_seconds=2, cache_policy=NO_CACHE)
def load_pairs_task(config: FinetuneConfig) -> PreparedPairs:
    data = stages.prepare_pairs(config)
    print(
        f"pairs: train {len(data.train)}, validation {len(data.validation)}, test {len(data.test)} "
        f"(conversion {config.conversion})"
    )
    return data


@task(name="load-base-model", retries=IO_RETRIES, retry_delay_seconds=2, cache_policy=NO_CACHE)
def load_base_task(config: FinetuneConfig) -> Any:
    return stages.load_base(config)


@task(name="evaluate", cache_policy=NO_CACHE)
def evaluate_task(encoder: Any, data: PreparedPairs, when: str) -> dict[str, dict[str, Any]]:
    metrics = stages.evaluate_splits(encoder, data, when)
    for key, m in metrics.items():
        print(f"{key}: Spearman {m['spearman']}, Pearson {m['pearson']}, MSE {m['mse']}, MAE {m['mae']}")
    return metrics


@task(name="train", cache_policy=NO_CACHE)
def train_task(encoder: Any, data: PreparedPairs, config: FinetuneConfig) -> dict[str, Any]:
    return stages.train_encoder(encoder, data.train, data.validation, config)


@task(name="silver-pairs", cache_policy=NO_CACHE)
def silver_task(data: PreparedPairs, config: FinetuneConfig) -> Any:
    from nlsim.silver import make_silver_pairs

    silver = make_silver_pairs(data, config)
    print(f"silver pairs: {len(silver.pairs)} from {silver.pool_size} corpus texts ({silver.seconds:.0f} s)")
    return silver


@task(name="calibrate", cache_policy=NO_CACHE)
def calibrate_task(encoder: Any, data: PreparedPairs, config: FinetuneConfig) -> Any:
    cal = stages.calibrate_encoder(encoder, data, config)
    if cal is not None:
        print(cal.describe())
    return cal


@task(name="reranker", cache_policy=NO_CACHE)
def reranker_task(encoder: Any, data: PreparedPairs, config: FinetuneConfig) -> tuple[Any, dict[str, Any]]:
    return stages.fit_reranker(encoder, data, config)


@task(name="save-model", retries=IO_RETRIES, retry_delay_seconds=2, cache_policy=NO_CACHE)
def save_task(
    encoder: Any, out: str, result: stages.FinetuneResult, cal: Any, silver: Any, reranker: Any
) -> str:
    return str(stages.save_model_folder(encoder, out, result, cal, silver, reranker))


def publish_artifacts(result: stages.FinetuneResult, card: str) -> None:
    """The metrics table and the model card as Prefect artifacts."""
    table = [{"when": k.split("/")[0], "split": k.split("/")[1], **v} for k, v in result.metrics.items()]
    create_table_artifact(table, key="finetune-metrics", description="Spearman x100, Pearson x100, MSE, MAE")
    create_markdown_artifact(card, key="finetune-model-card", description="model card")


@flow(name="finetune", log_prints=True)
def finetune_flow(config: FinetuneConfig) -> dict[str, Any]:
    """Fine-tune ``config.model`` on ``config.pairs`` and save it to ``config.out``."""
    t0 = time.perf_counter()
    data = load_pairs_task(config)
    encoder = load_base_task(config)
    metrics = evaluate_task(encoder, data, "before") if config.eval_before else {}
    silver = silver_task(data, config) if config.silver_corpus else None
    if silver is not None:
        stages.add_silver_pairs(data, silver)
    run = train_task(encoder, data, config)
    metrics = {**metrics, **evaluate_task(encoder, data, "after")}
    cal = calibrate_task(encoder, data, config)
    reranker = None
    if config.reranker:
        reranker, reranked = reranker_task(encoder, data, config)
        metrics = {**metrics, **reranked}
    result = stages.make_result(config, data, run, metrics, cal, time.perf_counter() - t0, silver, reranker)
    if config.out:
        save_task(encoder, config.out, result, cal, silver, reranker)
    publish_artifacts(result, stages.model_card(result, encoder))
    print(
        f"best validation Spearman {result.best['spearman']} (epoch {result.best['epoch']}); "
        f"model: {result.model_dir}"
    )
    return result.as_dict()


def main(argv: list[str] | None = None) -> int:
    from nlsim.commands.finetune import add_finetune_options, config_from_args

    parser = argparse.ArgumentParser(prog="python -m flows.finetune", description=finetune_flow.__doc__)
    add_finetune_options(parser)
    finetune_flow(config_from_args(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
