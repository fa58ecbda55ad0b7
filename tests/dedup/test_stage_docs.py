"""The stages a report run has, as docs/report.md's table and docs/operations.md list them, are the stages of
:data:`nlsim.dedup.run.STAGES`, in its order, and the counts docs/operations.md lists are those of
:class:`nlsim.report.record.Counts`: a stage or count added to the run (``copies``, ``exact_copies``) and not
to the documents leaves a reader of ``run.json`` with a name they cannot look up."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from nlsim.dedup.run import STAGES
from nlsim.dedup.state import GENERATION_ENTRIES
from nlsim.dedup.window import ITEM_COLUMNS
from nlsim.report.record import Counts

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_report_pages_stage_table_has_every_stage_in_order() -> None:
    text = (DOCS / "report.md").read_text(encoding="utf-8")
    table = text.split("## What a report run does", 1)[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| ([a-z -]+) \| `", table, re.MULTILINE)
    assert [row.replace(" ", "-") for row in rows] == list(STAGES)


def test_the_operations_pages_lists_of_stages_name_every_stage_in_order() -> None:
    text = (DOCS / "operations.md").read_text(encoding="utf-8")
    listed = re.search(r"stages of a batch run \(`nlsim/dedup/run.py`: ([^)]*)\)", text, re.DOTALL)
    assert listed, "operations.md no longer lists the stages of a daily run"
    names = [re.sub(r" with .*", "", name.strip()) for name in listed[1].split(",")]
    assert names == list(STAGES)
    timings = re.search(r"timings per stage \(`timings_s`\): (.*?);\n", text, re.DOTALL)
    assert timings, "operations.md no longer lists the timings of a run record"
    outside_brackets = re.sub(r"\([^()]*(?:\([^()]*\)[^()]*)*\)", "", timings[1])
    assert re.findall(r"`([a-z-]+)`", outside_brackets) == list(STAGES)


def test_the_operations_pages_list_of_counts_names_every_count_of_a_run_record() -> None:
    text = (DOCS / "operations.md").read_text(encoding="utf-8")
    counts = re.search(r"^- counts: (.*?);\n", text, re.MULTILINE | re.DOTALL)
    assert counts, "operations.md no longer lists the counts of a run record"
    outside_brackets = re.sub(r"\([^()]*\)", "", counts[1])
    assert re.findall(r"`([a-z_]+)`", outside_brackets) == [f.name for f in fields(Counts)]


def test_the_operations_pages_state_folder_lists_every_file_of_a_generation_and_every_item_column() -> None:
    """The layout left out verdicts.parquet, scored.parquet and items.parquet's topic_id."""
    text = (DOCS / "operations.md").read_text(encoding="utf-8")
    layout = re.search(r"^STATE/generations/g\d+-\w+/ .*?\n(.*?)^STATE/runs/", text, re.MULTILINE | re.DOTALL)
    assert layout, "operations.md no longer shows a generation folder"
    assert set(re.findall(r"^    ([\w.]+)/? ", layout[1], re.MULTILINE)) == set(GENERATION_ENTRIES)
    items = re.search(r"^    items\.parquet +(.*?)\n    \w", layout[1], re.MULTILINE | re.DOTALL)
    assert items and [c.strip() for c in items[1].split(",")] == list(ITEM_COLUMNS)
