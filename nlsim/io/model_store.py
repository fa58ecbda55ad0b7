"""The model store: versioned model folders and a pointer to the current (promoted) one.

Layout::

    models/
      .nlsim.json                  marker: an nlsim model store
      CURRENT.json                 {"version": "v0002-1a2b3c4d", ...}: the promoted model (written atomically)
      versions/v0001-9f8e7d6c/     a fine-tuned model folder (encoder, calibration.json, reranker/, card)
        store.json                 the version's training fingerprint and its validation metrics
      versions/v0002-1a2b3c4d/
      zero-shot/calibration.json   the zero-shot model's calibration, used until a model is promoted
      history.jsonl                every promotion decision, one JSON object a line
      lock.json, .lock.guard       the lock of the run writing the store (one at a time)

A version's name carries the start of its *training fingerprint* (annotations content, base model, training
settings): a run whose fingerprint is already in the store reuses that version instead of training again.
A version is *registered* once its ``store.json`` is written.

Besides the chain's gate, a person moves the pointer (``nlsim models promote VERSION``, ``nlsim models
rollback``): :meth:`ModelStore.checked_version` refuses a version that is not registered or whose files
fail their manifest, :meth:`ModelStore.promote` records who and why, and :meth:`ModelStore.previous`
is the version a rollback returns to: the promotions replayed as a stack (a promotion pushes its
version, a rollback pops the current one), so a second rollback goes one further back.

One run writes the store at a time: :meth:`ModelStore.lock` (:class:`nlsim.io.lock.RunLock`, the state
folder's discipline: a live holder refuses a second run, a dead one's lock is taken over). Every file is
written atomically, ``history.jsonl`` included (rewritten whole). Under the lock, :meth:`ModelStore.recover`
finishes what a killed run left: it records a promotion whose ``history.jsonl`` record was lost and removes
temporary folders and versions saved but never registered. The store deletes nothing else: registered
versions stay, and only the pointer moves.

Example:
    >>> import tempfile
    >>> store = ModelStore(tempfile.mkdtemp() + "/models")
    >>> store.current() is None
    True
    >>> v = store.new_version_dir("1a2b3c4d5e6f")
    >>> v.name
    'v0001-1a2b3c4d'
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlsim.errors import ConfigError, StateError
from nlsim.faults import fault_point
from nlsim.io.atomic import atomic_write_bytes, atomic_write_text, leftovers, remove_tree
from nlsim.io.lock import RunLock
from nlsim.io.manifest import MANIFEST, bad_file, check_files, read_manifest
from nlsim.io.ownership import claim_folder, is_owned, read_marker
from nlsim.io.records import json_kind
from nlsim.io.report_folder import recorded_files

CURRENT = "CURRENT.json"
VERSIONS = "versions"
ZERO_SHOT = "zero-shot"
STORE_JSON = "store.json"
HISTORY = "history.jsonl"
UNREADABLE = "unreadable record"
VERSION_NAME = re.compile(r"^v(\d{4,})-([0-9a-f]{8})$")
OTHER_FOLDERS = {
    "report": "a report folder (the --out of nlsim dedup or nlsim pipeline: its run.json, pairs, clusters)",
    "daily-report": "a daily report folder (the --out of a daily nlsim dedup --state: its runs/ and latest)",
    "model": "a model folder (give it to --model instead)",
    "state": "a daily state folder (nlsim dedup's --state)",
    "learning-curve": "a learning curve's folder (the --out of nlsim learning-curve)",
}
"""What a folder nlsim wrote as something else than a model store is, by the kind its marker names."""


@dataclass(frozen=True)
class Promoted:
    """The promoted version, as one read of ``CURRENT.json`` gives it (:meth:`ModelStore.promoted`)."""

    folder: Path
    """The version's folder, ``versions/<version>``."""
    record: dict[str, Any]
    """``CURRENT.json``: the ``version``, when it was promoted (``promoted_at``), why, by whom."""

    @property
    def promoted_at(self) -> str | None:
        """When the version became current (``None``: the pointer does not say, written by hand)."""
        at = self.record.get("promoted_at")
        return None if at is None else str(at)


