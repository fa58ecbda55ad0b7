"""A near-duplicate run's settings, one frozen record per concern, each setting declared once in its
record (its default, help text, flags and check; :func:`nlsim.options.option`).

:class:`~nlsim.dedup.config.DedupConfig` is the run's configuration, made of these records. The stages
read the part of a run they are about, and nothing else:

- :class:`InputSettings`: the corpus (its ``{date}`` filled in: :attr:`InputSettings.corpus_path`), the
  fields embedded, the quarantine file, the run's date and time zone;
- :class:`~nlsim.models.settings.ModelSettings` (:mod:`nlsim.models`): the encoder, its reranker, the
  threshold, how they run and their caches;
- :class:`SearchSettings`: the neighbours searched and the FAISS index;
- :class:`ClusteringSettings`: the cluster rule, each cluster's representative, the editors' verdicts;
- :class:`ReportSettings`: the report folder, the near misses, the judge, the progress shown;
- :class:`StateSettings`: the daily state. A batch run names no state folder (``DedupConfig.daily`` is
  false), and :mod:`nlsim.dedup.run` composes the stages of a batch run or of a daily one from it
  (:func:`~nlsim.dedup.run.run_batch`, :func:`~nlsim.dedup.run.run_daily`).

Example:
    >>> source = InputSettings(corpus="incoming/{date}.parquet", date="2026-11-22")
    >>> source.corpus_path, source.text_fields
    ('incoming/2026-11-22.parquet', ('title', 'description'))
    >>> SearchSettings(k=5).index_options()["kind"], ClusteringSettings().rule, StateSettings().folder
    ('auto', 'support', None)
"""

from __future__ import annotations

import datetime as dt
import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

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
from nlsim.errors import ConfigError
from nlsim.io.corpus_schema import (  # noqa: F401 - FUTURE_TOLERANCE_DAYS re-exported
    FUTURE_TOLERANCE_DAYS,
    text_fields_problem,
    zone_problem,
)
from nlsim.io.pairs import PAIR_FILE_FORMATS, SPLITS
from nlsim.options import assign, comma_tuple, option, text_paths

IndexKind = Literal["auto", "flat", "ivf", "hnsw"]
Representative = Literal["earliest", "central"]
ClusterRuleName = Literal["support", "components"]
Cut = Literal["order", "min-cut"]

MAX_WINDOW_HOURS = 24 * 36_525
"""The widest --window-hours (100 years): wider than any corpus, and within what a time difference holds."""
MAX_RETENTION_DAYS = 36_525
"""The longest --retention-days (100 years), for the same reason."""
MAX_K = 10_000
"""The most neighbours an item may search (--k): each batch of searched items holds k + 1 hits of each, and
the pairs of every item past its k nearest are below any threshold a near duplicate reaches; --k 10**9
searched every item against every other, holding all their hits (a run that filled the memory)."""
MAX_NLIST = 2**18
"""The most IVF lists (--nlist, and so --nprobe): 262,144, FAISS's guideline for 100 million to a billion
vectors (the default, 2 x sqrt(items), is 65,536 at a billion); more asked its k-means for one list a
training vector, hours on a large corpus."""


def has_date(path: str | None) -> bool:
    """Whether ``path`` holds a ``{date}`` placeholder (``{date}``, ``{date:%Y%m%d}``: the run's date is
    filled in): a dated path. ``{{date}}`` is none: str.format's escaped braces, a ``{date}`` of the file's
    name.

    >>> has_date("in/{date}.csv"), has_date("in/{{date}}.csv"), has_date("in/{{{date}}}.csv"), has_date(None)
    (True, False, True, False)
    """
    return path is not None and "{date" in path.replace("{{", "")


