"""The report's plots on the times a corpus may hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nlsim.report.plots import render_overview_png, render_stories_png, story_periods
from nlsim.report.record import Counts, RunRecord


def test_stories_dated_further_apart_than_a_timedelta_holds_are_counted_by_month() -> None:
    """The loader reads the years 1678-2261; two stories more than 292 years apart (an item of 1700 beside
    today's) made the span of their times overflow pandas' Timedelta, and the report stopped with a
    traceback after all the run's work. They are counted by month, as the page groups them."""
    clusters = pd.DataFrame(
        {
            "status": ["new", "new"],
            "first_published": pd.to_datetime(["1700-01-01T00:00Z", "2024-05-01T08:00Z"], utc=True).astype(
                "datetime64[ns, UTC]"  # as the report's tables hold times
            ),
        }
    )
    unit, periods = story_periods(clusters, "Asia/Taipei")
    assert unit == "month" and periods.tolist() == ["1700-01", "2024-05"]


def test_the_charts_of_a_run_of_one_item_pair_cluster_and_story_are_titled_in_the_singular(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report of one item, pair, cluster and story titled its charts "1 items", "1 pairs: cosine",
    "1 clusters: size" and "1 stories by day"; they now count each in the singular."""
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)  # the charts' figures, kept to read their titles
    record = RunRecord(model="m", threshold=0.8, counts=Counts(items_in=1))
    pairs = pd.DataFrame({"similarity": [0.9]})
    clusters = pd.DataFrame({"size": [2], "first_published": pd.to_datetime(["2024-05-01T08:00Z"], utc=True)})
    render_overview_png(pairs, clusters, record, tmp_path / "overview.png")
    render_stories_png(clusters, record, tmp_path / "stories.png")
    overview, stories = figures
    assert [ax.get_title() for ax in overview.axes] == ["1 pair: cosine", "1 cluster: size"]
    assert overview._suptitle.get_text() == "1 item · model m"
    assert stories.axes[0].get_title().startswith("1 story by ")


def stories_bars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, times: list[str], zone: str
) -> list[tuple[str, int]]:
    """The bars of ``stories.png`` for stories first published at these times: each bar's label and height."""
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)  # the chart's figure, kept to read its bars
    clusters = pd.DataFrame(
        {"status": ["new"] * len(times), "first_published": pd.to_datetime(times, utc=True)}
    )
    render_stories_png(clusters, RunRecord(model="m", timezone=zone), tmp_path / "stories.png")
    (ax,) = figures[0].axes
    labels = [tick.get_text() for tick in ax.get_xticklabels()]
    heights = [int(bar.get_height()) for bar in ax.patches]
    assert len(labels) == len(heights)  # one label a bar, as a chart of a few hours has
    return list(zip(labels, heights, strict=True))


def test_the_hour_that_a_spring_change_of_clocks_skips_is_no_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New York's clocks went from 02:00 to 03:00 on 2024-03-10: stories at 01:30 and 03:30 were drawn with an
    empty bar for 02:00 between them, an hour that never happened. The bars are the hours that did; the days
    around the change are counted each as one day."""
    times = ["2024-03-10T06:30Z", "2024-03-10T07:30Z"]  # 01:30 EST, 03:30 EDT
    bars = stories_bars(tmp_path, monkeypatch, times, "America/New_York")
    assert bars == [("2024-03-10 01:00", 1), ("2024-03-10 03:00", 1)]
    days = ["2024-03-09T04:30Z", "2024-03-10T04:30Z", "2024-03-11T03:30Z", "2024-03-12T03:30Z"]  # 23:30 local
    bars = stories_bars(tmp_path, monkeypatch, days, "America/New_York")
    assert bars == [("2024-03-08", 1), ("2024-03-09", 1), ("2024-03-10", 1), ("2024-03-11", 1)]


def test_the_hour_that_an_autumn_change_of_clocks_repeats_is_two_bars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New York's clocks went from 02:00 back to 01:00 on 2024-11-03: a story in each pass of 01:00 was
    counted in one bar "2024-11-03 01:00" of two stories. Each pass is its own bar, in the order they
    happened, and a label that would repeat says its offset from UTC."""
    clusters = pd.DataFrame(
        {
            "status": ["new"] * 2,
            "first_published": pd.to_datetime(["2024-11-03T05:10Z", "2024-11-03T06:10Z"], utc=True),
        }
    )
    unit, periods = story_periods(clusters, "America/New_York")
    assert unit == "hour" and periods.tolist() == ["2024-11-03 01:00 -04:00", "2024-11-03 01:00 -05:00"]
    times = ["2024-11-03T04:30Z", "2024-11-03T06:30Z", "2024-11-03T07:30Z"]  # 00:30 EDT, 01:30 EST, 02:30 EST
    assert stories_bars(tmp_path, monkeypatch, times, "America/New_York") == [
        ("2024-11-03 00:00", 1),
        ("2024-11-03 01:00 -04:00", 0),
        ("2024-11-03 01:00 -05:00", 1),
        ("2024-11-03 02:00", 1),
    ]
    times = ["2024-10-27T00:30Z", "2024-10-27T01:30Z"]  # Berlin's two passes of 02:30, at +02:00 then +01:00
    assert stories_bars(tmp_path, monkeypatch, times, "Europe/Berlin") == [
        ("2024-10-27 02:00 +02:00", 1),
        ("2024-10-27 02:00 +01:00", 1),
    ]


def test_a_wire_story_of_2000_copies_and_thousands_of_pairs_each_show_as_a_bar_of_the_sizes_chart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A news day's clusters: thousands of pairs and a wire story of 2,000 copies. One bar a size on a linear
    axis from 2 to 2,000 drew each bar a sixth of a pixel wide, and the chart showed nothing: neither the
    pairs nor the giant story. Every cluster is counted in a bar wide enough to see, the largest too."""
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)  # the chart's figure, kept to read its bars
    sizes = [2] * 3000 + [3] * 800 + [4] * 300 + [7] * 40 + [35] * 3 + [640, 1800, 2000]
    clusters = pd.DataFrame({"size": sizes})
    record = RunRecord(model="m", threshold=0.9, counts=Counts(items_in=60_000))
    render_overview_png(pd.DataFrame({"similarity": [0.95]}), clusters, record, tmp_path / "overview.png")
    (overview,) = figures
    chart = overview.axes[1]
    bars = [p for p in chart.patches if p.get_height() > 0]
    assert sum(p.get_height() for p in bars) == len(sizes)
    widths = [p.get_window_extent().width for p in bars]
    assert min(widths) >= 3, widths  # pixels
    largest = max(bars, key=lambda p: p.get_x())
    assert largest.get_x() <= 2000 <= largest.get_x() + largest.get_width()
    smallest = min(bars, key=lambda p: p.get_x())
    assert smallest.get_x() <= 2 < smallest.get_x() + smallest.get_width() and smallest.get_height() == 3000


def test_the_sizes_chart_of_a_daily_run_counts_its_current_clusters_not_the_dissolved_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daily run after a model change lists the clusters it dissolved, with the members they had, at the end
    of its clusters table: the sizes chart counted them as clusters ("3 clusters: size", a bar of size 4),
    where the page and the run's counts hold 2. It counts the current clusters, as the stories chart does."""
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)  # the chart's figure, kept to read its bars
    clusters = pd.DataFrame(
        {
            "status": ["new", "grown", "dissolved"],
            "size": [2, 3, 4],
            "first_published": pd.to_datetime(["2024-05-01T08:00Z"] * 3, utc=True),
        }
    )
    record = RunRecord(model="m", mode="incremental", threshold=0.8, counts=Counts(items_in=9, clusters=2))
    render_overview_png(pd.DataFrame({"similarity": [0.9, 0.95]}), clusters, record, tmp_path / "o.png")
    (overview,) = figures
    chart = overview.axes[1]
    assert chart.get_title() == "2 clusters: size"
    bars = {round(p.get_x() + p.get_width() / 2): int(p.get_height()) for p in chart.patches}
    assert bars == {2: 1, 3: 1}


