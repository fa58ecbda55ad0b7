"""Converted-model cache under ``$NLSIM_HOME/models``: atomic builds, file manifests, verification.

A converted model folder is built in a temporary folder beside its final place, a ``manifest.json``
(size and SHA-256 of every file, :mod:`nlsim.io.manifest`) is written last, and the folder is renamed into
place. Before use,
:func:`verify_folder` checks every file against the manifest; :func:`ensure_model_folder` rebuilds a
folder that is missing, incomplete or corrupt.

Example:
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> def build(tmp):
    ...     (tmp / "a.txt").write_text("hi")
    >>> folder = ensure_model_folder(root / "m", build, source="test")
    >>> verify_folder(folder)
    True
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nlsim.environment import check_home
from nlsim.io.atomic import atomic_dir, atomic_write_text, file_sha256
from nlsim.io.manifest import file_problem, read_manifest, write_manifest
from nlsim.io.records import read_json_object

log = logging.getLogger(__name__)
STAMPS = "file-stamps.json"
STAMPS_FORMAT = 1
STAMPS_KEEP = 4000
SETTLED_NS = 2_000_000_000
"""A file's hash is remembered only when it was last changed this long before it was hashed: a change made
afterwards then always moves its modification or change time (file-system clocks tick coarsely)."""


def quiet_transformers() -> None:
    """Turn transformers' own progress bars off (saving a model shows one): in a log they are floods of
    carriage returns, and nlsim shows its own progress."""
    # deferred: heavy or optional, loaded only when needed
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def nlsim_home() -> Path:
    """``$NLSIM_HOME``, default ``~/.cache/nlsim``; one that cannot be a folder is a
    :class:`~nlsim.errors.ConfigError` naming the variable (:func:`nlsim.environment.check_home`), for the
    library's callers too, which no command line checked first (it was '.../models: Not a directory')."""
    return check_home()


def models_dir() -> Path:
    """Folder of converted models: ``$NLSIM_HOME/models``."""
    return nlsim_home() / "models"


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


_stamp_memory: dict[str, dict[str, Any]] = {}


def _stamps_file() -> Path:
    return nlsim_home() / STAMPS


def _read_stamps(path: Path) -> dict[str, Any]:
    """The entries :data:`STAMPS` remembers (each a dict of its ``stamps`` and ``value``); none where the
    file is missing, of another format or damaged (not JSON, cut short, not an object): a cache, written
    again whole at the next value remembered. A damaged entry alone is left out.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / STAMPS
        >>> _ = path.write_text('{"format": 1, "entries": {"a": {"stamps": [], "value": 1}, "b": 5}}')
        >>> _read_stamps(path)
        {'a': {'stamps': [], 'value': 1}}
        >>> _ = path.write_text("[]")
        >>> _read_stamps(path)
        {}
    """
    try:
        data = read_json_object(path)
    except (OSError, ValueError):
        return {}
    if data.get("format") != STAMPS_FORMAT:
        return {}
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}
    return {k: e for k, e in entries.items() if isinstance(e, dict) and {"stamps", "value"} <= e.keys()}


def remembered(key: str, stat_paths: list[Path], compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered under ``key`` while the files ``stat_paths`` keep their stat stamps (size,
    modification and change times, inode, device) in ``$NLSIM_HOME/file-stamps.json``.

    Any write to a file moves its change time (which no program can set back), so a changed file is
    always recomputed; a value is only remembered when every file was settled (last changed
    :data:`SETTLED_NS` before), so a write within the file system's clock tick cannot hide. What this does
    not see is a disk corrupting bytes on its own, without any write: only a full hash would.
    """
    try:
        stamps = [[str(p), _stamp(p.stat())] for p in stat_paths]
    except OSError:
        return compute()
    store = _stamps_file()
    entries = _stamp_memory.get(str(store))
    if entries is None:
        entries = _stamp_memory[str(store)] = _read_stamps(store)
    hit = entries.get(key)
    if hit is not None and hit.get("stamps") == stamps:
        return hit["value"]
    value = compute()
    now = time.time_ns()
    if all(now - max(s[1][1], s[1][2]) > SETTLED_NS for s in stamps):
        entries[key] = {"stamps": stamps, "value": value}
        with contextlib.suppress(OSError):
            on_disk = _read_stamps(store)  # another process may have remembered other files meanwhile
            on_disk.update(entries)
            keep = dict(list(on_disk.items())[-STAMPS_KEEP:])
            store.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(store, json.dumps({"format": STAMPS_FORMAT, "entries": keep}) + "\n")
            entries.clear()
            entries.update(keep)
    return value


def known_sha256(path: str | Path) -> str:
    """The SHA-256 of a file, computed once and :func:`remembered` while the file is unchanged (model
    folders and ONNX exports are checked at every load: hashing ~1 GB each time was most of a run's start)."""
    p = Path(path).resolve()
    return remembered(f"sha256:{p}", [p], lambda: file_sha256(p))


def verify_folder(folder: str | Path, *, source: str | None = None, hashes: bool = True) -> bool:
    """True when every file in the manifest exists with its size (and SHA-256 when ``hashes``).

    ``source`` (e.g. the hash of the file a model was converted from) must match the manifest's when
    given, so a new package version triggers a rebuild.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    if not manifest or not manifest.get("files"):
        log.info("%s: no usable manifest", folder)
        return False
    if source is not None and manifest.get("source") != source:
        log.warning("%s: built from %s, now the source is %s", folder, manifest.get("source"), source)
        return False
    problem = file_problem(folder, manifest, hashes=hashes, hash_file=known_sha256)
    if problem is not None:
        log.warning("%s", problem)
        return False
    return True


def ensure_model_folder(
    folder: str | Path,
    build: Callable[[Path], None],
    *,
    source: str,
    extra: dict[str, Any] | None = None,
    rebuild: bool = False,
) -> Path:
    """Return ``folder``, verified; (re)build it with ``build(tmp_folder)`` when missing or corrupt.

    ``build`` writes the model files into the empty temporary folder it is given; the manifest is added
    here, then the folder replaces ``folder`` whole (:func:`nlsim.io.atomic.atomic_dir`).
    """
    folder = Path(folder)
    if not rebuild and folder.is_dir() and verify_folder(folder, source=source):
        return folder
    if folder.exists():
        log.warning("%s: missing, incomplete or corrupt; rebuilding", folder)
    with atomic_dir(folder) as tmp:
        build(tmp)
        write_manifest(tmp, {"source": source, **(extra or {})})
    return folder
