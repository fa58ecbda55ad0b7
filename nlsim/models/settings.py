"""What a run asks of its model: :class:`ModelSettings`, one of a run's settings by concern
(:mod:`nlsim.dedup.settings`), and the model names a run starts from (:data:`DEFAULT_MODEL`,
:data:`CURRENT_MODEL`).

Example:
    >>> ms = ModelSettings(name=CURRENT_MODEL, threshold=0.9)
    >>> ms.store, ms.backend, ms.precision, ms.rerank
    ('models', 'auto', 'auto', None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nlsim.conversion import DEFAULT_MODE, Conversion

DEFAULT_MODEL = "multilingual-e5-small"
"""The encoder of a run that names none (zero-shot)."""
CURRENT_MODEL = "current"
"""The name that asks for the model store's promoted model."""

Backend = Literal["auto", "torch", "onnx"]
Precision = Literal["auto", "fp32", "bf16", "fp16", "int8"]


@dataclass(frozen=True)
class ModelSettings:
    """The encoder and its reranker: which, the threshold of a pair, how they run, their caches."""

    name: str
    """A registry name, a model folder, ``current`` (the store's promoted model) or a hub name."""
    store: str = "models"
    convert: Conversion = DEFAULT_MODE
    threshold: float | None = None
    calibration: str | None = None
    rerank: bool | None = None
    backend: Backend = "auto"
    precision: Precision = "auto"
    batch_size: int | None = None
    threads: int | None = None
    """CPU threads of torch and ONNX Runtime (``None``: theirs)."""
    cache: bool = True
    """Reuse the embeddings and cross-encoder scores of texts seen before (content-hash caches)."""
    series_veto: bool = True
    topic_threshold: float | None = None
    """The topic groups' threshold given (on the rerank score with a reranker); default: calibrated with the
    model at the topic level (:mod:`nlsim.clusters.topics`)."""
    topics: bool = True
    """Read topic groups around the stories (they need a topic threshold)."""
