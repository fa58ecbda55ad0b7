"""The report's files: one declared Parquet schema per table, the same for batch and daily runs (empty ones
too); CSV and XLSX for spreadsheet users (one row per pair, one row per cluster member); the daily report's
whole-window clusters; and permissions that follow the umask (report, state, model store, model folder)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from nlsim.clusters.table import batch_clusters
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup
from nlsim.errors import ConfigError
from nlsim.io.atomic import file_sha256
from nlsim.report.files import (
    CLUSTERS_SCHEMA,
    MEMBERS_SCHEMA,
    PAIRS_SCHEMA,
    pairs_table,
    verify_report,
    write_report,
)
from nlsim.report.record import RunRecord
from tests.incremental_helpers import HashEncoder, run_daily, split_days, story_corpus

ROOT = Path(__file__).resolve().parents[2]


def _config(corpus: Path, out: Path, threshold: float = 0.7) -> DedupConfig:
    return DedupConfig.of(
        corpus=corpus,
        out=out,
        model="hash",
        convert="none",
        threshold=threshold,
        cache=False,
        progress=False,
        save_index=False,
        text_fields=("title",),
        cluster_rule="components",  # story_corpus's bridge x1 joins A and B under this rule only
    )


def _schema(path: Path):  # noqa: ANN202
    return pq.read_schema(path).remove_metadata()


@pytest.mark.slow
def test_batch_and_daily_reports_share_one_schema_per_table(tmp_path: Path) -> None:
    enc = HashEncoder()
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    batch = run_dedup(_config(tmp_path / "all.parquet", tmp_path / "batch"), encoder=enc).report_dir
    for day in days:
        daily = run_daily(_config(day, tmp_path / "daily"), tmp_path / "state", encoder=enc).report_dir
    # items that pair with nothing: empty tables, batch and daily
    lonely = story_corpus().query("id in ['c1', 'd1', 'e1', 'f1']")
    lonely.to_parquet(tmp_path / "lonely.parquet", index=False)
    empty_batch = run_dedup(_config(tmp_path / "lonely.parquet", tmp_path / "e1"), encoder=enc).report_dir
    lonely_daily = _config(tmp_path / "lonely.parquet", tmp_path / "e2")
    empty_daily = run_daily(lonely_daily, tmp_path / "s2", encoder=enc).report_dir
    assert len(pd.read_parquet(empty_batch / "pairs.parquet")) == 0
    assert len(pd.read_parquet(empty_daily / "clusters.parquet")) == 0
    assert len(pd.read_parquet(daily / "clusters.parquet")) > 0
    for folder in (batch, daily, empty_batch, empty_daily):
        assert _schema(folder / "pairs.parquet") == PAIRS_SCHEMA, folder
        assert _schema(folder / "clusters.parquet") == CLUSTERS_SCHEMA, folder
    for folder in (daily, empty_daily):
        assert _schema(folder / "window" / "clusters.parquet") == CLUSTERS_SCHEMA
    types = {f.name: str(f.type) for f in CLUSTERS_SCHEMA}
    assert types["absorbed"] == types["added_ids"] == "list<item: string>"
    assert types["first_published"] == "timestamp[us, tz=UTC]"
    assert {str(f.type) for f in PAIRS_SCHEMA if "similarity" in f.name or f.name == "cosine"} == {"float"}


@pytest.mark.slow
def test_daily_report_publishes_the_whole_window(tmp_path: Path) -> None:
    enc = HashEncoder()
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    for day in days:
        cfg = _config(day, tmp_path / "out")
        result = run_daily(cfg, tmp_path / "state", retention_days=None, encoder=enc)
    latest = tmp_path / "out" / "latest"
    touched = pd.read_parquet(latest / "clusters.parquet")
    window = pd.read_parquet(latest / "window" / "clusters.parquet")
    assert sorted(touched["cluster_id"]) == ["c-a1", "c-d1"]  # the clusters the third run touched
    assert sorted(window["cluster_id"]) == ["c-a1", "c-c1", "c-d1"]  # every current cluster of the window
    assert dict(zip(window["cluster_id"], window["size"], strict=True)) == {"c-a1": 6, "c-c1": 2, "c-d1": 2}
    assert dict(zip(window["cluster_id"], window["status"], strict=True))["c-c1"] == "unchanged"
    members = pd.read_csv(latest / "window" / "members.csv", dtype=str, keep_default_na=False)
    assert len(members) == 10 and set(members["cluster_id"]) == {"c-a1", "c-c1", "c-d1"}
    assert set(members.loc[members["cluster_id"] == "c-c1", "item_id"]) == {"c1", "c2"}
    run = verify_report(latest)  # the window files are in run.json's hashes, and match
    assert {"window/clusters.parquet", "window/members.csv"} <= set(run["files"])
    assert result.window_clusters is not None and len(result.window_clusters) == 3


def test_csv_and_xlsx_for_spreadsheets(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "id": ["n1", "n2", "n3", "n4", "n5"],
            "title": [
                "颱風海葵登陸臺東",
                '海葵颱風登陸臺東, "快訊"\n更新',
                "颱風登陸臺東",
                "Budget",
                "Budget!",
            ],
            "source": ["中央社", "聯合報", "公視", "AP", "AFP"],
            "url": ["https://example.com/1", "", "", "", ""],
            "published_at": pd.to_datetime(
                ["2024-08-01T08:00Z", "2024-08-01T09:00Z", None, "2024-08-02T08:00Z", "2024-08-02T09:00Z"],
                utc=True,
            ),
        }
    )
    raw = pd.DataFrame({"a": [0, 1, 3], "b": [1, 2, 4], "similarity": [0.95, 0.93, 0.91]})
    labels, clusters = batch_clusters(frame, raw)
    write_report(tmp_path, pairs_table(frame, raw, labels), clusters, RunRecord(model="m"), frame=frame)

    assert (tmp_path / "pairs.csv").read_bytes()[:3] == b"\xef\xbb\xbf"  # UTF-8 with BOM: Excel reads CJK
    pairs = pd.read_csv(tmp_path / "pairs.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    assert list(pairs.columns) == PAIRS_SCHEMA.names and len(pairs) == 3
    assert set(pairs["title_b"]) >= {'海葵颱風登陸臺東, "快訊"\n更新'}  # quoting and newlines survive
    assert pairs.loc[pairs["id_a"] == "n1", "published_at_a"].item() == "2024-08-01T08:00:00+00:00"

    members = pd.read_csv(tmp_path / "members.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    assert list(members.columns) == MEMBERS_SCHEMA.names
    assert len(members) == int(clusters["size"].sum()) == 5  # one row per member
    assert members.groupby("cluster_id")["representative"].apply(lambda s: (s == "True").sum()).eq(1).all()
    row = members.set_index("item_id").loc["n1"]
    assert (row["cluster_id"], row["title"], row["source"], row["url"]) == (
        "c-n1",
        "颱風海葵登陸臺東",
        "中央社",
        "https://example.com/1",
    )
    assert members.set_index("item_id").loc["n3", "published_at"] == ""  # undated: empty, not NaT

    sheets = pd.read_excel(tmp_path / "report.xlsx", sheet_name=None, dtype=str)
    assert list(sheets) == ["clusters", "topics", "members", "pairs"]
    assert len(sheets["clusters"]) == 2 and len(sheets["members"]) == 5 and len(sheets["pairs"]) == 3
    big = sheets["clusters"].set_index("cluster_id").loc["c-n1"]
    assert big["member_ids"] == "n1, n2, n3" and big["sources"] == "中央社, 公視, 聯合報"  # lists as text


FILES_UNDER_UMASK = r"""
import json, os, sys
from pathlib import Path
os.umask(0o027)
root = Path(sys.argv[1])
from stsb_helpers import write_stsb_sample
from nlsim.evaluation.calibration import calibrate, save_calibration
from nlsim.encoders import load_encoder
from nlsim.io.model_store import ModelStore
from nlsim.io.pairs import load_pairs
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup
from nlsim.training.config import FinetuneConfig
from nlsim.training.finetune import finetune

