"""Prefect flow ``finetune``: [silver pairs ->] train -> evaluate -> calibrate [-> reranker] -> save.

:func:`nlsim.training.finetune.finetune` runs the steps; this flow passes the ``call`` that makes each a
task, and publishes the metrics table and the model card as artifacts. Its parameters are the settings of
:class:`nlsim.training.config.FinetuneConfig` by their flat names (the options of ``nlsim finetune``). Run
it without a server::

    python -m flows.finetune --pairs annotations/thucnews_tw_pairs.tsv --out finetuned/e5-thucnews
"""

from __future__ import annotations

import sys
from typing import Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.orchestration import config_flow, fail, progress_artifacts, run_from_command_line, task_call
from nlsim.commands.finetune import add_finetune_options
from nlsim.errors import NlsimError
from nlsim.training.config import FinetuneConfig
from nlsim.training.finetune import FinetuneResult, finetune, holding_model_out
from nlsim.training.model_card import model_card_markdown


def publish_artifacts(result: FinetuneResult) -> None:
    """The metrics table and the model card as Prefect artifacts."""
    table = [{"when": k.split("/")[0], "split": k.split("/")[1], **v} for k, v in result.metrics.items()]
    create_table_artifact(table, key="finetune-metrics", description="Spearman x100, Pearson x100, MSE, MAE")
    create_markdown_artifact(model_card_markdown(result), key="finetune-model-card", description="model card")


def _body(**params: Any) -> Any:
    config = FinetuneConfig.of(**params)
    try:
        # never in a model store; one run into --out at a time
        with holding_model_out(config.out), progress_artifacts("finetune"):
            result = finetune(config, call=task_call)
    except NlsimError as exc:
        return fail(f"{type(exc).__name__}: {exc}")
    publish_artifacts(result)
    print(
        f"best validation Spearman {result.best['spearman']} (epoch {result.best['epoch']}); model: "
        f"{result.model_dir}"
    )
    return result.as_dict()


finetune_flow = config_flow(
    _body,
    (FinetuneConfig,),
    name="finetune",
    description="Fine-tune the encoder (and its reranker) on annotated pairs and save the model folder.",
)


def main(argv: list[str] | None = None) -> int:
    return run_from_command_line(
        finetune_flow, "python -m flows.finetune", add_finetune_options, (FinetuneConfig,), argv
    )


if __name__ == "__main__":
    sys.exit(main())
