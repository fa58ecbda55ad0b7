"""A first look before the whole pass: a lossy path's outputs read on a spread of the rows first, and the
rest only when the outputs seen so far keep to the limits that one item alone can break.

The quality check (:mod:`nlsim.training.lossy_check`) compares each lossy path's outputs with fp32's on
every validation text (a bi-encoder) or pair (a cross-encoder). Two of its limits hold item by item: the
lowest cosine between a text's vector and its fp32 vector, and the largest difference between a
cross-encoder score and fp32's. Once a first look breaks one of them, the whole pass would break it too
(the lowest cosine of the texts read is at most that of a part of them), so the verdict is known and the
rest is not read: a path that fails (int8 on the fine-tuned model measured) costs a fifth of its pass.
Where the first look keeps to them, the rest is read and the path is judged on every row, the two reads'
outputs put back in the rows' order. A path whose outputs depend on the batch they are read in (dynamic
int8 scales its activations by the batch's range; bf16 sums in another order in another shape) gives
figures a little different from one pass over all the rows; whatever batches they came from, a text's
vector below the floor is one the path gave, and a first look that found one fails the path.

Example:
    >>> import numpy as np
    >>> seen = []
    >>> def read(rows):
    ...     seen.extend(rows.tolist())
    ...     return rows * 10.0
    >>> look = read_with_first_look(1000, read, lambda rows, out: bool((out > 5000).any()))
    >>> look.stopped, len(look.rows), look.of, len(seen)
    (True, 200, 1000, 200)
    >>> full = read_with_first_look(1000, read, lambda rows, out: False)
    >>> full.stopped, np.array_equal(full.outputs, np.arange(1000) * 10.0)
    (False, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SHARE = 0.2
"""The share of the rows a first look reads."""
MIN_ROWS = 64
"""The fewest rows a first look reads; where that would be more than half of them, all are read at once."""


def first_look_rows(n: int) -> np.ndarray:
    """The rows a first look at ``n`` rows reads: a fifth of them (at least :data:`MIN_ROWS`), evenly spread
    over their order, so that short and long texts, early and late pairs are all among them; every row
    where that would be more than half of them (a small check is read in one pass).

    >>> first_look_rows(1000)[:4].tolist(), len(first_look_rows(1000)), len(first_look_rows(100))
    ([0, 5, 10, 15], 200, 100)
    """
    size = max(MIN_ROWS, math.ceil(SHARE * n))
    if 2 * size > n:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, size).round().astype(np.int64))


@dataclass(frozen=True)
class FirstLook:
    """What :func:`read_with_first_look` read: the ``rows`` (ascending; every row unless ``stopped``) and
    their ``outputs`` in that order, of ``of`` rows in all."""

    rows: np.ndarray
    outputs: np.ndarray
    of: int

    @property
    def stopped(self) -> bool:
        """The first look broke a limit, and the rest was not read."""
        return len(self.rows) < self.of


def read_with_first_look(
    n: int,
    read: Callable[[np.ndarray], np.ndarray],
    broken: Callable[[np.ndarray, np.ndarray], bool],
    look_first: bool = True,
) -> FirstLook:
    """Read ``n`` rows with ``read(rows)`` (one output row per row, e.g. vectors or scores): the first look's
    rows (:func:`first_look_rows`) first, and, unless ``broken(rows, outputs)`` says they break a limit
    that a part breaks only if the whole does, the rest. ``look_first=False`` reads the rest whatever the
    first look found (a benchmark that prints every path's figures): the same reads, so the same outputs,
    as a check that goes on."""
    look = first_look_rows(n)
    seen = np.asarray(read(look))
    if len(look) == n or (look_first and broken(look, seen)):
        return FirstLook(look, seen, n)
    rest = np.setdiff1d(np.arange(n), look, assume_unique=True)
    more = np.asarray(read(rest))
    outputs = np.empty((n, *seen.shape[1:]), dtype=np.result_type(seen, more))
    outputs[look], outputs[rest] = seen, more
    return FirstLook(np.arange(n), outputs, n)
