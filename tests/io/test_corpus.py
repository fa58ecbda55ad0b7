import decimal
import json
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nlsim.errors import ConfigError, InputError
from nlsim.io.corpus import load_corpus, write_quarantine
from nlsim.report.spreadsheet import FORMULA_START
from tests.report.test_spreadsheet import cells_as_a_spreadsheet_splits


def write_csv(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def read_time_cell(tmp_path, written: str) -> list:
    """The times a one-row CSV corpus whose ``published_at`` is ``written`` is read with, in Taipei."""
    write_csv(tmp_path / "c.csv", f'id,title,published_at\na,Floods,"{written}"\n')
    return load_corpus(tmp_path / "c.csv", timezone="Asia/Taipei").frame["published_at"].tolist()


def refused_time_cell(tmp_path, written: str) -> str:
    """The message a one-row CSV corpus whose ``published_at`` is ``written`` is refused with, in Taipei."""
    write_csv(tmp_path / "c.csv", f'id,title,published_at\na,Floods,"{written}"\n')
    with pytest.raises(InputError) as error:
        load_corpus(tmp_path / "c.csv", timezone="Asia/Taipei")
    return str(error.value)


def test_loads_all_three_formats_into_one_schema(tmp_path):
    rows = [
        {
            "id": "a",
            "title": "Floods",
            "description": "Rain",
            "source": "AP",
            "published_at": "2024-05-01T10:00:00+02:00",
        },
        {"id": "b", "title": "Storm", "source": "AFP"},
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "c.parquet")
    pd.DataFrame(rows).to_csv(tmp_path / "c.csv", index=False)
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    frames = [load_corpus(tmp_path / f"c.{ext}").frame for ext in ("parquet", "csv", "jsonl")]
    for frame in frames:
        assert list(frame.columns[:8]) == [
            "id",
            "title",
            "description",
            "body",
            "source",
            "lang",
            "url",
            "published_at",
        ]
        assert frame["id"].tolist() == ["a", "b"]
        assert frame["description"].tolist() == ["Rain", ""]
        assert frame["published_at"].iloc[0] == pd.Timestamp("2024-05-01T08:00:00Z")
        assert pd.isna(frame["published_at"].iloc[1])
    assert load_corpus(tmp_path / "c.csv").texts() == ["Floods Rain", "Storm"]
    assert load_corpus(tmp_path / "c.csv", text_fields=("title",)).texts() == ["Floods", "Storm"]


def test_content_hash_changes_with_text(tmp_path):
    a = load_corpus(write_csv(tmp_path / "a.csv", "id,title\n1,Floods\n2,Storm\n"))
    b = load_corpus(write_csv(tmp_path / "b.csv", "id,title\n1,Floods\n2,Storm warning\n"))
    assert a.content_hashes()[0] == b.content_hashes()[0]
    assert a.content_hashes()[1] != b.content_hashes()[1]


@pytest.mark.parametrize(
    ("name", "content", "row", "field", "reason"),
    [
        ("missing.csv", "id,headline\n1,Floods\n", None, "title", "required column missing"),
        (  # a comma-separated file named .tsv: one column, and the hint says so
            "commas.tsv",
            "id,title\n1,Floods\n",
            None,
            "id",
            "required column missing (columns: id,title); the header holds commas: the file looks "
            "comma-separated, but a .tsv is read tab-separated: rename it .csv",
        ),
        (  # Excel's "Text" export is read as tab-separated: a comma-separated .txt is told so
            "commas.txt",
            "id,title\n1,Floods\n",
            None,
            "id",
            "required column missing (columns: id,title); the header holds commas: the file looks "
            "comma-separated, but a .txt is read tab-separated: rename it .csv",
        ),
        (
            "dup.csv",
            "id,title\n1,Floods\n2,Storm\n1,Fire\n",
            3,
            "id",
            "duplicate id '1' (first seen at row 1)",
        ),
        ("empty.csv", "id,title\n1,Floods\n2,   \n", 2, "title", "empty text"),
        (  # a zero-width space, a soft hyphen, a byte-order mark: nothing a reader sees
            "invisible.jsonl",
            '{"id": "1", "title": "Floods"}\n{"id": "2", "title": "\\u200b\\u00ad \\ufeff"}\n',
            2,
            "title",
            "empty text (only invisible characters: U+0020, U+00AD, U+200B, U+FEFF)",
        ),
        ("noid.csv", "id,title\n1,Floods\n,Storm\n", 2, "id", "empty id"),
        (
            "time.csv",
            "id,title,published_at\n1,Floods,yesterday-ish\n",
            1,
            "published_at",
            "is neither year first",
        ),
        (
            "month13.csv",
            "id,title,published_at\n1,Floods,2024-13-01\n",
            1,
            "published_at",
            "is no day or time of the calendar",
        ),
        (
            "nontext.jsonl",
            '{"id": "1", "title": "Floods"}\n{"id": "2", "title": 42}\n',
            2,
            "title",
            "not text",
        ),
        ("trunc.jsonl", '{"id": "1", "title": "Floods"}\n{"id": "2", "tit', 2, None, "invalid JSON"),
        ("trunc.csv", 'id,title\n1,Floods\n2,"Storm war', 2, None, "cannot be read as CSV"),
        ("list.jsonl", '{"id": "1", "title": ["a"]}\n', 1, "title", "not text"),
    ],
)
def test_bad_input_names_file_row_and_field(tmp_path, name, content, row, field, reason):
    path = write_csv(tmp_path / name, content)
    with pytest.raises(InputError) as info:
        load_corpus(path)
    err = info.value
    assert err.file == str(path)
    assert err.row == row
    assert err.field == field
    assert reason in err.reason
    assert str(path) in str(err)


def test_truncated_and_garbage_parquet(tmp_path):
    good = tmp_path / "good.parquet"
    pd.DataFrame({"id": [str(i) for i in range(500)], "title": ["t"] * 500}).to_parquet(good)
    data = good.read_bytes()
    (tmp_path / "trunc.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "garbage.parquet").write_bytes(b"not parquet at all")
    for name in ("trunc.parquet", "garbage.parquet"):
        with pytest.raises(InputError, match="cannot read as Parquet"):
            load_corpus(tmp_path / name)


@pytest.mark.parametrize("kind", ["date32", "date64"])
def test_parquet_date_past_year_9999_is_refused_by_row_and_field(tmp_path, kind):
    """A date column whose values were written in another unit (seconds stored as days) holds years no
    date type of Python holds: refused by file, row and field, not a traceback from the conversion."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    days = [19_000, 19_001, 86_400 * 19_000]  # the third: seconds written as days, year 4,496,518
    values = pa.array(days, pa.int32()).cast(pa.date32())
    if kind == "date64":
        values = pa.array([d * 86_400_000 for d in days], pa.int64()).cast(pa.date64())
    table = pa.table({"id": ["a", "b", "c"], "title": ["Floods", "Storm", "Rain"], "published_at": values})
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(InputError, match=r"d\.parquet: row 3, field 'published_at': .*year") as info:
        load_corpus(tmp_path / "d.parquet")
    assert (info.value.row, info.value.field) == (3, "published_at")


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_corpus(tmp_path / "nope.csv")
    (tmp_path / "x.xml").write_text("<a/>")
    with pytest.raises(InputError, match="unknown table format"):
        load_corpus(tmp_path / "x.xml")


def test_non_utf8_csv(tmp_path):
    (tmp_path / "latin.csv").write_bytes("id,title\n1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="not valid UTF-8"):
        load_corpus(tmp_path / "latin.csv")


def test_quarantine_keeps_good_rows_and_records_bad_ones(tmp_path):
    path = write_csv(tmp_path / "mixed.csv", "id,title\n1,Floods\n2,\n1,Dup\n3,Storm\n")
    q = tmp_path / "quarantine.csv"
    corpus = load_corpus(path, quarantine=q)
    assert corpus.ids == ["1", "3"]
    bad = pd.read_csv(q)
    assert bad[["row", "field"]].values.tolist() == [[2, "title"], [3, "id"]]
    assert "empty text" in bad["reason"].iloc[0]
    assert "duplicate id" in bad["reason"].iloc[1]
    assert len(corpus.quarantined) == 2


def test_a_quarantined_title_holding_a_separator_cannot_start_a_formula_cell(tmp_path):
    """The quarantine file is opened in a spreadsheet: a bad row's ``;`` or tab stays inside its quoted
    cell where a spreadsheet splits on it (Excel with a ``;`` list separator), and the file reads back."""
    path = write_csv(tmp_path / "news.csv", "id,title\n1,Floods\n,Markets rally;=1+1\n1,Storm\t@SUM(1;1)\n")
    q = tmp_path / "quarantine.csv"
    write_quarantine(load_corpus(path, quarantine=q, deferred=True))
    lines = q.read_text(encoding="utf-8-sig").splitlines()
    for separator in (",", ";", "\t"):
        for line in lines:
            for cell in cells_as_a_spreadsheet_splits(line, separator):
                assert not cell.startswith(FORMULA_START), (separator, line, cell)
    bad = pd.read_csv(q, encoding="utf-8-sig")
    assert bad["raw_title"].tolist() == ["Markets rally;=1+1", "Storm\t@SUM(1;1)"]


def test_an_item_dated_in_the_future_is_a_bad_row_refused_by_row_or_quarantined(tmp_path):
    text = "id,title,published_at\n1,Floods,2024-01-01T00:00Z\n2,,2024-01-01T00:00Z\n3,Typo,2099-01-01\n"
    path = write_csv(tmp_path / "news.csv", text)
    now = pd.Timestamp("2026-01-01", tz="UTC")
    assert load_corpus(path, quarantine=tmp_path / "q.csv").ids == ["1", "3"]  # no limit: no future
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv", not_after=now)
    assert corpus.ids == ["1"]
    bad = pd.read_csv(tmp_path / "q.csv")
    assert bad[["row", "field"]].values.tolist() == [[2, "title"], [3, "published_at"]]
    assert "item 3 is dated in the future (2099-01-01 00:00:00+00:00)" in bad["reason"].iloc[1]
    only_future = write_csv(
        tmp_path / "late.csv", "id,title,published_at\n1,Floods,2024-01-01\n3,Typo,2099-01-01\n"
    )
    with pytest.raises(
        InputError, match=r"late.csv: row 2, field 'published_at': item 3 is dated in the future"
    ):
        load_corpus(only_future, not_after=now)


def test_integer_ids_become_text(tmp_path):
    pd.DataFrame({"id": [10, 11], "title": ["a", "b"]}).to_parquet(tmp_path / "i.parquet")
    assert load_corpus(tmp_path / "i.parquet").ids == ["10", "11"]


def test_bundled_corpora_load(repo_root):
    thuc = load_corpus(repo_root / "data/thucnews.parquet")
    bbc = load_corpus(repo_root / "data/bbc.parquet")
    assert len(thuc) == 10_000 and len(bbc) == 2_225
    assert thuc.frame["id"].is_unique and bbc.frame["id"].is_unique


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_an_empty_id_among_integer_ids_is_blamed_on_its_own_row(tmp_path, fmt):
    """Integer ids with a gap: the empty one is refused by its row; the others load as "1", "2", "4"."""
    ids, titles = [1, 2, None, 4], ["Floods", "Storm", "Quake", "Fire"]
    path = tmp_path / f"c.{fmt}"
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "title": titles}), path)
    else:
        rows = [json.dumps({"id": i, "title": t}) for i, t in zip(ids, titles, strict=True)]
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 3, field 'id': missing id"):
        load_corpus(path)
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["1", "2", "4"]
    assert pd.read_csv(tmp_path / "q.csv")["row"].tolist() == [3]


def test_items_with_a_missing_id_or_text_are_refused_by_row(tmp_path):
    """``load_items`` (drawing pairs, silver pairs) refuses an empty cell instead of reading "None"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nlsim.io.corpus import load_items

    pq.write_table(
        pa.table({"id": pa.array([1, None, 3], pa.int64()), "title": ["a", "b", "c"]}), tmp_path / "i.parquet"
    )
    with pytest.raises(InputError, match=r"row 2, field 'id': missing id"):
        load_items(tmp_path / "i.parquet")
    pq.write_table(pa.table({"id": ["x", "y"], "title": ["a", None]}), tmp_path / "t.parquet")
    with pytest.raises(InputError, match=r"row 2, field 'title': missing text"):
        load_items(tmp_path / "t.parquet")
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int64()), "title": ["a", "b"]}), tmp_path / "ok.parquet"
    )
    assert load_items(tmp_path / "ok.parquet")["id"].tolist() == ["1", "2"]


def test_items_are_read_from_jsonl_and_checked_as_a_corpus_is(tmp_path):
    """``load_items`` reads every corpus format and checks ids and texts by row as ``load_corpus`` does."""
    from nlsim.io.corpus import load_items

    rows = [
        {"id": 1, "title": "Floods", "category": "news"},
        {"id": "b", "title": " Storm ", "category": None},
    ]
    (tmp_path / "ok.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    items = load_items(tmp_path / "ok.jsonl")
    assert items.to_dict("list") == {
        "id": ["1", "b"],
        "text": ["Floods", " Storm "],
        "category": ["news", ""],
    }
    for bad, field, reason in [
        ({"id": 2.5, "title": "x"}, "id", r"id must be text or an integer \(got float\)"),
        ({"id": 3, "title": 42}, "title", r"not text \(got int 42\)"),
        ({"id": 4, "title": "  "}, "title", "empty text"),
        ({"id": "b", "title": "again"}, "id", r"duplicate id 'b' \(first seen at row 2\)"),
    ]:
        (tmp_path / "bad.jsonl").write_text(
            "\n".join(json.dumps(r) for r in [*rows, bad]) + "\n", encoding="utf-8"
        )
        with pytest.raises(InputError, match=rf"row 3, field '{field}': {reason}"):
            load_items(tmp_path / "bad.jsonl")


def test_a_float_id_among_integer_ids_is_blamed_on_its_own_row(tmp_path):
    rows = [json.dumps({"id": 100 + i, "title": f"Story {i}"}) for i in range(9)]
    rows.append(json.dumps({"id": 1.0, "title": "Story 9"}))
    (tmp_path / "c.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 10, field 'id': id must be text or an integer \(got float\)"):
        load_corpus(tmp_path / "c.jsonl")


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("12/05/2024 22:00", "is neither year first"),  # 12 May or 5 December?
        ("113/05/01 08:00", "is neither year first"),  # a Minguo year
        ("now", "is neither year first"),
        ("Wed, 01 May 2024 08:00:00 CST", "names its zone 'CST', not an offset"),  # China's or US Central?
        ("2024-05-01 08:00 HKT", "names its zone 'HKT', not an offset"),
        ("0001-05-01T08:00:00", "is outside the years 1678-2261"),  # a year typed wrong
        ("2300-01-01T00:00:00Z", "is outside the years 1678-2261"),
        # the date parser reads these the POSIX way, 8 hours behind UTC, where a newsroom means ahead
        ("2024-05-01 16:00 GMT+8", r"puts an offset after 'GMT' \('GMT\+8'\), which reads two ways"),
        ("2024-05-01T16:00:00 UTC+08:00", r"puts an offset after 'UTC' \('UTC\+08:00'\)"),
        ("2024-05-01 03:00 GMT-0500", r"puts an offset after 'GMT' \('GMT-0500'\)"),
        ("2024-05-01T08:00:00Z+08:00", r"puts an offset after 'Z' \('Z\+08:00'\)"),
        # a 12-hour clock after a date not year first: was "cannot parse", or "names its zone 'PM'"
        ("5/1/2024 04:52 PM", r"is on a 12-hour clock \('PM'\)"),
        ("5/1/2024 4:52 p.m.", r"is on a 12-hour clock \('p\.m\.'\)"),
    ],
)
def test_a_time_that_would_be_guessed_or_cannot_be_held_is_refused_by_row(tmp_path, written, reason):
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,2024-05-01T08:00:00Z\nb,Storm,"{written}"\n')
    with pytest.raises(
        InputError, match=rf"row 2, field 'published_at': time '?{re.escape(written)}'? {reason}"
    ):
        load_corpus(path)
    quarantined = load_corpus(path, quarantine=tmp_path / "q.csv")  # a bad row, not a crash at the end
    assert quarantined.frame["id"].tolist() == ["a"] and len(quarantined.quarantined) == 1


