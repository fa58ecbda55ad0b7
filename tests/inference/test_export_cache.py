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


def test_an_export_recorded_with_an_empty_sha256_is_not_made_and_is_exported_again() -> None:
    """A manifest whose model.onnx has an empty SHA-256 (written by hand, by another tool) vouches for
    nothing: the hash it records is compared, not skipped, so the export does not count as made and opening
    it exports the model again."""
    target = _target()
    folder = _export(target)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["model.onnx"]["sha256"] = ""
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert not export_made(target)
    _export(target, b"exported again")  # as onnx_runner opens it: verified, else built anew
    assert (folder / "model.onnx").read_bytes() == b"exported again" and export_made(target)


def test_a_killed_export_leaves_nothing_a_run_takes_and_the_next_export_clears_it() -> None:
    """An export killed while it wrote model.onnx leaves its temporary folder beside the cache's, holding the
    half-written file: no run takes it (the export's place is empty: not made), and the next export removes
    it."""
    target = _target()
    place = export_cache() / target.export_name()
    killed = place.parent / f".{place.name}.tmp-k1ll3d00"
    killed.mkdir(parents=True)
    (killed / "model.onnx").write_bytes(b"half an exp")
    assert not export_made(target) and not place.exists()
    _export(target)
    assert export_made(target) and not killed.exists()


def test_two_exports_at_once_never_show_a_half_written_model() -> None:
    """Two processes exporting the same model at once, with no lock between them: each writes into a
    temporary folder of its own and renames it into place whole, so a run reading the export in between
    sees no export (and makes its own) or a whole one, never the other's half-written file; the later
    rename replaces the earlier export whole, and neither leaves anything behind. The second exporter
    here runs while the first is half-way through writing its model.onnx."""
    target = _target()
    place = export_cache() / target.export_name()
    whole = b"an exported graph " * 1000
    seen: dict[str, object] = {}

    def first(tmp: Path) -> None:
        (tmp / "model.onnx").write_bytes(whole[: len(whole) // 2])  # half-way through
        seen["while half-written"] = export_made(target)
        _export(target, whole)  # another process exports the same model meanwhile, and ends first
        seen["after the other ended"] = export_made(target)
        seen["its model"] = (place / "model.onnx").read_bytes()
        seen["own temporary kept"] = tmp.is_dir()  # the other's sweep spares a live writer's folder
        (tmp / "model.onnx").write_bytes(whole)
        (tmp / "check.json").write_text('{"max_abs_diff": 1e-06}\n', encoding="utf-8")

    ensure_model_folder(place, first, source=export_source(target), rebuild=True)
    assert seen == {
        "while half-written": False,
        "after the other ended": True,
        "its model": whole,
        "own temporary kept": True,
    }
    assert export_made(target) and (place / "model.onnx").read_bytes() == whole
    assert sorted(p.name for p in place.parent.iterdir()) == [place.name]  # no .tmp- or .old- left


def test_a_refusal_is_kept_for_its_weights_forgotten_when_the_export_passes_and_only_the_latest_kept() -> (
    None
):
    """A refusal answers only for the weights it was made for; an export that passes its check forgets its
    own refusal; a file of another format, or entries that are no record, count as no refusal; past
    KEEP_REFUSALS the oldest go."""
    pytest.importorskip("onnxruntime")
    import re

    from nlsim.inference.onnx import KEEP_REFUSALS, REFUSALS, export_refusal, keep_refusal

    cache = export_cache()
    target, other = _target(), _target("f" * 64)
    keep_refusal(target, cache, "")  # nothing to forget: no file written
    assert not (cache / REFUSALS).exists()
    keep_refusal(target, cache, "the export differs from torch by 0.2")
    said = export_refusal(target, cache)
    assert re.match(r"the export differs from torch by 0\.2; refused on \d{4}-\d\d-\d\d, not exported", said)
    assert export_refusal(_target("0123456789abcdef" * 3 + "f" * 16), cache) == ""  # same name, other weights
    keep_refusal(other, cache, "")  # nothing kept for it: the file is left alone
    assert export_refusal(target, cache)
    keep_refusal(target, cache, "")
    assert export_refusal(target, cache) == ""
    path = cache / REFUSALS
    keep_refusal(target, cache, "refused")
    kept = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**kept, "format": 99}), encoding="utf-8")
    assert export_refusal(target, cache) == ""
    kept["exports"]["bogus"] = "not a record"
    path.write_text(json.dumps(kept), encoding="utf-8")
    keep_refusal(other, cache, "refused too")
    assert "bogus" not in json.loads(path.read_text(encoding="utf-8"))["exports"]
    for i in range(KEEP_REFUSALS):
        keep_refusal(_target(f"{i:024x}" + "0" * 40), cache, f"refused {i}")
    names = list(json.loads(path.read_text(encoding="utf-8"))["exports"])
    assert len(names) == KEEP_REFUSALS and names[-1] == f"{KEEP_REFUSALS - 1:024x}"
    assert export_refusal(target, cache) == "" and export_refusal(_target("0" * 64), cache)


def test_old_exports_are_evicted_least_recently_used_first_and_only_those_nlsim_made(tmp_path: Path) -> None:
    """Past KEEP_EXPORTS, the exports used longest ago go; the folders kept this time, a folder without an
    export manifest and a temporary (dot) folder stay."""
    import os

    from nlsim.inference.onnx import KEEP_EXPORTS, evict_old_exports

    cache = export_cache()
    made = [_export(_target(f"{i:024x}" + "0" * 40)) for i in range(KEEP_EXPORTS + 3)]
    for age, folder in enumerate(made):  # made[0] used most recently
        os.utime(folder, (1_000_000 - age, 1_000_000 - age))
    (cache / "mine").mkdir()
    hidden = cache / ".tmp-export"
    hidden.mkdir()
    (hidden / "manifest.json").write_text((made[-1] / "manifest.json").read_text(encoding="utf-8"))
    os.utime(hidden, (1, 1))
    evict_old_exports(cache, keep=made[-1])
    left = sorted(p.name for p in cache.iterdir())
    expected = [f.name for f in made[: KEEP_EXPORTS - 1]] + [made[-1].name, "mine", ".tmp-export"]
    assert left == sorted(expected)


def test_only_the_exports_nlsim_made_are_dropped_from_the_old_probe_folder(tmp_path: Path) -> None:
    from nlsim.inference.onnx import drop_stand_in_exports

    made = _export(_target())
    root = tmp_path / "probes" / "onnx"
    root.mkdir(parents=True)
    made.rename(root / made.name)
    (root / "mine").mkdir()
    drop_stand_in_exports(tmp_path)
    assert [p.name for p in root.iterdir()] == ["mine"]
    (root / "mine").rmdir()
    drop_stand_in_exports(tmp_path)
    assert not root.exists()


@pytest.mark.parametrize(
    ("flags", "needed"),
    [("avx avx2 fma", True), ("avx avx2 avx512f avx512_vnni", False), ("neon asimd", False)],
)
def test_weights_are_quantized_to_seven_bits_only_on_an_x86_cpu_without_vnni(
    flags: str, needed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.inference.onnx import reduce_range_needed

    monkeypatch.setenv("NLSIM_CPU_FLAGS", flags)
    assert reduce_range_needed() is needed


def test_onnx_runtime_is_asked_for_fp32_or_int8_alone() -> None:
    pytest.importorskip("onnxruntime")
    from nlsim.errors import ConfigError
    from nlsim.inference.onnx import onnx_runner

    with pytest.raises(ConfigError, match="ONNX Runtime runs fp32 or int8, not 'bf16'"):
        onnx_runner(_target(), precision="bf16")
