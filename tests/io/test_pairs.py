"""Pair files: TSV/CSV/Parquet load; bad rows are refused with file, row and field."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from nlsim.errors import ConfigError, InputError
from nlsim.io.pairs import load_pairs, validate_pairs
from nlsim.progress import one_run

HEADER = "pair_id\ttext_a\ttext_b\tscore\tsplit\n"


def write(tmp_path: Path, body: str, name: str = "pairs.tsv") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + body, encoding="utf-8")
    return p


def test_loads_tsv_csv_parquet_alike(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "pair_id": ["a", "b"],
            "text_a": ["股市", "x"],
            "text_b": ["股票", "y"],
            "score": [0.75, 0.0],
            "split": ["train", "test"],
            "stratum": ["s", "t"],
        }
    )
    frame.to_csv(tmp_path / "p.tsv", sep="\t", index=False)
    frame.to_csv(tmp_path / "p.csv", index=False)
    frame.to_parquet(tmp_path / "p.parquet", index=False)
    loaded = [load_pairs(tmp_path / f"p.{ext}") for ext in ("tsv", "csv", "parquet")]
    for got in loaded:
        assert got[["pair_id", "text_a", "text_b", "score", "split"]].equals(
            loaded[0][["pair_id", "text_a", "text_b", "score", "split"]]
        )
        assert got["score"].tolist() == [0.75, 0.0]
        assert "stratum" in got.columns
    assert load_pairs(tmp_path / "p.tsv", split="test")["pair_id"].tolist() == ["b"]


def test_the_annotated_set_loads(repo_root: Path) -> None:
    pairs = load_pairs(repo_root / "annotations" / "thucnews_tw_pairs.tsv")
    # the first 2,000, batch 2 (179 train, 89 validation), batch 3 (206 train, 103 validation), batch 4
    # (446 train, 223 validation) and batch 5 (221 train, 110 validation)
    assert len(pairs) == 3577
    assert pairs["split"].value_counts().to_dict() == {"train": 2452, "validation": 825, "test": 300}
    assert pairs["score"].between(0, 1).all()
    batch2 = pairs[pairs["pair_id"].str.startswith("b2-")]
    assert len(batch2) == 268 and batch2["notes"].str.startswith("double-scored").sum() == 28
    batch4 = pairs[pairs["pair_id"].str.startswith("b4-")]
    assert len(batch4) == 669 and (batch4["score"] >= 0.875).sum() == 86
    batch5 = pairs[pairs["pair_id"].str.startswith("b5-")]
    assert len(batch5) == 331 and (batch5["score"] >= 0.875).sum() == 63
    inside_large = batch5[batch5["stratum"] == "editor-loop:cluster5+"]
    assert len(inside_large) == 16 and (inside_large["score"] < 0.875).all()  # none the same story


@pytest.mark.parametrize(
    ("body", "row", "field", "reason"),
    [
        ("p1\ta\tb\t0.5\ttrain\np2\tc\td\t1.25\ttrain\n", 2, "score", "outside [0, 1]"),
        ("p1\ta\tb\t-0.1\ttrain\n", 1, "score", "outside [0, 1]"),
        ("p1\ta\tb\t\ttrain\n", 1, "score", "missing score"),
        ("p1\ta\tb\thigh\ttrain\n", 1, "score", "not a number"),
        ("p1\ta\tb\t0.5\ttrain\np2\t  \td\t0.5\ttrain\n", 2, "text_a", "empty text"),
        ("p1\ta\t\t0.5\ttrain\n", 1, "text_b", "empty text"),
        (
            "p1\ta\tb\t0.5\ttrain\np2\tc\t\u200b\ufeff\t0.5\ttrain\n",
            2,
            "text_b",
            "empty text (only invisible characters: U+200B, U+FEFF)",
        ),
        (
            "p1\t\u3164\u2800\tb\t0.5\ttrain\n",
            1,
            "text_a",
            "empty text (only invisible characters: U+2800, U+3164)",
        ),
        ("p1\ta\tb\t0.5\ttrain\np1\tc\td\t0.5\ttest\n", 2, "pair_id", "duplicate pair id 'p1'"),
        ("p1\ta\tb\t0.5\tdev\n", 1, "split", "unknown split"),
        ("p1\ta\tb\t0.5\tｔｒａｉｎ\n", 1, "split", "full-width letters or capitals: write it 'train'"),
        ("p1\ta\tb\t0.5\tTest\n", 1, "split", "full-width letters or capitals: write it 'test'"),
    ],
)
def test_bad_rows_are_refused(tmp_path: Path, body: str, row: int, field: str, reason: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(InputError) as err:
        load_pairs(path)
    assert err.value.row == row
    assert err.value.field == field
    assert reason in err.value.reason
    assert str(err.value).startswith(f"{path}: row {row}, field '{field}'")


def test_missing_column_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="missing column"):
        validate_pairs(pd.DataFrame({"text_a": ["a"], "text_b": ["b"]}), "x.csv")
    with pytest.raises(InputError, match="file not found"):
        load_pairs(tmp_path / "nope.tsv")
    with pytest.raises(InputError, match=r"no pairs in split 'validation' \(the file holds train: 1\)"):
        load_pairs(write(tmp_path, "p1\ta\tb\t0.5\ttrain\n"), split="validation")


def test_a_pair_file_without_splits_says_so(tmp_path: Path) -> None:
    path = tmp_path / "nosplit.tsv"
    path.write_text("text_a\ttext_b\tscore\na\tb\t0.5\nc\td\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match="no pair names its split: give the file a 'split' column"):
        load_pairs(path, split="validation")


def test_parquet_score_out_of_range(tmp_path: Path) -> None:
    p = tmp_path / "p.parquet"
    pd.DataFrame({"text_a": ["a", "b"], "text_b": ["c", "d"], "score": [0.2, 5.0]}).to_parquet(p)
    with pytest.raises(InputError, match=r"row 2, field 'score': score 5.0 is outside"):
        load_pairs(p)


def test_empty_ids_of_a_nullable_integer_column_name_no_pair(tmp_path):
    """pandas writes Int64 ids with gaps as <NA>: two pairs with an empty id are not "the same pair"."""
    frame = pd.DataFrame(
        {
            "id_a": pd.array([None, None], dtype="Int64"),
            "id_b": pd.array([5, 5], dtype="Int64"),
            "text_a": ["甲", "乙"],
            "text_b": ["丙", "丁"],
            "score": [1.0, 0.0],
            "split": ["train", "test"],
        }
    )
    frame.to_parquet(tmp_path / "p.parquet")
    assert load_pairs(tmp_path / "p.parquet")["split"].tolist() == ["train", "test"]


def test_a_yes_no_score_is_refused(tmp_path):
    frame = pd.DataFrame({"text_a": ["甲", "乙"], "text_b": ["丙", "丁"], "score": [True, False]})
    frame.to_parquet(tmp_path / "p.parquet")
    with pytest.raises(InputError, match=r"row 1, field 'score': score True is a yes/no value"):
        load_pairs(tmp_path / "p.parquet")


def _refused_id(tmp_path: Path, field: str, ch: str) -> InputError:
    """The error of a pair file whose second row's ``field`` holds ``ch``, checked to name that row and
    field."""
    frame = pd.DataFrame(
        {"pair_id": ["p1", "p2"], "id_a": ["a", "x"], "id_b": ["c", "y"], "text_a": ["t1", "t3"]}
        | {"text_b": ["t2", "t4"], "score": [0.5, 1.0], "split": ["train", "train"]}
    )
    frame.loc[1, field] = f"b{ch}c"
    path = tmp_path / "pairs.parquet"
    frame.to_parquet(path)
    with pytest.raises(InputError) as err:
        load_pairs(path)
    assert (err.value.row, err.value.field) == (2, field), err.value
    return err.value


@pytest.mark.parametrize("field", ["id_a", "id_b", "pair_id"])
@pytest.mark.parametrize("ch", ["\x1f", "\x07", "\u2028", "\x85"])
def test_an_id_holding_a_control_character_is_refused(tmp_path: Path, field: str, ch: str) -> None:
    """Pair ids are made from the two item ids joined by U+001F: ("a\\x1fb", "c") and ("a", "b\\x1fc")
    would share one. No id may hold a control character or a line separator."""
    err = _refused_id(tmp_path, field, ch)
    assert f"U+{ord(ch):04X}" in err.reason


@pytest.mark.parametrize("field", ["id_a", "id_b", "pair_id"])
@pytest.mark.parametrize("ch", ["\u200b", "\ufeff", "\u3164"])
def test_an_id_holding_a_character_that_shows_nothing_is_refused(tmp_path: Path, field: str, ch: str) -> None:
    """An id with a zero-width space, a byte-order mark or a Hangul filler reads as the id without it, and
    is another item: refused by row and field, as a corpus refuses it, so the two files agree on ids."""
    err = _refused_id(tmp_path, field, ch)
    assert f"U+{ord(ch):04X}" in err.reason and "shows nothing" in err.reason


def test_an_unknown_split_asked_for_is_refused_as_the_option_not_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "p1\ta\tb\t0.5\ttrain\n")
    with pytest.raises(ConfigError, match=r"--split 'bogus': unknown split") as err:
        load_pairs(path, split="bogus")
    assert str(path) not in str(err.value)
    with pytest.raises(ConfigError, match="unknown split"):  # said before a missing file is looked for
        load_pairs(tmp_path / "nope.tsv", split="bogus")


@pytest.mark.parametrize("encoding", ["cp1252", "gb18030"])
def test_a_pair_text_that_is_utf8_misread_and_saved_again_is_refused_by_row(
    tmp_path: Path, encoding: str
) -> None:
    """A pair text that a spreadsheet misread as cp1252 or GB18030 and saved again as UTF-8 ('棰遍ⅷ…' for
    '颱風…': valid UTF-8) was read as written, and a merge added it to the training pairs with exit status 0;
    it is refused by row and field, naming the text it was."""
    raw = "颱風過後 全台停班停課".encode()
    if encoding == "cp1252":
        misread = "".join(
            chr(b) if b in b"\x81\x8d\x8f\x90\x9d" else bytes([b]).decode("cp1252") for b in raw
        )
    else:
        misread = raw.decode(encoding)
    p = write(tmp_path, f"a\tA\tB\t1\ttrain\nb\t{misread}\t颱風過後 全台停課\t0.75\ttrain\n")
    expected = (
        rf"row 2, field 'text_a': the text .* is UTF-8 misread as {encoding} .*it was '颱風過後 全台停班停課'"
    )
    with pytest.raises(InputError, match=expected):
        load_pairs(p)


def test_a_score_typed_in_full_width_characters_reads_as_its_number(tmp_path: Path) -> None:
    """A Chinese input method in full-width mode types 0.75 as '０．７５': its digits read as a number
    ('０.７５' did) but its full stop did not, refused as "not a number"; every full-width score reads now."""
    p = write(tmp_path, "a\tA\tB\t０．７５\ttrain\nb\tC\tD\t　１　\ttrain\nc\tE\tF\t０.２５\ttrain\n")
    assert load_pairs(p)["score"].tolist() == [0.75, 1.0, 0.25]


@pytest.mark.parametrize(
    "score,hint",
    [("0,75", "a decimal comma? write it 0.75"), ("75%", "a percentage? write it 0.75"), ("７５％", "0.75")],
)
def test_a_score_with_a_decimal_comma_or_a_percent_sign_is_refused_saying_how_to_write_it(
    tmp_path: Path, score: str, hint: str
) -> None:
    """'0,75' (a spreadsheet set to a European locale) and '75%' (a cell formatted as a percentage) were
    refused as "not a number" alone; the refusal now says what the cell should hold (never guessed: '1,000'
    and '0,75' read two ways)."""
    p = write(tmp_path, f"a\tA\tB\t1\ttrain\nb\tC\tD\t{score}\ttrain\n")
    expected = rf"row 2, field 'score': score '{score}' is not a number \(.*{re.escape(hint)}"
    with pytest.raises(InputError, match=expected):
        load_pairs(p)


def test_a_parquet_pair_file_with_its_texts_in_binary_columns_is_read_as_utf8_or_refused_by_row(
    tmp_path: Path,
) -> None:
    """Hive, Impala and older Spark write text as Parquet binary columns: a pair file so written in UTF-8
    reads as text, and one holding Big5 bytes was a UnicodeDecodeError traceback from pandas; it is now
    refused naming the file, the row and the field, as a text file's bytes are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = (["颱風凱米今晚登陸", "台積電營收創新高"], ["凱米颱風今晚登陸", "台積電第二季營收"])
    for encoding in ("utf-8", "cp950"):
        columns = {
            "pair_id": pa.array([b"p1", b"p2"], pa.binary()),
            "text_a": pa.array([texts[0][0].encode(), texts[0][1].encode(encoding)], pa.binary()),
            "text_b": pa.array([t.encode() for t in texts[1]], pa.large_binary()),
            "score": pa.array([1.0, 0.5]),
        }
        path = tmp_path / f"pairs-{encoding}.parquet"
        pq.write_table(pa.table(columns), path)
        if encoding == "utf-8":
            frame = load_pairs(path)
            assert frame["text_a"].tolist() == texts[0] and frame["text_b"].tolist() == texts[1]
            assert frame["pair_id"].tolist() == ["p1", "p2"]
            continue
        with pytest.raises(InputError, match=r"row 2, field 'text_a': not valid UTF-8 text: byte 0x"):
            load_pairs(path)


