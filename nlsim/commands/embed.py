"""``nlsim embed``: embed a corpus into a ``.npy`` matrix (float32, L2-normalised, corpus order).

Beside ``FILE.npy`` it writes ``FILE.json``: model id and fingerprint, conversion, text fields, count, the
item ids in row order, and the size and SHA-256 of ``FILE.npy`` (``npy``). Each file is written atomically,
the record last, so a run stopped between the two leaves a matrix that the record beside it does not
describe (its hash differs), never a pair that looks whole. Neither may be the corpus itself, and an
existing ``FILE.json`` is only replaced when it is such a record (refused before any work).

Example (shell)::

    nlsim embed --corpus data/thucnews.parquet --out emb.npy --text-fields title
"""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from pathlib import Path
from typing import Any

from nlsim.commands.options import Formatter, batch_size_arg, max_length_arg, threads_arg
from nlsim.conversion import DEFAULT_MODE, MODES
from nlsim.errors import ConfigError
from nlsim.io.corpus_schema import text_fields_problem
from nlsim.io.ownership import (
    check_outputs_apart,
    check_outside_stores,
    check_replaceable,
    check_writable,
    is_json_record,
)

# the same as nlsim.encoders.DEFAULT_MODEL, not imported so that `nlsim --help` stays fast
DEFAULT_MODEL = "multilingual-e5-small"


def _fields(value: str) -> tuple[str, ...]:
    fields = tuple(f.strip() for f in value.split(",") if f.strip())
    problem = text_fields_problem(fields)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return fields


SIDECAR_KEYS = {"model_id", "fingerprint", "count", "ids"}
"""Keys of the JSON record ``nlsim embed`` writes beside its ``.npy`` (how it is told from a user's file)."""


def _is_sidecar(path: Path) -> bool:
    """True when ``path`` is the JSON record ``nlsim embed`` writes beside its ``.npy`` (so it may be
    replaced); anything else there is the user's."""
    return is_json_record(path, SIDECAR_KEYS)


def _path_asked(args: argparse.Namespace) -> tuple[str, str]:
    """The backend and precision asked: ``--quantize int8`` is the old spelling of ``--backend torch
    --precision int8``, refused beside a ``--backend`` or ``--precision`` that says otherwise."""
    if not args.quantize:
        return args.backend, args.precision
    for flag, value, means in (("--backend", args.backend, "torch"), ("--precision", args.precision, "int8")):
        if value not in ("auto", means):
            raise ConfigError(
                f"--quantize int8 means --backend torch --precision int8, not {flag} {value}: "
                "give one or the other"
            )
    return "torch", "int8"


