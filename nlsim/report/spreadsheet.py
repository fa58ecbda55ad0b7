"""The report's spreadsheet files (``pairs.csv``, ``members.csv``, ``report.xlsx``): user text kept as text.

Titles, sources, links and ids come from the corpus, so they can hold what a spreadsheet does not take as
plain text:

- **Control characters** (the C0 controls other than tab, line feed and carriage return, DEL, the C1
  controls): an ``.xlsx`` file cannot hold the C0 ones (XML 1.0 forbids them: openpyxl refuses them,
  Excel would not open the file), and in a CSV file a spreadsheet shows them as boxes or ends the cell at
  a NUL, and a terminal showing the file obeys them (a colour, a cursor move). In every spreadsheet file a
  vertical tab, form feed or U+0085 (line and page breaks) becomes a space, a terminal's escape sequence
  (``\\x1b[31m``) is removed whole, and the other control characters are removed (:func:`sheet_text`);
  ``report.xlsx`` also drops U+FFFE, U+FFFF and unpaired surrogates, which XML 1.0 forbids
  (:func:`xlsx_text`). The Parquet files keep the text as it is.
- **Escapes**: Excel reads ``_x0041_`` in a cell's stored text as the character it names; such text is
  stored with its underscore escaped, as Excel stores it, and shows as written (:func:`stored_text`).
- **Formulas**: text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a
  formula by spreadsheets (``=HYPERLINK(...)`` a live link, ``=cmd|...`` a DDE command: CSV injection), and
  so, by Excel in a Japanese or Chinese setting, is text starting with their full-width forms ``＝``,
  ``＋``, ``－``, ``＠`` (:data:`FORMULA_START`), and by a spreadsheet that trims a cell before reading it,
  text starting so after spaces or characters that show nothing (``\\ufeff=x``, ``\\u200b+1``:
  :func:`nlsim.io.editor_file.runs_as_formula`).
  Every text cell of ``report.xlsx`` is stored as a string, never as a formula; numbers stay numbers. A CSV
  file has no cell types, so there such text starts with an apostrophe (OWASP's rule, :func:`csv_text`),
  which spreadsheets show as text, and so does such text after apostrophes of its own (an id ``'=x`` is
  written ``''=x``, never as ``=x`` escaped), and every text cell is in double quotes (a ``;`` or tab
  inside a title cannot start a new cell where a spreadsheet splits on it).
- **Length**: a cell holds :data:`XLSX_CELL_CHARACTERS`; ``report.xlsx`` holds longer text cut (never
  inside what a reader sees as one character: :func:`character_start`), a CSV file whole, which a
  spreadsheet cuts when it opens the file.
- **Numbers and dates**: a spreadsheet opening a CSV file reads a cell by its look, whatever the quotes: the
  id ``1E5`` shows as 1.00E+05, ``007`` as 7 (:func:`shown_otherwise`); ``report.xlsx`` holds every id as
  text.

:func:`written_changes` lists the items whose text the files written changed, cell by cell, and in which
files, for the page's notice (:mod:`nlsim.report.html`) and ``run.json``; :func:`text_changes` the changes
the rules would make to any item's text.

Example:
    >>> xlsx_text("Floods\\x0bhit the north\\x07")
    'Floods hit the north'
    >>> csv_text('=HYPERLINK("http://x")'), csv_text("plain")
    ('\\'=HYPERLINK("http://x")', 'plain')
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.io import columns, editor_file

FORMULA_START = editor_file.ESCAPED_START
"""What makes a spreadsheet read a cell as a formula (OWASP, CSV injection; the full-width ``＝``, ``＋``,
``－``, ``＠`` too, which Excel in a Japanese or Chinese setting reads so), as the editors' files escape
it."""
TEXT_FIELDS = ("id", "title", "source", "url")
"""The item fields a report copies into its spreadsheet cells, as first declared (:func:`text_fields`)."""
_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
"""A terminal's escape sequence (ECMA-48: ``\\x1b[31m``, a colour): its letters are no text either."""
_BREAKS = re.compile("[\x0b\x0c\x85]")
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")
_SHEET_ODD = re.compile(f"{_BREAKS.pattern}|{_CONTROLS.pattern}")
"""What :func:`sheet_text` changes (a terminal's escape sequence opens with one of :data:`_CONTROLS`)."""
_FORBIDDEN = re.compile("[\ufffe\uffff\ud800-\udfff]")


