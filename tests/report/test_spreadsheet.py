"""The spreadsheet files (``report.xlsx``, ``pairs.csv``, ``members.csv``) hold user text safely.

Through the command line (``python -m nlsim dedup``): a control character XML 1.0 forbids in a title (a
vertical tab from Word's manual line break, a bell, an escape) no longer makes ``report.xlsx`` fail, in a
batch run or a daily one; text a spreadsheet would read as a formula (``=HYPERLINK(...)``, a DDE
``=cmd|...``, ``+``, ``-``, ``@``) is stored as text in ``report.xlsx`` and starts with an apostrophe in
the CSV files (OWASP's CSV-injection rule); the page names the items whose spreadsheet text was changed.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from openpyxl import load_workbook

from nlsim.report.spreadsheet import FORMULA_START, csv_text, xlsx_text
from tests.command import nlsim

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
RUN = ["--model", FAST_MODEL, "--convert", "none", "--threshold", "0.9", "--no-cache", "--no-progress"]
CONTROL = {
    "v1": ("Floods hit\x0bthe north of the country", "AP"),
    "v2": ("Floods hit\x0bthe north of the country", "AFP"),
    "b1": ("Bell\x07rings over the harbour at dawn", "AP"),
    "b2": ("Bell\x07rings over the harbour at dawn", "BBC"),
    "e1": ("Escape\x1b[31m codes in a red headline", "AP"),
    "e2": ("Escape\x1b[31m codes in a red headline", "Reuters"),
    "p1": ("Plain headline about the budget vote", "AP"),
}
FORMULAS = {
    "f1": ('=HYPERLINK("http://evil.example/","click for the story")', "AP"),
    "f2": ('=HYPERLINK("http://evil.example/","click for the story")', "=1+1"),
    "d1": ("=cmd|' /C calc'!A0", "AP"),
    "d2": ("=cmd|' /C calc'!A0", "@source"),
    "m1": ("-5% on the stock market today", "+wire"),
    "m2": ("-5% on the stock market today", "AP"),
    "a1": ("@newsroom says the vote is delayed", "AP"),
    "a2": ("@newsroom says the vote is delayed", "AFP"),
}


def corpus(folder: Path, items: dict[str, tuple[str, str]], name: str = "news.parquet") -> Path:
    path = folder / name
    frame = pd.DataFrame(
        {"id": list(items), "title": [t for t, _ in items.values()], "source": [s for _, s in items.values()]}
    )
    frame.to_parquet(path, index=False)
    return path


def sheets(path: Path) -> dict[str, list[list[object]]]:
    book = load_workbook(path)
    return {ws.title: [[c.value for c in row] for row in ws.iter_rows()] for ws in book.worksheets}


def _three_item_report(folder: Path, frame: pd.DataFrame) -> Path:
    """The report files, in ``folder``, of a three-item ``frame`` whose first item pairs with both others."""
    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table, write_files
    from nlsim.report.record import RunRecord

    found = pd.DataFrame({"a": [0, 0], "b": [1, 2], "similarity": [0.97, 0.96]})
    labels, clusters = batch_clusters(frame, found)
    folder.mkdir()
    write_files(folder, pairs_table(frame, found, labels), clusters, RunRecord(model="m"), frame)
    return folder


def test_cell_text_rules() -> None:
    assert xlsx_text("a\x0bb\x0cc\x07d\x1be\x00f") == "a b cdef"
    kept = "tab\tnewline\ncarriage\r, Han 颱風, emoji 🌊"
    assert xlsx_text(kept) == kept
    assert xlsx_text("odd \ufffe\uffff\ud800 end") == "odd  end"
    for start in FORMULA_START:
        assert csv_text(start + "x") == "'" + start + "x"
    assert csv_text("plain") == "plain" and csv_text("") == "" and csv_text("a=b") == "a=b"


@pytest.mark.slow
def test_control_characters_in_titles_do_not_break_the_spreadsheet(tmp_path: Path) -> None:
    corpus(tmp_path, CONTROL)
    proc = nlsim("dedup", "--corpus", "news.parquet", "--out", "rep", *RUN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    book = sheets(tmp_path / "rep" / "report.xlsx")
    head = book["members"][0]
    item, title = head.index("item_id"), head.index("title")
    members = {row[item]: row[title] for row in book["members"][1:]}
    assert members["v1"] == "Floods hit the north of the country"  # Word's line break: a space
    assert members["b1"] == "Bellrings over the harbour at dawn"
    assert members["e1"] == "Escape codes in a red headline"  # a terminal's colour code: removed whole
    # the Parquet files keep the original text
    pairs = pd.read_parquet(tmp_path / "rep" / "pairs.parquet")
    assert set(pairs["title_a"]) == {CONTROL[i][0] for i in ("v1", "b1", "e1")}
    # the page tells the editor which titles were changed in the spreadsheet
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    notice = re.search(r"<div class='notice[^']*' id='spreadsheet-text'>(.*?)</div>", page, re.S)
    assert notice is not None
    for item in ("v1", "v2", "b1", "b2", "e1", "e2"):
        assert f"<bdi>{item}</bdi>" in notice.group(1)
    assert "p1" not in notice.group(1) and "report.xlsx" in notice.group(1)


def test_a_title_longer_than_a_cell_holds_is_cut_in_the_spreadsheet_and_named_on_the_page() -> None:
    from nlsim.report.prose import spreadsheet_notice
    from nlsim.report.spreadsheet import XLSX_CELL_CHARACTERS, TextChange, text_changes

    long = "Dollar gains on Greenspan speech " + "x" * 40_000
    frame = pd.DataFrame({"id": ["a", "b"], "title": ["Dollar gains", long]})
    assert len(xlsx_text(long)) == XLSX_CELL_CHARACTERS == 32_767
    assert text_changes(frame) == [TextChange("b", "title", "cut")]
    assert "1 item(s) are longer than a spreadsheet cell holds (32,767 characters)" in spreadsheet_notice(
        text_changes(frame)
    )


def test_a_title_longer_than_a_cell_holds_is_named_for_the_csv_files_a_spreadsheet_cuts_it_in(
    tmp_path: Path,
) -> None:
    """A title over 32,767 characters is whole in pairs.csv and members.csv, and a spreadsheet cuts it when
    it opens them, as it is cut in report.xlsx; the page and run.json named report.xlsx alone. They name
    every file now, and say which holds it cut and which whole."""
    import csv
    import json

    from nlsim.report.spreadsheet import XLSX_CELL_CHARACTERS

    long = "Dollar gains on Greenspan speech " + "x" * 40_000
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "title": [long, long, "-" + "y" * (XLSX_CELL_CHARACTERS - 1)],  # the apostrophe makes it too long
            "source": ["AP", "AFP", "AP"],
            "published_at": pd.to_datetime(["2024-08-01T08:00Z", "2024-08-01T09:00Z", None], utc=True),
        }
    )
    folder = _three_item_report(tmp_path / "r", frame)

    with (folder / "members.csv").open(encoding="utf-8-sig", newline="") as f:
        titles = {r["item_id"]: r["title"] for r in csv.DictReader(f)}
    assert titles["a"] == long and len(titles["c"]) == XLSX_CELL_CHARACTERS + 1  # whole: Excel cuts them

    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    cut = {(c["item_id"], tuple(c["files"])) for c in record["spreadsheet_changes"] if c["change"] == "cut"}
    assert cut == {
        ("a", ("pairs.csv", "members.csv", "report.xlsx")),
        ("b", ("pairs.csv", "members.csv", "report.xlsx")),
        ("c", ("pairs.csv", "members.csv")),
    }
    page = (folder / "index.html").read_text(encoding="utf-8")
    notice = re.search(r"<div class='notice[^']*' id='spreadsheet-text'>(.*?)</div>", page, re.S)
    assert notice is not None
    text = notice.group(1)
    # the notice's heading covers what the files hold and what a spreadsheet does opening them
    assert text.startswith("<strong>How the spreadsheet files hold some text.</strong>")
    assert (
        "3 item(s) are longer than a spreadsheet cell holds (32,767 characters), so they are cut in "
        "<code>pairs.csv</code>, <code>members.csv</code> and <code>report.xlsx</code>: <bdi>a</bdi> "
        "(title), <bdi>b</bdi> (title); in <code>pairs.csv</code> and <code>members.csv</code>: <bdi>c</bdi> "
        "(title) (<code>report.xlsx</code> holds them cut; the CSV files hold them whole, and a spreadsheet "
        "cuts them when it opens the file)."
    ) in text


def test_a_cell_limit_counts_as_a_spreadsheet_does_an_emoji_is_two_characters() -> None:
    """A spreadsheet's 32,767 characters are UTF-16 code units: an emoji (outside the Basic Multilingual
    Plane) is two of them, so 20,000 emoji are 40,000 and must be cut, never one half of a pair kept."""
    from nlsim.report.spreadsheet import XLSX_CELL_CHARACTERS, TextChange, text_changes

    waves = "Floods " + "\U0001f30a" * 20_000
    frame = pd.DataFrame({"id": ["a", "b"], "title": ["\U0001f30a" * 100, waves]})
    cut = xlsx_text(waves)
    assert len(cut.encode("utf-16-le")) // 2 <= XLSX_CELL_CHARACTERS
    assert len(cut.encode("utf-16-le")) // 2 >= XLSX_CELL_CHARACTERS - 1  # cut at the limit, not before it
    assert waves.startswith(cut) and cut.encode("utf-16-le").decode("utf-16-le") == cut  # whole characters
    assert text_changes(frame) == [TextChange("b", "title", "cut")]
    assert xlsx_text("\U0001f30a" * 100) == "\U0001f30a" * 100


def test_a_title_cut_to_a_cell_keeps_each_character_a_reader_sees_whole() -> None:
    """A title cut to a cell's 32,767 characters was cut between code points: an accented letter lost its
    accent (``é`` as ``e``), an emoji its skin tone or the rest of its joined sequence (👩🏽 of 👩🏽‍💻, a
    trailing U+200D), a flag its second half (🇹 of 🇹🇼). The cut falls before such a character now."""
    from nlsim.report.spreadsheet import XLSX_CELL_CHARACTERS, cell_length

    coder = "\U0001f469\U0001f3fd\u200d\U0001f4bb"  # one character to a reader: 👩🏽‍💻
    flags = ["\U0001f1f9\U0001f1fc", "\U0001f1ef\U0001f1f5"]  # 🇹🇼 🇯🇵
    rainbow = "\U0001f3f3\ufe0f\u200d\U0001f308"
    accented = "e\u0301\u0301"
    for seen in ([coder], flags, [rainbow], [accented]):
        tail = "".join(seen)
        whole = ["".join(seen[:k]) for k in range(len(seen) + 1)]  # the cuts a reader can see
        for n in range(XLSX_CELL_CHARACTERS - cell_length(tail), XLSX_CELL_CHARACTERS + 1):
            cut = xlsx_text("x" * n + tail + " more")
            assert cell_length(cut) <= XLSX_CELL_CHARACTERS
            assert cut[:n] == "x" * min(n, XLSX_CELL_CHARACTERS) and cut[n:] in whole, (n, cut[n:])
    assert xlsx_text("x" * 32_700 + "\u0301" * 100)[-1] == "\u0301"  # a letter of 100 marks: cut among them


@pytest.mark.slow
def test_a_list_longer_than_a_cell_holds_ends_on_a_whole_id_and_says_how_many(tmp_path: Path) -> None:
    """A story (or topic) of 3,000 items: its ``member_ids`` cell in report.xlsx cannot hold every id; it
    ends on a whole id and says how many there are, never an id cut in two with nothing to say so; the count
    holds no comma, so the cell splits at its commas into the ids and the count."""
    import csv

    import numpy as np

    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table, write_report
    from nlsim.report.record import RunRecord
    from nlsim.report.spreadsheet import XLSX_CELL_CHARACTERS

    n = 3_000
    ids = [f"item-{i:06d}" for i in range(n)]
    frame = pd.DataFrame(
        {
            "id": ids,
            "title": ["Floods"] * n,
            "source": ["AP"] * n,
            "published_at": pd.to_datetime([None] * n, utc=True),
        }
    )
    pairs = pd.DataFrame(
        {"a": np.zeros(n - 1, int), "b": np.arange(1, n), "similarity": np.full(n - 1, 0.95)}
    )
    labels, clusters = batch_clusters(frame, pairs)
    write_report(
        tmp_path / "r", pairs_table(frame, pairs, labels), clusters, RunRecord(model="m"), frame=frame
    )
    book = sheets(tmp_path / "r" / "report.xlsx")
    head, row = book["clusters"][0], book["clusters"][1]
    cell = str(row[head.index("member_ids")])
    assert len(cell) <= XLSX_CELL_CHARACTERS
    assert cell.endswith(", … (3000 in all)"), cell[-40:]
    *listed, count = next(csv.reader([cell], skipinitialspace=True))  # as the csv module splits it
    assert count == "… (3000 in all)"  # one value: "(3,000 in all)" split in two, "… (3" and "000 in all)"
    assert listed == ids[: len(listed)] and len(listed) > 2_000  # whole ids, as many as the cell holds
    assert len(book["members"]) == n + 1  # every member in its own row
    small = book["clusters"][1][head.index("sources")]
    assert small == "AP"  # a list that fits is as it was


def test_a_list_cell_tells_a_value_holding_a_comma_from_two_values(tmp_path: Path) -> None:
    """report.xlsx joined a list cell's values with ", ": a story whose sources were ``Reuters, London``
    and ``AP`` read as three sources, and an id ``a, b`` as two ids. A value that holds a comma (or a quote,
    a line break, white space at an end, nothing) is now in double quotes, as a CSV file writes it, so the
    cell splits back into its values as Python's csv module splits it;
    a plain list reads as it did."""
    import csv

    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table, write_files
    from nlsim.report.record import RunRecord

    items = {
        "a, b": ("Floods hit the north", "Reuters, London"),
        "n2": ("Floods hit the north", "AP"),
        'n"3': ("Floods hit the north", 'The "Times"'),
        "n4": ("Floods hit the north", "  "),
        "p1": ("Budget vote delayed", "AP"),
        "p2": ("Budget vote delayed", "AFP"),
    }
    frame = pd.DataFrame(
        {
            "id": list(items),
            "title": [t for t, _ in items.values()],
            "source": [s for _, s in items.values()],
            "published_at": pd.to_datetime([f"2024-08-01T0{n}:00Z" for n in range(len(items))], utc=True),
        }
    )
    found = pd.DataFrame({"a": [0, 0, 0, 4], "b": [1, 2, 3, 5], "similarity": [0.97] * 4})
    labels, clusters = batch_clusters(frame, found)
    folder = tmp_path / "r"
    folder.mkdir()
    write_files(folder, pairs_table(frame, found, labels), clusters, RunRecord(model="m"), frame)

    book = sheets(folder / "report.xlsx")
    head = book["clusters"][0]
    rows = [dict(zip(head, row, strict=True)) for row in book["clusters"][1:]]

    def values(cell: object) -> list[str]:
        return next(csv.reader([str(cell)], skipinitialspace=True))

    by_size = {len(values(r["member_ids"])): r for r in rows}
    assert values(by_size[4]["member_ids"]) == ["a, b", "n2", 'n"3', "n4"]
    assert values(by_size[4]["sources"]) == sorted(["Reuters, London", "AP", 'The "Times"', "  "])
    assert by_size[4]["sources"] == '"  ", AP, "Reuters, London", "The ""Times"""'
    assert by_size[2]["member_ids"] == "p1, p2" and by_size[2]["sources"] == "AFP, AP"  # as it was


