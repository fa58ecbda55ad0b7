"""What the report page says in words: its prose sections, as HTML (:mod:`nlsim.report.html` puts them in
place).

- the notices at the top: a zero-shot model (no fine-tuned model was ever promoted), a model switch in a
  daily run, in words (:func:`switch_notice`), a day older than the runs before it or whose items were all
  seen before (:func:`day_notices`); which items' text the spreadsheet files changed
  (:func:`spreadsheet_notice`);
- one line in plain words on how far to trust the groupings (:func:`plain_quality`: "about two in three of
  the pairs this model links are truly the same story", shares as an editor reads them: :func:`in_words`);
- the model card (:func:`model_card_html`): which model judged (version, zero-shot or fine-tuned), its
  threshold (:func:`threshold_text`) and where it came from, its agreement with the editors' labels there,
  its Spearman agreement with the annotated pairs before and after fine-tuning, the learning curve, and the
  report judged against the editors' pairs (``--judge-pairs``).

User text in them (ids, file and model names) is escaped and bidi-isolated (:func:`iso`).

Example:
    >>> from nlsim.report.record import RunRecord
    >>> plain_quality(RunRecord(model="m", threshold=0.9)).startswith("<p id='plain' class='plain'>How often")
    True
"""

from __future__ import annotations

import html
import math
from typing import Any

from nlsim.evaluation.figures import split_pairs
from nlsim.evaluation.interval import BOOTSTRAP
from nlsim.evaluation.judge import Judgement
from nlsim.evaluation.levels import SAME_STORY
from nlsim.io import columns
from nlsim.progress import counted
from nlsim.report import review
from nlsim.report.page import score_digits
from nlsim.report.record import ModelCard, ModelSwitch, RunRecord
from nlsim.report.spreadsheet import XLSX_CELL_CHARACTERS, TextChange

LEVEL_NAMES = {1.0: "same story", SAME_STORY: "same story", 0.75: "same topic and entity"}
esc = html.escape


def iso(text: Any) -> str:
    """User text (a title, a source, an id, a file name) escaped and isolated from the page's own words:
    a right-to-left override in it cannot reorder the text around it.

    >>> iso("AP\u202e <b>")
    '<bdi>AP\u202e &lt;b&gt;</bdi>'
    """
    return f"<bdi>{esc(str(text))}</bdi>"


def _level_name(level: Any) -> str:
    lv = columns.page_number(level)
    if lv is None:
        return "?"
    return LEVEL_NAMES.get(lv, f"relatedness ≥ {lv:g}") + f" (score ≥ {lv:g})"


def _fmt(value: Any, digits: int = 3) -> str:
    v = columns.page_number(value, 6)
    return "–" if v is None else f"{v:.{digits}f}"


def threshold_text(threshold: Any) -> str:
    """The threshold as the page shows it, with its own decimals (:func:`~nlsim.report.page.score_digits`).

    >>> threshold_text(0.9095), threshold_text(0.9), threshold_text(None)
    ('0.9095', '0.900', '–')
    """
    return _fmt(threshold, score_digits(threshold))


def notices(record: RunRecord) -> list[str]:
    """The banners at the top: zero-shot model, model switch, an older day or one with nothing new."""
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
    if record.model_switch is not None:
        parts.append(switch_notice(record.model_switch))
    parts.extend(day_notices(record))
    return parts


def day_notices(record: RunRecord) -> list[str]:
    """What a daily run says at the top of a day run out of order (``older_day``) and of a day whose items
    were all already seen (``all_seen``)."""
    items = record.counts.items_in
    older, seen = "", ""
    if record.older_day:
        which = (
            "This run's day had no items and ended before the runs already made"
            if items == 0
            else "Every item of this run is dated before the runs already made"
        )
        older = (
            f"<strong>An older day.</strong> {which}: this day was run after a later one. This report is "
            f"kept under <code>runs/{iso(record.run_id)}/</code>; <code>latest</code> still shows the newer "
            "report."
        )
    if record.all_seen:
        n = (
            f"{'the' if items == 1 else 'all'} {counted(items, 'item', 'items')}"
            if isinstance(items, int)
            else "all the items"
        )
        were = "was" if items == 1 else "were"
        switch = record.model_switch
        none, them = ("it", "it") if items == 1 else ("none", "them")
        done = (
            f"{none} is {'not ' if items == 1 else ''}new, but the whole window was embedded again with the "
            "new model (above)"
            if switch is not None and switch.reembed
            else f"{none} was {'not ' if items == 1 else ''}embedded again, and no story grew from {them}"
        )
        seen = (
            f"<strong>Nothing new.</strong> {esc(n[0].upper() + n[1:])} of this run {were} already in the "
            f"window with the same text: {done}."
        )
    if not older and not seen:
        return []
    return [f"<div class='notice warn' id='day-notice'>{' '.join(x for x in (older, seen) if x)}</div>"]


