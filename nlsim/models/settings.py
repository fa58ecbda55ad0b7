"""What a run asks of its model: :class:`ModelSettings`, one of a run's records of settings by concern
(:class:`~nlsim.dedup.config.DedupConfig`), and the model names a run starts from (:data:`DEFAULT_MODEL`,
:data:`CURRENT_MODEL`).

Example:
    >>> ms = ModelSettings(name=CURRENT_MODEL, threshold=0.9)
    >>> ms.store, ms.backend, ms.precision, ms.rerank
    ('models', 'auto', 'auto', None)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Literal

from nlsim.conversion import DEFAULT_MODE, Conversion, check_mode
from nlsim.errors import ConfigError
from nlsim.options import option, text_paths

DEFAULT_MODEL = "multilingual-e5-small"
"""The encoder of a run that names none (zero-shot)."""
CURRENT_MODEL = "current"
"""The name that asks for the model store's promoted model."""

Backend = Literal["auto", "torch", "onnx"]
Precision = Literal["auto", "fp32", "bf16", "fp16", "int8"]


def check_threads(threads: int | None, flag: str = "--threads") -> None:
    """Refuse a thread count below 1 or above :func:`most_threads` (``None``: torch's own choice). More
    threads than CPUs only wait for each other but work (a deployment's setting made for a larger machine
    still runs); thousands cannot all be started (the run then died in the tokenizer or in OpenMP, with a
    Rust panic or a bare ``libgomp`` line, after loading the model).

    Example:
        >>> check_threads(1); check_threads(None); check_threads(64)
        >>> check_threads(0)
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --threads must be >= 1 (the CPU threads to use), got 0
        >>> check_threads(100_000)
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --threads must be at most ... (8 a CPU, 64 at least), got 100000
    """
    if threads is None:
        return
    if int(threads) < 1:
        raise ConfigError(f"{flag} must be >= 1 (the CPU threads to use), got {threads}")
    most = most_threads()
    if int(threads) > most:
        raise ConfigError(f"{flag} must be at most {most} (8 a CPU, 64 at least), got {threads}")


def most_threads() -> int:
    """The most CPU threads a run may ask for: 8 for each CPU of the machine, and 64 at least.

    Example:
        >>> most_threads() >= 64
        True
    """
    return max(64, 8 * (os.cpu_count() or 1))


MOST_BATCH = 4096
"""The most texts one embedding batch may hold (``--batch-size``): 16 times a GPU's default batch. A batch
holds its texts' activations all at once: ``--batch-size 10**9`` made the whole corpus one batch (5,000
short titles took 1.6 GB where the default took 0.6 GB, and a large corpus ran out of memory)."""


def check_batch_size(
    batch_size: int | None, flag: str = "--batch-size", what: str = "texts embedded at once"
) -> None:
    """Refuse an embedding batch below 1 text or above :data:`MOST_BATCH` (``None``: the device's default);
    ``what`` says what the batch holds (a training step's pairs are bounded the same way).

    Example:
        >>> check_batch_size(64); check_batch_size(None); check_batch_size(MOST_BATCH)
        >>> check_batch_size(0)
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --batch-size must be >= 1, got 0
        >>> check_batch_size(10**9)
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --batch-size must be at most 4,096 (texts embedded at once), got 1000000000
    """
    if batch_size is None:
        return
    if int(batch_size) < 1:
        raise ConfigError(f"{flag} must be >= 1, got {batch_size}")
    if int(batch_size) > MOST_BATCH:
        raise ConfigError(f"{flag} must be at most {MOST_BATCH:,} ({what}), got {batch_size}")


