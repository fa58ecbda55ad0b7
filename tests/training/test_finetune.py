"""What fine-tuning hands its caller besides the model: the base model's figures from the caller's own
scores, and the trained model's scores of its validation pairs, as the saved model gives them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from stsb_helpers import small_reranker_config, stsb_sample

from nlsim.encoders import load_encoder
from nlsim.encoders.scoring import known_scores
from nlsim.evaluation.metrics import pair_similarities
from nlsim.io.pairs import count_once
from nlsim.rerank.reranker import load_reranker
from nlsim.training.finetune import finetune


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return stsb_sample(train=32, validation=24, test=16)


@pytest.mark.slow
def test_the_callers_scores_of_the_base_model_stand_for_a_second_pass_when_they_cover_a_split(
    pairs: pd.DataFrame, tmp_path: Path
) -> None:
    held = pairs[pairs["split"].isin(["validation", "test"])]
    made_up = -held["score"].to_numpy()  # no model scores like this: the figures show whose they are
    known = known_scores(held["text_a"], held["text_b"], made_up)
    settings = {"eval_before": True, "reranker": False, "calibrate_level": None}
    given = finetune(small_reranker_config(tmp_path / "a", **settings), pairs=pairs, before=known)
    assert given.metrics["before/validation"]["spearman"] == -100.0
    assert given.metrics["before/test"]["spearman"] == -100.0
    first_test_pair = (held["text_a"].iloc[-1], held["text_b"].iloc[-1])
    partial = {k: v for k, v in known.items() if k != first_test_pair}  # test no longer covered
    mixed = finetune(small_reranker_config(tmp_path / "b", **settings), pairs=pairs, before=partial)
    assert mixed.metrics["before/validation"]["spearman"] == -100.0
    base = load_encoder("paraphrase-MiniLM-L3-v2")
    base.max_length = 48
    test = count_once(pairs[pairs["split"] == "test"])  # a pair in two rows once, as training reads it
    expected = 100 * spearmanr(pair_similarities(base, test), test["score"]).statistic
    assert mixed.metrics["before/test"]["spearman"] == pytest.approx(expected, abs=0.01)


@pytest.mark.slow
def test_the_trained_models_validation_scores_are_what_the_saved_model_gives_them(
    pairs: pd.DataFrame, tmp_path: Path
) -> None:
    out = tmp_path / "model"
    result = finetune(small_reranker_config(out), pairs=pairs)
    own = result.validation_scores
    assert own is not None and own.scorer == "reranker"
    reranker = load_reranker(out)
    assert reranker is not None and reranker.calibration is not None
    assert (own.threshold, own.level) == (reranker.calibration["threshold"], 0.6)
    validation = pairs[pairs["split"] == "validation"]
    saved = pair_similarities(reranker.scorer(load_encoder(str(out))), validation)
    ours = np.array([own.scores[i] for i in validation["pair_id"].astype(str)])
    assert np.allclose(ours, saved, atol=1e-5)
    assert "validation_scores" not in result.as_dict()  # training.json keeps figures, not every score
    cosine_only = finetune(small_reranker_config(tmp_path / "cosine", reranker=False), pairs=pairs)
    assert cosine_only.validation_scores is not None and cosine_only.validation_scores.scorer == "cosine"


@pytest.mark.slow
def test_scoring_the_trained_model_on_validation_and_fitting_its_reranker_embed_no_text_again(
    pairs: pd.DataFrame, tmp_path: Path
) -> None:
    # training's last validation pass embedded validation with the weights it leaves, and training holds
    # the training texts' frozen states: calibration, the after-figures and the reranker's line take those
    encoder = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    real, trained, after = encoder.encode, [False], []

    def spy(texts: list[str], *args: object, **kwargs: object) -> np.ndarray:
        if trained[0]:
            after.extend(texts)
        return real(texts, *args, **kwargs)

    def call(name: str, fn, *args: object, **kwargs: object):  # noqa: ANN001, ANN202 - a stage runner
        out = fn(*args, **kwargs)
        trained[0] = trained[0] or name == "train"
        return out

    encoder.encode = spy  # type: ignore[method-assign]
    config = small_reranker_config(tmp_path / "m", precision_check=False)
    result = finetune(config, pairs=pairs, encoder=encoder, call=call)
    validation = pairs[pairs["split"] == "validation"]
    train, test = pairs[pairs["split"] == "train"], pairs[pairs["split"] == "test"]
    held = set(validation["text_a"]) | set(validation["text_b"])
    assert not set(after) & (held | set(train["text_a"]) | set(train["text_b"]))
    assert set(test["text_a"]) - held <= set(after)  # the test split is embedded: the spy sees the scoring
    fresh = 100 * spearmanr(pair_similarities(encoder, validation), validation["score"]).statistic
    assert result.metrics["after/validation"]["spearman"] == pytest.approx(fresh, abs=0.005)  # 2 decimals


def _overruled_pair_file(tmp_path: Path) -> Path:
    """A pair file with item ids (train, validation, test) and an editor's merge file overruling the
    annotators' 0.75 of the training pair t0/t1 with "not the same story"."""
    scores = {("train", "t"): [0.75, 1, 0, 0.5, 0.25, 1], ("validation", "v"): [1, 0, 1, 0.25]}
    scores[("test", "x")] = [1, 0, 0.5]
    rows = [
        (split, f"{item}{2 * n}", f"{item}{2 * n + 1}", s)
        for (split, item), given in scores.items()
        for n, s in enumerate(given)
    ]
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(
        {
            "pair_id": [f"p{n}" for n in range(len(rows))],
            "split": [r[0] for r in rows],
            "id_a": [r[1] for r in rows],
            "id_b": [r[2] for r in rows],
            "text_a": [f"headline {r[1]}" for r in rows],
            "text_b": [f"headline {r[2]}" for r in rows],
            "score": [r[3] for r in rows],
        }
    ).to_csv(pairs, sep="\t", index=False)
    return pairs


