"""The report's tables, column by column: one declaration each drives every file and view of a table.

A report has four tables of its own (:data:`TABLES`):

- ``items``: one row per item of a run's window; the daily state's ``items.parquet``, the page's items
  (the columns marked ``shown``) and what a report reads of each item;
- ``pairs``: one row per pair at or above the threshold (``pairs.parquet``, ``pairs.csv``);
- ``clusters``: one row per cluster (``clusters.parquet``, ``window/clusters.parquet``);
- ``near_misses``: the best pairs below the threshold (``near_misses.parquet``);

and ``members`` (``members.csv``), one row per member of a cluster, for spreadsheet users.

Each :class:`Column` says its name, its Arrow type, where its value comes from, its label on the page and
in the short tables, its spreadsheet format and whether the page shows it. From that one declaration come
the Parquet schemas (:meth:`Table.schema`), the pandas frames of the daily state (:meth:`Table.empty`), the
spreadsheet cells of ``pairs.csv``, ``members.csv`` and ``report.xlsx`` (:func:`sheet_frame`), the page's
rows (objects keyed by column name, :func:`page_rows`) and its tables' headers and cells (the declarations
go to the page with the rows, :func:`page_spec`), and the short tables of ``summary.md`` and the Prefect
artifacts (:func:`summary_rows`).

A ``clusters`` column made from its cluster's members declares how (``reduce``, one of :data:`REDUCE`):
the representative's value, every member's, the distinct values, the earliest or latest, the highest, mean
or weakest link's score. :func:`nlsim.clusters.table.cluster_table` computes every such column from its
declaration, for ``clusters.parquet`` and so for the page, ``summary.md`` and the artifacts; the page's
preview of a split cluster applies the same reductions to the pieces.

The pairs, near-miss and members tables end with what an editor reads of each item: the ``items`` columns
marked ``shown`` (the id aside), once per side (``title_a``, ``title_b``, ...) or once (members). A column
added to ``items`` with ``source="corpus.<field>"`` and ``shown=True`` is read from the corpus, kept in the
daily state and appears in every pairs table, in ``members.csv``, in ``report.xlsx`` and on the page,
with no other change; a column added to ``clusters`` with ``source="item.<column>"`` and a ``reduce`` is
computed for every cluster, and appears in ``clusters.parquet``, ``report.xlsx``, the daily state, on the
page (``shown``) and in the short tables (``summary``), with no other change either.

Example:
    >>> [c.name for c in table("pairs").columns][:6]
    ['id_a', 'id_b', 'similarity', 'cosine', 'cross_encoder', 'cluster_id']
    >>> table("items").column("published_at").format, table("pairs").column("title_b").label
    ('time', 'title of B')
    >>> str(table("clusters").schema.field("member_ids").type)
    'list<item: string>'
    >>> c = table("clusters").column("first_published"); c.source, c.reduce
    ('item.published_at', 'min')
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa

from nlsim.io.cells import invisible_only

TS = pa.timestamp("us", tz="UTC")
"""Every time of a report: microseconds, UTC."""
FORMATS = ("text", "link", "number", "integer", "flag", "time", "list")
"""Spreadsheet formats (and how the page shows a value): ``text`` (kept as text, never a formula), ``link``
(text; on the page only an absolute http(s) URL), ``number`` (a score; rounded to 4 decimals on the
page), ``integer``, ``flag`` (true/false), ``time`` (ISO 8601 with the offset of the run's time zone in a
spreadsheet, ``2024-08-01T16:00:00+08:00``, as ``stories.json`` has it; ``YYYY-MM-DD HH:MM`` in the run's
time zone on the page), ``list`` (comma separated in a spreadsheet)."""
REDUCE = ("representative", "all", "added", "distinct", "min", "max", "mean", "weakest")
"""How a ``clusters`` column is made from its cluster (``Column.reduce``): of the members' values of its
``item.<column>`` source, ``representative`` (the representative's), ``all`` (every member's, earliest
first), ``added`` (those of the members that joined in this run), ``distinct`` (the distinct non-empty
values, sorted), ``min`` and ``max`` (the lowest and highest, missing ones aside); of the scores of the
links inside the cluster (``source="score"``), ``max``, ``mean`` and ``weakest`` (the lowest score on the
strongest spanning tree: the link the cluster hangs on). Computed by :mod:`nlsim.clusters.table`."""
SCORE_REDUCE = ("max", "mean", "weakest")
"""The reductions of a column of ``source="score"``."""
PAGE_TIME = "%Y-%m-%d %H:%M"


@dataclass(frozen=True)
class Column:
    """One column of a report table.

    ``source`` says where its value comes from: ``corpus.<field>`` (the corpus row, for ``items``),
    ``item.<column>`` (an ``items`` column of one side of a pair, or of a member), ``score`` (the search and
    the rerank), ``cluster`` (the cluster rule), ``run`` (the run itself: ids, hashes, run ids).
    ``label``: the words the page and the short tables use. ``format``: one of :data:`FORMATS`.
    ``shown``: an ``items`` column the report shows of each item (the pairs' sides, members, the page);
    a column of another table that the page shows (a column of ``source="item.id"`` holds items, which the
    page shows by their title).
    ``summary``: in the short tables (``summary.md``, the Prefect artifact of the clusters).
    ``reduce``: a ``clusters`` column made from its members' values or its links' scores (:data:`REDUCE`).
    """

    name: str
    type: pa.DataType
    source: str
    label: str
    format: str = "text"
    shown: bool = False
    summary: bool = False
    doc: str = ""
    reduce: str = ""

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"column {self.name}: unknown format {self.format!r}; choose from {FORMATS}")
        if self.reduce and self.reduce not in REDUCE:
            raise ValueError(f"column {self.name}: unknown reduce {self.reduce!r}; choose from {REDUCE}")
        if self.reduce and self.source == "score" and self.reduce not in SCORE_REDUCE:
            raise ValueError(f"column {self.name}: a score reduces by {SCORE_REDUCE}, not {self.reduce!r}")
        if self.reduce and self.source != "score" and not self.source.startswith("item."):
            raise ValueError(f"column {self.name}: only an item.<column> or a score column reduces")

    @property
    def item_field(self) -> str | None:
        """The ``items`` column the column's values come from (``source="item.<column>"``), else ``None``."""
        return self.source.split(".", 1)[1] if self.source.startswith("item.") else None

    @property
    def corpus_field(self) -> str | None:
        """The corpus field the column is read from (``source="corpus.<field>"``), else ``None``."""
        return self.source.split(".", 1)[1] if self.source.startswith("corpus.") else None

    @property
    def dtype(self) -> Any:
        """The pandas dtype of the column in memory (the daily state's frames)."""
        t = self.type
        if pa.types.is_timestamp(t):
            return "datetime64[ns, UTC]"
        if pa.types.is_floating(t):
            return "float32" if t == pa.float32() else "float64"
        if pa.types.is_integer(t):
            return "int64"
        if pa.types.is_boolean(t):
            return "bool"
        return object


@dataclass(frozen=True)
class Table:
    """A report table: its name and columns, in file order."""

    name: str
    columns: tuple[Column, ...]
    doc: str = ""

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the table's Parquet file."""
        return pa.schema([(c.name, c.type) for c in self.columns])

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name} has no column {name!r}")

    def empty(self) -> pd.DataFrame:
        """The table with no row, each column of its in-memory dtype."""
        return pd.DataFrame({c.name: pd.Series(dtype=c.dtype) for c in self.columns})

    def adding(self, *columns: Column) -> Table:
        """This table with ``columns`` appended."""
        return replace(self, columns=(*self.columns, *columns))

    @property
    def labels(self) -> dict[str, str]:
        """Each column's label (the page's headers)."""
        return {c.name: c.label for c in self.columns}


