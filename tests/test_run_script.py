"""``bash run.sh`` gives ``nlsim pipeline`` the bundled data and report folder, and its own arguments after
them: with ``--no-report`` it gives no report setting, which the chain refuses with ``--no-report``. Started
from another folder, it and ``test.sh`` keep the caller's relative paths in the environment the caller's."""

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


def _recording(path: Path, line: str) -> None:
    """A stand-in script at ``path`` that appends ``line`` (expanded by the shell) to ``seen.txt`` beside
    the copied scripts, then exits with ``$EXIT`` (default 0)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "{line}" >> "$SEEN"\nexit "${{EXIT:-0}}"\n')
    path.chmod(0o755)


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
def test_relative_paths_in_the_environment_are_the_callers_folders(tmp_path: Path, script: str) -> None:
    """``cd ~/work && NLSIM_HOME=cache PYTHON=py/bin/python3 bash ~/nlsim/run.sh`` read both from the
    repository's folder, where the script moves first: the models went into ``~/nlsim/cache`` and the
    set-up said 'py/bin/python3 not found'. Relative paths (NLSIM_HOME, PREFECT_HOME, a PYTHON with a /) are
    now the caller's folder's; a bare command name, an absolute path and ``~/...`` are left as given."""
    repo, caller = tmp_path / "repo", tmp_path / "caller"
    repo.mkdir()
    caller.mkdir()
    shutil.copy(ROOT / script, repo / script)
    seen = tmp_path / "seen.txt"
    record = "PYTHON=$PYTHON NLSIM_HOME=$NLSIM_HOME PREFECT_HOME=$PREFECT_HOME"
    _recording(repo / "scripts" / "setup.sh", f"setup {record}")
    _recording(repo / ".venv" / "bin" / "nlsim", f"nlsim {record}")
    env = {"PATH": "/usr/bin:/bin", "SEEN": str(seen), "EXIT": "3" if script == "test.sh" else "0"}
    cases = [
        ({"PYTHON": "py/bin/python3", "NLSIM_HOME": "cache", "PREFECT_HOME": "./prefect"}, caller),
        ({"PYTHON": "python3.11", "NLSIM_HOME": "~/nlsim-home", "PREFECT_HOME": "/srv/prefect"}, None),
    ]
    for given, base in cases:
        seen.unlink(missing_ok=True)
        done = subprocess.run(
            ["bash", str(repo / script)], cwd=caller, env={**env, **given}, capture_output=True, text=True
        )
        assert done.returncode == (3 if script == "test.sh" else 0), done.stdout + done.stderr
        want = {k: str(base / v.removeprefix("./")) if base else v for k, v in given.items()}
        lines = seen.read_text().splitlines()
        assert lines[0] == "setup " + " ".join(f"{k}={v}" for k, v in want.items()), lines
        if script == "run.sh":
            assert lines[1].split(" ", 1)[1] == lines[0].split(" ", 1)[1], lines


def test_test_sh_names_a_tmpdir_that_is_no_folder(tmp_path: Path) -> None:
    """With TMPDIR naming no folder, ``bash test.sh`` printed 'free space under /x: ' with nothing after it,
    df's 'No such file or directory' twice and bash's 'integer expression expected', and gave no warning,
    while Python put the tests' temporary folders elsewhere. It now says so, and measures /tmp. (The script
    runs from a copy whose set-up does nothing and whose ruff fails, so that it stops before the tests.)"""
    shutil.copy(ROOT / "test.sh", tmp_path / "test.sh")
    for name in ("setup.sh", "setup_browser.sh"):
        _recording(tmp_path / "scripts" / name, "")
    ruff = tmp_path / ".venv" / "bin" / "ruff"
    ruff.parent.mkdir(parents=True)
    ruff.write_text("#!/bin/sh\nexit 1\n")
    ruff.chmod(0o755)
    missing = tmp_path / "no-such-folder"
    env = {"PATH": "/usr/bin:/bin", "SEEN": str(tmp_path / "seen.txt"), "TMPDIR": str(missing)}
    done = subprocess.run(["bash", str(tmp_path / "test.sh")], capture_output=True, text=True, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    said = f"TMPDIR={missing} is not a folder this user can write in: the tests' temporary folders go to"
    assert said in done.stderr and "integer expression" not in done.stderr, done.stderr
    assert "No such file" not in done.stderr, done.stderr
    free = next(line for line in done.stdout.splitlines() if line.startswith("free space under"))
    assert free.startswith("free space under /tmp: ") and free != "free space under /tmp: ", free


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
@pytest.mark.parametrize("installed", [True, False])
def test_help_comes_at_once_with_nothing_set_up(tmp_path: Path, script: str, installed: bool) -> None:
    """``bash run.sh --help`` ran the whole set-up (``bash test.sh --help`` a browser install through apt
    too) before the help. Both now print what they do at once, then the options of what they run where it
    is installed (``nlsim pipeline``'s, pytest's), and set up nothing."""
    shutil.copy(ROOT / script, tmp_path / script)
    seen = tmp_path / "seen.txt"
    for name in ("setup.sh", "setup_browser.sh"):
        _recording(tmp_path / "scripts" / name, name)
    if installed:
        _recording(tmp_path / ".venv" / "bin" / ("nlsim" if script == "run.sh" else "python"), "ran $*")
    done = subprocess.run(
        ["bash", str(tmp_path / script), "-x", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "SEEN": str(seen)},
    )
    assert done.returncode == 0 and not done.stderr, done.stdout + done.stderr
    first = (ROOT / script).read_text(encoding="utf-8").splitlines()[1].removeprefix("# ")
    assert done.stdout.startswith(first + "\n") and "set -euo" not in done.stdout, done.stdout
    ran = seen.read_text().splitlines() if seen.exists() else []
    if installed:
        assert ran == ["ran pipeline --help" if script == "run.sh" else "ran -m pytest --help"], ran
    else:
        assert ran == [] and "once set up: bash scripts/setup.sh" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("args", "workers"),
    [
        (["-xs"], 1),
        (["-vs", "tests/io"], 1),
        (["-sx"], 1),
        (["-s"], 1),
        (["-xn0"], 1),
        (["-xd"], 1),
        (["-rs"], 2),
        (["-kspam"], 2),
        (["-x", "-m", "slow"], 2),
        (["-mslow"], 2),
        (["-vx"], 2),
    ],
)
def test_test_sh_runs_in_one_process_for_s_among_short_options(
    tmp_path: Path, args: list[str], workers: int
) -> None:
    """``bash test.sh -xs`` (or ``-vs``) ran the tests in two xdist workers, which pass no output through:
    only ``-s`` alone or first was seen. Short options given together are now read as pytest reads them,
    up to one that takes a value: ``-rs``, ``-kspam`` or ``-mslow`` hold an s that is that value's, and
    keep the workers. (A copy whose set-up does nothing and whose Python prints the arguments it gets.)"""
    shutil.copy(ROOT / "test.sh", tmp_path / "test.sh")
    for name in ("setup.sh", "setup_browser.sh"):
        _recording(tmp_path / "scripts" / name, "")
    _recording(tmp_path / ".venv" / "bin" / "ruff", "")
    _recording(tmp_path / ".venv" / "bin" / "python", "$*")
    seen = tmp_path / "seen.txt"
    env = {"PATH": "/usr/bin:/bin", "SEEN": str(seen), "NLSIM_TEST_WORKERS": "2"}
    done = subprocess.run(
        ["bash", str(tmp_path / "test.sh"), *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pytest_line = seen.read_text().splitlines()[-1]
    assert pytest_line.startswith("-m pytest "), pytest_line
    assert ("-n 2 --dist loadfile" in pytest_line) is (workers == 2), pytest_line
    assert pytest_line.endswith(" ".join(args)), pytest_line


@pytest.mark.parametrize(("args", "helped"), [(["-vh"], True), (["-xvh", "tests"], True), (["-kh"], False)])
def test_test_sh_reads_help_among_short_options_given_together(
    tmp_path: Path, args: list[str], helped: bool
) -> None:
    """pytest reads ``-vh`` as ``-v -h``, its help, as test.sh reads ``-xs`` as ``-x -s``; ``bash test.sh
    -vh`` ran the whole set-up (a browser through apt) before pytest printed that help. It is the help at
    once now, with nothing set up, where the ``h`` of ``-kh`` (``-k``'s value, a test selection) is not."""
    shutil.copy(ROOT / "test.sh", tmp_path / "test.sh")
    seen = tmp_path / "seen.txt"
    for name in ("setup.sh", "setup_browser.sh"):
        _recording(tmp_path / "scripts" / name, name)
    for name in ("python", "ruff"):
        _recording(tmp_path / ".venv" / "bin" / name, f"{name} $*")
    done = subprocess.run(
        ["bash", str(tmp_path / "test.sh"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "SEEN": str(seen), "NLSIM_TEST_WORKERS": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = seen.read_text().splitlines() if seen.exists() else []
    if helped:
        assert ran == ["python -m pytest --help"], ran
    else:
        assert ran[0] == "setup.sh" and ran[-1] == "python -m pytest -kh", ran
