"""The state folder of incremental runs: kept items, their embeddings and index, pairs and cluster ids.

Layout::

    STATE/
      .nlsim.json                   marker: this folder is an nlsim state (nlsim.io.ownership)
      MANIFEST.json                 the current generation, its identity, file checksums (written last)
      lock.json, .lock.guard        the run lock (nlsim.io.lock)
      generations/g000003-1a2b3c/   one immutable folder per committed run
        index/                      FAISS index + ids + embeddings + meta.json (nlsim.search.index.save_index)
        items.parquet               one row per kept item, aligned with the index rows (its text included)
        pairs.parquet               pairs among kept items (id_a, id_b, similarity, cosine, cross_encoder,
        run_id)
        clusters.parquet            cluster or topic id -> key member order key, created/updated run
        verdicts.parquet            the editors' verdicts its clusters honour (nlsim.clusters.verdicts)
        scored.parquet              the pairs editors have scored: never offered for review again
        report/                     the report tables of the run that made this generation
        run.json                    that run's figures (counts, timings, model, threshold)
      runs/<run_id>.json            every committed run's figures

A run writes a *new* generation folder (built whole, then renamed into place), then replaces
``MANIFEST.json`` atomically; that rename is the commit. A run killed at any point before it leaves the
previous manifest pointing at the previous, untouched generation; the next run removes the half-written
folder. Old generations are deleted after a commit (the previous one is kept).

Only what nlsim provably wrote is ever deleted: generation folders whose names follow nlsim's pattern,
in a folder carrying the state marker, and only once the manifest and the files of the generation it
names have been verified (an edited manifest never gets the real current generation swept). A folder
with data but neither marker nor manifest is refused; a marked state whose manifest is missing is refused
with the way to rebuild it, unless all it holds is what a killed *first* run leaves (generation-1
folders, no committed run), which is swept.

Everything the manifest lists is checked on open (size and SHA-256); so is the identity of the vectors
(model id and fingerprint, dimension, conversion, text fields, threshold, reranker) when asked: a truncated
file, or a manifest of an unknown format, raises :class:`~nlsim.errors.StateError` that says how to rebuild
(``--rebuild-state``: the broken state is moved aside and a fresh one is built from the corpus).

Example:
    >>> import tempfile
    >>> st = open_state(tempfile.mkdtemp())
    >>> st.is_empty, st.generation
    (True, 0)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from nlsim.dedup.editors import SCORED_COLUMNS
from nlsim.errors import ConfigError, OutputError, StateError
from nlsim.evaluation.calibration import Calibration
from nlsim.evaluation.judge import Window
from nlsim.faults import fault_point
from nlsim.io import columns
from nlsim.io.atomic import atomic_dir, atomic_write_text, file_sha256, remove_tree
from nlsim.io.ownership import MARKER, read_marker, resolved, write_marker
from nlsim.io.records import field_problems, misfit, mistyped_fields, read_json_object, required_fields
from nlsim.progress import counted
from nlsim.report.record import RunRecord
from nlsim.search.index import IndexMeta, load_index, save_index

FORMAT = "nlsim-state"
FORMAT_VERSION = 2
MANIFEST = "MANIFEST.json"
GENERATIONS = "generations"
RUNS = "runs"
GENERATION_NAME = re.compile(
    r"^(\.g\d{6}-[0-9a-f]{6}\.tmp-\w+|\.g\d{6}-[0-9a-f]{6}\.old-\w+|g\d{6}-[0-9a-f]{6})$"
)
"""Names of the generation folders nlsim writes (finished, or left half-written by a killed run)."""
GENERATION_ENTRIES = frozenset(
    {
        "index",
        "items.parquet",
        "pairs.parquet",
        "clusters.parquet",
        "verdicts.parquet",
        "scored.parquet",
        "report",
        "run.json",
    }
)
"""What a generation folder holds (:func:`_write_generation`); a killed write leaves some of them."""
LOCK_FILES = {"lock.json", ".lock.guard"}
FIRST_GENERATION = re.compile(r"^\.?g000001-[0-9a-f]{6}(\.(tmp|old)-\w+)?$")
"""Names of the folders a killed first run can leave (its generation 1, finished or not)."""

PAIR_COLUMNS = (*(c.name for c in (*columns.PAIR_ENDS, *columns.SCORES)), "run_id")
CLUSTER_COLUMNS = ("cluster_id", "anchor_undated", "anchor_ns", "anchor_id", "created_run", "updated_run")
LATER_ITEM_COLUMNS = ("topic_id",)
"""The items' columns declared after this state format: a state kept before reads them as empty."""
REPORT_PAIR_COLUMNS = (
    *("id_a", "id_b", "similarity", "cosine", "cross_encoder", "cluster_id"),
    *(f"{name}_{end}" for name in ("title", "source", "url", "published_at") for end in "ab"),
)
"""The columns of the report's pairs every state keeps (``exact_copy`` was declared after this state format:
the report of a state kept before is written again without it, as its run wrote it)."""
REPORT_CLUSTER_COLUMNS = (
    *("cluster_id", "status", "size", "representative", "representative_title", "member_ids", "added_ids"),
    *("absorbed", "sources", "first_published", "last_published", "max_similarity", "mean_similarity"),
)
"""The columns of the report's clusters (and of the window's) every state keeps (``topic_id`` and
``weakest_link`` were declared after this state format: as for :data:`REPORT_PAIR_COLUMNS`)."""
VERDICT_COLUMNS = ("id_a", "id_b", "score", "split", "annotator", "source", "decided_at")
"""The columns of the editors' verdicts every state that keeps them holds. Their ``pair_id`` is read again
from the two ids when a table lacks it; ``sha256_a``, ``sha256_b`` and ``earlier`` were declared after this
state format (a state kept before reads them as empty: no text hashes, no earlier decisions), and ``notes``
is written only while a verdict has a note (:meth:`nlsim.clusters.verdicts.Verdicts.frame`)."""
KEPT_COLUMNS: dict[str, tuple[str, ...]] = {
    "items.parquet": tuple(n for n in columns.ITEMS.names if n not in LATER_ITEM_COLUMNS),
    "pairs.parquet": PAIR_COLUMNS,
    "clusters.parquet": CLUSTER_COLUMNS,
    "verdicts.parquet": VERDICT_COLUMNS,
    "scored.parquet": SCORED_COLUMNS,
    "report/pairs.parquet": REPORT_PAIR_COLUMNS,
    "report/clusters.parquet": REPORT_CLUSTER_COLUMNS,
    "report/window.parquet": REPORT_CLUSTER_COLUMNS,
    "report/frame.parquet": ("id",),
}
"""The columns every generation of this state format holds in its tables (the editors' two when it keeps
them, the report tables its last run's report is written again from): one missing is damage (a table
edited by hand), refused by name (:func:`check_columns`)."""