def _col(name: str, type_: pa.DataType, source: str, label: str, fmt: str = "text", **kw: Any) -> Column:
    return Column(name, type_, source, label, fmt, **kw)


ITEMS = Table(
    "items",
    (
        _col("id", pa.string(), "corpus.id", "item", shown=True),
        _col("content_hash", pa.string(), "run", "text hash"),
        _col("title", pa.string(), "corpus.title", "title", shown=True),
        _col("source", pa.string(), "corpus.source", "source", shown=True),
        _col("url", pa.string(), "corpus.url", "link", "link", shown=True),
        _col("published_at", TS, "corpus.published_at", "published", "time", shown=True),
        _col("retain_from", TS, "run", "kept from", "time"),
        _col("first_seen_run", pa.string(), "run", "first seen in run"),
        _col("embedded_run", pa.string(), "run", "embedded in run"),
        _col("raw_text", pa.string(), "run", "text embedded"),
        _col("cluster_id", pa.string(), "cluster", "cluster"),
        _col("topic_id", pa.string(), "cluster", "topic"),
    ),
    "The items of a run's window (the daily state's items.parquet, rows aligned with the index).",
)
SCORES = (
    _col("similarity", pa.float32(), "score", "score", "number", shown=True),
    _col("cosine", pa.float32(), "score", "cosine", "number", shown=True),
    _col("cross_encoder", pa.float32(), "score", "cross-encoder", "number", shown=True),
)
"""``similarity``: the score the threshold applies to (the rerank score when the model has a reranker, else
the cosine); ``cosine``: the bi-encoder's; ``cross_encoder``: null without a reranker."""
PAIR_ENDS = (
    _col("id_a", pa.string(), "item.id", "item A", shown=True),
    _col("id_b", pa.string(), "item.id", "item B", shown=True),
)
_TEXT, _TEXTS, _SCORE = pa.string(), pa.list_(pa.string()), pa.float32()
CLUSTERS = Table(
    "clusters",
    (
        _col("cluster_id", _TEXT, "cluster", "cluster", shown=True, summary=True),
        _col("topic_id", _TEXT, "item.topic_id", "topic", shown=True, summary=True, reduce="representative"),
        _col("status", _TEXT, "cluster", "status", shown=True, summary=True),
        _col("size", pa.int64(), "cluster", "size", "integer", shown=True, summary=True),
        _col("representative", _TEXT, "item.id", "representative item", shown=True, reduce="representative"),
        _col(
            "representative_title",
            _TEXT,
            "item.title",
            "representative",
            summary=True,
            reduce="representative",
        ),
        _col("member_ids", _TEXTS, "item.id", "members", "list", shown=True, reduce="all"),
        _col("added_ids", _TEXTS, "item.id", "added", "list", shown=True, summary=True, reduce="added"),
        _col("absorbed", _TEXTS, "cluster", "absorbed", "list", shown=True),
        _col("sources", _TEXTS, "item.source", "sources", "list", shown=True, reduce="distinct"),
        _col("first_published", TS, "item.published_at", "first published", "time", shown=True, reduce="min"),
        _col("last_published", TS, "item.published_at", "last published", "time", shown=True, reduce="max"),
        _col(
            "max_similarity", _SCORE, "score", "max score", "number", shown=True, summary=True, reduce="max"
        ),
        _col("mean_similarity", _SCORE, "score", "mean score", "number", reduce="mean"),
        _col("weakest_link", _SCORE, "score", "weakest link", "number", shown=True, reduce="weakest"),
    ),
    "clusters.parquet: status new/grown/merged (a batch run's clusters are all new; after a model change "
    "also regrouped, and dissolved for a cluster the new model broke up: listed last, with the members it "
    "had), added_ids the members that joined in this run, absorbed the cluster ids merged into this one, "
    "weakest_link the lowest score among the links that hold the cluster together; topic_id the topic group "
    "the story belongs to (null: none).",
)
TOPICS = Table(
    "topics",
    (
        _col("topic_id", pa.string(), "cluster", "topic", shown=True, summary=True),
        _col("size", pa.int64(), "cluster", "items", "integer", shown=True, summary=True),
        _col("stories", pa.int64(), "cluster", "stories", "integer", shown=True, summary=True),
        _col("cluster_ids", pa.list_(pa.string()), "cluster", "story clusters", "list", shown=True),
        _col("member_ids", pa.list_(pa.string()), "item.id", "items", "list", shown=True),
        _col("representative", pa.string(), "item.id", "representative item", shown=True),
        _col("representative_title", pa.string(), "item.title", "representative", summary=True),
        _col("first_published", TS, "item.published_at", "first published", "time", shown=True),
        _col("last_published", TS, "item.published_at", "last published", "time", shown=True),
    ),
    "topics.parquet: one row per topic group, the stories and single items that share a topic and entity "
    "(nlsim.clusters.topics): its story clusters, its items, the earliest item as its representative; "
    "stories counts its story clusters and its single items (a story of one).",
)
MEMBER_OWN = (
    _col("cluster_id", pa.string(), "cluster", "cluster"),
    _col("topic_id", pa.string(), "cluster", "topic"),
    _col("item_id", pa.string(), "item.id", "item"),
    _col("representative", pa.bool_(), "cluster", "representative", "flag"),
    _col("added", pa.bool_(), "cluster", "added in this run", "flag"),
)
TABLES: dict[str, Table] = {"items": ITEMS, "clusters": CLUSTERS, "topics": TOPICS}
"""The declared tables; ``pairs``, ``near_misses`` and ``members`` are made from them (:func:`table`)."""


