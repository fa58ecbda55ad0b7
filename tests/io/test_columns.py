"""The report's column tables: one declaration drives the Parquet files, the spreadsheets, the page and
the daily state."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nlsim.io import columns
from nlsim.io.columns import Column


def _page_data(page: str) -> dict:
    found = re.search(r"<script id='nlsim-data' type='application/json'>(.*?)</script>", page, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


def test_the_report_schemas_are_the_declared_tables() -> None:
    from nlsim.clusters.table import CLUSTERS_SCHEMA
    from nlsim.report.files import MEMBERS_SCHEMA, PAIRS_SCHEMA
    from nlsim.report.near_misses import NEAR_MISSES_SCHEMA

    assert PAIRS_SCHEMA == columns.table("pairs").schema
    assert CLUSTERS_SCHEMA == columns.table("clusters").schema
    assert MEMBERS_SCHEMA == columns.table("members").schema
    assert NEAR_MISSES_SCHEMA == columns.table("near_misses").schema
    sides = [c.name for c in columns.sides()]
    assert sides == [f"{f}_{s}" for f in ("title", "source", "url", "published_at") for s in "ab"]
    assert columns.table("pairs").names[-len(sides) :] == sides
    assert columns.table("near_misses").names[-len(sides) :] == sides


def test_a_column_declares_a_known_format() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        Column("x", pa.string(), "run", "x", "currency")


def test_a_clusters_column_declares_a_reduction_its_source_has() -> None:
    with pytest.raises(ValueError, match="unknown reduce"):
        Column("x", pa.string(), "item.title", "x", reduce="longest")
    with pytest.raises(ValueError, match="a score reduces by"):
        Column("x", pa.float32(), "score", "x", "number", reduce="distinct")
    with pytest.raises(ValueError, match="only an item"):
        Column("x", pa.string(), "run", "x", reduce="min")


def test_spreadsheet_cells_follow_each_columns_format() -> None:
    spec = columns.table("clusters")
    frame = pd.DataFrame(
        {
            "cluster_id": ["c-1"],
            "member_ids": [["a", "b"]],
            "first_published": pd.to_datetime(["2024-01-02 03:04:05"], utc=True),
            "max_similarity": [0.5],
        }
    )
    cells = columns.sheet_frame(frame, spec)
    assert list(cells.columns) == spec.names  # every column, in order; the missing ones empty
    row = cells.iloc[0]
    assert row["member_ids"] == "a, b" and row["first_published"] == "2024-01-02T03:04:05+00:00"
    assert row["max_similarity"] == 0.5 and row["last_published"] == "" and row["absorbed"] == ""


def test_page_rows_are_objects_of_the_columns() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a"],
            "title": ["T"],
            "url": ["javascript:alert(1)"],
            "published_at": pd.to_datetime(["2024-01-02 03:04:05"], utc=True),
        }
    )
    rows = columns.page_rows(frame, [columns.ITEMS.column("id"), *columns.shown()])
    assert rows == [{"id": "a", "title": "T", "url": None, "published_at": "2024-01-02 03:04"}]


@pytest.mark.slow
def test_a_column_added_to_the_items_table_alone_reaches_every_file_and_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One declaration, nothing else: a corpus field read, kept in the daily state, shown of each item in
    the pairs (Parquet, CSV, XLSX, the state's copy of the report), the members, the near misses and the
    page."""
    from openpyxl import load_workbook

    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.state import open_state
    from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus

    lang = Column("lang", pa.string(), "corpus.lang", "language", shown=True)
    monkeypatch.setitem(columns.TABLES, "items", columns.ITEMS.adding(lang))

    corpus = story_corpus()
    corpus["lang"] = ["lang-" + i for i in corpus["id"]]
    days = split_days(corpus, tmp_path / "in", ["2005-03-02"])
    enc, state, out = HashEncoder(), tmp_path / "state", tmp_path / "out"
    for day in days:
        cfg = DedupConfig.of(
            corpus=day, out=out, model="hash", convert="none", threshold=0.7, cache=False, progress=False
        )
        run_daily(cfg, state, retention_days=None, encoder=enc)
    report = out / "latest"

    pairs = pq.read_table(report / "pairs.parquet")
    assert pairs.schema.field("lang_a").type == pa.string() and len(pairs) > 0
    got = pairs.to_pandas()
    assert (got["lang_a"] == "lang-" + got["id_a"]).all() and (got["lang_b"] == "lang-" + got["id_b"]).all()
    assert "lang_a" in pq.read_schema(report / "near_misses.parquet").names

    with (report / "pairs.csv").open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["lang_a"] == "lang-" + r["id_a"] for r in rows)
    with (report / "members.csv").open(encoding="utf-8-sig", newline="") as f:
        members = list(csv.DictReader(f))
    assert members and all(r["lang"] == "lang-" + r["item_id"] for r in members)

    book = load_workbook(report / "report.xlsx", read_only=True)
    for sheet, column in (("pairs", "lang_a"), ("members", "lang")):
        header = next(book[sheet].iter_rows(max_row=1, values_only=True))
        assert column in header, sheet

    data = _page_data((report / "index.html").read_text(encoding="utf-8"))
    assert data["items"] and all(it["lang"] == "lang-" + it["id"] for it in data["items"])
    spec = {c["name"]: c for c in data["columns"]["items"]}  # the declaration travels with the data
    assert spec["lang"] == {"name": "lang", "label": "language", "format": "text", "shown": True,
                            "source": "corpus.lang"}  # fmt: skip

    kept = open_state(state)
    assert kept.items["lang"].tolist() == ["lang-" + i for i in kept.items["id"]]
    stored = pd.read_parquet(kept.report_dir() / "pairs.parquet")
    assert (stored["lang_a"] == "lang-" + stored["id_a"]).all()


