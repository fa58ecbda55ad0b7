"""Training time told as it goes, and the chain's estimate of a whole run."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from nlsim.chain.eta import ChainWork, describe
from nlsim.encoders.batching import (
    bucketed_batches,
    first_of_each,
    lengths_of,
    pad_batch,
    padded_width,
    sorted_batches,
)
from nlsim.training.clock import Outlook, TrainingClock, clock_text, timed_steps


def test_the_clock_says_the_estimate_once_and_each_epoch() -> None:
    lines: list[str] = []
    rates: list[float] = []
    clock = TrainingClock("x", total_steps=6, epochs=2, log=lines.append, first_steps=2, on_rate=rates.append)
    for _ in range(3):
        clock.step()
    clock.epoch_done(1, "loss 1.0")
    for _ in range(3):
        clock.step()
    clock.epoch_done(2, "loss 0.5")
    assert len(rates) == 1 and rates[0] > 0
    assert lines[0].startswith("x: 6 steps in 2 epoch(s), about")
    assert "left" in lines[1] and lines[1].startswith("x epoch 1/2: loss 1.0;")
    assert "left" not in lines[2] and lines[2].startswith("x epoch 2/2: loss 0.5;")
    assert len(lines) == 3


def test_paused_time_is_not_part_of_the_step_rate() -> None:
    import time

    clock = TrainingClock("x", total_steps=4, epochs=1, log=lambda _: None, first_steps=1)
    with clock.pause():
        time.sleep(0.2)
    clock.step()
    rate = clock.seconds_per_step()
    assert rate is not None and rate < 0.1


def test_clock_text() -> None:
    assert [clock_text(s) for s in (0.4, 59, 60, 3599, 3600)] == [
        "0 s",
        "59 s",
        "1 min 00 s",
        "59 min 59 s",
        "1 h 00 min",
    ]
    assert clock_text(59.6) == "1 min 00 s" and clock_text(0.6) == "1 s"  # rounded, not cut


def test_the_estimate_grows_with_the_work() -> None:
    work = dict(
        train_pairs=1000,
        validation_pairs=300,
        text_tokens=24.0,
        pair_tokens=40.0,
        epochs=2,
        cross_encoder_epochs=3,
        batch_size=16,
        layers=12,
        frozen=4,
        cross_encoder_frozen=4,
        corpus_items=10_000,
        reranker=True,
    )
    small = ChainWork(**work).estimate(0.1)
    more_epochs = ChainWork(**{**work, "cross_encoder_epochs": 6}).estimate(0.1)
    no_reranker = ChainWork(**{**work, "reranker": False}).estimate(0.1)
    assert more_epochs["cross-encoder"] > 1.9 * small["cross-encoder"] * 0.9
    assert "cross-encoder" not in no_reranker and no_reranker["report"] < small["report"]
    assert ChainWork(**work).estimate(0.2)["bi-encoder"] == 2 * small["bi-encoder"]
    assert "about" in describe(small)


def test_side_by_side_the_cross_encoder_counts_only_what_outlasts_the_bi_encoder() -> None:
    from nlsim.training.clock import SIDE_BY_SIDE_GAIN

    work = dict(
        train_pairs=1000, validation_pairs=300, text_tokens=24.0, pair_tokens=40.0, epochs=2,
        cross_encoder_epochs=3, batch_size=16, layers=12, frozen=4, cross_encoder_frozen=4,
        corpus_items=0, reranker=True,
    )  # fmt: skip
    alone = ChainWork(**work).estimate(1.0)  # one at a time, the rate on all the threads
    beside = ChainWork(**{**work, "side_by_side": True}).estimate(SIDE_BY_SIDE_GAIN)  # on half of them
    assert beside["bi-encoder"] == pytest.approx(SIDE_BY_SIDE_GAIN * alone["bi-encoder"])
    assert beside["cross-encoder"] < alone["cross-encoder"]
    # its first part (the frozen pass and one epoch of three) runs beside: the whole is less than the sum
    assert sum(beside.values()) < sum(alone.values())
    one_epoch = ChainWork(**{**work, "side_by_side": True, "cross_encoder_epochs": 1}).estimate(
        SIDE_BY_SIDE_GAIN
    )
    assert one_epoch["cross-encoder"] < beside["cross-encoder"]


def test_batches_cover_every_row_once() -> None:
    lengths = np.array([5, 30, 7, 22, 9, 31, 4])
    rng = np.random.default_rng(0)
    for batches in (sorted_batches(lengths, 3), bucketed_batches(lengths, 3, rng)):
        rows = sorted(int(r) for b in batches for r in b)
        assert rows == list(range(len(lengths)))
        assert all(len(b) <= 3 for b in batches)
    first = sorted_batches(lengths, 3)[0]
    assert list(lengths[first]) == [31, 30, 22]  # longest first
    assert sorted_batches(lengths, 8, max_tokens=62)[0].tolist() == [5, 1]  # at most 62 tokens


def test_bucketed_batches_group_similar_lengths_and_change_order() -> None:
    lengths = np.array([10] * 32 + [50] * 32)
    rng = np.random.default_rng(1)
    batches = bucketed_batches(lengths, 16, rng)
    assert all(len(set(lengths[b].tolist())) == 1 for b in batches)  # no short row padded to 50
    again = bucketed_batches(lengths, 16, rng)
    assert [b.tolist() for b in batches] != [b.tolist() for b in again]


def test_padding() -> None:
    assert padded_width(1, 8) == 8 and padded_width(9, 8) == 16
    batch = pad_batch([[1, 2, 3], [4]], [1, 0], pad_id=9, types=[[0, 0, 1], [0]], multiple=4)
    assert batch["input_ids"].tolist() == [[4, 9, 9, 9], [1, 2, 3, 9]]
    assert batch["attention_mask"].tolist() == [[1, 0, 0, 0], [1, 1, 1, 0]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 0], [0, 0, 1, 0]]


def test_lengths_and_repeated_rows() -> None:
    assert lengths_of([[1, 2, 3], [], [4]]).tolist() == [3, 0, 1]
    first, copies = first_of_each([[1, 2], [1, 3], [1, 2], [1], [1, 3], [1, 2]])
    assert first.tolist() == [0, 1, 3]  # [1, 3] is not [1, 2]: the whole of a row's ids is its key
    assert copies.tolist() == [[2, 0], [4, 1], [5, 0]]  # (row, the earlier row it repeats)
    first, copies = first_of_each([[7], [8]])
    assert first.tolist() == [0, 1] and copies.shape == (0, 2)


def test_sorted_batches_keep_the_input_order_among_rows_of_one_length() -> None:
    (batch,) = sorted_batches(np.array([3, 1] * 20), 40)
    assert batch.tolist() == list(range(0, 40, 2)) + list(range(1, 40, 2))


def test_a_token_budget_sizes_each_batch_by_its_own_longest_row_within_batch_size() -> None:
    lengths = np.array([10, 5, 5, 5, 5, 5])
    assert [b.tolist() for b in sorted_batches(lengths, 8, max_tokens=20)] == [[0, 1], [2, 3, 4, 5]]
    assert [b.tolist() for b in sorted_batches(np.full(4, 2), 2, max_tokens=100)] == [[0, 1], [2, 3]]
    # a row longer than the budget still goes, alone
    assert [b.tolist() for b in sorted_batches(np.array([50, 40, 3]), 8, max_tokens=30)] == [[0], [1], [2]]


def test_bucketed_batches_cut_new_batches_each_epoch_in_a_shuffled_order() -> None:
    rng = np.random.default_rng(0)
    assert bucketed_batches(np.array([], dtype=np.int64), 4, rng) == []
    same = np.full(32, 10)  # one length: only the jitter makes two epochs' batches differ
    epochs = [{frozenset(b.tolist()) for b in bucketed_batches(same, 8, rng)} for _ in range(2)]
    assert epochs[0] != epochs[1]
    lengths = np.repeat([10, 50, 90], 4)  # apart by more than the jitter: one batch each
    orders = [[int(lengths[b][0]) for b in bucketed_batches(lengths, 4, rng)] for _ in range(5)]
    assert all(sorted(o) == [10, 50, 90] for o in orders)
    assert any(o != sorted(o) for o in orders)  # the batches in a random order, not shortest first


def test_padding_is_to_the_longest_row_of_the_batch_only() -> None:
    assert padded_width(16, 8) == 16 and padded_width(0, 8) == 0
    ids = [[1, 2, 3], [4]]
    assert pad_batch(ids, [1], pad_id=0)["input_ids"].tolist() == [[4]]  # row 0's length does not count
    assert pad_batch(ids, [0], pad_id=0)["input_ids"].shape == (1, 3)  # no rounding unless asked
    assert "token_type_ids" not in pad_batch(ids, [0], pad_id=0)


def test_a_long_epoch_has_a_heartbeat_with_the_steps_done_and_the_time_left() -> None:
    """An epoch of e5 on a small CPU takes many minutes: between the estimate and the epoch's line, a line
    every minute (of a stand-in clock here: 2 s per step, 150 steps per epoch)."""
    now = [0.0]
    lines: list[str] = []
    clock = TrainingClock(
        "bi-encoder", total_steps=300, epochs=2, log=lines.append, now=lambda: now[0], warmup_steps=0
    )
    for step in range(1, 301):
        now[0] += 2.0
        clock.step()
        if step == 150:
            clock.epoch_done(1, "loss 1.0")
    clock.epoch_done(2, "loss 0.5")
    beats = [line for line in lines if ": step " in line]
    # the estimate at step 8 (16 s); a beat 60 s after the last line said: steps 38, 68, ..., 128; the
    # epoch line at 150; beats at 180, ..., 300
    assert [int(b.split("step ")[1].split("/")[0]) for b in beats] == [
        38,
        68,
        98,
        128,
        180,
        210,
        240,
        270,
        300,
    ]
    assert beats[0] == "bi-encoder: step 38/300 (epoch 1/2), 1 min 16 s elapsed, about 8 min 44 s left"
    assert "(epoch 2/2)" in beats[4] and beats[-1].endswith("about 0 s left")
    quiet = TrainingClock(
        "x", total_steps=300, epochs=2, log=lines.append, now=lambda: now[0], heartbeat_s=1e9
    )
    before = len(lines)
    for _ in range(300):
        now[0] += 2.0
        quiet.step()
    assert len(lines) == before + 1  # the estimate alone


class FakeClock:
    """A clock read that moves only when the test says so."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_rate_leaves_out_the_slow_warm_up_steps() -> None:
    # A GPU's first steps took ten times the rest: the rate and the time left come from the steps after them.
    now = FakeClock()
    lines: list[str] = []
    rates: list[float] = []
    clock = TrainingClock(
        "x", total_steps=100, epochs=1, log=lines.append, warmup_steps=5, first_steps=8,
        on_rate=rates.append, now=now,
    )  # fmt: skip
    for i in range(13):
        now.t += 10.0 if i < 5 else 1.0
        clock.step()
        if i < 12:
            assert clock.seconds_per_step() is None and not rates
    assert rates == [1.0]
    assert clock.seconds_per_step() == 1.0 and clock.remaining() == 87.0
    # the loop's whole time: the 58 s already spent and 87 steps at 1 s
    assert lines == [
        "x: 100 steps in 1 epoch(s), about 2 min 25 s on this machine (1.00 s/step after 5 warm-up steps)"
    ]


