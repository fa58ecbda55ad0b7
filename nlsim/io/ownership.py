"""What nlsim may overwrite or delete: only what it wrote itself, and never one of the run's inputs.

Every folder nlsim writes as a whole (a report folder, a model folder, a state folder, a model store)
carries a marker file, ``.nlsim.json``, naming its kind. Before a run replaces files in a folder or
sweeps it, it checks the marker (or, for folders written before markers existed, a record only nlsim
writes: a report's ``run.json`` whose file hashes match, a model's ``nlsim.json``) and refuses anything
else *before* the expensive work starts. Output paths are also checked against input paths: an output
that is, or contains, an input is refused.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> claim_folder(d / "report", "report")  # new: nlsim takes it
    >>> is_owned(d / "report", "report")
    True
    >>> _ = (d / "mine").mkdir(); _ = (d / "mine" / "notes.txt").write_text("user file")
    >>> claim_folder(d / "mine", "report")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nlsim.errors.ConfigError: ...mine is not empty and was not written by nlsim...
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from nlsim import __version__
from nlsim.errors import ConfigError, OutputError
from nlsim.io.atomic import LEFTOVER, atomic_write_text, file_sha256
from nlsim.io.lock import GUARD_NAME, LOCK_NAME
from nlsim.io.records import read_json_object

MARKER = ".nlsim.json"
KINDS = ("report", "daily-report", "model", "model-store", "state", "learning-curve")


def marker_record(kind: str) -> dict[str, Any]:
    """The content of a marker of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown folder kind {kind!r}")
    return {"written_by": "nlsim", "kind": kind, "nlsim_version": __version__}


def write_marker(folder: str | Path, kind: str) -> None:
    """Mark ``folder`` (which must exist) as an nlsim folder of ``kind``."""
    atomic_write_text(Path(folder) / MARKER, json.dumps(marker_record(kind), indent=1) + "\n")


def read_marker(folder: str | Path) -> dict[str, Any] | None:
    """The folder's marker, or ``None`` when it has none or it is not nlsim's."""
    try:
        data = read_json_object(Path(folder) / MARKER)
    except (OSError, ValueError):
        return None
    if data.get("written_by") != "nlsim" or data.get("kind") not in KINDS:
        return None
    return data


def _legacy_owned(folder: Path, kind: str) -> bool:
    """Folders written by nlsim before markers existed, recognised by a record only nlsim writes."""
    if kind == "report":
        run = folder / "run.json"
        try:
            files = json.loads(run.read_text(encoding="utf-8"))["files"]
            return bool(files) and all(file_sha256(folder / n) == h for n, h in files.items())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return False
    if kind == "learning-curve":  # a curve written before markers: its points (resumed) or its table, and
        if not all(_curve_name(n) for n in held_names(folder)):  # nothing else (a copy of its table among
            return False  # the user's)
        return _curve_table(folder / "learning_curve.csv") or any(
            _curve_point(p) for p in (folder / "runs").glob("size*_seed*.json")
        )
    if kind == "model":
        try:
            meta = read_json_object(folder / "nlsim.json")
        except (OSError, ValueError):
            return False
        return meta.get("format") == 1 and "model_id" in meta
    return False


CURVE_NAMES = frozenset(
    {"runs", "baselines.json", "learning_curve.md", "learning_curve.csv", "learning_curve.png"}
    | {MARKER, LOCK_NAME, GUARD_NAME}
)
"""What a learning curve's folder holds (:mod:`nlsim.training.learning_curve`): a folder holding anything
else is the user's (with a copy of a curve's table, perhaps), never taken for a curve's."""


def _curve_name(name: str) -> bool:
    """Whether ``name`` is one a learning curve's folder holds (:data:`CURVE_NAMES`), or what a curve killed
    while it wrote one of them left (:data:`nlsim.io.atomic.LEFTOVER`:
    ``.learning_curve.csv.k3x_9a2b.tmp.csv``).

    >>> _curve_name("runs"), _curve_name(".learning_curve.png.k3x_9a2b.tmp.png"), _curve_name("notes.md")
    (True, True, False)
    """
    return name in CURVE_NAMES or (
        LEFTOVER.match(name) is not None and any(name.startswith(f".{n}.") for n in CURVE_NAMES)
    )


CURVE_COLUMNS = "size,runs,spearman_mean,spearman_sd,"
"""How the table of a learning curve begins (``learning_curve.csv``, :mod:`nlsim.training.learning_curve`)."""


