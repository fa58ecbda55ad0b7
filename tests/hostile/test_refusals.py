"""Never lose a user's file: one regression test per case of the hostile-input probe.

Where a case names a command, the case runs through the real command line (``python -m nlsim ...``, as
:func:`tests.command.nlsim` runs it: in the test process, or a subprocess where it needs one) against
files in a temporary folder, and checks the exit status, the one-line ``nlsim CMD: error: ...`` message
(no traceback) and that every file of the user's is byte for byte as it was.
``NLSIM_HOSTILE_SRC=/path/to/checkout`` runs those command lines against another checkout, each in a
subprocess (how the cases were checked against the code before the fixes).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.errors import ConfigError, InputError, StateError
from tests import command
from tests.chain.test_chain import make_data
from tests.command import refused
from tests.faults import fault_env
from tests.hostile.cases import snapshot
from tests.incremental_helpers import ROOT, HashEncoder, story_corpus
from tests.stsb_helpers import stsb_sample, write_stsb_sample

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
SRC = os.environ.get("NLSIM_HOSTILE_SRC", str(ROOT))
DEDUP = ["--model", FAST_MODEL, "--convert", "none", "--threshold", "0.9", "--no-cache", "--no-progress"]
NEWS = """id,title,source,published_at
n1,Floods hit the north of the country,AP,2024-05-01T08:00:00Z
n2,Floods hit the north of the country,AFP,2024-05-01T09:00:00Z
n3,Stock markets fall sharply,Reuters,2024-05-01T10:00:00Z
n4,Football club wins the cup,BBC,2024-05-01T11:00:00Z
n5,Stock markets fall sharply,AP,2024-05-01T12:00:00Z
"""


# --- helpers -------------------------------------------------------------------------------------------


def nlsim(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """:func:`tests.command.nlsim`; with ``NLSIM_HOSTILE_SRC``, a subprocess on that checkout."""
    if SRC != str(ROOT):
        env.setdefault("PYTHONPATH", SRC)
    return command.nlsim(*args, cwd=cwd, timeout=600, **env)


def news(folder: Path, name: str = "news.csv", text: str = NEWS) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def user_folder(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "pairs.tsv"
    stsb_sample(train=16, validation=16, test=12).to_csv(path, sep="\t", index=False)
    return path


FINETUNE = ["--model", FAST_MODEL, "--convert", "none", "--epochs", "1", "--batch-size", "8", "--no-reranker"]
FINETUNE += ["--level", "0.6"]


# --- 1. finetune --out replaces only a model folder nlsim wrote ---------------------------------------


@pytest.mark.slow
def test_finetune_out_with_user_files_is_refused_before_training(tmp_path: Path, pairs_file: Path) -> None:
    project = user_folder(
        tmp_path / "project",
        {"config.json": '{"mine": true}', "notes.txt": "my notes", "data/table.csv": "a,b\n1,2\n"},
    )
    before = snapshot(project)
    proc = nlsim("finetune", "--pairs", str(pairs_file), "--out", str(project), *FINETUNE, cwd=tmp_path)
    refused(proc, 2, str(project), "not a model folder written by nlsim")
    assert "fine-tuning" not in proc.stderr  # refused before training started
    assert snapshot(project) == before


@pytest.mark.parametrize(
    "marker",
    [
        "{}",
        '{"written_by": "someone", "kind": "model"}',
        '{"written_by": "nlsim", "kind": "report"}',
        "not json",
    ],
)
def test_finetune_out_marker_is_checked_by_its_content(tmp_path: Path, marker: str) -> None:
    from nlsim.io.ownership import MARKER, marker_record
    from nlsim.training.finetune import check_model_out

    folder = user_folder(tmp_path / "m", {MARKER: marker, "config.json": "{}", "notes.txt": "mine"})
    with pytest.raises(ConfigError, match="not a model folder written by nlsim"):
        check_model_out(folder)
    (folder / MARKER).write_text(json.dumps(marker_record("model")))
    check_model_out(folder)  # a folder nlsim wrote as a model folder may be replaced
    check_model_out(tmp_path / "new")  # and so may a new one


def test_finetune_out_holding_its_own_pairs_is_refused(tmp_path: Path, pairs_file: Path) -> None:
    from nlsim.io.ownership import MARKER, marker_record
    from nlsim.training.config import FinetuneConfig
    from nlsim.training.finetune import finetune

    model = user_folder(tmp_path / "model", {MARKER: json.dumps(marker_record("model"))})
    shutil.copy(pairs_file, model / "pairs.tsv")
    cfg = FinetuneConfig.of(
        pairs=str(model / "pairs.tsv"), out=str(model), model=FAST_MODEL, conversion="none"
    )
    with pytest.raises(ConfigError, match="contains --pairs"):
        finetune(cfg)


@pytest.mark.parametrize("version", ["v0001-01234567", "v0002-new"])
def test_finetune_out_inside_a_model_store_is_refused_before_training(
    tmp_path: Path, pairs_file: Path, version: str
) -> None:
    """A model store's versions are saved and registered by the chain: ``nlsim finetune --out`` over one
    (here the promoted one) would put another model in its place without a record, and one saved beside
    them, never registered, would be removed by the store's next run. Refused, the store as it was."""
    from nlsim.io.model_store import ModelStore
    from nlsim.io.ownership import MARKER, marker_record

    store = ModelStore(tmp_path / "models")
    store.claim()
    kept = store.new_version_dir("0123456789abcdef")
    user_folder(kept, {MARKER: json.dumps(marker_record("model")), "config.json": "{}"})
    store.write_info(kept, {"fingerprint": "0123456789abcdef"})
    (tmp_path / "models" / "CURRENT.json").write_text(json.dumps({"version": kept.name}), encoding="utf-8")
    before, names = snapshot(tmp_path / "models"), entries(tmp_path / "models")
    out = tmp_path / "models" / "versions" / version
    proc = nlsim("finetune", "--pairs", str(pairs_file), "--out", str(out), *FINETUNE, cwd=tmp_path)
    refused(proc, 2, str(out), "lies inside the model store")
    assert "fine-tuning" not in proc.stderr  # refused before training started
    assert snapshot(tmp_path / "models") == before and entries(tmp_path / "models") == names


HOLDER = """
import sys, time
from nlsim.io.lock import RunLock
lock = RunLock.beside(sys.argv[1], "--out").acquire()
print("locked", flush=True)
time.sleep(120)
"""


STORE_OUTPUTS = {
    "dedup": ["dedup", "--corpus", "news.csv", *DEDUP, "--out", "OUT"],
    "dedup --state": ["dedup", "--corpus", "news.csv", *DEDUP, "--state", "OUT", "--out", "report"],
    "pipeline": ["pipeline", "--pairs", "pairs.tsv", "--corpus", "corpus.parquet", "--model-store", "other"]
    + ["--out", "OUT"],
    "learning-curve": ["learning-curve", "--pairs", "pairs.tsv", "--sizes", "20", "--out", "OUT"],
    "calibrate": ["calibrate", "--model", FAST_MODEL, "--pairs", "pairs.tsv", "--out", "OUT"],
    "embed": ["embed", "--corpus", "news.csv", "--model", FAST_MODEL, "--out", "OUT"],
    "annotate draw": ["annotate", "draw", "--corpus", "news.csv", "--model", "tfidf-char2", "--out", "OUT"],
    "annotate merge": ["annotate", "merge", "--filled", "pairs.tsv", "--pairs", "OUT"],
}
"""Each command that writes a report, a curve, a file or a daily state, with ``OUT`` for the output path."""


@pytest.mark.parametrize("command_line", STORE_OUTPUTS.values(), ids=STORE_OUTPUTS.keys())
def test_an_output_inside_a_model_store_is_refused_naming_both(
    tmp_path: Path, command_line: list[str]
) -> None:
    """The model store is nlsim pipeline's alone: a report (or a curve, a daily state, a file) written inside
    it could be taken by the store's recovery for what a killed save left, or the other way round. Refused
    before any work, naming the output and the store, the store as it was."""
    from nlsim.io.model_store import ModelStore

    news(tmp_path)
    make_data(tmp_path)  # pairs.tsv with item ids, and corpus.parquet
    store = ModelStore(tmp_path / "models")
    store.claim()
    before, names = snapshot(store.root), entries(store.root)
    name = {"calibrate": "cal.json", "embed": "emb.npy", "annotate": "todo.csv"}.get(command_line[0], "run")
    out = store.root / name
    args = [str(out) if a == "OUT" else a for a in command_line]
    proc = nlsim(*args, cwd=tmp_path)
    option = args[args.index(str(out)) - 1]
    refused(proc, 2, f"{option} {out} lies inside the model store {store.root}", f"outside {store.root}")
    assert snapshot(store.root) == before and entries(store.root) == names


