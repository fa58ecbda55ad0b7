"""The review panel of the report page, driven in Debian's Chromium with Playwright: pairs marked by click
and by key, kept over a reload, cleared; the near-miss queue; the export merged with
``nlsim annotate merge`` and seen by ``nlsim pipeline`` as new annotations."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from nlsim.clusters.table import batch_clusters
from nlsim.io import editor_file
from nlsim.io.pairs import load_pairs
from nlsim.report.files import pairs_table, write_report
from nlsim.report.near_misses import near_miss_pairs, near_miss_table
from nlsim.report.record import RunRecord
from tests.browser import find_browser
from tests.command import nlsim

pytestmark = pytest.mark.slow
FAST_MODEL = "paraphrase-MiniLM-L3-v2"
TRICKY = "He said \"no\" <i>twice</i> & left, 'again' </script><b>x</b>"
"""A title with markup, quotes of both kinds, a comma and an ampersand: it must come back unchanged."""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium (``scripts/setup_browser.sh``), launched by Playwright: nothing to
    download."""
    exe = find_browser()
    if exe is None:
        message = "no headless browser: run scripts/setup_browser.sh (test.sh does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe)
        yield browser
        browser.close()


def review_report(folder: Path, run_id: str = "batch-review0001") -> Path:
    """A batch report at threshold 0.9: a story of 3 items, one of 2, two lone items, and three near misses
    (0.88, 0.85, 0.80) that the page must list in that order."""
    rows = [
        ("t0", "颱風海葵登陸臺東 全臺停班停課", "2024-08-01T08:00Z"),
        ("t1", "海葵颱風登陸臺東，全臺停班停課", "2024-08-01T09:00Z"),
        ("t2", "颱風海葵登陸：臺東縣停班停課", "2024-08-01T10:30Z"),
        ("b0", "立法院三讀通過總預算案", "2024-08-02T03:00Z"),
        ("b1", "立法院今三讀通過中央政府總預算", "2024-08-02T04:00Z"),
        ("l0", TRICKY, "2024-08-03T04:00Z"),
        ("l1", "He said no twice and left again", "2024-08-03T05:00Z"),
    ]
    frame = pd.DataFrame(rows, columns=["id", "title", "published_at"]).assign(source="wire", url="")
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    pairs = pd.DataFrame({"a": [0, 0, 1, 3], "b": [1, 2, 2, 4], "similarity": [0.97, 0.95, 0.96, 0.93]})
    below = pd.DataFrame({"a": [0, 5, 2], "b": [3, 6, 5], "similarity": [0.85, 0.88, 0.80]})
    labels, clusters = batch_clusters(frame, pairs)
    missed = near_miss_pairs(below, labels, 10)
    cluster_of = {i: c for i, c in zip(frame["id"], labels, strict=True) if c is not None}
    near = near_miss_table(pairs_table(frame, missed, labels), cluster_of)
    summary = {
        "run_id": run_id,
        "model": FAST_MODEL,
        "items": len(frame),
        "threshold": 0.9,
        "threshold_source": "given with --threshold",
        "conversion": "none",
        "model_info": {"requested": FAST_MODEL, "zero_shot": True},
    }
    write_report(
        folder,
        pairs_table(frame, pairs, labels),
        clusters,
        RunRecord.from_dict(summary),
        frame=frame,
        near_misses=near,
    )
    return folder / "index.html"


MARKS = "Object.values(JSON.parse(localStorage.getItem('nlsim-review:' + %s) || '{}').marks || {})"


def stored(page: Any, run_id: str) -> dict[tuple[str, str], float]:
    """The marks the page keeps in localStorage: (id_a, id_b) -> level."""
    return {(m["a"], m["b"]): m["v"] for m in page.evaluate(MARKS % json.dumps(run_id))}


STORAGE = "JSON.stringify(Object.keys(localStorage).sort().map(k => [k, localStorage.getItem(k)]))"


def reload_once_stored(page: Any) -> None:
    """Reload ``page`` once what its localStorage holds can be read from another page of its origin.

    Chromium applies a page's localStorage writes at once in the page's renderer and hands them to the
    browser process after. A page that reads the storage through another renderer can come before the last
    writes (the likely cause of a failure seen once with two pytest-xdist workers: the four marks made just
    before the reload were gone after it). The probe page has a renderer of its own, so it reads what the
    browser holds. An editor does not reload within milliseconds of a click; this waits as the editor
    does, and fails if the marks never reach the browser's storage. ``page`` comes from
    ``browser.new_context()`` (a page from ``browser.new_page()`` owns its context, which then opens no
    other page)."""
    held = page.evaluate(STORAGE)
    probe = page.context.new_page()  # the same origin in a page (a renderer) of its own, in the same context
    try:
        probe.goto(page.url)  # the report page writes nothing until an editor marks a pair
        probe.wait_for_function(f"held => ({STORAGE}) === held", arg=held, timeout=15_000)
    finally:
        probe.close()
    page.reload()


def opened(chromium: Any, page_path: Path) -> tuple[Any, list[str]]:
    """``page_path`` opened in a new browser context (downloads accepted: Playwright's default): the page,
    and the list its script errors go to."""
    page = chromium.new_context().new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_path.as_uri())
    return page, errors


def open_cluster(page: Any, cluster: str) -> str:
    """Open a cluster of the list; returns the selector of its body (drawn once the cluster is open)."""
    page.click(f"li[data-cluster='{cluster}'] summary")
    body = f"li[data-cluster='{cluster}'] .cbody"
    page.wait_for_selector(f"{body} tr.rv-row")
    return body


def levels(page: Any, selector: str) -> list[str | None]:
    """The level shown on each review row of ``selector`` (None: not marked)."""
    return page.eval_on_selector_all(
        selector + " tr.rv-row", "rows => rows.map(r => r.dataset.level || null)"
    )


def test_marks_by_click_and_key_survive_a_reload_and_can_be_cleared(chromium: Any, tmp_path: Path) -> None:
    page_path = review_report(tmp_path / "report")
    page, errors = opened(chromium, page_path)

    # the near misses, in their own queue, nearest the threshold first, titles as text
    near = page.eval_on_selector_all("#rv-near tbody tr", "rows => rows.map(r => r.cells[0].textContent)")
    assert near == ["0.880", "0.850", "0.800"]
    assert page.locator("#rv-near tbody tr").first.locator("td.t").first.text_content().startswith(TRICKY)
    assert page.locator("#rv-near i, #rv-near b, #rv-near script").count() == 0

    # by mouse: a pair that joined a cluster is the same story
    open_cluster(page, "c-t0")
    reported = "li[data-cluster='c-t0'] .cbody"
    page.locator(f"{reported} tr.rv-row").first.locator("button.rv-level[data-v='1']").click()
    assert levels(page, reported) == ["1", None, None]

    # by keyboard: the pair clicked is the current one; a level key marks it and moves to the next
    page.locator("#rv-near tr.rv-row td.t").first.click()
    page.keyboard.press("2")  # same topic and entity, not the same event
    page.keyboard.press("0")  # not related (the second pair)
    page.keyboard.press("k")  # back to the second ...
    page.keyboard.press("x")  # ... and its mark cleared
    page.keyboard.press("j")  # next: the third
    page.keyboard.press("k")
    page.keyboard.press("k")  # previous twice: the first
    page.keyboard.press("1")  # same story after all
    assert levels(page, "#rv-near") == ["1", None, None]
    page.select_option("#rv-levels", "5")  # all five levels: 0.5 and 0.25 have buttons too
    page.locator("#rv-near tr.rv-row").nth(2).locator("button.rv-level[data-v='0.25']").click()
    assert levels(page, "#rv-near") == ["1", None, "0.25"]
    assert page.text_content("#rv-count") == "3 marked · 3 not exported yet"

    # two items picked in two clusters are a pair to mark
    open_cluster(page, "c-b0")
    page.click("li[data-cluster='c-t0'] tr[data-item] button.rv-pick >> nth=1")
    page.click("li[data-cluster='c-b0'] tr[data-item] button.rv-pick >> nth=0")
    page.locator("#rv-picked button.rv-level[data-v='0']").click()
    want = {("t0", "t1"): 1, ("l0", "l1"): 1, ("t2", "l0"): 0.25, ("t1", "b0"): 0}
    assert stored(page, "batch-review0001") == want

    # a reload finds them all, on every row that shows a marked pair
    reload_once_stored(page)
    assert stored(page, "batch-review0001") == want
    assert levels(page, "#rv-near") == ["1", None, "0.25"]
    assert page.text_content("#rv-count") == "4 marked · 4 not exported yet"
    open_cluster(page, "c-t0")
    assert levels(page, reported) == ["1", None, None]
    page.click("#rv-marked summary")
    page.wait_for_selector("#rv-marked tr.rv-row")
    assert sorted(levels(page, "#rv-marked")) == ["0", "0.25", "1", "1"]

    # another report (another run id) has marks of its own, in the same browser storage as this one's
    other = page.context.new_page()
    other.goto(review_report(tmp_path / "other", run_id="batch-review0002").as_uri())
    assert other.text_content("#rv-count") == "0 marked" and levels(other, "#rv-near") == [None] * 3
    other.close()

    # cleared (after a confirmation), and still cleared after a reload
    page.once("dialog", lambda d: d.accept())
    page.click("#rv-clear")
    assert stored(page, "batch-review0001") == {} and levels(page, "#rv-near") == [None] * 3
    reload_once_stored(page)
    assert page.text_content("#rv-count") == "0 marked"
    assert errors == []
    page.context.close()


