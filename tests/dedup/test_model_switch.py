"""A daily run after a model change (a promotion, another threshold) marks every cluster it changed, through
``python -m nlsim dedup --state``: a cluster the new model dissolves is reported with the status
``dissolved`` and its former members, counted, and named in the run record, not dropped without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.command import nlsim

RUN = ["--model", "paraphrase-MiniLM-L3-v2", "--convert", "none", "--no-cache", "--no-progress"]
DAY1 = [
    ("a1", "Floods hit the north of the country", "AP", "2026-11-20T08:00Z"),
    ("a2", "Floods hit the north of the country again", "AFP", "2026-11-20T09:00Z"),  # cosine 0.939 to a1
    ("b1", "Stock markets fall sharply", "AP", "2026-11-20T10:00Z"),
    ("b2", "Stock markets fall sharply", "Reuters", "2026-11-20T11:00Z"),
]
DAY2 = [("d1", "Football club wins the cup", "BBC", "2026-11-21T08:00Z")]


def write(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    frame = pd.DataFrame(rows, columns=["id", "title", "source", "published_at"])
    frame.to_parquet(path, index=False)
    return path


def dedup(folder: Path, corpus: str, threshold: str) -> dict[str, object]:
    args = ["dedup", "--corpus", corpus, "--state", "st", "--out", "daily", *RUN, "--threshold", threshold]
    proc = nlsim(*args, "--json", cwd=folder)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_cluster_the_new_model_dissolves_is_reported(tmp_path: Path) -> None:
    write(tmp_path / "day1.parquet", DAY1)
    write(tmp_path / "day2.parquet", DAY2)
    first = dedup(tmp_path, "day1.parquet", "0.9")
    assert first["counts"]["clusters_new"] == 2  # c-a1 (a1, a2) and c-b1
    second = dedup(tmp_path, "day2.parquet", "0.95")  # the state was made at 0.9: the window is paired again
    assert second["model_switch"]
    report = tmp_path / "daily" / "latest"
    clusters = pd.read_parquet(report / "clusters.parquet").set_index("cluster_id")
    assert clusters.loc["c-a1", "status"] == "dissolved"
    assert list(clusters.loc["c-a1", "member_ids"]) == ["a1", "a2"]
    assert clusters.loc["c-a1", "representative_title"] == DAY1[0][1]
    window = pd.read_parquet(report / "window" / "clusters.parquet")
    assert list(window["cluster_id"]) == ["c-b1"]  # the window's current clusters: c-a1 is gone
    # c-b1 came out of the switch as it was: its pair, found again, is the window's, not the day's; every
    # pair of the day's file has its cluster in the day's clusters file
    pairs = pd.read_parquet(report / "pairs.parquet")
    assert set(pairs["cluster_id"]) <= set(clusters.index) and second["counts"]["pairs"] == len(pairs) == 0
    assert second["counts"]["clusters_dissolved"] == 1 and second["counts"]["clusters"] == 0
    assert second["extra"]["dissolved"] == {"c-a1": ["a1", "a2"]}
    page = (report / "index.html").read_text(encoding="utf-8")
    assert '"status":"dissolved"' in page and "dissolved" in page.split("<script", 1)[0]
