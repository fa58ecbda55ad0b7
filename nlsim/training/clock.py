"""Elapsed and remaining time of a training loop, told as it goes.

A :class:`TrainingClock` counts optimizer steps. The first steps of a loop are slow for reasons that do
not repeat (kernels compiled or chosen for each new batch shape, the allocator growing, caches filling: on
a GPU the first steps took ten times the rest), so the rate is measured only *after* them: the first
``warmup_steps`` steps are left out, and the rate is the mean of the next ``first_steps``. Then the clock
says once how long the loop will take; at each epoch's end it says the epoch's time, the time elapsed and
the time left (at the rate after warm-up); in between, a heartbeat every :data:`HEARTBEAT_S` seconds says
the steps done and the time left (an epoch of e5 on a small CPU takes many minutes: a run is never silent
that long).
``on_rate`` (optional) hears the measured seconds per step once, so a caller
that knows what else a run will do (the chain, :mod:`nlsim.chain.eta`) can estimate the whole run.
``now`` is the clock read (``time.perf_counter``; a test passes a stand-in).

A loop whose later epochs differ from its first says so with an :class:`Outlook`: each later epoch about a
``share`` of the first's steps (the cross-encoder leaves most easy pairs out,
:mod:`nlsim.training.easy_pairs`), each at ``pace`` times the first epoch's seconds a step (the
cross-encoder's later epochs run on every thread, its first beside the bi-encoder on half of them,
:mod:`nlsim.training.side_by_side`). The estimates reckon with it until the later epochs have begun; then
:meth:`TrainingClock.replan` gives the real step count and :meth:`TrainingClock.repace` has the rate
measured again on the new pace (the first estimate's pace standing in until then).

Example:
    >>> lines = []
    >>> clock = TrainingClock("demo", total_steps=4, epochs=2, log=lines.append, first_steps=2)
    >>> for _ in range(2):
    ...     clock.step()
    >>> lines[0].startswith("demo: 4 steps in 2 epoch(s), about")
    True
    >>> clock.epoch_done(1, "loss 0.5")
    >>> lines[-1].startswith("demo epoch 1/2: loss 0.5;")
    True

    A heartbeat, 60 s (of a stand-in clock) after the estimate said at step 8 (no warm-up left out here):

    >>> now = [0.0]
    >>> clock = TrainingClock("demo", total_steps=200, epochs=2, log=lines.append, now=lambda: now[0],
    ...                       warmup_steps=0)
    >>> for _ in range(30):
    ...     now[0] += 3.0
    ...     clock.step()
    >>> lines[-1]
    'demo: step 28/200 (epoch 1/2), 1 min 24 s elapsed, about 8 min 36 s left'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

WARMUP_STEPS = 5
"""Steps left out of the rate: the first steps are slower (kernels chosen per batch shape, allocation)."""
FIRST_STEPS = 8
"""Steps timed after the warm-up before the loop's duration is estimated."""
HEARTBEAT_S = 60.0
"""Seconds between two heartbeat lines of a loop (steps done, time left) when no other line was said."""
SIDE_BY_SIDE_GAIN = 1.6
"""How much faster a step runs on all the threads than on half of them beside the other training: on the
AMD EPYC with 2 cores, 2 threads against 1, the bi-encoder 0.546 against 0.888 s a step, the cross-encoder
0.510 against 0.773 (``benchmarks/bench_finetune_speed.py profile``). The time estimates reckon with it
(:mod:`nlsim.chain.eta`, the cross-encoder's own :class:`Outlook`, :mod:`nlsim.training.side_by_side`)."""


