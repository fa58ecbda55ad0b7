"""The configuration of one near-duplicate run: :class:`DedupConfig`.

A run's settings are records by concern (:mod:`nlsim.dedup.settings`, :mod:`nlsim.models.settings`), and
each setting is declared once, as a field of its record. Every option of ``nlsim dedup``, every parameter of
the ``news-dedup`` flows and of the ``news-dedup/daily`` deployment is one of them, by its flat name
(:mod:`nlsim.options`: ``--k`` is ``search.k``, ``--cluster-rule`` is ``clustering.rule``). A run is a
batch run, or an incremental (daily) one when ``state`` names a state folder. Each stage reads the record
of its concern (``config.search``), and only :mod:`nlsim.dedup.run` the whole configuration.

The corpus path may hold ``{date}`` (``incoming/{date}.parquet``): it is replaced by the run's date, given
as ``date`` (YYYY-MM-DD), else the scheduled date of a Prefect run, else today (in ``timezone``).

Example:
    >>> cfg = DedupConfig.of(corpus="incoming/{date}.parquet", out="reports/daily", date="2026-11-22",
    ...                      threshold=0.95)
    >>> cfg.input.corpus_path, cfg.input.text_fields
    ('incoming/2026-11-22.parquet', ('title', 'description'))
    >>> cfg.model.threshold, cfg.search.k, cfg.daily
    (0.95, 10, False)
    >>> cfg.with_(state="state/news").state.folder
    'state/news'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nlsim.dedup.settings import (
    FUTURE_TOLERANCE_DAYS,
    MAX_RETENTION_DAYS,
    MAX_WINDOW_HOURS,
    ClusteringSettings,
    ClusterRuleName,
    IndexKind,
    InputSettings,
    ReportSettings,
    Representative,
    SearchSettings,
    StateSettings,
    check_as_of,
    check_day,
    parse_date,
    parse_time,
)
from nlsim.errors import ConfigError
from nlsim.io.atomic import readable_sha256
from nlsim.models.settings import Backend, ModelSettings, Precision
from nlsim.options import Configuration, concern

__all__ = [
    "FUTURE_TOLERANCE_DAYS",
    "MAX_RETENTION_DAYS",
    "MAX_WINDOW_HOURS",
    "Backend",
    "ClusterRuleName",
    "DedupConfig",
    "IndexKind",
    "Precision",
    "Representative",
    "check_as_of",
    "check_day",
    "parse_date",
    "parse_time",
]

STATE_TITLE = "incremental runs (a state folder kept between runs)"


@dataclass(frozen=True, kw_only=True)
class DedupConfig(Configuration):
    """Parameters of one dedup run, by concern (see the module docstring)."""

    input: InputSettings = concern(InputSettings, title="input")
    model: ModelSettings = concern(ModelSettings, title="model")
    search: SearchSettings = concern(SearchSettings, title="neighbour search")
    clustering: ClusteringSettings = concern(ClusteringSettings, title="clusters")
    report: ReportSettings = concern(ReportSettings, title="report")
    state: StateSettings = concern(StateSettings, title=STATE_TITLE)

    def __post_init__(self) -> None:
        if self.input.date is not None and not self.input.dated and not self.daily:
            raise ConfigError(
                f"--date {self.input.date} does nothing here: --corpus {self.input.corpus} has no {{date}} "
                "to fill in, and a batch run (no --state) has no day of its own; name the day's file in "
                "--corpus (incoming/{date}.parquet), or leave --date out"
            )
        if self.input.date is not None and self.daily:
            check_day(self.input.date, self.input.timezone)
        if self.state.as_of is not None:  # read on the run's clock, as the run reads it
            check_as_of(self.state.as_of, self.input.timezone)

    @property
    def daily(self) -> bool:
        """A daily (incremental) run: one with a state folder."""
        return bool(self.state.folder)

    def window_params(self) -> dict[str, Any]:
        """The settings that decide a run's result besides its items and its vectors (part of a daily run's
        input: a change is a new run, not a replay; a change of ``k`` or ``window_hours`` also pairs the
        window again, :class:`~nlsim.dedup.state.StateIdentity`)."""
        lists = {}  # --nlist, --nprobe when given (an IVF index's lists and probes; a key without them else)
        if self.search.nlist is not None or self.search.nprobe is not None:
            lists = {"ivf_lists": [self.search.nlist, self.search.nprobe]}
        return {
            **lists,
            "k": self.search.k,
            "window_hours": self.search.window_hours,
            "index_kind": self.search.index_kind,
            "representative": self.clustering.representative,
            "cluster_rule": self.clustering.describe(),  # the rule, its share and what a large cluster needs
            "cluster_cut": self.clustering.cut,
            "topic_rule": self.clustering.topic_rule,
            "topic_support": self.clustering.topic_support,
            "near_misses": self.report.near_misses,
            # the scored pairs judged against, by name and content: a file edited under the same name is
            # another input (unreadable: None, and a daily run takes the digest its last run recorded for
            # that name, so that a replay of a judged run needs the file no more)
            "judge": (
                [self.report.judge_pairs, self.report.judge_split, readable_sha256(self.report.judge_pairs)]
                if self.report.judge_pairs
                else None
            ),
        }