SWITCH_WORDS = {
    "conversion": "the Chinese script conversion changed",
    "text_fields": "the fields that are embedded changed",
    "dim": "the vectors have another size",
    "threshold": "the threshold changed",
    "reranker": "the reranker changed",
    "topic_threshold": "the topic groups' threshold changed",
    "k": "the neighbours searched per item changed (--k)",
    "window_hours": "the time window of a pair changed (--window-hours)",
    "copy_key": "what counts as an exact copy changed (a newer nlsim)",
    "markup": "the texts are embedded as a page shows them, without control characters (a newer nlsim)",
    "series_veto": "the series veto was turned on or off (--no-series-veto)",
}
"""What a model switch changed, in words, by the state's identity field (the model itself: :func:`_which`)."""


def _model_words(name: str, version: str | None, promoted: str | None, zero_shot: bool | None) -> str:
    """A model as the switch banner names it: its name, its model-store version and when it was promoted."""
    bits = [f"version <code>{iso(version)}</code> of the model store"] if version else []
    if promoted:
        bits.append(f"promoted {esc(promoted[:10])}")
    if zero_shot and not version:
        bits.append("zero-shot")
    return f"<code>{iso(name)}</code>" + (f" ({', '.join(bits)})" if bits else "")


def _which(sw: ModelSwitch) -> str:
    """What changed about the model itself, in words ('' when the model is the same)."""
    if "model_id" in sw.changed:
        return "another model"
    if "fingerprint" not in sw.changed:
        return ""
    if sw.from_version and sw.to_version and sw.from_version != sw.to_version:
        return "the model was retrained (a newer version was promoted)"
    return "the model was retrained (same model, new weights)"