def test_the_sizes_chart_of_one_size_labels_whole_sizes_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose clusters are all of one size (one story of 3 items) drew its one bar over an axis labelled
    2.6, 2.7, ... 3.4 items: the integer ticks asked for fell back to fractions for want of a second whole
    size in view. The axis names the sizes there are, whole."""
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)  # the chart's figure, kept to read its axis
    record = RunRecord(model="m", threshold=0.8, counts=Counts(items_in=3))
    clusters = pd.DataFrame({"size": [3]})
    render_overview_png(pd.DataFrame({"similarity": [1.0, 1.0]}), clusters, record, tmp_path / "o.png")
    (overview,) = figures
    chart = overview.axes[1]
    overview.canvas.draw()
    labels = [t.get_text() for t in chart.get_xticklabels() if t.get_text()]
    assert labels == ["3"], labels


def _stories_on(days: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A report of one story of two items on each of these days: its items, pairs table and clusters."""
    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table

    times = [t for day in days for t in (f"{day}T00:00Z", f"{day}T00:30Z")]
    frame = pd.DataFrame(
        {
            "id": [f"n{i}" for i in range(len(times))],
            "title": [f"story {i // 2}" for i in range(len(times))],
            "source": ["AP"] * len(times),
            "published_at": pd.to_datetime(times, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": range(0, len(times), 2), "b": range(1, len(times), 2), "similarity": 0.95})
    labels, clusters = batch_clusters(frame, pairs)
    return frame, pairs_table(frame, pairs, labels), clusters


@pytest.mark.parametrize(
    ("days", "unit"),
    [
        (["2024-01-01", "2024-03-15"], "month"),  # two days 74 days apart: the page grouped them by day
        ([str(d.date()) for d in pd.date_range("2024-01-01", periods=63)], "day"),  # 63 days, 62 apart
    ],
)
def test_the_page_and_stories_png_switch_from_days_to_months_by_one_rule(days: list[str], unit: str) -> None:
    """The page grouped stories by month past 62 distinct days of their first items, ``stories.png`` past a
    span of 62 days: two stories 74 days apart were two days on the page and two months in the chart. Both
    follow the span now (:func:`nlsim.report.page.day_or_month`)."""
    from nlsim.report.page import page_data

    frame, table, clusters = _stories_on(days)
    record = RunRecord(model="m", threshold=0.9)
    data = page_data(table, clusters, record, frame)
    chart_unit, periods = story_periods(clusters, "UTC")
    assert data["periodUnit"] == chart_unit == unit
    assert sorted({c["period"] for c in data["clusters"]}) == sorted(set(periods))


@pytest.mark.parametrize(
    ("scores", "threshold"),
    [
        ([1.0, 1.0, 1.0], 0.9),  # identical copies only: the axis ran from 0.5 to 1.5
        ([1.0], None),
        ([0.95, 0.97, 1.0000001], 0.9),  # a float32 cosine a hair over 1 is a 1
        ([0.2], 0.1),
    ],
)
def test_the_score_axis_of_overview_png_stays_within_what_a_score_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scores: list[float], threshold: float | None
) -> None:
    """With every pair's score 1.0 the histogram's axis of ``overview.png`` ran from 0.5 to 1.5: a cosine
    or a probability is never above 1. The axis stays within 0 to 1, and shows the threshold and every
    score."""
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)
    record = RunRecord(model="m", threshold=threshold, counts=Counts(items_in=2))
    clusters = pd.DataFrame({"size": [2]})
    render_overview_png(pd.DataFrame({"similarity": scores}), clusters, record, tmp_path / "overview.png")
    low, high = figures[0].axes[0].get_xlim()
    assert 0.0 <= low < high <= 1.0
    assert low <= min(min(scores), threshold if threshold is not None else 1.0)
    assert high >= min(1.0, max(scores))
    bars = [p for p in figures[0].axes[0].patches if p.get_height() > 0]
    assert sum(p.get_height() for p in bars) == len(scores)
    assert all(low <= p.get_x() and p.get_x() + p.get_width() <= high for p in bars)


def test_stories_within_48_hours_are_counted_by_hour_and_two_passes_of_an_hour_apart_however_far_back() -> (
    None
):
    """Stories whose first items are at most 48 hours apart are counted by hour, further apart by day; an
    hour that a change of clocks repeats two hours later (Troll's clocks go back from +02:00 to +00:00) is
    two bars, each saying its offset."""
    two_days = pd.DataFrame(
        {"status": ["new"] * 2, "first_published": pd.to_datetime(["2024-05-01T00:00Z", "2024-05-03T00:00Z"])}
    )
    assert story_periods(two_days, "UTC")[0] == "hour"
    longer = two_days.assign(first_published=pd.to_datetime(["2024-05-01T00:00Z", "2024-05-03T01:00Z"]))
    assert story_periods(longer, "UTC")[0] == "day"
    troll = two_days.assign(
        first_published=pd.to_datetime(["2024-10-26T23:30Z", "2024-10-27T01:30Z"], utc=True)
    )
    unit, periods = story_periods(troll, "Antarctica/Troll")
    assert unit == "hour" and periods.tolist() == ["2024-10-27 01:00 +02:00", "2024-10-27 01:00 +00:00"]


def test_the_last_hour_of_the_stories_chart_keeps_its_story_when_the_first_is_late_in_its_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stories at 00:55 and 02:05: every hour between them is a bar, and the story of 02:05 is counted in
    the bar of 02:00."""
    bars = stories_bars(tmp_path, monkeypatch, ["2024-05-01T00:55Z", "2024-05-01T02:05Z"], "UTC")
    assert bars == [("2024-05-01 00:00", 1), ("2024-05-01 01:00", 0), ("2024-05-01 02:00", 1)]


def test_a_daily_runs_stories_chart_stacks_new_grown_and_other_changes_and_counts_undated_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daily run's stories are drawn new, grown and otherwise changed (merged, regrouped) apart, each kind
    stacked on the ones before it; the title counts every story, and says how many are undated."""
    import matplotlib.pyplot as plt

    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)
    clusters = pd.DataFrame(
        {
            "status": ["new", "new", "grown", "merged", "regrouped", "new"],
            "first_published": pd.to_datetime(["2024-05-01T08:00Z"] * 5 + [None], utc=True),
        }
    )
    record = RunRecord(model="m", mode="incremental", run_id="daily-1", timezone="UTC")
    render_stories_png(clusters, record, tmp_path / "stories.png")
    (ax,) = figures[0].axes
    drawn = {c.get_label(): [(p.get_y(), p.get_height()) for p in c.patches] for c in ax.containers}
    assert drawn == {"new": [(0, 2)], "grown": [(2, 1)], "merged or regrouped": [(3, 2)]}
    assert ax.get_title() == "6 stories by hour of their first item (UTC) (1 undated)"


