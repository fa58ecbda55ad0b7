"""The report page for editors (``index.html``), assembled from its data (:mod:`nlsim.report.page`), its
prose (:mod:`nlsim.report.prose`) and its review panel (:mod:`nlsim.report.review`).

``index.html`` is one self-contained file (inline CSS and JavaScript, no network, no CDN). It opens on what
an editor comes for, in this order:

- what an editor must know first: a zero-shot model (no fine-tuned model was ever promoted), a model switch
  in a daily run, a day run after a later one or with nothing new;
- the day in brief (:mod:`nlsim.report.brief`): the items, the stories (new and grown today), the largest
  stories and the topic groups, each a link;
- one line in plain words on how far to trust the groupings (:func:`~nlsim.report.prose.plain_quality`:
  "about two in three of the pairs this model links are truly the same story", by cluster size when the
  report was judged, and the topic groups' figure);
- every story cluster, latest activity first, in pages of 50 (rendered in the browser from the data
  embedded in the page, so thousands of clusters stay fast), with search, filters and sort; each with its
  topic group as a label that opens the group (its stories and single items; topics never open the page),
  its items (linked to the article when the corpus has an http(s) ``url``), its daily status (new / grown /
  merged / regrouped, the items that joined, the clusters it absorbed), the pairs, with their scores, that
  joined it, and a card of the editors' verdicts that joined or split it;
- the review panel and the rubric (:mod:`nlsim.report.review`);
- the model card: which model judged (version, zero-shot or fine-tuned), its Spearman agreement with the
  annotated pairs before and after fine-tuning, precision/recall/F1 at the threshold in use and where that
  threshold came from, the learning curve when the model folder has one;
- an overview: counts, clusters by size, by day (or month) of their first item and by daily status, each a
  filter; ``overview.png`` and ``stories.png`` side by side (:mod:`nlsim.report.plots`).

Times, and the days clusters are grouped by, are in the run's time zone (``--timezone``, the daily
deployment's ``timezone``; :func:`~nlsim.report.page.page_zone`). Scores are shown with the threshold's
decimals, cut, never rounded up (:func:`~nlsim.report.page.score_digits`).

Titles are text, never markup: the page builds the list with ``textContent``, and the data is embedded as
JSON with ``<``, ``>`` and ``&`` escaped. User text (titles, sources, ids, file and model names) is
bidi-isolated (``<bdi>``, ``dir=auto``, isolate marks in ``<option>``): a right-to-left override in it
reorders only itself, never the page's own words around it. ``lang`` is set on the page (``en``, its own
words) and on every title holding Han characters (``zh-Hant`` / ``zh-Hans``: the title's own script,
:func:`~nlsim.report.page.title_langs`; for a title that reads the same in both, the run's conversion's
source script, else ``zh``; ``ja`` or ``ko`` for one that holds kana or Hangul), and the font stack names CJK
fonts of every platform.

Example:
    >>> import pandas as pd
    >>> from nlsim.report.record import Counts, RunRecord
    >>> page = render_html(pd.DataFrame(columns=["cluster_id"]), pd.DataFrame(columns=["cluster_id"]),
    ...                    RunRecord(model="m", counts=Counts(items_in=0)))
    >>> page.startswith("<!doctype html>"), '<html lang="en">' in page
    (True, True)
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from nlsim.progress import counted
from nlsim.report import review
from nlsim.report.brief import day_brief
from nlsim.report.page import SIZE_BUCKETS, page_data
from nlsim.report.prose import (
    esc,
    iso,
    model_card_html,
    notices,
    plain_quality,
    spreadsheet_notice,
    threshold_text,
)
from nlsim.report.record import RunRecord

STATUS_TEXT = {
    "new": "new clusters",
    "grown": "grown (new items joined)",
    "merged": "merged (absorbed other clusters)",
    "regrouped": "regrouped after a model change",
    "dissolved": "dissolved by a model change (its items are no longer grouped together)",
    "unchanged": "unchanged",
}
STATUSES = tuple(STATUS_TEXT)


def _asset(name: str) -> str:
    return resources.files("nlsim.report").joinpath("assets", name).read_text(encoding="utf-8")


def _json_script(data: dict[str, Any]) -> str:
    """JSON safe inside ``<script>``: no ``</script>``, no ``<!--``, no entity."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _bars(title: str, key: str, counts: list[tuple[str, int]], note: str = "") -> str:
    if not counts:
        return ""
    top = max(n for _, n in counts) or 1
    rows = "".join(
        f"<li><button type='button' class='bar' data-filter='{key}' data-value='{esc(label)}' "
        f"title='show only these clusters'><span class='label'>{esc(label)}</span>"
        f"<span class='track'><span class='fill' style='width:{100 * n / top:.1f}%'></span></span>"
        f"<span class='count'>{n:,}</span></button></li>"
        for label, n in counts
    )
    return f"<div class='bars'><h3>{esc(title)}</h3>{note}<ul>{rows}</ul></div>"


