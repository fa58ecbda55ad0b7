"""The run's one Markdown summary (``summary.md`` and the flow's run artifact)."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
import pytest

from nlsim.clusters.table import batch_clusters
from nlsim.report.record import Counts, RunLog, RunRecord
from nlsim.report.summary import render_markdown


def _clusters() -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "title": ["Flood | north", "Flood north", "Other"],
            "source": ["AP", "AFP", "AP"],
            "published_at": pd.to_datetime([None] * 3, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.93]})
    return pairs, batch_clusters(frame, pairs)[1]


def test_one_summary_holds_the_figures_counts_stage_times_and_largest_clusters() -> None:
    pairs, clusters = _clusters()
    log = RunLog()
    with log.stage("load"):
        pass
    record = RunRecord(
        run_id="batch-1", model="m", threshold=0.9, counts=Counts(items_in=3, pairs=1, clusters=1)
    ).timed(log)
    md = render_markdown(pairs, clusters, record, report_dir="/r/out", replayed=True)
    lines = md.splitlines()
    assert lines[0] == "# nlsim near-duplicate report"
    assert "- run: batch run batch-1" in lines and "- items: 3" in lines and "- threshold: 0.9" in lines
    assert "- report: `/r/out`" in lines and any("already committed" in line for line in lines)
    assert "| items_in | 3 |" in lines and any(line.startswith("| load | 0.0") for line in lines)
    # the largest clusters: the clusters table's summary columns, as the flow's table artifact has them
    assert "| cluster | topic | status | size | representative | added | max score |" in lines
    assert "| c-a |  | new | 2 | Flood \\| north | a, b | 0.93 |" in lines
    assert "- time zone: UTC (the report's days and times)" in lines and "## Messages" not in lines


def test_the_summary_names_the_time_zone_and_what_the_run_told_its_user() -> None:
    pairs, clusters = _clusters()
    log = RunLog()
    log.say("news.csv: 7 of 21 published_at times have no offset: read as Asia/Taipei time (--timezone)")
    record = RunRecord(
        model="m",
        threshold=0.9,
        timezone="Asia/Taipei",
        counts=Counts(items_in=21),
        threshold_source="threshold 0.9 calibrated for level >= 1.0 (<b>)",
    ).timed(log)
    lines = render_markdown(pairs, clusters, record).splitlines()
    assert "- time zone: Asia/Taipei (the report's days and times)" in lines
    assert (
        "- news.csv: 7 of 21 published_at times have no offset: read as Asia/Taipei time (--timezone)"
        in lines
    )
    assert lines.index("## Messages") < lines.index("| count | value |")
    # Markdown that reads as it renders: ">=" kept, "<" an entity (no raw HTML)
    assert "- threshold source: threshold 0.9 calibrated for level >= 1.0 (&lt;b>)" in lines


def test_a_run_record_is_built_once_and_never_changed() -> None:
    record = RunRecord(run_id="r1", counts=Counts(items_in=3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.model = "other"  # type: ignore[misc]
    log = RunLog()
    log.messages.append("told")
    with log.stage("load"):
        pass
    timed = record.timed(log)
    assert timed.messages == ["told"] and "load" in timed.timings_s
    assert record.messages == [] and record.timings_s == {}  # the record it was made from is unchanged
    log.messages.append("later")
    assert timed.messages == ["told"]  # a copy of the log as it stood


def test_a_long_title_or_a_long_list_is_shortened_in_the_summarys_table() -> None:
    """A headline of thousands of characters (a body pasted into the title column) or a daily cluster
    that gained hundreds of items made the largest-clusters table one unreadable line; the table shows
    the start of each and says how much more there is (the report's files keep them whole)."""
    long_title = "颱風海葵登陸臺東" * 400
    frame = pd.DataFrame(
        {
            "id": [f"n{i}" for i in range(40)],
            "title": [long_title] + [f"short {i}" for i in range(39)],
            "source": ["AP"] * 40,
            "published_at": pd.to_datetime([None] * 40, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0] * 39, "b": list(range(1, 40)), "similarity": [0.95] * 39})
    clusters = batch_clusters(frame, pairs)[1]
    clusters["added_ids"] = [[f"n{i}" for i in range(40)]]
    record = RunRecord(run_id="batch-1", model="m", counts=Counts(items_in=40))
    row = next(line for line in render_markdown(pairs, clusters, record).splitlines() if "颱風" in line)
    assert len(row) < 400, len(row)
    assert "颱風海葵登陸臺東颱風" in row and "…" in row
    assert "n0, n1" in row and "(40 in all)" in row
    assert len(clusters["representative_title"].iloc[0]) == len(long_title)  # the table's frame unchanged


def test_a_headline_in_the_summary_is_text_never_markdown_or_terminal_codes() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e", "f"],
            "title": [
                "Floods ![pixel](http://tracker.example/p.png) [click](http://evil.example) *north*",
                "Floods ![pixel](http://tracker.example/p.png) [click](http://evil.example) *north*",
                "Rates \\| held `code` _now_ ~~cut~~",
                "Rates \\| held `code` _now_ ~~cut~~",
                "Floods\x1b[31m north\x07\x00\x7f\x9b",
                "Floods\x1b[31m north\x07\x00\x7f\x9b",
            ],
            "source": ["AP"] * 6,
            "published_at": pd.to_datetime([None] * 6, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2, 4], "b": [1, 3, 5], "similarity": [0.93, 0.94, 0.95]})
    clusters = batch_clusters(frame, pairs)[1]
    md = render_markdown(pairs, clusters, RunRecord(model="m", threshold=0.9))
    rows = {line.split(" | ")[0]: line for line in md.splitlines() if line.startswith("| c-")}
    # no image, no link, no emphasis or code span: the title as it reads
    assert (
        "!\\[pixel\\](http\\://tracker.example/p.png) \\[click\\](http\\://evil.example) \\*north\\*"
        in rows["| c-a"]
    )
    assert "![" not in md and "](" not in md.replace("\\](", "")
    # a backslash before a pipe is the title's own: the pipe still stays inside its cell
    assert "Rates \\\\\\| held \\`code\\` \\_now\\_ \\~\\~cut\\~\\~" in rows["| c-c"]
    assert rows["| c-c"].replace("\\\\", "").replace("\\|", "").count("|") == 8  # 7 cells, 8 borders
    # no control character (a terminal showing the file would obey an escape sequence)
    assert "Floods\\[31m north" in rows["| c-e"]
    assert not any(ch in md for ch in "\x1b\x07\x00\x7f\x9b")
    # the figures nlsim names itself stay as they read
    assert "| cluster | topic | status | size | representative | added | max score |" in md.splitlines()


