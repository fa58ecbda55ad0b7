"""The report's plots, beside the page's overview: ``overview.png``, the pair similarities against the
threshold and the cluster sizes; ``stories.png``, the stories by the hour or day of their first item (in
the run's time zone), new and grown apart in a daily run.

matplotlib is imported when a plot is drawn, never before: it costs about a second to import, and only the
report needs it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from nlsim.progress import counted
from nlsim.report.page import current_clusters, day_or_month, page_zone
from nlsim.report.record import RunRecord

HOURLY_SPAN = pd.Timedelta(hours=48)
"""Stories whose first items all fall within this span are counted by hour, else by day or by month, as the
page counts them (:func:`~nlsim.report.page.day_or_month`)."""
STORY_KINDS = (("new", "#228833"), ("grown", "#cc8800"), ("other", "#8995a3"))
"""A daily run's stories in ``stories.png``: new, grown, and every other change (merged, regrouped), with
their colours."""


def story_firsts(clusters: pd.DataFrame, zone_name: str | None) -> pd.Series:
    """Each story's time of its first item in the run's time zone (``NaT``: undated); dissolved clusters
    left out."""
    current = current_clusters(clusters)
    column = current["first_published"] if "first_published" in current else pd.Series(None, current.index)
    return pd.to_datetime(column, utc=True).dt.tz_convert(page_zone(zone_name))


def story_periods(clusters: pd.DataFrame, zone_name: str | None) -> tuple[str, pd.Series]:
    """Each story's period of its first item in the run's time zone (``hour``, ``day`` or ``month``, as
    :data:`HOURLY_SPAN` and :func:`~nlsim.report.page.day_or_month` say), as a label (``None``: undated);
    dissolved clusters left out.

    >>> clusters = pd.DataFrame({"status": ["new", "new", "dissolved"], "first_published":
    ...     pd.to_datetime(["2024-08-01T23:30Z", None, "2024-08-01T01:00Z"], utc=True)})
    >>> unit, periods = story_periods(clusters, "Asia/Taipei")
    >>> unit, periods.tolist()
    ('hour', ['2024-08-02 07:00', None])
    """
    firsts = story_firsts(clusters, zone_name)
    dated = firsts.dropna()
    # in nanoseconds as Python integers: the times read span up to 583 years, a Timedelta holds 292
    span = dated.max().value - dated.min().value if len(dated) else 0
    unit = "hour" if span <= HOURLY_SPAN.value else day_or_month(clusters)
    if unit == "hour":
        labels = hour_labels(pd.DatetimeIndex(dated))
    else:
        labels = list(dated.dt.strftime(PERIOD_FREQ[unit][1]))
    periods = pd.Series(labels, index=dated.index, dtype=object).reindex(firsts.index)
    return unit, periods.where(firsts.notna(), None)


PERIOD_FREQ = {"hour": ("h", "%Y-%m-%d %H:00"), "day": ("D", "%Y-%m-%d"), "month": ("MS", "%Y-%m")}


def hour_labels(times: pd.DatetimeIndex) -> list[str]:
    """Each time's hour on the local clock, as a label; an hour that a change of clocks repeats says its
    offset from UTC, so that its two passes are two bars.

    >>> times = pd.to_datetime(["2024-11-03T04:30Z", "2024-11-03T05:30Z", "2024-11-03T06:30Z"], utc=True)
    >>> hour_labels(times.tz_convert("America/New_York"))
    ['2024-11-03 00:00', '2024-11-03 01:00 -04:00', '2024-11-03 01:00 -05:00']
    """
    wall = times.tz_localize(None)
    codes, _ = pd.MultiIndex.from_arrays([wall.floor("h"), wall - times.tz_convert(None)]).factorize()
    some = times[np.unique(codes, return_index=True)[1]]  # a time of each bar: an hour at an offset
    fmt = PERIOD_FREQ["hour"][1]
    walls, offsets = some.strftime(fmt), some.strftime("%z")
    twice = np.zeros(len(some), dtype=bool)
    for minutes in range(-120, 121, 15):  # the other pass of an hour, as far as a change of clocks goes back
        near = some + pd.Timedelta(minutes=minutes)
        twice |= (near.strftime(fmt) == walls) & (near.strftime("%z") != offsets)
    labels = [
        f"{wall} {z[:3]}:{z[3:5]}" if t else wall for wall, z, t in zip(walls, offsets, twice, strict=True)
    ]
    return list(np.array(labels, dtype=object)[codes])


def every_period(unit: str, times: pd.Series) -> list[str]:
    """Every period from the first of these times to the last (in their time zone), labelled as
    :func:`story_periods` labels them: the periods without a story are bars of none. The hours are those
    the local clock showed, so an hour that a change of clocks skips is none.

    >>> times = pd.Series(pd.to_datetime(["2024-03-10T06:30Z", "2024-03-10T07:30Z"], utc=True))
    >>> every_period("hour", times.dt.tz_convert("America/New_York"))
    ['2024-03-10 01:00', '2024-03-10 03:00']
    >>> every_period("day", times.dt.tz_convert("America/New_York"))
    ['2024-03-10']
    """
    if not len(times):
        return []
    if unit == "hour":
        # every quarter hour in between, each to its hour: a time zone's offset may be a part of an hour
        quarters = pd.date_range(times.min(), times.max(), freq="15min")
        return list(dict.fromkeys(hour_labels(quarters.append(pd.DatetimeIndex([times.max()])))))
    freq, fmt = PERIOD_FREQ[unit]
    return list(pd.date_range(times.min().strftime(fmt), times.max().strftime(fmt), freq=freq).strftime(fmt))


def render_stories_png(clusters: pd.DataFrame, record: RunRecord, path: Path) -> None:
    """The stories by the period of their first item (:func:`story_periods`); a daily run's new, grown and
    otherwise changed stories stacked."""
    import matplotlib  # deferred: matplotlib costs ~1 s to import and only the report needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: heavy or optional, loaded only when needed
    from matplotlib.ticker import MaxNLocator

    zone = page_zone(record.timezone).key
    unit, periods = story_periods(clusters, record.timezone)
    firsts = story_firsts(clusters, record.timezone)
    kind = pd.Series("new", index=periods.index)
    if record.daily and "status" in clusters:
        status = clusters.loc[periods.index, "status"]
        kind = status.where(status.isin(["new", "grown"]), "other")
    dated = periods.notna()
    counts = pd.crosstab(periods[dated], kind[dated]) if dated.any() else pd.DataFrame()
    counts = counts.reindex(every_period(unit, firsts.dropna()), fill_value=0)
    fig, ax = plt.subplots(figsize=(10, 3.6))
    bottom = None
    for name, colour in STORY_KINDS if record.daily else STORY_KINDS[:1]:
        if name in counts:
            values = counts[name].to_numpy()
            label = {"new": "new", "grown": "grown", "other": "merged or regrouped"}[name]
            ax.bar(range(len(counts)), values, bottom=bottom, color=colour, label=label)
            bottom = values if bottom is None else bottom + values
    if len(counts):
        step = max(1, len(counts) // 12)
        ax.set_xticks(range(0, len(counts), step), counts.index[::step], rotation=30, ha="right", fontsize=8)
    if record.daily and len(counts):
        ax.legend(loc="upper left")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    undated = int(periods.isna().sum())
    more = f" ({undated:,} undated)" if undated else ""
    stories = counted(len(periods), "story", "stories")
    ax.set(title=f"{stories} by {unit} of their first item ({zone}){more}", ylabel="stories")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


LINEAR_SIZES = 40
"""The cluster sizes ``overview.png`` draws one bar each, on a linear axis, when the largest cluster is at
most this many items larger than the smallest; beyond, a bar for each step of a logarithmic axis
(:func:`size_bins`), so that a story of 2,000 copies and the day's pairs are each a bar wide enough to see."""
SIZE_TICKS = 12
"""The cluster sizes ``overview.png`` labels each by its own tick, when there are at most this many (more:
whole sizes in steps a locator picks)."""
SIZE_STEPS = 24
"""The steps of the logarithmic axis of the cluster sizes (at most; :func:`size_bins`)."""


