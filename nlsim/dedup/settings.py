"""A near-duplicate run's settings, one frozen record per concern: :class:`DedupSettings`.

:class:`~nlsim.dedup.config.DedupConfig` is what a user types: the options of ``nlsim dedup`` and the
parameters of the ``news-dedup`` flows, one flat record (``DedupConfig.settings()`` checks it and splits
it). The stages read the part of a run they are about, and nothing else:

- :class:`InputSettings`: the corpus (its ``{date}`` filled in), the fields embedded, the quarantine file;
- :class:`~nlsim.models.settings.ModelSettings` (:mod:`nlsim.models`): the encoder, its reranker, the
  threshold, how they run and their caches;
- :class:`SearchSettings`: the neighbours searched and the FAISS index;
- :class:`ClusteringSettings`: the cluster rule, each cluster's representative, the editors' verdicts;
- :class:`ReportSettings`: the report folder, the near misses, the judge, the time zone;
- :class:`StateSettings`: the daily state. A batch run has none: ``DedupSettings.state`` is ``None``, and
  :mod:`nlsim.dedup.run` composes the stages of a batch run or of a daily one from it
  (:func:`~nlsim.dedup.run.run_batch`, :func:`~nlsim.dedup.run.run_daily`).

Example:
    >>> s = DedupSettings(
    ...     input=InputSettings(corpus="news.parquet", corpus_named="/data/news.parquet"),
    ...     model=ModelSettings(name="multilingual-e5-small", threshold=0.9),
    ...     report=ReportSettings(out="reports/news"),
    ... )
    >>> s.daily, s.search.k, s.clustering.rule, s.search.index_options()["kind"]
    (False, 10, 'support', 'auto')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from nlsim.clusters.rules import (
    DEFAULT_LARGE,
    DEFAULT_LARGE_MARGIN,
    DEFAULT_LARGE_SHARE,
    DEFAULT_RULE,
    DEFAULT_SUPPORT,
    ClusterRule,
    rule_named,
)
from nlsim.clusters.topics import DEFAULT_TOPIC_RULE, DEFAULT_TOPIC_SUPPORT
from nlsim.models.settings import ModelSettings

IndexKind = Literal["auto", "flat", "ivf", "hnsw"]
Representative = Literal["earliest", "central"]
ClusterRuleName = Literal["support", "components"]
Cut = Literal["order", "min-cut"]


@dataclass(frozen=True)
class InputSettings:
    """The corpus a run reads."""

    corpus: str
    """The corpus path, ``{date}`` filled in."""
    corpus_named: str
    """The same path as the run's record names it: absolute, so ``nlsim judge`` finds it from any folder."""
    text_fields: tuple[str, ...] = ("title", "description")
    quarantine: str | None = None
    timezone: str = "UTC"
    """The zone on whose clock a ``published_at`` without an offset is read (``--timezone``)."""


@dataclass(frozen=True)
class SearchSettings:
    """The neighbours each item searches, and the FAISS index they are searched in."""

    k: int = 10
    window_hours: float | None = None
    index_kind: IndexKind = "auto"
    nlist: int | None = None
    nprobe: int | None = None
    use_gpu: bool | None = None
    threads: int | None = None
    """FAISS's CPU threads (``None``: its own, every core)."""

    def index_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`nlsim.search.index.build_index`."""
        return {"kind": self.index_kind, "use_gpu": self.use_gpu, "nlist": self.nlist, "nprobe": self.nprobe}


@dataclass(frozen=True)
class ClusteringSettings:
    """Which linked items make one cluster, which item stands for it, and the editors' verdicts."""

    rule: ClusterRuleName = DEFAULT_RULE  # type: ignore[assignment]
    support: float = DEFAULT_SUPPORT
    representative: Representative = "earliest"
    annotated_pairs: str | None = None
    large: int | None = DEFAULT_LARGE
    """A story cluster of this many items or more must be held strongly (:class:`SharedSupport`)."""
    large_share: float | None = DEFAULT_LARGE_SHARE
    large_margin: float | None = DEFAULT_LARGE_MARGIN
    """How far above the story threshold the links between a large cluster's two halves must score."""
    cut: Cut = "order"
    """How an editor's "not the same story" parts a cluster (:mod:`nlsim.clusters.cuts`)."""
    topic_rule: ClusterRuleName = DEFAULT_TOPIC_RULE  # type: ignore[assignment]
    topic_support: float = DEFAULT_TOPIC_SUPPORT

    def describe(self) -> str:
        """The rule as the run record names it: ``support 0.4`` (with what a large cluster needs), or
        ``components``."""
        if self.rule != "support":
            return self.rule
        large = ""
        if self.large is not None and (self.large_share is not None or self.large_margin is not None):
            needs = [f"share {self.large_share:g}" if self.large_share is not None else ""]
            if self.large_margin is not None:
                needs.append(f"links {self.large_margin:+g} over the threshold")
            large = f"; {self.large}+ items need " + " and ".join(n for n in needs if n)
        return f"support {self.support:g}{large}"

    def story_rule(self, threshold: float) -> ClusterRule:
        """The story clusters' rule at the story ``threshold``."""
        floor = None if self.large_margin is None else threshold + self.large_margin
        return rule_named(self.rule, self.support, self.large, self.large_share, floor)

    def topic_rule_named(self) -> ClusterRule:
        """The topic groups' rule (:mod:`nlsim.clusters.topics`)."""
        return rule_named(self.topic_rule, self.topic_support)


@dataclass(frozen=True)
class ReportSettings:
    """Where the report goes and what it holds beside the clusters."""

    out: str
    near_misses: int = 200
    judge_pairs: str | None = None
    judge_split: str = "validation"
    save_index: bool = True
    timezone: str = "UTC"


@dataclass(frozen=True)
class StateSettings:
    """The state folder of a daily run: the kept window, and how long items stay in it."""

    folder: str
    retention_days: float | None = 30.0
    as_of: str | None = None
    rebuild: bool = False
    accept_model_drop: bool = False
    """Go on with a model that scores much lower than the last run's (:mod:`nlsim.dedup.model_drop`)."""


@dataclass(frozen=True)
class DedupSettings:
    """Every setting of one run, by concern (see the module docstring)."""

    input: InputSettings
    model: ModelSettings
    report: ReportSettings
    search: SearchSettings = field(default_factory=SearchSettings)
    clustering: ClusteringSettings = field(default_factory=ClusteringSettings)
    state: StateSettings | None = None
    progress: bool = True

    @property
    def daily(self) -> bool:
        """A daily (incremental) run: one with a state folder."""
        return self.state is not None

    def window_params(self) -> dict[str, Any]:
        """The settings a daily state keeps and compares with the next run's (a change pairs the window
        again)."""
        return {
            "k": self.search.k,
            "window_hours": self.search.window_hours,
            "index_kind": self.search.index_kind,
            "representative": self.clustering.representative,
        }
