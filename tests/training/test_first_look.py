"""A first look before the whole pass (nlsim/training/first_look.py), and the quality check that uses it."""

from __future__ import annotations

import numpy as np
import pytest

from nlsim.training.first_look import MIN_ROWS, first_look_rows, read_with_first_look


@pytest.mark.parametrize("n", [1, 64, 127, 128, 320, 321, 1236, 5000])
def test_the_first_look_reads_a_spread_fifth_or_everything_at_once(n: int) -> None:
    rows = first_look_rows(n)
    assert np.all(np.diff(rows) > 0) and rows[0] == 0 and rows[-1] == n - 1
    if 2 * max(MIN_ROWS, int(np.ceil(0.2 * n))) > n:
        assert len(rows) == n  # a small pass is read in one go
    else:
        assert len(rows) == max(MIN_ROWS, int(np.ceil(0.2 * n))) and 2 * len(rows) <= n
        assert np.diff(rows).max() <= int(np.ceil(n / len(rows))) + 1  # spread, not the first rows


def test_a_first_look_that_breaks_a_limit_reads_no_more() -> None:
    reads: list[np.ndarray] = []

    def read(rows: np.ndarray) -> np.ndarray:
        reads.append(rows)
        return np.stack([rows, -rows], axis=1).astype(np.float32)

    look = read_with_first_look(1000, read, lambda rows, out: bool((out[:, 0] >= 500).any()))
    assert look.stopped and len(reads) == 1 and np.array_equal(look.rows, first_look_rows(1000))
    assert np.array_equal(look.outputs[:, 0], look.rows)


def test_a_first_look_within_the_limits_reads_the_rest_once_in_order() -> None:
    reads: list[np.ndarray] = []

    def read(rows: np.ndarray) -> np.ndarray:
        reads.append(rows)
        return np.stack([rows, -rows], axis=1).astype(np.float32)

    look = read_with_first_look(1000, read, lambda rows, out: False)
    assert not look.stopped and len(reads) == 2
    assert sorted(np.concatenate(reads).tolist()) == list(range(1000))  # each row read once
    assert np.array_equal(look.outputs, read(np.arange(1000)))
    small = read_with_first_look(50, read, lambda rows, out: True)  # one pass: nothing left to spare
    assert not small.stopped and len(small.rows) == 50


def test_a_check_that_goes_on_whatever_it_finds_reads_as_one_that_goes_on() -> None:
    """``look_first=False`` (a benchmark's every figure): the same reads, so the same outputs, as a first
    look within the limits, even where the first look breaks them."""
    reads: list[np.ndarray] = []

    def read(rows: np.ndarray) -> np.ndarray:
        reads.append(rows)
        return rows.astype(np.float64) ** 2

    on = read_with_first_look(1000, read, lambda rows, out: True, look_first=False)
    assert not on.stopped and [len(r) for r in reads] == [200, 800]
    reads.clear()
    within = read_with_first_look(1000, read, lambda rows, out: False)
    assert [len(r) for r in reads] == [200, 800] and np.array_equal(on.outputs, within.outputs)
