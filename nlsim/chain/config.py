"""The configuration of the chained pipeline: :class:`PipelineConfig`.

Every option of ``nlsim pipeline`` and every parameter of the ``news-pipeline`` flow is a field here. The
training settings are :class:`~nlsim.training.config.FinetuneConfig`'s and the report's are
:class:`~nlsim.dedup.config.DedupConfig`'s (same names, same defaults, same help).

Example:
    >>> cfg = PipelineConfig(out="reports/x")
    >>> cfg.finetune_config("models/versions/v0001-1a2b3c4d").calibrate_level
    1.0
    >>> cfg.dedup_config("models/versions/v0001-1a2b3c4d").model
    'models/versions/v0001-1a2b3c4d'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nlsim.conversion import Conversion
from nlsim.dedup.config import Backend, ClusterRuleName, DedupConfig, IndexKind, Precision, Representative
from nlsim.evaluation.levels import DEFAULT_LEVEL, parse_level
from nlsim.options import option, option_like
from nlsim.training.config import FinetuneConfig

TRAINING_FIELDS = (
    "loss",
    "epochs",
    "batch_size",
    "gpu_batch_size",
    "lr",
    "max_length",
    "freeze_embeddings",
    "frozen_layers",
    "train_precision",
    "seed",
    "reranker",
    "cross_encoder_epochs",
    "cross_encoder_lr",
    "cross_encoder_frozen_layers",
    "fp32_epochs",
    "fp32_cross_encoder_epochs",
    "fp32_cross_encoder_frozen_layers",
    "story_weight",
    "rerank_weight",
    "story_model",
)
REPORT_FIELDS = (
    "text_fields",
    "k",
    "window_hours",
    "index_kind",
    "use_gpu",
    "representative",
    "cluster_rule",
    "cluster_support",
    "series_veto",
    "cache",
    "progress",
    "backend",
    "precision",
    "near_misses",
)


@dataclass
class PipelineConfig:
    """Parameters of one run of the chain (see the module docstring)."""

    pairs: str = option(
        "annotations/thucnews_tw_pairs.tsv", help="the annotated pairs (with train/validation/test)"
    )
    corpus: str = option("data/thucnews.parquet", help="the corpus the report is made for")
    out: str = option("reports/thucnews", help="report folder")
    model_store: str = option("models", help="model store: versioned models and the current-model pointer")
    base_model: str = option(
        "multilingual-e5-small", help="the encoder fine-tuning starts from (and the zero-shot baseline)"
    )
    convert: Conversion = option("tw2sp", help="OpenCC script conversion (pairs and corpus)")
    level: float | str = option(
        DEFAULT_LEVEL,
        help="relatedness level of the report's threshold: same-story (1.0, default) or same-topic-entity "
        "(0.75), or a number",
    )
    force_train: bool = option(
        False, help="train a new model even when one exists for the same annotations, base model and settings"
    )
    report: bool = option(True, help="stop after the promotion (no report)", flags=("--no-report",))
    first_report: bool = option(
        True,
        help="no report until training ends (by default a store with no promoted model gets the zero-shot "
        "report first, replaced by the fine-tuned one)",
        flags=("--no-first-report",),
    )
    judge_split: str = option("validation", help="split of the scored pairs the report is judged on")
    threads: int | None = option(None, help="torch threads")
    loss: Literal["cosent", "mse"] = option_like(FinetuneConfig, "loss")
    epochs: int = option_like(FinetuneConfig, "epochs")
    batch_size: int = option_like(FinetuneConfig, "batch_size")
    gpu_batch_size: int = option_like(FinetuneConfig, "gpu_batch_size")
    lr: float = option_like(FinetuneConfig, "lr")
    max_length: int = option_like(FinetuneConfig, "max_length")
    freeze_embeddings: bool = option_like(FinetuneConfig, "freeze_embeddings")
    frozen_layers: int = option_like(FinetuneConfig, "frozen_layers")
    train_precision: Literal["auto", "fp32", "bf16"] = option_like(FinetuneConfig, "train_precision")
    seed: int = option_like(FinetuneConfig, "seed")
    reranker: bool = option_like(FinetuneConfig, "reranker")
    cross_encoder_epochs: int = option_like(FinetuneConfig, "cross_encoder_epochs")
    cross_encoder_lr: float = option_like(FinetuneConfig, "cross_encoder_lr")
    cross_encoder_frozen_layers: int = option_like(FinetuneConfig, "cross_encoder_frozen_layers")
    fp32_epochs: int | None = option_like(FinetuneConfig, "fp32_epochs")
    fp32_cross_encoder_epochs: int | None = option_like(FinetuneConfig, "fp32_cross_encoder_epochs")
    fp32_cross_encoder_frozen_layers: int | None = option_like(
        FinetuneConfig, "fp32_cross_encoder_frozen_layers"
    )
    story_weight: float = option_like(FinetuneConfig, "story_weight")
    rerank_weight: float = option_like(FinetuneConfig, "rerank_weight")
    story_model: bool = option_like(FinetuneConfig, "story_model")
    text_fields: tuple[str, ...] = option_like(DedupConfig, "text_fields")
    k: int = option_like(DedupConfig, "k")
    window_hours: float | None = option_like(DedupConfig, "window_hours")
    index_kind: IndexKind = option_like(DedupConfig, "index_kind")
    use_gpu: bool | None = option_like(DedupConfig, "use_gpu")
    representative: Representative = option_like(DedupConfig, "representative")
    cluster_rule: ClusterRuleName = option_like(DedupConfig, "cluster_rule")
    cluster_support: float = option_like(DedupConfig, "cluster_support")
    series_veto: bool = option_like(DedupConfig, "series_veto")
    cache: bool = option_like(DedupConfig, "cache")
    progress: bool = option_like(DedupConfig, "progress")
    backend: Backend = option_like(DedupConfig, "backend")
    precision: Precision = option_like(DedupConfig, "precision")
    near_misses: int = option_like(DedupConfig, "near_misses")

    def __post_init__(self) -> None:
        self.level = parse_level(self.level)
        if isinstance(self.text_fields, str):
            self.text_fields = tuple(f.strip() for f in self.text_fields.split(",") if f.strip())
        self.text_fields = tuple(self.text_fields)
        self.finetune_config(None).check()
        self.dedup_config(self.base_model)

    def finetune_config(self, out: str | None) -> FinetuneConfig:
        """The fine-tuning run of the chain (its model goes to ``out``)."""
        return FinetuneConfig(
            pairs=self.pairs,
            out=out,
            model=self.base_model,
            conversion=self.convert,
            calibrate_level=self.level,
            threads=self.threads,
            **{name: getattr(self, name) for name in TRAINING_FIELDS},
        )

    def dedup_config(self, model: str) -> DedupConfig:
        """The report run of the chain with ``model``."""
        return DedupConfig(
            corpus=self.corpus,
            out=self.out,
            model=model,
            model_store=self.model_store,
            convert=self.convert,
            judge_pairs=str(self.pairs) if self.pairs else None,
            judge_split=self.judge_split or "all",
            annotated_pairs=str(self.pairs) if self.pairs else None,  # scored pairs, editors' verdicts
            **{name: getattr(self, name) for name in REPORT_FIELDS},
        )
