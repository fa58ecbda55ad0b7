"""How long a run of the chain will take on this machine, estimated from its first training steps.

A cold chain spends its time in a few kinds of work, each a count of tokens through a count of layers: the
frozen lower layers run once per training text or pair, the trained upper layers forward and backward
(about three times a forward) at every step, validation and the report's embedding and reranking forward
only. Once the bi-encoder's first steps are timed (:class:`nlsim.training.clock.TrainingClock`), the
seconds per token-layer on this machine are known, and every other stage follows from its own count. The
estimate is said once, before most of the work; it is rough (inference runs on a faster path than
training, the report's candidate count is guessed from the corpus size), and each training loop says its
own, measured, time as it goes.

Example:
    >>> plan = ChainWork(train_pairs=1785, validation_pairs=492, text_tokens=24.0, pair_tokens=40.0,
    ...                  epochs=2, cross_encoder_epochs=3, batch_size=16, layers=12, frozen=4,
    ...                  cross_encoder_frozen=4, corpus_items=10_000, reranker=True)
    >>> est = plan.estimate(seconds_per_step=0.1)
    >>> sorted(est), est["bi-encoder"] > 0, est["cross-encoder"] > est["bi-encoder"]
    (['bi-encoder', 'cross-encoder', 'report'], True, True)
    >>> describe(est).startswith("estimated time on this machine: about")
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nlsim.training.clock import clock_text

BACKWARD = 2.0
"""A backward pass costs about twice its forward pass."""
CANDIDATES_PER_ITEM = 0.2
"""Rough count of the pairs a report reranks per corpus item: on the bundled corpus 0.16 (1,638 pairs) for
the model of the fp32 recipe and 0.22 (2,193) for the full recipe's, since batch 4 was merged (0.24
before). A weaker model passes many more to its reranker (one trained on 480 pairs: 3.2 an item), which
this guess does not foresee."""


@dataclass(frozen=True)
class ChainWork:
    """What a cold chain will compute, in counts (see the module docstring)."""

    train_pairs: int
    validation_pairs: int
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
        that time, plus its reranking in proportion to its token-layers, instead of the training rate's
        guess (inference runs on a faster path than training: a GPU several times faster)."""
        unit = seconds_per_step / max(self._bi_step(), 1e-9)  # seconds per token-layer
        val_texts = 2 * self.validation_pairs * self.text_tokens * self.layers
        bi_steps = max(0, self.bi_encoder_steps() - bi_steps_done)
        parts = {"bi-encoder": unit * (bi_steps * self._bi_step() + self.epochs * val_texts)}
        if self.reranker:
            sequences = 2 * self.train_pairs
            trained = self.layers - self.cross_encoder_frozen
            step = self.batch_size * self.pair_tokens * trained * (1 + BACKWARD)
            steps = math.ceil(sequences / self.batch_size) * self.cross_encoder_epochs
            frozen_pass = (
                (sequences + 2 * self.validation_pairs) * self.pair_tokens * self.cross_encoder_frozen
            )
            validation = self.cross_encoder_epochs * 2 * self.validation_pairs * self.pair_tokens * trained
            parts["cross-encoder"] = unit * (steps * step + frozen_pass + validation)
        embed = self.corpus_items * self.text_tokens * self.layers
        rerank = self.corpus_items * CANDIDATES_PER_ITEM * 2 * self.pair_tokens * self.layers
        rerank = rerank if self.reranker else 0.0
        if first_report_s is not None and embed > 0:
            parts["report"] = first_report_s * (1 + rerank / embed)
        else:
            parts["report"] = unit * (embed + rerank)
        return parts


def describe(parts: dict[str, float]) -> str:
    """One line: the total and each part."""
    total = sum(parts.values())
    each = ", ".join(f"{name} {clock_text(s)}" for name, s in parts.items())
    return f"estimated time on this machine: about {clock_text(total)} more ({each})"