XLSX_CELL_CHARACTERS = columns.SHEET_CELL_CHARACTERS
"""The most characters a spreadsheet cell holds (Excel's limit; longer text is cut when the file is read).
Excel counts UTF-16 code units: a character outside the Basic Multilingual Plane (an emoji, a CJK
ideograph of the extensions B and later) is two (:func:`cell_length`)."""
cell_length = columns.cell_length


def _cut_cell(text: str) -> str:
    """``text`` cut to :data:`XLSX_CELL_CHARACTERS` as a spreadsheet counts them, whole characters only, and
    before the character that reads as one with the cut's last (:func:`character_start`)."""
    if len(text) <= XLSX_CELL_CHARACTERS // 2 or cell_length(text) <= XLSX_CELL_CHARACTERS:
        return text
    units = 0
    for n, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > XLSX_CELL_CHARACTERS:
            return text[: character_start(text, n)]
    return text


_JOINED = re.compile(
    "[\u200c\u200d\ufe00-\ufe0f\U0001f3fb-\U0001f3ff\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
)
"""What reads as part of the character before it: a zero-width joiner or non-joiner, a variation
selector, an emoji skin tone, an emoji tag (a subdivision flag's letters)."""
_INDICATOR = re.compile("[\U0001f1e6-\U0001f1ff]")
"""A regional indicator: two of them read as one flag (🇹🇼)."""
_SHOWN_APART = 64
"""How far :func:`character_start` looks back: a text of more marks on one letter is cut among them."""


def character_start(text: str, n: int) -> int:
    """Where the character a reader sees at ``text[n]`` starts (``n`` or before): not inside a letter and
    its combining marks (``é`` as ``e`` and U+0301), an emoji sequence joined by U+200D (👩🏽‍💻), an emoji
    and its skin tone or variation selector, nor a flag's pair of regional indicators. A cut there leaves
    no letter without its accent, no emoji without its skin tone, no lone half of a flag.

    >>> character_start("Cafe\u0301 x", 4), character_start("Cafe\u0301 x", 5)
    (3, 5)
    >>> character_start("a\U0001f469\U0001f3fd\u200d\U0001f4bb", 4)
    1
    >>> flags = "\U0001f1f9\U0001f1fc\U0001f1ef\U0001f1f5"  # two flags
    >>> character_start(flags, 1), character_start(flags, 2), character_start(flags, 3)
    (0, 2, 2)
    """
    start = n
    while 0 < start < len(text) and n - start < _SHOWN_APART:
        ch = text[start]
        if unicodedata.category(ch).startswith("M") or _JOINED.match(ch) or text[start - 1] == "\u200d":
            start -= 1
        else:
            break
    if n - start >= _SHOWN_APART:
        return n
    if 0 < start < len(text) and _INDICATOR.match(text[start]):
        run = start
        while run and _INDICATOR.match(text[run - 1]):
            run -= 1
        start -= (start - run) % 2  # the first half of a flag's pair
    return start


def sheet_text(text: str) -> str:
    """``text`` as every spreadsheet file holds it: a vertical tab, form feed or U+0085 (a line or page
    break) as a space, a terminal's escape sequence removed whole, and the other control characters but the
    tab, the line feed and the carriage return (C0, DEL, C1) removed.

    >>> sheet_text("\\x1b[31mStorm\\x1b[0m hits\\x00 the\\x0bcoast\\x7f"), sheet_text("a\\tb\\r\\nc")
    ('Storm hits the coast', 'a\\tb\\r\\nc')
    """
    if _SHEET_ODD.search(text) is None:
        return text
    return _CONTROLS.sub("", _BREAKS.sub(" ", _TERMINAL_ESCAPE.sub("", text)))


def xlsx_text(text: str) -> str:
    """``text`` as an ``.xlsx`` cell can hold it: :func:`sheet_text`, the other characters XML 1.0 forbids
    removed, and cut to :data:`XLSX_CELL_CHARACTERS` (as a spreadsheet counts them: :func:`cell_length`)."""
    return _cut_cell(_xml_text(text))


