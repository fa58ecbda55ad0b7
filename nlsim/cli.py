"""The ``nlsim`` command line: one subcommand per module in :mod:`nlsim.commands`.

Exit status: 0 done; 1 the run failed (bad input data, a broken state, a file that cannot be written);
2 the command was used wrongly (an unknown or impossible option); 130 interrupted (Ctrl-C), 143 stopped by
SIGTERM (``kill``, a scheduler's timeout), either way after the run's clean-up, as a failure leaves things:
no lock, no staging folder, the previous report intact; 141 (128 + SIGPIPE, as a shell shows it for a Unix
tool) when the reader of its output closed the pipe (``nlsim models list | head -1``), quietly. Errors are
one line on stderr, naming the file, row and field where there is one, never a traceback for an expected
failure. Messages go to stderr (``--quiet`` keeps only warnings, ``--log-level`` chooses); results to stdout.

Example:
    >>> try:
    ...     main(["--version"])
    ... except SystemExit as done:
    ...     print("exit status", done.code)
    nlsim ...
    exit status 0
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import queue
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nlsim import __version__
from nlsim.commands.options import Formatter
from nlsim.environment import check_environment, home
from nlsim.errors import ConfigError, NlsimError
from nlsim.progress import one_run

COMMANDS = (
    "pipeline",
    "dedup",
    "embed",
    "calibrate",
    "finetune",
    "evaluate",
    "judge",
    "learning_curve",
    "annotate",
    "models",
)
EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 130, 128 + signal.SIGTERM
EXIT_READER_GONE = 128 + 13
"""128 + SIGPIPE (13; ``signal.SIGPIPE`` is not there on Windows): the status a shell shows for a Unix tool
whose reader closed the pipe (``yes | head -1``), kept apart from 1, a failed run."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that a run stopped by ``kill``
    cleans up as an interrupted one does (its locks released, its staging folders removed)."""


IMPORT_MACHINERY = frozenset({"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"})
"""Where Python's import machinery runs: it takes the interpreter's import lock, and a module's, a step
before the ``try`` that gives them back."""
SIGNAL_AGAIN_S = 0.1
"""Seconds after which a signal put off (:func:`raised_safely`) or dropped (:func:`sigterm_stops_the_run`)
comes again."""


def in_import_machinery(frame: Any) -> bool:
    """Whether a signal handler interrupted ``frame``, a frame of the import machinery itself (not a
    module's own code, run under it: an exception unwinds there as anywhere)."""
    return frame is not None and frame.f_code.co_filename in IMPORT_MACHINERY


_again: queue.SimpleQueue[int] = queue.SimpleQueue()
_sender: threading.Thread | None = None


def _send_again() -> None:
    while True:
        signum = _again.get()
        time.sleep(SIGNAL_AGAIN_S)
        os.kill(os.getpid(), signum)


def ready_to_signal_again() -> None:
    """Start the thread that sends a signal again (:func:`signal_again`), once per process: a handler or a
    finalizer may run in the middle of a thread's start, so they never start one."""
    global _sender
    if _sender is None or not _sender.is_alive():
        _sender = threading.Thread(target=_send_again, name="nlsim-signal-again", daemon=True)
        _sender.start()


def signal_again(signum: int) -> None:
    """Have ``signum`` sent to this process again in :data:`SIGNAL_AGAIN_S` seconds, by the thread
    :func:`ready_to_signal_again` started (a handler runs where the main thread is when the signal comes;
    ``SimpleQueue.put`` is safe in a handler and in a finalizer)."""
    _again.put(signum)


def raised_safely(handler: Callable[[int, Any], Any]) -> Callable[[int, Any], Any]:
    """``handler``, a signal handler that stops the run by an exception, put off while the signal landed in
    the import machinery (:func:`in_import_machinery`): raised as the import lock was taken, the exception
    left it held, and every other thread's next import waited for ever (a flow command, whose Prefect
    threads import as they go, then hung at its exit); the signal comes again a moment later."""

    def handle(signum: int, frame: Any) -> Any:
        if in_import_machinery(frame):
            signal_again(signum)
            return None
        return handler(signum, frame)

    return handle


def _raise_terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the clean-up short
    raise Terminated


_terminate = raised_safely(_raise_terminated)
_interrupt = raised_safely(signal.default_int_handler)


def _signal_dropped_again(
    relayed: tuple[type[BaseException], ...], hook: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    """``sys.unraisablehook`` that sends SIGTERM (Ctrl-C's SIGINT) again when Python dropped the exception
    its handler raised: the handler ran in a finalizer or a weakref callback, whose exceptions Python prints
    as "Exception ignored" and forgets (the run went on to its end, exit 0). ``relayed``: the exceptions of
    another SIGTERM handler (Prefect's, during a flow run); any other goes to ``hook``."""

    def dropped(unraisable: Any) -> None:
        exc = unraisable.exc_value
        ctrl_c = isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Terminated)
        if ctrl_c and signal.getsignal(signal.SIGINT) is _interrupt:
            signal_again(signal.SIGINT)
            return
        if not isinstance(exc, (Terminated, *relayed)):
            hook(unraisable)
            return
        if isinstance(exc, Terminated) and signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
            signal.signal(signal.SIGTERM, _terminate)  # the handler's exception was dropped: it waits again
        signal_again(signal.SIGTERM)

    return dropped


@contextmanager
def sigterm_stops_the_run(relayed: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` for the length of the command (the handler before is put back;
    a handler the host process installed is left alone, as is any thread but the main one). The signal
    never lands in the import machinery (:func:`raised_safely`), and one whose exception Python dropped
    comes again; Ctrl-C's KeyboardInterrupt alike, where Python's own handler has SIGINT. ``relayed``: the
    exceptions another handler raises for SIGTERM while the command runs (Prefect's during a flow run), sent
    again alike when dropped."""
    try:
        before = signal.getsignal(signal.SIGTERM)
    except ValueError:
        before = None
    if before != signal.SIG_DFL:
        yield
        return
    try:
        signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        yield
        return
    ready_to_signal_again()
    ctrl_c = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if ctrl_c:
        signal.signal(signal.SIGINT, _interrupt)
    hook = sys.unraisablehook
    sys.unraisablehook = _signal_dropped_again(relayed, hook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        if ctrl_c:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


EXIT_GRACE_S = 30.0
"""Seconds a stopped command's interpreter may take to exit (its threads' ends, its exit handlers) before
:func:`exit_within` ends the process."""


def exit_within(status: int, seconds: float = EXIT_GRACE_S, last: Callable[[], None] | None = None) -> None:
    """Make sure a stopped command ends: a daemon thread that, if the process still runs ``seconds`` later
    (its interpreter's exit waiting for a thread or an exit handler that never returns, as a flow command's
    once did after its ``stopped (SIGTERM)`` line), runs ``last`` (what the exit handlers would have done
    that must not be lost: a temporary server stopped) and ends the process with ``status``.

    Example:
        >>> exit_within(143, seconds=3600)  # a process that ends before then is not touched
    """

    def end() -> None:
        time.sleep(seconds)
        try:
            if last is not None:
                last()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(status)

    threading.Thread(target=end, name="nlsim-exit-within", daemon=True).start()


def stopped(prog: str, exc: KeyboardInterrupt) -> int:
    """The one line a command stopped by SIGTERM (:class:`Terminated`) or Ctrl-C ends with, and its exit
    status (143, 130), once its clean-up ran: ``nlsim CMD`` and ``python -m flows.X`` alike."""
    if isinstance(exc, Terminated):
        print(f"{prog}: stopped (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    print(f"{prog}: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nlsim",
        description="Find near-duplicate and related news items, and train the model that finds them.\n\n"
        + textwrap.fill(
            "Script conversion, sentence embeddings, FAISS, reranking, clusters, Parquet report; fine-tune, "
            "evaluate and promote the encoder on annotated pairs. `nlsim COMMAND --help` lists a command's "
            "options with their defaults.",
            100,
        ),
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"nlsim {__version__}")
    _message_options(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"nlsim.commands.{name}").register(sub)
    for command in _commands(parser):  # `nlsim dedup ... -q` as well as `nlsim -q dedup ...`
        _message_options(command, default=argparse.SUPPRESS)
    return parser


def _message_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """``-q``/``--quiet`` and ``--log-level``; a command's own take ``default`` :data:`argparse.SUPPRESS`, so
    that given before the command they still hold."""
    parser.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="only warnings and errors on stderr"
    )
    parser.add_argument(
        "--log-level",
        default=default,
        type=str.upper,  # debug as DEBUG: a level is named in any case
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="messages shown, in any case (default INFO)",
    )


def _commands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every command and subcommand parser below ``parser`` (``dedup``, ``annotate``, ``annotate merge``)."""
    found = []
    for action in parser._actions:  # argparse lists a parser's commands only here
        if isinstance(action, argparse._SubParsersAction):
            for command in dict.fromkeys(action.choices.values()):
                found += [command, *_commands(command)]
    return found


def setup_logging(level: str) -> None:
    """Show the ``nlsim`` logger's messages on stderr, plainly."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("nlsim")
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nlsim`` console script; returns the exit status. What is still buffered for
    stdout is written before it returns (``--help`` and ``--version`` too), so that a reader gone is found
    here (:func:`reader_gone`), not by the interpreter's exit."""
    return to_a_reader(lambda: run_command(argv))


def to_a_reader(run: Callable[[], int]) -> int:
    """``run()``'s exit status, what it left buffered for stdout written before it returns; a reader that
    closed the pipe ends it quietly (:func:`reader_gone`). ``nlsim CMD`` and ``python -m flows.X`` alike."""
    try:
        try:
            return run()
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        return reader_gone()


def reader_gone() -> int:
    """A command whose reader closed the pipe (``nlsim models list | head -1``, ``nlsim judge --json | head
    -c 700``) ends as a Unix tool does: nothing said, what is left of stdout sent to the null device (the
    interpreter writes it at exit, and would say ``Exception ignored ... BrokenPipeError``), exit status
    :data:`EXIT_READER_GONE`. Mostly the work was done (a report is written before its summary is printed);
    where stderr went to the same pipe (``2>&1 | head -1``), the run stops at its next line, as SIGPIPE stops
    a Unix tool, its outputs written atomically or not at all."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # stdout is not a file (captured by a test)
        pass
    return EXIT_READER_GONE


def run_command(argv: Sequence[str] | None) -> int:
    """The command ``argv`` names, run; an expected failure is said in one line (see the module's text)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    level = args.log_level or ("WARNING" if args.quiet else "INFO")
    setup_logging(level)
    if logging.getLevelName(level) >= logging.WARNING:  # progress lines are information too
        os.environ.setdefault("NLSIM_PROGRESS", "off")
    try:
        check_environment()  # a bad NLSIM_* value is refused before any work
        with sigterm_stops_the_run(), one_run():  # a file read by several stages warns once
            return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"nlsim {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NlsimError as exc:
        print(f"nlsim {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # the reader of stdout went away: not an error (main)
        raise
    except OSError as exc:  # a file that cannot be read or written: say which, without a traceback
        line = os_error_line(exc, named(vars(args).values()))
        print(f"nlsim {args.command}: error: {line}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        return stopped(f"nlsim {args.command}", exc)


def os_error_line(exc: OSError, named: Sequence[str | os.PathLike[str]] = ()) -> str:
    """The reason a command stopped on ``exc`` (a file that cannot be read or written, a full disk), as its
    one error line says it: the file, the system's words and, for a file of nlsim's home, what that folder is
    (:func:`in_home`, ``named``: the paths the command was given). ``nlsim CMD`` and ``python -m flows.X``
    alike.

    Example:
        >>> os_error_line(OSError(28, "No space left on device", "/srv/reports/pairs.parquet"))
        '/srv/reports/pairs.parquet: No space left on device'
    """
    where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
    return f"{where}{exc.strerror or exc}{in_home(exc, named)}"


def in_home(exc: OSError, named: Sequence[str | os.PathLike[str]] = ()) -> str:
    """Where the file that failed is nlsim's home or in it, what that folder is and how to choose another
    (``NLSIM_HOME=/proc/x`` said only "/proc/x: No such file or directory"), or a missing folder above it that
    making it had to make (``NLSIM_HOME=/proc/x/home`` failing on ``/proc/x``); else nothing. A file at or
    under a path in ``named`` (the command line's) that is itself in the home is the user's, not nlsim's:
    ``NLSIM_HOME=.`` with ``--out report``. Paths are compared made whole, links followed (``../home``).

    Example:
        >>> from unittest import mock
        >>> home = mock.patch.dict(os.environ, NLSIM_HOME="/srv/nlsim")
        >>> with home:
        ...     in_home(FileNotFoundError(2, "No such file or directory", "/srv/nlsim/models"))[:33]
        " (under nlsim's home /srv/nlsim, "
        >>> with home:
        ...     in_home(FileNotFoundError(2, "No such file or directory", "/srv/news.csv"))
        ''
        >>> with home:
        ...     in_home(PermissionError(13, "Permission denied", "/srv/nlsim/r/a.csv"), ["/srv/nlsim/r"])
        ''
    """
    name = getattr(exc, "filename", None)
    if not isinstance(name, str | os.PathLike):
        return ""
    try:
        folder = home()
    except ConfigError:
        return ""
    top, path = Path(os.path.realpath(folder)), Path(os.path.realpath(name))
    making = path in top.parents and not path.exists()  # a folder above the home, made for it
    if not (making or _under(path, top)):
        return ""
    for given in named:
        mine = Path(os.path.realpath(given))
        if _under(mine, top) and _under(path, mine):
            return ""
    kept = "where converted models and caches are kept"
    return f" ({'making' if making else 'under'} nlsim's home {folder}, {kept}; NLSIM_HOME names another)"


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def named(given: Iterable[Any]) -> list[str]:
    """The paths (and other words) among a command's settings (its options' values, defaults included; a
    flow's parameters), those of a list each.

    Example:
        >>> named(["news.csv", 0.9, ["a.tsv", "b.tsv"], None, ""])
        ['news.csv', 'a.tsv', 'b.tsv']
    """
    values = [v for value in given for v in (value if isinstance(value, list) else [value])]
    return [str(v) for v in values if isinstance(v, str | os.PathLike) and str(v) and "\0" not in str(v)]


if __name__ == "__main__":
    sys.exit(main())
