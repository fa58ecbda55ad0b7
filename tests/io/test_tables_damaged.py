"""``read_table`` on files a tester found misread: line separators inside fields, long CSV cells, compressed
files under a table's name, duplicate Parquet columns, empty CSV header names."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import re
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nlsim.errors import InputError
from nlsim.io.tables import BrokenRow, read_table

SEPARATORS = ["\u2028", "\u2029", "\x85", "\x0c"]


@pytest.mark.parametrize("sep", SEPARATORS, ids=["U+2028", "U+2029", "U+0085", "form-feed"])
def test_jsonl_string_holding_a_unicode_line_separator_is_one_record(tmp_path: Path, sep: str) -> None:
    """``json.dumps(ensure_ascii=False)`` writes U+2028 and its kin raw: valid JSON, one line of the file."""
    rows = [{"id": "a", "title": f"Floods{sep}again", "n": 1}, {"id": "b", "title": "Storm", "n": 2}]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (tmp_path / "t.jsonl").write_text(text, encoding="utf-8", newline="")
    frame = read_table(tmp_path / "t.jsonl")
    assert frame["title"].tolist() == [f"Floods{sep}again", "Storm"]
    assert frame["n"].tolist() == [1, 2]


@pytest.mark.parametrize("sep", SEPARATORS, ids=["U+2028", "U+2029", "U+0085", "form-feed"])
@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_tsv_field_holding_a_unicode_line_separator_stays_in_its_row(
    tmp_path: Path, sep: str, eol: str
) -> None:
    """Only ``\\n`` or ``\\r\\n`` end a TSV row; the ``\\r`` of ``\\r\\n`` is not kept in the last field."""
    text = eol.join(["id\ttitle\tlang", f"a\tFloods{sep}again\ten", "b\tStorm\tzh", ""])
    (tmp_path / "t.tsv").write_text(text, encoding="utf-8", newline="")
    frame = read_table(tmp_path / "t.tsv")
    assert frame.columns.tolist() == ["id", "title", "lang"]
    assert frame.to_dict("records") == [
        {"id": "a", "title": f"Floods{sep}again", "lang": "en"},
        {"id": "b", "title": "Storm", "lang": "zh"},
    ]


def test_tsv_blank_lines_and_a_missing_last_newline_read_as_before(tmp_path: Path) -> None:
    (tmp_path / "t.tsv").write_text("id\ttitle\n\na\tx\n  \nb\ty", encoding="utf-8")
    assert read_table(tmp_path / "t.tsv")["title"].tolist() == ["x", "y"]
    (tmp_path / "e.tsv").write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="the file is empty"):
        read_table(tmp_path / "e.tsv")


@pytest.mark.parametrize("quoted", [True, False])
def test_csv_cell_longer_than_the_csv_module_default_limit_is_read(tmp_path: Path, quoted: bool) -> None:
    """A body of 200,000 characters (the ``csv`` module refuses over 131,072 by default) is read whole."""
    body = "word " * 40_000
    cell = f'"{body}, and a comma"' if quoted else body
    (tmp_path / "t.csv").write_text(f"id,title,body\n1,A,{cell}\n2,B,short\n", encoding="utf-8")
    frame = read_table(tmp_path / "t.csv")
    assert frame["body"].tolist() == [f"{body}, and a comma" if quoted else body, "short"]


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("news.csv", data)
    return buf.getvalue()


COMPRESSORS = {
    "gzip": gzip.compress,
    "zip": _zip,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda data: b"\x28\xb5\x2f\xfd\x24\x0c\x61\x00" + data,  # a zstd frame header (no zstd module)
}


@pytest.mark.parametrize("name", list(COMPRESSORS))
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".parquet"])
def test_compressed_file_under_a_table_name_is_named_as_compressed(
    tmp_path: Path, name: str, suffix: str
) -> None:
    """Not "not valid UTF-8 ... save as UTF-8" (or "corrupt Parquet"): it is a compressed file."""
    path = tmp_path / f"news{suffix}"
    path.write_bytes(COMPRESSORS[name](b"id,title\n1,Floods\n" * 50))
    with pytest.raises(InputError, match=rf"a compressed file \({name}\).*decompress it first") as info:
        read_table(path)
    assert info.value.file == str(path) and "UTF-8" not in str(info.value)


def test_a_header_starting_like_a_magic_number_is_still_text(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("BZh9,PK\n1,2\n", encoding="utf-8")
    assert read_table(tmp_path / "t.csv").columns.tolist() == ["BZh9", "PK"]


def test_parquet_with_a_duplicate_column_names_it(tmp_path: Path) -> None:
    table = pa.Table.from_arrays(
        [pa.array(["1"]), pa.array(["a"]), pa.array(["b"])], ["id", "title", "title"]
    )
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(InputError, match="two columns of this name") as info:
        read_table(tmp_path / "d.parquet")
    assert info.value.field == "title" and "corrupt" not in str(info.value)


def test_csv_header_with_trailing_empty_names_says_so_by_position(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("id,title,,\n1,A,,\n2,B,,\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"the header has empty column names \(columns 3, 4 of 4") as info:
        read_table(tmp_path / "t.csv")
    assert info.value.field is None and info.value.row is None
    (tmp_path / "d.csv").write_text("id,title,title\n1,A,B\n", encoding="utf-8")  # a named twice: as before
    with pytest.raises(InputError, match="the header names this column twice") as info:
        read_table(tmp_path / "d.csv")
    assert info.value.field == "title"
    (tmp_path / "one.csv").write_text("id,title,\n1,A,\n", encoding="utf-8")  # one empty name: read as before
    assert read_table(tmp_path / "one.csv").columns.tolist() == ["id", "title", ""]


@pytest.mark.parametrize(
    ("line", "field", "what"),
    [
        ('{"id": "b", "title": "Floods \\ud83c in the north"}', "title", "U+D83C"),
        ('{"id": "b", "title": "Floods", "tags": ["ok", "\\udc00"]}', "tags", "U+DC00"),
        ('{"id": "b", "title": "Floods", "ta\\ud800g": "x"}', None, "U+D800 in a column name"),
    ],
)
def test_jsonl_lone_surrogate_escape_is_refused_by_row_and_field(
    tmp_path: Path, line: str, field: str | None, what: str
) -> None:
    """JSON may escape half of a surrogate pair (a text cut between the two halves of an emoji); Python reads
    it as a lone surrogate, which pandas, Parquet and the report's writers refuse later with a traceback."""
    from nlsim.io.corpus import load_corpus

    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "title": "Storm"}\n' + line + "\n", encoding="utf-8")
    expected = f"row 2.*holds {re.escape(what)} \\(line 2\\), half of a UTF-16"
    with pytest.raises(InputError, match=expected) as info:
        load_corpus(path, text_fields=("title",))
    assert info.value.row == 2 and info.value.field == field