def check_placeholders(path: str, what: str) -> None:
    """Refuse a placeholder other than ``{date}`` in a path (``bad/{day}.csv``, a misspelt ``{date}``: taken
    as written, every day's file would be the same one; ``in/{date}/{day}.csv``, ``{date[0]}``,
    ``{date!r}``, a format that shows no part of the date: ``{date:>20}``) and, in a path with ``{date``, a
    brace that opens or closes nothing (``in/{date.csv``), which filling in the date would fail on once the
    run had started; in a path with no ``{date``, braces that hold no name are kept as written.

    Example:
        >>> check_placeholders("bad/rows.csv", "--quarantine")
        >>> check_placeholders("bad/{date}.csv", "--quarantine")
        >>> for path in ("bad/{day}.csv", "bad/{date}/{day}.csv", "bad/{date.csv"):
        ...     try:
        ...         check_placeholders(path, "--quarantine")
        ...     except ConfigError as exc:
        ...         print(exc)  # doctest: +ELLIPSIS
        --quarantine 'bad/{day}.csv': only {date} may be filled in (the run's date), not {day}
        --quarantine 'bad/{date}/{day}.csv': only {date} may be filled in (the run's date), not {day}
        --quarantine 'bad/{date.csv': a brace that opens or closes nothing (...); write {date} for ...
    """
    dated = "{date" in path  # then str.format fills it in (InputSettings._dated), {{date}} too
    try:
        fields = [
            (name, spec, conv) for _, name, spec, conv in string.Formatter().parse(path) if name is not None
        ]
    except ValueError as exc:  # a lone brace: part of the name, unless the date is filled in
        if dated:
            raise ConfigError(
                f"{what} {path!r}: a brace that opens or closes nothing ({exc}); write {{date}} for the "
                "run's date, {{ or }} for a brace of the file name"
            ) from None
        return
    for name, spec, conv in fields:
        if (name or dated) and (name != "date" or conv):
            shown = "{" + name + (f"!{conv}" if conv else "") + "}"
            raise ConfigError(
                f"{what} {path!r}: only {{date}} may be filled in (the run's date), not {shown}"
            )
        if name == "date" and spec and not _shows_date(spec):
            raise ConfigError(
                f"{what} {path!r}: {{date:{spec}}} shows nothing of the date (every day's path would be the "
                "same); write {date}, or a strftime format such as {date:%Y%m%d}"
            )


def _shows_date(spec: str) -> bool:
    """Whether the format ``spec`` of a ``{date:spec}`` placeholder (a strftime format) tells two days apart.

    >>> _shows_date("%Y%m%d"), _shows_date(">20"), _shows_date("%%")
    (True, False, False)
    """
    try:
        return format(dt.date(2001, 2, 3), spec) != format(dt.date(2002, 4, 5), spec)
    except ValueError:
        return False


@dataclass(frozen=True, kw_only=True)
class InputSettings:
    """The corpus a run reads, and the day and time zone it is read in."""

    corpus: str = option(
        help="corpus file: .parquet, .csv, .tsv, .jsonl or a .json array of objects (a text one may be "
        "compressed: .csv.gz, .bz2, .xz); {date} in the path is replaced by the run's date"
    )
    """The corpus path as given: ``{date}`` in it is the run's date (:attr:`corpus_path`)."""
    text_fields: tuple[str, ...] = option(
        ("title", "description"),
        help="comma-separated fields to embed: title, description, body",
        metavar="FIELDS",
    )
    quarantine: str | None = option(
        None,
        help="write bad rows to this CSV with the reason and go on (written once the run has succeeded); "
        "{date} in the path is replaced by the run's date, as in --corpus (default: stop at the first)",
    )
    date: str | None = option(
        None,
        help="the run's date (YYYY-MM-DD): put into {date} in --corpus, and the day of a daily run (with "
        "--state); refused where it would do neither (default: the scheduled or current date)",
    )
    timezone: str = option(
        "UTC",
        help="time zone (e.g. Asia/Taipei, the deployment's) in which the run's date is taken, a "
        "published_at without an offset is read, and the report page shows its times and groups its clusters "
        "by day",
    )
    """The zone on whose clock a ``published_at`` without an offset is read, and the report's days."""

    def __post_init__(self) -> None:
        text_paths(self, "corpus", "quarantine")
        assign(self, "text_fields", comma_tuple(self.text_fields))
        self.check()

    def check(self) -> None:
        """Refuse values that cannot work (before any work is done)."""
        problem = text_fields_problem(self.text_fields)
        if problem is not None:
            raise ConfigError(f"--text-fields: {problem}")
        if self.date is not None:
            parse_date(self.date, "--date")
        self.zone()
        for path, what in ((self.corpus, "--corpus"), (self.quarantine, "--quarantine")):
            if path is not None:  # a misspelt {date} is not a file name, nor {day} beside {date} a day's
                check_placeholders(path, what)

    @property
    def dated(self) -> bool:
        """Whether :attr:`corpus` or :attr:`quarantine` holds a ``{date}`` placeholder (:func:`has_date`):
        the run's date is filled in."""
        return has_date(self.corpus) or has_date(self.quarantine)

    def zone(self) -> dt.tzinfo:
        """The time zone of :attr:`timezone`."""
        problem = zone_problem(self.timezone)
        if problem is not None:
            raise ConfigError(problem)
        return ZoneInfo(self.timezone)

    def run_date(self) -> dt.date:
        """The run's date: ``date``, else today in ``timezone``."""
        return parse_date(self.date, "--date") if self.date else dt.datetime.now(self.zone()).date()

    @property
    def corpus_path(self) -> str:
        """The corpus path with ``{date}`` filled in."""
        return self._dated(self.corpus, "--corpus")

    @property
    def quarantine_path(self) -> str | None:
        """The quarantine file with ``{date}`` filled in, as in :attr:`corpus_path` (a daily run's bad rows
        go to a file of the day, not over the last day's); ``None`` without one."""
        return None if self.quarantine is None else self._dated(self.quarantine, "--quarantine")

    def _dated(self, path: str, what: str) -> str:
        """``path`` with ``{date}`` filled in (:func:`check_placeholders` refuses any other placeholder)."""
        if "{date" not in path:
            return path
        try:
            return path.format(date=self.run_date())
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"{what} {path!r}: only {{date}} may be filled in ({exc})") from None

    @property
    def corpus_named(self) -> str:
        """:attr:`corpus_path` as a run's record names it: absolute (``..`` and links kept as given), so
        that ``nlsim judge`` finds the corpus from any folder."""
        return str(Path(self.corpus_path).absolute())


