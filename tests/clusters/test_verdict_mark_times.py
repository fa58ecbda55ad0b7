"""The report page's export carries when each mark was made (``marked_at``): a merge orders the decisions on
a pair by it, so the newer mark stands, whoever's and whichever file is merged first; an old mark sent again
never undoes a newer decision, and an editor's own score given again after a colleague's overrule is a new
decision. An export without the column merges as before (its decisions dated when merged)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pandas as pd
import pytest

from nlsim.annotation.merge import merge_annotations
from nlsim.clusters.verdicts import Verdict, load_verdicts, store_path
from nlsim.errors import InputError
from nlsim.io import editor_file
from nlsim.io.pairs import load_pairs

TITLES = {f"n{i}": f"Headline number {i} of the day" for i in range(12)}
MONDAY, TUESDAY, WEDNESDAY = "2026-03-02T08:15:00.000Z", "2026-03-03T09:00:00+08:00", "2026-03-04T07:30:00Z"


def _scored_file(path: Path) -> Path:
    """A pair file the annotators scored: n0/n1 0.75, a training pair."""
    path.write_text(
        "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\tstratum\tannotator\n"
        f"p0\tn0\tn1\t{TITLES['n0']}\t{TITLES['n1']}\t0.75\ttrain\tlex-high\t\n",
        encoding="utf-8",
    )
    return path


def _export(
    path: Path,
    annotator: str,
    rows: list[tuple[str, str, str, str | None]],
    overrule: str = "true",
    notes: str | None = "",
) -> Path:
    """A page export of ``rows`` (id_a, id_b, score, marked_at; ``None``: the column left out, as an older
    page wrote it), each row's ``overrule`` cell ``overrule`` (true: marked on a pair already scored) and its
    ``notes`` cell ``notes`` (``None``: no notes column)."""
    frame = pd.DataFrame(
        {
            "pair_id": [editor_file.pair_id(a, b) for a, b, _, _ in rows],
            "id_a": [a for a, _, _, _ in rows],
            "id_b": [b for _, b, _, _ in rows],
            "text_a": [TITLES[a] for a, _, _, _ in rows],
            "text_b": [TITLES[b] for _, b, _, _ in rows],
            "similarity": "",
            "stratum": "report-page:inside",
            "score": [s for _, _, s, _ in rows],
            "annotator": annotator,
            "notes": notes or "",
            "model": "v0001",
            "threshold": "0.8",
            "sha256_a": [editor_file.text_sha256(TITLES[a]) for a, _, _, _ in rows],
            "sha256_b": [editor_file.text_sha256(TITLES[b]) for _, b, _, _ in rows],
        }
    )
    if any(t is not None for _, _, _, t in rows):
        frame[editor_file.MARKED_AT] = [t or "" for _, _, _, t in rows]
    frame[editor_file.OVERRULE] = overrule
    if notes is None:
        frame = frame.drop(columns="notes")
    frame.to_csv(path, index=False)
    return path


def _merge(pairs: Path, name: str, annotator: str, rows: list[tuple[str, str, str, str | None]]) -> list[str]:
    said: list[str] = []
    merge_annotations(_export(pairs.parent / name, annotator, rows), pairs, log=said.append)
    return said


def _held(pairs: Path) -> Verdict:
    got = load_verdicts(store_path(pairs)).get(("n0", "n1"))
    assert got is not None
    return got


def test_an_export_with_mark_times_is_an_editors_file() -> None:
    header = [*editor_file.COLUMNS, *editor_file.HASH_COLUMNS, editor_file.MARKED_AT]
    assert editor_file.is_editors_header(header)
    assert editor_file.is_editors_header([*header, editor_file.OVERRULE])


def test_an_editor_gives_their_score_back_after_a_colleagues_overrule_with_a_newer_mark(
    tmp_path: Path,
) -> None:
    """desk overrules n0/n1 to 0 on Monday, bob overrules it back to 0.75 on Tuesday. desk's *Export all
    marks* sends Monday's mark again: older than bob's, it undoes nothing. desk marks 0 again on Wednesday:
    a newer decision, which stands, every earlier one kept in time order."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", MONDAY)])
    _merge(pairs, "bob.csv", "bob", [("n0", "n1", "0.75", TUESDAY)])
    assert (_held(pairs).annotator, _held(pairs).decided_at) == ("bob", TUESDAY)
    store = store_path(pairs).read_bytes()
    said = _merge(pairs, "marks-2.csv", "desk", [("n0", "n1", "0", MONDAY)])
    assert store_path(pairs).read_bytes() == store, said
    assert any("overruled since by bob's 0.75" in line for line in said), said
    said = _merge(pairs, "marks-3.csv", "desk", [("n0", "n1", "0", WEDNESDAY)])
    assert any("1 training pair(s) overruled" in line for line in said), said
    held = _held(pairs)
    assert (held.score, held.annotator, held.source, held.decided_at) == (
        0.0,
        "desk",
        "marks-3.csv",
        WEDNESDAY,
    )
    assert [(d.score, d.annotator, d.decided_at) for d in held.earlier] == [
        (0.75, "", ""),
        (0.0, "desk", MONDAY),
        (0.75, "bob", TUESDAY),
    ]


@pytest.mark.parametrize("order", ["older first", "newer first"])
def test_two_editors_marks_of_one_pair_leave_the_newer_standing_whichever_is_merged_first(
    tmp_path: Path, order: str
) -> None:
    """desk marked n0/n1 0 on Monday, bob 0.25 on Tuesday: whichever export is merged first, bob's newer
    mark is the pair's verdict; the older one merged last undoes nothing and is said with the newer."""
    pairs = _scored_file(tmp_path / "news.tsv")
    desk = ("marks-desk.csv", "desk", [("n0", "n1", "0", MONDAY)])
    bob = ("marks-bob.csv", "bob", [("n0", "n1", "0.25", TUESDAY)])
    first, last = (desk, bob) if order == "older first" else (bob, desk)
    _merge(pairs, *first)  # type: ignore[arg-type]
    said = _merge(pairs, *last)  # type: ignore[arg-type]
    held = _held(pairs)
    assert (held.score, held.annotator) == (0.25, "bob"), said
    if order == "newer first":
        assert not any("training pair(s) overruled" in line for line in said), said
        assert any("older than the decision that holds" in line and "bob's 0.25" in line for line in said), (
            said
        )


@pytest.mark.parametrize("order", ["older first", "newer first"])
def test_two_editors_marks_of_a_pair_nobody_had_scored_leave_the_newer_standing(
    tmp_path: Path, order: str
) -> None:
    """desk (Monday) and bob (Tuesday) both marked n2/n3, which nobody had scored when their pages were
    made. The second export merged is refused as already annotated: bob's newer mark naming --overrule as
    the way to make it the pair's verdict; desk's older one saying that bob's decision stands, --overrule
    or not. With --overrule, bob's newer mark is the pair's verdict in either order."""
    pairs = _scored_file(tmp_path / "news.tsv")
    desk = _export(tmp_path / "marks-desk.csv", "desk", [("n2", "n3", "1", MONDAY)], overrule="false")
    bob = _export(tmp_path / "marks-bob.csv", "bob", [("n2", "n3", "0", TUESDAY)], overrule="false")
    first, last = (desk, bob) if order == "older first" else (bob, desk)
    merge_annotations(first, pairs, log=lambda _: None)
    with pytest.raises(InputError) as err:
        merge_annotations(last, pairs, log=lambda _: None)
    said = str(err.value)
    assert "already annotated" in said, said
    if order == "older first":
        assert "--overrule to merge the 1 training pair(s)" in said and "newer decision" in said, said
    else:
        assert "--overrule to merge" not in said and "newer decision" not in said, said
        assert "--overrule would not merge" not in said, said
        assert (
            "1 of them marked before the decision that holds on their pair, which stands: --overrule keeps"
            in (said)
        )
        assert "is older than the decision" in said and "bob's 0" in said and "which stands" in said, said
    merge_annotations(last, pairs, overrule=True, log=lambda _: None)
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.score, held.annotator, held.decided_at) == (0.0, "bob", TUESDAY)
    assert [(d.annotator, d.score, d.decided_at) for d in held.earlier] == [("desk", 1.0, MONDAY)]
    assert load_pairs(pairs).set_index("id_a").loc["n2", "annotator"] == "desk"