def _overview(data: dict[str, Any], record: RunRecord) -> str:
    clusters = [c for c in data["clusters"] if c["status"] != "dissolved"]  # the current ones
    counts = record.counts  # counted once, by the run (nlsim.dedup.run.run_record)
    figures = [
        (counts.items_in, "items read"),
        (counts.pairs, "pairs"),
        (counts.clusters, "clusters"),
        (counts.clustered_items, "items in clusters"),
    ]
    if data["daily"]:
        figures.append((record.clusters_in_window, "clusters in the window"))
    stats = "".join(
        f"<div class='stat'><span class='n'>{esc(f'{v:,}' if isinstance(v, int) else str(v))}</span>"
        f"<span>{esc(label)}</span></div>"
        for v, label in figures
        if v is not None
    )
    parts = [f"<section id='overview' class='panel'><h2>Overview</h2><div class='stats'>{stats}</div>"]
    if data["daily"]:
        window = record.clusters_in_window
        parts.append(
            "<p class='meta'>A daily report lists the clusters this run touched"
            + (
                f" ({counts.clusters:,} of the window's {window:,})"
                if isinstance(window, int) and counts.clusters is not None
                else ""
            )
            + ": the window's current clusters are in <code>window/clusters.parquet</code> and "
            "<code>window/members.csv</code>.</p>"
        )
    parts.append("<div class='charts'>")
    sizes = Counter(c["bucket"] for c in clusters)
    parts.append(
        _bars("Clusters by size (items)", "bucket", [(b, sizes[b]) for *_, b in SIZE_BUCKETS if sizes[b]])
    )
    periods = Counter(c["period"] or "undated" for c in clusters)
    order = sorted(k for k in periods if k != "undated") + (["undated"] if "undated" in periods else [])
    unit = data["periodUnit"]
    zone = data["timeZone"]
    parts.append(
        _bars(f"Clusters by {unit} of their first item ({zone})", "period", [(p, periods[p]) for p in order])
    )
    if data["daily"]:
        status = Counter(c["status"] for c in data["clusters"])
        parts.append(
            _bars(
                "Clusters by status in this run",
                "status",
                [(s, status[s]) for s in STATUSES if status[s]],
            )
        )
    parts.append("</div>")
    stories = "stories by the hour or day of their first item" + (", new and grown" if data["daily"] else "")
    parts.append(
        "<div class='plots'><figure><img src='overview.png' alt='pair similarities against the threshold, "
        "and cluster sizes' loading='lazy'><figcaption>Scores and sizes (overview.png)</figcaption></figure>"
        f"<figure id='stories-plot'><img src='stories.png' alt='{esc(stories)}' loading='lazy'>"
        "<figcaption>Stories over time (stories.png)</figcaption></figure></div></section>"
    )
    return "".join(parts)


def option_value(text: str) -> str:
    """A filter option's value as the page holds it: percent-encoded UTF-8, as JavaScript's
    ``encodeURIComponent`` writes it and the page's script reads it back (``decodeURIComponent``), so that
    the HTML parser changes none of it (in an attribute it reads a carriage return as a line feed and a NUL
    as U+FFFD: a source holding one would match no cluster).

    >>> option_value("Daily\\rNews"), option_value("AP (UK)"), option_value("4–5")
    ('Daily%0DNews', 'AP%20(UK)', '4%E2%80%935')
    """
    return quote(text, safe="-_.!~*'()")


def _controls(data: dict[str, Any]) -> str:
    statuses = ""
    if data["daily"]:
        opts = "".join(
            f"<option value='{esc(option_value(s))}' title='{esc(STATUS_TEXT[s])}'>{s}</option>"
            for s in STATUSES
        )
        statuses = (
            "<label>Status <select id='f-status' data-filter='status'><option value=''>all</option>"
            f"{opts}</select></label>"
        )
    sizes = "".join(
        f"<option value='{esc(option_value(b))}'>{esc(b)} items</option>" for *_, b in SIZE_BUCKETS
    )
    sources = Counter(s for c in data["clusters"] for s in c["sources"])
    src_opts = "".join(  # an option holds text only: the source between isolate marks (FSI ... PDI)
        f"<option value='{esc(option_value(s))}'>\u2068{esc(s)}\u2069 ({n:,})</option>"
        for s, n in sorted(sources.items(), key=lambda x: (-x[1], x[0]))
    )
    periods = sorted({c["period"] for c in data["clusters"] if c["period"]})
    period_opts = "".join(f"<option value='{esc(option_value(p))}'>{esc(p)}</option>" for p in periods)
    if any(c["period"] is None for c in data["clusters"]):
        period_opts += "<option value='undated'>undated</option>"
    return (
        "<div id='controls' class='controls' role='search'>"
        "<input id='q' type='search' placeholder='Search titles, sources, ids…' autocomplete='off' "
        "aria-label='search the clusters'>"
        f"{statuses}"
        "<label>Size <select id='f-bucket' data-filter='bucket'><option value=''>all</option>"
        f"{sizes}</select></label>"
        f"<label>{'Day' if data['periodUnit'] == 'day' else 'Month'} "
        "<select id='f-period' data-filter='period'>"
        f"<option value=''>all</option>{period_opts}</select></label>"
        f"<label>Source <select id='f-source' data-filter='source'><option value=''>all</option>{src_opts}"
        "</select></label>"
        "<label>Sort <select id='sort'><option value='recent'>latest activity first</option>"
        "<option value='size'>largest first</option>"
        "<option value='newest'>newest first</option><option value='oldest'>oldest first</option>"
        "<option value='score'>highest score first</option>"
        + ("<option value='status'>by status</option>" if data["daily"] else "")
        + "</select></label>"
        "<button type='button' id='reset'>Reset</button>"
        "</div>"
    )


