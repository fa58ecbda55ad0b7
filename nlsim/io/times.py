"""The times a corpus's ``published_at`` is written in, read as one instant in UTC, or refused saying why.

:func:`read_time` reads one cell: an ISO 8601 or RFC 2822 time, a year-first date and time as CMS exports and
spreadsheets write them (``2026/11/25 16:52``, ``2024年5月1日 下午3時20分``), a Minguo year, a day of the week
checked against its date, or a Unix time in seconds or milliseconds. A time without an offset is one on the
clock of the zone given (the run's ``--timezone``). Anything read two ways (a day-first or month-first date,
an hour a 12-hour mark does not hold, a zone named by an abbreviation) is refused with the reason and how to
write it. :func:`placeholder_time` tells a placeholder for no date (``1970-01-01``, ``1899-12-30``) from a
time. :func:`nlsim.io.corpus.load_corpus` reads every row's cell with :func:`check_time` and names the file,
row and field with the reason.

Example:

    >>> import datetime as dt
    >>> read_time("2024/5/1 下午 03:20:00", dt.timezone(dt.timedelta(hours=8))).time
    Timestamp('2024-05-01 07:20:00+0000', tz='UTC')
"""

from __future__ import annotations

import datetime as dt
import decimal
import email.utils
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nlsim.io.cells import describe, missing_cell, text_control

YEAR_FIRST = re.compile(r"\d{4}(\d{4}|[-/.]\d{1,2}[-/.]\d{1,2})")
"""How a year-first date begins (``2024-05-01``, ``2024/5/1``, ``20240501``): the one order of year,
month and day that is never read two ways."""
YEAR_FIRST_TIME = re.compile(
    r"\d{4}([-/.]\d{1,2}[-/.]\d{1,2}|\d{4})"  # the date: 2024-05-01, 2024/5/1, 2024.05.01, 20240501
    r"((\s*T\s*|,?\s+)"  # then its time: after a T, a space or a comma
    r"\d{1,2}(:\d{1,2}(:\d{1,2}([.,]\d+)?)?|\d{2}(\d{2}([.,]\d+)?)?)?)?"  # 8, 08:00, 0800, 08:00:00.5
    r"(\s*(Z|UTC|GMT|UT|[+-]\d{1,2}(:?\d{2})?))?",  # and one offset: Z, UTC, +08:00, +0800, +8
    re.IGNORECASE,
)
"""What a time written year first may hold: a date, a time of day, one offset; anything more (a second time
or offset, a number after the time, read by the date parser as hours and minutes) is refused, not guessed."""
BARE_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
"""A cell that is a number written as text (``1700000000``, ``1714550400000``, ``1.7e9``)."""
DIGIT_DATE = re.compile(r"[0-9]{8}([0-9]{4}([0-9]{2})?)?")
"""The numbers read as a time: a date written year first in digits alone, ``20240501`` (ISO 8601's basic
form), with its time of day ``202405010800`` or ``20240501080000``; never seconds or milliseconds."""
UTC_WORDS = frozenset({"T", "Z", "UT", "UTC", "GMT"})
"""The words a time may hold besides numbers: ISO 8601's ``T`` and the names of UTC."""
NO_TIME = frozenset({"nat", "nan", "none", "null"})
"""What a table writer puts for a missing time (``df.astype(str)``, JSON ``null`` as text)."""
TWELVE_HOUR = re.compile(r"(?<![A-Za-z])([AaPp]\.?[Mm]\.?)(?![A-Za-z])|上午|下午|午前|午後|오전|오후")
"""The marks of a 12-hour clock (``PM``, ``p.m.``, ``下午``): a zone name to the zone check, a word the date
parser does not know. One written in Chinese, Japanese or Korean before the hour (or after the time) after a
year-first date is read (:func:`_cjk_twelve_hour`)."""
UTC_AND_OFFSET = re.compile(r"(UTC|GMT|UT|Z)\s*[+-]\s*\d[\d:]*", re.IGNORECASE)
"""A name of UTC followed by an offset (``GMT+8``, ``UTC-3``, ``Z+08:00``): read two ways, POSIX's (``GMT+8``
is 8 hours behind UTC, how the date parser reads it) and the way people write it (8 hours ahead)."""
CJK_DATE = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号號]\s*")
"""A date written year first in Chinese or Japanese (``2024年5月1日 08:00``, as CMS exports in Taiwan, China
and Japan write it): read as ``2024-5-1 08:00``."""
CJK_TIME = re.compile(
    r"(\d{1,2})\s*[時时點点](?:\s*(\d{1,2})\s*分(?:\s*(\d{1,2})\s*秒)?|(?!\s*(\d|[分秒半鐘钟整])))"
)
"""A time of day in hours and minutes (and seconds), or in hours alone, as Chinese and Japanese CMS exports
write it after such a date (``08時30分``, ``8时30分15秒``, ``8點30分``, ``08時``): read as ``08:30``,
``8:30:15``, ``08:00``. An hour followed by anything else of a time of day (``08時30`` without 分, ``08時半``)
is not one (:data:`CJK_CLOCK_MARKS`)."""
CJK_CLOCK_MARKS = re.compile(r"[時时點点分秒半鐘钟整]")
"""The marks of a time of day written in Chinese or Japanese: one left once :data:`CJK_TIME` is read is a
time of day read no one way (``08時30``, ``08時半``)."""


def _cjk_clock(rest: str) -> str:
    """``rest``, what follows a date written 2024年5月1日, with a time of day in hours and minutes, or in
    hours alone, on the hour (:data:`CJK_TIME`) written with colons.

    >>> _cjk_clock("08時30分 +09:00"), _cjk_clock("8时30分15秒"), _cjk_clock("08:30"), _cjk_clock("08時")
    ('08:30 +09:00', '8:30:15', '08:30', '08:00')
    >>> _cjk_clock("08時30"), _cjk_clock("8点半")
    ('08時30', '8点半')
    """
    return CJK_TIME.sub(lambda m: ":".join(g for g in (m[1], m[2] or "00", m[3]) if g is not None), rest)


DATE_COMMA = re.compile(r"(\d{4}[-/.]\d{1,2}[-/.]\d{1,2})\s*,\s*(?=\d{1,2}:\d{2})")
"""A year-first date, then a comma and a time of day in hours and minutes (``2024-05-01,08:00``, as some
exports join a date and its time): read as after a space."""


DIGIT_DATE_THEN_CLOCK = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?=\s*,?\s*\d{1,2}\s*[時时點点])")
"""A year-first date in digits followed by a time of day written in Chinese or Japanese (``2024-05-01
15時30分``, ``2024/5/1 8时``): the time of day is read as after a date written 2024年5月1日."""


def _cjk_as_ascii(text: str, cjk: re.Match[str] | None) -> str:
    """``text``, with its date written 2024年5月1日 that ``cjk`` matched written ``2024-5-1`` and its time of
    day with colons (:func:`_cjk_clock`), and a comma between its date and a time of day in hours and
    minutes as a space (:data:`DATE_COMMA`); ``text`` when neither is written.

    >>> _cjk_as_ascii("2024年5月1日 08時30分", CJK_DATE.match("2024年5月1日 08時30分"))
    '2024-5-1 08:30'
    >>> _cjk_as_ascii("2024年5月1日,08:00", CJK_DATE.match("2024年5月1日,08:00"))
    '2024-5-1 08:00'
    >>> _cjk_as_ascii("2024-05-01,08:00", None), _cjk_as_ascii("2024-05-01,8", None)
    ('2024-05-01 08:00', '2024-05-01,8')
    >>> _cjk_as_ascii("2024-05-01 15時30分", None), _cjk_as_ascii("2024/5/1 8时", None)
    ('2024-05-01 15:30', '2024/5/1 8:00')
    """
    if cjk is not None:
        text = "-".join(cjk.groups()) + (" " + _cjk_clock(text[cjk.end() :])).rstrip()
    elif digits := DIGIT_DATE_THEN_CLOCK.match(text):
        text = text[: digits.end()] + _cjk_clock(text[digits.end() :])
    return DATE_COMMA.sub(r"\1 ", text, count=1) if DATE_COMMA.match(text) else text


DATE_THEN_COMMA = re.compile(r"\d{4}([-/.]\d{1,2}[-/.]\d{1,2}|\d{4})\s*,")
"""A year-first date followed by a comma (``2024-05-01,8``, ``20240501,08:00``)."""


def _more_than_a_time_reason(text: str, ymd: str) -> str:
    """Why the year-first time ``ymd`` (``text`` as written), which holds more than a date, a time of day and
    one offset (:data:`YEAR_FIRST_TIME`), is refused: a comma after its date and then no time of day in
    hours and minutes (``2024-05-01,8``: a second field? ``20240501,08``: a decimal comma?), or more.

    >>> _more_than_a_time_reason("2024-05-01,8", "2024-05-01,8").split(", read")[0]
    "time '2024-05-01,8' has a comma after its date"
    """
    if DATE_THEN_COMMA.match(ymd):
        return (
            f"time {text!r:.40} has a comma after its date, read only between a date written with its "
            "dashes or slashes and a time of day in hours and minutes (2024-05-01,08:00); anything else "
            f"would be guessed (a second field? a decimal comma?): {WRITE_ISO}"
        )
    return (
        f"time {text!r:.40} holds more than a date, a time of day and one offset (a second time or offset, "
        f"an offset without its sign?), which would be guessed: {WRITE_ISO}"
    )


