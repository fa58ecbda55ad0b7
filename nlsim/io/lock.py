"""A run lock for a folder (a daily run's state folder, a model store): one run at a time, and a killed
run never leaves it stuck.

The lock is a small JSON file (``lock.json``) naming its holder: process id, host name, the process's start
time (from ``/proc``, so a recycled pid is not mistaken for the holder) and the boot id. Taking the lock
happens under an ``fcntl.flock`` on a guard file, so two runs deciding at once cannot both win; the kernel
drops that flock when a process dies, so the guard itself can never stay stuck.

A second run while the holder is alive is refused with :class:`LockedError`, whose message names the
holder. A lock left by a process that is gone (killed, crashed, or the machine rebooted) is *stale*: it is
taken over, and the takeover is reported in :attr:`RunLock.message`. A lock held on another host cannot be
checked from here and is refused; remove ``lock.json`` by hand once that run is known to be dead.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with RunLock(folder) as lock:
    ...     try:
    ...         RunLock(folder).acquire()
    ...     except LockedError as err:
    ...         print("refused")
    refused
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from nlsim.errors import NlsimError
from nlsim.io.atomic import atomic_write_text

LOCK_NAME = "lock.json"
GUARD_NAME = ".lock.guard"


class LockedError(NlsimError):
    """Another live run holds the folder's lock."""


@dataclass(frozen=True)
class LockInfo:
    """Who holds a lock."""

    pid: int
    hostname: str
    started: str | None  # the process's start time in clock ticks since boot (``/proc/PID/stat`` field 22)
    boot_id: str | None
    acquired_at: str
    command: str = ""

    def describe(self) -> str:
        return (
            f"pid {self.pid} on host {self.hostname!r} "
            f"(lock taken {self.acquired_at}, command {self.command!r})"
        )


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def boot_id() -> str | None:
    """This machine's boot id (Linux), or None."""
    text = _read_text("/proc/sys/kernel/random/boot_id")
    return text.strip() if text else None


def process_start_time(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot, or None when it cannot be read."""
    text = _read_text(f"/proc/{pid}/stat")
    if not text:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None  # field 22 overall


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists (on this host)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def current_holder_info() -> LockInfo:
    """A :class:`LockInfo` describing this process."""
    return LockInfo(
        pid=os.getpid(),
        hostname=socket.gethostname(),
        started=process_start_time(os.getpid()),
        boot_id=boot_id(),
        acquired_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        command=" ".join(sys.argv)[:200],
    )


def holder_is_alive(info: LockInfo) -> tuple[bool, str]:
    """Whether the process named by ``info`` is still running, and why we think so.

    Only a holder on this host can be checked; one on another host counts as alive.
    """
    if info.hostname != socket.gethostname():
        return True, "held on another host, which cannot be checked from here"
    if info.boot_id and boot_id() and info.boot_id != boot_id():
        return False, "the machine has rebooted since"
    if not pid_alive(info.pid):
        return False, f"process {info.pid} no longer exists"
    now_started = process_start_time(info.pid)
    if info.started and now_started and info.started != now_started:
        return False, f"pid {info.pid} now belongs to another process (start time differs)"
    return True, "the process is running"


def read_lock(folder: str | Path) -> LockInfo | None:
    """The lock held on ``folder``, or None. An unreadable lock file counts as a stale holder (pid 0)."""
    return read_lock_file(Path(folder) / LOCK_NAME)


def read_lock_file(path: str | Path) -> LockInfo | None:
    """The lock recorded in the lock file ``path`` (``lock.json`` in a folder, or a lock beside an output,
    :meth:`RunLock.beside`), or None. An unreadable lock file counts as a stale holder (pid 0)."""
    text = _read_text(str(path))
    if text is None:
        return None
    try:
        data = json.loads(text)
        info = LockInfo(**{k: data.get(k) for k in LockInfo.__dataclass_fields__})
        if not isinstance(info.pid, int) or isinstance(info.pid, bool) or not isinstance(info.hostname, str):
            raise TypeError("not a lock record")
        return info
    except (ValueError, TypeError, AttributeError):  # not JSON, not an object, fields of other types
        return LockInfo(
            pid=0,
            hostname=socket.gethostname(),
            started=None,
            boot_id=None,
            acquired_at="?",
            command="(unreadable lock file)",
        )


def held_here(folder: str | Path) -> bool:
    """True when this process holds ``folder``'s lock (taken for a whole run, before the step that would
    otherwise take it for itself)."""
    held, me = read_lock(folder), current_holder_info()
    return held is not None and (held.pid, held.hostname, held.started) == (me.pid, me.hostname, me.started)


@contextlib.contextmanager
def _guard(folder: Path, beside: bool = False) -> Iterator[None]:
    """The flock two runs taking one lock decide under: the folder's guard file, or (``beside``: a lock
    beside an output, in a folder the run does not own) the folder itself, so that nothing is left there."""
    fd = (
        os.open(folder, os.O_RDONLY)
        if beside
        else os.open(folder / GUARD_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class RunLock:
    """Exclusive lock on a folder for the length of one run; ``what`` names the folder in messages
    (``"state folder"``, ``"model store"``).

    ``acquire()`` raises :class:`LockedError` when a live run holds it. After a successful acquire,
    :attr:`message` says whether a stale lock was taken over (None otherwise).
    """

    def __init__(self, folder: str | Path, what: str = "state folder") -> None:
        self.folder = Path(folder)
        self.what = what
        self.path = self.folder / LOCK_NAME
        self.held = self.folder  # what the messages name as locked
        self.is_beside = False
        self.info: LockInfo | None = None
        self.message: str | None = None

    @classmethod
    def beside(cls, target: str | Path, what: str) -> RunLock:
        """A lock on ``target`` kept beside it, ``TARGET.lock`` in its parent folder, for an output that is
        replaced whole (built beside it and renamed into place), where a lock inside it would go with the
        folder it replaces. Its guard is the parent folder's own flock: the lock leaves nothing behind.

        Example:
            >>> import tempfile, pathlib
            >>> out = pathlib.Path(tempfile.mkdtemp()) / "model"
            >>> with RunLock.beside(out, "--out") as lock:
            ...     print(lock.path.name, out.exists())
            model.lock False
            >>> sorted(p.name for p in out.parent.iterdir())
            []
        """
        target = Path(target)
        lock = cls(target.parent, what)
        lock.path = target.parent / f"{target.name}.lock"
        lock.held, lock.is_beside = target, True
        return lock

    def acquire(self) -> RunLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        me = current_holder_info()
        with _guard(self.folder, self.is_beside):
            held = read_lock_file(self.path)
            if held is not None:
                if held.pid == me.pid and held.hostname == me.hostname and held.started == me.started:
                    raise LockedError(f"{self.path}: this process already holds the lock")
                alive, why = holder_is_alive(held)
                if alive:
                    raise LockedError(
                        f"{self.what} {self.held} is locked by another run: {held.describe()}; {why}. "
                        f"Wait for it to finish. If that run is known to be dead, delete {self.path}."
                    )
                self.message = f"took over a stale lock on {self.held} from {held.describe()}: {why}"
            atomic_write_text(self.path, json.dumps(asdict(me), indent=1))
        self.info = me
        return self

    def release(self) -> None:
        """Remove the lock file if this process still holds it."""
        if self.info is None:
            return
        with _guard(self.folder, self.is_beside):
            held = read_lock_file(self.path)
            if held is not None and held.pid == self.info.pid and held.started == self.info.started:
                self.path.unlink(missing_ok=True)
        self.info = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
