"""The near-duplicate pipeline: load → convert → embed → index → neighbours → clusters → report.

Each stage is a plain function; :func:`run_dedup` chains them, and the Prefect flow ``news-dedup``
(``flows/dedup.py``) calls the same functions one task each, so both produce the same report.

The duplicate threshold is never a silent default: it is ``DedupConfig.threshold`` when given, else the
calibration file given as ``DedupConfig.calibration``, else the ``calibration.json`` stored with a
fine-tuned model; with none of them the run stops with a :class:`~nlsim.errors.ConfigError` that says how
to get one (``nlsim calibrate``).

A fine-tuned model folder with a reranker (``reranker/``, :mod:`nlsim.rerank`) adds a stage: the
neighbours are searched down to the reranker's candidate floor, rescored by the cross-encoder, and kept
when their rerank score reaches the reranker's own calibrated threshold (or ``DedupConfig.threshold``,
then read on the rerank scale). ``DedupConfig.rerank`` = False turns it off; a calibration file, which
calibrates cosines, also does.

Example:
    >>> cfg = DedupConfig(corpus="data/bbc.parquet", out="reports/bbc", model="paraphrase-MiniLM-L3-v2",
    ...                   convert="none", threshold=0.95)
    >>> cfg.text_fields
    ('title', 'description')
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nlsim.clustering import build_clusters
from nlsim.conversion import DEFAULT_MODE, check_mode, convert
from nlsim.corpus import DEFAULT_TEXT_FIELDS, Corpus, load_corpus
from nlsim.errors import ConfigError
from nlsim.report import pairs_table, write_report

DEFAULT_MODEL = "multilingual-e5-small"


@dataclass
class DedupConfig:
    """Parameters of one dedup run (the ``nlsim dedup`` options and the flow's parameters)."""

    corpus: str | Path
    out: str | Path
    model: str = DEFAULT_MODEL
    convert: str = DEFAULT_MODE
    threshold: float | None = None
    calibration: str | Path | None = None
    text_fields: tuple[str, ...] = DEFAULT_TEXT_FIELDS
    k: int = 10
    window_hours: float | None = None
    index_kind: str = "auto"
    use_gpu: bool | None = None
    representative: str = "earliest"
    quarantine: str | Path | None = None
    batch_size: int = 64
    cache: bool = True
    rerank: bool | None = None
    save_index: bool = True
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.text_fields, str):
            self.text_fields = tuple(f.strip() for f in self.text_fields.split(",") if f.strip())
        self.text_fields = tuple(self.text_fields)
        check_mode(self.convert)
        if self.threshold is not None and not -1.0 <= float(self.threshold) <= 1.0:
            raise ConfigError(f"threshold must be a cosine in [-1, 1], got {self.threshold}")
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")


@dataclass
class DedupResult:
    """What a run produced: the report files and its figures."""

    out: Path
    files: dict[str, Path]
    summary: dict[str, Any]
    pairs: pd.DataFrame
    clusters: pd.DataFrame


@dataclass
class Threshold:
    value: float
    source: str


# --- stages -------------------------------------------------------------------------------------------


def load_stage(config: DedupConfig) -> Corpus:
    """Load and validate the corpus (bad rows raise, or go to the quarantine file)."""
    return load_corpus(config.corpus, text_fields=config.text_fields, quarantine=config.quarantine)


def convert_stage(corpus: Corpus, mode: str) -> list[str]:
    """The texts to embed, converted to one script (the original text stays in ``corpus.frame``)."""
    return convert(corpus.texts(), mode)


def reranker_stage(config: DedupConfig, model_path: str | Path | None) -> Any:
    """The reranker stored with the model when this run uses one (see the module doc), else ``None``."""
    from nlsim.rerank import has_reranker, load_reranker

    if config.rerank is False:
        return None
    if not has_reranker(model_path):
        if config.rerank:
            raise ConfigError(f"--rerank: model {config.model!r} has no reranker (train one with --reranker)")
        return None
    if config.calibration is not None:
        if config.rerank:
            raise ConfigError(
                "--rerank with --calibration: a calibration file calibrates cosines; the rerank threshold "
                "is the reranker's own or --threshold"
            )
        print(f"the reranker stored with {model_path} is not used: --calibration gives a cosine threshold")
        return None
    reranker = load_reranker(model_path)
    print(reranker.describe())
    return reranker


