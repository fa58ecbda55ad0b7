"""``nlsim judge`` gives a verdict only on pairs that belong to the report, through the command line.

A scored pair is judged when both its ids are items of the report's corpus holding the pair's texts; pairs
whose ids name other texts there are not judged (and counted), and pairs of which none belongs to the
corpus are refused by name. A figure without a denominator is "undefined" (``null`` in ``--json``, which
is valid JSON: never ``NaN``), not 0.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pytest

from nlsim.errors import ConfigError, InputError
from nlsim.evaluation.calibration import Calibration
from nlsim.evaluation.judge import (
    Judgement,
    PairFigures,
    describe,
    headline,
    judge_items,
    judge_report,
    judge_tables,
    match_corpus,
    purity_by_size,
    scored_pairs,
)
from tests.chain.test_chain import make_data
from tests.command import nlsim, refused

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


def strict_json(text: str) -> dict[str, object]:
    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def judge(folder: Path, pairs: str, *more: str) -> subprocess.CompletedProcess[str]:
    return nlsim("judge", "--report", "rep", "--pairs", pairs, *more, cwd=folder)


def write_report(folder: Path) -> Path:
    """In ``folder``: a report (``rep``) over a corpus of STS-B sentences, and the scored pairs of those
    sentences with ids (``pairs.tsv``)."""
    make_data(folder, train=20, validation=80, test=10)
    args = ["dedup", "--corpus", "corpus.parquet", "--out", "rep", "--model", FAST_MODEL, "--convert", "none"]
    proc = nlsim(*args, "--threshold", "0.8", "--no-cache", "--no-progress", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`write_report` once for the module."""
    return write_report(tmp_path_factory.mktemp("judge"))


def shifted(folder: Path, moved: int, name: str) -> Path:
    """The pair file with the ids of the first ``moved`` validation pairs moved to other pairs' items."""
    table = pd.read_csv(folder / "pairs.tsv", sep="\t", dtype=str, keep_default_na=False)
    rows = table.index[table["split"] == "validation"][:moved]
    table.loc[rows, ["id_a", "id_b"]] = table.loc[rows[::-1], ["id_a", "id_b"]].to_numpy()
    same = table.loc[rows, "id_a"].to_numpy() == table.loc[rows[::-1], "id_a"].to_numpy()
    assert not same.any()  # every moved pair now names other items (an even count: none stays in place)
    table.to_csv(folder / name, sep="\t", index=False)
    return folder / name


