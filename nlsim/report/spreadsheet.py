"""The report's spreadsheet files (``pairs.csv``, ``members.csv``, ``report.xlsx``): user text kept as text.

Titles, sources, links and ids come from the corpus, so they can hold what a spreadsheet does not take as
plain text:

- **Characters XML 1.0 forbids** (the C0 controls other than tab, line feed and carriage return; U+FFFE,
  U+FFFF, unpaired surrogates): an ``.xlsx`` file cannot hold them (openpyxl refuses them, Excel would not
  open the file). In ``report.xlsx`` a vertical tab or form feed (Word's manual line and page breaks)
  becomes a space and the others are removed (:func:`xlsx_text`). The CSV and Parquet files keep the text
  as it is.
- **Formulas**: text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a
  formula by spreadsheets (``=HYPERLINK(...)`` a live link, ``=cmd|...`` a DDE command: CSV injection).
  Every text cell of ``report.xlsx`` is stored as a string, never as a formula; numbers stay numbers. A CSV
  file has no cell types, so there such text starts with an apostrophe (OWASP's rule, :func:`csv_text`),
  which spreadsheets show as text.

:func:`text_changes` lists the items whose spreadsheet text differs from the corpus, for the page's notice
(:mod:`nlsim.report.html`).

Example:
    >>> xlsx_text("Floods\\x0bhit the north\\x07")
    'Floods hit the north'
    >>> csv_text('=HYPERLINK("http://x")'), csv_text("plain")
    ('\\'=HYPERLINK("http://x")', 'plain')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.io import columns

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a cell as a formula (OWASP, CSV injection)."""
TEXT_FIELDS = ("id", "title", "source", "url")
"""The item fields a report copies into its spreadsheet cells, as first declared (:func:`text_fields`)."""
_BREAKS = re.compile("[\x0b\x0c]")
_FORBIDDEN = re.compile("[\x00-\x08\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


XLSX_CELL_CHARACTERS = columns.SHEET_CELL_CHARACTERS
"""The most characters a spreadsheet cell holds (Excel's limit; longer text is cut when the file is read).
Excel counts UTF-16 code units: a character outside the Basic Multilingual Plane (an emoji, a CJK
ideograph of the extensions B and later) is two (:func:`cell_length`)."""
cell_length = columns.cell_length


def _cut_cell(text: str) -> str:
    """``text`` cut to :data:`XLSX_CELL_CHARACTERS` as a spreadsheet counts them, whole characters only."""
    if len(text) <= XLSX_CELL_CHARACTERS // 2 or cell_length(text) <= XLSX_CELL_CHARACTERS:
        return text
    units = 0
    for n, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > XLSX_CELL_CHARACTERS:
            return text[:n]
    return text


def xlsx_text(text: str) -> str:
    """``text`` as an ``.xlsx`` cell can hold it: vertical tabs and form feeds as spaces, the other
    characters XML 1.0 forbids removed, and cut to :data:`XLSX_CELL_CHARACTERS` (as a spreadsheet counts
    them: :func:`cell_length`)."""
    return _cut_cell(_xml_text(text))


def _xml_text(text: str) -> str:
    return _FORBIDDEN.sub("", _BREAKS.sub(" ", text))


def csv_text(text: str) -> str:
    """``text`` for a CSV cell: an apostrophe in front when a spreadsheet would read it as a formula."""
    return "'" + text if text.startswith(FORMULA_START) else text


@dataclass(frozen=True)
class TextChange:
    """An item field whose spreadsheet text differs from the corpus: ``characters`` (removed or replaced in
    ``report.xlsx``), ``cut`` (longer than a cell holds: cut in ``report.xlsx``) or ``formula`` (an
    apostrophe in front in the CSV files)."""

    item_id: str
    field: str
    change: str


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
            if csv_text(value) != value:
                out.append(TextChange(item, field, "formula"))
    return out


def text_fields() -> list[str]:
    """The item fields a report copies into its spreadsheet cells as text: the id and the ``items``
    columns it shows that hold text (:mod:`nlsim.io.columns`)."""
    return ["id", *(c.name for c in columns.shown() if c.format in ("text", "link"))]


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """``frame`` as CSV (UTF-8 with a byte-order mark, so Excel reads CJK text), text cells through
    :func:`csv_text`."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(lambda v: csv_text(v) if isinstance(v, str) else v)
    out.to_csv(path, index=False, encoding="utf-8-sig")


def _cell(sheet: Any, value: Any) -> Any:
    """One cell of a write-only sheet: text as a string cell (never a formula), numbers as numbers, nothing
    for a missing value."""
    from openpyxl.cell import WriteOnlyCell  # deferred: only the report needs openpyxl

    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, (bool, int, float)):
        return value
    cell = WriteOnlyCell(sheet, value=xlsx_text(str(value)))
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


def write_xlsx(tables: Mapping[str, pd.DataFrame], path: str | Path) -> None:
    """One sheet per table (its name; a table longer than a sheet holds goes on in more sheets:
    :func:`sheet_names`), a header row of the column names on each, every text cell stored as text."""
    from openpyxl import Workbook  # deferred: only the report needs openpyxl

    book = Workbook(write_only=True)
    per_sheet = XLSX_SHEET_ROWS - 1
    for name, frame in tables.items():
        for n, title in enumerate(sheet_names(name, len(frame), per_sheet)):
            sheet = book.create_sheet(title)
            sheet.append([_cell(sheet, str(c)) for c in frame.columns])
            for row in frame.iloc[n * per_sheet : (n + 1) * per_sheet].itertuples(index=False, name=None):
                sheet.append([_cell(sheet, v) for v in row])
    book.save(path)
