"""The verdict store checked against its pair file: what holds is what the pair file records.

Every merge adds its pairs to the pair file (their ``stratum`` starts with ``editor-loop``) and to the
store. The store is written first and the pair file's rename commits the merge, so the pair file is the
record of every merged verdict and the store adds what the pair file does not keep (where a verdict came
from, when, the texts' hashes). :func:`check_store` reads both and makes them agree:

- a verdict the pair file does not hold (a merge killed between the store's rename and the pair file's,
  or a pair removed from the pair file by hand) does not act: the merge is rolled back (``dropped``); one
  whose pair is gone from the pair file (``gone``) is kept as taken back once the store is written
  (:class:`~nlsim.clusters.verdicts.store.TakenBack`, dated by the pair file's last change, when the pair
  left it at the latest: a mark made before, merged again, does not bring it back), unless the merge
  that writes it merges it again (one killed before its pair file);
- a pair the pair file holds with another score or split takes the pair file's (``corrected``), unless
  the verdict overrules it (:attr:`~nlsim.clusters.verdicts.records.Verdict.overrules`: an editor's newer
  decision on a training pair, ``nlsim annotate merge --overrule``): an overruling verdict holds when the
  pair file holds its pair in the training split with the score the verdict overruled (its first earlier
  decision not superseded, :attr:`~nlsim.clusters.verdicts.records.Verdict.overruled`: the pair file's row
  is older than the verdict). One the pair file contradicts (the pair moved to
  another split, or given another score since) does not hold (``unheld``): the pair file's row does;
- a merged pair the store lacks (a store deleted, cut at a row boundary, or a row damaged: torn or edited)
  is rebuilt from its row of the pair file, without its source and time (``rebuilt``): from the first
  merged row the store holds on, or every merged row when the store holds none (a store lost whole);
- a store under an earlier name (:func:`~nlsim.clusters.verdicts.store.earlier_paths`) is read, the
  verdicts the pair file holds taken from it (``migrated``), and a verdict without text hashes gets them
  from its pair's texts.

A report reads the result and writes nothing; a merge writes it (:func:`write_store`). A damaged row (torn,
or edited by hand: :mod:`nlsim.clusters.verdicts.store`) is refused by both
(:meth:`StoreCheck.refuse_damaged`): the store is restored from a copy, or rebuilt from the pair file by
``nlsim annotate verdicts --write``.
:meth:`StoreCheck.notes` says what was found, one line each.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> pairs = d / "p.tsv"
    >>> _ = pairs.write_text("pair_id\\tid_a\\tid_b\\ttext_a\\ttext_b\\tscore\\tsplit\\tstratum\\n"
    ...                      "e1\\ta\\tb\\tFloods\\tStorm\\t0\\ttrain\\teditor-loop:x\\n")
    >>> check = check_store(pairs)  # no store: the merged row is rebuilt
    >>> [v.key for v in check.rebuilt], check.verdicts.constraints().forbids("a", "b")
    ([('a', 'b')], True)
"""

from __future__ import annotations

import datetime as dt
import glob
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from nlsim.clusters.constraints import pair_key
from nlsim.clusters.verdicts.records import ACTING_SPLIT, LEVELS, NOTES, SPLITS, Verdict, Verdicts
from nlsim.clusters.verdicts.store import (
    STORE_COLUMNS,
    SUFFIX,
    StoreFile,
    TakenBack,
    earlier_paths,
    read_store_file,
    save_verdicts,
    store_path,
    store_text,
)
from nlsim.errors import InputError
from nlsim.io.editor_file import MERGED, text_sha256
from nlsim.io.pairs import check_pinned, item_id, load_pairs

PAIR_SUFFIXES = (".tsv", ".csv", ".parquet")
"""The pair files' extensions (:func:`nlsim.io.pairs.read_pair_table`)."""


