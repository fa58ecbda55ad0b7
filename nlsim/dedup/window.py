"""The window a run searches: the items kept from earlier runs plus today's, and what must be embedded.

A batch run's window is its corpus: every item is embedded and searched. An incremental run (a state
folder) keeps the items of the retention window with their embeddings, index, pairs and cluster ids;
today's corpus is classified against them:

- ``new``: an id not seen before: embedded, searched against the whole window, added;
- ``changed``: a known id whose text changed: its old row is dropped, the new text embedded and searched;
- ``skipped``: known with the same text;
- ``too_old``: published (or, undated, first seen) before the retention cutoff: not added;
- kept items older than the cutoff ``expire``.

The reference time ``as_of`` is ``--as-of`` when given, else the latest ``published_at`` seen so far (data
time, so a re-run gives the same result); it never moves backwards. A day whose items have no date moves
it to the start of the run's day (its ``--date``, else today) in the run's time zone (:func:`day_start`;
later than the state's clock only), so that undated items are kept from the day they were first seen and
expire by it. A day without news (a file with the schema's columns and no row) leaves it where it was:
nothing is added, nothing expires, and the window is reported as it stands (``--as-of`` still moves it);
its ``--date`` is kept as the newest day (:func:`newest_day`), so that a day before it, run after it, is an
older day (:func:`older_day`).

When the state's vectors were made differently from this run's (another model, conversion or text
fields: e.g. after a promotion), the whole window is embedded again with this run's model and clustered
again, keeping cluster ids where memberships survive (:func:`nlsim.clusters.assign.regroup`); a threshold
or reranker change re-pairs the window without re-embedding. Either is recorded as the run's
``model_switch``.

:func:`incremental_window` is made of named steps: :func:`classify` (today's items against the kept
ones), :func:`expire` (the kept items past retention), :func:`restore` (the kept cluster ids and anchors,
less the expired items) and :func:`prune` (the kept pairs still valid). The :class:`Window` they make is
immutable.

Example:
    >>> import pandas as pd
    >>> from nlsim.io.corpus import Corpus
    >>> frame = pd.DataFrame({"id": ["a", "b"], "title": ["x", "y"], "description": ["", ""],
    ...     "body": ["", ""], "source": ["", ""], "lang": ["", ""], "url": ["", ""],
    ...     "published_at": pd.to_datetime([None, None], utc=True)})
    >>> w = batch_window(Corpus(frame, path="news.csv", text_fields=("title",)))
    >>> w.embed_rows.tolist(), w.query_rows.tolist(), w.counts.new
    ([0, 1], [0, 1], 2)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from nlsim.clusters.assign import drop_items
from nlsim.clusters.copies import Copies
from nlsim.clusters.order import OrderKey
from nlsim.dedup.config import parse_time
from nlsim.dedup.settings import StateSettings
from nlsim.dedup.state import State, StateIdentity, empty_pairs
from nlsim.errors import ConfigError, InputError
from nlsim.io import columns
from nlsim.io.cells import model_texts
from nlsim.io.corpus import Corpus
from nlsim.progress import counted
from nlsim.report.record import Counts, ModelSwitch, RunRecord

ITEM_COLUMNS = tuple(columns.ITEMS.names)
"""The columns of a window's items as first declared (:data:`nlsim.io.columns.ITEMS`; a run reads the
table as declared when it runs, :func:`nlsim.io.columns.table`)."""


@dataclass(frozen=True)
class Window:
    """The items of one run (rows aligned with the embeddings and the index) and what to do with them.

    A window is never changed once made: the index stage returns a copy holding the embeddings and the
    index (``dataclasses.replace``); the cluster stage's result holds the items with their cluster ids.

    Attributes:
        items: the window after this run (``ITEM_COLUMNS``): kept rows first, then today's.
        base_embeddings: embeddings of the rows before ``n_base`` that are not re-embedded today.
        n_base: kept rows (rows below it were embedded by earlier runs unless ``reembed``).
        embed_rows: rows embedded today; query_rows: rows whose neighbours are searched today.
        today_ids: ids of today's new and changed items.
        previous, anchors, old_pairs: cluster ids, anchors and pairs kept from earlier runs (the pairs down
            to the topic threshold).
        previous_topics, topic_anchors: the topic ids and anchors kept from earlier runs.
        counts: the run record's counts of the window (:class:`~nlsim.report.record.Counts`): ``items_in``,
            ``quarantined``, ``new``, and in a daily run ``changed``, ``skipped``, ``too_old``, ``expired``.
        switch: how the state's vectors or threshold differ from this run's (``None``: they match).
        reembed: the whole window is embedded again (the vectors differ); regroup: clusters are made again.
        older_day: today's items are all dated before the state's clock: a day older than the runs before
            it, run after them (:func:`older_day`).
    """

    items: pd.DataFrame
    n_base: int
    embed_rows: np.ndarray
    query_rows: np.ndarray
    today_ids: list[str]
    base_embeddings: np.ndarray | None = None
    base_index: Any = None
    previous: dict[str, str] = field(default_factory=dict)
    anchors: dict[str, OrderKey] = field(default_factory=dict)
    previous_topics: dict[str, str] = field(default_factory=dict)
    topic_anchors: dict[str, OrderKey] = field(default_factory=dict)
    old_pairs: pd.DataFrame = field(default_factory=empty_pairs)
    old_clusters: pd.DataFrame | None = None
    counts: Counts = field(default_factory=Counts)
    as_of: pd.Timestamp | None = None
    run_id: str = ""
    input_key: str = ""
    switch: ModelSwitch | None = None
    reembed: bool = False
    regroup: bool = False
    state: State | None = None
    embeddings: np.ndarray | None = None
    index: Any = None
    copies: Copies | None = None
    """The window's exact copies (the copies stage's; ``None`` before it ran)."""
    older_day: bool = False
    day_clock: pd.Timestamp | None = None
    """The time that told this run's day older or not (:func:`day_clock`; ``None`` without a state clock):
    what the run says an older day's items are dated before."""
    newest_day: pd.Timestamp | None = None
    """The start of the newest day told by its date (:func:`told_by_date`), this run's or a run's before it
    (:func:`newest_day`): the run record keeps it for the runs after."""
    held: tuple[str, ...] = ()
    """Ids of an older day's items that differ from the window's copies, which a later day's run read: kept
    as the window holds them (:func:`later_versions`)."""
    again: str = ""
    """The run whose day this one is again (:func:`day_again`; ``""``: none): the day's items are searched
    again and the report lists that run's clusters again (:attr:`carried`)."""
    carried: pd.DataFrame | None = None
    """The clusters the report of :attr:`again` listed (``cluster_id``, ``status``, ``added``,
    ``absorbed``): listed again, with their statuses, unless this run touches them itself."""
    _converted: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    """The converted texts of the rows converted so far (a cache, not part of the window's value)."""

    @property
    def ids(self) -> np.ndarray:
        return self.items["id"].astype(str).to_numpy()

    def texts(self, rows: Any, conversion: str) -> list[str]:
        """The texts of ``rows`` as the model reads them: the HTML a CMS or a feed left in them read as a page
        shows it, and without their control and format characters (:func:`~nlsim.io.cells.model_text`: an
        RSS description's tags and the address of its picture are no words of the story, nor a NUL or
        a zero-width space), then converted (once, then remembered)."""
        rows = [int(r) for r in rows]
        todo = [r for r in rows if r not in self._converted]
        if todo:
            raw = self.items["raw_text"].to_numpy()
            for r, t in zip(todo, model_texts((str(raw[r]) for r in todo), conversion), strict=True):
                self._converted[r] = t
        return [self._converted[r] for r in rows]

    def field_texts(self, rows: Any, conversion: str, text_fields: Sequence[str]) -> list[tuple[str, ...]]:
        """The texts of ``rows`` field by field (the non-empty ones of ``text_fields``), each read as
        :meth:`texts` reads a text: what a copy key reads (:func:`nlsim.clusters.copies.copy_key`). An
        item keeps its title and its text (the fields joined by a space,
        :meth:`nlsim.io.corpus.Corpus.texts`): the title is cut out of the text, and the text before it
        and after it are a field each (with three fields, the two beside the title are read as one where
        they are side by side)."""
        rows = [int(r) for r in rows]
        raw, titles = self.items["raw_text"].to_numpy(), self.items["title"].to_numpy()
        parts = [_fields(str(raw[r]), str(titles[r]), tuple(text_fields)) for r in rows]
        # a text of one field is the text the model reads, converted once (:meth:`texts`)
        alone = [r for r, fields in zip(rows, parts, strict=True) if len(fields) == 1]
        whole = dict(zip(alone, self.texts(alone, conversion), strict=True))
        several = [f for fields in parts if len(fields) > 1 for f in fields]
        flat = iter(model_texts(several, conversion))
        return [
            (whole[r],) if r in whole else tuple(next(flat) for _ in fields)
            for r, fields in zip(rows, parts, strict=True)
        ]


