"""Load a news corpus (Parquet, CSV/TSV or JSONL) into one validated schema.

Schema: ``id`` and ``title`` are required; ``description``, ``body``, ``source``, ``published_at``,
``lang`` and ``url`` are optional (filled with empty text / ``NaT`` when absent); other columns are kept as
they are. The file is read by :func:`nlsim.io.tables.read_table` (explicit quoting rules, every row's
field count checked).
Which text fields are embedded is a parameter (``text_fields``); every one of them must be text.
A column that looks like a schema field the file lacks (``pub_date`` for ``published_at``, ``headline`` for
``title``: :data:`nlsim.io.corpus_schema.LOOKALIKES`) is kept and not read, and :attr:`Corpus.warnings`
says so, naming the field to rename it to.

A ``published_at`` without an offset (``2026/11/25 16:52``, as CMS exports write it) is a time on the
clock of the run's time zone (``timezone``, the deployment's ``--timezone``; UTC by default): it is read
there and kept in UTC, and :attr:`Corpus.notes` says how many were read so. A time the zone's clocks
skip or repeat (the hour of a daylight-saving change) is refused by row: it would be guessed; a date alone
on a day whose midnight is skipped or repeated is the day's first instant.
A placeholder for no date (``1970-01-01`` or a Unix time of 0 on any clock, ``1900-01-01``, ``1899-12-30``,
``0000-00-00``, ``0001-01-01``, at midnight: :func:`placeholder_time`) is no date: the item is undated
(paired with items of any date under ``--window-hours``), and :attr:`Corpus.warnings` says how many, with
the first rows (:func:`placeholder_times_warning`).

An optional text field (``description``, ``body``, ``source``, ``lang``, ``url``) holding only an export's
marker of a missing value (``\\N``, ``NULL``, ``None``, ``nan``, ``N/A``:
:data:`nlsim.io.cells.MISSING_MARKERS`) is empty, as an empty cell is, and :attr:`Corpus.notes` says how many
were read so: embedded, ``NULL`` would make two copies of one headline, one exported with an empty
description and one with ``NULL``, two texts.
A ``lang`` of ``nan`` is kept: it is the language tag of Min Nan (Taiwanese Hokkien, ``nan-TW``)
(:data:`LANGUAGE_TAGS`).

A text field holding control characters (a NUL, a bell, a terminal's colour escape; not a tab or a line
break: the mark of a damaged export) is kept as written, as the Parquet files of a report keep it (its
spreadsheet files, ``pairs.csv``, ``members.csv`` and ``report.xlsx``, hold the text without them), and
:attr:`Corpus.warnings` names the rows and fields (:func:`controls_warning`); the model reads the text
without them, and so does the copy key (:func:`nlsim.io.cells.model_text`).

A title that holds U+FFFD (the replacement character a decoder puts for bytes it could not read: the text
was damaged before nlsim saw it) is kept as it is, and :attr:`Corpus.warnings` says how many, with the
first ids.

Every problem is reported with the file, the row (1-based data row: the first item is row 1, whatever
the format) and the field. By default the first bad row raises :class:`~nlsim.errors.InputError`; with
``quarantine=PATH`` bad rows are written to that CSV file with the reason, and loading goes on; the file is
written (atomically) once the load has succeeded, or by the run once it has (``deferred``,
:func:`write_quarantine`). Nothing is dropped silently: the :class:`Corpus` says how many rows were
quarantined.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "news.csv"
    >>> _ = p.write_text("id,title,source\\n1,Floods in the north,AP\\n2,Storm warning,Reuters\\n")
    >>> corpus = load_corpus(p, text_fields=("title",))
    >>> corpus.frame["id"].tolist(), corpus.texts()
    (['1', '2'], ['Floods in the north', 'Storm warning'])
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from nlsim.errors import ConfigError, InputError
from nlsim.io.atomic import atomic_path
from nlsim.io.cells import (
    blank,
    describe,
    id_fault,
    invisible_only,
    misread_utf8,
    missing_cell,
    missing_marker,
    model_text,
    placeholder,
    shown_text,
    text_control,
)
from nlsim.io.corpus_schema import (
    LOOKALIKES,
    OPTIONAL_TEXT,
    REQUIRED,
    SCHEMA_HELP,
    TEXT_FIELDS,
    lookalike_warnings,
    normalised_column,
    spelt_otherwise,
    zone_problem,
)
from nlsim.io.editor_file import escape
from nlsim.io.tables import BrokenRow, read_table, separator_hint, text_columns
from nlsim.io.times import TimeRead, check_time, placeholder_time, shown_time

DEFAULT_TEXT_FIELDS: tuple[str, ...] = ("title", "description")


@dataclass
class Corpus:
    """A validated corpus: ``frame`` holds one row per item in file order."""

    frame: pd.DataFrame
    path: Path
    text_fields: tuple[str, ...] = DEFAULT_TEXT_FIELDS
    quarantined: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["row", "field", "reason"])
    )
    quarantine_path: Path | None = None
    warnings: tuple[str, ...] = ()
    """Columns that look like schema fields and are not read (:func:`lookalike_warnings`), and titles that
    hold U+FFFD (:func:`replacement_warning`) or UTF-8 misread and saved again (:func:`misread_warning`),
    times that were placeholders for no date, read as undated (:func:`placeholder_times_warning`), and
    texts that hold control characters (:func:`controls_warning`)."""
    notes: tuple[str, ...] = ()
    """What the loader read one way of several, to say once: the times without an offset, read in the
    run's time zone (:func:`naive_times_note`), and the optional fields read as empty for holding a marker
    of a missing value (:func:`missing_markers_note`)."""
    naive_times: int = 0
    """How many ``published_at`` values had no offset (read in ``timezone``)."""
    timezone: str = "UTC"
    """The time zone a time without an offset was read in."""

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def ids(self) -> list[str]:
        return self.frame["id"].tolist()

    def texts(self, fields: Sequence[str] | None = None) -> list[str]:
        """The text to embed for each item: the chosen fields, non-empty ones joined by a space."""
        cols = [self.frame[f].tolist() for f in (fields or self.text_fields)]
        return [" ".join(part for part in parts if part) for parts in zip(*cols, strict=True)]

    def content_hashes(self, fields: Sequence[str] | None = None) -> list[str]:
        """SHA-256 (first 16 hex digits) of each item's embedded text: changes when the text changes."""
        return [hashlib.sha256(t.encode("utf-8")).hexdigest()[:16] for t in self.texts(fields)]