def resolve_threshold(config: DedupConfig, model_path: str | Path | None, reranker: Any = None) -> Threshold:
    """Pick the threshold: explicit value > calibration file > the model's own ``calibration.json``.

    With a ``reranker`` the threshold is on the rerank score: explicit value > the reranker's calibration.
    """
    from nlsim.calibration import Calibration, load_calibration

    if reranker is not None:
        if config.threshold is not None:
            return Threshold(float(config.threshold), "given with --threshold, on the rerank score")
        if reranker.calibration is None:
            raise ConfigError(f"the reranker of {model_path} has no calibration: pass --threshold X (0-1)")
        cal = Calibration(**reranker.calibration)
        _warn_conversion(cal.conversion, config.convert, model_path)
        return Threshold(float(cal.threshold), f"rerank threshold stored with the model: {cal.describe()}")
    if config.threshold is not None:
        return Threshold(float(config.threshold), "given with --threshold")
    if config.calibration is not None:
        cal = load_calibration(config.calibration)
        if cal is None:
            raise ConfigError(f"calibration file {config.calibration} not found")
        _warn_conversion(cal.conversion, config.convert, config.calibration)
        return Threshold(float(cal.threshold), f"calibration file {config.calibration}: {cal.describe()}")
    cal = load_calibration(model_path) if model_path is not None else None
    if cal is not None:
        _warn_conversion(cal.conversion, config.convert, model_path)
        return Threshold(float(cal.threshold), f"calibration stored with the model: {cal.describe()}")
    raise ConfigError(
        f"no threshold for model {config.model!r}: cosine scales differ between models, "
        "so nlsim has no default. "
        "Pass --threshold X, or --calibration FILE made by `nlsim calibrate --model MODEL --pairs "
        "annotations/thucnews_tw_pairs.tsv --out FILE`, or use a fine-tuned model folder (it carries "
        "calibration.json)."
    )


def _warn_conversion(calibrated: str, used: str, where: Any) -> None:
    if calibrated and calibrated != used:
        print(
            f"warning: the threshold in {where} was calibrated with conversion {calibrated!r}, "
            f"this run uses {used!r}"
        )


def embed_stage(texts: list[str], encoder: Any, config: DedupConfig) -> tuple[np.ndarray, bool]:
    """Embed the converted texts; reuses the content-hash cache when ``config.cache``. Returns (emb, hit)."""

    def compute() -> np.ndarray:
        return encoder.encode(texts, batch_size=config.batch_size, progress=config.progress)

    if not config.cache:
        return compute(), False
    from nlsim.embedding_cache import EmbeddingCache

    return EmbeddingCache().get_or_compute(texts, encoder, config.convert, compute)


def index_stage(emb: np.ndarray, config: DedupConfig) -> Any:
    """Build the FAISS index (exact or approximate, CPU or GPU) and say which."""
    from nlsim.index import build_index

    index = build_index(emb, kind=config.index_kind, use_gpu=config.use_gpu)
    print(f"index: {index.describe()}")
    return index


def neighbors_stage(
    index: Any, emb: np.ndarray, corpus: Corpus, threshold: float, config: DedupConfig
) -> pd.DataFrame:
    """k nearest neighbours of every item at or above ``threshold`` (optionally within a time window)."""
    from nlsim.neighbors import neighbor_pairs

    window = timedelta(hours=config.window_hours) if config.window_hours else None
    times = corpus.frame["published_at"] if window is not None else None
    return neighbor_pairs(
        index,
        emb,
        np.arange(len(emb)),
        k=config.k,
        threshold=threshold,
        times=times,
        window=window,
        progress=config.progress,
    )


def rerank_stage(
    candidates: pd.DataFrame, texts: list[str], reranker: Any, threshold: float, config: DedupConfig
) -> pd.DataFrame:
    """Rescore the candidate pairs with the cross-encoder; keep those whose rerank score reaches
    ``threshold`` (``similarity`` becomes the rerank score; ``cosine`` and ``cross_encoder`` are kept)."""
    from nlsim.rerank import rerank_pairs

    pairs = rerank_pairs(candidates, texts, reranker, threshold, progress=config.progress)
    print(f"reranked {len(candidates)} candidate pairs: {len(pairs)} reach the threshold {threshold:.4f}")
    return pairs