@pytest.mark.parametrize(
    ("written", "time", "bracket", "todo"),
    [
        (
            "2024-05-01T08:00:00.123456789+01:00[Europe/London]",
            "2024-05-01T08:00:00.123456789+01:00",
            "[Europe/London]",
            "drop it, the offset before it says the time",
        ),
        (
            "2024-05-01T08:00:00+01:00[America/Argentina/Buenos_Aires]",
            "2024-05-01T08:00:00+01:00",
            "[America/Argentina/Buenos_Aires]",
            "drop it, the offset before it says the time",
        ),
        (
            "2024-05-01T08:00:00.000+09:00[Asia/Tokyo][u-ca=japanese]",
            "2024-05-01T08:00:00.000+09:00",
            "[Asia/Tokyo][u-ca=japanese]",
            "drop it, the offset before it says the time",
        ),
        ("2024-05-01T08:00[Europe/London]", "2024-05-01T08:00", "[Europe/London]", "give the offset instead"),
    ],
)
def test_a_time_with_a_zone_in_brackets_is_refused_naming_the_brackets_whole(
    tmp_path, written, time, bracket, todo
):
    """A time as Java writes it, its zone in brackets after the offset, was refused with the value cut at 40
    characters (``...+01:00[Eur``) and named the last word in it as the zone (``'London'``, ``'Aires'``,
    ``'japanese'``): the reader could not see what was wrong. It names the time and the brackets whole."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,2024-05-01T08:00:00Z\nb,Storm,"{written}"\n')
    with pytest.raises(InputError) as caught:
        load_corpus(path)
    assert f"row 2, field 'published_at': time {time!r} ends with {bracket!r}" in str(caught.value)
    assert todo in str(caught.value)


@pytest.mark.parametrize(
    "written",
    [
        "2024-05-01T16:00:00+08:00",
        "2024-05-01 16:00+0800",
        "2024-05-01T08:00:00Z",
        "2024-05-01t08:00:00z",
        "2024-05-01 08:00:00 UTC",  # a BigQuery export
        "2024-05-01T08:00:00 GMT",
        "2024/05/01 08:00",  # Excel in Taiwan or China: year first, read one way only
        "2024/5/1 8:00",
        "20240501T080000Z",
        "2024-05-01T08:00:00,000Z",
        "2024-05-01 16:00:00.000000000+0800",  # pyarrow's text of a timestamp
        "Wed, 01 May 2024 08:00:00 GMT",  # RSS
        "Wed, 01 May 2024 16:00:00 +0800",
        "Wed, 01 May 2024 16:00:00 +08:00",
        "Wed, 01 May 2024 03:00:00 -05:00",
    ],
)
def test_times_written_year_first_or_in_rfc_2822_are_read_with_their_offset(tmp_path, written):
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,A,"{written}"\nb,B,NaT\n')
    times = load_corpus(path).frame["published_at"]
    assert times.iloc[0] == pd.Timestamp("2024-05-01T08:00:00Z") and pd.isna(times.iloc[1])


@pytest.mark.parametrize(
    ("header", "text"),
    [
        ("Published_At", "id,title,Published_At\n1,Floods,2024-05-01\n"),
        ("published_at ", "id,title,published_at \n1,Floods,2024-05-01\n"),
        ("published-at", "id,title,published-at\n1,Floods,2024-05-01\n"),
        ("Description", "id,title,Description\n1,Floods,In the north\n"),
        ("ID", "ID,title\n1,Floods\n"),
    ],
)
def test_a_schema_column_spelt_otherwise_is_refused(tmp_path, header, text):
    """Read as an extra column, a misspelt published_at or description would be left out without a word."""
    path = tmp_path / "c.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(
        InputError, match=rf"field '{re.escape(header)}': column '{re.escape(header)}' is spelt"
    ):
        load_corpus(path)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_number_is_not_a_time(tmp_path, fmt):
    """An epoch number has no unit: refused by its row, never read as nanoseconds after 1970."""
    frame = pd.DataFrame({"id": ["a", "b"], "title": ["Floods", "Storm"], "published_at": [None, 1704067200]})
    path = tmp_path / f"c.{fmt}"
    if fmt == "jsonl":
        rows = [{"id": "a", "title": "Floods"}, {"id": "b", "title": "Storm", "published_at": 1704067200}]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        frame.astype({"published_at": "Int64"}).to_parquet(path)
    with pytest.raises(
        InputError, match=r"row 2, field 'published_at': a number \(1704067200\) is not a time"
    ):
        load_corpus(path)


def test_columns_that_look_like_schema_fields_are_named_in_a_warning(tmp_path):
    """A `pub_date` column is not `published_at`: it is kept and not read (no dates), and the load says so,
    naming the field to rename it to; a lookalike beside the real field (thucnews' `title_zh_cn`, a
    `headline` beside `title`) is an extra column, no warning."""
    path = write_csv(
        tmp_path / "news.csv",
        "id,title,pub_date,Summary,Link,headline\n1,Floods,2024-05-01T10:00Z,Rain,http://x/1,Floods!\n",
    )
    corpus = load_corpus(path)
    assert corpus.frame["published_at"].isna().all() and corpus.frame["description"].tolist() == [""]
    named = {w.split("'")[1]: w.split("'")[3] for w in corpus.warnings}
    assert named == {"pub_date": "published_at", "Summary": "description", "Link": "url"}
    assert all(w.startswith(f"{path}: column ") for w in corpus.warnings)
    clean = write_csv(
        tmp_path / "ok.csv", "id,title,title_zh_cn,published_at\n1,Floods,x,2024-05-01T10:00Z\n"
    )
    assert load_corpus(clean).warnings == ()


def test_a_missing_title_names_the_column_that_looks_like_it_and_the_schema(tmp_path):
    path = write_csv(tmp_path / "news.csv", "id,headline\n1,Floods\n")
    with pytest.raises(InputError) as err:
        load_corpus(path)
    text = str(err.value)
    assert "field 'title': required column missing" in text
    assert "column 'headline' looks like it: rename it 'title'" in text and "published_at:" in text


@pytest.mark.parametrize("ch", ["\x1f", "\x00", "\x1b", "\u2028"])
def test_an_id_holding_a_control_character_is_refused_by_row(tmp_path, ch):
    """An item id is one of the two halves of a pair id (joined by U+001F): a control character or line
    separator in it is refused (quarantined with ``--quarantine``), never read as another id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nlsim.io.corpus import load_items

    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["a", f"a{ch}b"], "title": ["one", "two"]}), path)
    with pytest.raises(InputError, match=rf"row 2, field 'id': .*U\+{ord(ch):04X}"):
        load_corpus(path)
    with pytest.raises(InputError, match=r"row 2, field 'id'"):
        load_items(path)
    kept = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert kept.frame["id"].tolist() == ["a"] and len(kept.quarantined) == 1


def test_the_quarantine_file_keeps_a_formula_as_text(tmp_path):
    """The quarantine CSV is opened in a spreadsheet to fix the rows: a raw value a spreadsheet would run
    as a formula is written with an apostrophe in front (as pairs.csv does), the rest as they were."""
    evil = '=HYPERLINK("http://evil.example/","x")'
    path = tmp_path / "news.csv"
    quoted = evil.replace('"', '""')
    path.write_text(f'id,title,published_at\nn1,Floods,2024-05-01T08:00:00Z\nn2,"{quoted}",soon\n')
    q = tmp_path / "q.csv"
    load_corpus(path, quarantine=q)
    row = pd.read_csv(q, dtype=str, keep_default_na=False).iloc[0]
    assert row["raw_title"] == "'" + evil and row["raw_id"] == "n2" and row["row"] == "2"


def test_the_quarantine_file_begins_with_a_byte_order_mark_so_a_spreadsheet_reads_cjk_text(tmp_path):
    """As pairs.csv and members.csv: without the mark Excel reads a UTF-8 CSV in the machine's code page, and
    a quarantined Chinese headline shows as mojibake. The file is still recognised as a quarantine file
    (written over by the next run) and read back as before."""
    from nlsim.io.ownership import is_quarantine_file

    path = write_csv(tmp_path / "news.csv", "id,title\nn1,颱風凱米登陸\nn1,颱風凱米登陸 全台停班停課\n")
    q = tmp_path / "q.csv"
    load_corpus(path, quarantine=q)
    assert q.read_bytes().startswith(b"\xef\xbb\xbfrow,field,reason,")
    assert is_quarantine_file(q)
    assert pd.read_csv(q)["raw_title"].tolist() == ["颱風凱米登陸 全台停班停課"]
    load_corpus(path, quarantine=q)  # its own file: replaced


@pytest.mark.parametrize(
    ("written", "naive"),
    [
        ("2026/11/25 16:52", True),  # a CMS export: the newsroom's clock, no offset
        ("2026-11-25T16:52:00", True),
        ("Wed, 25 Nov 2026 16:52:00", True),  # RFC 2822 without its zone
        ("2026年11月25日 16:52", True),  # Chinese and Japanese CMS exports: year first, read one way only
        ("2026年11月25日16:52:00", True),
        ("2026 年 11 月 25 日 16:52", True),
        ("2026年11月25日 16:52:00+08:00", False),
        ("2026-11-25T16:52:00+08:00", False),
        ("2026-11-25T08:52:00Z", False),
    ],
)
def test_a_time_without_an_offset_is_read_in_the_runs_time_zone_and_counted(tmp_path, written, naive):
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\nb,Storm,\n')
    corpus = load_corpus(path, timezone="Asia/Taipei")
    assert corpus.frame["published_at"].iloc[0] == pd.Timestamp("2026-11-25T08:52:00Z")
    assert corpus.naive_times == int(naive)
    if naive:
        (note,) = corpus.notes
        # of the 1 time written: the undated item b has no time to read
        said = "1 of 1 published_at times have no offset: read as Asia/Taipei time (--timezone)"
        assert note == f"{path}: {said}"
    else:
        assert corpus.notes == ()
    # UTC, the default: the same cell is UTC's clock, and still counted
    utc = load_corpus(path)
    assert utc.naive_times == int(naive) and utc.timezone == "UTC"


def test_a_naive_time_a_daylight_saving_change_skips_or_repeats_is_refused_by_row(tmp_path):
    path = tmp_path / "c.csv"
    rows = ["a,A,2024-03-31 12:00", "b,B,2024-10-27 01:30", "c,C,2024-03-31 01:30"]
    path.write_text("id,title,published_at\n" + "\n".join(rows) + "\n")
    repeated = r"row 2, field 'published_at': .* clocks of Europe/London repeat it"
    with pytest.raises(InputError, match=repeated):
        load_corpus(path, timezone="Europe/London")
    q = load_corpus(path, timezone="Europe/London", quarantine=tmp_path / "q.csv")
    assert q.frame["id"].tolist() == ["a"] and "skip it" in q.quarantined["reason"].iloc[1]
    assert load_corpus(path).naive_times == 3  # UTC has no such hour


@pytest.mark.parametrize("zone", ["Asia/Taipai", "Europe", "America/Argentina"])
def test_a_bad_time_zone_is_refused(tmp_path, zone):
    """A zone the database lacks is refused by name; so is a folder of the database (``Europe``, the region
    of ``Europe/London``), which ended the run in the operating system's words (``.../zoneinfo/Europe: Is a
    directory``), naming neither the option nor what to give."""
    path = tmp_path / "c.csv"
    path.write_text("id,title\na,A\n")
    with pytest.raises(ConfigError, match=f"--timezone '{zone}': not a time zone name"):
        load_corpus(path, timezone=zone)


@pytest.mark.parametrize(
    ("zone", "said"),
    [
        ("asia/taipei", "did you mean 'Asia/Taipei'?"),  # a zone's name is read in its case
        ("europe/london", "did you mean 'Europe/London'?"),
        ("Asia/Taipei ", "did you mean 'Asia/Taipei'?"),
        ("utc", "did you mean 'UTC'?"),
        ("UTC+8", "an offset, not a time zone: name the place's zone (Asia/Taipei for UTC+08:00)"),
        ("+08:00", "an offset, not a time zone"),
        ("GMT-5", "an offset, not a time zone"),
    ],
)
def test_a_time_zone_named_in_another_case_or_as_an_offset_is_refused_naming_what_to_give(
    tmp_path, zone, said
):
    """``--timezone asia/taipei`` (the zone database's names are read in their case) or ``--timezone UTC+8``
    was refused as "not a time zone name (e.g. Asia/Taipei, UTC)", which left the user to find the zone's
    spelling: the message names the zone that is the name in another case, or says an offset is no zone."""
    path = tmp_path / "c.csv"
    path.write_text("id,title\na,A\n")
    with pytest.raises(ConfigError) as caught:
        load_corpus(path, timezone=zone)
    message = str(caught.value)
    assert f"--timezone {zone!r}: not a time zone name" in message and said in message, message


@pytest.mark.parametrize("zone", ["2024-05-01T08:00:00.123456789+01:00[Europe/London]", "[Europe/London]"])
def test_a_time_zone_given_in_brackets_is_refused_naming_the_zone_to_give(tmp_path, zone):
    """``--timezone`` given a time as Java writes it, or its bracketed zone, was refused as "not a time zone
    name (e.g. Asia/Taipei, UTC)"; the message names the zone in its brackets now, the value to give."""
    path = tmp_path / "c.csv"
    path.write_text("id,title\na,A\n")
    with pytest.raises(ConfigError) as caught:
        load_corpus(path, timezone=zone)
    assert str(caught.value).endswith(
        f"--timezone {zone!r}: not a time zone name; the zone in its brackets is: Europe/London"
    )


@pytest.mark.parametrize(("zone", "offset"), [("Etc/GMT+8", "UTC-08:00"), ("Etc/GMT-8", "UTC+08:00")])
def test_a_time_zone_named_by_posixs_sign_is_refused(tmp_path, zone, offset):
    """``--timezone Etc/GMT+8`` is UTC-08:00 (the zone database keeps POSIX's sign), where a newsroom in
    Taipei writing it means UTC+08:00: its CMS times without an offset were read 16 hours off, and the run's
    day with them, while the run said only "read as Etc/GMT+8 time". Both signs are now refused (a time
    written with GMT+8 is, for the same reason), naming the offset the zone is, before anything is read."""
    from nlsim.dedup.config import DedupConfig

    path = tmp_path / "c.csv"
    path.write_text("id,title,published_at\na,A,2026-11-25 16:52\n")
    with pytest.raises(
        ConfigError,
        match=rf"--timezone '{re.escape(zone)}' is {re.escape(offset)}, 8 hours .* name the place's zone",
    ):
        load_corpus(path, timezone=zone)
    with pytest.raises(ConfigError, match=rf"--timezone '{re.escape(zone)}' is {re.escape(offset)}"):
        DedupConfig.of(corpus=str(path), out=str(tmp_path / "out"), timezone=zone, threshold=0.9)
    for fine in ("Etc/GMT", "Etc/GMT+0", "Asia/Taipei"):
        assert load_corpus(path, timezone=fine).naive_times == 1


@pytest.mark.parametrize("zone", ["localtime", "posixrules"])
def test_a_time_zone_that_names_the_machines_setting_is_refused(tmp_path, monkeypatch, zone):
    """``--timezone localtime`` was taken: it names whatever zone the machine running the command is set to,
    so one deployment moved to another host read its CMS times, its days and a daily state's clock
    another way, while the run said only "read as localtime time". It is now refused, before anything is
    read, pointing at an IANA name and naming the zone this machine is set to where it can be told."""
    from nlsim.dedup.config import DedupConfig

    path = tmp_path / "c.csv"
    path.write_text("id,title,published_at\na,A,2026-11-25 16:52\n")
    monkeypatch.setenv("TZ", "Asia/Taipei")
    words = rf"--timezone '{zone}' names the zone of the machine that runs it .* IANA .*Asia/Taipei"
    with pytest.raises(ConfigError, match=words):
        load_corpus(path, timezone=zone)
    with pytest.raises(ConfigError, match=words):
        DedupConfig.of(corpus=str(path), out=str(tmp_path / "out"), timezone=zone, threshold=0.9)
    monkeypatch.setenv("TZ", ":/nowhere/zone")  # a zone that cannot be told: the line says to name one
    with pytest.raises(ConfigError, match=rf"--timezone '{zone}' .* IANA") as err:
        load_corpus(path, timezone=zone)
    assert "nowhere" not in str(err.value) and "\n" not in str(err.value)


def test_titles_holding_the_replacement_character_are_named_in_a_warning(tmp_path):
    path = tmp_path / "c.csv"
    rows = [f"n{i},Caf\ufffd {i}," for i in range(7)] + ["ok,Fine,", "d,Fine too,Desc \ufffd"]
    path.write_text("id,title,description\n" + "\n".join(rows) + "\n", encoding="utf-8")
    corpus = load_corpus(path)
    (warning,) = corpus.warnings
    assert warning.startswith(f"{path}: 8 item(s) hold U+FFFD")
    assert "in title, description" in warning and warning.endswith("ids n0, n1, n2, n3, n4 ...")
    assert len(corpus) == 9  # kept as they are
    path.write_text("id,title\na,Clean\n")
    assert load_corpus(path).warnings == ()


def _misread(text: str, encoding: str) -> str:
    """``text``'s UTF-8 bytes as a program reading them as ``encoding`` shows them (cp1252's five unused
    bytes as the C1 controls Windows and MySQL's latin1 read them as)."""
    raw = text.encode("utf-8")
    if encoding != "cp1252":
        return raw.decode(encoding)
    return "".join(
        chr(b) if b in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else bytes([b]).decode("cp1252") for b in raw
    )


@pytest.mark.parametrize("encoding", ["cp1252", "gb18030"])
def test_titles_that_are_utf8_misread_and_saved_again_are_named_in_a_warning(tmp_path, encoding):
    """A UTF-8 export without a byte-order mark opened in Excel on an English (cp1252) or a Simplified-
    Chinese (GB18030) Windows shows, and saves again as UTF-8, 'é¢±é¢¨…' for '颱風…': valid UTF-8, it was
    embedded and reported with exit status 0 and not a word. The load now says so, as for U+FFFD: how many,
    in which fields, the first ids, and what the first text was; the items are kept as they are."""
    titles = ["颱風凱米今晚登陸 全台停班停課", "颱風過後 全台停班停課", "台北市長今日宣布"]
    path = tmp_path / "news.csv"
    rows = [f'n{i},"{_misread(t, encoding)}"' for i, t in enumerate(titles)] + ["ok,股市大漲 台股創新高"]
    path.write_text("id,title\n" + "\n".join(rows) + "\n", encoding="utf-8")
    corpus = load_corpus(path)
    (warning,) = corpus.warnings
    assert warning.startswith(f"{path}: 3 item(s) hold text that reads as UTF-8 misread as {encoding}"), (
        warning
    )
    assert "in title" in warning and "ids n0, n1, n2" in warning and titles[0] in warning
    assert len(corpus) == 4 and corpus.frame["title"].iloc[0] == _misread(titles[0], encoding)


def test_titles_in_latin_and_chinese_scripts_are_not_taken_for_misread_utf8(tmp_path):
    """Real text in every script the newsroom writes (accented Latin, Traditional and Simplified Chinese,
    a short title of one character) gives no such warning."""
    path = tmp_path / "news.csv"
    titles = [
        "Café Müller über alles",
        "说",
        "说话",
        "颱風凱米今晚登陸",
        "台积电第二季营收创新高",
        "Señor José",
    ]
    path.write_text("id,title\n" + "".join(f"n{i},{t}\n" for i, t in enumerate(titles)), encoding="utf-8")
    assert load_corpus(path).warnings == ()


def test_short_chinese_titles_whose_bytes_happen_to_be_utf8_are_not_taken_for_misread_utf8(tmp_path):
    """A few Chinese characters' GB18030 or Big5 bytes can be valid UTF-8 of other letters (``訊息通知`` in
    GB18030 bytes is ``ӍϢ֪ͨ`` in UTF-8): such titles, 366 of 412,362 three- to eight-character runs of the
    bundled THUCNews titles, were named as misread (and a pair file holding one refused). What they would
    have been is no text (Cyrillic, Armenian and Hebrew letters, combining marks): they are what they say."""
    path = tmp_path / "news.csv"
    titles = ["訊息通知", "視訊通話", "斯斯坦", "小夥為爺", "站一試", "璇組合"]
    path.write_text("id,title\n" + "".join(f"n{i},{t}\n" for i, t in enumerate(titles)), encoding="utf-8")
    assert load_corpus(path).warnings == ()