def test_an_export_without_mark_times_merges_as_before(tmp_path: Path) -> None:
    """An older page's export (no marked_at): its decision is dated when merged, and desk's old mark sent
    again after bob's overrule still undoes nothing; a newer page's mark made after bob's merge does."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", None)])
    _merge(pairs, "bob.csv", "bob", [("n0", "n1", "0.75", None)])
    store = store_path(pairs).read_bytes()
    _merge(pairs, "marks-2.csv", "desk", [("n0", "n1", "0", None)])
    assert store_path(pairs).read_bytes() == store
    assert _held(pairs).annotator == "bob" and _held(pairs).decided_at  # the time bob's file was merged
    later = dt.datetime.fromisoformat(_held(pairs).decided_at) + dt.timedelta(seconds=1)
    _merge(pairs, "marks-3.csv", "desk", [("n0", "n1", "0", later.isoformat())])
    assert (_held(pairs).annotator, _held(pairs).decided_at) == ("desk", later.isoformat())


@pytest.mark.parametrize(
    ("cell", "why"),
    [
        ("yesterday", "is not a time"),
        ("2026-03-02T08:15:00", "no offset"),
        ("", "empty"),
        ("2999-03-02T08:15:00Z", "later than now"),
    ],
)
def test_a_bad_mark_time_is_refused_by_file_row_and_field_and_nothing_is_written(
    tmp_path: Path, cell: str, why: str
) -> None:
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", MONDAY)])
    kept = (pairs.read_bytes(), store_path(pairs).read_bytes())
    filled = _export(
        tmp_path / "bob.csv", "bob", [("n2", "n3", "1", TUESDAY), ("n0", "n1", "0.75", cell or None)]
    )
    if not cell:
        frame = pd.read_csv(filled, dtype=str, keep_default_na=False)
        frame.loc[1, editor_file.MARKED_AT] = ""
        frame.to_csv(filled, index=False)
    with pytest.raises(InputError) as err:
        merge_annotations(filled, pairs, log=lambda _: None)
    said = str(err.value)
    assert "bob.csv" in said and "sheet row 3, field 'marked_at'" in said and why in said, said
    assert (pairs.read_bytes(), store_path(pairs).read_bytes()) == kept


def test_an_editor_marks_again_a_pair_they_added_after_a_colleague_overruled_it(tmp_path: Path) -> None:
    """desk added n2/n3 as the same story (Monday's mark: nobody had scored it), bob overruled it with 0
    on Tuesday. desk's page, which did not know the pair scored, exports Monday's mark again (skipped:
    merged before) and then a new mark of it on Wednesday: not skipped as merged before, but named as
    already annotated with the way to overrule; with --overrule desk's newer mark stands."""
    pairs = _scored_file(tmp_path / "news.tsv")
    monday = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], overrule="false")
    merge_annotations(monday, pairs, log=lambda _: None)
    _merge(pairs, "bob.csv", "bob", [("n2", "n3", "0", TUESDAY)])
    store = store_path(pairs).read_bytes()
    again = _export(tmp_path / "marks-2.csv", "desk", [("n2", "n3", "1", MONDAY)], overrule="false")
    assert merge_annotations(again, pairs, log=lambda _: None).merged_before == 1
    assert store_path(pairs).read_bytes() == store
    wednesday = _export(tmp_path / "marks-3.csv", "desk", [("n2", "n3", "1", WEDNESDAY)], overrule="false")
    with pytest.raises(InputError) as err:
        merge_annotations(wednesday, pairs, log=lambda _: None)
    assert "already annotated" in str(err.value) and "--overrule" in str(err.value)
    assert store_path(pairs).read_bytes() == store
    merge_annotations(wednesday, pairs, overrule=True, log=lambda _: None)
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.score, held.annotator, held.decided_at) == (1.0, "desk", WEDNESDAY)


@pytest.mark.parametrize("header", ["marked at", "Marked_At", "markedat", "marked_at\u200b", "MarkedAt"])
def test_a_mark_time_column_spelt_otherwise_is_refused_by_file_and_field(tmp_path: Path, header: str) -> None:
    """A ``marked_at`` header renamed by hand (a space, capitals, no underscore, a zero-width space) would
    read as an older page's export without mark times, each decision dated at the merge: it is refused by
    file and field, as the corpus reader refuses ``Published_At``, and nothing is written."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", TUESDAY)])
    kept = (pairs.read_bytes(), store_path(pairs).read_bytes())
    filled = _export(tmp_path / "bob.csv", "bob", [("n0", "n1", "0.75", MONDAY), ("n2", "n3", "1", MONDAY)])
    frame = pd.read_csv(filled, dtype=str, keep_default_na=False)
    frame.rename(columns={editor_file.MARKED_AT: header}).to_csv(filled, index=False)
    with pytest.raises(InputError) as err:
        merge_annotations(filled, pairs, log=lambda _: None)
    said = str(err.value)
    assert "bob.csv" in said and f"field {header!r}" in said, said
    assert "spelt otherwise than 'marked_at'" in said, said
    assert (pairs.read_bytes(), store_path(pairs).read_bytes()) == kept


@pytest.mark.parametrize("fmt", ["tsv", "csv", "parquet"])
def test_a_note_edited_after_its_mark_was_merged_is_the_pairs_note_when_exported_again(
    tmp_path: Path, fmt: str
) -> None:
    """desk marked n2/n3 the same story on Monday with a note, and the export was merged; desk then edited
    the note on the page (the mark, and its time, unchanged) and exported again. The row is the mark merged
    before (no pair added, the verdict store as it was), and its edited note is now the pair's note in the
    pair file (every other row kept), said with the note it replaces, instead of dropped without a word."""
    pairs = _scored_file(tmp_path / "news.tsv")
    if fmt != "tsv":
        table = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
        pairs = tmp_path / f"news.{fmt}"
        table.to_csv(pairs, index=False) if fmt == "csv" else table.to_parquet(pairs, index=False)

    def noted(name: str, text: str) -> Path:
        return _export(tmp_path / name, "desk", [("n2", "n3", "1", MONDAY)], overrule="false", notes=text)

    merge_annotations(noted("marks-1.csv", "same flood"), pairs, log=lambda _: None)
    before, store = pairs.read_bytes(), store_path(pairs).read_bytes()
    said: list[str] = []
    result = merge_annotations(noted("marks-2.csv", "same flood, wire copy"), pairs, log=said.append)
    assert (result.merged_before, result.added) == (1, 0) and store_path(pairs).read_bytes() == store
    got = load_pairs(pairs)
    assert got["notes"].fillna("").tolist() == ["", "same flood, wire copy"], said
    if fmt != "parquet":
        assert pairs.read_bytes().splitlines()[:2] == before.splitlines()[:2]  # the other rows byte for byte
    line = next((x for x in said if "note" in x and "edited" in x), "")
    assert "n2/n3" in line and "'same flood, wire copy'" in line and "'same flood'" in line, said
    after = pairs.read_bytes()
    said.clear()
    merge_annotations(noted("marks-3.csv", "same flood, wire copy"), pairs, log=said.append)
    assert pairs.read_bytes() == after, said
    assert not any("edited since" in x for x in said), said  # the same note


@pytest.mark.parametrize("when", [MONDAY, None])
def test_the_same_export_merged_again_is_refused_without_offering_overrule(
    tmp_path: Path, when: str | None
) -> None:
    """desk's export adding n2/n3 merged a second time is refused as already annotated (as before), but no
    longer names --overrule as the way to merge it as the newer decision: --overrule would add nothing (the
    decision was merged before), and the refusal says so."""
    pairs = _scored_file(tmp_path / "news.tsv")
    filled = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", when)], overrule="false")
    merge_annotations(filled, pairs, log=lambda _: None)
    with pytest.raises(InputError) as err:
        merge_annotations(filled, pairs, log=lambda _: None)
    said = str(err.value)
    assert "already annotated" in said and "--overrule to merge" not in said, said
    assert "--overrule would not merge either" in said and "was merged before (nothing new)" in said, said


@pytest.mark.parametrize("note", ["line one\nline two", "line one\r\nline two", 'said "so", twice'])
def test_a_note_edited_on_two_lines_is_written_into_a_csv_pair_file_quoted(tmp_path: Path, note: str) -> None:
    """desk's note on n2/n3, merged into a CSV pair file, was edited on the page onto two lines and exported
    again: a CSV cell may hold a line break, so the edited note is written into the pair's row quoted (the
    file reads back with the note whole and every other row as it was), instead of the merge being refused
    because the row it wrote had its line break bare and did not read back."""
    table = pd.read_csv(_scored_file(tmp_path / "news.tsv"), sep="\t", dtype=str, keep_default_na=False)
    pairs = tmp_path / "news.csv"
    table.to_csv(pairs, index=False)

    def noted(name: str, text: str) -> Path:
        return _export(tmp_path / name, "desk", [("n2", "n3", "1", MONDAY)], overrule="false", notes=text)

    merge_annotations(noted("marks-1.csv", "same flood"), pairs, log=lambda _: None)
    before = pairs.read_bytes()
    result = merge_annotations(noted("marks-2.csv", note), pairs, log=lambda _: None)
    assert result.notes_updated and (result.merged_before, result.added) == (1, 0)
    got = load_pairs(pairs)
    assert got["notes"].fillna("").tolist()[-1].replace("\r\n", "\n") == note.replace("\r\n", "\n")
    assert pairs.read_bytes().splitlines()[:2] == before.splitlines()[:2]  # the other rows byte for byte


def test_a_mark_made_at_the_same_moment_as_the_holding_decision_is_not_called_older(tmp_path: Path) -> None:
    """desk overruled n0/n1 with a mark at 08:15 UTC; bob's mark of it says 16:15 in Taipei, the same
    moment. bob's mark does not overrule (the decision merged first stands, as before), but it is said as
    made at the same moment as desk's, not as older than it, which it is not."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-desk.csv", "desk", [("n0", "n1", "0", MONDAY)])
    said = " ".join(_merge(pairs, "marks-bob.csv", "bob", [("n0", "n1", "1", "2026-03-02T16:15:00+08:00")]))
    assert (_held(pairs).score, _held(pairs).annotator) == (0.0, "desk"), said
    assert "older" not in said and "made before" not in said, said
    assert "bob's 1" in said and "at the same moment as the decision that holds" in said, said


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
def test_a_note_edited_since_is_written_into_a_pair_file_without_pair_ids(tmp_path: Path, fmt: str) -> None:
    """A pair file may have no ``pair_id`` column (its pairs known by their item ids). desk's note on n2/n3,
    merged into one, edited on the page and exported again, ended the merge in a KeyError traceback; the
    edited note is now written into the pair's row (found by its item ids), every other row kept."""
    sep = "\t" if fmt == "tsv" else ","
    pairs = tmp_path / f"news.{fmt}"
    pairs.write_text(
        sep.join(("id_a", "id_b", "text_a", "text_b", "score", "split")) + "\n"
        f"{sep.join(('n0', 'n1', TITLES['n0'], TITLES['n1'], '0.75', 'train'))}\n",
        encoding="utf-8",
    )

    def noted(name: str, text: str) -> Path:
        return _export(tmp_path / name, "desk", [("n2", "n3", "1", MONDAY)], overrule="false", notes=text)

    merge_annotations(noted("marks-1.csv", "same flood"), pairs, log=lambda _: None)
    before = pairs.read_bytes()
    result = merge_annotations(noted("marks-2.csv", "same flood, wire copy"), pairs, log=lambda _: None)
    assert result.notes_updated and (result.merged_before, result.added) == (1, 0)
    got = load_pairs(pairs)
    assert got["notes"].fillna("").tolist() == ["", "same flood, wire copy"]
    assert pairs.read_bytes().splitlines()[:2] == before.splitlines()[:2]


