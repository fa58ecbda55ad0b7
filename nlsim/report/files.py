"""The near-duplicate report: the tables editors read and the files they come in.

Files (batch run: in ``OUT/``; daily run: in ``OUT/runs/<run id>/``, ``OUT/latest`` pointing at the newest):

- ``pairs.parquet`` / ``pairs.csv``: one row per pair (:data:`PAIRS_SCHEMA`);
- ``clusters.parquet``: one row per cluster (:data:`nlsim.clusters.table.CLUSTERS_SCHEMA`);
  ``members.csv``: one row per cluster member (:data:`MEMBERS_SCHEMA`), for spreadsheet users;
  ``report.xlsx`` holds the three tables;
- ``near_misses.parquet``: the best candidate pairs below the threshold, for editors to review
  (:mod:`nlsim.report.near_misses`);
- ``stories.json``: the day's stories for a CMS or a chat bot (:mod:`nlsim.report.feed`);
- ``index.html`` (:mod:`nlsim.report.html`), ``overview.png`` and ``stories.png`` (:mod:`nlsim.report.plots`),
  ``summary.md``;
  ``learning_curve.png`` when the model folder has one (shown on the page's model card);
- a daily run also publishes the whole window's current clusters: ``window/clusters.parquet`` and
  ``window/members.csv``;
- ``run.json``: the run record (:class:`nlsim.report.record.RunRecord`) and the SHA-256 of every other file.

Each Parquet file has one declared schema, the same for batch and daily runs (timestamps in microseconds,
UTC; scores float32; lists of strings). A batch report is written into a staging folder and moved into
place file by file, ``run.json`` last; a daily report folder appears whole. A failed or killed run leaves
the previous report intact, and a report folder is only written when it is new, empty or nlsim's own.

Example:
    >>> import tempfile, pathlib, pandas as pd
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report"
    >>> frame = pd.DataFrame({"id": ["a", "b"], "title": ["Flood", "Flood!"], "source": ["AP", "AFP"],
    ...                       "published_at": pd.to_datetime([None, None], utc=True)})
    >>> pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.97]})
    >>> from nlsim.clusters.table import batch_clusters
    >>> labels, clusters = batch_clusters(frame, pairs)
    >>> record = RunRecord(model="m")
    >>> paths = write_report(out, pairs_table(frame, pairs, labels), clusters, record, frame=frame)
    >>> sorted(p.name for p in paths.values())[:4]
    ['clusters.parquet', 'index.html', 'members.csv', 'near_misses.parquet']
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from nlsim.clusters.order import order_rank
from nlsim.clusters.table import CLUSTERS_SCHEMA
from nlsim.faults import fault_point
from nlsim.io import columns
from nlsim.io.atomic import (
    atomic_dir,
    atomic_write_text,
    file_sha256,
    fsync_dir,
    make_temp_dir,
    naming,
    publish_files,
    remove_tree,
)
from nlsim.io.lock import GUARD_NAME, RunLock, held_here
from nlsim.io.ownership import claim_folder, traceless
from nlsim.io.records import NotAJsonObject, read_json_object
from nlsim.io.report_folder import PUBLISHING, check_report_replaceable, recorded_files
from nlsim.progress import say
from nlsim.report.feed import FEED, write_stories_json
from nlsim.report.html import render_html
from nlsim.report.near_misses import NEAR_MISSES_SCHEMA
from nlsim.report.page import page_zone
from nlsim.report.plots import render_overview_png, render_stories_png
from nlsim.report.record import RunRecord
from nlsim.report.scores import with_scores
from nlsim.report.spreadsheet import SheetFiles, write_csv, write_xlsx, written_changes
from nlsim.report.summary import render_markdown

PAIRS_SCHEMA = columns.table("pairs").schema
"""``pairs.parquet`` (columns declared in :mod:`nlsim.io.columns`): ``similarity`` is the score the threshold
applies to (the rerank score when the model has a reranker, else the cosine); ``cosine`` is the
bi-encoder's; ``cross_encoder`` is null without a reranker. ``id_a`` is the earlier item by the order rule
(:mod:`nlsim.clusters.order`)."""
MEMBERS_SCHEMA = columns.table("members").schema
"""``members.csv``: one row per member of each cluster in the report, earliest first."""
SCHEMAS = {
    "pairs": PAIRS_SCHEMA,
    "clusters": CLUSTERS_SCHEMA,
    "members": MEMBERS_SCHEMA,
    "near_misses": NEAR_MISSES_SCHEMA,
}
"""The schemas of the report's tables as first declared (the files follow :func:`nlsim.io.columns.table`)."""
TABLE_FILES = (
    "pairs.parquet",
    "clusters.parquet",
    "topics.parquet",
    "pairs.csv",
    "members.csv",
    "report.xlsx",
    "near_misses.parquet",
    FEED,
)
PAGE_FILES = ("index.html", "summary.md", "overview.png", "stories.png")

