"""The README stays a README: at most 250 lines, its first 60 hold the two commands and lead to the corpus
schema, the quick start with one's own corpus and the scheduling, and the nlsim command lines it gives a
newcomer to copy are ones nlsim accepts. Measurements and experiments belong in docs/ (measurements.md,
experiments.md), with a short table of headline figures in the README."""

from __future__ import annotations

import argparse
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from nlsim.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
MAX_LINES = 250
TOP = 60


def lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def section(title: str) -> str:
    """The text of the README's section ``## title`` up to the next one."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"the README has no section '## {title}'"
    return match[1]


def command_parser(command: str) -> argparse.ArgumentParser:
    """The parser of ``nlsim COMMAND``."""
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices[command]


def nlsim_commands(text: str) -> list[list[str]]:
    """Every ``nlsim`` command line of a text (in code blocks or code spans), as its arguments."""
    out = []
    for line in re.findall(r"(?:^|`)(?:\.venv/bin/)?nlsim ([^`#\n]+)", text, re.MULTILINE):
        out.append(shlex.split(line))
    return out


def test_the_readme_has_at_most_250_lines() -> None:
    assert len(lines()) <= MAX_LINES, f"README.md has {len(lines())} lines; details go to docs/"


def test_the_first_60_lines_hold_the_two_commands_and_lead_to_the_schema_quick_start_and_scheduling() -> None:
    top = "\n".join(lines()[:TOP])
    assert "bash run.sh" in top and "bash test.sh" in top
    for anchor in ("#the-corpus-schema", "#your-own-corpus-in-ten-lines", "#schedule-it"):
        assert f"]({anchor})" in top, anchor


@pytest.mark.parametrize("title", ["Your own corpus in ten lines", "Schedule it"])
def test_the_command_lines_a_newcomer_copies_are_accepted(title: str) -> None:
    commands = nlsim_commands(section(title))
    assert commands, f"no nlsim command in '## {title}'"
    parser = build_parser()
    for argv in commands:
        parser.parse_args(argv)  # a renamed or removed option exits with status 2


def test_the_command_line_section_names_every_nlsim_command() -> None:
    """`nlsim models` (list, promote, rollback) was missing from the README's command lines, while
    `nlsim --help` lists it beside the others."""
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    block = re.search(r"^```\n(.*?)^```", section("Command line"), re.MULTILINE | re.DOTALL)
    assert block, "the README's command line section has no code block"
    named = {argv[0] for argv in nlsim_commands(block[1]) if argv}
    assert set(commands.choices) - named == set()


def test_a_command_line_nlsim_does_not_accept_is_found() -> None:
    (argv,) = nlsim_commands("```\n.venv/bin/nlsim dedup --corpus my.csv --out r --modle current\n```")
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)


def test_the_readme_names_the_pythons_pyproject_requires() -> None:
    """It said Python 3.11 alone, where pyproject.toml (and scripts/setup.sh) take 3.11 or 3.12."""
    spec = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", spec["requires-python"]).groups()
    versions = [f"3.{minor}" for minor in range(int(low), int(high))]
    assert f"Python {' or '.join(versions)}" in section("The two commands")


@pytest.mark.parametrize("command", ["dedup", "pipeline"])
def test_the_options_a_flow_lacks_of_its_command_are_the_ones_the_readme_names(command: str) -> None:
    """The README said `python -m flows.X` takes the same options as `nlsim X` but `--json`; `-q`/`--quiet`
    and `--log-level` are not the flows' either: a scheduled command line with them exits with status 2."""
    from flows.dedup import add_dedup_options
    from flows.pipeline import add_options

    flow = argparse.ArgumentParser(add_help=False)
    (add_dedup_options if command == "dedup" else add_options)(flow)
    options = {o for a in command_parser(command)._actions for o in a.option_strings} - {"-h", "--help"}
    lacking = options - {o for a in flow._actions for o in a.option_strings}
    said = re.search(r"Each flow also runs without a server:(.*?)\)\.", section("Command line"), re.DOTALL)
    assert said, "the README no longer says how a flow runs without a server"
    assert lacking and {o for o in lacking if f"`{o}`" not in said[1]} == set()


def test_every_figure_of_the_measured_table_names_its_command_or_its_page() -> None:
    """Three rows of the README's headline figures (the warm rerun, the zero-shot scores, the search over
    1,000,000 vectors) named neither the command that measured them nor where docs/ gives it."""
    rows = [line for line in section("Measured").splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) > 1
    source = re.compile(r"\]\(docs/[^)]+\)|`(?:bash |python |nlsim |benchmarks/)[^`]+`")
    assert [row.split(" | ")[0] for row in rows[1:] if not source.search(row)] == []


