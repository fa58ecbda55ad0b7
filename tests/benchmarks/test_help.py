"""Every benchmark's ``--help`` says what it does in whole sentences, lists each of its commands with a line,
and says what each option is and its default: options listed bare (``bench_search.py --k``,
``bench_rerank.py --paths``), commands listed without a line (``bench_gpu.py embed``) and a description cut
mid-sentence (``bench_cluster_rule.py``: "rules that need support inside the cluster,") were met before.
Each help is also formatted as ``--help`` prints it, the commands' own included."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

import pytest

from tests.help_text import parser_of, problems

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

SCRIPTS = sorted(
    p.name
    for p in BENCH.glob("*.py")
    if "__main__" in p.read_text(encoding="utf-8") and p.name != "_common.py"
)


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_help_says_what_the_benchmark_and_each_option_do(
    script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [str(BENCH / script), "--help"])
    parser = parser_of(lambda: runpy.run_path(str(BENCH / script), run_name="__main__"), monkeypatch)
    assert not problems(parser, script)
    for shown in _with_commands(parser):  # as --help prints them: a stray % in a help line fails here
        assert shown.format_help()


def _with_commands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and the parser of each command it lists, and of theirs."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _with_commands(child)
    return found


def test_an_option_without_a_help_line_or_its_default_is_found() -> None:
    parser = argparse.ArgumentParser(description="Time a run, on the machine it runs on")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--tag", default="", help="a suffix of the results' file names")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("embed", description="Embed.")
    assert problems(parser, "bench.py") == [
        "bench.py: the description does not open with a whole sentence: "
        "'Time a run, on the machine it runs on'",
        "bench.py --k: no help line",
        "bench.py --tag: its default is not said",
        "bench.py embed: listed without a help line",
    ]