def shown(items: Table | None = None) -> list[Column]:
    """The ``items`` columns the report shows of each item, the id aside (the sides of a pair)."""
    items = items or TABLES["items"]
    return [c for c in items.columns if c.shown and c.name != "id"]


def _side(c: Column, side: str) -> Column:
    return replace(
        c, name=f"{c.name}_{side}", source=f"item.{c.name}", label=f"{c.label} of {side.upper()}", shown=False
    )


def sides(items: Table | None = None) -> list[Column]:
    """The trailing columns of every pairs table: what an editor reads of each item, field by field
    (``title_a``, ``title_b``, ``source_a``, ...)."""
    return [_side(c, s) for c in shown(items) for s in ("a", "b")]


def table(name: str) -> Table:
    """The report table ``name`` as declared now (``items``, ``pairs``, ``clusters``, ``topics``,
    ``near_misses``, ``members``)."""
    if name in TABLES:
        return TABLES[name]
    if name == "pairs":
        cluster = _col("cluster_id", pa.string(), "cluster", "cluster")
        copy = _col("exact_copy", pa.bool_(), "score", "exact copy", "flag")
        return Table(
            "pairs",
            (*PAIR_ENDS, *SCORES, cluster, copy, *sides()),
            "pairs.parquet: id_a is the earlier item by the order rule (nlsim.clusters.order); exact_copy "
            "true for the link of an exact copy to its group's first item (the same text once normalised, "
            "within --window-hours of that item; linked before any score, similarity 1, no cross-encoder "
            "score: nlsim.clusters.copies); the same text further apart is scored as any pair.",
        )
    if name == "near_misses":
        ends = (
            _col("cluster_a", pa.string(), "cluster", "cluster of A", shown=True),
            _col("cluster_b", pa.string(), "cluster", "cluster of B", shown=True),
        )
        return Table(
            "near_misses",
            (*PAIR_ENDS, *SCORES, *ends, *sides()),
            "near_misses.parquet: the columns of pairs.parquet, with the cluster of each item (null for an "
            "item in no cluster) instead of the pair's; rows nearest the threshold first.",
        )
    if name == "members":
        members = [replace(c, source=f"item.{c.name}", shown=False) for c in shown()]
        return Table("members", (*MEMBER_OWN, *members), "members.csv: one row per member, earliest first.")
    raise KeyError(
        f"no report table {name!r}; choose from items, pairs, clusters, topics, near_misses, members"
    )


