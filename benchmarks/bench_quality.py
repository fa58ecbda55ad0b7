"""Quality benchmark: baselines, hyper-parameter choice on validation, the final model on test, STS-B.

Stages (each resumable: a finished step's JSON under benchmarks/results/quality/ is reused):

    python benchmarks/bench_quality.py select [--jobs 2]   # candidate settings, validation only
    python benchmarks/bench_quality.py final               # best candidate -> full train, test once
    python benchmarks/bench_quality.py baselines           # zero-shot e5 / TF-IDF / USE on test
    python benchmarks/bench_quality.py stsb [--jobs 2]     # STS-B: candidates on train/dev, the best on test
    python benchmarks/bench_quality.py report              # print every table (no training)

Candidates are chosen by the best validation Spearman of their best epoch; the test split is scored only
by ``final`` (the chosen candidate) and by the zero-shot/baseline rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _common import machine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results" / "quality"
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
# trained candidates go under the benchmarks' git-ignored cache, never into the model store `models/`
TRAINED = ROOT / "benchmarks" / "results" / "cache" / "models"
MODELS = TRAINED / "select"  # train_candidate saves each candidate's best checkpoint here

# Round 1: the learning rate, the loss, the conversion (2 epochs, frozen word embeddings).
# Round 2: higher learning rates, a third epoch, a smaller batch, unfrozen word embeddings.
# Round 3: STS-B first (starting from the STS-B candidate's model), and silver pairs from the corpus
# (nlsim.training.silver: teachers trained on the gold training pairs label ~5,800 corpus pairs).
# Each entry overrides COMMON.
CANDIDATES: dict[str, dict] = {
    "mse-lr1e-4-tw2sp": {"loss": "mse", "lr": 1e-4, "conversion": "tw2sp"},
    "cosent-lr5e-5-tw2sp": {"loss": "cosent", "lr": 5e-5, "conversion": "tw2sp"},
    "mse-lr5e-5-tw2sp": {"loss": "mse", "lr": 5e-5, "conversion": "tw2sp"},
    "mse-lr1e-4-none": {"loss": "mse", "lr": 1e-4, "conversion": "none"},
    "cosent-lr1e-4-tw2sp": {"loss": "cosent", "lr": 1e-4, "conversion": "tw2sp"},
    "cosent-lr2e-4-tw2sp": {"loss": "cosent", "lr": 2e-4, "conversion": "tw2sp"},
    "mse-lr2e-4-tw2sp": {"loss": "mse", "lr": 2e-4, "conversion": "tw2sp"},
    "cosent-lr1e-4-none": {"loss": "cosent", "lr": 1e-4, "conversion": "none"},
    "cosent-lr1e-4-tw2sp-3ep": {"loss": "cosent", "lr": 1e-4, "conversion": "tw2sp", "epochs": 3},
    "cosent-lr1e-4-tw2sp-bs8": {"loss": "cosent", "lr": 1e-4, "conversion": "tw2sp", "batch_size": 8},
    "stsb-cosent-lr1e-4-tw2sp": {
        "loss": "cosent",
        "lr": 1e-4,
        "conversion": "tw2sp",
        "model": "benchmarks/results/cache/models/stsb/cosent-lr5e-5-2ep",
    },
    "stsb-cosent-lr5e-5-tw2sp": {
        "loss": "cosent",
        "lr": 5e-5,
        "conversion": "tw2sp",
        "model": "benchmarks/results/cache/models/stsb/cosent-lr5e-5-2ep",
    },
    "silver-cosent-lr1e-4-tw2sp": {
        "loss": "cosent",
        "lr": 1e-4,
        "conversion": "tw2sp",
        "silver_corpus": "annotations/thucnews_corpus.tsv",
    },
    "silver2400-cosent-lr1e-4-tw2sp": {
        "loss": "cosent",
        "lr": 1e-4,
        "conversion": "tw2sp",
        "silver_corpus": "annotations/thucnews_corpus.tsv",
        "silver_anchors": 2400,
    },
    # Round 4: the chosen recipe with a reranker (nlsim.rerank.reranker), scored by its rerank score on
    # validation
    "rerank-cosent-lr1e-4-tw2sp": {"loss": "cosent", "lr": 1e-4, "conversion": "tw2sp", "reranker": True},
    "cosent-lr1e-4-tw2sp-unfrozen": {
        "loss": "cosent",
        "lr": 1e-4,
        "conversion": "tw2sp",
        "freeze_embeddings": False,
    },
}
COMMON = {
    "epochs": 2,
    "batch_size": 16,
    "max_length": 64,
    "freeze_embeddings": True,
    "seed": 42,
    "warmup_ratio": 0.1,
}


def _write(path: Path, obj: dict) -> None:
    from nlsim.io.atomic import atomic_write_text

    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str))


REPOSITORY_PATHS = ("model", "silver_corpus")
"""The settings that may name a file or folder of the repository, relative to it as the records keep them."""


def in_repository(settings: dict) -> dict:
    """``settings`` with each of :data:`REPOSITORY_PATHS` that names a path of the repository relative to
    it made absolute, so that the training finds it whatever folder the benchmark is run from (a model's
    registry name, ``multilingual-e5-small``, names none and is kept)."""
    return {
        key: str(ROOT / value)
        if key in REPOSITORY_PATHS and isinstance(value, str) and (ROOT / value).exists()
        else value
        for key, value in settings.items()
    }


def train_candidate(name: str, folder: str, settings: dict, table: object = None, **fixed: object) -> dict:
    """Train one candidate (validation only, best checkpoint saved under ``TRAINED``), or reuse its JSON.

    ``table`` is a loaded pair table (else ``fixed["pairs"]`` names the file); ``fixed`` and ``settings``
    go to :class:`FinetuneConfig`.
    """
    from nlsim.training.config import FinetuneConfig, epochs_on_any_cpu
    from nlsim.training.finetune import finetune

    path = RESULTS / folder / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())
    cfg = FinetuneConfig.of(
        out=str(TRAINED / folder / name),
        progress_file=str(RESULTS / folder / f"{name}.progress"),
        eval_test=False,
        eval_before=False,
        # a reranker only where a candidate names one; its epochs on every CPU, fp32 recipe or not
        **epochs_on_any_cpu({"reranker": False, **fixed, **in_repository(settings)}),
    )
    res = finetune(cfg, pairs=table, log=lambda m: print(f"[{folder} {name}] {m}", flush=True))
    row = {
        "name": name,
        "settings": settings,
        "best": res.best,
        "history": res.history,
        "seconds_per_epoch": res.seconds_per_epoch,
        "seconds": res.seconds,
        "machine": machine(),  # the CPU (and GPU): a training's precision and speed depend on it
    }
    if res.reranker is not None:
        row["reranked"] = res.metrics["reranked/validation"]
        row["reranker"] = res.reranker
    _write(path, row)
    return row


def run_candidate(name: str, threads: int) -> dict:
    # each candidate's best checkpoint is saved, so the chosen one needs no retraining
    return train_candidate(name, "select", {**COMMON, **CANDIDATES[name]}, pairs=str(PAIRS), threads=threads)


def stage_select(args: argparse.Namespace) -> None:
    names = args.only or list(CANDIDATES)
    (RESULTS / "select").mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(run_candidate, names, [args.threads] * len(names)))
    print_select(rows)


def select_rows() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((RESULTS / "select").glob("*.json"))]


def validation_score(row: dict) -> float:
    """What a candidate is chosen by: its rerank score's validation Spearman when it has a reranker, else
    its best epoch's."""
    return row["reranked"]["spearman"] if row.get("reranked") else row["best"]["spearman"]


