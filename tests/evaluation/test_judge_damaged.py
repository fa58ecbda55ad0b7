"""``nlsim judge`` on a damaged report folder, and on scored pairs that give one pair two scores: a
one-line refusal naming the file (and for the pairs the row and field), never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from nlsim.errors import InputError, StateError
from nlsim.evaluation.judge import judge_report
from tests.evaluation.test_judge import judge, refused, write_report


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report (``rep``) over a corpus of STS-B sentences, and their scored pairs (as in test_judge)."""
    return write_report(tmp_path_factory.mktemp("judge-damaged"))


@pytest.fixture
def report(written: Path, tmp_path: Path) -> Path:
    """A copy of :func:`written` to damage (its run.json's corpus is absolute: the copy still finds it)."""
    for name in ("pairs.tsv", "corpus.parquet"):
        shutil.copy(written / name, tmp_path / name)
    shutil.copytree(written / "rep", tmp_path / "rep", symlinks=True)
    return tmp_path


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


DAMAGE = {
    "run.json truncated": ("run.json", truncate, "not valid JSON"),
    "run.json emptied": ("run.json", lambda p: p.write_bytes(b""), "not valid JSON"),
    "run.json a list": ("run.json", lambda p: p.write_text("[1, 2]\n", encoding="utf-8"), "not a run record"),
    "run.json null": (
        "run.json",
        lambda p: p.write_text("null\n", encoding="utf-8"),
        "a JSON null, not an object",
    ),
    "clusters truncated": ("clusters.parquet", truncate, "cannot be read as Parquet"),
    "clusters emptied": ("clusters.parquet", lambda p: p.write_bytes(b""), "cannot be read as Parquet"),
    "pairs truncated": ("pairs.parquet", truncate, "cannot be read as Parquet"),
    "clusters of another table": (
        "clusters.parquet",
        lambda p: pd.DataFrame({"id": ["a"]}).to_parquet(p),
        "has no column cluster_id, member_ids",
    ),
}


def damage(report: Path, name: str, how: object) -> Path:
    path = (report / "rep" / name).resolve()  # a report file may be a link into the run's own folder
    assert path.is_file(), sorted(p.name for p in (report / "rep").iterdir())
    how(path)  # type: ignore[operator]
    return path


@pytest.mark.slow
@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_report_file_is_named_not_a_traceback(report: Path, case: str) -> None:
    name, how, words = DAMAGE[case]
    damage(report, name, how)
    with pytest.raises(StateError, match=words) as info:
        judge_report(report / "rep", report / "pairs.tsv", corpus=report / "corpus.parquet")
    message = str(info.value)
    assert name in message and "the report folder" in message and "damaged" in message
    assert "write the report again" in message and "\n" not in message


@pytest.mark.parametrize("case", ["run.json truncated", "clusters emptied"])
def test_nlsim_judge_on_a_damaged_report_exits_with_one_line(report: Path, case: str) -> None:
    name, how, words = DAMAGE[case]
    damage(report, name, how)
    refused(judge(report, "pairs.tsv"), 1, name, words, "damaged", "write the report again")


@pytest.mark.slow
def test_nlsim_judge_refuses_one_pair_scored_twice_differently(report: Path) -> None:
    """Which score counted depended on the row order; now the second row is named by its score."""
    table = pd.read_csv(report / "pairs.tsv", sep="\t", dtype=str, keep_default_na=False)
    first = table.index[table["split"] == "validation"][0]
    again = table.loc[[first]].assign(pair_id="again", score="0" if table.at[first, "score"] != "0" else "1")
    again[["id_a", "id_b", "text_a", "text_b"]] = again[["id_b", "id_a", "text_b", "text_a"]].to_numpy()
    pd.concat([table, again], ignore_index=True).to_csv(report / "twice.tsv", sep="\t", index=False)
    message = refused(judge(report, "twice.tsv"), 1, "twice.tsv", f"row {len(table) + 1}", "'score'")
    assert f"the same pair as row {first + 1} has score" in message
    with pytest.raises(InputError):
        judge_report(report / "rep", report / "twice.tsv")
    same = again.assign(score=table.at[first, "score"])  # the same score twice: judged as before
    pd.concat([table, same], ignore_index=True).to_csv(report / "same.tsv", sep="\t", index=False)
    proc = judge(report, "same.tsv", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["judged_pairs"] == 80
