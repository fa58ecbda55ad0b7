"""A run's settings by concern: every option is one field of one record, and the stages read records, not
the whole configuration."""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import fields

import pytest

from nlsim.clusters.rules import Link
from nlsim.dedup import stages
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.settings import StateSettings
from nlsim.errors import ConfigError
from nlsim.options import options_of

BASE = {"corpus": "in/{date}.parquet", "out": "rep", "state": "st", "date": "2026-11-20"}
"""A daily run, so that the state's options count, with a dated corpus, so that --date counts."""

OTHER = {
    "corpus": "other/{date}.parquet",
    "out": "rep2",
    "model": "paraphrase-MiniLM-L3-v2",
    "model_store": "store2",
    "convert": "none",
    "threshold": 0.5,
    "calibration": "cal.json",
    "text_fields": ("title",),
    "k": 5,
    "window_hours": 48.0,
    "index_kind": "flat",
    "nlist": 64,
    "nprobe": 8,
    "use_gpu": False,
    "representative": "central",
    "cluster_rule": "components",
    "cluster_support": 0.6,
    "large_cluster": 8,
    "large_cluster_margin": 0.05,
    "large_cluster_share": 0.5,
    "cluster_cut": "min-cut",
    "topics": False,
    "topic_threshold": 0.6,
    "topic_rule": "components",
    "topic_support": 0.5,
    "series_veto": False,
    "quarantine": "bad.csv",
    "batch_size": 8,
    "threads": 2,
    "backend": "torch",
    "precision": "fp32",
    "cache": False,
    "rerank": True,
    "state": "st2",
    "retention_days": 7.0,
    "as_of": "2026-11-01",
    "date": "2026-11-21",
    "timezone": "Asia/Taipei",
    "rebuild_state": True,
    "accept_model_drop": True,
    "near_misses": 5,
    "judge_pairs": "judged.tsv",
    "judge_split": "all",
    "annotated_pairs": "pairs.tsv",
    "progress": False,
    "save_index": False,
}


def test_every_option_has_a_value_to_try() -> None:
    """A new setting of DedupConfig's records must be given a value here."""
    assert set(OTHER) == {o.name for o in options_of(DedupConfig)}


@pytest.mark.parametrize("name", sorted(OTHER))
def test_each_option_is_one_field_of_its_record(name: str) -> None:
    """A setting given by its flat name (a flag, a flow parameter) is the field of its concern's record,
    and nothing else changes; the run's parameters give it back by the same name."""
    base = DedupConfig.of(**BASE)
    changed = DedupConfig.of(**{**BASE, name: OTHER[name]})
    path = {o.name: o.path for o in options_of(DedupConfig)}[name]
    record, attr = path
    assert getattr(getattr(changed, record), attr) == OTHER[name]
    assert changed.parameters() == {**base.parameters(), name: OTHER[name]}
    others = [f.name for f in fields(DedupConfig) if f.name != record]
    assert all(getattr(changed, r) == getattr(base, r) for r in others), f"--{name} changed another record"
    assert DedupConfig.of(**changed.parameters()) == changed


def test_a_batch_run_has_no_state_folder_and_a_daily_run_its_own() -> None:
    batch = DedupConfig.of(corpus="c.parquet", out="rep", retention_days=7)
    assert batch.state.folder is None and not batch.daily
    daily = DedupConfig.of(corpus="c.parquet", out="rep", state="st", retention_days=0)
    assert daily.state == StateSettings(folder="st", retention_days=None, as_of=None, rebuild=False)
    assert daily.daily


def test_the_corpus_is_named_with_its_date_filled_in() -> None:
    s = DedupConfig.of(corpus="in/{date}.parquet", out="rep", date="2026-11-22")
    assert s.input.corpus == "in/{date}.parquet"  # as given: the run's parameters keep it
    assert s.input.corpus_path == "in/2026-11-22.parquet"
    assert s.input.corpus_named.endswith("in/2026-11-22.parquet") and s.input.corpus_named.startswith("/")
    assert s.with_(date="2026-11-23").input.corpus_path == "in/2026-11-23.parquet"  # computed, not copied


def test_the_settings_cannot_be_changed_by_a_stage() -> None:
    s = DedupConfig.of(corpus="c.parquet", out="rep")
    with pytest.raises(AttributeError):
        s.search.k = 3  # type: ignore[misc]