def cluster_stage(
    corpus: Corpus, pairs: pd.DataFrame, config: DedupConfig
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Connected components → the report's ``pairs`` and ``clusters`` tables."""
    labels, clusters = build_clusters(corpus.frame, pairs, representative=config.representative)
    return pairs_table(corpus.frame, pairs, labels), clusters


def save_index_stage(index: Any, emb: np.ndarray, corpus: Corpus, encoder: Any, config: DedupConfig) -> Path:
    """Keep the index and embeddings beside the report (``OUT/index/``), with their metadata."""
    from nlsim.index import IndexMeta, save_index

    folder = Path(config.out) / "index"
    meta = IndexMeta(
        model_id=encoder.model_id,
        fingerprint=encoder.fingerprint,
        conversion=config.convert,
        dim=int(emb.shape[1]),
    )
    save_index(folder, index, corpus.ids, meta, embeddings=emb)
    return folder


def report_stage(
    config: DedupConfig, corpus: Corpus, pairs: pd.DataFrame, clusters: pd.DataFrame, summary: dict[str, Any]
) -> dict[str, Path]:
    """Write the Parquet report, the HTML page and the Markdown summary atomically."""
    return write_report(config.out, pairs, clusters, summary, frame=corpus.frame)


def rerank_figures(reranker: Any, floor: float, candidates: int, kept: int) -> dict[str, Any]:
    """The reranking part of the run summary."""
    return {"describe": reranker.describe(), "candidate_floor": round(floor, 6), "candidates": candidates,
            "kept": kept}


def make_summary(
    config: DedupConfig,
    corpus: Corpus,
    encoder: Any,
    threshold: Threshold,
    index: Any,
    timings: dict[str, float],
    cache_hit: bool,
    pairs: pd.DataFrame,
    clusters: pd.DataFrame,
    rerank: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The run's figures, for ``run.json``, the Markdown summary and the command's output.

    ``rerank`` (with a reranker): ``describe``, ``candidate_floor``, ``candidates`` and ``kept``.
    """
    params = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items() if k != "extra"}
    return {
        "corpus": str(config.corpus),
        "items": len(corpus),
        "quarantined": int(len(corpus.quarantined)),
        "model": encoder.model_id,
        "model_fingerprint": encoder.fingerprint,
        "conversion": config.convert,
        "text_fields": ",".join(config.text_fields),
        "threshold": round(threshold.value, 6),
        "threshold_source": threshold.source,
        "rerank": rerank,
        "index": index.describe(),
        "embedding_cache_hit": cache_hit,
        "pairs": int(len(pairs)),
        "clusters": int(len(clusters)),
        "clustered_items": int(clusters["size"].sum()) if len(clusters) else 0,
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "elapsed_s": round(sum(timings.values()), 2),
        "parameters": params,
    }


def run_dedup(config: DedupConfig, encoder: Any = None) -> DedupResult:
    """Run every stage in order and write the report; returns the result (see the module docstring)."""
    from nlsim.encoders import load_encoder

    timings: dict[str, float] = {}
    t = time.perf_counter()
    corpus = load_stage(config)
    timings["load"] = time.perf_counter() - t
    if len(corpus.quarantined):
        print(f"quarantined {len(corpus.quarantined)} bad rows -> {corpus.quarantine_path}")
    t = time.perf_counter()
    encoder = encoder or load_encoder(config.model)
    reranker = reranker_stage(config, getattr(encoder, "path", None))
    threshold = resolve_threshold(config, getattr(encoder, "path", None), reranker)
    print(f"model {encoder.model_id}; {threshold.source}")
    timings["model"] = time.perf_counter() - t
    t = time.perf_counter()
    texts = convert_stage(corpus, config.convert)
    timings["convert"] = time.perf_counter() - t
    t = time.perf_counter()
    emb, hit = embed_stage(texts, encoder, config)
    timings["embed"] = time.perf_counter() - t
    t = time.perf_counter()
    index = index_stage(emb, config)
    timings["index"] = time.perf_counter() - t
    t = time.perf_counter()
    floor = reranker.candidate_floor(threshold.value) if reranker is not None else threshold.value
    pairs = neighbors_stage(index, emb, corpus, floor, config)
    timings["neighbors"] = time.perf_counter() - t
    rerank = None
    if reranker is not None:
        t = time.perf_counter()
        candidates = len(pairs)
        pairs = rerank_stage(pairs, texts, reranker, threshold.value, config)
        timings["rerank"] = time.perf_counter() - t
        rerank = rerank_figures(reranker, floor, candidates, len(pairs))
    t = time.perf_counter()
    pair_table, clusters = cluster_stage(corpus, pairs, config)
    timings["cluster"] = time.perf_counter() - t
    if config.save_index:
        t = time.perf_counter()
        save_index_stage(index, emb, corpus, encoder, config)
        timings["save_index"] = time.perf_counter() - t
    summary = make_summary(
        config, corpus, encoder, threshold, index, timings, hit, pair_table, clusters, rerank
    )
    t = time.perf_counter()
    files = report_stage(config, corpus, pair_table, clusters, summary)
    timings["report"] = time.perf_counter() - t
    return DedupResult(
        out=Path(config.out), files=files, summary=summary, pairs=pair_table, clusters=clusters
    )
