"""The stages of a near-duplicate run, each a plain function; :func:`nlsim.dedup.run.run_dedup` chains
them.

load → model → window → convert → embed → index → neighbours → rerank → cluster → near misses → judge
(with ``--judge-pairs``) → commit → report

Each stage reads the settings of its own concern (:mod:`nlsim.dedup.settings`), never the whole configuration.
``model`` is :func:`nlsim.models.choice.load_model`: the encoder (``current``: the model store's promoted
model), the reranker stored with it and the threshold, checking that a calibration was made for this very
model. Where a batch run and a daily one differ, a stage has two forms, and :mod:`nlsim.dedup.run` composes
each run from its own: ``window`` (:func:`open_batch_window`: every item is embedded and searched;
:func:`open_daily_window`: today's new ones against the state's), ``embed`` (:class:`EmbedPlan`), ``cluster``
(:func:`cluster`, :func:`cluster_daily`), ``judge`` (:class:`JudgeScope`), ``report`` (:func:`report`,
:func:`report_daily`); ``commit`` is a daily run's only.

Example:
    >>> from nlsim.dedup.config import DedupConfig
    >>> cfg = DedupConfig.of(corpus="data/bbc.parquet", out="reports/bbc", model="paraphrase-MiniLM-L3-v2",
    ...                      convert="none", threshold=0.95)
    >>> EmbedPlan.batch(cfg).chunk, EmbedPlan.daily(cfg).chunk
    (None, 512)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.clusters.assign import ClusterUpdate, assign_groups, events_frame
from nlsim.clusters.constraints import LinkConstraints, pair_key
from nlsim.clusters.copies import COPY_KEY_VERSION, contract, find_copies
from nlsim.clusters.order import OrderKey, order_keys
from nlsim.clusters.rules import ClusterRule, Link, links_of
from nlsim.clusters.table import cluster_table, topic_table
from nlsim.clusters.topics import TopicUpdate, assign_topics, topic_constraints, topic_groups
from nlsim.clusters.verdicts import Verdict, Verdicts
from nlsim.dedup.config import FUTURE_TOLERANCE_DAYS, DedupConfig
from nlsim.dedup.editors import EditorsInput, editors_fingerprint, read_editors, scored_frame
from nlsim.dedup.settings import (
    ClusteringSettings,
    InputSettings,
    ReportSettings,
    SearchSettings,
    StateSettings,
)
from nlsim.dedup.state import State, StateIdentity, commit_state, empty_clusters, empty_pairs, open_state
from nlsim.dedup.window import Window, batch_window, incremental_window, undated_clock
from nlsim.encoders.cache import EmbeddingCache, check_finite
from nlsim.encoders.encoder import long_texts_said, unreadable_message
from nlsim.errors import InputError
from nlsim.evaluation.judge import Judgement, belongs_to_corpus, describe, judge_items, scored_pairs
from nlsim.faults import fault_point
from nlsim.io import columns
from nlsim.io.cells import SHOWN_TEXT_VERSION
from nlsim.io.corpus import Corpus, load_corpus
from nlsim.models.choice import ModelChoice
from nlsim.models.settings import ModelSettings
from nlsim.models.threshold import Levels
from nlsim.progress import Progress, counted, say, warn
from nlsim.report import near_misses as near
from nlsim.report.files import (
    daily_report_dir,
    finished,
    pairs_table,
    publish_daily_report,
    spreadsheet_files,
    write_report,
)
from nlsim.report.record import (
    JOINED,
    SPLIT,
    ClusterChange,
    EditorsRecord,
    RerankRecord,
    RunLog,
    RunRecord,
)
from nlsim.report.scores import SCORES, with_scores
from nlsim.rerank.cache import PairScoreCache
from nlsim.rerank.second_reading import Unread, finish_near_misses, read_candidates
from nlsim.rerank.series import veto_cap, vetoed_scores
from nlsim.search.index import (
    IndexMeta,
    SearchIndex,
    build_index,
    default_nprobe,
    on_device,
    resolved_kind,
    save_index,
)
from nlsim.search.neighbors import neighbor_pairs, row_cosines, scored_by_representatives

FUTURE_TOLERANCE = pd.Timedelta(days=FUTURE_TOLERANCE_DAYS)
"""An item published more than this after the wall clock is refused (a wrong date, not news)."""
EMBED_CHUNK = 512


@dataclass
class Clustering:
    """The cluster stage's result: ids, events, the window's items with their cluster ids, every pair in
    the window, and the report's tables."""

    update: ClusterUpdate
    items: pd.DataFrame
    pairs_all: pd.DataFrame
    report_pairs: pd.DataFrame
    report_clusters: pd.DataFrame
    window_clusters: pd.DataFrame
    clusters_state: pd.DataFrame
    cut: pd.DataFrame
    """Today's pairs at or above the threshold whose items the cluster rule left in two clusters (row
    positions ``a``, ``b`` and the scores): the near misses' first candidates."""
    editors: EditorsRecord | None = None
    """What the editors' verdicts did (``None``: the run had no verdict and no scored pair)."""
    verdicts: Verdicts = field(default_factory=Verdicts)
    """The verdicts the run honoured, kept in a daily state for later runs."""
    scored: frozenset[tuple[str, str]] = frozenset()
    """The pairs editors have scored (``pair_key``), kept in a daily state: the review queue of a later run
    skips them, with or without ``--annotated-pairs``."""
    topics: TopicUpdate = field(default_factory=lambda: TopicUpdate({}, {}))
    """The topic group of each item in one, and the topics' anchors (:mod:`nlsim.clusters.topics`)."""
    report_topics: pd.DataFrame = field(default_factory=lambda: columns.table("topics").empty())
    """The topics table (``topics.parquet``): the window's topic groups."""
    training: frozenset[tuple[str, str]] = frozenset()
    """Of the scored pairs, the training ones (a later run's page offers an overrule), kept with them."""
    held_out: frozenset[tuple[str, str]] = frozenset()
    """Of the scored pairs, the validation and test ones (never marked in a later page), kept with them."""


# --- load ---------------------------------------------------------------------------------------------


def load(source: InputSettings, daily: StateSettings | None = None) -> Corpus:
    """Load and validate the corpus; bad rows raise, or are set aside for the quarantine file, which the run
    writes once it has succeeded (:func:`~nlsim.io.corpus.write_quarantine`). An item dated more than
    a day in the future is a bad row (it would move the daily window's clock); in a daily run (``daily``),
    a lone item dated far after the rest is refused (:func:`check_no_lone_late_items`), and a file with no
    row is a day without news (the window is kept: :func:`open_daily_window`)."""
    corpus = load_corpus(
        source.corpus_path,
        text_fields=source.text_fields,
        quarantine=source.quarantine_path,
        timezone=source.timezone,
        not_after=pd.Timestamp.now(tz="UTC") + FUTURE_TOLERANCE,
        allow_empty=daily is not None,
        deferred=True,  # written by the run once it has succeeded: a failed run leaves the earlier file
    )
    if daily is not None and daily.retention_days and daily.as_of is None:  # --as-of fixes the clock
        check_no_lone_late_items(corpus, float(daily.retention_days))
    for message in corpus.warnings:
        warn(message)
    for message in corpus.notes:
        say(message)
    if len(corpus.quarantined):
        n, path = len(corpus.quarantined), corpus.quarantine_path
        say(f"quarantined {counted(n, 'bad row', 'bad rows')} -> {path} (written once the run has succeeded)")
    return corpus