(root / "in").mkdir()
pairs = write_stsb_sample(root / "in", train=16, validation=16, test=8)
store = ModelStore(root / "models")
store.claim()
version = store.new_version_dir("0123456789abcdef")
finetune(FinetuneConfig.of(pairs=str(pairs), out=str(version), model="paraphrase-MiniLM-L3-v2",
                        conversion="none", epochs=1, batch_size=8, calibrate_level=0.6, threads=1))
store.write_info(version, {"fingerprint": "0123456789abcdef"})
store.promote(version, "test")
validation = load_pairs(pairs).query("split == 'validation'")
cal = calibrate(load_encoder("paraphrase-MiniLM-L3-v2"), validation, level=0.6, conversion="none")
save_calibration(cal, root / "calibration.json")
corpus = root / "in" / "news.csv"
corpus.write_text("id,title,published_at\n1,Floods hit the north,2024-01-01\n"
                  "2,Floods hit the north!,2024-01-01\n")
common = dict(corpus=corpus, model="current", model_store=str(root / "models"), convert="none",
              threshold=0.5, progress=False)
run_dedup(DedupConfig.of(out=str(root / "report"), **common))
run_dedup(DedupConfig.of(out=str(root / "daily"), state=str(root / "state"), **common))
"""


@pytest.mark.slow
def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    """A worker or web server running as another user must be able to read what nlsim wrote: under umask
    027 every file is 0640 and every folder 0750 (never the 0600 of a bare temporary file)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
        "NLSIM_HOME": str(tmp_path / "home"),  # the converted base model and the embedding cache too
        "NLSIM_PROGRESS": "off",
    }
    proc = subprocess.run(
        [sys.executable, "-c", FILES_UNDER_UMASK, str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    checked: dict[str, int] = {}
    wrong = []
    for top in ("models", "calibration.json", "report", "daily", "state", "home"):
        base = tmp_path / top
        for p in [base, *base.rglob("*")] if base.is_dir() else [base]:
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            want = 0o750 if stat.S_ISDIR(st.st_mode) else 0o640
            checked[top] = checked.get(top, 0) + 1
            if stat.S_IMODE(st.st_mode) != want:
                wrong.append(f"{p.relative_to(tmp_path)} {oct(stat.S_IMODE(st.st_mode))}")
    assert not wrong, wrong
    version = json.loads((tmp_path / "models" / "CURRENT.json").read_text())["version"]
    model = tmp_path / "models" / "versions" / version
    for name in ("model.safetensors", "calibration.json", "training.json", "reranker/model.safetensors"):
        assert (model / name).is_file(), name  # the model folder's weights were among the files checked
    daily = tmp_path / "daily"
    assert (daily / "LATEST").is_file() and (daily / "latest" / "index.html").is_file()
    assert (tmp_path / "state" / "MANIFEST.json").is_file() or any((tmp_path / "state").glob("MANIFEST*"))
    assert all(checked.get(k, 0) > 1 for k in ("models", "report", "daily", "state", "home")), checked


def test_a_report_run_again_refuses_to_replace_a_file_someone_changed_or_put_inside_its_folders(
    tmp_path: Path,
) -> None:
    """A file inside the report's index/ that nlsim did not write, and a report file an editor changed, stop
    the next run into the folder before any work, naming the file; both are still there, and the folder is
    the earlier run's. A note beside the report's files is left alone, and once the changed files are moved
    away the run goes on."""
    enc = HashEncoder()
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    out = tmp_path / "rep"
    cfg = _config(tmp_path / "all.parquet", out).with_(save_index=True)
    run_dedup(cfg, encoder=enc)
    (out / "notes.txt").write_text("the desk's notes\n")
    folders = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert [p.name for p in folders] == ["index"]
    for folder in folders:
        mine = folder / "mine.txt"
        mine.write_text("kept by an editor\n")
        with pytest.raises(ConfigError, match=r"mine\.txt: not a file nlsim wrote"):
            run_dedup(cfg, encoder=enc)
        assert mine.read_text() == "kept by an editor\n"
        mine.unlink()
    before = (out / "run.json").read_bytes()
    with (out / "pairs.csv").open("a", encoding="utf-8") as fh:
        fh.write("checked by the desk\n")
    with pytest.raises(ConfigError, match=r"pairs\.csv changed since nlsim wrote it"):
        run_dedup(cfg, encoder=enc)
    assert (out / "pairs.csv").read_text(encoding="utf-8").endswith("checked by the desk\n")
    assert (out / "run.json").read_bytes() == before
    (out / "pairs.csv").rename(tmp_path / "pairs-checked.csv")
    run_dedup(cfg, encoder=enc)
    assert verify_report(out)["files"] and (out / "notes.txt").read_text() == "the desk's notes\n"


@pytest.mark.parametrize("short_write", [False, True])
def test_a_disk_that_fills_while_the_report_is_written_is_named_and_the_earlier_report_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short_write: bool
) -> None:
    """A write that runs out of space raises an OSError naming no file (the file was opened; its write
    failed; numpy's ``np.save`` says only '23040 requested and 4064 written'): the error names the report
    folder, so that the user knows which disk filled, and the earlier report is left whole, with no staging
    folder beside it."""
    import errno

    import nlsim.report.files as files

    enc = HashEncoder()
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    out = tmp_path / "rep"
    cfg = _config(tmp_path / "all.parquet", out)
    run_dedup(cfg, encoder=enc)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}

    def full(*args: object, **kwargs: object) -> None:
        if short_write:
            raise OSError("23040 requested and 4064 written")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "write_stories_json", full)
    with pytest.raises(OSError, match="written" if short_write else "No space left on device") as info:
        run_dedup(cfg, encoder=enc)
    assert info.value.errno == (None if short_write else errno.ENOSPC)
    assert info.value.filename == str(out)
    assert "report" in str(info.value)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not list(out.glob(".staging-*"))
    verify_report(out)


