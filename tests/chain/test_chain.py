"""The chain on a small English set: baseline, fine-tune (cached by fingerprint), gate, report, judge."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from stsb_helpers import stsb_sample

import nlsim.chain.run as chain_run
from nlsim.chain.config import PipelineConfig
from nlsim.chain.eta import describe as describe_eta
from nlsim.chain.promotion import cross_validated_f1, decide
from nlsim.chain.run import promote_stage, run_pipeline
from nlsim.encoders import load_encoder
from nlsim.errors import ConfigError, InputError
from nlsim.evaluation.judge import judge_report
from nlsim.io.model_store import ModelStore

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


def make_data(folder: Path, train: int = 60, validation: int = 40, test: int = 20) -> tuple[Path, Path]:
    """STS-B pairs with item ids, and a corpus of their sentences (so the report can be judged)."""
    d = stsb_sample(train=train, validation=validation, test=test)
    texts = list(dict.fromkeys([*d["text_a"], *d["text_b"]]))
    ids = {t: f"s{i:04d}" for i, t in enumerate(texts)}
    d["id_a"], d["id_b"] = d["text_a"].map(ids), d["text_b"].map(ids)
    pairs = folder / "pairs.tsv"
    d[["pair_id", "split", "id_a", "id_b", "text_a", "text_b", "score"]].to_csv(pairs, sep="\t", index=False)
    corpus = folder / "corpus.parquet"
    pd.DataFrame({"id": list(ids.values()), "title": list(ids), "source": "stsb"}).to_parquet(corpus)
    return pairs, corpus


def config(folder: Path, pairs: Path, corpus: Path, **kw: object) -> PipelineConfig:
    base = dict(
        pairs=str(pairs),
        corpus=str(corpus),
        out=str(folder / "report"),
        model_store=str(folder / "models"),
        base_model=FAST_MODEL,
        convert="none",
        level=0.8,
        epochs=1,
        cross_encoder_epochs=1,
        threads=1,
        progress=False,
    )
    base.update(kw)
    return PipelineConfig.of(**base)


@pytest.mark.slow
def test_chain_trains_once_gates_reports_and_judges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pairs, corpus = make_data(tmp_path)
    first = run_pipeline(config(tmp_path, pairs, corpus))
    rec = first.record
    assert rec["trained"] and rec["candidate"]["version"].startswith("v0001-")
    cand, base = rec["candidate"]["validation"], rec["baseline"]
    assert cand["scorer"] == "reranker" and base["scorer"] == "cosine"
    assert rec["decision"]["promoted"] == decide(cand, base, "zero-shot")[0]  # the gate, applied
    store = ModelStore(tmp_path / "models")
    assert (store.current() is not None) == rec["decision"]["promoted"]
    # the report uses the current model, else the zero-shot one with the store's zero-shot calibration
    summary = first.report.summary
    assert summary["model_info"]["zero_shot"] == (not rec["decision"]["promoted"])
    judged = json.loads((tmp_path / "report" / "pipeline.json").read_text())["judge"]
    assert judged["judged_pairs"] == 40 and judged["same_story_pairs"] > 0 and 0 <= judged["f1"] <= 1
    # the report judged itself once; judging the written folder again gives the same figures
    again = judge_report(tmp_path / "report", pairs, split="validation", corpus=corpus).to_dict()
    assert judged == again and judged["report"] == str(tmp_path / "report")
    assert "judge" not in rec["timings_s"]  # no second judging stage
    assert "zero-shot" in first.table and rec["candidate"]["version"] in first.table

    # unchanged annotations: nothing is trained again
    calls = []
    monkeypatch.setattr(chain_run, "finetune", lambda *a, **k: calls.append(1))
    second = run_pipeline(config(tmp_path, pairs, corpus))
    assert calls == [] and not second.record["trained"]
    assert second.record["candidate"]["version"] == rec["candidate"]["version"]
    monkeypatch.undo()

    # changed annotations (one more training pair): a new version, and the run says why
    table = pd.read_csv(pairs, sep="\t", dtype=str)
    extra = table.iloc[[0]].assign(pair_id="extra-1", text_a="A brand new sentence.", id_a="new-1")
    pd.concat([table, extra]).to_csv(pairs, sep="\t", index=False)
    with caplog.at_level(logging.INFO, logger="nlsim"):
        third = run_pipeline(config(tmp_path, pairs, corpus, report=False))
    assert third.record["trained"] and third.record["candidate"]["version"].startswith("v0002-")
    assert "training a new version (the annotated pairs changed since v0001-" in caplog.text


@pytest.mark.slow
def test_a_version_trained_now_is_judged_and_checked_by_what_its_training_gave_not_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.chain.promotion import score_model
    from nlsim.io.pairs import load_pairs

    pairs, corpus = make_data(tmp_path, train=40, validation=40, test=10)
    scored: list[str] = []
    monkeypatch.setattr(chain_run, "score_model", lambda model, *a, **k: scored.append(str(model)))
    rec = run_pipeline(config(tmp_path, pairs, corpus, report=False)).record
    assert rec["trained"] and scored == []  # evaluated without loading the model and scoring again
    version = Path(rec["candidate"]["path"])
    validation = load_pairs(pairs).query("split == 'validation'")
    fresh = score_model(version, validation, "none", 0.8)
    seeded = rec["candidate"]["validation"]
    assert seeded["scorer"] == fresh["scorer"] == "reranker"
    for key in ("threshold", "precision", "recall", "f1", "cv_f1", "n", "split_digest", "level"):
        assert seeded[key] == pytest.approx(fresh[key], abs=1e-6), key
    assert seeded["spearman"] == pytest.approx(fresh["spearman"], abs=0.01)
    # the cross-encoder's scores of validation and test went to the pair-score cache, for the report
    from nlsim.rerank.cache import PairScoreCache
    from nlsim.rerank.reranker import load_reranker

    ce = load_reranker(version).cross_encoder
    judged = load_pairs(pairs).query("split != 'train'")
    a, b = judged["text_a"].tolist(), judged["text_b"].tolist()
    np.testing.assert_allclose(PairScoreCache(None, ce.digest()).lookup(a, b), ce.predict(a, b), atol=1e-5)
    # the card's zero-shot figures are the baseline's own scores, not a second pass over the base model
    card = json.loads((version / "training.json").read_text())["metrics"]["before/validation"]
    assert card["spearman"] == pytest.approx(rec["baseline"]["spearman"], abs=0.01)
    # its training checked its lossy paths on this machine: the report's quality check loads nothing
    cfg = config(tmp_path, pairs, corpus)
    store = ModelStore(cfg.model_store)
    if store.current() != version:  # a few pairs: it may not beat the zero-shot model
        store.promote(version, "the report's model, for this test")
    marker = chain_run.quality_marker(cfg, validation, chain_run.default_device())
    assert chain_run.checked_for(store, version) == [marker]

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded again for its quality check")

    with monkeypatch.context() as patched:
        patched.setattr(chain_run, "load_encoder", no_load)
        assert chain_run.quality_check_stage(cfg, store, None, validation, None) == {
            "model": version.name,
            "reused": True,
        }
    # and rightly so: without the marker, the stage loads the version and finds nothing left to check
    store.write_info(version, {**(store.info(version) or {}), "quality_check": []})
    done = chain_run.quality_check_stage(cfg, store, None, validation, None)
    assert done == {"model": version.name, "written": []}
    assert chain_run.checked_for(store, version) == [marker]


def test_the_gate_keeps_a_worse_model_and_says_why(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models")
    store.claim()
    good = store.new_version_dir("a" * 64)
    good.mkdir(parents=True)
    store.register(good, {"fingerprint": good.name})  # only a registered version can be current
    store.promote(good, "first")
    worse = store.new_version_dir("b" * 64)
    worse.mkdir(parents=True)
    store.register(worse, {"fingerprint": worse.name})  # only a registered version can be current
    incumbent = {"spearman": 90.0, "f1": 0.80}
    d = promote_stage(
        store, worse, {"spearman": 91.0, "f1": 0.70}, incumbent, f"the current model {good.name}"
    )
    assert not d["promoted"] and "does not beat" in d["reason"] and store.current() == good
    history = [json.loads(line) for line in (tmp_path / "models" / "history.jsonl").read_text().splitlines()]
    assert history[-1]["decision"] == "kept, not promoted" and history[-1]["candidate"] == worse.name
    d = promote_stage(store, worse, {"spearman": 91.0, "f1": 0.80}, incumbent, good.name)
    assert d["promoted"] and store.current() == worse


@pytest.mark.parametrize("by_hand", ["rollback", "promote"])
def test_the_gate_does_not_undo_a_rollback_by_hand(tmp_path: Path, by_hand: str) -> None:
    """A version a person made not current (``nlsim models rollback``, or ``promote`` of another one) is
    reused by the next chain on the same annotations: the gate keeps it out, says who did what and how to
    make it current again, instead of promoting it back on its figures every week."""
    store = ModelStore(tmp_path / "models")
    store.claim()
    old, new = store.new_version_dir("a" * 64), None
    old.mkdir(parents=True)
    store.register(old, {"fingerprint": old.name})  # only a registered version can be current
    store.promote(old, "beats zero-shot")
    new = store.new_version_dir("b" * 64)
    new.mkdir(parents=True)
    store.register(new, {"fingerprint": new.name})  # only a registered version can be current
    store.promote(new, "beats v0001")
    extra = {"rolled_back": new.name} if by_hand == "rollback" else {"replaced": new.name}
    store.promote(old, "v0002 splits stories", by="ed@desk", command=f"nlsim models {by_hand}", **extra)
    better = {"spearman": 91.0, "f1": 0.80}
    d = promote_stage(store, new, better, {"spearman": 90.0, "f1": 0.70}, f"the current model {old.name}")
    assert not d["promoted"] and store.current() == old
    assert f"nlsim models {by_hand}" in d["reason"] and "ed@desk" in d["reason"]
    assert "v0002 splits stories" in d["reason"] and f"nlsim models promote {new.name}" in d["reason"]
    assert store.history()[-1]["decision"] == "kept, not promoted"
    # once a person makes it current again, the gate judges it as any version
    store.promote(new, "fixed after all", by="ed@desk", command="nlsim models promote", replaced=old.name)
    store.promote(old, "beats v0002")
    assert promote_stage(store, new, better, {"spearman": 90.0, "f1": 0.70}, old.name)["promoted"]


def test_the_gate_compares_the_cross_validated_f1_when_both_models_have_it() -> None:
    # a lucky threshold (F1 at the threshold better) does not promote a model worse out of fold
    lucky = {"spearman": 90.0, "f1": 0.90, "cv_f1": 0.60}
    steady = {"spearman": 90.0, "f1": 0.70, "cv_f1": 0.65}
    promoted, reason = decide(lucky, steady, "v0001")
    assert not promoted and "cross-validated" in reason
    assert decide(steady, lucky, "v0001")[0]
    # figures recorded before the cross-validated F1 existed: the F1 at the threshold decides
    assert decide(lucky, {"spearman": 90.0, "f1": 0.70}, "v0001")[0]
    rng = np.random.default_rng(0)
    gold = np.r_[np.ones(30), np.zeros(170)]
    scores = gold * 0.3 + rng.random(200)
    cv = cross_validated_f1(scores, gold, 1.0)
    lo, hi = cv["cv_f1_ci95"]
    assert 0.0 < cv["cv_f1"] <= 1.0 and lo < hi
    assert cross_validated_f1(scores[:33], gold[:33], 1.0) == {}  # 3 negatives: too few for 5 folds


def test_a_worse_candidate_rolled_back_by_hand_is_kept_for_its_figures_alone(tmp_path: Path) -> None:
    """The note of a rollback by hand is the reason only where the figures would have promoted the
    version: one that does not beat the current model is kept for that, and the reason says no more."""
    store = ModelStore(tmp_path / "models")
    store.claim()
    old = store.new_version_dir("a" * 64)
    old.mkdir(parents=True)
    store.register(old, {"fingerprint": old.name})
    store.promote(old, "beats zero-shot")
    new = store.new_version_dir("b" * 64)
    new.mkdir(parents=True)
    store.register(new, {"fingerprint": new.name})
    store.promote(new, "beats v0001")
    store.promote(
        old, "v0002 splits stories", by="ed@desk", command="nlsim models rollback", rolled_back=new.name
    )
    worse = {"spearman": 80.0, "f1": 0.60}
    d = promote_stage(store, new, worse, {"spearman": 90.0, "f1": 0.70}, f"the current model {old.name}")
    assert not d["promoted"] and store.current() == old and d["current"] == old.name
    assert d["reason"].startswith(f"{new.name} does not beat") and "by hand" not in d["reason"]


def test_the_table_shows_the_candidate_once_when_it_is_the_current_model() -> None:
    figures = {"scorer": "cosine", "spearman": 0.5, "threshold": 0.8, "f1": 0.6}
    record: dict[str, Any] = {
        "baseline": {**figures, "model": "base"},
        "candidate": {"version": "v0002", "validation": figures},
        "current": {"version": "v0002", "validation": figures},
    }
    rows = [line for line in chain_run.before_after_table(record).splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in rows] == ["| zero-shot base", "| candidate v0002"]
    record["current"] = {"version": "v0001", "validation": figures}
    rows = [line for line in chain_run.before_after_table(record).splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in rows] == [
        "| zero-shot base",
        "| candidate v0002",
        "| current v0001",
    ]


def test_a_candidate_that_is_already_current_is_evaluated_against_the_zero_shot_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reused version that is the current model is not its own incumbent: the baseline is."""
    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("a" * 64)
    version.mkdir(parents=True)
    store.register(version, {"fingerprint": version.name})
    store.promote(version, "beats zero-shot")
    scored: list[str] = []
    monkeypatch.setattr(chain_run, "evaluate_stage", lambda cfg, st, v, *a: scored.append(v.name) or {"n": 1})
    cfg = PipelineConfig.of(pairs="pairs.tsv", model_store=str(store.root), base_model="base")
    baseline = {"spearman": 0.5}
    candidate, incumbent, name = chain_run.evaluate_both(cfg, store, version, pd.DataFrame(), baseline)
    assert incumbent == baseline and name == "zero-shot base" and scored == [version.name]


