"""The facts read from a headline: which way a market moved and the session's date."""

from __future__ import annotations

import pytest

from nlsim.rerank.facts import DOWN_WORDS, UP_WORDS, date_clash, direction, direction_clash, session_dates


@pytest.mark.parametrize(
    ("text", "way"),
    [
        ("波羅的海乾散貨運價指數進一步攀升 但漲勢放緩", "up"),
        ("快訊：兩市快速回落 滬指跌破2900點", "down"),
        ("新增基金開戶數反升", "up"),
        ("午後隨著地產止跌企穩股指攀升", None),  # 止跌 and 攀升: neither way alone
        ("《降龍之劍極致版》首創雙向玩法", None),  # a game's name is no fall
        ("《天域OL》全面升級給您好看", None),  # an upgrade is no rise
        ("萬科半年銷售首破300億", None),
    ],
)
def test_direction(text: str, way: str | None) -> None:
    assert direction(text) == way


def test_direction_clash_needs_both_ways() -> None:
    assert direction_clash("恒指攀升", "恒指回落")
    assert not direction_clash("恒指攀升", "恒指大漲")
    assert not direction_clash("恒指攀升", "恒指成交617億元")


def test_session_dates_and_their_clash() -> None:
    assert session_dates("7月25日至26日北京中招 13月40日") == {(7, 25)}
    assert date_clash("操盤必讀：5月31日香港市場重要新聞", "操盤必讀：11月25日香港市場重要新聞")
    assert not date_clash("5月31日香港市場", "5月31日晚間公告")
    assert not date_clash("房山一渡新新小鎮7月17日開盤", "房山一渡新新小鎮7月下旬開盤")


@pytest.mark.parametrize("conversion", ["tw2sp", "t2s"])
def test_the_direction_words_are_read_after_every_script_conversion(conversion: str) -> None:
    """The report reads headlines after their conversion (``tw2sp`` by default): a rise written 漲 in the
    corpus reaches the veto as 涨, and a Simplified corpus has only those forms."""
    from nlsim.conversion import convert

    for words, way in ((UP_WORDS, "up"), (DOWN_WORDS, "down")):
        for word, converted in zip(words, convert(list(words), conversion), strict=True):
            assert direction(f"恒指{converted}") == way, (word, converted)
    a, b = convert(["收評：港股恒指午後隨日股走強全天漲0.09%", "恒指半日跌169點報22994"], conversion)
    assert direction_clash(a, b)