def test_a_right_to_left_headline_cannot_reorder_the_rest_of_its_row() -> None:
    """A title holding U+202E (right-to-left override) ran the rest of its row in summary.md backwards in a
    plain-text view (the size, the score, the pipes), and an Arabic title could swap itself with the
    figures after it. Such a cell is in a first-strong isolate now (U+2068 ... U+2069), its own stray
    U+2069 dropped, so the row's other cells read as written."""
    override = "Floods \u202enorth"
    arabic = "فيضانات في الشمال"
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e", "f"],
            "title": [override, override, arabic, arabic, "x\u2069\u202ey", "x\u2069\u202ey"],
            "source": ["AP"] * 6,
            "published_at": pd.to_datetime([None] * 6, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2, 4], "b": [1, 3, 5], "similarity": [0.93, 0.94, 0.95]})
    clusters = batch_clusters(frame, pairs)[1]
    md = render_markdown(pairs, clusters, RunRecord(model="m", threshold=0.9))
    rows = {line.split(" | ")[0]: line for line in md.splitlines() if line.startswith("| c-")}
    assert f"| \u2068{override}\u2069 |" in rows["| c-a"]
    assert f"| \u2068{arabic}\u2069 |" in rows["| c-c"]
    assert "| \u2068x\u202ey\u2069 |" in rows["| c-e"]  # its own PDI would have ended the isolate
    assert "| Flood \\| north |" in render_markdown(*_clusters(), RunRecord(model="m"))  # as it was


def test_the_day_in_brief_names_every_status_of_its_stories_so_the_parts_add_up() -> None:
    """A day after a model switch: of its 4 stories none is new or grown, one merged and 3 regrouped; the
    brief's figure says so, never "4 stories (0 new, 0 grown today)"."""
    from nlsim.report.brief import day_brief
    from nlsim.report.page import page_data

    def brief(statuses: list[str], **counts: int) -> str:
        record = RunRecord(
            model="m", mode="incremental", counts=Counts(items_in=1, clusters=4, clustered_items=9, **counts)
        )
        clusters = pd.DataFrame(
            {
                "cluster_id": ["c-a", "c-b", "c-c", "c-d"],
                "size": [3, 2, 2, 2],
                "member_ids": [["a1", "a2", "a3"], ["b1", "b2"], ["c1", "c2"], ["d1", "d2"]],
                "representative": ["a1", "b1", "c1", "d1"],
                "status": statuses,
            }
        )
        return day_brief(page_data(pd.DataFrame(), clusters, record, None), record)

    switched = brief(
        ["merged", "regrouped", "regrouped", "regrouped"], clusters_new=0, clusters_grown=0, clusters_merged=1
    )
    assert (
        "1 item read; 4 stories (0 new, 0 grown, 1 merged, 3 regrouped today) grouping 9 items." in switched
    )
    usual = brief(["new", "grown", "grown", "new"], clusters_new=2, clusters_grown=2, clusters_merged=0)
    assert "4 stories (2 new, 2 grown today) grouping 9 items." in usual