def test_a_version_remembers_the_latest_machine_kinds_its_check_was_settled_for(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("a" * 64)
    version.mkdir(parents=True)
    store.register(version, {"fingerprint": version.name})
    markers = [f"kind{k}" for k in range(chain_run.MARKERS_KEPT + 2)]
    for marker in markers + [markers[4]]:  # one settled again: it moves to the end, once
        chain_run.mark_checked(store, version, marker)
    kept = markers[2:4] + markers[5:] + markers[4:5]
    assert chain_run.checked_for(store, version) == kept and len(kept) == chain_run.MARKERS_KEPT
    assert sorted((store.info(version) or {})["quality_check_records"]) == sorted(kept)


def test_a_reports_figures_are_kept_apart_only_for_a_report_without_its_reranker() -> None:
    """``--no-rerank`` (False) scores with the bi-encoder alone: its figures have a key of their own; a
    report that reranks where it can (None) or must (True) shares the rerank score's."""
    validation = stsb_sample(train=0, validation=6, test=0)
    keys = {
        rerank: chain_run.figures_key(PipelineConfig.of(rerank=rerank), validation)
        for rerank in (None, True, False)
    }
    assert keys[None] == keys[True] and keys[False] == f"{keys[None]}:cosine"


def test_training_scores_seed_the_figures_only_when_they_cover_every_validation_pair_at_the_level(
    tmp_path: Path,
) -> None:
    from nlsim.training.validation import ScoredValidation

    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("a" * 64)
    version.mkdir(parents=True)
    store.register(version, {"fingerprint": version.name})
    validation = stsb_sample(train=0, validation=6, test=0)
    cfg = PipelineConfig.of(level=0.8)
    ids = validation["pair_id"].astype(str).tolist()
    some = ScoredValidation("cosine", 0.5, 0.8, {i: 0.5 for i in ids[:-1]})  # one pair short
    other_level = ScoredValidation("cosine", 0.5, 0.6, {i: 0.5 for i in ids})
    for own in (some, other_level):
        assert not chain_run.seed_figures(cfg, store, version, validation, own)
    assert "validation" not in (store.info(version) or {})


class _Tokens:
    """A base model whose texts are as many token ids long as they have characters (cut at 8)."""

    max_length = 8

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [[1] * min(len(t), self.max_length) for t in texts]


def test_the_baselines_scores_go_to_training_only_where_no_text_may_have_been_cut() -> None:
    """A text as long as the base model's limit may have been cut there (its ids are cut at it): the
    baseline's scores are then not fine-tuning's; one shorter is read whole by both."""
    short = chain_run.Baseline({}, {("a" * 7, "b"): 0.5})
    full = chain_run.Baseline({}, {("a" * 8, "b"): 0.5})
    assert short.for_training(_Tokens(), 16) == short.known
    assert full.for_training(_Tokens(), 16) == {}
    assert short.for_training(_Tokens(), 7) == {}  # fine-tuning's own limit


def test_a_pointer_to_a_missing_version_is_an_error(tmp_path: Path) -> None:
    from nlsim.errors import StateError

    store = ModelStore(tmp_path / "models")
    store.claim()
    (tmp_path / "models" / "CURRENT.json").write_text('{"version": "v0009-deadbeef"}')
    with pytest.raises(StateError, match="not a version"):
        store.current()


def test_a_quarantine_file_that_would_overwrite_an_input_or_a_users_file_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    """``--quarantine`` is written as the corpus is read, which the chain does first of all: a path that is
    the pair file, the corpus, a file of the report or of the model store, or a user's file is refused
    before that, and the file is left as it was (the editors' pairs were once replaced by an empty
    quarantine CSV)."""
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    store = ModelStore(tmp_path / "models")
    store.claim()
    (tmp_path / "models" / "history.jsonl").write_text('{"decision": "kept, not promoted"}\n')
    (tmp_path / "report").mkdir()
    (tmp_path / "notes.csv").write_text("the desk's notes\n")
    cases = {
        pairs: "same path as --pairs",
        corpus: "same path as --corpus",
        tmp_path / "report" / "pairs.csv": "the report's own file",
        tmp_path / "report" / "index" / "bad.csv": "subfolder of --out",
        tmp_path / "models" / "history.jsonl": "--quarantine",
        tmp_path / "notes.csv": "--quarantine",
    }
    for path, said in cases.items():
        before = path.read_bytes() if path.exists() else None
        with pytest.raises(ConfigError, match=said):
            run_pipeline(config(tmp_path, pairs, corpus, quarantine=str(path)))
        assert (path.read_bytes() if path.exists() else None) == before, path
    # with --no-report the corpus is not read, and nothing is written to --quarantine


def test_a_precision_this_machine_cannot_run_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--precision fp16`` on a CPU (a GPU precision): refused before the baseline and the training, not by
    the report once a model was trained and promoted."""
    monkeypatch.setenv("NLSIM_DEVICE", "cpu")
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    with pytest.raises(ConfigError, match="--precision fp16: no way to run the report's model here"):
        run_pipeline(config(tmp_path, pairs, corpus, precision="fp16"))
    assert not (tmp_path / "models").exists() and not (tmp_path / "report").exists()


def test_bad_paths_are_refused_before_any_work(tmp_path: Path) -> None:
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    with pytest.raises(ConfigError, match="contains --pairs"):
        run_pipeline(config(tmp_path, pairs, corpus, out=str(tmp_path)))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("the user's")
    with pytest.raises(ConfigError, match="not written by nlsim"):
        run_pipeline(config(tmp_path, pairs, corpus, model_store=str(tmp_path / "mine")))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "the user's"


@pytest.mark.parametrize(
    ("option", "where", "said"),
    [
        ("out", "models/report", "--out .*models/report lies inside --model-store"),
        ("out", "models/versions/v0009-aaaaaaaa", "--out .* lies inside --model-store"),
        ("quarantine", "models/bad_rows.csv", "--quarantine .* lies inside --model-store"),
    ],
)
def test_a_report_or_quarantine_file_inside_the_model_store_is_refused_before_any_work(
    tmp_path: Path, option: str, where: str, said: str
) -> None:
    """The model store is nlsim's alone (its versions, pointer, history): a report folder or a quarantine
    file inside it is refused before any work, as --model-store inside --out is, and nothing is written."""
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    store = ModelStore(tmp_path / "models")
    store.claim()
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "models").rglob("*"))
    with pytest.raises(ConfigError, match=said):
        run_pipeline(config(tmp_path, pairs, corpus, **{option: str(tmp_path / where)}))
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "models").rglob("*")) == before


@pytest.mark.parametrize(("name", "text"), [("pipeline.md", "my notes\n"), ("pipeline.json", '{"mine": 1}')])
def test_a_users_pipeline_file_in_the_report_folder_is_refused_before_any_work(
    tmp_path: Path, name: str, text: str
) -> None:
    """A pipeline.md or pipeline.json in --out that the chain did not write (a user's notes beside the
    report) was overwritten by the chain's record when it ended; it is refused before any work, and kept."""
    from nlsim.io.ownership import claim_folder

    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    out = tmp_path / "report"
    claim_folder(out, "report")
    (out / name).write_text(text)
    with pytest.raises(ConfigError, match=rf"{name} exists and is not .* written by nlsim"):
        run_pipeline(config(tmp_path, pairs, corpus))
    assert (out / name).read_text() == text
    assert not (tmp_path / "models").exists()


def test_pairs_the_report_cannot_be_judged_on_are_refused_before_training(tmp_path: Path) -> None:
    """Pairs without item ids, or with empty ones, stop the chain before its baseline, not after training
    and promoting."""
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    no_ids = tmp_path / "no-ids.tsv"
    pd.read_csv(pairs, sep="\t").drop(columns=["id_a", "id_b"]).to_csv(no_ids, sep="\t", index=False)
    with pytest.raises(InputError, match="no-ids.tsv: field 'id_a': the scored pairs need item ids"):
        run_pipeline(config(tmp_path, no_ids, corpus))
    blank = tmp_path / "blank-ids.tsv"
    table = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    table.loc[table["split"] == "validation", "id_b"] = ""
    table.to_csv(blank, sep="\t", index=False)
    with pytest.raises(InputError, match="blank-ids.tsv: field 'id_a': none of the 8 scored validation"):
        run_pipeline(config(tmp_path, blank, corpus))
    assert not (tmp_path / "models" / "zero-shot").exists()


class _Started(Exception):
    """Raised by a stubbed baseline: the chain got past its checks."""


def test_a_chain_into_a_report_folder_another_run_holds_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain holds its --out from its start, as a batch run does: a second run into it is refused now,
    not after its baseline and training, and the holder's lock is untouched."""
    from nlsim.io.lock import LockedError, read_lock
    from nlsim.io.ownership import claim_folder
    from tests.dedup.test_lock import _start_holder

    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    cfg = config(tmp_path, pairs, corpus)
    claim_folder(tmp_path / "report", "report")  # a report folder, as the other run made it
    holder = _start_holder(tmp_path / "report")

    def started(*args: object, **kwargs: object) -> None:
        raise _Started

    monkeypatch.setattr(chain_run, "baseline_stage", started)
    try:
        with pytest.raises(
            LockedError, match=rf"report folder .*report is locked by another run: pid {holder.pid}"
        ):
            run_pipeline(cfg)
        assert read_lock(tmp_path / "report").pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
    assert read_lock(tmp_path / "models") is None  # the store's lock is released too


def test_pairs_of_another_corpus_are_refused_before_the_base_model_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An own --corpus with pairs none of which names two of its items (the bundled pairs, say) stops the
    chain at its first step, before the base model, the zero-shot baseline and the training, not at the
    report after them."""
    pairs, _ = make_data(tmp_path, train=8, validation=8, test=4)
    own = tmp_path / "own.csv"
    pd.DataFrame({"id": ["x1", "x2"], "title": ["One story", "Another story"]}).to_csv(own, index=False)

    def started(*args: object, **kwargs: object) -> None:
        raise _Started

    monkeypatch.setattr(chain_run, "load_encoder", started)
    monkeypatch.setattr(chain_run, "baseline_stage", started)
    with pytest.raises(InputError, match=r"pairs.tsv: field 'id_a': none of the 8 scored .* names two items"):
        run_pipeline(config(tmp_path, pairs, own))
    assert not (tmp_path / "models" / "zero-shot").exists()


@pytest.mark.parametrize("bad", ["verdict store", "corpus"])
def test_every_input_of_the_report_is_checked_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    """A damaged verdict store (checked against the pair file) or a bad corpus row stops the chain before
    its baseline, its training and the registration of a new version, not at the report after them."""
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    if bad == "verdict store":
        where = tmp_path / "pairs.tsv.verdicts.csv"
        where.write_text(
            "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n,s0000,s0001,0.6,train,,,\n"
        )
        words = (str(where), "row 1", "'score'")
    else:
        items = pd.read_parquet(corpus)
        pd.concat([items, items.iloc[[0]]], ignore_index=True).to_parquet(corpus)  # an id twice
        words = (str(corpus), f"row {len(items) + 1}", "'id'")

    def started(*args: object, **kwargs: object) -> None:
        raise _Started

    monkeypatch.setattr(chain_run, "baseline_stage", started)
    monkeypatch.setattr(chain_run, "finetune", started)
    with pytest.raises(InputError) as err:
        run_pipeline(config(tmp_path, pairs, corpus))
    assert all(w in str(err.value) for w in words), str(err.value)
    assert not (tmp_path / "models" / "versions").exists() or not any(
        (tmp_path / "models" / "versions").iterdir()
    )


def _zero_shot_cache(tmp_path: Path) -> tuple[Path, Callable[[], None]]:
    """A chain's zero-shot ``baseline.json`` once its baseline has been scored, and a check, to call once
    the file is damaged, that the next baseline computes the same figures again and writes the file whole."""
    from nlsim.io.pairs import load_pairs

    pairs, corpus = make_data(tmp_path, train=8, validation=24, test=8)
    cfg = config(tmp_path, pairs, corpus)
    store = ModelStore(cfg.model_store)
    store.claim()
    base = load_encoder(FAST_MODEL)
    table = load_pairs(pairs)
    first = chain_run.baseline_stage(cfg, store, base, table).metrics
    cached = store.zero_shot_dir() / "baseline.json"

    def computed_again() -> None:
        again = chain_run.baseline_stage(cfg, store, base, table).metrics
        assert again["spearman"] == first["spearman"] and again["threshold"] == first["threshold"]
        assert json.loads(cached.read_text())["metrics"]["spearman"] == first["spearman"]  # written whole

    return cached, computed_again


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["", '{"key": ', "[]"])
def test_a_torn_zero_shot_cache_is_computed_again_not_a_traceback(tmp_path: Path, damage: str) -> None:
    cached, computed_again = _zero_shot_cache(tmp_path)
    cached.write_text(damage)
    computed_again()


@pytest.mark.slow
@pytest.mark.parametrize("figures", [None, [], 0.5])
def test_a_zero_shot_cache_whose_figures_are_damaged_is_computed_again(
    tmp_path: Path, figures: object
) -> None:
    """A baseline.json whose key is whole but whose figures are gone or not an object (a list, a number)
    was taken as the cache, and the chain stopped in a KeyError or TypeError traceback; the figures are
    computed again and the file written whole, as for a torn cache."""
    cached, computed_again = _zero_shot_cache(tmp_path)
    data = json.loads(cached.read_text())
    data.pop("metrics")
    if figures is not None:
        data["metrics"] = figures
    cached.write_text(json.dumps(data))
    computed_again()


@pytest.mark.parametrize(
    "training",
    [
        "[]",
        "null",
        '{"metrics": 5}',
        '{"metrics": {"reranked/test": 88.0}}',
        '{"metrics": {"reranked/test": {"spearman": "high"}}}',
        '{"metrics": {"reranked/test": {"spearman": true}}}',
    ],
)
def test_a_training_record_with_no_test_figure_gives_none_not_a_traceback(
    tmp_path: Path, training: str
) -> None:
    """The chain's table shows each model's test Spearman from its training.json; one holding a list or
    null, or figures that are not objects of numbers, stopped the evaluation in a TypeError where a record
    without the figure gives none. Each gives none; a record's own figure is read."""
    (tmp_path / "training.json").write_text(training, encoding="utf-8")
    assert chain_run._test_spearman(tmp_path) is None
    figures = {"reranked/test": {"spearman": 88.0}, "after/test": {"spearman": 80.5}}
    (tmp_path / "training.json").write_text(json.dumps({"metrics": figures}), encoding="utf-8")
    assert (chain_run._test_spearman(tmp_path), chain_run._test_spearman(tmp_path, rerank=False)) == (
        88.0,
        80.5,
    )


class _ThreeLayers(torch.nn.Module):
    """A BERT-style model of three layers (paraphrase-MiniLM-L3-v2's count)."""

    def __init__(self) -> None:
        super().__init__()
        self.embeddings = torch.nn.Identity()
        self.encoder = torch.nn.Module()
        self.encoder.layer = torch.nn.ModuleList([torch.nn.Identity() for _ in range(3)])


class _Base:
    model = _ThreeLayers()
    device = torch.device("cpu")

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [[0] * 12 for _ in texts]


@pytest.mark.parametrize("freeze", [True, False])
def test_the_estimate_counts_the_layers_training_uses_with_fewer_layers_than_frozen_layers(
    tmp_path: Path, freeze: bool
) -> None:
    """``--frozen-layers 4`` on a three-layer model freezes two (the top one trains); with trained
    embeddings none. The estimate must count that, not 3 - 4 trained layers (a negative step cost gave
    "about 121179507 h more" for a 35-second run)."""
    pairs, corpus = make_data(tmp_path, train=20, validation=10, test=5)
    cfg = config(tmp_path, pairs, corpus, frozen_layers=4, cross_encoder_frozen_layers=6)
    cfg = cfg.with_(freeze_embeddings=freeze)
    work = chain_run.chain_work(cfg, _Base(), pd.read_csv(pairs, sep="\t"))
    assert work.layers == 3
    assert (work.frozen, work.cross_encoder_frozen) == ((2, 2) if freeze else (0, 0))
    parts = work.estimate(seconds_per_step=0.05)
    assert all(0 < s < 600 for s in parts.values()), parts


def test_the_estimate_of_a_chain_without_its_report_has_no_report_part(tmp_path: Path) -> None:
    """``--no-report``: the estimate line named a "report 0 s" part, of a report the run does not make."""
    pairs, corpus = make_data(tmp_path, train=20, validation=10, test=5)
    table = pd.read_csv(pairs, sep="\t")
    made = chain_run.chain_work(config(tmp_path, pairs, corpus), _Base(), table)
    assert "report" in made.estimate(seconds_per_step=0.05)
    work = chain_run.chain_work(config(tmp_path, pairs, corpus, report=False), _Base(), table)
    line = describe_eta(work.estimate(seconds_per_step=0.05))
    assert "report" not in line and line.startswith("estimated time on this machine: about"), line


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_the_estimate_counts_the_corpus_items_of_every_format(tmp_path: Path, suffix: str) -> None:
    """The report's share of the estimate counts the corpus's items: a CSV or JSONL corpus counted none,
    so the estimate left the report out."""
    pairs, corpus = make_data(tmp_path, train=20, validation=10, test=5)
    frame = pd.read_parquet(corpus)
    if suffix != ".parquet":
        corpus = corpus.with_suffix(suffix)
        frame.to_csv(corpus, index=False) if suffix == ".csv" else frame.to_json(
            corpus, orient="records", lines=True, force_ascii=False
        )
    work = chain_run.chain_work(config(tmp_path, pairs, corpus), _Base(), pd.read_csv(pairs, sep="\t"))
    assert work.corpus_items == pytest.approx(len(frame), abs=1)


class _KeptFigures:
    """A model store whose current model keeps its validation figures under ``key`` (no reranker)."""

    def __init__(self, folder: Path, key: str) -> None:
        self.folder, self.key = folder, key

    def current(self) -> Path:
        return self.folder

    def info(self, version: Path) -> dict[str, Any]:
        return {"validation": {self.key: {"spearman": 0.5}}}


def test_the_estimate_counts_the_pairs_as_training_reads_them(tmp_path: Path) -> None:
    """Three training pairs and two validation pairs are given again with "&#8226;" for "•" (other ids): two
    rows each as written, one pair each as the model reads them, trained and scored once. The estimate
    counted the rows (the bi-encoder's steps, the validation passes), and took the current model's figures,
    kept for the validation pairs counted once, for figures of other pairs, to be scored again."""
    pairs, corpus = make_data(tmp_path, train=20, validation=10, test=5)
    table = pd.read_csv(pairs, sep="\t")
    again = pd.concat(
        [table[table["split"] == "train"].head(3), table[table["split"] == "validation"].head(2)]
    )
    table.loc[again.index, "text_a"] = again["text_a"] + " •"
    again = again.assign(
        pair_id=again["pair_id"].astype(str) + "x",
        id_a=again["id_a"] + "x",
        text_a=again["text_a"] + " &#8226;",
    )
    written = pd.concat([table, again], ignore_index=True)
    written.to_csv(pairs, sep="\t", index=False)
    cfg = config(tmp_path, pairs, corpus)
    read = chain_run.load_inputs(cfg)
    assert (read["split"] == "train").sum() == 23  # the rows as written
    _, validation = chain_run.scored_pairs(cfg, read)
    assert len(validation) == 10
    store = _KeptFigures(tmp_path / "models" / "v0001", chain_run.figures_key(cfg, validation))
    work = chain_run.chain_work(cfg, _Base(), read, store)  # type: ignore[arg-type]
    assert (work.train_pairs, work.validation_pairs, work.test_pairs) == (20, 10, 5)
    assert work.incumbent_reranker is None  # its figures for these pairs are kept: nothing to score


class _TwelveLayers(torch.nn.Module):
    """A BERT-style model of twelve layers (multilingual-e5-small's count)."""

    def __init__(self) -> None:
        super().__init__()
        self.embeddings = torch.nn.Identity()
        self.encoder = torch.nn.Module()
        self.encoder.layer = torch.nn.ModuleList([torch.nn.Identity() for _ in range(12)])


class _Base12(_Base):
    model = _TwelveLayers()


@pytest.mark.parametrize(
    ("flags", "fp32", "frozen", "epochs"),
    [
        ("avx avx2 fma", {}, 4, (2, 3)),
        (
            "avx avx2 fma",
            {"fp32_epochs": 1, "fp32_cross_encoder_epochs": 1, "fp32_cross_encoder_frozen_layers": 6},
            6,
            (1, 1),
        ),
        (
            "avx2 avx512f avx512_bf16 amx_bf16",
            {"fp32_epochs": 1, "fp32_cross_encoder_frozen_layers": 6},
            4,
            (2, 3),
        ),
    ],
)
def test_the_estimate_counts_the_recipe_trained_on_this_cpu(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    flags: str,
    fp32: dict[str, int],
    frozen: int,
    epochs: tuple[int, int],
) -> None:
    """Every CPU trains the full recipe unless ``fp32_*`` options are given; where given, a CPU without bf16
    instructions takes them (a CPU with bf16 ignores them). The time estimate must count what training will
    run there, not the options' 4 layers and 2 and 3 epochs when the fp32 ones apply."""
    monkeypatch.setenv("NLSIM_CPU_FLAGS", flags)
    pairs, corpus = make_data(tmp_path, train=20, validation=10, test=5)
    cfg = config(tmp_path, pairs, corpus, epochs=2, cross_encoder_epochs=3, **fp32)
    work = chain_run.chain_work(cfg, _Base12(), pd.read_csv(pairs, sep="\t"))
    assert (work.layers, work.frozen, work.cross_encoder_frozen) == (12, 4, frozen)
    assert (work.epochs, work.cross_encoder_epochs) == epochs


class TrainingStopped(Exception):
    """Raised by the stand-in for fine-tuning: the chain stops where training would start."""


@pytest.mark.slow
def test_a_cold_chain_writes_the_zero_shot_report_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The report folder holds the zero-shot report, judged, when fine-tuning starts, and the chain said
    where it is and that it will be replaced; a training that fails leaves it in place."""
    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    seen: list[dict] = []

    def training(*args: object, **kwargs: object) -> None:
        seen.append(json.loads((tmp_path / "report" / "run.json").read_text()))
        raise TrainingStopped

    monkeypatch.setattr(chain_run, "finetune", training)
    with caplog.at_level(logging.INFO, logger="nlsim"), pytest.raises(TrainingStopped):
        run_pipeline(config(tmp_path, pairs, corpus))
    assert len(seen) == 1 and seen[0]["model_info"]["zero_shot"] is True
    assert seen[0]["judge"]["judged_pairs"] == 24
    page = tmp_path / "report" / "index.html"
    assert page.is_file() and "Zero-shot model." in page.read_text()
    said = caplog.text
    assert "first report ready in" in said and str(page) in said
    assert "zero-shot" in said and "will be replaced by the fine-tuned model's report" in said
    assert json.loads((tmp_path / "report" / "run.json").read_text()) == seen[0]  # left as it was


@pytest.mark.slow
def test_the_quality_check_before_the_report_is_timed_as_itself_not_as_fine_tuning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pipeline.json's seconds: a run that trains nothing records no fine-tuning time, and the quality check
    of the report's model is counted under its own name."""
    import time

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    version = tmp_path / "models" / "versions" / "v0001-ffffffff"
    figures = {"scorer": "cosine", "spearman": 50.0, "threshold": 0.5, "f1": 0.5}

    def checked(*args: object, **kwargs: object) -> dict:
        time.sleep(0.3)
        return {"model": "zero-shot", "written": []}

    monkeypatch.setattr(chain_run, "candidate_version", lambda *a, **k: (version, "f" * 64, False))
    monkeypatch.setattr(chain_run, "evaluate_both", lambda *a, **k: (figures, figures, "zero-shot"))
    monkeypatch.setattr(chain_run, "promote_stage", lambda *a, **k: {"promoted": False, "reason": "kept"})
    monkeypatch.setattr(chain_run, "quality_check_stage", checked)
    timings = run_pipeline(config(tmp_path, pairs, corpus, first_report=False)).record["timings_s"]
    assert "finetune" not in timings
    assert timings["quality-check"] >= 0.3
    written = json.loads((tmp_path / "report" / "pipeline.json").read_text())["timings_s"]
    assert written == timings


@pytest.mark.slow
def test_rerank_asked_of_a_cold_chain_writes_its_zero_shot_first_report_and_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``--rerank`` (the report rescores with the model's reranker) on a store with no promoted model: the
    first report is the zero-shot model's, which has no reranker, so it is made without one, and said; the
    chain goes on to train the model that will have one (it stopped there, telling the user to train one
    with nlsim finetune)."""
    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    monkeypatch.setattr(chain_run, "finetune", lambda *a, **k: (_ for _ in ()).throw(TrainingStopped()))
    with caplog.at_level(logging.INFO, logger="nlsim"), pytest.raises(TrainingStopped):
        run_pipeline(config(tmp_path, pairs, corpus, rerank=True))
    run = json.loads((tmp_path / "report" / "run.json").read_text())
    assert run["model_info"]["zero_shot"] is True
    assert "--rerank: no model is promoted in" in caplog.text and "has no reranker" in caplog.text


def test_rerank_with_no_reranker_is_refused_before_any_work() -> None:
    with pytest.raises(ConfigError, match="--rerank .*--no-reranker"):
        PipelineConfig.of(reranker=False, rerank=True)
    assert PipelineConfig.of(reranker=False, rerank=False).model.rerank is False


@pytest.mark.slow
def test_the_first_report_takes_away_the_record_of_the_report_it_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold chain (a store started over) into a folder that holds an earlier chain's report: once the
    zero-shot report replaces that report, the earlier chain's pipeline.json and pipeline.md, which name a
    fine-tuned model and its judgement, are gone with it, during the training and after a failed one; the
    user's own files stay."""
    from nlsim.io.ownership import claim_folder

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    out = tmp_path / "report"
    claim_folder(out, "report")
    earlier = {"decision": {"promoted": True, "current": "v0003-aaaaaaaa"}, "judge": {"f1": 0.9}}
    (out / "pipeline.json").write_text(json.dumps(earlier))
    (out / "pipeline.md").write_text("# nlsim pipeline\n\n| candidate v0003-aaaaaaaa | ... |\n")
    (out / "notes.txt").write_text("the desk's notes")
    seen: list[list[str]] = []

    def training(*args: object, **kwargs: object) -> None:
        seen.append(sorted(p.name for p in out.glob("pipeline.*")))
        raise TrainingStopped

    monkeypatch.setattr(chain_run, "finetune", training)
    with pytest.raises(TrainingStopped):
        run_pipeline(config(tmp_path, pairs, corpus))
    assert seen == [[]]
    assert not (out / "pipeline.json").exists() and not (out / "pipeline.md").exists()
    assert (out / "notes.txt").read_text() == "the desk's notes"
    assert json.loads((out / "run.json").read_text())["model_info"]["zero_shot"] is True


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags",
    [
        "avx avx2 fma",
        "avx avx2 fma avx512f avx512bw avx512_vnni",
        "avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16",
        "avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8",
    ],
)
def test_where_bf16_pays_the_first_report_embeds_on_the_checked_zero_shot_bf16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str
) -> None:
    """On a CPU with AMX-BF16 the zero-shot model's lossy paths are checked before the first report,
    torch-bf16 first, which the report then embeds its 1,000+ texts in; on a CPU with avx2 only, with
    VNNI and no bf16 (int8 alone would not repay its builds there), or with avx512_bf16 and no AMX (even
    a probe that finds bf16 the fastest: the check would cost more than it can save), nothing is checked
    and the report embeds in exact fp32."""
    from nlsim.encoders.planner import encoder_target
    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.lossy_verdict import load_quality_check
    from nlsim.inference.probe import save_probe

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_CPU_FLAGS", flags)
    monkeypatch.setenv("NLSIM_PROBE", "cached")
    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    more = stsb_sample(train=700, validation=0, test=0)
    texts = [t for t in dict.fromkeys([*more["text_a"], *more["text_b"]])]
    items = pd.read_parquet(corpus)
    extra = pd.DataFrame({"id": [f"x{i:04d}" for i in range(len(texts))], "title": texts, "source": "stsb"})
    pd.concat([items, extra], ignore_index=True).drop_duplicates("title").to_parquet(corpus)
    base = load_encoder(FAST_MODEL)
    rates = {"onnx-fp32": 100.0, "torch-fp32": 90.0, "torch-bf16": 400.0, "onnx-int8": 200.0}
    rates["torch-int8"] = 150.0
    for threads in {1, torch.get_num_threads()}:  # the chain's check's, and the report's
        save_probe(encoder_target(base).architecture(), threads, cpu_info(), rates, [])
    seen: list[dict] = []

    def training(*args: object, **kwargs: object) -> None:
        seen.append(json.loads((tmp_path / "report" / "run.json").read_text()))
        raise TrainingStopped

    monkeypatch.setattr(chain_run, "finetune", training)
    with pytest.raises(TrainingStopped):
        run_pipeline(config(tmp_path, pairs, corpus))
    record, _ = load_quality_check("encoder", base.fingerprint, base.path)
    info = seen[0]["model_info"]
    if "amx_bf16" in flags:
        paths = record["paths"]
        assert paths["torch-bf16"]["passed"] and "without timing the others" in paths["onnx-int8"]["verdict"]
        assert info["inference"]["path"] == "torch-bf16"
        assert info["inference"]["quality_check"].startswith("passed")
    else:
        assert record is None and info["precision"] == "fp32"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "probe", "options", "checked"),
    [
        ("avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16", "on", {}, True),
        ("avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16", "cached", {"backend": "torch"}, True),
        ("avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16", "off", {}, False),
        ("avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16", "on", {"backend": "onnx"}, False),
        ("avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16", "on", {"precision": "fp32"}, False),
        ("avx avx2 fma avx512f avx512_bf16", "on", {}, False),
    ],
)
def test_the_zero_shot_model_is_checked_first_only_where_the_report_could_take_bf16_untimed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str, probe: str, options: dict, checked: bool
) -> None:
    """Only a CPU with AMX-BF16, probes read and the report free to run torch-bf16 checks the zero-shot
    model before the first report: with probes off or an ONNX backend the report could not take bf16, and
    on a CPU with avx512_bf16 alone the check costs more than it can save."""
    monkeypatch.setenv("NLSIM_CPU_FLAGS", flags)
    monkeypatch.setenv("NLSIM_PROBE", probe)
    cfg = config(tmp_path, tmp_path / "pairs.tsv", tmp_path / "corpus.parquet", **options)
    assert chain_run.zero_shot_check_first(cfg, load_encoder(FAST_MODEL)) is checked