def test_a_pair_text_holding_replacement_characters_is_warned_of_by_row_and_field(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pair text holding U+FFFD (bytes a decoder upstream could not read) loaded without a word, where a
    corpus says so: the pair file now warns, naming the file, the rows and their fields, and keeps them."""
    p = write(
        tmp_path,
        "a\tA\tB\t1\ttrain\nb\t颱風\ufffd\ufffd登陸\t颱風登陸\t0.75\ttrain\nc\tC\tD\ufffd\t0\ttest\n",
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        frame = load_pairs(p)
    assert len(frame) == 3
    assert f"{p}: 2 row(s) hold U+FFFD" in caplog.text
    assert "row 2 (text_a), row 3 (text_b)" in caplog.text


def test_a_pair_file_read_by_several_stages_of_one_run_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A chain reads its pair file in six places (the calibration, the first report, the training, the
    report, ...): its warning was said six times in one run. Inside one command or chain (``one_run``, which
    the command line, the chain and a dedup run enter) it is said once; a later run says it again."""
    p = write(tmp_path, "a\tA\tB\ufffd\t1\ttrain\nb\tC\tD\t0\ttest\n")

    def said() -> int:
        return sum("hold U+FFFD" in r.getMessage() for r in caplog.records)

    with caplog.at_level("WARNING", logger="nlsim"):
        with one_run():
            load_pairs(p)
            with one_run():  # a dedup run inside the chain
                load_pairs(p)
            load_pairs(p)
        assert said() == 1
        with one_run():
            load_pairs(p)
        assert said() == 2
        load_pairs(p)
        assert said() == 3


def test_a_pair_text_holding_control_characters_is_warned_of_by_row_and_field(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pair text holding a NUL or a terminal's escape (the mark of a damaged export) loaded without a
    word, where a corpus says so: the pair file now warns, naming the file, the rows and their fields, and
    keeps the text as written."""
    p = write(tmp_path, "a\tFloods\x00 north\tB\t1\ttrain\nb\tC\tD\x1b[31m\t0\ttest\nc\tE\tF\t0.5\ttrain\n")
    with caplog.at_level("WARNING", logger="nlsim"):
        frame = load_pairs(p)
    assert frame["text_a"].tolist()[0] == "Floods\x00 north"
    assert f"{p}: 2 row(s) hold control characters" in caplog.text
    assert "row 1 (text_a), row 2 (text_b)" in caplog.text


@pytest.mark.parametrize("cell", ["1_0", "0.5_0", "0_.5", "１_０"])
def test_a_score_written_with_an_underscore_is_refused_as_not_a_number(tmp_path: Path, cell: str) -> None:
    """``1_0`` was read as 10 (Python's ``float`` takes underscores between digits) and refused as outside
    [0, 1]; ``0.5_0`` was taken as 0.5. Neither is a number as a spreadsheet or a newsroom writes one."""
    path = write(tmp_path, f"p1\ta\tb\t{cell}\ttrain\n")
    with pytest.raises(InputError) as err:
        load_pairs(path)
    assert (err.value.row, err.value.field) == (1, "score")
    assert "not a number" in err.value.reason and "outside" not in err.value.reason


@pytest.mark.parametrize("cell", ["nan", "NaN", "NULL", "None", "-nan", "n/a"])
def test_a_score_marked_missing_is_refused_as_a_missing_score(tmp_path: Path, cell: str) -> None:
    """``nan`` (a script's missing value written out) was refused as "score nan is outside [0, 1]", and
    ``NULL`` as not a number: each is a score missing, as a blank cell is said to be."""
    path = write(tmp_path, f"p1\ta\tb\t0.5\ttrain\np2\tc\td\t{cell}\ttrain\n")
    with pytest.raises(InputError) as err:
        load_pairs(path)
    assert (err.value.row, err.value.field) == (2, "score")
    assert err.value.reason.startswith("missing score") and "outside" not in err.value.reason
    assert str(err.value).startswith(f"{path}: row 2, field 'score'")


@pytest.mark.parametrize(
    ("header", "named"),
    [
        (HEADER.replace("score", "Score"), "Score"),
        (HEADER.replace("score", "score "), "score "),
        (HEADER.replace("score", "\u200bscore"), "\u200bscore"),
        (HEADER.replace("split", "Split"), "Split"),
        (HEADER.replace("pair_id", "pairId"), "pairId"),
    ],
)
def test_a_pair_file_column_spelt_otherwise_is_refused_by_its_name(
    tmp_path: Path, header: str, named: str
) -> None:
    """``Score`` was refused as "missing column(s) score", not naming the column the file has; ``Split``
    and ``pairId`` were kept as extra columns and the file loaded with no split and made-up pair ids."""
    path = tmp_path / "pairs.tsv"
    path.write_text(header + "p1\ta\tb\t0.5\ttrain\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_pairs(path)
    assert err.value.field == named
    assert "spelt otherwise" in err.value.reason


@pytest.mark.parametrize("name", ["pairs.tsv", "pairs.csv"])
def test_a_header_repeated_inside_a_pair_file_is_refused_as_such(tmp_path: Path, name: str) -> None:
    """Two pair files joined (``cat a.tsv b.tsv``) put the header in the middle: it was refused as
    "score 'score' is not a number", which sends an editor looking for a score."""
    sep = "\t" if name.endswith(".tsv") else ","
    lines = [HEADER.rstrip("\n"), "p1\ta\tb\t0.5\ttrain", HEADER.rstrip("\n"), "p2\tc\td\t1\ttrain"]
    path = tmp_path / name
    path.write_text("\n".join(line.replace("\t", sep) for line in lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_pairs(path)
    assert err.value.row == 2
    assert "header" in err.value.reason and "not a number" not in err.value.reason


@pytest.mark.parametrize(("has", "lacks"), [("id_a", "id_b"), ("id_b", "id_a")])
def test_a_pair_file_with_one_id_column_of_the_two_is_refused(tmp_path: Path, has: str, lacks: str) -> None:
    """A pair file with ``id_a`` and no ``id_b`` loaded, and the editors' loop took it as a file without
    ids: none of its pairs counted as scored or held out."""
    path = tmp_path / "pairs.tsv"
    path.write_text(
        f"pair_id\t{has}\ttext_a\ttext_b\tscore\tsplit\np1\tn1\ta\tb\t0.5\ttrain\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as err:
        load_pairs(path)
    assert err.value.field == lacks and "missing column" in err.value.reason


@pytest.mark.parametrize(
    ("name", "sep", "said"),
    [
        ("pairs.csv", ";", "the file looks semicolon-separated, but a .csv is read comma-separated"),
        ("pairs.tsv", ",", "looks comma-separated, but a .tsv is read tab-separated: rename it .csv"),
        ("pairs.csv", "\t", "looks tab-separated, but a .csv is read comma-separated: rename it .tsv"),
    ],
)
def test_a_pair_file_written_with_another_separator_is_named_so(
    tmp_path: Path, name: str, sep: str, said: str
) -> None:
    """A pair file saved with another separator than its name says (Excel in a locale that writes ``;``, a
    ``.tsv`` written with commas) is read as one column, and was refused as "missing column(s) text_a,
    text_b, score" though it holds all three; a corpus so written is named by its separator, and so is a
    pair file now."""
    path = tmp_path / name
    rows = [["text_a", "text_b", "score"], ["颱風來了", "颱風登陸", "1"]]
    path.write_text("\n".join(sep.join(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_pairs(path)
    assert said in str(error.value), str(error.value)
    assert str(path) in str(error.value)


def test_a_parquet_pair_file_whose_item_ids_are_floats_is_refused_by_row_and_field(tmp_path: Path) -> None:
    """Pairs with item ids joined to pairs without them, written by pandas to Parquet: the id columns are
    floats, and each id read as ``101.0``, which names no item of the corpus (its ``101``), so that verdicts
    and the review queue matched none of the pairs, unsaid (``nlsim judge`` alone refused them). The file
    is refused, in the judge's words, naming the first row, the field, the cause and the fix; the same ids
    as integers read as the corpus's."""
    from nlsim.annotation.merge import merge_annotations

    table = pd.DataFrame(
        {
            "pair_id": ["p1", "p2", "p3"],
            "id_a": [101, 103, None],
            "id_b": [102, 104, None],
            "text_a": ["甲一", "甲二", "甲三"],
            "text_b": ["乙一", "乙二", "乙三"],
            "score": [1.0, 0.5, 0.0],
            "split": "train",
        }
    )
    pairs = tmp_path / "pairs.parquet"
    table.to_parquet(pairs)
    said = (
        f"{pairs}: row 1, field 'id_a': item id 101.0 is a float: ids must be text or integers, as a "
        "corpus's are (the column is stored as floats, as pandas stores a column of integers with an empty "
        "cell: row 3 has none)"
    )
    with pytest.raises(InputError) as err:
        load_pairs(pairs)
    assert str(err.value).startswith(said) and "astype('Int64')" in str(err.value)
    filled = tmp_path / "filled.csv"
    pd.DataFrame(
        {"id_a": ["201"], "id_b": ["202"], "text_a": ["丙"], "text_b": ["丁"], "score": ["1"]}
    ).to_csv(filled, index=False)
    with pytest.raises(InputError, match="row 1, field 'id_a': item id 101.0 is a float"):
        merge_annotations(filled, pairs, log=lambda _: None)
    table.astype({"id_a": "Int64", "id_b": "Int64"}).to_parquet(pairs)
    assert load_pairs(pairs)[["id_a", "id_b"]].astype(str).values.tolist()[:2] == [
        ["101", "102"],
        ["103", "104"],
    ]
    table.assign(id_a=float("nan"), id_b=float("nan")).to_parquet(pairs)  # no ids at all: keyed by texts
    assert len(load_pairs(pairs)) == 3


def test_a_score_written_minus_zero_is_read_as_zero(tmp_path: Path) -> None:
    """A score exported as ``-0`` or ``-0.0`` (a rounding that kept its sign) was read as -0.0: the pairs'
    digest, which the chain's training fingerprint and a learning curve take to tell their annotations,
    differed from the same file written ``0``, and a refusal said "score -0". It is read as 0."""
    from nlsim.io.pairs import annotations_digest

    rows = "p1\tA\tB\t{}\ttrain\np2\tC\tD\t1\ttrain\n"
    read = {}
    for written in ("0", "-0", "-0.0"):
        path = tmp_path / f"pairs{written}.tsv"
        path.write_text("pair_id\ttext_a\ttext_b\tscore\tsplit\n" + rows.format(written), encoding="utf-8")
        read[written] = load_pairs(path)
    assert [str(f["score"].iloc[0]) for f in read.values()] == ["0.0", "0.0", "0.0"]
    assert len({annotations_digest(f) for f in read.values()}) == 1


def test_a_parquet_pair_file_whose_split_pandas_wrote_as_categories_is_read(tmp_path: Path) -> None:
    """A pair file whose ``split`` column pandas wrote as categories (``astype("category")``), one row
    without a split: every command that read it stopped on a traceback, "Cannot setitem on a Categorical
    with a new category", where the same file with a text column reads, the row said as naming no split.
    The column is read as its values; an editors' file merges into it."""
    from nlsim.annotation.merge import merge_annotations

    table = pd.DataFrame(
        {
            "pair_id": ["p1", "p2", "p3", "p4"],
            "id_a": ["a1", "a3", "a5", "a7"],
            "id_b": ["a2", "a4", "a6", "a8"],
            "text_a": ["甲一", "甲二", "甲三", "甲四"],
            "text_b": ["乙一", "乙二", "乙三", "乙四"],
            "score": [1.0, 0.5, 0.0, 0.25],
            "split": ["train", "test", None, "test"],
        }
    )
    pairs = tmp_path / "pairs.parquet"
    table.astype({"split": "category"}).to_parquet(pairs)
    assert load_pairs(pairs)["split"].tolist() == ["train", "test", "", "test"]
    assert load_pairs(pairs, "test")["pair_id"].tolist() == ["p2", "p4"]
    filled = tmp_path / "filled.csv"
    pd.DataFrame({"id_a": ["b1"], "id_b": ["b2"], "text_a": ["丙"], "text_b": ["丁"], "score": ["1"]}).to_csv(
        filled, index=False
    )
    assert merge_annotations(filled, pairs, split="train", log=lambda _: None).added == 1
    assert load_pairs(pairs)["split"].tolist() == ["train", "test", "", "test", "train"]


def test_one_pair_given_twice_with_scores_that_differ_by_a_rounding_is_not_refused(tmp_path: Path) -> None:
    """Two rows of one pair whose scores differ only past the ninth decimal (a float written back) have one
    score; one of them is kept where pairs are counted once."""
    p = write(tmp_path, "a\tFloods\tRain\t0.3\ttrain\nb\tFloods\tRain\t0.30000000001\ttrain\n")
    assert load_pairs(p)["score"].round(6).tolist() == [0.3, 0.3]


def test_a_split_written_with_spaces_around_it_is_that_split(tmp_path: Path) -> None:
    p = write(tmp_path, "a\tFloods\tRain\t1\t test \nb\tC\tD\t0\ttrain\n")
    assert load_pairs(p)["split"].tolist() == ["test", "train"]


def test_rows_without_a_split_are_warned_of_only_when_other_rows_have_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from nlsim.io.pairs import warn_unsplit

    with caplog.at_level("WARNING", logger="nlsim"):
        warn_unsplit(
            pd.DataFrame({"split": ["", ""]}), "test", "p.tsv"
        )  # a file without splits: said elsewhere
        assert caplog.text == ""
        warn_unsplit(pd.DataFrame({"split": ["test", ""]}), "test", "p.tsv")
    assert "p.tsv: 1 row(s) name no split (row 2)" in caplog.text


def test_a_row_whose_two_texts_hold_control_characters_is_counted_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    p = write(tmp_path, "a\tFloods\x00\tRain\x00\t1\ttrain\nb\tC\tD\t0\ttest\n")
    with caplog.at_level("WARNING", logger="nlsim"):
        load_pairs(p)
    assert f"{p}: 1 row(s) hold control characters" in caplog.text
    assert "row 1 (text_a), row 1 (text_b)" in caplog.text


@pytest.mark.parametrize(("repeats", "more"), [(5, ""), (6, " and 1 more")])
def test_rows_repeating_a_pair_are_named_five_then_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, repeats: int, more: str
) -> None:
    from nlsim.io.pairs import count_once

    body = "".join(f"p{i}\tFloods\tRain\t1\ttrain\n" for i in range(repeats + 1)) + "x\tC\tD\t0\ttest\n"
    p = write(tmp_path, body)
    with caplog.at_level("WARNING", logger="nlsim"):
        kept = count_once(load_pairs(p), p)
    assert len(kept) == 2
    assert caplog.text.rstrip().endswith(f"row 6 (row 1's pair){more}"), caplog.text


def test_a_pair_in_a_later_split_is_dropped_from_an_earlier_one_whatever_the_row_order() -> None:
    """A benchmark's pair given in test before train, or in full-width letters in one split, is one pair:
    its train row is dropped."""
    from nlsim.io.pairs import drop_split_leaks

    frame = pd.DataFrame(
        {
            "text_a": ["Floods", "Rain", "Ｆｌｏｏｄｓ", "c"],
            "text_b": ["Rain", "Floods", "rain", "d"],
            "split": ["test", "train", "train", "train"],
        }
    )
    kept, dropped = drop_split_leaks(frame)
    assert kept["text_a"].tolist() == ["Floods", "c"] and dropped == 2


def test_validate_pairs_names_each_row_by_the_row_numbers_it_is_given() -> None:
    """A sheet whose rows 2 and 5 are the sound ones names its faults by those rows, not by 1 and 2."""
    frame = pd.DataFrame(
        {"pair_id": ["a", "a"], "text_a": ["x", "y"], "text_b": ["u", "v"], "score": [0.5, 0.5]}
    )
    with pytest.raises(InputError) as bad:
        validate_pairs(frame, "s.xlsx", rows=[2, 5])
    assert (bad.value.row, bad.value.field) == (5, "pair_id")
    assert "first at row 2" in bad.value.reason
    leak = pd.DataFrame(
        {"text_a": ["x", "x"], "text_b": ["u", "u"], "score": [0.5, 0.5], "split": ["train", "test"]}
    )
    with pytest.raises(InputError) as leaked:
        validate_pairs(leak, "s.xlsx", rows=[3, 9])
    assert leaked.value.row == 9 and "row 3" in leaked.value.reason
    with pytest.raises(ValueError, match="1 row numbers for 2 rows"):
        validate_pairs(leak, "s.xlsx", rows=[3])
