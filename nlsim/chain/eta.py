"""How long a run of the chain will take on this machine, estimated from its first training steps.

A cold chain spends its time in a few kinds of work, each a count of tokens through a count of layers: the
frozen lower layers run once per training text or pair, the trained upper layers forward and backward (about
three times a forward) at every step; validation, the evaluation on the test split (and of the current model
on new validation pairs), the quality check of the lossy inference paths and the report's embedding and
reranking forward only. The quality check measures each lossy path worth checking where the model trained
(none on a CPU without VNNI or bf16 instructions) against fp32 over the validation pairs, and builds each
first (an ONNX export, an int8 copy), which costs about :data:`PATH_SETUP_PASSES` passes over them on the
CPU. Once the bi-encoder's first steps are timed (:class:`nlsim.training.clock.TrainingClock`), the seconds
per token-layer on this machine are known, and every other stage follows from its own count. When the two
models train side by side (:mod:`nlsim.training.side_by_side`) that rate is measured on half the threads:
the cross-encoder's first part counts only where it outlasts the bi-encoder, and the work on all the
threads runs :data:`SIDE_BY_SIDE_GAIN` times faster. The estimate is
said once, before most of the work; it is rough (the forward-only passes run at the rate the zero-shot first
report's embedding ran, where it was timed, else at the training rate; the report's candidate count is
guessed from the corpus size), and each training loop says its own, measured, time as it goes.

Example:
    >>> plan = ChainWork(train_pairs=1785, validation_pairs=492, text_tokens=24.0, pair_tokens=40.0,
    ...                  epochs=2, cross_encoder_epochs=3, batch_size=16, layers=12, frozen=4,
    ...                  cross_encoder_frozen=4, corpus_items=10_000, reranker=True)
    >>> est = plan.estimate(seconds_per_step=0.1)
    >>> sorted(est), est["bi-encoder"] > 0, est["cross-encoder"] > est["bi-encoder"]
    (['bi-encoder', 'cross-encoder', 'report'], True, True)
    >>> from dataclasses import replace
    >>> checked = replace(plan, test_pairs=300, lossy_paths=3).estimate(seconds_per_step=0.1)
    >>> list(checked)
    ['bi-encoder', 'cross-encoder', 'evaluation', 'quality check', 'report']
    >>> describe(est).startswith("estimated time on this machine: about")
    True
    >>> shorter = replace(plan, cross_encoder_drops_easy=True).estimate(seconds_per_step=0.1)
    >>> shorter["cross-encoder"] < est["cross-encoder"]
    True
    >>> beside = replace(plan, side_by_side=True).estimate(seconds_per_step=0.16)  # measured on half
    >>> sum(beside.values()) < sum(plan.estimate(seconds_per_step=0.1).values())
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nlsim.training.clock import SIDE_BY_SIDE_GAIN, clock_text
from nlsim.training.easy_pairs import LATER_EPOCH_SHARE

BACKWARD = 2.0
"""A backward pass costs about twice its forward pass."""
CANDIDATES_PER_ITEM = 0.2
"""Rough count of the pairs a report reranks per corpus item: on the bundled corpus 0.16 (1,638 pairs) for
the model of the fp32 recipe and 0.22 (2,193) for the full recipe's, since batch 4 was merged (0.24
before). A weaker model passes many more to its reranker (one trained on 480 pairs: 3.2 an item), which
this guess does not foresee."""
PATH_SETUP_PASSES = 1.0
"""What building and timing one lossy path on the CPU (an ONNX export and its check against torch, an int8
copy, the probe) costs, in forward passes over the validation pairs. The check measures the paths fastest
first and stops at the first that passes (:func:`nlsim.training.lossy_check.check_lossy_paths`), and takes
its fp32 reference from what training computed, so it makes about one pass over the pairs per model kind
besides the builds: on the 2-core AMX machine, a cold ``bash run.sh`` (2026-12-01) checked the encoder in
35 s and the cross-encoder in 69 s, 3 lossy paths of each built and timed, torch-bf16 the first measured
and passed; the estimate before, which counted every path measured and an fp32 pass, said 4 min 52 s for
what had taken 211 s. A GPU's half precisions need no build."""


