"""The review panel of the report page: editors mark pairs, and their marks become training data.

Every pair the report shows can be marked with a level of the rubric (``annotations/GUIDELINES.md``,
embedded in the page as :data:`RUBRIC` and :data:`RULES`: the page is one file, offline): the
pairs that joined a cluster, every other pair of items inside a cluster, the near misses (the best pairs
below the threshold, :mod:`nlsim.report.near_misses`, in a queue of their own, nearest the threshold
first), and any two items the editor picks, in one cluster or in two. Three levels are shown by default
(same story, same topic and entity but not the same event, not related), all five on request; by mouse,
or by keyboard: ``j``/``n`` next pair, ``k``/``p`` previous, ``1`` same story, ``2`` same topic and entity,
``3`` same topic or entity only, ``4`` same general area, ``0`` not related, ``x`` clears.

Doubtful clusters come first: each cluster's weakest link (:mod:`nlsim.clusters.weakest_link`), nearest
the threshold first. A pair an editor already scored is never offered in the queues: the page is given the
pair ids of the scored pairs (:func:`editors_data`), never their scores, and checks a pair's id in the
browser. Where the page shows a scored training pair (a cluster's pairs), an editor may still mark it: the
mark overrules the annotator's score (the export's :data:`nlsim.io.editor_file.OVERRULE` column says so).
A validation or test pair shows no buttons, and says why: it is held out to measure the model. A mark
below *same story* on two items of one cluster splits the cluster in the page at once, and a *same story*
mark on items of two clusters (or of a cluster and an item of none) joins them: a preview, the groups the
run's story rule makes (``assets/rules.js``, a port of :mod:`nlsim.clusters.rules`, with the run's rule
and cut) of the cluster's links, or the two clusters', and the links the rule left apart from them (near
misses at or above the threshold, with the clusters and items they reach), with the editors' verdicts the
report honours and the marks as verdicts, each named as the run names it (:mod:`nlsim.clusters.assign`: in a
batch report after its earliest item; in a daily one a merge keeps the earliest cluster's id and a split the
larger piece's); the merged verdict makes it last (:mod:`nlsim.clusters.verdicts`).

The marks are kept in the browser (``localStorage``, keyed by the report's run id), survive a reload,
are shared by the tabs the report is open in (each takes in the others' marks as they are made) and can be
cleared; each keeps the two texts it was marked with, so a mark kept from another report of the same
run id (another cluster rule, the editors' verdicts merged since) is exported even where this page does not
hold its items (a mark kept without them is left out of the export, and the page says so). The export
downloads them as the editors' file (:mod:`nlsim.io.editor_file`) that
``nlsim annotate merge`` reads: nothing needs a server, the page stays one file. The pair ids are computed
in the browser as :func:`nlsim.io.editor_file.pair_id` computes them, with a SHA-256 written in the page's
own script (no ``crypto.subtle``, which a browser gives only to a secure context: the export works on a
page opened from disk, from localhost or over plain HTTP from any host). The export appends
:data:`nlsim.io.editor_file.HASH_COLUMNS` (the SHA-256 of each item's text, for the merge to tell an edited
text) and :data:`nlsim.io.editor_file.MARKED_AT` (when each mark was made, for the merge to let the newer
of two decisions on a pair stand) and writes a text cell that a spreadsheet would read as a formula with an
apostrophe in front (:func:`nlsim.report.spreadsheet.csv_text`'s rule).

This module gives the page what the panel needs (:func:`review_meta`, :func:`editors_data`), the panel's
HTML (:func:`review_section`), its script and style (``assets/review.js``, ``assets/review.css``), and the
model card's line on the editors' labels the model was trained on (:func:`editor_labels_text`).

Example:
    >>> from nlsim.report.record import ModelInfo, RunRecord
    >>> review_meta(RunRecord(run_id="batch-1a2b3c4d5e", model="m", threshold=0.9,
    ...                       model_info=ModelInfo(requested="current", version="v0002-1a2b3c4d")))["model"]
    'v0002-1a2b3c4d'
    >>> editor_labels_text({"merged": {"train": 30, "validation": 10}, "from_page": {"train": 12}})
    '30 training pairs from editors’ files (and 10 validation pairs); 12 of them marked in a report page'
"""

from __future__ import annotations

import html
from collections.abc import Callable, Container
from importlib import resources
from typing import Any

from nlsim.io import columns, editor_file
from nlsim.report.record import EditorsRecord, RunRecord
from nlsim.report.spreadsheet import FORMULA_START