def test_the_time_left_is_right_when_the_steps_keep_their_rate() -> None:
    # the estimate said after warm-up, against the time the loop then took (fake clock: no timed test)
    now = FakeClock()
    rates: list[float] = []
    clock = TrainingClock("x", total_steps=200, epochs=2, log=lambda _: None, on_rate=rates.append, now=now)
    left_when_said = None
    for i in range(200):
        now.t += 3.0 if i < 3 else 0.5 + 0.1 * (i % 3)  # three slow steps, then batches of varying width
        clock.step()
        if rates and left_when_said is None:
            left_when_said, said_at = clock.remaining(), now.t
    assert left_when_said is not None
    actual = now.t - said_at
    assert abs(left_when_said - actual) <= 0.05 * actual


def test_validation_after_the_warm_up_is_left_out_of_the_rate() -> None:
    now = FakeClock()
    clock = TrainingClock(
        "x", total_steps=40, epochs=1, log=lambda _: None, warmup_steps=2, first_steps=4, now=now
    )
    for i in range(6):
        now.t += 5.0 if i < 2 else 2.0
        if i == 3:
            with clock.pause():
                now.t += 60.0
        clock.step()
    assert clock.seconds_per_step() == 2.0


def test_the_chain_estimate_counts_only_the_steps_left() -> None:
    work = ChainWork(
        train_pairs=160, validation_pairs=0, text_tokens=24.0, pair_tokens=40.0, epochs=2,
        cross_encoder_epochs=3, batch_size=16, layers=12, frozen=4, cross_encoder_frozen=4,
        corpus_items=0, reranker=False,
    )  # fmt: skip
    assert work.bi_encoder_steps() == 20
    assert work.estimate(1.0)["bi-encoder"] == 20.0
    assert work.estimate(1.0, bi_steps_done=13)["bi-encoder"] == pytest.approx(7.0)


