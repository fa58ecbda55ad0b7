"""The checks a near-duplicate run makes before any work: paths and the calibration file.

Kept apart from :mod:`nlsim.dedup.run` and light to import (no torch, no FAISS model code runs), so
that ``nlsim dedup`` refuses a bad path in a second, before the encoder and the search libraries load.

Example:
    >>> from nlsim.dedup.config import DedupConfig
    >>> cfg = DedupConfig(corpus="news.csv", out="rep", quarantine="news.csv", threshold=0.9)
    >>> check_paths(cfg)
    Traceback (most recent call last):
    ...
    nlsim.errors.ConfigError: --quarantine news.csv is the same path as --corpus news.csv; refusing ...
"""

from __future__ import annotations

from pathlib import Path

from nlsim.dedup.config import DedupConfig
from nlsim.dedup.state import claim_state, read_manifest
from nlsim.errors import ConfigError
from nlsim.evaluation.calibration import load_calibration
from nlsim.io.ownership import (
    check_outputs_apart,
    check_replaceable,
    check_writable,
    claim_folder,
    is_quarantine_file,
)
from nlsim.models.settings import CURRENT_MODEL


def check_paths(config: DedupConfig) -> None:
    """Refuse, before any work, outputs that would overwrite an input or a folder nlsim did not write, a
    calibration file that is missing or holds no usable threshold, and a state whose manifest is unreadable,
    of another format or names a generation nlsim did not write."""
    model = config.model if config.model not in (CURRENT_MODEL,) and Path(config.model).exists() else None
    inputs = {
        "--corpus": config.corpus_path(),
        "--calibration": config.calibration,
        "--model": model,
        "--judge-pairs": config.judge_pairs,
        "--annotated-pairs": config.annotated_pairs,
    }
    if config.model == CURRENT_MODEL:
        inputs["--model-store"] = config.model_store
    outputs = {"--out": config.out, "--quarantine": config.quarantine, "--state": config.state}
    check_outputs_apart(inputs, outputs)
    for name, path in outputs.items():
        if path:
            check_writable(path, what=name)
    if config.quarantine:
        check_replaceable(config.quarantine, is_quarantine_file, what="--quarantine", kind="quarantine file")
    if config.calibration is not None and config.threshold is None:  # its threshold is checked on load
        if load_calibration(config.calibration) is None:
            raise ConfigError(f"--calibration {config.calibration}: file not found")
    if config.state:
        claim_state(config.state, rebuild=config.rebuild_state)
        if not config.rebuild_state:
            read_manifest(config.state)  # an unreadable or edited manifest is refused now (its files later)
    claim_folder(config.out, "daily-report" if config.state else "report", what="--out")