def test_parquet_text_that_is_not_utf8_is_refused_by_row_and_column(tmp_path: Path) -> None:
    """A Parquet writer that does not check its text can store other bytes under a string type; pandas
    fails on them later, without naming the row."""
    from nlsim.io.corpus import load_corpus

    data = b"ok" + b"Storm" + b"caf\xe9"  # Latin-1 bytes
    offsets = pa.array([0, 2, 7, 11], pa.int32()).buffers()[1]
    titles = pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(data)])
    pq.write_table(pa.table({"id": ["a", "b", "c"], "title": titles}), tmp_path / "c.parquet")
    with pytest.raises(InputError, match=r"row 3, field 'title': not valid UTF-8 text: byte 0xe9 at byte 3"):
        load_corpus(tmp_path / "c.parquet", text_fields=("title",))


ARRAYS = ['[\n  {"id": "a", "title": "Storm", "n": 1},\n  {"id": "b", "title": "Floods", "n": null}\n]\n']
ARRAYS += ['[{"id": "a", "title": "Storm", "n": 1}, {"id": "b", "title": "Floods", "n": null}]', "\n[\n]\n"]


@pytest.mark.parametrize("text", ARRAYS, ids=["pretty-printed", "one-line", "empty"])
def test_a_json_array_of_objects_is_read_as_its_rows(tmp_path: Path, text: str) -> None:
    """A CMS's .json export (and ``df.to_json(orient="records")``) is one array of objects, pretty-printed
    or on one line: its elements are the rows, read as the same rows written as JSON Lines are."""
    (tmp_path / "c.json").write_text("\ufeff" + text, encoding="utf-8")
    rows = json.loads(text)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    frame = read_table(tmp_path / "c.json")
    pd.testing.assert_frame_equal(frame, read_table(tmp_path / "c.jsonl"))
    if rows:
        assert frame["id"].tolist() == ["a", "b"] and frame["n"].tolist() == [1, None]


