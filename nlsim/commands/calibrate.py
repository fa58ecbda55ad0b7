"""``nlsim calibrate``: the cosine threshold that best separates related pairs, for any model."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from nlsim.conversion import DEFAULT_MODE, MODES
from nlsim.evaluation.levels import parse_level
from nlsim.io.ownership import check_outputs_apart, check_writable


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="calibrate a model's duplicate threshold on annotated pairs",
        description="Best-F1 cosine threshold for 'score >= level' on one split "
        "(default validation); writes a calibration JSON usable by `nlsim dedup --calibration`.",
    )
    p.add_argument("--model", required=True, help="registry name or model folder")
    p.add_argument("--pairs", required=True, help="pair file (.tsv/.csv/.parquet)")
    p.add_argument("--split", default="validation")
    p.add_argument(
        "--level",
        default="same-story",
        help="relatedness level: same-story (1.0, the question of a duplicate report; default), "
        "same-topic-entity (0.75), or a number",
    )
    p.add_argument("--convert", default=DEFAULT_MODE, choices=MODES)
    p.add_argument("--out", required=True, help="calibration JSON to write (a folder gets calibration.json)")
    p.add_argument("--threads", type=int, default=None)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nlsim.encoders import load_encoder  # deferred: loads torch, `nlsim --help` stays fast
    from nlsim.evaluation.calibration import calibrate, save_calibration
    from nlsim.io.atomic import file_sha256
    from nlsim.io.pairs import load_pairs

    level = parse_level(args.level)
    model = args.model if Path(args.model).exists() else None
    check_outputs_apart({"--pairs": args.pairs, "--model": model}, {"--out": args.out})
    check_writable(args.out, what="--out")
    frame = load_pairs(args.pairs, split=None if args.split == "all" else args.split)
    enc = load_encoder(args.model, threads=args.threads)
    cal = calibrate(
        enc,
        frame,
        level=level,
        conversion=args.convert,
        split=args.split,
        model=str(args.model),
        pairs_file=str(args.pairs),
        pairs_sha256=file_sha256(args.pairs),
    )
    path = save_calibration(cal, args.out)
    print(cal.describe())
    print(f"written: {path}")
    return 0
