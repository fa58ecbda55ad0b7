"""The pair file as a merge rewrites it (nlsim.annotation.pair_file): the editors' rows appended, every
byte of the existing rows kept but the cells a merge writes into them."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from nlsim.annotation import pair_file
from nlsim.annotation.merge import merge_annotations
from nlsim.errors import InputError
from nlsim.io import editor_file
from nlsim.io.pairs import load_pairs

HEADER = "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\tstratum\tannotator\tnotes"
ROW = "p1\ttrain\tn0\tn1\t股市今天大漲\t股市今日大漲三成\t1\tlex-high\t\t"


def quiet(_: str) -> None:
    """A log that says nothing."""


def export(path: Path, notes: str = "", score: str = "0.5") -> Path:
    """desk's page export of one mark on the new pair z1/z2, made on Monday, with its ``notes``."""
    texts = {"z1": "颱風來了", "z2": "颱風登陸"}
    frame = pd.DataFrame(
        {
            "pair_id": [editor_file.pair_id("z1", "z2")],
            "id_a": ["z1"],
            "id_b": ["z2"],
            "text_a": [texts["z1"]],
            "text_b": [texts["z2"]],
            "score": [score],
            "annotator": ["desk"],
            "notes": [notes],
            "sha256_a": [editor_file.text_sha256(texts["z1"])],
            "sha256_b": [editor_file.text_sha256(texts["z2"])],
            editor_file.MARKED_AT: ["2026-03-02T08:15:00Z"],
            editor_file.OVERRULE: ["false"],
        }
    )
    frame.to_csv(path, index=False)
    return path


def test_a_pair_file_whose_last_row_has_no_line_ending_takes_the_new_row_on_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    """A pair file saved by an editor that leaves its last line without a line ending: the merged row is
    written on a line of its own after it (not run into it), and the existing bytes are kept."""
    pairs = tmp_path / "pairs.tsv"
    before = f"{HEADER}\n{ROW}".encode()
    pairs.write_bytes(before)
    merge_annotations(export(tmp_path / "marks.csv"), pairs, log=quiet)
    assert pairs.read_bytes().startswith(before + b"\n")
    back = load_pairs(pairs)
    assert back["pair_id"].tolist()[0] == "p1" and back["id_a"].tolist() == ["n0", "z1"]
    assert back["score"].tolist() == [1.0, 0.5]


def test_a_note_edited_since_is_written_into_its_row_after_a_line_of_white_space(tmp_path: Path) -> None:
    """A line of white space only in the pair file (the reader skips it) is no row: desk's note, edited on
    the page and exported again, is written into the row of its pair after it, not refused as a row that
    is not that pair."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{HEADER}\n{ROW}\n  \t \n", encoding="utf-8")
    merge_annotations(export(tmp_path / "marks-1.csv", "same storm"), pairs, log=quiet)
    result = merge_annotations(export(tmp_path / "marks-2.csv", "same storm, wire copy"), pairs, log=quiet)
    assert result.notes_updated
    assert load_pairs(pairs)["notes"].fillna("").tolist() == ["", "same storm, wire copy"]
    assert pairs.read_text(encoding="utf-8").startswith(f"{HEADER}\n{ROW}\n  \t \n")


def test_a_csv_cell_with_doubled_quotes_before_a_comma_and_a_line_break_is_kept_when_a_column_is_added(
    tmp_path: Path,
) -> None:
    """``""`` inside a quoted CSV field is one quote, not the field's end: a comma and a line break after
    it are still the field's, so the column an editor's notes add goes after the field, not into it."""
    pairs = tmp_path / "pairs.csv"
    text_a = 'he said ""no"", then\nleft'
    pairs.write_text(f'pair_id,split,text_a,text_b,score\np1,train,"{text_a}",乙,1\n', encoding="utf-8")
    merge_annotations(export(tmp_path / "marks.csv", "seen"), pairs, log=quiet)
    back = load_pairs(pairs)
    assert back["text_a"].tolist() == ['he said "no", then\nleft', "颱風來了"]
    assert back["notes"].fillna("").tolist() == ["", "seen"]


def test_a_pair_file_with_an_annotations_column_gets_the_editors_score_in_it(tmp_path: Path) -> None:
    """The ``annotations`` column holds each pair's annotators' scores: a merged row holds its editor's."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{HEADER}\tannotations\n{ROW}\t1;1\n", encoding="utf-8")
    merge_annotations(export(tmp_path / "marks.csv", score="0.75"), pairs, log=quiet)
    assert load_pairs(pairs)["annotations"].tolist() == ["1;1", "0.75"]