def in_steps(sizes: np.ndarray) -> bool:
    """Whether the cluster sizes span more than :data:`LINEAR_SIZES`: drawn in steps of a logarithmic axis."""
    return bool(sizes.max() - sizes.min() > LINEAR_SIZES)


def size_bins(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bars of the cluster sizes: each bar's lowest size, the size past its highest, and its clusters.
    One size a bar when the sizes span at most :data:`LINEAR_SIZES`; else sizes gathered in at most
    :data:`SIZE_STEPS` steps of equal width on a logarithmic axis (each size in exactly one step, and each
    step from a whole size to a whole size), the empty ones left out.

    >>> [b.tolist() for b in size_bins(np.array([2, 2, 3, 5]))]
    [[2, 3, 5], [3, 4, 6], [2, 1, 1]]
    >>> lows, highs, counts = size_bins(np.array([2] * 30 + [3, 40, 2000]))
    >>> lows[:2].tolist(), highs[-1].item(), counts.tolist()
    ([2, 3], 2001, [30, 1, 1, 1])
    """
    if not in_steps(sizes):
        values, counts = np.unique(sizes, return_counts=True)
        return values, values + 1, counts
    low, high = int(sizes.min()), int(sizes.max()) + 1
    edges = np.unique(np.round(np.geomspace(low, high, SIZE_STEPS + 1)).astype(np.int64))
    counts = np.histogram(sizes, bins=edges)[0]  # the last step holds its upper edge: none is that large
    kept = counts > 0
    return edges[:-1][kept], edges[1:][kept], counts[kept]


SCORE_SPAN = 0.05
"""The narrowest stretch of scores ``overview.png``'s histogram spans (pairs all of one score: identical
copies only)."""


def score_axis(scores: np.ndarray, threshold: float | None) -> tuple[float, float]:
    """The stretch of scores the histogram of ``overview.png`` bins (the scores and the threshold, at least
    :data:`SCORE_SPAN` wide), never beyond what a score can be: a cosine or a probability is at most 1 (a
    float32 cosine a hair over it is a 1), and a stretch of scores at or above 0 stays there.

    >>> score_axis(np.array([1.0, 1.0]), 0.9), score_axis(np.array([1.0]), None)
    ((0.9, 1.0), (0.95, 1.0))
    >>> score_axis(np.array([0.01]), 0.0)
    (0.0, 0.05)
    """
    values = [*np.minimum(scores, 1.0).tolist(), *([] if threshold is None else [min(threshold, 1.0)])]
    low, high = min(values), max(values)
    if high - low < SCORE_SPAN:
        low = high - SCORE_SPAN
        if low < 0 <= min(values):
            low, high = 0.0, SCORE_SPAN
    return round(low, 9), round(high, 9)


def render_overview_png(pairs: pd.DataFrame, clusters: pd.DataFrame, record: RunRecord, path: Path) -> None:
    """Two plots for a quick look: the pair similarities against the threshold, and the current clusters'
    sizes (one bar a size, or steps of a logarithmic axis when they span more than :data:`LINEAR_SIZES`;
    a daily run's dissolved clusters left out)."""
    import matplotlib  # deferred: matplotlib costs ~1 s to import and only the report needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: heavy or optional, loaded only when needed
    from matplotlib.ticker import MaxNLocator, ScalarFormatter

    clusters = current_clusters(clusters)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    threshold = None if record.threshold is None else float(record.threshold)
    if len(pairs):
        scores = pairs["similarity"].to_numpy(dtype=float)
        low, high = score_axis(scores, threshold)
        left.hist(np.minimum(scores, 1.0), bins=40, range=(low, high), color="#4477aa")
        margin = (high - low) * 0.02  # a little room on each side, never past what a score can be
        left.set_xlim(max(low - margin, 0.0) if low >= 0 else low - margin, min(high + margin, 1.0))
    if threshold is not None:
        left.axvline(threshold, color="#cc3311", linestyle="--", label="threshold")
        left.legend(loc="upper right")
    score = "rerank score" if record.rerank is not None else "cosine"
    left.set(title=f"{counted(len(pairs), 'pair', 'pairs')}: {score}", xlabel=score, ylabel="pairs")
    if len(clusters):
        sizes = clusters["size"].to_numpy(dtype=np.int64)
        lows, highs, counts = size_bins(sizes)
        if in_steps(sizes):  # a wire story of 2,000 copies beside pairs: sizes in steps
            right.bar(lows, counts, width=highs - lows, align="edge", color="#228833", edgecolor="white")
            right.set_xscale("log")
            right.xaxis.set_major_formatter(ScalarFormatter())  # 10, 100, 1000: sizes, not powers
        else:
            right.bar(lows, counts, color="#228833")
            if len(lows) <= SIZE_TICKS:  # the sizes there are, whole (one size: no fraction of an item)
                right.set_xticks(lows, [str(n) for n in lows])
            else:
                right.xaxis.set_major_locator(MaxNLocator(integer=True))
        right.set_yscale("log")
    sizes_title = f"{counted(len(clusters), 'cluster', 'clusters')}: size"
    right.set(title=sizes_title, xlabel="items in the cluster", ylabel="clusters")
    items = "? items" if record.items is None else counted(record.items, "item", "items")
    fig.suptitle(f"{items} · model {record.model or '?'}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
