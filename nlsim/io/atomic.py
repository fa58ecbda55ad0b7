"""Atomic writes: a file or a whole folder is built beside its target, then renamed into place.

A reader never sees a half-written file or folder, and a failed or killed writer leaves the previous one
intact. Files and folders get the permissions the process's umask gives (``0o666``/``0o777`` minus the
umask), not the private ``0o600`` of a bare temporary file, so a worker or web server running as another
user can read what nlsim wrote.

Three primitives, used by every writer in nlsim:

* :func:`atomic_path` for one file (and the helpers built on it: text, bytes, ``.npy``, Parquet);
* :func:`atomic_dir` for one folder written whole (a model folder, a state generation, a report run);
* :func:`publish_files` for a set of files moved from a staging folder into a folder that also holds
  other things (the batch report: ``run.json`` goes last and holds the others' SHA-256).

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> atomic_write_text(d / "a.txt", "hello")
    >>> (d / "a.txt").read_text()
    'hello'
    >>> with atomic_dir(d / "folder") as tmp:
    ...     _ = (tmp / "b.txt").write_text("world")
    >>> sorted(p.name for p in (d / "folder").iterdir())
    ['b.txt']
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import stat
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from nlsim.environment import flush_to_disk
from nlsim.faults import fault_point

if TYPE_CHECKING:  # pandas is not needed to write files; `nlsim --help` stays fast without it
    import pandas as pd


@cache
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """Permissions of a new file under the current umask (``0o644`` with the usual ``022``)."""
    return 0o666 & ~_umask()


def dir_mode() -> int:
    """Permissions of a new folder under the current umask (``0o755`` with the usual ``022``)."""
    return 0o777 & ~_umask()


def fsync_file(path: str | Path) -> None:
    """Flush a file's contents to disk, unless ``NLSIM_FSYNC=off``
    (:func:`nlsim.environment.flush_to_disk`)."""
    if flush_to_disk():
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())


def fsync_dir(folder: str | Path) -> None:
    """Flush a folder's entries to disk (a rename is durable once its folder is synced), unless
    ``NLSIM_FSYNC=off``."""
    if not flush_to_disk():
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_tree(root: str | Path) -> None:
    """Flush every file and folder below ``root``, unless ``NLSIM_FSYNC=off``."""
    if not flush_to_disk():
        return
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            fsync_file(Path(dirpath) / name)
        fsync_dir(dirpath)


def apply_umask(root: str | Path) -> None:
    """Give every file and folder below ``root`` (``root`` included) the umask's permissions.

    Some writers ignore the umask (safetensors creates its weight files ``0o600``); a folder built whole
    is made readable as the umask says before it is renamed into place. Executable files stay executable.
    """
    root = Path(root)
    if root.is_file():
        _set_mode(root, file_mode())
        return
    _set_mode(root, dir_mode())
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            _set_mode(Path(dirpath) / name, dir_mode())
        for name in filenames:
            p = Path(dirpath) / name
            _set_mode(p, dir_mode() if os.stat(p, follow_symlinks=False).st_mode & 0o111 else file_mode())


def _set_mode(path: Path, mode: int) -> None:
    st = os.stat(path, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)


def make_temp_dir(parent: str | Path, prefix: str) -> Path:
    """A new, empty folder in ``parent`` named ``prefix`` + a random part, with umask permissions."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, dir_mode())
    return path


LEFTOVER = re.compile(r"^\..+\.(tmp-[a-z0-9_]{8}|old-[0-9a-f]{8}|[a-z0-9_]{8}\.tmp(\..+)?)$")
"""The names the writers below give their temporary and superseded files and folders (``.NAME.tmp-XXXXXXXX``,
``.NAME.old-XXXXXXXX``, ``.NAME.XXXXXXXX.tmp[.suffix]``): what a killed writer leaves behind."""


