"""The near-duplicate run: the one place that knows the order of the stages.

:func:`run_dedup` runs the stages of :mod:`nlsim.dedup.stages` in order, for a batch run or, with a
state folder, an incremental (daily) one. Each stage goes through ``call(name, function, *args)``: the
command line calls the function directly; the Prefect flow passes a ``call`` that runs each stage as a
task (retries, timeouts, artifacts); the Dask flow passes one that also shards the embedding and the
neighbour search over its workers. Whatever the ``call``, the stages, their order and their results are
the same. :data:`STAGES` describes each stage (what it does, whether it is I/O to retry, whether it is
long enough to need a timeout).

Before any stage runs, every output path is checked against every input path and against folders nlsim
did not write (:func:`nlsim.dedup.paths.check_paths`, :mod:`nlsim.io.ownership`): nothing of the
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

from nlsim.dedup import near_misses, stages
from nlsim.dedup.config import DEFAULT_MODEL, DedupConfig
from nlsim.dedup.paths import check_paths
from nlsim.dedup.record import EditorsRecord, RunRecord
from nlsim.dedup.report import daily_report_dir
from nlsim.dedup.state import move_aside, remove_unfinished
from nlsim.dedup.window import Window
from nlsim.errors import ConfigError
from nlsim.io.atomic import atomic_write_text
from nlsim.io.lock import RunLock
from nlsim.orchestration import Call, StageInfo, declare, direct

__all__ = [
    "DEFAULT_MODEL",
    "STAGES",
    "Call",
    "DedupConfig",
    "DedupResult",
    "check_paths",
    "direct",
    "run_dedup",
]

STAGES: dict[str, StageInfo] = {
    s.name: s
    for s in (
        StageInfo("load", "read and validate the corpus", io=True),
        StageInfo("model", "load the encoder, its reranker and the threshold", io=True),
        StageInfo("window", "open the state; decide which items to embed and search", io=True),
        StageInfo("convert", "OpenCC script conversion of the texts to embed"),
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
    """What a run produced: where the report is, its tables, and the run record."""

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


@contextlib.contextmanager
def _state_lock(config: DedupConfig, record: RunRecord) -> Iterator[None]:
    if not config.incremental:
        yield
        return
    with RunLock(config.state) as lock:
        if lock.message:
            record.say(lock.message)
        if config.rebuild_state:
            moved = move_aside(config.state)
            if moved is not None:
                record.say(f"moved the previous state to {moved}; building a fresh one")
        removed = remove_unfinished(config.state)
        if removed:
            record.say(
                f"removed {len(removed)} unfinished generation folder(s) left by a killed run: "
                + ", ".join(removed)
            )
        yield


def _fill_model(record: RunRecord, config: DedupConfig, model: stages.ModelChoice) -> None:
    record.model, record.model_fingerprint = model.encoder.model_id, model.encoder.fingerprint
    record.model_info = model.info
    record.threshold, record.threshold_source = round(float(model.threshold.value), 6), model.threshold.source
    record.conversion, record.text_fields = config.convert, ",".join(config.text_fields)


Step = Callable[..., Any]
"""``step(name, function, *args)``: one stage through the run's ``call``, timed in the run record."""