def test_the_report_part_comes_from_the_first_report_when_one_was_timed() -> None:
    work = dict(
        train_pairs=160, validation_pairs=0, text_tokens=20.0, pair_tokens=40.0, epochs=2,
        cross_encoder_epochs=3, batch_size=16, layers=12, frozen=4, cross_encoder_frozen=4,
        corpus_items=1000, reranker=False,
    )  # fmt: skip
    # a zero-shot report of the same corpus took 30 s: the report (no reranker) takes as long, whatever the
    # training rate (inference runs on a faster path: on a GPU the guess from training was 9x too long)
    assert ChainWork(**work).estimate(5.0, first_report_s=30.0)["report"] == 30.0
    assert ChainWork(**work).estimate(5.0)["report"] != 30.0
    # with a reranker, its candidate pairs add their token-layers in proportion: 0.2 x 2 x 40 / 20 = 0.8
    reranked = ChainWork(**{**work, "reranker": True}).estimate(5.0, first_report_s=30.0)
    assert abs(reranked["report"] - 30.0 * 1.8) < 1e-9


def test_the_chain_estimate_counts_the_evaluation_and_the_quality_check() -> None:
    """The test split scored after training, the current model scored on new validation pairs and the
    quality check of the lossy paths are parts of the estimate, as the passes they make (the check's
    builds on the CPU as PATH_SETUP_PASSES passes): leaving them out said 1.5 minutes for 4.5."""
    from nlsim.chain.eta import PATH_SETUP_PASSES

    work = dict(
        train_pairs=480, validation_pairs=492, text_tokens=24.0, pair_tokens=46.0, epochs=2,
        cross_encoder_epochs=1, batch_size=16, layers=12, frozen=4, cross_encoder_frozen=4,
        corpus_items=0, reranker=True,
    )  # fmt: skip
    unit = 1.0 / (2 * 16 * 24.0 * 8 * 3)  # seconds per token-layer at 1 s a bi-encoder step
    texts, pairs = 2 * 492 * 24.0 * 12 * unit, 492 * 46.0 * 12 * unit  # one pass over the validation pairs
    plain = ChainWork(**work).estimate(1.0)
    assert "evaluation" not in plain and "quality check" not in plain  # nothing to evaluate or check
    # three lossy paths of each model on the CPU: each built, one pass over the pairs (the fastest passes;
    # the fp32 reference is training's)
    checked = ChainWork(**{**work, "lossy_paths": 3}).estimate(1.0)
    per_model = 1 + 3 * PATH_SETUP_PASSES
    assert abs(checked["quality check"] - per_model * (texts + pairs)) < 1e-6
    on_gpu = ChainWork(**{**work, "lossy_paths": 2, "built_paths": False}).estimate(1.0)
    assert abs(on_gpu["quality check"] - 2 * (texts + pairs)) < 1e-6  # each half precision, no build
    alone = ChainWork(**{**work, "lossy_paths": 3, "reranker": False}).estimate(1.0)
    assert abs(alone["quality check"] - per_model * texts) < 1e-6
    # the test split (300 pairs) and a current model with a reranker scored on the validation pairs
    evaluated = ChainWork(**{**work, "test_pairs": 300, "incumbent_reranker": True}).estimate(1.0)
    test = (2 * 300 * 24.0 * 12 + 300 * 46.0 * 12) * unit
    assert abs(evaluated["evaluation"] - (test + texts + pairs)) < 1e-6
    assert sum(evaluated.values()) > sum(plain.values()) + test