DEFINED = frozenset({"copy_key", "markup", "series_veto"})
"""The search settings whose absence from a state's identity says how the state was made (the first copy key,
HTML read as words, the series veto on), not that it was made before they were kept: a state whose identity
keeps no search setting at all differs from a run by these alone (:meth:`StateIdentity.differences`)."""

ABSENT = {"series_veto": True}
"""What a search setting absent from an identity reads as, where its absence says it (the series veto: kept
only when a run with a reranker turned it off, ``--no-series-veto``); any other absent setting reads as
``None``."""


@dataclass(frozen=True)
class StateIdentity:
    """What the kept vectors and pairs were made with."""

    model_id: str
    fingerprint: str
    dim: int
    conversion: str
    text_fields: tuple[str, ...]
    threshold: float
    reranker: str = ""
    topic_threshold: float | None = None
    """The topic groups' threshold (``None``: no topic groups): the kept pairs reach down to it."""
    search: dict[str, Any] | None = None
    """How the kept pairs were searched: ``k``, ``window_hours`` and ``copy_key``, the definition of an exact
    copy (:data:`nlsim.clusters.copies.COPY_KEY_VERSION`; absent: a state written before it was kept, whose
    copies the first definition grouped), and ``markup``, how the embedded texts' HTML and control and
    format characters were read (:data:`nlsim.io.cells.SHOWN_TEXT_VERSION`; absent: HTML as words, and the
    window is embedded again; 1: the control and format characters as written, embedded again too), and
    ``series_veto``, ``False`` when the kept pairs were rescored by a reranker without the series veto
    (absent: with it, or without a reranker) (``None``: a state written before any was kept: its ``k`` and
    ``window_hours`` taken to match, its ``copy_key`` and ``markup`` absent, as they were then, its series
    veto on, :data:`DEFINED`)."""

    def differences(self, other: StateIdentity) -> list[str]:
        """Human-readable differences, empty when the two match."""
        out = []
        names = ("model_id", "fingerprint", "dim", "conversion", "text_fields", "threshold", "reranker")
        for name in (*names, "topic_threshold"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if name == "topic_threshold" and (mine is None or theirs is None):
                same = mine is None and theirs is None
            elif name in ("threshold", "topic_threshold"):
                same = abs(float(mine) - float(theirs)) < 1e-9
            else:
                same = tuple(mine) == tuple(theirs) if name == "text_fields" else mine == theirs
            if not same:
                out.append(f"{name}: state has {mine!r}, this run uses {theirs!r}")
        if other.search is not None:
            # a state kept before any search setting was is older than the copy key and the reading of HTML
            # too: its k and window hours read as this run's, its copies and vectors as the first ones
            kept = self.search if self.search is not None else {}
            names = set(other.search) | set(kept) if self.search is not None else set(other.search) & DEFINED
            for name in sorted(names):
                mine, theirs = kept.get(name, ABSENT.get(name)), other.search.get(name, ABSENT.get(name))
                if mine != theirs:
                    out.append(f"{name}: state has {mine!r}, this run uses {theirs!r}")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StateIdentity:
        return cls(
            model_id=str(data["model_id"]),
            fingerprint=str(data["fingerprint"]),
            dim=int(data["dim"]),
            conversion=str(data["conversion"]),
            text_fields=tuple(data["text_fields"]),
            threshold=float(data["threshold"]),
            reranker=str(data.get("reranker") or ""),
            topic_threshold=None if data.get("topic_threshold") is None else float(data["topic_threshold"]),
            search=dict(data["search"]) if isinstance(data.get("search"), dict) else None,
        )


def empty_items() -> pd.DataFrame:
    """The kept items with no row (the ``items`` table, :mod:`nlsim.io.columns`)."""
    return columns.table("items").empty()


def empty_pairs() -> pd.DataFrame:
    """The kept pairs with no row: the two items and the scores of the pairs tables (a link kept for the
    topic groups alone has no rerank score), and the run that found the pair."""
    return pd.DataFrame(
        {
            **{c.name: pd.Series(dtype=c.dtype) for c in (*columns.PAIR_ENDS, *columns.SCORES)},
            "run_id": pd.Series(dtype=object),
        }
    )


def empty_clusters() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "cluster_id": pd.Series(dtype=object),
            "anchor_undated": pd.Series(dtype="int64"),
            "anchor_ns": pd.Series(dtype="int64"),
            "anchor_id": pd.Series(dtype=object),
            "created_run": pd.Series(dtype=object),
            "updated_run": pd.Series(dtype=object),
        }
    )