def test_no_first_report_when_asked_or_when_a_model_is_promoted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    seen: list[bool] = []

    def training(*args: object, **kwargs: object) -> None:
        seen.append((tmp_path / "report" / "index.html").exists())
        raise TrainingStopped

    monkeypatch.setattr(chain_run, "finetune", training)
    with pytest.raises(TrainingStopped):
        run_pipeline(config(tmp_path, pairs, corpus, first_report=False))
    assert seen == [False]
    store = ModelStore(tmp_path / "models")
    promoted = store.new_version_dir("c" * 64)
    promoted.mkdir(parents=True)
    store.register(promoted, {"fingerprint": promoted.name})  # only a registered version can be current
    store.promote(promoted, "a model trained before")
    assert chain_run.first_report(config(tmp_path, pairs, corpus), store) == {}
    assert not (tmp_path / "report" / "index.html").exists()


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_cold_chain_embeds_the_corpus_once_below_the_frozen_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, precision: str
) -> None:
    """Where the final report embeds in exact fp32 (a CPU with no lossy path), the fine-tuned model starts
    from the states the zero-shot model left after the frozen layers, takes the vectors fine-tuning gave
    its own texts, and its report is the one the whole model gives. A training asked to run in bf16 there
    hands on only its fp32 vectors (those of the texts an evaluation reads): the report is the same."""
    pairs, corpus = make_data(tmp_path, train=24, validation=24, test=8)
    items = pd.read_parquet(corpus)
    pair_texts = set(items["title"])  # every text of every split is an item
    more = stsb_sample(train=60, validation=0, test=0)
    others = [t for t in dict.fromkeys([*more["text_a"], *more["text_b"]]) if t not in pair_texts]
    extra = pd.DataFrame({"id": [f"x{i:04d}" for i in range(len(others))], "title": others, "source": "stsb"})
    pd.concat([items, extra], ignore_index=True).to_parquet(corpus)
    monkeypatch.setattr(chain_run, "lossy_paths_here", lambda device: (0, True))  # as on a CPU with avx2 only
    monkeypatch.setattr(chain_run, "decide", lambda *a, **k: (True, "promoted for the test"))
    monkeypatch.setenv("NLSIM_DEVICE", "cpu")
    cfg = config(tmp_path, pairs, corpus, cache=False, train_precision=precision)
    with caplog.at_level(logging.INFO, logger="nlsim"):
        result = run_pipeline(cfg)
    assert result.record["decision"]["promoted"] and result.report.summary["model_info"]["zero_shot"] is False
    said = re.search(
        r"report: (\d+) text\(s\) embedded from the states .*?; (\d+) taken as fine-tuning", caplog.text
    )
    assert said is not None and "after the 2 frozen lower layers" in caplog.text
    if precision == "fp32":  # fine-tuning embedded every split
        assert (int(said[1]), int(said[2])) == (len(others), len(pair_texts))
    else:  # its training texts no evaluation reads were embedded in bf16: the report embeds them itself
        assert int(said[1]) + int(said[2]) == len(others) + len(pair_texts) and int(said[1]) > len(others)
    judged = pd.read_csv(pairs, sep="\t").query("split != 'train'")  # the baseline embedded these
    baseline = len(set(judged["text_a"]) | set(judged["text_b"]))
    assert f"first report: {baseline} text(s) taken as the baseline embedded them" in caplog.text
    from nlsim.dedup.run import run_dedup

    reported = pd.read_parquet(tmp_path / "report" / "pairs.parquet")
    again = run_dedup(cfg.dedup_config(chain_run.CURRENT_MODEL)).report_dir  # nothing kept: the whole model
    plain = pd.read_parquet(Path(again) / "pairs.parquet")
    assert len(reported) and reported[["id_a", "id_b"]].equals(plain[["id_a", "id_b"]])
    np.testing.assert_allclose(reported["similarity"], plain["similarity"], atol=1e-5)