EN_DAY_END = (
    r"(?:(?<=mon)day|(?<=tue)s(?:day)?|(?<=wed)nesday|(?<=thu)rs?(?:day)?|(?<=fri)day|(?<=sat)urday"
    r"|(?<=sun)day)?\.?"
)
"""What follows the first three letters of a day of the week in English (``Wed``, ``Wednesday``, ``Wed.``)."""
CJK_WEEKDAY = re.compile(
    r"\s*[,、]?\s*(?:[(（]\s*(?:(?:星期|禮拜|礼拜|週|周)?(?P<in_brackets>[一二三四五六日天])|(?P<ja_day>[月火水木金土日])(?:曜日?)?"
    rf"|(?i:(?P<en_day>mon|tue|wed|thu|fri|sat|sun){EN_DAY_END}))"
    r"\s*[)）]|(?:星期|禮拜|礼拜|週|周)(?P<zh_day>[一二三四五六日天])|(?P<ja_bare>[月火水木金土日])曜日"
    rf"|(?i:(?P<en_bare>mon|tue|wed|thu|fri|sat|sun){EN_DAY_END})(?![A-Za-z]))\s*"
)
"""The day of the week Japanese and Chinese CMS exports write after a date written 2024年5月1日:
``(水)``, ``（水曜日）``, ``水曜日``, ``（星期三）``, ``(三)``, ``星期三``, ``周三``, ``週三``, ``禮拜三`` (a
day written in one character in brackets only: a bare ``水`` or ``三`` is no day), and in English, in
brackets or not (``(Wed)``, ``(Wednesday)``, ``Wed``), a comma before it or not (``2024-05-01, Wed``)."""
CJK_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
"""The days of :data:`CJK_WEEKDAY` in Chinese, Monday (0) to Sunday (6), as :meth:`datetime.date.weekday`."""
JA_WEEKDAYS = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}
"""The days of :data:`CJK_WEEKDAY` in Japanese, Monday (0) to Sunday (6)."""


def _cjk_weekday(text: str, cjk: re.Match[str], shown: str | None = None) -> tuple[str, str | None]:
    """What follows the date written 2024年5月1日 that ``cjk`` matched in ``text``, without the day of the
    week after it (:data:`CJK_WEEKDAY`), or the reason it is refused: the date falls on another day, and the
    day or the date is wrong, which cannot be told (the time named as ``shown``, ``text`` when none). A date
    that is none (2月30日) is refused for that later.

    >>> date, wrong = "2024年5月1日(水) 08:30", "2024年5月1日 星期四"
    >>> _cjk_weekday(date, CJK_DATE.match(date))
    ('08:30', None)
    >>> _cjk_weekday(wrong, CJK_DATE.match(wrong))[1].split(": ")[0]
    "time '2024年5月1日 星期四' says '星期四', but the 1st of May 2024 is a Wednesday"
    """
    rest = text[cjk.end() :]
    week = CJK_WEEKDAY.match(rest)
    if week is None:
        return rest, None
    if week["en_day"] or week["en_bare"]:
        said = [day[:3] for day in WEEKDAYS].index((week["en_day"] or week["en_bare"]).lower())
    elif week["ja_day"] or week["ja_bare"]:
        said = JA_WEEKDAYS[week["ja_day"] or week["ja_bare"]]
    else:
        said = CJK_WEEKDAYS[week["in_brackets"] or week["zh_day"]]
    try:
        date = dt.date(*(int(g) for g in cjk.groups()))
    except ValueError:  # 2月30日: no date, refused as such
        return rest[week.end() :], None
    if date.weekday() == said:
        return rest[week.end() :], None
    return rest, (
        f"time {shown or text!r:.40} says {week.group().strip(' ,、')!r}, but {_day_of(date)}: the day of "
        f"the week or the date is wrong, and which cannot be told: {WRITE_ISO}"
    )


WEEKDAY_DATE = re.compile(
    r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})"
    r"(?=\s*[,、]?\s*[(（]|(?:\s*[,、]\s*|\s+)(?i:mon|tue|wed|thu|fri|sat|sun)"
    r"|\s*[,、]?\s*(?:星期|禮拜|礼拜|週|周|[月火水木金土日]曜日))"
)
"""A date written year first in digits and followed by a bracket (``2024/05/01(水)``, as Japanese sites
write it) or a day of the week in English (``2024-05-01 Wed``), in Chinese words (``2024-05-01 周三``) or
written out in Japanese (``2024/05/01 水曜日``):
the day of the week may follow it (:data:`CJK_WEEKDAY`)."""


YEAR_FIRST_DATE = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
"""A date written year first in digits (``2024/05/01``, ``2024-5-1``), its year, month and day."""
DATE_ALONE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?!\d)")
"""A date written year first in digits (:data:`YEAR_FIRST_DATE`) that no digit follows: ``2024-05-01``, not
the ``2024-05-01`` of ``2024-05-011``."""
LAST_WEEKDAY = re.compile(f"(?:{CJK_WEEKDAY.pattern})$")
"""A day of the week (:data:`CJK_WEEKDAY`) that ends a time, after its time of day (``2024年5月1日 08時30分
(水)``, ``2024/05/01 08:30 (Wed)``)."""


def _weekday_after_date(text: str) -> tuple[str, re.Match[str] | None]:
    """``text``, a time written year first, with the day of the week that ends it after its time of day
    (:data:`LAST_WEEKDAY`) written after its date instead, where it is read, and the date's match; ``text``
    and ``None`` when no day of the week follows a time of day.

    >>> _weekday_after_date("2024/05/01 08:30 (Wed)")[0], _weekday_after_date("2024年5月1日 8時 星期三")[0]
    ('2024/05/01 (Wed) 08:30', '2024年5月1日 星期三 8時')
    >>> _weekday_after_date("2024/05/01 (Wed)")
    ('2024/05/01 (Wed)', None)
    """
    dated = CJK_DATE.match(text) or YEAR_FIRST_DATE.match(text)
    week = None if dated is None else LAST_WEEKDAY.search(text, dated.end())
    if dated is None or week is None or not text[dated.end() : week.start()].strip():
        return text, None
    date, day, time = (
        text[: dated.end()].rstrip(),
        week.group().strip(" ,、"),
        text[dated.end() : week.start()],
    )
    moved = f"{date} {day} {time.strip()}"
    return moved, CJK_DATE.match(moved) or YEAR_FIRST_DATE.match(moved)


LEADING_WEEKDAY = re.compile(rf"(?:{CJK_WEEKDAY.pattern})[,、]?\s*(?=\d{{4}})")
"""A day of the week (:data:`CJK_WEEKDAY`) that begins a time, before its date (``Wednesday, 2024-05-01
08:00``, ``Wed 2024/05/01``, ``星期三 2024年5月1日``, ``(三) 2024/05/01``), and the comma after it."""


def _weekday_before_date(text: str) -> tuple[str, re.Match[str] | None]:
    """``text``, a time written year first, with the day of the week that begins it before its date
    (:data:`LEADING_WEEKDAY`) written after its date instead, where it is read, and the date's match;
    ``text`` and ``None`` when no day of the week precedes a date written year first.

    >>> _weekday_before_date("Wednesday, 2024-05-01 08:00")[0], _weekday_before_date("(三) 2024/05/01")[0]
    ('2024-05-01 Wednesday 08:00', '2024/05/01 (三)')
    >>> _weekday_before_date("Wed, 01 May 2024 08:00:00 GMT")
    ('Wed, 01 May 2024 08:00:00 GMT', None)
    """
    week = LEADING_WEEKDAY.match(text)
    dated = None if week is None else CJK_DATE.match(text, week.end()) or DATE_ALONE.match(text, week.end())
    if week is None or dated is None:
        return text, None
    day = week.group().strip().rstrip(",、").rstrip()
    moved = f"{dated.group().rstrip()} {day} {text[dated.end() :].strip()}".rstrip()
    return moved, CJK_DATE.match(moved) or YEAR_FIRST_DATE.match(moved)


def _year_first(text: str) -> bool:
    """Whether ``text`` is a time written year first, in digits or 2024年5月1日, after a day of the week or
    not (``2024-05-01 08:00``, ``2024年5月1日 08:00``, ``Wed 2024-05-01 08:00``: :data:`LEADING_WEEKDAY`).

    >>> _year_first("Wed 2024-05-01 08:00"), _year_first("Wed, 01 May 2024 08:00:00 +0800")
    (True, False)
    >>> _year_first("2024年5月1日 08:00 +0900")
    True
    """
    moved = _weekday_before_date(text)[0]
    return YEAR_FIRST.match(moved) is not None or CJK_DATE.match(moved) is not None


BASIC_DATE = re.compile(
    rf"(?P<day>(?:{CJK_WEEKDAY.pattern})[,、]?\s*)?(?P<year>\d{{4}})(?P<month>\d{{2}})(?P<date>\d{{2}})(?=[\s,、(（]|$)"
)
"""A date written in ISO 8601's basic format (``20240501``) that begins a time, after a day of the week or
not, and that a time of day, a day of the week or nothing follows (no ``T``)."""


def _extended_date(text: str) -> str:
    """``text`` with a date in ISO 8601's basic format (:data:`BASIC_DATE`) written with dashes where a day
    of the week is written with it (``Wed 20240501``, ``20240501 (水) 08:00``, ``20240501 08:00 Wed``), so
    that the day is read as after ``2024-05-01``; ``text`` as it is otherwise (``20240501 08:00``).

    >>> _extended_date("Wed 20240501"), _extended_date("20240501, Wed 08:00")
    ('Wed 2024-05-01', '2024-05-01, Wed 08:00')
    >>> _extended_date("20240501 08:00")
    '20240501 08:00'
    """
    basic = BASIC_DATE.match(text)
    if basic is None:
        return text
    rest = text[basic.end() :]
    if not basic["day"] and CJK_WEEKDAY.match(rest) is None and LAST_WEEKDAY.search(rest) is None:
        return text
    return f"{basic['day'] or ''}{basic['year']}-{basic['month']}-{basic['date']}{rest}"


