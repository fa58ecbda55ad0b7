"""The ``nlsim`` command line: one subcommand per module in :mod:`nlsim.commands`.

Example:
    >>> main(["--version"])  # doctest: +SKIP
    nlsim 0.1.0
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from nlsim import __version__
from nlsim.errors import NlsimError

COMMANDS = ("dedup", "embed", "calibrate", "finetune", "evaluate", "learning_curve", "annotate")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nlsim",
        description="Find near-duplicate and related news items: script conversion, sentence embeddings, "
        "FAISS, clusters, Parquet report. Fine-tune and evaluate the encoder on annotated pairs.",
    )
    parser.add_argument("--version", action="version", version=f"nlsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"nlsim.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nlsim`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except NlsimError as exc:
        print(f"nlsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"nlsim {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
