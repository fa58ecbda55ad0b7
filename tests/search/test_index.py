"""Tests of nlsim.search.index: exact search against numpy, approximate recall, GPU plumbing, save/load "
"refusal."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest

import nlsim.search.index as nindex
from nlsim.errors import ConfigError, StateError
from nlsim.search.index import IndexMeta, build_index, default_nlist, default_nprobe, load_index, save_index


def unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered(n_centres: int, per: int, d: int, noise: float, seed: int = 0) -> np.ndarray:
    """Unit vectors in tight groups around random centres, like copies of the same story."""
    rng = np.random.default_rng(seed)
    centres = unit(rng, n_centres, d)
    x = np.repeat(centres, per, axis=0) + noise * rng.normal(size=(n_centres * per, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x[rng.permutation(len(x))].astype(np.float32)


@pytest.fixture()
def emb() -> np.ndarray:
    return unit(np.random.default_rng(1), 500, 32)


def meta_for(dim: int = 32, **kw) -> IndexMeta:
    base = dict(model_id="intfloat/multilingual-e5-small", fingerprint="abc123", conversion="tw2sp", dim=dim)
    base.update(kw)
    return IndexMeta(**base)


def test_flat_matches_bruteforce(emb: np.ndarray) -> None:
    index = build_index(emb, use_gpu=False)
    assert index.kind == "flat" and index.device == "cpu" and index.ntotal == 500
    assert index.describe() == "exact flat IP on cpu, 500 vectors"
    q = emb[:50]
    sims, rows = index.search(q, 10)
    full = q @ emb.T
    want = np.argsort(-full, axis=1, kind="stable")[:, :10]
    np.testing.assert_allclose(sims, np.take_along_axis(full, want, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(rows, want)
    assert rows.dtype == np.int64


def test_add_appends_rows(emb: np.ndarray) -> None:
    index = build_index(emb[:300], use_gpu=False)
    index.add(emb[300:])
    assert index.ntotal == 500
    _, rows = index.search(emb[400:401], 1)
    assert rows[0, 0] == 400


def test_empty_flat_then_add() -> None:
    index = build_index(np.empty((0, 8), np.float32), dim=8, use_gpu=False)
    assert index.ntotal == 0
    index.add(np.eye(8, dtype=np.float32))
    assert index.ntotal == 8


def test_bad_inputs(emb: np.ndarray) -> None:
    with pytest.raises(ConfigError, match="unknown index kind"):
        build_index(emb, kind="lsh")
    index = build_index(emb, use_gpu=False)
    with pytest.raises(ConfigError, match="dimension 16"):
        index.search(np.zeros((1, 16), np.float32), 3)
    with pytest.raises(ConfigError, match="2-D"):
        build_index(np.zeros(5, np.float32))


def test_auto_rule(monkeypatch: pytest.MonkeyPatch, emb: np.ndarray) -> None:
    assert build_index(emb, use_gpu=False).kind == "flat"
    monkeypatch.setattr(nindex, "FLAT_MAX", 100)
    index = build_index(emb, use_gpu=False)
    assert index.kind == "ivf"
    assert index.params["nlist"] == default_nlist(500)
    assert default_nlist(1_000_000) == 2048 and default_nprobe(2048) == 16
    assert default_nlist(100_000) == 512 and default_nprobe(512) == 16
    assert default_nlist(100) == 2 and default_nprobe(2) == 2  # at most n // 39 lists, nprobe at most nlist


def test_use_gpu_without_gpu_is_clear(emb: np.ndarray) -> None:
    if nindex.gpu_count():
        pytest.skip("a GPU is visible")
    with pytest.raises(ConfigError, match="--gpu asks for the search on a GPU, and there is none to use"):
        build_index(emb, use_gpu=True)


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_recall(kind: str) -> None:
    x = clustered(400, 10, 64, noise=0.08)
    index = build_index(x, kind=kind, use_gpu=False, nlist=64, nprobe=8)
    exact = build_index(x, kind="flat", use_gpu=False)
    q = x[:400]
    _, got = index.search(q, 11)
    _, want = exact.search(q, 11)
    recall = np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want, strict=True)])
    assert recall >= 0.95, recall
    assert index.describe().startswith("approximate")


def test_set_search_params_changes_ivf_recall() -> None:
    x = unit(np.random.default_rng(3), 3000, 32)  # no structure: IVF recall depends on nprobe
    index = build_index(x, kind="ivf", use_gpu=False, nlist=64, nprobe=1)
    _, want = build_index(x, kind="flat", use_gpu=False).search(x[:200], 10)

    def recall() -> float:
        _, got = index.search(x[:200], 10)
        return float(np.mean([len(set(g) & set(w)) / 10 for g, w in zip(got, want, strict=True)]))

    low = recall()
    index.set_search_params(nprobe=64)
    assert index.params["nprobe"] == 64
    assert recall() == pytest.approx(1.0) and low < 0.9


def test_gpu_path_is_used_when_gpus_present(monkeypatch: pytest.MonkeyPatch, emb: np.ndarray) -> None:
    """Without a GPU here, check the plumbing with a stand-in for the GPU build's functions."""
    import faiss

    calls: dict[str, object] = {}

    def to_all_gpus(index, co=None, ngpu=-1):
        calls["shard"], calls["ngpu"] = co.shard, ngpu
        return faiss.clone_index(index)

    monkeypatch.setattr(faiss, "StandardGpuResources", object, raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 2)
    monkeypatch.setattr(faiss, "GpuMultipleClonerOptions", lambda: types.SimpleNamespace(), raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", to_all_gpus)
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", lambda index: index, raising=False)
    index = build_index(emb)
    assert index.device == "gpu x2" and calls == {"shard": True, "ngpu": 2}
    assert index.describe() == "exact flat IP on gpu x2, 500 vectors"
    _, rows = index.search(emb[:3], 1)
    assert rows.ravel().tolist() == [0, 1, 2]
    with pytest.raises(ConfigError, match="2048"):
        index.search(emb[:1], 3000)
    assert build_index(emb, use_gpu=False).device == "cpu"
    assert build_index(emb, kind="hnsw").device == "cpu"  # HNSW has no GPU form
    with pytest.raises(ConfigError, match="HNSW"):
        build_index(emb, kind="hnsw", use_gpu=True)


def sharded_like_faiss(monkeypatch: pytest.MonkeyPatch, ngpu: int) -> None:
    """A stand-in for FAISS's GPU build on ``ngpu`` GPUs that shards a flat index as
    ``index_cpu_to_all_gpus(co.shard=True)`` does: an ``IndexShards`` numbering its shards' rows in
    succession (``successive_ids``), each shard a slice of the vectors; and ``index_gpu_to_cpu`` gathering
    them back into one flat index."""
    import faiss

    def to_all_gpus(index, co=None, ngpu=ngpu):  # noqa: ANN001, ANN202
        assert isinstance(index, faiss.IndexFlat) and co.shard
        xb = index.reconstruct_n(0, index.ntotal) if index.ntotal else np.empty((0, index.d), np.float32)
        shards = faiss.IndexShards(index.d, True, True)
        for i in range(ngpu):
            sub = faiss.IndexFlat(index.d, index.metric_type)
            part = xb[len(xb) * i // ngpu : len(xb) * (i + 1) // ngpu]
            if len(part):
                sub.add(part)
            shards.add_shard(sub)
            sub.this.disown()
        shards.own_indices = True
        return shards

    def to_cpu(index):  # noqa: ANN001, ANN202
        flat = faiss.IndexFlat(index.d, index.metric_type)
        for i in range(index.count()):
            sub = faiss.downcast_index(index.at(i))
            if sub.ntotal:
                flat.add(sub.reconstruct_n(0, sub.ntotal))
        return flat

    monkeypatch.setattr(faiss, "StandardGpuResources", object, raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: ngpu)
    monkeypatch.setattr(faiss, "GpuMultipleClonerOptions", lambda: types.SimpleNamespace(), raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", to_all_gpus)
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", to_cpu, raising=False)


def test_a_flat_index_sharded_over_gpus_grows_past_its_first_add(
    monkeypatch: pytest.MonkeyPatch, emb: np.ndarray
) -> None:
    """On two GPUs a daily run's index (the kept vectors, then the day's added to them) stopped at the
    second add: FAISS's shards of a flat index take one add only. The rows keep their order, on the GPUs."""
    sharded_like_faiss(monkeypatch, 2)
    index = build_index(emb[:300])
    assert index.device == "gpu x2"
    index.add(emb[300:450])
    index.add(emb[450:])
    assert index.device == "gpu x2" and index.ntotal == 500
    _, rows = index.search(emb[[0, 299, 300, 449, 450, 499]], 1)
    assert rows.ravel().tolist() == [0, 299, 300, 449, 450, 499]
    kept = nindex.on_device(build_index(emb[:300], use_gpu=False))  # a state's index, loaded on the CPU
    kept.add(emb[300:])
    _, rows = kept.search(emb[[10, 400]], 1)
    assert kept.device == "gpu x2" and rows.ravel().tolist() == [10, 400]


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_save_load_roundtrip(tmp_path, emb: np.ndarray, kind: str) -> None:
    index = build_index(emb, kind=kind, use_gpu=False, nlist=8, nprobe=4)
    ids = [f"n{i:04d}" for i in range(len(emb))]
    saved = save_index(tmp_path / "idx", index, ids, meta_for(32), embeddings=emb)
    assert saved.count == 500 and saved.kind == kind
    assert set(saved.files) == {"index.faiss", "ids.parquet", "embeddings.npy"}
    loaded, got_ids, meta, got_emb = load_index(tmp_path / "idx", expected=meta_for(32), load_embeddings=True)
    assert list(got_ids) == ids and meta.fingerprint == "abc123" and meta.nlsim_version
    np.testing.assert_array_equal(got_emb, emb)
    assert loaded.kind == kind and loaded.params == index.params
    a = index.search(emb[:20], 5)
    b = loaded.search(emb[:20], 5)
    np.testing.assert_array_equal(a[1], b[1])
    on_disk = json.loads((tmp_path / "idx" / "meta.json").read_text())
    assert on_disk["conversion"] == "tw2sp" and on_disk["dim"] == 32


@pytest.mark.parametrize(
    ("change", "word"),
    [
        ({"model_id": "sentence-transformers/all-MiniLM-L6-v2"}, "model_id"),
        ({"fingerprint": "zzz"}, "fingerprint"),
        ({"conversion": "none"}, "conversion"),
        ({"dim": 384}, "dim"),
    ],
)
def test_load_refuses_other_vectors(tmp_path, emb: np.ndarray, change: dict, word: str) -> None:
    save_index(tmp_path, build_index(emb, use_gpu=False), range(500), meta_for(32))
    with pytest.raises(StateError, match=word) as err:
        load_index(tmp_path, expected=meta_for(**change))
    assert "rebuilt" in str(err.value) and str(tmp_path) in str(err.value)


def test_load_accepts_fingerprint_string_and_encoder_like(tmp_path, emb: np.ndarray) -> None:
    save_index(tmp_path, build_index(emb, use_gpu=False), range(500), meta_for(32))
    load_index(tmp_path, expected="abc123")
    with pytest.raises(StateError, match="fingerprint"):
        load_index(tmp_path, expected="other")
    enc = types.SimpleNamespace(model_id="intfloat/multilingual-e5-small", fingerprint="abc123", dim=384)
    with pytest.raises(StateError, match="dim"):
        load_index(tmp_path, expected=enc)


def test_load_refuses_truncated_and_corrupt(tmp_path, emb: np.ndarray) -> None:
    save_index(tmp_path, build_index(emb, use_gpu=False), range(500), meta_for(32))
    f = tmp_path / "index.faiss"
    good = f.read_bytes()
    f.write_bytes(good[: len(good) // 2])
    with pytest.raises(StateError, match="truncated"):
        load_index(tmp_path)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0xFF
    f.write_bytes(bytes(bad))
    with pytest.raises(StateError, match="corrupt"):
        load_index(tmp_path)
    f.write_bytes(good)
    load_index(tmp_path)
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(StateError, match="unreadable"):
        load_index(tmp_path)


@pytest.mark.parametrize(
    ("kind", "edit", "says"),
    [
        ("flat", lambda m: m.update(kind="exact"), r"meta\.json has 'exact' for 'kind'"),
        ("ivf", lambda m: m["params"].pop("nlist"), r"meta\.json has .* for 'params'"),
        ("hnsw", lambda m: m["params"].pop("M"), r"meta\.json has .* for 'params'"),
        ("flat", lambda m: m["files"]["ids.parquet"].pop("bytes"), r"meta\.json has .* for 'files'"),
        ("flat", lambda m: m["files"].update({"index.faiss": "ok"}), r"meta\.json has .* for 'files'"),
        ("hnsw", lambda m: m.update(kind="flat"), r"index\.faiss holds an HNSW index, meta\.json says flat"),
        ("flat", lambda m: m.update(kind="ivf", params={"nlist": 4, "nprobe": 2}), r"holds a flat index"),
    ],
)
def test_a_meta_json_edited_by_hand_to_values_nlsim_never_writes_is_refused_by_name(
    tmp_path, emb: np.ndarray, kind: str, edit, says: str
) -> None:
    """``meta.json`` holds every key of its own kind, but an edit could still leave a value nlsim never
    writes: a kind it does not build, a file listed without its size or SHA-256, an IVF or HNSW index
    without the parameters it is searched with, or another kind than the index file holds. Each ended in a
    KeyError or TypeError traceback (at loading or at the first line of the run log), or an approximate
    index described as exact; each is refused naming the file and the key, with the way to rebuild."""
    save_index(
        tmp_path, build_index(emb, kind=kind, use_gpu=False, nlist=8, nprobe=4), range(500), meta_for()
    )
    meta = json.loads((tmp_path / "meta.json").read_text())
    edit(meta)
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(StateError, match=says + r".*index is rebuilt"):
        load_index(tmp_path)


def test_load_missing(tmp_path) -> None:
    with pytest.raises(StateError, match="no index"):
        load_index(tmp_path / "nothing")


def test_save_checks_ids(tmp_path, emb: np.ndarray) -> None:
    with pytest.raises(ConfigError, match="ids"):
        save_index(tmp_path, build_index(emb, use_gpu=False), range(3), meta_for(32))


def test_a_k_no_gpu_index_returns_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """FAISS GPU indexes return at most 2,048 neighbours (k + 1 with the item itself): ``nlsim dedup --k
    3000`` on a machine with GPUs embedded the whole corpus, then failed at the search. It is refused before
    any work now, naming --k and the ways out (--cpu, or HNSW, which runs on the CPU)."""
    import faiss

    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.paths import check_run_paths

    monkeypatch.setattr(faiss, "StandardGpuResources", object, raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    (tmp_path / "news.csv").write_text("id,title\nn1,a\n")
    config = DedupConfig.of(
        corpus=str(tmp_path / "news.csv"), out=str(tmp_path / "rep"), k=3000, threshold=0.9
    )
    with pytest.raises(ConfigError, match=r"--k 3000: FAISS GPU indexes return at most 2048 neighbours"):
        check_run_paths(config)
    assert not (tmp_path / "rep").exists()
    nindex.check_device(None, "auto", k=2047)  # 2,048 hits with the item itself
    nindex.check_device(False, "auto", k=3000)  # --cpu
    nindex.check_device(None, "hnsw", k=3000)  # HNSW runs on the CPU
    with pytest.raises(ConfigError, match="--k 2048"):
        nindex.check_device(True, "flat", k=2048)


def test_nprobe_past_what_a_gpu_index_visits_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """FAISS GPU IVF indexes visit at most 2,048 lists per query: ``nlsim dedup --nprobe 4096`` on a machine
    with GPUs (as ``faiss.get_num_gpus()`` sees it when the run starts) would embed the whole corpus, then
    fail in FAISS. It is refused before any work, naming --nprobe and the way out; on the CPU it stands."""
    import faiss

    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.paths import check_run_paths

    (tmp_path / "news.csv").write_text("id,title\nn1,a\n")
    config = DedupConfig.of(corpus=str(tmp_path / "news.csv"), out=str(tmp_path / "rep"), nprobe=4096)
    nindex.check_device(None, "ivf", nprobe=4096)  # no GPU seen here: the CPU visits any number
    monkeypatch.setattr(faiss, "StandardGpuResources", object, raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    with pytest.raises(
        ConfigError, match=r"--nprobe 4096: FAISS GPU indexes visit at most 2048 lists per item"
    ):
        check_run_paths(config)
    assert not (tmp_path / "rep").exists()
    nindex.check_device(None, "auto", nprobe=2048)
    nindex.check_device(False, "ivf", nprobe=4096)  # --cpu
    nindex.check_device(None, "flat", nprobe=4096)  # no lists to visit (refused on its own by the options)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0)  # read at each check, not once at import
    nindex.check_device(None, "ivf", nprobe=4096)


def test_an_index_moved_to_a_gpu_visits_no_more_lists_than_faiss_gpu_search_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An IVF index kept with more than 2,048 probes (a CPU run's ``--nprobe``) and searched where FAISS
    sees a GPU: FAISS refuses to copy it there ("GPU index only supports nprobe <= 2048") or to set more
    probes on it, so its probes are cut to 2,048 on the GPU (the CPU keeps them)."""
    import faiss

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2100, 4)).astype("float32")
    built = build_index(x, kind="ivf", nlist=2100, nprobe=2100, use_gpu=False)
    assert built.params["nprobe"] == built.index.nprobe == 2100
    copied: list[int] = []
    set_on: list[int] = []

    def to_gpus(index: object, co: object = None, ngpu: int = -1) -> object:  # FAISS's check, then no copy
        copied.append(index.nprobe)
        assert index.nprobe <= 2048, "GPU index only supports nprobe <= 2048"
        return index

    class Space:  # the GPU build's parameter space, as far as this needs it
        def set_index_parameter(self, index: object, name: str, value: int) -> None:
            assert value <= 2048, "GPU index only supports nprobe <= 2048"
            set_on.append(value)

    monkeypatch.setattr(faiss, "StandardGpuResources", object, raising=False)
    monkeypatch.setattr(faiss, "GpuMultipleClonerOptions", types.SimpleNamespace, raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", to_gpus, raising=False)
    monkeypatch.setattr(faiss, "GpuParameterSpace", Space, raising=False)
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    moved = nindex.on_device(built, use_gpu=None)
    assert moved.device == "gpu:0"
    assert copied == [2048] and set_on == [2048] and moved.params["nprobe"] == 2048
    kept = build_index(x, kind="ivf", nlist=2100, nprobe=2100, use_gpu=False)
    kept.set_search_params(nprobe=2100)  # on the CPU
    assert kept.params["nprobe"] == kept.index.nprobe == 2100


@pytest.mark.parametrize(
    ("meta", "says"),
    [
        ("[]", "not a JSON object of the index's description: a JSON list"),
        ("null", "not a JSON object of the index's description: a JSON null"),
        ("5", "not a JSON object of the index's description: a JSON number"),
        ("", "empty"),
        ("\ufeff", "empty"),
    ],
)
def test_a_meta_json_that_holds_no_object_is_refused_for_what_it_holds(
    tmp_path, emb: np.ndarray, meta: str, says: str
) -> None:
    """An index's meta.json holding null or a number was refused as "unreadable (argument of type
    'NoneType' is not iterable)", and one holding a list as lacking its 'model_id', as if a key alone were
    missing; each says what the file holds instead, with the way to rebuild."""
    save_index(tmp_path, build_index(emb, kind="flat", use_gpu=False), range(500), meta_for())
    (tmp_path / "meta.json").write_text(meta, encoding="utf-8")
    with pytest.raises(StateError, match=r"meta\.json is unreadable \(" + says + r".*index is rebuilt"):
        load_index(tmp_path)


def test_the_auto_rule_indexes_exactly_up_to_flat_max_inclusive() -> None:
    assert nindex.resolved_kind("auto", nindex.FLAT_MAX, use_gpu=False) == "flat"
    assert nindex.resolved_kind("auto", nindex.FLAT_MAX + 1, use_gpu=False) == "ivf"


def test_ivf_lists_and_probes_are_bounded_by_what_the_index_can_use(emb: np.ndarray) -> None:
    """More lists than training vectors are cut to the training vectors, more probes than lists to the
    lists, when the index is built and when its probes are changed later."""
    few = nindex.new_index(32, n=500, kind="ivf", use_gpu=False, train=emb[:10], nlist=64)
    assert few.params["nlist"] == 10 and few.index.nlist == 10
    index = build_index(emb, kind="ivf", use_gpu=False, nlist=4, nprobe=50)
    assert index.params["nprobe"] == 4 and index.index.nprobe == 4
    assert "nprobe 4" in index.describe()
    index.set_search_params(nprobe=1000)
    assert index.params["nprobe"] == 4 and index.index.nprobe == 4
    with pytest.raises(ConfigError, match="nprobe must be at least 1"):
        index.set_search_params(nprobe=0)


def test_the_ivf_training_sample_keeps_row_order() -> None:
    rows = np.arange(100, dtype=np.float32)[:, None]
    sample = nindex.training_sample(rows, 30).ravel()
    assert len(sample) == 30 and len(set(sample)) == 30
    assert list(sample) == sorted(sample)


def test_hnsw_search_breadth_reaches_the_faiss_index(emb: np.ndarray) -> None:
    index = build_index(emb, kind="hnsw", use_gpu=False, ef_search=77, ef_construction=50)
    assert index.index.hnsw.efSearch == 77 and index.index.hnsw.efConstruction == 50
    index.set_search_params(ef_search=90)
    assert index.index.hnsw.efSearch == 90 and index.params["ef_search"] == 90


def test_a_search_for_no_hits_is_refused_and_no_queries_give_k_columns(emb: np.ndarray) -> None:
    index = build_index(emb, use_gpu=False)
    with pytest.raises(ConfigError, match="k must be at least 1"):
        index.search(emb[:2], 0)
    sims, rows = index.search(emb[:0], 5)
    assert sims.shape == rows.shape == (0, 5) and rows.dtype == np.int64


def test_batched_ivf_search_is_a_cpu_search_of_at_least_the_lists_batch(emb: np.ndarray) -> None:
    from nlsim.search import ivf_batched

    index = build_index(emb, kind="ivf", use_gpu=False, nlist=4)
    assert index.batched
    assert index.batch_size(10) == max(10, ivf_batched.batch_rows(4, index.params["nprobe"], 11)) > 10
    assert index.batch_size(10**9) == 10**9
    on_gpu = nindex.SearchIndex(index.index, "ivf", "gpu:0", 32, index.params)
    assert not on_gpu.batched and on_gpu.batch_size(10) == 10
    assert not build_index(emb, kind="ivf", use_gpu=False, nlist=4, ivf_search="queries").batched