def _check_text(value: Any, *, required: bool) -> tuple[str | None, str | None]:
    """Return (text, error reason)."""
    if missing_cell(value):
        return ("", None) if not required else (None, "missing value")
    if not isinstance(value, str):
        return None, f"not text (got {type(value).__name__} {value!r:.40})"
    text = value.strip()
    if required and not text:
        return None, "empty text"
    unseen = invisible_only(text) if required else None
    if unseen is not None:
        # zero-width spaces, soft hyphens, byte-order marks, Hangul fillers: nothing to read, and every such
        # item would be a "duplicate" of every other
        return None, f"empty text (only invisible characters: {unseen:.60})"
    error = placeholder(text) if required else None
    if error is not None:  # "#NAME?" for every title a spreadsheet ran as a formula: all one text
        return None, error
    if required and not any(_readable(ch) for ch in text):
        # "-", "...", "？？？": what a CMS puts for a missing headline; every item so titled would be embedded
        # as one text, and be a duplicate of every other
        return None, f"no text, only punctuation ({text!r:.40}): a placeholder for a missing text?"
    if required and not any(_readable(ch) for ch in shown_text(text)):
        # "<p></p>", "<br/>", "&nbsp;": the model reads a text's HTML as a page shows it, nothing
        return None, f"no text, only HTML markup ({text!r:.40}): a placeholder for a missing text?"
    if required and not any(_readable(ch) for ch in model_text(text)):
        # "\x1b[31m\x1b[0m": a terminal's colour codes, which the model reads as nothing
        return None, f"no text, only control characters ({text!r:.40}): a damaged export?"
    return text, None


def _readable(ch: str) -> bool:
    """Whether ``ch`` says something: it shows (:func:`~nlsim.io.cells.blank`), and is not punctuation."""
    return not blank(ch) and not unicodedata.category(ch).startswith("P")


def _check_id(value: Any) -> tuple[str | None, str | None]:
    if missing_cell(value):
        return None, "missing id"
    if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)):
        return None, f"id must be text or an integer (got {type(value).__name__})"
    text = str(value).strip()
    if not text:
        return None, "empty id"
    fault = id_fault(text)
    if fault is not None:
        return None, fault
    return text, None


def _duplicate(ident: str, raw: Any, first: tuple[int, Any]) -> str:
    """Why an id seen first at the row and as written there ``first`` (row, raw id) is refused again: named
    as each of the two rows wrote it when that differs (a no-break space after it, spaces around it, which
    the id read without).

    >>> _duplicate("n1", "n1\\u00a0", (4, "n1"))
    "duplicate id 'n1' (first seen at row 4; written 'n1\\\\xa0' here: white space around an id is dropped)"
    >>> _duplicate("n1", "n1", (4, " n1 "))
    "duplicate id 'n1' (first seen at row 4, written ' n1 ' there: white space around an id is dropped)"
    """
    row, first_raw = first
    there, here = str(first_raw), str(raw)
    said = f", written {there!r} there" if there != ident else ""
    said += f"; written {here!r} here" if here != ident else ""
    dropped = ": white space around an id is dropped" if said else ""
    return f"duplicate id {ident!r} (first seen at row {row}{said}{dropped})"


