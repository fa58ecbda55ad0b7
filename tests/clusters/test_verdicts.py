"""The verdict store: typed records, one verdict per pair, atomic writes, bad rows refused by name."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from nlsim.clusters.verdicts import (
    Verdict,
    Verdicts,
    load_verdicts,
    save_verdicts,
    store_path,
    training_pairs,
)
from nlsim.errors import InputError
from tests.command import nlsim


def test_round_trip_and_a_later_verdict_replaces_the_earlier(tmp_path: Path) -> None:
    store = store_path(tmp_path / "pairs.tsv")
    assert store.name == "pairs.tsv.verdicts.csv"
    assert len(load_verdicts(store)) == 0  # no store yet: no verdict
    first = Verdicts.from_records([Verdict("a", "b", 1.0, annotator='ed, "x"'), Verdict("c", "d", 0.0)])
    save_verdicts(first, store)
    again = load_verdicts(store)
    assert again == first
    later = again.updated([Verdict("b", "a", 0.75, source="marks.csv")])
    assert [(v.key, v.score) for v in later.records] == [(("c", "d"), 0.0), (("a", "b"), 0.75)]
    c = later.constraints()
    assert c.forbids("a", "b") and not c.requires("a", "b") and c.forbids("d", "c")


def test_only_training_verdicts_act(tmp_path: Path) -> None:
    v = Verdicts.from_records(
        [
            Verdict("a", "b", 1.0, "train"),
            Verdict("c", "d", 0.0, "validation"),
            Verdict("e", "f", 0.0, "test"),
        ]
    )
    c = v.constraints()
    assert c.must_link == {("a", "b")} and not c.cannot_link
    assert len(v) == 3 and len(v.acting()) == 1


def test_a_verdicts_text_is_compared_by_hash_only_where_it_has_one_and_around_white_space() -> None:
    """A verdict kept before the text hashes were has no text to compare, so no text of it changed; one
    given on a headline is not changed by white space around it, or by a tab or line break inside it read as
    one space (as a merge writes a TSV row)."""
    from nlsim.io.editor_file import text_sha256

    assert Verdict("a", "b", 0.0).text_changed({"a": "Floods", "b": "Storm"}) == []
    hashed = Verdict("a", "b", 0.0, sha256_a=text_sha256("Floods north"), sha256_b=text_sha256("Storm"))
    assert hashed.text_changed({"a": " Floods north ", "b": "Storm\n"}) == []
    assert hashed.text_changed({"a": "Floods\tnorth"}) == []
    assert hashed.text_changed({"a": "Floods south", "b": "Storms"}) == ["a", "b"]


def test_a_verdict_table_has_a_notes_column_only_while_a_verdict_has_a_note() -> None:
    """A daily state's verdict table without a note is written as before notes were kept (no notes column);
    one with a note gives it in the column."""
    plain = Verdicts.from_records([Verdict("a", "b", 0.0)]).frame()
    assert "notes" not in plain.columns and list(plain.columns)[-1] == "earlier"
    noted = Verdicts.from_records([Verdict("a", "b", 0.0), Verdict("c", "d", 1.0, notes="wire copy")]).frame()
    assert noted["notes"].tolist() == ["", "wire copy"]


@pytest.mark.parametrize("score", ["true", "false", "1.5", "-0.25", '"1"'])
def test_an_earlier_decision_whose_score_is_no_number_in_0_1_is_refused(score: str) -> None:
    """An earlier decision's score is a number in [0, 1]: JSON's true or false is no score (Python would read
    it as 1 or 0), nor is a number outside [0, 1] or a number written as text."""
    from nlsim.clusters.verdicts.records import Decision

    cell = '[{"score": ' + score + ', "annotator": "", "source": "p.tsv", "decided_at": ""}]'
    with pytest.raises(ValueError, match="is not a number in"):
        Decision.from_cell(cell)
    assert Decision.from_cell(cell.replace(score, "1"))[0].score == 1.0


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("ed-x,a,b,1,train,,,", "pair_id"),
        (",a,a,1,train,,,", "id_b"),
        (",a,,1,train,,,", "id_b"),
        (",a,b,0.6,train,,,", "score"),
        (",a,b,yes,train,,,", "score"),
        (",a,b,1,dev,,,", "split"),
    ],
)
def test_a_bad_row_is_refused_by_file_row_and_field(tmp_path: Path, row: str, field: str) -> None:
    store = tmp_path / "p.verdicts.csv"
    good = ",x,y,0,train,ed,m.csv,2026-11-26T00:00:00+00:00"
    store.write_text("pair_id,id_a,id_b,score,split,annotator,source,decided_at\n" + good + "\n" + row + "\n")
    with pytest.raises(InputError) as err:
        load_verdicts(store)
    assert (err.value.file, err.value.row, err.value.field) == (str(store), 2, field)


def test_a_failed_write_leaves_the_store_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "p.verdicts.csv"
    save_verdicts(Verdicts.from_records([Verdict("a", "b", 0.0)]), store)
    before = store.read_bytes()

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("nlsim.io.atomic.os.replace", boom)
    with pytest.raises(OSError):
        save_verdicts(Verdicts.from_records([Verdict("c", "d", 1.0)]), store)
    assert store.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [store.name]  # no temporary file left


# --- the store against its pair file: what a merge records, kept whatever happens to the store ----------

TITLES = {f"n{i}": f"Headline number {i} of the day" for i in range(12)}
V1_HEADER = "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n"


def _pair_file(path: Path, merged_before: bool = False) -> Path:
    """A pair file: one scored pair that is no verdict and, with ``merged_before``, one pair merged before
    the store existed (``editor-loop:``, as batches 2-4 of the bundled file are)."""
    lines = ["pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\tstratum\tannotator"]
    lines.append(f"p0\tn10\tn11\t{TITLES['n10']}\t{TITLES['n11']}\t0.5\ttrain\tlex-high\t")
    if merged_before:
        lines.append(f"b1\tn8\tn9\t{TITLES['n8']}\t{TITLES['n9']}\t0\ttrain\teditor-loop:batch1\tteam")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _merge(pairs: Path, rows: list[tuple[str, str, str]], name: str = "marks.csv", **kw: object) -> list[str]:
    """Merge an editors' file of ``rows`` (id_a, id_b, score) into ``pairs``; what the merge said."""
    from nlsim.annotation.merge import merge_annotations

    filled = pairs.parent / name
    pd.DataFrame(
        {
            "id_a": [a for a, _, _ in rows],
            "id_b": [b for _, b, _ in rows],
            "text_a": [TITLES[a] for a, _, _ in rows],
            "text_b": [TITLES[b] for _, b, _ in rows],
            "score": [s for _, _, s in rows],
            "annotator": "desk",
        }
    ).to_csv(filled, index=False)
    said: list[str] = []
    merge_annotations(filled, pairs, log=said.append, **kw)  # type: ignore[arg-type]
    return said


def _acting(pairs: Path) -> tuple[frozenset[tuple[str, str]], frozenset[tuple[str, str]]]:
    from nlsim.dedup.editors import read_editors

    c = read_editors(pairs, None).constraints()
    return c.must_link, c.cannot_link