def _curve_table(path: Path) -> bool:
    """Whether ``path`` is a learning curve's table as nlsim writes it (not a user's file of that name)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().startswith(CURVE_COLUMNS)
    except (OSError, UnicodeDecodeError):
        return False


def _curve_point(path: Path) -> bool:
    """Whether ``path`` is a learning curve's point as nlsim writes it (``runs/size8_seed1.json``)."""
    try:
        point = read_json_object(path)
    except (OSError, ValueError):
        return False
    return {"size", "seed", "test"} <= point.keys()


def is_owned(folder: str | Path, kind: str) -> bool:
    """True when ``folder`` is an nlsim folder of ``kind`` (marker, or the legacy record)."""
    folder = Path(folder)
    marker = read_marker(folder)
    if marker is not None:
        return marker["kind"] == kind
    return folder.is_dir() and _legacy_owned(folder, kind)


def claim_folder(folder: str | Path, kind: str, *, what: str = "output folder") -> None:
    """Make sure nlsim may write ``folder`` as a ``kind`` folder, and mark it.

    Allowed: a folder that does not exist yet (created), an empty folder, or one nlsim wrote as ``kind``.
    Refused with :class:`ConfigError`: a file, a folder of another kind, or a non-empty folder nlsim did
    not write (its files are the user's).
    """
    typed = Path(folder)
    check_claimable(typed, kind, what=what)
    real = resolved(typed)  # "site/new/../../site" is site/ once new/ is made: check where writes land
    try:
        typed.mkdir(parents=True, exist_ok=True)
        if resolved(typed) != real:  # a folder made on the way (or a link changed) moved the target
            raise ConfigError(
                f"{what} {typed} leads to {resolved(typed)}, not {real}, once its folders are made"
            )
        _check_claimable(real, kind, what, typed)
        write_marker(real, kind)
    except OSError as exc:
        raise OutputError(f"{what} {typed} cannot be written: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def claimed(
    folder: str | Path, kind: str, *, what: str = "output folder", also: Collection[str] = ()
) -> Iterator[Path]:
    """:func:`claim_folder` for one run: a run that fails having written nothing but the claim leaves no
    trace of it (the marker it added, and the names in ``also``, a lock's guard; the folder, when the run
    made it and it is empty again).

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "curve"
        >>> try:
        ...     with claimed(out, "learning-curve", what="--out"):
        ...         raise ValueError("the model cannot load")
        ... except ValueError:
        ...     pass
        >>> out.exists()
        False
    """
    typed = Path(folder)
    with traceless([typed], also):
        claim_folder(typed, kind, what=what)
        yield typed


@contextlib.contextmanager
def traceless(folders: Collection[str | Path], also: Collection[str] = ()) -> Iterator[None]:
    """A block that fails having written nothing into ``folders`` but their claims leaves no trace of them:
    :func:`unclaim` of each against what it held when the block began (its marker, the names in ``also``,
    and the folder itself when the block made it, with the parent folders it made for it, when empty). A
    daily run claims ``--out`` and ``--state`` in its path checks; refused on its first day's file, it
    leaves neither behind.

    Example:
        >>> import tempfile, pathlib
        >>> base = pathlib.Path(tempfile.mkdtemp())
        >>> try:
        ...     with traceless([base / "new" / "out", base / "state"]):
        ...         claim_folder(base / "new" / "out", "daily-report")
        ...         claim_folder(base / "state", "state")
        ...         raise ValueError("a bad row")
        ... except ValueError:
        ...     pass
        >>> sorted(p.name for p in base.iterdir())
        []
    """
    seen = [(Path(f), not Path(f).exists(), _names(Path(f)), _missing_parents(Path(f))) for f in folders]
    try:
        yield
    except BaseException:
        for folder, made, before, parents in seen:
            unclaim(folder, before, made, also)
            for parent in parents:  # the deepest first: each one the block made, left empty again
                with contextlib.suppress(OSError):
                    parent.rmdir()
        raise


def _missing_parents(folder: Path) -> list[Path]:
    """The parent folders of ``folder`` that are not there yet, the deepest first (a block that makes
    ``folder`` makes them too)."""
    missing = []
    parent = Path(os.path.abspath(folder)).parent
    while not parent.exists() and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    return missing


