"""ONNX Runtime backend: same vectors as torch, cached export, fallback when weights change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from nlsim.encoders import Encoder, load_encoder
from nlsim.errors import ConfigError

pytest.importorskip("onnxruntime")

TEXTS = [
    "A man is playing a guitar.",
    "x",
    "Stocks fell sharply on Monday as investors fled to bonds. " * 8,
    "中文新聞標題",
    "Floods hit the north.",
    "A person plays guitar.",
]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture()
def onnx_l3(home: Path, l3: Encoder) -> Encoder:
    return load_encoder(l3.path, backend="onnx", threads=1)


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [1, 4, 64])
def test_same_vectors_as_torch(onnx_l3: Encoder, l3: Encoder, batch_size: int) -> None:
    assert onnx_l3.options["backend"] == "onnx"
    a = onnx_l3.encode(TEXTS, batch_size=batch_size, progress=False)
    b = l3.encode(TEXTS, batch_size=batch_size, progress=False)
    assert a.dtype == np.float32 and a.shape == b.shape
    np.testing.assert_allclose(a, b, atol=1e-5)
    assert onnx_l3.fingerprint == l3.fingerprint  # the backend changes speed, not the numbers


@pytest.mark.slow
def test_export_is_cached_and_verified(home: Path, l3: Encoder) -> None:
    load_encoder(l3.path, backend="onnx")
    [folder] = list((home / "onnx").iterdir())
    model = folder / "model.onnx"
    stamp = model.stat().st_mtime_ns
    load_encoder(l3.path, backend="onnx")
    assert model.stat().st_mtime_ns == stamp  # reused, not exported again
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0x11
    model.write_bytes(bytes(data))
    enc = load_encoder(l3.path, backend="onnx")  # corrupt: exported again
    np.testing.assert_allclose(enc.encode(TEXTS, progress=False), l3.encode(TEXTS, progress=False), atol=1e-5)


def test_falls_back_to_torch_when_weights_change(onnx_l3: Encoder) -> None:
    before = onnx_l3.encode(TEXTS[:2], progress=False)
    with torch.no_grad():
        onnx_l3.model.encoder.layer[0].intermediate.dense.weight.mul_(1.5)  # in place, like a step
    after = onnx_l3.encode(TEXTS[:2], progress=False)
    assert "backend" not in onnx_l3.options
    assert not np.allclose(before, after, atol=1e-3)
    feats = onnx_l3.tokenize(TEXTS[:2])
    with torch.no_grad():
        ref = torch.nn.functional.normalize(onnx_l3.embed(feats), dim=1).numpy()
    np.testing.assert_allclose(after, ref, atol=1e-5)


@pytest.mark.slow
def test_options(home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="backend"):
        load_encoder(l3.path, backend="tensorrt")
    with pytest.raises(ConfigError, match="int8"):
        load_encoder(l3.path, backend="onnx", quantize="int8")
    with pytest.raises(ConfigError, match="bf16"):
        load_encoder(l3.path, backend="onnx", precision="bf16")
    forced = load_encoder(l3.path, backend="torch")  # a forced backend is set up at load time
    assert (forced.options["backend"], forced.options["precision"]) == ("torch", "fp32")
    q = load_encoder(l3.path, quantize="int8")  # the old spelling of backend torch, precision int8
    assert q.choice.path == "torch-int8" and q.vectors_tag == "torch-int8"
    import nlsim.inference.onnx as ob

    monkeypatch.setattr(ob, "onnxruntime_available", lambda: False)
    enc = load_encoder(l3.path)  # auto without onnxruntime: torch
    enc.encode(["a"] * Encoder.AUTO_ONNX_MIN_TEXTS, batch_size=512, progress=False)
    assert enc.choice.path == "torch-fp32" and enc.options["backend"] == "torch"
    assert "onnxruntime" in enc.choice.excluded["onnx-fp32"]
    with pytest.raises(ConfigError, match="onnxruntime"):
        load_encoder(l3.path, backend="onnx")


@pytest.mark.slow
def test_auto_sets_up_onnx_only_for_big_jobs(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx512f")  # where ONNX Runtime's fp32 goes first
    enc = load_encoder(l3.path)  # backend="auto"
    monkeypatch.setattr(enc, "AUTO_ONNX_MIN_TEXTS", 5)
    small = enc.encode(TEXTS[:4], progress=False)
    assert "backend" not in enc.options and not (home / "onnx").exists()  # small job: torch, no export
    big = enc.encode(TEXTS, progress=False)
    assert enc.options["backend"] == "onnx" and (home / "onnx").is_dir()
    np.testing.assert_allclose(big[:4], small, atol=1e-5)
    np.testing.assert_allclose(big, l3.encode(TEXTS, progress=False), atol=1e-5)
    # without AVX-512 the two read at the same speed: a job too small to time them stays on torch, no export
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2")
    monkeypatch.setenv("NLSIM_HOME", str(home / "avx2"))
    plain = load_encoder(l3.path)
    monkeypatch.setattr(plain, "AUTO_ONNX_MIN_TEXTS", 5)
    plain.encode(TEXTS, progress=False)
    assert plain.options["backend"] == "torch" and not (home / "avx2" / "onnx").exists()


def test_a_small_auto_job_records_why_it_ran_on_torch_fp32(home: Path, l3: Encoder) -> None:
    """A run whose texts were too few to choose a path for (``backend="auto"``, under
    ``Encoder.AUTO_ONNX_MIN_TEXTS``) recorded its encoder's backend and precision with no inference path and
    no reason, where every chosen path, and the cross-encoder's small job, records why. It records torch
    fp32, why (a small job, its size and the size a path is chosen from) and what was asked."""
    from nlsim.models.choice import with_inference
    from nlsim.report.record import ModelInfo

    enc = load_encoder(l3.path)  # backend="auto", precision="fp32"
    assert with_inference(ModelInfo(), enc).inference is None  # no job yet: nothing ran, nothing to say
    enc.encode(TEXTS[:4], progress=False)
    enc.encode(TEXTS, progress=False)
    info = with_inference(ModelInfo(), enc)
    assert (info.backend, info.precision) == ("torch", "fp32") and info.inference is not None
    assert info.inference["path"] == "torch-fp32"
    assert info.inference["reason"] == "a small job: 6 texts, under the 1,000 a path is chosen for"
    assert info.inference["requested"] == {"backend": "auto", "precision": "fp32"}
    assert not (home / "onnx").exists() and enc.choice is None  # nothing chosen, nothing exported


@pytest.mark.slow
def test_old_exports_are_evicted(home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import nlsim.inference.onnx as ob

    monkeypatch.setattr(ob, "KEEP_EXPORTS", 2)
    cache = home / "onnx"
    cache.mkdir()
    from nlsim.io.manifest import write_manifest

    for i, name in enumerate(["old1", "old2", "old3"]):
        (cache / name).mkdir()
        (cache / name / "model.onnx").write_bytes(b"old")
        write_manifest(cache / name)  # an export nlsim made
        os.utime(cache / name, (1000 + i, 1000 + i))
    (cache / "mine").mkdir()  # a folder nlsim did not make: never deleted
    os.utime(cache / "mine", (900, 900))
    load_encoder(l3.path, backend="onnx")
    left = {p.name for p in cache.iterdir() if not p.name.startswith(".")}
    exports = {
        p.name for p in cache.iterdir() if (p / "model.onnx").is_file() and p.name.startswith("old") is False
    }
    assert len(exports) == 1 and left == exports | {"old3", "mine"}  # the new export, the newest old one
