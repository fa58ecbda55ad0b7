"""Embedding cache: keyed by texts + fingerprint + conversion + max_length; corrupt entries recomputed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nlsim.encoders.cache import EmbeddingCache, cache_key, texts_digest
from nlsim.errors import StateError

PARTS = {"texts": ["台灣新聞", "news"], "fingerprint": "f" * 64, "conversion": "tw2sp", "max_length": 256}


class Counter:
    def __init__(self, value: np.ndarray) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> np.ndarray:
        self.calls += 1
        return self.value


@pytest.fixture()
def emb() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(2, 8)).astype(np.float32)


def test_miss_then_hit_returns_same_array(tmp_path: Path, emb: np.ndarray) -> None:
    cache, fn = EmbeddingCache(tmp_path), Counter(emb)
    a, hit_a = cache.get_or_compute_parts(PARTS, fn)
    b, hit_b = cache.get_or_compute_parts(dict(PARTS), fn)
    assert (hit_a, hit_b, fn.calls) == (False, True, 1)
    assert np.array_equal(a, emb) and np.array_equal(b, emb) and b.dtype == np.float32


@pytest.mark.parametrize(
    "change",
    [
        {"texts": ["台灣新聞", "News"]},
        {"texts": ["news", "台灣新聞"]},
        {"fingerprint": "g" * 64},
        {"conversion": "none"},
        {"max_length": 128},
    ],
)
def test_every_key_part_matters(change: dict, tmp_path: Path, emb: np.ndarray) -> None:
    cache, fn = EmbeddingCache(tmp_path), Counter(emb)
    cache.get_or_compute_parts(PARTS, fn)
    _, hit = cache.get_or_compute_parts({**PARTS, **change}, fn)
    assert not hit and fn.calls == 2
    assert cache_key(PARTS) != cache_key({**PARTS, **change})


def test_texts_digest_is_boundary_safe() -> None:
    assert texts_digest(["ab", "c"]) != texts_digest(["a", "bc"])
    assert texts_digest([]) != texts_digest([""])


@pytest.mark.parametrize("damage", ["flip", "truncate", "no_sidecar", "bad_sidecar", "no_npy"])
def test_corrupt_entry_is_recomputed(damage: str, tmp_path: Path, emb: np.ndarray) -> None:
    cache, fn = EmbeddingCache(tmp_path), Counter(emb)
    cache.get_or_compute_parts(PARTS, fn)
    npy, meta = cache.paths(cache_key(PARTS))
    if damage == "flip":
        data = bytearray(npy.read_bytes())
        data[-3] ^= 0x40
        npy.write_bytes(bytes(data))
    elif damage == "truncate":
        npy.write_bytes(npy.read_bytes()[:-16])
    elif damage == "no_sidecar":
        meta.unlink()
    elif damage == "bad_sidecar":
        meta.write_text("{")
    else:
        npy.unlink()
    out, hit = cache.get_or_compute_parts(PARTS, fn)
    assert not hit and fn.calls == 2 and np.array_equal(out, emb)
    _, hit = cache.get_or_compute_parts(PARTS, fn)
    assert hit and fn.calls == 2  # the rewritten entry is good again


@pytest.mark.parametrize("sidecar", ["[]", "null", '"entry"', "3"])
def test_a_sidecar_that_is_json_but_not_an_object_is_a_damaged_entry(
    sidecar: str, tmp_path: Path, emb: np.ndarray
) -> None:
    """A sidecar holding JSON that is not an object (``null``, a list) stopped every run that embedded the
    same texts with "AttributeError: 'list' object has no attribute 'get'", until the file was found and
    deleted by hand; it is a damaged entry as any other: deleted, and the vectors computed again."""
    cache, fn = EmbeddingCache(tmp_path), Counter(emb)
    cache.get_or_compute_parts(PARTS, fn)
    cache.paths(cache_key(PARTS))[1].write_text(sidecar, encoding="utf-8")
    out, hit = cache.get_or_compute_parts(PARTS, fn)
    assert not hit and fn.calls == 2 and np.array_equal(out, emb)
    assert cache.get_or_compute_parts(PARTS, fn)[1] is True


def test_wrong_row_count_from_compute_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="rows"):
        EmbeddingCache(tmp_path).get_or_compute_parts(PARTS, lambda: np.zeros((3, 4), np.float32))
    assert list(tmp_path.glob("*.npy")) == []


def test_writes_are_atomic_no_temp_files(tmp_path: Path, emb: np.ndarray) -> None:
    EmbeddingCache(tmp_path).get_or_compute_parts(PARTS, Counter(emb))
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".npy"]


def test_encoder_form_uses_fingerprint_and_max_length(tmp_path: Path) -> None:
    class FakeEncoder:
        fingerprint = "abc"
        max_length = 64

        def __init__(self) -> None:
            self.calls = 0

        def encode(self, texts: list[str]) -> np.ndarray:
            self.calls += 1
            return np.ones((len(texts), 4), np.float32)

    cache, enc = EmbeddingCache(tmp_path), FakeEncoder()
    _, hit1 = cache.get_or_compute(["a", "b"], enc, "none")
    _, hit2 = cache.get_or_compute(["a", "b"], enc, "none")
    _, hit3 = cache.get_or_compute(["a", "b"], enc, "tw2sp")
    enc.max_length = 32
    _, hit4 = cache.get_or_compute(["a", "b"], enc, "none")
    assert (hit1, hit2, hit3, hit4, enc.calls) == (False, True, False, False, 3)


def test_default_root_under_nlsim_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    assert EmbeddingCache().root == tmp_path / "embeddings"


def test_a_cache_that_cannot_be_written_leaves_the_vectors_to_the_run(
    tmp_path: Path, emb: np.ndarray, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk under NLSIM_HOME (numpy's short write: '23040 requested and 4064 written') once the
    vectors are computed: the run gets them, and is told the cache did not keep them; no entry is left
    half written, so the next run computes them again."""
    import nlsim.encoders.cache as cache_module

    def full(path: object, arr: object) -> None:
        raise OSError("23040 requested and 4064 written")

    monkeypatch.setattr(cache_module, "atomic_save_npy", full)
    cache, fn = EmbeddingCache(tmp_path), Counter(emb)
    with caplog.at_level("WARNING", logger="nlsim"):
        out, hit = cache.get_or_compute_parts(PARTS, fn)
    assert np.array_equal(out, emb) and hit is False
    assert "not kept" in caplog.text and "23040 requested" in caplog.text
    monkeypatch.undo()
    assert cache.get_or_compute_parts(PARTS, fn)[1] is False and fn.calls == 2


