"""The model store under concurrency, kills and damage, through ``python -m nlsim pipeline``.

- a version reused by its training fingerprint is loaded (every file checked) before it is evaluated or
  promoted: a damaged one is refused by name, never promoted from the figures in ``store.json``;
- one chain at a time on a store (``models/lock.json``, the state folder's lock discipline): a second one
  is refused while the first lives, instead of both training and numbering the same version;
- ``history.jsonl`` is written whole and atomically; a promotion whose record a kill lost is recorded by
  the next run; a partial last line (an older writer's killed append) is kept as text in a record of its
  own, and the next record parses;
- what a killed save leaves (a ``.tmp-`` folder, a version without its ``store.json``) is swept by the
  next run.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nlsim.errors import StateError
from nlsim.io.lock import RunLock
from nlsim.io.model_store import ModelStore
from tests.chain.test_chain import make_data
from tests.command import command_env, nlsim, refused
from tests.faults import fault_env

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
CHAIN = ["--pairs", "pairs.tsv", "--model-store", "models", "--no-report"]
CHAIN += ["--base-model", FAST_MODEL, "--convert", "none", "--level", "0.8", "--epochs", "1"]
CHAIN += ["--cross-encoder-epochs", "1", "--threads", "1"]
HOLD = """
import sys, time
from nlsim.io.model_store import ModelStore
store = ModelStore(sys.argv[1])
store.claim()
lock = store.lock().acquire()
print("locked", flush=True)
time.sleep(600)
"""


def env(**more: str) -> dict[str, str]:
    return command_env(OMP_NUM_THREADS="1", **more)


def pipeline(folder: Path, *more: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """The chain on ``folder``'s data (``--threads 1``): in this process (:func:`tests.command.nlsim`), or in
    a process of its own on one thread where ``extra_env`` is given (a fault that kills it)."""
    if extra_env:
        return nlsim("pipeline", *CHAIN, *more, cwd=folder, OMP_NUM_THREADS="1", **extra_env)
    return nlsim("pipeline", *CHAIN, *more, cwd=folder)


def history(folder: Path) -> list[dict[str, object]]:
    lines = (folder / "models" / "history.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]  # every line parses


def data(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    make_data(folder, train=24, validation=16, test=8)
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store after one chain: version v0001 trained, registered and decided on."""
    folder = data(tmp_path_factory.mktemp("trained"))
    proc = pipeline(folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder


def copy_of(trained: Path, folder: Path) -> Path:
    shutil.copytree(trained, folder, symlinks=True)
    return folder


def only_version(folder: Path) -> Path:
    (version,) = ModelStore(folder / "models").versions()
    return version


# --- a reused version is loaded before it is promoted ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated-weights", "reranker-weights-deleted", "tokenizer-deleted"])
def test_a_damaged_reused_version_is_refused_not_promoted(trained: Path, tmp_path: Path, damage: str) -> None:
    folder = copy_of(trained, tmp_path / "chain")
    version = only_version(folder)
    if damage == "truncated-weights":
        weights = version / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
        name = "model.safetensors"
    elif damage == "reranker-weights-deleted":
        (version / "reranker" / "model.safetensors").unlink()
        name = "reranker/model.safetensors"
    else:
        (version / "tokenizer.json").unlink()
        name = "tokenizer.json"
    # the figures the store keeps for it say it is far better than anything: reused unread, it would win
    store = ModelStore(folder / "models")
    info = store.info(version)
    for figures in info["validation"].values():
        figures.update(spearman=99.0, f1=1.0, precision=1.0, recall=1.0)
    store.write_info(version, info)
    (folder / "models" / "CURRENT.json").unlink(missing_ok=True)  # the store started over: nothing promoted
    (folder / "models" / "history.jsonl").write_text("")
    records = (folder / "models" / "history.jsonl").read_bytes()
    refused(pipeline(folder), version.name, name, "--force-train", command="pipeline")
    assert not (folder / "models" / "CURRENT.json").exists()
    assert (folder / "models" / "history.jsonl").read_bytes() == records


# --- one chain at a time -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_chain_on_a_locked_store_is_refused(tmp_path: Path) -> None:
    folder = data(tmp_path / "chain")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder / "models")], env=env(), stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        t = time.perf_counter()
        proc = pipeline(folder)
        message = refused(
            proc, "model store", "models", "locked by another run", f"pid {holder.pid}", command="pipeline"
        )
        assert "lock.json" in message and time.perf_counter() - t < 60  # refused before any training
        assert not (folder / "models" / "versions").exists()
    finally:
        holder.kill()
        holder.wait()
    with RunLock(folder / "models", what="model store") as lock:  # a dead holder's lock is taken over
        assert lock.message is not None and "stale" in lock.message