@pytest.mark.parametrize("kind", ["binary", "large_binary"])
def test_a_parquet_corpus_with_its_text_in_binary_columns_is_read_as_utf8_or_refused_by_row(tmp_path, kind):
    """Hive, Impala and older Spark write text as Parquet binary columns: each item was refused as "not
    text (got bytes b'\\xe9\\xa2...')" (its id as "got bytes"), where a pair file so written was read. Such a
    column is read as UTF-8 text now, and a cell that is not UTF-8 (Big5) is refused by row and field."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kind_of = getattr(pa, kind)()
    titles = ["颱風凱米今晚登陸", "台積電營收創新高"]
    path = tmp_path / "news.parquet"
    columns = {
        "id": pa.array([b"n1", b"n2"], kind_of),
        "title": pa.array([t.encode() for t in titles], kind_of),
    }
    pq.write_table(pa.table(columns), path)
    corpus = load_corpus(path)
    assert corpus.frame["id"].tolist() == ["n1", "n2"] and corpus.frame["title"].tolist() == titles
    columns["title"] = pa.array([titles[0].encode(), titles[1].encode("cp950")], kind_of)
    pq.write_table(pa.table(columns), path)
    with pytest.raises(
        InputError, match=r"news\.parquet: row 2, field 'title': not valid UTF-8 text: byte 0x"
    ):
        load_corpus(path)


def test_the_bundled_corpora_say_which_titles_hold_the_replacement_character(repo_root):
    thuc = load_corpus(repo_root / "data/thucnews.parquet")
    damaged = thuc.frame["title"].str.contains("\ufffd", regex=False)
    assert damaged.sum() > 0
    (warning,) = [w for w in thuc.warnings if "U+FFFD" in w]
    assert f"{int(damaged.sum())} item(s) hold U+FFFD" in warning
    assert thuc.frame.loc[damaged, "id"].iloc[0] in warning


@pytest.mark.parametrize("fields", [("body",), ("description",), ("description", "body")])
def test_text_fields_the_file_lacks_entirely_are_refused_not_embedded_empty(tmp_path, fields):
    path = tmp_path / "news.csv"
    path.write_text("id,title\na,颱風登陸\nb,股市大漲\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(path, text_fields=fields)
    assert err.value.field == fields[0] and "column missing" in err.value.reason
    assert load_corpus(path, text_fields=("title", *fields)).texts() == ["颱風登陸", "股市大漲"]


@pytest.mark.parametrize("cell", ["1700000000", "1714550400000", "1.7e9", "2024", "17000000", "-5"])
def test_a_number_written_as_text_is_not_a_time(tmp_path, cell):
    """A CSV cell of digits is text: a Unix time in seconds or milliseconds is refused by its row as a number
    (not as a year past 9999), while a date written year first in digits alone is read as that date."""
    path = write_csv(tmp_path / "c.csv", f"id,title,published_at\na,Floods,20240501\nb,Storm,{cell}\n")
    with pytest.raises(InputError, match=rf"row 2, field 'published_at': a number \('{re.escape(cell)}'\)"):
        load_corpus(path)
    path = write_csv(
        tmp_path / "d.csv", "id,title,published_at\na,Floods,20240501\nb,Storm,202405010830\nc,Rain,\n"
    )
    read = load_corpus(path).frame["published_at"]
    assert [str(t) for t in read[:2]] == ["2024-05-01 00:00:00+00:00", "2024-05-01 08:30:00+00:00"]


def test_a_file_of_no_row_is_refused_unless_empty_is_allowed_and_jsonl_has_none_without_a_header(
    tmp_path: Path,
) -> None:
    """A day without news: a CSV of its header alone, or a JSONL file of no record (JSONL has no header:
    it was refused as 'required column missing (columns: )')."""
    csv, jsonl = tmp_path / "day.csv", tmp_path / "day.jsonl"
    csv.write_text("id,title,source\n", encoding="utf-8")
    jsonl.write_text("\n", encoding="utf-8")
    for path in (csv, jsonl):
        with pytest.raises(InputError, match=f"{path.name}: the corpus has no rows$"):
            load_corpus(path)
        assert len(load_corpus(path, allow_empty=True).frame) == 0


def test_every_row_rejected_says_why_and_leaves_the_earlier_quarantine_file(tmp_path: Path) -> None:
    """A load whose every row was refused wrote its quarantine file over the one an earlier run had left, and
    failed: a failed load now writes nothing, and its error names the first bad rows' reasons itself."""
    path, q = tmp_path / "news.csv", tmp_path / "q.csv"
    path.write_text("id,title\n,a\nb,\n", encoding="utf-8")
    with pytest.raises(
        InputError,
        match=r"every row was rejected \(2 bad row\(s\): row 1, field 'id': empty id; row 2, field 'title'",
    ):
        load_corpus(path, quarantine=q)
    assert not q.exists()
    earlier = "\ufeffrow,field,reason,raw_id,raw_title\n7,title,empty text,n7,\n".encode()
    q.write_bytes(earlier)
    with pytest.raises(InputError, match=r"q\.csv is left as it was"):
        load_corpus(path, quarantine=q)
    assert q.read_bytes() == earlier


def test_a_deferred_quarantine_file_is_written_only_by_the_run(tmp_path: Path) -> None:
    """``nlsim dedup`` wrote the quarantine file as it loaded the corpus, so a run that failed later (its
    model missing) had replaced the earlier run's file. With ``deferred`` the load writes nothing; the run
    writes the file (atomically) once it has succeeded."""
    from nlsim.io.corpus import write_quarantine

    path, q = tmp_path / "news.csv", tmp_path / "q.csv"
    path.write_text("id,title\na,Floods\nb,\n", encoding="utf-8")
    earlier = "\ufeffrow,field,reason,raw_id,raw_title\n7,title,empty text,n7,\n".encode()
    q.write_bytes(earlier)
    corpus = load_corpus(path, quarantine=q, deferred=True)
    assert corpus.quarantine_path == q and corpus.quarantined["row"].tolist() == [2]
    assert q.read_bytes() == earlier
    assert write_quarantine(corpus) == q
    assert pd.read_csv(q, encoding="utf-8-sig")["row"].tolist() == [2]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left
    assert write_quarantine(load_corpus(write_csv(tmp_path / "ok.csv", "id,title\na,Floods\n"))) is None


def test_an_item_with_nothing_to_embed_is_a_bad_row(tmp_path):
    """With --text-fields description, an item whose description is empty would be embedded as empty text,
    and every such item would be the same vector: a report would put 'Floods' and 'Election results' in one
    story. Such an item is a bad row (named by row and field, or quarantined), as an empty title is."""
    path = write_csv(
        tmp_path / "c.csv",
        "id,title,description\n1,Floods,\n2,Storm,Winds along the coast\n3,Election results,\u200b\n",
    )
    with pytest.raises(InputError, match=r"c\.csv: row 1, field 'description': nothing to embed") as info:
        load_corpus(path, text_fields=("description",))
    assert "--text-fields" in str(info.value)
    corpus = load_corpus(path, text_fields=("description",), quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["2"] and corpus.quarantined["row"].tolist() == [1, 3]
    assert load_corpus(path).ids == ["1", "2", "3"]  # the title is embedded too: something to embed


@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_a_row_repeating_the_header_is_a_bad_row(tmp_path, bom):
    """Two day files joined into one (cat day1.csv day2.csv) hold the second file's header as a row: read
    as an item, it would be the news item 'title' with the id 'id'. It is a bad row, named, or quarantined."""
    path = write_csv(
        tmp_path / "c.csv", f"{bom}id,title,source\n1,Floods,AP\n{bom}id,title,source\n2,Storm,AP\n"
    )
    with pytest.raises(InputError, match=r"c\.csv: row 2, field 'id': the row repeats the header"):
        load_corpus(path)
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["1", "2"] and corpus.quarantined["row"].tolist() == [2]


@pytest.mark.parametrize(
    "name,text",
    [
        (
            "feed.jsonl",
            '{"id": "1", "title": "Floods"}\n{"id": "2", "tit\n{"id": "3", "title": ""}\n'
            '{"id": "4", "title": "Storm"}\n\n',
        ),
        ("feed.csv", 'id,title\n1,Floods\n2,Storm,again\n3,""\n4,Storm\n'),
        ("feed.tsv", "id\ttitle\n1\tFloods\n2\tStorm\tagain\n3\t\n4\tStorm\n"),
    ],
)
def test_a_row_that_cannot_be_read_goes_to_quarantine_with_the_rest_read_by_their_own_rows(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="row 2"):
        load_corpus(path)
    q = tmp_path / "q.csv"
    corpus = load_corpus(path, quarantine=q)
    assert corpus.ids == ["1", "4"]
    assert corpus.quarantined["row"].tolist() == [2, 3]
    assert corpus.quarantined["field"].tolist()[1] == "title"
    assert "2" in str(corpus.quarantined.iloc[0].to_dict())
    assert q.exists()


@pytest.mark.parametrize("allow_empty", [True, False])
def test_a_jsonl_file_of_only_broken_lines_is_refused_not_read_as_a_day_without_news(
    tmp_path: Path, allow_empty: bool
) -> None:
    """Refused naming its broken rows, with or without ``allow_empty`` (not as a corpus of no rows); a line
    that is no JSON has no field, and is named by its row alone (not "field ''")."""
    path = tmp_path / "feed.jsonl"
    path.write_text('{"id": "1", "tit\n{"id": "2"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"every row was rejected \(2 bad row\(s\): row 1: invalid JSON"):
        load_corpus(path, quarantine=tmp_path / "q.csv", allow_empty=allow_empty)


def test_a_csv_row_in_quarantine_keeps_its_text_as_written_quotes_and_line_breaks_included(
    tmp_path: Path,
) -> None:
    path = tmp_path / "feed.csv"
    broken = '2,"Storm, again","a title\r\non two lines",x'
    path.write_text(f'id,title\r\n1,Floods\r\n{broken}\r\n3,"Storm, ""big"""\r\n', encoding="utf-8")
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["1", "3"]
    assert corpus.quarantined["raw_line"].tolist() == [broken]


@pytest.mark.parametrize(("ch", "where"), [("\ufeff", "before"), ("\u200b", "after"), ("\u202e", "before")])
def test_an_id_holding_an_invisible_character_is_refused_by_row(tmp_path, ch, where):
    """An id with a byte-order mark in front (two exports joined into one file), a zero-width space or a
    direction mark in it reads as the id without it: ``a`` and ``a\\u200b`` were two items (in a daily run,
    an item sent again so was a new one, its own duplicate). It is refused by row (quarantined with
    ``--quarantine``), as an id holding a control character is."""
    from nlsim.io.corpus import load_items

    hidden = f"{ch}a" if where == "before" else f"a{ch}"
    path = tmp_path / "c.csv"
    path.write_text(f"id,title\na,Floods in the north\n{hidden},Storm warning\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=rf"row 2, field 'id': id .* holds U\+{ord(ch):04X} \(.*\), which shows"
    ):
        load_corpus(path)
    with pytest.raises(InputError, match=r"row 2, field 'id'"):
        load_items(path)
    kept = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert kept.frame["id"].tolist() == ["a"] and kept.quarantined["field"].tolist() == ["id"]


FILLERS = ["\u3164", "\u115f", "\u1160", "\uffa0", "\u2800"]
"""Characters that show nothing though Unicode calls them letters (the Hangul fillers) or a symbol (the blank
Braille pattern), not format characters (Cf)."""


@pytest.mark.parametrize("ch", FILLERS)
def test_a_title_of_fillers_alone_is_a_bad_row_and_an_id_holding_one_is_refused(tmp_path, ch):
    """A title of Hangul fillers or blank Braille cells alone shows nothing, but was read as a title: every
    such item was embedded as one text, a duplicate of every other. It is now a bad row as an empty title
    is, and an id holding one is refused as one holding a zero-width space is: it reads as the id without
    it. A title holding one beside text is read as written."""
    from nlsim.io.corpus import load_items

    path = write_csv(tmp_path / "c.csv", f"id,title\na,Floods\nb,{ch * 2}\nc,Storm{ch}\n")
    with pytest.raises(
        InputError, match=rf"row 2, field 'title': empty text \(only invisible characters: U\+{ord(ch):04X}\)"
    ):
        load_corpus(path)
    with pytest.raises(InputError, match=r"row 2, field 'title': empty text"):
        load_items(path)
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["a", "c"] and corpus.quarantined["field"].tolist() == ["title"]
    path = write_csv(tmp_path / "d.csv", f"id,title\na,Floods\na{ch},Storm\n")
    with pytest.raises(
        InputError, match=rf"row 2, field 'id': id .* holds U\+{ord(ch):04X} \(.*\), which shows"
    ):
        load_corpus(path)
    with pytest.raises(InputError, match=r"row 2, field 'id'"):
        load_items(path)


@pytest.mark.parametrize("space", ["\u3000", "\u00a0"])
def test_a_title_of_ideographic_or_no_break_spaces_alone_is_an_empty_title(tmp_path, space):
    """U+3000 and U+00A0 are white space: a title of them alone is refused as empty (as before)."""
    path = write_csv(tmp_path / "c.csv", f"id,title\na,Floods\nb,{space * 3}\n")
    with pytest.raises(InputError, match=r"row 2, field 'title': empty text"):
        load_corpus(path)


def test_integer_ids_stored_as_floats_for_an_empty_cell_are_refused_naming_the_empty_cell(tmp_path):
    """pandas stores a column of integer ids with an empty cell as floats: the file was refused at row 1,
    "id must be text or an integer (got float)", a row whose id (1.0) looks right. It is now refused at the
    row without an id, naming the cause and the fix; ids with a fraction are still blamed row by row."""
    from nlsim.io.corpus import load_items

    path = tmp_path / "c.parquet"
    frame = pd.DataFrame({"id": [101, 102, None, 104], "title": ["Floods", "Storm", "Quake", "Fire"]})
    frame.to_parquet(path)  # pandas: float64 ids, NaN at row 3
    for load in (load_corpus, load_items):
        with pytest.raises(
            InputError, match=r"row 3, field 'id': the ids are stored as floats \(101\.0, 102\.0"
        ):
            load(path)
    with pytest.raises(InputError, match=r"row 3, field 'id': .*astype\('Int64'\)"):
        load_corpus(path, quarantine=tmp_path / "q.csv")
    pd.DataFrame({"id": [1.0, 2.5], "title": ["Floods", "Storm"]}).to_parquet(path)
    with pytest.raises(InputError, match=r"row 1, field 'id': id must be text or an integer \(got float\)"):
        load_corpus(path)
    pd.DataFrame({"id": [101, 102], "title": ["Floods", "Storm"]}).astype({"id": "Int64"}).to_parquet(path)
    assert load_corpus(path).frame["id"].tolist() == ["101", "102"]


def test_a_title_of_punctuation_alone_is_a_bad_row(tmp_path):
    """A CMS export puts "-" or "..." for a missing headline: each such item was embedded as that one text,
    and the report put unrelated items into one story at a cosine of 1. A title (or the fields embedded)
    holding punctuation alone is a bad row, as one holding invisible characters alone is; a title holding
    a letter, a digit or a symbol besides is read as written."""
    from nlsim.io.corpus import load_items

    path = write_csv(
        tmp_path / "c.csv",
        "id,title,description\n1,Floods,\n2,-,Winds on the coast\n3,？？？,\n4,「颱風」!,\n5,★,\n6,2024,\n",
    )
    with pytest.raises(InputError, match=r"c\.csv: row 2, field 'title': no text, only punctuation \('-'\)"):
        load_corpus(path)
    with pytest.raises(InputError, match=r"row 2, field 'title': no text, only punctuation"):
        load_items(path)
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["1", "4", "5", "6"] and corpus.quarantined["row"].tolist() == [2, 3]
    path = write_csv(tmp_path / "d.csv", "id,title,description\n1,Floods,...\n2,Storm,Winds\n")
    with pytest.raises(InputError, match=r"row 1, field 'description': nothing to embed: .* punctuation"):
        load_corpus(path, text_fields=("description",))
    assert load_corpus(path).ids == ["1", "2"]


def test_a_title_of_html_markup_alone_is_a_bad_row(tmp_path):
    """A CMS puts ``<p></p>``, ``<br/>`` or ``&nbsp;`` for a missing headline: the model reads a text's HTML
    as a page shows it, nothing, so every such item was one vector and the report made them one story at a
    similarity of 1. A title (or the fields embedded) whose HTML shows nothing, or punctuation alone, is a
    bad row; markup around a word is read as written."""
    from nlsim.io.corpus import load_items

    path = write_csv(
        tmp_path / "c.csv",
        "id,title\n1,Floods\n2,<p></p>\n3,<br/>\n4,&nbsp;\n5,<b> - </b>\n6,<b>Storm</b>\n7,&lt;3\n",
    )
    with pytest.raises(
        InputError, match=r"c\.csv: row 2, field 'title': no text, only HTML markup \('<p></p>'\)"
    ):
        load_corpus(path)
    with pytest.raises(InputError, match=r"row 2, field 'title': no text, only HTML markup"):
        load_items(path)
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["1", "6", "7"] and corpus.quarantined["row"].tolist() == [2, 3, 4, 5]
    path = write_csv(tmp_path / "d.csv", "id,title,description\n1,Floods,<p><img src=x></p>\n2,Storm,Winds\n")
    with pytest.raises(InputError, match=r"row 1, field 'description': nothing to embed: .* HTML markup"):
        load_corpus(path, text_fields=("description",))
    assert load_corpus(path).ids == ["1", "2"]


def test_a_ctime_without_a_zone_is_read_on_the_runs_clock_and_an_offset_without_its_sign_is_refused(tmp_path):
    """``Wed May  1 08:00:00 2024`` (C's ctime, Unix ``date``) names no zone, but was read as UTC, whatever
    --timezone said, and not counted among the times without an offset; ``... 08:00:00 0800`` and a number
    after the time (``... 08:00:00 2024``, read as 20 hours 24 minutes east) were read as offsets. The ctime
    is now read on the run's clock, as every time without an offset is, and the others are refused."""
    path = tmp_path / "c.csv"
    path.write_text(
        'id,title,published_at\na,Floods,Wed May  1 08:00:00 2024\nb,Storm,"Wed, 1 May 2024 08:00 +0800"\n',
        encoding="utf-8",
    )
    corpus = load_corpus(path, timezone="Asia/Taipei")
    assert corpus.frame["published_at"].tolist() == [pd.Timestamp("2024-05-01T00:00Z")] * 2
    assert corpus.naive_times == 1
    for written in ("Wed, 01 May 2024 08:00:00 0800", "Wed 01 May 2024 08:00:00 2024"):
        path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
        with pytest.raises(
            InputError, match=r"row 1, field 'published_at': .* which is not an offset \(\+0800"
        ):
            load_corpus(path, timezone="Asia/Taipei")


@pytest.mark.parametrize(
    "written",
    [
        "2024-05-01T10:00:00 08:00",  # an offset without its sign: read as a second time of day, 08:00
        "2024-05-01 08:00:00 12:00",  # two times: the last was kept
        "2024-05-01 08:00:00 +0800 +0900",  # two offsets: the last was kept
        "2024-05-01 08:00:00 2024",  # a number after the time
    ],
)
def test_a_year_first_time_holding_more_than_one_time_and_offset_is_refused(tmp_path, written):
    """The date parser read what followed a year-first time as it could: ``2024-05-01T10:00:00 08:00`` as
    08:00 on the run's clock (two hours off, no word said), two offsets as the last. Such a time is refused
    by row; a date, a time of day (``8``, ``08:00``, ``0800``, ``08:00:00.5``) and one offset are read."""
    path = tmp_path / "c.csv"
    path.write_text(f"id,title,published_at\na,Floods,{written}\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"row 1, field 'published_at': .* holds more than a date, a time of"
    ):
        load_corpus(path, timezone="Asia/Taipei")
    read = "2024-05-01 08,2024-05-01 0800,2024-05-01T08:00:00.5 +08,2024/5/1 8:00 UTC,2024-05-01 08:00 +5:30"
    rows = "".join(f"{i},Floods,{t}\n" for i, t in enumerate(read.split(",")))
    path.write_text(f"id,title,published_at\n{rows}", encoding="utf-8")
    assert load_corpus(path, timezone="Asia/Taipei").frame["published_at"].tolist() == [
        pd.Timestamp(t)
        for t in ("2024-05-01T00:00Z", "2024-05-01T00:00Z", "2024-05-01T00:00:00.5Z", "2024-05-01T08:00Z")
    ] + [pd.Timestamp("2024-05-01T02:30Z")]


def test_a_camelcase_schema_field_is_refused_as_spelt_otherwise_and_a_camelcase_lookalike_named(tmp_path):
    """A JSON API's items (NewsAPI: ``publishedAt``) gave every item no date, without a word: the column was
    kept as an extra one and not read. A schema field spelt in camelCase is now refused as one spelt with
    another case is, and a camelCase lookalike (``datePublished``, ``articleId``) is named in a warning."""
    rows = [{"id": "a", "title": "Floods", "publishedAt": "2024-05-01T08:00:00Z"}]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"field 'publishedAt': .* spelt otherwise .* rename it 'published_at'"
    ):
        load_corpus(path)
    path = write_csv(tmp_path / "d.csv", "articleId,title,datePublished\na,Floods,2024-05-01T08:00:00Z\n")
    with pytest.raises(InputError, match=r"column 'articleId' looks like it: rename it 'id'"):
        load_corpus(path)
    path = write_csv(tmp_path / "e.csv", "id,title,datePublished\na,Floods,2024-05-01T08:00:00Z\n")
    (warning,) = load_corpus(path).warnings
    assert "column 'datePublished' is not read: it looks like the schema field 'published_at'" in warning


def test_a_schema_field_written_without_its_underscore_is_refused_as_spelt_otherwise(tmp_path):
    """``publishedat`` (the underscore left out) was kept as an extra column, not read: every item undated
    without a word. It is refused as ``Published_At`` is."""
    path = write_csv(tmp_path / "c.csv", "id,title,publishedat\na,Floods,2024-05-01T08:00:00Z\n")
    with pytest.raises(
        InputError, match=r"field 'publishedat': .* spelt otherwise .* rename it 'published_at'"
    ):
        load_corpus(path)


@pytest.mark.parametrize(
    ("text", "like", "code"),
    [
        ("id,title,\u200bpublished_at\na,Floods,2024-05-01T08:00:00Z\n", "published_at", "U\\+200B"),
        ("id,\ufefftitle\na,Floods\n", "title", "U\\+FEFF"),
        ("id,title\u3164\na,Floods\n", "title", "U\\+3164"),
    ],
)
def test_a_schema_column_whose_name_holds_an_invisible_character_is_refused_by_name(
    tmp_path, text, like, code
):
    """A header cell with a zero-width space (pasted from a web page) or a byte-order mark in it reads as
    ``published_at`` but was another column: kept and not read, every item undated without a word (or
    ``title`` "missing" from a list of columns that shows it). It is now refused as a schema field spelt
    otherwise, naming the character."""
    path = tmp_path / "c.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(
        InputError, match=rf"column .* is spelt otherwise than '{like}' \(it holds {code}, which"
    ):
        load_corpus(path)


