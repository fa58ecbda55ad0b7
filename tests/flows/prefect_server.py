"""A real Prefect server for tests: ``prefect server start`` on 127.0.0.1 and a free port, in its own
``PREFECT_HOME``, stopped by its process id. Clients (``prefect`` CLI, ``python -m flows.serve``) run as
subprocesses with :meth:`PrefectServer.client_env`, so the in-process test harness of other tests is
untouched.

Example (slow: the server takes 6-20 s to start on a small machine)::

    with PrefectServer(tmp_path / "prefect") as server:
        subprocess.run([PREFECT, "deployment", "ls"], env=server.client_env(), check=True)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PREFECT = str(Path(sys.executable).parent / "prefect")
ROOT = Path(__file__).resolve().parents[2]

BASE_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "TOKENIZERS_PARALLELISM": "false",
}

STREAM_LOGS = ("PREFECT_SERVER_LOGS_STREAM_OUT_ENABLED", "PREFECT_SERVER_LOGS_STREAM_PUBLISHING_ENABLED")
"""Server settings (both off by default) without which ``--watch`` prints a run's events but none of its
log lines."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env() -> dict[str, str]:
    """The parent environment without any Prefect setting (they would point at another API or home)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}


class PrefectServer:
    """``prefect server start`` in a subprocess; ``api_url`` once healthy; ``stop()`` kills it by pid."""

    def __init__(
        self,
        home: Path,
        *,
        scheduler_loop_seconds: int = 5,
        startup_timeout: float = 120,
        stream_logs: bool = False,
    ) -> None:
        """``stream_logs``: the server streams runs' log lines to watchers (``prefect deployment run
        --watch`` prints them), as docs/operations.md starts it."""
        self.home = Path(home)
        self.stream_logs = stream_logs
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.scheduler_loop_seconds = scheduler_loop_seconds
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.log_path = self.home / "server.log"

    def server_env(self) -> dict[str, str]:
        return {
            **_clean_env(),
            **BASE_ENV,
            "PREFECT_HOME": str(self.home / "server-home"),
            "PREFECT_UI_ENABLED": "false",
            "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": str(self.scheduler_loop_seconds),
            "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": "false",
            **({k: "true" for k in STREAM_LOGS} if self.stream_logs else {}),
        }

    def client_env(self, **extra: str) -> dict[str, str]:
        """Environment for CLI/serve subprocesses talking to this server."""
        return {
            **_clean_env(),
            **BASE_ENV,
            "PREFECT_HOME": str(self.home / "client-home"),
            "PREFECT_API_URL": self.api_url,
            "PREFECT_RUNNER_POLL_FREQUENCY": "2",
            "PREFECT_LOGGING_LEVEL": "INFO",
            "PYTHONPATH": str(ROOT),
            **extra,
        }

    def start(self) -> PrefectServer:
        self.home.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
            env=self.server_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.home,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prefect server exited ({self.proc.returncode}): {self.log_tail()}")
            if self.healthy():
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"prefect server not healthy after {self.startup_timeout} s: {self.log_tail()}")

    def healthy(self) -> bool:
        import httpx

        try:
            return httpx.get(f"{self.api_url}/health", timeout=2).json() is True
        except Exception:
            return False

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def api(self, method: str, path: str, **kw: Any) -> Any:
        import httpx

        r = httpx.request(method, f"{self.api_url}{path}", timeout=30, **kw)
        r.raise_for_status()
        return r.json() if r.content else None

    def stop(self) -> None:
        """SIGTERM the server by its pid (its process group, which it leads), SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        stop_process(self.proc)

    def __enter__(self) -> PrefectServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_process(proc: subprocess.Popen, grace: float = 20) -> None:
    """Stop a subprocess started with ``start_new_session=True``: its group by its pid, gently then hard."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
