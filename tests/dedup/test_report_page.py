"""The report page in a real headless browser (Debian's chromium-headless-shell, fonts-noto-cjk; installed
by scripts/setup_browser.sh): Chinese titles are drawn as glyphs, not boxes; the search box filters the
clusters; titles stay text; links only for http(s) URLs; the list is paged, never cut."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.clusters.table import batch_clusters
from nlsim.dedup.record import RunRecord
from nlsim.dedup.report import pairs_table, write_report
from tests.browser import Browser, require_browser

pytestmark = pytest.mark.slow

TYPHOON = ["颱風海葵登陸臺東 全臺停班停課", "海葵颱風登陸臺東，全臺停班停課", "颱風海葵登陸：臺東縣停班停課"]
BUDGET = ["立法院三讀通過總預算案", "立法院今三讀通過中央政府總預算"]
FILLERS = 118
"""English two-item clusters after the Chinese ones: 120 clusters, more than one page of 50."""
HAN_PROBE = "li.cluster[data-cluster='c-t0'] .rep .t"


def chinese_report(folder: Path) -> Path:
    """A batch report: a Traditional Chinese story of 3 items (one title with markup and a newline), a
    second one of 2, and English filler clusters; links of every kind in a ``url`` column."""
    rows = [
        ("t0", TYPHOON[0], "中央社", "https://example.com/typhoon", "2024-08-01T08:00Z"),
        ("t1", TYPHOON[1] + "<b>快訊</b>\n更新", "聯合報", "javascript:alert(1)", "2024-08-01T09:00Z"),
        ("t2", TYPHOON[2], "公視", "http://example.org/pts", "2024-08-01T10:30Z"),
        ("b0", BUDGET[0], "自由時報", "", "2024-08-02T03:00Z"),
        ("b1", BUDGET[1], "中央社", "nan", "2024-08-02T04:00Z"),
    ]
    for i in range(FILLERS):
        day = f"2024-08-{3 + i % 5:02d}T12:00Z"
        rows.append((f"e{i}a", f"Harbour strike day {i} </script><script>bad()</script>", "AP", "", day))
        rows.append((f"e{i}b", f"Harbour strike continues, day {i}", "Reuters", "ftp://x/y", day))
    frame = pd.DataFrame(rows, columns=["id", "title", "source", "url", "published_at"])
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    a = [0, 0, 1, 3] + [5 + 2 * i for i in range(FILLERS)]
    b = [1, 2, 2, 4] + [6 + 2 * i for i in range(FILLERS)]
    sims = [0.97, 0.95, 0.96, 0.93] + [0.91] * FILLERS
    pairs = pd.DataFrame({"a": a, "b": b, "similarity": sims})
    labels, clusters = batch_clusters(frame, pairs)
    summary = {
        "model": "intfloat/multilingual-e5-small",
        "items": len(frame),
        "threshold": 0.9,
        "threshold_source": "calibration stored with the model",
        "conversion": "tw2sp",
        "model_info": {"requested": "current", "zero_shot": False, "version": "v0002-1a2b3c4d"},
    }
    write_report(
        folder, pairs_table(frame, pairs, labels), clusters, RunRecord.from_dict(summary), frame=frame
    )
    return folder / "index.html"


NO_CJK_FONTS = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <selectfont><rejectfont><glob>*/*CJK*</glob></rejectfont></selectfont>
</fontconfig>
"""

CHAR_BOXES = """(sel => { const el = document.querySelector(sel); el.scrollIntoView({block: 'center'});
  const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT); const out = []; let t;
  while ((t = walk.nextNode())) for (let i = 0; i < t.data.length; i++) {
    const r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + 1);
    const b = r.getBoundingClientRect(); out.push([t.data[i], b.x, b.y, b.width, b.height]); }
  return out; })(%s)"""