def test_a_second_finetune_into_the_same_out_is_refused_naming_the_run_that_holds_it(
    tmp_path: Path, pairs_file: Path
) -> None:
    """Two ``nlsim finetune --out X`` at once both trained, and the last to finish replaced the other's
    model unsaid (the folder is built beside X and renamed into place, so nothing held X). A run holds X
    by a lock beside it (``X.lock``) for its whole run: a second one is refused before any work, naming
    the holder; the holder's lock is left as it was."""
    from nlsim.io.lock import read_lock_file

    out = tmp_path / "model"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True, env=command.command_env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        proc = nlsim("finetune", "--pairs", str(pairs_file), "--out", str(out), *FINETUNE, cwd=tmp_path)
        refused(proc, 1, str(out), "is locked by another run", f"pid {holder.pid}")
        assert "fine-tuning" not in proc.stderr  # refused before training started
        held = read_lock_file(tmp_path / "model.lock")
        assert held is not None and held.pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
    assert not out.exists()


def test_a_finetune_takes_over_the_lock_a_killed_run_left_beside_its_out(tmp_path: Path) -> None:
    """A lock beside ``--out`` whose run is gone (killed: its pid no longer exists) is taken over, and said;
    the lock is held while the run trains and gone when it ends."""
    from nlsim.io.lock import current_holder_info, read_lock_file
    from nlsim.training.finetune import holding_model_out

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    out, lock = tmp_path / "model", tmp_path / "model.lock"
    lock.write_text(json.dumps({**vars(current_holder_info()), "pid": gone.pid, "started": None}))
    said: list[str] = []
    with holding_model_out(out, said.append):
        held = read_lock_file(lock)
        assert held is not None and held.pid == os.getpid()
    assert len(said) == 1 and f"pid {gone.pid}" in said[0] and "no longer exists" in said[0]
    assert not lock.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


# --- 2. an output path never equals or contains an input path --------------------------------------------


@pytest.mark.parametrize("spelling", ["same", "dot-slash", "symlink"])
def test_quarantine_on_the_corpus_is_refused(tmp_path: Path, spelling: str) -> None:
    corpus = news(tmp_path)
    quarantine = {"same": "news.csv", "dot-slash": "./news.csv", "symlink": "alias.csv"}[spelling]
    if spelling == "symlink":
        (tmp_path / "alias.csv").symlink_to("news.csv")
    before = snapshot(tmp_path)
    proc = nlsim(
        "dedup", "--corpus", "news.csv", "--out", "rep", "--quarantine", quarantine, *DEDUP, cwd=tmp_path
    )
    refused(proc, 2, "--quarantine", "--corpus")
    assert snapshot(tmp_path) == before and corpus.read_text() == NEWS


@pytest.mark.slow
def test_quarantine_never_overwrites_a_file_nlsim_did_not_write(tmp_path: Path) -> None:
    """A user's file or the judged pairs as --quarantine are refused before any work; nlsim's own
    quarantine file from an earlier run is replaced."""
    news(tmp_path)
    (tmp_path / "notes.csv").write_text("precious,notes\n")
    (tmp_path / "judge.tsv").write_text("pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\n")
    before = snapshot(tmp_path)
    proc = nlsim(
        "dedup", "--corpus", "news.csv", "--out", "rep", "--quarantine", "notes.csv", *DEDUP, cwd=tmp_path
    )
    refused(proc, 2, "--quarantine", "notes.csv", "not a quarantine file written by nlsim")
    args = ["--quarantine", "judge.tsv", "--judge-pairs", "judge.tsv"]
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "rep", *args, *DEDUP, cwd=tmp_path)
    refused(proc, 2, "--quarantine", "--judge-pairs")
    assert snapshot(tmp_path) == before
    for _ in range(2):  # the second run replaces the first run's quarantine file
        proc = nlsim(
            "dedup", "--corpus", "news.csv", "--out", "rep", "--quarantine", "q.csv", *DEDUP, cwd=tmp_path
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "q.csv").read_text(encoding="utf-8-sig").startswith("row,field,reason")


@pytest.mark.slow
def test_calibrate_and_embed_never_overwrite_a_user_file(tmp_path: Path) -> None:
    news(tmp_path)
    pairs = write_stsb_sample(tmp_path, 5, 20, 0)
    (tmp_path / "cal.json").write_text('{"mine": true}')
    (tmp_path / "emb.npy").write_bytes(b"user bytes")
    before = snapshot(tmp_path)
    args = ["--model", FAST_MODEL, "--pairs", str(pairs), "--convert", "none", "--out", "cal.json"]
    refused(nlsim("calibrate", *args, cwd=tmp_path), 2, "cal.json", "not a calibration file")
    proc = nlsim("embed", "--corpus", "news.csv", "--out", "emb.npy", "--model", FAST_MODEL, cwd=tmp_path)
    refused(proc, 2, "emb.npy", "not a saved matrix written by nlsim")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("rows", "split", "words"),
    [
        ("", "all", "pairs.tsv: no pairs to calibrate on (the file holds a header only)"),
        (
            "a\tb\t0.5\ttest\nc\td\t0.25\ttest\n",
            "test",
            "field 'score': none of the 2 pairs of split 'test' is at or above level 0.875",
        ),
        (
            "a\tb\t1\ttest\nc\td\t1\ttest\n",
            "test",
            "field 'score': all of the 2 pairs of split 'test' are at or above level 0.875",
        ),
    ],
)
def test_calibrate_on_pairs_that_cannot_give_a_threshold_is_refused_naming_the_file_before_the_model_loads(
    tmp_path: Path, rows: str, split: str, words: str
) -> None:
    (tmp_path / "pairs.tsv").write_text("text_a\ttext_b\tscore\tsplit\n" + rows, encoding="utf-8")
    # a model that is not there: refused on the pairs, it was never looked for
    args = ["--model", "models/none", "--pairs", "pairs.tsv", "--split", split, "--out", "cal.json"]
    message = refused(nlsim("calibrate", *args, cwd=tmp_path), 1, words, alone=True)
    assert "models/none" not in message
    assert entries(tmp_path) == ["pairs.tsv"]


# --- 3. time: no future item, no negative retention, as_of never moved by an outlier --------------------


@pytest.mark.slow
def test_future_item_is_refused_naming_it_and_the_window_is_kept(tmp_path: Path) -> None:
    news(tmp_path, "day1.csv")
    ok = nlsim("dedup", "--corpus", "day1.csv", "--state", "st", "--out", "out", *DEDUP, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr[-1500:]
    day2 = (
        NEWS.splitlines()[0] + "\nx1,New item,AP,2024-05-02T08:00:00Z\nx2,Typo date,AP,2034-05-02T08:00:00Z\n"
    )
    news(tmp_path, "day2.csv", day2)
    state = snapshot(tmp_path / "st")
    proc = nlsim("dedup", "--corpus", "day2.csv", "--state", "st", "--out", "out", *DEDUP, cwd=tmp_path)
    refused(proc, 1, "day2.csv", "published_at", "future", "x2")
    after = snapshot(tmp_path / "st")
    assert {k: v for k, v in after.items() if "lock" not in k} == {
        k: v for k, v in state.items() if "lock" not in k
    }


def test_negative_retention_is_refused(tmp_path: Path) -> None:
    news(tmp_path)
    proc = nlsim(
        "dedup",
        "--corpus",
        "news.csv",
        "--state",
        "st",
        "--out",
        "out",
        "--retention-days",
        "-1",
        *DEDUP,
        cwd=tmp_path,
    )
    refused(proc, 2, "--retention-days")
    assert not (tmp_path / "st").exists() and not (tmp_path / "out").exists()


def _daily(tmp_path: Path, corpus: pd.DataFrame, name: str, **changes: object) -> object:
    from nlsim.dedup.run import run_dedup

    path = tmp_path / f"{name}.parquet"
    corpus.to_parquet(path, index=False)
    cfg = DedupConfig.of(
        corpus=str(path),
        out=str(tmp_path / "out"),
        model="x",
        convert="none",
        threshold=0.7,
        cache=False,
        progress=False,
        state=str(tmp_path / "st"),
        **changes,
    )
    return run_dedup(cfg, encoder=HashEncoder())


def test_as_of_never_moved_backwards_by_an_outlier_or_an_option(tmp_path: Path) -> None:
    stories = story_corpus()
    first = _daily(tmp_path, stories.iloc[:6], "day1", retention_days=2.0)
    as_of = pd.Timestamp(first.stats.as_of)
    # an outlier from long ago is too old for the window and does not move the clock back
    old = stories.iloc[6:9].copy()
    old.loc[old.index[0], "published_at"] = pd.Timestamp("1990-01-01", tz="UTC")
    second = _daily(tmp_path, old, "day2", retention_days=2.0)
    assert pd.Timestamp(second.stats.as_of) == as_of + pd.Timedelta(hours=21)  # e1, the day's latest item
    assert second.stats.counts.too_old == 1 and second.stats.counts.new == 2
    with pytest.raises(ConfigError, match="never moves backwards"):
        _daily(tmp_path, stories.iloc[6:8], "day3", retention_days=2.0, as_of="2000-01-01")


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("as_of", "2999-05-02T20:00:00Z", "more than 1 day after now"),  # a year typed wrong
        ("retention_days", 200_000.0, "from 0 (0 keeps everything) to 36525"),
        ("retention_days", float("nan"), "got nan"),
        ("retention_days", float("inf"), "got inf"),
    ],
)
def test_a_clock_or_retention_that_would_empty_every_later_window_is_refused_up_front(
    tmp_path: Path, option: str, value: object, words: str
) -> None:
    """A state's clock never moves back: an --as-of typed in the future would make every later day's items
    too old, for good. A retention beyond what time arithmetic holds crashed."""
    with pytest.raises(ConfigError, match=re.escape(words)):
        DedupConfig.of(corpus="x.csv", out=str(tmp_path / "o"), state=str(tmp_path / "st"), **{option: value})
    now, st = pd.Timestamp.now(tz="UTC").isoformat(), str(tmp_path / "st")
    DedupConfig.of(corpus="x.csv", out=str(tmp_path / "o"), state=st, as_of=now, retention_days=36_525)
    with pytest.raises(ConfigError, match="--as-of works on a daily state: give --state DIR"):
        DedupConfig.of(corpus="x.csv", out=str(tmp_path / "o"), as_of=now)  # it was ignored


