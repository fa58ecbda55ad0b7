"""Command-line options made from the settings records (nlsim/commands/options.py): the ends of a
threshold, the defaults shown in --help, which of two idle options is named, and values given in code."""

from __future__ import annotations

import argparse

import pytest

from nlsim.commands.options import add_config_options, config_from_args, threshold_arg
from nlsim.dedup.config import DedupConfig
from nlsim.errors import ConfigError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nlsim dedup")
    add_config_options(parser, DedupConfig)
    return parser


@pytest.mark.parametrize("value", ["-1", "1", "-1.0", "1.0"])
def test_a_threshold_at_either_end_of_its_range_is_taken(value: str) -> None:
    assert threshold_arg(value) == float(value)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1.0001", "-1.0001"])
def test_a_threshold_past_its_range_or_not_finite_is_refused(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be a number in \[-1, 1\]"):
        threshold_arg(value)


def test_the_help_shows_a_lists_default_as_it_is_typed_and_no_default_of_none() -> None:
    """``--text-fields`` shows its default as it would be typed (``title,description``), and an option
    without a default (``--quarantine``) shows no ``(default: None)``."""
    text = " ".join(_parser().format_help().split())
    assert "(default: title,description)" in text
    assert "(default: None)" not in text


def test_of_two_options_that_do_nothing_the_first_by_name_is_refused() -> None:
    """``--nlist`` and ``--nprobe`` with ``--index flat``: the refusal names --nlist, whichever comes first
    on the command line."""
    args = _parser().parse_args(
        ["--corpus", "c.csv", "--out", "o", "--index", "flat", "--nprobe", "8", "--nlist", "64"]
    )
    with pytest.raises(ConfigError, match="^--nlist does nothing with --index flat"):
        config_from_args(DedupConfig, args)


def test_a_value_given_in_code_stands_over_the_command_lines() -> None:
    args = _parser().parse_args(["--corpus", "c.csv", "--out", "o", "--k", "7"])
    config = config_from_args(DedupConfig, args, k=5, out="elsewhere")
    assert (config.search.k, config.report.out) == (5, "elsewhere")
    assert config_from_args(DedupConfig, args).search.k == 7


@pytest.mark.parametrize("flag", ["--gpu", "--cpu"])
def test_either_flag_of_a_pair_given_without_what_it_needs_is_refused_by_name(flag: str) -> None:
    """``--cpu`` is as much a choice as ``--gpu``: with ``--no-report`` (no search to run), either is refused
    by its own name."""
    from nlsim.chain.config import PipelineConfig

    parser = argparse.ArgumentParser(prog="nlsim pipeline")
    add_config_options(parser, PipelineConfig)
    args = parser.parse_args([flag, "--no-report"])
    with pytest.raises(ConfigError, match=f"^{flag} does nothing with --no-report"):
        config_from_args(PipelineConfig, args)