LEVELS = (
    (1.0, "1", "same story or a very narrow shared topic", "same event, or a very narrow shared topic"),
    (0.75, "2", "same topic & entity", "same topic and same place or entity, not the same event"),
    (0.5, "3", "topic or entity", "same topic only, or same place or entity only"),
    (0.25, "4", "general area", "share only a very general area"),
    (0.0, "0", "not related", "unrelated"),
)
"""The rubric's levels as the page shows them: score, key, button label, description."""
THREE = (1.0, 0.75, 0.0)
"""The levels shown by default."""
RUBRIC = (
    (
        1.0,
        "same story",
        "reports the same event or a very narrow shared topic: one headline rewrites or follows up the "
        "other, or both cover the same specific happening (the same match, the same company announcement, "
        "the same exam sitting, the same product's launch or price, the same court case, the same market "
        "session).",
    ),
    (
        0.75,
        "same topic and same entity",
        "shares a fairly specific topic (civil-service exams, Sony camcorders, A-share daily market moves, "
        "NBA trades, Beijing housing prices) and the same specific place or entity set, but is not the same "
        "event. Entity set = a country other than mainland China, or, for domestic news, a specific "
        "province/city, organisation, company, team, person or product line.",
    ),
    (
        0.5,
        "same topic or same entity",
        "shares the specific topic only (different places/entities), or the specific place/entity only "
        "(different topics). E.g. two different universities' admissions notices; two items about Japan on "
        "unrelated subjects.",
    ),
    (
        0.25,
        "same broad area",
        "shares only a very general area (both sports, both finance/stocks, both games, both "
        "entertainment, both education) or only a broad region, nothing more specific.",
    ),
    (0.0, "unrelated", "nothing in common worth the name."),
)
"""The rubric's five levels as ``annotations/GUIDELINES.md`` words them (score, level, the pair...): the
page carries them, so an editor reads the rubric where the pairs are marked."""
RULES = (
    "Judge the news content, not word overlap. Template-like headlines that share boilerplate "
    '("2010年…招生簡章") but concern different institutions are 0.5, not 1.',
    "Different sports or leagues are 0.25.",
    'Mainland China alone does not count as a shared "country" (almost every item is Chinese news): use the '
    "more specific entity (province, city, company...) instead.",
    "When torn between two levels, pick the lower one only if the higher one's condition is clearly not met.",
    'Exams: "the same exam sitting" (1) means both items are news about one sitting of one exam (one '
    "year's 考研, one province's one year's 高考): its registration figures or rules, exam days, papers or "
    "answers, score lines, results or admissions. Study guides, prep tips and coaching material are not news "
    "about the sitting: two of them are 0.75, and one of them against news of the sitting is 0.75. Different "
    "years are never 1.",
    "A product, a property project, a game or a show: the same launch, price, promotion or announcement is "
    "1; two different promotions, reviews, events or updates of it are 0.75.",
)
"""The rubric's rules on choosing a level (``annotations/GUIDELINES.md``, *Rules* 1 to 4, 6 and 7)."""


def _asset(name: str) -> str:
    return resources.files("nlsim.report").joinpath("assets", name).read_text(encoding="utf-8")


def review_meta(record: RunRecord) -> dict[str, Any]:
    """What the panel and its export need from the run: the run id (the key of the marks), the model
    (its store version when it has one) and the threshold that showed the pairs, the levels, and how many
    near misses the run asked for (``None``: not known)."""
    info = record.info
    return {
        "runId": record.run_id,
        "model": info.version or record.model or info.model_id,
        "threshold": columns.page_threshold(record.threshold, 6),
        "score": "rerank score" if record.rerank is not None else "cosine",
        "nearMissLimit": record.near_miss_limit,
        "levels": [{"v": v, "key": k, "label": label, "title": title} for v, k, label, title in LEVELS],
        "three": list(THREE),
        "columns": list(editor_file.COLUMNS),
        "hashColumns": list(editor_file.HASH_COLUMNS),
        "markedColumn": editor_file.MARKED_AT,
        "overruleColumn": editor_file.OVERRULE,
        "formulaStart": list(FORMULA_START),
        "formulaBlanks": editor_file.FORMULA_BLANKS,
        "stratum": editor_file.PAGE,
    }