LEARNING_CURVE = "learning_curve.png"
RUNS_DIR = "runs"
LATEST = "latest"


def conform(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """``frame`` as an Arrow table of ``schema`` (missing columns null, extra columns dropped)."""
    return columns.conform(frame, schema)


def read_table(path: str | Path, name: str) -> pd.DataFrame:
    """A report Parquet file as pandas (``name``: pairs, clusters or near_misses)."""
    return pd.read_parquet(path, schema=columns.table(name).schema)


def pairs_table(frame: pd.DataFrame, pairs: pd.DataFrame, labels: pd.Series) -> pd.DataFrame:
    """Turn row-position pairs (``a``, ``b``, ``similarity`` [, ``cosine``, ``cross_encoder``, ...]) into the
    report's ``pairs`` table, each column as :mod:`nlsim.io.columns` declares it: the items' ids and what
    the report shows of each (``item.<column>``, side A or B by the name's ending), the scores and any
    other column of ``source="score"`` from ``pairs`` (one it lacks empty: NaN, false), the pair's
    cluster (``labels``: each row's); earliest item first."""
    a = pairs["a"].to_numpy(dtype=np.int64)
    b = pairs["b"].to_numpy(dtype=np.int64)
    rank = order_rank(frame["id"].tolist(), frame["published_at"])
    swap = rank[a] > rank[b]
    ends = {"a": np.where(swap, b, a), "b": np.where(swap, a, b)}
    scored = with_scores(pairs)
    spec = columns.table("pairs")
    out = pd.DataFrame({c.name: _pair_column(c, frame, scored, labels, ends) for c in spec.columns})
    for c in spec.columns:
        if c.format == "time":
            out[c.name] = pd.to_datetime(out[c.name], utc=True)
    out = out.sort_values(
        ["cluster_id", "similarity", "id_a", "id_b"], ascending=[True, False, True, True], kind="mergesort"
    )
    return out.reset_index(drop=True)


def _pair_column(
    c: columns.Column,
    frame: pd.DataFrame,
    scored: pd.DataFrame,
    labels: pd.Series,
    ends: dict[str, np.ndarray],
) -> Any:
    """One column of the pairs table (:func:`pairs_table`)."""
    rows = ends["b" if c.name.endswith("_b") else "a"]  # a column of the pair as a whole: of its item A
    field = c.item_field
    if field is not None:
        if field not in frame:
            return np.full(len(rows), None if c.format == "time" else "", dtype=object)
        if c.format == "time":
            return frame[field].to_numpy()[rows]
        return frame[field].astype(str).to_numpy()[rows]
    if c.source == "cluster":
        return labels.to_numpy()[rows] if len(rows) else np.array([], dtype=object)
    if c.name in scored:
        column = scored[c.name]
        return column.fillna(False).astype(bool).to_numpy() if c.format == "flag" else column.to_numpy()
    if c.format == "flag":
        return np.zeros(len(rows), bool)
    if c.format == "number":
        return np.full(len(rows), np.nan, np.float32)
    return np.full(len(rows), None, dtype=object)


def members_table(clusters: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """One row per member of each cluster (for spreadsheets): cluster, item, whether it is the
    representative and whether it joined in this run, then what the report shows of each item (title,
    source, link, time: the ``items`` columns marked ``shown``)."""
    spec = columns.table("members")
    item_cols = [c for c in spec.columns if c.source.startswith("item.") and c.name != "item_id"]
    ids = frame["id"].astype(str).tolist()
    rows_of = {i: n for n, i in enumerate(ids)}
    values = {}
    for c in item_cols:
        if c.format == "time":
            values[c.name] = pd.to_datetime(frame[c.name], utc=True).tolist() if c.name in frame else None
        else:
            values[c.name] = frame[c.name].astype(str).tolist() if c.name in frame else None
    rows = []
    for c in clusters.itertuples():
        added = set(c.added_ids) if hasattr(c, "added_ids") else set()
        for m in c.member_ids:
            r = rows_of.get(m)
            item = {
                k: (None if col.format == "time" else "") if v is None or r is None else v[r]
                for (k, v), col in zip(values.items(), item_cols, strict=True)
            }
            rows.append(
                {
                    "cluster_id": c.cluster_id,
                    "topic_id": getattr(c, "topic_id", None),
                    "item_id": m,
                    "representative": m == c.representative,
                    "added": m in added,
                    **item,
                }
            )
    out = pd.DataFrame(rows, columns=spec.names)
    for c in item_cols:
        if c.format == "time":
            out[c.name] = pd.to_datetime(out[c.name], utc=True)
    return out


def spreadsheet_files(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    frame: pd.DataFrame,
    topics: pd.DataFrame | None = None,
    window: pd.DataFrame | None = None,
) -> dict[str, dict[str, pd.DataFrame]]:
    """The report's spreadsheet files, each with the tables it holds
    (:data:`nlsim.report.spreadsheet.SheetFiles`): ``pairs.csv``, ``members.csv``, ``report.xlsx`` (sheets
    ``clusters``, ``topics``, ``members``, ``pairs``) and, with a daily run's ``window`` clusters,
    ``window/members.csv``."""
    members = members_table(clusters, frame)
    topics = topics if topics is not None else columns.table("topics").empty()
    files = {
        "pairs.csv": {"pairs": pairs},
        "members.csv": {"members": members},
        "report.xlsx": {"clusters": clusters, "topics": topics, "members": members, "pairs": pairs},
    }
    if window is not None:
        files["window/members.csv"] = {"members": members_table(window, frame)}
    return files


def _write_sheets(folder: Path, files: dict[str, dict[str, pd.DataFrame]], zone: str) -> None:
    """The spreadsheet files (:func:`spreadsheet_files`): CSV (UTF-8 with BOM) and XLSX, each table as its
    column table says (:mod:`nlsim.io.columns`; times in ``zone``, the run's); the user's text is kept as
    text (:mod:`nlsim.report.spreadsheet`)."""
    for name, tables in files.items():
        sheets = {t: columns.sheet_frame(table, columns.table(t), zone) for t, table in tables.items()}
        if name.endswith(".xlsx"):
            write_xlsx(sheets, folder / name)
        else:
            write_csv(next(iter(sheets.values())), folder / name)


def _no_items() -> pd.DataFrame:
    return pd.DataFrame({"id": [], "title": [], "source": [], "published_at": pd.to_datetime([], utc=True)})


def copy_learning_curve(record: RunRecord, folder: Path) -> str | None:
    """Copy the model folder's ``learning_curve.png`` (the model card's) into the report; returns its name
    there, ``None`` when the model has none."""
    source = record.info.card.learning_curve
    if not source or not Path(source).is_file():
        return None
    shutil.copyfile(source, folder / LEARNING_CURVE)
    return LEARNING_CURVE


def finished(record: RunRecord, frame: pd.DataFrame | None, sheets: SheetFiles) -> RunRecord:
    """The run record as its report states it: when the report was written and which text cells of the
    spreadsheet files the report writes (``sheets``: :func:`spreadsheet_files` of the report's tables;
    ``frame``: the items it shows) were changed, in which files
    (:func:`nlsim.report.spreadsheet.written_changes`). A record already finished is the report's as it is:
    the run finishes its record before the report is written (the record it returns is the one ``run.json``
    holds), and passes the same ``sheets`` on to be written."""
    if record.finished_at is not None:
        return record
    frame = frame if frame is not None else _no_items()
    changes = written_changes(sheets, frame)
    return replace(
        record, finished_at=datetime.now(UTC).isoformat(timespec="seconds"), spreadsheet_changes=changes
    )


def write_files(
    folder: Path,
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    frame: pd.DataFrame | None = None,
    window: pd.DataFrame | None = None,
    extra: dict[str, Any] | None = None,
    near_misses: pd.DataFrame | None = None,
    topics: pd.DataFrame | None = None,
    sheets: SheetFiles | None = None,
    started: float | None = None,
) -> list[str]:
    """Write every report file into the empty ``folder``; ``run.json`` last. Returns the file names.
    ``sheets``: the spreadsheet files' tables the run finished its record with (:func:`finished`), made
    here from the others when not given. ``started``: when the run's report stage began
    (``time.perf_counter()``): ``run.json``'s timings then hold that stage's time until ``run.json`` is
    written, as ``report`` (:func:`with_report_time`).

    ``record`` is written as the run made it (:func:`finished` first when it is not yet).

    ``window``: the whole window's clusters (daily runs), written to ``window/``. ``extra``: more files,
    as ``{name: writer(path)}`` (the batch report's ``index/`` folder). ``near_misses``: the pairs below the
    threshold for review (none when not given). ``topics``: the topic groups (``topics.parquet``; none when
    not given).
    """
    if frame is None:
        frame = _no_items()
    # its counts are the run's (nlsim.dedup.run.run_record), never made here
    if sheets is None:
        sheets = spreadsheet_files(pairs, clusters, frame, topics, window)
    record = finished(record, frame, sheets)
    topics = topics if topics is not None else columns.table("topics").empty()
    zone = page_zone(record.timezone).key  # the spreadsheets' times are the run's
    import pyarrow.parquet as pq  # deferred: heavy or optional, loaded only when needed

    for name, table in (("pairs", pairs), ("clusters", clusters), ("topics", topics)):
        pq.write_table(columns.conform(table, columns.table(name)), folder / f"{name}.parquet")
    _write_sheets(folder, {n: t for n, t in sheets.items() if "/" not in n}, zone)

    missed = near_misses if near_misses is not None else columns.table("near_misses").empty()
    pq.write_table(columns.conform(missed, columns.table("near_misses")), folder / "near_misses.parquet")
    write_stories_json(folder / FEED, clusters, record, frame)
    names = list(TABLE_FILES)
    if window is not None:
        (folder / "window").mkdir()
        pq.write_table(
            columns.conform(window, columns.table("clusters")), folder / "window" / "clusters.parquet"
        )
        _write_sheets(folder, {n: t for n, t in sheets.items() if n.startswith("window/")}, zone)
        names += ["window/clusters.parquet", "window/members.csv"]
    curve = copy_learning_curve(record, folder)
    if curve:
        names.append(curve)
    page = render_html(
        pairs, clusters, record, frame, learning_curve=curve, near_misses=missed, topics=topics
    )
    (folder / "index.html").write_text(page, encoding="utf-8")
    (folder / "summary.md").write_text(render_markdown(pairs, clusters, record), encoding="utf-8")
    render_overview_png(pairs, clusters, record, folder / "overview.png")
    render_stories_png(clusters, record, folder / "stories.png")
    names += list(PAGE_FILES)
    for name, writer in (extra or {}).items():
        writer(folder / name)
        names.append(name)
    fault_point("report-write")
    written = with_report_time(record, started)
    (folder / "run.json").write_text(
        json.dumps(
            {**written.to_dict(), "files": _report_hashes(folder, names)},
            indent=2,
            default=str,
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    return names


def _report_hashes(folder: Path, names: list[str]) -> dict[str, str]:
    """The SHA-256 of each file of ``folder`` that ``names`` names, a folder's files one by one, by their
    path in ``folder``: what ``run.json`` records of its report."""
    hashes = {}
    for name in names:
        path = folder / name
        if path.is_dir():
            for p in sorted(path.rglob("*")):
                if p.is_file():
                    hashes[p.relative_to(folder).as_posix()] = file_sha256(p)
        else:
            hashes[name] = file_sha256(path)
    return hashes


def with_report_time(record: RunRecord, started: float | None) -> RunRecord:
    """``record`` with the report stage's time so far (``started``: when it began, ``time.perf_counter()``)
    as its ``report`` timing, what ``run.json`` holds; ``record`` as it is when ``started`` is ``None``."""
    if started is None:
        return record
    spent = round(time.perf_counter() - started, 4)
    return replace(record, timings_s={**record.timings_s, "report": spent})


def write_report(
    out_dir: str | Path,
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    frame: pd.DataFrame | None = None,
    extra: dict[str, Any] | None = None,
    near_misses: pd.DataFrame | None = None,
    topics: pd.DataFrame | None = None,
    sheets: SheetFiles | None = None,
    started: float | None = None,
) -> dict[str, Path]:
    """A batch report: every file into ``out_dir`` (staged, then moved in, ``run.json`` last). Returns the
    paths by name. ``out_dir`` must be new, empty or an nlsim report folder. ``started``: when the report
    stage began (:func:`write_files`)."""
    out = Path(out_dir)
    claim_folder(out, "report", what="report folder")
    # two runs into one folder: the second is refused, by name (a batch run holds it from its start:
    # hold_report_folder)
    held = out.resolve() in _HELD and held_here(out)
    lock = contextlib.nullcontext() if held else RunLock(out, what="report folder")
    with lock:
        finish_publishing(out)
        staging = make_temp_dir(out, ".staging-")
        try:
            with naming(out, "writing the report; the report that was there is left as it was"):
                names = write_files(
                    staging,
                    pairs,
                    clusters,
                    record,
                    frame,
                    extra=extra,
                    near_misses=near_misses,
                    topics=topics,
                    sheets=sheets,
                    started=started,
                )
            top = sorted({n.split("/")[0] for n in names})
            # what it replaces is nlsim's, unchanged, and of the kind it writes (a file for a file)
            check_report_replaceable(out, top, what="report folder", staged=staging)
            atomic_write_text(staging / PUBLISHING, "")
        except BaseException:
            remove_tree(staging)
            raise
        earlier = recorded_files(out) or {}
        # from here the staging folder holds the whole report: a move that fails or is killed half way is
        # finished by the next run into this folder (finish_publishing), never left mixed
        publish_files(staging, out, [*top, "run.json"], last="run.json")
        remove_tree(staging)
        sweep_staging(out)
        drop_earlier_files(out, earlier, top)
        for gone in drop_chain_record(out):
            say(f"removed {gone}: an nlsim pipeline's record of the report this one replaced")
    return {n: out / n for n in [*names, "run.json"] if "/" not in n}


CHAIN_RECORD = "pipeline.json"
"""The record ``nlsim pipeline`` writes beside its report, once the report is written."""
CHAIN_PAGE = "pipeline.md"
"""The chain's before/after table and judgement, beside its record (:data:`CHAIN_RECORD`)."""
CHAIN_PAGE_TITLE = "# nlsim pipeline\n\n"
"""How the chain's page (:data:`CHAIN_PAGE`) begins."""


def is_chain_record(path: Path) -> bool:
    """True for a :data:`CHAIN_RECORD` the chain wrote: a JSON object with its ``decision``."""
    try:
        data = read_json_object(path)
    except (OSError, ValueError):
        return False
    return "decision" in data


def is_chain_page(path: Path) -> bool:
    """True for a :data:`CHAIN_PAGE` the chain wrote: a page under its title."""
    try:
        return path.read_text(encoding="utf-8").startswith(CHAIN_PAGE_TITLE)
    except (OSError, ValueError):
        return False


def drop_chain_record(folder: Path) -> list[Path]:
    """Remove a chain's record from the report ``folder`` (its :data:`CHAIN_RECORD` and :data:`CHAIN_PAGE`)
    once a new report replaced the one they describe (``nlsim dedup`` into the folder, a chain's first
    report): they would name a model, a promotion and a judgement the folder no longer holds; the chain
    writes its own after its report. Only files that read as the chain wrote them
    (:func:`is_chain_record`, :func:`is_chain_page`); returns those removed."""
    removed = []
    for path, ours in ((folder / CHAIN_RECORD, is_chain_record), (folder / CHAIN_PAGE, is_chain_page)):
        if path.is_file() and not path.is_symlink() and ours(path):
            path.unlink()
            removed.append(path)
    return removed


def drop_earlier_files(out: Path, earlier: dict[str, str], written: list[str]) -> list[str]:
    """Remove from ``out`` the files the earlier report listed (``earlier``: its ``run.json``'s names and
    SHA-256) under a top-level name the new report does not write (``written``): the earlier model's
    ``learning_curve.png`` must not stand beside a report of another model. Only a file that still has the
    SHA-256 the earlier run recorded is removed (what nlsim wrote, unchanged). Returns the names removed."""
    removed = []
    for name, digest in sorted(earlier.items()):
        path = out / name
        if name.split("/")[0] in written or path.is_symlink() or not path.is_file():
            continue
        if file_sha256(path) == digest:
            path.unlink()
            removed.append(name)
            with contextlib.suppress(OSError):  # a folder of the earlier report's, empty now
                if path.parent != out:
                    path.parent.rmdir()
    return removed


_HELD: set[Path] = set()
"""The report folders this process holds for a run (:func:`hold_report_folder`)."""


@contextlib.contextmanager
def hold_report_folder(out_dir: str | Path, check: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold a batch run's report folder from the run's start to its end: a second run into the folder is
    refused before it does any work, not after it (:class:`~nlsim.io.lock.RunLock`, ``lock.json``), and
    :func:`write_report` inside finds the lock its own. A run that fails or is stopped leaves nothing of the
    hold behind: its lock is released, and the folder is made (and marked) only for the run, so a new one
    is removed again, and a user's empty folder is left as empty as it was. ``check`` runs first, inside
    the hold (a run's checks of its paths, which may claim the folder themselves). A hold inside a hold of
    the same folder (a chain's report runs, inside the chain's hold) is the outer one.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "report"
        >>> try:
        ...     with hold_report_folder(out):
        ...         raise ValueError("a bad row")
        ... except ValueError:
        ...     pass
        >>> out.exists()
        False
    """
    out = Path(out_dir)
    if out.resolve() in _HELD and held_here(out):  # held already, for a whole chain: one hold
        if check is not None:
            check()
        yield
        return
    with traceless([out], also=(GUARD_NAME,)):  # its marker and lock guard, and a folder it made
        if check is not None:
            check()
        claim_folder(out, "report", what="report folder")
        with RunLock(out, what="report folder"):
            _HELD.add(out.resolve())
            try:
                yield
            finally:
                _HELD.discard(out.resolve())


def finish_publishing(out: Path) -> list[str]:
    """Finish the move of a report a killed run left half moved into ``out``: its staging folder holds
    every file (``PUBLISHING`` is written only then), so the files still in it are moved in, ``run.json``
    last, and the folder is whole and new again. Returns the staging folders finished."""
    done = []
    for staging in sorted(out.glob(".staging-*")):
        if staging.is_dir() and not staging.is_symlink() and (staging / PUBLISHING).is_file():
            names = sorted(p.name for p in staging.iterdir() if p.name != PUBLISHING)
            publish_files(staging, out, names, last="run.json" if "run.json" in names else None)
            remove_tree(staging)
            done.append(staging.name)
    return done


def sweep_staging(folder: Path) -> list[str]:
    """Remove staging and superseded folders a killed report write left in ``folder`` (names nlsim uses)."""
    removed = []
    for child in folder.iterdir() if folder.is_dir() else ():
        if (
            child.is_dir()
            and not child.is_symlink()
            and (
                child.name.startswith((".staging-",))
                or (child.name.startswith(".") and ".old-" in child.name)
                or (child.name.startswith(".") and ".tmp-" in child.name)
            )
        ):
            remove_tree(child)
            removed.append(child.name)
    return removed


def daily_report_dir(out: str | Path, run_id: str) -> Path:
    """Where the daily report of run ``run_id`` is published: ``OUT/runs/<run_id>/``."""
    return Path(out) / RUNS_DIR / run_id


def publish_daily_report(
    out: str | Path,
    run_id: str,
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    frame: pd.DataFrame,
    record: RunRecord,
    window: pd.DataFrame | None = None,
    near_misses: pd.DataFrame | None = None,
    topics: pd.DataFrame | None = None,
    latest: bool = True,
    sheets: SheetFiles | None = None,
    started: float | None = None,
) -> Path:
    """Write a daily report to ``OUT/runs/<run_id>/`` (whole or not at all) and point ``OUT/latest`` (a
    symlink) and ``OUT/LATEST`` at it; a reader or a killed run never sees a mixed report. ``latest=False``
    (the report of a day older than the runs before it) leaves ``OUT/latest`` where it is. ``started``:
    when the report stage began (:func:`write_files`)."""
    out = Path(out)
    claim_folder(out, "daily-report", what="report folder")
    final = daily_report_dir(out, run_id)
    runs = final.parent
    runs.mkdir(parents=True, exist_ok=True)
    check_report_replaceable(final, ["."], what="report folder")  # a run's report again: only nlsim's files
    with atomic_dir(final) as tmp, naming(final, "writing the day's report"):
        write_files(
            tmp,
            pairs,
            clusters,
            record,
            frame,
            window=window,
            near_misses=near_misses,
            topics=topics,
            sheets=sheets,
            started=started,
        )
    fault_point("report-publish")
    if latest:
        link_tmp = out / f".latest-{uuid.uuid4().hex[:8]}"
        os.symlink(Path(RUNS_DIR) / run_id, link_tmp)
        os.replace(link_tmp, out / LATEST)
        atomic_write_text(out / "LATEST", run_id + "\n")
    fsync_dir(out)
    sweep_staging(runs)
    for child in out.iterdir():  # links a killed switch left behind
        if child.name.startswith(".latest-") and child.is_symlink():
            child.unlink()
    return final


def verify_report(out_dir: str | Path) -> dict[str, Any]:
    """Check that the report files match the hashes in ``run.json``; returns the run record.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp())
        >>> _ = (out / "pairs.csv").write_text("id_a,id_b", encoding="utf-8")
        >>> record = {"files": {"pairs.csv": file_sha256(out / "pairs.csv")}}
        >>> _ = (out / "run.json").write_text(json.dumps(record), encoding="utf-8")
        >>> verify_report(out) == record
        True
        >>> _ = (out / "pairs.csv").write_text("cut short", encoding="utf-8")
        >>> verify_report(out)
        Traceback (most recent call last):
        ...
        ValueError: ... does not match run.json (a partial write?)
    """
    out = Path(out_dir)
    path = out / "run.json"
    try:
        run = read_json_object(path, "the run's record")
    except NotAJsonObject as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not isinstance(run.get("files"), dict):
        raise ValueError(f"{path}: lists no report files with their SHA-256")
    for name, digest in run["files"].items():
        if not (out / name).is_file():
            raise ValueError(f"{out / name}: listed in run.json, missing (a partial copy, or deleted since?)")
        if file_sha256(out / name) != digest:
            raise ValueError(f"{out / name} does not match run.json (a partial write?)")
    return run
