"""``python -m nlsim ...`` as a user runs it, for the command-line tests: a subprocess on this checkout (in
the session's temporary ``NLSIM_HOME``), and the one-line refusal a bad input must get."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command_env(**more: str) -> dict[str, str]:
    """The environment of a command: this checkout on the path, no progress lines unless asked."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TOKENIZERS_PARALLELISM": "false",
        "NLSIM_PROGRESS": "off",
        **more,
    }


def nlsim(*args: str, cwd: Path, timeout: float = 900, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m nlsim ARGS`` in ``cwd``; ``env`` is added to :func:`command_env`."""
    return subprocess.run(
        [sys.executable, "-m", "nlsim", *args],
        cwd=cwd,
        env=command_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


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