@pytest.mark.parametrize(
    ("day", "words"),
    [
        ("2062-11-05", "more than 1 day after today"),  # 2026 typed wrong
        ("9999-12-31", "more than 1 day after today"),
        ("1500-01-01", "years 1678 to 2261"),
    ],
)
def test_a_daily_runs_date_its_clock_cannot_take_is_refused_up_front(
    tmp_path: Path, day: str, words: str
) -> None:
    """A day whose items have no date takes the start of the run's --date as its clock, which never moves
    back: --date 2062-11-05 (2026 typed wrong) expired every kept item and made every later day's items too
    old, for good, and a year pandas cannot hold (9999, 1500) ended in a traceback. Both are refused before
    any work; a batch run's --date only names its file, and is not."""
    dated = {"corpus": str(tmp_path / "in" / "{date}.csv"), "out": str(tmp_path / "o")}
    with pytest.raises(ConfigError, match=rf"^--date {day}: .*{re.escape(words)}"):
        DedupConfig.of(**dated, state=str(tmp_path / "st"), date=day)
    assert DedupConfig.of(**dated, date=day).input.corpus_path.endswith(f"{day}.csv")
    today = pd.Timestamp.now(tz="Pacific/Kiritimati").date()  # the zone whose day starts first
    for fine in (today, today + pd.Timedelta(days=1), pd.Timestamp("1678-01-02").date()):
        DedupConfig.of(**dated, state=str(tmp_path / "st"), date=str(fine), timezone="Pacific/Kiritimati")


@pytest.mark.slow
def test_a_lone_item_dated_a_year_late_never_empties_the_window(tmp_path: Path) -> None:
    """A typo in one item's year would move the daily clock a year on: every kept item would expire and the
    day's own items would be too old, for every later run too. It is refused by row; the state is kept."""
    stories = story_corpus()
    _daily(tmp_path, stories.iloc[:6], "day1", retention_days=30.0)
    before = snapshot(tmp_path / "st")
    typo = stories.iloc[6:9].copy()
    typo.loc[typo.index[2], "published_at"] = pd.Timestamp("2006-03-02T03:00", tz="UTC")
    with pytest.raises(
        InputError, match=r"day2.parquet: row 3, field 'published_at': 1 item\(s\) dated more"
    ):
        _daily(tmp_path, typo, "day2", retention_days=30.0)
    assert snapshot(tmp_path / "st") == before
    (tmp_path / "fixed").mkdir()  # a clock fixed by --as-of cannot be moved by the late item: not refused
    fixed = _daily(tmp_path / "fixed", typo, "day2", retention_days=30.0, as_of="2005-03-03T00:00:00Z")
    assert pd.Timestamp(fixed.stats.as_of) == pd.Timestamp("2005-03-03T00:00:00Z")
    # a day wholly after a pause is no typo: the window moves and the kept items expire, as they should
    later = stories.iloc[6:9].assign(published_at=pd.Timestamp("2006-03-02T03:00", tz="UTC"))
    result = _daily(tmp_path, later, "day3", retention_days=30.0)
    assert result.stats.counts.expired == 6 and result.stats.counts.new == 3
    # an archive whose dates run on without a gap is not refused, however long it spans (retention keeps
    # its last 30 days)
    span = stories.assign(published_at=pd.date_range("2005-01-01", periods=12, freq="10D", tz="UTC"))
    (tmp_path / "archive").mkdir()
    archive = _daily(tmp_path / "archive", span, "archive", retention_days=30.0)
    assert (archive.stats.counts.new, archive.stats.counts.too_old) == (4, 8)


@pytest.mark.parametrize(
    ("days", "retention", "refused_rows"),
    [
        (["2024-05-03", "2024-05-03", "2025-05-03"], 30, [3]),  # a year typo among the day's items
        (["2025-05-03", "2024-05-03", "2024-05-03", "2024-05-03"], 30, [1]),
        (["2024-03-20", "2024-05-01"], 30, []),  # an old item republished beside today's: which is wrong?
        (["2024-05-03", "2024-05-03", "2024-06-02"], 30, []),  # a gap of the retention itself, not more
        # two wide gaps: every item after the first is refused, not only those after the last
        (["2024-01-01"] * 6 + ["2024-02-10", "2024-03-21"], 30, [7, 8]),
        (["2024-05-03"] * 5 + ["2024-05-06"] * 5, 1, []),  # Friday's and Monday's items, one day kept
        (["2024-01-01"] * 3 + ["2024-05-01"] * 3, 30, []),  # a backlog as large as the day's news
        (
            ["2024-05-01", "2024-05-02", "2024-05-02"],
            0.5,
            [],
        ),  # a gap wider than half a day, but no lone item
    ],
)
def test_only_a_lone_late_item_is_refused(days: list[str], retention: float, refused_rows: list[int]) -> None:
    from nlsim.dedup.stages import check_no_lone_late_items
    from nlsim.io.corpus import Corpus

    ids = [f"n{i}" for i in range(1, len(days) + 1)]
    corpus = Corpus(pd.DataFrame({"id": ids, "published_at": pd.to_datetime(days, utc=True)}), path="day.csv")
    if not refused_rows:
        check_no_lone_late_items(corpus, retention)
        return
    with pytest.raises(
        InputError, match=rf"row {refused_rows[0]}, field 'published_at': {len(refused_rows)} item"
    ):
        check_no_lone_late_items(corpus, retention)


@pytest.mark.parametrize("hours", ["0", "inf", "1e9", "nan"])
def test_a_time_window_that_cannot_work_is_refused(tmp_path: Path, hours: str) -> None:
    """0 used to switch the window off; inf and 1e9 failed with a traceback after the embedding."""
    news(tmp_path)
    proc = nlsim(
        "dedup", "--corpus", "news.csv", "--out", "out", "--window-hours", hours, *DEDUP, cwd=tmp_path
    )
    refused(proc, 2, "--window-hours", "leave it out")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_time_window_is_in_the_run_record(tmp_path: Path) -> None:
    news(tmp_path)
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "out", "--window-hours", "2", *DEDUP, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["window_hours"] == 2.0


# --- 4. the state folder: only what the manifest or the marker proves is nlsim's is swept ----------------


