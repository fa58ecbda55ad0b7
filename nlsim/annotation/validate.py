"""Reading and checking an editors' filled file (a drawn file, or the report page's export) before a merge.

The file is checked row by row (``InputError`` with file/row/field, a row named by its sheet row): scores on
the rubric, no item paired with itself, one text per item id (in the file, against the pair file and the
corpus), no pair already annotated (named with the pair it repeats) unless the row overrules a training
pair, and no cell the pair file cannot hold. Every problem of every row is named at once. A file without
pair ids gets each pair's id made from its item ids (:func:`editor_file.pair_id`).

Example:
    >>> frame = pd.DataFrame({"pair_id": ["x1"], "id_a": ["a"], "id_b": ["b"], "text_a": ["甲"],
    ...                       "text_b": ["乙"], "score": ["0.75"]})
    >>> validate_filled(frame, "filled.csv")["score"].tolist()
    [0.75]
"""

from __future__ import annotations

import datetime as dt
import lzma
import re
import unicodedata
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.clusters.constraints import pair_key
from nlsim.clusters.verdicts import (
    ACTING_SPLIT,
    PairRow,
    pair_rows,
)
from nlsim.conversion import DEFAULT_MODE, convert
from nlsim.errors import InputError, InputErrors
from nlsim.io import editor_file
from nlsim.io.cells import describe, first_control, missing_marker, one_line, score_number
from nlsim.io.corpus import load_items
from nlsim.io.corpus_schema import spelt_otherwise
from nlsim.io.pairs import (
    header_name,
    item_id,
    normalise_text,
    pair_keys,
    read_pair_table,
    validate_pairs,
    warn_damaged,
)
from nlsim.io.tables import FORMATS, open_table, sheet_rows, table_format, table_suffix
from nlsim.progress import warn

LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The rubric's five levels a score must be one of (``annotations/GUIDELINES.md``)."""


READ = "read"
"""The key of a pair by its two texts as the model reads them (converted to one script, normalised): a pair
of a headline in Traditional characters is the same pair to score as in Simplified."""


def read_keys(text_a: Any, text_b: Any, conversion: str) -> list[tuple[str, str, str]]:
    """Each pair's :data:`READ` key: its two texts converted (``conversion``) and normalised, in order.
    ``nlsim annotate draw`` proposes no pair an annotated one has, and a merge names such a pair as
    already annotated.

    >>> read_keys(["颱風登陸"], ["台风来了"], "tw2sp") == read_keys(["台风来了"], ["台风登陆"], "tw2sp")
    True
    """
    a = [normalise_text(t) for t in convert([str(t) for t in text_a], conversion or "none")]
    b = [normalise_text(t) for t in convert([str(t) for t in text_b], conversion or "none")]
    return [(READ, *sorted((x, y))) for x, y in zip(a, b, strict=True)]  # type: ignore[misc]


def known_pairs(frame: pd.DataFrame) -> dict[tuple[str, ...], str]:
    """Every key of every pair of ``frame`` (ids and normalised texts, either order) -> its pair id."""
    known: dict[tuple[str, ...], str] = {}
    for pid, keys in zip(frame["pair_id"], pair_keys(frame), strict=True):
        for key in keys:
            known.setdefault(key, str(pid))
    return known


def is_blank(value: Any) -> bool:
    """An empty cell: ``None``, NaN, ``pd.NA``, ``pd.NaT`` or only white space."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return (isinstance(value, float) and np.isnan(value)) or str(value).strip() == ""


def _sheet(source: str | Path, row: int | None, field: str | None, reason: str) -> InputError:
    """A problem of an editors' file, named by its sheet row (the header is sheet row 1)."""
    return InputError(source, row, field, reason, sheet=True)


def _check_items(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, problems: list[InputError]
) -> None:
    """No item paired with itself; one text per item id within the file (each problem added to
    ``problems``; a row's empty text is its own problem, not another text)."""
    if "id_a" not in frame.columns or "id_b" not in frame.columns:
        return
    first: dict[str, tuple[str, int]] = {}
    for i, r in enumerate(frame.itertuples(index=False)):
        row = int(rownum[i])
        a, b = item_id(r.id_a), item_id(r.id_b)
        if a and a == b:
            problems.append(_sheet(source, row, "id_b", f"item {a!r} is paired with itself"))
            continue
        for item, text, fld in ((a, r.text_a, "text_a"), (b, r.text_b, "text_b")):
            if not item or is_blank(text):
                continue
            seen = first.setdefault(item, (str(text), row))
            if seen[0] != str(text):
                problems.append(
                    _sheet(
                        source,
                        row,
                        fld,
                        f"item {item!r} has another text than at sheet row {seen[1]} ({seen[0]!r})",
                    )
                )


def _separated_by(path: str | Path) -> str | None:
    """The separator of a ``.csv`` file that is not a comma: ``;`` when the first line of the text file
    ``path`` has one and no comma (a CSV saved by a European Excel), a tab when it has one and no comma
    (a sheet saved as tab-separated text under a .csv name); else ``None``, and for a first line that is not
    UTF-8 (Excel's "Unicode Text", UTF-16, is tab-separated too): the reader's refusal names its encoding."""
    try:
        with open_table(path) as fh:
            line = next(iter(fh.read(65536).splitlines()), b"").decode("utf-8-sig")
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error):  # UnicodeDecodeError is a ValueError
        return None
    if "," in line:
        return None
    return next((sep for sep in (";", "\t") if sep in line), None)


def _semicolon_error(source: str | Path) -> InputError:
    return InputError(
        source,
        None,
        None,
        "the file looks separated by ';' (as Excel saves CSV in some countries), not by commas: save it as "
        "comma-separated CSV (CSV UTF-8) and merge again",
    )


def _tab_error(source: str | Path) -> InputError:
    return InputError(
        source,
        None,
        None,
        "the file looks separated by tabs (saved as tab-separated text), not by commas: save it as "
        "comma-separated CSV (CSV UTF-8), or name it .tsv, and merge again",
    )


def _refuse_renamed(frame: pd.DataFrame, source: str | Path, col: str) -> None:
    """Refuse a file whose column ``col`` is there but for case or white space (``Score``, ``score `` with
    a space typed after it), naming the column as the file has it; nothing when there is none such."""
    near = [str(c) for c in frame.columns if str(c).strip().lower() == col]
    if near:
        raise InputError(
            source,
            None,
            near[0],
            f"the column is named {near[0]!r}, not {col!r}: name it {col} and merge again",
        )


