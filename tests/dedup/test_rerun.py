"""The newest day run again with other settings: ``OUT/latest`` shows the day's whole report under them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.dedup.test_daily import _config, _two_days
from tests.incremental_helpers import HashEncoder, report_content, run_daily


def _day_report(folder: Path) -> dict[str, Any]:
    """What an editor reads of a day's report: each cluster's id, status, members and joined items, and the
    pairs."""
    shown = report_content(folder)
    clusters = {
        c["cluster_id"]: (c["status"], c["member_ids"], c["added_ids"], c["absorbed"])
        for c in shown["clusters"]
    }
    pairs = {(p["id_a"], p["id_b"], p["cluster_id"]) for p in shown["pairs"]}
    return {"clusters": clusters, "pairs": pairs}


def _run_json(out: Path) -> dict[str, Any]:
    return json.loads((out / "latest" / "run.json").read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("change", [{"index_kind": "hnsw"}, {"index_kind": "ivf", "nlist": 2}])
def test_the_last_day_run_again_with_another_index_publishes_its_whole_report(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """Another ``--index`` is a new run (the state keeps the index it asks for), whose report, published as
    ``latest``, is the day's: its clusters, their statuses and its pairs, never an empty one."""
    state, out, days, r2 = _two_days(tmp_path)
    before = _day_report(r2.report_dir)
    again = run_daily(_config(days[1], out, **change), state, retention_days=None, encoder=HashEncoder())
    assert not again.replayed and again.run_id != r2.run_id
    assert (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == before
    assert _run_json(out)["counts"]["clusters"] == 2


@pytest.mark.slow
def test_the_newest_day_run_again_after_an_older_days_run_publishes_its_whole_report(tmp_path: Path) -> None:
    """Days 1 and 2, day 1 again (an older day: ``latest`` stays on day 2), then day 2 again: ``latest``
    is day 2's report, its clusters and pairs as first published, never an empty one."""
    state, out, days, r2 = _two_days(tmp_path)
    before = _day_report(r2.report_dir)
    older = run_daily(_config(days[0], out), state, retention_days=None, encoder=HashEncoder())
    assert older.stats.older_day and (out / "latest").resolve() == r2.report_dir.resolve()
    again = run_daily(_config(days[1], out), state, retention_days=None, encoder=HashEncoder())
    assert (out / "latest").resolve() == again.report_dir.resolve()
    assert _day_report(out / "latest") == before
