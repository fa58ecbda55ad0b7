"""Stable cluster ids across incremental runs: carry ids over, grow clusters, merge them by a fixed rule.

Pure functions over item ids, order keys and pairs; no embeddings, no files. The batch rule is in
:mod:`nlsim.clustering` (a cluster is a connected component of the pairs; its id is ``"c-" + key member``,
the key member being its earliest member by ``(published_at, id)``, undated items last). An incremental run
applies that rule to *today's* pairs on top of what earlier runs decided:

- **Parts.** Before today, every kept item is either in a cluster (whose key member is remembered, even
  after retention dropped that member) or alone. Today's pairs join parts: existing clusters, old lone
  items and today's new items.
- **new**: a component with no existing cluster. Its id is ``"c-" + its earliest member`` (the batch rule).
- **grown**: one existing cluster gained members. It keeps its id.
- **merged**: a component holding two or more *old* parts (clusters, or an old lone item that now joins a
  cluster). The surviving id is the one of the old part whose key member is earliest by
  ``(published_at, id)``; a lone item's would-be id is ``"c-" + its id``. The other clusters are reported as
  merged into it. Today's items never take over an id that existed before today.

So an item keeps its cluster id unless its cluster merges into an earlier one. When items arrive in
publication order (each run's items no earlier than the items already kept), every id equals the one a
single batch run over all the items gives. An item that arrives late (published before the key member of the
cluster it joins) leaves the cluster's id unchanged: stability wins over the batch rule. Clusters never split.

Example:
    >>> keys = {"a": order_key_of("2024-01-01", "a"), "b": order_key_of("2024-01-02", "b"),
    ...         "c": order_key_of("2024-01-03", "c")}
    >>> day1 = update_clusters({}, {}, keys, new_ids=["a", "b"], pairs=[("a", "b")])
    >>> day1.assignment, day1.events["status"].tolist()
    ({'a': 'c-a', 'b': 'c-a'}, ['new'])
    >>> day2 = update_clusters(day1.assignment, day1.anchors, keys, new_ids=["c"], pairs=[("b", "c")])
    >>> day2.assignment["c"], day2.events["status"].tolist()
    ('c-a', ['grown'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

OrderKey = tuple[int, int, str]
"""``(undated 0/1, published_at in ns, id)``, sorted like :func:`nlsim.clustering.order_key`."""

STATUSES = ("new", "grown", "merged")


def cluster_id_for(item_id: str) -> str:
    """The id a cluster gets from its key member (the rule of :mod:`nlsim.clustering`)."""
    return f"c-{item_id}"


def order_key_of(published_at: Any, item_id: str) -> OrderKey:
    """Order key of one item: dated items first, by time, then by id.

    >>> order_key_of(None, "x") > order_key_of("2030-01-01", "y")
    True
    """
    ts = pd.Timestamp(published_at) if published_at is not None else pd.NaT
    if ts is pd.NaT or pd.isna(ts):
        return (1, 0, str(item_id))
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return (0, int(ts.value), str(item_id))


def order_keys(ids: Sequence[str], times: Any) -> dict[str, OrderKey]:
    """Order keys of many items (``times`` aligned with ``ids``, datetime-like, NaT allowed)."""
    t = pd.to_datetime(
        pd.Series(list(times), dtype=object) if not isinstance(times, pd.Series) else times, utc=True
    )
    nat = t.isna().to_numpy()
    ns = t.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").astype("int64")
    return {
        str(i): ((1, 0, str(i)) if n else (0, int(v), str(i))) for i, n, v in zip(ids, nat, ns, strict=True)
    }


@dataclass
class ClusterUpdate:
    """What one incremental run did to the clusters.

    Attributes:
        assignment: cluster id of every clustered item among the previous and new items (lone items absent).
        anchors: order key of each cluster's key member (the member its id came from), kept across runs.
        events: one row per cluster touched today: ``cluster_id``, ``status`` (new/grown/merged),
            ``added`` (item ids that joined it today), ``absorbed`` (cluster ids merged into it), ``size``
            (members among the items known to this run).
        merged_into: ``{old cluster id: surviving id}`` for every cluster that disappeared today.
    """

    assignment: dict[str, str]
    anchors: dict[str, OrderKey]
    events: pd.DataFrame
    merged_into: dict[str, str] = field(default_factory=dict)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def update_clusters(
    previous: Mapping[str, str],
    anchors: Mapping[str, OrderKey],
    keys: Mapping[str, OrderKey],
    *,
    new_ids: Iterable[str],
    pairs: Iterable[tuple[str, str]],
) -> ClusterUpdate:
    """Apply today's ``pairs`` (item id pairs at or above the threshold) to the previous clusters.

    Args:
        previous: cluster id of each clustered item known before today (items in no cluster absent).
        anchors: order key of the key member of each previous cluster.
        keys: order key of every item that appears in ``pairs`` or ``new_ids``.
        new_ids: the items first seen today (or re-embedded because their text changed).
        pairs: today's pairs; either end may be old or new.
    """
    new_set = set(map(str, new_ids))
    uf = _UnionFind()

    def node(item: str) -> str:
        cid = previous.get(item)
        return f"C\x00{cid}" if cid is not None else f"I\x00{item}"

    for a, b in pairs:
        uf.union(node(str(a)), node(str(b)))
    groups: dict[str, list[str]] = {}
    for n in list(uf.parent):
        groups.setdefault(uf.find(n), []).append(n)

    assignment = dict(previous)
    out_anchors = dict(anchors)
    merged_into: dict[str, str] = {}
    events: list[dict[str, Any]] = []
    for nodes in groups.values():
        if len(nodes) < 2:
            continue
        clusters = sorted(n.split("\x00", 1)[1] for n in nodes if n.startswith("C\x00"))
        items = sorted(n.split("\x00", 1)[1] for n in nodes if n.startswith("I\x00"))
        old_items = [i for i in items if i not in new_set]
        # Candidates for the surviving id: old clusters by their key member, old lone items by themselves.
        old_parts: list[tuple[OrderKey, str]] = [(anchors[c], c) for c in clusters]
        old_parts += [(keys[i], cluster_id_for(i)) for i in old_items]
        if old_parts:
            anchor, survivor = min(old_parts)
        else:
            anchor, first = min((keys[i], i) for i in items)
            survivor = cluster_id_for(first)
        absorbed = [c for c in clusters if c != survivor]
        for c in absorbed:
            merged_into[c] = survivor
            out_anchors.pop(c, None)
        if absorbed or (clusters and survivor not in clusters):
            status = "merged"
        elif clusters:
            status = "grown"
        else:
            status = "new"
        out_anchors[survivor] = anchor
        gone = set(absorbed)
        for item, cid in previous.items():
            if cid in gone:
                assignment[item] = survivor
        for i in items:
            assignment[i] = survivor
        events.append({"cluster_id": survivor, "status": status, "added": items, "absorbed": absorbed})
    # resolve chains (a cluster absorbed into a survivor that is itself absorbed cannot happen within a
    # run, as each component has one survivor), then count members
    sizes: dict[str, int] = {}
    for cid in assignment.values():
        sizes[cid] = sizes.get(cid, 0) + 1
    for e in events:
        e["size"] = sizes.get(e["cluster_id"], 0)
    frame = pd.DataFrame(events, columns=["cluster_id", "status", "added", "absorbed", "size"])
    frame = frame.sort_values("cluster_id", kind="mergesort").reset_index(drop=True)
    return ClusterUpdate(assignment=assignment, anchors=out_anchors, events=frame, merged_into=merged_into)


def drop_items(
    assignment: Mapping[str, str], anchors: Mapping[str, OrderKey], dropped: Iterable[str]
) -> tuple[dict[str, str], dict[str, OrderKey]]:
    """Forget ``dropped`` items (retention); a cluster keeps its id and key member while any member is kept.

    A cluster left with a single kept member stays a cluster (its pairs happened), so a later item that
    matches that member joins the same id.
    """
    gone = set(map(str, dropped))
    kept = {i: c for i, c in assignment.items() if i not in gone}
    alive = set(kept.values())
    return kept, {c: k for c, k in anchors.items() if c in alive}


# --- the incremental run ----------------------------------------------------------------------------------

RUNS_DIR = "runs"
LATEST = "latest"


@dataclass
class IncrementalResult:
    """What :func:`run_incremental` did.

    Attributes:
        run_id: ``<as-of time>-<input key>``: the same input on the same state gives the same id.
        stats: the run's figures (also in ``STATE/runs/<run_id>.json`` and the report's ``run.json``).
        report_dir: ``OUT/runs/<run_id>/`` (``OUT/latest`` points at it).
        replayed: True when this input had already been committed (an earlier run was killed after the
            commit, or the run was repeated): the stored report was written again, the state is unchanged.
        messages: what the run said about the lock, left-over files, moved state.
    """

    run_id: str
    stats: Any
    report_dir: Path
    replayed: bool = False
    messages: list[str] = field(default_factory=list)
    pairs: pd.DataFrame | None = None
    clusters: pd.DataFrame | None = None


def input_key(
    identity: Any, corpus_ids: Sequence[str], hashes: Sequence[str], times: Any, params: dict[str, Any]
) -> str:
    """SHA-256 of what decides a run's result: the vectors' identity, the parameters and the items."""
    import hashlib
    import json

    h = hashlib.sha256()
    h.update(json.dumps({"identity": repr(identity), **params}, sort_keys=True, default=str).encode())
    t = (
        pd.to_datetime(pd.Series(list(times), dtype=object), utc=True)
        if not isinstance(times, pd.Series)
        else pd.to_datetime(times, utc=True)
    )
    stamps = ["" if pd.isna(x) else pd.Timestamp(x).isoformat() for x in t]
    rows = sorted(zip(map(str, corpus_ids), map(str, hashes), stamps, strict=True))
    for row in rows:
        h.update("\x1f".join(row).encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()


def _cluster_table(
    events: pd.DataFrame, items: pd.DataFrame, pairs: pd.DataFrame, keys: Mapping[str, OrderKey]
) -> pd.DataFrame:
    """The report's clusters table for the clusters touched today (kept members only)."""
    columns = [
        "cluster_id",
        "status",
        "size",
        "representative",
        "representative_title",
        "member_ids",
        "added_ids",
        "absorbed",
        "sources",
        "first_published",
        "last_published",
        "max_similarity",
        "mean_similarity",
    ]
    if len(events) == 0:
        frame = pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
        return frame.astype({"size": "int64", "max_similarity": "float32", "mean_similarity": "float32"})
    by_cluster = {cid: grp for cid, grp in items[items["cluster_id"].notna()].groupby("cluster_id")}
    pair_cluster = pairs["id_a"].map(dict(zip(items["id"], items["cluster_id"], strict=True)))
    rows = []
    for ev in events.itertuples():
        members = by_cluster.get(ev.cluster_id, items.iloc[:0])
        ordered = sorted(members["id"].astype(str), key=lambda i: keys[i])
        first = members.set_index("id").loc[ordered[0]] if ordered else None
        sims = pairs.loc[pair_cluster == ev.cluster_id, "similarity"]
        rows.append(
            {
                "cluster_id": ev.cluster_id,
                "status": ev.status,
                "size": len(ordered),
                "representative": ordered[0] if ordered else None,
                "representative_title": None if first is None else str(first["title"]),
                "member_ids": ordered,
                "added_ids": list(ev.added),
                "absorbed": list(ev.absorbed),
                "sources": sorted({str(s) for s in members["source"] if s}),
                "first_published": members["published_at"].min(),
                "last_published": members["published_at"].max(),
                "max_similarity": float(sims.max()) if len(sims) else float("nan"),
                "mean_similarity": float(sims.mean()) if len(sims) else float("nan"),
            }
        )
    out = pd.DataFrame(rows, columns=columns)
    for col in ("first_published", "last_published"):
        out[col] = pd.to_datetime(out[col], utc=True)
    out = out.astype({"size": "int64", "max_similarity": "float32", "mean_similarity": "float32"})
    return out.sort_values(["size", "cluster_id"], ascending=[False, True], kind="mergesort").reset_index(
        drop=True
    )