def switch_notice(sw: ModelSwitch) -> str:
    """The model-switch banner: which model was used before and now (versions and promotion dates where
    known), what changed, in words, and what the run did about it; the fingerprints and the raw differences
    folded away."""
    before = _model_words(sw.from_model, sw.from_version, sw.from_promoted_at, sw.from_zero_shot)
    now = _model_words(sw.to_model, sw.to_version, sw.to_promoted_at, sw.to_zero_shot)
    changes = [_which(sw)] + [SWITCH_WORDS[c] for c in SWITCH_WORDS if c in sw.changed]
    what = "; ".join(c for c in changes if c) or "the model's settings changed"
    if sw.reembed:
        one = sw.reembedded == 1
        done = (
            f"{'The' if one else 'All'} {counted(sw.reembedded, 'item', 'items')} of the window "
            f"{'was' if one else 'were'} embedded again with the new model, and the "
            "stories were regrouped (marked “regrouped”)."
        )
    else:
        done = (
            "The vectors are the same: the window's items were paired again under the new settings, and the "
            "stories were regrouped (marked “regrouped”)."
        )
    facts = [
        f"fingerprint before: {sw.from_fingerprint or '?'}",
        f"fingerprint now: {sw.to_fingerprint or '?'}",
    ]
    rows = "".join(f"<li>{iso(x)}</li>" for x in [*facts, *map(str, sw.details)])
    return (
        "<div class='notice warn' id='model-switch'><strong>Model switch.</strong> "
        f"<span id='switch-before'>Before this run the stories were made with {before}</span>; "
        f"<span id='switch-now'>this run uses {now}</span>. "
        f"<span id='switch-what'>What changed: {esc(what)}.</span> {esc(done)} Scores before and after the "
        "switch are not comparable."
        f"<details class='switch-details'><summary>Fingerprints and settings</summary><ul>{rows}</ul>"
        "</details></div>"
    )


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
    one; it says so when the calibration's texts were converted otherwise than this run's, ``--convert``);
    without either it says that nobody measured it. A report judged that groups none of the judged pairs (no
    precision) says so; one whose judgement held no pair (a daily window without them) is not measured."""
    judge, cal = record.judge, record.info.threshold_calibration
    if judge is not None and judge.precision is None and judge.judged_pairs:
        # judged, and no judged pair grouped: no precision, and none of the same-story pairs grouped (the
        # calibration's figures do not hold for this report)
        text = (
            f"This report groups none of the {judge.same_story_pairs:,} pairs editors call the same story"
            if judge.same_story_pairs
            else "This report groups none of the pairs editors scored"
        )
        basis = (
            f"judged on {judge.judged_pairs:,} of the editors' scored {split_pairs(judge.split)}, "
            f"{judge.same_story_pairs:,} of them the same story: precision undefined (no judged pair "
            f"grouped), recall {_fmt(judge.recall)}"
        )
    elif judge is not None and judge.precision is not None:
        share = in_words(judge.precision)
        text = f"{share[0].upper()}{share[1:]} of the pairs this report groups together are truly one story"
        if judge.recall is not None:
            text += f"; it groups {in_words(judge.recall)} of the pairs editors call the same story"
        basis = (
            f"judged on {judge.judged_pairs:,} of the editors' scored {split_pairs(judge.split)}, "
            f"{judge.same_story_pairs:,} of them the same story: precision {_fmt(judge.precision)}, recall "
            f"{_fmt(judge.recall)}"
        )
    elif (
        cal is not None
        and record.threshold is not None
        and columns.page_number(cal.threshold, 6) == columns.page_number(record.threshold, 6)
    ):
        what = (
            "the same story"
            if cal.level >= SAME_STORY - 1e-9
            else f"related at least as “{_level_name(cal.level)}”"
        )
        share = in_words(cal.precision)
        text = (
            f"{share[0].upper()}{share[1:]} of the pairs this model links are truly {what}; it links "
            f"{in_words(cal.recall)} of the pairs editors call {what}"
        )
        basis = (
            f"measured on {cal.n:,} annotated {split_pairs(cal.split)}, {cal.n_positive:,} of them {what}, "
            f"where the threshold was calibrated: precision {_fmt(cal.precision)}, recall {_fmt(cal.recall)}"
        )
        if cal.conversion and record.conversion and cal.conversion != record.conversion:
            basis += (
                f"; measured on texts converted by OpenCC {cal.conversion}, this run's by "
                f"{record.conversion}: they may not hold for it"
            )
    else:
        judged = (
            esc(f"none of the editors' scored {split_pairs(judge.split)} could be judged")
            if judge is not None
            else "no <code>--judge-pairs</code>"
        )
        return (
            "<p id='plain' class='plain'>How often this report's groupings are truly one story was not "
            f"measured for this run (no calibration of the threshold in use, {judged}): "
            f"read the clusters as suggestions.{_topic_words(record)}</p>"
        )
    return (
        f"<p id='plain' class='plain'><strong>{esc(text)}.</strong>{_by_size(judge)}{_topic_words(record)} "
        f"<span class='meta'>({esc(basis)}; see <a href='#model'>the model card</a>.)</span></p>"
    )


TRUST_BANDS = ("2", "3+", "5+")
"""The cluster sizes the plain line gives the judge's purity of
(:func:`nlsim.evaluation.judge.purity_by_size`)."""
WEAK_GAP = 0.1
"""The large clusters (5+) are the weak ones when their pairs are the same story this much less often than
the pairs of clusters of two."""


def _by_size(judge: Judgement | None) -> str:
    """How far to trust a cluster by its size, in words, from the judge's purity bands (2, 3+, 5+), with a
    warning when the large clusters are the weak ones ('' without the figures)."""
    bands = {p.band: p for p in (judge.purity_by_size or [])} if judge is not None else {}
    known = [bands[b] for b in TRUST_BANDS if b in bands and bands[b].share is not None]
    if not known:
        return ""
    parts = [
        f"clusters of {p.band} items: {in_words(float(p.share))} of their pairs are the same story "
        f"({p.judged:,} judged)"
        for p in known
    ]
    text = f" <span id='plain-sizes'>By size: {esc('; '.join(parts))}.</span>"
    two, large = bands.get("2"), bands.get("5+")
    if (
        two is not None
        and large is not None
        and two.share is not None
        and large.share is not None
        and large.share <= two.share - WEAK_GAP
    ):
        text += (
            " <strong id='plain-weak' class='warn'>The large clusters are the weak ones: read clusters of 5 "
            "or more items with care (they may chain a topic or a series).</strong>"
        )
    return text


def _topic_words(record: RunRecord) -> str:
    """The topic figure in words: how many topic groups gather the stories, and, when the report was judged,
    how often two items of one topic group share at least a topic and entity ('' without topics)."""
    counts = record.counts
    if not counts.topics:
        return ""
    text = f"{counts.topics:,} topic group(s)" + (
        f" gather {counted(counts.topic_items, 'item', 'items')}" if counts.topic_items is not None else ""
    )
    figures = record.judge.topics if record.judge is not None else None
    if figures is not None and figures.precision is not None:
        text += (
            f"; {in_words(figures.precision)} of the judged pairs inside one share a topic and entity or "
            f"more ({figures.judged:,} judged)"
        )
    return f" <span id='plain-topics'>{esc(text[0].upper() + text[1:])}.</span>"


FILES_BEFORE = {
    "characters": ("report.xlsx",),
    "cut": ("report.xlsx",),
    "formula": ("pairs.csv", "members.csv"),
    "number": ("pairs.csv", "members.csv"),
}
"""The files a change was made in, for a record written before the files were recorded."""


def spreadsheet_notice(changes: list[TextChange], shown: int = 20) -> str:
    """Which items' text the spreadsheet files changed (:mod:`nlsim.report.spreadsheet`), if any: each
    item with its fields, under the files its cells were changed in."""
    fields: dict[str, dict[str, list[str]]] = {k: {} for k in FILES_BEFORE}
    files: dict[str, dict[str, list[str]]] = {k: {} for k in FILES_BEFORE}
    for c in changes:
        fields[c.change].setdefault(c.item_id, []).append(c.field)
        where = files[c.change].setdefault(c.item_id, [])
        where += [f for f in c.files or FILES_BEFORE[c.change] if f not in where]

    def in_files(names: tuple[str, ...]) -> str:
        code = [f"<code>{esc(n)}</code>" for n in names]
        return "in " + (" and ".join(code) if len(code) < 3 else ", ".join(code[:-1]) + " and " + code[-1])

    def items(kind: str) -> str:
        groups: dict[tuple[str, ...], list[str]] = {}
        for i, f in list(fields[kind].items())[:shown]:
            groups.setdefault(tuple(files[kind][i]), []).append(f"{iso(i)} ({', '.join(f)})")
        more = len(fields[kind]) - shown
        text = "; ".join(f"{in_files(names)}: {', '.join(named)}" for names, named in groups.items())
        return text + (f" and {more:,} more" if more > 0 else "")

    parts = []
    if fields["characters"]:
        parts.append(
            f"{len(fields['characters']):,} item(s) hold characters a spreadsheet file cannot store (control "
            "characters such as Word's manual line break or a terminal's colour codes), so a line or page "
            f"break became a space and the others were removed {items('characters')}."
        )
    if fields["cut"]:
        parts.append(
            f"{len(fields['cut']):,} item(s) are longer than a spreadsheet cell holds "
            f"({XLSX_CELL_CHARACTERS:,} characters), so they are cut {items('cut')}{_cut_how(files['cut'])}."
        )
    if fields["formula"]:
        parts.append(
            f"{len(fields['formula']):,} item(s) start with =, +, -, @ (or full-width ＝, ＋, －, ＠), a tab "
            "or a carriage return, perhaps after spaces or characters that show nothing, which a spreadsheet "
            "would run as a formula (or with apostrophes before "
            "one: <code>'=x</code> would read as <code>=x</code> escaped): <code>report.xlsx</code> "
            "stores such text as text, and "
            f"they begin with an apostrophe {items('formula')}."
        )
    if fields["number"]:
        parts.append(
            f"{len(fields['number']):,} id(s) read as a number, a date or a time by a spreadsheet opening "
            "the CSV files, which shows them otherwise (<code>1E5</code> as 1.00E+05, <code>007</code> as 7, "
            f"<code>2024-05-01</code> as a date) {items('number')}. <code>report.xlsx</code> holds them as "
            "text; to keep them in a CSV file, import it (Data &gt; From Text/CSV) with its id columns as "
            "Text."
        )
    if not parts:
        return ""
    return (
        "<div class='notice' id='spreadsheet-text'>"
        "<strong>How the spreadsheet files hold some text.</strong> "
        + " ".join(parts)
        + " This page and the Parquet files show the original text.</div>"
    )


def _cut_how(files: dict[str, list[str]]) -> str:
    """How the files named for a text too long for a cell (``files``: each item's) cut it: ``report.xlsx``
    holds it cut, a CSV file whole, and a spreadsheet opening the CSV file cuts it."""
    names = {n for where in files.values() for n in where}
    how = []
    if any(n.endswith(".xlsx") for n in names):
        how.append("<code>report.xlsx</code> holds them cut")
    if any(n.endswith(".csv") for n in names):
        how.append("the CSV files hold them whole, and a spreadsheet cuts them when it opens the file")
    return f" ({'; '.join(how)})" if how else ""


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
        + esc(f"on {cal.n} {split_pairs(cal.split)}, {cal.n_positive} of them {_level_name(cal.level)}")
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
    ci = f" (95% interval {judge.f1_ci95[0]:.3f}–{judge.f1_ci95[1]:.3f}" if judge.f1_ci95 else ""
    if ci and judge.f1_ci95_left_out:  # resamples whose F1 is undefined: left out, never counted as 0
        defined = BOOTSTRAP - judge.f1_ci95_left_out
        ci += f", over the {defined:,} of {BOOTSTRAP:,} resamples whose F1 is defined"
    ci += ")" if ci else ""
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
        f"<p class='meta'>{judge.judged_pairs:,} scored {esc(split_pairs(judge.split))} of "
        f"<bdi>{esc(judge.pairs)}</bdi> belong to {esc(where)}, {judge.same_story_pairs:,} of them the same "
        f"story; a figure with nothing to divide by is shown as –.{left}</p>"
        f"<table class='metrics'>{body}</table>{by_size}"
    )
