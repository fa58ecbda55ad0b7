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
from nlsim.rerank.reranker import Reranker


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
    story = reranker.get("story")
    if story:
        weights = ", ".join(f"{n} {w:+.2f}" for n, w in zip(story["features"], story["coef"], strict=True))
        lines += [
            "A story model decides same story instead of the rerank score: a logistic regression fitted "
            f"on the validation pairs over the cross-encoder's logit, the cosine and what the headlines name "
            f"(standardised weights: {weights}), for the pairs at or above cosine {story['cosine_gate']:.4f} "
            "(the rerank score's candidate floor at its own threshold): a pair's score there is its "
            f"same-story probability p as {story['rerank_threshold']:.4f} + p x (the highest rerank score - "
            f"{story['rerank_threshold']:.4f}); the `reranked` validation row scores each pair by a model "
            "fitted without its fold.",
            "",
        ]
    c = reranker.get("calibration")
    if c:
        lines += [
            f"{'Score' if story else 'Rerank score'} >= {c['threshold']:.4f} marks a pair as related at "
            f"level >= {c['level']} "
            f"(validation: precision {c['precision']:.3f}, recall {c['recall']:.3f}, F1 {c['f1']:.3f})"
            f"{story_need(reranker, c['threshold'])}.",
            "",
        ]
    return lines


def story_need(reranker: dict[str, Any], threshold: float) -> str:
    """What the threshold asks of the story model's probability, for the card (empty without one).

    Example:
        >>> card = {"weight": 0.5, "slope": 1.0, "intercept": 0.0, "story": {"rerank_threshold": 0.7}}
        >>> story_need(card, 0.8)
        '; for the pairs the story model decides, a same-story probability of at least 0.333'
    """
    story = reranker.get("story")
    if not story:
        return ""
    low = float(story["rerank_threshold"])
    top = Reranker(None, reranker["slope"], reranker["intercept"], reranker["weight"]).max_score()
    if threshold <= low or top <= low:
        return "; every pair the story model decides reaches it, whatever its probability"
    need = (threshold - low) / (top - low)
    return f"; for the pairs the story model decides, a same-story probability of at least {need:.3f}"


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


def same_story_lines(metrics: dict[str, dict[str, Any]]) -> list[str]:
    """Same story at the calibrated threshold, per scored split (none when nothing was calibrated).

    Example:
        >>> same_story_lines({"after/test": {"same_story": {"threshold": 0.9, "precision": 0.8,
        ...     "recall": 0.5, "f1": 0.615, "n_positive": 20}}})[0][-44:]
        'recall 0.500, F1 0.615 (20 same-story pairs)'
    """
    lines = []
    for key, figures in metrics.items():
        at = figures.get("same_story")
        if at:
            lines.append(
                f"- {metrics_row_label(key)}, {key.split('/')[1]}: same story at {at['threshold']:.4f}: "
                f"precision {at['precision']:.3f}, recall {at['recall']:.3f}, F1 {at['f1']:.3f} "
                f"({at['n_positive']} same-story pairs)"
            )
    return [*lines, ""] if lines else []


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
        *same_story_lines(result.metrics),
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
