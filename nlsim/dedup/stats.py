"""Figures of one run (counts, per-stage timings, model, threshold).

:class:`RunStats` is what every run leaves behind, batch or incremental: the report's ``run.json``, the
command's output and, from a flow, a Prefect artifact; an incremental run also keeps it in its state
(``runs/<run_id>.json`` and the manifest's ``last_run``). The fault-test hook of the kill tests is
:mod:`nlsim.faults`.

Example:
    >>> stats = RunStats(run_id="r1")
    >>> with stats.stage("load"):
    ...     pass
    >>> sorted(stats.timings_s)
    ['load']
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from nlsim import progress


@dataclass
class RunStats:
    """Counts, timings and settings of one run.

    Counts: ``items_in`` (rows read), ``quarantined`` (bad rows set aside), ``new`` (first seen),
    ``changed`` (seen before with other text: re-embedded), ``skipped`` (seen before, same text),
    ``too_old`` (older than the retention window: not added), ``expired`` (kept items dropped by retention),
    ``kept`` (items in the window after the run), ``candidates`` (pairs searched before reranking),
    ``pairs`` (pairs found today), ``clusters`` (clusters in the report), ``clusters_new``,
    ``clusters_grown``, ``clusters_merged``, ``clusters_absorbed`` (ids that disappeared into another).
    """

    run_id: str = ""
    mode: str = "batch"
    corpus: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)
    model: str = ""
    model_fingerprint: str = ""
    model_info: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    threshold_source: str = ""
    conversion: str = ""
    text_fields: str = ""
    rerank: dict[str, Any] | None = None
    index: str = ""
    embedding_cache_hit: bool | None = None
    retention_days: float | None = None
    as_of: str | None = None
    input_key: str = ""
    started_at: str = ""
    model_switch: dict[str, Any] | None = None
    messages: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage (accumulates when a stage runs more than once)."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings_s[name] = round(self.timings_s.get(name, 0.0) + time.perf_counter() - t, 4)

    def say(self, message: str) -> None:
        """Tell the user (:func:`nlsim.progress.say`) and keep the message in the run record."""
        self.messages.append(message)
        progress.say(message)

    def to_dict(self) -> dict[str, Any]:
        """The run record: every field, plus the headline counts at the top level (``items``, ``pairs``,
        ``clusters``, ``clustered_items``, ``quarantined``) and ``elapsed_s``."""
        d = asdict(self)
        c = self.counts
        d.update(
            items=c.get("items_in"),
            quarantined=c.get("quarantined", 0),
            pairs=c.get("pairs"),
            clusters=c.get("clusters"),
            clustered_items=c.get("clustered_items"),
            elapsed_s=round(sum(self.timings_s.values()), 2),
        )
        return d

    def markdown(self) -> str:
        """A Markdown table of the figures (for the Prefect artifact and the logs)."""
        lines = [
            f"# nlsim {self.mode} run {self.run_id}",
            "",
            f"- model: `{self.model}`",
            f"- threshold: {self.threshold} ({self.threshold_source})",
            f"- conversion: {self.conversion}",
        ]
        if self.mode == "incremental":
            lines.append(f"- retention: {self.retention_days} days, as of {self.as_of}")
        if self.model_switch:
            lines.append(
                f"- model switch: {self.model_switch.get('from_model')} -> "
                f"{self.model_switch.get('to_model')}"
            )
        lines += ["", "| count | value |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in self.counts.items()]
        lines += ["", "| stage | seconds |", "|---|---:|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in self.timings_s.items()]
        return "\n".join(lines) + "\n"
