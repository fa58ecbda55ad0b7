"""``read_table``: the one table reader keeps what a file holds (see also test_corpus and test_pairs)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nlsim.errors import InputError
from nlsim.io.tables import csv_records, read_table


def test_integer_columns_with_empty_cells_keep_their_integers(tmp_path: Path) -> None:
    """An id column of integers with a gap reads as integers (``None`` in the gap), not ``101.0``."""
    table = pa.table(
        {
            "id": pa.array([101, None, 103], pa.int64()),
            "weight": pa.array([0.5, None, 1.5], pa.float64()),
            "count": pa.array([1, 2, 3], pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    rows = [{"id": 101, "weight": 0.5, "count": 1}, {"id": None, "weight": None, "count": 2}]
    rows.append({"id": 103, "weight": 1.5, "count": 3})
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for name in ("t.parquet", "t.jsonl"):
        frame = read_table(tmp_path / name)
        assert frame["id"].tolist() == [101, None, 103], name
        assert [str(v) for v in frame["id"] if v is not None] == ["101", "103"], name
        assert frame["weight"].dtype.kind == "f" and frame["weight"].isna().tolist() == [False, True, False]
        assert frame["count"].tolist() == [1, 2, 3], name


def test_a_jsonl_column_of_integers_and_fractions_keeps_each_as_written(tmp_path: Path) -> None:
    """Integers beside fractions stay integers (an id 1.0 among integer ids is then refused by its own
    row, not blamed on row 1); a column of fractions only stays a float column."""
    lines = [{"score": 1, "weight": 0.5}, {"score": 0.5, "weight": 1.5}, {"score": None, "weight": None}]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    frame = read_table(tmp_path / "s.jsonl")
    assert frame["score"].tolist() == [1, 0.5, None] and isinstance(frame["score"][0], int)
    assert frame["weight"].dtype.kind == "f"


def test_a_file_with_old_mac_line_endings_is_read_by_row(tmp_path: Path) -> None:
    """Excel for Mac writes CR alone: a TSV, a CSV or a JSONL of such lines holds its rows."""
    (tmp_path / "cr.tsv").write_bytes(b"id\ttitle\rn1\tA story\rn2\tB story\r")
    (tmp_path / "cr.csv").write_bytes(b'id,title\rn1,"A, story"\rn2,B story\r')
    (tmp_path / "cr.jsonl").write_bytes(
        b'{"id": "n1", "title": "A, story"}\r{"id": "n2", "title": "B story"}\r'
    )
    for name in ("cr.tsv", "cr.csv", "cr.jsonl"):
        frame = read_table(tmp_path / name)
        assert frame["id"].tolist() == ["n1", "n2"], name


def test_a_byte_that_is_not_utf8_in_a_file_with_old_mac_line_endings_is_named_by_its_row(
    tmp_path: Path,
) -> None:
    """A GB18030 TSV or JSONL with CR alone: the bad byte's data row and line, as the file is read by row
    (not "in the header", as when only "\\n" counted)."""
    (tmp_path / "cr.tsv").write_bytes("id\ttitle\rn1\tA\rn2\tB\rn3\t股市大跌\r".encode("gb18030"))
    rows = "".join(f'{{"id": "n{i}", "title": "{t}"}}\r' for i, t in ((1, "A"), (2, "B"), (3, "股市大跌")))
    (tmp_path / "cr.jsonl").write_bytes(rows.encode("gb18030"))
    for name, line in (("cr.tsv", 4), ("cr.jsonl", 3)):
        with pytest.raises(
            InputError, match=rf"{name}: row 3, field 'title': not valid UTF-8 text: .*\(line {line}\)"
        ):
            read_table(tmp_path / name)


def test_rows_of_empty_cells_a_spreadsheet_left_are_blank_lines(tmp_path: Path) -> None:
    """Excel writes the rows below a table it once formatted as ',,,' (every cell empty): invisible in the
    sheet, they are blank lines, not items with an empty id; the rows around them keep their numbers, and
    a spreadsheet's row numbers still count them."""
    from nlsim.io.tables import sheet_rows

    path = tmp_path / "news.csv"
    path.write_text("id,title,source\r\n1,Floods,AP\r\n,,\r\n2,Storm,AP\r\n,,\r\n , ,\r\n", encoding="utf-8")
    assert read_table(path)["id"].tolist() == ["1", "2"]
    assert sheet_rows(path) == [2, 4]
    path.write_text("id,title,source\n,,\n1,Floods,AP,x\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 1: 4 fields"):
        read_table(path)


