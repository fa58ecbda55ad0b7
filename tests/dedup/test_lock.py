"""The run lock: refusal while a holder lives, takeover after it dies, no pid-reuse confusion."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nlsim.io.lock import LOCK_NAME, LockedError, RunLock, process_start_time, read_lock

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


@pytest.mark.parametrize("text", ["[]", "null", '{"pid": "1"}', '{"pid": true, "hostname": "h"}', "{", ""])
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
