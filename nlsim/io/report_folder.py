"""A report folder read as one run: every file its ``run.json`` lists has the SHA-256 recorded there.

A batch report is staged, then moved into its folder file by file, ``run.json`` last (it holds the others'
hashes). A reader of the folder (``nlsim judge``, a script) must not take a mix of two runs for one: a run
killed while moving its report in leaves some new files beside the earlier run's ``run.json`` (and its
staging folder, marked :data:`PUBLISHING`, holding the rest), and a file copied in from another report
looks like the folder's own. :func:`check_one_run` refuses both, naming the file that differs, and says what
a killed run left: a half-moved staging folder (refused: the next run into the folder finishes the move),
a lock whose run is alive and writing (refused), alive and still at its work (said: a batch run holds its
folder from its start; the folder is the last run's) or dead (said; the folder is judged if whole).

Example:
    >>> import json, tempfile, pathlib
    >>> from nlsim.io.atomic import file_sha256
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "pairs.csv").write_text("id_a,id_b\\n")
    >>> _ = (d / "run.json").write_text(json.dumps({"files": {"pairs.csv": file_sha256(d / "pairs.csv")}}))
    >>> check_one_run(d)["files"] == {"pairs.csv": file_sha256(d / "pairs.csv")}
    True
    >>> _ = (d / "pairs.csv").write_text("id_a,id_b\\nx,y\\n")  # copied in from elsewhere
    >>> check_one_run(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nlsim.errors.StateError: .../pairs.csv: not the file its run.json records (SHA-256 differs): ...
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nlsim.errors import ConfigError, StateError
from nlsim.io.atomic import file_sha256
from nlsim.io.lock import LOCK_NAME, holder_is_alive, read_lock
from nlsim.io.ownership import left_by_a_browser
from nlsim.io.records import read_json_object

RUN_JSON = "run.json"
STAGING_PREFIX = ".staging-"
"""How the folder a batch report is staged in (inside the report folder) is named."""
PUBLISHING = ".publishing"
"""Written into a staging folder once it holds the whole report, before its files are moved in: a staging
folder holding it was being moved in when its run stopped."""
AGAIN = (
    "write the report again (run the nlsim dedup or nlsim pipeline that wrote it; it also finishes a move)"
)


def half_moved(folder: Path) -> list[Path]:
    """Staging folders of ``folder`` whose report a killed run was moving in (:data:`PUBLISHING`)."""
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.glob(STAGING_PREFIX + "*")
        if p.is_dir() and not p.is_symlink() and (p / PUBLISHING).is_file()
    )


def check_one_run(folder: str | Path, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The run record of the report folder ``folder`` once every file it lists is checked against its
    SHA-256 (:class:`StateError` naming the file otherwise; see the module docstring). ``say`` hears what a
    killed run left that does not stop the reading (a stale lock, an unfinished staging folder)."""
    folder = Path(folder)
    moving = half_moved(folder)
    if moving:
        raise StateError(
            f"{moving[0]}: a run killed while moving its report into {folder} left it half moved (its "
            f"run.json may still be the earlier run's): the folder is not one run; {AGAIN}"
        )
    lock = read_lock(folder) if (folder / LOCK_NAME).exists() else None
    staged = [p for p in folder.glob(STAGING_PREFIX + "*") if p.is_dir()]
    if lock is not None:
        alive, why = holder_is_alive(lock)
        if alive and staged:
            raise StateError(
                f"{folder / LOCK_NAME}: a run is writing the report {folder} now ({lock.describe()}); "
                "read it once that run is done"
            )
        # a batch run holds its folder from its start: until it stages, the folder is the last run's report
        if say is not None:
            said = (
                f"a run is under way ({lock.describe()})"
                if alive
                else f"left by a run that was killed ({why})"
            )
            say(f"{folder / LOCK_NAME}: {said}; the report is the last whole run's")
    path = folder / RUN_JSON
    if not path.is_file():
        raise StateError(f"{path}: missing, so {folder} cannot be checked as one run's report; {AGAIN}")
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise StateError(f"{path}: not valid JSON ({' '.join(str(exc).split())}); {AGAIN}") from None
    files = run.get("files") if isinstance(run, dict) else None
    if not isinstance(files, dict) or not files:
        raise StateError(f"{path}: lists no report files with their SHA-256; {AGAIN}")
    for name, digest in files.items():
        file = folder / str(name)
        if not file.is_file():
            raise StateError(
                f"{file}: listed in {RUN_JSON} but missing: {folder} is not one run's report; {AGAIN}"
            )
        if file_sha256(file) != digest:
            raise StateError(
                f"{file}: not the file its {RUN_JSON} records (SHA-256 differs): {folder} is not one run's "
                "report (a file copied in from another report, or a run killed while moving its report "
                f"in?); {AGAIN}"
            )
    if staged and say is not None:
        say(f"{staged[0]}: left by a run killed while writing its report; the report is the last whole run's")
    return run


def recorded_files(folder: Path) -> dict[str, str] | None:
    """The files ``folder``'s ``run.json`` lists with their SHA-256; ``None`` when it lists none (no run yet,
    or a record nlsim cannot read: nothing in the folder can be told to be nlsim's)."""
    path = folder / RUN_JSON
    if not path.is_file():
        return None
    try:
        run = read_json_object(path)
    except (OSError, ValueError):
        return None
    files = run.get("files")
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) and files else None


