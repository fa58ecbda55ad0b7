"""Facts the editors decide by, read from a headline: which way a market moved and the session's date
(the years and model codes are read by :mod:`nlsim.rerank.series`). Two texts *clash* on a fact when
both name it and disagree.

The cross-encoder scores "波羅的海乾散貨運價指數進一步攀升" and "波羅的海乾散貨運價指數下滑" at its bound:
the words are alike, the news is not (one session's index rose, another's fell). These small readers
let the series veto (:mod:`nlsim.rerank.series`) see such a clash. Each is a pure function of the text,
so a daily run reads the same facts as a batch run.

Example:
    >>> direction("道指收跌0.7% 納指下滑0.9%"), direction("道指大漲4% 納指飆升5.3%")
    ('down', 'up')
    >>> direction("道指大涨4% 纳指飙升5.3%")  # the same headline after tw2sp
    'up'
    >>> direction_clash("恒指攀升", "恒指回落"), direction_clash("止跌回升", "大漲")
    (True, False)
    >>> sorted(session_dates("操盤必讀：5月31日香港市場重要新聞"))
    [(5, 31)]
    >>> date_clash("5月31日香港市場", "11月25日香港市場"), date_clash("7月17日開盤", "7月下旬開盤")
    (True, False)
"""

from __future__ import annotations

import re

UP_WORDS = (
    "漲", "涨", "攀升", "走高", "上揚", "上扬", "翻紅", "翻红", "走強", "走强", "反彈", "反弹", "收高",
    "回升", "反升", "飆升", "飙升", "上升", "升值",
)  # fmt: skip
"""Words that say a thing rose, in Traditional and Simplified script: the report reads headlines after
their conversion (``tw2sp``), and corpora come in either script."""
DOWN_WORDS = (
    "跌", "下滑", "走低", "低迷", "回落", "下挫", "收低", "翻綠", "翻绿", "走弱", "下降", "貶值", "贬值",
)  # fmt: skip
"""Words that say a thing fell, in both scripts."""
_UP = re.compile("|".join(UP_WORDS))
_DOWN = re.compile("|".join(DOWN_WORDS))
_MONTH_DAY = re.compile(r"(?<!\d)(\d{1,2})月(\d{1,2})日")


def direction(text: str) -> str | None:
    """``'up'`` when ``text`` says only that something rose (漲, 攀升, 走高, …), ``'down'`` when it says
    only that something fell (跌, 下滑, 回落, …), ``None`` when it says neither or both (止跌回升)."""
    up, down = bool(_UP.search(text)), bool(_DOWN.search(text))
    if up == down:
        return None
    return "up" if up else "down"


def direction_clash(a: str, b: str) -> bool:
    """Whether one text says a thing rose and the other that it fell: two sessions, not one story."""
    da, db = direction(a), direction(b)
    return da is not None and db is not None and da != db


def session_dates(text: str) -> set[tuple[int, int]]:
    """The (month, day) dates ``text`` names in digits (``5月31日``)."""
    out = set()
    for m, d in _MONTH_DAY.findall(text):
        month, day = int(m), int(d)
        if 1 <= month <= 12 and 1 <= day <= 31:
            out.add((month, day))
    return out


def date_clash(a: str, b: str) -> bool:
    """Whether both texts name a day and share none: two sessions' bulletins, two events."""
    da, db = session_dates(a), session_dates(b)
    return bool(da and db and not da & db)
