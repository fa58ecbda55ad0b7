"""A run's settings by concern: every option lands in one record, and the stages read records, not the
whole configuration."""

from __future__ import annotations

import inspect
import typing
from dataclasses import fields

import pytest

from nlsim.dedup import stages
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.settings import DedupSettings, StateSettings

BASE = {"corpus": "in/{date}.parquet", "out": "rep", "state": "st", "date": "2026-11-20"}
"""A daily run, so that the state's options count, with a dated corpus, so that --date counts."""

OTHER = {
    "corpus": "other/{date}.parquet",
    "out": "rep2",
    "model": "paraphrase-MiniLM-L3-v2",
    "model_store": "store2",
    "convert": "none",
    "threshold": 0.5,
    "calibration": "cal.json",
    "text_fields": ("title",),
    "k": 5,
    "window_hours": 48.0,
    "index_kind": "flat",
    "nlist": 64,
    "nprobe": 8,
    "use_gpu": False,
    "representative": "central",
    "cluster_rule": "components",
    "cluster_support": 0.6,
    "large_cluster": 4,
    "large_cluster_margin": 0.03,
    "large_cluster_share": 0.7,
    "cluster_cut": "min-cut",
    "topics": False,
    "topic_threshold": 0.7,
    "topic_rule": "components",
    "topic_support": 0.55,
    "series_veto": False,
    "quarantine": "bad.csv",
    "batch_size": 8,
    "threads": 2,
    "backend": "torch",
    "precision": "fp32",
    "cache": False,
    "rerank": True,
    "state": "st2",
    "retention_days": 7.0,
    "as_of": "2026-11-01",
    "date": "2026-11-21",
    "timezone": "Asia/Taipei",
    "rebuild_state": True,
    "accept_model_drop": True,
    "near_misses": 5,
    "judge_pairs": "judged.tsv",
    "judge_split": "all",
    "annotated_pairs": "pairs.tsv",
    "progress": False,
    "save_index": False,
}


def test_every_option_has_a_value_to_try() -> None:
    """A new option of DedupConfig must be given a place in the settings (and a value here)."""
    assert set(OTHER) == {f.name for f in fields(DedupConfig)}


@pytest.mark.parametrize("name", sorted(OTHER))
def test_each_option_lands_in_the_settings(name: str) -> None:
    base = DedupConfig(**BASE).settings()
    changed = DedupConfig(**{**BASE, name: OTHER[name]}).settings()
    assert changed != base, f"--{name.replace('_', '-')} reaches no stage: add it to a record of settings.py"


def test_a_batch_run_has_no_state_and_a_daily_run_its_own() -> None:
    batch = DedupConfig(corpus="c.parquet", out="rep", retention_days=7).settings()
    assert batch.state is None and not batch.daily
    daily = DedupConfig(corpus="c.parquet", out="rep", state="st", retention_days=0).settings()
    assert daily.state == StateSettings(folder="st", retention_days=None, as_of=None, rebuild=False)
    assert daily.daily


def test_the_corpus_is_named_with_its_date_filled_in() -> None:
    s = DedupConfig(corpus="in/{date}.parquet", out="rep", date="2026-11-22").settings()
    assert s.input.corpus == "in/2026-11-22.parquet"
    assert s.input.corpus_named.endswith("in/2026-11-22.parquet") and s.input.corpus_named.startswith("/")


def test_the_settings_cannot_be_changed_by_a_stage() -> None:
    s = DedupConfig(corpus="c.parquet", out="rep").settings()
    with pytest.raises(AttributeError):
        s.search.k = 3  # type: ignore[misc]


def test_no_stage_takes_the_whole_configuration() -> None:
    """The stages read the record of their concern; only nlsim.dedup.run knows the whole configuration
    (and which kind of run it is)."""
    public = [
        f
        for name, f in inspect.getmembers(stages, inspect.isfunction)
        if f.__module__ == stages.__name__ and not name.startswith("_")
    ]
    assert len(public) > 15
    for f in public:
        hints = typing.get_type_hints(f)
        kinds = {hints[p] for p in inspect.signature(f).parameters if p in hints}
        assert DedupConfig not in kinds, f"stages.{f.__name__} takes the whole DedupConfig"
    whole = [f.__name__ for f in public if DedupSettings in typing.get_type_hints(f).values()]
    # the few that need two concerns at once (the window's identity: model and text fields)
    assert set(whole) <= {"open_batch_window", "open_daily_window", "commit", "report"}
