"""What nlsim may write: every output path is checked where it leads, not as typed.

A path that reaches a user's folder through a folder that does not exist yet (``site/new/../../site``)
does not exist as typed; once ``new/`` is made it is the user's ``site/``. Every check resolves the path
first (and :func:`claim_folder` checks again once it has made the folders), so the user's folder is refused
by name and nothing in it changes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nlsim.dedup.state import claim_state
from nlsim.errors import ConfigError, OutputError
from nlsim.io.model_store import ModelStore
from nlsim.io.ownership import (
    MARKER,
    check_claimable,
    check_outputs_apart,
    check_outside_stores,
    check_replaceable,
    check_writable,
    claim_folder,
    is_json_record,
    is_owned,
    is_quarantine_file,
    traceless,
)
from nlsim.training.finetune import check_model_out


def _site(tmp_path: Path) -> dict[Path, bytes]:
    files = {
        tmp_path / "site" / "index.html": b"<p>my own page</p>",
        tmp_path / "site" / "index" / "mine.txt": b"mine",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


CLAIMS: dict[str, Callable[[Path], object]] = {
    "report (--out)": lambda p: claim_folder(p, "report", what="--out"),
    "daily report (--out)": lambda p: claim_folder(p, "daily-report", what="--out"),
    "state (--state)": lambda p: claim_state(p),
    "model store (--model-store)": lambda p: ModelStore(p).claim(),
    "model folder (finetune --out)": check_model_out,
}


@pytest.mark.parametrize("claim", list(CLAIMS))
@pytest.mark.parametrize("typed", ["site/new/../../site", "site/new/deeper/../../../site"])
def test_a_path_through_a_folder_not_made_yet_is_checked_where_it_leads(
    tmp_path: Path, claim: str, typed: str
) -> None:
    files = _site(tmp_path)
    with pytest.raises(ConfigError, match=r"not empty|did not write"):
        CLAIMS[claim](tmp_path / typed)
    assert {p: p.read_bytes() for p in files} == files
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == ["index", "index.html"]


@pytest.mark.parametrize("claim", [c for c in CLAIMS if "finetune" not in c])
def test_a_new_folder_through_dotdot_is_still_claimed(tmp_path: Path, claim: str) -> None:
    (tmp_path / "out").mkdir()
    CLAIMS[claim](tmp_path / "out" / "new" / ".." / "report")
    assert (tmp_path / "out" / "report" / ".nlsim.json").is_file()


def test_an_output_file_through_a_folder_not_made_yet_is_checked_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    notes = tmp_path / "site" / "notes.csv"
    notes.write_text("precious,notes\n")
    with pytest.raises(ConfigError, match=r"not a quarantine file"):
        check_replaceable(
            tmp_path / "site" / "new" / ".." / "notes.csv",
            is_quarantine_file,
            what="--quarantine",
            kind="quarantine file",
        )
    assert notes.read_text() == "precious,notes\n"
    assert not (tmp_path / "site" / "new").exists()


@pytest.mark.parametrize("litter", [".DS_Store", "Thumbs.db", "._notes.txt"])
def test_a_folder_holding_only_what_a_file_browser_left_is_empty(tmp_path: Path, litter: str) -> None:
    """A folder made for the report and opened in Finder or Explorer holds a .DS_Store or Thumbs.db: it is
    as empty as it looks, so the report is written into it, and the browser's file is left as it was."""
    out = tmp_path / "report"
    out.mkdir()
    (out / litter).write_bytes(b"browser")
    claim_folder(out, "report", what="--out")
    assert (out / ".nlsim.json").is_file() and (out / litter).read_bytes() == b"browser"


def test_a_folder_nlsim_refuses_is_told_by_what_it_holds(tmp_path: Path) -> None:
    """The refusal names what makes the folder not empty (a hidden file the user does not see)."""
    out = tmp_path / "report"
    out.mkdir()
    (out / ".gitkeep").write_bytes(b"")
    (out / ".DS_Store").write_bytes(b"browser")
    with pytest.raises(
        ConfigError, match=r"not empty and was not written by nlsim \(no \.nlsim\.json; it holds \.gitkeep\)"
    ):
        claim_folder(out, "report", what="--out")


