"""The README's figures are measured, and the part of them that no machine changes is checked: the zero-shot
baseline of the chain (e5, cosine, calibrated on the bundled validation pairs) gives the README's row on
every CPU measured (AMD EPYC, Intel Xeon with AMX), so a change to the pairs, the conversion, the model or the
calibration that moves it must update the README. The fine-tuned figures move with the CPU (the README's
table of machines says by how much) and are not checked here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_zero_shot_row() -> dict[str, float]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    row = re.search(
        r"^\| zero-shot multilingual-e5-small, cosine \| ([\d.]+) \| ([\d.]+) \| "
        r"([\d.]+) / ([\d.]+) / ([\d.]+) \[[\d.]+–[\d.]+\]; ([\d.]+) \| — \| Spearman ([\d.]+) \|$",
        text,
        re.MULTILINE,
    )
    assert row, "the README's zero-shot row is not where this test reads it"
    names = ("spearman", "threshold", "precision", "recall", "f1", "cv_f1", "test_spearman")
    values = dict(zip(names, map(float, row.groups()), strict=True))
    machines = re.findall(
        r"^\| [^|]+ \| [^|]+ \| ([\d.]+), ([\d.]+), ([\d.]+) \| [^|]+ \|$", text, re.MULTILINE
    )
    assert len(machines) >= 2, "the README's table of machines lost its zero-shot column"
    for spearman, threshold, f1 in machines:
        assert (float(spearman), float(threshold), float(f1)) == (
            values["spearman"],
            values["threshold"],
            values["f1"],
        ), "the table of machines disagrees with the results table"
    return values


def test_the_readme_rows_agree_with_each_other() -> None:
    assert readme_zero_shot_row()["threshold"] > 0


@pytest.mark.slow
def test_the_zero_shot_baseline_gives_the_readme_figures(tmp_path: Path) -> None:
    from nlsim.chain import run as chain_run
    from nlsim.chain.config import PipelineConfig
    from nlsim.encoders import load_encoder
    from nlsim.io.model_store import ModelStore
    from nlsim.io.pairs import load_pairs

    cfg = PipelineConfig(model_store=str(tmp_path / "models"), out=str(tmp_path / "report"))
    store = ModelStore(cfg.model_store)
    store.claim()
    base = load_encoder(cfg.base_model)
    metrics = chain_run.baseline_stage(cfg, store, base, load_pairs(cfg.pairs)).metrics
    readme = readme_zero_shot_row()
    assert round(metrics["spearman"], 2) == readme["spearman"]
    assert round(metrics["threshold"], 4) == readme["threshold"]
    for name in ("precision", "recall", "f1"):
        assert round(metrics[name], 3) == readme[name], name
    assert round(metrics["test_spearman"], 2) == readme["test_spearman"]