def test_a_damaged_entry_in_a_cache_that_cannot_be_written_is_recomputed_not_a_traceback(
    tmp_path: Path, emb: np.ndarray, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A read-only NLSIM_HOME (a shared cache, a read-only mount) holding an entry that fails its check:
    the entry cannot be deleted, and the run stopped with 'PermissionError: [Errno 13] Permission denied'
    from the clean-up. The run computes the vectors, says the entry was neither removed nor replaced, and
    the damaged entry is never read as good (the next run computes again)."""
    cache, fn = EmbeddingCache(tmp_path), Counter(emb)
    cache.get_or_compute_parts(PARTS, fn)
    npy, _ = cache.paths(cache_key(PARTS))
    data = bytearray(npy.read_bytes())
    data[-3] ^= 0x40
    npy.write_bytes(bytes(data))
    unlink = Path.unlink

    def read_only(path: Path, missing_ok: bool = False) -> None:
        if path.parent == tmp_path:
            raise PermissionError(13, "Permission denied", str(path))
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", read_only)
    with caplog.at_level("WARNING", logger="nlsim"):
        out, hit = cache.get_or_compute_parts(PARTS, fn)
        again, hit_again = cache.get_or_compute_parts(PARTS, fn)
    assert np.array_equal(out, emb) and np.array_equal(again, emb)
    assert (hit, hit_again, fn.calls) == (False, False, 3)
    assert "Permission denied" in caplog.text and "not kept" in caplog.text


def test_a_cache_on_a_read_only_file_system_leaves_the_vectors_to_the_run(
    tmp_path: Path, emb: np.ndarray, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """NLSIM_HOME on a read-only file system (a mount, a container's image): deleting even a file that is
    not there fails (EROFS, not ENOENT), and the clean-up after the vectors could not be kept stopped the
    run with 'Read-only file system' naming the sidecar, where the run is to go on. It goes on, says the
    vectors were not kept, and says nothing of removing a sidecar that was never there."""
    import errno

    import nlsim.encoders.cache as cache_module

    def read_only(path: object, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(Path, "unlink", read_only)
    monkeypatch.setattr(cache_module, "atomic_save_npy", read_only)
    cache, fn = EmbeddingCache(tmp_path), Counter(emb)
    with caplog.at_level("WARNING", logger="nlsim"):
        out, hit = cache.get_or_compute_parts(PARTS, fn)
    assert np.array_equal(out, emb) and hit is False
    assert "not kept (Read-only file system)" in caplog.text
    assert "could not be removed" not in caplog.text


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_finite_refuses_nan_and_infinities_and_names_the_first_bad_text(bad: float) -> None:
    from nlsim.encoders.cache import check_finite

    vectors = np.ones((4, 2), np.float32)
    vectors[1, 0] = vectors[3, 1] = bad
    with pytest.raises(StateError, match=r"embedded 2 of 4 texts .* text 2: 'second'"):
        check_finite(vectors, ["first", "second", "third", "fourth"], "m")


def test_the_key_changes_with_the_cache_format(monkeypatch: pytest.MonkeyPatch) -> None:
    import nlsim.encoders.cache as cache_module

    before = cache_key(PARTS)
    monkeypatch.setattr(cache_module, "FORMAT", cache_module.FORMAT + 1)
    assert cache_key(PARTS) != before  # a new layout never reads an old entry


def _refused(cache: EmbeddingCache, key: str, n: int | None = None) -> bool:
    """Whether ``load`` refuses the entry and removes both of its files."""
    npy, meta = cache.paths(key)
    return cache.load(key, n=n) is None and not npy.exists() and not meta.exists()


def test_an_entry_another_key_wrote_is_refused_and_removed(tmp_path: Path, emb: np.ndarray) -> None:
    cache = EmbeddingCache(tmp_path)
    cache.store("a" * 64, emb)
    for src, dst in zip(cache.paths("a" * 64), cache.paths("b" * 64), strict=True):
        dst.write_bytes(src.read_bytes())  # a good matrix whose sidecar names another key
    assert _refused(cache, "b" * 64)
    assert cache.load("a" * 64) is not None


def test_a_sidecar_with_another_dtype_is_refused_and_removed(tmp_path: Path, emb: np.ndarray) -> None:
    import json

    cache = EmbeddingCache(tmp_path)
    cache.store("k" * 64, emb)
    meta = cache.paths("k" * 64)[1]
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "dtype": "float16"}))
    assert _refused(cache, "k" * 64)


def test_an_entry_of_other_rows_or_of_nan_is_refused_and_removed(tmp_path: Path, emb: np.ndarray) -> None:
    cache = EmbeddingCache(tmp_path)
    cache.store("r" * 64, emb)
    assert _refused(cache, "r" * 64, n=3)
    cache.store("r" * 64, np.full((2, 3), np.nan, np.float32))
    assert _refused(cache, "r" * 64, n=2)
    cache.store("r" * 64, emb)
    assert np.array_equal(cache.load("r" * 64, n=2), emb)


def test_the_sidecar_describes_the_entry_without_its_texts(tmp_path: Path, emb: np.ndarray) -> None:
    import json

    cache = EmbeddingCache(tmp_path)
    cache.get_or_compute_parts(PARTS, Counter(emb))
    meta = json.loads(cache.paths(cache_key(PARTS))[1].read_text(encoding="utf-8"))
    assert meta["info"] == {k: v for k, v in PARTS.items() if k != "texts"}
    assert "台灣新聞" not in json.dumps(meta, ensure_ascii=False)


def test_the_encoder_form_plans_the_job_and_keys_lossy_vectors_apart(tmp_path: Path) -> None:
    class Planned:
        fingerprint, max_length = "abc", 64

        def __init__(self, tag: str | None) -> None:
            self.planned: list[int] = []
            if tag is not None:
                self.vectors_tag = tag

        def plan(self, n: int) -> None:
            self.planned.append(n)

        def encode(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 4), np.float32)

    cache, exact = EmbeddingCache(tmp_path), Planned(None)
    assert cache.get_or_compute(["a", "b", "c"], exact, "none")[1] is False
    assert exact.planned == [3]  # the path for a job this size is settled before the key is made
    parts = {"texts": ["a", "b", "c"], "fingerprint": "abc", "conversion": "none", "max_length": 64}
    assert cache.load(cache_key(parts), n=3) is not None  # exact vectors: the key has no precision part
    assert cache.get_or_compute(["a", "b", "c"], Planned(""), "none")[1] is True  # "": exact, same key
    assert cache.get_or_compute(["a", "b", "c"], Planned("int8"), "none")[1] is False
