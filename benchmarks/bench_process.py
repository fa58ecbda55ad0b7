"""Whole-process embedding: ``nlsim embed`` against a sentence-transformers script, start-up included.

Each variant is a fresh process timed from start to exit (imports, model load, ONNX session, conversion,
encoding, saving), on the 10,000 THUCNews titles, ``--threads`` threads for both. One untimed warm-up run
per variant first (it makes the ONNX exports, the int8 copies and the speed probe, all cached), then
``--repeats`` timed runs, interleaved; the median is reported. Afterwards each variant's vectors are
compared with sentence-transformers' torch vectors (lowest cosine), and each path's Spearman on the
annotated test pairs is measured in-process (``bench_embedding.spearman``).

Variants: ``st`` (``benchmarks/st_encode.py``, torch), ``st-onnx`` and ``st-onnx-int8`` (its ONNX backend
and dynamic int8 file, which need optimum's ONNX exporter and an older transformers than nlsim's:
``benchmarks/make_peer_env.sh``), ``nlsim-fp32`` (``nlsim embed --precision fp32``:
the exact vectors, backend chosen by the probe), ``nlsim-auto`` (``nlsim embed``'s default,
``--precision auto``: a lossy path where the stored quality check passed it). ``nlsim-auto`` needs the
model's quality check: ``--prepare`` runs ``nlsim calibrate`` on the annotated pairs first (it stores it).

    python benchmarks/bench_process.py --prepare     # quiet machine: the figures of docs/measurements.md
    python benchmarks/bench_process.py --variants st,nlsim-fp32,nlsim-auto --repeats 3

Writes ``benchmarks/results/process.{json,md}``; a run at other settings than the defaults (fewer
``--repeats``, other ``--variants``...) writes ``process-<what differs>.{json,md}`` beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _common import (  # noqa: E402
    CORPUS,
    RESULTS,
    check_files,
    given_path,
    machine,
    machine_record,
    needs_bench_extra,
    positive,
    print_table,
    sized_stem,
)

VARIANTS = ("st", "st-onnx", "st-onnx-int8", "nlsim-fp32", "nlsim-auto")
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
QUALITY_VARIANT = {  # the bench_embedding variant measuring the same path's Spearman
    "st": "st",
    "st-onnx": "st-onnx",
    "st-onnx-int8": "st-onnx-int8",
    "nlsim-fp32": "nlsim",
    "nlsim-auto": "nlsim-auto",
}


def command(variant: str, args: argparse.Namespace, out: Path) -> list[str]:
    if variant.startswith("st"):
        import bench_embedding as be

        folder, prompt = be.model_folder(args.model)
        if variant != "st":
            folder = be.st_onnx_folder(args.model)
        backend = {"st": "torch", "st-onnx": "onnx", "st-onnx-int8": "onnx-int8"}[variant]
        return [
            sys.executable,
            str(HERE / "st_encode.py"),
            "--folder",
            str(folder),
            "--prompt",
            prompt,
            "--corpus",
            str(args.corpus),
            "--out",
            str(out),
            "--backend",
            backend,
            "--int8-file",
            f"onnx/model_qint8_{be.st_quantization_config()}.onnx",
            "--threads",
            str(args.threads),
        ]
    precision = {"nlsim-fp32": "fp32", "nlsim-auto": "auto"}[variant]
    return [
        sys.executable,
        "-m",
        "nlsim",
        "embed",
        "--corpus",
        str(args.corpus),
        "--out",
        str(out),
        "--model",
        args.model,
        "--text-fields",
        "title",
        "--convert",
        "none",
        "--no-cache",
        "--no-progress",
        "--threads",
        str(args.threads),
        "--precision",
        precision,
    ]


def run_once(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return wall, proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""


def prepare(args: argparse.Namespace) -> None:
    """The quality check of the model (what --precision auto needs), made by ``nlsim calibrate``."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "nlsim",
                "calibrate",
                "--model",
                args.model,
                "--pairs",
                str(PAIRS),
                "--out",
                str(Path(tmp) / "calibration.json"),
                "--threads",
                str(args.threads),
            ],
            check=True,
            cwd=ROOT,
        )