def _check_float_ids(path: Path, raw: pd.DataFrame) -> None:
    """Refuse a column of whole-number ids stored as floats (``1.0``), as pandas stores a column of integers
    that has an empty cell (``to_parquet`` after a merge): each row would be refused for its float id, the
    first one a row whose id looks right. The error names the first empty cell, the cause, and the fix.

    Example:
        >>> _check_float_ids(Path("c.parquet"), pd.DataFrame({"id": [1.0, float("nan"), 3.0]}))
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: c.parquet: row 2, field 'id': the ids are stored as floats (1.0, ...
    """
    if "id" not in raw.columns or not pd.api.types.is_float_dtype(raw["id"]) or not len(raw):
        return
    values = raw["id"].to_numpy(dtype=float)
    known = values[~np.isnan(values)]
    if not len(known) or not np.all(np.isfinite(known)) or not np.all(known == np.round(known)):
        return  # a fraction or an infinity: its row says so
    empty = np.flatnonzero(np.isnan(values))
    shown = ", ".join(repr(float(v)) for v in known[:2])
    why = (
        f", as pandas stores a column of integers with an empty cell (row {int(empty[0]) + 1} has none)"
        if len(empty)
        else ""
    )
    raise InputError(
        path,
        int(empty[0]) + 1 if len(empty) else 1,
        "id",
        f"the ids are stored as floats ({shown}, ...){why}: an id is text or an integer; give every row its "
        "id and write the column as integers (df['id'].astype('Int64')) or as text",
    )


def _check_columns(path: Path, raw: pd.DataFrame, *, allow_empty: bool = False) -> None:
    """The file has the required columns and at least one row (unless ``allow_empty``), and no column that
    is one of the schema's spelt otherwise (``Published_At``, ``description ``, ``publishedAt``, one with a
    zero-width space: read as an extra column, its values would be left out without a word)."""
    spelt = spelt_otherwise(path, list(raw.columns), (*REQUIRED, *OPTIONAL_TEXT, "published_at"))
    if spelt is not None:
        raise spelt
    for col in REQUIRED:
        if col not in raw.columns:
            like = [str(c) for c in raw.columns if normalised_column(c) in LOOKALIKES[col]]
            hint = f"; column {like[0]!r} looks like it: rename it {col!r}" if like else ""
            if not hint and len(raw.columns) == 1:
                hint = separator_hint(path, str(raw.columns[0]))
            raise InputError(
                path,
                None,
                col,
                f"required column missing (columns: {', '.join(map(str, raw.columns))}){hint}; the schema: "
                + SCHEMA_HELP,
            )
    if len(raw) == 0 and not allow_empty:
        raise InputError(path, None, None, "the corpus has no rows")


LANGUAGE_TAGS = frozenset({"nan"})
"""The markers of a missing value (:data:`nlsim.io.cells.MISSING_MARKERS`) that a ``lang`` cell holds as a
language tag: ``nan`` is Min Nan (Taiwanese Hokkien, ``nan-TW``), kept as written."""


def _language_tag(col: str, text: str) -> bool:
    """Whether ``text``, a cell of the field ``col``, is a language tag a missing value's marker spells too.

    >>> _language_tag("lang", "nan"), _language_tag("lang", "NULL"), _language_tag("source", "nan")
    (True, False, False)
    """
    return col == "lang" and text.strip().lower() in LANGUAGE_TAGS


def _check_row(
    rec: dict[str, Any],
    seen: dict[str, tuple[int, Any]],
    zone: dt.tzinfo = dt.UTC,
    not_after: pd.Timestamp | None = None,
) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """One row's checked values, and its first problem (field, reason) or ``None``; ``seen``: the ids of the
    rows kept so far, with their row numbers and ids as written; ``zone``: the clock a time without an
    offset is read on (``values["naive_time"]``: this row's was); ``not_after``: a later time is a problem
    (the future). A placeholder for no date (:func:`placeholder_time`) is no date
    (``values["placeholder_time"]``: as written); a text holding control characters is kept as written
    (``values["controls"]``: field, first character)."""
    values: dict[str, Any] = {}
    problem: tuple[str, str] | None = None
    ident, reason = _check_id(rec.get("id"))
    if reason:
        problem = ("id", reason)
    elif ident in seen:
        problem = ("id", _duplicate(ident, rec.get("id"), seen[ident]))
    values["id"] = ident
    for col in ("title", *OPTIONAL_TEXT):
        if problem:
            break
        cell = rec.get(col)
        control = text_control(cell) if isinstance(cell, str) else None
        if control is not None:  # a NUL, a bell, a terminal's colour: kept as written, and said
            values.setdefault("controls", []).append((col, control))
        text, reason = _check_text(cell, required=(col == "title"))
        if reason:
            problem = (col, reason)
        elif col != "title" and text and missing_marker(text) and not _language_tag(col, text):
            text = ""  # "NULL", "\\N": an empty cell as an export wrote it
            values.setdefault("marked_missing", []).append(col)
        values[col] = text
    if not problem:
        written = shown_time(rec.get("published_at"))
        read = check_time(written, zone)
        if placeholder_time(written, read.time, zone):
            values["placeholder_time"] = str(written).strip()
            read = TimeRead(pd.NaT)
        if read.reason:
            problem = ("published_at", read.reason)
        elif not_after is not None and read.time is not None and not pd.isna(read.time):
            if read.time > not_after:
                problem = ("published_at", f"item {ident} is dated in the future ({read.time}): fix its date")
        values["published_at"] = read.time
        values["naive_time"] = read.naive
    return values, problem


