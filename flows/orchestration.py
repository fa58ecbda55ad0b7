"""How the flows run nlsim's stages on Prefect: a ``call`` that makes each stage a task, flow parameters
derived from nlsim's configuration dataclasses, progress artifacts, readable failures.

* :func:`task_call` is the ``call`` of :func:`nlsim.dedup.run.run_dedup` (and of the chained pipeline):
  each stage becomes a task named after it, I/O stages retried, expensive stages under a timeout
  (``NLSIM_TASK_TIMEOUT_S``, default 4 hours; a value that is not a number of seconds above 0 fails the run
  in one line: :func:`task_timeout`).
* :func:`config_flow` builds a flow whose parameters are the settings of configuration dataclasses, by their
  flat names (names, types, defaults, descriptions and enum choices in the deployment schema), so no
  parameter list is written twice.
* :func:`progress_artifacts` turns :mod:`nlsim.progress` into Prefect progress artifacts.
* :func:`report_failure` is every flow's ``on_failure`` hook: a Markdown artifact with the error in one
  readable line.
* A failed run is one line wherever it is read: an error of nlsim (bad input, a bad parameter) ends the run
  Failed with ``ErrorName: message`` as the state's message (:func:`fail`), and the traceback Prefect's
  engine logs when it re-raises that failed state (``FailedRun``) is left out (:class:`FailedRunTraceback`).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import logging
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, get_args, get_origin

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE

from flows.ephemeral import exit_on_api_failure, kill_started, servers_now, stopping_a_temporary_server
from nlsim import progress
from nlsim.cli import (
    Terminated,
    exit_within,
    named,
    os_error_line,
    raised_safely,
    sigterm_stops_the_run,
    stopped,
)
from nlsim.commands.options import config_from_args
from nlsim.environment import check_environment
from nlsim.errors import ConfigError, NlsimError
from nlsim.options import options_of, parameters
from nlsim.orchestration import stage_info
from nlsim.report.summary import md_cell

IO_RETRIES = 2
TIMEOUT_VARIABLE = "NLSIM_TASK_TIMEOUT_S"
TIMEOUT_S = 4 * 3600.0
"""The default seconds an expensive stage may run (:data:`TIMEOUT_VARIABLE` sets others)."""


def task_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """The seconds an expensive stage may run: :data:`TIMEOUT_VARIABLE`, else :data:`TIMEOUT_S`; a value
    that is not a number of seconds above 0 is a :class:`ConfigError` naming the variable (it stopped every
    flow with a traceback as the module was imported, and 0 timed out every long stage at once).

    Example:
        >>> task_timeout({}), task_timeout({TIMEOUT_VARIABLE: "600"})
        (14400.0, 600.0)
        >>> try:
        ...     task_timeout({TIMEOUT_VARIABLE: "4h"})
        ... except ConfigError as exc:
        ...     print(str(exc)[:52])
        NLSIM_TASK_TIMEOUT_S='4h': not a number of seconds a
    """
    given = environ.get(TIMEOUT_VARIABLE)
    if given is None or not given.strip():
        return TIMEOUT_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigError(
            f"{TIMEOUT_VARIABLE}={given!r}: not a number of seconds above 0 (default {TIMEOUT_S:.0f}), the "
            "seconds a long stage may run"
        )
    return seconds


def retry_io_only(task_: Any, task_run: Any, state: Any) -> bool:
    """Retry a stage that failed on I/O (a file system or network hiccup: an ``OSError``, a connection of
    ``httpx``'s that dropped), never one that nlsim refused (bad input, a broken state) nor one the program
    failed in (a ``ValueError``, a ``MemoryError``): the same input fails the same way again."""
    import httpx  # deferred: a failed stage only (Prefect's own client, installed with it)

    try:
        state.result()
    except (OSError, httpx.TransportError):
        return True
    except Exception:  # noqa: BLE001 - nlsim's refusal, a bug: it would fail again
        return False
    return True


class StageTimeout(TimeoutError):
    """A long stage that ran past :func:`task_timeout`: the run's one line names the stage and the setting
    (Prefect's own words, ``Scope timed out after 14400 second(s).``, named neither)."""

    def __init__(self, stage: str, seconds: float, environ: Mapping[str, str] = os.environ) -> None:
        given = (environ.get(TIMEOUT_VARIABLE) or "").strip()
        setting = f"{TIMEOUT_VARIABLE}={given}" if given else f"the default of {TIMEOUT_VARIABLE}"
        super().__init__(
            f"stage {stage!r} ran past its {seconds:g} s ({setting}, the seconds a long stage may run): give "
            f"{TIMEOUT_VARIABLE} more seconds and run again"
        )


def task_call(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one stage as a Prefect task (see the module docstring); a long stage that runs past its time
    raises :class:`StageTimeout`."""
    from prefect.task_engine import TaskRunTimeoutError

    info = stage_info(name)
    options: dict[str, Any] = {"name": name, "cache_policy": NO_CACHE}
    if info is not None and info.io:
        options.update(retries=IO_RETRIES, retry_delay_seconds=2, retry_condition_fn=retry_io_only)
    if info is not None and info.expensive:
        options["timeout_seconds"] = task_timeout()
    try:
        return task(fn, **options)(*args, **kwargs)
    except TaskRunTimeoutError:
        if "timeout_seconds" not in options:  # not this stage's own time: raised from inside it
            raise
        raise StageTimeout(name, options["timeout_seconds"]) from None


def artifact_key(text: str) -> str:
    """A Prefect artifact key (lower-case letters, digits and dashes) from any text."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "progress"


def progress_artifact(artifact: Any, share: float, key: str, description: str) -> Any:
    """Make (``artifact`` ``None``) the progress artifact ``key`` at ``share`` percent, or update it; its id
    (``None``: none made yet). Progress reporting never fails a run: an artifact the server refuses is
    left as it was."""
    try:
        if artifact is None:
            return create_progress_artifact(share, key=key, description=description)
        update_progress_artifact(artifact, share, description=description)
    except Exception:  # noqa: BLE001 - progress reporting must never fail a run
        pass
    return artifact


@contextlib.contextmanager
def progress_artifacts(prefix: str) -> Iterator[None]:
    """While inside, every long step of nlsim (embedding, search, rescoring) keeps a progress artifact."""
    ids: dict[str, Any] = {}

    def listener(desc: str, done: int, total: int | None) -> None:
        if not total:
            return
        share = min(100.0, 100.0 * done / total)
        key, said = artifact_key(f"{prefix}-{desc}"), f"{desc}: {done:,} of {total:,}"
        ids[desc] = progress_artifact(ids.get(desc), share, key, said)

    progress.add_listener(listener)
    try:
        yield
    finally:
        progress.remove_listener(listener)


class FailedRunTraceback(logging.Filter):
    """Leave out the traceback Prefect's engine logs after a run ended Failed.

    When a flow run ends in a Failed state, the engine raises that state again as ``FailedRun`` and logs
    "Engine execution exited with unexpected exception" with some 30 lines of the engine's own frames on
    the served process's console (``python -m flows.serve``). The run's own error line was logged before
    it, and the state's message holds it: the record is dropped. An exception raised inside a flow is
    logged by the engine as it happens ("Encountered exception during execution"), with its traceback, and
    is kept.

    Example:
        >>> from prefect.exceptions import FailedRun
        >>> def record(exc: BaseException) -> logging.LogRecord:
        ...     return logging.LogRecord("prefect.flow_runs", 40, "", 0, "x", None, (type(exc), exc, None))
        >>> FailedRunTraceback().filter(record(FailedRun("no input")))
        False
        >>> FailedRunTraceback().filter(record(ValueError("a bug")))
        True
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from prefect.exceptions import FailedRun

        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, FailedRun)


class ExpectedFailureTraceback(logging.Filter):
    """Keep the line, leave out the traceback, that Prefect's task engine logs for a stage that failed on an
    error of nlsim's or an ``OSError`` (a file that cannot be written, a full disk) once its retries are
    spent ("Task run failed with exception: OSError(28, ...) - Retries are exhausted" and some 20 lines of
    frames): the run ends on that failure in its one line naming the file (:func:`config_flow`), as
    ``nlsim`` does, never in a traceback. Any other exception (a bug) keeps its traceback.

    Example:
        >>> def record(exc: BaseException) -> logging.LogRecord:
        ...     return logging.LogRecord("prefect.task_runs", 40, "", 0, "x", None, (type(exc), exc, None))
        >>> full = record(OSError(28, "No space left on device"))
        >>> ExpectedFailureTraceback().filter(full), full.exc_info
        (True, None)
        >>> bug = record(ValueError("a bug"))
        >>> ExpectedFailureTraceback().filter(bug), bug.exc_info is not None
        (True, True)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, OSError | NlsimError):
            record.exc_info, record.exc_text = None, None
        return True


def quiet_failed_runs() -> None:
    """Install :class:`FailedRunTraceback` on Prefect's flow-run logger and :class:`ExpectedFailureTraceback`
    on its task-run logger (once; done by :func:`config_flow`, so in every process that loads one of the
    flows, the served runs' included)."""
    for name, kind in (
        ("prefect.flow_runs", FailedRunTraceback),
        ("prefect.task_runs", ExpectedFailureTraceback),
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())


def report_failure(flow_: Any, flow_run: Any, state: Any) -> None:
    """``on_failure`` hook: the failure as a readable Markdown artifact (what failed, and why; the reason as
    text, never Markdown: it may quote a row's value, :func:`nlsim.report.summary.md_cell`)."""
    message = state.message or "failed"
    try:
        exc = state.result(raise_on_failure=False)
        if isinstance(exc, BaseException):
            message = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - the state's own message is enough
        pass
    create_markdown_artifact(
        f"# {flow_.name} failed\n\nRun `{flow_run.name}`:\n\n> {md_cell(message)}\n",
        key=artifact_key(f"{flow_.name}-failure"),
        description=f"why {flow_run.name} failed",
    )


def config_flow(
    body: Callable[..., Any],
    classes: tuple[type, ...],
    *,
    name: str,
    description: str,
    exclude: tuple[str, ...] = (),
    **flow_options: Any,
) -> Any:
    """A flow whose keyword parameters are the settings of ``classes``, by their flat names (the fields of
    their records: :func:`nlsim.options.options_of`); ``body(**params)`` runs it.

    The flow's signature, annotations and ``Args:`` docstring are made from the settings' types, defaults and
    help texts, so Prefect's parameter schema shows each with its description and, for ``Literal`` fields,
    its allowed values.
    """
    params: list[inspect.Parameter] = []
    docs: list[str] = []
    annotations: dict[str, Any] = {}
    seen: set[str] = set()
    for cls in classes:
        for opt in options_of(cls):
            if opt.name in seen or opt.name in exclude:
                continue
            seen.add(opt.name)
            default = inspect.Parameter.empty if opt.required else opt.default
            kind = opt.type
            if isinstance(default, tuple) or get_origin(opt.base_type) is tuple:
                default = list(default) if isinstance(default, tuple) else default
                item = (get_args(opt.base_type) or (str,))[0]
                kind = list[item] | str  # a list, or "a,b,c" as on the command line
            params.append(
                inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
            )
            annotations[opt.name] = kind
            docs.append(f"    {opt.name}: {' '.join(opt.help.split())}")
    params.sort(key=lambda p: p.default is not inspect.Parameter.empty)

    def fn(**kwargs: Any) -> Any:
        try:
            # a run served or started by a worker reads that process's NLSIM_* variables, which no command
            # line checked: a bad value ends the run now, in one line, not in a task after minutes of work
            check_environment()
            task_timeout()
            return body(**kwargs)
        except NlsimError as exc:  # a parameter that cannot work, bad input: one line, the state's message
            return fail(f"{type(exc).__name__}: {exc}")
        except OSError as exc:  # a file that cannot be written, a full disk, its stage's retries spent:
            return fail(os_error_line(exc, named(kwargs.values())))  # the file and why, as `nlsim` says it

    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__annotations__ = annotations
    fn.__name__ = fn.__qualname__ = name.replace("-", "_")
    fn.__module__ = body.__module__
    fn.__doc__ = f"{description}\n\nArgs:\n" + "\n".join(docs) + "\n"
    fn.configurations = classes  # type: ignore[attr-defined]  # what a deployment's parameters are checked by
    flow_options.setdefault("on_failure", [report_failure])
    quiet_failed_runs()
    return flow(name=name, description=description, log_prints=True, **flow_options)(fn)


@contextlib.contextmanager
def sigterm_stops_the_flow_run() -> Iterator[list[int]]:
    """:func:`nlsim.cli.sigterm_stops_the_run` for a flow run from the command line. During the run
    Prefect's engine takes SIGTERM (its ``TerminationSignal`` ends the run Crashed, then the engine hands the
    signal on to nlsim's handler); its handler is put off in the import machinery as nlsim's is
    (:func:`nlsim.cli.raised_safely`), and its exception, when Python dropped it, comes again. Yields the
    SIGTERMs Prefect's handler took (:func:`stopped_by_sigterm` reads them)."""
    from prefect.exceptions import TerminationSignal
    from prefect.utilities import engine

    bridge = engine._prefect_sigterm_handler  # looked up by name as the engine installs and checks it
    took: list[int] = []

    def noted(signum: int, frame: Any) -> Any:
        took.append(signum)
        return bridge(signum, frame)

    engine._prefect_sigterm_handler = raised_safely(noted)  # type: ignore[assignment]
    try:
        with sigterm_stops_the_run(relayed=(TerminationSignal,)):
            yield took
    finally:
        engine._prefect_sigterm_handler = bridge


def stopped_by_sigterm(state: Any, took: list[int]) -> Any:
    """A flow run's final ``state``; raises :class:`nlsim.cli.Terminated` when SIGTERM came during the run
    and the run did not complete: Prefect's handler, landing as a task run was being created, made its crash
    handling fail ("ValueError: Task run is not set"), and the stopped command ended as a failed run, exit 1,
    with that error as its reason."""
    if took and not state.is_completed():
        raise Terminated
    return state


def run_from_command_line(
    flow_: Any,
    prog: str,
    add_options: Callable[[argparse.ArgumentParser], None],
    classes: tuple[type, ...],
    argv: list[str] | None = None,
) -> int:
    """``python -m flows.X``: parse the options ``add_options`` defines, build the configurations, run the
    flow (Prefect starts a temporary server when none is set), exit 0 when it completed, else 1; stopped, as
    ``nlsim`` is, 143 (SIGTERM: ``kill``, a scheduler's timeout) or 130 (Ctrl-C), in one line, once the
    temporary server is stopped (Prefect ended the process on SIGTERM by the signal itself, which left the
    server running, and a Ctrl-C in its traceback). Stopped with the process's own command line (``argv``
    ``None``), the process ends :data:`nlsim.cli.EXIT_GRACE_S` seconds after its stop line at the latest
    (:func:`nlsim.cli.exit_within`); a caller that passes ``argv`` keeps its process."""
    parser = argparse.ArgumentParser(prog=prog, description=flow_.description)
    add_options(parser)
    args = parser.parse_args(argv)
    params: dict[str, Any] = {}
    try:
        check_environment()  # a bad NLSIM_* value: refused now, not in a task after minutes of work
        task_timeout()
        for cls in classes:
            params.update(parameters(config_from_args(cls, args)))
    except ConfigError as exc:  # a value that cannot work: one line and exit 2, as `nlsim` says it
        parser.error(str(exc))
    before = servers_now()
    try:
        with sigterm_stops_the_flow_run() as took:  # Prefect's own handler hands the signal on to nlsim's
            run = lambda: flow_(**params, return_state=True)  # noqa: E731
            ended = lambda: stopped_by_sigterm(stopping_a_temporary_server(run), took)  # noqa: E731
            return exit_on_api_failure(prog, lambda: exit_status(prog, ended()))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        status = stopped(prog, exc)
        if argv is None:  # the program's own command line: its exit is bounded, its servers stopped
            exit_within(status, last=lambda: kill_started(before))  # else by Prefect's exit handlers
        return status


USAGE = f"{ConfigError.__name__}: "
"""How the message of a run that nlsim refused for an option that cannot work begins (:func:`fail`)."""


def exit_status(prog: str, state: Any) -> int:
    """The exit status of ``python -m flows.X`` for the flow run's final ``state``, as ``nlsim`` has it: 0
    completed; 2 a value that cannot work (:class:`~nlsim.errors.ConfigError`), refused before any work; 1
    any other failure. A failed run's reason ends the output, once, as ``PROG: error: ...``, worded as
    ``nlsim`` words it: without the name of nlsim's error that the run's state begins with
    (:func:`fail`'s ``InputError: ``, kept in the state and its artifact).

    Example:
        >>> from prefect.states import Completed, Failed
        >>> exit_status("python -m flows.dedup", Completed())
        0
        >>> exit_status("python -m flows.dedup", Failed(message="ConfigError: --out x is a file"))
        2
        >>> import contextlib, io
        >>> with contextlib.redirect_stderr(io.StringIO()) as err:
        ...     exit_status("python -m flows.dedup", Failed(message="InputError: c.csv: row 2, field 'id'"))
        1
        >>> print(err.getvalue().strip())
        python -m flows.dedup: error: c.csv: row 2, field 'id'
    """
    if state.is_completed():
        return 0
    message = " ".join(str(state.message or state.name).split())
    name, colon, reason = message.partition(": ")
    print(f"{prog}: error: {reason if colon and name in error_names() else message}", file=sys.stderr)
    return 2 if message.startswith(USAGE) else 1


def error_names(kind: type[BaseException] = NlsimError) -> set[str]:
    """The names of ``kind`` and of every error class below it (``InputError``, ``InputErrors``, ...): how
    :func:`fail`'s messages of nlsim's errors begin.

    Example:
        >>> {"NlsimError", "InputError", "InputErrors", "ConfigError"} <= error_names()
        True
    """
    return {kind.__name__}.union(*(error_names(sub) for sub in kind.__subclasses__()))


def fail(message: str) -> Any:
    """Log ``message`` as the run's one error line and end the flow run Failed with it (no traceback); its
    artifact holds the message as text, never Markdown (:func:`nlsim.report.summary.md_cell`)."""
    from prefect.states import Failed  # deferred: only a failing run needs it

    get_run_logger().error(message)
    create_markdown_artifact(
        f"# Run failed\n\n> {md_cell(message)}\n", key="nlsim-run-failure", description=message[:120]
    )
    return Failed(message=message)