def _names(folder: Path) -> set[str]:
    """The names in ``folder`` (none when it is not a folder)."""
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def unclaim(folder: Path, before: Collection[str], made: bool, also: Collection[str] = ()) -> None:
    """Take back what a failed run added to ``folder`` when that is only its claim: the marker (and the
    names in ``also``, a lock's guard), none of them in ``before``; and the folder itself when the run
    made it (``made``) and it is empty again. Anything else the run wrote is kept."""
    with contextlib.suppress(OSError):
        added = {p.name for p in folder.iterdir()} - set(before)
        if added <= {MARKER, *also}:
            for name in added:
                (folder / name).unlink(missing_ok=True)
            if made and not any(folder.iterdir()):
                folder.rmdir()


def check_claimable(folder: str | Path, kind: str, *, what: str = "output folder") -> None:
    """Refuse ``folder`` as :func:`claim_folder` would, writing nothing (a run checks every output before
    it makes any)."""
    typed = Path(folder)
    if typed.is_symlink() and not typed.exists():
        raise ConfigError(f"{what} {typed} is a broken symbolic link")
    _check_claimable(resolved(typed), kind, what, typed)


def resolved(path: str | Path) -> Path:
    """Where ``path`` leads: absolute, links followed, ``..`` taken after them (a ``..`` behind a folder that
    does not exist yet leads where it will once that folder is made). Every output is checked there."""
    return Path(os.path.realpath(Path(path).expanduser()))


BROWSER_LITTER = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
"""What file browsers leave in a folder they show (with a Mac's ``._NAME``): a folder holding nothing else is
empty to its user, and to nlsim."""
SHOWN_NAMES = 3


def left_by_a_browser(name: str) -> bool:
    """Whether a file named ``name`` is what a file browser leaves (:data:`BROWSER_LITTER`, a Mac's
    resource fork ``._NAME``): never a user's file.

    >>> left_by_a_browser(".DS_Store"), left_by_a_browser("._pairs.csv"), left_by_a_browser("notes.txt")
    (True, True, False)
    """
    return name in BROWSER_LITTER or name.startswith("._")


def held_names(folder: Path) -> list[str]:
    """The names in ``folder`` but what a file browser left (:func:`left_by_a_browser`), sorted."""
    return sorted(p.name for p in folder.iterdir() if not left_by_a_browser(p.name))


def _check_claimable(real: Path, kind: str, what: str, typed: Path) -> None:
    shown = str(typed) if real == Path(os.path.abspath(typed)) else f"{typed} (that is {real})"
    if real.exists() and not real.is_dir():
        raise ConfigError(f"{what} {shown} is a file, not a folder")
    names = held_names(real) if real.is_dir() else []
    if names:
        marker = read_marker(real)
        if marker is not None and marker["kind"] != kind:
            raise ConfigError(f"{what} {shown} is an nlsim {marker['kind']} folder, not a {kind} folder")
        if not is_owned(real, kind):
            more = f", ... ({len(names)} in all)" if len(names) > SHOWN_NAMES else ""
            raise ConfigError(
                f"{what} {shown} is not empty and was not written by nlsim (no {MARKER}; it holds "
                f"{', '.join(names[:SHOWN_NAMES])}{more}); refusing to write into it. Give an empty or new "
                "folder."
            )


def check_writable(path: str | Path, *, what: str = "output") -> None:
    """Refuse an output whose nearest existing parent folder cannot be written (before any work)."""
    p = resolved(path)
    probe = p if p.is_dir() else p.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path} cannot be written: {probe} is not a writable folder")