def test_a_note_edited_since_lands_in_every_row_of_a_pair_the_pair_file_gives_twice(tmp_path: Path) -> None:
    """The pair file gives desk's merged n2/n3 twice (a row pasted again under another pair id, one score:
    kept, and counted once by its first row). desk's note, edited on the page and exported again, was
    written into the last row only, so the row training and evaluation read (the first) kept the old note;
    it is now written into every row of the pair, whichever of them the file keeps later."""
    pairs = _scored_file(tmp_path / "news.tsv")

    def noted(name: str, text: str) -> Path:
        return _export(tmp_path / name, "desk", [("n2", "n3", "1", MONDAY)], overrule="false", notes=text)

    merge_annotations(noted("marks-1.csv", "same flood"), pairs, log=lambda _: None)
    lines = pairs.read_text(encoding="utf-8").splitlines()
    pasted = "p9" + lines[-1][lines[-1].index("\t") :]
    pairs.write_text("\n".join([*lines, pasted]) + "\n", encoding="utf-8")
    result = merge_annotations(noted("marks-2.csv", "same flood, wire copy"), pairs, log=lambda _: None)
    assert result.notes_updated and (result.merged_before, result.added) == (1, 0)
    got = load_pairs(pairs)
    assert got["notes"].fillna("").tolist() == ["", "same flood, wire copy", "same flood, wire copy"]
    assert load_pairs(pairs, repeats="once")["notes"].fillna("").tolist()[-1] == "same flood, wire copy"
    assert pairs.read_text(encoding="utf-8").splitlines()[:2] == lines[:2]  # the other rows as they were


@pytest.mark.parametrize(
    "spelt", ["2026-03-02T08:15:00+00:00", "2026-03-02T08:15:00Z", "2026-03-02T16:15:00+08:00"]
)
def test_a_mark_exported_again_with_its_time_written_otherwise_is_the_same_mark(
    tmp_path: Path, spelt: str
) -> None:
    """desk overruled n0/n1 on Monday (08:15 UTC, written ``.000Z``), bob overruled it since. desk's page
    exports Monday's mark again with its time written otherwise (another offset, ``Z`` or ``+00:00``, the
    same instant): it was called older than bob's decision, a mark of its own; it is the mark merged before,
    said as overruled since by bob's, and the store is left as it was."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", MONDAY)])
    _merge(pairs, "bob.csv", "bob", [("n0", "n1", "0.75", TUESDAY)])
    store = store_path(pairs).read_bytes()
    said = " ".join(_merge(pairs, "marks-2.csv", "desk", [("n0", "n1", "0", spelt)]))
    assert "overruled since by bob's 0.75" in said and "older" not in said, said
    assert store_path(pairs).read_bytes() == store


def test_a_kept_decision_time_without_an_offset_is_read_on_utc_as_a_corpus_time_is() -> None:
    """A decision time without an offset (a store not written by a merge) is a time on the clock a run
    reads a corpus's offset-less times on when no --timezone is given: UTC. A mark of the same instant is the
    same mark, and one made after it is newer."""
    from nlsim.clusters.verdicts import Decision, decided, holds_already, newer_than

    earlier = (Decision(0.75, "", "news.tsv"), Decision(0.0, "desk", "marks-1.csv", "2026-03-02T08:15:00"))
    bobs = Verdict("n0", "n1", 0.75, annotator="bob", decided_at=TUESDAY, earlier=earlier)
    again = Verdict("n0", "n1", 0.0, annotator="desk", source="marks-2.csv", decided_at=MONDAY)
    assert holds_already(again, bobs, marked=True)
    assert decided("2026-03-02T08:15:00") == decided(MONDAY)
    kept = Verdict("n0", "n1", 0.75, annotator="bob", decided_at="2026-03-03T09:00:00")
    assert newer_than(Verdict("n0", "n1", 0.0, annotator="desk", decided_at="2026-03-03T10:00:00Z"), kept)
    assert not newer_than(Verdict("n0", "n1", 0.0, annotator="desk", decided_at="2026-03-03T08:00:00Z"), kept)


@pytest.mark.parametrize("order", ["older first", "newer first"])
def test_an_older_mark_merged_second_is_kept_in_the_pairs_history_without_acting(
    tmp_path: Path, order: str
) -> None:
    """desk marked n0/n1 0 on Monday, bob 0.25 on Tuesday. Merged first, desk's mark was kept among the
    decisions bob's overrules; merged second, it was said and kept nowhere. It is now kept in the pair's
    history either way, in time order, superseded: bob's newer decision stands and is what training reads,
    and desk's mark sent once more adds nothing."""
    from nlsim.clusters.verdicts import training_pairs

    pairs = _scored_file(tmp_path / "news.tsv")
    desk = ("marks-desk.csv", "desk", [("n0", "n1", "0", MONDAY)])
    bob = ("marks-bob.csv", "bob", [("n0", "n1", "0.25", TUESDAY)])
    first, last = (desk, bob) if order == "older first" else (bob, desk)
    _merge(pairs, *first)  # type: ignore[arg-type]
    said = " ".join(_merge(pairs, *last))  # type: ignore[arg-type]
    held = _held(pairs)
    assert (held.score, held.annotator, held.decided_at) == (0.25, "bob", TUESDAY), said
    assert [(d.score, d.annotator, d.source, d.decided_at) for d in held.earlier] == [
        (0.75, "", "news.tsv", ""),
        (0.0, "desk", "marks-desk.csv", MONDAY),
    ], said
    assert training_pairs(pairs).pairs["score"].tolist() == [0.25]
    if order == "newer first":
        assert "kept among the earlier decisions on their pair, in time order" in said, said
    store = store_path(pairs).read_bytes()
    _merge(pairs, "marks-desk-2.csv", "desk", [("n0", "n1", "0", MONDAY)])
    assert store_path(pairs).read_bytes() == store