def leftovers(folder: str | Path) -> list[Path]:
    """What killed writers of this module left in ``folder`` (see :data:`LEFTOVER`), oldest name first.
    Only a folder's single writer may remove them (under its lock): a live writer's look the same.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / ".CURRENT.json.k3x_9a2b.tmp").write_text("{")
    >>> _ = (d / "CURRENT.json").write_text("{}")
    >>> [p.name for p in leftovers(d)]
    ['.CURRENT.json.k3x_9a2b.tmp']
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if LEFTOVER.match(p.name) and not p.is_symlink())


@contextlib.contextmanager
def held(path: str | Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the file or folder ``path`` while its writer lives: the kernel drops
    it when the writer ends, killed or not, so :func:`sweep_leftovers` tells a live writer's temporary from
    a killed one's."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def sweep_leftovers(folder: str | Path, name: str) -> list[Path]:
    """Remove what killed writers of ``folder / name`` left beside it (:data:`LEFTOVER` names that begin
    ``.NAME.``) and no live writer holds (:func:`held`); returns what was removed. Only names this module
    gives are touched, so nothing a user wrote is."""
    removed = []
    for path in leftovers(folder):
        if not path.name.startswith(f".{name}."):
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live writer holds it
            os.close(fd)
            continue
        try:
            remove_tree(path) if path.is_dir() else path.unlink(missing_ok=True)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def naming(folder: str | Path, doing: str) -> Iterator[None]:
    """An :class:`OSError` of the block that names no file (a write into a file already open that failed:
    the disk filled, a quota was reached; numpy's short write, '23040 requested and 4064 written', which has
    no error number) names ``folder``, and says what was being done (``doing``), so
    that the user knows which disk to look at; one that names its file is left as it is.

    Example:
        >>> import errno
        >>> try:
        ...     with naming("reports/daily", "writing the report"):
        ...         raise OSError(errno.ENOSPC, "No space left on device")
        ... except OSError as exc:
        ...     print(exc.filename, "|", exc.strerror)
        reports/daily | No space left on device (writing the report)
    """
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, f"{exc.strerror or exc} ({doing})", str(folder)) from exc


def why_not_kept(exc: OSError) -> str:
    """What stopped a write, in one line, as the system said it (before :func:`naming` added to it).

    >>> why_not_kept(OSError(28, "No space left on device", "cache.npy")), why_not_kept(OSError("short"))
    ('No space left on device', 'short')
    """
    cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
    return " ".join(str(cause.strerror or cause).split())


def remove_tree(path: str | Path) -> None:
    """Delete a folder nlsim made (a temporary or superseded one); a missing one is fine."""
    shutil.rmtree(path, ignore_errors=True)


def _replace(tmp: Path, target: Path) -> None:
    """Move ``tmp`` over ``target``. A folder at ``target``'s name is an error that names ``target`` and
    says to move the folder away (the system's names the temporary file, gone by the time it is read)."""
    try:
        os.replace(tmp, target)
    except IsADirectoryError as exc:
        raise IsADirectoryError(
            exc.errno,
            f"{exc.strerror}: a folder where nlsim writes a file; move it away and rerun",
            str(target),
        ) from exc


@contextlib.contextmanager
def atomic_path(path: str | Path, *, suffix: str = "", mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success move it over ``path`` atomically.

    The temporary name ends with ``suffix`` (writers such as pyarrow pick the format from it). A file gets
    the permissions ``mode`` (default: the umask's, :func:`file_mode`) before it is moved. On any
    exception the temporary file is removed and ``path`` is untouched; an :class:`OSError` that names no
    file (the disk filled) names ``path`` (:func:`naming`).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_leftovers(target.parent, target.name)  # what a killed writer of this file left
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{suffix}", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with naming(target, "not written; the file there, if any, is left as it was"):
            fcntl.flock(fd, fcntl.LOCK_EX)  # held until this writer ends (sweep_leftovers spares it)
            yield tmp
            if tmp.is_file():
                os.chmod(tmp, file_mode() if mode is None else mode)
                fsync_file(tmp)
            _replace(tmp, target)
            fsync_dir(target.parent)
    except BaseException:
        if tmp.is_dir():
            remove_tree(tmp)
        else:
            tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; on success it replaces ``path`` as a whole.

    An existing ``path`` is first renamed aside, then the new folder is renamed into place and the old one
    deleted: a reader sees the old folder or the new one, never a mix. The caller decides beforehand
    whether ``path`` may be replaced (see :mod:`nlsim.io.ownership`); on any exception the temporary
    folder is removed and ``path`` is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_leftovers(target.parent, target.name)  # what a killed writer of this folder left (a model: 100s MB)
    tmp = make_temp_dir(target.parent, f".{target.name}.tmp-")
    hold = held(tmp)
    hold.__enter__()  # held until this writer ends (sweep_leftovers spares it)
    try:
        yield tmp
        apply_umask(tmp)
        fsync_tree(tmp)
        old = None
        if target.exists() or target.is_symlink():
            old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
            os.replace(target, old)
        os.replace(tmp, target)
        fsync_dir(target.parent)
        if old is not None:
            remove_tree(old) if old.is_dir() and not old.is_symlink() else old.unlink(missing_ok=True)
    except BaseException:
        remove_tree(tmp)
        raise
    finally:
        hold.__exit__(None, None, None)


def publish_files(
    staging: str | Path, out: str | Path, names: Sequence[str], last: str | None = None
) -> None:
    """Move ``names`` (files or folders) from ``staging`` into ``out``, each by one rename, ``last`` last.

    A folder is swapped whole (the old one renamed aside, then deleted). A reader that checks ``last``
    (``run.json``, holding the others' hashes) therefore never takes a torn set for a complete one.
    """
    staging, out = Path(staging), Path(out)
    for name in [n for n in names if n != last] + ([last] if last else []):
        src, dst = staging / name, out / name
        apply_umask(src)
        if src.is_dir():
            fsync_tree(src)
            old = None
            if dst.exists():
                old = out / f".{name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(dst, old)
            os.replace(src, dst)
            if old is not None:
                remove_tree(old)
        else:
            fsync_file(src)
            os.replace(src, dst)
        fault_point("report-move")
    fsync_dir(out)


def atomic_write_bytes(path: str | Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically (with the permissions ``mode``: default the umask's)."""
    with atomic_path(path, mode=mode) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_save_npy(path: str | Path, array: np.ndarray) -> None:
    """Save a NumPy array as ``.npy`` atomically."""
    with atomic_path(path, suffix=".npy") as tmp:
        np.save(tmp, array)


def atomic_write_parquet(frame: pd.DataFrame, path: str | Path) -> None:
    """Write a DataFrame as Parquet atomically (pyarrow, no index)."""
    with atomic_path(path, suffix=".parquet") as tmp:
        frame.to_parquet(tmp, index=False, engine="pyarrow")


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def readable_sha256(path: str | Path) -> str | None:
    """Hex SHA-256 of the file at ``path``, ``None`` when it is no file that can be read."""
    try:
        return file_sha256(path)
    except OSError:
        return None