@pytest.mark.slow
def test_missing_manifest_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    news(tmp_path)
    ok = nlsim("dedup", "--corpus", "news.csv", "--state", "st", "--out", "out", *DEDUP, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr[-1500:]
    (tmp_path / "st" / "MANIFEST.json").unlink()
    before = snapshot(tmp_path / "st")
    proc = nlsim("dedup", "--corpus", "news.csv", "--state", "st", "--out", "out", *DEDUP, cwd=tmp_path)
    refused(proc, 1, "MANIFEST.json", "--rebuild-state")
    after = snapshot(tmp_path / "st")
    assert {k: v for k, v in after.items() if k.startswith(("generations/", "runs/"))} == {
        k: v for k, v in before.items() if k.startswith(("generations/", "runs/"))
    }


@pytest.mark.parametrize("rebuild", [False, True])
def test_state_in_a_user_folder_never_touches_its_generations(tmp_path: Path, rebuild: bool) -> None:
    news(tmp_path)
    mine = user_folder(
        tmp_path / "mine",
        {"generations/2024/notes.txt": "mine", "generations/g000001-abcdef/draft.txt": "mine too"},
    )
    before = snapshot(mine)
    extra = ["--rebuild-state"] if rebuild else []
    proc = nlsim(
        "dedup", "--corpus", "news.csv", "--state", "mine", "--out", "out", *extra, *DEDUP, cwd=tmp_path
    )
    refused(proc, 2, "--state", "did not write")
    assert snapshot(mine) == before and sorted(p.name for p in mine.iterdir()) == ["generations"]


def _two_generations(tmp_path: Path) -> Path:
    stories = story_corpus()
    _daily(tmp_path, stories.iloc[:6], "day1")
    _daily(tmp_path, stories.iloc[6:9], "day2")
    return tmp_path / "st"


@pytest.mark.parametrize("edit", ["name", "name-and-number"])
def test_edited_generation_dir_never_deletes_the_current_generation(tmp_path: Path, edit: str) -> None:
    state = _two_generations(tmp_path)
    manifest = json.loads((state / "MANIFEST.json").read_text())
    manifest["generation_dir"] = manifest["previous_generation_dir"]
    if edit == "name-and-number":
        manifest["generation"] -= 1
    (state / "MANIFEST.json").write_text(json.dumps(manifest))
    before = snapshot(state / "generations")
    assert len({k.split("/")[0] for k in before}) == 2
    with pytest.raises(StateError, match="--rebuild-state"):
        _daily(tmp_path, story_corpus().iloc[9:], "day3")
    assert snapshot(state / "generations") == before


@pytest.mark.slow
def test_first_run_killed_before_its_manifest_is_swept_and_done_again(tmp_path: Path) -> None:
    """What a first run killed after writing its generation leaves: generation 1, no manifest, no run
    record. The next run sweeps it (nlsim's, by the marker and the names) and starts the state."""
    stories = story_corpus()
    _daily(tmp_path, stories.iloc[:6], "day1")
    state = tmp_path / "st"
    (state / "MANIFEST.json").unlink()
    shutil.rmtree(state / "runs")
    (gen,) = (state / "generations").iterdir()
    res = _daily(tmp_path, stories.iloc[:6], "day1")
    assert res.stats.counts.new == 6 and not gen.exists()
    assert any("unfinished generation" in m for m in res.messages)


# --- 5. embed: the sidecar is never the corpus ---------------------------------------------------------


def test_embed_sidecar_never_overwrites_the_corpus(tmp_path: Path) -> None:
    records = [{"id": f"n{i}", "title": t} for i, t in enumerate(["Floods", "Storms", "Markets"])]
    text = "".join(json.dumps(r) + "\n" for r in records)
    news(tmp_path, "news.json", text)
    proc = nlsim(
        "embed",
        "--corpus",
        "news.json",
        "--out",
        "news.npy",
        "--model",
        FAST_MODEL,
        "--convert",
        "none",
        "--no-cache",
        cwd=tmp_path,
    )
    refused(proc, 2, "news.json", "--corpus")
    assert (tmp_path / "news.json").read_text() == text and not (tmp_path / "news.npy").exists()


def test_embed_sidecar_never_overwrites_a_user_file(tmp_path: Path) -> None:
    news(tmp_path)
    (tmp_path / "emb.json").write_text('{"mine": true}')
    proc = nlsim("embed", "--corpus", "news.csv", "--out", "emb.npy", "--model", FAST_MODEL, cwd=tmp_path)
    refused(proc, 2, "emb.json", "not an embedding record")
    assert (tmp_path / "emb.json").read_text() == '{"mine": true}' and not (tmp_path / "emb.npy").exists()


# --- 6. --out: only an empty folder or one nlsim wrote ---------------------------------------------------


def test_out_with_user_files_is_refused(tmp_path: Path) -> None:
    news(tmp_path)
    out = user_folder(
        tmp_path / "site",
        {
            "index.html": "<h1>my site</h1>",
            "summary.md": "# my summary",
            "run.json": '{"files": {"index.html": "0"}}',
            "index/notes.txt": "mine",
        },
    )
    before = snapshot(out)
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "site", *DEDUP, cwd=tmp_path)
    refused(proc, 2, "--out", "not written by nlsim")
    assert snapshot(out) == before


def test_corpus_inside_out_is_refused(tmp_path: Path) -> None:
    from nlsim.io.corpus import load_corpus

    news(tmp_path)
    (tmp_path / "rep").mkdir()
    load_corpus(tmp_path / "news.csv").frame.to_parquet(tmp_path / "rep" / "pairs.parquet")
    before = snapshot(tmp_path)
    proc = nlsim("dedup", "--corpus", "rep/pairs.parquet", "--out", "rep", *DEDUP, cwd=tmp_path)
    refused(proc, 2, "--out", "--corpus")
    assert snapshot(tmp_path) == before


# --- 7. a killed batch run: the previous report and its index stay, staging folders are swept ----------


@pytest.mark.slow
def test_killed_batch_run_leaves_the_previous_report_and_index(tmp_path: Path) -> None:
    from nlsim.report.files import verify_report

    news(tmp_path)
    news(tmp_path, "other.csv", NEWS.replace("Football club wins the cup", "Elections called for June"))
    first = nlsim("dedup", "--corpus", "news.csv", "--out", "rep", *DEDUP, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-1500:]
    run = verify_report(tmp_path / "rep")
    assert any(name.startswith("index/") for name in run["files"])  # the index is hashed with the rest
    before = snapshot(tmp_path / "rep")
    killed = nlsim(
        "dedup",
        "--corpus",
        "other.csv",
        "--out",
        "rep",
        *DEDUP,
        cwd=tmp_path,
        **fault_env("report-write", SRC),
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-1500:]
    after = snapshot(tmp_path / "rep")
    left = {k for k in after if k.startswith(".staging-") or k == "lock.json"}
    assert {k: v for k, v in after.items() if k not in left} == before
    assert any(k.startswith(".staging-") for k in after)  # what the killed run left
    assert "lock.json" in after  # its lock, stale now: the next run takes it over
    verify_report(tmp_path / "rep")
    again = nlsim("dedup", "--corpus", "other.csv", "--out", "rep", *DEDUP, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-1500:]
    assert not [p for p in (tmp_path / "rep").iterdir() if p.name.startswith(".staging-")]
    assert not (tmp_path / "rep" / "lock.json").exists()
    assert verify_report(tmp_path / "rep")["items"] == 5


@pytest.mark.slow
def test_a_batch_run_stopped_by_sigterm_cleans_up_and_leaves_the_previous_report(tmp_path: Path) -> None:
    """``kill`` (or a scheduler's timeout) half way through the report's write: exit status 143 after the
    clean-up an interrupted run does, no lock and no staging folder left, the previous report as it was."""
    from nlsim.report.files import verify_report

    news(tmp_path)
    news(tmp_path, "other.csv", NEWS.replace("Football club wins the cup", "Elections called for June"))
    first = nlsim("dedup", "--corpus", "news.csv", "--out", "rep", *DEDUP, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-1500:]
    before = snapshot(tmp_path / "rep")
    stop = fault_env("report-write", SRC, signal="TERM")
    stopped = nlsim("dedup", "--corpus", "other.csv", "--out", "rep", *DEDUP, cwd=tmp_path, **stop)
    assert stopped.returncode == 143, stopped.stderr[-1500:]
    assert stopped.stderr.strip().splitlines()[-1] == "nlsim dedup: stopped (SIGTERM)"
    assert "Traceback" not in stopped.stderr
    assert snapshot(tmp_path / "rep") == before  # no lock.json, no .staging-*, every file the first run's
    verify_report(tmp_path / "rep")


# --- 8. corpora: explicit quoting rules, every row's field count checked --------------------------------


TSV_WITH_QUOTE = 'id\ttitle\tsource\nt1\t"Quoted start of a title\tAP\nt2\tSecond\tAP\nt3\tThird "x\tAP\n'
TSV_WITH_QUOTE += 't4\tFourth\tAP\nt5\tFifth"\tAP\n'


@pytest.mark.slow
def test_tsv_quote_is_an_ordinary_character_no_row_merged(tmp_path: Path) -> None:
    news(tmp_path, "news.tsv", TSV_WITH_QUOTE)
    proc = nlsim(
        "embed",
        "--corpus",
        "news.tsv",
        "--out",
        "emb.npy",
        "--model",
        FAST_MODEL,
        "--convert",
        "none",
        "--text-fields",
        "title",
        "--no-cache",
        "--no-progress",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-1500:]
    meta = json.loads((tmp_path / "emb.json").read_text())
    assert meta["ids"] == ["t1", "t2", "t3", "t4", "t5"] and meta["count"] == 5


def test_tsv_titles_keep_their_quotes(tmp_path: Path) -> None:
    from nlsim.io.corpus import load_corpus

    corpus = load_corpus(news(tmp_path, "news.tsv", TSV_WITH_QUOTE))
    assert corpus.frame["title"].tolist()[0] == '"Quoted start of a title' and len(corpus) == 5


@pytest.mark.slow
def test_csv_first_row_with_an_extra_comma_is_refused(tmp_path: Path) -> None:
    news(tmp_path, "news.csv", "id,title,source\n1,Floods, north,AP\n2,Storm,AFP\n")
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "rep", *DEDUP, cwd=tmp_path)
    refused(proc, 1, "news.csv: row 1", "4 fields, the header has 3")


@pytest.mark.parametrize(
    ("text", "row", "reason"),
    [
        ('id,title\n1,"open quote\n2,b\n', 1, "cannot be read as CSV"),
        ("id,title\n1,a\n2,b,c\n", 2, "3 fields"),
        ("id,title\n1,a\n2\n", 2, "1 fields"),
        ('id,title\n1,"a "" quoted, comma"\n2,"ab"c\n', 2, "cannot be read as CSV"),
    ],
)
def test_csv_rows_are_read_by_explicit_rules(tmp_path: Path, text: str, row: int, reason: str) -> None:
    from nlsim.io.corpus import load_corpus

    path = news(tmp_path, "news.csv", text)
    with pytest.raises(InputError, match=reason) as err:
        load_corpus(path)
    assert err.value.row == row