def test_a_title_a_spreadsheet_replaced_by_its_error_value_is_a_bad_row(tmp_path):
    """A corpus opened in a spreadsheet and saved again holds, for each title the spreadsheet ran as a
    formula (``-5% on the market`` or ``=Floods`` run as ``-5%*on...``), the formula's error value
    (``#NAME?``, ``#VALUE!``; LibreOffice's ``Err:508``): read as written, every such item was one text,
    and the report joined unrelated items into one story of exact copies. Such a title is a bad row naming
    the cause, in a pair file's texts too; a title that only holds such a value beside words is read."""
    from nlsim.io.pairs import load_pairs

    path = write_csv(
        tmp_path / "c.csv",
        "id,title\n1,Floods\n2,#NAME?\n3,#VALUE!\n4, Err:508 \n5,#N/A\n6,#NAME? error in the budget app\n",
    )
    with pytest.raises(InputError, match=r"c\.csv: row 2, field 'title': '#NAME\?' is a spreadsheet's error"):
        load_corpus(path)
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["1", "6"] and corpus.quarantined["row"].tolist() == [2, 3, 4, 5]
    pairs = write_csv(tmp_path / "p.csv", "text_a,text_b,score\nFloods,Storm,0\nFloods,#DIV/0!,1\n")
    with pytest.raises(
        InputError, match=r"p\.csv: row 2, field 'text_b': '#DIV/0!' is a spreadsheet's error"
    ):
        load_pairs(pairs)


@pytest.mark.parametrize("space", [" ", "\u00a0", "\u3000"])
def test_an_id_repeated_with_white_space_around_it_is_named_as_written(tmp_path, space):
    """White space around an id is dropped, a no-break or an ideographic space as an ASCII one, so
    ``1`` and ``1`` followed by a no-break space are one id: the refusal of the second named it ``'1'``
    alone, an id the editor sees once in the file. It now says how the row wrote it."""
    from nlsim.io.corpus import load_items

    path = write_csv(tmp_path / "c.csv", f'id,title\n1,Floods\n2,Storm\n"{space}1{space}",Fire\n')
    shown = repr(f"{space}1{space}")
    for load in (load_corpus, load_items):
        with pytest.raises(InputError) as info:
            load(path)
        assert f"row 3, field 'id': duplicate id '1' (first seen at row 1; written {shown} here" in str(
            info.value
        )
        assert "white space around an id is dropped" in str(info.value)


def test_a_title_that_is_an_exports_marker_of_a_missing_value_is_a_bad_row(tmp_path):
    """A database export writes a missing headline as ``\\N`` (MySQL) or ``NULL``, a script as ``None`` or
    ``nan`` (``str()`` of a missing value): read as written, every such item was one text, and the report
    joined unrelated items into one story of exact copies. Such a title is a bad row naming the marker, in
    a pair file's texts too; a title holding such a word beside others is read."""
    from nlsim.io.pairs import load_pairs

    path = write_csv(
        tmp_path / "c.csv",
        "id,title\n1,Floods\n2,\\N\n3,NULL\n4,None\n5,nan\n6,<NA>\n7,None of the ministers resigned\n",
    )
    with pytest.raises(InputError, match=r"c\.csv: row 2, field 'title': '\\\\N' marks a missing value"):
        load_corpus(path)
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["1", "7"] and corpus.quarantined["row"].tolist() == [2, 3, 4, 5, 6]
    pairs = write_csv(tmp_path / "p.csv", "text_a,text_b,score\nFloods,Storm,0\nFloods,null,1\n")
    with pytest.raises(InputError, match=r"p\.csv: row 2, field 'text_b': 'null' marks a missing value"):
        load_pairs(pairs)


def test_an_optional_field_holding_an_exports_marker_of_a_missing_value_is_empty(tmp_path):
    """A description exported as ``\\N``, ``NULL`` or ``nan`` was read as that word and embedded with the
    title: one headline with its description left empty in three ways was three texts. Such a cell is read
    as empty, and the load says how many were, by field; a description holding such a word beside others
    is kept."""
    path = write_csv(
        tmp_path / "c.csv",
        "id,title,description,source\n"
        "1,Floods,\\N,NULL\n2,Floods,NULL,AP\n3,Floods,,AP\n4,Floods, nan ,None\n"
        "5,Floods,None of the dams held,n/a\n",
    )
    corpus = load_corpus(path)
    assert corpus.frame["description"].tolist() == ["", "", "", "", "None of the dams held"]
    assert corpus.frame["source"].tolist() == ["", "AP", "AP", "", ""]
    assert corpus.texts() == ["Floods"] * 4 + ["Floods None of the dams held"]
    assert corpus.notes == (
        f"{path}: 3 description and 3 source cell(s) hold only a marker of a missing value "
        "(\\N, NULL, None, nan, N/A, ...): read as empty",
    )


def test_a_lang_of_nan_is_min_nan_not_a_missing_value(tmp_path):
    """``nan`` is the language tag of Min Nan (Taiwanese Hokkien, ``nan-TW``): a Taigi item's ``lang`` was
    read as empty, the load saying it held a marker of a missing value. It is kept as written; ``NULL`` in
    ``lang`` and ``nan`` in another field are still empty."""
    path = write_csv(
        tmp_path / "c.csv",
        "id,title,lang,source\n1,颱風來矣,nan,nan\n2,颱風來了,zh-Hant,PTS\n3,Floods,NULL,AP\n",
    )
    corpus = load_corpus(path)
    assert corpus.frame["lang"].tolist() == ["nan", "zh-Hant", ""]
    assert corpus.frame["source"].tolist() == ["", "PTS", "AP"]
    assert corpus.notes == (
        f"{path}: 1 source and 1 lang cell(s) hold only a marker of a missing value "
        "(\\N, NULL, None, nan, N/A, ...): read as empty",
    )