def _fields(text: str, title: str, text_fields: tuple[str, ...]) -> tuple[str, ...]:
    """The non-empty fields of an item's ``text`` (its ``text_fields`` joined by a space) around its
    ``title``: ``text`` alone where the title is not one of them, is empty, or is not where it goes.

    >>> _fields("Floods - AP Rain fell", "Floods - AP", ("title", "description"))
    ('Floods - AP', 'Rain fell')
    >>> _fields("Rain fell Floods", "Floods", ("description", "title"))
    ('Rain fell', 'Floods')
    >>> _fields("Floods", "Floods", ("title", "description"))
    ('Floods',)
    >>> _fields("A Floods B", "Floods", ("description", "title", "body"))
    ('A', 'Floods', 'B')
    """
    if "title" not in text_fields or len(text_fields) == 1 or not title or text == title:
        return (text,)
    at = text_fields.index("title")
    if at == 0:
        found = 0 if text.startswith(title + " ") else -1
    elif at == len(text_fields) - 1:
        found = len(text) - len(title) if text.endswith(" " + title) else -1
    else:
        starts = [0] if text.startswith(title + " ") else []
        spaced = text.find(f" {title} ")
        starts += [spaced + 1] if spaced >= 0 else []
        found = starts[0] if len(starts) == 1 else -1  # the title once, or no telling where
    if found < 0:
        return (text,)
    before, after = text[:found].strip(), text[found + len(title) :].strip()
    return tuple(p for p in (before, title, after) if p)


