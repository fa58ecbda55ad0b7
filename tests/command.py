"""``python -m nlsim ...`` as a user runs it, for the command-line tests (in the session's temporary
``NLSIM_HOME``), and the one-line refusal a bad input must get.

A command runs by :func:`nlsim.cli.main` in the test process (:func:`run_in_process`) unless it is given
environment variables: those are read once per process (at import or by caches), so such a command runs
in a process of its own (:func:`run_subprocess`), as does every command of a test that needs a process
boundary (a kill, a lock naming the process) through its own ``subprocess`` call. That saves starting
Python, torch and transformers again for each command (about 2 s of CPU before any work);
``NLSIM_TEST_SUBPROCESS=1`` runs every command as a subprocess, as a user's shell would.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IN_PROCESS = os.environ.get("NLSIM_TEST_SUBPROCESS", "") not in ("1", "true", "yes")
"""Whether :func:`nlsim` runs commands that need no process of their own in the test process."""


def command_env(*, plain: bool = False, **more: str) -> dict[str, str]:
    """The environment of a command: this checkout on the path, no progress lines unless asked (``plain``:
    this checkout on the path and nothing else, as a user's shell leaves it)."""
    quiet = {} if plain else {"TOKENIZERS_PARALLELISM": "false", "NLSIM_PROGRESS": "off"}
    return {**os.environ, "PYTHONPATH": str(ROOT), **quiet, **more}


def nlsim(
    *args: str | Path, cwd: Path, timeout: float = 900, plain: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m nlsim ARGS`` in ``cwd``; ``env`` is added to :func:`command_env` (``plain``: see there).
    In the test process (:data:`IN_PROCESS`) unless ``env`` is given."""
    argv = [str(a) for a in args]
    if IN_PROCESS and not env:
        return run_in_process(argv, cwd, plain=plain)
    return run_subprocess(argv, cwd, timeout=timeout, plain=plain, **env)


def run_subprocess(
    argv: list[str], cwd: Path, timeout: float = 900, plain: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m nlsim ARGV`` in a process of its own, in ``cwd``, with :func:`command_env`."""
    return subprocess.run(
        [sys.executable, "-m", "nlsim", *argv],
        cwd=cwd,
        env=command_env(plain=plain, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _print_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    """Print a warning to (the redirected) ``sys.stderr``, as Python does in a process of its own."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def run_in_process(
    argv: list[str], cwd: Path, more_env: dict[str, str] | None = None, plain: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python -m nlsim ARGV`` run by :func:`nlsim.cli.main` in this process, in ``cwd``, as
    :func:`run_subprocess` runs it: the same environment, ``sys.argv``, stdout and stderr captured, the exit
    status of ``sys.exit(main())`` (an uncaught exception prints its traceback and gives 1, as Python does),
    and warnings printed to that stderr under Python's default filters, as a fresh interpreter prints them
    (pytest would otherwise collect them). The process-wide state a command changes (working folder,
    environment, ``sys.argv``, the ``nlsim`` logger, torch's thread count) is put back afterwards. Not
    thread-safe: one at a time."""
    import torch

    from nlsim.cli import main

    env = command_env(plain=plain, **(more_env or {}))
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    log = logging.getLogger("nlsim")
    saved_log = (log.handlers[:], log.level, log.propagate)
    threads = torch.get_num_threads()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.argv = [str(ROOT / "nlsim" / "__main__.py"), *argv]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.resetwarnings()  # Python's own defaults: what `python -m nlsim` shows
            for action, category in (
                ("ignore", DeprecationWarning),
                ("ignore", PendingDeprecationWarning),
                ("ignore", ImportWarning),
                ("ignore", ResourceWarning),
            ):
                warnings.simplefilter(action, category)  # type: ignore[arg-type]
            warnings.showwarning = _print_warning
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse's usage errors, sys.exit in a command
                if exc.code is None or isinstance(exc.code, int):
                    status = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    status = 1
            except Exception:
                traceback.print_exc()
                status = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        log.handlers[:], log.level, log.propagate = saved_log
        torch.set_num_threads(threads)
    args = [sys.executable, "-m", "nlsim", *argv]
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


def into_a_closed_pipe(
    args: list[str], cwd: Path, env: dict[str, str], timeout: int = 600
) -> subprocess.CompletedProcess[str]:
    """``python args...`` writing its stdout into a pipe whose reader has gone before the first line (as
    ``| head -1`` leaves it), its stderr captured."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, *args],
            cwd=cwd,
            env=env,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
        )
    finally:
        os.close(write)


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    return lines[-1] if lines else ""


def refused(
    proc: subprocess.CompletedProcess[str],
    status: int | str = 1,
    *words: str,
    command: str = "",
    alone: bool = False,
) -> str:
    """Assert a refusal: exit ``status``, a last stderr line ``nlsim CMD: error: ...`` holding ``words``, no
    traceback. Returns the message.

    ``status`` may be left out: exit 1 (a first argument that is text is the first word). ``command`` is the
    ``CMD`` the line must name (any without); with ``alone`` that line is all stderr holds."""
    if isinstance(status, str):
        status, words = 1, (status, *words)
    message = last_line(proc)
    assert proc.returncode == status, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert message.startswith(f"nlsim {command}: error: " if command else "nlsim "), proc.stderr[-2000:]
    assert ": error: " in message, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    if alone:
        assert proc.stderr.strip() == message, proc.stderr[-2000:]
    for word in words:
        assert word in message, (word, message)
    return message
