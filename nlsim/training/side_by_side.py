"""The reranker's cross-encoder trained beside the bi-encoder, on a CPU with two threads or more.

On a 2-core CPU a training step runs only about 1.6 times faster on two threads than on one (the
bi-encoder 0.55 against 0.89 s a step, the cross-encoder 0.51 against 0.77), while two trainings of one
thread each, side by side in one process, keep most of their speed (in the chain on the AMD EPYC, avx2
only: the bi-encoder 0.93-1.10 s a step, the cross-encoder 0.80-0.82; docs/experiments.md). The recipe's
two models do not depend on each other until the reranker is fitted, so :func:`start` runs them side by
side:

1. the cross-encoder is built first, in the calling thread (its base weights loaded, its head drawn from
   the recipe's seed), before the bi-encoder's training seeds torch;
2. the bi-encoder's frozen pass runs first, its batches in lanes on every thread (the worker's threads are
   :meth:`SideBySide.spare_threads` until :meth:`SideBySide.begin`); then a worker thread runs the
   cross-encoder's frozen pass and its first epoch on half the threads (rounded up), drawing its dropout
   masks from a generator of its own (:func:`nlsim.training.dropout.drawn_from`), while the calling thread
   trains the bi-encoder on the other half;
3. once the caller has finished with the bi-encoder (its calibration and evaluation run on its half too;
   its embedding passes take the cross-encoder's thread as a second lane once that first epoch is over,
   :meth:`SideBySide.spare_threads`), :meth:`SideBySide.trained` waits for that first epoch and trains the
   later ones in the calling thread, on all the threads, with the same generator.

The schedule does not depend on which training is faster, so a run repeats to the bit on the same machine;
but the arithmetic is not a one-model-at-a-time run's (one thread sums in another order than two, and the
masks come from another generator), so the models differ from those by float rounding, as a run on a
machine with another thread count does. On a GPU, on one thread, or with ``--one-model-at-a-time``, the
models train one after the other as before.

Example (a few seconds with the small English model):
    >>> import pandas as pd
    >>> from nlsim.training.config import FinetuneConfig
    >>> from nlsim.training.data import prepare_pairs
    >>> pairs = pd.DataFrame({"text_a": ["a cat", "stocks fall"] * 6, "text_b": ["a kitten", "football"] * 6,
    ...                       "score": [1.0, 0.0] * 6, "split": ["train"] * 8 + ["validation"] * 4})
    >>> pairs["text_a"] = pairs["text_a"] + pairs.index.astype(str)
    >>> cfg = FinetuneConfig.of(model="paraphrase-MiniLM-L3-v2", conversion="none", cross_encoder_epochs=1,
    ...                         batch_size=4, log_every=0, threads=2)
    >>> data = prepare_pairs(cfg, pairs)
    >>> with started(cfg, data, "cpu", log=lambda m: None) as pending:
    ...     threads = pending.bi_threads, pending.cross_encoder_threads
    ...     trained = pending.trained()
    >>> threads, [h["epoch"] for h in trained.history]
    ((1, 1), [1])
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from nlsim.encoders.device import default_device
from nlsim.rerank.cross_encoder import CrossEncoder
from nlsim.training.clock import SIDE_BY_SIDE_GAIN
from nlsim.training.config import FinetuneConfig
from nlsim.training.cross_encoder import CrossEncoderTraining, TrainedCrossEncoder
from nlsim.training.data import PreparedPairs
from nlsim.training.dropout import drawn_from
from nlsim.training.optim import set_seed


class Stopped(Exception):
    """Raised inside the cross-encoder's thread when the caller gave up on it (:meth:`SideBySide.close`)."""


def applies(cfg: FinetuneConfig, device: Any) -> bool:
    """Whether ``cfg`` (resolved for ``device``) trains its two models side by side: a reranker is trained,
    both models on a CPU, with two threads or more, the word embeddings frozen (unfrozen, every layer runs
    transformers' own dropout, from torch's shared generator), and ``--one-model-at-a-time`` was not
    given."""
    return (
        bool(cfg.cross_encoder.reranker)
        and bool(cfg.recipe.side_by_side)
        and bool(cfg.recipe.freeze_embeddings)
        and torch.device(device).type == "cpu"
        and torch.device(default_device()).type == "cpu"
        and total_threads(cfg) >= 2
    )


def total_threads(cfg: FinetuneConfig) -> int:
    """The threads the two trainings share: ``--threads``, else torch's."""
    return int(cfg.recipe.threads or torch.get_num_threads())


