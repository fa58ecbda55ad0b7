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
from nlsim.report.files import pairs_table, write_report
from nlsim.report.record import RunRecord
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


LARGEST_FIRST = (
    "const s = document.getElementById('sort'); s.value = 'size'; s.dispatchEvent(new Event('change'))"
)
"""The list sorted largest first (it opens on the latest activity): the typhoon story c-t0 on page one."""


def test_chinese_titles_render_as_glyphs(page: Path, tmp_path: Path) -> None:
    with Browser() as browser:
        browser.open(page.as_uri())
        browser.evaluate(LARGEST_FIRST)
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
        blind.evaluate(LARGEST_FIRST)
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
        browser.evaluate(LARGEST_FIRST)

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


def test_search_finds_a_title_in_either_chinese_script(page: Path) -> None:
    """The page's titles are Traditional (the corpus's script); an editor typing Simplified finds them too,
    and a mixed query as well: the search reads Traditional and Simplified characters as one."""
    with Browser() as browser:
        browser.open(page.as_uri())
        for query in ("台风", "颱風", "台風", "三读通过", "三讀通過", "立法院三读", "停课"):
            browser.evaluate("document.getElementById('q').select()")
            browser.type_text("#q", query)
            want = ["c-b0"] if "三" in query else ["c-t0"]
            assert browser.evaluate(VISIBLE) == want, query


def test_search_finds_a_title_as_it_looks_whatever_its_code_points(tmp_path: Path) -> None:
    """A CMS wrote "Montréal" with a combining accent (NFD, as macOS exports do), a Japanese feed wrote
    "ＡＰＰＬＥ" in full-width letters, a wire "Biden’s" with a curly apostrophe: each looks as an editor
    types it (NFC "Montréal", "apple", "Biden's"), and the search found none of them. It reads titles and
    query alike in NFKC, and curly quotes as straight ones; other words still do not match."""
    require_browser()
    rows = [
        ("m0", "Cafe\u0301 owner elected mayor of Montre\u0301al"),
        ("m1", "Cafe owner wins the city's election"),
        ("w0", "ＡＰＰＬＥ shares soar on new phone"),
        ("w1", "Tech stock jumps after launch"),
        ("q0", "Biden\u2019s \u201cplan\u201d fails in Senate"),
        ("q1", "Senate rejects the president\u2019s budget"),
    ]
    frame = pd.DataFrame(rows, columns=["id", "title"])
    frame["published_at"] = pd.to_datetime(["2024-08-01T08:00Z"] * len(rows), utc=True)
    pairs = pd.DataFrame({"a": [0, 2, 4], "b": [1, 3, 5], "similarity": [0.95, 0.94, 0.93]})
    labels, clusters = batch_clusters(frame, pairs)
    summary = {"model": "m", "items": len(frame), "threshold": 0.9, "conversion": "none"}
    write_report(
        tmp_path, pairs_table(frame, pairs, labels), clusters, RunRecord.from_dict(summary), frame=frame
    )
    with Browser() as browser:
        browser.open((tmp_path / "index.html").as_uri())
        wanted = {
            "elected mayor of Montréal": ["c-m0"],
            "apple shares": ["c-w0"],
            "Biden's": ["c-q0"],
            '"plan"': ["c-q0"],
            "president's budget": ["c-q0"],
            "Montreal": [],
        }
        for query, want in wanted.items():
            browser.evaluate("document.getElementById('q').select()")
            browser.type_text("#q", query)
            assert browser.evaluate(VISIBLE) == want, query


