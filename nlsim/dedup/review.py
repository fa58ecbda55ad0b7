"""The review panel of the report page: editors mark pairs, and their marks become training data.

Every pair the report shows can be marked with a level of the rubric (``annotations/RUBRIC.md``): the
pairs that joined a cluster, every other pair of items inside a cluster, the near misses (the best pairs
below the threshold, :mod:`nlsim.dedup.near_misses`, in a queue of their own, nearest the threshold
first), and any two items the editor picks, in one cluster or in two. Three levels are shown by default
(same story, same topic and entity but not the same event, not related), all five on request; by mouse,
or by keyboard: ``j``/``n`` next pair, ``k``/``p`` previous, ``1`` same story, ``2`` same topic and entity,
``3`` same topic or entity only, ``4`` same general area, ``0`` not related, ``x`` clears.

The marks are kept in the browser (``localStorage``, keyed by the report's run id), survive a reload and
can be cleared. The export downloads them as the editors' file (:mod:`nlsim.io.editor_file`) that
``nlsim annotate merge`` reads: nothing needs a server, the page stays one file. The pair ids are computed
in the browser as :func:`nlsim.io.editor_file.pair_id` computes them.

This module gives the page what the panel needs (:func:`review_meta`, :func:`near_miss_rows`), the panel's
HTML (:func:`review_section`), its script and style (``assets/review.js``, ``assets/review.css``), and the
model card's line on the editors' labels the model was trained on (:func:`editor_labels_text`).

Example:
    >>> from nlsim.dedup.record import ModelInfo, RunRecord
    >>> review_meta(RunRecord(run_id="batch-1a2b3c4d5e", model="m", threshold=0.9,
    ...                       model_info=ModelInfo(requested="current", version="v0002-1a2b3c4d")))["model"]
    'v0002-1a2b3c4d'
    >>> editor_labels_text({"merged": {"train": 30, "validation": 10}, "from_page": {"train": 12}})
    '30 training pairs from editors’ files (and 10 validation pairs); 12 of them marked in a report page'
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from importlib import resources
from typing import Any

import pandas as pd

from nlsim.dedup.record import RunRecord
from nlsim.io import editor_file

LEVELS = (
    (1.0, "1", "same story", "same event or story"),
    (0.75, "2", "same topic & entity", "same topic and same place or entity, not the same event"),
    (0.5, "3", "topic or entity", "same topic only, or same place or entity only"),
    (0.25, "4", "general area", "share only a very general area"),
    (0.0, "0", "not related", "unrelated"),
)
"""The rubric's levels as the page shows them: score, key, button label, description."""
THREE = (1.0, 0.75, 0.0)
"""The levels shown by default."""


def _asset(name: str) -> str:
    return resources.files("nlsim.dedup").joinpath("assets", name).read_text(encoding="utf-8")


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else round(f, 6)


def review_meta(record: RunRecord) -> dict[str, Any]:
    """What the panel and its export need from the run: the run id (the key of the marks), the model
    (its store version when it has one) and the threshold that showed the pairs, the levels."""
    info = record.info
    return {
        "runId": record.run_id,
        "model": info.version or record.model or info.model_id,
        "threshold": _num(record.threshold),
        "score": "rerank score" if record.rerank is not None else "cosine",
        "levels": [{"v": v, "key": k, "label": label, "title": title} for v, k, label, title in LEVELS],
        "three": list(THREE),
        "columns": list(editor_file.COLUMNS),
        "stratum": editor_file.PAGE,
    }


def near_miss_rows(near_misses: pd.DataFrame | None, item: Callable[[Any], int]) -> list[list[Any]]:
    """The near misses as the page's rows: item A, item B (indexes into the page's items, from ``item``),
    score, cosine, cross-encoder score, cluster of A, cluster of B; nearest the threshold first."""
    if near_misses is None or near_misses.empty:
        return []
    rows = []
    for r in near_misses.itertuples(index=False):
        rows.append(
            [
                item(r.id_a),
                item(r.id_b),
                _num(r.similarity),
                _num(getattr(r, "cosine", None)),
                _num(getattr(r, "cross_encoder", None)),
                None if pd.isna(r.cluster_a) else str(r.cluster_a),
                None if pd.isna(r.cluster_b) else str(r.cluster_b),
            ]
        )
    return rows