@pytest.mark.slow
def test_the_chains_page_says_what_ran_trained_or_reused_and_the_promotion_decision(tmp_path: Path) -> None:
    """pipeline.md says whether the candidate was trained by the run or reused, whether it was promoted and
    why, and which model made the report, as pipeline.json records them."""
    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    first = run_pipeline(config(tmp_path, pairs, corpus, first_report=False)).record
    page = (tmp_path / "report" / "pipeline.md").read_text()
    version = first["candidate"]["version"]
    assert f"candidate {version}: trained by this run" in page
    verdict = "promoted: " if first["decision"]["promoted"] else "not promoted: "
    assert f"- {verdict}{first['decision']['reason']}" in page
    second = run_pipeline(config(tmp_path, pairs, corpus)).record
    page = (tmp_path / "report" / "pipeline.md").read_text()
    assert not second["trained"] and f"candidate {version}: reused" in page
    assert "trained by this run" not in page and second["decision"]["reason"] in page
    made_with = f"the current model {version}" if first["decision"]["promoted"] else "zero-shot"
    assert f"- report made with {made_with}" in page


@pytest.mark.slow
def test_a_chain_that_runs_past_midnight_reports_on_the_day_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--corpus incoming/{date}.parquet`` with no ``--date``: the chain checked and read the day it started
    on, and its report, after the training, took the date again: past midnight the next day's file, missing
    (the trained model promoted, no report) or another day's items. One date now holds for the whole run."""
    import datetime as dt
    import shutil

    from nlsim.dedup.settings import InputSettings

    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    (tmp_path / "incoming").mkdir()
    shutil.copy(corpus, tmp_path / "incoming" / "2026-03-01.parquet")
    clock = {"today": dt.date(2026, 3, 1)}
    dated = InputSettings.run_date
    monkeypatch.setattr(InputSettings, "run_date", lambda self: dated(self) if self.date else clock["today"])
    train = chain_run.candidate_version

    def midnight_during_training(*args: object, **kwargs: object) -> object:
        done = train(*args, **kwargs)
        clock["today"] = dt.date(2026, 3, 2)
        return done

    monkeypatch.setattr(chain_run, "candidate_version", midnight_during_training)
    dated_corpus = tmp_path / "incoming" / "{date}.parquet"
    result = run_pipeline(config(tmp_path, pairs, dated_corpus, first_report=False))
    run = json.loads((tmp_path / "report" / "run.json").read_text())
    assert run["corpus"] == str(tmp_path / "incoming" / "2026-03-01.parquet")
    assert result.record["judge"]["judged_pairs"] > 0