def print_select(rows: list[dict]) -> dict | None:
    epochs = max([r["settings"]["epochs"] for r in rows] or [COMMON["epochs"]])
    print("\n## Candidates (validation Spearman x100 per epoch; best epoch kept)\n")
    print(
        "| candidate | "
        + " | ".join(f"epoch {i}" for i in range(1, epochs + 1))
        + " | best | reranked | s/epoch |"
    )
    print("|---|" + "---|" * (epochs + 3))
    for r in sorted(rows, key=lambda r: -validation_score(r)):
        per = {h["epoch"]: h["spearman"] for h in r["history"]}
        cells = [f"{per.get(i, '')}" for i in range(1, epochs + 1)]
        spe = sum(r["seconds_per_epoch"]) / len(r["seconds_per_epoch"])
        print(
            f"| {r['name']} | "
            + " | ".join(cells)
            + f" | {r['best']['spearman']} (epoch {r['best']['epoch']}) "
            f"| {r['reranked']['spearman'] if r.get('reranked') else ''} | {spe:.0f} |"
        )
    return max(rows, key=validation_score) if rows else None


def stage_final(args: argparse.Namespace) -> None:
    """The chosen candidate's saved best checkpoint, scored on test once (before/after, 3 conversions)."""
    import shutil

    rows = select_rows()
    best = print_select(rows)
    if best is None:
        raise SystemExit("run the select stage first")
    out = TRAINED / "e5-thucnews"
    path = RESULTS / "final.json"
    if path.is_file() and json.loads(path.read_text())["chosen"] != best["name"]:
        # a later round chose another candidate: keep the earlier test score beside the new one
        old = json.loads(path.read_text())["chosen"]
        path.rename(RESULTS / f"final-{old}.json")
        shutil.rmtree(out, ignore_errors=True)
    if not out.is_dir():  # whole or not at all: a copy stopped half-way would be taken for the model
        from nlsim.io.atomic import atomic_dir

        with atomic_dir(out) as tmp:
            shutil.copytree(MODELS / best["name"], tmp, dirs_exist_ok=True)
    if not path.is_file():
        after = evaluate_conversions(str(out), args.threads)
        before = evaluate_conversions("multilingual-e5-small", args.threads)
        row = {
            "chosen": best["name"],
            "settings": best["settings"],
            "best": best["best"],
            "model": str(out.relative_to(ROOT)),
            "before": before,
            "after": after,
            "machine": machine(),
        }
        if best.get("reranked"):
            row["reranked_validation"] = best["reranked"]
            row["reranked"] = evaluate_reranked(str(out), best["settings"]["conversion"], args.threads)
        _write(path, row)
    final = json.loads(path.read_text())
    chosen_by = (
        f"rerank score validation Spearman {final['reranked_validation']['spearman']}; bi-encoder "
        if final.get("reranked_validation")
        else ""
    )
    print(
        f"\n## Chosen on validation: {final['chosen']} ({chosen_by}best epoch {final['best']['epoch']}, "
        f"validation Spearman {final['best']['spearman']}) -> {final['model']}\n"
    )
    print(
        "| model (test, 300 pairs) | conversion | Spearman | Pearson | MSE | MAE |\n|---|---|---|---|---|---|"
    )
    rows = [
        ("before", "e5 zero-shot"),
        ("after", "e5 fine-tuned (bi-encoder)"),
        ("reranked", "e5 fine-tuned + reranker"),
    ]
    for when, label in rows:
        for mode, m in final.get(when, {}).items():
            print(f"| {label} | {mode} | {m['spearman']} | {m['pearson']} | {m['mse']} | {m['mae']} |")


