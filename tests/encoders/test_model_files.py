"""Every file of a model folder nlsim saved is checked against the manifest written when it saved it.

Through the command line (``python -m nlsim dedup``): a folder without its ``tokenizer.json`` ran and
reported nonsense (every cosine >= 0.99); without ``reranker/tokenizer.json`` the cross-encoder's scores
changed silently; without ``reranker/`` the run fell back to the bi-encoder at its cosine threshold while the
page showed the reranker's figures. Each is now refused by name, exit status 1, nothing written. A folder
saved before manifests existed still loads (its weights checked against ``nlsim.json``), and a reranker
its training record names must be there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nlsim.encoders import load_encoder
from nlsim.errors import StateError
from nlsim.io.manifest import MANIFEST, read_manifest
from nlsim.io.model_store import ModelStore
from tests.command import nlsim, refused
from tests.stsb_helpers import stsb_sample

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
NEWS = """id,title,source
n1,Floods hit the north of the country,AP
n2,Floods hit the north of the country,AFP
n3,Stock markets fall sharply,Reuters
n4,Football club wins the cup,BBC
n5,Stock markets fall sharply on Monday,AP
"""


def dedup(folder: Path, model: str, *more: str) -> subprocess.CompletedProcess[str]:
    (folder / "news.csv").write_text(NEWS)
    args = ["dedup", "--corpus", "news.csv", "--out", "rep", "--model", model, "--convert", "none"]
    return nlsim(*args, "--no-cache", "--no-progress", *more, cwd=folder)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, fast_encoder) -> Path:  # noqa: ANN001
    """MiniLM-L3 saved by nlsim (``Encoder.save``)."""
    return fast_encoder.save(tmp_path_factory.mktemp("saved") / "m")


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder written by ``nlsim finetune``: the bi-encoder, its calibration and a reranker."""
    folder = tmp_path_factory.mktemp("finetuned")
    stsb_sample(train=16, validation=16, test=8).to_csv(folder / "pairs.tsv", sep="\t", index=False)
    args = ["finetune", "--pairs", "pairs.tsv", "--out", "m", "--model", FAST_MODEL, "--convert", "none"]
    args += ["--epochs", "1", "--cross-encoder-epochs", "1", "--batch-size", "8", "--level", "0.6"]
    proc = nlsim(*args, cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder / "m"


def copy(model: Path, folder: Path) -> Path:
    target = folder / "models" / "m"
    shutil.copytree(model, target)
    return target


def test_saving_writes_a_manifest_of_every_file(saved: Path) -> None:
    listed = set(read_manifest(saved)["files"])
    on_disk = {p.relative_to(saved).as_posix() for p in saved.rglob("*") if p.is_file()} - {MANIFEST}
    assert listed == on_disk and "tokenizer.json" in listed and "1_Pooling/config.json" in listed
    assert json.loads((saved / "nlsim.json").read_text())["manifest"] == MANIFEST


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "word"),
    [
        ("tokenizer.json", "tokenizer.json"),
        ("1_Pooling/config.json", "1_Pooling/config.json"),
        ("edit:tokenizer_config.json", "tokenizer_config.json"),
        ("edit:config.json", "config.json"),
        ("truncate:model.safetensors", "model.safetensors"),
        (MANIFEST, MANIFEST),
    ],
)
def test_a_missing_or_altered_file_is_refused(saved: Path, tmp_path: Path, how: str, word: str) -> None:
    model = copy(saved, tmp_path)
    action, _, name = how.rpartition(":")
    path = model / name
    if action == "edit":
        data = json.loads(path.read_text())
        data["nlsim_test_edit"] = 1  # still valid JSON: transformers would read it
        path.write_text(json.dumps(data))
    elif action == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.unlink()
    with pytest.raises(StateError, match="restore"):
        load_encoder(str(model), backend="torch")
    message = refused(dedup(tmp_path, "models/m", "--threshold", "0.9"), word, command="dedup")
    assert f"models/m/{name}" in message
    assert not (tmp_path / "rep" / "pairs.parquet").exists()


def before_manifests(model: Path) -> Path:
    """The folder as an nlsim that wrote no manifest saved it."""
    (model / MANIFEST).unlink()
    meta = json.loads((model / "nlsim.json").read_text())
    del meta["manifest"]
    (model / "nlsim.json").write_text(json.dumps(meta))
    return model