def run_dedup(config: DedupConfig, *, encoder: Any = None, call: Call = direct) -> DedupResult:
    """Run every stage in order and write the report (see the module docstring).

    ``encoder``: an already loaded encoder (tests, flows); default: the one ``config.model`` names.
    """
    if config.retention_days is not None and config.retention_days < 0:
        raise ConfigError(f"--retention-days must be >= 0, got {config.retention_days}")
    if config.date is None and "{date" in config.corpus:  # one date for the whole run, even past midnight
        config = config.with_(date=config.run_date().isoformat())
    check_paths(config)
    record = RunRecord(
        mode="incremental" if config.incremental else "batch",
        corpus=config.corpus_named(),  # `nlsim judge` finds it from any folder
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        retention_days=config.retention_days if config.incremental else None,
        window_hours=config.window_hours,
        timezone=config.timezone,
    )

    def step(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        with record.stage(name):
            return call(name, fn, *args)

    with _state_lock(config, record):
        corpus = step("load", stages.load, config)
        record.messages.extend(corpus.warnings)
        model = step("model", stages.load_model, config, encoder)
        _fill_model(record, config, model)
        window = step("window", stages.open_window, config, corpus, model, record)
        _fill_window(record, window)
        replayed = _replay_committed(config, window, record)
        if replayed is not None:
            return replayed
        # read before the expensive stages: a bad file is refused first (a replay does not read it)
        scored = stages.judge_pairs(config) if config.judge_pairs else None
        editors = stages.editors(config, window)
        window, pairs, below = _search(step, record, config, model, window)
        clustering = step("cluster", stages.cluster, window, pairs, config, editors)
        missed = step("near-misses", stages.near_misses, below, clustering, config)
        _fill_clusters(record, window, pairs, clustering, missed)
        if clustering.editors is not None:  # the page's review queue skips the pairs already scored
            shown = stages.report_frame(clustering, missed)["id"].astype(str)
            record.editors = replace(clustering.editors, scored_ids=editors.scored_ids(shown))
            _say_editors(record, record.editors)
        if scored is not None:  # before the commit: the state's record of the run holds its judgement
            record.judge = step("judge", stages.judge, config, window, clustering, scored)
        if config.incremental:
            step("commit", stages.commit, config, window, clustering, model, record, missed)
        folder = step("report", stages.report, config, window, clustering, model, record, missed)
        if config.incremental:  # the complete figures (commit and report timings included) beside the state
            atomic_write_text(
                Path(config.state) / "runs" / f"{window.run_id}.json",
                json.dumps(record.to_dict(), indent=1, default=str),
            )
    return _result(
        config,
        folder,
        record,
        pairs=clustering.report_pairs,
        clusters=clustering.report_clusters,
        window_clusters=clustering.window_clusters,
    )


def _say_editors(record: RunRecord, e: EditorsRecord) -> None:
    if not e.verdicts:
        return
    record.say(
        f"editors' verdicts ({e.source}): {e.verdicts} held, {e.acting} on training pairs; in this window "
        f"{e.must_link} same story (joined {e.joined} items no link joined), {e.cannot_link} not the same "
        f"story ({e.links_cut} link(s) cut)"
        + (f"; {e.refused} same-story verdict(s) overruled" if e.refused else "")
    )


def _fill_window(record: RunRecord, window: Window) -> None:
    record.run_id, record.input_key = window.run_id, window.input_key
    record.as_of = None if window.as_of is None else window.as_of.isoformat()
    record.counts.update(window.counts)
    record.model_switch = window.switch


def _replay_committed(config: DedupConfig, window: Window, record: RunRecord) -> DedupResult | None:
    """A daily input already committed: its stored report written again (the result, else ``None``). The
    report of a previous run killed after its commit is written first."""
    state = window.state
    if state is None or not state.last_run:
        return None
    last = RunRecord.from_dict(state.last_run)
    if last.input_key == window.input_key:
        record.say(f"run {window.run_id} was already committed to {config.state}; writing its report again")
        folder = stages.replay_report(config, window, last)
        last.messages = record.messages
        return _result(config, folder, last, replayed=True)
    # the last run was killed after its commit: its report first
    if last.run_id and not (daily_report_dir(config.out, last.run_id) / "run.json").exists():
        stages.replay_report(config, window, last)
        record.say(f"wrote the missing report of the previous run {last.run_id}")
    return None


def _search(
    step: Step, record: RunRecord, config: DedupConfig, model: stages.ModelChoice, window: Window
) -> tuple[Window, pd.DataFrame, pd.DataFrame]:
    """Convert, embed, index, search the neighbours and rerank them: the window with its index, the pairs
    at or above the threshold and the candidates below it."""
    texts = step("convert", stages.convert_texts, window, config)
    emb, hit = step("embed", stages.embed, texts, model, config)
    record.embedding_cache_hit = hit
    record.model_info = stages.with_inference(model.info, model.encoder)
    window = step("index", stages.index, window, emb, config, model)
    record.index = window.index.describe()
    reranked = model.reranker is not None
    floor = near_misses.search_floor(model.floor, model.threshold.value, reranked, config.near_misses)
    pairs = step("neighbors", stages.neighbors, window, config, floor)
    record.counts["candidates"] = candidates = int(len(pairs))
    if reranked:
        pairs = step("rerank", stages.rerank, pairs, window, model, config)
    pairs, below = near_misses.split(pairs, model.threshold.value)
    if reranked:
        record.rerank = stages.rerank_record(model, candidates, int(len(pairs)))
    return window, pairs, below


def _fill_clusters(
    record: RunRecord,
    window: Window,
    pairs: pd.DataFrame,
    clustering: stages.Clustering,
    missed: pd.DataFrame,
) -> None:
    events = clustering.update.events["status"]
    clusters = clustering.report_clusters
    current = clusters[clusters["status"] != "dissolved"]  # a dissolved cluster is no cluster now
    record.counts.update(
        kept=int(len(window.items)),
        pairs=int(len(clustering.report_pairs)),  # the pairs the report lists
        clusters=int(len(current)),
        clustered_items=int(current["size"].sum()) if len(current) else 0,
        clusters_new=int((events == "new").sum()),
        clusters_grown=int((events == "grown").sum()),
        clusters_merged=int((events == "merged").sum()),
        clusters_absorbed=len(clustering.update.merged_into),
        clusters_dissolved=len(clustering.update.dissolved),
        clusters_in_window=int(len(clustering.window_clusters)),
        near_misses=int(len(missed)),
    )
    record.extra["merged_into"] = dict(sorted(clustering.update.merged_into.items()))
    if clustering.update.dissolved:
        record.extra["dissolved"] = dict(sorted(clustering.update.dissolved.items()))


def _result(
    config: DedupConfig,
    folder: Path,
    record: RunRecord,
    *,
    replayed: bool = False,
    pairs: pd.DataFrame | None = None,
    clusters: pd.DataFrame | None = None,
    window_clusters: pd.DataFrame | None = None,
) -> DedupResult:
    if pairs is None:
        pairs = pd.read_parquet(folder / "pairs.parquet")
        clusters = pd.read_parquet(folder / "clusters.parquet")
    names = [p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    return DedupResult(
        out=Path(config.out),
        report_dir=folder,
        stats=record,
        pairs=pairs,
        clusters=clusters,
        run_id=record.run_id,
        replayed=replayed,
        window_clusters=window_clusters,
        files={n: folder / n for n in sorted(names)},
    )
