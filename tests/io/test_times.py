"""The edges of reading one ``published_at`` cell (nlsim.io.times): the last day or hour each rule holds,
read one cell at a time (the corpus's own tests read whole files)."""

import datetime as dt
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from nlsim.io.times import check_time, placeholder_time

TAIPEI = ZoneInfo("Asia/Taipei")


def test_a_stored_timestamp_is_refused_as_seconds_in_a_finer_unit_up_to_the_last_day_of_february_1970():
    """Seconds of the years up to 2100 stored as milliseconds fall before 1970-03-01 (the last second of
    2099 on 1970-02-17), a whole hour among them past the 1st of January (seconds of a midnight, 2024-10-04,
    as milliseconds: 1970-01-21 00:00); a time from 1970-03-01 on is a time."""
    refused = [
        pd.Timestamp(4102444799, unit="ms", tz="UTC"),  # 2099-12-31T23:59:59 in seconds, as milliseconds
        pd.Timestamp(1728000000, unit="ms", tz="UTC"),  # 2024-10-04T00:00:00 in seconds: a whole hour
        pd.Timestamp("1970-02-28 23:59:59", tz="UTC"),
    ]
    for stored in refused:
        assert "first weeks of 1970" in (check_time(stored).reason or ""), stored
    first = pd.Timestamp("1970-03-01", tz="UTC")
    assert (check_time(first).reason, check_time(first).time) == (None, first)


@pytest.mark.parametrize(
    ("stored", "placeholder"),
    [
        (dt.datetime(1900, 1, 1), True),  # a database's zero date on Taipei's clock: 1899-12-31T16:00Z
        (dt.datetime(1904, 1, 1), True),  # a spreadsheet's (Excel for the Mac's 1904 date system)
        (dt.datetime(1899, 12, 30), True),
        (dt.datetime(1900, 1, 1, 12), False),  # the same day at noon: a time
        (dt.datetime(1904, 1, 1, 0, 0, 1), False),
    ],
)
def test_a_stored_timestamp_at_midnight_of_a_zero_date_on_the_runs_clock_is_a_placeholder(
    stored, placeholder
):
    """A Parquet timestamp without an offset is read on the run's clock; at midnight of a zero date there it
    is a placeholder for no date though it is another hour of another day in UTC, and at any other time of
    those days a time."""
    read = check_time(stored, TAIPEI)
    assert read.reason is None and read.naive
    assert placeholder_time(stored, read.time, TAIPEI) is placeholder


@pytest.mark.parametrize("written", ["1899-12-31", "1899/12/31 00:00:00", "1899-12-30T00:00Z"])
def test_a_spreadsheets_zero_date_written_as_text_is_a_placeholder(written):
    """1899-12-31 (the day before 1900-01-01, Lotus's and Excel's day 0) is a placeholder as 1899-12-30 is."""
    assert placeholder_time(written, check_time(written).time)


@pytest.mark.parametrize(
    ("year", "read"), [("49", 2049), ("50", 1950), ("68", 1968), ("69", 1969), ("99", 1999)]
)
def test_an_rfc_2822_two_digit_year_is_read_as_rfc_5322_says_on_either_side_of_1950(year, read):
    """RFC 5322 reads 00-49 after 2000 and 50-99 after 1900; ``email.utils`` reads 50-68 after 2000."""
    assert check_time(f"01 May {year} 08:00 +0000").time == pd.Timestamp(f"{read}-05-01T08:00Z")


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024/5/1 凌晨 6:00", "2024-04-30T22:00Z"),  # the last hour of the small hours
        ("2024年5月1日 凌晨6時", "2024-04-30T22:00Z"),
        ("2024年5月5日 星期天 08:00", "2024-05-05T00:00Z"),  # 天, Sunday, as 日 is
        ("2024年5月5日(天) 08:00", "2024-05-05T00:00Z"),
        ("2024/05/05 禮拜天 08:00", "2024-05-05T00:00Z"),
    ],
)
def test_the_last_hour_of_the_small_hours_and_sunday_written_as_tian_are_read(written, utc):
    read = check_time(written, TAIPEI)
    assert (read.reason, read.time) == (None, pd.Timestamp(utc))


