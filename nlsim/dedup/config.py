"""The configuration of one near-duplicate run: :class:`DedupConfig`.

Every option of ``nlsim dedup``, every parameter of the ``news-dedup`` flows and of the ``news-dedup/daily``
deployment is a field here, with its help text (:func:`nlsim.options.option`). A run is a batch run, or
an incremental (daily) one when ``state`` names a state folder. The stages never read this record: they
read :meth:`DedupConfig.settings`, the same values split by concern (:mod:`nlsim.dedup.settings`).

The corpus path may hold ``{date}`` (``incoming/{date}.parquet``): it is replaced by the run's date, given
as ``date`` (YYYY-MM-DD), else the scheduled date of a Prefect run, else today (UTC).

Example:
    >>> cfg = DedupConfig(corpus="incoming/{date}.parquet", out="reports/daily", date="2026-11-22",
    ...                   threshold=0.95)
    >>> cfg.corpus_path(), cfg.text_fields
    ('incoming/2026-11-22.parquet', ('title', 'description'))
    >>> s = cfg.settings()
    >>> s.input.corpus, s.model.threshold, s.search.k, s.state is None
    ('incoming/2026-11-22.parquet', 0.95, 10, True)
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nlsim.clusters.rules import (
    DEFAULT_LARGE,
    DEFAULT_LARGE_MARGIN,
    DEFAULT_LARGE_SHARE,
    DEFAULT_RULE,
    DEFAULT_SUPPORT,
)
from nlsim.clusters.topics import DEFAULT_TOPIC_RULE, DEFAULT_TOPIC_SUPPORT
from nlsim.conversion import DEFAULT_MODE, Conversion, check_mode
from nlsim.dedup.settings import (
    ClusteringSettings,
    ClusterRuleName,
    Cut,
    DedupSettings,
    IndexKind,
    InputSettings,
    ReportSettings,
    Representative,
    SearchSettings,
    StateSettings,
)
from nlsim.errors import ConfigError
from nlsim.models.settings import DEFAULT_MODEL, Backend, ModelSettings, Precision
from nlsim.options import option

MAX_WINDOW_HOURS = 24 * 36_525
"""The widest --window-hours (100 years): wider than any corpus, and within what a time difference holds."""
MAX_RETENTION_DAYS = 36_525
"""The longest --retention-days (100 years), for the same reason."""
FUTURE_TOLERANCE_DAYS = 1
"""An item's time or an --as-of up to this many days after now passes (clocks and time zones differ)."""

__all__ = [
    "Backend",
    "ClusterRuleName",
    "DedupConfig",
    "IndexKind",
    "Precision",
    "Representative",
]


