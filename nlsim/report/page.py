"""The report page's data: what the page's script draws (``index.html``, :mod:`nlsim.report.html`).

The data is embedded in the page as JSON (:func:`page_data`), with the declarations of the tables it holds
(``columns``: each column's name, label, format, whether the page shows it, its source and, for a clusters
column, its reduction; :mod:`nlsim.io.columns`): the page's script draws its tables' headers and cells from
them. Every row is an object keyed by column name, with the values of the columns the page shows
(:func:`nlsim.io.columns.page_rows`); a column of items (``source="item.id"``: a pair's two items, a
cluster's representative, members and added items) holds their indexes into the page's items instead of
their ids. The items, each id once, are rows of the ``items`` columns the report shows. The clusters are
rows of the clusters table (:func:`nlsim.clusters.table.cluster_table` made them), with the size bucket,
the day or month of their first item and the pairs that joined them (rows of the pairs table). For the
review panel: the near misses (rows of their table) and what the export records
(:mod:`nlsim.report.review`). Times, and the days clusters are grouped by, are in the run's time zone
(:func:`page_zone`); scores are kept to :data:`SCORE_DIGITS` decimals, cut, never rounded up
(:func:`nlsim.io.columns.page_score`), and shown with the threshold's (:func:`score_digits`).

Example:
    >>> import pandas as pd
    >>> from nlsim.report.record import JOINED, ClusterChange, RunRecord
    >>> clusters = pd.DataFrame({"cluster_id": ["c1"], "size": [2], "member_ids": [["a", "b"]],
    ...                          "representative": ["b"]})
    >>> data = page_data(pd.DataFrame(), clusters, RunRecord(model="m", threshold=0.9), None)
    >>> cluster = data["clusters"][0]
    >>> [item["id"] for item in data["items"]], cluster["member_ids"], cluster["representative"]
    (['a', 'b'], [0, 1], 1)
    >>> [c["name"] for c in data["columns"]["pairs"] if c["shown"]]  # no reranker: the score alone
    ['id_a', 'id_b', 'similarity']
    >>> data["scoreDigits"], data["timeZone"]
    (3, 'UTC')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import asdict, replace
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd

from nlsim.conversion import convert
from nlsim.io import columns
from nlsim.report import review
from nlsim.report.record import JOINED, ClusterChange, RunRecord
from nlsim.report.scores import with_scores

PAGE_SIZE = 50
"""Clusters per page of the list (the reader can choose 20, 50, 100 or 500)."""
TITLE_CHARS = 300
"""The characters of a title a line of a list shows (a story's row, the day in brief, a topic, an editor's
decision); a longer one (an article's body in its title field) is cut there with "…", its first
:data:`TOOLTIP_CHARS` in its tooltip, whole in the opened story's items (:func:`short_title`)."""
TOOLTIP_CHARS = 2_000
"""The characters of a cut title its tooltip holds."""


def short_title(text: str) -> tuple[str, str | None]:
    """A title as a line of a list shows it (:data:`TITLE_CHARS`, whole characters) and its tooltip (``None``
    when it is not cut).

    >>> short_title("Floods")
    ('Floods', None)
    >>> cut, tip = short_title("Floods " * 1000)
    >>> len(cut), cut[-1], len(tip)
    (301, '…', 2001)
    """
    if len(text) <= TITLE_CHARS:
        return text, None
    tip = text if len(text) <= TOOLTIP_CHARS else text[:TOOLTIP_CHARS] + "…"
    return text[:TITLE_CHARS] + "…", tip


SIZE_BUCKETS = (
    (2, 2, "2"),
    (3, 3, "3"),
    (4, 5, "4–5"),
    (6, 10, "6–10"),
    (11, 20, "11–20"),
    (21, None, "21+"),
)
MAX_DAYS = 62
"""Stories are counted by day of their first item while their first items span at most this many days, by
month beyond (:func:`day_or_month`)."""
CJK_LANG = {"tw2sp": "zh-Hant", "t2s": "zh-Hant", "s2t": "zh-Hans", "s2twp": "zh-Hans"}
"""The ``lang`` of Chinese titles, from the run's conversion (its source script); ``zh`` otherwise: the
titles whose own script says otherwise are marked with it (:func:`title_langs`)."""
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")


HAN_BLOCKS = ((0x3400, 0x4DC0), (0x4E00, 0xA000), (0xF900, 0xFB00))
"""The Han blocks whose characters the page's search reads in either script: CJK Unified Ideographs,
Extension A and the compatibility ideographs."""


@cache
def traditional_forms() -> dict[str, tuple[str, ...]]:
    """Each Simplified character and the characters of :data:`HAN_BLOCKS` that OpenCC ``t2s`` turns into it
    (``台``: ``檯 臺 颱``; ``发``: ``發 髮``), built once (about 0.1 s)."""
    chars = [chr(c) for start, end in HAN_BLOCKS for c in range(start, end)]
    forms: dict[str, list[str]] = {}
    for ch, simple in zip(chars, convert(chars, "t2s"), strict=True):
        if len(simple) == 1 and simple != ch:
            forms.setdefault(simple, []).append(ch)
    return {simple: tuple(chs) for simple, chs in forms.items()}


def script_fold(texts: Iterable[str]) -> dict[str, str]:
    """What the page's search reads Traditional and Simplified Chinese as one with: each Han character of
    ``texts``, its Traditional forms (OpenCC ``s2t``, ``s2twp``) and every character ``t2s`` turns into
    the same Simplified one (:func:`traditional_forms`), mapped to its Simplified form (``t2s``, character
    by character) where that differs. An editor typing either script finds a title written in the other,
    also where the page holds no title in the script typed (颱風 finds 台风, 頭髮 finds 头发).

    >>> fold = script_fold(["颱風登陸臺東", "台风"])
    >>> "".join(fold.get(ch, ch) for ch in "颱風 台風 臺东")
    '台风 台风 台东'
    >>> fold = script_fold(["台风 头发"])
    >>> "".join(fold.get(ch, ch) for ch in "颱風 頭髮")
    '台风 头发'
    """
    han = sorted({ch for text in texts for ch in text if HAN.match(ch)})
    if not han:
        return {}
    forms = set(han)
    for mode in ("s2t", "s2twp"):
        forms.update(t for t in convert(han, mode) if len(t) == 1)
    every = traditional_forms()
    for simple in convert(han, "t2s"):
        forms.update(every.get(simple, ()))
    chars = sorted(forms)
    return {ch: s for ch, s in zip(chars, convert(chars, "t2s"), strict=True) if len(s) == 1 and s != ch}


KANA = re.compile(
    "[\u3041-\u306d\u306f-\u3096\u309d\u309e\u30a1-\u30fa\u30fd\u30fe\u31f0-\u31ff\uff66-\uff6f\uff71-\uff9d]"
)
"""Hiragana and katakana but the hiragana の, which Taiwanese headlines write for 的 (日本の名店), and the
marks Chinese text uses too (the katakana middle dot between names, the prolonged sound mark): a title
with Han characters that holds one is Japanese."""
HANGUL = re.compile("[\u1100-\u115e\u1161-\u11ff\u3131-\u3163\u3165-\u318e\uac00-\ud7a3]")
"""Hangul letters and syllables (the fillers, which show nothing, aside): a title with Han characters that
holds one is Korean, written with hanja."""


def script_of(text: str) -> str | None:
    """The script a ``text`` with Han characters is written in, as a ``lang`` tag: ``ja`` when it holds
    kana (:data:`KANA`), ``ko`` when it holds Hangul (:data:`HANGUL`), else Chinese: ``zh-Hant`` when
    OpenCC ``t2s`` changes it, ``zh-Hans`` when ``s2t`` does, ``None`` when neither does (no Han character,
    or one that reads the same in both scripts).

    >>> script_of("颱風登陸"), script_of("台风登陆"), script_of("大人"), script_of("Typhoon")
    ('zh-Hant', 'zh-Hans', None, None)
    >>> script_of("台風が接近"), script_of("서울 大雨"), script_of("日本の名店 來台"), script_of("서울")
    ('ja', 'ko', 'zh-Hant', None)
    """
    if not HAN.search(text):
        return None
    if KANA.search(text):
        return "ja"
    if HANGUL.search(text):
        return "ko"
    if convert([text], "t2s")[0] != text:
        return "zh-Hant"
    if convert([text], "s2t")[0] != text:
        return "zh-Hans"
    return None


def title_langs(rows: Sequence[dict[str, Any]], default: str) -> dict[str, str]:
    """The ``lang`` of each item's title (by the item's index) whose script (:func:`script_of`) is not
    ``default``, the run's (:data:`CJK_LANG`): in a day of Traditional and Simplified headlines each
    title is marked with its own script."""
    out = {}
    for i, row in enumerate(rows):
        title = row.get("title")
        lang = script_of(title) if isinstance(title, str) else None
        if lang is not None and lang != default:
            out[str(i)] = lang
    return out


def page_zone(name: str | None) -> ZoneInfo:
    """The time zone the page shows its times and days in: the run's ``--timezone`` (UTC when the run
    recorded none, or names a zone this machine does not know).

    >>> page_zone("Asia/Taipei").key, page_zone(None).key, page_zone("Mars/Olympus").key
    ('Asia/Taipei', 'UTC', 'UTC')
    """
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


SCORE_DIGITS = 6
"""Scores are kept in the page to this many decimals, cut, never rounded up (shown to the threshold's,
:func:`score_digits`)."""


def score_digits(threshold: Any) -> int:
    """How many decimals the page shows a score with: as many as the threshold has (at least 3, at most 6).
    The page's script cuts a score to them (rounds down, never up), so a score below the threshold never
    shows as the threshold itself (0.909419 is 0.9094 beside the threshold 0.9095, not 0.909).

    >>> score_digits(0.9095), score_digits(0.9), score_digits(0.909485), score_digits(None)
    (4, 3, 6, 3)
    """
    t = columns.page_threshold(threshold, SCORE_DIGITS)
    if t is None:
        return 3
    decimals = f"{t:.6f}".rstrip("0").split(".")[1]
    return max(3, len(decimals))


def _size_bucket(size: int) -> str:
    for lo, hi, label in SIZE_BUCKETS:
        if size >= lo and (hi is None or size <= hi):
            return label
    return str(size)


def current_clusters(clusters: pd.DataFrame) -> pd.DataFrame:
    """The clusters a report lists as current: those a daily run dissolved (listed with the members they
    had) left out."""
    return clusters[clusters["status"] != "dissolved"] if "status" in clusters else clusters


def day_or_month(clusters: pd.DataFrame) -> str:
    """Whether the page and ``stories.png`` count these stories by the ``day`` or the ``month`` of their
    first item: by day while the first items of the current ones (:func:`current_clusters`; undated ones
    aside) span at most :data:`MAX_DAYS` days, from the earliest instant to the latest, by month beyond
    (``stories.png`` goes on to hours within :data:`nlsim.report.plots.HOURLY_SPAN`).

    >>> first = pd.to_datetime(["2024-01-01T00:00Z", "2024-03-03T00:00Z", "2024-03-03T00:01Z"], utc=True)
    >>> day_or_month(pd.DataFrame({"first_published": first[:2]}))
    'day'
    >>> day_or_month(pd.DataFrame({"first_published": first[::2]}))
    'month'
    """
    current = current_clusters(clusters)
    if "first_published" not in current:
        return "day"
    dated = pd.to_datetime(current["first_published"], utc=True).dropna()
    # in nanoseconds as Python integers: the times read span up to 583 years, a Timedelta holds 292
    span = dated.max().value - dated.min().value if len(dated) else 0
    return "day" if span <= pd.Timedelta(days=MAX_DAYS).value else "month"


def _periods(firsts: list[str | None], unit: str) -> list[str | None]:
    """Each cluster's period from its first item's time on the page (``YYYY-MM-DD``, or ``YYYY-MM`` when
    ``unit`` is ``month``, :func:`day_or_month`)."""
    cut = 10 if unit == "day" else 7
    return [f[:cut] if f else None for f in firsts]


class _Items:
    """The page's items: each id once, as an object of the ``items`` columns the page shows (``spec``:
    ``id``, ``title``, ``source``, ``url``, ``published_at``, :mod:`nlsim.io.columns`), found by its index;
    times in ``zone``."""

    def __init__(self, frame: pd.DataFrame | None, spec: columns.Table, zone: ZoneInfo | None = None) -> None:
        self.columns = [c for c in spec.columns if c.shown]
        self.empty = {c.name: columns.page_value(c, None) for c in self.columns}
        self.known: dict[str, dict[str, Any]] = {}
        if frame is not None and len(frame):
            rows = columns.page_rows(
                frame.assign(id=frame["id"].astype(str)), self.columns, zone, SCORE_DIGITS
            )
            self.known = {row["id"]: self.empty | row for row in rows}  # a column the frame lacks: empty
        self.rows: list[dict[str, Any]] = []
        self.index: dict[str, int] = {}

    def __call__(self, item_id: Any) -> int:
        """The index of ``item_id`` in :attr:`rows` (added at its first use)."""
        key = str(item_id)
        if key not in self.index:
            self.index[key] = len(self.rows)
            known = self.known.get(key)
            self.rows.append(known if known is not None else self.empty | {"id": key})  # unknown: its id only
        return self.index[key]


RERANK_SCORES = ("cosine", "cross_encoder")
"""The scores a run without a reranker has none of its own of (its score is the cosine; no cross-encoder):
its page does not show them."""
PAGE_TABLES = ("items", "pairs", "clusters", "topics", "near_misses")
"""The tables whose rows the page holds."""


def page_tables(record: RunRecord) -> dict[str, columns.Table]:
    """The tables whose rows the page holds, with the columns of their own (a pairs table's items are the
    page's items: their own columns are not repeated), those the page shows marked ``shown`` (for this
    run: :data:`RERANK_SCORES` only with a reranker)."""
    sides = {c.name for c in columns.sides()}
    out = {}
    for name in PAGE_TABLES:
        spec = columns.table(name)
        own = [c for c in spec.columns if c.name not in sides]
        if record.rerank is None:
            own = [replace(c, shown=False) if c.name in RERANK_SCORES else c for c in own]
        out[name] = replace(spec, columns=tuple(own))
    return out


def page_rows(
    frame: pd.DataFrame | None,
    spec: columns.Table,
    item: _Items,
    zone: ZoneInfo | None = None,
    threshold: float | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``frame`` as the page holds them: the values of the columns the page shows, by name (a
    column the frame lacks: empty), the items of a column of ``source="item.id"`` as their indexes
    (:class:`_Items`); a score at or above ``threshold`` never held below it
    (:func:`nlsim.io.columns.page_score`)."""
    if frame is None or not len(frame):
        return []
    shown = [c for c in spec.columns if c.shown]
    rows = columns.page_rows(
        frame.reindex(columns=[c.name for c in shown]),
        shown,
        zone,
        SCORE_DIGITS,
        cut=True,
        threshold=threshold,
    )
    items = [c for c in shown if c.source == "item.id"]
    for c in sorted(items, key=lambda c: c.format != "list"):  # lists first: items in member order
        for row in rows:
            value = row[c.name]
            row[c.name] = (
                [item(v) for v in value] if isinstance(value, list) else item(value) if value else None
            )
    return rows


def first_screen_order(
    clusters: pd.DataFrame, zone: ZoneInfo | None = None, threshold: float | None = None
) -> list[int]:
    """The row positions of ``clusters`` in the order the page's list opens on (``assets/report.js``,
    sort "latest activity first"): the last item's time to the minute the page shows it at, latest first
    (its instant: in the hour a fall-back repeats, 01:10 UTC-05:00 comes after 01:50 UTC-04:00, whatever
    ``zone`` the page shows them in; none last), then the strongest link as the page holds it (at
    ``threshold``, :func:`nlsim.io.columns.page_score`), the larger story, the cluster id.

    >>> clusters = pd.DataFrame({"cluster_id": ["c-a", "c-b", "c-c"], "size": [2, 3, 2],
    ...     "last_published": pd.to_datetime(["2024-08-01T08:00Z", "2024-08-01T08:00Z", None], utc=True),
    ...     "max_similarity": [0.95, 0.95, 0.99]})
    >>> first_screen_order(clusters)
    [1, 0, 2]
    """
    if not len(clusters):
        return []
    n = len(clusters)
    last = clusters["last_published"].tolist() if "last_published" in clusters else [None] * n
    best = clusters["max_similarity"].tolist() if "max_similarity" in clusters else [None] * n
    sizes, ids = clusters["size"].tolist(), clusters["cluster_id"].astype(str).tolist()

    def key(k: int) -> tuple[Any, ...]:
        minute = _page_minute(last[k])
        return (
            (1, 0) if minute is None else (0, -minute),  # later first; a missing time after every one
            -(columns.page_score(best[k], SCORE_DIGITS, threshold) or 0),
            -int(sizes[k] or 0),
            ids[k],
        )

    return sorted(range(n), key=key)


def _page_minute(value: Any) -> int | None:
    """The instant of a time, in whole minutes since 1970 (the minute the page shows it at; a time without
    a zone is UTC, as :func:`nlsim.io.columns.page_time` reads it); ``None`` when there is none."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    stamp = pd.Timestamp(value)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return int(stamp.floor("min").value // 60_000_000_000)


def _cluster_pairs(
    pairs: pd.DataFrame,
    spec: columns.Table,
    item: _Items,
    zone: ZoneInfo | None,
    threshold: float | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Each cluster's pairs as the page's rows, highest score first."""
    rows: dict[str, list[dict[str, Any]]] = {}
    if not len(pairs) or "cluster_id" not in pairs:
        return rows
    for cluster, row in zip(
        pairs["cluster_id"], page_rows(with_scores(pairs), spec, item, zone, threshold), strict=True
    ):
        rows.setdefault(str(cluster), []).append(row)
    for found in rows.values():
        found.sort(key=lambda p: -(p["similarity"] or 0))
    return rows


def _copies(pairs: pd.DataFrame, item: _Items) -> dict[int, int]:
    """Each exact copy's representative (:mod:`nlsim.clusters.copies`), as indexes into the page's items:
    the pairs marked ``exact_copy`` link a copy to its group's representative, its earliest item, which the
    pairs table puts first (``id_a``). The review panel's preview reads a group as the run's rule does."""
    if not len(pairs) or "exact_copy" not in pairs:
        return {}
    copy = pairs["exact_copy"].fillna(False).astype(bool).to_numpy()
    found = pairs[copy]
    return {item(b): item(a) for a, b in zip(found["id_a"], found["id_b"], strict=True)}


def cluster_verdicts(
    clusters: list[dict[str, Any]],
    changes: Sequence[ClusterChange],
    item: Callable[[Any], int],
    known: Container[str],
) -> dict[str, list[dict[str, Any]]]:
    """Each cluster's card of the editors' verdicts that changed it (``clusters``: the page's rows, items
    as indexes; ``changes``: the run record's :class:`~nlsim.report.record.ClusterChange`, each acting
    verdict the rule without the verdicts would not have followed; ``item``: an item's index on the page,
    ``known``: the ids the page holds): a same-story verdict ``joined`` two of its items, a not-the-same-story
    verdict ``split`` one of its items from another (``other``: the cluster the other item is in, ``None``
    for none); ``overrules``: the verdict overrules an annotator's score; ``notes``: the editor's note on
    it, when it has one. A verdict the rule would have followed anyway changed nothing and has no card.

    >>> from nlsim.report.record import ClusterChange
    >>> rows = [{"cluster_id": "c-a", "member_ids": [0, 1]}, {"cluster_id": "c-c", "member_ids": [2, 3]}]
    >>> changes = [ClusterChange("a", "b", 1.0, "joined"), ClusterChange("b", "c", 0.0, "split")]
    >>> cards = cluster_verdicts(rows, changes, "abcd".index, "abcd")
    >>> [(v["how"], v["b"], v["other"]) for v in cards["c-a"]], [(v["how"], v["b"]) for v in cards["c-c"]]
    ([('joined', 1, None), ('split', 2, 'c-c')], [('split', 1)])
    """
    home = {i: c["cluster_id"] for c in clusters for i in c["member_ids"]}
    out: dict[str, list[dict[str, Any]]] = {}
    for change in changes:
        if str(change.id_a) not in known or str(change.id_b) not in known:
            continue
        a, b = item(change.id_a), item(change.id_b)
        said = {"overrules": change.overrules} | ({"notes": change.notes} if change.notes else {})
        said |= {"confirms": True} if change.confirms else {}
        if change.change == JOINED:
            if home.get(a) is not None:
                out.setdefault(home[a], []).append({"how": "joined", "a": a, "b": b, "other": None} | said)
            continue
        for mine, other in ((a, b), (b, a)):
            if home.get(mine) is not None:
                card = {"how": "split", "a": mine, "b": other, "other": home.get(other)}
                out.setdefault(home[mine], []).append(card | said)
    return out


def page_data(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    frame: pd.DataFrame | None,
    near_misses: pd.DataFrame | None = None,
    topics: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """What the page's script renders (see the module docstring): the declarations of its tables
    (``columns``), the items, the clusters with the pairs that joined them and the card of the editors'
    verdicts that changed them (``verdicts``, :func:`cluster_verdicts`), the topic groups (``topics``:
    rows of ``topics.parquet``), the story rule the review panel's preview runs (``rule``,
    :class:`~nlsim.report.record.StoryRule`; ``None`` for a record without it) and each exact copy's
    representative it reads the copies as (``copies``, :func:`_copies`); for the review panel, the near
    misses and what the export records (:mod:`nlsim.report.review`); what the search reads Traditional and
    Simplified Chinese as one with (``fold``, :func:`script_fold`). Times and days are in the run's time
    zone (``timeZone``); scores are shown with ``scoreDigits`` decimals."""
    zone = page_zone(record.timezone)
    tables = page_tables(record)
    item = _Items(frame, tables["items"], zone)
    pair_rows = _cluster_pairs(pairs, tables["pairs"], item, zone, record.threshold)
    out = page_rows(clusters, tables["clusters"], item, zone, record.threshold)
    copies = _copies(pairs, item)
    editors = review.editors_data(record.editors, item, item.known)
    changes = record.editors.cluster_changes if record.editors is not None else []
    cards = cluster_verdicts(out, changes, item, item.known)
    unit = day_or_month(clusters)
    periods = _periods([c["first_published"] for c in out], unit)
    for c, p in zip(out, periods, strict=True):
        c["bucket"] = _size_bucket(int(c["size"] or 0))
        c["period"] = p
        c["pairs"] = pair_rows.get(c["cluster_id"], [])
        c["verdicts"] = cards.get(c["cluster_id"], [])
    cjk_lang = CJK_LANG.get(record.conversion, "zh")
    return {
        "daily": record.daily,
        "cjkLang": cjk_lang,
        "titleLang": title_langs(item.rows, cjk_lang),
        "pageSize": PAGE_SIZE,
        "titleChars": TITLE_CHARS,
        "tooltipChars": TOOLTIP_CHARS,
        "periodUnit": unit,
        "threshold": columns.page_threshold(record.threshold, SCORE_DIGITS),
        "scoreDigits": score_digits(record.threshold),
        "timeZone": zone.key,
        "columns": {name: columns.page_spec(spec) for name, spec in tables.items()},
        "items": item.rows,
        "fold": script_fold(str(v) for row in item.rows for v in row.values() if isinstance(v, str)),
        "clusters": out,
        "topics": page_rows(topics, tables["topics"], item, zone),
        "rule": None if record.story_rule is None else asdict(record.story_rule),
        "copies": copies,
        "nearMisses": page_rows(near_misses, tables["near_misses"], item, zone, record.threshold),
        "review": review.review_meta(record),
        "editors": editors,
    }
