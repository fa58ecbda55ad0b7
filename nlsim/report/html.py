"""The report page for editors (``index.html``) and its overview plot (``overview.png``).

``index.html`` is one self-contained file (inline CSS and JavaScript, no network, no CDN). It opens on what
an editor comes for, in this order:

- what an editor must know first: a zero-shot model (no fine-tuned model was ever promoted), a model switch
  in a daily run;
- one line in plain words on how far to trust the groupings (:func:`plain_quality`: "about two in three of
  the pairs this model links are truly the same story");
- every cluster, in pages of 50 (rendered in the browser from the data embedded in the page, so thousands
  of clusters stay fast), with search, filters and sort; each cluster's items (linked to the article when
  the corpus has an http(s) ``url``), its daily status (new / grown / merged / regrouped, the items that
  joined, the clusters it absorbed) and the pairs, with their scores, that joined it;
- the review panel and the rubric (:mod:`nlsim.report.review`);
- the model card: which model judged (version, zero-shot or fine-tuned), its Spearman agreement with the
  annotated pairs before and after fine-tuning, precision/recall/F1 at the threshold in use and where that
  threshold came from, the learning curve when the model folder has one;
- an overview: counts, clusters by size, by day (or month) of their first item and by daily status, each a
  filter; ``overview.png``.

Times, and the days clusters are grouped by, are in the run's time zone (``--timezone``, the daily
deployment's ``timezone``; :func:`page_zone`). Scores are shown with the threshold's decimals, cut, never
rounded up (:func:`score_digits`).

Titles are text, never markup: the page builds the list with ``textContent``, and the data is embedded as
JSON with ``<``, ``>`` and ``&`` escaped. User text (titles, sources, ids, file and model names) is
bidi-isolated (``<bdi>``, ``dir=auto``, isolate marks in ``<option>``): a right-to-left override in it
reorders only itself, never the page's own words around it. ``lang`` is set on the page (``en``, its own
words) and on every title holding Han characters (``zh-Hant`` / ``zh-Hans`` from the run's conversion, else
``zh``), and the font stack names CJK fonts of every platform.

Example:
    >>> import pandas as pd
    >>> from nlsim.report.record import RunRecord
    >>> page = render_html(pd.DataFrame(columns=["cluster_id"]), pd.DataFrame(columns=["cluster_id"]),
    ...                    RunRecord(model="m", counts={"items_in": 0}))
    >>> page.startswith("<!doctype html>"), '<html lang="en">' in page
    (True, True)
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd

from nlsim.evaluation.judge import Judgement
from nlsim.io import columns
from nlsim.report import review
from nlsim.report.record import ModelCard, RunRecord
from nlsim.report.scores import with_scores
from nlsim.report.spreadsheet import XLSX_CELL_CHARACTERS, TextChange, text_changes

PAGE_SIZE = 50
"""Clusters per page of the list (the reader can choose 20, 50, 100 or 500)."""
SIZE_BUCKETS = (
    (2, 2, "2"),
    (3, 3, "3"),
    (4, 5, "4–5"),
    (6, 10, "6–10"),
    (11, 20, "11–20"),
    (21, None, "21+"),
)
MAX_DAYS = 62
"""Clusters are counted by day of their first item up to this many days, by month beyond."""
CJK_LANG = {"tw2sp": "zh-Hant", "t2s": "zh-Hant", "s2t": "zh-Hans", "s2twp": "zh-Hans"}
"""The ``lang`` of Chinese titles, from the run's conversion (its source script); ``zh`` otherwise."""
LEVEL_NAMES = {1.0: "same story", 0.75: "same topic and entity"}
STATUS_TEXT = {
    "new": "new clusters",
    "grown": "grown (new items joined)",
    "merged": "merged (absorbed other clusters)",
    "regrouped": "regrouped after a model change",
    "dissolved": "dissolved by a model change (its items are no longer grouped together)",
    "unchanged": "unchanged",
}
STATUSES = tuple(STATUS_TEXT)
esc = html.escape


def iso(text: Any) -> str:
    """User text (a title, a source, an id, a file name) escaped and isolated from the page's own words:
    a right-to-left override in it cannot reorder the text around it.

    >>> iso("AP\u202e <b>")
    '<bdi>AP\u202e &lt;b&gt;</bdi>'
    """
    return f"<bdi>{esc(str(text))}</bdi>"