def test_pandas_records_json_is_read_back_as_written(tmp_path: Path) -> None:
    """``to_json(orient="records")``: the ids, titles and integers as the frame held them."""
    written = pd.DataFrame({"id": [101, 102], "title": ["颱風凱米登陸", 'He said "no"'], "views": [3, 4]})
    written.to_json(tmp_path / "c.json", orient="records", force_ascii=False)
    frame = read_table(tmp_path / "c.json")
    assert frame.to_dict("records") == written.to_dict("records")


ARRAY_FAULTS = [
    (
        '[{"id": "a"},\n {"id": "b", "title": "x", "title": "y"}]',
        2,
        "title",
        "names this field twice (line 2)",
    ),
    (
        '[{"id": "a"},\n\n ["b", "Storm"]]',
        2,
        None,
        "each element of the JSON array must be an object (line 3)",
    ),
    ('[{"id": "a"},\n {"id": "b", "tit', 2, None, "invalid JSON in the array (line 2; cut short?)"),
    ('[{"id": "a"}\n {"id": "b"}]', 1, None, "',' or ']' expected after the element"),
    ('[{"id": "a"},\n {"id": "b"}', 2, None, "cut short"),
    ('[{"id": "a"},\n {"id": "\\ud83c"}]', 2, "id", "holds U+D83C (line 2)"),
    ('[{"id": "a"}]\n[{"id": "b"}]\n', None, None, "text after the JSON array (line 2)"),
]