@pytest.mark.slow
def test_two_chains_at_once_train_one_version(tmp_path: Path) -> None:
    folder = data(tmp_path / "chain")
    first = subprocess.Popen(
        [sys.executable, "-m", "nlsim", "pipeline", *CHAIN],
        cwd=folder,
        env=env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not (folder / "models" / "lock.json").exists():
        assert first.poll() is None and time.monotonic() < deadline, "the first chain never took the lock"
        time.sleep(0.05)
    second = pipeline(folder)
    _, err = first.communicate(timeout=900)
    assert first.returncode == 0, err[-2000:]
    refused(second, "model store", "locked by another run", command="pipeline")
    versions = ModelStore(folder / "models").versions()
    assert [v.name[:6] for v in versions] == ["v0001-"]
    assert len([r for r in history(folder) if r["decision"] != "unreadable record"]) == 1


# --- history and what killed runs leave --------------------------------------------------------------------


def test_history_is_rewritten_whole_and_a_torn_line_is_kept_as_text(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models")
    store.claim()
    store.log({"decision": "kept, not promoted", "candidate": "v0001-aaaaaaaa"})
    path = tmp_path / "models" / "history.jsonl"
    torn = '{"at": "2026-11-20T03:00:00+00:00", "decision": "prom'
    path.write_text(path.read_text() + torn)  # an older writer killed in the middle of an append
    store.log({"decision": "kept, not promoted", "candidate": "v0002-bbbbbbbb"})
    records = [json.loads(line) for line in path.read_text().splitlines()]
    kept = "kept, not promoted"
    assert [r["decision"] for r in records] == [kept, "unreadable record", kept]
    assert records[1]["text"] == torn and records[2]["candidate"] == "v0002-bbbbbbbb"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".history")]  # no temporary file left
    candidates = [r["candidate"] for r in store.history() if "candidate" in r]
    assert candidates == ["v0001-aaaaaaaa", "v0002-bbbbbbbb"]


@pytest.mark.parametrize("pointer", [None, "", '{"versio'])
def test_a_lost_or_torn_pointer_with_promotions_in_the_history_is_refused_not_read_as_zero_shot(
    tmp_path: Path, pointer: str | None
) -> None:
    """Without CURRENT.json a store reads as never promoted: daily runs would fall back to zero-shot and
    the next chain would gate a rejected model against zero-shot alone. The history knows better."""
    store = ModelStore(tmp_path / "models")
    store.claim()
    version = tmp_path / "models" / "versions" / "v0001-aaaaaaaa"
    version.mkdir(parents=True)
    store.register(version, {"fingerprint": "a" * 8})  # only a registered version can be current
    store.promote(version.name, "first")
    path = tmp_path / "models" / "CURRENT.json"
    path.unlink()
    if pointer is not None:
        path.write_text(pointer)
    with pytest.raises(StateError, match=r"last promotion recorded is v0001-aaaaaaaa") as err:
        store.current()
    assert '{"version": "v0001-aaaaaaaa"}' in str(err.value)
    path.write_text('{"version": "v0001-aaaaaaaa"}')  # what the message says to do
    assert store.current() == version
    fresh = ModelStore(tmp_path / "fresh")  # never promoted: no pointer is no error
    fresh.claim()
    assert fresh.current() is None


