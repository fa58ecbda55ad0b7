"""Operating the daily flow: the day's input from its date, a missing day as one clear failure, run names,
runs on one state folder queued by Prefect's concurrency, stage tasks and progress artifacts."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from nlsim.options import option
from tests.incremental_helpers import FAST_MODEL, bbc_corpus

COMMON = dict(model=FAST_MODEL, convert="none", threshold=0.9, k=20, cache=False, progress=False)


def _flow_run(state):  # noqa: ANN001, ANN202
    from prefect.client.orchestration import get_client

    async def read():  # noqa: ANN202
        async with get_client() as client:
            run = await client.read_flow_run(state.state_details.flow_run_id)
            tasks = await client.read_task_runs()
            return run, [t for t in tasks if t.flow_run_id == run.id]

    return asyncio.run(read())


@pytest.mark.slow
def test_the_days_file_comes_from_the_date_and_a_missing_day_fails_clearly(
    prefect_harness, tmp_path: Path
) -> None:
    from flows.dedup import news_dedup

    inbox = tmp_path / "incoming"
    inbox.mkdir()
    bbc_corpus(n_other=20, n_rewrites=3).to_parquet(inbox / "2026-11-22.parquet", index=False)
    params = dict(
        corpus=str(inbox / "{date}.parquet"),
        out=str(tmp_path / "out"),
        state=str(tmp_path / "state"),
        retention_days=0,
        **COMMON,
    )
    ok = news_dedup(**params, date="2026-11-22", return_state=True)
    assert ok.is_completed()
    run, tasks = _flow_run(ok)
    assert run.name == "news-dedup 2026-11-22 daily"
    names = {t.name.rsplit("-", 1)[0] for t in tasks}
    assert {"load", "model", "window", "embed", "index", "neighbors", "cluster", "commit", "report"} <= names
    assert json.loads((tmp_path / "out" / "latest" / "run.json").read_text())["corpus"].endswith(
        "2026-11-22.parquet"
    )

    before = sorted(p.name for p in (tmp_path / "out" / "runs").iterdir())
    missing = news_dedup(**params, date="2026-11-23", return_state=True)
    assert missing.is_failed()
    assert (
        missing.message.startswith("no input for 2026-11-23:")
        and "2026-11-23.parquet does not exist" in missing.message
    )
    assert "Traceback" not in missing.message
    assert sorted(p.name for p in (tmp_path / "out" / "runs").iterdir()) == before  # nothing was run


@pytest.mark.slow
def test_two_runs_on_one_state_folder_queue_instead_of_failing(prefect_harness, tmp_path: Path) -> None:
    from flows.dedup import news_dedup

    corpus = bbc_corpus(n_other=30, n_rewrites=3)
    paths = []
    for i, part in enumerate((corpus.iloc[: len(corpus) // 2], corpus.iloc[len(corpus) // 2 :])):
        path = tmp_path / f"day{i}.parquet"
        part.to_parquet(path, index=False)
        paths.append(path)
    results: list = [None, None]

    def run(i: int) -> None:
        results[i] = news_dedup(
            corpus=str(paths[i]),
            out=str(tmp_path / "out"),
            state=str(tmp_path / "state"),
            retention_days=0,
            return_state=True,
            **COMMON,
        )

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert all(r is not None and r.is_completed() for r in results), [r and r.message for r in results]
    runs = [json.loads(p.read_text()) for p in (tmp_path / "state" / "runs").glob("*.json")]
    assert len(runs) == 2
    first, second = sorted(runs, key=lambda r: r["started_at"])
    assert pd.Timestamp(first["started_at"]) <= pd.Timestamp(second["started_at"])
    # the second run saw the first one's items: it ran after it, not beside it
    assert second["counts"]["kept"] == len(corpus)


def test_a_failed_run_leaves_a_readable_failure_artifact(prefect_harness, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client

    from flows.dedup import news_dedup

    bad = tmp_path / "bad.csv"
    bad.write_text('id,title\n1,"unbalanced\n2,b\n')
    state = news_dedup(corpus=str(bad), out=str(tmp_path / "out"), return_state=True, **COMMON)
    assert state.is_failed() and "InputError" in state.message and "bad.csv: row" in state.message

    async def artifacts():  # noqa: ANN202
        async with get_client() as client:
            return await client.read_artifacts()

    run_id = state.state_details.flow_run_id
    failure = [
        a for a in asyncio.run(artifacts()) if a.key == "nlsim-run-failure" and a.flow_run_id == run_id
    ]
    assert failure and "bad.csv: row 1" in failure[-1].data


@pytest.mark.parametrize("name", ["news-dedup", "news-pipeline", "finetune", "learning-curve"])
def test_flow_parameters_carry_descriptions(name: str) -> None:
    from flows.serve import load_flow

    entry = {
        "news-dedup": "flows/dedup.py:news_dedup",
        "news-pipeline": "flows/pipeline.py:news_pipeline",
        "finetune": "flows/finetune.py:finetune_flow",
        "learning-curve": "flows/learning_curve.py:learning_curve_flow",
    }
    flow = load_flow({"entrypoint": entry[name], "name": "x"})
    props = flow.parameters.model_dump_for_openapi()["properties"]
    assert props and all(p.get("description") for p in props.values()), name


@pytest.mark.slow
@pytest.mark.parametrize("given", ["4h", "0"])
def test_a_task_timeout_that_is_not_seconds_fails_the_run_in_one_line_naming_the_variable(
    given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NLSIM_TASK_TIMEOUT_S=4h stopped every flow module as it was imported (serve said only that the entry
    point cannot be loaded: ValueError: could not convert string to float), and 0 timed out every long stage
    at once. The flows now load, serve refuses the value before it serves anything (every run would fail on
    it), and a stage of a run started otherwise refuses it by the variable's name before it runs."""
    import os
    import subprocess
    import sys

    import nlsim.dedup.run  # noqa: F401 - declares its stages, "embed" among the long ones
    from flows import orchestration
    from nlsim.errors import ConfigError

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "NLSIM_TASK_TIMEOUT_S": given}
    loaded = subprocess.run(
        [sys.executable, "-c", "import flows.dedup, flows.pipeline"], cwd=root, env=env, capture_output=True
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    listed = subprocess.run(
        [sys.executable, "-m", "flows.serve", "--list"], cwd=root, env=env, capture_output=True, text=True
    )
    assert listed.returncode == 2 and not listed.stdout, listed.stderr[-2000:]
    assert listed.stderr.strip() == (
        f"python -m flows.serve: error: NLSIM_TASK_TIMEOUT_S='{given}': not a number of seconds above 0 "
        "(default 14400), the seconds a long stage may run"
    )

    monkeypatch.setenv("NLSIM_TASK_TIMEOUT_S", given)
    ran: list[int] = []
    with pytest.raises(ConfigError, match=f"NLSIM_TASK_TIMEOUT_S='{given}': not a number of seconds above 0"):
        orchestration.task_call("embed", lambda: ran.append(1))
    assert ran == []


def test_a_failed_runs_artifact_holds_its_reason_as_text_never_markdown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run refused for a bad row quotes the row's value in its reason; the failure's Markdown artifact
    held it as written, so in Prefect's UI a value ``![x](http://tracker.example/p.png)`` fetched an image,
    ``[click](http://evil.example)`` became a link and a second line left the quote. Both artifacts (the
    flow's ``fail`` and the ``on_failure`` hook's) now hold the reason as text."""
    from types import SimpleNamespace

    import flows.orchestration as orchestration

    made: list[str] = []
    monkeypatch.setattr(orchestration, "create_markdown_artifact", lambda md, **kw: made.append(md))
    monkeypatch.setattr(orchestration, "get_run_logger", lambda: SimpleNamespace(error=lambda *a: None))
    reason = (
        "news.csv: row 1, field 'published_at': time '![x](http://tracker.example/p.png)' is not a time\n"
        "[click](http://evil.example) *now*"
    )
    orchestration.fail(reason)
    state = SimpleNamespace(message=reason, result=lambda raise_on_failure: None)
    orchestration.report_failure(SimpleNamespace(name="news-dedup"), SimpleNamespace(name="a-run"), state)
    assert len(made) == 2
    for md in made:
        quote = md.split("\n> ", 1)[1]
        assert "![x](" not in quote and "](http" not in quote.replace("\\](http", ""), md
        assert "\\[click\\](http\\://evil.example) \\*now\\*" in quote, md
        assert quote.count("\n") == 1, md  # one line: the reason stays inside the quote


@pytest.mark.slow
def test_a_dated_quarantine_file_is_named_by_the_runs_scheduled_day_as_the_corpus_would_be(
    prefect_harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one corpus file and ``quarantine: bad/{date}.csv``, a run scheduled for 06:30 in Taipei on
    2026-11-23 wrote its bad rows to the file of the day it ran on (the date of the clock, not of the
    schedule), while the run was named after the scheduled day; the scheduled day now fills in both."""
    from flows.dedup import news_dedup

    corpus = tmp_path / "news.csv"
    corpus.write_text(
        "id,title,description,source,published_at\n"
        "a,Rain in Taipei,Heavy rain today,CNA,2026-11-22T23:00:00+00:00\n"
        "b,Rain in Taipei again,Heavy rain,CNA,not a time\n"
    )
    import datetime as dt

    from prefect.runtime import flow_run

    scheduled = dt.datetime(2026, 11, 22, 22, 30, tzinfo=dt.UTC)  # 06:30 on 2026-11-23 in Taipei
    monkeypatch.setattr(flow_run, "scheduled_start_time", scheduled, raising=False)
    state = news_dedup(
        corpus=str(corpus),
        quarantine=str(tmp_path / "bad" / "{date}.csv"),
        out=str(tmp_path / "out"),
        state=str(tmp_path / "state"),
        timezone="Asia/Taipei",
        return_state=True,
        **COMMON,
    )
    assert state.is_completed(), state.message
    run, _ = _flow_run(state)
    assert run.name == "news-dedup 2026-11-23 daily"
    assert sorted(p.name for p in (tmp_path / "bad").iterdir()) == ["2026-11-23.csv"]


@pytest.mark.slow
def test_a_stage_past_its_timeout_fails_the_run_in_one_line_naming_the_stage_and_the_variable(
    prefect_harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A long stage that ran past ``NLSIM_TASK_TIMEOUT_S`` ended the run as ``Scope timed out after 0.3
    second(s).``, Prefect's words, which named neither the stage nor the setting that would give it more
    time; the run's line now names both, and ``python -m flows.X`` ends on it, exit status 1."""
    import time

    import nlsim.dedup.run  # noqa: F401 - declares its stages, "embed" among the long ones
    from flows.orchestration import config_flow, exit_status, task_call
    from nlsim.training.config import LearningCurveConfig

    def embed(seconds: float) -> None:
        time.sleep(seconds)

    monkeypatch.setenv("NLSIM_TASK_TIMEOUT_S", "0.3")
    slow = config_flow(
        lambda **params: task_call("embed", embed, 3),
        (LearningCurveConfig,),
        name="a-slow-stage",
        description="one long stage",
    )
    state = slow(pairs=str(tmp_path / "pairs.tsv"), out=str(tmp_path / "out"), return_state=True)
    assert state.is_failed()
    assert state.message == (
        "stage 'embed' ran past its 0.3 s (NLSIM_TASK_TIMEOUT_S=0.3, the seconds a long stage may run): "
        "give NLSIM_TASK_TIMEOUT_S more seconds and run again"
    )
    assert exit_status("python -m flows.dedup", state) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"python -m flows.dedup: error: {state.message}"


def _httpx_connect_error() -> Exception:
    import httpx

    return httpx.ConnectError("All connection attempts failed")


def _input_error() -> Exception:
    from nlsim.errors import InputError

    return InputError("news.parquet", 7, "title", "empty text")


@pytest.mark.parametrize(
    ("error", "retried"),
    [
        (lambda: OSError(5, "Input/output error", "news.parquet"), True),
        (lambda: ConnectionResetError(104, "Connection reset by peer"), True),
        (_httpx_connect_error, True),
        (lambda: ValueError("a bug"), False),
        (lambda: KeyError("title"), False),
        (MemoryError, False),
        (_input_error, False),
    ],
)
def test_an_io_stage_is_retried_on_io_errors_only(error: Callable[[], Exception], retried: bool) -> None:
    """An I/O stage (``load``, ``commit``, ``report``) was retried on any error but nlsim's own: a bug of
    the program (``ValueError``, ``KeyError``) or a ``MemoryError`` ran the stage three times, re-reading
    the day's corpus and logging the same traceback each time, though it could only fail again. Only a
    file system or network error (an ``OSError``, a connection that dropped) is retried now."""
    from prefect.states import Failed

    from flows.orchestration import retry_io_only

    assert retry_io_only(None, None, Failed(data=error())) is retried


@pytest.mark.parametrize("given", ["0", "-5", "inf", "nan", "4h"])
def test_a_task_timeout_that_is_not_a_number_of_seconds_above_0_is_refused(given: str) -> None:
    """0 timed out every long stage at once, and ``inf`` is no number of seconds Prefect can wait."""
    from flows.orchestration import task_timeout
    from nlsim.errors import ConfigError

    with pytest.raises(ConfigError, match=f"NLSIM_TASK_TIMEOUT_S='{given}': not a number of seconds above 0"):
        task_timeout({"NLSIM_TASK_TIMEOUT_S": given})


def test_a_blank_task_timeout_is_the_default_and_a_fraction_is_taken() -> None:
    """A variable exported empty (``NLSIM_TASK_TIMEOUT_S=``) is as if unset."""
    from flows.orchestration import TIMEOUT_S, task_timeout

    assert task_timeout({"NLSIM_TASK_TIMEOUT_S": " "}) == TIMEOUT_S == 14400.0
    assert task_timeout({"NLSIM_TASK_TIMEOUT_S": "0.5"}) == 0.5


def _task_options(monkeypatch: pytest.MonkeyPatch, stage: str, fn: Callable[[], object]) -> dict:
    """The options :func:`flows.orchestration.task_call` makes the task of ``stage`` with (the task runs
    ``fn`` in place, without Prefect)."""
    import flows.orchestration as orchestration

    made: dict = {}

    def task(function: Callable[..., object], **options: object) -> Callable[..., object]:
        made.update(options)
        return lambda *args, **kwargs: fn()

    monkeypatch.setattr(orchestration, "task", task)
    orchestration.task_call(stage, lambda: None)
    return made


def test_an_io_stage_is_retried_and_an_expensive_one_timed_and_neither_the_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nlsim import orchestration as seam
    from nlsim.orchestration import StageInfo, declare

    monkeypatch.setattr(seam, "_STAGES", {})
    monkeypatch.setenv("NLSIM_TASK_TIMEOUT_S", "90")
    declare(StageInfo("load", "read", io=True), StageInfo("embed", "embed", expensive=True))
    load = _task_options(monkeypatch, "load", lambda: None)
    assert (load["name"], load["retries"], load["retry_delay_seconds"]) == ("load", 2, 2)
    assert load["retry_condition_fn"].__name__ == "retry_io_only" and "timeout_seconds" not in load
    embed = _task_options(monkeypatch, "embed", lambda: None)
    assert embed["timeout_seconds"] == 90.0 and "retries" not in embed
    plain = _task_options(monkeypatch, "cluster", lambda: None)
    assert set(plain) == {"name", "cache_policy"}


def test_a_timeout_from_inside_a_stage_without_one_is_raised_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stage with no time of its own that runs a timed task inside it: the timeout is that task's, not
    the stage's, and goes on unchanged."""
    from prefect.task_engine import TaskRunTimeoutError

    from nlsim import orchestration as seam

    monkeypatch.setattr(seam, "_STAGES", {})

    def inner() -> None:
        raise TaskRunTimeoutError("inner task timed out")

    with pytest.raises(TaskRunTimeoutError, match="inner task timed out"):
        _task_options(monkeypatch, "cluster", inner)


def test_a_stage_past_its_time_names_the_setting_it_ran_under() -> None:
    from flows.orchestration import StageTimeout

    given = str(StageTimeout("embed", 600.0, {"NLSIM_TASK_TIMEOUT_S": "600"}))
    assert given.startswith("stage 'embed' ran past its 600 s (NLSIM_TASK_TIMEOUT_S=600, the seconds a long")
    default = str(StageTimeout("embed", 14400.0, {}))
    assert default.startswith("stage 'embed' ran past its 14400 s (the default of NLSIM_TASK_TIMEOUT_S,")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("news-dedup-Embedding texts!", "news-dedup-embedding-texts"),
        ("  (search) ", "search"),
        ("!!!", "progress"),
        ("x" * 70, "x" * 60),
    ],
)
def test_an_artifact_key_is_lower_case_letters_digits_and_dashes(text: str, key: str) -> None:
    from flows.orchestration import artifact_key

    assert artifact_key(text) == key


