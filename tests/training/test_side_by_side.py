"""The reranker's cross-encoder trained beside the bi-encoder: the same models whatever the timing, no
random number taken from the other training, the threads shared and given back, and a failure on either
side reaching the caller with nothing left running."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from stsb_helpers import small_reranker_config, stsb_sample

from nlsim.training import bi_encoder, cross_encoder, finetune, side_by_side
from nlsim.training.config import CrossEncoderConfig, FinetuneConfig
from nlsim.training.cross_encoder import CrossEncoderTraining
from nlsim.training.data import prepare_pairs
from nlsim.training.dropout import drawn_from
from nlsim.training.split_encoder import SplitEncoder


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return stsb_sample(train=48, validation=24, test=0)


def _config(out: Path, **changes: object) -> FinetuneConfig:
    """Two threads to share, two cross-encoder epochs (the second waits for the bi-encoder)."""
    settings: dict[str, object] = {"threads": 2, "cross_encoder_epochs": 2, "eval_test": False, **changes}
    return small_reranker_config(out, **settings)


def _digest(module: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().float().contiguous().numpy().tobytes())
    return h.hexdigest()


def _models(out: Path) -> tuple[str, str, float, float]:
    """Digests of the saved bi-encoder's and cross-encoder's weights, and the reranker's cosine line (fitted
    on the training texts' embeddings, which the cross-encoder's idle thread helps compute)."""
    from nlsim.encoders import load_encoder
    from nlsim.rerank.reranker import load_reranker

    reranker = load_reranker(out)
    assert reranker is not None
    ce = reranker.cross_encoder
    models = _digest(load_encoder(str(out)).model), _digest(ce.model) + _digest(ce.head)
    return (*models, reranker.slope, reranker.intercept)


def _no_cross_encoder_thread() -> bool:
    return not any(t.name == "nlsim-cross-encoder" for t in threading.enumerate())


def test_it_applies_on_a_cpu_with_two_threads_and_a_reranker_only(tmp_path: Path) -> None:
    assert side_by_side.applies(_config(tmp_path), "cpu")
    assert not side_by_side.applies(_config(tmp_path, threads=1), "cpu")
    assert not side_by_side.applies(_config(tmp_path), "cuda")
    assert not side_by_side.applies(_config(tmp_path, reranker=False), "cpu")
    assert not side_by_side.applies(_config(tmp_path, side_by_side=False), "cpu")
    # unfrozen word embeddings: every layer runs transformers' own dropout, from torch's shared generator
    assert not side_by_side.applies(_config(tmp_path, freeze_embeddings=False), "cpu")


@pytest.mark.slow
def test_the_models_are_the_same_to_the_bit_whichever_training_is_slower(
    pairs: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real_epoch = bi_encoder._train_epoch

    def epoch(*args: Any, **kwargs: Any) -> float:
        seen.append(torch.get_num_threads())
        return real_epoch(*args, **kwargs)

    monkeypatch.setattr(bi_encoder, "_train_epoch", epoch)

    finetune.finetune(_config(tmp_path / "plain"), pairs=pairs)
    assert torch.get_num_threads() == 2  # given back
    plain = _models(tmp_path / "plain")

    begun: list[side_by_side.SideBySide] = []
    real_begin = side_by_side.SideBySide.begin

    def begin(self: side_by_side.SideBySide) -> None:
        begun.append(self)
        real_begin(self)

    def slow_epoch(*args: Any, **kwargs: Any) -> float:  # the cross-encoder's first epoch ends first
        deadline = time.monotonic() + 300  # waited for, not slept for: a loaded machine is no faster
        while not (begun and not begun[-1]._thread.is_alive()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return epoch(*args, **kwargs)

    spare: list[tuple[bool, int]] = []  # (the cross-encoder's thread had begun, its threads idle)
    real_spare = side_by_side.SideBySide.spare_threads

    def told(self: side_by_side.SideBySide) -> int:
        spare.append((self._begun.is_set(), real_spare(self)))
        return spare[-1][1]

    monkeypatch.setattr(side_by_side.SideBySide, "spare_threads", told)
    monkeypatch.setattr(side_by_side.SideBySide, "begin", begin)
    monkeypatch.setattr(bi_encoder, "_train_epoch", slow_epoch)
    finetune.finetune(_config(tmp_path / "slow-bi"), pairs=pairs)
    monkeypatch.setattr(bi_encoder, "_train_epoch", epoch)
    assert _models(tmp_path / "slow-bi") == plain
    assert (False, 1) in spare  # the cross-encoder's thread, not yet begun: a lane of the frozen pass
    assert (True, 1) in spare  # and idle after its first epoch: a lane of the embedding passes

    real_step = side_by_side.SideBySide._after_step

    def slow_step(self: side_by_side.SideBySide) -> None:  # the bi-encoder finishes first
        time.sleep(0.2)
        real_step(self)

    monkeypatch.setattr(side_by_side.SideBySide, "_after_step", slow_step)
    finetune.finetune(_config(tmp_path / "slow-ce"), pairs=pairs)
    assert _models(tmp_path / "slow-ce") == plain
    assert seen == [1, 1, 1]  # the bi-encoder trained on its half of the threads each time
    assert _no_cross_encoder_thread()


@pytest.mark.slow
@pytest.mark.parametrize("threads", [2, 3])
def test_the_cross_encoders_first_epoch_trains_in_its_thread_on_half_and_the_rest_in_the_callers_on_all(
    pairs: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    where: list[tuple[str, int]] = []
    tokenizers: list[Any] = []
    trainings: list[CrossEncoderTraining] = []
    real_epoch = cross_encoder._train_epoch
    real_train, real_training = bi_encoder.train_encoder, side_by_side.CrossEncoderTraining

    def epoch(*args: Any, **kwargs: Any) -> float:
        where.append((threading.current_thread().name, torch.get_num_threads()))
        return real_epoch(*args, **kwargs)

    def train(encoder: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        tokenizers.append(encoder.tokenizer)
        return real_train(encoder, *args, **kwargs)

    def training(ce: Any, *args: Any, **kwargs: Any) -> CrossEncoderTraining:
        tokenizers.append(ce.tokenizer)
        where.append(("cross-encoder begins", torch.get_num_threads()))
        trainings.append(real_training(ce, *args, **kwargs))
        return trainings[-1]

    real_prepare = SplitEncoder.prepare

    def prepare(self: SplitEncoder, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name != "nlsim-cross-encoder":
            where.append(("bi-encoder's frozen pass", kwargs.get("lanes", 1)))
        return real_prepare(self, *args, **kwargs)

    monkeypatch.setattr(cross_encoder, "_train_epoch", epoch)
    monkeypatch.setattr(finetune, "train_encoder", train)
    monkeypatch.setattr(side_by_side, "CrossEncoderTraining", training)
    monkeypatch.setattr(SplitEncoder, "prepare", prepare)
    finetune.finetune(_config(tmp_path / "m", cross_encoder_epochs=3, threads=threads), pairs=pairs)
    caller = threading.current_thread().name
    beside = threads - threads // 2
    # the bi-encoder's frozen passes (training and validation texts) first, in lanes on every thread
    assert where[:2] == [("bi-encoder's frozen pass", threads)] * 2
    assert where[2:] == [
        ("cross-encoder begins", beside),
        ("nlsim-cross-encoder", beside),
        (caller, threads),
        (caller, threads),
    ]
    assert _no_cross_encoder_thread()
    # each training tokenises with its own tokenizer object (each call sets its truncation on it)
    assert len(tokenizers) == 2 and tokenizers[0] is not tokenizers[1]
    # its clock foresaw the later epochs on every thread, and measured their rate afresh when they began
    clock = trainings[0].run.clock
    gain = min(side_by_side.SIDE_BY_SIDE_GAIN, threads / beside)  # 3 threads: from 2 to 3, 1.5
    assert clock.outlook is not None and clock.outlook.pace == 1 / gain
    assert clock.outlook.said.startswith(f"its later epochs on all {threads} threads")
    assert clock.paced_from == trainings[0].run.per_epoch > 0


@pytest.mark.slow
def test_one_model_at_a_time_trains_as_without_it(pairs: pd.DataFrame, tmp_path: Path) -> None:
    finetune.finetune(_config(tmp_path / "beside"), pairs=pairs)
    finetune.finetune(_config(tmp_path / "one", side_by_side=False), pairs=pairs)
    finetune.finetune(_config(tmp_path / "one-thread", threads=1), pairs=pairs)
    bi_beside, ce_beside, *_ = _models(tmp_path / "beside")
    bi_one, ce_one, *_ = _models(tmp_path / "one")
    # one model at a time on two threads: neither model is the side-by-side run's (other masks, other sums)
    assert ce_one != ce_beside
    # the side-by-side bi-encoder trains on one thread, drawing from torch's seeded generator as alone
    assert bi_beside == _models(tmp_path / "one-thread")[0]


def test_a_cross_encoder_beside_draws_no_number_from_torchs_default_generator(pairs: pd.DataFrame) -> None:
    cfg = FinetuneConfig.of(model="paraphrase-MiniLM-L3-v2", conversion="none", max_length=48)
    data = prepare_pairs(cfg, pairs)
    from nlsim.rerank.cross_encoder import CrossEncoder

    ce = CrossEncoder.from_base("paraphrase-MiniLM-L3-v2", 48)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    ce_cfg = CrossEncoderConfig(epochs=2, batch_size=8, log_every=0, drop_easy=0.1)
    with drawn_from(torch.Generator().manual_seed(1)):
        training = CrossEncoderTraining(ce, data.train, data.validation, ce_cfg, log=lambda m: None)
        while not training.done:
            training.epoch()
    assert torch.equal(torch.get_rng_state(), before)
    assert [h["epoch"] for h in training.result().history] == [1, 2]


def _fails_cleanly(pairs: pd.DataFrame, out: Path, error: type[Exception], message: str) -> None:
    """The run raises ``error``, leaves no cross-encoder thread and no model folder, and gives the threads
    back."""
    with pytest.raises(error, match=message):
        finetune.finetune(_config(out), pairs=pairs)
    assert _no_cross_encoder_thread()
    assert torch.get_num_threads() == 2
    assert not out.exists()


@pytest.mark.slow
def test_a_failing_bi_encoder_stops_the_cross_encoder_beside_it(
    pairs: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: Any, **kwargs: Any) -> dict[str, Any]:
        time.sleep(1.0)  # the cross-encoder is under way
        raise RuntimeError("the bi-encoder broke")

    monkeypatch.setattr(finetune, "train_encoder", failing)
    _fails_cleanly(pairs, tmp_path / "m", RuntimeError, "the bi-encoder broke")


@pytest.mark.slow
def test_a_failing_cross_encoder_fails_the_run_with_its_own_error(
    pairs: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("the cross-encoder broke")

    monkeypatch.setattr(side_by_side, "CrossEncoderTraining", failing)
    _fails_cleanly(pairs, tmp_path / "m", ValueError, "the cross-encoder broke")


def test_the_later_pace_never_exceeds_what_the_threads_grow(pairs: pd.DataFrame, tmp_path: Path) -> None:
    paces = {}
    for threads in (2, 3):
        beside = side_by_side.SideBySide.__new__(side_by_side.SideBySide)
        beside.threads, beside.cross_encoder_threads = threads, threads - threads // 2
        paces[threads] = beside.later_pace()[0]
    assert paces[2] == 1 / side_by_side.SIDE_BY_SIDE_GAIN
    assert paces[3] == pytest.approx(2 / 3)  # from 2 of 3 threads to 3: 1.5 times at most