def editors_data(
    editors: EditorsRecord | None, item: Callable[[Any], int], known: Container[str]
) -> dict[str, Any]:
    """What the page takes from the editors (:class:`~nlsim.report.record.EditorsRecord`): the pair ids
    of the pairs already scored (``scored``: the review queue leaves them out; ids only, never their
    scores), of them the training pairs (``training``: an editor may still mark one, the mark overrules
    its score) and the validation and test pairs (``heldOut``: held out to measure the model, never
    marked), and the editors' decisions in this report (``decisions``: objects of ``a`` and ``b``, indexes
    into the page's items, and the verdict's ``score``, for the items the page shows; a same-story verdict
    another verdict overruled carries ``overruled``: its items are not joined; one with an editor's note
    carries it whole, ``notes``)."""
    if editors is None:
        return {"scored": [], "training": [], "heldOut": [], "decisions": []}

    notes = {frozenset((str(a), str(b))): str(note) for a, b, note in editors.notes}

    def noted(a: Any, b: Any) -> dict[str, str]:
        note = notes.get(frozenset((str(a), str(b))), "")
        return {"notes": note} if note else {}

    def shown(rows: list[list[Any]], **flag: bool) -> list[dict[str, Any]]:
        return [
            {"a": item(a), "b": item(b), "score": columns.page_number(score, 6), **flag, **noted(a, b)}
            for a, b, score in rows
            if str(a) in known and str(b) in known
        ]

    decisions = shown(editors.decisions) + shown(editors.overruled, overruled=True)
    return {
        "scored": list(editors.scored_ids),
        "training": list(editors.training_ids),
        "heldOut": list(editors.held_out_ids),
        "decisions": decisions,
    }


def _no_near_miss(limit: int | None) -> str:
    """Why the near-miss queue is empty: none asked for (``--near-misses 0``), none found, or not known (a
    record written before the limit was kept)."""
    if limit is None:
        return "none in this report"
    if limit <= 0:
        return "none asked for (<code>--near-misses 0</code>)"
    return "none: no candidate pair came close to the threshold"


def _near_heading(data: dict[str, Any], threshold: str) -> str:
    """The near misses' heading: how many are below the threshold and how many at or above it (pairs the
    cluster rule or an editor's verdict kept in two clusters, :func:`nlsim.dedup.stages.near_misses`)."""
    meta = data["review"]
    near = data.get("nearMisses") or []
    score = html.escape(meta["score"])
    at = meta["threshold"]
    above = (
        0 if at is None else sum(1 for p in near if p.get("similarity") is not None and p["similarity"] >= at)
    )
    bound = html.escape(threshold)
    if not near:
        return f"<h3>Near misses: {_no_near_miss(meta.get('nearMissLimit'))}</h3>"
    if len(near) == 1 and not above:
        return f"<h3>Near misses: the best pair below the threshold ({score} &lt; {bound})</h3>"
    if len(near) == 1:
        return (
            f"<h3>Near misses: the best pair the report left apart: at or above the threshold ({score} ≥ "
            f"{bound}), kept in two clusters by the cluster rule or an editor’s verdict</h3>"
        )
    if not above:
        return (
            f"<h3>Near misses: the {len(near):,} best pairs below the threshold ({score} "
            f"&lt; {bound}), nearest first</h3>"
        )
    return (
        f"<h3>Near misses: the {len(near):,} best pairs the report left apart, highest score first: "
        f"{above:,} at or above the threshold ({score} ≥ {bound}) that the cluster rule or "
        f"an editor’s verdict kept in two clusters, {len(near) - above:,} below it</h3>"
    )


