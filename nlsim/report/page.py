"""The report page's data: what the page's script draws (``index.html``, :mod:`nlsim.report.html`).

The data is embedded in the page as JSON (:func:`page_data`): the items, each id once, as objects of the
``items`` columns the report shows (keyed by column name, :mod:`nlsim.io.columns`), found by their index; the
clusters (members, daily status, added items, absorbed ids, scores, the pairs that joined them, the day or
month of their first item); the columns' labels; for the review panel, the near misses and what the export
records (:mod:`nlsim.report.review`). Times, and the days clusters are grouped by, are in the run's time
zone (:func:`page_zone`); scores are kept to :data:`SCORE_DIGITS` decimals and shown with the threshold's
(:func:`score_digits`).

Example:
    >>> import pandas as pd
    >>> from nlsim.report.record import RunRecord
    >>> clusters = pd.DataFrame({"cluster_id": ["c1"], "size": [2], "member_ids": [["a", "b"]],
    ...                          "representative": ["b"]})
    >>> data = page_data(pd.DataFrame(), clusters, RunRecord(model="m", threshold=0.9), None)
    >>> [item["id"] for item in data["items"]], data["clusters"][0]["members"], data["clusters"][0]["rep"]
    (['a', 'b'], [0, 1], 1)
    >>> data["scoreDigits"], data["timeZone"]
    (3, 'UTC')
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd

from nlsim.io import columns
from nlsim.report import review
from nlsim.report.record import RunRecord
from nlsim.report.scores import with_scores

PAGE_SIZE = 50
"""Clusters per page of the list (the reader can choose 20, 50, 100 or 500)."""
SIZE_BUCKETS = (
    (2, 2, "2"),
    (3, 3, "3"),
    (4, 5, "4–5"),
    (6, 10, "6–10"),
    (11, 20, "11–20"),
    (21, None, "21+"),
)
MAX_DAYS = 62
"""Clusters are counted by day of their first item up to this many days, by month beyond."""
CJK_LANG = {"tw2sp": "zh-Hant", "t2s": "zh-Hant", "s2t": "zh-Hans", "s2twp": "zh-Hans"}
"""The ``lang`` of Chinese titles, from the run's conversion (its source script); ``zh`` otherwise."""


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
"""Scores are kept in the page to this many decimals (shown to the threshold's, :func:`score_digits`)."""


def score_digits(threshold: Any) -> int:
    """How many decimals the page shows a score with: as many as the threshold has (at least 3, at most 6).
    The page's script cuts a score to them (rounds down, never up), so a score below the threshold never
    shows as the threshold itself (0.909419 is 0.9094 beside the threshold 0.9095, not 0.909).

    >>> score_digits(0.9095), score_digits(0.9), score_digits(0.909485), score_digits(None)
    (4, 3, 6, 3)
    """
    t = columns.page_number(threshold, 6)
    if t is None:
        return 3
    decimals = f"{t:.6f}".rstrip("0").split(".")[1]
    return max(3, len(decimals))


def _size_bucket(size: int) -> str:
    for lo, hi, label in SIZE_BUCKETS:
        if size >= lo and (hi is None or size <= hi):
            return label
    return str(size)


def _periods(firsts: list[str | None]) -> tuple[str, list[str | None]]:
    """Each cluster's period (``YYYY-MM-DD``, or ``YYYY-MM`` when the clusters span too many days)."""
    days = {f[:10] for f in firsts if f}
    if len(days) <= MAX_DAYS:
        return "day", [f[:10] if f else None for f in firsts]
    return "month", [f[:7] if f else None for f in firsts]


class _Items:
    """The page's items: each id once, as an object of the ``items`` columns the report shows (``id``,
    ``title``, ``source``, ``url``, ``published_at``, :mod:`nlsim.io.columns`), found by its index; times
    in ``zone``."""

    def __init__(self, frame: pd.DataFrame | None, zone: ZoneInfo | None = None) -> None:
        self.columns = [columns.ITEMS.column("id"), *columns.shown()]
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