def test_a_note_edited_since_an_overrule_was_merged_is_the_verdicts_note_when_exported_again(
    tmp_path: Path,
) -> None:
    """desk overruled n0/n1 with a note, merged; desk then edited the note on the page (the mark and its
    time unchanged) and exported again. The row is the decision merged before (nothing new), and its edited
    note was dropped; it is now the verdict's note in the store, said with the note it replaces. A file
    without a notes column leaves the note as it is."""
    pairs = _scored_file(tmp_path / "news.tsv")

    def noted(name: str, text: str | None) -> Path:
        return _export(tmp_path / name, "desk", [("n0", "n1", "0", MONDAY)], notes=text)

    merge_annotations(noted("marks-1.csv", "wire copy"), pairs, log=lambda _: None)
    said: list[str] = []
    merge_annotations(noted("marks-2.csv", "wire copy of the same flood"), pairs, log=said.append)
    held = _held(pairs)
    assert (held.annotator, held.source, held.notes) == ("desk", "marks-1.csv", "wire copy of the same flood")
    line = next((x for x in said if "note edited since" in x), "")
    assert "n0/n1: 'wire copy of the same flood' (it was 'wire copy')" in line, said
    store = store_path(pairs).read_bytes()
    merge_annotations(noted("marks-3.csv", "wire copy of the same flood"), pairs, log=lambda _: None)
    merge_annotations(noted("marks-4.csv", None), pairs, log=lambda _: None)
    assert store_path(pairs).read_bytes() == store


def test_an_unnamed_editors_file_merged_again_with_an_edited_note_leaves_a_colleagues_verdict_note(
    tmp_path: Path,
) -> None:
    """An unnamed editor overruled n0/n1 to 0.25 with a note (an export without mark times); bob then
    overruled it to the same 0.25 with his own note, and his verdict holds. The unnamed editor's file,
    merged again with its note edited, sends a decision merged before: it is not bob's, so bob's verdict
    keeps his note, and his decision stands."""
    pairs = _scored_file(tmp_path / "news.tsv")
    rows: list[tuple[str, str, str, str | None]] = [("n0", "n1", "0.25", None)]
    for name, who, note in (("marks-1.csv", "", "wire copy"), ("bob.csv", "bob", "a new lead")):
        merge_annotations(_export(tmp_path / name, who, rows, notes=note), pairs, log=lambda _: None)
    held = _held(pairs)
    assert (held.score, held.annotator, held.notes) == (0.25, "bob", "a new lead")
    again = _export(tmp_path / "marks-1.csv", "", rows, notes="wire copy, edited")
    said: list[str] = []
    merge_annotations(again, pairs, log=said.append)
    held = _held(pairs)
    assert (held.score, held.annotator, held.source) == (0.25, "bob", "bob.csv"), said
    assert held.notes == "a new lead", said
    assert not any("note edited since" in line and "a new lead" in line for line in said), said


def test_annotate_verdicts_shows_each_verdicts_note_cut_in_lines_and_whole_in_json(tmp_path: Path) -> None:
    """desk overruled n0/n1 with a long note, written on two lines: `nlsim annotate verdicts` said how many
    verdicts hold and never the note. It now lists the noted verdict on one line, the note on one line and
    cut with "…"; --json gives every verdict with its note whole."""
    import json

    from tests.command import nlsim

    pairs = _scored_file(tmp_path / "news.tsv")
    note = "wire copy of the same flood,\nsent again by the agency " + "with a longer lead " * 8
    export = _export(tmp_path / "marks-1.csv", "desk", [("n0", "n1", "0", MONDAY)], notes=note)
    merge_annotations(export, pairs, log=lambda _: None)
    proc = nlsim("annotate", "verdicts", "--pairs", pairs, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next((x for x in proc.stderr.splitlines() if "n0/n1:" in x), "")
    assert "desk's 0 (marks-1.csv, 2026-03-02T08:15:00.000Z): wire copy of the same flood, sent again" in line
    assert line.endswith("…") and note[-30:].strip() not in line, proc.stderr
    proc = nlsim("annotate", "verdicts", "--pairs", pairs, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["in_step"] and got["store"] == str(store_path(pairs))
    (held,) = got["verdicts"]
    whole = note.replace("\n", " ")  # a TSV pair file's merge reads a note's line break as a space
    assert (held["id_a"], held["id_b"], held["annotator"], held["notes"]) == ("n0", "n1", "desk", whole)
    assert held["overrules"] and held["earlier"] == [
        {
            "score": 0.75,
            "annotator": "",
            "source": "news.tsv",
            "decided_at": "",
            "notes": "",
            "superseded": False,
        }
    ]


@pytest.mark.parametrize("order", ["older first", "newer first"])
def test_a_superseded_decision_keeps_its_note_in_the_pairs_history(tmp_path: Path, order: str) -> None:
    """desk overruled n0/n1 on Monday with a note, bob on Tuesday with another: bob's verdict stands and
    keeps desk's decision among its earlier ones, which lost desk's note (the store was its only record).
    The note is now kept with desk's decision, whichever export is merged first; `nlsim annotate verdicts`
    and its --json show it, and a history without notes is written as before (no notes key)."""
    from nlsim.annotation.merge import check_verdicts

    pairs = _scored_file(tmp_path / "news.tsv")
    desk = _export(tmp_path / "marks-desk.csv", "desk", [("n0", "n1", "0", MONDAY)], notes="wire copy")
    bob = _export(tmp_path / "marks-bob.csv", "bob", [("n0", "n1", "0.25", TUESDAY)], notes="a new lead")
    for export in (desk, bob) if order == "older first" else (bob, desk):
        merge_annotations(export, pairs, log=lambda _: None)
    held = _held(pairs)
    assert (held.annotator, held.notes) == ("bob", "a new lead")
    assert [(d.annotator, d.notes) for d in held.earlier] == [("", ""), ("desk", "wire copy")]
    assert '"notes":"wire copy"' in store_path(pairs).read_text(encoding="utf-8").replace('""', '"')
    assert held.as_dict()["earlier"][1]["notes"] == "wire copy"  # nlsim annotate verdicts --json
    said: list[str] = []
    check_verdicts(pairs, log=said.append)
    assert any("desk's 0 (marks-desk.csv" in line and "wire copy" in line for line in said), said
    plain = _scored_file(tmp_path / "plain.tsv")
    for name, who, score, when in (("m1.csv", "desk", "0", MONDAY), ("m2.csv", "bob", "0.25", TUESDAY)):
        export = _export(tmp_path / name, who, [("n0", "n1", score, when)])
        merge_annotations(export, plain, log=lambda _: None)
    text = store_path(plain).read_text(encoding="utf-8")
    assert "desk" in text and "notes" not in text, text  # no note anywhere: the columns and cells as before


@pytest.mark.parametrize("order", ["older first", "newer first"])
def test_a_note_edited_on_a_mark_another_decision_stands_over_is_kept_with_that_mark(
    tmp_path: Path, order: str
) -> None:
    """desk marked n0/n1 0 on Monday with a note, bob 0.25 on Tuesday with another; bob's decision stands
    and desk's is kept among its earlier ones (overruled since, or superseded when merged second). desk then
    edited the note on the page (the mark and its time unchanged) and exported again: the edited note was
    dropped, only the decision that holds took one. It is now kept with desk's decision in the pair's
    history, said with the note it replaces; bob's decision and note stand, and the same export merged
    again, or one without a notes column, changes nothing."""
    pairs = _scored_file(tmp_path / "news.tsv")
    desk = _export(tmp_path / "marks-desk.csv", "desk", [("n0", "n1", "0", MONDAY)], notes="wire copy")
    bob = _export(tmp_path / "marks-bob.csv", "bob", [("n0", "n1", "0.25", TUESDAY)], notes="a new lead")
    for export in (desk, bob) if order == "older first" else (bob, desk):
        merge_annotations(export, pairs, log=lambda _: None)
    edited = "wire copy of the same flood"

    def again(name: str, text: str | None) -> str:
        said: list[str] = []
        export = _export(tmp_path / name, "desk", [("n0", "n1", "0", MONDAY)], notes=text)
        merge_annotations(export, pairs, log=said.append)
        return " ".join(said)

    said = again("marks-desk-2.csv", edited)
    held = _held(pairs)
    assert (held.score, held.annotator, held.notes) == (0.25, "bob", "a new lead"), said
    assert [(d.annotator, d.score, d.decided_at, d.notes) for d in held.earlier] == [
        ("", 0.75, "", ""),
        ("desk", 0.0, MONDAY, edited),
    ], said
    assert f"n0/n1: '{edited}' (it was 'wire copy')" in said and "kept with that decision" in said, said
    assert "superseded" not in said, said
    store = store_path(pairs).read_bytes()
    again("marks-desk-3.csv", edited)
    again("marks-desk-4.csv", None)
    assert store_path(pairs).read_bytes() == store


def test_an_older_mark_merged_after_a_pair_a_merge_added_is_the_pair_files_row_as_if_merged_first(
    tmp_path: Path,
) -> None:
    """desk marked n2/n3, a pair nobody had scored, 0 on Monday: the merge added it. bob's mark of it, 0.25
    on Sunday with a note, merged after, was kept in desk's history as superseded, the pair file keeping
    desk's row; merged first, bob's row would be the pair file's and desk's verdict would overrule it. It is
    now so whichever is merged first: bob's row (with its note) is the pair file's, desk's decision (with
    its note) overrules it and is what training reads, the store is in step, and bob's mark sent again adds
    nothing. A newer overrule of the pair then overrules desk's decision, and holds."""
    from nlsim.annotation.merge import check_verdicts
    from nlsim.clusters.verdicts import training_pairs
    from nlsim.dedup.editors import read_editors
    from nlsim.dedup.stages import editors_record

    def overruling_count() -> int:
        editors = read_editors(pairs, None)
        links = pd.DataFrame({"id_a": [], "id_b": []})
        record = editors_record(editors, editors.constraints(), links, {})
        assert record is not None
        return record.annotators_overruled

    sunday = "2026-03-01T08:00:00Z"
    pairs = _scored_file(tmp_path / "news.tsv")
    desk = _export(tmp_path / "marks-desk.csv", "desk", [("n2", "n3", "0", MONDAY)], "false", "two floods")
    bob = _export(tmp_path / "marks-bob.csv", "bob", [("n2", "n3", "0.25", sunday)], notes="one storm")
    merge_annotations(desk, pairs, log=lambda _: None)
    said: list[str] = []
    merge_annotations(bob, pairs, log=said.append)
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.annotator, held.score, held.decided_at) == ("desk", 0.0, MONDAY), said
    assert held.notes == "two floods"
    assert [(d.annotator, d.score, d.decided_at, d.notes, d.superseded) for d in held.earlier] == [
        ("bob", 0.25, sunday, "", False)
    ], said
    assert "1 mark(s) made before the decision that holds on a pair an editor's file added" in " ".join(said)
    assert "n2/n3: bob's 0.25 (marks-bob.csv, 2026-03-01T08:00:00Z) is older than" in " ".join(said), said
    row = load_pairs(pairs).set_index("id_a").loc["n2"]
    assert (row["score"], row["annotator"], row["notes"]) == (0.25, "bob", "one storm")
    assert held.overrules and overruling_count() == 1
    assert [v.annotator for v in training_pairs(pairs).overruled] == ["desk"] and len(load_pairs(pairs)) == 2
    lines: list[str] = []
    assert check_verdicts(pairs, log=lines.append).in_step, lines
    store = store_path(pairs).read_bytes()
    again = _export(tmp_path / "marks-bob-2.csv", "bob", [("n2", "n3", "0.25", sunday)], notes="one storm")
    merge_annotations(again, pairs, log=lambda _: None)
    assert store_path(pairs).read_bytes() == store

    lin = _export(tmp_path / "marks-lin.csv", "lin", [("n2", "n3", "0.5", WEDNESDAY)])
    merge_annotations(lin, pairs, log=lambda _: None)
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.annotator, held.overrules) == ("lin", True)
    assert [(d.annotator, d.superseded) for d in held.earlier] == [("bob", False), ("desk", False)]
    assert held.overruled is not None and held.overruled.annotator == "bob"
    assert check_verdicts(pairs, log=lambda _: None).in_step and overruling_count() == 1
    scores = training_pairs(pairs).pairs.set_index("id_a")["score"].to_dict()
    assert scores["n2"] == 0.5


