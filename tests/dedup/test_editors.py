"""Tests of nlsim.dedup.editors: which scored pairs and verdicts a run takes, and which of them act."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nlsim.clusters.verdicts import Verdict, Verdicts, store_path
from nlsim.dedup.editors import (
    HELD_OUT,
    TRAINING,
    EditorsInput,
    editors_fingerprint,
    read_editors,
    scored_frame,
)
from nlsim.errors import StateError
from nlsim.io.editor_file import pair_id, text_sha256

HEADER = "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\tstratum\tannotator"


def _pair_file(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    """A pair file of ``rows`` (id_a, id_b, score, split), none of them merged from an editors' file."""
    lines = [HEADER]
    for i, (a, b, score, split) in enumerate(rows):
        lines.append(f"p{i}\t{a}\t{b}\tHeadline {a}\tHeadline {b}\t{score}\t{split}\tlex-high\t")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _kept_scored(kinds: dict[tuple[str, str], str]) -> pd.DataFrame:
    """A daily state's table of scored pairs, each pair with its kind of split."""
    return pd.DataFrame(
        {"id_a": [a for a, _ in kinds], "id_b": [b for _, b in kinds], "kind": list(kinds.values())},
        dtype=str,
    )


def test_the_page_is_given_only_the_scored_pairs_whose_two_items_it_shows() -> None:
    e = EditorsInput(scored=frozenset({("a", "b"), ("a", "z"), ("y", "z")}))
    assert e.scored_ids(["a", "b", "c"]) == [pair_id("a", "b")]
    assert e.scored_ids(["z"]) == []
    many = EditorsInput(scored=frozenset((f"a{i}", f"b{i}") for i in range(12)))
    shown = [f"{side}{i}" for i in range(12) for side in "ab"]
    assert many.scored_ids(shown) == sorted(pair_id(f"a{i}", f"b{i}") for i in range(12))


def test_a_same_story_verdict_held_out_or_given_on_a_changed_text_joins_nothing() -> None:
    held = Verdict("a", "b", 1.0)
    changed = Verdict("c", "d", 1.0, sha256_a=text_sha256("Floods"), sha256_b=text_sha256("Storm"))
    acting = Verdict("e", "f", 1.0)
    e = EditorsInput(Verdicts.from_records([held, changed, acting]), held_out=frozenset({("a", "b")}))
    e = e.checked_texts({"c": "Floods north", "d": "Storm"})
    assert e.constraints().must_link == frozenset({("e", "f")})
    assert e.acting_verdicts() == [acting]


def test_only_a_training_verdict_is_checked_against_the_texts_shown() -> None:
    """A verdict on a validation pair never acts: it is not among those set aside for a changed text."""
    hashes = {"sha256_a": text_sha256("Floods"), "sha256_b": text_sha256("Storm")}
    v = [Verdict("a", "b", 0.0, **hashes), Verdict("c", "d", 0.0, split="validation", **hashes)]
    texts = {"a": "Floods north", "b": "Storm", "c": "Floods north", "d": "Storm"}
    assert EditorsInput(Verdicts.from_records(v)).checked_texts(texts).text_changed == {("a", "b")}


def test_a_pair_both_kinds_claim_is_kept_as_held_out() -> None:
    frame = scored_frame({("a", "b"), ("c", "d")}, training={("a", "b")}, held_out={("a", "b")})
    assert frame is not None
    assert frame.values.tolist() == [["a", "b", HELD_OUT], ["c", "d", ""]]
    assert scored_frame(set()) is None
    many = scored_frame({(f"a{i:02}", f"b{i:02}") for i in range(12)})
    assert many is not None and many["id_a"].tolist() == [f"a{i:02}" for i in range(12)]