def test_the_forward_only_parts_run_at_the_first_reports_rate_where_it_was_timed() -> None:
    """The evaluation, the quality check and the trainings' validation read the pairs forward only, as the
    report does: on a 2-core CPU with avx512_bf16 and no AMX the training rate said 1 min 35 s for a quality
    check of 47 s, and 11 min for a chain of 8. Where the zero-shot first report was timed, they take its
    rate, whatever the training's."""
    from nlsim.chain.eta import PATH_SETUP_PASSES

    work = dict(
        train_pairs=480, validation_pairs=492, text_tokens=24.0, pair_tokens=46.0, epochs=2,
        cross_encoder_epochs=1, batch_size=16, layers=12, frozen=4, cross_encoder_frozen=4,
        corpus_items=1000, reranker=True, test_pairs=300, lossy_paths=3,
    )  # fmt: skip
    forward = 30.0 / (1000 * 24.0 * 12)  # seconds per token-layer of the first report's embedding
    texts, pairs = 2 * 492 * 24.0 * 12, 492 * 46.0 * 12
    slow, fast = (ChainWork(**work).estimate(rate, first_report_s=30.0) for rate in (5.0, 0.5))
    for est in (slow, fast):  # the training's rate moves the trainings alone
        assert est["quality check"] == pytest.approx((1 + 3 * PATH_SETUP_PASSES) * (texts + pairs) * forward)
        assert est["evaluation"] == pytest.approx((2 * 300 * 24.0 * 12 + 300 * 46.0 * 12) * forward)
    for rate, est in ((5.0, slow), (0.5, fast)):  # its 60 steps at its rate, its validation passes forward
        assert est["bi-encoder"] == pytest.approx(60 * rate + 2 * texts * forward)
    untimed = ChainWork(**work).estimate(5.0)  # no first report: the training rate, as before
    unit = 5.0 / (2 * 16 * 24.0 * 8 * 3)  # seconds per token-layer at 5 s a bi-encoder step
    assert untimed["quality check"] == pytest.approx((1 + 3 * PATH_SETUP_PASSES) * (texts + pairs) * unit)