def test_every_row_of_the_measured_table_says_when_or_by_what_it_was_measured() -> None:
    """The warm rerun was 'measured on' 'AMD EPYC, before batch 4' and the zero-shot scores on 'batch 5
    merged': a reader could not tell when, nor find the run; each row's last cell gives a date or the
    benchmark script that measures it."""
    rows = [line for line in section("Measured").splitlines() if line.startswith("| ") and "---" not in line]
    cells = [row.strip(" |").split(" | ") for row in rows[1:]]
    when = re.compile(r"\b20\d\d-\d\d-\d\d\b|`benchmarks/[^`]+`")
    assert [row[0] for row in cells if not when.search(row[-1])] == []


def test_the_readme_counts_no_tests() -> None:
    """It said the quick subset was "the 2,490 of 3,289 tests", a count of an earlier commit that each new
    test makes wrong; the dated counts are docs/measurements.md's."""
    assert re.findall(r"[\d,]+ (?:of [\d,]+ )?tests\b", section("The tests")) == []


def test_the_readme_names_every_kind_of_model_that_model_takes() -> None:
    """`--model` takes a Hugging Face hub name too (`nlsim dedup --help` says so); the README's list of
    models ended at a local folder, and called e5 the only weights "available here" (where it was written)."""
    from nlsim.encoders.registry import MODELS

    models = re.search(r"^Models \(`--model`\):(.*?)\n\n", section("Command line"), re.MULTILINE | re.DOTALL)
    assert models, "the README no longer lists the models"
    (model,) = [a for a in command_parser("dedup")._actions if "--model" in a.option_strings]
    kinds = [f"`{name}`" for name in MODELS]
    kinds += ["`current`", "fine-tuned model folder", "local Hugging Face folder"]
    kinds += ["hub name"] if "hub name" in str(model.help) else []
    assert [kind for kind in kinds if kind not in " ".join(models[1].split())] == []
    assert "here" not in models[1].split()


def test_every_picture_of_the_readme_says_the_commands_that_made_it() -> None:
    """The README's two screenshots said neither the report they show nor the script that took them, so no
    reader could make them again for their own corpus."""
    text = lines()
    pictures = [n for n, line in enumerate(text) if line.startswith("![")]
    assert pictures
    made = re.compile(r"`python (?:-m nlsim .*`, then `python )?scripts/\w+\.py [^`]+`")
    assert [text[n] for n in pictures if not made.search(text[n + 1])] == []


def test_the_readme_names_every_band_of_the_purity_by_cluster_size() -> None:
    """It gave the bands as 2, 3-4, 5-9, 10+ and 5+; `purity_by_size` (run.json, `nlsim judge --json`) has a
    3+ band too."""
    from nlsim.evaluation.judge import purity_by_size

    bands = [band.band for band in purity_by_size([], [])]
    chain = section("The chain (`nlsim pipeline`, flow `news-pipeline`)")
    said = re.search(r"inside clusters of (.*?) items that are the same story", chain)
    assert said and re.split(r", | and ", said[1]) == bands


def test_the_readme_names_each_faiss_gpu_extra_with_the_python_its_gpu_build_needs() -> None:
    """It said `'.[gpu-cu13]'` puts the FAISS indexes on the GPUs with CUDA 13; the extra holds FAISS's GPU
    build on Python 3.12 alone and installs the CPU build on 3.11, which `run.sh` takes too, so a run there
    searched on the CPU. `'.[gpu-cu12]'`, the GPU build a CUDA 13 machine runs on either Python, was not
    named at all."""
    spec = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))
    text = " ".join(section("Command line").split())
    for extra, requirements in spec["project"]["optional-dependencies"].items():
        gpu = [r for r in requirements if r.startswith("faiss-gpu")]
        if not gpu:
            continue
        named = text.find(f"'.[{extra}]'")
        assert named >= 0, f"the README does not name the extra {extra} (FAISS's GPU build)"
        for requirement in gpu:
            only = re.search(r"python_version == '(3\.\d+)'", requirement)
            if only:
                said = text[named : named + 160]
                assert f"Python {only[1]}" in said, f"'.[{extra}]' is the GPU build on Python {only[1]} only"


def test_the_readme_says_nlsim_device_places_the_models_and_cpu_the_faiss_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It said `NLSIM_DEVICE=cpu` "keeps everything on the CPU", right after saying FAISS's GPU build puts
    the indexes on the GPUs; the variable places the models alone, and the index still goes on the GPUs
    FAISS sees unless the run is given `--cpu`."""
    from nlsim.search import index

    monkeypatch.setenv("NLSIM_DEVICE", "cpu")
    monkeypatch.setattr(index, "gpu_count", lambda: 2)
    assert index.resolved_kind("auto", 200_000) == "flat"  # on the GPUs: flat up to GPU_FLAT_MAX
    assert index.resolved_kind("auto", 200_000, use_gpu=False) == "ivf"  # --cpu: the CPU's size rule
    text = " ".join(section("Command line").split())
    said = re.search(r"`NLSIM_DEVICE=cpu` ([^)]*)\)", text)
    assert said, "the README no longer says what NLSIM_DEVICE=cpu does"
    assert "everything" not in said[1] and "`--cpu`" in said[1]