def test_the_pair_files_splits_give_the_held_out_and_training_pairs(tmp_path: Path) -> None:
    """Validation and test pairs are held out, training pairs may be overruled, and a pair of no split is
    neither; a row without both item ids is no scored pair."""
    rows = [("n0", "n1", "0.5", "train"), ("n2", "n3", "0.5", "validation"), ("n4", "n5", "1", "test")]
    rows += [("n6", "n7", "0.25", ""), ("n8", "", "1", "train")]
    e = read_editors(_pair_file(tmp_path / "news.tsv", rows), None)
    assert e.scored == {("n0", "n1"), ("n2", "n3"), ("n4", "n5"), ("n6", "n7")}
    assert e.held_out == {("n2", "n3"), ("n4", "n5")}
    assert e.training == {("n0", "n1")}
    assert (len(e.verdicts), e.source) == (0, "")


def test_the_pair_files_split_goes_before_the_kind_a_state_kept(tmp_path: Path) -> None:
    pairs = _pair_file(tmp_path / "news.tsv", [("n0", "n1", "0.5", "train"), ("n2", "n3", "1", "validation")])
    kept = _kept_scored({("n0", "n1"): HELD_OUT, ("n2", "n3"): TRAINING, ("n4", "n5"): HELD_OUT})
    e = read_editors(pairs, None, kept)
    assert e.training == {("n0", "n1")}
    assert e.held_out == {("n2", "n3"), ("n4", "n5")}


def test_a_states_scored_pairs_kept_before_their_kind_are_read_and_other_columns_refused() -> None:
    e = read_editors(None, None, pd.DataFrame({"id_a": ["b", "c"], "id_b": ["a", "d"]}))
    assert e.scored == {("a", "b"), ("c", "d")}
    assert (e.training, e.held_out) == (frozenset(), frozenset())
    kinds = read_editors(
        None, None, _kept_scored({("a", "b"): "", ("c", "d"): TRAINING, ("e", "f"): HELD_OUT})
    )
    assert (kinds.training, kinds.held_out) == ({("c", "d")}, {("e", "f")})
    with pytest.raises(StateError, match="columns"):
        read_editors(None, None, pd.DataFrame({"id_a": ["a"], "id_b": ["b"], "score": ["1"]}))


def test_a_states_verdicts_count_as_scored_in_their_split() -> None:
    """A verdict's pair is scored; a verdict on a validation or test pair is held out, and a training
    verdict on a pair the state keeps as held out is no training pair."""
    kept = Verdicts.from_records(
        [Verdict("a", "b", 0.0), Verdict("c", "d", 1.0, split="validation"), Verdict("e", "f", 0.0)]
    ).frame()
    e = read_editors(None, kept, _kept_scored({("e", "f"): HELD_OUT}))
    assert e.scored == {("a", "b"), ("c", "d"), ("e", "f")}
    assert e.held_out == {("c", "d"), ("e", "f")}
    assert e.training == {("a", "b")}
    assert e.source == "the state"
    assert e.constraints().cannot_link == {("a", "b")}


def test_the_pair_files_verdict_replaces_the_states_copy_of_it(tmp_path: Path) -> None:
    """The state kept "same story" on n0/n1; an editor's file merged since says "not the same story"."""
    from nlsim.annotation.merge import merge_annotations

    pairs = _pair_file(tmp_path / "news.tsv", [("n8", "n9", "0.5", "train")])
    filled = tmp_path / "marks.csv"
    pd.DataFrame(
        {"id_a": ["n0"], "id_b": ["n1"], "text_a": ["Headline n0"], "text_b": ["Headline n1"], "score": ["0"]}
    ).to_csv(filled, index=False)
    merge_annotations(filled, pairs, log=lambda _: None)
    kept = Verdicts.from_records([Verdict("n0", "n1", 1.0)]).frame()
    e = read_editors(pairs, kept)
    assert e.constraints().must_link == frozenset()
    assert e.constraints().cannot_link == {("n0", "n1")}
    assert e.source == f"the state and {store_path(pairs)}"


def test_the_fingerprint_changes_with_the_verdict_store(tmp_path: Path) -> None:
    pairs = _pair_file(tmp_path / "news.tsv", [("n0", "n1", "0.5", "train")])
    assert editors_fingerprint(None) is None
    before = editors_fingerprint(pairs)
    store_path(pairs).write_text("pair_id,id_a,id_b,score\n", encoding="utf-8")
    assert editors_fingerprint(pairs) != before