@dataclass
class DedupConfig:
    """Parameters of one dedup run (see the module docstring)."""

    corpus: str = option(
        help="corpus file: .parquet, .csv, .tsv or .jsonl; {date} in the path is replaced by the run's date"
    )
    out: str = option(
        help="report folder (pairs.parquet, clusters.parquet, index.html, ...); with --state the reports go "
        "to OUT/runs/<run id>/ and OUT/latest"
    )
    model: str = option(
        DEFAULT_MODEL,
        help="registry name, fine-tuned model folder, 'current' (the model store's promoted model, zero-shot "
        "e5 until one is promoted), local Hugging Face folder or hub name",
    )
    model_store: str = option("models", help="model store folder, read for --model current")
    convert: Conversion = option(DEFAULT_MODE, help="OpenCC script conversion before embedding")
    threshold: float | None = option(
        None,
        help="threshold of a pair: a cosine, or with a reranker the 0-1 rerank score (default: the "
        "calibration file, else the model's own calibration)",
    )
    calibration: str | None = option(
        None, help="calibration JSON from `nlsim calibrate` (a cosine threshold)"
    )
    text_fields: tuple[str, ...] = option(
        ("title", "description"),
        help="comma-separated fields to embed: title, description, body",
        metavar="FIELDS",
    )
    k: int = option(10, help="neighbours searched per item")
    window_hours: float | None = option(None, help="only pair items published at most this many hours apart")
    index_kind: IndexKind = option(
        "auto",
        help="FAISS index: exact flat, or approximate IVF/HNSW (auto: by corpus size)",
        flags=("--index",),
    )
    nlist: int | None = option(
        None, help="IVF lists (default: the power of two nearest 2 x sqrt(items); IVF indexes only)"
    )
    nprobe: int | None = option(
        None,
        help="IVF lists searched per item (default 16; 12 is about a third faster at 1M items, recall@10 "
        "0.95 instead of 0.97 in docs/scale.md; IVF indexes only)",
    )
    use_gpu: bool | None = option(
        None,
        help="FAISS on the GPU (required) or on the CPU (default: GPU when the GPU build sees one)",
        flags=("--gpu", "--cpu"),
    )
    representative: Representative = option("earliest", help="each cluster's representative item")
    cluster_rule: ClusterRuleName = option(
        DEFAULT_RULE,
        help="which linked items make one cluster: 'support' (average linkage: a share of the member pairs "
        "between two groups must link, --cluster-support) or 'components' (every chain of links); "
        "nlsim/clusters/rules.py",
    )
    cluster_support: float = option(
        DEFAULT_SUPPORT,
        help="the support rule's share: two groups join while at least this share of their member pairs link",
    )
    large_cluster: int | None = option(
        DEFAULT_LARGE,
        help="a story cluster of this many items or more must be held strongly, not by a chain at the "
        "threshold (--large-cluster-margin, --large-cluster-share); 0: no more than a smaller one",
    )
    large_cluster_margin: float | None = option(
        DEFAULT_LARGE_MARGIN,
        help="how far above the threshold the links between a large cluster's two halves must score on "
        "average",
    )
    large_cluster_share: float | None = option(
        DEFAULT_LARGE_SHARE,
        help="the share of a large cluster's member pairs between its two halves that must link (default: "
        "--cluster-support's)",
    )
    cluster_cut: Cut = option(
        "order",
        help="how an editor's 'not the same story' parts a cluster: 'order' (the weakest links on the way) "
        "or 'min-cut' (the cheapest set of links; nlsim/clusters/cuts.py)",
    )
    topics: bool = option(
        True,
        help="leave out the topic groups around the stories (stories and single items sharing a topic and "
        "entity: an exam year, a saga, one product's promotions; nlsim/clusters/topics.py)",
        flags=("--no-topics",),
    )
    topic_threshold: float | None = option(
        None,
        help="the topic groups' threshold, on the bi-encoder's cosine (default: calibrated with the model at "
        "the rubric's 0.75 level, topic_calibration.json)",
    )
    topic_rule: ClusterRuleName = option(
        DEFAULT_TOPIC_RULE, help="which stories and items make one topic group: 'support' or 'components'"
    )
    topic_support: float = option(
        DEFAULT_TOPIC_SUPPORT, help="the topic rule's share of linked member pairs (as --cluster-support)"
    )
    series_veto: bool = option(
        True,
        help="keep the rerank score of a pair whose headlines name other years, model codes or figures of "
        "one template, or one a rise and the other a fall (by default held at 0.75: a series, not one "
        "story; nlsim/rerank/series.py)",
        flags=("--no-series-veto",),
    )
    quarantine: str | None = option(
        None, help="write bad rows to this CSV with the reason and go on (default: stop at the first)"
    )
    batch_size: int | None = option(
        None, help="texts per embedding batch (default: 64 on the CPU, 256 on a GPU)"
    )
    threads: int | None = option(
        None,
        help="CPU threads of torch, ONNX Runtime and FAISS (default: theirs, every core); fewer leave room "
        "for other work on a shared machine",
    )
    backend: Backend = option(
        "auto",
        help="how the encoder and the reranker's cross-encoder run: ONNX Runtime or torch (auto: chosen on "
        "this machine by a cached speed probe)",
    )
    precision: Precision = option(
        "auto",
        help="their precision: fp32 (exact), bf16, fp16 (GPU), int8 (CPU); auto takes a lossy one only where "
        "the model's stored quality check passed it and, on a CPU, it is faster (see docs/encoders.md)",
    )
    cache: bool = option(True, help="do not reuse cached embeddings", flags=("--no-cache",))
    rerank: bool | None = option(
        None,
        help="rescore the pairs with the reranker stored with the model (default: when it has one); "
        "--threshold is then on the 0-1 rerank score",
        flags=("--rerank", "--no-rerank"),
    )
    state: str | None = option(
        None,
        help="state folder: embed only items not seen before, match them against the kept window, keep "
        "cluster ids stable; the report goes to OUT/runs/<run id>/ and OUT/latest",
    )
    retention_days: float | None = option(
        30.0, help="with --state: drop items older than this many days from the window (0 keeps everything)"
    )
    as_of: str | None = option(
        None, help="with --state: the run's reference time (default: the latest published_at seen)"
    )
    date: str | None = option(
        None,
        help="the run's date (YYYY-MM-DD) put into {date} in --corpus (default: the scheduled or "
        "current date)",
    )
    timezone: str = option(
        "UTC",
        help="time zone (e.g. Asia/Taipei, the deployment's) in which the run's date is taken, a "
        "published_at without an offset is read, and the report page shows its times and groups its clusters "
        "by day",
    )
    rebuild_state: bool = option(False, help="with --state: move a broken state aside and build a fresh one")
    accept_model_drop: bool = option(
        False,
        help="with --state: go on with a model whose recorded same-story F1 on the validation pairs is more "
        "than 0.10 below that of the model of the state's last run (refused by default)",
    )
    near_misses: int = option(
        200,
        help="keep this many of the best candidate pairs below the threshold in near_misses.parquet, for "
        "editors to review (0: none)",
    )
    judge_pairs: str | None = option(
        None,
        help="editors' scored pairs with item ids (.tsv/.csv/.parquet): the report is judged against them at "
        "the cluster level, and the page and run.json show precision, recall and F1",
    )
    judge_split: str = option(
        "validation", help="the split of --judge-pairs to judge against ('all': every pair)"
    )
    annotated_pairs: str | None = option(
        None,
        help="the annotated pair file (.tsv/.csv/.parquet, the one `nlsim annotate merge` extends): the "
        "page's review queue never offers its pairs again, and the editors' verdicts kept beside it "
        "(FILE.verdicts.csv, checked against the pair file) act on the clusters: same story joins two "
        "items, not the same story keeps them apart (training pairs only; a daily state keeps them for "
        "later runs)",
    )
    progress: bool = option(True, help="no progress output", flags=("--no-progress",))
    save_index: bool = option(True, help="keep the FAISS index in OUT/index/", cli=False)

    def __post_init__(self) -> None:
        if isinstance(self.text_fields, str):
            self.text_fields = tuple(f.strip() for f in self.text_fields.split(",") if f.strip())
        self.text_fields = tuple(self.text_fields)
        if self.retention_days == 0:
            self.retention_days = None  # 0 and None both keep everything: one spelling in the run record
        for name in ("corpus", "out", "calibration", "quarantine", "state", "model_store"):
            value = getattr(self, name)
            if isinstance(value, Path):
                setattr(self, name, str(value))
        self.check()

    def check(self) -> None:
        """Refuse values that cannot work (before any work is done)."""
        check_mode(self.convert)
        if not self.text_fields:
            raise ConfigError("--text-fields: give at least one field, e.g. title,description")
        if self.threshold is not None:
            t = float(self.threshold)
            if not math.isfinite(t) or not -1.0 <= t <= 1.0:
                raise ConfigError(f"--threshold must be a number in [-1, 1], got {self.threshold}")
        if self.k < 1:
            raise ConfigError(f"--k must be >= 1, got {self.k}")
        for name in ("nlist", "nprobe"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name} must be >= 1, got {value}")
        if self.near_misses < 0:
            raise ConfigError(f"--near-misses must be >= 0, got {self.near_misses}")
        for flag, share in (
            ("--cluster-support", self.cluster_support),
            ("--topic-support", self.topic_support),
            ("--large-cluster-share", self.large_cluster_share),
        ):
            if share is not None and not (math.isfinite(share) and 0.0 < share <= 1.0):
                raise ConfigError(f"{flag} must be more than 0 and at most 1, got {share}")
        if self.large_cluster is not None and self.large_cluster != 0 and self.large_cluster < 3:
            raise ConfigError(f"--large-cluster must be 0 (none) or at least 3, got {self.large_cluster}")
        for flag, value in (
            ("--topic-threshold", self.topic_threshold),
            ("--large-cluster-margin", self.large_cluster_margin),
        ):
            if value is not None and not (math.isfinite(float(value)) and -1.0 <= float(value) <= 1.0):
                raise ConfigError(f"{flag} must be a number in [-1, 1], got {value}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"--batch-size must be >= 1, got {self.batch_size}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"--threads must be >= 1, got {self.threads}")
        if self.window_hours is not None and not 0 < self.window_hours <= MAX_WINDOW_HOURS:
            raise ConfigError(
                f"--window-hours must be more than 0 and at most {MAX_WINDOW_HOURS} (100 years), got "
                f"{self.window_hours}; leave it out to pair items whenever they were published"
            )
        if self.retention_days is not None and not 0 <= self.retention_days <= MAX_RETENTION_DAYS:
            raise ConfigError(
                f"--retention-days must be a number from 0 (0 keeps everything) to {MAX_RETENTION_DAYS} "
                f"(100 years), got {self.retention_days}"
            )
        if self.date is not None:
            parse_date(self.date, "--date")
        self.zone()
        if self.as_of is not None:
            check_as_of(self.as_of)
        if not self.state and (self.as_of is not None or self.rebuild_state or self.accept_model_drop):
            given = (
                "--as-of"
                if self.as_of is not None
                else ("--rebuild-state" if self.rebuild_state else "--accept-model-drop")
            )
            raise ConfigError(f"{given} works on a daily state: give --state DIR with it")

    def settings(self) -> DedupSettings:
        """The run's settings by concern (:mod:`nlsim.dedup.settings`): what the stages read."""
        return DedupSettings(
            input=InputSettings(
                corpus=self.corpus_path(),
                corpus_named=self.corpus_named(),
                text_fields=self.text_fields,
                quarantine=self.quarantine,
                timezone=self.timezone,
            ),
            model=ModelSettings(
                name=self.model,
                store=self.model_store,
                convert=self.convert,
                threshold=self.threshold,
                calibration=self.calibration,
                rerank=self.rerank,
                backend=self.backend,
                precision=self.precision,
                batch_size=self.batch_size,
                threads=self.threads,
                cache=self.cache,
                series_veto=self.series_veto,
                topic_threshold=self.topic_threshold,
                topics=self.topics,
            ),
            search=SearchSettings(
                k=self.k,
                window_hours=self.window_hours,
                index_kind=self.index_kind,
                nlist=self.nlist,
                nprobe=self.nprobe,
                use_gpu=self.use_gpu,
                threads=self.threads,
            ),
            clustering=ClusteringSettings(
                rule=self.cluster_rule,
                support=self.cluster_support,
                representative=self.representative,
                annotated_pairs=self.annotated_pairs,
                large=self.large_cluster or None,
                large_share=self.large_cluster_share,
                large_margin=self.large_cluster_margin,
                cut=self.cluster_cut,
                topic_rule=self.topic_rule,
                topic_support=self.topic_support,
            ),
            report=ReportSettings(
                out=self.out,
                near_misses=self.near_misses,
                judge_pairs=self.judge_pairs,
                judge_split=self.judge_split,
                save_index=self.save_index,
                timezone=self.timezone,
            ),
            state=None
            if not self.state
            else StateSettings(
                folder=self.state,
                retention_days=self.retention_days,
                as_of=self.as_of,
                rebuild=self.rebuild_state,
                accept_model_drop=self.accept_model_drop,
            ),
            progress=self.progress,
        )

    def run_date(self) -> dt.date:
        """The run's date: ``date``, else today in ``timezone``."""
        return parse_date(self.date, "--date") if self.date else dt.datetime.now(self.zone()).date()

    def corpus_path(self) -> str:
        """The corpus path with ``{date}`` filled in."""
        if "{date" not in self.corpus:
            return self.corpus
        try:
            return self.corpus.format(date=self.run_date())
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"--corpus {self.corpus!r}: only {{date}} may be filled in ({exc})") from None

    def corpus_named(self) -> str:
        """:meth:`corpus_path` as a run's record names it: absolute (``..`` and links kept as given), so
        that ``nlsim judge`` finds the corpus from any folder."""
        return str(Path(self.corpus_path()).absolute())

    def zone(self) -> dt.tzinfo:
        """The time zone of :attr:`timezone`."""
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"--timezone {self.timezone!r}: not a time zone name (e.g. Asia/Taipei, UTC)"
            ) from None

    def with_(self, **changes: Any) -> DedupConfig:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def parameters(self) -> dict[str, Any]:
        """The fields as plain values (for ``run.json``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def parse_date(value: str, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(f"{what} {value!r}: not a date; give YYYY-MM-DD, e.g. 2026-11-22") from None


def check_as_of(value: str) -> Any:
    """``--as-of`` as a UTC ``pandas.Timestamp``, refused beyond now plus ``FUTURE_TOLERANCE_DAYS``: the
    reference time of a state never moves back, so a time typed in the future would expire every item of
    every later run until it is reached."""
    import pandas as pd  # deferred, as in parse_time

    ts = parse_time(value, "--as-of")
    limit = pd.Timestamp.now(tz="UTC") + pd.Timedelta(days=FUTURE_TOLERANCE_DAYS)
    if ts > limit:
        raise ConfigError(
            f"--as-of {value} is more than {FUTURE_TOLERANCE_DAYS} day after now ({limit.floor('s')} UTC at "
            "the latest): a state's time never moves backwards, so every later run's items would be too old "
            "for its window"
        )
    return ts


def parse_time(value: Any, what: str) -> Any:
    """A UTC ``pandas.Timestamp`` from an ISO date or time; a clear error for anything else."""
    import pandas as pd  # deferred: config is imported by the command line before pandas is needed

    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError):
        ts = pd.NaT
    if ts is pd.NaT or pd.isna(ts):
        raise ConfigError(
            f"{what} {value!r}: not a date or time; give ISO 8601, e.g. 2026-11-22 or "
            "2026-11-22T06:30:00+08:00"
        )
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