@dataclass(frozen=True)
class PairRow:
    """A pair of the pair file that names its two items: its place, scores and texts."""

    index: int
    id_a: str
    id_b: str
    score: float
    split: str
    text_a: str
    text_b: str
    annotator: str
    merged: bool
    notes: str = ""

    def verdict(self) -> Verdict:
        """The verdict this row records (no source or time: the pair file does not keep them)."""
        return Verdict(
            self.id_a,
            self.id_b,
            round(self.score, 2),
            self.split,
            self.annotator,
            sha256_a=text_sha256(self.text_a),
            sha256_b=text_sha256(self.text_b),
        )

    def is_verdict(self) -> bool:
        """Whether this row can record a verdict: a rubric level in a known split."""
        return self.split in SPLITS and any(abs(self.score - lv) < 1e-9 for lv in LEVELS)

    def agrees(self, v: Verdict) -> bool:
        """Whether ``v`` gives this pair the score and split this row does."""
        return abs(v.score - self.score) < 1e-9 and v.split == self.split

    def overruled_by(self, v: Verdict) -> bool:
        """Whether ``v`` overrules this row and holds: a training pair here and in ``v``, and the first
        decision ``v`` overruled is this row's score (the row is older than the verdict)."""
        return (
            v.overrules
            and self.split == ACTING_SPLIT
            and v.split == ACTING_SPLIT
            and v.overruled is not None
            and abs(v.overruled.score - self.score) < 1e-6
        )

    def hashed(self, v: Verdict) -> Verdict:
        """``v`` with the texts' hashes of this row on the side of each of its items."""
        a, b = (self.text_a, self.text_b) if v.id_a == self.id_a else (self.text_b, self.text_a)
        return replace(v, sha256_a=text_sha256(a), sha256_b=text_sha256(b))


def _texts(frame: pd.DataFrame, col: str) -> list[str]:
    """A column's cells as stripped text ("" for an empty cell or a column the table lacks)."""
    if col not in frame.columns:
        return [""] * len(frame)
    return [
        "" if v is None or (isinstance(v, float) and v != v) else str(v).strip() for v in frame[col].array
    ]


def pair_rows(pairs: pd.DataFrame) -> dict[tuple[str, str], PairRow]:
    """The pairs of a validated pair table that name both items, by :func:`pair_key` (the first row of a
    pair given twice)."""
    out: dict[tuple[str, str], PairRow] = {}
    if "id_a" not in pairs.columns or "id_b" not in pairs.columns:
        return out
    columns = zip(  # each cell as .iloc gives it (numpy scalars stay numpy scalars)
        pairs["id_a"].array,
        pairs["id_b"].array,
        pairs["score"].array,
        pairs["split"].array,
        pairs["text_a"].array,
        pairs["text_b"].array,
        _texts(pairs, "annotator"),
        _texts(pairs, "stratum"),
        _texts(pairs, NOTES),
        strict=True,
    )  # whole columns at once: a cell at a time took 1.7 s for a 4,600-pair file
    for i, (id_a, id_b, score, split, text_a, text_b, annotator, stratum, notes) in enumerate(columns):
        a, b = item_id(id_a), item_id(id_b)
        if not a or not b or a == b:
            continue
        out.setdefault(
            pair_key(a, b),
            PairRow(
                i,
                a,
                b,
                float(score),
                str(split),
                str(text_a),
                str(text_b),
                annotator,
                stratum == MERGED or stratum.startswith(MERGED + ":"),
                notes,
            ),
        )
    return out