def timed_steps(
    total_steps: int, warmup_steps: int = WARMUP_STEPS, first_steps: int = FIRST_STEPS
) -> tuple[int, int]:
    """The warm-up steps left out and the steps timed after them, for a loop of ``total_steps``: a short
    loop leaves out less than a quarter of its steps and times at least one.

    Example:
        >>> timed_steps(1000), timed_steps(10), timed_steps(4)
        ((5, 8), (2, 8), (0, 4))
    """
    total = max(1, int(total_steps))
    warmup = max(0, min(int(warmup_steps), (total - 1) // 4))
    return warmup, max(1, min(int(first_steps), total - warmup))


def clock_text(seconds: float) -> str:
    """``42 s``, ``3 min 05 s`` or ``1 h 02 min``.

    Example:
        >>> clock_text(42.4), clock_text(185), clock_text(3725)
        ('42 s', '3 min 05 s', '1 h 02 min')
    """
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


@dataclass(frozen=True)
class Outlook:
    """The later epochs of a loop against its first (see the module docstring): about ``share`` of the
    first epoch's ``first_epoch_steps`` each, at ``pace`` times its seconds a step; ``said``: how the
    first estimate's line tells it (``"its later epochs on all 2 threads"``).

    Example (the first epoch at 1 s a step, two later ones of half its steps at 0.5 s a step):
        >>> Outlook(100, share=0.5, pace=0.5).later_seconds(1.0, epochs=3)
        50.0
    """

    first_epoch_steps: int
    share: float = 1.0
    pace: float = 1.0
    said: str = ""

    def later_seconds(self, rate: float, epochs: int) -> float:
        """The seconds of every epoch after the first, at the first epoch's ``rate`` (seconds a step)."""
        return rate * self.pace * self.share * self.first_epoch_steps * max(0, int(epochs) - 1)


class TrainingClock:
    """Steps, epochs and time of one training loop (see the module docstring)."""

    def __init__(
        self,
        what: str,
        total_steps: int,
        epochs: int,
        log: Callable[[str], None],
        *,
        warmup_steps: int = WARMUP_STEPS,
        first_steps: int = FIRST_STEPS,
        on_rate: Callable[[float], None] | None = None,
        heartbeat_s: float = HEARTBEAT_S,
        now: Callable[[], float] = time.perf_counter,
        outlook: Outlook | None = None,
    ) -> None:
        self.what = what
        self.total_steps = max(1, int(total_steps))
        self.epochs = max(1, int(epochs))
        self.log = log
        self.warmup_steps, self.first_steps = timed_steps(self.total_steps, warmup_steps, first_steps)
        self.on_rate = on_rate
        self.heartbeat_s = float(heartbeat_s)
        self.now = now
        self.steps = 0
        self.epoch = 1  # the epoch the next step belongs to
        self.started = now()
        self.paused = 0.0  # time spent outside the steps (validation), not part of the step rate
        self._warm_at: tuple[float, float] | None = None  # (elapsed, paused) when the warm-up ended
        self._rate_at: float | None = None
        self.epoch_started = self.started
        self.last_said = self.started
        self.outlook = outlook if self.epochs > 1 else None  # no later epochs to foresee
        self._later = False  # the later epochs have begun: the outlook no longer stands in for them
        self._warm_from = 0  # the step the rate's warm-up counts from (moved by repace)
        self._skip = self.warmup_steps  # the steps left out from there (none after repace)
        self._stand_in: float | None = None  # the rate until it is measured again on a new pace
        if self.warmup_steps == 0:
            self._warm_at = (0.0, 0.0)

    def elapsed(self) -> float:
        return self.now() - self.started

    @property
    def paced_from(self) -> int:
        """The step the rate is measured from (its warm-up first): 0, or where :meth:`repace` was called."""
        return self._warm_from

    def seconds_per_step(self) -> float | None:
        """The measured seconds per step after the warm-up (validation time left out), once the warm-up
        steps and the timed steps after them ran (after :meth:`repace`, on the new pace; until then the
        rate before times the outlook's pace)."""
        counted = self.steps - self._warm_from
        if self._warm_at is None or counted < self._skip + self.first_steps:
            return self._stand_in
        elapsed, paused = self._warm_at
        busy = (self.elapsed() - elapsed) - (self.paused - paused)
        return max(busy, 1e-9) / (counted - self._skip)

    def remaining(self) -> float | None:
        """Seconds left at the measured rate; within the first epoch (and at its end) with the
        :class:`Outlook`'s later epochs."""
        rate = self.seconds_per_step()
        if rate is None:
            return None
        o = self.outlook
        if o is not None and not self._later and self.steps <= o.first_epoch_steps:
            return rate * (o.first_epoch_steps - self.steps) + o.later_seconds(rate, self.epochs)
        return rate * (self.total_steps - self.steps)

    def say(self, line: str) -> None:
        self.last_said = self.now()
        self.log(line)

    def step(self) -> None:
        """Count one optimizer step; after the first few, say how long the loop will take; then a heartbeat
        when nothing was said for :attr:`heartbeat_s` seconds."""
        self.steps += 1
        if self._rate_at is not None and self.now() - self.last_said >= self.heartbeat_s:
            epoch = self.epoch
            left = self.remaining()
            rest = f", about {clock_text(left)} left" if left is not None else ""
            self.say(
                f"{self.what}: step {self.steps}/{self.total_steps} (epoch {epoch}/{self.epochs}), "
                f"{clock_text(self.elapsed())} elapsed{rest}"
            )
        if self._warm_at is None and self.steps - self._warm_from >= self._skip:
            self._warm_at = (self.elapsed(), self.paused)
        if self._rate_at is None and self.steps - self._warm_from >= self._skip + self.first_steps:
            rate = self.seconds_per_step()
            assert rate is not None
            self._rate_at = rate
            left = self.remaining()
            assert left is not None
            o = self.outlook
            most = " at most" if o is not None and o.share < 1 and not self._later else ""
            said = f"; {o.said}" if o is not None and o.said and not self._later else ""
            self.say(
                f"{self.what}: {self.total_steps} steps{most} in {self.epochs} epoch(s), about "
                f"{clock_text(self.elapsed() + left)} on this machine "
                f"({rate:.2f} s/step after {self._skip} warm-up steps{said})"
            )
            if self.on_rate is not None:
                self.on_rate(rate)

    def replan(self, total_steps: int) -> None:
        """The loop will take ``total_steps`` steps in all, not the number it started with (an epoch that
        trains on fewer pairs); the later epochs have begun, so the outlook no longer stands in."""
        self.total_steps = max(self.steps, int(total_steps))
        self._later = True

    def repace(self) -> None:
        """The steps from here run at another pace (the later epochs on more threads): the rate is measured
        again over the next ``first_steps`` steps (no warm-up: the batch shapes are the loop's own already,
        and the later epochs may be short); the rate so far times the outlook's pace stands in until then.

        Example (1 s a step, then twice as fast from step 10 on):
            >>> now = [0.0]
            >>> clock = TrainingClock("x", 40, 2, lambda _: None, now=lambda: now[0], warmup_steps=0,
            ...                       first_steps=2, outlook=Outlook(20, pace=0.5))
            >>> for k in range(40):
            ...     if k == 10:
            ...         clock.repace()
            ...         stand_in = clock.seconds_per_step()
            ...     now[0] += 1.0 if k < 10 else 0.5
            ...     clock.step()
            >>> stand_in, clock.seconds_per_step()
            (0.5, 0.5)
        """
        rate = self.seconds_per_step()
        pace = self.outlook.pace if self.outlook is not None else 1.0
        self._stand_in = None if rate is None else rate * pace
        self._warm_from, self._skip = self.steps, 0
        self._warm_at = (self.elapsed(), self.paused)
        self._later = True

    def pause(self) -> PausedClock:
        """A context for work between steps (validation) that the step rate leaves out."""
        return PausedClock(self)

    def epoch_done(self, epoch: int, figures: str) -> None:
        """Say the epoch's figures, its time, the time elapsed and the time left."""
        now = self.now()
        took, self.epoch_started = now - self.epoch_started, now
        self.epoch = min(self.epochs, epoch + 1)
        left = self.remaining()
        rest = f", about {clock_text(left)} left" if left is not None and epoch < self.epochs else ""
        self.say(
            f"{self.what} epoch {epoch}/{self.epochs}: {figures}; {clock_text(took)}, "
            f"{clock_text(self.elapsed())} elapsed{rest}"
        )


class PausedClock:
    """Adds the time spent inside the ``with`` block to the clock's pauses."""

    def __init__(self, clock: TrainingClock) -> None:
        self.clock = clock
        self.t0 = 0.0

    def __enter__(self) -> PausedClock:
        self.t0 = self.clock.now()
        return self

    def __exit__(self, *exc: object) -> None:
        self.clock.paused += self.clock.now() - self.t0
