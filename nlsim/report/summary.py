"""The run's Markdown summary: ``summary.md`` in the report, and the Prefect flow's run artifact.

One summary, from the run record (:class:`nlsim.report.record.RunRecord`) and the report's clusters: the
headline figures and settings, the counts, the time of each stage and the largest clusters (the clusters
table's ``summary`` columns, :func:`nlsim.io.columns.summary_rows`, as the flow's table artifact shows
them). Every cell of user text (titles, ids, file and model names) is one line, its pipes escaped and no
raw HTML.

Example:
    >>> import pandas as pd
    >>> from nlsim.report.record import Counts, RunRecord
    >>> md = render_markdown(pd.DataFrame(), pd.DataFrame(columns=["cluster_id"]),
    ...                      RunRecord(run_id="r1", model="m", counts=Counts(items_in=3)))
    >>> md.splitlines()[0], "- items: 3" in md
    ('# nlsim near-duplicate report', True)
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pandas as pd

from nlsim.io import columns
from nlsim.report.record import RunRecord

HEADLINE = (
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
)
"""The run record's figures the summary lists first (the keys of ``run.json``)."""


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Control characters (C0, DEL, C1): a terminal showing ``summary.md`` would obey an escape sequence."""
_INLINE = re.compile(r"[\\`*\[\]~]|(?<![^\W_])_|_(?![^\W_])|:(?=//)|(?<=[wW]{3})\.|(?<=[\w.+-])@(?=\w)")
"""What Markdown reads as markup inside a line: a backslash (so that the title's own ``\\|`` cannot undo
the pipe's escape), a code span, emphasis, a link or image (``[``), strikethrough; an ``_`` between two
letters or digits opens nothing and stays (``items_in``), any other one is escaped (``__init__``: beside
another ``_`` it would open emphasis). And what a renderer makes a link of in plain text (GitHub's extended
autolinks): the ``:`` of ``https://`` (any ``://``), the ``.`` of ``www.``, the ``@`` of an e-mail address
(``<https://...>``, CommonMark's own autolink, needs its ``<``, written as ``&lt;``)."""


_RIGHT_TO_LEFT = frozenset({"R", "AL", "RLE", "LRE", "RLO", "LRO", "RLI", "LRI", "FSI", "PDF", "PDI"})
"""The bidirectional classes that can reorder what follows them on a line: right-to-left letters (Arabic,
Hebrew) and the explicit embeddings, overrides and isolates (U+202E, right-to-left override)."""
_ISOLATES = ("\u2066", "\u2067", "\u2068")
_FSI, _PDI = "\u2068", "\u2069"


def bidi_isolated(text: str) -> str:
    """``text`` in a first-strong isolate (U+2068 ... U+2069) when it holds right-to-left letters or bidi
    controls, so that it cannot reorder the rest of its line (the table's pipes, the next cells: a title
    holding U+202E, right-to-left override, would run the rest of the row backwards in a plain-text view):
    a stray U+2069 in it is dropped (it would end the isolate), and an isolate it opens is closed.

    >>> bidi_isolated("Floods"), bidi_isolated("Floods \u202enorth")
    ('Floods', '\u2068Floods \u202enorth\u2069')
    >>> bidi_isolated("a\u2069\u2067b")  # a PDI of its own dropped, its RLI closed
    '\u2068a\u2067b\u2069\u2069'
    """
    if not any(unicodedata.bidirectional(ch) in _RIGHT_TO_LEFT for ch in text):
        return text
    depth, kept = 0, []
    for ch in text:
        if ch == _PDI and not depth:
            continue
        depth += 1 if ch in _ISOLATES else -1 if ch == _PDI else 0
        kept.append(ch)
    return _FSI + "".join(kept) + _PDI * depth + _PDI


def md_cell(value: Any) -> str:
    """A Markdown table cell: one line, text as it reads (never a link, an autolinked URL, an image, emphasis
    or a code span: :data:`_INLINE` backslash-escaped), pipes escaped, no raw HTML (``&`` and ``<`` as
    entities; ``>``, which opens no tag inside a line, stays as it reads), no control character,
    right-to-left text isolated (:func:`bidi_isolated`).

    >>> md_cell("a | <b>\\nc >= 1 & d")
    'a \\\\| &lt;b> c >= 1 &amp; d'
    >>> md_cell("![x](http://t/p.png) *big* items_in \\\\| \\x1b[31m")
    '!\\\\[x\\\\](http\\\\://t/p.png) \\\\*big\\\\* items_in \\\\\\\\\\\\| \\\\[31m'
    >>> md_cell("看這裡 https://example.com/a_b_c www.example.com desk@example.com")
    '看這裡 https\\\\://example.com/a_b_c www\\\\.example.com desk\\\\@example.com'
    """
    text = _CONTROL.sub("", " ".join(str(value).split()))
    text = _INLINE.sub(lambda m: "\\" + m.group(0), text)
    return bidi_isolated(text.replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|"))


def md_code(value: Any) -> str:
    """A Markdown code span of ``value`` (a path): one line, no control character, fenced with more backticks
    than it holds in a row (inside a code span a backslash escape would show as written).

    >>> md_code("/r/my_out"), md_code("a`b")
    ('`/r/my_out`', '``a`b``')
    """
    text = _CONTROL.sub("", " ".join(str(value).split()))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _settings(record: RunRecord) -> list[str]:
    lines = [f"- {key.replace('_', ' ')}: {md_cell(v)}" for key, v in _headline(record) if v is not None]
    lines.append(f"- time zone: {md_cell(record.timezone)} (the report's days and times)")
    if record.daily:
        lines.append(f"- retention: {md_cell(record.retention_days)} days, as of {md_cell(record.as_of)}")
    if record.window_hours is not None:
        lines.append(f"- pairs of items published at most: {record.window_hours:g} hours apart")
    if record.cluster_rule:
        lines.append(f"- cluster rule: {md_cell(record.cluster_rule)}")
    if record.near_miss_limit == 0:
        lines.append("- near misses: none asked for (`--near-misses 0`)")
    elif record.near_miss_limit is not None:
        listed, limit = record.counts.near_misses or 0, record.near_miss_limit
        lines.append(f"- near misses: {listed:,} listed (at most {limit:,}, `--near-misses`)")
    sw = record.model_switch
    if sw is not None:
        lines.append(f"- model switch: {md_cell(sw.from_model)} → {md_cell(sw.to_model)}")
    return lines


def _headline(record: RunRecord) -> list[tuple[str, Any]]:
    figures = record.to_dict()
    return [(key, figures[key]) for key in HEADLINE]


def render_markdown(
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    record: RunRecord,
    top: int = 10,
    *,
    report_dir: str | None = None,
    replayed: bool = False,
) -> str:
    """The summary of a run: its figures and settings, counts, stage times and the ``top`` largest
    clusters. ``report_dir``: where the report is (the flow's artifact says it); ``replayed``: the input
    was already committed and its stored report written again. ``pairs`` is the report's pairs table (its
    count is the record's)."""
    del pairs  # the record counts them; kept in the signature the report and the flow share
    lines = ["# nlsim near-duplicate report", ""]
    if record.run_id:
        lines.append(f"- run: {md_cell(record.mode)} run {md_cell(record.run_id)}")
    lines += _settings(record)
    if report_dir is not None:
        lines.append(f"- report: {md_code(report_dir)}")
    if replayed:
        lines.append("- this input was already committed; its stored report was written again")
    if record.messages:  # what the run told its user (times read in --timezone, columns not read, ...)
        lines += ["", "## Messages", ""] + [f"- {md_cell(m)}" for m in record.messages]
    counts = record.counts.as_dict()
    if counts:
        lines += ["", "| count | value |", "|---|---:|"]
        lines += [f"| {md_cell(k)} | {v} |" for k, v in counts.items()]
    if record.timings_s:
        lines += ["", "| stage | seconds |", "|---|---:|"]
        lines += [f"| {md_cell(k)} | {v:.3f} |" for k, v in record.timings_s.items()]
    spec = columns.table("clusters")
    heads = columns.summary_columns(clusters, spec)
    rows = columns.summary_rows(clusters, spec, limit=top)
    if not rows:  # as the page says it
        lines += ["", "## Largest clusters", "", "No cluster: no two items of this run tell the same story."]
        return "\n".join(lines) + "\n"
    lines += ["", f"## Largest clusters (top {len(rows)})", ""]
    lines += ["| " + " | ".join(md_cell(c.label) for c in heads) + " |"]
    lines += ["|" + "|".join("---:" if c.format in ("number", "integer") else "---" for c in heads) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(md_cell("" if v is None else v) for v in row.values()) + " |")
    return "\n".join(lines) + "\n"
