"""Token-id batches: cut sequences of varying length into batches and pad each only to its own longest.

One mechanism for every forward pass over tokenised text: the bi-encoder's ``encode``, the cross-encoder's
``predict`` and both training loops. Inference sorts by length (:func:`sorted_batches`, longest first so the
biggest batch shows up early); training draws batches of similar length in a shuffled order
(:func:`bucketed_batches`), so a step pads little and still sees the data in a new order each epoch.

Example:
    >>> import numpy as np
    >>> ids = [[5, 6, 7], [8], [9, 10]]
    >>> [b.tolist() for b in sorted_batches(np.array([3, 1, 2]), batch_size=2)]
    [[0, 2], [1]]
    >>> batch = pad_batch(ids, [0, 1], pad_id=0)
    >>> batch["input_ids"].tolist(), batch["attention_mask"].tolist()
    ([[5, 6, 7], [8, 0, 0]], [[1, 1, 1], [1, 0, 0]])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def lengths_of(ids: Sequence[Sequence[int]]) -> np.ndarray:
    """Token count of each sequence, int64 ``(n,)``."""
    return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))


def first_of_each(ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose token ids no row before them has (int64, in order), and each other row with the
    earlier row it repeats (int64 ``(k, 2)``: row, first row with its ids).

    Example:
        >>> first, copies = first_of_each([[1, 2], [3], [1, 2], [3], [4]])
        >>> first.tolist(), copies.tolist()
        ([0, 1, 4], [[2, 0], [3, 1]])
    """
    seen: dict[tuple[int, ...], int] = {}
    first: list[int] = []
    copies: list[tuple[int, int]] = []
    for row, x in enumerate(ids):
        key = tuple(x)
        earlier = seen.setdefault(key, row)
        if earlier == row:
            first.append(row)
        else:
            copies.append((row, earlier))
    return np.asarray(first, dtype=np.int64), np.asarray(copies, dtype=np.int64).reshape(-1, 2)


def sorted_batches(lengths: np.ndarray, batch_size: int, max_tokens: int | None = None) -> list[np.ndarray]:
    """Row indices cut into batches of at most ``batch_size`` rows, longest sequences first.

    With ``max_tokens`` a batch also holds at most that many tokens (its longest row times its rows), so a
    batch of long texts has fewer rows.
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    batches: list[np.ndarray] = []
    start, n = 0, len(order)
    while start < n:
        size = batch_size
        if max_tokens:
            longest = int(lengths[order[start]])
            size = max(1, min(batch_size, max_tokens // max(longest, 1)))
        batches.append(order[start : start + size])
        start += size
    return batches


def bucketed_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Training batches: rows of similar length together, the batches in a random order.

    Rows are sorted by length plus a random jitter of up to a quarter of the longest length (so two epochs
    do not cut the same batches), cut into batches of ``batch_size`` and shuffled.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> sorted(int(i) for b in bucketed_batches(np.array([3, 9, 4, 8]), 2, rng) for i in b)
        [0, 1, 2, 3]
    """
    lengths = np.asarray(lengths, dtype=np.float64)
    if len(lengths) == 0:
        return []
    jitter = rng.uniform(0.0, max(1.0, float(lengths.max()) / 4), size=len(lengths))
    order = np.argsort(lengths + jitter, kind="stable")
    batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def padded_width(longest: int, multiple: int = 1) -> int:
    """``longest`` rounded up to a multiple of ``multiple``.

    Training pads to multiples of 8: a CPU's matrix kernels are set up once per shape, and a few widths
    instead of every length from 10 to 60 spare that set-up at most steps of the first epoch.

    Example:
        >>> padded_width(17, 8), padded_width(16, 8), padded_width(17)
        (24, 16, 17)
    """
    return -(-int(longest) // multiple) * multiple


def pad_batch(
    ids: Sequence[Sequence[int]],
    rows: Sequence[int],
    pad_id: int,
    types: Sequence[Sequence[int]] | None = None,
    multiple: int = 1,
) -> dict[str, np.ndarray]:
    """``input_ids`` and ``attention_mask`` (int64 ``(len(rows), width)``) of the sequences ``rows``,
    ``width`` the longest rounded up to ``multiple``; with ``types``, ``token_type_ids`` too."""
    width = padded_width(max((len(ids[r]) for r in rows), default=0), multiple)
    input_ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    type_ids = np.zeros((len(rows), width), dtype=np.int64) if types is not None else None
    for j, r in enumerate(rows):
        k = len(ids[r])
        input_ids[j, :k] = ids[r]
        mask[j, :k] = 1
        if type_ids is not None and types is not None:
            type_ids[j, :k] = types[r]
    out = {"input_ids": input_ids, "attention_mask": mask}
    if type_ids is not None:
        out["token_type_ids"] = type_ids
    return out
