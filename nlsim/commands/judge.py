"""``nlsim judge``: score a written report against scored pairs (same-story precision, recall, F1)."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from nlsim.commands.options import Formatter


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "judge",
        help="judge a report against the editors' scored pairs",
        description="Judge a written report against the editors' scored pairs, at the cluster level.\n\n"
        + textwrap.fill(
            "Precision of the report's grouped pairs that were judged, pooled recall of the judged "
            "same-story pairs (score >= 0.875), F1, and how many reported pairs were not judged.",
            100,
        ),
        formatter_class=Formatter,
    )
    p.add_argument("--report", required=True, help="report folder (written by nlsim dedup or nlsim pipeline)")
    p.add_argument(
        "--pairs",
        required=True,
        help="scored pair file in the annotations' format (id_a, id_b, text_a, text_b, score, split); a pair "
        "is judged where its ids hold its texts in the corpus",
    )
    p.add_argument("--split", default="validation", help="split to judge on, or 'all' (default validation)")
    p.add_argument("--corpus", default=None, help="the report's corpus (default: the one its run.json names)")
    p.add_argument(
        "--state",
        default=None,
        help="a daily run's report: the state folder its run committed to (nlsim dedup --state); the report "
        "is judged on the window that state kept, as the run judged it (default: none; a daily run's report "
        "is refused without it)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nlsim.evaluation.judge import describe, judge_report  # deferred: `nlsim --help` stays fast

    window = None
    if args.state is not None:
        from nlsim.dedup.state import run_window

        window = run_window(args.state)
    result = judge_report(args.report, args.pairs, split=args.split, corpus=args.corpus, window=window)
    print(json.dumps(result.to_dict(), allow_nan=False) if args.json else describe(result))
    return 0
