"""Small STS-B samples (the first pairs of each split) for the fine-tuning, curve and command tests."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nlsim.sts import load_stsb


def stsb_sample(train: int, validation: int, test: int) -> pd.DataFrame:
    """The first ``train`` / ``validation`` / ``test`` pairs of STS-B's three splits, in one table."""
    data = load_stsb()
    sizes = (("train", train), ("validation", validation), ("test", test))
    return pd.concat([data[data["split"] == s].head(n) for s, n in sizes], ignore_index=True)


def write_stsb_sample(folder: Path, train: int, validation: int, test: int) -> Path:
    """:func:`stsb_sample` written as ``folder/pairs.tsv``; returns the path."""
    path = folder / "pairs.tsv"
    stsb_sample(train, validation, test).to_csv(path, sep="\t", index=False)
    return path