@dataclass(frozen=True, kw_only=True)
class SearchSettings:
    """The neighbours each item searches, and the FAISS index they are searched in (on the CPU threads of
    :attr:`ModelSettings.threads <nlsim.models.settings.ModelSettings.threads>`)."""

    k: int = option(10, help="neighbours searched per item (at most 10,000)")
    window_hours: float | None = option(
        None,
        help="only pair items published at most this many hours apart (default: none, items are paired "
        "whenever they were published)",
    )
    index_kind: IndexKind = option(
        "auto",
        help="FAISS index: exact flat, or approximate IVF/HNSW (auto: by corpus size)",
        flags=("--index",),
        off=("flat", "hnsw"),  # no lists: --nlist and --nprobe would do nothing
    )
    nlist: int | None = option(
        None,
        help="IVF lists, at most 262,144 (default: the power of two nearest 2 x sqrt(items); IVF indexes "
        "only)",
        needs="index_kind",
    )
    nprobe: int | None = option(
        None,
        help="IVF lists searched per item (default 16; 12 is about a third faster at 1M items, recall@10 "
        "0.95 instead of 0.97 in docs/scale.md; IVF indexes only)",
        needs="index_kind",
    )
    use_gpu: bool | None = option(
        None,
        help="FAISS on the GPU (required) or on the CPU (default: GPU when the GPU build sees one)",
        flags=("--gpu", "--cpu"),
    )

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse values that cannot work (before any work is done)."""
        if self.k < 1:
            raise ConfigError(f"--k must be >= 1, got {self.k}")
        if self.k > MAX_K:
            raise ConfigError(f"--k must be at most {MAX_K:,} (neighbours searched per item), got {self.k}")
        for name in ("nlist", "nprobe"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name} must be >= 1, got {value}")
            if value is not None and value > MAX_NLIST:
                raise ConfigError(
                    f"--{name} must be at most {MAX_NLIST:,} (FAISS's IVF lists for up to a billion "
                    f"vectors), got {value}"
                )
        if self.window_hours is not None and not 0 < self.window_hours <= MAX_WINDOW_HOURS:
            raise ConfigError(
                f"--window-hours must be more than 0 and at most {MAX_WINDOW_HOURS} (100 years), got "
                f"{self.window_hours}; leave it out to pair items whenever they were published"
            )

    def index_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`nlsim.search.index.build_index`."""
        return {"kind": self.index_kind, "use_gpu": self.use_gpu, "nlist": self.nlist, "nprobe": self.nprobe}