def corpus_items(corpus: Corpus, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The ``items`` table (:func:`nlsim.io.columns.table`) for corpus rows (all by default): each column
    read from the corpus field it names (empty text when the corpus has none), then what the run sets."""
    frame = corpus.frame if rows is None else corpus.frame.iloc[rows]
    texts = corpus.texts()
    hashes = corpus.content_hashes()
    idx = np.arange(len(corpus.frame)) if rows is None else np.asarray(rows)
    published = pd.to_datetime(frame["published_at"], utc=True).to_numpy()
    run_set: dict[str, Any] = {
        "content_hash": [hashes[i] for i in idx],
        "retain_from": published,
        "first_seen_run": "",
        "embedded_run": "",
        "raw_text": [texts[i] for i in idx],
        "cluster_id": None,
    }
    data: dict[str, Any] = {}
    for c in columns.table("items").columns:
        source = c.corpus_field
        if source is None:
            data[c.name] = run_set[c.name] if c.name in run_set else None
        elif c.format == "time":
            data[c.name] = pd.to_datetime(frame[source], utc=True).to_numpy() if source in frame else None
        else:
            data[c.name] = frame[source].astype(str).to_numpy() if source in frame else ""
    out = pd.DataFrame(data, index=np.arange(len(frame)))
    for c in columns.table("items").columns:
        if c.format == "time":
            out[c.name] = pd.to_datetime(out[c.name], utc=True).astype("datetime64[ns, UTC]")
    return out.reset_index(drop=True)


def input_key(identity: Any, items: pd.DataFrame, params: dict[str, Any]) -> str:
    """SHA-256 of what decides a run's result: the vectors' identity, the parameters and the items."""
    h = hashlib.sha256()
    h.update(json.dumps({"identity": repr(identity), **params}, sort_keys=True, default=str).encode())
    stamps = ["" if pd.isna(x) else pd.Timestamp(x).isoformat() for x in items["published_at"]]
    ids, hashes = items["id"].astype(str), items["content_hash"].astype(str)
    for row in sorted(zip(ids, hashes, stamps, _details(items), strict=True)):
        h.update("\x1f".join((*row[:3], *row[3])).encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()


def run_key(key: str, previous: str) -> str:
    """What names an incremental run: its input's ``key`` after the state's last commit (``previous``, that
    run's id; empty for a state's first run). The same input after another commit is another run, under
    another id, so a day run again after a different day never takes the id (and the published report) of
    its first run; an exact replay of the last commit keeps that commit's id. A state's first run is named
    by its input alone.

    >>> run_key("abc", "")
    'abc'
    >>> run_key("abc", "r1") == run_key("abc", "r2")
    False
    """
    if not previous:
        return key
    return hashlib.sha256(f"{key}\n{previous}".encode()).hexdigest()


def batch_window(corpus: Corpus, identity: Any = None, params: dict[str, Any] | None = None) -> Window:
    """The window of a batch run: every corpus item, embedded and searched."""
    items = corpus_items(corpus)
    rows = np.arange(len(items))
    key = input_key(identity, items, params or {})
    return Window(
        items=items,
        n_base=0,
        embed_rows=rows,
        query_rows=rows,
        today_ids=items["id"].tolist(),
        counts=Counts(items_in=len(items), quarantined=int(len(corpus.quarantined)), new=len(items)),
        run_id=f"batch-{key[:10]}",
        input_key=key,
    )


def day_start(timezone: str = "UTC", now: pd.Timestamp | None = None) -> pd.Timestamp:
    """The start of today (the day of ``now``, default the wall clock) in ``timezone``, as a UTC time: the
    clock of a day whose items have no date. On a day whose clocks skip or repeat midnight (a daylight-saving
    change at 00:00, as in Cairo or Havana) it is the day's first instant.

    >>> str(day_start("Africa/Cairo", pd.Timestamp("2024-04-26T10:00Z")))
    '2024-04-25 22:00:00+00:00'
    """
    today = (pd.Timestamp.now(tz=timezone) if now is None else pd.Timestamp(now).tz_convert(timezone)).date()
    return pd.Timestamp(today, tz=timezone).tz_convert("UTC")


def day_begins(day: dt.date, timezone: str = "UTC") -> pd.Timestamp:
    """The start of ``day`` (its first instant, where a clock change skips midnight) in ``timezone``, as a
    UTC time.

    >>> str(day_begins(dt.date(2026, 11, 18), "Asia/Taipei"))
    '2026-11-17 16:00:00+00:00'
    """
    return pd.Timestamp(day, tz=timezone).tz_convert("UTC")


def _as_of(
    daily: StateSettings,
    state: State,
    times: pd.Series,
    timezone: str = "UTC",
    day: dt.date | None = None,
) -> pd.Timestamp:
    if daily.as_of is not None:
        ref = parse_time(daily.as_of, "--as-of", timezone)  # without an offset: the run's --timezone
        if state.as_of is not None and ref < pd.Timestamp(state.as_of):
            raise ConfigError(
                f"--as-of {daily.as_of} is before the state's reference time {pd.Timestamp(state.as_of)}: a "
                "state's time never moves backwards (retention would bring expired items back)"
            )
        return ref
    if not len(times) and state.as_of is not None:
        return pd.Timestamp(state.as_of)  # a day without news: its data time stands still
    latest = times.max() if len(times) else None
    if latest is None or pd.isna(latest):
        # no date in the day's items (an undated corpus): the day of the run (its --date, else today), so
        # that first-seen times exist and move on from day to day, a day run by date on a later one too
        latest = day_start(timezone) if day is None else day_begins(day, timezone)
    cands = [t for t in (state.as_of, latest) if t is not None and not pd.isna(t)]
    return max(pd.Timestamp(t) for t in cands)


def older_day(
    state: State,
    times: pd.Series,
    day_end: pd.Timestamp | None = None,
    seen: pd.Timestamp | None = None,
    newest: pd.Timestamp | None = None,
) -> bool:
    """Whether today's items are a day older than the state's: every dated one before the reference time
    of the runs before (days run out of order: the 26th, then the 25th). A day without items, or an item
    without a date, has no day but the run's ``--date``: such a day is older only when that date ended
    (``day_end``, midnight after it in the run's time zone) by the state's reference time (a quiet or
    undated day run again after a later one); without a ``--date`` it is today's. ``seen``: the latest
    time the window's items were dated with (:func:`latest_seen`): a reference time an ``--as-of`` pinned
    after it makes no day older (:func:`day_clock`). ``newest``: the start of the newest day the runs
    before told by its date (:func:`newest_day`): a day before it is older, though a day without news
    left the state's clock where it was.

    Example:
        >>> from types import SimpleNamespace
        >>> state = SimpleNamespace(as_of="2026-11-26T15:00:00+00:00")
        >>> times = pd.Series(pd.to_datetime(["2026-11-25T09:00Z", "2026-11-25T15:00Z"]))
        >>> older_day(state, times), older_day(state, times + pd.Timedelta(days=1))
        (True, False)
        >>> quiet = pd.Series([], dtype="datetime64[ns, UTC]")
        >>> older_day(state, quiet, pd.Timestamp("2026-11-26T00:00Z")), older_day(state, quiet)
        (True, False)
        >>> undated = pd.Series([pd.NaT], dtype="datetime64[ns, UTC]")
        >>> older_day(state, undated, pd.Timestamp("2026-11-26T00:00Z")), older_day(state, undated)
        (True, False)
        >>> the_26th, quiet_27th = times + pd.Timedelta(days=1), pd.Timestamp("2026-11-27T00:00Z")
        >>> older_day(state, the_26th), older_day(state, the_26th, newest=quiet_27th)  # the 27th had no news
        (False, True)
    """
    if state.as_of is None:
        return False
    clock = day_clock(state.as_of, seen, newest)
    dated = times.dropna()
    if len(dated) < len(times) or not len(times):  # an item (or a day) whose day is the run's --date
        if day_end is None or day_end > clock:
            return False
    return not len(dated) or bool(dated.max() < clock)


def latest_seen(items: pd.DataFrame) -> pd.Timestamp | None:
    """The latest time the window's items were dated with (their ``published_at``); ``None`` for none.

    An undated item's ``retain_from`` is not read: first seen under an ``--as-of``, it is the pinned clock,
    which would move the days on as the pin does (the next day's file, dated before the pin, an older
    day). An undated item's day is its run's ``--date``, or, run without ``--date`` and ``--as-of``, the day
    the wall clock gave it (:func:`told_by_date`, kept as the run record's ``newest_day``); first seen
    under a pin without a ``--date``, it has no day of its own. How long it is kept is its
    ``retain_from`` still.

    >>> t = pd.to_datetime(["2026-11-25T09:00Z", None], utc=True)
    >>> items = pd.DataFrame({"published_at": t, "retain_from": [t[0], pd.Timestamp("2026-11-28T00:00Z")]})
    >>> str(latest_seen(items)), latest_seen(items.iloc[1:])
    ('2026-11-25 09:00:00+00:00', None)
    """
    if not len(items):
        return None
    latest = pd.to_datetime(items["published_at"], utc=True).max()
    return None if pd.isna(latest) else pd.Timestamp(latest)


def day_clock(as_of: Any, seen: pd.Timestamp | None, newest: pd.Timestamp | None = None) -> pd.Timestamp:
    """The time that tells a day older than the runs before it: the state's reference time ``as_of``, or,
    when an ``--as-of`` pinned it after every dated item the window holds, the latest of their times
    (``seen``, :func:`latest_seen`): a pinned clock moves the window's retention on, not its days, so the
    newest day run again and the next day's file are not older days. A day told by its date (``newest``,
    the start of the newest such day run: :func:`newest_day`) moves it on to its start, though a day
    without news leaves the state's clock where it was.

    >>> str(day_clock("2026-11-27T00:00:00+00:00", pd.Timestamp("2026-11-25T09:00Z")))
    '2026-11-25 09:00:00+00:00'
    >>> str(day_clock("2026-11-25T00:00:00+00:00", pd.Timestamp("2026-11-25T09:00Z")))
    '2026-11-25 00:00:00+00:00'
    >>> str(day_clock("2026-11-25T09:00:00+00:00", None, pd.Timestamp("2026-11-26T00:00Z")))
    '2026-11-26 00:00:00+00:00'
    """
    clock = pd.Timestamp(as_of)
    clock = clock if seen is None else min(clock, pd.Timestamp(seen))
    return clock if newest is None else max(clock, pd.Timestamp(newest))


def told_by_date(
    times: pd.Series, day: dt.date | None, timezone: str = "UTC", pinned: bool = False
) -> pd.Timestamp | None:
    """The start of the run's day in ``timezone`` when its date tells it (a day without items, or with an
    item without a date: :func:`older_day`): its ``--date`` (``day``), or, without one, today
    (:func:`day_start`) for a day whose items are all undated and whose clock is not ``pinned`` by
    ``--as-of`` (the day its items are first seen on). ``None`` when every item is dated (their times tell
    the day), and for undated items under a pin without a ``--date``: the pin is no day of theirs.

    >>> undated = pd.Series([pd.NaT], dtype="datetime64[ns, UTC]")
    >>> str(told_by_date(undated, dt.date(2026, 11, 26), "Asia/Taipei"))
    '2026-11-25 16:00:00+00:00'
    >>> told_by_date(undated.fillna(pd.Timestamp("2026-11-26T09:00Z")), dt.date(2026, 11, 26)) is None
    True
    >>> told_by_date(undated, None, pinned=True) is None
    True
    """
    if len(times) and times.notna().all():
        return None
    if day is not None:
        return day_begins(day, timezone)
    if pinned or not len(times) or times.notna().any():
        return None
    return day_start(timezone)


def newest_day(last: RunRecord | None, own: pd.Timestamp | None = None) -> pd.Timestamp | None:
    """The start of the newest day told by its date: this run's (``own``, :func:`told_by_date`) or
    the one the state's ``last`` run recorded (its ``newest_day``: the newest of the runs before it), the
    later; ``None`` for none (a record written before it was kept has none).

    >>> last = RunRecord(run_id="r3", newest_day="2026-11-27T00:00:00+00:00")
    >>> str(newest_day(last)), str(newest_day(last, pd.Timestamp("2026-11-28T00:00Z")))
    ('2026-11-27 00:00:00+00:00', '2026-11-28 00:00:00+00:00')
    >>> newest_day(None) is None
    True
    """
    found = [] if own is None else [pd.Timestamp(own)]
    if last is not None and last.newest_day:
        found.append(pd.Timestamp(last.newest_day))
    return max(found) if found else None


def day_end(day: dt.date | None, timezone: str = "UTC") -> pd.Timestamp | None:
    """The end of ``day`` (midnight after it, on the zone's clock: a day of 23 or 25 hours where a
    daylight-saving change falls in it) in ``timezone``, as a UTC time; ``None`` for no day.

    >>> str(day_end(dt.date(2026, 11, 25), "Asia/Taipei"))
    '2026-11-25 16:00:00+00:00'
    >>> str(day_end(dt.date(2024, 3, 10), "America/New_York"))  # 23 hours: the clocks skip 02:00-03:00
    '2024-03-11 04:00:00+00:00'
    """
    if day is None:
        return None
    return pd.Timestamp(day + dt.timedelta(days=1), tz=timezone).tz_convert("UTC")


def day_of(times: pd.Series, day: dt.date | None, timezone: str = "UTC") -> pd.Timestamp | None:
    """The latest time of a day's items, an undated item being of the run's ``day`` (its start in
    ``timezone``); ``None`` when none has a time.

    >>> times = pd.Series([pd.Timestamp("2026-11-25T09:00Z"), pd.NaT])
    >>> str(day_of(times, None)), str(day_of(times, dt.date(2026, 11, 26), "Asia/Taipei"))
    ('2026-11-25 09:00:00+00:00', '2026-11-25 16:00:00+00:00')
    """
    latest = times.max()
    found = [] if pd.isna(latest) else [latest]
    if day is not None and times.isna().any():
        found.append(day_begins(day, timezone))
    return max(found) if found else None


def undated_clock(daily: StateSettings, times: pd.Series) -> bool:
    """Whether the run's clock comes from the wall clock (:func:`day_start`): no ``--as-of`` and no date
    in the day's items (a day without items keeps the state's clock)."""
    return daily.as_of is None and bool(len(times)) and not times.notna().any()


def switch_of(stored: StateIdentity | None, identity: StateIdentity) -> ModelSwitch | None:
    """How this run's vectors/threshold differ from the state's (``None`` when they match)."""
    if stored is None:
        return None
    diffs = stored.differences(identity)
    if not diffs:
        return None
    vectors = {"model_id", "fingerprint", "dim", "conversion", "text_fields", "markup"}
    changed = [d.split(":", 1)[0] for d in diffs]
    return ModelSwitch(
        from_model=stored.model_id,
        to_model=identity.model_id,
        from_fingerprint=stored.fingerprint,
        to_fingerprint=identity.fingerprint,
        changed=changed,
        details=diffs,
        reembed=any(c in vectors for c in changed),
    )


@dataclass(frozen=True)
class Classified:
    """Today's items against the kept ones: each item's ``status`` (new, changed, skipped, too_old), the
    kept ids that ``expired``, the ids whose text ``changed`` (and did not expire) and the rows of today's
    items to add (``todo``: new, or changed and not expired)."""

    status: pd.Series
    expired: set[str]
    changed: set[str]
    todo: np.ndarray
    held: tuple[str, ...] = ()
    """Known ids whose row differs but whose kept copy is newer (``keep`` of :func:`classify`): skipped."""

    @property
    def gone(self) -> set[str]:
        """Kept ids whose rows leave the window: expired, or replaced by today's text."""
        return self.expired | self.changed

    def counts(self, quarantined: int) -> Counts:
        """The run record's counts of the classification."""
        return Counts(
            items_in=len(self.status),
            quarantined=quarantined,
            new=int((self.status == "new").sum()),
            changed=len(self.changed),
            skipped=int((self.status == "skipped").sum()),
            too_old=int((self.status == "too_old").sum()),
            expired=len(self.expired),
        )


