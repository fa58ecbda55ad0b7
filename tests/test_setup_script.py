"""``scripts/setup.sh`` (which ``bash run.sh`` and ``bash test.sh`` run first) refuses a Python nlsim does
not run on (``requires-python`` in pyproject.toml), before it makes ``.venv`` with it, and names a ``.venv``
made with one: a later run with the right Python would otherwise keep that ``.venv`` and fail again."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def fake_python(path: Path, version: str) -> Path:
    """A stand-in interpreter that says it is Python ``version`` (and does nothing else)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return path


def setup(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "scripts").mkdir(exist_ok=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    return subprocess.run(
        ["bash", str(tmp_path / "scripts" / "setup.sh"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
    )


@pytest.mark.parametrize("version", ["3.10", "3.13"])
def test_a_python_nlsim_does_not_run_on_is_refused_before_the_venv_is_made(
    tmp_path: Path, version: str
) -> None:
    py = fake_python(tmp_path / "bin" / "python3", version)
    done = setup(tmp_path, PYTHON=str(py))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{py} is Python {version}; nlsim needs Python 3.11 or 3.12" in done.stderr
    assert "PYTHON=python3.11 bash run.sh" in done.stderr
    assert not (tmp_path / ".venv").exists()


def test_a_missing_python_is_named(tmp_path: Path) -> None:
    done = setup(tmp_path, PYTHON="no-such-python3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no-such-python3 not found" in done.stderr and "nlsim needs Python 3.11 or 3.12" in done.stderr


def test_a_venv_made_with_another_python_is_named_with_what_to_do(tmp_path: Path) -> None:
    fake_python(tmp_path / ".venv" / "bin" / "python", "3.10")
    done = setup(tmp_path, PYTHON=str(fake_python(tmp_path / "bin" / "python3", "3.11")))
    assert done.returncode == 2, done.stdout + done.stderr
    assert ".venv/bin/python is Python 3.10; nlsim needs Python 3.11 or 3.12" in done.stderr
    assert "remove .venv" in done.stderr
    assert (tmp_path / ".venv" / "bin" / "python").is_file()  # left for the user to remove


def test_help_prints_what_the_script_does_and_its_options(tmp_path: Path) -> None:
    done = setup(tmp_path, "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("usage: bash scripts/setup.sh [--all-bytecode] [--no-model] [--help]\n")
    assert "Idempotent" in done.stdout and "#" not in done.stdout and not done.stderr
    assert not (tmp_path / ".venv").exists()


def test_an_unknown_option_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    done = setup(tmp_path, "--no-modle")
    assert done.returncode == 2
    assert "unknown option --no-modle (known: --all-bytecode, --no-model, --help)" in done.stderr


def test_a_venv_without_pip_that_cannot_get_one_is_named_with_what_to_do(tmp_path: Path) -> None:
    """Debian's ``python3 -m venv`` without its venv package leaves a ``.venv`` with no pip: the install then
    failed with its one reason ('No module named pip') cut from the output, exit 1 and nothing said."""
    for name in ("pyproject.toml", "requirements/constraints.txt", "requirements/no-deps.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    venv_python = tmp_path / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    no_modules = '[ "$1" = -m ] && { echo "No module named $2" >&2; exit 1; }'
    venv_python.write_text(f"#!/bin/sh\n{no_modules}\necho 3.11\n")
    venv_python.chmod(0o755)
    done = setup(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ".venv/bin/python has no pip and cannot install it" in done.stderr
    assert "rm -rf .venv" in done.stderr and "apt install python3.11-venv" in done.stderr
    assert not (tmp_path / ".venv" / ".nlsim-installed").exists()


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").is_file(), reason="needs the installed .venv")
def test_a_home_nlsim_refuses_is_named_by_the_set_up_not_left_to_the_job(tmp_path: Path) -> None:
    """With NLSIM_HOME naming a file, the set-up's model step said '[Errno 20] Not a directory: ...; the main
    job converts it when it starts', and the job then refused the variable. The set-up now names it, exit 2.
    (The installed .venv stands in: a wrapper of its Python, and the stamp of an install already done.)"""
    for name in ("pyproject.toml", "requirements/constraints.txt", "requirements/no-deps.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    venv_python = tmp_path / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text(f'#!/bin/sh\nexec {ROOT / ".venv" / "bin" / "python"} "$@"\n')
    venv_python.chmod(0o755)
    inputs = "pyproject.toml requirements/constraints.txt requirements/no-deps.txt scripts/setup.sh"
    want = subprocess.run(
        ["bash", "-c", f"{{ cat {inputs}; pwd -P; }} | sha256sum | cut -c1-16"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout
    (tmp_path / ".venv" / ".nlsim-installed").write_text(want)
    (tmp_path / "a-file").write_text("not a folder")
    done = setup(tmp_path, NLSIM_HOME=str(tmp_path / "a-file"))
    assert done.returncode == 2, done.stdout + done.stderr
    said = f"the default model was not converted: NLSIM_HOME='{tmp_path / 'a-file'}': a file, not a folder"
    assert said in done.stderr and "set NLSIM_HOME to a folder" in done.stderr, done.stderr
    assert "the main job converts it" not in done.stderr and "installing" not in done.stdout


def test_a_venv_whose_python_is_gone_is_named_with_what_to_do(tmp_path: Path) -> None:
    """A ``.venv`` made with a Python since removed or moved (an upgrade, pyenv's version gone) keeps
    ``bin/python`` as a link to nothing: the set-up took it for no ``.venv``, ran ``python3 -m venv`` over it,
    which keeps such links, and stopped on 'Error: [Errno 2] No such file or directory', every run."""
    venv_python = tmp_path / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(tmp_path / "gone" / "python3")
    done = setup(tmp_path, PYTHON=str(fake_python(tmp_path / "bin" / "python3", "3.11")))
    assert done.returncode == 2, done.stdout + done.stderr
    said = f".venv/bin/python is a link to {tmp_path / 'gone' / 'python3'}, which is gone"
    assert said in done.stderr and "remove .venv (rm -rf .venv), then run again" in done.stderr, done.stderr
    assert "creating .venv" not in done.stdout
    assert venv_python.is_symlink()  # left for the user to remove


def test_a_python_whose_path_has_a_space_is_named_with_its_version(tmp_path: Path) -> None:
    """``PYTHON="/opt/my python/bin/python3"``: the set-up said 'creating .venv with ' and nothing more (the
    path, unquoted, was split into a command that does not exist), then made .venv with it all the same."""
    py = fake_python(tmp_path / "my python" / "bin" / "python3", "3.11")
    done = setup(tmp_path, PYTHON=str(py))
    assert "setup: creating .venv with 3.11\n" in done.stdout, done.stdout + done.stderr
    assert f"{tmp_path / 'my'}: No such file" not in done.stderr, done.stderr


def test_a_relative_python_is_the_callers_folders(tmp_path: Path) -> None:
    """``PYTHON=py/bin/python3 bash ~/nlsim/scripts/setup.sh`` from another folder was read from the
    repository's, where the script moves first: 'py/bin/python3 not found'. It is now the caller's."""
    caller = tmp_path / "caller"
    fake_python(caller / "py" / "bin" / "python3", "3.11")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "setup.sh")],
        cwd=caller,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHON": "py/bin/python3"},
    )
    assert "setup: creating .venv with 3.11\n" in done.stdout, done.stdout + done.stderr
    assert "not found" not in done.stderr, done.stderr


def test_a_second_run_installs_nothing_and_a_moved_clone_installs_again(tmp_path: Path) -> None:
    """The install is stamped, so a second run only checks it. The stamp did not say where the clone was:
    a clone moved (``mv ~/nlsim ~/src/nlsim``) kept .venv's stamp, so nothing was installed again, while the
    editable install still pointed at the old folder and ``.venv/bin/nlsim`` began with the old path of its
    Python (``bash run.sh``: 'bad interpreter: No such file or directory'). A moved clone now installs again.
    (A stand-in .venv Python that logs each ``pip install``.)"""
    first, moved = tmp_path / "first", tmp_path / "moved"
    for name in (
        "pyproject.toml",
        "requirements/constraints.txt",
        "requirements/no-deps.txt",
        "scripts/setup.sh",
    ):
        (first / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, first / name)
    venv_python = first / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    logs = 'case "$*" in *sys.version_info*) echo 3.11 ;; "-m pip install"*) echo installed >> "$LOG" ;; esac'
    venv_python.write_text(f"#!/bin/sh\n{logs}\nexit 0\n")
    venv_python.chmod(0o755)
    log = tmp_path / "log.txt"

    def installs(root: Path) -> int:
        log.write_text("")
        done = subprocess.run(
            ["bash", str(root / "scripts" / "setup.sh"), "--no-model"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "LOG": str(log), "NLSIM_SETUP_INSTALLER": "pip"},
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return len(log.read_text().splitlines())

    assert installs(first) > 0
    assert installs(first) == 0
    first.rename(moved)
    assert installs(moved) > 0
    assert installs(moved) == 0
    (moved / "requirements" / "no-deps.txt").unlink()  # a file the stamp reads, missing: no install
    done = subprocess.run(["bash", str(moved / "scripts" / "setup.sh")], capture_output=True, text=True)
    assert done.returncode == 1 and "requirements/no-deps.txt: No such file" in done.stderr, done.stderr
    assert not log.read_text() and "installing" not in done.stdout


def test_a_python_named_for_a_venv_made_with_another_is_said_to_go_unused(tmp_path: Path) -> None:
    """``PYTHON=python3.12 bash run.sh`` where .venv was made with 3.11 kept .venv, as it should, and said
    nothing: the user took the run for one on 3.12. The set-up now says that .venv is kept and how to make
    it with the Python named; a PYTHON of the .venv's own version is passed over without a word."""
    fake_python(tmp_path / ".venv" / "bin" / "python", "3.11")
    for version, said in (("3.12", True), ("3.11", False)):
        py = fake_python(tmp_path / f"python{version}", version)
        done = setup(tmp_path, PYTHON=str(py))
        note = f"setup: .venv was made with Python 3.11 and is kept: PYTHON={py} (Python {version}) makes"
        assert (note in done.stdout) is said, done.stdout + done.stderr
        if said:
            assert "remove .venv (rm -rf .venv), then run again" in done.stdout, done.stdout


@pytest.mark.parametrize("where", ["environment", "pip config", "pip config on several lines"])
def test_uv_installs_from_the_indexes_pip_is_configured_with(tmp_path: Path, where: str) -> None:
    """Only pip's ``find-links`` was given to uv, which does not read pip's configuration: behind a private
    index (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, or pip.conf) uv looked on PyPI, failed, and pip then
    installed everything again, slower. uv now gets the same index and extra indexes, and takes each
    package's best version from all of them as pip does. (A stand-in .venv Python that answers
    ``pip config list``, and a stand-in uv that logs its arguments.) A value written on several lines in
    pip.conf, which pip lists with ``\\n`` between them, was given to uv as one word: its lines are now
    each their own."""
    for name in ("pyproject.toml", "requirements/constraints.txt", "requirements/no-deps.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    answers = (
        'case "$*" in *sys.version_info*) echo 3.11 ;; "-m pip config list") printf "%b" "$CONFIG" ;; esac'
    )
    (bin_ / "python").write_text(f"#!/bin/sh\n{answers}\nexit 0\n")
    (bin_ / "uv").write_text('#!/bin/sh\nprintf "%s\\n" "$*" >> "$LOG"\nexit 0\n')
    for name in ("python", "uv"):
        (bin_ / name).chmod(0o755)
    log = tmp_path / "uv.txt"
    index, extra = "https://pypi.example.org/simple", ["https://a.example.org/simple", "/srv/simple"]
    if where == "environment":
        settings = {"PIP_INDEX_URL": index, "PIP_EXTRA_INDEX_URL": " ".join(extra), "CONFIG": ""}
    else:
        between = " " if where == "pip config" else "\\\\n"  # pip's \n, kept by the stand-in's printf %b
        lead = "" if where == "pip config" else between  # a value on the line below its name
        config = f"global.index-url='{lead}{index}'\\nglobal.extra-index-url='{lead}{between.join(extra)}'\\n"
        settings = {"CONFIG": config}
    done = setup(tmp_path, "--no-model", LOG=str(log), **settings)
    assert done.returncode == 0, done.stdout + done.stderr
    installs = log.read_text().splitlines()
    assert len(installs) == 2 and "uv could not install" not in done.stdout, done.stdout
    for line in installs:
        given = f"--index-url {index} --extra-index-url {extra[0]} --extra-index-url {extra[1]}"
        assert given in line and "--index-strategy unsafe-best-match" in line, line