def test_ids_that_differ_only_in_their_spaces_or_width_are_two_items_and_the_load_says_so(
    tmp_path: Path,
) -> None:
    """`n 1` and `n` + a no-break space + `1` (a CMS's export and a hand-typed row) loaded as two items
    without a word, though every page and spreadsheet shows them alike. They stay two items (their ids are
    kept as written), and the load warns, naming both, the no-break space as its code point."""
    path = tmp_path / "news.csv"
    path.write_text("id,title\nn 1,Floods in the north\nn\u00a01,Storm in the south\nn2,Markets\n", "utf-8")
    corpus = load_corpus(path)
    assert corpus.ids == ["n 1", "n\u00a01", "n2"]
    (warning,) = corpus.warnings
    assert warning.startswith(f"{path}: 1 id(s) differ from another item's only in their spaces"), warning
    assert warning.endswith("'n 1' and 'n\\u00a01'"), warning
    path.write_text("id,title\nn 1,Floods in the north\nn2,Storm in the south\n", "utf-8")
    assert load_corpus(path).warnings == ()


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("Wed, 31 Feb 2024 08:00:00 +0000", "day is out of range for month"),  # was 2024-03-02
        ("Wed, 01 May 2024 25:00:00 +0000", "hour must be in 0..23"),  # was 05-02 01:00
        ("Wed, 01 May 2024 24:00:00 +0800", "is at 24:00, the end of its day"),  # was 05-02 00:00 +08:00
        ("Wed, 01 May 2024 08:61:00 +0000", "minute must be in 0..59"),  # was 09:01
        ("Wed, 01 May 2024 08:00:60 +0000", "is at second 60, a leap second"),  # was 08:01
        ("Wed, 01 May 2024 08:00:00 +0860", r"ends with '\+0860', which is not an offset"),  # was +09:00
        ("Wed, 01 May 2024 08:00:00 +9999", r"ends with '\+9999', which is not an offset"),  # 99 h 99 min
        ("Wed, 01 May 2024 08:00:00 -2400", r"ends with '-2400', which is not an offset"),
    ],
)
def test_an_rfc_2822_time_with_a_field_out_of_range_is_refused_not_rolled_over(tmp_path, written, reason):
    """RFC 2822 times were turned into a time by adding up their fields: the 31st of February was the 2nd of
    March, 25:00 the next day's 01:00, an offset of +0860 nine hours, +9999 four days, with exit status 0.
    A field out of range is refused by row, as the same time written in ISO 8601 is."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,2024-05-01T08:00:00Z\nb,Storm,"{written}"\n')
    with pytest.raises(InputError, match=rf"row 2, field 'published_at': .*{reason}"):
        load_corpus(path)
    path.write_text('id,title,published_at\nb,Storm,"Thu, 29 Feb 2024 23:59:59 +1400"\n')
    assert load_corpus(path).frame["published_at"].tolist() == [pd.Timestamp("2024-02-29T09:59:59Z")]


def test_an_rfc_2822_year_is_read_as_written_and_an_obsolete_short_one_as_the_rfc_says(tmp_path):
    """A four-digit year below 100 in an RFC 2822 time was read as a two-digit one: ``Wed, 01 May 0001``,
    a database's placeholder for no date, was the 1st of May 2001, ``0099`` 1999, with exit status 0. A
    year of four digits is now the year written (then refused as outside the years a time can have), and an
    obsolete two- or three-digit year is read as RFC 5322 says: 00-49 after 2000, 50-99 and three digits
    after 1900 (``60`` was 2060, ``124``, the year 2024 as C's ``tm_year`` holds it, the year 124)."""
    path = tmp_path / "c.csv"
    for year in ("0001", "0099"):
        path.write_text(f'id,title,published_at\na,Floods,"Wed, 01 May {year} 08:00:00 +0000"\n')
        with pytest.raises(
            InputError, match=rf"row 1, field 'published_at': time Wed, 01 May {year} .* outside"
        ):
            load_corpus(path)
    rows = ["24 08:00 +0000", "49 08:00 +0000", "60 08:00 +0000", "124 08:00 +0000", "2024 08:00 GMT"]
    path.write_text(
        "id,title,published_at\n" + "".join(f'{i},Floods,"01 May {r}"\n' for i, r in enumerate(rows))
    )
    years = [t.year for t in load_corpus(path).frame["published_at"]]
    assert years == [2024, 2049, 1960, 2024, 2024]


@pytest.mark.parametrize("offset", ["+08:60", "+0860", "+08:99", "-00:75", "+5:60"])
def test_a_year_first_time_whose_offset_has_more_than_59_minutes_is_refused(tmp_path, offset):
    """The date parser added an offset's minutes up: ``2024-05-01T08:00:00+08:60`` was read at +09:00,
    ``-00:75`` at -01:15, with exit status 0; such an offset is refused by row, as ``+24:00`` already was."""
    path = tmp_path / "c.csv"
    path.write_text(
        f"id,title,published_at\na,Floods,2024-05-01T08:00:00Z\nb,Storm,2024-05-01T08:00:00{offset}\n"
    )
    with pytest.raises(
        InputError,
        match=rf"row 2, field 'published_at': .* ends with '{re.escape(offset)}', which is not an offset",
    ):
        load_corpus(path)
    path.write_text("id,title,published_at\nb,Storm,2024-05-01T08:00:00-0959\n")
    assert load_corpus(path).frame["published_at"].tolist() == [pd.Timestamp("2024-05-01T17:59Z")]


@pytest.mark.parametrize(
    "written",
    ["2024-05-01T08:00:00 UT", "2024-05-01 08:00 utc", "2024-05-01T08:00:00Utc", "2024-05-01 08:00 gmt"],
)
def test_a_year_first_time_in_utc_is_read_whatever_the_case_of_utcs_name(tmp_path, written):
    """``2024-05-01T08:00:00Z`` and ``...z`` were read, and ``Wed, 01 May 2024 08:00:00 utc``, but a
    year-first time ending with ``UT`` (a name of UTC the time check lets through) or with ``utc`` or ``gmt``
    in lower case was refused with the date parser's words (``Unknown datetime string format``); it is read
    as UTC."""
    path = tmp_path / "c.csv"
    path.write_text(f"id,title,published_at\na,Floods,{written}\n")
    corpus = load_corpus(path, timezone="Asia/Taipei")
    assert corpus.frame["published_at"].tolist() == [pd.Timestamp("2024-05-01T08:00Z")]
    assert corpus.naive_times == 0


@pytest.mark.parametrize(
    ("zone", "offset", "place"), [("EST", "UTC-05:00", "New_York"), ("MST", "UTC-07:00", "Denver")]
)
def test_a_time_zone_of_standard_time_all_year_is_refused_naming_the_places_zone(
    tmp_path, zone, offset, place
):
    """``--timezone EST`` is the zone database's UTC-05:00 all year, without daylight saving time, where a
    newsroom in New York writing it means its own clock: its summer's CMS times without an offset were read
    an hour late, and the report showed every time an hour off the newsroom's clock, while the run said only
    "read as EST time". ``EST`` and ``MST`` are refused, as ``Etc/GMT+5`` is, naming the zones to give."""
    path = tmp_path / "c.csv"
    path.write_text("id,title,published_at\na,A,2026-07-25 16:52\n")
    with pytest.raises(ConfigError, match=rf"--timezone '{zone}' is {offset} all year, .*America/{place}"):
        load_corpus(path, timezone=zone)
    for fine in ("EST5EDT", "America/New_York", "America/Panama", "HST"):  # HST: Hawaii keeps no summer time
        assert load_corpus(path, timezone=fine).naive_times == 1


@pytest.mark.parametrize(
    ("zone", "day", "start"),
    [
        ("America/Santiago", "2026-09-06", "2026-09-06T04:00Z"),  # 00:00 skipped: the day begins at 01:00
        ("Africa/Cairo", "2024-04-26", "2024-04-25T22:00Z"),
        ("America/Havana", "2026-11-01", "2026-11-01T04:00Z"),  # 00:00-01:00 twice: the first one
    ],
)
def test_a_date_without_a_time_on_a_day_whose_midnight_a_clock_change_skips_is_its_first_instant(
    tmp_path, zone, day, start
):
    """A ``published_at`` of a date alone (``2026-09-06``, a Parquet ``date32`` cell) on a day whose clocks
    skip or repeat midnight (Chile, Egypt, Cuba) was refused as a time "the clocks skip", so every dated
    item of that day stopped the run; the day exists. It is read as the day's first instant, as a daily
    run's day begins (an explicit time of day the clocks skip is refused still)."""
    import datetime as dt

    path = tmp_path / "c.csv"
    cjk = "{}年{}月{}日".format(*(int(p) for p in day.split("-")))
    path.write_text(f"id,title,published_at\na,A,{day}\nb,B,{day.replace('-', '')}\nc,C,{cjk}\n")
    corpus = load_corpus(path, timezone=zone)
    assert corpus.frame["published_at"].tolist() == [pd.Timestamp(start)] * 3 and corpus.naive_times == 3
    stored = tmp_path / "c.parquet"
    pd.DataFrame({"id": ["a"], "title": ["A"], "published_at": [dt.date.fromisoformat(day)]}).to_parquet(
        stored
    )
    assert load_corpus(stored, timezone=zone).frame["published_at"].tolist() == [pd.Timestamp(start)]
    path.write_text("id,title,published_at\na,A,2026-09-06 00:30\n")
    with pytest.raises(InputError, match="clocks of America/Santiago skip it"):
        load_corpus(path, timezone="America/Santiago")


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("Mon, 6 Dec 2026 08:00:00 +0800", "Mon"),  # the 6th of December 2026 is a Sunday
        ("Monday, 06 Dec 2026 08:00:00 GMT", "Monday"),
        ("Mon Dec  6 08:00:00 2026", "Mon"),  # as C's ctime writes it
        ("Xyz, 06 Dec 2026 08:00:00 GMT", "Xyz"),  # no day of the week at all
    ],
)
def test_an_rfc_2822_time_whose_day_of_the_week_disagrees_with_its_date_is_refused(tmp_path, written, said):
    """An RFC 2822 time's day of the week was dropped unread: ``Mon, 6 Dec 2026`` (a Sunday) was the 6th
    with exit status 0, though the day or the date is wrong and which cannot be told. It is refused by row,
    naming the day the date falls on; the right day, in any case, is read."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,2026-12-06T08:00:00Z\nb,Storm,"{written}"\n')
    with pytest.raises(
        InputError, match=rf"row 2, field 'published_at': .*'{said}'.*the 6th of December 2026 is a Sunday"
    ):
        load_corpus(path)
    path.write_text(
        'id,title,published_at\na,Floods,"Sun, 6 Dec 2026 08:00:00 +0800"\n'
        'b,Storm,"sunday, 06 Dec 2026 00:00 GMT"\n'
        "c,Rain,Sun Dec  6 00:00:00 2026\n"
    )
    assert load_corpus(path).frame["published_at"].tolist() == [pd.Timestamp("2026-12-06T00:00:00Z")] * 3


def test_a_placeholder_date_is_read_as_undated_with_a_warning_naming_its_rows(tmp_path):
    """A CMS or database writes a placeholder for no date: 1970-01-01 (a Unix time of 0, in UTC or on the
    newsroom's clock), 1900-01-01 or 1899-12-30 (a database's or spreadsheet's zero date), 0000-00-00
    (MySQL's), 0001-01-01 (.NET's, Go's). 1970 and 1900 were read as real times, so that with --window-hours
    such an item paired with nothing, without a word; 0000-00-00 and 0001-01-01 refused the row. Each is now
    read as no date (an undated item pairs with items of any date), and the corpus warns, naming the file,
    the field, the count and the rows."""
    path = tmp_path / "c.csv"
    rows = [
        "2026-12-06T08:00:00Z",
        "1970-01-01 00:00:00",
        "1900-01-01",
        "0000-00-00 00:00:00",
        "0001-01-01T00:00:00Z",
        "1970-01-01 08:00:00",  # a Unix time of 0 written on Taipei's clock
        "1899-12-30",
        "1970-01-01T00:00:01Z",  # a second after: a time
    ]
    path.write_text("id,title,published_at\n" + "".join(f"n{i},Story {i},{r}\n" for i, r in enumerate(rows)))
    corpus = load_corpus(path, timezone="Asia/Taipei")
    times = corpus.frame["published_at"]
    assert times.isna().tolist() == [False, True, True, True, True, True, True, False]
    assert times.iloc[7] == pd.Timestamp("1970-01-01T00:00:01Z")
    (warning,) = corpus.warnings
    assert warning.startswith(f"{path}: 6 published_at value(s) are placeholders for no date"), warning
    assert "rows 2, 3, 4, 5, 6 ..." in warning and "'1970-01-01 00:00:00'" in warning, warning
    assert "read as undated" in warning, warning


def test_control_characters_in_a_text_are_warned_of_naming_rows_and_fields(tmp_path):
    """A NUL (U+0000), a bell or a terminal's colour escape inside a UTF-8 title or description, the mark of
    a damaged export, was loaded with exit status 0 and no word. The text is kept as written (a report's
    data files keep it; its report.xlsx shows it without them), and the corpus now warns, naming the file,
    the count, the first character and each row with its fields. Tabs and line breaks are text: no word."""
    path = tmp_path / "c.csv"
    path.write_text(
        "id,title,description\n"
        "1,Floods\x00 in the north,ok\n"
        "2,Storm\x07 warning,a \x1b[31mred\x1b[0m sky\n"
        '3,Rain,"fine\tweather\nahead"\n'
        "4,Wind\x1fgusts,\n",
        encoding="utf-8",
    )
    corpus = load_corpus(path)
    assert corpus.frame["title"].tolist() == [
        "Floods\x00 in the north",
        "Storm\x07 warning",
        "Rain",
        "Wind\x1fgusts",
    ]
    (warning,) = corpus.warnings
    assert warning.startswith(f"{path}: 3 item(s) hold control characters (U+0000"), warning
    assert "row 1 (title), row 2 (title, description), row 4 (title)" in warning, warning
    assert (
        "kept as written in the report's Parquet files (its spreadsheet files hold the text without"
        in warning
    )
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text('{"id": "1", "title": "Floods in the north"}\n', encoding="utf-8")
    assert load_corpus(jsonl).warnings == ()
    jsonl.write_text('{"id": "1", "title": "Floods\\u0000 in the north"}\n', encoding="utf-8")
    assert "row 1 (title)" in load_corpus(jsonl).warnings[0]


def test_a_minguo_year_named_as_one_is_read_and_a_bare_one_refused_saying_so(tmp_path):
    """A date in the Minguo (Republic of China) calendar as Taiwanese CMS exports write it, 民國115年12月6日
    (2026-12-06), was refused as neither year first nor RFC 2822, its message asking whether 12/05/2024 is
    the 12th of May. Named as a Minguo year (民國, 民国, 中華民國), it is read (year + 1911), its time of day
    too; a bare 115年12月6日 is refused by row, naming the Minguo year and the date it would be."""
    path = tmp_path / "c.csv"
    path.write_text(
        "id,title,published_at\na,Floods,民國115年12月6日\nb,Storm,中華民國115年12月6日 15:04\n"
        "c,Rain,民国 115 年 12 月 6 日 08:00:00+08:00\n",
        encoding="utf-8",
    )
    times = load_corpus(path, timezone="Asia/Taipei").frame["published_at"].tolist()
    assert times == [
        pd.Timestamp("2026-12-05T16:00Z"),
        pd.Timestamp("2026-12-06T07:04Z"),
        pd.Timestamp("2026-12-06T00:00Z"),
    ]
    path.write_text("id,title,published_at\na,Floods,115年12月6日\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"row 1, field 'published_at': .*'115年'.*a Minguo year.*民國115年, 2026"
    ):
        load_corpus(path)


def test_a_parquet_timestamp_past_the_years_a_time_can_have_is_refused_by_row_not_a_crash(tmp_path):
    """A Parquet timestamp[s] column holding milliseconds (1733470000000: the year 56,901) ended the load
    with NotImplementedError from pandas while the refusal was being written, naming no file, row or field.
    It is refused by row, naming the year and the likely cause."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "c.parquet"
    times = pa.array([1733470000, 1733470000000], pa.timestamp("s", tz="UTC"))
    pq.write_table(pa.table({"id": ["a", "b"], "title": ["Floods", "Storm"], "published_at": times}), path)
    with pytest.raises(
        InputError,
        match=r"row 2, field 'published_at': time 56901-.* is outside the years 1678-2261, .*milliseconds",
    ):
        load_corpus(path)


@pytest.mark.parametrize(("unit", "scale"), [("ms", 1), ("us", 1), ("ns", 1000)])
def test_a_parquet_timestamp_of_seconds_stored_in_a_finer_unit_is_refused_by_row(tmp_path, unit, scale):
    """Unix seconds stored in a timestamp[ms] (or [us], [ns]) column read as January 1970 (1733470000 ms:
    1970-01-21), a time each item was given with exit status 0, which --window-hours then paired with
    nothing. A stored timestamp in the first weeks of 1970 (a Unix time of 0 aside, a placeholder) is
    refused by row, naming the likely cause."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "c.parquet"
    good = 1733470000 * {"ms": 1000, "us": 10**6, "ns": 10**9}[unit]
    times = pa.array([good, 1733470000 * scale], pa.timestamp(unit, tz="UTC"))
    pq.write_table(pa.table({"id": ["a", "b"], "title": ["Floods", "Storm"], "published_at": times}), path)
    with pytest.raises(InputError, match=r"row 2, field 'published_at': .*1970-01-.*seconds stored as"):
        load_corpus(path)
    times = pa.array([good, None], pa.timestamp(unit, tz="UTC"))
    pq.write_table(pa.table({"id": ["a", "b"], "title": ["Floods", "Storm"], "published_at": times}), path)
    assert load_corpus(path).frame["published_at"].iloc[0] == pd.Timestamp("2024-12-06T07:26:40Z")


def test_an_iso_week_date_is_read_as_the_day_it_names(tmp_path):
    """An ISO 8601 week date (2026-W49-7, 2026W497: the Sunday of week 49, 2026-12-06), which some
    planning exports write, was refused as neither year first nor RFC 2822, the message asking whether
    12/05/2024 is the 12th of May. It names one day, and is read so, with its time of day and offset; a week
    that the year does not have (W54) is refused by row."""
    path = tmp_path / "c.csv"
    path.write_text(
        "id,title,published_at\na,Floods,2026-W49-7\nb,Storm,2026W497T08:00:00+08:00\nc,Rain,2026-W01-1\n"
    )
    times = load_corpus(path).frame["published_at"].tolist()
    assert times == [
        pd.Timestamp("2026-12-06T00:00Z"),
        pd.Timestamp("2026-12-06T00:00Z"),
        pd.Timestamp("2025-12-29T00:00Z"),
    ]
    path.write_text("id,title,published_at\na,Floods,2026-W54-1\n")
    with pytest.raises(InputError, match=r"row 1, field 'published_at': .*2026-W54-1.*week"):
        load_corpus(path)


def test_an_iso_ordinal_date_is_read_as_the_day_it_names(tmp_path):
    """An ISO 8601 ordinal date (2024-122: the 122nd day of 2024, the 1st of May), which some archive
    exports write, was refused as neither year first nor RFC 2822, though it is written year first. It names
    one day, and is read so, with its time of day and offset; a day the year does not have (2026-366,
    2024-000) is refused by row, naming how many days the year has."""
    path = tmp_path / "c.csv"
    path.write_text(
        "id,title,published_at\na,Floods,2024-122\nb,Storm,2024-122T08:00:00+08:00\nc,Rain,2024-366 12:00\n"
    )
    times = load_corpus(path, timezone="Asia/Taipei").frame["published_at"].tolist()
    assert times == [
        pd.Timestamp("2024-04-30T16:00Z"),
        pd.Timestamp("2024-05-01T00:00Z"),
        pd.Timestamp("2024-12-31T04:00Z"),
    ]
    for bad, days in (("2026-366", 365), ("2024-000", 366)):
        path.write_text(f"id,title,published_at\na,Floods,{bad}\n")
        with pytest.raises(
            InputError, match=rf"row 1, field 'published_at': .*{bad}.*ordinal.*it has {days}"
        ):
            load_corpus(path)


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01, Wed 08:00", "2024-05-01T00:00Z"),  # a comma between the date and its day
        ("2024-05-01 08:00, Wed", "2024-05-01T00:00Z"),
        ("2024年5月1日, 星期三 08:00", "2024-05-01T00:00Z"),
        ("Wed 20240501", "2024-04-30T16:00Z"),  # ISO 8601's basic format, the day before or after it
        ("Wed, 20240501 08:00", "2024-05-01T00:00Z"),
        ("20240501 Wed", "2024-04-30T16:00Z"),
        ("20240501 (水) 08:00", "2024-05-01T00:00Z"),
        ("20240501 08:00 (Wed)", "2024-05-01T00:00Z"),
    ],
)
def test_a_day_of_the_week_after_a_comma_or_with_a_basic_format_date_is_read(tmp_path, written, utc):
    """``2024-05-01, Wed 08:00`` was refused as naming its zone 'Wed', and ``Wed 20240501`` as neither year
    first nor RFC 2822, where ``2024-05-01 Wed 08:00`` and ``Wed 2024-05-01`` are read: a comma between the
    date and its day of the week, and a date in ISO 8601's basic format, are read the same way. A day that
    is not the date's is refused, named without its comma."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n')
    assert load_corpus(path, timezone="Asia/Taipei").frame["published_at"].tolist() == [pd.Timestamp(utc)]
    for bad in ("2024-05-01, Thu 08:00", "Thu 20240501", "20240501, Thu"):
        path.write_text(f'id,title,published_at\na,Floods,"{bad}"\n')
        with pytest.raises(InputError, match=r"says 'Thu', but the 1st of May 2024 is a Wednesday"):
            load_corpus(path, timezone="Asia/Taipei")


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("Sun, 06 Dec 2026 10:00:00 +0800 (CST)", "2026-12-06T02:00:00Z"),  # mail, many CMS exports
        ("Sun, 06 Dec 2026 10:00:00 +0000 (UTC)", "2026-12-06T10:00:00Z"),
        ("Sun, 06 Dec 2026 10:00:00 GMT (UTC)", "2026-12-06T10:00:00Z"),
        ("Sun, 06 Dec 2026 10:00:00 UT (Universal Time)", "2026-12-06T10:00:00Z"),
        ("Sun, 06 Dec 2026 10:00:00 -0500 (EST)", "2026-12-06T15:00:00Z"),
        ("Sun, 06 Dec 2026 10:00:00 +0800(CST)", "2026-12-06T02:00:00Z"),  # no space before it
        ("Sun, 06 Dec 2026 10:00:00 +08:00 (China Standard Time)", "2026-12-06T02:00:00Z"),
        ("Sun, 06 Dec 2026 10:00:00 +0800 (EST)", "2026-12-06T02:00:00Z"),  # the offset decides
    ],
)
def test_an_rfc_2822_time_with_a_zone_comment_after_its_offset_is_read_by_the_offset(tmp_path, written, utc):
    """``Sun, 06 Dec 2026 10:00:00 +0800 (CST)``, as mail and many CMS exports write an RFC 2822 time (its
    comment naming the zone), was a bad row, said to name its zone ``(CST)`` and not an offset. A comment
    after an offset or a name of UTC is read as RFC 2822 says and ``email.utils`` does: the offset decides
    and the comment is not read (even one naming another zone). A zone comment without an offset before it
    names its zone only, and is still refused."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,2026-12-06T08:00:00Z\nb,Storm,"{written}"\n')
    assert load_corpus(path).frame["published_at"].tolist()[1] == pd.Timestamp(utc)
    for bad in ("Sun, 06 Dec 2026 10:00:00 (CST)", "Sun, 06 Dec 2026 10:00:00 EST (CST)"):
        path.write_text(f'id,title,published_at\na,Floods,2026-12-06T08:00:00Z\nb,Storm,"{bad}"\n')
        with pytest.raises(InputError, match=r"row 2, field 'published_at': .* names its zone"):
            load_corpus(path)


@pytest.mark.parametrize(
    "written",
    [
        "2026-12-06T10:00:00+15:00",
        "2026-12-06T10:00:00+23:59",
        "2026-12-06 10:00+2359",
        "2026-12-06T10:00:00-13:00",
        "2026-12-06T10:00:00+14:01",
        "2026-12-06T10:00:00-12:30",
        "Sun, 06 Dec 2026 10:00:00 +2359",
        "Sun, 06 Dec 2026 10:00:00 -1500",
        "Sun, 06 Dec 2026 10:00:00 +1500 (CST)",
    ],
)
def test_a_time_whose_offset_no_time_zone_has_is_refused(tmp_path, written):
    """An offset past those of every time zone (-12:00 to +14:00: Baker Island, Kiritimati) was read, up to
    ``+23:59``, so that ``2026-12-06T10:00:00+23:59`` was the 5th at 10:01 UTC, with exit status 0: no
    newsroom's clock says it; a damaged export (a time of day written into the offset) does. It is refused
    by row, naming the offset; the last offsets of real zones, ``-12:00`` and ``+14:00``, are read."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,2026-12-06T08:00:00Z\nb,Storm,"{written}"\n')
    with pytest.raises(
        InputError, match=r"row 2, field 'published_at': .*which no time zone has \(-12:00 to \+14:00\)"
    ):
        load_corpus(path)
    path.write_text(
        "id,title,published_at\na,Floods,2026-12-06T10:00:00-12:00\nb,Storm,2026-12-06T10:00:00+1400\n"
        'c,Rain,"Sun, 06 Dec 2026 10:00:00 -1200"\nd,Wind,"Sun, 06 Dec 2026 10:00:00 +14:00"\n'
    )
    assert load_corpus(path).frame["published_at"].tolist() == [
        pd.Timestamp("2026-12-06T22:00:00Z"),
        pd.Timestamp("2026-12-05T20:00:00Z"),
        pd.Timestamp("2026-12-06T22:00:00Z"),
        pd.Timestamp("2026-12-05T20:00:00Z"),
    ]


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("Sun Dec  6 21:09:58 UTC 2026", "2026-12-06T21:09:58Z"),  # Unix `date` on a host kept in UTC
        ("Sun Dec  6 21:09:58 GMT 2026", "2026-12-06T21:09:58Z"),
        ("sun dec  6 21:09:58 utc 2026", "2026-12-06T21:09:58Z"),
        ("Sun Dec  6 21:09:58 +0800 2026", "2026-12-06T13:09:58Z"),  # date +'%a %b %e %T %z %Y'
    ],
)
def test_a_unix_date_with_utc_or_an_offset_is_read(tmp_path, written, read):
    """Unix ``date`` writes ``Sun Dec  6 21:09:58 UTC 2026``: the zone before the year, where RFC 2822 puts
    it last. With a name of UTC or a signed offset it says its instant, as RFC 2822 and ISO 8601 times
    with them do, and is read so; it was refused as ending with ``'2026', which is not an offset``."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    corpus = load_corpus(path, timezone="Asia/Taipei")
    assert corpus.frame["published_at"].tolist() == [pd.Timestamp(read)] and corpus.naive_times == 0


def test_a_unix_date_of_a_year_out_of_range_is_refused_naming_the_year_written(tmp_path):
    """``email.utils`` reads a year 0001 as 2001: a Unix ``date`` of the year 0001 is refused naming it as
    written, not as a day of the week that is not the 6th of December 2001's."""
    path = tmp_path / "c.csv"
    path.write_text('id,title,published_at\na,Floods,"Sun Dec  6 21:09:58 UTC 0001"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"row 1, field 'published_at': .* is outside the years 1678-2261"):
        load_corpus(path)


@pytest.mark.parametrize(
    ("written", "zone", "iso"),
    [
        ("Sun Dec  6 21:09:58 CST 2026", "CST", "2026-12-06T21:09:58"),  # China's, US Central's or Cuba's?
        ("Sun Dec  6 21:09:58 IST 2026", "IST", "2026-12-06T21:09:58"),  # India's, Ireland's or Israel's?
        ("Sun, 06 Dec 2026 21:09:58 CST", "CST", "2026-12-06T21:09:58"),  # RFC 2822 with a zone's name
        ("2026-12-06 21:09:58 HKT", "HKT", "2026-12-06T21:09:58"),
    ],
)
def test_a_time_naming_its_zone_by_an_abbreviation_is_refused_saying_what_to_write(
    tmp_path, written, zone, iso
):
    """A zone's abbreviation (``CST``: China's UTC+08:00, US Central's UTC-06:00, Cuba's UTC-05:00) is not
    one offset, and a time naming one is refused. Unix ``date``'s ``Sun Dec  6 21:09:58 CST 2026`` was
    refused as ending with ``'2026', which is not an offset (+0800, -0500)``, which named neither the zone
    nor what was wrong; every such refusal now names the zone, says why it cannot be read and gives the
    time as ISO 8601 with an offset to write instead."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,2026-12-06T08:00:00Z\nb,Storm,"{written}"\n')
    with pytest.raises(InputError) as raised:
        load_corpus(path)
    message = str(raised.value)
    assert message.startswith(
        f"{path}: row 2, field 'published_at': time {written!r} names its zone {zone!r}, not an offset"
    ), message
    assert "abbreviation" in message and f"{iso}+08:00" in message, message
    assert "ends with '2026'" not in message, message


def test_a_title_of_a_terminals_escape_codes_alone_is_a_bad_row(tmp_path):
    """The model reads a text without a terminal's escape sequences (``\\x1b[31m``, colour codes a script's
    output leaves: :func:`nlsim.io.cells.model_text`), so a title of them alone was loaded and embedded as
    an empty text, every such item one vector, and one story. It is a bad row, named so; a description of
    them alone, embedded alone, is nothing to embed."""
    path = tmp_path / "c.csv"
    path.write_text("id,title,description\n1,Floods,Rain\n2,\x1b[31m\x1b[0m,Storm\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"c\.csv: row 2, field 'title': no text, only control characters \('\\x1b\[31m"
    ):
        load_corpus(path)
    path.write_text("id,title,description\n1,Floods,Rain\n2,Storm,\x1b[0m\u200b\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2, field 'description': nothing to embed: .* control char"):
        load_corpus(path, text_fields=("description",))
    assert load_corpus(path).texts() == ["Floods Rain", "Storm \x1b[0m\u200b"]  # as written


@pytest.mark.parametrize(
    "written",
    [
        "Sun Dec 06 2026 21:09:58 GMT+0800 (China Standard Time)",  # JavaScript's Date.toString()
        "Sun, 06 Dec 2026 21:09:58 GMT+0800",
    ],
)
def test_an_offset_after_gmt_in_a_time_not_year_first_is_refused_as_reading_two_ways(tmp_path, written):
    """``GMT+0800`` after a time not written year first (JavaScript's ``Date.toString()`` writes one) was
    refused as naming its zone ``'GMT+0800'``, a zone's abbreviation, which it is not: it is an offset after
    a name of UTC, read two ways (POSIX's sign or its opposite), refused saying so as a year-first
    ``2024-05-01 16:00 GMT+8`` is."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_corpus(path)
    message = str(raised.value)
    assert "puts an offset after 'GMT' ('GMT+0800'), which reads two ways" in message, message
    assert "abbreviation" not in message, message


def test_a_time_holding_a_character_that_shows_nothing_is_read_as_it_shows_and_a_control_named(tmp_path):
    """A left-to-right mark (U+200E, which Windows and browsers put into dates they format for right-to-left
    languages), a zero-width space or a byte-order mark in a ``published_at`` shows nothing, but the time
    was refused as neither year first, or as holding more than a date, a time and one offset; a
    placeholder for no date holding one was read as that date. Such a time is read as it shows; one
    holding a control character (a NUL) is refused naming it."""
    path = tmp_path / "c.csv"
    path.write_text(
        "id,title,published_at\n"
        "a,Floods,\u200e2026-12-06T21:09:58+08:00\n"
        "b,Storm,2026-12-06\u200bT21:09:58Z\u200f\n"
        "c,Rain,\ufeff1970-01-01\n",
        encoding="utf-8",
    )
    corpus = load_corpus(path)
    times = corpus.frame["published_at"].tolist()
    assert times[:2] == [pd.Timestamp("2026-12-06T13:09:58Z"), pd.Timestamp("2026-12-06T21:09:58Z")], times
    assert pd.isna(times[2]) and "placeholders for no date" in corpus.warnings[0], corpus.warnings
    path.write_text("id,title,published_at\na,Floods,2026-12-06T21:09:58\x00+08:00\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"row 1, field 'published_at': time .* holds U\+0000 \(a NUL character\)"
    ):
        load_corpus(path)


@pytest.mark.parametrize(
    ("written", "utc", "unread"),
    [
        ("2026-12-06 10:00:00 +0800 (CST)", "2026-12-06T02:00:00Z", "2026-12-06 10:00:00 (CST)"),
        (
            "2026-12-06T10:00:00+08:00 (China Standard Time)",
            "2026-12-06T02:00:00Z",
            "2026-12-06 10:00:00 (CST)",
        ),
        ("2026/12/06 10:00 -0500 (EST)", "2026-12-06T15:00:00Z", "2026-12-06 10:00:00 (CST)"),
        ("2026-12-06T10:00:00Z (UTC)", "2026-12-06T10:00:00Z", "2026-12-06 10:00:00 (CST)"),
        ("2026-12-06 21:09:58.123 +0800 CST", "2026-12-06T13:09:58.123Z", "2026-12-06 21:09:58 CST"),  # Go's
        ("2026-12-06 21:09:58 +0000 UTC", "2026-12-06T21:09:58Z", "2026-12-06 21:09:58 CST"),
        ("2026-12-06 21:09:58 -0500 EST", "2026-12-07T02:09:58Z", "2026-12-06 21:09:58 CST"),
        ("Sun, 06 Dec 2026 21:09:58 +0800 CST", "2026-12-06T13:09:58Z", "2026-12-06 21:09:58 CST"),
    ],
)
def test_a_zone_named_after_a_times_offset_is_not_read_the_offset_decides(tmp_path, written, utc, unread):
    """A year-first time with its offset and a comment naming the zone (``2026-12-06 10:00:00 +0800 (CST)``),
    or with its offset and then the zone's abbreviation as Go writes it (``2026-12-06 21:09:58.123 +0800
    CST``), was refused as naming its zone ``'CST'``, not an offset, though it has one (``+0000 UTC`` as
    holding more than a date, a time and one offset). The name after the offset is read as an RFC 2822
    time's comment is, not at all: the offset decides. Without an offset before it (``unread``), the name
    names the zone only, and the time is still refused."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    assert load_corpus(path).frame["published_at"].tolist() == [pd.Timestamp(utc)]
    path.write_text(f'id,title,published_at\na,Floods,"{unread}"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"row 1, field 'published_at': .* names its zone 'CST'"):
        load_corpus(path)


@pytest.mark.parametrize(
    ("column", "got"),
    [
        (pa.array([1000, None], pa.duration("s")), r"not a time \(got Timedelta"),  # a duration
        (pa.array([1_000_000, None], pa.time64("us")), r"not a time \(got time"),  # a time of day, no date
        (pa.array([["2024-05-01"], None]), r"not a time \(got ndarray"),  # a list of times
        (pa.array([decimal.Decimal("1.5"), None], pa.decimal128(5, 2)), r"a number \(Decimal\('1\.50'\)\)"),
    ],
)
def test_a_stored_published_at_that_is_no_time_is_refused_saying_what_it_is(tmp_path, column, got):
    """A Parquet ``published_at`` column of durations, times of day, lists or decimals was refused by row
    with the date parser's words (``cannot parse time Timedelta('0 days 00:16:40'): Cannot convert input
    [0 days 00:16:40] of type <class 'pandas.Timedelta'> to Timestamp``): it is refused saying it is not a
    time (a decimal, as a number is, with no unit) and what to store instead."""
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "title": ["A", "B"], "published_at": column}), path)
    with pytest.raises(InputError) as raised:
        load_corpus(path)
    message = str(raised.value)
    assert re.search(rf"row 1, field 'published_at': {got}", message), message
    assert "Cannot convert" not in message and "2024-05-01T08:00:00+08:00" in message, message


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("2024-13-01", "month must be in 1..12"),
        ("2024-02-30", "day is out of range for month"),
        ("2024-05-01T25:00:00Z", "hour must be in 0..23"),  # 24:00 is the end of the day, its own message
        ("Fri, 30 Feb 2024 08:00:00 +0800", "day is out of range for month"),
        ("Fri Feb 30 08:00:00 UTC 2024", "day is out of range for month"),
    ],
)
def test_a_time_of_no_day_or_hour_of_the_calendar_is_refused_saying_so_and_what_to_write(
    tmp_path, written, why
):
    """A time whose month, day or hour no calendar has was refused as ``cannot parse time '2024-02-30': day is
    out of range for month: 2024-02-30``, the date parser's words, the time twice and nothing of what to
    write. It is refused naming the time once, what is out of range, and the form to write."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_corpus(path)
    message = str(raised.value)
    assert (
        f"row 1, field 'published_at': time {written!r} is no day or time of the calendar ({why})" in message
    )
    assert message.count(written) == 1 and message.endswith("(2024-05-01T08:00:00+08:00)"), message


def test_a_published_at_of_true_is_refused_as_no_time_not_as_a_number(tmp_path):
    """A JSON ``true`` (or a Parquet boolean) as ``published_at`` was refused as ``a number (True) is not a
    time (seconds? milliseconds? since when?)``: it is no number to whoever wrote it. It is refused as no
    time, naming what it is."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "title": "Floods", "published_at": true}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"row 1, field 'published_at': not a time \(got bool True\)"):
        load_corpus(path)


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024年5月1日 08：00", "2024-05-01T00:00:00Z"),  # a full-width colon, as a Chinese IME types it
        (
            "２０２４－０５－０１Ｔ０８：００：００＋０８：００",
            "2024-05-01T00:00:00Z",
        ),  # full-width throughout
        ("2024/5/1 ０８:００", "2024-05-01T00:00:00Z"),
    ],
)
def test_a_time_in_full_width_digits_or_marks_is_read_as_written_in_ascii(tmp_path, written, utc):
    """A Chinese or Japanese input method types digits, colons and signs full width (``08：00``,
    ``２０２４－０５－０１``): such a time was refused as holding more than a date, a time of day and one
    offset, or as neither year first nor RFC 2822, though it reads one way only. It is read as the same
    time written in ASCII (Unicode's compatibility forms, NFKC), on the run's clock when it has no offset."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024年5月1日 08時30分", "2024-05-01T00:30:00Z"),  # Japanese, Traditional Chinese
        ("2024年5月1日8时30分15秒", "2024-05-01T00:30:15Z"),  # Simplified Chinese
        ("2024年5月1日 8點30分", "2024-05-01T00:30:00Z"),
        ("2024年5月1日 08時30分 +09:00", "2024-04-30T23:30:00Z"),
        ("2024年5月1日 08時", "2024-05-01T00:00:00Z"),  # hours alone: the hour's first minute
        ("2024年5月1日8时", "2024-05-01T00:00:00Z"),
        ("2024年5月1日 8點", "2024-05-01T00:00:00Z"),
        ("2024年5月1日 08時 +09:00", "2024-04-30T23:00:00Z"),
    ],
)
def test_a_year_first_cjk_time_of_day_in_hours_and_minutes_is_read(tmp_path, written, utc):
    """A date written 2024年5月1日 was read with a time of day written 08:00, but not with one written as
    Chinese and Japanese CMS exports write it, in hours and minutes (``08時30分``, ``8时30分15秒``) or in
    hours alone (``08時``, ``8时``): such a time was refused as holding more than a date, a time of day and
    one offset. It is read as the same time written with colons (hours alone: ``08:00``)."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01 15時30分", "2024-05-01T07:30:00Z"),
        ("2024/5/1 8点30分15秒", "2024-05-01T00:30:15Z"),
        ("2024.05.01 08時", "2024-05-01T00:00:00Z"),
        ("2024-05-01 08時30分 +09:00", "2024-04-30T23:30:00Z"),
        ("2024/5/1 下午3時20分", "2024-05-01T07:20:00Z"),
    ],
)
def test_a_cjk_time_of_day_after_a_date_in_digits_is_read(tmp_path, written, utc):
    """A time of day written as Chinese and Japanese CMS exports write it (``15時30分``, ``08時``) was read
    after a date written 2024年5月1日 but refused after one in digits (``2024-05-01 15時30分``), with a
    message that did not say why. It is read as the same time written with colons after either date."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize("written", ["2024-05-01 08時30", "2024/5/1 08時半"])