def expire(kept: pd.DataFrame, cutoff: pd.Timestamp | None) -> set[str]:
    """The kept ids retained from before the retention ``cutoff`` (none without retention)."""
    if cutoff is None or not len(kept):
        return set()
    return set(kept.loc[(kept["retain_from"] < cutoff).to_numpy(), "id"].astype(str))


def _time_changed(kept: Any, today: Any) -> bool:
    """Whether today's ``published_at`` corrects the kept one: dated, and another instant than the kept
    time (or the kept item had none). A row sent again without its date keeps the kept date.

    >>> t = pd.Timestamp("2024-03-01T08:00Z")
    >>> _time_changed(t, t.tz_convert("Asia/Taipei")), _time_changed(t, pd.NaT), _time_changed(pd.NaT, t)
    (False, False, True)
    """
    if pd.isna(today):
        return False
    return bool(pd.isna(kept) or pd.Timestamp(kept) != pd.Timestamp(today))


SHOWN_DETAILS = ("title", "source", "url")
"""The corpus fields an editor reads of an item beside its text and time (the report's title, source and
link): a row sent again with one of them corrected is ``changed``, so that the report shows the correction
(the title is in the text hash only when it is embedded, ``--text-fields``)."""


def _details(items: pd.DataFrame) -> list[tuple[str, ...]]:
    """Each row's :data:`SHOWN_DETAILS`, as text ('' for a field the table lacks or leaves empty)."""
    blank = [""] * len(items)
    cols = [items[c].fillna("").astype(str).tolist() if c in items else blank for c in SHOWN_DETAILS]
    return list(zip(*cols, strict=True))