@pytest.mark.slow
def test_the_base_model_named_otherwise_reuses_the_version_trained_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same base model (the same weights, tokenizer and settings: its fingerprint) named otherwise, by
    its full hub name or by a folder, is no change: the version trained from it is reused, not trained again
    as 'training settings changed: model'."""
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    first = run_pipeline(config(tmp_path, pairs, corpus, report=False)).record
    assert first["trained"]
    monkeypatch.setattr(chain_run, "finetune", lambda *a, **k: pytest.fail("trained again"))
    again = run_pipeline(
        config(tmp_path, pairs, corpus, report=False, base_model=f"sentence-transformers/{FAST_MODEL}")
    ).record
    assert not again["trained"] and again["candidate"]["version"] == first["candidate"]["version"]
    assert again["fingerprint"] == first["fingerprint"]


def _edit_a_score(pairs: Path) -> None:
    """An editor's change to the pair file: the first training pair's score."""
    table = pd.read_csv(pairs, sep="\t", keep_default_na=False)
    first = table.index[table["split"] == "train"][0]
    table.loc[first, "score"] = 1.0 - float(table.loc[first, "score"])
    table.to_csv(pairs, sep="\t", index=False)


@pytest.mark.slow
def test_a_pair_file_edited_after_the_first_report_stops_the_chain_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain reads the pairs at the start (its training fingerprint is made from them), and fine-tuning
    reads the file again after the first report: an edit in between stopped nothing, and the model was
    trained on other pairs than its fingerprint records. Now the chain stops, naming the file, before it
    trains: nothing is promoted and the first report is left as it was."""
    from nlsim.errors import StateError

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    real = chain_run.first_report

    def first_then_edit(*args: object, **kwargs: object) -> dict:
        written = real(*args, **kwargs)
        _edit_a_score(pairs)
        return written

    monkeypatch.setattr(chain_run, "first_report", first_then_edit)
    run = tmp_path / "report" / "run.json"
    with pytest.raises(StateError, match="changed during the run") as refused:
        run_pipeline(config(tmp_path, pairs, corpus))
    said = str(refused.value)
    assert str(pairs) in said and "nothing is promoted" in said and "keeps the report it had" in said
    assert ModelStore(tmp_path / "models").current() is None
    assert json.loads(run.read_text())["model_info"]["zero_shot"] is True
    assert not (tmp_path / "report" / "pipeline.json").exists()


