"""The editors' loop, hardened: a merge never leaves an unreadable or torn pair file, two merges never lose
pairs, draw never overwrites an editor's work and never proposes what merge refuses."""

from __future__ import annotations

import csv
import fcntl
import io
import os
import stat
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from nlsim.annotation import merge, pair_file
from nlsim.annotation.draw import DrawResult, draw_candidates
from nlsim.annotation.merge import merge_annotations
from nlsim.errors import ConfigError, InputError, NlsimError
from nlsim.io import editor_file
from nlsim.io.pairs import load_pairs, normalise_text, pair_keys

HEADER = "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\tstratum"
ROWS = [
    "p1\ttrain\tn00\tn01\t股市今天大漲\t股市今日大漲三成\t1\tx",
    "p2\ttest\tn04\tn03\t足球聯賽閉幕\t足球聯賽開幕\t0.75\ty",
]


def quiet(_: str) -> None:
    """A log that says nothing."""


@pytest.fixture()
def pairs(tmp_path: Path) -> Path:
    """A small TSV pair file (two pairs)."""
    path = tmp_path / "pairs.tsv"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n", encoding="utf-8")
    return path


def filled(tmp_path: Path, name: str = "filled.csv", **cols: list[str]) -> Path:
    """An editors' file with ``cols`` (one row per value)."""
    path = tmp_path / name
    pd.DataFrame(cols).to_csv(path, index=False)
    return path


def one_pair(tmp_path: Path, name: str = "filled.csv", **change: str) -> Path:
    """An editors' file with one scored pair of items z1/z2, ``change`` applied."""
    row = {"pair_id": editor_file.pair_id("z1", "z2"), "id_a": "z1", "id_b": "z2", "text_a": "颱風來了"}
    row |= {"text_b": "颱風登陸", "score": "0.5", "notes": ""} | change
    return filled(tmp_path, name, **{k: [v] for k, v in row.items()})


# --- 1. a merge that would leave an unreadable pair file is refused --------------------------------


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
@pytest.mark.parametrize("field", ["text_b", "notes"])
def test_a_cell_with_a_line_separator_is_refused_and_the_pair_file_kept(
    pairs: Path, tmp_path: Path, char: str, field: str
) -> None:
    """U+2028 (web text), a vertical tab (a slide's soft line break) ...: other tools split rows at them, so a
    merge refuses the cell by row and field (as docs/finetuning.md says) and the pair file stays as it was,
    readable for the next merge."""
    before = pairs.read_bytes()
    with pytest.raises(InputError) as err:
        merge_annotations(one_pair(tmp_path, **{field: f"颱風{char}登陸"}), pairs, log=quiet)
    assert (err.value.row, err.value.field) == (2, field)  # sheet row 2: the first under the header
    assert pairs.read_bytes() == before
    merge_annotations(
        one_pair(tmp_path, "second.csv", id_a="z3", id_b="z4", pair_id="", text_a="另一"), pairs
    )
    assert len(load_pairs(pairs)) == 3


@pytest.mark.parametrize(("char", "suffix"), [("\x00", "csv"), ("\t", "tsv"), ("\n", "tsv")])
def test_a_cell_the_pair_file_cannot_hold_is_refused_by_row_and_field(
    tmp_path: Path, char: str, suffix: str
) -> None:
    pairs = tmp_path / f"pairs.{suffix}"
    pd.read_csv(
        io.StringIO("\n".join([HEADER, *ROWS]) + "\n"), sep="\t", dtype=str, keep_default_na=False
    ).to_csv(pairs, sep="\t" if suffix == "tsv" else ",", index=False)
    before = pairs.read_bytes()
    with pytest.raises(
        InputError
    ) as err:  # a note's tab or line break is read as a space (test_annotation.py)
        merge_annotations(one_pair(tmp_path, annotator=f"desk{char}2"), pairs, log=quiet)
    assert (err.value.row, err.value.field) == (2, "annotator")
    assert pairs.read_bytes() == before


