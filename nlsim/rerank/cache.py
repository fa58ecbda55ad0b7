"""Cross-encoder scores already computed, kept per cross-encoder under ``$NLSIM_HOME/pair-scores/``.

A cross-encoder scores one pair per forward pass (in both text orders), and a report's candidate pairs are
mostly the same from one run to the next (the same corpus rerun, or the kept window of a daily run). The
cache maps a pair of texts (as scored: converted, in either order, the score being symmetric) to its score,
in one Parquet file per cross-encoder (its weights digest), written atomically after each run. A changed
cross-encoder has another digest, so it never reads another's scores.

Example:
    >>> import tempfile
    >>> cache = PairScoreCache(tempfile.mkdtemp(), "d" * 64)
    >>> calls = []
    >>> def score(a, b):
    ...     calls.append(len(a))
    ...     return np.array([0.5] * len(a))
    >>> first = cache.scores(["x", "y"], ["y", "z"], score).tolist()
    >>> first, cache.scores(["y"], ["x"], score).tolist(), calls
    ([0.5, 0.5], [0.5], [2])
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from nlsim.io.atomic import atomic_write_parquet, why_not_kept
from nlsim.io.model_cache import nlsim_home
from nlsim.progress import say, warn

MAX_ROWS = 2_000_000
"""Scores kept per cross-encoder (the most recent)."""


def pair_key(a: str, b: str) -> str:
    """The key of a text pair, the same in either order."""
    x, y = (a, b) if a <= b else (b, a)
    return hashlib.sha1(f"{x}\x1f{y}".encode()).hexdigest()


class PairScoreCache:
    """Scores of one cross-encoder (``digest``) in ``root`` (default ``$NLSIM_HOME/pair-scores``)."""

    def __init__(self, root: str | Path | None, digest: str) -> None:
        self.root = Path(root or nlsim_home() / "pair-scores")
        self.digest = digest
        self.path = self.path_for("")
        self._known: dict[str, float] | None = None
        self._tag = ""

    def path_for(self, tag: str) -> Path:
        """The file of scores computed on inference path ``tag`` (``""``: the exact fp32 scores)."""
        return self.root / f"{self.digest[:32]}{'-' + tag if tag else ''}.parquet"

    def known(self, tag: str = "") -> dict[str, float]:
        if self._known is None or tag != self._tag:
            self._tag, self.path = tag, self.path_for(tag)
            self._known = {}
            if self.path.is_file():
                try:
                    frame = pd.read_parquet(self.path)
                    self._known = dict(zip(frame["key"], frame["score"].astype(float), strict=True))
                except Exception:  # noqa: BLE001 - a damaged cache is rebuilt, never trusted
                    say(f"pair-score cache {self.path} is unreadable; scoring again")
        return self._known

    def scores(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        score: Callable[[list[str], list[str]], np.ndarray],
        tag: str = "",
        *,
        say_hits: bool = True,
    ) -> np.ndarray:
        """The scores of the pairs: cached ones looked up, the others computed with ``score`` and stored.
        ``tag`` names a lossy inference path (its scores are kept apart from the exact ones). A pair that
        occurs twice is scored once. ``say_hits``: say how many were cached."""
        known = self.known(tag)
        keys = [pair_key(a, b) for a, b in zip(texts_a, texts_b, strict=True)]
        todo = [i for i, k in enumerate(keys) if k not in known]
        out = np.array([known.get(k, np.nan) for k in keys], dtype=np.float64)
        if todo:
            # a pair that occurs twice (either order) is scored once
            got = each_pair_once([texts_a[i] for i in todo], [texts_b[i] for i in todo], score, ordered=False)
            for i, s in zip(todo, got, strict=True):
                known[keys[i]] = float(s)
                out[i] = s
            self._save()
        if len(keys) and say_hits:
            missing = len({keys[i] for i in todo})
            say(f"cross-encoder: {len(keys) - missing:,} of {len(keys):,} pairs scored before (cache)")
        return out

    def lookup(self, texts_a: Sequence[str], texts_b: Sequence[str], tag: str = "") -> np.ndarray:
        """The cached score of each pair, NaN where none is."""
        known = self.known(tag)
        return np.array(
            [known.get(pair_key(a, b), np.nan) for a, b in zip(texts_a, texts_b, strict=True)],
            dtype=np.float64,
        )

    def store(
        self, texts_a: Sequence[str], texts_b: Sequence[str], scores: np.ndarray, tag: str = ""
    ) -> None:
        """Keep the scores of these pairs (NaN ones are not kept) and write the cache."""
        known = self.known(tag)
        for a, b, s in zip(texts_a, texts_b, np.asarray(scores, dtype=np.float64), strict=True):
            if not np.isnan(s):
                known[pair_key(a, b)] = float(s)
        self._save()

    def _save(self) -> None:
        known = self.known(self._tag)
        items = list(known.items())[-MAX_ROWS:]
        frame = pd.DataFrame(
            {"key": [k for k, _ in items], "score": np.array([s for _, s in items], np.float64)}
        )
        try:
            atomic_write_parquet(frame, self.path)
        except OSError as exc:  # a full or read-only NLSIM_HOME: the scores are in hand; the cache only saves
            warn(
                f"cross-encoder cache: {self.path} not kept ({why_not_kept(exc)}); the run goes on with "
                "its scores"
            )


def each_pair_once(
    texts_a: list[str],
    texts_b: list[str],
    score: Callable[[list[str], list[str]], np.ndarray],
    *,
    ordered: bool,
) -> np.ndarray:
    """``score(texts_a, texts_b)`` (float64, a score per pair) with each pair of texts scored once: the copies
    of a wire story that the time window or an editor's verdict cut into groups of their own (each searched
    for its neighbours) bring the same two texts again, a pair each, and the cross-encoder read them as
    often. ``ordered``: ``(x, y)`` and ``(y, x)`` are two pairs (one reading order), else one (a score of
    both orders).

    >>> calls = []
    >>> score = lambda x, y: calls.append(len(x)) or np.arange(len(x), dtype=float)
    >>> each_pair_once(["a", "a", "b", "c"], ["b", "b", "a", "d"], score, ordered=True), calls
    (array([0., 0., 1., 2.]), [3])
    >>> each_pair_once(["a", "a", "b"], ["b", "b", "a"], score, ordered=False)
    array([0., 0., 0.])
    """
    keys = [(x, y) if ordered or x <= y else (y, x) for x, y in zip(texts_a, texts_b, strict=True)]
    first: dict[tuple[str, str], int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    if len(first) == len(keys):
        return np.asarray(score(texts_a, texts_b), dtype=np.float64)
    rows = list(first.values())
    got = np.asarray(score([texts_a[i] for i in rows], [texts_b[i] for i in rows]), dtype=np.float64)
    at = {key: n for n, key in enumerate(first)}
    return got[[at[key] for key in keys]]
