"""Atomic writes leave no litter: what a killed writer left beside its target is removed by the next
writer of that target, never what a live writer is still writing, and never a file nlsim did not name."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nlsim.io.atomic import (
    apply_umask,
    atomic_dir,
    atomic_save_npy,
    atomic_write_bytes,
    atomic_write_text,
    held,
    leftovers,
    naming,
    publish_files,
    readable_sha256,
    sweep_leftovers,
    why_not_kept,
)


def _killed_dir(parent: Path, name: str) -> Path:
    """What ``atomic_dir`` leaves when its process is killed before the rename: a full hidden folder."""
    tmp = parent / f".{name}.tmp-k3x9a2b7"
    (tmp / "weights").mkdir(parents=True)
    (tmp / "weights" / "model.safetensors").write_bytes(b"\0" * 4096)
    return tmp


def test_a_killed_folder_write_is_swept_by_the_next_write_of_that_folder(tmp_path: Path) -> None:
    killed = _killed_dir(tmp_path, "model")
    other = _killed_dir(tmp_path, "another")  # another target's: not this writer's to remove
    mine = tmp_path / ".model.notes"  # not a name nlsim gives
    mine.write_text("user file")
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "a.txt").write_text("new")
    assert not killed.exists()
    assert other.is_dir() and mine.read_text() == "user file"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".another.tmp-k3x9a2b7", ".model.notes", "model"]


def test_a_live_writers_temporary_is_spared(tmp_path: Path) -> None:
    live = _killed_dir(tmp_path, "model")
    with held(live):  # as a writer still running holds its temporary folder
        with atomic_dir(tmp_path / "model") as tmp:
            (tmp / "a.txt").write_text("new")
        assert live.is_dir()
    with atomic_dir(tmp_path / "model") as tmp:  # once that writer is gone, the next write sweeps it
        (tmp / "a.txt").write_text("newer")
    assert not live.exists()


def test_a_killed_file_write_is_swept_by_the_next_write_of_that_file(tmp_path: Path) -> None:
    killed = tmp_path / ".CURRENT.json.k3x_9a2b.tmp"
    killed.write_text("{")
    npy = tmp_path / ".emb.npy.ab12cd34.tmp.npy"
    npy.write_bytes(b"half")
    atomic_write_text(tmp_path / "CURRENT.json", "{}")
    atomic_save_npy(tmp_path / "emb.npy", np.zeros(3))
    assert sorted(os.listdir(tmp_path)) == ["CURRENT.json", "emb.npy"]


def test_a_write_that_runs_out_of_space_names_its_file_and_leaves_the_old_one(tmp_path: Path) -> None:
    """A writer's OSError that names no file (its write failed once the file was open: the disk filled)
    names the file being written (the quarantine file, a state's table), and the file there is unchanged
    with nothing left beside it."""
    import errno

    import pytest

    from nlsim.io.atomic import atomic_path

    target = tmp_path / "bad_rows.csv"
    target.write_text("row,field,reason\n")
    with pytest.raises(OSError, match="No space left on device") as info:
        with atomic_path(target) as tmp:
            tmp.write_text("row,field,reason\n1,title,empty text\n")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert (info.value.errno, info.value.filename) == (errno.ENOSPC, str(target))
    assert target.read_text() == "row,field,reason\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bad_rows.csv"]


def test_a_folder_at_the_name_of_a_file_written_is_named_not_the_temporary_file(tmp_path: Path) -> None:
    """A folder where nlsim writes a file (a curve's ``lock.json`` made a folder by hand) stopped the run
    with '.lock.json.x1y2.tmp: Is a directory', naming a temporary file that is gone by then. The error
    names the file's own path and says to move the folder away; the folder and its files are left as
    they were, and no temporary file is."""
    import pytest

    target = tmp_path / "lock.json"
    target.mkdir()
    (target / "mine.txt").write_text("kept", encoding="utf-8")
    with pytest.raises(IsADirectoryError) as raised:
        atomic_write_text(target, "{}")
    assert raised.value.filename == str(target)
    assert "move it away" in str(raised.value.strerror)
    assert (target / "mine.txt").read_text(encoding="utf-8") == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock.json"]


def _flushed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """What a file write, a folder write and a publication of files flush to disk: each flushed path."""
    flushed: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    atomic_write_text(tmp_path / "a.txt", "a")
    with atomic_dir(tmp_path / "folder") as tmp:
        (tmp / "b.txt").write_text("b")
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / "c.txt").write_text("c")
    (tmp_path / "out").mkdir()
    publish_files(tmp_path / "staging", tmp_path / "out", ["c.txt"])
    assert (tmp_path / "a.txt").read_text() + (tmp_path / "folder" / "b.txt").read_text() == "a" + "b"
    assert (tmp_path / "out" / "c.txt").read_text() == "c"
    return flushed


def test_what_is_written_is_flushed_to_disk_before_it_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default (``NLSIM_FSYNC`` unset or ``on``) every file is flushed, and the folder it is renamed in."""
    for value in (None, "on"):
        if value is None:
            monkeypatch.delenv("NLSIM_FSYNC", raising=False)
        else:
            monkeypatch.setenv("NLSIM_FSYNC", value)
        where = tmp_path / f"fsync-{value}"
        where.mkdir()
        flushed = [Path(p).name for p in _flushed(monkeypatch, where)]
        assert any(name.startswith(".a.txt.") for name in flushed), flushed  # the file, before its rename
        assert "b.txt" in flushed and "c.txt" in flushed, flushed
        assert where.name in flushed and "out" in flushed, flushed  # the folders the renames were made in
        monkeypatch.undo()


def test_nlsim_fsync_off_leaves_the_flushing_to_the_system_and_still_writes_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_FSYNC", "OFF")
    assert _flushed(monkeypatch, tmp_path) == []
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["a.txt", "folder", "out", "staging"]  # no temporaries


@pytest.fixture
def umask_027() -> Iterator[None]:
    """The process's umask set to 027 (files 0640, folders 0750), as a server's worker may run."""
    from nlsim.io import atomic

    saved = os.umask(0o027)
    atomic._umask.cache_clear()
    try:
        yield
    finally:
        os.umask(saved)
        atomic._umask.cache_clear()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_what_is_written_takes_the_umasks_permissions_not_a_temporary_files(
    tmp_path: Path, umask_027: None
) -> None:
    """Files get 0666 less the umask, folders and executable files 0777 less it, whatever mode their writer
    (mkstemp, safetensors) gave them; a file written with an explicit mode keeps that mode."""
    atomic_write_text(tmp_path / "a.txt", "a")
    atomic_write_bytes(tmp_path / "private.bin", b"p", mode=0o600)
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "sub").mkdir(mode=0o700)
        (tmp / "sub" / "weights").write_bytes(b"w")
        os.chmod(tmp / "sub" / "weights", 0o600)
        (tmp / "run.sh").write_text("#!/bin/sh\n")
        os.chmod(tmp / "run.sh", 0o700)
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / "c.txt").write_text("c")
    os.chmod(tmp_path / "staging" / "c.txt", 0o600)
    (tmp_path / "out").mkdir()
    publish_files(tmp_path / "staging", tmp_path / "out", ["c.txt"])
    (tmp_path / "lone.txt").write_text("l")
    os.chmod(tmp_path / "lone.txt", 0o600)
    apply_umask(tmp_path / "lone.txt")
    modes = {str(p.relative_to(tmp_path)): oct(_mode(p)) for p in tmp_path.rglob("*") if p.name != "staging"}
    assert modes == {
        "a.txt": "0o640",
        "private.bin": "0o600",
        "model": "0o750",
        "model/sub": "0o750",
        "model/sub/weights": "0o640",
        "model/run.sh": "0o750",
        "out": oct(_mode(tmp_path / "out")),  # made by the test, not by nlsim
        "out/c.txt": "0o640",
        "lone.txt": "0o640",
    }


