"""The typed run record: ``run.json`` is the record, the clusters table's columns are its schema's, and a
pairs frame's scores are normalised in one place."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.clusters.table import CLUSTERS_SCHEMA, batch_clusters, empty_table
from nlsim.dedup.config import DedupConfig
from nlsim.report.files import pairs_table, verify_report, write_report
from nlsim.report.record import ClusterChanges, Counts, ModelInfo, ModelSwitch, RunRecord
from nlsim.report.scores import with_scores
from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus


@pytest.mark.slow
def test_run_json_reads_back_as_the_record_it_was_written_from(tmp_path: Path) -> None:
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    enc = HashEncoder()
    for n, day in enumerate(days):
        cfg = DedupConfig.of(
            corpus=day,
            out=tmp_path / "out",
            model="hash",
            convert="none",
            threshold=0.7 if n < 2 else 0.75,  # the last day changes the threshold: a model switch
            cache=False,
            progress=False,
        )
        result = run_daily(cfg, tmp_path / "state", retention_days=None, encoder=enc)
    run = json.loads((tmp_path / "out" / "latest" / "run.json").read_text())
    record = RunRecord.from_dict(run)
    assert isinstance(result.stats, RunRecord) and isinstance(result.stats.model_info, ModelInfo)
    assert isinstance(record.model_switch, ModelSwitch) and "threshold" in record.model_switch.changed
    assert record.model_switch.reembedded == 0 and not record.model_switch.reembed
    assert {k: v for k, v in run.items() if k != "files"} == record.to_dict()
    assert record.to_dict()["counts"] == result.summary["counts"]


@pytest.mark.slow
def test_a_run_returns_the_record_its_run_json_holds_counted_once(tmp_path: Path) -> None:
    """The run record is counted once, by the run: the report writes it as it is, and the result a run
    returns is the record its ``run.json`` holds, a batch run's and a daily run's alike. ``run.json`` had
    no ``report`` timing (it is written inside that stage) while ``--json`` and the state's run records
    had one: it holds the stage's time until ``run.json`` is written now, the result the whole stage's."""
    from nlsim.dedup.run import run_dedup

    corpus = story_corpus()
    corpus.to_parquet(tmp_path / "all.parquet", index=False)
    days = split_days(corpus, tmp_path / "in", ["2005-03-02", "2005-03-03"])
    config = DedupConfig.of(
        corpus=tmp_path / "all.parquet", out=tmp_path / "batch", model="hash", convert="none",
        threshold=0.7, cache=False, progress=False, cluster_rule="components",
    )  # fmt: skip
    results = [(run_dedup(config, encoder=HashEncoder()), tmp_path / "batch")]
    for day in days:
        daily = config.with_(corpus=str(day), out=str(tmp_path / "daily"))
        results.append(
            (run_daily(daily, tmp_path / "state", retention_days=None, encoder=HashEncoder()), None)
        )
    results[-1] = (results[-1][0], tmp_path / "daily" / "latest")
    for result, folder in (results[0], results[-1]):
        assert folder is not None
        written = RunRecord.from_dict(json.loads((folder / "run.json").read_text()))
        assert written.counts.pairs == len(result.pairs) > 0 and written.finished_at is not None
        assert replace(result.stats, timings_s=written.timings_s) == written
        assert set(result.stats.timings_s) == set(written.timings_s)
        assert 0 < written.timings_s["report"] <= result.stats.timings_s["report"]


def test_the_report_writes_the_runs_counts_as_they_are(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "id": ["x", "y"],
            "title": ["X", "Y"],
            "source": ["s", "s"],
            "published_at": pd.to_datetime([None, None], utc=True),
        }
    )
    raw = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.9]})
    labels, clusters = batch_clusters(frame, raw)
    record = RunRecord(model="m", counts=Counts(items_in=2, pairs=1, clusters=1, clustered_items=2))
    write_report(tmp_path, pairs_table(frame, raw, labels), clusters, record, frame=frame)
    run = verify_report(tmp_path)
    assert run["counts"] == {"items_in": 2, "pairs": 1, "clusters": 1, "clustered_items": 2}
    assert RunRecord.from_dict(run).counts == record.counts
    # a record another nlsim wrote: counts it does not know are left out, those it lacks are not counted
    old = RunRecord.from_dict({"counts": {"items_in": 3, "retired_count": 1}, "extra": {"merged_into": {}}})
    assert old.counts == Counts(items_in=3) and old.counts.pairs is None and old.extra == ClusterChanges()


def test_the_clusters_table_has_the_columns_of_its_schema() -> None:
    assert list(empty_table().columns) == CLUSTERS_SCHEMA.names
    frame = pd.DataFrame(
        {
            "id": ["x", "y"],
            "title": ["X", "Y"],
            "source": ["s", "s"],
            "published_at": pd.to_datetime([None, None], utc=True),
        }
    )
    _, clusters = batch_clusters(frame, pd.DataFrame({"a": [0], "b": [1], "similarity": [0.9]}))
    assert list(clusters.columns) == CLUSTERS_SCHEMA.names


def test_scores_of_a_pairs_frame_without_and_with_a_reranker() -> None:
    plain = with_scores(pd.DataFrame({"a": [0, 1], "b": [1, 2], "similarity": [0.9, 0.8]}))
    assert plain["cosine"].tolist() == plain["similarity"].tolist()
    assert plain["cross_encoder"].isna().all() and plain["similarity"].dtype == np.float32
    reranked = with_scores(
        pd.DataFrame(
            {
                "a": [0, 1],
                "b": [1, 2],
                "similarity": [0.7, 0.6],
                "cosine": [0.9, 0.8],
                "cross_encoder": pd.Series([0.5, None], dtype=object),
            }
        )
    )
    assert reranked["cosine"].tolist() == np.float32([0.9, 0.8]).tolist()
    assert reranked["cross_encoder"].iloc[0] == np.float32(0.5) and np.isnan(
        reranked["cross_encoder"].iloc[1]
    )


def test_run_json_keeps_the_near_miss_limit_and_an_older_one_reads_without_it(tmp_path: Path) -> None:
    """A run's page and summary read how many near misses were asked for (``--near-misses``) from its record:
    ``run.json`` keeps it, and a ``run.json`` written before it was kept reads as not known."""
    from nlsim.dedup.run import run_dedup

    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    config = DedupConfig.of(
        corpus=tmp_path / "all.parquet", out=tmp_path / "out", model="hash", convert="none",
        threshold=0.7, cache=False, progress=False, near_misses=0,
    )  # fmt: skip
    result = run_dedup(config, encoder=HashEncoder())
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["near_miss_limit"] == 0 == result.stats.near_miss_limit and run["counts"]["near_misses"] == 0
    assert "none asked for" in (tmp_path / "out" / "index.html").read_text()
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "- near misses: none asked for (`--near-misses 0`)" in summary
    del run["near_miss_limit"]
    assert RunRecord.from_dict(run).near_miss_limit is None


@pytest.mark.parametrize(
    "training",
    [
        "[]",
        "null",
        "5",
        '{"metrics": [1]}',
        '{"metrics": {"after/test": 88.2}}',
        '{"metrics": {}, "n_train": "many", "seconds": [1], "editor_labels": 5}',
    ],
)
def test_a_training_json_nlsim_did_not_write_gives_the_model_card_no_figures(
    training: str, tmp_path: Path
) -> None:
    """A model folder's training.json gives the report's model card its figures and training facts; a
    folder of another tool's may hold a file of that name that is no such record. A JSON list, null or a
    number there stopped the run with "AttributeError: 'list' object has no attribute 'get'", and figures
    or facts of another kind crashed the page as it was written. What is not of the kind nlsim writes is
    left out of the card, as an unreadable file is; what is, is kept."""
    from nlsim.models.choice import model_summary
    from nlsim.report.record import ModelCard, TrainingFacts

    (tmp_path / "training.json").write_text(training, encoding="utf-8")
    card = model_summary(tmp_path, None)
    assert card.metrics in (None, {}) and card.spearman("after/test") is None
    assert card.trained in (None, TrainingFacts())
    (tmp_path / "training.json").write_text(
        json.dumps({"metrics": {"after/test": {"spearman": 88.2}}, "n_train": 12, "seconds": "slow"}),
        encoding="utf-8",
    )
    card = model_summary(tmp_path, None)
    assert card == ModelCard({"after/test": {"spearman": 88.2}}, TrainingFacts(n_train=12))


@pytest.mark.parametrize(
    "labels",
    [{"merged": 5}, {"merged": {"train": "many"}}, {"overruled": [1]}, {"from_page": {"train": True}}],
)
def test_editor_labels_of_another_kind_in_training_json_are_left_out_of_the_card(
    labels: dict, tmp_path: Path
) -> None:
    """The card's line on the editors' labels reads ``editor_labels`` as counts by split; a hand-edited or
    foreign training.json holding another kind there (``{"merged": 5}``) stopped the page with
    "AttributeError: 'int' object has no attribute 'get'". Such labels are left out of the card, the
    other facts kept, and the page's line says nothing of them."""
    from nlsim.models.choice import model_summary
    from nlsim.report.review import editor_labels_text

    (tmp_path / "training.json").write_text(json.dumps({"n_train": 12, "editor_labels": labels}), "utf-8")
    card = model_summary(tmp_path, None)
    assert card.trained is not None and card.trained.n_train == 12
    assert card.trained.editor_labels is None
    assert editor_labels_text(card.trained.editor_labels) == ""
    good = {"merged": {"train": 3}, "from_page": {}, "overruled": {"train": 1}}
    (tmp_path / "training.json").write_text(json.dumps({"n_train": 12, "editor_labels": good}), "utf-8")
    assert model_summary(tmp_path, None).trained.editor_labels == good


