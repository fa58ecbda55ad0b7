"""Annotated relatedness pairs: load and validate a pair file (TSV, CSV or Parquet).

A pair file has the columns ``text_a``, ``text_b`` and ``score`` (a number in [0, 1]), and optionally
``pair_id`` (unique; made up as ``row-N`` when absent) and ``split`` (``train``, ``validation`` or
``test``). Other columns (``id_a``, ``id_b``, ``annotations``, ``stratum`` ...) are kept as they are.
Every bad row raises :class:`nlsim.errors.InputError` naming the file, the 1-based data row and the field;
nothing is dropped silently.

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "pairs.tsv"
    >>> _ = p.write_text("text_a\\ttext_b\\tscore\\tsplit\\nA\\tB\\t0.5\\ttrain\\n", encoding="utf-8")
    >>> load_pairs(p)[["pair_id", "score", "split"]].to_dict("records")
    [{'pair_id': 'row-1', 'score': 0.5, 'split': 'train'}]
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from nlsim.errors import InputError

REQUIRED = ("text_a", "text_b", "score")
SPLITS = ("train", "validation", "test")
COLUMNS = ("pair_id", "text_a", "text_b", "score", "split")


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a TSV, CSV or Parquet file as strings (Parquet keeps its own types)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, None, "file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        if suffix in (".tsv", ".tab", ".txt"):
            return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=3, encoding="utf-8")
        if suffix == ".csv":
            return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise InputError(path, None, None, f"cannot be read: {exc}") from exc
    raise InputError(path, None, None, f"unknown pair file type {suffix!r} (use .tsv, .csv or .parquet)")


def _is_missing(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def validate_pairs(frame: pd.DataFrame, source: str | Path = "<pairs>") -> pd.DataFrame:
    """Check a pair table and return it normalised (see the module docstring); raise ``InputError``.

    Example:
        >>> validate_pairs(pd.DataFrame({"text_a": ["x"], "text_b": ["y"], "score": [1.5]}), "t.csv")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: t.csv: row 1, field 'score': score 1.5 is outside [0, 1]
    """
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(source, None, missing[0], f"missing column(s) {', '.join(missing)}")
    frame = frame.reset_index(drop=True).copy()
    if "pair_id" not in frame.columns:
        frame.insert(0, "pair_id", [f"row-{i + 1}" for i in range(len(frame))])
    if "split" not in frame.columns:
        frame["split"] = ""
    scores: list[float] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(frame.itertuples(index=False)):
        n = i + 1
        rec = row._asdict()
        pid = rec["pair_id"]
        if _is_missing(pid):
            raise InputError(source, n, "pair_id", "missing pair id")
        pid = str(pid).strip()
        if pid in seen:
            raise InputError(source, n, "pair_id", f"duplicate pair id {pid!r} (first at row {seen[pid]})")
        seen[pid] = n
        for field in ("text_a", "text_b"):
            if _is_missing(rec[field]):
                raise InputError(source, n, field, "empty text")
        raw = rec["score"]
        if _is_missing(raw):
            raise InputError(source, n, "score", "missing score")
        try:
            score = float(raw)
        except (TypeError, ValueError):
            raise InputError(source, n, "score", f"score {raw!r} is not a number") from None
        if math.isnan(score) or not 0.0 <= score <= 1.0:
            raise InputError(source, n, "score", f"score {raw} is outside [0, 1]")
        scores.append(score)
        split = rec["split"]
        if not _is_missing(split) and str(split).strip() not in SPLITS:
            raise InputError(source, n, "split", f"unknown split {split!r} (use {', '.join(SPLITS)})")
    frame["pair_id"] = frame["pair_id"].astype(str).str.strip()
    frame["text_a"] = frame["text_a"].astype(str)
    frame["text_b"] = frame["text_b"].astype(str)
    frame["score"] = pd.Series(scores, dtype="float64")
    frame["split"] = frame["split"].fillna("").astype(str).str.strip()
    other = [c for c in frame.columns if c not in COLUMNS]
    return frame[list(COLUMNS) + other]


def load_pairs(path: str | Path, split: str | None = None) -> pd.DataFrame:
    """Load and validate a pair file; ``split`` keeps only that split (error if it has no rows)."""
    frame = validate_pairs(read_table(path), path)
    if split is not None:
        if split not in SPLITS:
            raise InputError(path, None, "split", f"unknown split {split!r} (use {', '.join(SPLITS)})")
        frame = frame[frame["split"] == split].reset_index(drop=True)
        if frame.empty:
            raise InputError(path, None, "split", f"no pairs in split {split!r}")
    return frame