def _folder(path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    return path


def _run_json(files: dict[str, str]) -> str:
    return json.dumps({"files": {n: hashlib.sha256(t.encode()).hexdigest() for n, t in files.items()}})


CURVE_TABLE = "size,runs,spearman_mean,spearman_sd,pearson_mean\n20,3,0.5,0.1,0.5\n"
NOT_OURS = {
    "a marker naming no kind nlsim writes": ("report", {MARKER: '{"written_by": "nlsim", "kind": "photos"}'}),
    "a report's record listing no files": ("report", {"run.json": '{"files": {}}', "notes.txt": "mine"}),
    "a report's record one of whose files was edited": (
        "report",
        {"run.json": _run_json({"a.csv": "a", "b.csv": "b"}), "a.csv": "a", "b.csv": "edited"},
    ),
    "a model record of another format": ("model", {"nlsim.json": '{"format": 2, "model_id": "m"}'}),
    "a model record naming no model": ("model", {"nlsim.json": '{"format": 1}'}),
    "a curve's table beside a user's half-written file": (
        "learning-curve",
        {"learning_curve.csv": CURVE_TABLE, ".notes.md.k3x_9a2b.tmp": "mine"},
    ),
    "a table that is no curve's": ("learning-curve", {"learning_curve.csv": "name,size,runs\n"}),
    "a point with no test figures": ("learning-curve", {"runs/size8_seed1.json": '{"size": 8, "seed": 1}'}),
}


@pytest.mark.parametrize(("kind", "files"), NOT_OURS.values(), ids=NOT_OURS.keys())
def test_a_folder_is_nlsims_only_by_a_record_nlsim_writes_whole(
    tmp_path: Path, kind: str, files: dict[str, str]
) -> None:
    folder = _folder(tmp_path / "out", files)
    assert not is_owned(folder, kind)
    with pytest.raises(ConfigError, match="was not written by nlsim"):
        claim_folder(folder, kind)


def test_a_folder_nlsim_wrote_as_another_kind_is_named_by_its_kind(tmp_path: Path) -> None:
    claim_folder(tmp_path / "state", "state")
    (tmp_path / "state" / "MANIFEST.json").write_text("{}")
    with pytest.raises(ConfigError, match="is an nlsim state folder, not a report folder"):
        claim_folder(tmp_path / "state", "report", what="--out")


@pytest.mark.parametrize(("count", "more"), [(3, ""), (4, ", ... (4 in all)")])
def test_a_refused_folder_names_three_of_its_files_and_how_many_in_all(
    tmp_path: Path, count: int, more: str
) -> None:
    folder = _folder(tmp_path / "out", {f"f{i}.txt": "mine" for i in range(count)})
    with pytest.raises(ConfigError) as raised:
        claim_folder(folder, "report")
    assert f"it holds f0.txt, f1.txt, f2.txt{more}); refusing" in str(raised.value)


def test_a_failed_run_that_wrote_more_than_its_claim_keeps_all_of_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="late"):
        with traceless([out]):
            claim_folder(out, "report")
            (out / "pairs.csv").write_text("a,b\n")
            raise ValueError("late")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "pairs.csv"]


def test_a_broken_link_as_an_output_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    with pytest.raises(ConfigError, match="is a broken symbolic link"):
        check_claimable(tmp_path / "out", "report", what="--out")
    assert not (tmp_path / "gone").exists()


def test_an_output_left_empty_is_not_checked_against_the_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # "" is no path, not the working folder, which holds the corpus
    check_outputs_apart({"--corpus": "news.csv"}, {"--quarantine": "", "--out": None})


def test_a_model_store_itself_is_refused_as_an_output(tmp_path: Path) -> None:
    claim_folder(tmp_path / "models", "model-store")
    with pytest.raises(ConfigError, match="is the model store"):
        check_outside_stores({"--out": tmp_path / "models"})
    check_outside_stores({"--out": tmp_path / "report", "--quarantine": None})


def test_a_folder_at_an_output_files_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad_rows.csv").mkdir()
    with pytest.raises(ConfigError, match="is a folder, not a file"):
        check_replaceable(
            tmp_path / "bad_rows.csv", is_quarantine_file, what="--quarantine", kind="quarantine"
        )


@pytest.mark.parametrize(
    ("header", "ours"),
    [("row,field,reason", True), ("row,field,reason,id,title", True), ("row,field,reasons", False)],
)
def test_a_quarantine_file_is_told_by_its_whole_header(tmp_path: Path, header: str, ours: bool) -> None:
    (tmp_path / "q.csv").write_text(header + "\n")
    assert is_quarantine_file(tmp_path / "q.csv") is ours


def test_a_json_record_is_nlsims_only_with_every_key(tmp_path: Path) -> None:
    (tmp_path / "cal.json").write_text('{"threshold": 0.5}')
    assert is_json_record(tmp_path / "cal.json", {"threshold"})
    assert not is_json_record(tmp_path / "cal.json", {"threshold", "model"})


def test_an_output_in_a_folder_that_cannot_be_entered_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder the user may write but not enter (no x bit for them; root enters every folder, so the
    system's answer is stood in for) cannot take a file: refused before any work."""
    import nlsim.io.ownership as ownership

    monkeypatch.setattr(ownership.os, "access", lambda path, mode: not mode & ownership.os.X_OK)
    with pytest.raises(OutputError, match="is not a writable folder"):
        check_writable(tmp_path / "report")
