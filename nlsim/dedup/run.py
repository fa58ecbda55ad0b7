"""The near-duplicate run: the one place that knows the order of the stages.

A run is one of two compositions of the stages of :mod:`nlsim.dedup.stages`: :func:`run_batch` (every
item of the corpus embedded, searched and reported) and :func:`run_daily` (with a state folder: today's
items against the window the state keeps, a commit of its next generation, the report in
``OUT/runs/<run id>/``). :func:`run_dedup` picks one from the configuration, once; no stage asks which
kind of run it is in. Each stage reads the settings of its concern (:mod:`nlsim.dedup.settings`).

Each stage goes through ``call(name, function, *args)``: the command line calls the function directly;
the Prefect flow passes a ``call`` that runs each stage as a task (retries, timeouts, artifacts); the
Dask flow passes one that also shards the embedding and the neighbour search over its workers. Whatever
the ``call``, the stages, their order and their results are the same. :data:`STAGES` describes each stage
(what it does, whether it is I/O to retry, whether it is long enough to need a timeout).

Before any stage runs, every output path is checked against every input path and against folders nlsim
did not write (:func:`nlsim.dedup.paths.check_run_paths`, :mod:`nlsim.io.ownership`): nothing of the
user's is overwritten.

Example:
    >>> [s.name for s in STAGES.values()][:4]
    ['load', 'model', 'window', 'convert']
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from nlsim.dedup import stages
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.editors import EditorsInput
from nlsim.dedup.model_drop import model_drop, refusal
from nlsim.dedup.paths import check_run_paths, held_paths
from nlsim.dedup.settings import StateSettings
from nlsim.dedup.state import carried_editors, move_aside, remove_unfinished
from nlsim.dedup.window import Window, read_none
from nlsim.errors import ConfigError
from nlsim.evaluation.judge import Judgement, nothing_judged
from nlsim.io.atomic import atomic_write_text
from nlsim.io.corpus import Corpus, write_quarantine
from nlsim.io.lock import RunLock
from nlsim.io.report_folder import check_report_replaceable
from nlsim.models.choice import ModelChoice, load_model, with_inference
from nlsim.models.settings import DEFAULT_MODEL
from nlsim.orchestration import Call, StageInfo, declare, direct
from nlsim.progress import counted, one_run, warn
from nlsim.report import near_misses
from nlsim.report.files import daily_report_dir
from nlsim.report.record import (
    JOINED,
    ClusterChange,
    ClusterChanges,
    EditorsRecord,
    ModelInfo,
    ModelSwitch,
    RerankRecord,
    RunLog,
    RunRecord,
    StoryRule,
)
from nlsim.rerank.second_reading import Unread

__all__ = [
    "DEFAULT_MODEL",
    "STAGES",
    "Call",
    "DedupConfig",
    "DedupResult",
    "Search",
    "check_run_paths",
    "direct",
    "run_batch",
    "run_daily",
    "run_dedup",
    "run_record",
]

STAGES: dict[str, StageInfo] = {
    s.name: s
    for s in (
        StageInfo("load", "read and validate the corpus", io=True),
        StageInfo("model", "load the encoder, its reranker and the threshold", io=True),
        StageInfo("window", "open the state; decide which items to embed and search", io=True),
        StageInfo("convert", "OpenCC script conversion of the texts to embed"),
        StageInfo("copies", "group the exact copies (texts the same once normalised)"),
        StageInfo("embed", "embed the texts", expensive=True),
        StageInfo("index", "build the FAISS index of the window"),
        StageInfo("neighbors", "each searched item's nearest neighbours above the threshold", expensive=True),
        StageInfo("rerank", "rescore the candidate pairs with the cross-encoder", expensive=True),
        StageInfo("cluster", "cluster ids (one rule for batch and daily runs) and the report tables"),
        StageInfo("near-misses", "the best candidate pairs below the threshold, for editors to review"),
        StageInfo("judge", "the report's clusters against the editors' scored pairs (--judge-pairs)"),
        StageInfo("commit", "write the state's new generation", io=True),
        StageInfo("report", "write the report files", io=True),
    )
}
declare(*STAGES.values())


@dataclass
class DedupResult:
    """What a run produced: where the report is, its tables, and the run record (``stats``): the one its
    ``run.json`` holds, counted once (:func:`run_record`), with the time of the report stage that wrote it
    (a replayed run: the stored record, with this run's messages)."""

    out: Path
    report_dir: Path
    stats: RunRecord
    pairs: pd.DataFrame
    clusters: pd.DataFrame
    run_id: str = ""
    replayed: bool = False
    window_clusters: pd.DataFrame | None = None
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def summary(self) -> dict[str, Any]:
        """The run record (what ``run.json`` holds, without the file hashes)."""
        return self.stats.to_dict()

    @property
    def messages(self) -> list[str]:
        return self.stats.messages


@dataclass(frozen=True)
class Search:
    """What the search stages made (convert, embed, index, neighbours, rerank): the window with its index,
    the pairs at or above the threshold and the candidates below it, and what the record says of them."""

    window: Window
    pairs: pd.DataFrame
    below: pd.DataFrame
    candidates: int
    embedding_cache_hit: bool | None
    model_info: ModelInfo
    rerank: RerankRecord | None
    unread: Unread | None = None
    """The candidates read in one order only (:mod:`nlsim.rerank.second_reading`)."""


def run_dedup(config: DedupConfig, *, encoder: Any = None, call: Call = direct) -> DedupResult:
    """Run every stage in order and write the report (see the module docstring): :func:`run_batch`, or
    :func:`run_daily` when ``config.state.folder`` names a state folder.

    ``encoder``: an already loaded encoder (tests, flows); default: the one ``config.model`` names.
    """
    if config.input.date is None and config.input.dated:
        config = config.with_(date=config.input.run_date().isoformat())  # one date, even past midnight
    # one batch run at a time into OUT; no trace of a run refused before any work; a warning said once
    with held_paths(config), one_run():
        if not config.daily:
            return run_batch(config, encoder=encoder, call=call)
        return run_daily(config, config.state, encoder=encoder, call=call)


class _Steps:
    """``steps(name, function, *args)``: one stage through the run's ``call``, timed in the run's log."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.log = RunLog()
        self.started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")

    def __call__(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        with self.log.stage(name):
            return self.call(name, fn, *args)


def run_batch(settings: DedupConfig, *, encoder: Any = None, call: Call = direct) -> DedupResult:
    """A batch run: every item of the corpus embedded and searched, the report written into ``OUT`` (which
    :func:`run_dedup` holds for it from the start: :func:`~nlsim.report.files.hold_report_folder`)."""
    step = _Steps(call)
    corpus = step("load", stages.load, settings.input)
    step.log.messages.extend([*corpus.warnings, *corpus.notes])  # said by the load stage; kept for the record
    model = step("model", load_model, settings.model, encoder)
    window = step("window", stages.open_batch_window, settings, corpus, model)
    done = _analyse(
        step,
        settings,
        model,
        window,
        stages.EmbedPlan.batch(settings),
        stages.cluster,
        stages.JudgeScope.batch(settings),
    )
    window, clustering, missed = done.search.window, done.clustering, done.missed
    reported = step("report", stages.report, settings, window, clustering, model, done.record, missed)
    write_quarantine(corpus)  # once the run has succeeded: a failed run leaves the earlier file as it was
    # the record run.json holds, with the whole report stage's time (run.json holds it until written)
    return _result(settings, reported.folder, reported.record.timed(step.log), clustering=clustering)


def run_daily(
    settings: DedupConfig, daily: StateSettings, *, encoder: Any = None, call: Call = direct
) -> DedupResult:
    """A daily run: today's new items matched against the window the state keeps, cluster ids kept
    stable, the state's next generation committed, the report written into ``OUT/runs/<run id>/``."""
    step = _Steps(call)
    # a rebuild keeps the moved state's verdicts unless the run names the pair file, whose store then says
    # which verdicts hold (removing a row from the store and rebuilding takes a verdict back)
    editors = not settings.clustering.annotated_pairs
    with _state_lock(daily, step.log, settings.input.corpus_path, keep_editors=editors) as carried:
        corpus = step("load", stages.load, settings.input, daily)
        step.log.messages.extend([*corpus.warnings, *corpus.notes])
        model = step("model", load_model, settings.model, encoder)
        window = step("window", stages.open_daily_window, settings, daily, corpus, model, step.log)
        _check_model(step.log, daily, window, model)
        _say_day(step.log, settings, window, corpus)
        _say_zone(step.log, settings, window)
        kept_state = window.state
        if kept_state is not None and kept_state.verdicts is not None and kept_state.scored is None:
            if not settings.clustering.annotated_pairs:
                step.log.say(
                    "this state keeps the editors' verdicts but not yet the pairs they scored (it was made "
                    "before they were kept): the review queue can offer scored pairs until a run names the "
                    "pair file (--annotated-pairs) once"
                )
        if window.state is not None and (carried.verdicts is not None or carried.scored is not None):
            window = replace(
                window, state=replace(window.state, verdicts=carried.verdicts, scored=carried.scored)
            )
        replayed = _replay_committed(settings, daily, window, step.log)
        if replayed is not None:
            write_quarantine(corpus)  # this input's, as a run killed after its commit may not have written it
            return replayed
        done = _analyse(
            step,
            settings,
            model,
            window,
            stages.EmbedPlan.daily(settings),
            stages.cluster_daily,
            stages.JudgeScope.daily(settings, daily, window.run_id),
        )
        window, clustering, missed = done.search.window, done.clustering, done.missed
        again = _last_run_again(settings, window, clustering, corpus, step.log, done.record)
        if again is not None:
            write_quarantine(corpus)
            return again
        # its report folder is written whole after the commit: what it would replace is checked first
        check_report_replaceable(daily_report_dir(settings.report.out, window.run_id), ["."])
        step("commit", stages.commit, settings, daily, window, clustering, model, done.record, missed)
        record = done.record.timed(step.log)
        reported = step("report", stages.report_daily, settings.report, window, clustering, record, missed)
        folder, record = (
            reported.folder,
            reported.record.timed(step.log),
        )  # run.json's, with the report's time
        # the complete figures (commit and report timings included) beside the state
        atomic_write_text(
            Path(daily.folder) / "runs" / f"{window.run_id}.json",
            json.dumps(record.to_dict(), indent=1, default=str),
        )
        write_quarantine(corpus)  # once the run has succeeded: a failed run leaves the earlier file as it was
    return _result(settings, folder, record, clustering=clustering)


def _check_model(log: RunLog, daily: StateSettings, window: Window, model: stages.ModelChoice) -> None:
    """Refuse a model whose recorded same-story F1 is much lower than that of the model of the state's last
    run (:mod:`nlsim.dedup.model_drop`), before anything is embedded; with ``--accept-model-drop`` say so
    and go on."""
    last = window.state.last_run if window.state is not None else None
    if not last:
        return
    drop = model_drop(RunRecord.from_dict(last).info, model.info)
    if drop is None:
        return
    if not daily.accept_model_drop:
        raise ConfigError(refusal(drop))
    log.say(f"{drop.describe()}: going on, as --accept-model-drop asks")


def all_seen(window: Window) -> bool:
    """Every item of the day was already in the window with the same text: a daily run with nothing new."""
    counts = window.counts
    return bool(counts.items_in) and counts.skipped == counts.items_in and not window.held


def _say_day(log: RunLog, settings: DedupConfig, window: Window, corpus: Corpus) -> None:
    """What a daily run says of a day run out of order, or with nothing new."""
    if window.older_day and window.state is not None and window.day_clock is not None:
        clock = window.day_clock
        path, day = settings.input.corpus_path, settings.input.date
        times = corpus.frame["published_at"]
        if not window.counts.items_in:
            why = f"{path} has no items, and its day ({day}) ended by this state's clock ({clock})"
        elif times.isna().any():  # an undated item is of the run's day
            dated = "" if times.isna().all() else " (or are dated before it)"
            why = f"the items of {path} have no date{dated}, and its day ({day}) ended by this state's clock"
            why += f" ({clock})"
        else:
            why = f"the items of {path} are all dated before this state's clock ({clock})"
        log.say(
            f"{why}: a day older than the runs before it, run after them; its report goes to "
            f"runs/{window.run_id}/ and {settings.report.out}/latest keeps the newer report"
        )
    if window.held:
        shown = ", ".join(window.held[:10]) + (
            f" and {len(window.held) - 10} more" if len(window.held) > 10 else ""
        )
        log.say(
            f"{len(window.held)} item(s) of {settings.input.corpus_path} differ from the window's copies, "
            f"which a later day's run read ({shown}): kept as the window holds them (a day run out of order "
            "does not undo a later correction; send a correction with the current day's file)"
        )
    if all_seen(window):
        log.say(all_seen_line(window, settings.input.corpus_path))


def _say_zone(log: RunLog, settings: DedupConfig, window: Window) -> None:
    """Warn when a daily run's ``--timezone`` is not the one of the state's last run (a run by hand that
    left out the deployment's zone): its times without an offset are read, and its days and times shown,
    on another clock than the window's earlier runs read theirs, and the state's clock moves with them."""
    last = (window.state.last_run or {}) if window.state is not None else {}
    before, now = last.get("timezone"), settings.input.timezone
    if not before or before == now:
        return
    path = settings.input.corpus_path
    message = (
        f"--timezone {now} is not the time zone of this state's last run ({before}, run "
        f"{last.get('run_id')}): this run reads the times of {path} that have no offset, and shows its "
        f"report's days and times, in {now}, where the window's earlier runs read theirs in "
        f"{before}; if {before} is the newsroom's zone, run this day again with --timezone {before}"
    )
    log.messages.append(message)
    warn(message)


def all_seen_line(window: Window, path: str | Path) -> str:
    """What a daily run whose items were all already in the window says: nothing new to embed, unless the
    model changed (:attr:`Window.switch`), when the whole window is embedded again with the new model, or,
    the vectors being the same (another threshold), paired again."""
    n = window.counts.items_in or 0
    seen = (
        f"{'the' if n == 1 else 'all'} {counted(n, 'item', 'items')} of {path} "
        f"{'was' if n == 1 else 'were'} already in the window with the same text"
    )
    if window.switch is not None and window.switch.reembed:
        whole = counted(len(window.items), "item", "items")
        return f"{seen}: none is new, but the whole window ({whole}) is embedded again with the new model"
    if window.switch is not None:
        return f"{seen}: nothing new to embed; the window is paired again under the new settings"
    return f"{seen}: nothing new to embed"


@dataclass(frozen=True)
class _Analysis:
    """What a run found before it writes anything: the search, the clusters, the near misses, the record
    (timed up to here; the judgement in it)."""

    search: Search
    clustering: stages.Clustering
    missed: pd.DataFrame
    record: RunRecord


def _analyse(
    step: _Steps,
    settings: DedupConfig,
    model: ModelChoice,
    window: Window,
    plan: stages.EmbedPlan,
    cluster: Callable[..., stages.Clustering],
    scope: stages.JudgeScope,
) -> _Analysis:
    """The stages a batch run and a daily one share, from the search to the judge: ``plan`` says how to
    embed, ``cluster`` is :func:`~nlsim.dedup.stages.cluster` or its daily form, ``scope`` what is judged."""
    # read before the expensive stages: a bad file is refused first (a replayed run does not read them)
    scored = stages.judge_pairs(settings.report) if settings.report.judge_pairs else None
    if scored is not None:  # a batch run's pairs of another corpus: refused now, not after the search
        stages.check_judge_pairs(settings.report, scope, window.items, scored)
    editors = stages.editors(settings.clustering, window)
    search = _search(step, settings, model, window, plan, editors)
    clustering = step(
        "cluster", cluster, search.window, search.pairs, settings.clustering, editors, model.levels
    )
    missed = step(
        "near-misses",
        stages.near_misses,
        search.below,
        clustering,
        settings.report.near_misses,
        search.unread,
    )
    chosen = _editors_record(clustering, missed, editors)
    if chosen is not None:
        _say_editors(step.log, chosen)
    judged = None
    if scored is not None:
        judged = step("judge", stages.judge, settings.report, scope, clustering, scored)
        said = nothing_judged(judged)  # warned by the stage; kept for the record
        if said is not None:
            step.log.messages.append(said)
    record = run_record(settings, step.started, model, search, clustering, missed, judged, chosen)
    return _Analysis(search, clustering, missed, record.timed(step.log))


@dataclass(frozen=True)
class _Carried:
    """The editors' verdicts and scored pairs of a state ``--rebuild-state`` moved aside: the fresh state
    keeps them (they act as before, with or without ``--annotated-pairs``)."""

    verdicts: pd.DataFrame | None = None
    scored: pd.DataFrame | None = None


@contextlib.contextmanager
def _state_lock(
    daily: StateSettings, log: RunLog, corpus: str, *, keep_editors: bool = False
) -> Iterator[_Carried]:
    """Hold the state folder's lock for the run; with ``--rebuild-state``, first set the state aside (the
    editors' part of it carried over with ``keep_editors``), saying what the fresh one holds: ``corpus``
    alone."""
    carried = _Carried()
    with RunLock(daily.folder) as lock:
        if lock.message:
            log.say(lock.message)
        if daily.rebuild:
            moved = move_aside(daily.folder)
            if moved is not None:
                log.say(
                    f"moved the previous state to {moved}, kept there; building a fresh one from "
                    f"{corpus} alone: earlier days' items are not in it (run them again, day by day, to get "
                    "the window back), and a story begun on an earlier day may get another cluster id"
                )
                if keep_editors:
                    verdicts, scored, said = carried_editors(moved)
                    carried = _Carried(verdicts, scored)
                    if said:
                        log.say(said)
        removed = remove_unfinished(daily.folder)
        if removed:
            log.say(
                f"removed {len(removed)} unfinished generation folder(s) left by a killed run: "
                + ", ".join(removed)
            )
        yield carried


def _editors_record(
    clustering: stages.Clustering, missed: pd.DataFrame, editors: EditorsInput
) -> EditorsRecord | None:
    """What the editors' verdicts did (``None``: the run had none and no scored pair), with the scored
    pairs whose two items the report shows: the page's review queue skips them."""
    if clustering.editors is None:
        return None
    shown = stages.report_frame(clustering, missed)["id"].astype(str)
    return replace(
        clustering.editors,
        scored_ids=editors.scored_ids(shown),
        training_ids=editors.scored_ids(shown, editors.training),
        held_out_ids=editors.scored_ids(shown, editors.held_out),
    )


def _say_editors(log: RunLog, e: EditorsRecord) -> None:
    if not e.verdicts:
        return
    log.say(
        f"editors' verdicts ({e.source}): {e.verdicts} held, {e.acting} on training pairs; in this window "
        f"{e.must_link} same story (joined {counted(e.joined, 'pair', 'pairs')} no link joined), "
        f"{e.cannot_link} not the same story ({e.links_cut} link(s) cut)"
        + (f"; {e.refused} same-story verdict(s) overruled" if e.refused else "")
        + (
            f"; {e.annotators_overruled} training pair(s) take an editor's newer decision over the pair "
            "file's score"
            if e.annotators_overruled
            else ""
        )
        + _said_changes(e.cluster_changes)
    )


def _said_changes(changes: list[ClusterChange]) -> str:
    """The verdicts that changed the clusters, joined and split apart, and the clusters that hold their
    items now (none when a split left both items alone: the verdict still changed the clusters)."""
    if not changes:
        return ""
    joined = sum(change.change == JOINED for change in changes)
    holding = len({c for change in changes for c in change.clusters})
    return (
        f"; {counted(len(changes), 'verdict', 'verdicts')} changed the clusters ({joined} joined, "
        f"{len(changes) - joined} split apart), {counted(holding, 'cluster', 'clusters')} now holding "
        "their items"
    )


def run_record(
    settings: DedupConfig,
    started: str,
    model: ModelChoice,
    search: Search,
    clustering: stages.Clustering,
    missed: pd.DataFrame,
    judged: Judgement | None,
    editors: EditorsRecord | None = None,
) -> RunRecord:
    """The run record, built once from the stages' results (its timings and messages:
    :meth:`RunRecord.timed`)."""
    window = search.window
    update = clustering.update
    events = update.events["status"]
    clusters = clustering.report_clusters
    current = clusters[clusters["status"] != "dissolved"]  # a dissolved cluster is no cluster now
    counts = replace(  # the window's counts (items read, new, ...) and the run's: counted here only
        window.counts,
        candidates=search.candidates,
        kept=int(len(window.items)),
        pairs=int(len(clustering.report_pairs)),  # the pairs the report lists
        clusters=int(len(current)),
        clustered_items=int(current["size"].sum()) if len(current) else 0,
        clusters_new=int((events == "new").sum()),
        clusters_grown=int((events == "grown").sum()),
        clusters_merged=int((events == "merged").sum()),
        clusters_absorbed=len(update.merged_into),
        clusters_dissolved=len(update.dissolved),
        clusters_in_window=int(len(clustering.window_clusters)),
        near_misses=int(len(missed)),
        exact_copies=0 if window.copies is None else window.copies.count,
        topics=int(len(clustering.report_topics)),
        topic_items=int(clustering.report_topics["size"].sum()) if len(clustering.report_topics) else 0,
    )
    extra = ClusterChanges(
        merged_into=dict(sorted(update.merged_into.items())), dissolved=dict(sorted(update.dissolved.items()))
    )
    return RunRecord(
        run_id=window.run_id,
        mode="incremental" if settings.daily else "batch",
        corpus=settings.input.corpus_named,  # `nlsim judge` finds it from any folder
        counts=counts,
        model=model.encoder.model_id,
        model_fingerprint=model.encoder.fingerprint,
        model_info=search.model_info,
        threshold=round(float(model.threshold.value), 6),
        threshold_source=model.threshold.source,
        conversion=settings.model.convert,
        text_fields=",".join(settings.input.text_fields),
        rerank=search.rerank,
        index=window.index.describe(),
        embedding_cache_hit=search.embedding_cache_hit,
        retention_days=settings.state.retention_days if settings.daily else None,
        window_hours=settings.search.window_hours,
        cluster_rule=settings.clustering.describe(),
        story_rule=StoryRule.of(settings.clustering.story_rule(model.levels.story), settings.clustering.cut),
        near_miss_limit=settings.report.near_misses,
        timezone=settings.input.timezone,
        as_of=None if window.as_of is None else window.as_of.isoformat(),
        input_key=window.input_key,
        all_seen=settings.daily and all_seen(window),
        older_day=window.older_day,
        newest_day=None if window.newest_day is None else window.newest_day.isoformat(),
        started_at=started,
        model_switch=_switch(window, search.model_info),
        extra=extra,
        judge=judged,
        editors=editors,
    )


def _switch(window: Window, now: ModelInfo) -> ModelSwitch | None:
    """The window's model switch with the model-store versions before (the state's last run's) and now."""
    if window.switch is None:
        return None
    last = window.state.last_run if window.state is not None else None
    return window.switch.with_versions(RunRecord.from_dict(last).info if last else None, now)


def _replay_committed(
    settings: DedupConfig, daily: StateSettings, window: Window, log: RunLog
) -> DedupResult | None:
    """A daily input already committed: its stored report written again (the result, else ``None``). The
    report of a previous run killed after its commit is written first."""
    state = window.state
    if state is None or not state.last_run:
        return None
    last = RunRecord.from_dict(state.last_run)
    if last.input_key == window.input_key:
        log.say(f"run {last.run_id} was already committed to {daily.folder}; writing its report again")
        return _replay(settings, window, last, log)
    # the last run was killed after its commit: its report first
    if last.run_id and not (daily_report_dir(settings.report.out, last.run_id) / "run.json").exists():
        stages.replay_report(settings.report, window, last)
        log.say(f"wrote the missing report of the previous run {last.run_id}")
    return None


def _replay(settings: DedupConfig, window: Window, last: RunRecord, log: RunLog) -> DedupResult:
    """The state's last run's stored report written again (``latest`` on it, unless of an older day): the
    result of a run that is that run again."""
    reported = stages.replay_report(settings.report, window, last)
    return _result(
        settings, reported.folder, replace(reported.record, messages=list(log.messages)), replayed=True
    )


def _last_run_again(
    settings: DedupConfig,
    window: Window,
    clustering: stages.Clustering,
    corpus: Corpus,
    log: RunLog,
    record: RunRecord,
) -> DedupResult | None:
    """The state's last run again under another input key (another nlsim hashed it otherwise, or a setting
    that changes the key changes nothing in the window): its stored report written again, nothing committed
    (the result, else ``None``).

    It is when every item of the day (but those too old for the window, as many as the last run found) was
    read by the state's last run (first seen or read again by it; or, that run having read no item itself,
    as when it paired the window again under another threshold, as many items as it read) and is in the
    window with the same text, neither this day nor the last run's is older than the runs before it, the
    model, the settings kept in the state and what its record shows of the run's settings (:func:`_shown`)
    are the same, no item expires, the run's clusters change in nothing (its report would list the clusters
    of the stored report, under the same statuses, members and representatives, and so would its window;
    its topic groups are the stored ones), the run searched the index the state keeps, and the editors'
    verdicts and scored pairs are those the state keeps. Any other run of the day is a new run, whose report
    lists the day's clusters again (:attr:`~nlsim.dedup.window.Window.carried`)."""
    state = window.state
    if state is None or not state.last_run or window.older_day or window.switch is not None:
        return None
    last, counts = RunRecord.from_dict(state.last_run), window.counts
    if last.older_day:
        return None  # a day older than the runs before it: this day, not older, is another
    if (
        window.held
        or counts.expired
        or not counts.skipped
        or counts.skipped + counts.too_old != counts.items_in
    ):
        return None  # an item is new, changed or expires
    if counts.too_old != last.counts.too_old:
        return None  # an item too old for the window that the last run added, or the other way round
    if _shown(record) != _shown(last):
        return None  # its record would show another clock, zone, rule, count or judgement
    verdicts, scored = stages.editors_tables(clustering)
    if _rows(verdicts) != _rows(state.verdicts) or _rows(scored) != _rows(state.scored):
        return None  # the editors' verdicts or scored pairs the state keeps change: a new run keeps them
    kept_index, index = state.index, window.index
    if kept_index is not None and (kept_index.kind, kept_index.params) != (index.kind, index.params):
        return None  # the run searched another index (--index, --nlist, --nprobe): a new run keeps it
    folder = state.report_dir()
    stored = None if folder is None else folder / "window.parquet"
    if stored is None or not stored.is_file():
        return None
    if _stories(pd.read_parquet(stored)) != _stories(clustering.window_clusters):
        return None  # its window's stories (their members, their representatives) are others
    if _listed(pd.read_parquet(folder / "clusters.parquet")) != _listed(clustering.report_clusters):
        return None  # its report would list other clusters, or under another status
    topics = folder / "topics.parquet"  # absent in a state committed before topic groups
    if _topics(pd.read_parquet(topics) if topics.is_file() else None) != _topics(clustering.report_topics):
        return None  # its topic groups are others
    kept = window.items.iloc[: window.n_base]
    day = kept["id"].astype(str).isin(set(corpus.frame["id"].astype(str))).to_numpy()
    runs = kept[["first_seen_run", "embedded_run"]].astype(str).to_numpy()
    read = (runs == last.run_id).any(axis=1)
    if not day.any() or not (read[day].all() or read_none(last, window.counts.items_in)):
        return None
    log.say(
        f"the items of {settings.input.corpus_path} were all read by run {last.run_id}, the state's last "
        "run, and this run changes nothing in its window (its input key differs: another nlsim version, or a "
        f"setting that changes nothing here): it is run {last.run_id} again; writing its report again, "
        "nothing committed"
    )
    return _replay(settings, window, last, log)


def _rows(frame: pd.DataFrame | None) -> set[tuple[str, ...]]:
    """A kept table's rows as text, in no order, its columns by name (``None``: no row)."""
    if frame is None or not len(frame):
        return set()
    named = frame.reindex(columns=sorted(frame.columns))
    return set(named.astype(str).itertuples(index=False, name=None))


def _shown(record: RunRecord) -> tuple[Any, ...]:
    """What a run record shows of the settings the report was made under and of the day's file: the clock,
    the time zone, the cluster rules, the items read and set aside, the near misses kept and the judgement
    (its figures and the scored pairs it read; not the report it names)."""
    judge = None
    if record.judge is not None:
        # the digest of the file is the input key's (a record of an older nlsim has none)
        left_out = ("report", "corpus", "pairs_sha256")
        judge = {k: v for k, v in record.judge.to_dict().items() if k not in left_out}
    counts = record.counts
    rules = (record.cluster_rule, record.story_rule)
    return (
        record.as_of,
        record.timezone,
        *rules,
        counts.items_in,
        counts.quarantined,
        counts.near_misses,
        judge,
    )


def _topics(topics: pd.DataFrame | None) -> set[tuple[str, tuple[str, ...]]]:
    """A report's topic groups (``None``: none): each one's id and members."""
    if topics is None or not len(topics):
        return set()
    return {
        (str(t), tuple(sorted(map(str, m))))
        for t, m in zip(topics["topic_id"], topics["member_ids"], strict=True)
    }


def _listed(clusters: pd.DataFrame) -> set[tuple[str, str, tuple[str, ...], str]]:
    """A report's clusters but the dissolved ones: each one's id, status, members and representative."""
    shown = clusters[clusters["status"].astype(str) != "dissolved"]
    return {
        (str(c), str(s), tuple(sorted(map(str, members))), str(r))
        for c, s, members, r in zip(
            shown["cluster_id"], shown["status"], shown["member_ids"], shown["representative"], strict=True
        )
    }


def _stories(window: pd.DataFrame) -> set[tuple[str, tuple[str, ...], str]]:
    """A window table's clusters: each one's id, members and representative."""
    return {
        (str(c), tuple(sorted(map(str, members))), str(r))
        for c, members, r in zip(
            window["cluster_id"], window["member_ids"], window["representative"], strict=True
        )
    }


def _search(
    step: _Steps,
    settings: DedupConfig,
    model: ModelChoice,
    window: Window,
    plan: stages.EmbedPlan,
    editors: EditorsInput,
) -> Search:
    """Convert, group the exact copies, embed (as ``plan`` says), index, search the neighbours and rerank
    them (:class:`Search`)."""
    texts = step("convert", stages.convert_texts, window, settings.model)
    fields = settings.input.text_fields
    window = step("copies", stages.copies, window, settings.model, settings.search, editors, fields)
    said = stages.copies_said(window)
    if said:
        step.log.say(said)
    emb, hit = step("embed", stages.embed, texts, model, plan)
    said = stages.long_texts(texts, window, model)
    if said:
        step.log.say(said)
    info = with_inference(model.info, model.encoder)
    window = step("index", stages.index, window, emb, settings.search, model, settings.model.threads)
    reranked = model.reranker is not None
    kept = settings.report.near_misses
    floor = near_misses.search_floor(model.floor, model.threshold.value, reranked, kept)
    pairs = step("neighbors", stages.neighbors, window, settings.search, floor, settings.report.progress)
    pairs, said = stages.readable(pairs, window, model, settings.model)  # within the search's time
    if said:
        step.log.say(said)
    candidates = int(len(pairs))
    rescored = 0
    unread = None
    if reranked:
        pairs, unread = step(
            "rerank", stages.rerank, pairs, window, model, settings.model, settings.report.progress
        )
        rescored = int(pairs["cross_encoder"].notna().sum()) if len(pairs) else 0
        rescored += len(unread) if unread is not None else 0
    pairs, below = stages.linked(pairs, model.levels)
    below = near_misses.within_reach(below, model.threshold.value, reranked)
    pairs = stages.with_copies(pairs, window)
    story = int((pairs["similarity"].to_numpy() >= model.threshold.value).sum())
    rerank = stages.rerank_record(model, candidates, story, rescored) if reranked else None
    return Search(window, pairs, below, candidates, hit, info, rerank, unread)


def _result(
    settings: DedupConfig,
    folder: Path,
    record: RunRecord,
    *,
    replayed: bool = False,
    clustering: stages.Clustering | None = None,
) -> DedupResult:
    if clustering is None:  # a replayed run: its stored report
        pairs = pd.read_parquet(folder / "pairs.parquet")
        clusters = pd.read_parquet(folder / "clusters.parquet")
        window_clusters = None
    else:
        pairs, clusters = clustering.report_pairs, clustering.report_clusters
        window_clusters = clustering.window_clusters
    names = [p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    return DedupResult(
        out=Path(settings.report.out),
        report_dir=folder,
        stats=record,
        pairs=pairs,
        clusters=clusters,
        run_id=record.run_id,
        replayed=replayed,
        window_clusters=window_clusters,
        files={n: folder / n for n in sorted(names)},
    )
