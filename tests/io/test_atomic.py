"""Atomic writes leave no litter: what a killed writer left beside its target is removed by the next
writer of that target, never what a live writer is still writing, and never a file nlsim did not name."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from nlsim.io.atomic import atomic_dir, atomic_save_npy, atomic_write_text, held, publish_files


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