def _without_weekday(text: str, shown: str | None = None) -> tuple[str, str | None]:
    """``text``, a time written year first, without the day of the week after its date (``2024年5月1日(水)
    08:30``, ``2024/05/01(水) 08:30``: :func:`_cjk_weekday`), after its time of day (``2024/05/01 08:30
    (Wed)``: :func:`_weekday_after_date`) or before its date (``Wed, 2024-05-01 08:30``:
    :func:`_weekday_before_date`), or the reason it is refused, naming the time as ``shown`` (``text`` when
    none: the time as the file writes it, before a Minguo year was read).

    >>> _without_weekday("2024/05/01(水) 08:30"), _without_weekday("2024年5月1日星期三")
    (('2024/05/01 08:30', None), ('2024年5月1日', None))
    >>> _without_weekday("2024/05/01 (08:30)"), _without_weekday("2024/05/01 08:30 (水)")
    (('2024/05/01 (08:30)', None), ('2024/05/01 08:30', None))
    """
    written = text
    named = shown or text
    text, dated = _weekday_before_date(_extended_date(text))
    after = LEADING_WEEKDAY.sub("", written, count=1)
    if dated is not None and _without_weekday(after) != (after, None):  # Wed 2024-05-01 08:00 (Wed)
        return written, f"time {named!r:.40} says its day of the week twice, before and after: {WRITE_ISO}"
    if dated is None:
        text, dated = _weekday_after_date(text)
    dated = dated or CJK_DATE.match(text) or WEEKDAY_DATE.match(text)
    if dated is None:
        return text, None
    rest, reason = _cjk_weekday(text, dated, named)
    if reason is not None or rest == text[dated.end() :]:
        return written, reason
    return (text[: dated.end()].rstrip() + " " + rest).rstrip(), None


CJK_TWELVE_HOUR = re.compile(
    r"(?P<date>\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*[日号號])"
    r"\s*,?\s*(?P<mark>上午|下午|中午|早上|凌晨|傍晚|晚上|半夜|午夜|深夜|午前|午後|오전|오후)\s*(?P<hour>\d{1,2})(?=\s*[:時时點点])"
)
"""A time of day on the 12-hour clock after a date written year first, its mark before the hour, as Excel
and Windows in Taiwan write it (``2024/5/1 下午 03:20:00``) and Chinese CMS exports (``2024年5月1日
下午3時20分``, ``2024年5月1日 晚上8点``), Japanese ones (``2024年5月1日 午後3時20分``), and Excel and Windows
in Korea (``2024-05-01 오후 3:20:00``)."""
CJK_HOURS = {
    "凌晨": ({12: 0} | {h: h for h in range(7)}, "12 (00:00) and 0 to 6, the small hours"),
    "早上": ({h: h for h in range(4, 12)}, "4 to 11, the morning"),
    "上午": ({12: 0} | {h: h for h in range(12)}, "12 (00:00) and 0 to 11, before noon"),
    "中午": ({11: 11, 12: 12, 1: 13}, "11, 12 and 1 (13:00), noon"),
    "下午": ({12: 12} | {h: h + 12 for h in range(1, 12)}, "12 (12:00) and 1 to 11 (13:00 to 23:00)"),
    "傍晚": ({h: h + 12 for h in range(4, 8)}, "4 to 7 (16:00 to 19:00), the evening"),
    "晚上": (
        {h: h + 12 for h in range(6, 12)},
        "6 to 11 (18:00 to 23:00); 12 is the midnight the day begins or ends with, which cannot be told",
    ),
    "午前": (
        {h: h for h in range(12)},
        "0 to 11, Japan's clock; 12 is noon by its rule of 1872, or midnight?",
    ),
    "午後": (
        {h: h + 12 for h in range(12)},
        "0 to 11 (12:00 to 23:00), Japan's clock; 12 is midnight by its rule of 1872, or noon?",
    ),
    "오전": ({12: 0} | {h: h for h in range(12)}, "12 (00:00) and 0 to 11, before noon"),
    "오후": ({12: 12} | {h: h + 12 for h in range(1, 12)}, "12 (12:00) and 1 to 11 (13:00 to 23:00)"),
    **dict.fromkeys(
        ("半夜", "午夜", "深夜"),
        ({}, "no hour one way: a time of the night may be the date's or run into the next day's"),
    ),
}
"""The hours each mark of :data:`CJK_TWELVE_HOUR` holds, each as the hour of the 24-hour clock it is, and
the hours in words for a message. ``上午``/``下午`` are the 12-hour clock's a.m. and p.m. (``上午 12:10`` is
00:10, ``下午 12:30`` 12:30); the others name a part of the day, and an hour outside it (``凌晨8時``) or a
24-hour hour after any mark (``下午 15:00``) is no time read one way; a part of the night (``半夜1時``:
the date's 01:00, or the next day's?) holds none. ``午前``/``午後`` run 0 to 11 on Japan's clock (``午後0時``
is noon; ``午前12時`` reads two ways), ``오전``/``오후`` are a.m. and p.m. as ``上午``/``下午`` are."""


CJK_MARK_AFTER = re.compile(
    r"(?P<date>\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:\s*,\s*|\s+)|\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*[日号號]\s*,?\s*)"
    r"(?P<hour>\d{1,2})(?P<clock>:\d{2}(?::\d{2}(?:[.,]\d+)?)?|\s*[時时點点](?:\s*\d{1,2}\s*分(?:\s*\d{1,2}\s*秒)?)?)"
    r"\s*(?P<mark>上午|下午|中午|早上|凌晨|傍晚|晚上|半夜|午夜|深夜|午前|午後|오전|오후)"
)
"""A time of day on a Chinese, Japanese or Korean 12-hour clock after a date written year first, its mark
after the time (``2024/5/1 04:52 下午``, ``2024年5月1日 3時20分 下午``): read as the mark before the hour
(:data:`CJK_TWELVE_HOUR`)."""


def _cjk_mark_before_hour(text: str) -> tuple[str, str]:
    """``text``, a time written year first, with the 12-hour mark after its time of day
    (:data:`CJK_MARK_AFTER`) written before its hour instead, and where it was written (``before``, or
    ``after`` when moved).

    >>> _cjk_mark_before_hour("2024/5/1 04:52 下午 +08:00"), _cjk_mark_before_hour("2024/5/1 下午 04:52")
    (('2024/5/1 下午04:52 +08:00', 'after'), ('2024/5/1 下午 04:52', 'before'))
    """
    after = CJK_MARK_AFTER.match(text)
    if after is None:
        return text, "before"
    date = after["date"].rstrip().rstrip(",").rstrip()
    return f"{date} {after['mark']}{after['hour']}{after['clock']}{text[after.end() :]}", "after"


def _cjk_twelve_hour(text: str, shown: str | None = None) -> tuple[str, str | None]:
    """``text``, a time written year first, with its time of day on a Chinese, Japanese or Korean 12-hour
    clock (:data:`CJK_TWELVE_HOUR`; its mark after the time, :data:`CJK_MARK_AFTER`, read as before the
    hour) written on the 24-hour clock, or the reason it is refused: an hour its mark does not hold
    (:data:`CJK_HOURS`), or a mark both before the hour and after the time (naming the time as ``shown``,
    ``text`` when none).

    >>> _cjk_twelve_hour("2024/5/1 下午 03:20:00"), _cjk_twelve_hour("2024年5月1日上午12時10分")
    (('2024/5/1 15:20:00', None), ('2024年5月1日 00時10分', None))
    >>> _cjk_twelve_hour("2024/5/1 下午 15:00")[1].split(", which")[0]
    "time '2024/5/1 下午 15:00' has '下午' before the hour 15"
    >>> _cjk_twelve_hour("2024/5/1 04:52 下午")
    ('2024/5/1 16:52', None)
    """
    written = text
    text, where = _cjk_mark_before_hour(text)
    twelve = CJK_TWELVE_HOUR.match(text)
    if twelve is None:
        return written, None
    mark, hour = twelve["mark"], int(twelve["hour"])
    hours, held = CJK_HOURS[mark]
    if hour not in hours:
        return written, (
            f"time {shown or written!r:.40} has {mark!r} {where} the hour {hour}, which {mark} does not hold "
            f"one way (it holds {held}): write the time on the 24-hour clock without {mark!r}, or {WRITE_ISO}"
        )
    if CJK_MARK_AFTER.match(f"{twelve['date']} {twelve['hour']}{text[twelve.end('hour') :]}"):
        return (
            written,
            f"time {shown or written!r:.40} has a 12-hour mark before the hour and after the time: "
            + WRITE_ISO,
        )
    return f"{text[: twelve.end('date')]} {hours[hour]:02d}{text[twelve.end('hour') :]}", None


AM_PM = re.compile(
    r"(?P<date>\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*[日号號])"
    r"(?:(?:\s*,\s*|\s+)(?P<before>[AaPp]\.?[Mm]\.?)\s*|\s*T\s*|\s*,\s*|\s+|(?<=[日号號]))"  # PM 03:20
    r"(?P<hour>\d{1,2})(?P<clock>:\d{2}(?::\d{2}(?:[.,]\d+)?)?)"
    r"(?(before)|\s*(?P<after>[AaPp]\.?[Mm]\.?)(?![A-Za-z]))"  # or 3:20 p.m., as Canada's English writes it
)
"""A time of day on the 12-hour clock with AM or PM (``a.m.``, ``pm``) after a date written year first,
the mark before the hour (``2024/5/1 PM 03:20:00``) or after the time (``2024-05-01 3:20 p.m.``)."""
AM_PM_HOURS = {
    "a": ({12: 0} | {h: h for h in range(1, 12)}, "12 (00:00) and 1 to 11"),
    "p": ({12: 12} | {h: h + 12 for h in range(1, 12)}, "12 (12:00) and 1 to 11 (13:00 to 23:00)"),
}
"""The hours AM and PM hold (:data:`AM_PM`), each as the hour of the 24-hour clock it is, and in words."""


def _am_pm(text: str, shown: str | None = None) -> tuple[str, str | None]:
    """``text``, a time written year first, with its time of day on the 12-hour clock with AM or PM
    (:data:`AM_PM`) written on the 24-hour clock, or the reason it is refused: an hour the mark does not
    hold (:data:`AM_PM_HOURS`: ``15:20 PM``, ``0:20 AM``), naming the time as ``shown`` (``text`` when none).

    >>> _am_pm("2024-05-01 3:20 p.m. +09:00"), _am_pm("2024/5/1 AM 12:10:00")
    (('2024-05-01 15:20 +09:00', None), ('2024/5/1 00:10:00', None))
    """
    twelve = AM_PM.match(text)
    if twelve is None:
        return text, None
    mark, hour = twelve["before"] or twelve["after"], int(twelve["hour"])
    hours, held = AM_PM_HOURS[mark[0].lower()]
    if hour not in hours:
        where = "before" if twelve["before"] else "after"
        return text, (
            f"time {shown or text!r:.40} has {mark!r} {where} the hour {hour}, which {mark} does not hold "
            f"(it holds {held}): write the time on the 24-hour clock without {mark!r}, or {WRITE_ISO}"
        )
    return f"{twelve['date']} {hours[hour]:02d}{twelve['clock']}{text[twelve.end() :]}", None