def check_no_lone_late_items(corpus: Corpus, retention_days: float) -> None:
    """Refuse a daily run's items dated more than the retention after the rest of the corpus, when the rest
    are at least twice as many: a typo in a year (2025 for 2024) would move the window's clock to it, expire
    every kept item and make the day's own items too old, for every later run too.

    The items after the first such gap in the sorted dates are refused. A corpus whose dates run on without
    such a gap (an archive of three months) passes, and so does one whose later part is a third or more of
    it (Friday's and Monday's items, a backlog beside the day's news): which side is wrong cannot be told.

    Example:
        >>> import pandas as pd
        >>> from nlsim.io.corpus import Corpus
        >>> times = pd.to_datetime(["2024-05-03T08:00Z", "2024-05-03T09:00Z", "2025-05-03T10:00Z"], utc=True)
        >>> corpus = Corpus(pd.DataFrame({"id": ["a", "b", "c"], "published_at": times}), path="day.csv")
        >>> check_no_lone_late_items(corpus, 30)
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: day.csv: row 3, field 'published_at': 1 item(s) dated more than 30 days ...
    """
    times = corpus.frame["published_at"]
    dated = np.sort(times.dropna().to_numpy())
    retention = pd.Timedelta(days=retention_days).to_timedelta64()
    before = np.arange(1, len(dated))  # how many dated items lie before each gap
    wide = np.flatnonzero((np.diff(dated) > retention) & (before >= 2 * (len(dated) - before)))
    if not len(wide):
        return
    cut = dated[wide[0]]  # the latest time before the first wide gap that leaves a small part after it
    late = (times > cut).to_numpy() & times.notna().to_numpy()
    raise _dated_rows_error(
        corpus,
        late,
        f"dated more than {retention_days:g} day{'' if retention_days == 1 else 's'} (the retention) after "
        f"the other {counted(int(times.notna().sum()) - int(late.sum()), 'dated item', 'dated items')}, "
        f"the latest of which is {pd.Timestamp(cut)}",
        "a typo in a year? The daily window's clock would move to it and expire every kept item; fix the "
        "dates, give the late items a run of their own, or fix the clock with --as-of",
    )


def _dated_rows_error(corpus: Corpus, bad: np.ndarray, what: str, advice: str) -> InputError:
    """The error for the items of ``corpus`` marked in ``bad`` by their date: the first one's row (when no
    row was quarantined, rows still count as in the file), up to five ids, and what to do."""
    rows = np.flatnonzero(bad)
    first = corpus.frame.iloc[rows[0]]
    ids = ", ".join(corpus.frame["id"].iloc[rows[:5]].astype(str))
    return InputError(
        corpus.path,
        int(rows[0]) + 1 if not len(corpus.quarantined) else None,
        "published_at",
        f"{len(rows)} item(s) {what} (e.g. {first['id']} at {first['published_at']}; ids {ids}"
        f"{' ...' if len(rows) > 5 else ''}); {advice}",
    )


# --- window -------------------------------------------------------------------------------------------


def _window_identity(model: ModelChoice, settings: DedupConfig) -> StateIdentity:
    """What a daily state keeps of the model, the texts and the neighbour search, to notice a change of
    any."""
    rr = ""
    if model.reranker is not None:
        rr = model.reranker.fingerprint
    # the kept pairs' rerank scores were held by the series veto, or not: a change scores them again
    veto = {"series_veto": False} if model.reranker is not None and not settings.model.series_veto else {}
    return StateIdentity(
        model_id=model.encoder.model_id,
        fingerprint=model.encoder.fingerprint,
        dim=int(model.encoder.dim),
        conversion=settings.model.convert,
        text_fields=tuple(settings.input.text_fields),
        threshold=float(model.threshold.value),
        reranker=rr,
        topic_threshold=None if model.topic is None else float(model.topic.value),
        search={
            "k": settings.search.k,
            "window_hours": settings.search.window_hours,
            "copy_key": COPY_KEY_VERSION,
            "markup": SHOWN_TEXT_VERSION,
            **veto,
        },
    )


def open_batch_window(settings: DedupConfig, corpus: Corpus, model: ModelChoice) -> Window:
    """A batch run's window: every item of the corpus is embedded and searched (:mod:`nlsim.dedup.window`)."""
    return batch_window(corpus, _window_identity(model, settings), settings.window_params())


def open_daily_window(
    settings: DedupConfig, daily: StateSettings, corpus: Corpus, model: ModelChoice, log: RunLog
) -> Window:
    """A daily run's window: the state's kept items with today's, of which today's new ones are embedded
    and searched (:mod:`nlsim.dedup.window`); a change of model or settings told through the run's
    ``log``."""
    state = open_state(daily.folder)
    # the editors' files are part of a daily run's input: a run of a committed day after a merge is a new
    # run (its verdicts act, its scored pairs are kept), not a replay of the committed one
    params = {**settings.window_params(), "editors": editors_fingerprint(settings.clustering.annotated_pairs)}
    params["judge"] = judged_digest(params["judge"], state)
    zone = settings.input.timezone
    # the report's days and the record are of the run's zone, and its counts say which rows were set aside
    params.update(timezone=zone, quarantined=int(len(corpus.quarantined)))
    day = settings.input.run_date() if settings.input.date else None
    window = incremental_window(daily, corpus, state, _window_identity(model, settings), params, zone, day)
    window = replace(window, carried=carried_clusters(window, settings.report.out))
    if window.again and window.carried is None:
        folder = carried_folder(window, settings.report.out)
        log.say(
            f"{settings.input.corpus_path} is the day of run {window.again} again, but "
            + ("the state keeps" if folder is None else f"{folder} holds")
            + " no report of that run (another --out?): this run's report lists what it changes, not that "
            "day's clusters again"
        )
    if not len(corpus.frame):
        log.say(f"{settings.input.corpus_path}: no items (a day without news): the window is kept as it was")
    if undated_clock(daily, corpus.frame["published_at"]):
        log.say(
            f"no item of {settings.input.corpus_path} has a date: the window's clock is {window.as_of} (the "
            f"start of {day or 'today'} in {zone}, unless the state's is later); its items are kept from the "
            "day they were first seen (--as-of pins the clock)"
        )
    if window.switch is not None:
        sw = window.switch
        what = "re-embedding the whole window" if sw.reembed else "pairing the window again"
        log.say(
            f"the state was made with other settings ({'; '.join(sw.details)}): {what} "
            f"({counted(len(window.items), 'item', 'items')})"
        )
    return window


def judged_digest(judge: list[Any] | None, state: State) -> list[Any] | None:
    """The input key's scored pairs (``[file, split, SHA-256]``, :meth:`DedupConfig.window_params`): a file
    that cannot be read (moved away after the run) takes the digest the state's last run recorded for the
    same file and split, so that the run of the same input is a replay, which needs the file no more; any
    other run reads the file and is refused by name."""
    if judge is None or judge[2] is not None or not state.last_run:
        return judge
    last = RunRecord.from_dict(state.last_run).judge
    if (
        last is not None
        and last.pairs_sha256
        and (last.pairs, last.split) == (str(judge[0]), judge[1] or "all")
    ):
        return [judge[0], judge[1], last.pairs_sha256]
    return judge


def carried_folder(window: Window, out: str | Path) -> Path | None:
    """Where the report of the run whose day this one is again (:attr:`Window.again`) is read from: the
    state's kept report when that run is the state's last, else ``OUT/runs/<its id>/`` (``None``: no such
    run, or a state that keeps no report)."""
    state = window.state
    if not window.again or state is None:
        return None
    last = state.last_run["run_id"] if state.last_run else ""
    folder = state.report_dir() if window.again == last else daily_report_dir(out, window.again)
    return None if folder is None else Path(str(folder))


def carried_clusters(window: Window, out: str | Path) -> pd.DataFrame | None:
    """The clusters listed by the report of the run whose day this one is again (:attr:`Window.again`):
    the report the state keeps when that run is the state's last, else the one published in
    ``OUT/runs/<its id>/`` (``None``: no such run, or no readable report of it). A cluster it reported
    dissolved is not listed again."""
    folder = carried_folder(window, out)
    if folder is None:
        return None
    try:
        table = pd.read_parquet(folder / "clusters.parquet")
        table = table[["cluster_id", "status", "added_ids", "absorbed"]]
    except (OSError, ValueError, KeyError):
        return None
    table = table[table["status"].astype(str) != "dissolved"]
    return pd.DataFrame(
        {
            "cluster_id": table["cluster_id"].astype(str).tolist(),
            "status": table["status"].astype(str).tolist(),
            "added": [[str(i) for i in x] for x in table["added_ids"]],
            "absorbed": [[str(c) for c in x] for x in table["absorbed"]],
        }
    )


# --- embed, index, search, rerank ---------------------------------------------------------------------


def convert_texts(window: Window, scoring: ModelSettings) -> list[str]:
    """The converted texts of the rows to embed (the original text stays in the window's items)."""
    return window.texts(window.embed_rows, scoring.convert)