def timed_rows(
    args: argparse.Namespace, variants: list[str], tmp: Path
) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    """Each variant's warm-up, then ``--repeats`` timed runs of them all, interleaved, their vectors in
    ``tmp``: the wall seconds of each variant's runs, and a row of figures for each."""
    walls: dict[str, list[float]] = {v: [] for v in variants}
    said: dict[str, str] = {}
    for v in variants:  # warm-up: exports, int8 copies, the probe (all cached afterwards)
        _, said[v] = run_once(command(v, args, tmp / f"{v}.npy"))
        print(f"  warm-up {v:13s} {said[v]}", flush=True)
    for rep in range(args.repeats):
        for v in variants:
            wall, said[v] = run_once(command(v, args, tmp / f"{v}.npy"))
            walls[v].append(wall)
            print(
                f"  run {rep + 1} {v:13s} {wall:7.1f} s  load {os.getloadavg()[0]:.1f}  {said[v]}", flush=True
            )
    ref = np.load(tmp / "st.npy") if "st" in variants else None
    rows = []
    for v in variants:
        med = statistics.median(walls[v])
        row: dict[str, Any] = {
            "variant": v,
            "median s": med,
            "runs s": " / ".join(f"{w:.1f}" for w in walls[v]),
        }
        if v.startswith("nlsim"):
            meta = json.loads((tmp / f"{v}.json").read_text())
            row["path"] = (meta.get("inference") or {}).get("path", "?")
        else:
            row["path"] = {"st": "torch fp32", "st-onnx": "onnx fp32", "st-onnx-int8": "onnx int8"}[v]
        if ref is not None:
            emb = np.load(tmp / f"{v}.npy")
            row["x ST"] = statistics.median(walls["st"]) / med
            row["min cos vs ST"] = f"{float((emb * ref).sum(1).min()):.5f}"
        if "st-onnx" in walls:
            row["x ST onnx"] = statistics.median(walls["st-onnx"]) / med
        rows.append(row)
    return walls, rows


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--variants",
        default="st,nlsim-fp32,nlsim-auto",
        help=f"the processes timed, comma-separated, from {', '.join(VARIANTS)} (default: "
        "st,nlsim-fp32,nlsim-auto)",
    )
    ap.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder (default: multilingual-e5-small)"
    )
    ap.add_argument(
        "--corpus",
        type=given_path,
        default=CORPUS,
        help="the corpus embedded, its titles (default: the repository's data/thucnews.parquet)",
    )
    ap.add_argument("--threads", type=positive(), default=2, help="CPU threads of every process (default: 2)")
    ap.add_argument(
        "--repeats", type=positive(), default=3, help="timed runs of each variant, interleaved (default: 3)"
    )
    ap.add_argument("--prepare", action="store_true", help="run nlsim calibrate first (the quality check)")
    ap.add_argument(
        "--no-quality",
        dest="quality",
        action="store_false",
        help="skip each path's Spearman on the annotated THUCNews test pairs",
    )
    ap.add_argument(
        "--tag",
        default="",
        help="write process-TAG.json and .md (default: none, process.json and .md; a run at other settings "
        "than the defaults then writes process-<what differs>.json and .md beside the committed figures)",
    )
    return ap


def stem_of(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The results' file name: ``process-TAG``, else ``process`` with the settings that differ from the
    defaults (a quick ``--repeats 1`` run, or one of other variants, never replaces the committed figures;
    ``--prepare`` only readies the model)."""
    return f"process-{args.tag}" if args.tag else sized_stem("process", ap, args, besides=["prepare"])


def main(argv: list[str] | None = None) -> None:
    ap = build_parser()
    args = ap.parse_args(argv)
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"argument --variants: unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    check_files(ap, "--corpus", [args.corpus])
    if "st" in variants:  # before any process is timed
        needs_bench_extra(ap, "the st variant", ("sentence_transformers",))
    where = machine()
    print(f"machine: {where}; threads {args.threads}; model {args.model}", flush=True)
    if args.prepare:
        prepare(args)
    with tempfile.TemporaryDirectory(prefix="bench-process-") as folder:  # the vectors: 15 MB a variant
        walls, rows = timed_rows(args, variants, Path(folder))
    if args.quality:
        import bench_embedding as be

        for row in rows:
            qv = QUALITY_VARIANT[row["variant"]]
            code = (
                f"import sys, json; sys.path[:0] = {[str(HERE), str(ROOT)]!r}; import bench_embedding as b; "
                f"enc, info = b.make_encode({qv!r}, {args.model!r}, {args.threads}, 64); "
                "print(json.dumps({'spearman': b.spearman(enc), 'path': info.get('backend')}))"
            )
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
            if out.returncode == 0:
                q = json.loads(out.stdout.strip().splitlines()[-1])
                row["Spearman"] = f"{q['spearman']:.2f}" if q["spearman"] is not None else "n/a"
            else:
                row["Spearman"] = "failed"
        del be
    cols = ["variant", "path", "median s", "runs s", "x ST", "x ST onnx", "min cos vs ST", "Spearman"]
    table = print_table(rows, [c for c in cols if any(c in r for r in rows)])
    cmd_line = "python benchmarks/bench_process.py " + " ".join(sys.argv[1:])
    stem = stem_of(ap, args)
    payload = {
        "command": cmd_line.strip(),
        "machine": where,
        "cpu": machine_record(),
        "threads": args.threads,
        "model": args.model,
        "repeats": args.repeats,
        "rows": rows,
        "walls": walls,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    from nlsim.io.atomic import atomic_write_text

    RESULTS.mkdir(parents=True, exist_ok=True)
    atomic_write_text(RESULTS / f"{stem}.json", json.dumps(payload, indent=2, default=str) + "\n")
    md = (
        f"# Whole-process embedding of the 10,000 THUCNews titles ({args.model})\n\n`{cmd_line.strip()}`\n\n"
        f"{where}; {args.threads} threads; median of {args.repeats} runs after one warm-up; "
        f"{payload['date']}.\nSpearman: the path's, on the annotated THUCNews test pairs (tw2sp).\n\n"
        + table
        + "\n"
    )
    atomic_write_text(RESULTS / f"{stem}.md", md)
    print(f"wrote {RESULTS / (stem + '.json')} and .md")


if __name__ == "__main__":
    main()
