"""Whether a lossy inference path may run: the quality check of a model's lossy paths as a run reads it
(where it is stored), today's limits, and the verdict on each path.

A lossy path (``onnx-int8``, ``torch-bf16``, ``torch-int8``, and on a GPU ``torch-bf16`` and
``torch-fp16``; :mod:`nlsim.inference.paths`) stays a candidate only when the model's quality check passed
it (:func:`quality_verdict`: on the annotated validation pairs, Spearman ×100 at most
:data:`MAX_SPEARMAN_LOSS` below fp32, same-story F1 at the calibrated threshold not lower, and the vectors
within :data:`MIN_COSINE` of fp32, or cross-encoder scores within :data:`MAX_SCORE_DIFF` of fp32's and
:data:`MEAN_SCORE_DIFF` on average). The check itself (:mod:`nlsim.training.lossy_check`) is made where
pairs are at hand (``nlsim finetune`` when it writes the model folder, ``nlsim calibrate``, the chain) and
stored: ``MODEL/quality_check.json`` (``MODEL/reranker/quality_check.json``) or
``$NLSIM_HOME/quality-check/``. Records stored under their earlier names (``precision.json``,
``$NLSIM_HOME/precision/``) are still read. No record, no lossy path.

Example:
    >>> quality_verdict(None, "onnx-int8")[0], quality_verdict(None, "torch-fp32")[:2]
    (False, (True, 'lossless'))
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from nlsim.inference.paths import is_lossy
from nlsim.io.atomic import atomic_write_text
from nlsim.io.model_cache import nlsim_home

log = logging.getLogger(__name__)

MAX_SPEARMAN_LOSS = 0.5
"""A lossy path may lose at most this much Spearman (×100) against fp32 on the validation pairs."""
MIN_COSINE = 0.98
"""Bi-encoder: the lowest cosine between a lossy path's vector and fp32's, over the validation texts."""
MAX_SCORE_DIFF = 0.15
"""Cross-encoder: the largest difference between a lossy path's score (0-1) and fp32's on validation..."""
MEAN_SCORE_DIFF = 0.03
"""... and the mean difference (the reranker weighs the cross-encoder by 0.5: half of this in its score)."""
RECORD_FORMAT = 1
QUALITY_CHECK_JSON = "quality_check.json"
"""The record's file in a model folder (``reranker/`` holds the cross-encoder's)."""
HOME_FOLDER = "quality-check"
"""The records of models without a folder of their own, under ``$NLSIM_HOME``."""
EARLIER_NAMES = ("precision.json", "precision")
"""The file and ``$NLSIM_HOME`` folder names the record had before: read, never written."""

FIRST_LOOK = "first_look"
"""The entry's field when its check stopped after a first look (:mod:`nlsim.training.first_look`): the rows
``read``, ``of`` how many, and their ``unit`` (texts, pairs)."""

Verdict = tuple[bool, str, dict[str, Any] | None]
"""Whether a path passed, why (one phrase), and its recorded figures."""


def entry_key(path: str, device: str = "cpu") -> str:
    """The key of ``path``'s figures in a record: the path on the CPU, ``path@cuda`` when checked on a GPU
    (half precision on a GPU and on a CPU are different arithmetic; each is judged where it runs).

    >>> entry_key("torch-bf16"), entry_key("torch-bf16", "cuda:0")
    ('torch-bf16', 'torch-bf16@cuda')
    """
    kind = device.split(":", 1)[0]
    return path if kind == "cpu" else f"{path}@{kind}"


def quality_verdict(record: dict[str, Any] | None, path: str, device: str = "cpu") -> Verdict:
    """Whether a lossy ``path`` passed its quality check in ``record`` (a stored record) on ``device``'s
    kind, why, and its figures.

    The figures are judged here, against today's limits (not a stored yes/no).

    Example:
        >>> rec = {"kind": "encoder", "reference": {"spearman": 80.0, "f1": 0.5},
        ...        "paths": {"onnx-int8": {"spearman": 79.8, "f1": 0.5, "min_cosine": 0.991}}}
        >>> quality_verdict(rec, "onnx-int8")[:2]
        (True, 'passed: Spearman -0.20, same-story F1 0.500 -> 0.500, lowest cosine 0.9910')
        >>> quality_verdict(rec | {"paths": {"onnx-int8": {"spearman": 79.0, "f1": 0.5, "min_cosine": 0.99}}},
        ...               "onnx-int8")[:2]
        (False, 'failed: Spearman drops 1.00 (limit 0.5)')
    """
    if not is_lossy(path):
        return True, "lossless", None
    if not record:
        return False, "none recorded for this model (nlsim finetune or nlsim calibrate makes one)", None
    entry = record_entry(record, entry_key(path, device))
    if not entry:
        where = "" if entry_key(path, device) == path else " on a GPU"
        return False, f"not checked{where} for this model", None
    if entry.get("error"):
        return False, f"the check could not run it ({entry['error']})", entry
    if entry.get("not_checked"):
        return False, f"not checked ({entry['not_checked']})", entry
    if entry.get(FIRST_LOOK):
        return _first_look_verdict(record.get("kind"), entry)
    ref = entry.get("reference") or record.get("reference") or {}
    fails = []
    loss = _num(ref.get("spearman")) - _num(entry.get("spearman"))
    if not loss <= MAX_SPEARMAN_LOSS:
        fails.append(f"Spearman drops {loss:.2f} (limit {MAX_SPEARMAN_LOSS})")
    ref_f1, f1 = ref.get("f1"), entry.get("f1")
    if ref_f1 is not None and not _num(f1) >= _num(ref_f1):
        fails.append(f"same-story F1 drops {_num(ref_f1):.3f} -> {_num(f1):.3f}")
    agree = _agreement(record.get("kind"), entry, fails)
    if fails:
        return False, "failed: " + "; ".join(fails), entry
    f1_text = f", same-story F1 {_num(ref_f1):.3f} -> {_num(f1):.3f}" if ref_f1 is not None else ""
    return True, f"passed: Spearman {-loss:+.2f}{f1_text}, {agree}", entry


def item_limit_fails(kind: str | None, entry: dict[str, Any]) -> list[str]:
    """The limits ``entry``'s figures break that hold item by item: a bi-encoder's lowest cosine to fp32, a
    cross-encoder's largest score difference. A part of the items that breaks one breaks it for the whole
    (:mod:`nlsim.training.first_look` stops there).

    >>> item_limit_fails("encoder", {"min_cosine": 0.95})
    ['lowest cosine to fp32 0.9500 (floor 0.98)']
    >>> item_limit_fails("cross-encoder", {"max_score_diff": 0.1})
    []
    """
    if kind == "cross-encoder":
        diff = _num(entry.get("max_score_diff"), math.inf)
        if diff <= MAX_SCORE_DIFF:
            return []
        return [f"scores differ by up to {diff:.4f} (limit {MAX_SCORE_DIFF})"]
    low = _num(entry.get("min_cosine"))
    return [] if low >= MIN_COSINE else [f"lowest cosine to fp32 {low:.4f} (floor {MIN_COSINE})"]


def _agreement(kind: str | None, entry: dict[str, Any], fails: list[str]) -> str:
    """How close a lossy path's outputs are to fp32's (one phrase); the limits it breaks go to ``fails``."""
    fails.extend(item_limit_fails(kind, entry))
    if kind == "cross-encoder":
        diff = _num(entry.get("max_score_diff"), math.inf)
        mean = _num(entry.get("mean_score_diff"), math.inf)
        if not mean <= MEAN_SCORE_DIFF:
            fails.append(f"scores differ by {mean:.4f} on average (limit {MEAN_SCORE_DIFF})")
        return f"score difference {mean:.4f} on average, {diff:.4f} at most"
    return f"lowest cosine {_num(entry.get('min_cosine')):.4f}"


def _first_look_verdict(kind: str | None, entry: dict[str, Any]) -> Verdict:
    """The verdict on a path whose check stopped after a first look (``entry[FIRST_LOOK]``): failed where its
    figures break an item-by-item limit today; else (a limit since loosened) not checked in full.

    >>> look = {"read": 64, "of": 900, "unit": "texts"}
    >>> _first_look_verdict("encoder", {"min_cosine": 0.9, "first_look": look})[1]
    'failed on a first look at 64 of 900 texts: lowest cosine to fp32 0.9000 (floor 0.98); the rest not read'
    """
    look = entry[FIRST_LOOK]
    seen = f"{int(look.get('read', 0)):,} of {int(look.get('of', 0)):,} {look.get('unit', 'items')}"
    fails = item_limit_fails(kind, entry)
    if fails:
        return False, f"failed on a first look at {seen}: {'; '.join(fails)}; the rest not read", entry
    return False, f"not checked in full (a first look at {seen} stopped under an earlier limit)", entry


def stale_paths(record: dict[str, Any] | None) -> list[str]:
    """The paths (entry keys) of ``record`` stopped after a first look under a limit that today's limits no
    longer break (:func:`stale_first_look`): a check here reads them again.

    >>> stale_paths({"kind": "cross-encoder", "paths": {"onnx-int8": {"max_score_diff": 0.1,
    ...     "first_look": {"read": 64, "of": 900}}, "torch-bf16": {"max_score_diff": 0.01}}})
    ['onnx-int8']
    """
    return [key for key in (record or {}).get("paths") or {} if stale_first_look(record, key)]


def stale_first_look(record: dict[str, Any] | None, key: str) -> bool:
    """Whether the check in ``record`` stopped the path ``key`` after a first look under a limit that today's
    limits no longer break: its figures decide nothing, and a check here reads it again.

    >>> stale_first_look({"kind": "encoder", "paths": {"onnx-int8": {"min_cosine": 0.99,
    ...     "first_look": {"read": 64, "of": 900}}}}, "onnx-int8")
    True
    """
    entry = record_entry(record, key)
    return bool(entry.get(FIRST_LOOK)) and not item_limit_fails((record or {}).get("kind"), entry)


def _num(value: Any, default: float = math.nan) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def quality_check_files(kind: str, identity: str, folder: Path | None) -> list[Path]:
    """Where a quality check record may be, first found wins: the model's own folder, then
    ``$NLSIM_HOME``; each under today's name, then under its earlier one."""
    name = f"{'ce-' if kind == 'cross-encoder' else ''}{identity[:32]}.json"
    home = nlsim_home()
    out = [folder / QUALITY_CHECK_JSON, folder / EARLIER_NAMES[0]] if folder is not None else []
    return out + [home / HOME_FOLDER / name, home / EARLIER_NAMES[1] / name]


