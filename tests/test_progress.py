"""Progress of long steps: when a line is written and a listener told, what it counts, and warnings given
once in a run."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import pytest

from nlsim import progress


class Clock:
    """A clock the test moves by hand (``progress`` reads ``time.perf_counter``)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress.time, "perf_counter", fake)
    return fake


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int, int | None]]]:
    monkeypatch.setenv("NLSIM_PROGRESS", "lines")
    seen: list[tuple[str, int, int | None]] = []
    progress.clear_listeners()
    progress.add_listener(lambda desc, done, total: seen.append((desc, done, total)))
    yield seen
    progress.clear_listeners()


def test_a_line_comes_once_the_interval_has_passed_and_the_interval_then_starts_again(
    clock: Clock, heard: list[tuple[str, int, int | None]]
) -> None:
    bar = progress.Progress(10, "embed", "texts", stream=None)
    clock.now += progress.LOG_INTERVAL_S - 1
    bar.update()
    assert heard == []
    clock.now += 1  # the interval, to the second: a line
    bar.update()
    assert heard == [("embed", 2, 10)]
    clock.now += 1  # one second after that line: none
    bar.update()
    assert heard == [("embed", 2, 10)]
    bar.close()
    bar.close()  # a second close says nothing more
    assert heard == [("embed", 2, 10), ("embed", 3, 10)]


def test_a_step_that_did_nothing_says_nothing_at_its_close(heard: list[tuple[str, int, int | None]]) -> None:
    with progress.Progress(5, "embed", stream=None):
        pass
    assert heard == []


def test_the_line_of_a_step_with_no_time_gone_and_no_total_reads_well(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    monkeypatch.setenv("NLSIM_PROGRESS", "lines")
    log = io.StringIO()
    with progress.Progress(None, "read", "rows", stream=log) as bar:
        bar.update(1234)
    with progress.Progress(0, "read", "rows", stream=log) as bar:
        bar.update(2)
    assert log.getvalue().splitlines() == ["read: 1,234 rows, 0.0 s, 0/s", "read: 2 rows, 0.0 s, 0/s"]


def test_lines_with_no_stream_go_nowhere(
    heard: list[tuple[str, int, int | None]], capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in progress.progress_bar(range(3), desc="embed", stream=None):
        pass
    assert heard == [("embed", 3, 3)]
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_listeners_hear_a_step_whose_progress_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NLSIM_PROGRESS=off`` silences the terminal and the log, not the flows' progress artifacts."""
    monkeypatch.setenv("NLSIM_PROGRESS", "off")
    seen: list[tuple[str, int, int | None]] = []
    progress.clear_listeners()
    progress.add_listener(lambda desc, done, total: seen.append((desc, done, total)))
    try:
        for _ in progress.progress_bar(range(4), desc="index", stream=None):
            pass
    finally:
        progress.clear_listeners()
    assert seen == [("index", 4, 4)]


def test_a_listener_that_leaves_does_not_keep_the_next_one_from_hearing(
    heard: list[tuple[str, int, int | None]],
) -> None:
    def once(desc: str, done: int, total: int | None) -> None:
        progress.remove_listener(once)

    progress.clear_listeners()
    progress.add_listener(once)
    progress.add_listener(lambda desc, done, total: heard.append((desc, done, total)))
    for _ in progress.progress_bar(range(2), desc="embed", stream=None):
        pass
    assert heard == [("embed", 2, 2)]
    progress.remove_listener(once)  # one no longer there: nothing to do


def test_the_count_is_of_items_done_and_the_total_is_known_for_an_iterator(
    heard: list[tuple[str, int, int | None]],
) -> None:
    for i in progress.progress_bar(iter("abcde"), desc="embed", stream=None):
        if i == "c":
            break  # stopped while "c" was being worked on: "a" and "b" are done
    assert heard == [("embed", 2, 5)]
    heard.clear()
    for _ in progress.progress_bar(range(3), total=10, desc="embed", stream=None):
        pass
    assert heard == [("embed", 3, 10)]  # the total given wins over the iterable's length


def test_a_terminal_gets_a_bar_in_the_steps_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NLSIM_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert progress.style() == "bar"
    screen = Terminal()
    for _ in progress.progress_bar(range(3), desc="embed", unit="texts", stream=screen):
        pass
    assert "embed" in screen.getvalue() and "texts/s" in screen.getvalue()


def test_a_run_inside_a_run_warns_once_with_the_outer_one(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="nlsim"):
        with progress.one_run():
            progress.warn("p.tsv: 2 row(s) hold U+FFFD")
            with progress.one_run():
                progress.warn("p.tsv: 2 row(s) hold U+FFFD")
        progress.warn("p.tsv: 2 row(s) hold U+FFFD")  # a later run warns again
    assert [r.getMessage() for r in caplog.records] == ["p.tsv: 2 row(s) hold U+FFFD"] * 2
