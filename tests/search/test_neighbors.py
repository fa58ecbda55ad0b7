"""Tests of nlsim.search.neighbors: exact graph vs numpy, thresholds, time window, dedup, incremental "
"queries."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from nlsim.errors import ConfigError
from nlsim.search.index import build_index
from nlsim.search.neighbors import knn_graph, neighbor_pairs, scored_by_representatives


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_pairs(emb: np.ndarray, rows: np.ndarray, k: int, threshold: float) -> set[tuple[int, int]]:
    sims = emb[rows] @ emb.T
    out = set()
    for qi, r in enumerate(rows):
        s = sims[qi].copy()
        s[r] = -np.inf
        for j in np.argsort(-s, kind="stable")[:k]:
            if s[j] >= threshold:
                out.add((min(r, int(j)), max(r, int(j))))
    return out


@pytest.fixture()
def emb() -> np.ndarray:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(60, 24))
    x = np.repeat(centres, 5, axis=0) + 0.3 * rng.normal(size=(300, 24))
    return unit(x)


@pytest.mark.parametrize("batch_size", [7, 4096])
def test_exact_graph_matches_bruteforce(emb: np.ndarray, batch_size: int) -> None:
    index = build_index(emb, use_gpu=False)
    got = neighbor_pairs(
        index, emb, np.arange(300), k=4, threshold=0.8, batch_size=batch_size, progress=False
    )
    assert list(got.columns) == ["a", "b", "similarity"]
    assert got["a"].dtype == np.int64 and got["similarity"].dtype == np.float32
    assert set(zip(got.a, got.b, strict=True)) == brute_pairs(emb, np.arange(300), 4, 0.8)
    assert len(got) > 100
    assert (got.a < got.b).all() and (got.similarity >= 0.8).all()
    assert not got.duplicated(["a", "b"]).any()
    assert got.equals(got.sort_values(["a", "b"]).reset_index(drop=True))
    np.testing.assert_allclose(got.similarity, np.sum(emb[got.a] * emb[got.b], axis=1), atol=1e-5)


def test_symmetric_pair_once_with_max_similarity() -> None:
    class FakeIndex:
        ntotal = 3

        def search(self, q, k):
            sims = np.array([[1.0, 0.95, 0.1], [1.0, 0.97, 0.1], [1.0, 0.2, 0.1]], np.float32)[: len(q), :k]
            rows = np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1]], np.int64)[: len(q), :k]
            return sims, rows

    got = neighbor_pairs(
        FakeIndex(), np.zeros((3, 2), np.float32), np.arange(3), k=2, threshold=0.5, progress=False
    )
    assert got.to_dict("list") == {"a": [0], "b": [1], "similarity": [pytest.approx(0.97)]}


def test_a_similarity_is_never_above_one() -> None:
    """Two identical unit vectors score 1.0000002 in float32 (their sum rounds up): pairs.csv said so, a
    cosine above 1. The search gives it as 1."""

    class FakeIndex:
        ntotal = 2

        def search(self, q, k):
            sims = np.array([[1.0000002, 1.0000002], [1.0000001, 1.0000002]], np.float32)[: len(q), :k]
            rows = np.array([[0, 1], [1, 0]], np.int64)[: len(q), :k]
            return sims, rows

    got = neighbor_pairs(
        FakeIndex(), np.zeros((2, 2), np.float32), np.arange(2), k=2, threshold=1.0, progress=False
    )
    assert got.to_dict("list") == {"a": [0], "b": [1], "similarity": [1.0]}


def test_exact_duplicates_self_not_first() -> None:
    # five identical vectors: the query can be anywhere among tied hits; it must never pair with itself
    x = unit(np.vstack([np.ones((5, 4)), np.eye(4)]))
    index = build_index(x, use_gpu=False)
    got = neighbor_pairs(index, x, np.arange(len(x)), k=4, threshold=0.99, progress=False)
    assert set(zip(got.a, got.b, strict=True)) == {(i, j) for i in range(5) for j in range(i + 1, 5)}


def test_k_limits_neighbours(emb: np.ndarray) -> None:
    index = build_index(emb, use_gpu=False)
    got = neighbor_pairs(index, emb[:1], np.array([0]), k=2, threshold=-1.0, progress=False)
    assert len(got) == 2 and (got.a == 0).all()


def test_time_window_and_nat(emb: np.ndarray) -> None:
    index = build_index(emb, use_gpu=False)
    base = pd.Timestamp("2026-01-01", tz="UTC")
    times = pd.Series([base + pd.Timedelta(days=int(i)) for i in range(300)])
    times.iloc[3] = pd.NaT
    full = neighbor_pairs(index, emb, np.arange(300), k=4, threshold=0.8, progress=False)
    win = neighbor_pairs(
        index, emb, np.arange(300), k=4, threshold=0.8, times=times, window=timedelta(days=2), progress=False
    )
    undated = (full.a == 3) | (full.b == 3)
    expect = full[undated | ((full.b - full.a) <= 2)].reset_index(drop=True)
    assert undated.any() and len(expect) < len(full)
    pd.testing.assert_frame_equal(win, expect)
    dropped = neighbor_pairs(
        index,
        emb,
        np.arange(300),
        k=4,
        threshold=0.8,
        times=times.to_numpy(),
        window=np.timedelta64(2, "D"),
        nat="drop",
        progress=False,
    )
    dated = expect[~((expect.a == 3) | (expect.b == 3))].reset_index(drop=True)
    pd.testing.assert_frame_equal(dropped, dated)


def test_incremental_queries_against_old_and_new(emb: np.ndarray) -> None:
    emb = emb[np.r_[0:300:3, 1:300:3, 2:300:3]]  # each story's copies spread over old and new items
    index = build_index(emb[:200], use_gpu=False)
    index.add(emb[200:])
    new_rows = np.arange(200, 300)
    got = neighbor_pairs(index, emb[200:], new_rows, k=4, threshold=0.8, progress=False)
    assert set(zip(got.a, got.b, strict=True)) == brute_pairs(emb, new_rows, 4, 0.8)
    assert ((got.a < 200) & (got.b >= 200)).any()  # old-new pairs found
    assert ((got.b >= 200) | (got.a >= 200)).all()


def test_knn_graph_and_empty_results(emb: np.ndarray) -> None:
    index = build_index(emb, use_gpu=False)
    assert len(knn_graph(index, emb, k=3, threshold=1.5, progress=False)) == 0
    empty = neighbor_pairs(index, emb[:0], np.arange(0), k=3, threshold=0.5, progress=False)
    assert list(empty.columns) == ["a", "b", "similarity"] and len(empty) == 0


def test_bad_arguments(emb: np.ndarray) -> None:
    index = build_index(emb, use_gpu=False)
    with pytest.raises(ConfigError):
        neighbor_pairs(index, emb[:3], np.arange(2), k=3, threshold=0.5)
    with pytest.raises(ConfigError):
        neighbor_pairs(index, emb[:1], np.array([300]), k=3, threshold=0.5)
    with pytest.raises(ConfigError):
        neighbor_pairs(index, emb[:1], np.array([0]), k=0, threshold=0.5)


def test_approximate_graph_recall() -> None:
    rng = np.random.default_rng(11)
    centres = rng.normal(size=(500, 48))
    x = unit(np.repeat(centres, 8, axis=0) + 0.15 * rng.normal(size=(4000, 48)))
    exact = knn_graph(build_index(x, use_gpu=False), x, k=5, threshold=0.5, progress=False)
    approx = knn_graph(
        build_index(x, kind="ivf", nlist=64, use_gpu=False), x, k=5, threshold=0.5, progress=False
    )
    e, a = set(zip(exact.a, exact.b, strict=True)), set(zip(approx.a, approx.b, strict=True))
    assert len(e & a) / len(e) >= 0.95


def test_merge_pairs_across_chunks(emb: np.ndarray) -> None:
    from nlsim.search.neighbors import merge_pairs

    index = build_index(emb, use_gpu=False)
    whole = neighbor_pairs(index, emb, np.arange(300), k=4, threshold=0.8, progress=False)
    parts = [
        neighbor_pairs(
            index, emb[i : i + 70], np.arange(i, min(i + 70, 300)), k=4, threshold=0.8, progress=False
        )
        for i in range(0, 300, 70)
    ]
    pd.testing.assert_frame_equal(merge_pairs(parts), whole)
    assert len(merge_pairs([])) == 0


def _copies_and_others(n_copies: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n_copies`` identical vectors (rows 0..n-1, row 0 their representative) and 12 distinct vectors near
    them (rows n..n+11), with each row's representative."""
    rng = np.random.default_rng(seed)
    centre = rng.normal(size=16)
    near = centre + 0.3 * rng.normal(size=(12, 16))
    emb = unit(np.vstack([np.repeat(centre[None], n_copies, axis=0), near]))
    rep = np.arange(len(emb))
    rep[:n_copies] = 0
    return emb, rep