@pytest.mark.parametrize("left", ["older", "none"])
def test_a_lost_pointer_whose_last_promotion_is_gone_names_a_version_that_exists(
    tmp_path: Path, left: str
) -> None:
    """The advice to write the last promoted version back must name a version that is still in
    ``versions/`` (writing a missing one back fails), or say that none is left."""
    store = ModelStore(tmp_path / "models")
    store.claim()
    versions = tmp_path / "models" / "versions"
    for name in ("v0001-aaaaaaaa", "v0002-bbbbbbbb"):
        (versions / name).mkdir(parents=True)
        store.register(name, {"fingerprint": name[-8:]})
        store.promote(name, "better")
    shutil.rmtree(versions / "v0002-bbbbbbbb")  # the last promotion's folder removed by hand
    if left == "none":
        shutil.rmtree(versions / "v0001-aaaaaaaa")
    path = tmp_path / "models" / "CURRENT.json"
    path.unlink()
    with pytest.raises(StateError) as err:
        store.current()
    message = str(err.value)
    assert "v0002-bbbbbbbb" in message and "no longer in" in message, message
    assert 'write {"version": "v0002-bbbbbbbb"}' not in message, message
    if left == "none":
        assert "no promoted version is left" in message, message
        return
    assert 'write {"version": "v0001-aaaaaaaa"}' in message, message
    path.write_text('{"version": "v0001-aaaaaaaa"}')  # what the message says to do works
    assert store.current() == versions / "v0001-aaaaaaaa"


