"""An editors' filled file checked row by row (nlsim.annotation.validate): what each row is refused for,
named by its sheet row (the header is sheet row 1) and field."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nlsim.annotation.validate import (
    CORPUS_SOURCE,
    check_new,
    check_texts,
    known_texts,
    mark_times,
    read_filled,
    validate_filled,
)
from nlsim.errors import InputError
from nlsim.io import editor_file


def sheet(**cols: list[str]) -> pd.DataFrame:
    """An editors' file as read (every cell text): pairs a0/b0, a1/b1 ... unless ``cols`` says."""
    n = len(cols["score"])
    rows = {
        "pair_id": [f"x{i}" for i in range(n)],
        "id_a": [f"a{i}" for i in range(n)],
        "id_b": [f"b{i}" for i in range(n)],
        "text_a": [f"甲{i}" for i in range(n)],
        "text_b": [f"乙{i}" for i in range(n)],
    }
    return pd.DataFrame(rows | cols)


def refused(frame: pd.DataFrame) -> list[InputError]:
    """Every problem ``validate_filled`` names in ``frame``, in the order it names them."""
    with pytest.raises(InputError) as err:
        validate_filled(frame, "filled.csv")
    return list(getattr(err.value, "problems", None) or [err.value])


@pytest.mark.parametrize("score", ["0.751", "0.74", "0.99", "0.01"])
def test_a_score_near_a_level_but_not_on_it_is_refused(score: str) -> None:
    """A score a hundredth or a thousandth off a rubric level is no level (a typo, or a mean of two
    editors' scores): it is refused, not taken as the level it is near."""
    problems = refused(sheet(score=["0.75", score]))
    assert [(e.row, e.field) for e in problems] == [(3, "score")]
    assert "not one of the rubric's levels" in problems[0].reason


def test_a_score_written_with_more_digits_is_taken_as_its_level() -> None:
    frame = validate_filled(sheet(score=["0.750", "1.0", "0.2500000000001"]), "filled.csv")
    assert frame["score"].tolist() == [0.75, 1.0, 0.25]


def test_a_header_repeated_with_an_empty_cell_is_named_as_the_header_again() -> None:
    """Two files joined, the second without the first's ``notes`` column: its header row has that cell
    empty, and is still the header again (not a row whose score is not a number)."""
    frame = sheet(
        pair_id=["x1", "pair_id", "x2"],
        id_a=["a", "id_a", "c"],
        id_b=["b", "id_b", "d"],
        text_a=["甲", "text_a", "丙"],
        text_b=["乙", "text_b", "丁"],
        score=["1", "score", "0"],
        notes=["n", "", ""],
    )
    problems = refused(frame)
    assert [e.row for e in problems] == [3]
    assert "the header again" in problems[0].reason and problems[0].field is None


def test_a_pair_id_given_three_times_names_its_first_row_each_time() -> None:
    problems = refused(sheet(pair_id=["e1", "e1", "e1"], score=["1", "1", "0"]))
    assert [(e.row, e.field) for e in problems] == [(3, "pair_id"), (4, "pair_id")]
    assert all("duplicate pair id 'e1' (first at sheet row 2)" in e.reason for e in problems)


def test_a_pair_given_twice_with_one_score_names_no_two_scores() -> None:
    """The same pair twice (its items the other way round), scored alike: named as the pair again, with
    no scores to choose between."""
    frame = sheet(
        pair_id=["", ""], id_a=["a", "b"], id_b=["b", "a"], text_a=["甲", "乙"], text_b=["乙", "甲"],
        score=["0.5", "0.5"],
    )  # fmt: skip
    problems = refused(frame)
    assert [(e.row, e.field) for e in problems] == [(3, "pair_id")]
    assert problems[0].reason.endswith("(first at sheet row 2): the pair a / b again"), problems[0].reason
    assert "scored" not in problems[0].reason


def test_problems_are_named_in_the_order_of_the_rows_whatever_their_field() -> None:
    frame = sheet(text_b=["乙", "", "丁", "戊"], score=["1", "0.5", "0.3", "yes"])
    problems = refused(frame)
    assert [(e.row, e.field) for e in problems] == [(3, "text_b"), (4, "score"), (5, "score")]


def _shown(text_a: str, text_b: str) -> pd.DataFrame:
    """One row of the report page's export (items n0/n1): the texts and the hashes of the texts it showed."""
    frame = sheet(id_a=["n0"], id_b=["n1"], text_a=[text_a], text_b=[text_b], score=["1"])
    frame["sha256_a"] = [editor_file.text_sha256(text_a)]
    frame["sha256_b"] = [editor_file.text_sha256(text_b)]
    frame.attrs["rows"] = [2]  # its sheet row, as validate_filled keeps it
    return frame


