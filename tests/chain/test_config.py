"""The chain's configuration is composed of the fine-tuning and report records: a setting of those records
is an option of the chain with its record's default and help (unless the chain sets it itself), and reaches
the run it belongs to."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlsim.chain.config import SET_BY_THE_CHAIN, PipelineConfig
from nlsim.dedup.config import DedupConfig
from nlsim.options import Option, options_of
from nlsim.training.config import FinetuneConfig

COMPOSED = {"bi_encoder": FinetuneConfig, "cross_encoder": FinetuneConfig, "recipe": FinetuneConfig} | {
    name: DedupConfig for name in ("input", "model", "search", "clustering", "report")
}
"""The records the chain takes from each run's configuration."""
CHAIN_DEFAULTS = {"corpus", "out", "judge_split", "threads", "date"}
"""The settings the chain gives its own default or help (the report's corpus and folder, the threads of
training and reports, the date, which makes no daily run there)."""


def _owned() -> list[tuple[Option, type]]:
    """The settings of the composed records, as their run's configuration declares them."""
    return [
        (o, owner)
        for owner in (FinetuneConfig, DedupConfig)
        for o in options_of(owner)
        if o.path[0] in COMPOSED
    ]


def _set_by_the_chain(opt: Option) -> bool:
    return opt.name in SET_BY_THE_CHAIN.get(opt.path[0], ())


def test_every_setting_of_a_composed_record_is_an_option_of_the_chain() -> None:
    mine = {o.name: o for o in options_of(PipelineConfig)}
    for theirs, _ in _owned():
        if _set_by_the_chain(theirs):
            assert theirs.name not in mine or mine[theirs.name].path != theirs.path, theirs.name
            continue
        assert mine[theirs.name].path == theirs.path, theirs.name
        assert mine[theirs.name].flags == theirs.flags
        if theirs.name not in CHAIN_DEFAULTS:
            assert (mine[theirs.name].default, mine[theirs.name].help) == (theirs.default, theirs.help)