def test_a_setting_of_no_record_is_refused() -> None:
    with pytest.raises(TypeError, match="no setting kk"):
        DedupConfig.of(corpus="c.parquet", out="rep", kk=3)


def test_no_stage_takes_the_whole_configuration() -> None:
    """The stages read the record of their concern; only nlsim.dedup.run knows the whole configuration
    (and which kind of run it is)."""
    public = [
        f
        for name, f in inspect.getmembers(stages, inspect.isfunction)
        if f.__module__ == stages.__name__ and not name.startswith("_")
    ]
    assert len(public) > 15
    whole = [f.__name__ for f in public if DedupConfig in typing.get_type_hints(f).values()]
    # the few that need two concerns at once (the window's identity: model and text fields)
    assert set(whole) <= {"open_batch_window", "open_daily_window", "commit", "report"}


@pytest.mark.parametrize("option", ["corpus", "quarantine"])
def test_a_placeholder_other_than_date_in_a_dated_path_is_refused_by_name(option: str) -> None:
    """``--quarantine 'bad/{day}.csv'`` (a misspelt ``{date}``) was taken as a file literally named
    ``{day}.csv``: each day's bad rows went over the last day's, with nothing said. It is now refused
    before any work, naming the option and the placeholder."""
    from nlsim.errors import ConfigError

    given = {"corpus": "in/news.csv", "quarantine": "bad/rows.csv", option: f"{option}/{{day}}.csv"}
    with pytest.raises(
        ConfigError, match=rf"--{option} '{option}/{{day}}.csv': only {{date}} may be filled in"
    ):
        DedupConfig.of(out="rep", state="st", threshold=0.9, **given)


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ({"k": 10**9}, "--k must be at most 10,000 (neighbours searched per item), got 1000000000"),
        ({"nlist": 10**9}, "--nlist must be at most 262,144 (FAISS's IVF lists for up to a billion vectors)"),
        ({"nprobe": 10**9}, "--nprobe must be at most 262,144"),
    ],
)
def test_a_search_setting_past_what_a_search_can_hold_is_refused_naming_its_range(
    given: dict[str, int], refusal: str
) -> None:
    """``--k 10**9`` searched every item against every other and held all their hits (25,000 short titles:
    still searching after 7 minutes and 5.5 GB, where --k 10 searched in 20 s within 0.9 GB); ``--nlist
    10**9`` trained one IVF list a vector (a million items: k-means with a million centroids). They are
    refused by name, with the most each may be, before any work; the largest values allowed still build."""
    from nlsim.dedup.settings import MAX_K, MAX_NLIST
    from nlsim.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(refusal)):
        DedupConfig.of(corpus="c.csv", out="rep", **given)
    most = DedupConfig.of(corpus="c.csv", out="rep", k=MAX_K, nlist=MAX_NLIST, nprobe=MAX_NLIST).search
    assert (most.k, most.nlist, most.nprobe) == (10_000, 262_144, 262_144)


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("in/{date}/{day}.csv", "not {day}"),
        ("in/{date}-{DATE}.csv", "not {DATE}"),
        ("in/{date.csv", "a brace that opens or closes nothing"),
        ("in/{date}}.csv", "a brace that opens or closes nothing"),
        ("in/{date}{.csv", "a brace that opens or closes nothing"),
        ("in/{date[0]}.csv", "not {date[0]}"),
        ("in/{date!r}.csv", "not {date!r}"),
        ("in/{date}-{}.csv", "not {}"),
    ],
)
@pytest.mark.parametrize("option", ["corpus", "quarantine"])
@pytest.mark.parametrize("flow", ["daily", "weekly"])
def test_a_dated_path_with_anything_but_date_filled_in_is_refused_before_any_work(
    path: str, shown: str, option: str, flow: str
) -> None:
    """A path with ``{date}`` and another placeholder or a stray brace (``in/{date}/{day}.csv``) passed the
    check (made only for a path without ``{date}``) and was refused once the run had started: the daily
    flow's run was created, failed and alerted; ``{date[0]}`` ended in a TypeError traceback, ``{date!r}``
    read ``datetime.date(2026, 12, 5).csv``. The configuration of either flow (the daily dedup, the weekly
    chain) now refuses it, by option and placeholder, as it refuses ``{day}`` alone."""
    from nlsim.chain.config import PipelineConfig
    from nlsim.errors import ConfigError

    given = {"corpus": "in/news.csv", "quarantine": "bad/rows.csv", option: path}
    with pytest.raises(ConfigError, match=rf"^--{option} {re.escape(repr(path))}: .*{re.escape(shown)}"):
        if flow == "daily":
            DedupConfig.of(out="rep", state="st", threshold=0.9, **given)
        else:
            PipelineConfig.of(**given)


