"""The model store's rules, one at a time, on small folders (no model is trained): which folders are
versions and in what order, which version a fingerprint or a name finds, the pointer, the promotions as a
stack, the versions moved away by hand, and what the recovery after a killed run removes or keeps."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from nlsim.errors import ConfigError, StateError
from nlsim.io.manifest import saved_folder
from nlsim.io.model_store import CURRENT, STORE_JSON, VERSIONS, ModelStore
from nlsim.io.ownership import claim_folder


def _version(store: ModelStore, name: str, fingerprint: str | None = None, registered: bool = True) -> Path:
    """A saved version folder ``versions/NAME`` (a model's marker and manifest, one small file)."""
    folder = store.root / VERSIONS / name
    with saved_folder(folder, "model") as tmp:
        (tmp / "tokenizer.json").write_text('{"a": 1}')
    if registered:
        store.write_info(folder, {"fingerprint": fingerprint or name[-8:] * 2})
    return folder


@pytest.fixture
def store(tmp_path: Path) -> ModelStore:
    store = ModelStore(tmp_path / "models")
    store.claim()
    return store


def test_only_folders_named_as_versions_are_versions_in_number_order(store: ModelStore) -> None:
    for name in ("v10000-aaaaaaaa", "v9999-bbbbbbbb", "v0002-cccccccc"):
        _version(store, name)
    for name in ("v001-dddddddd", "v0003-eeeeeeee.bak", "v0004-ABCDEF12"):  # not names the store gives
        (store.root / VERSIONS / name).mkdir()
    (store.root / VERSIONS / "v0005-ffffffff").write_text("a file, not a folder")
    assert [v.name for v in store.versions()] == ["v0002-cccccccc", "v9999-bbbbbbbb", "v10000-aaaaaaaa"]
    assert store.new_version_dir("0123456789").name == "v10001-01234567"


def test_a_new_version_takes_the_number_after_the_highest_not_after_the_count(store: ModelStore) -> None:
    _version(store, "v0001-aaaaaaaa")
    _version(store, "v0003-bbbbbbbb")  # v0002 removed by hand
    assert store.new_version_dir("cccccccc").name == "v0004-cccccccc"


def test_a_fingerprint_trained_twice_finds_its_newest_version(store: ModelStore) -> None:
    _version(store, "v0001-aaaaaaaa", fingerprint="f" * 16)
    _version(store, "v0002-aaaaaaaa", fingerprint="f" * 16)  # trained again (--force-train)
    _version(store, "v0003-bbbbbbbb", fingerprint="e" * 16)
    assert store.find("f" * 16) == store.root / VERSIONS / "v0002-aaaaaaaa"


def test_a_full_name_finds_its_version_among_several_of_its_number(store: ModelStore) -> None:
    _version(store, "v0002-aaaaaaaa")
    _version(store, "v0002-bbbbbbbb")  # copied in by hand under a number the store had given
    assert store.named("v0002-bbbbbbbb").name == "v0002-bbbbbbbb"
    with pytest.raises(ConfigError, match="the number of several versions"):
        store.named("v0002")


def test_a_version_folder_given_by_a_relative_path_is_that_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = ModelStore("models")
    store.claim()
    version = store.new_version_dir("aaaaaaaa")  # models/versions/v0001-aaaaaaaa, relative as the root
    _version(store, version.name, registered=False)
    store.write_info(version, {"fingerprint": "a" * 16})
    assert json.loads((tmp_path / "models" / VERSIONS / "v0001-aaaaaaaa" / STORE_JSON).read_text()) == {
        "fingerprint": "a" * 16
    }
    assert store.info(version) == {"fingerprint": "a" * 16}


@pytest.mark.parametrize(
    ("pointer", "why"),
    [({"version": ""}, "names no version"), ({"version": "backup"}, "not a version in")],
    ids=["empty", "a folder not named as a version"],
)
def test_a_pointer_at_no_version_is_damaged(store: ModelStore, pointer: dict, why: str) -> None:
    backup = _version(store, "v0001-aaaaaaaa").rename(store.root / VERSIONS / "backup")
    assert (backup / STORE_JSON).is_file()
    (store.root / CURRENT).write_text(json.dumps(pointer))
    with pytest.raises(StateError, match=why):
        store.current()


def test_a_version_whose_file_changed_at_its_size_is_refused(store: ModelStore) -> None:
    folder = _version(store, "v0001-aaaaaaaa")
    assert store.checked_version("1") == folder
    (folder / "tokenizer.json").write_text('{"a": 2}')  # same size, other bytes
    with pytest.raises(StateError, match="tokenizer.json"):
        store.checked_version("1")


def test_the_promotions_replay_as_a_stack(store: ModelStore) -> None:
    store._write_history(
        [
            {"decision": "promoted", "version": "v0001-aaaaaaaa"},
            {"decision": "promoted", "version": "v0002-bbbbbbbb"},
            {"decision": "promoted", "version": "v0002-bbbbbbbb"},  # promoted again: once on the stack
            {"decision": "promoted", "version": "v0003-cccccccc"},
            {"decision": "promoted", "version": "v0002-bbbbbbbb", "rolled_back": "v0003-cccccccc"},
        ]
    )
    assert store.promotions() == ["v0001-aaaaaaaa", "v0002-bbbbbbbb"]
    assert store.previous() == "v0001-aaaaaaaa"
    _version(store, "v0004-dddddddd")
    (store.root / CURRENT).write_text(json.dumps({"version": "v0004-dddddddd"}))  # by hand, unrecorded
    assert store.promotions() == ["v0001-aaaaaaaa", "v0002-bbbbbbbb", "v0004-dddddddd"]
    assert store.previous() == "v0002-bbbbbbbb"


def test_a_version_is_demoted_by_hand_only_by_a_person_and_until_promoted_again(store: ModelStore) -> None:
    gate = {"decision": "promoted", "version": "v0002-bbbbbbbb", "replaced": "v0001-aaaaaaaa"}
    store._write_history([{"decision": "promoted", "version": "v0001-aaaaaaaa"}, gate])
    assert store.demoted_by_hand("v0001-aaaaaaaa") is None  # the chain's gate replaced it: no one's call
    by_hand = {"decision": "promoted", "version": "v0003-cccccccc", "replaced": "v0002-bbbbbbbb", "by": "ed"}
    store._write_history([*store.history(), by_hand])
    assert store.demoted_by_hand("v0002-bbbbbbbb") == by_hand
    store._write_history(
        [*store.history(), {"decision": "promoted", "version": "v0002-bbbbbbbb", "by": "ed"}]
    )
    assert store.demoted_by_hand("v0002-bbbbbbbb") is None  # promoted again since


def test_a_lost_pointer_names_the_latest_promoted_version_still_there(store: ModelStore) -> None:
    for name in ("v0001-aaaaaaaa", "v0002-bbbbbbbb"):
        _version(store, name)
    store._write_history(
        [
            {"decision": "promoted", "version": name, "promoted_at": f"2024-01-0{i}"}
            for i, name in enumerate(["v0001-aaaaaaaa", "v0002-bbbbbbbb", "v0003-cccccccc"], 1)
        ]
    )
    with pytest.raises(StateError, match="the last promoted version still there is v0002-bbbbbbbb"):
        store.current()


def test_recovery_removes_only_killed_saves(store: ModelStore) -> None:
    """A version without its store.json is removed as a killed save, unless it is no folder nlsim saved (a
    user's folder of a version's name) or the history names it as a version or a candidate."""
    killed = _version(store, "v0001-aaaaaaaa", registered=False)
    candidate = _version(store, "v0002-bbbbbbbb", registered=False)
    users = store.root / VERSIONS / "v0003-cccccccc"
    users.mkdir()
    (users / "notes.txt").write_text("mine")
    leftover = store.zero_shot_dir() / ".calibration.json.k3x_9a2b.tmp"
    leftover.parent.mkdir()
    leftover.write_text("{")
    store.log({"decision": "kept, not promoted", "candidate": candidate.name})
    done = store.recover()
    assert not killed.exists() and not leftover.exists()
    assert candidate.is_dir() and (users / "notes.txt").read_text() == "mine"
    assert any(str(leftover) in line for line in done), done


def test_a_pointer_moved_back_to_a_version_promoted_before_is_recorded_by_the_recovery(
    store: ModelStore,
) -> None:
    """A rollback killed between its pointer and its record: the history holds the version's first
    promotion, the pointer a later one of the same version; the recovery records the later one."""
    _version(store, "v0001-aaaaaaaa")
    store._write_history([{"decision": "promoted", "version": "v0001-aaaaaaaa", "promoted_at": "2024-01-01"}])
    pointer = {"version": "v0001-aaaaaaaa", "promoted_at": "2024-03-01", "reason": "rollback"}
    (store.root / CURRENT).write_text(json.dumps(pointer))
    done = store.recover()
    assert any("recorded the promotion of v0001-aaaaaaaa (2024-03-01)" in line for line in done), done
    assert store.history()[-1]["promoted_at"] == "2024-03-01"


def test_a_report_folder_from_before_markers_is_no_model_store(tmp_path: Path) -> None:
    report = tmp_path / "report"
    report.mkdir()
    (report / "pairs.csv").write_text("a,b\n")
    digest = hashlib.sha256(b"a,b\n").hexdigest()
    (report / "run.json").write_text(json.dumps({"files": {"pairs.csv": digest}}))
    assert "a report folder" in ModelStore(report).other_kind()
    claim_folder(tmp_path / "store", "model-store")
    assert ModelStore(tmp_path / "store").other_kind() is None
