"""The verdict store: typed records, one verdict per pair, atomic writes, bad rows refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlsim.clusters.verdicts import Verdict, Verdicts, load_verdicts, save_verdicts, store_path
from nlsim.errors import InputError


def test_round_trip_and_a_later_verdict_replaces_the_earlier(tmp_path: Path) -> None:
    store = store_path(tmp_path / "pairs.tsv")
    assert store.name == "pairs.verdicts.csv"
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