def _overrule(pairs: Path, a: str, b: str, score: str, name: str = "marks.csv") -> None:
    from nlsim.annotation.merge import merge_annotations

    filled = pairs.parent / name
    pd.DataFrame(
        {"id_a": [a], "id_b": [b], "text_a": [f"headline {a}"], "text_b": [f"headline {b}"], "score": [score]}
    ).to_csv(filled, index=False)
    merge_annotations(filled, pairs, overrule=True, log=lambda _: None)


def test_prepare_pairs_reads_an_overruled_training_pair_with_the_editors_score(tmp_path: Path) -> None:
    """The next training reads the editor's newer decision: the overruled training pair comes with the
    editor's score (the pair file keeping the annotators'), the store is one of the data files, and the
    validation and test pairs are as the pair file has them (an overrule there is refused at merge)."""
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    pairs = _overruled_pair_file(tmp_path)
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="none", eval_test=True)
    before = prepare_pairs(cfg)
    assert before.overruled == 0 and list(before.data_files) == [str(pairs)]
    original = pairs.read_bytes()
    _overrule(pairs, "t0", "t1", "0")
    after = prepare_pairs(cfg)
    assert pairs.read_bytes() == original
    score = dict(zip(after.train["pair_id"], after.train["score"], strict=True))
    assert score["p0"] == 0.0 and after.overruled == 1
    assert {k: v for k, v in score.items() if k != "p0"} == {
        k: v for k, v in zip(before.train["pair_id"], before.train["score"], strict=True) if k != "p0"
    }
    assert after.validation["score"].tolist() == before.validation["score"].tolist()
    assert after.test["score"].tolist() == before.test["score"].tolist()
    assert list(after.data_files) == [str(pairs), str(pairs) + ".verdicts.csv"]


def test_the_training_record_counts_the_training_pairs_an_editor_overruled_apart(tmp_path: Path) -> None:
    """``editor_labels`` counted the rows merged into the pair file (``merged``, ``from_page``): an overrule,
    which the verdict store holds and the pair file does not, was in neither, while training read the
    editor's score for it. The record keeps both counts as they were and counts the training pairs read with
    an editor's newer score apart (``overruled``), and the model card says it."""
    from nlsim.report.review import editor_labels_text
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs
    from nlsim.training.finetune import make_result

    pairs = _overruled_pair_file(tmp_path)
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="none", eval_test=True)
    run = {"best": {}, "history": [], "seconds_per_epoch": [], "steps": 0}
    run |= {"trainable_parameters": 0, "total_parameters": 0}
    before = make_result(cfg, prepare_pairs(cfg), run, {}, None, 0.0).editor_labels
    assert before == {"merged": {}, "from_page": {}, "overruled": {}}
    _overrule(pairs, "t0", "t1", "0")
    labels = make_result(cfg, prepare_pairs(cfg), run, {}, None, 0.0).editor_labels
    assert labels == {"merged": {}, "from_page": {}, "overruled": {"train": 1}}
    said = editor_labels_text(labels)
    assert "1 training pair read with an editor’s newer score over the pair file’s (overruled)" in said, said