@pytest.mark.slow
def test_an_item_column_and_a_cluster_column_declared_once_reach_files_state_artifacts_and_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two declarations and nothing else: an items column read from the corpus, and a clusters column made
    from it (the distinct values of the members); found in the Parquet files, the CSV and XLSX files, the
    daily state, the flow's artifacts (summary.md and the clusters table) and on the page a browser
    draws (the members' table, the cluster's line)."""
    from openpyxl import load_workbook

    from flows import dedup as dedup_flow
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.state import open_state
    from tests.browser import Browser, require_browser
    from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus

    require_browser()
    lang = Column("lang", pa.string(), "corpus.lang", "language", shown=True)
    langs = Column(
        "langs", pa.list_(pa.string()), "item.lang", "languages", "list", shown=True, summary=True,
        reduce="distinct",
    )  # fmt: skip
    monkeypatch.setitem(columns.TABLES, "items", columns.ITEMS.adding(lang))
    monkeypatch.setitem(columns.TABLES, "clusters", columns.CLUSTERS.adding(langs))

    corpus = story_corpus()
    corpus["lang"] = ["lang-" + i for i in corpus["id"]]
    days = split_days(corpus, tmp_path / "in", ["2005-03-02"])
    enc, state, out = HashEncoder(), tmp_path / "state", tmp_path / "out"
    for day in days:
        cfg = DedupConfig.of(
            corpus=day, out=out, model="hash", convert="none", threshold=0.7, cache=False, progress=False
        )
        result = run_daily(cfg, state, retention_days=None, encoder=enc)
    report = out / "latest"

    def want(members: Any) -> list[str]:  # the cluster column: its members' languages, distinct, sorted
        return sorted("lang-" + m for m in members)

    # Parquet: the pairs (each side), the clusters, the window's clusters
    pairs = pd.read_parquet(report / "pairs.parquet")
    assert len(pairs) and (pairs["lang_a"] == "lang-" + pairs["id_a"]).all()
    for name in ("clusters.parquet", "window/clusters.parquet"):
        clusters = pq.read_table(report / name)
        assert clusters.schema.field("langs").type == pa.list_(pa.string()), name
        got = clusters.to_pandas()
        assert len(got) and [list(v) for v in got["langs"]] == [want(m) for m in got["member_ids"]], name
    # CSV: the pairs, the members
    with (report / "pairs.csv").open(encoding="utf-8-sig", newline="") as f:
        assert all(r["lang_b"] == "lang-" + r["id_b"] for r in csv.DictReader(f))
    with (report / "members.csv").open(encoding="utf-8-sig", newline="") as f:
        assert all(r["lang"] == "lang-" + r["item_id"] for r in csv.DictReader(f))
    # XLSX: the clusters sheet lists the new column's values as text
    sheet = list(load_workbook(report / "report.xlsx", read_only=True)["clusters"].values)
    header, rows = list(sheet[0]), [dict(zip(sheet[0], r, strict=True)) for r in sheet[1:]]
    assert "langs" in header and rows
    assert all(r["langs"] == ", ".join(want(r["member_ids"].split(", "))) for r in rows)
    # the state: the items and the report's tables it keeps
    kept = open_state(state)
    assert kept.items["lang"].tolist() == ["lang-" + i for i in kept.items["id"]]
    stored = pd.read_parquet(kept.report_dir() / "clusters.parquet")
    assert [list(v) for v in stored["langs"]] == [want(m) for m in stored["member_ids"]]
    # the flow's artifacts: the run's Markdown summary and the clusters table
    published: dict[str, Any] = {}
    monkeypatch.setattr(dedup_flow, "create_markdown_artifact", lambda md, **kw: published.update(md=md))
    monkeypatch.setattr(dedup_flow, "create_table_artifact", lambda rows, **kw: published.update(rows=rows))
    dedup_flow.publish_artifacts(result)
    first = result.clusters.iloc[0]
    assert published["rows"][0]["languages"] == ", ".join(want(first["member_ids"]))
    heads = [line for line in published["md"].splitlines() if line.startswith("| cluster | topic | status |")]
    assert heads and heads[0].endswith("| languages |"), heads
    assert (report / "summary.md").read_text(encoding="utf-8").count(", ".join(want(first["member_ids"])))

    # the page a browser draws: the item column in the members' table, the cluster column on its line
    with Browser() as browser:
        browser.open((report / "index.html").as_uri())
        cluster = str(first["cluster_id"])
        line = browser.evaluate(
            f"document.querySelector(\"li[data-cluster='{cluster}'] summary .sub\").textContent"
        )
        assert "languages " + ", ".join(want(first["member_ids"])) in line, line
        browser.evaluate(f"document.querySelector(\"li[data-cluster='{cluster}'] details\").open = true")
        head = browser.evaluate(
            f"[...document.querySelectorAll(\"li[data-cluster='{cluster}'] .cbody table\")[0]"
            ".querySelectorAll('th')].map(th => th.textContent)"
        )
        assert "language" in head, head
        cells = browser.evaluate(
            f"[...document.querySelectorAll(\"li[data-cluster='{cluster}'] .cbody tr[data-item]\")]"
            ".map(tr => [...tr.cells].map(td => td.textContent))"
        )
        column = head.index("language")
        assert [row[column] for row in cells] == ["lang-" + m for m in first["member_ids"]], cells


def test_only_a_source_of_item_and_a_dot_reduces() -> None:
    """``items.title`` (the table's name for its column) or ``itemtitle`` is no ``item.<column>`` source."""
    for source in ("items.title", "itemtitle"):
        with pytest.raises(ValueError, match="only an item"):
            Column("x", pa.string(), source, "x", reduce="min")


def test_an_empty_table_holds_each_column_in_its_declared_dtype() -> None:
    """Scores stay float32 as the search writes them, counts int64, times UTC, flags bool."""
    pairs, clusters, members = (columns.table(n).empty() for n in ("pairs", "clusters", "members"))
    assert pairs["similarity"].dtype == "float32" and clusters["mean_similarity"].dtype == "float32"
    assert (
        clusters["size"].dtype == "int64" and str(clusters["first_published"].dtype) == "datetime64[ns, UTC]"
    )
    assert members["added"].dtype == "bool" and pairs["title_a"].dtype == object
    assert Column("x", pa.float64(), "score", "x", "number").dtype == "float64"
    assert Column("x", pa.int32(), "cluster", "x", "integer").dtype == "int64"


def test_a_link_is_an_absolute_http_url_of_a_host_in_any_case_up_to_4096_characters() -> None:
    longest = "https://example.com/" + "a" * (4096 - len("https://example.com/"))
    assert columns.safe_url(longest) == longest and columns.safe_url(longest + "a") is None
    assert columns.safe_url("HTTPS://Example.com/A") == "HTTPS://Example.com/A"
    for hostless in ("https:///a", "http:example.com", "https:"):
        assert columns.safe_url(hostless) is None, hostless


def test_a_list_that_fills_a_spreadsheet_cell_exactly_is_kept_whole_and_one_cut_keeps_what_fits() -> None:
    limit = columns.SHEET_CELL_CHARACTERS
    whole = ["x" * (limit - 3), "y"]  # 32764 + ", " + 1: the cell's 32767 characters
    assert columns.sheet_list_values(whole) == whole and columns._sheet_list(whole) == ", ".join(whole)
    room = limit - columns.cell_length(", … (3 in all)")
    first, second = "x" * 100, "y" * (room - 100 - 2)  # the two and the ", " between them fill the room
    assert columns.sheet_list_values([first, second, "z" * 100]) == [first, second]
    assert columns.cell_length("\uffff") == 1 and columns.cell_length("\U00010000") == 2


def test_a_list_value_that_begins_as_a_cut_cell_ends_is_in_quotes() -> None:
    """``…`` ends a list cut short (``a, … (3000 in all)``): a value beginning with it is quoted."""
    assert columns.sheet_list_value("… and more") == '"… and more"'
    assert columns.sheet_list_value("more …") == "more …"


def test_the_page_shows_a_time_without_a_zone_as_utc_and_a_repeated_half_hour_with_its_offset() -> None:
    from zoneinfo import ZoneInfo

    assert columns.page_time("2024-08-01 20:30", ZoneInfo("Asia/Taipei")) == "2024-08-02 04:30"
    howe = ZoneInfo("Australia/Lord_Howe")  # its clocks go back half an hour, 02:00 to 01:30
    assert columns.page_time("2024-04-06T14:45Z", howe) == "2024-04-07 01:45 (UTC+11:00)"
    assert columns.page_time("2024-04-06T15:15Z", howe) == "2024-04-07 01:45 (UTC+10:30)"


def test_a_short_table_cuts_a_text_past_120_characters_and_a_list_past_10_items() -> None:
    spec = columns.table("clusters")
    frame = pd.DataFrame(
        {
            "cluster_id": ["c-1", "c-2"],
            "representative_title": ["x" * 120, "y" * 121],
            "added_ids": [[f"n{i}" for i in range(10)], [f"n{i}" for i in range(11)]],
        }
    )
    kept, cut = columns.summary_rows(frame, spec)
    assert kept["representative"] == "x" * 120 and kept["added"] == ", ".join(f"n{i}" for i in range(10))
    assert cut["representative"] == "y" * 119 + "…" and cut["added"].endswith("n9, … (11 in all)")


def test_a_missing_time_in_a_list_or_number_cell_is_none_on_the_page() -> None:
    assert columns.page_list(pd.NaT) == [] and columns.page_list(None) == []
    size = columns.table("clusters").column("size")
    assert columns.page_value(size, pd.NaT) is None and columns.page_value(size, 3) == 3


def test_a_frame_conforms_to_its_table_with_times_in_utc_and_missing_cells_empty() -> None:
    """Times of several offsets are one UTC column; a missing text is null (never the text ``None``), a
    missing list an empty one."""
    frame = pd.DataFrame(
        {
            "cluster_id": ["c-1", None],
            "member_ids": [["a"], None],
            "first_published": ["2024-05-01T08:00+08:00", "2024-05-01T08:00Z"],
        }
    )
    got = columns.conform(frame, columns.table("clusters")).to_pydict()
    assert [pd.Timestamp(t) for t in got["first_published"]] == [
        pd.Timestamp("2024-05-01T00:00Z"),
        pd.Timestamp("2024-05-01T08:00Z"),
    ]
    assert got["cluster_id"] == ["c-1", None] and got["member_ids"] == [["a"], []]


def test_the_pages_column_spec_names_a_reduction_only_where_there_is_one_and_scores_round_to_4() -> None:
    spec = {c["name"]: c for c in columns.page_spec(columns.table("clusters"))}
    assert "reduce" not in spec["cluster_id"] and spec["first_published"]["reduce"] == "min"
    assert columns.page_number(0.123456) == 0.1235 and columns.page_number(0.123456, 6) == 0.123456