def test_the_lossy_paths_counted_are_those_the_cpu_can_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """None on an avx2-only CPU (the check measures nothing there), int8 and bf16 ones where the CPU has
    VNNI and bf16 instructions, each built and timed first; on a CPU with AMX-BF16 one, bf16, untimed
    (unless ``NLSIM_PROBE=off``)."""
    import torch

    from nlsim.chain.run import lossy_paths_here
    from nlsim.inference.onnx import onnxruntime_available

    cpu = torch.device("cpu")
    monkeypatch.setenv("NLSIM_PROBE", "on")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx avx2 fma")
    assert lossy_paths_here(cpu) == (0, True)
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx512_vnni avx512_bf16")
    assert lossy_paths_here(cpu) == ((3 if onnxruntime_available() else 2), True)
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8")
    assert lossy_paths_here(cpu) == (1, False)
    monkeypatch.setenv("NLSIM_PROBE", "cached")  # times nothing either: the same rule
    assert lossy_paths_here(cpu) == (1, False)
    monkeypatch.setenv("NLSIM_PROBE", "off")  # no rule: every path, in the table's order
    assert lossy_paths_here(cpu) == ((3 if onnxruntime_available() else 2), True)


def _side_by_side_loop(clock: TrainingClock, now: FakeClock, replan: bool) -> list[float | None]:
    """A cross-encoder's three epochs as the chain runs them side by side: a first epoch of 100 steps at
    1 s a step on half the threads, then later epochs of 60 and 50 steps at 0.6 s a step on all of them.
    Returns the time left the clock said after each step."""
    left: list[float | None] = []
    for epoch, (steps, rate) in enumerate([(100, 1.0), (60, 0.6), (50, 0.6)], start=1):
        if epoch == 2:
            clock.repace()
        if replan and epoch > 1:
            clock.replan(clock.steps + steps * (3 - epoch + 1))
        for _ in range(steps):
            now.t += rate
            clock.step()
            left.append(clock.remaining())
        clock.epoch_done(epoch, "loss 0.5")
    return left