def test_a_note_on_a_pair_a_merge_added_is_shown_with_its_verdict_and_not_copied_into_the_store(
    tmp_path: Path,
) -> None:
    """desk marked n2/n3, a pair nobody had scored, "not the same story", with a note. The merge added the
    pair to the pair file, the note in its row, and its verdict to the store without the note (the pair
    file is its record): `nlsim annotate verdicts` and the report's editors (the page's decisions and
    cards) showed the verdict without it. They now show the note the pair file's merged row gives it; the
    store is written as before."""
    import json

    from nlsim.dedup.editors import read_editors
    from tests.command import nlsim

    pairs = _scored_file(tmp_path / "news.tsv")
    export = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "0", MONDAY)], "", notes="two floods")
    merge_annotations(export, pairs, log=lambda _: None)
    rows = load_pairs(pairs)
    assert rows.loc[rows["id_a"] == "n2", "notes"].tolist() == ["two floods"]
    store = store_path(pairs).read_bytes()
    assert b"two floods" not in store and b"notes" not in store
    held = read_editors(pairs, None).verdicts.get(("n2", "n3"))
    assert held is not None and (held.annotator, held.notes, held.overrules) == ("desk", "two floods", False)
    proc = nlsim("annotate", "verdicts", "--pairs", pairs, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert any("n2/n3: desk's 0" in x and x.endswith("two floods") for x in proc.stderr.splitlines())
    proc = nlsim("annotate", "verdicts", "--pairs", pairs, "--json", cwd=tmp_path)
    got = {(v["id_a"], v["id_b"]): v for v in json.loads(proc.stdout)["verdicts"]}
    assert got[("n2", "n3")]["notes"] == "two floods" and json.loads(proc.stdout)["in_step"]
    assert store_path(pairs).read_bytes() == store


def _merged_in_order(tmp_path: Path, exports: list[tuple[str, str, str, str, str, str]]) -> tuple[str, str]:
    """The verdict store's text and the pair file's rows (sorted) after merging ``exports`` (file name,
    editor, id_a, id_b, score, marked_at), each with its rows' overrule cell true, in the order given, into
    a fresh copy of the annotators' pair file: every mark merged (with --overrule where its row is
    refused)."""
    pairs = _scored_file(tmp_path / "news.tsv")
    for name, who, a, b, score, when in exports:
        export = _export(tmp_path / name, who, [(a, b, score, when)], overrule="false")
        try:
            merge_annotations(export, pairs, log=lambda _: None)
        except InputError:
            merge_annotations(export, pairs, overrule=True, log=lambda _: None)
    rows = sorted(pairs.read_text(encoding="utf-8").splitlines()[1:])
    return store_path(pairs).read_text(encoding="utf-8"), "\n".join(rows)


@pytest.mark.parametrize(("a", "b"), [("n0", "n1"), ("n2", "n3")])
def test_two_editors_exports_merged_in_either_order_give_the_same_store_and_pair_file(
    tmp_path: Path, a: str, b: str
) -> None:
    """desk marked a pair on Monday, bob on Tuesday; each export is merged, with --overrule where it is
    refused. On n0/n1 (the annotators' training pair) desk's older mark merged last was kept marked
    superseded, merged first it was not: the store's bytes differed by order. On n2/n3 (a pair nobody had
    scored) merged bob first, desk's older mark went into bob's history as superseded and the pair file kept
    bob's row; merged desk first, the pair file kept desk's row and bob's verdict overruled it. The store and
    the pair file are now the same in either order: bob's newer decision holds, desk's is kept before it."""
    desk = ("marks-desk.csv", "desk", a, b, "1", MONDAY)
    bob = ("marks-bob.csv", "bob", a, b, "0", TUESDAY)
    (tmp_path / "first").mkdir()
    (tmp_path / "last").mkdir()
    first = _merged_in_order(tmp_path / "first", [desk, bob])
    last = _merged_in_order(tmp_path / "last", [bob, desk])
    assert first[0] == last[0]
    assert first[1] == last[1]
    held = load_verdicts(store_path(tmp_path / "first" / "news.tsv")).get((a, b))
    assert held is not None and (held.annotator, held.score) == ("bob", 0.0)
    assert [d.annotator for d in held.earlier][-1] == "desk"


@pytest.mark.slow
@pytest.mark.parametrize("order", ["bob lin desk", "lin bob desk", "desk lin bob", "lin desk bob"])
def test_three_editors_marks_of_a_pair_an_editors_file_added_give_the_same_store_and_pair_file_in_any_order(
    tmp_path: Path, order: str
) -> None:
    """desk (Monday), bob (Tuesday) and lin (Wednesday) marked n2/n3, which nobody had scored. Merged bob,
    lin, then desk, desk's oldest mark went into lin's history after bob's, the pair file keeping bob's
    row. In any order the pair file's row is now desk's, lin's decision holds and overrules bob's, which
    overruled desk's, each note kept once."""
    marks = {
        "desk": ("marks-desk.csv", "desk", "n2", "n3", "1", MONDAY),
        "bob": ("marks-bob.csv", "bob", "n2", "n3", "0", TUESDAY),
        "lin": ("marks-lin.csv", "lin", "n2", "n3", "0.75", WEDNESDAY),
    }
    (tmp_path / "first").mkdir()
    (tmp_path / "other").mkdir()
    first = _merged_in_order(tmp_path / "first", [marks["desk"], marks["bob"], marks["lin"]])
    other = _merged_in_order(tmp_path / "other", [marks[who] for who in order.split()])
    assert other == first
    held = load_verdicts(store_path(tmp_path / "other" / "news.tsv")).get(("n2", "n3"))
    assert held is not None and held.annotator == "lin"
    assert [(d.annotator, d.superseded) for d in held.earlier] == [("desk", False), ("bob", False)]


OLD_STORE = (
    "pair_id,id_a,id_b,score,split,annotator,source,decided_at,sha256_a,sha256_b,earlier,notes,row_sha256\n"
    "ed-ed17462d47bd9480,n0,n1,0,train,bob,marks-bob.csv,2026-03-03T09:00:00+08:00,"
    "ff5888c390cb26edd8a2d596a5bc2f5845442f3192c0b05af821f9358c9bf567,"
    "5974e084bfedeefeca22b24b9f9b37d8a36236697bcc27452a98d0da2f4637eb,"
    '"[{""score"":0.75,""annotator"":"""",""source"":""news.tsv"",""decided_at"":""""},'
    '{""score"":1.0,""annotator"":""desk"",""source"":""marks-desk.csv"",""decided_at"":'
    '""2026-03-02T08:15:00.000Z"",""notes"":""desk says same"",""superseded"":true}]",'
    "bob says two stories,ebebf6238588f6914c6039d1c09fab10c2352f9ec21e648c464958810b34557b\n"
)
"""The verdict store an earlier nlsim wrote (d95ba16) after bob's overrule of n0/n1 (Tuesday) and desk's
older mark (Monday) merged after it: desk's mark kept among bob's earlier decisions marked superseded."""


def test_a_store_whose_older_mark_an_earlier_nlsim_kept_superseded_is_read_and_written_as_today(
    tmp_path: Path,
) -> None:
    """An earlier nlsim kept a mark older than the overrule that holds, merged after it, among that
    verdict's earlier decisions marked ``"superseded": true``; today's keeps it among the decisions the
    verdict overrules, in time order, as had it been merged first. Such a store was read as written and
    kept so for good (``annotate verdicts --json`` called desk's decision superseded, every later merge
    wrote it again, and the store's bytes were not those the same marks give today). It is now read in
    today's layout, and the next merge that writes the store writes that layout: the bytes the same marks
    merged today give, every decision and note kept."""
    pairs = _scored_file(tmp_path / "news.tsv")
    store_path(pairs).write_text(OLD_STORE, encoding="utf-8")
    held = _held(pairs)
    assert (held.annotator, held.score, held.overrules) == ("bob", 0.0, True), held
    assert held.notes == "bob says two stories"
    assert [(d.annotator, d.score, d.notes, d.superseded) for d in held.earlier] == [
        ("", 0.75, "", False),
        ("desk", 1.0, "desk says same", False),
    ]
    from nlsim.annotation.merge import check_verdicts

    lines: list[str] = []
    assert not check_verdicts(pairs, log=lines.append).in_step
    assert any(x.startswith("1 verdict(s) in ") and "superseded" in x and x.endswith("n0/n1") for x in lines)
    assert store_path(pairs).read_text(encoding="utf-8") == OLD_STORE
    lin = ("n0", "n1", "0.5", WEDNESDAY)
    merge_annotations(
        _export(tmp_path / "marks-lin.csv", "lin", [lin], notes="lin's note"), pairs, log=lambda _: None
    )
    (tmp_path / "today").mkdir()
    today = _scored_file(tmp_path / "today" / "news.tsv")
    for name, who, row, note in (
        ("marks-bob.csv", "bob", ("n0", "n1", "0", TUESDAY), "bob says two stories"),
        ("marks-desk.csv", "desk", ("n0", "n1", "1", MONDAY), "desk says same"),
        ("marks-lin.csv", "lin", lin, "lin's note"),
    ):
        merge_annotations(
            _export(tmp_path / "today" / name, who, [row], notes=note), today, log=lambda _: None
        )
    assert store_path(pairs).read_text(encoding="utf-8") == store_path(today).read_text(encoding="utf-8")
    assert b"superseded" not in store_path(pairs).read_bytes()
    assert check_verdicts(pairs, log=lambda _: None).in_step


OLD_ADDED_STORE = (
    "pair_id,id_a,id_b,score,split,annotator,source,decided_at,sha256_a,sha256_b,earlier,row_sha256\n"
    "ed-390cdaaf5f7e605b,n2,n3,0,train,bob,marks-bob.csv,2026-03-03T09:00:00+08:00,"
    "729fe6f591399d5a0339b0767a47433154f56bd551cf5980f452168feed8f4b6,"
    "b0997c8ce728e3c1eb9ea786e599d082ead0ce5ea821b0c58b439852bee49d6e,"
    '"[{""score"":1.0,""annotator"":""desk"",""source"":""marks-desk.csv"",""decided_at"":'
    '""2026-03-02T08:15:00.000Z"",""notes"":""desk says same"",""superseded"":true}]",'
    "cf9b49e61597c49b78b3ead24d7865b9d4cef280df7c74eb09ae1f9401863767\n"
)
"""The verdict store an earlier nlsim wrote (d95ba16) after bob's mark of n2/n3 (Tuesday), a pair nobody had
scored, added it to the pair file, and desk's older mark of it (Monday) was merged with --overrule: desk's
mark kept in bob's history, superseded; the pair file's row bob's."""


@pytest.mark.parametrize("store", ["earlier nlsim", "today"])
def test_a_mark_kept_in_its_pairs_history_and_exported_again_is_merged_before_not_refused(
    tmp_path: Path, store: str
) -> None:
    """A mark of n2/n3, a pair nobody had scored, kept in the pair's history and not in the pair file's row:
    desk's (Monday) in a store an earlier nlsim wrote, superseded under bob's verdict, bob's row the pair
    file's; today bob's (Tuesday), overruled since by lin's. Its editor's next *Export all marks* (the
    overrule cell false: the page never knew the pair was scored) sends it again with a new mark: the whole
    merge was refused, the mark named as already annotated though "--overrule would not merge either: ...
    was merged before (nothing new)", so that the new mark merged only with --skip-scored or --overrule.
    The mark sent again is now a decision merged before, as --overrule counts it, and the new mark merges;
    nothing else changes."""
    pairs = _scored_file(tmp_path / "news.tsv")
    if store == "earlier nlsim":
        with pairs.open("a", encoding="utf-8") as f:
            f.write(
                f"ed-390cdaaf5f7e605b\tn2\tn3\t{TITLES['n2']}\t{TITLES['n3']}\t0\ttrain\t"
                "editor-loop:report-page:inside\tbob\tbob says two stories\n"
            )
        text = pairs.read_text(encoding="utf-8").replace("\tannotator\n", "\tannotator\tnotes\n", 1)
        pairs.write_text(text.replace("\tlex-high\t\n", "\tlex-high\t\t\n", 1), encoding="utf-8")
        store_path(pairs).write_text(OLD_ADDED_STORE, encoding="utf-8")
        who, mark, note = "desk", ("n2", "n3", "1", MONDAY), "desk says same"
    else:
        marks = [("desk", "1", MONDAY), ("bob", "0", TUESDAY), ("lin", "0.5", WEDNESDAY)]
        for name, score, when in marks:
            export = _export(tmp_path / f"marks-{name}.csv", name, [("n2", "n3", score, when)], "false", name)
            merge_annotations(export, pairs, overrule=name != "desk", log=lambda _: None)
        who, mark, note = "bob", ("n2", "n3", "0", TUESDAY), "bob"
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and who in [d.annotator for d in held.earlier]
    row = load_pairs(pairs).set_index("id_a").loc["n2"].to_dict()
    again = _export(tmp_path / f"marks-{who}-2.csv", who, [mark, ("n4", "n5", "0", WEDNESDAY)], "false", note)
    said: list[str] = []
    merge_annotations(again, pairs, log=said.append)
    assert "1 overruling decision(s) merged before" in " ".join(said), said
    assert load_verdicts(store_path(pairs)).get(("n2", "n3")) == held
    assert load_pairs(pairs).set_index("id_a").loc["n2"].to_dict() == row
    assert load_pairs(pairs).set_index("id_a").loc["n4", "score"] == 0.0


@pytest.mark.parametrize("noticed", ["annotate verdicts --write", "another merge"])
def test_a_verdict_taken_back_stays_taken_back_when_an_older_export_is_merged_again(
    tmp_path: Path, noticed: str
) -> None:
    """desk added n2/n3 as the same story on Monday; the verdict was taken back as the guide says: the pair
    removed from the pair file, then ``nlsim annotate verdicts --write`` (or the next merge) wrote the store
    without it. desk's Monday export merged again brought the verdict back, pair and all. The store keeps
    the verdict taken back, dated by the pair file's last change when it found the pair gone: a mark made
    before then is not merged (said so), and a mark made after it is a new decision, which merges."""
    from nlsim.annotation.merge import check_verdicts

    pairs = _scored_file(tmp_path / "news.tsv")
    monday = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], overrule="false")
    merge_annotations(monday, pairs, log=lambda _: None)
    kept = [line for line in pairs.read_text(encoding="utf-8").splitlines(True) if "\tn2\tn3\t" not in line]
    pairs.write_text("".join(kept), encoding="utf-8")  # taken back: its pair removed from the pair file
    if noticed == "another merge":
        bob = _export(tmp_path / "bob.csv", "bob", [("n4", "n5", "0", TUESDAY)], overrule="false")
        merge_annotations(bob, pairs, log=lambda _: None)
    else:
        check_verdicts(pairs, write=True, log=lambda _: None)
    before = (pairs.read_bytes(), store_path(pairs).read_bytes())
    said: list[str] = []
    result = merge_annotations(monday, pairs, log=said.append)
    assert result.added == 0 and len(result.taken_back) == 1, said
    assert "taken back" in " ".join(said) and "n2/n3" in " ".join(said), said
    assert (pairs.read_bytes(), store_path(pairs).read_bytes()) == before
    assert load_verdicts(store_path(pairs)).get(("n2", "n3")) is None
    assert ("n2", "n3") not in set(zip(load_pairs(pairs)["id_a"], load_pairs(pairs)["id_b"], strict=True))
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)).isoformat()
    again = _export(tmp_path / "marks-2.csv", "desk", [("n2", "n3", "0", later)], overrule="false")
    assert merge_annotations(again, pairs, log=lambda _: None).added == 1
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.score, held.decided_at) == (0.0, later)


