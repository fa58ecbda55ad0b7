"""The command-line tests' runner (``tests/command.py``): a command run in the test process gives what the
same command gives in a process of its own, and leaves the test process as it found it."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path

import pytest

from tests.command import ROOT, run_in_process, run_subprocess


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["no-such-command"],
        ["dedup", "--corpus", "missing.csv", "--out", "rep", "--model", "none", "--threshold", "0.9"],
    ],
    ids=["help", "usage-error", "refusal"],
)
def test_in_process_gives_what_a_process_gives(argv: list[str], tmp_path: Path) -> None:
    alone = run_subprocess(argv, tmp_path)
    here = run_in_process(argv, tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (alone.returncode, alone.stdout, alone.stderr)


def test_the_test_process_is_left_as_it_was(tmp_path: Path) -> None:
    log = logging.getLogger("nlsim")
    before = (os.getcwd(), dict(os.environ), sys.argv[:], log.handlers[:], log.level, log.propagate)
    proc = run_in_process(["--quiet", "dedup", "--corpus", "missing.csv", "--out", "rep"], tmp_path)
    assert proc.returncode != 0 and "missing.csv" in proc.stderr
    assert (os.getcwd(), dict(os.environ), sys.argv, log.handlers, log.level, log.propagate) == before


def test_a_warning_in_a_command_is_printed_to_its_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest collects warnings; a command's own must still reach its stderr, as in a process of its own."""
    import nlsim.cli

    build = nlsim.cli.build_parser

    def warned() -> object:
        warnings.warn("a warning raised while the command runs", UserWarning, stacklevel=1)
        return build()

    monkeypatch.setattr(nlsim.cli, "build_parser", warned)
    for _ in range(2):  # every time, as a fresh interpreter prints it, not once per test session
        proc = run_in_process(["--help"], tmp_path)
        assert proc.returncode == 0 and "UserWarning: a warning raised while the command runs" in proc.stderr


def test_the_checkout_under_test_is_the_one_run() -> None:
    import nlsim

    assert Path(nlsim.__file__).resolve().parent == ROOT / "nlsim"
