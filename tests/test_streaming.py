"""Tests of nlsim.streaming: chunked reading, shards, resume, index and graph from shards."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nlsim.errors import InputError, StateError
from nlsim.index import build_index
from nlsim.neighbors import knn_graph
from nlsim.streaming import (
    HashingEmbedder,
    ShardSet,
    ShardWriter,
    build_index_from_shards,
    embed_to_shards,
    iter_batches,
    shard_neighbor_pairs,
)


def corpus_frame(n: int = 230, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(400)]
    titles = [" ".join(rng.choice(words, 6)) for _ in range(n)]
    for i in range(0, n - 1, 10):  # near-copies: same words, one changed
        titles[i + 1] = titles[i].rsplit(" ", 1)[0] + " extra"
    return pd.DataFrame({"id": [f"n{i:04d}" for i in range(n)], "title": titles,
                         "description": ["" if i % 3 else f"lead {i}" for i in range(n)]})


def write(frame: pd.DataFrame, path) -> None:
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True, force_ascii=False)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_iter_batches_reads_everything_in_order(tmp_path, suffix: str) -> None:
    frame = corpus_frame()
    path = tmp_path / f"news{suffix}"
    write(frame, path)
    parts = list(iter_batches(path, columns=["id", "title", "missing"], batch_size=50))
    assert all(len(p) <= 50 for p in parts)
    got = pd.concat(parts, ignore_index=True)
    assert list(got.columns) == ["id", "title"]
    assert got["id"].tolist() == frame["id"].tolist() and got["title"].tolist() == frame["title"].tolist()


def test_iter_batches_errors(tmp_path) -> None:
    with pytest.raises(InputError, match="not found"):
        list(iter_batches(tmp_path / "none.csv"))
    with pytest.raises(InputError, match="format"):
        (tmp_path / "x.xml").write_text("<a/>")
        list(iter_batches(tmp_path / "x.xml"))
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="cannot read"):
        list(iter_batches(bad))


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_shards_equal_in_memory_embedding(tmp_path, suffix: str) -> None:
    frame = corpus_frame()
    path = tmp_path / f"news{suffix}"
    write(frame, path)
    emb_fn = HashingEmbedder(64)
    shards = embed_to_shards(path, emb_fn, tmp_path / "shards", batch_size=64, progress=False)
    assert len(shards) == 230 and [s["rows"] for s in shards.shards] == [64, 64, 64, 38]
    assert shards.complete and shards.dim == 64
    shards.verify()
    texts = [" ".join(p for p in (t, d) if p) for t, d in zip(frame.title, frame.description, strict=True)]
    whole = emb_fn(texts)
    got = np.concatenate([np.asarray(e) for _, e in shards.iter_shards()])
    np.testing.assert_allclose(got, whole, atol=1e-6)
    assert shards.ids().tolist() == frame["id"].tolist()
    # the graph from shards equals the in-memory graph
    index = build_index_from_shards(shards, use_gpu=False)
    assert index.ntotal == 230 and index.kind == "flat"
    got_pairs = shard_neighbor_pairs(index, shards, k=3, threshold=0.5, progress=False)
    want = knn_graph(build_index(whole, use_gpu=False), whole, k=3, threshold=0.5, progress=False)
    pd.testing.assert_frame_equal(got_pairs, want)
    assert len(want) >= 20  # the planted near-copies


def test_ivf_from_shards_is_trained_across_shards(tmp_path) -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(100, 32))
    x = np.repeat(centres, 20, axis=0) + 0.1 * rng.normal(size=(2000, 32))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    w = ShardWriter(tmp_path, dim=32)
    for i in range(0, 2000, 300):
        w.write([str(j) for j in range(i, min(i + 300, 2000))], x[i:i + 300])
    shards = w.finish()
    sample = shards.sample(500, seed=1)
    assert sample.shape == (500, 32)
    index = build_index_from_shards(shards, kind="ivf", nlist=32, nprobe=4, use_gpu=False, train_size=1000)
    assert index.kind == "ivf" and index.params["train_size"] == 1000 and index.ntotal == 2000
    _, got = index.search(x[:200], 5)
    _, want = build_index(x, use_gpu=False).search(x[:200], 5)
    recall = np.mean([len(set(g) & set(w)) / 5 for g, w in zip(got, want, strict=True)])
    assert recall >= 0.95


def test_resume_after_interruption(tmp_path) -> None:
    frame = corpus_frame()
    path = tmp_path / "news.parquet"
    write(frame, path)
    calls: list[int] = []

    class Flaky(HashingEmbedder):
        def __call__(self, texts):
            calls.append(len(texts))
            if len(calls) == 4:  # the probe, then two shards, then fail
                raise RuntimeError("killed")
            return super().__call__(texts)

    with pytest.raises(RuntimeError):
        embed_to_shards(path, Flaky(32), tmp_path / "s", batch_size=64, progress=False)
    partial = ShardSet(tmp_path / "s")
    assert not partial.complete and len(partial.shards) == 2
    calls.clear()
    shards = embed_to_shards(path, HashingEmbedder(32), tmp_path / "s", batch_size=64, progress=False)
    assert len(shards) == 230 and shards.ids().tolist() == frame["id"].tolist()
    whole = np.concatenate([np.asarray(e) for _, e in shards.iter_shards()])
    fresh = embed_to_shards(path, HashingEmbedder(32), tmp_path / "t", batch_size=64, progress=False)
    np.testing.assert_array_equal(whole, np.concatenate([np.asarray(e) for _, e in fresh.iter_shards()]))
    with pytest.raises(StateError, match="other settings"):
        embed_to_shards(path, HashingEmbedder(32), tmp_path / "s", batch_size=32, progress=False)


def test_corrupt_shard_detected(tmp_path) -> None:
    path = tmp_path / "news.parquet"
    write(corpus_frame(), path)
    shards = embed_to_shards(path, HashingEmbedder(16), tmp_path / "s", batch_size=100, progress=False)
    f = tmp_path / "s" / shards.shards[1]["emb"]
    data = bytearray(f.read_bytes())
    data[-5] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(StateError, match="corrupt"):
        ShardSet(tmp_path / "s", verify=True)
    (tmp_path / "s" / "manifest.json").write_text("{")
    with pytest.raises(StateError, match="unreadable"):
        ShardSet(tmp_path / "s")
    with pytest.raises(StateError, match="no shards"):
        ShardSet(tmp_path / "nothing")


def test_bad_rows_name_the_row(tmp_path) -> None:
    frame = corpus_frame(120)
    frame.loc[105, "title"] = "  "
    path = tmp_path / "news.parquet"
    write(frame, path)
    with pytest.raises(InputError, match=r"row 106, field 'title'"):
        embed_to_shards(path, HashingEmbedder(16), tmp_path / "s", batch_size=50, progress=False)


def test_manifest_records_settings(tmp_path) -> None:
    path = tmp_path / "news.csv"
    write(corpus_frame(30), path)
    embed_to_shards(path, HashingEmbedder(16), tmp_path / "s", batch_size=10, convert_mode="t2s",
                    info={"model": "hashing-16"}, progress=False)
    info = json.loads((tmp_path / "s" / "manifest.json").read_text())["info"]
    assert info["convert"] == "t2s" and info["model"] == "hashing-16" and info["batch_size"] == 10
