"""The verdict store as a file: a CSV beside its pair file, named after the whole name of the pair file
(:func:`store_path`: ``annotations/thucnews_tw_pairs.tsv`` keeps its verdicts in
``annotations/thucnews_tw_pairs.tsv.verdicts.csv``), so that ``news.tsv``, ``news.csv`` and ``news.parquet``
each have their own.

Its columns are :data:`~nlsim.clusters.verdicts.records.COLUMNS` and, last, :data:`ROW_CHECK`: the
SHA-256 of the row's other cells (:func:`row_check`), the integrity check of each row, as a daily state and
a model store check their files against a manifest. A row torn by a writer killed in it, or edited by
hand, no longer matches its check and is named by file, row and field (:class:`StoreFile` ``damaged``),
never read as a verdict with empty fields. The check covers every column of the file, so a later nlsim may
add columns (read by name); a store with columns this nlsim does not know is read, and never rewritten by
it (:attr:`StoreFile.unknown`). A store written before the checks (and before the text hashes) has no
:data:`ROW_CHECK` column: its rows are read as they are, a row with fewer fields than the header (or a
last row without its line end) as torn. The column of the decisions an overruling verdict keeps
(:data:`~nlsim.clusters.verdicts.records.EARLIER`) is written only while a verdict has some: a store
without overrules is written as before them, and one with them is never rewritten by an nlsim that does
not know them (it reads their pairs' verdicts as the pair file scores them). So is the column of an
overruling verdict's note (:data:`~nlsim.clusters.verdicts.records.NOTES`): written only while a verdict has
one; a store without it reads every verdict without a note. So is the column of the verdicts taken back
(:data:`TAKEN_BACK`, :class:`TakenBack`: kept after the verdicts, never read as ones).

The stores an earlier nlsim named after the pair file's name without its extension (``news.verdicts.csv``,
one for every pair file of that stem; beside a symbolic link instead of the file it links to, earlier
still) are :func:`earlier_paths`: read and folded into :func:`store_path`'s
(:mod:`nlsim.clusters.verdicts.pair_file`).

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> store = store_path(d / "news.tsv")
    >>> store.name
    'news.tsv.verdicts.csv'
    >>> save_verdicts(Verdicts.from_records([Verdict("a", "b", 1.0, annotator="ed")]), store)
    >>> [v.annotator for v in load_verdicts(store).records]
    ['ed']
    >>> _ = store.write_text(store.read_text()[:-20])  # a writer killed in the last row
    >>> read_store_file(store).damaged[0].field
    'row_sha256'
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from nlsim.clusters.verdicts.records import (
    COLUMNS,
    EARLIER,
    NOTES,
    REQUIRED,
    Decision,
    Verdict,
    Verdicts,
    decided,
    verdict_from_row,
)
from nlsim.errors import InputError
from nlsim.io.atomic import atomic_write_bytes
from nlsim.io.tables import decode_table_text

SUFFIX = ".verdicts.csv"
ROW_CHECK = "row_sha256"
"""The last column of a store: :func:`row_check` of the row's other cells."""
TAKEN_BACK = "taken_back"
"""The column of a verdict taken back (:class:`TakenBack`): when its pair left the pair file, at the latest
(the pair file's last change when the store first found the pair gone; ISO 8601, with its offset); empty for
every other row, and written only while the store keeps a verdict taken back."""
STORE_COLUMNS = (*COLUMNS, TAKEN_BACK, ROW_CHECK)
"""The columns this nlsim writes, in order."""


@dataclass(frozen=True)
class TakenBack:
    """A verdict taken back: its pair removed from the pair file (the way to take a verdict back), kept in
    the store with ``at``, when the pair left the pair file at the latest (the pair file's last change when
    the merge, or ``nlsim annotate verdicts --write``, first found the pair gone:
    :func:`~nlsim.clusters.verdicts.pair_file.taken_back_at`), so that a mark made no later than that and
    merged again (an old export) does not bring it back (:meth:`stands_over`), and one made since, before
    the store found the pair gone, is a new decision. It never acts and is no verdict of the store's;
    the pair file holding its pair again ends it.

    >>> back = TakenBack(Verdict("a", "b", 1.0, annotator="desk"), "2026-03-04T07:30:00+00:00")
    >>> back.stands_over("2026-03-02T08:15:00.000Z"), back.stands_over("2026-03-05T08:00:00Z")
    (True, False)
    >>> back.stands_over("")  # a row without its mark's time is dated when merged: after it
    False
    """

    verdict: Verdict
    at: str

    @property
    def key(self) -> tuple[str, str]:
        """The pair's key (:func:`~nlsim.clusters.constraints.pair_key`)."""
        return self.verdict.key

    def stands_over(self, marked_at: str) -> bool:
        """Whether a mark made at ``marked_at`` (a page export's time; '' for none) is no later than the
        taking back: an old mark sent again, which does not bring the verdict back."""
        then, when = decided(self.at), decided(marked_at) if marked_at else None
        return then is not None and when is not None and when <= then