def _repeats_header(rec: dict[str, Any]) -> tuple[str, str] | None:
    """The problem of a row that holds the file's header (``id,title,...``, a byte-order mark aside): two
    files joined into one (``cat day1.csv day2.csv``), whose second header would be read as an item."""
    if all(isinstance(v, str) and v.lstrip("\ufeff").strip() == str(k) for k, v in rec.items()):
        return "id", "the row repeats the header (two files joined into one?): delete it"
    return None


def _nothing_to_embed(values: dict[str, Any], text_fields: tuple[str, ...]) -> tuple[str, str] | None:
    """The problem of a row whose fields to embed (``--text-fields``) hold no visible text (``None`` when
    they do): embedded as empty text, every such item would be one vector, and one story."""
    text = " ".join(str(values.get(f) or "") for f in text_fields)
    if any(_readable(ch) for ch in model_text(text)):  # as the model reads it (:func:`model_text`)
        return None
    listed = ",".join(text_fields)
    more = "" if "title" in text_fields else f" or embed the title too (--text-fields title,{listed})"
    verb = "holds" if len(text_fields) == 1 else "hold"
    why = (
        f"nothing to embed: {listed} {verb} no text, punctuation, HTML markup or control characters at most "
        f"(--text-fields "
        f"{listed}); give it "
        f"text{more}"
    )
    return text_fields[0], why


def _quarantine_entry(rownum: int, problem: tuple[str, str], rec: dict[str, Any]) -> dict[str, Any]:
    """A quarantined row: where, why, and its raw values."""
    return {
        "row": rownum,
        "field": problem[0],
        "reason": problem[1],
        **{f"raw_{k}": ("" if missing_cell(v) else str(v)) for k, v in rec.items()},
    }


def _items_frame(columns: dict[str, list[Any]], extra: list[str]) -> pd.DataFrame:
    """The kept rows as the corpus schema's frame (``published_at`` as UTC times), extra columns last."""
    frame = pd.DataFrame({k: v for k, v in columns.items() if k != "published_at"})
    frame["published_at"] = pd.to_datetime(pd.Series(columns["published_at"], dtype=object), utc=True).astype(
        "datetime64[ns, UTC]"
    )
    return frame[[*REQUIRED, *OPTIONAL_TEXT, "published_at", *extra]]