@pytest.mark.slow
def test_a_folder_saved_before_manifests_still_loads(saved: Path, tmp_path: Path) -> None:
    before_manifests(copy(saved, tmp_path))
    proc = dedup(tmp_path, "models/m", "--threshold", "0.9", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["pairs"] == 2


@pytest.mark.slow
def test_a_folder_nlsim_saved_that_lost_its_manifest_and_settings_is_refused(
    saved: Path, tmp_path: Path
) -> None:
    """A copy cut short, without ``manifest.json`` and ``nlsim.json`` but with nlsim's marker (nlsim writes
    all three when it saves a folder): loaded as a plain Hugging Face folder, its files unchecked, exit 0.
    It is refused naming the manifest."""
    model = copy(saved, tmp_path)
    (model / MANIFEST).unlink()
    (model / "nlsim.json").unlink()
    message = refused(
        dedup(tmp_path, "models/m", "--threshold", "0.9"), "models/m/manifest.json", command="dedup"
    )
    assert "missing" in message and "nlsim.json" in message
    assert not (tmp_path / "rep").exists()
    store = ModelStore(tmp_path / "store")  # the same copy as the current version of a model store
    store.claim()
    version = store.new_version_dir("cd" * 32)
    shutil.copytree(saved, version)
    store.write_info(version, {"fingerprint": "cd" * 32})
    store.promote(version, "test")
    (version / MANIFEST).unlink()
    (version / "nlsim.json").unlink()
    proc = dedup(tmp_path, "current", "--model-store", "store", "--threshold", "0.9")
    refused(proc, f"store/versions/{version.name}/manifest.json: missing", command="dedup")


@pytest.mark.slow
def test_a_folder_saved_before_manifests_needs_its_tokenizer(saved: Path, tmp_path: Path) -> None:
    """nlsim has always saved the fast tokenizer's ``tokenizer.json``: without it transformers builds another
    tokenizer from the vocabulary, and every cosine comes out near 1."""
    model = before_manifests(copy(saved, tmp_path))
    (model / "tokenizer.json").unlink()
    refused(dedup(tmp_path, "models/m", "--threshold", "0.9"), "models/m/tokenizer.json", command="dedup")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["reranker/tokenizer.json", "reranker/reranker.json", "reranker/model.safetensors", "reranker"]
)
def test_a_damaged_reranker_is_refused(finetuned: Path, tmp_path: Path, name: str) -> None:
    model = copy(finetuned, tmp_path)
    assert dedup(tmp_path, "models/m").returncode == 0  # intact, it runs (with its reranker)
    shutil.rmtree(tmp_path / "rep")
    target = model / name
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    refused(dedup(tmp_path, "models/m"), "reranker/", command="dedup")
    assert not (tmp_path / "rep" / "pairs.parquet").exists()
    # --no-rerank asks for the bi-encoder alone: the damaged reranker is not used, but the folder is
    # still the folder nlsim saved, minus files it listed: refused too
    refused(dedup(tmp_path, "models/m", "--no-rerank"), "reranker/", command="dedup")


@pytest.mark.slow
def test_the_promoted_model_without_its_reranker_is_refused(finetuned: Path, tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("ab" * 32)
    shutil.copytree(finetuned, version)
    store.write_info(version, {"fingerprint": "ab" * 32})
    store.promote(version, "test")
    before = dedup(tmp_path, "current", "--json")
    assert before.returncode == 0, before.stderr[-2000:]
    assert json.loads(before.stdout.strip().splitlines()[-1])["rerank"]  # the reranker scored the pairs
    shutil.rmtree(tmp_path / "rep")
    shutil.rmtree(version / "reranker")
    refused(dedup(tmp_path, "current"), "reranker/", command="dedup")
    # a folder saved before manifests: its training record names the reranker it was trained with
    before_manifests(version)
    refused(dedup(tmp_path, "current"), "reranker", "training.json", command="dedup")
    assert not (tmp_path / "rep" / "pairs.parquet").exists()
    proc = dedup(tmp_path, "current", "--no-rerank", "--json")  # the bi-encoder alone, asked for
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
def test_a_reranker_saved_before_manifests_needs_its_tokenizer(finetuned: Path, tmp_path: Path) -> None:
    model = before_manifests(copy(finetuned, tmp_path))
    (model / "reranker" / "tokenizer.json").unlink()
    refused(dedup(tmp_path, "models/m"), "models/m/reranker/tokenizer.json", command="dedup")
