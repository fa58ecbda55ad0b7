"""Near-duplicate graph: each query's k nearest neighbours above a similarity threshold, as unique pairs.

Rows are row positions in the index. A pair ``(a, b)`` has ``a < b`` and appears once, with the highest
similarity seen for it (an approximate index can score the two directions slightly differently).

Exact copies: with ``copies`` (each index row's representative, :class:`nlsim.clusters.copies.Copies`), a
query counts k *distinct* neighbours: its own copies are not neighbours, every copy of another group is
that group's representative, and a query whose k nearest hits hold fewer than k groups is searched again
with more hits until it has k or the rest score below the threshold (150 copies of one headline would
otherwise fill every copy's k neighbours). A GPU index returns 2,048 hits at most: a query still short
there (a group of more copies than that) is searched on to the end on a CPU copy of the index
(:meth:`nlsim.search.index.SearchIndex.uncapped`), so that a GPU run pairs it as a CPU run does.
The groups the time window (or a verdict) cuts one text into (a headline sent every day, a group a
day) count as one neighbour with ``same_text`` (each row's first copy of its text), and the query's own
text's other groups as none: they were each day's first hits, filled its k neighbours and were dropped as
out of the window, so a day's copy met none of the day's other items; each is still a hit, paired when
within the window.
A group asks for as many distinct neighbours as it has copies, k at least: the cluster rule reads a link to
a group as a link to each of its copies, and a wire story of 600 copies among 30 lone variants of it (a
character dropped, a word added) met k of the variants and not the story's other groups (the copies sent
with a label), so the rule parted one story; the neighbours it adds are no more than the copies.
Only representatives need be queried.

Time window: with ``times`` (datetime64, aligned with index rows) and ``window`` (a timedelta), a pair is
kept only when ``|t_a - t_b| <= window``. An item without a date (NaT) cannot be placed in time, so by
default its pairs are kept (``nat="keep"``): an undated copy of a story is still a copy. ``nat="drop"``
drops every pair with an undated side. With ``copies``, a pair of two groups is kept when any copy of one is
within the window of any copy of the other (or undated), and it is reported with those two copies.

Example:
    >>> import numpy as np
    >>> from nlsim.search.index import build_index
    >>> emb = np.array([[1, 0], [0.99, 0.141], [0, 1]], dtype="float32")
    >>> emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    >>> index = build_index(emb, use_gpu=False)
    >>> neighbor_pairs(index, emb, np.arange(3), k=2, threshold=0.9, progress=False).round(2)
       a  b  similarity
    0  0  1        0.99
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from nlsim.errors import ConfigError
from nlsim.progress import Progress

COLUMNS = ("a", "b", "similarity")
MOST_HITS = 1 << 22
"""The most hits one search call returns (a similarity and a row each: 12 bytes, about 200 MB in all): a
batch of queries asking for many hits each is searched in parts. An item searched again past the exact
copies of a story asks for more hits than the copies (4 x 11 at a time): 2,000 items near 12,000 copies of
one headline held 45,056 hits each at once (1.9 GB)."""


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {"a": np.empty(0, np.int64), "b": np.empty(0, np.int64), "similarity": np.empty(0, np.float32)}
    )


def _as_ns(times: Any, n: int | None) -> np.ndarray:
    series = times if isinstance(times, pd.Series) else pd.Series(np.asarray(times))
    arr = pd.to_datetime(series, utc=True)
    ns = arr.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").astype(np.int64)
    if n is not None and len(ns) < n:
        raise ConfigError(f"times has {len(ns)} entries but the index has {n} rows")
    return ns


def neighbor_pairs(
    index: Any,
    queries: np.ndarray,
    query_rows: np.ndarray,
    *,
    k: int,
    threshold: float,
    times: Any = None,
    window: timedelta | np.timedelta64 | pd.Timedelta | None = None,
    nat: str = "keep",
    batch_size: int = 4096,
    progress: bool = True,
    copies: np.ndarray | None = None,
    same_text: np.ndarray | None = None,
) -> pd.DataFrame:
    """Pairs ``(a, b, similarity)`` linking each query to its ``k`` nearest neighbours at ``>= threshold``.

    Args:
        index: a :class:`nlsim.search.index.SearchIndex` (anything with ``search(q, k) -> (sims, rows)`` and
            ``ntotal``).
        queries: float32 ``(m, dim)`` query vectors.
        query_rows: the row of each query in ``index`` (the query is its own first hit and is skipped).
            For an incremental run, add the new items to the index first and pass their rows: they are
            then matched against old and new items alike.
        k: neighbours per query, the query itself not counted (``k + 1`` are asked for).
        threshold: minimum similarity (inner product = cosine for unit vectors).
        times, window, nat: optional time-window filter (see the module docstring).
        copies: each index row's representative (int64, length ``ntotal``): hits read as their
            representatives, k distinct ones per query (see the module docstring).
        same_text: with ``copies``, each row's first copy of its text over the groups the time window
            cut one text into (:attr:`nlsim.clusters.copies.Copies.same_text`): those groups count as one
            neighbour, and the query's own text's other groups as none (see the module docstring).
        batch_size: queries searched at a time (bounds memory; an index with a ``batch_size(default)``
            method, such as a batched IVF index, may ask for more); progress: a bar in a terminal, lines
            in a log (:mod:`nlsim.progress`).

    Returns:
        DataFrame ``a`` (int64) < ``b`` (int64), ``similarity`` (float32), each pair once, sorted by
        ``(a, b)``.
    """
    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k}")
    q = np.ascontiguousarray(queries, dtype=np.float32)
    rows = np.asarray(query_rows, dtype=np.int64).ravel()
    if q.ndim != 2 or q.shape[0] != rows.shape[0]:
        raise ConfigError(f"{rows.shape[0]} query_rows for queries of shape {q.shape}")
    ntotal = int(index.ntotal)
    if rows.size and (rows.max() >= ntotal or rows.min() < 0):
        raise ConfigError(f"query_rows must be row positions in the index (0 .. {ntotal - 1})")
    if copies is not None and len(copies) != ntotal:
        raise ConfigError(f"copies has {len(copies)} entries but the index has {ntotal} rows")
    if same_text is not None and (copies is None or len(same_text) != ntotal):
        raise ConfigError(f"same_text needs copies and {ntotal} entries, one per index row")
    collect = _Collector(ntotal, k, threshold, times, window, nat, copies, same_text)
    kk = min(k + 1, max(ntotal, 1))
    m = q.shape[0]
    if hasattr(index, "batch_size"):
        batch_size = index.batch_size(batch_size, k=kk)
    batch_size = max(1, min(batch_size, MOST_HITS // kk))
    short: list[np.ndarray] = []
    with Progress(m, "neighbours", "queries", enabled=progress and m > 0) as bar:
        for start in range(0, m, batch_size):
            stop = min(start + batch_size, m)
            sims, hits = index.search(q[start:stop], kk)
            short.append(start + collect.add(rows[start:stop], sims, hits))
            bar.update(stop - start)
    again = np.concatenate(short) if short else np.zeros(0, np.int64)
    most = min(ntotal, getattr(index, "max_k", None) or ntotal)  # a GPU index returns 2,048 hits at most
    again, kk = _search_again(index, q, rows, collect, again, kk, most)
    if again.size and most < ntotal and hasattr(index, "uncapped"):
        # a group of more copies than the GPU's hits: the rest of its hits from a CPU copy of the index
        _search_again(index.uncapped(), q, rows, collect, again, kk, ntotal)
    return collect.result()


def _search_again(
    index: Any,
    q: np.ndarray,
    rows: np.ndarray,
    collect: _Collector,
    again: np.ndarray,
    kk: int,
    most: int,
) -> tuple[np.ndarray, int]:
    """Search the queries at positions ``again`` with four times the hits at a time, up to ``most``, while
    their hits hold fewer distinct groups than they ask for: the queries still short, and the hits last
    asked for."""
    while again.size and kk < most:
        kk = min(most, kk * 4)
        step, short = max(1, MOST_HITS // kk), []
        for start in range(0, again.size, step):
            part = again[start : start + step]
            sims, hits = index.search(q[part], kk)
            short.append(part[collect.add(rows[part], sims, hits)])
        again = np.concatenate(short)
    return again, kk


def row_cosines(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The cosine of each row of ``x`` with the same row of ``y`` (unit vectors), float32 and 1 at most: two
    identical unit vectors score 1.0000002 in float32, their sum rounded up (:func:`at_most_one`).

    >>> v = np.array([[0.6, 0.8]], dtype="float32")
    >>> float(row_cosines(v, v)[0]) <= 1.0
    True
    """
    return at_most_one(np.einsum("ij,ij->i", x, y))


