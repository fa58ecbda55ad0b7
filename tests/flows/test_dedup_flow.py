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


@pytest.mark.slow
def test_flow_report_equals_library_report(prefect_harness, small_corpus, tmp_path):
    from flows.dedup import news_dedup

    params = dict(model="paraphrase-MiniLM-L3-v2", convert="none", threshold=0.8)
    summary = news_dedup(corpus=str(small_corpus), out=str(tmp_path / "flow"), cache=False, **params)
    direct = run_dedup(
        DedupConfig.of(corpus=small_corpus, out=tmp_path / "direct", cache=False, progress=False, **params)
    )
    assert summary["pairs"] == len(direct.pairs) > 0
    for name in ("pairs.parquet", "clusters.parquet"):
        flow_table = pd.read_parquet(tmp_path / "flow" / name)
        direct_table = pd.read_parquet(tmp_path / "direct" / name)
        pd.testing.assert_frame_equal(flow_table, direct_table)
    assert (tmp_path / "flow" / "index.html").is_file()


@pytest.mark.slow
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


@pytest.mark.parametrize(
    ("main", "argv", "words"),
    [
        ("flows.dedup", ["--corpus", "c.parquet", "--out", "o", "--k", "0"], "--k must be >= 1, got 0"),
        ("flows.dedup", ["--corpus", "c.parquet", "--out", "o", "--threshold", "nan"], "--threshold must be"),
        ("flows.pipeline", ["--epochs", "0"], "--epochs"),
    ],
)
def test_a_flow_refuses_a_value_that_cannot_work_in_one_line_with_exit_2(main, argv, words, capsys):
    """As `nlsim` does: a usage error, before any flow run starts, and no traceback."""
    import importlib

    module = importlib.import_module(main)
    with pytest.raises(SystemExit) as done:
        module.main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and err.count("error:") == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("main", "argv", "status", "words"),
    [
        ("flows.dedup", ["--out", "{corpus}", "--threshold", "0.9"], 2, "is the same path as --corpus"),
        ("flows.dedup", ["--corpus", "{tmp}/none.parquet", "--threshold", "0.9"], 1, "none.parquet"),
    ],
    ids=["option", "input"],
)
def test_a_run_refused_inside_the_flow_exits_as_nlsim_does_with_its_line_last(
    prefect_harness, small_corpus, tmp_path, capsys, main, argv, words, status
):
    """An option nlsim refuses once the run has started (a path check) is exit status 2, a bad input 1, and
    the reason is the command's last line (it was exit status 1 for both, the reason among the log lines)."""
    import importlib

    fill = {"corpus": str(small_corpus), "tmp": str(tmp_path)}
    argv = ["--corpus", "{corpus}", "--out", "{tmp}/out", "--model", "paraphrase-MiniLM-L3-v2", *argv]
    assert importlib.import_module(main).main([a.format(**fill) for a in argv]) == status
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"python -m {main}: error: ") and words in last, last
    assert "ConfigError" not in last


def test_a_bad_input_is_worded_by_the_flow_command_as_nlsim_dedup_words_it(prefect_harness, tmp_path, capsys):
    """`python -m flows.dedup` said `InputError: ` before the reason `nlsim dedup` gives alone."""
    from flows.dedup import main
    from tests.command import nlsim, refused

    corpus = tmp_path / "news.csv"
    corpus.write_text("id,title\nn1,Floods hit the north\nn1,Stock markets fall\n", encoding="utf-8")
    argv = ["--corpus", str(corpus), "--out", str(tmp_path / "out"), "--model", "paraphrase-MiniLM-L3-v2"]
    argv += ["--threshold", "0.9"]
    assert main(argv) == 1
    flow_line = capsys.readouterr().err.strip().splitlines()[-1]
    cli_line = refused(nlsim("dedup", *argv, cwd=tmp_path), 1, "row 2, field 'id'")
    assert flow_line.removeprefix("python -m flows.dedup: ") == cli_line.removeprefix("nlsim dedup: "), (
        flow_line,
        cli_line,
    )