WORKBOOKS = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")
"""Suffixes of a spreadsheet program's own files: an editor who pressed Save kept the sheet in one."""


def read_filled(path: str | Path) -> pd.DataFrame:
    """Read an editors' filled file (CSV, TSV or Parquet); a semicolon-separated CSV, or a spreadsheet
    workbook (:data:`WORKBOOKS`), is named as such. A row the reader refuses (a byte that is not UTF-8, a
    row of another number of fields) is named by its sheet row, as every other problem of the file is. Each
    row's sheet row is kept (``attrs["sheet_rows"]``, :func:`~nlsim.io.tables.sheet_rows`): an empty line
    the reader skips is still a row of the sheet an editor looks at. A ``marked_at`` or ``overrule`` column
    spelt otherwise (``Marked_At``, ``markedat``) is refused by file and field
    (:func:`~nlsim.io.corpus_schema.spelt_otherwise`)."""
    if Path(path).suffix.lower() in WORKBOOKS and Path(path).is_file():
        why = (
            f"a spreadsheet workbook ({Path(path).suffix}), not a CSV file: save the sheet as CSV UTF-8 "
            "(comma-separated) and merge that file"
        )
        raise InputError(path, None, None, why)
    fmt = FORMATS.get(table_suffix(path))
    try:
        frame = read_pair_table(path)
    except InputError as exc:
        sep = _separated_by(path) if fmt == "csv" else None
        if sep is not None:
            raise (_semicolon_error(path) if sep == ";" else _tab_error(path)) from None
        if exc.row is not None and not exc.sheet:
            rows = sheet_rows(path) if fmt in ("csv", "tsv") else []
            row = rows[exc.row - 1] if 0 < exc.row <= len(rows) else exc.row + 1
            raise _sheet(exc.file, row, exc.field, exc.reason) from None
        raise
    spelt = spelt_otherwise(path, list(frame.columns), (editor_file.MARKED_AT, editor_file.OVERRULE))
    if spelt is not None:  # read as an extra column, its marks would be left out without a word
        raise spelt
    if fmt in ("csv", "tsv"):
        frame.attrs["sheet_rows"] = sheet_rows(path)
    return frame


def _sheet_rows(frame: pd.DataFrame) -> list[int]:
    """Each row's sheet row (the header is sheet row 1): as :func:`read_filled` found them in the file (an
    empty line it skipped is a row of the sheet), else the rows in order from 2."""
    rows = frame.attrs.get("sheet_rows")
    return list(rows) if rows and len(rows) == len(frame) else list(range(2, len(frame) + 2))


def _level(value: float) -> float | None:
    """The rubric level ``value`` stands for (within 1e-9), or ``None``."""
    return next((lv for lv in LEVELS if abs(value - lv) < 1e-9), None)


def _fill_pair_ids(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, problems: list[InputError]
) -> pd.DataFrame:
    """Every row's pair id: the editor's, or when missing the id :func:`editor_file.pair_id` makes from its
    two item ids; an ``ed-`` id that is not its items' id (a sheet sorted by some columns only), or none
    at all, is a problem added to ``problems`` (the row keeps no pair id).
    """
    has_ids = "id_a" in frame.columns and "id_b" in frame.columns
    given = frame["pair_id"] if "pair_id" in frame.columns else pd.Series([None] * len(frame), dtype=object)
    out: list[Any] = []
    restored: dict[int, tuple[str, str]] = {}
    for i, pid in enumerate(given):
        a = item_id(frame["id_a"].iloc[i]) if has_ids else ""
        b = item_id(frame["id_b"].iloc[i]) if has_ids else ""
        made = editor_file.pair_id(a, b) if a and b else None
        if bool(a) != bool(b):
            blank, named = ("id_a", b) if not a else ("id_b", a)
            why = f"empty, while the row's other item is {named!r}: a pair names both its items or neither"
            problems.append(_sheet(source, int(rownum[i]), blank, why))
            out.append(None)
            continue
        if is_blank(pid):
            if made is None:
                why = "pair id missing, and no id_a and id_b to make it from"
                problems.append(_sheet(source, int(rownum[i]), "pair_id", why))
            out.append(made)
            continue
        pid = str(pid).strip()
        zeros = _zeros_restored(pid, a, b) if made is not None and pid != made else None
        if zeros is not None:  # "7" for "007": a spreadsheet read the ids as numbers; the pair id proves them
            restored[i], made = zeros, pid
        if made is not None and pid.startswith(editor_file.PAIR_ID_PREFIX) and pid != made:
            problems.append(
                _sheet(
                    source,
                    int(rownum[i]),
                    "pair_id",
                    f"pair id {pid!r} is not the id of its items {a!r} and {b!r} ({made!r}); was the sheet "
                    "sorted by some columns only? Keep each row whole",
                )
            )
            out.append(None)
            continue
        out.append(pid)
    frame = frame.copy()
    if "pair_id" in frame.columns:
        frame["pair_id"] = out
    else:
        frame.insert(0, "pair_id", out)
    if restored:
        _restore_zeros(frame, restored, rownum, source)
    return frame


ZERO_PADDED_WIDTH = 24
"""The longest id of digits :func:`_zeros_restored` tries, its leading zeros put back."""


def _zeros_restored(pid: str, a: str, b: str) -> tuple[str, str] | None:
    """The ids ``a`` and ``b`` with the leading zeros a spreadsheet took from them (``7`` for ``007``: it
    reads an id of digits as a number, quotes or not, and saves the number) when the row's pair id ``pid``
    is that of the ids so (:func:`nlsim.io.editor_file.pair_id`), else ``None``.

    >>> _zeros_restored(editor_file.pair_id("007", "n-1"), "7", "n-1")
    ('007', 'n-1')
    >>> _zeros_restored(editor_file.pair_id("007", "n-1"), "8", "n-1") is None
    True
    """
    if not pid.startswith(editor_file.PAIR_ID_PREFIX) or not (a.isdigit() or b.isdigit()):
        return None

    def padded(x: str) -> list[str]:
        return [x.zfill(n) for n in range(len(x), ZERO_PADDED_WIDTH + 1)] if x.isdigit() else [x]

    for x in padded(a):
        for y in padded(b):
            if editor_file.pair_id(x, y) == pid:
                return x, y
    return None


