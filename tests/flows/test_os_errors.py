"""A file that cannot be read or written in the middle of a run (a full disk, an I/O error), its stage's
retries spent: ``python -m flows.X`` ends in the one line ``nlsim`` ends in for the same error, naming the
file, exit status 1, no traceback (it ended in Prefect's failure path: two tracebacks and
``error: Flow run encountered an exception: OSError: [Errno 28] ...``)."""

from __future__ import annotations

import errno
import importlib
import os
from pathlib import Path

import pytest

from nlsim import faults
from tests.stsb_helpers import write_stsb_sample

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
NEWS = """id,title
n1,Floods hit the north of the country
n2,Floods hit the north of the country
n3,Stock markets fall sharply
"""


def _broken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str) -> tuple[list[str], str]:
    """The options of a run of ``command`` in ``tmp_path`` that fails on an ``OSError``, and the file it
    names: the dedup's report files written on a full disk (at its ``report-write`` point), the pipeline's
    pair file unreadable (its first stage, read again by its retries)."""
    if command == "dedup":
        (tmp_path / "news.csv").write_text(NEWS, encoding="utf-8")
        path = str(tmp_path / "rep" / "pairs.parquet")

        def disk_full(stage: str) -> None:
            if stage == "report-write":
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

        monkeypatch.setattr(faults, "_hook", disk_full)
        argv = ["--corpus", "news.csv", "--out", "rep", "--model", FAST_MODEL, "--convert", "none"]
        return [*argv, "--threshold", "0.9", "--no-cache"], path
    path = str(write_stsb_sample(tmp_path, 16, 16, 12))

    def unreadable(cfg: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO), path)

    monkeypatch.setattr("nlsim.chain.run.load_inputs", unreadable)
    return ["--pairs", path, "--model-store", "st", "--no-report", "--base-model", FAST_MODEL], path


@pytest.mark.slow
@pytest.mark.parametrize("command", ["dedup", "pipeline"])
def test_an_os_error_mid_run_ends_the_flow_command_in_nlsims_line_naming_the_file(
    prefect_harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, command: str
) -> None:
    from nlsim.cli import main as nlsim_main

    monkeypatch.chdir(tmp_path)
    argv, path = _broken(monkeypatch, tmp_path, command)
    assert nlsim_main([command, *argv]) == 1
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said.startswith(f"nlsim {command}: error: {path}: ")
    main = importlib.import_module(f"flows.{command}").main
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == said.replace(f"nlsim {command}", f"python -m flows.{command}", 1)
    assert "Traceback" not in err and "Flow run encountered an exception" not in err