def copies(
    window: Window,
    scoring: ModelSettings,
    search: SearchSettings,
    editors: EditorsInput,
    text_fields: Sequence[str] = ("title",),
) -> Window:
    """The window's exact copies (:mod:`nlsim.clusters.copies`): items whose texts, in the run's script,
    are the same once normalised, grouped before the neighbour search; copies further apart than the
    time window are not copies, and an editor's "not the same story" keeps two copies apart: the parts it
    makes are each searched (:attr:`~nlsim.clusters.copies.Copies.parted`, added to the query rows: in a
    daily run an earlier day's copy, never searched, finds its own neighbours as a batch run's does).
    Each item's ``text_fields`` are keyed field by field (:meth:`~nlsim.dedup.window.Window.field_texts`).
    Returns the window with them (:func:`copies_said`: what the run says of them)."""
    ids = window.ids
    texts = window.field_texts(range(len(ids)), scoring.convert, text_fields)
    cannot = editors.constraints().restricted_to(ids.tolist()).cannot_link
    found = find_copies(
        ids, texts, window.items["published_at"], window_hours=search.window_hours, cannot=cannot
    )
    # the parts of a copy group a verdict parted are searched for their own neighbours (a batch run's
    # are): in a daily run, those of an earlier day too, which that day read as one item (or as a copy)
    query = np.union1d(window.query_rows, found.parted).astype(np.int64)
    old = window.old_pairs
    if found.parted.size and len(old):
        # the pairs an earlier day kept with a parted group were found as one group, which asked for as
        # many neighbours as all its copies: they go, and their other ends are searched again, so that
        # each part keeps the neighbours a batch run's part has and no more
        members = set(ids[np.isin(found.rep, found.parted)].tolist())
        a, b = old["id_a"].astype(str).to_numpy(), old["id_b"].astype(str).to_numpy()
        in_a, in_b = np.isin(a, list(members)), np.isin(b, list(members))
        ends = set(b[in_a & ~in_b].tolist()) | set(a[in_b & ~in_a].tolist())
        query = np.union1d(query, np.flatnonzero(np.isin(ids, list(ends)))).astype(np.int64)
        window = replace(window, old_pairs=old[~(in_a | in_b)].reset_index(drop=True))
    return replace(window, copies=found, query_rows=query)


@dataclass(frozen=True)
class EmbedPlan:
    """How the embed stage goes about its texts.

    A batch run embeds in one call with the encoder's own progress, through the content-hash cache
    (:meth:`batch`); a daily run in chunks of :data:`EMBED_CHUNK` with one progress line for them all
    (the kill tests stop it after the first chunk) and no cache: its texts are new (:meth:`daily`)."""

    batch_size: int | None = None
    chunk: int | None = None
    """Texts per call (``None``: all in one call)."""
    cache: bool = False
    convert: str = "none"
    """The conversion the texts went through (part of the cache's key)."""
    progress: bool = True

    @classmethod
    def batch(cls, settings: DedupConfig) -> EmbedPlan:
        m = settings.model
        return cls(m.batch_size, None, m.cache, m.convert, settings.report.progress)

    @classmethod
    def daily(cls, settings: DedupConfig) -> EmbedPlan:
        return cls(
            settings.model.batch_size, EMBED_CHUNK, False, settings.model.convert, settings.report.progress
        )


def embed(
    texts: list[str], model: ModelChoice, plan: EmbedPlan, encode: Callable[..., np.ndarray] | None = None
) -> tuple[np.ndarray, bool]:
    """Embed the texts as ``plan`` says (:class:`EmbedPlan`). Returns the vectors and whether they came
    from the cache.

    ``encode(texts, batch_size=, progress=)`` replaces the encoder's own (the Dask flow's sharded one).
    """
    encoder = model.encoder
    encode = encode or encoder.encode
    if hasattr(encoder, "plan"):  # the whole job's size decides the inference path, not one chunk's (nor
        encoder.plan(len(texts))  # one shard's: the Dask flow's workers embed on the path settled here)

    def compute() -> np.ndarray:
        chunk = plan.chunk or max(len(texts), 1)
        chunked = plan.chunk is not None
        parts = []
        with Progress(len(texts), f"embed {encoder.name}", "texts", plan.progress and chunked) as bar:
            for start in range(0, len(texts), chunk):
                part = texts[start : start + chunk]
                parts.append(encode(part, batch_size=plan.batch_size, progress=plan.progress and not chunked))
                bar.update(len(part))
                fault_point("embed")
        if not parts:
            return np.zeros((0, int(encoder.dim)), np.float32)
        # before the vectors are cached, searched or kept in a state
        return check_finite(np.vstack(parts).astype(np.float32, copy=False), texts, encoder.name)

    if plan.cache and texts:
        out = EmbeddingCache().get_or_compute(texts, encoder, plan.convert, compute)
    else:
        out = compute(), False
    return out


def index(
    window: Window, emb: np.ndarray, search: SearchSettings, model: ModelChoice, threads: int | None = None
) -> Window:
    """The window's embeddings (kept + today's) and its FAISS index (exact or approximate, CPU or GPU), built
    and later searched on ``threads`` CPU threads when given (the run's ``--threads``)."""
    if threads:
        import faiss  # deferred, as everywhere: FAISS's thread count is process-wide

        faiss.omp_set_num_threads(int(threads))
    dim = int(model.encoder.dim)
    kept = None  # the index a daily state kept, searched again
    if window.reembed or window.n_base == 0:
        full = emb.astype(np.float32, copy=False)
        built = build_index(full, dim=dim, **search.index_options())
    else:
        base = (
            window.base_embeddings if window.base_embeddings is not None else np.zeros((0, dim), np.float32)
        )
        full = np.vstack([base, emb]).astype(np.float32, copy=False)
        kept = kept_index(window.base_index, search)
        built = kept if kept is not None else build_index(base, dim=dim, **search.index_options())
        built.add(emb)
    if (search.nlist or search.nprobe) and built.kind != "ivf":
        say(f"index: --nlist/--nprobe apply to IVF indexes only; this run's index is {built.kind}: ignored")
    if said := lists_said(search, built, new=kept is None):
        say(said)
    say(f"index: {built.describe()}")
    return replace(window, embeddings=full, index=built)


def lists_said(search: SearchSettings, built: SearchIndex, *, new: bool = True) -> str | None:
    """What the run says of an IVF index with fewer lists or probes than ``--nlist``/``--nprobe`` asked
    (``None``: as asked, or not IVF). FAISS's k-means trains each list on the vectors it is given, at
    least one a list (it wants 39): an index of fewer vectors than ``--nlist`` has a list a vector; an IVF
    search visits at most its lists (and 2,048 of them on a GPU). ``new``: the index was built by this run
    (a kept one says why its lists stand in :func:`kept_index`).

    Example:
        >>> import numpy as np
        >>> from nlsim.dedup.settings import SearchSettings
        >>> from nlsim.search.index import build_index
        >>> ivf = build_index(np.eye(8, dtype="float32"), kind="ivf", nlist=64, nprobe=32, use_gpu=False)
        >>> for part in lists_said(SearchSettings(index_kind="ivf", nlist=64, nprobe=32), ivf).split("; "):
        ...     print(part)
        index: --nlist 64 is more lists than the 8 vectors that train them: 8 lists (FAISS's ...
        --nprobe 32: 8 lists visited (the index has no more)
    """
    if built.kind != "ivf":
        return None
    nlist, nprobe = int(built.params["nlist"]), int(built.params["nprobe"])
    said = []
    if new and search.nlist and nlist < search.nlist:
        trained = int(built.params.get("train_size", nlist))
        said.append(
            f"--nlist {search.nlist} is more lists than the {trained:,} vectors that train them: {nlist:,} "
            "lists (FAISS's k-means needs a vector a list)"
        )
    if search.nprobe and nprobe < search.nprobe:
        most = "the index has no more" if nprobe == nlist else "FAISS's GPU search visits no more"
        said.append(f"--nprobe {search.nprobe}: {nprobe:,} lists visited ({most})")
    return "index: " + "; ".join(said) if said else None