@dataclass(frozen=True, kw_only=True)
class ClusteringSettings:
    """Which linked items make one cluster, which item stands for it, and the editors' verdicts."""

    representative: Representative = option("earliest", help="each cluster's representative item")
    rule: ClusterRuleName = option(
        DEFAULT_RULE,
        help="which linked items make one cluster: 'support' (average linkage: a share of the member pairs "
        "between two groups must link, --cluster-support) or 'components' (every chain of links); "
        "nlsim/clusters/rules.py",
        name="cluster_rule",
        off=("components",),  # no shares and no large clusters: the support rule's settings do nothing
    )
    support: float = option(
        DEFAULT_SUPPORT,
        help="the support rule's share: two groups join while at least this share of their member pairs link",
        name="cluster_support",
        needs="cluster_rule",
    )
    large: int | None = option(
        DEFAULT_LARGE,
        help="a story cluster of this many items or more must be held strongly, not by a chain at the "
        "threshold (--large-cluster-margin, --large-cluster-share); 0: no more than a smaller one",
        name="large_cluster",
        needs="cluster_rule",
    )
    """A story cluster of this many items or more must be held strongly (:class:`SharedSupport`); ``None``
    (given as 0): no more than a smaller one."""
    large_margin: float | None = option(
        DEFAULT_LARGE_MARGIN,
        help="how far above the threshold the links between a large cluster's two halves must score on "
        "average",
        name="large_cluster_margin",
        needs="cluster_rule",
    )
    """How far above the story threshold the links between a large cluster's two halves must score."""
    large_share: float | None = option(
        DEFAULT_LARGE_SHARE,
        help="the share of a large cluster's member pairs between its two halves that must link (default: "
        "--cluster-support's)",
        name="large_cluster_share",
        needs="cluster_rule",
    )
    cut: Cut = option(
        "order",
        help="how an editor's 'not the same story' parts a cluster: 'order' (the weakest links on the way) "
        "or 'min-cut' (the cheapest set of links; nlsim/clusters/cuts.py)",
        name="cluster_cut",
    )
    """How an editor's "not the same story" parts a cluster (:mod:`nlsim.clusters.cuts`)."""
    topic_rule: ClusterRuleName = option(
        DEFAULT_TOPIC_RULE,
        help="which stories and items make one topic group: 'support' or 'components'",
        needs="topics",
        off=("components",),  # no share: --topic-support does nothing
    )
    topic_support: float = option(
        DEFAULT_TOPIC_SUPPORT,
        help="the topic rule's share of linked member pairs (as --cluster-support)",
        needs="topic_rule",
    )
    annotated_pairs: str | None = option(
        None,
        help=f"the annotated pair file ({PAIR_FILE_FORMATS}; the one `nlsim annotate merge` extends): the "
        "page's review queue never offers its pairs again, and the editors' verdicts kept beside it "
        "(FILE.verdicts.csv, checked against the pair file) act on the clusters: same story joins two "
        "items, not the same story keeps them apart (training pairs only; a daily state keeps them for "
        "later runs) (default: none)",
    )

    def __post_init__(self) -> None:
        self.check()
        if self.large == 0:
            assign(self, "large", None)  # 0 and None both ask nothing more of a large cluster: one spelling

    def check(self) -> None:
        """Refuse values that cannot work (before any work is done)."""
        for flag, share in (
            ("--cluster-support", self.support),
            ("--topic-support", self.topic_support),
            ("--large-cluster-share", self.large_share),
        ):
            if share is not None and not (math.isfinite(share) and 0.0 < share <= 1.0):
                raise ConfigError(f"{flag} must be more than 0 and at most 1, got {share}")
        if self.large is not None and self.large != 0 and self.large < 3:
            raise ConfigError(f"--large-cluster must be 0 (none) or at least 3, got {self.large}")
        margin = self.large_margin
        if margin is not None and not (math.isfinite(float(margin)) and -1.0 <= float(margin) <= 1.0):
            raise ConfigError(f"--large-cluster-margin must be a number in [-1, 1], got {margin}")

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


