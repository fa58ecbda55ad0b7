"""The report page for editors (``index.html``) and its overview plot (``overview.png``).

The page opens with the model card of the run (which model judged, how well it agrees with the editors'
labels, where the threshold came from), then one block per cluster: its items, and the pairs (with their
scores) that joined it.

Example:
    >>> import pandas as pd
    >>> page = render_html(pd.DataFrame(columns=["cluster_id"]), pd.DataFrame(columns=["cluster_id"]),
    ...                    {"items": 0, "model": "m"})
    >>> page.startswith("<!doctype html>")
    True
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

HTML_MAX_CLUSTERS = 500


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
    import matplotlib  # deferred: matplotlib costs ~1 s to import and only the report needs it

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
