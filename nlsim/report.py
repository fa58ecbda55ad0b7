"""The near-duplicate report: ``pairs.parquet``, ``clusters.parquet``, ``index.html``, ``summary.md``,
``run.json``, ``overview.png``.

Every file is first written into a staging folder inside the report folder and then moved into place with
``os.replace``; ``run.json`` (the run's parameters, counts and the SHA-256 of each file) is moved last. A
failed or killed run therefore leaves the previous report's files intact, and ``run.json`` always
describes a complete set.

Schemas (also in the README):

``pairs.parquet``: ``id_a, id_b, similarity (float32), cluster_id, title_a, title_b, source_a, source_b,
published_at_a, published_at_b`` (UTC timestamps, null when unknown); ``id_a`` is the earlier item of the
pair by the clustering order rule; sorted by cluster then similarity (highest first). A run with a
reranker (:mod:`nlsim.rerank`) puts the rerank score in ``similarity`` and adds ``cosine`` (the
bi-encoder's) and ``cross_encoder``.

``clusters.parquet``: ``cluster_id, size, representative, representative_title, member_ids (list),
sources (list), first_published, last_published, max_similarity, mean_similarity`` (see
:mod:`nlsim.clustering`).

Example:
    >>> import tempfile, pathlib, pandas as pd
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> frame = pd.DataFrame({"id": ["a", "b"], "title": ["Flood", "Flood!"], "source": ["AP", "AFP"],
    ...                       "published_at": pd.to_datetime([None, None], utc=True)})
    >>> pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.97]})
    >>> from nlsim.clustering import build_clusters
    >>> labels, clusters = build_clusters(frame, pairs)
    >>> paths = write_report(out, pairs_table(frame, pairs, labels), clusters, {"model": "m"})
    >>> sorted(p.name for p in paths.values())
    ['clusters.parquet', 'index.html', 'overview.png', 'pairs.parquet', 'run.json', 'summary.md']
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.atomic import _fsync_dir, file_sha256
from nlsim.clustering import order_key

RERANK_COLUMNS = ("cosine", "cross_encoder")
REPORT_FILES = ("pairs.parquet", "clusters.parquet", "index.html", "summary.md", "overview.png")
HTML_MAX_CLUSTERS = 500


def pairs_table(frame: pd.DataFrame, pairs: pd.DataFrame, labels: pd.Series) -> pd.DataFrame:
    """Turn row-position pairs into the report's ``pairs`` table (ids, titles, sources, times)."""
    a = pairs["a"].to_numpy(dtype=np.int64)
    b = pairs["b"].to_numpy(dtype=np.int64)
    rank = order_key(frame["id"].tolist(), frame["published_at"])
    swap = rank[a] > rank[b]
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    out = pd.DataFrame(
        {
            "id_a": frame["id"].to_numpy()[a].astype(str),
            "id_b": frame["id"].to_numpy()[b].astype(str),
            "similarity": pairs["similarity"].to_numpy(dtype=np.float32),
            "cluster_id": labels.to_numpy()[a] if len(a) else np.array([], dtype=object),
            "title_a": frame["title"].to_numpy()[a].astype(str),
            "title_b": frame["title"].to_numpy()[b].astype(str),
            "source_a": frame["source"].to_numpy()[a].astype(str),
            "source_b": frame["source"].to_numpy()[b].astype(str),
            "published_at_a": frame["published_at"].to_numpy()[a],
            "published_at_b": frame["published_at"].to_numpy()[b],
        }
    )
    for col in ("published_at_a", "published_at_b"):
        out[col] = pd.to_datetime(out[col], utc=True).astype("datetime64[ns, UTC]")
    for col in RERANK_COLUMNS:  # a reranked run keeps both of its inputs beside the rerank score
        if col in pairs:
            out[col] = pairs[col].to_numpy(dtype=np.float32)
    out = out.sort_values(
        ["cluster_id", "similarity", "id_a", "id_b"], ascending=[True, False, True, True], kind="mergesort"
    )
    return out.reset_index(drop=True)