@dataclass(frozen=True)
class StoreCheck:
    """A verdict store read against its pair file (see the module docstring).

    Attributes:
        pairs_file: the pair file; path: its store (today's name).
        verdicts: the verdicts that hold, the store's order, the rebuilt ones last.
        files: the store files read (today's and earlier ones), as read.
        rebuilt: merged pairs the store lacked, rebuilt from the pair file.
        dropped: verdicts the pair file does not hold (they do not act).
        corrected: verdicts given the pair file's score or split (as they now hold).
        unheld: overruling verdicts the pair file contradicts (their pair in another split, or scored
            otherwise than what they overruled): the pair file's row holds instead.
        migrated: verdicts taken from a store under an earlier name.
        hashed: how many verdicts were given their texts' hashes from the pair file.
        unchecked: the pair file names no items: the store could not be checked against it.
        row_notes: the editor's note the pair file's merged row gives a verdict that holds without a note of
            its own (a verdict a merge added: the pair file keeps its note, the store does not), by
            ``pair_key``: what :meth:`shown` gives the verdict to show, never written into the store.
        taken_back: the verdicts taken back that today's store keeps and the pair file does not hold again.
        gone: of ``dropped``, the verdicts of today's store whose pair the pair file no longer holds: taken
            back from the store's next write (:func:`write_store`) on.
    """

    pairs_file: Path
    path: Path
    verdicts: Verdicts
    files: tuple[StoreFile, ...] = ()
    rebuilt: tuple[Verdict, ...] = ()
    dropped: tuple[Verdict, ...] = ()
    corrected: tuple[Verdict, ...] = ()
    migrated: tuple[Verdict, ...] = ()
    hashed: int = 0
    unchecked: bool = False
    unheld: tuple[Verdict, ...] = ()
    row_notes: Mapping[tuple[str, str], str] = field(default_factory=dict)
    taken_back: tuple[TakenBack, ...] = ()
    gone: tuple[Verdict, ...] = ()

    def shown(self) -> Verdicts:
        """The verdicts that hold, each verdict a merge added with the note its merged row in the pair
        file gives it (:attr:`row_notes`): what a page and ``nlsim annotate verdicts`` show."""
        if not self.row_notes:
            return self.verdicts
        return Verdicts.from_records(
            replace(v, notes=self.row_notes[v.key]) if v.key in self.row_notes else v
            for v in self.verdicts.records
        )

    @property
    def damaged(self) -> tuple[InputError, ...]:
        """The damaged rows of the store files read, each named by file, row and field."""
        return tuple(e for f in self.files for e in f.damaged)

    @property
    def unknown(self) -> tuple[str, ...]:
        """Columns of today's store that this nlsim does not know (a later nlsim wrote it)."""
        return next((f.unknown for f in self.files if f.path == self.path), ())

    def refuse_damaged(self) -> None:
        """Refuse (:class:`InputError`, by file, row and field) a store with a damaged row: a row torn or
        edited by hand is never read as a verdict, and never rewritten over; restore the store, or rebuild
        it from the pair file (``nlsim annotate verdicts --write``)."""
        if not self.damaged:
            return
        bad = self.damaged[0]
        more = f" (and {len(self.damaged) - 1} more damaged row(s))" if len(self.damaged) > 1 else ""
        raise InputError(
            bad.file,
            bad.row,
            bad.field,
            f"{bad.reason}{more}; restore the verdict store from a copy, or rebuild it from the pair file "
            f"with `nlsim annotate verdicts --pairs {self.pairs_file} --write` (the damaged rows' source "
            "and time are lost, and so is an editor's overruling verdict among them: the pair file holds "
            "the score it overruled; merge the editor's file again with --overrule)",
        )

    @property
    def in_step(self) -> bool:
        """Whether the store on disk is already what holds, in today's form (nothing to write)."""
        today = next((f for f in self.files if f.path == self.path), None)
        if today is None:
            return not len(self.verdicts)
        text = store_text(self.verdicts, self.taken_back)
        return self.path.read_text(encoding="utf-8-sig") == text or (
            bool(self.unknown)
            and not (self.rebuilt or self.dropped or self.corrected or self.damaged or self.unheld)
        )

    def notes(self) -> list[str]:
        """What the check found, one line each (nothing when the store and the pair file agree)."""
        out = [f"{e}" for e in self.damaged]
        if self.damaged:
            out.append(f"the merged pairs of the damaged rows are rebuilt from {self.pairs_file}")
        if self.unchecked:
            out.append(f"{self.pairs_file} names no items (no id_a/id_b): its verdict store is not checked")
        out += _listed(
            self.dropped,
            f"verdict(s) in {self.path} that {self.pairs_file} does not hold as one (a merge "
            "that did not finish, or a pair removed from the pair file) do not act",
        )
        if self.gone:
            out.append(
                f"{len(self.gone)} of them, their pair gone from {self.pairs_file}, are kept in "
                f"{self.path} as taken back once it is written, dated by the pair file's last change (a mark "
                "made before then, merged again, does not bring them back)"
            )
        out += _listed(self.corrected, f"verdict(s) take the score and split {self.pairs_file} gives them")
        out += _listed(
            self.unheld,
            f"overruling verdict(s) do not hold: {self.pairs_file} holds their pair in another split, or "
            "with another score than the one they overruled (changed since); its row holds",
        )
        if self.rebuilt:
            why = "no verdict store" if not self.files else "missing or damaged in the store"
            out += _listed(
                self.rebuilt,
                f"merged pair(s) of {self.pairs_file} ({why}) rebuilt from the pair file as verdicts "
                "(their source and time are not kept there)",
            )
        if self.migrated:
            earlier = sorted({str(f.path) for f in self.files if f.path != self.path})
            out.append(
                f"{len(self.migrated)} verdict(s) of {self.pairs_file} found in {', '.join(earlier)} (the "
                "name an earlier nlsim gave the store of every pair file of that stem) are its verdicts; "
                f"their store is now {self.path}"
            )
        if self.hashed:
            out.append(f"{self.hashed} verdict(s) given the hashes of their texts in {self.pairs_file}")
        for f in self.files:
            out += _listed(
                tuple(v for v in self.verdicts.records if v.key in f.relaid),
                f"verdict(s) in {f.path} keep a mark an earlier nlsim marked superseded among the decisions "
                "they overrule: read as one of them, as a merge keeps it today (the store's next write "
                "writes it so)",
            )
        return out