@dataclass(frozen=True, kw_only=True)
class ReportSettings:
    """Where the report goes, what it holds beside the clusters, and the progress shown while it is made."""

    out: str = option(
        help="report folder (pairs.parquet, clusters.parquet, index.html, ...); with --state the reports go "
        "to OUT/runs/<run id>/ and OUT/latest"
    )
    near_misses: int = option(
        200,
        help="keep this many of the best candidate pairs below the threshold in near_misses.parquet, for "
        "editors to review (0: none)",
    )
    judge_pairs: str | None = option(
        None,
        help=f"editors' scored pairs with item ids ({PAIR_FILE_FORMATS}): the report is judged against them "
        "at "
        "the cluster level, and the page and run.json show precision, recall and F1 (default: none, the "
        "report is not judged)",
    )
    judge_split: str = option(
        "validation",
        help="the split of --judge-pairs to judge against ('all': every pair)",
        needs="judge_pairs",
    )
    progress: bool = option(True, help="no progress output", flags=("--no-progress",))
    save_index: bool = option(True, help="keep the FAISS index in OUT/index/", cli=False)

    def __post_init__(self) -> None:
        text_paths(self, "out")
        self.check()

    def check(self) -> None:
        """Refuse values that cannot work (before any work is done)."""
        if self.near_misses < 0:
            raise ConfigError(f"--near-misses must be >= 0, got {self.near_misses}")
        if self.judge_split not in (*SPLITS, "all"):
            raise ConfigError(
                f"--judge-split {self.judge_split!r}: unknown split (a pair file's splits are "
                f"{', '.join(SPLITS)}; 'all': every pair)"
            )


@dataclass(frozen=True, kw_only=True)
class StateSettings:
    """The state folder of a daily run: the kept window, and how long items stay in it (a batch run names
    no folder)."""

    folder: str | None = option(
        None,
        help="state folder: embed only items not seen before, match them against the kept window, keep "
        "cluster ids stable; the report goes to OUT/runs/<run id>/ and OUT/latest (default: none, a batch "
        "run)",
        name="state",
    )
    retention_days: float | None = option(
        30.0,
        help="with --state: drop items older than this many days from the window (0 keeps everything)",
        needs="state",
    )
    as_of: str | None = option(
        None,
        help="with --state: the run's reference time, written as a published_at is: ISO 8601 (2026-11-22, "
        "2026-11-22T06:30:00+08:00) or RFC 2822; a time without an offset is read in --timezone "
        "(default: the latest published_at seen)",
    )
    rebuild: bool = option(
        False,
        help="with --state: set the state there aside, broken or not (its window of items and embeddings, "
        "its clock and its stories' cluster ids), moved to STATE/broken-<time>/ and kept there, and build "
        "a fresh one from this run's corpus alone: earlier days' items are not read again (run them again, "
        "day by day, to get the window back); the editors' verdicts come back from --annotated-pairs, or "
        "else from the state set aside",
        name="rebuild_state",
    )
    accept_model_drop: bool = option(
        False,
        help="with --state: go on with a model whose recorded same-story F1 on the validation pairs is more "
        "than 0.10 below that of the model of the state's last run (refused by default)",
    )
    """Go on with a model that scores much lower than the last run's (:mod:`nlsim.dedup.model_drop`)."""

    def __post_init__(self) -> None:
        text_paths(self, "folder")
        if self.retention_days == 0:
            assign(self, "retention_days", None)  # 0 and None both keep everything: one spelling
        self.check()

    def check(self) -> None:
        """Refuse values that cannot work (before any work is done)."""
        if self.retention_days is not None and not 0 <= self.retention_days <= MAX_RETENTION_DAYS:
            raise ConfigError(
                f"--retention-days must be a number from 0 (0 keeps everything) to {MAX_RETENTION_DAYS} "
                f"(100 years), got {self.retention_days}"
            )
        if self.as_of is not None:  # written as a time; whether it is in the future: on the run's clock
            parse_time(self.as_of, "--as-of")  # (DedupConfig, with --timezone: check_as_of)
        if not self.folder and (self.as_of is not None or self.rebuild or self.accept_model_drop):
            given = (
                "--as-of"
                if self.as_of is not None
                else ("--rebuild-state" if self.rebuild else "--accept-model-drop")
            )
            raise ConfigError(f"{given} works on a daily state: give --state DIR with it")