def kept_index(kept: SearchIndex | None, search: SearchSettings) -> SearchIndex | None:
    """The index a daily state kept, searched as this run asks (``None``: build one from the kept vectors):
    another kind than the kept one's (``--index``, or what ``auto`` picks for the kept vectors, as a day
    whose index is built again gets) is built again, the kept one goes where a new one would (the GPUs
    unless ``--cpu``; it is kept in its CPU form), and an IVF index visits ``--nprobe`` lists, else the
    default for its lists (not the count an earlier run asked for)."""
    if kept is None:
        return None
    wanted = resolved_kind(search.index_kind, kept.ntotal, search.use_gpu)
    if wanted != kept.kind:
        asked = f"--index {search.index_kind}" + (
            f" ({wanted} at this size)" if wanted != search.index_kind else ""
        )
        say(
            f"index: the state's kept index is {kept.kind}, this run asks for {asked}: built again from the "
            f"{kept.ntotal:,} kept vectors"
        )
        return None
    kept = on_device(kept, search.use_gpu)
    if kept.kind == "ivf":
        # figures of its own: the state's kept index still says the probes it was searched with
        kept = SearchIndex(kept.index, kept.kind, kept.device, kept.dim, kept.params)
        nlist = int(kept.params["nlist"])
        kept.set_search_params(nprobe=search.nprobe or default_nprobe(nlist))
        if search.nlist and nlist != search.nlist:
            say(
                f"index: --nlist {search.nlist} not applied: the kept index has {nlist} lists (it is "
                "rebuilt with the new count when the window is embedded again)"
            )
    return kept