@pytest.mark.parametrize("n_copies", [10, 100, 1000])
def test_copies_count_as_one_neighbour_and_each_query_still_finds_k_others(n_copies):
    emb, rep = _copies_and_others(n_copies)
    index = build_index(emb, use_gpu=False)
    queries = np.flatnonzero(rep == np.arange(len(rep)))  # the representatives
    got = neighbor_pairs(index, emb[queries], queries, k=5, threshold=-1.0, progress=False, copies=rep)
    pairs = set(zip(got["a"].tolist(), got["b"].tolist(), strict=True))
    # every pair is between representatives: a copy is never a neighbour of its own group
    assert all(rep[a] == a and rep[b] == b and a != b for a, b in pairs)
    # the copies' representative finds 5 distinct neighbours, not 5 of its own copies
    assert sum(1 for a, b in pairs if 0 in (a, b)) >= 5
    # without copies, its hits are its own copies and it finds none of the others
    plain = neighbor_pairs(index, emb[:1], np.array([0]), k=5, threshold=-1.0, progress=False)
    assert set(plain["b"].tolist()) <= set(range(n_copies))


def test_with_copies_and_no_duplicates_the_pairs_are_the_plain_ones():
    rng = np.random.default_rng(3)
    emb = unit(rng.normal(size=(60, 8)))
    index = build_index(emb, use_gpu=False)
    rows = np.arange(60)
    plain = neighbor_pairs(index, emb, rows, k=4, threshold=0.2, progress=False)
    same = neighbor_pairs(index, emb, rows, k=4, threshold=0.2, progress=False, copies=rows.copy())
    pd.testing.assert_frame_equal(plain, same)