def test_a_cjk_time_of_day_read_no_one_way_after_a_date_in_digits_names_how_to_write_it(tmp_path, written):
    """After a date in digits as after one written 2024年5月1日, minutes without 分 or a half hour in words
    are refused by file, row and field, saying how a time of day in Chinese or Japanese is read."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv" in message and "row 1" in message and "published_at" in message
    assert "08時30分" in message and "2024-05-01T08:00:00+08:00" in message


@pytest.mark.parametrize("written", ["2024年5月1日 08時30", "2024年5月1日 08時半", "2024年5月1日 25時"])
def test_a_cjk_time_of_day_read_no_one_way_is_refused_naming_how_to_write_it(tmp_path, written):
    """Minutes without 分 after an hour (``08時30``), a half hour in words (``08時半``) or an hour past
    23 are no time of day read one way: refused by file, row and field, with how to write it."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv" in message and "row 1" in message and "published_at" in message
    assert "2024-05-01T08:00:00+08:00" in message and ("08時30分" in message or "0..23" in message)


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024年5月1日(水) 08:30", "2024-05-01T00:30:00Z"),  # Japanese, as a Japanese CMS writes it
        ("2024年5月1日（水曜日）8時30分", "2024-05-01T00:30:00Z"),
        ("2024年5月1日（星期三）08:30", "2024-05-01T00:30:00Z"),  # Traditional Chinese
        ("2024年5月1日 星期三 08:30", "2024-05-01T00:30:00Z"),
        ("2024年5月1日 周三 08:30", "2024-05-01T00:30:00Z"),  # Simplified Chinese
        ("2024年5月1日(三) 08:30", "2024-05-01T00:30:00Z"),  # as Taiwanese exports write it
        ("2024年5月5日(日曜日) 08:30", "2024-05-05T00:30:00Z"),
        ("2024/05/01(水) 08:30", "2024-05-01T00:30:00Z"),  # as Japanese sites write it
        ("2024-05-01（三）", "2024-04-30T16:00:00Z"),
        ("2024/05/01(Wed) 08:30", "2024-05-01T00:30:00Z"),
        ("2024-05-01 (Wednesday) 08:30", "2024-05-01T00:30:00Z"),
        ("2024年5月5日 星期日", "2024-05-04T16:00:00Z"),  # a date alone: the day's first instant
    ],
)
def test_a_cjk_date_followed_by_its_day_of_the_week_is_read(tmp_path, written, utc):
    """Japanese and Chinese CMS exports write the day of the week after a date (``2024年5月1日(水)``,
    ``2024年5月1日 星期三``): such a time was refused as holding more than a date, a time of day and one
    offset. It is read as the date and time without it when the day is the one the date falls on."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    "written",
    [
        "2024年5月1日(木) 08:30",
        "2024年5月1日 星期四 08:30",
        "2024年5月1日(四) 8時",
        "2024/05/01(木) 08:30",
        "2024/05/01(Thu) 08:30",
    ],
)
def test_a_cjk_date_followed_by_another_day_of_the_week_is_refused(tmp_path, written):
    """The 1st of May 2024 is a Wednesday: a date written with Thursday is wrong in its date or its day, and
    which cannot be told; refused by file, row and field, naming the day the date falls on."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.csv: row 1, field 'published_at': .*a Wednesday"):
        load_corpus(path, timezone="Asia/Taipei")


def test_a_parquet_file_whose_id_column_pandas_wrote_as_its_index_is_read_with_it(tmp_path):
    """``df.set_index("id").to_parquet(path)`` stores ``id`` as a column of the file, which pandas names the
    frame's index in its metadata: the corpus was refused as missing its ``id`` column (columns: title),
    though the file holds it. It is read as a column, in the file's row order; an unnamed index (a filtered
    frame's row numbers) stays no column."""
    path = tmp_path / "c.parquet"
    frame = pd.DataFrame({"id": ["b", "a"], "title": ["Snow", "Rain"], "source": ["AP", "CNA"]})
    frame.set_index("id").to_parquet(path)
    corpus = load_corpus(path, text_fields=("title",))
    assert corpus.ids == ["b", "a"] and corpus.texts() == ["Snow", "Rain"]
    assert corpus.frame["source"].tolist() == ["AP", "CNA"]
    frame.iloc[[1]].to_parquet(path)  # index [1], unnamed: stored as __index_level_0__
    corpus = load_corpus(path, text_fields=("title",))
    assert corpus.ids == ["a"] and "__index_level_0__" not in corpus.frame.columns


def test_every_row_rejected_marks_a_reason_it_cuts(tmp_path: Path) -> None:
    """The error of a file whose every row was refused (``--quarantine``) names the first reasons, each cut
    at 100 characters: a long one ended mid-word (``a spreadsheet ran the text as a formula (one st``), read
    as the whole reason. A reason cut ends with an ellipsis; a short one is whole."""
    path = tmp_path / "c.csv"
    path.write_text("id,title\na,#NAME?\nb,...\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_corpus(path, quarantine=tmp_path / "q.csv")
    message = str(error.value)
    said = re.search(r"row 1, field 'title': (.*?); row 2", message).group(1)
    assert len(said) <= 100 and said.endswith("…"), said
    assert (
        "row 2, field 'title': no text, only punctuation ('...'): a placeholder for a missing text?)"
        in message
    )


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024年5月1日 08時30分 (水)", "2024-05-01T00:30:00Z"),  # Japanese
        ("2024年5月1日 08:30（星期三）", "2024-05-01T00:30:00Z"),  # Traditional Chinese
        ("2024年5月1日 8时30分 星期三", "2024-05-01T00:30:00Z"),  # Simplified Chinese
        ("2024/05/01 08:30 (Wed)", "2024-05-01T00:30:00Z"),
        ("2024/05/01 08:30:00 (三)", "2024-05-01T00:30:00Z"),
        ("2024-05-01 08:30 周三", "2024-05-01T00:30:00Z"),
    ],
)
def test_a_day_of_the_week_after_the_time_of_day_is_read(tmp_path, written, utc):
    """A day of the week written after the time of day (``2024年5月1日 08時30分 (水)``, ``2024/05/01 08:30
    (Wed)``) was refused as holding more than a date, a time of day and one offset, or as naming its zone
    'Wed'. It is read as the same day written after the date is: the time without it, when it is the day
    the date falls on."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024年5月1日 水曜日 08:30", "2024-05-01T00:30:00Z"),
        ("2024年5月1日水曜日 8時30分", "2024-05-01T00:30:00Z"),
        ("2024/05/01 水曜日 08:30", "2024-05-01T00:30:00Z"),
        ("2024年5月1日 08:30 水曜日", "2024-05-01T00:30:00Z"),
        ("水曜日 2024年5月1日 08:30", "2024-05-01T00:30:00Z"),
    ],
)
def test_a_japanese_day_of_the_week_written_out_without_brackets_is_read(tmp_path, written, utc):
    """A Japanese day of the week written out without brackets (``2024年5月1日 水曜日 08:30``, as Japanese
    sites write it) was refused as holding more than a date, a time of day and one offset, where ``(水)``
    and ``星期三`` are read. ``水曜日`` names one day only: it is read as ``(水)`` is, before or after the
    date or after the time of day, when it is the day the date falls on."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