@pytest.mark.parametrize("noticed", ["annotate verdicts --write", "another merge"])
def test_a_verdict_taken_back_is_dated_when_its_pair_left_the_pair_file(tmp_path: Path, noticed: str) -> None:
    """desk added n2/n3 as the same story on Monday and took it back an hour ago (its pair removed from the
    pair file); half an hour ago desk marked the pair again, "not the same story", a new decision. The store
    noticed the pair gone only now (``nlsim annotate verdicts --write``, or another editor's merge) and
    dated the taking back now, so the new mark, merged next, was left out as one made before the verdict was
    taken back. The taking back is dated by the pair file's last change (when the pair left it, at the
    latest): the mark made since merges, and Monday's export merged again is still left out."""
    from nlsim.annotation.merge import check_verdicts

    pairs = _scored_file(tmp_path / "news.tsv")
    monday = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], overrule="false")
    merge_annotations(monday, pairs, log=lambda _: None)
    kept = [line for line in pairs.read_text(encoding="utf-8").splitlines(True) if "\tn2\tn3\t" not in line]
    pairs.write_text("".join(kept), encoding="utf-8")  # taken back: its pair removed from the pair file
    now = dt.datetime.now(dt.UTC)
    removed = (now - dt.timedelta(hours=1)).timestamp()
    os.utime(pairs, (removed, removed))
    if noticed == "another merge":
        bob = _export(tmp_path / "bob.csv", "bob", [("n4", "n5", "0", TUESDAY)], overrule="false")
        merge_annotations(bob, pairs, log=lambda _: None)
    else:
        check_verdicts(pairs, write=True, log=lambda _: None)
    said: list[str] = []
    assert merge_annotations(monday, pairs, log=said.append).added == 0, said
    assert "taken back" in " ".join(said), said
    since = (now - dt.timedelta(minutes=30)).isoformat()
    again = _export(tmp_path / "marks-2.csv", "desk", [("n2", "n3", "0", since)], overrule="false")
    said = []
    assert merge_annotations(again, pairs, log=said.append).added == 1, said
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.score, held.decided_at) == (0.0, since)