def test_prepare_pairs_counts_a_pair_pasted_twice_once(tmp_path: Path) -> None:
    """A training and a validation pair each given again in a second row (ids in either order, one score):
    training and the checkpoint's validation read each pair once, as ``nlsim evaluate`` and ``nlsim
    calibrate`` read it, so that its validation figures are theirs."""
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    pairs = _overruled_pair_file(tmp_path)
    table = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    again = table[table["pair_id"].isin(["p1", "p7"])].assign(pair_id=["p1-again", "p7-again"])
    again[["id_a", "id_b", "text_a", "text_b"]] = again[["id_b", "id_a", "text_b", "text_a"]].to_numpy()
    pd.concat([table, again]).to_csv(pairs, sep="\t", index=False)
    data = prepare_pairs(FinetuneConfig.of(pairs=str(pairs), conversion="none", eval_test=True))
    assert (len(data.train), len(data.validation), len(data.test)) == (6, 4, 3)
    assert "p1-again" not in set(data.train["pair_id"]) and "p7-again" not in set(data.validation["pair_id"])
    # the same table given as a table (finetune(cfg, pairs=...)), not a file: counted once too
    given = pd.read_csv(pairs, sep="\t", dtype={"score": float}, keep_default_na=False)
    data = prepare_pairs(FinetuneConfig.of(conversion="none", eval_test=True), given)
    assert (len(data.train), len(data.validation), len(data.test)) == (6, 4, 3)


SCRIPT_PAIRS = [
    ("股市今天大漲", "股市今日大漲三成", "1", "train"),
    ("足球聯賽開幕", "足球聯賽閉幕", "0.25", "train"),
    ("北京房價上漲", "上海房價下跌", "0.25", "train"),
    ("公務員考試報名", "公務員考試成績", "0.5", "train"),
    ("新手機發佈", "手機價格下調", "0", "train"),
    ("籃球比賽結果", "足球聯賽開幕", "0", "validation"),
    ("股市明天大跌", "股市今天大漲", "0.5", "validation"),
    ("颱風來了", "颱風登陸臺灣", "1", "validation"),
    ("颱風來了", "股市明天大跌", "0", "validation"),
    ("北京房价上涨", "公务员考试报名", "0", "test"),
    ("手机价格下调", "新手机发布", "0", "test"),  # row 5's pair in Simplified characters, in either order
    ("股市今日大涨", "股市明天大跌", "0.5", "test"),
]


def test_a_training_pair_given_again_in_the_other_script_in_test_is_refused(tmp_path: Path) -> None:
    """A pair scored in Traditional characters in train and in Simplified ones in test is one pair to the
    model, which reads both converted to one script (``--convert tw2sp``): it was trained on a test pair
    and scored on it, unsaid. It is refused before training, naming the file, both rows and the field; with
    ``--convert none`` the two are two pairs."""
    from nlsim.errors import InputError
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(SCRIPT_PAIRS, columns=["text_a", "text_b", "score", "split"]).to_csv(
        pairs, sep="\t", index=False
    )
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="tw2sp", calibrate_level=0.75)
    with pytest.raises(InputError) as err:
        prepare_pairs(cfg)
    said = str(err.value)
    assert said.startswith(
        f"{pairs}: row 11, field 'text_a': the same pair as row 5 is in split 'train' and in 'test'"
    )
    assert "--convert tw2sp" in said
    given = pd.read_csv(pairs, sep="\t", dtype={"score": float}, keep_default_na=False)
    with pytest.raises(InputError, match="row 11, field 'text_a': the same pair as row 5"):
        prepare_pairs(cfg.with_(pairs=None), given)  # a table given (a learning curve's point) too
    data = prepare_pairs(cfg.with_(conversion="none"))
    assert (len(data.train), len(data.validation), len(data.test)) == (5, 4, 3)
    from nlsim.training.config import LearningCurveConfig
    from nlsim.training.learning_curve import check_curve_splits, load_curve_pairs

    curve = LearningCurveConfig(pairs=str(pairs), out=str(tmp_path / "curve"), sizes=(4,), seeds=(1,))
    with pytest.raises(InputError, match="row 11, field 'text_a': the same pair as row 5"):
        check_curve_splits(load_curve_pairs(pairs, log=lambda _: None), curve)  # before any point trains