def glyph_crops(browser: Browser, selector: str, shot: Path) -> dict[str, np.ndarray]:
    """Each distinct Han character of ``selector``'s text, cut out of a screenshot (ink = 255 - grey)."""
    from PIL import Image

    boxes = browser.evaluate(CHAR_BOXES % json.dumps(selector))
    browser.screenshot(shot, full_page=False)
    grey = np.asarray(Image.open(shot).convert("L"), dtype=np.float32)
    crops: dict[str, np.ndarray] = {}
    for ch, x, y, w, h in boxes:
        if "\u4e00" <= ch <= "\u9fff" and ch not in crops:
            x0, y0 = round(x), round(y)
            crops[ch] = 255.0 - grey[y0 : y0 + round(h), x0 : x0 + round(w)]
    return crops


def _shape(crop: np.ndarray) -> np.ndarray:
    """The character's ink as a black-and-white picture cut to its bounding box."""
    ink = crop > 96
    if not ink.any():
        return ink
    ys, xs = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    return ink[ys[0] : ys[-1] + 1, xs[0] : xs[-1] + 1]


def glyph_differences(crops: dict[str, np.ndarray]) -> list[float]:
    """For every two distinct characters, the share of their inked pixels that differ once aligned on
    their ink (0: the same picture, as every missing glyph's box is; distinct CJK glyphs: 0.5 or more)."""
    out = []
    for a, b in itertools.combinations([_shape(c) for c in crops.values()], 2):
        h, w = max(a.shape[0], b.shape[0]), max(a.shape[1], b.shape[1])
        a = np.pad(a, ((0, h - a.shape[0]), (0, w - a.shape[1])))
        b = np.pad(b, ((0, h - b.shape[0]), (0, w - b.shape[1])))
        out.append(float((a ^ b).sum() / max((a | b).sum(), 1)))
    return out


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_browser()
    return chinese_report(tmp_path_factory.mktemp("page") / "report")


def test_chinese_titles_render_as_glyphs(page: Path, tmp_path: Path) -> None:
    with Browser() as browser:
        browser.open(page.as_uri())
        shot = browser.screenshot(tmp_path / "report.png")
        assert shot.stat().st_size > 10_000
        assert browser.evaluate("document.documentElement.lang") == "en"
        assert browser.evaluate(f"document.querySelector({json.dumps(HAN_PROBE)}).lang") == "zh-Hant"
        fonts = browser.platform_fonts(HAN_PROBE)
        crops = glyph_crops(browser, HAN_PROBE, tmp_path / "title.png")
    # the browser says a CJK font drew the title's Han characters ...
    han = sum(1 for ch in TYPHOON[0] if "\u4e00" <= ch <= "\u9fff")
    assert sum(f["glyphCount"] for f in fonts if "CJK" in f["familyName"]) >= han, fonts
    # ... and the pixels agree: every character has ink, and no two distinct ones look the same
    assert len(crops) >= 8
    assert all((c > 128).mean() > 0.05 for c in crops.values())
    assert min(glyph_differences(crops)) > 0.25

    # the same check on a browser that cannot see the CJK fonts sees boxes: it would fail on them
    conf = tmp_path / "fonts.conf"
    conf.write_text(NO_CJK_FONTS)
    with Browser(env={"FONTCONFIG_FILE": str(conf)}) as blind:
        blind.open(page.as_uri())
        fonts = blind.platform_fonts(HAN_PROBE)
        boxes = glyph_crops(blind, HAN_PROBE, tmp_path / "boxes.png")
    assert not [f for f in fonts if "CJK" in f["familyName"]], fonts
    assert max(glyph_differences(boxes)) < 0.05


VISIBLE = "[...document.querySelectorAll('#clusters > li.cluster')].map(li => li.dataset.cluster)"
SHOWN = "document.getElementById('shown').textContent"