def test_the_estimate_foresees_shorter_later_epochs_on_more_threads() -> None:
    """The cross-encoder's first estimate, said in its first epoch beside the bi-encoder, reckons with its
    later epochs' fewer steps and faster pace (the estimate before said 300 steps at 1 s: 5 min, for a
    loop of 166 s); once they begin, the rate is measured again on their pace."""
    from nlsim.training.clock import Outlook

    now, lines = FakeClock(), []
    outlook = Outlook(
        100, share=0.6, pace=0.6, said="its later epochs on all 2 threads, without most easy pairs"
    )
    clock = TrainingClock("cross-encoder", 300, 3, lines.append, now=now, outlook=outlook)
    left = _side_by_side_loop(clock, now, replan=True)
    took = 100 * 1.0 + 110 * 0.6  # 166 s
    assert lines[0] == (
        "cross-encoder: 300 steps at most in 3 epoch(s), about 2 min 52 s on this machine (1.00 s/step "
        "after 5 warm-up steps; its later epochs on all 2 threads, without most easy pairs)"
    )  # 100 s for the first epoch and 2 x 60 steps at 0.6 s: 172 s, against the 166 s it took
    assert abs(left[12] - (took - 13.0)) <= 0.05 * took
    first_epoch = next(line for line in lines if line.startswith("cross-encoder epoch 1/3: loss 0.5;"))
    assert first_epoch.endswith("about 1 min 12 s left")  # 2 x 60 steps at 0.6 s
    assert left[100] == pytest.approx(0.6 * 119)  # the rate before times the pace stands in
    assert left[-20] == pytest.approx(0.6 * 19)  # measured again on the new pace
    blind = TrainingClock("cross-encoder", 300, 3, lambda _: None, now=FakeClock())
    assert blind.outlook is None
    left_blind = _side_by_side_loop(blind, blind.now, replan=True)  # type: ignore[arg-type]
    assert left_blind[12] == pytest.approx(287.0)  # what the estimate said before: 300 steps at 1 s
    assert left_blind[100] > 1.5 * left[100]  # its later epochs read at the first's pace


def test_a_pace_change_before_the_rate_was_measured_times_the_new_pace() -> None:
    now, lines = FakeClock(), []
    clock = TrainingClock("x", 40, 2, lines.append, now=now, warmup_steps=2, first_steps=4)
    for _ in range(3):
        now.t += 1.0
        clock.step()
    clock.repace()
    assert clock.seconds_per_step() is None and not lines
    for _ in range(6):
        now.t += 0.5
        clock.step()
    assert clock.seconds_per_step() == 0.5 and len(lines) == 1 and "0.50 s/step" in lines[0]


def test_a_one_epoch_loop_foresees_no_later_epochs() -> None:
    from nlsim.training.clock import Outlook

    now, lines = FakeClock(), []
    outlook = Outlook(20, share=0.6, pace=0.6, said="its later epochs on all 2 threads")
    clock = TrainingClock("x", 20, 1, lines.append, now=now, warmup_steps=0, first_steps=2, outlook=outlook)
    for _ in range(2):
        now.t += 1.0
        clock.step()
    assert clock.outlook is None
    assert lines == [
        "x: 20 steps in 1 epoch(s), about 20 s on this machine (1.00 s/step after 0 warm-up steps)"
    ]


def test_short_later_epochs_on_a_new_pace_still_get_an_estimate() -> None:
    """A first epoch of 10 steps (under the 5 warm-up and 8 timed ones) and two later epochs of 6 steps
    after the pace changed: their rate is timed without a second warm-up."""
    from nlsim.training.clock import Outlook

    now, lines = FakeClock(), []
    clock = TrainingClock("ce", 30, 3, lines.append, now=now, outlook=Outlook(10, share=0.6, pace=0.6))
    for epoch, steps in enumerate((10, 6, 6), start=1):
        if epoch == 2:
            clock.repace()
            clock.replan(clock.steps + 2 * steps)
        for _ in range(steps):
            now.t += 1.0 if epoch == 1 else 0.5
            clock.step()
        clock.epoch_done(epoch, "loss")
    assert clock.seconds_per_step() == 0.5
    assert any(line.startswith("ce: 22 steps in 3 epoch(s), about") for line in lines)


def test_a_short_loop_times_the_steps_it_has_and_at_least_one() -> None:
    """A loop of 6 steps leaves out 1 and times the 5 after it, so that its estimate comes at its last
    step; a caller asking for no timed steps gets one (a mean over no steps is no rate)."""
    assert timed_steps(6) == (1, 5)
    assert timed_steps(100, first_steps=0) == (5, 1)
    now, lines = FakeClock(), []
    clock = TrainingClock("x", 6, 1, lines.append, now=now)
    for _ in range(6):
        now.t += 1.0
        clock.step()
    assert clock.seconds_per_step() == 1.0 and len(lines) == 1


def test_no_heartbeat_comes_before_the_estimate() -> None:
    """The heartbeat tells the time left: while slow warm-up steps run (30 s each here, over the 60 s
    between two beats), nothing is said until the estimate."""
    now, lines = FakeClock(), []
    clock = TrainingClock("x", 100, 1, lines.append, now=now)  # 5 warm-up steps, 8 timed
    for i in range(13):
        now.t += 30.0 if i < 5 else 1.0
        clock.step()
    assert len(lines) == 1 and lines[0].startswith("x: 100 steps in 1 epoch(s), about")