@pytest.mark.parametrize("undated", [True, False])
def test_a_group_of_copies_pairs_within_the_window_through_whichever_copy_is_there(undated: bool) -> None:
    """Copies 0 (day 0, the representative) and 1 (undated, or 30 hours later), and item 2 at 40 hours,
    in a 20-hour window, vector closer to copy 0's than to copy 1's: the search hits copy 0, 40 hours away,
    and the pair was dropped, though copy 1 is within the window (or undated): it is kept with copy 1."""
    emb = unit(np.array([[1.0, 0.0], [0.9, 0.436], [0.98, 0.2]], dtype=np.float32))
    base = pd.Timestamp("2024-05-01", tz="UTC")
    copy = pd.NaT if undated else base + pd.Timedelta(hours=30)
    times = pd.Series([base, copy, base + pd.Timedelta(hours=40)])
    index = build_index(emb, use_gpu=False)
    for query in ([0, 2], [2], [0]):  # both searched (a batch run), or one alone (a daily run's day)
        rows = np.array(query)
        got = neighbor_pairs(
            index, emb[rows], rows, k=1, threshold=0.5, times=times, window=timedelta(hours=20),
            progress=False, copies=np.array([0, 0, 2]),
        )  # fmt: skip
        assert list(zip(got["a"], got["b"], strict=True)) == [(1, 2)], query
    dropped = neighbor_pairs(
        index, emb[[2]], np.array([2]), k=1, threshold=0.5, times=times, window=timedelta(hours=20),
        nat="drop", progress=False, copies=np.array([0, 0, 2]),
    )  # fmt: skip
    assert len(dropped) == (1 if not undated else 0)