def _without_marks(text: str, shown: str | None = None) -> tuple[str, str | None]:
    """``text``, a time written year first, without the day of the week after its date or its time of day
    (:func:`_without_weekday`) and with its time of day on a 12-hour clock on the 24-hour clock
    (:func:`_cjk_twelve_hour`, :func:`_am_pm`), or the reason either is refused, naming the time as
    ``shown`` (the time as the file writes it; ``text`` when none).

    >>> _without_marks("2024/5/1 下午 03:20:00 (三)")
    ('2024/5/1 15:20:00', None)
    """
    text, reason = _without_weekday(text, shown)
    if reason is None:
        text, reason = _cjk_twelve_hour(text, shown)
    return (text, reason) if reason is not None else _am_pm(text, shown)


MINGUO_DATE = re.compile(r"(?:中華|中华)?民[國国]\s*(\d{1,3})\s*年")
"""A year of the Minguo (Republic of China) calendar named as one (``民國115年``, as Taiwanese CMS exports
write it): the year + 1911 (2026), read as a year written in full."""
BARE_MINGUO = re.compile(r"(\d{1,3})\s*年\s*\d{1,2}\s*月")
"""A year of one to three digits before 年 and a month, not named a Minguo year (``115年12月6日``)."""


WEEK_DATE = re.compile(r"(\d{4})-?W(\d{2})-?([1-7])(?=$|[T\s])", re.IGNORECASE)
"""An ISO 8601 week date (``2026-W49-7``, ``2026W497``: the Sunday of week 49), one day as a date names it."""


def _week_date(text: str) -> tuple[str, str | None]:
    """``text`` with an ISO 8601 week date written as the date it names (``2026-W49-7 08:00`` ->
    ``2026-12-06 08:00``), or the reason it names none (a week the year does not have).

    >>> _week_date("2026-W49-7T08:00:00+08:00"), _week_date("2026-12-06")
    (('2026-12-06T08:00:00+08:00', None), ('2026-12-06', None))
    >>> _week_date("2026-W54-1")[1]
    "time '2026-W54-1' is an ISO week date of a week 2026 does not have (W54)"
    """
    week = WEEK_DATE.match(text)
    if week is None:
        return text, None
    year, number, day = (int(g) for g in week.groups())
    try:
        date = dt.date.fromisocalendar(year, number, day)
    except ValueError:
        return text, f"time {text!r:.40} is an ISO week date of a week {year} does not have (W{number:02d})"
    return date.isoformat() + text[week.end() :], None


ORDINAL_DATE = re.compile(r"(\d{4})-(\d{3})(?=$|[T\s])")
"""An ISO 8601 ordinal date, the year and its day (``2024-122``: the 122nd day of 2024, the 1st of May),
written with its dash (``2024122`` would be a number)."""


def _ordinal_date(text: str) -> tuple[str, str | None]:
    """``text`` with an ISO 8601 ordinal date (:data:`ORDINAL_DATE`) written as the date it names
    (``2024-122T08:00`` -> ``2024-05-01T08:00``), or the reason it names none (a day the year does not have).

    >>> _ordinal_date("2024-122T08:00:00+08:00"), _ordinal_date("2024-05-01")
    (('2024-05-01T08:00:00+08:00', None), ('2024-05-01', None))
    >>> _ordinal_date("2026-366")[1]
    "time '2026-366' is an ISO ordinal date of a day 2026 does not have (366: it has 365)"
    """
    ordinal = ORDINAL_DATE.match(text)
    if ordinal is None:
        return text, None
    year, day = int(ordinal[1]), int(ordinal[2])
    days = (dt.date(year + 1, 1, 1) - dt.date(year, 1, 1)).days if 1 <= year < 9999 else 365
    if not 1 <= day <= days:
        return (
            text,
            f"time {text!r:.40} is an ISO ordinal date of a day {year} does not have ({day:03d}: it has "
            f"{days})",
        )
    date = dt.date(year, 1, 1) + dt.timedelta(days=day - 1)
    return date.isoformat() + text[ordinal.end() :], None


DAY_BEFORE_MINGUO = re.compile(
    rf"(?:{CJK_WEEKDAY.pattern})[,、]?\s*(?=(?:中華|中华)?民[國国]|\d{{1,3}}\s*年)"
)
"""A day of the week before a Minguo year (``星期三 民國113年5月1日``), read as before a year in full."""


def _minguo(text: str) -> tuple[str, str | None]:
    """``text`` with a Minguo year named as one written in full (``民國115年12月6日`` ->
    ``2026年12月6日``), or the reason a bare year of one to three digits before 年 (``115年12月6日``) is
    refused.

    >>> _minguo("民國115年12月6日 15:04"), _minguo("2026年12月6日")
    (('2026年12月6日 15:04', None), ('2026年12月6日', None))
    >>> _minguo("115年12月6日")[1].split(": ")[0]
    "time '115年12月6日' begins with '115年', a Minguo year? (民國115年, 2026)"
    >>> _minguo("星期三 民國113年5月1日")
    ('星期三 2024年5月1日', None)
    """
    day = DAY_BEFORE_MINGUO.match(text)
    start = 0 if day is None else day.end()
    named = MINGUO_DATE.match(text, start)
    if named is not None:
        return text[:start] + f"{int(named.group(1)) + 1911}年" + text[named.end() :], None
    bare = BARE_MINGUO.match(text, start)
    if bare is None:
        return text, None
    year = int(bare.group(1))
    return text, (
        f"time {text!r:.40} begins with '{year}年', a Minguo year? (民國{year}年, {year + 1911}): write it "
        f"as 民國{year}年 or {WRITE_ISO}"
    )


RFC_OFFSET = re.compile(r"([+-])(\d{2}):(\d{2})$")
RFC_NO_ZONE = re.compile(r"\d:\d{2}(:\d{2})?$")
"""An RFC 2822 time that ends with its time of day: it names no zone (``email.utils`` reads it as UTC)."""
CTIME = re.compile(r"[A-Za-z]{3},?\s+[A-Za-z]{3}\s+\d{1,2}\s+\d{1,2}:\d{2}(:\d{2})?\s+\d{4}")
"""A time as C's ``ctime`` writes it (``Wed May  1 08:00:00 2024``, Unix ``date``, Python's ``ctime()``): the
year after the time of day, and no zone (``email.utils`` reads it as UTC)."""
UNIX_DATE = re.compile(
    r"(?P<day>[A-Za-z]{3}),?\s+(?P<month>[A-Za-z]{3})\s+(?P<date>\d{1,2})\s+"
    r"(?P<time>\d{1,2}:\d{2}(:\d{2})?)\s+(?P<zone>\S+)\s+(?P<year>\d{4})"
)
"""A time as Unix ``date`` writes it (``Sun Dec  6 21:09:58 UTC 2026``): a ctime with the zone before the
year, where RFC 2822 puts it last."""
RFC_COMMENT = re.compile(
    r"(?<=\d|[A-Za-z])(\s*\([^()]*\))+$"  # one comment or more: "(CST)", "(China Standard Time)"
)
"""The comment after an RFC 2822 time's zone (``+0800 (CST)``, as mail and many CMS exports write it)."""
NAME_AFTER_OFFSET = re.compile(r"(?<=\d)(\s*[+-]\d{2}:?\d{2})\s+[A-Za-z]{1,6}$")
"""A zone's name after a time's offset (``2026-12-06 21:09:58.123 +0800 CST``, as Go writes a time): read as
a comment after the offset is, not at all."""
RFC_ZONE_END = re.compile(r"([+-]\d{2}:?\d{2}|(?<![A-Za-z])(GMT|UTC|UT|Z))$", re.IGNORECASE)
"""An RFC 2822 time's zone that says its offset: a number with its sign, or a name of UTC."""
RFC_ZONE = re.compile(r"[+-]([01]\d|2[0-3])[0-5]\d")
"""An RFC 2822 offset (``+0800``; ``+08:00`` is read as it): the sign is part of it, and its hours and
minutes are those of a clock (``+0860`` and ``+9999`` are no offset, where ``email.utils`` adds them up)."""
TIME_RANGE = (pd.Timestamp.min.year + 1, pd.Timestamp.max.year - 1)
"""The years a time can have here (what a nanosecond timestamp holds, a year of margin each side)."""
ZONE_OFFSETS = (dt.timedelta(hours=-12), dt.timedelta(hours=14))
"""The offsets of the time zones there are, from Baker Island's (-12:00) to Kiritimati's (+14:00): a time
written with another is damaged (``+23:59``, a time of day written as its offset), not read."""
WRITE_ISO = "write it in ISO 8601 (2024-05-01T08:00:00+08:00)"


def _number_reason(value: Any, text: bool = False) -> str:
    """Why a number is refused as a time: it has no unit (seconds? milliseconds?) nor a start; pandas would
    read an integer as nanoseconds after 1970, a long text of digits as a year past 9999."""
    digits = "; digits alone are read only as a date written year first, 20240501" if text else ""
    return f"a number ({value!r:.40}) is not a time (seconds? milliseconds? since when?{digits}): {WRITE_ISO}"


def _parse_number_text(text: str) -> tuple[pd.Timestamp | None, str | None]:
    """A cell holding a number: a date written year first in digits (:data:`DIGIT_DATE`), or the reason
    it is refused (a Unix time, an eight-digit number that is no date).

    Example:
        >>> _parse_number_text("20240501")
        (Timestamp('2024-05-01 00:00:00'), None)
        >>> _parse_number_text("1714550400")[1]  # doctest: +ELLIPSIS
        "a number ('1714550400') is not a time (seconds? milliseconds? since when?; ..."
    """
    if DIGIT_DATE.fullmatch(text):
        try:
            return pd.Timestamp(text), None
        except ValueError:  # 17000000: eight digits, but no month 01-12 in them
            pass
    return None, _number_reason(text, text=True)


