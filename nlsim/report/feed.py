"""The day's stories as JSON (``stories.json`` in the report folder), for a CMS or a chat bot.

One object: the schema's version (:data:`FEED_SCHEMA_VERSION`), the run (id, batch or daily, when it was
written, the day's clock and the time zone its times are in), the model that judged (name, model-store
version, fingerprint) and one object per story (a row of ``clusters.parquet``): its cluster and topic ids,
its status, its size, its representative item (id, title, url, source, time), its first and last item's
time, its members (ids and titles, earliest first). Times are ISO 8601 with the time zone's offset
(``2024-08-01T16:30:00+08:00``); a missing one is ``null``. The stories come in the order the page's list
opens on (:func:`nlsim.report.page.first_screen_order`: latest activity first). The file is written with
the report's other files and published with them (:mod:`nlsim.report.files`): a failed run leaves the
previous one intact.

Example:
    >>> import pandas as pd
    >>> clusters = pd.DataFrame({"cluster_id": ["c-a"], "size": [2], "member_ids": [["a", "b"]],
    ...                          "representative": ["a"], "status": ["new"],
    ...                          "first_published": pd.to_datetime(["2024-08-01T08:30Z"], utc=True)})
    >>> frame = pd.DataFrame({"id": ["a", "b"], "title": ["Flood", "Flood!"], "source": ["AP", "AFP"],
    ...                       "published_at": pd.to_datetime(["2024-08-01T08:30Z", None], utc=True)})
    >>> feed = stories_feed(clusters, RunRecord(run_id="r1", timezone="Asia/Taipei"), frame)
    >>> story = feed["stories"][0]
    >>> story["representative"]["title"], story["first_published"], [m["title"] for m in story["members"]]
    ('Flood', '2024-08-01T16:30:00+08:00', ['Flood', 'Flood!'])
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd

from nlsim.io import columns
from nlsim.report.page import first_screen_order, page_zone
from nlsim.report.record import RunRecord

FEED_SCHEMA_VERSION = 1
"""The version of ``stories.json``'s layout: raised when a field changes meaning or goes away (a new field
keeps it)."""
FEED = "stories.json"
UNKNOWN = {"title": "", "url": None, "source": "", "published_at": None}
"""What the feed says of an item the report's items do not hold."""


def iso_time(value: Any, zone: ZoneInfo) -> str | None:
    """A time as ISO 8601 with ``zone``'s offset (``None`` when there is none).

    >>> iso_time("2024-08-01T20:30Z", ZoneInfo("Asia/Taipei")), iso_time(None, ZoneInfo("UTC"))
    ('2024-08-02T04:30:00+08:00', None)
    """
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    stamp = pd.Timestamp(value)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return stamp.tz_convert(zone).isoformat()


def _items(frame: pd.DataFrame | None, zone: ZoneInfo) -> dict[str, dict[str, Any]]:
    """Each item of ``frame`` by id: its title, url (http(s) only), source and time."""
    if frame is None or not len(frame):
        return {}
    out = {}
    for row in frame.reindex(columns=["id", "title", "url", "source", "published_at"]).itertuples():
        out[str(row.id)] = {
            "id": str(row.id),
            "title": columns.page_text(row.title),
            "url": columns.safe_url(row.url),
            "source": columns.page_text(row.source),
            "published_at": iso_time(row.published_at, zone),
        }
    return out


def _story(c: Any, items: dict[str, dict[str, Any]], zone: ZoneInfo) -> dict[str, Any]:
    """One story of the feed from a row of the clusters table."""

    def item(i: Any) -> dict[str, Any]:  # an id the items do not hold: its id alone
        return items[str(i)] if str(i) in items else {"id": str(i)} | UNKNOWN

    members = columns.page_list(c.member_ids)
    topic = getattr(c, "topic_id", None)
    return {
        "cluster_id": str(c.cluster_id),
        "topic_id": None if not columns.page_text(topic) else str(topic),
        "status": columns.page_text(getattr(c, "status", "")) or None,
        "size": int(c.size),
        "representative": item(c.representative),
        "first_published": iso_time(getattr(c, "first_published", None), zone),
        "last_published": iso_time(getattr(c, "last_published", None), zone),
        "member_ids": members,
        "members": [{"id": m, "title": item(m)["title"]} for m in members],
        "added_ids": columns.page_list(getattr(c, "added_ids", None)),
    }


def stories_feed(clusters: pd.DataFrame, record: RunRecord, frame: pd.DataFrame | None) -> dict[str, Any]:
    """``stories.json``'s object (see the module docstring)."""
    zone = page_zone(record.timezone)
    items = _items(frame, zone)
    rows = list(clusters.itertuples(index=False)) if len(clusters) else []
    order = first_screen_order(clusters, zone, record.threshold)
    info = record.info
    return {
        "schema_version": FEED_SCHEMA_VERSION,
        "run_id": record.run_id,
        "mode": "daily" if record.daily else "batch",
        "written_at": iso_time(record.finished_at, zone),
        "as_of": iso_time(record.as_of, zone),
        "timezone": zone.key,
        "model": {
            "name": record.model_name,
            "version": info.version,
            "zero_shot": info.zero_shot,
            "fingerprint": record.model_fingerprint or info.fingerprint or None,
        },
        "threshold": columns.page_number(record.threshold, 6),
        "stories": [_story(rows[n], items, zone) for n in order],
    }


def write_stories_json(
    path: Path, clusters: pd.DataFrame, record: RunRecord, frame: pd.DataFrame | None
) -> None:
    """Write ``stories.json`` (:func:`stories_feed`) to ``path``, in the report's folder being written."""
    feed = stories_feed(clusters, record, frame)
    path.write_text(json.dumps(feed, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