def test_daily_page_shows_status_and_added_items(page: Path, tmp_path: Path) -> None:
    from nlsim.dedup.config import DedupConfig
    from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus

    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    for day in days:
        cfg = DedupConfig.of(
            corpus=day,
            out=tmp_path / "out",
            model="hash",
            convert="none",
            threshold=0.7,
            progress=False,
            cluster_rule="components",  # the bridge x1 merges A and B under this rule only
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


TOP = """(sel => { const el = document.querySelector(sel); if (!el) return null;
  return el.getBoundingClientRect().top + window.scrollY; })(%s)"""


def editors_report(folder: Path) -> Path:
    """A batch report at a calibrated threshold of four decimals (0.9095, precision 0.6667 and recall 0.8125
    on validation): a story of 3 items, one of 2, and near misses at 0.909419 and 0.88."""
    from nlsim.report.near_misses import near_miss_pairs, near_miss_table

    rows = [
        ("t0", TYPHOON[0], "2024-08-01T08:00Z"),
        ("t1", TYPHOON[1], "2024-08-01T09:00Z"),
        ("t2", TYPHOON[2], "2024-08-01T10:30Z"),
        ("b0", BUDGET[0], "2024-08-02T03:00Z"),
        ("b1", BUDGET[1], "2024-08-02T04:00Z"),
        ("l0", "Harbour workers strike in Rotterdam", "2024-08-03T04:00Z"),
        ("l1", "Rotterdam harbour strike enters its third day", "2024-08-03T05:00Z"),
    ]
    frame = pd.DataFrame(rows, columns=["id", "title", "published_at"]).assign(source="wire", url="")
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    pairs = pd.DataFrame({"a": [0, 0, 1, 3], "b": [1, 2, 2, 4], "similarity": [0.97, 0.95, 0.96, 0.93]})
    below = pd.DataFrame({"a": [0, 5], "b": [3, 6], "similarity": [0.909419, 0.88]})
    labels, clusters = batch_clusters(frame, pairs)
    cluster_of = {i: c for i, c in zip(frame["id"], labels, strict=True) if c is not None}
    near = near_miss_table(pairs_table(frame, near_miss_pairs(below, labels, 10), labels), cluster_of)
    calibration = {
        "threshold": 0.9095,
        "level": 1.0,
        "precision": 0.6667,
        "recall": 0.8125,
        "f1": 0.7324,
        "n": 300,
        "n_positive": 32,
        "split": "validation",
    }
    summary = {
        "run_id": "batch-editors001",
        "model": "intfloat/multilingual-e5-small",
        "items": len(frame),
        "threshold": 0.9095,
        "threshold_source": "calibration stored with the model",
        "conversion": "tw2sp",
        "model_info": {
            "requested": "current",
            "zero_shot": False,
            "version": "v0002-1a2b3c4d",
            "threshold_calibration": calibration,
        },
    }
    record = RunRecord.from_dict(summary)
    write_report(folder, pairs_table(frame, pairs, labels), clusters, record, frame=frame, near_misses=near)
    return folder / "index.html"


def test_the_page_opens_on_the_clusters_with_a_plain_line_the_rubric_and_the_thresholds_decimals(
    tmp_path: Path,
) -> None:
    require_browser()
    page = editors_report(tmp_path / "report")
    with Browser() as browser:  # a 1280 x 900 window
        browser.open(page.as_uri())
        top = {s: browser.evaluate(TOP % json.dumps(s)) for s in (
            "#plain", "#list", "#clusters li.cluster", "#review", "#rubric", "#model", "#overview"
        )}  # fmt: skip
        # the clusters come first: on the first screen, above the review panel, the rubric and the model card
        assert top["#clusters li.cluster"] < 900, top
        assert top["#plain"] < top["#list"] < top["#review"] < top["#rubric"] < top["#model"], top
        assert top["#list"] < top["#overview"], top
        # one line in plain words, from the threshold's calibration
        plain = browser.evaluate("document.getElementById('plain').textContent")
        assert "About two in three of the pairs this model links are truly the same story" in plain, plain
        assert "about four in five of the pairs editors call the same story" in plain, plain
        # the rubric, linked from the review panel and carried by the page (folded until asked for)
        assert browser.evaluate("document.getElementById('rubric-levels').open") is False
        browser.evaluate("document.querySelector('#review a.rv-rubric-link').click()")
        assert browser.evaluate("document.getElementById('rubric-levels').open") is True
        rubric = browser.evaluate("document.getElementById('rubric').innerText")
        assert "reports the same event or a very narrow shared topic" in rubric
        assert "shares only a very general area" in rubric and "Different sports or leagues" in rubric
        button = "document.querySelector(\"#rv-near button.rv-level[data-v='1']\").textContent"
        assert browser.evaluate(button) == "same story or a very narrow shared topic"
        # every score with the threshold's four decimals, cut: 0.909419 is not shown as the threshold
        near = browser.evaluate(
            "[...document.querySelectorAll('#rv-near tbody tr')].map(r => r.cells[0].textContent)"
        )
        assert near == ["0.9094", "0.8800"]
        assert "threshold 0.9095" in browser.evaluate("document.querySelector('header').textContent")
        assert "0.9095 on the cosine similarity" in browser.evaluate(
            "document.getElementById('model').textContent"
        )
        assert "(cosine < 0.9095)" in browser.evaluate("document.getElementById('review').textContent")
        browser.evaluate("document.querySelector(\"li[data-cluster='c-t0'] details\").open = true")
        scores = browser.evaluate(
            "[...document.querySelectorAll(\"li[data-cluster='c-t0'] td.score\")].map(td => td.textContent)"
        )
        assert scores == ["0.9700", "0.9600", "0.9500"]
        text = browser.evaluate("document.querySelector(\"li[data-cluster='c-t0']\").textContent")
        assert "max score 0.9700" in text and "score ≥ threshold 0.9095" in text
        browser.screenshot(tmp_path / "editors.png", full_page=False)


def _deployment_zone() -> str:
    """The ``timezone`` parameter of the ``news-dedup/daily`` deployment (``prefect.yaml``)."""
    import yaml

    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "prefect.yaml").read_text())
    daily = next(d for d in spec["deployments"] if d["name"] == "daily")
    return daily["parameters"]["timezone"]


