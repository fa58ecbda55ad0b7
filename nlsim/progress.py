"""Progress of long steps that reads well in a terminal and in a log file.

Messages go through the ``nlsim`` logger (:func:`say`, :func:`warn`). In a terminal (stderr is a TTY)
:func:`progress_bar` is a tqdm bar. Elsewhere (a Prefect worker's log, a
cron mail, CI) a carriage-return bar would flood the log with one long line, so it prints a plain line
at most every :data:`LOG_INTERVAL_S` seconds and once at the end (``embed: 4,096/10,000 texts (41%),
12.3 s, 333/s``). ``NLSIM_PROGRESS=bar|lines|off`` forces a style.

Orchestrators can listen (the Prefect flows turn it into progress artifacts) with :func:`add_listener`:
each listener is called as ``listener(desc, done, total)`` at the same moments as the log lines.

Example:
    >>> import os
    >>> os.environ["NLSIM_PROGRESS"] = "lines"
    >>> seen = []
    >>> add_listener(lambda desc, done, total: seen.append((desc, done, total)))
    >>> for _ in progress_bar(range(3), desc="demo", unit="item", stream=None):
    ...     pass
    >>> seen[-1]
    ('demo', 3, 3)
    >>> clear_listeners(); del os.environ["NLSIM_PROGRESS"]
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TextIO

from nlsim.environment import progress_style

logger = logging.getLogger("nlsim")
LOG_INTERVAL_S = 10.0
Listener = Callable[[str, int, int | None], None]
_listeners: list[Listener] = []
_warned: ContextVar[set[str] | None] = ContextVar("nlsim_warned", default=None)


def counted(value: int, one: str, many: str) -> str:
    """A count and its noun, singular for one (``1 item``, not ``1 items``), thousands separated.

    Example:
        >>> counted(1, "item", "items"), counted(0, "story", "stories"), counted(12345, "pair", "pairs")
        ('1 item', '0 stories', '12,345 pairs')
    """
    return f"{value:,} {one if value == 1 else many}"


def say(message: str) -> None:
    """Tell the user what a run is doing (the ``nlsim`` logger at INFO: the command line shows it on
    stderr unless ``--quiet``; the Prefect flows show it in the run's logs)."""
    logger.info(message)


def warn(message: str) -> None:
    """A warning the user should see (the ``nlsim`` logger at WARNING); inside :func:`one_run`, once."""
    warned = _warned.get()
    if warned is not None:
        if message in warned:
            return
        warned.add(message)
    logger.warning(message)


@contextlib.contextmanager
def one_run() -> Iterator[None]:
    """Within it, a warning already given (:func:`warn`) is not given again: a file that several stages of
    one command or chain read (a pair file read by the calibration, the training and the report) warns
    once. A run inside a run shares the outer one's; a later run warns again.

    Example:
        >>> with one_run():
        ...     warn("p.tsv: 2 row(s) hold U+FFFD"); warn("p.tsv: 2 row(s) hold U+FFFD")
        ...     _warned.get()
        {'p.tsv: 2 row(s) hold U+FFFD'}
        >>> _warned.get() is None
        True
    """
    if _warned.get() is not None:
        yield
        return
    token = _warned.set(set())
    try:
        yield
    finally:
        _warned.reset(token)


def add_listener(listener: Listener) -> None:
    """Call ``listener(desc, done, total)`` as long steps progress (see the module docstring)."""
    _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def clear_listeners() -> None:
    _listeners.clear()


def style() -> str:
    """``bar`` (a terminal), ``lines`` (a log) or ``off``, from ``NLSIM_PROGRESS`` or stderr (a value it
    does not take is a :class:`~nlsim.errors.ConfigError`: :func:`nlsim.environment.progress_style`)."""
    return progress_style() or ("bar" if sys.stderr.isatty() else "lines")


class Progress:
    """A progress counter: ``update(n)`` then ``close()`` (or use it as a context manager)."""

    def __init__(
        self,
        total: int | None,
        desc: str,
        unit: str = "it",
        enabled: bool = True,
        stream: TextIO | None = ...,
    ) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.done = 0
        self.start = self.last = time.perf_counter()
        mode = style() if enabled else "off"
        self.stream = sys.stderr if stream is ... else stream
        self._bar = None
        if mode == "bar" and self.stream is not None:
            from tqdm.auto import tqdm  # deferred: only a terminal needs tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False, file=self.stream)
        self.lines = mode == "lines"
        self.enabled = mode != "off" or bool(_listeners)

    def _line(self) -> str:
        elapsed = time.perf_counter() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        share = (
            f"/{self.total:,} {self.unit} ({100 * self.done / self.total:.0f}%)"
            if self.total
            else f" {self.unit}"
        )
        return f"{self.desc}: {self.done:,}{share}, {elapsed:.1f} s, {rate:,.0f}/s"

    def _report(self) -> None:
        if self.lines and self.stream is not None:
            print(self._line(), file=self.stream, flush=True)
        for listener in list(_listeners):
            listener(self.desc, self.done, self.total)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        now = time.perf_counter()
        if now - self.last >= LOG_INTERVAL_S:
            self.last = now
            self._report()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.done and self.enabled:
            self._report()
        self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str,
    unit: str = "it",
    enabled: bool = True,
    stream: TextIO | None = ...,  # type: ignore[assignment]
) -> Iterator[Any]:
    """Iterate over ``iterable`` showing progress (see the module docstring)."""
    items = (
        list(iterable)
        if iterable is not None and total is None and not hasattr(iterable, "__len__")
        else iterable
    )
    if total is None and items is not None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    bar = Progress(total, desc, unit, enabled, stream)
    try:
        for item in items or ():
            yield item
            bar.update(1)
    finally:
        bar.close()