def _details_changed(kept: tuple[str, ...], today: tuple[str, ...]) -> bool:
    """Whether today's row corrects a kept item's :data:`SHOWN_DETAILS`: a field given, and another than the
    kept one. A row sent again without a field keeps the kept value, as it keeps the kept date.

    >>> _details_changed(("t", "cna", "http://a"), ("t", "cna", "http://b"))
    True
    >>> _details_changed(("t", "cna", "http://a"), ("t", "", ""))
    False
    """
    return any(new and new != old for old, new in zip(kept, today, strict=True))


def classify(
    today: pd.DataFrame, kept: pd.DataFrame, cutoff: pd.Timestamp | None, keep: frozenset[str] = frozenset()
) -> Classified:
    """Today's items against the kept ones (see the module docstring).

    ``keep``: kept ids whose kept copy is newer than today's row (a later day's, when today is an older day:
    :func:`later_versions`): such a row that differs is ``skipped`` and named in ``held``, never ``changed``
    (a day run out of order does not undo a later day's correction).

    A known id is ``changed`` when its text, its ``published_at`` or one of its :data:`SHOWN_DETAILS`
    changed (a corrected time, title, source or link is read again, as a corrected text is: the report,
    the pairs' order and retention use it). A kept item that
    expires today and comes again with the same text and time is ``skipped`` (and expires); otherwise it
    is judged as if it had not been kept: ``new`` when today's row is dated within the window
    (published again), else ``too_old`` (an undated item keeps the time it was first seen, past the cutoff).
    """
    expired = expire(kept, cutoff)
    kept_ids = kept["id"].astype(str)
    prev_hash = dict(zip(kept_ids, kept["content_hash"], strict=True))
    prev_time = dict(zip(kept_ids, kept["published_at"], strict=True))
    prev_details = dict(zip(kept_ids, _details(kept), strict=True))
    status = []
    held = []
    fields = (today["id"], today["content_hash"], today["retain_from"], today["published_at"])
    rows = zip(*fields, _details(today), strict=True)
    for i, h, rf, published, details in rows:
        dated = not pd.isna(published)
        same = i in prev_hash and prev_hash[i] == h and not _details_changed(prev_details[i], details)
        if same and not _time_changed(prev_time[i], published):
            status.append("skipped")
        elif i in keep and i not in expired:
            status.append("skipped")
            held.append(str(i))
        elif i in prev_hash and i not in expired:
            status.append("changed")
        elif cutoff is not None and (rf < cutoff or (i in expired and not dated)):
            status.append("too_old")
        else:
            status.append("new")
    status_s = pd.Series(status, dtype=object)
    changed = set(today.loc[(status_s == "changed").to_numpy(), "id"])
    todo = status_s.isin(["new", "changed"]).to_numpy()
    return Classified(status_s, expired, changed, todo, tuple(held))