def test_a_training_pair_given_again_in_the_other_script_without_a_split_is_refused_as_evaluate_does(
    tmp_path: Path,
) -> None:
    """A training pair given again in Simplified characters in a row that names no split: the pair file's
    check refuses it written alike (a row without a split is a split of its own), and so does ``nlsim
    evaluate --convert tw2sp``, which reads it as the model does, but training's check left the row out and
    trained on the file. Training refuses it as they do, naming the file, both rows and the field; with
    ``--convert none`` the two are two pairs, and the row is left out, said."""
    from nlsim.errors import InputError
    from nlsim.io.pairs import load_pairs
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    rows = [(*row[:3], "" if row[1] == "新手机发布" else row[3]) for row in SCRIPT_PAIRS]
    rows.append(("足球联赛闭幕", "篮球比赛结果", "0.25", "test"))  # a third test pair, for a Spearman
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)
    said = f"{pairs}: row 11, field 'text_a': the same pair as row 5 is in split 'train' and in no split"
    with pytest.raises(InputError) as evaluate:
        load_pairs(pairs, "test", repeats="once", conversion="tw2sp")
    assert str(evaluate.value).startswith(said)
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="tw2sp", calibrate_level=0.75)
    with pytest.raises(InputError) as err:
        prepare_pairs(cfg)
    assert str(err.value) == str(evaluate.value)
    data = prepare_pairs(cfg.with_(conversion="none"))
    assert (len(data.train), len(data.validation), len(data.test)) == (5, 4, 3)


def test_a_pair_given_again_in_the_other_script_in_its_split_is_trained_and_judged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A validation pair given in Traditional characters and again in Simplified ones with the same score
    is one pair to the model (``--convert tw2sp``): training kept both rows, so it weighed double in the
    checkpoint's choice and the figures, where ``nlsim evaluate`` counts it once. The first row is kept,
    the other said; with ``--convert none`` they are two pairs."""
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    rows = [row for row in SCRIPT_PAIRS if row[1] != "新手机发布"]  # no pair in two splits
    rows.append(("颱風登陸台灣", "颱風來了", "1", "validation"))  # row 8's pair, 台 for 臺, in either order
    rows.append(("台风来了", "台风登陆台湾", "1", "validation"))  # and in Simplified characters
    rows.append(("足球联赛闭幕", "篮球比赛结果", "0.25", "test"))  # a third test pair, for a Spearman
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="tw2sp", calibrate_level=0.75)
    with caplog.at_level("WARNING", logger="nlsim"):
        data = prepare_pairs(cfg)
    assert len(data.validation) == 4
    assert data.validation["orig_text_a"].tolist().count("颱風來了") == 2  # rows 8 and 9: two pairs
    assert "row 12 (row 8's pair), row 13 (row 8's pair)" in caplog.text and "--convert tw2sp" in caplog.text
    assert len(prepare_pairs(cfg.with_(conversion="none")).validation) == 6


def test_a_pair_given_again_with_markup_is_trained_and_judged_once_without_a_conversion(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With ``--convert none`` the model still reads ``<b>颱風來了</b>`` as ``颱風來了``
    (:func:`~nlsim.io.cells.model_text`): training kept a validation pair given so and again plainly as two,
    weighing double in the checkpoint's choice, though its check of the splits reads them as one."""
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    rows = [row for row in SCRIPT_PAIRS if row[1] != "新手机发布"]  # no pair in two splits
    rows.append(("<b>颱風來了</b>", "颱風登陸臺灣", "1", "validation"))  # row 8's pair, in bold
    rows.append(("足球联赛闭幕", "篮球比赛结果", "0.25", "test"))  # a third test pair, for a Spearman
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)
    with caplog.at_level("WARNING", logger="nlsim"):
        data = prepare_pairs(FinetuneConfig.of(pairs=str(pairs), conversion="none", calibrate_level=0.75))
    assert len(data.validation) == 4
    assert "row 12 (row 8's pair)" in caplog.text and "(--convert none)" in caplog.text


