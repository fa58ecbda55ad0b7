"""A pytest plugin that writes when each test began and ended, one file per pytest-xdist worker: the input of
``benchmarks/bench_suite.py``. Benchmarks only, never loaded by the suite itself.

Loaded with ``-p suite_timeline`` (this folder on ``PYTHONPATH``) and ``NLSIM_SUITE_TIMELINE=DIR``: each
process that runs tests (a worker, or the one process without workers) appends ``start<TAB>end<TAB>node id``
lines to ``DIR/<run>-<worker>.tsv`` (``<run>-main.tsv`` without workers; ``<run>``: the process id of the
pytest command, so that the two pytest runs of ``test.sh`` stay apart), the times in seconds since the
epoch. A test's span runs from its set-up's start (its fixtures' set-ups included) to its teardown's end,
so the spans of one worker add up to the time that worker spent on tests.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO

import pytest

_started: dict[str, float] = {}
_out: list[IO[str]] = []
_controller: list[bool] = []


def pytest_configure(config: pytest.Config) -> None:
    # the controlling process of an xdist run is told of every worker's tests too: it writes nothing
    workers = config.getoption("numprocesses", default=None)
    _controller.append(not hasattr(config, "workerinput") and bool(workers))


def _file() -> IO[str] | None:
    folder = os.environ.get("NLSIM_SUITE_TIMELINE")
    if not folder:
        return None
    if not _out:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        run = os.getppid() if worker else os.getpid()  # an xdist worker is a child of the pytest command
        path = Path(folder) / f"{run}-{worker or 'main'}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        _out.append(path.open("a", encoding="utf-8", buffering=1))
    return _out[0]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _started[nodeid] = time.time()


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if _controller and _controller[0]:
        return
    out = _file()
    if out is not None and nodeid in _started:
        out.write(f"{_started.pop(nodeid):.3f}\t{time.time():.3f}\t{nodeid}\n")
