"""Flow ``finetune``: its tasks alone (``task.fn``), then the whole flow against the test API."""

from __future__ import annotations

from pathlib import Path

import pytest
from stsb_helpers import write_stsb_corpus, write_stsb_sample

from nlsim.training.config import FinetuneConfig


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_stsb_sample(tmp_path_factory.mktemp("ftflow"), train=16, validation=12, test=12)


def config(pairs_file: Path, out: Path | None) -> FinetuneConfig:
    return FinetuneConfig.of(
        pairs=str(pairs_file),
        out=str(out) if out else None,
        model="paraphrase-MiniLM-L3-v2",
        conversion="none",
        epochs=1,
        batch_size=8,
        max_length=48,
        calibrate_level=0.6,
        threads=1,
        reranker=False,
    )


def params(cfg: FinetuneConfig) -> dict:
    return cfg.parameters()


@pytest.mark.slow
def test_flow_saves_model_and_publishes_artifacts(prefect_harness, pairs_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from prefect.client.orchestration import get_client

    from flows.finetune import finetune_flow

    out = tmp_path / "model"
    state = finetune_flow(**params(config(pairs_file, out)), return_state=True)
    result = state.result()
    assert result["model_dir"] == str(out)
    assert (out / "calibration.json").is_file() and (out / "README.md").is_file()
    assert set(result["metrics"]) == {"before/validation", "before/test", "after/validation", "after/test"}

    import asyncio

    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def keys() -> tuple[set[str], set[str]]:
        async with get_client() as client:
            arts = await client.read_artifacts()
            runs = await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id]))
            )
        return {a.key for a in arts}, {r.name.rsplit("-", 1)[0] for r in runs}

    artifacts, tasks = asyncio.run(keys())
    assert {"finetune-metrics", "finetune-model-card"} <= artifacts
    assert {
        "load-pairs",
        "load-base-model",
        "evaluate-before",
        "train",
        "evaluate-after",
        "calibrate",
        "save-model",
    } <= tasks  # one task per step of nlsim.training.finetune.finetune


@pytest.mark.slow
def test_flow_with_silver_corpus(prefect_harness, pairs_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from flows.finetune import finetune_flow
    from nlsim.training.finetune import SILVER_PARQUET

    corpus = write_stsb_corpus(tmp_path / "corpus.tsv", skip=16, n=40)
    cfg = config(pairs_file, tmp_path / "model")
    cfg = cfg.with_(silver_corpus=str(corpus), silver_anchors=10, cross_encoder_epochs=1)
    result = finetune_flow(**params(cfg))
    assert result["n_train"] == 16 and result["silver"]["pairs"] >= 10
    assert result["steps"] == -(-(16 + result["silver"]["pairs"]) // 8)
    assert (tmp_path / "model" / SILVER_PARQUET).is_file()


@pytest.mark.slow
def test_flow_with_reranker_then_dedup_flow_reranks(
    prefect_harness,  # noqa: ANN001
    pairs_file: Path,
    tmp_path: Path,
    repo_root: Path,
) -> None:
    """The finetune flow's ``reranker`` task saves one; the dedup flow's ``rerank`` task matches it."""
    import pandas as pd

    from flows.dedup import news_dedup
    from flows.finetune import finetune_flow
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup
    from nlsim.rerank.reranker import has_reranker

    cfg = config(pairs_file, tmp_path / "model")
    cfg = cfg.with_(reranker=True, cross_encoder_epochs=1)
    result = finetune_flow(**params(cfg))
    assert has_reranker(tmp_path / "model")
    assert {"reranked/validation", "reranked/test"} <= set(result["metrics"])
    corpus = tmp_path / "bbc.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:60].to_parquet(corpus)
    common = dict(model=str(tmp_path / "model"), convert="none", threshold=0.5, text_fields="title", k=5)
    summary = news_dedup(corpus=str(corpus), out=str(tmp_path / "flow"), cache=False, **common)
    direct = run_dedup(
        DedupConfig.of(corpus=corpus, out=tmp_path / "direct", cache=False, progress=False, **common)
    )
    assert summary["rerank"]["candidates"] == direct.summary["rerank"]["candidates"] > 0
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "flow" / "pairs.parquet"),
        pd.read_parquet(tmp_path / "direct" / "pairs.parquet"),
    )