def conform(frame: pd.DataFrame, columns: Table | pa.Schema) -> pa.Table:
    """``frame`` as an Arrow table of the table's schema (missing columns null, extra columns dropped)."""
    schema = columns.schema if isinstance(columns, Table) else columns
    data = {}
    for f in schema:
        col = frame[f.name] if f.name in frame else pd.Series([None] * len(frame), dtype=object)
        if pa.types.is_timestamp(f.type):
            col = pd.to_datetime(col, utc=True)
        elif pa.types.is_list(f.type):
            col = col.map(lambda v: [] if _missing(v) else [str(x) for x in v])
        elif pa.types.is_string(f.type):
            col = col.map(lambda v: None if _missing(v) else str(v))
        data[f.name] = pa.array(
            col.to_numpy() if not pa.types.is_list(f.type) else col.tolist(), type=f.type, from_pandas=True
        )
    return pa.Table.from_pydict(data, schema=schema)


def _missing(v: Any) -> bool:
    if v is None or v is pd.NaT:
        return True
    return isinstance(v, float) and np.isnan(v)


SHEET_CELL_CHARACTERS = 32_767
"""The most characters a spreadsheet cell holds, counted as Excel counts them: UTF-16 code units
(:func:`cell_length`)."""


def cell_length(text: str) -> int:
    """How many characters a spreadsheet counts in ``text``: its UTF-16 code units (a character outside the
    Basic Multilingual Plane, an emoji, is two).

    >>> cell_length("Floods"), cell_length("\U0001f30a"), cell_length("\U00020000 north")
    (6, 2, 8)
    """
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