def test_the_pairs_converted_for_training_are_not_converted_again_to_count_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training converts the pair file's texts once (:func:`~nlsim.training.data.convert_pairs`); counting
    a pair given twice once, as the model reads it, compares those texts, never converting the whole file
    a second time."""
    import nlsim.io.pairs as pairs_module
    from nlsim.training.data import convert_pairs, once_converted

    rows = [row for row in SCRIPT_PAIRS if row[1] != "新手机发布"]
    rows.append(("台风来了", "台风登陆台湾", "1", "validation"))  # row 8's pair in Simplified characters
    table = pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).astype({"score": float})
    every = convert_pairs(table, "tw2sp")

    def again(*_: object) -> None:
        raise AssertionError("the converted texts were converted again")

    monkeypatch.setattr(pairs_module, "model_texts", again)
    once = once_converted(every, list(range(1, len(every) + 1)), "p.tsv", "tw2sp")
    assert len(once) == len(every) - 1 and once["orig_text_a"].tolist() == table["text_a"].tolist()[:-1]


def test_training_says_the_rows_it_leaves_out_for_naming_no_split(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two rows added without their split: ``nlsim finetune``, the chain and the learning curve trained,
    chose the checkpoint and tested without them and said nothing (``nlsim evaluate`` warns); each now
    names them, as evaluation does."""
    from nlsim.chain.config import PipelineConfig
    from nlsim.chain.run import load_inputs
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs
    from nlsim.training.learning_curve import load_curve_pairs

    pairs = _overruled_pair_file(tmp_path)
    table = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    added = pd.DataFrame(
        {"pair_id": ["q1", "q2"], "split": "", "id_a": ["y0", "y2"], "id_b": ["y1", "y3"]}
        | {"text_a": ["headline y0", "headline y2"], "text_b": ["headline y1", "headline y3"]}
        | {"score": ["1", "0"]}
    )
    pd.concat([table.iloc[:3], added, table.iloc[3:]]).to_csv(pairs, sep="\t", index=False)
    cfg = PipelineConfig.of(pairs=str(pairs), corpus=str(tmp_path / "corpus.parquet"), report=False)
    reads = {
        "finetune": lambda: prepare_pairs(FinetuneConfig.of(pairs=str(pairs), conversion="none")),
        "chain": lambda: load_inputs(cfg),
        "learning curve": lambda: load_curve_pairs(pairs, log=lambda _: None),
    }
    for name, read in reads.items():
        caplog.clear()
        with caplog.at_level("WARNING", logger="nlsim"):
            read()
        said = "2 row(s) name no split (row 4, 5) and are left out of the training, validation and test pairs"
        assert f"{pairs}: {said}" in caplog.text, name


def test_the_training_fingerprint_changes_when_an_editor_overrules_a_pair(tmp_path: Path) -> None:
    """The chain's pairs are read as training reads them: an overrule that changes a score is another
    fingerprint (the chain trains again), a store without one is the same."""
    from nlsim.chain.config import PipelineConfig
    from nlsim.chain.run import load_inputs
    from nlsim.io.pairs import annotations_digest

    pairs = _overruled_pair_file(tmp_path)
    cfg = PipelineConfig.of(pairs=str(pairs), corpus=str(tmp_path / "corpus.parquet"), report=False)
    first = annotations_digest(load_inputs(cfg))
    _overrule(pairs, "t4", "t5", "0")  # the annotators gave 0 too: the training data is the same
    assert annotations_digest(load_inputs(cfg)) == first
    _overrule(pairs, "t0", "t1", "0", name="second.csv")
    assert annotations_digest(load_inputs(cfg)) != first