def publish_report(
    out: str | Path,
    run_id: str,
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    frame: pd.DataFrame,
    summary: dict[str, Any],
) -> Path:
    """Write the report to ``OUT/runs/<run_id>/`` and point ``OUT/latest`` (a symlink) and ``OUT/LATEST``
    at it. The folder appears complete or not at all, and ``latest`` switches atomically, so a reader (or a
    killed run) never sees a mixed report."""
    import os
    import shutil
    import tempfile
    import uuid

    from nlsim.atomic import _fsync_dir, atomic_write_text
    from nlsim.report import write_report
    from nlsim.run_stats import fault_point

    out = Path(out)
    runs = out / RUNS_DIR
    runs.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{run_id}-", dir=runs))
    os.chmod(staging, 0o755)
    try:
        write_report(staging, pairs, clusters, summary, frame=frame)
        fault_point("report-write")
        final = runs / run_id
        if final.exists():  # a repeated run: swap the old copy out first
            trash = runs / f".old-{run_id}-{uuid.uuid4().hex[:6]}"
            os.replace(final, trash)
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(staging, final)
        _fsync_dir(runs)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    fault_point("report-publish")
    link_tmp = out / f".latest-{uuid.uuid4().hex[:8]}"
    os.symlink(Path(RUNS_DIR) / run_id, link_tmp)
    os.replace(link_tmp, out / LATEST)
    atomic_write_text(out / "LATEST", run_id + "\n")
    _fsync_dir(out)
    for child in runs.iterdir():  # staging folders of killed runs
        if child.name.startswith((".staging-", ".old-")) and child != final:
            shutil.rmtree(child, ignore_errors=True)
    return final


