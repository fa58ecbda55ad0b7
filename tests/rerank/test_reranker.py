"""The reranker: training beside a bi-encoder, saving and loading, the rerank score and its floor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from stsb_helpers import small_reranker_config, stsb_sample

from nlsim.errors import StateError
from nlsim.inference.cpu import cpu_info
from nlsim.rerank.cross_encoder import CrossEncoder
from nlsim.rerank.reranker import Reranker, has_reranker, load_reranker, rerank_pairs
from nlsim.rerank.story import FEATURES
from nlsim.training.finetune import FinetuneResult, finetune

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


@pytest.fixture(scope="module")
def small_pairs() -> pd.DataFrame:
    return stsb_sample(train=48, validation=24, test=10)  # STS-B's 12th test row repeats its 11th


@pytest.fixture(scope="module")
def reranked_model(tmp_path_factory: pytest.TempPathFactory, small_pairs: pd.DataFrame) -> FinetuneResult:
    out = tmp_path_factory.mktemp("rerank") / "model"
    cfg = small_reranker_config(out, cross_encoder_epochs=2, rerank_weight=0.4)
    return finetune(cfg, pairs=small_pairs, log=lambda _: None)


@pytest.mark.slow
def test_finetune_saves_a_calibrated_reranker_beside_the_model(reranked_model: FinetuneResult) -> None:
    out = Path(str(reranked_model.model_dir))
    assert has_reranker(out) and (out / "reranker" / "head.safetensors").is_file()
    assert {"reranked/validation", "reranked/test"} <= set(reranked_model.metrics)
    summary = reranked_model.reranker
    assert summary is not None and summary["weight"] == 0.4 and summary["slope"] > 0
    assert [h["epoch"] for h in summary["cross_encoder_history"]] == [1, 2]
    assert summary["calibration"]["level"] == 0.6 and summary["calibration"]["model"] == "reranker"
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "## Reranker" in card and "reranked" in card


@pytest.mark.slow
def test_a_model_calibrated_for_same_story_keeps_a_topic_threshold_on_its_cosine(
    tmp_path: Path, small_pairs: pd.DataFrame
) -> None:
    """Beside the story threshold (here at 0.8, on the rerank score), the bi-encoder's cosine is calibrated
    at the topic level (0.75), where a report reads its topic groups: topic_calibration.json, named after
    the model; a model calibrated at the topic level or below has none of its own."""
    from nlsim.evaluation.calibration import load_calibration

    out = tmp_path / "model"
    finetune(small_reranker_config(out, calibrate_level=0.8), pairs=small_pairs, log=lambda _: None)
    loaded = load_reranker(out)
    assert loaded is not None and loaded.calibration is not None and loaded.calibration["level"] == 0.8
    topic = load_calibration(out / "topic_calibration.json")
    assert topic is not None and topic.level == 0.75 and topic.model == f"finetuned:{out.name}"
    low = tmp_path / "low"
    finetune(small_reranker_config(low, calibrate_level=0.6), pairs=small_pairs, log=lambda _: None)
    assert not (low / "topic_calibration.json").exists()


def test_finetune_stores_the_precision_checks_in_the_folder(reranked_model: FinetuneResult) -> None:
    """Checked when the folder is written, found when it is loaded (for its very weights)."""
    from nlsim.encoders import load_encoder
    from nlsim.inference.lossy_verdict import load_quality_check, quality_verdict

    out = Path(str(reranked_model.model_dir))
    enc = load_encoder(out)
    record, where = load_quality_check("encoder", enc.fingerprint, enc.path)
    assert where == str(out / "quality_check.json") and record["kind"] == "encoder"
    assert {"onnx-int8", "torch-bf16", "torch-int8"} <= set(record["paths"])
    assert record["threshold"]["source"] == "calibration.json"
    for path, entry in record["paths"].items():
        assert entry["passed"] == quality_verdict(record, path)[0]
    ce = load_reranker(out, threads=1).cross_encoder
    ce_record, ce_where = load_quality_check("cross-encoder", ce.digest(), ce.path)
    assert ce_where == str(out / "reranker" / "quality_check.json")
    int8, cpu = ce_record["paths"]["onnx-int8"], cpu_info()
    if cpu.int8_isa is None:  # an avx2-only CPU: recorded as not checked, with the reason, and never passed
        assert "max_score_diff" not in int8 and "VNNI" in int8["not_checked"] and int8["passed"] is False
    elif "amx_bf16" in cpu.flags and ce_record["paths"]["torch-bf16"]["passed"]:  # bf16 taken untimed
        assert "AMX-BF16 takes it without timing" in int8["not_checked"] and int8["passed"] is False
    else:  # checked where the CPU runs int8 (VNNI or AMX-INT8)
        assert "max_score_diff" in int8
    for entry in ce_record["paths"].values():
        assert ("max_score_diff" in entry) != bool(entry.get("not_checked"))


@pytest.mark.slow
def test_a_cross_encoder_path_that_breaks_the_score_limit_on_a_first_look_reads_no_more(
    reranked_model: FinetuneResult, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The largest score difference of all the pairs is at least that of a fifth of them: once a first look
    breaks the limit, the cross-encoder's path reads no more pairs (nlsim/training/first_look.py)."""
    from nlsim.encoders import load_encoder
    from nlsim.inference import lossy_verdict
    from nlsim.inference.lossy_verdict import quality_verdict
    from nlsim.training.first_look import first_look_rows
    from nlsim.training.lossy_check import check_cross_encoder

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    out = str(reranked_model.model_dir)
    reranker = load_reranker(out, threads=1)
    assert reranker is not None
    pairs = stsb_sample(train=0, validation=200, test=0)
    ce, read = reranker.cross_encoder, []
    predict = ce.predict

    def recorded(a: list[str], b: list[str], **kwargs: object) -> np.ndarray:
        if kwargs.get("runner") is not None:  # the lossy path's reads, not the fp32 reference's
            read.extend(a)
        return predict(a, b, **kwargs)

    monkeypatch.setattr(ce, "predict", recorded)
    monkeypatch.setattr(lossy_verdict, "MAX_SCORE_DIFF", 1e-9)  # bf16 cannot keep to it
    record = check_cross_encoder(reranker, load_encoder(out), pairs, paths=["torch-bf16"])
    entry, look = record["paths"]["torch-bf16"], len(first_look_rows(len(pairs)))
    assert entry["first_look"] == {"read": look, "of": len(pairs), "unit": "pairs"} and len(read) == look
    assert "spearman" not in entry and entry["max_score_diff"] > 1e-9
    why = quality_verdict(record, "torch-bf16")[1]
    assert why.startswith(f"failed on a first look at {look} of {len(pairs)} pairs: scores differ by up to")