@pytest.mark.slow
def test_a_pair_file_edited_during_training_is_not_promoted_and_leaves_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit after fine-tuning read the file (while it trains): the model was trained and evaluated on
    the pairs read at the start, but the report would be judged on the new ones. The chain stops before
    the promotion, naming the file; the store has no current model and the first report is left."""
    from nlsim.errors import StateError

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    real = chain_run.finetune

    def training_then_edit(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)
        _edit_a_score(pairs)
        return result

    monkeypatch.setattr(chain_run, "finetune", training_then_edit)
    run = tmp_path / "report" / "run.json"
    with pytest.raises(
        StateError, match=rf"{re.escape(str(pairs))} changed during the run.*nothing is promoted"
    ):
        run_pipeline(config(tmp_path, pairs, corpus))
    assert ModelStore(tmp_path / "models").current() is None
    assert json.loads(run.read_text())["model_info"]["zero_shot"] is True
    assert not (tmp_path / "report" / "pipeline.json").exists()


@pytest.mark.slow
def test_a_pair_file_edited_after_the_promotion_stops_the_report_and_says_what_was_promoted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit after the promotion: the report would be judged on other pairs than the model was
    evaluated on. The chain stops before the report, naming the file and the version it promoted (trained
    and evaluated on the pairs read at the start); the first report is left as it was."""
    from nlsim.errors import StateError

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    real = chain_run.promote_stage

    def promote_then_edit(*args: object, **kwargs: object) -> dict:
        decision = real(*args, **kwargs)
        _edit_a_score(pairs)
        return decision

    monkeypatch.setattr(chain_run, "promote_stage", promote_then_edit)
    monkeypatch.setattr(chain_run, "decide", lambda *a, **k: (True, "promoted for the test"))
    run = tmp_path / "report" / "run.json"
    with pytest.raises(StateError, match="changed during the run") as refused:
        run_pipeline(config(tmp_path, pairs, corpus))
    current = ModelStore(tmp_path / "models").current()
    assert current is not None and f"{current.name} was trained and evaluated" in str(refused.value)
    assert "keeps the report it had" in str(refused.value)
    assert json.loads(run.read_text())["model_info"]["zero_shot"] is True


def _overrule_a_training_pair(pairs: Path) -> Path:
    """An editor's overrule of the first training pair (``nlsim annotate merge --overrule``): the verdict
    store changes, the pair file does not. Returns the store."""
    from nlsim.clusters.constraints import pair_key
    from nlsim.clusters.verdicts import Verdict, Verdicts
    from nlsim.clusters.verdicts.overrule import overruling
    from nlsim.clusters.verdicts.pair_file import pair_rows
    from nlsim.clusters.verdicts.store import save_verdicts, store_path

    table = pd.read_csv(pairs, sep="\t", keep_default_na=False, dtype={"id_a": str, "id_b": str})
    first = table[table["split"] == "train"].iloc[0]
    row = pair_rows(table)[pair_key(first["id_a"], first["id_b"])]
    newer = Verdict(first["id_a"], first["id_b"], 0.0 if first["score"] >= 0.5 else 1.0, annotator="desk")
    save_verdicts(Verdicts.from_records([row.hashed(overruling(newer, None, row, pairs))]), store_path(pairs))
    return store_path(pairs)