def test_every_part_of_a_record_reads_back_from_run_json_as_it_was_written() -> None:
    """A record with each part set, some to an empty value, reads back from its ``run.json`` form equal: the
    model card's empty metrics and its learning curve, the calibration, an empty inference path, when the
    store's model was promoted, the editors' cluster changes and the spreadsheet changes."""
    from nlsim.evaluation.calibration import Calibration
    from nlsim.report.record import ClusterChange, EditorsRecord, ModelCard
    from nlsim.report.spreadsheet import TextChange

    info = ModelInfo(
        requested="current",
        version="v0002-bb",
        promoted_at="2026-03-02T10:00:00+00:00",
        model_id="m",
        card=ModelCard(metrics={}, store={"created": "2026-03-01"}, learning_curve="/models/m/curve.png"),
        threshold_calibration=Calibration(0.8, 0.5, 0.9, 0.8, 0.85, 40, 20, created="2026-03-01"),
        inference={},
    )
    editors = EditorsRecord(source="p.csv", cluster_changes=[ClusterChange("a", "b", 1.0, "joined", ["c-1"])])
    record = RunRecord(
        model_info=info,
        editors=editors,
        finished_at="2026-03-03T00:00:00+00:00",
        spreadsheet_changes=[TextChange("a", "title", "formula", ("pairs.csv",))],
    )
    written = json.loads(json.dumps(record.to_dict(), default=str))
    assert written["model_info"]["promoted_at"] == "2026-03-02T10:00:00+00:00"
    assert RunRecord.from_dict(written) == record


