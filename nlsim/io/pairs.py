"""Annotated relatedness pairs: load and validate a pair file (TSV, CSV or Parquet).

A pair file has the columns ``text_a``, ``text_b`` and ``score`` (a number in [0, 1]), and optionally
``pair_id`` (unique; made up as ``row-N`` when absent) and ``split`` (``train``, ``validation`` or
``test``). Other columns (``id_a``, ``id_b``, ``annotations``, ``stratum`` ...) are kept as they are; an
item paired with itself (``id_a`` = ``id_b``) is refused.
Every bad row raises :class:`nlsim.errors.InputError` naming the file, the 1-based data row and the field;
nothing is dropped silently. One pair (the same ids or the same texts, in either order) in two splits is
refused (:func:`check_split_leaks`), and so, in a pair file (:func:`load_pairs`), is one pair twice in a
split with two scores: which of them counts would depend on the row order. Twice with one score is kept in
the file, and counted once by what makes figures of it (training, evaluation, calibration:
:func:`count_once`), with a warning naming the rows. A text holding U+FFFD (bytes a decoder upstream could
not read) is kept, and :func:`load_pairs` warns, naming the rows and fields (:func:`warn_damaged`); so
is one holding control characters (a NUL).

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "pairs.tsv"
    >>> _ = p.write_text("text_a\\ttext_b\\tscore\\tsplit\\nA\\tB\\t0.5\\ttrain\\n", encoding="utf-8")
    >>> load_pairs(p)[["pair_id", "score", "split"]].to_dict("records")
    [{'pair_id': 'row-1', 'score': 0.5, 'split': 'train'}]
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from nlsim.errors import ConfigError, InputError, StateError
from nlsim.io.atomic import file_sha256
from nlsim.io.cells import (
    id_fault,
    invisible_only,
    misread_reason,
    misread_utf8,
    missing_marker,
    model_texts,
    placeholder,
    score_number,
    text_control,
)
from nlsim.io.corpus_schema import spelt_otherwise
from nlsim.io.tables import read_table, separator_hint, text_columns
from nlsim.progress import warn

REQUIRED = ("text_a", "text_b", "score")
SPLITS = ("train", "validation", "test")
COLUMNS = ("pair_id", "text_a", "text_b", "score", "split")
TEXT_COLUMNS = (
    "pair_id",
    "split",
    "id_a",
    "id_b",
    "text_a",
    "text_b",
    "annotations",
    "stratum",
    "annotator",
    "notes",
)
"""The columns of a pair file that hold text: read as UTF-8 where a Parquet file stores them as bytes."""
PAIR_FILE_FORMATS = ".tsv/.csv/.parquet, or a .tsv/.csv compressed: .gz, .bz2, .xz"
"""The files a pair file is read from (:func:`read_pair_table`), as a command's help names them."""
READ_COLUMNS = (*COLUMNS, "id_a", "id_b")
"""The columns of a pair file that are read: one of them spelt otherwise (``Score``, ``Split``) is refused."""


def read_pair_table(path: str | Path) -> pd.DataFrame:
    """Read a pair file (TSV, CSV or Parquet; a TSV or CSV may be compressed, ``pairs.tsv.gz``) with
    :func:`nlsim.io.tables.read_table`. A column pandas wrote as categories
    (``df["split"].astype("category")``, a Parquet dictionary column read back so) is read as its values,
    as any other column: a category column takes no value it does not list, not even the empty split of a
    row that names none."""
    frame = read_table(path, allowed=("parquet", "csv", "tsv"))
    categories = [c for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]
    if categories:
        frame = frame.astype(dict.fromkeys(categories, object))
    return text_columns(path, frame, TEXT_COLUMNS)


def header_name(cell: object) -> str:
    """A cell as the name of a column it may repeat (a file's header again, two files joined): without the
    byte-order mark a spreadsheet writes before a file's first header, white space around it, in lower case.

    >>> header_name("\ufeffText_A ")
    'text_a'
    """
    return str(cell).replace("\ufeff", "").strip().lower()


def _is_missing(value: object) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def _text_fault(value: object, refuse_misread: bool) -> str | None:
    """Why a pair's text ``value`` is refused, or ``None``: empty, invisible characters only, a spreadsheet's
    error value or an export's marker alone, or (``refuse_misread``) UTF-8 misread in another encoding.

    >>> _text_fault("#NAME?", False) is not None, _text_fault("颱風凱米登陸", True)
    (True, None)
    """
    if _is_missing(value):
        return "empty text"
    text = str(value)
    unseen = invisible_only(text.strip())
    if unseen is not None:  # as a corpus refuses it: nothing to embed, every such text one another's
        return f"empty text (only invisible characters: {unseen:.60})"
    error = placeholder(text)
    if error is not None:  # as a corpus refuses a title so: "#NAME?" for every text run as a formula
        return error
    found = misread_utf8(text) if refuse_misread else None
    if found is not None:  # a model trained or judged on it would learn the misreading
        return misread_reason(text, *found)
    return None