def _cluster_list(data: dict[str, Any]) -> str:
    """The clusters section: controls, pagers and the list the page's script draws."""
    n = len(data["clusters"])
    when = f" (times in {esc(data['timeZone'])})"
    return (
        f"<section id='list' class='panel'><h2>Stories{when}</h2>"
        "<p class='meta'>Each story cluster, latest activity first, with its topic when it has one: open the "
        "topic to see its other stories and its single items.</p>"
        + _controls(data)
        + "<p id='shown' class='shown' aria-live='polite'>"
        + esc(f"{counted(n, 'cluster', 'clusters')}; the list needs JavaScript.")
        + "</p>"
        "<noscript><p class='notice'>This list is drawn by the page's script. Without it, every cluster is "
        "in <code>clusters.parquet</code>, <code>members.csv</code> and <code>report.xlsx</code> beside this "
        "page.</p></noscript>"
        "<div id='topic-view' class='topic-view' hidden></div>"
        "<div class='pager' id='pager-top'></div><ol id='clusters' class='clusters'></ol>"
        "<div class='pager' id='pager-bottom'></div></section>"
    )


def render_html(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    frame: pd.DataFrame | None = None,
    *,
    learning_curve: str | None = None,
    near_misses: pd.DataFrame | None = None,
    topics: pd.DataFrame | None = None,
) -> str:
    """The report page (see the module docstring). ``learning_curve``: the file name of the learning-curve
    PNG copied beside the page, if any; ``near_misses``: the pairs below the threshold, for review;
    ``topics``: the topic groups (``topics.parquet``) the stories belong to."""
    data = page_data(pairs, clusters, record, frame, near_misses, topics)
    when = record.finished_at or ""
    mode = "daily run " + record.run_id if data["daily"] else "batch run"
    meta = " · ".join(
        x
        for x in (
            esc(mode),
            f"written {esc(when)}" if when else "",
            f"corpus {iso(Path(record.corpus).name)}" if record.corpus else "",
            f"model {iso(record.model_name)}",
            f"threshold {threshold_text(record.threshold)}",
        )
        if x
    )
    n = len(data["clusters"])
    head = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="nlsim">'
        f"<title>Near-duplicate report · {counted(n, 'cluster', 'clusters')}</title>"
        f"<style>{_asset('report.css')}\n{review.review_style()}</style></head>"
    )
    body = [
        "<body><header><h1>Near-duplicate and related news items</h1>",
        f"<p class='meta'>{meta}</p>",
        "<nav><a href='#list'>Clusters</a> · <a href='#review'>Review</a> · <a href='#rubric'>Rubric</a> · "
        "<a href='#model'>Model</a> · <a href='#overview'>Overview</a></nav></header><main>",
        # what an editor comes for first: the warnings, how far to trust the groupings, the clusters
        *notices(record),
        day_brief(data, record),
        plain_quality(record),
        _cluster_list(data),
        review.review_section(data),
        review.rubric_section(),
        spreadsheet_notice(record.spreadsheet_changes or []),
        model_card_html(record, learning_curve),
        _overview(data, record),
        "</main>",
        "<footer><p class='meta'>Every cluster of this report is listed above (in pages). The same data: "
        "<code>clusters.parquet</code>, <code>pairs.parquet</code>, <code>members.csv</code>, "
        "<code>pairs.csv</code>, <code>report.xlsx</code>; the stories as JSON for other systems: "
        "<code>stories.json</code>; the run record: <code>run.json</code>.</p>"
        "</footer>",
        f"<script id='nlsim-data' type='application/json'>{_json_script(data)}</script>",
        f"<script>{_asset('report.js')}\n{_asset('rules.js')}\n{review.review_script()}</script></body></html>",
    ]
    return head + "\n".join(body) + "\n"