def check_max_length(max_length: int | None, flag: str = "--max-length") -> None:
    """Refuse a token limit below 4: a text needs its two special tokens, a prefix token and itself.

    Example:
        >>> check_max_length(64); check_max_length(None)
        >>> check_max_length(2)
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: --max-length must be at least 4 (two special tokens and the text), got 2
    """
    if max_length is not None and int(max_length) < 4:
        raise ConfigError(f"{flag} must be at least 4 (two special tokens and the text), got {max_length}")


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """The encoder and its reranker: which, the threshold of a pair, how they run, their caches."""

    name: str = option(
        DEFAULT_MODEL,
        help="registry name, fine-tuned model folder, 'current' (the model store's promoted model, zero-shot "
        "e5 until one is promoted), local Hugging Face folder or hub name",
        name="model",
    )
    """A registry name, a model folder, ``current`` (the store's promoted model) or a hub name."""
    store: str = option("models", help="model store folder, read for --model current", name="model_store")
    convert: Conversion = option(DEFAULT_MODE, help="OpenCC script conversion before embedding")
    threshold: float | None = option(
        None,
        help="threshold of a pair: a cosine, or with a reranker the 0-1 rerank score (default: the "
        "calibration file, else the model's own calibration)",
    )
    calibration: str | None = option(
        None,
        help="calibration JSON from `nlsim calibrate` (a cosine threshold) (default: none, the model's own "
        "calibration)",
    )
    rerank: bool | None = option(
        None,
        help="rescore the pairs with the reranker stored with the model (default: when it has one); "
        "the threshold is then on the 0-1 rerank score",
        flags=("--rerank", "--no-rerank"),
    )
    topics: bool = option(
        True,
        help="leave out the topic groups around the stories (stories and single items sharing a topic and "
        "entity: an exam year, a saga, one product's promotions; nlsim/clusters/topics.py)",
        flags=("--no-topics",),
    )
    """Read topic groups around the stories (they need a topic threshold)."""
    topic_threshold: float | None = option(
        None,
        help="the topic groups' threshold, on the bi-encoder's cosine (default: calibrated with the model at "
        "the rubric's 0.75 level, topic_calibration.json)",
        needs="topics",
    )
    """The topic groups' threshold given, on the bi-encoder's cosine (with or without a reranker); default:
    calibrated with the model at the topic level (:mod:`nlsim.clusters.topics`)."""
    series_veto: bool = option(
        True,
        help="keep the rerank score of a pair whose headlines name other years, model codes or figures of "
        "one template, or one a rise and the other a fall (by default held at 0.75: a series, not one "
        "story; nlsim/rerank/series.py)",
        flags=("--no-series-veto",),
    )
    batch_size: int | None = option(
        None, help="texts per embedding batch, at most 4,096 (default: 64 on the CPU, 256 on a GPU)"
    )
    threads: int | None = option(
        None,
        help="CPU threads of torch, ONNX Runtime and FAISS (default: theirs, every core); fewer leave room "
        "for other work on a shared machine",
    )
    """CPU threads of torch, ONNX Runtime and the FAISS index (``None``: theirs)."""
    backend: Backend = option(
        "auto",
        help="how the encoder and the reranker's cross-encoder run: ONNX Runtime or torch (auto: chosen on "
        "this machine by a cached speed probe)",
    )
    precision: Precision = option(
        "auto",
        help="their precision: fp32 (exact), bf16, fp16 (GPU), int8 (CPU); auto takes a lossy one only where "
        "the model's stored quality check passed it and, on a CPU, it is faster (see docs/encoders.md)",
    )
    cache: bool = option(True, help="do not reuse cached embeddings", flags=("--no-cache",))
    """Reuse the embeddings and cross-encoder scores of texts seen before (content-hash caches)."""

    def __post_init__(self) -> None:
        text_paths(self, "store", "calibration")
        self.check()

    def check(self) -> None:
        """Refuse values that cannot work (before any work is done)."""
        check_mode(self.convert)
        for flag, value in (("--threshold", self.threshold), ("--topic-threshold", self.topic_threshold)):
            if value is not None and not (math.isfinite(float(value)) and -1.0 <= float(value) <= 1.0):
                raise ConfigError(f"{flag} must be a number in [-1, 1], got {value}")
        check_batch_size(self.batch_size)
        check_threads(self.threads)
