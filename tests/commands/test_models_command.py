"""``nlsim models list|promote|rollback``: the pointer moved by hand, checked, locked and recorded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nlsim.errors import ConfigError
from nlsim.io.manifest import saved_folder
from nlsim.io.model_store import CURRENT, ModelStore
from tests import command
from tests.command import command_env, nlsim
from tests.flows.prefect_server import stop_process

FAST = "paraphrase-MiniLM-L3-v2"


def make_version(store: ModelStore, fingerprint: str, f1: float) -> Path:
    """A registered version: a saved folder (marker and manifest) with a store.json holding its figures."""
    folder = store.new_version_dir(fingerprint)
    with saved_folder(folder, "model") as tmp:
        (tmp / "config.json").write_text(json.dumps({"fingerprint": fingerprint}))
        (tmp / "calibration.json").write_text(json.dumps({"threshold": 0.8, "f1": f1}))
    key = "digest:none:1.0"
    figures = {"scorer": "cosine", "spearman": 80.0 + f1, "f1": f1, "cv_f1": f1 - 0.02}
    store.register(
        folder,
        {
            "fingerprint": fingerprint,
            "created": f"2026-11-2{len(store.versions())}T03:00:00+00:00",
            "validation": {key: figures},
        },
    )
    return folder


@pytest.fixture
def store(tmp_path: Path) -> ModelStore:
    """Versions v0001 (promoted by the chain), v0002 (kept), v0003 (promoted, current)."""
    s = ModelStore(tmp_path / "models")
    s.claim()
    v1, v2, v3 = (make_version(s, fp * 8, f1) for fp, f1 in (("a", 0.40), ("b", 0.38), ("c", 0.45)))
    s.promote(v1, "v0001 beats zero-shot")
    s.log({"decision": "kept, not promoted", "candidate": v2.name})
    s.promote(v3, "v0003 beats v0001")
    return s


def models(store: ModelStore, *args: str) -> subprocess.CompletedProcess[str]:
    return nlsim("models", *args, "--model-store", str(store.root), cwd=store.root.parent)


def test_list_shows_each_version_its_figures_and_the_current_one(store: ModelStore) -> None:
    proc = models(store, "list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"model store {store.root}: 3 version(s), current v0003-cccccccc"
    rows = {line.split()[1] if line.startswith("*") else line.split()[0]: line for line in lines[2:5]}
    assert rows["v0003-cccccccc"].startswith("* ") and rows["v0003-cccccccc"].endswith("current")
    assert " 0.400 " in rows["v0001-aaaaaaaa"] and rows["v0001-aaaaaaaa"].endswith("before")
    assert rows["v0002-bbbbbbbb"].endswith("never")
    assert lines[-1] == "nlsim models rollback would make v0001-aaaaaaaa current again"
    data = json.loads(models(store, "list", "--json").stdout)
    assert [r["version"] for r in data["versions"]] == ["v0001-aaaaaaaa", "v0002-bbbbbbbb", "v0003-cccccccc"]
    assert data["rollback_to"] == "v0001-aaaaaaaa" and data["rollback_refused"] is None


@pytest.mark.slow
def test_promote_and_rollback_move_the_pointer_and_record_who_and_why(store: ModelStore) -> None:
    proc = models(store, "promote", "v0002", "--reason", "v0003 splits the election stories")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"promoted v0002-bbbbbbbb in {store.root} (was v0003-cccccccc): v0003 splits the election stories"
    )
    assert store.current() == store.root / "versions" / "v0002-bbbbbbbb"
    last = store.history()[-1]
    assert last["decision"] == "promoted" and last["version"] == "v0002-bbbbbbbb"
    assert last["reason"] == "v0003 splits the election stories" and "@" in last["by"]
    assert last["command"] == "nlsim models promote" and last["replaced"] == "v0003-cccccccc"
    # rollback returns to the version promoted before, then one further back
    proc = models(store, "rollback", "--reason", "v0002 was worse")
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        == f"rolled back {store.root} from v0002-bbbbbbbb to v0003-cccccccc: v0002 was worse"
    )
    assert store.current().name == "v0003-cccccccc"
    assert store.history()[-1]["rolled_back"] == "v0002-bbbbbbbb"
    assert models(store, "rollback", "--reason", "back to the first").returncode == 0
    assert store.current().name == "v0001-aaaaaaaa"
    refused = command.refused(models(store, "rollback", "--reason", "again"), 2, "only version ever promoted")
    assert refused.startswith("nlsim models: error: model store ")
    # every line of the history parses, and the pointer names what the history last promoted
    assert store.last_promoted()["version"] == json.loads((store.root / CURRENT).read_text())["version"]


@pytest.mark.slow
def test_a_version_that_is_not_there_or_fails_its_manifest_is_refused_in_one_line(store: ModelStore) -> None:
    before = (store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()
    message = command.refused(models(store, "promote", "v0009", "--reason", "x"), 2, "has no version 'v0009'")
    assert message.endswith("(its versions: v0001-aaaaaaaa, v0002-bbbbbbbb, v0003-cccccccc)")
    (store.root / "versions" / "v0001-aaaaaaaa" / "config.json").write_text("{}")  # altered after its save
    message = command.refused(models(store, "promote", "v0001-aaaaaaaa", "--reason", "x"), 1, "config.json")
    assert "differs from the one recorded in manifest.json" in message or "bytes, not the" in message
    # the rollback goes to v0001 too: refused the same way
    command.refused(models(store, "rollback", "--reason", "x"), 1, "v0001-aaaaaaaa/config.json")
    unregistered = store.new_version_dir("dddddddd")
    with saved_folder(unregistered, "model") as tmp:
        (tmp / "config.json").write_text("{}")
    command.refused(models(store, "promote", "v0004", "--reason", "x"), 2, "is not registered")
    command.refused(
        nlsim("models", "list", "--model-store", "modles", cwd=store.root.parent),
        2,
        "'modles' does not exist",
    )
    assert ((store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()) == before


def test_a_folder_that_is_not_a_model_store_is_refused_and_nothing_is_written_into_it(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "a.txt").write_text("x")
    for args in (("promote", "v0001", "--reason", "x"), ("rollback", "--reason", "x"), ("list",)):
        message = command.refused(
            nlsim("models", *args, "--model-store", str(mine), cwd=tmp_path), 2, "is not a model store"
        )
        assert "no .nlsim.json" in message
        assert sorted(p.name for p in mine.iterdir()) == ["a.txt"]


HOLD = """
import sys, time
from nlsim.io.model_store import ModelStore
lock = ModelStore(sys.argv[1]).lock().acquire()
print("locked", flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_promotion_is_refused_while_a_chain_holds_the_store(store: ModelStore) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store.root)],
        env=command_env(),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = (store.root / CURRENT).read_bytes()
        command.refused(models(store, "promote", "v0002", "--reason", "x"), 1, "is locked by another run")
        assert (store.root / CURRENT).read_bytes() == before
    finally:
        stop_process(holder, grace=5)
    time.sleep(0.1)
    assert models(store, "promote", "v0002", "--reason", "x").returncode == 0


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[]", "store.json: damaged: a JSON list, not an object"),
        ("null", "store.json: damaged: a JSON null, not an object"),
        ("5", "store.json: damaged: a JSON number, not an object"),
        ('{"validation": [0.4]}', "store.json: field 'validation': not an object"),
        ('{"validation": {"digest:x": 0.4}}', "store.json: field 'validation.digest:x': not an object"),
        ('{"validation": {"k": {"f1": "n/a"}}}', "field 'validation.k.f1': 'n/a' is not a number"),
        (
            '{"created": {"at": "2026-11-22"}}',
            "store.json: field 'created': {'at': '2026-11-22'} is not text",
        ),
        (
            '{"validation": {"k": {"scorer": ["cosine"]}}}',
            "field 'validation.k.scorer': ['cosine'] is not text",
        ),
    ],
)
def test_a_version_whose_store_json_is_damaged_is_named_with_its_field_not_a_traceback(
    store: ModelStore, text: str, words: str
) -> None:
    (store.root / "versions" / "v0002-bbbbbbbb" / "store.json").write_text(text)
    message = command.refused(models(store, "list"), 1, words, alone=True)
    assert "v0002-bbbbbbbb" in message
    if "damaged" in words:  # not taken for a save never registered, nor promoted
        before = (store.root / CURRENT).read_bytes()
        command.refused(models(store, "promote", "v0002", "--reason", "x"), 1, words)
        assert (store.root / CURRENT).read_bytes() == before