def test_a_mark_made_at_the_same_moment_as_a_merged_rows_decision_is_not_written_over_it(
    tmp_path: Path,
) -> None:
    """desk's export added n2/n3 with a mark at 08:15 UTC; bob's mark of it says 16:15 in Taipei, the same
    moment. Of two marks made at one moment the one merged first stands: desk's row stays the pair file's
    and desk's verdict holds, bob's mark kept in its history; bob's mark is not written over desk's row as
    a mark made before it would be."""
    pairs = _scored_file(tmp_path / "news.tsv")
    merge_annotations(
        _export(tmp_path / "marks-desk.csv", "desk", [("n2", "n3", "0", MONDAY)], "false"),
        pairs,
        log=lambda _: None,
    )
    result = merge_annotations(
        _export(tmp_path / "marks-bob.csv", "bob", [("n2", "n3", "0.25", "2026-03-02T16:15:00+08:00")]),
        pairs,
        log=lambda _: None,
    )
    assert result.earliest == () and len(result.older) == 1, result
    row = load_pairs(pairs).set_index("id_a").loc["n2"]
    assert (row["score"], row["annotator"]) == (0.0, "desk")
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.annotator, held.score, held.overrules) == ("desk", 0.0, False)
    assert [(d.annotator, d.superseded) for d in held.earlier] == [("bob", True)]


def test_a_mark_written_over_a_merged_row_is_not_counted_as_merged_before(tmp_path: Path) -> None:
    """bob's Sunday mark of n2/n3, merged after desk's Monday export added the pair, is written over desk's
    row (as had it been merged first): the merge says so, and counts it among no decisions merged before."""
    pairs = _scored_file(tmp_path / "news.tsv")
    merge_annotations(
        _export(tmp_path / "marks-desk.csv", "desk", [("n2", "n3", "0", MONDAY)], "false"),
        pairs,
        log=lambda _: None,
    )
    said: list[str] = []
    bob = _export(tmp_path / "marks-bob.csv", "bob", [("n2", "n3", "0.25", "2026-03-01T08:00:00Z")])
    result = merge_annotations(bob, pairs, log=said.append)
    assert (len(result.earliest), result.already_held, result.overruled) == (1, 0, 0), result
    assert "merged before" not in " ".join(said), said


def test_an_overruling_rows_note_is_not_written_into_the_pair_files_row_beside_a_mark_merged_before(
    tmp_path: Path,
) -> None:
    """desk's *Export all marks* sends again n2/n3, merged before from another export, beside a new overrule
    of n0/n1 with a note: the note is the overruling verdict's, in the verdict store; the pair file's row of
    n0/n1 (the annotators' score) keeps its own note, and the pair file is left byte for byte."""
    pairs = _scored_file(tmp_path / "news.tsv")
    first = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], "false", "wire copy")
    merge_annotations(first, pairs, log=lambda _: None)
    before = pairs.read_bytes()
    again = _export(
        tmp_path / "marks-2.csv",
        "desk",
        [("n2", "n3", "1", MONDAY), ("n0", "n1", "0", TUESDAY)],
        notes="wire copy",
    )
    table = pd.read_csv(again, dtype=str, keep_default_na=False)
    table.loc[0, editor_file.OVERRULE] = "false"
    table.to_csv(again, index=False)
    result = merge_annotations(again, pairs, log=lambda _: None)
    assert (result.merged_before, result.overruled, result.notes_updated) == (1, 1, ()), result
    assert pairs.read_bytes() == before
    assert (_held(pairs).annotator, _held(pairs).notes) == ("desk", "wire copy")


def test_a_pair_merged_into_validation_is_refused_when_the_same_mark_is_merged_into_train(
    tmp_path: Path,
) -> None:
    """desk's mark of n2/n3 was merged into the validation split; the same mark exported again and merged
    into train is a pair in two splits, refused by name, not skipped as a mark merged before."""
    pairs = _scored_file(tmp_path / "news.tsv")
    first = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], "false")
    merge_annotations(first, pairs, split="validation", log=lambda _: None)
    before = pairs.read_bytes()
    again = _export(tmp_path / "marks-2.csv", "desk", [("n2", "n3", "1", MONDAY)], "false")
    with pytest.raises(InputError) as err:
        merge_annotations(again, pairs, log=lambda _: None)
    assert "already annotated" in str(err.value), err.value
    assert pairs.read_bytes() == before


