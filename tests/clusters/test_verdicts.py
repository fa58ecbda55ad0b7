"""The verdict store: typed records, one verdict per pair, atomic writes, bad rows refused by name."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nlsim.clusters.verdicts import Verdict, Verdicts, load_verdicts, save_verdicts, store_path
from nlsim.errors import InputError


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
    from nlsim.annotation import merge_annotations

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


def test_a_verdict_the_pair_file_does_not_hold_never_acts(tmp_path: Path) -> None:
    """What a merge killed after the store's rename leaves: a verdict in the store that no row of the pair
    file holds. Reports take nothing from it, and say so."""
    pairs = _pair_file(tmp_path / "news.tsv")
    _merge(pairs, [("n0", "n1", "0")])
    store = store_path(pairs)
    save_verdicts(load_verdicts(store).updated([Verdict("n2", "n3", 0.0), Verdict("n4", "n5", 1.0)]), store)
    assert _acting(pairs) == (frozenset(), {("n0", "n1")})


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
    from nlsim.annotation import check_verdicts

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