def test_another_japanese_day_of_the_week_written_out_is_refused(tmp_path):
    """The 1st of May 2024 is a Wednesday: ``木曜日`` (Thursday) after it is refused by file, row and field,
    naming the day the date falls on."""
    message = refused_time_cell(tmp_path, "2024年5月1日 木曜日 08:30")
    assert "c.csv: row 1, field 'published_at'" in message and "'木曜日'" in message, message
    assert "is a Wednesday" in message, message


@pytest.mark.parametrize(
    "written", ["2024年5月1日 08時30分 (木)", "2024/05/01 08:30 (Thu)", "2024年5月1日 08:30 星期四"]
)
def test_another_day_of_the_week_after_the_time_of_day_is_refused(tmp_path, written):
    """The 1st of May 2024 is a Wednesday: a Thursday after its time of day is refused by file, row and
    field, naming the day the date falls on, as a Thursday after the date is."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.csv: row 1, field 'published_at': .*a Wednesday"):
        load_corpus(path, timezone="Asia/Taipei")


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024/5/1 下午 03:20:00", "2024-05-01T07:20:00Z"),  # Excel and Windows in Taiwan
        ("2024/5/1 上午 09:05:00", "2024-05-01T01:05:00Z"),
        ("2024/5/1 上午 12:10:00", "2024-04-30T16:10:00Z"),  # 00:10, as a 12-hour clock writes it
        ("2024/5/1 下午 12:30:00", "2024-05-01T04:30:00Z"),  # 12:30
        ("2024年5月1日 下午3時20分", "2024-05-01T07:20:00Z"),
        ("2024年5月1日下午3:20", "2024-05-01T07:20:00Z"),
        ("2024年5月1日 凌晨1時", "2024-04-30T17:00:00Z"),
        ("2024年5月1日 早上8點30分", "2024-05-01T00:30:00Z"),
        ("2024年5月1日 中午12時", "2024-05-01T04:00:00Z"),
        ("2024年5月1日 中午1時", "2024-05-01T05:00:00Z"),
        ("2024年5月1日 傍晚6時", "2024-05-01T10:00:00Z"),
        ("2024年5月1日 晚上8点", "2024-05-01T12:00:00Z"),
        ("2024年5月1日(三) 下午3時20分", "2024-05-01T07:20:00Z"),
        ("2024/5/1 下午 03:20:00 +09:00", "2024-05-01T06:20:00Z"),
    ],
)
def test_a_chinese_12_hour_clock_after_a_year_first_date_is_read(tmp_path, written, utc):
    """Excel and Windows in Taiwan write a time on the 12-hour clock (``2024/5/1 下午 03:20:00``), and so
    do Chinese CMS exports (``2024年5月1日 下午3時20分``, ``晚上8点``): such a time was refused as on a
    12-hour clock, or as holding more than a date, a time and an offset. A mark before the hour that it
    holds one way is read on the 24-hour clock (``上午 12:10`` is 00:10, ``下午 12:30`` 12:30)."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("2024/5/1 下午 15:00:00", "'下午' before the hour 15"),  # 15:00 or 03:00 p.m. typed wrong?
        ("2024年5月1日 上午13時", "'上午' before the hour 13"),
        ("2024年5月1日 晚上12時", "'晚上' before the hour 12"),  # the midnight this day begins or ends with?
        ("2024年5月1日 凌晨8時", "'凌晨' before the hour 8"),
        ("2024年5月1日 晚上3時", "'晚上' before the hour 3"),
        ("2024年5月1日 下午0時", "'下午' before the hour 0"),
        # a part of the night, which may be the date's or run into the next day's: was "read only in hours
        # and minutes" (the 半 of 半夜 read as a half hour), or "holds more than a date, a time and an offset"
        ("2024年5月1日 半夜1時", "'半夜' before the hour 1"),
        ("2024年5月1日 午夜12時", "'午夜' before the hour 12"),
        ("2024/5/1 深夜 01:30", "'深夜' before the hour 1"),
    ],
)
def test_a_chinese_12_hour_clock_read_no_one_way_is_refused_saying_how_to_write_it(tmp_path, written, said):
    """A mark of the 12-hour clock before an hour it does not hold (``下午 15:00``: a 24-hour time with a
    mark, or a typo) or holds two ways (``晚上12時``: which day's midnight?) is refused by file, row and
    field, naming the mark and the hours it holds, and how to write the time."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and said in message, message
    assert "24-hour clock" in message and "2024-05-01T08:00:00+08:00" in message


@pytest.mark.parametrize(
    "written",
    [
        "2024-05-01T24:00:00",
        "2024-05-01T24:00:00+08:00",
        "2024-05-01T24:00:00.000Z",
        "20240501T240000Z",
        "2024/5/1 24:00",
        "2024年5月1日 24時",
        "2024年5月1日 24時00分",
    ],
)
def test_a_year_first_time_at_24_00_is_refused_naming_the_next_days_midnight(tmp_path, written):
    """ISO 8601 lets the end of a day be written 24:00, and Chinese and Japanese times write it ``24時``:
    such a time was refused as no time of the calendar, the date parser's 'hour must be in 0..23'. It is
    refused by file, row and field saying it is the end of its day, and that it is written as 00:00 of the
    next day (the 2nd of May), which it is not read as: the date parser reads no 24:00 in any form."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and "0..23" not in message, message
    assert "24:00, the end of its day" in message and "2024-05-02T00:00:00" in message, message


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01T08:00:00\u221208:00", "2024-05-01T16:00:00Z"),
        ("2024-05-01 03:00 \u22120500", "2024-05-01T08:00:00Z"),
        ("Wed, 01 May 2024 03:00:00 \u22120500", "2024-05-01T08:00:00Z"),
    ],
)
def test_an_offset_with_the_minus_sign_iso_8601_names_is_read(tmp_path, written, utc):
    """ISO 8601 writes a negative offset with the minus sign, U+2212 (``−08:00``), the hyphen-minus only where
    it is not to be had, and a typeset page or a word processor writes it so: such a time was refused as
    holding more than a date, a time of day and one offset. It is read as the same offset written with a
    hyphen-minus, not on the run's clock."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01 08:00 +0800 (Thu)", "2024-05-01T00:00:00Z"),
        ("2024-05-01T08:00:00Z (四)", "2024-05-01T08:00:00Z"),
    ],
)
def test_another_day_of_the_week_after_a_year_first_times_offset_is_refused(tmp_path, written, utc):
    """A day of the week in brackets after a year-first time's offset was dropped unread, as the comment
    after an RFC 2822 offset is (``+0800 (CST)``): a Thursday after the 1st of May 2024, a Wednesday, was
    read with exit 0, where after the date or the time of day it is refused. It is checked as there."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.csv: row 1, field 'published_at': .*a Wednesday"):
        load_corpus(path, timezone="Asia/Taipei")
    right = written.replace("(Thu)", "(Wed)").replace("(四)", "(三)")
    path.write_text(f'id,title,published_at\na,Floods,"{right}"\n', encoding="utf-8")
    assert load_corpus(path).frame["published_at"].tolist() == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01 8", "2024-05-01T00:00:00Z"),
        ("2024/5/1 8", "2024-05-01T00:00:00Z"),
        ("2024-05-01T8+08:00", "2024-05-01T00:00:00Z"),
        ("20240501T8Z", "2024-05-01T08:00:00Z"),
        ("2024-05-01 8 UTC", "2024-05-01T08:00:00Z"),
    ],
)
def test_a_year_first_time_of_day_in_one_digit_hours_alone_is_read_as_in_two(tmp_path, written, utc):
    """A year-first time with its hour alone is read in two digits (``2024-05-01 08``: 08:00), but in one
    (``2024-05-01 8``) it was refused as 'no day or time of the calendar (Unknown datetime string format,
    unable to parse)', the date parser's words. It is read as the same hour in two digits."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


def test_a_placeholder_date_written_in_chinese_or_on_a_12_hour_clock_is_read_as_undated(tmp_path):
    """A placeholder for no date written as Excel in Taiwan writes a time (``1899/12/30 上午 12:00:00``, the
    spreadsheet's zero date; ``1970/1/1 上午 12:00:00``) or as a Chinese CMS writes one (``1970年1月1日
    00時00分``, ``1900年1月1日``) was read as a real time of 1899, 1900 or 1970, with exit 0, where the same
    placeholder written 1970-01-01 00:00:00 is no date. It is no date, and the corpus warns of it."""
    path = tmp_path / "c.csv"
    rows = [
        "2026-12-06T08:00:00Z",
        "1899/12/30 上午 12:00:00",
        "1970/1/1 上午 12:00:00",
        "1970年1月1日 00時00分",
        "1900年1月1日",
        "1970年1月1日(木) 00:00",
        "1970/1/1 上午 12:00:01",  # a second after: a time
    ]
    path.write_text(
        "id,title,published_at\n" + "".join(f"n{i},Story {i},{r}\n" for i, r in enumerate(rows)),
        encoding="utf-8",
    )
    corpus = load_corpus(path, timezone="Asia/Taipei")
    assert corpus.frame["published_at"].isna().tolist() == [False, True, True, True, True, True, False]
    (warning,) = corpus.warnings
    assert "5 published_at value(s) are placeholders for no date" in warning, warning


@pytest.mark.parametrize(
    ("written", "zone", "wall"),
    [
        ("2024年5月1日 15:20 (台北時間)", "台北時間", "2024-05-01T15:20:00"),
        ("2024-05-01 15:20（北京时间）", "北京时间", "2024-05-01T15:20:00"),
        ("2024年5月1日 15時20分 (日本時間)", "日本時間", "2024-05-01T15:20:00"),
        ("2024年5月1日 15:20 北京时间", "北京时间", "2024-05-01T15:20:00"),
        ("2024/05/01 15:20 (台北標準時間)", "台北標準時間", "2024-05-01T15:20:00"),
    ],
)
def test_a_year_first_time_naming_its_zone_in_chinese_words_is_refused_saying_so(
    tmp_path, written, zone, wall
):
    """Chinese and Japanese news sites write the zone after the time in words (``15:20（北京时间）``,
    ``(台北時間)``): such a time was refused as holding a time of day in Chinese or Japanese read only in
    hours and minutes (the 時 of 時間), or as holding more than a date, a time and an offset, neither of
    which it does. It is refused naming the zone as written, and the time to write with its offset."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and f"names its zone in words, {zone!r}" in message
    assert f"{wall}+08:00" in message and "hours and minutes" not in message, message


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024年5月1日 午後3時20分", "2024-05-01T07:20:00Z"),  # Japanese: 午前 and 午後 run 0 to 11
        ("2024年5月1日(水) 午前0時30分", "2024-04-30T16:30:00Z"),
        ("2024年5月1日 午後0時", "2024-05-01T04:00:00Z"),
        ("2024/05/01 午前 11:59", "2024-05-01T03:59:00Z"),
        ("2024-05-01 오후 3:20:00", "2024-05-01T07:20:00Z"),  # Excel and Windows in Korea
        ("2024-05-01 오전 12:10:00", "2024-04-30T16:10:00Z"),
        ("2024-05-01 오후 12:10:00", "2024-05-01T04:10:00Z"),
    ],
)
def test_a_japanese_or_korean_12_hour_clock_after_a_year_first_date_is_read(tmp_path, written, utc):
    """Japanese CMS exports write 午前 and 午後 before the hour (``2024年5月1日 午後3時20分``), and Excel and
    Windows in Korea 오전 and 오후 (``2024-05-01 오후 3:20:00``): such a time was refused as on a 12-hour
    clock. It is read on the 24-hour clock as Chinese marks are: 午前 and 午後 on Japan's clock, which runs
    0 to 11 (午後0時 is noon), 오전 and 오후 as a.m. and p.m. (오전 12:10 is 00:10)."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("2024年5月1日 午前12時", "'午前' before the hour 12"),  # noon by Japan's 1872 rule, or midnight?
        ("2024年5月1日 午後12時", "'午後' before the hour 12"),
        ("2024-05-01 오후 15:00:00", "'오후' before the hour 15"),
    ],
)
def test_a_japanese_or_korean_12_hour_clock_read_no_one_way_is_refused(tmp_path, written, said):
    """午前12時 is noon by the rule Japan's clock was set by in 1872 and midnight on most clocks, and 午後12時
    likewise; an hour past 12 after 오후 is a 24-hour time with a mark, or a typo: each is refused by file,
    row and field, naming the mark and the hours it holds."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and said in message, message
    assert "24-hour clock" in message, message


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01 3:20 p.m.", "2024-05-01T07:20:00Z"),  # Canada's English: year first, p.m.
        ("2024-05-01 03:20:00 PM", "2024-05-01T07:20:00Z"),
        ("2024/5/1 12:10:00 AM", "2024-04-30T16:10:00Z"),
        ("2024-05-01 12:30 pm", "2024-05-01T04:30:00Z"),
        ("2024/5/1 PM 03:20:00", "2024-05-01T07:20:00Z"),  # Windows in Taiwan with English marks
        ("2024年5月1日 3:20 PM", "2024-05-01T07:20:00Z"),
        ("2024-05-01 3:20 PM +09:00", "2024-05-01T06:20:00Z"),
    ],
)
def test_am_or_pm_after_a_year_first_date_is_read(tmp_path, written, utc):
    """A year-first time on the 12-hour clock with AM or PM (``2024-05-01 3:20 p.m.``, as Canada's English
    writes it; ``2024/5/1 PM 03:20:00``, Windows in Taiwan with English marks) was refused as on a 12-hour
    clock, though it reads one way. It is read on the 24-hour clock (12:10 AM is 00:10, 12:30 PM 12:30); a
    time whose date is not year first (``5/1/2024 3:20 PM``) is still refused, its date two ways."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("2024-05-01 15:20 PM", "'PM' after the hour 15"),
        ("2024-05-01 0:20 AM", "'AM' after the hour 0"),
        ("2024-05-013:20 PM", "is on a 12-hour clock ('PM')"),  # 01 3:20, or 0 13:20? no separator
    ],
)
def test_am_or_pm_with_an_hour_it_does_not_hold_is_refused(tmp_path, written, said):
    """15:20 PM is a 24-hour time with a mark, or a typo, and 0:20 AM no time of a 12-hour clock (which runs
    1 to 12): refused by file, row and field, naming the mark and the hours it holds."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and said in message, message
    assert "24-hour" in message, message


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01 Wed", "2024-04-30T16:00:00Z"),
        ("2024-05-01 Wed 08:00", "2024-05-01T00:00:00Z"),
        ("2024/05/01 Wednesday 08:00", "2024-05-01T00:00:00Z"),
        ("2024-05-01 08:00 Wed.", "2024-05-01T00:00:00Z"),
        ("2024年5月1日 Wed 08:00", "2024-05-01T00:00:00Z"),
    ],
)
def test_a_day_of_the_week_in_english_without_brackets_is_read(tmp_path, written, utc):
    """A day of the week in English without brackets after a year-first date or time (``2024-05-01 Wed
    08:00``) was refused as naming its zone 'Wed' (an abbreviation of no zone), where ``(Wed)`` is read. It
    is read as in brackets, checked against the date."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    "written", ["2024-05-01 Thu 08:00", "2024-05-01 08:00 Thursday", "2024-05-01 08:00 +0800 Thu"]
)
def test_another_day_of_the_week_in_english_without_brackets_is_refused(tmp_path, written):
    """The 1st of May 2024 is a Wednesday: ``Thu`` after it was refused as naming its zone 'Thu', or, after
    an offset, dropped unread as a zone's name after an offset is (``+0800 CST``, as Go writes a time), the
    time read with exit 0; it is refused naming the day the date falls on."""
    path = tmp_path / "c.csv"
    path.write_text(f'id,title,published_at\na,Floods,"{written}"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.csv: row 1, field 'published_at': .*a Wednesday"):
        load_corpus(path, timezone="Asia/Taipei")


def test_a_json_array_corpus_is_checked_row_by_row_as_jsonl_is(tmp_path):
    """A ``.json`` corpus of one array of objects: its elements are the rows (counted from 1), each checked
    as a JSON Lines row is, integer ids kept as integers, and a bad element goes to the quarantine."""
    rows = [{"id": 7, "title": "Floods"}, {"id": 8, "title": "Storm"}]
    (tmp_path / "ok.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    assert load_corpus(tmp_path / "ok.json").frame["id"].tolist() == ["7", "8"]
    bad = [*rows, {"id": 9.5, "title": "Heat"}]
    (tmp_path / "bad.json").write_text(json.dumps(bad, indent=2), encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: row 3, field 'id': id must be text or an integer"):
        load_corpus(tmp_path / "bad.json")
    (tmp_path / "odd.json").write_text('[{"id": "a", "title": "Floods"}, "b", {"id": "c", "title": "Storm"}]')
    corpus = load_corpus(tmp_path / "odd.json", quarantine=tmp_path / "q.csv")
    assert corpus.frame["id"].tolist() == ["a", "c"] and len(corpus.quarantined) == 1


@pytest.mark.parametrize("space", [" ", "\u00a0", "\u3000"])
def test_an_id_first_written_with_white_space_around_it_is_named_as_written_there(tmp_path, space):
    """The first row wrote `` 1 `` and a later one ``1``: the refusal of the later one named the id ``'1'``
    at row 1, where the editor sees `` 1 ``. It now says how the first row wrote it, and that the spaces
    were dropped (and how the row itself wrote it too, where that differs again)."""
    from nlsim.io.corpus import load_items

    path = write_csv(tmp_path / "c.csv", f'id,title\n"{space}1{space}",Floods\n2,Storm\n1,Fire\n')
    shown = repr(f"{space}1{space}")
    for load in (load_corpus, load_items):
        with pytest.raises(InputError) as info:
            load(path)
        expected = f"row 3, field 'id': duplicate id '1' (first seen at row 1, written {shown} there: white "
        assert expected + "space around an id is dropped)" in str(info.value)
    write_csv(path, f'id,title\n"{space}1",Floods\n"1{space}",Fire\n')
    with pytest.raises(InputError) as info:
        load_corpus(path)
    both = f"(first seen at row 1, written {repr(space + '1')} there; written {repr('1' + space)} here: white"
    assert both in str(info.value)


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("Wednesday, 2024-05-01 08:00", "2024-05-01T00:00:00Z"),
        ("Wed 2024/05/01 08:00", "2024-05-01T00:00:00Z"),
        ("Wed., 2024-05-01T08:00:00+09:00", "2024-04-30T23:00:00Z"),
        ("星期三 2024年5月1日 08:30", "2024-05-01T00:30:00Z"),
        ("周三，2024年5月1日 8時30分", "2024-05-01T00:30:00Z"),
        ("(三) 2024/05/01", "2024-04-30T16:00:00Z"),  # a date alone: the day's first instant
        ("(水) 2024/05/01 下午 03:20:00", "2024-05-01T07:20:00Z"),
        ("Wed 2024-05-01 3:20 PM", "2024-05-01T07:20:00Z"),
    ],
)
def test_a_day_of_the_week_before_a_year_first_date_is_read(tmp_path, written, utc):
    """A day of the week written before a year-first date (``Wednesday, 2024-05-01 08:00``, ``星期三
    2024年5月1日 08:30``) was refused as neither year first nor RFC 2822, where after the date or the time
    of day it is read. It is read as there, checked against the date."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("Thursday, 2024-05-01 08:00", "'Thursday'"),
        ("Thu 2024/05/01 08:00", "'Thu'"),
        ("星期四 2024年5月1日 08:30", "'星期四'"),
        ("(四) 2024/05/01", "'(四)'"),
    ],
)
def test_another_day_of_the_week_before_a_year_first_date_is_refused(tmp_path, written, said):
    """The 1st of May 2024 is a Wednesday: a Thursday before it is refused by file, row and field, naming
    the time as written, the day it says and the day the date falls on."""
    message = refused_time_cell(tmp_path, written)
    assert f"c.csv: row 1, field 'published_at': time {written!r} says {said}" in message, message
    assert "a Wednesday" in message, message


