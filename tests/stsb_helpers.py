"""Small STS-B samples (the first pairs of each split) for the fine-tuning, curve and command tests."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nlsim.evaluation.sts import load_stsb
from nlsim.training.config import FinetuneConfig, epochs_on_any_cpu

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


def small_reranker_config(out: Path, **changes: object) -> FinetuneConfig:
    """A fine-tuning of the small English model with a reranker, a minute's work on a few STS-B pairs (for
    the tests of what uses a reranker, not of its quality); ``changes`` override its settings. The epochs
    asked are trained on any CPU (:func:`nlsim.training.config.epochs_on_any_cpu`)."""
    settings: dict[str, object] = dict(
        model=FAST_MODEL,
        out=str(out),
        conversion="none",
        epochs=1,
        batch_size=8,
        max_length=48,
        threads=1,
        log_every=0,
        calibrate_level=0.6,
        reranker=True,
        cross_encoder_epochs=1,
        seed=5,
    )
    return FinetuneConfig.of(**epochs_on_any_cpu({**settings, **changes}))  # type: ignore[arg-type]


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


def write_stsb_corpus(path: Path, skip: int, n: int, extra: list[str] | None = None) -> Path:
    """A corpus file (``id``, ``text``) for silver-pair tests.

    The ``extra`` texts, then the distinct sentences of STS-B train pairs ``skip`` to ``skip + n``.
    """
    rows = stsb_sample(train=skip + n, validation=0, test=0).iloc[skip:]
    texts = list(dict.fromkeys([*(extra or []), *rows["text_a"], *rows["text_b"]]))
    frame = pd.DataFrame({"id": [f"n{i}" for i in range(len(texts))], "text": texts})
    frame.to_csv(path, sep="\t", index=False)
    return path
