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

WARMUP_STEPS = 5
"""Steps left out of the rate: the first steps are slower (kernels chosen per batch shape, allocation)."""
FIRST_STEPS = 8
"""Steps timed after the warm-up before the loop's duration is estimated."""
HEARTBEAT_S = 60.0
"""Seconds between two heartbeat lines of a loop (steps done, time left) when no other line was said."""


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
        if self.warmup_steps == 0:
            self._warm_at = (0.0, 0.0)

    def elapsed(self) -> float:
        return self.now() - self.started

    def seconds_per_step(self) -> float | None:
        """The measured seconds per step after the warm-up (validation time left out), once the warm-up
        steps and the timed steps after them ran."""
        if self._warm_at is None or self.steps < self.warmup_steps + self.first_steps:
            return None
        elapsed, paused = self._warm_at
        busy = (self.elapsed() - elapsed) - (self.paused - paused)
        return max(busy, 1e-9) / (self.steps - self.warmup_steps)

    def remaining(self) -> float | None:
        rate = self.seconds_per_step()
        return None if rate is None else rate * (self.total_steps - self.steps)

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
        if self._warm_at is None and self.steps >= self.warmup_steps:
            self._warm_at = (self.elapsed(), self.paused)
        if self._rate_at is None and self.steps >= self.warmup_steps + self.first_steps:
            rate = self.seconds_per_step()
            assert rate is not None
            self._rate_at = rate
            self.say(
                f"{self.what}: {self.total_steps} steps in {self.epochs} epoch(s), about "
                f"{clock_text(self.elapsed() + rate * (self.total_steps - self.steps))} on this machine "
                f"({rate:.2f} s/step after {self.warmup_steps} warm-up steps)"
            )
            if self.on_rate is not None:
                self.on_rate(rate)

    def replan(self, total_steps: int) -> None:
        """The loop will take ``total_steps`` steps in all, not the number it started with (an epoch that
        trains on fewer pairs)."""
        self.total_steps = max(self.steps, int(total_steps))

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