def _asset(name: str) -> str:
    return resources.files("nlsim.report").joinpath("assets", name).read_text(encoding="utf-8")


safe_url = columns.safe_url


def page_zone(name: str | None) -> ZoneInfo:
    """The time zone the page shows its times and days in: the run's ``--timezone`` (UTC when the run
    recorded none, or names a zone this machine does not know).

    >>> page_zone("Asia/Taipei").key, page_zone(None).key, page_zone("Mars/Olympus").key
    ('Asia/Taipei', 'UTC', 'UTC')
    """
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _time(value: Any, zone: ZoneInfo | None = None) -> str | None:
    """A time as the page shows it, ``YYYY-MM-DD HH:MM`` in ``zone`` (UTC by default).

    >>> _time("2024-08-01T20:30Z"), _time("2024-08-01T20:30Z", ZoneInfo("Asia/Taipei"))
    ('2024-08-01 20:30', '2024-08-02 04:30')
    """
    return columns.page_time(value, zone)


SCORE_DIGITS = 6
"""Scores are kept in the page to this many decimals (shown to the threshold's, :func:`score_digits`)."""


def _num(value: Any, digits: int = 4) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else round(f, digits)


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _list(value: Any) -> list[Any]:
    """A list column's cell (a list, or a NumPy array when read from Parquet) as a list; nothing -> []."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return list(value)


def _size_bucket(size: int) -> str:
    for lo, hi, label in SIZE_BUCKETS:
        if size >= lo and (hi is None or size <= hi):
            return label
    return str(size)


def _periods(firsts: list[str | None]) -> tuple[str, list[str | None]]:
    """Each cluster's period (``YYYY-MM-DD``, or ``YYYY-MM`` when the clusters span too many days)."""
    days = {f[:10] for f in firsts if f}
    if len(days) <= MAX_DAYS:
        return "day", [f[:10] if f else None for f in firsts]
    return "month", [f[:7] if f else None for f in firsts]


class _Items:
    """The page's items: each id once, as an object of the ``items`` columns the report shows (``id``,
    ``title``, ``source``, ``url``, ``published_at``, :mod:`nlsim.io.columns`), found by its index; times
    in ``zone``."""

    def __init__(self, frame: pd.DataFrame | None, zone: ZoneInfo | None = None) -> None:
        self.columns = [columns.ITEMS.column("id"), *columns.shown()]
        self.empty = {c.name: columns.page_value(c, None) for c in self.columns}
        self.known: dict[str, dict[str, Any]] = {}
        if frame is not None and len(frame):
            rows = columns.page_rows(
                frame.assign(id=frame["id"].astype(str)), self.columns, zone, SCORE_DIGITS
            )
            self.known = {row["id"]: self.empty | row for row in rows}  # a column the frame lacks: empty
        self.rows: list[dict[str, Any]] = []
        self.index: dict[str, int] = {}

    def __call__(self, item_id: Any) -> int:
        """The index of ``item_id`` in :attr:`rows` (added at its first use)."""
        key = str(item_id)
        if key not in self.index:
            self.index[key] = len(self.rows)
            known = self.known.get(key)
            self.rows.append(known if known is not None else self.empty | {"id": key})  # unknown: its id only
        return self.index[key]


