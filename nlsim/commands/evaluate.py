"""``nlsim evaluate``: Spearman x100, Pearson, MSE and MAE of a model (or a baseline) on annotated pairs."""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from typing import Any

from nlsim.commands.options import Formatter, max_length_arg, refuse_option, threads_arg
from nlsim.conversion import DEFAULT_MODE, MODES
from nlsim.errors import ConfigError
from nlsim.io.pairs import PAIR_FILE_FORMATS

N_IS_NOT_AN_OPTION = (
    "--n is not an option of nlsim {command} (nlsim annotate draw's, how many pairs to draw): {instead}"
)
"""Why ``nlsim evaluate`` and ``nlsim calibrate`` refuse ``--n`` by name: argparse would read it as the
start of their one option beginning so (``--no-rerank``, ``--no-precision-check``), silently."""

EVALUATE_SCORES = (
    "it scores every pair of the split chosen (--split, default test); --no-rerank scores a model "
    "folder's bi-encoder alone"
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="score a model on annotated pairs",
        description="Score a model (or a baseline) on annotated pairs: Spearman x100, Pearson, MSE, MAE."
        "\n\n"
        + textwrap.fill(
            "Cosine of the model's embeddings against the gold scores; for a model folder with a reranker, "
            "its rerank score (see --no-rerank).",
            100,
        ),
        formatter_class=Formatter,
    )
    p.add_argument(
        "--model", required=True, help="registry name or model folder; or a baseline: tfidf-char2, use-m3"
    )
    p.add_argument(
        "--pairs", required=True, help=f"pair file ({PAIR_FILE_FORMATS}), or 'stsb' for STS Benchmark"
    )
    p.add_argument(
        "--convert", default=DEFAULT_MODE, choices=MODES, help=f"script conversion (default {DEFAULT_MODE})"
    )
    p.add_argument("--split", default="test", help="split to score, or 'all' (default test)")
    p.add_argument(
        "--max-length",
        type=max_length_arg,
        default=None,
        help="truncate at this many tokens (default: the model's own: a fine-tuned folder's, else 256)",
    )
    p.add_argument(
        "--threads",
        type=threads_arg,
        default=None,
        help="CPU threads of torch and ONNX Runtime (default: theirs, every core)",
    )
    p.add_argument(
        "--no-rerank",
        dest="rerank",
        action="store_false",
        help="score a model folder's bi-encoder alone even when it carries a reranker",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    refuse_option(p, "--n", N_IS_NOT_AN_OPTION.format(command="evaluate", instead=EVALUATE_SCORES))
    p.set_defaults(func=run)


def load_scorer(
    name: str, threads: int | None = None, max_length: int | None = None, rerank: bool = True
) -> Any:
    """A baseline by name, else an encoder; an option a baseline has no use for is refused
    (:func:`check_baseline_options`), it would do nothing."""
    from nlsim.encoders import load_encoder  # deferred: loads torch, `nlsim --help` stays fast
    from nlsim.evaluation.baselines import BASELINES, get_baseline

    if name in BASELINES:
        check_baseline_options(name, threads, max_length, rerank)
        return get_baseline(name, threads=threads) if threads is not None else get_baseline(name)
    return load_encoder(name, threads=threads, max_length=max_length)


def check_baseline_options(name: str, threads: int | None, max_length: int | None, rerank: bool) -> None:
    """Refuse an option the baseline ``name`` has no use for (``--max-length``, ``--threads`` but use-m3's,
    ``--no-rerank``: ``rerank=False``); nothing for a model that is no baseline."""
    from nlsim.evaluation.baselines import BASELINES

    if name not in BASELINES:
        return
    if not rerank:
        raise ConfigError(
            f"--no-rerank: the baseline {name} has no reranker, it scores the pairs itself (--no-rerank "
            "is for a model folder that carries one)"
        )
    if max_length is not None:  # a baseline has no token limit: the option would do nothing
        raise ConfigError(f"--max-length: the baseline {name} reads whole texts, it has no token limit")
    if threads is not None and name != "use-m3":
        raise ConfigError(f"--threads: the baseline {name} has no threads to set (a sparse TF-IDF)")


def load_split(pairs: str, split: str | None, conversion: str | None = None) -> Any:
    """The pairs of ``split`` (``all``: every pair) of the pair file ``pairs`` or of STS Benchmark; in a pair
    file each pair counted once, as the model reads it (converted with ``conversion``:
    :func:`~nlsim.io.pairs.load_pairs`)."""
    from nlsim.evaluation.sts import load_stsb  # deferred with the rest of the library
    from nlsim.io.pairs import load_pairs

    if pairs == "stsb":
        return load_stsb(None if split in (None, "all") else split)
    return load_pairs(pairs, None if split in (None, "all") else split, repeats="once", conversion=conversion)


def check_split(split: str) -> None:
    """Refuse a ``--split`` that names no split, before any reading: the message gives ``all`` too, which
    ``nlsim evaluate`` takes (for STS Benchmark as for a pair file, as the asker's mistake, not the file's).

    >>> check_split("dev")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nlsim.errors.ConfigError: --split 'dev': unknown split (give train, validation, test, or all for ...)
    """
    from nlsim.io.pairs import SPLITS  # deferred with the rest of the library

    if split not in (*SPLITS, "all"):
        raise ConfigError(
            f"--split {split!r}: unknown split (give {', '.join(SPLITS)}, or all for every pair)"
        )


def warn_model_conversion(folder: Any, convert: str) -> None:
    """Warn when ``convert`` is not the script conversion the model folder ``folder`` was trained and
    calibrated with (its ``calibration.json``): its figures would be those of texts it was not trained to
    read, not the ones its training recorded. Nothing for a folder without a calibration (a registry
    model)."""
    from nlsim.evaluation.calibration import load_calibration, warn_other_conversion  # deferred

    cal = load_calibration(folder) if folder is not None else None
    if cal is not None:
        warn_other_conversion(
            cal.conversion,
            convert,
            f"{folder} (its calibration.json)",
            "the figures are those of texts converted otherwise",
        )


def run(args: argparse.Namespace) -> int:
    check_baseline_options(args.model, args.threads, args.max_length, args.rerank)  # before any reading
    check_split(args.split)
    frame = load_split(args.pairs, args.split, args.convert)  # a bad pair file is refused before torch loads

    from nlsim.evaluation.metrics import check_scorable, defined, evaluate, metrics_table  # deferred
    from nlsim.rerank.reranker import load_reranker

    check_scorable(frame, args.pairs, args.split)
    scorer = load_scorer(args.model, args.threads, args.max_length, args.rerank)
    kind = "bi-encoder" if hasattr(scorer, "encode") else "baseline"
    if kind == "bi-encoder":
        warn_model_conversion(getattr(scorer, "path", None), args.convert)
    if args.rerank and kind == "bi-encoder":
        reranker = load_reranker(getattr(scorer, "path", None), threads=args.threads)
        if reranker is not None:
            print(f"scoring with the model's {reranker.describe()}", file=sys.stderr)
            scorer, kind = reranker.scorer(scorer), "reranker"
    m = evaluate(scorer, frame, args.convert)
    if math.isnan(m.spearman):
        print(
            f"Spearman and Pearson are undefined: the {kind} gives each of the {m.n} pairs the same score",
            file=sys.stderr,
        )
    if args.json:
        print(
            json.dumps(
                {
                    "model": args.model,
                    "pairs": args.pairs,
                    "split": args.split,
                    "conversion": args.convert,
                    "scorer": kind,
                    **defined(m.as_dict()),  # valid JSON: an undefined figure is null, never NaN
                },
                allow_nan=False,
            )
        )
    else:
        print(
            metrics_table(
                [{"model": args.model, "conversion": args.convert, "split": args.split, **m.as_dict()}]
            )
        )
    return 0