def _refuse_kind(path: Path, found: str, wanted: str, what: str) -> None:
    """Refuse a report's name that holds a ``found`` (a user's) where the report writes a ``wanted``: the
    move would set the user's file aside, or fail half way through the report's files."""
    raise ConfigError(
        f"{what} {path}: a {found} where the report writes its {wanted} of that name, so not one nlsim "
        f"wrote; a new report would put its {wanted} there: move or rename the {found}, then run again"
    )


def _check_kinds(folder: Path, staged: Path, names: Sequence[str], what: str) -> None:
    """Each of ``names`` in ``folder`` is what the new report (staged in ``staged``) writes there: a file
    for a file, a folder for a folder (:func:`_refuse_kind`)."""
    for name in names:
        path, new = folder / name, staged / name
        if name == "." or path.is_symlink() or not path.exists() or not new.exists():
            continue
        if path.is_dir() != new.is_dir():
            kinds = ("folder", "file") if path.is_dir() else ("file", "folder")
            _refuse_kind(path, *kinds, what)


def _refuse_link(start: Path, top: str, files: dict[str, str], what: str) -> None:
    """Refuse a symbolic link where the report (whose ``run.json`` lists ``files``) writes its own ``top``:
    a new report replaces it whole, and would set the link aside, not write through it."""
    if start.is_symlink() and (top in files or any(n.startswith(f"{top}/") for n in files)):
        raise ConfigError(
            f"{what} {start}: a symbolic link (to {os.readlink(start)}) where the report writes its own "
            f"{top}: a new report replaces {top} whole, and would set the link aside, not write through "
            "it; move the link away (and what it links to back in, to keep it), then run again"
        )


def check_report_replaceable(
    folder: str | Path,
    names: Sequence[str] | None = None,
    *,
    what: str = "--out",
    staged: str | Path | None = None,
) -> None:
    """Refuse (:class:`ConfigError`, naming the file) to write a report over files that are not as nlsim wrote
    them: a file of the report that changed since its run wrote it (an editor's note added to
    ``pairs.csv``: its SHA-256 is not the one ``run.json`` records), and a file inside one of the report's
    own folders (``index/``, which a report replaces whole) that ``run.json`` does not list. ``names``: the
    top-level names the new report writes (default: every name the folder's ``run.json`` lists; ``["."]``:
    the whole folder, as a daily run's ``runs/<run id>/`` is replaced). A folder with no readable
    ``run.json``, or one a killed run left half moved (the next run finishes the move first), is not checked
    here. Files beside the report's own (a ``notes.txt`` at the top) are never touched, and not checked. A
    name of the report that holds a folder where the report writes a file, or a file where it writes a
    folder (``index``), is refused too: as ``run.json`` lists it, and, with ``staged`` (the folder the new
    report is staged in), as the new report writes it.

    Example:
        >>> import tempfile
        >>> from nlsim.io.atomic import file_sha256
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / "pairs.csv").write_text("id_a,id_b\\n")
        >>> files = {"pairs.csv": file_sha256(d / "pairs.csv")}
        >>> _ = (d / "run.json").write_text(json.dumps({"files": files}))
        >>> check_report_replaceable(d)
        >>> _ = (d / "pairs.csv").write_text("id_a,id_b\\nchecked by the desk\\n")
        >>> check_report_replaceable(d)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --out .../pairs.csv changed since nlsim wrote it (...): ...
    """
    folder = Path(folder)
    if staged is not None:
        _check_kinds(folder, Path(staged), names or [], what)
    files = recorded_files(folder)
    if files is None or half_moved(folder):
        return
    tops = sorted({n.split("/")[0] for n in files}) if names is None else list(names)
    for top in tops:
        start = folder if top == "." else folder / top
        if top != ".":
            _refuse_link(start, top, files, what)
        if start.is_symlink() or not start.exists():
            continue
        as_folder = any(n.startswith(f"{top}/") for n in files)
        if start.is_file() and as_folder:
            _refuse_kind(start, "file", "folder", what)
        if start.is_file():
            found = [start]  # a report file; one its run.json does not list (an older run's) is replaced
        elif as_folder or top == ".":
            found = sorted(p for p in start.rglob("*") if not p.is_dir() and not left_by_a_browser(p.name))
        elif top in files:
            _refuse_kind(start, "folder", "file", what)
        else:
            continue  # a folder its run.json does not list (an older nlsim's report): not checked
        for path in found:
            name = path.relative_to(folder).as_posix()
            if top == "." and (name == RUN_JSON or "/" not in name and name.startswith(".")):
                continue  # the record itself, nlsim's markers and temporaries
            digest = files.get(name)
            if digest is None and start.is_file():
                continue
            if digest is None:
                raise ConfigError(
                    f"{what} {path}: not a file nlsim wrote (the report's {RUN_JSON} does not list it), "
                    f"inside {start}, which a new report replaces whole; move it out of the report folder, "
                    "then run again"
                )
            if path.is_symlink() or file_sha256(path) != digest:
                raise ConfigError(
                    f"{what} {path} changed since nlsim wrote it (its SHA-256 is not the one the report's "
                    f"{RUN_JSON} records): a new report would replace it; move or rename it to keep the "
                    "change, or delete it, then run again"
                )