@pytest.mark.slow
def test_a_bf16_training_keeps_its_bf16_vectors_from_every_evaluation_and_report(
    pairs: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test split's texts go to the bi-encoder's training as texts an evaluation reads (their passes
    stay fp32), and the training texts it embedded in bf16 are never kept for a report."""
    import nlsim.encoders.lower_states as lower_states
    import nlsim.training.finetune as finetune_module

    told: dict[str, object] = {}
    training = finetune_module.train_encoder

    def heard(*args: object, **kwargs: object) -> dict[str, object]:
        told["evaluated"] = kwargs.get("evaluated")
        run = training(*args, **kwargs)  # type: ignore[arg-type]
        told["run"] = run
        return run

    kept: list[set[str]] = []
    monkeypatch.setattr(finetune_module, "train_encoder", heard)
    monkeypatch.setattr(lower_states, "keep_vectors", lambda encoder, vectors: kept.append(set(vectors)) or 0)
    monkeypatch.setenv("NLSIM_DEVICE", "cpu")  # the bf16 passes are a CPU's
    settings = {
        "train_precision": "bf16",
        "eval_test": True,
    }  # the reranker's line: the training texts embedded
    finetune(small_reranker_config(tmp_path / "m", **settings), pairs=pairs)
    test = pairs[pairs["split"] == "test"]
    assert told["evaluated"] == {*test["text_a"], *test["text_b"]}
    run = told["run"]
    assert isinstance(run, dict)
    lossy = run["lossy_embeddings"]
    assert lossy and not lossy & {*test["text_a"], *test["text_b"]}
    assert kept and kept[0] and not kept[0] & lossy


def test_validation_pairs_all_on_one_side_of_the_level_are_refused_in_calibrates_words(
    tmp_path: Path,
) -> None:
    """Validation pairs all on one side of the level: ``nlsim finetune`` said '4 of the 4 validation pairs
    reach level 0.75', ``nlsim calibrate`` 'all of the 4 pairs of split 'validation' are at or above level
    0.75'. One check says it for both, each with its way out."""
    from nlsim.errors import InputError
    from nlsim.evaluation.calibration import check_calibratable
    from nlsim.io.pairs import load_pairs
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    rows = [(a, b, "0.75" if split == "validation" else score, split) for a, b, score, split in SCRIPT_PAIRS]
    pairs = tmp_path / "pairs.tsv"
    rows[5] = (*rows[5][:2], "1", "validation")  # 1 and 0.75: two scores, both at or above 0.75
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)
    with pytest.raises(InputError) as trained:
        prepare_pairs(FinetuneConfig.of(pairs=str(pairs), conversion="none", calibrate_level=0.75))
    with pytest.raises(InputError) as calibrated:
        check_calibratable(load_pairs(pairs, "validation"), 0.75, str(pairs), "validation")
    said = f"{pairs}: field 'score': all of the 4 pairs of split 'validation' are at or above level 0.75"
    assert str(trained.value).startswith(said) and str(calibrated.value).startswith(said)
    assert "add pairs, or choose another --level" in str(trained.value)


