"""The ONNX export cache as a run finds it: whether an export counts as made, and what a damaged or
half-written one leads to. The exports here are stand-in files (no model is exported): what is checked is
how the cache reads its folders, not what ONNX Runtime computes."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from nlsim.inference.onnx import export_cache, export_made, export_source
from nlsim.io.model_cache import ensure_model_folder


def _target(weights: str = "0123456789abcdef" * 4) -> SimpleNamespace:
    """What the export cache needs of a model: its weights' digest and its export folder's name."""
    return SimpleNamespace(weights=lambda: weights, export_name=lambda: weights[:24])


def _export(target: SimpleNamespace, data: bytes = b"an exported graph " * 1000) -> Path:
    """The folder an export of ``target`` is kept in, made as :func:`nlsim.inference.onnx.onnx_runner`
    makes it (the files written, then the manifest, then the folder renamed into place)."""

    def build(tmp: Path) -> None:
        (tmp / "model.onnx").write_bytes(data)
        (tmp / "check.json").write_text('{"max_abs_diff": 1e-06}\n', encoding="utf-8")

    return ensure_model_folder(export_cache() / target.export_name(), build, source=export_source(target))


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("damage", ["truncated", "same size, other bytes", "missing", "not listed"])
def test_an_export_whose_model_file_is_damaged_does_not_count_as_made(damage: str) -> None:
    """A small job takes torch fp32 first while the export is not made (it could not repay making it); an
    export whose model.onnx was cut short (a disk that filled, a copy stopped), altered or removed beside an
    intact manifest counted as made, so the job took ONNX, whose set-up then found the file damaged and
    exported the model again: the cost the rule is there to spare. Such an export is not made, nor one
    whose manifest does not list its model.onnx (nothing then vouches for the file)."""
    target = _target()
    model = _export(target) / "model.onnx"
    assert export_made(target)
    data = model.read_bytes()
    if damage == "truncated":
        model.write_bytes(data[: len(data) // 2])
    elif damage == "missing":
        model.unlink()
    elif damage == "not listed":
        manifest = json.loads((model.parent / "manifest.json").read_text(encoding="utf-8"))
        del manifest["files"]["model.onnx"]
        (model.parent / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    else:
        model.write_bytes(data[:-1] + b"?")
    assert not export_made(target)


def test_an_export_of_other_weights_or_of_none_is_not_made() -> None:
    _export(_target())
    assert not export_made(_target("f" * 64))
    (export_cache() / _target().export_name() / "manifest.json").unlink()
    assert not export_made(_target())
