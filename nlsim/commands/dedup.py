"""``nlsim dedup``: the near-duplicate report for a corpus."""

from __future__ import annotations

import argparse
from typing import Any

from nlsim.conversion import DEFAULT_MODE, MODES


def add_dedup_options(p: argparse.ArgumentParser) -> None:
    """The options shared by ``nlsim dedup`` and ``python -m flows.dedup``."""
    p.add_argument("--corpus", required=True, help="corpus file: .parquet, .csv, .tsv or .jsonl")
    p.add_argument("--out", required=True, help="report folder (pairs.parquet, clusters.parquet, index.html)")
    p.add_argument(
        "--model",
        default="multilingual-e5-small",
        help="registry name, fine-tuned model folder, local HF folder or hub name "
        "(default: multilingual-e5-small)",
    )
    p.add_argument(
        "--convert",
        default=DEFAULT_MODE,
        choices=MODES,
        help=f"OpenCC script conversion before embedding (default: {DEFAULT_MODE})",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="cosine threshold for a pair (default: the calibration file or the model's own)",
    )
    p.add_argument("--calibration", default=None, help="calibration JSON from `nlsim calibrate`")
    p.add_argument(
        "--text-fields",
        default="title,description",
        help="comma-separated fields to embed (title, description, body; default title,description)",
    )
    p.add_argument("--k", type=int, default=10, help="neighbours searched per item (default 10)")
    p.add_argument(
        "--window-hours",
        type=float,
        default=None,
        help="only pair items published at most this many hours apart",
    )
    p.add_argument(
        "--index",
        dest="index_kind",
        default="auto",
        choices=("auto", "flat", "ivf", "hnsw"),
        help="FAISS index: exact flat, or approximate IVF/HNSW (auto: by corpus size)",
    )
    gpu = p.add_mutually_exclusive_group()
    gpu.add_argument(
        "--gpu", dest="use_gpu", action="store_const", const=True, default=None, help="require FAISS on GPU"
    )
    gpu.add_argument("--cpu", dest="use_gpu", action="store_const", const=False, help="FAISS on CPU only")
    p.add_argument("--representative", default="earliest", choices=("earliest", "central"))
    p.add_argument(
        "--quarantine",
        default=None,
        help="write bad rows to this CSV with the reason and go on (default: stop at the first)",
    )
    rr = p.add_mutually_exclusive_group()
    rr.add_argument(
        "--rerank",
        dest="rerank",
        action="store_const",
        const=True,
        default=None,
        help="rescore the pairs with the reranker stored with the model (default: when it has one); "
        "--threshold is then on the 0-1 rerank score",
    )
    rr.add_argument(
        "--no-rerank", dest="rerank", action="store_const", const=False, help="cosine threshold only"
    )
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--no-cache", dest="cache", action="store_false", help="do not reuse cached embeddings")
    p.add_argument("--no-progress", dest="progress", action="store_false")


DEDUP_PARAMS = ("corpus", "out", "model", "convert", "threshold", "calibration", "text_fields", "k",
                "window_hours", "index_kind", "use_gpu", "representative", "quarantine", "batch_size",
                "cache", "rerank")
"""The options of :func:`add_dedup_options`, named as ``DedupConfig`` fields and the flows' parameters."""


def dedup_params(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed :func:`add_dedup_options` as keyword arguments (for ``DedupConfig`` or a dedup flow)."""
    return {name: getattr(args, name) for name in DEDUP_PARAMS}


def config_from_args(args: argparse.Namespace) -> Any:
    from nlsim.dedup import DedupConfig

    return DedupConfig(**dedup_params(args), progress=args.progress)


def print_result(result: Any) -> None:
    s = result.summary
    print(f"report: {result.files['pairs.parquet'].parent.resolve()}")
    print(
        f"  {s['items']} items, {s['pairs']} pairs, {s['clusters']} clusters "
        f"({s['clustered_items']} items in clusters); threshold {s['threshold']}"
    )
    for name in ("pairs.parquet", "clusters.parquet", "index.html", "summary.md", "overview.png"):
        print(f"  {result.files[name]}")


def add_state_options(p: argparse.ArgumentParser) -> None:
    """Options of incremental (daily) runs: see ``nlsim.incremental`` and ``docs/operations.md``."""
    g = p.add_argument_group("incremental runs (a state folder kept between runs)")
    g.add_argument(
        "--state",
        default=None,
        help="state folder: embed only items not seen before, match them against the kept window, "
        "keep cluster ids stable; the report goes to OUT/runs/<run id>/ and OUT/latest",
    )
    g.add_argument(
        "--retention-days",
        type=float,
        default=30.0,
        help="with --state: drop items older than this many days from the window (default 30; "
        "0 keeps everything)",
    )
    g.add_argument(
        "--as-of",
        default=None,
        help="with --state: the run's reference time (default: the latest published_at seen)",
    )
    g.add_argument(
        "--rebuild-state",
        action="store_true",
        help="with --state: move a broken or mismatched state aside and build a fresh one",
    )


def print_incremental(result: Any) -> None:
    s = result.stats if isinstance(result.stats, dict) else result.stats.to_dict()
    c = s["counts"]
    print(f"run {result.run_id}{' (already committed: report written again)' if result.replayed else ''}")
    print(
        f"  items in {c['items_in']}: new {c['new']}, changed {c['changed']}, skipped {c['skipped']}, "
        f"too old {c['too_old']}, quarantined {c['quarantined']}; expired from the window {c['expired']}, "
        f"kept {c['kept']}"
    )
    print(
        f"  pairs {c['pairs']}; clusters new {c['clusters_new']}, grown {c['clusters_grown']}, "
        f"merged {c['clusters_merged']}; model {s['model']}, threshold {s['threshold']}"
    )
    print(f"report: {result.report_dir.resolve()}")


def run(args: argparse.Namespace) -> int:
    if getattr(args, "state", None):
        from nlsim.incremental import run_incremental

        result = run_incremental(
            config_from_args(args),
            args.state,
            retention_days=args.retention_days or None,
            as_of=args.as_of,
            rebuild_state=args.rebuild_state,
        )
        print_incremental(result)
        return 0
    from nlsim.dedup import run_dedup

    print_result(run_dedup(config_from_args(args)))
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "dedup",
        help="find near-duplicate items and write the report",
        description="Load, convert, embed, index, pair, cluster and report a corpus.",
    )
    add_dedup_options(p)
    add_state_options(p)
    p.set_defaults(func=run)