def _xml_text(text: str) -> str:
    return _FORBIDDEN.sub("", sheet_text(text))


_OOXML_ESCAPE = re.compile(r"_(?=x[0-9A-Fa-f]{4}_)")


def stored_text(text: str) -> str:
    """``text`` as an ``.xlsx`` cell stores it for a spreadsheet to show it as written: Excel reads
    ``_xHHHH_`` in a cell's text as the character U+HHHH (``_x0041_`` shows ``A``), so the underscore
    opening such text is stored as ``_x005F_`` (ECMA-376 Part 1, 22.4.2.4, as Excel itself stores it),
    each one, where two share an underscore too.

    >>> stored_text("Code _x0041_x0042_ and snake_case")
    'Code _x005F_x0041_x005F_x0042_ and snake_case'
    """
    return _OOXML_ESCAPE.sub("_x005F_", text) if "_x" in text else text


def csv_text(text: str) -> str:
    """``text`` for a CSV cell: :func:`sheet_text`, then an apostrophe in front when a spreadsheet would read
    it as a formula, or when it is such text after apostrophes of its own, the rule the editors' files are
    written by (:func:`nlsim.io.editor_file.escape`).

    >>> csv_text("=x"), csv_text("'=x"), csv_text("'quoted'"), csv_text("\\x07=x")
    ("'=x", "''=x", "'quoted'", "'=x")
    """
    return editor_file.escape(sheet_text(text))