RUN_CLOCK = "%Y%m%dT%H%M%SZ"
"""How an incremental run's id begins: its clock (``as_of``) in UTC (:func:`incremental_window`)."""


def later_versions(kept: pd.DataFrame, latest: Any, timezone: str = "UTC") -> frozenset[str]:
    """The kept ids whose copy a run of a later day than ``latest`` (the latest time of an older day's
    items) read: its clock (the start of its ``embedded_run`` id) falls on a later date in ``timezone``.
    Such a copy is newer than the older day's row of the item, which must not replace it; a copy the older
    day's own run read (a corrected file of that day run again) is not among them.

    >>> kept = pd.DataFrame({"id": ["a", "b", "c"], "embedded_run": ["20260326T090000Z-ab",
    ...     "20260325T200000Z-cd", "not-a-run-id"]})
    >>> sorted(later_versions(kept, pd.Timestamp("2026-03-25T08:00Z")))
    ['a']
    """
    if pd.isna(latest) or "embedded_run" not in kept:
        return frozenset()
    day = pd.Timestamp(latest).tz_convert(timezone).date()
    out = set()
    for i, run in zip(kept["id"].astype(str), kept["embedded_run"].fillna("").astype(str), strict=True):
        try:
            clock = pd.Timestamp(dt.datetime.strptime(run.split("-", 1)[0], RUN_CLOCK), tz="UTC")
        except ValueError:
            continue
        if clock.tz_convert(timezone).date() > day:
            out.add(i)
    return frozenset(out)


def check_not_all_too_old(
    corpus: Corpus,
    classified: Classified,
    cutoff: pd.Timestamp | None,
    ref: pd.Timestamp,
    undated_day: dt.date | None = None,
) -> None:
    """Refuse a day every one of whose items is older than the window: nothing would be added, and the
    run would publish an empty day over the last one. It is a wrong clock (``--as-of``, the state's
    reference time) or a wrong file, never a day's news. ``undated_day``: the ``--date`` that dates a day
    older than the runs before it whose items have no date, named as their day."""
    status = classified.status
    if cutoff is None or not len(status) or not (status == "too_old").all():
        return
    dated_by = f" (no item has a date: their day is --date {undated_day})" if undated_day else ""
    raise InputError(
        corpus.path,
        None,
        "published_at",
        f"{'its' if len(status) == 1 else 'every one of its'} {counted(len(status), 'item', 'items')} is "
        f"older than the window{dated_by}, which starts at {cutoff} (the "
        f"reference time {ref} less the retention); nothing would be added. Check the file's dates, "
        "--retention-days, and the state's reference time (the latest --as-of or published_at it has seen; "
        "--rebuild-state starts a fresh one)",
    )


def restore(
    state: State, expired: set[str], column: str = "cluster_id"
) -> tuple[dict[str, str], dict[str, OrderKey]]:
    """The kept items' cluster ids (``column="topic_id"``: topic ids) and their anchors, as the state holds
    them, less the expired items (a cluster or topic keeps its id and anchor while any member is kept)."""
    kept = state.items
    previous = {
        str(i): str(c)
        for i, c in zip(kept["id"], kept[column] if column in kept else [None] * len(kept), strict=True)
        if c is not None and not pd.isna(c)
    }
    anchors = {
        str(r.cluster_id): OrderKey(int(r.anchor_undated), int(r.anchor_ns), str(r.anchor_id))
        for r in state.clusters.itertuples()
    }
    return drop_items(previous, anchors, expired)


def relinked(items: pd.DataFrame, n_base: int, pairs: pd.DataFrame, changed: set[str]) -> np.ndarray:
    """The rows of the kept items (the first ``n_base`` of ``items``) linked by a kept pair to an item whose
    text changed today: their links with its old text go (an exact copy's every link, found through the
    item it copied), so they are searched again.

    >>> pairs = pd.DataFrame({"id_a": ["a", "b", "c"], "id_b": ["b", "c", "d"]})
    >>> relinked(pd.DataFrame({"id": ["a", "c", "d", "b"]}), 3, pairs, {"b"}).tolist()
    [0, 1]
    """
    if not changed or not len(pairs):
        return np.arange(0)
    a, b = pairs["id_a"].astype(str), pairs["id_b"].astype(str)
    near = (set(b[a.isin(changed)]) | set(a[b.isin(changed)])) - changed
    return np.flatnonzero(items["id"].iloc[:n_base].astype(str).isin(near).to_numpy())


def prune(pairs: pd.DataFrame, gone: set[str], regroup: bool) -> pd.DataFrame:
    """The kept pairs still valid: none touching an item that left the window, none at all when the
    window is paired again."""
    if regroup:
        return empty_pairs()
    if len(pairs):
        pairs = pairs[~pairs["id_a"].isin(gone) & ~pairs["id_b"].isin(gone)]
    return pairs.reset_index(drop=True)


def keep_kept(add: pd.DataFrame, kept: pd.DataFrame, changed: set[str]) -> pd.DataFrame:
    """Today's rows to add, each ``changed`` item's empty :data:`SHOWN_DETAILS` and missing date taken from
    its kept row (its ``retain_from`` too, when the date is missing): a row sent again without a field keeps
    the kept value, as :func:`classify` reads it, whatever else the row corrects.

    >>> t = pd.Timestamp("2024-03-01T08:00Z")
    >>> kept = pd.DataFrame({"id": ["a"], "title": ["x"], "source": ["cna"], "url": ["http://a"],
    ...     "published_at": [t], "retain_from": [t]})
    >>> later = t + pd.Timedelta("1D")
    >>> today = kept.assign(url="http://b", source="", published_at=pd.NaT, retain_from=later)
    >>> row = keep_kept(today, kept, {"a"}).iloc[0]
    >>> row["source"], row["url"], row["published_at"] == t, row["retain_from"] == t
    ('cna', 'http://b', True, True)
    """
    ids = add["id"].astype(str)
    mine = ids.isin(changed).to_numpy()
    if not mine.any():
        return add
    prev = kept.assign(id=kept["id"].astype(str)).set_index("id")
    add = add.copy()
    for c in SHOWN_DETAILS:
        if c in add and c in prev:
            empty = mine & add[c].fillna("").astype(str).eq("").to_numpy()
            add.loc[empty, c] = ids[empty].map(prev[c]).fillna("").astype(str)
    undated = mine & add["published_at"].isna().to_numpy()
    for c in ("published_at", "retain_from"):
        add[c] = pd.to_datetime(add[c], utc=True).where(~undated, pd.to_datetime(ids.map(prev[c]), utc=True))
    return add