@pytest.mark.parametrize(
    "written",
    ["Wed 2024-05-01 08:00 (Wed)", "Wed 2024-05-01 (Thu) 08:00", "Wed 2024-05-01 08:00 +0800 (Thu)"],
)
def test_a_day_of_the_week_before_and_after_a_year_first_date_is_refused(tmp_path, written):
    """A day of the week before the date and another after the date, the time of day or the offset is
    refused as saying it twice: one after an offset is never dropped unread as a comment is."""
    message = refused_time_cell(tmp_path, written)
    assert f"time {written!r} says its day of the week twice" in message, message


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01,08:00", "2024-05-01T00:00:00Z"),  # as some exports join a date and its time
        ("2024/5/1,08:00:00+09:00", "2024-04-30T23:00:00Z"),
        ("2024-05-01,8:05 UTC", "2024-05-01T08:05:00Z"),
        ("2024年5月1日,08:00", "2024-05-01T00:00:00Z"),
        ("2024年5月1日, 08時30分", "2024-05-01T00:30:00Z"),  # as 2024-05-01, 08:00 is read
        ("2024-05-01, 08:00", "2024-05-01T00:00:00Z"),
    ],
)
def test_a_comma_between_a_year_first_date_and_its_time_is_read(tmp_path, written, utc):
    """A comma and no space between a year-first date and its time of day (``2024-05-01,08:00``) was refused
    as holding more than a date, a time of day and one offset, and so was a comma after a date written
    2024年5月1日, where ``2024-05-01, 08:00`` is read. A time of day in hours and minutes after it is read as
    after a space."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize("written", ["2024-05-01,8", "2024-05-01,0800", "20240501,08:00", "2024-05-01,08"])
def test_a_comma_after_a_year_first_date_before_no_clock_time_is_refused_saying_so(tmp_path, written):
    """After a date and a comma, a number that is no time of day in hours and minutes (``2024-05-01,8``: a
    second field? ``20240501,08``: a number with a decimal comma?) is refused naming the comma, not as
    holding 'a second time or offset'."""
    message = refused_time_cell(tmp_path, written)
    assert f"c.csv: row 1, field 'published_at': time {written!r} has a comma after its date" in message
    assert "2024-05-01T08:00:00+08:00" in message, message


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024/5/1 04:52 下午", "2024-05-01T08:52:00Z"),
        ("2024/5/1 04:52:00 下午", "2024-05-01T08:52:00Z"),
        ("2024/5/1 12:10:00 上午", "2024-04-30T16:10:00Z"),  # 00:10, as before the hour
        ("2024年5月1日 3時20分 下午", "2024-05-01T07:20:00Z"),
        ("2024年5月1日 3:20下午", "2024-05-01T07:20:00Z"),
        ("2024-05-01 3:20:00 오후", "2024-05-01T07:20:00Z"),
        ("2024/5/1 04:52 下午 +09:00", "2024-05-01T07:52:00Z"),
        ("2024/5/1 04:52 下午 (三)", "2024-05-01T08:52:00Z"),
    ],
)
def test_a_chinese_12_hour_mark_after_the_time_is_read_as_before_the_hour(tmp_path, written, utc):
    """A Chinese, Japanese or Korean 12-hour mark after the time of day (``2024/5/1 04:52 下午``) was refused
    as 'on a 12-hour clock', where before the hour it is read. It is read by the same rule as there."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("2024/5/1 15:00 下午", "'下午' after the hour 15"),
        ("2024年5月1日 12時 晚上", "'晚上' after the hour 12"),
        ("2024年5月1日 1時 半夜", "'半夜' after the hour 1"),
    ],
)
def test_a_chinese_12_hour_mark_after_the_time_read_no_one_way_is_refused(tmp_path, written, said):
    """A mark after the time of day that does not hold its hour one way is refused as before the hour is,
    naming the mark, where it is and the hours it holds."""
    message = refused_time_cell(tmp_path, written)
    assert f"c.csv: row 1, field 'published_at': time {written!r} has {said}" in message, message
    assert "24-hour clock" in message, message


def test_a_chinese_12_hour_mark_before_and_after_the_time_is_refused(tmp_path):
    """A mark both before the hour and after the time (``下午 04:52 下午``) is read no one way: refused."""
    message = refused_time_cell(tmp_path, "2024/5/1 下午 04:52 下午")
    assert "c.csv: row 1, field 'published_at': time '2024/5/1 下午 04:52 下午'" in message, message


@pytest.mark.parametrize(
    ("written", "write"),
    [
        ("2024-05-01 23:59:60", "2024-05-01T23:59:59"),
        ("2024-05-01T23:59:60Z", "2024-05-01T23:59:59"),
        ("2016-12-31T23:59:60.5+00:00", "2016-12-31T23:59:59"),  # the last leap second, to this day
        ("20161231T235960Z", "2016-12-31T23:59:59"),
        ("2024年5月1日 7時59分60秒", "2024-05-01T07:59:59"),
        ("Wed, 01 May 2024 23:59:60 +0000", "2024-05-01T23:59:59"),
        ("Wed May  1 23:59:60 2024", "2024-05-01T23:59:59"),
        ("Wed May  1 23:59:60 UTC 2024", "2024-05-01T23:59:59"),
    ],
)
def test_a_leap_second_is_refused_saying_so(tmp_path, written, write):
    """A leap second (``23:59:60``, which UTC adds at the end of some days, and ``date``, ``ntpd`` logs and
    some feeds write) was refused as no time of the calendar, 'second must be in 0..59', the date parser's
    words. It is refused by file, row and field naming it and the time to write, the second before it."""
    message = refused_time_cell(tmp_path, written)
    assert f"c.csv: row 1, field 'published_at': time {written!r} is at second 60, a leap second" in message
    assert write in message and "0..59" not in message, message


@pytest.mark.parametrize("written", ["Wed May  1 24:00:00 UTC 2024", "Wed May  1 24:00:00 +0800 2024"])
def test_unix_dates_24_00_is_refused_naming_the_next_days_midnight(tmp_path, written):
    """A time as Unix ``date`` writes it at 24:00 was refused as no time of the calendar ('hour must be in
    0..23'), where ISO 8601's and RFC 2822's 24:00 is named the end of its day: it is named so too."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and "0..23" not in message, message
    assert "24:00, the end of its day" in message and "2024-05-02T00:00:00" in message, message


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("2024/5/1 下午 03:20:00 CST", "names its zone 'CST'"),  # was named '2024/5/1 15:20:00 CST'
        ("民國113年5月1日 08:00 CST", "names its zone 'CST'"),  # was named '2024年5月1日 08:00 CST'
        ("2024-05-01 下午3点半", "has a time of day in Chinese"),  # was named '2024-05-01 15点半'
        ("2024/5/1 PM 03:20:00 下午", "is on a 12-hour clock"),  # was named '2024/5/1 15:20:00 下午'
        ("2024年5月1日(三) 08:00 GMT+8", "puts an offset after 'GMT'"),
        ("2024-W18-3 08:00 HKT", "names its zone 'HKT'"),  # was named '2024-05-01 08:00 HKT'
        ("民國113年5月1日 星期四", "says '星期四'"),  # was named '2024年5月1日 星期四'
        ("民國113年5月1日 凌晨8時", "has '凌晨' before the hour 8"),  # was named '2024年5月1日 凌晨8時'
        ("民國113年5月1日 13:00 PM", "has 'PM' after the hour 13"),  # was named '2024年5月1日 13:00 PM'
    ],
)
def test_a_refused_year_first_time_is_named_as_written(tmp_path, written, said):
    """A year-first time refused after its 12-hour clock, Minguo year, week date or day of the week was read
    was named with them rewritten (``2024/5/1 下午 03:20:00 CST`` as ``2024/5/1 15:20:00 CST``), a time the
    file does not hold and the editor cannot find. It is named as the file writes it."""
    message = refused_time_cell(tmp_path, written)
    assert f"c.csv: row 1, field 'published_at': time {written!r} {said}" in message, message


@pytest.mark.parametrize(
    "written",
    [
        "2024-05-01 08:00 +0800 (Thu) (CST)",
        "2024-05-01 08:00 +0800 (CST) (Thu)",
        "2024-05-01 08:00Z (四)(UTC)",
    ],
)
def test_another_day_of_the_week_among_comments_after_a_year_first_offset_is_refused(tmp_path, written):
    """A Thursday in brackets after a year-first time's offset is refused (the 1st of May 2024 is a
    Wednesday), but with a zone's comment beside it (``+0800 (Thu) (CST)``) both were dropped unread as one
    comment, and the time read with exit 0. The day is checked, the zone's comment still dropped."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and "a Wednesday" in message, message
    right = written.replace("(Thu)", "(Wed)").replace("(四)", "(三)")
    assert read_time_cell(tmp_path, right) != [pd.NaT]


@pytest.mark.parametrize(
    "written",
    ["2024年5月1日 08:00 +0900 (四)", "2024年5月1日 08時30分 +09:00 (木)", "2024年5月1日 08:00 +08:00 Thu"],
)
def test_another_day_of_the_week_after_the_offset_of_a_chinese_date_is_refused(tmp_path, written):
    """After the offset of a time whose date is written 2024年5月1日, a day of the week (``+0900 (四)``,
    ``+08:00 Thu``) was dropped unread as a zone's comment or name is, and a Thursday given to the 1st of
    May 2024, a Wednesday, read with exit 0, where after 2024-05-01's offset it is refused: it is checked."""
    message = refused_time_cell(tmp_path, written)
    assert "c.csv: row 1, field 'published_at'" in message and "a Wednesday" in message, message
    right = written.replace("(四)", "(三)").replace("(木)", "(水)").replace("Thu", "Wed")
    assert read_time_cell(tmp_path, right) != [pd.NaT]


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01 周三 08:30", "2024-05-01T00:30:00Z"),
        ("2024/05/01 星期三 08:30", "2024-05-01T00:30:00Z"),
        ("2024-05-01 禮拜三", "2024-04-30T16:00:00Z"),
        ("2024-05-01 週三 下午 3:20", "2024-05-01T07:20:00Z"),
    ],
)
def test_a_chinese_day_of_the_week_after_a_date_in_digits_is_read(tmp_path, written, utc):
    """A day of the week in Chinese words after a date in digits (``2024-05-01 周三 08:30``) was refused as
    holding more than a date, a time of day and one offset, where after the time of day (``2024-05-01
    08:30 周三``) or after 2024年5月1日 it is read: it is read as there, and a Thursday refused."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]
    message = refused_time_cell(tmp_path, written.replace("三", "四"))
    assert "a Wednesday" in message, message


@pytest.mark.parametrize(
    ("written", "utc"),
    [
        ("2024-05-01,3:20 PM", "2024-05-01T07:20:00Z"),
        ("2024-05-01, PM 3:20", "2024-05-01T07:20:00Z"),
        ("2024-05-01,下午 3:20", "2024-05-01T07:20:00Z"),
        ("2024年5月1日, 下午3時20分", "2024-05-01T07:20:00Z"),
        ("2024/5/1, 04:52 下午", "2024-05-01T08:52:00Z"),
    ],
)
def test_a_comma_between_a_year_first_date_and_a_12_hour_time_is_read(tmp_path, written, utc):
    """A comma between a year-first date and a time on the 12-hour clock (``2024-05-01,3:20 PM``,
    ``2024年5月1日, 下午3時20分``) was refused as 'on a 12-hour clock', where after a space, or before a time
    on the 24-hour clock (``2024-05-01,08:00``), it is read: it is read as there."""
    assert read_time_cell(tmp_path, written) == [pd.Timestamp(utc)]


def test_a_day_of_the_week_before_a_minguo_date_is_read_as_before_a_date_in_full(tmp_path):
    """A day of the week before a Minguo year named as one (``星期三 民國113年5月1日 08:30``) was refused as
    neither year first nor RFC 2822, and one before a bare Minguo year (``星期三 113年5月1日``) so too, not
    as a Minguo year: they are read, and refused, as after the year written in full."""
    assert read_time_cell(tmp_path, "星期三 民國113年5月1日 08:30") == [pd.Timestamp("2024-05-01T00:30:00Z")]
    assert "a Wednesday" in refused_time_cell(tmp_path, "(四) 民國113年5月1日")
    assert "a Minguo year?" in refused_time_cell(tmp_path, "星期三 113年5月1日")


def test_an_items_texts_and_id_are_read_without_the_white_space_around_them(tmp_path):
    path = write_csv(tmp_path / "c.csv", 'id,title,source\n1,"  Floods in the north "," AP "\n')
    corpus = load_corpus(path)
    assert corpus.frame[["title", "source"]].values.tolist() == [["Floods in the north", "AP"]]


def test_an_id_of_true_or_false_is_refused_not_read_as_text(tmp_path):
    """JSON's ``true`` is no id (Python reads it as the integer 1's kind): the row is refused by its field."""
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "title": "Floods"}\n{"id": true, "title": "Storm"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2, field 'id': id must be text or an integer \(got bool\)"):
        load_corpus(path)


def test_an_item_dated_at_the_latest_time_allowed_is_kept(tmp_path):
    path = write_csv(tmp_path / "c.csv", "id,title,published_at\n1,Floods,2026-01-01T00:00:00Z\n")
    assert load_corpus(path, not_after=pd.Timestamp("2026-01-01", tz="UTC")).ids == ["1"]
    with pytest.raises(InputError, match="dated in the future"):
        load_corpus(path, not_after=pd.Timestamp("2025-12-31 23:59:59", tz="UTC"))


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        (("description",), "description holds no text"),
        (("description", "body"), "description,body hold no text"),
    ],
)
def test_nothing_to_embed_without_the_title_says_to_embed_the_title_too(tmp_path, fields, said):
    path = write_csv(tmp_path / "c.csv", "id,title,description,body\n1,Floods,,\n")
    with pytest.raises(InputError) as info:
        load_corpus(path, text_fields=fields)
    assert said in str(info.value)
    assert f"or embed the title too (--text-fields title,{','.join(fields)})" in str(info.value)


@pytest.mark.parametrize(("rows", "more"), [(3, False), (4, True)])
def test_every_row_rejected_says_how_many_more_past_the_rows_it_names(tmp_path, rows, more):
    path = write_csv(tmp_path / "c.csv", "id,title\n" + "".join(f"{i},\n" for i in range(rows)))
    with pytest.raises(InputError) as info:
        load_corpus(path, quarantine=tmp_path / "q.csv")
    assert ("more)" in str(info.value)) is more and str(info.value).count("field 'title'") == 3


def test_a_reason_of_the_longest_length_shown_is_shown_whole():
    from nlsim.io.corpus import _cut

    assert _cut("x" * 100) == "x" * 100 and _cut("x" * 101) == "x" * 99 + "…"


def test_quarantined_rows_are_in_the_files_order_whether_broken_or_refused(tmp_path):
    """A row refused for its values (row 1) comes before a later row that could not be split (row 2)."""
    path = write_csv(tmp_path / "c.csv", "id,title\n1,\n2,Floods,extra\n3,Storm\n")
    corpus = load_corpus(path, quarantine=tmp_path / "q.csv")
    assert corpus.ids == ["3"] and corpus.quarantined["row"].tolist() == [1, 2]


def test_misread_texts_are_named_in_row_order_and_by_the_first_field_misread():
    from nlsim.io.corpus import misread_warning

    title, description = _misread("颱風凱米今晚登陸", "gb18030"), _misread("全台停班停課", "gb18030")
    frame = pd.DataFrame(
        {"id": ["a", "b"], "title": ["Floods", title], "description": [description, description]}
    )
    warning = misread_warning("news.csv", frame)
    assert "in title, description): ids a, b;" in warning and f"the first, {description!r}" in warning
    frame["title"] = [title, "Floods"]
    assert f"the first, {title!r}" in misread_warning("news.csv", frame)


def test_every_field_holding_a_misread_text_is_named_though_each_row_holds_one_in_its_title():
    """Both fields of each row are misread: the line names both, and both encodings, not only the title's."""
    from nlsim.io.corpus import misread_warning

    title, description = _misread("颱風凱米今晚登陸", "cp1252"), _misread("全台停班停課", "gb18030")
    frame = pd.DataFrame({"id": ["a", "b"], "title": [title, title], "description": [description] * 2})
    warning = misread_warning("news.csv", frame)
    assert "2 item(s) hold text that reads as UTF-8 misread as cp1252, gb18030 and saved" in warning
    assert "in title, description): ids a, b;" in warning and f"the first, {title!r}" in warning


def test_ids_that_differ_only_in_the_number_of_spaces_are_named_and_one_alone_is_not():
    from nlsim.io.corpus import lookalike_ids_warning

    assert "'n  1' and 'n 1'" in lookalike_ids_warning("news.csv", ["n 1", "n  1"])
    assert lookalike_ids_warning("news.csv", ["ｎ２", "n1"]) is None  # nothing it looks like


def test_items_are_read_from_the_first_text_column_of_the_list(tmp_path):
    from nlsim.io.corpus import load_items

    path = tmp_path / "items.jsonl"
    path.write_text('{"id": 1, "title": "Floods", "title_zh_tw": "水災"}\n', encoding="utf-8")
    assert load_items(path)["text"].tolist() == ["水災"]


def test_texts_of_other_fields_than_the_runs_are_those_fields(tmp_path):
    corpus = load_corpus(write_csv(tmp_path / "c.csv", "id,title,description\n1,Floods,Rain\n"))
    assert corpus.texts() == ["Floods Rain"] and corpus.texts(("description",)) == ["Rain"]
    assert corpus.content_hashes(("description",)) != corpus.content_hashes()


@pytest.mark.parametrize(("found", "more"), [(5, False), (6, True)])
def test_placeholder_and_control_warnings_name_five_rows_then_say_there_are_more(found, more):
    from nlsim.io.corpus import controls_warning, placeholder_times_warning

    times = placeholder_times_warning("day.csv", [(n, "1970-01-01") for n in range(1, found + 1)])
    controls = controls_warning("day.csv", [(n, [("title", "\x00")]) for n in range(1, found + 1)])
    assert ("rows 1, 2, 3, 4, 5 ...;" in times) is more and ("row 5 (title) ...;" in controls) is more