@dataclass
class State:
    """A loaded state (or an empty one). ``items`` rows are aligned with ``embeddings`` and the index rows.

    ``items`` also carries ``cluster_id`` (None for items in no cluster).
    """

    folder: Path
    generation: int = 0
    generation_dir: Path | None = None
    identity: StateIdentity | None = None
    items: pd.DataFrame = field(default_factory=empty_items)
    embeddings: np.ndarray | None = None
    index: Any = None
    pairs: pd.DataFrame = field(default_factory=empty_pairs)
    clusters: pd.DataFrame = field(default_factory=empty_clusters)
    verdicts: pd.DataFrame | None = None
    """The editors' verdicts kept for later runs (``None``: none kept, or a state written before)."""
    scored: pd.DataFrame | None = None
    """The pairs editors have scored (``id_a``, ``id_b``, and their kind of split, ``kind``: a state written
    before lacks it), kept for later runs' review queues (``None``: none kept, or a state written before)."""
    as_of: pd.Timestamp | None = None
    last_run: dict[str, Any] | None = None
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return self.generation == 0

    def report_dir(self) -> Path | None:
        """The stored report tables of the run that made this generation."""
        return None if self.generation_dir is None else self.generation_dir / "report"


def rebuild_hint(folder: Path) -> str:
    return (
        f"rebuild it: rerun the same command with --rebuild-state (the broken state is moved to "
        f"{folder}/broken-<time>/ and kept there, and a fresh one is built from the corpus given alone, "
        "without the earlier days' items), or point --state at an empty folder"
    )


def _err(folder: Path, what: str) -> StateError:
    return StateError(f"state folder {folder}: {what}; {rebuild_hint(folder)}")


def claim_state(folder: str | Path, *, rebuild: bool = False) -> None:
    """Make sure ``folder`` may be used as a state folder: new, empty, or an nlsim state (marker or
    manifest). A folder with other data is refused (:class:`ConfigError`), ``rebuild`` or not, and so is a
    state whose ``runs/`` is a file or a broken link (a run would commit, then fail writing its record); a
    marked state whose manifest is gone while generations remain is refused with the rebuild hint
    (:class:`StateError`) unless ``rebuild``."""
    typed = Path(folder)
    folder = resolved(typed)  # "states/new/../../mine" is mine/ once new/ is made: check where it leads
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--state {typed} is a file, not a folder")
    marker = read_marker(folder)
    has_manifest = (folder / MANIFEST).exists()
    if folder.is_dir() and any(folder.iterdir()):
        if marker is not None and marker["kind"] != "state":
            raise ConfigError(f"--state {folder} is an nlsim {marker['kind']} folder, not a state folder")
        if marker is None and not has_manifest and not {c.name for c in folder.iterdir()} <= LOCK_FILES:
            raise ConfigError(
                f"--state {folder} holds files nlsim did not write (no {MARKER}, no {MANIFEST}); refusing "
                "to use it as a state folder. Give an empty or new folder."
            )
        if not rebuild and not has_manifest and not _first_run_leftovers(folder):
            raise _err(folder, f"{MANIFEST} is missing but generations are present (history would be lost)")
        runs = folder / RUNS
        if (runs.exists() or runs.is_symlink()) and not runs.is_dir():  # found only after the commit
            raise ConfigError(
                f"--state {folder}: {runs} is not the folder nlsim keeps every run's record in (a file or a "
                "broken link); move it out of the state folder, then run again"
            )
    try:
        typed.mkdir(parents=True, exist_ok=True)
        if resolved(typed) != folder:  # a folder made on the way (or a link changed) moved the target
            raise ConfigError(
                f"--state {typed} leads to {resolved(typed)}, not {folder}, once its folders are made"
            )
        if marker is None:
            write_marker(folder, "state")
    except OSError as exc:
        raise OutputError(f"--state {folder} cannot be written: {exc.strerror or exc}") from exc


def _first_run_leftovers(folder: Path) -> bool:
    """True when ``generations/`` holds nothing, or only what a killed first run leaves: generation-1
    folders named by nlsim, and no committed run (``runs/`` has no record)."""
    gens, runs = folder / GENERATIONS, folder / RUNS
    children = list(gens.iterdir()) if gens.is_dir() else []
    if not children:
        return True
    if runs.is_dir() and any(runs.iterdir()):
        return False
    return all(c.is_dir() and not c.is_symlink() and FIRST_GENERATION.match(c.name) for c in children)


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The manifest of ``folder``, None when there is none (a new state). Unreadable: StateError."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _err(folder, f"{MANIFEST} is unreadable ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _err(folder, f"{MANIFEST} is not an nlsim state manifest")
    if data.get("format_version") != FORMAT_VERSION:
        raise _err(folder, f"state format {data.get('format_version')!r}, this nlsim reads {FORMAT_VERSION}")
    name = data.get("generation_dir")
    if not isinstance(name, str) or not GENERATION_NAME.match(name) or name.startswith("."):
        raise _err(folder, f"{MANIFEST} names a generation folder {name!r} that nlsim did not write")
    if name[1:7] != f"{data.get('generation')!s:0>6}":
        raise _err(
            folder, f"{MANIFEST} names generation folder {name!r} for generation {data.get('generation')!r}"
        )
    if not isinstance(data.get("files"), dict) or not data["files"]:
        raise _err(folder, f"{MANIFEST} lists no files")
    return data