def run_summary(stats: Any, config: Any, state_dir: Path) -> dict[str, Any]:
    """The figures stored in the state and in the report's ``run.json``."""
    return {
        **stats.to_dict(),
        "items": stats.counts.get("items_in"),
        "corpus": str(config.corpus),
        "state": str(state_dir),
        "k": config.k,
        "window_hours": config.window_hours,
        "index": stats.extra.get("index"),
    }


def _embed_in_chunks(
    encoder: Any, texts: list[str], batch_size: int, progress: bool, chunk: int = 512
) -> np.ndarray:
    from nlsim.run_stats import fault_point

    parts = []
    for start in range(0, len(texts), chunk):
        parts.append(encoder.encode(texts[start : start + chunk], batch_size=batch_size, progress=progress))
        fault_point("embed")
    if not parts:
        return np.zeros((0, int(encoder.dim)), np.float32)
    return np.vstack(parts).astype(np.float32, copy=False)


def check_no_rerank(config: Any, model_path: Any, say: Any) -> None:
    """Incremental runs pair items by cosine only: ``rerank=True`` is refused, a stored reranker noted."""
    from nlsim.errors import ConfigError
    from nlsim.rerank import has_reranker

    if config.rerank:
        raise ConfigError("--rerank is not available with --state: incremental runs use the cosine threshold")
    if config.rerank is None and has_reranker(model_path):
        say(f"the reranker stored with {model_path} is not used by incremental runs (cosine threshold)")