def _window_items(
    kept: pd.DataFrame, today: pd.DataFrame, classified: Classified, run_id: str
) -> tuple[pd.DataFrame, np.ndarray, int]:
    """The window's items (kept rows first, then today's to add), the mask of kept rows that stay, and
    how many they are."""
    keep_mask = ~kept["id"].astype(str).isin(classified.gone).to_numpy()
    base = kept.loc[keep_mask].reset_index(drop=True)
    add = keep_kept(today.loc[classified.todo].reset_index(drop=True), kept, classified.changed)
    first_seen = dict(zip(kept["id"].astype(str), kept["first_seen_run"], strict=True))
    add["first_seen_run"] = [first_seen.get(i, run_id) for i in add["id"]]
    add["embedded_run"] = run_id
    spec = columns.table("items")  # a state kept before a column was declared reads it as empty
    items = pd.concat([base.reindex(columns=spec.names), add.reindex(columns=spec.names)], ignore_index=True)
    for c in spec.columns:
        if c.format == "time":
            items[c.name] = pd.to_datetime(items[c.name], utc=True).astype("datetime64[ns, UTC]")
    return items, keep_mask, len(base)


def _run_id(last: RunRecord | None, key: str, ref: pd.Timestamp) -> str:
    """An incremental run's id: the last commit's when its input is this one (a replay), else the clock
    and the input after that commit (:func:`run_key`)."""
    if last is not None and last.run_id and last.input_key == key:
        return last.run_id
    previous = last.run_id if last is not None else ""
    return f"{ref.strftime(RUN_CLOCK)}-{run_key(key, previous)[:10]}"


def day_again(
    kept: pd.DataFrame,
    today: pd.DataFrame,
    classified: Classified,
    last: RunRecord | None,
    older: bool,
    last_day: bool = False,
) -> str:
    """The run whose day this one is again, ``""`` for none: every item of the day (but those too old for
    the window) is in the window with the same text, or some are and the day is the state's last run's
    (``last_day``, :func:`of_last_day`: the day's file sent again with an item more or corrected), the day
    is not older than the runs before it, and
    they were read by the state's last run (some of them: the others, sent again, read by earlier runs; or,
    that run reading no item itself as when it paired the window again, as many as it read), else the run
    that embedded the most of them (the latest of those that embedded as many). A day older than the runs
    before it (``older``) all of whose items are in the window with the same text is the day of the run
    that first saw the most of them (the latest of those that saw as many): that day's own run, never a
    later day's run that embedded them again. Such a run's report is that day's report under this run's
    settings, never an empty one (:attr:`Window.carried`).

    >>> kept = pd.DataFrame({"id": ["a", "b", "c"], "first_seen_run": ["r1", "r1", "r2"],
    ...     "embedded_run": ["r1", "r3", "r3"]})
    >>> skipped = Classified(pd.Series(["skipped"] * 3), set(), set(), np.array([False] * 3))
    >>> day_again(kept, pd.DataFrame({"id": ["a", "b", "c"]}), skipped, None, False)
    'r3'
    >>> day_again(kept, pd.DataFrame({"id": ["a", "b", "c"]}), skipped, None, True)
    'r1'
    """
    status = classified.status
    if not (status == "skipped").any():
        return ""
    if (older or not last_day) and not status.isin(["skipped", "too_old"]).all():
        return ""
    ids = set(today.loc[(status == "skipped").to_numpy(), "id"].astype(str))
    rows = kept[kept["id"].astype(str).isin(ids)]
    runs = rows[["first_seen_run", "embedded_run"]].astype(str).to_numpy()
    if older:
        seen = pd.Series(runs[:, 0]).value_counts()
        return str(max(seen[seen == seen.max()].index)) if len(seen) else ""
    if last is not None and last.run_id and not last.older_day:
        if (runs == last.run_id).any() or read_none(last, len(status)):
            return last.run_id
    embedded = pd.Series(runs[:, 1]).value_counts()
    return str(max(embedded[embedded == embedded.max()].index)) if len(embedded) else ""


def read_none(last: RunRecord, items_in: int) -> bool:
    """Whether ``last`` read no item itself (every item of its day already in the window with the same
    text: a run that paired the window again under another threshold, or took the editors' new verdicts)
    and read ``items_in`` items: then no item shows that it read them, and a run of that many items, all in
    the window with the same text, is that run's day again.

    >>> last = RunRecord(run_id="r2", counts=Counts(items_in=3, new=0, changed=0))
    >>> read_none(last, 3), read_none(last, 2)
    (True, False)
    """
    counts = last.counts
    return not counts.new and not counts.changed and counts.items_in == items_in


def of_last_day(
    last: RunRecord | None,
    latest: pd.Timestamp | None,
    timezone: str = "UTC",
    seen: pd.Timestamp | None = None,
) -> bool:
    """Whether a day's items, ``latest`` the time of its latest (:func:`day_of`), are of the day of the
    state's last run (its clock's date in ``timezone``, no later than ``seen``, the latest time the window's
    items were dated with, and no earlier than the newest day told by its date: :func:`day_clock`), that
    run not of an older day.

    >>> last = RunRecord(run_id="r2", as_of="2026-11-25T15:00:00+00:00")
    >>> later, next_day = pd.Timestamp("2026-11-25T18:00Z"), pd.Timestamp("2026-11-26T01:00Z")
    >>> of_last_day(last, later), of_last_day(last, next_day)
    (True, False)
    """
    if last is None or not last.run_id or last.older_day or not last.as_of or latest is None:
        return False
    day = pd.Timestamp(latest).tz_convert(timezone).date()
    return bool(day == day_clock(last.as_of, seen, newest_day(last)).tz_convert(timezone).date())


