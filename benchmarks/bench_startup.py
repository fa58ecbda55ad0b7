"""Where a whole ``nlsim embed`` process spends its first seconds, phase by phase.

The steps of ``nlsim embed`` (``nlsim/commands/embed.py``) are replayed in a fresh process with a timer
around each: interpreter start, the command line's imports, reading and converting the corpus, importing
torch and transformers, the model folder's check, the tokenizer, the weights, the model's fingerprint (what
the caches and calibrations are keyed by), the choice of inference path (cached probe and quality check),
building its runner (ONNX Runtime session), the first batch, the rest of the encoding, writing. Each phase
is also timed in ``--repeats`` fresh processes; the median is reported. Nothing is cached between phases
that a real run would not cache.

    python benchmarks/bench_startup.py [--model multilingual-e5-small] [--precision auto] [--repeats 3]

Writes ``benchmarks/results/startup.{json,md}`` (with the CPU's model name); a run with other settings than
the defaults (another ``--model``, fewer ``--repeats``) writes ``startup-<what differs>.{json,md}`` beside
them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from _common import CORPUS, check_files, given_path, positive, sized_stem  # noqa: E402


def child(args: argparse.Namespace) -> None:
    marks: list[tuple[str, float]] = []
    t = time.perf_counter()

    def mark(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        marks.append((name, now - t))
        t = now

    import nlsim.cli  # noqa: F401 - what `nlsim` imports before running a command

    mark("import nlsim.cli")
    import numpy as np

    from nlsim.conversion import convert
    from nlsim.io.corpus import load_corpus

    mark("import numpy, pandas, corpus reader")
    corpus = load_corpus(args.corpus, text_fields=("title",))
    mark("read the corpus")
    texts = convert(corpus.texts(), args.convert)
    mark(f"convert ({args.convert})")
    import torch

    mark("import torch")
    import transformers  # noqa: F401
    from transformers import AutoModel  # noqa: F401
    from transformers.models.bert import modeling_bert  # noqa: F401

    mark("import transformers (BERT modelling)")
    from nlsim.encoders import load_encoder

    torch.set_num_threads(args.threads)
    mark("import nlsim.encoders")
    from nlsim.encoders.registry import ALIASES, registry_folder

    key = ALIASES.get(args.model.lower())
    if key is not None:
        registry_folder(key)
        mark("check the model folder (registry: manifest)")
    enc = load_encoder(args.model, threads=args.threads, precision=args.precision)
    mark("load_encoder (folder check, tokenizer, weights)")
    _ = enc.fingerprint
    mark("fingerprint (weights, tokenizer)")
    enc.plan(len(texts))
    mark("choose the inference path and build its runner (probe, quality check, ONNX export, session)")
    enc.encode(texts[:64], progress=False)
    mark("first batch")
    emb = enc.encode(texts, progress=False)
    mark(f"encode {len(texts)} texts")
    np.save(Path(args.out), emb)
    mark("write")
    path = enc.choice.path if enc.choice is not None else "torch-fp32"
    print(json.dumps({"marks": marks, "path": path}))


def child_command(args: argparse.Namespace, out: Path) -> list[str]:
    """The timed process's command line: this run's settings as parsed (its paths absolute: the process
    runs in the repository), writing its matrix to ``out``."""
    model = Path(args.model)
    named = [
        ("--model", str(model.resolve()) if model.exists() else args.model),
        ("--corpus", str(args.corpus)),
        ("--convert", args.convert),
        ("--precision", args.precision),
        ("--threads", str(args.threads)),
        ("--out", str(out)),
    ]
    return [sys.executable, str(Path(__file__).resolve()), "--child", *(x for pair in named for x in pair)]


def timed_runs(cmd: list[str], repeats: int) -> tuple[float, list[dict]]:
    """The seconds of a bare interpreter's start and exit, and ``repeats`` runs of ``cmd`` after a warm-up
    run (dropped: it fills the caches, the exports and the probe), each its phases' marks, its path and its
    ``wall`` seconds."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - t
    runs = []
    for _ in range(repeats + 1):
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        out["wall"] = wall
        runs.append(out)
    return bare, runs[1:]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder (default: multilingual-e5-small)"
    )
    ap.add_argument(
        "--corpus",
        type=given_path,
        default=CORPUS,
        help="the corpus embedded (default: the repository's data/thucnews.parquet)",
    )
    ap.add_argument("--convert", default="none", help="OpenCC script conversion (default: none)")
    ap.add_argument("--precision", default="auto", help="as nlsim embed --precision (default: auto)")
    ap.add_argument("--threads", type=positive(), default=2, help="CPU threads (default: 2)")
    ap.add_argument(
        "--repeats", type=positive(), default=3, help="timed fresh processes, after a warm-up (default: 3)"
    )
    ap.add_argument(
        "--out",
        type=given_path,
        default=None,
        help="where each timed process writes its matrix (default: a temporary folder of the run's own, "
        "removed at its end)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    check_files(ap, "--corpus", [args.corpus])
    if args.child:
        child(args)
        return
    from _common import RESULTS, machine, machine_record, print_table

    where = machine()
    print(f"machine: {where}", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="nlsim-bench-startup-"))
    try:
        bare, runs = timed_runs(child_command(args, args.out or scratch / "embeddings.npy"), args.repeats)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    names = [n for n, _ in runs[0]["marks"]]
    rows = [{"phase": "python start and exit", "median s": bare}]
    for i, name in enumerate(names):
        rows.append({"phase": name, "median s": statistics.median(r["marks"][i][1] for r in runs)})
    rows.append({"phase": "whole process", "median s": statistics.median(r["wall"] for r in runs)})
    table = print_table(rows, ["phase", "median s"])
    cmd_line = "python benchmarks/bench_startup.py " + " ".join(sys.argv[1:] if argv is None else argv)
    payload = {
        "command": cmd_line.strip(),
        "machine": where,
        "cpu": machine_record(),
        "path": runs[0]["path"],
        "rows": rows,
        "runs": runs,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    from nlsim.io.atomic import atomic_write_text

    # a run at other settings (a quick check) writes beside the committed figures, never over them
    stem = sized_stem("startup", ap, args, besides=["out"])
    atomic_write_text(RESULTS / f"{stem}.json", json.dumps(payload, indent=2) + "\n")
    md = (
        f"# Start-up of `nlsim embed` ({args.model}, {runs[0]['path']})\n\n`{cmd_line.strip()}`\n\n{where}; "
        f"median of {args.repeats} fresh processes after one warm-up; {payload['date']}.\n\n{table}\n"
    )
    atomic_write_text(RESULTS / f"{stem}.md", md)


if __name__ == "__main__":
    main()