def test_copies_searched_again_on_a_gpu_stop_at_its_largest_k(monkeypatch) -> None:
    """A query whose hits are all copies of its own text is searched again with four times the hits, until
    it finds k other groups; past 2,100 copies of one headline the search asked a GPU index for more than
    the 2,048 neighbours FAISS GPU indexes return, and the run failed after its embedding. It asks a GPU
    index for 2,048 at most, and the CPU copy of it for the rest (here a stand-in: a CPU index that
    refuses as a GPU one does, and is its own CPU copy)."""
    from nlsim.search.index import GPU_MAX_K, SearchIndex

    monkeypatch.setattr(SearchIndex, "cpu_index", lambda self: self.index)

    group = np.tile(np.eye(3, dtype=np.float32)[:1], (2100, 1))  # one headline 2,100 times
    others = unit(np.array([[1, 0.1, 0], [1, 0, 0.1]]))  # two items close to it
    emb = np.vstack([group, others])
    index = build_index(emb, use_gpu=False)
    index.device = "gpu:0"  # SearchIndex.search refuses k above GPU_MAX_K on a GPU
    copies = np.r_[np.zeros(2100, np.int64), [2100, 2101]]
    rows = np.array([0, 2100, 2101])
    pairs = neighbor_pairs(index, emb[rows], rows, k=2, threshold=0.9, progress=False, copies=copies)
    found = set(zip(pairs["a"].tolist(), pairs["b"].tolist(), strict=True))
    assert {(0, 2100), (0, 2101)} <= found
    assert GPU_MAX_K == 2048


def test_items_searched_again_past_many_copies_are_searched_a_part_at_a_time(monkeypatch) -> None:
    """Items close to a story with many exact copies find them first, and are searched again with four times
    the hits until they have k other groups: all of them at once, each with more hits than the copies (2,000
    items near 12,000 copies of one headline held 45,056 hits each, 1.9 GB). They are now searched in parts
    of at most ``MOST_HITS`` hits, with the pairs every item finds (here all those above the threshold,
    k being more than the groups)."""
    import nlsim.search.neighbors as module

    rng = np.random.default_rng(5)
    centre = unit(rng.normal(size=(1, 64)))
    near = unit(centre + 0.2 * unit(rng.normal(size=(40, 64))))
    emb = np.vstack([np.repeat(centre, 300, axis=0), near])  # 300 copies of one headline, 40 items near it
    rep = np.r_[np.zeros(300, np.int64), np.arange(300, 340)]
    asked: list[int] = []

    class Counted:  # the index, counting the hits each search call returns
        def __init__(self, index) -> None:  # noqa: ANN001
            self.index, self.ntotal = index, index.ntotal

        def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            asked.append(len(q) * k)
            return self.index.search(q, k)

    monkeypatch.setattr(module, "MOST_HITS", 2_000, raising=False)
    queries = np.r_[0, np.arange(300, 340)]
    got = neighbor_pairs(
        Counted(build_index(emb, use_gpu=False)), emb[queries], queries, k=60, threshold=0.9,
        progress=False, copies=rep,
    )  # fmt: skip
    assert max(asked) <= 2_000, asked
    sims = emb[queries] @ emb.T  # every pair of groups at or above the threshold, with its best score
    best: dict[tuple[int, int], float] = {}
    for i, a in enumerate(queries):
        for b in np.flatnonzero(sims[i] >= 0.9):
            if rep[b] != a:
                key = (min(a, rep[b]), max(a, rep[b]))
                best[key] = max(best.get(key, -1.0), float(sims[i, b]))
    assert set(zip(got["a"].tolist(), got["b"].tolist(), strict=True)) == set(best)
    assert np.allclose(got["similarity"], [best[k] for k in zip(got["a"], got["b"], strict=True)], atol=1e-5)
    assert len(best) > 40 and all(b >= 300 or b == 0 for pair in best for b in pair)  # copies read as row 0