def test_a_saturday_written_as_tian_is_refused():
    """``天`` is Sunday: the 4th of May 2024, a Saturday, is not one."""
    reason = check_time("2024年5月4日 星期天 08:00", TAIPEI).reason or ""
    assert "the 4th of May 2024 is a Saturday" in reason, reason


def test_the_first_and_last_years_a_caller_allows_are_read_and_those_outside_refused():
    years = (2000, 2030)
    for inside in ("2000-01-01T00:00:00Z", "2030-12-31T23:59:59Z"):
        assert check_time(inside, years=years).time == pd.Timestamp(inside)
    for outside in ("1999-12-31T23:59:59Z", "2031-01-01T00:00:00Z"):
        assert "outside the years 2000-2030" in (check_time(outside, years=years).reason or "")


@pytest.mark.parametrize("written", ["Wed, 01 May 2024 24:30:00 +0000", "Wed May  1 24:30:00 UTC 2024"])
def test_an_hour_24_past_its_first_minute_is_no_time_not_the_end_of_the_day(written):
    """Only 24:00:00 is the end of a day (named as the next day's 00:00); 24:30 is an hour out of range."""
    reason = check_time(written).reason or ""
    assert "hour must be in 0..23" in reason and "24:00" not in reason, reason


def test_a_unix_date_whose_zone_is_the_letter_t_is_refused_naming_it():
    """``T`` is ISO 8601's separator, and a military zone (UTC-07:00): after a Unix date's time it names a
    zone, never UTC as ``Z`` does."""
    assert check_time("Sun Dec  6 21:09:58 Z 2026").time == pd.Timestamp("2026-12-06T21:09:58Z")
    reason = check_time("Sun Dec  6 21:09:58 T 2026").reason or ""
    assert "names its zone 'T', not an offset" in reason, reason


@pytest.mark.parametrize("written", ["2026-09-06 (日)", "2026-09-06 Sun", "2026年9月6日(日)"])
def test_a_date_and_its_day_of_the_week_on_a_day_whose_midnight_is_skipped_is_its_first_instant(written):
    """Santiago's clocks skip 00:00 of 2026-09-06: the day, written with its day of the week, begins at
    01:00 (04:00 UTC) as the date alone does, where a time of day at 00:00 is refused."""
    santiago = ZoneInfo("America/Santiago")
    assert check_time(written, santiago).time == pd.Timestamp("2026-09-06T04:00Z")
    assert "skip it" in (check_time("2026-09-06 00:00", santiago).reason or "")


def test_a_stored_date_in_january_1970_is_a_date_and_a_stored_time_is_checked_in_utc():
    """A stored date has no unit to slip (only a timestamp does); a stored timestamp with an offset lies
    in the first weeks of 1970 by its instant (1970-03-01 05:00+08:00 is 1970-02-28 21:00 UTC)."""
    assert check_time(dt.date(1970, 1, 15)).time == pd.Timestamp("1970-01-15T00:00Z")
    stored = pd.Timestamp("1970-03-01 05:00", tz="Asia/Taipei")
    assert "first weeks of 1970" in (check_time(stored).reason or "")


def test_24_00_with_a_fraction_of_zeros_is_the_end_of_the_day():
    reason = check_time("2024-05-01T24:00:00.000").reason or ""
    assert "is at 24:00, the end of its day" in reason and "2024-05-02T00:00:00" in reason, reason


@pytest.mark.parametrize("written", ["1970-01-01 0:00", "1900-01-01T0:00:00"])
def test_a_zero_date_at_midnight_written_with_a_one_digit_hour_is_a_placeholder_on_any_clock(written):
    """On Taipei's clock such a time is 16:00 UTC the day before, no Unix time of 0: the text says it."""
    assert placeholder_time(written, check_time(written, TAIPEI).time, TAIPEI)


@pytest.mark.parametrize("written", ["2024-05-01T24:00:00.5", "2024-05-01 24:00:00,25+08:00"])
def test_24_00_and_a_fraction_of_a_second_is_no_time_not_the_end_of_the_day(written):
    """Half a second past 24:00 is no time of day; it was named as 24:00, to be written as the next day's
    00:00, which is another time."""
    reason = check_time(written).reason or ""
    assert "hour must be in 0..23" in reason and "end of its day" not in reason, reason
