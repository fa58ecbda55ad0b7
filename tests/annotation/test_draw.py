"""Drawing new pairs for the editors to score (nlsim.annotation.draw): which pairs of the pool are drawn,
and from which strata."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.annotation import draw
from nlsim.annotation.draw import (
    TFIDF,
    DrawModel,
    check_out,
    drawable,
    editor_rows,
    score_pool,
    select_candidates,
    unannotated_pool,
    without_changed_items,
)
from nlsim.errors import ConfigError, InputError
from nlsim.io import editor_file


def pool_of(similarities: list[float]) -> pd.DataFrame:
    """A candidate pool: pair i is items i and i + 100, its score ``similarities[i]``."""
    n = len(similarities)
    return pd.DataFrame({"a": range(n), "b": range(100, 100 + n), "similarity": similarities})


def test_a_stratum_as_near_the_threshold_as_another_below_it_gives_way_to_the_lower_one() -> None:
    """The pair left over after the even shares goes to the stratum nearest the threshold; two strata as
    near as each other (0.25 below it, 0.25 above) give it to the lower, every draw alike."""
    picked = select_candidates(pool_of([0.5, 0.0, 0.25, 0.75, 1.0]), 2, 0.5, strata=2)
    assert picked["stratum"].tolist() == ["near-threshold", "sim-bin-1"]
    assert picked["similarity"].tolist()[0] == 0.5


def test_the_share_a_small_stratum_cannot_give_goes_to_the_next_nearest_the_threshold() -> None:
    """Eight pairs in strata of 3, 2 and 3; seven asked around 0.62, none near it: 2 a stratum and the
    one left over to the middle stratum, the nearest, which holds only 2. That pair goes to the stratum
    next nearest the threshold (the upper: 0.7 is 0.08 from it), not to the lowest one."""
    sims = [0.0, 0.1, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9]
    picked = select_candidates(pool_of(sims), 7, 0.62, strata=3, near_fraction=0.0)
    counts = picked["stratum"].value_counts().to_dict()
    assert counts == {"sim-bin-1": 2, "sim-bin-2": 2, "sim-bin-3": 3}
    assert np.isin([0.5, 0.6, 0.7, 0.8, 0.9], picked["similarity"]).all()


class _Reranker:
    """A reranker's stand-in: its rerank score is the cosine, and its calibrated threshold 0.7."""

    threshold = 0.7
    calibration = None

    def cross_scores(self, a: list[str], b: list[str], **_: object) -> np.ndarray:
        return np.zeros(len(a))

    def pair_scores(self, cosine: np.ndarray, cross: np.ndarray, a: list[str], b: list[str]) -> np.ndarray:
        return cosine


def test_a_given_threshold_is_drawn_around_even_with_a_reranker_that_has_its_own() -> None:
    model = DrawModel("m", "m", encoder=object(), reranker=_Reranker())  # type: ignore[arg-type]
    texts = [f"t{i}" for i in range(200)]
    _, threshold, source, score = score_pool(pool_of([0.1, 0.5, 0.9]), texts, model, 0.3)
    assert (threshold, source, score) == (0.3, "given", "rerank")
    _, threshold, source, _ = score_pool(pool_of([0.1, 0.5, 0.9]), texts, model, None)
    assert threshold == 0.7 and source == "rerank threshold stored with m"


def test_without_a_threshold_the_pairs_are_drawn_around_the_pools_median_score() -> None:
    """No threshold given and none calibrated: the pool's median, which a few high scores do not move."""
    _, threshold, source, score = score_pool(pool_of([0.0, 0.1, 0.2, 1.0]), [], DrawModel(TFIDF, TFIDF), None)
    assert (threshold, source, score) == (pytest.approx(0.15), "median score of the pool", "tfidf")


