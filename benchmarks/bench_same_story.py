"""Same story, cross-validated: how well a cross-encoder recipe tells the same story from a related one.

For a recipe (the cross-encoder's training settings), two measurements on the annotated pairs:

- ``cv``: 5 folds over train + validation (stratified by same story, seed 0); a cross-encoder is trained
  on four folds (its last epoch kept: the held-out fold chooses nothing) and scores the fifth. The pooled
  out-of-fold scores of all train + validation pairs (about 220 same-story pairs instead of 60) give the
  recipe's average precision, its best F1 and the threshold where the cross-validated F1 is best, with a
  bootstrap 95% interval.
- ``val``: trained on train, scored on validation, as ``nlsim finetune`` does (best epoch kept).

Scores are saved per recipe and fold under ``benchmarks/results/cache/same_story/`` (reused when there), so
that ``report`` can compare recipes and their combinations afterwards, and figures go to
``benchmarks/results/same_story.md``/``.json``/``.png``. Every recipe tried, and what it gave, is in
docs/experiments.md. The test split is never read.

    python benchmarks/bench_same_story.py run --name base [--mode cv|val|both] [--epochs 3] [--frozen 4]
        [--lr 1e-4] [--story-weight 3] [--seed 42] [--threads 2] [--precision auto] [--train-fraction 1]
        [--leave-out b4-]
    python benchmarks/bench_same_story.py report [--names base,other,base+other]   # a+b: their mean
    python benchmarks/bench_same_story.py compare --a base --b other   # paired bootstrap of the gain
    python benchmarks/bench_same_story.py curve --names base-n25,base-n50,base   # a learning curve
    python benchmarks/bench_same_story.py batches --names b1,b12,b123,b1234   # what each batch bought
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import save_figure  # noqa: E402

from nlsim.io.atomic import atomic_write_parquet, atomic_write_text  # noqa: E402

PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
CACHE = ROOT / "benchmarks" / "results" / "cache" / "same_story"
OUT = ROOT / "benchmarks" / "results" / "same_story"
FOLDS = 5
STORY = 0.875
EDITORS_F1 = 0.78  # the lower end of the editors' pairwise same-story F1 (annotations/README.md)


def cpu_name() -> str:
    from nlsim.inference.cpu import cpu_info

    return cpu_info().describe() or platform.processor()


def device_name() -> str:
    """The device a run trains on, as nlsim picks it (``NLSIM_DEVICE``, else a GPU torch sees, else the
    CPU): a GPU's name, or the device type."""
    import torch

    from nlsim.encoders.device import default_device

    device = default_device()
    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


def load() -> pd.DataFrame:
    from nlsim.io.pairs import load_pairs
    from nlsim.training.data import convert_pairs

    pairs = load_pairs(PAIRS)
    pairs = pairs[pairs["split"].isin(["train", "validation"])].reset_index(drop=True)
    return convert_pairs(pairs, "tw2sp")


def folds(pairs: pd.DataFrame) -> np.ndarray:
    from sklearn.model_selection import StratifiedKFold

    fold = np.zeros(len(pairs), dtype=np.int64)
    y = (pairs["score"].to_numpy() >= STORY).astype(int)
    for k, (_, held) in enumerate(StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(y, y)):
        fold[held] = k
    return fold


def recipe_config(args: argparse.Namespace, keep_best: bool) -> object:
    from nlsim.training.config import CrossEncoderConfig

    return CrossEncoderConfig(
        epochs=args.epochs,
        lr=args.lr,
        frozen_layers=args.frozen,
        story_weight=args.story_weight,
        rank_weight=args.rank_weight,
        temperature_lr=args.temperature_lr,
        seed=args.seed,
        threads=args.threads,
        train_precision=args.precision,
        keep_best=keep_best,
        orders_per_epoch=args.orders,
        log_every=0,
    )


def closure_pairs(train: pd.DataFrame) -> pd.DataFrame:
    """Same-story pairs implied by transitivity inside ``train`` (A~B and B~C gives A~C), scored 1.0.

    Only pairs no editor scored are added; the annotated pairs are left as they are.
    """
    import itertools

    from bench_cluster_rule import components

    text = dict(zip(train["id_a"], train["text_a"], strict=True)) | dict(
        zip(train["id_b"], train["text_b"], strict=True)
    )
    story = train[train["score"] >= STORY]
    scored = {frozenset(p) for p in zip(train["id_a"], train["id_b"], strict=True)}
    rows = [
        {
            "pair_id": f"closure-{a}-{b}",
            "id_a": a,
            "id_b": b,
            "text_a": text[a],
            "text_b": text[b],
            "score": 1.0,
        }
        for component in components(sorted(text), story)
        for a, b in itertools.combinations(sorted(component), 2)
        if frozenset((a, b)) not in scored
    ]
    return pd.DataFrame(rows, columns=["pair_id", "id_a", "id_b", "text_a", "text_b", "score"])