def parse_date(value: str, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(f"{what} {value!r}: not a date; give YYYY-MM-DD, e.g. 2026-11-22") from None


def check_day(value: str, timezone: str = "UTC") -> dt.date:
    """A daily run's ``--date``, refused beyond tomorrow in ``timezone`` (``FUTURE_TOLERANCE_DAYS``) and
    outside the years a clock holds: a day whose items have no date takes the start of its date as the
    window's clock, which never moves back, so a year typed wrong would expire every kept item and make
    every later day's items too old, for good.

    Example:
        >>> check_day("2026-11-22", "Asia/Taipei")
        datetime.date(2026, 11, 22)
        >>> check_day("1500-01-01")
        Traceback (most recent call last):
        nlsim.errors.ConfigError: --date 1500-01-01: a daily run's day is its window's clock when its ...
    """
    from nlsim.io.times import TIME_RANGE  # deferred, as in parse_time: it imports pandas

    day = parse_date(value, "--date")
    today = dt.datetime.now(ZoneInfo(timezone)).date()
    if day > today + dt.timedelta(days=FUTURE_TOLERANCE_DAYS):
        raise ConfigError(
            f"--date {value}: more than {FUTURE_TOLERANCE_DAYS} day after today ({today} in {timezone}): a "
            "daily run's day is its window's clock when its items have no date, and a state's clock never "
            "moves backwards, so every later run's items would be too old for its window"
        )
    if day.year < TIME_RANGE[0]:
        raise ConfigError(
            f"--date {value}: a daily run's day is its window's clock when its items have no date, and that "
            f"clock holds years {TIME_RANGE[0]} to {TIME_RANGE[1]}"
        )
    return day


def check_as_of(value: str, timezone: str = "UTC") -> Any:
    """``--as-of`` as a UTC ``pandas.Timestamp`` (without an offset: on ``timezone``'s clock, the run's
    ``--timezone``, as the run reads it), refused beyond now plus ``FUTURE_TOLERANCE_DAYS``: the reference
    time of a state never moves back, so a time typed in the future would expire every item of every later
    run until it is reached."""
    import pandas as pd  # deferred, as in parse_time

    ts = parse_time(value, "--as-of", timezone)
    limit = pd.Timestamp.now(tz="UTC") + pd.Timedelta(days=FUTURE_TOLERANCE_DAYS)
    if ts > limit:
        raise ConfigError(
            f"--as-of {value} is more than {FUTURE_TOLERANCE_DAYS} day after now ({limit.floor('s')} UTC at "
            "the latest): a state's time never moves backwards, so every later run's items would be too old "
            "for its window"
        )
    return ts


def parse_time(value: Any, what: str, timezone: str = "UTC") -> Any:
    """A UTC ``pandas.Timestamp`` from a date or time written as a ``published_at`` is read (year first or
    RFC 2822; without an offset, on ``timezone``'s clock, the run's ``--timezone``): ``12/05/2024``,
    ``2024-05-01 16:00 GMT+8`` or a placeholder year would be guessed, and a state's clock never moves back,
    so each is refused with the reason.

    Example:
        >>> str(parse_time("2026-11-22T06:30", "--as-of", "Asia/Taipei"))
        '2026-11-21 22:30:00+00:00'
        >>> str(parse_time("2026-11-22T06:30:00+00:00", "--as-of", "Asia/Taipei"))
        '2026-11-22 06:30:00+00:00'
    """
    from zoneinfo import ZoneInfo

    import pandas as pd  # deferred: the settings are imported by the command line before pandas is needed

    from nlsim.io.times import TIME_RANGE, read_time

    # a year far ahead is left to check_as_of, which says why it is refused (after now)
    value = value.strip() if isinstance(value, str) else value
    read = read_time(value, zone=ZoneInfo(timezone), years=(TIME_RANGE[0], 9999))
    if read.reason is not None:
        raise ConfigError(f"{what} {value!r}: {read.reason}")
    if read.time is None or pd.isna(read.time):
        raise ConfigError(
            f"{what} {value!r}: not a date or time; give ISO 8601, e.g. 2026-11-22 or "
            "2026-11-22T06:30:00+08:00"
        )
    return read.time