def test_the_items_left_out_for_another_text_are_named_in_the_order_of_the_pair_files_rows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scored = pd.DataFrame(
        {"id_a": ["n0", "n1"], "id_b": ["n2", "n3"], "text_a": ["甲", "乙"], "text_b": ["丙", "丁"]}
    )
    items = pd.DataFrame({"id": ["n1", "n2", "n4"], "text": ["乙 edited", "丙 edited", "戊"]})
    with caplog.at_level("WARNING", logger="nlsim"):
        kept = without_changed_items(items, scored, "pairs.tsv", "corpus.csv")
    assert kept["id"].tolist() == ["n4"]
    assert "(row 1 (text_b): n2, row 2 (text_a): n1)" in caplog.text, caplog.text


def test_a_corpus_left_with_one_item_whose_text_is_the_pair_files_is_refused(tmp_path: Path) -> None:
    """Three items, two of them with another text than the pair file's: one item is left to draw from,
    which makes no pair; refused by name (the corpus), not a draw failing inside."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\np1\ttrain\tn0\tn1\t甲\t乙\t1\n", encoding="utf-8"
    )
    items = pd.DataFrame({"id": ["n0", "n1", "n2"], "text": ["甲 edited", "乙 edited", "丙"]})
    with pytest.raises(InputError) as err:
        drawable(items, "corpus.csv", pairs, "none")
    assert err.value.file == "corpus.csv" and "1 item(s) whose text is the pair file's" in err.value.reason
    kept, done = drawable(items.assign(text=["甲", "乙 edited", "丙"]), "corpus.csv", pairs, "none")
    assert kept["id"].tolist() == ["n0", "n2"] and done


def test_an_out_named_in_capitals_is_a_csv_name(tmp_path: Path) -> None:
    check_out(tmp_path / "TODO.CSV")
    with pytest.raises(ConfigError, match="give a name ending in .csv"):
        check_out(tmp_path / "todo.xlsx")


def _drawn(path: Path, **cells: str) -> Path:
    """A drawn editors' file of one pair, its ``cells`` (annotator, notes) as given."""
    row = {c: "" for c in editor_file.COLUMNS} | {"pair_id": "ed-1", "id_a": "n0", "id_b": "n1"} | cells
    pd.DataFrame([row], columns=list(editor_file.COLUMNS)).to_csv(path, index=False)
    return path


def test_a_drawn_file_whose_editors_cells_hold_only_spaces_is_drawn_over(tmp_path: Path) -> None:
    """A notes or annotator cell of white space only is no editor's work begun: draw writes over the file;
    one with a note is refused."""
    check_out(_drawn(tmp_path / "todo.csv", notes=" ", annotator="\u3000"))
    with pytest.raises(ConfigError, match="1 filled cell"):
        check_out(_drawn(tmp_path / "todo.csv", notes="same story"))


def test_the_drawn_rows_give_the_score_to_four_places() -> None:
    items = pd.DataFrame({"id": ["n0", "n1"], "text": ["甲", "乙"]})
    picked = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.123456], "stratum": ["near-threshold"]})
    rows = editor_rows(picked, items, "m", 0.1234567)
    assert rows["similarity"].tolist() == [0.1235] and rows["threshold"].tolist() == [0.123457]
    assert rows["pair_id"].tolist() == [editor_file.pair_id("n0", "n1")]


def test_a_given_threshold_is_drawn_around_even_with_a_calibrated_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calibrated = type("Cal", (), {"threshold": 0.8, "conversion": "tw2sp"})()
    monkeypatch.setattr(draw, "load_calibration", lambda _: calibrated)
    model = DrawModel("m", "m", encoder=object())
    assert score_pool(pool_of([0.1, 0.5]), [], model, 0.3, "tw2sp")[1:] == (0.3, "given", "cosine")
    assert score_pool(pool_of([0.1, 0.5]), [], model, None, "tw2sp")[1:] == (
        0.8,
        "calibration of m",
        "cosine",
    )