class ModelStore:
    """A folder of model versions (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def missing(self) -> str | None:
        """Why ``root`` holds no store at all (it does not exist, or is not a folder); ``None`` when it is a
        folder. A mistyped ``--model-store`` is named as such, instead of reading as a store where no model
        was ever promoted (which would send a newcomer to train one in the wrong place).

        Example:
            >>> ModelStore("/no/such/models").missing()
            "model store '/no/such/models' does not exist (no such folder)"
        """
        if self.root.is_dir():
            return None
        what = "is not a folder" if self.root.exists() else "does not exist (no such folder)"
        return f"model store '{self.root}' {what}"

    def claim(self) -> None:
        """Create the store (or check that ``root`` is one) before writing into it."""
        claim_folder(self.root, "model-store", what="model store")

    def other_kind(self) -> str | None:
        """What ``root`` is, when nlsim wrote it as something else than a model store (its marker's kind, or
        a report's ``run.json`` listing its files: a report written before markers, a daily run's
        ``latest``); ``None`` otherwise.

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp()
            >>> claim_folder(folder, "report")
            >>> ModelStore(folder).other_kind()
            'a report folder (the --out of nlsim dedup or nlsim pipeline: its run.json, pairs, clusters)'
        """
        if not self.root.is_dir():
            return None
        marker = read_marker(self.root)
        if marker is not None:
            return OTHER_FOLDERS.get(str(marker["kind"]))
        if recorded_files(self.root) is not None:
            return OTHER_FOLDERS["report"]
        return OTHER_FOLDERS["model"] if is_owned(self.root, "model") else None

    def check_kind(self, what: str = "--model-store") -> None:
        """Refuse, before anything is read or written, a folder nlsim wrote as something else (a report
        folder, a model folder, a daily state) named as the model store: read as a store, it would be one
        where no model was ever promoted, and the advice would be to train into it."""
        other = self.other_kind()
        if other is not None:
            raise ConfigError(
                f"{what} {self.root} is {other}, not a model store; give {what} the folder nlsim pipeline "
                "trains and promotes models in (its --model-store, models by default)"
            )

    def lock(self) -> RunLock:
        """The store's run lock (use it as a context manager): one run writes the store at a time."""
        return RunLock(self.root, what="model store")

    def versions(self) -> list[Path]:
        """Version folders, oldest first."""
        folder = self.root / VERSIONS
        if not folder.is_dir():
            return []
        found = [p for p in folder.iterdir() if p.is_dir() and VERSION_NAME.match(p.name)]
        return sorted(found, key=lambda p: (int(VERSION_NAME.match(p.name).group(1)), p.name))  # type: ignore[union-attr]

    def find(self, fingerprint: str) -> Path | None:
        """The version trained with this fingerprint (complete, with its ``store.json``), or ``None``."""
        for v in reversed(self.versions()):
            info = self.info(v)
            if info is not None and info.get("fingerprint") == fingerprint:
                return v
        return None

    def info(self, version: str | Path) -> dict[str, Any] | None:
        """A version's ``store.json`` (fingerprint, its parts, metrics), or ``None`` when it has none; one
        that is not a JSON object (edited by hand, another file copied over it) is a :class:`StateError`
        naming it."""
        path = self._dir(version) / STORE_JSON
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StateError(f"{path}: unreadable ({exc})") from exc
        if not isinstance(data, dict):
            raise StateError(
                f"{path}: damaged: a JSON {json_kind(data)}, not an object (the version's fingerprint "
                "and validation figures); restore it from a backup, or train the version again"
            )
        return data

    def write_info(self, version: str | Path, info: dict[str, Any]) -> None:
        atomic_write_text(
            self._dir(version) / STORE_JSON, json.dumps(info, indent=2, ensure_ascii=False) + "\n"
        )

    def register(self, version: str | Path, info: dict[str, Any]) -> None:
        """Register a version saved into ``versions/``: write its ``store.json`` (fingerprint, parts, ...)."""
        fault_point("register")
        self.write_info(version, info)

    def new_version_dir(self, fingerprint: str) -> Path:
        """The folder for a new version (not created): the next number, then the fingerprint's start."""
        last = max((int(VERSION_NAME.match(p.name).group(1)) for p in self.versions()), default=0)  # type: ignore[union-attr]
        return self.root / VERSIONS / f"v{last + 1:04d}-{fingerprint[:8]}"

    def _dir(self, version: str | Path) -> Path:
        v = Path(version)
        return v if v.is_absolute() or v.parent != Path(".") else self.root / VERSIONS / v

    def current(self) -> Path | None:
        """The promoted version's folder, ``None`` when no model was ever promoted.

        A pointer that names a missing or unknown version is an error, not a silent fallback.
        """
        promoted = self.promoted()
        return None if promoted is None else promoted.folder

    def promoted(self) -> Promoted | None:
        """The promoted version's folder and the record ``CURRENT.json`` holds of its promotion, from one
        read of the file (a promotion by hand between two reads would mix two versions' facts); ``None``
        when no model was ever promoted. A pointer that names a missing or unknown version is a
        :class:`StateError` (:meth:`current`)."""
        path = self.root / CURRENT
        if not path.exists():
            last = self.last_promoted()
            if last is None:
                return None
            raise StateError(
                f"{path} is missing, but {self.root / HISTORY} records promotions: without it the store "
                "would fall back to the zero-shot model and gate a new one against that alone. "
                f"{self._restore_hint(last)}"
            )
        record = self._pointer(path)
        name = str(record["version"])
        if not VERSION_NAME.match(name) or not (self.root / VERSIONS / name).is_dir():
            raise StateError(
                f"{path} points at {name!r}, which is not a version in {self.root / VERSIONS}. "
                + self._damaged_pointer_hint()
            )
        if not (self.root / VERSIONS / name / STORE_JSON).is_file():
            raise StateError(
                f"{path} points at {name!r}, which is not registered (no {STORE_JSON} in "
                f"{self.root / VERSIONS / name}: never evaluated, or the file was removed by hand). "
                + self._damaged_pointer_hint()
            )
        return Promoted(self.root / VERSIONS / name, record)

    def _pointer(self, path: Path) -> dict[str, Any]:
        """``CURRENT.json`` read: a JSON object naming its ``version``; anything else (not JSON, cut short,
        another shape) is a :class:`StateError` naming the file, with what to do."""
        try:  # written back by hand, perhaps in an editor that puts a byte-order mark first
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError) as exc:
            why = f"not valid JSON ({exc})" if isinstance(exc, ValueError) else (exc.strerror or str(exc))
        else:
            if not isinstance(data, dict):
                why = f"a JSON {json_kind(data)}, not an object naming the current version"
            elif not isinstance(data.get("version"), str) or not data["version"]:
                why = "it names no version (no 'version' text)"
            else:
                return data
        raise StateError(f"{path}: damaged: {why}. {self._damaged_pointer_hint()}")

    def _damaged_pointer_hint(self) -> str:
        """What to do about a ``CURRENT.json`` that names no version of the store: write the last promotion
        back, or delete it when none is recorded."""
        last = self.last_promoted()
        if last is not None:
            return self._restore_hint(last)
        return (
            f"No promotion is recorded in {self.root / HISTORY}: delete {self.root / CURRENT} (the store "
            "then uses the zero-shot model), or make a version current with nlsim models promote VERSION"
        )

    def last_promoted(self) -> dict[str, Any] | None:
        """The last ``promoted`` record of ``history.jsonl`` (``None``: no model was ever promoted)."""
        promoted = [r for r in self.history() if r.get("decision") == "promoted" and r.get("version")]
        return promoted[-1] if promoted else None

    def _restore_hint(self, last: dict[str, Any]) -> str:
        """What to do about a lost pointer: write back the last promoted version that is still in
        ``versions/`` (never one that is gone: the store would refuse it), or start the store over."""
        start_over = f"to start the store over, move {self.root / HISTORY} aside"
        when = last.get("promoted_at") or last.get("at")
        said = f"The last promotion recorded is {last['version']} (at {when})"
        present = {v.name for v in self.versions() if (v / STORE_JSON).is_file()}  # what can be current
        if str(last["version"]) in present:
            hint = self._promote_hint(str(last["version"]))
            return f"{said}: to make it current again, {hint}; {start_over} as well"
        promoted = [r for r in self.history() if r.get("decision") == "promoted" and r.get("version")]
        still = next((r for r in reversed(promoted) if str(r["version"]) in present), None)
        said += f", which is no longer in {self.root / VERSIONS} (registered, with its {STORE_JSON})"
        if still is None:
            return (
                f"{said}; no promoted version is left there: {start_over} (and {self.root / CURRENT} if any)"
            )
        return (
            f"{said}; the last promoted version still there is {still['version']} "
            f"(at {still.get('promoted_at') or still.get('at')}): to make it current, "
            f"{self._promote_hint(str(still['version']))}; {start_over} as well"
        )

    def _promote_hint(self, version: str) -> str:
        """How to make ``version`` current again: the command, which records why in ``history.jsonl``, or the
        pointer written by hand."""
        pointer = json.dumps({"version": version})
        return (
            f"run nlsim models promote {version} --model-store {shlex.quote(str(self.root))} --reason WHY "
            f"(or write {pointer} into {self.root / CURRENT})"
        )

    def current_record(self) -> dict[str, Any] | None:
        """The promotion ``CURRENT.json`` records (``None``: no model was ever promoted); a damaged one is a
        :class:`StateError` naming it, with what to do."""
        path = self.root / CURRENT
        return self._pointer(path) if path.exists() else None

    def promote(self, version: str | Path, reason: str, **extra: Any) -> None:
        """Make ``version`` the current model (one atomic write of the pointer) and log the decision;
        ``extra`` (who, the command, a rollback's ``rolled_back``) goes into both records.

        The history is read before the pointer moves, and a history that cannot be written puts the pointer
        back as it was: a promotion that fails leaves the store as it was (one killed between the two is
        recorded by the next :meth:`recover`, or by the next promotion, before its own record: the version
        it replaces stays on the stack a rollback returns along, :meth:`promotions`)."""
        v = self._dir(version)
        if not v.is_dir():
            raise ConfigError(f"cannot promote {v}: no such version")
        if not (v / STORE_JSON).is_file():  # the pointer every reader refuses (current()): never written
            raise ConfigError(f"cannot promote {v}: not registered (no {STORE_JSON}; register it first)")
        records = self.history()
        unrecorded = self._unrecorded_promotion(records)
        if unrecorded is not None:  # the pointer this one replaces, which a rollback must return to
            records.append({"at": _now(), **unrecorded})
        pointer = self.root / CURRENT
        before = pointer.read_bytes() if pointer.is_file() else None
        record = {"version": v.name, "promoted_at": _now(), "reason": reason, **extra}
        atomic_write_text(pointer, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
        try:
            fault_point("promote")
            self._write_history([*records, {"at": _now(), "decision": "promoted", **record}])
        except BaseException:  # a full disk, Ctrl-C: the pointer as it was, the record never written
            if before is None:
                pointer.unlink(missing_ok=True)
            else:
                atomic_write_bytes(pointer, before)
            raise

    def named(self, name: str) -> Path:
        """The version folder ``name`` names: its full name (``v0002-1a2b3c4d``) or its number (``v0002``,
        ``2``). A :class:`ConfigError` names the versions there are when none or several match."""
        versions = self.versions()
        number = name[1:] if name.startswith("v") else name
        numbers = {v.name: int(VERSION_NAME.match(v.name).group(1)) for v in versions}  # type: ignore[union-attr]
        wanted = int(number) if number.isascii() and number.isdigit() else None  # not "²": int() refuses it
        exact = [v for v in versions if v.name == name]
        found = exact or [v for v in versions if numbers[v.name] == wanted]
        if len(found) == 1:
            return found[0]
        if found:  # a version folder copied in by hand under a number the store had already given
            raise ConfigError(
                f"model store {self.root}: {name!r} is the number of several versions "
                f"({', '.join(v.name for v in found)}); give its full name"
            )
        known = ", ".join(v.name for v in versions) or "none"
        raise ConfigError(f"model store {self.root} has no version {name!r} (its versions: {known})")

    def checked_version(self, name: str) -> Path:
        """The registered version ``name`` (:meth:`named`), every file it was saved with checked against its
        manifest: what may become current. A :class:`ConfigError` when it is not there or not registered, a
        :class:`StateError` naming the first file that fails."""
        folder = self.named(name)
        if self.info(folder) is None:
            raise ConfigError(
                f"{folder} is not registered (no {STORE_JSON}: a save a killed run left, never evaluated, or "
                "the file was removed by hand)"
            )
        manifest = read_manifest(folder)
        if manifest is None:
            path = folder / MANIFEST
            why = "unreadable, or not the manifest nlsim writes" if path.exists() else "missing"
            raise StateError(
                f"{path}: {why}, so the version's files cannot be checked; restore the folder from a backup, "
                "or train it again (nlsim pipeline --force-train)"
            )
        check_files(folder, manifest)
        return folder

    def files_problem(self, version: str | Path) -> str | None:
        """In a few words, what keeps a version from loading as it was saved: a file its manifest lists
        missing, or of another size (``missing: tokenizer.json``, ``incomplete: model.safetensors (...)``),
        or the manifest itself lost or damaged (``missing: manifest.json``); ``None`` when every file is
        there at its size. The check of :meth:`checked_version` (and of loading a model) by sizes alone, so
        that a list of every version reads no weights; those check the SHA-256 too.

        Example:
            >>> import tempfile
            >>> from nlsim.io.manifest import saved_folder
            >>> store = ModelStore(tempfile.mkdtemp())
            >>> with saved_folder(store.root / VERSIONS / "v0001-aaaaaaaa", "model") as tmp:
            ...     _ = (tmp / "tokenizer.json").write_text("{}")
            >>> store.files_problem("v0001-aaaaaaaa") is None
            True
            >>> (store.root / VERSIONS / "v0001-aaaaaaaa" / "tokenizer.json").unlink()
            >>> store.files_problem("v0001-aaaaaaaa")
            'missing: tokenizer.json'
        """
        folder = self._dir(version)
        manifest = read_manifest(folder)
        if manifest is None:
            return f"{'damaged' if (folder / MANIFEST).exists() else 'missing'}: {MANIFEST}"
        bad = bad_file(folder, manifest, hashes=False)
        return None if bad is None else bad.short()

    def promotions(self) -> list[str]:
        """The promoted versions as a stack, the current one last: ``history.jsonl`` replayed, a promotion
        pushing its version (unless it is already on top), a rollback (a record with ``rolled_back``)
        popping the one it left; the current version on top even when the pointer was written by hand.

        Example:
            >>> import tempfile
            >>> store = ModelStore(tempfile.mkdtemp())
            >>> store._write_history([
            ...     {"decision": "promoted", "version": "v0001-aaaaaaaa"},
            ...     {"decision": "kept, not promoted", "candidate": "v0002-bbbbbbbb"},
            ...     {"decision": "promoted", "version": "v0003-cccccccc"},
            ...     {"decision": "promoted", "version": "v0004-dddddddd"},
            ...     {"decision": "promoted", "version": "v0003-cccccccc", "rolled_back": "v0004-dddddddd"},
            ... ])
            >>> store.promotions()
            ['v0001-aaaaaaaa', 'v0003-cccccccc']
        """
        stack: list[str] = []
        for record in self.history():
            if record.get("decision") != "promoted" or not record.get("version"):
                continue
            version = str(record["version"])
            if record.get("rolled_back") and stack and stack[-1] == record["rolled_back"]:
                stack.pop()
            if not stack or stack[-1] != version:
                stack.append(version)
        pointer = self.current_record()
        if pointer is not None and pointer.get("version") and (not stack or stack[-1] != pointer["version"]):
            stack.append(str(pointer["version"]))
        return stack

    def previous(self) -> str | None:
        """The version a rollback makes current: the one promoted before the current one (``None``: no
        earlier promotion)."""
        stack = self.promotions()
        return stack[-2] if len(stack) >= 2 else None

    def demoted_by_hand(self, name: str) -> dict[str, Any] | None:
        """The ``history.jsonl`` record of the move by hand (``nlsim models rollback``, or ``promote`` of
        another version: a record with who did it, ``by``) that made version ``name`` no longer current,
        while it still stands (no later promotion of ``name``); ``None`` otherwise. The chain's gate does
        not promote such a version back on its figures.

        Example:
            >>> import tempfile
            >>> store = ModelStore(tempfile.mkdtemp())
            >>> store._write_history([
            ...     {"decision": "promoted", "version": "v0002-bbbbbbbb"},
            ...     {"decision": "promoted", "version": "v0001-aaaaaaaa", "rolled_back": "v0002-bbbbbbbb",
            ...      "by": "ed@desk", "reason": "v0002 splits stories"},
            ... ])
            >>> store.demoted_by_hand("v0002-bbbbbbbb")["reason"]
            'v0002 splits stories'
            >>> store.demoted_by_hand("v0001-aaaaaaaa") is None
            True
        """
        found = None
        for record in self.history():
            if record.get("decision") != "promoted":
                continue
            if record.get("version") == name:
                found = None
            elif record.get("by") and name in (record.get("rolled_back"), record.get("replaced")):
                found = record
        return found

    def history(self) -> list[dict[str, Any]]:
        """The decisions in ``history.jsonl``, oldest first; a line that is not a JSON object (an older
        writer's killed append) comes back as ``{"decision": "unreadable record", "text": line}``."""
        return [record for record, _ in self._history_lines()]

    def _history_lines(self) -> list[tuple[dict[str, Any], bool]]:
        """Each line's record, and whether the line itself was readable."""
        try:
            # a killed append can cut a character of a Chinese path in two: that line is kept as text
            lines = (self.root / HISTORY).read_bytes().decode("utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in filter(str.strip, lines):
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            readable = isinstance(record, dict)
            out.append((record if readable else {"decision": UNREADABLE, "text": line}, readable))
        return out

    def log(self, record: dict[str, Any]) -> None:
        """Add a decision to ``history.jsonl`` (see :meth:`_write_history`)."""
        self._write_history([*self.history(), {"at": _now(), **record}])

    def _write_history(self, records: list[dict[str, Any]]) -> None:
        """Write ``history.jsonl`` again whole, atomically (a kill leaves the previous one), one record a
        line."""
        text = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
        atomic_write_text(self.root / HISTORY, text)

    def recover(self) -> list[str]:
        """Finish what a killed run left (call it holding :meth:`lock`); returns what was done, to say.

        Removes what killed writes left (:func:`nlsim.io.atomic.leftovers`) and versions saved but never
        registered (no ``store.json``; never the current one, nor one ``history.jsonl`` names, whose file was
        removed by hand, nor a link put there by hand: kept, and said); in ``history.jsonl`` keeps a torn
        line as text in a record of its own and records the promotion ``CURRENT.json`` names when its record
        was lost.
        """
        done = []
        lines = self._history_lines()
        torn = sum(not readable for _, readable in lines)
        if torn:
            self._write_history([record for record, _ in lines])
            done.append(
                f"{HISTORY}: kept {torn} unreadable line(s) (a killed append) as text, each in a record "
                f"of its own (decision {UNREADABLE!r})"
            )
        for folder in (self.root, self.root / VERSIONS, self.zero_shot_dir()):
            for path in leftovers(folder):
                remove_tree(path) if path.is_dir() else path.unlink()
                done.append(f"removed {path}, left by a killed write")
        current = self.current()
        # a version the history names was registered once (a killed save never reaches the history): its
        # store.json was removed by hand, and the folder (a model once current, perhaps) is not a leftover
        named = {str(r.get(k)) for r in self.history() for k in ("version", "candidate") if r.get(k)}
        for version in self.versions():
            if version == current or (version / STORE_JSON).exists() or not is_owned(version, "model"):
                continue
            if version.name in named:
                done.append(
                    f"kept {version}: no {STORE_JSON}, though {HISTORY} records it (the file removed by "
                    f"hand?): restore its {STORE_JSON} to use it again, or remove the folder"
                )
                continue
            if version.is_symlink():  # put there by hand: a killed save is a folder, never a link
                done.append(
                    f"kept {version}: a link to {version.resolve()}, not a version nlsim saved (no "
                    f"{STORE_JSON}), so never current; remove the link"
                )
                continue
            remove_tree(version)
            done.append(f"removed {version}: saved by a killed run, never registered (no {STORE_JSON})")
        record = self._unrecorded_promotion(self.history())
        if record is not None:
            self.log(record)
            done.append(
                f"{HISTORY}: recorded the promotion of {record.get('version')} "
                f"({record.get('promoted_at')}), which a killed run had not written"
            )
        return done

    def _unrecorded_promotion(self, records: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The promotion ``CURRENT.json`` records, as a ``history.jsonl`` record (``recovered``), when
        ``records`` (the history) lack it: a run killed between the two writes; ``None`` when they hold it,
        or when there is no pointer, or one that names no registered version (:meth:`current`: a promotion
        writes it anew)."""
        try:
            promoted = self.promoted()
        except StateError:
            return None
        if promoted is None:
            return None
        record = promoted.record
        if any(
            r.get("decision") == "promoted"
            and r.get("version") == record.get("version")
            and r.get("promoted_at") == record.get("promoted_at")
            for r in records
        ):
            return None
        return {"decision": "promoted", **record, "recovered": f"from {CURRENT}, after a killed run"}

    def zero_shot_dir(self) -> Path:
        """Where the zero-shot model's calibration is kept."""
        return self.root / ZERO_SHOT


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
