"""``nlsim calibrate``: the cosine threshold that best separates related pairs, for any model.

It also makes the quality check of the model's lossy inference paths (int8, bf16, and fp16 on a GPU)
against fp32 on the same pairs, at the threshold it just calibrated (and the cross-encoder's, when the
model folder carries a reranker), and stores it under ``$NLSIM_HOME/quality-check/``: the "command that
has the pairs" for registry models and for folders trained before the check existed
(``--no-precision-check`` skips it; the option keeps its first name).
"""

from __future__ import annotations

import argparse
import os
import textwrap
from pathlib import Path
from typing import Any

from nlsim.commands.evaluate import N_IS_NOT_AN_OPTION, check_split, warn_model_conversion
from nlsim.commands.options import Formatter, refuse_option, threads_arg
from nlsim.conversion import DEFAULT_MODE, MODES
from nlsim.errors import ConfigError
from nlsim.evaluation.levels import parse_level
from nlsim.io.manifest import listed_in
from nlsim.io.ownership import (
    check_outputs_apart,
    check_outside_stores,
    check_replaceable,
    check_writable,
    is_json_record,
)
from nlsim.io.pairs import PAIR_FILE_FORMATS


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="calibrate a model's duplicate threshold on annotated pairs",
        description="Calibrate a model's duplicate threshold on annotated pairs.\n\n"
        + textwrap.fill(
            "The threshold for 'score >= level' on one split (default validation) where the cross-validated "
            "F1 is best; writes a calibration JSON usable by `nlsim dedup --calibration`.",
            100,
        ),
        formatter_class=Formatter,
    )
    p.add_argument("--model", required=True, help="registry name or model folder")
    p.add_argument("--pairs", required=True, help=f"pair file ({PAIR_FILE_FORMATS})")
    p.add_argument(
        "--split", default="validation", help="split to calibrate on, or 'all' (default: validation)"
    )
    p.add_argument(
        "--level",
        default="same-story",
        help="relatedness level: same-story (0.875: 1.0, or 1 and 0.75 averaged; the question of a "
        "duplicate report; default), "
        "same-topic-entity (0.75), or a number",
    )
    p.add_argument(
        "--convert", default=DEFAULT_MODE, choices=MODES, help=f"script conversion (default: {DEFAULT_MODE})"
    )
    p.add_argument(
        "--out",
        required=True,
        help="calibration JSON to write (a folder, or a name ending in /, gets calibration.json)",
    )
    p.add_argument(
        "--method",
        choices=("cross-validated", "best-f1"),
        default="cross-validated",
        help="where the threshold goes: where the F1 averaged over held-out folds is best (default), or "
        "the plain best cut on all the pairs",
    )
    p.add_argument(
        "--threads",
        type=threads_arg,
        default=None,
        help="CPU threads of torch and ONNX Runtime (default: theirs, every core)",
    )
    p.add_argument(
        "--no-precision-check",
        dest="precision_check",
        action="store_false",
        help="skip the quality check of the lossy inference paths (int8, bf16, fp16) against fp32 on these "
        "pairs (without a stored check, runs use the exact fp32 paths only)",
    )
    calibrates = (
        "it calibrates on every pair of the split chosen (--split, default validation); "
        "--no-precision-check skips the quality check of the lossy inference paths"
    )
    refuse_option(p, "--n", N_IS_NOT_AN_OPTION.format(command="calibrate", instead=calibrates))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nlsim.encoders import load_encoder  # deferred: loads torch, `nlsim --help` stays fast
    from nlsim.evaluation.baselines import BASELINES
    from nlsim.evaluation.calibration import (
        CALIBRATION_JSON,
        CALIBRATION_KEYS,
        calibrate,
        check_calibratable,
        save_calibration,
    )
    from nlsim.io.pairs import load_pairs, pinned

    check_split(args.split)  # as nlsim evaluate refuses it: 'all' named too, before any reading
    level = parse_level(args.level)
    model = args.model if Path(args.model).exists() else None
    if model is None and args.model in BASELINES:  # not "could not be fetched from the hub (offline?)"
        raise ConfigError(
            f"--model {args.model}: a baseline of nlsim evaluate, not a model nlsim dedup runs: it has no "
            "threshold to calibrate; pass a registry name or a model folder"
        )
    folder = Path(args.out).is_dir() or args.out.endswith(("/", os.sep))  # "new/": a folder to make
    target = Path(args.out) / CALIBRATION_JSON if folder else Path(args.out)
    check_outputs_apart({"--model": model}, {"--out": args.out})
    # a folder --out gets calibration.json only: the pair file may lie there (--out . beside it)
    check_outputs_apart({"--pairs": args.pairs}, {"--out": target})
    check_outside_stores({"--out": args.out})
    saved = listed_in(target)
    if saved is not None:  # a model's own calibration.json: the folder would be refused as altered
        raise ConfigError(
            f"--out {args.out}: {target} is a file of the saved folder {saved} (its manifest.json lists it, "
            "and every use of the folder checks it): writing over it would leave the folder refused as "
            "altered; write the calibration elsewhere and pass it with --calibration"
        )
    check_writable(target, what="--out")
    check_replaceable(
        target, lambda p: is_json_record(p, CALIBRATION_KEYS), what="--out", kind="calibration file"
    )
    split = None if args.split == "all" else args.split
    # the digest of the bytes read, not of the file once the model has loaded: it may have changed since
    with pinned(args.pairs, "nothing is written") as pairs_sha256:
        frame = load_pairs(args.pairs, split=split, repeats="once", conversion=args.convert)
    check_calibratable(frame, level, args.pairs, args.split)  # before the model loads and embeds them
    enc = load_encoder(args.model, threads=args.threads)
    warn_model_conversion(enc.path if model is not None else None, args.convert)
    cal = calibrate(
        enc,
        frame,
        level=level,
        conversion=args.convert,
        split=args.split,
        model=str(args.model),
        pairs_file=str(args.pairs),
        pairs_sha256=pairs_sha256,
        method=args.method,
    )
    path = save_calibration(cal, target)
    print(cal.describe())
    print(f"written: {path}")
    if args.precision_check:
        # deferred: `nlsim --help` and refusals stay fast
        from nlsim.rerank.reranker import load_reranker
        from nlsim.training.lossy_check import check_model, store_checks

        reranker = load_reranker(enc.path if model is not None else None, threads=args.threads)
        checks = check_model(
            enc,
            reranker,
            frame,
            conversion=args.convert,
            threshold=cal.threshold,
            threshold_source=f"calibrated by this command (level {cal.level})",
            threads=args.threads,
            pairs_file=str(args.pairs),
            pairs_sha256=cal.pairs_sha256,
            split=args.split,
        )
        for written in store_checks(checks):
            print(f"quality check written: {written}")
    return 0
