"""A folder's file manifest: the size and SHA-256 of every file, written when nlsim saves the folder and
checked when it is loaded.

A model folder (an encoder with its tokenizer, config, calibration, reranker and whatever files a
cross-encoder writes) is used whole: a missing ``tokenizer.json`` or a truncated reranker does not always
stop transformers, it may silently compute something else. So :func:`saved_folder` writes the folder
beside its target, adds the ownership marker and ``manifest.json`` (listing every file below it, by
relative path, whatever its name), and renames it into place (:func:`nlsim.io.atomic.atomic_dir`);
:func:`check_files` compares the files with the manifest before use. A file added later (a model store's
``store.json``) is not listed and not checked; a listed file that is missing, of another size or of
another SHA-256 is a :class:`nlsim.errors.StateError` naming it.

The converted registry models (:mod:`nlsim.io.model_cache`) carry the same manifest.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with saved_folder(d / "m", "model") as tmp:
    ...     _ = (tmp / "tokenizer.json").write_text("{}")
    >>> sorted(read_manifest(d / "m")["files"])
    ['.nlsim.json', 'tokenizer.json']
    >>> check_files(d / "m", read_manifest(d / "m"))
    >>> (d / "m" / "tokenizer.json").unlink()
    >>> check_files(d / "m", read_manifest(d / "m"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nlsim.errors.StateError: .../m/tokenizer.json: missing (listed in manifest.json when nlsim saved .../m)...
    >>> bad_file(d / "m", read_manifest(d / "m")).short()
    'missing: tokenizer.json'
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlsim.errors import StateError
from nlsim.faults import fault_point
from nlsim.io.atomic import atomic_dir, file_sha256
from nlsim.io.ownership import write_marker
from nlsim.io.records import read_json_object

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1


def write_manifest(folder: str | Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``folder/manifest.json``: size and SHA-256 of every file below ``folder`` (``extra`` keys
    added); returns it."""
    folder = Path(folder)
    files = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            files[p.relative_to(folder).as_posix()] = {"size": p.stat().st_size, "sha256": file_sha256(p)}
    manifest = {"format": MANIFEST_FORMAT, "files": files, **(extra or {})}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The folder's manifest; ``None`` when it is missing, unreadable or not an nlsim manifest."""
    try:
        data = read_json_object(Path(folder) / MANIFEST)
    except (OSError, ValueError):
        return None
    if data.get("format") != MANIFEST_FORMAT:
        return None
    files = data.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("size"), int) and isinstance(v.get("sha256"), str)
        for v in files.values()
    ):
        return None
    return data


@dataclass(frozen=True)
class BadFile:
    """A file a folder's manifest lists that is missing or differs from it (:func:`bad_file`)."""

    folder: Path
    rel: str
    """Its path in the folder, as the manifest lists it."""
    size: int | None
    """Its size now (``None``: missing)."""
    recorded: int
    """The size the manifest recorded."""

    def describe(self) -> str:
        """What is wrong, naming the file and the manifest (:func:`file_problem`'s words)."""
        path, where = self.folder / self.rel, f"{MANIFEST} when nlsim saved {self.folder}"
        if self.size is None:
            return f"{path}: missing (listed in {where})"
        if self.size != self.recorded:
            return (
                f"{path}: {self.size:,} bytes, not the {self.recorded:,} recorded with its SHA-256 in "
                f"{where} (truncated or altered)"
            )
        return f"{path}: its SHA-256 differs from the one recorded in {where} (corrupt or altered)"

    def short(self) -> str:
        """In a few words, by the file's path in the folder: ``missing: tokenizer.json``, ``incomplete:
        model.safetensors (1,024 of 90,868,376 bytes)``, ``altered: config.json`` (a larger file, another
        SHA-256)."""
        if self.size is None:
            return f"missing: {self.rel}"
        if self.size < self.recorded:
            return f"incomplete: {self.rel} ({self.size:,} of {self.recorded:,} bytes)"
        return f"altered: {self.rel}"


def bad_file(
    folder: str | Path,
    manifest: dict[str, Any],
    *,
    under: str = "",
    hashes: bool = True,
    hash_file: Callable[[Path], str] = file_sha256,
) -> BadFile | None:
    """The first listed file (below ``under``, a relative folder such as ``"reranker/"``) that is missing or
    differs from the manifest; ``None`` when every one matches.

    ``hashes=False`` compares sizes only; ``hash_file`` computes a file's SHA-256 (a cached one may be
    given, see :func:`nlsim.io.model_cache.known_sha256`).
    """
    folder = Path(folder)
    for rel, info in sorted(manifest["files"].items()):
        if not rel.startswith(under):
            continue
        path = folder / rel
        try:
            size = path.stat().st_size if path.is_file() else None
        except OSError:
            size = None
        if size != info["size"] or (hashes and hash_file(path) != info["sha256"]):
            return BadFile(folder, rel, size, info["size"])
    return None


def file_problem(
    folder: str | Path,
    manifest: dict[str, Any],
    *,
    under: str = "",
    hashes: bool = True,
    hash_file: Callable[[Path], str] = file_sha256,
) -> str | None:
    """What is wrong with the first listed file (below ``under``) that is missing or differs from the
    manifest, naming it (:func:`bad_file`); ``None`` when every one matches."""
    bad = bad_file(folder, manifest, under=under, hashes=hashes, hash_file=hash_file)
    return None if bad is None else bad.describe()


def listed_in(path: str | Path) -> Path | None:
    """The saved folder (a model folder, a converted registry model) whose manifest lists the file
    ``path``, ``None`` when none does: a file there is checked when the folder is loaded, so writing over
    it leaves the whole folder refused as altered.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> with saved_folder(d / "m", "model") as tmp:
        ...     _ = (tmp / "calibration.json").write_text("{}")
        >>> listed_in(d / "m" / "calibration.json") == d / "m", listed_in(d / "m" / "other.json")
        (True, None)
    """
    target = Path(path).resolve()
    for folder in target.parents:
        manifest = read_manifest(folder)
        if manifest is not None and target.relative_to(folder).as_posix() in manifest["files"]:
            return folder
    return None


def check_files(
    folder: str | Path,
    manifest: dict[str, Any],
    *,
    under: str = "",
    hash_file: Callable[[Path], str] = file_sha256,
) -> None:
    """Raise :class:`StateError` naming the first listed file (below ``under``) that is missing or differs
    from the manifest (see :func:`file_problem`)."""
    problem = file_problem(folder, manifest, under=under, hash_file=hash_file)
    if problem is not None:
        raise StateError(f"{problem}; restore the folder (or save or train the model again)")


@contextlib.contextmanager
def saved_folder(path: str | Path, kind: str) -> Iterator[Path]:
    """Yield an empty temporary folder; on success mark it as an nlsim folder of ``kind``, write its
    manifest and move it over ``path`` whole (:func:`nlsim.io.atomic.atomic_dir`). The caller decides
    beforehand whether ``path`` may be replaced (:mod:`nlsim.io.ownership`)."""
    with atomic_dir(path) as tmp:
        yield tmp
        write_marker(tmp, kind)
        write_manifest(tmp)
        fault_point("model-save")