def test_a_file_the_earlier_report_wrote_and_the_new_one_does_not_is_taken_away(tmp_path: Path) -> None:
    """The earlier run's model had a learning curve (learning_curve.png, listed in its run.json); the new
    run's has none: the new report does not leave the other model's curve beside it. A file nlsim never
    wrote is left alone (one of the earlier run's that was changed since stops the run: see above)."""
    enc = HashEncoder()
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    out = tmp_path / "rep"
    cfg = _config(tmp_path / "all.parquet", out)
    run_dedup(cfg, encoder=enc)
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    for name in ("learning_curve.png", "older.md"):  # as an earlier run wrote and listed them
        (out / name).write_bytes(name.encode())
        record["files"][name] = file_sha256(out / name)
    (out / "run.json").write_text(json.dumps(record), encoding="utf-8")
    (out / "notes.txt").write_text("the desk's notes\n")
    run_dedup(cfg, encoder=enc)
    assert not (out / "learning_curve.png").exists() and not (out / "older.md").exists()
    assert (out / "notes.txt").read_text() == "the desk's notes\n"
    assert "learning_curve.png" not in verify_report(out)["files"]


@pytest.mark.parametrize("name", ["index", "pairs.csv"])
def test_a_report_name_made_a_symbolic_link_is_refused_before_any_work(tmp_path: Path, name: str) -> None:
    """The report's index/ moved to another disk and linked back (or pairs.csv linked to a shared copy): a
    new report replaces the name whole, so it would set the user's link aside under a hidden name and
    write the files beside it. The run stops before any work, naming the link; link and target are kept."""
    enc = HashEncoder()
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    out = tmp_path / "rep"
    cfg = _config(tmp_path / "all.parquet", out).with_(save_index=True)
    run_dedup(cfg, encoder=enc)
    elsewhere = tmp_path / "other-disk" / name
    elsewhere.parent.mkdir()
    (out / name).rename(elsewhere)
    (out / name).symlink_to(elsewhere)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ConfigError, match=rf"{re.escape(name)}: a symbolic link"):
        run_dedup(cfg, encoder=enc)
    assert (out / name).is_symlink() and (out / name).resolve() == elsewhere.resolve()
    assert sorted(p.name for p in out.iterdir()) == before and elsewhere.exists()