def at_most_one(sims: np.ndarray) -> np.ndarray:
    """``sims`` as float32, a cosine above 1 (float32 rounding) as 1."""
    return np.minimum(sims, 1).astype(np.float32, copy=False)


def scored_by_representatives(
    pairs: pd.DataFrame, embeddings: np.ndarray, copies: np.ndarray, threshold: float
) -> pd.DataFrame:
    """``pairs`` (of :func:`neighbor_pairs` with ``copies``) with the pairs that touch a group of copies
    scored as their representatives' vectors score them, and those then below ``threshold`` left out.

    A hit on any copy counts its group as a neighbour (so that 2,048 hits on one headline's copies still
    find the group), but a copy's own vector can lie far from its representative's (a full-width or
    punctuated copy reads as other tokens to some models): scored by it, an item near that vector alone
    was linked to the group when it was searched (in a batch run, every item is) and not when it was not
    (a daily run searches the day's items only), and the two runs made other clusters. Scored by the
    representatives, the vector that stands for the group (:mod:`nlsim.clusters.copies`), both make the
    same pairs. Pairs of items without copies keep the search's score.

    >>> emb = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype="float32")  # row 2 a copy of row 1, read otherwise
    >>> found = pd.DataFrame({"a": [0], "b": [1], "similarity": np.float32([0.6])})  # row 0 hit row 2
    >>> len(scored_by_representatives(found, emb, np.array([0, 1, 1]), 0.5))
    0
    """
    copies = np.asarray(copies, dtype=np.int64)
    grouped = np.bincount(copies, minlength=len(copies)) > 1  # the representatives of two items or more
    a, b = pairs["a"].to_numpy(np.int64), pairs["b"].to_numpy(np.int64)
    touch = grouped[copies[a]] | grouped[copies[b]]
    if not touch.any():
        return pairs
    ra, rb = copies[a[touch]], copies[b[touch]]
    sims = pairs["similarity"].to_numpy(np.float32).copy()
    sims[touch] = row_cosines(embeddings[ra], embeddings[rb])
    keep = sims >= threshold
    return pd.DataFrame({"a": a[keep], "b": b[keep], "similarity": sims[keep]}).reset_index(drop=True)