LIST_SEPARATOR = ", "
"""What separates the values of a spreadsheet's list cell (``report.xlsx``'s ``member_ids``, ``sources``)."""
_QUOTE_WHEN = re.compile(r'[,"\r\n]|^\s|\s$|^…|^$')
"""What a list cell's value is written in double quotes for (:func:`sheet_list_value`): a comma, a quote
or a line break, white space at either end, nothing at all, or the ``…`` a cell cut short ends with; and
so is a value of which no character shows (a zero-width space: :func:`nlsim.io.cells.invisible_only`)."""


def sheet_list_value(value: str) -> str:
    """One value of a list cell as the cell holds it: as it is, or, when it could be read as more than one
    value or as another (:data:`_QUOTE_WHEN`: ``Reuters, London``), in double quotes with each quote inside
    doubled, as a CSV file writes it, so that a reader sees where each value ends and
    ``csv.reader(..., skipinitialspace=True)`` splits the cell into its values.

    >>> sheet_list_value("AP"), sheet_list_value("Reuters, London"), sheet_list_value('The "Times" daily')
    ('AP', '"Reuters, London"', '"The ""Times"" daily"')
    >>> sheet_list_value(" "), sheet_list_value(""), sheet_list_value("\u200b")
    ('" "', '""', '"\u200b"')
    """
    quoted = _QUOTE_WHEN.search(value) or invisible_only(value) is not None
    return f'"{value.replace(chr(34), chr(34) * 2)}"' if quoted else value


def _sheet_list(v: Any) -> str:
    """A list as one spreadsheet cell, its values comma separated, each that holds a comma (or could be
    read otherwise) in double quotes (:func:`sheet_list_value`); one longer than a cell holds
    (:data:`SHEET_CELL_CHARACTERS`: the ids of a story or topic of thousands of items) ends on a whole value
    and says how many there are (``a, b, … (3000 in all)``: no comma in the count, which would split it),
    never a value cut in two.

    >>> _sheet_list(["a", "b"]), _sheet_list(None), _sheet_list(["Reuters, London", "AP"])
    ('a, b', '', '"Reuters, London", AP')
    >>> cell = _sheet_list([f"item-{i:06d}" for i in range(3_000)])
    >>> cell_length(cell) <= SHEET_CELL_CHARACTERS, cell[-28:]
    (True, 'item-002518, … (3000 in all)')
    >>> _sheet_list(["x" * 40_000])  # a single value longer than a cell: the count alone
    '… (1 in all)'
    """
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    values = [str(x) for x in v]
    kept = [sheet_list_value(x) for x in sheet_list_values(v)]
    if len(kept) == len(values):
        return LIST_SEPARATOR.join(kept)
    return LIST_SEPARATOR.join([*kept, f"… ({len(values)} in all)"])


def sheet_list_values(v: Any) -> list[str]:
    """The values of a list that its spreadsheet cell holds (:func:`_sheet_list`): all of them when they
    fit, else the first ones that fit beside the count.

    >>> sheet_list_values(["a", "b"]), len(sheet_list_values([f"item-{i:06d}" for i in range(3_000)]))
    (['a', 'b'], 2519)
    """
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return []
    values = [str(x) for x in v]
    lengths = [cell_length(sheet_list_value(x)) for x in values]
    gap = len(LIST_SEPARATOR)
    if sum(lengths) + gap * max(0, len(values) - 1) <= SHEET_CELL_CHARACTERS:
        return values
    more = f"{LIST_SEPARATOR}… ({len(values)} in all)"
    room, kept = SHEET_CELL_CHARACTERS - cell_length(more), 0
    for n, length in enumerate(lengths):
        room -= length + (gap if n else 0)
        if room < 0:
            break
        kept = n + 1
    return values[:kept]