def _other(value: object) -> object:
    """A valid value other than ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2
    if isinstance(value, tuple):
        return value[:1]
    return {
        "cosent": "mse",
        "auto": "fp32",
        "components": "support",
        "support": "components",
        "earliest": "central",
        "order": "min-cut",
        "validation": "test",
        "UTC": "Asia/Taipei",
        "data/thucnews.parquet": "data/bbc.parquet",
        "reports/thucnews": "reports/x",
    }[value]


NONE_TO = {
    "window_hours": 48.0,
    "use_gpu": False,
    "nlist": 64,
    "nprobe": 8,
    "fp32_epochs": 1,
    "fp32_cross_encoder_epochs": 1,
    "fp32_cross_encoder_frozen_layers": 6,
    "threads": 2,
    "quarantine": "bad.csv",
    "date": "2026-11-22",
    "rerank": False,
    "topic_threshold": 0.6,
    "large_cluster_share": 0.5,
}
"""A value for the settings whose default is None."""
WITH = {"date": {"corpus": "incoming/{date}.parquet"}}
"""What a setting needs beside it to do something (a run's date: a corpus path with the day in it)."""


@pytest.mark.parametrize(
    ("name", "owner"),
    [(o.name, owner) for o, owner in _owned() if not any(o.name in s for s in SET_BY_THE_CHAIN.values())],
)
def test_a_composed_option_reaches_its_run(name: str, owner: type) -> None:
    default = {o.name: o.default for o in options_of(PipelineConfig)}[name]
    value = NONE_TO[name] if default is None else _other(default)
    cfg = PipelineConfig.of(**{name: value}, **WITH.get(name, {}))
    made = cfg.finetune_config("m") if owner is FinetuneConfig else cfg.dedup_config("m")
    assert made.parameters()[name] == value


def test_the_chain_sets_the_report_model_its_pairs_and_its_conversion() -> None:
    cfg = PipelineConfig.of(pairs="p.tsv", model_store="store", convert="none", base_model="base", level=0.75)
    report = cfg.dedup_config("models/versions/v0001").parameters()
    assert (report["model"], report["model_store"], report["convert"]) == (
        "models/versions/v0001",
        "store",
        "none",
    )
    assert report["judge_pairs"] == report["annotated_pairs"] == "p.tsv"
    assert (report["threshold"], report["calibration"], report["state"]) == (None, None, None)
    training = cfg.finetune_config("models/versions/v0002").parameters()
    assert (training["pairs"], training["conversion"], training["model"]) == ("p.tsv", "none", "base")
    assert (training["out"], training["calibrate_level"]) == ("models/versions/v0002", 0.75)


def test_the_chain_declares_only_what_it_adds() -> None:
    """The chain's own settings are those no run has (or has otherwise: its pairs, store, base model,
    conversion and level)."""
    own = {o.name for o in options_of(PipelineConfig) if len(o.path) == 1}
    assert own == {
        "pairs",
        "model_store",
        "base_model",
        "convert",
        "level",
        "force_train",
        "report",
        "first_report",
    }


def test_the_report_settings_that_do_nothing_without_the_report_need_it() -> None:
    """The report's input, model, search, clusters and folder need the report (``--no-report`` refuses
    them); training's settings do not."""
    needs = {o.name: (o.within, o.needs) for o in options_of(PipelineConfig)}
    for name in ("precision", "use_gpu", "k", "cluster_support", "topic_threshold", "cluster_cut"):
        assert "report" in needs[name], name
    for name in ("corpus", "quarantine", "timezone", "out", "near_misses", "progress", "first_report"):
        assert "report" in needs[name], name
    for name in ("epochs", "cross_encoder_epochs", "threads", "pairs", "model_store", "level"):
        assert "report" not in needs[name], name
    assert needs["topic_threshold"] == ("report", "topics")  # the topic groups' own need as well


NO_REPORT_REFUSED = {
    "--corpus": ["--corpus", "news.csv"],
    "--text-fields": ["--text-fields", "title"],
    "--quarantine": ["--quarantine", "bad.csv"],
    "--date": ["--date", "2024-05-01"],
    "--timezone": ["--timezone", "Asia/Taipei"],
    "--out": ["--out", "reports/x"],
    "--near-misses": ["--near-misses", "0"],
    "--judge-split": ["--judge-split", "test"],
    "--no-progress": ["--no-progress"],
    "--no-first-report": ["--no-first-report"],
}
"""Each setting of the report's input and folder, and the first report's, as given on the command line."""


@pytest.mark.parametrize("flag", sorted(NO_REPORT_REFUSED))
def test_a_report_option_given_with_no_report_is_refused_by_name(flag: str) -> None:
    """``nlsim pipeline --no-report --out reports/x`` wrote nothing there (no report, no pipeline.json)
    and said nothing; every setting of the report is refused with ``--no-report``, as its model's are."""
    import argparse

    from nlsim.commands.options import add_config_options, config_from_args
    from nlsim.errors import ConfigError

    parser = argparse.ArgumentParser()
    add_config_options(parser, PipelineConfig)
    args = parser.parse_args(["--no-report", *NO_REPORT_REFUSED[flag]])
    with pytest.raises(ConfigError, match=f"^{flag} does nothing with --no-report: leave one of them out"):
        config_from_args(PipelineConfig, args)
    dated = ["--corpus", "news/{date}.csv"] if flag == "--date" else []  # --date's own need
    config_from_args(PipelineConfig, parser.parse_args([*dated, *NO_REPORT_REFUSED[flag]]))  # with the report


def test_a_chain_without_its_report_does_not_ask_for_the_corpus(tmp_path: Path) -> None:
    from nlsim.chain.run import check_chain_paths
    from nlsim.errors import InputError

    (tmp_path / "pairs.tsv").write_text("pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\n")
    missing = str(tmp_path / "no-corpus.parquet")
    store = str(tmp_path / "models")
    check_chain_paths(PipelineConfig.of(pairs=str(tmp_path / "pairs.tsv"), corpus=missing, model_store=store,
                                        report=False))  # fmt: skip
    with pytest.raises(InputError, match="no-corpus.parquet"):
        check_chain_paths(
            PipelineConfig.of(pairs=str(tmp_path / "pairs.tsv"), corpus=missing, model_store=store)
        )


def test_the_chains_threads_bound_its_reports_too() -> None:
    """``--threads N`` on a machine the chain shares bounds its reports (the first, zero-shot one and the
    fine-tuned model's), not only its training: left out, the report's torch, ONNX Runtime and FAISS take
    every core."""
    assert PipelineConfig.of(threads=1).dedup_config("m").model.threads == 1
    assert PipelineConfig.of().dedup_config("m").model.threads is None
    assert PipelineConfig.of(threads=1).finetune_config("m").recipe.threads == 1