def test_a_report_name_holding_a_folder_for_a_file_or_a_file_for_a_folder_is_refused_before_any_move(
    tmp_path: Path,
) -> None:
    """A file an editor saved as ``index`` where the report keeps its folder was set aside under a hidden
    name, and a folder at a report file's name (``pairs.csv/``) stopped the move half way, the folder mixed,
    every later run stopped the same way. Both are refused by name, before the model or any move; the
    user's file and folder are as they were, and so is the report."""
    from nlsim.io.report_folder import check_report_replaceable

    enc = HashEncoder()
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    out = tmp_path / "rep"
    cfg = _config(tmp_path / "all.parquet", out).with_(save_index=True)
    run_dedup(cfg, encoder=enc)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "pairs.csv"}
    shutil.rmtree(out / "index")
    (out / "index").write_text("the desk's index of stories\n")
    with pytest.raises(ConfigError, match=r"rep/index: a file where the report writes its folder"):
        run_dedup(cfg, encoder=enc)
    assert (out / "index").read_text() == "the desk's index of stories\n"
    (out / "index").unlink()
    (out / "pairs.csv").unlink()
    (out / "pairs.csv").mkdir()
    (out / "pairs.csv" / "mine.txt").write_text("kept\n")
    with pytest.raises(ConfigError, match=r"rep/pairs\.csv: a folder where the report writes its file"):
        run_dedup(cfg, encoder=enc)
    assert (out / "pairs.csv" / "mine.txt").read_text() == "kept\n"
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not list(out.glob(".staging-*")) and not list(out.glob(".*.old-*"))
    staged = tmp_path / "staged"  # a name the last run.json does not list: checked against the new report
    staged.mkdir()
    (staged / "stories.png").write_bytes(b"png")
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    del record["files"]["stories.png"]  # as an older report, without the plot
    (out / "run.json").write_text(json.dumps(record), encoding="utf-8")
    (out / "stories.png").unlink()
    (out / "stories.png").mkdir()
    check_report_replaceable(out, ["stories.png"])
    with pytest.raises(ConfigError, match=r"rep/stories\.png: a folder where the report writes its file"):
        check_report_replaceable(out, ["stories.png"], staged=staged)