def test_a_list_value_of_which_nothing_shows_is_in_quotes() -> None:
    """A story's sources ``AP`` and a zero-width space (a source cell a CMS left so) read ``AP, `` in
    report.xlsx: a list ending in a comma, its last value unseen. Such a value is in quotes now, ``"​"``."""
    import csv

    from nlsim.io import columns

    clusters = pd.DataFrame({"cluster_id": ["c-1"], "sources": [["AP", "\u200b"]]})
    cell = columns.sheet_frame(clusters, columns.table("clusters"))["sources"].iloc[0]
    assert cell == 'AP, "\u200b"'
    assert next(csv.reader([cell], skipinitialspace=True)) == ["AP", "\u200b"]


@pytest.mark.slow
def test_a_daily_run_with_a_control_character_publishes_its_report(tmp_path: Path) -> None:
    day1 = dict(list(CONTROL.items())[:4])
    corpus(tmp_path, day1, "day1.parquet")
    corpus(tmp_path, {"v3": ("Floods hit\x0bthe north of the country", "BBC")}, "day2.parquet")
    for day in ("day1.parquet", "day2.parquet"):
        proc = nlsim("dedup", "--corpus", day, "--state", "st", "--out", "daily", *RUN, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        book = sheets(tmp_path / "daily" / "latest" / "report.xlsx")
        head = book["members"][0]
        titles = {row[head.index("item_id")]: row[head.index("title")] for row in book["members"][1:]}
        assert titles["v1"] == "Floods hit the north of the country"
    assert titles["v3"] == "Floods hit the north of the country"


@pytest.mark.slow
def test_formulas_are_written_as_text(tmp_path: Path) -> None:
    corpus(tmp_path, FORMULAS)
    proc = nlsim("dedup", "--corpus", "news.parquet", "--out", "rep", *RUN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = tmp_path / "rep"
    with zipfile.ZipFile(rep / "report.xlsx") as z:
        for name in z.namelist():
            if name.startswith("xl/worksheets/"):
                assert b"<f>" not in z.read(name) and b"<f " not in z.read(name), name
    book = load_workbook(rep / "report.xlsx")
    cells = [c for ws in book.worksheets for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    texts = {c.value for c in cells}
    for title, source in FORMULAS.values():
        assert title in texts and source in texts  # exactly the user's text ...
    assert {c.data_type for c in cells} == {"s"}  # ... stored as text, never as a formula

    members = pd.read_csv(rep / "members.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    by_id = members.set_index("item_id")
    for item, (title, source) in FORMULAS.items():
        assert by_id.loc[item, "title"] == "'" + title
        assert by_id.loc[item, "source"] == (("'" + source) if source[0] in "=+-@" else source)
    pairs = pd.read_csv(rep / "pairs.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    assert len(pairs) == 4
    text_columns = [c for c in pairs.columns if c.startswith(("title_", "source_", "id_", "url_"))]
    for column in text_columns:
        for value in pairs[column]:
            assert not value or value[0] not in "=+-@\t\r", (column, value)
    assert set(pairs["title_a"]) == {"'" + FORMULAS[i][0] for i in ("f1", "d1", "m1", "a1")}
    page = (rep / "index.html").read_text(encoding="utf-8")
    notice = re.search(r"<div class='notice[^']*' id='spreadsheet-text'>(.*?)</div>", page, re.S)
    assert notice is not None and "apostrophe" in notice.group(1)


def test_a_table_longer_than_a_sheet_holds_goes_on_in_more_sheets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Excel's sheet holds 1,048,576 rows: a pairs table longer than that (a corpus of a million items) made a
    report.xlsx Excel does not open whole. The rows go on in 'pairs 2', 'pairs 3', ..., each sheet with its
    header; no row is lost. (The limit is made 4 rows here, a header and 3 rows.)"""
    from nlsim.report import spreadsheet

    monkeypatch.setattr(spreadsheet, "XLSX_SHEET_ROWS", 4, raising=False)
    pairs = pd.DataFrame({"id_a": [f"a{i}" for i in range(7)], "similarity": [0.9] * 7})
    topics = pd.DataFrame({"topic_id": pd.Series([], dtype=object)})
    spreadsheet.write_xlsx({"pairs": pairs, "topics": topics}, tmp_path / "r.xlsx")
    book = load_workbook(tmp_path / "r.xlsx", read_only=True)
    assert book.sheetnames == ["pairs", "pairs 2", "pairs 3", "topics"]
    rows = {name: [r for r in book[name].iter_rows(values_only=True)] for name in book.sheetnames}
    assert all(len(r) <= 4 and r[0] == ("id_a", "similarity") for n, r in rows.items() if n != "topics")
    assert [r[0] for n in ("pairs", "pairs 2", "pairs 3") for r in rows[n][1:]] == pairs["id_a"].tolist()
    assert rows["topics"] == [("topic_id",)]


def test_the_notice_names_only_the_items_and_files_whose_cells_were_changed(tmp_path: Path) -> None:
    """The page and run.json named every item the page shows whose text a spreadsheet would change, also a
    topic's single item (``@id``, in no CSV file: "begins with an apostrophe in pairs.csv and members.csv")
    and an item shown only as a near miss (in no spreadsheet file). They name now only the items whose
    cells the written files changed, each under the files it was changed in: read here from the files."""
    import json

    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table, write_files
    from nlsim.report.record import RunRecord

    items = {
        "c1": ('=HYPERLINK("http://evil.example/")', "AP"),  # a story's: pairs.csv, members.csv
        "c2": ("Floods\x0bhit the north", "@wire"),  # a story's: report.xlsx (title), the CSVs (source)
        "@id": ("A topic's single item", "AP"),  # a topic's single item: only its id, in report.xlsx
        "s2": ("Bell\x07rings over the harbour", "AP"),  # a topic's representative: report.xlsx's topics
        "s3": ("=cmd|' /C calc'!A0", "AP"),  # a topic's single item: its title in no file
        "nm": ("-5% on the\x1b stock market", "AP"),  # a near miss only: in no file
        "=w": ("Window story", "AP"),  # a story of the window's: window/members.csv only
        "w2": ("Window story", "AP"),
    }
    frame = pd.DataFrame(
        {
            "id": list(items),
            "title": [t for t, _ in items.values()],
            "source": [s for _, s in items.values()],
            "published_at": pd.to_datetime([f"2024-08-01T0{n}:00Z" for n in range(len(items))], utc=True),
        }
    )
    found = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.97]})
    labels, clusters = batch_clusters(frame.iloc[:2], found)
    pairs = pairs_table(frame.iloc[:2], found, labels)
    story = clusters["cluster_id"].iloc[0]
    topics = pd.DataFrame(
        {
            "topic_id": ["t-1", "t-2"],
            "size": [3, 2],
            "stories": [2, 2],
            "cluster_ids": [[story], []],
            "member_ids": [["c1", "c2", "@id"], ["s2", "s3"]],
            "representative": ["c1", "s2"],
            "representative_title": [items["c1"][0], items["s2"][0]],
        }
    )
    missed = pd.DataFrame({"id_a": ["c1"], "id_b": ["nm"], "similarity": [0.8], "cluster_a": [story]})
    window = pd.concat(
        [clusters, clusters.assign(cluster_id="c-w", member_ids=[["=w", "w2"]], representative="=w")]
    )
    folder = tmp_path / "r"
    folder.mkdir()
    write_files(
        folder, pairs, clusters, RunRecord(model="m"), frame, window=window, near_misses=missed, topics=topics
    )

    def csv(name: str) -> pd.DataFrame:
        return pd.read_csv(folder / name, encoding="utf-8-sig", dtype=str, keep_default_na=False)

    # what the files hold: an apostrophe in the CSV files, the cells report.xlsx changed
    apostrophes = set()
    for name, ends in (("pairs.csv", ("a", "b")), ("members.csv", ("",)), ("window/members.csv", ("",))):
        for row in csv(name).to_dict("records"):
            for end in ends:
                item = row["item_id"] if not end else row[f"id_{end}"].removeprefix("'")
                for field in ("id", "title", "source", "url"):
                    key = {"id": "item_id"}.get(field, field) if not end else f"{field}_{end}"
                    if str(row.get(key, "")).startswith("'"):
                        apostrophes.add((item.removeprefix("'"), field, name))
    assert apostrophes == {
        ("c1", "title", "pairs.csv"),
        ("c1", "title", "members.csv"),
        ("c1", "title", "window/members.csv"),
        ("c2", "source", "pairs.csv"),
        ("c2", "source", "members.csv"),
        ("c2", "source", "window/members.csv"),
        ("=w", "id", "window/members.csv"),
    }
    book = sheets(folder / "report.xlsx")
    cells = {str(v) for rows in book.values() for row in rows for v in row}
    assert "Floods hit the north" in cells and "Bellrings over the harbour" in cells  # c2's and s2's titles
    assert not any("\x1b" in c or "stock market" in c or "calc" in c for c in cells)  # nm and s3: no cell

    page = (folder / "index.html").read_text(encoding="utf-8")
    notice = re.search(r"<div class='notice[^']*' id='spreadsheet-text'>(.*?)</div>", page, re.S)
    assert notice is not None
    text = notice.group(1)
    for item in ("@id", "s3", "nm", "w2"):
        assert f"<bdi>{item}</bdi>" not in text, item
    both = "in <code>pairs.csv</code>, <code>members.csv</code> and <code>window/members.csv</code>"
    assert f"begin with an apostrophe {both}: <bdi>c1</bdi> (title), <bdi>c2</bdi> (source)" in text
    assert "in <code>window/members.csv</code>: <bdi>=w</bdi> (id)" in text
    every = "in <code>pairs.csv</code>, <code>members.csv</code>, <code>report.xlsx</code> and <code>window/"
    every += "members.csv</code>"  # c2's title is in every file, s2's (a topic's) in report.xlsx alone
    assert (
        f"removed {every}: <bdi>c2</bdi> (title); in <code>report.xlsx</code>: <bdi>s2</bdi> (title)" in text
    )

    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    named = {
        (c["item_id"], c["field"], c["change"], tuple(c.get("files", ())))
        for c in record["spreadsheet_changes"]
    }
    assert named == {
        ("c1", "title", "formula", ("pairs.csv", "members.csv", "window/members.csv")),
        ("c2", "source", "formula", ("pairs.csv", "members.csv", "window/members.csv")),
        ("c2", "title", "characters", ("pairs.csv", "members.csv", "report.xlsx", "window/members.csv")),
        ("s2", "title", "characters", ("report.xlsx",)),
        ("=w", "id", "formula", ("window/members.csv",)),
    }
    formulas = {(i, f, name) for i, f, change, files in named if change == "formula" for name in files}
    assert formulas == apostrophes  # every apostrophe named, and nothing else


def cells_as_a_spreadsheet_splits(line: str, separator: str) -> list[str]:
    """One CSV line cut into cells as a spreadsheet opening the file does with its locale's separator
    (``;`` in much of Europe, whatever the file uses): a double quote opens or closes quoting wherever it
    stands, a separator splits only outside quotes; the quotes themselves are not shown."""
    cells, cell, quoted = [], [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif ch == separator and not quoted:
            cells.append("".join(cell))
            cell = []
        else:
            cell.append(ch)
    return [*cells, "".join(cell)]


def test_csv_text_cells_are_quoted_so_no_separator_starts_a_formula(tmp_path: Path) -> None:
    """A title holding ``;=`` (or ``,+``, ``\\t@``) cannot start a formula cell in a spreadsheet whose
    separator is another than the file's: every text cell is in double quotes (OWASP's CSV-injection
    rule), numbers stay bare, and the file reads back as written."""
    from nlsim.report.spreadsheet import write_csv

    frame = pd.DataFrame(
        {
            "id_a": ["n1", "n2"],
            "title_a": ["Markets rally;=1+1", "Storm\t@SUM(1;1) hits; -5% 股市"],
            "similarity": pd.Series([0.9, float("nan")], dtype="float32"),
            "source_a": ["AP;+cmd|' /C calc'!A0", None],
        }
    )
    write_csv(frame, tmp_path / "pairs.csv")
    lines = (tmp_path / "pairs.csv").read_text(encoding="utf-8-sig").splitlines()
    for separator in (",", ";", "\t"):
        for line in lines:
            for cell in cells_as_a_spreadsheet_splits(line, separator):
                assert not cell.startswith(FORMULA_START), (separator, line, cell)
    assert lines[1].startswith('"n1",') and ",0.9," in lines[1]
    back = pd.read_csv(tmp_path / "pairs.csv", encoding="utf-8-sig")
    assert back["title_a"].tolist() == frame["title_a"].tolist()
    assert back["source_a"].iloc[0] == frame["source_a"].iloc[0] and pd.isna(back["source_a"].iloc[1])


FULL_WIDTH = {
    "w1": ('＝HYPERLINK("http://evil.example/","新聞")', "AP"),
    "w2": ("＋886 市話詐騙 警方提醒", "＠newsroom"),
    "w3": ("－5％ 股市重挫", "AP"),
}


def test_a_title_starting_with_a_full_width_formula_sign_starts_with_an_apostrophe_in_the_csv_files(
    tmp_path: Path,
) -> None:
    """Excel in a Japanese or Chinese setting reads a cell starting with a full-width ``＝``, ``＋``, ``－``
    or ``＠`` (U+FF1D, U+FF0B, U+FF0D, U+FF20, what a CJK input method types) as it reads ``=``, ``+``,
    ``-``, ``@``: ``＝cmd|' /C calc'!A0`` runs (OWASP www-community issue 1088). Such text went into
    ``pairs.csv`` and ``members.csv`` as it was; it now starts with an apostrophe there, is named among the
    changed cells, and the editors' files (a draw, the page's export, a quarantine file) escape and read it
    back the same way."""
    from nlsim.io import editor_file
    from nlsim.report.spreadsheet import write_csv, written_changes

    for start in "＝＋－＠":
        assert start in FORMULA_START and csv_text(start + "1+1") == "'" + start + "1+1"
        assert editor_file.escape(start + "x") == "'" + start + "x"
        assert editor_file.unescape(editor_file.escape(start + "x")) == start + "x"
    assert csv_text("股市＝1") == "股市＝1" and csv_text("ー長音") == "ー長音"
    members = pd.DataFrame(
        {
            "item_id": list(FULL_WIDTH),
            "title": [t for t, _ in FULL_WIDTH.values()],
            "source": [s for _, s in FULL_WIDTH.values()],
        }
    )
    write_csv(members, tmp_path / "members.csv")
    back = pd.read_csv(tmp_path / "members.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    assert back["title"].tolist() == ["'" + t for t, _ in FULL_WIDTH.values()]
    assert back["source"].tolist() == ["AP", "'＠newsroom", "AP"]
    changes = {(c.item_id, c.field) for c in written_changes({"members.csv": {"members": members}})}
    assert changes == {("w1", "title"), ("w2", "title"), ("w2", "source"), ("w3", "title")}


BLANK_FORMULAS = {
    "z1": ('\ufeff=HYPERLINK("http://x")', "AP"),
    "z2": ("\u200b\u200b+1+1", "AP"),
    "z3": (" -5% on the market", "\u3000＠newsroom"),
    "z4": ("\u200e\u00a0@SUM(1)", "AP"),
    "z5": ("Floods \u200b=x", "AP"),
}
"""Texts a spreadsheet would run as a formula once it trims what opens them (spaces, an ideographic
space, a byte-order mark, a zero-width space, a direction mark), and one that holds such a start only
inside it."""


def test_a_formula_after_spaces_or_characters_that_show_nothing_starts_with_an_apostrophe(
    tmp_path: Path,
) -> None:
    """A cell whose formula sign comes after spaces or characters that show nothing (U+FEFF, U+200B, a
    direction mark, an ideographic space) went into ``pairs.csv`` and ``members.csv`` as it was, where a
    spreadsheet that trims a cell before reading it (LibreOffice's "trim spaces", a cleanup) runs it as a
    formula. Such text now starts with an apostrophe there, is named among the changed cells, and the
    editors' files escape and read it back the same way; text holding a formula sign further in is left
    as it is."""
    from nlsim.io import editor_file
    from nlsim.report.spreadsheet import write_csv, written_changes

    for text, source in BLANK_FORMULAS.values():
        for cell in (text, source):
            escaped = editor_file.escape(cell)
            assert editor_file.unescape(escaped) == cell
            assert editor_file.escape("'" + cell) == ("''" + cell if escaped != cell else "'" + cell)
    members = pd.DataFrame(
        {
            "item_id": list(BLANK_FORMULAS),
            "title": [t for t, _ in BLANK_FORMULAS.values()],
            "source": [s for _, s in BLANK_FORMULAS.values()],
        }
    )
    write_csv(members, tmp_path / "members.csv")
    back = pd.read_csv(tmp_path / "members.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    titles = [t for t, _ in BLANK_FORMULAS.values()]
    assert back["title"].tolist() == ["'" + t for t in titles[:4]] + [titles[4]]
    assert back["source"].tolist() == ["AP", "AP", "'\u3000＠newsroom", "AP", "AP"]
    changes = {(c.item_id, c.field) for c in written_changes({"members.csv": {"members": members}})}
    assert changes == {("z1", "title"), ("z2", "title"), ("z3", "title"), ("z3", "source"), ("z4", "title")}


def test_an_id_beginning_with_an_apostrophe_before_a_formula_is_told_from_that_formula_escaped(
    tmp_path: Path,
) -> None:
    """The ids ``=x`` and ``'=x`` were both ``'=x`` in pairs.csv and members.csv (the first escaped, the
    second as it was), and an editors' file read ``'=x`` back as ``=x``: another item. Text that begins with
    apostrophes before a formula's start gets one more apostrophe now (``''=x``), read back as written, and
    the page names it."""
    import csv

    from nlsim.clusters.table import batch_clusters
    from nlsim.io import editor_file
    from nlsim.report.files import pairs_table, write_files
    from nlsim.report.record import RunRecord

    frame = pd.DataFrame(
        {
            "id": ["=x", "'=x", "''-x", "'abc"],
            "title": ["Floods", "Floods", "Floods", "'-5% own apostrophe"],
            "source": ["AP"] * 4,
            "published_at": pd.to_datetime([f"2024-08-01T0{n}:00Z" for n in range(4)], utc=True),
        }
    )
    found = pd.DataFrame({"a": [0, 0, 0], "b": [1, 2, 3], "similarity": [0.97] * 3})
    labels, clusters = batch_clusters(frame, found)
    folder = tmp_path / "r"
    folder.mkdir()
    write_files(folder, pairs_table(frame, found, labels), clusters, RunRecord(model="m"), frame)
    with (folder / "members.csv").open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["item_id"] for r in rows] == ["'=x", "''=x", "'''-x", "'abc"]  # four ids, told apart
    assert [editor_file.unescape(r["item_id"]) for r in rows] == frame["id"].tolist()
    assert [r["title"] for r in rows][3] == "''-5% own apostrophe"
    page = (folder / "index.html").read_text(encoding="utf-8")
    for item in ("=x", "&#x27;=x", "&#x27;&#x27;-x"):
        assert f"<bdi>{item}</bdi> (id)" in page, item


def test_ids_a_spreadsheet_shows_otherwise_when_it_opens_a_csv_file_are_named_on_the_page(
    tmp_path: Path,
) -> None:
    """Excel opening members.csv shows the id ``1E5`` as 1.00E+05 (and ``1e5`` the same), ``007`` as 7,
    ``2024-05-01`` as a date, an id of 20 digits without its last ones, whatever the quotes: an editor
    reading the file finds other ids, or two items under one. Nothing said so but the docs; the page and
    run.json name such ids now, with the files, and say that report.xlsx holds them as text. An id that
    shows as written (``12345``, ``TRUE``, ``n-1``) is not named."""
    import csv
    import json

    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table, write_files
    from nlsim.report.record import RunRecord

    ids = ["n-1", "1E5", "1e5", "007", "2024-05-01", "12345678901234567890", "12345", "TRUE", "MAR1"]
    frame = pd.DataFrame(
        {
            "id": ids,
            "title": ["Floods"] * len(ids),
            "source": ["AP"] * len(ids),
            "published_at": pd.to_datetime([f"2024-08-01T0{n}:00Z" for n in range(len(ids))], utc=True),
        }
    )
    n = len(ids)
    found = pd.DataFrame({"a": [0] * (n - 1), "b": list(range(1, n)), "similarity": [0.97] * (n - 1)})
    labels, clusters = batch_clusters(frame, found)
    folder = tmp_path / "r"
    folder.mkdir()
    write_files(folder, pairs_table(frame, found, labels), clusters, RunRecord(model="m"), frame)

    with (folder / "members.csv").open(encoding="utf-8-sig", newline="") as f:
        assert [r["item_id"] for r in csv.DictReader(f)] == ids  # the file holds them as written
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    changes = record["spreadsheet_changes"]
    named = {(c["item_id"], tuple(c["files"])) for c in changes if c["change"] == "number"}
    both = ("pairs.csv", "members.csv")
    shown = ["1E5", "1e5", "007", "2024-05-01", "12345678901234567890", "MAR1"]
    assert named == {(i, both) for i in shown}
    page = (folder / "index.html").read_text(encoding="utf-8")
    notice = re.search(r"<div class='notice[^']*' id='spreadsheet-text'>(.*?)</div>", page, re.S)
    assert notice is not None
    text = notice.group(1)
    assert "6 id(s) read as a number, a date or a time by a spreadsheet opening the CSV files" in text
    assert "<code>report.xlsx</code> holds them as text" in text
    for item in ("n-1", "12345", "TRUE"):
        assert f"<bdi>{item}</bdi>" not in text, item


def _as_excel_shows(stored: str) -> str:
    """A cell's stored text as Excel shows it: each ``_xHHHH_`` is the character U+HHHH, read left to right
    (ECMA-376 Part 1, 22.4.2.4 bstr; openpyxl reads the text as stored)."""
    return re.sub(r"_x([0-9A-Fa-f]{4})_", lambda m: chr(int(m.group(1), 16)), stored)


def test_a_title_holding_an_ooxml_escape_shows_as_written_in_the_workbook(tmp_path: Path) -> None:
    """Excel reads ``_x0041_`` in a cell's stored text as the character it names (``A``; ``_x000D_`` a
    carriage return): a title or id holding such text (a product code, a wiki's encoded name) showed
    otherwise in ``report.xlsx``. Its opening underscore is now stored escaped (``_x005F_``), as Excel
    itself stores such text, and the page does not name it as changed."""
    from nlsim.report.spreadsheet import write_xlsx, written_changes

    titles = ["Code _x0041_ recalled", "Two _x0041_x0042_ in a row", "_x000D_ at the start", "snake_case_x1_"]
    members = pd.DataFrame({"item_id": ["n_x0031_", "n2", "n3", "n4"], "title": titles})
    write_xlsx({"members": members}, tmp_path / "report.xlsx")
    rows = sheets(tmp_path / "report.xlsx")["members"]
    assert [[_as_excel_shows(v) for v in row] for row in rows[1:]] == members.values.tolist()
    assert written_changes({"report.xlsx": {"members": members}}) == []


SHEET_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def test_control_characters_are_out_of_the_csv_files_as_out_of_report_xlsx(tmp_path: Path) -> None:
    """``pairs.csv`` and ``members.csv`` held a title's control characters raw (a terminal's colour codes, a
    NUL, a bell, DEL, Word's line break), which a spreadsheet shows as boxes or cuts the cell at and a
    terminal obeys, and ``report.xlsx`` kept DEL, the C1 controls and a colour code's letters (``[31m``).
    Every spreadsheet file now holds the text without them (a line or page break a space, a terminal's
    escape sequence removed whole); a formula start they hid still gets its apostrophe; the Parquet files
    keep the text as written; the page and ``run.json`` name the change under each file."""
    import csv
    import json

    written = {
        "a": "\x1b[31mStorm\x1b[0m hits\x00 the coast\x7f",
        "b": "Storm hits\x0bthe coast\x85today\x9b",
        "c": '\x07=HYPERLINK("http://x","Storm hits the coast")',
    }
    shown = {"a": "Storm hits the coast", "b": "Storm hits the coast today"}
    shown["c"] = '=HYPERLINK("http://x","Storm hits the coast")'
    frame = pd.DataFrame(
        {
            "id": list(written),
            "title": list(written.values()),
            "source": ["AP\x1b[0m", "AFP", "AP"],
            "published_at": pd.to_datetime(["2024-08-01T08:00Z", "2024-08-01T09:00Z", None], utc=True),
        }
    )
    folder = _three_item_report(tmp_path / "r", frame)

    for name in ("pairs.csv", "members.csv"):
        text = (folder / name).read_text(encoding="utf-8-sig")
        assert SHEET_CONTROLS.search(text) is None, name
    with (folder / "members.csv").open(encoding="utf-8-sig", newline="") as f:
        rows = {r["item_id"]: r for r in csv.DictReader(f)}
    assert {i: r["title"] for i, r in rows.items()} == {**shown, "c": "'" + shown["c"]}
    assert rows["a"]["source"] == "AP"
    book = sheets(folder / "report.xlsx")
    head = book["members"][0]
    item, title = head.index("item_id"), head.index("title")
    assert {row[item]: row[title] for row in book["members"][1:]} == shown
    pairs = pd.read_parquet(folder / "pairs.parquet")
    assert {*pairs["title_a"], *pairs["title_b"]} == set(written.values())
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    changes = {(c["item_id"], c["field"], c["change"]): c["files"] for c in record["spreadsheet_changes"]}
    every = ["pairs.csv", "members.csv", "report.xlsx"]
    assert changes[("a", "title", "characters")] == every and changes[("c", "title", "characters")] == every
    assert changes[("c", "title", "formula")] == ["pairs.csv", "members.csv"]
    assert changes[("a", "source", "characters")] == every


def test_an_id_of_12_to_15_digits_that_a_spreadsheet_shows_in_scientific_notation_is_named() -> None:
    """Excel's General format shows a whole number of 12 digits or more in scientific notation: opening
    members.csv, the id ``202405010830`` (a date and time, as many CMSs number their items) shows as
    2.02405E+11, and two such ids of one minute as one. Only ids of 16 digits or more were named; ids of
    12 to 15 digits are named too. One of 11 digits shows as written."""
    from nlsim.report.spreadsheet import shown_otherwise

    assert [shown_otherwise(t) for t in ("202405010830", "20240501083012", "123456789012345")] == [True] * 3
    assert [shown_otherwise(t) for t in ("12345678901", "2024050108")] == [False, False]


def test_a_32_bit_score_is_written_with_the_digits_pairs_csv_has(tmp_path: Path) -> None:
    """A pair's similarity (a 32-bit float) read 0.7071067690849304 in report.xlsx where pairs.csv has
    0.70710677: the float's noise past its own digits. The workbook holds the shortest digits."""
    import numpy as np

    from nlsim.report.spreadsheet import write_csv, write_xlsx

    frame = pd.DataFrame({"a": ["x", "y"], "similarity": np.array([0.70710677, 1.0], dtype=np.float32)})
    write_xlsx({"pairs": frame}, tmp_path / "r.xlsx")
    write_csv(frame, tmp_path / "p.csv")
    rows = list(load_workbook(tmp_path / "r.xlsx").active.iter_rows(values_only=True))
    assert rows[1:] == [("x", 0.70710677), ("y", 1.0)]
    assert "0.70710677" in (tmp_path / "p.csv").read_text(encoding="utf-8")


def test_a_title_a_spreadsheet_reads_as_a_number_is_not_named_only_an_id_is() -> None:
    """A spreadsheet shows the title ``2024-05-01`` or ``007`` otherwise too, but the notice's ``number``
    warns of ids alone (two items told apart by their ids no more): a title of the kind is not named."""
    from nlsim.report.spreadsheet import TextChange, written_changes

    pairs = pd.DataFrame({"id_a": ["007"], "id_b": ["b"], "title_a": ["2024-05-01"], "title_b": ["1E5"]})
    assert written_changes({"pairs.csv": {"pairs": pairs}}) == [
        TextChange("007", "id", "number", ("pairs.csv",))
    ]


def test_a_zero_or_a_decimal_below_one_shows_as_written() -> None:
    """A spreadsheet shows the id ``0`` and ``0.25`` as written; only a number with a zero before more
    digits (``007``, ``00``) loses its zeros."""
    from nlsim.report.spreadsheet import shown_otherwise

    assert [shown_otherwise(t) for t in ("0", "0.25", "0.5")] == [False, False, False]
    assert [shown_otherwise(t) for t in ("00", "007", "0.50")] == [True, True, True]


def test_a_title_of_emojis_under_a_cells_characters_but_over_its_units_is_named_as_cut() -> None:
    """A title of 17,000 emojis is under a cell's 32,767 characters by ``len`` but 34,000 by a
    spreadsheet's count (two each): it is cut, and named so, in every file."""
    from nlsim.report.spreadsheet import TextChange, written_changes

    members = pd.DataFrame({"item_id": ["a", "b"], "title": ["\U0001f600" * 17_000, "short"]})
    changes = written_changes({"members.csv": {"members": members}, "report.xlsx": {"members": members}})
    assert changes == [TextChange("a", "title", "cut", ("members.csv", "report.xlsx"))]


def test_a_storys_source_is_named_for_every_member_that_has_it_not_only_those_added() -> None:
    """A story's ``sources`` cell in report.xlsx holds the sources of all its members: a changed source is
    named for the member whose source it is (``member_ids``), one added before this run too."""
    from nlsim.report.spreadsheet import TextChange, written_changes

    items = pd.DataFrame({"id": ["a", "b"], "title": ["x", "y"], "source": ["AP\x07", "Reuters"]})
    clusters = pd.DataFrame(
        {"member_ids": [["a", "b"]], "added_ids": [["b"]], "sources": [["AP\x07", "Reuters"]]}
    )
    changes = written_changes({"report.xlsx": {"clusters": clusters}}, items)
    assert changes == [TextChange("a", "source", "characters", ("report.xlsx",))]


def test_whole_numbers_stay_numbers_in_the_workbook(tmp_path: Path) -> None:
    """A story's size (an integer column) is a number cell in report.xlsx, as a flag is a truth value,
    so a spreadsheet sums and sorts it: neither is stored as text."""
    import numpy as np

    from nlsim.report.spreadsheet import write_xlsx

    frame = pd.DataFrame({"size": np.array([3, 12], dtype=np.int64), "flag": [True, False], "n": [5, None]})
    write_xlsx({"clusters": frame}, tmp_path / "r.xlsx")
    rows = list(load_workbook(tmp_path / "r.xlsx").active.iter_rows(values_only=True))
    assert rows[1:] == [(3, True, 5), (12, False, None)]
    assert [type(v) for v in (rows[1][0], rows[2][0], rows[1][1])] == [int, int, bool]


def test_text_changes_names_a_formula_only_for_text_read_as_one() -> None:
    """:func:`text_changes` names ``formula`` for text a CSV file writes with an apostrophe in front, not
    for a title whose control character alone the files remove."""
    from nlsim.report.spreadsheet import TextChange, text_changes

    frame = pd.DataFrame({"id": ["a", "b"], "title": ["Bell\x07rings", "=1+1"]})
    assert text_changes(frame) == [
        TextChange("a", "title", "characters"),
        TextChange("b", "title", "formula"),
    ]


def test_a_missing_value_of_a_nullable_column_is_an_empty_cell(tmp_path: Path) -> None:
    from nlsim.report.spreadsheet import write_xlsx

    path = tmp_path / "report.xlsx"
    frame = pd.DataFrame(
        {"id": ["x", "y"], "n": pd.array([5, None], "Int64"), "s": pd.array(["a", None], "string")}
    )
    write_xlsx({"t": frame}, path)
    rows = list(load_workbook(path).worksheets[0].iter_rows(values_only=True))
    assert rows == [("id", "n", "s"), ("x", 5, "a"), ("y", None, None)]