def test_run_json_holds_what_a_run_made_and_only_that() -> None:
    """``run.json``: no ``version`` for a model not from the store, ``dissolved`` only when a cluster was,
    no ``finished_at`` nor ``judge`` before the report is written (then after the headline figures), the
    quarantined rows as 0 when none were counted, every stage in ``elapsed_s`` and an empty model record as
    an empty object."""
    record = RunRecord(model="m", timings_s={"load": 1.0, "report": 2.0})
    d = record.to_dict()
    assert d["model_info"] == {} and d["quarantined"] == 0 and d["elapsed_s"] == 3.0
    assert not {"finished_at", "judge", "spreadsheet_changes"} & set(d)
    assert d["extra"] == {"merged_into": {}}
    assert "version" not in ModelInfo(requested="m", version="v1").as_dict()
    done = list(replace(record, finished_at="2026-03-03T00:00:00+00:00").to_dict())
    assert done.index("finished_at") > done.index("elapsed_s")


def test_a_records_derived_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's name is the one asked for before the encoder's id; a store entry without ``created``
    has no creation time; a support rule's large floor is kept to six decimals; a switch's zero-shot before
    is the earlier model's; a stage run twice adds its times; the record takes the log's messages."""
    from nlsim.clusters.rules import SharedSupport
    from nlsim.report.record import ModelCard, RunLog, StoryRule

    assert RunRecord(model="asked", model_info=ModelInfo(model_id="enc")).model_name == "asked"
    assert ModelCard(store={"version": "v1"}).created is None
    rule = StoryRule.of(SharedSupport(min_share=0.4, large=5, large_floor=0.9412341), "order")
    assert rule.large_floor == 0.941234
    switch = ModelSwitch("a", "b").with_versions(ModelInfo(zero_shot=True), ModelInfo(zero_shot=False))
    assert (switch.from_zero_shot, switch.to_zero_shot) == (True, False)
    clock = iter([0.0, 1.0, 10.0, 12.0])  # two runs of one stage: 1 s, then 2 s
    monkeypatch.setattr("nlsim.report.record.time.perf_counter", lambda: next(clock))
    log = RunLog()
    for _ in range(2):
        with log.stage("load"):
            pass
    log.messages.append("note")
    timed = RunRecord().timed(log)
    assert timed.timings_s == {"load": 3.0} and timed.messages == ["note"]