def review_section(data: dict[str, Any]) -> str:
    """The review panel: instructions, the annotator's name, the levels shown, export and clear, the
    picked pair, the near-miss queue and the list of marks (filled in by ``review.js``)."""
    meta = data["review"]
    keys = " · ".join(f"<kbd>{html.escape(k)}</kbd> {html.escape(label)}" for _, k, label, _ in LEVELS)
    digits = data.get("scoreDigits", 3)
    threshold = "?" if meta["threshold"] is None else f"{meta['threshold']:.{digits}f}"
    return (
        "<section id='review' class='panel'><h2>Review: mark pairs for training</h2>"
        "<p class='meta'>Mark whether two items are the same story, with the levels of "
        "<a href='#rubric' class='rv-rubric-link'>the rubric</a>. Your marks train the next model: export "
        "them and hand the file to whoever runs <code>nlsim annotate merge</code>. They are kept in this "
        "browser for this report until you clear them. Mark any pair shown: the pairs that joined a cluster, "
        "every pair inside a cluster, the near misses below, or two items you pick (<em>pick</em> beside an "
        "item of an opened cluster). A pair an editor already scored is not offered again.</p>"
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
        "<h3>Doubtful clusters first: each cluster's weakest link, nearest the threshold first</h3>"
        "<p class='meta'>The link a cluster would fall apart at: mark <em>not the same story</em> and the "
        "cluster is split in this page at once (a preview); once your marks are merged, every later report "
        "and daily run keeps the two items apart.</p>"
        "<table class='rv-table' id='rv-doubtful'><thead><tr><th>weakest link</th><th>item A</th>"
        "<th>item B</th><th>your verdict</th></tr></thead><tbody></tbody></table>"
        "<div id='rv-doubtful-more'></div>"
        + _near_heading(data, threshold)
        + "<p class='meta'>Pairs the model came close to grouping and did not: mark those that are the same "
        "story.</p>"
        "<table class='rv-table' id='rv-near'><thead><tr><th>score</th><th>item A</th><th>item B</th>"
        "<th>your verdict</th></tr></thead><tbody></tbody></table>"
        "<div id='rv-near-more'></div>"
        "<details id='rv-decisions'><summary>Editors’ decisions in this report</summary>"
        "<p class='meta'>Verdicts merged earlier (training pairs) that this report honours: same story joins "
        "the two items, not the same story keeps them apart.</p><table class='rv-table'><thead><tr>"
        "<th>decision</th><th>item A</th><th>item B</th></tr></thead><tbody></tbody></table></details>"
        "<details id='rv-marked'><summary>Your marks</summary><table class='rv-table'><thead><tr>"
        "<th>score</th><th>item A</th><th>item B</th><th>your verdict</th></tr></thead><tbody></tbody>"
        "</table></details>"
        "<noscript><p class='notice'>Marking pairs needs the page's script.</p></noscript>"
        "</section>"
    )


def rubric_section() -> str:
    """The rubric (:data:`RUBRIC`, :data:`RULES`) as a section of its own, folded: opened by the review
    panel's link (``#rubric``)."""
    rows = "".join(
        f"<tr><td class='num'>{score:g}</td><th scope='row'>{html.escape(level)}</th>"
        f"<td>{html.escape(text)}</td></tr>"
        for score, level, text in RUBRIC
    )
    rules = "".join(f"<li>{html.escape(rule)}</li>" for rule in RULES)
    return (
        "<section id='rubric' class='panel'><details id='rubric-levels'><summary><h2>The rubric: how related "
        "are two news items?</h2></summary>"
        "<p class='meta'>One level for how related the <em>news</em> is (the editors' guidelines, "
        "<code>annotations/GUIDELINES.md</code>). The page's buttons carry the levels' names; the three "
        "shown by default are same story (1), same topic and same entity (0.75) and unrelated (0).</p>"
        "<table class='rubric'><thead><tr><th>score</th><th>level</th><th>the pair...</th></tr></thead>"
        f"<tbody>{rows}</tbody></table><h3>Rules</h3><ol>{rules}</ol></details></section>"
    )


def review_style() -> str:
    """The panel's style (inline)."""
    return _asset("review.css")


def review_script() -> str:
    """The panel's script (inline, after the report's)."""
    return _asset("review.js")


def editor_labels_text(labels: dict[str, Any] | None) -> str:
    """The model card's words on the editors' labels a model was trained on ('' for a model without the
    record: trained before it was kept), the training pairs an editor overruled said apart (a record kept
    before they were counted says none).

    >>> labels = {"merged": {"train": 3}, "from_page": {}, "overruled": {"train": 2}}
    >>> editor_labels_text(labels).split("; ")[-1]
    '2 training pairs read with an editor’s newer score over the pair file’s (overruled)'
    """
    if labels is None:
        return ""
    merged = labels.get("merged") or {}
    page = labels.get("from_page") or {}
    train, validation = int(merged.get("train", 0)), int(merged.get("validation", 0))
    text = f"{train:,} training pairs from editors’ files (and {validation:,} validation pairs)"
    text += f"; {int(page.get('train', 0)):,} of them marked in a report page"
    overruled = int((labels.get("overruled") or {}).get("train", 0))
    if overruled:
        pairs = "pair" if overruled == 1 else "pairs"
        text += f"; {overruled:,} training {pairs} read with an editor’s newer score over the pair file’s "
        text += "(overruled)"
    return text
