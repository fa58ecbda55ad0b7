"""The editors' file: the CSV an editor fills and ``nlsim annotate merge`` reads.

Two things write it: ``nlsim annotate draw`` (pairs drawn for an editor, ``score`` left empty) and the
report page's export (the pairs an editor marked, ``score`` filled). One format for both
(:data:`COLUMNS`): the pair's id, the two items' ids and texts, the model's score of the pair
(``similarity``, empty when no model scored it), where the pair came from (``stratum``), the editor's
``score`` (a rubric level), ``annotator`` and ``notes``, and the model (version) and threshold that showed
the pair. The report page's export adds the texts' hashes (:data:`HASH_COLUMNS`), when each mark was made
(:data:`MARKED_AT`) and whether the editor means to overrule (:data:`OVERRULE`).

A pair's id is made from its two item ids alone (:func:`pair_id`), in either order: the same pair gets the
same id in every draw and every export, and two different pairs never share one. The report page computes
the same id in the browser (SHA-256 of the same bytes).

Once merged, a pair's ``stratum`` starts with :data:`MERGED` (``editor-loop:``); a pair marked in the report
page has ``report-page:`` after it. :func:`editor_labels` counts them per split (what a model's record and
its report page say it was trained on), and the training pairs an editor overruled apart.

Example:
    >>> pair_id("thuc-00012", "thuc-00345") == pair_id("thuc-00345", "thuc-00012")
    True
    >>> pair_id("thuc-00012", "thuc-00345")
    'ed-c832f1e7942d6bc3'
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

COLUMNS = (
    "pair_id",
    "id_a",
    "id_b",
    "text_a",
    "text_b",
    "similarity",
    "stratum",
    "score",
    "annotator",
    "notes",
    "model",
    "threshold",
)
"""The columns of an editors' file, in order."""
HASH_COLUMNS = ("sha256_a", "sha256_b")
"""Appended to :data:`COLUMNS` by the report page's export: :func:`text_sha256` of ``text_a`` and ``text_b``
as the page showed them (before any spreadsheet escaping), so that a merge can tell a text edited on the
way (a spreadsheet that ran a formula, a typo fixed by hand). A file with or without them is an editors'
file."""
MARKED_AT = "marked_at"
"""Appended by the report page's export after :data:`HASH_COLUMNS`: when the editor made the mark (ISO 8601
with its offset, as the browser's clock gave it). A merge dates the row's decision by it, so that of two
decisions on a pair the newer mark stands, whichever file is merged first (an old mark exported again never
undoes a newer decision; an editor's score given again, in a new mark, is a new one). An export of an
older page has no such column: its decisions are dated when merged. Read by :func:`mark_time`."""
OVERRULE = "overrule"
"""Appended by the report page's export after :data:`HASH_COLUMNS` (and :data:`MARKED_AT`) when one of its
marks overrules: ``true`` on a mark an editor made on a training pair an annotator already scored, meaning
to overrule its score with a newer decision (``nlsim annotate merge`` takes such a row as ``--overrule``
takes every row: :mod:`nlsim.clusters.verdicts.overrule`), ``false`` (or empty) on the others. An export of
no such mark has no ``overrule`` column. Read by :func:`overrule_cell`."""
KEPT = ("stratum", "annotator", "notes")
"""Columns of an editors' file that a merge keeps in the pair file beside the pairs (added, empty for the
older rows, when the pair file has none and the editors' file has values). The model and threshold that
showed a pair stay in the editors' file, kept as delivered (``annotations/batch*/``)."""
MERGED = "editor-loop"
"""``stratum`` prefix of the pairs ``nlsim annotate merge`` added."""
PAGE = "report-page"
"""``stratum`` of the pairs marked in the report page (``report-page:<where the pair was shown>``)."""
PAIR_ID_PREFIX = "ed-"
ESCAPED_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""A text cell beginning with one of these is written with an apostrophe in front, so that a spreadsheet
keeps it as text instead of running it as a formula (``nlsim.report.spreadsheet.csv_text``, the page's
export); :func:`unescape` reads such a cell back. OWASP's ``=``, ``+``, ``-``, ``@``, tab and carriage
return, and the full-width ``＝``, ``＋``, ``－``, ``＠`` (U+FF1D, U+FF0B, U+FF0D, U+FF20, as a CJK input
method types them), which Excel in a Japanese or Chinese setting reads as a formula as it reads ``=``
(``＝cmd|' /C calc'!A0`` runs: OWASP www-community issue 1088)."""


FORMULA_BLANKS = (
    " \n\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029"
    "\u202f\u205f\u3000\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d"
    "\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
"""What may come before a formula's start (:data:`ESCAPED_START`) in a cell a spreadsheet still runs: the
spaces (a space, a line feed, a no-break or an ideographic space) that a spreadsheet trimming a cell
before reading it (LibreOffice's "trim spaces", a cleanup) takes off, and the characters that show
nothing (a byte-order mark U+FEFF, a zero-width space U+200B, a joiner, a direction mark or isolate, a
soft hyphen), which a reader cannot see in front of the ``=``."""


def runs_as_formula(text: str) -> bool:
    """Whether a spreadsheet may run ``text`` as a formula: it starts with :data:`ESCAPED_START`, or does
    after :data:`FORMULA_BLANKS` (``" =x"``, ``"\\ufeff=x"``, ``"\\u200b+1"``).

    >>> runs_as_formula("=x"), runs_as_formula("\u200b\u3000=x"), runs_as_formula("a =x")
    (True, True, False)
    """
    return text.startswith(ESCAPED_START) or text.lstrip(FORMULA_BLANKS).startswith(ESCAPED_START)


def escape(cell: str) -> str:
    """``cell`` as written into an editors' file: an apostrophe in front of a text a spreadsheet would run
    as a formula (:func:`runs_as_formula`), as ``pairs.csv`` and the page's export write it, and in front of
    one that begins with apostrophes before such a start (an id ``'=x`` is written ``''=x``), so that it
    is never read as the other text escaped (``=x`` is written ``'=x``).

    >>> escape("=1+1"), escape("Floods"), unescape(escape("-5% today")), escape("'quoted'")
    ("'=1+1", 'Floods', '-5% today', "'quoted'")
    >>> escape("'=x"), unescape(escape("'=x")), unescape(escape("=x"))
    ("''=x", "'=x", '=x')
    """
    return "'" + cell if runs_as_formula(cell.lstrip("'")) else cell


def unescape(cell: str) -> str:
    """``cell`` without the one apostrophe :func:`escape` put in front.

    >>> unescape("'=1+1"), unescape("'-5% today"), unescape("'quoted'"), unescape("=1+1")
    ('=1+1', '-5% today', "'quoted'", '=1+1')
    """
    return cell[1:] if cell.startswith("'") and runs_as_formula(cell.lstrip("'")) else cell


def overrule_cell(value: Any) -> bool | None:
    """What an :data:`OVERRULE` cell says: ``True`` (``true``, ``yes``, ``1``, in any case, as a spreadsheet
    may save it), ``False`` (``false``, ``no``, ``0``, empty), ``None`` for anything else.

    >>> overrule_cell("TRUE"), overrule_cell(""), overrule_cell(0), overrule_cell("maybe")
    (True, False, False, None)
    """
    if value is None or (isinstance(value, float) and value != value):
        return False
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "1.0"):
        return True
    if text in ("false", "no", "0", "0.0", ""):
        return False
    return None


def mark_time(value: Any) -> datetime | str:
    """The time a :data:`MARKED_AT` cell says (timezone-aware), or why the cell is not one.

    >>> mark_time("2026-03-02T08:15:00.000Z").isoformat()
    '2026-03-02T08:15:00+00:00'
    >>> mark_time("2026-03-02T08:15")
    'has no offset (write it as the page does: 2026-03-02T08:15:00.000Z)'
    """
    text = "" if value is None or (isinstance(value, float) and value != value) else str(value).strip()
    if not text:
        return "is empty (the time the mark was made: the page writes one for every mark)"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return "is not a time (ISO 8601, such as 2026-03-02T08:15:00.000Z)"
    if when.tzinfo is None:
        return "has no offset (write it as the page does: 2026-03-02T08:15:00.000Z)"
    return when


def pair_id(id_a: Any, id_b: Any) -> str:
    """The id of the pair of items ``id_a`` and ``id_b`` (either order): ``ed-`` and the first 16 hex
    digits of the SHA-256 of the two ids, in code point order, joined by U+001F."""
    lo, hi = sorted((str(id_a), str(id_b)))
    return PAIR_ID_PREFIX + hashlib.sha256(f"{lo}\x1f{hi}".encode()).hexdigest()[:16]


def text_sha256(text: str) -> str:
    """The lowercase hex SHA-256 of ``text``'s UTF-8 bytes (:data:`HASH_COLUMNS`); the report page
    computes the same in the browser.

    >>> text_sha256("颱風")[:16]
    'a9b51c256b3e8e06'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_editors_header(columns: Any) -> bool:
    """Whether ``columns`` are exactly an editors' file's: :data:`COLUMNS`, with or without
    :data:`HASH_COLUMNS` (then :data:`MARKED_AT` and :data:`OVERRULE`, each with or without) after them (a
    pair file a merge wrote has a ``split``).

    >>> is_editors_header(COLUMNS), is_editors_header([*COLUMNS, "split"])
    (True, False)
    """
    page = [*COLUMNS, *HASH_COLUMNS]
    exports = (list(COLUMNS), page, [*page, OVERRULE], [*page, MARKED_AT], [*page, MARKED_AT, OVERRULE])
    return [str(c) for c in columns] in exports


def scores_held(path: str | Path) -> int | None:
    """How many filled ``score`` cells the editors' file ``path`` holds; ``None`` when ``path`` is not an
    editors' file (its header is not one :func:`is_editors_header` knows, or it cannot be read as CSV).

    ``nlsim annotate draw`` replaces an existing ``--out`` only when this is 0: a drawn file nobody has
    scored yet. Anything else is the user's (or an editor's work) and is kept.
    """
    from nlsim.errors import NlsimError
    from nlsim.io.tables import read_table

    try:
        frame = read_table(path, allowed=("csv",))
    except (NlsimError, OSError, ValueError):
        return None
    if not is_editors_header(frame.columns):
        return None
    return int(sum(1 for v in frame["score"] if str(v).strip() != ""))


@dataclass
class EditorLabels:
    """How many of a model's annotated pairs came through the editors' loop, per split."""

    merged: dict[str, int] = field(default_factory=dict)
    """Pairs added by ``nlsim annotate merge`` (drawn files and report-page exports)."""
    from_page: dict[str, int] = field(default_factory=dict)
    """Of those, the pairs marked in a report page."""
    overruled: dict[str, int] = field(default_factory=dict)
    """The training pairs read with an editor's newer score over the pair file's (an overrule: the verdict
    store holds it, the pair file keeps the annotators' score and row), counted apart from :attr:`merged`:
    a pair an editor's file added and another editor overruled since is in both."""

    def as_dict(self) -> dict[str, dict[str, int]]:
        return asdict(self)


def editor_labels(pairs: pd.DataFrame, overruled: int = 0) -> EditorLabels:
    """Count the merged and the report-page pairs of ``pairs`` per split (by their ``stratum``), and the
    ``overruled`` training pairs among them (read with an editor's newer score: the stratum does not say it).

    Example:
        >>> frame = pd.DataFrame({"split": ["train", "train", "validation"], "stratum": [
        ...     "lex-high", "editor-loop:report-page:near-miss", "editor-loop:e5"]})
        >>> editor_labels(frame, overruled=1)
        EditorLabels(merged={'train': 1, 'validation': 1}, from_page={'train': 1}, overruled={'train': 1})
    """
    over = {"train": int(overruled)} if overruled else {}
    if "stratum" not in pairs.columns or "split" not in pairs.columns:
        return EditorLabels(overruled=over)
    stratum = pairs["stratum"].fillna("").astype(str)
    merged = stratum.str.startswith(MERGED + ":") | (stratum == MERGED)
    page = stratum.str.startswith(f"{MERGED}:{PAGE}")
    splits = pairs["split"].fillna("").astype(str)
    return EditorLabels(
        merged={str(k): int(v) for k, v in splits[merged].value_counts().sort_index().items()},
        from_page={str(k): int(v) for k, v in splits[page].value_counts().sort_index().items()},
        overruled=over,
    )