@pytest.mark.parametrize(("text", "row", "field", "reason"), ARRAY_FAULTS)
def test_a_bad_element_of_a_json_array_is_named_by_its_row_and_line(
    tmp_path: Path, text: str, row: int | None, field: str | None, reason: str
) -> None:
    """Each element is checked as a JSON Lines row is, counted from 1, with the line it starts on."""
    (tmp_path / "c.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(reason)) as info:
        read_table(tmp_path / "c.json")
    assert (info.value.row, info.value.field) == (row, field)


def test_an_element_that_is_no_object_is_a_broken_row_the_others_read(tmp_path: Path) -> None:
    """Where bad rows are kept aside (``--quarantine``), an element that is not an object is one, as a JSON
    Lines line that is not an object is; the rows after it keep their numbers."""
    (tmp_path / "c.json").write_text('[{"id": "a"}, 7, {"id": "c"}]', encoding="utf-8")
    broken: list[BrokenRow] = []
    assert read_table(tmp_path / "c.json", broken=broken)["id"].tolist() == ["a", "c"]
    assert [(b.error.row, b.text) for b in broken] == [(2, "7")]


WRAPPED = {"items": [{"id": "a", "title": "Storm"}], "meta": {"page": 1}}
OTHER_JSON = [
    (json.dumps(WRAPPED), "one JSON object holding the rows under 'items', not rows"),
    (json.dumps(WRAPPED, indent=2), "one JSON object holding the rows under 'items', not rows"),
    (json.dumps({"id": "a", "title": "Storm"}, indent=2), "one JSON object written over several lines"),
    (
        json.dumps({"id": "a", "title": "Storm"}, indent=2) + "\n" + json.dumps({"id": "b"}, indent=2) + "\n",
        "JSON objects written over several lines each (as jq writes them without -c)",
    ),
]


@pytest.mark.parametrize(
    "text", OTHER_JSON, ids=["wrapped", "wrapped-pretty", "one-object-pretty", "objects-pretty"]
)
def test_a_json_object_that_is_not_rows_is_refused_as_such(tmp_path: Path, text: tuple[str, str]) -> None:
    """An API's answer wrapping the rows in an object, or one object pretty-printed, is said to be so (with
    how to write the rows), not read as one row of a column ``items`` nor blamed on its first line."""
    (tmp_path / "c.json").write_text(text[0], encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(text[1])) as info:
        read_table(tmp_path / "c.json")
    assert info.value.row is None


def test_a_jsonl_row_holding_a_list_of_objects_is_a_row(tmp_path: Path) -> None:
    """A row with a field of objects (its entities) is no wrapper of rows."""
    (tmp_path / "c.jsonl").write_text('{"id": "a", "tags": [{"k": 1}]}\n', encoding="utf-8")
    assert read_table(tmp_path / "c.jsonl")["id"].tolist() == ["a"]


def test_a_jsonl_object_naming_a_field_twice_is_refused_by_row_and_field(tmp_path: Path) -> None:
    """JSON keeps the last of two values of one name, so the first title was dropped without a word (a CSV
    header naming a column twice is refused already)."""
    path = tmp_path / "c.jsonl"
    lines = ['{"id": "a", "title": "Storm"}', '{"id": "b", "title": "Floods", "title": "Floods, later"}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = r"row 2, field 'title': the JSON object names this field twice \(line 2\)"
    with pytest.raises(InputError, match=expected) as info:
        read_table(path)
    assert info.value.row == 2


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_file_is_named_as_such(tmp_path: Path, encoding: str) -> None:
    """Excel's 'Unicode Text' is UTF-16 with a byte-order mark: said so, not blamed on byte 0xff of the
    header."""
    path = tmp_path / "c.txt"
    text = "id\ttitle\r\n1\t颱風凱米登陸\r\n"
    path.write_bytes(text.encode(encoding) if encoding == "utf-16" else b"\xfe\xff" + text.encode(encoding))
    with pytest.raises(InputError, match=r"c\.txt: a UTF-16 text file .*save it as UTF-8") as info:
        read_table(path)
    assert info.value.row is None


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_a_parquet_file_under_a_text_tables_name_is_named_as_parquet(tmp_path: Path, suffix: str) -> None:
    """Not "not valid UTF-8 text in the header ... save the file as UTF-8": it is a Parquet file."""
    path = tmp_path / f"pairs{suffix}"
    pd.DataFrame({"text_a": ["A"], "text_b": ["B"], "score": [1.0]}).to_parquet(path)
    words = r"a Parquet file \(it begins with PAR1\).*name it \.parquet"
    with pytest.raises(InputError, match=words) as info:
        read_table(path)
    assert info.value.file == str(path) and "UTF-8" not in str(info.value)


@pytest.mark.parametrize("suffix", [".pq", ".parquet"])
def test_a_damaged_parquet_file_under_a_parquet_name_is_named_damaged(tmp_path: Path, suffix: str) -> None:
    """A truncated Parquet file named .pq (a Parquet suffix) is not told to be renamed .parquet: it is
    damaged, as under .parquet."""
    whole = tmp_path / "whole.parquet"
    pd.DataFrame({"id": ["a", "b"], "title": ["Floods in Taipei", "Rain"]}).to_parquet(whole)
    path = tmp_path / f"corpus{suffix}"
    path.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(InputError, match=r"cannot read as Parquet \(truncated or corrupt\?\)") as info:
        read_table(path)
    assert "name it" not in str(info.value)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_an_excel_workbook_under_a_tables_name_is_named_as_a_workbook(tmp_path: Path, suffix: str) -> None:
    """Not "a compressed file (zip) ... decompress it first" (nothing to decompress): a workbook, to save
    as CSV."""
    book = tmp_path / "pairs.xlsx"
    pd.DataFrame({"text_a": ["A"], "text_b": ["B"], "score": [1.0]}).to_excel(book, index=False)
    path = book.rename(tmp_path / f"pairs{suffix}")
    words = r"a spreadsheet workbook \(\.xlsx\).*save it as CSV UTF-8"
    with pytest.raises(InputError, match=words) as info:
        read_table(path)
    assert "decompress" not in str(info.value) and "corrupt" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "kind", "suffix"),
    [
        ("text_a\ttext_b\tscore\nA\tB\t1\n", "tab-separated", ".tsv"),
        ("text_a,text_b,score\nA,B,1\n", "comma-separated", ".csv"),
        ('{"text_a": "A", "text_b": "B", "score": 1}\n', "JSON Lines", ".jsonl"),
    ],
)
def test_a_text_table_under_a_parquet_name_is_named_as_text(
    tmp_path: Path, text: str, kind: str, suffix: str
) -> None:
    """Not "cannot read as Parquet (truncated or corrupt?)": a text table, and the name to give it."""
    (tmp_path / "pairs.parquet").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=rf"a {kind} text file .*not Parquet: name it \{suffix}$"):
        read_table(tmp_path / "pairs.parquet")
    (tmp_path / "broken.parquet").write_bytes(bytes(range(256)) * 4)  # binary: still a damaged Parquet file
    with pytest.raises(InputError, match="cannot read as Parquet"):
        read_table(tmp_path / "broken.parquet")