def write_quarantine(corpus: Corpus) -> Path | None:
    """Write the rows ``corpus`` set aside to its quarantine file (:attr:`Corpus.quarantine_path`; ``None``:
    none asked for, nothing written), atomically: a reader sees the earlier file or this one, whole. A run
    calls it once it has succeeded (``load_corpus(..., deferred=True)``), so that a run that fails leaves
    the earlier file as it was."""
    if corpus.quarantine_path is None:
        return None
    cells = corpus.quarantined.map(
        lambda v: escape(v) if isinstance(v, str) else v
    )  # opened in a spreadsheet
    with atomic_path(corpus.quarantine_path, suffix=".csv") as tmp:
        # a byte-order mark: Excel reads CJK text; the header as the next run recognises the file
        # (is_quarantine_file), the rows' text quoted: a ";" in it starts no cell where a spreadsheet splits
        with open(tmp, "w", encoding="utf-8-sig", newline="") as fh:
            csv.writer(fh, lineterminator="\n").writerow(cells.columns)
            cells.to_csv(fh, index=False, header=False, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    return corpus.quarantine_path


SHOWN_REASONS = 3
"""How many bad rows the error of a file whose every row was refused names."""


def _every_row_rejected(path: Path, bad: list[dict[str, Any]], quarantine: str | Path | None) -> InputError:
    """The error of a load that kept no row: the first bad rows' reasons, said here since the quarantine file
    (written only by a load that succeeded) is left as it was. A row that could not be split into fields
    is named by its row alone.

    Example:
        >>> bad = [{"row": 1, "field": "id", "reason": "missing id"}]
        >>> err = _every_row_rejected(Path("news.csv"), bad, "q.csv")
        >>> print(err.reason.replace("; ", ";\\n"))
        every row was rejected (1 bad row(s): row 1, field 'id': missing id);
        q.csv is left as it was (written only when the load succeeds)
    """
    said = "; ".join(
        f"row {b['row']}" + (f", field {b['field']!r}" if b["field"] else "") + f": {_cut(b['reason'])}"
        for b in bad[:SHOWN_REASONS]
    )
    more = f"; {len(bad) - SHOWN_REASONS} more" if len(bad) > SHOWN_REASONS else ""
    kept = f"; {quarantine} is left as it was (written only when the load succeeds)" if quarantine else ""
    return InputError(path, None, None, f"every row was rejected ({len(bad)} bad row(s): {said}{more}){kept}")


def _cut(reason: str, most: int = 100) -> str:
    """``reason`` in at most ``most`` characters, ending with an ellipsis where it is cut.

    >>> _cut("missing id"), _cut("x" * 120)[-3:], len(_cut("x" * 120))
    ('missing id', 'xx…', 100)
    """
    return reason if len(reason) <= most else reason[: most - 1] + "…"


def _read_rows(path: Path, collect: bool) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The file's rows, and (where ``collect``, for ``--quarantine``) the quarantine entries of the rows
    that could not be split into fields, left out of the frame; without ``collect`` such a row raises."""
    broken: list[BrokenRow] | None = [] if collect else None
    raw = text_columns(path, read_table(path, broken=broken), (*REQUIRED, *OPTIONAL_TEXT))
    bad = [
        _quarantine_entry(b.error.row or 0, (b.error.field or "", b.error.reason), {"line": b.text})
        for b in broken or ()
    ]
    return raw, bad


ControlsFound = list[tuple[int, list[tuple[str, str]]]]
"""The rows whose texts held control characters: each row, with each field and its first such character."""


def _check_rows(
    path: Path,
    raw: pd.DataFrame,
    bad: list[dict[str, Any]],
    text_fields: tuple[str, ...],
    zone: dt.tzinfo,
    not_after: pd.Timestamp | None,
    *,
    keep_bad: bool,
) -> tuple[pd.DataFrame, int, dict[str, int], list[tuple[int, str]], ControlsFound]:
    """The rows of ``raw`` that pass every check, as the schema's frame, how many of their times had no
    offset, how many of their cells held a marker of a missing value, by field, the rows whose time was a
    placeholder for no date, with the time as written, and the rows whose texts held control characters
    (kept as written), with each field and its first such character. ``bad`` holds the quarantine entries
    of the rows that could not be split into fields (they are not in ``raw``; the rows keep their numbers
    in the file); a bad row is added to it (``keep_bad``) or raises, and ``bad`` ends sorted by row."""
    extra = [c for c in raw.columns if c not in (*REQUIRED, *OPTIONAL_TEXT, "published_at")]
    columns: dict[str, list[Any]] = {c: [] for c in (*REQUIRED, *OPTIONAL_TEXT, "published_at", *extra)}
    skipped = {entry["row"] for entry in bad}
    seen: dict[str, tuple[int, Any]] = {}
    naive = 0
    marked: dict[str, int] = {}
    placeholders: list[tuple[int, str]] = []
    controls: ControlsFound = []
    rownums = (n for n in range(1, len(raw) + len(bad) + 1) if n not in skipped)
    for rownum, rec in zip(rownums, raw.to_dict("records"), strict=False):
        values, problem = _check_row(rec, seen, zone, not_after)
        problem = _repeats_header(rec) or problem or _nothing_to_embed(values, text_fields)
        if problem:
            if not keep_bad:
                raise InputError(path, rownum, problem[0], problem[1])
            bad.append(_quarantine_entry(rownum, problem, rec))
            continue
        seen[values["id"]] = (rownum, rec.get("id"))
        naive += int(values["naive_time"])
        if "placeholder_time" in values:
            placeholders.append((rownum, values["placeholder_time"]))
        if "controls" in values:
            controls.append((rownum, values["controls"]))
        for col in values.get("marked_missing", ()):
            marked[col] = marked.get(col, 0) + 1
        for col in (*REQUIRED, *OPTIONAL_TEXT, "published_at"):
            columns[col].append(values[col])
        for col in extra:
            columns[col].append(rec.get(col))
    bad.sort(key=lambda entry: entry["row"])
    return _items_frame(columns, extra), naive, marked, placeholders, controls


def load_corpus(
    path: str | Path,
    *,
    text_fields: Sequence[str] = DEFAULT_TEXT_FIELDS,
    quarantine: str | Path | None = None,
    timezone: str = "UTC",
    not_after: pd.Timestamp | None = None,
    allow_empty: bool = False,
    deferred: bool = False,
) -> Corpus:
    """Load and validate a corpus; see the module docstring for the schema and error handling.

    Args:
        path: a ``.parquet``, ``.csv``, ``.tsv`` or ``.jsonl`` file (a text one may be compressed whole:
            ``.csv.gz``, ``.jsonl.bz2``, ``.tsv.xz``, read as the file it holds).
        text_fields: the fields whose text is embedded (``title`` plus ``description`` by default; a field
            other than ``title`` may be absent from the file, then it is empty for every item).
        quarantine: if given, bad rows go to this CSV file (row, field, reason, raw values; UTF-8 with a
            byte-order mark, as the report's CSV files, so that a spreadsheet reads CJK text) instead of
            stopping the load, and so does a row that cannot be split into fields (a truncated JSON line, a
            CSV row with more or fewer fields than the header; its text in ``raw_line``). File-level
            problems (unreadable file, missing ``id``/``title`` column) still raise. The file is written
            (atomically) only when the load succeeds: a load that fails, every row refused included, leaves
            an earlier file as it was.
        timezone: the zone (``Asia/Taipei``) on whose clock a ``published_at`` without an offset is read:
            the run's ``--timezone``.
        not_after: a ``published_at`` after this time (UTC) makes its row a bad row, refused or quarantined
            as any other: an item dated in the future.
        allow_empty: a file with the schema's columns and no row is a corpus of no items (a daily run's day
            without news), not an error. A file whose every row was refused is an error still.
        deferred: the quarantine file is not written here: the caller writes it (:func:`write_quarantine`)
            once its run has succeeded (``nlsim dedup``: after its report), so that a run that fails later
            (a model that cannot be loaded) leaves the earlier file as it was.
    """
    path = Path(path)
    zone = _zone(timezone)
    text_fields = tuple(text_fields)
    for f in text_fields:
        if f not in TEXT_FIELDS:
            raise InputError(path, None, f, f"cannot embed field {f!r}; choose from {', '.join(TEXT_FIELDS)}")
    raw, bad = _read_rows(path, quarantine is not None)
    if raw.empty and not len(raw.columns):  # a JSONL file of no record (it has no header): no rows
        raw = pd.DataFrame(columns=list(REQUIRED))
    _check_columns(path, raw, allow_empty=allow_empty or bool(bad))
    _check_float_ids(path, raw)
    _check_text_columns(path, raw, text_fields)
    unreadable = len(bad)  # rows that could not be split into fields
    frame, naive, marked, placeholders, controls = _check_rows(
        path, raw, bad, text_fields, zone, not_after, keep_bad=quarantine is not None
    )
    if len(frame) == 0 and len(raw) + unreadable:
        raise _every_row_rejected(path, bad, quarantine)
    frame = frame.reset_index(drop=True)
    dated = int(frame["published_at"].notna().sum()) if "published_at" in frame else 0
    notes = [naive_times_note(path, naive, dated, timezone), missing_markers_note(path, marked)]
    corpus = Corpus(
        frame=frame,
        path=path,
        text_fields=text_fields,
        quarantined=pd.DataFrame(bad, columns=None if bad else ["row", "field", "reason"]),
        quarantine_path=None if quarantine is None else Path(quarantine),
        warnings=_load_warnings(path, list(raw.columns), frame, placeholders, controls),
        notes=tuple(n for n in notes if n),
        naive_times=naive,
        timezone=timezone,
    )
    if not deferred:
        write_quarantine(corpus)
    return corpus


def _load_warnings(
    path: Path,
    columns: list[Any],
    frame: pd.DataFrame,
    placeholders: list[tuple[int, str]],
    controls: ControlsFound,
) -> tuple[str, ...]:
    """The lines a load warns with (:attr:`Corpus.warnings`), in order: lookalike columns, texts holding
    U+FFFD or UTF-8 misread, lookalike ids, placeholder dates read as undated, control characters."""
    lines = (
        replacement_warning(path, frame),
        misread_warning(path, frame),
        lookalike_ids_warning(path, frame["id"].astype(str).tolist()),
        placeholder_times_warning(path, placeholders),
        controls_warning(path, controls),
    )
    return (*lookalike_warnings(path, columns), *(line for line in lines if line))


def _check_text_columns(path: Path, raw: pd.DataFrame, text_fields: tuple[str, ...]) -> None:
    """Refuse a file none of whose columns is a field to embed: every item would be embedded as empty text."""
    if not any(f in raw.columns for f in text_fields):
        raise InputError(
            path,
            None,
            text_fields[0],
            f"column missing: none of the fields to embed ({', '.join(text_fields)}) is a column of the "
            "file, so every item would be embedded as empty text; choose fields it has (--text-fields title)",
        )


def _zone(name: str) -> dt.tzinfo:
    problem = zone_problem(name)
    if problem is not None:
        raise ConfigError(problem)
    return ZoneInfo(name)


def controls_warning(path: str | Path, found: ControlsFound) -> str | None:
    """One line when items' texts hold control characters (:func:`~nlsim.io.cells.text_control`), kept:
    how many items, the first character, and the first rows with their fields (``found``: row, then each
    field with its first such character).

    Example:
        >>> print(controls_warning("day.csv", [(2, [("title", "\\x00")])]).split(": ", 1)[1][:59])
        1 item(s) hold control characters (U+0000 (a NUL character)
    """
    if not found:
        return None
    rows = ", ".join(f"row {row} ({', '.join(f for f, _ in fields)})" for row, fields in found[:SHOWN_IDS])
    more = " ..." if len(found) > SHOWN_IDS else ""
    return (
        f"{path}: {len(found)} item(s) hold control characters ({describe(found[0][1][0][1])} first: the "
        f"mark of a damaged export), kept as written in the report's Parquet files (its spreadsheet files "
        "hold the text without them), not "
        f"embedded: {rows}{more}; export "
        "them from their source again"
    )


def placeholder_times_warning(path: str | Path, found: list[tuple[int, str]]) -> str | None:
    """One line when items' ``published_at`` were placeholders for no date (:func:`placeholder_time`), read
    as undated: how many, the first as written, and the first rows (``found``: row, time as written).

    Example:
        >>> print(placeholder_times_warning("day.csv", [(2, "1970-01-01 00:00:00")]).split(": ", 1)[1][:68])
        1 published_at value(s) are placeholders for no date ('1970-01-01 00
    """
    if not found:
        return None
    rows = ", ".join(str(row) for row, _ in found[:SHOWN_IDS]) + (" ..." if len(found) > SHOWN_IDS else "")
    return (
        f"{path}: {len(found)} published_at value(s) are placeholders for no date ({found[0][1]!r:.40} at "
        f"row {found[0][0]}: a Unix time of 0, a database's or spreadsheet's zero date), read as undated: "
        f"rows {rows}; an undated item is paired with items of any date (--window-hours): leave the cell "
        "empty for no date, or give the item its time"
    )


def naive_times_note(path: str | Path, naive: int, items: int, timezone: str) -> str | None:
    """The line a run says when some times had no offset: how many of the ``items`` times written (an undated
    item has none to read), and the zone they were read in.

    Example:
        >>> naive_times_note("day.csv", 3, 5, "Asia/Taipei")
        'day.csv: 3 of 5 published_at times have no offset: read as Asia/Taipei time (--timezone)'
    """
    if not naive:
        return None
    return (
        f"{path}: {naive} of {items} published_at times have no offset: read as {timezone} time (--timezone)"
    )


def missing_markers_note(path: str | Path, marked: dict[str, int]) -> str | None:
    """The line a run says when optional fields held only an export's marker of a missing value: how many
    in each field, read as empty.

    Example:
        >>> missing_markers_note("day.csv", {"source": 1, "description": 3}).split(" hold")[0]
        'day.csv: 3 description and 1 source cell(s)'
    """
    if not marked:
        return None
    counts = " and ".join(f"{marked[col]} {col}" for col in OPTIONAL_TEXT if col in marked)
    return (
        f"{path}: {counts} cell(s) hold only a marker of a missing value (\\N, NULL, None, nan, N/A, ...): "
        "read as empty"
    )


REPLACEMENT = "\ufffd"
"""U+FFFD, the character a decoder puts where it met bytes it could not read."""
SHOWN_IDS = 5


def replacement_warning(path: str | Path, frame: pd.DataFrame) -> str | None:
    """One line when items' texts hold U+FFFD (their bytes were damaged before nlsim read them: a wrong
    encoding somewhere upstream): how many, in which fields, and the first ids.

    Example:
        >>> frame = pd.DataFrame({"id": ["a", "b"], "title": ["ok", "caf\ufffd"], "description": ["", ""]})
        >>> replacement_warning("news.csv", frame).split(": ", 1)[1][:60]
        '1 item(s) hold U+FFFD, the mark of bytes a decoder could not'
    """
    fields = [f for f in TEXT_FIELDS if f in frame.columns]
    hit = {f: frame[f].astype(str).str.contains(REPLACEMENT, regex=False).to_numpy() for f in fields}
    rows = np.flatnonzero(np.logical_or.reduce(list(hit.values()))) if hit else np.zeros(0, int)
    if not len(rows):
        return None
    ids = ", ".join(frame["id"].iloc[rows[:SHOWN_IDS]].astype(str))
    where = ", ".join(f for f in fields if hit[f].any())
    return (
        f"{path}: {len(rows)} item(s) hold U+FFFD, the mark of bytes a decoder could not read (the text was "
        f"damaged before nlsim read it; in {where}): ids {ids}{' ...' if len(rows) > SHOWN_IDS else ''}"
    )


def misread_warning(path: str | Path, frame: pd.DataFrame) -> str | None:
    """One line when items' texts are UTF-8 that a program misread in another encoding and saved again
    (:func:`~nlsim.io.cells.misread_utf8`: a UTF-8 export opened in Excel on a Windows of another language):
    how many, in which fields and encodings, the first ids, and what the first text was.

    Example:
        >>> frame = pd.DataFrame({"id": ["a", "b"], "title": ["ok", "é¢±é¢¨å‡±ç±³"], "description": ["", ""]})
        >>> misread_warning("news.csv", frame).split(": ", 1)[1][:67]
        '1 item(s) hold text that reads as UTF-8 misread as cp1252 and saved'
    """
    fields = [f for f in TEXT_FIELDS if f in frame.columns]
    found: dict[int, tuple[str, str, str]] = {}  # row: (its first such text, encoding, the text it was)
    where: list[str] = []  # every field holding such a text, though a row is counted once
    encodings: set[str] = set()
    for f in fields:
        for row, value in enumerate(frame[f].tolist()):
            misread = misread_utf8(value) if isinstance(value, str) else None
            if misread is not None:
                found.setdefault(row, (value, *misread))
                encodings.add(misread[0])
                where += [f] if f not in where else []
    if not found:
        return None
    rows = sorted(found)
    ids = ", ".join(frame["id"].iloc[rows[:SHOWN_IDS]].astype(str))
    text, _, was = found[rows[0]]
    misread_as, fields_named = ", ".join(sorted(encodings)), ", ".join(where)
    return (
        f"{path}: {len(rows)} item(s) hold text that reads as UTF-8 misread as {misread_as} and saved again "
        f"(a UTF-8 file opened in a program set to another encoding, as Excel on a Windows of another "
        f"language opens one without a byte-order mark; in {fields_named}): ids {ids}"
        f"{' ...' if len(rows) > SHOWN_IDS else ''}; the first, {text[:30]!r}, was {was[:30]!r}: export the "
        "file from its source again, and open a UTF-8 file in a spreadsheet by importing it as UTF-8"
    )


def lookalike_ids_warning(path: str | Path, ids: Sequence[str]) -> str | None:
    """One line when two items' ids differ only in the kind or number of their inner spaces or in the width
    of their characters (``n 1`` and ``n`` + a no-break space + ``1``, ``n1`` and a full-width ``ｎ１``):
    they are two items, which a page or a spreadsheet shows alike; the line gives the first such ids as
    written, a space other than the ASCII one as its code point (``'n\\u00a01'``).

    Example:
        >>> lookalike_ids_warning("news.csv", ["n 1", "n\u00a01", "n2", "ｎ２"]).split(": ", 1)[1][:72]
        "2 id(s) differ from another item's only in their spaces or the width of "
        >>> lookalike_ids_warning("news.csv", ["n1", "n2", "n 3"]) is None
        True
    """
    plain = set(ids)
    groups: dict[str, list[str]] = {}
    for ident in ids:
        if ident.isascii():  # of ASCII's white space only the space is no control character (a bad row)
            if " " not in ident:
                continue  # its own form: only another id's form can match it
            form = ident
        else:
            form = ident if unicodedata.is_normalized("NFKC", ident) else unicodedata.normalize("NFKC", ident)
        key = " ".join(form.split())
        if key != ident:
            groups.setdefault(key, []).append(ident)
    alike = [[*([key] if key in plain else []), *found] for key, found in groups.items()]
    alike = [sorted(set(g)) for g in alike if len(set(g)) > 1]
    if not alike:
        return None
    shown = "; ".join(" and ".join(_spaces_shown(i) for i in g) for g in alike[:SHOWN_IDS])
    more = " ..." if len(alike) > SHOWN_IDS else ""
    count = sum(len(g) - 1 for g in alike)
    return (
        f"{path}: {count} id(s) differ from another item's only in their spaces or the width of their "
        f"characters, and are other items: {shown}{more}"
    )


def _spaces_shown(ident: str) -> str:
    """``ident`` quoted, each space other than the ASCII one as its code point: ``'n\\u00a01'``."""
    return "'" + "".join(f"\\u{ord(ch):04x}" if ch.isspace() and ch != " " else ch for ch in ident) + "'"


ITEM_TEXT_FIELDS = ("title_zh_tw", "title", "text", "title_zh_cn")
"""Text columns :func:`load_items` looks for, in this order."""


def load_items(path: str | Path, text_field: str | None = None) -> pd.DataFrame:
    """Corpus items as ``id``/``text`` (and ``category`` when present), for drawing pairs to score.

    From a Parquet, CSV, TSV or JSONL file with an ``id`` column and a text column (``text_field``, or the
    first of :data:`ITEM_TEXT_FIELDS` it has). Each row's id and text are checked as :func:`load_corpus`
    checks them (an id is text or an integer, a text is text and not empty, no id twice); the first bad row
    raises :class:`~nlsim.errors.InputError` naming the row and field. The text is kept as written.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "items.jsonl"
        >>> _ = p.write_text('{"id": 7, "title": "Floods"}\\n{"id": 7.5, "title": "Storm"}\\n')
        >>> load_items(p)
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: ...items.jsonl: row 2, field 'id': id must be text or an integer (got float)
    """
    frame = read_table(path)
    if "id" not in frame.columns:
        raise InputError(path, None, "id", "missing column")
    _check_float_ids(Path(path), frame)
    field = text_field or next((f for f in ITEM_TEXT_FIELDS if f in frame.columns), None)
    if field is None or field not in frame.columns:
        raise InputError(path, None, text_field or "title", "missing text column")
    ids: list[str] = []
    seen: dict[str, tuple[int, Any]] = {}
    for rownum, (raw_id, raw_text) in enumerate(zip(frame["id"], frame[field], strict=True), start=1):
        ident, reason = _check_id(raw_id)
        if ident is None:
            raise InputError(path, rownum, "id", reason or "missing id")
        if ident in seen:
            raise InputError(path, rownum, "id", _duplicate(ident, raw_id, seen[ident]))
        seen[ident] = (rownum, raw_id)
        _, reason = _check_text(raw_text, required=True)
        if reason:
            raise InputError(path, rownum, field, "missing text" if reason == "missing value" else reason)
        ids.append(ident)
    out = pd.DataFrame({"id": ids, "text": frame[field].tolist()})
    if "category" in frame.columns:  # kept for drawing pairs within a category (nlsim.training.silver)
        out["category"] = ["" if missing_cell(c) else str(c) for c in frame["category"]]
    return out