def test_a_row_without_a_mark_time_refused_as_scored_is_offered_overrule_as_a_newer_decision(
    tmp_path: Path,
) -> None:
    """desk overruled n0/n1 with a mark made on Monday; bob's older page exported n0/n1 without a mark time
    and without the overrule cell. Refused as already annotated, the refusal names --overrule as the way to
    merge it as the newer decision (dated when merged, it is newer), not as a mark kept in the pair's
    history; merged with --overrule, it is the pair's verdict, and the merge names the store once."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", MONDAY)])
    bob = _export(tmp_path / "bob.csv", "bob", [("n0", "n1", "0.25", None)], overrule="false")
    with pytest.raises(InputError) as err:
        merge_annotations(bob, pairs, log=lambda _: None)
    said = str(err.value)
    assert "--overrule to merge the 1 training pair(s)" in said, said
    assert "marked before the decision that holds" not in said, said
    said: list[str] = []
    merge_annotations(bob, pairs, overrule=True, log=said.append)
    assert (_held(pairs).annotator, _held(pairs).score) == ("bob", 0.25)
    line = " ".join(said)  # the overrule names the verdict store once, not again as where verdicts are kept
    assert "1 training pair(s) overruled" in line and "the verdicts are kept in" not in line, said


def test_an_old_decision_without_a_mark_time_sent_again_is_not_offered_overrule(tmp_path: Path) -> None:
    """desk overruled n0/n1 to 0, bob overruled it back to 0.75 (older exports, no mark times); desk's 0
    sent again without the overrule cell is refused as already annotated saying --overrule would not merge
    it either (an old decision sent again never undoes a colleague's newer one), not offering --overrule."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", None)])
    _merge(pairs, "bob.csv", "bob", [("n0", "n1", "0.75", None)])
    desk = _export(tmp_path / "marks-2.csv", "desk", [("n0", "n1", "0", None)], overrule="false")
    with pytest.raises(InputError) as err:
        merge_annotations(desk, pairs, log=lambda _: None)
    said = str(err.value)
    assert "--overrule would not merge either" in said and "--overrule to merge" not in said, said


def test_a_note_edited_on_a_merged_rows_mark_a_colleague_overruled_since_is_kept_with_that_mark(
    tmp_path: Path,
) -> None:
    """desk's export added n2/n3 with a note; bob overruled it on Tuesday. desk's page sends the Monday
    mark again, its note edited since: the edited note is kept with desk's decision among the earlier ones
    in the verdict store (bob's decision, which stands, keeps its own note), and said so."""
    pairs = _scored_file(tmp_path / "news.tsv")
    desk = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], "false", "same flood")
    merge_annotations(desk, pairs, log=lambda _: None)
    bob = _export(tmp_path / "bob.csv", "bob", [("n2", "n3", "0", TUESDAY)], notes="two floods")
    merge_annotations(bob, pairs, log=lambda _: None)
    edited = _export(
        tmp_path / "marks-2.csv", "desk", [("n2", "n3", "1", MONDAY)], notes="same flood, upriver"
    )
    result = merge_annotations(edited, pairs, log=lambda _: None)
    assert len(result.renoted_earlier) == 1 and result.overruled == 0, result
    held = load_verdicts(store_path(pairs)).get(("n2", "n3"))
    assert held is not None and (held.annotator, held.notes) == ("bob", "two floods")
    assert [(d.annotator, d.notes) for d in held.earlier] == [("desk", "same flood, upriver")]


def test_the_same_export_merged_again_after_a_colleagues_overrule_is_refused_not_merged_as_nothing_new(
    tmp_path: Path,
) -> None:
    """desk's marks-1.csv overruled n0/n1 on Monday, bob overruled it back on Tuesday. The same file merged
    again (its row not marked overrule) is refused as already annotated, as the same file merged again
    always is, saying desk's decision was merged before and bob's stands; another export of desk's marks
    sending the Monday mark again is merged as nothing new. The store is not changed by either."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, "marks-1.csv", "desk", [("n0", "n1", "0", MONDAY)])
    _merge(pairs, "bob.csv", "bob", [("n0", "n1", "0.75", TUESDAY)])
    store = store_path(pairs).read_bytes()
    same = _export(tmp_path / "marks-1.csv", "desk", [("n0", "n1", "0", MONDAY)], overrule="false")
    with pytest.raises(InputError) as err:
        merge_annotations(same, pairs, log=lambda _: None)
    assert "already annotated" in str(err.value) and "was merged before (nothing new)" in str(err.value)
    other = _export(tmp_path / "marks-2.csv", "desk", [("n0", "n1", "0", MONDAY)], overrule="false")
    result = merge_annotations(other, pairs, log=lambda _: None)
    assert (result.already_held, len(result.overruled_since)) == (1, 1), result
    assert store_path(pairs).read_bytes() == store and _held(pairs).annotator == "bob"


def test_an_overrule_without_a_note_is_shown_without_the_note_of_the_row_it_overrules(tmp_path: Path) -> None:
    """desk's export added n2/n3 with a note; bob overruled it without one. The note in the pair file's row
    is desk's, on the decision bob overruled: bob's verdict is shown without a note, not with desk's."""
    from nlsim.clusters.verdicts import check_store

    pairs = _scored_file(tmp_path / "news.tsv")
    desk = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], "false", "same flood")
    merge_annotations(desk, pairs, log=lambda _: None)
    merge_annotations(
        _export(tmp_path / "bob.csv", "bob", [("n2", "n3", "0", TUESDAY)]), pairs, log=lambda _: None
    )
    shown = check_store(pairs).shown().get(("n2", "n3"))
    assert shown is not None and (shown.annotator, shown.notes) == ("bob", "")


def test_a_verdict_taken_back_and_decided_again_leaves_the_store_in_step(tmp_path: Path) -> None:
    """desk's n2/n3 taken back (its pair removed from the pair file, the store written), then marked again
    since, a new decision merged: the store holds the new verdict and keeps no taking back of its pair, so
    ``nlsim annotate verdicts`` finds it in step."""
    from nlsim.annotation.merge import check_verdicts

    pairs = _scored_file(tmp_path / "news.tsv")
    merge_annotations(
        _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], "false"),
        pairs,
        log=lambda _: None,
    )
    kept = [line for line in pairs.read_text(encoding="utf-8").splitlines(True) if "\tn2\tn3\t" not in line]
    pairs.write_text("".join(kept), encoding="utf-8")
    check_verdicts(pairs, write=True, log=lambda _: None)
    assert "n2" in store_path(pairs).read_text(encoding="utf-8")  # kept as taken back
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)).isoformat()
    again = _export(tmp_path / "marks-2.csv", "desk", [("n2", "n3", "0", later)], overrule="false")
    assert merge_annotations(again, pairs, log=lambda _: None).added == 1
    lines: list[str] = []
    assert check_verdicts(pairs, log=lines.append).in_step, lines
    assert store_path(pairs).read_text(encoding="utf-8").count(",n2,n3,") == 1


def test_a_pair_put_back_into_the_pair_file_by_hand_is_no_longer_taken_back(tmp_path: Path) -> None:
    """desk's n2/n3 taken back (its pair removed from the pair file, the store written), then its row put
    back by hand: the pair file holds the pair again, so its verdict holds again and nothing of it is taken
    back; desk's Monday export merged again is skipped as merged before, not left out as taken back."""
    from nlsim.annotation.merge import check_verdicts
    from nlsim.clusters.verdicts import check_store

    pairs = _scored_file(tmp_path / "news.tsv")
    monday = _export(tmp_path / "marks-1.csv", "desk", [("n2", "n3", "1", MONDAY)], overrule="false")
    merge_annotations(monday, pairs, log=lambda _: None)
    whole = pairs.read_bytes()
    kept = [line for line in pairs.read_text(encoding="utf-8").splitlines(True) if "\tn2\tn3\t" not in line]
    pairs.write_text("".join(kept), encoding="utf-8")
    check_verdicts(pairs, write=True, log=lambda _: None)
    assert check_store(pairs).verdicts.get(("n2", "n3")) is None
    pairs.write_bytes(whole)  # put back by hand
    check = check_store(pairs)
    assert check.taken_back == () and check.verdicts.get(("n2", "n3")) is not None
    again = _export(tmp_path / "marks-2.csv", "desk", [("n2", "n3", "1", MONDAY)], overrule="false")
    result = merge_annotations(again, pairs, log=lambda _: None)
    assert (result.taken_back, result.merged_before) == ((), 1), result


def test_a_pair_file_changed_in_the_future_dates_its_verdicts_taken_back_now(tmp_path: Path) -> None:
    """A pair file whose last change is dated in the future (a clock set wrong): its verdicts taken back
    are dated now, never later, so a mark made in between is not left out as made before."""
    from nlsim.clusters.verdicts.pair_file import taken_back_at

    f = tmp_path / "news.tsv"
    f.write_text("pair_id\n", encoding="utf-8")
    ahead = (dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).timestamp()
    os.utime(f, (ahead, ahead))
    got = dt.datetime.fromisoformat(taken_back_at(f))
    assert got <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