def _bracketed_reason(text: str) -> str | None:
    """Why a time followed by a zone or calendar in brackets (``2024-05-01T08:00:00+01:00[Europe/London]``,
    as Java's ``ZonedDateTime`` and RFC 9557 write it) is refused, naming what is in them whole (a message
    cut at 40 characters showed ``[Eur`` of a long time, and named ``London`` as its zone); ``None`` for
    another time.

    Example:
        >>> why = _bracketed_reason("2024-05-01T08:00:00.123456789+01:00[Europe/London]")
        >>> why.split(", a zone")[0]
        "time '2024-05-01T08:00:00.123456789+01:00' ends with '[Europe/London]'"
        >>> why.split(": ")[-1], _bracketed_reason("2024-05-01T08:00:00+01:00") is None
        ('drop it, the offset before it says the time', True)
    """
    end = len(text)
    while end and text[end - 1] == "]":  # the brackets at the end, one after another
        start = text.rfind("[", 0, end)
        if start < 0 or "]" in text[start : end - 1]:
            return None
        end = start
        while end and text[end - 1].isspace():
            end -= 1
    if end == len(text) or not end:
        return None
    head, bracket = text[:end], text[end:].strip()
    offset = re.search(r"(Z|[+-]\d{2}:?\d{2})$", head, re.IGNORECASE)
    todo = f"give the offset instead: {WRITE_ISO}"
    if offset:
        todo = "drop it, the offset before it says the time"
    return (
        f"time {head!r:.60} ends with {bracket!r:.60}, a zone in brackets (as Java writes a time), which is "
        f"not read here: {todo}"
    )


def _zone_name_reason(text: str, zone: str, wall: dt.datetime | None, *, unix: bool = False) -> str:
    """Why a time naming its zone by an abbreviation (``CST``, ``HKT``) is refused, and what to write instead:
    the time as ISO 8601 with an offset (its clock time ``wall`` when it is known).

    >>> why = _zone_name_reason("Sun Dec  6 21:09:58 CST 2026", "CST", dt.datetime(2026, 12, 6, 21, 9, 58))
    >>> why.split(": ")[0], "2026-12-06T21:09:58+08:00" in why
    ("time 'Sun Dec  6 21:09:58 CST 2026' names its zone 'CST', not an offset", True)
    """
    example = "2024-05-01T08:00:00" if wall is None else wall.isoformat()
    tool = " (Unix `date -Iseconds` writes it so)" if unix else ""
    return (
        f"time {text!r:.40} names its zone {zone!r}, not an offset: a zone's abbreviation is no one offset "
        "(CST is China's UTC+08:00, US Central's UTC-06:00 and Cuba's UTC-05:00), and is not read; write the "
        f"time in ISO 8601 with the offset {zone} stands for, {example}+08:00 for UTC+08:00{tool}"
    )


ZONE_WORDS = re.compile(r"\s*(\(\s*)?(?P<zone>[^\s\d()]{1,10}?(標準時間|标准时间|時間|时间))(?(1)\s*\))$")
"""A zone named in Chinese or Japanese words after a time (``15:20 (台北時間)``, ``15:20（北京时间）``,
``15:20 北京时间``), as news sites write it, in brackets or not."""


def _zone_words_reason(text: str, ymd: str) -> str | None:
    """Why the year-first time ``ymd`` (``text`` as written) ending with its zone named in words
    (:data:`ZONE_WORDS`) is refused, naming the zone and the time to write with its offset; ``None`` for
    another time.

    >>> _zone_words_reason("2024-05-01 15:20 (北京时间)", "2024-05-01 15:20 (北京时间)").split(": ")[0]
    "time '2024-05-01 15:20 (北京时间)' names its zone in words, '北京时间', not an offset"
    """
    words = ZONE_WORDS.search(ymd)
    if words is None:
        return None
    wall = _wall_clock(ymd[: words.start()])
    example = "2024-05-01T08:00:00" if wall is None else wall.isoformat()
    return (
        f"time {text!r:.40} names its zone in words, {words['zone']!r}, not an offset: a zone's name is not "
        f"read; write the time in ISO 8601 with the offset {words['zone']} stands for, {example}+08:00 for "
        "UTC+08:00"
    )


def _unix_date(text: str, unix: re.Match[str]) -> tuple[pd.Timestamp | None, str | None]:
    """The time ``text`` written as Unix ``date`` writes it (:data:`UNIX_DATE`): read when its zone is a name
    of UTC (``UTC``, ``GMT``) or a signed offset (``+0800``), refused naming the zone when it is an
    abbreviation (``CST``, ``IST``: several offsets each) or its day of the week is not its date's.

    >>> _unix_date("Sun Dec  6 21:09:58 UTC 2026", UNIX_DATE.fullmatch("Sun Dec  6 21:09:58 UTC 2026"))
    (Timestamp('2026-12-06 21:09:58+0000', tz='UTC'), None)
    """
    zone = unix["zone"]
    parts = email.utils.parsedate_tz(f"{unix['date']} {unix['month']} {unix['year']} {unix['time']} +0000")
    if parts is None:  # no month's name
        return None, _neither_reason(text)
    year = int(unix["year"])  # as written: email.utils reads 0001 as 2001
    if not TIME_RANGE[0] <= year <= TIME_RANGE[1]:
        return None, f"time {text!r:.40} is outside the years {TIME_RANGE[0]}-{TIME_RANGE[1]}: {WRITE_ISO}"
    if clock := _clock_reason(text, (year, *parts[1:6])):  # 24:00, 23:59:60
        return None, clock
    wall = dt.datetime(year, *parts[1:6])  # a field out of range (31 Feb, 25:00) raises, never rolls over
    weekday = _weekday_reason(text, wall.date())
    if weekday is not None:
        return None, weekday
    if zone.upper() in UTC_WORDS - {"T"}:
        return pd.Timestamp(wall, tz="UTC"), None
    if re.fullmatch(r"[+-]\d{4}", zone):
        if not RFC_ZONE.fullmatch(zone):
            return (
                None,
                f"time {text!r:.40} holds {zone!r}, which is not an offset (+0800, -0500): {WRITE_ISO}",
            )
        minutes = int(zone[1:3]) * 60 + int(zone[3:])
        offset = dt.timezone(dt.timedelta(minutes=minutes if zone[0] == "+" else -minutes))
        return pd.Timestamp(wall.replace(tzinfo=offset)), None
    return None, _zone_name_reason(text, zone, wall, unix=True)


def _posix_reason(text: str, posix: re.Match[str]) -> str:
    """Why a time holding an offset after a name of UTC (``posix``: ``GMT+8``, ``UTC-3``) is refused."""
    return (
        f"time {text!r:.40} puts an offset after {posix.group(1)!r} ({posix.group(0)!r}), which reads two "
        f"ways: the offset as written, or its opposite (POSIX's rule, the date parser's): {WRITE_ISO}"
    )


def _neither_reason(text: str) -> str:
    """Why ``text`` is not read as a time: neither year first nor RFC 2822."""
    return (
        f"time {text!r:.40} is neither year first (ISO 8601: 2024-05-01T08:00:00Z) nor RFC 2822 (Wed, 01 "
        "May 2024 08:00:00 GMT), and other spellings would be guessed (is 12/05/2024 the 12th of May or "
        f"the 5th of December?): {WRITE_ISO}"
    )


def _zone_names(text: str) -> list[str]:
    """The words of ``text`` that name a time zone other than UTC (``CST`` is China's or US Central's)."""
    return [w for w in re.findall(r"[A-Za-z]+", text) if w.upper() not in UTC_WORDS]


UTC_NAME_END = re.compile(r"\s*(UTC|GMT|UT|Z)$", re.IGNORECASE)
"""A name of UTC ending a year-first time, in any case (``08:00 utc``, ``08:00:00 UT``): read as ``Z``, which
the date parser reads (it refuses ``UT`` and a name in lower case)."""
LONE_HOUR = re.compile(r"^(\d{4}(?:[-/.]\d{1,2}[-/.]\d{1,2}|\d{4})(?:\s*T\s*|,?\s+))(\d)(?![\d:])")
"""A year-first time whose time of day is an hour alone in one digit (``2024-05-01 8``), which the date
parser reads in two alone (``2024-05-01 08``)."""


def _parser_text(ymd: str) -> str:
    """The year-first time ``ymd`` as the date parser reads it: a name of UTC ending it as ``Z``
    (:data:`UTC_NAME_END`), an hour alone in one digit in two (:data:`LONE_HOUR`).

    >>> _parser_text("2024-05-01 8 utc"), _parser_text("2024/5/1 8:05")
    ('2024-05-01 08Z', '2024/5/1 8:05')
    """
    return LONE_HOUR.sub(r"\g<1>0\2", UTC_NAME_END.sub("Z", ymd), count=1)


ISO_OFFSET = re.compile(r"[+-]\d{1,2}:?(\d{2})$")
"""The offset that ends a year-first time with its minutes (``+08:00``, ``-0500``, ``+5:30``)."""


def _offset_reason(text: str, ymd: str) -> str | None:
    """Why the offset ending the year-first time ``ymd`` (``text`` as written) is none: its minutes past 59
    (``+08:60``, which the date parser adds up to +09:00); ``None`` for another time.

    >>> _offset_reason("2024-05-01T08:00+08:60", "2024-05-01T08:00+08:60").split(", which")[0]
    "time '2024-05-01T08:00+08:60' ends with '+08:60'"
    >>> _offset_reason("2024-05-01T08:00+0859", "2024-05-01T08:00+0859") is None
    True
    """
    offset = ISO_OFFSET.search(ymd)
    if offset is None or int(offset.group(1)) < 60:
        return None
    shown = offset.group(0)
    return f"time {text!r:.40} ends with {shown!r}, which is not an offset (+08:00, -05:00): {WRITE_ISO}"