def test_a_loaded_reranker_scores_as_the_trained_one(
    reranked_model: FinetuneResult, small_pairs: pd.DataFrame
) -> None:
    from nlsim.encoders import load_encoder
    from nlsim.evaluation.metrics import evaluate

    out = str(reranked_model.model_dir)
    reranker = load_reranker(out, threads=1)
    assert reranker is not None and reranker.threshold == reranked_model.reranker["calibration"]["threshold"]
    test = small_pairs[small_pairs["split"] == "test"]
    enc = load_encoder(out)
    enc.max_length = 48
    m = evaluate(reranker.scorer(enc), test, None)
    stored = dict(reranked_model.metrics["reranked/test"])
    at = stored.pop("same_story")  # the stored figures also hold the calibrated threshold's, on test
    assert m.as_dict() == stored
    assert at["threshold"] == reranker.threshold and at["n"] == len(test)


def test_rerank_score_is_the_weighted_mean_and_symmetric(reranked_model: FinetuneResult) -> None:
    from nlsim.encoders import load_encoder

    out = str(reranked_model.model_dir)
    reranker = load_reranker(out, threads=1)
    assert reranker is not None
    enc = load_encoder(out)
    a, b = ["A man is playing a guitar.", "Stocks fell."], ["Someone plays the guitar.", "A cat sleeps."]
    score = reranker.scorer(enc)
    got = score(a, b)
    cos = np.einsum("ij,ij->i", enc.encode(a), enc.encode(b))
    cross = reranker.cross_encoder.predict(a, b)
    w = reranker.weight
    assert w == 0.4
    expected = w * (reranker.slope * cos + reranker.intercept) + (1 - w) * cross
    np.testing.assert_allclose(got, expected, atol=1e-5)
    np.testing.assert_allclose(score(b, a), got, atol=1e-5)