def pair_row(row: Any, item: _Items, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """One pair as the page's script reads it: ``a`` and ``b`` (indexes into the page's items), its scores
    under their column names (to :data:`SCORE_DIGITS` decimals), and the ``extra`` columns of its table."""
    out: dict[str, Any] = {"a": item(row.id_a), "b": item(row.id_b)}
    for c in columns.SCORES:
        out[c.name] = columns.page_value(c, getattr(row, c.name, None), digits=SCORE_DIGITS)
    for name in extra:
        value = getattr(row, name, None)
        out[name] = None if value is None or pd.isna(value) else str(value)
    return out


def _cluster_pairs(pairs: pd.DataFrame, item: _Items) -> dict[str, list[dict[str, Any]]]:
    """Each cluster's pairs as the page's rows (:func:`pair_row`)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    if not len(pairs) or "cluster_id" not in pairs:
        return rows
    for r in with_scores(pairs).itertuples(index=False):
        rows.setdefault(str(r.cluster_id), []).append(pair_row(r, item))
    return rows


def _cluster_row(
    c: Any, item: _Items, pair_rows: dict[str, list[dict[str, Any]]], zone: ZoneInfo | None = None
) -> dict[str, Any]:
    """One cluster as the page's script reads it (its times in ``zone``)."""
    members = [item(m) for m in list(c.member_ids)]  # indexed in this order: members, added, representative
    added = [item(m) for m in columns.page_list(getattr(c, "added_ids", None))]
    return {
        "id": str(c.cluster_id),
        "status": columns.page_text(getattr(c, "status", "new")) or "new",
        "size": int(c.size),
        "bucket": _size_bucket(int(c.size)),
        "rep": item(c.representative),
        "members": members,
        "added": added,
        "absorbed": columns.page_list(getattr(c, "absorbed", None)),
        "sources": columns.page_list(getattr(c, "sources", None)),
        "first": columns.page_time(getattr(c, "first_published", None), zone),
        "last": columns.page_time(getattr(c, "last_published", None), zone),
        "max": columns.page_number(getattr(c, "max_similarity", None), SCORE_DIGITS),
        "mean": columns.page_number(getattr(c, "mean_similarity", None), SCORE_DIGITS),
        "weakest": columns.page_number(getattr(c, "weakest_link", None), SCORE_DIGITS),
        "pairs": sorted(pair_rows.get(str(c.cluster_id), []), key=lambda p: -(p["similarity"] or 0)),
    }


def page_data(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    frame: pd.DataFrame | None,
    near_misses: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """What the page's script renders: items (objects of the ``items`` columns the report shows) and
    clusters (members, status, added items, absorbed ids, scores and the pairs that joined them), the
    columns' labels; for the review panel, the near misses and what the export records
    (:mod:`nlsim.report.review`). Times and days are in the run's
    time zone (``timeZone``); scores are shown with ``scoreDigits`` decimals."""
    zone = page_zone(record.timezone)
    item = _Items(frame, zone)
    pair_rows = _cluster_pairs(pairs, item)
    out = [
        _cluster_row(c, item, pair_rows, zone)
        for c in (clusters.itertuples(index=False) if len(clusters) else ())
    ]
    unit, periods = _periods([c["first"] for c in out])
    for c, p in zip(out, periods, strict=True):
        c["period"] = p
    return {
        "daily": record.daily,
        "cjkLang": CJK_LANG.get(record.conversion, "zh"),
        "pageSize": PAGE_SIZE,
        "periodUnit": unit,
        "rerank": record.rerank is not None,
        "threshold": columns.page_number(record.threshold, 6),
        "scoreDigits": score_digits(record.threshold),
        "timeZone": zone.key,
        "items": item.rows,
        "labels": {name: columns.table(name).labels for name in ("items", "pairs")},
        "clusters": out,
        "nearMisses": review.near_miss_rows(near_misses, lambda r, extra: pair_row(r, item, extra)),
        "review": review.review_meta(record),
        "editors": review.editors_data(record.editors, item, item.known),
    }