def evaluate_conversions(model: str, threads: int | None) -> dict:
    from nlsim.encoders import load_encoder
    from nlsim.evaluation.metrics import evaluate
    from nlsim.io.pairs import load_pairs

    enc = load_encoder(model, threads=threads)
    enc.max_length = 64
    test = load_pairs(PAIRS, split="test")
    return {mode: evaluate(enc, test, mode).as_dict() for mode in ("none", "tw2sp", "t2s", "s2twp")}


def evaluate_reranked(model: str, conversion: str, threads: int | None) -> dict:
    """The rerank score of a model folder with a reranker, on test, with its own conversion."""
    from nlsim.encoders import load_encoder
    from nlsim.evaluation.metrics import evaluate
    from nlsim.io.pairs import load_pairs
    from nlsim.rerank.reranker import load_reranker

    enc = load_encoder(model, threads=threads)
    enc.max_length = 64
    reranker = load_reranker(model, threads=threads)
    test = load_pairs(PAIRS, split="test")
    return {conversion: evaluate(reranker.scorer(enc), test, conversion).as_dict()}


def stage_baselines(args: argparse.Namespace) -> None:
    from nlsim.encoders import load_encoder
    from nlsim.evaluation.baselines import get_baseline
    from nlsim.evaluation.metrics import evaluate
    from nlsim.io.pairs import load_pairs

    path = RESULTS / "baselines.json"
    done = json.loads(path.read_text()) if path.is_file() else {}
    test = load_pairs(PAIRS, split="test")
    enc = None
    for name in ("zero-shot e5", "tfidf-char2", "use-m3"):
        for mode in ("none", "tw2sp", "t2s"):
            key = f"{name}|{mode}"
            if key in done:
                continue
            if name == "zero-shot e5":
                if enc is None:
                    enc = load_encoder("multilingual-e5-small", threads=args.threads)
                    enc.max_length = 64
                scorer = enc
            else:
                scorer = get_baseline(name)
            done[key] = {**evaluate(scorer, test, mode).as_dict(), "machine": machine()}
            _write(path, done)
            print(key, done[key], flush=True)
    print("\n## Unsupervised baselines on our test split (300 pairs)\n")
    print("| model | conversion | Spearman | Pearson | MSE | MAE |\n|---|---|---|---|---|---|")
    for key, m in done.items():
        name, mode = key.split("|")
        print(f"| {name} | {mode} | {m['spearman']} | {m['pearson']} | {m['mse']} | {m['mae']} |")


