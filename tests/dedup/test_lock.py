"""The run lock: refusal while a holder lives, takeover after it dies, no pid-reuse confusion."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import nlsim.io.lock as lock_module
from nlsim.io.lock import (
    LOCK_NAME,
    LockedError,
    RunLock,
    boot_id,
    held_here,
    pid_alive,
    process_start_time,
    read_lock,
)

HOLDER = """
import sys, time
from nlsim.io.lock import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def _start_holder(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_second_run_refused_then_stale_lock_taken_over(tmp_path: Path) -> None:
    proc = _start_holder(tmp_path)
    try:
        with pytest.raises(LockedError, match=rf"locked by another run: pid {proc.pid}"):
            RunLock(tmp_path).acquire()
        assert read_lock(tmp_path).pid == proc.pid
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # The killed holder left its lock file behind: the next run takes it over and says so.
    assert (tmp_path / LOCK_NAME).exists()
    lock = RunLock(tmp_path).acquire()
    assert lock.message is not None
    assert f"pid {proc.pid}" in lock.message and "no longer exists" in lock.message
    assert read_lock(tmp_path).pid == os.getpid()
    lock.release()
    assert not (tmp_path / LOCK_NAME).exists()


@pytest.mark.parametrize(
    "text",
    ["[]", "null", '{"pid": "1"}', '{"pid": true, "hostname": "h"}', '{"pid": 1, "hostname": 7}', "{", ""],
)
def test_a_lock_file_that_is_no_lock_record_is_taken_over_as_stale(tmp_path: Path, text: str) -> None:
    (tmp_path / LOCK_NAME).write_text(text)
    with RunLock(tmp_path) as lock:
        assert lock.message is not None and "unreadable lock file" in lock.message
        assert read_lock(tmp_path).pid == os.getpid()


def test_context_manager_releases_and_reentry_refused(tmp_path: Path) -> None:
    with RunLock(tmp_path) as lock:
        assert lock.message is None
        with pytest.raises(LockedError, match="already holds"):
            RunLock(tmp_path).acquire()
    assert read_lock(tmp_path) is None
    with RunLock(tmp_path):  # free again
        pass


def test_recycled_pid_is_stale(tmp_path: Path) -> None:
    # A lock naming a live pid (ours) but another start time: the pid was reused, the holder is gone.
    fake = {
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "started": "1",
        "boot_id": None,
        "acquired_at": "2020-01-01T00:00:00+00:00",
        "command": "old",
    }
    (tmp_path / LOCK_NAME).write_text(json.dumps(fake))
    lock = RunLock(tmp_path).acquire()
    assert "start time differs" in lock.message
    lock.release()


def test_other_host_refused(tmp_path: Path) -> None:
    fake = {
        "pid": 1,
        "hostname": "elsewhere.example",
        "started": None,
        "boot_id": None,
        "acquired_at": "2020-01-01T00:00:00+00:00",
        "command": "x",
    }
    (tmp_path / LOCK_NAME).write_text(json.dumps(fake))
    with pytest.raises(LockedError, match="another host"):
        RunLock(tmp_path).acquire()


def test_process_start_time_reads_proc() -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("no /proc on this system")
    t = process_start_time(os.getpid())
    assert t is not None and t.isdigit()
    time.sleep(0)
    assert process_start_time(os.getpid()) == t


def _record(pid: int, started: str | None, boot: str | None = None) -> dict:
    """A lock record naming a holder on this host."""
    return {
        "pid": pid,
        "hostname": socket.gethostname(),
        "started": started,
        "boot_id": boot,
        "acquired_at": "2020-01-01T00:00:00+00:00",
        "command": "other",
    }


@pytest.fixture
def other_process() -> Iterator[subprocess.Popen]:
    """A live process on this host that is not this one (and holds no lock)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_live_holder_whose_start_time_was_not_recorded_is_refused(
    tmp_path: Path, other_process: subprocess.Popen
) -> None:
    """A lock written where the holder's start time could not be read (no /proc) names no start time: a live
    pid is then the holder, never a recycled pid, and the lock is refused."""
    (tmp_path / LOCK_NAME).write_text(json.dumps(_record(other_process.pid, None)))
    with pytest.raises(LockedError, match=rf"pid {other_process.pid} .*the process is running"):
        RunLock(tmp_path).acquire()


def test_a_lock_from_before_a_reboot_is_stale_though_its_pid_lives(
    tmp_path: Path, other_process: subprocess.Popen
) -> None:
    """The holder's pid and start time match a live process, but the lock names another boot: the holder
    died with the machine, and the lock is taken over."""
    if boot_id() is None or process_start_time(other_process.pid) is None:
        pytest.skip("no boot id or process start time on this system")
    started = process_start_time(other_process.pid)
    (tmp_path / LOCK_NAME).write_text(json.dumps(_record(other_process.pid, started, boot="another-boot")))
    with RunLock(tmp_path) as lock:
        assert lock.message is not None and "rebooted since" in lock.message


def test_a_process_another_user_owns_counts_as_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Signalling another user's process is not permitted, yet the process exists: its lock holds."""

    def kill(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(lock_module.os, "kill", kill)
    assert pid_alive(4242)


def test_start_time_is_field_22_after_a_command_name_holding_parentheses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/proc/PID/stat``'s command name is in parentheses and may hold ``) `` itself: the fields are counted
    after its last closing parenthesis."""
    fields = ["S"] + [str(1000 + n) for n in range(4, 53)]  # fields 3 to 52; field n reads 1000 + n
    stat = "4242 (a) b (c)) " + " ".join(fields) + "\n"
    monkeypatch.setattr(lock_module, "_read_text", lambda path: stat if path == "/proc/4242/stat" else None)
    assert process_start_time(4242) == "1022"


def test_held_here_is_true_only_for_the_lock_this_process_holds(tmp_path: Path) -> None:
    assert not held_here(tmp_path)  # no lock at all
    with RunLock(tmp_path):
        assert held_here(tmp_path)
    # our pid and host, but another start time: a process that once had our pid holds it, not this one
    (tmp_path / LOCK_NAME).write_text(json.dumps(_record(os.getpid(), "1")))
    assert not held_here(tmp_path)


@pytest.mark.parametrize(
    ("pid_offset", "started"), [(1, None), (0, "1")], ids=["another pid", "our pid, another start time"]
)
def test_release_leaves_a_lock_another_process_took(
    tmp_path: Path, pid_offset: int, started: str | None
) -> None:
    """A lock taken over from this run (counted stale) is the new holder's: this run's release leaves it."""
    lock = RunLock(tmp_path).acquire()
    other = _record(os.getpid() + pid_offset, started)
    (tmp_path / LOCK_NAME).write_text(json.dumps(other))
    lock.release()
    assert json.loads((tmp_path / LOCK_NAME).read_text()) == other


def test_a_second_release_leaves_the_lock_a_later_run_took(tmp_path: Path) -> None:
    first = RunLock(tmp_path).acquire()
    first.release()
    second = RunLock(tmp_path).acquire()
    first.release()  # released already: nothing of the second run's is touched
    assert read_lock(tmp_path) is not None and held_here(tmp_path)
    second.release()
    assert read_lock(tmp_path) is None


def test_a_lock_beside_an_output_is_its_own_file_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """``RunLock.beside(OUT)`` locks ``OUT.lock`` beside the output, apart from the parent folder's own lock,
    and takes its guard on the parent folder itself: once released, the parent holds nothing of it."""
    out = tmp_path / "model"
    with RunLock.beside(out, "--out") as lock:
        assert lock.path == tmp_path / "model.lock" and read_lock(tmp_path) is None
        with pytest.raises(LockedError, match="already holds"):
            RunLock.beside(out, "--out").acquire()
        with RunLock(tmp_path):  # the folder's own lock is another lock
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock.guard"]  # the folder lock's guard only
    (tmp_path / ".lock.guard").unlink()
    with RunLock.beside(out, "--out"):
        pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_second_dedup_run_on_a_state_is_refused(tmp_path: Path) -> None:
    """`nlsim dedup --state` while another run holds the state: exit status 1 (the run failed) and a clear
    message."""
    state = tmp_path / "state"
    proc = _start_holder(state)
    try:
        corpus = tmp_path / "c.csv"
        corpus.write_text("id,title\n1,a\n")
        cli = subprocess.run(
            [
                sys.executable,
                "-m",
                "nlsim",
                "dedup",
                "--corpus",
                str(corpus),
                "--state",
                str(state),
                "--out",
                str(tmp_path / "out"),
                "--threshold",
                "0.9",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).parents[1],
        )
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert cli.returncode == 1
    assert f"is locked by another run: pid {proc.pid}" in cli.stderr and "Wait for it to finish" in cli.stderr