class _FixedCross:
    """A stand-in cross-encoder returning preset scores."""

    def __init__(self, scores: list[float]) -> None:
        self.scores = np.array(scores)

    def predict(
        self, a: list[str], b: list[str], progress: bool = False, runner: object = None
    ) -> np.ndarray:
        return self.scores[: len(a)]


def test_candidate_floor_uses_the_cross_encoder_bound() -> None:
    class Bounded(_FixedCross):
        def score_bound(self) -> float:
            return 0.9

    loose = Reranker(cross_encoder=None, slope=1.2, intercept=-0.3, weight=0.5)
    tight = Reranker(cross_encoder=Bounded([]), slope=1.2, intercept=-0.3, weight=0.5)
    assert tight.candidate_floor(0.7) > loose.candidate_floor(0.7)
    cos = np.linspace(-1, 1, 2001)
    best_case = tight.combine(cos, np.full_like(cos, 0.9))
    assert (cos[best_case >= 0.7] >= tight.candidate_floor(0.7) - 1e-9).all()


def test_candidate_floor_loses_no_pair_that_could_pass() -> None:
    r = Reranker(cross_encoder=None, slope=1.2, intercept=-0.3, weight=0.5)
    threshold = 0.7
    floor = r.candidate_floor(threshold)
    cos = np.linspace(-1, 1, 2001)
    best_case = r.combine(cos, np.full_like(cos, 0.999999))
    assert (cos[best_case >= threshold] >= floor).all()  # nothing that can pass lies below the floor
    assert best_case[cos >= floor + 1e-3].min() >= threshold  # and the floor is tight
    assert Reranker(None, slope=-1.0, intercept=0.5).candidate_floor(0.7) == -1.0


def test_rerank_pairs_rescores_and_filters() -> None:
    r = Reranker(cross_encoder=_FixedCross([0.9, 0.1, 0.8]), slope=1.0, intercept=0.0, weight=0.5)
    pairs = pd.DataFrame({"a": [0, 1, 2], "b": [1, 2, 0], "similarity": [0.9, 0.95, 0.5]})
    out = rerank_pairs(pairs, ["x", "y", "z"], r, threshold=0.6)
    assert out[["a", "b"]].values.tolist() == [[0, 1], [2, 0]]
    np.testing.assert_allclose(out["similarity"], [0.9, 0.65], atol=1e-6)
    np.testing.assert_allclose(out["cosine"], [0.9, 0.5], atol=1e-6)
    np.testing.assert_allclose(out["cross_encoder"], [0.9, 0.8], atol=1e-6)
    empty = rerank_pairs(pairs.iloc[0:0], [], r, threshold=0.6)
    assert empty.empty and {"cosine", "cross_encoder"} <= set(empty.columns)


def test_a_pair_whose_rerank_score_is_the_threshold_itself_is_kept() -> None:
    r = Reranker(cross_encoder=_FixedCross([0.5, 0.25]), slope=1.0, intercept=0.0, weight=0.5)
    pairs = pd.DataFrame({"a": [0, 1], "b": [1, 2], "similarity": [0.5, 0.5]})
    out = rerank_pairs(pairs, ["x", "y", "z"], r, threshold=0.5)
    assert out[["a", "b"]].values.tolist() == [[0, 1]]


def test_the_candidate_floor_is_a_cosine_from_minus_one_to_one() -> None:
    """Without a weight on the cosine, or with a line that does not rise, the cosine says nothing: every
    neighbour is a candidate. A threshold no pair can reach puts the floor at the top cosine, 1."""
    assert Reranker(None, slope=1.2, intercept=-0.3, weight=0.0).candidate_floor(0.7) == -1.0
    assert Reranker(None, slope=0.0, intercept=0.5, weight=0.5).candidate_floor(0.7) == -1.0
    assert Reranker(None, slope=1.0, intercept=0.0, weight=0.5).candidate_floor(0.99) == pytest.approx(0.98)
    assert Reranker(None, slope=0.5, intercept=0.0, weight=0.5).candidate_floor(0.99) == 1.0


class _FixedStory:
    """A stand-in story model: every pair at or above its gate is the same story with probability ``p``."""

    def __init__(self, cosine_gate: float, rerank_threshold: float, p: float) -> None:
        self.cosine_gate, self.rerank_threshold, self.p = cosine_gate, rerank_threshold, p

    def probabilities(self, cross: np.ndarray, cos: np.ndarray, a: list[str], b: list[str]) -> np.ndarray:
        return np.full(len(cos), self.p)


