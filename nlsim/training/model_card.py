"""The model card (``README.md`` of a fine-tuned model folder): data and hashes, settings, metrics,
calibrated thresholds, the reranker, and how to load the model.

Example:
    >>> metrics_row_label("reranked/test")
    'after fine-tuning, reranked'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nlsim.evaluation.metrics import metrics_table


def silver_card_lines(silver: dict[str, Any] | None) -> list[str]:
    """The card's paragraph on silver pairs (none without them)."""
    if not silver:
        return []
    sources = ", ".join(f"{k} {v}" for k, v in silver["by_source"].items())
    ce = max(silver["cross_encoder_history"], key=lambda h: h["spearman"])
    return [
        f"Silver pairs: {silver['pairs']} drawn from `{silver['corpus']}` ({silver['pool_size']} texts after "
        f"leaving out every validation/test text; {sources}), labelled by the {silver['teacher']} teacher "
        f"(cross-encoder validation Spearman {ce['spearman']}, epoch {ce['epoch']}; first bi-encoder "
        f"{silver['teacher_bi_encoder_best']['spearman']}). They are in `silver_pairs.parquet`.",
        "",
    ]


def metrics_row_label(key: str) -> str:
    """``before/test`` -> ``before fine-tuning``; ``reranked/test`` -> ``after fine-tuning, reranked``."""
    when = key.split("/")[0]
    return "after fine-tuning, reranked" if when == "reranked" else f"{when} fine-tuning"


def reranker_card_lines(reranker: dict[str, Any] | None) -> list[str]:
    """The card's section on the reranker (none without one)."""
    if not reranker:
        return []
    best = reranker["cross_encoder_best"]
    lines = [
        "## Reranker",
        "",
        f"`reranker/` holds a cross-encoder fine-tuned from `{reranker['base_model']}` on the same training "
        f"pairs (kept epoch {best['epoch']}, validation Spearman {best['spearman']}). Dedup rescores the "
        "pairs the bi-encoder finds with it; the rerank score is "
        f"{reranker['weight']:g} x ({reranker['slope']:.4f} x cosine {reranker['intercept']:+.4f}) + "
        f"{1 - reranker['weight']:g} x cross-encoder, on the 0-1 relatedness scale. "
        "Its metrics are the `reranked` rows above.",
        "",
    ]
    c = reranker.get("calibration")
    if c:
        lines += [
            f"Rerank score >= {c['threshold']:.4f} marks a pair as related at level >= {c['level']} "
            f"(validation: precision {c['precision']:.3f}, recall {c['recall']:.3f}, F1 {c['f1']:.3f}).",
            "",
        ]
    return lines


USE_LINES = [
    "## Use",
    "",
    "```python",
    "from sentence_transformers import SentenceTransformer",
    "model = SentenceTransformer('PATH')  # applies the prefix as the default prompt",
    "# or: from nlsim.encoders import load_encoder; load_encoder('PATH')",
    "```",
    "",
]
"""The card's last section: how to load the model."""


def intro_lines(result: Any, encoder: Any, base: str | None) -> list[str]:
    """The card's front matter (for the model hubs), title and one paragraph on what the model is."""
    cfg = result.config
    prefix = encoder.prefix if encoder is not None and encoder.prefix else ""
    return [
        "---",
        "library_name: sentence-transformers",
        "pipeline_tag: sentence-similarity",
        f"base_model: {base}",
        "tags: [sentence-transformers, sentence-similarity, nlsim]",
        "---",
        "",
        f"# {Path(result.model_dir or cfg.get('out') or 'model').name}",
        "",
        f"A Sentence-BERT bi-encoder fine-tuned from `{base}` by `nlsim finetune` on graded "
        "relatedness pairs "
        "(scores 0-1). Mean pooling, L2 normalisation, cosine similarity"
        + (f"; every text is prefixed with `{prefix}`" if prefix else "")
        + f"; texts are converted with OpenCC `{cfg.get('conversion')}` before encoding.",
        "",
    ]


def data_lines(result: Any) -> list[str]:
    """The card's section on the data: each file's SHA-256, and the pairs of each split."""
    cfg = result.config
    subset = ""
    if cfg.get("train_size"):
        seed = cfg["subset_seed"] if cfg.get("subset_seed") is not None else cfg["seed"]
        subset = f" (subset of {cfg['train_size']} drawn with seed {seed})"
    return [
        "## Data",
        "",
        "| file | sha256 |",
        "|---|---|",
        *[f"| `{f}` | `{h}` |" for f, h in result.data_files.items()],
        "",
        f"Pairs: train {result.n_train}{subset}, validation {result.n_validation}, test {result.n_test}.",
        "",
        *silver_card_lines(result.silver),
    ]


def training_lines(result: Any) -> list[str]:
    """The card's section on training: every setting, sizes, steps, time, and the checkpoint kept."""
    cfg = result.config
    return [
        "## Training",
        "",
        "| parameter | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in cfg.items() if k not in ("pairs", "out")],
        f"| trainable / total parameters | {result.trainable_parameters:,} / {result.total_parameters:,} |",
        f"| optimizer steps | {result.steps} |",
        f"| seconds per epoch (training only) | {', '.join(f'{s:.0f}' for s in result.seconds_per_epoch)} |",
        f"| total time (s) | {result.seconds:.0f} |",
        "",
        f"Best checkpoint (kept): epoch {result.best.get('epoch')}, step {result.best.get('step')}, "
        f"validation Spearman {result.best.get('spearman')}.",
        "",
    ]


def metrics_lines(result: Any) -> list[str]:
    """The card's metrics: before and after fine-tuning (and reranked), and the validation history."""
    rows = [
        {
            "model": metrics_row_label(k),
            "conversion": result.config.get("conversion"),
            "split": k.split("/")[1],
            **v,
        }
        for k, v in result.metrics.items()
    ]
    return [
        "## Metrics",
        "",
        "Spearman and Pearson x100 between cosine and gold score; "
        "MSE and MAE of the cosine against the score"
        + ("; `reranked` rows score the rerank score instead." if result.reranker else "."),
        "",
        metrics_table(rows),
        "",
        "### Validation history",
        "",
        "| epoch | step | train loss | Spearman | Pearson | MSE |",
        "|---|---|---|---|---|---|",
        *[
            f"| {h['epoch']} | {h['step']} | {h['train_loss']} | {h['spearman']} | {h['pearson']} "
            f"| {h['mse']} |"
            for h in result.history
        ],
        "",
    ]


def calibration_lines(calibration: dict[str, Any] | None) -> list[str]:
    """The card's section on the calibrated cosine threshold (none without one)."""
    if not calibration:
        return []
    c = calibration
    return [
        "## Calibrated threshold",
        "",
        f"cosine >= {c['threshold']:.4f} marks a pair as related at level >= {c['level']} "
        f"(validation: precision {c['precision']:.3f}, recall {c['recall']:.3f}, F1 {c['f1']:.3f}, "
        f"{c['n_positive']} of {c['n']} pairs positive). Stored in `calibration.json`.",
        "",
    ]


def model_card_markdown(result: Any, encoder: Any = None) -> str:
    """The Markdown model card: base model, data and hashes, sizes, parameters, seed, time, metrics."""
    base = getattr(encoder, "base_model", None) or result.config.get("model")
    lines = [
        *intro_lines(result, encoder, base),
        *data_lines(result),
        *training_lines(result),
        *metrics_lines(result),
        *reranker_card_lines(result.reranker),
        *calibration_lines(result.calibration),
        *USE_LINES,
    ]
    return "\n".join(lines)
