"""What nlsim may write: every output path is checked where it leads, not as typed.

A path that reaches a user's folder through a folder that does not exist yet (``site/new/../../site``)
does not exist as typed; once ``new/`` is made it is the user's ``site/``. Every check resolves the path
first (and :func:`claim_folder` checks again once it has made the folders), so the user's folder is refused
by name and nothing in it changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nlsim.dedup.state import claim_state
from nlsim.errors import ConfigError
from nlsim.io.model_store import ModelStore
from nlsim.io.ownership import check_replaceable, claim_folder, is_quarantine_file
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