def test_csv_quoted_comma_and_newline_stay_in_one_field(tmp_path: Path) -> None:
    from nlsim.io.corpus import load_corpus

    corpus = load_corpus(news(tmp_path, "news.csv", 'id,title\n1,"Floods, again\nand again"\n2,"x ""y"""\n'))
    assert corpus.frame["title"].tolist() == ["Floods, again\nand again", 'x "y"']


# --- 9. thresholds, calibrations and model weights are checked ------------------------------------------


def _calibration(path: Path, **fields: object) -> Path:
    data = {"threshold": 0.9, "level": 1.0, "precision": 1, "recall": 1, "f1": 1, "n": 10, "n_positive": 3}
    data.update(fields)
    path.write_text(json.dumps(data), encoding="utf-8")  # json writes NaN as NaN
    return path


@pytest.mark.parametrize("threshold", [float("nan"), 7.5, "high", "array"])
def test_calibration_threshold_that_is_not_a_cosine_is_refused(tmp_path: Path, threshold: object) -> None:
    news(tmp_path)
    _calibration(tmp_path / "cal.json", threshold=threshold)
    if threshold == "array":  # not even an object
        (tmp_path / "cal.json").write_text("[0.9]")
    args = ["--model", FAST_MODEL, "--convert", "none", "--no-cache", "--no-progress"]
    proc = nlsim(
        "dedup", "--corpus", "news.csv", "--out", "rep", "--calibration", "cal.json", *args, cwd=tmp_path
    )
    refused(proc, 1, "cal.json", "threshold" if threshold != "array" else "not a valid calibration file")
    assert "embed" not in proc.stderr


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (  # not a calibration at all: every field it lacks and the one it has, named in words
            '{"a": 1}',
            (
                "lacks the fields 'threshold', 'level', 'precision', 'recall', 'f1', 'n' and 'n_positive'",
                "'a' is not a field nlsim reads",
            ),
        ),
        (  # a misspelt field: the one it stands for is named
            '{"treshold": 0.9, "level": 1.0, "precision": 1, "recall": 1, "f1": 1, "n": 10, "n_positive": 3}',
            (
                "lacks the field 'threshold'",
                "'treshold' is not a field nlsim reads (did you mean 'threshold'?)",
            ),
        ),
        (  # values of another kind ended in a traceback (the threshold's line formats them as numbers)
            '{"threshold": 0.9, "level": 1.0, "precision": "x", "recall": 1, "f1": 1, "n": 10, '
            '"n_positive": 3, "f1_ci95": "0.5-0.7"}',
            ("field 'precision' holds 'x', not a number", "field 'f1_ci95' holds '0.5-0.7', not a list"),
        ),
    ],
)
def test_a_calibration_file_missing_or_mistyping_fields_is_refused_naming_them(
    tmp_path: Path, text: str, words: tuple[str, ...]
) -> None:
    """``--calibration notcal.json`` holding ``{"a": 1}`` said ``Calibration.__init__() missing 7 required
    positional arguments: ...``; a field of the wrong kind ended in a traceback."""
    news(tmp_path)
    (tmp_path / "notcal.json").write_text(text, encoding="utf-8")
    args = ["--model", FAST_MODEL, "--convert", "none", "--no-cache", "--no-progress"]
    proc = nlsim(
        "dedup", "--corpus", "news.csv", "--out", "rep", "--calibration", "notcal.json", *args, cwd=tmp_path
    )
    line = refused(proc, 1, "notcal.json: not a valid calibration file:", *words, command="dedup")
    assert "__init__" not in line and "positional" not in line
    assert "embed" not in proc.stderr and not (tmp_path / "rep").exists()


@pytest.mark.slow
def test_calibration_made_for_another_model_is_refused(tmp_path: Path) -> None:
    news(tmp_path)
    _calibration(tmp_path / "cal.json", model="intfloat/multilingual-e5-small", fingerprint="0" * 64)
    args = ["--model", FAST_MODEL, "--convert", "none", "--no-cache", "--no-progress"]
    proc = nlsim(
        "dedup", "--corpus", "news.csv", "--out", "rep", "--calibration", "cal.json", *args, cwd=tmp_path
    )
    refused(proc, 2, "cal.json", "calibrated for another model")


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory, fast_encoder) -> Path:  # noqa: ANN001
    """MiniLM-L3 saved by nlsim, with a calibration.json that holds its true fingerprint."""
    from nlsim.evaluation.calibration import Calibration, save_calibration

    folder = tmp_path_factory.mktemp("models") / "good"
    fast_encoder.save(folder)
    cal = Calibration(0.9, 1.0, 1.0, 1.0, 1.0, 10, 3, model=fast_encoder.model_id)
    cal.fingerprint = fast_encoder.fingerprint
    save_calibration(cal, folder)
    return folder


def _damaged(model_folder: Path, tmp_path: Path, how: str) -> Path:
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "models" / how
    shutil.copytree(model_folder, folder)
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    if how == "flipped":
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0xFF  # inside a tensor: the header still parses
        weights.write_bytes(bytes(flipped))
    elif how.startswith("truncated"):
        weights.write_bytes(data[: len(data) // 2])
    elif how == "config-garbage":
        (folder / "config.json").write_text("{not json")
    elif how == "missing-weight":
        tensors = load_file(str(weights))
        del tensors["encoder.layer.0.attention.self.query.weight"]
        save_file(tensors, str(weights), metadata={"format": "pt"})
    if how in ("truncated-no-hash", "missing-weight"):  # a folder whose nlsim.json records no hash
        meta = json.loads((folder / "nlsim.json").read_text())  # (saved by an nlsim before the hashes and
        meta.pop("weights_sha256", None)  # the manifest of every file: none of them)
        meta.pop("manifest", None)
        (folder / "nlsim.json").write_text(json.dumps(meta))
        (folder / "manifest.json").unlink()
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("flipped", ("model.safetensors", "SHA-256")),
        ("truncated", ("model.safetensors", "SHA-256")),
        ("truncated-no-hash", ("the model weights cannot be read",)),
        ("missing-weight", ("weight(s) missing", "encoder.layer.0.attention.self.query.weight")),
        ("config-garbage", ("the model folder cannot be read", "config.json")),
    ],
)
def test_damaged_model_weights_are_refused(
    tmp_path: Path, model_folder: Path, how: str, words: tuple[str, ...]
) -> None:
    news(tmp_path)
    folder = _damaged(model_folder, tmp_path, how)
    proc = nlsim(
        "dedup",
        "--corpus",
        "news.csv",
        "--out",
        "rep",
        "--model",
        str(folder),
        "--convert",
        "none",
        "--no-cache",
        "--no-progress",
        cwd=tmp_path,
    )
    refused(proc, 1, *words)
    assert not (tmp_path / "rep" / "pairs.parquet").exists()


# --- 10. a pair in two splits is refused ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("copy", ["plain", "swapped"])
def test_test_pair_copied_into_train_is_refused(tmp_path: Path, copy: str) -> None:
    pairs = stsb_sample(train=16, validation=16, test=12)
    leaked = pairs[pairs["split"] == "test"].iloc[[3]].assign(split="train", pair_id="copied-into-train")
    if copy == "swapped":
        leaked = leaked.rename(columns={"text_a": "text_b", "text_b": "text_a"})
    pd.concat([pairs, leaked], ignore_index=True).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    proc = nlsim("finetune", "--pairs", "pairs.tsv", "--out", "model", *FINETUNE, cwd=tmp_path)
    refused(proc, 1, "pairs.tsv", "row 45", "'test'", "'train'")
    assert "fine-tuning" not in proc.stderr and not (tmp_path / "model").exists()


@pytest.mark.parametrize(
    ("a", "b", "extra"),
    [
        ("Floods in the North", "Storm warning", {}),
        ("storm  warning", "FLOODS IN THE NORTH ", {}),
        ("other text", "more text", {"id_a": ["x1", "x2"], "id_b": ["x2", "x1"]}),
    ],
)
def test_cross_split_duplicates_by_text_or_id_either_order(a: str, b: str, extra: dict) -> None:
    from nlsim.io.pairs import validate_pairs

    frame = pd.DataFrame(
        {
            "text_a": ["Floods in the north", a],
            "text_b": ["Storm warning", b],
            "score": [0.5, 0.5],
            "split": ["test", "train"],
            **extra,
        }
    )
    with pytest.raises(InputError, match="the same pair as row 1"):
        validate_pairs(frame, "p.tsv")


