"""The summary of the day at the top of the report page: the figures an editor wants first, in words.

One short block above the story list (``<section id='brief'>``): how many items the run read, how many
stories it lists (for a daily run, how many are new and how many grew today) and how many items they
group, the largest stories of the day by title and the topic groups, each a link: a story opens in the
list (``#cluster-<id>``), a topic group opens its view (``#topic-<id>``). Everything in it comes from the
run record's counts and the page's data (:func:`nlsim.report.page.page_data`): the page's script only
follows the links.

Example:
    >>> import pandas as pd
    >>> from nlsim.report.page import page_data
    >>> from nlsim.report.record import Counts, RunRecord
    >>> record = RunRecord(model="m", counts=Counts(items_in=5, clusters=1, clustered_items=2))
    >>> clusters = pd.DataFrame({"cluster_id": ["c-a"], "size": [2], "member_ids": [["a", "b"]],
    ...                          "representative": ["a"], "status": ["new"]})
    >>> frame = pd.DataFrame({"id": ["a", "b"], "title": ["Flood in the north", "Flood!"]})
    >>> html = day_brief(page_data(pd.DataFrame(), clusters, record, frame), record)
    >>> "5 items read; 1 story grouping 2 items." in html, "href='#cluster-c-a'" in html
    (True, True)
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pandas as pd

from nlsim.progress import counted
from nlsim.report.page import page_zone, short_title
from nlsim.report.prose import esc
from nlsim.report.record import RunRecord

LARGEST = 5
"""The largest stories the summary names (and as many topic groups)."""
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _title(data: dict[str, Any], index: int | None) -> str:
    """An item's title as the summary shows it: text, bidi-isolated, ``lang`` set when it holds Han, cut as
    a list's line cuts it (:func:`nlsim.report.page.short_title`)."""
    if index is None:
        return "<bdi>(no title)</bdi>"
    text = " ".join(str(data["items"][index]["title"] or "").split()) or "(no title)"
    lang = f" lang='{data['cjkLang']}'" if HAN.search(text) else ""
    shown, tip = short_title(text)  # a title that holds a whole article must not fill the first screen
    tooltip = f" title='{esc(tip)}'" if tip is not None else ""
    return f"<bdi dir='auto'{lang}{tooltip}>{esc(shown)}</bdi>"


def _figures(record: RunRecord, current: list[dict[str, Any]]) -> str:
    """The day's figures in one sentence, from the run's counts (a record without them: the stories the page
    holds)."""
    c = record.counts
    stories = counted(c.clusters if c.clusters is not None else len(current), "story", "stories")
    if record.daily and c.clusters_new is not None:
        # every status of the day's stories, so that the parts add up to the whole: a model switch
        # regroups stories that are neither new nor grown
        parts = [f"{c.clusters_new:,} new", f"{c.clusters_grown or 0:,} grown"]
        regrouped = sum(1 for s in current if s["status"] == "regrouped")
        parts += [
            f"{n:,} {what}" for n, what in ((c.clusters_merged, "merged"), (regrouped, "regrouped")) if n
        ]
        stories += f" ({', '.join(parts)} today)"
    text = stories if c.items_in is None else f"{counted(c.items_in, 'item', 'items')} read; {stories}"
    if c.clustered_items is not None:
        text += f" grouping {counted(c.clustered_items, 'item', 'items')}"
    if c.topics:
        text += f"; {counted(c.topics, 'topic group', 'topic groups')}"
    return esc(text[0].upper() + text[1:] + ".")


def _when(record: RunRecord) -> str:
    """The day a daily run's clock names, in the run's time zone ('' for a batch run or none)."""
    if not record.daily or not record.as_of:
        return ""
    day = pd.Timestamp(record.as_of).tz_convert(page_zone(record.timezone))
    return f" of {day.strftime('%Y-%m-%d')} ({esc(page_zone(record.timezone).key)})"


def _stories(data: dict[str, Any], current: list[dict[str, Any]]) -> str:
    """The largest current stories (``current``: dissolved ones aside), largest first, each a link into the
    list."""
    largest = sorted(current, key=lambda c: (-int(c["size"] or 0), c["cluster_id"]))[:LARGEST]
    if not largest:
        return "<p class='meta'>No story: no two items of this run tell the same story.</p>"
    rows = "".join(
        f"<li><a class='brief-story' href='#cluster-{esc(quote(c['cluster_id']))}'>"
        f"{_title(data, c['representative'])}</a> · {int(c['size']):,} items"
        + (f" · {esc(c['status'])}" if data["daily"] and c["status"] else "")
        + "</li>"
        for c in largest
    )
    return f"<h3>The largest stories</h3><ol class='brief-list'>{rows}</ol>"


def _topics(data: dict[str, Any]) -> str:
    """The topic groups with the most stories, each a link that opens its view ('' without topics)."""
    topics = sorted(
        data["topics"], key=lambda t: (-int(t["stories"] or 0), -int(t["size"] or 0), t["topic_id"])
    )
    if not topics:
        return ""
    rows = "".join(
        f"<li><a class='brief-topic' href='#topic-{esc(quote(t['topic_id']))}'>"
        f"{_title(data, t['representative'])}</a> · {int(t['stories'] or 0):,} stories, "
        f"{int(t['size'] or 0):,} items</li>"
        for t in topics[:LARGEST]
    )
    more = (
        f"<p class='meta'>and {len(topics) - LARGEST:,} more topic groups.</p>"
        if len(topics) > LARGEST
        else ""
    )
    return f"<h3>Topic groups</h3><ol class='brief-list'>{rows}</ol>{more}"


def day_brief(data: dict[str, Any], record: RunRecord) -> str:
    """The summary block (see the module docstring); ``data``: the page's data."""
    head = f"The day in brief{_when(record)}" if record.daily else "This run in brief"
    current = [c for c in data["clusters"] if c["status"] != "dissolved"]
    return (
        f"<section id='brief' class='panel brief'><h2>{head}</h2>"
        f"<p id='brief-figures' class='brief-figures'>{_figures(record, current)}</p>"
        f"<div class='brief-columns'><div>{_stories(data, current)}</div><div>{_topics(data)}</div></div>"
        "</section>"
    )