def test_a_pair_file_others_may_read_keeps_its_mode(tmp_path: Path) -> None:
    """The merged file is written beside the pair file as a private temporary file (mode 0600) and renamed
    over it: it takes the pair file's own mode first, so that a pair file the team reads stays readable."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{HEADER}\n{ROW}\n", encoding="utf-8")
    os.chmod(pairs, 0o644)
    merge_annotations(export(tmp_path / "marks.csv"), pairs, log=quiet)
    assert stat.S_IMODE(os.stat(pairs).st_mode) == 0o644
    assert len(load_pairs(pairs)) == 2


def test_an_id_beyond_int64_makes_a_parquet_id_column_text(tmp_path: Path) -> None:
    """A Parquet pair file of integer ids takes an editor's id as a number only when int64 holds it: one
    of 2**63 (a digit too many typed) makes the column text, every id kept, instead of the merge failing
    with an overflow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pairs = tmp_path / "pairs.parquet"
    table = {
        "pair_id": ["p1"],
        "split": ["train"],
        "id_a": pa.array([101], pa.int64()),
        "id_b": pa.array([102], pa.int64()),
        "text_a": ["甲一"],
        "text_b": ["乙一"],
        "score": [1.0],
    }
    pq.write_table(pa.table(table), pairs)
    filled = tmp_path / "filled.csv"
    big = str(2**63)
    rows = {"id_a": [big], "id_b": ["202"], "text_a": ["丙"], "text_b": ["丁"], "score": ["0.75"]}
    pd.DataFrame(rows).to_csv(filled, index=False)
    assert merge_annotations(filled, pairs, log=quiet).added == 1
    assert pq.read_table(pairs).column("id_a").to_pylist() == ["101", big]


def test_a_note_for_a_row_that_is_not_its_pair_is_refused_naming_the_row_and_the_notes_field() -> None:
    """A note to write into a row that does not hold its pair (the file changed under the merge) is
    refused by the pair file's row and the ``notes`` field, nothing written; a whole row to write over
    one is refused by its row alone."""
    record = "p1\ttrain\tn0\tn1\t甲\t乙\t1\t"
    note = pair_file._Cells((0,), {0: (("p9",), {7: "seen"})}, "pairs.tsv")
    with pytest.raises(InputError) as err:
        note.set_in(record, 0, "tsv")
    assert (err.value.row, err.value.field) == (1, "notes") and "not pair 'p9'" in err.value.reason
    whole = pair_file._Cells((0,), {0: (("p9",), {1: "train", 7: "seen"})}, "pairs.tsv")
    with pytest.raises(InputError) as err:
        whole.set_in(record, 0, "tsv")
    assert (err.value.row, err.value.field) == (1, None)
    assert note.set_in(record.replace("p1", "p9"), 0, "tsv") == record.replace("p1", "p9") + "seen"


def test_a_pair_file_without_splits_gets_a_split_column_with_the_merged_rows_in_train(tmp_path: Path) -> None:
    """A pair file without a ``split`` column (its pairs of no split): the merge adds the column, empty for
    the existing rows, and the merged row in the split merged into."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("pair_id\ttext_a\ttext_b\tscore\np1\t甲\t乙\t1\n", encoding="utf-8")
    merge_annotations(export(tmp_path / "marks.csv"), pairs, log=quiet)
    lines = pairs.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t")[:5] == ["pair_id", "text_a", "text_b", "score", "id_a"]
    assert "split" in lines[0].split("\t") and lines[1].startswith("p1\t甲\t乙\t1\t")
    assert load_pairs(pairs)["split"].fillna("").tolist() == ["", "train"]


def _written_wrong(
    monkeypatch: pytest.MonkeyPatch, wrong: Callable[[bytes], bytes], tmp_path: Path
) -> tuple[Path, bytes, InputError]:
    """A merge into a two-pair file whose writer changes the bytes it writes by ``wrong``: refused."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{HEADER}\n{ROW}\n{ROW.replace('p1', 'p2').replace('n1', 'n5')}\n", encoding="utf-8")
    before = pairs.read_bytes()
    write = pair_file._text_bytes
    monkeypatch.setattr(pair_file, "_text_bytes", lambda *args: wrong(write(*args)))
    with pytest.raises(InputError) as err:
        merge_annotations(export(tmp_path / "marks.csv"), pairs, log=quiet)
    return pairs, before, err.value


def test_a_merged_file_that_would_not_read_back_is_refused_naming_the_row(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pairs, before, err = _written_wrong(
        monkeypatch, lambda data: data.replace(b"\t0.5\t", b"\t7\t"), tmp_path
    )
    assert "the merged file would not read back (row 3: " in err.reason and "nothing changed" in err.reason
    assert pairs.read_bytes() == before


def test_a_merged_file_that_reads_back_other_texts_is_refused_counting_the_rows_that_differ(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pairs, before, err = _written_wrong(
        monkeypatch, lambda data: data.replace("颱風".encode(), b"x"), tmp_path
    )
    assert "reads back as 3 pairs, not the 3 of" in err.reason and "(1 differ)" in err.reason, err.reason
    assert pairs.read_bytes() == before


def test_a_parquet_text_column_keeps_its_existing_cells_as_they_were(tmp_path: Path) -> None:
    """A Parquet pair file's text column keeps each existing cell as it was: an empty text stays an empty
    text (not made a null), beside the merged row's."""
    import pyarrow.parquet as pq

    pairs = tmp_path / "pairs.parquet"
    frame = pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "split": ["train", "test"],
            "id_a": ["n0", "n4"],
            "id_b": ["n1", "n3"],
            "text_a": ["甲", "丁"],
            "text_b": ["乙", "丙"],
            "score": [1.0, 0.5],
            "annotator": ["", "lin"],
        }
    )
    frame.to_parquet(pairs, index=False)
    merge_annotations(export(tmp_path / "marks.csv"), pairs, log=quiet)
    assert pq.read_table(pairs).column("annotator").to_pylist() == ["", "lin", "desk"]
