"""Evaluate an encoder (or any pair scorer) on graded pairs: Spearman x100 (headline), Pearson x100, MSE, MAE.

MSE and MAE compare the cosine itself with the gold score in [0, 1] (meaningful after fine-tuning with
the cosine-MSE loss; zero-shot e5 cosines sit high, so its MSE is large while its Spearman is good).

Example:
    >>> import numpy as np
    >>> m = metrics_from_scores(np.array([0.1, 0.5, 0.9]), np.array([0.0, 0.5, 1.0]))
    >>> m.spearman, m.n
    (100.0, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from nlsim.encoders.scoring import as_pair_scorer
from nlsim.errors import InputError
from nlsim.evaluation.figures import pearson, spearman
from nlsim.io.cells import model_texts


@dataclass(frozen=True)
class Metrics:
    """Agreement between predicted similarities and gold scores on ``n`` pairs."""

    spearman: float
    pearson: float
    mse: float
    mae: float
    n: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def metrics_from_scores(pred: np.ndarray, gold: np.ndarray) -> Metrics:
    """Spearman and Pearson (x100, :mod:`nlsim.evaluation.figures`), MSE and MAE of ``pred`` against
    ``gold``."""
    pred = np.asarray(pred, dtype=np.float64)
    gold = np.asarray(gold, dtype=np.float64)
    if pred.shape != gold.shape or pred.ndim != 1:
        raise ValueError(f"pred and gold must be 1-d and equal in length, got {pred.shape} and {gold.shape}")
    n = int(len(gold))
    err = pred - gold
    return Metrics(
        spearman=spearman(pred, gold),
        pearson=pearson(pred, gold),
        mse=round(float(np.mean(err**2)), 4),
        mae=round(float(np.mean(np.abs(err))), 4),
        n=n,
    )


def convert_texts(texts: Sequence[str], conversion: str | None) -> list[str]:
    """``texts`` as a model reads them, as a dedup run gives them to it (:func:`nlsim.io.cells.model_texts`:
    ``&#8226;`` is ``•``, ``<b>Storm</b>`` is ``Storm``, then script-converted): pairs are trained,
    evaluated and calibrated on the texts the report's model reads.

    >>> convert_texts(["正源&#8226;尚峰<b>系列</b>"], "none")
    ['正源•尚峰系列']
    """
    return model_texts(texts, conversion)


def pair_similarities(scorer: Any, pairs: pd.DataFrame, conversion: str | None = None) -> np.ndarray:
    """Similarities for each row of ``pairs`` (``text_a``/``text_b``) after conversion.

    ``scorer`` is an encoder (has ``encode``) or a callable ``(texts_a, texts_b) -> array``.
    """
    a = convert_texts(pairs["text_a"].tolist(), conversion)
    b = convert_texts(pairs["text_b"].tolist(), conversion)
    return np.asarray(as_pair_scorer(scorer)(a, b), dtype=np.float64)


def check_scorable(
    pairs: pd.DataFrame, source: str = "<pairs>", split: str = "all", *, more: str = ""
) -> None:
    """Refuse (:class:`~nlsim.errors.InputError`: what the pair file ``source`` holds, exit status 1) the
    pairs of ``split`` (``all``: every pair) that no correlation can be computed on: fewer than 3, or all
    with one score (:func:`check_scores_differ`). ``more``: the words the refusal ends with (a caller's
    way out).

    Example:
        >>> check_scorable(pd.DataFrame({"score": [0.5]}), "p.tsv", "test")
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: p.tsv: field 'split': 1 pair(s) in split 'test'; Spearman needs at least ...
    """
    if len(pairs) < 3:
        raise InputError(
            source,
            None,
            "split",
            f"{len(pairs)} pair(s) {_where(split)}; Spearman needs at least 3 pairs with different "
            f"scores{more}",
        )
    check_scores_differ(pairs, source, split, more=more)


def check_scores_differ(
    pairs: pd.DataFrame, source: str = "<pairs>", split: str = "all", *, more: str = ""
) -> None:
    """Refuse (:class:`~nlsim.errors.InputError`, field ``score``) the pairs of ``split`` of the pair file
    ``source`` when they all have one score: their Spearman and Pearson are undefined. What ``nlsim
    evaluate``, ``nlsim finetune`` (its test split) and ``nlsim learning-curve`` refuse alike, each adding
    its way out (``more``); no pairs are no pairs of one score.

    Example:
        >>> check_scores_differ(pd.DataFrame({"score": [0.5, 0.5]}), "p.tsv", "test")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: p.tsv: field 'score': the 2 pair(s) in split 'test' all have the score ...
    """
    if pairs.empty or pairs["score"].nunique() > 1:
        return
    raise InputError(
        source,
        None,
        "score",
        f"the {len(pairs)} pair(s) {_where(split)} all have the score {pairs['score'].iloc[0]:g}: Spearman "
        f"and Pearson are undefined (a correlation needs scores that differ){more}",
    )


def _where(split: str) -> str:
    """Where a check of ``split``'s pairs looked (``all``: the whole file)."""
    return f"in split {split!r}" if split != "all" else "in the file"


def evaluate(encoder: Any, pairs: pd.DataFrame, conversion: str | None = None) -> Metrics:
    """Metrics of ``encoder`` (or a pair scorer) on ``pairs`` with the texts converted by ``conversion``."""
    pred = pair_similarities(encoder, pairs, conversion)
    return metrics_from_scores(pred, pairs["score"].to_numpy(dtype=np.float64))


def defined(figures: dict[str, Any]) -> dict[str, Any]:
    """``figures`` with every NaN (an undefined correlation: the scorer gave every pair one score) as
    ``None``, for JSON, which has no NaN (``null`` there).

    >>> defined({"spearman": float("nan"), "mse": 0.25, "n": 3})
    {'spearman': None, 'mse': 0.25, 'n': 3}
    """
    return {k: None if isinstance(v, float) and np.isnan(v) else v for k, v in figures.items()}


def metrics_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of metric rows (each a dict with a ``model`` key and the metric fields); an
    undefined figure (NaN, ``None``) reads ``undefined``."""
    head = ["model", "conversion", "split", "spearman", "pearson", "mse", "mae", "n"]
    cols = [h for h in head if any(h in r for r in rows)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "")
            cells.append(
                "undefined"
                if v is None or (isinstance(v, float) and np.isnan(v))
                else f"{v:.2f}"
                if isinstance(v, float) and c in ("spearman", "pearson")
                else f"{v:.4f}"
                if isinstance(v, float)
                else str(v)
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