@pytest.mark.parametrize(("where", "edited"), [("pairs.tsv", True), (f"{CORPUS_SOURCE}corpus.csv", False)])
def test_a_shown_text_other_than_the_known_one_is_said_edited_since_only_against_the_pair_file(
    where: str, edited: bool
) -> None:
    """A text the page showed (its hash) that is not its item's known text: against the pair file's text,
    the headline was edited since the pair file took it (said, with what the editor can do); against the
    corpus's text there is no such history to tell, and the refusal says only that the text differs."""
    known = {"n0": ("颱風來了", where), "n1": ("颱風登陸", where)}
    _, problems = check_texts(_shown("颱風要來了", "颱風登陸"), known, "filled.csv")
    assert [(e.row, e.field) for e in problems] == [(2, "text_a")]
    assert f"item 'n0' has another text than in {where} ('颱風來了')" in problems[0].reason
    assert ("the item's headline was edited since" in problems[0].reason) is edited, problems[0].reason


def test_a_hash_in_capitals_vouches_for_its_text() -> None:
    """A SHA-256 written in capital hex digits (a spreadsheet's upper-case formatting) is the same hash."""
    frame = _shown("颱風要來了", "颱風登陸")
    frame["sha256_a"] = frame["sha256_a"].str.upper()
    known = {"n1": ("颱風登陸", "pairs.tsv")}
    out, problems = check_texts(frame, known, "filled.csv")
    assert problems == [] and out["text_a"].tolist() == ["颱風要來了"]


def test_a_row_with_an_empty_text_gives_its_item_no_text_for_the_rows_after_it() -> None:
    """A row refused for its empty text does not make the item's text "" for the file: a later row giving
    the item its text is sound, not an item with another text."""
    problems = refused(sheet(id_a=["a0", "a0"], text_a=["", "甲"], score=["1", "0"]))
    assert [(e.row, e.field) for e in problems] == [(2, "text_a")]
    assert "empty text" in problems[0].reason


def test_the_ids_a_spreadsheet_took_the_zeros_from_are_listed_whole_when_there_are_three(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three ids given back their leading zeros (as each row's pair id says) are all named, with no
    "..." after them as if more were left unsaid."""
    frame = sheet(
        pair_id=[editor_file.pair_id(f"00{i}", f"n-{i}") for i in (7, 8, 9)],
        id_a=["7", "8", "9"],
        id_b=["n-7", "n-8", "n-9"],
        score=["1", "0", "0.5"],
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        out = validate_filled(frame, "filled.csv")
    assert out["id_a"].tolist() == ["007", "008", "009"]
    assert "'9' as '009' (sheet row 4); a spreadsheet reads" in caplog.text, caplog.text


def test_a_workbook_named_in_capitals_is_named_as_a_workbook(tmp_path: Path) -> None:
    path = tmp_path / "FILLED.XLSX"
    path.write_bytes(b"PK\x03\x04 not a csv")
    with pytest.raises(InputError, match=r"a spreadsheet workbook \(\.XLSX\), not a CSV file"):
        read_filled(path)


def test_a_pair_known_under_another_pair_id_is_already_annotated_not_a_pair_id_of_another_pair() -> None:
    """A row of the pair file's pair n0/n1 (p1) under the pair id of its other pair (p2): the row's pair is
    already annotated, as p1 (``--skip-scored`` skips it), not a new pair to give another id."""
    existing = _scored_pairs("train")
    new = validate_filled(sheet(pair_id=["p2"], id_a=["n0"], id_b=["n1"], text_a=["甲"], text_b=["乙"],
                                score=["0"]), "filled.csv")  # fmt: skip
    with pytest.raises(InputError) as err:
        check_new(new, existing, "filled.csv", "pairs.tsv")
    assert (err.value.row, err.value.field) == (2, "id_a")
    assert "is already annotated in pairs.tsv as 'p1'" in err.value.reason, err.value.reason
    assert check_new(new, existing, "filled.csv", "pairs.tsv", skip_scored=True).skipped == {2}


def test_an_items_text_in_the_pair_file_is_the_one_known_before_its_text_in_the_corpus() -> None:
    """The pair file keeps the text its pairs were scored on: an item whose headline the corpus has since
    edited is known by the pair file's text (a row giving the corpus's is told so), the corpus naming only
    the items the pair file does not hold."""
    existing = pd.DataFrame({"id_a": ["n0"], "id_b": ["n1"], "text_a": ["甲"], "text_b": ["乙"]})
    known = known_texts(existing, "pairs.tsv", None, in_corpus={"n0": "甲 edited", "n2": "丙"})
    assert known["n0"] == ("甲", "pairs.tsv") and known["n1"] == ("乙", "pairs.tsv")
    assert known["n2"] == ("丙", f"{CORPUS_SOURCE}None")


def test_a_mark_time_is_kept_without_the_white_space_around_it() -> None:
    raw = sheet(score=["1", ""])
    raw[editor_file.MARKED_AT] = [" 2026-03-02T08:15:00Z\u00a0", "not read: the row is blank"]
    early: list[InputError] = []
    assert mark_times(raw, "filled.csv", early) == {2: "2026-03-02T08:15:00Z"} and early == []


@pytest.mark.parametrize(
    ("text_a", "split", "row"),
    [
        (["甲", "丙", "甲"], ["train", "train", "test"], 4),
        (["甲", "甲", "丙"], ["train", "test", "train"], 3),
    ],
)
def test_a_pair_in_two_splits_is_named_by_the_sheet_rows_of_both(
    text_a: list[str], split: list[str], row: int
) -> None:
    """One pair (by its texts) in train and in test: the refusal names the row where it comes again and the
    row it is the pair of, both as the sheet shows them (the header is sheet row 1)."""
    text_b = ["丁" if t == "丙" else "乙" for t in text_a]
    problems = refused(sheet(text_a=text_a, text_b=text_b, score=["1", "0", "1"], split=split))
    assert [(e.row, e.field) for e in problems] == [(row, "text_a")]
    reason = problems[0].reason
    assert "the same pair as row 2 is in split 'train' and in 'test'" in reason, reason


def test_a_hash_that_is_no_sha256_is_named_as_such() -> None:
    frame = _shown("颱風要來了", "颱風登陸")
    frame["sha256_a"] = ["abc123"]
    _, problems = check_texts(frame, {}, "filled.csv")
    assert [(e.row, e.field) for e in problems] == [(2, "sha256_a")]
    assert problems[0].reason == "'abc123' is not a SHA-256 (64 hex digits)"


def test_a_hash_is_read_in_either_case_and_quoted_as_typed_when_it_is_none() -> None:
    from nlsim.io.editor_file import text_sha256

    frame = _shown("颱風要來了", "颱風登陸")
    frame["sha256_a"] = [text_sha256("颱風要來了").upper()]  # a spreadsheet's hex in capitals
    assert check_texts(frame, {}, "filled.csv")[1] == []
    frame["sha256_a"] = ["=A1"]
    _, problems = check_texts(frame, {}, "filled.csv")
    assert problems[0].reason == "'=A1' is not a SHA-256 (64 hex digits)"


def _scored_pairs(split: str) -> pd.DataFrame:
    """A pair file's pairs: n0/n1 (p1) in ``split``, n4/n3 (p2) in test."""
    return pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "id_a": ["n0", "n4"],
            "id_b": ["n1", "n3"],
            "text_a": ["甲", "丁"],
            "text_b": ["乙", "丙"],
            "score": [1.0, 0.75],
            "split": [split, "test"],
        }
    )