@pytest.mark.slow
def test_a_verdict_overruled_during_training_is_not_promoted_and_leaves_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor overrules a training pair while the chain trains: the verdict store changes, the pair file
    does not. The model was trained on the score read at the start, and the report would have acted on the
    new verdict, with nothing in pipeline.json to tell. The chain stops before the promotion, naming the
    store, as it does for the pair file; the first report is left."""
    from nlsim.errors import StateError

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    real = chain_run.finetune
    store: list[Path] = []

    def training_then_overrule(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)
        store.append(_overrule_a_training_pair(pairs))
        return result

    monkeypatch.setattr(chain_run, "finetune", training_then_overrule)
    with pytest.raises(StateError, match="changed during the run") as refused:
        run_pipeline(config(tmp_path, pairs, corpus))
    said = str(refused.value)
    assert str(store[0]) in said and "nothing is promoted" in said and "keeps the report it had" in said
    assert ModelStore(tmp_path / "models").current() is None
    assert json.loads((tmp_path / "report" / "run.json").read_text())["model_info"]["zero_shot"] is True
    assert not (tmp_path / "report" / "pipeline.json").exists()


@pytest.mark.slow
def test_the_chain_record_names_the_verdict_store_it_read(tmp_path: Path) -> None:
    """pipeline.json and pipeline.md say which state of the editors' verdict store the chain trained and
    reported with (its SHA-256), or that there was none."""
    from nlsim.io.atomic import file_sha256

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    store = _overrule_a_training_pair(pairs)
    rec = run_pipeline(config(tmp_path, pairs, corpus, first_report=False)).record
    digest = file_sha256(store)
    assert rec["verdict_store"] == {"path": str(store), "sha256": digest}
    assert rec["pairs_sha256"] == file_sha256(pairs)
    written = json.loads((tmp_path / "report" / "pipeline.json").read_text())
    assert written["verdict_store"] == rec["verdict_store"]
    page = (tmp_path / "report" / "pipeline.md").read_text()
    assert f"editors' verdicts: {store} (SHA-256 {digest[:12]})" in page
    assert chain_run.chain_page({**rec, "verdict_store": {"path": str(store), "sha256": None}}, "", "").count(
        f"editors' verdicts: none ({store} does not exist)"
    )


@pytest.mark.slow
def test_a_report_made_without_its_reranker_gates_the_model_on_its_bi_encoder(tmp_path: Path) -> None:
    """``--no-rerank`` makes the report with the bi-encoder alone: the gate scored the candidate and the
    current model by their rerank scores all the same (kept from training, or in ``store.json``), so a
    model whose reranker beat the current one's was promoted for a report that never uses it. The gate
    now scores each as the report uses it, and keeps the two kinds of figures apart."""
    from nlsim.chain.promotion import score_model
    from nlsim.io.pairs import load_pairs

    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    cosine = run_pipeline(config(tmp_path, pairs, corpus, rerank=False, first_report=False)).record
    version = Path(cosine["candidate"]["path"])
    assert cosine["trained"] and (version / "reranker").is_dir()
    figures = cosine["candidate"]["validation"]
    assert figures["scorer"] == "cosine"
    validation = load_pairs(pairs).query("split == 'validation'")
    alone = score_model(version, validation, "none", 0.8, rerank=False)
    assert figures["spearman"] == pytest.approx(alone["spearman"])
    assert figures["threshold"] == pytest.approx(alone["threshold"])
    reranked = run_pipeline(config(tmp_path, pairs, corpus, report=False)).record
    assert not reranked["trained"] and reranked["candidate"]["validation"]["scorer"] == "reranker"


class _FakeBase:
    """A base model as the reuse check reads it: its fingerprint and where it trains."""

    fingerprint = "base-fp"

    def __init__(self, device: str) -> None:
        self.device = torch.device(device)


def _reused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    device: str,
    trained: dict[str, object],
    now: dict[str, object],
) -> bool:
    """Whether a chain with the settings ``now`` reuses a version registered with the settings ``trained``
    (the same pairs and base model) on ``device``, as its reuse check decides: else it starts training."""
    from nlsim.chain.fingerprint import training_fingerprint, training_settings
    from nlsim.io.pairs import load_pairs

    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    table = load_pairs(pairs)
    base = _FakeBase(device)
    before = config(tmp_path, pairs, corpus, report=False, **trained)
    settings = training_settings(before.finetune_config(None), base.device)
    fingerprint, parts = training_fingerprint(table, base.fingerprint, settings)
    store = ModelStore(before.model_store)
    store.claim()
    version = store.new_version_dir(fingerprint)
    version.mkdir(parents=True)
    store.register(version, {"fingerprint": fingerprint, "parts": parts})
    started: list[str] = []

    def training(*args: object, **kwargs: object) -> None:  # the training's plan, made as it starts
        started.append("finetune")
        raise TrainingStopped

    monkeypatch.setattr(chain_run, "chain_work", training)
    monkeypatch.setattr(chain_run, "load_version", lambda version: None)  # no model files in this store
    cfg = config(tmp_path, pairs, corpus, report=False, **now)
    try:
        found, kept, fresh = chain_run.candidate_version(cfg, store, chain_run.direct, base, table, "now")
    except TrainingStopped:
        assert started == ["finetune"]
        return False
    assert (found, kept, fresh, started) == (version, fingerprint, False, [])
    return True


@pytest.mark.parametrize(("device", "reused"), [("cpu", True), ("cuda", False)])
def test_a_setting_that_changes_nothing_where_the_model_trains_reuses_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: str, reused: bool
) -> None:
    """``--gpu-batch-size`` is the batch of a training on a GPU: on a CPU the same model is trained whatever
    it says, yet a weekly chain on a CPU given another one trained the whole model again ('training
    settings changed: gpu_batch_size'). There the version trained before is reused; on a GPU it is another
    model, trained."""
    trained, now = {"gpu_batch_size": 32}, {"gpu_batch_size": 64}
    assert _reused(tmp_path, monkeypatch, device, trained, now) is reused


@pytest.mark.parametrize(
    ("flags", "trained_with", "now", "reused"),
    [
        ("avx avx2 fma", "fp32", "auto", True),  # auto trains in fp32 there: the same model
        ("avx avx2 fma avx512f avx512bw avx512_bf16", "fp32", "auto", False),  # auto trains in bf16 there
        ("avx avx2 fma", "auto", "fp32", False),  # where the auto version was trained (in bf16?) is not kept
    ],
)
def test_train_precision_auto_reuses_a_version_asked_the_precision_it_trains_in_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str, trained_with: str, now: str, reused: bool
) -> None:
    """A version trained with --train-precision fp32, and a chain left at auto on a CPU without bf16
    instructions, where auto trains in fp32: the same model, yet it was trained again ('training settings
    changed: train_precision'). It is reused; where auto trains in bf16 it is another model. A version
    trained at auto is not taken for an explicit fp32: it may have been trained in bf16 elsewhere, and its
    fingerprint, the name of every version trained at the default, reads the setting as asked."""
    monkeypatch.setenv("NLSIM_CPU_FLAGS", flags)
    trained, asked = {"train_precision": trained_with}, {"train_precision": now}
    assert _reused(tmp_path, monkeypatch, "cpu", trained, asked) is reused


@pytest.mark.slow
def test_a_first_report_from_cached_embeddings_is_not_the_estimates_measure_of_embedding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate of the time left takes the zero-shot first report's seconds as the measure of how fast
    this machine embeds. A cold chain stopped during its training and run again (or run after a daily
    zero-shot report of the same corpus) made its first report from the embedding cache in a moment, and
    the estimate then said the evaluation, the quality check and the report would take next to nothing.
    A first report that embedded nothing is no such measure: the estimate goes by the training's rate."""
    from nlsim.chain.eta import ChainWork

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))  # an embedding cache of this test's own
    pairs, corpus = make_data(tmp_path, train=16, validation=24, test=8)
    measured: list[float | None] = []
    estimate = ChainWork.estimate

    def spy(self: ChainWork, *args: object, **kwargs: object) -> dict[str, float]:
        measured.append(kwargs.get("first_report_s"))  # type: ignore[arg-type]
        return estimate(self, *args, **kwargs)  # type: ignore[arg-type]

    def training(*args: object, on_rate: object = None, **kwargs: object) -> None:
        on_rate(0.05)  # type: ignore[operator]  # the rate after the warm-up: the estimate is said
        raise TrainingStopped  # stopped (Ctrl-C) during the training

    monkeypatch.setattr(ChainWork, "estimate", spy)
    monkeypatch.setattr(chain_run, "finetune", training)
    for _ in range(2):
        with pytest.raises(TrainingStopped):
            run_pipeline(config(tmp_path, pairs, corpus))
    first, again = measured
    assert first is not None and first > 0  # its first report embedded the corpus: a measure
    assert again is None  # the same report again, every vector from the cache: none


@pytest.mark.parametrize(
    ("split", "score", "said"),
    [
        ("validation", None, r"field 'split': no pairs in split 'validation' \(the file holds train: 8, "),
        ("train", None, r"field 'split': no pairs in split 'train'"),
        (
            None,
            "0.8 1.0",
            r"field 'score': all of the 8 pairs of split 'validation' are at or above level 0.8",
        ),
    ],
)
def test_pairs_fine_tuning_cannot_train_on_are_refused_before_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split: str | None, score: str | None, said: str
) -> None:
    """A pair file with no validation pairs, or with every validation pair on one side of the level, stopped
    the chain in its baseline with 'cosines and scores must be non-empty 1-d arrays of one length' or
    'level 0.8: need pairs both at/above and below it', naming neither the file nor the field, and one with no
    training pairs only once the zero-shot baseline was scored and calibrated. Each is refused as
    fine-tuning refuses it, by file and field, before the baseline."""
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=4)
    table = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    if split is not None:
        table = table[table["split"] != split]
    if score is not None:  # every validation pair at or above the level
        scores = score.split() * 4
        table.loc[table["split"] == "validation", "score"] = scores[
            : int((table["split"] == "validation").sum())
        ]
    table.to_csv(pairs, sep="\t", index=False)

    def started(*args: object, **kwargs: object) -> None:
        raise _Started

    monkeypatch.setattr(chain_run, "baseline_stage", started)
    with pytest.raises(InputError, match=rf"{re.escape(str(pairs))}: {said}"):
        run_pipeline(config(tmp_path, pairs, corpus, report=False))


