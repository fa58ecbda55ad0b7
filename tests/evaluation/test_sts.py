"""STS Benchmark straight from the package files (not its loader, which returns dev as test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlsim.errors import InputError
from nlsim.evaluation.sts import load_stsb, read_stsb_file, stsb_folder


def test_split_sizes_and_scale() -> None:
    sizes = {s: len(load_stsb(s)) for s in ("train", "validation", "test")}
    assert sizes == {"train": 5749, "validation": 1500, "test": 1379}  # the files
    data = load_stsb()  # together: a pair repeated in a later split is kept there only
    assert data["split"].value_counts().to_dict() == {"train": 5725, "validation": 1497, "test": 1379}
    assert data["score"].between(0, 1).all()
    assert data["score"].max() == 1.0


def test_nine_field_lines_keep_the_sentences_not_the_attribution() -> None:
    path = stsb_folder() / "sts-test.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    n9 = next(i for i, ln in enumerate(lines) if len(ln.split("\t")) == 9)
    fields = lines[n9].split("\t")
    row = read_stsb_file(path, "test").iloc[n9]
    assert (row["text_a"], row["text_b"]) == (fields[5], fields[6])
    assert row["score"] == pytest.approx(float(fields[4]) / 5)


def test_bad_line_is_reported(tmp_path: Path) -> None:
    p = tmp_path / "sts.csv"
    p.write_text("g\ts\t2012\t1\t3.0\ta\tb\ng\ts\t2012\t2\tx\n", encoding="utf-8")
    with pytest.raises(InputError, match="row 2"):
        read_stsb_file(p, "test")