@pytest.mark.parametrize("sep,name", [(";", "semicolon"), ("\t", "tab")])
def test_a_csv_written_with_another_separator_is_named_so_when_a_later_row_holds_a_comma(
    tmp_path: Path, sep: str, name: str
) -> None:
    path = tmp_path / "news.csv"
    path.write_text(f"id{sep}title\n1{sep}Storm\n2{sep}Floods, again\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_table(path)
    assert "row 2" in str(err.value)
    assert f"looks {name}-separated" in str(err.value)


def test_a_byte_that_is_not_utf8_is_named_by_its_field_too(tmp_path: Path) -> None:
    """A Big5 or Latin-1 byte in a corpus was named by its row alone ("row 2: not valid UTF-8"), where every
    other bad cell names its field: the field is now named, the header's for a CSV (a quoted field over two
    lines too) or TSV row, the top-level key for a JSONL line (never the key before, when the byte is in a
    key itself)."""
    files = {
        "a.csv": b"id,title,source\n1,ok,AP\n2,caf\xe9,AP\n",
        "b.csv": b'id,title,source\n1,ok,AP\n2,"two\nlines caf\xe9",AP\n',
        "c.tsv": b"id\ttitle\tsource\n1\tok\tAP\n2\tok\tA\xe9P\n",
        "d.jsonl": b'{"id": "1", "title": "ok"}\n{"id": "2", "tags": ["a", {"k": 1}], "title": "\xe9"}\n',
    }
    for name, field in (("a.csv", "title"), ("b.csv", "title"), ("c.tsv", "source"), ("d.jsonl", "title")):
        (tmp_path / name).write_bytes(files[name])
        with pytest.raises(
            InputError, match=rf"{name}: row 2, field '{field}': not valid UTF-8 text: byte 0xe9"
        ):
            read_table(tmp_path / name)
    (tmp_path / "e.jsonl").write_bytes(b'{"id": "1", "ti\xe9tle": "ok"}\n')
    with pytest.raises(InputError, match=r"e\.jsonl: row 1: not valid UTF-8 text"):
        read_table(tmp_path / "e.jsonl")


def test_a_byte_that_is_not_utf8_in_the_last_column_of_a_windows_table_names_the_field_as_written(
    tmp_path: Path,
) -> None:
    """A TSV or CSV exported on Windows ends its lines with CRLF (Excel's "Text (Tab delimited)", in Big5 or
    Latin-1): a bad byte in its last column was named as field 'source\\r', the header's line end kept."""
    files = {
        "a.tsv": b"id\ttitle\tsource\r\n1\tok\tAP\r\n2\tok\tA\xe9P\r\n",
        "b.csv": b"id,source\r\n1,A\xe9P\r\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match=r"row \d, field 'source': not valid UTF-8 text") as info:
            read_table(tmp_path / name)
        assert "\\r" not in str(info.value) and "\r" not in str(info.value)


def test_a_spreadsheet_workbook_is_named_as_such_not_as_a_compressed_file(tmp_path: Path) -> None:
    """An Excel workbook given a .csv or .parquet name (an .xlsx is a zip archive) was refused as "a
    compressed file (zip): decompress it first", which leads nowhere; it is now named a workbook, with the
    way to save it as CSV, and so is a corpus given as .xlsx. A zip of a CSV is still a compressed file."""
    import shutil
    import zipfile

    import pandas as pd

    book = tmp_path / "news.xlsx"
    pd.DataFrame({"id": ["a"], "title": ["Floods"]}).to_excel(book, index=False)
    with pytest.raises(
        InputError, match=r"news\.xlsx: unknown table format .* workbook; save it as CSV UTF-8"
    ):
        read_table(book)
    for name in ("news.csv", "news.parquet"):
        shutil.copy(book, tmp_path / name)
        with pytest.raises(
            InputError, match=r"a spreadsheet workbook \(\.xlsx\), not a .* save it as CSV UTF-8"
        ):
            read_table(tmp_path / name)
    with zipfile.ZipFile(tmp_path / "zipped.csv", "w") as archive:
        archive.writestr("news.csv", "id,title\na,Floods\n")
    with pytest.raises(InputError, match=r"a compressed file \(zip\)"):
        read_table(tmp_path / "zipped.csv")


def test_jsonl_files_joined_each_with_a_byte_order_mark_are_read_whole(tmp_path: Path) -> None:
    """``cat day1.jsonl day2.jsonl`` of files each written with a byte-order mark: the second file's first
    line was refused as invalid JSON ("Unexpected UTF-8 BOM"); the mark opening a line is now not part of
    it, and every row is read."""
    day = ['{"id": "a", "title": "Floods"}\n', '{"id": "b", "title": "Storm"}\n']
    (tmp_path / "both.jsonl").write_text("\ufeff" + day[0] + "\ufeff" + day[1], encoding="utf-8")
    assert read_table(tmp_path / "both.jsonl")["id"].tolist() == ["a", "b"]


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_a_lone_carriage_return_in_an_unquoted_csv_field_is_text_not_the_end_of_the_row(
    tmp_path: Path, end: str
) -> None:
    """In a CSV whose rows end with a newline, a carriage return alone inside an unquoted title (a CMS that
    kept an old Mac line break) is a character of the title, as the TSV reader and a quoted field keep it:
    it ended the row there, so the title was cut and its rest refused as a row of too few fields, or, when
    the rest held as many fields as the header, read as an item of its own. A run of returns before the
    newline (``\\r\\r\\n``, what some Windows tools write) still ends the row whole."""
    path = tmp_path / "c.csv"
    rows = [
        "id,title,source",
        "n1,Floods\rhit the north,AP",
        "n2,Markets fall,AP\r",
        '"n3","Rain\rn9,again",AP',
    ]
    path.write_bytes(end.join(rows).encode() + end.encode())
    frame = read_table(path)
    assert frame.to_dict("records") == [
        {"id": "n1", "title": "Floods\rhit the north", "source": "AP"},
        {"id": "n2", "title": "Markets fall", "source": "AP"},
        {"id": "n3", "title": "Rain\rn9,again", "source": "AP"},
    ]
    path.write_bytes(b"id,title\nn1,Floods hit\rn3,the north\nn2,Markets fall\n")
    with pytest.raises(InputError, match=r"row 1.* 3 fields, the header has 2"):
        read_table(path)


def test_a_merge_writes_an_edited_note_into_a_csv_row_whose_text_holds_a_lone_carriage_return() -> None:
    """The note a merge writes into a row of a CSV pair file reads the row as the pair reader does: a
    ``\\r`` alone in an unquoted text ended the row there, so the row was refused as not the pair it is."""
    from nlsim.annotation.pair_file import _Cells

    cells = _Cells(pair_columns=(0,), rows={0: (("p1",), {3: "checked again"})}, label="pairs.csv")
    record = cells.set_in("p1,Floods\rhit the north,Floods,first look", 0, "csv")
    assert csv_records(record + "\n") == [["p1", "Floods\rhit the north", "Floods", "checked again"]]


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_a_first_line_naming_the_separator_for_excel_is_named_not_read_as_the_header(
    tmp_path: Path, sep: str
) -> None:
    """Some exports open with ``sep=,`` for Excel to split on that separator: read as the header, it gave
    the columns ``sep=`` and an empty one, and the real header as a row, refused as a corpus without an
    ``id`` column; the line is named for what it is."""
    for name in ("c.csv", "c.tsv"):
        path = tmp_path / name
        path.write_text(f"sep={sep}\nid{sep}title\nn1{sep}Floods\n", encoding="utf-8")
        with pytest.raises(InputError, match=r"the first line 'sep=.*' tells a spreadsheet the separator"):
            read_table(path)


def test_a_carriage_return_ending_a_csv_file_ends_its_last_row_not_its_last_cell(tmp_path: Path) -> None:
    """A CSV of CRLF rows cut after the last row's ``\\r`` (its ``\\n`` lost) ends that row there: the
    return is no character of the last cell, as a return alone inside a field is."""
    path = tmp_path / "c.csv"
    path.write_bytes(b"id,title,extra\r\nn1,Floods,x\r\nn2,Storm,y\r")
    assert read_table(path)["extra"].tolist() == ["x", "y"]
    assert csv_records("id,title\nn1,Floods\r") == [["id", "title"], ["n1", "Floods"]]


def test_a_tsv_with_csv_style_quotes_is_read_unquoted(tmp_path: Path) -> None:
    """A TSV that pandas (``to_csv(sep="\\t")``) or a spreadsheet wrote puts a field holding a double quote
    in quotes, each quote inside doubled (and a spreadsheet a field holding a comma too): the titles were
    read with those quotes (``"He said ""no""`` and one more quote). A file that holds such a field is now
    read unquoted."""
    import pandas as pd

    titles = ['He said "no"', '"Quoted" headline', "Floods, again", "Storm"]
    pd.DataFrame({"id": ["1", "2", "3", "4"], "title": titles}).to_csv(
        tmp_path / "p.tsv", sep="\t", index=False
    )
    assert read_table(tmp_path / "p.tsv")["title"].tolist() == titles
    excel = 'id\ttitle\n1\t"He said ""no"""\n2\t"Floods, again"\n3\tStorm\n'
    (tmp_path / "x.tsv").write_text(excel, encoding="utf-8")
    assert read_table(tmp_path / "x.tsv")["title"].tolist() == ['He said "no"', "Floods, again", "Storm"]


def test_a_tsv_without_a_doubled_quote_keeps_every_quote_as_written(tmp_path: Path) -> None:
    """A TSV has no quoting of its own: where no field is in quotes with a quote inside doubled, a title
    that is a quotation keeps its quotes, whole or not."""
    titles = ['"Floods"', '"We will rebuild," PM says', '"A" and "B"', '""', 'She said ""']
    text = "id\ttitle\n" + "".join(f"{n}\t{t}\n" for n, t in enumerate(titles))
    (tmp_path / "r.tsv").write_text(text, encoding="utf-8")
    assert read_table(tmp_path / "r.tsv")["title"].tolist() == titles


def test_the_rows_of_a_table_whose_last_line_has_no_line_break_are_all_counted(tmp_path: Path) -> None:
    from nlsim.io.tables import estimated_rows

    path = tmp_path / "c.csv"
    path.write_text("id,title\n1,a\n2,b", encoding="utf-8")
    assert estimated_rows(path) == 2


def test_a_byte_that_is_not_utf8_after_a_blank_line_of_a_tsv_is_named_by_its_row(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_bytes(b"id\ttitle\n\n1\ta\n2\t\xff\n")
    with pytest.raises(InputError, match=r"t\.tsv: row 2, field 'title': not valid UTF-8 text"):
        read_table(path)


def test_tsv_rows_that_cannot_be_split_keep_their_own_row_numbers(tmp_path: Path) -> None:
    """Two broken rows in a row are rows 1 and 2, as the rows after them are counted on from them."""
    from nlsim.io.tables import BrokenRow

    path = tmp_path / "t.tsv"
    path.write_text("id\ttitle\n1\ta\tx\n2\tb\tx\n3\tc\n", encoding="utf-8")
    broken: list[BrokenRow] = []
    assert read_table(path, broken=broken).values.tolist() == [["3", "c"]]
    assert [b.error.row for b in broken] == [1, 2]


@pytest.mark.parametrize("cell", ["a\tb", "a\rb", "a\nb"])
def test_a_tsv_cell_holding_a_tab_or_line_break_is_refused_by_row_and_field(
    tmp_path: Path, cell: str
) -> None:
    import pandas as pd

    from nlsim.io.tables import write_table

    frame = pd.DataFrame({"id": ["1", "2"], "text": ["fine", cell]})
    with pytest.raises(InputError, match=r"o\.tsv: row 2, field 'text': a tab or newline cannot be written"):
        write_table(frame, tmp_path / "o.tsv")
    assert not (tmp_path / "o.tsv").exists()


def test_a_spreadsheets_separator_line_ended_by_crlf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "news.csv"
    path.write_bytes(b"sep=;\r\nid;title\r\n1;Floods\r\n")
    with pytest.raises(InputError, match=r"the first line 'sep=;' tells a spreadsheet the separator"):
        read_table(path)


def test_text_with_nul_bytes_at_both_positions_is_not_taken_for_utf16() -> None:
    """UTF-32 (a NUL beside every NUL) is no UTF-16 without its mark: only UTF-16 is said to be."""
    from nlsim.io.tables import utf16_without_mark

    assert utf16_without_mark("id,title\r\n".encode("utf-32-le")) is None
    assert utf16_without_mark("id,title\r\n".encode("utf-16-le")) == "UTF-16LE"