def test_a_daily_report_written_again_refuses_to_drop_a_file_put_in_its_run_folder(tmp_path: Path) -> None:
    """A replay writes its run's report again (OUT/runs/<run id>/ replaced whole): a file someone put in
    that folder, or one changed there, stops it, naming the file, and is still there after."""
    enc = HashEncoder()
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    cfg, state = _config(days[0], tmp_path / "out"), tmp_path / "state"
    first = run_daily(cfg, state, retention_days=None, encoder=enc)
    note = first.report_dir / "window" / "notes.txt"
    note.write_text("mine\n")
    with pytest.raises(ConfigError, match=r"notes\.txt: not a file nlsim wrote"):
        run_daily(cfg, state, retention_days=None, encoder=enc)
    assert note.read_text() == "mine\n"
    note.unlink()
    assert run_daily(cfg, state, retention_days=None, encoder=enc).replayed


def test_a_state_inside_the_report_folder_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    enc = HashEncoder()
    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    out = tmp_path / "r5"
    with pytest.raises(ConfigError, match=r"--state .*r5/state lies inside --out .*r5"):
        run_daily(_config(tmp_path / "all.parquet", out), out / "state", encoder=enc)
    assert not out.exists()


def test_a_latest_that_became_a_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    """A copy or backup tool turned OUT/latest (a link) into a folder: the next daily run is refused before
    it commits anything, naming it, and the state and the folder are as they were."""
    enc = HashEncoder()
    days = split_days(story_corpus(), tmp_path / "in", ["2005-03-02", "2005-03-03"])
    out, state = tmp_path / "out", tmp_path / "state"
    first = run_daily(_config(days[0], out), state, retention_days=None, encoder=enc)
    (out / "latest").unlink()
    shutil.copytree(first.report_dir, out / "latest")
    manifest = (state / "MANIFEST.json").read_bytes()
    with pytest.raises(ConfigError, match=r"latest is a folder, not the link nlsim keeps"):
        run_daily(_config(days[1], out), state, retention_days=None, encoder=enc)
    assert (state / "MANIFEST.json").read_bytes() == manifest
    assert (out / "latest" / "run.json").is_file() and not list(out.glob(".latest-*"))