END_OF_DAY = re.compile(
    r"(?P<year>\d{4})[-/.]?(?P<month>\d{1,2})[-/.]?(?P<day>\d{1,2})(\s*T\s*|,?\s+)24(:?00(:?00([.,]0+)?)?)?(?![\d:.,])"
)
"""A year-first time at 24:00, the end of its day (``2024-05-01T24:00:00``, ``20240501T2400``, and
``2024年5月1日 24時`` read as ``2024-5-1 24:00``): ISO 8601 lets a day end so, the date parser reads hours 0
to 23 alone."""


def _end_of_day_reason(text: str, ymd: str) -> str | None:
    """Why the year-first time ``ymd`` (``text`` as written) at 24:00 (:data:`END_OF_DAY`) is refused,
    naming the next day's 00:00, how a clock writes it; ``None`` for another time, or a date that is none
    (2024-02-30 24:00, refused for that).

    >>> _end_of_day_reason("2024年5月1日 24時", "2024-5-1 24:00").split(": ")[-1]
    'write it as 00:00 of the next day, 2024-05-02T00:00:00 with its offset (+08:00 for UTC+08:00)'
    >>> _end_of_day_reason("2024-05-01T23:00", "2024-05-01T23:00") is None
    True
    """
    end = END_OF_DAY.match(ymd)
    if end is None:
        return None
    try:
        return _end_of_day(text, dt.date(int(end["year"]), int(end["month"]), int(end["day"])))
    except (ValueError, OverflowError):
        return None


def _end_of_day(text: str, date: dt.date) -> str:
    """Why ``text``, a time at 24:00 of ``date`` (ISO 8601's, or RFC 2822's ``Wed, 01 May 2024 24:00:00
    +0800``), is refused, naming the next day's 00:00 to write; a date that is none raises ``ValueError``,
    the last day of 9999 ``OverflowError``.

    >>> _end_of_day("Wed, 01 May 2024 24:00:00 +0800", dt.date(2024, 5, 1)).split(": ")[-1][:54]
    'write it as 00:00 of the next day, 2024-05-02T00:00:00'
    """
    midnight = f"{(date + dt.timedelta(days=1)).isoformat()}T00:00:00"
    return (
        f"time {text!r:.40} is at 24:00, the end of its day, which is read as no time of day (hours run 0 to "
        f"23): write it as 00:00 of the next day, {midnight} with its offset (+08:00 for UTC+08:00)"
    )


LEAP_SECOND = re.compile(
    r"(?P<year>\d{4})[-/.]?(?P<month>\d{1,2})[-/.]?(?P<day>\d{1,2})(\s*T\s*|,?\s+)"
    r"(?P<hour>\d{1,2}):?(?P<minute>\d{2}):?60([.,]\d+)?(?!\d)"
)
"""A year-first time at second 60 (``2016-12-31T23:59:60Z``, ``20161231T235960Z``, and ``2024年5月1日
7時59分60秒`` read as ``2024-5-1 7:59:60``): a leap second, which the date parser holds none of."""


def _leap_second_reason(text: str, ymd: str) -> str | None:
    """Why the year-first time ``ymd`` (``text`` as written) at second 60 (:data:`LEAP_SECOND`) is refused
    (:func:`_leap_second`); ``None`` for another time, or a date or time that is none (refused for that).

    >>> _leap_second_reason("2016-12-31T23:59:60Z", "2016-12-31T23:59:60Z").split(": ")[-1][:50]
    'write it as the second before, 2016-12-31T23:59:59'
    """
    leap = LEAP_SECOND.match(ymd)
    if leap is None:
        return None
    try:
        date = dt.date(int(leap["year"]), int(leap["month"]), int(leap["day"]))
        return _leap_second(text, date, int(leap["hour"]), int(leap["minute"]))
    except (ValueError, OverflowError):
        return None


def _leap_second(text: str, date: dt.date, hour: int, minute: int) -> str:
    """Why ``text``, a time at second 60 of ``hour``:``minute`` of ``date``, a leap second, is refused,
    naming the second before it to write; an hour or a minute that is none raises ``ValueError``."""
    before = dt.datetime.combine(date, dt.time(hour, minute, 59)).isoformat()
    return (
        f"time {text!r:.40} is at second 60, a leap second (UTC ends some days with 23:59:60, the last on "
        "2016-12-31), which is read as no time (seconds run 0 to 59): write it as the second before, "
        f"{before} with its offset (+08:00 for UTC+08:00)"
    )


def _clock_reason(text: str, fields: tuple[int, ...]) -> str | None:
    """Why the RFC 2822 or Unix ``date`` time ``text``, whose year, month, day, hour, minute and second are
    ``fields``, is refused for its time of day: 24:00, the end of its day (:func:`_end_of_day`), or second
    60, a leap second (:func:`_leap_second`); ``None`` for another time.

    >>> _clock_reason("Wed May  1 23:59:60 UTC 2024", (2024, 5, 1, 23, 59, 60)).split(", a")[0]
    "time 'Wed May  1 23:59:60 UTC 2024' is at second 60"
    """
    if fields[3:6] == (24, 0, 0):  # the end of its day, as ISO 8601 allows it
        return _end_of_day(text, dt.date(*fields[:3]))
    if fields[5] == 60:
        return _leap_second(text, dt.date(*fields[:3]), fields[3], fields[4])
    return None


RFC_NUMBER = re.compile(r"(?<![\d:.+-])\d+(?![\d:])")
"""A number of an RFC 2822 time that is neither part of its time of day nor its offset: the day or the
year, which comes last (``Wed, 01 May 2024 08:00:00 +0800``, ``Wed May  1 08:00:00 2024``)."""


def _rfc_year(text: str, read: int) -> int:
    """The year of the RFC 2822 time ``text`` as written, where ``email.utils`` read ``read``: it takes any
    year below 100 for two digits (``0001`` is 2001, ``60`` 2060). Four digits are the year written; an
    obsolete shorter year is read as RFC 5322 (section 4.3) says: 00-49 after 2000, 50-99 and any three
    digits after 1900.

    >>> _rfc_year("Wed, 01 May 0001 08:00:00 +0000", 2001), _rfc_year("01 May 60 08:00 +0000", 2060)
    (1, 1960)
    >>> _rfc_year("01 May 124 08:00 GMT", 124), _rfc_year("Wed May  1 08:00:00 2024", 2024)
    (2024, 2024)
    """
    numbers = RFC_NUMBER.findall(text)
    if not numbers:
        return read
    written = numbers[-1]
    year = int(written)
    if read not in (year, year + (1900 if year > 68 else 2000)):  # not the number email.utils read
        return read
    if len(written) >= 4:
        return year
    return year + (2000 if len(written) <= 2 and year < 50 else 1900)


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
"""The days of the week an RFC 2822 time may begin with, in full or by their first three letters."""
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _weekday_reason(text: str, date: dt.date) -> str | None:
    """Why the day of the week an RFC 2822 time begins with (``Mon, 6 Dec 2026``, ``Mon Dec  6 ...``) is
    refused: it is not the day ``date`` falls on, or no day of the week at all; the day or the date is
    wrong, and which cannot be told (``email.utils`` drops it unread). ``None`` for the right day, in any
    case, a time without one, or a year outside :data:`TIME_RANGE` (refused for that).

    >>> _weekday_reason("Mon, 6 Dec 2026 08:00:00 +0800", dt.date(2026, 12, 6)).split(": ")[0]
    "time 'Mon, 6 Dec 2026 08:00:00 +0800' begins with 'Mon', but the 6th of December 2026 is a Sunday"
    >>> _weekday_reason("sunday, 06 Dec 2026 08:00 GMT", dt.date(2026, 12, 6)) is None
    True
    """
    word = re.match(r"([A-Za-z]+)\s*(,|\s)", text)
    if word is None or word.group(1).lower()[:3] in MONTHS or not TIME_RANGE[0] <= date.year <= TIME_RANGE[1]:
        return None
    said = word.group(1).lower()
    day = WEEKDAYS[date.weekday()]
    if said in (day, day[:3]):
        return None
    return (
        f"time {text!r:.40} begins with {word.group(1)!r}, but {_day_of(date)}: the day of the week or the "
        f"date is wrong, and which cannot be told: {WRITE_ISO}"
    )


def _day_of(date: dt.date) -> str:
    """The day of the week ``date`` falls on, in words, for a message.

    >>> _day_of(dt.date(2024, 5, 1))
    'the 1st of May 2024 is a Wednesday'
    """
    ordinal = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(date.day, "th")
    day = WEEKDAYS[date.weekday()].capitalize()
    return f"the {date.day}{ordinal} of {date.strftime('%B')} {date.year} is a {day}"


def _rfc_uncommented(text: str) -> str:
    """The RFC 2822 time ``text`` without the comment after its zone, when the zone says its offset
    (``+0800 (CST)``, ``GMT (UTC)``): the offset decides, as RFC 2822 says and ``email.utils`` reads it, even
    where the comment names another zone; a comment after no offset (``08:00:00 (CST)``, ``EST (CST)``) is
    kept, and names a zone, and so is a day of the week after a year-first time's offset, among other
    comments too (``2024-05-01 08:00 +0800 (Wed) (CST)``: :func:`_without_weekday` checks it).

    >>> _rfc_uncommented("Sun, 06 Dec 2026 10:00:00 +0800 (CST)"), _rfc_uncommented("06 Dec 2026 10:00 (CST)")
    ('Sun, 06 Dec 2026 10:00:00 +0800', '06 Dec 2026 10:00 (CST)')
    >>> _rfc_uncommented("2024-05-01 08:00 +0800 (CST) (Thu)")
    '2024-05-01 08:00 +0800 (Thu)'
    """
    comment = RFC_COMMENT.search(text)
    if comment is None or not RFC_ZONE_END.search(text[: comment.start()]):
        return text
    if _year_first(text):  # a day of the week among them, (Wed), is kept: read and checked
        days = [c for c in re.findall(r"\([^()]*\)", comment.group()) if LAST_WEEKDAY.fullmatch(c)]
        return " ".join([text[: comment.start()], *days])
    return text[: comment.start()]