@pytest.mark.parametrize("spec", [">20", "x", "%%", "day"])
@pytest.mark.parametrize("option", ["corpus", "quarantine"])
def test_a_date_format_that_shows_no_date_is_refused_before_any_work(spec: str, option: str) -> None:
    """``in/{date:>20}.csv`` passed the check (only the name and conversion were looked at) and was read as
    ``in/>20.csv`` every day: a format that shows nothing of the date made one file of every day's, with
    nothing said. It is now refused by option and placeholder; a format that shows the date
    (``{date:%Y%m%d}``) is filled in as before."""
    from nlsim.errors import ConfigError

    path = f"in/{{date:{spec}}}.csv"
    given = {"corpus": "in/news.csv", "quarantine": "bad/rows.csv", option: path}
    with pytest.raises(
        ConfigError, match=rf"^--{option} {re.escape(repr(path))}: .*shows nothing of the date"
    ):
        DedupConfig.of(out="rep", state="st", threshold=0.9, **given)
    ok = DedupConfig.of(
        out="rep", state="st", threshold=0.9, date="2026-11-22", **{**given, option: "in/{date:%Y%m%d}.csv"}
    )
    assert (ok.input.corpus_path if option == "corpus" else ok.input.quarantine_path) == "in/20261122.csv"


@pytest.mark.parametrize("option", ["corpus", "quarantine"])
def test_an_escaped_date_in_a_path_is_no_placeholder(option: str) -> None:
    """``{{date}}`` is a ``{date}`` of the file's name (str.format's escaped braces), not the run's date;
    a path holding it counted as dated all the same, so ``--date`` was taken where it fills in nothing (and
    a daily flow and its schedule's zone were held to a date the path never takes). It is no placeholder
    now: ``--date`` there is refused as on any path without one, and the path names the same file."""
    from nlsim.errors import ConfigError

    path = f"{option}/{{{{date}}}}.csv"
    given = {"corpus": "in/news.csv", option: path}
    with pytest.raises(ConfigError, match="does nothing here"):
        DedupConfig.of(out="rep", date="2026-11-22", **given)
    from nlsim.dedup.settings import InputSettings, has_date

    s = DedupConfig.of(out="rep", **given)
    assert not s.input.dated
    named = s.input.corpus_path if option == "corpus" else s.input.quarantine_path
    assert named == f"{option}/{{date}}.csv"
    assert InputSettings(corpus="in/{{date}}-{date}.csv").dated
    assert [has_date(p) for p in ("in/{date}.csv", "in/{{date}}.csv", "in/{{{date}}}.csv", None)] == [
        True,
        False,
        True,
        False,
    ]