class SideBySide:
    """The cross-encoder's first epoch training in its thread (made by :func:`start`); :meth:`trained`
    trains the rest in the calling thread and hands it over."""

    def __init__(
        self,
        ce: CrossEncoder,
        data: PreparedPairs,
        cfg: FinetuneConfig,
        log: Callable[[str], None],
    ) -> None:
        self.threads = total_threads(cfg)
        self.bi_threads = self.threads // 2
        self.cross_encoder_threads = self.threads - self.bi_threads
        self._stopped = threading.Event()
        self._begun = threading.Event()
        self._generator = torch.Generator().manual_seed(int(cfg.recipe.seed))
        self._training: CrossEncoderTraining | None = None
        self._error: BaseException | None = None
        ce_cfg = cfg.cross_encoder_config()

        def first_epoch() -> None:
            try:
                # a thread's first parallel call takes the count last set by any thread: make it now
                torch.get_num_threads()
                torch.set_num_threads(self.cross_encoder_threads)
                self._begun.wait()  # the bi-encoder's frozen pass takes these threads as lanes meanwhile
                self._after_step()
                with drawn_from(self._generator):
                    training = CrossEncoderTraining(
                        ce,
                        data.train,
                        data.validation,
                        ce_cfg,
                        log,
                        after_step=self._after_step,
                        later_pace=self.later_pace(),
                    )
                    training.epoch()
                self._training = training
            except BaseException as exc:  # handed to the caller by trained()
                self._error = exc

        context = contextvars.copy_context()  # the caller's run context (a Prefect task's logger) goes along
        self._thread = threading.Thread(
            target=context.run, args=(first_epoch,), name="nlsim-cross-encoder", daemon=True
        )
        self._thread.start()

    def later_pace(self) -> tuple[float, str]:
        """The cross-encoder's later epochs against its first: their seconds a step on every thread, as a
        share of the first's beside the bi-encoder (:data:`SIDE_BY_SIDE_GAIN`), and how its estimate says
        so; never more than its threads grow (from 2 of 3 to 3: 1.5)."""
        gain = min(SIDE_BY_SIDE_GAIN, self.threads / self.cross_encoder_threads)
        return 1 / gain, f"its later epochs on all {self.threads} threads"

    def bi_encoder_config(self, cfg: FinetuneConfig) -> FinetuneConfig:
        """``cfg`` with the bi-encoder's share of the threads."""
        return dataclasses.replace(cfg, recipe=dataclasses.replace(cfg.recipe, threads=self.bi_threads))

    def spare_threads(self) -> int:
        """The cross-encoder's threads while they idle, else 0: before :meth:`begin` (the bi-encoder's
        frozen pass), and when its first epoch is over (until :meth:`trained`). The bi-encoder's frozen and
        embedding passes may run in that many more lanes meanwhile."""
        idle = not self._begun.is_set() or not self._thread.is_alive()
        return self.cross_encoder_threads if idle and self._error is None else 0

    def begin(self) -> None:
        """The bi-encoder's frozen pass is over: the cross-encoder's thread begins its own."""
        self._begun.set()

    def _after_step(self) -> None:
        if self._stopped.is_set():
            raise Stopped("the bi-encoder's training stopped; the cross-encoder beside it stops too")

    def trained(self) -> TrainedCrossEncoder:
        """The trained cross-encoder: waits for its first epoch, then trains its later epochs in the calling
        thread on every thread (one team of threads, the caller's: a second team beside it made each
        step wait on threads put to sleep), and raises what its training raised."""
        self.begin()
        self._thread.join()
        torch.set_num_threads(self.threads)
        if self._error is not None:
            raise self._error
        training = self._training
        assert training is not None
        training.run.clock.repace()  # every thread from here: its rate is measured again
        with drawn_from(self._generator):
            while not training.done:
                training.epoch()
        return training.result()

    def close(self) -> None:
        """Stop the cross-encoder's first epoch if it still trains (the caller failed; it stops after its
        next step, or after its frozen pass), and give the calling thread every thread back."""
        if self._thread.is_alive():
            self._stopped.set()
            self.begin()
            self._thread.join()
        torch.set_num_threads(self.threads)


def start(
    cfg: FinetuneConfig, data: PreparedPairs, device: Any, log: Callable[[str], None]
) -> SideBySide | None:
    """Build the cross-encoder here and start its training in a thread of its own, when ``cfg`` trains
    side by side on ``device`` (:func:`applies`); ``None`` otherwise. Call it before the bi-encoder's
    training, give that training :meth:`SideBySide.bi_encoder_config`, :meth:`SideBySide.spare_threads`
    and :meth:`SideBySide.begin` (its thread waits for that call, or for :meth:`SideBySide.trained`), and
    end with :meth:`SideBySide.trained` or :meth:`SideBySide.close`."""
    if not applies(cfg, device):
        return None
    ce_cfg = cfg.cross_encoder_config()
    set_seed(ce_cfg.seed)  # the head's weights drawn as a one-model-at-a-time run draws them
    ce = CrossEncoder.from_base(cfg.model, ce_cfg.max_length, None, device=default_device())
    # a tokenizer of its own: a loaded tokenizer is shared (nlsim.encoders.tokenizer_cache), and each call
    # sets its truncation on it before encoding, which two threads must not do to one object at once
    ce.tokenizer = copy.deepcopy(ce.tokenizer)
    pending = SideBySide(ce, data, cfg, log)
    log(
        f"  the cross-encoder trains its first epoch beside the bi-encoder ({pending.cross_encoder_threads} "
        f"and {pending.bi_threads} of {pending.threads} threads) once the bi-encoder's frozen pass is over "
        f"(on all {pending.threads}), then on all {pending.threads}"
    )
    return pending


@contextmanager
def started(
    cfg: FinetuneConfig, data: PreparedPairs, device: Any, log: Callable[[str], None]
) -> Iterator[SideBySide | None]:
    """:func:`start` for the block; at its end the cross-encoder is stopped if it still trains (the block
    failed before :meth:`SideBySide.trained`), and the calling thread has every thread back."""
    pending = start(cfg, data, device, log)
    try:
        yield pending
    finally:
        if pending is not None:
            pending.close()
