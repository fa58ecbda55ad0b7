"""Prefect flow ``news-dedup``: the near-duplicate report, one task per stage of
:func:`nlsim.dedup.run.run_dedup`.

Its parameters are the settings of :class:`nlsim.dedup.config.DedupConfig` by their flat names (the options of
``nlsim dedup``).
With ``state`` it is the daily incremental run (the ``news-dedup/daily`` deployment): the day's corpus is
``corpus`` with ``{date}`` filled in from the scheduled time, in ``timezone`` (as is ``{date}`` in
``quarantine``); a day without its file ends in one clear failed-run message. Runs on one state folder
queue on a Prefect global concurrency limit named after the folder.

Run it without a server (Prefect starts a temporary one)::

    python -m flows.dedup --corpus data/thucnews.parquet --out reports/thucnews --model current

Served as the deployment ``news-dedup/daily`` (see ``prefect.yaml`` and ``flows/serve.py``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefect import get_client
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.concurrency.sync import concurrency
from prefect.runtime import flow_run

from flows.orchestration import config_flow, fail, progress_artifacts, run_from_command_line, task_call
from nlsim.commands.dedup import add_dedup_options
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import Call, DedupResult, run_dedup
from nlsim.dedup.settings import has_date
from nlsim.errors import NlsimError
from nlsim.io import columns
from nlsim.options import options_of
from nlsim.progress import counted
from nlsim.report.summary import render_markdown


def run_date(config: DedupConfig) -> str:
    """The run's date: ``config.input.date``, else the flow run's scheduled start (or now) in
    ``config.input.timezone``."""
    if config.input.date:
        return config.input.date
    when = flow_run.scheduled_start_time or dt.datetime.now(dt.UTC)
    return dt.datetime.fromisoformat(str(when)).astimezone(config.input.zone()).date().isoformat()


def run_name() -> str:
    """Flow run names carry the date and the mode: ``news-dedup 2026-11-22 daily``.

    A ``date`` that is not a date names the run as it was given (the run then fails saying why), and a
    run whose other parameters cannot be read is named by its scheduled day in UTC: never by today's date
    when that is not the day the run was asked for.
    """
    params = flow_run.parameters or {}
    mode = "daily" if params.get("state") else "batch"
    try:
        names = {o.name for o in options_of(DedupConfig)}
        config = DedupConfig.of(**{k: v for k, v in params.items() if k in names})
        day = run_date(config)
    except Exception:  # noqa: BLE001 - a bad parameter fails the run with its own message
        given = params.get("date")
        if given:
            day = " ".join(str(given).split())[:40] or "(no date)"
        else:
            when = flow_run.scheduled_start_time or dt.datetime.now(dt.UTC)
            day = dt.datetime.fromisoformat(str(when)).astimezone(dt.UTC).date().isoformat() + " UTC"
    return f"news-dedup {day} {mode}"


def state_limit_name(state: str) -> str:
    """The global concurrency limit of one state folder (runs on it queue, one at a time)."""
    return "nlsim-state-" + hashlib.sha1(str(Path(state).resolve()).encode()).hexdigest()[:12]


def ensure_state_limit(name: str) -> None:
    """Create the global concurrency limit ``name`` (1 slot) unless it exists.

    Asked by name first: creating one that exists makes the server log an ``IntegrityError`` traceback
    (its unique name), on every run after the first. Two first runs racing may still both try to create
    it; the loser's "already exists" is expected and ignored.
    """
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate  # deferred: daily runs only
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
            return
        except ObjectNotFound:
            pass
        with contextlib.suppress(ObjectAlreadyExists):
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))


@contextlib.contextmanager
def one_run_per_state(state: str | None) -> Iterator[None]:
    """Hold the state folder's concurrency slot (created on first use, limit 1) for the whole run."""
    if not state:
        yield
        return
    name = state_limit_name(state)
    ensure_state_limit(name)
    print(f"waiting for the state folder's slot ({name}) if another run holds it")
    with concurrency(name, occupy=1, strict=True):
        yield


def publish_artifacts(result: DedupResult) -> None:
    """The run's summary, figures and clusters as Prefect artifacts."""
    stats = result.stats
    md = render_markdown(
        result.pairs, result.clusters, stats, report_dir=str(result.report_dir), replayed=result.replayed
    )
    create_markdown_artifact(
        md, key=f"news-dedup-{stats.mode}-run", description=f"{stats.mode} run: counts and timings"
    )
    table = columns.summary_rows(result.clusters, columns.table("clusters"), limit=100)  # its summary columns
    if table:
        create_table_artifact(
            table, key=f"news-dedup-{stats.mode}-clusters", description="clusters of this run"
        )


def dedup_run(config: DedupConfig, call: Call = task_call, encoder: Any = None) -> Any:
    """The body of the dedup flows: resolve the day's input, hold the state's slot, run, publish."""
    # the scheduled day fills in every {date}: the quarantine file's too, even when the corpus has none
    if config.input.dated:
        config = config.with_(date=run_date(config))
    if has_date(config.input.corpus):
        path = Path(config.input.corpus_path)
        if not path.exists():
            return fail(
                f"no input for {config.input.date}: {path} does not exist (nothing was run; the state and "
                "the last report are unchanged)"
            )
    try:
        with one_run_per_state(config.state.folder), progress_artifacts("news-dedup"):
            result = run_dedup(config, call=call, encoder=encoder)
    except NlsimError as exc:
        return fail(f"{type(exc).__name__}: {exc}")
    publish_artifacts(result)
    s = result.summary
    print(
        f"report: {result.report_dir.resolve()} - {counted(s['items'], 'item', 'items')}, "
        f"{counted(s['pairs'], 'pair', 'pairs')}, {counted(s['clusters'], 'cluster', 'clusters')}"
    )
    return {**s, "report": str(result.report_dir), "files": {k: str(v) for k, v in result.files.items()}}


news_dedup = config_flow(
    lambda **params: dedup_run(DedupConfig.of(**params)),
    (DedupConfig,),
    name="news-dedup",
    description="Near-duplicate report for a corpus: a batch run, or the daily incremental run with a state "
    "folder (state; --state on the command line).",
    flow_run_name=run_name,
)


def main(argv: list[str] | None = None) -> int:
    return run_from_command_line(news_dedup, "python -m flows.dedup", add_dedup_options, (DedupConfig,), argv)


if __name__ == "__main__":
    sys.exit(main())
