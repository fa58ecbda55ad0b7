"""The review panel's Python side: the rubric the page carries is the guidelines' text, the same-story
button says what the rubric says, the export's columns and formula rule come from one place each."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from nlsim.io import editor_file
from nlsim.report import review
from nlsim.report.record import RunRecord
from nlsim.report.spreadsheet import FORMULA_START

GUIDELINES = Path(__file__).resolve().parents[2] / "annotations" / "GUIDELINES.md"


def _plain(markdown: str) -> str:
    """Markdown text as the page words it: no bold, no code marks, one space between words."""
    return " ".join(markdown.replace("**", "").replace("`", "").split())


def test_the_pages_rubric_is_the_guidelines_text() -> None:
    text = GUIDELINES.read_text(encoding="utf-8")
    levels = [
        (float(score), _plain(level), _plain(what))
        for score, level, what in re.findall(r"^\| \*\*([\d.]+)\*\* \| (.+?) \| (.+?) \|$", text, re.M)
    ]
    assert len(levels) == 5
    assert [(score, level, _plain(what)) for score, level, what in review.RUBRIC] == levels
    rules = [
        _plain(r) for r in re.findall(r"^\d\. (.+?)(?=^\d\. |^$)", text.split("## Rules")[1], re.M | re.S)
    ]
    assert [_plain(r) for r in review.RULES] == rules[:4] + rules[5:7]


def test_the_same_story_button_carries_the_rubrics_narrow_shared_topic() -> None:
    same = next(label for v, _, label, _ in review.LEVELS if v == 1.0)
    assert "or a very narrow shared topic" in same
    assert "or a very narrow shared topic" in dict((s, w) for s, _, w in review.RUBRIC)[1.0]
    assert [v for v, *_ in review.LEVELS] == [s for s, *_ in review.RUBRIC]


def test_the_export_is_told_its_columns_and_the_formula_rule() -> None:
    meta = review.review_meta(RunRecord(run_id="batch-1", model="m", threshold=0.9095))
    assert meta["columns"] == list(editor_file.COLUMNS)
    assert meta["hashColumns"] == ["sha256_a", "sha256_b"] == list(editor_file.HASH_COLUMNS)
    assert meta["formulaStart"] == list(FORMULA_START)


def test_the_rubric_section_is_folded_and_escaped() -> None:
    section = review.rubric_section()
    assert section.startswith("<section id='rubric'") and "<details id='rubric-levels'>" in section
    assert "reports the same event or a very narrow shared topic" in section
    assert "&quot;country&quot;" in section  # the rules' quotes are text


def test_the_near_miss_heading_of_one_pair_says_pair() -> None:
    """A report with one near miss headed its queue "the 1 best pairs below the threshold": one pair is
    "the best pair", and one at or above the threshold among several is counted in the singular too."""
    meta = review.review_meta(RunRecord(run_id="batch-1", model="m", threshold=0.85))

    def heading(near: list[dict[str, float]]) -> str:
        found = re.search(
            r"<h3>Near misses[^<]*</h3>", review.review_section({"review": meta, "nearMisses": near})
        )
        assert found is not None
        return found.group(0)

    assert heading([{"similarity": 0.8}]) == (
        "<h3>Near misses: the best pair below the threshold (cosine &lt; 0.850)</h3>"
    )
    assert heading([{"similarity": 0.9}]) == (
        "<h3>Near misses: the best pair the report left apart: at or above the threshold (cosine ≥ 0.850), "
        "kept in two clusters by the cluster rule or an editor’s verdict</h3>"
    )
    assert "the 2 best pairs the report left apart" in heading([{"similarity": 0.9}, {"similarity": 0.8}])


def test_the_near_miss_heading_counts_the_pairs_at_or_above_the_threshold() -> None:
    """Near misses at or above the threshold (pairs the cluster rule or an editor's verdict kept in two
    clusters, listed first) are not called pairs below it: the heading counts both kinds."""
    meta = review.review_meta(RunRecord(run_id="batch-1", model="m", threshold=0.85))
    near = [{"similarity": s} for s in (0.95, 0.9, 0.85, 0.84, 0.8)]
    heading = re.search(
        r"<h3>Near misses[^<]*</h3>", review.review_section({"review": meta, "nearMisses": near})
    )
    assert heading is not None
    assert heading.group(0) == (
        "<h3>Near misses: the 5 best pairs the report left apart, highest score first: 3 at or above the "
        "threshold (cosine ≥ 0.850) that the cluster rule or an editor’s verdict kept in two clusters, 2 "
        "below it</h3>"
    )
    below = near[3:]
    heading = re.search(
        r"<h3>Near misses[^<]*</h3>", review.review_section({"review": meta, "nearMisses": below})
    )
    assert heading is not None
    assert heading.group(0) == (
        "<h3>Near misses: the 2 best pairs below the threshold (cosine &lt; 0.850), nearest first</h3>"
    )


def test_a_report_that_asked_for_no_near_miss_says_so_not_the_0_best_pairs() -> None:
    """A run with ``--near-misses 0`` headed its empty queue "the 0 best pairs below the threshold": it
    says none were asked for; one that asked and found none says none came close; a record written before
    the limit was kept says the report has none."""
    record = RunRecord(run_id="batch-1", model="m", threshold=0.85)

    def heading(limit: int | None) -> str:
        meta = review.review_meta(replace(record, near_miss_limit=limit))
        section = review.review_section({"review": meta, "nearMisses": []})
        found = re.search(r"<h3>Near misses.*?</h3>", section)
        assert found is not None
        return found.group(0)

    assert heading(0) == "<h3>Near misses: none asked for (<code>--near-misses 0</code>)</h3>"
    assert heading(200) == "<h3>Near misses: none: no candidate pair came close to the threshold</h3>"
    assert heading(None) == "<h3>Near misses: none in this report</h3>"
    assert all("0 best" not in heading(n) for n in (0, 200, None))


def test_the_page_gets_the_editors_decisions_on_its_items_with_their_notes_and_held_out_pairs_apart() -> None:
    """What the page takes from the editors: the decisions on two items it shows (one on an item it does
    not show is left out, as the page could not point at it), the same-story verdicts another verdict
    overruled flagged so (their items are not joined), an editor's note whichever way round its pair was
    given, the verdict's score as the editors' file gives it, and the training pairs (an editor may still
    mark one) apart from the held-out ones (never marked)."""
    from nlsim.report.record import EditorsRecord

    editors = EditorsRecord(
        decisions=[["a", "b", 0.66667], ["a", "gone", 0.0]],
        overruled=[["c", "d", 1.0]],
        notes=[["b", "a", "same match, two reports"]],
        scored_ids=["p-train", "p-test"],
        training_ids=["p-train"],
        held_out_ids=["p-test"],
    )
    index = {"a": 0, "b": 1, "c": 2, "d": 3}
    data = review.editors_data(editors, index.__getitem__, index)
    assert data == {
        "scored": ["p-train", "p-test"],
        "training": ["p-train"],
        "heldOut": ["p-test"],
        "decisions": [
            {"a": 0, "b": 1, "score": 0.66667, "notes": "same match, two reports"},
            {"a": 2, "b": 3, "score": 1.0, "overruled": True},
        ],
    }
    assert review.editors_data(None, index.__getitem__, index) == {
        "scored": [],
        "training": [],
        "heldOut": [],
        "decisions": [],
    }


def test_the_levels_shown_by_default_are_the_three_the_rubric_names_and_its_scores_read_as_it_says() -> None:
    """The panel shows three levels by default, the three the rubric's section names: same story (1), same
    topic and same entity (0.75) and unrelated (0); the rubric's table gives each level's score as that
    sentence writes it (1, not 1.0)."""
    meta = review.review_meta(RunRecord(run_id="batch-1", model="m", threshold=0.9))
    section = review.rubric_section()
    assert "same story (1), same topic and same entity (0.75) and unrelated (0)" in section
    assert meta["three"] == [1.0, 0.75, 0.0]
    assert set(meta["three"]) <= {level["v"] for level in meta["levels"]}
    assert re.findall(r"<td class='num'>([^<]*)</td>", section) == ["1", "0.75", "0.5", "0.25", "0"]
