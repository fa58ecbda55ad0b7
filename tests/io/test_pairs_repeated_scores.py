"""One pair twice in a split with two scores is refused by row and field; with one score it is kept."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nlsim.errors import InputError
from nlsim.io.pairs import COLUMNS, check_split_leaks, load_pairs, validate_pairs

ROOT = Path(__file__).resolve().parents[2]
HEADER = "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\n"


def write(path: Path, *rows: str) -> Path:
    path.write_text(HEADER + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "second",
    [
        "p3\tb\ta\tStorm hits\tFloods again\t0.25\tvalidation",  # same ids, either order
        "p3\t\t\tfloods  AGAIN\tStorm hits\t0.25\tvalidation",  # no ids: the same texts (normalised)
        "p3\tb\ta\tStorm hits (corrected)\tFloods again\t0.25\tvalidation",  # same ids, a text edited
    ],
    ids=["ids-reversed", "texts-no-ids", "ids-other-text"],
)
def test_one_pair_with_two_scores_in_a_split_is_refused(tmp_path: Path, second: str) -> None:
    path = write(
        tmp_path / "p.tsv",
        "p1\ta\tb\tFloods again\tStorm hits\t1\tvalidation",
        "p2\tc\td\tOther\tThing\t0.5\tvalidation",
        second,
    )
    with pytest.raises(InputError) as info:
        load_pairs(path)
    assert (info.value.row, info.value.field) == (3, "score")
    assert "the same pair as row 1 has score 0.25 here and 1 there" in info.value.reason
    reverse = write(tmp_path / "r.tsv", second, "p1\ta\tb\tFloods again\tStorm hits\t1\tvalidation")
    with pytest.raises(InputError, match="the same pair as row 1 has score 1 here and 0.25 there") as info:
        load_pairs(reverse, "validation")
    assert (info.value.row, info.value.field) == (2, "score")


def test_one_pair_twice_with_one_score_is_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.tsv",
        "p1\ta\tb\tFloods again\tStorm hits\t0.5\ttest",
        "p2\tb\ta\tStorm hits\tFloods again\t0.50\ttest",
        "p3\t\t\tfloods again\tstorm hits\t.5\ttest",
    )
    assert load_pairs(path)["score"].tolist() == [0.5, 0.5, 0.5]


def test_rows_without_ids_are_not_one_pair_by_their_empty_ids(tmp_path: Path) -> None:
    """Empty ids name no item: two pairs without ids are told apart by their texts only."""
    path = write(
        tmp_path / "p.tsv",
        "p1\t\t\tFloods again\tStorm hits\t1\ttrain",
        "p2\t\t\tOther\tThing\t0\ttrain",
        "p3\ta\t\tMore\tNews\t0.25\ttrain",
        "p4\ta\t\tYet more\tNews\t0.75\ttrain",
    )
    assert len(load_pairs(path)) == 4


def test_one_pair_in_two_splits_is_still_refused_as_a_leak(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.tsv",
        "p1\ta\tb\tFloods again\tStorm hits\t1\ttrain",
        "p2\tb\ta\tStorm hits\tFloods again\t0\ttest",
    )
    with pytest.raises(InputError, match="is in split 'train' and in 'test'") as info:
        load_pairs(path)
    assert info.value.field in ("id_a", "text_a") and info.value.row == 2


def test_validate_pairs_refuses_when_asked_and_keeps_a_benchmarks_repeats_by_default() -> None:
    """STS-B scores a few of its pairs twice (read with the default); an annotated pair file may not."""
    frame = pd.DataFrame(
        {"text_a": ["A", "b"], "text_b": ["B", "a"], "score": [1.0, 0.2], "split": ["test", "test"]}
    )
    assert len(validate_pairs(frame, "sts")) == 2
    with pytest.raises(
        InputError, match=r"x.tsv: row 2, field 'score': the same pair as row 1 has score 0.2"
    ):
        validate_pairs(frame, "x.tsv", repeated_scores="refuse")
    with pytest.raises(InputError, match=r"row 2, field 'score'"):
        check_split_leaks(frame, "x.tsv")
    check_split_leaks(frame.assign(score=[0.2, 0.2]), "x.tsv")
    without_split = frame.assign(split="")  # rows without a split are one split
    with pytest.raises(InputError, match=r"row 2, field 'score'"):
        validate_pairs(without_split, "x.tsv", repeated_scores="refuse")


def test_the_bundled_pair_file_still_loads() -> None:
    assert len(load_pairs(ROOT / "annotations" / "thucnews_tw_pairs.tsv")) == 3577


def test_a_pair_twice_with_one_score_is_counted_once_where_figures_are_made(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Training, evaluation and calibration read a pair file with ``repeats="once"``: the pair pasted
    twice weighs as any other pair, and the warning names both rows; the file's rows are all kept
    otherwise (a merge writes them back)."""
    path = write(
        tmp_path / "p.tsv",
        "p1\ta\tb\tFloods again\tStorm hits\t0.5\ttest",
        "p2\tc\td\tOther\tThing\t1\ttest",
        "p3\tb\ta\tStorm hits\tFloods again\t0.50\ttest",
        "p4\te\tf\tMore\tNews\t0\ttrain",
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        once = load_pairs(path, "test", repeats="once")
    assert once["pair_id"].tolist() == ["p1", "p2"] and once.index.tolist() == [0, 1]
    assert f"{path}: 1 row(s) repeat the pair of an earlier row" in caplog.text
    assert "row 3 (row 1's pair)" in caplog.text
    assert len(load_pairs(path)) == 4


def test_a_pair_in_two_scripts_is_counted_once_as_the_model_reads_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``nlsim calibrate`` and ``nlsim evaluate`` read a pair file with the conversion the model reads the
    texts with: one pair in Traditional characters and again in Simplified ones in a split counted twice in
    the threshold's F1. The first row is kept, and the row left out is named; another split's rows are
    another split's."""
    path = write(
        tmp_path / "p.tsv",
        "p1			颱風登陸臺灣	颱風來了	1	validation",
        "p2			股市今天大漲	足球聯賽開幕	0	validation",
        "p3			台风来了	台风登陆台湾	1	validation",
        "p4			股市明天大跌	足球聯賽閉幕	0	test",
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        once = load_pairs(path, "validation", repeats="once", conversion="tw2sp")
    assert once["pair_id"].tolist() == ["p1", "p2"]
    assert (
        f"{path}: 1 row(s) repeat the pair of an earlier row in the same split as the model reads"
        in caplog.text
    )
    assert "(--convert tw2sp)" in caplog.text
    assert "row 3 (row 1's pair)" in caplog.text
    assert len(load_pairs(path, "validation", repeats="once", conversion="none")) == 3
    assert len(load_pairs(path, repeats="once", conversion="tw2sp")) == 3  # p4 is test's
    assert len(load_pairs(path, repeats="once", conversion="none")) == 4  # two scripts: two pairs
    header = write(tmp_path / "header.tsv")  # no pairs: refused for that by its reader, not by a lost column
    assert load_pairs(header, repeats="once", conversion="tw2sp").columns.tolist()[:5] == list(COLUMNS)


def test_a_pair_in_two_scripts_with_two_scores_or_in_two_splits_is_refused_as_training_refuses_it(
    tmp_path: Path,
) -> None:
    """One pair to the model, in Traditional characters and again in Simplified ones: ``nlsim finetune``
    refuses the file when the two rows of a split give it two scores, or when they are in two splits; ``nlsim
    evaluate`` and ``nlsim calibrate`` kept the first row's score (or scored a training pair as a test one)
    and said so in a warning only. They refuse it as training does, naming the file, the row and the field;
    with ``--convert none`` the two are two pairs."""
    from tests.command import nlsim, refused

    scored = write(
        tmp_path / "scored.tsv",
        "p1\t\t\t颱風登陸臺灣\t颱風來了\t1\ttest",
        "p2\t\t\t股市今天大漲\t足球聯賽開幕\t0\ttest",
        "p3\t\t\t台风来了\t台风登陆台湾\t0.75\ttest",
        "p4\t\t\t新手機發佈\t手機價格下調\t0.5\ttest",
    )
    with pytest.raises(InputError) as info:
        load_pairs(scored, "test", repeats="once", conversion="tw2sp")
    assert (info.value.row, info.value.field) == (3, "score")
    said = info.value.reason
    assert "the same pair as row 1 has score 0.75 here and 1 there as the model reads them" in said
    assert len(load_pairs(scored, "test", repeats="once", conversion="none")) == 4
    proc = nlsim("evaluate", "--model", "tfidf-char2", "--pairs", scored, "--convert", "tw2sp", cwd=tmp_path)
    refused(proc, f"{scored}: row 3, field 'score'", "as the model reads them", command="evaluate")
    split = write(
        tmp_path / "split.tsv",
        "p1\t\t\t颱風登陸臺灣\t颱風來了\t1\ttrain",
        "p2\t\t\t股市今天大漲\t足球聯賽開幕\t0\ttest",
        "p3\t\t\t台风来了\t台风登陆台湾\t1\ttest",
        "p4\t\t\t新手機發佈\t手機價格下調\t0.5\ttest",
    )
    with pytest.raises(InputError) as info:
        load_pairs(split, "test", repeats="once", conversion="tw2sp")
    assert (info.value.row, info.value.field) == (3, "text_a")
    assert "the same pair as row 1 is in split 'train' and in 'test' as the model reads" in info.value.reason
    assert len(load_pairs(split, "test", repeats="once", conversion="none")) == 3


def test_a_pair_written_with_an_entity_is_counted_once_as_the_model_reads_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The model reads ``正源&#8226;尚峰`` as ``正源•尚峰`` (an entity as a page shows it: training and the
    report give it the text so), but a pair file's rows were compared as converted only, entity and all:
    a validation pair given with the entity and again with its character counted twice in the figures,
    where training's check of the splits, reading them as the model does, sees one pair."""
    path = write(
        tmp_path / "p.tsv",
        "p1\t\t\t正源&#8226;尚峰活動\t尚峰業主活動\t1\tvalidation",
        "p2\t\t\t股市今天大漲\t足球聯賽開幕\t0\tvalidation",
        "p3\t\t\t正源•尚峰活動\t尚峰業主活動\t1\tvalidation",
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        once = load_pairs(path, "validation", repeats="once", conversion="tw2sp")
    assert once["pair_id"].tolist() == ["p1", "p2"]
    assert "row 3 (row 1's pair)" in caplog.text


def test_a_pair_written_with_an_entity_is_counted_once_without_a_script_conversion_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With ``--convert none`` the model still reads ``&#8226;`` as ``•``
    (:func:`~nlsim.io.cells.model_text`), and training's check of the splits compares the texts so;
    ``nlsim evaluate --convert none`` compared them as written and counted such a pair twice. It is one
    pair, said as the model reads it."""
    path = write(
        tmp_path / "p.tsv",
        "p1\t\t\t正源&#8226;尚峰活動\t尚峰業主活動\t1\tvalidation",
        "p2\t\t\t股市今天大漲\t足球聯賽開幕\t0\tvalidation",
        "p3\t\t\t正源•尚峰活動\t尚峰業主活動\t1\tvalidation",
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        once = load_pairs(path, "validation", repeats="once", conversion="none")
    assert once["pair_id"].tolist() == ["p1", "p2"]
    assert "row 3 (row 1's pair)" in caplog.text and "as the model reads them (--convert none)" in caplog.text
    assert len(load_pairs(path, "validation", repeats="once")) == 3  # no conversion named: as written


def test_an_item_paired_with_itself_is_refused_by_row_and_field(tmp_path: Path) -> None:
    """``nlsim evaluate`` and ``nlsim calibrate`` scored a row pairing an item with itself (a cosine of 1
    that only flatters the figures; training learnt from it), where ``nlsim judge`` and ``nlsim annotate
    merge`` refuse it: the pair file is refused by row and field, whichever split the row is in."""
    path = write(
        tmp_path / "p.tsv",
        "p1\ta\tb\tFloods again\tStorm hits\t1\ttest",
        "p2\t g \tg\tQuake in the west\tQuake in the west\t1\ttrain",
    )
    with pytest.raises(InputError, match=r"p.tsv: row 2, field 'id_b': item 'g' is paired with itself"):
        load_pairs(path, "test")


def test_rows_without_a_split_left_out_of_the_split_asked_for_are_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two rows added without their split: ``nlsim evaluate --split test`` (and calibrate, judge) scored
    the other rows only and said nothing; the rows left out are now named."""
    from nlsim.evaluation.judge import scored_pairs

    path = write(
        tmp_path / "p.tsv",
        "p1\ta\tb\tFloods again\tStorm hits\t1\ttest",
        "p2\tc\td\tOther\tThing\t0\t",
        "p3\te\tf\tMore\tNews\t0.5\ttest",
        "p4\tg\th\tYet more\tNews\t0\t",
    )
    for read in (lambda: load_pairs(path, "test"), lambda: scored_pairs(path, "test")):
        caplog.clear()
        with caplog.at_level("WARNING", logger="nlsim"):
            assert len(read()) == 2
        assert f"{path}: 2 row(s) name no split (row 2, 4) and are left out of the test pairs" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="nlsim"):
        load_pairs(path)  # every row: none left out
    assert "name no split" not in caplog.text


@pytest.mark.parametrize(
    ("rows", "row", "first"),
    [
        (  # the texts reversed in a row added without its split: --split all gave n 4 for 3 pairs
            (
                "p1\t\t\tstorm hits coast\tstorm hits the coast\t1\ttest",
                "p2\t\t\tmarket falls\tfootball cup final\t0\ttest",
                "p3\t\t\tprices rise\tprices rise again\t0.5\ttest",
                "p4\t\t\tstorm hits the coast\tstorm hits coast\t0\t",
            ),
            4,
            1,
        ),
        (  # the same ids, reversed, the row without a split first
            ("p1\tb\ta\tStorm hits\tFloods again\t1\t", "p2\ta\tb\tFloods again\tStorm hits\t1\ttrain"),
            2,
            1,
        ),
    ],
    ids=["texts-test-then-none", "ids-none-then-train"],
)
def test_a_pair_in_a_split_and_again_without_one_is_refused(
    tmp_path: Path, rows: tuple[str, ...], row: int, first: int
) -> None:
    """A row without a split is a split of its own: the same pair in it and in a named split was counted
    twice by ``nlsim evaluate --split all`` (and is in two splits); it is refused as any pair in two
    splits is, by file and both rows."""
    path = write(tmp_path / "p.tsv", *rows)
    for split in (None, "test" if "test" in rows[0] else "train"):
        with pytest.raises(
            InputError, match=rf"p.tsv: row {row}, field '(id|text)_a': the same pair as row {first}"
        ) as info:
            load_pairs(path, split)
        assert "no split" in info.value.reason