def sheet_time(values: pd.Series, zone: str = "UTC") -> pd.Series:
    """Times as a spreadsheet's text: ISO 8601 to the second with ``zone``'s offset ('' for none).

    >>> sheet_time(pd.Series(["2024-08-01T08:00Z", None]), "Asia/Taipei").tolist()
    ['2024-08-01T16:00:00+08:00', '']
    """
    times = pd.to_datetime(values, utc=True).dt.tz_convert(zone)
    return times.map(lambda t: "" if pd.isna(t) else t.isoformat(timespec="seconds")).astype(object)


def sheet_frame(frame: pd.DataFrame, spec: Table, zone: str = "UTC") -> pd.DataFrame:
    """``frame`` as a spreadsheet's cells (``pairs.csv``, ``members.csv``, ``report.xlsx``): the table's
    columns in order (missing ones empty), times as text in ``zone`` (:func:`sheet_time`), lists comma
    separated (a value holding a comma in double quotes: :func:`sheet_list_value`); text stays text (the
    writers keep it from being read as a formula, :mod:`nlsim.report.spreadsheet`)."""
    out = pd.DataFrame(index=frame.index)
    for c in spec.columns:
        col = frame[c.name] if c.name in frame else pd.Series([None] * len(frame), index=frame.index)
        if c.format == "time":
            col = sheet_time(col, zone)
        elif c.format == "list":
            col = col.map(_sheet_list)
        out[c.name] = col
    return out


def safe_url(value: Any) -> str | None:
    """``value`` when it is an absolute http(s) URL, else ``None`` (no ``javascript:``, no relative links).

    >>> safe_url("https://example.com/a?b=1"), safe_url("javascript:alert(1)"), safe_url("nan")
    ('https://example.com/a?b=1', None, None)
    """
    if not isinstance(value, str):
        return None
    url = value.strip()
    if any(ch in url for ch in "\r\n\t ") or len(url) > 4096:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def page_time(value: Any, zone: tzinfo | None = None) -> str | None:
    """A time as the page shows it, ``YYYY-MM-DD HH:MM`` in ``zone`` (UTC by default; a time without a zone
    is UTC here: the corpus loader has already read a corpus's times without an offset in the run's zone
    and holds them in UTC); ``None`` when there is none. A time in an hour the clocks repeat (a
    daylight-saving fall-back) comes with its offset, ``YYYY-MM-DD HH:MM (UTC±HH:MM)``: its local time
    alone names two instants (:func:`repeated_time`).

    >>> from zoneinfo import ZoneInfo
    >>> page_time("2024-08-01T20:30Z"), page_time("2024-08-01T20:30Z", ZoneInfo("Asia/Taipei"))
    ('2024-08-01 20:30', '2024-08-02 04:30')
    >>> york = ZoneInfo("America/New_York")
    >>> page_time("2024-11-03T05:50Z", york), page_time("2024-11-03T06:10Z", york)
    ('2024-11-03 01:50 (UTC-04:00)', '2024-11-03 01:10 (UTC-05:00)')
    """
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    stamp = pd.Timestamp(value)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    local = stamp.tz_convert(zone or dt.UTC)
    shown = local.strftime(PAGE_TIME)
    if not repeated_time(local):
        return shown
    offset = local.strftime("%z")
    return f"{shown} (UTC{offset[:3]}:{offset[3:5]})"


def repeated_time(local: pd.Timestamp) -> bool:
    """Whether the clock time of ``local`` (a time in its zone) comes twice in its zone: it lies in the
    hour a daylight-saving fall-back repeats (01:00-02:00 of 2024-11-03 in America/New_York).

    >>> from zoneinfo import ZoneInfo
    >>> york = ZoneInfo("America/New_York")
    >>> [repeated_time(pd.Timestamp(t).tz_convert(york)) for t in ("2024-11-03T05:59Z", "2024-11-03T07:00Z")]
    [True, False]
    """
    wall, zone = local.to_pydatetime().replace(tzinfo=None), local.tzinfo
    return wall.replace(tzinfo=zone, fold=0).utcoffset() != wall.replace(tzinfo=zone, fold=1).utcoffset()


