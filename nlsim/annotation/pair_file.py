"""The pair file as a merge rewrites it, losing nothing of what it held.

The editors' rows are appended: a TSV or CSV pair file keeps its existing rows byte for byte (its byte-order
mark and line endings too; a column the merge adds is left empty for them), but for the note of a merged row
an editor sent again with the note edited, and a merged row an older mark of another editor is written over
(as it would have been appended: the newer decision overrules it in the verdict store); a Parquet pair file
keeps one type a column. The new file is
written beside the old one, read back with the pair reader and compared, then
renamed into place keeping the file's permissions (a symbolic link's target rewritten): a write that would
not read back changes nothing.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from nlsim.annotation.validate import NOTES, is_blank
from nlsim.errors import InputError
from nlsim.io import editor_file
from nlsim.io.atomic import fsync_dir, fsync_file, sweep_leftovers
from nlsim.io.pairs import (
    load_pairs,
    validate_pairs,
)
from nlsim.io.tables import csv_records

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class _Body:
    """The pair file as a merge leaves it (validated) and the writer of its bytes."""

    checked: pd.DataFrame
    write: Callable[[Path], None]


def appended(
    original: pd.DataFrame,
    fresh: pd.DataFrame,
    split: str,
    fmt: str,
    data: bytes,
    label: str,
    notes: dict[int, str] | None = None,
    earlier: tuple[pd.DataFrame, dict[int, int]] | None = None,
) -> _Body:
    """The pair file ``original`` (its bytes ``data`` for a text file) with the rows ``fresh`` appended in
    ``split``, validated before anything is written (no pair twice, none in two splits); ``notes``: the
    new note of some of its rows (by 0-based row: a note edited since the row was merged), the rest of
    their cells (and every other row) kept; ``earlier``: editors' rows, each written over the rows (0-based,
    with the editors' row of each) of its pair (a mark older than the merged row of another editor, whose
    decision overrules it in the verdict store), as it would have been appended, in its row's split."""
    given, at = earlier if earlier is not None else (fresh.iloc[:0], {})
    columns, extra = columns_of(original, pd.concat([fresh, given], ignore_index=True))
    if notes and NOTES not in columns:
        columns.append(NOTES)
        extra.append(NOTES)
    for col in extra:
        original[col] = ""
    if notes:
        original[NOTES] = original[NOTES].astype(object)
        for i, note in notes.items():
            original.iloc[i, original.columns.get_loc(NOTES)] = note
    over = {i: _rows_to_add(given.iloc[[j]], columns, str(original["split"].iloc[i])) for i, j in at.items()}
    for i, row in over.items():
        for col in columns:
            value = row[col].iloc[0]
            if pd.api.types.is_numeric_dtype(original[col]):
                original.iloc[i, original.columns.get_loc(col)] = float(value)
            else:
                original[col] = original[col].astype(object)
                original.iloc[i, original.columns.get_loc(col)] = value
    add = _rows_to_add(fresh, columns, split)
    if fmt == "parquet":  # one type a column (TSV and CSV cells are all text)
        if pd.api.types.is_numeric_dtype(original["score"]):
            add["score"] = add["score"].astype(float)  # a text score column takes the editor's as text
        for col in columns:
            if col != "score":
                original[col], add[col] = _one_parquet_type(original[col], add[col])
    merged = pd.concat([original, add], ignore_index=True)
    checked = validate_pairs(merged, label)  # before the file is replaced

    def write(tmp: Path) -> None:
        if fmt == "parquet":
            merged.to_parquet(tmp, index=False)
        else:
            cells = _note_cells(original, notes, label, {i: row[columns] for i, row in over.items()})
            tmp.write_bytes(_text_bytes(data, fmt, extra, add[columns], cells))

    return _Body(checked, write)


