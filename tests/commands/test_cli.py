"""The command line as a user meets it, through ``python -m nlsim`` (:func:`tests.command.nlsim`):
defaults in ``--help``, ``--quiet`` / ``--log-level``, ``dedup --json``, exit status 1 for a failed run and
2 for a wrong command, one line and no traceback for an expected failure (an unwritable ``--out``
included), and progress that stays line-oriented in a log (no carriage returns)."""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import json
import lzma
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from nlsim import progress
from nlsim.io.model_store import ModelStore
from tests import command
from tests.incremental_helpers import FAST_MODEL

ROOT = Path(__file__).resolve().parents[2]


def nlsim(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m nlsim ARGS`` from the checkout's root, the environment as a user's shell leaves it."""
    return command.nlsim(*args, cwd=ROOT, timeout=600, plain=True, **env)


def one_error_line(proc: subprocess.CompletedProcess[str], command: str) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(f"nlsim {command}: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "news.csv"
    pd.DataFrame(
        {
            "id": ["1", "2", "3", "4"],
            "title": ["Floods hit the north", "Floods hit the north!", "Election results", "Stocks fall"],
            "source": ["AP", "AFP", "AP", "X"],
            "published_at": ["2024-01-01T10:00Z", "2024-01-01T11:00Z", "2024-01-02T10:00Z", ""],
        }
    ).to_csv(path, index=False)
    return path


def test_help_shows_defaults_and_logging_options() -> None:
    top = nlsim("--help")
    assert top.returncode == 0 and "--quiet" in top.stdout and "--log-level" in top.stdout
    dedup = nlsim("dedup", "--help")
    assert dedup.returncode == 0
    text = " ".join(dedup.stdout.split())
    for shown in ("(default: 10)", "(default: tw2sp)", "(default: multilingual-e5-small)", "--json"):
        assert shown in text, shown


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser of ``nlsim`` by its command line (``nlsim``, ``nlsim dedup``, ``nlsim annotate draw``)."""
    from nlsim.cli import build_parser

    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        found[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}")

    walk(build_parser(), "nlsim")
    return found


def _commands_of(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def _help_texts(parser: argparse.ArgumentParser) -> list[str]:
    """The texts of a parser's --help: its description, epilog, each group's and each option's help."""
    texts = [parser.description or "", parser.epilog or ""]
    texts += [group.description or "" for group in parser._action_groups]
    texts += [a.help for a in parser._actions if a.help and a.help != argparse.SUPPRESS]
    for commands in _commands_of(parser):
        texts += [c.help or "" for c in commands._choices_actions]
    return texts


def _shown(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)


def test_every_option_has_a_help_line_naming_its_default() -> None:
    """The README says `nlsim COMMAND --help` lists every option with its default: every option has a help
    line (`annotate draw --seed`, `calibrate --threads` and `evaluate --max-length` had none), and one that
    takes a value and may be left out says its default, in words where it has none (`--window-hours`,
    `finetune --train-size`, `--silver-text-field` said nothing of it), a default of 0 too (0 == False hid
    `--seed 0`); a default stated as a value is the option's real one (`embed --max-length` said 256)."""
    silent, missing, wrong = [], [], []
    for name, parser in _parsers().items():
        for action in parser._actions:
            if not action.option_strings or isinstance(
                action, argparse._HelpAction | argparse._VersionAction
            ):
                continue
            if action.help == argparse.SUPPRESS:  # refused by name, listed nowhere (pipeline --model)
                continue
            flag, text = f"{name} {action.option_strings[0]}", (action.help or "").strip()
            if not text:
                silent.append(flag)
                continue
            if action.nargs == 0 or action.required:  # a flag, or an option that must be given
                continue
            if "default" not in text.lower():
                missing.append(flag)
            stated = re.search(r"\(default:? ([^\s;:)]+)[);:]", text)
            if stated and action.default not in (None, argparse.SUPPRESS):
                if stated[1] != _shown(action.default):
                    wrong.append(f"{flag}: says {stated[1]}, is {_shown(action.default)}")
    assert not silent, silent
    assert not missing, missing
    assert not wrong, wrong


def test_every_command_opens_with_a_one_line_summary_and_is_listed_with_one() -> None:
    """`nlsim annotate --help`, `nlsim learning-curve --help` and `nlsim models list --help` had no
    description at all, and `nlsim pipeline --help` opened with a 300-character line: each command's help
    now opens with one line (at most 100 characters, a sentence) saying what it does, and each command is
    listed with its help line in its parent's list."""
    short, unlisted = [], []
    for name, parser in _parsers().items():
        first = (parser.description or "").strip().split("\n\n")[0]
        if not first or "\n" in first or len(first) > 100 or not first.endswith("."):
            short.append(f"{name}: {first[:120]!r}")
        for commands in _commands_of(parser):
            listed = {c.dest: (c.help or "").strip() for c in commands._choices_actions}
            unlisted += [f"{name} {sub}" for sub in commands.choices if not listed.get(sub)]
    assert not short, short
    assert not unlisted, unlisted


NLSIM_NAMED = re.compile(r"nlsim((?: [a-z][a-z-]*)+) *$")
"""A clause that names another command line (`nlsim dedup --state`): its options are that command's."""


def named_options_not_defined(parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """Every `--option` a parser's help texts name that it does not define: an option of that parser or of
    a command below it (`nlsim models` names `--reason` of its actions), or of the nlsim command named just
    before it in the same clause (`... (nlsim dedup --state)`, `` `nlsim dedup --calibration` ``)."""
    defined = {name: set(p._option_string_actions) for name, p in parsers.items()}
    found = []
    for name, parser in parsers.items():
        own = set().union(*(flags for other, flags in defined.items() if f"{other} ".startswith(f"{name} ")))
        for text in _help_texts(parser):
            for mention in re.finditer(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
                clause = re.split(r"[(;`]|\. ", text[: mention.start()])[-1]
                before = re.sub(r"--[a-z][a-z0-9-]*(?: [A-Z0-9_.]+)? *", "", clause)  # its options given
                named = NLSIM_NAMED.search(before.strip() + " ")
                where = f"nlsim{named[1]}".strip() if named else name
                if mention[0] not in (defined.get(where) if named else own):
                    found.append(f"{name}: {mention[0]} (of {where}) in {text[:80]!r}")
    return found


def test_every_option_a_help_text_names_is_one_of_that_command() -> None:
    """`nlsim pipeline --help` spoke of `--state` and `--threshold`, which pipeline does not take: an option
    a help text names is one of that command (or of a command below it), or of the nlsim command it names
    (`nlsim dedup --calibration` in calibrate's)."""
    assert not named_options_not_defined(_parsers())


def test_a_help_text_naming_an_option_the_command_lacks_is_found() -> None:
    parsers = _parsers()
    pipeline = argparse.ArgumentParser(prog="nlsim pipeline", description="Run the chain. Reads --state.")
    pipeline.add_argument("--corpus", help="the day's file, as `nlsim dedup --corpus` reads it")
    pipeline.add_argument("--date", help="fills {date} (nlsim dedup --state); as nlsim dedup --no-such does")
    found = named_options_not_defined({**parsers, "nlsim pipeline": pipeline})
    assert sorted(f.split(" in ")[0] for f in found) == [
        "nlsim pipeline: --no-such (of nlsim dedup)",
        "nlsim pipeline: --state (of nlsim pipeline)",
    ]


@pytest.mark.slow
def test_usage_errors_exit_2(corpus: Path, tmp_path: Path) -> None:
    proc = nlsim("dedup", "--corpus", str(corpus))  # --out missing: argparse
    assert proc.returncode == 2 and "usage: nlsim dedup" in proc.stderr and "Traceback" not in proc.stderr
    proc = nlsim("dedup", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--k", "ten")
    assert proc.returncode == 2 and "invalid int value" in proc.stderr
    proc = nlsim("no-such-command")
    assert proc.returncode == 2
    # an impossible combination: no threshold for a model without a calibration
    proc = nlsim("dedup", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--model", FAST_MODEL)
    assert proc.returncode == 2 and "no threshold" in one_error_line(proc, "dedup")


@pytest.mark.slow
def test_runtime_failures_exit_1_in_one_line(corpus: Path, tmp_path: Path) -> None:
    base = ["dedup", "--model", FAST_MODEL, "--threshold", "0.9", "--convert", "none"]
    proc = nlsim(*base, "--corpus", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 1 and "missing.csv" in one_error_line(proc, "dedup")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,title\n1,Floods\n2,\n")
    proc = nlsim(*base, "--corpus", str(bad), "--out", str(tmp_path / "o"))
    assert proc.returncode == 1 and "row 2" in one_error_line(proc, "dedup")
    # an --out that cannot be written: under a regular file ...
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    proc = nlsim(*base, "--corpus", str(corpus), "--out", str(blocker / "report"))
    assert proc.returncode == 1 and "cannot be written" in one_error_line(proc, "dedup")
    # ... and a folder that cannot be made: /proc refuses everyone (root too); a read-only folder others
    locked = Path("/proc/nlsim-report")
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
    proc = nlsim(*base, "--corpus", str(corpus), "--out", str(locked / "report"))
    assert proc.returncode == 1 and "cannot be written" in one_error_line(proc, "dedup")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "buffered"),
    [
        (["models", "list", "--model-store", "STORE"], False),
        (["models", "list", "--json", "--model-store", "STORE"], True),
        (["--version"], True),
    ],
)
def test_a_reader_that_closed_the_pipe_ends_the_command_quietly(
    tmp_path: Path, args: list[str], buffered: bool
) -> None:
    """``nlsim models list | head -1``: the reader went away, as ``head`` does; the command ends as a Unix
    tool does, nothing on stderr and exit status 141 (128 + SIGPIPE). A print that failed at once
    (``PYTHONUNBUFFERED``) said ``nlsim models: error: Broken pipe``; output Python wrote at exit (argparse's
    ``--version`` too) ended in ``Exception ignored ... BrokenPipeError`` and status 120."""
    store = ModelStore(tmp_path / "models")
    store.claim()  # an empty store: its list is two lines
    env = command.command_env(plain=True, NLSIM_PROGRESS="off")
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    argv = ["-m", "nlsim", *(str(store.root) if a == "STORE" else a for a in args)]
    proc = command.into_a_closed_pipe(argv, tmp_path, env)
    assert proc.stderr == "" and proc.returncode == 141, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("home", "words"),
    [
        (
            "/proc/nlsim-home",
            "/proc/nlsim-home: No such file or directory (under nlsim's home /proc/nlsim-home",
        ),
        (
            "/proc/nlsim-a/home",
            "/proc/nlsim-a: No such file or directory (making nlsim's home /proc/nlsim-a/home",
        ),
    ],
)
def test_a_home_that_cannot_be_made_is_named_as_nlsims_home(
    corpus: Path, tmp_path: Path, home: str, words: str
) -> None:
    """``NLSIM_HOME=/proc/nlsim-home`` (a folder nobody can make, root included) said only
    "/proc/nlsim-home: No such file or directory", not that it was nlsim's home nor how to choose another;
    ``NLSIM_HOME=/proc/nlsim-a/home`` still did: the folder that failed was one above the home, made for
    it."""
    out = tmp_path / "o"
    args = ("dedup", "--corpus", str(corpus), "--out", str(out), "--model", FAST_MODEL, "--threshold", "0.9")
    proc = nlsim(*args, NLSIM_HOME=home)
    line = one_error_line(proc, "dedup")
    assert proc.returncode == 1 and words in line, line
    assert line.endswith("NLSIM_HOME names another)"), line
    assert not out.exists()


def _failing_on(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command run by ``nlsim.cli.main`` fails at once with a PermissionError on ``path``."""
    from nlsim import cli

    def fail(args: argparse.Namespace) -> int:
        raise PermissionError(13, "Permission denied", path)

    build = cli.build_parser

    def parser() -> argparse.ArgumentParser:
        p = build()
        parse = p.parse_args
        p.parse_args = lambda argv=None: argparse.Namespace(**{**vars(parse(argv)), "func": fail})  # type: ignore[method-assign]
        return p

    monkeypatch.setattr(cli, "build_parser", parser)


@pytest.mark.parametrize("home", ["../home", "{tmp}/sub/../home"])
def test_a_home_given_with_dots_is_named_as_nlsims_home(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``NLSIM_HOME=../home`` (or a path with ``..`` in it): a file under it got no word of nlsim's home, the
    error's path being made whole (``/x/home/models``) and the home's not (``/x/sub/../home``)."""
    from nlsim import cli

    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    monkeypatch.setenv("NLSIM_HOME", home.format(tmp=tmp_path))
    _failing_on(f"{home.format(tmp=tmp_path)}/models/e5", monkeypatch)
    assert cli.main(["judge", "--report", "r", "--pairs", "p.tsv"]) == 1
    assert "under nlsim's home" in capsys.readouterr().err


def test_a_file_the_command_line_names_is_not_said_to_be_nlsims_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``NLSIM_HOME=.`` and ``--out report``: a report file that could not be written was said to be under
    nlsim's home, "where converted models and caches are kept; NLSIM_HOME names another", which it is not:
    the command line names it, and another NLSIM_HOME would change nothing."""
    from nlsim import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NLSIM_HOME", ".")
    _failing_on("report/clusters.csv", monkeypatch)
    args = ["dedup", "--corpus", "news.csv", "--out", "report", "--model", FAST_MODEL, "--threshold", "0.9"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "report/clusters.csv: Permission denied" in err and "nlsim's home" not in err, err
    _failing_on("onnx/e5/model.onnx", monkeypatch)  # nlsim's own file there still is
    assert cli.main(args) == 1
    assert "under nlsim's home" in capsys.readouterr().err


@pytest.mark.slow
def test_dedup_json_quiet_and_log_level(corpus: Path, tmp_path: Path) -> None:
    args = ["dedup", "--corpus", str(corpus), "--model", FAST_MODEL, "--threshold", "0.9"]
    args += ["--convert", "none"]
    proc = nlsim(*args, "--out", str(tmp_path / "a"), "--json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1  # stdout: the summary alone; messages go to stderr
    summary = json.loads(lines[0])
    assert summary["report"] == str(tmp_path / "a") and summary["items"] == 4
    assert summary["pairs"] == 1 and summary["clusters"] == 1 and summary["threshold"] == 0.9
    assert summary["counts"]["items_in"] == 4 and "timings_s" in summary
    assert "model " in proc.stderr and "\r" not in proc.stderr  # INFO messages; no progress bar in a log

    quiet = nlsim("--quiet", *args, "--out", str(tmp_path / "b"), "--json")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert json.loads(quiet.stdout)["pairs"] == 1
    loud = nlsim("--log-level", "WARNING", *args, "--out", str(tmp_path / "c"))
    assert loud.returncode == 0 and loud.stderr == "" and "report:" in loud.stdout
    # the same options after the command, as the rest of its options are given
    after = nlsim(*args, "--out", str(tmp_path / "d"), "--json", "-q")
    assert after.returncode == 0 and after.stderr == "", after.stderr
    level = nlsim(*args, "--out", str(tmp_path / "e"), "--log-level", "WARNING")
    assert level.returncode == 0 and level.stderr == "" and "report:" in level.stdout
    # a command's own default does not undo what was said before it
    before = nlsim("-q", *args, "--out", str(tmp_path / "f"))
    assert before.returncode == 0 and before.stderr == "", before.stderr


def test_progress_in_a_log_is_lines_without_carriage_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_PROGRESS", "lines")
    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 0.0)
    log = io.StringIO()
    for _ in progress.progress_bar(range(5), desc="embed", unit="texts", stream=log):
        pass
    text = log.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert len(lines) == 6 and lines[-1].startswith("embed: 5/5 texts (100%)")
    # without NLSIM_PROGRESS, a stream that is not a terminal gets the same lines
    monkeypatch.delenv("NLSIM_PROGRESS")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.style() == "lines"


@pytest.mark.slow
def test_embedding_progress_in_a_log_is_one_line_per_step(tmp_path: Path) -> None:
    """``bash run.sh > run.log 2>&1``: the report's embedding progress is plain lines in the log, not tqdm's
    carriage-return frames run together on one line."""
    corpus = tmp_path / "news.csv"
    corpus.write_text("id,title\nn1,Floods hit the north\nn2,Floods hit the north again\nn3,Stocks fall\n")
    env = {k: v for k, v in os.environ.items() if k != "NLSIM_PROGRESS"}  # stderr decides: a pipe here
    proc = subprocess.run(
        [sys.executable, "-m", "nlsim", "dedup", "--corpus", str(corpus), "--out", str(tmp_path / "rep")]
        + ["--model", FAST_MODEL, "--convert", "none", "--threshold", "0.9", "--no-cache"],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr, proc.stderr
    embed = [line for line in proc.stderr.splitlines() if line.startswith(f"embed {FAST_MODEL}:")]
    assert embed and embed[-1].startswith(f"embed {FAST_MODEL}: 3/3 texts (100%)"), proc.stderr


@pytest.mark.slow
def test_a_model_store_that_does_not_exist_is_named_not_read_as_never_promoted(
    corpus: Path, tmp_path: Path
) -> None:
    """A mistyped --model-store must not send a newcomer to train a model in the wrong folder."""
    nowhere = tmp_path / "modles"
    args = ["dedup", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--model", "current"]
    proc = nlsim(*args, "--model-store", str(nowhere))
    line = one_error_line(proc, "dedup")
    assert proc.returncode == 2 and f"model store '{nowhere}' does not exist (no such folder)" in line
    assert "ever promoted" not in line and not nowhere.exists()
    empty = tmp_path / "models"  # a folder, but no store in it yet: the advice to run the chain stands
    empty.mkdir()
    proc = nlsim(*args, "--model-store", str(empty))
    assert proc.returncode == 2 and "no model was ever promoted" in one_error_line(proc, "dedup")


@pytest.mark.slow
def test_dedup_help_lists_the_corpus_schema_and_a_lookalike_column_is_warned_about(tmp_path: Path) -> None:
    text = " ".join(nlsim("dedup", "--help").stdout.split())
    for field in (
        "id (required, unique)",
        "title (required)",
        "description",
        "body",
        "source",
        "url",
        "lang",
    ):
        assert field in text, field
    assert "published_at: ISO 8601 or RFC 2822" in text and "pub_date, headline" in text
    news = tmp_path / "news.csv"
    news.write_text(
        "id,title,pub_date\n1,Floods hit the north,2024-01-01\n2,Floods hit the north!,2024-01-02\n"
    )
    args = ["dedup", "--corpus", str(news), "--out", str(tmp_path / "o"), "--model", FAST_MODEL]
    proc = nlsim(*args, "--threshold", "0.9", "--convert", "none", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "column 'pub_date' is not read" in line]
    assert len(warned) == 1 and "rename it 'published_at'" in warned[0]
    record = json.loads((tmp_path / "o" / "run.json").read_text())
    assert any("column 'pub_date' is not read" in m for m in record["messages"])


def test_annotate_merge_help_says_split_defaults_to_train_and_what_filled_is() -> None:
    text = " ".join(nlsim("annotate", "merge", "--help").stdout.split())
    assert "(default: train;" in text
    filled = text.split("--filled FILLED")[-1]
    assert filled.lstrip().startswith("the editors' scored file")


def test_the_text_field_default_names_every_column_read() -> None:
    """`annotate draw/merge --text-field` said '(default: title_zh_tw, title or text)', while a corpus
    with title_zh_cn alone is read by it too (nlsim.io.corpus.ITEM_TEXT_FIELDS)."""
    from nlsim.io.corpus import ITEM_TEXT_FIELDS

    for sub in ("draw", "merge"):
        text = " ".join(nlsim("annotate", sub, "--help").stdout.split())
        said = text[text.index("--text-field TEXT_FIELD ") :]
        assert all(field in said.split("(default:", 1)[1] for field in ITEM_TEXT_FIELDS), said[:300]


def test_embed_reads_a_texts_html_as_a_page_shows_it(tmp_path: Path) -> None:
    """``nlsim embed`` embeds each text as ``nlsim dedup`` does: the HTML a feed left in it read as a page
    shows it, so a title in tags and the same title without them are one vector."""
    import numpy as np

    rows = ["id,title", '1,"<p>Floods <b>force</b> thousands from homes&nbsp;in the north</p>"']
    rows += ["2,Floods force thousands from homes in the north", "3,Storm warning for the east coast"]
    (tmp_path / "news.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    args = ["--text-fields", "title", "--convert", "none", "--no-cache", "--no-progress"]
    proc = command.nlsim(
        "embed", "--corpus", "news.csv", "--out", "e.npy", "--model", FAST_MODEL, *args, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    emb = np.load(tmp_path / "e.npy")
    assert np.allclose(emb[0], emb[1], atol=1e-5) and not np.allclose(emb[0], emb[2], atol=1e-2)


def test_embed_says_what_the_corpus_load_warns_of(tmp_path: Path) -> None:
    """``nlsim embed`` loaded the corpus and dropped its warnings: titles that are UTF-8 misread as cp1252
    and saved again ('é¢±é¢¨' for '颱風'), titles holding U+FFFD and a column that looks like a schema field
    were embedded with exit status 0 and not a word, where ``nlsim dedup`` names each."""
    raw = (
        "颱風凱米今晚登陸 全台停班停課".encode()
    )  # cp1252's unused bytes read as C1 controls, as Windows does
    misread = "".join(chr(b) if b in b"\x81\x8d\x8f\x90\x9d" else bytes([b]).decode("cp1252") for b in raw)
    rows = ["id,title,pub_date", f'1,"{misread}",2024-07-24', "2,Caf\ufffd au lait,2024-07-24"]
    rows.append("3,Storm warning for the east coast,2024-07-24")
    (tmp_path / "news.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    args = ["--text-fields", "title", "--convert", "none", "--no-cache", "--no-progress"]
    proc = command.nlsim(
        "embed", "--corpus", "news.csv", "--out", "e.npy", "--model", FAST_MODEL, *args, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for words in ("misread as cp1252", "hold U+FFFD", "column 'pub_date' is not read"):
        assert words in proc.stderr, (words, proc.stderr[-2000:])


SIGTERM_LANDS = {
    # the main thread's import waits for the interpreter's import lock, held by another thread; the signal
    # (SIG: SIGTERM, or Ctrl-C's SIGINT) comes meanwhile, and its handler runs as the lock is taken, before
    # the `try` that gives it back
    "in-an-import": """
def hold_the_import_lock():
    _imp.acquire_lock()
    while sys._current_frames()[threading.main_thread().ident].f_code.co_name != "_get_module_lock":
        time.sleep(0.01)
    os.kill(os.getpid(), SIG)
    time.sleep(0.2)
    _imp.release_lock()

def stopped_run():
    threading.Thread(target=hold_the_import_lock).start()
    import fresh_a
    time.sleep(10)
""",
    # the handler runs in a finalizer, whose exception Python prints as "Exception ignored" and drops
    "in-a-finalizer": """
class Dropped:
    def __del__(self):
        os.kill(os.getpid(), SIG)

def stopped_run():
    Dropped()
    time.sleep(10)
""",
}


def _ctrl_c_as_in_a_terminal() -> None:
    """A program started in the background (a CI runner's, ``cmd &``) ignores SIGINT, and Python then leaves
    it ignored; a terminal's Ctrl-C finds the default handler, which Python makes its own."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stopped_where(
    where: str, folder: Path, *, stopping: str, run: str = "stopped_run()", sig: str = "SIGTERM"
) -> list[str]:
    """What a program says that runs ``run`` inside the context ``stopping`` (imported first) while ``sig``
    lands :data:`SIGTERM_LANDS` ``[where]``: how the run ended, then whether another thread can still import.
    """
    for name in ("fresh_a", "fresh_b"):
        (folder / f"{name}.py").write_text("x = 1\n", encoding="utf-8")
    program = "\n".join(
        [
            "import _imp, os, signal, sys, threading, time",
            "sys.path.insert(0, sys.argv[1])",
            f"SIG = signal.{sig}",
            stopping,
            SIGTERM_LANDS[where],
            "try:",
            "    with stopping():",
            f"        {run}",
            "    print('ran to its end', flush=True)",
            "except KeyboardInterrupt as exc:",
            "    print('stopped by', type(exc).__name__, flush=True)",
            "other = threading.Thread(target=lambda: __import__('fresh_b'), daemon=True)",
            "other.start()",
            "other.join(10)",
            "print(\"another thread's import\", 'waits' if other.is_alive() else 'goes on', flush=True)",
            "os._exit(0)",
        ]
    )
    proc = subprocess.run(
        [sys.executable, "-c", program, str(folder)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    assert "Exception ignored" not in proc.stderr, proc.stderr[-2000:]
    return proc.stdout.splitlines()


@pytest.mark.parametrize("where", sorted(SIGTERM_LANDS))
def test_a_sigterm_that_lands_in_an_import_or_a_finalizer_still_stops_the_command(
    where: str, tmp_path: Path
) -> None:
    """SIGTERM stops a command by an exception raised wherever the main thread is. Raised as the import
    machinery took the interpreter's import lock, it left the lock held: the command stopped, but every
    other thread's import waited for ever (a flow command, whose Prefect threads import as they go, hung
    at its exit); raised in a finalizer, Python printed it as "Exception ignored" and dropped it: the
    command ran on to its end and exit 0. The signal now waits for the import machinery to be done, and one
    that was dropped comes again: the run stops, and the other thread imports."""
    stopping = "from nlsim.cli import sigterm_stops_the_run as stopping"
    assert stopped_where(where, tmp_path, stopping=stopping) == [
        "stopped by Terminated",
        "another thread's import goes on",
    ]


@pytest.mark.parametrize("where", sorted(SIGTERM_LANDS))
def test_a_ctrl_c_that_lands_in_an_import_or_a_finalizer_still_interrupts_the_command(
    where: str, tmp_path: Path
) -> None:
    """Ctrl-C's KeyboardInterrupt, raised by Python's own handler wherever the main thread was, did as
    SIGTERM's did (:func:`test_a_sigterm_that_lands_in_an_import_or_a_finalizer_still_stops_the_command`):
    the import lock left held, or the interrupt dropped in a finalizer and the run gone on to its end. It
    is now put off and sent again alike."""
    stopping = "from nlsim.cli import sigterm_stops_the_run as stopping"
    assert stopped_where(where, tmp_path, stopping=stopping, sig="SIGINT") == [
        "stopped by KeyboardInterrupt",
        "another thread's import goes on",
    ]


@pytest.mark.parametrize("stuck", ["a thread", "an exit handler"])
def test_a_stopped_command_whose_exit_does_not_end_ends_within_its_grace(stuck: str) -> None:
    """A flow command stopped by SIGTERM said ``stopped (SIGTERM)`` and then waited for ever at its exit (a
    thread or an exit handler of Prefect's that never returned: its temporary server, stopped by another
    exit handler, kept running). After the stop line the process ends with its status within the grace
    (:func:`nlsim.cli.exit_within`), what must not be lost done first."""
    stick = {
        "a thread": "threading.Thread(target=threading.Event().wait).start()",
        "an exit handler": "atexit.register(threading.Event().wait)",
    }[stuck]
    program = "\n".join(
        [
            "import atexit, sys, threading",
            "from nlsim.cli import exit_within",
            stick,
            "print('stopped (SIGTERM)', flush=True)",
            "exit_within(143, seconds=1, last=lambda: print('server stopped'))",
            "sys.exit(143)",
        ]
    )
    proc = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert (proc.returncode, proc.stdout.split("\n")) == (143, ["stopped (SIGTERM)", "server stopped", ""])


@pytest.mark.parametrize("where", ["before", "after"])
def test_log_level_is_read_in_any_case(where: str) -> None:
    """``--log-level debug`` was refused (argparse's choices are in capitals alone): a level is read in any
    case, before or after the command, and a level that is none is still refused."""
    from nlsim.cli import build_parser

    args = ["models", "list"]
    level = ["--log-level", "debug"]
    parsed = build_parser().parse_args(level + args if where == "before" else args + level)
    assert parsed.log_level == "DEBUG"
    assert build_parser().parse_args(["--log-level", "Warning", *args]).log_level == "WARNING"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--log-level", "verbose", *args])


@pytest.mark.parametrize("command", [["dedup"], ["embed"], ["annotate", "draw"], ["finetune"]])
def test_a_corpus_options_help_names_every_format_the_corpus_is_read_in(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``nlsim dedup --help`` said of --corpus ".parquet, .csv, .tsv or .jsonl", and ``nlsim annotate draw
    --help`` "(.tsv/.csv/.parquet)", where both read a JSONL file and a .json array of objects too (the
    README points to ``nlsim dedup --help`` for the list); each corpus option's help line names them."""
    from nlsim.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    option = "--silver-corpus" if command == ["finetune"] else "--corpus"
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(f"{option} "))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" " * 6))
    said = " ".join(" ".join(lines[start:end]).split())
    assert ".jsonl" in said and ".json array" in said, said


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("evaluate", "--pairs"),
        ("calibrate", "--pairs"),
        ("finetune", "--pairs"),
        ("learning-curve", "--pairs"),
        ("dedup", "--judge-pairs"),
        ("dedup", "--annotated-pairs"),
        ("pipeline", "--pairs"),
    ],
)
def test_a_pair_files_help_names_the_compressed_files_it_is_read_from(
    command: str, option: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A pair file is read compressed whole as well (``pairs.tsv.gz``, ``.bz2``, ``.xz``), but each
    command's help said ``(.tsv/.csv/.parquet)`` (``nlsim dedup --annotated-pairs``), or named no format
    (``nlsim pipeline --pairs``); each names the compressed files too."""
    from nlsim.cli import build_parser
    from nlsim.io.pairs import load_pairs

    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(f"{option} "))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" " * 6))
    said = " ".join(" ".join(lines[start:end]).split())
    assert all(name in said for name in (".tsv", ".csv", ".parquet", ".gz", ".bz2", ".xz")), said
    for suffix, opener in ((".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)):
        path = tmp_path / f"pairs.tsv{suffix}"
        with opener(path, "wt", encoding="utf-8") as out:
            out.write("text_a\ttext_b\tscore\tsplit\nA\tB\t0.5\ttest\n")
        assert load_pairs(path)["score"].tolist() == [0.5]


def test_the_chains_last_lines_count_one_pair_and_one_cluster_in_the_singular(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nlsim pipeline`` ended on a report of one pair in one cluster with "3 items, 1 pairs, 1 clusters",
    where ``nlsim dedup`` says "1 pair, 1 cluster"; the chain's last lines count as the report's do."""
    from types import SimpleNamespace

    from nlsim.chain import run as chain_run
    from nlsim.cli import main

    summary = {"items": 3, "pairs": 1, "clusters": 1, "model": "m", "threshold": 0.9}
    judge = {"pairs": "p.tsv", "split": "validation", "judged_pairs": 2, "same_story_pairs": 1}
    judge |= {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    report = SimpleNamespace(summary=summary, report_dir=tmp_path)
    record = {"decision": {"promoted": False, "reason": "kept"}, "judge": judge}
    result = SimpleNamespace(record=record, table="| table |", report=report)
    monkeypatch.setattr(chain_run, "run_pipeline", lambda config: result)
    assert main(["pipeline", "--corpus", "c.csv", "--pairs", "p.tsv"]) == 0
    out = capsys.readouterr().out
    assert "  3 items, 1 pair, 1 cluster; model m, threshold 0.9" in out, out


def test_the_chain_refuses_model_by_name_not_as_the_start_of_model_store(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nlsim pipeline --model current`` (``--model`` as ``nlsim dedup`` takes it) ran the chain on a new
    model store named ``current``: argparse read ``--model`` as the start of ``--model-store``, the only
    option it begins. The chain refuses it by name, saying which options it takes, before any work; so does
    ``python -m flows.pipeline``. ``--model-store`` and its start still read as before."""
    from flows import orchestration, pipeline
    from nlsim.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["pipeline", "--model", "current"])
    assert stop.value.code == 2
    said = capsys.readouterr().err
    assert "--model is not an option of the chain" in said and "--base-model" in said
    assert build_parser().parse_args(["pipeline", "--model-s", "m"]).model_store == "m"

    def ran(*_: object) -> None:
        raise AssertionError("the options were read and the flow was about to run")

    monkeypatch.setattr(orchestration, "config_from_args", ran)
    with pytest.raises(SystemExit) as stop:
        pipeline.main(["--model", "current"])
    assert stop.value.code == 2
    assert "--model is not an option of the chain" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "longer", "takes"),
    [("--rerank", "--rerank-weight", "--no-reranker"), ("--gpu", "--gpu-batch-size", "NLSIM_DEVICE")],
)
def test_nlsim_finetune_refuses_an_option_of_dedup_by_name_not_as_the_start_of_its_own(
    flag: str, longer: str, takes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nlsim finetune --gpu`` (``--gpu`` as ``nlsim dedup`` takes it) was read as the start of
    ``--gpu-batch-size``, and ``--rerank`` as ``--rerank-weight``: without a number after it the run
    stopped on "argument --gpu-batch-size: expected one argument", an option never given, and with one
    (``--gpu 0``, a device) it set that option. Each is refused by name, saying what finetune takes
    instead, before any work; so does ``python -m flows.finetune``. The longer options and their starts
    still read as before."""
    from flows import finetune as finetune_flow
    from nlsim.cli import build_parser

    given = ["finetune", "--pairs", "p.tsv", "--out", "m"]
    for more in ([flag], [flag, "0"]):
        with pytest.raises(SystemExit) as stop:
            build_parser().parse_args([*given, *more])
        assert stop.value.code == 2
        said = capsys.readouterr().err
        assert f"{flag} is not an option of nlsim finetune" in said and takes in said, said
        assert f"argument {longer}" not in said
    parsed = build_parser().parse_args([*given, f"{longer[:-3]}", "48"])
    assert vars(parsed)[longer[2:].replace("-", "_")] == (48 if flag == "--gpu" else 48.0)
    with pytest.raises(SystemExit) as stop:
        finetune_flow.main(["--pairs", "p.tsv", "--out", "m", flag])
    assert stop.value.code == 2
    assert f"{flag} is not an option of nlsim finetune" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "flag", "dest", "instead"),
    [
        ("evaluate", "--no-rerank", "rerank", "it scores every pair of the split chosen"),
        ("calibrate", "--no-precision-check", "precision_check", "it calibrates on every pair of the split"),
    ],
)
def test_n_of_annotate_draw_is_refused_by_name_not_taken_for_a_flag(
    command: str, flag: str, dest: str, instead: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nlsim evaluate ... --n`` (``--n`` as ``nlsim annotate draw`` takes it) was read, silently, as
    ``--no-rerank``, the one option it begins, and ``nlsim calibrate ... --n`` as ``--no-precision-check``:
    a run meant on fewer pairs scored the bi-encoder alone, or stored no quality check. ``--n`` is now refused
    by name, with or without a number, before any work; the flags and their other starts read as before."""
    from nlsim.cli import build_parser

    given = [command, "--model", "m", "--pairs", "p.tsv"] + (
        ["--out", "c.json"] if command == "calibrate" else []
    )
    for more in (["--n"], ["--n", "50"]):
        with pytest.raises(SystemExit) as stop:
            build_parser().parse_args([*given, *more])
        assert stop.value.code == 2
        said = capsys.readouterr().err
        assert f"--n is not an option of nlsim {command} (nlsim annotate draw's" in said, said
        assert instead in said and flag in said, said
    assert vars(build_parser().parse_args(given))[dest] is True
    for start in (flag, flag[:4]):
        assert vars(build_parser().parse_args([*given, start]))[dest] is False
    draw = ["annotate", "draw", "--corpus", "c.csv", "--out", "d.csv", "--n", "5"]
    assert build_parser().parse_args(draw).n == 5


@pytest.mark.parametrize("action", [["list"], ["promote", "v0001"], ["rollback"]])
def test_nlsim_models_refuses_model_by_name_not_as_the_start_of_model_store(
    action: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``nlsim models list --model current`` (``--model`` as ``nlsim dedup`` takes it) was read as
    ``--model-store current``, the only option it begins, and said "model store 'current' does not exist".
    Each action refuses it by name, saying that the store is ``--model-store``, before any work;
    ``--model-store`` and its start still read as before."""
    from nlsim.cli import build_parser

    reason = ["--reason", "r"] if action[0] != "list" else []
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["models", *action, *reason, "--model", "current"])
    assert stop.value.code == 2
    said = capsys.readouterr().err
    assert "--model is not an option of nlsim models" in said and "--model-store FOLDER" in said
    assert build_parser().parse_args(["models", *action, *reason, "--model-s", "m"]).model_store == "m"