# --- smaller cases -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "row"),
    [
        ("news.csv", b'id,title\n1,"a\nb"\n2,ok\n3,bad\xff\n', 3),  # a quoted newline: rows are records
        ("news.csv", b'\xef\xbb\xbfid,title\n1,"x\xff"\n', 1),  # the offset counts the byte-order mark
        ("news.jsonl", b'{"id":1,"title":"a"}\n\n{"id":3,"title":"c\xff"}\n', 2),  # blank lines are no rows
        ("news.tsv", b'id\ttitle\n\n1\ta\n2\t"b\xff\n', 2),
        ("news.tsv", b"id\ttitle\xff\n1\ta\n", None),  # in the header
    ],
)
def test_non_utf8_byte_names_its_row_and_offset(
    tmp_path: Path, name: str, data: bytes, row: int | None
) -> None:
    from nlsim.io.corpus import load_corpus

    (tmp_path / name).write_bytes(data)
    offset = data.index(b"\xff")
    with pytest.raises(InputError, match=f"byte 0xff at byte offset {offset} ") as err:
        load_corpus(tmp_path / name)
    assert err.value.row == row
    assert ("in the header" in str(err.value)) == (row is None)


@pytest.mark.slow
def test_non_utf8_corpus_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "news.csv").write_bytes(b"id,title\n1,ok\n2,caf\xe9\n")
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "rep", *DEDUP, cwd=tmp_path)
    refused(proc, 1, "news.csv: row 2", "not valid UTF-8", "byte 0xe9 at byte offset 19")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("corpus", "words"),
    [("incoming", "is a folder"), ("news.csv", "is a folder"), ("loop.csv", "a symbolic link loop")],
)
def test_folder_or_link_loop_as_corpus(tmp_path: Path, corpus: str, words: str) -> None:
    if corpus == "loop.csv":
        (tmp_path / "a.csv").symlink_to("loop.csv")
        (tmp_path / "loop.csv").symlink_to("a.csv")
    else:
        (tmp_path / corpus).mkdir()
        news(tmp_path / corpus)  # a folder of corpora given as the corpus
    proc = nlsim("dedup", "--corpus", corpus, "--out", "rep", *DEDUP, cwd=tmp_path)
    refused(proc, 1, f"{corpus}: {words}")


@pytest.mark.parametrize("option", ["--judge-pairs", "--annotated-pairs"])
def test_a_missing_pair_file_is_refused_before_the_model_loads(tmp_path: Path, option: str) -> None:
    news(tmp_path)
    before = snapshot(tmp_path)
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "rep", option, "gone.tsv", *DEDUP, cwd=tmp_path)
    refused(proc, 1, "gone.tsv: file not found")
    assert "model " not in proc.stderr and "embed" not in proc.stderr
    assert snapshot(tmp_path) == before  # no report folder made


@pytest.mark.parametrize("daily", [False, True], ids=["batch", "daily"])
@pytest.mark.parametrize("out", ["news.csv", "afile/rep", "ro/rep", "afile", "mine"])
def test_out_that_cannot_be_written_is_refused_before_any_work(tmp_path: Path, out: str, daily: bool) -> None:
    news(tmp_path)
    (tmp_path / "afile").write_text("a file, not a folder")
    news(tmp_path / "mine", "notes.csv")  # a folder of the user's
    if out.startswith("ro/"):
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        (tmp_path / "ro").mkdir(mode=0o555)
    before = snapshot(tmp_path)
    state = ["--state", "st"] if daily else []  # a daily run: no state folder is made for a refused --out
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", out, *state, *DEDUP, cwd=tmp_path)
    # the corpus, a file or a folder of the user's as --out is a usage error (2); a folder that cannot be
    # made is a runtime failure (1)
    refused(proc, 1 if "/" in out else 2, "--out")
    assert "model " not in proc.stderr and "embed" not in proc.stderr  # before the model was even loaded
    assert snapshot(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("train", "validation", "constant", "words"),
    [
        (2, 16, False, "the training split has 2 pair(s)"),
        (16, 16, True, "every training pair has the score"),
        (16, 0, False, "pairs.tsv: field 'split': no pairs in split 'validation'"),
    ],
)
def test_finetune_pairs_that_cannot_train_are_refused_before_training(
    tmp_path: Path, train: int, validation: int, constant: bool, words: str
) -> None:
    pairs = stsb_sample(train=train, validation=validation, test=4)
    if constant:
        pairs.loc[pairs["split"] == "train", "score"] = 0.5
    pairs.to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    proc = nlsim("finetune", "--pairs", "pairs.tsv", "--out", "model", *FINETUNE, cwd=tmp_path)
    refused(proc, 1, words)
    assert "fine-tuning" not in proc.stderr


@pytest.mark.slow
def test_evaluate_on_one_pair_is_refused(tmp_path: Path) -> None:
    stsb_sample(train=0, validation=0, test=1).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    proc = nlsim(
        "evaluate", "--model", "tfidf-char2", "--pairs", "pairs.tsv", "--convert", "none", cwd=tmp_path
    )
    refused(proc, 1, "1 pair(s)")
    assert "nan" not in proc.stdout


@pytest.mark.slow
def test_model_path_that_does_not_exist_is_an_error_not_a_hub_lookup(tmp_path: Path) -> None:
    news(tmp_path)
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "rep", *DEDUP, "--model", "models/x", cwd=tmp_path)
    refused(proc, 2, "models/x", "no such model folder")
    assert "hub" not in proc.stderr


def test_as_of_that_is_not_a_time_is_refused(tmp_path: Path) -> None:
    news(tmp_path)
    args = ["--corpus", "news.csv", "--state", "st", "--out", "out", "--as-of", "yesterday"]
    proc = nlsim("dedup", *args, *DEDUP, cwd=tmp_path)
    refused(proc, 2, "--as-of", "yesterday")
    assert not (tmp_path / "st").exists()


HOSTILE_TITLE = 'Floods | <script>alert("x")</script>\nsecond line'


def test_hostile_title_keeps_the_markdown_summary_table() -> None:
    from nlsim.clusters.table import batch_clusters
    from nlsim.report.files import pairs_table, render_markdown
    from nlsim.report.html import render_html
    from nlsim.report.record import RunRecord

    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": [HOSTILE_TITLE, HOSTILE_TITLE, "Plain | title", "Plain | title"],
            "source": ["AP", "AFP", "AP", "AFP"],
            "published_at": pd.to_datetime([None] * 4, utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0, 2], "b": [1, 3], "similarity": [0.99, 0.98]})
    labels, clusters = batch_clusters(frame, pairs)
    md = render_markdown(pairs_table(frame, pairs, labels), clusters, RunRecord(model="m"))
    rows = [line for line in md.splitlines() if line.startswith("| c-")]
    assert len(rows) == 2  # one line per cluster: the newline did not split its row
    head = next(line for line in md.splitlines() if line.startswith("| cluster |"))
    for line in rows:
        assert line.replace("\\|", "").count("|") == head.count("|")  # the title's pipe is escaped
    assert "<script>" not in md and "&lt;script>" in md  # "<" an entity: no tag can open
    page = render_html(pairs_table(frame, pairs, labels), clusters, RunRecord(model="m"), frame)
    assert "<script>alert" not in page


# --- options that cannot work, or do nothing without another, are refused before any work ---------------

