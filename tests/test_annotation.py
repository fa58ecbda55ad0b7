"""The editors' loop: draw new pairs (never annotated ones, near the threshold first), merge a filled file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.annotation import draw_candidates, merge_annotations, select_candidates
from nlsim.errors import InputError
from nlsim.io.pairs import load_pairs

TITLES = [
    "股市今天大漲",
    "股市今日大漲三成",
    "股市明天大跌",
    "足球聯賽開幕",
    "足球聯賽閉幕",
    "籃球比賽結果",
    "北京房價上漲",
    "上海房價下跌",
    "公務員考試報名",
    "公務員考試成績",
    "新手機發佈",
    "手機價格下調",
]


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.tsv"
    pd.DataFrame({"id": [f"n{i:02d}" for i in range(len(TITLES))], "title": TITLES}).to_csv(
        corpus, sep="\t", index=False
    )
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "split": ["train", "test"],
            "id_a": ["n00", "n04"],
            "id_b": ["n01", "n03"],
            "text_a": [TITLES[0], TITLES[4]],
            "text_b": [TITLES[1], TITLES[3]],
            "score": ["1.0", "0.75"],
            "annotations": ["1.0", "0.75"],
            "stratum": ["x", "y"],
        }
    ).to_csv(pairs, sep="\t", index=False)
    return corpus, pairs


def test_draw_never_repeats_annotated_pairs(files: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, pairs = files
    out = tmp_path / "todo.csv"
    res = draw_candidates(
        corpus,
        pairs,
        out,
        n=12,
        scorer="tfidf-char2",
        conversion="none",
        threshold=0.3,
        k=5,
        log=lambda _: None,
    )
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert res.n == len(todo) == 12
    keys = {tuple(sorted(x)) for x in zip(todo["id_a"], todo["id_b"], strict=True)}
    assert ("n00", "n01") not in keys and ("n03", "n04") not in keys
    assert len(keys) == len(todo)
    assert (todo["score"] == "").all()
    sims = todo["similarity"].astype(float).to_numpy()
    near = todo["stratum"] == "near-threshold"
    assert near.iloc[: near.sum()].all()  # near-threshold pairs come first
    assert np.abs(sims[near] - 0.3).max() <= np.abs(sims[~near] - 0.3).max()


def test_select_candidates_stratifies() -> None:
    pool = pd.DataFrame({"a": range(100), "b": range(1, 101), "similarity": np.linspace(0, 0.99, 100)})
    got = select_candidates(pool, 20, 0.5, strata=5, near_fraction=0.5)
    near = got[got["stratum"] == "near-threshold"]
    assert len(near) == 10 and (near["similarity"] - 0.5).abs().max() < 0.06
    assert got[got["stratum"] != "near-threshold"]["stratum"].value_counts().tolist() == [2] * 5


def test_merge_adds_exactly_the_filled_pairs(files: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, pairs = files
    out = tmp_path / "todo.csv"
    draw_candidates(
        corpus, pairs, out, n=4, scorer="tfidf-char2", conversion="none", threshold=0.3, log=lambda _: None
    )
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    todo["score"] = ["0", "0.25", "0.75", "1"]
    todo.to_csv(out, index=False)
    before = pairs.read_text(encoding="utf-8")
    res = merge_annotations(out, pairs, log=lambda _: None)
    merged = load_pairs(pairs)
    assert res.added == 4 and len(merged) == 6
    assert pairs.read_text(encoding="utf-8").startswith(before.rstrip("\n"))  # old rows untouched
    new = merged.iloc[2:]
    assert new["pair_id"].tolist() == todo["pair_id"].tolist()
    assert new["score"].tolist() == [0.0, 0.25, 0.75, 1.0]
    assert (new["split"] == "train").all()
    assert new["stratum"].str.startswith("editor-loop:").all()
    with pytest.raises(InputError, match="already annotated"):
        merge_annotations(out, pairs, log=lambda _: None)


def _filled(tmp_path: Path, scores: list[str], **extra: list[str]) -> Path:
    n = len(scores)
    frame = pd.DataFrame(
        {
            "pair_id": [f"e{i}" for i in range(n)],
            "id_a": [f"n0{i}" for i in range(n)],
            "id_b": [f"n1{i}" for i in range(n)],
            "text_a": [f"甲{i}" for i in range(n)],
            "text_b": [f"乙{i}" for i in range(n)],
            "score": scores,
        }
    )
    for k, v in extra.items():
        frame[k] = v
    path = tmp_path / "filled.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("scores", "extra", "row", "field", "reason"),
    [
        (["0.5", "0.6"], {}, 2, "score", "not one of the rubric's levels"),
        (["0.5", "yes"], {}, 2, "score", "not a number"),
        (["0.5", ""], {}, 2, "score", "not scored"),
        (["2"], {}, 1, "score", "not one of the rubric's levels"),
        (["0.5", "1"], {"text_b": ["乙", ""]}, 2, "text_b", "empty text"),
        (["0.5", "1"], {"pair_id": ["e0", "e0"]}, 2, "pair_id", "duplicate pair id"),
    ],
)
def test_bad_filled_files_are_refused(
    files: tuple[Path, Path],
    tmp_path: Path,
    scores: list[str],
    extra: dict,
    row: int,
    field: str,
    reason: str,
) -> None:
    _, pairs = files
    before = pairs.read_bytes()
    path = _filled(tmp_path, scores, **extra)
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    assert (err.value.row, err.value.field) == (row, field)
    assert reason in err.value.reason
    assert pairs.read_bytes() == before


def test_blank_rows_skipped_when_asked(files: tuple[Path, Path], tmp_path: Path) -> None:
    _, pairs = files
    res = merge_annotations(
        _filled(tmp_path, ["0.5", "", "1"]), pairs, split="validation", skip_blank=True, log=lambda _: None
    )
    assert (res.added, res.skipped_blank) == (2, 1)
    assert load_pairs(pairs)["split"].tolist()[-2:] == ["validation", "validation"]