@pytest.mark.slow
def test_every_pair_of_the_report_is_judged(report: Path) -> None:
    proc = judge(report, "pairs.tsv", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = strict_json(proc.stdout)
    assert out["judged_pairs"] == 80 and out["mismatched_pairs"] == 0 and out["pairs_not_in_corpus"] == 0


@pytest.mark.slow
def test_pairs_whose_ids_name_other_texts_are_not_judged(report: Path) -> None:
    shifted(report, 72, "mixed.tsv")
    proc = judge(report, "mixed.tsv", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = strict_json(proc.stdout)
    assert out["judged_pairs"] == 8 and out["mismatched_pairs"] == 72
    text = judge(report, "mixed.tsv")
    assert "72 of the 80 scored validation pairs were not judged" in text.stdout, text.stdout


@pytest.mark.slow
def test_pairs_of_another_corpus_are_refused(report: Path) -> None:
    shifted(report, 80, "other.tsv")
    message = refused(
        judge(report, "other.tsv"), 1, "other.tsv", "row ", "'text_a'", "corpus.parquet", command="judge"
    )
    assert "none of the 80 scored validation pairs" in message
    unrelated = pd.read_csv(report / "pairs.tsv", sep="\t", dtype=str, keep_default_na=False)
    unrelated["id_a"] = "x-" + unrelated["id_a"]
    unrelated.to_csv(report / "unrelated.tsv", sep="\t", index=False)
    refused(
        judge(report, "unrelated.tsv", "--json"),
        1,
        "unrelated.tsv",
        "not in the report's corpus",
        command="judge",
    )


@pytest.mark.slow
def test_figures_without_a_denominator_are_undefined(report: Path, tmp_path: Path) -> None:
    # a report with no cluster: no judged pair is grouped, so precision has nothing to divide by
    args = ["dedup", "--corpus", "corpus.parquet", "--out", "empty", "--model", FAST_MODEL]
    args += ["--convert", "none", "--threshold", "0.9999", "--no-cache", "--no-progress"]
    proc = nlsim(*args, cwd=report)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = nlsim("judge", "--report", "empty", "--pairs", "pairs.tsv", "--json", cwd=report)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = strict_json(proc.stdout)  # valid JSON: no NaN
    assert out["precision"] is None and out["f1"] is None and out["recall"] == 0.0
    assert out["f1_ci95"] is None  # not [0.0, 0.0]: an undefined figure has no interval
    text = nlsim("judge", "--report", "empty", "--pairs", "pairs.tsv", cwd=report).stdout
    assert "precision undefined" in text and "F1 undefined" in text and "F1 0.000" not in text
    j = judge_tables(
        pd.DataFrame({"cluster_id": [], "member_ids": []}),
        pd.DataFrame({"id_a": [], "id_b": []}),
        pd.DataFrame({"id_a": ["a"], "id_b": ["b"], "score": [0.2]}),
    )
    assert j["precision"] is None and j["recall"] is None
    assert "recall undefined" in describe(Judgement.of({**j, "pairs": "pairs.tsv", "split": "all"}))


@pytest.mark.slow
def test_a_report_run_judged_on_every_split_agrees_with_nlsim_judge(report: Path) -> None:
    """``--judge-split all`` (also the chain's ``--judge-split all``) judges on the pairs of every split."""
    args = ["dedup", "--corpus", "corpus.parquet", "--out", "judged-all", "--model", FAST_MODEL]
    args += ["--convert", "none", "--threshold", "0.8", "--no-cache", "--no-progress"]
    proc = nlsim(*args, "--judge-pairs", "pairs.tsv", "--judge-split", "all", cwd=report)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = json.loads((report / "judged-all" / "run.json").read_text())["judge"]
    out = strict_json(judge(report, "pairs.tsv", "--split", "all", "--json").stdout)
    validation = strict_json(judge(report, "pairs.tsv", "--json").stdout)
    assert shown["split"] == out["split"] == "all"
    assert shown["judged_pairs"] == out["judged_pairs"] > validation["judged_pairs"]
    assert (shown["f1"], shown["f1_ci95"]) == (out["f1"], out["f1_ci95"])


@pytest.mark.slow
def test_pairs_without_ids_are_counted_as_not_in_the_corpus(report: Path) -> None:
    """A few pairs without ids (a benchmark set mixed in) are left out and counted; a split none of
    whose pairs has both ids is refused."""
    table = pd.read_csv(report / "pairs.tsv", sep="\t", dtype=str, keep_default_na=False)
    table.loc[table["split"] == "train", "id_a"] = ""
    table.to_csv(report / "train-no-ids.tsv", sep="\t", index=False)
    out = strict_json(judge(report, "train-no-ids.tsv", "--split", "all", "--json").stdout)
    assert out["pairs_not_in_corpus"] == 20 and out["judged_pairs"] == 90
    refused(
        judge(report, "train-no-ids.tsv", "--split", "train"),
        1,
        "train-no-ids.tsv",
        "'id_a'",
        "none of",
        command="judge",
    )


def test_the_judgement_holds_every_figure_judge_tables_gives(report: Path) -> None:
    judged = judge_report(report / "rep", report / "pairs.tsv", corpus=report / "corpus.parquet")
    figures = judge_tables(
        pd.read_parquet(report / "rep" / "clusters.parquet"),
        pd.read_parquet(report / "rep" / "pairs.parquet"),
        pd.DataFrame({"id_a": ["a"], "id_b": ["b"], "score": [1.0]}),
    )
    matched = {"pairs", "split", "corpus", "report", "scored_pairs", "mismatched_pairs"}
    matched |= {"pairs_not_in_corpus", "pairs_sha256"}
    assert set(figures) | matched == {f.name for f in fields(Judgement)}
    assert all(v is not None for v in judged.to_dict().values()), judged
    assert judged.report == str(report / "rep") and isinstance(judged.pairs_only, PairFigures)


def test_the_figures_of_every_split_read_as_english() -> None:
    """``--split all``: "8 judged pairs of every split", never "8 judged all pairs"; a calibration too."""
    j = Judgement(
        "p.tsv", "all", 8, 3, 0.5, 0.5, 0.5, scored_pairs=11, mismatched_pairs=1, pairs_not_in_corpus=1
    )
    text = describe(j) + " " + headline(j)
    assert "on 8 judged pairs of every split (3 same story)" in text
    assert "2 of the 11 scored pairs of every split were not judged" in text
    assert "1 of the 11 scored rows of every split repeat a pair" in text
    assert "same story on the pairs of every split:" in text
    cal = Calibration(
        threshold=0.7, level=0.875, precision=1, recall=1, f1=1, n=10, n_positive=2, split="all"
    )
    assert "calibrated for level >= 0.875 on 10 pairs of every split (P" in cal.describe()
    assert " all pairs" not in text + cal.describe()


def test_an_older_record_reads_without_made_up_figures() -> None:
    """A judgement an older nlsim wrote (no scored-pair counts, no pair-only figures) reads back with
    those figures not recorded (None), not as zeros, and its description leaves them out."""
    old = {
        "pairs": "pairs.tsv",
        "split": "validation",
        "judged_pairs": 40,
        "same_story_pairs": 6,
        "precision": 0.8,
        "recall": 0.5,
        "f1": 0.615,
        "f1_ci95": [0.4, 0.8],
        "unjudged_pairs": 3,
        "reported_pairs": 9,
        "written_by": "a newer nlsim",
    }
    j = Judgement.of(old)
    assert (j.scored_pairs, j.mismatched_pairs, j.pairs_not_in_corpus, j.pairs_only) == (None,) * 4
    text = describe(j)
    assert "F1 0.615 [0.400, 0.800] 95%" in text and "3 of 9 reported pairs were not judged" in text
    assert "counting the reported pairs only" not in text and "undefined" not in text
    assert Judgement.of(j.to_dict()) == j


def test_purity_by_size_counts_the_judged_pairs_inside_clusters_of_each_size() -> None:
    """A chained cluster of five is half the same story while its pair of two is all: the purity by size
    tells them apart where precision pools them. A pair across two clusters counts in no band."""
    clusters = pd.DataFrame(
        {"cluster_id": ["c1", "c2", "c3"], "member_ids": [list("abcde"), ["f", "g"], ["h", "i", "j"]]}
    )
    reported = pd.DataFrame({"id_a": ["a", "f", "h"], "id_b": ["b", "g", "i"]})
    judged = pd.DataFrame(
        {
            "id_a": ["a", "a", "c", "d", "f", "h", "a"],
            "id_b": ["b", "c", "d", "e", "g", "i", "f"],
            "score": [1.0, 0.75, 0.875, 0.5, 1.0, 0.75, 1.0],
        }
    )
    figures = judge_tables(clusters, reported, judged)
    got = {p.band: (p.judged, p.same_story, p.share) for p in figures["purity_by_size"]}
    assert got == {
        "2": (1, 1, 1.0),
        "3-4": (1, 0, 0.0),
        "5-9": (4, 2, 0.5),
        "10+": (0, 0, None),
        "3+": (5, 2, 0.4),
        "5+": (4, 2, 0.5),
    }
    assert figures["precision"] == pytest.approx(3 / 6)  # pooled: the five's half and the pairs' all
    j = Judgement.of({**figures, "pairs": "pairs.tsv", "split": "all"})
    assert Judgement.of(json.loads(json.dumps(j.to_dict()))) == j  # run.json keeps it
    text = describe(j)
    bands = "2 items 1.00 (1), 3-4 items 0.00 (1), 5-9 items 0.50 (4), 10+ items undefined (0), 3+ items 0.40"
    assert f"the same story inside clusters of {bands} (5), 5+ items 0.50 (4)" in text, text


def test_purity_by_size_keeps_each_share_to_four_decimals() -> None:
    """Two of three judged pairs inside a cluster of three are the same story: the share run.json keeps is
    0.6667 (four decimals, as the topic figures), not a share cut to the two decimals a line shows."""
    bands = {
        p.band: p
        for p in purity_by_size([["a", "b", "c"]], [("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 0.0)])
    }
    assert (bands["3-4"].judged, bands["3-4"].same_story, bands["3-4"].share) == (3, 2, 0.6667)
    assert bands["3+"].share == 0.6667 and bands["5+"].share is None


@pytest.mark.slow
def test_a_report_whose_corpus_is_gone_needs_the_corpus(report: Path, tmp_path: Path) -> None:
    moved = tmp_path / "work"
    shutil.copytree(report / "rep", moved / "rep")
    (moved / "pairs.tsv").write_bytes((report / "pairs.tsv").read_bytes())
    run = json.loads((moved / "rep" / "run.json").read_text())
    run["corpus"] = str(tmp_path / "gone" / "corpus.parquet")  # the corpus was moved away since
    (moved / "rep" / "run.json").write_text(json.dumps(run))
    refused(judge(moved, "pairs.tsv"), 2, "--corpus", "gone/corpus.parquet", command="judge")
    proc = judge(moved, "pairs.tsv", "--corpus", str(report / "corpus.parquet"), "--json")
    assert proc.returncode == 0 and strict_json(proc.stdout)["judged_pairs"] == 80


def test_a_corpus_other_than_the_reports_is_refused_not_judged_as_misses(report: Path) -> None:
    """Pairs of items the report never saw would count as same-story pairs it missed: F1 would fall with
    exit 0. The report's saved index lists what it embedded."""
    bigger = pd.read_parquet(report / "corpus.parquet")
    extra = bigger.iloc[:3].assign(id=["extra-1", "extra-2", "extra-3"])
    pd.concat([bigger, extra]).to_parquet(report / "bigger.parquet", index=False)
    refused(
        judge(report, "pairs.tsv", "--corpus", "bigger.parquet"),
        2,
        "is not the corpus the report",
        "3 of its",
        "index/ids.parquet",
        command="judge",
    )


def test_a_corpus_other_than_the_reports_counts_one_item_in_the_singular(tmp_path: Path) -> None:
    """The refusal said '1 of its 5 items are not in the report' and, for a report of one item, '1 of the
    report's 1 item (...) are not in it'; each verb agrees with its count now."""
    from nlsim.errors import ConfigError
    from nlsim.evaluation.judge import REPORT_IDS, check_report_corpus

    (tmp_path / REPORT_IDS).parent.mkdir(parents=True)
    pd.DataFrame({"id": ["r1"]}).to_parquet(tmp_path / REPORT_IDS, index=False)
    given = pd.Series(["a", "b", "c", "d", "e"])
    with pytest.raises(ConfigError) as caught:
        check_report_corpus(tmp_path, {"mode": "batch"}, given, "c.parquet")
    said = str(caught.value)
    assert "5 of its 5 items are not in the report, 1 of the report's 1 item (" in said, said
    assert ") is not in it." in said, said
    with pytest.raises(ConfigError) as caught:
        check_report_corpus(tmp_path, {"mode": "batch"}, pd.Series(["r1", "x"]), "c.parquet")
    assert "1 of its 2 items is not in the report, 0 of the report's 1 item (" in str(caught.value)
    assert ") are not in it." in str(caught.value)


@pytest.mark.slow
def test_the_f1_comes_with_its_95_percent_interval(report: Path) -> None:
    out = strict_json(judge(report, "pairs.tsv", "--json").stdout)
    lo, hi = out["f1_ci95"]
    assert out["f1"] is not None and lo <= out["f1"] <= hi and lo < hi
    text = judge(report, "pairs.tsv").stdout
    assert f"[{lo:.3f}, {hi:.3f}] 95%" in text, text


@pytest.mark.slow
def test_a_report_run_with_judge_pairs_shows_the_same_figures_in_its_page(report: Path) -> None:
    args = [
        "dedup",
        "--corpus",
        "corpus.parquet",
        "--out",
        "judged",
        "--model",
        FAST_MODEL,
        "--convert",
        "none",
    ]
    args += ["--threshold", "0.8", "--no-cache", "--no-progress", "--judge-pairs", "pairs.tsv"]
    proc = nlsim(*args, cwd=report)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = json.loads((report / "judged" / "run.json").read_text())["judge"]
    out = strict_json(
        nlsim("judge", "--report", "judged", "--pairs", "pairs.tsv", "--json", cwd=report).stdout
    )
    for name in ("precision", "recall", "f1", "f1_ci95", "judged_pairs", "same_story_pairs", "corpus"):
        assert shown[name] == out[name], name
    assert shown["purity_by_size"] == out["purity_by_size"]
    assert [b["band"] for b in out["purity_by_size"]] == ["2", "3-4", "5-9", "10+", "3+", "5+"]
    assert shown["corpus"] == str(report / "corpus.parquet")  # one name for the corpus, from any folder
    page = (report / "judged" / "index.html").read_text()
    assert "Judged by the editors' pairs" in page and f"{out['f1']:.3f}" in page
    assert "id='purity'" in page and "items, " in page
    plain = json.loads((report / "rep" / "run.json").read_text())
    assert "judge" not in plain  # not asked: run.json as before


def test_integer_item_ids_with_a_gap_still_name_their_items(tmp_path: Path) -> None:
    """A Parquet pair file whose integer ids have a gap: the other pairs still match ids 101, 102, 103."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {
        "pair_id": ["p1", "p2", "p3"],
        "split": ["validation"] * 3,
        "id_a": pa.array([101, None, 102], pa.int64()),
        "id_b": pa.array([102, 103, 103], pa.int64()),
        "text_a": ["Floods", "Storm", "Storm"],
        "text_b": ["Storm", "Quake", "Quake"],
        "score": [1.0, 0.75, 0.75],  # p2 and p3 are one pair (by their texts): one score
    }
    pq.write_table(pa.table(columns), tmp_path / "pairs.parquet")
    scored = scored_pairs(tmp_path / "pairs.parquet", "validation")
    corpus = pd.DataFrame({"id": ["101", "102", "103"], "title": ["Floods", "Storm", "Quake"]})
    match = match_corpus(scored, corpus.assign(text=corpus["title"]), [1, 2, 3])
    assert match.judged["pair_id"].tolist() == ["p1", "p3"]
    assert (match.not_in_corpus, match.mismatched) == (1, 0)


def test_float_item_ids_are_refused_by_row(tmp_path: Path) -> None:
    """Ids written as floats (101.0) would name no item of a corpus, whose ids are text or integers."""
    pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "split": ["validation"] * 2,
            "id_a": [101.0, 102.0],
            "id_b": [102.0, float("nan")],
            "text_a": ["Floods", "Storm"],
            "text_b": ["Storm", "Quake"],
            "score": [1.0, 0.5],
        }
    ).to_parquet(tmp_path / "pairs.parquet")
    with pytest.raises(InputError, match=r"row 1, field 'id_a': item id 101\.0 is a float"):
        scored_pairs(tmp_path / "pairs.parquet", "validation")


@pytest.mark.slow
def test_a_report_is_judged_from_any_folder(report: Path, tmp_path: Path) -> None:
    """The report was made with a relative ``--corpus``: its run.json names the file so that ``nlsim
    judge`` finds it from another folder too."""
    assert Path(json.loads((report / "rep" / "run.json").read_text())["corpus"]).is_absolute()
    args = ["judge", "--report", str(report / "rep"), "--pairs", str(report / "pairs.tsv"), "--json"]
    proc = nlsim(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    here, there = strict_json(proc.stdout), strict_json(judge(report, "pairs.tsv", "--json").stdout)
    assert {k: v for k, v in here.items() if k not in ("pairs", "report")} == {
        k: v for k, v in there.items() if k not in ("pairs", "report")
    }
    assert here["judged_pairs"] == 80


def test_an_item_paired_with_itself_is_refused_by_row(report: Path) -> None:
    table = pd.read_csv(report / "pairs.tsv", sep="\t", dtype=str, keep_default_na=False)
    row = int(table.index[table["split"] == "validation"][3])
    table.loc[row, "id_b"] = table.loc[row, "id_a"]
    table.to_csv(report / "self.tsv", sep="\t", index=False)
    message = refused(judge(report, "self.tsv"), 1, "self.tsv", "paired with itself", command="judge")
    assert f"row {row + 1}, field 'id_b'" in message


def test_a_pair_scored_in_the_other_chinese_script_still_names_its_items(tmp_path: Path) -> None:
    """The corpus in Traditional Chinese, the pairs scored on its Simplified texts (and one the other way
    round): judged. A pair whose text is another one in any script is not."""
    columns = {
        "pair_id": ["p1", "p2", "p3"],
        "split": ["validation"] * 3,
        "id_a": ["n1", "n3", "n1"],
        "id_b": ["n2", "n4", "n3"],
        "text_a": [
            "台风凯米今晚登陆 全台停班停课",
            "台積電第二季營收創新高",
            "台风凯米明晚登陆 全台停班停课",
        ],
        "text_b": ["凯米台风今晚登陆", "台积电第二季营收再创新高", "台积电第二季营收创新高"],
        "score": [1.0, 1.0, 0.0],
    }
    pd.DataFrame(columns).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    scored = scored_pairs(tmp_path / "pairs.tsv", "validation")
    titles = [
        "颱風凱米今晚登陸 全台停班停課",
        "凱米颱風今晚登陸",
        "台積電第二季營收創新高",
        "台積電第二季營收再創新高",
    ]
    corpus = pd.DataFrame({"id": ["n1", "n2", "n3", "n4"], "title": titles})
    match = match_corpus(scored, corpus.assign(text=corpus["title"]), [1, 2, 3])
    assert match.judged["pair_id"].tolist() == ["p1", "p2"]
    assert (match.not_in_corpus, match.mismatched) == (0, 1)
    assert match.first_mismatch is not None and match.first_mismatch[:3] == (3, "text_a", "n1")


def test_ids_with_surrounding_spaces_are_judged_in_their_clusters(tmp_path: Path) -> None:
    """A pair file whose ids carry spaces (" a1 ", as a spreadsheet exports them) names the items a1, a2:
    its pairs are judged inside the report's clusters, as the same ids without the spaces are, and a pair
    given in both orders counts once."""
    texts = {"a1": "Floods in the north", "a2": "Northern floods", "b1": "Storm", "b2": "Quake"}
    rows = [("p1", " a1 ", "a2", 1.0), ("p2", "b1", " b2", 0.0), ("p3", "a2 ", " a1", 1.0)]
    pd.DataFrame(
        {
            "pair_id": [r[0] for r in rows],
            "split": "validation",
            "id_a": [r[1] for r in rows],
            "id_b": [r[2] for r in rows],
            "text_a": [texts[r[1].strip()] for r in rows],
            "text_b": [texts[r[2].strip()] for r in rows],
            "score": [r[3] for r in rows],
        }
    ).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    corpus = pd.DataFrame({"id": list(texts), "title": list(texts.values())})
    clusters = pd.DataFrame({"cluster_id": ["c-a1", "c-b1"], "member_ids": [["a1", "a2"], ["b1", "b2"]]})
    reported = pd.DataFrame({"id_a": ["a1", "b1"], "id_b": ["a2", "b2"]})
    j = judge_items(
        clusters,
        reported,
        scored_pairs(tmp_path / "pairs.tsv", "validation"),
        corpus.assign(text=corpus["title"]),
        pairs=tmp_path / "pairs.tsv",
        split="validation",
        corpus="corpus.parquet",
    )
    assert (j.judged_pairs, j.same_story_pairs, j.grouped_judged_pairs) == (2, 1, 2)
    assert (j.precision, j.recall, j.unjudged_pairs) == (0.5, 1.0, 0)


QUARANTINE_TEXTS = {
    "a1": "Typhoon Kaemi makes landfall in Taiwan tonight, schools closed",
    "a2": "Typhoon Kaemi makes landfall in Taiwan tonight; schools are closed",
    "b1": "TSMC second quarter revenue hits a record high",
    "c1": "Local bakery wins national bread award",
}


def judged_after_quarantine(tmp_path: Path, corpus: pd.DataFrame, bad_rows: int) -> None:
    """Write ``corpus`` and three validation pairs of :data:`QUARANTINE_TEXTS`, run ``nlsim dedup
    --quarantine`` (which sets ``bad_rows`` rows aside), then check that ``nlsim judge`` judges every pair
    of the report, saying how many bad rows it left out."""
    texts = QUARANTINE_TEXTS
    corpus.to_csv(tmp_path / "corpus.csv", index=False)
    rows = [("a1", "a2", 1.0), ("a1", "b1", 0.0), ("b1", "c1", 0.25)]
    pd.DataFrame(
        {
            "split": "validation",
            "id_a": [a for a, _, _ in rows],
            "id_b": [b for _, b, _ in rows],
            "text_a": [texts[a] for a, _, _ in rows],
            "text_b": [texts[b] for _, b, _ in rows],
            "score": [s for _, _, s in rows],
        }
    ).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    args = ["dedup", "--corpus", "corpus.csv", "--out", "rep", "--model", FAST_MODEL, "--convert", "none"]
    args += ["--threshold", "0.9", "--quarantine", "bad.csv", "--no-cache", "--no-progress"]
    proc = nlsim(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((tmp_path / "rep" / "run.json").read_text())["quarantined"] == bad_rows
    proc = judge(tmp_path, "pairs.tsv", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = strict_json(proc.stdout)
    assert (out["judged_pairs"], out["pairs_not_in_corpus"], out["recall"]) == (3, 0, 1.0), out
    assert f"{bad_rows} bad row(s) left out" in proc.stderr


def test_a_report_written_with_a_quarantine_is_judged_without_its_bad_rows(tmp_path: Path) -> None:
    """``nlsim dedup --quarantine`` set a bad row of the corpus aside (an empty title, an id twice): the
    report holds the other items, and ``nlsim judge`` reads the corpus as that run did, bad rows left out,
    rather than refusing the report's own corpus on the row the run quarantined."""
    texts = QUARANTINE_TEXTS
    corpus = pd.DataFrame({"id": [*texts, "z1", "a1"], "title": [*texts.values(), "   ", "A repeated id"]})
    judged_after_quarantine(tmp_path, corpus, bad_rows=2)


def test_a_row_the_run_quarantined_as_dated_in_the_future_is_left_out_again(tmp_path: Path) -> None:
    """A row dated after the run's clock (a typo: 2099 for 2026) is a bad row the run quarantined; the judge
    reads the corpus on that run's clock too, so the row is left out again rather than read as an item the
    report never saw (which refused the report's own corpus as another one)."""
    texts = QUARANTINE_TEXTS
    when = ["2026-12-01T08:00:00Z"] * len(texts) + ["2099-12-01T08:00:00Z"]
    corpus = pd.DataFrame(
        {"id": [*texts, "z1"], "title": [*texts.values(), "Scheduled"], "published_at": when}
    )
    judged_after_quarantine(tmp_path, corpus, bad_rows=1)


def test_a_daily_runs_reports_folder_is_refused_with_the_report_to_pass(tmp_path: Path) -> None:
    """``--report`` the folder a daily run was given as ``--out`` (its reports are in runs/ and latest/):
    refused by name, and the message says which folder to pass; that one is judged."""
    titles = ["Floods in the north", "Northern floods", "Storm hits the coast", "Markets fall"]
    ids = ["a1", "a2", "b1", "c1"]
    pd.DataFrame({"id": ids, "title": titles, "published_at": "2026-12-01T08:00:00Z"}).to_csv(
        tmp_path / "day-2026-12-01.csv", index=False
    )
    pd.DataFrame(
        {
            "split": "validation",
            "id_a": ["a1", "a1"],
            "id_b": ["a2", "c1"],
            "text_a": [titles[0], titles[0]],
            "text_b": [titles[1], titles[3]],
            "score": [1.0, 0.0],
        }
    ).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    args = ["dedup", "--corpus", "day-{date}.csv", "--date", "2026-12-01", "--state", "st", "--out", "daily"]
    args += ["--model", FAST_MODEL, "--convert", "none", "--threshold", "0.8", "--no-cache", "--no-progress"]
    proc = nlsim(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    args = ["judge", "--pairs", "pairs.tsv", "--report"]
    message = refused(nlsim(*args, "daily", cwd=tmp_path), 2, "--report daily", command="judge")
    assert "pass --report daily/latest (the newest)" in message
    proc = nlsim(*args, "daily/latest", "--state", "st", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert strict_json(proc.stdout)["judged_pairs"] == 2


def test_a_daily_runs_report_is_judged_on_the_window_its_run_judged(tmp_path: Path) -> None:
    """Two days of a daily run, scored pairs across the days: ``nlsim judge --state`` on the latest report
    gives the figures the run recorded of itself (its window: the first day's items with the second's);
    without the state the report is refused, saying why and what to pass, as is a state moved on."""
    days = {
        "2026-12-01": [("a1", "Floods in the north force thousands to flee"), ("b1", "Storm hits the coast")],
        "2026-12-02": [
            ("a2", "Floods in the north force thousands to flee their homes"),
            ("b2", "Storm hits the coast overnight"),
            ("c1", "Markets fall on rate fears"),
        ],
    }
    titles = {i: t for rows in days.values() for i, t in rows}
    for day, rows in days.items():
        pd.DataFrame(
            {"id": [i for i, _ in rows], "title": [t for _, t in rows], "published_at": f"{day}T08:00:00Z"}
        ).to_csv(tmp_path / f"day-{day}.csv", index=False)
    scored = [
        ("a1", "a2", 1.0),
        ("b1", "b2", 0.875),
        ("a1", "b2", 0.0),
        ("b1", "c1", 0.0),
        ("a2", "c1", 0.25),
    ]
    pd.DataFrame(
        {
            "split": "validation",
            "id_a": [a for a, _, _ in scored],
            "id_b": [b for _, b, _ in scored],
            "text_a": [titles[a] for a, _, _ in scored],
            "text_b": [titles[b] for _, b, _ in scored],
            "score": [s for *_, s in scored],
        }
    ).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    args = ["dedup", "--corpus", "day-{date}.csv", "--state", "st", "--out", "daily", "--judge-pairs"]
    args += ["pairs.tsv", "--model", FAST_MODEL, "--convert", "none", "--threshold", "0.8", "--no-cache"]
    for day in days:
        proc = nlsim(*args, "--no-progress", "--date", day, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
    recorded = json.loads((tmp_path / "daily" / "latest" / "run.json").read_text())["judge"]
    assert recorded["judged_pairs"] == 5 and recorded["grouped_same_story_pairs"] > 0  # pairs across the days

    judge = ["judge", "--pairs", "pairs.tsv", "--report", "daily/latest"]
    message = refused(nlsim(*judge, cwd=tmp_path), 2, "daily/latest", "day-2026-12-02.csv", command="judge")
    assert "a daily run's report" in message and "Pass --state STATE" in message
    proc = nlsim(*judge, "--state", "st", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert strict_json(proc.stdout) == {**recorded, "report": "daily/latest"}

    # the first day's report: its state now holds the second day's window, which it did not judge
    first = next(
        p
        for p in (tmp_path / "daily" / "runs").iterdir()
        if p.resolve() != (tmp_path / "daily" / "latest").resolve()
    )
    message = refused(
        nlsim(*judge[:-1], str(first), "--state", "st", cwd=tmp_path), 2, "--state st", command="judge"
    )
    assert "holds the window of run" in message


def test_rows_that_repeat_a_pair_are_said_when_the_counts_would_not_add_up(tmp_path: Path) -> None:
    """Four scored rows, two of them one pair (in either order, one score): three pairs judged. The words
    say where the fourth row went, as they do for the pairs not judged."""
    texts = {"a1": "Floods in the north", "a2": "Northern floods", "b1": "Storm", "b2": "Quake"}
    rows = [("a1", "a2", 1.0), ("a2", "a1", 1.0), ("b1", "b2", 0.0), ("a1", "b1", 0.0)]
    pd.DataFrame(
        {
            "split": "validation",
            "id_a": [r[0] for r in rows],
            "id_b": [r[1] for r in rows],
            "text_a": [texts[r[0]] for r in rows],
            "text_b": [texts[r[1]] for r in rows],
            "score": [r[2] for r in rows],
        }
    ).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    corpus = pd.DataFrame({"id": list(texts), "title": list(texts.values())})
    j = judge_items(
        pd.DataFrame({"cluster_id": ["c-a1"], "member_ids": [["a1", "a2"]]}),
        pd.DataFrame({"id_a": ["a1"], "id_b": ["a2"]}),
        scored_pairs(tmp_path / "pairs.tsv", "validation"),
        corpus.assign(text=corpus["title"]),
        pairs=tmp_path / "pairs.tsv",
        split="validation",
        corpus="corpus.parquet",
    )
    assert (j.scored_pairs, j.judged_pairs, j.mismatched_pairs, j.pairs_not_in_corpus) == (4, 3, 0, 0)
    assert "1 of the 4 scored validation rows repeat a pair, counted once" in describe(j)


def test_the_f1_interval_leaves_out_the_resamples_where_the_f1_is_undefined_and_says_so() -> None:
    """One of 20 judged pairs grouped (3 same story): F1 0.5. A third of the resamples group none of the
    pairs they draw, an F1 the judgement calls undefined, never 0; counted as 0 they gave the interval
    [0.000, 1.000] without a word. They are left out, counted in ``f1_ci95_left_out`` and said."""
    ids = [(f"a{i}", f"b{i}") for i in range(20)]
    judged = pd.DataFrame(
        {"id_a": [a for a, _ in ids], "id_b": [b for _, b in ids], "score": [1.0] * 3 + [0.0] * 17}
    )
    clusters = pd.DataFrame({"cluster_id": ["c-a0"], "member_ids": [["a0", "b0"]]})
    figures = judge_tables(clusters, pd.DataFrame({"id_a": ["a0"], "id_b": ["b0"]}), judged)
    assert figures["f1"] == 0.5
    lo, hi = figures["f1_ci95"]
    assert 0.0 < lo <= 0.5 <= hi and 300 < figures["f1_ci95_left_out"] < 400
    figures.pop("pairs_only")
    text = describe(Judgement(pairs="p.tsv", split="validation", **figures))
    defined = 1000 - figures["f1_ci95_left_out"]
    assert f"[{lo:.3f}, {hi:.3f}] 95% (over the {defined} of 1,000 resamples whose F1 is defined" in text
    from nlsim.report.prose import _judgement

    page = _judgement(Judgement(pairs="p.tsv", split="validation", **figures))
    assert f"over the {defined} of 1,000 resamples whose F1 is defined)" in page


def test_a_pair_file_whose_ids_lost_their_leading_zeros_is_refused_saying_so(tmp_path: Path) -> None:
    """A pair file saved from a spreadsheet holds 1 and 3 for the corpus's ids 001 and 003 (it reads an id
    of digits as a number, quotes or not): refused as naming no item of the corpus, without a word of why.
    The refusal now names the lost leading zeros."""
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        "pair_id,split,id_a,id_b,text_a,text_b,score\np1,validation,1,2,Floods,Floods again,1\n"
        "p2,validation,3,4,Storm,Quake,0\n",
        encoding="utf-8",
    )
    corpus = pd.DataFrame(
        {"id": ["001", "002", "003", "004"], "title": ["Floods", "Floods again", "Storm", "Quake"]}
    )
    empty = pd.DataFrame({"cluster_id": [], "member_ids": []})
    with pytest.raises(InputError, match=r"'1' is the corpus's '001' without its leading zeros"):
        judge_items(
            empty,
            pd.DataFrame({"id_a": [], "id_b": []}),
            scored_pairs(pairs, "validation"),
            corpus.assign(text=corpus["title"]),
            pairs=pairs,
            split="validation",
            corpus="news.csv",
        )


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("missing", "does not exist"),
        ("file", "is a file, not a report folder"),
        ("empty", "not a report folder"),
    ],
)
def test_a_report_that_does_not_exist_is_said_not_to_exist(tmp_path: Path, kind: str, said: str) -> None:
    """A mistyped ``--report`` is named as missing (or as a file), not as a folder that is no report."""
    report = tmp_path / "rep"
    if kind == "file":
        report.write_text("x", encoding="utf-8")
    elif kind == "empty":
        report.mkdir()
    with pytest.raises(ConfigError, match=f"^--report {re.escape(str(report))}: {said}") as info:
        judge_report(report, tmp_path / "pairs.tsv")
    assert ("does not exist" in str(info.value)) == (kind == "missing")


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("missing", "does not exist"),
        ("file", "is a file, not a state folder"),
        ("empty", "not a state folder"),
    ],
)
def test_a_state_that_does_not_exist_is_said_not_to_exist(tmp_path: Path, kind: str, said: str) -> None:
    """``nlsim judge --state`` on a mistyped folder said "not a state folder with a committed run (no
    MANIFEST.json)", as if it were there: it is named as missing (or as a file)."""
    from nlsim.dedup.state import run_window

    state = tmp_path / "st"
    if kind == "file":
        state.write_text("x", encoding="utf-8")
    elif kind == "empty":
        state.mkdir()
    with pytest.raises(ConfigError, match=f"^--state {re.escape(str(state))}: {said}"):
        run_window(state)
    assert state.exists() == (kind != "missing")  # nothing made


def test_the_cluster_f1_counts_what_the_rubric_and_the_corpus_say() -> None:
    """One cluster {a, b, c}. A pair scored exactly at the same-story level (0.875) is the same story; a pair
    scored twice is judged by its last row; a pair naming an item outside the corpus is not judged; and a
    report whose grouped pairs are all other stories has an F1 of 0, not an undefined one."""
    clusters = pd.DataFrame({"cluster_id": ["c-a"], "member_ids": [["a", "b", "c"]]})
    reported = pd.DataFrame({"id_a": ["a"], "id_b": ["b"]})
    judged = pd.DataFrame(
        {
            "id_a": ["a", "b", "c", "a", "d"],
            "id_b": ["b", "c", "b", "z", "e"],
            "score": [0.875, 1.0, 0.0, 1.0, 1.0],  # b-c scored 1.0, then (as c-b) 0.0
        }
    )
    j = judge_tables(clusters, reported, judged, items={"a", "b", "c", "d", "e"})
    assert (j["judged_pairs"], j["same_story_pairs"], j["grouped_judged_pairs"]) == (3, 2, 2)
    assert (j["precision"], j["recall"], j["f1"]) == (0.5, 0.5, 0.5)
    apart = judge_tables(clusters, reported, judged.iloc[[2, 4]], items={"a", "b", "c", "d", "e"})
    assert (apart["precision"], apart["recall"], apart["f1"]) == (0.0, 0.0, 0.0)


def test_clusters_whose_member_ids_are_numbers_meet_the_judged_pairs() -> None:
    """A clusters table read back with member ids as numbers (1, 2) names the items the pairs call "1" and
    "2": their pair is grouped."""
    clusters = pd.DataFrame({"cluster_id": ["c-1"], "member_ids": [[1, 2]]})
    judged = pd.DataFrame({"id_a": ["1"], "id_b": ["2"], "score": [1.0]})
    j = judge_tables(clusters, pd.DataFrame({"id_a": ["1"], "id_b": ["2"]}), judged)
    assert (j["grouped_judged_pairs"], j["precision"], j["recall"]) == (1, 1.0, 1.0)


def test_the_reported_pairs_figures_count_pairs_in_either_order_at_the_same_story_level() -> None:
    """The report's own pairs judged alone (``pairs_only``): an edge reported as b-a is the judged pair
    a-b, a pair scored exactly 0.875 is the same story, and the recall is over every same-story pair
    judged (two here: a-b and d-e), not over the reported ones."""
    clusters = pd.DataFrame({"cluster_id": ["c-a"], "member_ids": [["a", "b", "c"]]})
    reported = pd.DataFrame({"id_a": ["b", "c", "a"], "id_b": ["a", "b", "c"]})
    judged = pd.DataFrame(
        {"id_a": ["a", "b", "a", "d"], "id_b": ["b", "c", "c", "e"], "score": [0.875, 0.0, 0.5, 1.0]}
    )
    j = judge_tables(clusters, reported, judged)
    assert (j["reported_pairs"], j["unjudged_pairs"]) == (3, 0)
    assert j["pairs_only"] == {"precision": 0.3333, "recall": 0.5, "f1": 0.4, "judged": 3}


def test_the_topic_coverage_counts_a_pair_scored_exactly_at_the_topic_level() -> None:
    from nlsim.evaluation.judge import topic_figures

    f = topic_figures([["a", "b"]], {("a", "b"): 0.75, ("c", "d"): 0.75})
    assert (f.judged, f.topical, f.precision, f.coverage) == (1, 1, 1.0, 0.5)


def _pair_file(path: Path, split: list[str], id_a: list[str], id_b: list[str]) -> Path:
    n = len(split)
    pd.DataFrame(
        {
            "split": split,
            "id_a": id_a,
            "id_b": id_b,
            "text_a": [f"Text a{i}" for i in range(n)],
            "text_b": [f"Text b{i}" for i in range(n)],
            "score": [1.0] * n,
        }
    ).to_csv(path, sep="\t", index=False)
    return path


def test_rows_without_a_split_are_warned_of_when_a_split_is_judged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pairs = _pair_file(
        tmp_path / "pairs.tsv", ["validation", "", "validation"], ["a", "c", "e"], ["b", "d", "f"]
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        scored = scored_pairs(pairs, "validation")
    assert list(scored["id_a"]) == ["a", "e"]
    assert "1 row(s) name no split (row 2) and are left out of the validation pairs" in caplog.text


def test_a_row_without_either_id_is_not_an_item_paired_with_itself(tmp_path: Path) -> None:
    """Two empty ids name no item (the pair is counted as not in the corpus), not the same item twice."""
    pairs = _pair_file(tmp_path / "pairs.tsv", ["validation"] * 2, ["a", ""], ["b", ""])
    assert len(scored_pairs(pairs, "validation")) == 2
