"""The quality check's record as runs read it: today's name, and the earlier one still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlsim.inference.quality_check import (
    QUALITY_CHECK_JSON,
    RECORD_FORMAT,
    load_quality_check,
    save_quality_check,
)


def record(identity: str, kind: str = "encoder") -> dict:
    return {"format": RECORD_FORMAT, "kind": kind, "identity": identity, "paths": {}}


def test_records_are_written_under_one_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    written = save_quality_check(record("abc"))
    assert written.parent == tmp_path / "quality-check"
    assert load_quality_check("encoder", "abc") == (record("abc"), str(written))
    folder = tmp_path / "model"
    folder.mkdir()
    mine = save_quality_check(record("def"), folder / QUALITY_CHECK_JSON)
    assert load_quality_check("encoder", "def", folder)[1] == str(mine)


def test_records_stored_under_the_earlier_names_are_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    folder = tmp_path / "model"
    (folder / "reranker").mkdir(parents=True)
    (folder / "precision.json").write_text(json.dumps(record("enc")), encoding="utf-8")
    (folder / "reranker" / "precision.json").write_text(json.dumps(record("ce", "cross-encoder")))
    assert load_quality_check("encoder", "enc", folder)[1] == str(folder / "precision.json")
    found, where = load_quality_check("cross-encoder", "ce", folder / "reranker")
    assert found is not None and where.endswith("reranker/precision.json")
    (tmp_path / "precision").mkdir()
    (tmp_path / "precision" / "ce-home.json").write_text(json.dumps(record("home", "cross-encoder")))
    assert load_quality_check("cross-encoder", "home")[0] == record("home", "cross-encoder")
    # today's name wins over the earlier one
    save_quality_check(record("enc") | {"paths": {"x": {}}}, folder / QUALITY_CHECK_JSON)
    assert load_quality_check("encoder", "enc", folder)[0]["paths"] == {"x": {}}
