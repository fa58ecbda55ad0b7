"""User text on the report page is isolated from the page's own words (bidi isolation), in a real headless
browser (see tests/browser.py): a right-to-left override (U+202E) in a source, a title or a corpus file
name reverses only that text, not "max score 0.983 · c-x5" around it.

The report is written by ``python -m nlsim dedup``, the command an editor's page comes from.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.browser import Browser, require_browser
from tests.command import nlsim

pytestmark = pytest.mark.slow
RLO = "\u202e"
CORPUS = f"news{RLO}x.parquet"

# every character of the element's text with its left edge on screen, in text order
CHARS = """(el => { const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT); const out = []; let t;
  while ((t = walk.nextNode())) for (let i = 0; i < t.data.length; i++) {
    const r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + 1);
    out.push([t.data[i], r.getBoundingClientRect().x]); }
  return out; })(%s)"""
# text nodes holding the override whose nearest element does not isolate it (options: FSI ... PDI marks)
UNISOLATED = """(() => { const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const bad = []; let t;
  while ((t = walk.nextNode())) {
    if (!t.data.includes('\\u202e')) continue;
    const el = t.parentElement;
    if (el.closest('script, noscript')) continue;
    if (el.tagName === 'OPTION') {
      const at = t.data.indexOf('\\u202e');
      if (t.data.lastIndexOf('\\u2068', at) < 0 || t.data.indexOf('\\u2069', at) < 0) bad.push(t.data);
      continue;
    }
    if (!['isolate', 'isolate-override', 'plaintext'].includes(getComputedStyle(el).unicodeBidi))
      bad.push(el.tagName + ': ' + t.data);
  }
  return bad; })()"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_browser()
    folder = tmp_path_factory.mktemp("bidi")
    title = f"Floods hit the {RLO}north of the country"
    rows = [("x5", title, f"AP {RLO}wire"), ("x6", title, "Reuters"), ("x7", "Stock markets fall", "AP")]
    pd.DataFrame(rows, columns=["id", "title", "source"]).to_parquet(folder / CORPUS, index=False)
    args = ["dedup", "--corpus", CORPUS, "--out", "rep", "--model", "paraphrase-MiniLM-L3-v2"]
    args += ["--convert", "none", "--threshold", "0.9", "--no-cache", "--no-progress"]
    proc = nlsim(*args, cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder / "rep" / "index.html"


def left_edges(browser: Browser, selector: str) -> tuple[str, list[float]]:
    chars = browser.evaluate(CHARS % f"document.querySelector({json.dumps(selector)})")
    return "".join(c for c, _ in chars), [x for _, x in chars]


def test_user_text_cannot_reorder_the_page(report: Path) -> None:
    with Browser() as browser:
        browser.open(report.as_uri())
        browser.evaluate("document.querySelector('#clusters details').open = true")
        # the cluster's line: its source (with the override) first, the page's words after it
        text, xs = left_edges(browser, "#clusters .sub")
        assert text.endswith(" · max score 1.000 · weakest link 1.000 · c-x5"), text
        words = text.index("max score")
        assert xs[words] < xs[words + 4] < xs[text.index("c-x5")], (text, xs)
        # the header: the corpus file name holds an override, the model and threshold still follow it
        text, xs = left_edges(browser, "header .meta")
        assert xs[text.index("model ")] < xs[text.index("threshold ")], (text, xs)
        # every text holding the override sits in an element that isolates it (<bdi>, dir=auto)
        assert browser.evaluate(UNISOLATED) == []
        # and the words are still there for search and copy
        assert "AP \u202ewire" in browser.evaluate("document.querySelector('#clusters li').textContent")