@dataclass(frozen=True)
class ChainWork:
    """What a cold chain will compute, in counts (see the module docstring)."""

    train_pairs: int
    """The pairs a training epoch reads: the training split (or the subset drawn of it) as the model reads
    it, converted, a pair given twice counted once (not the pair file's rows)."""
    validation_pairs: int
    """The validation split, counted as :attr:`train_pairs` is."""
    text_tokens: float
    """Mean tokens of one text, padded as the batches are."""
    pair_tokens: float
    """Mean tokens of one pair read together."""
    epochs: int
    cross_encoder_epochs: int
    batch_size: int
    layers: int
    frozen: int
    cross_encoder_frozen: int
    corpus_items: int
    reranker: bool
    test_pairs: int = 0
    """The test split (counted as :attr:`train_pairs` is), scored after training (the bi-encoder's texts, the
    reranker's pairs)."""
    lossy_paths: int = 0
    """The lossy inference paths the quality check of the fine-tuned model measures, for each model kind."""
    built_paths: bool = True
    """The lossy paths are built and timed first (on the CPU: ONNX exports, int8 copies, the probe; not a
    GPU's, nor the one a CPU with AMX-BF16 takes untimed, :func:`nlsim.inference.choice.untimed_path`)."""
    cross_encoder_drops_easy: bool = False
    """The cross-encoder's epochs after the first leave the easy pairs out (about
    :data:`LATER_EPOCH_SHARE` of the steps each)."""
    incumbent_reranker: bool | None = None
    """The current model is scored on the validation pairs (its figures for them are not kept yet), with
    its reranker (``True``) or without; ``None``: nothing to score."""
    side_by_side: bool = False
    """The cross-encoder's frozen pass and first epoch run beside the bi-encoder, each on half the threads,
    its later epochs and everything after on all of them (:mod:`nlsim.training.side_by_side`)."""
    report: bool = True
    """The chain makes its report (``--no-report``: no report part in the estimate)."""

    def _bi_step(self) -> float:
        """Token-layers of one bi-encoder step: 2 x batch texts, trained layers forward and backward."""
        return 2 * self.batch_size * self.text_tokens * (self.layers - self.frozen) * (1 + BACKWARD)

    def bi_encoder_steps(self) -> int:
        """The bi-encoder's optimizer steps over all its epochs."""
        return math.ceil(self.train_pairs / self.batch_size) * self.epochs

    def estimate(
        self, seconds_per_step: float, bi_steps_done: int = 0, first_report_s: float | None = None
    ) -> dict[str, float]:
        """Seconds per part of the rest of the run, from the bi-encoder's ``seconds_per_step`` measured after
        its warm-up, once ``bi_steps_done`` of its steps ran. ``first_report_s``: the seconds the zero-shot
        first report of the same corpus took (the same encoder size, no reranker); the report's part is then
        that time, plus its reranking in proportion to its token-layers, and the other forward-only passes
        (the trainings' frozen passes and validation, the evaluation, the quality check) run at that rate
        too, instead of the training rate's guess (inference runs on a faster path than training: a GPU
        several times faster; on a 2-core CPU with avx512_bf16 and no AMX the training rate said 1 min 35 s
        for a quality check of 47 s, and 11 min for the 8 the chain then took)."""
        half = seconds_per_step / max(self._bi_step(), 1e-9)  # seconds per token-layer, as measured
        unit = half / SIDE_BY_SIDE_GAIN if self.side_by_side else half  # ... on all the threads
        embed = self.corpus_items * self.text_tokens * self.layers
        # forward passes alone (no backward, no optimizer): at the rate the first report's embedding ran
        # here where it was timed, else the training's; beside the other training, on half the threads
        forward = first_report_s / embed if first_report_s is not None and embed > 0 else unit
        forward_beside = forward * SIDE_BY_SIDE_GAIN if self.side_by_side else forward
        val_texts = 2 * self.validation_pairs * self.text_tokens * self.layers
        bi_steps = max(0, self.bi_encoder_steps() - bi_steps_done)
        bi = half * bi_steps * self._bi_step() + forward_beside * self.epochs * val_texts
        parts = {"bi-encoder": bi}
        if self.reranker:
            sequences = 2 * self.train_pairs
            trained = self.layers - self.cross_encoder_frozen
            step = self.batch_size * self.pair_tokens * trained * (1 + BACKWARD)
            per_epoch = math.ceil(sequences / self.batch_size) * step
            later = LATER_EPOCH_SHARE if self.cross_encoder_drops_easy else 1.0
            n_later = max(0, self.cross_encoder_epochs - 1)
            frozen_pass = (
                (sequences + 2 * self.validation_pairs) * self.pair_tokens * self.cross_encoder_frozen
            )
            validation = 2 * self.validation_pairs * self.pair_tokens * trained  # one epoch's
            first = forward_beside * frozen_pass
            if self.cross_encoder_epochs:
                first += half * per_epoch + forward_beside * validation
            rest = n_later * (unit * later * per_epoch + forward * validation)
            if self.side_by_side:  # its first part runs beside the bi-encoder; only what outlasts it counts
                parts["cross-encoder"] = max(0.0, first - bi) + rest
            else:
                parts["cross-encoder"] = first + rest
        evaluation = self._evaluation()
        if evaluation:
            parts["evaluation"] = forward * evaluation
        if self.lossy_paths:
            parts["quality check"] = forward * self._quality_check()
        rerank = self.corpus_items * CANDIDATES_PER_ITEM * 2 * self.pair_tokens * self.layers
        rerank = rerank if self.reranker else 0.0
        if self.report:
            parts["report"] = forward * (embed + rerank)
        return parts

    def _passes(self, pairs: int) -> tuple[float, float]:
        """Token-layers of one forward pass over ``pairs``: the bi-encoder over their texts, the
        cross-encoder over the pairs."""
        return 2 * pairs * self.text_tokens * self.layers, pairs * self.pair_tokens * self.layers

    def _evaluation(self) -> float:
        """Token-layers of the evaluation: the test split scored by the fine-tuned model (its bi-encoder and
        reranker), and the current model on the validation pairs when its figures for them are not kept."""
        texts, pairs = self._passes(self.test_pairs)
        work = texts + (pairs if self.reranker else 0.0)
        if self.incumbent_reranker is not None:
            texts, pairs = self._passes(self.validation_pairs)
            work += texts + (pairs if self.incumbent_reranker else 0.0)
        return work

    def _quality_check(self) -> float:
        """Token-layers of the quality check, for each model kind: the lossy paths' passes over the
        validation pairs (on the CPU one: the fastest that passes ends the check; a GPU's half precisions
        all, unprobed), each path's build and timing on the CPU (:data:`PATH_SETUP_PASSES`); the fp32
        reference comes from training."""
        texts, pairs = self._passes(self.validation_pairs)
        if not self.built_paths:
            return self.lossy_paths * (texts + pairs if self.reranker else texts)
        measured = min(1, self.lossy_paths)
        setup = PATH_SETUP_PASSES * self.lossy_paths
        return (measured + setup) * (texts + pairs if self.reranker else texts)


def describe(parts: dict[str, float]) -> str:
    """One line: the total and each part."""
    total = sum(parts.values())
    each = ", ".join(f"{name} {clock_text(s)}" for name, s in parts.items())
    return f"estimated time on this machine: about {clock_text(total)} more ({each})"
