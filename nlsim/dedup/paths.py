"""The checks a near-duplicate run makes before any work: paths and the calibration file.

Kept apart from :mod:`nlsim.dedup.run` and light to import (no torch, no FAISS model code runs), so
that ``nlsim dedup`` refuses a bad path in a second, before the encoder and the search libraries load.

Example:
    >>> from nlsim.dedup.config import DedupConfig
    >>> cfg = DedupConfig.of(corpus="news.csv", out="rep", quarantine="news.csv", threshold=0.9)
    >>> check_run_paths(cfg)
    Traceback (most recent call last):
    ...
    nlsim.errors.ConfigError: --quarantine news.csv is the same path as --corpus news.csv; refusing ...
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from nlsim.dedup.config import DedupConfig
from nlsim.dedup.state import claim_state, read_manifest
from nlsim.errors import ConfigError
from nlsim.evaluation.calibration import CALIBRATION_JSON, load_calibration
from nlsim.io.lock import GUARD_NAME, RunLock, held_here
from nlsim.io.ownership import (
    check_claimable,
    check_outputs_apart,
    check_outside_stores,
    check_replaceable,
    check_writable,
    claim_folder,
    is_quarantine_file,
    resolved,
    traceless,
)
from nlsim.io.report_folder import check_report_replaceable
from nlsim.io.tables import check_input_file
from nlsim.models.settings import CURRENT_MODEL
from nlsim.report.files import LATEST, PAGE_FILES, RUNS_DIR, TABLE_FILES, hold_report_folder
from nlsim.search.index import check_device

REPORT_NAMES = frozenset(
    (
        *TABLE_FILES,
        *PAGE_FILES,
        "run.json",
        "pipeline.json",
        "pipeline.md",
        "lock.json",
        "index",
        RUNS_DIR,
        LATEST,
    )
)
"""The names a report (or the chain around it) writes at the top of its folder: none for another output."""


@contextlib.contextmanager
def held_paths(config: DedupConfig) -> Iterator[None]:
    """:func:`check_run_paths`, then what the run writes into held for the block: a batch run's report folder
    (:func:`~nlsim.report.files.hold_report_folder`), a daily run's ``--out`` and ``--state`` as claimed,
    its ``--out`` under its lock (two daily runs of two states into one ``--out`` swept each other's report
    as it was written: the second is refused at its start, naming the first). A run that fails having
    written nothing but its claims leaves no trace of them (a first day's file refused by row leaves no
    marked folders behind); what it did write stays."""
    if not config.daily:
        with hold_report_folder(config.report.out, check=lambda: check_run_paths(config)):
            yield
        return
    with traceless([config.report.out, config.state.folder], also=(GUARD_NAME,)):
        check_run_paths(config)
        out = config.report.out  # held already when the command line holds it for run_dedup: one hold
        with contextlib.nullcontext() if held_here(out) else RunLock(out, what="report folder"):
            yield


def check_run_paths(config: DedupConfig) -> None:
    """Refuse, before any work, outputs that would overwrite an input or a folder nlsim did not write, a
    calibration file that is missing or holds no usable threshold, and a state whose manifest is unreadable,
    of another format or names a generation nlsim did not write."""
    source, ms, report, state = config.input, config.model, config.report, config.state
    search = config.search
    check_device(search.use_gpu, search.index_kind, search.k, search.nprobe)  # now, not at search
    model = ms.name if ms.name not in (CURRENT_MODEL,) and Path(ms.name).exists() else None
    inputs = {
        "--corpus": source.corpus_path,
        "--calibration": ms.calibration,
        "--model": model,
        "--judge-pairs": report.judge_pairs,
        "--annotated-pairs": config.clustering.annotated_pairs,
    }
    if ms.name == CURRENT_MODEL:
        inputs["--model-store"] = ms.store
    quarantine = source.quarantine_path
    outputs = {"--out": report.out, "--quarantine": quarantine, "--state": state.folder}
    check_outputs_apart(inputs, outputs, folders=("--out", "--state"))
    check_outside_stores(outputs)  # the model store is nlsim pipeline's alone
    for name, path in outputs.items():
        if path:
            check_writable(path, what=name)
    if quarantine:
        check_quarantine_beside(quarantine, report.out, state.folder)
        check_replaceable(quarantine, is_quarantine_file, what="--quarantine", kind="quarantine file")
    for name in ("--judge-pairs", "--annotated-pairs"):  # read after the model loads: checked now in a
        if inputs[name] and not state.folder:  # batch run (a daily run's repeated input reads neither)
            check_input_file(inputs[name])
    if ms.calibration is not None and ms.threshold is None:  # its threshold is checked on load
        if not Path(ms.calibration).is_dir():  # a model folder holds calibration.json
            check_input_file(ms.calibration)
        if load_calibration(ms.calibration) is None:
            raise ConfigError(f"--calibration {ms.calibration}: a folder without {CALIBRATION_JSON}")
    kind = "daily-report" if state.folder else "report"
    check_claimable(report.out, kind, what="--out")  # before the state is claimed: a refusal writes nothing
    latest = Path(report.out) / LATEST
    if state.folder and latest.exists() and not latest.is_symlink():
        found = "folder" if latest.is_dir() else "file"
        raise ConfigError(
            f"--out {latest} is a {found}, not the link nlsim keeps to the latest report (a copy or a backup "
            f"may have made it one); move it away (every report is under {Path(report.out) / RUNS_DIR}), "
            "then run again"
        )
    if state.folder:
        claim_state(state.folder, rebuild=state.rebuild)
        if not state.rebuild:
            read_manifest(state.folder)  # an unreadable or edited manifest is refused now (its files later)
    claim_folder(report.out, kind, what="--out")
    if not state.folder:  # a batch report replaces its files (a daily run's folder: before its commit)
        check_report_replaceable(report.out)


def check_quarantine_beside(quarantine: str | Path, out: str | Path, state: str | Path | None = None) -> None:
    """Refuse a ``--quarantine`` file that the report or the daily state would write over or sweep away:
    one inside ``--state``, one in a subfolder of ``--out`` (``index/``, ``runs/``: the report replaces them
    whole), or one at the top of ``--out`` named as a report file. Beside the report's own files, under a
    name of its own, it is kept.

    Example:
        >>> check_quarantine_beside("rep/pairs.csv", "rep")
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --quarantine rep/pairs.csv is the report's own file pairs.csv in --out ...
        >>> check_quarantine_beside("rep/bad_rows.csv", "rep")
    """
    path, folder = resolved(quarantine), resolved(out)
    if state is not None and resolved(state) in path.parents:
        raise ConfigError(
            f"--quarantine {quarantine} lies inside --state {state}, which nlsim manages whole; "
            "choose a quarantine file outside it (nothing is written yet)"
        )
    if folder not in path.parents:
        return
    if path.parent != folder:
        raise ConfigError(
            f"--quarantine {quarantine} lies in a subfolder of --out {out}, which a report replaces whole; "
            f"choose a file beside the report's own ({Path(out) / 'bad_rows.csv'}) or elsewhere "
            "(nothing is written yet)"
        )
    if path.name in REPORT_NAMES or path.name.startswith("."):
        raise ConfigError(
            f"--quarantine {quarantine} is the report's own file {path.name} in --out {out}; the report "
            f"would write over the quarantined rows: choose another name ({Path(out) / 'bad_rows.csv'}) "
            "(nothing is written yet)"
        )