def columns_of(original: pd.DataFrame, new: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The merged pair file's columns, and those of them it adds: the editors' columns ``new`` fills (the
    item ids ``id_a`` and ``id_b`` for a pair file of texts only, :data:`editor_file.KEPT`), and ``split``
    for a file without splits (empty for its rows)."""
    columns = list(original.columns)
    extra: list[str] = []
    ids = ("id_a", "id_b") if "id_a" not in columns and "id_b" not in columns else ()
    for col in (*ids, *editor_file.KEPT):
        if col in new.columns and not new[col].map(is_blank).all() and col not in columns:
            columns.append(col)
            extra.append(col)
    if "split" not in columns:
        columns.append("split")
        extra.append("split")
    return columns, extra


def _rows_to_add(new: pd.DataFrame, columns: list[str], split: str) -> pd.DataFrame:
    """The editors' rows as the pair file's rows (its ``columns``, as text), in ``split``."""
    add = pd.DataFrame({c: new[c].map(_text) if c in new.columns else "" for c in columns}, dtype=object)
    add["split"] = split
    add["score"] = new["score"].map(lambda s: f"{s + 0.0:g}")
    if "annotations" in columns:
        add["annotations"] = add["score"]
    if "stratum" in columns:
        given = new["stratum"].map(_text) if "stratum" in new.columns else pd.Series([""] * len(new))
        add["stratum"] = [f"{editor_file.MERGED}:{s}" if s else editor_file.MERGED for s in given]
    return add


def _note_cells(
    original: pd.DataFrame,
    notes: dict[int, str] | None,
    label: str,
    rows: dict[int, pd.DataFrame] | None = None,
) -> _Cells | None:
    """The cells to write into the rows of ``original`` (0-based): the note of those ``notes`` gives a new
    note, every cell of those ``rows`` gives (a row of the pair file's columns, as appended); each row known
    by its pair id, or by its item ids in a pair file without pair ids (checked before its cells are
    written); ``label`` names the file."""
    if not notes and not rows:
        return None
    keys = ("pair_id",) if "pair_id" in original.columns else ("id_a", "id_b")
    values = list(zip(*(original[k].astype(str).tolist() for k in keys), strict=True))
    columns = list(original.columns)
    cells: dict[int, tuple[tuple[str, ...], dict[int, str]]] = {
        i: (values[i], {columns.index(NOTES): n}) for i, n in (notes or {}).items()
    }
    for i, row in (rows or {}).items():
        given = row.astype(str).iloc[0]
        cells[i] = (values[i], {columns.index(c): given[c] for c in row.columns})
    return _Cells(tuple(columns.index(k) for k in keys), cells, label)


@dataclass(frozen=True)
class _Cells:
    """New cells for some data rows of a text pair file: the places of the columns that tell a row's pair
    (its pair id, or its item ids), and each row's (0-based) pair as those columns hold it (the row checked
    to be that pair's) and its new cells, by column place."""

    pair_columns: tuple[int, ...]
    rows: dict[int, tuple[tuple[str, ...], dict[int, str]]]
    label: str

    def set_in(self, record: str, row: int, fmt: str) -> str:
        """``record`` (data row ``row``, without its line ending) with its cells written, when it has any."""
        if row not in self.rows:
            return record
        want, given = self.rows[row]
        if fmt == "csv":
            cells = csv_records(record, "\n", strict=False)[0]  # a "\r" alone: in its field, as read
        else:
            cells = record.split("\t")
        places = (*self.pair_columns, *given)
        if max(places) >= len(cells) or tuple(cells[i] for i in self.pair_columns) != want:
            why = f"the row is not pair {'/'.join(want)!r} as read, its cells not written: nothing changed"
            raise InputError(self.label, row + 1, NOTES if len(given) == 1 else None, why)
        for place, cell in given.items():
            cells[place] = cell
        if fmt != "csv":
            return "\t".join(cells)
        buf = io.StringIO()
        # a record ends in "\r\n" here, then cut off: with no line terminator the writer leaves a cell's
        # line break unquoted (a note on two lines would end the row)
        csv.writer(buf, lineterminator="\r\n").writerow(cells)
        return buf.getvalue()[: -len("\r\n")]


def _text(value: object) -> str:
    """A cell of the editors' file as the pair file's text: an empty cell (a Parquet null, NaN) is empty,
    never ``nan`` or ``None``."""
    return "" if is_blank(value) else str(value)


def _one_parquet_type(old: pd.Series, new: pd.Series) -> tuple[pd.Series, pd.Series]:
    """A Parquet pair file's column and the editor's values for it (text) in one type Parquet can hold.

    A column of numbers (integer ids, an ``annotations`` count) takes the editor's values as numbers when
    each of them is one, written as that number would be (``7``, not ``007``); otherwise the column is
    written as text, existing values as they read. Empty cells stay empty; a column the editor left empty
    keeps its type.
    """

    def as_text() -> tuple[pd.Series, pd.Series]:
        as_strings = old.map(lambda v: None if is_blank(v) else str(v))
        return as_strings, new.map(lambda v: None if is_blank(v) else v)

    if all(is_blank(v) for v in new):
        return old, pd.Series([None] * len(new), dtype=object, index=new.index)
    held = [v for v in old if not is_blank(v)]
    if all(isinstance(v, str) for v in held):
        return old, new
    numbers = (int, float, np.integer, np.floating)
    if not all(isinstance(v, numbers) and not isinstance(v, (bool, np.bool_)) for v in held):
        return as_text()
    whole = old.dtype.kind != "f" and all(float(v).is_integer() for v in held)
    values: list[object] = []
    for text in (str(v).strip() for v in new):
        if text == "":
            values.append(None)
            continue
        try:
            number: float = int(text) if whole else float(text)
        except ValueError:  # an id such as "n05" beside numeric ones: the column becomes text
            return as_text()
        if whole and (str(number) != text or not -(2**63) <= number < 2**63):
            return as_text()  # "007", "+5", "1_000" or beyond int64 are kept as the editor wrote them
        values.append(number)
    if old.dtype.kind in "iu" and any(v is None for v in values):
        old = old.astype(object)
    return old, pd.Series(values, dtype=object if whole else float, index=new.index)


def _line_ending(data: bytes) -> bytes:
    """The line ending of a text file: ``\\r\\n`` when its first line ends so, ``\\r`` in a file without
    any ``\\n`` that has ``\\r`` (old Mac endings, as Excel for Mac writes), else ``\\n``."""
    end = data.find(b"\n")
    if end < 0:
        return b"\r" if b"\r" in data else b"\n"
    return b"\r\n" if end > 0 and data[end - 1 : end] == b"\r" else b"\n"


def _widen(text: str, fmt: str, extra: list[str], newline: str = "\n", cells: _Cells | None = None) -> str:
    """``text`` (a CSV or TSV file without its byte-order mark, records ending in ``newline``: ``\\n``,
    a ``\\r`` before it kept, or ``\\r`` alone) with the columns ``extra`` added: their names after the
    header's, an empty cell after every row's; every existing cell and line ending kept, but ``cells``
    (written into their rows, 0-based: :meth:`_Cells.set_in`). A CSV field is
    quoted only when its first character is a quote (as the csv reader reads it: ``5"`` inside a field is a
    character), and ``""`` inside a quoted field is one quote.

    Example:
        >>> _widen('a,b\\r\\n1,"x\\r\\ny"\\r\\n2,5"\\r\\n', "csv", ["notes"])
        'a,b,notes\\r\\n1,"x\\r\\ny",\\r\\n2,5",\\r\\n'
    """
    sep = "," if fmt == "csv" else "\t"
    end = "\r" if newline == "\r" else "\n"
    out: list[str] = []
    header = True
    row = 0
    start = 0
    quoted = False
    field_start = True
    i = 0
    while i <= len(text):
        ch = text[i] if i < len(text) else end
        if quoted:
            if ch == '"':
                if text[i + 1 : i + 2] == '"':
                    i += 1  # an escaped quote
                else:
                    quoted = False
        elif fmt == "csv" and ch == '"' and field_start:
            quoted = True
            field_start = False
        elif ch == end:
            record = text[start:i]
            cr = end == "\n" and record.endswith("\r")
            body = record[:-1] if cr else record
            if body.strip():
                if header:
                    body += sep + sep.join(extra) if extra else ""
                else:
                    body += sep * len(extra)
                    body = cells.set_in(body, row, fmt) if cells is not None else body
                    row += 1
                header = False
            out.append(body + ("\r" if cr else "") + (end if i < len(text) else ""))
            start = i + 1
            field_start = True
        else:
            field_start = ch == sep
        i += 1
    return "".join(out)


def _text_bytes(
    data: bytes, fmt: str, extra: list[str], add: pd.DataFrame, cells: _Cells | None = None
) -> bytes:
    """The pair file's bytes ``data`` with the rows of ``add`` appended: the existing rows byte for byte
    (byte-order mark and line endings kept; ``extra`` columns added empty), but the ``cells`` written into
    theirs, the new ones in the same style.
    """
    bom = BOM if data.startswith(BOM) else b""
    newline = _line_ending(data)
    body = data[len(bom) :]
    if extra or cells is not None:
        body = _widen(body.decode("utf-8"), fmt, extra, newline.decode(), cells).encode("utf-8")
    if body and not body.endswith(newline[-1:]):
        body += newline
    buf = io.StringIO()
    rows = add.astype(str).to_numpy().tolist()
    if fmt == "csv":
        csv.writer(buf, lineterminator=newline.decode()).writerows(rows)
    else:
        buf.write("".join("\t".join(r) + newline.decode() for r in rows))
    return bom + body + buf.getvalue().encode("utf-8")


def _expected(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["pair_id", "text_a", "text_b", "split"]].astype(str).reset_index(drop=True)


def write_checked(target: Path, merged: pd.DataFrame, write: Callable[[Path], None], label: str) -> None:
    """Write the merged pair file with ``write`` into a temporary file beside ``target``, read it back
    with :func:`~nlsim.io.pairs.load_pairs` and, only when it gives the same pairs (count, ids, texts,
    splits, scores), rename it over ``target`` keeping ``target``'s permissions. Otherwise refuse
    (:class:`InputError`) and leave ``target`` as it was."""
    mode = stat.S_IMODE(os.stat(target).st_mode)
    sweep_leftovers(target.parent, target.name)  # the full copy a merge killed before its rename left
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    tmp = Path(name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until this merge ends (sweep_leftovers spares it)
        write(tmp)
        os.chmod(tmp, mode)
        try:
            back = load_pairs(tmp, shown_as=target)  # its warnings name the pair file, not the copy
        except InputError as exc:
            where = f"row {exc.row}: " if exc.row else ""
            raise InputError(
                target,
                None,
                None,
                f"the merged file would not read back ({where}{exc.reason}); nothing changed",
            ) from None
        want = _expected(merged)
        got = _expected(back)
        same = len(back) == len(merged) and got.equals(want)
        same = same and np.allclose(back["score"].to_numpy(float), merged["score"].to_numpy(float))
        if not same:
            n_bad = len(back) if len(back) != len(merged) else int((got != want).any(axis=1).sum())
            raise InputError(
                target,
                None,
                None,
                f"the merged file reads back as {len(back)} pairs, not the {len(merged)} of {label} "
                f"({n_bad} differ); nothing changed",
            )
        fsync_file(tmp)
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
