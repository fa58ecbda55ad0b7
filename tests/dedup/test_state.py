"""The state folder: versioned manifest, immutable generations, checksums, refusal of a foreign or broken
state with the way to rebuild it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.clusters.copies import COPY_KEY_VERSION
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.state import (
    MANIFEST,
    StateIdentity,
    open_state,
    read_manifest,
    remove_unfinished,
    state_summary,
)
from nlsim.errors import ConfigError, StateError
from nlsim.io.cells import SHOWN_TEXT_VERSION
from tests.incremental_helpers import HashEncoder, run_daily, split_days, state_assignment, story_corpus


def _config(corpus: Path, out: Path, **kw: object) -> DedupConfig:
    base = dict(
        model="hash", convert="none", threshold=0.7, k=20, cache=False, progress=False, text_fields=("title",)
    )
    base["cluster_rule"] = "components"  # story_corpus's bridge x1 joins A and B under this rule only
    base.update(kw)
    return DedupConfig.of(corpus=corpus, out=out, **base)


@pytest.fixture()
def two_days(tmp_path: Path) -> tuple[Path, list[Path]]:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    for d in days[:2]:
        run_daily(_config(d, tmp_path / "out"), tmp_path / "state", retention_days=None, encoder=enc)
    return tmp_path / "state", days


def _identity(enc: HashEncoder, **kw: object) -> StateIdentity:
    base = dict(
        model_id=enc.model_id,
        fingerprint=enc.fingerprint,
        dim=enc.dim,
        conversion="none",
        text_fields=("title",),
        threshold=0.7,
    )
    base.update(kw)
    return StateIdentity(**base)


def test_roundtrip_generations_and_previous_kept(two_days: tuple[Path, list[Path]]) -> None:
    state, _ = two_days
    enc = HashEncoder()
    st = open_state(state, _identity(enc))
    assert st.generation == 2 and len(st.items) == 9 and st.embeddings.shape == (9, enc.dim)
    assert st.index.ntotal == 9
    # rows of the index, the embeddings and the items line up
    sims, rows = st.index.search(st.embeddings[[5, 8]], 1)  # d1 and e1 have no copy
    assert rows[:, 0].tolist() == [5, 8] and st.items["id"].iloc[[5, 8]].tolist() == ["d1", "e1"]
    manifest = read_manifest(state)
    assert manifest["format_version"] == 2 and manifest["generation"] == 2
    gens = sorted(p.name for p in (state / "generations").iterdir())
    assert (
        manifest["generation_dir"] in gens and manifest["previous_generation_dir"] in gens and len(gens) == 2
    )
    assert state_summary(state)["items"] == 9


def test_unfinished_generation_is_ignored_and_removed(two_days: tuple[Path, list[Path]]) -> None:
    state, _ = two_days
    junk = state / "generations" / ".g000003-abcdef.tmp-x1y2z3"
    junk.mkdir()
    (junk / "items.parquet").write_bytes(b"half")
    orphan = state / "generations" / "g000003-fedcba"
    shutil.copytree(state / "generations" / read_manifest(state)["generation_dir"], orphan)
    assert open_state(state).generation == 2
    assert sorted(remove_unfinished(state)) == [".g000003-abcdef.tmp-x1y2z3", "g000003-fedcba"]
    assert not junk.exists() and not orphan.exists()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["g000000-000000/NOTES.txt", "g000003-fedcba/report/notes.txt"])
def test_a_generation_folder_holding_a_users_file_is_never_deleted(
    two_days: tuple[Path, list[Path]], where: str
) -> None:
    state, _ = two_days
    gens = state / "generations"
    shutil.copytree(gens / read_manifest(state)["generation_dir"], gens / "g000003-fedcba")
    notes = gens / where
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("my notes")
    with pytest.raises(StateError, match=re.escape(f"{notes} was not written by nlsim")):
        remove_unfinished(state)
    assert notes.read_text() == "my notes"


@pytest.mark.slow
@pytest.mark.parametrize(
    "victim",
    ["index/embeddings.npy", "index/index.faiss", "items.parquet", "pairs.parquet", "clusters.parquet"],
)
def test_truncated_file_is_refused_with_rebuild_hint(two_days: tuple[Path, list[Path]], victim: str) -> None:
    state, _ = two_days
    path = state / "generations" / read_manifest(state)["generation_dir"] / victim
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(StateError, match=r"truncated.*--rebuild-state") as err:
        open_state(state)
    assert "delete" not in str(err.value)  # one way out, the one that works: the index is the state's
    path.unlink()
    with pytest.raises(StateError, match=r"missing.*--rebuild-state") as err:
        open_state(state)
    assert "delete" not in str(err.value) and "build one first" not in str(err.value)


def test_flipped_byte_is_refused(two_days: tuple[Path, list[Path]]) -> None:
    state, _ = two_days
    path = state / "generations" / read_manifest(state)["generation_dir"] / "items.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match="corrupt"):
        open_state(state)


def test_garbage_manifest_and_unknown_version(two_days: tuple[Path, list[Path]]) -> None:
    state, _ = two_days
    good = (state / MANIFEST).read_text()
    (state / MANIFEST).write_text(good[:100])
    with pytest.raises(StateError, match="unreadable"):
        open_state(state)
    (state / MANIFEST).write_text(json.dumps({**json.loads(good), "format_version": 99}))
    with pytest.raises(StateError, match="format 99"):
        open_state(state)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_id": "other/model", "fingerprint": "0" * 64}, "model_id: state has 'test:hash-words'"),
        ({"dim": 768}, "dim: state has 256, this run uses 768"),
        ({"threshold": 0.8}, "threshold"),
        ({"conversion": "tw2sp"}, "conversion"),
    ],
)
def test_mismatched_state_refused(two_days: tuple[Path, list[Path]], change: dict, message: str) -> None:
    state, _ = two_days
    with pytest.raises(StateError, match=message) as err:
        open_state(state, _identity(HashEncoder(), **change))
    assert "--rebuild-state" in str(err.value)


@pytest.mark.slow
def test_run_with_other_model_reembeds_the_window_and_keeps_ids(
    two_days: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """No mixed vectors: a run with another model embeds the whole kept window again with it, says so,
    and keeps the cluster ids whose memberships survive."""
    state, days = two_days
    before = state_assignment(state)
    other = HashEncoder(dim=128)
    r = run_daily(_config(days[2], tmp_path / "out"), state, retention_days=None, encoder=other)
    st = open_state(state)
    assert st.identity.dim == 128 and st.embeddings.shape == (12, 128)
    assert set(st.items["embedded_run"]) == {r.run_id}  # every kept item embedded again, by this run
    switch = r.summary["model_switch"]
    assert switch["reembed"] and switch["reembedded"] == 12 and "dim" in switch["changed"]
    assert any("re-embedding the whole window" in m for m in r.messages)
    after = state_assignment(state)
    assert all(after[i] == c for i, c in before.items() if c == "c-c1")  # memberships that survive keep ids
    assert after["x1"] == after["a1"] == after["b1"]  # and today's items join as usual
    run = __import__("json").loads((tmp_path / "out" / "latest" / "run.json").read_text())
    assert run["model_switch"]["to_fingerprint"] == other.fingerprint


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"encoder": HashEncoder(dim=128)}, "none is new, but the whole window (9 items) is embedded again"),
        ({"threshold": 0.75}, "nothing new to embed; the window is paired again under the new settings"),
    ],
)
def test_a_day_run_again_with_another_model_says_the_window_is_embedded_again(
    two_days: tuple[Path, list[Path]], tmp_path: Path, change: dict[str, object], said: str
) -> None:
    """The day's items were all in the window, but the model changed: the run said "all 6 items ... were
    already in the window with the same text: nothing new to embed" just after "re-embedding the whole
    window", then embedded the whole window again. It says what it does: the window is embedded again with
    the new model (with only another threshold, the vectors stay and the window is paired again)."""
    state, days = two_days
    encoder = change.get("encoder", HashEncoder())
    config = _config(days[1], tmp_path / "out", threshold=change.get("threshold", 0.7))
    r = run_daily(config, state, retention_days=None, encoder=encoder)
    assert r.summary["model_switch"] and r.stats.all_seen
    seen = [m for m in r.messages if "were already in the window with the same text" in m]
    assert len(seen) == 1 and said in seen[0], r.messages
    page = (r.report_dir / "index.html").read_text(encoding="utf-8")
    notice = page.split("id='day-notice'>", 1)[1].split("</div>", 1)[0]
    assert "were already in the window with the same text" in notice
    if "encoder" in change:
        assert "nothing new to embed" not in seen[0] and "with the new model" in seen[0]
        assert "none was embedded again" not in notice and "embedded again with the new model" in notice


@pytest.mark.slow
def test_rebuild_state_moves_the_old_one_aside(two_days: tuple[Path, list[Path]], tmp_path: Path) -> None:
    state, days = two_days
    r = run_daily(
        _config(days[2], tmp_path / "out"),
        state,
        retention_days=None,
        encoder=HashEncoder(),
        rebuild_state=True,
    )
    assert any("moved the previous state" in m for m in r.messages)
    assert open_state(state).generation == 1
    assert len(list(state.glob("broken-*/generations"))) == 1


def test_the_rebuild_state_help_says_what_it_sets_aside_and_what_it_keeps() -> None:
    """``--rebuild-state``'s help said "move a broken state aside and build a fresh one": not that a sound
    state is set aside too, that it is kept, what comes back (the editors' verdicts) and what
    does not (the earlier days' items: the fresh window holds this run's corpus alone)."""
    from nlsim.dedup.config import DedupConfig
    from nlsim.options import options_of

    said = " ".join({o.name: o.help for o in options_of(DedupConfig)}["rebuild_state"].split())
    for words in ("broken or not", "kept there", "broken-<time>/", "verdicts", "this run's corpus alone"):
        assert words in said, words
    assert "earlier days' items are not read again" in said


@pytest.mark.slow
def test_a_rebuild_says_what_it_set_aside_and_that_the_fresh_window_holds_this_corpus_alone(
    two_days: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """The run said "moved the previous state to S/broken-...; building a fresh one": nothing of the two
    earlier days' items, which the fresh window no longer holds, nor that it was kept."""
    state, days = two_days
    r = run_daily(
        _config(days[2], tmp_path / "out"),
        state,
        retention_days=None,
        encoder=HashEncoder(),
        rebuild_state=True,
    )
    said = " ".join(m for m in r.messages if "moved the previous state" in m)
    moved = next(state.glob("broken-*"))
    assert f"to {moved}, kept there" in said
    assert f"from {days[2]} alone" in said and "earlier days' items are not in it" in said


def test_corrupt_state_never_used_by_a_run(two_days: tuple[Path, list[Path]], tmp_path: Path) -> None:
    state, days = two_days
    emb = state / "generations" / read_manifest(state)["generation_dir"] / "index" / "embeddings.npy"
    arr = np.load(emb)
    arr[0, 0] += 1.0  # same size, other content
    np.save(emb, arr)
    with pytest.raises(StateError, match="corrupt|differs"):
        run_daily(_config(days[2], tmp_path / "out"), state, retention_days=None, encoder=HashEncoder())


@pytest.mark.slow
def test_rebuild_state_recovers_from_a_garbage_manifest(
    two_days: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    state, days = two_days
    (state / MANIFEST).write_text("{not json")
    enc = HashEncoder()
    with pytest.raises(StateError, match="unreadable.*--rebuild-state"):
        run_daily(_config(days[2], tmp_path / "out"), state, retention_days=None, encoder=enc)
    r = run_daily(
        _config(days[2], tmp_path / "out"), state, retention_days=None, encoder=enc, rebuild_state=True
    )
    assert r.stats.counts.new == 3 and open_state(state).generation == 1


@pytest.mark.parametrize("runs", ["file", "broken-link"])
def test_a_state_whose_runs_folder_is_a_file_is_refused_before_its_commit(
    two_days: tuple[Path, list[Path]], tmp_path: Path, runs: str
) -> None:
    """A file (or a broken link) where the state keeps its ``runs/`` let the next day's run commit its
    generation, then end in a ``FileExistsError`` traceback writing the run's record, its report unwritten.
    It is now refused before any work, naming it, the state left as it was."""
    state, days = two_days
    shutil.rmtree(state / "runs")
    if runs == "file":
        (state / "runs").write_text("my notes")
    else:
        (state / "runs").symlink_to(tmp_path / "nowhere")
    before = _files(state)
    with pytest.raises(ConfigError, match=rf"^--state {re.escape(str(state))}: .*runs is not the folder"):
        run_daily(_config(days[2], tmp_path / "out"), state, retention_days=None, encoder=HashEncoder())
    assert _files(state) == before and open_state(state).generation == 2


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _drop_column(state: Path, table: str, column: str) -> Path:
    """Rewrite a table of the current generation without ``column``, as a hand edit would, with the
    manifest's SHA-256 and size of the file updated to match; the file's path."""

    from nlsim.io.atomic import file_sha256

    manifest = read_manifest(state)
    path = state / "generations" / manifest["generation_dir"] / table
    pd.read_parquet(path).drop(columns=[column]).to_parquet(path, index=False)
    manifest["files"][table] = {"sha256": file_sha256(path), "bytes": path.stat().st_size}
    (state / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return path


def _refused_line(state: Path, day: Path, out: Path) -> str:
    """The one line a daily run of ``day`` on the damaged ``state`` is refused with (a :class:`StateError`
    saying how to rebuild), the state's files left byte for byte as they were."""
    before = _files(state)
    with pytest.raises(StateError) as err:
        run_daily(_config(day, out), state, retention_days=None, encoder=HashEncoder())
    (line,) = str(err.value).splitlines()
    assert "--rebuild-state" in line
    assert _files(state) == before
    return line


@pytest.mark.parametrize(
    ("table", "column"),
    [("items.parquet", "content_hash"), ("pairs.parquet", "id_b"), ("clusters.parquet", "anchor_ns")],
)
def test_a_state_table_edited_by_hand_without_a_column_is_refused_naming_it(
    two_days: tuple[Path, list[Path]], tmp_path: Path, table: str, column: str
) -> None:
    """A generation's table rewritten by hand without one of its columns (the manifest's SHA-256 and size
    updated to match) ended the next run in a ``KeyError`` or ``AttributeError`` traceback. It is now
    refused as a damaged state, in one line naming the file and the column, with the way to rebuild, and
    the state is left as it was."""
    state, days = two_days
    path = _drop_column(state, table, column)
    line = _refused_line(state, days[2], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} has no column '{column}'")


def _rewrite(state: Path, table: str, edit: Callable[[pd.DataFrame], pd.DataFrame]) -> Path:
    """Rewrite a table of the current generation through ``edit``, as a hand edit would, with the manifest's
    SHA-256 and size of the file updated to match; the file's path."""
    from nlsim.io.atomic import file_sha256

    manifest = read_manifest(state)
    path = state / "generations" / manifest["generation_dir"] / table
    edit(pd.read_parquet(path)).to_parquet(path, index=False)
    manifest["files"][table] = {"sha256": file_sha256(path), "bytes": path.stat().st_size}
    (state / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return path


@pytest.mark.parametrize(
    ("table", "edit", "said"),
    [
        (
            "clusters.parquet",
            lambda t: t[t["cluster_id"] != "c-a1"],
            "items.parquet row 1, field 'cluster_id': 'c-a1'",
        ),
        (
            "items.parquet",
            lambda t: t.assign(cluster_id=t["cluster_id"].where(t["id"] != "b1", "c-zz")),
            "items.parquet row 2, field 'cluster_id': 'c-zz'",
        ),
        (
            "clusters.parquet",
            lambda t: pd.concat([t, t.iloc[[0]]]),
            "clusters.parquet row 4, field 'cluster_id'",
        ),
        (
            "pairs.parquet",
            lambda t: pd.concat([t, t.iloc[[0]].assign(id_b="ghost")]),
            "pairs.parquet row 5, field 'id_b': 'ghost'",
        ),
    ],
    ids=["cluster-row-deleted", "item-in-no-cluster", "cluster-row-twice", "pair-to-no-item"],
)
def test_a_state_table_whose_rows_were_edited_by_hand_out_of_step_with_the_others_is_refused_naming_the_row(
    two_days: tuple[Path, list[Path]],
    tmp_path: Path,
    table: str,
    edit: Callable[[pd.DataFrame], pd.DataFrame],
    said: str,
) -> None:
    """A cluster's row deleted from ``clusters.parquet`` (its items still naming it), an item put in a
    cluster no row holds, or a pair with an end that is no kept item (the manifest's checksums updated)
    ended the next run in a ``KeyError`` traceback; a cluster's row repeated, in an ``ArrowInvalid`` one.
    Each is now refused as a damaged state naming the file, the row and the field."""
    state, days = two_days
    _rewrite(state, table, edit)
    line = _refused_line(state, days[2], tmp_path / "out")
    assert line.startswith(
        f"state folder {state}: {state / 'generations' / read_manifest(state)['generation_dir']}/{said}"
    )


@pytest.mark.parametrize(
    ("table", "column", "edit"),
    [
        ("clusters.parquet", "anchor_ns", lambda t: t.assign(anchor_ns=t["anchor_ns"].astype(str))),
        ("clusters.parquet", "anchor_ns", lambda t: t.assign(anchor_ns=t["anchor_ns"].astype(float))),
        ("items.parquet", "published_at", lambda t: t.assign(published_at="yesterday")),
        ("pairs.parquet", "similarity", lambda t: t.assign(similarity="high")),
        ("items.parquet", "first_seen_run", lambda t: t.assign(first_seen_run=1)),
        ("pairs.parquet", "run_id", lambda t: t.assign(run_id=5)),
    ],
    ids=[
        "anchor-as-text",
        "anchor-as-float",
        "time-as-text",
        "score-as-text",
        "run-as-number",
        "pair-run-as-number",
    ],
)
def test_a_state_table_edited_by_hand_with_a_column_of_another_kind_is_refused_naming_it(
    two_days: tuple[Path, list[Path]],
    tmp_path: Path,
    table: str,
    column: str,
    edit: Callable[[pd.DataFrame], pd.DataFrame],
) -> None:
    """A kept table rewritten by hand with text for its anchors, times or scores (the manifest's checksums
    updated) ended the next run in a ``ValueError``, ``DateParseError`` or ``TypeError`` traceback; anchors
    as floats (which cannot hold a nanosecond time exactly) were taken as they were; numbers for the runs an
    item or a pair was first kept in ended it in an ``ArrowInvalid`` one as it wrote the day's generation.
    Each is now refused as a damaged state naming the file and the field."""
    state, days = two_days
    path = _rewrite(state, table, edit)
    line = _refused_line(state, days[2], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} field '{column}' holds ")


def test_a_state_kept_before_topic_groups_were_declared_reads_them_as_empty(
    two_days: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """``topic_id`` was declared after the state format: a state's items without it are no damage."""
    state, days = two_days
    _drop_column(state, "items.parquet", "topic_id")
    run = run_daily(_config(days[2], tmp_path / "out"), state, retention_days=None, encoder=HashEncoder())
    assert run.stats.counts.new == 3 and open_state(state).generation == 3


@pytest.fixture()
def editors_state(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A state of one day run with ``--annotated-pairs``: its generation keeps the editors' verdicts (two
    training verdicts of the pair file's store) and the pairs they scored."""
    from tests.dedup.test_daily import _scored_day_one, _store

    corpus = story_corpus()
    days = split_days(corpus, tmp_path / "in", ["2005-03-02", "2005-03-03"])
    pairs = _scored_day_one(tmp_path, corpus)
    _store(pairs, [("a1", "a3", 0.0), ("a2", "a3", 0.0)])
    config = _config(days[0], tmp_path / "out", annotated_pairs=str(pairs))
    run_daily(config, tmp_path / "state", retention_days=None, encoder=HashEncoder())
    return tmp_path / "state", days


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("verdicts.parquet", "id_a"),
        ("verdicts.parquet", "score"),
        ("verdicts.parquet", "decided_at"),
        ("verdicts.parquet", "annotator"),
        ("scored.parquet", "id_b"),
    ],
)
def test_the_editors_tables_of_a_state_edited_by_hand_without_a_column_are_refused_naming_it(
    editors_state: tuple[Path, list[Path]], tmp_path: Path, table: str, column: str
) -> None:
    """The state's verdicts rewritten without ``id_a`` or ``score`` were refused as an input file ("the
    state's verdicts: field 'id_a': missing column", exit status 2) naming neither the file nor the way to
    rebuild; without ``decided_at`` or ``annotator`` the run went on and kept its verdicts without when and
    by whom they were decided; its scored pairs without ``id_b`` said only "the state's scored pairs have
    columns ['id_a']". Each is now refused as every damaged table is, naming the file and the column."""
    state, days = editors_state
    path = _drop_column(state, table, column)
    line = _refused_line(state, days[1], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} has no column '{column}'")


@pytest.mark.parametrize("column", ["pair_id", "sha256_a", "earlier"])
def test_a_state_kept_before_the_verdicts_had_text_hashes_reads_them_as_empty(
    editors_state: tuple[Path, list[Path]], tmp_path: Path, column: str
) -> None:
    """The verdicts' hashes and earlier decisions were declared after the state format (their pair id is
    read from the two ids): a state's verdicts without one are no damage, and act as before."""
    state, days = editors_state
    _drop_column(state, "verdicts.parquet", column)
    run = run_daily(_config(days[1], tmp_path / "out"), state, retention_days=None, encoder=HashEncoder())
    assert run.stats.editors is not None and run.stats.editors.cannot_link == 2
    assert "a3" not in state_assignment(state) and len(open_state(state).verdicts) == 2


def _delete_kept(state: Path, table: str) -> Path:
    """Delete a file of the current generation and its manifest entry, as a hand edit would; its path."""
    manifest = read_manifest(state)
    path = state / "generations" / manifest["generation_dir"] / table
    path.unlink()
    del manifest["files"][table]
    (state / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return path


@pytest.mark.parametrize("table", ["verdicts.parquet", "scored.parquet"])
def test_the_editors_tables_of_a_state_deleted_by_hand_are_refused_naming_them(
    editors_state: tuple[Path, list[Path]], tmp_path: Path, table: str
) -> None:
    """The state's verdicts deleted with their manifest entry were read as a state that kept none: the next
    day's run put a3 back into a1's story against the editors' two "not the same story" verdicts, exit
    status 0; its scored pairs deleted, the review queue offered them again. Each is now refused as a
    damaged state naming the file (its run record counted verdicts, and scored pairs are kept with every
    editors' part), the state left as it was."""
    state, days = editors_state
    path = _delete_kept(state, table)
    line = _refused_line(state, days[1], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} is missing")


def test_a_state_kept_before_the_scored_pairs_were_keeps_its_verdicts_acting(
    editors_state: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """The scored pairs were kept after the verdicts, with ``overruled`` in the run's editors' part: a state
    whose last run's editors' part lacks it has no scored pairs, and its verdicts act as before."""
    state, days = editors_state
    _delete_kept(state, "scored.parquet")
    _edit_manifest(state, "last_run.editors.overruled", ...)
    run = run_daily(_config(days[1], tmp_path / "out"), state, retention_days=None, encoder=HashEncoder())
    assert run.stats.editors is not None and run.stats.editors.cannot_link == 2
    assert "a3" not in state_assignment(state)


def _edit_manifest(state: Path, key: str, value: object) -> None:
    """Set ``key`` of the manifest (``last_run.x``: of its last run) to ``value``; ``...`` drops it."""
    manifest = read_manifest(state)
    *outer, name = key.split(".")
    record = manifest
    for step in outer:
        record = record[step]
    if value is ...:
        del record[name]
    else:
        record[name] = value
    (state / MANIFEST).write_text(json.dumps(manifest, indent=1))


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("as_of", "x", "MANIFEST.json's as_of 'x' is not a time"),
        ("as_of", ..., "MANIFEST.json has no 'as_of'"),
        ("last_run", "x", "MANIFEST.json has 'x' for 'last_run'"),
        ("last_run.counts", "x", "MANIFEST.json's last_run has 'x' for 'counts'"),
        ("last_run.threshold", "0.7", "MANIFEST.json's last_run has '0.7' for 'threshold'"),
        ("last_run.counts.items_in", "6", "MANIFEST.json's last_run.counts has '6' for 'items_in'"),
        ("last_run.extra.merged_into", "x", "MANIFEST.json's last_run.extra has 'x' for 'merged_into'"),
        ("last_run.as_of", "x", "MANIFEST.json's last_run's as_of 'x' is not a time"),
        ("last_run.newest_day", "x", "MANIFEST.json's last_run's newest_day 'x' is not a time"),
        ("last_run.run_id", ..., "MANIFEST.json's last_run has no 'run_id'"),
        ("last_run.input_key", ..., "MANIFEST.json's last_run has no 'input_key'"),
        (
            "last_run.model_info.threshold_calibration",
            {"a": 1},
            "MANIFEST.json's last_run.model_info.threshold_calibration is no calibration nlsim wrote: "
            "it lacks the fields 'threshold', 'level', 'precision', 'recall', 'f1', 'n' and 'n_positive'; "
            "'a' is not a field nlsim reads",
        ),
        (
            "last_run.model_info.threshold_calibration",
            {"threshold": 0.7, "level": 1.0, "precision": 1, "recall": 1, "f1": 1, "n": 9, "n_positives": 3},
            "MANIFEST.json's last_run.model_info.threshold_calibration is no calibration nlsim wrote: "
            "it lacks the field 'n_positive'; 'n_positives' is not a field nlsim reads "
            "(did you mean 'n_positive'?)",
        ),
    ],
)
def test_a_manifest_edited_by_hand_without_a_key_or_with_a_string_for_a_number_is_refused_naming_it(
    two_days: tuple[Path, list[Path]], tmp_path: Path, key: str, value: object, said: str
) -> None:
    """A manifest whose clock was no time, or whose last run was a string or held one for its counts,
    ended the next run in a ``DateParseError`` or ``AttributeError`` traceback; the same day run again on
    a last run without its id, or with a string for its threshold, in a ``KeyError`` or ``ValueError``;
    without its input's key, the day was run a second time instead of its report written again; a string for
    one of its counts, or for its merged clusters, in a ``ValueError``; its model's calibration without a
    field in ``Calibration.__init__() missing 7 required positional arguments``. Each is now refused as a
    damaged state, in one line naming the key (and the calibration's fields), and the state is left as it
    was."""
    state, days = two_days
    _edit_manifest(state, key, value)
    line = _refused_line(state, days[1], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {said}")


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("identity.search", "k=20", "MANIFEST.json's identity has 'k=20' for 'search'"),
        ("identity.text_fields", 7, "MANIFEST.json's identity has '7' for 'text_fields', not the kind"),
        ("identity.threshold", "0.7", "MANIFEST.json's identity has '0.7' for 'threshold'"),
        ("identity.model_id", ..., "MANIFEST.json's identity has no 'model_id'"),
        ("identity", "x", "MANIFEST.json has 'x' for 'identity'"),
    ],
)
def test_a_manifest_identity_edited_by_hand_with_a_value_of_another_kind_is_refused_naming_it(
    two_days: tuple[Path, list[Path]], tmp_path: Path, key: str, value: object, said: str
) -> None:
    """The identity's search settings edited to a string were read as those of a state kept before they
    were (a change of ``--k`` or ``--window-hours`` then paired nothing again), a string for its threshold
    was taken as the number, and a number for its text fields was refused as a manifest that "lacks a
    field ('int' object is not iterable)". Each is now refused as every mistyped key is, naming it."""
    state, days = two_days
    _edit_manifest(state, key, value)
    line = _refused_line(state, days[1], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {said}")


def test_a_state_kept_before_its_search_settings_were_takes_them_to_match(
    two_days: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """``search`` was declared in the identity after the state format: a state without it is no damage, and
    a run with another ``--k`` on it takes the state's ``k`` to match. Such a state was written before the
    copy key and the reading of HTML were kept too, by an nlsim that grouped copies by the first copy key
    and embedded HTML as words: the window is embedded again for those alone."""
    state, days = two_days
    _edit_manifest(state, "identity.search", ...)
    run = run_daily(
        _config(days[2], tmp_path / "out", k=5), state, retention_days=None, encoder=HashEncoder()
    )
    switch = run.stats.model_switch
    assert run.stats.counts.new == 3 and switch is not None and switch.reembed
    assert switch.changed == ["copy_key", "markup"]  # not k
    assert read_manifest(state)["identity"]["search"] == {
        "k": 5,
        "window_hours": None,
        "copy_key": COPY_KEY_VERSION,
        "markup": SHOWN_TEXT_VERSION,
    }


def test_a_state_embedded_before_html_was_read_as_a_page_shows_it_is_embedded_again(
    two_days: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """A state whose vectors were made from texts with their HTML read as words (its identity names no
    ``markup``) would have mixed those vectors with today's, made from the texts as a page shows them: the
    next run embeds the whole window again, says why, and keeps the reading in the identity."""
    state, days = two_days
    _edit_manifest(state, "identity.search.markup", ...)
    r = run_daily(_config(days[2], tmp_path / "out"), state, retention_days=None, encoder=HashEncoder())
    switch = r.summary["model_switch"]
    assert switch["reembed"] and switch["reembedded"] == 12 and switch["changed"] == ["markup"]
    assert read_manifest(state)["identity"]["search"]["markup"] == SHOWN_TEXT_VERSION


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("report/clusters.parquet", "member_ids"),
        ("report/pairs.parquet", "id_a"),
        ("report/window.parquet", "representative"),
        ("report/frame.parquet", "id"),
    ],
)
def test_a_stored_report_table_edited_by_hand_without_a_column_is_refused_naming_it(
    two_days: tuple[Path, list[Path]], tmp_path: Path, table: str, column: str
) -> None:
    """The last run's report tables are kept to write its report again (the same day run again, or a run
    killed before its report): one rewritten without a column that report is written from ended that run
    in a ``KeyError`` or ``AttributeError`` traceback. It is now refused as a damaged state, in one line
    naming the file and the column, and the state is left as it was."""
    state, days = two_days
    path = _drop_column(state, table, column)
    # the day committed last, run again: its report written again
    line = _refused_line(state, days[1], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} has no column '{column}'")


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("report/clusters.parquet", "status"),
        ("report/window.parquet", "max_similarity"),
        ("report/pairs.parquet", "title_a"),
        ("report/pairs.parquet", "cross_encoder"),
    ],
)
def test_a_stored_report_table_without_a_column_every_state_keeps_is_refused_not_written_again_without_it(
    two_days: tuple[Path, list[Path]], tmp_path: Path, table: str, column: str
) -> None:
    """A stored report table rewritten by hand without a column every state keeps had its report written
    again without it (the clusters' status, the pairs' titles gone from the report), exit status 0. It is
    now refused as a damaged state naming the file and the column, the state left as it was."""
    state, days = two_days
    path = _drop_column(state, table, column)
    line = _refused_line(state, days[1], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} has no column '{column}'")


@pytest.mark.parametrize(
    ("table", "column"),
    [("report/pairs.parquet", "exact_copy"), ("report/clusters.parquet", "weakest_link")],
)
def test_a_state_kept_before_a_report_column_was_declared_writes_its_report_again(
    two_days: tuple[Path, list[Path]], tmp_path: Path, table: str, column: str
) -> None:
    """The pairs' ``exact_copy`` and the clusters' ``weakest_link`` were declared after the state format:
    a state whose report tables lack them is no damage, and its report is written again as it was kept."""
    state, days = two_days
    _drop_column(state, table, column)
    run = run_daily(_config(days[1], tmp_path / "out"), state, retention_days=None, encoder=HashEncoder())
    assert run.replayed and open_state(state).generation == 2


@pytest.fixture()
def reported_state(tmp_path: Path) -> tuple[Path, list[Path], dict[str, object]]:
    """A state of two day runs whose last report lists a near miss (n1 and n2 share six of nine words:
    cosine 0.67, under the 0.7 threshold) and a topic group (topic threshold 0.3); the days, and the
    settings the runs were made with."""

    corpus = story_corpus()
    titles = ["one two three four five six seven eight nine", "one two three four five six ten eleven twelve"]
    near = corpus.iloc[[6, 6]].assign(id=["n1", "n2"], title=titles)
    days = split_days(
        pd.concat([corpus, near], ignore_index=True), tmp_path / "in", ["2005-03-02", "2005-03-03"]
    )
    settings: dict[str, object] = {"topic_threshold": 0.3}
    for day in days[:2]:
        last = run_daily(
            _config(day, tmp_path / "out", **settings),
            tmp_path / "state",
            retention_days=None,
            encoder=HashEncoder(),
        )
    assert last.stats.counts.near_misses == 1 and last.stats.counts.topics == 1
    return tmp_path / "state", days, settings


@pytest.mark.parametrize("table", ["pairs", "clusters", "window", "frame", "near_misses", "topics"])
def test_a_stored_report_table_deleted_by_hand_is_refused_naming_it(
    reported_state: tuple[Path, list[Path], dict[str, object]], tmp_path: Path, table: str
) -> None:
    """A stored report table deleted with its manifest entry ended the same day run again in a
    ``FileNotFoundError`` traceback (the pairs, clusters, window and frame); without its near misses or
    topic groups the report was written again listing none, exit status 0. Each is now refused as a
    damaged state naming the file, the state left as it was."""
    state, days, settings = reported_state
    path = _delete_kept(state, f"report/{table}.parquet")
    before = _files(state)
    with pytest.raises(StateError) as err:
        run_daily(
            _config(days[1], tmp_path / "again", **settings),
            state,
            retention_days=None,
            encoder=HashEncoder(),
        )
    assert str(err.value).startswith(f"state folder {state}: {path} is missing") and "--rebuild-state" in str(
        err.value
    )
    assert _files(state) == before


def test_a_state_kept_before_near_misses_and_topic_groups_writes_its_report_again_without_them(
    reported_state: tuple[Path, list[Path], dict[str, object]], tmp_path: Path
) -> None:
    """The near misses and topic groups were kept after the state format, with their counts in the run
    record: a state whose last run counted neither lacks both tables, and its report is written again."""

    state, days, settings = reported_state
    for table in ("near_misses", "topics"):
        _delete_kept(state, f"report/{table}.parquet")
        _edit_manifest(state, f"last_run.counts.{table}", ...)
    run = run_daily(
        _config(days[1], tmp_path / "again", **settings), state, retention_days=None, encoder=HashEncoder()
    )
    assert run.replayed and len(pd.read_parquet(Path(run.report_dir) / "near_misses.parquet")) == 0


@pytest.mark.parametrize(("key", "value"), [("params", "nlist=4"), ("count", "9")])
def test_an_index_meta_json_edited_by_hand_with_a_string_for_an_object_or_a_number_is_refused_naming_it(
    two_days: tuple[Path, list[Path]], tmp_path: Path, key: str, value: str
) -> None:
    """The kept index's ``meta.json`` with a string for its parameters (its checksum updated in the
    manifest) ended the next run in a ``ValueError`` traceback; with a string for its count, the run was
    refused saying the index held 0 vectors. Each is now refused naming the file and the key."""
    state, days = two_days
    path = _edit_index_meta(state, key, value)
    line = _refused_line(state, days[2], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} has '{value}' for '{key}'")


def _edit_index_meta(state: Path, key: str, value: object) -> Path:
    """Set ``key`` of the current generation's index ``meta.json`` to ``value`` (``...`` drops it), with
    the manifest's SHA-256 and size of the file updated to match; the file's path."""
    from nlsim.io.atomic import file_sha256

    manifest = read_manifest(state)
    path = state / "generations" / manifest["generation_dir"] / "index" / "meta.json"
    meta = json.loads(path.read_text())
    if value is ...:
        del meta[key]
    else:
        meta[key] = value
    path.write_text(json.dumps(meta, indent=1))
    manifest["files"]["index/meta.json"] = {"sha256": file_sha256(path), "bytes": path.stat().st_size}
    (state / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return path


@pytest.mark.parametrize("key", ["kind", "params", "files", "count"])
def test_an_index_meta_json_edited_by_hand_without_a_key_is_refused_naming_it(
    tmp_path: Path, key: str
) -> None:
    """Every nlsim has written each key of an index's ``meta.json``. A state's IVF index whose ``meta.json``
    lost its ``kind`` (its checksum updated in the manifest) was read as an exact flat one: the next day's
    run searched the approximate index saying "exact flat", and kept it so labelled; without its
    ``params`` it was searched with none and rebuilt flat; without its ``files`` it was refused saying
    ``index.faiss`` is missing, without its ``count`` that the index held other vectors. Each is now
    refused naming the file and the key, the state left as it was."""
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    state = tmp_path / "state"
    config = _config(days[0], tmp_path / "out", index_kind="ivf", nlist=2)
    run_daily(config, state, retention_days=None, encoder=HashEncoder())
    assert open_state(state).index.kind == "ivf"
    path = _edit_index_meta(state, key, ...)
    line = _refused_line(state, days[1], tmp_path / "out")
    assert line.startswith(f"state folder {state}: {path} has no '{key}'")


def _manifest(folder: Path, **kw: object) -> None:
    """A manifest of generation 3 in ``folder`` (its files not there: read_manifest does not open them)."""
    data = {"format": "nlsim-state", "format_version": 2, "generation": 3, "generation_dir": "g000003-abcdef"}
    data.update(files={"run.json": {"bytes": 2, "sha256": "0" * 64}}, **kw)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("g000002-abcdef", "names generation folder 'g000002-abcdef' for generation 3"),
        ("g000030-abcdef", "names generation folder 'g000030-abcdef' for generation 3"),
        (".g000003-abcdef.tmp-x1y2z3", "names a generation folder '.g000003-abcdef.tmp-x1y2z3' that nlsim"),
    ],
)
def test_a_manifest_naming_another_generations_folder_or_a_half_written_one_is_refused(
    tmp_path: Path, name: str, said: str
) -> None:
    """The manifest's generation folder is the one its generation number names, finished: one of another
    number, or a killed run's half-written folder, is an edited manifest (a run would sweep the real one)."""
    _manifest(tmp_path / "ok")
    assert read_manifest(tmp_path / "ok")["generation_dir"] == "g000003-abcdef"
    _manifest(tmp_path / "bad", generation_dir=name)
    with pytest.raises(StateError, match=re.escape(said)):
        read_manifest(tmp_path / "bad")


def test_an_item_whose_topic_names_no_row_of_the_clusters_table_is_refused() -> None:
    """A kept item's topic id is checked as its cluster id is: one named by no row of clusters.parquet is a
    table edited by hand, refused naming the file, the row and the field."""
    from nlsim.dedup.state import check_rows

    items = pd.DataFrame({"id": ["a", "b"], "cluster_id": ["c-a", "c-a"], "topic_id": ["t-a", None]})
    pairs = pd.DataFrame({"id_a": ["a"], "id_b": ["b"]})
    clusters = pd.DataFrame({"cluster_id": ["c-a", "t-a"]})
    check_rows(Path("st"), Path("st/g1"), items, pairs, clusters)
    with pytest.raises(StateError, match=r"items.parquet row 2, field 'topic_id': 't-x'"):
        check_rows(Path("st"), Path("st/g1"), items.assign(topic_id=["t-a", "t-x"]), pairs, clusters)


def test_the_identity_tells_a_threshold_or_a_topic_threshold_apart_and_reads_absent_settings_as_defined() -> (
    None
):
    """A threshold a thousandth apart is another threshold; topic groups on in one and off in the other
    differ; a state kept before any search setting was differs from a run by the definitions alone (not by
    ``k``), and one kept without ``series_veto`` has it on, as a run with it on."""
    enc = HashEncoder()
    base = _identity(enc)
    assert base.differences(_identity(enc)) == []
    assert [d.split(":")[0] for d in base.differences(_identity(enc, threshold=0.7005))] == ["threshold"]
    topics = _identity(enc, topic_threshold=0.3)
    assert [d.split(":")[0] for d in base.differences(topics)] == ["topic_threshold"]
    assert [d.split(":")[0] for d in topics.differences(base)] == ["topic_threshold"]
    search = {"k": 30, "window_hours": 48, "copy_key": COPY_KEY_VERSION, "markup": SHOWN_TEXT_VERSION}
    run = _identity(enc, search={**search, "series_veto": True})
    assert [d.split(":")[0] for d in base.differences(run)] == ["copy_key", "markup"]
    assert _identity(enc, search=search).differences(run) == []


def test_only_a_killed_first_runs_leftovers_are_swept_from_a_state_without_a_manifest(tmp_path: Path) -> None:
    """A marked state without a manifest is swept when it holds what a killed first run leaves (a
    generation-1 folder, no run recorded); a later generation's folder, or a run's record beside it, is
    history: the state is refused with the way to rebuild it."""
    from nlsim.dedup.state import claim_state

    cases = {
        "first": ("g000001-abcdef", False),
        "later": ("g000002-abcdef", False),
        "ran": ("g000001-abcdef", True),
    }
    for case, (name, recorded) in cases.items():
        folder = tmp_path / case
        claim_state(folder)
        (folder / "generations" / name).mkdir(parents=True)
        if recorded:
            (folder / "runs").mkdir()
            (folder / "runs" / "r1.json").write_text("{}", encoding="utf-8")
        if case == "first":
            claim_state(folder)
            assert remove_unfinished(folder) == [name]
        else:
            with pytest.raises(StateError, match="MANIFEST.json is missing but generations are present"):
                claim_state(folder)


def test_a_commit_sweeps_old_generations_only_and_leaves_one_holding_a_users_file(tmp_path: Path) -> None:
    """After a commit, the generations older than the new one and the previous one go; a folder not named as
    nlsim names them, and an old generation holding a user's file, stay (the next run names the file)."""
    from nlsim.dedup.state import _drop_old_generations

    gens = tmp_path / "generations"
    for name in ("g000001-aaaaaa", "g000002-bbbbbb", "g000003-cccccc", "g000004-dddddd", "mine"):
        (gens / name).mkdir(parents=True)
    (gens / "g000002-bbbbbb" / "NOTES.txt").write_text("mine", encoding="utf-8")
    _drop_old_generations(gens, ("g000004-dddddd", "g000003-cccccc"))
    assert sorted(p.name for p in gens.iterdir()) == [
        "g000002-bbbbbb",
        "g000003-cccccc",
        "g000004-dddddd",
        "mine",
    ]


def test_a_rebuild_carries_the_editors_tables_of_the_generation_the_manifest_named_else_the_newest(
    tmp_path: Path,
) -> None:
    """The verdicts a rebuild keeps come from the generation the moved manifest named (the last committed),
    else, without a readable manifest, from the newest generation holding them."""
    from nlsim.dedup.state import carried_editors

    moved = tmp_path / "broken"
    for name, rows in (("g000001-aaaaaa", 1), ("g000002-bbbbbb", 2), ("g000003-cccccc", 3)):
        (moved / "generations" / name).mkdir(parents=True)
        frame = pd.DataFrame({"id_a": ["a"] * rows, "id_b": ["b"] * rows})
        frame.to_parquet(moved / "generations" / name / "verdicts.parquet")
    verdicts, scored, _ = carried_editors(moved)
    assert len(verdicts) == 3 and scored is None
    (moved / MANIFEST).write_text(json.dumps({"generation_dir": "g000002-bbbbbb"}), encoding="utf-8")
    verdicts, _, said = carried_editors(moved)
    assert len(verdicts) == 2 and "g000002-bbbbbb" in said


def test_a_state_reads_back_its_clock_and_refuses_items_out_of_step_with_its_index(
    two_days: tuple[Path, list[Path]],
) -> None:
    """The state's reference time comes back as committed (the clock a later ``--as-of`` may not go back
    from, and a quiet day keeps). A file named like a generation that is no folder is not swept (nor read
    as one), and items.parquet whose rows hold the index's ids in another order is refused: row n of the
    items is row n of the index."""
    state, _ = two_days
    st = open_state(state)
    assert st.as_of is not None and st.as_of == pd.Timestamp(read_manifest(state)["as_of"])
    stray = state / "generations" / "g000009-abcdef"
    stray.write_text("not a generation", encoding="utf-8")
    assert remove_unfinished(state) == [] and stray.is_file()
    _rewrite(state, "items.parquet", lambda t: t.iloc[::-1])
    with pytest.raises(StateError, match=r"items.parquet \(9 rows\) does not match the index ids"):
        open_state(state)