def test_the_steps_planned_at_the_first_epochs_end_replace_the_outlook() -> None:
    """The outlook stands in for the later epochs only until they are planned: told at the first epoch's
    end that 60 steps are left (not the 2 x 60 it foresaw), the clock says 60 steps' time; a plan of
    fewer steps than were done leaves none to do."""
    now = FakeClock()
    clock = TrainingClock(
        "x", 300, 3, lambda _: None, now=now, warmup_steps=0, first_steps=2, outlook=Outlook(100, share=0.6)
    )
    for _ in range(100):
        now.t += 1.0
        clock.step()
    assert clock.remaining() == pytest.approx(120.0)  # foreseen: 2 x 60 steps at 1 s
    clock.replan(clock.steps + 60)
    assert clock.remaining() == pytest.approx(60.0)
    clock.replan(50)
    assert clock.total_steps == 100 and clock.remaining() == 0.0


def test_the_estimate_tells_the_outlook_only_where_it_holds() -> None:
    """The estimate says "at most" only where the later epochs leave steps out, and the outlook's words
    only while it stands in (not for a rate first measured in the later epochs)."""
    outlook = Outlook(20, share=1.0, pace=0.5, said="its later epochs on all 2 threads")
    now, lines = FakeClock(), []
    clock = TrainingClock("x", 40, 2, lines.append, now=now, warmup_steps=0, first_steps=2, outlook=outlook)
    for _ in range(2):
        now.t += 1.0
        clock.step()
    assert lines == [
        "x: 40 steps in 2 epoch(s), about 30 s on this machine "
        "(1.00 s/step after 0 warm-up steps; its later epochs on all 2 threads)"
    ]
    now, lines = FakeClock(), []
    clock = TrainingClock("x", 40, 2, lines.append, now=now, warmup_steps=2, first_steps=4, outlook=outlook)
    for k in range(7):
        if k == 3:
            clock.repace()
        now.t += 1.0
        clock.step()
    assert len(lines) == 1 and lines[0].endswith("(1.00 s/step after 0 warm-up steps)")


def test_every_pause_is_left_out_of_the_rate() -> None:
    """A loop validates after each epoch: the rate leaves out every pause, not only the last."""
    now = FakeClock()
    clock = TrainingClock("x", 40, 2, lambda _: None, warmup_steps=0, first_steps=6, now=now)
    for i in range(6):
        if i in (2, 4):
            with clock.pause():
                now.t += 30.0
        now.t += 1.0
        clock.step()
    assert clock.seconds_per_step() == 1.0


def test_each_epoch_line_says_that_epochs_own_time() -> None:
    now, lines = FakeClock(), []
    clock = TrainingClock("x", 20, 2, lines.append, now=now, warmup_steps=0, first_steps=2, heartbeat_s=1e9)
    for epoch, rate in ((1, 3.0), (2, 2.0)):
        for _ in range(10):
            now.t += rate
            clock.step()
        clock.epoch_done(epoch, "loss 1.0")
    assert lines[-1] == "x epoch 2/2: loss 1.0; 20 s, 50 s elapsed"


def test_the_estimates_load_without_torch() -> None:
    """The chain's estimate and the clock are arithmetic: importing them loads no torch (a fresh interpreter,
    since this one has torch loaded already)."""
    code = "import sys, nlsim.chain.eta, nlsim.training.clock; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _small_chain(**changed: object) -> ChainWork:
    """A chain small enough to count by hand: 160 training pairs in batches of 16, 50 validation pairs,
    12 layers of which 4 frozen (both models), no corpus."""
    work: dict[str, object] = dict(
        train_pairs=160, validation_pairs=50, text_tokens=24.0, pair_tokens=40.0, epochs=1,
        cross_encoder_epochs=3, batch_size=16, layers=12, frozen=4, cross_encoder_frozen=4,
        corpus_items=0, reranker=True,
    )  # fmt: skip
    return ChainWork(**{**work, **changed})  # type: ignore[arg-type]


UNIT = 1.0 / (2 * 16 * 24.0 * 8 * 3)
"""Seconds per token-layer of :func:`_small_chain` at 1 s a bi-encoder step."""


def test_a_last_short_batch_is_a_step_of_its_own() -> None:
    """170 pairs in batches of 16 are 11 steps an epoch (the last of 10 pairs), not 10."""
    assert _small_chain(train_pairs=170, epochs=2).bi_encoder_steps() == 22


