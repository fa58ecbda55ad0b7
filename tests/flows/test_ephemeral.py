"""Prefect's temporary API server, started by a flow run from the command line: the users' runs get the
test suite's margin to start it (unless they set their own), and a server that still does not answer
ends the command in one line. Each case runs in a new interpreter, with no Prefect setting inherited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.ephemeral import SETTING, STARTUP_TIMEOUT_S
from tests.flows.prefect_server import ROOT

READ = f"import flows; from prefect.settings import {SETTING} as s; print(s.value())"


def clean_env(home: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    return {
        **env,
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PYTHONPATH": str(ROOT),
        "NLSIM_PROGRESS": "off",
        **more,
    }


def read_timeout(home: Path, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", READ], env=clean_env(home, **env), capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


@pytest.mark.slow
def test_a_flow_command_waits_the_suites_margin_unless_the_user_set_one(tmp_path: Path) -> None:
    assert read_timeout(tmp_path / "home") == str(STARTUP_TIMEOUT_S)  # Prefect's own: 20
    assert read_timeout(tmp_path / "home", **{SETTING: "45"}) == "45"
    profiled = tmp_path / "profiled"
    profiled.mkdir()
    (profiled / "profiles.toml").write_text(f'active = "work"\n\n[profiles.work]\n{SETTING} = "75"\n')
    assert read_timeout(profiled) == "75"


@pytest.mark.slow
def test_a_temporary_server_that_does_not_answer_ends_the_command_in_one_line(tmp_path: Path) -> None:
    """The Dask flow as the failing user ran it, without a server; a 1 s margin stands for a loaded machine
    (the server takes 6-20 s to start here)."""
    args = ["--corpus", str(ROOT / "data" / "bbc.parquet"), "--out", str(tmp_path / "out")]
    args += ["--model", "paraphrase-MiniLM-L3-v2", "--convert", "none", "--threshold", "0.9"]
    proc = subprocess.run(
        [sys.executable, "-m", "flows.dedup_distributed", *args],
        env=clean_env(tmp_path / "home", **{SETTING: "1"}),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in lines if ": error: " in line]
    assert errors == [
        "python -m flows.dedup_distributed: error: Prefect's temporary API server did not answer within 1 s "
        f"({SETTING}; a loaded machine?): start one (prefect server start --host 127.0.0.1 --port 4200) and "
        f"set PREFECT_API_URL=http://127.0.0.1:4200/api, or give {SETTING} more seconds"
    ], proc.stderr[-3000:]
    assert not (tmp_path / "out").exists()


def _free_port() -> int:
    import socket

    with socket.socket() as s:  # bound, then closed: nothing listens on it
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _error_lines(tmp_path: Path, command: list[str], url: str) -> list[str]:
    """The ``: error: `` lines of ``python -m COMMAND`` run with ``PREFECT_API_URL=url``, which must end in
    status 1 without a traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", *command],
        env=clean_env(tmp_path / "home", PREFECT_API_URL=url),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return [line for line in proc.stderr.splitlines() if ": error: " in line]


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["flows.dedup", "--corpus", "news.csv", "--out", "out", "--model", "paraphrase-MiniLM-L3-v2"]
        + ["--convert", "none", "--threshold", "0.9"],
        ["flows.serve", "--only", "news-dedup/daily"],
        ["flows.alerts", "--list"],
    ],
    ids=["dedup", "serve", "alerts"],
)
def test_a_server_that_is_not_up_ends_the_command_in_one_line(tmp_path: Path, command: list[str]) -> None:
    """PREFECT_API_URL exported before the server is started (the README's terminals 2 and 3 before
    terminal 1): one line naming the URL and what to do, exit 1, no traceback and no report. The server it
    says to start is the one the URL names (it said --port 4200 whatever the URL's port, a server that would
    leave the URL unanswered). A flow run may also go on Prefect's temporary server; deployments served or
    an alert set up there would go with the command (`flows.alerts` refuses to run without
    PREFECT_API_URL), so their line does not offer it."""
    (tmp_path / "news.csv").write_text("id,title\na,Storm hits the coast\nb,Storm hits the coast today\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    errors = _error_lines(tmp_path, command, url)
    on_its_own = command[0] == "flows.dedup"
    temporary = ", or unset PREFECT_API_URL for a run on a temporary server" if on_its_own else ""
    assert errors == [
        f"python -m {command[0]}: error: the Prefect API at {url} does not answer: start the server (prefect "
        f"server start --host 127.0.0.1 --port {port}) and run again{temporary}"
    ], errors
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "code", "words"),
    [
        (None, 2, "file not found"),
        ("deployments: [\n", 2, "not valid YAML (line 2)"),
        ("deployments: 3\n", 2, "no list of deployment entries under 'deployments'"),
        (
            "deployments:\n- name: daily\n  entrypoint: flows/dedup.py:news_dedup\n",
            2,
            "no deployment named x/y",
        ),
    ],
    ids=["missing", "broken", "not-a-list", "unknown-name"],
)
def test_serve_list_refuses_a_file_it_cannot_read_in_one_line(
    tmp_path: Path, text: str | None, code: int, words: str
) -> None:
    path = tmp_path / "prefect.yaml"
    if text is not None:
        path.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "flows.serve", "--list", "--file", str(path), "--only", "x/y"],
        env=clean_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == code, proc.stderr[-3000:]
    assert proc.stdout == "" and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