def test_what_the_report_check_lets_through(tmp_path: Path) -> None:
    """A top-level report file an earlier run wrote and the last run.json does not list (a learning curve
    left by a model that had one) is replaced as before; a folder an older nlsim's run.json did not list is
    not checked; what a file browser leaves inside the report's folders is not a user's file."""
    from nlsim.io.report_folder import check_report_replaceable

    out = tmp_path / "rep"
    (out / "index").mkdir(parents=True)
    (out / "pairs.csv").write_text("id_a,id_b\n")
    (out / "index" / "ids.json").write_text("[]")
    (out / "window").mkdir()
    (out / "window" / "old.parquet").write_text("older nlsim")
    files = {
        "pairs.csv": file_sha256(out / "pairs.csv"),
        "index/ids.json": file_sha256(out / "index/ids.json"),
    }
    (out / "run.json").write_text(json.dumps({"files": files}))
    (out / "learning_curve.png").write_bytes(b"an earlier run's")
    (out / "index" / ".DS_Store").write_bytes(b"finder")
    (out / "index" / "._ids.json").write_bytes(b"a resource fork")
    check_report_replaceable(out, ["index", "learning_curve.png", "pairs.csv", "window"])
    check_report_replaceable(out)
    (out / "index" / "mine.txt").write_text("x")
    with pytest.raises(ConfigError, match=r"index/mine\.txt: not a file nlsim wrote"):
        check_report_replaceable(out)


def test_a_quarantine_file_may_lie_in_the_report_folder_but_a_state_may_not() -> None:
    from nlsim.io.ownership import check_outputs_apart

    outputs = {"--out": "rep", "--quarantine": "rep/quarantine.csv", "--state": None}
    check_outputs_apart({}, outputs, folders=("--out", "--state"))
    with pytest.raises(ConfigError, match="lies inside"):
        check_outputs_apart({}, {"--out": "rep", "--state": "rep/state"}, folders=("--out", "--state"))


@pytest.mark.parametrize(
    ("quarantine", "state", "reason"),
    [
        ("rep/pairs.csv", None, "the report's own file pairs.csv"),
        ("rep/run.json", None, "the report's own file run.json"),
        ("rep/index/q.csv", None, "a subfolder of --out"),
        ("rep/runs/q.csv", None, "a subfolder of --out"),
        ("st/q.csv", "st", "inside --state"),
    ],
)
def test_a_quarantine_file_the_report_would_write_over_is_refused_before_any_work(
    tmp_path, quarantine, state, reason
) -> None:
    from nlsim.dedup.paths import check_quarantine_beside

    with pytest.raises(ConfigError, match=re.escape(reason)):
        check_quarantine_beside(
            tmp_path / quarantine, tmp_path / "rep", None if state is None else tmp_path / state
        )
    check_quarantine_beside(tmp_path / "rep" / "bad_rows.csv", tmp_path / "rep", tmp_path / "st")
    check_quarantine_beside(tmp_path / "elsewhere.csv", tmp_path / "rep")


@pytest.mark.parametrize(
    ("run", "says"),
    [
        ("[]", "not a JSON object of the run's record: a JSON list"),
        ("null", "not a JSON object of the run's record: a JSON null"),
        ("", "empty"),
        ('{"files": ', "not valid JSON"),
        ('{"count": 3}', "lists no report files with their SHA-256"),
        ('{"files": ["pairs.csv"]}', "lists no report files with their SHA-256"),
    ],
)
def test_verify_report_refuses_a_run_json_that_lists_no_files_by_name(
    tmp_path: Path, run: str, says: str
) -> None:
    """verify_report says a report folder is not whole with a ValueError naming the file; a run.json
    holding a list or null, or no listing of files, gave a TypeError or KeyError traceback instead."""
    (tmp_path / "run.json").write_text(run, encoding="utf-8")
    with pytest.raises(ValueError, match=r"run\.json: " + re.escape(says)):
        verify_report(tmp_path)