def test_an_as_of_in_the_future_is_judged_on_the_runs_clock_as_the_run_reads_it() -> None:
    """``--as-of`` without an offset is read in ``--timezone``, but whether it lay more than a day after now
    was judged reading it in UTC: in Taipei, tomorrow's 20 hours from now was refused (28 hours, read so),
    and in Los Angeles 30 hours from now was taken (22 hours, read so), the state's clock set past the
    day of margin for good. Both are judged as the run reads them."""
    import pandas as pd

    from nlsim.errors import ConfigError

    def written(zone: str, hours: int) -> str:  # a time ``hours`` from now on ``zone``'s clock, no offset
        return (pd.Timestamp.now(tz=zone) + pd.Timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M")

    base = {k: v for k, v in BASE.items() if k != "date"} | {"corpus": "in/day.parquet"}
    config = DedupConfig.of(**base, timezone="Asia/Taipei", as_of=written("Asia/Taipei", 20))
    assert config.state.as_of is not None
    with pytest.raises(ConfigError, match="--as-of .* is more than 1 day after now"):
        DedupConfig.of(**base, timezone="America/Los_Angeles", as_of=written("America/Los_Angeles", 30))


def _clique(size: int, score: float) -> list[Link]:
    return [Link(f"i{a}", f"i{b}", score) for a in range(size) for b in range(a + 1, size)]


def test_a_story_cluster_of_five_needs_links_two_hundredths_over_the_threshold_by_default() -> None:
    """At a story threshold of 0.9 the default rule keeps a clique of five whose links score 0.925 (0.02
    over the threshold is 0.92) and parts one at 0.91; four items at the threshold itself stay one."""
    rule = DedupConfig.of(corpus="news.parquet", out="out").clustering.story_rule(0.9)
    five = [f"i{j}" for j in range(5)]
    assert rule.clusters(_clique(5, 0.925)) == [five]
    assert max(len(g) for g in rule.clusters(_clique(5, 0.91))) < 5
    assert rule.clusters(_clique(4, 0.9)) == [five[:4]]


def test_a_large_cluster_of_0_asks_nothing_more_and_a_margin_past_1_is_refused() -> None:
    rule = DedupConfig.of(corpus="news.parquet", out="out", large_cluster=0).clustering.story_rule(0.9)
    assert rule.clusters(_clique(5, 0.91)) == [[f"i{j}" for j in range(5)]]
    with pytest.raises(ConfigError, match="--large-cluster-margin"):
        DedupConfig.of(corpus="news.parquet", out="out", large_cluster_margin=1.5)


@pytest.mark.parametrize(
    ("record", "given", "flag"),
    [
        ("search", {"k": 0}, "--k"),
        ("search", {"nlist": 0}, "--nlist"),
        ("search", {"nprobe": 0}, "--nprobe"),
        ("search", {"window_hours": 0.0}, "--window-hours"),
        ("clustering", {"support": 0.0}, "--cluster-support"),
        ("clustering", {"topic_support": 0.0}, "--topic-support"),
        ("clustering", {"large_share": 0.0}, "--large-cluster-share"),
        ("clustering", {"large": 2}, "--large-cluster"),
        ("clustering", {"large_margin": -1.01}, "--large-cluster-margin"),
    ],
)
def test_a_setting_just_past_its_range_is_refused_by_name(
    record: str, given: dict[str, float], flag: str
) -> None:
    """No neighbours, no IVF list, a window of no hours, a share of nothing and a large cluster of two are
    refused by name before any work."""
    from nlsim.dedup.settings import ClusteringSettings, SearchSettings

    cls = {"search": SearchSettings, "clustering": ClusteringSettings}[record]
    with pytest.raises(ConfigError, match=re.escape(flag)):
        cls(**given)


def test_the_ends_of_each_settings_range_are_taken() -> None:
    """The smallest and largest values each range names are taken as given: one neighbour, one IVF list, a
    window of 100 years, a share of 1, a large cluster of three, a margin of -1 or 1, 100 years kept,
    no near misses."""
    from nlsim.dedup.settings import (
        MAX_RETENTION_DAYS,
        MAX_WINDOW_HOURS,
        ClusteringSettings,
        ReportSettings,
        SearchSettings,
        StateSettings,
    )

    search = SearchSettings(k=1, nlist=1, nprobe=1, window_hours=MAX_WINDOW_HOURS)
    assert (search.k, search.nlist, search.nprobe, search.window_hours) == (1, 1, 1, MAX_WINDOW_HOURS)
    shares = ClusteringSettings(support=1.0, topic_support=1.0, large_share=1.0, large=3, large_margin=-1.0)
    assert (shares.support, shares.topic_support, shares.large_share, shares.large) == (1.0, 1.0, 1.0, 3)
    assert ClusteringSettings(large_margin=1.0).large_margin == 1.0
    kept = StateSettings(folder="st", retention_days=MAX_RETENTION_DAYS)
    assert kept.retention_days == MAX_RETENTION_DAYS
    assert ReportSettings(out="rep", near_misses=0).near_misses == 0
    with pytest.raises(ConfigError, match="--near-misses must be >= 0"):
        ReportSettings(out="rep", near_misses=-1)


def _settings_clock_at(monkeypatch: pytest.MonkeyPatch, when: object) -> None:
    """nlsim.dedup.settings reads the time ``when`` (an aware datetime) as now, for one test."""
    import datetime as real
    import types

    from nlsim.dedup import settings

    class Clock(real.datetime):
        @classmethod
        def now(cls, tz: real.tzinfo | None = None) -> real.datetime:  # type: ignore[override]
            assert isinstance(when, real.datetime)
            return when.astimezone(tz)

    fake = types.SimpleNamespace(**{n: getattr(real, n) for n in dir(real) if not n.startswith("_")})
    fake.datetime = Clock
    monkeypatch.setattr(settings, "dt", fake)


def test_a_daily_runs_day_may_be_tomorrow_and_the_first_year_a_clock_holds_but_no_later_or_earlier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``check_day`` takes tomorrow (a day of margin for a deployment ahead of UTC) and the first year a
    clock holds; the day after tomorrow and the year before are refused."""
    import datetime as dt

    from nlsim.dedup.settings import FUTURE_TOLERANCE_DAYS, check_day
    from nlsim.io.times import TIME_RANGE

    _settings_clock_at(monkeypatch, dt.datetime(2026, 11, 21, 23, 59, 59, tzinfo=dt.UTC))
    last = dt.date(2026, 11, 21) + dt.timedelta(days=FUTURE_TOLERANCE_DAYS)
    assert check_day(last.isoformat(), "UTC") == last
    with pytest.raises(ConfigError, match="day after today"):
        check_day((last + dt.timedelta(days=1)).isoformat(), "UTC")
    first = dt.date(TIME_RANGE[0], 1, 1)
    assert check_day(first.isoformat()) == first
    with pytest.raises(ConfigError, match="clock holds years"):
        check_day(dt.date(TIME_RANGE[0] - 1, 12, 31).isoformat())


def test_a_run_without_a_date_takes_today_on_its_time_zones_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 20:00 UTC on 21 November it is already 22 November in Taipei: a run there without --date is the
    22nd's, and one in UTC the 21st's."""
    import datetime as real

    from nlsim.dedup.settings import InputSettings

    _settings_clock_at(monkeypatch, real.datetime(2026, 11, 21, 20, 0, tzinfo=real.UTC))
    taipei = InputSettings(corpus="in/{date}.csv", timezone="Asia/Taipei")
    assert taipei.run_date() == real.date(2026, 11, 22)
    assert taipei.corpus_path == "in/2026-11-22.csv"
    assert InputSettings(corpus="in/{date}.csv").run_date() == real.date(2026, 11, 21)


def test_a_large_clusters_share_alone_is_named_in_the_run_record() -> None:
    """A large cluster held by a share and no margin is named so: the record does not say it needs
    nothing more."""
    from nlsim.dedup.settings import ClusteringSettings

    rule = ClusteringSettings(large_share=0.5, large_margin=None)
    assert rule.describe() == "support 0.4; 5+ items need share 0.5"
    assert ClusteringSettings(large_margin=None).describe() == "support 0.4"


def test_a_path_of_the_dates_year_alone_is_taken() -> None:
    """``{date:%Y}`` tells two years' days apart (a folder a year): it is a dated path, not one that shows
    nothing of the date."""
    from nlsim.dedup.settings import InputSettings, check_placeholders

    check_placeholders("archive/{date:%Y}/news.csv", "--corpus")
    source = InputSettings(corpus="archive/{date:%Y}/{date:%m%d}.csv", date="2026-11-22")
    assert source.corpus_path == "archive/2026/1122.csv"


def test_accepting_a_model_drop_without_a_state_is_refused() -> None:
    """--accept-model-drop compares with the state's last run: without --state it is refused by name."""
    with pytest.raises(ConfigError, match="--accept-model-drop works on a daily state"):
        StateSettings(accept_model_drop=True)


def test_topic_groups_join_at_the_topic_share_not_the_story_share() -> None:
    """Topic groups use --topic-support: with stories at a share of 0.9 and topics at 0.2, an item linked to
    one of a pair's two items joins their topic."""
    from nlsim.dedup.settings import ClusteringSettings

    links = [Link("a", "b", 0.9), Link("b", "c", 0.9)]
    rules = ClusteringSettings(support=0.9, topic_support=0.2)
    assert rules.topic_rule_named().clusters(links) == [["a", "b", "c"]]
    assert rules.story_rule(0.5).clusters(links) != [["a", "b", "c"]]


def test_a_report_keeps_200_near_misses_by_default() -> None:
    """The help and the docs name 200 near misses kept by default."""
    from nlsim.dedup.settings import ReportSettings

    assert ReportSettings(out="rep").near_misses == 200