def _finite(value: Any) -> float | None:
    """``value`` as a finite float; ``None`` for a missing, non-numeric, NaN or infinite one."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def page_number(value: Any, digits: int = 4) -> float | None:
    """A score as the page's data holds it (rounded; ``None`` for a missing one)."""
    f = _finite(value)
    return None if f is None else round(f, digits)


def page_score(value: Any, digits: int = 6, threshold: float | None = None) -> float | None:
    """A score as the page's data holds it: cut to ``digits`` decimals toward minus infinity, never rounded
    up, so a score below a threshold of ``digits`` decimals or fewer stays below it (0.8813486 is 0.881348
    beside the threshold 0.881349, not 0.881349); a score that is the same float32 as a number of
    ``digits`` decimals (scores are float32: 0.95 is held as 0.949999988...) is that number. ``None`` for a
    missing one. ``threshold``: a score at or above it (as float32, as the run compared them) is never held
    below the threshold as the page holds it (:func:`page_threshold`): at a threshold of more decimals
    (0.8813486, a pair's own score) such a pair reads as the threshold (0.881349), never under it.

    >>> page_score(0.8813486), page_score(np.float32(0.95)), page_score(np.float32(0.881349))
    (0.881348, 0.95, 0.881349)
    >>> page_score(-0.1234567), page_score(1.0), page_score(None), page_score(float("nan"))
    (-0.123457, 1.0, None, None)
    >>> page_score(np.float32(0.8813486), threshold=0.8813486), page_score(0.8813484, threshold=0.8813486)
    (0.881349, 0.881348)
    """
    f = _finite(value)
    if f is None:
        return None
    scale = 10**digits
    if abs(f) * scale >= 2**52:  # no decimals to cut
        return f
    near = round(f * scale)
    held = near / scale if np.float32(near / scale) == np.float32(f) else math.floor(f * scale) / scale
    at = page_threshold(threshold, digits)
    if at is not None and held < at and np.float32(f) >= np.float32(threshold):
        return at  # at or above the threshold, never held below it
    return held


def page_threshold(value: Any, digits: int = 6) -> float | None:
    """A threshold as the page's data holds it: of ``digits`` decimals or fewer (as float32: scores are
    compared with it so), that number; of more, the next number of ``digits`` decimals above it, so that a
    score below the threshold, cut (:func:`page_score`), never reads as it. ``None`` for a missing one.

    >>> page_threshold(0.881349), page_threshold(np.float32(0.95)), page_threshold(0.8813486)
    (0.881349, 0.95, 0.881349)
    >>> page_threshold(0.8813481), page_threshold(None)
    (0.881349, None)
    """
    f = _finite(value)
    if f is None:
        return None
    scale = 10**digits
    if abs(f) * scale >= 2**52:
        return f
    near = round(f * scale)
    return near / scale if np.float32(near / scale) == np.float32(f) else math.ceil(f * scale) / scale


def page_text(value: Any) -> str:
    """A text cell as the page's data holds it (``""`` for a missing one)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def page_list(value: Any) -> list[str]:
    """A list cell (a list, or a NumPy array when read from Parquet) as the page's data holds it: a list of
    texts (``[]`` for a missing one)."""
    return [] if _missing(value) else [str(x) for x in value]


PAGE_FORMAT: Mapping[str, Callable[[Any], Any]] = {
    "text": page_text,
    "link": safe_url,
    "integer": lambda v: None if _missing(v) else int(v),
    "flag": lambda v: None if _missing(v) else bool(v),
    "list": page_list,
}
"""How the page's data holds a value of each format (``time`` and ``number``: :func:`page_value`)."""