def validate_pairs(
    frame: pd.DataFrame,
    source: str | Path = "<pairs>",
    *,
    repeated_scores: Literal["refuse", "keep"] = "keep",
    misread: Literal["refuse", "keep"] = "keep",
    rows: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Check a pair table and return it normalised (see the module docstring); raise ``InputError``.

    ``repeated_scores="refuse"``: one pair twice in a split with two scores is an error too
    (:func:`check_split_leaks`), as :func:`load_pairs` asks for an annotated pair file; ``"keep"`` (the
    default) leaves such repeats to a benchmark that has them (STS-B gives a few of its pairs two scores).
    ``misread="refuse"``: a text that is UTF-8 misread in another encoding and saved again
    (:func:`~nlsim.io.cells.misread_utf8`) is an error too, as :func:`load_pairs` and a merge ask of the
    newsroom's pairs; ``"keep"`` (the default) reads a benchmark as published (STS-B holds a few such texts,
    ``Stalloneâ€™s``).
    ``rows``: the row number each row is named by in an error (a sheet's rows, where rows were set apart);
    by default 1, 2, ... in the table's order.

    Example:
        >>> validate_pairs(pd.DataFrame({"text_a": ["x"], "text_b": ["y"], "score": [1.5]}), "t.csv")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: t.csv: row 1, field 'score': score 1.5 is outside [0, 1]
    """
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        # a file read as one column was written with another separator than its name says: say which
        hint = separator_hint(source, str(frame.columns[0])) if len(frame.columns) == 1 else ""
        raise InputError(source, None, missing[0], f"missing column(s) {', '.join(missing)}{hint}")
    frame = frame.reset_index(drop=True).copy()
    if "pair_id" not in frame.columns:
        frame.insert(0, "pair_id", [f"row-{i + 1}" for i in range(len(frame))])
    if "split" not in frame.columns:
        frame["split"] = ""
    scores: list[float] = []
    seen: dict[str, int] = {}
    if rows is not None and len(rows) != len(frame):
        raise ValueError(f"{len(rows)} row numbers for {len(frame)} rows")
    for i, row in enumerate(frame.itertuples(index=False)):
        n = int(rows[i]) if rows is not None else i + 1
        rec = row._asdict()
        if all(header_name(rec[c]) == c for c in REQUIRED):  # cat a.tsv b.tsv: b's header is a row of a's
            raise InputError(source, n, "score", "the header again (two files joined?): remove this row")
        pid = rec["pair_id"]
        if _is_missing(pid):
            raise InputError(source, n, "pair_id", "missing pair id")
        pid = str(pid).strip()
        if pid in seen:
            raise InputError(source, n, "pair_id", f"duplicate pair id {pid!r} (first at row {seen[pid]})")
        seen[pid] = n
        for field in ("pair_id", "id_a", "id_b"):  # a pair id is made from its two item ids joined by U+001F
            value = rec.get(field)
            fault = None if _is_missing(value) else id_fault(str(value))
            if fault is not None:
                raise InputError(source, n, field, fault)
        itself = item_id(rec.get("id_a"))
        if itself and itself == item_id(rec.get("id_b")):  # cosine 1 with itself: it only flatters a figure
            raise InputError(source, n, "id_b", f"item {itself!r} is paired with itself")
        for field in ("text_a", "text_b"):
            fault = _text_fault(rec[field], misread == "refuse")
            if fault is not None:
                raise InputError(source, n, field, fault)
        scores.append(_score(rec["score"], source, n))
        split = rec["split"]
        if not _is_missing(split) and str(split).strip() not in SPLITS:
            raise InputError(source, n, "split", f"unknown split {split!r}{_split_hint(split)}")
    frame["pair_id"] = frame["pair_id"].astype(str).str.strip()
    frame["text_a"] = frame["text_a"].astype(str)
    frame["text_b"] = frame["text_b"].astype(str)
    frame["score"] = pd.Series(scores, dtype="float64")
    frame["split"] = frame["split"].fillna("").astype(str).str.strip()
    check_split_leaks(frame, source, repeated_scores=repeated_scores, rows=rows)
    other = [c for c in frame.columns if c not in COLUMNS]
    return frame[list(COLUMNS) + other]


def _split_hint(split: object) -> str:
    """What a refusal of the split cell ``split`` adds: the split it reads as in another width or case
    (``ｔｒａｉｎ``, typed with a Chinese input method in full-width mode, or ``Train``), to write so; else
    the splits.

    >>> _split_hint("ｔｒａｉｎ"), _split_hint("dev")
    (" (written in full-width letters or capitals: write it 'train')", ' (use train, validation, test)')
    """
    meant = header_name(unicodedata.normalize("NFKC", str(split)))
    if meant in SPLITS:
        return f" (written in full-width letters or capitals: write it {meant!r})"
    return f" (use {', '.join(SPLITS)})"


def _score(raw: object, source: str | Path, n: int) -> float:
    """The score of row ``n``'s cell ``raw``, or an :class:`InputError` naming the file, row and field: a
    blank cell or an export's marker of none (``nan``, ``NULL``) is a missing score; ``-0`` is 0.

    >>> _score("-0.0", "p.tsv", 1), _score(" 1.0 ", "p.tsv", 2)
    (0.0, 1.0)
    """
    if _is_missing(raw):
        raise InputError(source, n, "score", "missing score")
    if isinstance(raw, (bool, np.bool_)):
        raise InputError(source, n, "score", f"score {raw!r} is a yes/no value, not a number in [0, 1]")
    if isinstance(raw, str) and missing_marker(raw) is not None:  # nan, NULL: an export's empty cell
        raise InputError(source, n, "score", f"missing score (the cell holds {raw.strip()!r})")
    try:
        score = score_number(raw)
    except ValueError as exc:
        raise InputError(source, n, "score", f"score {raw!r} {exc}") from None
    if math.isnan(score):  # -nan, or a number type's NaN
        raise InputError(source, n, "score", f"missing score (the cell holds {raw!r})")
    if not 0.0 <= score <= 1.0:
        raise InputError(source, n, "score", f"score {raw} is outside [0, 1]")
    return score + 0.0  # -0 (a rounding's sign kept by an export) is 0: said and digested as 0


def item_id(value: object) -> str:
    """An item id cell as text without surrounding spaces; ``""`` for an empty one (None, NaN, <NA>)."""
    return "" if _is_missing(value) else str(value).strip()


def normalise_text(text: str) -> str:
    """The form in which two texts count as the same pair member: NFKC, no whitespace, lower case."""
    return "".join(unicodedata.normalize("NFKC", str(text)).split()).lower()


def pair_keys(frame: pd.DataFrame) -> list[set[tuple[str, str]]]:
    """Per row, the keys that identify its pair in either order: by ``id_a``/``id_b`` when present, and
    by the normalised texts."""
    keys: list[set[tuple[str, str]]] = [set() for _ in range(len(frame))]
    cols = [("text_a", "text_b", normalise_text)]
    if "id_a" in frame.columns and "id_b" in frame.columns:
        cols.append(("id_a", "id_b", item_id))
    for col_a, col_b, norm in cols:
        for i, (a, b) in enumerate(zip(frame[col_a], frame[col_b], strict=True)):
            if _is_missing(a) or _is_missing(b):
                continue
            x, y = norm(a), norm(b)
            keys[i].add((col_a, *sorted((x, y))))
    return keys


def drop_split_leaks(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``frame`` without the pairs that also appear in a later split (train < validation < test), and how
    many were dropped. For benchmark sets that repeat a pair across their splits (STS-B); an annotated pair
    file of ours is refused instead (:func:`check_split_leaks`).

    Example:
        >>> df = pd.DataFrame({"text_a": ["A", "b"], "text_b": ["B", "a"], "split": ["train", "test"]})
        >>> kept, dropped = drop_split_leaks(df)
        >>> kept["split"].tolist(), dropped
        (['test'], 1)
    """
    order = {name: i for i, name in enumerate(SPLITS)}
    keys = pair_keys(frame)
    later: dict[tuple[str, ...], int] = {}
    for k, split in zip(keys, frame["split"], strict=True):
        for key in k:
            later[key] = max(later.get(key, -1), order.get(split, -1))
    keep = [
        all(later[key] <= order.get(split, -1) for key in k)
        for k, split in zip(keys, frame["split"], strict=True)
    ]
    kept = frame[keep].reset_index(drop=True)
    return kept, len(frame) - len(kept)


def check_split_leaks(
    frame: pd.DataFrame,
    source: str | Path = "<pairs>",
    *,
    repeated_scores: Literal["refuse", "keep"] = "refuse",
    rows: Sequence[int] | None = None,
    converted: str | None = None,
) -> None:
    """Refuse a pair that appears in two splits (same ids or same normalised texts, in either order), and
    with ``repeated_scores="refuse"`` one that appears twice in one split with two scores (field
    ``score``; the same score twice is accepted). Rows without a split count as one split; a pair without
    both ids is keyed by its texts only (:func:`pair_keys`).

    A test pair copied into train would inflate every test figure without a word; a pair scored twice
    differently would be judged by whichever row comes last.

    ``rows``: each row's row in the file (from 1), when ``frame`` is not the file's rows in order (left out,
    its place). ``converted``: the script conversion ``frame``'s texts were read with (``tw2sp``; training
    converts them before it splits them), said with the texts of the refused row, as the model reads them:
    a training pair in Traditional characters given again in test in Simplified ones is one pair to it.

    Example:
        >>> df = pd.DataFrame({"text_a": ["A", "b"], "text_b": ["B", "a "], "split": ["train", "test"]})
        >>> check_split_leaks(df, "p.tsv")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: p.tsv: row 2, field 'text_a': the same pair as row 1 is in split ...
        >>> df = pd.DataFrame({"text_a": ["A", "B"], "text_b": ["B", "A"], "score": [1.0, 0.5]})
        >>> check_split_leaks(df.assign(split="test"), "p.tsv")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: p.tsv: row 2, field 'score': the same pair as row 1 has score 0.5 here ...
    """
    named = list(rows) if rows is not None else list(range(1, len(frame) + 1))
    first: dict[tuple[str, ...], tuple[int, str]] = {}
    scored: dict[tuple[tuple[str, ...], str], int] = {}  # (pair key, split): its first row
    scores = None
    if repeated_scores == "refuse" and "score" in frame.columns:
        scores = frame["score"].astype(float).tolist()  # read as numbers in [0, 1] by validate_pairs
    for i, (keys, split) in enumerate(zip(pair_keys(frame), frame["split"], strict=True)):
        read = "" if converted is None else _as_read(frame, i, converted)
        for key in keys:
            if scores is not None:
                j = scored.setdefault((key, split), i)
                _check_same_score(source, (named[i], named[j]), (scores[i], scores[j]), read)
            seen = first.setdefault(key, (i, split))
            if seen[1] != split:
                field = "id_a" if key[0] == "id_a" else "text_a"
                _refuse_leak(source, (named[i], named[seen[0]]), (split, seen[1]), field, read)


def _as_read(frame: pd.DataFrame, i: int, conversion: str) -> str:
    """The clause that says row ``i`` (0-based) of ``frame`` as the model reads its texts (converted with
    ``conversion``), for a refusal of its pair."""
    a, b = frame["text_a"].iloc[i], frame["text_b"].iloc[i]
    return f"{_as_the_model_reads(conversion)}: {a!r} / {b!r}"


def _as_the_model_reads(conversion: str) -> str:
    """The words that say texts were compared as the model reads them, converted with ``conversion``.

    >>> _as_the_model_reads("tw2sp")
    ' as the model reads them, converted to one script (--convert tw2sp)'
    >>> _as_the_model_reads("none")
    ' as the model reads them (--convert none)'
    """
    if conversion == "none":
        return " as the model reads them (--convert none)"
    return f" as the model reads them, converted to one script (--convert {conversion})"


def _refuse_leak(
    source: str | Path, rows: tuple[int, int], splits: tuple[str, str], field: str, read: str = ""
) -> None:
    """Refuse the row ``rows[0]`` (from 1) in split ``splits[0]``, whose pair is at row ``rows[1]`` in
    another split, ``splits[1]``; ``read``: how the model reads the pair, when that makes it one
    (:func:`_as_read`). A row without a split is a split of its own: with it, a figure of all the pairs
    (``nlsim evaluate --split all``) would count the pair twice."""
    (row, earlier), (split, was) = rows, splits
    if was and split:
        where, why = f"in split {was!r} and in {split!r}", "a test or validation pair must not be trained on"
    else:
        blank = earlier if not was else row
        where = f"in {_split_name(was)} and in {_split_name(split)}"
        why = (
            f"a row without a split is a split of its own: all the pairs would count this pair twice; leave "
            f"row {blank} out"
        )
    raise InputError(source, row, field, f"the same pair as row {earlier} is {where}{read} ({why})")


def _split_name(split: str) -> str:
    return f"split {split!r}" if split else "no split"


def _check_same_score(
    source: str | Path, rows: tuple[int, int], scores: tuple[float, float], read: str = ""
) -> None:
    """Refuse the row ``rows[0]`` (from 1) when its score, ``scores[0]``, is not ``scores[1]``, the score of
    the first row of its pair, ``rows[1]``; ``read``: how the model reads the pair (:func:`_as_read`)."""
    (row, first), (score, was) = rows, scores
    if not math.isclose(score, was, rel_tol=0.0, abs_tol=1e-9):
        raise InputError(
            source,
            row,
            "score",
            f"the same pair as row {first} has score {score:g} here and {was:g} there{read} (one pair is "
            "scored once in a split: which score counts would depend on the row order; keep one row or "
            "settle the score)",
        )


def load_pairs(
    path: str | Path,
    split: str | None = None,
    *,
    repeats: Literal["keep", "once"] = "keep",
    conversion: str | None = None,
    shown_as: str | Path | None = None,
) -> pd.DataFrame:
    """Load and validate a pair file (one pair twice in a split with two scores refused too); ``split``
    keeps only that split (error if it has no rows). An unknown ``split`` is the asker's mistake (a
    command's ``--split``), refused before the file is read, not blamed on the file. A column of
    :data:`READ_COLUMNS` spelt otherwise (``Score``, ``split `` with a space, ``pairId``) is refused naming it
    (:func:`~nlsim.io.corpus_schema.spelt_otherwise`), never read as an extra column; so is a file with
    one of ``id_a`` and ``id_b`` and not the other.

    ``repeats="once"``: a row repeating an earlier row's pair (its score and split too) is left out, with a
    warning naming the rows (:func:`count_once`), as training, evaluation and calibration read a pair file:
    each pair counts once, in every figure alike. ``"keep"`` (the default) gives every row, as the file
    holds it (a merge writes the file back; the verdict store is checked against its rows). With
    ``repeats="once"``, ``conversion`` (``tw2sp``, or ``none``): a row repeating an earlier row's pair as the
    model reads them (``&#8226;`` as ``•``, converted to one script) is left out too, and said so (the
    first row kept: :func:`count_once`). Given a ``conversion``, the file is checked as the model reads its
    texts too, as training checks it (:func:`check_split_leaks` on :func:`as_model_reads`'s texts): one
    pair to the model in two splits, or twice in a split with two scores, is refused naming the row and the
    field.

    ``shown_as``: the name the file's refusals and warnings give it (a merge reads back the temporary copy
    it wrote of the pair file by the pair file's name); left out, ``path``."""
    if split is not None and split not in SPLITS:
        raise ConfigError(f"--split {split!r}: unknown split (a pair file's splits are {', '.join(SPLITS)})")
    table = read_pair_table(path)
    name = path if shown_as is None else shown_as
    check_pair_columns(table, name)
    frame = validate_pairs(table, name, repeated_scores="refuse", misread="refuse")
    check_pinned(path)
    warn_damaged(frame, name)
    read = None if conversion is None else as_model_reads(frame, conversion)
    if read is not None:  # one pair to the model in two splits, or with two scores: as training refuses it
        check_split_leaks(read, name, converted=conversion)
    if split is not None:
        kept = frame[frame["split"] == split]
        if kept.empty:
            raise InputError(name, None, "split", f"no pairs in split {split!r}{split_counts(frame)}")
        warn_unsplit(frame, split, name)
        frame = kept
    if repeats == "once":
        frame = count_once(frame, name)
        if read is not None:  # one pair in two scripts, or with an entity: one to the model
            frame = count_once(frame, name, conversion=conversion, read=read.loc[frame.index])
    return frame.reset_index(drop=True)


def check_pair_columns(table: pd.DataFrame, path: str | Path) -> None:
    """Refuse a pair file whose column of :data:`READ_COLUMNS` is spelt otherwise (``Score``, ``split `` with
    a space, ``pairId``; :func:`~nlsim.io.corpus_schema.spelt_otherwise`), or that has one of ``id_a`` and
    ``id_b`` and not the other, by file and field: either would be read as a file without that column. So
    is one whose item ids are stored as floats (:func:`check_float_ids`)."""
    spelt = spelt_otherwise(path, list(table.columns), READ_COLUMNS)
    if spelt is not None:  # Score: "missing column"; Split, pairId: kept aside, the file read without them
        raise spelt
    for col, other in (("id_a", "id_b"), ("id_b", "id_a")):  # one without the other names no pair
        if other in table.columns and col not in table.columns:
            raise InputError(path, None, col, f"missing column (the file has {other}: a pair's ids are both)")
    check_float_ids(table, path)


def check_float_ids(table: pd.DataFrame, path: str | Path) -> None:
    """Refuse (:class:`~nlsim.errors.InputError`, naming the file, the first row and the field) a pair
    file whose ``id_a`` or ``id_b`` column holds floats (``101.0``), as pandas stores a column of integer
    ids with an empty cell (pairs without ids joined to pairs with them) and writes it to Parquet: each
    id would read as ``101.0``, which names no item of a corpus whose ids are ``101`` (a corpus refuses
    float ids so: :func:`nlsim.io.corpus.load_corpus`), and the editors' verdicts and the review queue
    would match none of the file's pairs, unsaid. Said in the words ``nlsim judge`` refused such ids in
    (:func:`nlsim.evaluation.judge.scored_pairs`). A column with no id at all is a file of pairs keyed by
    their texts.

    Example:
        >>> check_float_ids(pd.DataFrame({"id_a": [101.0, None], "id_b": ["102", "103"]}), "p.parquet")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: p.parquet: row 1, field 'id_a': item id 101.0 is a float: ids must be ...
    """
    for col in ("id_a", "id_b"):
        if col not in table.columns or not pd.api.types.is_float_dtype(table[col]):
            continue
        values = table[col].to_numpy(dtype=float)
        known = np.flatnonzero(~np.isnan(values))
        if not len(known):
            continue
        empty = np.flatnonzero(np.isnan(values))
        why = ""
        if len(empty):
            row = int(empty[0]) + 1
            why = f", as pandas stores a column of integers with an empty cell: row {row} has none"
        raise InputError(
            path,
            int(known[0]) + 1,
            col,
            f"item id {float(values[known[0]])!r} is a float: ids must be text or integers, as a corpus's "
            f"are (the column is stored as floats{why}); write it as integers (df['{col}'].astype('Int64')) "
            "or as text",
        )


REPLACEMENT = "\ufffd"
"""The character a decoder puts for bytes it could not read (U+FFFD)."""


def warn_damaged(
    frame: pd.DataFrame,
    source: str | Path,
    *,
    rows: list[int] | None = None,
    unit: str = "row",
    shown: int = 5,
) -> None:
    """Warn (:func:`nlsim.progress.warn`) of the rows of ``frame`` (a validated pair table, its index the
    file's rows from 0) whose texts hold U+FFFD, the mark of bytes a decoder could not read (the text was
    damaged before nlsim read it: a wrong encoding upstream), and of those whose texts hold control
    characters (a NUL, a terminal's escape: :func:`~nlsim.io.cells.text_control`, the mark of a damaged
    export), as a corpus says of its items (:func:`nlsim.io.corpus.replacement_warning`,
    :func:`nlsim.io.corpus.controls_warning`). The rows are kept as written: the damage is upstream, and a
    merge writes the file back as it holds them. ``rows``: the rows to name, one a row of ``frame`` (an
    editors' file's sheet rows, ``unit="sheet row"``); left out, the index's rows from 1.

    Example:
        >>> warn_damaged(pd.DataFrame({"text_a": ["ok", "x\ufffd"], "text_b": ["a\\x00", "b"]}), "p.tsv")
    """
    replaced = _text_hits(frame, rows, lambda text: REPLACEMENT in text)
    what = "U+FFFD, the mark of bytes a decoder could not read (the text was damaged before nlsim read it: a "
    _warn_of(replaced, source, what + "wrong encoding upstream)", unit, shown)
    controls = _text_hits(frame, rows, lambda text: text_control(text) is not None)
    what = "control characters (a NUL, a terminal's escape: the mark of a damaged export), kept as written"
    _warn_of(controls, source, what, unit, shown)


def _warn_of(hits: list[tuple[int, str]], source: str | Path, what: str, unit: str, shown: int) -> None:
    """Warn that the rows ``hits`` names hold ``what`` (nothing when none does)."""
    if hits:
        count, listed = _listed(hits, unit, shown)
        warn(f"{source}: {count} row(s) hold {what}: {listed}; export them from their source again")


def _text_hits(
    frame: pd.DataFrame, rows: list[int] | None, test: Callable[[str], bool]
) -> list[tuple[int, str]]:
    """Each (row, field) of ``frame``'s two texts that ``test`` finds; ``rows``: the rows to name (left out,
    the index's rows from 1)."""
    named = rows if rows is not None else [int(i) + 1 for i in frame.index]
    return [
        (row, field)
        for row, a, b in zip(named, frame["text_a"], frame["text_b"], strict=True)
        for field, text in (("text_a", a), ("text_b", b))
        if test(str(text))
    ]


def _listed(hits: list[tuple[int, str]], unit: str, shown: int) -> tuple[int, str]:
    """How many rows ``hits`` names, and the first ``shown`` of them as ``row 2 (text_a)``."""
    listed = ", ".join(f"{unit} {row} ({field})" for row, field in hits[:shown])
    return len({row for row, _ in hits}), listed + (" ..." if len(hits) > shown else "")


def warn_unsplit(frame: pd.DataFrame, split: str, source: str | Path, *, shown: int = 5) -> None:
    """Warn (:func:`nlsim.progress.warn`) of the rows of ``frame`` (a validated pair table, its index the
    file's rows from 0) that name no split while others do: they are left out of ``split``'s pairs, which
    a figure of that split would otherwise not say (a row added by hand without its split).

    Example:
        >>> warn_unsplit(pd.DataFrame({"split": ["test", "", "test"]}), "test", "p.tsv")  # says row 2
    """
    blank = frame.index[frame["split"] == ""]
    if len(blank) == 0 or len(blank) == len(frame):
        return
    rows = ", ".join(str(int(i) + 1) for i in blank[:shown]) + (" ..." if len(blank) > shown else "")
    warn(
        f"{source}: {len(blank)} row(s) name no split (row {rows}) and are left out of the {split} pairs: "
        f"give each its split ({', '.join(SPLITS)})"
    )


def count_once(
    frame: pd.DataFrame,
    source: str | Path = "<pairs>",
    *,
    shown: int = 5,
    conversion: str | None = None,
    read: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``frame`` (a validated pair table, its index the file's rows from 0) without the rows that repeat an
    earlier row's pair in the same split (the same ids or the same texts, in either order:
    :func:`pair_keys`), the index kept; the rows left out are said (:func:`nlsim.progress.warn`), each with
    the row it repeats. Such a row has the earlier row's score: two scores are refused
    (:func:`check_split_leaks`). Counted twice, one pair would weigh double in a Spearman, a threshold's F1
    and a training epoch alike, because a row was pasted twice.

    ``conversion`` (``tw2sp``, or ``none``): the texts are compared as the model reads them
    (:func:`nlsim.io.cells.model_texts`: ``&#8226;`` is ``•``, then converted to one script), as training's
    check of the splits compares them: a pair given in Traditional characters and again in Simplified ones,
    or with ``&#8226;`` for ``•`` (with ``none`` too), is one pair to the model. Left out (``None``), as
    written. The first row is kept;
    the warning says the conversion, and the score of a row left out that differs from the kept one's.
    ``read``: ``frame``'s texts as the model reads them with ``conversion`` (:func:`as_model_reads`; its
    ``text_a`` and ``text_b``, row for row), where the caller holds them already: compared so, not
    converted again; the rows returned are ``frame``'s.

    Example:
        >>> df = pd.DataFrame({"text_a": ["A", "c", "b "], "text_b": ["B", "d", "a"], "split": "test"})
        >>> count_once(df, "p.tsv")["text_a"].tolist()
        ['A', 'c']
        >>> df = pd.DataFrame({"text_a": ["颱風", "台风"], "text_b": ["登陸", "登陆"], "split": "test"})
        >>> len(count_once(df, "p.tsv")), len(count_once(df, "p.tsv", conversion="tw2sp"))
        (2, 1)
    """
    keep, repeated = _repeats(frame, conversion, read)
    if repeated:
        _warn_repeated(frame, repeated, source, shown, conversion)
    return frame[np.array(keep, dtype=bool)]  # a list, empty, would pick no column


def repeated_rows(frame: pd.DataFrame, conversion: str | None = None) -> list[tuple[int, int]]:
    """The rows :func:`count_once` leaves out of ``frame`` (its index the file's rows from 0), each with
    the earlier row whose pair it repeats (both from 1), in file order; said nowhere.

    Example:
        >>> df = pd.DataFrame({"text_a": ["A", "c", "b "], "text_b": ["B", "d", "a"], "split": "test"})
        >>> repeated_rows(df)
        [(3, 1)]
    """
    return _repeats(frame, conversion)[1]


def _repeats(
    frame: pd.DataFrame, conversion: str | None, read: pd.DataFrame | None = None
) -> tuple[list[bool], list[tuple[int, int]]]:
    """Which rows of ``frame`` :func:`count_once` keeps, and those it leaves out with the row each repeats
    (from 1); ``read``: as :func:`count_once` takes it."""
    keyed = frame
    if conversion is not None:
        keyed = as_model_reads(frame, conversion) if read is None else read
    seen: dict[tuple[tuple[str, ...], str], int] = {}
    keep: list[bool] = []
    repeated: list[tuple[int, int]] = []  # (row, the row it repeats), 1-based
    for row, keys, split in zip(frame.index, pair_keys(keyed), frame["split"], strict=True):
        first = next((seen[(key, split)] for key in keys if (key, split) in seen), None)
        for key in keys:
            seen.setdefault((key, split), int(row) + 1)
        keep.append(first is None)
        if first is not None:
            repeated.append((int(row) + 1, first))
    return keep, repeated


def as_model_reads(frame: pd.DataFrame, conversion: str) -> pd.DataFrame:
    """A copy of ``frame`` whose ``text_a`` and ``text_b`` are as the model reads them, converted with
    ``conversion`` (:func:`nlsim.io.cells.model_texts`).

    >>> frame = pd.DataFrame({"text_a": ["颱風&#8226;"], "text_b": ["<b>登陸</b>"]})
    >>> as_model_reads(frame, "tw2sp").values.tolist()
    [['台风•', '登陆']]
    """
    out = frame.assign(text_a=model_texts(frame["text_a"].astype(str), conversion))
    out["text_b"] = model_texts(frame["text_b"].astype(str), conversion)
    return out


def _warn_repeated(
    frame: pd.DataFrame,
    repeated: list[tuple[int, int]],
    source: str | Path,
    shown: int,
    conversion: str | None,
) -> None:
    """Say the rows :func:`count_once` leaves out, ``repeated`` (each row and the row it repeats, from 1):
    compared as written, or as the model reads them (``conversion``), which may give them another score."""
    scores: dict[int, float] = {}
    if conversion is not None and "score" in frame.columns:
        scores = {int(i) + 1: float(v) for i, v in zip(frame.index, frame["score"], strict=True)}
    listed = ", ".join(
        f"row {row} (row {first}'s pair{_other_score(scores, row, first)})" for row, first in repeated[:shown]
    )
    why = "(same split, same score) and are counted once"
    if conversion is not None:
        why = f"in the same split{_as_the_model_reads(conversion)}, and are counted once, the first row kept"
    more = f" and {len(repeated) - shown} more" if len(repeated) > shown else ""
    warn(f"{source}: {len(repeated)} row(s) repeat the pair of an earlier row {why}: {listed}{more}")


def _other_score(scores: dict[int, float], row: int, first: int) -> str:
    """``", score 0.5 here, 1 there"`` where ``scores`` (by row, from 1) scores the rows ``row`` and
    ``first`` otherwise; else nothing."""
    if row not in scores or first not in scores or math.isclose(scores[row], scores[first], abs_tol=1e-9):
        return ""
    return f", score {scores[row]:g} here, {scores[first]:g} there"


_PINNED: ContextVar[dict[Path, tuple[str, str, Path]] | None] = ContextVar("nlsim_pinned_pairs", default=None)
"""The files the run of this context holds to the bytes it read first (:func:`pinned`): resolved path ->
(SHA-256, or :data:`NO_FILE`; what a refusal leaves undone; the pair file it was pinned with); a context's
own, so that two runs in one process never share one."""
NO_FILE = "(no file)"
"""The digest :func:`pinned` holds for a file that was absent when it was pinned (a pair file's verdict
store not yet written): its appearing is a change too."""


def _digest(path: Path) -> str:
    return file_sha256(path) if path.is_file() else NO_FILE


def _said(digest: str) -> str:
    return "no file" if digest == NO_FILE else f"SHA-256 {digest[:12]}"


@contextmanager
def pinned(path: str | Path, then: str, also: Iterable[str | Path] = ()) -> Iterator[str]:
    """Hold the pair file ``path`` to its present bytes while the block runs: every :func:`load_pairs` of
    it in the block (the run's own reads, its training's and its report's, each of which reads the file
    again) checks the file's SHA-256 against the one taken now and raises :class:`StateError` naming the
    file when it changed, so that a run that reads a pair file more than once never trains, evaluates or
    judges on two versions of it. ``also``: other files read with it (its verdict store, whose reader calls
    :func:`check_pinned`), held the same way; one absent now must stay absent. ``then`` says what the
    refusal leaves undone (``"nothing is promoted"``); a caller that gets further changes it with
    :func:`pin_note`. Yields the pair file's digest (:func:`pinned_digest` gives each file's).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "pairs.tsv"
        >>> _ = p.write_text("text_a\\ttext_b\\tscore\\nA\\tB\\t0.5\\n", encoding="utf-8")
        >>> with pinned(p, "nothing is done"):  # doctest: +ELLIPSIS
        ...     _ = p.write_text("text_a\\ttext_b\\tscore\\nA\\tB\\t0.75\\n", encoding="utf-8")
        ...     load_pairs(p)
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: ...pairs.tsv changed during the run ...; nothing is done. ...
    """
    key = Path(path).resolve()
    held = {Path(f).resolve(): (_digest(Path(f)), then, key) for f in [path, *also]}
    token = _PINNED.set({**(_PINNED.get() or {}), **held})
    try:
        yield held[key][0]
    finally:
        _PINNED.reset(token)


def pin_note(path: str | Path, then: str) -> None:
    """What a refusal of the pinned pair file ``path``, or of a file pinned with it (:func:`pinned`), leaves
    undone from now on."""
    key = Path(path).resolve()
    pins = dict(_PINNED.get() or {})
    for f, (digest, _, group) in pins.items():
        if group == key:
            pins[f] = (digest, then, group)
    _PINNED.set(pins)


def pinned_digest(path: str | Path) -> str | None:
    """The SHA-256 of ``path`` when it was pinned (:func:`pinned`); ``None`` when it was absent then or is
    not pinned."""
    held = (_PINNED.get() or {}).get(Path(path).resolve())
    return None if held is None or held[0] == NO_FILE else held[0]


def check_pinned(path: str | Path) -> None:
    """Raise :class:`StateError` when the file ``path`` (a pair file or its verdict store) is pinned
    (:func:`pinned`) and its bytes are no longer the ones the run read first."""
    held = (_PINNED.get() or {}).get(Path(path).resolve())
    if held is None:
        return
    digest, then, _ = held
    now = _digest(Path(path))
    if now != digest:
        raise StateError(
            f"{path} changed during the run ({_said(digest)} when the run read it first, now {_said(now)}): "
            "the run trains, evaluates and judges on the pairs and verdicts it read first, and stops rather "
            f"than mix two versions of them; {then}. Run again to use the file as it is now"
        )


def split_counts(frame: pd.DataFrame) -> str:
    """What a pair table holds by split, for an error that finds none in the one asked for.

    Example:
        >>> split_counts(pd.DataFrame({"split": ["train", "train", "test"]}))
        ' (the file holds train: 2, test: 1)'
        >>> split_counts(pd.DataFrame({"split": ["", ""]}))
        " (no pair names its split: give the file a 'split' column of train, validation, test)"
    """
    counts = frame["split"].fillna("").astype(str).str.strip().value_counts()
    if counts.empty:
        return " (the file holds no pairs)"
    if counts.index.tolist() == [""]:
        return f" (no pair names its split: give the file a 'split' column of {', '.join(SPLITS)})"
    return " (the file holds " + ", ".join(f"{name or 'no split'}: {n}" for name, n in counts.items()) + ")"


def annotations_digest(pairs: pd.DataFrame) -> str:
    """SHA-256 of the pairs' content (id, texts, score, split), independent of file layout and row order:
    what a model or a learning curve was trained on.

    Example:
        >>> one = pd.DataFrame({"pair_id": ["p1", "p2"], "text_a": ["a", "c"], "text_b": ["b", "d"],
        ...                     "score": [0.5, 1], "split": ["train", "test"]})
        >>> annotations_digest(one) == annotations_digest(one.iloc[::-1])
        True
        >>> annotations_digest(one) == annotations_digest(one.assign(score=[0.75, 1]))
        False
    """
    cols = ["pair_id", "text_a", "text_b", "score", "split"]
    rows = pairs[cols].astype({"score": float}).sort_values("pair_id", kind="mergesort")
    h = hashlib.sha256()
    for r in rows.itertuples(index=False):
        h.update("\x1f".join([str(r.pair_id), r.text_a, r.text_b, f"{r.score:.6g}", str(r.split)]).encode())
        h.update(b"\x1e")
    return h.hexdigest()
