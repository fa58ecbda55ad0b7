"""Inference batches in lanes (nlsim.encoders.lanes): the same numbers whatever the layout, each batch on
one thread, the caller's thread count kept, errors raised."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from nlsim.encoders import lanes, load_encoder, lower_states
from nlsim.encoders.lanes import lanes_for, run_batches
from nlsim.rerank.cross_encoder import CrossEncoder

TEXTS = [f"headline {i} about {'markets' if i % 3 else 'the weather'} today" * (1 + i % 4) for i in range(70)]


def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def two_threads() -> Iterator[None]:
    yield from _threads(2)


@pytest.fixture
def one_thread() -> Iterator[None]:
    yield from _threads(1)


def test_lanes_for_decides_by_device_runner_and_batches(two_threads):
    assert lanes_for("cpu", None, 5) == 2
    assert lanes_for("cpu", None, 1) == 1  # one batch: the plain loop on every thread
    assert lanes_for("cuda", None, 5) == 1
    assert lanes_for("cpu", object(), 5) == 1  # not a torch runner (ONNX Runtime sizes its own threads)

    class TorchCpu:
        torch_cpu = True

    assert lanes_for("cpu", TorchCpu(), 5) == 2
    with lanes.forced(1):
        assert lanes_for("cpu", None, 5) == 1
    with lanes.forced(3):
        assert lanes_for("cpu", None, 5) == 3
        assert lanes_for("cpu", None, 2) == 2
    torch.set_num_threads(1)
    assert lanes_for("cpu", None, 5) == 1
    with pytest.raises(ValueError, match="lanes must be >= 1"):
        with lanes.forced(0):
            pass


def test_run_batches_runs_each_batch_once_on_one_thread_and_keeps_the_callers_count(two_threads):
    seen: dict[int, tuple[int, str, bool]] = {}
    lock = threading.Lock()
    out = np.zeros(9)

    def work(rows: np.ndarray) -> None:
        with lock:
            for r in rows:
                assert int(r) not in seen
                seen[int(r)] = (
                    torch.get_num_threads(),
                    threading.current_thread().name,
                    torch.is_inference_mode_enabled(),
                )
        out[rows] = rows + 1

    done: list[int] = []
    batches = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5, 6, 7]), np.array([8])]
    run_batches(batches, work, lanes=2, on_done=done.append)
    assert out.tolist() == [float(i + 1) for i in range(9)]
    assert sorted(done) == [1, 2, 3, 3]
    assert {s[0] for s in seen.values()} == {1}  # each batch on one torch thread
    assert all(s[1].startswith("nlsim-lane") for s in seen.values())
    assert all(s[2] for s in seen.values())
    assert torch.get_num_threads() == 2
    seen.clear()
    run_batches(batches, work, lanes=1)  # the plain loop: the calling thread, every thread
    assert {s[1] for s in seen.values()} == {threading.current_thread().name}
    assert {s[0] for s in seen.values()} == {2}


def test_run_batches_raises_the_first_error_and_keeps_the_callers_count(two_threads):
    def work(rows: np.ndarray) -> None:
        if 3 in rows:
            raise RuntimeError("batch with row 3 failed")

    with pytest.raises(RuntimeError, match="row 3"):
        run_batches([np.array([0, 1]), np.array([2, 3]), np.array([4])], work, lanes=2)
    assert torch.get_num_threads() == 2


def test_encode_in_lanes_equals_one_pass_on_every_thread(two_threads):
    enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    with lanes.forced(1):
        one = enc.encode(TEXTS, batch_size=8, progress=False)
    with lanes.forced(2):
        two = enc.encode(TEXTS, batch_size=8, progress=False)
        again = enc.encode(TEXTS, batch_size=8, progress=False)
    assert np.array_equal(two, again)  # a batch's numbers do not depend on the lane that ran it
    assert np.abs(one - two).max() < 1e-5
    assert torch.get_num_threads() == 2


def test_cross_encoder_reads_in_lanes_as_in_one_pass(two_threads):
    ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2", 64, None, device="cpu")
    a, b = TEXTS[:40], TEXTS[30:70]
    with lanes.forced(1):
        one = ce.predict(a, b, batch_size=4)
    with lanes.forced(2):
        two = ce.predict(a, b, batch_size=4)
    assert np.abs(one - two).max() < 1e-6
    assert torch.get_num_threads() == 2


@pytest.mark.slow
def test_lanes_give_the_one_thread_numbers_to_the_bit(one_thread):
    enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2", 64, None, device="cpu")
    with lanes.forced(1):
        vectors, scores = enc.encode(TEXTS, batch_size=4, progress=False), ce.predict(TEXTS, TEXTS[::-1], 4)
    with lanes.forced(3):
        assert np.array_equal(enc.encode(TEXTS, batch_size=4, progress=False), vectors)
        assert np.array_equal(ce.predict(TEXTS, TEXTS[::-1], 4), scores)
    assert torch.get_num_threads() == 1


def test_kept_states_in_lanes_are_the_one_lane_states_and_repeated_ids_run_once(one_thread):
    """Repeated texts (and texts tokenised alike) straddle batch boundaries: each id sequence is computed
    once, so its kept state never depends on which lane finished first."""
    texts = [t for t in TEXTS[:30] for _ in range(3)] + [t.upper() for t in TEXTS[:5]]  # uncased: same ids
    kept_states = []
    for n in (1, 2):
        enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
        with lanes.forced(n), lower_states.kept(enc.model, layers=1) as record:
            v = enc.encode(texts, batch_size=4, progress=False)
            again = enc.encode(texts, batch_size=4, progress=False)
        assert record.computed == len({tuple(x) for x in enc.token_ids(texts)}) == 30
        assert record.reused == 30
        assert np.array_equal(v, again)
        assert np.array_equal(v[0], v[1]) and np.array_equal(v[0], v[90])  # repeats: the first's vector
        kept_states.append((v, record.states))
    (v1, s1), (v2, s2) = kept_states
    assert np.array_equal(v1, v2)
    assert s1.keys() == s2.keys() and all(torch.equal(s1[k], s2[k]) for k in s1)


def test_a_job_inside_a_lane_runs_in_that_lane(two_threads):
    inner: list[int] = []

    def work(rows: np.ndarray) -> None:
        inner.append(lanes_for("cpu", None, 8))

    with lanes.forced(2):
        run_batches([np.array([0]), np.array([1])], work, lanes=2)
    assert inner == [1, 1]


def test_lanes_for_keeps_other_devices_to_one_lane_and_forced_blocks_nest(two_threads):
    assert lanes_for("meta", None, 5) == 1  # only the CPU runs batches side by side
    with lanes.forced(3):
        with lanes.forced(1):
            assert lanes_for("cpu", None, 5) == 1
        assert lanes_for("cpu", None, 5) == 3  # the outer block's count again
    assert lanes_for("cpu", None, 5) == 2


def test_run_batches_reports_each_batch_in_the_plain_loop_and_carries_the_callers_context(two_threads):
    import contextvars

    done: list[int] = []
    run_batches([np.array([0, 1]), np.array([2])], lambda rows: None, lanes=1, on_done=done.append)
    assert done == [2, 1]
    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")
    where.set("caller")
    seen: list[str] = []
    run_batches([np.array([0]), np.array([1])], lambda rows: seen.append(where.get()), lanes=2)
    assert seen == ["caller", "caller"]  # a lane sees the caller's run context (a task's logger)
