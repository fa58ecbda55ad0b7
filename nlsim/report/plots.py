"""The report's overview plot (``overview.png``, behind the page's overview): the pair similarities
against the threshold, and the cluster sizes.

matplotlib is imported when a plot is drawn, never before: it costs about a second to import, and only the
report needs it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nlsim.report.record import RunRecord


def render_overview_png(pairs: pd.DataFrame, clusters: pd.DataFrame, record: RunRecord, path: Path) -> None:
    """Two plots for a quick look: the pair similarities against the threshold, and the cluster sizes."""
    import matplotlib  # deferred: matplotlib costs ~1 s to import and only the report needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: heavy or optional, loaded only when needed
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    if len(pairs):
        left.hist(pairs["similarity"].to_numpy(dtype=float), bins=40, color="#4477aa")
    if record.threshold is not None:
        left.axvline(float(record.threshold), color="#cc3311", linestyle="--", label="threshold")
        left.legend(loc="upper right")
    score = "rerank score" if record.rerank is not None else "cosine"
    left.set(title=f"{len(pairs):,} pairs: {score}", xlabel=score, ylabel="pairs")
    if len(clusters):
        sizes = clusters["size"].value_counts().sort_index()
        right.bar(sizes.index.astype(int), sizes.to_numpy(), color="#228833")
        right.set_yscale("log")
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.set(title=f"{len(clusters):,} clusters: size", xlabel="items in the cluster", ylabel="clusters")
    items = "?" if record.items is None else record.items
    fig.suptitle(f"{items} items · model {record.model or '?'}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
