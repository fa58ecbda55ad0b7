"""``nlsim dedup``: the near-duplicate report for a corpus (batch, or daily with ``--state``).

Every option is a setting of :class:`nlsim.dedup.config.DedupConfig`, declared in the record of its concern.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import TYPE_CHECKING, Any

from nlsim.commands.options import Formatter, add_config_options, config_from_args
from nlsim.dedup.config import DedupConfig
from nlsim.io.corpus_schema import SCHEMA_HELP
from nlsim.progress import counted

if TYPE_CHECKING:
    from nlsim.dedup.run import DedupResult


def add_dedup_options(p: argparse.ArgumentParser) -> None:
    """The options of ``nlsim dedup`` (also ``python -m flows.dedup``'s): the settings of ``DedupConfig``,
    one group per concern (input, model, neighbour search, clusters, report, incremental runs)."""
    add_config_options(p, DedupConfig)


def print_result(result: DedupResult) -> None:
    """The run in a few lines: where the report is, and the run record's headline counts."""
    record = result.stats
    threshold = record.threshold
    c = record.counts  # None: not counted
    if record.daily:
        dissolved = f", dissolved {c.clusters_dissolved}" if c.clusters_dissolved else ""  # a model change
        print(f"run {result.run_id}{' (already committed: report written again)' if result.replayed else ''}")
        print(
            f"  items in {c.items_in}: new {c.new}, changed {c.changed}, skipped {c.skipped}, "
            f"too old {c.too_old}, quarantined {c.quarantined}; expired from the window "
            f"{c.expired}, kept {c.kept}"
        )
        print(
            f"  pairs {c.pairs}; clusters new {c.clusters_new}, grown {c.clusters_grown}, "
            f"merged {c.clusters_merged}{dissolved}; model {record.model}, threshold {threshold}"
        )
        print(f"report: {result.report_dir.resolve()}")
        return
    print(f"report: {result.report_dir.resolve()}")
    print(
        f"  {counted(c.items_in or 0, 'item', 'items')}, {counted(c.pairs or 0, 'pair', 'pairs')}, "
        f"{counted(c.clusters or 0, 'cluster', 'clusters')} "
        f"({counted(c.clustered_items or 0, 'item', 'items')} in clusters); threshold {threshold}"
    )
    for name in ("pairs.parquet", "clusters.parquet", "index.html", "summary.md", "overview.png"):
        print(f"  {result.report_dir / name}")


def run(args: argparse.Namespace) -> int:
    from nlsim.dedup.paths import held_paths  # deferred: `nlsim --help` and refusals stay fast

    config = config_from_args(DedupConfig, args)
    # a bad path is refused before torch and faiss are even imported; the outputs are then held, and a run
    # that fails leaves no trace of its hold
    with held_paths(config):
        from nlsim.dedup.run import run_dedup  # deferred: loads torch and faiss, `nlsim --help` stays fast

        result = run_dedup(config)
    if args.json:
        print(
            json.dumps({**result.summary, "report": str(result.report_dir)}, default=str, ensure_ascii=False)
        )
    else:
        print_result(result)
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "dedup",
        help="find near-duplicate items and write the report",
        description="Find near-duplicate items in a corpus and write the report.\n\n"
        + textwrap.fill(
            "Load, convert, embed, index, pair, [rerank,] cluster and report a corpus. With --state, an "
            "incremental (daily) run against the items kept from earlier runs.",
            100,
        )
        + "\n\n"
        + textwrap.fill(
            "The corpus (--corpus: .parquet, .csv, .tsv or .jsonl, or a .json file of one array of objects; "
            "a text one may be compressed: .csv.gz, .jsonl.bz2, .tsv.xz), one row per item: "
            + SCHEMA_HELP
            + ". A column that looks like a field the file lacks (pub_date, headline, ...) is named in a "
            "warning. Details: data/README.md and the README.",
            100,
        ),
        formatter_class=Formatter,
    )
    add_dedup_options(p)
    p.add_argument("--json", action="store_true", help="print the run record as one JSON object")
    p.set_defaults(func=run)
