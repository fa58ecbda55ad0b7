"""Character-bigram TF-IDF cosine: the lexical baseline (works on Chinese without word segmentation).

IDF is fitted on ``fit_texts`` when given (e.g. the whole corpus), else on the texts being scored.

Example:
    >>> TfidfCharBigrams()(["ab cd"], ["ab cd"]).round(3).tolist()
    [1.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class TfidfCharBigrams:
    """Cosine of sublinear-TF, smoothed-IDF character-bigram vectors (whitespace kept, lower-cased)."""

    name = "tfidf-char2"

    def __init__(self, fit_texts: Sequence[str] | None = None) -> None:
        self.fit_texts = list(fit_texts) if fit_texts is not None else None

    def __call__(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        # deferred: heavy or optional, loaded only when needed
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(analyzer="char", ngram_range=(2, 2), sublinear_tf=True, lowercase=True)
        vec.fit(self.fit_texts if self.fit_texts else list(texts_a) + list(texts_b))
        a = vec.transform(list(texts_a))
        b = vec.transform(list(texts_b))
        return np.asarray(a.multiply(b).sum(axis=1)).ravel().astype(np.float64)
