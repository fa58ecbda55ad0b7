"""The ``news-dedup`` flow under Prefect gives the same report as the library called directly."""

import pandas as pd
import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory, repo_root):
    path = tmp_path_factory.mktemp("corpus") / "bbc300.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:300].to_parquet(path)
    return path


def test_flow_report_equals_library_report(prefect_harness, small_corpus, tmp_path):
    from flows.dedup import news_dedup

    params = dict(model="paraphrase-MiniLM-L3-v2", convert="none", threshold=0.8)
    summary = news_dedup(corpus=str(small_corpus), out=str(tmp_path / "flow"), cache=False, **params)
    direct = run_dedup(
        DedupConfig(corpus=small_corpus, out=tmp_path / "direct", cache=False, progress=False, **params)
    )
    assert summary["pairs"] == len(direct.pairs) > 0
    for name in ("pairs.parquet", "clusters.parquet"):
        flow_table = pd.read_parquet(tmp_path / "flow" / name)
        direct_table = pd.read_parquet(tmp_path / "direct" / name)
        pd.testing.assert_frame_equal(flow_table, direct_table)
    assert (tmp_path / "flow" / "index.html").is_file()


def test_flow_publishes_artifacts(prefect_harness, small_corpus, tmp_path):
    from prefect.client.orchestration import get_client

    from flows.dedup import news_dedup

    news_dedup(
        corpus=str(small_corpus),
        out=str(tmp_path / "r"),
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        threshold=0.8,
        cache=False,
    )

    import asyncio

    async def keys():
        async with get_client() as client:
            arts = await client.read_artifacts()
            return {a.key for a in arts}

    found = asyncio.run(keys())
    assert {"news-dedup-batch-run", "news-dedup-batch-clusters"} <= found
