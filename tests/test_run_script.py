"""``bash run.sh`` gives ``nlsim pipeline`` the bundled data and report folder, and its own arguments after
them: with ``--no-report`` it gives no report setting, which the chain refuses with ``--no-report``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_script(tmp_path: Path, *args: str) -> list[str]:
    """The arguments ``bash run.sh ARGS`` gives ``nlsim`` (a stand-in that prints them, one a line; the
    set-up script a stand-in that does nothing)."""
    shutil.copy(ROOT / "run.sh", tmp_path / "run.sh")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "setup.sh").write_text("")
    nlsim = tmp_path / ".venv" / "bin" / "nlsim"
    nlsim.parent.mkdir(parents=True)
    nlsim.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    nlsim.chmod(0o755)
    done = subprocess.run(
        ["bash", str(tmp_path / "run.sh"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_run_sh_gives_the_chain_the_bundled_corpus_and_report_folder(tmp_path: Path) -> None:
    argv = run_script(tmp_path, "--force-train")
    assert argv[0] == "pipeline" and argv[-1] == "--force-train"
    assert argv[argv.index("--corpus") + 1] == "data/thucnews.parquet"
    assert argv[argv.index("--out") + 1] == "reports/thucnews"


@pytest.mark.parametrize("where", ["alone", "among others"])
def test_run_sh_no_report_gives_no_report_setting(tmp_path: Path, where: str) -> None:
    """``bash run.sh --no-report`` gave ``--corpus`` and ``--out`` with it, which the chain refuses (they do
    nothing without the report): it now leaves them out."""
    args = ["--no-report"] if where == "alone" else ["--force-train", "--no-report", "--threads", "2"]
    argv = run_script(tmp_path, *args)
    assert "--corpus" not in argv and "--out" not in argv
    assert argv[argv.index("--pairs") + 1] == "annotations/thucnews_tw_pairs.tsv"
    assert argv[-len(args) :] == args