def test_groups_of_copies_whose_times_lie_apart_are_dropped_without_reading_their_members(
    monkeypatch,
) -> None:
    """Two groups of two copies each (5 hours apart within a group) 100 hours apart, in a 24-hour window:
    no copy of one is within the window of a copy of the other. Each such pair of groups was read member by
    member in Python, a run of 40,000 items in pairs of copies over a year took four times as long with the
    window as without; the pair is now dropped by the groups' first and last times alone."""
    from nlsim.search import neighbors

    calls = []
    real = neighbors._Collector._closest_members
    monkeypatch.setattr(
        neighbors._Collector, "_closest_members", lambda self, p, q: calls.append((p, q)) or real(self, p, q)
    )
    emb = unit(np.array([[1.0, 0.0], [1.0, 0.0], [0.99, 0.14], [0.99, 0.14]], dtype=np.float32))
    base = pd.Timestamp("2024-05-01", tz="UTC")
    times = pd.Series([base + pd.Timedelta(hours=h) for h in (0, 5, 100, 105)])
    got = neighbor_pairs(
        build_index(emb, use_gpu=False), emb[[0, 2]], np.array([0, 2]), k=1, threshold=0.5, times=times,
        window=timedelta(hours=24), progress=False, copies=np.array([0, 0, 2, 2]),
    )  # fmt: skip
    assert got.empty and calls == []
    times[1] = base + pd.Timedelta(hours=80)  # now within the window of copy 2: read member by member
    got = neighbor_pairs(
        build_index(emb, use_gpu=False), emb[[0, 2]], np.array([0, 2]), k=1, threshold=0.5, times=times,
        window=timedelta(hours=24), progress=False, copies=np.array([0, 0, 2, 2]),
    )  # fmt: skip
    assert list(zip(got["a"], got["b"], strict=True)) == [(1, 2)] and calls


def test_a_group_of_copies_asks_for_as_many_neighbours_as_it_has_copies() -> None:
    """A wire story sent as is 100 times (row 0 and its copies) and with a label 60 times (row 100 and its
    copies), with 20 lone variants of it that lie between the two (a character dropped here and there),
    every pair of them above the threshold: each group asked for k = 5 neighbours and met five variants,
    never the other group, so the two groups of one story were never linked, and the cluster rule, which
    reads a link to a group as a link to each of its copies, parted the story. A group now asks for as
    many neighbours as it has copies (k at least): the two groups are linked."""
    rng = np.random.default_rng(0)
    a, b = np.eye(8, dtype=np.float32)[0], unit(np.array([[0.95, 0.312, 0, 0, 0, 0, 0, 0]]))[0]
    variants = unit(a + b + 0.02 * rng.normal(size=(20, 8)))
    emb = np.vstack([np.tile(a, (100, 1)), np.tile(b, (60, 1)), variants]).astype(np.float32)
    assert (emb @ emb.T).min() > 0.9
    copies = np.r_[np.zeros(100, np.int64), np.full(60, 100), np.arange(160, 180)]
    index = build_index(emb, use_gpu=False)
    rows = np.flatnonzero(copies == np.arange(len(copies)))
    got = neighbor_pairs(index, emb[rows], rows, k=5, threshold=0.9, progress=False, copies=copies)
    found = set(zip(got["a"].tolist(), got["b"].tolist(), strict=True))
    assert (0, 100) in found
    assert {(0, v) for v in range(160, 180)} <= found  # the story's group meets every variant