def page_value(
    column: Column,
    value: Any,
    zone: tzinfo | None = None,
    digits: int = 4,
    cut: bool = False,
    threshold: float | None = None,
) -> Any:
    """``value`` of ``column`` as the page's data holds it (JSON: text, number, true/false, list, null):
    a time in ``zone`` (:func:`page_time`), a number rounded to ``digits`` (``cut``: cut there, never
    rounded up, nor below ``threshold`` when at or above it, :func:`page_score`)."""
    if column.format == "time":
        return page_time(value, zone)
    if column.format == "number":
        return page_score(value, digits, threshold) if cut else page_number(value, digits)
    return PAGE_FORMAT[column.format](value)


def page_rows(
    frame: pd.DataFrame,
    columns: Iterable[Column],
    zone: tzinfo | None = None,
    digits: int = 4,
    cut: bool = False,
    threshold: float | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``frame`` as the page's objects: each column's value under its name (times in ``zone``,
    numbers rounded to ``digits``; ``cut``: cut there, never below ``threshold`` when at or above it,
    :func:`page_score`)."""
    columns = [c for c in columns if c.name in frame]
    values = [frame[c.name].tolist() for c in columns]
    return [
        {
            c.name: page_value(c, v[n], zone, digits, cut, threshold)
            for c, v in zip(columns, values, strict=True)
        }
        for n in range(len(frame))
    ]


def page_spec(spec: Table) -> list[dict[str, Any]]:
    """The table's columns as the page's script reads them, to draw its tables' headers and cells: each
    column's name, label, format, whether the page shows it, its source and its reduction (a clusters
    column the page recomputes for a cluster split in its preview).

    >>> page_spec(table("clusters"))[10]
    {'name': 'first_published', 'label': 'first published', 'format': 'time', 'shown': True, \
'source': 'item.published_at', 'reduce': 'min'}
    """
    return [
        {"name": c.name, "label": c.label, "format": c.format, "shown": c.shown, "source": c.source}
        | ({"reduce": c.reduce} if c.reduce else {})
        for c in spec.columns
    ]


def summary_columns(frame: pd.DataFrame, spec: Table) -> list[Column]:
    """The table's ``summary`` columns that ``frame`` holds: the columns of the short tables."""
    return [c for c in spec.columns if c.summary and c.name in frame]


SUMMARY_TEXT = 120
"""The characters of a text cell a short table shows (a longer one ends in "…")."""
SUMMARY_LIST = 10
"""The items of a list cell a short table shows (a longer one says how many there are in all)."""


def summary_rows(frame: pd.DataFrame, spec: Table, limit: int = 100) -> list[dict[str, Any]]:
    """The first ``limit`` rows of ``frame`` with the table's ``summary`` columns, keyed by their labels,
    as short tables show them (``summary.md``, the Prefect artifact): lists comma separated, scores to 4
    decimals; a text cell cut at :data:`SUMMARY_TEXT` characters and a list at :data:`SUMMARY_LIST` items
    (the report's files keep them whole).

    >>> spec = table("clusters")
    >>> frame = pd.DataFrame({"cluster_id": ["c-1"], "representative_title": ["x" * 200],
    ...                       "added_ids": [[f"n{i}" for i in range(12)]]})
    >>> row = summary_rows(frame, spec)[0]
    >>> len(row["representative"]), row["representative"][-1], row["added"][-21:]
    (120, '…', 'n8, n9, … (12 in all)')
    """
    cols = summary_columns(frame, spec)
    rows = []
    for r in frame.head(limit).itertuples(index=False):
        row: dict[str, Any] = {}
        for c in cols:
            v = getattr(r, c.name)
            if c.format == "list":
                row[c.label] = _short_list(v)
            elif c.format == "time":
                row[c.label] = page_time(v)
            else:
                row[c.label] = page_value(c, v)
            if isinstance(row[c.label], str) and len(row[c.label]) > SUMMARY_TEXT and c.format != "list":
                row[c.label] = row[c.label][: SUMMARY_TEXT - 1] + "…"
        rows.append(row)
    return rows


def _short_list(v: Any) -> str:
    """A list cell of a short table: its first :data:`SUMMARY_LIST` items, and how many in all."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or len(v) <= SUMMARY_LIST:
        return _sheet_list(v)
    return f"{_sheet_list(list(v)[:SUMMARY_LIST])}, … ({len(v)} in all)"