def _without_zone_comment(text: str) -> str:
    """``text`` without the comment after its offset (:func:`_rfc_uncommented`: ``+0800 (CST)``, year first
    as in RFC 2822) and without a zone's name after it (:data:`NAME_AFTER_OFFSET`: ``+0800 CST``, as Go
    writes a time): the offset decides. A day of the week after a year-first time's offset (``+0800
    Wed``) is kept, and checked (:func:`_without_weekday`).

    >>> _without_zone_comment("2026-12-06 21:09:58 +0800 CST")
    '2026-12-06 21:09:58 +0800'
    >>> _without_zone_comment("2024-05-01 08:00 +0800 Wed")
    '2024-05-01 08:00 +0800 Wed'
    """
    text = _rfc_uncommented(text)
    name = NAME_AFTER_OFFSET.search(text)
    if name is None or (_year_first(text) and LAST_WEEKDAY.fullmatch(text[name.end(1) :])):
        return text
    return text[: name.end(1)]


def _year_first_reason(text: str, ymd: str) -> str | None:
    """Why the year-first time ``ymd`` (``text`` as written), its zone and marks read, is refused: it holds
    more than a date, a time of day and one offset (:func:`_more_than_a_time_reason`), an offset that is
    none (:func:`_offset_reason`), 24:00 (:func:`_end_of_day_reason`) or a leap second
    (:func:`_leap_second_reason`); ``None`` when it is read.

    >>> _year_first_reason("2024/5/1 下午 03:20:00", "2024/5/1 15:20:00") is None
    True
    """
    if not YEAR_FIRST_TIME.fullmatch(ymd):
        return _more_than_a_time_reason(text, ymd)
    return _offset_reason(text, ymd) or _end_of_day_reason(text, ymd) or _leap_second_reason(text, ymd)


def _parse_time_text(text: str) -> tuple[pd.Timestamp | None, str | None]:
    """A time written year first (ISO 8601 and its relatives: ``2024-05-01 08:00:00 UTC``, ``2024/5/1 8:00``,
    ``20240501T080000Z``, ``20240501``, ``2024年5月1日 08:00``) or in RFC 2822 (``Wed, 01 May 2024 08:00:00
    +0800``, RSS), with the reason when it is neither, is a number (``1714550400``: seconds or
    milliseconds?) or names its zone by a name that is not one offset (``CST``, ``HKT``): ``12/05/2024``
    could be the 12th of May or the 5th of December, ``113/05/01`` is a Minguo year. A Minguo year named as
    one (``民國115年12月6日``) is read (:func:`_minguo`), and so are an ISO week date (``2026-W49-7``:
    :func:`_week_date`) and an ISO ordinal date (``2026-340``: :func:`_ordinal_date`)."""
    if text.lower() in NO_TIME:
        return pd.NaT, None
    written = text  # as the file writes it, for a message: read with its marks and names rewritten
    text, minguo = _minguo(text)
    if minguo is not None:
        return None, minguo
    text, week = _week_date(text)
    if week is None:
        text, week = _ordinal_date(text)
    if week is not None:
        return None, week
    text = _without_zone_comment(text)  # "+0800 (CST)", "+0800 CST": the offset decides
    text, marks = _without_marks(text, written)
    if marks is not None:
        return None, marks
    cjk = CJK_DATE.match(text)
    ymd = _cjk_as_ascii(text, cjk)
    if BARE_NUMBER.fullmatch(text):
        return _parse_number_text(text)
    twelve = TWELVE_HOUR.search(text)
    if twelve:
        return None, f"time {written!r:.40} is on a 12-hour clock ({twelve.group(0)!r}): {WRITE_ISO}, 24-hour"
    bracketed = _bracketed_reason(text)
    if bracketed is not None:
        return None, bracketed
    names = _zone_names(text)
    if YEAR_FIRST.match(ymd):
        words = _zone_words_reason(written, ymd)
        if names or words:
            return None, words or _zone_name_reason(written, names[-1], _wall_clock(ymd))
        posix = UTC_AND_OFFSET.search(text)
        if posix:
            return None, _posix_reason(written, posix)
        if (cjk is not None or DIGIT_DATE_THEN_CLOCK.match(text)) and CJK_CLOCK_MARKS.search(ymd):
            return None, (
                f"time {written!r:.40} has a time of day in Chinese or Japanese that is read only in "
                "hours and minutes, each with its mark (08時30分, 8时30分15秒), or in hours alone (08時): "
                f"{WRITE_ISO}"
            )
        reason = _year_first_reason(written, ymd)
        return (None, reason) if reason else (pd.Timestamp(_parser_text(ymd)), None)
    posix = UTC_AND_OFFSET.search(text)
    if posix:  # GMT+0800, as JavaScript's Date writes it after the time: no zone's abbreviation
        return None, _posix_reason(text, posix)
    unix = UNIX_DATE.fullmatch(text)
    if unix is not None:
        return _unix_date(text, unix)
    rfc = RFC_OFFSET.sub(r"\1\2\3", _rfc_uncommented(text))
    parts = email.utils.parsedate_tz(rfc) if names else None
    if parts is None:
        return None, _neither_reason(text)
    parts = (_rfc_year(rfc, parts[0]), *parts[1:])
    if clock := _clock_reason(text, parts[:6]):  # 24:00, 23:59:60: said as for ISO 8601
        return None, clock
    dt.datetime(*parts[:6])  # a field out of range (31 Feb, 25:00) raises, as in ISO 8601, never rolls over
    weekday = _weekday_reason(text, dt.date(*parts[:3]))
    if weekday is not None:
        return None, weekday
    zone = _rfc_uncommented(text).split()[-1]
    if re.search(r"[A-Za-z]", zone) and zone.upper() not in UTC_WORDS:
        return None, _zone_name_reason(text, zone, dt.datetime(*parts[:6]))
    if RFC_NO_ZONE.search(rfc) or CTIME.fullmatch(rfc):  # no zone: on the run's clock, as a year-first time
        return pd.Timestamp(*parts[:6]), None
    if zone.upper() not in UTC_WORDS and not RFC_ZONE.fullmatch(rfc.split()[-1]):
        # "0800" without its sign, or a number that is no offset at all: read as hours and minutes east
        return (
            None,
            f"time {text!r:.40} ends with {zone!r}, which is not an offset (+0800, -0500): {WRITE_ISO}",
        )
    offset = dt.timezone(dt.timedelta(seconds=parts[9] or 0))
    return pd.Timestamp(dt.datetime(*parts[:6], tzinfo=offset)), None


def _wall_clock(ymd: str) -> dt.datetime | None:
    """The date and time of day of the year-first time ``ymd`` without the zone's name that ends it
    (``2026-12-06 21:09:58 HKT``: 2026-12-06 21:09:58), for a message; ``None`` when it holds more.

    >>> _wall_clock("2026-12-06 21:09:58 HKT"), _wall_clock("2026-12-06 HKT 21:09")
    (datetime.datetime(2026, 12, 6, 21, 9, 58), None)
    """
    head = re.sub(r"\s*[A-Za-z]+$", "", ymd)
    if not YEAR_FIRST_TIME.fullmatch(head) or re.search(r"[A-Za-z]", head.replace("T", " ")):
        return None
    try:
        return pd.Timestamp(head).to_pydatetime()
    except (ValueError, OverflowError):
        return None


UNIT_SLIP_END = pd.Timestamp("1970-03-01")
"""Before it, a stored timestamp is Unix seconds stored in a finer unit (seconds of the years 1990-2100 as
milliseconds fall 7 to 48 days after 1970-01-01, as microseconds or nanoseconds within its first hours)."""


def _unit_slip(ts: pd.Timestamp) -> bool:
    """Whether the stored timestamp ``ts`` (a Parquet or JSON cell's, not text) lies in the first weeks of
    1970 (:data:`UNIT_SLIP_END`): seconds stored in a finer unit. A whole hour of 1970-01-01 (a Unix time
    of 0 written on some clock, a placeholder for no date: :func:`placeholder_time`) is not one.

    >>> _unit_slip(pd.Timestamp(1733470000, unit="ms")), _unit_slip(pd.Timestamp("1970-01-01 08:00"))
    (True, False)
    >>> _unit_slip(pd.Timestamp("2024-12-06T07:26:40Z"))
    False
    """
    wall = ts.tz_convert("UTC").tz_localize(None) if ts.tzinfo is not None else ts
    if wall >= UNIT_SLIP_END or wall < pd.Timestamp(0):
        return False
    whole_hour = wall.minute == wall.second == wall.microsecond == wall.nanosecond == 0
    return not (wall < pd.Timestamp("1970-01-02") and whole_hour)


DATE_ONLY = re.compile(r"\d{4}([-/.]\d{1,2}[-/.]\d{1,2}|\d{4})")
"""A date written year first without a time of day (``2026-09-06``, ``2026/9/6``, ``20260906``)."""


def _date_only(value: Any) -> bool:
    """Whether the ``published_at`` cell ``value`` is a date without a time of day (a Parquet ``date32``
    cell, ``2026-09-06``, ``2026年9月6日``): a day, which begins at its first instant even where the clocks
    skip or repeat its midnight (a daylight-saving change at 00:00, as in Santiago, Cairo or Havana).

    >>> _date_only("2026-09-06"), _date_only("2026年9月6日"), _date_only(dt.date(2026, 9, 6))
    (True, True, True)
    >>> _date_only("2026-09-06 00:00"), _date_only(dt.datetime(2026, 9, 6))
    (False, False)
    """
    if isinstance(value, dt.date):
        return not isinstance(value, dt.datetime)
    text = _ordinal_date(_week_date(_minguo(value.strip())[0])[0])[0] if isinstance(value, str) else ""
    text = _without_weekday(text)[0]
    return CJK_DATE.fullmatch(text) is not None or DATE_ONLY.fullmatch(text) is not None