def test_only_the_names_nlsim_gives_its_temporaries_count_as_leftovers(tmp_path: Path) -> None:
    """A killed writer's ``.NAME.tmp-XXXXXXXX``, ``.NAME.old-XXXXXXXX`` and ``.NAME.XXXXXXXX.tmp[.suffix]``
    are leftovers; a user's file or link of a like name is not, and is never removed."""
    ours = [
        ".model.tmp-k3x9a2b7",
        ".model.old-0123abcd",
        ".emb.npy.ab12cd34.tmp.npy",
        ".CURRENT.json.k3x_9a2b.tmp",
    ]
    theirs = [".model.tmp-mine", ".model.tmp-k3x9a2b7.bak", ".model.old-backup", ".model.old-0123abcd~"]
    for name in ours + theirs:
        (tmp_path / name).write_text("x")
    (tmp_path / "target").mkdir()
    (tmp_path / ".model.tmp-abcdefgh").symlink_to(tmp_path / "target")  # a link is never a writer's temporary
    assert [p.name for p in leftovers(tmp_path)] == sorted(ours)


def test_a_write_sweeps_its_own_targets_leftovers_only(tmp_path: Path) -> None:
    """Writing ``model`` removes what a killed writer of ``model`` left, not what one of ``model2`` left."""
    for name in (".model.tmp-k3x9a2b7", ".model2.tmp-k3x9a2b7", ".model2.k3x_9a2b.tmp"):
        (tmp_path / name).mkdir()
    assert sweep_leftovers(tmp_path, "model") == [tmp_path / ".model.tmp-k3x9a2b7"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model2.k3x_9a2b.tmp", ".model2.tmp-k3x9a2b7"]


def test_an_error_that_names_its_file_is_left_as_it_is() -> None:
    """``naming`` adds the folder and what was being done only to an error that names no file; one that
    names its file goes up unchanged, and ``why_not_kept`` reads the system's words under either."""
    error = FileNotFoundError(errno.ENOENT, "No such file or directory", "cache/emb.npy")
    with pytest.raises(FileNotFoundError) as raised:
        with naming("reports", "writing the report"):
            raise error
    assert raised.value is error
    with pytest.raises(OSError) as raised:
        with naming("reports", "writing the report"):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert raised.value.strerror == "No space left on device (writing the report)"
    assert why_not_kept(raised.value) == "No space left on device"


def test_each_write_flushes_the_folder_its_rename_was_made_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_FSYNC", "on")
    flushed: list[str] = []

    def fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(os, "fsync", fsync)
    atomic_write_text(tmp_path / "file_parent" / "a.txt", "a")
    with atomic_dir(tmp_path / "dir_parent" / "folder") as tmp:
        (tmp / "b.txt").write_text("b")
    assert str(tmp_path / "file_parent") in flushed and str(tmp_path / "dir_parent") in flushed, flushed


def test_a_folder_written_again_replaces_the_old_one_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    for text in ("old", "new"):
        with atomic_dir(tmp_path / "model") as tmp:
            (tmp / f"{text}.txt").write_text(text)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert [p.name for p in (tmp_path / "model").iterdir()] == ["new.txt"]
    (tmp_path / "staging" / "index").mkdir(parents=True)
    (tmp_path / "staging" / "index" / "new.html").write_text("new")
    (tmp_path / "out" / "index").mkdir(parents=True)
    (tmp_path / "out" / "index" / "old.html").write_text("old")
    publish_files(tmp_path / "staging", tmp_path / "out", ["index"])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["index"]
    assert [p.name for p in (tmp_path / "out" / "index").iterdir()] == ["new.html"]


def test_a_link_at_a_folders_name_is_replaced_and_what_it_points_to_kept(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "mine.txt").write_text("kept")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "model").symlink_to(tmp_path / "elsewhere")
    with atomic_dir(tmp_path / "out" / "model") as tmp:
        (tmp / "new.txt").write_text("new")
    model = tmp_path / "out" / "model"
    assert not model.is_symlink() and [p.name for p in model.iterdir()] == ["new.txt"]
    assert (tmp_path / "elsewhere" / "mine.txt").read_text() == "kept"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model"]
    model.rename(tmp_path / "out" / "moved")
    model.symlink_to(tmp_path / "gone")  # a link to nothing is replaced too
    with atomic_dir(model) as tmp:
        (tmp / "newer.txt").write_text("newer")
    assert not model.is_symlink() and [p.name for p in model.iterdir()] == ["newer.txt"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model", "moved"]


def test_a_failed_folder_write_leaves_the_old_folder_and_no_temporary(tmp_path: Path) -> None:
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "old.txt").write_text("old")
    with pytest.raises(RuntimeError, match="stopped"):
        with atomic_dir(tmp_path / "model") as tmp:
            (tmp / "new.txt").write_text("new")
            raise RuntimeError("stopped")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert [p.name for p in (tmp_path / "model").iterdir()] == ["old.txt"]


def test_the_last_file_published_goes_in_last_whatever_its_place_in_the_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run.json`` holds the other files' hashes: a reader that sees it must see them all."""
    from nlsim.io import atomic

    staging, out = tmp_path / "staging", tmp_path / "out"
    staging.mkdir()
    out.mkdir()
    for name in ("run.json", "a.html", "b.html"):
        (staging / name).write_text(name)
    seen: list[list[str]] = []
    monkeypatch.setattr(atomic, "fault_point", lambda stage: seen.append(sorted(os.listdir(out))))
    publish_files(staging, out, ["run.json", "a.html", "b.html"], last="run.json")
    assert seen == [["a.html"], ["a.html", "b.html"], ["a.html", "b.html", "run.json"]]


def test_the_hash_of_what_is_no_readable_file_is_none(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    assert readable_sha256(tmp_path / "a.txt") == hashlib.sha256(b"abc").hexdigest()
    assert readable_sha256(tmp_path / "missing.txt") is None
    assert readable_sha256(tmp_path) is None  # a folder