def review_section(data: dict[str, Any]) -> str:
    """The review panel: instructions, the annotator's name, the levels shown, export and clear, the
    picked pair, the near-miss queue and the list of marks (filled in by ``review.js``)."""
    meta = data["review"]
    keys = " · ".join(f"<kbd>{html.escape(k)}</kbd> {html.escape(label)}" for _, k, label, _ in LEVELS)
    n_near = len(data.get("nearMisses") or [])
    threshold = "?" if meta["threshold"] is None else f"{meta['threshold']:g}"
    return (
        "<section id='review' class='panel'><h2>Review: mark pairs for training</h2>"
        "<p class='meta'>Mark whether two items are the same story. Your marks train the next model: export "
        "them and hand the file to whoever runs <code>nlsim annotate merge</code>. They are kept in this "
        "browser for this report until you clear them. Mark any pair shown: the pairs that joined a cluster, "
        "every pair inside a cluster, the near misses below, or two items you pick (<em>pick</em> beside an "
        "item of an opened cluster).</p>"
        f"<p class='meta rv-keys'>Keys: <kbd>j</kbd>/<kbd>n</kbd> next pair, <kbd>k</kbd>/<kbd>p</kbd> "
        f"previous · {keys} · <kbd>x</kbd> clear</p>"
        "<div class='rv-bar'>"
        "<label>Your name <input id='rv-annotator' type='text' autocomplete='name' "
        "placeholder='asked at the first export'></label>"
        "<label>Levels <select id='rv-levels'><option value='3'>three</option>"
        "<option value='5'>all five</option></select></label>"
        "<span id='rv-count' class='rv-count' aria-live='polite'></span>"
        "<button type='button' id='rv-export'>Export new marks (CSV)</button>"
        "<button type='button' id='rv-export-all'>Export all marks</button>"
        "<button type='button' id='rv-clear'>Clear marks</button>"
        "</div>"
        "<p id='rv-status' class='meta' role='status'></p>"
        "<div id='rv-picked' class='rv-picked' hidden><h3>Picked pair</h3><table class='rv-table'>"
        "<tbody id='rv-picked-body'></tbody></table></div>"
        f"<h3>Near misses: the {n_near:,} best pairs below the threshold ({html.escape(meta['score'])} "
        f"&lt; {html.escape(threshold)}), nearest first</h3>"
        "<p class='meta'>Pairs the model came close to grouping and did not: mark those that are the same "
        "story.</p>"
        "<table class='rv-table' id='rv-near'><thead><tr><th>score</th><th>item A</th><th>item B</th>"
        "<th>your verdict</th></tr></thead><tbody></tbody></table>"
        "<div id='rv-near-more'></div>"
        "<details id='rv-marked'><summary>Your marks</summary><table class='rv-table'><thead><tr>"
        "<th>score</th><th>item A</th><th>item B</th><th>your verdict</th></tr></thead><tbody></tbody>"
        "</table></details>"
        "<noscript><p class='notice'>Marking pairs needs the page's script.</p></noscript>"
        "</section>"
    )


def review_style() -> str:
    """The panel's style (inline)."""
    return _asset("review.css")


def review_script() -> str:
    """The panel's script (inline, after the report's)."""
    return _asset("review.js")


def editor_labels_text(labels: dict[str, Any] | None) -> str:
    """The model card's words on the editors' labels a model was trained on ('' for a model without the
    record: trained before it was kept)."""
    if labels is None:
        return ""
    merged = labels.get("merged") or {}
    page = labels.get("from_page") or {}
    train, validation = int(merged.get("train", 0)), int(merged.get("validation", 0))
    text = f"{train:,} training pairs from editors’ files (and {validation:,} validation pairs)"
    return text + f"; {int(page.get('train', 0)):,} of them marked in a report page"
