"""Embedding speed: nlsim's Encoder vs sentence-transformers ``encode``, same model folder, same threads.

Sets: the 10,000 THUCNews titles (Traditional Chinese; ``data/thucnews.parquet`` column ``title``, else
``annotations/thucnews_corpus.tsv`` column ``title_zh_tw``) and BBC title + lead (``data/bbc.parquet``,
``title`` + ``description``). Each variant runs in its own child process (so its peak RSS is its own), one
after the other; with ``--repeats R`` the variants are interleaved R times and the best run is kept.
Every variant also embeds the annotated THUCNews test pairs (``tw2sp`` conversion) for its Spearman, and
its THUCNews vectors are compared with sentence-transformers' (lowest cosine).

Variants (each path of :mod:`nlsim.inference.choice` can be forced):

- ``st``: sentence-transformers ``encode`` (torch, batch 64, the model's prompt); ``st-onnx``: its
  ``backend="onnx"``; ``st-onnx-int8``: its ``export_dynamic_quantized_onnx_model`` for this CPU
  (``avx512_vnni``, ``avx512`` or ``avx2``). Both need optimum's ONNX exporter, which requires
  transformers < 4.58 (nlsim's environment has 5.x): give them an environment of their own with
  ``--peer-python PATH`` (``bash benchmarks/make_peer_env.sh`` builds one); the ONNX files are made once,
  outside the clock, in ``benchmarks/results/cache/st-onnx/``;
- ``nlsim-auto``: what ``nlsim embed``/``nlsim dedup`` use by default (``precision="auto"``: the cached
  probe, the stored quality check); its row names the path it took;
- ``nlsim`` (ONNX Runtime fp32, lossless), ``nlsim-torch`` (torch fp32, SDPA), ``nlsim-torch-eager``;
- ``nlsim-onnx-int8`` (ONNX Runtime dynamic int8, per-channel), ``nlsim-bf16`` (torch bf16),
  ``nlsim-int8`` (torch dynamic int8);
- ``nlsim-tokens`` (ONNX Runtime, token-budget batches of at most 2,048 tokens).

Usage::

    nice -n 10 python benchmarks/bench_embedding.py                      # st vs nlsim, full sets
    python benchmarks/bench_embedding.py --variants st,nlsim,nlsim-torch,nlsim-int8 --n 1000 --tag options
    python benchmarks/bench_embedding.py --sets thucnews --tag precision \
        --variants st,st-onnx,st-onnx-int8,nlsim-auto,nlsim,nlsim-torch,nlsim-onnx-int8,nlsim-bf16,nlsim-int8

Writes ``benchmarks/results/embedding[-TAG].json`` and ``.md``; without ``--tag``, a run at other settings
than the defaults (``--n`` texts, other ``--sets`` or ``--variants``, another ``--model``...) writes
``embedding-<what differs>.json`` and ``.md`` (``embedding-n200``) beside the committed figures.
"""

from __future__ import annotations

import argparse
import json
import os
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
    RESULTS,
    machine,
    machine_record,
    needs_bench_extra,
    peak_rss_mb,
    positive,
    print_table,
    run_child,
    sized_stem,
)

VARIANTS = (
    "st",
    "st-onnx",
    "st-onnx-int8",
    "nlsim-auto",
    "nlsim",
    "nlsim-torch",
    "nlsim-torch-eager",
    "nlsim-onnx-int8",
    "nlsim-bf16",
    "nlsim-int8",
    "nlsim-tokens",
)
ST_ONNX = HERE / "results" / "cache" / "st-onnx"
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"


SETS = ("thucnews", "bbc")


def load_set(name: str, n: int | None) -> list[str]:
    import pandas as pd

    if name == "thucnews":
        pq = ROOT / "data" / "thucnews.parquet"
        if pq.is_file():
            texts = pd.read_parquet(pq, columns=["title"])["title"].tolist()
        else:
            tsv = ROOT / "annotations" / "thucnews_corpus.tsv"
            texts = pd.read_csv(tsv, sep="\t")["title_zh_tw"].tolist()
    elif name == "bbc":
        df = pd.read_parquet(ROOT / "data" / "bbc.parquet", columns=["title", "description"])
        texts = [f"{t} {d}".strip() for t, d in zip(df["title"], df["description"].fillna(""), strict=True)]
    else:
        raise SystemExit(f"unknown set {name!r}")
    return texts[:n] if n else texts


def model_folder(model: str) -> tuple[Path, str]:
    """The folder nlsim loads for ``model`` (no second copy) and the model's prompt."""
    from nlsim.encoders.registry import ALIASES, MODELS, folder_settings, registry_folder

    key = ALIASES.get(model.lower())
    folder = registry_folder(key) if key else Path(model)
    prefix = MODELS[key].prefix if key else folder_settings(folder).get("prefix", "")
    return folder, prefix