def test_search_filters_pages_and_escapes(page: Path, tmp_path: Path) -> None:
    with Browser() as browser:
        browser.open(page.as_uri())
        # every cluster is reachable: 50 a page, and the page says how many there are
        assert len(browser.evaluate(VISIBLE)) == 50
        assert browser.evaluate(SHOWN) == "Showing clusters 1–50 of 120 (all clusters of this report)"
        browser.evaluate("document.querySelector('#pager-top button:nth-of-type(3)').click()")
        assert browser.evaluate(SHOWN).startswith("Showing clusters 51–100 of 120")

        browser.type_text("#q", "颱風")
        assert browser.evaluate("document.getElementById('q').value") == "颱風"
        assert browser.evaluate(VISIBLE) == ["c-t0"]
        assert browser.evaluate(SHOWN) == "Showing clusters 1–1 of 1 matching (120 in this report)"
        browser.type_text("#q", " 停課")  # several words: all of them
        assert browser.evaluate(VISIBLE) == ["c-t0"]
        browser.evaluate("document.getElementById('q').select()")
        browser.type_text("#q", "harbour STRIKE day 42")  # case-insensitive, every word
        assert browser.evaluate(VISIBLE) == ["c-e42a"]
        browser.evaluate("document.getElementById('q').select()")
        browser.type_text("#q", "no such story")
        assert browser.evaluate(VISIBLE) == []
        assert browser.evaluate(SHOWN) == "No cluster matches (120 in this report)."
        browser.evaluate("document.getElementById('reset').click()")
        assert len(browser.evaluate(VISIBLE)) == 50

        # a cluster opened: its items (links only for http(s)), and the pairs with their scores
        browser.evaluate(
            "document.querySelector(\"li[data-cluster='c-t0'] details\").open = true;"
            "document.querySelector(\"li[data-cluster='c-t0']\").scrollIntoView()"
        )
        links = browser.evaluate(
            "[...document.querySelectorAll(\"li[data-cluster='c-t0'] .cbody a.t\")].map(a => a.href)"
        )
        assert set(links) == {"https://example.com/typhoon", "http://example.org/pts"}
        scores = browser.evaluate(
            "[...document.querySelectorAll(\"li[data-cluster='c-t0'] td.score\")].map(td => td.textContent)"
        )
        assert scores == ["0.970", "0.960", "0.950"]
        text = browser.evaluate("document.querySelector(\"li[data-cluster='c-t0']\").textContent")
        assert "<b>快訊</b> 更新" in text  # markup shown as text, the newline as a space
        assert browser.evaluate("document.querySelectorAll('#clusters b, #clusters script').length") == 0
        assert browser.evaluate("typeof window.bad") == "undefined"
        browser.screenshot(tmp_path / "opened.png")


def test_daily_page_shows_status_and_added_items(page: Path, tmp_path: Path) -> None:
    from nlsim.dedup.config import DedupConfig
    from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus

    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    for day in days:
        cfg = DedupConfig(
            corpus=day, out=tmp_path / "out", model="hash", convert="none", threshold=0.7, progress=False
        )
        run_daily(cfg, tmp_path / "state", retention_days=None, encoder=HashEncoder())
    with Browser() as browser:
        browser.open((tmp_path / "out" / "latest" / "index.html").as_uri())
        badges = "[...document.querySelectorAll('#clusters .rep .badge')].map(b => b.textContent)"
        assert sorted(browser.evaluate(badges)) == ["merged", "new"]
        browser.evaluate(
            "const s = document.getElementById('f-status'); s.value = 'merged';"
            "s.dispatchEvent(new Event('change'))"
        )
        assert browser.evaluate(VISIBLE) == ["c-a1"]
        browser.evaluate("document.querySelector('#clusters details').open = true")
        added = browser.evaluate("[...document.querySelectorAll('tr.added td.id')].map(td => td.textContent)")
        assert added == ["x1"]
        text = browser.evaluate("document.querySelector('#clusters li').textContent")
        assert "absorbed c-b1" in text and "clusters c-b1 were merged into it" in text
        browser.screenshot(tmp_path / "daily.png")
