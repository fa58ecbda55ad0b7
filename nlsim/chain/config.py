"""The configuration of the chained pipeline: :class:`PipelineConfig`.

The chain is a fine-tuning run and a report run, and its configuration is composed of their records: the
bi-encoder's, the reranker's and the training steps' of :class:`~nlsim.training.config.FinetuneConfig`, and
the input, model, search, clustering and report records of :class:`~nlsim.dedup.config.DedupConfig`, each
setting as its record declares it. A setting added to one of them is an option of ``nlsim pipeline`` and a
parameter of the ``news-pipeline`` flow with no line here. The chain's own settings are what it adds: the
pairs (trained on, and judged against), the model store, the base model, one script conversion for both
runs, the level, and when to train and report. It sets some settings of the records itself (they are no
options of it: :data:`SET_BY_THE_CHAIN`): the report's model (the promoted one), model store and
conversion, its judged pairs and the editors' verdicts (the pairs) and its CPU threads (the chain's
``--threads``), and gives the report's corpus and folder the chain's defaults.

Example:
    >>> cfg = PipelineConfig.of(out="reports/x", k=5)
    >>> cfg.finetune_config("models/versions/v0001-1a2b3c4d").evaluation.calibrate_level
    0.875
    >>> report = cfg.dedup_config("models/versions/v0001-1a2b3c4d")
    >>> report.model.name, report.search.k, report.report.out, report.report.judge_pairs
    ('models/versions/v0001-1a2b3c4d', 5, 'reports/x', 'annotations/thucnews_tw_pairs.tsv')
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nlsim.conversion import Conversion
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.settings import ClusteringSettings, InputSettings, ReportSettings, SearchSettings
from nlsim.errors import ConfigError
from nlsim.evaluation.levels import DEFAULT_LEVEL, parse_level
from nlsim.io.pairs import PAIR_FILE_FORMATS
from nlsim.models.settings import ModelSettings
from nlsim.options import Configuration, assign, concern, option
from nlsim.training.config import (
    BiEncoderSettings,
    CrossEncoderSettings,
    DataSettings,
    EvaluationSettings,
    FinetuneConfig,
    RecipeSettings,
)

SET_BY_THE_CHAIN = {
    "model": ("model", "model_store", "convert", "threshold", "calibration", "batch_size", "threads"),
    "clustering": ("annotated_pairs",),
    "report": ("judge_pairs",),
}
"""The report's settings the chain sets itself (by flat name): the model (the store's promoted one, with its
calibrated threshold), the store and the conversion (the chain's), the judged pairs and the editors'
verdicts (the chain's pairs), and its CPU threads (the chain's ``--threads``, which bounds training and both
reports alike); the report's embedding batches are left at their default."""


@dataclass(frozen=True, kw_only=True)
class PipelineConfig(Configuration):
    """Parameters of one run of the chain (see the module docstring)."""

    pairs: str = option(
        "annotations/thucnews_tw_pairs.tsv",
        help=f"the annotated pairs (with train/validation/test; {PAIR_FILE_FORMATS})",
    )
    model_store: str = option("models", help="model store: versioned models and the current-model pointer")
    base_model: str = option(
        "multilingual-e5-small", help="the encoder fine-tuning starts from (and the zero-shot baseline)"
    )
    convert: Conversion = option("tw2sp", help="OpenCC script conversion (pairs and corpus)")
    level: float | str = option(
        DEFAULT_LEVEL,
        help="relatedness level of the report's threshold: same-story (0.875: 1.0, or 1 and 0.75 averaged) "
        "or same-topic-entity (0.75), or a number",
    )
    force_train: bool = option(
        False, help="train a new model even when one exists for the same annotations, base model and settings"
    )
    make_report: bool = option(
        True, help="stop after the promotion (no report)", flags=("--no-report",), name="report"
    )
    first_report: bool = option(
        True,
        help="no report until training ends (by default a store with no promoted model gets the zero-shot "
        "report first, replaced by the fine-tuned one)",
        flags=("--no-first-report",),
        needs="report",
    )
    bi_encoder: BiEncoderSettings = concern(BiEncoderSettings, title="bi-encoder")
    cross_encoder: CrossEncoderSettings = concern(
        CrossEncoderSettings,
        title="reranker",
        description="a cross-encoder trained beside the bi-encoder and saved with it in reranker/: the "
        "report rescores the pairs the bi-encoder finds (see docs/finetuning.md)",
    )
    recipe: RecipeSettings = concern(
        RecipeSettings,
        title="training steps (both encoders)",
        helps={
            "threads": "CPU threads of the training and of the reports (torch, ONNX Runtime, FAISS; default: "
            "theirs, every core); fewer leave room for other work"
        },
    )
    input: InputSettings = concern(
        InputSettings,
        title="the report's input",
        needs="report",
        defaults={"corpus": "data/thucnews.parquet"},
        helps={
            "corpus": "the corpus the report is made for",
            "date": "the run's date (YYYY-MM-DD) put into {date} in --corpus; refused where --corpus has no "
            "{date} (default: the scheduled or current date)",
        },
    )
    model: ModelSettings = concern(
        ModelSettings, title="the report's model", omit=SET_BY_THE_CHAIN["model"], needs="report"
    )
    search: SearchSettings = concern(SearchSettings, title="neighbour search", needs="report")
    clustering: ClusteringSettings = concern(
        ClusteringSettings, title="clusters", omit=SET_BY_THE_CHAIN["clustering"], needs="report"
    )
    report: ReportSettings = concern(
        ReportSettings,
        title="report",
        needs="report",
        omit=SET_BY_THE_CHAIN["report"],
        defaults={"out": "reports/thucnews"},
        helps={"out": "report folder", "judge_split": "split of the scored pairs the report is judged on"},
    )

    def __post_init__(self) -> None:
        assign(self, "level", parse_level(self.level))
        if self.model.rerank is True and not self.cross_encoder.reranker:
            raise ConfigError(
                "--rerank asks the report to rescore with the model's reranker, and --no-reranker trains a "
                "model without one: leave one of them out (nothing is done yet)"
            )
        self.finetune_config(None).check()
        self.dedup_config(self.base_model)

    def finetune_config(self, out: str | None) -> FinetuneConfig:
        """The fine-tuning run of the chain (its model goes to ``out``)."""
        return FinetuneConfig(
            out=out,
            model=self.base_model,
            data=DataSettings(pairs=self.pairs, conversion=self.convert),
            bi_encoder=self.bi_encoder,
            cross_encoder=self.cross_encoder,
            recipe=self.recipe,
            evaluation=EvaluationSettings(calibrate_level=self.level),
        )

    def dedup_config(self, model: str) -> DedupConfig:
        """The report run of the chain with ``model``: judged against the chain's pairs, whose editors'
        verdicts act on its clusters."""
        pairs = str(self.pairs) if self.pairs else None
        return DedupConfig(
            input=self.input,
            model=replace(
                self.model,
                name=model,
                store=self.model_store,
                convert=self.convert,
                threads=self.recipe.threads,
            ),
            search=self.search,
            clustering=replace(self.clustering, annotated_pairs=pairs),
            report=replace(self.report, judge_pairs=pairs, judge_split=self.report.judge_split or "all"),
        )