class NotAnApi:
    """An HTTP server on 127.0.0.1 that answers 404 to everything: a Prefect server's address without its
    ``/api`` (``http://127.0.0.1:4200``, the UI's address)."""

    def __enter__(self) -> str:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"detail": "Not Found"}')

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815 - http.server's names

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "address"),
    [
        (["flows.alerts", "--list"], "path"),
        (["flows.serve", "--only", "learning-curve/manual"], "path"),
        (["flows.dedup", "--corpus", "news.csv", "--out", "out", "--threshold", "0.9"], "path"),
        (["flows.alerts", "--list"], "scheme"),
    ],
    ids=["alerts-without-api", "serve-without-api", "dedup-without-api", "alerts-without-http"],
)
def test_an_api_url_that_is_not_the_api_ends_the_command_in_one_line(
    tmp_path: Path, command: list[str], address: str
) -> None:
    """PREFECT_API_URL set to the server's address without /api (the UI's), or without http://: the
    commands stopped with a traceback (a 404 from /automations/filter, httpx's UnsupportedProtocol), or
    said that a server which answers does not answer."""
    with NotAnApi() as root:
        url = root if address == "path" else root.removeprefix("http://") + "/api"
        errors = _error_lines(tmp_path, command, url)
    what = f"not a Prefect API (GET {url}/health answered 404 Not Found)"
    what = what if address == "path" else "not an http(s) URL"
    assert errors == [
        f"python -m {command[0]}: error: PREFECT_API_URL={url} is {what}: give the server's API address, "
        "http(s)://HOST:PORT/api (e.g. http://127.0.0.1:4200/api)"
    ], errors
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_serve_says_it_serves_only_once_the_server_answers(tmp_path: Path) -> None:
    """`python -m flows.serve` with PREFECT_API_URL exported before the server answers printed "serving
    news-dedup/daily" on stdout and then ended in the error line: a log or a supervisor reading stdout was
    told the deployments were served."""
    url = f"http://127.0.0.1:{_free_port()}/api"
    proc = subprocess.run(
        [sys.executable, "-m", "flows.serve", "--only", "news-dedup/daily"],
        env=clean_env(tmp_path / "home", PREFECT_API_URL=url),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "does not answer" in proc.stderr, proc.stderr[-3000:]
    assert "serving" not in proc.stdout, proc.stdout


@pytest.mark.slow
def test_a_failed_run_on_a_temporary_server_ends_with_its_reason(tmp_path: Path) -> None:
    """Without a server (Prefect's temporary one), a run nlsim refuses ends as operations.md says: the
    run's reason last on stderr, exit 2. Prefect stopped its temporary server at the interpreter's exit,
    and its ``Stopping temporary server on ...`` line came after the reason."""
    (tmp_path / "news.csv").write_text("id,title\na,Storm hits the coast\nb,Storm hits the coast today\n")
    args = ["--corpus", "news.csv", "--out", "out", "--model", "paraphrase-MiniLM-L3-v2", "--convert", "none"]
    proc = subprocess.run(
        [sys.executable, "-m", "flows.dedup", *args],
        env=clean_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Stopping temporary server" in proc.stderr, proc.stderr[-3000:]  # it ran on one
    last = proc.stderr.strip().splitlines()[-1]
    reason = "python -m flows.dedup: error: no threshold for model 'paraphrase-MiniLM-L3-v2'"
    assert last.startswith(reason), last
    assert "Error logging to API" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