def test_a_story_model_decides_the_pairs_from_its_gate_on_and_its_threshold_reads_the_gate() -> None:
    story = _FixedStory(cosine_gate=0.75, rerank_threshold=0.7, p=1.0)
    r = Reranker(None, slope=0.8, intercept=0.0, weight=0.5, story=story)  # type: ignore[arg-type]
    got = r.pair_scores(np.array([0.75, 0.5]), np.array([0.5, 0.5]), ["x", "y"], ["z", "w"])
    # at the gate: probability 1 is the top of the rerank scale, 0.5 * 0.8 + 0.5 = 0.9; below it the
    # rerank score, 0.5 * 0.8 * 0.5 + 0.5 * 0.5 = 0.45
    np.testing.assert_allclose(got, [0.9, 0.45])
    assert r.candidate_floor(0.7) == 0.75
    assert r.candidate_floor(0.69) == pytest.approx(r.rerank_floor(0.69))


def test_a_folder_without_a_reranker_has_none_and_a_broken_one_is_an_error(tmp_path: Path) -> None:
    assert load_reranker(tmp_path) is None and load_reranker(None) is None
    (tmp_path / "reranker").mkdir()
    (tmp_path / "reranker" / "reranker.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(StateError, match="reranker.json"):
        load_reranker(tmp_path)
    with pytest.raises(StateError, match="not a saved cross-encoder"):
        CrossEncoder.load(tmp_path)


@pytest.mark.parametrize(
    ("calibration", "words"),
    [
        (
            {"a": 1},
            "it lacks the fields 'threshold', 'level', 'precision', 'recall', 'f1', 'n' and 'n_positive'",
        ),
        (
            {"threshold": 0.5, "level": 1.0, "precision": 1, "recall": 1, "f1": "x", "n": 9, "n_postive": 3},
            "it lacks the field 'n_positive'; field 'f1' holds 'x', not a number; 'n_postive' is not a field "
            "nlsim reads (did you mean 'n_positive'?)",
        ),
        ("0.5", "it is no JSON object"),
    ],
)
def test_a_reranker_calibration_edited_by_hand_is_refused_naming_the_file_and_its_fields(
    tmp_path: Path, calibration: object, words: str
) -> None:
    """A model folder's ``reranker.json`` whose calibration lacked a field ended ``nlsim dedup`` in
    ``Calibration.__init__() missing 7 required positional arguments``, and one that was no object in an
    ``AttributeError``; it is now refused naming the file and the fields, before the cross-encoder loads."""
    (tmp_path / "reranker").mkdir()
    meta = {"slope": 1.0, "intercept": 0.0, "weight": 0.5, "calibration": calibration}
    (tmp_path / "reranker" / "reranker.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(StateError) as err:
        load_reranker(tmp_path)
    path = tmp_path / "reranker" / "reranker.json"
    assert str(err.value).startswith(f"{path}: its calibration is not one nlsim wrote: {words}; ")


# --- the rerank stage of dedup ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "small.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:80].to_parquet(path)
    return path


def _dedup(model: str, corpus: Path, out: Path, **kw: object):  # noqa: ANN202 - DedupResult
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup

    cfg = DedupConfig.of(
        corpus=corpus,
        out=out,
        model=model,
        convert="none",
        text_fields=("title",),
        k=5,
        cache=False,
        progress=False,
        save_index=False,
        cluster_rule="components",  # every pair at the threshold is reported (support: some near misses)
        **kw,
    )
    return run_dedup(cfg)


@pytest.mark.slow
def test_dedup_with_a_reranker_keeps_exactly_the_candidates_whose_rerank_score_passes(
    reranked_model: FinetuneResult, small_corpus: Path, tmp_path: Path
) -> None:
    model = str(reranked_model.model_dir)
    reranker = load_reranker(model)
    assert reranker is not None
    threshold = 0.45
    floor = reranker.candidate_floor(threshold)
    got = _dedup(model, small_corpus, tmp_path / "reranked", threshold=threshold)
    rerank = got.summary["rerank"]
    assert rerank["candidate_floor"] == round(floor, 6) and rerank["kept"] == len(got.pairs) > 0
    assert "on the rerank score" in got.summary["threshold_source"]
    # the same neighbours by cosine alone, down to the floor, rescored here by hand
    plain = _dedup(model, small_corpus, tmp_path / "plain", threshold=floor, rerank=False)
    assert plain.summary["rerank"] is None and plain.pairs["cross_encoder"].isna().all()
    assert (plain.pairs["cosine"] == plain.pairs["similarity"]).all()
    assert len(plain.pairs) == rerank["candidates"]
    score = reranker.combine(
        plain.pairs["similarity"].to_numpy(),
        reranker.cross_encoder.predict(plain.pairs["title_a"].tolist(), plain.pairs["title_b"].tolist()),
    )
    expected = {tuple(p) for p in plain.pairs.loc[score >= threshold, ["id_a", "id_b"]].values.tolist()}
    assert {tuple(p) for p in got.pairs[["id_a", "id_b"]].values.tolist()} == expected
    assert (got.pairs["similarity"] >= threshold).all() and (got.pairs["cosine"] >= floor).all()
    np.testing.assert_allclose(
        got.pairs["similarity"], reranker.combine(got.pairs["cosine"], got.pairs["cross_encoder"]), atol=1e-5
    )
    stored = pd.read_parquet(got.files["pairs.parquet"])
    assert {"cosine", "cross_encoder"} <= set(stored.columns)


@pytest.mark.slow
def test_topic_groups_read_the_cosine_and_the_reranker_rescores_only_the_story_candidates(
    reranked_model: FinetuneResult, small_corpus: Path, tmp_path: Path
) -> None:
    """With a topic threshold below the story floor, the search reaches down to it, but only the candidates
    that can reach the story threshold are rescored (the cross-encoder's work does not grow): the others
    are topic-level links of the cosine; the stories are the same as without topic groups."""
    model = str(reranked_model.model_dir)
    reranker = load_reranker(model)
    assert reranker is not None
    threshold = round(reranker.max_score() - 0.02, 4)  # a high story floor: few candidates to rescore
    floor = reranker.candidate_floor(threshold)
    without = _dedup(model, small_corpus, tmp_path / "stories", threshold=threshold, topics=False)
    got = _dedup(model, small_corpus, tmp_path / "topics", threshold=threshold, topic_threshold=floor - 0.3)
    story_candidates = without.summary["rerank"]["candidates"]
    assert got.summary["rerank"]["rescored"] == story_candidates  # no more cross-encoder work
    assert got.summary["rerank"]["candidates"] > story_candidates  # the search went down to the topic level
    assert without.pairs[["id_a", "id_b"]].values.tolist() == got.pairs[["id_a", "id_b"]].values.tolist()
    assert {tuple(m) for m in without.clusters["member_ids"]} == {
        tuple(m) for m in got.clusters["member_ids"]
    }
    topics = pd.read_parquet(got.files["topics.parquet"])
    assert got.summary["counts"]["topics"] == len(topics) > 0 and (topics["size"] >= 2).all()


def test_dedup_uses_the_stored_rerank_threshold_by_default(
    reranked_model: FinetuneResult, small_corpus: Path, tmp_path: Path
) -> None:
    got = _dedup(str(reranked_model.model_dir), small_corpus, tmp_path)
    assert got.summary["threshold"] == round(reranked_model.reranker["calibration"]["threshold"], 6)
    assert got.summary["threshold_source"].startswith("rerank threshold stored with the model")


@pytest.mark.slow
def test_a_daily_run_reranks_like_a_batch_run(
    reranked_model: FinetuneResult, small_corpus: Path, tmp_path: Path
) -> None:
    """Incremental runs are the batch stages plus state: the reranker works with --state too."""
    model = str(reranked_model.model_dir)
    batch = _dedup(model, small_corpus, tmp_path / "batch", threshold=0.45)
    daily = _dedup(
        model,
        small_corpus,
        tmp_path / "daily",
        threshold=0.45,
        state=str(tmp_path / "state"),
        retention_days=None,
    )
    assert daily.summary["rerank"]["kept"] == batch.summary["rerank"]["kept"] > 0
    key = ["id_a", "id_b"]
    pd.testing.assert_frame_equal(
        daily.pairs.sort_values(key).reset_index(drop=True)[[*key, "similarity", "cross_encoder"]],
        batch.pairs.sort_values(key).reset_index(drop=True)[[*key, "similarity", "cross_encoder"]],
    )


def test_rerank_requests_that_cannot_be_met_are_errors(
    reranked_model: FinetuneResult, small_corpus: Path, tmp_path: Path
) -> None:
    from nlsim.errors import ConfigError

    with pytest.raises(ConfigError, match="has no reranker"):
        _dedup(FAST_MODEL, small_corpus, tmp_path / "a", threshold=0.9, rerank=True)
    cal = tmp_path / "cal.json"
    cal.write_text(
        '{"threshold": 0.9, "level": 0.75, "precision": 1, "recall": 1, "f1": 1, "n": 4, '
        '"n_positive": 2, "conversion": "none"}'
    )
    with pytest.raises(ConfigError, match="calibrates cosines"):
        _dedup(str(reranked_model.model_dir), small_corpus, tmp_path / "b", calibration=cal, rerank=True)
    assert not (tmp_path / "a" / "pairs.parquet").exists() and not (tmp_path / "b" / "pairs.parquet").exists()


def test_evaluate_command_scores_the_rerank_score_unless_told_not_to(
    reranked_model: FinetuneResult,
    small_pairs: pd.DataFrame,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from nlsim.cli import main

    pairs = tmp_path / "pairs.tsv"
    small_pairs.to_csv(pairs, sep="\t", index=False)
    base = [
        "evaluate",
        "--model",
        str(reranked_model.model_dir),
        "--pairs",
        str(pairs),
        "--convert",
        "none",
        "--json",
        "--threads",
        "1",
    ]
    got = {}
    for flag in ([], ["--no-rerank"]):
        assert main(base + flag) == 0
        row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        got[row["scorer"]] = row
    assert set(got) == {"reranker", "bi-encoder"}
    for scorer, key in (("reranker", "reranked/test"), ("bi-encoder", "after/test")):
        assert got[scorer]["spearman"] == pytest.approx(reranked_model.metrics[key]["spearman"], abs=0.05)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("{not json", "not valid JSON"),
        ("", "not valid JSON"),
        ('{"max_length": 6', "not valid JSON"),
        ("[]", "not a JSON object"),
        ("null", "not a JSON object"),
        ("64", "not a JSON object"),
        ('{"pooling": "mean"}', "'max_length'"),
        ('{"max_length": "64"}', "'max_length'"),
        ('{"max_length": 64.5}', "'max_length'"),
        ('{"max_length": true}', "'max_length'"),
    ],
)
def test_a_damaged_cross_encoder_json_is_refused_by_name(config: str, named: str, tmp_path: Path) -> None:
    """A saved cross-encoder's cross_encoder.json gives the token limit it was trained with; one cut short,
    holding a list or null, or lacking its max_length stopped the load with a JSONDecodeError, TypeError or
    KeyError traceback, where CrossEncoder.load promises a StateError for a folder that is not one. Each is
    a StateError naming the file (and the key)."""
    (tmp_path / "cross_encoder.json").write_text(config, encoding="utf-8")
    (tmp_path / "head.safetensors").write_bytes(b"")
    with pytest.raises(StateError, match="cross_encoder.json") as caught:
        CrossEncoder.load(tmp_path)
    assert named in str(caught.value)


@pytest.mark.parametrize(
    "edit",
    [
        {"story": 5},
        {"story": ["bigram"]},
        {"story": {"features": list(FEATURES), "idf": {"texts": 3, "df": ["floods"]}}},
        {"info": "trained"},
    ],
)
def test_a_reranker_json_whose_story_model_is_of_another_kind_is_refused_by_name(
    tmp_path: Path, edit: dict
) -> None:
    """A model folder's reranker.json whose story model was a number or a list (or its bigram counts a
    list) stopped the load with "AttributeError: 'int' object has no attribute 'get'", and info that is
    not an object passed to the run record; each is a StateError naming the file."""
    (tmp_path / "reranker").mkdir()
    meta = {"slope": 1.0, "intercept": 0.0, "weight": 0.5, **edit}
    (tmp_path / "reranker" / "reranker.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(StateError, match=r"reranker\.json: not a valid reranker file"):
        load_reranker(tmp_path)