PIPELINE = ["pipeline", "--pairs", "pairs.tsv", "--corpus", "news.csv", "--out", "rep", "--model-store", "st"]
CHAIN_ONLY = ["pipeline", "--pairs", "pairs.tsv", "--model-store", "st"]
"""A chain with no setting of its report (``--no-report`` refuses every one)."""
OPTION_CASES = {
    "embed-threads-0": (["embed", "--corpus", "news.csv", "--out", "e.npy", "--threads", "0"], "--threads"),
    # more threads than the process may start: a Rust panic in the tokenizer or a bare libgomp line (exit 1)
    "embed-threads-100000": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--threads", "100000"],
        "--threads: must be at most",
    ),
    "dedup-threads-100000": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--threads", "100000", *DEDUP],
        "--threads must be at most",
    ),
    # --k 10**9 held every item's hits against every other; --nlist 10**9 trained a list a vector
    "dedup-k-1000000000": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--k", "1000000000", *DEDUP],
        "--k must be at most 10,000",
    ),
    "dedup-nlist-1000000000": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--index", "ivf", "--nlist", "1000000000", *DEDUP],
        "--nlist must be at most 262,144",
    ),
    "pipeline-nprobe-1000000000": ([*PIPELINE, "--nprobe", "1000000000"], "--nprobe must be at most 262,144"),
    # the whole corpus in one embedding batch: its activations all at once
    "embed-batch-size-1000000000": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--batch-size", "1000000000"],
        "--batch-size: must be at most 4,096",
    ),
    "dedup-batch-size-1000000000": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--batch-size", "1000000000", *DEDUP],
        "--batch-size must be at most 4,096",
    ),
    # a training step of every pair at once: refused as the embedding batch is, not after the pairs are read
    "finetune-batch-size-1000000000": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--batch-size", "1000000000"],
        "--batch-size must be at most 4,096 (pairs per optimizer step), got 1000000000",
    ),
    "finetune-gpu-batch-size-1000000000": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--gpu-batch-size", "1000000000"],
        "--gpu-batch-size must be at most 4,096",
    ),
    "curve-batch-size-1000000000": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", "curve", "--batch-size", "1000000000"],
        "--batch-size must be at most 4,096",
    ),
    "pipeline-batch-size-1000000000": (
        [*CHAIN_ONLY, "--batch-size", "1000000000"],
        "--batch-size must be at most 4,096",
    ),
    "evaluate-threads-negative": (
        ["evaluate", "--model", FAST_MODEL, "--pairs", "pairs.tsv", "--threads", "-1"],
        "--threads: must be >= 1",
    ),
    "calibrate-threads-0": (
        ["calibrate", "--model", FAST_MODEL, "--pairs", "pairs.tsv", "--out", "cal.json", "--threads", "0"],
        "--threads: must be >= 1",
    ),
    "embed-max-length-2": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--max-length", "2"],
        "--max-length: must be at least 4",
    ),
    # past the model's 512 positions: the first text that long stopped the run with a traceback
    "embed-max-length-past-the-model": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--model", FAST_MODEL, "--max-length", "100000"],
        "the model paraphrase-MiniLM-L3-v2 reads at most 512",
    ),
    "evaluate-max-length-0": (
        ["evaluate", "--model", FAST_MODEL, "--pairs", "pairs.tsv", "--max-length", "0"],
        "--max-length: must be at least 4",
    ),
    "evaluate-baseline-max-length": (
        ["evaluate", "--model", "tfidf-char2", "--pairs", "pairs.tsv", "--max-length", "64"],
        "--max-length: the baseline tfidf-char2 reads whole texts",
    ),
    "annotate-draw-threads-0": (
        ["annotate", "draw", "--corpus", "news.csv", "--out", "todo.csv", "--threads", "0"],
        "--threads: must be >= 1",
    ),
    "annotate-draw-threads-100000": (
        ["annotate", "draw", "--corpus", "news.csv", "--out", "todo.csv", "--threads", "100000"],
        "--threads: must be at most",
    ),
    "annotate-draw-tfidf-threads": (
        [
            "annotate",
            "draw",
            "--corpus",
            "news.csv",
            "--out",
            "todo.csv",
            "--model",
            "tfidf-char2",
            "--threads",
            "2",
        ],
        "--threads: tfidf-char2 has no threads to set",
    ),
    "evaluate-baseline-threads": (
        ["evaluate", "--model", "tfidf-char2", "--pairs", "pairs.tsv", "--threads", "2"],
        "--threads: the baseline tfidf-char2 has no threads to set",
    ),
    "embed-text-fields-twice": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--text-fields", "title,description,title"],
        "--text-fields: 'title' is given twice",
    ),
    "embed-text-fields-unknown": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--text-fields", "title,teaser"],
        "--text-fields: cannot embed field 'teaser'; choose from title, description, body",
    ),
    "dedup-text-fields-twice": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--text-fields", "title, title", *DEDUP],
        "--text-fields: 'title' is given twice",
    ),
    "dedup-text-fields-unknown": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--text-fields", "headline", *DEDUP],
        "--text-fields: cannot embed field 'headline'",
    ),
    # refused before the pair file is read: a missing one, or one with a warning to give, would speak first
    "evaluate-baseline-threads-before-the-pairs": (
        ["evaluate", "--model", "tfidf-char2", "--pairs", "missing.tsv", "--threads", "2"],
        "--threads: the baseline tfidf-char2 has no threads to set",
    ),
    "evaluate-baseline-no-rerank": (
        ["evaluate", "--model", "tfidf-char2", "--pairs", "pairs.tsv", "--no-rerank"],
        "--no-rerank: the baseline tfidf-char2 has no reranker",
    ),
    "finetune-threads-0": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--threads", "0"],
        "--threads must be >= 1",
    ),
    "finetune-max-length-3": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--max-length", "3"],
        "--max-length must be at least 4",
    ),
    "finetune-train-size-3": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--train-size", "3"],
        "--train-size must be >= 4, got 3",
    ),
    "finetune-train-size-above-the-split": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--train-size", "500"],
        "--train-size 500: more than the 16 pairs in split 'train' of pairs.tsv",
    ),
    "finetune-out-empty": (
        ["finetune", "--pairs", "pairs.tsv", "--out", ""],
        "--out is empty: give the model folder to write (the run would save nothing)",
    ),
    "curve-out-empty": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", " "],
        "--out is empty: give a folder",
    ),
    "curve-size-3": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", "curve", "--sizes", "3,8"],
        "--sizes: every size must be >= 4",
    ),
    "curve-threads-0": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", "curve", "--threads", "0"],
        "--threads must be >= 1",
    ),
    "curve-sizes-not-numbers": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", "curve", "--sizes", "100,abc"],
        "--sizes: 'abc' is not one of the whole numbers asked, separated by commas",
    ),
    # read as 350,700: one point of the curve quietly left out
    "curve-sizes-with-an-empty-one": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", "curve", "--sizes", "350,,700"],
        "--sizes: '350,,700' has an empty item",
    ),
    "finetune-seed-negative": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--seed", "-1"],
        "--seed must be a whole number from 0 to 4294967295, got -1",
    ),
    "finetune-seed-too-large": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--seed", "4294967296"],
        "--seed must be a whole number from 0 to 4294967295, got 4294967296",
    ),
    # numpy's generator took it only at the draw: a traceback after the model loaded
    "draw-seed-negative": (
        [
            "annotate",
            "draw",
            "--corpus",
            "news.csv",
            "--out",
            "d.csv",
            "--model",
            "tfidf-char2",
            "--seed",
            "-1",
        ],
        "argument --seed: must be a whole number from 0 to 4294967295, got -1",
    ),
    "curve-second-seed-negative": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", "curve", "--seeds=1,-1", "--baselines", ""],
        "--seeds must be a whole number from 0 to 4294967295, got -1",
    ),
    "curve-unknown-baseline": (
        ["learning-curve", "--pairs", "pairs.tsv", "--out", "curve", "--baselines", "bm25"],
        "--baselines: unknown baseline 'bm25'",
    ),
    "quantize-and-precision": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--quantize", "int8", "--precision", "bf16"],
        "--quantize int8 means --backend torch --precision int8, not --precision bf16",
    ),
    "quantize-and-backend": (
        ["embed", "--corpus", "news.csv", "--out", "e.npy", "--quantize", "int8", "--backend", "onnx"],
        "not --backend onnx",
    ),
    "retention-without-state": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--retention-days", "7", *DEDUP],
        "--retention-days works with --state",
    ),
    "judge-split-unknown": (
        [
            "dedup",
            "--corpus",
            "news.csv",
            "--out",
            "rep",
            "--judge-pairs",
            "pairs.tsv",
            "--judge-split",
            "dev",
            *DEDUP,
        ],
        "--judge-split 'dev': unknown split",
    ),
    "pipeline-judge-split-unknown": (
        [
            "pipeline",
            "--pairs",
            "pairs.tsv",
            "--corpus",
            "news.csv",
            "--out",
            "rep",
            "--model-store",
            "st",
            "--judge-split",
            "dev",
        ],
        "--judge-split 'dev': unknown split",
    ),
    "pipeline-topic-threshold-with-no-report": (
        [
            "pipeline",
            "--pairs",
            "pairs.tsv",
            "--model-store",
            "st",
            "--no-report",
            "--topic-threshold",
            "0.7",
        ],
        "--topic-threshold does nothing with --no-report: leave one of them out",
    ),
    "pipeline-topic-threshold-with-no-topics": (
        [
            "pipeline",
            "--pairs",
            "pairs.tsv",
            "--corpus",
            "news.csv",
            "--out",
            "rep",
            "--model-store",
            "st",
            "--no-topics",
            "--topic-threshold",
            "0.7",
        ],
        "--topic-threshold does nothing with --no-topics: leave one of them out",
    ),
    "topic-threshold-with-no-topics": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--no-topics", "--topic-threshold", "0.7", *DEDUP],
        "--topic-threshold does nothing with --no-topics: leave one of them out",
    ),
    "topic-rule-with-no-topics": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--no-topics", "--topic-support", "0.5", *DEDUP],
        "--topic-support does nothing with --no-topics: leave one of them out",
    ),
    "date-without-a-date-in-the-corpus": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--date", "2024-05-02", *DEDUP],
        "--date 2024-05-02 does nothing here: --corpus news.csv has no {date} to fill in, and a batch run",
    ),
    "pipeline-date-without-a-date-in-the-corpus": (
        [*PIPELINE, "--date", "2024-05-02"],
        "--date 2024-05-02 does nothing here: --corpus news.csv has no {date} to fill in, and a batch run",
    ),
    "cluster-support-with-the-components-rule": (
        [
            "dedup",
            "--corpus",
            "news.csv",
            "--out",
            "rep",
            "--cluster-rule",
            "components",
            "--cluster-support",
            "0.6",
            *DEDUP,
        ],
        "--cluster-support does nothing with --cluster-rule components: leave one of them out",
    ),
    "pipeline-large-cluster-margin-with-the-components-rule": (
        [*PIPELINE, "--cluster-rule", "components", "--large-cluster-margin", "0.05"],
        "--large-cluster-margin does nothing with --cluster-rule components: leave one of them out",
    ),
    "topic-support-with-the-components-topic-rule": (
        [
            "dedup",
            "--corpus",
            "news.csv",
            "--out",
            "rep",
            "--topic-rule",
            "components",
            "--topic-support",
            "0.3",
            *DEDUP,
        ],
        "--topic-support does nothing with --topic-rule components: leave one of them out",
    ),
    "pipeline-topic-support-with-the-components-topic-rule": (
        [*PIPELINE, "--topic-rule", "components", "--topic-support", "0.3"],
        "--topic-support does nothing with --topic-rule components: leave one of them out",
    ),
    "pipeline-cluster-support-with-no-report": (
        [
            "pipeline",
            "--pairs",
            "pairs.tsv",
            "--model-store",
            "st",
            "--no-report",
            "--cluster-support",
            "0.5",
        ],
        "--cluster-support does nothing with --no-report: leave one of them out",
    ),
    "nprobe-with-a-flat-index": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--index", "flat", "--nprobe", "4", *DEDUP],
        "--nprobe does nothing with --index flat: leave one of them out",
    ),
    "nlist-with-an-hnsw-index": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--index", "hnsw", "--nlist", "64", *DEDUP],
        "--nlist does nothing with --index hnsw: leave one of them out",
    ),
    "pipeline-nprobe-with-a-flat-index": (
        [
            "pipeline",
            "--pairs",
            "pairs.tsv",
            "--corpus",
            "news.csv",
            "--out",
            "rep",
            "--model-store",
            "st",
            "--index",
            "flat",
            "--nprobe",
            "4",
        ],
        "--nprobe does nothing with --index flat: leave one of them out",
    ),
    "judge-split-without-judge-pairs": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--judge-split", "test", *DEDUP],
        "--judge-split works with --judge-pairs",
    ),
    "easy-sample-without-drop-easy": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--easy-sample", "0.5"],
        "--easy-sample works with --drop-easy",
    ),
    "silver-anchors-without-silver-corpus": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--silver-anchors", "3000"],
        "--silver-anchors works with --silver-corpus",
    ),
    "silver-teacher-without-silver-corpus": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--silver-teacher", "cross-encoder"],
        "--silver-teacher works with --silver-corpus",
    ),
    "silver-text-field-without-silver-corpus": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--silver-text-field", "title"],
        "--silver-text-field works with --silver-corpus",
    ),
    "rerank-weight-without-reranker": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--no-reranker", "--rerank-weight", "0.3"],
        "--rerank-weight does nothing with --no-reranker",
    ),
    "story-model-without-reranker": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--no-reranker", "--story-model"],
        "--story-model does nothing with --no-reranker",
    ),
    "one-model-at-a-time-without-reranker": (
        ["finetune", "--pairs", "pairs.tsv", "--out", "model", "--no-reranker", "--one-model-at-a-time"],
        "--one-model-at-a-time does nothing with --no-reranker",
    ),
    "pipeline-rerank-weight-without-reranker": (
        [*PIPELINE, "--no-reranker", "--rerank-weight", "0.3"],
        "--rerank-weight does nothing with --no-reranker",
    ),
    "cross-encoder-epochs-without-a-cross-encoder": (
        [
            "finetune",
            "--pairs",
            "pairs.tsv",
            "--out",
            "model",
            "--no-reranker",
            "--cross-encoder-epochs",
            "5",
        ],
        "--cross-encoder-epochs does nothing with --no-reranker unless --silver-corpus is given",
    ),
    "pipeline-story-weight-without-reranker": (
        [*PIPELINE, "--no-reranker", "--story-weight", "2"],
        "--story-weight does nothing with --no-reranker: leave one of them out",
    ),
    "cross-encoder-easy-sample-with-drop-easy-off": (
        [*PIPELINE, "--cross-encoder-drop-easy", "0", "--cross-encoder-easy-sample", "0.5"],
        "--cross-encoder-easy-sample works with --cross-encoder-drop-easy",
    ),
    "draw-threshold-out-of-range": (
        ["annotate", "draw", "--corpus", "news.csv", "--out", "draw.csv", "--threshold", "5"],
        "--threshold: must be a number in [-1, 1]",
    ),
    "dedup-gpu-without-gpu": (
        ["dedup", "--corpus", "news.csv", "--out", "rep", "--gpu", *DEDUP],
        "--gpu asks for the search on a GPU, and there is none to use",
    ),
    "pipeline-gpu-without-gpu": (
        [*PIPELINE, "--gpu"],
        "--gpu asks for the search on a GPU, and there is none to use",
    ),
    "pipeline-no-report-cpu": ([*CHAIN_ONLY, "--no-report", "--cpu"], "--cpu does nothing with --no-report"),
    "pipeline-cluster-support-no-report": (
        [*CHAIN_ONLY, "--cluster-support", "0.5", "--no-report"],
        "--cluster-support does nothing with --no-report",
    ),
    "pipeline-report-paths-no-report": ([*PIPELINE, "--no-report"], "--corpus does nothing with --no-report"),
}