def _as_written(record: Any) -> bool:
    """Whether ``record`` has the shape nlsim writes: an object whose ``paths`` and ``reference`` (where
    given) are objects, each path's entry one too, with its own ``reference`` (where given) an object and
    its first look (where given) one with whole counts (not a file edited by hand or another tool's).

    >>> _as_written({"paths": {"int8": {"spearman": 80.0}}}), _as_written([]), _as_written({"paths": [1]})
    (True, False, False)
    >>> _as_written({"paths": {"x": {"reference": "fp32"}}}), _as_written({"paths": {"x": {FIRST_LOOK: 6}}})
    (False, False)
    """
    if not isinstance(record, dict):
        return False
    paths, reference = record.get("paths") or {}, record.get("reference") or {}
    if not isinstance(paths, dict) or not isinstance(reference, dict):
        return False
    return all(isinstance(entry, dict) and _entry_as_written(entry) for entry in paths.values())


def _entry_as_written(entry: dict[str, Any]) -> bool:
    """Whether a path's ``entry`` has the shape nlsim writes (:func:`_as_written`)."""
    look = entry.get(FIRST_LOOK) or {}
    counts = [look.get(k, 0) for k in ("read", "of")] if isinstance(look, dict) else [None]
    return isinstance(entry.get("reference") or {}, dict) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in counts
    )