def _days(
    state: State,
    last: RunRecord | None,
    times: pd.Series,
    day: dt.date | None,
    timezone: str,
    pinned: bool,
) -> tuple[bool, pd.Timestamp | None, pd.Timestamp | None, pd.Timestamp | None, pd.Timestamp | None]:
    """Which day a daily run is: whether it is older than the runs before it (:func:`older_day`), the
    newest day told by its date so far (:func:`newest_day`), the time of its latest item (:func:`day_of`),
    the latest time the window's items were dated with (:func:`latest_seen`), and the clock the day was
    told older by (:func:`day_clock`; ``None`` without a state clock)."""
    seen = latest_seen(state.items)
    before = newest_day(last)
    older = older_day(state, times, day_end(day, timezone), seen, before)
    newest = newest_day(last, told_by_date(times, day, timezone, pinned=pinned))
    clock = None if state.as_of is None else day_clock(state.as_of, seen, before)
    return older, newest, day_of(times, day, timezone), seen, clock


def retained_from(
    times: pd.Series, ref: pd.Timestamp, older_date: dt.date | None = None, timezone: str = "UTC"
) -> pd.Series:
    """The times the day's items are kept from (``retain_from``): a dated item's time; an undated one's the
    day it was first seen, the run's clock ``ref``, or the start of the ``--date`` of a day older than the
    runs before it (``older_date``), as that day's dated items would be kept from their times.

    >>> times = pd.Series(pd.to_datetime(["2026-11-17T09:00Z", None], utc=True))
    >>> ref = pd.Timestamp("2026-11-19T00:00Z")
    >>> [str(t) for t in retained_from(times, ref, dt.date(2026, 11, 17), "Asia/Taipei")]
    ['2026-11-17 09:00:00+00:00', '2026-11-16 16:00:00+00:00']
    >>> str(retained_from(times, ref)[1])
    '2026-11-19 00:00:00+00:00'
    """
    first_seen = ref if older_date is None else day_begins(older_date, timezone)
    return pd.to_datetime(times.where(times.notna(), first_seen), utc=True).astype("datetime64[ns, UTC]")


def incremental_window(
    daily: StateSettings,
    corpus: Corpus,
    state: State,
    identity: StateIdentity,
    params: dict[str, Any],
    timezone: str = "UTC",
    day: dt.date | None = None,
) -> Window:
    """Today's corpus against the kept state (see the module docstring): classify, expire, restore the
    kept clusters, prune the kept pairs. ``timezone``: the run's, whose day starts the clock of a day
    without dates. ``day``: the run's ``--date`` when given, which tells whether a day without items is
    older than the runs before it (:func:`older_day`)."""
    today = corpus_items(corpus)
    times = today["published_at"]
    if not len(today) and not state.last_run:
        raise InputError(
            corpus.path,
            None,
            None,
            "the corpus has no rows and the state has no run yet: nothing to report (a day without news "
            "keeps the window of the days before it)",
        )
    ref = _as_of(daily, state, times, timezone, day)
    params = {**params, "as_of": ref.isoformat(), "retention_days": daily.retention_days or None}
    if day is not None and times.isna().all():  # a day without items, or without dates, is told from
        params["day"] = day.isoformat()  # another by its date alone (the same items, the clock past both)
    key = input_key(identity, today, params)
    last = RunRecord.from_dict(state.last_run) if state.last_run else None
    run_id = _run_id(last, key, ref)
    kept = state.items.reset_index(drop=True)
    cutoff = ref - pd.Timedelta(days=float(daily.retention_days)) if daily.retention_days else None
    older, newest, latest, seen, clock = _days(state, last, times, day, timezone, daily.as_of is not None)
    today["retain_from"] = retained_from(times, ref, day if older else None, timezone)
    keep = later_versions(kept, latest, timezone) if older and len(times) else frozenset()
    classified = classify(today, kept, cutoff, keep)
    check_not_all_too_old(corpus, classified, cutoff, ref, day if older and times.isna().all() else None)
    items, keep_mask, n_base = _window_items(kept, today, classified, run_id)
    previous, anchors = restore(state, classified.expired)
    previous_topics, topic_anchors = restore(state, classified.expired, "topic_id")
    switch = switch_of(state.identity, identity)
    reembed = bool(switch and switch.reembed)
    if reembed:
        items["embedded_run"] = run_id
    if switch is not None:
        switch = replace(switch, reembedded=int(len(items)) if reembed else 0)
    all_rows, new_rows = np.arange(len(items)), np.arange(n_base, len(items))
    again = relinked(items, n_base, state.pairs, classified.changed)  # they lost links: searched again
    day = day_again(kept, today, classified, last, older, of_last_day(last, latest, timezone, seen))
    if day:  # the day's items, searched again as the run that read them searched them
        again = np.union1d(again, np.flatnonzero(items["id"].iloc[:n_base].isin(today["id"]).to_numpy()))
    return Window(
        items=items,
        n_base=n_base,
        embed_rows=all_rows if reembed else new_rows,
        query_rows=all_rows if switch is not None else np.union1d(again, new_rows),
        today_ids=items["id"].iloc[n_base:].tolist(),
        base_embeddings=state.embeddings[keep_mask] if not reembed and state.embeddings is not None else None,
        base_index=state.index if (not reembed and keep_mask.all()) else None,
        previous=previous,
        anchors=anchors,
        previous_topics=previous_topics,
        topic_anchors=topic_anchors,
        old_pairs=prune(state.pairs, classified.gone, regroup=switch is not None),
        old_clusters=state.clusters,
        counts=classified.counts(int(len(corpus.quarantined))),
        as_of=ref,
        run_id=run_id,
        input_key=key,
        switch=switch,
        reembed=reembed,
        regroup=switch is not None,
        state=state,
        older_day=older,
        day_clock=clock,
        newest_day=newest,
        held=classified.held,
        again=day,
    )