def _fmt_time(value: Any) -> str:
    return "" if value is None or pd.isna(value) else pd.Timestamp(value).strftime("%Y-%m-%d %H:%M")


def _fmt_pair_times(a: Any, b: Any) -> str:
    ta, tb = _fmt_time(a), _fmt_time(b)
    return f"{ta} / {tb}" if ta or tb else ""


def render_html(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    summary: dict[str, Any],
    frame: pd.DataFrame | None = None,
    max_clusters: int = HTML_MAX_CLUSTERS,
) -> str:
    """A static page for editors: one block per cluster, its items side by side with the scores."""
    esc = html.escape
    by_id = frame.set_index("id") if frame is not None else None
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>nlsim near-duplicate report</title><style>",
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}"
        "table{border-collapse:collapse;width:100%;margin-bottom:1.5em}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
        "th{background:#f0f0f0}.score{font-variant-numeric:tabular-nums;white-space:nowrap}"
        "h2{font-size:1.1em;margin-top:2em}.meta{color:#555}",
        "</style></head><body>",
        "<h1>Near-duplicate and related news items</h1>",
        "<p class='meta'>"
        + esc(
            f"{summary.get('items', '?')} items · {len(pairs)} pairs · {len(clusters)} clusters · "
            f"model {summary.get('model', '?')} · conversion {summary.get('conversion', '?')} · "
            f"threshold {summary.get('threshold', '?')} ({summary.get('threshold_source', '?')}) · "
            f"written {summary.get('finished_at', '')}"
        )
        + "</p>",
    ]
    parts.append(
        "<p><img src='overview.png' alt='pair similarities and cluster sizes' style='max-width:100%'></p>"
    )
    if len(clusters) > max_clusters:
        parts.append(
            f"<p>Showing the {max_clusters} largest of {len(clusters)} clusters; "
            "the Parquet files hold all of them.</p>"
        )
    grouped = {cid: grp for cid, grp in pairs.groupby("cluster_id", sort=False)}
    for _, c in clusters.head(max_clusters).iterrows():
        parts.append(
            f"<h2 id='{esc(str(c['cluster_id']))}'>{esc(str(c['cluster_id']))} · {int(c['size'])} items"
            f" · representative: {esc(str(c['representative_title']))}</h2>"
        )
        parts.append("<table><tr><th>item</th><th>title</th><th>source</th><th>published</th></tr>")
        for mid in c["member_ids"]:
            row = by_id.loc[mid] if by_id is not None else None
            title = esc(str(row["title"])) if row is not None else ""
            src = esc(str(row["source"])) if row is not None else ""
            when = _fmt_time(row["published_at"]) if row is not None else ""
            star = " ★" if mid == c["representative"] else ""
            parts.append(
                f"<tr><td>{esc(str(mid))}{star}</td><td>{title}</td><td>{src}</td><td>{when}</td></tr>"
            )
        parts.append(
            "</table><table><tr><th>similarity</th><th>title A</th><th>title B</th>"
            "<th>sources</th><th>published</th></tr>"
        )
        for _, p in grouped.get(c["cluster_id"], pairs.iloc[:0]).iterrows():
            parts.append(
                f"<tr><td class='score'>{p['similarity']:.3f}</td><td>{esc(p['title_a'])}</td>"
                f"<td>{esc(p['title_b'])}</td><td>{esc(p['source_a'])} / {esc(p['source_b'])}</td>"
                f"<td>{_fmt_pair_times(p['published_at_a'], p['published_at_b'])}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_overview_png(
    pairs: pd.DataFrame, clusters: pd.DataFrame, summary: dict[str, Any], path: Path
) -> None:
    """Two plots for a quick look: the pair similarities against the threshold, and the cluster sizes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    if len(pairs):
        left.hist(pairs["similarity"].to_numpy(dtype=float), bins=40, color="#4477aa")
    if isinstance(summary.get("threshold"), (int, float)):
        left.axvline(float(summary["threshold"]), color="#cc3311", linestyle="--", label="threshold")
        left.legend(loc="upper right")
    left.set(title=f"{len(pairs):,} pairs: cosine similarity", xlabel="cosine", ylabel="pairs")
    if len(clusters):
        sizes = clusters["size"].value_counts().sort_index()
        right.bar(sizes.index.astype(int), sizes.to_numpy(), color="#228833")
        right.set_yscale("log")
    right.set(title=f"{len(clusters):,} clusters: size", xlabel="items in the cluster", ylabel="clusters")
    fig.suptitle(f"{summary.get('items', '?')} items · model {summary.get('model', '?')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def render_markdown(
    pairs: pd.DataFrame, clusters: pd.DataFrame, summary: dict[str, Any], top: int = 10
) -> str:
    """A short Markdown summary: the run's figures and the largest clusters."""
    lines = ["# nlsim near-duplicate report", ""]
    for key in (
        "corpus",
        "items",
        "quarantined",
        "model",
        "conversion",
        "threshold",
        "threshold_source",
        "index",
        "pairs",
        "clusters",
        "clustered_items",
        "elapsed_s",
    ):
        if key in summary:
            lines.append(f"- **{key.replace('_', ' ')}**: {summary[key]}")
    lines += [
        "",
        f"## Largest clusters (top {min(top, len(clusters))})",
        "",
        "| cluster | size | representative | max sim |",
        "|---|---:|---|---:|",
    ]
    for _, c in clusters.head(top).iterrows():
        title = str(c["representative_title"]).replace("|", "\\|")
        lines.append(f"| {c['cluster_id']} | {int(c['size'])} | {title} | {c['max_similarity']:.3f} |")
    return "\n".join(lines) + "\n"