def _verify_files(folder: Path, gen_dir: Path, files: dict[str, dict[str, Any]]) -> None:
    for rel, info in files.items():
        p = gen_dir / rel
        if not isinstance(info, dict) or not {"bytes", "sha256"} <= set(info) or ".." in Path(rel).parts:
            raise _err(folder, f"{MANIFEST} has a malformed entry for {rel!r}")
        if not p.is_file():
            raise _err(folder, f"{p} is missing")
        size = p.stat().st_size
        if size != info["bytes"]:
            raise _err(
                folder, f"{p} is truncated or was rewritten ({size} bytes, the manifest says {info['bytes']})"
            )
        if file_sha256(p) != info["sha256"]:
            raise _err(folder, f"{p} is corrupt (its SHA-256 differs from the manifest)")


def open_state(folder: str | Path, identity: StateIdentity | None = None, *, verify: bool = True) -> State:
    """Load the current generation of ``folder`` (an empty :class:`State` when it has none yet).

    With ``identity``, a state made with other vectors or another threshold raises StateError naming the
    difference. ``verify`` checks every file's size and SHA-256 against the manifest.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        return State(folder=folder)
    check_manifest_keys(folder, manifest)
    try:
        stored = StateIdentity.from_dict(manifest["identity"])
        gen_dir = folder / GENERATIONS / manifest["generation_dir"]
        files = manifest["files"]
        generation = int(manifest["generation"])
    except (KeyError, TypeError, ValueError) as exc:
        raise _err(folder, f"{MANIFEST} lacks a field ({exc})") from exc
    if identity is not None:
        diffs = stored.differences(identity)
        if diffs:
            raise _err(folder, "it was made with other settings (" + "; ".join(diffs) + ")")
    if not gen_dir.is_dir():
        raise _err(folder, f"generation folder {gen_dir} is missing")
    if verify:
        _verify_files(folder, gen_dir, files)
    try:
        index, ids, meta, emb = load_index(
            gen_dir / "index",
            expected={
                "model_id": stored.model_id,
                "fingerprint": stored.fingerprint,
                "dim": stored.dim,
                "conversion": stored.conversion,
            },
            load_embeddings=True,
            verify=verify,
            use_gpu=False,
            hint=rebuild_hint(folder),
        )
    except StateError as exc:
        raise StateError(f"state folder {folder}: {exc}") from exc
    check_report_tables(folder, gen_dir, manifest["last_run"])
    try:
        items = pd.read_parquet(gen_dir / "items.parquet")
        pairs = pd.read_parquet(gen_dir / "pairs.parquet")
        clusters = pd.read_parquet(gen_dir / "clusters.parquet")
        verdicts, scored = _editors_tables(gen_dir)
        editors = {n: t for n, t in zip(EDITORS_TABLES, (verdicts, scored), strict=True) if t is not None}
        tables = {"items.parquet": items, "pairs.parquet": pairs, "clusters.parquet": clusters, **editors}
        tables.update(_report_heads(gen_dir))
    except Exception as exc:  # pyarrow raises several types on garbage
        raise _err(folder, f"cannot read the tables of {gen_dir} ({exc})") from exc
    check_columns(folder, gen_dir, tables)
    check_kinds(folder, gen_dir)
    check_rows(folder, gen_dir, items, pairs, clusters)
    if len(items) != len(ids) or list(items["id"].astype(str)) != [str(i) for i in ids]:
        rows = counted(len(items), "row", "rows")
        raise _err(folder, f"items.parquet ({rows}) does not match the index ids ({len(ids)})")
    if emb.shape != (len(items), stored.dim):
        raise _err(folder, f"embeddings have shape {emb.shape}, expected ({len(items)}, {stored.dim})")
    for col in ("published_at", "retain_from"):
        items[col] = pd.to_datetime(items[col], utc=True).astype("datetime64[ns, UTC]")
    as_of = pd.Timestamp(manifest["as_of"]) if manifest.get("as_of") else None
    return State(
        folder=folder,
        generation=generation,
        generation_dir=gen_dir,
        identity=stored,
        items=items,
        embeddings=emb,
        index=index,
        pairs=pairs,
        clusters=clusters,
        verdicts=verdicts,
        scored=scored,
        as_of=as_of,
        last_run=manifest.get("last_run"),
        manifest=manifest,
    )


LATER_REPORT_TABLES = {"report/near_misses.parquet": "near_misses", "report/topics.parquet": "topics"}
"""The report tables declared after this state format, each with the count its run records beside it since
(``last_run.counts``): a state kept before lacks both, and its report is written again without the table."""


def _report_heads(gen_dir: Path) -> dict[str, pd.DataFrame]:
    """The report tables a generation keeps, by name, as tables without rows (their columns read from each
    file's schema alone): what :func:`check_columns` checks."""
    heads = {}
    for name in KEPT_COLUMNS:
        if name.startswith("report/") and (gen_dir / name).is_file():
            heads[name] = pd.DataFrame(columns=pq.read_schema(gen_dir / name).names)
    return heads


def check_report_tables(folder: Path, gen_dir: Path, last_run: dict[str, Any]) -> None:
    """Refuse a generation without a table its run record proves it kept, naming the file (deleted by hand,
    its manifest entry too): a report table every generation keeps (:data:`KEPT_COLUMNS`; its report would
    be written again without it, or not at all), one of :data:`LATER_REPORT_TABLES` whose count the record
    holds, the editors' verdicts when it counted some (``editors.verdicts``: a later run would forget
    them), their scored pairs when its editors' part holds ``overruled`` (declared with them: every run
    with an editors' part has scored some pair since)."""
    counts, editors = last_run.get("counts") or {}, last_run.get("editors") or {}
    kept = [n for n in KEPT_COLUMNS if n.startswith("report/")]
    kept += [n for n, count in LATER_REPORT_TABLES.items() if count in counts]
    kept += ["verdicts.parquet"] if editors.get("verdicts") else []
    kept += ["scored.parquet"] if "overruled" in editors else []
    for name in kept:
        if not (gen_dir / name).is_file():
            raise _err(
                folder,
                f"{gen_dir / name} is missing (nlsim keeps it with the run that made the generation: it was "
                "deleted by hand)",
            )


def check_columns(folder: Path, gen_dir: Path, tables: dict[str, pd.DataFrame]) -> None:
    """Refuse a generation whose table lacks a column of :data:`KEPT_COLUMNS` (a table rewritten by hand,
    its checksum in the manifest too), naming the file and the column, with the way to rebuild.

    Example:
        >>> pairs = pd.DataFrame(columns=["id_a", "similarity"])
        >>> check_columns(Path("st"), Path("st/g1"), {"pairs.parquet": pairs})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: state folder st: st/g1/pairs.parquet has no column 'id_b', 'cosine', ...
    """
    for name, frame in tables.items():
        missing = [c for c in KEPT_COLUMNS[name] if c not in frame.columns]
        if missing:
            shown = ", ".join(repr(c) for c in missing)
            raise _err(
                folder,
                f"{gen_dir / name} has no column {shown} (every generation nlsim writes holds it: the table "
                "was edited or replaced by hand)",
            )


KEPT_KINDS: dict[str, dict[str, str]] = {
    "items.parquet": {"published_at": "time", "retain_from": "time", "id": "text", "first_seen_run": "text"},
    "pairs.parquet": {
        **{"similarity": "number", "cosine": "number", "cross_encoder": "number"},
        **{"id_a": "text", "id_b": "text", "run_id": "text"},
    },
    "clusters.parquet": {"anchor_undated": "integer", "anchor_ns": "integer", "cluster_id": "text"},
}
"""The kind of value the kept times, scores, anchors, ids and runs of these tables hold (every nlsim of this
state format wrote them so; a text column that may hold nothing but nulls, such as an item's ``cluster_id``,
may be kept as numbers then, so it is not checked)."""
_KIND_TYPES = {
    "time": pa.types.is_timestamp,
    "number": lambda t: pa.types.is_floating(t) or pa.types.is_integer(t),
    "integer": pa.types.is_integer,
    "text": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
}


def check_kinds(folder: Path, gen_dir: Path) -> None:
    """Refuse a generation whose table holds a column of :data:`KEPT_KINDS` of another kind than nlsim writes
    there (text where a time or a number is kept; a column of nothing but nulls is of every kind), read
    from each file's schema, naming the file and the field: a table rewritten by hand, its checksum in the
    manifest too, ended the next run in a ``ValueError``, ``TypeError`` or ``ArrowInvalid`` traceback.

    Example:
        >>> import tempfile
        >>> gen = Path(tempfile.mkdtemp())
        >>> for name in ("items", "pairs"):
        ...     pd.DataFrame({"id": ["a"]}).to_parquet(gen / f"{name}.parquet")
        >>> pd.DataFrame({"cluster_id": ["c-a"], "anchor_ns": ["1"]}).to_parquet(gen / "clusters.parquet")
        >>> check_kinds(Path("st"), gen)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: state folder st: .../clusters.parquet field 'anchor_ns' holds ...
    """
    for name, kinds in KEPT_KINDS.items():
        schema = pq.read_schema(gen_dir / name)
        for column, kind in kinds.items():
            if column not in schema.names:
                continue
            found = schema.field(column).type
            if not pa.types.is_null(found) and not _KIND_TYPES[kind](found):
                raise _err(
                    folder,
                    f"{gen_dir / name} field {column!r} holds {found} values, not the {kind} nlsim writes "
                    "there (the table was edited or replaced by hand)",
                )


def check_rows(
    folder: Path, gen_dir: Path, items: pd.DataFrame, pairs: pd.DataFrame, clusters: pd.DataFrame
) -> None:
    """Refuse a generation whose tables disagree as no run leaves them (rows edited by hand, the checksums
    in the manifest too), naming the file, the row and the field: a cluster id twice in ``clusters.parquet``,
    an item whose ``cluster_id`` or ``topic_id`` names no row of it (a cluster keeps its row while any member
    is kept), or a pair with an end that is no kept item (a pair goes with its items). Each ended the next
    run that touched them in a traceback.

    Example:
        >>> items = pd.DataFrame({"id": ["a", "b"], "cluster_id": ["c-a", "c-x"]})
        >>> pairs = pd.DataFrame({"id_a": ["a"], "id_b": ["b"]})
        >>> check_rows(Path("st"), Path("st/g1"), items, pairs, pd.DataFrame({"cluster_id": ["c-a"]}))
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: state folder st: st/g1/items.parquet row 2, field 'cluster_id': 'c-x' is ...
    """
    kept = set(clusters["cluster_id"].astype(str))
    twice = clusters["cluster_id"].astype(str).duplicated().to_numpy().nonzero()[0]
    found = (
        [("clusters.parquet", twice[0], "cluster_id", "a second row of its cluster")] if len(twice) else []
    )
    for column in ("cluster_id", "topic_id"):
        named = items[column] if column in items else pd.Series([None] * len(items), dtype=object)
        lost = (named.notna() & ~named.astype(str).isin(kept)).to_numpy().nonzero()[0]
        found += (
            [("items.parquet", lost[0], column, "named by no row of clusters.parquet")] if len(lost) else []
        )
    ids = set(items["id"].astype(str))
    for column in ("id_a", "id_b"):
        stray = (~pairs[column].astype(str).isin(ids)).to_numpy().nonzero()[0]
        found += [("pairs.parquet", stray[0], column, "no kept item of items.parquet")] if len(stray) else []
    if found:
        name, row, column, what = found[0]
        table = {"clusters.parquet": clusters, "items.parquet": items, "pairs.parquet": pairs}[name]
        value = table[column].iloc[row]
        raise _err(
            folder,
            f"{gen_dir / name} row {row + 1}, field {column!r}: {str(value)[:60]!r} is {what} (no run "
            "leaves its tables so: they were edited by hand)",
        )


KEPT_KEYS = ("as_of", "last_run", "previous_generation_dir")
"""What every manifest of this state format holds besides the generation it names and its files (a state's
clock may be ``null``, an undated window's; the previous generation ``null`` on the first)."""
LAST_RUN_KEYS = ("run_id", "input_key")
"""What every state's ``last_run`` holds: the run that made its generation and the input it ran on (a day
run again on it is replayed, not run twice). The rest of a run's record reads with its defaults."""


def check_manifest_keys(folder: Path, manifest: dict[str, Any]) -> None:
    """Refuse a manifest without a key of :data:`KEPT_KEYS`, whose ``as_of`` is no time, whose previous
    generation is no name, whose ``identity`` is not the identity nlsim writes (:func:`check_identity`), or
    whose ``last_run`` is no run's record: not an object, without a key of :data:`LAST_RUN_KEYS`, or with a
    value of a kind nlsim never writes there (a string where a number or an object is kept,
    :func:`~nlsim.io.records.mistyped_fields`), naming the key; a model's calibration in it that lacks a
    field or holds one of another kind is refused naming them (:func:`~nlsim.io.records.field_problems`).

    Example:
        >>> run = {"run_id": "r1", "input_key": "k", "threshold": "0.8"}
        >>> check_manifest_keys(Path("st"), {"as_of": None, "last_run": run, "previous_generation_dir": None})
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: state folder st: MANIFEST.json's last_run has '0.8' for 'threshold', not ...
    """
    missing = [k for k in KEPT_KEYS if k not in manifest]
    last, previous = manifest.get("last_run"), manifest.get("previous_generation_dir")
    if missing or not isinstance(last, dict) or not isinstance(previous, str | None):
        name = missing[0] if missing else "previous_generation_dir" if isinstance(last, dict) else "last_run"
        raise _err(folder, f"{MANIFEST} {misfit(manifest, name)}")
    missing = [k for k in LAST_RUN_KEYS if k not in last]
    wrong = mistyped_fields(RunRecord, last)
    if missing or wrong:
        *outer, key = (missing or wrong)[0].split(".")
        record = last
        for name in outer:
            record = record[name]
        raise _err(folder, f"{MANIFEST}'s {'.'.join(['last_run', *outer])} {misfit(record, key)}")
    model_info = last.get("model_info")
    cal = model_info.get("threshold_calibration") if isinstance(model_info, dict) else None
    problems = field_problems(Calibration, cal) if isinstance(cal, dict) and cal else []
    if problems:  # named in words: not Calibration.__init__'s "missing 7 required positional arguments"
        where = "last_run.model_info.threshold_calibration"
        raise _err(folder, f"{MANIFEST}'s {where} is no calibration nlsim wrote: {'; '.join(problems)}")
    times = (("as_of", manifest["as_of"]), ("last_run's as_of", last.get("as_of")))
    times += (("last_run's newest_day", last.get("newest_day")),)
    for name, value in times:
        try:
            good = value is None or isinstance(value, str) and not pd.isna(pd.Timestamp(value))
        except (ValueError, TypeError):
            good = False
        if not good:
            raise _err(folder, f"{MANIFEST}'s {name} {str(value)[:60]!r} is not a time")
    check_identity(folder, manifest)


def check_identity(folder: Path, manifest: dict[str, Any]) -> None:
    """Refuse a manifest whose ``identity`` is not an object, lacks a field every state holds (those of
    :class:`StateIdentity` without a default), or has a value of a kind nlsim never writes there, naming
    the key: a string for
    ``search`` read as a state kept before its search was (a change of ``--k`` then paired nothing again),
    a number for ``text_fields`` said only that the manifest "lacks a field". A field declared later than
    the state format (``search``, ``topic_threshold``) may be missing: a state kept before reads with its
    default.

    Example:
        >>> identity = {"model_id": "m", "fingerprint": "f", "dim": 8, "conversion": "none",
        ...     "text_fields": ["title"], "threshold": 0.8, "search": "k=20"}
        >>> check_identity(Path("st"), {"identity": identity})
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: state folder st: MANIFEST.json's identity has 'k=20' for 'search', not ...
    """
    identity = manifest.get("identity")
    if not isinstance(identity, dict):
        raise _err(folder, f"{MANIFEST} {misfit(manifest, 'identity')}")
    lacks = [name for name in required_fields(StateIdentity) if name not in identity]
    wrong = lacks or mistyped_fields(StateIdentity, identity)
    if wrong:
        raise _err(folder, f"{MANIFEST}'s identity {misfit(identity, wrong[0])}")


def remove_unfinished(folder: str | Path) -> list[str]:
    """Delete generation folders no manifest points at (left by a killed run); keeps current and previous.

    Only folders named like nlsim's generations are touched, in a folder carrying the state marker, and
    only after the manifest was read and the files of the generation it names were verified against it
    (an edited manifest is an error, not a reason to sweep the real current generation). Without a
    manifest, only a killed first run's leftovers are swept. Anything else in ``generations/`` stays.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    keep: set[str] = set()
    if manifest is not None:
        gen_dir = folder / GENERATIONS / manifest["generation_dir"]
        if not gen_dir.is_dir():
            raise _err(folder, f"generation folder {manifest['generation_dir']} is missing")
        _verify_files(folder, gen_dir, manifest["files"])
        keep = {manifest["generation_dir"], manifest.get("previous_generation_dir") or ""}
    elif not _first_run_leftovers(folder):
        raise _err(folder, f"{MANIFEST} is missing but generations are present (history would be lost)")
    if read_marker(folder) is None:
        return []
    gens = folder / GENERATIONS
    if not gens.is_dir():
        return []
    removed = []
    for child in sorted(gens.iterdir()):
        if child.name in keep or not GENERATION_NAME.match(child.name) or not child.is_dir():
            continue
        _check_generation_files(folder, child)
        remove_tree(child)
        removed.append(child.name)
    return removed


def _check_generation_files(folder: Path, gen_dir: Path) -> None:
    """Refuse to delete a generation folder holding anything nlsim does not write into one (a user's notes,
    a folder restored by hand under a generation's name): the run stops and names it."""
    for entry in sorted(gen_dir.iterdir()):
        inside = sorted(entry.iterdir()) if entry.name == "report" and entry.is_dir() else []
        foreign = [entry] if entry.name not in GENERATION_ENTRIES else []
        foreign += [p for p in inside if p.suffix != ".parquet" or not p.is_file()]
        if foreign:
            raise _err(
                folder,
                f"{foreign[0]} was not written by nlsim, and nlsim deletes the generation folder "
                f"{gen_dir.name} it is in: move it out of the state folder, then run again",
            )


@dataclass(frozen=True)
class Generation:
    """What a committed generation holds: the window's index, items, embeddings, pairs and clusters, the
    report tables of its run, and the run record."""

    index: Any
    items: pd.DataFrame
    embeddings: np.ndarray
    pairs: pd.DataFrame
    clusters: pd.DataFrame
    report_tables: dict[str, pd.DataFrame]
    run: dict[str, Any]
    verdicts: pd.DataFrame | None = None
    scored: pd.DataFrame | None = None


EDITORS_TABLES = ("verdicts.parquet", "scored.parquet")
"""The editors' tables a generation keeps: their verdicts and the pairs they scored."""


def _editors_tables(gen_dir: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The editors' verdicts and scored pairs a generation keeps (``None`` for a table it lacks)."""
    tables = []
    for name in EDITORS_TABLES:
        path = gen_dir / name
        tables.append(pd.read_parquet(path) if path.is_file() else None)
    return tables[0], tables[1]


def carried_editors(moved: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None, str]:
    """The editors' verdicts and scored pairs of a state :func:`move_aside` moved to ``moved``, for the
    fresh state (``--rebuild-state`` keeps them), and what became of them in words. Each table is read
    from the newest generation that holds a readable copy, the one the manifest named first: a damaged
    state is what a rebuild is for, and the generation before the last keeps them too."""
    gens = moved / GENERATIONS
    named = None
    try:
        named = read_json_object(moved / MANIFEST).get("generation_dir")
    except (OSError, ValueError):
        pass
    folders = sorted((p for p in gens.glob("g*") if GENERATION_NAME.match(p.name)), reverse=True)
    if isinstance(named, str) and (gens / named).is_dir():
        folders = [gens / named, *(f for f in folders if f.name != named)]
    found: list[pd.DataFrame | None] = []
    said: list[str] = []
    for name in EDITORS_TABLES:
        table = None
        for folder in folders:
            if not (folder / name).is_file():
                continue
            try:
                table = pd.read_parquet(folder / name)
            except Exception as exc:  # pyarrow raises several types on garbage
                said.append(f"{folder / name} could not be read ({type(exc).__name__})")
                continue
            said.append(f"kept {len(table)} {name.split('.')[0]} row(s) of {folder.name}")
            break
        found.append(table)
    return found[0], found[1], ("the editors' part of the moved state: " + "; ".join(said)) if said else ""


def _write_generation(tmp: Path, gen: Generation, identity: StateIdentity) -> None:
    """Every file of a generation into the (temporary) folder ``tmp``; the fault points of the kill tests
    between them."""
    meta = IndexMeta(
        model_id=identity.model_id,
        fingerprint=identity.fingerprint,
        conversion=identity.conversion,
        dim=identity.dim,
    )
    ids = gen.items["id"].astype(str).tolist()
    save_index(tmp / "index", gen.index, ids, meta, embeddings=gen.embeddings)
    fault_point("index-write")
    gen.items.to_parquet(tmp / "items.parquet", index=False, engine="pyarrow")
    gen.pairs.reset_index(drop=True).to_parquet(tmp / "pairs.parquet", index=False, engine="pyarrow")
    gen.clusters.reset_index(drop=True).to_parquet(tmp / "clusters.parquet", index=False, engine="pyarrow")
    for name, table in (("verdicts.parquet", gen.verdicts), ("scored.parquet", gen.scored)):
        if table is not None and len(table):
            table.reset_index(drop=True).to_parquet(tmp / name, index=False, engine="pyarrow")
    (tmp / "report").mkdir()
    for tname, table in gen.report_tables.items():
        table.to_parquet(tmp / "report" / f"{tname}.parquet", index=False, engine="pyarrow")
    (tmp / "run.json").write_text(json.dumps(gen.run, indent=1, default=str), encoding="utf-8")
    fault_point("state-write")


def _file_hashes(final: Path) -> dict[str, dict[str, Any]]:
    """SHA-256 and size of every file of a generation folder the manifest checks."""
    files = {}
    for path in sorted(p for p in final.rglob("*") if p.is_file()):
        if path.parent.name == "index" and path.name != "meta.json":
            continue  # the index files are checked by their own meta.json (hashes inside it)
        rel = path.relative_to(final).as_posix()
        files[rel] = {"sha256": file_sha256(path), "bytes": path.stat().st_size}
    return files


def _drop_old_generations(gens: Path, keep: tuple[str | None, ...]) -> None:
    """Remove the generations older than the ones in ``keep`` (the new one and the previous one)."""
    for child in gens.iterdir():
        if child.name not in keep and GENERATION_NAME.match(child.name):
            try:  # after the commit: a folder holding a user's file is left; the next run names it
                _check_generation_files(gens.parent, child)
            except StateError:
                continue
            remove_tree(child)


def commit_state(
    folder: str | Path,
    *,
    identity: StateIdentity,
    index: Any,
    items: pd.DataFrame,
    embeddings: np.ndarray,
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    as_of: pd.Timestamp | None,
    run: dict[str, Any],
    report_tables: dict[str, pd.DataFrame],
    previous: State | None = None,
    verdicts: pd.DataFrame | None = None,
    scored: pd.DataFrame | None = None,
) -> State:
    """Write a new generation and make it current (the manifest replace is the commit).

    ``run`` is the run's figures (must hold ``run_id``); it is stored in the generation, in the manifest
    (``last_run``) and in ``runs/<run_id>.json``. ``report_tables`` are kept in ``report/`` so the report of
    the last committed run can be written again if the run was killed before writing it. ``verdicts``: the
    editors' verdicts later runs honour (:mod:`nlsim.clusters.verdicts`); ``scored``: the pairs they have
    scored, which later runs never offer for review.
    """
    folder = Path(folder)
    gens = folder / GENERATIONS
    gens.mkdir(parents=True, exist_ok=True)
    generation = (previous.generation if previous is not None else 0) + 1
    name = f"g{generation:06d}-{uuid.uuid4().hex[:6]}"
    final = gens / name
    gen = Generation(
        index, items.reset_index(drop=True), embeddings, pairs, clusters, report_tables, run, verdicts, scored
    )
    with atomic_dir(final) as tmp:
        _write_generation(tmp, gen, identity)
    prev_name = previous.generation_dir.name if previous and previous.generation_dir else None
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "generation": generation,
        "generation_dir": name,
        "previous_generation_dir": prev_name,
        "committed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "identity": {**asdict(identity), "text_fields": list(identity.text_fields)},
        "as_of": None if as_of is None else pd.Timestamp(as_of).isoformat(),
        "items": int(len(items)),
        "clusters": int(len(clusters)),
        "files": _file_hashes(final),
        "last_run": run,
    }
    fault_point("manifest")
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1, default=str))
    atomic_write_text(folder / RUNS / f"{run['run_id']}.json", json.dumps(run, indent=1, default=str))
    _drop_old_generations(gens, (name, prev_name))
    return State(
        folder=folder,
        generation=generation,
        generation_dir=final,
        identity=identity,
        items=gen.items,
        embeddings=embeddings,
        index=index,
        pairs=pairs,
        clusters=clusters,
        verdicts=verdicts,
        scored=scored,
        as_of=as_of,
        last_run=run,
        manifest=manifest,
    )


