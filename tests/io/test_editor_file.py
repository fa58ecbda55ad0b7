"""An editors' file (a drawn file to score, or the report page's export): its cells as a spreadsheet may
save them, and what nlsim counts in it (nlsim/io/editor_file.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nlsim.io import editor_file


@pytest.mark.parametrize(
    ("cell", "says"),
    [("1.0", True), (1.0, True), ("Yes", True), (" true ", True), ("0.0", False), (0.0, False), ("2", None)],
)
def test_an_overrule_cell_reads_as_a_spreadsheet_saves_it(cell: object, says: bool | None) -> None:
    # a spreadsheet that read the column as numbers writes 1.0 and 0.0 back
    assert editor_file.overrule_cell(cell) is says


def test_scores_held_counts_the_filled_score_cells_only(tmp_path: Path) -> None:
    rows = [("p1", "a", "b", ""), ("p2", "a", "c", "  "), ("p3", "b", "c", "0.75")]
    frame = pd.DataFrame(
        {c: [""] * len(rows) for c in editor_file.COLUMNS} | {"pair_id": [r[0] for r in rows]}
    ).assign(id_a=[r[1] for r in rows], id_b=[r[2] for r in rows], score=[r[3] for r in rows])
    path = tmp_path / "drawn.csv"
    frame[list(editor_file.COLUMNS)].to_csv(path, index=False)
    assert editor_file.scores_held(path) == 1  # a cell of spaces is not a score
    frame.assign(split="train").to_csv(path, index=False)
    assert editor_file.scores_held(path) is None  # a pair file, not an editors' file


def test_a_pair_the_loop_merged_counts_whatever_its_stratum_says_after_the_loops_name() -> None:
    frame = pd.DataFrame(
        {
            "split": ["train", "train", "validation", "test"],
            "stratum": ["editor-loop", "editor-loop:report-page:inside", "lex-high", None],
        }
    )
    got = editor_file.editor_labels(frame)
    assert (got.merged, got.from_page, got.overruled) == ({"train": 2}, {"train": 1}, {})