def test_a_group_of_copies_past_a_gpus_hits_finds_its_neighbours_on_a_cpu_copy(monkeypatch) -> None:
    """A group of more copies than a GPU index returns hits (2,048) filled every hit with its own copies
    and found no other group: searched alone (a daily run's group that gained copies, its neighbours from
    earlier days not searched again), it kept no pair, where a CPU run pairs it with both items close to it.
    Its representative is searched on a CPU copy of the index past the GPU's last hit (here a stand-in: a
    CPU index that refuses as a GPU one does, and is its own CPU copy)."""
    from nlsim.search.index import SearchIndex

    group = np.tile(np.eye(3, dtype=np.float32)[:1], (2100, 1))  # one headline 2,100 times
    others = unit(np.array([[1, 0.1, 0], [1, 0, 0.1]]))  # two items close to it
    emb = np.vstack([group, others])
    copies = np.r_[np.zeros(2100, np.int64), [2100, 2101]]
    rows = np.array([0])  # the group alone
    on_cpu = neighbor_pairs(
        build_index(emb, use_gpu=False), emb[rows], rows, k=2, threshold=0.9, progress=False, copies=copies
    )
    index = build_index(emb, use_gpu=False)
    index.device = "gpu:0"  # SearchIndex.search refuses k above GPU_MAX_K on a GPU
    monkeypatch.setattr(SearchIndex, "cpu_index", lambda self: self.index)
    pairs = neighbor_pairs(index, emb[rows], rows, k=2, threshold=0.9, progress=False, copies=copies)
    assert set(zip(on_cpu["a"].tolist(), on_cpu["b"].tolist(), strict=True)) == {(0, 2100), (0, 2101)}
    pd.testing.assert_frame_equal(pairs, on_cpu)


class _ListedIndex:
    """An index whose hits are listed per query row (sorted by similarity): ties in a stated order."""

    def __init__(self, hits: dict[int, list[tuple[int, float]]]) -> None:
        self.hits, self.ntotal = hits, len(hits)

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        rows = [int(np.argmax(v)) for v in q]  # each query vector is one-hot on its row
        sims = np.array([[s for _, s in self.hits[r][:k]] for r in rows], np.float32)
        hit = np.array([[h for h, _ in self.hits[r][:k]] for r in rows], np.int64)
        return sims, hit


def test_a_pair_at_exactly_the_threshold_is_kept_as_searched_and_as_rescored() -> None:
    """The threshold is the least similarity kept (``>=``): a pair scoring it exactly is a pair, as the
    search scores it and as a group's representatives rescore it."""
    index = _ListedIndex({0: [(0, 1.0), (1, 0.5)], 1: [(1, 1.0), (0, 0.5)]})
    got = neighbor_pairs(index, np.eye(2, dtype=np.float32), np.arange(2), k=1, threshold=0.5, progress=False)
    assert got.to_dict("list") == {"a": [0], "b": [1], "similarity": [0.5]}
    emb = np.array([[1, 0], [0.5, 0.75**0.5], [0.6, 0.8]], dtype=np.float32)  # row 2 a copy of row 1
    found = pd.DataFrame({"a": [0], "b": [2], "similarity": np.float32([0.6])})
    kept = scored_by_representatives(found, emb, np.array([0, 1, 1]), 0.5)
    assert kept.to_dict("list") == {"a": [0], "b": [2], "similarity": [0.5]}


def test_a_query_whose_last_hit_scores_the_threshold_exactly_is_searched_again() -> None:
    """Row 0's first hits are two copies of one group (k = 2 asks for 3 hits: itself and the two), the last
    scoring the threshold exactly: the query is one group short and its hits still reach the threshold,
    so it is searched again and meets row 3, at the threshold too."""
    hits = [(0, 1.0), (1, 0.5), (2, 0.5), (3, 0.5)]
    index = _ListedIndex({r: hits for r in range(4)})
    got = neighbor_pairs(
        index, np.eye(4, dtype=np.float32)[:1], np.array([0]), k=2, threshold=0.5, progress=False,
        copies=np.array([0, 1, 1, 3]),
    )  # fmt: skip
    assert list(zip(got["a"], got["b"], strict=True)) == [(0, 1), (0, 3)]