PLACEHOLDER_TEXT = re.compile(
    r"(0000[-/.]00[-/.]00|0001[-/.]0?1[-/.]0?1|19(70|00|04)[-/.]0?1[-/.]0?1|1899[-/.]12[-/.]3[01])"  # the day
    r"((\s*T\s*|\s+)0?0(:00(:00([.,]0+)?)?)?)?"  # at midnight, if a time of day is written
    r"(\s*(Z|UTC|GMT|[+-]\d{2}:?\d{2}))?",  # with any offset
    re.IGNORECASE,
)
"""A ``published_at`` as written that is a placeholder for no date: MySQL's zero date (``0000-00-00``),
.NET's and Go's least time (``0001-01-01``), a Unix time of 0 (``1970-01-01``), a database's or a
spreadsheet's zero date (``1900-01-01``, ``1899-12-30``, ``1899-12-31``, ``1904-01-01``), at midnight."""
PLACEHOLDER_DAYS = frozenset(
    {
        dt.date(1970, 1, 1),
        dt.date(1900, 1, 1),
        dt.date(1899, 12, 30),
        dt.date(1899, 12, 31),
        dt.date(1904, 1, 1),
    }
)
"""The days of :data:`PLACEHOLDER_TEXT` that a time can hold (a Parquet timestamp or date)."""
EPOCH = pd.Timestamp(0, tz="UTC")


def placeholder_time(value: Any, time: pd.Timestamp | None, zone: dt.tzinfo = dt.UTC) -> bool:
    """Whether the ``published_at`` cell ``value`` (read as ``time``, UTC, on ``zone``'s clock when without
    an offset) is a placeholder for no date: written as one (:data:`PLACEHOLDER_TEXT`), a Unix time of 0
    written on any clock (``1970-01-01 08:00:00`` in Taipei), or a timestamp at midnight of one of
    :data:`PLACEHOLDER_DAYS` in UTC or in ``zone``. A time of those days at another time of day is a time.
    Written in Chinese or on a 12-hour clock (``1970年1月1日``, ``1899/12/30 上午 12:00:00``), it is one as
    written in ASCII on the 24-hour clock.

    >>> placeholder_time("0000-00-00 00:00:00", None), placeholder_time("1970-01-01 00:00:01", None)
    (True, False)
    >>> placeholder_time(dt.datetime(1970, 1, 1, 8), pd.Timestamp("1970-01-01T00:00Z"))
    True
    """
    if isinstance(value, str):
        text = _without_marks(value.strip())[
            0
        ]  # 1970年1月1日(木), 1899/12/30 上午 12:00:00: as ISO writes it
        ascii_text = _cjk_as_ascii(text, CJK_DATE.match(text))
        written = any(PLACEHOLDER_TEXT.fullmatch(t) for t in (value.strip(), ascii_text))
        return written or (time is not None and time == EPOCH)
    if time is None or pd.isna(time):
        return False
    if time == EPOCH:
        return True
    return any(
        t.date() in PLACEHOLDER_DAYS and t.time() == dt.time(0)
        for t in (time.tz_convert("UTC"), time.tz_convert(zone))
    )


@dataclass(frozen=True)
class TimeRead:
    """One ``published_at`` cell read: the time in UTC (``NaT`` for none), or the reason it is refused;
    ``naive``: it had no offset and was read on the clock of the run's time zone."""

    time: pd.Timestamp | None
    reason: str | None = None
    naive: bool = False


def shown_time(value: Any) -> Any:
    """``value`` without the format characters that show nothing (Unicode category Cf: a left-to-right mark,
    which Windows and browsers put into a date they format for a right-to-left language, a zero-width
    space, a byte-order mark), its full-width digits and marks read as ASCII (NFKC: ``08：00``, as a Chinese
    input method types it, is ``08:00``) and the minus sign ISO 8601 names, U+2212 (``−08:00``), as a
    hyphen-minus, when it is text: the time it shows.

    >>> shown_time("\u200e2026-12-06\u200b"), shown_time("２０２６－１２－０６ ０８：００"), shown_time(5)
    ('2026-12-06', '2026-12-06 08:00', 5)
    >>> shown_time("2026-12-06T08:00\u221205:00")
    '2026-12-06T08:00-05:00'
    """
    if not isinstance(value, str):
        return value
    shown = "".join(ch for ch in value if unicodedata.category(ch) != "Cf").replace("\u2212", "-")
    return unicodedata.normalize("NFKC", shown)


def _stored_reason(value: Any) -> str | None:
    """Why a cell that is not text is no time (``None`` for a timestamp, a date or a text): a number, which
    has no unit (seconds? milliseconds?: pandas would read it as nanoseconds after 1970), or what is no
    time at all (a duration, a time of day without its date, a list of times, ``true``).

    >>> _stored_reason(dt.time(8, 0)).split(":")[0], _stored_reason(dt.date(2026, 12, 6)) is None
    ('not a time (got time datetime.time(8, 0))', True)
    """
    if isinstance(value, (int, float, decimal.Decimal, np.integer, np.floating)) and not isinstance(
        value, bool
    ):
        return _number_reason(value)
    if not isinstance(value, (str, dt.date, np.datetime64)):  # a datetime and a Timestamp are dates too; true
        kind = type(value).__name__
        return f"not a time (got {kind} {value!r:.40}): store a timestamp or a date, or {WRITE_ISO}"
    return None


def check_time(value: Any, zone: dt.tzinfo = dt.UTC, years: tuple[int, int] = TIME_RANGE) -> TimeRead:
    """A time as UTC, or the reason it is refused; a time without an offset is read on ``zone``'s clock.

    Example:
        >>> from zoneinfo import ZoneInfo
        >>> read = check_time("2026/11/25 16:52", ZoneInfo("Asia/Taipei"))
        >>> str(read.time), read.naive
        ('2026-11-25 08:52:00+00:00', True)
        >>> str(check_time("2026-11-25T16:52:00+08:00", ZoneInfo("Europe/London")).time)
        '2026-11-25 08:52:00+00:00'
    """
    if missing_cell(value) or (isinstance(value, str) and not value.strip()):
        return TimeRead(pd.NaT)
    control = text_control(value) if isinstance(value, str) else None
    if control is not None:  # a NUL: the mark of a damaged export, never part of a time
        return TimeRead(
            None, f"time {value!r:.60} holds {describe(control)}, the mark of a damaged export: {WRITE_ISO}"
        )
    stored = _stored_reason(value)
    if stored is not None:
        return TimeRead(None, stored)
    try:
        ts, reason = (
            _parse_time_text(value.strip()) if isinstance(value, str) else (pd.Timestamp(value), None)
        )
    except (ValueError, TypeError, OverflowError) as exc:  # 2024-02-30, 25:00: never rolled over
        why = str(exc).removesuffix(f": {value}").removesuffix(f": {str(value).strip()}")
        return TimeRead(None, f"time {value!r:.40} is no day or time of the calendar ({why}): {WRITE_ISO}")
    if ts is None:
        return TimeRead(None, reason)
    if ts is pd.NaT:
        return TimeRead(pd.NaT)
    if not years[0] <= ts.year <= years[1]:
        if isinstance(value, str):
            return TimeRead(
                None,
                f"time {value:.40} is outside the years {years[0]}-{years[1]} (a placeholder for "
                "no date? leave the cell empty)",
            )
        # a stored timestamp past what Python's datetime holds cannot be printed (pandas raises): its fields
        shown = f"{ts.year}-{ts.month:02d}-{ts.day:02d} {ts.hour:02d}:{ts.minute:02d}:{ts.second:02d}"
        return TimeRead(
            None,
            f"time {shown} is outside the years {years[0]}-{years[1]}, a stored timestamp: milliseconds or "
            "microseconds stored as seconds? Store the times in their own unit (or the cell empty)",
        )
    if not isinstance(value, str) and not _date_only(value) and _unit_slip(ts):
        return TimeRead(
            None,
            f"time {ts} is a stored timestamp in the first weeks of 1970: Unix seconds stored as "
            "milliseconds, microseconds or nanoseconds? Store the times in their own unit (or the cell "
            "empty)",
        )
    if ts.tzinfo is not None:
        offset = ts.utcoffset()
        if isinstance(value, str) and offset is not None and not ZONE_OFFSETS[0] <= offset <= ZONE_OFFSETS[1]:
            sign, rest = ("-", -offset) if offset < dt.timedelta(0) else ("+", offset)
            hours, minutes = divmod(int(rest.total_seconds()) // 60, 60)
            return TimeRead(
                None,
                f"time {value!r:.40} has the offset {sign}{hours:02d}:{minutes:02d}, which no time zone has "
                f"(-12:00 to +14:00): a time of day written as its offset? {WRITE_ISO}",
            )
        return TimeRead(ts.tz_convert("UTC"))
    try:
        return TimeRead(ts.tz_localize(zone).tz_convert("UTC"), naive=True)
    except ValueError as exc:  # the hour a daylight-saving change skips, or the one it repeats
        if _date_only(value):  # a day whose midnight is skipped or repeated: its first instant
            return TimeRead(pd.Timestamp(ts.date(), tz=zone).tz_convert("UTC"), naive=True)
        how = "skip" if "nonexistent" in str(exc) else "repeat"
        return TimeRead(
            None,
            f"time {value!s:.40} has no offset, and the clocks of {zone} {how} it (a daylight-saving "
            f"change): {WRITE_ISO}",
        )


def read_time(value: Any, zone: dt.tzinfo = dt.UTC, years: tuple[int, int] = TIME_RANGE) -> TimeRead:
    """A time given by hand (``--as-of``) read as a ``published_at`` cell is: year first or RFC 2822, with
    an offset or on ``zone``'s clock, in the years a time can have; never guessed (``12/05/2024``,
    ``GMT+8``, a zone name), the reason said instead. ``years``: the years a time may have (a caller that
    refuses a far future itself, with its own reason, lets later years through).

    Example:
        >>> str(read_time("2024-05-01T08:00:00+08:00").time)
        '2024-05-01 00:00:00+00:00'
        >>> read_time("12/05/2024").reason  # doctest: +ELLIPSIS
        "time '12/05/2024' is neither year first ..."
    """
    return check_time(shown_time(value), zone, years)
