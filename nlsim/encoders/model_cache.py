"""Converted-model cache under ``$NLSIM_HOME/models``: atomic builds, file manifests, verification.

A converted model folder is built in a temporary folder beside its final place, a ``manifest.json``
(size and SHA-256 of every file) is written last, and the folder is renamed into place. Before use,
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

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nlsim.io.atomic import atomic_dir, file_sha256

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
log = logging.getLogger(__name__)


def nlsim_home() -> Path:
    """``$NLSIM_HOME``, default ``~/.cache/nlsim``."""
    return Path(os.environ.get("NLSIM_HOME") or Path.home() / ".cache" / "nlsim").expanduser()


def models_dir() -> Path:
    """Folder of converted models: ``$NLSIM_HOME/models``."""
    return nlsim_home() / "models"


def write_manifest(folder: Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``manifest.json`` listing size and SHA-256 of every file under ``folder``."""
    files = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            rel = p.relative_to(folder).as_posix()
            files[rel] = {"size": p.stat().st_size, "sha256": file_sha256(p)}
    manifest = {"format": MANIFEST_FORMAT, "files": files, **(extra or {})}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest, or ``None`` when missing or unreadable."""
    try:
        return json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def verify_folder(folder: str | Path, *, source: str | None = None, hashes: bool = True) -> bool:
    """True when every file in the manifest exists with its size (and SHA-256 when ``hashes``).

    ``source`` (e.g. the hash of the file a model was converted from) must match the manifest's when
    given, so a new package version triggers a rebuild.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    if not manifest or manifest.get("format") != MANIFEST_FORMAT or not manifest.get("files"):
        log.info("%s: no usable manifest", folder)
        return False
    if source is not None and manifest.get("source") != source:
        log.warning("%s: built from %s, now the source is %s", folder, manifest.get("source"), source)
        return False
    for rel, info in manifest["files"].items():
        p = folder / rel
        try:
            if p.stat().st_size != info["size"]:
                log.warning("%s: size %d, manifest says %d", p, p.stat().st_size, info["size"])
                return False
        except OSError:
            log.warning("%s: missing", p)
            return False
        if hashes and file_sha256(p) != info["sha256"]:
            log.warning("%s: sha256 differs from the manifest", p)
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
