"""What the report page is given (:mod:`nlsim.report.page`), read without a browser."""

from __future__ import annotations

import pytest

from nlsim.report.page import script_fold


def _folded(fold: dict[str, str], text: str) -> str:
    """``text`` as the page's search reads it (``fold`` in ``report.js``)."""
    return "".join(fold.get(ch, ch) for ch in text)


@pytest.mark.parametrize("query", ["颱風", "臺風", "頭髮", "以後", "後來", "乾燥", "裡面"])
def test_a_traditional_query_finds_a_simplified_title_whose_traditional_form_the_page_does_not_hold(
    query: str,
) -> None:
    """A newsroom's day has stories in Simplified Chinese only: an editor typing the Traditional word (颱風
    for 台风, 頭髮 for 头发, 以後 for 以后) finds the Simplified title, as a Simplified query finds a
    Traditional one."""
    titles = ["台风凯米今晚登陆", "头发护理", "以后再说 后来", "干燥天气", "里面的人"]
    fold = script_fold(titles)
    hay = "\n".join(_folded(fold, t) for t in titles)
    assert _folded(fold, query) in hay
