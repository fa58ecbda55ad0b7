"""``nlsim annotate draw|merge|verdicts``: the editors' loop (new candidate pairs to score; merge a filled
file; check the verdict store against the pair file)."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from nlsim.commands.options import Formatter, seed_arg, threads_arg, threshold_arg
from nlsim.conversion import DEFAULT_MODE, MODES

TEXT_FIELDS = "title_zh_tw, title, text, title_zh_cn"
"""The text columns read when ``--text-field`` is not given, the first the corpus has
(:data:`nlsim.io.corpus.ITEM_TEXT_FIELDS`, not imported so that ``nlsim --help`` stays fast)."""


def _description(summary: str, details: str) -> str:
    return f"{summary}\n\n{textwrap.fill(details, 100)}"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "annotate",
        help="draw pairs for editors to score, or merge a scored file",
        description=_description(
            "The editors' loop: draw candidate pairs to score, merge a scored file, check the verdicts.",
            "draw writes new candidate pairs to a CSV for an editor; merge checks the filled file and adds "
            "its pairs to the annotated pair file (and their verdicts to the store beside it); verdicts "
            "checks that store against the pair file. Each action's --help lists its options.",
        ),
        formatter_class=Formatter,
    )
    sub = p.add_subparsers(dest="annotate_command", required=True)
    _draw_parser(sub)
    _merge_parser(sub)
    _verdicts_parser(sub)


def _draw_parser(sub: Any) -> None:
    """``nlsim annotate draw`` and its options."""
    d = sub.add_parser(
        "draw",
        help="write new candidate pairs to a CSV for an editor",
        description=_description(
            "Write new candidate pairs to a CSV for an editor to score.",
            "Half of them are the pairs nearest the threshold (where the model is least sure), the rest "
            "spread over the score strata; the pairs --pairs already holds are left out. The editor fills in "
            "each row's score, and `nlsim annotate merge` adds the pairs to the pair file.",
        ),
        formatter_class=Formatter,
    )
    d.add_argument(
        "--corpus",
        required=True,
        help="items with an id and a text column (.parquet, .csv, .tsv, .jsonl or a .json array of objects)",
    )
    d.add_argument(
        "--pairs",
        default=None,
        help="the annotated pair file: its pairs are never drawn again (default: none, any pair may be "
        "drawn)",
    )
    d.add_argument("--out", required=True, help="CSV to write")
    d.add_argument("-n", "--n", type=int, default=100, help="how many pairs (default 100)")
    d.add_argument(
        "--model",
        default="multilingual-e5-small",
        help="encoder name or fine-tuned model folder, 'current' (the model store's promoted model), or "
        "tfidf-char2; with a reranker the pairs are drawn on the rerank score "
        "(default: multilingual-e5-small)",
    )
    d.add_argument(
        "--model-store",
        default="models",
        help="model store folder, read for --model current (default: models)",
    )
    d.add_argument(
        "--rerank",
        dest="rerank",
        action="store_const",
        const=True,
        default=None,
        help="draw on the rerank score (default: when the model has a reranker)",
    )
    d.add_argument("--no-rerank", dest="rerank", action="store_const", const=False, help="draw on the cosine")
    d.add_argument(
        "--convert", default=DEFAULT_MODE, choices=MODES, help=f"script conversion (default: {DEFAULT_MODE})"
    )
    d.add_argument(
        "--threshold",
        type=threshold_arg,
        default=None,
        help="score to draw around: the rerank score with a reranker, else the cosine (default: the "
        "reranker's or the model's calibrated threshold, else the pool median)",
    )
    d.add_argument(
        "--text-field", default=None, help=f"text column (default: the first of {TEXT_FIELDS} it has)"
    )
    d.add_argument(
        "--seed",
        type=seed_arg,
        default=0,
        help="seed of the random pairs drawn (default 0: the same draw each time)",
    )
    d.add_argument(
        "--threads",
        type=threads_arg,
        default=None,
        help="CPU threads of torch and ONNX Runtime (default: theirs, every core)",
    )
    d.set_defaults(func=run_draw)


def _verdicts_parser(sub: Any) -> None:
    """``nlsim annotate verdicts`` and its options."""
    v = sub.add_parser(
        "verdicts",
        help="check a pair file's verdict store against the pair file (lost, cut, damaged, earlier name)",
        description=_description(
            "Check the verdict store beside a pair file against the pair file.",
            "The store (FILE.verdicts.csv) keeps the editors' verdicts that reports act on; this says "
            "whether it is in step with the pair file (verdicts lost, cut short, damaged, or a store under "
            "an earlier name), and --write writes it as it holds.",
        ),
        formatter_class=Formatter,
    )
    v.add_argument("--pairs", required=True, help="the annotated pair file whose verdict store to check")
    v.add_argument(
        "--write",
        action="store_true",
        help="write the store as it holds: moved to its name beside the pair file, merged pairs it lacked "
        "rebuilt from the pair file, verdicts the pair file does not hold taken out",
    )
    v.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: the store, whether it is in step, and every verdict that holds with its "
        "note whole (the lines cut a long note)",
    )
    v.set_defaults(func=run_verdicts)


def _merge_parser(sub: Any) -> None:
    """``nlsim annotate merge`` and its options."""
    m = sub.add_parser(
        "merge",
        help="validate a filled CSV and add its pairs to the pair file",
        description=_description(
            "Validate an editor's filled CSV and add its pairs to the annotated pair file.",
            "Every row must be scored with a level of the rubric and its texts must match the pair file (and "
            "--corpus, when given); a refused file leaves the pair file as it was. The merged pairs are also "
            "the editors' verdicts, kept in the store beside the pair file for later reports.",
        ),
        formatter_class=Formatter,
    )
    m.add_argument(
        "--filled",
        required=True,
        help="the editors' scored file: a CSV of `nlsim annotate draw` or a report page's export "
        "(marks-<run id>-<time>.csv), every row scored with a level of the rubric",
    )
    m.add_argument("--pairs", required=True, help="pair file to extend (rewritten atomically)")
    m.add_argument(
        "--split",
        default="train",
        choices=("train", "validation", "test"),
        help="split the merged pairs go to (default: train; validation and test pairs are what models "
        "are chosen and judged on)",
    )
    m.add_argument(
        "--skip-blank", action="store_true", help="skip unscored rows instead of refusing the file"
    )
    m.add_argument(
        "--corpus",
        default=None,
        help="the corpus the pairs were drawn from or shown in: each item's text must be its text there "
        "(a row with swapped ids or a text changed in a spreadsheet is refused) (default: none, the texts "
        "are checked against the pair file's only)",
    )
    m.add_argument(
        "--text-field",
        default=None,
        help=f"with --corpus: its text column the pairs were drawn with (default: the first of {TEXT_FIELDS} "
        "it has, as draw reads it)",
    )
    m.add_argument(
        "--skip-scored",
        action="store_true",
        help="skip the rows whose pair is already annotated (say how many; they are kept nowhere) and merge "
        "the rest, instead of refusing the file",
    )
    m.add_argument(
        "--overrule",
        action="store_true",
        help="a row whose pair the pair file already scores in its training split is the editor's newer "
        "decision: kept in the verdict store as the pair's verdict (the earlier decisions kept with it), the "
        "pair file left as it is; it acts in the next reports and the next training reads it (a page export "
        "says so per row in its `overrule` column; of two decisions on a pair, the one marked later stands, "
        "by the export's `marked_at`, the older kept in the pair's history whichever file is merged first: "
        "on a pair an editor's file added, the older mark takes the pair file's row, which the newer "
        "decision overrules). Validation and test pairs are never overruled",
    )
    m.set_defaults(func=run_merge)


def run_draw(args: argparse.Namespace) -> int:
    from nlsim.annotation.draw import draw_candidates  # deferred: `nlsim --help` and refusals stay fast

    draw_candidates(
        args.corpus,
        args.pairs,
        args.out,
        n=args.n,
        scorer=args.model,
        conversion=args.convert,
        threshold=args.threshold,
        text_field=args.text_field,
        seed=args.seed,
        rerank=args.rerank,
        model_store=args.model_store,
        threads=args.threads,
    )
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from nlsim.annotation.merge import merge_annotations  # deferred: `nlsim --help` and refusals stay fast

    merge_annotations(
        args.filled,
        args.pairs,
        split=args.split,
        skip_blank=args.skip_blank,
        corpus=args.corpus,
        skip_scored=args.skip_scored,
        overrule=args.overrule,
        text_field=args.text_field,
    )
    return 0


def run_verdicts(args: argparse.Namespace) -> int:
    from nlsim.annotation.merge import check_verdicts  # deferred: `nlsim --help` and refusals stay fast

    check = check_verdicts(args.pairs, write=args.write)
    if args.json:
        held = {"pairs": str(check.pairs_file), "store": str(check.path), "in_step": check.in_step}
        listed = {"verdicts": [v.as_dict() for v in check.shown().records]}
        print(json.dumps(held | listed, ensure_ascii=False))
    return 0