def test_a_line_torn_inside_a_character_is_kept_as_text(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models")
    store.claim()
    store.log({"decision": "kept, not promoted", "base_model": "/模型/e5"})
    path = tmp_path / "models" / "history.jsonl"
    path.write_bytes(path.read_bytes() + '{"at": "x", "reason": "模'.encode()[:-1])
    with store.lock():
        assert any("unreadable" in line for line in store.recover())
    assert [r["decision"] for r in store.history()] == ["kept, not promoted", "unreadable record"]


def test_a_torn_line_is_kept_as_text_by_the_next_run_even_without_a_decision(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models")
    store.claim()
    store.log({"decision": "kept, not promoted", "candidate": "v0001-aaaaaaaa"})
    path = tmp_path / "models" / "history.jsonl"
    path.write_text(path.read_text() + '{"at": "2026-11-20T03:00:00+00:00", "decision": "prom')
    with store.lock():
        done = store.recover()
    assert any("history.jsonl" in line and "unreadable" in line for line in done), done
    records = [json.loads(line) for line in path.read_text().splitlines()]  # every line parses
    assert [r["decision"] for r in records] == ["kept, not promoted", "unreadable record"]
    with store.lock():
        assert store.recover() == []  # once


@pytest.mark.slow
def test_a_promotion_whose_record_a_kill_lost_is_recorded_next_run(trained: Path, tmp_path: Path) -> None:
    folder = copy_of(trained, tmp_path / "chain")
    version = only_version(folder)
    (folder / "models" / "CURRENT.json").unlink(missing_ok=True)
    before = history(folder)
    promote = (
        "import sys; from nlsim.io.model_store import ModelStore; "
        "ModelStore(sys.argv[1]).promote(sys.argv[2], 'by hand')"
    )
    killed = subprocess.run(
        [sys.executable, "-c", promote, str(folder / "models"), version.name],
        env=env(**fault_env("promote")),
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert ModelStore(folder / "models").current() == version and history(folder) == before  # the record lost
    path = folder / "models" / "history.jsonl"
    path.write_text(path.read_text() + '{"at": "2026-11-20T03:00:00+00:00", "decis')  # and a torn line
    proc = pipeline(folder)  # same annotations and settings: v0001 reused, "already current"
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "already current" in proc.stderr and "history.jsonl" in proc.stderr
    records = history(folder)
    promoted = [r for r in records if r["decision"] == "promoted"]
    assert len(promoted) == 1 and promoted[0]["version"] == version.name and promoted[0]["recovered"]
    assert [r["decision"] for r in records].count("unreadable record") == 1
    assert records[: len(before)] == before
    again = pipeline(folder)  # recorded once, not at every run
    assert again.returncode == 0 and len([r for r in history(folder) if r["decision"] == "promoted"]) == 1


@pytest.mark.slow
@pytest.mark.parametrize("point", ["model-save", "register"])
def test_what_a_killed_save_leaves_is_swept(tmp_path: Path, point: str) -> None:
    folder = data(tmp_path / "chain")
    killed = pipeline(folder, **fault_env(point))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    versions = folder / "models" / "versions"
    left = sorted(p.name for p in versions.iterdir())
    if point == "model-save":
        assert len(left) == 1 and left[0].startswith(".v0001-") and ".tmp-" in left[0]
    else:
        assert len(left) == 1 and left[0].startswith("v0001-")
        assert not (versions / left[0] / "store.json").exists()
    proc = pipeline(folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert left[0] in proc.stderr and "killed" in proc.stderr  # the run says what it swept
    now = sorted(p.name for p in versions.iterdir())
    assert len(now) == 1 and now[0].startswith("v0001-") and (versions / now[0] / "store.json").is_file()
    assert ModelStore(folder / "models").find(ModelStore(folder / "models").info(now[0])["fingerprint"])


@pytest.mark.parametrize(
    ("pointer", "why"),
    [
        ('{"version": ', "not valid JSON"),
        ('["v0001-aaaaaaaa"]', "a JSON list, not an object"),
        ('"v0001-aaaaaaaa"', "a JSON string, not an object"),
        ("null", "a JSON null, not an object"),
        ('{"version": 1}', "it names no version"),
    ],
)
def test_a_damaged_pointer_is_named_with_what_to_do_wherever_it_is_read(
    tmp_path: Path, pointer: str, why: str
) -> None:
    """CURRENT.json that is not an object naming a version: every reader (the current version, the pointer's
    record, the rollback stack) names the file, why, and what to do; none fails on its shape."""
    store = ModelStore(tmp_path / "models")
    store.claim()
    (tmp_path / "models" / "CURRENT.json").write_text(pointer)
    for read in (store.current, store.current_record, store.previous):
        with pytest.raises(StateError, match=rf"CURRENT\.json: damaged: {why}.*nlsim models promote") as err:
            read()
        assert "delete" in str(err.value)


def test_a_pointer_written_back_by_hand_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A lost CURRENT.json is written back by hand from the one line of JSON the error gives; an editor
    that puts a UTF-8 byte-order mark first had the store refuse it as 'damaged: not valid JSON (Unexpected
    UTF-8 BOM)'. The pointer is read, and the version it names is current."""
    from nlsim.io.manifest import saved_folder

    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("ab" * 32)
    with saved_folder(version, "model") as tmp:
        (tmp / "config.json").write_text("{}")
    store.register(version, {"fingerprint": "ab" * 32})
    store.promote(version, "beats its zero-shot base")
    pointer = tmp_path / "models" / "CURRENT.json"
    pointer.write_text(pointer.read_text(encoding="utf-8"), encoding="utf-8-sig")
    assert store.current() == version and store.current_record()["version"] == version.name


@pytest.mark.parametrize("kind", ["report", "daily-report", "model", "state", "learning-curve"])
def test_a_folder_nlsim_wrote_as_another_kind_is_not_taken_for_a_model_store(
    tmp_path: Path, kind: str
) -> None:
    """Read as a store, a report folder would be one where no model was ever promoted, and the advice
    would be to train into it: it is named as what it is, and nothing is written into it."""
    from nlsim.errors import ConfigError
    from nlsim.io.ownership import claim_folder

    claim_folder(tmp_path / "x", kind)
    store = ModelStore(tmp_path / "x")
    with pytest.raises(ConfigError, match=r"--model-store .*x is a .*, not a model store") as err:
        store.check_kind()
    assert kind.replace("-", " ") in str(err.value)
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == [".nlsim.json"]  # nothing written
    ModelStore(tmp_path / "models").check_kind()  # not there yet: a store the chain makes
    claim_folder(tmp_path / "models", "model-store")
    ModelStore(tmp_path / "models").check_kind()


def test_the_promote_command_a_lost_pointer_gives_runs_as_printed_from_a_path_with_a_space(
    tmp_path: Path,
) -> None:
    """The command in the advice is one a shell runs as printed: a store path with a space is quoted."""
    import shlex

    root = tmp_path / "news models"
    store = ModelStore(root)
    store.claim()
    (root / "versions" / "v0001-aaaaaaaa").mkdir(parents=True)
    store.register("v0001-aaaaaaaa", {"fingerprint": "aaaaaaaa"})
    store.promote("v0001-aaaaaaaa", "better")
    (root / "CURRENT.json").unlink()
    with pytest.raises(StateError) as err:
        store.current()
    said = str(err.value).split("run nlsim models promote ", 1)[1].split(" --reason", 1)[0]
    assert shlex.split(said) == ["v0001-aaaaaaaa", "--model-store", str(root)], said