def test_a_file_without_test_pairs_is_said_to_be_scored_on_validation_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``nlsim finetune`` scores the test split unless ``--no-test``: a file without test pairs trained and
    reported no test row, without a word of why (a split misspelt, the test rows left in another file). It
    says so, naming the file and what it holds; with ``--no-test`` it has nothing to say."""
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    rows = [row for row in SCRIPT_PAIRS if row[3] != "test"]
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="none", calibrate_level=0.75)
    with caplog.at_level("WARNING", logger="nlsim"):
        data = prepare_pairs(cfg)
    assert data.test.empty
    said = f"{pairs}: no pairs in split 'test' (the file holds train: 5, validation: 4): the model is scored"
    assert said in caplog.text and "--no-test" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="nlsim"):
        prepare_pairs(cfg.with_(eval_test=False))
    assert "no pairs in split 'test'" not in caplog.text


def test_a_test_split_of_one_score_is_refused_in_one_wording_by_finetune_evaluate_and_the_curve(
    tmp_path: Path,
) -> None:
    """A test split whose pairs all have one score: ``nlsim finetune``, ``nlsim evaluate`` and ``nlsim
    learning-curve`` each refused it in words of their own (``all have the score``, ``every pair ... has
    the score``, ``all with the score``). One check says it for the three, each adding its way out."""
    from nlsim.errors import InputError
    from nlsim.evaluation.metrics import check_scorable
    from nlsim.io.pairs import load_pairs
    from nlsim.training.config import FinetuneConfig, LearningCurveConfig
    from nlsim.training.data import prepare_pairs
    from nlsim.training.learning_curve import check_curve_splits, load_curve_pairs

    rows = [(a, b, "0" if split == "test" else score, split) for a, b, score, split in SCRIPT_PAIRS]
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)
    curve = LearningCurveConfig(
        pairs=str(pairs), out=str(tmp_path / "curve"), sizes=(4,), seeds=(1,), conversion="none"
    )
    refusals = {
        "finetune": lambda: prepare_pairs(FinetuneConfig.of(pairs=str(pairs), conversion="none")),
        "evaluate": lambda: check_scorable(load_pairs(pairs, "test"), str(pairs), "test"),
        "learning-curve": lambda: check_curve_splits(load_curve_pairs(pairs, log=lambda _: None), curve),
    }
    said = (
        f"{pairs}: field 'score': the 3 pair(s) in split 'test' all have the score 0: Spearman and Pearson "
        "are undefined (a correlation needs scores that differ)"
    )
    for name, refusal in refusals.items():
        with pytest.raises(InputError) as err:
            refusal()
        assert str(err.value).startswith(said), (name, str(err.value))


def test_a_test_split_of_two_pairs_is_refused_before_any_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test split of 2 pairs with different scores: ``nlsim finetune`` trained and reported a test
    Spearman of +100 or -100 whatever the model (2 points are always in order or not), where ``nlsim
    evaluate`` and ``nlsim learning-curve`` refuse fewer than 3 pairs. It is refused before the model loads,
    in their words, naming the file, the split and the way out (``--no-test``)."""
    import nlsim.training.finetune as ft
    from nlsim.errors import InputError
    from nlsim.evaluation.metrics import check_scorable
    from nlsim.io.pairs import load_pairs
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    rows = [r for r in SCRIPT_PAIRS if r[3] != "test"] + [r for r in SCRIPT_PAIRS if r[3] == "test"][::2]
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)

    def never(*_: object) -> None:
        raise AssertionError("the base model was loaded")

    monkeypatch.setattr(ft, "load_base", never)
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="none", calibrate_level=0.75)
    with pytest.raises(InputError) as err:
        finetune(cfg)
    said = f"{pairs}: field 'split': 2 pair(s) in split 'test'; Spearman needs at least 3 pairs"
    assert str(err.value).startswith(said), str(err.value)
    assert "--no-test" in str(err.value)
    with pytest.raises(InputError) as evaluate:
        check_scorable(load_pairs(pairs, "test"), str(pairs), "test")
    assert str(evaluate.value).startswith(said)
    data = prepare_pairs(cfg.with_(eval_test=False))
    assert (len(data.train), len(data.validation), len(data.test)) == (5, 4, 0)


def test_a_test_split_of_one_score_is_refused_before_any_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test split whose pairs all have one score: ``nlsim finetune`` loaded the model, trained, and only
    then reported the test Spearman as undefined. It is refused before the model loads, naming the file,
    the split and the way out (``--no-test``), with which the run trains and scores validation only."""
    import nlsim.training.finetune as ft
    from nlsim.errors import InputError
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.data import prepare_pairs

    rows = [(a, b, "0" if split == "test" else score, split) for a, b, score, split in SCRIPT_PAIRS]
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(pairs, sep="\t", index=False)

    def never(*_: object) -> None:
        raise AssertionError("the base model was loaded")

    monkeypatch.setattr(ft, "load_base", never)
    cfg = FinetuneConfig.of(pairs=str(pairs), conversion="none", calibrate_level=0.75)
    with pytest.raises(InputError) as err:
        finetune(cfg)
    assert str(err.value).startswith(
        f"{pairs}: field 'score': the 3 pair(s) in split 'test' all have the score 0: Spearman and Pearson"
    )
    assert "--no-test" in str(err.value)
    data = prepare_pairs(cfg.with_(eval_test=False))
    assert (len(data.train), len(data.validation), len(data.test)) == (5, 4, 0)