def test_a_test_split_too_small_for_a_spearman_is_refused_before_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pair file of 2 test pairs: the chain scored and calibrated the zero-shot baseline, then its
    training refused the test split (a Spearman of 2 pairs is +1 or -1 whatever the model). It is refused
    as fine-tuning refuses it, by file and field, before the baseline."""
    pairs, corpus = make_data(tmp_path, train=8, validation=8, test=2)

    def started(*args: object, **kwargs: object) -> None:
        raise _Started

    monkeypatch.setattr(chain_run, "baseline_stage", started)
    said = r"field 'split': 2 pair\(s\) in split 'test'; Spearman needs at least 3 pairs"
    with pytest.raises(InputError, match=rf"{re.escape(str(pairs))}: {said}"):
        run_pipeline(config(tmp_path, pairs, corpus, report=False))


@pytest.mark.parametrize(
    ("again", "said"),
    [
        (
            ("台风来了", "台风登陆台湾", "1", "test"),
            r"row 50, field 'text_a': the same pair as row 49 is in split",
        ),
        (
            ("台风来了", "台风登陆台湾", "0", "train"),
            r"row 50, field 'score': the same pair as row 49 has score 0",
        ),
    ],
    ids=["in-test", "two-scores"],
)
def test_a_pair_that_training_refuses_as_the_model_reads_it_is_refused_before_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, again: tuple[str, ...], said: str
) -> None:
    """A training pair given again in Simplified characters, in test or with another score: fine-tuning,
    reading the texts converted to one script (``--convert tw2sp``), refuses the file, but the chain's check
    of its inputs compared them as written: it scored and calibrated the zero-shot baseline, minutes of
    work, before its training refused the pairs. The chain refuses them before the baseline, as training
    does."""
    pairs, corpus = make_data(tmp_path, train=24, validation=16, test=8)
    table = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    rows = [("q1", "train", "", "", "颱風來了", "颱風登陸臺灣", "1"), ("q2", again[3], "", "", *again[:3])]
    added = pd.DataFrame(rows, columns=["pair_id", "split", "id_a", "id_b", "text_a", "text_b", "score"])
    pd.concat([table, added]).to_csv(pairs, sep="\t", index=False)

    def started(*args: object, **kwargs: object) -> None:
        raise _Started

    monkeypatch.setattr(chain_run, "baseline_stage", started)
    with pytest.raises(InputError, match=rf"{re.escape(str(pairs))}: {said}"):
        run_pipeline(config(tmp_path, pairs, corpus, report=False, convert="tw2sp"))
    with pytest.raises(_Started):  # two pairs to a model that reads the texts as written
        run_pipeline(config(tmp_path, pairs, corpus, report=False, convert="none"))


def test_the_baseline_counts_a_validation_pair_given_in_two_scripts_once_as_training_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A validation pair given in Traditional characters and again in Simplified ones with one score is one
    pair to the model (``--convert tw2sp``): fine-tuning chooses its checkpoint on it once and ``nlsim
    evaluate`` counts it once, but the chain scored and calibrated the zero-shot baseline on both rows. The
    chain's figures count it once too."""
    pairs, corpus = make_data(tmp_path, train=24, validation=16, test=8)
    table = pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False)
    rows = [
        ("q1", "validation", "", "", "颱風來了", "颱風登陸臺灣", "1"),
        (
            "q2",
            "validation",
            "",
            "",
            "台风登陆台湾",
            "台风来了",
            "1",
        ),  # row 49's pair in Simplified characters
    ]
    added = pd.DataFrame(rows, columns=["pair_id", "split", "id_a", "id_b", "text_a", "text_b", "score"])
    pd.concat([table, added]).to_csv(pairs, sep="\t", index=False)
    scored: list[int] = []

    def started(cfg: object, store: object, base: object, read: pd.DataFrame) -> None:
        scored.append(int((read["split"] == "validation").sum()))
        raise _Started

    monkeypatch.setattr(chain_run, "baseline_stage", started)
    for convert, validation in (("tw2sp", 17), ("none", 18)):
        with pytest.raises(_Started):
            run_pipeline(config(tmp_path, pairs, corpus, report=False, convert=convert))
        assert scored[-1] == validation, convert


@pytest.mark.slow
def test_a_baseline_stopped_while_it_writes_leaves_no_cache_of_another_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zero-shot baseline writes its calibration, then its figures (``baseline.json``, the cache's key).
    A chain at another level stopped (Ctrl-C) between the two left the new calibration beside the old
    figures, and the next chain at the old level took the cache as sound: its figures said one threshold
    and the store's zero-shot calibration, which the zero-shot report and the daily runs use, held the
    other level's. The figures are gone before the calibration is written: the next chain computes both."""
    from nlsim.evaluation.calibration import load_calibration
    from nlsim.io.pairs import load_pairs

    pairs, corpus = make_data(tmp_path, train=8, validation=24, test=8)
    table = load_pairs(pairs)
    store = ModelStore(tmp_path / "models")
    store.claim()
    base = load_encoder(FAST_MODEL)
    at = {level: config(tmp_path, pairs, corpus, level=level) for level in (0.8, 0.9)}
    first = chain_run.baseline_stage(at[0.8], store, base, table).metrics
    saved = chain_run.save_calibration

    def stopped(cal: object, path: Path) -> None:
        saved(cal, path)
        raise KeyboardInterrupt  # Ctrl-C after the calibration, before the figures

    monkeypatch.setattr(chain_run, "save_calibration", stopped)
    with pytest.raises(KeyboardInterrupt):
        chain_run.baseline_stage(at[0.9], store, base, table)
    monkeypatch.setattr(chain_run, "save_calibration", saved)
    again = chain_run.baseline_stage(at[0.8], store, base, table).metrics
    kept = load_calibration(store.zero_shot_dir())
    assert kept.level == 0.8 and kept.threshold == pytest.approx(again["threshold"])
    assert again["threshold"] == pytest.approx(first["threshold"])


@pytest.mark.slow
def test_a_baseline_at_the_topic_level_leaves_no_topic_calibration_of_another_run(tmp_path: Path) -> None:
    """A baseline at a story level keeps the zero-shot topic calibration its report's topic groups read; a
    later one at the topic level (0.75) or below calibrates none, and took the earlier one as still the
    store's: the zero-shot report drew topic groups at a threshold of other pairs or another base model.
    It is removed, and a cache an earlier chain left so beside one is computed again."""
    from nlsim.evaluation.calibration import TOPIC_CALIBRATION_JSON
    from nlsim.io.pairs import load_pairs

    pairs, corpus = make_data(tmp_path, train=8, validation=24, test=8)
    table = load_pairs(pairs)
    store = ModelStore(tmp_path / "models")
    store.claim()
    base = load_encoder(FAST_MODEL)
    topic = store.zero_shot_dir() / TOPIC_CALIBRATION_JSON
    chain_run.baseline_stage(config(tmp_path, pairs, corpus, level=0.8), store, base, table)
    kept = topic.read_bytes()
    chain_run.baseline_stage(config(tmp_path, pairs, corpus, level=0.75), store, base, table)
    assert not topic.exists()
    topic.write_bytes(kept)  # as an earlier chain left it beside the cache of this level
    chain_run.baseline_stage(config(tmp_path, pairs, corpus, level=0.75), store, base, table)
    assert not topic.exists()


def test_a_topic_calibration_is_kept_only_above_the_topic_level(tmp_path: Path) -> None:
    """At the topic level the story threshold is the topic level's: no topic calibration is written there,
    and one an earlier run left is removed; above it, one is."""
    from types import SimpleNamespace

    from nlsim.training.validation import TOPIC_LEVEL

    base = SimpleNamespace(model_id="base", fingerprint="f" * 64)
    rng = np.random.default_rng(0)
    gold = np.repeat(np.linspace(0.0, 1.0, 6), 8)
    scores = gold + rng.normal(0, 0.05, len(gold))
    path = tmp_path / "topic_calibration.json"
    path.write_text("{}", encoding="utf-8")  # an earlier run's
    chain_run.save_topic_calibration(PipelineConfig.of(level=TOPIC_LEVEL), base, scores, gold, path)
    assert not path.exists()
    chain_run.save_topic_calibration(PipelineConfig.of(level=(TOPIC_LEVEL + 1) / 2), base, scores, gold, path)
    assert path.is_file()


def test_rerank_asked_with_a_promoted_model_keeps_its_reranker(tmp_path: Path) -> None:
    """``--rerank`` is set aside only for a zero-shot report (no model promoted): with a current model the
    report is made with its reranker."""
    store = ModelStore(tmp_path / "models")
    store.claim()
    cfg = PipelineConfig.of(rerank=True, model_store=str(store.root))
    assert chain_run.report_config(cfg, store).model.rerank is None
    version = store.new_version_dir("a" * 64)
    version.mkdir(parents=True)
    store.register(version, {"fingerprint": version.name})
    store.promote(version, "beats zero-shot")
    assert chain_run.report_config(cfg, store).model.rerank is True
