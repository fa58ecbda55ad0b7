"""A real Dask cluster for tests: ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, each a
separate process (its own session) started from this environment's ``dask`` command, stopped by its
process id. The workers import nlsim from this checkout (``PYTHONPATH``) and find models under the
session's ``NLSIM_HOME``, as an operator's workers would (docs/operations.md).

Example (slow: each process imports distributed; the first task on a worker loads torch)::

    with DaskCluster(tmp_path / "dask", workers=2) as cluster:
        news_dedup_distributed(..., dask_address=cluster.address)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.flows.prefect_server import ROOT, _clean_env, free_port, stop_process

DASK = str(Path(sys.executable).parent / "dask")


class DaskCluster:
    """A scheduler and ``workers`` single-threaded workers, each a ``dask`` subprocess; logs in ``home``."""

    def __init__(self, home: Path, *, workers: int = 2, startup_timeout: float = 180) -> None:
        self.home = Path(home)
        self.workers = int(workers)
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.startup_timeout = startup_timeout
        self.procs: list[subprocess.Popen] = []

    def env(self) -> dict[str, str]:
        return {
            **_clean_env(),
            "PYTHONPATH": str(ROOT),
            "TOKENIZERS_PARALLELISM": "false",
            "OMP_NUM_THREADS": "1",
        }

    def _start(self, name: str, args: list[str]) -> None:
        log = open(self.home / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        self.procs.append(
            subprocess.Popen(
                [DASK, *args],
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                start_new_session=True,
            )
        )
        log.close()

    def start(self) -> DaskCluster:
        self.home.mkdir(parents=True, exist_ok=True)
        self._start(
            "scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"]
        )
        for i in range(self.workers):
            worker = ["worker", self.address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard"]
            worker += [
                "--host",
                "127.0.0.1",
                "--name",
                f"w{i + 1}",
                "--local-directory",
                str(self.home / f"w{i + 1}"),
            ]
            self._start(f"worker-{i + 1}", worker)
        try:
            self.wait_for_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_for_workers(self) -> None:
        from distributed import Client

        deadline = time.monotonic() + self.startup_timeout
        while True:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a dask process exited ({dead[0].args}): {self.log_tail()}")
            try:
                with Client(self.address, timeout=5) as client:
                    client.wait_for_workers(self.workers, timeout=max(1.0, deadline - time.monotonic()))
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no dask cluster at {self.address}: {self.log_tail()}") from None
                time.sleep(1)

    def log_tail(self, n: int = 2000) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-n:]}" for p in sorted(self.home.glob("*.log"))
        )

    def stop(self) -> None:
        """Workers first, then the scheduler, each by its process group."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                stop_process(proc, grace=15)

    def __enter__(self) -> DaskCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
