"""The one table reader: Parquet, CSV, TSV and JSONL files as a frame of text columns, or a clear error.

Rules, so that no row is ever silently merged, split or shifted:

* **CSV** follows RFC 4180: fields may be quoted with ``"`` (a quote inside is doubled) and then may hold
  commas and newlines. A quote left open, or a row with more or fewer fields than the header, is an
  :class:`~nlsim.errors.InputError` naming the file and the 1-based data row.
* A blank line is skipped, and so is a CSV row whose every cell is empty (``,,,``: the rows below a table
  that a spreadsheet once formatted); rows are counted without them.
* **TSV** has no quoting of its own: one row a line, fields separated by tabs, a ``"`` is an ordinary
  character. A row with another number of fields than the header is an error. But a TSV that pandas
  (``to_csv(sep="\\t")``) or a spreadsheet wrote quotes as CSV does a field holding a double quote (a
  spreadsheet one holding a comma too): ``"He said ""no"" today"``. A file holding such a field, whole
  in quotes with a doubled quote inside (no title written as it is holds one), is read unquoted: each field
  whole in quotes loses them, and its doubled quotes are single. A file without one keeps every quote (a title
  ``"Floods"``, a quotation, stays so). A quoted field holding a tab or a line break is not read as one
  field (its row has more fields than the header, an error).
* **JSONL** (``.jsonl``, ``.ndjson``, ``.json``): one JSON object a line, or a file of one JSON array of
  objects (``[{"id": ...}, ...]``, a CMS's export, ``df.to_json(orient="records")``), whose elements are
  the rows, counted from 1, each checked as a line is; an object that names a field twice is an error
  naming its row and the field. A file of one object holding the rows under a key (``{"items": [...]}``),
  or of one object over several lines, is refused as such. A byte-order mark opening a line (files joined
  with ``cat``, each written with one) is not part of it.
* Only ``\\n`` (or ``\\r\\n``) ends a TSV or JSONL line: a U+2028, U+2029 or U+0085 inside a field (which
  ``json.dumps(..., ensure_ascii=False)`` writes raw) is an ordinary character, and so is a ``\\r`` alone,
  in a CSV field too, quoted or not (:func:`csv_records`); a file without any ``\\n`` ends its lines at
  ``\\r`` (old Mac line endings). A CSV field may be of any length (a long body is not refused at the
  ``csv`` module's default of 131,072 characters).
* A header with two columns of one name is an error (naming it; several empty names, as trailing commas
  leave, are named by their column positions).
* **Parquet**: read as stored (pyarrow), except that an integer column with empty cells keeps its
  integers instead of turning into floats: an id ``101`` stays ``101``, not ``101.0`` (Python ints with
  ``None`` where empty; pandas' nullable ``Int64`` with ``<NA>`` when pandas wrote the file so). JSONL
  follows the same rule. A binary column of text (as Hive, Impala and older Spark write it) is read as
  UTF-8 by the readers of a corpus and a pair file, for the columns they read (:func:`text_columns`). A
  column pandas wrote as the frame's named index (``df.set_index("id").to_parquet()``) is a column, as
  the file holds it; an unnamed index (``__index_level_0__``) is none.
* Text must be UTF-8 (a byte-order mark is ignored; a UTF-16 file, as Excel's "Unicode Text", with a
  byte-order mark or without one, and a UTF-32 file are named as such); a bad byte is reported with its
  data row, field, line and byte offset and how to convert the file (:func:`to_utf8`), and so is a Parquet
  text cell holding bytes that are not UTF-8 (by row and column) and a JSONL ``\\u`` escape of half a
  surrogate pair (``"\\ud83c"`` alone: not a character; by row and field).
  Empty cells stay empty strings; nothing is turned into NaN.
* A CSV, TSV or JSONL file compressed whole and named so (``items.csv.gz``, ``.jsonl.bz2``, ``.tsv.xz``:
  gzip, bzip2 or xz) is read as the file it holds, by the same rules; an error names the compressed file and
  the row and field as in the file it holds. A Parquet file compresses its own columns: ``.parquet.gz`` is
  refused (decompress it). A compressed file under a table's own name (``news.csv`` holding gzip), or one of
  another kind (zip, zstd), is refused as such: decompress it first.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text('id,title\\n1,"Floods, again"\\n2,Storm\\n', encoding="utf-8")
    >>> read_table(p)["title"].tolist()
    ['Floods, again', 'Storm']
    >>> _ = p.write_text('id,title\\n1,Floods,again\\n', encoding="utf-8")
    >>> read_table(p)
    Traceback (most recent call last):
    ...
    nlsim.errors.InputError: ...t.csv: row 1: 3 fields, the header has 2 (an unquoted comma or quote?)
"""

from __future__ import annotations

import bz2
import csv
import errno
import gzip
import io
import json
import lzma
import os
import re
import sys
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from nlsim.errors import InputError
from nlsim.io.atomic import atomic_path

FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".txt": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}

COMPRESSION_SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
"""The suffixes of a text table compressed whole that is read as the file it holds (``items.csv.gz``)."""
OPENERS = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}
"""How a file of each of :data:`COMPRESSION_SUFFIXES`' formats is opened, to read the file it holds."""