def _listed(verdicts: tuple[Verdict, ...], what: str, shown: int = 3) -> list[str]:
    if not verdicts:
        return []
    named = ", ".join(f"{v.id_a}/{v.id_b}" for v in verdicts[:shown])
    more = f" and {len(verdicts) - shown} more" if len(verdicts) > shown else ""
    return [f"{len(verdicts)} {what}: {named}{more}"]


def _read(pairs_file: str | Path) -> tuple[Path, list[StoreFile]]:
    path = store_path(pairs_file)
    files = [read_store_file(p) for p in [path, *earlier_paths(pairs_file)] if p.exists()]
    for store in (path, *earlier_paths(pairs_file)):  # read as a chain read them first (else refused)
        check_pinned(store)
    return path, files


def check_store(pairs_file: str | Path, pairs: pd.DataFrame | None = None) -> StoreCheck:
    """The verdicts of ``pairs_file``'s store as its pair file records them (see the module docstring);
    ``pairs``: the pair file already read and validated. A store that cannot be read at all is refused
    (:class:`InputError`); what else the check finds is in the result, written nowhere."""
    path, files = _read(pairs_file)
    table = pairs if pairs is not None else load_pairs(pairs_file)
    rows = pair_rows(table)
    today = [f for f in files if f.path == path]
    if "id_a" not in table.columns or "id_b" not in table.columns:  # nothing to check against
        held = Verdicts().updated(v for f in reversed(files) for v in f.verdicts.records)
        return StoreCheck(Path(pairs_file), path, held, tuple(files), unchecked=bool(files))
    found = _Found()
    for f in [*today, *(f for f in files if f.path != path)]:
        for v in f.verdicts.records:
            row = rows.get(v.key)
            if v.key in found.kept or (row is None and f.path != path):
                continue  # today's store first; an earlier store's other pairs are another file's
            found.take(v, row, migrated=f.path != path)
    rebuilt = _rebuilt(rows, found.kept, files)
    verdicts = Verdicts.from_records([*found.kept.values(), *rebuilt])
    back = tuple(t for f in today for t in f.taken_back if t.key not in rows)
    noted = {
        v.key: rows[v.key].notes
        for v in verdicts.records
        if not v.notes and not v.overrules and rows[v.key].merged and rows[v.key].notes
    }
    return StoreCheck(
        Path(pairs_file),
        path,
        verdicts,
        tuple(files),
        tuple(rebuilt),
        tuple(found.dropped),
        tuple(found.corrected),
        tuple(found.migrated),
        found.hashed,
        unheld=tuple(found.unheld),
        row_notes=noted,
        taken_back=back,
        gone=tuple(v for v in found.dropped if v.key not in rows),
    )


@dataclass
class _Found:
    """What :func:`check_store` finds, verdict by verdict (:meth:`take`)."""

    kept: dict[tuple[str, str], Verdict] = field(default_factory=dict)
    dropped: list[Verdict] = field(default_factory=list)
    corrected: list[Verdict] = field(default_factory=list)
    migrated: list[Verdict] = field(default_factory=list)
    unheld: list[Verdict] = field(default_factory=list)
    hashed: int = 0

    def take(self, v: Verdict, row: PairRow | None, *, migrated: bool) -> None:
        """Keep ``v`` as the pair file's ``row`` of its pair says it holds (see the module docstring)."""
        if row is None or not (row.is_verdict() or v.overrules):  # not held, or held as no editor's level
            self.dropped.append(v)
            return
        if not (v.sha256_a and v.sha256_b):
            v, self.hashed = row.hashed(v), self.hashed + 1
        if v.overrules and not row.overruled_by(v):
            self.unheld.append(v)  # the pair file's row holds: rebuilt from it when it is a merged one
            return
        if not v.overrules and not row.agrees(v):
            v = replace(v, score=round(row.score, 2), split=row.split)
            self.corrected.append(v)
        self.kept[v.key] = v
        if migrated:
            self.migrated.append(v)