def entries(folder: Path) -> list[str]:
    """Every file and folder below ``folder`` (an empty folder made by a refused run shows here)."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_an_option_that_cannot_work_is_refused_before_any_work(tmp_path: Path, case: str) -> None:
    args, words = OPTION_CASES[case]
    if "--gpu" in args:
        from nlsim.search.index import gpu_count

        if gpu_count():
            pytest.skip("a GPU is visible")
    news(tmp_path)
    write_stsb_sample(tmp_path, 16, 16, 10)  # STS-B's 12th test row repeats its 11th: a warning, said
    before, names = snapshot(tmp_path), entries(tmp_path)
    proc = nlsim(*args, cwd=tmp_path)
    refused(proc, 2, words)
    said = [line for line in proc.stderr.splitlines()[:-1] if not line.startswith(("usage:", " "))]
    assert not [line for line in said if line.strip()], said  # the refusal alone: nothing loaded or run
    assert snapshot(tmp_path) == before and entries(tmp_path) == names  # nothing made: no --out, store, state


def test_a_pipeline_refused_on_a_bad_row_leaves_no_report_folder(tmp_path: Path) -> None:
    news(tmp_path, text=NEWS.replace("2024-05-01T10:00:00Z", "2024-13-45"))
    write_stsb_sample(tmp_path, 16, 16, 12)
    proc = nlsim(
        "pipeline",
        "--pairs",
        "pairs.tsv",
        "--corpus",
        "news.csv",
        "--out",
        "rep",
        "--model-store",
        "st",
        cwd=tmp_path,
    )
    refused(proc, 1, "news.csv", "published_at")
    assert not (tmp_path / "rep").exists()  # the chain made it for its hold, and took it away again
    assert not (tmp_path / "st").exists()  # and its claim of the model store, which it had not written


def test_a_pipeline_refused_on_its_report_folder_leaves_a_users_empty_store_as_it_was(tmp_path: Path) -> None:
    news(tmp_path)
    write_stsb_sample(tmp_path, 16, 16, 12)
    (tmp_path / "st").mkdir()
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "notes.txt").write_text("an editor's notes\n", encoding="utf-8")
    args = ("--pairs", "pairs.tsv", "--corpus", "news.csv", "--out", "rep", "--model-store", "st")
    proc = nlsim("pipeline", *args, cwd=tmp_path)
    refused(proc, 2, "rep")
    assert entries(tmp_path / "st") == []  # no marker, no lock guard: the user's folder as it was
    assert entries(tmp_path / "rep") == ["notes.txt"]


@pytest.mark.parametrize("out", ["rep", "empty", "new/deeper/rep"])
def test_a_batch_run_failing_after_its_checks_leaves_no_trace_of_its_hold(tmp_path: Path, out: str) -> None:
    news(tmp_path)
    if out == "empty":
        (tmp_path / out).mkdir()
    before, names = snapshot(tmp_path), entries(tmp_path)
    args = [a for a in DEDUP if a not in ("--threshold", "0.9")]  # no threshold: refused once the model loads
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", out, *args, cwd=tmp_path)
    refused(proc, 2, "no threshold for model")
    assert snapshot(tmp_path) == before  # no marker, no lock; a folder the run made is gone
    assert entries(tmp_path) == names  # and so are the parent folders it made for it
    assert (tmp_path / out).is_dir() is (out == "empty")


def test_a_refused_corpus_row_leaves_no_parent_folders_of_a_new_out(tmp_path: Path) -> None:
    (tmp_path / "news.csv").write_text("id,title\nn1,Floods hit the north\nn1,Stocks\n", encoding="utf-8")
    names = entries(tmp_path)
    proc = nlsim("dedup", "--corpus", "news.csv", "--out", "reports/today/rep", *DEDUP, cwd=tmp_path)
    refused(proc, 1, "row 2, field 'id'")
    assert entries(tmp_path) == names


def test_a_learning_curve_whose_model_cannot_load_leaves_no_out(tmp_path: Path) -> None:
    write_stsb_sample(tmp_path, 16, 16, 12)
    before, names = snapshot(tmp_path), entries(tmp_path)
    args = ["--sizes", "4", "--seeds", "1", "--baselines", "zero-shot", "--model", "models/x"]
    proc = nlsim("learning-curve", "--pairs", "pairs.tsv", "--out", "curve", *args, cwd=tmp_path)
    refused(proc, 2, "models/x")
    assert snapshot(tmp_path) == before and entries(tmp_path) == names