def test_the_bi_encoder_part_is_never_below_nothing_past_its_steps() -> None:
    """A rate measured once the steps counted are done (or more: a count taken of another subset) leaves
    nothing of the bi-encoder's training, not a negative time taken off the other parts."""
    work = _small_chain(validation_pairs=0, reranker=False)  # 10 steps
    assert work.estimate(1.0, bi_steps_done=10)["bi-encoder"] == 0.0
    assert work.estimate(1.0, bi_steps_done=25)["bi-encoder"] == 0.0


def test_a_first_report_of_no_items_is_no_measure_of_the_forward_rate() -> None:
    """A first report of an empty corpus timed nothing: the forward passes go by the training's rate."""
    work = _small_chain(test_pairs=30, lossy_paths=2)
    assert work.estimate(1.0, first_report_s=5.0) == work.estimate(1.0)


def test_the_cross_encoder_part_counts_each_pass_it_makes() -> None:
    """Its frozen pass over the training sequences (each pair twice) and the validation pairs (twice),
    its first epoch whole and the later two over the share of the pairs left once the easy ones go, and
    one validation pass after each epoch."""
    from nlsim.training.easy_pairs import LATER_EPOCH_SHARE

    frozen = (2 * 160 + 2 * 50) * 40.0 * 4
    epoch = (2 * 160 // 16) * 16 * 40.0 * 8 * 3
    validation = 2 * 50 * 40.0 * 8
    est = _small_chain(cross_encoder_drops_easy=True).estimate(1.0)
    expected = frozen + epoch + validation + 2 * (LATER_EPOCH_SHARE * epoch + validation)
    assert est["cross-encoder"] == pytest.approx(expected * UNIT)
    # no epoch: the frozen pass alone
    assert _small_chain(cross_encoder_epochs=0).estimate(1.0)["cross-encoder"] == pytest.approx(frozen * UNIT)


def test_side_by_side_a_cross_encoder_outlasted_by_the_bi_encoder_counts_its_later_epochs_alone() -> None:
    """Its first part (the frozen pass and first epoch) run beside a bi-encoder that takes much longer
    counts nothing, not less than nothing; its later epochs run after it on all the threads: the
    training's rate and the forward rate as measured alone (the rate is measured on half the threads)."""
    from nlsim.training.clock import SIDE_BY_SIDE_GAIN

    epoch = (2 * 160 // 16) * 16 * 40.0 * 8 * 3
    validation = 2 * 50 * 40.0 * 8
    long_bi = {"epochs": 20, "side_by_side": True}
    beside = _small_chain(**long_bi).estimate(SIDE_BY_SIDE_GAIN)
    assert beside["cross-encoder"] == pytest.approx(2 * (epoch + validation) * UNIT)
    assert _small_chain(**long_bi, cross_encoder_epochs=1).estimate(SIDE_BY_SIDE_GAIN)["cross-encoder"] == 0.0


def test_the_evaluation_scores_pairs_only_with_a_reranker() -> None:
    """The test split's pairs go through the reranker only where there is one; the current model's run
    over the validation pairs counts its texts whether or not it has a reranker, its pairs where it has."""
    texts, pairs = 2 * 50 * 24.0 * 12 * UNIT, 50 * 40.0 * 12 * UNIT
    test_texts, test_pairs = 2 * 30 * 24.0 * 12 * UNIT, 30 * 40.0 * 12 * UNIT
    alone = _small_chain(reranker=False, test_pairs=30).estimate(1.0)
    assert alone["evaluation"] == pytest.approx(test_texts)
    plain_incumbent = _small_chain(test_pairs=30, incumbent_reranker=False).estimate(1.0)
    assert plain_incumbent["evaluation"] == pytest.approx(test_texts + test_pairs + texts)
    reranked_incumbent = _small_chain(reranker=False, test_pairs=30, incumbent_reranker=True).estimate(1.0)
    assert reranked_incumbent["evaluation"] == pytest.approx(test_texts + texts + pairs)


def test_the_estimate_line_says_the_sum_of_the_parts() -> None:
    line = describe({"bi-encoder": 60.0, "report": 75.0})
    assert (
        line
        == "estimated time on this machine: about 2 min 15 s more (bi-encoder 1 min 00 s, report 1 min 15 s)"
    )
