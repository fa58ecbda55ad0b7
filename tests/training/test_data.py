"""Tests of nlsim.training.data: the training subset drawn from a split, by seed, nested by size."""

from __future__ import annotations

import pandas as pd
import pytest

from nlsim.training.config import FinetuneConfig
from nlsim.training.data import select_train_subset, split_pairs


def _pairs(n_train: int) -> pd.DataFrame:
    splits = ["train"] * n_train + ["validation"] * 4 + ["test"] * 3
    return pd.DataFrame({"pair_id": [f"p{i}" for i in range(len(splits))], "split": splits})


def test_every_training_pair_is_drawn_shuffled_as_the_seeds_larger_subsets_are() -> None:
    """Without a size the whole split is drawn, in the seed's order: a subset of any size is its first
    rows, as a smaller subset is a larger one's (a curve's largest point trains what a run without a size
    trains, in the same order)."""
    train = pd.DataFrame({"x": range(20)})
    every = select_train_subset(train, None, 3)["x"].tolist()
    assert sorted(every) == list(range(20)) and every != list(range(20))
    for size in (5, 12, 20):
        assert select_train_subset(train, size, 3)["x"].tolist() == every[:size]


def test_the_subset_is_drawn_with_its_own_seed_where_one_is_given() -> None:
    """``subset_seed`` draws the training subset, the run's ``seed`` left for the rest: two runs of one
    subset seed and other seeds train the same pairs, and the subset is the subset seed's draw."""
    pairs = _pairs(30)
    train = pairs[pairs["split"] == "train"].reset_index(drop=True)

    def drawn(seed: int, subset_seed: int | None) -> list[str]:
        cfg = FinetuneConfig.of(train_size=10, seed=seed, subset_seed=subset_seed)
        return split_pairs(pairs, cfg)[0]["pair_id"].tolist()

    assert drawn(1, 7) == drawn(2, 7) == select_train_subset(train, 10, 7)["pair_id"].tolist()
    assert drawn(1, None) == select_train_subset(train, 10, 1)["pair_id"].tolist() != drawn(1, 7)


def _table() -> pd.DataFrame:
    """Six training, four validation and three test pairs, the held-out texts in Traditional characters
    and each pair's text_a the later text (its (min, max) the other way round)."""
    scores = {"train": [0.75, 1, 0, 0.5, 0.25, 1], "validation": [1, 0, 1, 0.25], "test": [1, 0, 0.5]}
    word = {"train": "訓練", "validation": "驗證", "test": "測試"}
    rows = [(split, n, s) for split, given in scores.items() for n, s in enumerate(given)]
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(len(rows))],
            "split": [r[0] for r in rows],
            "text_a": [f"{word[r[0]]} {r[1]} 甲" for r in rows],
            "text_b": [f"{word[r[0]]} {r[1]} 乙" for r in rows],
            "score": [float(r[2]) for r in rows],
        }
    )


def test_the_held_out_texts_are_every_validation_and_test_text_as_written_and_as_read() -> None:
    """Silver pairs avoid the validation and test texts: ``held_out`` holds each of them as the pair file
    writes it and as the model reads it (converted), and ``annotated`` every annotated pair as the model
    reads it, its texts in (min, max) order."""
    from nlsim.evaluation.metrics import convert_texts
    from nlsim.training.data import prepare_pairs

    table = _table()
    cfg = FinetuneConfig.of(conversion="tw2sp", eval_test=True, calibrate_level=None)
    data = prepare_pairs(cfg, table)
    held = table[table["split"] != "train"]
    written = set(held["text_a"]) | set(held["text_b"])
    read = set(convert_texts(sorted(written), "tw2sp"))
    assert read.isdisjoint(written) and data.held_out == written | read
    a, b = convert_texts(table["text_a"].tolist(), "tw2sp"), convert_texts(table["text_b"].tolist(), "tw2sp")
    assert all(y < x for x, y in zip(a, b, strict=True))
    assert data.annotated == {(y, x) for x, y in zip(a, b, strict=True)}


def test_an_overruled_pair_is_counted_in_the_training_subset_whichever_way_round_its_ids_are() -> None:
    """An editor's overrule is kept under the pair's key, its ids in a fixed order: a training pair whose
    file gives the ids the other way round (t1, t0) is counted as overruled all the same."""
    from nlsim.clusters.constraints import pair_key
    from nlsim.training.data import PreparedPairs

    train = pd.DataFrame({"id_a": ["t1", "t2", " t5 "], "id_b": ["t0", "t3", "t4"]})
    empty = train.iloc[0:0]
    keys = frozenset({pair_key("t0", "t1"), pair_key("t4", "t5"), pair_key("t8", "t9")})
    data = PreparedPairs(train, empty, empty, {}, overruled=3, overruled_keys=keys)
    assert data.overruled_in_train() == 2


def test_a_pair_given_in_a_chain_of_rows_is_named_by_the_smallest_of_all_its_ids() -> None:
    """Each row repeats the one before it by one key and brings a new one (the ids of row 1, the texts of
    row 2, the ids of row 3): all four are one pair, kept as row 1 and named by the smallest of the four
    ids, however far down the chain the row that holds it lies."""
    from nlsim.training.data import smallest_ids

    rows = pd.DataFrame(
        {
            "pair_id": ["p5", "p4", "p3", "p1"],
            "id_a": ["i1", "i1", "i3", "i3"],
            "id_b": ["i2", "i2", "i4", "i4"],
            "text_a": ["A", "C", "C", "E"],
            "text_b": ["B", "D", "D", "F"],
            "split": "train",
        }
    )
    assert smallest_ids(rows) == {"p5": "p1"}


def test_a_table_cut_from_one_read_for_training_numbers_its_rows_by_place() -> None:
    """The rows kept for a table read for training (:data:`~nlsim.training.data.ROWS`) travel with a part
    cut from it (pandas copies ``attrs``): they are not that part's rows, which are numbered by their place,
    as a table without them is."""
    from nlsim.training.data import ROWS, file_rows

    read = pd.DataFrame({"pair_id": ["p1", "p2", "p3"]})
    read.attrs[ROWS] = [2, 5, 9]
    assert file_rows(read) == [2, 5, 9]
    part = read.iloc[1:]
    assert part.attrs[ROWS] == [2, 5, 9] and file_rows(part) == [1, 2]


def test_a_table_given_with_a_repeated_row_names_the_rows_after_it_as_they_are() -> None:
    """A table given (not a file) with row 2 repeating row 1, counted once, and its last row (14) the
    training pair of row 5 in Simplified characters in test: the refusal names rows 14 and 5, the rows
    after the one left out numbered as the table has them, not one up."""
    from nlsim.errors import InputError
    from nlsim.training.data import prepare_pairs

    table = _table()
    table = pd.concat([table.iloc[:1], table.iloc[:1].assign(pair_id="again"), table.iloc[1:]])
    table = table.reset_index(drop=True)
    table.loc[len(table) - 1, ["text_a", "text_b"]] = ["训练 3 甲", "訓練 3 乙"]
    cfg = FinetuneConfig.of(conversion="tw2sp", eval_test=True, calibrate_level=None)
    said = r"row 14, field 'text_a': the same pair as row 5 is in split 'train'"
    with pytest.raises(InputError, match=said):
        prepare_pairs(cfg, table)