def load_quality_check(
    kind: str, identity: str, folder: Path | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The stored quality check record of a model (``identity``: its fingerprint, or a cross-encoder's
    digest) and where it was found; a record made for other weights is ignored.

    The first record found (:func:`quality_check_files`) is the model's; a path it left unchecked (it was
    made on a CPU without the instructions, say) takes its figures from a later record that checked it
    (one made on this machine under ``$NLSIM_HOME``), judged against that record's fp32 reference
    (:func:`borrow_checked`)."""
    found: list[tuple[dict[str, Any], Path]] = []
    for path in quality_check_files(kind, identity, folder):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not _as_written(record):
            log.info("%s: not a quality check record as nlsim writes one; not used", path)
            continue
        if record.get("identity") == identity and record.get("format") == RECORD_FORMAT:
            found.append((record, path))
        elif path.is_file():
            log.info("%s: made for other weights; not used", path)
    if not found:
        return None, ""
    (record, path), later = found[0], found[1:]
    for other, other_path in later:
        record = borrow_checked(record, other, str(other_path))
    return record, str(path)


def record_entry(record: dict[str, Any] | None, key: str) -> dict[str, Any]:
    """The entry of the path ``key`` (:func:`entry_key`) in ``record``; empty when it has none.

    >>> record_entry({"paths": {"onnx-int8": {"spearman": 80.0}}}, "onnx-int8"), record_entry(None, "x")
    ({'spearman': 80.0}, {})
    """
    return ((record or {}).get("paths") or {}).get(key) or {}


def was_tried(record: dict[str, Any] | None, key: str) -> bool:
    """Whether the check in ``record`` ran the path ``key``: figures, or the error it stopped at; not a path
    recorded as not checked (or not named), nor one stopped after a first look that today's limits would
    let go on (:func:`stale_first_look`)."""
    entry = record_entry(record, key)
    return bool(entry) and not entry.get("not_checked") and not stale_first_look(record, key)


def has_figures(record: dict[str, Any] | None, key: str) -> bool:
    """Whether ``record`` holds figures for the path ``key`` (:func:`entry_key`): checked, even if it
    failed, not merely recorded as not checked, nor stopped by an error.

    >>> has_figures({"paths": {"onnx-int8": {"spearman": 80.0}}}, "onnx-int8")
    True
    >>> has_figures({"paths": {"onnx-int8": {"not_checked": "no VNNI"}}}, "onnx-int8")
    False
    """
    return was_tried(record, key) and not record_entry(record, key).get("error")


def borrow_checked(record: dict[str, Any], other: dict[str, Any], where: str) -> dict[str, Any]:
    """``record`` with the figures of each path that ``other`` (found at ``where``) checked and ``record``
    did not; a borrowed entry carries ``other``'s fp32 reference (``reference``) and its file
    (``checked_in``), so that it is judged against the figures it was measured beside (an entry that has
    them already, borrowed before, keeps its own).

    >>> mine = {"reference": {"spearman": 80.0}, "paths": {"torch-bf16": {"not_checked": "no bf16"}}}
    >>> theirs = {"reference": {"spearman": 81.0}, "paths": {"torch-bf16": {"spearman": 80.9}}}
    >>> borrow_checked(mine, theirs, "home.json")["paths"]["torch-bf16"]["reference"]
    {'spearman': 81.0}
    """
    taken = {
        key: {"reference": other.get("reference") or {}, "checked_in": where, **entry}
        for key, entry in (other.get("paths") or {}).items()
        if has_figures(other, key) and not has_figures(record, key)
    }
    if not taken:
        return record
    return {**record, "paths": {**(record.get("paths") or {}), **taken}}


def home_file(kind: str, identity: str) -> Path:
    """Where a model's record is written under ``$NLSIM_HOME`` (today's name)."""
    return quality_check_files(kind, identity, None)[-2]


def save_quality_check(record: dict[str, Any], path: Path | None = None) -> Path:
    """Write a quality check record (default: ``$NLSIM_HOME/quality-check/``)."""
    if path is None:
        path = home_file(record["kind"], record["identity"])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path