def test_a_daily_page_groups_clusters_by_the_day_of_the_deployments_time_zone(tmp_path: Path) -> None:
    from nlsim.dedup.config import DedupConfig
    from tests.incremental_helpers import HashEncoder, run_daily

    require_browser()
    zone = _deployment_zone()
    assert zone == "Asia/Taipei"  # 8 hours ahead of UTC, no summer time: the times below depend on it
    rows = [  # story A just after midnight in Taipei (the day before in UTC), story B late in the evening
        ("a1", "alpha beta gamma delta", "2024-08-01T16:30Z"),
        ("a2", "alpha beta gamma delta", "2024-08-01T17:10Z"),
        ("b1", "epsilon zeta eta theta", "2024-08-01T15:00Z"),
        ("b2", "epsilon zeta eta theta", "2024-08-01T15:30Z"),
    ]
    corpus = pd.DataFrame(rows, columns=["id", "title", "published_at"]).assign(source="wire")
    corpus["published_at"] = pd.to_datetime(corpus["published_at"], utc=True)
    corpus.to_parquet(tmp_path / "day.parquet")
    days = {}
    for name, tz in (("taipei", zone), ("utc", "UTC")):
        cfg = DedupConfig.of(
            corpus=tmp_path / "day.parquet", out=tmp_path / name, model="hash", convert="none",
            threshold=0.7, cache=False, progress=False, timezone=tz,
        )  # fmt: skip
        run_daily(cfg, tmp_path / f"state-{name}", retention_days=None, encoder=HashEncoder())
        latest = tmp_path / name / "latest"
        assert json.loads((latest / "run.json").read_text())["timezone"] == tz
        html = (latest / "index.html").read_text()
        data = json.loads(
            html.split("<script id='nlsim-data' type='application/json'>")[1].split("</script>")[0]
        )
        days[name] = {c["cluster_id"]: c["period"] for c in data["clusters"]}
        assert f"Clusters by day of their first item ({tz})" in html
    assert days == {
        "taipei": {"c-a1": "2024-08-02", "c-b1": "2024-08-01"},
        "utc": {"c-a1": "2024-08-01", "c-b1": "2024-08-01"},
    }
    with Browser() as browser:
        browser.open((tmp_path / "taipei" / "latest" / "index.html").as_uri())
        options = browser.evaluate("[...document.querySelectorAll('#f-period option')].map(o => o.value)")
        assert options == ["", "2024-08-01", "2024-08-02"]
        browser.evaluate(
            "const s = document.getElementById('f-period'); s.value = '2024-08-02';"
            "s.dispatchEvent(new Event('change'))"
        )
        assert browser.evaluate(VISIBLE) == ["c-a1"]
        browser.evaluate("document.querySelector('#clusters details').open = true")
        summary = browser.evaluate("document.querySelector('#clusters li .meta').textContent")
        assert summary == "2024-08-02 00:30 – 01:10 Asia/Taipei", summary
        head = browser.evaluate(
            "[...document.querySelectorAll('#clusters thead th')].map(th => th.textContent)"
        )
        assert "published (Asia/Taipei)" in head
        times = browser.evaluate(
            "[...document.querySelectorAll('#clusters td.when')].map(td => td.textContent)"
        )
        assert times == ["2024-08-02 00:30", "2024-08-02 01:10"]