def run_incremental(
    config: Any,
    state_dir: str | Path,
    *,
    retention_days: float | None = 30.0,
    as_of: Any = None,
    rebuild_state: bool = False,
    encoder: Any = None,
) -> IncrementalResult:
    """One daily run: embed only unseen (or edited) items, match them against the kept window, update the
    clusters with stable ids, commit the state, then publish the report under ``config.out``.

    Args:
        config: a :class:`nlsim.dedup.DedupConfig` (corpus, out, model, conversion, threshold, k, window...).
        state_dir: the state folder (created on the first run).
        retention_days: items published (or, when undated, first seen) more than this many days before
            ``as_of`` are dropped from the window; None keeps everything.
        as_of: the run's reference time; default: the latest ``published_at`` seen so far (data time, so a
            re-run gives the same result), or, when no item has a date, the start of the current UTC day.
        rebuild_state: move a broken or mismatched state aside and start a fresh one.
        encoder: an already loaded encoder (tests, flows); default ``load_encoder(config.model)``.
    """
    import json
    from datetime import timedelta

    from nlsim import dedup as stages
    from nlsim.atomic import atomic_write_text
    from nlsim.conversion import convert
    from nlsim.index import build_index
    from nlsim.lock import RunLock
    from nlsim.neighbors import neighbor_pairs
    from nlsim.report import pairs_table
    from nlsim.run_stats import RunStats
    from nlsim.state import StateIdentity, commit_state, move_aside, open_state, remove_unfinished

    state_dir = Path(state_dir)
    messages: list[str] = []

    def say(msg: str) -> None:
        messages.append(msg)
        print(msg)

    stats = RunStats(
        run_id="",
        retention_days=retention_days,
        started_at=pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
    )
    with RunLock(state_dir) as lock:
        if lock.message:
            say(lock.message)
        if rebuild_state:
            moved = move_aside(state_dir)
            if moved is not None:
                say(f"moved the previous state to {moved}; building a fresh one")
        removed = remove_unfinished(state_dir)
        if removed:
            say(
                f"removed {len(removed)} unfinished generation folder(s) left by a killed run: "
                f"{', '.join(removed)}"
            )
        with stats.stage("load"):
            corpus = stages.load_stage(config)
        with stats.stage("model"):
            if encoder is None:
                from nlsim.encoders import load_encoder

                encoder = load_encoder(config.model)
            check_no_rerank(config, getattr(encoder, "path", None), say)
            threshold = stages.resolve_threshold(config, getattr(encoder, "path", None))
        identity = StateIdentity(
            model_id=encoder.model_id,
            fingerprint=encoder.fingerprint,
            dim=int(encoder.dim),
            conversion=config.convert,
            text_fields=tuple(config.text_fields),
            threshold=float(threshold.value),
        )
        with stats.stage("open_state"):
            state = open_state(state_dir, identity)
        stats.model, stats.model_fingerprint = encoder.model_id, encoder.fingerprint
        stats.threshold, stats.threshold_source = float(threshold.value), threshold.source
        stats.conversion = config.convert

        frame = corpus.frame.reset_index(drop=True)
        ids = frame["id"].astype(str).tolist()
        hashes = corpus.content_hashes()
        times = pd.to_datetime(frame["published_at"], utc=True)
        if as_of is not None:
            ref = pd.Timestamp(as_of)
            ref = ref.tz_localize("UTC") if ref.tzinfo is None else ref.tz_convert("UTC")
        else:
            cands = [t for t in (state.as_of, times.max()) if t is not None and not pd.isna(t)]
            # no date anywhere (an undated corpus): the day of the run, so that first-seen times exist
            ref = max(pd.Timestamp(t) for t in cands) if cands else pd.Timestamp.now(tz="UTC").floor("D")
        stats.as_of = None if ref is None else ref.isoformat()
        params = {
            "k": config.k,
            "window_hours": config.window_hours,
            "retention_days": retention_days,
            "as_of": stats.as_of,
            "index_kind": config.index_kind,
        }
        key = input_key(identity, ids, hashes, times, params)
        run_id = f"{ref.strftime('%Y%m%dT%H%M%SZ') if ref is not None else 'undated'}-{key[:10]}"
        stats.run_id, stats.input_key = run_id, key

        # A repeated input (e.g. the run was killed after its commit): write its stored report again.
        if state.last_run and state.last_run.get("input_key") == key:
            say(f"run {run_id} was already committed to {state_dir}; writing its report again")
            rep = state.report_dir()
            tables = {n: pd.read_parquet(rep / f"{n}.parquet") for n in ("pairs", "clusters", "frame")}
            report_dir = publish_report(
                config.out, run_id, tables["pairs"], tables["clusters"], tables["frame"], dict(state.last_run)
            )
            return IncrementalResult(
                run_id=run_id,
                stats=state.last_run,
                report_dir=report_dir,
                replayed=True,
                messages=messages,
                pairs=tables["pairs"],
                clusters=tables["clusters"],
            )
        if state.last_run and config.out is not None:
            last_id = state.last_run.get("run_id")
            if last_id and not (Path(config.out) / RUNS_DIR / last_id / "run.json").exists():
                rep = state.report_dir()
                tables = {n: pd.read_parquet(rep / f"{n}.parquet") for n in ("pairs", "clusters", "frame")}
                publish_report(
                    config.out,
                    last_id,
                    tables["pairs"],
                    tables["clusters"],
                    tables["frame"],
                    dict(state.last_run),
                )
                say(f"wrote the missing report of the previous run {last_id}")

        with stats.stage("classify"):
            kept = state.items.reset_index(drop=True)
            cutoff = (
                (ref - pd.Timedelta(days=float(retention_days)))
                if (ref is not None and retention_days)
                else None
            )
            prev_hash = dict(zip(kept["id"].astype(str), kept["content_hash"], strict=True))
            retain_from = times.where(times.notna(), ref) if ref is not None else times
            status = []
            for i, h, rf in zip(ids, hashes, retain_from, strict=True):
                if i in prev_hash:
                    status.append("skipped" if prev_hash[i] == h else "changed")
                elif cutoff is not None and rf is not None and not pd.isna(rf) and rf < cutoff:
                    status.append("too_old")
                else:
                    status.append("new")
            status_s = pd.Series(status, dtype=object)
            changed_ids = set(np.asarray(ids, dtype=object)[(status_s == "changed").to_numpy()])
            expired_mask = (
                (kept["retain_from"] < cutoff).to_numpy()
                if cutoff is not None and len(kept)
                else np.zeros(len(kept), bool)
            )
            expired_ids = set(kept.loc[expired_mask, "id"].astype(str))
            changed_ids -= expired_ids
            todo = (
                (status_s == "new") | (status_s == "changed") & ~pd.Series(ids).isin(expired_ids)
            ).to_numpy()
        stats.counts.update(
            items_in=len(frame),
            quarantined=int(len(corpus.quarantined)),
            new=int((status_s == "new").sum()),
            changed=len(changed_ids),
            skipped=int((status_s == "skipped").sum()),
            too_old=int((status_s == "too_old").sum()),
            expired=len(expired_ids),
        )

        with stats.stage("convert"):
            todo_rows = np.flatnonzero(todo)
            texts_all = corpus.texts()
            texts = convert([texts_all[r] for r in todo_rows], config.convert)
        with stats.stage("embed"):
            new_emb = _embed_in_chunks(encoder, texts, config.batch_size, config.progress)

        with stats.stage("index"):
            drop = expired_ids | changed_ids
            keep_mask = ~kept["id"].astype(str).isin(drop).to_numpy()
            base_items = kept.loc[keep_mask].reset_index(drop=True)
            base_emb = (
                state.embeddings[keep_mask]
                if state.embeddings is not None
                else np.zeros((0, identity.dim), np.float32)
            )
            if state.index is not None and keep_mask.all():
                index = state.index
            else:
                index = build_index(
                    base_emb, kind=config.index_kind, use_gpu=config.use_gpu, dim=identity.dim
                )
            index.add(new_emb)
            prev_rows = kept.set_index(kept["id"].astype(str))
            add = frame.iloc[todo_rows]
            add_ids = add["id"].astype(str).tolist()
            first_seen = [
                prev_rows.at[i, "first_seen_run"] if i in prev_rows.index else run_id for i in add_ids
            ]
            new_items = pd.DataFrame(
                {
                    "id": add_ids,
                    "content_hash": [hashes[r] for r in todo_rows],
                    "title": add["title"].astype(str).tolist(),
                    "source": add["source"].astype(str).tolist(),
                    "published_at": pd.to_datetime(add["published_at"], utc=True).to_numpy(),
                    "retain_from": retain_from.iloc[todo_rows].to_numpy(),
                    "first_seen_run": first_seen,
                    "embedded_run": [run_id] * len(add_ids),
                    "cluster_id": [None] * len(add_ids),
                }
            )
            for col in ("published_at", "retain_from"):
                new_items[col] = pd.to_datetime(new_items[col], utc=True).astype("datetime64[ns, UTC]")
                base_items[col] = pd.to_datetime(base_items[col], utc=True).astype("datetime64[ns, UTC]")
            all_items = (
                pd.concat([base_items, new_items], ignore_index=True) if len(base_items) else new_items
            )
            all_emb = np.vstack([base_emb, new_emb]).astype(np.float32, copy=False)

        with stats.stage("neighbors"):
            window = timedelta(hours=config.window_hours) if config.window_hours else None
            query_rows = np.arange(len(base_items), len(all_items))
            raw = neighbor_pairs(
                index,
                new_emb,
                query_rows,
                k=config.k,
                threshold=float(threshold.value),
                times=all_items["published_at"] if window else None,
                window=window,
                progress=config.progress,
            )
            all_ids = all_items["id"].astype(str).to_numpy()

        with stats.stage("cluster"):
            keys = order_keys(all_ids.tolist(), all_items["published_at"])
            prev_assign = {
                str(i): str(c)
                for i, c in zip(kept["id"], kept["cluster_id"], strict=True)
                if c is not None and not pd.isna(c)
            }
            anchors = {
                str(r.cluster_id): (int(r.anchor_undated), int(r.anchor_ns), str(r.anchor_id))
                for r in state.clusters.itertuples()
            }
            prev_assign, anchors = drop_items(prev_assign, anchors, expired_ids)
            id_pairs = list(zip(all_ids[raw["a"].to_numpy()], all_ids[raw["b"].to_numpy()], strict=True))
            upd = update_clusters(prev_assign, anchors, keys, new_ids=add_ids, pairs=id_pairs)
            all_items["cluster_id"] = [upd.assignment.get(i) for i in all_ids]
            old_clusters = state.clusters.set_index("cluster_id") if len(state.clusters) else None
            touched = set(upd.events["cluster_id"])
            crow = []
            for cid, (und, ns, aid) in sorted(upd.anchors.items()):
                created = (
                    old_clusters.at[cid, "created_run"]
                    if old_clusters is not None and cid in old_clusters.index
                    else run_id
                )
                updated = run_id if cid in touched else old_clusters.at[cid, "updated_run"]
                crow.append(
                    {
                        "cluster_id": cid,
                        "anchor_undated": und,
                        "anchor_ns": ns,
                        "anchor_id": aid,
                        "created_run": created,
                        "updated_run": updated,
                    }
                )
            from nlsim.state import empty_clusters, empty_pairs

            clusters_state = pd.DataFrame(crow) if crow else empty_clusters()
            today_pairs = pd.DataFrame(
                {
                    "id_a": [a for a, _ in id_pairs],
                    "id_b": [b for _, b in id_pairs],
                    "similarity": raw["similarity"].to_numpy(np.float32),
                    "run_id": [run_id] * len(id_pairs),
                }
            )
            old_pairs = state.pairs
            if len(old_pairs):
                old_pairs = old_pairs[
                    ~old_pairs["id_a"].isin(expired_ids) & ~old_pairs["id_b"].isin(expired_ids)
                ]
            pairs_state = (
                pd.concat([p for p in (old_pairs, today_pairs) if len(p)], ignore_index=True)
                if (len(old_pairs) or len(today_pairs))
                else empty_pairs()
            )
            # one row per pair, its ends in id order; a pair found again (an edited item) keeps the new score
            lo = pairs_state[["id_a", "id_b"]].min(axis=1)
            hi = pairs_state[["id_a", "id_b"]].max(axis=1)
            pairs_state = (
                pairs_state.assign(id_a=lo, id_b=hi)
                .drop_duplicates(["id_a", "id_b"], keep="last")
                .reset_index(drop=True)
            )
            labels = pd.Series(all_items["cluster_id"].to_numpy(), dtype=object)
            report_pairs = pairs_table(all_items, raw, labels)
            report_clusters = _cluster_table(upd.events, all_items, pairs_state, keys)
            member_ids = {m for ms in report_clusters["member_ids"] for m in ms}
            report_frame = all_items.loc[
                all_items["id"].isin(member_ids | set(report_pairs["id_a"]) | set(report_pairs["id_b"])),
                ["id", "title", "source", "published_at"],
            ].reset_index(drop=True)
        ev = upd.events["status"]
        stats.counts.update(
            kept=len(all_items),
            pairs=int(len(raw)),
            clusters_new=int((ev == "new").sum()),
            clusters_grown=int((ev == "grown").sum()),
            clusters_merged=int((ev == "merged").sum()),
            clusters_absorbed=len(upd.merged_into),
            clusters_kept=len(clusters_state),
        )
        stats.extra["index"] = index.describe()
        stats.extra["merged_into"] = dict(sorted(upd.merged_into.items()))
        with stats.stage("commit"):
            summary = run_summary(stats, config, state_dir)
            commit_state(
                state_dir,
                identity=identity,
                index=index,
                items=all_items,
                embeddings=all_emb,
                pairs=pairs_state,
                clusters=clusters_state,
                as_of=ref,
                run=summary,
                report_tables={"pairs": report_pairs, "clusters": report_clusters, "frame": report_frame},
                previous=state,
            )
        with stats.stage("report"):
            report_dir = publish_report(
                config.out,
                run_id,
                report_pairs,
                report_clusters,
                report_frame,
                run_summary(stats, config, state_dir),
            )
        # the complete figures (commit and report timings included) beside the state's run list
        atomic_write_text(
            state_dir / "runs" / f"{run_id}.json",
            json.dumps(run_summary(stats, config, state_dir), indent=1, default=str),
        )
    return IncrementalResult(
        run_id=run_id,
        stats=stats,
        report_dir=report_dir,
        messages=messages,
        pairs=report_pairs,
        clusters=report_clusters,
    )
