"""The report's plots on the times a corpus may hold."""

from __future__ import annotations

import pandas as pd

from nlsim.report.plots import story_periods


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