def store_path(pairs_file: str | Path) -> Path:
    """The verdict store of ``pairs_file``: beside it, its whole name and ``.verdicts.csv``. A pair file
    that is a symbolic link keeps its store beside the file it links to (which a merge rewrites), so that a
    report given either path finds the same verdicts.

    >>> store_path("annotations/thucnews_tw_pairs.tsv").as_posix()
    'annotations/thucnews_tw_pairs.tsv.verdicts.csv'
    """
    path = _target(pairs_file)
    return path.with_name(path.name + SUFFIX)


def _target(pairs_file: str | Path) -> Path:
    path = Path(pairs_file)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def earlier_paths(pairs_file: str | Path) -> list[Path]:
    """The stores earlier nlsim versions kept for ``pairs_file`` that exist: named after the pair file's
    name without its extension (shared by every pair file of that stem), beside the file it links to and,
    for a symbolic link, beside the link.

    >>> earlier_paths("no/such/news.tsv")
    []
    """
    path = Path(pairs_file)
    found: list[Path] = []
    for where in (_target(path), path):
        old = where.with_name(where.name.rsplit(".", 1)[0] + SUFFIX)
        if old.is_file() and old != store_path(path) and old not in found:
            found.append(old)
    return found


def row_check(cells: dict[str, str]) -> str:
    """The SHA-256 of a row's cells (every column but :data:`ROW_CHECK`, by name), as a store keeps it.

    >>> row_check({"id_a": "a", "id_b": "b"}) == row_check({"id_b": "b", "id_a": "a"})
    True
    """
    text = "\x1e".join(f"{k}\x1f{v}" for k, v in sorted(cells.items()) if k != ROW_CHECK)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoreRow:
    """A sound row of a store: its data row number and its verdict."""

    row: int
    verdict: Verdict


@dataclass(frozen=True)
class StoreFile:
    """A store file as read: its sound rows, its damaged ones (each named by row and field, with the pair
    its ids name when they can be read), whether its rows carry checks, and the columns this nlsim does not
    know (written by a later one)."""

    path: Path
    rows: tuple[StoreRow, ...] = ()
    damaged: tuple[InputError, ...] = ()
    damaged_keys: tuple[tuple[str, str], ...] = ()
    checked: bool = True
    unknown: tuple[str, ...] = ()
    relaid: tuple[tuple[str, str], ...] = ()
    """The pairs whose verdict keeps a mark an earlier nlsim marked superseded among the decisions it
    overrules, read as one of them (:func:`~nlsim.clusters.verdicts.records.current_layout`)."""
    taken_back: tuple[TakenBack, ...] = ()
    """The verdicts taken back the store keeps (its rows with a :data:`TAKEN_BACK` time): none of
    :attr:`rows`."""

    @property
    def verdicts(self) -> Verdicts:
        """The verdicts of the sound rows (a later row on a pair replaces an earlier one)."""
        return Verdicts.from_records(r.verdict for r in self.rows)


def _text(path: Path) -> str:
    if not path.is_file():
        raise InputError(path, None, None, "the verdict store is not a file")
    return decode_table_text(path, path.read_bytes(), "csv")  # refused as every table is: row, field, byte


def _records(path: Path, text: str) -> list[list[str]]:
    try:
        return [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if r]
    except csv.Error as exc:
        raise InputError(path, None, None, f"cannot read the verdict store as CSV ({exc})") from None


def _damage(
    path: Path, n: int, cells: list[str], header: list[str], last: bool, torn_end: bool
) -> str | None:
    """Why data row ``n`` (``cells``) is damaged, or ``None``: fewer or more fields than the header, a
    last row without its line end in a store without checks."""
    if len(cells) < len(header):
        return f"torn: {len(cells)} of the header's {len(header)} fields (the row ends early)"
    if len(cells) > len(header):
        return f"{len(cells)} fields, the header has {len(header)}"
    if last and torn_end and ROW_CHECK not in header:
        return "torn: the store ends inside this row (no line end after it)"
    return None