def test_more_pairs_asked_than_the_pool_holds_draws_the_pool_half_near_the_threshold() -> None:
    picked = select_candidates(pool_of([0.1, 0.4, 0.6, 0.9]), 10, 0.5, strata=2)
    assert len(picked) == 4
    assert picked["stratum"].tolist() == ["near-threshold", "near-threshold", "sim-bin-1", "sim-bin-2"]


def test_the_pairs_drawn_from_a_stratum_are_listed_in_the_pools_order() -> None:
    picked = select_candidates(pool_of(list(np.linspace(0, 1, 40))), 16, 0.5, strata=2, near_fraction=0.0)
    for _, rows in picked.groupby("stratum"):
        assert rows["a"].is_monotonic_increasing and len(rows) == 8, rows["a"].tolist()


def test_the_items_left_out_are_listed_whole_when_they_are_as_many_as_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    scored = pd.DataFrame({"id_a": ["n0"], "id_b": ["n1"], "text_a": ["甲"], "text_b": ["乙"]})
    items = pd.DataFrame({"id": ["n0", "n1", "n2"], "text": ["甲 edited", "乙 edited", "丙"]})
    with caplog.at_level("WARNING", logger="nlsim"):
        without_changed_items(items, scored, "pairs.tsv", "corpus.csv", shown=2)
    assert "(row 1 (text_a): n0, row 1 (text_b): n1) and are left out" in caplog.text, caplog.text


def test_the_pool_is_said_with_the_pairs_left_out_of_it() -> None:
    """Three items, two of one text: of the three pairs, the pair of the two equal texts is left out, and so
    is the second pair of that text with the third item (the same pair again); the log says so."""
    items = pd.DataFrame({"id": ["n0", "n1", "n2"], "text": ["颱風來了", "颱風來了 ", "股市大漲"]})
    emb = np.eye(3, dtype=np.float32)
    said: list[str] = []
    pool = unannotated_pool(emb, items, set(), k=2, seed=0, log=said.append)
    assert list(zip(pool["a"], pool["b"], strict=True)) == [(0, 2)]
    assert said == [
        "1 candidate pairs not yet annotated (2 already annotated, repeated or of two equal texts)"
    ]


def test_a_corpus_whose_every_pair_is_annotated_is_refused_naming_the_pair_file(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("id\ttitle\nn0\t颱風來了\nn1\t股市大漲\n", encoding="utf-8")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\np1\ttrain\tn0\tn1\t颱風來了\t股市大漲\t0\n",
        encoding="utf-8",
    )
    out = tmp_path / "todo.csv"
    with pytest.raises(InputError) as err:
        draw.draw_candidates(corpus, pairs, out, n=1, scorer=TFIDF, log=lambda _: None)
    assert f"every pair found is already annotated in {pairs} or pairs two equal texts" in err.value.reason
    assert not out.exists()


def test_of_two_pairs_as_near_the_threshold_the_first_in_the_pool_is_drawn() -> None:
    picked = select_candidates(pool_of([0.25, 0.75, 0.0, 1.0]), 2, 0.5, strata=1)
    assert picked["a"].tolist()[0] == 0 and picked["stratum"].tolist()[0] == "near-threshold"


def test_the_pool_holds_each_items_k_nearest_neighbours_and_never_the_item_itself() -> None:
    from nlsim.annotation.draw import candidate_pool

    angles = np.array([0.0, 0.1, 0.3, 0.65, 1.1, 1.7])  # on a circle, no two gaps alike
    emb = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    one = candidate_pool(emb, k=1, n_random=0)
    assert sorted(map(tuple, one[["a", "b"]].to_numpy().tolist())) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    two = candidate_pool(emb, k=2, n_random=0)
    got = sorted(map(tuple, two[["a", "b"]].to_numpy().tolist()))
    assert got == [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (3, 5), (4, 5)]
    assert len(candidate_pool(emb, k=10, n_random=0)) == 15  # every pair of the 6 items, once