def _restore_zeros(
    frame: pd.DataFrame, restored: dict[int, tuple[str, str]], rownum: pd.Series, source: str | Path
) -> None:
    """Put the ids :func:`_zeros_restored` found into ``frame`` (its rows by position), and say so."""
    shown: list[str] = []
    for i, (a, b) in restored.items():
        for col, value in (("id_a", a), ("id_b", b)):
            was = item_id(frame.at[i, col])
            if was != value:
                frame.at[i, col] = value
                shown.append(f"{was!r} as {value!r} (sheet row {int(rownum[i])})")
    warn(
        f"{source}: {len(shown)} id(s) had lost their leading zeros, read as the rows' pair ids say: "
        f"{', '.join(shown[:3])}{', ...' if len(shown) > 3 else ''}; a spreadsheet reads an id of digits "
        "as a number and saves it so (open the file with the id columns as Text to keep them)"
    )


def _refuse(source: str | Path, problems: list[InputError], what: str = "rows refused") -> None:
    """Raise every problem found at once (one line a row), or nothing when there is none."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise InputErrors(source, problems, what)


def _levels(
    scores: pd.Series, rownum: pd.Series, source: str | Path, problems: list[InputError]
) -> list[float]:
    """Each score as its rubric level (NaN where it is none, the problem added to ``problems``)."""
    levels: list[float] = []
    for i, v in enumerate(scores):
        try:
            if isinstance(v, str) and missing_marker(v) is not None:  # nan, NULL: an export's empty cell
                raise ValueError("marks a missing value: not scored (score it, or leave it blank)")
            level = _level(score_number(v))
            why = "is not one of the rubric's levels 0, 0.25, 0.5, 0.75, 1"
        except ValueError as exc:
            level, why = None, str(exc)
        if level is None:
            problems.append(_sheet(source, int(rownum[i]), "score", f"score {v!r} {why}"))
        levels.append(float("nan") if level is None else level)  # -0 and 1e-10 are stored as 0
    return levels


def validate_filled(
    frame: pd.DataFrame,
    source: str | Path,
    *,
    skip_blank: bool = False,
    problems: list[InputError] | None = None,
) -> pd.DataFrame:
    """Check an editor's filled file: texts present, pair ids unique (made from the item ids when the file
    has none), scores one of the five levels (stored as the level), no item paired with itself, one text
    per item id, no pair twice. Rows are named by their sheet row (as a spreadsheet shows the file: the
    header is sheet row 1), skipped blank rows counted. Returns the sound rows; a text of theirs holding
    U+FFFD (bytes a decoder upstream could not read) or a control character is kept with a warning naming
    its sheet row and field (:func:`~nlsim.io.pairs.warn_damaged`).

    Every problem of every row is found in one pass: with ``problems`` they are added to it (the merge
    adds the conflicts with the pair file and refuses once); without, they are raised together. A file
    without a ``score`` column or without any scored row is refused at once."""
    if "score" not in frame.columns:
        if len(frame.columns) == 1 and ";" in str(frame.columns[0]):
            raise _semicolon_error(source)
        if len(frame.columns) == 1 and "\t" in str(frame.columns[0]):
            raise _tab_error(source)
        _refuse_renamed(frame, source, "score")
        raise InputError(source, None, "score", "missing column")
    for col in ("text_a", "text_b"):
        if col not in frame.columns:
            _refuse_renamed(frame, source, col)
            raise InputError(
                source, None, col, "missing column (each row holds the two texts its editor read)"
            )
    for col, other in (("id_a", "id_b"), ("id_b", "id_a")):
        if other in frame.columns and col not in frame.columns:
            _refuse_renamed(frame, source, col)
            raise InputError(
                source, None, col, f"missing column (the file has {other}: a pair names both items)"
            )
    frame = frame.reset_index(drop=True)
    if frame.empty:
        raise InputError(source, None, None, "no pairs to merge (the file has a header only)")
    blank = frame["score"].map(is_blank)
    if blank.all():
        raise InputError(source, None, "score", f"no scored pairs to merge ({len(frame)} blank row(s))")
    found: list[InputError] = []
    rownum = pd.Series(_sheet_rows(frame))  # sheet rows: the header is row 1
    if blank.any() and not skip_blank:
        why = f"not scored ({int(blank.sum())} blank row(s); score them or pass --skip-blank)"
        found.extend(_sheet(source, int(r), "score", why) for r in rownum[blank.to_numpy()])
    frame, rownum = frame[~blank].reset_index(drop=True), rownum[~blank.to_numpy()].reset_index(drop=True)
    again = np.array([_repeats_header(r, frame.columns) for r in frame.itertuples(index=False)], dtype=bool)
    if again.any():  # two files joined into one (cat a.csv b.csv): the second header is a row of the sheet
        why = "the header again (two editors' files joined into one?): remove the row, or merge each file"
        found.extend(_sheet(source, int(r), None, why) for r in rownum[again])
        frame, rownum = frame[~again].reset_index(drop=True), rownum[~again].reset_index(drop=True)
    frame = frame.copy()
    for col in ("pair_id", "id_a", "id_b"):  # "n-1 " or a no-break space typed around an id
        if col in frame.columns:
            frame[col] = frame[col].map(lambda v: v.strip() if isinstance(v, str) else v)
    frame["score"] = _levels(frame["score"], rownum, source, found)
    frame = _fill_pair_ids(frame, rownum, source, found)
    _row_problems(frame, rownum, source, found)
    _check_items(frame, rownum, source, found)
    sound = ~rownum.isin({e.row for e in found}).to_numpy()
    _ids_once(frame, rownum, sound, source, found)
    frame, rownum = frame[sound].reset_index(drop=True), rownum[sound].reset_index(drop=True)
    checked = _whole_file(frame, rownum, source, found)
    if checked is not None:
        _pairs_once(checked, rownum, source, found)
    if problems is None:
        _refuse(source, _unique(found))
    else:
        problems.extend(found)
    if checked is None:
        checked, rownum = frame.iloc[:0].copy(), rownum.iloc[:0]
    sound_rows = ~rownum.isin({e.row for e in found}).to_numpy()
    checked = checked[sound_rows].reset_index(drop=True)
    checked.attrs["rows"] = rownum[sound_rows].tolist()
    warn_damaged(checked, source, rows=checked.attrs["rows"], unit="sheet row")
    return checked


def _repeats_header(row: tuple[Any, ...], columns: pd.Index) -> bool:
    """Whether a row of an editors' file is its header again: its score cell says ``score`` and every
    other cell it fills is its column's name, the byte-order mark a spreadsheet writes before a file's
    first header left aside (two files saved as CSV UTF-8 and joined).

    >>> _repeats_header(("\ufeffpair_id", "score"), pd.Index(["pair_id", "score"]))
    True
    """
    cells = dict(zip((str(c) for c in columns), row, strict=True))
    if header_name(cells.get("score", "")) != "score":
        return False
    return all(is_blank(v) or header_name(v) == header_name(c) for c, v in cells.items())


def split_problems(new: pd.DataFrame, split: str, filled: str | Path) -> list[InputError]:
    """Each row of ``new`` (the sound rows of an editors' file) whose own ``split`` cell names another split
    than the one the merge adds its pairs to (``split``, ``--split``): a pair is never put into a split its
    file does not say (a test pair merged into train would train the model and act in the reports). An
    empty cell, or no ``split`` column (an editors' file has none), says nothing."""
    if "split" not in new.columns:
        return []
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    problems = []
    for row, cell in zip(rows, new["split"], strict=True):
        said = "" if is_blank(cell) else str(cell).strip()
        if said and said != split:
            why = (
                f"the row says split {said!r}, and this merge adds its pairs to {split!r} (--split): merge "
                f"the {said} rows as a file of their own with --split {said}, or empty the cell"
            )
            problems.append(_sheet(filled, int(row), "split", why))
    return problems


def _items(frame: pd.DataFrame, i: int) -> tuple[str, str] | None:
    """The item ids of row ``i`` of ``frame`` in code point order, or ``None`` when it does not name both."""
    if "id_a" not in frame.columns or "id_b" not in frame.columns:
        return None
    a, b = item_id(frame["id_a"].iloc[i]), item_id(frame["id_b"].iloc[i])
    return (min(a, b), max(a, b)) if a and b else None


def _ids_once(
    frame: pd.DataFrame, rownum: pd.Series, sound: np.ndarray, source: str | Path, found: list[InputError]
) -> None:
    """No pair id twice among the ``sound`` rows: a second row of one pair is a problem added to ``found``
    (and no longer sound), naming the pair's items and, when the two rows score it differently, both scores
    (an editor who gave one pair two verdicts says which holds)."""
    first: dict[str, int] = {}
    for i, pid in enumerate(frame["pair_id"]):
        if not sound[i]:
            continue
        if pid in first:
            j = first[pid]
            why = f"duplicate pair id {pid!r} (first at sheet row {int(rownum[j])})"
            items = [_items(frame, k) for k in (i, j)]
            here, there = frame["score"].iloc[i], frame["score"].iloc[j]
            if items[0] is not None and items[0] == items[1]:
                why += f": the pair {' / '.join(items[0])} again"
                if here == here and there == there and abs(here - there) > 1e-9:  # two levels, not NaN
                    why += f", scored {there:g} there and {here:g} here: keep the row whose score holds"
            found.append(_sheet(source, int(rownum[i]), "pair_id", why))
            sound[i] = False
        first.setdefault(pid, i)


def _row_problems(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, found: list[InputError]
) -> None:
    """Each row checked as a pair file's row (:func:`~nlsim.io.pairs.validate_pairs`: texts, an id without
    a control character, a score, a split), its problem added to ``found`` (a row already named for its
    score or pair id is not named again for it)."""
    named = {(e.row, e.field) for e in found}
    for i in range(len(frame)):
        row = int(rownum[i])
        try:
            one = frame.iloc[[i]].assign(pair_id=frame["pair_id"].iloc[i] or f"row-{row}")
            validate_pairs(one, source, misread="refuse")
        except InputError as exc:
            if (row, exc.field) not in named:
                found.append(_sheet(source, row, exc.field, exc.reason))


def _whole_file(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, found: list[InputError]
) -> pd.DataFrame | None:
    """The sound rows normalised as a pair table (:func:`~nlsim.io.pairs.validate_pairs`); what it still
    finds across rows (a pair in two splits: both rows named by their sheet rows) is added to ``found``, and
    ``None`` returned."""
    if frame.empty:
        return None
    try:  # rows named as the sheet shows them: a leak's other row is named in the reason
        return validate_pairs(frame, source, rows=rownum.tolist())
    except InputError as exc:
        found.append(_sheet(source, exc.row, exc.field, exc.reason))
        return None


def _pairs_once(
    checked: pd.DataFrame, rownum: pd.Series, source: str | Path, found: list[InputError]
) -> None:
    """No pair twice in the file (by item ids or by texts, either order)."""
    seen: dict[tuple[str, ...], int] = {}
    for i, keys in enumerate(pair_keys(checked)):
        for key in keys:
            if key in seen:
                found.append(
                    _sheet(
                        source,
                        int(rownum[i]),
                        "id_a" if key[0] == "id_a" else "text_a",
                        f"the same pair as sheet row {int(rownum[seen[key]])} appears twice in this file",
                    )
                )
                break
        for key in keys:
            seen.setdefault(key, i)


def _unique(problems: list[InputError]) -> list[InputError]:
    """One problem a row and field (the first found), in the order of the rows."""
    unique: dict[tuple[int, str], InputError] = {}
    for e in problems:
        unique.setdefault((e.row or 0, e.field or ""), e)
    return sorted(unique.values(), key=lambda e: (e.row or 0, e.field or ""))


UNESCAPED = ("pair_id", "id_a", "id_b", "stratum", "annotator", "notes")
"""Cells of an editors' file read without the apostrophe an export put in front of a text a spreadsheet
would run as a formula (:func:`nlsim.io.editor_file.unescape`); ``text_a``/``text_b`` are read so too,
unless the text's hash or known text says the apostrophe is its own (:func:`check_texts`)."""


def unescape_cells(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for col in (c for c in UNESCAPED if c in frame.columns):
        frame[col] = frame[col].map(lambda v: editor_file.unescape(v) if isinstance(v, str) else v)
    return frame


def _corpus_texts(corpus: str | Path, text_field: str | None = None) -> dict[str, str]:
    """Each item's text in ``corpus`` (its ``text_field``, or the first text column it has: as ``nlsim
    annotate draw`` reads it), by id."""
    items = load_items(corpus, text_field)
    return {str(i): str(t) for i, t in zip(items["id"], items["text"], strict=True)}


CORPUS_SOURCE = "the corpus "
"""How :func:`known_texts` names an item's text known from the corpus (else the pair file's name)."""
EDITED_SINCE = (
    "; the report page showed this one (its hash): the item's headline was edited since the pair file took "
    "its text, and the pair file keeps one text an item, so only a mark on a training pair it scores, "
    "overruling it (--overrule, or the row's overrule cell true), is taken on the new text; take this row "
    "out of the file to merge the others"
)
"""Said of a text the report page showed that differs from its item's text in the pair file."""


def corpus_texts(corpus: str | Path | None, text_field: str | None = None) -> dict[str, str]:
    """Each item's text in ``corpus`` by id (none without one), each run of white space holding a tab or a
    line break read as one space (:func:`~nlsim.io.cells.one_line`): the text a pair file holds for it."""
    if corpus is None:
        return {}
    return {i: one_line(t, every_break=True) for i, t in _corpus_texts(corpus, text_field).items()}


def known_texts(
    existing: pd.DataFrame,
    pairs_file: str | Path,
    corpus: str | Path | None,
    text_field: str | None = None,
    in_corpus: dict[str, str] | None = None,
) -> dict[str, tuple[str, str]]:
    """Each item's known text and where it is known: the pair file first, as it has it, then the corpus
    (its ``text_field``, or the first text column it has; ``in_corpus``: :func:`corpus_texts`, read
    already), each run of white space holding a tab or a line break read as one space
    (:func:`~nlsim.io.cells.one_line`): the text a pair file holds for it."""
    known: dict[str, tuple[str, str]] = {}
    if "id_a" in existing.columns and "id_b" in existing.columns:
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            for item, text in zip(existing[col], existing[tcol], strict=True):
                if not is_blank(item):
                    known.setdefault(str(item).strip(), (str(text), str(pairs_file)))
    where = f"{CORPUS_SOURCE}{corpus}" + (f" (column {text_field!r})" if text_field else "")
    for item, text in (corpus_texts(corpus, text_field) if in_corpus is None else in_corpus).items():
        known.setdefault(item, (text, where))
    return known


def same_text(text: str, known: str) -> bool:
    """Whether ``text`` is the ``known`` text of its item but for white space around it and runs of white
    space holding a tab or a line break (read as one space: :func:`~nlsim.io.cells.one_line`)."""
    return one_line(text, every_break=True).strip() == one_line(known, every_break=True).strip()


SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def _hashed(
    options: list[str], digest: str, filled: str | Path, row: int, side: str, problems: list[InputError]
) -> list[str]:
    """The readings of a text cell whose SHA-256 is ``digest`` (the cell as typed, its hex digits in either
    case; all of them without one); a bad or unmatched hash is added to ``problems``, quoted as typed."""
    if not digest:
        return options
    tcol, hcol = f"text_{side}", f"sha256_{side}"
    if not SHA256_HEX.match(digest.lower()):
        problems.append(_sheet(filled, row, hcol, f"{digest[:70]!r} is not a SHA-256 (64 hex digits)"))
        return []
    kept = [o for o in options if editor_file.text_sha256(o) == digest.lower()]
    if not kept:
        problems.append(
            _sheet(
                filled,
                row,
                tcol,
                f"the text is not the one the report page exported (its {hcol} differs): it was changed "
                "after the export (a spreadsheet that ran it as a formula keeps the result); export the pair "
                "again, or restore the text",
            )
        )
    return kept


def _unknown_id(item: str, known: dict[str, tuple[str, str]], corpus: str | Path | None) -> str | None:
    """Why the item id ``item`` of a row names no item it should, or ``None``: an id typed in full-width
    characters (an input method left on) where the pair file or the corpus knows it in half-width ones (it
    would name a new item that no report ever holds), or, with a ``corpus``, an id neither holds."""
    if not item or item in known:
        return None
    narrow = unicodedata.normalize("NFKC", item)
    if narrow != item and narrow in known:
        return f"item {item!r} is not known, {narrow!r} is (typed in full-width characters?): write that"
    if corpus is not None:
        return f"item {item!r} is neither in the pair file nor in the corpus {corpus}"
    return None


def check_texts(
    new: pd.DataFrame,
    known: dict[str, tuple[str, str]],
    filled: str | Path,
    corpus: str | Path | None = None,
    renewed: set[int] | None = None,
    current: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, list[InputError]]:
    """Each row's texts as the editors' file means them, checked against what is known of its items, and
    every problem found (none raised here: the merge names them all at once, :func:`check_new`).

    A row of ``renewed`` (sheet rows: an editor's mark overruling a training pair of the pair file) may
    give an item another text than its known one when its hash vouches for it (the text the page showed:
    the item's headline edited since the pair was scored): the editor decided on the new text, which the
    verdict records (the pair file keeps the text the pair was scored on); so may one that is the item's
    text in the corpus (``current``: :func:`corpus_texts`, a file written by hand for a pair the page
    cannot show). Its ids swapped are refused all the same.

    A text cell with an apostrophe in front of a formula character is read without it, unless its hash or
    its item's known text is the cell as written. A text that is its item's known text but for white space
    around it (a trailing space, an ideographic space U+3000 typed in front) is read as the known text, so
    that the pair file holds one text per item and the verdict's hashes are those of the item's text.
    A run of white space holding a tab or a line break is read as one space (:func:`~nlsim.io.cells.one_line`)
    in a text's comparison with its item's known text (the corpus's read so too, :func:`known_texts`), and
    in the text kept when it is the known text or the one the page exported (its hash): a CMS headline with
    a line break, shown and exported as the corpus has it, is the same text with a space, which a TSV pair
    file can hold. A text nothing vouches for keeps it (refused for a TSV pair file: to remove by hand,
    :func:`cell_problems`) but for white space around it, which a report drops from a title too. With a hash
    column (:data:`editor_file.HASH_COLUMNS`) the text must be the one exported (a spreadsheet that ran a
    formula saves its value instead); where the item's text is known (``known``: the pair file, the corpus)
    the text must be that one, and a row whose two ids were swapped with their texts left in place is named as
    such (the pair id is the same in either order, so only the texts tell). With a ``corpus``, an item id that
    neither the pair file nor the corpus holds is a problem too (a mistyped id could never act).
    Problems name the file, the row and the field."""
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    problems: list[InputError] = []
    has_ids = "id_a" in new.columns and "id_b" in new.columns
    texts: dict[str, list[str]] = {"a": [], "b": []}
    for i in range(len(new)):
        row = int(rows[i])
        ids = {s: item_id(new[f"id_{s}"].iloc[i]) if has_ids else "" for s in "ab"}
        chosen: dict[str, str] = {}
        vouched: set[str] = set()  # the sides whose text the page showed (by its hash)
        for side in "ab":
            tcol, hcol = f"text_{side}", f"sha256_{side}"
            raw = str(new[tcol].iloc[i])
            options = list(dict.fromkeys([raw, editor_file.unescape(raw)]))
            digest = "" if hcol not in new.columns or is_blank(new[hcol].iloc[i]) else str(new[hcol].iloc[i])
            options = _hashed(options, digest.strip(), filled, row, side, problems) or [raw]
            hashed = bool(digest) and editor_file.text_sha256(options[-1]) == digest.strip().lower()
            now = (current or {}).get(ids[side])
            if hashed or (
                now is not None and row in (renewed or set()) and any(same_text(o, now) for o in options)
            ):
                vouched.add(side)
            item = known.get(ids[side])
            why = _unknown_id(ids[side], known, corpus)
            if why is not None:
                problems.append(_sheet(filled, row, f"id_{side}", why))
            if item is not None and any(same_text(o, item[0]) for o in options):
                chosen[side] = item[0]  # white space a spreadsheet kept around it aside: the item's own text
            elif hashed:  # the text the page showed: a line break or a tab in it read as a space
                chosen[side] = one_line(options[-1])
            elif side in vouched and now is not None:  # the item's text in the corpus, as a pair file has it
                chosen[side] = now
            else:  # typed: a line break or a tab inside is refused, to remove by hand; white space around
                chosen[side] = options[-1].strip()  # it aside, as a report reads its item's title
        allowed = vouched if row in (renewed or set()) else set()
        problems += _known_text_problems(filled, row, ids, chosen, known, allowed, vouched)
        texts["a"].append(chosen["a"])
        texts["b"].append(chosen["b"])
    out = new.copy()
    out["text_a"], out["text_b"] = texts["a"], texts["b"]
    out.attrs = dict(new.attrs)
    return out, problems


def _known_text_problems(
    filled: str | Path,
    row: int,
    ids: dict[str, str],
    chosen: dict[str, str],
    known: dict[str, tuple[str, str]],
    allowed: set[str],
    shown: set[str],
) -> list[InputError]:
    """The problems of a row's texts (``chosen``, by side) with its items' ``known`` texts: ids swapped with
    their texts left in place, or an item given another text, but on a side ``allowed`` (an overruling
    mark's text the page showed: the item's new text, which the verdict records). An item given another
    text than the pair file's on a side the page ``shown`` (its hash) is said with why (its headline edited
    since) and what the editor can do."""
    problems: list[InputError] = []
    for side, other in (("a", "b"), ("b", "a")):
        item = known.get(ids[side])
        if item is None or same_text(chosen[side], item[0]):
            continue
        if same_text(chosen[other], item[0]):
            why = (
                f"id_a {ids['a']!r} and id_b {ids['b']!r} look swapped: text_{other} is the text of "
                f"{ids[side]!r} in {item[1]}; keep each id beside its own text"
            )
            problems.append(_sheet(filled, row, f"id_{side}", why))
            break
        if side in allowed:
            continue  # decided on the item's new text: the verdict records it, the pair file keeps its own
        why = f"item {ids[side]!r} has another text than in {item[1]} ({item[0]!r})"
        if side in shown and not item[1].startswith(CORPUS_SOURCE):
            why += EDITED_SINCE
        problems.append(_sheet(filled, row, f"text_{side}", why))
    return problems


def _conflicts(
    new: pd.DataFrame, existing: pd.DataFrame, filled: str | Path, pairs_file: str | Path
) -> tuple[list[InputError], list[InputError]]:
    """Every conflict of ``new`` with the pair file at once: the rows whose pair is already annotated (by
    pair id, item ids or texts), and the others: a row naming an item id whose text differs from the pair
    file's, a new pair under the pair id the pair file gives another pair.
    Returns ``(already annotated, other conflicts)``, each problem named by file, row and field."""
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    scripts = read_keys(existing["text_a"], existing["text_b"], DEFAULT_MODE)
    by_id: dict[str, tuple[set[tuple[str, ...]], str]] = {}  # each pair id: its pair's keys, and the pair
    for r, keys, script in zip(existing.itertuples(index=False), pair_keys(existing), scripts, strict=True):
        ids = (item_id(getattr(r, "id_a", "")), item_id(getattr(r, "id_b", "")))
        named = " / ".join(ids) if all(ids) else f"{r.text_a} / {r.text_b}"
        by_id.setdefault(str(r.pair_id), ({*keys, script}, named))
    known = known_pairs(existing)
    for key, pid in zip(scripts, existing["pair_id"], strict=True):
        known.setdefault(key, str(pid))
    read = read_keys(new["text_a"], new["text_b"], DEFAULT_MODE)
    texts: dict[str, str] = {}
    if "id_a" in existing.columns and "id_b" in existing.columns:
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            for item, text in zip(existing[col], existing[tcol], strict=True):
                if not is_blank(item):
                    texts.setdefault(str(item).strip(), str(text))
    scored: list[InputError] = []
    other: list[InputError] = []
    for i, (r, keys) in enumerate(zip(new.itertuples(index=False), pair_keys(new), strict=True)):
        keys = [*sorted(keys), read[i]]  # the script's key last: a pair known as written is named so
        row = int(rows[i])
        what = f"pair {r.pair_id!r}"
        if hasattr(r, "id_a") and hasattr(r, "id_b"):
            what += f" ({r.id_a} / {r.id_b})"
        held = by_id.get(str(r.pair_id))
        if held is not None and held[0] & set(keys):
            scored.append(_sheet(filled, row, "pair_id", f"{what} is already annotated in {pairs_file}"))
        elif held is not None and not any(key in known for key in keys):
            why = (
                f"pair id {r.pair_id!r} is the id of another pair in {pairs_file} ({held[1]}), not of this "
                "one: give this pair another id, or empty the cell (its id is then made from its items)"
            )
            other.append(_sheet(filled, row, "pair_id", why))
        else:
            for key in keys:
                if key in known:
                    how = (
                        f" (its texts in another script: {DEFAULT_MODE}, as models read them)"
                        if key[0] == READ
                        else ""
                    )
                    scored.append(
                        _sheet(
                            filled,
                            row,
                            "id_a" if key[0] == "id_a" else "text_a",
                            f"{what} is already annotated in {pairs_file} as {known[key]!r}{how}",
                        )
                    )
                    break
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            item = str(getattr(r, col, "") or "").strip()
            text = str(getattr(r, tcol))
            if item in texts and texts[item] != text:
                other.append(
                    _sheet(
                        filled,
                        row,
                        tcol,
                        f"item {item!r} has another text than in {pairs_file} ({texts[item]!r})",
                    )
                )
    return scored, other


def overrule_rows(raw: pd.DataFrame, filled: str | Path, early: list[InputError], *, every: bool) -> set[int]:
    """The sheet rows of the editors' file ``raw`` whose editor means to overrule a pair already scored:
    every row with ``every`` (``--overrule``), else those whose :data:`editor_file.OVERRULE` cell is true
    (a cell that is neither true nor false is a problem added to ``early``; an unscored row's is not read,
    as :func:`mark_times` leaves its time: the row is skipped, ``--skip-blank``, or refused as unscored)."""
    rows = _sheet_rows(raw)  # sheet rows: the header is row 1
    if every:
        return set(rows)
    if editor_file.OVERRULE not in raw.columns:
        return set()
    marked = set()
    scores = raw["score"] if "score" in raw.columns else pd.Series([""] * len(raw))
    for row, cell, score in zip(rows, raw[editor_file.OVERRULE], scores, strict=True):
        if is_blank(score):
            continue
        said = editor_file.overrule_cell(cell)
        if said is None:
            why = f"{str(cell)[:40]!r} is neither true nor false (does the editor mean to overrule?)"
            early.append(_sheet(filled, row, editor_file.OVERRULE, why))
        elif said:
            marked.add(row)
    return marked


MARK_CLOCK_SLACK = dt.timedelta(hours=1)
"""How far a mark time (:data:`editor_file.MARKED_AT`) may run ahead of the merge's clock (a browser's clock
a little fast); a time later than that would stand over every decision made after it, and is refused."""


def mark_times(raw: pd.DataFrame, filled: str | Path, early: list[InputError]) -> dict[int, str]:
    """The time each scored row of the editors' file ``raw`` was marked, by sheet row (the cell as given,
    ISO 8601 with its offset), from its :data:`editor_file.MARKED_AT` column (none: an older page's export,
    or a drawn file). A cell that is empty, not a time, without an offset, or later than now (by more than
    :data:`MARK_CLOCK_SLACK`) is a problem added to ``early``."""
    if editor_file.MARKED_AT not in raw.columns:
        return {}
    latest = dt.datetime.now(dt.UTC) + MARK_CLOCK_SLACK
    times: dict[int, str] = {}
    scores = raw["score"] if "score" in raw.columns else pd.Series([""] * len(raw))
    for row, cell, score in zip(_sheet_rows(raw), raw[editor_file.MARKED_AT], scores, strict=True):
        if is_blank(score):
            continue  # a blank row is skipped (--skip-blank) or refused as not scored
        when = editor_file.mark_time(cell)
        if isinstance(when, str):
            early.append(_sheet(filled, row, editor_file.MARKED_AT, f"{str(cell)[:40]!r} {when}"))
        elif when > latest:
            now = f"{latest - MARK_CLOCK_SLACK:%Y-%m-%dT%H:%MZ}"
            why = f"{str(cell)[:40]!r} is later than now ({now}): is the editor's clock right?"
            early.append(_sheet(filled, row, editor_file.MARKED_AT, why))
        else:
            times[row] = str(cell).strip()
    return times


@dataclass(frozen=True)
class Scored:
    """The rows of an editors' file whose pair the pair file already scores, by sheet row."""

    conflicts: tuple[InputError, ...] = ()
    """Each such row, named (already annotated), but those merged as overruling verdicts."""
    overrules: dict[int, PairRow] = field(default_factory=dict)
    """The rows merged as an editor's newer decision, each with its pair's row of the pair file."""
    refused: tuple[InputError, ...] = ()
    """Rows meant to overrule a pair that cannot be overruled (validation or test; other item ids)."""
    could: int = 0
    """Rows of :attr:`conflicts` on training pairs, which ``--overrule`` would merge."""
    again: frozenset[int] = frozenset()
    """Rows whose verdict was merged before from another file (marks exported again): skipped, no
    conflict."""
    earlier: frozenset[int] = frozenset()
    """Rows of :attr:`conflicts` on training pairs marked before the decision that holds on their pair,
    which ``--overrule`` keeps in the pair's history, not acting."""

    @property
    def skipped(self) -> set[int]:
        """The rows ``--skip-scored`` skips: the conflicts and the refused overrules."""
        return {e.row for e in (*self.conflicts, *self.refused) if e.row is not None}


def _scored(
    new: pd.DataFrame,
    existing: pd.DataFrame,
    conflicts: list[InputError],
    filled: str | Path,
    intent: set[int],
    again: set[int] | None = None,
    older: dict[int, str] | None = None,
    history: dict[int, str] | None = None,
) -> Scored:
    """The rows of ``new`` the pair file already scores (``conflicts``, by :func:`_conflicts`), parted:
    those meant to overrule (``intent``, sheet rows) whose pair the pair file holds by the same item ids in
    its training split are overrules; one on a validation or test pair, or on a pair the pair file holds
    under other item ids, is refused by name; those ``again`` names (sheet rows: the verdict merged before
    from another file) are skipped; the rest stay conflicts (those ``older`` names, merged before, and those
    ``history`` names, marked before the decision that holds on their pair, are not among the training
    pairs ``--overrule`` would merge as the editor's newer decision)."""
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    at = {int(r): i for i, r in enumerate(rows)}
    held = pair_rows(existing)
    overrules: dict[int, PairRow] = {}
    refused: list[InputError] = []
    plain: list[InputError] = []
    could = 0
    earlier: set[int] = set()
    skipped: set[int] = set()
    for e in conflicts:
        if int(e.row or 0) in (again or set()):
            skipped.add(int(e.row or 0))
            continue
        i = at[int(e.row or 0)]
        key = pair_key(item_id(new["id_a"].iloc[i]), item_id(new["id_b"].iloc[i])) if "id_a" in new else None
        row = held.get(key) if key else None
        trainable = row is not None and row.split == ACTING_SPLIT
        if e.row not in intent:
            plain.append(e)
            could += trainable and int(e.row or 0) not in {**(older or {}), **(history or {})}
            if trainable and int(e.row or 0) in (history or {}):
                earlier.add(int(e.row or 0))
        elif trainable and row is not None:
            overrules[int(e.row or 0)] = row
        else:
            refused.append(_unoverruled(e, row, filled))
    return Scored(tuple(plain), overrules, tuple(refused), could, frozenset(skipped), frozenset(earlier))


def _unoverruled(e: InputError, row: PairRow | None, filled: str | Path) -> InputError:
    """Why the row of conflict ``e`` cannot overrule the pair file's ``row`` of its pair."""
    if row is None:
        why = (
            f"{e.reason}, but not under these item ids: an overrule names the pair by the item ids the pair "
            "file gives it"
        )
    else:
        why = (
            f"{e.reason} in its {row.split or 'unnamed'} split: only a training pair is overruled "
            "(validation and test pairs judge the reports and the models, as the annotators scored them)"
        )
    return _sheet(filled, e.row, e.field, why)


def check_new(
    new: pd.DataFrame,
    existing: pd.DataFrame,
    filled: str | Path,
    pairs_file: str | Path,
    *,
    skip_scored: bool = False,
    found: list[InputError] | None = None,
    early: list[InputError] | None = None,
    intent: set[int] | None = None,
    again: set[int] | None = None,
    older: dict[int, str] | None = None,
    history: dict[int, str] | None = None,
    renewed: set[int] | None = None,
) -> Scored:
    """Refuse the editors' file naming every problem at once, one line a row and field: ``early`` (the
    file's own, :func:`validate_filled`, and the cells the pair file cannot hold, :func:`cell_problems`),
    the conflicts of its sound rows ``new`` with the pair file (:func:`_conflicts`) and ``found``
    (:func:`check_texts`' problems); a row meant to overrule (``intent``, sheet rows) a training pair is
    no conflict (:func:`_scored`), nor a row ``again`` names (sheet rows whose verdict was merged before
    from another file: skipped); with ``skip_scored`` a pair already annotated is no conflict (the
    merge skips it, and what else its row holds, kept nowhere). A conflict ``older`` names (sheet rows
    ``--overrule`` would not merge: merged before, each said with why) is said so, and so is one
    ``history`` names (sheet rows marked before the decision that holds on their pair, each said with it:
    ``--overrule`` merges such a row into the pair's history, not acting). A row ``renewed`` names (sheet
    rows) may give an item a new text (:func:`check_texts` checked it). Returns the rows the pair file
    already scores."""
    conflicts, other = _conflicts(new, existing, filled, pairs_file)
    scored = _scored(new, existing, conflicts, filled, intent or set(), again, older, history)
    found = found or []
    early = early or []
    if skip_scored:
        early = [e for e in early if e.row not in scored.skipped]
        found = [e for e in found if e.row not in scored.skipped]
    texts_named = {e.row for e in found}  # a row's texts are checked once: other is the same check
    # a renewed row's texts were checked by check_texts, which allows a new text the page showed
    other = [e for e in other if not (e.row in (renewed or set()) and e.field in ("text_a", "text_b"))]
    problems = _unique(
        [
            *early,
            *found,
            *(e for e in other if e.row not in texts_named),
            *([] if skip_scored else [*scored.conflicts, *scored.refused]),
        ]
    )
    if not problems:
        return scored
    what = "problems, each to fix in the file" if early or found else "rows conflict with the pair file"
    if scored.conflicts and not skip_scored:
        hint = (
            f"{len(scored.conflicts)} already annotated: pass --skip-scored to merge the others (these "
            "kept nowhere)"
        )
        if scored.could:
            hint += (
                f", or --overrule to merge the {scored.could} training pair(s) among them as the editor's "
                "newer decision"
            )
        kept = [history[int(e.row or 0)] for e in scored.conflicts if int(e.row or 0) in scored.earlier]
        if kept and history:
            hint += (
                f"; {len(kept)} of them marked before the decision that holds on their pair, which stands: "
                "--overrule keeps each in the pair's history, in time order, not acting: " + "; ".join(kept)
            )
        stale = [older[int(e.row or 0)] for e in scored.conflicts if int(e.row or 0) in (older or {})]
        if stale and older:
            hint += f"; {len(stale)} of them --overrule would not merge either: " + "; ".join(stale)
        what += f" ({hint})"
        if len(problems) == 1:  # one refusal: the row itself says what else to do
            e = problems[0]
            problems = [InputError(e.file, e.row, e.field, f"{e.reason} ({hint})", sheet=e.sheet)]
    _refuse(filled, problems, what)
    return scored


NOTES = "notes"
"""The editors' free-text column: a TSV pair file takes a note's line breaks and tabs as spaces."""


def one_line_notes(new: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``new`` with each note's runs of white space holding a tab or a line break read as one space (a note
    typed on two lines in a spreadsheet, for a TSV pair file, one line a row), and how many notes changed."""
    if NOTES not in new.columns:
        return new, 0
    notes = new[NOTES].map(lambda v: one_line(v) if isinstance(v, str) else v)
    changed = int((notes != new[NOTES]).fillna(False).sum())
    if not changed:
        return new, 0
    out = new.copy()
    out[NOTES] = notes
    out.attrs = dict(new.attrs)
    return out, changed


def _bad_char(text: str, tsv: bool) -> str | None:
    """The first character of ``text`` a pair file must not hold, or ``None``: a control character or a
    line or paragraph separator (:func:`nlsim.io.cells.first_control`: a NUL ends a text in many tools, a
    vertical tab, form feed or U+2028 ends a row for a line reader, others show nothing), and in a TSV pair
    file (it has no quoting) a tab, carriage return or newline too; a CSV or Parquet cell may hold those."""
    return first_control(text, allowed="" if tsv else "\t\r\n")


def cell_problems(
    new: pd.DataFrame, columns: list[str], filled: str | Path, pairs_file: str | Path
) -> list[InputError]:
    """Each cell of the editor's file the pair file cannot hold intact, by its sheet row and field."""
    tsv = table_format(pairs_file) == "tsv"
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    problems = []
    for col in (c for c in columns if c in new.columns):
        for i, value in enumerate(new[col]):
            if is_blank(value):
                continue
            ch = _bad_char(str(value), tsv)
            if ch is None:
                continue
            if ch in "\t\r\n":
                what, kind = f"a tab or newline (U+{ord(ch):04X})", "the TSV pair file"
            else:
                what, kind = describe(ch), "a pair file"
            problems.append(
                _sheet(
                    filled,
                    int(rows[i]),
                    str(col),
                    f"{what} cannot be written to {kind} ({pairs_file}); remove it",
                )
            )
    return problems