STSB_MODELS = TRAINED / "stsb"
# STS-B candidates (English; batch 16, max length 128, frozen word embeddings, seed 42), chosen on dev
STSB_CANDIDATES: dict[str, dict] = {
    "mse-lr1e-4-1ep": {"loss": "mse", "lr": 1e-4, "epochs": 1},
    "cosent-lr5e-5-2ep": {"loss": "cosent", "lr": 5e-5, "epochs": 2},
}


def run_stsb_candidate(name: str, threads: int) -> dict:
    from nlsim.evaluation.sts import load_stsb

    return train_candidate(
        name,
        "stsb",
        STSB_CANDIDATES[name],
        table=load_stsb(),
        pairs=None,
        conversion="none",
        batch_size=16,
        max_length=128,
        threads=threads,
        calibrate_level=None,
        seed=42,
    )


def stage_stsb(args: argparse.Namespace) -> None:
    """STS-B: every candidate trained on train and validated on dev; the best on dev scored on test once."""
    from nlsim.encoders import load_encoder
    from nlsim.evaluation.metrics import evaluate
    from nlsim.evaluation.sts import load_stsb

    names = args.only or list(STSB_CANDIDATES)
    (RESULTS / "stsb").mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(run_stsb_candidate, names, [args.threads] * len(names)))
    rows = [json.loads(p.read_text()) for p in sorted((RESULTS / "stsb").glob("*.json"))]  # every run so far
    print("\n## STS-B candidates (dev Spearman x100 per epoch; best epoch kept)\n")
    for r in sorted(rows, key=lambda r: -r["best"]["spearman"]):
        per = ", ".join(f"epoch {h['epoch']}: {h['spearman']}" for h in r["history"])
        print(f"- {r['name']}: {per}; best {r['best']['spearman']} (epoch {r['best']['epoch']})")
    best = max(rows, key=lambda r: r["best"]["spearman"])
    path = RESULTS / "stsb.json"
    if not path.is_file() or json.loads(path.read_text()).get("chosen") != best["name"]:
        metrics = {}
        for when, model in (("before", "multilingual-e5-small"), ("after", str(STSB_MODELS / best["name"]))):
            enc = load_encoder(model, threads=args.threads)
            enc.max_length = 128
            for split in ("validation", "test"):
                metrics[f"{when}/{split}"] = evaluate(enc, load_stsb(split), "none").as_dict()
        _write(
            path,
            {
                "chosen": best["name"],
                "settings": best["settings"],
                "best": best["best"],
                "metrics": metrics,
                "machine": machine(),
            },
        )
    res = json.loads(path.read_text())
    print(f"\n## STS Benchmark (English), multilingual-e5-small; chosen on dev: {res['chosen']}\n")
    print("| | split | Spearman | Pearson | MSE | MAE | n |\n|---|---|---|---|---|---|---|")
    for k, m in res["metrics"].items():
        when, split = k.split("/")
        print(
            f"| {when} fine-tuning | {split} | {m['spearman']} | {m['pearson']} | {m['mse']} | {m['mae']} "
            f"| {m['n']} |"
        )
    print(
        f"settings: {json.dumps(res['settings'])}; "
        f"best epoch {res['best']['epoch']} step {res['best']['step']}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "stage",
        choices=["select", "final", "baselines", "stsb", "report"],
        help="the stage to run (see above); report prints every table without training",
    )
    p.add_argument(
        "--jobs", type=int, default=1, help="candidates trained at a time, select and stsb (default: 1)"
    )
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads of each job (default: 1)")
    p.add_argument(
        "--only",
        nargs="*",
        help="select and stsb: only these candidates, by name (default: every candidate)",
    )
    args = p.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.stage == "report":
        for stage in (stage_baselines, stage_final, stage_stsb):
            try:
                stage(args)
            except (SystemExit, FileNotFoundError) as exc:
                print(f"({stage.__name__}: {exc})")
        return
    stages = {"select": stage_select, "final": stage_final, "baselines": stage_baselines, "stsb": stage_stsb}
    stages[args.stage](args)


if __name__ == "__main__":
    main()