def test_progress_artifacts_say_each_steps_share_up_to_100_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step whose count runs past its total (a last batch counted whole) is at 100 percent, and a step
    of no known total (or of none) keeps no artifact."""
    import flows.orchestration as orchestration
    from nlsim.progress import Progress

    made: list[tuple[float, str, str]] = []
    monkeypatch.setattr(
        orchestration, "progress_artifact", lambda artifact, share, key, said: made.append((share, key, said))
    )
    with orchestration.progress_artifacts("news-dedup"):
        for total, done in ((200, 50), (100, 150), (0, 3), (None, 3)):
            bar = Progress(total, "embed", enabled=False, stream=None)
            bar.update(done)
            bar.close()
    assert made == [
        (25.0, "news-dedup-embed", "embed: 50 of 200"),
        (100.0, "news-dedup-embed", "embed: 150 of 100"),
    ]


def test_progress_reporting_that_the_server_refuses_never_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import flows.orchestration as orchestration

    def refused(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the server refused the artifact")

    monkeypatch.setattr(orchestration, "create_progress_artifact", refused)
    monkeypatch.setattr(orchestration, "update_progress_artifact", refused)
    assert orchestration.progress_artifact(None, 10.0, "k", "embed: 1 of 10") is None
    assert orchestration.progress_artifact("id-1", 20.0, "k", "embed: 2 of 10") == "id-1"


def test_a_stage_that_nlsim_refused_logs_its_line_without_a_traceback() -> None:
    import logging

    from flows.orchestration import ExpectedFailureTraceback

    error = _input_error()
    record = logging.LogRecord("prefect.task_runs", 40, "", 0, "x", None, (type(error), error, None))
    assert ExpectedFailureTraceback().filter(record) and record.exc_info is None


def test_the_traceback_filters_are_installed_once() -> None:
    import logging

    from flows.orchestration import ExpectedFailureTraceback, FailedRunTraceback, quiet_failed_runs

    quiet_failed_runs()
    quiet_failed_runs()
    for name, kind in (
        ("prefect.flow_runs", FailedRunTraceback),
        ("prefect.task_runs", ExpectedFailureTraceback),
    ):
        assert sum(isinstance(f, kind) for f in logging.getLogger(name).filters) == 1


def test_a_failure_that_is_no_error_of_nlsims_keeps_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    """Only the name of nlsim's own error is left out of the line (``InputError: ``): a bug's name stays."""
    from prefect.states import Failed

    from flows.orchestration import exit_status

    assert exit_status("python -m flows.dedup", Failed(message="KeyError: 'title'")) == 1
    assert capsys.readouterr().err == "python -m flows.dedup: error: KeyError: 'title'\n"


def test_the_failure_artifact_names_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import flows.orchestration as orchestration

    made: list[str] = []
    monkeypatch.setattr(orchestration, "create_markdown_artifact", lambda md, **kw: made.append(md))
    state = SimpleNamespace(message="failed", result=lambda raise_on_failure: KeyError("title"))
    orchestration.report_failure(SimpleNamespace(name="news-dedup"), SimpleNamespace(name="a-run"), state)
    assert made == ["# news-dedup failed\n\nRun `a-run`:\n\n> KeyError: 'title'\n"]


@dataclass(frozen=True, kw_only=True)
class _Search:
    languages: tuple[str, ...] = option(("en", "zh"), help="the languages searched")
    k: int = option(10, help="neighbours per item")
    corpus: str = option(help="the corpus file")
    out: str = option(help="the output folder")


def test_a_config_flows_parameters_are_its_settings_required_first_with_lists_for_tuples() -> None:
    import inspect

    from flows.orchestration import config_flow

    made = config_flow(lambda **params: params, (_Search,), name="a-search", description="x", exclude=("k",))
    signature = inspect.signature(made.fn)
    assert list(signature.parameters) == ["corpus", "out", "languages"]
    assert signature.parameters["languages"].default == ["en", "zh"]