def st_quantization_config() -> str:
    """sentence-transformers' dynamic int8 preset for this CPU."""
    from _common import cpu

    flags = cpu().flags
    if "avx512_vnni" in flags or "amx_int8" in flags:
        return "avx512_vnni"
    return "avx512" if "avx512f" in flags else "avx2"


def st_onnx_folder(model: str) -> Path:
    """A copy of the model folder with sentence-transformers' own ONNX export (``onnx/model.onnx``) and its
    dynamic int8 copy for this CPU, made once (the model's own folder is nlsim's, checked by manifest)."""
    import shutil

    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    folder, _ = model_folder(model)
    config = st_quantization_config()
    out = ST_ONNX / f"{Path(folder).name}"
    if (out / "onnx" / f"model_qint8_{config}.onnx").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns("manifest.json", "onnx"))
    tok_config = out / "tokenizer_config.json"
    settings = json.loads(tok_config.read_text(encoding="utf-8"))
    if settings.get("tokenizer_class") == "TokenizersBackend":  # transformers 5's name; 4.x (optimum) needs
        settings["tokenizer_class"] = "PreTrainedTokenizerFast"  # the class: the same tokenizer.json
        tok_config.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    st = SentenceTransformer(str(out), device="cpu", backend="onnx")  # exports when there is no ONNX file
    st.save_pretrained(str(out))
    export_dynamic_quantized_onnx_model(st, config, str(out))
    return out


def make_encode(variant: str, model: str, threads: int, batch_size: int) -> tuple[Any, dict[str, Any]]:
    """(encode(texts) -> unit vectors, info) for one variant."""
    from nlsim.encoders import load_encoder

    if variant.startswith("st"):
        from sentence_transformers import SentenceTransformer

        folder, prefix = model_folder(model)
        if variant == "st":
            st = SentenceTransformer(str(folder), device="cpu")
        else:
            import onnxruntime as ort

            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            name = (
                f"model_qint8_{st_quantization_config()}.onnx" if variant == "st-onnx-int8" else "model.onnx"
            )
            st = SentenceTransformer(
                str(st_onnx_folder(model)),
                device="cpu",
                backend="onnx",
                model_kwargs={"file_name": f"onnx/{name}", "session_options": so},
            )
        st.max_seq_length = 256
        prompt = prefix or None

        def run(texts: list[str]) -> np.ndarray:
            return st.encode(
                texts,
                batch_size=batch_size,
                prompt=prompt,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )

        backend = {"st": "torch", "st-onnx": "onnx", "st-onnx-int8": "onnx-int8"}[variant]
        return run, {"backend": f"sentence-transformers {backend}", "prompt": prompt}
    kwargs: dict[str, Any] = {"threads": threads}
    extra: dict[str, Any] = {}
    if variant == "nlsim-torch":
        kwargs["backend"] = "torch"
    elif variant == "nlsim-torch-eager":
        kwargs.update(backend="torch", attn_implementation="eager")
    elif variant == "nlsim-int8":
        kwargs.update(backend="torch", precision="int8")
    elif variant == "nlsim-bf16":
        kwargs.update(backend="torch", precision="bf16")
    elif variant == "nlsim-onnx-int8":
        kwargs.update(backend="onnx", precision="int8")
    elif variant == "nlsim-auto":
        kwargs["precision"] = "auto"  # what the commands use: decided below, before the clock
    elif variant == "nlsim-tokens":
        kwargs["backend"] = "onnx"
        extra = {"max_tokens": 2048}
    elif variant == "nlsim":
        # what backend="auto" uses for a job this size when onnxruntime is installed; set up before the clock
        kwargs["backend"] = "onnx"
    else:
        raise SystemExit(f"unknown variant {variant!r}")
    enc = load_encoder(model, **kwargs)
    if variant == "nlsim-auto":
        enc.plan(enc.AUTO_ONNX_MIN_TEXTS)  # the choice of a big job (probe and quality check from the cache)
        enc.encode(["warm-up"] * 8, progress=False)  # builds the chosen runner
    bs = 10**6 if extra else batch_size

    def run(texts: list[str]) -> np.ndarray:
        return enc.encode(texts, batch_size=bs, progress=False, **extra)

    path = enc.choice.path if enc.choice is not None else "torch-fp32"
    info = {"backend": path, **enc.options, **extra}
    if enc.choice is not None:
        info["choice"] = enc.choice.as_dict()
    return run, info