def _rebuilt(
    rows: dict[tuple[str, str], PairRow], kept: dict[tuple[str, str], Verdict], files: list[StoreFile]
) -> list[Verdict]:
    """The merged pairs the store lacks, from the first merged row any store names on (every merged row
    when no store names one), as verdicts."""
    named = [
        rows[k].index
        for f in files
        for k in [*(v.key for v in f.verdicts.records), *f.damaged_keys]
        if k in rows and rows[k].merged  # an overruled pair of the annotators' says nothing of the merges
    ]
    first = min(named) if named else 0
    out = []
    for key, row in sorted(rows.items(), key=lambda kv: kv[1].index):
        if row.merged and row.index >= first and key not in kept and row.is_verdict():
            out.append(row.verdict())
    return out


def write_store(check: StoreCheck, verdicts: Verdicts | None = None) -> None:
    """Write ``verdicts`` (default: what ``check`` found to hold) as the store of ``check``'s pair file, in
    today's form (:func:`~nlsim.clusters.verdicts.store.save_verdicts`), with the verdicts taken back it
    keeps and those whose pair is gone from the pair file (:attr:`StoreCheck.gone`, taken back when the pair
    file last changed: :func:`taken_back_at`), none
    on a pair of ``verdicts``. Refuses a store this nlsim cannot write whole: one with columns it does not
    know (a later nlsim wrote it)."""
    if check.unknown:
        raise InputError(
            check.path,
            None,
            check.unknown[0],
            f"the verdict store has columns this nlsim does not know ({', '.join(check.unknown)}): a later "
            f"nlsim wrote it (this one writes {', '.join(STORE_COLUMNS)}); use that nlsim",
        )
    held = verdicts if verdicts is not None else check.verdicts
    when = taken_back_at(check.pairs_file) if check.gone else ""
    keys = {v.key for v in held.records}
    back = {t.key: t for t in (*check.taken_back, *(TakenBack(v, when) for v in check.gone))}
    save_verdicts(held, check.path, tuple(t for k, t in back.items() if k not in keys))


def taken_back_at(pairs_file: str | Path) -> str:
    """When the verdicts whose pair is gone from ``pairs_file`` were taken back: the pair file's last change
    (the editor removed the pair then at the latest; a merge writes the store before the pair file, so no
    merge has changed it since), to the next whole second, and never later than now (a clock set wrong, a
    file from the future). A mark made after it is a new decision; one made no later than it is not
    (:meth:`~nlsim.clusters.verdicts.store.TakenBack.stands_over`). Now when the pair file cannot be read.

    >>> import tempfile, os, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.tsv"
    >>> _ = f.write_text("pair_id\\n")
    >>> os.utime(f, (1772439300.25, 1772439300.25))
    >>> taken_back_at(f)
    '2026-03-02T08:15:01+00:00'
    """
    now = dt.datetime.now(dt.UTC)
    try:
        changed = dt.datetime.fromtimestamp(math.ceil(os.stat(pairs_file).st_mtime), dt.UTC)
    except (OSError, ValueError, OverflowError):
        changed = now
    return min(changed, now).isoformat(timespec="seconds")


def retire_earlier(check: StoreCheck, held: Verdicts) -> list[Path]:
    """Remove each store under an earlier name whose every verdict is now in today's store of a pair file
    of its stem (``held``, the store of ``check``'s pair file, or a sibling's: ``news.csv`` beside
    ``news.tsv``), its damaged rows' pairs too (only ``nlsim annotate verdicts --write`` gets here with
    one: a merge refuses a damaged store). Returns those removed."""
    removed = []
    for f in check.files:
        if f.path == check.path or len(f.damaged_keys) < len(f.damaged):
            continue
        moved = {v.key for v in held.records}
        stem = f.path.name[: -len(SUFFIX)]
        for sibling in f.path.parent.glob(f"{glob.escape(stem)}.*"):
            other = store_path(sibling)
            if sibling.suffix in PAIR_SUFFIXES and other != check.path and other.is_file():
                moved |= {r.verdict.key for r in read_store_file(other).rows}
        if all(k in moved for k in [*(v.key for v in f.verdicts.records), *f.damaged_keys]):
            f.path.unlink(missing_ok=True)
            removed.append(f.path)
    return removed