def write_report(
    out_dir: str | Path,
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    summary: dict[str, Any],
    frame: pd.DataFrame | None = None,
) -> dict[str, Path]:
    """Write the report files into ``out_dir``; returns their paths by name (plus ``run.json``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        **summary,
        "pairs": int(len(pairs)),
        "clusters": int(len(clusters)),
        "clustered_items": int(clusters["size"].sum()) if len(clusters) else 0,
        "finished_at": summary.get("finished_at") or datetime.now(UTC).isoformat(timespec="seconds"),
    }
    # the counts are those of the tables written, whatever the caller's summary said
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        pairs.to_parquet(staging / "pairs.parquet", index=False, engine="pyarrow")
        clusters.to_parquet(staging / "clusters.parquet", index=False, engine="pyarrow")
        (staging / "index.html").write_text(render_html(pairs, clusters, summary, frame), encoding="utf-8")
        (staging / "summary.md").write_text(render_markdown(pairs, clusters, summary), encoding="utf-8")
        render_overview_png(pairs, clusters, summary, staging / "overview.png")
        hashes = {name: file_sha256(staging / name) for name in REPORT_FILES}
        (staging / "run.json").write_text(
            json.dumps({**summary, "files": hashes}, indent=2, default=str), encoding="utf-8"
        )
        for name in (*REPORT_FILES, "run.json"):
            with open(staging / name, "rb") as fh:
                os.fsync(fh.fileno())
        for name in (*REPORT_FILES, "run.json"):
            os.replace(staging / name, out / name)
        _fsync_dir(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {name: out / name for name in (*REPORT_FILES, "run.json")}


def verify_report(out_dir: str | Path) -> dict[str, Any]:
    """Check that the report files match the hashes in ``run.json``; returns the run summary."""
    out = Path(out_dir)
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    for name, digest in run["files"].items():
        if file_sha256(out / name) != digest:
            raise ValueError(f"{out / name} does not match run.json (a partial write?)")
    return run