def test_a_headline_with_underscores_beside_each_other_reads_as_written_never_as_emphasis() -> None:
    """``__init__`` escaped only at its ends (``\\__init_\\_``) still opened emphasis between the inner two
    underscores, so the summary read "_*init*_"; every ``_`` that is not between two letters or digits is
    escaped, one inside a word stays."""
    from nlsim.report.summary import md_cell

    assert md_cell("__init__.py crash") == "\\_\\_init\\_\\_.py crash"
    assert md_cell("a__b") == "a\\_\\_b"
    assert md_cell("items_in snake_case 「_重要_」") == "items_in snake_case 「\\_重要\\_」"
    # an ``_`` beside another one or at a word's edge is never left as markup
    for title in ("__main__", "foo__", "_x_", "x___y", "__"):
        assert "_" not in md_cell(title).replace("\\_", ""), title


def test_a_summary_of_no_cluster_says_so_instead_of_an_empty_table() -> None:
    """A run whose items tell no story twice (a quiet day, a corpus of one item) gave "## Largest clusters
    (top 0)" over a table of headers alone; the summary (and the flow's artifact) says there is no cluster,
    in the words of the page."""
    frame = pd.DataFrame({"id": ["a", "b"], "title": ["Flood", "Fire"], "published_at": [None, None]})
    clusters = batch_clusters(frame, pd.DataFrame({"a": [], "b": [], "similarity": []}))[1]
    record = RunRecord(run_id="batch-1", model="m", threshold=0.9, counts=Counts(items_in=2, pairs=0))
    lines = render_markdown(pd.DataFrame(), clusters, record).splitlines()
    assert lines[-3:] == [
        "## Largest clusters",
        "",
        "No cluster: no two items of this run tell the same story.",
    ]
    assert not any(line.startswith("| cluster |") for line in lines)


def test_the_summary_says_when_no_near_miss_was_asked_for() -> None:
    """A run with ``--near-misses 0`` listed ``near_misses | 0`` in the summary as if none were found: the
    summary says none were asked for, and how many a run that asked for them listed, of how many."""
    pairs, clusters = _clusters()
    record = RunRecord(model="m", threshold=0.9, counts=Counts(items_in=3, near_misses=0), near_miss_limit=0)
    lines = render_markdown(pairs, clusters, record).splitlines()
    assert "- near misses: none asked for (`--near-misses 0`)" in lines
    asked = dataclasses.replace(record, counts=Counts(items_in=3, near_misses=7), near_miss_limit=200)
    assert "- near misses: 7 listed (at most 200, `--near-misses`)" in render_markdown(pairs, clusters, asked)
    old = dataclasses.replace(record, near_miss_limit=None)  # a record written before the limit was kept
    assert not [line for line in render_markdown(pairs, clusters, old).splitlines() if "near misses:" in line]


AUTOLINK = re.compile(r"(?i)(?:https?|ftp)://|www\.|[\w.+-]@\w|<\w+:")
"""What a Markdown renderer makes a link of in plain text: a URL (GitHub's extended autolinks:
``https://...``, ``www....``, an e-mail address) and CommonMark's own ``<scheme:...>``."""


@pytest.mark.parametrize(
    "title",
    [
        "看這裡 https://example.com/a_b_c",
        "see <https://example.com/x> now",
        "Rates at www.example.com/rates_today",
        "mail desk@example.com or ftp://files.example/a",
        "HTTPS://EXAMPLE.COM/UP",
    ],
)
def test_a_url_in_a_headline_reads_as_text_never_as_a_link(title: str) -> None:
    """A bare URL in a title (``看這裡 https://example.com/a_b_c``) was written to the summary as it was:
    GitHub and other renderers make it a link (and a link's ``_`` may open emphasis). The summary writes it
    so that it reads as the text: no renderer finds a URL in it, and without its backslashes it is the
    title."""
    from nlsim.report.summary import md_cell

    cell = md_cell(title)
    assert not AUTOLINK.search(cell), cell
    assert re.sub(r"\\(.)", r"\1", cell).replace("&lt;", "<") == title
    frame = pd.DataFrame(
        {"id": ["a", "b"], "title": [title, title], "published_at": pd.to_datetime([None] * 2, utc=True)}
    )
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.95]})
    md = render_markdown(pairs, batch_clusters(frame, pairs)[1], RunRecord(model="m", threshold=0.9))
    assert cell in md and not AUTOLINK.search(md)