@pytest.mark.slow
def test_a_merge_killed_between_the_store_and_the_pair_file_leaves_no_verdict_acting(tmp_path: Path) -> None:
    """The store is written first and the pair file's rename commits the merge: killed in between, the
    store holds a verdict no pair file holds. It never acts (nor reaches a daily state, which keeps what
    a report read), and the next merge writes the store without it and says so."""
    import os
    import subprocess
    import sys

    from nlsim.dedup.editors import read_editors
    from tests.faults import fault_env

    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")])
    before = pairs.read_bytes()
    killed = tmp_path / "killed.csv"
    pd.DataFrame(
        {"id_a": ["n2"], "id_b": ["n3"], "text_a": [TITLES["n2"]], "text_b": [TITLES["n3"]], "score": ["0"]}
    ).to_csv(killed, index=False)
    proc = subprocess.run(
        [sys.executable, "-m", "nlsim", "annotate", "merge", "--filled", str(killed), "--pairs", str(pairs)],
        env={**os.environ, **fault_env("merge-verdicts")},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -9, proc.stderr
    assert pairs.read_bytes() == before  # not committed
    assert ("n2", "n3") in {v.key for v in load_verdicts(store_path(pairs)).records}  # but in the store
    assert _acting(pairs)[1] == {("n0", "n1")}
    assert ("n2", "n3") not in {
        v.key for v in read_editors(pairs, None).verdicts.records
    }  # state keeps these
    said = _merge(pairs, [("n4", "n5", "1")], name="next.csv")
    assert any("does not hold" in line and "n2/n3" in line for line in said), said
    assert {v.key for v in load_verdicts(store_path(pairs)).records} == {("n0", "n1"), ("n4", "n5")}


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_a_merge_stopped_between_the_store_and_the_pair_file_puts_the_store_back(
    tmp_path: Path, stop: type[BaseException]
) -> None:
    """Ctrl-C (or SIGTERM, raised as an exception by the command) once the store is written and before the
    pair file is: the merge says it was stopped, and the store is as it was before it, so the overrule it
    held does not act in the next report or training (a stop is cleaned up after as a failure is)."""
    from nlsim.faults import set_fault_hook

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n6", "n7", "1")], name="first.csv")
    before = (pairs.read_bytes(), store_path(pairs).read_bytes())

    def halt(point: str) -> None:
        if point == "merge-verdicts":
            raise stop

    set_fault_hook(halt)
    try:
        with pytest.raises(stop):
            _merge(pairs, [("n0", "n1", "0"), ("n8", "n9", "1")], overrule=True)
    finally:
        set_fault_hook(None)
    assert (pairs.read_bytes(), store_path(pairs).read_bytes()) == before
    assert _acting(pairs) == ({("n6", "n7")}, frozenset())


def test_a_verdict_the_pair_file_does_not_hold_never_acts(tmp_path: Path) -> None:
    """What a merge killed after the store's rename leaves: a verdict in the store that no row of the pair
    file holds. Reports take nothing from it, and say so."""
    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")])
    store = store_path(pairs)
    save_verdicts(load_verdicts(store).updated([Verdict("n2", "n3", 0.0), Verdict("n4", "n5", 1.0)]), store)
    assert _acting(pairs) == (frozenset(), {("n0", "n1")})


def test_a_verdict_whose_pair_was_moved_out_of_training_by_hand_takes_the_split_and_acts_no_more(
    tmp_path: Path,
) -> None:
    """A merged training pair moved to the validation split in the pair file by hand: its verdict takes the
    pair file's split (said as corrected) and no longer acts on the clusters (a validation pair used as a
    constraint would put the editors' answer into what the report is judged on)."""
    from nlsim.clusters.verdicts import check_store

    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0"), ("n2", "n3", "1")])
    lines = pairs.read_text(encoding="utf-8").splitlines()
    lines = [ln.replace("\ttrain\t", "\tvalidation\t") if "\tn0\tn1\t" in ln else ln for ln in lines]
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    check = check_store(pairs)
    assert [(v.key, v.split) for v in check.corrected] == [(("n0", "n1"), "validation")]
    assert check.verdicts.get(("n0", "n1")).split == "validation"  # type: ignore[union-attr]
    assert _acting(pairs) == ({("n2", "n3")}, frozenset())


def test_only_a_merges_stratum_marks_a_pair_file_row_as_merged() -> None:
    """A row is a merged pair when its stratum is a merge's (``editor-loop``, or ``editor-loop:`` and a
    batch), not a stratum that only begins with those letters."""
    from nlsim.clusters.verdicts import pair_rows

    strata = ["editor-loop", "editor-loop:batch1", "editor-looped", "lex-high"]
    table = pd.DataFrame(
        {
            "id_a": ["a", "c", "e", "g"],
            "id_b": ["b", "d", "f", "h"],
            "text_a": "x",
            "text_b": "y",
            "score": 1.0,
            "split": "train",
            "stratum": strata,
        }
    )
    assert [r.merged for r in pair_rows(table).values()] == [True, True, False, False]


def test_a_merged_pair_whose_row_is_gone_from_the_middle_of_the_store_is_rebuilt(tmp_path: Path) -> None:
    """Three merges, and the store's row of the second lost (deleted by hand): the store holds merged pairs
    on from the first merge, so the second's pair is rebuilt from the pair file, the others kept as merged."""
    from nlsim.clusters.verdicts import check_store

    pairs = _pair_file(tmp_path / "news.tsv")
    for i, (a, b) in enumerate([("n0", "n1"), ("n2", "n3"), ("n4", "n5")]):
        _merge(pairs, [(a, b, "0")], name=f"m{i}.csv")
    store = store_path(pairs)
    lines = store.read_text(encoding="utf-8").splitlines(True)
    store.write_text("".join(ln for ln in lines if ",n2,n3," not in ln), encoding="utf-8")
    check = check_store(pairs)
    assert [v.key for v in check.rebuilt] == [("n2", "n3")]
    assert {v.key: v.source for v in check.verdicts.records} == {
        ("n0", "n1"): "m0.csv",
        ("n4", "n5"): "m2.csv",
        ("n2", "n3"): "",
    }


def test_todays_store_stands_over_a_store_under_an_earlier_name_on_one_pair(tmp_path: Path) -> None:
    """A verdict on one pair in both today's store and a store under the name an earlier nlsim gave it: the
    verdict of today's store holds; the earlier store's is not taken in."""
    from nlsim.clusters.verdicts import check_store

    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")])
    (tmp_path / "news.verdicts.csv").write_text(V1_HEADER + ",n0,n1,0,train,old,old.csv,\n", encoding="utf-8")
    check = check_store(pairs)
    held = check.verdicts.get(("n0", "n1"))
    assert held is not None and (held.annotator, held.source) == ("desk", "marks.csv")
    assert check.migrated == ()


def test_a_verdict_whose_pair_the_pair_file_scores_off_the_rubric_is_dropped_not_taken_back(
    tmp_path: Path,
) -> None:
    """A merged pair whose score in the pair file was changed by hand to one no editor gives (0.625, the
    mean of annotators' levels): its verdict does not act, but its pair is still in the pair file, so it is
    not among the verdicts taken back when the store is written."""
    from nlsim.clusters.verdicts import check_store

    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")])
    lines = pairs.read_text(encoding="utf-8").splitlines()
    lines = [ln.replace("\t0\ttrain\t", "\t0.625\ttrain\t") if "\tn0\tn1\t" in ln else ln for ln in lines]
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    check = check_store(pairs)
    assert [v.key for v in check.dropped] == [("n0", "n1")] and check.gone == ()


def test_a_verdict_kept_with_one_texts_hash_is_given_both_from_the_pair_file(tmp_path: Path) -> None:
    """A store row with the hash of one text and not the other (written so by hand): the verdict is given
    the hashes of both its pair's texts in the pair file, as a verdict kept before the hashes were is, so
    the text of neither item goes unchecked."""
    from nlsim.clusters.verdicts import check_store
    from nlsim.io.editor_file import text_sha256

    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")])
    one = text_sha256(TITLES["n0"])
    header = V1_HEADER.rstrip("\n") + ",sha256_a,sha256_b\n"
    store_path(pairs).write_text(header + f",n0,n1,0,train,desk,marks.csv,,{one},\n", encoding="utf-8")
    check = check_store(pairs)
    held = check.verdicts.get(("n0", "n1"))
    assert held is not None and (held.sha256_a, held.sha256_b) == (one, text_sha256(TITLES["n1"]))
    assert check.hashed == 1


def test_a_lost_or_cut_store_is_rebuilt_from_the_pair_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The pair file records every merged verdict: a store cut at a row boundary, or deleted, loses none of
    them (rebuilt from the pair file, and said). A store cut keeps its first verdict, so a pair merged before
    the store existed stays what it was (no verdict); a store lost whole takes every merged pair."""
    import logging

    pairs = _pair_file(tmp_path / "news.tsv", merged_before=True)
    _merge(pairs, [("n0", "n1", "0"), ("n2", "n3", "1")])
    _merge(pairs, [("n4", "n5", "0")], name="second.csv")
    store = store_path(pairs)
    # as the store of a pair file merged into before stores were kept: it begins after that pair
    save_verdicts(Verdicts(tuple(v for v in load_verdicts(store).records if v.key != ("n8", "n9"))), store)
    whole = _acting(pairs)
    assert whole == ({("n2", "n3")}, {("n0", "n1"), ("n4", "n5")})
    lines = store.read_text(encoding="utf-8").splitlines(keepends=True)
    store.write_text("".join(lines[:2]), encoding="utf-8")  # cut at a row boundary: one verdict left
    with caplog.at_level(logging.INFO, logger="nlsim"):
        assert _acting(pairs) == whole
    assert "2 merged pair(s)" in caplog.text and "rebuilt from the pair file" in caplog.text
    store.unlink()
    must, cannot = _acting(pairs)
    assert must == whole[0] and cannot == whole[1] | {("n8", "n9")}
    # a merge writes the store rebuilt; the rebuilt verdicts keep the pair file's annotator and texts' hashes
    _merge(pairs, [("n6", "n7", "0")], name="third.csv")
    got = {v.key: v for v in load_verdicts(store).records}
    assert set(got) == {("n0", "n1"), ("n2", "n3"), ("n4", "n5"), ("n6", "n7"), ("n8", "n9")}
    assert got[("n8", "n9")].annotator == "team" and got[("n8", "n9")].sha256_a


def test_pair_files_of_one_stem_keep_their_own_verdicts(tmp_path: Path) -> None:
    """news.tsv and news.csv each have their own store; a verdict merged into one never acts on reports
    given the other. The store an earlier nlsim shared between them (news.verdicts.csv) is still found:
    each pair file takes its own verdicts from it (said), and it goes once every verdict of it has moved."""
    tsv = _pair_file(tmp_path / "news.tsv")
    csv_file = tmp_path / "news.csv"
    pd.read_csv(tsv, sep="\t", dtype=str, keep_default_na=False).to_csv(csv_file, index=False)
    _merge(tsv, [("n0", "n1", "0")])
    _merge(csv_file, [("n2", "n3", "0")], name="other.csv")
    assert store_path(tsv) != store_path(csv_file)
    assert _acting(tsv)[1] == {("n0", "n1")} and _acting(csv_file)[1] == {("n2", "n3")}
    # as an earlier nlsim left them: one store of the stem, holding both files' verdicts
    shared = tmp_path / "news.verdicts.csv"
    shared.write_text(V1_HEADER + ",n0,n1,0,train,desk,marks.csv,\n,n2,n3,0,train,desk,other.csv,\n")
    store_path(tsv).unlink()
    store_path(csv_file).unlink()
    assert _acting(tsv)[1] == {("n0", "n1")} and _acting(csv_file)[1] == {("n2", "n3")}
    said = _merge(tsv, [("n4", "n5", "1")], name="third.csv")
    assert any(str(shared) in line and "verdict(s) of" in line for line in said), said
    assert shared.exists()  # news.csv's verdict is still only there
    assert {v.key for v in load_verdicts(store_path(tsv)).records} == {("n0", "n1"), ("n4", "n5")}
    assert load_verdicts(store_path(tsv)).records[0].source == "marks.csv"  # moved with what it said
    _merge(csv_file, [("n6", "n7", "1")], name="fourth.csv")
    assert not shared.exists()
    assert _acting(csv_file) == ({("n6", "n7")}, {("n2", "n3")})


def test_a_store_that_is_a_link_keeps_its_link_and_its_mode(tmp_path: Path) -> None:
    """A verdict store kept elsewhere (a symbolic link beside the pair file) and readable by a group only:
    a merge, a merge stopped before the pair file is written and ``nlsim annotate verdicts --write`` each
    write the file it links to, keeping its permissions, and leave the link in place."""
    import os
    import stat

    from nlsim.annotation.merge import check_verdicts
    from nlsim.faults import set_fault_hook

    pairs = _pair_file(tmp_path / "news.tsv", merged_before=True)
    kept = tmp_path / "shared" / "news-verdicts.csv"
    kept.parent.mkdir()
    _merge(pairs, [("n0", "n1", "0")], name="first.csv")
    store = store_path(pairs)
    store.rename(kept)
    store.symlink_to(kept)
    os.chmod(kept, 0o640)
    _merge(pairs, [("n2", "n3", "1")], name="second.csv")
    assert store.is_symlink() and store.resolve() == kept.resolve()
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o640
    assert {v.key for v in load_verdicts(kept).records} == {("n0", "n1"), ("n2", "n3"), ("n8", "n9")}
    before = kept.read_bytes()

    def halt(point: str) -> None:
        if point == "merge-verdicts":
            raise KeyboardInterrupt

    set_fault_hook(halt)
    try:
        with pytest.raises(KeyboardInterrupt):
            _merge(pairs, [("n4", "n5", "1")], name="third.csv")
    finally:
        set_fault_hook(None)
    assert store.is_symlink() and kept.read_bytes() == before
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o640
    kept.write_text(V1_HEADER + ",n0,n1,0,train,desk,first.csv,\n")  # written before the row checks
    os.chmod(kept, 0o640)
    check_verdicts(pairs, write=True, log=lambda _: None)
    assert store.is_symlink() and stat.S_IMODE(os.stat(kept).st_mode) == 0o640
    assert {v.key for v in load_verdicts(kept).records} == {("n0", "n1"), ("n2", "n3")}


@pytest.mark.parametrize(
    "how", ["torn inside its last row", "torn, an earlier store", "a score edited by hand"]
)
def test_a_damaged_store_is_refused_by_row_and_never_rewritten(tmp_path: Path, how: str) -> None:
    """A store torn inside its last row (annotator, source, time) or edited by hand fails its integrity
    check: refused by file, row and field by a report and by a merge (which changes nothing), never read
    with the fields empty; `nlsim annotate verdicts --write` rebuilds it from the pair file."""
    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0"), ("n2", "n3", "0")])
    store = store_path(pairs)
    if how == "torn inside its last row":
        text = store.read_text(encoding="utf-8")
        store.write_text(text[: text.rindex(",desk,") + 3], encoding="utf-8")
    elif how == "torn, an earlier store":  # no row checks: the last row ends without its line end
        store.unlink()
        store = tmp_path / "news.verdicts.csv"
        store.write_text(
            V1_HEADER + ",n0,n1,0,train,desk,marks.csv,2026-11-29\n,n2,n3,0,train,desk,marks.csv,20"
        )
    else:
        text = store.read_text(encoding="utf-8").splitlines(keepends=True)
        store.write_text(text[0] + text[1] + text[2].replace(",0,train,", ",1,train,", 1), encoding="utf-8")
    with pytest.raises(InputError) as err:
        _acting(pairs)
    from nlsim.annotation.merge import check_verdicts

    assert (err.value.file, err.value.row) == (str(store), 2) and err.value.field
    assert "nlsim annotate verdicts" in str(err.value)
    kept = (pairs.read_bytes(), store.read_bytes())
    with pytest.raises(InputError):
        _merge(pairs, [("n4", "n5", "0")], name="next.csv")
    assert (pairs.read_bytes(), store.read_bytes()) == kept
    check_verdicts(pairs, write=True, log=lambda _: None)
    assert _acting(pairs)[1] == {("n0", "n1"), ("n2", "n3")}
    assert {v.key: v.annotator for v in load_verdicts(store_path(pairs)).records}[("n2", "n3")] == "desk"


def test_the_bundled_pair_file_and_its_store_are_in_step(repo_root: Path) -> None:
    """A fresh clone's `bash run.sh` passes the bundled pair file to the report: its store is found under
    today's name, every row sound, every verdict held by the pair file, nothing to rebuild or say."""
    from nlsim.clusters.verdicts import check_store

    pairs = repo_root / "annotations" / "thucnews_tw_pairs.tsv"
    check = check_store(pairs)
    assert check.path.name == "thucnews_tw_pairs.tsv.verdicts.csv" and check.in_step and not check.notes()
    assert (len(check.verdicts), len(check.verdicts.acting())) == (331, 221)
    assert all(v.sha256_a and v.sha256_b for v in check.verdicts.records)


# --- an editor overrules the score the pair file gives a training pair -----------------------------------


def _scored_file(path: Path) -> Path:
    """A pair file the annotators scored: two training pairs (0.75 and their mean 0.625) and a validation
    pair, none of them a verdict."""
    t = TITLES
    path.write_text(
        "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\tstratum\tannotator\n"
        f"p0\tn0\tn1\t{t['n0']}\t{t['n1']}\t0.75\ttrain\tlex-high\t\n"
        f"p1\tn2\tn3\t{t['n2']}\t{t['n3']}\t0.625\ttrain\tlex-mid\t\n"
        f"p2\tn4\tn5\t{t['n4']}\t{t['n5']}\t1\tvalidation\tlex-high\t\n",
        encoding="utf-8",
    )
    return path


def _marks_sheet(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    """A page export at ``path`` of ``rows`` (id_a, id_b, score, overrule), the items' TITLES, by desk."""
    from nlsim.io import editor_file

    pd.DataFrame(
        {
            "pair_id": [editor_file.pair_id(a, b) for a, b, _, _ in rows],
            "id_a": [a for a, _, _, _ in rows],
            "id_b": [b for _, b, _, _ in rows],
            "text_a": [TITLES[a] for a, _, _, _ in rows],
            "text_b": [TITLES[b] for _, b, _, _ in rows],
            "score": [s for _, _, s, _ in rows],
            "annotator": "desk",
            editor_file.OVERRULE: [o for _, _, _, o in rows],
        }
    ).to_csv(path, index=False)
    return path


def test_an_overrule_is_the_newer_verdict_with_the_earlier_kept_and_the_pair_file_unchanged(
    tmp_path: Path,
) -> None:
    """The annotators scored n0/n1 0.75 (same topic, another event): without --overrule an editor's "not
    the same story" is refused, naming --overrule; with it the store holds the editor's decision as the
    pair's verdict, the annotators' score its history, and the pair file is byte for byte as it was. A
    second editor overrules again: both earlier decisions are kept, oldest first."""
    pairs = _scored_file(tmp_path / "news.tsv")
    before = pairs.read_bytes()
    with pytest.raises(InputError) as err:
        _merge(pairs, [("n0", "n1", "0")])
    assert "already annotated" in str(err.value) and "--overrule" in str(err.value)
    assert not store_path(pairs).exists() and pairs.read_bytes() == before
    said = _merge(pairs, [("n0", "n1", "0"), ("n2", "n3", "1")], overrule=True)
    assert pairs.read_bytes() == before  # the annotators' scores stay theirs
    assert any("2 training pair(s) overruled" in line for line in said), said
    got = {v.key: v for v in load_verdicts(store_path(pairs)).records}
    first = got[("n0", "n1")]
    assert (first.score, first.split, first.annotator, first.source) == (0.0, "train", "desk", "marks.csv")
    assert [(d.score, d.source) for d in first.earlier] == [(0.75, "news.tsv")]
    assert [d.score for d in got[("n2", "n3")].earlier] == [0.625]  # an annotators' mean is kept as it is
    assert _acting(pairs) == ({("n2", "n3")}, {("n0", "n1")})
    _merge(pairs, [("n0", "n1", "0.25")], name="second.csv", overrule=True)
    again = {v.key: v for v in load_verdicts(store_path(pairs)).records}[("n0", "n1")]
    assert again.score == 0.25 and [(d.score, d.source) for d in again.earlier] == [
        (0.75, "news.tsv"),
        (0.0, "marks.csv"),
    ]
    assert pairs.read_bytes() == before
    # the first file merged again: its decision was merged before and overruled since; the later one stands
    store = store_path(pairs).read_bytes()
    said = _merge(pairs, [("n0", "n1", "0")], overrule=True)
    assert store_path(pairs).read_bytes() == store, said
    assert {v.key: v for v in load_verdicts(store_path(pairs)).records}[("n0", "n1")].score == 0.25


def test_an_editor_confirming_the_annotators_score_is_not_said_to_overrule_it(tmp_path: Path) -> None:
    """An editor marks a training pair with the score the annotators gave it (n0/n1 0.75) beside a real
    overrule (n2/n3, 0.625 -> 1): both become the pairs' verdicts and act, but the merge, the store's check
    and the verdict itself say that the first confirms the annotators' score rather than overrules it."""
    from nlsim.annotation.merge import check_verdicts

    pairs = _scored_file(tmp_path / "news.tsv")
    said = _merge(pairs, [("n0", "n1", "0.75"), ("n2", "n3", "1")], overrule=True)
    assert any("2 training pair(s) overruled (1 of them confirming the score they had" in x for x in said), (
        said
    )
    got = {v.key: v for v in load_verdicts(store_path(pairs)).records}
    assert (got[("n0", "n1")].overrules, got[("n0", "n1")].confirms) == (True, True)
    assert (got[("n2", "n3")].overrules, got[("n2", "n3")].confirms) == (True, False)
    assert got[("n0", "n1")].as_dict()["confirms"] is True
    assert _acting(pairs) == ({("n2", "n3")}, {("n0", "n1")})  # the confirmation acts as a verdict
    checked: list[str] = []
    check_verdicts(pairs, log=checked.append)
    held = "(1 overruling the score the pair file gives them, 1 confirming it)"
    assert any(held in line for line in checked), checked


def test_an_editor_taking_an_overrule_back_to_the_annotators_score_is_said_to_overrule_it(
    tmp_path: Path,
) -> None:
    """The annotators scored n0/n1 0.75; an editor overruled it with 0; a second mark takes it back to
    0.75. The merge said the pair was overruled '(1 of them confirming the score they had ...)', a score
    that changes nothing, while training read 0 before and 0.75 after; it overrules the editor's 0 now, and
    is said so. The verdict still confirms the annotators' score (run.json does not count it overruling
    them)."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], name="m1.csv", overrule=True)
    said = _merge(pairs, [("n0", "n1", "0.75")], name="m2.csv", overrule=True)
    assert any("1 training pair(s) overruled: the editor's newer decision" in x for x in said), said
    assert not any("confirming" in x for x in said), said
    got = {v.key: v for v in load_verdicts(store_path(pairs)).records}[("n0", "n1")]
    assert ([d.score for d in got.earlier], got.score, got.confirms) == ([0.75, 0.0], 0.75, True)


def test_a_merge_keeps_an_overrule_the_pair_file_contradicts_for_now(tmp_path: Path) -> None:
    """An editor overruled n0/n1; then the pair file's score of it was changed by hand. The overrule does
    not hold (said), and a merge of another file keeps it in the store all the same: it lives nowhere else,
    so once the pair file gives the pair back its score the editor's decision acts again. Only `nlsim
    annotate verdicts --write` takes it out."""
    from nlsim.annotation.merge import check_verdicts

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], overrule=True)
    scored = pairs.read_text(encoding="utf-8")
    pairs.write_text(scored.replace("\t0.75\ttrain", "\t0.5\ttrain"), encoding="utf-8")
    said = _merge(pairs, [("n6", "n7", "1")], name="next.csv")
    assert any("do not hold" in line and "n0/n1" in line for line in said), said
    assert _acting(pairs) == ({("n6", "n7")}, frozenset())
    kept = load_verdicts(store_path(pairs)).get(("n0", "n1"))
    assert kept is not None and kept.score == 0.0 and [d.score for d in kept.earlier] == [0.75]
    merged = pairs.read_text(encoding="utf-8")
    pairs.write_text(merged.replace("\t0.5\ttrain", "\t0.75\ttrain"), encoding="utf-8")
    assert _acting(pairs) == ({("n6", "n7")}, {("n0", "n1")})
    pairs.write_text(merged, encoding="utf-8")
    check_verdicts(pairs, write=True, log=lambda _: None)
    assert load_verdicts(store_path(pairs)).get(("n0", "n1")) is None


def test_a_daily_states_copy_of_an_overrule_the_pair_file_contradicts_since_does_not_act(
    tmp_path: Path,
) -> None:
    """A daily run keeps the verdicts a report read in its state. An overrule the pair file contradicts
    since (its score changed by hand) does not hold, and the run says so: its copy in the state does not act
    either, in a run given the pair file, as in a batch report; once the pair file gives the pair back the
    score it overruled, it acts again."""
    from nlsim.dedup.editors import read_editors

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], overrule=True)
    kept = read_editors(pairs, None).verdicts.frame()  # what the daily state keeps
    scored = pairs.read_text(encoding="utf-8")
    pairs.write_text(scored.replace("\t0.75\ttrain", "\t0.5\ttrain"), encoding="utf-8")
    assert read_editors(pairs, None).constraints().cannot_link == frozenset()
    assert read_editors(pairs, kept).constraints().cannot_link == frozenset()
    pairs.write_text(scored, encoding="utf-8")
    assert read_editors(pairs, kept).constraints().cannot_link == {("n0", "n1")}


def test_validation_and_test_pairs_are_never_overruled(tmp_path: Path) -> None:
    pairs = _scored_file(tmp_path / "news.tsv")
    before = pairs.read_bytes()
    with pytest.raises(InputError) as err:
        _merge(pairs, [("n4", "n5", "0")], overrule=True)
    assert "validation split" in str(err.value) and "only a training pair is overruled" in str(err.value)
    assert pairs.read_bytes() == before and not store_path(pairs).exists()
    # --skip-scored skips it and merges the rest
    said = _merge(pairs, [("n4", "n5", "0"), ("n0", "n1", "1")], overrule=True, skip_scored=True)
    assert any(
        "1 already annotated skipped" in line and "1 training pair(s) overruled" in line for line in said
    )
    assert {v.key for v in load_verdicts(store_path(pairs)).records} == {("n0", "n1")}


def test_a_page_export_row_marked_overrule_merges_without_the_option(tmp_path: Path) -> None:
    """The page sets `overrule` true on a mark made on a pair already scored: that row is merged as the
    editor's newer decision, the other rows as any export's (a new pair appended); a row marked false on a
    scored pair is still refused, and a cell that is neither true nor false is named."""
    from nlsim.annotation.merge import merge_annotations
    from nlsim.io import editor_file

    pairs = _scored_file(tmp_path / "news.tsv")
    before = pairs.read_text(encoding="utf-8")
    rows = [("n0", "n1", "0", "TRUE"), ("n6", "n7", "1", "false")]

    def export(rows: list[tuple[str, str, str, str]]) -> Path:
        path = tmp_path / "marks-r1.csv"
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
                "annotator": "desk",
                "notes": "",
                "model": "v0001",
                "threshold": "0.8",
                "sha256_a": [editor_file.text_sha256(TITLES[a]) for a, _, _, _ in rows],
                "sha256_b": [editor_file.text_sha256(TITLES[b]) for _, b, _, _ in rows],
                editor_file.OVERRULE: [o for _, _, _, o in rows],
            }
        )
        frame.to_csv(path, index=False)
        return path

    with pytest.raises(InputError) as err:
        merge_annotations(export([("n2", "n3", "1", "false")]), pairs, log=lambda _: None)
    assert "already annotated" in str(err.value) and "--overrule" in str(err.value)
    with pytest.raises(InputError) as err:
        merge_annotations(export([("n2", "n3", "1", "maybe")]), pairs, log=lambda _: None)
    assert "sheet row 2, field 'overrule': 'maybe' is neither true nor false" in str(err.value)
    assert editor_file.scores_held(export(rows)) == 2  # still an editors' file
    result = merge_annotations(export(rows), pairs, log=lambda _: None)
    assert (result.added, result.overruled) == (1, 1)
    text = pairs.read_text(encoding="utf-8")
    assert text.startswith(before) and "n6\tn7" in text.removeprefix(before)  # only the new pair appended
    assert _acting(pairs) == ({("n6", "n7")}, {("n0", "n1")})
    # the same export merged again: every decision holds already, nothing changes
    kept = (pairs.read_bytes(), store_path(pairs).read_bytes())
    again = merge_annotations(export(rows), pairs, skip_scored=True, log=lambda _: None)
    assert (again.added, again.overruled, again.already_held) == (0, 0, 1)
    assert (pairs.read_bytes(), store_path(pairs).read_bytes()) == kept


def test_a_row_marked_overrule_on_a_pair_nobody_scored_is_merged_new_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The page sets `overrule` true on a mark made where the pair was scored; the pair file merged into
    scores no such pair (another pair file than the report's, a row taken out since). The row is still a
    valid verdict, merged as a new pair, but the merge says so, by file, sheet row and item ids."""
    from nlsim.annotation.merge import merge_annotations

    pairs = _scored_file(tmp_path / "news.tsv")
    path = _marks_sheet(tmp_path / "marks.csv", [("n6", "n7", "0", "true"), ("n8", "n9", "1", "false")])
    with caplog.at_level("WARNING", logger="nlsim"):
        result = merge_annotations(path, pairs, log=lambda _: None)
    assert (result.added, result.overruled) == (2, 0)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1, warned
    assert f"{path}: 1 row(s) marked overrule on a pair nobody scored in {pairs}" in warned[0]
    assert "sheet row 2 (n6/n7)" in warned[0] and "n8" not in warned[0]
    assert _acting(pairs) == ({("n8", "n9")}, {("n6", "n7")})


def test_a_row_marked_overrule_on_an_unscored_pair_merged_into_validation_is_said_to_act_as_no_verdict(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning on an overrule mark for a pair nobody scored said the row was merged as "the editor's
    verdict all the same", under ``--split validation`` too, where a pair judges the report and never acts
    as a verdict. It says what the row became in the split it went to."""
    from nlsim.annotation.merge import merge_annotations

    pairs = _scored_file(tmp_path / "news.tsv")
    path = _marks_sheet(tmp_path / "marks.csv", [("n6", "n7", "0", "true")])
    with caplog.at_level("WARNING", logger="nlsim"):
        merge_annotations(path, pairs, split="validation", log=lambda _: None)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1, warned
    assert "verdict all the same" not in warned[0], warned[0]
    assert "merged as new validation pairs, which judge the report and act as no verdict" in warned[0]
    with caplog.at_level("WARNING", logger="nlsim"):
        caplog.clear()
        training = _scored_file(tmp_path / "other.tsv")
        merge_annotations(path, training, log=lambda _: None)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "merged as new training pairs, each the editor's verdict all the same" in warned[0], warned


def _marks_on(path: Path, rows: list[tuple[str, str, str, str, str, str]], hashed: bool = True) -> Path:
    """A page export at ``path`` of ``rows`` (id_a, id_b, text_a, text_b, score, overrule) by bob, marked
    in two minutes; without ``hashed``, a drawn file's columns (no hashes, mark times or overrule)."""
    import datetime as dt

    from nlsim.io import editor_file

    frame = pd.DataFrame(
        {
            "pair_id": [editor_file.pair_id(r[0], r[1]) for r in rows],
            "id_a": [r[0] for r in rows],
            "id_b": [r[1] for r in rows],
            "text_a": [r[2] for r in rows],
            "text_b": [r[3] for r in rows],
            "score": [r[4] for r in rows],
            "annotator": "bob",
        }
    )
    if hashed:
        frame["sha256_a"] = [editor_file.text_sha256(r[2]) for r in rows]
        frame["sha256_b"] = [editor_file.text_sha256(r[3]) for r in rows]
        later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)  # after the decisions merged just now
        frame[editor_file.MARKED_AT] = later.isoformat(timespec="seconds")
        frame[editor_file.OVERRULE] = [r[5] for r in rows]
    frame.to_csv(path, index=False)
    return path


def test_a_verdict_whose_text_changed_is_decided_again_on_the_new_text_by_a_page_mark(tmp_path: Path) -> None:
    """An editor overruled n0/n1 (the annotators' 0.75) with 0; n0's headline was edited since, so a daily
    run says the verdict does not act "until an editor decides on the new text". The editor marks the pair
    in the page, on the new text: the merge refused it (n0 "has another text than in" the pair file), so no
    decision could be made. A page mark overruling a training pair, its new text vouched for by its hash, is
    the pair's newer verdict on that text (the pair file keeps the row and text the annotators scored, as
    any overrule leaves it; the earlier decisions are kept with it), and acts on the new text. A text no
    hash vouches for, or a new pair naming the item with its new text, is refused as before."""
    from nlsim.annotation.merge import merge_annotations
    from nlsim.dedup.editors import read_editors
    from nlsim.io.editor_file import text_sha256

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], name="m1.csv", overrule=True)
    edited = TITLES["n0"] + ", updated"
    titles = {"n0": edited, "n1": TITLES["n1"]}
    assert read_editors(pairs, None).checked_texts(titles).text_changed == {("n0", "n1")}
    kept = (pairs.read_bytes(), store_path(pairs).read_bytes())

    drawn = _marks_on(tmp_path / "drawn.csv", [("n0", "n1", edited, TITLES["n1"], "1", "")], hashed=False)
    with pytest.raises(InputError) as err:  # typed by hand: nothing vouches for the new text
        merge_annotations(drawn, pairs, overrule=True, log=lambda _: None)
    assert "sheet row 2, field 'text_a': item 'n0' has another text than in" in str(err.value)
    both = [("n0", "n1", edited, TITLES["n1"], "1", "true"), ("n0", "n6", edited, TITLES["n6"], "1", "false")]
    with pytest.raises(InputError) as err:  # a new pair would give the pair file two texts for n0
        merge_annotations(_marks_on(tmp_path / "both.csv", both), pairs, log=lambda _: None)
    assert "sheet row 3, field 'text_a': item 'n0' has another text than in" in str(err.value)
    assert "sheet row 2" not in str(err.value)
    assert (pairs.read_bytes(), store_path(pairs).read_bytes()) == kept

    said: list[str] = []
    marks = _marks_on(tmp_path / "marks-bob.csv", [("n0", "n1", edited, TITLES["n1"], "1", "true")])
    result = merge_annotations(marks, pairs, log=said.append)
    assert result.overruled == 1 and pairs.read_bytes() == kept[0]
    assert any("1 decided on a text that changed since the pair was scored (n0/n1)" in x for x in said), said
    (v,) = load_verdicts(store_path(pairs)).records
    assert (v.score, v.annotator, v.sha256_a, v.sha256_b) == (
        1.0,
        "bob",
        text_sha256(edited),
        text_sha256(TITLES["n1"]),
    )
    assert [(d.score, d.annotator) for d in v.earlier] == [(0.75, ""), (0.0, "desk")]
    now = read_editors(pairs, None).checked_texts(titles)
    assert now.text_changed == frozenset() and now.constraints().must_link == {("n0", "n1")}
    # the same export merged again: the decision holds, nothing changes
    again = merge_annotations(marks, pairs, log=lambda _: None)
    assert (again.overruled, again.already_held) == (0, 1)


def test_a_verdict_whose_text_changed_is_decided_again_from_a_file_the_corpus_vouches_for(
    tmp_path: Path,
) -> None:
    """A pair the page cannot show (neither item in a cluster, so neither can be picked) is decided again on
    its item's new text from a file written by hand, merged with --overrule: its text, which no hash vouches
    for, was refused. With --corpus, the item's text in the corpus (the day's file that carries the edited
    headline) vouches for it; a text the corpus does not hold is refused as before."""
    from nlsim.annotation.merge import merge_annotations
    from nlsim.dedup.editors import read_editors
    from nlsim.io.editor_file import text_sha256

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], name="m1.csv", overrule=True)
    edited = TITLES["n0"] + ", updated"
    corpus = tmp_path / "day.tsv"
    corpus.write_text(f"id\ttitle\nn0\t{edited}\nn1\t{TITLES['n1']}\n", encoding="utf-8")
    typo = _marks_on(tmp_path / "typo.csv", [("n0", "n1", edited + "!", TITLES["n1"], "1", "")], hashed=False)
    with pytest.raises(InputError) as err:
        merge_annotations(typo, pairs, overrule=True, corpus=corpus, log=lambda _: None)
    assert "sheet row 2, field 'text_a': item 'n0' has another text than in" in str(err.value)
    typed = _marks_on(tmp_path / "typed.csv", [("n0", "n1", edited, TITLES["n1"], "1", "")], hashed=False)
    result = merge_annotations(typed, pairs, overrule=True, corpus=corpus, log=lambda _: None)
    assert (result.overruled, result.new_text) == (1, ("n0/n1",))
    (v,) = load_verdicts(store_path(pairs)).records
    assert (v.score, v.sha256_a) == (1.0, text_sha256(edited))
    now = read_editors(pairs, None).checked_texts({"n0": edited, "n1": TITLES["n1"]})
    assert now.text_changed == frozenset() and now.constraints().must_link == {("n0", "n1")}


def test_a_new_pair_on_a_headline_edited_since_is_refused_saying_why_and_what_to_do(tmp_path: Path) -> None:
    """A page mark on a new pair (n0/n6) carries n0's headline as edited since the pair file took n0's text.
    The pair file keeps one text an item, so the row is refused; the refusal said only that n0 "has another
    text", which the editor cannot change (the page showed it). It says the page showed that text (its hash
    vouches for it), that the headline was edited since, and what the editor can do."""
    from nlsim.annotation.merge import merge_annotations

    pairs = _scored_file(tmp_path / "news.tsv")
    edited = TITLES["n0"] + ", updated"
    rows = [("n0", "n6", edited, TITLES["n6"], "1", "false")]
    with pytest.raises(InputError) as err:
        merge_annotations(_marks_on(tmp_path / "marks.csv", rows), pairs, log=lambda _: None)
    said = str(err.value)
    assert "sheet row 2, field 'text_a': item 'n0' has another text than in" in said
    assert "the report page showed this one (its hash): the item's headline was edited since" in said
    assert "take this row out of the file to merge the others" in said
    typed = _marks_on(tmp_path / "typed.csv", rows, hashed=False)  # no hash: maybe a typo, said as before
    with pytest.raises(InputError) as err:
        merge_annotations(typed, pairs, log=lambda _: None)
    assert "has another text than in" in str(err.value) and "report page" not in str(err.value)


def test_a_blank_row_skipped_with_skip_blank_is_not_refused_for_its_overrule_cell(tmp_path: Path) -> None:
    """``--skip-blank`` skips an unscored row whatever else it holds, its ``overrule`` cell as its
    ``marked_at`` one: a sheet of an unscored row left with ``maybe`` there merges its scored rows."""
    from nlsim.annotation.merge import merge_annotations

    pairs = _scored_file(tmp_path / "news.tsv")
    path = _marks_sheet(tmp_path / "marks.csv", [("n6", "n7", "1", "false"), ("n8", "n9", "", "maybe")])
    result = merge_annotations(path, pairs, skip_blank=True, log=lambda _: None)
    assert (result.added, result.skipped_blank) == (1, 1)
    with pytest.raises(InputError) as err:  # without --skip-blank the row is refused as unscored
        merge_annotations(path, pairs, log=lambda _: None)
    assert "field 'score': not scored" in str(err.value)


@pytest.mark.slow
def test_merge_cli_overrule(tmp_path: Path) -> None:
    """`nlsim annotate merge --overrule` on the command line."""
    pairs = _scored_file(tmp_path / "news.tsv")
    filled = tmp_path / "marks.csv"
    pd.DataFrame(
        {"id_a": ["n0"], "id_b": ["n1"], "text_a": [TITLES["n0"]], "text_b": [TITLES["n1"]], "score": ["0"]}
    ).to_csv(filled, index=False)
    cmd = ["annotate", "merge", "--filled", str(filled), "--pairs", str(pairs)]
    refused = nlsim(*cmd, cwd=tmp_path)
    assert refused.returncode != 0 and "--overrule" in refused.stderr
    done = nlsim(*cmd, "--overrule", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 training pair(s) overruled" in done.stderr
    assert load_verdicts(store_path(pairs)).records[0].earlier[0].score == 0.75


def test_a_lost_store_brought_back_by_merging_its_file_again_overrules_only_what_it_overruled(
    tmp_path: Path,
) -> None:
    """A store lost and rebuilt from the pair file loses its overrules; merging the editors' file again with
    --overrule brings them back (as the docs say). The file's new pairs, rebuilt from the pair file with
    the same score by the same editor, are not overruled by themselves: one overrule, as merged first."""
    from nlsim.annotation.merge import check_verdicts

    pairs = _scored_file(tmp_path / "news.tsv")
    first = _merge(pairs, [("n0", "n1", "0"), ("n6", "n7", "1")], overrule=True)
    assert any("1 training pair(s) overruled" in line for line in first), first
    store_path(pairs).unlink()
    check_verdicts(pairs, write=True, log=lambda _: None)
    again = _merge(pairs, [("n0", "n1", "0"), ("n6", "n7", "1")], overrule=True)
    assert any("1 training pair(s) overruled" in line for line in again), again
    got = {v.key: v for v in load_verdicts(store_path(pairs)).records}
    assert [d.score for d in got[("n0", "n1")].earlier] == [0.75]
    assert not got[("n6", "n7")].overrules
    assert len(training_pairs(pairs).overruled) == 1


def test_the_store_check_holds_an_overrule_and_still_refuses_a_hand_edit(tmp_path: Path) -> None:
    """An overruling verdict disagrees with the pair file and holds; a non-overruling verdict given another
    score (its check made again, as by a hand that knows how) takes the pair file's; the overrule row edited
    by hand fails its integrity check and is refused by row and field; and one the pair file contradicts
    since (its pair moved to validation) does not hold, and is said."""
    from nlsim.clusters.verdicts import check_store
    from nlsim.clusters.verdicts.store import ROW_CHECK, row_check

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], overrule=True)
    _merge(pairs, [("n6", "n7", "1")], name="new.csv")
    check = check_store(pairs)
    assert not check.notes() and check.in_step
    assert {v.key: v.score for v in check.verdicts.records} == {("n0", "n1"): 0.0, ("n6", "n7"): 1.0}
    store = store_path(pairs)
    text = store.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    overrule_line = next(n for n, line in enumerate(lines) if ",n0,n1," in line)
    # the score of the overrule edited by hand: its row check fails
    store.write_text(text.replace(",n0,n1,0,train,", ",n0,n1,1,train,"), encoding="utf-8")
    with pytest.raises(InputError) as err:
        _acting(pairs)
    assert (err.value.file, err.value.row, err.value.field) == (str(store), overrule_line, ROW_CHECK)
    # a merged verdict rescored by hand with its check made again: the pair file's score holds
    header = lines[0].rstrip("\n").split(",")
    rows = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False).to_dict("records")
    for r in rows:
        if r["id_a"] == "n6":
            r["score"] = "0"
            r[ROW_CHECK] = row_check(r)
    pd.DataFrame(rows, columns=header).to_csv(store, index=False, lineterminator="\n")
    check = check_store(pairs)
    assert [v.key for v in check.corrected] == [("n6", "n7")]
    assert {v.key: v.score for v in check.verdicts.records} == {("n0", "n1"): 0.0, ("n6", "n7"): 1.0}
    # the pair moved to validation by hand since: the overrule does not hold
    pairs.write_text(pairs.read_text(encoding="utf-8").replace("0.75\ttrain", "0.75\tvalidation"))
    check = check_store(pairs)
    assert [v.key for v in check.unheld] == [("n0", "n1")] and ("n0", "n1") not in {
        v.key for v in check.verdicts.records
    }
    assert any("do not hold" in line and "n0/n1" in line for line in check.notes())


def test_a_store_without_overrules_is_written_and_read_as_before(tmp_path: Path) -> None:
    """A store without an overrule keeps the columns it had (a store an earlier nlsim wrote stays in step
    and readable by it), and the stores earlier nlsim versions wrote, with row checks and without, read."""
    from nlsim.clusters.verdicts import check_store

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n6", "n7", "1")])
    header = store_path(pairs).read_text(encoding="utf-8").splitlines()[0]
    assert header == "pair_id,id_a,id_b,score,split,annotator,source,decided_at,sha256_a,sha256_b,row_sha256"
    assert check_store(pairs).in_step
    store_path(pairs).write_text(V1_HEADER + ",n6,n7,1,train,desk,new.csv,\n", encoding="utf-8")
    got = load_verdicts(store_path(pairs)).records
    assert [(v.key, v.score, v.earlier) for v in got] == [(("n6", "n7"), 1.0, ())]
    _merge(pairs, [("n0", "n1", "0")], overrule=True)  # the old store taken in, the overrule added
    assert {v.key: v.overrules for v in load_verdicts(store_path(pairs)).records} == {
        ("n6", "n7"): False,
        ("n0", "n1"): True,
    }


def test_an_overrule_exported_again_from_another_file_overrules_nothing_again(tmp_path: Path) -> None:
    """*Export all marks* after a merge exports an overruling mark again, under a new file name: it was
    merged as a second overrule of the editor's own decision (said as overruled, and the decision kept
    twice, once as the earlier of itself). The decision that holds is the row's (same score, same editor):
    nothing new, counted as already held (another score from a new file still overrules it: taking an
    overrule back, above)."""
    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], name="marks-1.csv", overrule=True)
    held = store_path(pairs).read_bytes()
    said = _merge(pairs, [("n0", "n1", "0")], name="marks-2.csv", overrule=True)
    assert not any("overruled" in line for line in said), said
    assert any("1 overruling decision(s) merged before" in line for line in said), said
    assert store_path(pairs).read_bytes() == held
    got = load_verdicts(store_path(pairs)).get(("n0", "n1"))
    assert got is not None and (got.score, got.source) == (0.0, "marks-1.csv")
    assert [d.score for d in got.earlier] == [0.75]


def test_an_old_overrule_exported_again_never_undoes_a_colleagues_newer_decision(tmp_path: Path) -> None:
    """desk overrules n0/n1 from 0.75 to 0 (marks-1.csv), bob overrules it back to 0.75, then desk's
    *Export all marks* (marks-2.csv) sends desk's old mark again: it is merged before, counted and said with
    both decisions, and bob's 0.75 stands. desk's decision changed (another score) is still a new one."""
    from nlsim.annotation.merge import merge_annotations

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")], name="marks-1.csv", overrule=True)
    bob = tmp_path / "bob.csv"
    pd.DataFrame(
        {
            "id_a": ["n0"],
            "id_b": ["n1"],
            "text_a": [TITLES["n0"]],
            "text_b": [TITLES["n1"]],
            "score": ["0.75"],
        }
    ).assign(annotator="bob").to_csv(bob, index=False)
    merge_annotations(bob, pairs, overrule=True, log=lambda _: None)
    held = store_path(pairs).read_bytes()
    said = _merge(pairs, [("n0", "n1", "0"), ("n6", "n7", "1")], name="marks-2.csv", overrule=True)
    assert not any("training pair(s) overruled" in line for line in said), said
    assert any(
        "1 overruling decision(s) merged before" in line
        and "n0/n1: desk's 0 (marks-1.csv" in line
        and "overruled since by bob's 0.75 (bob.csv" in line
        for line in said
    ), said
    got = load_verdicts(store_path(pairs)).get(("n0", "n1"))
    assert got is not None and (got.score, got.annotator) == (0.75, "bob")
    assert store_path(pairs).read_bytes() != held  # the new pair n6/n7 is added all the same
    assert _acting(pairs) == ({("n6", "n7")}, {("n0", "n1")})  # 0.75: not the same story
    # desk decides otherwise now: a new decision, which overrules bob's
    said = _merge(pairs, [("n0", "n1", "0.25")], name="marks-3.csv", overrule=True)
    assert any("1 training pair(s) overruled" in line for line in said), said
    got = load_verdicts(store_path(pairs)).get(("n0", "n1"))
    assert got is not None and (got.score, got.annotator) == (0.25, "desk")
    assert [(d.score, d.annotator) for d in got.earlier] == [(0.75, ""), (0.0, "desk"), (0.75, "bob")]


def test_an_overruling_rows_note_is_kept_in_the_store_and_a_store_without_notes_reads_as_before(
    tmp_path: Path,
) -> None:
    """desk overrules n0/n1 with a note ("wire copy of the same flood"). The row goes into the verdict
    store only, which had no notes column, so the note was kept nowhere; the store now keeps it (a notes
    column, written only while a verdict has a note, so a store without one keeps the columns it had), and
    a daily state's copy keeps it too. A store without the column reads each verdict without a note."""
    from nlsim.clusters.verdicts import check_store, from_frame

    pairs = _scored_file(tmp_path / "news.tsv")
    _merge(pairs, [("n6", "n7", "1")])
    assert "notes" not in store_path(pairs).read_text(encoding="utf-8").splitlines()[0]
    filled = tmp_path / "noted.csv"
    pd.DataFrame(
        {
            "id_a": ["n0", "n8"],
            "id_b": ["n1", "n9"],
            "text_a": [TITLES["n0"], TITLES["n8"]],
            "text_b": [TITLES["n1"], TITLES["n9"]],
            "score": ["0", "1"],
            "annotator": "desk",
            "notes": ["wire copy of the same flood", "same story"],
        }
    ).to_csv(filled, index=False)
    from nlsim.annotation.merge import merge_annotations

    merge_annotations(filled, pairs, overrule=True, log=lambda _: None)
    got = load_verdicts(store_path(pairs))
    held = got.get(("n0", "n1"))
    assert held is not None and held.overrules and held.notes == "wire copy of the same flood"
    added = got.get(("n8", "n9"))
    assert added is not None and added.notes == ""  # a pair the file added keeps its note in the pair file
    assert from_frame(got.frame(), "state").get(("n0", "n1")) == held
    assert check_store(pairs).in_step
    store_path(pairs).write_text(V1_HEADER + ",n6,n7,1,train,desk,new.csv,\n", encoding="utf-8")
    assert [v.notes for v in load_verdicts(store_path(pairs)).records] == [""]


def test_a_store_saved_in_big5_is_refused_by_row_and_field_as_every_table_is(tmp_path: Path) -> None:
    """A verdict store opened in Excel on a Traditional-Chinese Windows and saved (Big5, an editor's name
    in Chinese): refused as "the verdict store is not UTF-8 text" alone, where every other table nlsim reads
    names the row, the field and the byte and says how to convert the file; now as they do."""
    store = store_path(tmp_path / "pairs.tsv")
    save_verdicts(
        Verdicts.from_records([Verdict("a", "b", 1.0), Verdict("c", "d", 0.0, annotator="編輯台")]), store
    )
    store.write_bytes(store.read_bytes().decode("utf-8-sig").encode("cp950"))
    with pytest.raises(InputError, match=r"row 2, field 'annotator': not valid UTF-8 text: byte 0x") as info:
        load_verdicts(store)
    assert "iconv -f CP950 -t UTF-8" in str(info.value)