@dataclass(frozen=True)
class TextChange:
    """An item field whose spreadsheet text differs from the corpus: ``characters`` (control characters
    removed or replaced in every spreadsheet file, and in ``report.xlsx`` what XML 1.0 forbids:
    :func:`sheet_text`, :func:`xlsx_text`), ``cut`` (longer than a cell holds: cut in ``report.xlsx``;
    whole in a CSV file, which a spreadsheet cuts when it opens the file), ``formula`` (an apostrophe in
    front in the CSV files) or ``number`` (an id a spreadsheet opening a CSV file reads as a number, a date
    or a time, and shows otherwise: :func:`shown_otherwise`)."""

    item_id: str
    field: str
    change: str
    files: tuple[str, ...] = ()
    """The files whose cells hold the change (``pairs.csv``, ``members.csv``, ``report.xlsx``,
    ``window/members.csv``), as :func:`written_changes` found them; empty in a record written before."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(self.files))  # a list as run.json holds it


SheetFiles = Mapping[str, Mapping[str, pd.DataFrame]]
"""The report's spreadsheet files, each by its name (``pairs.csv``, ``report.xlsx``, ...) with its tables
by their names (``pairs``, ``members``, ``clusters``, ``topics``: :func:`nlsim.io.columns.table`), as the
tables are before :func:`nlsim.io.columns.sheet_frame` makes them cells (lists as lists)."""


def written_changes(files: SheetFiles, items: pd.DataFrame | None = None) -> list[TextChange]:
    """The changes :func:`xlsx_text` (``.xlsx`` files) and :func:`csv_text` (``.csv`` files) make to the
    item text the files hold, cell by cell: an item is named only for the files it is written to (an item
    the page shows only as a near miss or as a topic's single item is in no CSV file). ``items`` (``id``
    and the text fields) tells whose text a list cell of another field holds (a story's ``sources``).
    In file order, then row order."""
    found: dict[tuple[str, str, str], list[str]] = {}
    owners = _owners_of(items)
    for name, tables in files.items():
        xlsx = name.endswith(".xlsx")
        for table, frame in tables.items():
            for item, field, text in _item_cells(columns.table(table), frame, owners, xlsx):
                for change in _cell_changes(text, xlsx, field):
                    where = found.setdefault((item, field, change), [])
                    if name not in where:
                        where.append(name)
    return [TextChange(i, f, c, tuple(where)) for (i, f, c), where in found.items()]


def _cell_changes(text: str, xlsx: bool, field: str = "") -> list[str]:
    """What a file does to a text cell (or a value of a list cell): ``characters`` and ``cut`` in an
    ``.xlsx`` file, ``characters``, ``formula`` and ``cut`` in a CSV file (which holds the text whole, and a
    spreadsheet cuts it to a cell's :data:`XLSX_CELL_CHARACTERS` when it opens the file), and ``number`` for
    an id (``field``) that a spreadsheet opening a CSV file shows as another (:func:`shown_otherwise`)."""
    if not xlsx:
        shown = sheet_text(text)
        written = editor_file.escape(shown)
        return (
            (["characters"] if shown != text else [])
            + (["formula"] if written != shown else [])
            + (["cut"] if cell_length(written) > XLSX_CELL_CHARACTERS else [])
            + (["number"] if field == "id" and shown_otherwise(written) else [])
        )
    xml = _xml_text(text)
    return (["characters"] if xml != text else []) + (
        ["cut"] if cell_length(xml) > XLSX_CELL_CHARACTERS else []
    )


def _owners_of(items: pd.DataFrame | None) -> dict[str, dict[str, Any]]:
    """Each item's text fields by its id."""
    if items is None or not len(items) or "id" not in items:
        return {}
    fields = [f for f in text_fields() if f in items and f != "id"]
    ids = items["id"].astype(str).tolist()
    values = [items[f].tolist() for f in fields]
    return {i: dict(zip(fields, (v[n] for v in values), strict=True)) for n, i in enumerate(ids)}


def _item_cells(
    spec: columns.Table, frame: pd.DataFrame, owners: dict[str, dict[str, Any]], xlsx: bool
) -> list[tuple[str, str, str]]:
    """The item text a table's cells hold, as ``(item id, field, text)``: a column of ``source="item.id"``
    holds ids; one of another item field holds the text of the row's item (``title_a``: of ``id_a``; a
    member's ``title``: of its ``item_id``; a story's ``representative_title``: of its
    ``representative``); a list cell holds the values it keeps (:func:`nlsim.io.columns.sheet_list_values`;
    a CSV file has no list cells), an id as that item's, another field's value as that of each item of the
    row's first list of ids (a story's ``member_ids``) that has it."""
    fields = set(text_fields())
    scalar_ids = [
        c.name for c in spec.columns if c.item_field == "id" and c.format != "list" and c.name in frame
    ]
    id_lists = [
        c.name for c in spec.columns if c.item_field == "id" and c.format == "list" and c.name in frame
    ]
    out: list[tuple[str, str, str]] = []
    for c in spec.columns:
        field = c.item_field
        if field not in fields or c.name not in frame or (c.format == "list" and not xlsx):
            continue
        if c.format == "list":
            lists = frame[id_lists[0]].tolist() if field != "id" and id_lists else None
            for n, value in enumerate(frame[c.name].tolist()):
                for text in columns.sheet_list_values(value):
                    if not _cell_changes(text, xlsx):
                        continue
                    if field == "id":
                        out.append((text, field, text))
                    elif lists is not None:
                        out += [
                            (m, field, text)
                            for m in columns.page_list(lists[n])
                            if owners.get(m, {}).get(field) == text
                        ]
            continue
        side = [n for n in scalar_ids if n.endswith(c.name[-2:])] if c.name[-2:] in ("_a", "_b") else []
        owner = c.name if field == "id" else (side or scalar_ids or [None])[0]
        if owner is None:
            continue
        rows = _may_change(frame[c.name], xlsx)  # the few cells to look at, found at once
        for item, text in zip(frame[owner].to_numpy()[rows], frame[c.name].to_numpy()[rows], strict=True):
            if isinstance(text, str) and isinstance(item, str):
                out.append((item, field, text))
    return out


_MONTH = (
    "jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?"
    "|dec(ember)?"
)
_READ_AS_VALUE = re.compile(
    r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?"  # a number: 1E5, 007, 12345678901234567890, 1.50
    r"|\(\d+(\.\d*)?\)"  # (5): minus five, as accountants write it
    r"|\d{1,4}[-/]\d{1,2}([-/]\d{1,4})?"  # a date: 2024-05-01, 5/1/2024, 1-2
    r"|\d{1,2}:\d{2}(:\d{2}([.,]\d+)?)?(\s*[ap]m)?"  # a time of day: 12:30
    rf"|({_MONTH})[-/ ]?\d{{1,4}}([-/ ]\d{{2,4}})?|\d{{1,2}}[-/ ]({_MONTH})([-/ ]\d{{2,4}})?"  # MAR1, 1-May
    r"|true|false",
    re.IGNORECASE | re.ASCII,
)
"""What a spreadsheet opening a CSV file reads as a number, a date, a time or a truth value, whatever the
quotes around it (:func:`shown_otherwise`)."""
_DIGITS = re.compile(r"\d*\.?\d*", re.ASCII)


def shown_otherwise(text: str) -> bool:
    """Whether a spreadsheet opening a CSV file shows ``text`` (a cell as the file holds it) otherwise: as a
    number written another way (``1E5`` as 1.00E+05, ``007`` as 7, an id of 12 digits or more in scientific
    notation, ``202405010830`` as 2.02405E+11, and of 16 or more without its last digits, ``1.50`` as 1.5,
    ``(5)`` as -5), a date or time (``2024-05-01``, ``1-2``, ``MAR1``, ``12:30``) or a truth value
    (``true`` as TRUE). A whole number as written of 11 digits at most (``12345``) shows as it is.

    >>> [shown_otherwise(t) for t in ("1E5", "007", "2024-05-01", "SEPT2", "true", "1.50", "(5)", "1 May")]
    [True, True, True, True, True, True, True, True]
    >>> [shown_otherwise(t) for t in ("12345", "1.5", "TRUE", "n-1", "2024-05-01T08:00", "Marketing1")]
    [False, False, False, False, False, False]
    """
    if not _READ_AS_VALUE.fullmatch(text):
        return False
    if _DIGITS.fullmatch(text):  # a number of digits and a point
        digits = sum(ch.isdigit() for ch in text)
        zeros = text[0] == "0" and text[1:2].isdigit()  # 007 as 7
        # 12 digits or more: in scientific notation (General format), 16 or more without the last ones too
        return digits >= 12 or zeros or ("." in text and (text[-1] in "0." or text[0] == "."))
    return text not in ("TRUE", "FALSE")


_MAY_CHANGE = re.compile(f"{_SHEET_ODD.pattern}|{_FORBIDDEN.pattern}")


def _may_change(values: pd.Series, xlsx: bool) -> np.ndarray:
    """The rows of a text column whose cells a file may change (:func:`_cell_changes` tells): in an
    ``.xlsx`` file those holding a character XML 1.0 forbids, in a CSV file those starting as a formula, in
    both those holding a control character (:func:`sheet_text`) and those longer than half a cell."""
    text = pd.Series([v if isinstance(v, str) else None for v in values.tolist()], dtype=object)
    long = text.str.len().to_numpy(dtype=np.float64, na_value=np.nan) > XLSX_CELL_CHARACTERS // 2
    if not xlsx:
        unquoted = text.str.lstrip("'")
        formula = unquoted.str.startswith(FORMULA_START, na=False).to_numpy(dtype=bool) | unquoted.str.lstrip(
            editor_file.FORMULA_BLANKS
        ).str.startswith(FORMULA_START, na=False).to_numpy(dtype=bool)
        value = text.str.fullmatch(_READ_AS_VALUE, na=False).to_numpy(dtype=bool)
        odd = text.str.contains(_SHEET_ODD, na=False).to_numpy(dtype=bool)
        return np.flatnonzero(formula | long | value | odd)
    odd = text.str.contains(_MAY_CHANGE, na=False).to_numpy(dtype=bool)
    return np.flatnonzero(odd | long)


def text_changes(frame: pd.DataFrame | None) -> list[TextChange]:
    """The changes :func:`xlsx_text` and :func:`csv_text` make to the items of a report (``frame``: ``id``,
    ``title``, ``source``, ``url``), in row order."""
    if frame is None or not len(frame):
        return []
    out = []
    ids = frame["id"].astype(str).tolist()
    for field in (f for f in text_fields() if f in frame):
        for item, value in zip(ids, frame[field].tolist(), strict=True):
            if not isinstance(value, str):
                continue
            xml = _xml_text(value)
            if xml != value:
                out.append(TextChange(item, field, "characters"))
            if cell_length(xml) > XLSX_CELL_CHARACTERS:
                out.append(TextChange(item, field, "cut"))
            if csv_text(value) != sheet_text(value):
                out.append(TextChange(item, field, "formula"))
    return out


def text_fields() -> list[str]:
    """The item fields a report copies into its spreadsheet cells as text: the id and the ``items``
    columns it shows that hold text (:mod:`nlsim.io.columns`)."""
    return ["id", *(c.name for c in columns.shown() if c.format in ("text", "link"))]


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """``frame`` as CSV (UTF-8 with a byte-order mark, so Excel reads CJK text), text cells through
    :func:`csv_text` and in double quotes, numbers bare: a spreadsheet whose separator is another than the
    file's (``;`` in much of Europe) splits a cell only outside quotes, so ``Markets rally;=1+1`` cannot
    start a formula cell (OWASP's CSV-injection rule)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(lambda v: csv_text(v) if isinstance(v, str) else v)
    out.to_csv(path, index=False, encoding="utf-8-sig", quoting=csv.QUOTE_NONNUMERIC)


def _cell(sheet: Any, value: Any) -> Any:
    """One cell of a write-only sheet: text as a string cell (never a formula), numbers as numbers, nothing
    for a missing value (``None``, NaN, ``NaT``, or pandas' ``NA`` of a nullable column)."""
    from openpyxl.cell import WriteOnlyCell  # deferred: only the report needs openpyxl

    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (bool, int, float)):
        return value
    cell = WriteOnlyCell(sheet, value=stored_text(xlsx_text(str(value))))
    cell.data_type = "s"
    return cell


XLSX_SHEET_ROWS = 1_048_576
"""The most rows a spreadsheet's sheet holds, its header row included (Excel's limit: a file with more rows
in a sheet is one Excel will not open whole)."""


def sheet_names(name: str, rows: int, per_sheet: int | None = None) -> list[str]:
    """The sheets a table of ``rows`` rows takes: ``name``, then ``name 2``, ``name 3``... for the rows past
    a sheet's :data:`XLSX_SHEET_ROWS` (each sheet with its header row).

    Example:
        >>> sheet_names("pairs", 2_500_000)
        ['pairs', 'pairs 2', 'pairs 3']
        >>> sheet_names("topics", 0)
        ['topics']
    """
    per_sheet = per_sheet or XLSX_SHEET_ROWS - 1
    return [name if n == 0 else f"{name} {n + 1}" for n in range(max(1, -(-rows // per_sheet)))]


def shortest_floats(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its 32-bit float columns as the 64-bit numbers their shortest digits write: a score of
    ``0.70710677`` (as ``pairs.csv`` writes it), not its float's ``0.7071067690849304``, which a spreadsheet
    shows when the 32-bit float is widened bit for bit.

    >>> frame = pd.DataFrame({"similarity": np.array([0.70710677], dtype=np.float32)})
    >>> float(frame["similarity"].iloc[0]), float(shortest_floats(frame)["similarity"].iloc[0])
    (0.7071067690849304, 0.70710677)
    """
    narrow = [c for c in frame.columns if frame[c].dtype in (np.float32, np.float16)]
    if not narrow:
        return frame
    return frame.assign(**{c: [float(str(v)) for v in frame[c].to_numpy()] for c in narrow})


def write_xlsx(tables: Mapping[str, pd.DataFrame], path: str | Path) -> None:
    """One sheet per table (its name; a table longer than a sheet holds goes on in more sheets:
    :func:`sheet_names`), a header row of the column names on each, every text cell stored as text, and a
    32-bit score as the number its shortest digits write (:func:`shortest_floats`)."""
    from openpyxl import Workbook  # deferred: only the report needs openpyxl

    book = Workbook(write_only=True)
    per_sheet = XLSX_SHEET_ROWS - 1
    for name, table in tables.items():
        frame = shortest_floats(table)
        for n, title in enumerate(sheet_names(name, len(frame), per_sheet)):
            sheet = book.create_sheet(title)
            sheet.append([_cell(sheet, str(c)) for c in frame.columns])
            for row in frame.iloc[n * per_sheet : (n + 1) * per_sheet].itertuples(index=False, name=None):
                sheet.append([_cell(sheet, v) for v in row])
    book.save(path)