def test_a_link_to_a_cluster_opens_it_and_a_mistyped_one_throws_nothing(page: Path) -> None:
    """``index.html#cluster-<id>`` (the day's summary links so, and editors paste such links) opens that
    cluster; a link typed by hand with a stray ``%`` is no percent-escape, and the page reads it as typed
    instead of throwing in the console."""
    opened = (
        "[...document.querySelectorAll('li.cluster details[open]')].map(d => d.closest('li').dataset.cluster)"
    )
    with Browser() as browser:
        browser.open(page.as_uri() + "#cluster-c-b0")
        assert browser.evaluate(opened) == ["c-b0"]
        browser.evaluate("location.hash = '#cluster-c-t0%'")
        browser.evaluate("new Promise(r => setTimeout(r, 200))")
        thrown = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
        assert thrown == []
        browser.evaluate("location.hash = '#cluster-c-t0'")
        browser.evaluate("new Promise(r => setTimeout(r, 200))")
        assert "c-t0" in browser.evaluate(opened)


def test_each_title_is_drawn_in_its_own_script(tmp_path: Path) -> None:
    """A day of Traditional and Simplified headlines, run with tw2sp: the page's title nodes carry each
    title's own ``lang`` (the font's glyph forms follow it), not the run's source script for all."""
    require_browser()
    frame = pd.DataFrame(
        {
            "id": ["tw", "tw2", "cn", "cn2"],
            "title": [
                "颱風凱米登陸 全臺停班停課",
                "颱風凱米登陸臺灣",
                "台风凯米登陆 全台停班停课",
                "台风凯米登陆",
            ],
            "published_at": pd.to_datetime(["2024-07-24T08:00Z"] * 4, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.97, 0.96]})
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord(model="m", conversion="tw2sp")
    write_report(tmp_path, pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    with Browser() as browser:
        browser.open((tmp_path / "index.html").as_uri())
        langs = browser.evaluate(
            "Object.fromEntries([...document.querySelectorAll('li.cluster')]"
            ".map(li => [li.dataset.cluster, li.querySelector('.rep .t').lang]))"
        )
    assert langs == {"c-tw": "zh-Hant", "c-cn": "zh-Hans"}


def test_a_score_a_hair_below_a_six_decimal_threshold_never_shows_as_the_threshold(tmp_path: Path) -> None:
    """At the threshold 0.881349 a near miss of 0.8813486 read "0.881349" on the page, the threshold
    itself: the page's data rounded it to 6 decimals before the script cut it. It reads 0.881348 now; the
    story linked at exactly the threshold still reads 0.881349."""
    from tests.report.test_page import hair_below_report

    require_browser()
    pairs, clusters, record, frame, near = hair_below_report()
    write_report(tmp_path / "r", pairs, clusters, record, frame=frame, near_misses=near)
    with Browser() as browser:
        browser.open((tmp_path / "r" / "index.html").as_uri())
        missed = browser.evaluate(
            "[...document.querySelectorAll('#rv-near tbody tr')].map(r => r.cells[0].textContent)"
        )
        assert missed == ["0.881348"]
        assert "threshold 0.881349" in browser.evaluate("document.querySelector('header').textContent")
        browser.evaluate(
            "document.querySelectorAll('#clusters li.cluster details').forEach(d => d.open = true)"
        )
        scores = browser.evaluate(
            "[...document.querySelectorAll('#clusters td.score')].map(td => td.textContent)"
        )
        assert sorted(scores) == ["0.881349", "0.970000"]


def test_sorting_by_status_puts_merged_stories_first(tmp_path: Path) -> None:
    """A daily page sorted *by status* lists merged stories first, then grown, new and regrouped ones: a
    merged story's rank was 0, which the sort read as no rank, so merged stories came last."""
    require_browser()
    rows = [(f"i{k}", f"Story {k // 2} headline {k}", f"2024-08-0{1 + k // 2}T08:00Z") for k in range(8)]
    frame = pd.DataFrame(rows, columns=["id", "title", "published_at"]).assign(source="wire", url="")
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    pairs = pd.DataFrame({"a": [0, 2, 4, 6], "b": [1, 3, 5, 7], "similarity": [0.95] * 4})
    labels, clusters = batch_clusters(frame, pairs)
    status = {"c-i0": "new", "c-i2": "merged", "c-i4": "grown", "c-i6": "regrouped"}
    clusters["status"] = clusters["cluster_id"].map(status)
    record = RunRecord(mode="incremental", model="m", threshold=0.9)
    write_report(tmp_path / "r", pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    with Browser() as browser:
        browser.open((tmp_path / "r" / "index.html").as_uri())
        browser.evaluate(
            "const s = document.getElementById('sort'); s.value = 'status';"
            "s.dispatchEvent(new Event('change'))"
        )
        order = browser.evaluate("[...document.querySelectorAll('li.cluster')].map(li => li.dataset.cluster)")
    assert [status[c] for c in order] == ["merged", "grown", "new", "regrouped"]


def test_the_source_filter_finds_a_source_holding_a_carriage_return_or_a_nul(tmp_path: Path) -> None:
    """A source as a CMS kept it, with an old Mac line break or a NUL inside (the report keeps its text as
    written): the filter's option held it in an attribute, which the browser reads with the return as a line
    feed and the NUL as U+FFFD, so picking that source showed "No cluster matches". It shows its cluster."""
    require_browser()
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": ["Flood one", "Flood two", "Fire one", "Fire two"],
            "source": ["Daily\rNews", "Daily\rNews", "Nul\x00Wire", "Nul\x00Wire"],
            "published_at": pd.to_datetime(["2024-08-01T08:00Z"] * 4, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.95, 0.95]})
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord(model="m", threshold=0.9)
    write_report(tmp_path / "r", pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    with Browser() as browser:
        browser.open((tmp_path / "r" / "index.html").as_uri())
        found = {}
        for k in (1, 2):
            browser.evaluate(
                f"(s => {{ s.selectedIndex = {k}; s.dispatchEvent(new Event('change')); }})"
                "(document.getElementById('f-source'))"
            )
            found[k] = browser.evaluate(
                "[...document.querySelectorAll('li.cluster')].map(li => li.dataset.cluster)"
            )
    assert found == {1: ["c-a"], 2: ["c-c"]}  # the options: the sources in the order of their names