def test_a_size_span_of_40_is_one_bar_a_size_and_12_sizes_are_each_labelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cluster sizes spanning at most 40 are drawn one bar a size (2 and 42: two bars, 2 and 42), and up to
    12 sizes are each labelled by its own tick."""
    import matplotlib.pyplot as plt

    from nlsim.report.plots import size_bins

    assert [b.tolist() for b in size_bins(np.array([2, 42, 42]))] == [[2, 42], [3, 43], [1, 2]]
    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)
    record = RunRecord(model="m", threshold=0.8, counts=Counts(items_in=90))
    clusters = pd.DataFrame({"size": list(range(2, 14))})
    render_overview_png(pd.DataFrame({"similarity": [0.9]}), clusters, record, tmp_path / "o.png")
    chart = figures[0].axes[1]
    assert chart.get_xticks().tolist() == list(range(2, 14))


def test_negative_cosines_stay_in_view_and_the_threshold_line_is_at_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cosine may be below 0: the histogram's axis reaches it (never cut at 0), a narrow stretch of
    negative scores is not moved to 0 to 0.05, and the dashed line is drawn at the run's threshold."""
    import matplotlib.pyplot as plt

    from nlsim.report.plots import score_axis

    assert score_axis(np.array([-0.3, -0.28]), None) == (-0.33, -0.28)
    figures: list[Any] = []
    monkeypatch.setattr(plt, "close", figures.append)
    record = RunRecord(model="m", threshold=0.6, counts=Counts(items_in=4))
    scores = [-0.2, 0.5, 0.7]
    render_overview_png(
        pd.DataFrame({"similarity": scores}), pd.DataFrame({"size": [2]}), record, tmp_path / "o"
    )
    left = figures[0].axes[0]
    low, high = left.get_xlim()
    assert low < -0.2 and high > 0.7
    assert sum(p.get_height() for p in left.patches) == len(scores)
    (line,) = left.get_lines()
    assert line.get_label() == "threshold" and list(line.get_xdata()) == [0.6, 0.6]
