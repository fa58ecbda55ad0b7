import pandas as pd
import pytest

from nlsim.clusters.table import batch_clusters
from nlsim.pipeline.report import PAIRS_SCHEMA, pairs_table, verify_report, write_report


@pytest.fixture
def report_inputs():
    frame = pd.DataFrame(
        {
            "id": ["n1", "n2", "n3"],
            "title": ["Flood <b>north</b>", "Flooding north", "Other"],
            "source": ["AP", "AFP", "X"],
            "published_at": pd.to_datetime(["2024-01-02T10:00Z", "2024-01-01T09:00Z", None], utc=True),
        }
    )
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": [0.93]})
    labels, clusters = batch_clusters(frame, pairs)
    return frame, pairs_table(frame, pairs, labels), clusters


def test_pairs_table_orders_each_pair_earliest_first(report_inputs):
    _, table, _ = report_inputs
    row = table.iloc[0]
    assert (row["id_a"], row["id_b"], row["cluster_id"]) == ("n2", "n1", "c-n2")
    assert row["title_a"] == "Flooding north" and row["source_b"] == "AP"
    assert row["published_at_a"] == pd.Timestamp("2024-01-01T09:00Z")


def test_report_files_schema_and_html(tmp_path, report_inputs):
    frame, table, clusters = report_inputs
    files = write_report(tmp_path, table, clusters, {"model": "m", "items": 3}, frame=frame)
    pairs = pd.read_parquet(files["pairs.parquet"])
    assert list(pairs.columns) == PAIRS_SCHEMA.names
    got = pd.read_parquet(files["clusters.parquet"])
    assert got["member_ids"].iloc[0].tolist() == ["n2", "n1"]
    page = files["index.html"].read_text()
    assert "Flood &lt;b&gt;north&lt;/b&gt;" in page and "<b>north</b>" not in page  # escaped
    assert "0.930" in page and "c-n2" in page
    assert "| c-n2 | 2 |" in files["summary.md"].read_text()
    assert files["overview.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "overview.png" in page
    assert verify_report(tmp_path)["pairs"] == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staging")]


def test_failed_write_leaves_previous_report(tmp_path, report_inputs, monkeypatch):
    frame, table, clusters = report_inputs
    write_report(tmp_path, table, clusters, {"model": "m"}, frame=frame)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("nlsim.pipeline.report.render_markdown", boom)
    with pytest.raises(RuntimeError):
        write_report(tmp_path, table.iloc[:0], clusters.iloc[:0], {"model": "other"}, frame=frame)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before