class _Collector:
    """Turns search results (hits sorted by similarity, per query row) into unique filtered pairs."""

    def __init__(
        self,
        ntotal: int,
        k: int,
        threshold: float,
        times: Any,
        window: Any,
        nat: str,
        copies: np.ndarray | None = None,
        same_text: np.ndarray | None = None,
    ) -> None:
        if nat not in ("keep", "drop"):
            raise ConfigError(f"nat must be 'keep' or 'drop', got {nat!r}")
        self.ntotal, self.k, self.threshold, self.nat = ntotal, k, threshold, nat
        self.use_window = times is not None and window is not None
        if self.use_window:
            self.t_ns = _as_ns(times, ntotal)
            self.win_ns = int(pd.Timedelta(window).value)
            if self.win_ns < 0:
                raise ConfigError(f"window must not be negative, got {window}")
        self.copies = None if copies is None else np.asarray(copies, dtype=np.int64)
        self.same_text = None if same_text is None else np.asarray(same_text, dtype=np.int64)
        # the neighbours each row asks for: a representative as many as its group has copies, k at least
        self.wanted = np.full(ntotal, k, dtype=np.int64)
        if self.copies is not None:
            self.wanted = np.maximum(k, np.bincount(self.copies, minlength=ntotal)[self.copies])
        if self.use_window and self.copies is not None:
            # each group's rows, its dated ones first by time: a group's pairs are read in time through them
            undated = self.t_ns == np.iinfo(np.int64).min
            self.by_group = np.lexsort((np.arange(ntotal), self.t_ns, undated, self.copies))
            self.group_at = np.searchsorted(self.copies[self.by_group], np.arange(ntotal + 1))
            self.group_size = np.diff(self.group_at)  # each group's rows (0 for a row no group is led by)
            self.dated_in = np.bincount(self.copies[~undated], minlength=ntotal)  # each group's dated rows
        self.keys: list[np.ndarray] = []
        self.sims: list[np.ndarray] = []

    def add(self, rows: np.ndarray, sims: np.ndarray, hits: np.ndarray) -> np.ndarray:
        """Collect one search's pairs; returns the positions (in ``rows``) of the queries to search again
        with more hits: with ``copies``, those whose hits held fewer than k groups (a group of copies: fewer
        than its copies) while the last hit still reached the threshold."""
        own = rows[:, None]
        valid = (hits >= 0) & (hits != own)
        found = hits  # the rows hit; with copies, ``hits`` become their representatives
        if self.copies is not None:
            hits = np.where(hits >= 0, self.copies[np.maximum(hits, 0)], -1)
            own = self.copies[rows][:, None]
            valid &= hits != own
            valid &= _first_of_each(hits, valid, self.ntotal)
        # keep at most k hits per query besides itself (the query may not be the first of tied hits); a
        # group of copies as many as its copies
        wanted = self.wanted[rows]
        counted = valid
        if self.same_text is not None:
            # the groups of one text count as one neighbour, the query's own text's as none: a headline sent
            # every day, a group a day, would fill each day's k neighbours with the other days' copies,
            # which the time window then drops (each is still a hit, paired if within the window)
            texts = np.where(found >= 0, self.same_text[np.maximum(found, 0)], -1)
            other = valid & (texts != self.same_text[rows][:, None])
            counted = other & _first_of_each(texts, other, self.ntotal)
        valid &= np.cumsum(counted, axis=1) <= wanted[:, None]
        short = np.zeros(0, np.int64)
        if self.copies is not None:
            full = (counted & valid).sum(axis=1) >= wanted
            short = np.flatnonzero(~full & (found[:, -1] >= 0) & (sims[:, -1] >= self.threshold))
        valid &= sims >= self.threshold
        qa = np.broadcast_to(own, hits.shape)[valid]
        hb = hits[valid]
        sv = at_most_one(sims[valid])  # a cosine is 1 at most
        if self.use_window and qa.size and self.copies is not None:
            qa, hb, keep = self._within(qa, hb)
            qa, hb, sv = qa[keep], hb[keep], sv[keep]
        elif self.use_window and qa.size:
            undated, close = self._close(qa, hb)
            keep = np.where(undated, self.nat == "keep", close)
            qa, hb, sv = qa[keep], hb[keep], sv[keep]
        if qa.size:
            self.keys.append(np.minimum(qa, hb) * np.int64(self.ntotal) + np.maximum(qa, hb))
            self.sims.append(sv)
        return short

    def _close(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether rows ``a`` and ``b`` are undated (either), and whether they are within the window."""
        nat_ns = np.iinfo(np.int64).min  # NaT as int64
        ta, tb = self.t_ns[a], self.t_ns[b]
        undated = (ta == nat_ns) | (tb == nat_ns)
        with np.errstate(over="ignore"):
            close = np.abs(np.where(undated, 0, ta - tb)) <= self.win_ns
        return undated, close

    def _within(self, qa: np.ndarray, hb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ends each pair of two groups of copies (their representatives ``qa`` and ``hb``) is reported
        with, and whether it is kept: the two representatives where they are within the window of each
        other (or one is undated), else the two members of the groups closest in time that are (a copy 22
        hours after the next group's copy, 44 after its first item, pairs with that copy in a 24-hour
        window), else an undated member (``nat="keep"``). A pair is thus kept whatever copy of either group
        the search hit, and a daily run, whose groups grow by their copies, finds what a batch run finds."""
        undated, close = self._close(qa, hb)
        keep = np.where(undated, self.nat == "keep", close)
        qa, hb = qa.copy(), hb.copy()
        size = self.group_size
        grouped = (size[qa] > 1) | (size[hb] > 1)  # two items alone: no other ends
        for i in np.flatnonzero(~keep & grouped & self._may_meet(qa, hb, size)):
            ends = self._closest_members(int(qa[i]), int(hb[i]))
            if ends is not None:
                qa[i], hb[i] = ends
                keep[i] = True
        return qa, hb, keep

    def _may_meet(self, p: np.ndarray, q: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Whether groups ``p`` and ``q`` may hold a pair of copies :meth:`_closest_members` keeps: an undated
        member (``nat="keep"``), or dated ones whose spans (first to last time) come within the window of
        each other. Read for every pair at once, so that only those that may are read member by member."""
        nd_p, nd_q = self.dated_in[p], self.dated_in[q]
        undated = (nd_p < size[p]) | (nd_q < size[q])
        first_p = self.t_ns[self.by_group[self.group_at[p]]]
        first_q = self.t_ns[self.by_group[self.group_at[q]]]
        last_p = self.t_ns[self.by_group[self.group_at[p] + np.maximum(nd_p, 1) - 1]]
        last_q = self.t_ns[self.by_group[self.group_at[q] + np.maximum(nd_q, 1) - 1]]
        dated = (nd_p > 0) & (nd_q > 0)
        with np.errstate(over="ignore"):
            gap = np.where(dated, np.maximum(first_p - last_q, first_q - last_p), 0)
        return (undated & (self.nat == "keep")) | (dated & (gap <= self.win_ns))

    def _members(self, rep: int) -> np.ndarray:
        """The rows of the group ``rep`` represents, its dated ones first, by time."""
        return self.by_group[self.group_at[rep] : self.group_at[rep + 1]]

    def _closest_members(self, p: int, q: int) -> tuple[int, int] | None:
        """A member of group ``p`` and one of group ``q`` within the window of each other (the two dated
        ones closest in time, the earliest such pair on a tie), else, where undated pairs are kept, an
        undated member with the other group's representative (the later group's member with the earlier
        group's representative, by their representatives' times, where the later group has one);
        ``None`` when there are none."""
        nat_ns = np.iinfo(np.int64).min
        if (self.t_ns[q], q) < (self.t_ns[p], p):  # the same ends whichever group was searched
            ends = self._closest_members(q, p)
            return None if ends is None else (ends[1], ends[0])
        mp, mq = self._members(p), self._members(q)
        dp, dq = mp[self.t_ns[mp] != nat_ns], mq[self.t_ns[mq] != nat_ns]
        if dp.size and dq.size:
            tp, tq = self.t_ns[dp], self.t_ns[dq]
            at = np.searchsorted(tq, tp)
            lo, hi = np.clip(at - 1, 0, tq.size - 1), np.clip(at, 0, tq.size - 1)
            near = np.where(np.abs(tp - tq[lo]) <= np.abs(tq[hi] - tp), lo, hi)
            gap = np.abs(tp - tq[near])
            best = int(np.argmin(gap))
            if gap[best] <= self.win_ns:
                return int(dp[best]), int(dq[near[best]])
        if self.nat == "keep":
            if dq.size < mq.size:
                return p, int(mq[dq.size])
            if dp.size < mp.size:
                return int(mp[dp.size]), q
        return None

    def result(self) -> pd.DataFrame:
        if not self.keys:
            return _empty()
        return _unique(np.concatenate(self.keys), np.concatenate(self.sims), self.ntotal)


def _first_of_each(hits: np.ndarray, valid: np.ndarray, ntotal: int) -> np.ndarray:
    """True at the first valid hit of each distinct value in its row (later hits of the same group are
    not further neighbours)."""
    first = np.zeros(hits.shape, bool)
    flat = np.flatnonzero(valid.ravel())
    if flat.size:
        key = (flat // hits.shape[1]) * np.int64(ntotal + 1) + hits.ravel()[flat]
        _, at = np.unique(key, return_index=True)
        first.ravel()[flat[at]] = True
    return first


def _unique(key: np.ndarray, sim: np.ndarray, base: int) -> pd.DataFrame:
    """Each key once with its highest similarity, sorted by key; key = a * base + b."""
    order = np.lexsort((-sim, key))
    key, sim = key[order], sim[order]
    first = np.ones(key.shape[0], dtype=bool)
    first[1:] = key[1:] != key[:-1]
    key, sim = key[first], sim[first]
    return pd.DataFrame({"a": key // base, "b": key % base, "similarity": sim.astype(np.float32, copy=False)})


def merge_pairs(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Combine pair tables (e.g. one per query chunk): each pair once with its highest similarity, sorted.

    Example:
        >>> a = pd.DataFrame({"a": [0, 1], "b": [1, 2], "similarity": [0.9, 0.8]})
        >>> b = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.95]})
        >>> merge_pairs([a, b])
           a  b  similarity
        0  0  1        0.95
        1  1  2        0.80
    """
    frames = [f for f in frames if len(f)]
    if not frames:
        return _empty()
    a = np.concatenate([f["a"].to_numpy(np.int64) for f in frames])
    b = np.concatenate([f["b"].to_numpy(np.int64) for f in frames])
    sim = np.concatenate([f["similarity"].to_numpy(np.float32) for f in frames])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    base = int(hi.max()) + 1
    return _unique(lo * base + hi, sim, base)


def knn_graph(index: Any, emb: np.ndarray, *, k: int, threshold: float, **kwargs: Any) -> pd.DataFrame:
    """The whole near-duplicate graph of an index built from ``emb`` (row i = ``emb[i]``).

    Example:
        >>> import numpy as np
        >>> from nlsim.search.index import build_index
        >>> emb = np.eye(3, dtype="float32")
        >>> len(knn_graph(build_index(emb, use_gpu=False), emb, k=2, threshold=0.5, progress=False))
        0
    """
    return neighbor_pairs(index, emb, np.arange(emb.shape[0]), k=k, threshold=threshold, **kwargs)