def spearman(encode: Any) -> float | None:
    if not PAIRS.is_file():
        return None
    import pandas as pd
    from scipy.stats import spearmanr

    from nlsim.conversion import convert

    df = pd.read_csv(PAIRS, sep="\t")
    df = df[df["split"] == "test"]
    a = encode(convert(df["text_a"].tolist(), "tw2sp"))
    b = encode(convert(df["text_b"].tolist(), "tw2sp"))
    return float(100 * spearmanr((a * b).sum(1), df["score"]).statistic)


def child(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    encode, info = make_encode(args.child, args.model, args.threads, args.batch_size)
    load_s = time.perf_counter() - t0
    out: dict[str, Any] = {"variant": args.child, "info": info, "load_s": load_s, "sets": {}}
    for name in args.sets.split(","):
        texts = load_set(name, args.n)
        encode(texts[:64])  # warm-up
        t, c = time.perf_counter(), time.process_time()
        emb = encode(texts)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        np.save(Path(args.emb_dir) / f"{args.child}-{name}.npy", emb.astype(np.float32))
        out["sets"][name] = {
            "n": len(texts),
            "wall_s": wall,
            "cpu_s": cpu,
            "items_per_s": len(texts) / wall,
            "load_avg": os.getloadavg()[0],
        }
    out["spearman_tw2sp"] = spearman(encode) if args.quality else None
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--variants",
        default="st,nlsim",
        help=f"the variants timed, comma-separated, from {', '.join(VARIANTS)} (default: st,nlsim)",
    )
    ap.add_argument(
        "--n", type=positive(), default=None, help="only the first N texts of each set (default: all of them)"
    )
    ap.add_argument(
        "--sets",
        default="thucnews,bbc",
        help=f"the text sets embedded, comma-separated, from {', '.join(SETS)} (default: thucnews,bbc)",
    )
    ap.add_argument(
        "--model", default="multilingual-e5-small", help="the encoder (default: multilingual-e5-small)"
    )
    ap.add_argument("--threads", type=positive(), default=2, help="CPU threads of every variant (default: 2)")
    ap.add_argument("--batch-size", type=positive(), default=64, help="texts per batch (default: 64)")
    ap.add_argument(
        "--repeats",
        type=positive(),
        default=1,
        help="runs of every variant, interleaved; the best is kept (default: 1)",
    )
    ap.add_argument(
        "--no-quality",
        dest="quality",
        action="store_false",
        help="skip each variant's Spearman on the annotated THUCNews test pairs",
    )
    ap.add_argument(
        "--tag",
        default="",
        help="results file suffix: embedding-TAG.json (default: none; a run at other settings than the "
        "defaults then writes embedding-<what differs>.json, e.g. embedding-n200.json, beside the committed "
        "figures)",
    )
    ap.add_argument(
        "--peer-python",
        default=None,
        help="interpreter for the st-onnx variants (an environment with optimum: make_peer_env.sh) "
        "(default: this one)",
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--emb-dir", default=None, help=argparse.SUPPRESS)
    return ap


def stem_of(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The results' file name: ``embedding-TAG``, else ``embedding`` with the settings that differ from the
    defaults (a quick ``--n 200`` run, or one of other variants or another model, never replaces the
    committed figures)."""
    return f"embedding-{args.tag}" if args.tag else sized_stem("embedding", ap, args, besides=["peer_python"])


def main(argv: list[str] | None = None) -> None:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return
    variants = checked_variants(ap, args)
    where = machine()
    print(
        f"machine: {where}; threads {args.threads}; batch {args.batch_size}; model {args.model}", flush=True
    )
    # the children's vectors, removed however the run ends (a child that fails, Ctrl-C)
    with tempfile.TemporaryDirectory(prefix="bench-emb-") as emb_dir:
        best = run_variants(args, variants, emb_dir)
        rows = result_rows(best, variants, emb_dir)
    write_results(ap, args, where, best, rows)


def checked_variants(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The variants asked, each known, with what they need (sentence-transformers, its ONNX backend):
    refused before any variant runs."""
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"argument --variants: unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    unknown = [s for s in args.sets.split(",") if s not in SETS]
    if unknown:  # else met by the first child, after its model and the sets before it, as a traceback
        ap.error(f"argument --sets: unknown set {', '.join(unknown)}; choose from {', '.join(SETS)}")
    if "st" in variants:  # run by this interpreter: refused before any variant runs
        needs_bench_extra(ap, "the st variant", ("sentence_transformers",))
    if any(v.startswith("st-onnx") for v in variants):
        r = subprocess.run(
            [
                args.peer_python or sys.executable,
                "-c",
                f"import sys; sys.path[:0] = {[str(HERE), str(ROOT)]!r}; "
                f"import bench_embedding as b; b.st_onnx_folder({args.model!r})",
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise SystemExit(
                "st-onnx variants need sentence-transformers' ONNX backend "
                "(--peer-python: benchmarks/make_peer_env.sh):\n" + r.stderr[-2000:]
            )
    return variants


def run_variants(args: argparse.Namespace, variants: list[str], emb_dir: str) -> dict[str, dict[str, Any]]:
    """Each variant in a child process, ``--repeats`` times: its best figures per set (the vectors of the
    last run in ``emb_dir``)."""
    best: dict[str, dict[str, Any]] = {}
    for rep in range(args.repeats):
        for v in variants:
            cmd = [
                str(HERE / "bench_embedding.py"),
                "--child",
                v,
                "--sets",
                args.sets,
                "--model",
                args.model,
                "--threads",
                str(args.threads),
                "--batch-size",
                str(args.batch_size),
                "--emb-dir",
                emb_dir,
            ]
            if args.n:
                cmd += ["--n", str(args.n)]
            if not args.quality or rep > 0:
                cmd += ["--no-quality"]
            r = run_child(cmd, timeout=3600, python=args.peer_python if v.startswith("st-onnx") else None)
            for s, m in r["sets"].items():
                print(
                    f"  run {rep + 1} {v:18s} {s:9s} {m['items_per_s']:8.1f} items/s  "
                    f"wall {m['wall_s']:6.1f}s cpu {m['cpu_s']:6.1f}s  load {m['load_avg']:.1f}",
                    flush=True,
                )
            if v not in best:
                best[v] = r
            else:
                for s, m in r["sets"].items():
                    if m["items_per_s"] > best[v]["sets"][s]["items_per_s"]:
                        best[v]["sets"][s] = m
                best[v]["peak_rss_mb"] = max(best[v]["peak_rss_mb"], r["peak_rss_mb"])
    return best


def result_rows(best: dict[str, dict[str, Any]], variants: list[str], emb_dir: str) -> list[dict[str, Any]]:
    """One row per variant and set; against sentence-transformers' run where there is one (speed ratio,
    lowest cosine between the two vectors of a text)."""
    rows = []
    for v in variants:
        r = best[v]
        for s, m in r["sets"].items():
            rho = r.get("spearman_tw2sp")
            row = {
                "variant": v,
                "backend": r["info"].get("backend"),
                "set": s,
                "n": m["n"],
                "items/s": m["items_per_s"],
                "wall s": m["wall_s"],
                "cpu s": m["cpu_s"],
                "peak RSS MB": r["peak_rss_mb"],
                "Spearman": f"{rho:.2f}" if rho is not None else "n/a",
            }
            if "st" in best:
                row["x ST"] = m["items_per_s"] / best["st"]["sets"][s]["items_per_s"]
                a = np.load(Path(emb_dir) / f"{v}-{s}.npy")
                b = np.load(Path(emb_dir) / f"st-{s}.npy")
                row["min cos vs ST"] = f"{float((a * b).sum(1).min()):.5f}"
            rows.append(row)
    return rows


def write_results(
    ap: argparse.ArgumentParser,
    args: argparse.Namespace,
    where: str,
    best: dict[str, dict[str, Any]],
    rows: list[dict[str, Any]],
) -> None:
    """The table printed, and written with the runs' records as ``results/STEM.json`` and ``.md``."""
    cols = [
        "variant",
        "backend",
        "set",
        "n",
        "items/s",
        "x ST",
        "wall s",
        "cpu s",
        "peak RSS MB",
        "Spearman",
        "min cos vs ST",
    ]
    table = print_table(rows, cols)
    cmd_line = "python benchmarks/bench_embedding.py " + " ".join(sys.argv[1:])
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = stem_of(ap, args)
    payload = {
        "command": cmd_line.strip(),
        "machine": where,
        "cpu": machine_record(),
        "threads": args.threads,
        "batch_size": args.batch_size,
        "model": args.model,
        "repeats": args.repeats,
        "rows": rows,
        "runs": best,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    from nlsim.io.atomic import atomic_write_text

    atomic_write_text(RESULTS / f"{stem}.json", json.dumps(payload, indent=2, default=str) + "\n")
    md = (
        f"# Embedding speed ({args.model})\n\n`{cmd_line.strip()}`\n\n{where}; {args.threads} threads, "
        f"batch {args.batch_size}, best of {args.repeats}; {payload['date']}.\n"
        "Spearman: annotated THUCNews test pairs, tw2sp conversion. min cos vs ST: lowest cosine between a "
        "variant's vector and sentence-transformers' for the same text.\n\n" + table + "\n"
    )
    atomic_write_text(RESULTS / f"{stem}.md", md)
    print(f"wrote {RESULTS / (stem + '.json')} and .md")


if __name__ == "__main__":
    main()