def test_a_merged_file_that_does_not_read_back_whole_is_not_put_in_place(
    pairs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever goes wrong in writing, the temporary file is read back with the pair reader first."""

    def torn(data: bytes, fmt: str, extra: list[str], add: pd.DataFrame, cells: object = None) -> bytes:
        return data  # a writer that lost the new rows

    monkeypatch.setattr(pair_file, "_text_bytes", torn)
    before = pairs.read_bytes()
    with pytest.raises(InputError, match="reads back as 2 pairs, not the 3"):
        merge_annotations(one_pair(tmp_path), pairs, log=quiet)
    assert pairs.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["filled.csv", "pairs.tsv"]  # no temporary left


def test_a_damaged_pair_file_is_warned_of_by_its_own_name_not_the_temporary_file_read_back(
    pairs: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pair file whose texts hold U+FFFD was merged into with a warning naming
    ``.pairs.tsv.x1y2.tmp.tsv``, the temporary file the merge reads back, gone by the time the warning is
    read. The warning names the pair file, with its row and field."""
    damaged = ROWS[1].replace("開幕", "開\ufffd")
    pairs.write_text("\n".join([HEADER, ROWS[0], damaged]) + "\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="nlsim"):
        merge_annotations(one_pair(tmp_path), pairs, log=quiet)
    assert len(load_pairs(pairs)) == 3
    assert ".tmp" not in caplog.text
    assert f"{pairs}: 1 row(s) hold U+FFFD" in caplog.text
    assert "row 2 (text_b)" in caplog.text


# --- 2. two merges at once -------------------------------------------------------------------------


def test_two_merges_at_once_keep_both_editors_pairs(
    pairs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_check = merge.check_new

    def slow(*args: object, **kwargs: object) -> object:
        time.sleep(0.4)  # both merges have read the pair file before either writes, without a lock
        return slow_check(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(merge, "check_new", slow)
    files = [
        one_pair(tmp_path, "one.csv"),
        one_pair(tmp_path, "two.csv", pair_id=editor_file.pair_id("z3", "z4"), id_a="z3", id_b="z4",
                 text_a="股市大漲", text_b="股市小跌"),
    ]  # fmt: skip
    errors: list[BaseException] = []

    def run(path: Path) -> None:
        try:
            merge_annotations(path, pairs, log=quiet)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ids = load_pairs(pairs)["pair_id"].tolist()
    assert ids[:2] == ["p1", "p2"] and sorted(ids[2:]) == sorted(
        [editor_file.pair_id("z1", "z2"), editor_file.pair_id("z3", "z4")]
    )


def test_a_merge_waits_for_the_lock_and_then_gives_up_clearly(
    pairs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(merge, "MERGE_LOCK_WAIT", 0.3)
    before = pairs.read_bytes()
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another merge holds the folder
        with pytest.raises(NlsimError, match="another merge into .*pairs.tsv is running"):
            merge_annotations(one_pair(tmp_path), pairs, log=quiet)
    finally:
        os.close(fd)
    assert pairs.read_bytes() == before
    assert merge_annotations(one_pair(tmp_path), pairs, log=quiet).added == 1  # once it is free


def test_a_merge_into_a_missing_pair_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nowhere/pairs.tsv: cannot be opened"):
        merge_annotations(one_pair(tmp_path), tmp_path / "nowhere" / "pairs.tsv", log=quiet)


# --- 3. draw --out ---------------------------------------------------------------------------------

TITLES = [
    "股市今天大漲", "股市今日大漲三成", "股市明天大跌", "足球聯賽開幕", "足球聯賽閉幕", "籃球比賽結果",
    "北京房價上漲", "上海房價下跌", "公務員考試報名", "公務員考試成績", "新手機發佈", "手機價格下調",
]  # fmt: skip


def corpus_file(tmp_path: Path, titles: list[str], name: str = "corpus.tsv") -> Path:
    """A corpus of ``titles`` with ids c-1, c-2, ..."""
    path = tmp_path / name
    pd.DataFrame({"id": [f"c-{i + 1}" for i in range(len(titles))], "title": titles}).to_csv(
        path, sep="\t", index=False
    )
    return path


def draw(corpus: Path, out: Path, pairs: Path | None = None, n: int = 6) -> DrawResult:
    """A quick TF-IDF draw."""
    return draw_candidates(
        corpus, pairs, out, n=n, scorer="tfidf-char2", conversion="none", threshold=0.3, k=5, log=quiet
    )


def test_draw_never_overwrites_an_editors_scores_or_a_foreign_file(tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, TITLES)
    out = tmp_path / "todo.csv"
    draw(corpus, out)
    draw(corpus, out)  # a drawn file nobody scored yet may be drawn again
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    todo.loc[:2, "score"] = ["1", "0.5", "0"]
    todo.to_csv(out, index=False)
    before = out.read_bytes()
    with pytest.raises(ConfigError, match="holds 3 score"):
        draw(corpus, out)
    assert out.read_bytes() == before
    mine = tmp_path / "mine.csv"
    mine.write_text("my,notes\n1,2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not a drawn editors' file"):
        draw(corpus, mine)
    assert mine.read_text(encoding="utf-8") == "my,notes\n1,2\n"
    with pytest.raises(ConfigError, match="is the same path as --corpus"):  # named for what it is
        draw(corpus, corpus)


@pytest.mark.parametrize("column", ["notes", "annotator"])
def test_draw_never_overwrites_an_editors_notes_or_name_before_any_score(tmp_path: Path, column: str) -> None:
    """An editor who has begun a drawn file (a note on a pair, their name) but given no score yet has
    work in it all the same: draw refuses to write over it, naming the cells."""
    corpus = corpus_file(tmp_path, TITLES)
    out = tmp_path / "todo.csv"
    draw(corpus, out)
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    todo.loc[1, column] = "wire copy, ask the desk"
    todo.to_csv(out, index=False)
    before = out.read_bytes()
    with pytest.raises(ConfigError, match=f"holds 1 filled cell\\(s\\) of {column}"):
        draw(corpus, out)
    assert out.read_bytes() == before


@pytest.mark.parametrize("scored", [True, False])
def test_draw_refuses_an_editors_file_given_as_the_pair_file(tmp_path: Path, scored: bool) -> None:
    """An editors' file given as --pairs (a drawn file, scored or not, in place of the pair file it was
    merged into) would make the draw propose again every pair the pair file holds, or fail on its empty
    scores as a bad pair file: it is refused as what it is, before the corpus is read, as the merge
    refuses it."""
    corpus = corpus_file(tmp_path, TITLES)
    drawn = tmp_path / "todo.csv"
    draw(corpus, drawn)
    if scored:
        todo = pd.read_csv(drawn, dtype=str, keep_default_na=False)
        todo["score"] = "0.5"
        todo.to_csv(drawn, index=False)
    out = tmp_path / "next.csv"
    with pytest.raises(ConfigError, match=f"--pairs {drawn} is an editors' file"):
        draw(tmp_path / "no-corpus-needed.tsv", out, drawn)
    assert not out.exists()


@pytest.mark.parametrize(
    ("out", "n", "words"),
    [("todo.tsv", 5, ".csv"), ("todo.csv", 0, "-n"), ("folder.csv", 5, "folder")],
)
def test_draw_refuses_a_bad_out_or_n_before_any_work(tmp_path: Path, out: str, n: int, words: str) -> None:
    (tmp_path / "folder.csv").mkdir()
    with pytest.raises(ConfigError, match=words):
        draw(tmp_path / "no-corpus-needed.tsv", tmp_path / out, n=n)  # refused before the corpus is read
    assert not (tmp_path / "todo.tsv").exists() and not (tmp_path / "todo.csv").exists()


# --- 4. draw proposes nothing merge refuses --------------------------------------------------------


def test_draw_drops_pairs_of_equal_texts_and_pairs_repeated_by_their_texts(tmp_path: Path) -> None:
    titles = ["颱風來了", "颱風來了", "颱風 來了！", "颱風登陸臺灣", "股市大漲", "股市 大漲", "股市小跌"]
    corpus = corpus_file(tmp_path, titles)
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(
        {
            "pair_id": ["p1"],
            "split": ["train"],
            "text_a": ["股市大漲"],
            "text_b": ["股市小跌"],
            "score": ["0"],
        }
    ).to_csv(pairs, sep="\t", index=False)
    out = tmp_path / "todo.csv"
    draw(corpus, out, pairs, n=50)
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(todo)
    assert all(
        normalise_text(a) != normalise_text(b) for a, b in zip(todo["text_a"], todo["text_b"], strict=True)
    )
    text_keys = [k for keys in pair_keys(todo[["text_a", "text_b"]]) for k in keys]
    assert len(text_keys) == len(set(text_keys))  # no pair twice by its texts
    assert ("text_a", "股市大漲", "股市小跌") not in text_keys  # nor one already annotated (c-6 / c-7)
    todo["score"] = "0.5"
    todo.to_csv(out, index=False)
    assert merge_annotations(out, pairs, log=quiet).added == len(todo)  # merge takes every drawn pair


def test_draw_never_proposes_an_item_the_pair_file_knows_with_another_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An item whose text in the corpus is not its text in the pair file (a headline edited since, or a
    corpus numbered anew) makes every drawn pair of it one the merge refuses: draw leaves it out and says
    so, naming the pair file's row and field, and the editors' whole file merges."""
    corpus = corpus_file(tmp_path, TITLES)
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "split": ["train", "train"],
            "id_a": ["c-1", "c-4"],
            "id_b": ["c-2", "c-6"],
            "text_a": [TITLES[0], TITLES[3]],  # c-1 and c-4 as the corpus has them
            "text_b": ["股市今日大漲兩成", " " + TITLES[5]],  # c-2 edited since; c-6 but for a space
            "score": ["1", "0"],
        }
    ).to_csv(pairs, sep="\t", index=False)
    out = tmp_path / "todo.csv"
    with caplog.at_level("WARNING", logger="nlsim"):
        draw(corpus, out, pairs, n=50)
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(todo) and "c-2" not in set(todo["id_a"]) | set(todo["id_b"])
    assert "c-6" in set(todo["id_a"]) | set(todo["id_b"])  # white space around a text is the same text
    assert f"{corpus}: 1 item(s) have another text than in {pairs} (row 1 (text_b): c-2)" in caplog.text
    todo["score"] = "0.5"
    todo.to_csv(out, index=False)
    assert merge_annotations(out, pairs, log=quiet).added == len(todo)  # merge takes every drawn pair


# --- 5. an editors' file without pair ids ----------------------------------------------------------


def test_pairs_without_a_pair_id_get_their_items_id(pairs: Path, tmp_path: Path) -> None:
    one = filled(tmp_path, "one.csv", id_a=["z1"], id_b=["z2"], text_a=["甲"], text_b=["乙"], score=["1"])
    two = filled(tmp_path, "two.csv", id_a=["z3"], id_b=["z4"], text_a=["丙"], text_b=["丁"], score=["0"])
    merge_annotations(one, pairs, log=quiet)
    merge_annotations(two, pairs, log=quiet)  # not "already annotated" as row-1
    assert load_pairs(pairs)["pair_id"].tolist()[2:] == [
        editor_file.pair_id("z1", "z2"),
        editor_file.pair_id("z3", "z4"),
    ]


def test_a_pair_without_an_id_and_without_item_ids_is_refused_by_row(pairs: Path, tmp_path: Path) -> None:
    path = filled(tmp_path, id_a=["z1", ""], id_b=["z2", "z4"], text_a=["甲", "丙"], text_b=["乙", "丁"],
                  score=["1", "0"])  # fmt: skip
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert (err.value.row, err.value.field) == (3, "id_a")  # the empty id named, not the id made from it
    path = filled(tmp_path, id_a=["z1", ""], id_b=["z2", ""], text_a=["甲", "丙"], text_b=["乙", "丁"],
                  score=["1", "0"])  # fmt: skip
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert (err.value.row, err.value.field) == (3, "pair_id")


def test_a_pair_id_of_other_items_is_refused_naming_the_right_one(pairs: Path, tmp_path: Path) -> None:
    before = pairs.read_bytes()
    wrong = editor_file.pair_id("z3", "z4")
    with pytest.raises(InputError) as err:
        merge_annotations(one_pair(tmp_path, pair_id=wrong), pairs, log=quiet)
    assert (err.value.row, err.value.field) == (2, "pair_id")
    assert editor_file.pair_id("z1", "z2") in err.value.reason
    assert pairs.read_bytes() == before


# --- 6. the pair file keeps its link, mode, byte-order mark and line endings -----------------------


def test_merge_keeps_the_link_the_mode_the_bom_and_crlf(tmp_path: Path) -> None:
    real = tmp_path / "data" / "pairs.tsv"
    real.parent.mkdir()
    original = ("\ufeff" + "\r\n".join([HEADER, *ROWS]) + "\r\n").encode("utf-8")
    real.write_bytes(original)
    os.chmod(real, 0o600)
    link = tmp_path / "pairs.tsv"
    link.symlink_to(real)
    merge_annotations(one_pair(tmp_path), link, log=quiet)
    assert link.is_symlink() and os.readlink(link) == str(real)
    data = real.read_bytes()
    assert data.startswith(original) and data.endswith(b"\r\n") and b"\r\n" in data[len(original) :]
    assert data.count(b"\n") == data.count(b"\r\n") == 4
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o600
    assert load_pairs(link)["pair_id"].tolist() == ["p1", "p2", editor_file.pair_id("z1", "z2")]


@pytest.mark.parametrize("suffix", ["tsv", "parquet"])
def test_a_pair_file_without_item_ids_keeps_the_ids_the_editors_gave(tmp_path: Path, suffix: str) -> None:
    """A pair file of texts only (no id_a/id_b, as a benchmark's): the merged pairs keep the item ids of
    the editors' file (the older rows empty), so the verdicts they made are checked against the pair file
    and act, instead of the ids being dropped from it."""
    from nlsim.annotation.merge import check_verdicts
    from nlsim.dedup.editors import read_editors

    frame = pd.DataFrame(
        {
            "pair_id": ["q1"],
            "text_a": ["股市今天大漲"],
            "text_b": ["股市今日大漲三成"],
            "score": [1.0],
            "split": ["train"],
        }
    )
    pairs = tmp_path / f"pairs.{suffix}"
    frame.to_parquet(pairs) if suffix == "parquet" else frame.to_csv(pairs, sep="\t", index=False)
    merge_annotations(one_pair(tmp_path, score="0"), pairs, log=quiet)
    back = load_pairs(pairs)
    assert back["id_a"].fillna("").astype(str).tolist() == ["", "z1"]
    assert back["id_b"].fillna("").astype(str).tolist() == ["", "z2"]
    said: list[str] = []
    check = check_verdicts(pairs, log=said.append)
    assert not check.unchecked and check.in_step, said
    assert read_editors(pairs, None).constraints().forbids("z1", "z2")


@pytest.mark.parametrize("suffix", ["tsv", "csv", "parquet"])
def test_a_parquet_editors_file_with_empty_cells_merges_them_empty(
    pairs: Path, tmp_path: Path, suffix: str
) -> None:
    """An editors' file saved as Parquet leaves a note, an annotator or a stratum nobody gave as a null
    cell (and a blank score, with --skip-blank): the merge stores them as empty cells, never as 'nan' or
    'None', and does not stop with a Python error."""
    target = tmp_path / f"pairs.{suffix}"
    frame = load_pairs(pairs)[["pair_id", "split", "id_a", "id_b", "text_a", "text_b", "score", "stratum"]]
    frame.to_parquet(target) if suffix == "parquet" else frame.to_csv(
        target, sep="\t" if suffix == "tsv" else ",", index=False
    )
    path = tmp_path / "marks.parquet"
    pd.DataFrame(
        {
            "pair_id": [editor_file.pair_id("z1", "z2"), editor_file.pair_id("z3", "z4"), ""],
            "id_a": ["z1", "z3", "z5"],
            "id_b": ["z2", "z4", "z6"],
            "text_a": ["颱風來了", "股市大跌", "足球"],
            "text_b": ["颱風登陸", "股市下跌", "籃球"],
            "stratum": ["near-miss", None, None],
            "score": [0.5, 1.0, None],
            "annotator": [None, "desk", None],
            "notes": ["看過", None, None],
        }
    ).to_parquet(path)
    merge_annotations(path, target, skip_blank=True, log=quiet)
    back = load_pairs(target).fillna("")
    new = back[back["pair_id"].str.startswith("ed-")]
    assert new["notes"].tolist() == ["看過", ""]
    assert new["annotator"].tolist() == ["", "desk"]
    assert new["stratum"].tolist() == ["editor-loop:near-miss", "editor-loop"]
    assert not back.astype(str).isin(["nan", "None", "<NA>"]).any().any()


@pytest.mark.parametrize("export", [False, True])
def test_an_editors_file_given_as_the_pair_file_is_refused_untouched(tmp_path: Path, export: bool) -> None:
    """Two editors' files given the wrong way round (``--pairs marks-1.csv --filled marks-2.csv``): the
    delivered file is kept as delivered, never given a split column, the other file's rows and a verdict
    store of its own; the refusal says which option it belongs to (exit 2, as for options that cannot
    work)."""
    from nlsim.annotation.merge import check_verdicts

    delivered = one_pair(tmp_path, "marks-1.csv", score="1")  # a drawn file, scored
    frame = pd.read_csv(delivered, dtype=str, keep_default_na=False)
    frame = frame.reindex(columns=list(editor_file.COLUMNS), fill_value="")
    if export:  # the report page's export: the texts' hashes and the overrule column after the others
        frame["sha256_a"] = editor_file.text_sha256("颱風來了")
        frame["sha256_b"] = editor_file.text_sha256("颱風登陸")
        frame["overrule"] = "false"
    frame.to_csv(delivered, index=False)
    before = delivered.read_bytes()
    other = one_pair(tmp_path, "marks-2.csv", id_a="z3", id_b="z4", pair_id="", text_a="股市大跌")
    with pytest.raises(ConfigError, match="--filled"):
        merge_annotations(other, delivered, log=quiet)
    with pytest.raises(ConfigError, match="--filled"):
        check_verdicts(delivered, write=True, log=quiet)
    assert delivered.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["marks-1.csv", "marks-2.csv"]


def test_a_pair_scored_in_traditional_is_scored_in_simplified(pairs: Path, tmp_path: Path) -> None:
    """The test pair p2 (足球聯賽閉幕 / 足球聯賽開幕) scored again from a corpus in Simplified
    characters, under other item ids: models read both scripts as one (tw2sp), so merged into train it would
    train on a test pair. The merge names it as already annotated, as draw never proposes it; --skip-scored
    skips it."""
    before = pairs.read_bytes()
    path = filled(
        tmp_path,
        id_a=["s04", "z1"],
        id_b=["s03", "z2"],
        text_a=["足球联赛闭幕", "颱風來了"],
        text_b=["足球联赛开幕", "颱風登陸"],
        score=["0.5", "1"],
    )
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert (err.value.row, err.value.field) == (2, "text_a") and "'p2'" in err.value.reason
    assert pairs.read_bytes() == before
    result = merge_annotations(path, pairs, skip_scored=True, log=quiet)
    assert (result.added, result.skipped_scored) == (1, 1)
    assert load_pairs(pairs)["pair_id"].tolist() == ["p1", "p2", editor_file.pair_id("z1", "z2")]


def test_a_new_pair_under_a_pair_id_the_pair_file_gives_another_pair_is_never_skipped(
    pairs: Path, tmp_path: Path
) -> None:
    """An editors' file numbering its pairs by hand (p1, q2) names a new pair z1/z2 'p1', the id of the pair
    file's n00/n01: the merge says the id is taken by another pair, never that z1/z2 is already annotated,
    and --skip-scored does not drop it unmerged as if it were. The same pair under its own id still is
    already annotated."""
    before = pairs.read_bytes()
    path = filled(
        tmp_path,
        pair_id=["p1", "q2"],
        id_a=["z1", "z3"],
        id_b=["z2", "z4"],
        text_a=["颱風來了", "股市大跌"],
        text_b=["颱風登陸", "股市下跌"],
        score=["0.5", "1"],
    )
    for skip in (False, True):
        with pytest.raises(InputError) as err:
            merge_annotations(path, pairs, skip_scored=skip, log=quiet)
        assert (err.value.row, err.value.field) == (2, "pair_id")
        assert "another pair" in err.value.reason and "already annotated" not in err.value.reason
    assert pairs.read_bytes() == before
    again = filled(tmp_path, "again.csv", pair_id=["p1"], id_a=["n01"], id_b=["n00"],
                   text_a=["股市今日大漲三成"], text_b=["股市今天大漲"], score=["0"])  # fmt: skip
    with pytest.raises(InputError, match="already annotated"):
        merge_annotations(again, pairs, log=quiet)


def test_a_csv_pair_file_given_new_columns_keeps_every_existing_cell(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.csv"
    text = 'pair_id,split,text_a,text_b,score\r\np1,train,"two\r\nlines, ""quoted""",乙,1\r\n'
    pairs.write_bytes(text.encode("utf-8"))
    merge_annotations(one_pair(tmp_path, notes="看過"), pairs, log=quiet)
    back = load_pairs(pairs)
    assert back["text_a"].tolist() == ['two\r\nlines, "quoted"', "颱風來了"]
    assert back["notes"].tolist() == ["", "看過"]
    head = b'pair_id,split,text_a,text_b,score,id_a,id_b,notes\r\np1,train,"two\r\nlines'
    assert pairs.read_bytes().startswith(head)


@pytest.mark.parametrize(
    ("text", "newline"),
    [
        ('pair_id,split,text_a,text_b,score\np1,train,他說5"螢幕,"a, b",0.5\np2,test,x,"=SUM(1)",1\n', "\n"),
        ("pair_id,split,text_a,text_b,score\rp1,train,甲,乙,1\rp2,test,丙,丁,0\r", "\r"),  # Excel for Mac
        ("pair_id\tsplit\ttext_a\ttext_b\tscore\rp1\ttrain\t甲\t乙\t1\r", "\r"),
    ],
)
def test_a_pair_file_given_new_columns_keeps_quotes_inside_fields_and_old_mac_endings(
    tmp_path: Path, text: str, newline: str
) -> None:
    """A quote inside an unquoted CSV field is a character (``5"``), and CR alone ends a line in a file of
    old Mac endings: both keep every existing cell when the editor's notes add a column."""
    pairs = tmp_path / ("pairs.tsv" if "\t" in text else "pairs.csv")
    pairs.write_bytes(text.encode("utf-8"))
    before = load_pairs(pairs)
    merge_annotations(one_pair(tmp_path, notes="看過"), pairs, log=quiet)
    back = load_pairs(pairs)
    assert back["text_a"].tolist()[:-1] == before["text_a"].tolist()
    assert back["text_b"].tolist()[:-1] == before["text_b"].tolist()
    assert back["notes"].tolist() == [""] * len(before) + ["看過"]
    assert pairs.read_bytes().count(newline.encode()) == text.count(newline) + 1


# --- 7. draw: clear errors instead of tracebacks ---------------------------------------------------


@pytest.mark.parametrize(
    ("titles", "words"),
    [(["颱風來了"], "at least 2"), ([], "at least 2"), (["a", "b", "c"], "two characters")],
)
def test_draw_refuses_a_corpus_it_cannot_draw_from(tmp_path: Path, titles: list[str], words: str) -> None:
    out = tmp_path / "todo.csv"
    with pytest.raises(InputError, match=words):
        draw(corpus_file(tmp_path, titles), out)
    assert not out.exists()


def test_draw_refuses_when_every_pair_is_already_annotated(tmp_path: Path) -> None:
    corpus = corpus_file(tmp_path, ["颱風來了", "股市大漲"])
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(
        {
            "pair_id": ["p1"],
            "split": ["train"],
            "text_a": ["股市大漲"],
            "text_b": ["颱風來了"],
            "score": ["0"],
        }
    ).to_csv(pairs, sep="\t", index=False)
    out = tmp_path / "todo.csv"
    with pytest.raises(InputError, match="no candidate pair left"):
        draw(corpus, out, pairs)
    assert not out.exists()


# --- 8. messages -----------------------------------------------------------------------------------


def test_a_semicolon_separated_file_is_named_as_such(pairs: Path, tmp_path: Path) -> None:
    for body in ("pair_id;text_a;text_b;score\ne1;甲;乙;1\n", "pair_id;text_a;text_b;score\ne1;甲;乙;0,5\n"):
        path = tmp_path / "filled.csv"
        path.write_text("\ufeff" + body, encoding="utf-8")
        with pytest.raises(InputError, match="separated by ';'"):
            merge_annotations(path, pairs, log=quiet)


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ("pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore", "separated by tabs"),
        ("pair_id,id_a,id_b,text_a,text_b,Score", "'Score'"),
        ("pair_id,id_a,id_b,text_a,text_b,score ", "'score '"),
        ("pair_id,id_a,id_b,Text_A,text_b,score", "'Text_A'"),
    ],
)
@pytest.mark.parametrize("text_a", ["颱風來了", "颱風, 來了"])
def test_a_header_a_spreadsheet_changed_is_named_as_such(
    pairs: Path, tmp_path: Path, header: str, words: str, text_a: str
) -> None:
    """A sheet saved as tab-separated text under a .csv name (a title with a comma in it or not), or a
    column renamed by a capital letter or a space typed after it: the column is there to the editor's eye,
    so the refusal names what the file has instead of saying the column is missing, or naming a row of
    another number of fields, and the pair file stays as it was."""
    sep = "\t" if "\t" in header else ","
    buf = io.StringIO()
    csv.writer(buf, delimiter=sep, lineterminator="\n").writerow(
        [editor_file.pair_id("z1", "z2"), "z1", "z2", text_a, "颱風登陸", "0.5"]
    )
    path = tmp_path / "filled.csv"
    path.write_text(header + "\n" + buf.getvalue(), encoding="utf-8")
    before = pairs.read_bytes()
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert words in str(err.value) and "missing column" not in str(err.value)
    assert pairs.read_bytes() == before


def test_a_header_repeated_inside_the_file_is_named_as_such(pairs: Path, tmp_path: Path) -> None:
    """Two editors' files joined into one (``cat a.csv b.csv``): the second header is a row of the sheet.
    The refusal names that row as the header again, not as a score that is not a number."""
    first = one_pair(tmp_path, "a.csv")
    second = one_pair(tmp_path, "b.csv", id_a="z3", id_b="z4", pair_id="", text_a="股市大跌")
    joined = tmp_path / "both.csv"
    joined.write_bytes(first.read_bytes() + second.read_bytes())
    before = pairs.read_bytes()
    with pytest.raises(InputError) as err:
        merge_annotations(joined, pairs, log=quiet)
    assert err.value.row == 3 and "header" in err.value.reason and "not a number" not in str(err.value)
    assert pairs.read_bytes() == before


def test_two_spreadsheet_files_joined_name_the_second_header_as_such(pairs: Path, tmp_path: Path) -> None:
    """Two editors' files saved by a spreadsheet as CSV UTF-8, each beginning with a byte-order mark, joined
    (``cat a.csv b.csv``): the second header's first cell reads ``\ufeffpair_id``, and the row was refused
    for an id holding U+FEFF and a score that is not a number. It is named as the header again, as
    without the marks; so is a pair file's header joined so."""
    first = one_pair(tmp_path, "a.csv")
    second = one_pair(tmp_path, "b.csv", id_a="z3", id_b="z4", pair_id="", text_a="股市大跌")
    joined = tmp_path / "both.csv"
    mark = "\ufeff".encode()
    joined.write_bytes(mark + first.read_bytes() + mark + second.read_bytes())
    before = pairs.read_bytes()
    with pytest.raises(InputError) as err:
        merge_annotations(joined, pairs, log=quiet)
    assert err.value.row == 3 and "header again" in err.value.reason, str(err.value)
    assert "not a number" not in str(err.value) and "U+FEFF" not in str(err.value)
    assert pairs.read_bytes() == before
    table = tmp_path / "joined.tsv"
    table.write_bytes(2 * (mark + b"text_a\ttext_b\tscore\tsplit\nA\tB\t0.5\ttrain\n"))
    with pytest.raises(InputError, match=r"row 2, field 'score': the header again"):
        load_pairs(table)


def test_with_skip_blank_a_duplicate_pair_id_names_the_files_rows(pairs: Path, tmp_path: Path) -> None:
    path = filled(tmp_path, pair_id=["e1", "e9", "e3", "e9"], text_a=["甲", "丙", "戊", "庚"],
                  text_b=["乙", "丁", "己", "辛"], score=["", "1", "1", "0"])  # fmt: skip
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, skip_blank=True, log=quiet)
    assert (err.value.row, err.value.field) == (5, "pair_id")
    assert "first at sheet row 3" in err.value.reason


# --- 9. values -------------------------------------------------------------------------------------


def test_scores_are_stored_as_their_level_and_ids_trimmed(pairs: Path, tmp_path: Path) -> None:
    path = filled(tmp_path, id_a=[" z1\u00a0", "z3"], id_b=["z2", "\u00a0z4 "], text_a=["甲", "丙"],
                  text_b=["乙", "丁"], score=["-0", "1e-10"])  # fmt: skip
    merge_annotations(path, pairs, log=quiet)
    lines = pairs.read_text(encoding="utf-8").splitlines()[3:]
    cells = [line.split("\t") for line in lines]
    assert [c[6] for c in cells] == ["0", "0"]
    assert [(c[2], c[3]) for c in cells] == [("z1", "z2"), ("z3", "z4")]
    assert [c[0] for c in cells] == [editor_file.pair_id("z1", "z2"), editor_file.pair_id("z3", "z4")]


@pytest.mark.parametrize("where", ["pair file", "corpus"])
def test_a_text_with_white_space_around_it_is_stored_as_its_items_text(
    pairs: Path, tmp_path: Path, where: str
) -> None:
    """A spreadsheet that kept a trailing space, or an ideographic space typed in front, leaves a text that
    is its item's known text but for white space: the merge stores the item's own text, so that the pair
    file keeps one text per item and the verdict acts in the next report (its hashes are the text's)."""
    from nlsim.clusters.verdicts import load_verdicts, store_path

    corpus = corpus_file(tmp_path, ["颱風登陸", "颱風來了"])
    item, text, other = ("n00", "股市今天大漲", "z9") if where == "pair file" else ("c-1", "颱風登陸", "c-2")
    path = filled(
        tmp_path, id_a=[item], id_b=[other], text_a=[f"\u3000{text} "], text_b=["颱風來了"], score=["0"]
    )
    merge_annotations(path, pairs, corpus=corpus if where == "corpus" else None, log=quiet)
    assert load_pairs(pairs)["text_a"].iloc[-1] == text
    (verdict,) = load_verdicts(store_path(pairs)).records
    assert verdict.sha256_a == editor_file.text_sha256(text)
    assert verdict.text_changed({item: text, other: "颱風來了"}) == []


def test_a_text_nothing_vouches_for_is_stored_without_the_white_space_around_it(
    pairs: Path, tmp_path: Path
) -> None:
    """An editors' file typed by hand (no corpus given, items the pair file does not hold) with a text copied
    from a corpus cell that has a space around it: a report reads that title without the space, so the
    verdict's hash of the text as typed matched no item's text, the verdict never acted, and the run said it
    was given on another text. The merge keeps the text without the space around it, as a report reads it."""
    from nlsim.clusters.verdicts import load_verdicts, store_path
    from nlsim.io.corpus import load_corpus

    corpus = tmp_path / "news.csv"
    pd.DataFrame({"id": ["x1", "x2"], "title": ["\u3000颱風登陸 ", "颱風來了 "]}).to_csv(corpus, index=False)
    path = filled(
        tmp_path, id_a=["x1"], id_b=["x2"], text_a=["\u3000颱風登陸 "], text_b=["颱風來了 "], score=["0"]
    )
    merge_annotations(path, pairs, log=quiet)
    merged = load_pairs(pairs).iloc[-1]
    assert (merged["text_a"], merged["text_b"]) == ("颱風登陸", "颱風來了")
    (verdict,) = load_verdicts(store_path(pairs)).records
    titles = load_corpus(corpus).frame.set_index("id")["title"].to_dict()  # as a report reads them
    assert verdict.text_changed(titles) == []


@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_rows_after_an_empty_line_are_named_by_the_row_a_spreadsheet_shows(
    pairs: Path, tmp_path: Path, suffix: str
) -> None:
    """An empty line (a file edited in a text editor, two files pasted together) is a row of the sheet the
    editor opens: the rows below it are named by their sheet row, the reader's refusals too, and a row
    marked to overrule is still that row."""
    sep = "," if suffix == "csv" else "\t"
    path = tmp_path / f"filled.{suffix}"
    head = sep.join(["id_a", "id_b", "text_a", "text_b", "score", "overrule"])
    rows = [sep.join(["z1", "z2", "颱風來了", "颱風登陸", "1", "false"]), ""]
    bad = sep.join(["z3", "z4", "地震", "餘震", "7", "false"])
    path.write_text("\n".join([head, *rows, "", bad]) + "\n", encoding="utf-8")  # rows 2, 3, 4 empty, 5
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert (err.value.row, err.value.field) == (5, "score")
    path.write_text("\n".join([head, *rows, bad + sep + "x"]) + "\n", encoding="utf-8")  # a field too many
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert err.value.row == 4
    overrule = sep.join(["n00", "n01", "股市今天大漲", "股市今日大漲三成", "0", "true"])
    path.write_text("\n".join([head, *rows, overrule]) + "\n", encoding="utf-8")
    result = merge_annotations(path, pairs, log=quiet)
    assert (result.added, result.overruled) == (1, 1)


def test_merge_checks_the_texts_against_the_corpus_column_the_pairs_were_drawn_with(
    pairs: Path, tmp_path: Path
) -> None:
    """A file drawn with ``--text-field title_zh_cn`` holds the corpus's Simplified titles: merged with
    ``--corpus`` alone every row is checked against the first text column (``title_zh_tw``) and refused;
    ``--text-field`` names the column the pairs were drawn with, as draw takes it."""
    from nlsim.cli import build_parser

    corpus = tmp_path / "corpus.tsv"
    titles = {"title_zh_cn": ["台风登陆", "台风来了"], "title_zh_tw": ["颱風登陸", "颱風來了"]}
    pd.DataFrame({"id": ["c-1", "c-2"], **titles}).to_csv(corpus, sep="\t", index=False)
    path = filled(tmp_path, id_a=["c-1"], id_b=["c-2"], text_a=["台风登陆"], text_b=["台风来了"], score=["1"])
    with pytest.raises(InputError, match="another text than in the corpus"):
        merge_annotations(path, pairs, corpus=corpus, log=quiet)
    with pytest.raises(ConfigError, match="--text-field"):
        merge_annotations(path, pairs, text_field="title_zh_cn", log=quiet)
    merge_annotations(path, pairs, corpus=corpus, text_field="title_zh_cn", log=quiet)
    assert load_pairs(pairs)["text_a"].iloc[-1] == "台风登陆"
    args = ["annotate", "merge", "--filled", "f.csv", "--pairs", "p.tsv", "--text-field", "title_zh_cn"]
    assert build_parser().parse_args(args).text_field == "title_zh_cn"


def test_a_row_whose_split_cell_names_another_split_than_the_merges_is_refused(
    pairs: Path, tmp_path: Path
) -> None:
    """An editors' file has no split column; one added by hand says where its rows belong. The merge puts
    every pair into ``--split`` (train by default): a row marked test is refused by row and field, not
    merged into train, where it would train the model and act in the reports. A cell naming the merge's
    split, or empty, merges."""
    before = pairs.read_bytes()
    path = one_pair(tmp_path, split="test")
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert (err.value.row, err.value.field) == (2, "split") and "--split test" in err.value.reason
    assert pairs.read_bytes() == before
    merge_annotations(path, pairs, split="test", log=quiet)
    assert load_pairs(pairs)["split"].iloc[-1] == "test"
    more = one_pair(tmp_path, "more.csv", id_a="z3", id_b="z4", pair_id="", text_a="另一", split="")
    merge_annotations(more, pairs, log=quiet)
    assert load_pairs(pairs)["split"].iloc[-1] == "train"


def test_draw_reads_a_headline_in_either_script_as_one_text(tmp_path: Path) -> None:
    """A corpus holding one headline in Traditional and in Simplified characters (two outlets): the model
    reads both as one text (``--convert tw2sp``), so draw never proposes the two as a pair to score, nor a
    pair again in the other script, nor a pair the pair file already scores in the other script."""
    from nlsim.evaluation.metrics import convert_texts

    titles = ["颱風登陸福建", "台风登陆福建", "地震發生", "股市大漲", "股市大涨", "籃球比賽結果"]
    corpus = corpus_file(tmp_path, titles)
    scored = tmp_path / "pairs.tsv"
    scored.write_text(
        "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\np1\tc-3\tc-4\t地震發生\t股市大漲\t0\ttrain\n",
        encoding="utf-8",
    )
    out = tmp_path / "to-score.csv"
    draw_candidates(corpus, scored, out, n=30, scorer="tfidf-char2", conversion="tw2sp", k=5, log=quiet)
    drawn = pd.read_csv(out, dtype=str)
    read = [
        tuple(sorted(normalise_text(t) for t in convert_texts([a, b], "tw2sp")))
        for a, b in zip(drawn["text_a"], drawn["text_b"], strict=True)
    ]
    assert all(a != b for a, b in read), read
    assert len(set(read)) == len(read), read
    assert tuple(sorted(convert_texts(["地震發生", "股市大漲"], "tw2sp"))) not in read
    assert len(read) > 0


@pytest.mark.parametrize("suffix", [".xlsx", ".ods", ".doc"])
def test_a_file_that_is_no_csv_is_refused_saying_what_to_save_it_as(
    pairs: Path, tmp_path: Path, suffix: str
) -> None:
    """An editor who pressed Save in a spreadsheet program sends its workbook: the merge says to save the
    sheet as CSV UTF-8; another suffix is refused naming only the formats a merge reads (not JSON Lines,
    which it would refuse next)."""
    path = tmp_path / f"filled{suffix}"
    path.write_bytes(b"PK\x03\x04 a workbook")
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    if suffix == ".doc":
        assert ".csv" in err.value.reason and ".jsonl" not in err.value.reason
    else:
        assert "save the sheet as CSV UTF-8" in err.value.reason and str(err.value.file) == str(path)


@pytest.mark.parametrize("with_corpus", [False, True])
def test_an_item_id_typed_in_full_width_characters_is_refused_naming_the_id_meant(
    pairs: Path, tmp_path: Path, with_corpus: bool
) -> None:
    """An input method left on types ``ｎ００`` for ``n00``: without a corpus the row would add an item no
    report holds (its verdict never acts) with the text of ``n00``; the merge names the id meant."""
    corpus = corpus_file(tmp_path, ["颱風登陸"]) if with_corpus else None
    before = pairs.read_bytes()
    path = filled(
        tmp_path, id_a=["ｎ００"], id_b=["z9"], text_a=["股市今天大漲"], text_b=["新聞"], score=["0"]
    )
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, corpus=corpus, log=quiet)
    problems = getattr(err.value, "problems", None) or [err.value]
    named = [e for e in problems if e.field == "id_a"]
    assert named and named[0].row == 2 and "'n00'" in named[0].reason, [str(e) for e in problems]
    assert pairs.read_bytes() == before


def test_a_pair_given_twice_with_two_scores_is_named_by_its_items_and_both_scores(
    pairs: Path, tmp_path: Path
) -> None:
    """One pair in two rows (the second with its items the other way round, the pair id left empty for the
    merge to make) scored 0 and 1: the refusal names the second row, the pair's items and both scores, so
    that the editor knows which verdict to keep."""
    path = filled(tmp_path, id_a=["z1", "z2"], id_b=["z2", "z1"], text_a=["甲", "乙"], text_b=["乙", "甲"],
                  score=["0", "1"])  # fmt: skip
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=quiet)
    assert (err.value.row, err.value.field) == (3, "pair_id")
    assert "(first at sheet row 2): the pair z1 / z2 again" in err.value.reason
    assert "scored 0 there and 1 here" in err.value.reason


def page_export(path: Path, rows: list[tuple[str, str, str, str, str]], annotator: str = "Lin") -> Path:
    """An export as the report page writes it: every cell quoted, CRLF line ends, a byte-order mark, the texts
    as the page showed them and their SHA-256 (rows of id_a, id_b, text_a, text_b, score)."""
    with open(path, "w", encoding="utf-8-sig", newline="") as fh:
        out = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        out.writerow([*editor_file.COLUMNS, *editor_file.HASH_COLUMNS])
        for a, b, ta, tb, score in rows:
            out.writerow(
                [editor_file.pair_id(a, b), a, b, ta, tb, "0.95", "report-page:reported", score, annotator]
                + ["", "v0001", "0.9", editor_file.text_sha256(ta), editor_file.text_sha256(tb)]
            )
    return path


@pytest.mark.parametrize("brk", ["\n", "\r\n", "\t", " \n "])
@pytest.mark.parametrize("with_corpus", [True, False])
def test_a_title_with_a_line_break_or_a_tab_merges_with_a_space_and_is_known_again(
    pairs: Path, tmp_path: Path, brk: str, with_corpus: bool
) -> None:
    """A CMS headline with a line break (or a tab) is shown and exported as the corpus has it; the TSV pair
    file cannot hold it, and removing it by hand broke the text's checks, so the mark could never merge.
    The merge reads such a run as one space: checked against the corpus and the page's hash, written with
    a space, its verdict acting on the corpus text, and known again (not merged twice, not drawn again)."""
    from nlsim.clusters.verdicts import load_verdicts, store_path

    titles = [f"颱風海葵登陸臺東{brk}全臺停班停課", "海葵颱風登陸臺東，全臺停班停課", "股市今天大漲三成"]
    corpus = tmp_path / "corpus.csv"
    pd.DataFrame({"id": ["c-1", "c-2", "c-3"], "title": titles}).to_csv(corpus, index=False)
    flat = "颱風海葵登陸臺東 全臺停班停課"
    export = page_export(tmp_path / "marks-1.csv", [("c-1", "c-2", titles[0], titles[1], "1")])
    result = merge_annotations(export, pairs, corpus=corpus if with_corpus else None, log=quiet)
    assert result.added == 1
    merged = load_pairs(pairs)
    assert merged["text_a"].iloc[-1] == flat and len(merged) == 3
    (verdict,) = load_verdicts(store_path(pairs)).records
    assert verdict.sha256_a == editor_file.text_sha256(flat)
    assert verdict.text_changed({"c-1": titles[0], "c-2": titles[1]}) == []  # it acts on the corpus text
    assert verdict.text_changed({"c-1": "颱風海葵登陸臺東", "c-2": titles[1]}) == ["c-1"]
    # the text by hand without the break, as the merge asked before: another text than the corpus's
    typed = page_export(tmp_path / "typed.csv", [("c-1", "c-3", flat.replace(" ", ""), titles[2], "0")])
    with pytest.raises(InputError, match="another text than in"):
        merge_annotations(typed, pairs, corpus=corpus, log=quiet)
    before = pairs.read_bytes()
    with pytest.raises(InputError, match="already annotated"):  # the pair again: known, not added twice
        merge_annotations(export, pairs, corpus=corpus, log=quiet)
    assert pairs.read_bytes() == before
    two = tmp_path / "two.csv"  # draw proposes no pair already scored: c-1 / c-2 is one
    pd.DataFrame({"id": ["c-1", "c-2"], "title": titles[:2]}).to_csv(two, index=False)
    with pytest.raises(InputError, match="no candidate pair left"):
        draw(two, tmp_path / "todo.csv", pairs)


def test_marks_exported_again_merge_the_new_ones_and_skip_those_merged_from_an_earlier_export(
    pairs: Path, tmp_path: Path
) -> None:
    """*Export all marks* after a merge exports the marks merged already with the new ones: the whole file
    was refused (already annotated), so the editor could not merge the new marks from it. The marks merged
    from an earlier file with the same score by the same editor are skipped and counted; one scored
    otherwise since is still refused (--skip-scored or --overrule, as before), and the same file merged a
    second time is still refused."""
    from nlsim.clusters.verdicts import load_verdicts, store_path

    t = {"z1": "颱風來了", "z2": "颱風登陸", "z3": "地震", "z4": "餘震", "z5": "股市", "z6": "股災"}
    first = page_export(tmp_path / "marks-1.csv", [("z1", "z2", t["z1"], t["z2"], "1")])
    merge_annotations(first, pairs, log=quiet)
    rows = [("z1", "z2", t["z1"], t["z2"], "1"), ("z3", "z4", t["z3"], t["z4"], "0.75")]
    said: list[str] = []
    result = merge_annotations(page_export(tmp_path / "marks-2.csv", rows), pairs, log=said.append)
    assert (result.added, result.merged_before) == (1, 1)
    assert "1 pair(s) merged before from another file" in said[-1], said
    merged = load_pairs(pairs)
    assert len(merged) == 4 and merged["id_a"].tolist()[-2:] == ["z1", "z3"]
    assert [v.source for v in load_verdicts(store_path(pairs)).records] == ["marks-1.csv", "marks-2.csv"]
    before = pairs.read_bytes()
    # nothing new at all: merged, nothing written
    again = merge_annotations(page_export(tmp_path / "marks-3.csv", rows), pairs, log=quiet)
    assert (again.added, again.merged_before) == (0, 2) and pairs.read_bytes() == before
    # another score, or another editor, is a conflict as before; the same file again is refused as before
    for name, rows3, who in (
        ("marks-4.csv", [("z1", "z2", t["z1"], t["z2"], "0.5")], "Lin"),
        ("marks-5.csv", [("z1", "z2", t["z1"], t["z2"], "1")], "Wang"),
    ):
        with pytest.raises(InputError, match="already annotated"):
            merge_annotations(page_export(tmp_path / name, rows3 + [rows[1]], who), pairs, log=quiet)
    with pytest.raises(InputError, match="already annotated"):
        merge_annotations(tmp_path / "marks-2.csv", pairs, log=quiet)
    assert pairs.read_bytes() == before