def run(args: argparse.Namespace) -> int:
    """Load, convert, embed (cached unless ``--no-cache``), and write the matrix atomically."""
    import numpy as np  # deferred (with the rest): `nlsim --help` stays fast

    from nlsim.io.atomic import atomic_path, atomic_write_text, file_sha256
    from nlsim.io.cells import model_texts
    from nlsim.io.corpus import load_corpus
    from nlsim.progress import warn

    out = Path(args.out)
    if out.suffix != ".npy":
        raise ConfigError(f"--out must end in .npy, got {out}")
    backend, precision = _path_asked(args)
    sidecar = out.with_suffix(".json")
    check_outputs_apart({"--corpus": args.corpus}, {"--out": out, "the --out sidecar": sidecar})
    check_outside_stores({"--out": out})
    if sidecar.exists() and not _is_sidecar(sidecar):
        raise ConfigError(
            f"{sidecar} exists and is not an embedding record written by nlsim; --out {out} would overwrite "
            "it with its sidecar: choose another --out"
        )
    check_writable(out, what="--out")
    check_replaceable(out, lambda _: _is_sidecar(sidecar), what="--out", kind="saved matrix")
    t0 = time.perf_counter()
    corpus = load_corpus(args.corpus, text_fields=args.text_fields)
    for message in corpus.warnings:  # as a report run's load says them: texts damaged upstream, lookalikes
        warn(message)
    texts = model_texts(corpus.texts(), args.convert)  # as a dedup run reads them
    from nlsim.encoders import (
        load_encoder,
    )  # after the checks: a bad path or row is refused before torch loads
    from nlsim.encoders.cache import EmbeddingCache, check_finite  # deferred: `nlsim --help` stays fast
    from nlsim.encoders.encoder import long_texts_said, unreadable_said

    encoder = load_encoder(
        args.model, max_length=args.max_length, threads=args.threads, backend=backend, precision=precision
    )
    for said in (long_texts_said(encoder, texts, corpus.ids), unreadable_said(encoder, texts, corpus.ids)):
        if said:  # as a dedup run says them
            warn(said)
    t1 = time.perf_counter()

    def compute() -> np.ndarray:
        emb = encoder.encode(texts, batch_size=args.batch_size, progress=args.progress)
        return check_finite(emb, texts, encoder.name)  # before it is cached or written

    if args.cache:
        emb, hit = EmbeddingCache().get_or_compute(texts, encoder, args.convert, compute)
    else:
        encoder.plan(len(texts))
        emb, hit = compute(), False
    emb = np.ascontiguousarray(emb, dtype=np.float32)
    t2 = time.perf_counter()
    meta: dict[str, Any] = {
        "model_id": encoder.model_id,
        "fingerprint": encoder.fingerprint,
        "conversion": args.convert,
        "text_fields": list(args.text_fields),
        "max_length": encoder.max_length,
        "prefix": encoder.prefix,
        "count": int(emb.shape[0]),
        "dim": int(emb.shape[1]),
        "corpus": str(args.corpus),
        "inference": encoder.choice.as_dict() if encoder.choice is not None else {"path": "torch-fp32"},
        "ids": corpus.ids,
    }
    with atomic_path(out, suffix=".npy") as tmp:  # the record is made before the matrix is moved in place
        np.save(tmp, emb)
        meta["npy"] = {"sha256": file_sha256(tmp), "bytes": tmp.stat().st_size}
        record = json.dumps(meta, ensure_ascii=False, indent=1) + "\n"
    atomic_write_text(sidecar, record)  # last: a matrix it does not describe is from an interrupted run
    rate = len(texts) / (t2 - t1) if t2 > t1 and not hit else float("nan")
    how = "from cache" if hit else f"{rate:.1f} items/s"
    path = encoder.choice.path if encoder.choice is not None else "torch-fp32"
    print(
        f"{out}: {emb.shape[0]} x {emb.shape[1]} float32 ({encoder.model_id}, {path}, {how}; "
        f"load+convert {t1 - t0:.1f}s, embed {t2 - t1:.1f}s)"
    )
    return 0


def register(subparsers: Any) -> None:
    """Add the ``embed`` subcommand."""
    p = subparsers.add_parser(
        "embed",
        help="embed a corpus into a .npy matrix",
        description="Embed a corpus into a .npy matrix, one row per item.\n\n"
        + textwrap.fill(
            "Embed each corpus item (chosen text fields, after script conversion) with a sentence encoder; "
            "writes FILE.npy (float32, L2-normalised, corpus order) and FILE.json (model, ids).",
            100,
        ),
        formatter_class=Formatter,
    )
    p.add_argument(
        "--corpus",
        required=True,
        help="corpus file: .parquet, .csv, .tsv, .jsonl or a .json array of objects (or .csv.gz, .bz2, .xz)",
    )
    p.add_argument("--out", required=True, help="output .npy file")
    p.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"registry name, local model folder or hub name (default: {DEFAULT_MODEL})",
    )
    p.add_argument(
        "--convert",
        default=DEFAULT_MODE,
        choices=MODES,
        help=f"OpenCC script conversion before embedding (default: {DEFAULT_MODE})",
    )
    p.add_argument(
        "--text-fields",
        type=_fields,
        default=("title", "description"),
        metavar="FIELDS",
        help="comma-separated fields to embed: title, description, body (default: title,description)",
    )
    p.add_argument(
        "--batch-size",
        type=batch_size_arg,
        default=None,
        help="texts per batch, at most 4,096 (default: 64 on the CPU, 256 on a GPU)",
    )
    p.add_argument(
        "--max-length",
        type=max_length_arg,
        default=None,
        help="truncate at this many tokens (default: the model's own: a fine-tuned folder's, else 256)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "torch", "onnx"),
        default="auto",
        help="ONNX Runtime or torch (default auto: chosen on this machine by a cached speed probe)",
    )
    p.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16", "fp16", "int8"),
        default="auto",
        help="fp32 (exact), bf16, fp16 (GPU), int8 (CPU); default auto: a lossy precision only where the "
        "model's stored quality check passed it and, on a CPU, it is faster (docs/encoders.md)",
    )
    p.add_argument(
        "--quantize",
        choices=("int8",),
        default=None,
        help="the same as --backend torch --precision int8 (kept for old scripts; by default --backend and "
        "--precision decide)",
    )
    p.add_argument(
        "--threads",
        type=threads_arg,
        default=None,
        help="CPU threads of torch and ONNX Runtime (default: theirs, every core)",
    )
    p.add_argument("--no-cache", dest="cache", action="store_false", help="do not reuse cached embeddings")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.set_defaults(func=run)