#: The leading bytes of compressed files, and the name of their format (a table must be decompressed first).
COMPRESSED = (
    (b"\x1f\x8b", "gzip"),
    (b"PK\x03\x04", "zip"),
    (b"PK\x05\x06", "zip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)


@dataclass(frozen=True)
class BrokenRow:
    """A row that could not be split into fields (a truncated JSON line, a CSV row with more or fewer fields
    than the header): the error naming its row, and its text as written."""

    error: InputError
    text: str


def _refuse_or_keep(error: InputError, text: str, broken: list[BrokenRow] | None) -> None:
    """Raise ``error``, or, where the caller collects broken rows (``broken`` given), record it."""
    if broken is None:
        raise error
    broken.append(BrokenRow(error, text))


def _allow_long_csv_fields() -> None:
    """Lift the ``csv`` module's field size limit (131,072 characters by default), so that a long article
    body is read, not refused with "field larger than field limit"; the largest the platform allows."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:  # a C long smaller than sys.maxsize (Windows)
            limit = min(limit // 2, 2**31 - 1)


_allow_long_csv_fields()


def compression(path: str | Path) -> str | None:
    """The compression a table file is named with (``"gzip"`` for ``items.csv.gz``:
    :data:`COMPRESSION_SUFFIXES`), or ``None``.

    >>> compression("items.csv.gz"), compression("items.csv")
    ('gzip', None)
    """
    return COMPRESSION_SUFFIXES.get(Path(path).suffix.lower())


def table_suffix(path: str | Path) -> str:
    """The suffix that names the format of the table at ``path``, in lower case: that of the file a
    compressed one holds (``.csv`` for ``items.CSV.gz``).

    >>> table_suffix("items.CSV.gz"), table_suffix("news.parquet"), table_suffix("items.gz")
    ('.csv', '.parquet', '')
    """
    path = Path(path)
    return (path.with_suffix("") if compression(path) else path).suffix.lower()


def table_format(path: str | Path, allowed: tuple[str, ...] = ("parquet", "csv", "tsv", "jsonl")) -> str:
    """The format of ``path`` by its suffix (the one before ``.gz``, ``.bz2`` or ``.xz``), or an
    :class:`InputError` listing the allowed ones."""
    path = Path(path)
    suffix = table_suffix(path)
    fmt = FORMATS.get(suffix)
    if fmt is None or fmt not in allowed:
        names = ", ".join(s for s, f in FORMATS.items() if f in allowed and s not in (".pq", ".tab", ".txt"))
        shown = "".join(path.suffixes[-2:]) if compression(path) and suffix else path.suffix
        what = f"suffix {shown!r}" if path.suffix else "no suffix"
        if suffix in WORKBOOK_SUFFIXES:
            what += f": a spreadsheet workbook; {SAVE_AS_CSV}"
        text = [s for s in (".csv", ".tsv", ".jsonl") if FORMATS[s] in allowed]
        packed = f" (or one of them compressed: {text[0]}.gz, .bz2 or .xz)" if text else ""
        raise InputError(path, None, None, f"unknown table format ({what}); use {names}{packed}")
    if fmt == "parquet" and compression(path) is not None:
        raise InputError(
            path,
            None,
            None,
            f"a Parquet file compressed whole ({compression(path)}): Parquet compresses its own columns; "
            f"decompress it and read the {suffix} file it holds",
        )
    return fmt


def estimated_rows(path: str | Path) -> int:
    """About how many rows the table at ``path`` holds, without parsing it (for a time estimate): a
    Parquet file's own count; the lines of a CSV or TSV less its header, of a JSONL file (a CSV field with
    a line break counts twice); the elements of a file of one JSON array, on one line or many
    (:func:`_json_array_length`); 0 where it cannot be told.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("id,title\\n1,a\\n2,b\\n", encoding="utf-8")
    >>> estimated_rows(p), estimated_rows(p.with_name("none.csv"))
    (2, 0)
    """
    try:
        fmt = table_format(path)
        if fmt == "parquet":
            return int(pq.ParquetFile(path).metadata.num_rows)
        lines, last = 0, b""
        with open_table(path) as f:
            if fmt == "jsonl" and _opens_with(f, b"["):
                f.seek(0)
                return _json_array_length(iter(lambda: f.read(_PIECE), b""))
            f.seek(0)
            while chunk := f.read(1 << 20):
                lines += chunk.count(b"\n")
                last = chunk
        if lines and not last.endswith(b"\n"):
            lines += 1  # a last line without its line break
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error, InputError):
        return 0
    return max(0, lines - (fmt != "jsonl"))


_JSON_BYTES_SPACE = b"\xef\xbb\xbf \t\n\r"  # a byte-order mark too: the reader drops it

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.DOTALL)
"""A JSON string, or one cut short by the end of the bytes read: each string's quote starts a match (none
fails, to be tried again from a quote inside the string)."""
_JSON_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{},"')
_PIECE = 1 << 16
"""How many bytes of a table :func:`estimated_rows` reads at a time."""


def _opens_with(f: BinaryIO, mark: bytes) -> bool:
    """Whether the first byte of the binary file ``f`` that is no JSON white space (nor a byte-order mark)
    is ``mark``, however much white space comes first (read a piece at a time)."""
    while piece := f.read(_PIECE):
        rest = piece.lstrip(_JSON_BYTES_SPACE)
        if rest:
            return rest.startswith(mark)
    return False


def _json_array_length(pieces: Iterable[bytes]) -> int:
    """How many elements the JSON array whose bytes ``pieces`` holds (a file read a piece at a time), its
    strings skipped, not parsed: the commas between its top-level elements counted (a few C passes a piece;
    a damaged file gives a rough figure). A string cut by a piece's end is carried into the next as its
    opening quote and, when the piece ends in an escaping backslash, that backslash.

    >>> _json_array_length([b'[{"t": "a, [b]"}, {"t": "c\\\\", "n": [1, 2]}]']), _json_array_length([b"[ ]"])
    (2, 0)
    >>> _json_array_length([b'[{"t": "a, \\\\', b'"]"}, ', b'{"t": "b"}]'])
    2
    """
    commas, depth, head, carry = 0, 0, b"", b""
    for piece in pieces:
        read = carry + piece
        written = _JSON_STRING.sub(b'""', read + b"\0")  # a string cut short takes the \0 in
        carry = b""
        if not written.endswith(b"\0"):  # its quote carried on, with a backslash it ends in (escaping)
            carry = b'"\\' if (len(read) - len(read.rstrip(b"\\"))) % 2 else b'"'
        structure = written.translate(None, _JSON_NOT_STRUCTURE)
        head = head if len(head) >= 2 else (head + structure)[:2]
        marks = np.frombuffer(structure, dtype=np.uint8)
        steps = np.isin(marks, (ord("["), ord("{"))).astype(np.int64) - np.isin(marks, (ord("]"), ord("}")))
        levels = depth + np.cumsum(steps)
        commas += int(np.count_nonzero((marks == ord(",")) & (levels == 1)))
        depth = int(levels[-1]) if len(levels) else depth
    return 0 if head.startswith(b"[]") else commas + 1


def _missing_reason(path: Path) -> str:
    if not path.is_symlink():
        return "file not found"
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (it points, through links, at itself)"
    return f"a broken symbolic link (its target {os.readlink(path)} does not exist)"


def open_table(path: str | Path) -> BinaryIO:
    """The table file ``path`` opened to read its bytes: those of the file it holds when it is named
    compressed (:func:`compression`; reading may then raise :class:`EOFError`, ``lzma.LZMAError`` or
    :class:`OSError` on a damaged file)."""
    name = compression(path)
    return OPENERS[name](path, "rb") if name is not None else open(path, "rb")  # noqa: SIM115 (returned)


def check_input_file(path: str | Path) -> Path:
    """``path`` if it is a readable file; else an :class:`InputError` saying what it is instead."""
    path = Path(path)
    try:
        if path.is_dir():
            raise InputError(path, None, None, "is a folder, not a file")
        if not path.exists():
            raise InputError(path, None, None, _missing_reason(path))
        with open(path, "rb"):
            pass
    except OSError as exc:  # a symlink loop, no permission...
        raise InputError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
    return path


def compressed_format(data: bytes) -> str | None:
    """The compression format (``"gzip"``, ``"zip"``, ``"zstd"``, ``"bzip2"``, ``"xz"``) whose leading bytes
    ``data`` starts with, or ``None``.

    Example:
        >>> compressed_format(b"\\x1f\\x8b\\x08\\x00"), compressed_format(b"id,title\\n")
        ('gzip', None)
    """
    for magic, name in COMPRESSED:
        if data.startswith(magic):
            if name == "bzip2" and not (data[3:4].isdigit() and data[4:10] in (b"1AY&SY", b"\x17rE8P\x90")):
                continue  # "BZh" alone may begin a header; a bzip2 stream goes on with its level and a block
            return name
    return None


WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")
"""Spreadsheet workbooks: not a table file nlsim reads (each is saved as CSV UTF-8 first)."""
SAVE_AS_CSV = "save it as CSV UTF-8 (Excel: File > Save As > CSV UTF-8) and read that file"


def _workbook(path: Path) -> bool:
    """Whether ``path`` is a zip archive holding a spreadsheet workbook (Excel's ``xl/``, an OpenDocument
    sheet's ``content.xml``): a workbook given another suffix, not a compressed table."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
    return any(n.startswith("xl/") for n in names) or "content.xml" in names


def _refuse_compressed(path: Path, data: bytes) -> None:
    """An :class:`InputError` when ``data`` (the start of the file ``path``) is a compressed file, an
    Excel workbook (a zip file too) or, under a text table's name, a Parquet file."""
    suffix = table_suffix(path)
    if data.startswith(b"PAR1") and FORMATS.get(suffix) != "parquet":  # .pq is Parquet too
        packed = compression(path)
        what, fix = ("holds a", "decompress it and name the file it holds ") if packed else ("a", "name it ")
        name = Path(path).with_suffix("").with_suffix(".parquet").name if packed else ".parquet"
        raise InputError(
            path,
            None,
            None,
            f"{what} Parquet file (it begins with PAR1), not a {suffix or 'text'} table: {fix}{name}",
        )
    name = compressed_format(data)
    if name == "zip" and _workbook(path):
        raise InputError(
            path,
            None,
            None,
            f"a spreadsheet workbook (.xlsx), not a {suffix or 'table'} file: {SAVE_AS_CSV}",
        )
    if name is not None:
        raise InputError(
            path,
            None,
            None,
            f"a compressed file ({name}), not a {suffix or 'table'} table: decompress it first and read "
            "the file it holds",
        )


def _split_lines(text: str) -> list[str]:
    """``text`` split into lines at ``\\n`` only (a ``\\r`` before it dropped), or at ``\\r`` in a file
    that has no ``\\n`` at all (old Mac line endings, as Excel for Mac still writes): unlike
    :meth:`str.splitlines`, a U+2028, U+2029, U+0085 or form feed inside a field does not end a row.

    Example:
        >>> _split_lines("a\\u2028b\\r\\nc\\n")
        ['a\\u2028b', 'c']
        >>> _split_lines("a\\tb\\rc\\td\\r")
        ['a\\tb', 'c\\td']
    """
    lines = text.split("\n" if "\n" in text or "\r" not in text else "\r")
    if lines[-1] == "":  # the newline that ends the last line (or an empty text)
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _held_returns(text: str, newline: str | None = None) -> tuple[str, str]:
    """``text`` with each carriage return that ends no line (one not followed by ``\\n``, after more returns
    at most, nor ending the text) put as a stand-in character the text does not hold, and the stand-in
    (``""`` where there is none); ``newline``: what ends the text's lines (``None``: ``\\n`` when the text
    holds one, else ``\\r``: old Mac line endings, where every ``\\r`` ends a line). The ``csv`` module ends
    a row at a ``\\r`` alone outside quotes: a title a CMS wrote with an old Mac line break would be cut
    there, its rest read as a row of its own.

    Example:
        >>> _held_returns("a\\rb\\r\\r\\n")
        ('a\\ue000b\\r\\r\\n', '\\ue000')
    """
    if newline is None:
        newline = "\n" if "\n" in text or "\r" not in text else "\r"
    if newline != "\n" or "\r" not in text or not _LONE_RETURN.search(text):
        return text, ""
    stand_in = next(ch for ch in map(chr, range(0xE000, 0xF900)) if ch not in text)
    return _LONE_RETURN.sub(stand_in, text), stand_in


_LONE_RETURN = re.compile(r"\r(?!\r*(?:\n|\Z))")


def csv_records(text: str, newline: str | None = None, *, strict: bool = True) -> list[list[str]]:
    """The records of the CSV ``text`` as :func:`read_table` splits them (:mod:`csv`, RFC 4180), a ``\\r``
    alone inside a field kept there (:func:`_held_returns`), blank records included.

    Example:
        >>> csv_records('id,title\\r\\n1,Floods\\rhit\\r\\n2,"Rain\\ragain"\\n')
        [['id', 'title'], ['1', 'Floods\\rhit'], ['2', 'Rain\\ragain']]
    """
    held, stand_in = _held_returns(text, newline)
    records = list(csv.reader(io.StringIO(held, newline=""), strict=strict))
    return [_released(r, stand_in) for r in records]


def _released(fields: list[str], stand_in: str) -> list[str]:
    """``fields`` with :func:`_held_returns`' stand-in a ``\\r`` again (as they are with none)."""
    return [f.replace(stand_in, "\r") for f in fields] if stand_in else fields


def _blank_record(fields: list[str]) -> bool:
    """A CSV record that is a blank line: no field, or every field empty (``,,,``: the rows below a table
    that a spreadsheet once formatted, invisible in the sheet), as a TSV line of tabs alone is."""
    return not any(f.strip() for f in fields)


def _row_at(prefix: str, fmt: str, newline: str = "\n") -> int | None:
    """The data row (``None``: the header) holding the character that follows ``prefix``, counted as the
    readers below count rows (CSV: records, a quoted field may span lines; TSV and JSONL: non-blank
    lines, the TSV header excluded, ended by ``newline``: ``"\\r"`` in a file that has no ``"\\n"``, as
    :func:`_split_lines` reads it).

    Example:
        >>> _row_at("id\\ttitle\\rn1\\tFloods\\rn2\\t", "tsv", "\\r")
        2
    """
    if fmt in ("jsonl", "tsv"):  # rows are the non-blank lines (the header first, for TSV)
        lines = prefix.split(newline)
        n = sum(1 for line in lines[:-1] if line.strip()) + (1 if fmt == "jsonl" else 0)
        return n or None
    # a sentinel keeps the record holding the bad byte from being empty; non-strict: it may be inside quotes
    records = [r for r in csv_records(prefix + "x", newline, strict=False) if not _blank_record(r)]
    return (len(records) - 1) or None


def _json_key_at(line: str) -> str | None:
    """The top-level key whose value holds the character that follows ``line`` (a JSONL line up to it);
    ``None`` when it is in a key, or before the first one.

    Example:
        >>> _json_key_at('{"id": "n1", "tags": ["a", "b"], "title": "caf'), _json_key_at('{"id": 1, "ti')
        ('title', None)
    """
    depth, in_string, escaped, is_key, expect_key = 0, False, False, False, False
    raw: list[str] = []
    key: str | None = None
    for ch in line:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if is_key:
                    key = json.loads('"' + "".join(raw) + '"')
                continue
            raw.append(ch)
        elif ch == '"':
            in_string, raw = True, []
            is_key = expect_key and depth == 1
        elif ch in "{[":
            depth += 1
            expect_key = ch == "{"
        elif ch in "}]":
            depth -= 1
        elif ch == ",":
            expect_key = depth == 1 or expect_key
        elif ch == ":":
            expect_key = False
    return None if in_string and is_key else key


def _field_at(prefix: str, fmt: str, newline: str = "\n") -> str | None:
    """The column holding the character that follows ``prefix`` (the file's text up to a bad byte in a data
    row), read as :func:`_row_at` reads its row: the header's name of the field a CSV or TSV row has reached,
    or the JSONL line's key (:func:`_json_key_at`); ``None`` where it cannot be told (past the header's
    fields, in a key).

    Example:
        >>> _field_at('id,title\\n1,"Floods, again', "csv")
        'title'
        >>> _field_at("id\\ttitle\\r1\\tx\\r2\\t", "tsv", "\\r")
        'title'
    """
    if fmt == "jsonl":
        return _json_key_at(prefix.split(newline)[-1])
    if fmt == "tsv":
        lines = prefix.split(newline)
        header, cells = lines[0].rstrip("\r").split("\t"), lines[-1].split("\t")  # a CRLF line: not its "\r"
    else:
        records = [r for r in csv_records(prefix + "x", newline, strict=False) if not _blank_record(r)]
        header, cells = records[0], records[-1]
    return header[len(cells) - 1] if len(cells) <= len(header) else None


def separator_hint(path: str | Path, header: str) -> str:
    """What a header read as one column says of the file's separator: a ``.tsv`` whose header holds commas,
    a ``.csv`` whose header holds tabs, or either with semicolons was written with another separator than
    its name says.

    >>> separator_hint("news.tsv", "id,title,source").endswith("read tab-separated: rename it .csv")
    True
    >>> separator_hint("news.csv", "id,title")
    ''
    """
    suffix = table_suffix(str(path))
    reads = {".csv": "comma-separated", ".tsv": "tab-separated", ".tab": "tab-separated"}.get(suffix)
    reads = reads or ("tab-separated" if suffix == ".txt" else None)  # Excel's "Text": tab-separated
    found = [(s, n) for s, n in ((",", "comma"), ("\t", "tab"), (";", "semicolon")) if s in header]
    if reads is None or not found or reads.startswith(found[0][1]):
        return ""
    sep, name = found[0]
    fix = {",": "rename it .csv", "\t": "rename it .tsv"}.get(sep, "save it comma- or tab-separated")
    return (
        f"; the header holds {name}s: the file looks {name}-separated, but a {suffix} is read {reads}: {fix}"
    )


def to_utf8(path: Path, fmt: str, encoding: str | None = None) -> str:
    """How to turn the text table ``path`` (of format ``fmt``), which is not UTF-8, into the UTF-8 file nlsim
    reads: Excel's *CSV UTF-8* for a CSV, and the ``iconv`` command that converts the file as it is named,
    from ``encoding`` when it is known (a byte-order mark said it), else from the encodings Excel saves text
    in on a Chinese Windows (Big5 as ``CP950``, ``GB18030``) or a Western one (``CP1252``): named, never
    guessed.

    Example:
        >>> to_utf8(Path("news.tsv"), "tsv", "UTF-16").split(", as ")[1]
        'iconv -f UTF-16 -t UTF-8 news.tsv > news.utf8.tsv'
        >>> to_utf8(Path("news.csv"), "csv").split(": ", 1)[1][:60]
        'save it as UTF-8 (Excel: File > Save As > CSV UTF-8) or conv'
    """
    excel = "save it as UTF-8 " + ("(Excel: File > Save As > CSV UTF-8) " if fmt == "csv" else "") + "or "
    if compression(path) is not None:  # iconv reads the file it holds, not the compressed one
        return f"nlsim reads UTF-8 text only: {excel}convert the file it holds to UTF-8, and compress that"
    command = f"iconv -f {encoding or 'CP950'} -t UTF-8 {path.name} > {path.stem}.utf8{path.suffix}"
    if encoding:
        return f"nlsim reads UTF-8 text only: {excel}convert it, as {command}"
    return (
        f"nlsim reads UTF-8 text only: {excel}convert it from the encoding it was saved in, as {command} "
        "(Big5, as Excel saves text on a Traditional-Chinese Windows; GB18030 on a Simplified-Chinese one: "
        "-f GB18030; Windows-1252 on an English or other Western one: -f CP1252)"
    )


ENDIAN = {"UTF-16LE": "little-endian", "UTF-16BE": "big-endian"}


def utf16_without_mark(data: bytes) -> str | None:
    """``"UTF-16LE"`` or ``"UTF-16BE"`` when ``data``, a text file's bytes without a byte-order mark, is
    UTF-16 (as a database's export writes it: SQL Server's ``bcp -w``): its first bytes hold a 0 in every
    other byte, as an ASCII character is written in UTF-16, and none in the others; else ``None``. Read as
    UTF-8, such a file is ASCII with a NUL after each character: its header's names hold NULs.

    Example:
        >>> utf16_without_mark("id,title\\r\\n".encode("utf-16-le")), utf16_without_mark(b"id,title\\n")
        ('UTF-16LE', None)
    """
    head = data[:1024]
    even, odd = head[0::2], head[1::2]
    for zeros, other, name in ((odd, even, "UTF-16LE"), (even, odd, "UTF-16BE")):
        if zeros.count(0) >= max(2, len(zeros) // 4) and other.count(0) == 0:
            return name
    return None


def decode_table_text(path: Path, data: bytes, fmt: str) -> str:
    """The text of ``data``, the bytes of the table file ``path`` of format ``fmt`` (``"csv"``, ``"tsv"``,
    ``"jsonl"``): UTF-8, a byte-order mark dropped; else an :class:`InputError` naming what it is (a
    compressed file, UTF-16, UTF-32) or its first bad byte's row, field and offset, with how to convert it
    (:func:`to_utf8`). Every reader of a text table nlsim is given decodes it so."""
    _refuse_compressed(path, data)
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):  # before UTF-16's: it begins so too
        raise InputError(
            path,
            None,
            None,
            f"a UTF-32 text file (its byte-order mark says so), not UTF-8: {to_utf8(path, fmt, 'UTF-32')}",
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # what Excel's "Unicode Text" writes
        raise InputError(
            path,
            None,
            None,
            "a UTF-16 text file (its byte-order mark says so; Excel saves 'Unicode Text' so), not UTF-8: "
            + to_utf8(path, fmt, "UTF-16"),
        )
    bare = utf16_without_mark(data)
    if bare is not None:
        raise InputError(
            path,
            None,
            None,
            f"a UTF-16 text file without a byte-order mark ({ENDIAN[bare]}: every other one of its first "
            f"bytes is 0), not UTF-8: {to_utf8(path, fmt, bare)}",
        )
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + bom  # the offset in the file (the codec counts after the byte-order mark)
        newline = "\n" if b"\n" in data or b"\r" not in data else "\r"  # old Mac line endings: "\r" only
        line = data.count(newline.encode(), 0, start) + 1
        prefix = data[bom:start].decode("utf-8")
        row = _row_at(prefix, fmt, newline)
        held = " of the file it holds" if compression(path) else ""
        raise InputError(
            path,
            row,
            None if row is None else _field_at(prefix, fmt, newline),
            f"not valid UTF-8 text{' in the header' if row is None else ''}: byte 0x{data[start]:02x} at "
            f"byte offset {start}{held} (line {line}); {to_utf8(path, fmt)}",
        ) from None


def _frame(path: Path, rows: list[list[str]], header: list[str]) -> pd.DataFrame:
    """The rows as a frame of text columns; an :class:`InputError` when the header repeats a name."""
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        if not dup.strip():  # "id,title,," (trailing commas, as a spreadsheet leaves them)
            blank = [str(i) for i, h in enumerate(header, start=1) if not h.strip()]
            raise InputError(
                path,
                None,
                None,
                f"the header has empty column names (columns {', '.join(blank)} of {len(header)}; trailing "
                "commas or tabs?): name every column, or delete the empty ones",
            )
        raise InputError(path, None, dup, "the header names this column twice")
    return pd.DataFrame(rows, columns=header, dtype=object) if rows else pd.DataFrame(columns=header)


def _lacking(fields: list[str], header: list[str]) -> str | None:
    """The first column of ``header`` that a row of ``fields`` has no cell for (a cell left out); ``None``
    for a row of as many fields or more (which cell is extra cannot be told).

    >>> _lacking(["a", "b"], ["id", "title", "notes"]), _lacking(["a", "b", "c"], ["id", "title"])
    ('notes', None)
    """
    return header[len(fields)] if len(fields) < len(header) else None


def _refuse_separator_line(path: Path, text: str, fmt: str) -> None:
    """Refuse a file whose first line is ``sep=,`` (``sep=;``, ``sep=`` and a tab), the line some exports
    open with for Excel to split on that separator: read as the header, its columns would be ``sep=`` and an
    empty one, and the header a data row.

    >>> _refuse_separator_line(Path("news.csv"), "sep=;\\nid;title\\n", "csv")
    Traceback (most recent call last):
    ...
    nlsim.errors.InputError: news.csv: the first line 'sep=;' tells a spreadsheet the separator; ...
    """
    first = text[: text.find("\n")] if "\n" in text else text
    line = first.rstrip("\r")
    if not _SEPARATOR_LINE.fullmatch(line):
        return
    reads = "tab-separated" if fmt == "tsv" else "comma-separated"
    raise InputError(
        path,
        None,
        None,
        f"the first line {line!r} tells a spreadsheet the separator; nlsim reads a {table_suffix(str(path))} "
        f"{reads} with the header first: delete that line",
    )


_SEPARATOR_LINE = re.compile(r"sep=.?")
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
"""A field whole in double quotes, each quote inside doubled: how CSV quotes a field, and how pandas'
``to_csv(sep="\\t")`` and a spreadsheet's tab-separated text quote one in a TSV."""


def _csv_quoted(header: list[str], rows: list[list[str]]) -> bool:
    """Whether a TSV's fields are quoted as CSV's are: some field is in double quotes with a doubled quote
    inside (``"He said ""no"" today"``), which only such a writer writes (a title that is a quotation,
    ``"Floods"``, holds no doubled quote). A file without one is read as written, quotes and all.

    >>> _csv_quoted(["t"], [['"He said ""no"" today"'], ['"Floods, again"']]), _csv_quoted(["t"], [['"A"']])
    (True, False)
    """
    return any(
        f.startswith('"') and (m := _QUOTED.fullmatch(f)) is not None and '""' in m.group(1)
        for r in (header, *rows)
        for f in r
    )


def _unquoted(field: str) -> str:
    """``field`` without CSV's quotes, when it is whole in them (:data:`_QUOTED`); else as it is.

    >>> _unquoted('"He said ""no"" today"'), _unquoted('"A" and "B"'), _unquoted("Storm")
    ('He said "no" today', '"A" and "B"', 'Storm')
    """
    found = _QUOTED.fullmatch(field) if field.startswith('"') else None
    return field if found is None else found.group(1).replace('""', '"')


def _read_delimited(path: Path, text: str, fmt: str, broken: list[BrokenRow] | None = None) -> pd.DataFrame:
    _refuse_separator_line(path, text, fmt)
    if fmt == "tsv":
        lines = _split_lines(text)
        if not lines:
            raise InputError(path, None, None, "the file is empty (no header)")
        header = lines[0].split("\t")
        rows = []
        for lineno, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != len(header):
                err = InputError(
                    path,
                    len(rows) + len(broken or ()) + 1,
                    _lacking(fields, header),
                    f"{len(fields)} fields, the header has {len(header)} (line {lineno}; a tab inside a "
                    "field?)",
                )
                _refuse_or_keep(err, line, broken)
                continue
            rows.append(fields)
        if _csv_quoted(header, rows):  # written by pandas or a spreadsheet: "He said ""no"" today"
            header = [_unquoted(f) for f in header]
            rows = [[_unquoted(f) for f in r] for r in rows]
        return _frame(path, rows, header)
    text, stand_in = _held_returns(text)  # a "\r" alone is a character of its field, not a row's end
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = _released(next(reader), stand_in)
    except StopIteration:
        raise InputError(path, None, None, "the file is empty (no header)") from None
    except csv.Error as exc:
        raise InputError(path, None, None, f"the header cannot be read: {exc}") from None
    rows = []
    n = 0
    lines: list[str] = []  # the file's lines as the reader splits them, read for a broken row's own text
    while True:
        first_line = reader.line_num
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(
                path, n + 1, None, f"cannot be read as CSV ({exc}; an unbalanced quote?)"
            ) from None
        fields = _released(fields, stand_in)
        if _blank_record(fields):
            continue
        n += 1
        if len(fields) != len(header):
            err = InputError(
                path,
                n,
                _lacking(fields, header),
                f"{len(fields)} fields, the header has {len(header)} (an unquoted comma or quote?)"
                + (separator_hint(path, header[0]) if len(header) == 1 else ""),
            )
            lines = lines or io.StringIO(text, newline="").readlines()
            raw = "".join(lines[first_line : reader.line_num]).rstrip("\r\n")
            _refuse_or_keep(err, raw.replace(stand_in, "\r") if stand_in else raw, broken)
            continue
        rows.append(fields)
    return _frame(path, rows, header)


def _surrogate(value: object) -> str | None:
    """The first lone surrogate in a JSON value, its keys included (``"\\ud83c"`` escaped without its other
    half: half a character, which no UTF-8 writer takes), or ``None``.

    Example:
        >>> _surrogate({"id": "a", "title": ["ok", "x\\ud83c"]})
        '\\ud83c'
    """
    if isinstance(value, str):
        return next((ch for ch in value if "\ud800" <= ch <= "\udfff"), None)
    if isinstance(value, dict):
        parts: list[object] = [*value.keys(), *value.values()]
    else:
        parts = value if isinstance(value, list) else []
    return next((ch for ch in map(_surrogate, parts) if ch is not None), None)


def _check_surrogates(path: Path, row: int, obj: dict, lineno: int) -> None:
    """An :class:`InputError` naming the row and field of a JSON record that holds a lone surrogate: pandas
    and every writer of the report would fail on it later, without saying where."""
    for key, value in obj.items():
        in_key = _surrogate(key)
        bad = in_key or _surrogate(value)
        if bad is not None:
            raise InputError(
                path,
                row,
                None if in_key else key,
                f"holds U+{ord(bad):04X}{' in a column name' if in_key else ''} (line {lineno}), half of a "
                "UTF-16 surrogate pair written as a \\u escape without its other half: not a character (the "
                "text was cut or damaged before it was written); fix or remove it",
            )


class _NamedTwice(ValueError):
    """A JSON object that names a field twice (its name the message): ``json`` keeps the last value."""


def _json_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object as a dict, or :class:`_NamedTwice` when it names a field twice (a CSV header that does
    is refused too).

    Example:
        >>> _json_object([("id", "a"), ("title", "Floods")])
        {'id': 'a', 'title': 'Floods'}
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        names = [k for k, _ in pairs]
        raise _NamedTwice(next(k for k in names if names.count(k) > 1))
    return obj


def sheet_rows(path: str | Path) -> list[int]:
    """The row a spreadsheet shows each data row of the CSV or TSV file ``path`` on (the header is row 1),
    as :func:`read_table` reads the file: the empty lines it skips are rows of the sheet, and a CSV record
    whose quoted field spans lines is one row. ``[]`` for a file that cannot be read so (:func:`read_table`
    says why).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
        >>> _ = p.write_text('id,title\\n1,"Floods,\\nagain"\\n\\n2,Storm\\n', encoding="utf-8")
        >>> sheet_rows(p)
        [2, 4]
    """
    try:
        text = read_bytes(Path(path)).decode("utf-8-sig")
        if table_format(path, ("csv", "tsv")) == "tsv":
            blank = [not line.strip() for line in _split_lines(text)]
        else:
            blank = [_blank_record(f) for f in csv_records(text)]
    except (OSError, UnicodeDecodeError, csv.Error, InputError):
        return []
    return [row for row, skipped in enumerate(blank[1:], start=2) if not skipped]


_JSON_SPACE = " \t\n\r"
"""The white space JSON allows between its values."""


def _read_jsonl(path: Path, text: str, broken: list[BrokenRow] | None = None) -> pd.DataFrame:
    """A JSON Lines file's rows, or those of a file of one JSON array of objects (:func:`_json_array`), as
    a frame (integers kept as integers); an :class:`InputError` naming the row and field of a bad one."""
    if text.lstrip(_JSON_SPACE).startswith("["):  # a .json file of one array (a CMS's export, to_json)
        records = _json_array(path, text, broken)
    else:
        records = _json_lines(path, text, broken)
    frame = pd.DataFrame.from_records(records)
    for col in frame.columns:  # integers stay integers (with empty cells, or beside fractions), as written
        if frame[col].dtype.kind == "f":
            values = [r.get(col) for r in records]
            if any(isinstance(v, int) and not isinstance(v, bool) for v in values):
                frame[col] = pd.Series(values, dtype=object, index=frame.index)
    return frame


def _json_lines(path: Path, text: str, broken: list[BrokenRow] | None) -> list[dict]:
    """The records of a JSON Lines file, one object a non-blank line (see the module docstring)."""
    records: list[dict] = []
    for lineno, line in enumerate(_split_lines(text), start=1):
        if not line.strip():
            continue
        row = len(records) + len(broken or ()) + 1
        try:
            # a byte-order mark opening a line: the first line of a file joined on (cat a.jsonl b.jsonl)
            obj = json.loads(line.removeprefix("\ufeff"), object_pairs_hook=_json_object)
        except _NamedTwice as exc:
            raise _named_twice(path, row, str(exc), lineno) from None
        except json.JSONDecodeError as exc:
            if row == 1:
                _refuse_json_document(path, text)
            err = InputError(path, row, None, f"invalid JSON (line {lineno}; truncated line?): {exc}")
            _refuse_or_keep(err, line, broken)
            continue
        except RecursionError:  # nested deeper than Python's stack reads (a broken or hostile export)
            err = InputError(path, row, None, f"JSON nested too deeply to read (line {lineno})")
            _refuse_or_keep(err, line, broken)
            continue
        if not isinstance(obj, dict):
            err = InputError(path, row, None, f"each JSONL line must be an object (line {lineno})")
            _refuse_or_keep(err, line, broken)
            continue
        _check_surrogates(path, row, obj, lineno)
        records.append(obj)
    if len(records) == 1 and not broken:
        _refuse_wrapped_rows(path, records[0])
    return records


def _named_twice(path: Path, row: int, name: str, lineno: int) -> InputError:
    """The error of a JSON object (row ``row``, from line ``lineno``) that names the field ``name`` twice."""
    return InputError(
        path,
        row,
        name,
        f"the JSON object names this field twice (line {lineno}): one value would be dropped without a "
        "word; keep one",
    )


def _rows_key(obj: dict) -> str | None:
    """The key under which a JSON object holds rows (a list of objects: ``{"items": [{...}, ...]}``, as an
    API's answer wraps them) when every value of it is a list or an object; else ``None`` (a row whose
    field holds a list of objects is a row).

    >>> _rows_key({"items": [{"id": 1}], "meta": {"page": 1}}), _rows_key({"id": 1, "tags": [{"a": 1}]})
    ('items', None)
    """
    if not obj or not all(isinstance(v, (list, dict)) for v in obj.values()):
        return None
    return next((k for k, v in obj.items() if isinstance(v, list) and v and isinstance(v[0], dict)), None)


def _refuse_wrapped_rows(path: Path, obj: dict) -> None:
    """An :class:`InputError` when ``obj``, a file's one JSON object, holds the rows under a key
    (:func:`_rows_key`) instead of being one: read as a row, its columns would be that key alone."""
    key = _rows_key(obj)
    if key is not None:
        raise InputError(
            path,
            None,
            None,
            f"one JSON object holding the rows under {key!r}, not rows: write the rows alone, one object a "
            f"line (jq -c '.[{json.dumps(key)}][]' FILE > FILE.jsonl) or as a JSON array of objects",
        )


def _refuse_json_document(path: Path, text: str) -> None:
    """An :class:`InputError` when ``text``, whose first line is not a JSON value, is one JSON object over
    several lines (pretty-printed), or objects one after another each over several lines (``jq .`` without
    ``-c``): no row of it is a line, and it is not an array of rows."""
    decoder = json.JSONDecoder()
    found: list[dict] = []
    pos = _skip_space(text, 0)
    try:
        while pos < len(text):
            value, pos = decoder.raw_decode(text, pos)
            if not isinstance(value, dict):
                return
            found.append(value)
            pos = _skip_space(text, pos)
    except (json.JSONDecodeError, RecursionError):
        return
    if len(found) > 1:
        raise InputError(
            path,
            None,
            None,
            "JSON objects written over several lines each (as jq writes them without -c), not one a line: "
            "write them one a line (JSON Lines: jq -c . FILE > FILE.jsonl)",
        )
    if not found:
        return
    _refuse_wrapped_rows(path, found[0])
    raise InputError(
        path,
        None,
        None,
        "one JSON object written over several lines, not rows: write one object a line (JSON Lines: jq -c . "
        "FILE > FILE.jsonl) or a JSON array of objects",
    )


def _skip_space(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON white space."""
    while pos < len(text) and text[pos] in _JSON_SPACE:
        pos += 1
    return pos


def _json_array(path: Path, text: str, broken: list[BrokenRow] | None) -> list[dict]:
    """The records of a file of one JSON array of objects (``[{"id": ...}, ...]``, what a CMS's export and
    ``df.to_json(orient="records")`` write), checked as JSON Lines records are: its elements are the rows
    (counted from 1), each named by the line it starts on; an element that is not an object is a bad row;
    text that is not JSON is an error naming the row it is in (where that row ends cannot be told).

    Example:
        >>> _json_array(Path("n.json"), '[{"id": "a"},\\n {"id": "b"}]', None)
        [{'id': 'a'}, {'id': 'b'}]
        >>> _json_array(Path("n.json"), '[{"id": "a"},\\n ["b"]]', None)
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: n.json: row 2: each element of the JSON array must be an object (line 2)
    """
    decoder = json.JSONDecoder(object_pairs_hook=_json_object)
    records: list[dict] = []
    pos = _skip_space(text, text.index("[") + 1)
    closed = text.startswith("]", pos)
    lineno, counted = 1, 0  # the line of text[counted], counted on from element to element
    while not closed:
        row = len(records) + len(broken or ()) + 1
        lineno, counted = lineno + text.count("\n", counted, pos), pos
        try:
            obj, end = decoder.raw_decode(text, pos)
        except _NamedTwice as exc:
            raise _named_twice(path, row, str(exc), lineno) from None
        except json.JSONDecodeError as exc:
            raise InputError(
                path, row, None, f"invalid JSON in the array (line {exc.lineno}; cut short?): {exc}"
            ) from None
        except RecursionError:
            raise InputError(path, row, None, f"JSON nested too deeply to read (line {lineno})") from None
        if isinstance(obj, dict):
            _check_surrogates(path, row, obj, lineno)
            records.append(obj)
        else:
            err = InputError(
                path, row, None, f"each element of the JSON array must be an object (line {lineno})"
            )
            _refuse_or_keep(err, text[pos:end], broken)
        pos = _skip_space(text, end)
        closed = text.startswith("]", pos)
        if not closed and not text.startswith(",", pos):
            raise InputError(
                path,
                row,
                None,
                f"invalid JSON in the array (line {_line_of(text, pos)}; cut short?): ',' or ']' expected "
                "after the element",
            )
        pos = _skip_space(text, pos + 1) if not closed else pos
    pos = _skip_space(text, pos + 1)
    if pos < len(text):
        raise InputError(
            path,
            None,
            None,
            f"text after the JSON array (line {_line_of(text, pos)}): a file of one array of objects is "
            "read, or one object a line",
        )
    return records


def _line_of(text: str, pos: int) -> int:
    """The line (from 1) holding ``text[pos]``."""
    return text.count("\n", 0, pos) + 1


def _duplicate_parquet_column(path: Path, names: list[str]) -> None:
    """An :class:`InputError` naming the first column name that ``names`` (a Parquet file's) repeats."""
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(path, None, dup, "the Parquet file has two columns of this name; rename one")


def _refuse_text(path: Path, head: bytes) -> None:
    """An :class:`InputError` when ``head``, the start of the file ``path`` that is read as Parquet, is a
    text table's first line (a CSV, TSV or JSON Lines file under a ``.parquet`` name), naming its kind.

    Example:
        >>> _refuse_text(Path("pairs.parquet"), b"text_a\\ttext_b\\tscore\\nA\\tB\\t1\\n")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: pairs.parquet: a tab-separated text file ..., not Parquet: name it .tsv
    """
    try:
        line = head.split(b"\n", 1)[0].decode("utf-8-sig").rstrip("\r")
    except UnicodeDecodeError:  # binary: a damaged Parquet file, said as such
        return
    if not line.strip() or not line.replace("\t", " ").isprintable():
        return
    kinds = [
        (line.lstrip().startswith("{"), "JSON Lines", ".jsonl"),
        ("\t" in line, "tab-separated", ".tsv"),
        ("," in line, "comma-separated", ".csv"),
    ]
    for found, kind, suffix in kinds:
        if found:
            raise InputError(
                path,
                None,
                None,
                f"a {kind} text file (its first line reads {line[:60]!r}), not Parquet: name it {suffix}",
            )


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet file as stored (see the module docstring), or an :class:`InputError` saying why not."""
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types on a truncated or foreign file
        try:
            names = pq.read_schema(path).names
        except Exception:  # not even a schema: the error below says so
            names = []
        _duplicate_parquet_column(path, names)
        try:
            with open(path, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            head = b""
        _refuse_compressed(path, head)
        _refuse_text(path, head)
        raise InputError(path, None, None, f"cannot read as Parquet (truncated or corrupt?): {exc}") from None
    _duplicate_parquet_column(path, table.column_names)
    _check_parquet_text(path, table)
    _check_parquet_dates(path, table)
    frame = table.to_pandas(integer_object_nulls=True)
    # a named index is a column of the file (df.set_index("id").to_parquet()): pandas' metadata made it the
    # frame's index, out of its columns; an unnamed one (__index_level_0__, a filtered frame's rows) is none
    stored = [name for name in frame.index.names if name is not None and name in table.column_names]
    return frame.reset_index(stored) if stored else frame


DAYS_1970 = (-719_162, 2_932_896)
"""The dates a date can be (0001-01-01 to 9999-12-31), in days after 1970-01-01 (Parquet's ``date32``)."""


def _check_parquet_dates(path: Path, table: pa.Table) -> None:
    """An :class:`InputError` naming the row and column of the first ``date32``/``date64`` cell past the
    years a date can have (1-9999): a number of seconds or milliseconds stored as days, which no reader
    turns into a date (the conversion would fail without saying where)."""
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        per_day = 1 if pa.types.is_date32(kind) else 86_400_000 if pa.types.is_date64(kind) else 0
        if not per_day or not len(column):
            continue
        stored = column.cast(pa.int32() if per_day == 1 else pa.int64()).fill_null(0)
        days = stored.to_numpy().astype(np.int64) // per_day
        outside = np.flatnonzero((days < DAYS_1970[0]) | (days > DAYS_1970[1]))
        if len(outside):
            row = int(outside[0])
            year = 1970 + int(days[row] / 365.2425)
            raise InputError(
                path,
                row + 1,
                name,
                f"a date about the year {year:,}, past the years a date can have (1-9999): a number of "
                "seconds or milliseconds stored as days? Write the dates as dates (or the cell empty)",
            )


def _check_parquet_text(path: Path, table: pa.Table) -> None:
    """An :class:`InputError` naming the row and column of a text cell that is not UTF-8 (a writer that does
    not check its text stored other bytes under a string type): pandas would fail on it later, without
    saying where."""
    try:
        table.validate(full=True)
    except pa.ArrowInvalid as exc:
        for name, column in zip(table.column_names, table.columns, strict=True):
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                _check_utf8_cells(path, name, column.cast(pa.large_binary()).to_pylist())  # bytes as stored
        raise InputError(path, None, None, f"the Parquet file holds invalid data: {exc}") from None


def _check_utf8_cells(path: Path, name: str, cells: list[bytes | None]) -> None:
    """An :class:`InputError` naming the first of ``cells`` (column ``name``) that is not UTF-8."""
    for row, value in enumerate(cells, start=1):
        try:
            (value or b"").decode("utf-8")
        except UnicodeDecodeError as bad:
            raise InputError(
                path,
                row,
                name,
                f"not valid UTF-8 text: byte 0x{bad.object[bad.start]:02x} at byte {bad.start} of the cell; "
                "write the file with its text as UTF-8",
            ) from None


def text_columns(path: str | Path, frame: pd.DataFrame, names: tuple[str, ...]) -> pd.DataFrame:
    """``frame`` (read from ``path``) with the cells of its columns ``names`` that hold bytes (a Parquet
    binary column: Hive, Impala and older Spark write text so) read as UTF-8 text, as a text file's bytes
    are; an :class:`InputError` naming the row and column of the first such cell that is not UTF-8. The
    other columns are left as they are (a binary column nlsim does not read is kept, not decoded).

    Example:
        >>> frame = pd.DataFrame({"title": [b"\\xe9\\xa2\\xb1", None]})
        >>> text_columns("t.parquet", frame, ("title",))["title"].tolist()
        ['颱', None]
    """
    for name in names:
        if name not in frame.columns or frame[name].dtype != object:  # text is stored as text
            continue
        cells = frame[name].tolist()
        if not any(isinstance(v, bytes) for v in cells):
            continue
        _check_utf8_cells(Path(path), name, [v if isinstance(v, bytes) else None for v in cells])
        decoded = [v.decode("utf-8") if isinstance(v, bytes) else v for v in cells]
        frame = frame.assign(**{name: pd.Series(decoded, dtype=object, index=frame.index)})
    return frame


def read_bytes(path: Path) -> bytes:
    """The bytes of the table file ``path``: those of the file it holds when it is named compressed
    (:func:`compression`), or an :class:`InputError` saying why they cannot be read.

    Example:
        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv.gz"
        >>> _ = p.write_bytes(gzip.compress(b"id,title\\n1,a\\n"))
        >>> read_bytes(p)
        b'id,title\\n1,a\\n'
        >>> _ = p.write_bytes(b"id,title\\n1,a\\n")
        >>> read_bytes(p)
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: ...t.csv.gz: named .gz, but not compressed (gzip): ... rename it t.csv
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, None, f"cannot be read: {exc.strerror or exc}") from None
    name = compression(path)
    if name is None:
        return data
    found = compressed_format(data)
    if found != name:
        if found is None:
            why = f"not compressed ({name}): it is the table itself? rename it {path.with_suffix('').name}"
        else:
            why = f"compressed as {found}, not {name}: decompress it, or name it as what it is"
        raise InputError(path, None, None, f"named {path.suffix}, but {why}")
    try:
        with OPENERS[name](io.BytesIO(data), "rb") as packed:
            return packed.read()
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
        raise InputError(
            path, None, None, f"cannot be decompressed ({name}; cut short or damaged?): {exc}"
        ) from None


def read_table(
    path: str | Path,
    *,
    allowed: tuple[str, ...] = ("parquet", "csv", "tsv", "jsonl"),
    broken: list[BrokenRow] | None = None,
) -> pd.DataFrame:
    """Read a table file by the rules in the module docstring (CSV/TSV/JSONL cells as text).

    With ``broken`` (a list), a row that cannot be split into fields is appended to it and left out of the
    frame instead of being an error; the rows after it keep their own row numbers."""
    path = check_input_file(path)
    fmt = table_format(path, allowed)
    if fmt == "parquet":
        return _read_parquet(path)
    text = decode_table_text(path, read_bytes(path), fmt)
    if fmt == "jsonl":
        return _read_jsonl(path, text, broken)
    return _read_delimited(path, text, fmt, broken)


def write_table(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` atomically in the format of ``path``'s suffix, readable back by :func:`read_table`.

    TSV cells must not hold tabs or newlines (TSV has no quoting): such a cell is an error, not a
    silently broken file.
    """
    path = Path(path)
    fmt = table_format(path, ("parquet", "csv", "tsv"))
    if compression(path) is not None:
        raise InputError(path, None, None, f"writes no compressed file: name it {path.with_suffix('').name}")
    if fmt == "tsv":
        for col in frame.columns:
            bad = frame[col].astype(str).str.contains(r"[\t\r\n]", regex=True)
            if bad.any():
                row = int(bad.to_numpy().nonzero()[0][0]) + 1
                raise InputError(path, row, str(col), "a tab or newline cannot be written to a TSV cell")
    with atomic_path(path, suffix=path.suffix) as tmp:
        if fmt == "parquet":
            frame.to_parquet(tmp, index=False)
        elif fmt == "csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_csv(tmp, sep="\t", index=False, quoting=csv.QUOTE_NONE)