@pytest.mark.parametrize(
    "name,encoding",
    [("news.csv", "cp950"), ("news.tsv", "cp950"), ("news.csv", "gb18030"), ("news.jsonl", "cp950")],
)
def test_a_file_saved_in_a_chinese_windows_encoding_is_refused_saying_how_to_convert_it(
    tmp_path: Path, name: str, encoding: str
) -> None:
    """Excel on a Traditional-Chinese Windows saves "CSV" in Big5 (cp950), on a Simplified-Chinese one in
    GB18030: the refusal said only "save the file as UTF-8", where the one who reads it wants the encoding
    nlsim expects and a command that converts the file, named as it is."""
    rows = [("n1", "颱風凱米今晚登陸"), ("n2", "台積電營收創新高")]
    if name.endswith(".jsonl"):
        text = "".join(f'{{"id": "{i}", "title": "{t}"}}\r\n' for i, t in rows)
    else:
        sep = "\t" if name.endswith(".tsv") else ","
        text = f"id{sep}title\r\n" + "".join(f"{i}{sep}{t}\r\n" for i, t in rows)
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    with pytest.raises(InputError) as info:
        read_table(path)
    message = str(info.value)
    assert info.value.row == 1 and info.value.field == "title", message
    assert "UTF-8" in message and "byte 0x" in message
    assert f"iconv -f CP950 -t UTF-8 {name} > news.utf8{Path(name).suffix}" in message, message
    assert "-f GB18030" in message, message
    assert ("CSV UTF-8" in message) == name.endswith(".csv"), message  # Excel saves no UTF-8 TSV or JSONL
    assert "\n" not in message


def test_a_file_saved_in_a_western_windows_encoding_is_refused_naming_it_too(tmp_path: Path) -> None:
    """Excel on an English (or other Western) Windows saves "CSV" in Windows-1252: curly quotes, a dash, an
    accented letter. The refusal named Big5 and GB18030 alone, and its command (``iconv -f CP950``) turned
    such a file into Chinese characters; it names Windows-1252 too."""
    path = tmp_path / "news.csv"
    path.write_bytes("id,title\r\nn1,\u201cCaf\u00e9\u201d chain \u2013 profits up\r\n".encode("cp1252"))
    with pytest.raises(InputError) as info:
        read_table(path)
    message = str(info.value)
    assert info.value.row == 1 and "-f CP1252" in message and "Windows-1252" in message, message


