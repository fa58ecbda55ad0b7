"""The measured figures of docs/measurements.md, and the README's headline table drawn from them, and the part
of them that no machine changes is checked: the zero-shot baseline of the chain (e5, cosine, calibrated on the
bundled validation pairs) gives docs/measurements.md's zero-shot row on every CPU measured (AMD EPYC, Intel
Xeon with AMX), so a change to the pairs, the conversion, the model or the calibration that moves it must
update docs/measurements.md and the README's headline figures. The fine-tuned figures move with the CPU
(docs/measurements.md's table of machines says by how much) and are not checked here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MEASUREMENTS = ROOT / "docs" / "measurements.md"


def measured_zero_shot_row() -> dict[str, float]:
    text = MEASUREMENTS.read_text(encoding="utf-8")
    row = re.search(
        r"^\| zero-shot multilingual-e5-small, cosine \| ([\d.]+) \| ([\d.]+) \| "
        r"([\d.]+) / ([\d.]+) / ([\d.]+) \[[\d.]+–[\d.]+\]; ([\d.]+) \| — \| Spearman ([\d.]+) \|$",
        text,
        re.MULTILINE,
    )
    assert row, "docs/measurements.md's zero-shot row is not where this test reads it"
    names = ("spearman", "threshold", "precision", "recall", "f1", "cv_f1", "test_spearman")
    values = dict(zip(names, map(float, row.groups()), strict=True))
    machines = re.findall(
        r"^\| [^|]+ \| [^|]+ \| ([\d.]+), ([\d.]+), ([\d.]+) \| [^|]+ \|$", text, re.MULTILINE
    )
    assert machines, "docs/measurements.md's table of machines lost its zero-shot column"
    for spearman, threshold, f1 in machines:
        assert (float(spearman), float(threshold), float(f1)) == (
            values["spearman"],
            values["threshold"],
            values["f1"],
        ), "the table of machines disagrees with the results table"
    return values


def readme_headline_zero_shot() -> tuple[float, float]:
    """The README's headline row of the zero-shot baseline: validation Spearman; same-story F1."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    row = re.search(
        r"^\| zero-shot multilingual-e5-small on validation[^|]* \| ([\d.]+); ([\d.]+)"
        r"(?: \([^|]*\))? \| [^|]+ \|$",  # the figures, then where they come from
        text,
        re.MULTILINE,
    )
    assert row, "the README's headline row of the zero-shot baseline is not where this test reads it"
    return float(row[1]), float(row[2])


def test_the_measured_rows_and_the_readme_agree_with_each_other() -> None:
    measured = measured_zero_shot_row()
    assert measured["threshold"] > 0
    assert readme_headline_zero_shot() == (measured["spearman"], measured["f1"]), (
        "the README's headline figures disagree with docs/measurements.md"
    )


@pytest.mark.slow
def test_the_zero_shot_baseline_gives_the_measured_figures(tmp_path: Path) -> None:
    from nlsim.chain import run as chain_run
    from nlsim.chain.config import PipelineConfig
    from nlsim.encoders import load_encoder
    from nlsim.io.model_store import ModelStore
    from nlsim.io.pairs import load_pairs

    cfg = PipelineConfig.of(model_store=str(tmp_path / "models"), out=str(tmp_path / "report"))
    store = ModelStore(cfg.model_store)
    store.claim()
    base = load_encoder(cfg.base_model)
    metrics = chain_run.baseline_stage(cfg, store, base, load_pairs(cfg.pairs)).metrics
    measured = measured_zero_shot_row()
    assert round(metrics["spearman"], 2) == measured["spearman"]
    assert round(metrics["threshold"], 4) == measured["threshold"]
    for name in ("precision", "recall", "f1"):
        assert round(metrics[name], 3) == measured[name], name
    assert round(metrics["test_spearman"], 2) == measured["test_spearman"]
