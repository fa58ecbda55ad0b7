"""Converted-model cache: manifest verification, rebuild of corrupt folders, atomic builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlsim.encoders.minilm_l3_convert import ensure_minilm_l3
from nlsim.io.manifest import read_manifest
from nlsim.io.model_cache import ensure_model_folder, verify_folder


def _build_ab(tmp: Path) -> None:
    (tmp / "a.txt").write_text("alpha")
    (tmp / "sub").mkdir()
    (tmp / "sub" / "b.bin").write_bytes(b"\x00\x01\x02" * 100)


def test_build_writes_manifest_and_verifies(tmp_path: Path) -> None:
    folder = ensure_model_folder(tmp_path / "m", _build_ab, source="s1")
    manifest = read_manifest(folder)
    assert manifest is not None and manifest["source"] == "s1"
    assert set(manifest["files"]) == {"a.txt", "sub/b.bin"}
    assert verify_folder(folder, source="s1")
    assert not verify_folder(folder, source="s2")
    assert not [p for p in tmp_path.iterdir() if p.name != "m"], "temporary folders left behind"


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "manifest"])
def test_corrupt_folder_is_detected_and_rebuilt(tmp_path: Path, damage: str) -> None:
    calls = []

    def build(tmp: Path) -> None:
        calls.append(1)
        _build_ab(tmp)

    folder = ensure_model_folder(tmp_path / "m", build, source="s")
    target = folder / "sub" / "b.bin"
    if damage == "flip":  # same size, different bytes: only the hash can tell
        data = bytearray(target.read_bytes())
        data[10] ^= 0xFF
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:-1])
    elif damage == "delete":
        target.unlink()
    else:
        (folder / "manifest.json").write_text("{not json")
    assert not verify_folder(folder, source="s")
    assert verify_folder(folder, source="s", hashes=False) == (damage == "flip")
    ensure_model_folder(tmp_path / "m", build, source="s")
    assert len(calls) == 2
    assert verify_folder(folder, source="s")
    assert target.read_bytes() == b"\x00\x01\x02" * 100


def test_new_source_triggers_rebuild_and_good_folder_is_reused(tmp_path: Path) -> None:
    calls = []

    def build(tmp: Path) -> None:
        calls.append(1)
        _build_ab(tmp)

    ensure_model_folder(tmp_path / "m", build, source="v1")
    ensure_model_folder(tmp_path / "m", build, source="v1")
    assert len(calls) == 1
    ensure_model_folder(tmp_path / "m", build, source="v2")
    assert len(calls) == 2 and read_manifest(tmp_path / "m")["source"] == "v2"


def test_failed_build_leaves_nothing(tmp_path: Path) -> None:
    def bad(tmp: Path) -> None:
        (tmp / "half.bin").write_bytes(b"x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        ensure_model_folder(tmp_path / "m", bad, source="s")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_corrupt_converted_model_is_rebuilt(tmp_path: Path) -> None:
    folder = ensure_minilm_l3(root=tmp_path)
    weights = folder / "model.safetensors"
    good = weights.read_bytes()
    data = bytearray(good)
    data[len(data) // 2] ^= 0x55  # a flipped byte deep inside a weight tensor
    weights.write_bytes(bytes(data))
    assert not verify_folder(folder)
    again = ensure_minilm_l3(root=tmp_path)
    assert again == folder and verify_folder(folder)
    assert weights.read_bytes() == good
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["files"]["model.safetensors"]["size"] == len(good)


@pytest.mark.parametrize(
    "stamps",
    [
        "[]",
        "null",
        "5",
        '{"format": 1, "entries": []}',
        '{"format": 1, "entries": {"sha256:KEY": 5}}',
        '{"format": 1, "entries": {"sha256:KEY": {"stamps": "STAMPS"}}}',
        '{"format": 1, "entries": {"sha',
        "",
    ],
)
def test_a_damaged_file_stamps_json_is_remembered_again(
    stamps: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$NLSIM_HOME/file-stamps.json is a cache nlsim writes (docs/encoders.md): one holding JSON that is
    not an object, or entries that are not, stopped every model load with "AttributeError: 'list' object
    has no attribute 'get'" until the file was found and deleted by hand. It is read as remembering
    nothing: the hash is computed and the file written again whole."""
    from nlsim.io import model_cache

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("NLSIM_HOME", str(home))
    monkeypatch.setattr(model_cache, "SETTLED_NS", -1)  # every file counts as settled: it is remembered
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights" * 100)
    key = f"sha256:{weights.resolve()}"
    stamp = json.dumps([[str(weights.resolve()), model_cache._stamp(weights.resolve().stat())]])
    text = stamps.replace("KEY", str(weights.resolve())).replace('"STAMPS"', stamp)
    (home / model_cache.STAMPS).write_text(text, encoding="utf-8")
    assert model_cache.known_sha256(weights) == model_cache.file_sha256(weights)
    data = json.loads((home / model_cache.STAMPS).read_text(encoding="utf-8"))
    assert data["entries"][key]["value"] == model_cache.file_sha256(weights)
