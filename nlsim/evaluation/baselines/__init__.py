"""Unsupervised baselines scored on the same pairs as the encoders.

Each baseline is a callable ``(texts_a, texts_b) -> np.ndarray`` of similarities, usable with
:func:`nlsim.evaluation.evaluate`.

Example:
    >>> sim = get_baseline("tfidf-char2")
    >>> [round(float(x), 2) for x in sim(["今天股市大涨", "天气"], ["今天股市大跌", "足球"])]
    [0.71, 0.0]
"""

from __future__ import annotations

from nlsim.errors import ConfigError
from nlsim.evaluation.baselines.tfidf import TfidfCharBigrams
from nlsim.evaluation.baselines.use import UniversalSentenceEncoder

BASELINES = {"tfidf-char2": TfidfCharBigrams, "use-m3": UniversalSentenceEncoder}


def get_baseline(name: str, **kwargs: object) -> object:
    """A baseline scorer by name: ``tfidf-char2`` or ``use-m3``."""
    try:
        return BASELINES[name](**kwargs)
    except KeyError:
        raise ConfigError(f"unknown baseline {name!r} (use {', '.join(BASELINES)})") from None


__all__ = ["BASELINES", "TfidfCharBigrams", "UniversalSentenceEncoder", "get_baseline"]