def read_store_file(path: str | Path) -> StoreFile:
    """Read a store file (``path`` must exist), each row checked: its fields, its :data:`ROW_CHECK` (when
    the store has them) and its cells (:func:`~nlsim.clusters.verdicts.records.verdict_from_row`). A file
    that cannot be read as a store at all (not UTF-8, not CSV, no header of its columns) is refused
    (:class:`InputError`); a damaged row is kept in ``damaged``, not refused here."""
    path = Path(path)
    text = _text(path)
    records = _records(path, text)
    if not records:
        return StoreFile(path)
    header = [h.strip() for h in records[0]]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(path, None, missing[0], f"missing column (a verdict store has {', '.join(COLUMNS)})")
    checked = ROW_CHECK in header
    rows: list[StoreRow] = []
    damaged: list[InputError] = []
    keys: list[tuple[str, str]] = []
    relaid: list[tuple[str, str]] = []
    back: list[TakenBack] = []
    torn_end = not text.endswith(("\n", "\r"))
    for n, cells in enumerate(records[1:], start=1):
        named = dict(zip(header, cells, strict=False))
        why = _damage(path, n, cells, header, n == len(records) - 1, torn_end)
        field = header[min(len(cells), len(header)) - (len(cells) >= len(header))] if why else None
        if why is None and checked and named.get(ROW_CHECK) != row_check(named):
            why, field = "the row is not the one nlsim wrote (torn, or edited by hand)", ROW_CHECK
        try:
            verdict = verdict_from_row(named, path, n)
        except InputError as exc:
            damaged.append(exc if why is None else InputError(path, n, field or exc.field, why))
        else:
            at = named.get(TAKEN_BACK, "").strip()
            if why is None and at and decided(at) is None:
                why, field = f"{TAKEN_BACK} {at!r} is not a time", TAKEN_BACK
            if why is None and at:
                back.append(TakenBack(verdict, at))
                continue
            if why is None:
                rows.append(StoreRow(n, verdict))
                if Decision.from_cell(named.get(EARLIER, "")) != verdict.earlier:
                    relaid.append(verdict.key)
                continue
            damaged.append(InputError(path, n, field, why))
            keys.append(verdict.key)
            continue
        ids = [named.get("id_a", "").strip(), named.get("id_b", "").strip()]
        if all(ids) and ids[0] != ids[1]:
            keys.append((min(ids), max(ids)))
    unknown = tuple(h for h in header if h not in STORE_COLUMNS)
    return StoreFile(
        path, tuple(rows), tuple(damaged), tuple(keys), checked, unknown, tuple(relaid), tuple(back)
    )


def load_verdicts(path: str | Path) -> Verdicts:
    """The verdicts of a store file, every row sound: a file that does not exist holds none; the first
    damaged row is refused by file, row and field."""
    path = Path(path)
    if not path.exists():
        return Verdicts()
    store = read_store_file(path)
    if store.damaged:
        raise store.damaged[0]
    return store.verdicts


def store_text(verdicts: Verdicts, taken_back: tuple[TakenBack, ...] = ()) -> str:
    """The store's text for ``verdicts`` and the verdicts ``taken_back``, after them:
    :data:`STORE_COLUMNS` (without :data:`EARLIER` while no verdict keeps an earlier decision, overruled or
    superseded, without :data:`NOTES` while none has a note, and without :data:`TAKEN_BACK` while none is
    taken back), each row with its check."""
    every = [*verdicts.records, *(t.verdict for t in taken_back)]
    left_out = {EARLIER} if not any(v.earlier for v in every) else set()
    left_out |= {NOTES} if not any(v.notes for v in every) else set()
    columns = [c for c in COLUMNS if c not in left_out]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*columns, *([TAKEN_BACK] if taken_back else []), ROW_CHECK])
    rows = [(v, "") for v in verdicts.records] + [(t.verdict, t.at) for t in taken_back]
    for v, at in rows:
        cells = {c: v.cell(c) for c in columns}
        if taken_back:
            cells[TAKEN_BACK] = at
        writer.writerow([*cells.values(), row_check(cells)])
    return buf.getvalue()


def save_verdicts(verdicts: Verdicts, path: str | Path, taken_back: tuple[TakenBack, ...] = ()) -> None:
    """Write the store (``verdicts``, and the verdicts ``taken_back`` it keeps) atomically (a temporary
    file beside it, then a rename): a failed write leaves the previous store as it was. A store that is a
    symbolic link (kept elsewhere) keeps its link: the file it links to is written; an existing store keeps
    its permissions (:func:`write_store_bytes`)."""
    write_store_bytes(path, store_text(verdicts, taken_back).encode("utf-8"))


def write_store_bytes(path: str | Path, data: bytes | None) -> None:
    """Write ``data`` as the store file ``path``, atomically, keeping what the user made of the store: a
    symbolic link stays in place (the file it links to is written) and an existing file keeps its
    permissions. ``None`` removes the file (the link stays): a store put back as it was, none."""
    link = Path(path)
    target = Path(os.path.realpath(link)) if link.is_symlink() else link
    if data is None:
        target.unlink(missing_ok=True)
        return
    mode = stat.S_IMODE(os.stat(target).st_mode) if target.is_file() else None
    atomic_write_bytes(target, data, mode=mode)