def move_aside(folder: str | Path) -> Path | None:
    """Move a broken state's manifest and generations to ``FOLDER/broken-<UTC time>/`` (``--rebuild-state``).

    Returns where they went, or None when there was nothing to move. The lock and ``runs/`` stay.
    """
    folder = Path(folder)
    names = [n for n in (MANIFEST, GENERATIONS) if (folder / n).exists()]
    if not names:
        return None
    dest = folder / f"broken-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:4]}"
    dest.mkdir(parents=True)
    for n in names:
        os.replace(folder / n, dest / n)
    return dest


def run_window(folder: str | Path) -> Window:
    """The window the last committed run of the state ``folder`` judged its report on (``nlsim judge
    --state``): the kept items (``id``, ``title``, ``text``: the text embedded) and every pair among them.
    A folder that holds no committed run is refused, and so, by name, is one that does not exist or a file."""
    if not Path(folder).is_dir():
        what = "is a file, not a state folder" if Path(folder).exists() else "does not exist"
        raise ConfigError(f"--state {folder}: {what}")
    state = open_state(folder)
    if state.is_empty:
        raise ConfigError(f"--state {folder}: not a state folder with a committed run (no {MANIFEST})")
    items = state.items.assign(text=state.items["raw_text"])[["id", "title", "text"]]
    run_id = str((state.last_run or {}).get("run_id"))
    return Window(run_id, items, state.pairs[["id_a", "id_b"]], str(folder))


def state_summary(folder: str | Path) -> dict[str, Any]:
    """A short description of a state folder (for logs and the docs).

    Example (a folder no daily run has written yet):
        >>> import tempfile
        >>> state_summary(Path(tempfile.mkdtemp()))["generation"]
        0
    """
    manifest = read_manifest(folder)
    if manifest is None:
        return {"folder": str(folder), "generation": 0}
    return {
        "folder": str(folder),
        "generation": manifest["generation"],
        "items": manifest.get("items"),
        "clusters": manifest.get("clusters"),
        "as_of": manifest.get("as_of"),
        "model": manifest["identity"]["model_id"],
        "threshold": manifest["identity"]["threshold"],
        "last_run": (manifest.get("last_run") or {}).get("run_id"),
    }