def neighbors(
    window: Window,
    opts: SearchSettings,
    floor: float,
    progress: bool = True,
    search: Callable[..., pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Pairs ``(a, b, similarity)`` of window rows: each searched row's k nearest neighbours at or above
    ``floor`` (the threshold, or the reranker's candidate floor), optionally within a time window.

    ``search`` replaces :func:`nlsim.search.neighbors.neighbor_pairs` (same arguments; the Dask flow's
    sharded search)."""
    hours = timedelta(hours=opts.window_hours) if opts.window_hours else None
    q = window.query_rows
    copied = window.copies
    # a text the time window cut into groups of one item each has no copy, and is one text to the search
    split = copied is not None and copied.same_text is not None
    rep = None if copied is None or not (copied.count or split) else copied.rep
    grown = np.zeros(0, np.int64)
    if rep is not None:
        # a copy's neighbours are its representative's; within a time window a group that gained a copy
        # (an undated one, one sent late) may now reach items its earlier members did not, so its
        # representative is searched again, as a batch run searches it with every copy it holds
        gained = np.unique(rep[q[rep[q] != q]])  # the groups that gained a copy today
        # a group asks for as many neighbours as it has copies (k at least): one that now has more than
        # k asks for more than an earlier day's search gave it, so it is searched again
        grown = gained[np.bincount(rep, minlength=len(rep))[gained] > opts.k]
        q = np.unique(rep[q]) if hours is not None else np.union1d(q[rep[q] == q], grown)
    extra: dict[str, Any] = {} if rep is None else {"copies": rep}
    if split and copied is not None:
        extra["same_text"] = copied.same_text
    found = (search or neighbor_pairs)(
        window.index,
        window.embeddings[q],
        q,
        k=opts.k,
        threshold=floor,
        times=window.items["published_at"] if hours is not None else None,
        window=hours,
        progress=progress,
        **extra,
    )
    if rep is not None and len(found) and (hours is not None or grown.size):
        # a group searched again for a copy it gained: what it finds between earlier days' items alone is a
        # pair those days found (the state keeps it), not one that joined a story today; one that asks
        # for more neighbours than before finds such pairs no earlier day did, and keeps those
        asked = np.zeros(len(window.ids), bool)
        asked[window.query_rows] = True
        a, b = found["a"].to_numpy(), found["b"].to_numpy()
        keep = asked[a] | asked[b]
        more = np.zeros(len(window.ids), bool)
        more[grown] = True
        more = ~keep & (more[rep[a]] | more[rep[b]])
        if more.any():
            keep[np.flatnonzero(more)[~_kept_before(window, a[more], b[more])]] = True
        found = found[keep].reset_index(drop=True)
    # a group of copies is scored by its representative's vector, whichever copy the search hit, and the
    # parts of one text the time window cut apart by the vector of its first copy: one text, one score
    scored = copied.same_text if split and copied is not None else rep
    return found if scored is None else scored_by_representatives(found, window.embeddings, scored, floor)


def _kept_before(window: Window, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether each pair of window rows ``a``, ``b`` is one an earlier run kept (``window.old_pairs``)."""
    old = window.old_pairs
    if not len(old):
        return np.zeros(len(a), bool)
    ids = window.ids.astype(str)
    x, y = old["id_a"].astype(str).to_numpy(), old["id_b"].astype(str).to_numpy()
    kept = {(min(p, q), max(p, q)) for p, q in zip(x.tolist(), y.tolist(), strict=True)}
    ends = zip(ids[a].tolist(), ids[b].tolist(), strict=True)
    return np.array([(min(p, q), max(p, q)) in kept for p, q in ends], dtype=bool)


def readable(
    pairs: pd.DataFrame, window: Window, model: ModelChoice, scoring: ModelSettings
) -> tuple[pd.DataFrame, str | None]:
    """The candidate pairs less those with an end whose text the model reads nothing of (every token
    unknown to its tokenizer: :meth:`nlsim.encoders.encoder.Encoder.unreadable`, ``𠀀𠀁`` to e5): such
    texts embed as one vector, so two unrelated ones would pair at a similarity of 1. The items stay in the
    report, and exact copies of one such text are still linked (:func:`with_copies`). Returns the pairs and
    what the run says of the texts (``None``: no such text among the candidates)."""
    check = getattr(model.encoder, "unreadable", None)
    if check is None or pairs.empty:
        return pairs, None
    rows = np.unique(np.concatenate([pairs["a"].to_numpy(np.int64), pairs["b"].to_numpy(np.int64)]))
    texts = window.texts(rows, scoring.convert)
    bad = check(texts)
    if not bad.any():
        return pairs, None
    drop = np.isin(pairs["a"].to_numpy(np.int64), rows[bad]) | np.isin(
        pairs["b"].to_numpy(np.int64), rows[bad]
    )
    said = unreadable_message(
        model.encoder,
        bad,
        texts,
        window.ids[rows],
        f"left out of the {int(drop.sum())} candidate pair(s) they were in (exact copies of one text are "
        "still linked)",
    )
    return pairs[~drop].reset_index(drop=True), said


def long_texts(texts: Sequence[str], window: Window, model: ModelChoice) -> str | None:
    """What the run says of the embedded ``texts`` (the window's :attr:`~Window.embed_rows`, converted) that
    run past the tokens the encoder reads (:meth:`nlsim.encoders.encoder.Encoder.cut`): their vectors say
    what their beginning says, the fields in ``--text-fields`` order (``None``: no such text)."""
    return long_texts_said(model.encoder, texts, window.ids[window.embed_rows])


def copies_said(window: Window) -> str | None:
    """What the run says of the window's exact copies (``None`` when it has none)."""
    found = window.copies
    if found is None or not found.count:
        return None
    groups = len(found.groups())
    return (
        f"exact copies: {found.count} item(s) repeat the text of another, in {groups} group(s); each group "
        "is searched and clustered as one item"
    )


def linked(pairs: pd.DataFrame, levels: Levels) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The candidate pairs a run keeps (at or above the story threshold, or, with topic groups, whose cosine
    reaches the topic threshold) and the rescored ones below the story threshold (the near misses')."""
    pairs = with_scores(pairs)
    score = pairs["similarity"].to_numpy()
    story = score >= levels.story
    keep = story.copy()
    if levels.topic is not None:
        keep |= pairs["cosine"].to_numpy() >= levels.topic
    below = ~story & ~np.isnan(score)  # a candidate never rescored (topic level only) is no near miss
    return pairs[keep].reset_index(drop=True), pairs[below].reset_index(drop=True)


def with_copies(pairs: pd.DataFrame, window: Window) -> pd.DataFrame:
    """``pairs`` (at or above the threshold) with a link from each of today's copies to its representative
    (``exact_copy`` true; score 1, the top of the scale; the cosine of their vectors; no cross-encoder
    score: the texts are the same)."""
    found = window.copies
    if found is None or not found.count:
        return pairs
    a, b = found.pairs(window.query_rows)
    if not len(a):
        return pairs
    emb = window.embeddings
    cosine = row_cosines(emb[a], emb[b]) if emb is not None else np.ones(len(a), np.float32)
    links = pd.DataFrame(
        {
            "a": a,
            "b": b,
            "similarity": np.ones(len(a), np.float32),
            "cosine": cosine,
            "cross_encoder": np.full(len(a), np.nan, np.float32),
            "exact_copy": True,
        }
    )
    scored = with_scores(pairs).assign(exact_copy=False)
    key = scored["a"].to_numpy(np.int64) * (len(window.items) + 1) + scored["b"].to_numpy(np.int64)
    taken = np.isin(key, a * (len(window.items) + 1) + b)
    return pd.concat([scored[~taken], links], ignore_index=True)


def rerank(
    candidates: pd.DataFrame,
    window: Window,
    model: ModelChoice,
    scoring: ModelSettings,
    progress: bool = True,
) -> tuple[pd.DataFrame, Unread | None]:
    """Rescore with the cross-encoder the candidate pairs that can reach the story threshold (those at or
    above the model's story floor): each with ``similarity`` the rerank score and ``cosine`` and
    ``cross_encoder`` beside it; the candidates below the floor, searched for the topic groups only, keep
    their ``cosine`` and no rerank score (``similarity`` NaN). The thresholds split them afterwards
    (:func:`linked`). A pair that cannot reach the threshold after its first reading is returned apart,
    unread in its second order (:mod:`nlsim.rerank.second_reading`; :func:`near_misses` finishes those it
    needs). With the series veto a series pair is held below the threshold in use
    (:func:`nlsim.rerank.series.veto_cap`), and the stage says how many pairs it held there."""
    assert model.reranker is not None
    rescore = candidates["similarity"].to_numpy() >= model.story_floor
    topical = candidates[~rescore].reset_index(drop=True)
    candidates = candidates[rescore].reset_index(drop=True)
    rows = (
        np.unique(np.concatenate([candidates["a"].to_numpy(), candidates["b"].to_numpy()]))
        if len(candidates)
        else []
    )
    texts = dict(zip(rows, window.texts(rows, scoring.convert), strict=True))
    cache = PairScoreCache(None, model.reranker.cross_encoder.digest()) if scoring.cache else None
    threshold = model.threshold.value
    scored, unread = read_candidates(candidates, texts, model.reranker, threshold, cache, progress)
    held = 0
    if scoring.series_veto and len(scored):
        before = scored["similarity"].to_numpy()
        after = vetoed_scores(
            before, [texts[x] for x in scored["a"]], [texts[y] for y in scored["b"]], threshold
        ).astype(np.float32)
        held = int(((before >= threshold) & (after < threshold)).sum())
        scored = scored.assign(similarity=after)
    if scoring.series_veto and unread is not None:  # the pairs the near misses finish later, held alike
        unread.hold = lambda rows, scores: vetoed_scores(
            scores, [texts[x] for x in rows["a"]], [texts[y] for y in rows["b"]], threshold
        )
    kept = int((scored["similarity"].to_numpy() >= threshold).sum())
    say(
        f"reranked {counted(len(candidates), 'candidate pair', 'candidate pairs')}: {kept} reach"
        f"{'es' if kept == 1 else ''} the threshold {threshold:.4f}"
        + (
            f" (the series veto held {held} pair(s) below it: {veto_cap(threshold):.4f} at most)"
            if scoring.series_veto
            else ""
        )
    )
    if len(topical):
        topical = topical.assign(
            cosine=topical["similarity"].astype(np.float32),
            similarity=np.float32(np.nan),
            cross_encoder=np.float32(np.nan),
        )
        scored = pd.concat([scored, topical], ignore_index=True)
    return scored, unread


def rerank_record(model: ModelChoice, candidates: int, kept: int, rescored: int) -> RerankRecord:
    """What the run record keeps of the rerank stage: the combination, the candidate floor and the
    cross-encoder's score bound behind it, the counts, and the cross-encoder's inference path."""
    assert model.reranker is not None
    return RerankRecord(
        describe=model.reranker.describe(),
        candidate_floor=round(model.story_floor, 6),
        cross_encoder_bound=round(model.reranker.cross_bound(), 6),
        candidates=candidates,
        kept=kept,
        inference=model.reranker.inference,
        rescored=rescored,
    )


# --- cluster ------------------------------------------------------------------------------------------


def cluster(
    window: Window,
    pairs: pd.DataFrame,
    opts: ClusteringSettings,
    editors: EditorsInput | None = None,
    levels: Levels | None = None,
) -> Clustering:
    """Story clusters from every link the window holds at or above the story threshold (the kept pairs of
    earlier runs and today's) under the configured rule (:mod:`nlsim.clusters.rules`), honouring the
    editors' verdicts (``editors``, as :class:`~nlsim.clusters.constraints.LinkConstraints`), named with
    stable ids (:func:`nlsim.clusters.assign.assign_groups`); the topic groups around them, from the links
    at the topic threshold (:func:`topics`); and the report's tables (a batch run's: its window is its
    report; a daily run's: :func:`cluster_daily`). ``levels``: the story and topic thresholds (default:
    every pair is a story link, no topic groups)."""
    editors = editors if editors is not None else EditorsInput()
    pairs = with_scores(pairs)
    levels = levels or Levels(float(np.nanmin(pairs["similarity"])) if len(pairs) else 0.0)
    story_pairs = pairs[pairs["similarity"].to_numpy() >= levels.story].reset_index(drop=True)
    ids = window.ids
    items = window.items
    keys = order_keys(ids.tolist(), items["published_at"])
    a = story_pairs["a"].to_numpy(dtype=np.int64)
    b = story_pairs["b"].to_numpy(dtype=np.int64)
    pairs_all = window_links(window, pairs)
    story_all = pairs_all[pairs_all["similarity"].to_numpy() >= levels.story]
    links = links_of(story_all, "similarity")
    known = editors.constraints().restricted_to(ids.tolist())
    same = window.copies.rep_of() if window.copies is not None else {}
    grouped = grouped_by_rule(opts.story_rule(levels.story), links, known, same, opts.cut, keys)
    groups = grouped.groups
    upd = assign_groups(
        window.previous,
        window.anchors,
        keys,
        groups=groups,
        new_ids=window.today_ids,
        regrouping=window.regroup,
        apart=known.cannot_link,
    )
    topic = topics(window, upd.assignment, pairs_all, opts, editors, levels, keys)
    shown = with_carried(upd, window.carried)
    items = items.copy()
    items["cluster_id"] = [upd.assignment.get(i) for i in ids]
    items["topic_id"] = [topic.assignment.get(i) for i in ids]
    labels = pd.Series([upd.assignment.get(i) for i in ids], dtype=object)
    label = labels.to_numpy()
    held = np.array([label[x] is not None and label[x] == label[y] for x, y in zip(a, b, strict=True)], bool)
    report_pairs = pairs_table(items, story_pairs[held], labels)
    report_clusters = _report_clusters(items, shown, story_all, opts)
    return Clustering(
        shown,
        items,
        pairs_all,
        report_pairs,
        report_clusters,
        report_clusters,
        _clusters_state(upd, window, topic),
        story_pairs[~held].reset_index(drop=True),
        editors_record(
            editors,
            known,
            story_all,
            upd.assignment,
            cut_links(links, groups, grouped.free, same),
            grouped.changes(
                editors.acting_verdicts(),
                known,
                upd.assignment,
                window.copies.apart if window.copies is not None else frozenset(),
            ),
        ),
        editors.verdicts,
        editors.scored,
        topic,
        topic_table(items, topic.assignment, upd.assignment),
        training=editors.training,
        held_out=editors.held_out,
    )


def with_carried(upd: ClusterUpdate, carried: pd.DataFrame | None) -> ClusterUpdate:
    """``upd`` with the clusters a day's earlier report listed (:attr:`Window.carried`) that the run did not
    touch and that still exist: listed again with their status, the items that joined them and the ids
    they absorbed (what the report of a day run again shows; the state's clusters are ``upd``'s)."""
    if carried is None or not len(carried):
        return upd
    held = set(upd.assignment.values()) - set(upd.events["cluster_id"])
    rows = carried[carried["cluster_id"].isin(held)]
    if not len(rows):
        return upd
    events = events_frame([*upd.events.to_dict("records"), *rows.to_dict("records")], upd.assignment)
    pairs = zip(rows["cluster_id"], rows["absorbed"], strict=True)
    absorbed = {str(a): str(c) for c, ids in pairs for a in ids}
    return replace(upd, events=events, merged_into={**absorbed, **upd.merged_into})


def _report_clusters(
    items: pd.DataFrame, upd: ClusterUpdate, links: pd.DataFrame, opts: ClusteringSettings
) -> pd.DataFrame:
    """The clusters table of the clusters the run touched (a batch run: every cluster), with the clusters a
    model change broke up listed last, with the members they had."""
    held = set(upd.assignment.values())  # once, not once per event: the window times the day's clusters
    touched = [c for c in upd.events["cluster_id"] if c in held]
    report_clusters = cluster_table(
        items,
        upd.assignment,
        links,
        clusters=touched,
        events=upd.events,
        representative=opts.representative,
    )
    if upd.dissolved:
        former = {m: cid for cid, members in upd.dissolved.items() for m in members}
        gone = cluster_table(
            items, former, empty_pairs(), events=upd.events, representative=opts.representative
        )
        report_clusters = pd.concat([report_clusters, gone], ignore_index=True)
    return report_clusters


def topics(
    window: Window,
    clusters: Mapping[str, str],
    pairs_all: pd.DataFrame,
    opts: ClusteringSettings,
    editors: EditorsInput,
    levels: Levels,
    keys: Mapping[str, Any],
) -> TopicUpdate:
    """The topic groups of the window (:mod:`nlsim.clusters.topics`): its story clusters (``clusters``:
    each clustered item's) and single items gathered by the topic rule over the links whose cosine reaches
    the topic threshold, the editors' verdicts read at the topic level; named with stable ids. None without
    a topic threshold."""
    if levels.topic is None:
        return TopicUpdate({}, {})
    topical = pairs_all[pairs_all["cosine"].to_numpy() >= levels.topic]
    links = links_of(topical, "cosine")
    stories: dict[str, list[str]] = {}
    for item, cid in clusters.items():
        stories.setdefault(cid, []).append(item)
    known = set(window.ids.tolist())
    verdicts = [
        (v.id_a, v.id_b, v.score) for v in editors.acting_verdicts() if v.id_a in known and v.id_b in known
    ]
    groups = topic_groups(stories.values(), links, opts.topic_rule_named(), topic_constraints(verdicts))
    return assign_topics(
        window.previous_topics,
        window.topic_anchors,
        keys,
        groups=groups,
        new_ids=window.today_ids,
        regrouping=window.regroup,
    )


def cluster_daily(
    window: Window,
    pairs: pd.DataFrame,
    opts: ClusteringSettings,
    editors: EditorsInput | None = None,
    levels: Levels | None = None,
) -> Clustering:
    """:func:`cluster` in a daily run: the report is the clusters touched today and their pairs, and the
    window's table lists every cluster of 2 items or more that the state keeps."""
    made = cluster(window, pairs, opts, editors, levels)
    upd = made.update
    window_clusters = cluster_table(
        made.items,
        upd.assignment,
        made.pairs_all,
        events=upd.events,
        representative=opts.representative,
    )
    if len(window_clusters):
        # a cluster whose other members left the window keeps its id in the state (a copy arriving later
        # joins it) but is one item now, no cluster: the window's file lists clusters of 2 items or more
        window_clusters = window_clusters[window_clusters["size"] >= 2].reset_index(drop=True)
    report_pairs = made.report_pairs
    if len(report_pairs):
        # after a model change every pair of the window is found again, and those of a cluster it left as
        # it was belong to the window's files (window/), not to the day's
        today = set(made.report_clusters["cluster_id"])
        report_pairs = report_pairs[report_pairs["cluster_id"].isin(today)].reset_index(drop=True)
    return replace(made, report_pairs=report_pairs, window_clusters=window_clusters)


@dataclass(frozen=True)
class Grouped:
    """The cluster rule's groups with the editors' verdicts, and without them: ``free`` without the
    not-the-same-story verdicts (the links they cut), ``bare`` without any (what the same-story ones
    joined). Without verdicts of a kind the groups are the same objects."""

    groups: Sequence[Sequence[str]]
    free: Sequence[Sequence[str]]
    bare: Sequence[Sequence[str]]

    def changes(
        self,
        verdicts: Sequence[Verdict],
        known: LinkConstraints,
        assignment: Mapping[str, str],
        copies_apart: Collection[tuple[str, str]] = frozenset(),
    ) -> list[ClusterChange]:
        """What each of the acting ``verdicts`` among the window's items (``known``) changed in the
        clusters: a same-story verdict whose two items are together with the verdicts and apart in ``bare``
        joined them; a not-the-same-story one whose items are apart with the verdicts and together in
        ``free``, or exact copies it parted (``copies_apart``: :attr:`~nlsim.clusters.copies.Copies.apart`,
        one story without it whatever their links), split them. Each with the ids (``assignment``) of the
        clusters its items are in."""
        final, loose, plain = (_group_of(g) for g in (self.groups, self.free, self.bare))
        out = []
        for v in verdicts:
            a, b = v.key
            together = _together(loose, a, b) or v.key in copies_apart
            if v.key in known.must_link and _together(final, a, b) and not _together(plain, a, b):
                change = JOINED
            elif v.key in known.cannot_link and together and not _together(final, a, b):
                change = SPLIT
            else:
                continue
            clusters = sorted({c for c in (assignment.get(a), assignment.get(b)) if c is not None})
            out.append(
                ClusterChange(
                    v.id_a,
                    v.id_b,
                    v.score,
                    change,
                    clusters,
                    v.overrules and not v.confirms,
                    v.notes,
                    v.confirms,
                )
            )
        return out


def _group_of(groups: Sequence[Sequence[str]]) -> dict[str, int]:
    return {m: n for n, g in enumerate(groups) for m in g}


def _together(group: Mapping[str, int], a: str, b: str) -> bool:
    return group.get(a) is not None and group.get(a) == group.get(b)


def grouped_by_rule(
    rule: ClusterRule,
    links: Sequence[Link],
    known: LinkConstraints,
    same: Mapping[str, str],
    cut: str,
    order: Mapping[str, OrderKey] | None = None,
) -> Grouped:
    """The groups ``rule`` makes of ``links`` (``same``: the groups of copies) with the verdicts ``known``,
    and without them (:class:`Grouped`); ``order``: the items' order keys, which settle exact ties as a
    daily run met them (:meth:`nlsim.clusters.rules.ClusterRule.clusters`)."""
    groups = rule.clusters(links, known, same, cut=cut, order=order)
    free = (
        rule.clusters(links, LinkConstraints(must_link=known.must_link), same, cut=cut, order=order)
        if known.cannot_link
        else groups
    )
    bare = rule.clusters(links, LinkConstraints(), same, cut=cut, order=order) if known.must_link else free
    return Grouped(groups, free, bare)


def cut_links(
    links: Sequence[Link],
    groups: Sequence[Sequence[str]],
    free: Sequence[Sequence[str]],
    copies: Mapping[str, str] | None = None,
) -> int:
    """How many ``links`` join two items that share a group of ``free`` (the rule without the editors'
    "not the same story" verdicts) and not one of ``groups`` (with them): the links the verdicts cut, a
    direct link between the two items or a link of a chain that held them together. With ``copies``
    (:mod:`nlsim.clusters.copies`), a link to a group of copies counts once for each copy it links."""
    if groups is free:
        return 0
    weights: Mapping[str, int] = {}
    if copies:
        between, _, weights = contract(links, LinkConstraints(), copies)
        links = [Link(a, b, s) for a, b, s in between]
    final = {m: n for n, g in enumerate(groups) for m in g}
    loose = {m: n for n, g in enumerate(free) for m in g}
    return sum(
        weights.get(k.a, 1) * weights.get(k.b, 1)
        for k in links
        if loose.get(k.a) is not None
        and loose.get(k.a) == loose.get(k.b)
        and (final.get(k.a) is None or final.get(k.a) != final.get(k.b))
    )


def editors_record(
    editors: EditorsInput,
    known: LinkConstraints,
    links: pd.DataFrame,
    assignment: dict[str, str],
    links_cut: int = 0,
    changes: list[ClusterChange] | None = None,
) -> EditorsRecord | None:
    """What the run's record and page say of the editors' verdicts (``None`` when the run had no verdict
    and no scored pair): the verdicts known and acting, those among the window's items, the links the
    not-the-same-story verdicts cut (``links_cut``: :func:`cut_links`), the same-story verdicts that joined
    items no link joined or that a not-the-same-story verdict overruled, the decisions the page lists
    (the verdicts that acted, and apart the same-story ones overruled), what each verdict changed in the
    clusters (``changes``: :meth:`Grouped.changes`), how many acting verdicts overrule the pair file's
    score of a training pair, and the notes of the decisions listed."""
    if not len(editors.verdicts) and not editors.scored:
        return None
    linked = {pair_key(str(a), str(b)) for a, b in zip(links["id_a"], links["id_b"], strict=True)}
    must = sorted(known.must_link)
    together = [assignment.get(a) is not None and assignment.get(a) == assignment.get(b) for a, b in must]
    overruled = {p for p, t in zip(must, together, strict=True) if not t}
    here = [v for v in editors.verdicts.acting() if v.key in known.must_link or v.key in known.cannot_link]
    return EditorsRecord(
        source=editors.source,
        verdicts=len(editors.verdicts),
        acting=len(editors.constraints()),
        must_link=len(known.must_link),
        cannot_link=len(known.cannot_link),
        links_cut=links_cut,
        joined=sum(1 for p, t in zip(must, together, strict=True) if t and p not in linked),
        refused=len(overruled),
        decisions=[[v.id_a, v.id_b, v.score] for v in here if v.key not in overruled],
        overruled=[[v.id_a, v.id_b, v.score] for v in here if v.key in overruled],
        text_changed=[list(k) for k in sorted(editors.text_changed)],
        cluster_changes=list(changes or []),
        annotators_overruled=sum(
            1
            for v in editors.acting_verdicts()
            if v.overrules and not v.confirms and v.key not in editors.text_changed
        ),
        notes=[[v.id_a, v.id_b, v.notes] for v in here if v.notes],
    )


def window_links(window: Window, pairs: pd.DataFrame) -> pd.DataFrame:
    """Every link of the window: the pairs earlier runs kept and today's ``pairs`` (row positions), one row
    per pair (``id_a``, ``id_b`` in id order, the scores, ``run_id``); a pair found again keeps the new
    score. A topic-level link has no rerank score (``similarity`` NaN)."""
    ids = window.ids
    scored = with_scores(pairs)
    today = pd.DataFrame(
        {"id_a": ids[pairs["a"].to_numpy(dtype=np.int64)], "id_b": ids[pairs["b"].to_numpy(dtype=np.int64)]}
    ).assign(**{c: scored[c].to_numpy() for c in SCORES}, run_id=window.run_id)
    parts = [p for p in (window.old_pairs, today) if len(p)]
    pairs_all = pd.concat(parts, ignore_index=True) if parts else empty_pairs()
    if len(pairs_all):
        # in numpy: a row-wise min/max of two string columns runs a Python call per row in some pandas 3
        # releases (18 s over a cold chain's two reports, under cProfile, on a GPU machine's pandas)
        a = pairs_all["id_a"].to_numpy(dtype=object)
        b = pairs_all["id_b"].to_numpy(dtype=object)
        swap = a > b
        lo, hi = np.where(swap, b, a), np.where(swap, a, b)
        pairs_all = pairs_all.assign(id_a=lo, id_b=hi).astype(
            {"id_a": pairs_all["id_a"].dtype, "id_b": pairs_all["id_b"].dtype}
        )
        pairs_all = pairs_all.drop_duplicates(["id_a", "id_b"], keep="last")
        pairs_all = pairs_all.reset_index(drop=True)
    return pairs_all


def _clusters_state(upd: ClusterUpdate, window: Window, topic: TopicUpdate | None = None) -> pd.DataFrame:
    old = (
        window.old_clusters.set_index("cluster_id")
        if window.old_clusters is not None and len(window.old_clusters)
        else None
    )
    touched = set(upd.events["cluster_id"])
    if topic is not None:  # a topic's anchor is kept with the clusters' (its id starts with "t-")
        today = set(window.today_ids)
        touched |= {t for i, t in topic.assignment.items() if i in today}
    rows = []
    anchors = {**upd.anchors, **(topic.anchors if topic is not None else {})}
    for cid, anchor in sorted(anchors.items()):
        known = old is not None and cid in old.index
        rows.append(
            {
                "cluster_id": cid,
                "anchor_undated": anchor.undated,
                "anchor_ns": anchor.ns,
                "anchor_id": anchor.item_id,
                "created_run": old.at[cid, "created_run"] if known else window.run_id,
                "updated_run": window.run_id if (cid in touched or not known) else old.at[cid, "updated_run"],
            }
        )
    return pd.DataFrame(rows) if rows else empty_clusters()


def near_misses(
    below: pd.DataFrame, clustering: Clustering, count: int, unread: Unread | None = None
) -> pd.DataFrame:
    """The report's near misses: the best ``count`` candidate pairs whose items are not in one
    cluster (:mod:`nlsim.report.near_misses`): those below the threshold, and those at or above it that the
    cluster rule left apart (``clustering.cut``, listed first: the highest scores). The ``unread`` pairs
    (read in one order by the rerank stage) that could be among them are read in their second order first,
    so the list is the one reading every pair twice gives."""
    labels = clustering.items["cluster_id"]
    parts = [p for p in (clustering.cut, below) if len(p)]
    candidates = pd.concat(parts, ignore_index=True) if len(parts) > 1 else (parts[0] if parts else below)
    missed = near.near_miss_pairs(candidates, labels, count)
    if unread is not None and len(unread) and count > 0:
        finished = finish_near_misses(unread, missed, near.together_in(labels), count)
        if len(finished):
            candidates = pd.concat([candidates, with_scores(finished)], ignore_index=True)
            missed = near.near_miss_pairs(candidates, labels, count)
    if missed.empty:
        return near.empty_table()
    table = pairs_table(clustering.items, missed, labels)
    return near.near_miss_table(table, clustering.update.assignment)


# --- commit, report -----------------------------------------------------------------------------------


def judge_pairs(report: ReportSettings) -> pd.DataFrame:
    """The scored pairs of ``--judge-pairs`` (of ``--judge-split``) the report is judged on, read before
    the expensive stages (a bad file is refused first)."""
    assert report.judge_pairs is not None
    return scored_pairs(report.judge_pairs, report.judge_split)


@dataclass(frozen=True)
class JudgeScope:
    """What the judge stage judges: a batch run its report, which is its corpus (a scored pair of items
    the corpus lacks is an error: the wrong file); a daily run its whole window, the state's items with
    the day's (a window that holds none of the scored pairs is judged on 0 pairs, with a warning: not
    refused)."""

    window: bool
    corpus: str
    """The corpus as the judgement names it."""
    folder: Path
    """The report folder, named in the judgement."""

    @classmethod
    def batch(cls, settings: DedupConfig) -> JudgeScope:
        return cls(False, settings.input.corpus_named, Path(settings.report.out))

    @classmethod
    def daily(cls, settings: DedupConfig, daily: StateSettings, run_id: str) -> JudgeScope:
        corpus = f"{settings.input.corpus_named} with the window kept in {daily.folder}"
        return cls(True, corpus, daily_report_dir(settings.report.out, run_id))


def judged_items(items: pd.DataFrame) -> pd.DataFrame:
    """A run's items as the judgement matches the scored pairs to them: ``id``, ``title`` and the text
    embedded (``text``)."""
    return items.assign(text=items["raw_text"])[["id", "title", "text"]]


def check_judge_pairs(
    report: ReportSettings, scope: JudgeScope, items: pd.DataFrame, scored: pd.DataFrame
) -> None:
    """Refuse a batch run's ``scored`` pairs none of which belongs to its corpus (``items``) as the judge
    stage would, once the corpus is loaded and before the expensive stages; a daily run's window may hold
    none of them (judged on 0 pairs, with a warning), so it is not checked."""
    if scope.window:
        return
    belongs_to_corpus(
        scored, judged_items(items), pairs=report.judge_pairs, split=report.judge_split, corpus=scope.corpus
    )


def judge(
    report: ReportSettings, scope: JudgeScope, clustering: Clustering, scored: pd.DataFrame
) -> Judgement:
    """The report's clusters judged against the editors' ``scored`` pairs (:func:`judge_pairs`) that belong
    to its items (:func:`nlsim.evaluation.judge.judge_items`), within ``scope`` (:class:`JudgeScope`)."""
    items = judged_items(clustering.items)
    judged = judge_items(
        clustering.window_clusters,
        clustering.pairs_all if scope.window else clustering.report_pairs,
        scored,
        items,
        pairs=report.judge_pairs,
        split=report.judge_split,
        corpus=scope.corpus,
        none_in_items="judge" if scope.window else "refuse",
        topics=clustering.report_topics,
    )
    judged = replace(judged, report=str(scope.folder))
    say(f"judged against {report.judge_pairs}: {describe(judged)}")
    return judged


def report_frame(clustering: Clustering, missed: pd.DataFrame | None = None) -> pd.DataFrame:
    """The items a report shows (members of its clusters and of its topic groups, ends of its pairs and of
    its near misses)."""
    tables = (clustering.report_clusters, clustering.window_clusters, clustering.report_topics)
    members = {m for t in tables for ms in t["member_ids"] for m in ms}
    ends = set(clustering.report_pairs["id_a"]) | set(clustering.report_pairs["id_b"])
    if missed is not None and len(missed):
        ends |= set(missed["id_a"]) | set(missed["id_b"])
    items = clustering.items
    keep = items["id"].isin(members | ends) if len(items) > 0 else []
    shown = ["id", *(c.name for c in columns.shown())]  # what the report shows of an item
    return items.reindex(columns=shown).loc[keep].reset_index(drop=True)


def commit(
    settings: DedupConfig,
    daily: StateSettings,
    window: Window,
    clustering: Clustering,
    model: ModelChoice,
    record: RunRecord,
    missed: pd.DataFrame | None = None,
) -> None:
    """Make the run's window the state's new generation (daily runs)."""
    verdicts, scored = editors_tables(clustering)
    commit_state(
        daily.folder,
        identity=_window_identity(model, settings),
        index=window.index,
        items=clustering.items,
        embeddings=window.embeddings,
        pairs=clustering.pairs_all,
        clusters=clustering.clusters_state,
        as_of=window.as_of,
        run=record.to_dict(),
        report_tables={
            "pairs": clustering.report_pairs,
            "clusters": clustering.report_clusters,
            "window": clustering.window_clusters,
            "frame": report_frame(clustering, missed),
            "near_misses": near.empty_table() if missed is None else missed,
            "topics": clustering.report_topics,
        },
        previous=window.state,
        verdicts=verdicts,
        scored=scored,
    )


def editors_tables(clustering: Clustering) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The editors' verdicts and scored pairs (with their kind of split) as a daily state keeps them, what
    :func:`commit` writes (``None`` for a table without a row)."""
    verdicts = clustering.verdicts.frame() if len(clustering.verdicts) else None
    return verdicts, scored_frame(clustering.scored, clustering.training, clustering.held_out)


def editors(opts: ClusteringSettings, window: Window) -> EditorsInput:
    """The editors' scored pairs and verdicts (``--annotated-pairs``) with those a daily state keeps, read
    before the expensive stages (a bad file is refused first); a verdict given on another text than its
    item carries in the window (its title) does not act, and the run says so."""
    state = window.state
    if state is None:
        read = read_editors(opts.annotated_pairs, None)
    else:
        read = read_editors(opts.annotated_pairs, state.verdicts, state.scored)
    titles = dict(zip(map(str, window.ids), window.items["title"].astype(str), strict=True))
    checked = read.checked_texts(titles)
    if checked.text_changed:
        shown = ", ".join(f"{a}/{b}" for a, b in sorted(checked.text_changed)[:3])
        more = len(checked.text_changed) - 3
        say(
            f"{len(checked.text_changed)} editors' verdict(s) were given on another text than an item of "
            f"theirs carries now ({shown}{f' and {more} more' if more > 0 else ''}): they do not act until "
            "an editor decides on the new text (mark the pair in the report page, in its cluster or by "
            "picking its two items: the export, merged with nlsim annotate merge, is the pair's verdict on "
            "the new text; a pair the page cannot show, in a file of its ids, new texts and score merged "
            "with --overrule and --corpus naming this run's corpus; then give the next run the pair file: "
            "--annotated-pairs, annotated_pairs)"
        )
    return checked


def _index_writer(window: Window, model: ModelChoice, conversion: str) -> Any:
    def write(folder: Path) -> None:
        meta = IndexMeta(
            model_id=model.encoder.model_id,
            fingerprint=model.encoder.fingerprint,
            conversion=conversion,
            dim=int(window.embeddings.shape[1]),
        )
        save_index(folder, window.index, window.ids.tolist(), meta, embeddings=window.embeddings)

    return write


@dataclass(frozen=True)
class Reported:
    """A report written: its folder and the run record its ``run.json`` holds (finished:
    :func:`nlsim.report.files.finished`)."""

    folder: Path
    record: RunRecord


def report(
    settings: DedupConfig,
    window: Window,
    clustering: Clustering,
    model: ModelChoice,
    record: RunRecord,
    missed: pd.DataFrame | None = None,
) -> Reported:
    """Write a batch run's report into ``OUT``, with the FAISS index in ``OUT/index/`` (``run.json`` with
    this stage's time until it is written)."""
    started = time.perf_counter()
    out = settings.report.out
    writer = _index_writer(window, model, settings.model.convert)
    frame = report_frame(clustering, missed)
    sheets = spreadsheet_files(
        clustering.report_pairs, clustering.report_clusters, frame, clustering.report_topics
    )
    record = finished(record, frame, sheets)
    write_report(
        out,
        clustering.report_pairs,
        clustering.report_clusters,
        record,
        frame,
        extra={"index": writer} if settings.report.save_index else None,
        near_misses=missed,
        topics=clustering.report_topics,
        sheets=sheets,
        started=started,
    )
    return Reported(Path(out), record)


def report_daily(
    report: ReportSettings,
    window: Window,
    clustering: Clustering,
    record: RunRecord,
    missed: pd.DataFrame | None = None,
) -> Reported:
    """Write a daily run's report into ``OUT/runs/<run id>/``, with ``OUT/latest`` pointing at it unless the
    run is of a day older than the runs before it (``record.older_day``; ``run.json`` with this stage's
    time until it is written). Returns the folder."""
    started = time.perf_counter()
    frame = report_frame(clustering, missed)
    sheets = spreadsheet_files(
        clustering.report_pairs,
        clustering.report_clusters,
        frame,
        clustering.report_topics,
        window=clustering.window_clusters,
    )
    record = finished(record, frame, sheets)
    folder = publish_daily_report(
        report.out,
        window.run_id,
        clustering.report_pairs,
        clustering.report_clusters,
        frame,
        record,
        window=clustering.window_clusters,
        near_misses=missed,
        topics=clustering.report_topics,
        latest=not record.older_day,
        sheets=sheets,
        started=started,
    )
    return Reported(folder, record)


def replay_report(report: ReportSettings, window: Window, last: RunRecord) -> Reported:
    """Write again the stored report of a run that was already committed (a repeated input, or a run killed
    after its commit), with ``last``, the figures its commit kept (its judgement naming the folder the
    report now goes to)."""
    state = window.state
    assert state is not None and state.last_run is not None
    run_id = state.last_run["run_id"]
    if last.judge is not None:
        last = replace(last, judge=replace(last.judge, report=str(daily_report_dir(report.out, run_id))))
    folder = state.report_dir()
    tables = {n: pd.read_parquet(folder / f"{n}.parquet") for n in ("pairs", "clusters", "window", "frame")}
    missed = folder / "near_misses.parquet"  # absent in a state committed before near misses were kept
    topics = folder / "topics.parquet"  # absent in a state committed before topic groups
    topic_table = pd.read_parquet(topics) if topics.is_file() else None
    sheets = spreadsheet_files(
        tables["pairs"], tables["clusters"], tables["frame"], topic_table, window=tables["window"]
    )
    last = finished(last, tables["frame"], sheets)
    written = publish_daily_report(
        report.out,
        run_id,
        tables["pairs"],
        tables["clusters"],
        tables["frame"],
        last,
        window=tables["window"],
        near_misses=pd.read_parquet(missed) if missed.is_file() else near.empty_table(),
        topics=topic_table,
        latest=not last.older_day,
        sheets=sheets,
    )
    return Reported(written, last)