def check_outputs_apart(
    inputs: Mapping[str, Any], outputs: Mapping[str, Any], folders: Collection[str] = ()
) -> None:
    """Refuse an output path that equals or contains an input path, or another output path, and an output
    folder inside another (``folders``: the names of ``outputs`` that are folders; a file output such as
    ``--quarantine`` may lie in a report folder, beside the report's own files).

    ``inputs``/``outputs`` map a name (an option, e.g. ``--corpus``) to a path or ``None`` (skipped).

    Example:
        >>> check_outputs_apart({"--corpus": "news.csv"}, {"--quarantine": "news.csv"})
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --quarantine news.csv is the same path as --corpus news.csv; refusing ...
    """
    ins = {k: resolved(v) for k, v in inputs.items() if v is not None and str(v) != ""}
    outs = {k: resolved(v) for k, v in outputs.items() if v is not None and str(v) != ""}
    for oname, opath in outs.items():
        for iname, ipath in ins.items():
            if opath == ipath:
                raise ConfigError(
                    f"{oname} {outputs[oname]} is the same path as {iname} {inputs[iname]}; "
                    "refusing to overwrite an input"
                )
            if opath in ipath.parents:
                raise ConfigError(
                    f"{oname} {outputs[oname]} contains {iname} {inputs[iname]}; an output folder must not "
                    "hold the run's inputs (they could be overwritten): choose another folder"
                )
        for other, opath2 in outs.items():
            if other != oname and opath == opath2:
                raise ConfigError(f"{oname} and {other} are the same path {outputs[oname]}")
            if other != oname and {other, oname} <= set(folders) and opath in opath2.parents:
                raise ConfigError(
                    f"{other} {outputs[other]} lies inside {oname} {outputs[oname]}; each output needs a "
                    f"place of its own (nothing is written yet): choose {other} outside {outputs[oname]}"
                )


def check_outside_stores(outputs: Mapping[str, Any]) -> None:
    """Refuse, before any work, an output that is a model store (the folder ``nlsim pipeline`` trains and
    promotes models in, by its marker) or lies inside one. The store is nlsim's alone: after a killed run
    its recovery removes what a killed write left there, which a report's or a model's file being written
    would be taken for (and a report's own clean-up could take the store's), and its versions are saved,
    registered and promoted by nlsim pipeline and nlsim models only.

    ``outputs`` maps a name (an option, e.g. ``--out``) to a path or ``None`` (skipped).

    Example:
        >>> import tempfile
        >>> store = Path(tempfile.mkdtemp())
        >>> claim_folder(store, "model-store")
        >>> check_outside_stores({"--out": store / "report"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --out .../report lies inside the model store ..., which only nlsim ...
    """
    for name, path in outputs.items():
        if path is None or str(path) == "":
            continue
        target = resolved(path)
        stores = (f for f in (target, *target.parents) if (read_marker(f) or {}).get("kind") == "model-store")
        store = next(stores, None)
        if store is not None:
            where = "is" if store == target else "lies inside"
            raise ConfigError(
                f"{name} {path} {where} the model store {store}, which only nlsim pipeline and nlsim models "
                "write (its recovery after a killed run removes what it did not save there); refusing to "
                f"write there (nothing is written yet): give {name} a path outside {store}"
            )


def check_replaceable(path: str | Path, ours: Callable[[Path], bool], *, what: str, kind: str) -> None:
    """Refuse, before any work, an output file that exists and was not written by nlsim.

    ``ours(path)`` tells an existing file of ``kind`` that nlsim wrote (by its header or record) from the
    user's; a folder, or a file ``ours`` does not recognise, is refused with :class:`ConfigError`.

    Example:
        >>> import tempfile, pathlib
        >>> notes = pathlib.Path(tempfile.mkdtemp()) / "notes.csv"
        >>> _ = notes.write_text("precious,notes\\n")
        >>> check_replaceable(notes, is_quarantine_file, what="--quarantine", kind="quarantine file")
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --quarantine .../notes.csv exists and is not a quarantine file written ...
    """
    p = resolved(path)  # a path through a folder not made yet ("new/../notes.csv") is checked where it leads
    if p.is_dir():
        raise ConfigError(f"{what} {path} is a folder, not a file")
    if p.exists() and not ours(p):
        raise ConfigError(
            f"{what} {path} exists and is not a {kind} written by nlsim; refusing to overwrite it: choose "
            "another path, or move the file away"
        )


def _first_line(path: Path, size: int = 4096) -> str:
    try:
        with path.open("rb") as fh:
            head = fh.read(size)
    except OSError:
        return ""
    return head.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()[0] if head else ""


QUARANTINE_HEADER = "row,field,reason"
"""How a quarantine file's header begins (the raw values' columns follow)."""


def is_quarantine_file(path: Path) -> bool:
    """True for a quarantine CSV nlsim wrote (its header begins ``row,field,reason``)."""
    line = _first_line(path)
    return line == QUARANTINE_HEADER or line.startswith(QUARANTINE_HEADER + ",")


def is_json_record(path: Path, keys: set[str]) -> bool:
    """True for a JSON object holding every key of ``keys`` (a record nlsim writes)."""
    try:
        data = read_json_object(path)
    except (OSError, ValueError):
        return False
    return keys <= set(data)