def test_verify_report_says_a_listed_file_that_is_gone_by_name(tmp_path: Path) -> None:
    """A report file that run.json lists and the folder no longer holds (deleted, or a copy of the folder cut
    short) stopped verify_report in a FileNotFoundError, where a file that does not match is a ValueError
    naming it: the folder is not whole either way."""
    (tmp_path / "run.json").write_text('{"files": {"pairs.csv": "ab"}}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"pairs\.csv: listed in run\.json, missing"):
        verify_report(tmp_path)


def test_pairs_are_listed_by_cluster_then_highest_score_then_their_ids() -> None:
    """The pairs table lists each cluster's pairs highest score first, pairs of one score by their first
    item's id, then their second's."""
    from nlsim.report.files import pairs_table

    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": ["t"] * 4,
            "published_at": pd.to_datetime(["2024-08-01T00:00Z"] * 4, utc=True),
        }
    )
    found = pd.DataFrame({"a": [0, 1, 0, 0], "b": [2, 2, 3, 1], "similarity": [0.91, 0.95, 0.95, 0.99]})
    labels = pd.Series(["c-1"] * 4)
    out = pairs_table(frame, found, labels)
    assert list(zip(out["id_a"], out["id_b"], strict=True)) == [
        ("a", "b"),
        ("a", "d"),
        ("b", "c"),
        ("a", "c"),
    ]


def test_members_csv_tells_each_members_topic_whether_it_was_added_and_only_its_own_text() -> None:
    """A member's row holds its cluster's topic, whether it joined in this run, and its own title: a member
    the items frame lacks has an empty title, not another item's; a frame without times gives empty
    times."""
    from nlsim.report.files import members_table

    clusters = pd.DataFrame(
        {
            "cluster_id": ["c-1"],
            "topic_id": ["t-1"],
            "member_ids": [["a", "b", "gone"]],
            "added_ids": [["b"]],
            "representative": ["a"],
        }
    )
    frame = pd.DataFrame({"id": ["a", "b"], "title": ["First", "Second"], "source": ["AP", "AFP"]})
    out = members_table(clusters, frame)
    assert out["topic_id"].tolist() == ["t-1"] * 3
    assert out["added"].tolist() == [False, True, False]
    assert out["title"].tolist() == ["First", "Second", ""]
    assert out["published_at"].isna().all()


def test_a_finished_record_is_written_as_it_is() -> None:
    """A record the run finished before its report is written (its finish time, its spreadsheet changes) is
    the one run.json holds: finishing it again changes nothing."""
    from nlsim.report.files import finished

    done = RunRecord(model="m", finished_at="2026-03-03T00:00:00+00:00", spreadsheet_changes=[])
    assert finished(done, None, {"pairs.csv": {"pairs": pd.DataFrame({"id_a": ["=x"]})}}) is done


def test_sweeping_takes_nlsims_unfinished_folders_and_leaves_the_rest(tmp_path: Path) -> None:
    """A killed report write leaves ``.staging-*``, ``.*.old-*`` and ``.*.tmp-*`` folders: they are taken
    away; a user's folders and files are left."""
    from nlsim.report.files import sweep_staging

    for name in (".staging-1", ".r1.old-2", ".r1.tmp-3", "mine.tmp-4", "notes"):
        (tmp_path / name).mkdir()
    (tmp_path / ".staging-file").write_text("x", encoding="utf-8")
    assert sorted(sweep_staging(tmp_path)) == [".r1.old-2", ".r1.tmp-3", ".staging-1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".staging-file", "mine.tmp-4", "notes"]


def test_a_chain_record_that_is_a_link_is_left_where_it_points(tmp_path: Path) -> None:
    """The chain's record beside a new report is removed when it is the chain's own file; a link named so
    (to a record elsewhere) is left, and so is what it points at."""
    from nlsim.report.files import CHAIN_RECORD, drop_chain_record

    elsewhere = tmp_path / "kept.json"
    elsewhere.write_text(json.dumps({"decision": "keep"}), encoding="utf-8")
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / CHAIN_RECORD).symlink_to(elsewhere)
    assert drop_chain_record(folder) == []
    assert (folder / CHAIN_RECORD).is_symlink() and elsewhere.is_file()
    (folder / CHAIN_RECORD).unlink()
    (folder / CHAIN_RECORD).write_text(json.dumps({"decision": "keep"}), encoding="utf-8")
    assert drop_chain_record(folder) == [folder / CHAIN_RECORD]