# a number that names something: in a model code (XR150E, 600D, S90), a year (2010), a month or a sitting
# (6月, 3届, 12期). Prices, sizes and counts are left alone: the same story often reports two of them.
NUMBER = r"(?<=[A-Za-z])\d+|\d+(?=[A-Za-z])|(?:19|20)\d\d|\d+(?=[月届期])"


def changed_number(text: str, number: str, rng: np.random.Generator) -> str:
    """``text`` with its first naming ``number`` changed to another of the same length.

    A year moves by 1 to 3, anything else gets one digit changed: "佳能600D" becomes "佳能650D" or "佳能608D".
    """
    match = next(m for m in re.finditer(NUMBER, text) if m.group() == number)
    if len(number) == 4 and number[:2] in ("19", "20"):
        other = str(int(number) + int(rng.choice([-3, -2, -1, 1, 2, 3])))
    else:
        pos = int(rng.integers(len(number)))
        choices = [d for d in "0123456789" if d != number[pos] and not (pos == 0 and d == "0")]
        other = number[:pos] + str(rng.choice(choices)) + number[pos + 1 :]
    return text[: match.start()] + other + text[match.end() :]


def synthetic_negatives(train: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Made hard negatives: a same-story pair with a naming number both share changed in one text.

    The changed number names another model, year, sitting or size of the same entity, so the pair keeps its
    topic and entity but is no longer the same event: scored 0.75 by the rubric (annotations/GUIDELINES.md).
    Pairs whose texts share no number give none. The annotated pairs are left as they are.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for row in train[train["score"] >= STORY].itertuples(index=False):
        shared = sorted(set(re.findall(NUMBER, row.text_a)) & set(re.findall(NUMBER, row.text_b)))
        if not shared:
            continue
        number = shared[int(rng.integers(len(shared)))]
        text_a, text_b = row.text_a, row.text_b
        if rng.random() < 0.5:
            text_a = changed_number(text_a, number, rng)
        else:
            text_b = changed_number(text_b, number, rng)
        rows.append(
            {
                "pair_id": f"synthetic-{row.pair_id}",
                "id_a": f"synthetic-{row.id_a}",
                "id_b": row.id_b,
                "text_a": text_a,
                "text_b": text_b,
                "score": 0.75,
            }
        )
    return pd.DataFrame(rows, columns=["pair_id", "id_a", "id_b", "text_a", "text_b", "score"])


def subsample(train: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    """A share of the training pairs, same story and the rest drawn apart so the mix stays the same.

    Each class is put in one random order (``seed``) and its first ``fraction`` taken, so a smaller
    share is always inside a larger one: the points of a learning curve differ by pairs added, not
    by a new draw.
    """
    if fraction >= 1.0:
        return train
    rng = np.random.default_rng(seed)
    story = train["score"].to_numpy() >= STORY
    keep: list[np.ndarray] = []
    for cls in (story, ~story):
        idx = np.flatnonzero(cls)
        keep.append(rng.permutation(idx)[: max(1, round(fraction * len(idx)))])
    return train.iloc[np.sort(np.concatenate(keep))]


def train_and_score(
    train: pd.DataFrame, held: pd.DataFrame, args: argparse.Namespace, keep_best: bool
) -> dict:
    from nlsim.rerank.cross_encoder import CrossEncoder
    from nlsim.training.cross_encoder import train_cross_encoder

    t0 = time.perf_counter()
    if args.leave_out:
        left = train["pair_id"].astype(str).str.startswith(tuple(args.leave_out))
        print(f"left out of training: {int(left.sum())} pairs of {', '.join(args.leave_out)}", flush=True)
        train = train[~left]
    if args.train_fraction < 1.0:
        train = subsample(train, args.train_fraction, args.seed)
        story = int((train["score"] >= STORY).sum())
        print(f"training share {args.train_fraction}: {len(train)} pairs, {story} same story", flush=True)
    if args.transitive:
        extra = closure_pairs(train)
        print(f"transitive closure: {len(extra)} same-story pairs added to {len(train)}", flush=True)
        train = pd.concat([train, extra], ignore_index=True)
    if args.synthetic:
        made = synthetic_negatives(train, args.seed)
        print(f"synthetic negatives: {len(made)} pairs scored 0.75 added to {len(train)}", flush=True)
        train = pd.concat([train, made], ignore_index=True)
    if args.both_scripts:
        original = train.dropna(subset=["orig_text_a", "orig_text_b"])
        original = original.assign(text_a=original["orig_text_a"], text_b=original["orig_text_b"])
        print(f"both scripts: {len(original)} pairs also in their original Traditional text", flush=True)
        train = pd.concat([train, original], ignore_index=True)
    # a fresh copy of the intermediate cross-encoder per fold: training changes it in place
    base = CrossEncoder.load(args.intermediate, args.threads) if args.intermediate else args.base
    run = train_cross_encoder(base, train, held, recipe_config(args, keep_best), log=print)
    ce, history = run.ce, run.history
    scores = ce.predict(held["text_a"].tolist(), held["text_b"].tolist())
    out = {"scores": scores, "history": history, "seconds": round(time.perf_counter() - t0, 1)}
    if args.both_scripts:
        # the held-out pairs read in their original script too: averaged with ``scores`` in ``report``
        out["orig_scores"] = ce.predict(held["orig_text_a"].tolist(), held["orig_text_b"].tolist())
    return out


def save_scores(held: pd.DataFrame, res: dict, path: Path) -> None:
    """The scores of the held-out pairs in ``path`` (Parquet), the training history beside it (``.json``)."""
    out = held[["pair_id", "score", "stratum", "split"]].assign(ce=res["scores"])
    if "orig_scores" in res:
        out["ce_orig"] = res["orig_scores"]
    atomic_write_parquet(out, path)
    meta = {"history": res["history"], "seconds": res["seconds"], "cpu": cpu_name(), "device": device_name()}
    atomic_write_text(path.with_suffix(".json"), json.dumps(meta, indent=2))


def run(args: argparse.Namespace) -> None:
    pairs = load()
    fold = folds(pairs)
    folder = CACHE / args.name
    folder.mkdir(parents=True, exist_ok=True)
    recipe = {k: v for k, v in vars(args).items() if not callable(v)}
    atomic_write_text(folder / "recipe.json", json.dumps(recipe, indent=2, default=str))
    if args.mode in ("cv", "both"):
        for k in args.folds or range(FOLDS):
            path = folder / f"fold{k}.parquet"
            if path.is_file():
                continue
            print(f"== {args.name}: fold {k + 1}/{FOLDS}", flush=True)
            held = pairs[fold == k]
            save_scores(held, train_and_score(pairs[fold != k], held, args, keep_best=False), path)
    if args.mode in ("val", "both") and not (folder / "val.parquet").is_file():
        print(f"== {args.name}: train -> validation", flush=True)
        train, val = pairs[pairs["split"] == "train"], pairs[pairs["split"] == "validation"]
        save_scores(val, train_and_score(train, val, args, keep_best=True), folder / "val.parquet")


def best_f1(scores: np.ndarray, pos: np.ndarray) -> tuple[float, float, float, float]:
    """(F1, threshold, precision, recall) at the best threshold (half-way to the next lower score)."""
    order = np.argsort(-scores, kind="stable")
    s, g = scores[order], pos[order]
    tp, fp = np.cumsum(g), np.cumsum(~g)
    last = np.r_[s[1:] != s[:-1], True]
    p, r = tp / (tp + fp), tp / max(1, pos.sum())
    f = np.where(last, 2 * p * r / np.maximum(p + r, 1e-12), -1)
    i = int(np.argmax(f))
    below = s[i + 1] if i + 1 < len(s) else s[i] - 1e-3
    return float(f[i]), float((s[i] + below) / 2), float(p[i]), float(r[i])


def f1_at(scores: np.ndarray, pos: np.ndarray, t: float) -> float:
    pred = scores >= t
    tp = int((pred & pos).sum())
    return 2 * tp / max(1, int(pred.sum()) + int(pos.sum()))


def bootstrap(scores: np.ndarray, pos: np.ndarray, t: float, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    vals = [f1_at(scores[i], pos[i], t) for i in (rng.integers(0, len(pos), len(pos)) for _ in range(n))]
    return float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))


def scores(name: str, part: str) -> pd.DataFrame | None:
    """One recipe's cached scores of ``part`` (``cv``: the pooled folds, ``val``), or ``None`` when not run.

    A name ``a+b`` is the ensemble of recipes ``a`` and ``b``: the mean of their cross-encoder scores.
    A member ``a@orig`` (a ``--both-scripts`` recipe) is its scores of the pairs in their original script,
    ``a@both`` the mean of both scripts' scores.
    """
    frames = []
    for member in name.split("+"):
        recipe, _, view = member.partition("@")
        folder = CACHE / recipe
        files = sorted(folder.glob("fold*.parquet")) if part == "cv" else [folder / "val.parquet"]
        if (part == "cv" and len(files) != FOLDS) or not all(f.is_file() for f in files):
            return None
        frame = pd.concat([pd.read_parquet(f) for f in files]).set_index("pair_id")
        if view == "orig":
            frame["ce"] = frame["ce_orig"]
        elif view == "both":
            frame["ce"] = (frame["ce"] + frame["ce_orig"]) / 2
        frames.append(frame)
    mean = frames[0].assign(ce=np.mean([f.loc[frames[0].index, "ce"] for f in frames], axis=0))
    return mean.reset_index()


def run_records(name: str, patterns: tuple[str, ...] = ("fold*.json",)) -> list[dict]:
    """The records saved beside the scores of recipe ``name`` (a ``+``-joined mix reads each recipe's):
    the folds' by default, ``("fold*.json", "val.json")`` for every run."""
    recipes = [m.partition("@")[0] for m in name.split("+")]
    files = [f for m in recipes for pattern in patterns for f in sorted((CACHE / m).glob(pattern))]
    return [json.loads(f.read_text()) for f in files]


def seconds_per_fold(name: str) -> float:
    return round(float(np.mean([r["seconds"] for r in run_records(name)])), 1)


def trained_on(name: str) -> str:
    """Where the runs of ``name`` were trained, as their records say: the accelerator (``device``; runs
    saved before it was recorded say so) and the host CPU."""
    machines = sorted(
        {
            f"{r.get('device', 'device not recorded')} on {r.get('cpu', 'a CPU not recorded')}"
            for r in run_records(name, ("fold*.json", "val.json"))
        }
    )
    return "; ".join(machines)


def summary(name: str) -> dict | None:
    from sklearn.metrics import average_precision_score

    out: dict = {"name": name}
    oof = scores(name, "cv")
    if oof is not None:
        pos = oof["score"].to_numpy() >= STORY
        s = oof["ce"].to_numpy()
        f1, t, p, r = best_f1(s, pos)
        lo, hi = bootstrap(s, pos, t)
        out["cv"] = {
            "pairs": len(oof),
            "same_story": int(pos.sum()),
            "ap": round(float(average_precision_score(pos, s)), 4),
            "f1": round(f1, 4),
            "f1_ci95": [round(lo, 4), round(hi, 4)],
            "threshold": round(t, 4),
            "precision": round(p, 4),
            "recall": round(r, 4),
            "seconds_per_fold": seconds_per_fold(name),
        }
    val = scores(name, "val")
    if val is not None:
        pos = val["score"].to_numpy() >= STORY
        s = val["ce"].to_numpy()
        f1, t, p, r = best_f1(s, pos)
        lo, hi = bootstrap(s, pos, t)
        out["val"] = {
            "pairs": len(val),
            "same_story": int(pos.sum()),
            "ap": round(float(average_precision_score(pos, s)), 4),
            "best_f1": round(f1, 4),
            "best_f1_ci95": [round(lo, 4), round(hi, 4)],
            "precision": round(p, 4),
            "recall": round(r, 4),
        }
        if "cv" in out:
            t = out["cv"]["threshold"]
            out["val"]["f1_at_cv_threshold"] = round(f1_at(s, pos, t), 4)
    return out | {"trained_on": trained_on(name)} if len(out) > 1 else None


def plot(rows: list[dict], path: Path) -> None:
    """Each recipe's cross-validated best F1 with its 95% interval, beside the editors' agreement."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "cv" in r]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.4))
    for y, r in enumerate(rows):
        f1, (lo, hi) = r["cv"]["f1"], r["cv"]["f1_ci95"]
        ax.errorbar(f1, y, xerr=[[f1 - lo], [hi - f1]], fmt="o", color="tab:blue", capsize=3)
    ax.axvline(EDITORS_F1, color="grey", linestyle=":", label=f"editors with each other ({EDITORS_F1})")
    ax.set_yticks(range(len(rows)), [r["name"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("cross-validated same-story F1 (best threshold, 95% bootstrap interval)")
    ax.legend(loc="upper right")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def write_results(name: str, text: str, rows: list[dict], draw: Callable[[list[dict], Path], None]) -> None:
    """Print ``text`` and write it, ``rows`` and their plot as ``benchmarks/results/NAME.md/.json/.png``; each
    row of the JSON names the machine its figures were made on (``machine``: the CPU, and a GPU in use)."""
    from _common import machine

    print(text)
    path = OUT.with_name(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    host = machine()
    atomic_write_text(path.with_suffix(".md"), text + "\n")
    atomic_write_text(path.with_suffix(".json"), json.dumps([{**r, "machine": host} for r in rows], indent=2))
    draw(rows, path.with_suffix(".png"))


def report(args: argparse.Namespace) -> None:
    names = args.names.split(",") if args.names else sorted(p.name for p in CACHE.iterdir() if p.is_dir())
    rows = [r for r in (summary(n) for n in names) if r]
    lines = [
        f"# Same story, cross-validated (this report made on CPU: {cpu_name()})",
        "",
        "| recipe | CV AP | CV best F1 [95% CI] | CV threshold | CV P / R | val AP | val best F1 [95% CI] | "
        "val F1 at the CV threshold | s per fold |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cv, val = r.get("cv", {}), r.get("val", {})
        ci = cv.get("f1_ci95", ["", ""])
        lines.append(
            f"| {r['name']} | {cv.get('ap', '')} | {cv.get('f1', '')} [{ci[0]}, {ci[1]}] | "
            f"{cv.get('threshold', '')} | {cv.get('precision', '')} / {cv.get('recall', '')} | "
            f"{val.get('ap', '')} | {val.get('best_f1', '')} {val.get('best_f1_ci95', '')} | "
            f"{val.get('f1_at_cv_threshold', '')} | "
            f"{cv.get('seconds_per_fold', '')} |"
        )
    lines += ["", "Where each recipe's runs were trained (their saved records):", ""]
    lines += [f"- {r['name']}: {r['trained_on']}" for r in rows]
    text = "\n".join(lines)
    write_results(OUT.name + (f"_{args.tag}" if args.tag else ""), text, rows, plot)


def curve(args: argparse.Namespace) -> None:
    """A learning curve: the cross-validated figures of recipes run with ``--train-fraction``, by the
    number of training pairs (and same-story pairs among them), to see what more labels would give."""
    pairs = load()
    fold = folds(pairs)
    story = pairs["score"].to_numpy() >= STORY
    rows = []
    for name in args.names.split(","):
        recipe = json.loads((CACHE / name / "recipe.json").read_text(encoding="utf-8"))
        fraction = float(recipe.get("train_fraction", 1.0))
        out = summary(name)
        if out is None or "cv" not in out:
            raise SystemExit(f"{name}: all {FOLDS} folds are needed (run --mode cv first)")
        sets = [subsample(pairs[fold != k], fraction, int(recipe["seed"])) for k in range(FOLDS)]
        train = [len(t) for t in sets]
        same = [int((t["score"] >= STORY).sum()) for t in sets]
        rows.append(
            {
                "name": name,
                "fraction": fraction,
                "seed": int(recipe["seed"]),
                "train_pairs": round(float(np.mean(train))),
                "same_story_pairs": round(float(np.mean(same))),
                **{k: out["cv"][k] for k in ("ap", "f1", "f1_ci95", "threshold")},
            }
        )
    rows.sort(key=lambda r: (r["fraction"], r["seed"]))
    lines = [
        f"# Same story: learning curve, cross-validated (CPU: {cpu_name()})",
        "",
        "Each point trains on a share of each fold's training pairs (same story kept at its share; a smaller",
        "share inside a larger one) and scores the whole held-out fold, so every point is judged on the same",
        f"{len(pairs)} pairs ({int(story.sum())} same story).",
        "",
        "| recipe | share | seed | training pairs a fold | same story among them | CV AP | "
        "CV best F1 [95% CI] |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lo, hi = r["f1_ci95"]
        lines.append(
            f"| {r['name']} | {r['fraction']:g} | {r['seed']} | {r['train_pairs']} | "
            f"{r['same_story_pairs']} | {r['ap']:.3f} | {r['f1']:.3f} [{lo:.3f}, {hi:.3f}] |"
        )
    text = "\n".join(lines)
    write_results("same_story_curve", text, rows, plot_curve)


def plot_curve(rows: list[dict], path: Path) -> None:
    """CV best F1 (with its interval) and AP by the number of same-story training pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for seed, marker in zip(sorted({r["seed"] for r in rows}), "os^v", strict=False):
        mine = [r for r in rows if r["seed"] == seed]
        x = [r["same_story_pairs"] for r in mine]
        f1 = np.array([r["f1"] for r in mine])
        err = np.array([[r["f1"] - r["f1_ci95"][0], r["f1_ci95"][1] - r["f1"]] for r in mine]).T
        ax.errorbar(
            x, f1, yerr=err, fmt=marker + "-", color="tab:blue", capsize=3, label=f"best F1, seed {seed}"
        )
        ax.plot(x, [r["ap"] for r in mine], marker + "--", color="tab:orange", label=f"AP, seed {seed}")
    ax.axhline(EDITORS_F1, color="grey", linestyle=":", label=f"editors with each other ({EDITORS_F1})")
    ax.set_xscale("log")
    ticks = sorted({r["same_story_pairs"] for r in rows})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("same-story pairs in each fold's training set (log scale)")
    ax.set_ylabel("cross-validated figure")
    ax.set_title("Same story: what more labels give")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def batches(args: argparse.Namespace) -> None:
    """What each batch of labels bought: recipes run with ``--mode val --leave-out`` (later batches left out
    of training), each scored on the whole validation split, and on its batch-4 pairs (drawn where the
    model decides) and the rest apart."""
    from sklearn.metrics import average_precision_score

    pairs = load()
    train = pairs[pairs["split"] == "train"]
    rows = []
    for name in args.names.split(","):
        recipe = json.loads((CACHE / name / "recipe.json").read_text(encoding="utf-8"))
        left = tuple(recipe.get("leave_out") or ())
        used = train[~train["pair_id"].astype(str).str.startswith(left)] if left else train
        val = scores(name, "val")
        if val is None:
            raise SystemExit(f"{name}: no validation scores (run --mode val first)")
        pos = val["score"].to_numpy() >= STORY
        f1, t, _, _ = best_f1(val["ce"].to_numpy(), pos)
        lo, hi = bootstrap(val["ce"].to_numpy(), pos, t)
        trained = "b1" + "".join(str(k) for k in (2, 3, 4) if f"b{k}-" not in left)
        row = {
            "name": name,
            "seed": int(recipe["seed"]),
            "batches": trained,
            "left_out": ",".join(left),
            "train_pairs": len(used),
            "same_story_pairs": int((used["score"] >= STORY).sum()),
            "val_ap": round(float(average_precision_score(pos, val["ce"])), 4),
            "val_f1": round(f1, 4),
            "val_f1_ci95": [round(lo, 4), round(hi, 4)],
        }
        b4 = val["pair_id"].astype(str).str.startswith("b4-").to_numpy()
        for part, mask in (("b4", b4), ("earlier", ~b4)):
            row[f"ap_{part}"] = round(float(average_precision_score(pos[mask], val["ce"][mask])), 4)
        rows.append(row)
    rows.sort(key=lambda r: (r["seed"], r["train_pairs"]))
    val = scores(rows[0]["name"], "val")
    b4 = val["pair_id"].astype(str).str.startswith("b4-")
    story = val["score"] >= STORY
    lines = [
        f"# Same story: what each batch of labels bought (CPU: {cpu_name()})",
        "",
        "The cross-encoder recipe trained on the training pairs of the batches named (later ones left out)",
        "and scored on the whole validation split, as `nlsim finetune` does (best epoch kept):",
        f"{len(val)} pairs, {int(story.sum())} same story; {int(b4.sum())} of them from batch 4 "
        f"({int((story & b4).sum())} same story), drawn where the model decides.",
        "",
        "| recipe | seed | trained on | training pairs | same story among them | val AP | "
        "val best F1 [95% CI] | AP on batch 4's validation pairs | AP on the earlier ones |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lo, hi = r["val_f1_ci95"]
        lines.append(
            f"| {r['name']} | {r['seed']} | {r['batches']} | {r['train_pairs']} | {r['same_story_pairs']} | "
            f"{r['val_ap']:.3f} | {r['val_f1']:.3f} [{lo:.3f}, {hi:.3f}] | {r['ap_b4']:.3f} | "
            f"{r['ap_earlier']:.3f} |"
        )
    text = "\n".join(lines)
    write_results("same_story_batches", text, rows, plot_batches)


def plot_batches(rows: list[dict], path: Path) -> None:
    """Validation best F1 (with its interval) and AP by the same-story training pairs, batch by batch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for seed, style in zip(sorted({r["seed"] for r in rows}), ("-", "--"), strict=False):
        mine = [r for r in rows if r["seed"] == seed]
        x = [r["same_story_pairs"] for r in mine]
        f1 = np.array([r["val_f1"] for r in mine])
        err = np.array([[r["val_f1"] - r["val_f1_ci95"][0], r["val_f1_ci95"][1] - r["val_f1"]] for r in mine])
        ax.errorbar(
            x, f1, yerr=err.T, fmt="o" + style, color="tab:blue", capsize=3, label=f"best F1, seed {seed}"
        )
        ax.plot(x, [r["val_ap"] for r in mine], "s" + style, color="tab:orange", label=f"AP, seed {seed}")
        ax.plot(
            x, [r["ap_b4"] for r in mine], "^" + style, color="tab:red", label=f"AP on batch 4's, seed {seed}"
        )
        ax.plot(
            x,
            [r["ap_earlier"] for r in mine],
            "v" + style,
            color="tab:green",
            label=f"AP on the earlier, seed {seed}",
        )
    ax.axhline(EDITORS_F1, color="grey", linestyle=":", label=f"editors with each other ({EDITORS_F1})")
    ticks = {r["same_story_pairs"]: r["batches"] for r in rows}
    ax.set_xticks(list(ticks), [f"{n}\n({b})" for n, b in ticks.items()])
    ax.set_xlabel("same-story training pairs (batches trained on)")
    ax.set_ylabel("validation figure")
    ax.set_title("Same story: what each batch of labels bought")
    ax.legend(loc="lower right", fontsize=7, ncol=2)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def compare(args: argparse.Namespace) -> None:
    """The gain of recipe ``b`` over ``a`` out of fold, with a paired bootstrap 95% interval.

    Both recipes' out-of-fold scores of the same pairs are resampled together; in each resample, each
    recipe's best F1 is taken at its own best threshold (both equally flattered), and AP is recomputed.
    """
    a, b = scores(args.a, "cv"), scores(args.b, "cv")
    if a is None or b is None:
        raise SystemExit(f"both recipes need all {FOLDS} folds cached: {args.a}, {args.b}")
    b = b.set_index("pair_id").loc[a["pair_id"]].reset_index()
    pos = a["score"].to_numpy() >= STORY
    sa, sb = a["ce"].to_numpy(), b["ce"].to_numpy()
    print(f"{len(pos)} pairs out of fold, {int(pos.sum())} same story (CPU: {cpu_name()})")
    print(f"correlation of the two recipes' scores: {np.corrcoef(sa, sb)[0, 1]:.3f}")
    for label, (va, vb, lo, hi) in paired_gain(sa, sb, pos, args.resamples).items():
        print(f"{label}: {args.a} {va:.3f}, {args.b} {vb:.3f}, gain {vb - va:+.3f} [{lo:+.3f}, {hi:+.3f}]")


def paired_gain(
    sa: np.ndarray, sb: np.ndarray, pos: np.ndarray, resamples: int = 1000
) -> dict[str, tuple[float, float, float, float]]:
    """Best F1 and AP of scores ``sa`` and ``sb`` of the same pairs, and the 95% interval of the gain of
    ``sb`` over ``sa``: both resampled together, each at its own best threshold in every resample (both
    equally flattered). ``{"best F1": (a, b, low, high), "AP": ...}``."""
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(0)
    d_f1, d_ap = [], []
    for _ in range(resamples):
        i = rng.integers(0, len(pos), len(pos))
        d_f1.append(best_f1(sb[i], pos[i])[0] - best_f1(sa[i], pos[i])[0])
        d_ap.append(average_precision_score(pos[i], sb[i]) - average_precision_score(pos[i], sa[i]))
    f1a, f1b = best_f1(sa, pos)[0], best_f1(sb, pos)[0]
    apa, apb = average_precision_score(pos, sa), average_precision_score(pos, sb)
    out = {}
    for label, va, vb, d in (("best F1", f1a, f1b, d_f1), ("AP", apa, apb, d_ap)):
        lo, hi = np.percentile(d, [2.5, 97.5])
        out[label] = (float(va), float(vb), float(lo), float(hi))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser(
        "run",
        help="train and score one recipe: cross-validated (cv), on validation (val), or both",
        description="Train a cross-encoder recipe and score it: on 5 folds of train + validation (cv), on "
        "validation (val), or both; its scores are cached under --name.",
    )
    r.add_argument("--name", required=True, help="the recipe's name: its cache folder and its row")
    r.add_argument(
        "--mode",
        choices=("cv", "val", "both"),
        default="both",
        help="cross-validated, on validation, or both (default: both)",
    )
    r.add_argument(
        "--base", default="multilingual-e5-small", help="the base model (default: multilingual-e5-small)"
    )
    r.add_argument("--epochs", type=int, default=3, help="training epochs (default: 3)")
    r.add_argument("--frozen", type=int, default=4, help="lower layers kept frozen (default: 4)")
    r.add_argument("--lr", type=float, default=1e-4, help="learning rate (default: 0.0001)")
    r.add_argument(
        "--story-weight",
        type=float,
        default=3.0,
        help="loss weight of the same-story training pairs (default: 3)",
    )
    r.add_argument(
        "--rank-weight",
        type=float,
        default=0.0,
        help="weight of the same-story ranking term (0, the default: off)",
    )
    r.add_argument(
        "--temperature-lr",
        type=float,
        default=0.0,
        help="learning rate of a learned logit scale, folded into the head at the end (0, the default: off)",
    )
    r.add_argument("--seed", type=int, default=42, help="random seed (default: 42)")
    r.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    r.add_argument(
        "--precision", default="auto", help="training arithmetic: auto, fp32 or bf16 (default: auto)"
    )
    r.add_argument(
        "--intermediate",
        default=None,
        help=(
            "a saved cross-encoder to start every fold from (explore_intermediate_sts.py, in git history: "
            "docs/experiments.md) (default: none, --base)"
        ),
    )
    r.add_argument(
        "--folds",
        type=lambda text: [int(k) for k in text.split(",")],
        default=None,
        help="comma-separated folds to run (0-based), to share one recipe between processes; all by default",
    )
    r.add_argument(
        "--train-fraction",
        type=float,
        default=1.0,
        help="train on this share of each training set (nested, same-story share kept): a learning curve "
        "(default: 1)",
    )
    r.add_argument(
        "--leave-out",
        type=lambda text: [p for p in text.split(",") if p],
        default=[],
        help="comma-separated pair_id prefixes (a batch: b4-) left out of training, never of the held-out "
        "pairs: what a batch of labels bought (default: none)",
    )
    r.add_argument(
        "--orders", type=int, default=2, help="orders per epoch: 2 both, 1 one at random (default: 2)"
    )
    r.add_argument(
        "--both-scripts", action="store_true", help="train on the original text of each pair as well"
    )
    r.add_argument(
        "--transitive", action="store_true", help="add the same-story pairs implied by transitivity"
    )
    r.add_argument(
        "--synthetic",
        action="store_true",
        help="add made hard negatives: same-story pairs with a shared model number, year or month changed",
    )
    r.set_defaults(func=run)
    rep = sub.add_parser(
        "report",
        help="the table and plot of the recipes run (no training)",
        description="Compare the recipes run, and their means (a+b), in one table and plot: "
        "same_story.md/.json/.png.",
    )
    rep.add_argument(
        "--names",
        default="",
        help="the recipes, comma-separated; a+b: their mean (default: every recipe run)",
    )
    rep.add_argument(
        "--tag", default="", help="write same_story_TAG.md/.json/.png instead (default: none, same_story.*)"
    )
    rep.set_defaults(func=report)
    cur = sub.add_parser(
        "curve",
        help="a learning curve from recipes run with run --train-fraction",
        description="A learning curve: the cross-validated figures of recipes run with run --train-fraction, "
        "by the number of training pairs.",
    )
    cur.add_argument(
        "--names", required=True, help="recipes run with run --train-fraction (1 for the full set)"
    )
    cur.set_defaults(func=curve)
    bat = sub.add_parser(
        "batches",
        help="what each batch of labels bought, from recipes run with run --leave-out",
        description="What each batch of labels bought: recipes run with run --mode val --leave-out, scored "
        "on the whole validation split and on its batches.",
    )
    bat.add_argument("--names", required=True, help="recipes run with run --mode val and --leave-out")
    bat.set_defaults(func=batches)
    cmp = sub.add_parser(
        "compare",
        help="the gain of one recipe over another, with a paired bootstrap interval",
        description="The gain of recipe --b over --a out of fold (AP, best F1), with a paired bootstrap 95% "
        "interval.",
    )
    cmp.add_argument("--a", required=True, help="the recipe compared against (e.g. the default)")
    cmp.add_argument("--b", required=True, help="the recipe whose gain over --a is measured")
    cmp.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    cmp.set_defaults(func=compare)
    args = ap.parse_args(argv)
    if args.cmd in ("report", "curve", "batches"):
        check_recipes(ap, args.names)
    args.func(args)


def check_recipes(ap: argparse.ArgumentParser, names: str) -> None:
    """Each recipe of ``--names`` (``a+b``: an ensemble, ``a@orig``: one of its views) was run, checked before
    any work: a typo otherwise ended in a traceback, or, for ``report``, in an empty table written over the
    committed ``same_story.md``."""
    if not names:
        if not CACHE.is_dir() or not any(p.is_dir() for p in CACHE.iterdir()):
            ap.error(f"no recipe has been run yet (nothing in {CACHE}): run `bench_same_story.py run` first")
        return
    recipes = {m.partition("@")[0] for name in names.split(",") for m in name.split("+")}
    missing = sorted(r for r in recipes if not (CACHE / r).is_dir())
    if missing:
        ap.error(f"argument --names: no recipe run as {', '.join(missing)} (in {CACHE})")


if __name__ == "__main__":
    main()