def pair_row(row: Any, item: _Items, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """One pair as the page's script reads it: ``a`` and ``b`` (indexes into the page's items), its scores
    under their column names (to :data:`SCORE_DIGITS` decimals), and the ``extra`` columns of its table."""
    out: dict[str, Any] = {"a": item(row.id_a), "b": item(row.id_b)}
    for c in columns.SCORES:
        out[c.name] = columns.page_value(c, getattr(row, c.name, None), digits=SCORE_DIGITS)
    for name in extra:
        value = getattr(row, name, None)
        out[name] = None if value is None or pd.isna(value) else str(value)
    return out


def _cluster_pairs(pairs: pd.DataFrame, item: _Items) -> dict[str, list[dict[str, Any]]]:
    """Each cluster's pairs as the page's rows (:func:`pair_row`)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    if not len(pairs) or "cluster_id" not in pairs:
        return rows
    for r in with_scores(pairs).itertuples(index=False):
        rows.setdefault(str(r.cluster_id), []).append(pair_row(r, item))
    return rows


def _cluster_row(
    c: Any, item: _Items, pair_rows: dict[str, list[dict[str, Any]]], zone: ZoneInfo | None = None
) -> dict[str, Any]:
    """One cluster as the page's script reads it (its times in ``zone``)."""
    members = [item(m) for m in list(c.member_ids)]  # indexed in this order: members, added, representative
    added = [item(m) for m in _list(getattr(c, "added_ids", None))]
    return {
        "id": str(c.cluster_id),
        "status": _text(getattr(c, "status", "new")) or "new",
        "size": int(c.size),
        "bucket": _size_bucket(int(c.size)),
        "rep": item(c.representative),
        "members": members,
        "added": added,
        "absorbed": [str(x) for x in _list(getattr(c, "absorbed", None))],
        "sources": [str(x) for x in _list(getattr(c, "sources", None))],
        "first": _time(getattr(c, "first_published", None), zone),
        "last": _time(getattr(c, "last_published", None), zone),
        "max": _num(getattr(c, "max_similarity", None), SCORE_DIGITS),
        "mean": _num(getattr(c, "mean_similarity", None), SCORE_DIGITS),
        "weakest": _num(getattr(c, "weakest_link", None), SCORE_DIGITS),
        "pairs": sorted(pair_rows.get(str(c.cluster_id), []), key=lambda p: -(p["similarity"] or 0)),
    }


def page_data(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    frame: pd.DataFrame | None,
    near_misses: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """What the page's script renders: items (objects of the ``items`` columns the report shows) and
    clusters (members, status, added items, absorbed ids, scores and the pairs that joined them), the
    columns' labels; for the review panel, the near misses and what the export records
    (:mod:`nlsim.report.review`). Times and days are in the run's
    time zone (``timeZone``); scores are shown with ``scoreDigits`` decimals."""
    zone = page_zone(record.timezone)
    item = _Items(frame, zone)
    pair_rows = _cluster_pairs(pairs, item)
    out = [
        _cluster_row(c, item, pair_rows, zone)
        for c in (clusters.itertuples(index=False) if len(clusters) else ())
    ]
    unit, periods = _periods([c["first"] for c in out])
    for c, p in zip(out, periods, strict=True):
        c["period"] = p
    return {
        "daily": record.daily,
        "cjkLang": CJK_LANG.get(record.conversion, "zh"),
        "pageSize": PAGE_SIZE,
        "periodUnit": unit,
        "rerank": record.rerank is not None,
        "threshold": _num(record.threshold, 6),
        "scoreDigits": score_digits(record.threshold),
        "timeZone": zone.key,
        "items": item.rows,
        "labels": {name: columns.table(name).labels for name in ("items", "pairs")},
        "clusters": out,
        "nearMisses": review.near_miss_rows(near_misses, lambda r, extra: pair_row(r, item, extra)),
        "review": review.review_meta(record),
        "editors": review.editors_data(record.editors, item, item.known),
    }


def _json_script(data: dict[str, Any]) -> str:
    """JSON safe inside ``<script>``: no ``</script>``, no ``<!--``, no entity."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _level_name(level: Any) -> str:
    lv = _num(level)
    if lv is None:
        return "?"
    return LEVEL_NAMES.get(lv, f"relatedness ≥ {lv:g}") + f" (score ≥ {lv:g})"


def _fmt(value: Any, digits: int = 3) -> str:
    v = _num(value, 6)
    return "–" if v is None else f"{v:.{digits}f}"


def score_digits(threshold: Any) -> int:
    """How many decimals the page shows a score with: as many as the threshold has (at least 3, at most 6).
    The page's script cuts a score to them (rounds down, never up), so a score below the threshold never
    shows as the threshold itself (0.909419 is 0.9094 beside the threshold 0.9095, not 0.909).

    >>> score_digits(0.9095), score_digits(0.9), score_digits(0.909485), score_digits(None)
    (4, 3, 6, 3)
    """
    t = _num(threshold, 6)
    if t is None:
        return 3
    decimals = f"{t:.6f}".rstrip("0").split(".")[1]
    return max(3, len(decimals))


def threshold_text(threshold: Any) -> str:
    """The threshold as the page shows it, with its own decimals (:func:`score_digits`).

    >>> threshold_text(0.9095), threshold_text(0.9), threshold_text(None)
    ('0.9095', '0.900', '–')
    """
    return _fmt(threshold, score_digits(threshold))


def _notices(record: RunRecord) -> list[str]:
    """The banners at the top: zero-shot model, model switch."""
    info = record.info
    model = record.model_name
    parts = []
    if info.zero_shot:
        if info.requested == "current":
            parts.append(
                "<div class='notice warn' id='zero-shot'><strong>Zero-shot model.</strong> No fine-tuned "
                "model has been promoted in the model store yet: this report was made with the zero-shot "
                f"<code>{iso(model)}</code>, a weaker judge of “same story” than a model fine-tuned on your "
                "editors' pairs. Run <code>nlsim pipeline</code> to train, evaluate and promote one.</div>"
            )
        else:
            parts.append(
                "<div class='notice' id='zero-shot'><strong>Zero-shot model.</strong> "
                f"<code>{iso(model)}</code> was not fine-tuned on annotated pairs.</div>"
            )
    sw = record.model_switch
    if sw is not None:
        what = (
            f"all {sw.reembedded:,} items of the window were embedded again"
            if sw.reembed
            else "the window's items were paired again"
        )
        details = "; ".join(str(d) for d in sw.details)
        parts.append(
            "<div class='notice warn' id='model-switch'><strong>Model switch.</strong> The state was made "
            f"with <code>{iso(sw.from_model)}</code>; this run uses "
            f"<code>{iso(sw.to_model)}</code> ({iso(details)}): {esc(what)}, and the clusters "
            "were regrouped under the new model (marked “regrouped”). Scores before and after the switch "
            "are not comparable.</div>"
        )
    return parts


NUMBER_WORDS = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def in_words(share: float) -> str:
    """A share as an editor reads it: the simplest "n in d" within 0.03 (d up to 5), else in tenths.

    >>> in_words(0.667), in_words(0.8125), in_words(0.55), in_words(0.97), in_words(0.02)
    ('about two in three', 'about four in five', 'about six in ten', 'nearly all', 'almost none')
    """
    if share >= 0.95:
        return "nearly all"
    if share < 0.05:
        return "almost none"
    for d in range(2, 6):
        n = math.floor(share * d + 0.5)
        if 0 < n < d and abs(n / d - share) <= 0.03:
            return f"about {NUMBER_WORDS[n]} in {NUMBER_WORDS[d]}"
    return f"about {NUMBER_WORDS[math.floor(share * 10 + 0.5)]} in ten"


def plain_quality(record: RunRecord) -> str:
    """The page's plain-language line: how often this report's groupings are truly one story, and how many
    of the editors' same-story pairs it groups, from the report judged against the editors' pairs
    (``--judge-pairs``), else from the threshold's calibration (when the threshold in use is the calibrated
    one); without either it says that nobody measured it."""
    judge, cal = record.judge, record.info.threshold_calibration
    if judge is not None and judge.precision is not None:
        share = in_words(judge.precision)
        text = f"{share[0].upper()}{share[1:]} of the pairs this report groups together are truly one story"
        if judge.recall is not None:
            text += f"; it groups {in_words(judge.recall)} of the pairs editors call the same story"
        basis = (
            f"judged on {judge.judged_pairs:,} of the editors' scored {judge.split} pairs, "
            f"{judge.same_story_pairs:,} of them the same story: precision {_fmt(judge.precision)}, recall "
            f"{_fmt(judge.recall)}"
        )
    elif (
        cal is not None
        and record.threshold is not None
        and _num(cal.threshold, 6) == _num(record.threshold, 6)
    ):
        what = "the same story" if cal.level >= 1.0 else f"related at least as “{_level_name(cal.level)}”"
        share = in_words(cal.precision)
        text = (
            f"{share[0].upper()}{share[1:]} of the pairs this model links are truly {what}; it links "
            f"{in_words(cal.recall)} of the pairs editors call {what}"
        )
        basis = (
            f"measured on {cal.n:,} annotated {cal.split} pairs, {cal.n_positive:,} of them {what}, where "
            f"the threshold was calibrated: precision {_fmt(cal.precision)}, recall {_fmt(cal.recall)}"
        )
    else:
        return (
            "<p id='plain' class='plain'>How often this report's groupings are truly one story was not "
            "measured for this run (no calibration of the threshold in use, no <code>--judge-pairs</code>): "
            "read the clusters as suggestions.</p>"
        )
    return (
        f"<p id='plain' class='plain'><strong>{esc(text)}.</strong> <span class='meta'>({esc(basis)}; see "
        "<a href='#model'>the model card</a>.)</span></p>"
    )


def _spreadsheet_notice(changes: list[TextChange], shown: int = 20) -> str:
    """Which items' text the spreadsheet files changed (:mod:`nlsim.report.spreadsheet`), if any."""
    fields: dict[str, dict[str, list[str]]] = {"characters": {}, "cut": {}, "formula": {}}
    for c in changes:
        fields[c.change].setdefault(c.item_id, []).append(c.field)

    def items(kind: str) -> str:
        named = [f"{iso(i)} ({', '.join(f)})" for i, f in list(fields[kind].items())[:shown]]
        more = len(fields[kind]) - shown
        return ", ".join(named) + (f" and {more:,} more" if more > 0 else "")

    parts = []
    if fields["characters"]:
        parts.append(
            f"{len(fields['characters']):,} item(s) hold characters a spreadsheet file cannot store (control "
            "characters such as Word's manual line break): in <code>report.xlsx</code> a line or page break "
            f"became a space and the others were removed: {items('characters')}."
        )
    if fields["cut"]:
        parts.append(
            f"{len(fields['cut']):,} item(s) are longer than a spreadsheet cell holds "
            f"({XLSX_CELL_CHARACTERS:,} characters): in <code>report.xlsx</code> they are cut there: "
            f"{items('cut')}."
        )
    if fields["formula"]:
        parts.append(
            f"{len(fields['formula']):,} item(s) start with =, +, -, @, a tab or a carriage return, which a "
            "spreadsheet would run as a formula: <code>report.xlsx</code> stores them as text, and in "
            "<code>pairs.csv</code> and <code>members.csv</code> they begin with an apostrophe: "
            f"{items('formula')}."
        )
    if not parts:
        return ""
    return (
        "<div class='notice' id='spreadsheet-text'><strong>Text changed in the spreadsheet files.</strong> "
        + " ".join(parts)
        + " This page and the Parquet files show the original text.</div>"
    )


Row = tuple[str, str]
"""A line of the model card: its heading and its HTML."""


def _model_kind(record: RunRecord) -> str:
    info = record.info
    if info.version:
        return f"fine-tuned, version <code>{esc(info.version)}</code> of the model store"
    if info.zero_shot:
        return "zero-shot (not fine-tuned)"
    return "fine-tuned model folder" if info.card.metrics else "model folder"


def _model_rows(record: RunRecord) -> list[Row]:
    """Which model judged, when and on how many pairs it was trained, the editors' labels among them."""
    rows = [("Model", f"<code>{iso(record.model_name)}</code> · {_model_kind(record)}")]
    card = record.info.card
    trained = card.trained
    bits = [card.created] if card.created else []
    if trained is not None and trained.n_train:
        bits.append(
            f"on {int(trained.n_train):,} annotated pairs ({int(trained.n_validation or 0):,} for validation)"
        )
    if bits:
        rows.append(("Trained", esc(" ".join(bits))))
    editors = review.editor_labels_text(trained.editor_labels if trained is not None else None)
    if editors:
        rows.append(("Editors’ labels", esc(editors)))
    return rows


def _agreement(record: RunRecord) -> str:
    """How well the threshold agreed with the editors' labels where it was calibrated."""
    cal = record.info.threshold_calibration
    if cal is None:
        if record.threshold_source.startswith("given"):
            return "not measured: the threshold was given, not calibrated"
        return "not recorded in this run"
    return (
        f"precision <strong>{_fmt(cal.precision)}</strong> · recall <strong>{_fmt(cal.recall)}</strong> · "
        f"F1 <strong>{_fmt(cal.f1)}</strong> "
        + esc(f"on {cal.n} {cal.split} pairs, {cal.n_positive} of them {_level_name(cal.level)}")
    )


def _threshold_rows(record: RunRecord) -> list[Row]:
    """The threshold, on which score, where it came from, its agreement, the reranker, the text embedded."""
    on = "rerank score" if record.rerank is not None else "cosine similarity"
    rows = [
        ("Threshold", f"<strong>{threshold_text(record.threshold)}</strong> on the {on}"),
        ("Where it came from", iso(record.threshold_source or "?")),
        ("Agreement at this threshold", _agreement(record)),
    ]
    rr = record.rerank
    if rr is not None:
        kept = f"{rr.kept} of {rr.candidates} candidate pairs kept (candidate floor {rr.candidate_floor})"
        rows.append(("Reranker", esc(f"{rr.describe}; {kept}")))
    text = [f"conversion {record.conversion}" if record.conversion else ""]
    text.append(f"embedded fields {record.text_fields}" if record.text_fields else "")
    if any(text):
        rows.append(("Text", esc(", ".join(t for t in text if t))))
    return rows


SPEARMAN_LINES = (
    ("zero-shot base model", "before"),
    ("fine-tuned bi-encoder", "after"),
    ("fine-tuned, with reranker", "reranked"),
)
"""The model card's Spearman table: each line's label and the training record's key."""


def _spearman_table(card: ModelCard) -> str:
    """Spearman ×100 on the validation and test pairs, before and after fine-tuning ("" without a record)."""
    table = []
    for label, key in SPEARMAN_LINES:
        v, t = card.spearman(f"{key}/validation"), card.spearman(f"{key}/test")
        if v is not None or t is not None:
            table.append(
                f"<tr><th scope='row'>{label}</th><td class='num'>{_fmt(v, 2)}</td>"
                f"<td class='num'>{_fmt(t, 2)}</td></tr>"
            )
    if not table:
        return ""
    return (
        "<h3>Spearman ×100 against the annotators' scores (agreement between annotators is the "
        "ceiling)</h3><table class='metrics'><tr><th></th><th>validation</th><th>test</th></tr>"
        + "".join(table)
        + "</table>"
    )


def model_card_html(record: RunRecord, learning_curve: str | None) -> str:
    """The page's model card: which model judged, its threshold and where it came from, its quality before
    and after fine-tuning, its learning curve."""
    rows = _model_rows(record) + _threshold_rows(record)
    body = "".join(f"<tr><th scope='row'>{k}</th><td>{v}</td></tr>" for k, v in rows)
    parts = ["<section id='model' class='panel'><h2>The judge: model and threshold</h2>"]
    parts.append(f"<table class='card'>{body}</table>")
    spearman = _spearman_table(record.info.card)
    if spearman:
        parts.append(spearman)
    elif record.info.zero_shot:
        parts.append("<p class='meta'>No training record: this model was not fine-tuned here.</p>")
    if learning_curve:
        parts.append(
            f"<figure><img src='{esc(learning_curve)}' alt='learning curve: quality against the number of "
            "annotated training pairs' loading='lazy'><figcaption>Learning curve of the model "
            "folder</figcaption></figure>"
        )
    judged = _judgement(record.judge, window=record.mode == "incremental")
    if judged:
        parts.append(judged)
    parts.append("</section>")
    return "".join(parts)


def _judgement(judge: Judgement | None, *, window: bool = False) -> str:
    """The report judged at the cluster level against the editors' pairs (``--judge-pairs``), if asked;
    ``window``: a daily report, judged on its whole retention window."""
    if judge is None:
        return ""
    where = "this report's window (the items the state keeps, with this run's)" if window else "this report"
    ci = f" (95% interval {judge.f1_ci95[0]:.3f}–{judge.f1_ci95[1]:.3f})" if judge.f1_ci95 else ""
    rows = [
        (
            "precision",
            "of the judged pairs this report puts in one cluster, the share that are the same story",
        ),
        ("recall", "of the judged same-story pairs, the share this report puts in one cluster"),
        ("f1", "their harmonic mean" + ci),
    ]
    body = "".join(
        f"<tr><th scope='row'>{name if name != 'f1' else 'F1'}</th>"
        f"<td class='num'>{_fmt(getattr(judge, name), 3)}</td><td>{esc(why)}</td></tr>"
        for name, why in rows
    )
    other, missing = judge.mismatched_pairs or 0, judge.pairs_not_in_corpus or 0
    left = (
        f" {other + missing:,} were left out: {other:,} name items whose text here is another one (a "
        f"corrected headline, or another corpus), {missing:,} name items {esc(where)} does not hold."
        if other + missing
        else ""
    )
    by_size = (
        "<p class='meta' id='purity'>Of the judged pairs inside clusters of "
        + "; ".join(
            f"{esc(p.band)} items, {_fmt(p.share, 2)} are the same story ({p.judged:,} pairs)"
            for p in judge.purity_by_size
        )
        + ": large clusters that chain a topic or a series show here first.</p>"
        if judge.purity_by_size
        else ""
    )
    return (
        f"<h3 id='judged'>Judged by the editors' pairs: same story at the cluster level</h3>"
        f"<p class='meta'>{judge.judged_pairs:,} scored {esc(judge.split)} pairs of "
        f"<bdi>{esc(judge.pairs)}</bdi> belong to {esc(where)}, {judge.same_story_pairs:,} of them the same "
        f"story; a figure with nothing to divide by is shown as –.{left}</p>"
        f"<table class='metrics'>{body}</table>{by_size}"
    )


def _bars(title: str, key: str, counts: list[tuple[str, int]], note: str = "") -> str:
    if not counts:
        return ""
    top = max(n for _, n in counts) or 1
    rows = "".join(
        f"<li><button type='button' class='bar' data-filter='{key}' data-value='{esc(label)}' "
        f"title='show only these clusters'><span class='label'>{esc(label)}</span>"
        f"<span class='track'><span class='fill' style='width:{100 * n / top:.1f}%'></span></span>"
        f"<span class='count'>{n:,}</span></button></li>"
        for label, n in counts
    )
    return f"<div class='bars'><h3>{esc(title)}</h3>{note}<ul>{rows}</ul></div>"


def _overview(data: dict[str, Any], record: RunRecord, pairs: pd.DataFrame) -> str:
    clusters = [c for c in data["clusters"] if c["status"] != "dissolved"]  # the current ones
    clustered = sum(c["size"] for c in clusters)
    figures = [
        (record.items, "items read"),
        (len(pairs), "pairs"),
        (len(clusters), "clusters"),
        (clustered, "items in clusters"),
    ]
    if data["daily"]:
        figures.append((record.clusters_in_window, "clusters in the window"))
    stats = "".join(
        f"<div class='stat'><span class='n'>{esc(f'{v:,}' if isinstance(v, int) else str(v))}</span>"
        f"<span>{esc(label)}</span></div>"
        for v, label in figures
        if v is not None
    )
    parts = [f"<section id='overview' class='panel'><h2>Overview</h2><div class='stats'>{stats}</div>"]
    if data["daily"]:
        window = record.clusters_in_window
        parts.append(
            "<p class='meta'>A daily report lists the clusters this run touched"
            + (f" ({len(clusters):,} of the window's {window:,})" if isinstance(window, int) else "")
            + ": the window's current clusters are in <code>window/clusters.parquet</code> and "
            "<code>window/members.csv</code>.</p>"
        )
    parts.append("<div class='charts'>")
    sizes = Counter(c["bucket"] for c in clusters)
    parts.append(
        _bars("Clusters by size (items)", "bucket", [(b, sizes[b]) for *_, b in SIZE_BUCKETS if sizes[b]])
    )
    periods = Counter(c["period"] or "undated" for c in clusters)
    order = sorted(k for k in periods if k != "undated") + (["undated"] if "undated" in periods else [])
    unit = data["periodUnit"]
    zone = data["timeZone"]
    parts.append(
        _bars(f"Clusters by {unit} of their first item ({zone})", "period", [(p, periods[p]) for p in order])
    )
    if data["daily"]:
        status = Counter(c["status"] for c in data["clusters"])
        parts.append(
            _bars(
                "Clusters by status in this run",
                "status",
                [(s, status[s]) for s in STATUSES if status[s]],
            )
        )
    parts.append("</div>")
    parts.append(
        "<details class='plot'><summary>Score and size distributions (overview.png)</summary>"
        "<img src='overview.png' alt='pair similarities against the threshold, and cluster sizes' "
        "loading='lazy'></details></section>"
    )
    return "".join(parts)


def _controls(data: dict[str, Any]) -> str:
    statuses = ""
    if data["daily"]:
        opts = "".join(f"<option value='{s}' title='{esc(STATUS_TEXT[s])}'>{s}</option>" for s in STATUSES)
        statuses = (
            "<label>Status <select id='f-status' data-filter='status'><option value=''>all</option>"
            f"{opts}</select></label>"
        )
    sizes = "".join(f"<option value='{esc(b)}'>{esc(b)} items</option>" for *_, b in SIZE_BUCKETS)
    sources = Counter(s for c in data["clusters"] for s in c["sources"])
    src_opts = "".join(  # an option holds text only: the source between isolate marks (FSI ... PDI)
        f"<option value='{esc(s)}'>\u2068{esc(s)}\u2069 ({n:,})</option>"
        for s, n in sorted(sources.items(), key=lambda x: (-x[1], x[0]))
    )
    periods = sorted({c["period"] for c in data["clusters"] if c["period"]})
    period_opts = "".join(f"<option value='{esc(p)}'>{esc(p)}</option>" for p in periods)
    if any(c["period"] is None for c in data["clusters"]):
        period_opts += "<option value='undated'>undated</option>"
    return (
        "<div id='controls' class='controls' role='search'>"
        "<input id='q' type='search' placeholder='Search titles, sources, ids…' autocomplete='off' "
        "aria-label='search the clusters'>"
        f"{statuses}"
        "<label>Size <select id='f-bucket' data-filter='bucket'><option value=''>all</option>"
        f"{sizes}</select></label>"
        f"<label>{'Day' if data['periodUnit'] == 'day' else 'Month'} "
        "<select id='f-period' data-filter='period'>"
        f"<option value=''>all</option>{period_opts}</select></label>"
        f"<label>Source <select id='f-source' data-filter='source'><option value=''>all</option>{src_opts}"
        "</select></label>"
        "<label>Sort <select id='sort'><option value='size'>largest first</option>"
        "<option value='newest'>newest first</option><option value='oldest'>oldest first</option>"
        "<option value='score'>highest score first</option>"
        + ("<option value='status'>by status</option>" if data["daily"] else "")
        + "</select></label>"
        "<button type='button' id='reset'>Reset</button>"
        "</div>"
    )


def _cluster_list(data: dict[str, Any]) -> str:
    """The clusters section: controls, pagers and the list the page's script draws."""
    n = len(data["clusters"])
    when = f" (times in {esc(data['timeZone'])})"
    return (
        f"<section id='list' class='panel'><h2>Clusters{when}</h2>"
        + _controls(data)
        + "<p id='shown' class='shown' aria-live='polite'>"
        + esc(f"{n:,} clusters; the list needs JavaScript.")
        + "</p>"
        "<noscript><p class='notice'>This list is drawn by the page's script. Without it, every cluster is "
        "in <code>clusters.parquet</code>, <code>members.csv</code> and <code>report.xlsx</code> beside this "
        "page.</p></noscript>"
        "<div class='pager' id='pager-top'></div><ol id='clusters' class='clusters'></ol>"
        "<div class='pager' id='pager-bottom'></div></section>"
    )


def render_html(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    frame: pd.DataFrame | None = None,
    *,
    learning_curve: str | None = None,
    near_misses: pd.DataFrame | None = None,
) -> str:
    """The report page (see the module docstring). ``learning_curve``: the file name of the learning-curve
    PNG copied beside the page, if any; ``near_misses``: the pairs below the threshold, for review."""
    data = page_data(pairs, clusters, record, frame, near_misses)
    when = record.finished_at or ""
    mode = "daily run " + record.run_id if data["daily"] else "batch run"
    meta = " · ".join(
        x
        for x in (
            esc(mode),
            f"written {esc(when)}" if when else "",
            f"corpus {iso(Path(record.corpus).name)}" if record.corpus else "",
            f"model {iso(record.model_name)}",
            f"threshold {threshold_text(record.threshold)}",
        )
        if x
    )
    n = len(data["clusters"])
    head = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="nlsim">'
        f"<title>Near-duplicate report · {n:,} clusters</title>"
        f"<style>{_asset('report.css')}\n{review.review_style()}</style></head>"
    )
    body = [
        "<body><header><h1>Near-duplicate and related news items</h1>",
        f"<p class='meta'>{meta}</p>",
        "<nav><a href='#list'>Clusters</a> · <a href='#review'>Review</a> · <a href='#rubric'>Rubric</a> · "
        "<a href='#model'>Model</a> · <a href='#overview'>Overview</a></nav></header><main>",
        # what an editor comes for first: the warnings, how far to trust the groupings, the clusters
        *_notices(record),
        plain_quality(record),
        _cluster_list(data),
        review.review_section(data),
        review.rubric_section(),
        _spreadsheet_notice(text_changes(frame)),
        model_card_html(record, learning_curve),
        _overview(data, record, pairs),
        "</main>",
        "<footer><p class='meta'>Every cluster of this report is listed above (in pages). The same data: "
        "<code>clusters.parquet</code>, <code>pairs.parquet</code>, <code>members.csv</code>, "
        "<code>pairs.csv</code>, <code>report.xlsx</code>; the run record: <code>run.json</code>.</p>"
        "</footer>",
        f"<script id='nlsim-data' type='application/json'>{_json_script(data)}</script>",
        f"<script>{_asset('report.js')}\n{review.review_script()}</script></body></html>",
    ]
    return head + "\n".join(body) + "\n"


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
