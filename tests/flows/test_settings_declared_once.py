"""A setting is declared once, as a field of its concern's record, and the command line and the flows are
derived from it: a setting added to the neighbour search's record is an option of ``nlsim dedup`` and of
``nlsim pipeline`` and a parameter of the ``news-dedup`` and ``news-pipeline`` flows, and reaches the run."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

import pytest

import flows.dedup
import flows.pipeline
from nlsim.chain.config import PipelineConfig
from nlsim.cli import build_parser
from nlsim.commands.options import config_from_args
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.settings import SearchSettings
from nlsim.options import option


@dataclass(frozen=True, kw_only=True)
class ProbedSearch(SearchSettings):
    """The neighbour search's record with one setting more: the only place it is declared."""

    probe_budget: int = option(7, help="a setting declared in one place, for this test")


@pytest.fixture
def one_more_setting(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every configuration that composes the search record composes the one with ``probe_budget`` (and the
    flows are made again from them); undone afterwards."""
    composing = 0
    for config in (DedupConfig, PipelineConfig):
        for f in fields(config):
            if f.metadata.get("concern") is SearchSettings:
                monkeypatch.setattr(f, "metadata", MappingProxyType({**f.metadata, "concern": ProbedSearch}))
                composing += 1
    assert composing == 2, "the dedup run and the chain both compose the search record"
    importlib.reload(flows.dedup)
    importlib.reload(flows.pipeline)
    yield
    monkeypatch.undo()
    importlib.reload(flows.dedup)
    importlib.reload(flows.pipeline)


def _help(command: str) -> str:
    sub = next(
        a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and command in a.choices
    )
    return " ".join(sub.choices[command].format_help().split())


def test_a_new_setting_is_an_option_of_dedup_and_pipeline(one_more_setting: None) -> None:
    parser = build_parser()
    args = parser.parse_args(["dedup", "--corpus", "news.csv", "--out", "rep", "--probe-budget", "3"])
    assert config_from_args(DedupConfig, args).search.probe_budget == 3
    assert config_from_args(
        DedupConfig, parser.parse_args(["dedup", "--corpus", "c", "--out", "o"])
    ).search == (ProbedSearch(probe_budget=7))
    args = parser.parse_args(["pipeline", "--probe-budget", "4"])
    assert config_from_args(PipelineConfig, args).dedup_config("m").search.probe_budget == 4
    for command in ("dedup", "pipeline"):
        assert (
            "--probe-budget PROBE_BUDGET a setting declared in one place, for this test (default: 7)"
            in _help(command)
        )


class _Stop(Exception):
    """Raised by a stand-in run once it has seen the configuration a flow made."""


def test_a_new_setting_is_a_parameter_of_the_dedup_and_pipeline_flows(
    one_more_setting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for flow_ in (flows.dedup.news_dedup, flows.pipeline.news_pipeline):
        param = inspect.signature(flow_.fn).parameters["probe_budget"]
        assert param.default == 7
        schema = flow_.parameters.model_dump_for_openapi()["properties"]["probe_budget"]
        assert schema["default"] == 7 and "declared in one place" in schema["description"]

    seen: list[Any] = []

    def stand_in(config: Any, **_: Any) -> Any:
        seen.append(config)
        raise _Stop

    monkeypatch.setattr(flows.dedup, "dedup_run", stand_in)
    monkeypatch.setattr(flows.pipeline, "run_pipeline", stand_in)
    with pytest.raises(_Stop):
        flows.dedup.news_dedup.fn(corpus="news.csv", out="rep", probe_budget=5)
    with pytest.raises(_Stop):
        flows.pipeline.news_pipeline.fn(probe_budget=6)
    assert seen[0].search.probe_budget == 5
    assert seen[1].dedup_config("m").search.probe_budget == 6


def test_without_it_the_flows_and_the_command_line_are_as_before() -> None:
    """The fixture leaves nothing behind (and the throwaway setting is nowhere else)."""
    assert "probe_budget" not in inspect.signature(flows.dedup.news_dedup.fn).parameters
    assert "probe_budget" not in inspect.signature(flows.pipeline.news_pipeline.fn).parameters
    assert "--probe-budget" not in _help("dedup")