def _two_groups(hours: list[float | None], window_hours: float, nat: str = "keep") -> list[tuple[int, int]]:
    """The pairs of two groups of copies (rows 0 and 1, represented by 0; rows 2 and 3, by 2), close in
    meaning, at ``hours`` (None: undated), in a window of ``window_hours``: the same whichever group is
    searched, or both."""
    emb = unit(np.array([[1, 0], [1, 0.05], [0.9, 0.436], [0.9, 0.44]]))
    base = pd.Timestamp("2024-05-01", tz="UTC")
    times = pd.Series([pd.NaT if h is None else base + pd.Timedelta(hours=h) for h in hours])
    index = build_index(emb, use_gpu=False)
    found = []
    for query in ([0, 2], [0], [2]):
        rows = np.array(query)
        got = neighbor_pairs(
            index, emb[rows], rows, k=1, threshold=0.5, times=times, window=timedelta(hours=window_hours),
            nat=nat, progress=False, copies=np.array([0, 0, 2, 2]),
        )  # fmt: skip
        found.append(list(zip(got["a"].tolist(), got["b"].tolist(), strict=True)))
    assert found[1] == found[0] and found[2] == found[0]
    return found[0]


def test_two_groups_whose_closest_copies_tie_pair_through_the_earlier_copy() -> None:
    """Row 1 (hour 0) lies 10 hours from both copies of the other group (hours -10 and +10), in a 12-hour
    window, the representatives 110 hours apart: the pair is reported with the earlier of the two."""
    assert _two_groups([-100, 0, 10, -10], 12) == [(1, 3)]


def test_two_groups_whose_copies_lie_exactly_the_window_apart_are_paired() -> None:
    """The window holds its bound: copies 12 hours apart (rows 1 and 3) in a 12-hour window pair their
    groups, whose representatives lie 100 hours apart."""
    assert _two_groups([0, 10, 100, 22], 12) == [(1, 3)]


@pytest.mark.parametrize(
    ("undated", "ends"),
    [((3,), (0, 3)), ((1, 3), (0, 3)), ((1,), (1, 2))],
    ids=["later-group", "both-groups", "earlier-group"],
)
def test_two_groups_far_apart_pair_through_an_undated_copy(undated: tuple[int, ...], ends: tuple) -> None:
    """Representatives 100 hours apart in a 12-hour window, undated copies kept (``nat="keep"``): the pair
    is the earlier group's representative with the later group's undated copy, else the earlier group's
    undated copy with the later group's representative; none with ``nat="drop"``."""
    hours: list[float | None] = [0, 1, 100, 101]
    for row in undated:
        hours[row] = None
    assert _two_groups(hours, 12) == [ends]
    assert _two_groups(hours, 12, nat="drop") == []


def test_times_in_a_zone_with_summer_time_are_compared_as_instants() -> None:
    """00:30 GMT and 02:30 BST on the night London's clocks go forward are one hour apart, not the two their
    clocks say: within a 90-minute window."""
    emb = unit(np.array([[1, 0], [1, 0.05]]))
    times = pd.Series(pd.to_datetime(["2024-03-31 00:30", "2024-03-31 02:30"]).tz_localize("Europe/London"))
    index = build_index(emb, use_gpu=False)
    window = timedelta(minutes=90)
    rows = np.arange(2)
    got = neighbor_pairs(index, emb, rows, k=1, threshold=0.5, times=times, window=window, progress=False)
    assert list(zip(got["a"], got["b"], strict=True)) == [(0, 1)]