STORY = [
    ("x1", TRICKY),
    ("x2", TRICKY + " (update)"),
    ("y1", "Harbour workers strike for a third day in Rotterdam"),
    ("y2", "Harbour workers strike for the third day in Rotterdam"),
]


def test_exported_marks_merge_once_and_change_the_training_fingerprint(chromium: Any, tmp_path: Path) -> None:
    from tests.chain.test_chain import make_data

    pairs, corpus = make_data(tmp_path)
    frame = pd.read_parquet(corpus)
    story = pd.DataFrame({"id": [i for i, _ in STORY], "title": [t for _, t in STORY], "source": "wire"})
    pd.concat([frame, story], ignore_index=True).to_parquet(corpus)
    train = ["--base-model", FAST_MODEL, "--epochs", "1", "--cross-encoder-epochs", "1", "--convert", "none"]
    chain = [*train, "--level", "0.8", "--threads", "1", "--model-store", tmp_path / "models", "--no-report"]
    first = nlsim("pipeline", "--pairs", pairs, *chain, "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = json.loads(first.stdout.strip().splitlines()[-1])

    out = tmp_path / "report"
    proc = nlsim(
        "dedup", "--corpus", corpus, "--out", out, "--model", FAST_MODEL, "--convert", "none",
        "--threshold", "0.9", "--text-fields", "title", "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    model = json.loads((out / "run.json").read_text())["model"]  # the encoder's id: the model that showed
    shown = pd.read_parquet(out / "pairs.parquet")
    story_pairs = shown[shown["id_a"].isin(["x1", "x2", "y1", "y2"])]
    assert sorted(zip(story_pairs["id_a"], story_pairs["id_b"], strict=True)) == [("x1", "x2"), ("y1", "y2")]

    page = chromium.new_context(accept_downloads=True).new_page()
    page.goto((out / "index.html").as_uri())
    page.fill("#q", "Rotterdam")
    open_cluster(page, "c-y1")
    page.locator("li[data-cluster='c-y1'] .cbody tr.rv-row").first.locator(
        "button.rv-level[data-v='1']"
    ).click()
    page.fill("#q", "twice")
    open_cluster(page, "c-x1")
    page.click("li[data-cluster='c-x1'] tr[data-item] button.rv-pick >> nth=0")  # x1, then y2: one pair
    page.locator("li[data-cluster='c-x1'] .cbody tr.rv-row td.t").first.click()  # the current pair ...
    page.keyboard.press("2")  # ... marked by key: not the same story, so c-x1 splits in the page at once
    assert page.locator("li[data-cluster='c-x1']").count() == 0
    page.fill("#q", "Rotterdam")
    open_cluster(page, "c-y1")
    page.click("li[data-cluster='c-y1'] tr[data-item] button.rv-pick >> nth=1")
    page.locator("#rv-picked tr.rv-row td.t").first.click()
    page.keyboard.press("0")
    page.locator("#rv-picked input.rv-note").fill('unrelated: "strike" ≠ <i>quote</i>')
    page.keyboard.press("Tab")
    reload_once_stored(page)
    assert page.text_content("#rv-count") == "3 marked · 3 not exported yet"

    # the name is asked once, at the first export
    page.once("dialog", lambda d: d.accept('Lin, "Desk" <3>'))
    with page.expect_download() as download:
        page.click("#rv-export")
    export = tmp_path / "marks.csv"
    download.value.save_as(export)
    assert page.text_content("#rv-count") == "3 marked · 0 not exported yet"
    assert page.input_value("#rv-annotator") == 'Lin, "Desk" <3>'
    page.context.close()

    marks = pd.read_csv(export, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert list(marks.columns) == [*editor_file.COLUMNS, *editor_file.HASH_COLUMNS, editor_file.MARKED_AT]
    got = {(r.id_a, r.id_b): r for r in marks.itertuples()}
    assert set(got) == {("y1", "y2"), ("x1", "x2"), ("x1", "y2")}
    titles = dict(STORY)
    for (a, b), r in got.items():
        assert r.pair_id == editor_file.pair_id(a, b)  # the browser's id is Python's
        assert (r.text_a, r.text_b) == (titles[a], titles[b])  # markup and quotes, unchanged
        assert (r.annotator, r.model, float(r.threshold)) == ('Lin, "Desk" <3>', model, 0.9)
    assert {k: got[k].score for k in got} == {("y1", "y2"): "1", ("x1", "x2"): "0.75", ("x1", "y2"): "0"}
    assert got[("x1", "y2")].notes == 'unrelated: "strike" ≠ <i>quote</i>'
    assert got[("x1", "y2")].stratum == "report-page:picked" and got[("x1", "y2")].similarity == ""
    assert got[("y1", "y2")].stratum == "report-page:reported" and float(got[("y1", "y2")].similarity) >= 0.9

    # merged into a copy of the pair file: once
    copy = tmp_path / "pairs-merged.tsv"
    shutil.copyfile(pairs, copy)
    merge = nlsim("annotate", "merge", "--filled", export, "--pairs", copy, cwd=tmp_path)
    assert merge.returncode == 0, merge.stderr
    merged = load_pairs(copy)
    added = merged[merged["pair_id"].isin(marks["pair_id"])].set_index("pair_id")
    assert len(merged) == len(load_pairs(pairs)) + 3 and len(added) == 3
    for r in marks.itertuples():
        assert (added.at[r.pair_id, "text_a"], added.at[r.pair_id, "text_b"]) == (r.text_a, r.text_b)
    assert set(added["stratum"]) == {"editor-loop:report-page:reported", "editor-loop:report-page:picked"}
    merged_bytes = copy.read_bytes()
    again = nlsim("annotate", "merge", "--filled", export, "--pairs", copy, cwd=tmp_path)
    assert again.returncode == 1 and "already annotated" in again.stderr and "Traceback" not in again.stderr
    lines = again.stderr.strip().splitlines()  # every conflict at once: a header, then one line per row
    # each named by its sheet row (the header is sheet row 1)
    assert len(lines) == 4 and all(f"{export}: sheet row {n + 1}, field " in lines[n] for n in (1, 2, 3)), (
        lines
    )
    assert copy.read_bytes() == merged_bytes

    # the chain sees new annotations: a new fingerprint, a new version trained on the editors' labels
    second = nlsim("pipeline", "--pairs", copy, *chain, "--json", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    after = json.loads(second.stdout.strip().splitlines()[-1])
    assert after["fingerprint"] != before["fingerprint"] and after["trained"]
    assert "the annotated pairs changed since v0001-" in second.stderr
    version = Path(after["candidate"]["path"])
    trained = json.loads((version / "training.json").read_text())
    assert trained["editor_labels"] == {"merged": {"train": 3}, "from_page": {"train": 3}, "overruled": {}}

    # and the next report with that model says so on its page
    proc = nlsim(
        "dedup", "--corpus", corpus, "--out", tmp_path / "next", "--model", version, "--convert", "none",
        "--text-fields", "title", "--no-progress", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    page = chromium.new_page()
    page.goto((tmp_path / "next" / "index.html").as_uri())
    card = page.text_content("#model")
    page.close()
    assert (
        "3 training pairs from editors’ files (and 0 validation pairs); 3 of them marked in a report page"
        in card
    )


FORMULA = '=HYPERLINK("http://evil.example/","x")'
"""A title a spreadsheet would run as a formula: the export must write it as text."""


def export_report(folder: Path) -> Path:
    """A batch report at threshold 0.9 whose story pairs a formula title with a title of every kind of
    character (CJK, an emoji, a tab inside, more than one SHA-256 block), and two near misses."""
    long_title = "颱風海葵登陸臺東 😀 typhoon\tlanding " + "停班停課 " * 20
    rows = [
        ("f0", FORMULA, "2024-08-01T08:00Z"),
        ("f1", long_title, "2024-08-01T09:00Z"),
        ("p0", "Harbour workers strike in Rotterdam", "2024-08-02T04:00Z"),
        ("p1", "-5% for Rotterdam's port after the strike", "2024-08-02T05:00Z"),
    ]
    frame = pd.DataFrame(rows, columns=["id", "title", "published_at"]).assign(source="wire", url="")
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.95]})
    below = pd.DataFrame({"a": [2, 0], "b": [3, 2], "similarity": [0.88, 0.5]})
    labels, clusters = batch_clusters(frame, pairs)
    cluster_of = {i: c for i, c in zip(frame["id"], labels, strict=True) if c is not None}
    near = near_miss_table(pairs_table(frame, near_miss_pairs(below, labels, 10), labels), cluster_of)
    summary = {
        "run_id": "batch-export0001",
        "model": FAST_MODEL,
        "items": len(frame),
        "threshold": 0.9,
        "threshold_source": "given with --threshold",
        "conversion": "none",
        "model_info": {"requested": FAST_MODEL, "zero_shot": True},
    }
    record = RunRecord.from_dict(summary)
    write_report(folder, pairs_table(frame, pairs, labels), clusters, record, frame=frame, near_misses=near)
    return folder / "index.html"


INTRANET = "reports.newsroom.test"
"""The host name the browser resolves to 127.0.0.2 (``--host-resolver-rules``): an intranet host as an
editor's browser sees one. Chromium counts every 127.0.0.0/8 address as potentially trustworthy (a secure
context, ``crypto.subtle`` given), so the address alone would not test plain HTTP; a host name other than
``localhost`` served over HTTP is not a secure context."""


@pytest.fixture
def intranet_chromium(chromium: Any) -> Iterator[Any]:
    """A second Chromium (launched by the same Playwright) that reaches :data:`INTRANET` at 127.0.0.2."""
    browser = chromium.browser_type.launch(
        executable_path=find_browser(), args=[f"--host-resolver-rules=MAP {INTRANET} 127.0.0.2"]
    )
    yield browser
    browser.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A report folder served over plain HTTP from 127.0.0.2, as ``http://reports.newsroom.test:PORT/``:
    not localhost, so not a secure context."""
    import functools
    import http.server
    import threading

    folder = export_report(tmp_path / "report").parent
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{INTRANET}:{server.server_address[1]}/index.html", folder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


HASHED = [
    "",
    "abc",
    "a" * 55,
    "a" * 56,
    "a" * 63,
    "a" * 64,
    "a" * 65,
    "b" * 119,
    "c" * 1000,
    "颱風\u001f😀\r\n",
]
"""Texts whose SHA-256 the page's own script must compute as Python does: empty, one block, the padding's
edges (55/56 and 63/64/65 bytes), two and many blocks, multi-byte UTF-8."""


APOSTROPHES = [
    "=x", "'=x", "''＝x", "'quoted'", "'", "", "a=b", "\t'x",
    "\ufeff=x", "'\u200b\u3000+x", " -5%", "\u2028@x", "\u200b", " ", "a \u200b=x",
]  # fmt: skip
"""Texts for the export's escape: a formula, one after apostrophes of its own, one after spaces or
characters that show nothing, text that is neither."""


def test_the_export_works_over_plain_http_with_hashes_and_formulas_escaped(
    intranet_chromium: Any, served: tuple[str, Path], tmp_path: Path
) -> None:
    import csv
    import hashlib

    url, folder = served
    page = intranet_chromium.new_page(accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    assert page.evaluate("location.host").startswith(INTRANET + ":")
    assert page.evaluate("window.isSecureContext") is False  # no crypto.subtle here
    assert page.evaluate("typeof (window.crypto && window.crypto.subtle)") == "undefined"

    open_cluster(page, "c-f0")  # the story: the formula title and the long one, marked the same story
    page.locator("li[data-cluster='c-f0'] .cbody tr.rv-row").first.locator(
        "button.rv-level[data-v='1']"
    ).click()
    page.locator("li[data-cluster='c-f0'] .cbody tr.rv-row").first.locator("input.rv-note").fill(
        "-- rewritten"
    )
    page.keyboard.press("Tab")
    page.locator("#rv-near tr.rv-row").first.locator("button.rv-level[data-v='0']").click()  # p0 / p1
    page.once("dialog", lambda d: d.accept("@desk"))
    with page.expect_download() as download:
        page.click("#rv-export")
    export = tmp_path / "marks.csv"
    download.value.save_as(export)
    assert page.text_content("#rv-status").startswith("Exported 2 mark(s)")
    # the page's own SHA-256 is Python's, at every padding edge and for multi-byte UTF-8
    got = page.evaluate("texts => texts.map(t => window.nlsimReview.sha256Hex(t))", HASHED)
    assert got == [hashlib.sha256(t.encode()).hexdigest() for t in HASHED]
    # the page's escape is Python's: an apostrophe of the text's own before a formula gets one more
    escaped = page.evaluate("texts => texts.map(t => window.nlsimReview.sheetText(t))", APOSTROPHES)
    assert escaped == [editor_file.escape(t) for t in APOSTROPHES]
    assert escaped[:3] == ["'=x", "''=x", "'''＝x"]
    assert errors == []
    page.close()

    with open(export, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    assert header == [*editor_file.COLUMNS, *editor_file.HASH_COLUMNS, editor_file.MARKED_AT]
    got_rows = {(r["id_a"], r["id_b"]): r for r in (dict(zip(header, row, strict=True)) for row in rows[1:])}
    assert set(got_rows) == {("f0", "f1"), ("p0", "p1")}
    titles = pd.read_parquet(folder / "pairs.parquet")  # the texts the report holds, as the corpus had them
    near = pd.read_parquet(folder / "near_misses.parquet")
    text = dict(zip(titles["id_a"], titles["title_a"], strict=True))
    text |= dict(zip(titles["id_b"], titles["title_b"], strict=True))
    text |= dict(zip(near["id_a"], near["title_a"], strict=True)) | dict(
        zip(near["id_b"], near["title_b"], strict=True)
    )
    for (a, b), r in got_rows.items():
        assert r["pair_id"] == editor_file.pair_id(a, b)  # the page's own SHA-256 gives Python's id
        assert r["sha256_a"] == hashlib.sha256(text[a].encode("utf-8")).hexdigest()
        assert r["sha256_b"] == hashlib.sha256(text[b].encode("utf-8")).hexdigest()
        assert r["annotator"] == "'@desk"  # a name a spreadsheet would run: escaped too
    story, near_pair = got_rows[("f0", "f1")], got_rows[("p0", "p1")]
    assert story["text_a"] == "'" + FORMULA  # escaped: a spreadsheet shows it as text
    assert story["text_b"] == text["f1"] and "\t" in story["text_b"]  # a tab inside is no formula
    assert story["notes"] == "'-- rewritten" and story["score"] == "1" and story["similarity"] == "0.95"
    assert near_pair["text_b"] == "'" + text["p1"] and near_pair["text_a"] == text["p0"]
    assert near_pair["score"] == "0" and near_pair["stratum"] == "report-page:near-miss"


def test_a_not_the_same_story_mark_splits_its_cluster_in_the_page_at_once(
    chromium: Any, tmp_path: Path
) -> None:
    """Doubtful clusters come first in the review queue (weakest link nearest the threshold); pairs an
    editor already scored are never offered (the page knows their pair ids only); "not the same story" on
    a cluster's weakest link splits the cluster in the page at once, and clearing the mark joins it again;
    the editors' decisions the report honours are listed, and a same-story verdict another verdict
    overruled is listed as not joined."""
    folder = tmp_path / "report"
    review_report(folder)
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    run["editors"] = {  # b0/b1 the same story, t0/b1 not: t0/b0, the same story, would join them (overruled)
        "source": "pairs.verdicts.csv",
        "verdicts": 3,
        "acting": 3,
        "must_link": 2,
        "cannot_link": 1,
        "refused": 1,
        "decisions": [["b0", "b1", 1.0], ["t0", "b1", 0.0]],
        "scored_ids": [editor_file.pair_id("b1", "b0"), editor_file.pair_id("l0", "l1")],
        "overruled": [["t0", "b0", 1.0]],
    }
    clusters = pd.read_parquet(folder / "clusters.parquet")
    assert dict(
        zip(clusters["cluster_id"], clusters["weakest_link"].astype(float).round(2), strict=True)
    ) == {
        "c-t0": 0.96,
        "c-b0": 0.93,
    }
    pairs = pd.read_parquet(folder / "pairs.parquet")
    near = pd.read_parquet(folder / "near_misses.parquet")
    from nlsim.report.html import render_html

    frame = pd.DataFrame(
        {"id": ["t0", "t1", "t2", "b0", "b1", "l0", "l1"], "title": list("ABCDEFG"), "source": "wire"}
    ).assign(url="", published_at=pd.Timestamp("2024-08-01", tz="UTC"))
    page_path = tmp_path / "page.html"
    page_path.write_text(
        render_html(pairs, clusters, RunRecord.from_dict(run), frame, near_misses=near), encoding="utf-8"
    )
    page, errors = opened(chromium, page_path)

    # the queue: c-b0's only link is scored, so c-t0's weakest link (t1-t2, 0.96) is the one offered
    doubtful = page.eval_on_selector_all(
        "#rv-doubtful tbody tr.rv-row", "rows => rows.map(r => [r.cells[0].textContent, r.dataset.key])"
    )
    assert doubtful == [["0.960", "t1\u001ft2"]]
    # the near miss l0-l1 (0.88) is scored: left out of the near-miss queue, and said
    near_rows = page.eval_on_selector_all(
        "#rv-near tbody tr", "rows => rows.map(r => r.cells[0].textContent)"
    )
    assert near_rows == ["0.850", "0.800"]
    assert "1 near miss(es) already scored" in page.text_content("#rv-near-more")
    # a scored pair shown in a cluster has no verdict buttons
    page.click("li[data-cluster='c-b0'] summary")
    page.wait_for_selector("li[data-cluster='c-b0'] .cbody tr.rv-scored")
    assert page.locator("li[data-cluster='c-b0'] .cbody tr.rv-row").count() == 0
    # the editors' decisions this report honours
    page.click("#rv-decisions summary")
    assert page.eval_on_selector_all(
        "#rv-decisions tbody tr", "rows => rows.map(r => r.cells[0].textContent)"
    ) == [
        "same story: joined",
        "not the same story: kept apart",
        "same story: not joined (a “not the same story” verdict keeps them apart)",
    ]

    def sizes() -> dict[str, str]:
        return dict(
            page.eval_on_selector_all(
                "#clusters li.cluster",
                "lis => lis.map(li => [li.dataset.cluster, li.querySelector('.size').textContent])",
            )
        )

    assert sizes() == {"c-t0": "3 items", "c-b0": "2 items"}
    page.locator("#rv-doubtful tr.rv-row button.rv-level[data-v='0']").click()  # not related
    assert sizes() == {"c-t0": "2 items", "c-b0": "2 items"}  # t2 split off at once: alone now
    assert "split by your mark (preview)" in page.text_content("li[data-cluster='c-t0'] summary")
    assert page.locator("li[data-cluster='c-b0'] details").get_attribute("open") is not None  # kept open
    # kept over a reload (the marks are), and undone when the mark is cleared
    reload_once_stored(page)
    assert sizes() == {"c-t0": "2 items", "c-b0": "2 items"}
    page.locator(
        "#rv-doubtful tr.rv-row button.rv-level[data-v='0']"
    ).click()  # the same level again: unmarked
    assert sizes() == {"c-t0": "3 items", "c-b0": "2 items"}
    assert "preview" not in page.text_content("li[data-cluster='c-t0'] summary")
    # "not the same story" on t0 and t2 (a pair with no direct link shown inside the cluster) splits too
    page.click("li[data-cluster='c-t0'] summary")
    page.click("li[data-cluster='c-t0'] tr[data-item] button.rv-pick >> nth=0")
    page.click("li[data-cluster='c-t0'] tr[data-item] button.rv-pick >> nth=2")
    page.locator("#rv-picked button.rv-level[data-v='0.75']").click()
    assert sizes() == {"c-t0": "2 items", "c-b0": "2 items"}
    assert errors == []
    page.context.close()


def test_a_split_clusters_pieces_have_the_columns_the_clusters_table_gives_them(
    chromium: Any, tmp_path: Path
) -> None:
    """The page's preview of a split cluster computes each piece's columns by their declared reductions,
    as :func:`nlsim.clusters.table.cluster_table` does: the pieces it draws have the values the page gets
    for the same clusters made by the report (the weakest link is the lowest link of the strongest
    spanning tree, not the lowest score)."""
    from nlsim.report.page import page_data

    rows = [
        ("t0", "Typhoon lands in the east", "AP", "2024-08-01T08:00Z"),
        ("t1", "Typhoon makes landfall in the east", "Reuters", "2024-08-01T09:00Z"),
        ("t2", "The typhoon has landed", "AP", "2024-08-01T10:30Z"),
        ("t3", "Typhoon: schools closed", "CNA", "2024-08-01T11:00Z"),
        ("t4", "Schools closed for the typhoon", "BBC", "2024-08-01T12:00Z"),
    ]
    frame = pd.DataFrame(rows, columns=["id", "title", "source", "published_at"]).assign(url="")
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    links = [(0, 1, 0.97), (1, 2, 0.95), (0, 2, 0.93), (3, 4, 0.96), (2, 3, 0.94), (1, 3, 0.92)]
    pairs = pd.DataFrame(links, columns=["a", "b", "similarity"])
    labels, clusters = batch_clusters(frame, pairs)
    assert clusters["cluster_id"].tolist() == ["c-t0"]
    record = RunRecord.from_dict({"run_id": "batch-split0001", "model": FAST_MODEL, "threshold": 0.9})
    write_report(tmp_path / "report", pairs_table(frame, pairs, labels), clusters, record, frame=frame)

    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "report" / "index.html").as_uri())
    open_cluster(page, "c-t0")
    page.click("li[data-cluster='c-t0'] tr[data-item] button.rv-pick >> nth=0")  # t0 ...
    page.click("li[data-cluster='c-t0'] tr[data-item] button.rv-pick >> nth=4")  # ... and t4
    page.locator("#rv-picked button.rv-level[data-v='0']").click()  # not related: the cluster splits
    drawn = page.evaluate("window.nlsimReport.data")
    assert errors == []
    page.close()

    # the same two clusters made by the report's own code: t0, t1, t2 and t3, t4 with the links inside them
    split = pd.Series(["c-t0"] * 3 + ["c-t3"] * 2, dtype=object)
    inside = pairs[[split[a] == split[b] for a, b in zip(pairs["a"], pairs["b"], strict=True)]]
    _, made = batch_clusters(frame, inside)
    want = page_data(pairs_table(frame, inside, split), made, record, frame)

    def by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
        ids = [it["id"] for it in data["items"]]
        reduced = [c["name"] for c in data["columns"]["clusters"] if c.get("reduce") and c["shown"]]
        assert {"sources", "first_published", "max_similarity", "weakest_link"} <= set(reduced)
        out = {}
        for c in data["clusters"]:
            row = {name: c[name] for name in reduced}
            for name in ("representative", "member_ids", "added_ids"):
                row[name] = ids[row[name]] if isinstance(row[name], int) else [ids[i] for i in row[name]]
            row["topic_id"] = row.get("topic_id") or None  # no topic: null on the page, "" in a table
            out[c["cluster_id"]] = row | {"size": c["size"]}
        return out

    got, expected = by_id(drawn), by_id(want)
    assert set(got) == {"c-t0", "c-t3"}
    assert got == expected
    assert got["c-t0"]["weakest_link"] == 0.95 and got["c-t0"]["sources"] == ["AP", "Reuters"]


def test_a_split_preview_follows_the_runs_rule_and_the_editors_verdicts(
    chromium: Any, tmp_path: Path
) -> None:
    """The page's preview of a "not the same story" mark groups a cluster's items as the run's rule would
    (:meth:`nlsim.clusters.rules.ClusterRule.clusters` on the cluster's links): under the support rule the
    link the mark removes can leave too little support for the rest, and the editors' verdicts merged
    earlier (the decisions the report honours) still bind: a same-story verdict keeps its two items
    together, so the mark cuts the other item away."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import Link, SharedSupport
    from nlsim.report.html import render_html

    ids = ["s-a", "s-b", "s-c", "s-d", "s-e", "m0", "m1", "m2"]
    frame = pd.DataFrame({"id": ids, "title": [f"title {i}" for i in ids], "source": "wire", "url": ""})
    frame["published_at"] = pd.Timestamp("2024-08-01", tz="UTC")
    at = {i: k for k, i in enumerate(ids)}
    links = [
        ("s-a", "s-b", 0.91), ("s-a", "s-e", 0.97), ("s-b", "s-c", 0.91), ("s-b", "s-d", 0.97),
        ("s-c", "s-d", 0.96), ("s-c", "s-e", 0.96), ("s-d", "s-e", 0.98),
        ("m1", "m2", 0.883), ("m0", "m2", 0.868), ("m0", "m1", 0.857),
    ]  # fmt: skip
    pairs = pd.DataFrame([(at[a], at[b], s) for a, b, s in links], columns=["a", "b", "similarity"])
    labels, clusters = batch_clusters(frame, pairs)
    assert sorted(clusters["cluster_id"]) == ["c-m0", "c-s-a"]
    rule = SharedSupport(min_share=0.5)
    support = [Link(a, b, s) for a, b, s in links if a.startswith("s-")]
    assert rule.clusters(support) == [ids[:5]]  # one cluster under the rule too
    run = {
        "run_id": "batch-rule0001",
        "model": FAST_MODEL,
        "threshold": 0.85,
        "story_rule": {"name": "support", "min_share": 0.5, "cut": "order"},
        "editors": {
            "source": "pairs.verdicts.csv",
            "verdicts": 1,
            "acting": 1,
            "must_link": 1,
            "decisions": [["m0", "m2", 1.0]],
            "scored_ids": [editor_file.pair_id("m0", "m2")],
        },
    }
    page_path = tmp_path / "page.html"
    page_path.write_text(
        render_html(pairs_table(frame, pairs, labels), clusters, RunRecord.from_dict(run), frame),
        encoding="utf-8",
    )
    page, errors = opened(chromium, page_path)
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")  # the page's own item order

    def mark_apart(cluster: str, a: str, b: str) -> None:
        open_cluster(page, cluster)
        for item in (a, b):
            page.click(f"li[data-cluster='{cluster}'] tr[data-item='{held.index(item)}'] button.rv-pick")
        page.locator("#rv-picked button.rv-level[data-v='0']").click()  # not related

    def groups() -> list[list[str]]:
        drawn = page.evaluate("window.nlsimReport.data.clusters.map(c => c.member_ids)")
        return sorted(sorted(held[i] for i in g) for g in drawn)

    mark_apart("c-s-a", "s-c", "s-b")
    want = rule.clusters(support, LinkConstraints.from_pairs(cannot=[("s-c", "s-b")]))
    assert want == [["s-a", "s-b"], ["s-c", "s-d", "s-e"]]
    assert groups() == [["m0", "m1", "m2"], *want]
    mark_apart("c-m0", "m1", "m0")  # the editors' same story m0-m2 holds: m1 is cut away, not m0
    assert groups() == [["m0", "m2"], *want]
    assert errors == []
    page.context.close()


def test_a_split_preview_joins_what_an_overruled_same_story_verdict_joins_once_freed(
    chromium: Any, tmp_path: Path
) -> None:
    """The editors said a1/b1 and b1/c1 are the same story and a1/c1 is not: the first verdict joins a1's
    story with b1's, so the second would put a1 with c1 and is overruled (the page lists it as not joined).
    An editor's "not the same story" on a1/b1 takes the first back: the next report's rule, with the mark
    merged, joins b1's story with c1's, as the verdict overruled until now says, and leaves a1's apart. The
    page's preview once split a1's cluster only, leaving c1's story as it was."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import ConnectedComponents, Link
    from nlsim.report.html import render_html

    ids = ["a1", "a2", "b1", "b2", "c1", "c2"]
    frame = pd.DataFrame({"id": ids, "title": [f"title {i}" for i in ids], "source": "wire", "url": ""})
    frame["published_at"] = pd.Timestamp("2024-08-01", tz="UTC") + pd.to_timedelta(range(len(ids)), unit="h")
    at = {i: k for k, i in enumerate(ids)}
    links = [("a1", "a2", 0.95), ("b1", "b2", 0.95), ("c1", "c2", 0.95), ("a1", "b1", 0.91)]
    pairs = pd.DataFrame([(at[a], at[b], s) for a, b, s in links], columns=["a", "b", "similarity"])
    labels, clusters = batch_clusters(frame, pairs)
    assert sorted(clusters["cluster_id"]) == ["c-a1", "c-c1"]
    verdicts = LinkConstraints.from_pairs(must=[("a1", "b1"), ("b1", "c1")], cannot=[("a1", "c1")])
    rule = ConnectedComponents()
    assert rule.clusters([Link(*k) for k in links], verdicts) == [["a1", "a2", "b1", "b2"], ["c1", "c2"]]
    scored = [editor_file.pair_id(a, b) for a, b in (("a1", "b1"), ("a1", "c1"), ("b1", "c1"))]
    run = {
        "run_id": "batch-overruled0001",
        "model": FAST_MODEL,
        "threshold": 0.9,
        "story_rule": {"name": "components", "cut": "order"},
        "editors": {
            "source": "pairs.verdicts.csv",
            "verdicts": 3,
            "acting": 3,
            "must_link": 2,
            "cannot_link": 1,
            "refused": 1,
            "decisions": [["a1", "b1", 1.0], ["a1", "c1", 0.0]],
            "overruled": [["b1", "c1", 1.0]],
            "scored_ids": scored,
            "training_ids": scored,  # an editor's verdicts: training pairs, a mark overrules them
        },
    }
    page_path = tmp_path / "page.html"
    page_path.write_text(
        render_html(pairs_table(frame, pairs, labels), clusters, RunRecord.from_dict(run), frame),
        encoding="utf-8",
    )
    page, errors = opened(chromium, page_path)
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")
    open_cluster(page, "c-a1")
    for item in ("a1", "b1"):
        page.click(f"li[data-cluster='c-a1'] tr[data-item='{held.index(item)}'] button.rv-pick")
    page.locator("#rv-picked button.rv-level[data-v='0']").click()  # not related: takes a1/b1 back
    drawn = page.evaluate("window.nlsimReport.data.clusters.map(c => [c.cluster_id, c.member_ids])")
    assert errors == []
    page.context.close()
    after = LinkConstraints.from_pairs(must=[("b1", "c1")], cannot=[("a1", "c1"), ("a1", "b1")])
    want = rule.clusters([Link(*k) for k in links], after)
    assert want == [["a1", "a2"], ["b1", "b2", "c1", "c2"]]
    assert sorted(sorted(held[i] for i in members) for _, members in drawn) == want, drawn


def test_a_huge_cluster_opens_at_once(chromium: Any, tmp_path: Path) -> None:
    """Opening a cluster of 3,000 items (4.5 million pairs inside it) draws it at once: the other pairs of
    its items are not hashed one by one to be counted (that held the page for over a minute); the first
    200 are listed to mark, and the count says how many pairs no link joins."""
    import time

    n = 3000
    frame = pd.DataFrame({"id": [f"h{i:05d}" for i in range(n)], "title": [f"story {i}" for i in range(n)]})
    frame = frame.assign(source="wire", url="", published_at=pd.Timestamp("2024-08-01", tz="UTC"))
    pairs = pd.DataFrame({"a": range(n - 1), "b": range(1, n), "similarity": 0.95})  # one chain
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord.from_dict({"run_id": "batch-huge0001", "model": FAST_MODEL, "threshold": 0.9})
    write_report(tmp_path / "report", pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "report" / "index.html").as_uri())
    start = time.monotonic()
    page.click("li[data-cluster='c-h00000'] summary")
    page.wait_for_selector("li[data-cluster='c-h00000'] details.rv-inside", timeout=120_000)
    took = time.monotonic() - start
    summary = page.text_content("li[data-cluster='c-h00000'] details.rv-inside summary")
    assert (
        summary == "The other pairs of its items (4,495,501 not linked, some perhaps already scored), to mark"
    )
    page.click("li[data-cluster='c-h00000'] details.rv-inside summary")
    assert page.locator("li[data-cluster='c-h00000'] details.rv-inside tr.rv-row").count() == 200
    assert took < 20, f"opening the cluster took {took:.1f} s"
    assert errors == []
    page.close()


def test_marks_of_items_this_page_does_not_hold_do_not_stop_the_export(chromium: Any, tmp_path: Path) -> None:
    """The marks are kept by run id, and two reports of one corpus, model and threshold share it (another
    cluster rule, the editors' verdicts merged since): a mark kept from the other report whose items this
    page does not hold is exported with the texts it was marked with, and one kept without them is left out
    and said; the export of the rest goes on (it stopped at the first such mark, saying nothing)."""
    review_report(tmp_path / "report")
    page, errors = opened(chromium, tmp_path / "report" / "index.html")
    page.locator("#rv-near tr.rv-row").first.locator("button.rv-level[data-v='1']").click()
    kept = {
        "gone1\u001fgone2": {"a": "gone1", "b": "gone2", "v": 0, "src": "near-miss", "score": 0.8,
                             "notes": "", "at": "2024-01-01T00:00:00Z", "exported": False, "overrule": False},
        "gone3\u001fgone4": {"a": "gone3", "b": "gone4", "v": 1, "src": "picked", "score": None, "notes": "",
                             "at": "2024-01-02T00:00:00Z", "exported": False, "overrule": False,
                             "ta": "Title three", "tb": "Title four"},
    }  # fmt: skip
    page.evaluate(
        """kept => {
            const key = 'nlsim-review:batch-review0001', now = JSON.parse(localStorage.getItem(key));
            localStorage.setItem(key, JSON.stringify({version: 1, marks: Object.assign(now.marks, kept)}));
            localStorage.setItem('nlsim-review:annotator', 'Lin');
        }""",
        kept,
    )
    page.reload()
    assert page.text_content("#rv-count") == "3 marked · 3 not exported yet"
    with page.expect_download() as download:
        page.click("#rv-export")
    export = tmp_path / "marks.csv"
    download.value.save_as(export)
    marks = pd.read_csv(export, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert sorted(zip(marks["id_a"], marks["id_b"], strict=True)) == [("gone3", "gone4"), ("l0", "l1")]
    row = marks[marks["id_a"] == "gone3"].iloc[0]
    assert (row.text_a, row.text_b) == ("Title three", "Title four")
    assert row.sha256_a == editor_file.text_sha256("Title three")
    status = page.text_content("#rv-status")
    assert status.startswith("Exported 2 mark(s)") and "1 mark(s) left out" in status, status
    assert errors == []
    page.context.close()


def test_a_doubtful_row_shows_the_score_of_the_pair_it_offers(chromium: Any, tmp_path: Path) -> None:
    """A cluster whose weakest link an editor already scored is offered its open link nearest to it: the
    row shows that pair's own score (the one in pairs.parquet), and says the weakest link is scored."""
    folder = tmp_path / "report"
    review_report(folder)
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    run["editors"] = {"source": "pairs.verdicts.csv", "scored_ids": [editor_file.pair_id("t1", "t2")]}
    pairs = pd.read_parquet(folder / "pairs.parquet")
    clusters = pd.read_parquet(folder / "clusters.parquet")
    assert clusters.set_index("cluster_id").at["c-t0", "weakest_link"] == pytest.approx(0.96)
    from nlsim.report.html import render_html

    frame = pd.DataFrame({"id": ["t0", "t1", "t2", "b0", "b1"], "title": list("ABCDE"), "source": "wire"})
    page_path = tmp_path / "page.html"
    page_path.write_text(render_html(pairs, clusters, RunRecord.from_dict(run), frame), encoding="utf-8")
    page = chromium.new_page()
    page.goto(page_path.as_uri())
    rows = page.eval_on_selector_all(
        "#rv-doubtful tbody tr.rv-row", "rows => rows.map(r => [r.cells[0].textContent, r.dataset.key])"
    )
    page.close()
    shown = dict(zip(pairs["id_a"] + "\u001f" + pairs["id_b"], pairs["similarity"], strict=True))
    offered = {key: text for text, key in rows}
    assert offered["t0\u001ft1"].startswith(f"{shown['t0' + chr(31) + 't1']:.3f}")  # 0.970, not 0.960
    assert "weakest link 0.960 already scored" in offered["t0\u001ft1"]
    assert offered["b0\u001fb1"] == "0.930"


def test_a_split_preview_reads_exact_copies_as_the_run_does(chromium: Any, tmp_path: Path) -> None:
    """Exact copies are read by the run's rule as their representative standing for all of them
    (:mod:`nlsim.clusters.copies`): the page's preview of a "not the same story" mark does the same, so
    its pieces are the rule's (the copies' single links to their representative read as items of their
    own gave the support rule other shares: the copies and an item dropped)."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import Link, SharedSupport

    ids = ["a", "a2", "a3", "x0", "x1", "x2", "x3"]
    frame = pd.DataFrame(
        {"id": ids, "title": ["Rain in Taipei"] * 3 + ["w", "x", "y", "z"], "source": "wire"}
    )
    frame = frame.assign(url="", published_at=pd.date_range("2024-08-01", periods=7, freq="h", tz="UTC"))
    at = {i: k for k, i in enumerate(ids)}
    scored = [
        ("a", "x0", 0.97), ("a", "x1", 0.98), ("a", "x2", 0.92), ("a", "x3", 0.92), ("x1", "x2", 0.92),
        ("x1", "x3", 0.98), ("x2", "x3", 0.91),
    ]  # fmt: skip
    copies = [("a", "a2", 1.0), ("a", "a3", 1.0)]
    pairs = pd.DataFrame(
        [(at[x], at[y], s, False) for x, y, s in scored] + [(at[x], at[y], s, True) for x, y, s in copies],
        columns=["a", "b", "similarity", "exact_copy"],
    )
    labels, clusters = batch_clusters(frame, pairs)
    assert clusters["cluster_id"].tolist() == ["c-a"]
    rule, rep = SharedSupport(min_share=0.5), {"a2": "a", "a3": "a"}
    links = [Link(x, y, s) for x, y, s in scored + copies]
    assert rule.clusters(links, copies=rep) == [sorted(ids)]
    want = rule.clusters(links, LinkConstraints.from_pairs(cannot=[("x0", "x2")]), copies=rep)
    assert want == [["a", "a2", "a3", "x0", "x1", "x3"]]  # x2 cut away, not x0
    record = RunRecord.from_dict(
        {
            "run_id": "batch-copies001",
            "model": FAST_MODEL,
            "threshold": 0.9,
            "story_rule": {"name": "support", "min_share": 0.5, "cut": "order"},
        }
    )
    write_report(tmp_path / "report", pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "report" / "index.html").as_uri())
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")
    open_cluster(page, "c-a")
    for item in ("x0", "x2"):
        page.click(f"li[data-cluster='c-a'] tr[data-item='{held.index(item)}'] button.rv-pick")
    page.locator("#rv-picked button.rv-level[data-v='0']").click()  # not related
    drawn = page.evaluate("window.nlsimReport.data.clusters.map(c => c.member_ids)")
    assert sorted(sorted(held[i] for i in g) for g in drawn) == want
    assert errors == []
    page.close()


def test_clearing_the_marks_undoes_their_preview(chromium: Any, tmp_path: Path) -> None:
    """Clear marks takes back what the marks did to the list at once: a cluster a mark split is whole
    again (it stayed split, or gone, until the page was reloaded)."""
    page = chromium.new_context().new_page()
    page.goto(review_report(tmp_path / "report").as_uri())

    def sizes() -> dict[str, str]:
        return dict(
            page.eval_on_selector_all(
                "#clusters li.cluster",
                "lis => lis.map(li => [li.dataset.cluster, li.querySelector('.size').textContent])",
            )
        )

    assert sizes() == {"c-t0": "3 items", "c-b0": "2 items"}
    page.locator("#rv-doubtful tr.rv-row").first.locator("button.rv-level[data-v='0']").click()
    assert sizes() == {"c-t0": "3 items"}  # b0 and b1 not the same story: c-b0 is gone
    page.once("dialog", lambda d: d.accept())
    page.click("#rv-clear")
    assert page.text_content("#rv-count") == "0 marked"
    assert sizes() == {"c-t0": "3 items", "c-b0": "2 items"}
    assert "preview" not in page.text_content("li[data-cluster='c-b0'] summary")
    page.context.close()


def test_marks_made_in_two_tabs_of_one_report_are_all_kept(chromium: Any, tmp_path: Path) -> None:
    """An editor with the report open in two tabs marks in both: each tab takes in the other's marks as
    they are made, so neither tab's next mark writes the other's away (the last tab to mark kept only its
    own)."""
    path = review_report(tmp_path / "report").as_uri()
    context = chromium.new_context()
    first, second = context.new_page(), context.new_page()
    first.goto(path)
    second.goto(path)
    first.locator("#rv-near tr.rv-row").nth(0).locator("button.rv-level[data-v='1']").click()
    first.locator("#rv-near tr.rv-row").nth(1).locator("button.rv-level[data-v='0']").click()
    second.wait_for_function("document.getElementById('rv-count').textContent.startsWith('2 marked')")
    second.locator("#rv-doubtful tr.rv-row").nth(0).locator("button.rv-level[data-v='1']").click()
    first.wait_for_function("document.getElementById('rv-count').textContent.startsWith('3 marked')")
    assert len(stored(first, "batch-review0001")) == 3
    assert second.text_content("#rv-count") == "3 marked · 3 not exported yet"
    context.close()


def test_a_note_with_a_tab_is_exported_as_the_pair_file_can_hold_it(chromium: Any, tmp_path: Path) -> None:
    """A note pasted with a tab (a cell copied from a spreadsheet) is kept with a space instead: the TSV
    pair file holds no tab in a cell, and ``nlsim annotate merge`` refused the whole export for it."""
    page = chromium.new_context(accept_downloads=True).new_page()
    page.goto(review_report(tmp_path / "report").as_uri())
    row = page.locator("#rv-near tr.rv-row").first
    row.locator("button.rv-level[data-v='1']").click()
    row.locator("input.rv-note").fill("same strike\tsee desk notes")
    row.locator("input.rv-note").press("Tab")
    page.fill("#rv-annotator", "Lin")
    with page.expect_download() as download:
        page.click("#rv-export")
    export = tmp_path / "marks.csv"
    download.value.save_as(export)
    page.context.close()
    marks = pd.read_csv(export, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert marks["notes"].tolist() == ["same strike see desk notes"]


# HashEncoder (bags of words): a1, a2, a3 at 0.8 with each other; y 0.8 with a3, 0.6 with a1 and a2; x1 and x2
# 0.8 with each other, nothing with the others
_WORDS = " ".join(f"w{i}" for i in range(1, 9))
STORY_TITLES = {
    "a1": f"{_WORDS} x1 x2",
    "a2": f"{_WORDS} y1 y2",
    "a3": f"{_WORDS} z1 z2",
    "y": " ".join(f"w{i}" for i in range(1, 7)) + " z1 z2 v1 v2",
    "q": "nothing else in common",
    "x1": "k1 k2 k3 k4 k5 k6 k7 k8 j1 j2",
    "x2": "k1 k2 k3 k4 k5 k6 k7 k8 j3 j4",
}


def preview_and_next_report(
    chromium: Any,
    folder: Path,
    titles: dict[str, str],
    mark: tuple[str, str, str],
    daily: bool = False,
    **settings: Any,
) -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]], dict[str, str]]:
    """A batch report of ``titles`` (published in that order, HashEncoder, threshold 0.7), an editor's
    ``mark`` (id_a, id_b, level) made in its page, and the next report with the mark merged as a verdict:
    the page's clusters (id, members) after the mark, the next report's, and each previewed cluster's
    preview note by id. ``daily``: the day's run of a daily state, and the next day's (one unrelated item),
    whose window's clusters are the next report's."""
    from incremental_helpers import HashEncoder, run_daily

    from nlsim.annotation.merge import merge_annotations
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup

    day = pd.Timestamp("2024-05-01", tz="UTC")
    corpus = pd.DataFrame(
        {
            "id": list(titles),
            "title": list(titles.values()),
            "published_at": [day + pd.Timedelta(minutes=n) for n in range(len(titles))],
        }
    )
    corpus.to_parquet(folder / "news.parquet", index=False)
    pairs = folder / "pairs.tsv"
    pairs.write_text(
        "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\np0\ttrain\tq1\tq2\tfoo bar\tbaz qux\t0\n",
        encoding="utf-8",
    )

    def report(out: str) -> list[tuple[str, list[str]]]:
        config = dict(
            model="hash", convert="none", threshold=0.7, k=10, cache=False, progress=False,
            save_index=False, text_fields=("title",), annotated_pairs=str(pairs),
        )  # fmt: skip
        config.update(settings)
        if not daily:
            run_dedup(
                DedupConfig.of(corpus=folder / "news.parquet", out=folder / out, **config),
                encoder=HashEncoder(),
            )
            table = pd.read_parquet(folder / out / "clusters.parquet")
        else:
            corpus = folder / ("news.parquet" if out == "before" else "day2.parquet")
            state = folder / "state"
            run_daily(
                DedupConfig.of(corpus=corpus, out=folder / out, **config),
                state,
                retention_days=None,
                encoder=HashEncoder(),
            )
            table = pd.read_parquet(folder / out / "latest" / "window" / "clusters.parquet")
        return sorted((c, sorted(m)) for c, m in zip(table["cluster_id"], table["member_ids"], strict=True))

    pd.DataFrame(
        {"id": ["zz"], "title": ["an unrelated item"], "published_at": [day + pd.Timedelta(days=1)]}
    ).to_parquet(folder / "day2.parquet", index=False)
    report("before")
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((folder / "before" / ("latest/index.html" if daily else "index.html")).as_uri())
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")
    shown = "window.nlsimReport.data.clusters.map(c => [c.cluster_id, c.member_ids, c.preview || ''])"
    a, b, level = mark
    for item in (a, b):
        home = next(c for c, members, _ in page.evaluate(shown) if held.index(item) in members)
        open_cluster(page, home)
        page.click(f"li[data-cluster='{home}'] tr[data-item='{held.index(item)}'] button.rv-pick")
        page.click(f"li[data-cluster='{home}'] summary")
    page.locator(f"#rv-picked button.rv-level[data-v='{level}']").click()
    drawn = page.evaluate(shown)
    assert errors == []
    page.close()
    marks = folder / "marks.csv"
    pd.DataFrame(
        {"id_a": [a], "id_b": [b], "text_a": [titles[a]], "text_b": [titles[b]], "score": [level]}
    ).to_csv(marks, index=False)
    merge_annotations(marks, pairs, log=lambda _: None)
    previewed = sorted((c, sorted(held[i] for i in members)) for c, members, _ in drawn)
    return previewed, report("after"), {c: note for c, _, note in drawn}


def test_a_split_preview_gives_the_clusters_the_next_report_gives(chromium: Any, tmp_path: Path) -> None:
    """a1, a2 and a3 are one story; y links to a3 only (at the threshold and above, 0.8), too little
    support to join it, so the report lists a3/y as a near miss. An editor's "not the same story" on a1/a3
    splits a3 off: the next report, with the verdict merged, puts a3 with y, and the page's preview shows
    the same clusters (it once showed a3 alone: the rule read the cluster's own links only)."""
    titles = {k: STORY_TITLES[k] for k in ("a1", "a2", "a3", "y", "q")}
    previewed, after, said = preview_and_next_report(chromium, tmp_path, titles, ("a1", "a3", "0"))
    assert after == [("c-a1", ["a1", "a2"]), ("c-a3", ["a3", "y"])]
    assert previewed == after
    assert "split" in said["c-a1"] and said["c-a3"] == "regrouped after your mark split c-a1 (preview)", said


def test_a_preview_names_its_clusters_as_the_next_report_does(chromium: Any, tmp_path: Path) -> None:
    """A batch report names each cluster after its earliest item. A "not the same story" that leaves the
    earliest item alone (a1, by the min-cut) names the rest after a2, not a1; a "same story" joining an
    earlier story of two (x1, x2) with a later story of three takes the earlier's id, not the larger's
    (the page once kept c-a1 for both)."""
    titles = {k: STORY_TITLES[k] for k in ("a1", "a2", "a3", "q")}
    (tmp_path / "split").mkdir()
    previewed, after, _ = preview_and_next_report(
        chromium, tmp_path / "split", titles, ("a1", "a2", "0"), cluster_cut="min-cut"
    )
    assert after == [("c-a2", ["a2", "a3"])]
    assert previewed == after
    (tmp_path / "daily").mkdir()  # a daily run's cluster keeps its id in the larger piece
    previewed, after, _ = preview_and_next_report(
        chromium, tmp_path / "daily", titles, ("a1", "a2", "0"), daily=True, cluster_cut="min-cut"
    )
    assert after == [("c-a1", ["a2", "a3"])]
    assert previewed == after
    titles = {k: STORY_TITLES[k] for k in ("x1", "x2", "a1", "a2", "a3", "q")}
    (tmp_path / "join").mkdir()
    previewed, after, _ = preview_and_next_report(chromium, tmp_path / "join", titles, ("a1", "x2", "1"))
    assert after == [("c-x1", ["a1", "a2", "a3", "x1", "x2"])]
    assert previewed == after


@pytest.mark.parametrize(
    ("cut", "daily"), [("order", False), ("min-cut", False), ("order", True), ("min-cut", True)]
)
def test_a_mark_between_two_exact_copies_parts_them_in_the_preview_as_the_report_does(
    chromium: Any, tmp_path: Path, cut: str, daily: bool
) -> None:
    """a1c is an exact copy of a1 (the run reads the two as one item), and an editor says they are not the
    same story. The next report puts them in copy groups of their own and keeps them apart (a1c, with
    a1's links, left out by the order cut; a1 left out by the min-cut); the page's preview did nothing
    (it read a1c as a1 still), and now parts them as the report does. A daily run searches a1c, which the
    day before read as a1, for its own neighbours, and keeps the copy a batch run keeps (the split keeping
    the cluster's id)."""
    titles = {k: STORY_TITLES[k] for k in ("a1", "a2", "a3", "q")}
    titles["a1c"] = titles["a1"]
    previewed, after, _ = preview_and_next_report(
        chromium, tmp_path, titles, ("a1", "a1c", "0"), daily=daily, cluster_cut=cut
    )
    kept = "a1" if cut == "order" else "a1c"
    assert after == [("c-a1" if kept == "a1" or daily else "c-a2", sorted([kept, "a2", "a3"]))]
    assert previewed == after


def test_in_the_hour_a_fall_back_repeats_the_list_and_a_split_preview_follow_the_instants(
    chromium: Any, tmp_path: Path
) -> None:
    """America/New_York on 2024-11-03, when 01:00-02:00 comes twice. Story c-v's last item y came at 01:10
    of the second pass (06:10 UTC), story c-p's last item q at 01:55 of the first (05:55 UTC): the list
    opens on c-v (the local times put c-p first). Split off v, the piece w, y (w at 01:50 of the first
    pass, 05:50 UTC) is named by w and spans w to y, as the report's own code makes it (the local times
    made y its earliest item), and its times show their offsets."""
    from nlsim.report.page import page_data

    rows = [
        ("v", "Storm nears the coast", "2024-11-03T00:30-04:00"),
        ("w", "Storm floods the coast", "2024-11-03T01:50-04:00"),
        ("y", "Storm floods the coastal town", "2024-11-03T01:10-05:00"),
        ("p", "Mayor resigns", "2024-11-03T01:20-04:00"),
        ("q", "Mayor quits", "2024-11-03T01:55-04:00"),
    ]
    frame = pd.DataFrame(rows, columns=["id", "title", "published_at"]).assign(source="wire", url="")
    frame["published_at"] = pd.to_datetime(frame["published_at"], utc=True)
    pairs = pd.DataFrame([(0, 1, 0.93), (1, 2, 0.97), (3, 4, 0.95)], columns=["a", "b", "similarity"])
    labels, clusters = batch_clusters(frame, pairs)
    record = RunRecord.from_dict(
        {"run_id": "batch-fall0001", "model": FAST_MODEL, "threshold": 0.9, "timezone": "America/New_York"}
    )
    write_report(tmp_path / "report", pairs_table(frame, pairs, labels), clusters, record, frame=frame)

    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((tmp_path / "report" / "index.html").as_uri())
    listed = "[...document.querySelectorAll('#clusters li.cluster')].map(li => li.dataset.cluster)"
    assert page.evaluate(listed) == ["c-v", "c-p"]
    body = open_cluster(page, "c-v")
    assert page.eval_on_selector_all(f"{body} td.when", "tds => tds.map(td => td.textContent)") == [
        "2024-11-03 00:30",
        "2024-11-03 01:50 (UTC-04:00)",
        "2024-11-03 01:10 (UTC-05:00)",
    ]
    page.click("li[data-cluster='c-v'] tr[data-item] button.rv-pick >> nth=0")  # v ...
    page.click("li[data-cluster='c-v'] tr[data-item] button.rv-pick >> nth=1")  # ... and w
    page.locator("#rv-picked button.rv-level[data-v='0']").click()  # not related: the cluster splits
    drawn = page.evaluate("window.nlsimReport.data")
    assert errors == []
    page.close()

    split = pd.Series([None, "c-w", "c-w", "c-p", "c-p"], dtype=object)
    inside = pairs.iloc[1:]
    _, made = batch_clusters(frame, inside)
    want = page_data(pairs_table(frame, inside, split), made, record, frame)

    def spans(data: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
        ids = [it["id"] for it in data["items"]]
        return {
            c["cluster_id"]: (c["first_published"], c["last_published"], [ids[i] for i in c["member_ids"]])
            for c in data["clusters"]
        }

    assert spans(drawn) == spans(want)
    assert spans(drawn)["c-w"] == ("2024-11-03 01:50 (UTC-04:00)", "2024-11-03 01:10 (UTC-05:00)", ["w", "y"])


def linked_report(
    folder: Path,
    links: list[tuple[str, str, float]],
    apart: list[tuple[str, str, float]],
    decisions: list[list[Any]] | None = None,
) -> Path:
    """A batch report at threshold 0.9 of the items the pairs name (published in the order they are first
    named), its clusters made of ``links`` and ``apart`` the near misses (those at or above the threshold:
    links the rule, shared support at 0.4, left apart, which the page reads as links), with the editors'
    ``decisions`` (``[id_a, id_b, score]``) the report honoured."""
    ids = list(dict.fromkeys(i for a, b, _ in [*links, *apart] for i in (a, b)))
    day = pd.Timestamp("2024-08-01", tz="UTC")
    frame = pd.DataFrame(
        {"id": ids, "title": [f"Headline {i}" for i in ids], "source": "wire", "url": ""}
    ).assign(published_at=[day + pd.Timedelta(minutes=n) for n in range(len(ids))])

    def table(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
        return pd.DataFrame(
            [(ids.index(a), ids.index(b), s) for a, b, s in rows], columns=["a", "b", "similarity"]
        )

    pairs = table(links)
    labels, clusters = batch_clusters(frame, pairs)
    missed = near_miss_pairs(table(apart), labels, 10)
    cluster_of = {i: c for i, c in zip(frame["id"], labels, strict=True) if c is not None}
    near = near_miss_table(pairs_table(frame, missed, labels), cluster_of)
    rule = {"name": "support", "min_share": 0.4, "cut": "order"}
    editors = {"source": "pairs.tsv.verdicts.csv", "decisions": decisions} if decisions else None
    record = RunRecord.from_dict(
        {"run_id": "batch-linked0001", "model": FAST_MODEL, "threshold": 0.9, "story_rule": rule}
        | ({"editors": editors} if editors else {})
    )
    write_report(folder, pairs_table(frame, pairs, labels), clusters, record, frame=frame, near_misses=near)
    return folder / "index.html"


def test_a_split_whose_piece_links_to_a_cluster_listed_before_it_lists_that_cluster_once(
    chromium: Any, tmp_path: Path
) -> None:
    """c-x0 (three items) comes before c-z0 (two) in the report's clusters, and z1 links to x0 at the
    threshold and above, a link the rule left apart (too little support). "Not the same story" on z0/z1
    parts c-z0, and the preview runs the rule over what the link reaches, c-x0 too, which it leaves as it
    is: the list showed c-x0 twice."""
    links = [("x0", "x1", 0.95), ("x0", "x2", 0.95), ("x1", "x2", 0.95), ("z0", "z1", 0.93)]
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(linked_report(tmp_path / "report", links, [("z1", "x0", 0.91)]).as_uri())
    listed = "[...document.querySelectorAll('#clusters li.cluster')].map(li => li.dataset.cluster)"
    shown = "window.nlsimReport.data.clusters.map(c => [c.cluster_id, c.size])"
    assert page.evaluate(shown) == [["c-x0", 3], ["c-z0", 2]]
    body = open_cluster(page, "c-z0")
    page.locator(f"{body} tr.rv-row button.rv-level[data-v='0']").click()
    assert page.evaluate(shown) == [["c-x0", 3]]
    assert page.evaluate(listed) == ["c-x0"]
    assert errors == []
    page.close()


def test_a_join_with_a_split_inside_it_regroups_what_the_split_frees_as_the_run_does(
    chromium: Any, tmp_path: Path
) -> None:
    """c-x0 holds x0, x1 and x2; y links to x1 and x2 at the threshold and above, kept apart by an editor's
    "not the same story" with x0; z is a near miss of x0. An editor marks z and x0 the same story and x0
    and x1 not: the run's rule (:mod:`nlsim.clusters.rules`) then makes {x0, z} and {x1, x2, y}, y joining
    the piece the split freed of x0. The join's preview ran the rule over c-x0 and z only and left y out."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import Link, SharedSupport

    links = [("x0", "x1", 0.95), ("x0", "x2", 0.95), ("x1", "x2", 0.95)]
    apart = [("y", "x1", 0.93), ("y", "x2", 0.92), ("z", "x0", 0.85)]
    run = SharedSupport(min_share=0.4).clusters(
        [Link(*link) for link in links + apart[:2]],
        LinkConstraints.from_pairs(must=[("z", "x0")], cannot=[("y", "x0"), ("x0", "x1")]),
    )
    assert run == [["x0", "z"], ["x1", "x2", "y"]]
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(linked_report(tmp_path / "report", links, apart, [["y", "x0", 0.0]]).as_uri())
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")
    shown = "window.nlsimReport.data.clusters.map(c => [c.cluster_id, c.member_ids])"
    assert [(c, sorted(held[i] for i in m)) for c, m in page.evaluate(shown)] == [
        ("c-x0", ["x0", "x1", "x2"])
    ]
    open_cluster(page, "c-x0")
    mark = """([key, level]) => [...document.querySelectorAll('tr.rv-row')].find(r => r.dataset.key === key)
        .querySelector(`button.rv-level[data-v='${level}']`).click()"""
    page.evaluate(mark, ["x0\u001fz", "1"])  # the near miss: the same story
    page.evaluate(mark, ["x0\u001fx1", "0"])  # a link of c-x0: not the same story
    got = sorted((c, sorted(held[i] for i in m)) for c, m in page.evaluate(shown))
    assert got == [("c-x0", ["x0", "z"]), ("c-x1", ["x1", "x2", "y"])]
    assert errors == []
    page.close()


def test_a_join_that_parts_a_cluster_regroups_what_it_frees_as_the_run_does(
    chromium: Any, tmp_path: Path
) -> None:
    """c-c0 holds c0 and c1; y links to c1 at the threshold and above, kept apart by an editor's "not the
    same story" with c0; a0 is a near miss of c0. An editor marks a0 and c0 the same story and a0 and c1
    not: no mark falls inside c-c0, yet the join parts it, and the run's rule makes {a0, c0} and {c1, y}.
    The join's preview ran the rule over c-c0 and a0 only and left c1 alone."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import Link, SharedSupport

    links, apart = [("c0", "c1", 0.95)], [("y", "c1", 0.93), ("a0", "c0", 0.85)]
    run = SharedSupport(min_share=0.4).clusters(
        [Link(*link) for link in links + apart[:1]],
        LinkConstraints.from_pairs(must=[("a0", "c0")], cannot=[("y", "c0"), ("a0", "c1")]),
    )
    assert run == [["a0", "c0"], ["c1", "y"]]
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(linked_report(tmp_path / "report", links, apart, [["y", "c0", 0.0]]).as_uri())
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")
    shown = "window.nlsimReport.data.clusters.map(c => [c.cluster_id, c.member_ids])"
    assert [(c, sorted(held[i] for i in m)) for c, m in page.evaluate(shown)] == [("c-c0", ["c0", "c1"])]
    page.evaluate(
        """() => localStorage.setItem('nlsim-review:batch-linked0001', JSON.stringify({version: 1, marks: {
        'a0\\u001fc0': {a: 'a0', b: 'c0', v: 1, src: 'near', score: 0.85, notes: '', exported: false,
                        at: '2024-08-02T00:00:00.000Z', overrule: false},
        'a0\\u001fc1': {a: 'a0', b: 'c1', v: 0, src: 'picked', score: null, notes: '', exported: false,
                        at: '2024-08-02T00:01:00.000Z', overrule: false}}}))"""
    )
    page.reload()
    got = sorted((c, sorted(held[i] for i in m)) for c, m in page.evaluate(shown))
    assert got == [("c-c0", ["a0", "c0"]), ("c-c1", ["c1", "y"])]
    assert errors == []
    page.close()


def test_two_joins_the_links_left_apart_reach_across_are_previewed_as_one(
    chromium: Any, tmp_path: Path
) -> None:
    """c-x0 (x0, x1) and c-z0 (z0, z1): z1 links to x0 and x1 at the threshold and above, kept apart by the
    editors' verdicts (z0 and z1 the same story, z0 and x0 not). An editor joins a to x0 and b to z0, and
    says z0 and z1 are not the same story after all: the run's rule then takes z1 to x0's story. The page
    previewed each join apart, the links between them left out, and left z1 alone."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import Link, SharedSupport

    links = [("x0", "x1", 0.95), ("z0", "z1", 0.95)]
    apart = [("z1", "x0", 0.93), ("z1", "x1", 0.92), ("a", "x0", 0.85), ("b", "z0", 0.85)]
    run = SharedSupport(min_share=0.4).clusters(
        [Link(*link) for link in links + apart[:2]],
        LinkConstraints.from_pairs(must=[("a", "x0"), ("b", "z0")], cannot=[("z0", "x0"), ("z0", "z1")]),
    )
    assert run == [["a", "x0", "x1", "z1"], ["b", "z0"]]
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    decisions = [["z0", "x0", 0.0], ["z0", "z1", 1.0]]
    page.goto(linked_report(tmp_path / "report", links, apart, decisions).as_uri())
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")
    shown = "window.nlsimReport.data.clusters.map(c => [c.cluster_id, c.member_ids])"
    before = sorted((c, sorted(held[i] for i in m)) for c, m in page.evaluate(shown))
    assert before == [("c-x0", ["x0", "x1"]), ("c-z0", ["z0", "z1"])]
    marks = {
        f"{a}\u001f{b}": {
            "a": a,
            "b": b,
            "v": v,
            "src": "picked",
            "score": None,
            "notes": "",
            "exported": False,
        }
        | {"at": f"2024-08-02T00:0{n}:00.000Z", "overrule": False}
        for n, (a, b, v) in enumerate([("a", "x0", 1), ("b", "z0", 1), ("z0", "z1", 0)])
    }
    page.evaluate(
        "m => localStorage.setItem('nlsim-review:batch-linked0001', JSON.stringify({version: 1, marks: m}))",
        marks,
    )
    page.reload()
    got = sorted((c, sorted(held[i] for i in m)) for c, m in page.evaluate(shown))
    assert got == [("c-x0", ["a", "x0", "x1", "z1"]), ("c-z0", ["b", "z0"])]
    assert errors == []
    page.close()


def test_a_split_preview_settles_exact_ties_by_arrival_as_the_run_does(chromium: Any, tmp_path: Path) -> None:
    """m links to a and to c with one score (an item linked to two parts of one text, each scored by the
    text's one vector, ties so). "Not the same story" on a/c parts the cluster, and the run settles the
    tie by arrival (``order=``, as a daily run met the items): c came first, so m stays with c. The page's
    rule settled it by id, keeping m with a, so its preview showed other clusters than the next report."""
    links = [("c", "m", 0.95), ("a", "m", 0.95)]  # published in the order named: c, m, a
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(linked_report(tmp_path / "report", links, []).as_uri())
    held = page.evaluate("window.nlsimReport.data.items.map(it => it.id)")
    shown = "window.nlsimReport.data.clusters.map(c => [c.cluster_id, c.member_ids])"
    assert [(c, sorted(held[i] for i in m)) for c, m in page.evaluate(shown)] == [("c-c", ["a", "c", "m"])]
    open_cluster(page, "c-c")
    for item in ("a", "c"):
        page.click(f"li[data-cluster='c-c'] tr[data-item='{held.index(item)}'] button.rv-pick")
    page.locator("#rv-picked button.rv-level[data-v='0']").click()
    previewed = [sorted(held[i] for i in m) for _, m in page.evaluate(shown)]
    assert previewed == [["c", "m"]], previewed
    assert errors == []
    page.close()