def test_a_utf16_file_is_refused_saying_how_to_convert_it(tmp_path: Path) -> None:
    """Excel's "Unicode Text" (UTF-16 with a byte-order mark): the refusal names the command that
    converts it, as for a Big5 file."""
    path = tmp_path / "news.txt"
    path.write_bytes("id\ttitle\r\nn1\t颱風凱米今晚登陸\r\n".encode("utf-16"))
    with pytest.raises(InputError, match=r"iconv -f UTF-16 -t UTF-8 news\.txt > news\.utf8\.txt"):
        read_table(path)


@pytest.mark.parametrize(
    "encoding,named",
    [("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE"), ("utf-32", "UTF-32")],
)
@pytest.mark.parametrize("name", ["news.csv", "news.tsv"])
def test_a_utf16_file_without_a_byte_order_mark_or_a_utf32_file_is_named_as_such(
    tmp_path: Path, encoding: str, named: str, name: str
) -> None:
    """UTF-16 without a byte-order mark (a database's export, SQL Server's bcp -w) was read as UTF-8, each
    ASCII character followed by a NUL: refused as a row of one field or a missing column named
    '\\x00t\\x00i\\x00t\\x00l\\x00e\\x00', or, all in English, as a header without 'id'. A UTF-32 file was
    called UTF-16 by its byte-order mark, and the iconv command given would have made nonsense of it."""
    sep = "\t" if name.endswith(".tsv") else ","
    text = f"id{sep}title\r\nn1{sep}Floods hit the town\r\nn2{sep}颱風凱米今晚登陸\r\n"
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    with pytest.raises(InputError) as info:
        read_table(path)
    message = str(info.value)
    assert info.value.row is None and info.value.field is None, message
    assert f"a {named[:6]} text file" in message and f"iconv -f {named} -t UTF-8 {name}" in message, message
    assert "\\x00" not in message and "\x00" not in message


@pytest.mark.parametrize("name", ["c.jsonl", "c.json"])
def test_json_nested_past_what_python_reads_is_a_row_error_not_a_traceback(tmp_path: Path, name: str) -> None:
    """A value nested 100,000 arrays deep (a broken or hostile export) made the JSON Lines reader raise
    RecursionError, a traceback; it is an error naming the row and its line, as in a JSON array."""
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"id": "a", "title": "Storm"}\n{"id": "b", "tags": ' + deep + "}\n"
    if name.endswith(".json"):
        text = "[" + text.replace("}\n{", "},\n{").rstrip("\n") + "]"
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2: JSON nested too deeply to read \(line 2\)"):
        read_table(tmp_path / name)


@pytest.mark.slow
def test_a_long_json_array_is_read_in_about_the_time_its_json_lines_take(tmp_path: Path) -> None:
    """Each element's line was counted from the file's start, so a long array took time growing with the
    square of its length (100,000 items: minutes, where JSON Lines take seconds)."""
    import time

    rows = [{"id": f"n{i}", "title": f"Storm number {i} hits the coast"} for i in range(30_000)]
    (tmp_path / "c.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    start = time.perf_counter()
    assert len(read_table(tmp_path / "c.jsonl")) == len(rows)
    lines = time.perf_counter() - start
    start = time.perf_counter()
    assert len(read_table(tmp_path / "c.json")) == len(rows)
    assert time.perf_counter() - start < 10 * lines + 2


def test_parquet_large_string_text_that_is_not_utf8_is_refused_by_row_and_column(tmp_path: Path) -> None:
    """As for a string column: a large_string column (Polars' text, 64-bit offsets) holding other bytes is
    refused naming its row and column, not as 'invalid data' alone."""
    data = b"ok" + b"Storm" + b"caf\xe9"
    offsets = pa.array([0, 2, 7, 11], pa.int64()).buffers()[1]
    titles = pa.Array.from_buffers(pa.large_string(), 3, [None, offsets, pa.py_buffer(data)])
    pq.write_table(pa.table({"id": ["a", "b", "c"], "title": titles}), tmp_path / "c.parquet")
    with pytest.raises(InputError, match=r"row 3, field 'title': not valid UTF-8 text: byte 0xe9 at byte 3"):
        read_table(tmp_path / "c.parquet")