def _again(score: str = "0") -> pd.DataFrame:
    """The editors' file's sound rows: n0/n1 (scored in the pair file) at sheet row 2, a0/b0 at row 3."""
    frame = sheet(
        id_a=["n0", "a0"], id_b=["n1", "b0"], text_a=["甲", "戊"], text_b=["乙", "己"], score=[score, "1"]
    )
    return validate_filled(frame.assign(pair_id=["", ""]), "filled.csv")


def test_with_skip_scored_a_skipped_rows_own_problems_are_not_named() -> None:
    """A row --skip-scored skips (its pair already annotated) is kept nowhere, so what else is wrong with
    it (here a cell the pair file cannot hold) refuses nothing; without the option both are named."""
    cell = InputError(
        "filled.csv", 2, "annotator", "a tab cannot be written to the TSV pair file", sheet=True
    )
    scored = check_new(
        _again(), _scored_pairs("train"), "filled.csv", "pairs.tsv", skip_scored=True, early=[cell]
    )
    assert scored.skipped == {2}
    with pytest.raises(InputError) as err:
        check_new(_again(), _scored_pairs("train"), "filled.csv", "pairs.tsv", early=[cell])
    assert {(e.row, e.field) for e in err.value.problems} == {(2, "annotator"), (2, "id_a")}  # type: ignore[attr-defined]


def test_an_overrule_of_a_pair_of_no_split_is_refused_naming_its_split_unnamed() -> None:
    with pytest.raises(InputError) as err:
        check_new(_again(), _scored_pairs(""), "filled.csv", "pairs.tsv", intent={2})
    assert (
        err.value.row == 2 and "in its unnamed split: only a training pair is overruled" in err.value.reason
    )


def test_a_field_with_two_problems_is_named_for_the_first_found() -> None:
    """A text the pair file cannot hold that is also not its item's text: the row's field is named once, for
    what the editors' file's own check found first (the cell), not for what the pair file's check adds."""
    cell = InputError("filled.csv", 3, "text_a", "a tab cannot be written to the TSV pair file", sheet=True)
    text = InputError("filled.csv", 3, "text_a", "item 'a0' has another text than in pairs.tsv", sheet=True)
    with pytest.raises(InputError) as err:
        check_new(
            _again(),
            _scored_pairs("train"),
            "filled.csv",
            "pairs.tsv",
            skip_scored=True,
            early=[cell],
            found=[text],
        )
    assert (err.value.row, err.value.field, err.value.reason) == (3, "text_a", cell.reason)
