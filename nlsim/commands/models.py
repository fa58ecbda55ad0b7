"""``nlsim models list|promote|rollback``: the model store's versions, and moving its pointer by hand.

``promote VERSION`` makes a registered version current, ``rollback`` returns to the version promoted
before the current one; each checks every file of the version against its manifest first, writes the
pointer atomically under the store's lock (a running chain refuses it, and the other way round) and
records who and why in ``history.jsonl`` (:mod:`nlsim.io.model_store`). The next daily run uses the
version and embeds its window again.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="nlsim")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["models", "promote", "v0002", "--reason", "v0003 splits stories"])
    >>> args.version, args.model_store, args.reason
    ('v0002', 'models', 'v0003 splits stories')
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import socket
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlsim.commands.options import Formatter, refuse_option
from nlsim.errors import ConfigError, OutputError, StateError
from nlsim.io.lock import GUARD_NAME
from nlsim.io.model_store import CURRENT, HISTORY, STORE_JSON, VERSIONS, ModelStore
from nlsim.io.ownership import MARKER, is_owned, read_marker
from nlsim.progress import say

MODEL_IS_NOT_AN_OPTION = (
    "--model is not an option of nlsim models: give the model store with --model-store FOLDER (default: "
    "models), and promote the version by its name or number (nlsim models promote VERSION)"
)
"""Why ``--model`` (``nlsim dedup``'s) is refused, where argparse would read it as the start of
``--model-store`` (``nlsim models list --model current`` looked for a store named ``current``)."""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "models",
        help="list the model store's versions, promote one, or roll back",
        description="List the model store's versions, or choose by hand which one is current.\n\n"
        + textwrap.fill(
            "list shows the versions, the base model and conversion each was trained with, their validation "
            "figures, which is current and any whose files are missing or cut short; promote VERSION makes a "
            "registered version current; rollback returns to the version promoted before the current one. "
            "Promote and rollback check every file of the version against its manifest, write the pointer "
            "atomically under the store's lock and record who did it and why (their --reason) in "
            "history.jsonl. The next daily run (nlsim dedup --model current) uses the version.",
            100,
        ),
        formatter_class=Formatter,
    )
    sub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    ls = sub.add_parser(
        "list",
        help="the versions, what each was trained from, their validation figures and which is current",
        description="List the model store's versions, each with what it was trained from.\n\n"
        + textwrap.fill(
            "Each version shows the base model and conversion it was trained with, its validation figures, "
            "whether it is current, and whether any of its files are missing or cut short (checked by size "
            "against its manifest.json; promote checks their SHA-256 too).",
            100,
        ),
        formatter_class=Formatter,
    )
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    pr = sub.add_parser(
        "promote",
        help="make a registered version the current model",
        description="Make a registered version of the model store the current model.",
    )
    pr.add_argument("version", help="the version: its name (v0002-1a2b3c4d) or its number (v0002)")
    rb = sub.add_parser(
        "rollback",
        help="make the version promoted before the current one current again",
        description="Make the version promoted before the current one the current model again.",
    )
    for s, func in ((ls, run_list), (pr, run_promote), (rb, run_rollback)):
        s.add_argument("--model-store", default="models", help="the model store folder (default: models)")
        refuse_option(s, "--model", MODEL_IS_NOT_AN_OPTION)
        if s is not ls:
            s.add_argument("--reason", required=True, help="why, recorded in history.jsonl with who did it")
        s.set_defaults(func=func)


def store_of(args: argparse.Namespace) -> ModelStore:
    """The store ``--model-store`` names; a folder that is not there is refused by name."""
    store = ModelStore(args.model_store)
    missing = store.missing()
    if missing is not None:
        raise ConfigError(f"{missing}; give --model-store the folder `nlsim pipeline` filled")
    store.check_kind()
    marker = store.root / MARKER
    if marker.exists() and read_marker(store.root) is None:  # not "no marker": the file is there
        record = json.dumps({"written_by": "nlsim", "kind": "model-store"})
        raise StateError(
            f"{marker}: damaged (not the marker nlsim writes in a model store); if this is the folder nlsim "
            f"pipeline fills, write {record} into it, else give --model-store that folder"
        )
    if not is_owned(store.root, "model-store"):  # nothing is written (not even a lock) into a user's folder
        raise ConfigError(
            f"model store '{store.root}' is not a model store nlsim wrote (no {MARKER}); give --model-store "
            "the folder `nlsim pipeline` filled"
        )
    return store


def check_reason(reason: str) -> None:
    """Refuse a ``--reason`` that says nothing: ``history.jsonl`` would record who moved the pointer, but not
    why.

    Example:
        >>> check_reason("v0003 splits stories")
        >>> check_reason("  ")
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --reason is blank: say why the pointer moves (history.jsonl records it ...
    """
    if not reason.strip():
        raise ConfigError(
            "--reason is blank: say why the pointer moves (history.jsonl records it with who did it), "
            'e.g. --reason "v0003 splits the election stories"'
        )


def check_writable_store(store: ModelStore, action: str) -> None:
    """Refuse, before the lock is taken, a store this user cannot write (a read-only folder, a store another
    user's chain writes): ``promote`` and ``rollback`` write ``CURRENT.json``, ``history.jsonl`` and the lock
    there; said in one line, naming what cannot be written and what to do, instead of the lock's error."""
    for path, mode in ((store.root, os.W_OK | os.X_OK), (store.root / GUARD_NAME, os.W_OK)):
        if path.exists() and not os.access(path, mode):
            raise OutputError(
                f"model store {store.root} cannot be written: {path} is not writable by {who()}; run nlsim "
                f"models {action} as the user whose nlsim pipeline writes the store, or make it writable "
                "(nlsim models list only reads it)"
            )


def who() -> str:
    """``user@host``: who moved the pointer, as ``history.jsonl`` records it."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        import os

        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def current_name(store: ModelStore) -> tuple[str | None, str]:
    """The current version's name, and how the promotion names what it replaces: ``(None, "none")`` when
    none was promoted; when the pointer is lost (a promotion by hand is how it is written back), the version
    ``CURRENT.json`` still names (a folder since removed), or ``None`` when it names none it can be read for.
    """
    try:
        current = store.current()
    except StateError as exc:
        say(f"{exc} (this promotion writes it again)")
        try:
            named = store.current_record()
        except StateError:  # not JSON, another shape
            return None, f"an unreadable {CURRENT}"
        if named is None:  # missing, while the history records promotions
            return None, f"none: {CURRENT} was missing"
        return str(named["version"]), f"{named['version']}, no longer a version of the store"
    return (None, "none") if current is None else (current.name, current.name)


def run_promote(args: argparse.Namespace) -> int:
    check_reason(args.reason)
    store = store_of(args)
    check_writable_store(store, "promote")
    with store.lock() as lock:
        if lock.message:
            say(lock.message)
        version = store.checked_version(args.version)
        before, was = current_name(store)
        if before == version.name and was == before:
            print(f"{version.name} is already the current model of {store.root}: nothing changed")
            return 0
        store.promote(version, args.reason, by=who(), command="nlsim models promote", replaced=before)
    print(f"promoted {version.name} in {store.root} (was {was}): {args.reason}")
    say_trained_apart(store, version, before)
    return 0


ONLY_PROMOTED = (
    "is the only version ever promoted; nothing to roll back to (nlsim models promote VERSION makes another "
    "one current)"
)
"""Why a rollback is refused when the current version is the only one ever promoted (after its name)."""


def run_rollback(args: argparse.Namespace) -> int:
    check_reason(args.reason)
    store = store_of(args)
    check_writable_store(store, "rollback")
    with store.lock() as lock:
        if lock.message:
            say(lock.message)
        current = store.current()
        if current is None:
            raise ConfigError(f"model store {store.root} has no current model: nothing to roll back")
        target = store.previous()
        if target is None:
            raise ConfigError(f"model store {store.root}: {current.name} {ONLY_PROMOTED}")
        if target not in {v.name for v in store.versions()}:
            raise StateError(
                f"model store {store.root}: cannot roll back to {target}, the version promoted before "
                f"{current.name} ({store.root / HISTORY}): it is no longer in {store.root / VERSIONS}; make "
                "a version that is there current with nlsim models promote VERSION (nlsim models list shows "
                "them)"
            )
        version = store.checked_version(target)
        store.promote(
            version, args.reason, by=who(), command="nlsim models rollback", rolled_back=current.name
        )
    print(f"rolled back {store.root} from {current.name} to {version.name}: {args.reason}")
    say_trained_apart(store, version, current.name)
    return 0


def trained_apart(version: str, new: TrainedFrom, before: str, old: TrainedFrom) -> str | None:
    """What a person moving the pointer from ``before`` to ``version`` should know when the two were trained
    from another base model or with another Chinese conversion; ``None`` when they were not, or when either
    records none.

    Example:
        >>> e5 = TrainedFrom(base_model="fp1", model="e5", conversion="s2twp")
        >>> plain = TrainedFrom(base_model="fp1", model="e5", conversion="none")
        >>> trained_apart("v0002-b", e5, "v0003-c", plain)
        'v0002-b was trained from another conversion (s2twp, not none) than v0003-c: the next daily run ...'
        >>> trained_apart("v0002-b", e5, "v0001-a", e5) is None
        True
    """
    differ = []
    if new.base_model and old.base_model and new.base_model != old.base_model:
        differ.append(f"another base model ({new.model}, not {old.model})")
    if new.conversion and old.conversion and new.conversion != old.conversion:
        differ.append(f"another conversion ({new.conversion}, not {old.conversion})")
    if not differ:
        return None
    return (
        f"{version} was trained from {' and '.join(differ)} than {before}: the next daily run (--model "
        f"current) embeds its window again, with the threshold calibrated for {version}"
    )


def say_trained_apart(store: ModelStore, version: Path, before: str | None) -> None:
    """Print :func:`trained_apart` for a pointer just moved (nothing when no version was current)."""
    if before is None:
        return
    try:
        note = trained_apart(
            version.name, trained_from(store.info(version)), before, trained_from(store.info(before))
        )
    except StateError:  # the version it replaced is damaged: nothing to compare it with
        return
    if note is not None:
        print(note)


def version_rows(store: ModelStore) -> list[dict[str, Any]]:
    """One row per registered version, oldest first: its figures on validation (the latest the store
    keeps), when it was made, the base model and script conversion it was trained with (its ``store.json``
    records them), whether its files are as it was saved (``files``: ``ok``, else what is wrong,
    :meth:`ModelStore.files_problem`: ``missing: tokenizer.json``), and whether it is current, was promoted
    before, or never was. A damaged ``CURRENT.json`` is a :class:`StateError` naming it, with what to do (the
    list could not say which version is current)."""
    pointer = store.current()
    current = None if pointer is None else pointer.name
    promoted = {str(r.get("version")) for r in store.history() if r.get("decision") == "promoted"}
    rows = []
    for folder in store.versions():
        info = store.info(folder)
        if info is None:
            continue
        latest = latest_figures(folder / STORE_JSON, info)
        trained = trained_from(info)
        rows.append(
            {
                "version": folder.name,
                "created": text_field(folder / STORE_JSON, "created", info.get("created")),
                "base_model": trained.model,
                "conversion": trained.conversion,
                "files": store.files_problem(folder) or "ok",
                "scorer": latest.get("scorer"),
                "spearman": latest.get("spearman"),
                "f1": latest.get("f1"),
                "cv_f1": latest.get("cv_f1"),
                "promoted": "current"
                if folder.name == current
                else ("before" if folder.name in promoted else "never"),
            }
        )
    return rows


@dataclass(frozen=True)
class TrainedFrom:
    """What a version was trained from, as its ``store.json`` records it (``parts``): the base model's
    fingerprint (``base_model``), its name (``model``) and the Chinese conversion; ``None`` for what it
    does not record (a version registered without them, or a field that is not text)."""

    base_model: str | None = None
    model: str | None = None
    conversion: str | None = None


def trained_from(info: dict[str, Any] | None) -> TrainedFrom:
    """:class:`TrainedFrom` of a version's ``store.json`` (``parts.base_model``, ``parts.training``).

    Example:
        >>> trained_from({"parts": {"base_model": "fp1", "training": {"model": "e5", "conversion": "s2twp"}}})
        TrainedFrom(base_model='fp1', model='e5', conversion='s2twp')
        >>> trained_from({"fingerprint": "abc"}) == trained_from({"parts": "edited"}) == TrainedFrom()
        True
    """
    parts = (info or {}).get("parts")
    parts = parts if isinstance(parts, dict) else {}
    training = parts.get("training") if isinstance(parts.get("training"), dict) else {}

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value else None

    return TrainedFrom(
        text(parts.get("base_model")), text(training.get("model")), text(training.get("conversion"))
    )


def latest_figures(path: Path, info: dict[str, Any]) -> dict[str, Any]:
    """The latest validation figures a version's ``store.json`` (``path``) keeps (``{}``: none); a
    ``validation`` that is not an object of objects, a figure that is not a number or a ``scorer`` that is
    not text, is a :class:`StateError` naming the file and the field.

    Example:
        >>> latest_figures(Path("store.json"), {"validation": {"old": {"f1": 0.4}, "new": {"f1": 0.5}}})
        {'f1': 0.5}
        >>> latest_figures(Path("store.json"), {"validation": {"new": {"f1": "n/a"}}})
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: store.json: field 'validation.new.f1': 'n/a' is not a number
    """
    validation = info.get("validation") or {}
    if not isinstance(validation, dict):
        raise StateError(f"{path}: field 'validation': not an object of figures by validation pairs")
    if not validation:
        return {}
    key, latest = list(validation.items())[-1]
    if not isinstance(latest, dict):
        raise StateError(f"{path}: field 'validation.{key}': not an object of figures")
    for name in ("spearman", "f1", "cv_f1"):
        value = latest.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise StateError(f"{path}: field 'validation.{key}.{name}': {value!r} is not a number")
    text_field(path, f"validation.{key}.scorer", latest.get("scorer"))
    return latest


def text_field(path: Path, field: str, value: Any) -> str | None:
    """``value``, a field of a version's ``store.json`` (``path``) the list shows as text (``None``: not
    recorded); anything else (an object, a list, a number written in by hand) is a :class:`StateError`
    naming the file and the field, not a table that cannot be printed.

    Example:
        >>> text_field(Path("store.json"), "created", "2026-11-22T03:00:00+00:00")
        '2026-11-22T03:00:00+00:00'
        >>> text_field(Path("store.json"), "created", {"at": "2026-11-22"})
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: store.json: field 'created': {'at': '2026-11-22'} is not text
    """
    if value is not None and not isinstance(value, str):
        raise StateError(f"{path}: field '{field}': {value!r} is not text")
    return value


def _cell(value: Any, digits: int) -> str:
    return "" if value is None else f"{float(value):.{digits}f}"


def run_list(args: argparse.Namespace) -> int:
    store = store_of(args)
    rows = version_rows(store)
    current = next((r for r in rows if r["promoted"] == "current"), None)
    target, refused = rollback_outlook(store, rows, current and current["version"])
    if args.json:
        listed = {"store": str(Path(store.root)), "versions": rows}
        print(json.dumps({**listed, "rollback_to": target, "rollback_refused": refused}))
        return 0
    named = "none (zero-shot)" if current is None else current["version"] + _unusable(current)
    print(f"model store {store.root}: {len(rows)} version(s), current {named}")
    print(
        f"  {'version':<16} {'created':<25} {'base model':<22} {'convert':<7} {'scorer':<9} {'Spearman':>8} "
        f"{'F1':>6} {'F1 cv':>6}  promoted"
    )
    for r in rows:
        mark = "*" if r["promoted"] == "current" else " "
        print(
            f"{mark} {r['version']:<16} {r['created'] or '':<25} {r['base_model'] or '':<22} "
            f"{r['conversion'] or '':<7} {r['scorer'] or '':<9} {_cell(r['spearman'], 2):>8} "
            f"{_cell(r['f1'], 3):>6} {_cell(r['cv_f1'], 3):>6}  {r['promoted']}{_unusable(r)}"
        )
    if refused is not None and current is not None:  # a store with no current model says so in line 1
        print(f"nlsim models rollback would be refused: {refused}")
    elif target is not None:
        print(f"nlsim models rollback would make {target} current again")
    return 0


def _unusable(row: dict[str, Any]) -> str:
    """`` (not usable: missing: tokenizer.json)`` after a version whose files are not as it was saved."""
    return "" if row["files"] == "ok" else f" (not usable: {row['files']})"


def rollback_outlook(
    store: ModelStore, rows: list[dict[str, Any]], current: str | None
) -> tuple[str | None, str | None]:
    """What ``nlsim models rollback`` would do, for the list's last line and its ``--json``: the version it
    would make current (``rollback_to``), or, when it would refuse, why (``rollback_refused``: the version
    promoted before ``current`` is gone, not registered, or not usable; or there is none: no current model,
    or the current one is the only version ever promoted), in the words ``nlsim models rollback`` refuses
    with."""
    previous = store.previous()
    found = {r["version"]: r for r in rows}
    if current is None:
        return None, "no current model: nothing to roll back"
    if previous is None:
        return None, f"{current} {ONLY_PROMOTED}"
    if previous not in found:  # gone, or its store.json removed
        return None, (
            f"{previous}, promoted before {current}, is no longer a registered version (nlsim models "
            "promote VERSION makes one of those above current)"
        )
    if found[previous]["files"] != "ok":
        return None, (
            f"{previous}, promoted before {current}, is not usable ({found[previous]['files']}; restore its "
            "folder, or nlsim models promote VERSION makes another one current)"
        )
    return previous, None
