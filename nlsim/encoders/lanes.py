"""Inference batches in lanes: on a CPU with two threads or more, each batch runs whole on one thread,
and as many batches run side by side as torch has threads.

On a 2-core CPU a forward pass over one batch runs only about 1.6 times faster on two threads than on
one, while two batches of one thread each, side by side in one process, keep most of their speed (torch
releases the GIL inside its kernels). :func:`run_batches` therefore hands the batches of an inference job
(:meth:`nlsim.encoders.encoder.Encoder.encode`, :meth:`nlsim.rerank.cross_encoder.CrossEncoder.read`) to
``lanes`` worker threads of one torch thread each, each batch to the first lane free
(``benchmarks/bench_lanes.py`` measures both layouts). A batch's numbers do not depend on the lane that
runs it (one thread each, always), so a job repeats to the bit whatever the timing; they differ from one
pass on every thread by float rounding, as a machine with another thread count does.

:func:`lanes_for` decides: one lane (the plain loop, on every thread) on a GPU, on one thread, for a job of
one batch, and for a runner that is not a torch model on the CPU (ONNX Runtime sizes its own threads);
otherwise as many lanes as torch's threads. :func:`forced` sets the count for a block (the benchmark's
comparison, the tests).

Example:
    >>> import numpy as np
    >>> out = np.zeros(4)
    >>> def work(rows):
    ...     out[rows] = rows * 2
    >>> run_batches([np.array([0, 1]), np.array([2, 3])], work, lanes=2)
    >>> out.tolist()
    [0.0, 2.0, 4.0, 6.0]
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

_forced: int | None = None
_lock = threading.Lock()
_inside = threading.local()
"""``_inside.lane`` is true in a lane's thread: a job started there runs in its one lane."""


@contextmanager
def forced(lanes: int | None) -> Iterator[None]:
    """Inside the block, every inference job on the CPU runs in ``lanes`` lanes (``1``: the plain loop on
    every thread; ``None``: decided as usual)."""
    global _forced
    if lanes is not None and int(lanes) < 1:
        raise ValueError(f"lanes must be >= 1, got {lanes}")
    with _lock:
        previous, _forced = _forced, (None if lanes is None else int(lanes))
    try:
        yield
    finally:
        with _lock:
            _forced = previous


def lanes_for(device: Any, runner: Any = None, batches: int = 2) -> int:
    """How many lanes a job of ``batches`` batches on ``device`` runs in, through ``runner`` (``None``:
    torch's own forward pass; a runner says it runs a torch model with ``torch_cpu = True``)."""
    if batches < 2 or torch.device(device).type != "cpu" or getattr(_inside, "lane", False):
        return 1
    if runner is not None and not getattr(runner, "torch_cpu", False):
        return 1
    lanes = _forced if _forced is not None else torch.get_num_threads()
    return max(1, min(int(lanes), int(batches)))


def _one_thread() -> None:
    torch.get_num_threads()  # a thread's first parallel call takes the count last set by any thread: make it
    torch.set_num_threads(1)
    _inside.lane = True


def run_batches(
    batches: Sequence[np.ndarray],
    work: Callable[[np.ndarray], None],
    lanes: int,
    on_done: Callable[[int], None] | None = None,
) -> None:
    """Call ``work(rows)`` for each batch of row indices (it stores its own results), under torch's
    inference mode: in order on the calling thread with one lane, else in ``lanes`` worker threads of one
    torch thread each. ``on_done(len(rows))`` runs on the calling thread after each batch, in batch order
    (a progress bar). An error is raised here when its batch's turn comes, and the batches not yet begun
    then are cancelled; the calling thread keeps its thread count. A job started inside a lane runs in
    that lane (:func:`lanes_for`)."""

    def one(rows: np.ndarray) -> int:
        with torch.inference_mode():
            work(rows)
        return len(rows)

    if lanes <= 1:
        for rows in batches:
            done = one(rows)
            if on_done is not None:
                on_done(done)
        return
    threads = torch.get_num_threads()
    context = contextvars.copy_context()  # the caller's run context (a Prefect task's logger) goes along
    pool = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="nlsim-lane", initializer=_one_thread)
    try:
        for done in pool.map(lambda rows: context.copy().run(one, rows), batches):
            if on_done is not None:
                on_done(done)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(threads)
