"""Prefect's temporary API server, which a flow run from the command line starts when no server is set
(``PREFECT_API_URL`` unset): time to start on a loaded machine, and one line when it still does not.

Prefect waits 20 s for it by default (``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``); on a loaded
machine ``python -m flows.dedup_distributed`` died with ``Timed out while attempting to connect to
ephemeral Prefect API server``. :func:`give_time` (called when the ``flows`` package is imported, before
anything imports prefect, which reads its settings once) sets the margin the test suite runs with,
:data:`STARTUP_TIMEOUT_S`, unless the user set the setting (in the environment or in the active Prefect
profile). :func:`startup_failure` is the line a command says when the server still did not answer.

This module does not import prefect.

Example:
    >>> env = {}
    >>> give_time(env, profile_sets=lambda: False), env[SETTING]
    ('120', '120')
    >>> give_time({SETTING: "45"}, profile_sets=lambda: False) is None
    True
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

SETTING = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
STARTUP_TIMEOUT_S = 120
"""Seconds a command waits for Prefect's temporary server (the test suite's margin)."""
TIMED_OUT = "Timed out while attempting to connect to ephemeral Prefect API server"
"""How Prefect says its temporary server did not answer in time."""


def active_profile_sets(setting: str = SETTING, environ: MutableMapping[str, str] = os.environ) -> bool:
    """Whether the active Prefect profile (``$PREFECT_HOME/profiles.toml``, the profile
    ``PREFECT_PROFILE`` or the file's ``active`` names) sets ``setting``; an unreadable file sets nothing."""
    home = Path(environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        data = tomllib.loads((home / "profiles.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    name = environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
    profile = (data.get("profiles") or {}).get(name) or {}
    return isinstance(profile, dict) and setting in profile


def give_time(
    environ: MutableMapping[str, str] = os.environ,
    profile_sets: Callable[[], bool] = active_profile_sets,
) -> str | None:
    """Set :data:`SETTING` to :data:`STARTUP_TIMEOUT_S` in ``environ`` unless the user set it (there, or in
    the active profile); returns the value set, or ``None``."""
    if SETTING in environ or profile_sets():
        return None
    environ[SETTING] = str(STARTUP_TIMEOUT_S)
    return environ[SETTING]


def startup_failure(exc: BaseException, environ: MutableMapping[str, str] = os.environ) -> str | None:
    """The one line to say when ``exc`` is Prefect's temporary server not answering in time, else ``None``.

    Example:
        >>> startup_failure(RuntimeError(TIMED_OUT + ". stdout: ..."), {SETTING: "120"})[:58]
        "Prefect's temporary API server did not answer within 120 s"
        >>> startup_failure(RuntimeError("another")) is None
        True
    """
    if not isinstance(exc, RuntimeError) or not str(exc).startswith(TIMED_OUT):
        return None
    waited = environ.get(SETTING, "the profile's")
    return (
        f"Prefect's temporary API server did not answer within {waited} s ({SETTING}; a loaded machine?): "
        "start one (prefect server start --host 127.0.0.1 --port 4200) and set "
        f"PREFECT_API_URL=http://127.0.0.1:4200/api, or give {SETTING} more seconds"
    )


UNREACHABLE = "Failed to reach API at"
"""How Prefect's client begins the error it raises when the server ``PREFECT_API_URL`` names does not
answer."""
CONNECT_ERRORS = frozenset({"ConnectError", "ConnectTimeout"})
"""httpx's errors for a server that does not answer (named: this module imports httpx only to probe an
address, in :func:`probe_api`)."""


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc``, its causes and contexts, and the members of exception groups among them."""
    out: list[BaseException] = []
    todo = [exc]
    while todo:
        e = todo.pop()
        if any(e is seen for seen in out):
            continue
        out.append(e)
        todo += [c for c in (e.__cause__, e.__context__) if c is not None]
        todo += list(getattr(e, "exceptions", ()))
    return out


def unreachable_api(
    exc: BaseException, environ: MutableMapping[str, str] = os.environ, temporary: bool = True
) -> str | None:
    """The one line to say when ``exc`` is a Prefect API server that does not answer (``PREFECT_API_URL``
    set before the server is up, or to a wrong port), else ``None``. ``temporary``: the command can also
    run on Prefect's temporary server (a flow run), and the line says so; serving deployments or setting
    up an alert there would go with the command, so their line leaves it out.

    Example:
        >>> unreachable_api(RuntimeError("Failed to reach API at http://127.0.0.1:9/api/"),
        ...                 {"PREFECT_API_URL": "http://127.0.0.1:9/api"})[:60]
        'the Prefect API at http://127.0.0.1:9/api does not answer: s'
        >>> unreachable_api(ValueError("another")) is None
        True
        >>> "temporary" in unreachable_api(RuntimeError("Failed to reach API at http://127.0.0.1:9/api/"),
        ...                                {"PREFECT_API_URL": "http://127.0.0.1:9/api"}, temporary=False)
        False
    """
    for e in _causes(exc):
        from_prefect = isinstance(e, RuntimeError) and str(e).startswith(UNREACHABLE)
        if from_prefect or type(e).__name__ in CONNECT_ERRORS:
            url = environ.get("PREFECT_API_URL") or "the profile's PREFECT_API_URL"
            line = (
                f"the Prefect API at {url} does not answer: start the server (prefect server start "
                f"{server_address(environ.get('PREFECT_API_URL', ''))}) and run again"
            )
            return line + ", or unset PREFECT_API_URL for a run on a temporary server" if temporary else line
    return None


def server_address(url: str) -> str:
    """The ``--host`` and ``--port`` of ``prefect server start`` that make the API at ``url`` answer: the
    URL's own host and port (a server on the README's port 4200 would leave another port unanswered), else
    the README's 127.0.0.1 and 4200.

    Example:
        >>> server_address("http://127.0.0.1:4201/api")
        '--host 127.0.0.1 --port 4201'
        >>> server_address("http://newsdesk:4200/api")
        '--host newsdesk --port 4200'
        >>> server_address("")
        '--host 127.0.0.1 --port 4200'
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        host, port = None, None
    return f"--host {host or '127.0.0.1'} --port {port or 4200}"


T = TypeVar("T")


def stopping_a_temporary_server(call: Callable[[], T]) -> T:
    """``call()`` (a flow run from the command line), and when it started Prefect's temporary server, that
    server stopped as it ends, its queued log lines and events sent first: Prefect stops it at the
    interpreter's exit, whose ``Stopping temporary server on ...`` then came after the command's own last
    line, a failed run's reason. A server that was up before (a test harness's) is left alone; a run stopped
    by Ctrl-C or SIGTERM leaves it to Prefect, as before."""
    before = {id(server) for server in _temporary_servers()}
    try:
        result = call()
    except Exception:
        _stop_started(before)
        raise
    _stop_started(before)
    return result


def _temporary_servers() -> list[Any]:
    """Prefect's temporary servers of this process (none when its server module was never imported)."""
    module = sys.modules.get("prefect.server.api.server")
    return list(module.SubprocessASGIServer._instances.values()) if module is not None else []


def servers_now() -> set[int]:
    """Prefect's temporary servers of this process, as :func:`kill_started` compares them."""
    return {id(server) for server in _temporary_servers()}


def kill_started(before: set[int]) -> None:
    """End the temporary servers started since ``before`` (:func:`servers_now`) without a word to them:
    the last step of a stopped command whose exit did not end (:func:`nlsim.cli.exit_within`)."""
    for server in _temporary_servers():
        process = getattr(server, "server_process", None)
        if id(server) not in before and process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def _stop_started(before: set[int]) -> None:
    started = [server for server in _temporary_servers() if id(server) not in before]
    if not started:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all()  # sent while the server is up (else: "Error logging to API" at the exit)
    EventsWorker.drain_all()
    for server in started:
        server.stop()


def exit_on_api_failure(prog: str, call: Callable[[], int], temporary: bool = True) -> int:
    """``call()``'s exit status; a Prefect server that cannot be reached or started, or an address that is
    not one (:func:`api_failure`), ends it in one line on stderr (``PROG: error: ...``) and exit status 1
    instead of a traceback. ``temporary``: whether the command can run on Prefect's temporary server
    instead (:func:`unreachable_api`)."""
    try:
        return call()
    except Exception as exc:
        line = api_failure(exc, temporary=temporary)
        if line is None:
            raise
        print(f"{prog}: error: {line}", file=sys.stderr)
        return 1


def api_failure(
    exc: BaseException,
    environ: MutableMapping[str, str] = os.environ,
    probe: Callable[[str], str | None] | None = None,
    temporary: bool = True,
) -> str | None:
    """The one line for a Prefect server that cannot be reached or started (:func:`unreachable_api`,
    :func:`startup_failure`), or for a ``PREFECT_API_URL`` that is not a Prefect API (:func:`wrong_api`),
    else ``None``: the error is another's and goes on."""
    return (
        startup_failure(exc, environ)
        or wrong_api(exc, environ, probe or probe_api)
        or unreachable_api(exc, environ, temporary)
    )


API_ERRORS = frozenset({"UnsupportedProtocol", "InvalidURL", "HTTPStatusError", "PrefectHTTPStatusError"})
"""Errors of httpx and Prefect's client that an address which is not a Prefect API gives: no http(s)
scheme, or an HTTP error status for every request (named, as :data:`CONNECT_ERRORS`)."""


def wrong_api(
    exc: BaseException, environ: MutableMapping[str, str], probe: Callable[[str], str | None]
) -> str | None:
    """The one line to say when ``exc`` came from a ``PREFECT_API_URL`` that is not a Prefect API (the
    server's address without ``/api``, or without ``http://``), else ``None``; ``probe(url)`` says what the
    address is when it is not one (:func:`probe_api`).

    Example:
        >>> wrong_api(RuntimeError("Failed to reach API at 127.0.0.1:4200/api/"),
        ...           {"PREFECT_API_URL": "127.0.0.1:4200/api"}, probe_api)[:64]
        'PREFECT_API_URL=127.0.0.1:4200/api is not an http(s) URL: give t'
        >>> wrong_api(ValueError("another"), {"PREFECT_API_URL": "x"}, probe_api) is None
        True
    """
    url = environ.get("PREFECT_API_URL")
    if not url:
        return None
    causes = _causes(exc)
    reached = any(isinstance(e, RuntimeError) and str(e).startswith(UNREACHABLE) for e in causes)
    if not reached and not any(type(e).__name__ in API_ERRORS for e in causes):
        return None
    what = probe(url)
    if what is None:  # a Prefect API after all (the error is another's), or no answer at all
        return None
    return (
        f"PREFECT_API_URL={url} is {what}: give the server's API address, http(s)://HOST:PORT/api "
        "(e.g. http://127.0.0.1:4200/api)"
    )


def probe_api(url: str) -> str | None:
    """What ``url`` is when it is not a Prefect API (``not an http(s) URL``, ``not a Prefect API (GET
    URL/health answered 404 Not Found)``); ``None`` when it is one (its ``/health`` answers ``true``) or
    when nothing answers there (:func:`unreachable_api` says that)."""
    from urllib.parse import urlsplit

    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.hostname:
        return "not an http(s) URL"
    import httpx

    health = f"{url.rstrip('/')}/health"
    try:
        answer = httpx.get(health, timeout=10)
    except httpx.HTTPError:
        return None
    try:
        if answer.json() is True:
            return None
    except ValueError:
        pass
    return f"not a Prefect API (GET {health} answered {answer.status_code} {answer.reason_phrase})"