@pytest.mark.parametrize("reason", ["", "   ", "\t\n"])
def test_a_blank_reason_is_refused_before_the_pointer_moves(store: ModelStore, reason: str) -> None:
    before = (store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()
    for args in (("promote", "v0002"), ("rollback",)):
        command.refused(models(store, *args, "--reason", reason), 2, "--reason is blank", alone=True)
    assert ((store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()) == before


def test_a_version_number_two_folders_share_is_named_as_such_and_odd_digits_are_no_traceback(
    store: ModelStore,
) -> None:
    versions = store.root / "versions"
    shutil.copytree(versions / "v0002-bbbbbbbb", versions / "v0002-dddddddd")  # a folder copied in by hand
    message = command.refused(models(store, "promote", "v0002", "--reason", "x"), 2, alone=True)
    assert "'v0002' is the number of several versions (v0002-bbbbbbbb, v0002-dddddddd)" in message
    assert "give its full name" in message
    for odd in ("v²", "³"):
        command.refused(
            models(store, "promote", odd, "--reason", "x"), 2, f"has no version {odd!r}", alone=True
        )
    assert store.current().name == "v0003-cccccccc"


def test_a_rollback_whose_version_is_gone_says_so_naming_the_history(
    store: ModelStore, tmp_path: Path
) -> None:
    shutil.move(store.root / "versions" / "v0001-aaaaaaaa", tmp_path / "v0001-aaaaaaaa")  # deleted by hand
    before = (store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()
    message = command.refused(models(store, "rollback", "--reason", "x"), 1, alone=True)
    assert "cannot roll back to v0001-aaaaaaaa, the version promoted before v0003-cccccccc" in message
    assert f"{store.root / 'history.jsonl'}" in message and "is no longer in" in message
    assert "nlsim models promote VERSION" in message
    assert ((store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()) == before


def test_a_pointer_at_a_version_never_registered_is_damaged_not_zero_shot(store: ModelStore) -> None:
    """CURRENT.json naming a folder without its store.json: the list said "current none (zero-shot)" while
    `dedup --model current` loaded that folder, and a rollback from it went through. Every reader now names
    the pointer and what to do (the last promoted version still registered); a promotion writes it anew."""
    (store.root / "versions" / "v0003-cccccccc" / "store.json").unlink()  # removed by hand
    before = (store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()
    for args in (("list",), ("list", "--json"), ("rollback", "--reason", "x")):
        message = command.refused(models(store, *args), 1, alone=True)
        assert "CURRENT.json points at 'v0003-cccccccc', which is not registered (no store.json" in message
        assert "the last promoted version still there is v0001-aaaaaaaa" in message, message
    assert ((store.root / CURRENT).read_bytes(), (store.root / "history.jsonl").read_bytes()) == before
    corpus = "id,title\nn1,颱風今晚登陸\nn2,颱風今晚登陸全台\n"
    (store.root.parent / "c.csv").write_text(corpus, encoding="utf-8")
    dedup = ("dedup", "--corpus", "c.csv", "--out", "r", "--model", "current", "--model-store", store.root)
    proc = nlsim(*dedup, cwd=store.root.parent)
    assert proc.returncode != 0 and "which is not registered" in proc.stderr, proc.stderr[-2000:]
    assert not (store.root.parent / "r").exists()
    proc = models(store, "promote", "v0001", "--reason", "v0003 lost its figures")
    assert proc.returncode == 0, proc.stderr
    assert "which is not registered" in proc.stderr and "this promotion writes it again" in proc.stderr
    assert store.current().name == "v0001-aaaaaaaa"


def test_a_promotion_whose_history_cannot_be_read_or_written_leaves_the_pointer_as_it_was(
    store: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = (store.root / CURRENT).read_bytes()
    history = store.root / "history.jsonl"
    kept = history.read_bytes()
    history.unlink()
    history.mkdir()  # cannot be read: as one another account wrote 0600
    command.refused(models(store, "promote", "v0002", "--reason", "x"), 1, "history.jsonl", alone=True)
    assert (store.root / CURRENT).read_bytes() == before
    history.rmdir()
    history.write_bytes(kept)

    def full(records: object) -> None:
        raise OSError(28, "No space left on device", str(history))

    monkeypatch.setattr(store, "_write_history", full)
    with pytest.raises(OSError, match="No space left"):
        store.promote(store.root / "versions" / "v0002-bbbbbbbb", "x")
    assert (store.root / CURRENT).read_bytes() == before and history.read_bytes() == kept
    (store.root / CURRENT).unlink()  # no model promoted yet: none is left behind either
    with pytest.raises(OSError, match="No space left"):
        store.promote(store.root / "versions" / "v0002-bbbbbbbb", "x")
    assert not (store.root / CURRENT).exists()


def test_the_list_offers_no_rollback_the_store_would_refuse(store: ModelStore) -> None:
    """After v0001 was promoted by hand over v0003, whose store.json had been removed, the list said
    'nlsim models rollback would make v0003-cccccccc current again', and the rollback was refused (not
    registered); the store's own promote() wrote such a pointer too, which every reader then refused."""
    (store.root / "versions" / "v0003-cccccccc" / "store.json").unlink()
    assert models(store, "promote", "v0001", "--reason", "v0003 lost its figures").returncode == 0
    last = models(store, "list").stdout.strip().splitlines()[-1]
    assert last.startswith("nlsim models rollback would be refused: v0003-cccccccc, promoted before"), last
    data = json.loads(models(store, "list", "--json").stdout)  # as the table says it: no rollback offered
    assert data["rollback_to"] is None, data
    assert data["rollback_refused"].startswith("v0003-cccccccc, promoted before v0001-aaaaaaaa, is no longer")
    message = command.refused(models(store, "rollback", "--reason", "x"), 2, alone=True)
    assert "v0003-cccccccc is not registered" in message and "removed by hand" in message, message
    before = (store.root / CURRENT).read_bytes()
    with pytest.raises(ConfigError, match="not registered"):
        store.promote("v0003-cccccccc", "by hand")
    assert (store.root / CURRENT).read_bytes() == before


def test_the_list_shows_each_versions_base_model_and_conversion_and_marks_one_whose_files_are_missing(
    store: ModelStore,
) -> None:
    """The list checked no file (a version whose calibration.json was gone was listed as any other, and
    promote or rollback then refused it) and did not say what each version was trained from."""
    trained = {"v0001-aaaaaaaa": ("multilingual-e5-small", "s2twp"), "v0003-cccccccc": (FAST, "none")}
    for name, (model, conversion) in trained.items():
        info = store.info(name)
        info["parts"] = {"base_model": "f" * 64, "training": {"model": model, "conversion": conversion}}
        store.write_info(name, info)
    versions = store.root / "versions"
    (versions / "v0001-aaaaaaaa" / "calibration.json").unlink()
    (versions / "v0002-bbbbbbbb" / "config.json").write_text("{")  # cut short
    lines = models(store, "list").stdout.splitlines()
    assert lines[1].split()[2:5] == ["base", "model", "convert"]
    rows = {line.split()[1] if line.startswith("*") else line.split()[0]: line for line in lines[2:5]}
    assert rows["v0001-aaaaaaaa"].split()[2:4] == ["multilingual-e5-small", "s2twp"]
    assert rows["v0001-aaaaaaaa"].endswith("before (not usable: missing: calibration.json)")
    assert rows["v0002-bbbbbbbb"].endswith("never (not usable: incomplete: config.json (1 of 27 bytes))")
    assert rows["v0003-cccccccc"].split()[3:5] == [FAST, "none"] and rows["v0003-cccccccc"].endswith(
        "current"
    )
    assert lines[-1].startswith("nlsim models rollback would be refused: v0001-aaaaaaaa, promoted before ")
    assert "(missing: calibration.json;" in lines[-1]
    data = {r["version"]: r for r in json.loads(models(store, "list", "--json").stdout)["versions"]}
    assert data["v0001-aaaaaaaa"]["files"] == "missing: calibration.json"
    assert (data["v0001-aaaaaaaa"]["base_model"], data["v0001-aaaaaaaa"]["conversion"]) == trained[
        "v0001-aaaaaaaa"
    ]
    assert data["v0003-cccccccc"]["files"] == "ok" and data["v0002-bbbbbbbb"]["base_model"] is None
    (versions / "v0003-cccccccc" / "manifest.json").unlink()  # the current one: said in the first line
    first = models(store, "list").stdout.splitlines()[0]
    assert first.endswith("current v0003-cccccccc (not usable: missing: manifest.json)"), first


def test_a_version_the_history_names_is_not_removed_as_a_killed_save(store: ModelStore) -> None:
    """v0003, once current, lost its store.json by hand; after v0001 was promoted over it as the message
    says, the next chain's recovery removed the folder as 'saved by a killed run, never registered' (a
    killed save never reaches history.jsonl). It is kept and named; a save never recorded still goes."""
    version = store.root / "versions" / "v0003-cccccccc"
    (version / "store.json").unlink()
    assert models(store, "promote", "v0001", "--reason", "v0003 lost its figures").returncode == 0
    killed = store.new_version_dir("d" * 8)
    with saved_folder(killed, "model") as tmp:
        (tmp / "config.json").write_text("{}")
    with store.lock():
        done = store.recover()
    assert version.is_dir() and not killed.exists(), done
    assert any(line.startswith(f"kept {version}: no store.json, though history.jsonl") for line in done), done
    assert any(line.startswith(f"removed {killed}: saved by a killed run") for line in done), done


def test_a_link_in_versions_is_not_said_removed_as_a_killed_save(store: ModelStore, tmp_path: Path) -> None:
    """A link to a model folder of the user's, put in versions/ by hand (no store.json): every chain's
    recovery said 'removed ...: saved by a killed run' while the link stayed (a link is not removed as a
    tree). A killed save is never a link: it is kept, and said so, and the folder it leads to untouched."""
    mine = tmp_path / "mine"
    shutil.copytree(store.root / "versions" / "v0002-bbbbbbbb", mine)
    (mine / "store.json").unlink()
    link = store.root / "versions" / "v0004-dddddddd"
    link.symlink_to(mine)
    with store.lock():
        done = store.recover()
    assert link.is_symlink() and (mine / "config.json").is_file()
    assert not any(line.startswith(f"removed {link}") for line in done), done
    assert any(line.startswith(f"kept {link}: a link to {mine}") for line in done), done


def test_a_lost_pointer_names_the_promote_command_that_restores_it(store: ModelStore) -> None:
    """The advice for a lost ``CURRENT.json`` gives ``nlsim models promote`` with the store and a reason
    (which records why in ``history.jsonl``), not only the JSON to write by hand, and that command, run as
    it reads, makes the last promoted version current again."""
    (store.root / CURRENT).unlink()
    message = command.refused(models(store, "list"), 1, "CURRENT.json is missing")
    said = f"nlsim models promote v0003-cccccccc --model-store {store.root} --reason WHY"
    assert said in message, message
    proc = nlsim(*said.split()[1:-1], "pointer lost", cwd=store.root.parent)
    assert proc.returncode == 0, proc.stderr
    assert store.current() == store.root / "versions" / "v0003-cccccccc"
    assert store.history()[-1]["reason"] == "pointer lost"


def with_parts(store: ModelStore, name: str, base: str, model: str, conversion: str) -> None:
    """Give a registered version the training parts a chain records: its base model and conversion."""
    info = store.info(name) or {}
    training = {"model": model, "conversion": conversion, "epochs": 2}
    store.write_info(name, {**info, "parts": {"annotations": "x", "base_model": base, "training": training}})


@pytest.mark.slow
def test_a_version_trained_from_another_base_model_or_conversion_is_said_when_it_becomes_current(
    store: ModelStore,
) -> None:
    with_parts(store, "v0001-aaaaaaaa", "fp-e5", "multilingual-e5-small", "s2twp")
    with_parts(store, "v0002-bbbbbbbb", "fp-e5", "multilingual-e5-small", "s2twp")
    with_parts(store, "v0003-cccccccc", "fp-minilm", "paraphrase-multilingual-MiniLM-L12-v2", "none")
    proc = models(store, "promote", "v0002", "--reason", "v0003 splits stories")
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout.strip().splitlines()
    assert said[0].startswith("promoted v0002-bbbbbbbb")
    assert said[1] == (
        "v0002-bbbbbbbb was trained from another base model (multilingual-e5-small, not "
        "paraphrase-multilingual-MiniLM-L12-v2) and another conversion (s2twp, not none) than "
        "v0003-cccccccc: the next daily run (--model current) embeds its window again, with the threshold "
        "calibrated for v0002-bbbbbbbb"
    )
    proc = models(store, "rollback", "--reason", "back")
    assert proc.returncode == 0, proc.stderr
    assert "v0003-cccccccc was trained from another base model (paraphrase-multilingual" in proc.stdout
    # the same base model and conversion: nothing more is said
    assert models(store, "promote", "v0002", "--reason", "again").returncode == 0
    assert models(store, "promote", "v0001", "--reason", "same base").stdout.strip().count("\n") == 0


@pytest.mark.parametrize("unwritable", ["", ".lock.guard"])
def test_a_store_this_user_cannot_write_is_refused_naming_it_before_the_pointer_moves(
    store: ModelStore, monkeypatch: pytest.MonkeyPatch, unwritable: str
) -> None:
    """A read-only store (root writes into one anyway: its permissions are simulated here)."""
    import os

    access = os.access
    blocked = store.root / unwritable if unwritable else store.root
    blocked.touch()  # the guard an earlier promotion left, here another user's
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == blocked else access(p, mode))
    before = sorted(p.name for p in store.root.iterdir()), (store.root / CURRENT).read_bytes()
    for args in (["promote", "v0002"], ["rollback"]):
        argv = ["models", *args, "--reason", "x", "--model-store", str(store.root)]
        message = command.refused(command.run_in_process(argv, store.root.parent), 1, alone=True)
        assert f"model store {store.root} cannot be written: {blocked} is not writable by " in message
        assert message.endswith(
            f"run nlsim models {args[0]} as the user whose nlsim pipeline writes the store, or make it "
            "writable (nlsim models list only reads it)"
        )
    assert (sorted(p.name for p in store.root.iterdir()), (store.root / CURRENT).read_bytes()) == before
    assert models(store, "list").returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["gone", "not-json"])
def test_a_promotion_over_a_lost_pointer_says_and_records_what_it_named(
    store: ModelStore, damage: str
) -> None:
    if damage == "gone":
        shutil.rmtree(store.root / "versions" / "v0003-cccccccc")
    else:
        (store.root / CURRENT).write_text('{"version": "v0003-cccccccc",')
    proc = models(store, "promote", "v0001", "--reason", "back to a version that is there")
    assert proc.returncode == 0, proc.stderr
    was = (
        "v0003-cccccccc, no longer a version of the store" if damage == "gone" else f"an unreadable {CURRENT}"
    )
    assert proc.stdout.strip() == (
        f"promoted v0001-aaaaaaaa in {store.root} (was {was}): back to a version that is there"
    )
    assert store.current().name == "v0001-aaaaaaaa"
    assert store.history()[-1].get("replaced") == ("v0003-cccccccc" if damage == "gone" else None)


@pytest.mark.parametrize("manifest", [None, "{", "[]"], ids=["missing", "cut-short", "a-list"])
def test_a_version_whose_manifest_is_lost_is_refused_saying_what_to_do(
    store: ModelStore, manifest: str | None
) -> None:
    path = store.root / "versions" / "v0001-aaaaaaaa" / "manifest.json"
    if manifest is None:
        path.unlink()
    else:
        path.write_text(manifest)
    before = (store.root / CURRENT).read_bytes()
    for args in (["promote", "v0001"], ["rollback"]):
        message = command.refused(models(store, *args, "--reason", "x"), 1, alone=True)
        assert message.startswith(f"nlsim models: error: {path}: ")
        assert message.endswith(
            "so the version's files cannot be checked; restore the folder from a backup, or train it again "
            "(nlsim pipeline --force-train)"
        )
    assert (store.root / CURRENT).read_bytes() == before


@pytest.mark.parametrize("text", ["{", '{"written_by": "nlsim"}', ""], ids=["cut-short", "no-kind", "empty"])
def test_a_store_whose_marker_is_damaged_is_named_as_such_not_as_missing(
    store: ModelStore, text: str
) -> None:
    (store.root / ".nlsim.json").write_text(text)
    before = (store.root / CURRENT).read_bytes()
    for args in (["list"], ["promote", "v0001", "--reason", "x"], ["rollback", "--reason", "x"]):
        message = command.refused(models(store, *args), 1, alone=True)
        assert message == (
            f"nlsim models: error: {store.root / '.nlsim.json'}: damaged (not the marker nlsim writes in a "
            "model store); if this is the folder nlsim pipeline fills, write "
            '{"written_by": "nlsim", "kind": "model-store"} into it, else give --model-store that folder'
        )
    assert (store.root / CURRENT).read_bytes() == before


def test_a_promotion_by_hand_over_a_pointer_a_killed_chain_left_unrecorded_records_it_first(
    store: ModelStore,
) -> None:
    """A chain killed between CURRENT.json and history.jsonl left v0002 current, unrecorded; a promotion by
    hand before the next chain replaced it and lost it: the rollback then went to v0003, not to v0002, the
    version the promotion replaced. The pointer's promotion is now recorded first (``recovered``)."""
    pointer = {"version": "v0002-bbbbbbbb", "promoted_at": "2026-11-24T03:00:00+00:00", "reason": "beats v3"}
    (store.root / CURRENT).write_text(json.dumps(pointer))  # what the killed chain wrote
    assert models(store, "promote", "v0001", "--reason", "v0002 splits stories").returncode == 0
    promoted = [r for r in store.history() if r.get("decision") == "promoted"]
    assert [r["version"] for r in promoted] == ["v0001-aaaaaaaa", "v0003-cccccccc", "v0002-bbbbbbbb"] + [
        "v0001-aaaaaaaa"
    ]
    assert promoted[2]["promoted_at"] == pointer["promoted_at"] and promoted[2]["recovered"]
    assert store.previous() == "v0002-bbbbbbbb"
    proc = models(store, "rollback", "--reason", "v0001 misses the market stories")
    assert proc.returncode == 0, proc.stderr
    assert store.current().name == "v0002-bbbbbbbb"


@pytest.mark.parametrize("name", ["v0002", "v0002-bbbbbbbb", "v2", "v0009"])
def test_a_version_name_given_to_dedup_model_names_its_folder_or_the_stores_versions(
    store: ModelStore, name: str
) -> None:
    """``--model v0002`` beside ``--model-store``: looked up as a Hugging Face hub name, refused as "unknown
    model ... could not be fetched from the hub (offline? ...)", which says nothing of the store's version. It
    names the version's folder and the promotion that makes it current, or the versions there are."""
    (store.root.parent / "c.csv").write_text(
        "id,title\nn1,颱風今晚登陸\nn2,颱風今晚登陸全台\n", encoding="utf-8"
    )
    dedup = ("dedup", "--corpus", "c.csv", "--out", "r", "--model", name, "--model-store", store.root)
    message = command.refused(nlsim(*dedup, cwd=store.root.parent), 2, f"--model {name}:", alone=True)
    assert "hub" not in message
    if name == "v0009":
        assert f"model store {store.root} has no version 'v0009'" in message
        assert "v0001-aaaaaaaa, v0002-bbbbbbbb, v0003-cccccccc" in message
    else:
        assert f"--model {store.root / 'versions' / 'v0002-bbbbbbbb'}" in message
        assert f"nlsim models promote v0002-bbbbbbbb --model-store {store.root}" in message
        assert "--model current" in message
    assert not (store.root.parent / "r").exists()


@pytest.mark.parametrize("where", ["store", "versions"])
def test_a_model_store_given_as_a_model_folder_is_named_as_a_store(store: ModelStore, where: str) -> None:
    """``--model models`` (the store, or its versions/ folder) was refused as "not a model folder (no
    config.json)", which says neither what the folder is nor what to give. It names the store, the
    ``--model current`` that reads its promoted model and the folder of the current version."""
    folder = store.root if where == "store" else store.root / "versions"
    (store.root.parent / "c.csv").write_text(
        "id,title\nn1,颱風今晚登陸\nn2,颱風今晚登陸全台\n", encoding="utf-8"
    )
    for args in (("dedup", "--out", "r", "--threshold", "0.9"), ("embed", "--out", "e.npy")):
        proc = nlsim(*args, "--corpus", "c.csv", "--model", folder, cwd=store.root.parent)
        message = command.refused(proc, 2, f"{folder}: a model store, not a model folder", alone=True)
        assert f"--model current --model-store {store.root}" in message
        assert str(store.root / "versions" / "v0003-cccccccc") in message
    assert not (store.root.parent / "r").exists() and not (store.root.parent / "e.npy").exists()


@pytest.mark.parametrize("given", [("--threshold", "0.9"), ("--calibration", "cal.json")])
def test_a_model_store_that_does_not_exist_is_named_whatever_threshold_is_given(
    tmp_path: Path, given: tuple[str, str]
) -> None:
    """``--model current --model-store modles`` (mistyped) with a threshold or a calibration file ran the
    zero-shot model, exit 0, the threshold meant for the promoted model applied to it: the store that is
    not there is named, whatever else is given, as without them."""
    (tmp_path / "c.csv").write_text("id,title\nn1,storm hits the coast\nn2,storm hits the coast tonight\n")
    cal = {"threshold": 0.8, "level": 0.8, "precision": 0.9, "recall": 0.9, "f1": 0.9, "n": 20}
    (tmp_path / "cal.json").write_text(json.dumps({**cal, "n_positive": 8}))
    args = ("dedup", "--corpus", "c.csv", "--out", "r", "--model", "current", "--model-store", "modles")
    message = command.refused(nlsim(*args, *given, cwd=tmp_path), 2, alone=True)
    assert "model store 'modles' does not exist (no such folder)" in message
    assert not (tmp_path / "r").exists() and not (tmp_path / "modles").exists()


@pytest.mark.parametrize("given", [(), ("--threshold", "0.9")])
def test_a_folder_of_other_files_given_as_the_model_store_is_not_read_as_one_never_promoted(
    tmp_path: Path, given: tuple[str, ...]
) -> None:
    """``--model current --model-store docs`` (a folder of the user's files, no store in it): read as a store
    where no model was ever promoted, it ran the zero-shot model with a threshold given, or sent the user to
    train one there (nlsim pipeline, which then refuses the folder). It is named as no model store."""
    (tmp_path / "c.csv").write_text("id,title\nn1,storm hits the coast\nn2,storm hits the coast tonight\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("mine")
    args = ("dedup", "--corpus", "c.csv", "--out", "r", "--model", "current", "--model-store", "docs")
    message = command.refused(nlsim(*args, *given, cwd=tmp_path), 2, alone=True)
    assert "model store 'docs' is not a model store nlsim wrote" in message and "notes.txt" in message
    assert "nlsim pipeline" in message and "ever promoted" not in message
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["notes.txt"]
    assert not (tmp_path / "r").exists()


def test_the_list_says_why_a_rollback_would_be_refused_when_none_was_promoted_before(tmp_path: Path) -> None:
    """``nlsim models list --json`` on a store whose only promotion is its current version (or that has no
    current model) gave ``rollback_to`` null and ``rollback_refused`` null, where operations.md says a null
    ``rollback_to`` comes with why in ``rollback_refused``: ``nlsim models rollback`` refuses both. Each
    gives the reason the rollback is refused with, and the table's last line says it too."""
    s = ModelStore(tmp_path / "models")
    s.claim()
    v1 = make_version(s, "a" * 8, 0.40)
    data = json.loads(models(s, "list", "--json").stdout)
    assert data["rollback_to"] is None
    assert data["rollback_refused"] == "no current model: nothing to roll back", data
    s.promote(v1, "v0001 beats zero-shot")
    data = json.loads(models(s, "list", "--json").stdout)
    assert data["rollback_to"] is None
    refused = "v0001-aaaaaaaa is the only version ever promoted; nothing to roll back to"
    assert data["rollback_refused"].startswith(refused), data
    last = models(s, "list").stdout.strip().splitlines()[-1]
    assert last.startswith(f"nlsim models rollback would be refused: {refused}"), last
    assert refused in command.refused(models(s, "rollback", "--reason", "x"), 2, alone=True)
