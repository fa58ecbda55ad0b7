"""Learning curve: how much each extra annotated pair buys.

Fixed validation and test sets; training subsets of growing size (default 350, 700, 1,050, 1,400; nested
for one seed) x several seeds (default 3). Each (size, seed) run fine-tunes the base model with the same
settings, keeps its best validation checkpoint and scores the test pairs; its result is written to
``runs/size{N}_seed{S}.json`` as soon as it ends, so an interrupted curve resumes where it stopped (a
finished run is never retrained; a curve whose pairs changed since, merged or overruled, or were re-sorted,
or whose model folder holds another model, is refused before any work, as one made with other settings
is). The unsupervised baselines (zero-shot base model, character-bigram TF-IDF, Universal Sentence Encoder)
are scored once on the same test pairs. The summary gives mean +/- sd per size as a Markdown/CSV table and
a PNG plot with the baselines as horizontal lines.

Example:
    >>> cfg = LearningCurveConfig(pairs="annotations/thucnews_tw_pairs.tsv", out="lc", sizes=(350, 700))
    >>> run_path(cfg, 350, 1).name
    'size350_seed1.json'
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from nlsim.encoders import load_encoder
from nlsim.encoders.device import default_device
from nlsim.encoders.registry import ALIASES
from nlsim.errors import ConfigError, InputError, StateError
from nlsim.evaluation.baselines import get_baseline
from nlsim.evaluation.metrics import check_scorable, defined, evaluate
from nlsim.io.atomic import atomic_path, atomic_write_text
from nlsim.io.lock import GUARD_NAME, RunLock
from nlsim.io.ownership import check_claimable, check_outside_stores, claimed
from nlsim.io.pairs import annotations_digest, split_counts
from nlsim.io.records import json_kind
from nlsim.orchestration import Call, StageInfo, declare, direct
from nlsim.progress import say
from nlsim.training.config import LearningCurveConfig
from nlsim.training.data import (
    as_trained,
    check_trainable,
    once_as_read,
    overruled_note,
    read_for_training,
    split_pairs,
)
from nlsim.training.finetune import finetune
from nlsim.training.mixed_precision import resolve as resolve_precision


def run_path(cfg: LearningCurveConfig, size: int, seed: int) -> Path:
    return Path(cfg.out) / "runs" / f"size{size}_seed{seed}.json"


def _read_json(path: Path, rerun: str = "delete it to rerun that point") -> dict[str, Any]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise StateError(f"{path}: unreadable ({exc}); {rerun}") from exc
    if not isinstance(record, dict):  # valid JSON, but no record nlsim wrote (a list, a number)
        raise StateError(f"{path}: not a record nlsim wrote (a JSON {json_kind(record)}); {rerun}")
    return record


CORRELATIONS = ("spearman", "pearson")
"""The figures a scorer leaves undefined when it gives every pair one score (``null`` in a point's JSON)."""


def _not_a_figure(record: Any, name: str) -> bool:
    """Whether ``record`` (read from JSON) lacks figure ``name``, or holds what is no figure there: a
    correlation may be undefined (``null``, as nlsim writes it, or ``NaN``, as an earlier nlsim wrote it:
    :func:`_undefined_as_nan`); an error (``mse``, ``mae``) never is, and no figure is infinite.

    >>> _not_a_figure({"spearman": float("nan")}, "spearman"), _not_a_figure({"mse": float("nan")}, "mse")
    (False, True)
    """
    if not isinstance(record, dict) or name not in record:
        return True
    value = record[name]
    if value is None:
        return name not in CORRELATIONS
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    if math.isnan(value):
        return name not in CORRELATIONS
    return math.isinf(value)


def _undefined_as_nan(record: dict[str, Any], names: tuple[str, ...]) -> None:
    """``record``'s undefined figures (``null`` in its JSON) as NaN, as the curve's table computes with."""
    for name in names:
        if record.get(name, 0) is None:
            record[name] = float("nan")


def _json_text(record: dict[str, Any], parts: tuple[str, ...]) -> str:
    """``record`` as strict JSON, the undefined figures (NaN) of its ``parts`` as ``null``: a JSON reader
    (``jq``, a browser) refuses the bare ``NaN`` that Python writes.

    >>> _json_text({"test": {"spearman": float("nan"), "mse": 0.25}}, ("test",)).split()
    ['{', '"test":', '{', '"spearman":', 'null,', '"mse":', '0.25', '}', '}']
    """
    safe = {k: defined(v) if k in parts and isinstance(v, dict) else v for k, v in record.items()}
    return json.dumps(safe, indent=2, allow_nan=False)


def spearman_text(value: Any, digits: int = 2) -> str:
    """A Spearman as the curve's lines and its plot's legend say it: ``undefined`` for NaN or none.

    >>> spearman_text(float("nan")), spearman_text(81.234), spearman_text(81.234, 1)
    ('undefined', '81.23', '81.2')
    """
    return "undefined" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def read_baselines(path: Path) -> dict[str, dict[str, Any]]:
    """The baselines' scores stored in ``baselines.json`` (none where there is no such file), refused by
    name (:class:`StateError`) where an entry is not one nlsim wrote: not a record, or its name or a figure
    of the table missing or not a number (edited by hand; it ended the run in a traceback)."""
    if not path.is_file():
        return {}
    rerun = "delete it to score the baselines again"
    stored = _read_json(path, rerun)
    for key, entry in stored.items():
        if not isinstance(entry, dict):
            raise StateError(f"{path}: its entry {key!r} is {entry!r}, not a record nlsim wrote; {rerun}")
        if not isinstance(entry.get("name"), str):
            raise StateError(f"{path}: its entry {key!r} has no baseline 'name'; {rerun}")
        for name in POINT_FIGURES["test"]:
            if _not_a_figure(entry, name):
                shown = f"is {entry[name]!r}" if name in entry else "is missing"
                raise StateError(
                    f"{path}: its entry {key!r}: figure {name!r} {shown}, not a number (edited by hand?); "
                    f"{rerun}"
                )
        _undefined_as_nan(entry, POINT_FIGURES["test"])
    return stored


POINT_FIGURES = {"test": ("spearman", "pearson", "mse", "mae"), "validation": ("spearman",)}
"""The figures of a finished point that its curve's table and plot read, by part of its record."""


def read_point(path: Path) -> dict[str, Any]:
    """A finished point's record, refused by name (:class:`StateError`) where it is not one nlsim wrote for
    the size and seed its file name says (a point copied or renamed by hand would be counted as another
    point of the curve, and the point it replaced left out) or lacks a figure the table reads (edited by
    hand: a missing or non-numeric figure would end the summary in a traceback). An undefined figure that
    nlsim wrote (``NaN``) is a number and is taken.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "size8_seed1.json"
    >>> _ = path.write_text('{"size": 16, "seed": 1}', encoding="utf-8")
    >>> read_point(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nlsim.errors.StateError: ...size8_seed1.json: its 'size' is 16, not the 8 its file name says ...
    """
    done = _read_json(path)
    rerun = "delete it to rerun that point"
    named = re.fullmatch(r"size(\d+)_seed(\d+)\.json", path.name)
    for field, value in zip(("size", "seed"), map(int, named.groups()), strict=True) if named else ():
        if done.get(field) != value or isinstance(done.get(field), bool):
            raise StateError(
                f"{path}: its {field!r} is {done.get(field)!r}, not the {value} its file name says (a point "
                f"copied, renamed or edited by hand would count as another point of the curve); {rerun}"
            )
    for part, figures in POINT_FIGURES.items():
        record = done.get(part)
        for name in figures:
            value = record.get(name) if isinstance(record, dict) else None
            if _not_a_figure(record, name):
                shown = f"is {value!r}" if isinstance(record, dict) and name in record else "is missing"
                raise StateError(
                    f"{path}: its {part} figure {name!r} {shown}, not a number (not a point as nlsim wrote "
                    f"it: edited by hand?); {rerun}"
                )
        _undefined_as_nan(record, figures)
    return done


def load_curve_pairs(pairs_file: str | Path, log: Callable[[str], None] = say) -> pd.DataFrame:
    """The annotated pairs as training reads them, as ``nlsim finetune`` reads them: each training pair an
    editor overruled with the editor's newer score (:func:`~nlsim.clusters.verdicts.training_pairs`), said
    when there is one."""
    read = read_for_training(pairs_file)
    if read.overruled:
        log(overruled_note(len(read.overruled)))
    return read.pairs


def draw_digest(pairs: pd.DataFrame) -> str:
    """SHA-256 of the training pairs' ids in the order the pair file holds them: each seed's permutation
    takes its subsets by position (:func:`~nlsim.training.data.select_train_subset`), so the same pairs in
    another order (the file re-sorted) are other subsets, which :func:`~nlsim.io.pairs.annotations_digest`
    (blind to row order) does not tell.

    >>> one = pd.DataFrame({"pair_id": ["p1", "p2", "p3"], "split": ["train", "test", "train"]})
    >>> draw_digest(one) == draw_digest(one.iloc[::-1]), draw_digest(one) == draw_digest(one.iloc[[1, 0, 2]])
    (False, True)
    """
    ids = pairs.loc[pairs["split"] == "train", "pair_id"].astype(str)
    return hashlib.sha256("\x1e".join(ids).encode()).hexdigest()


def run_one(
    cfg: LearningCurveConfig,
    size: int,
    seed: int,
    pairs: pd.DataFrame,
    log: Callable[[str], None] = say,
    model: str | None = None,
) -> dict[str, Any]:
    """Train one (size, seed) point, or return the stored result when it has been done already; ``model``:
    the base model's fingerprint (:func:`check_base_model`), which the point records."""
    path = run_path(cfg, size, seed)
    data, order = annotations_digest(pairs), draw_digest(pairs)
    if path.is_file():
        done = read_point(path)
        check_point(path, done, cfg, data, order)
        spearman = spearman_text(done["test"]["spearman"])
        log(f"size {size} seed {seed}: done already (test Spearman {spearman}), skipped")
        return done
    res = finetune(cfg.finetune_config(size, seed), pairs=pairs, log=log)
    row = {
        "size": size,
        "seed": seed,
        "settings": cfg.settings_key(),
        "parameters": cfg.settings(),
        "data": data,
        "train_order": order,
        "train_precision": precision_here(cfg),
        **({"model_fingerprint": model} if model else {}),
        "validation": res.best,
        "test": res.metrics["after/test"],
        "seconds": res.seconds,
        "seconds_per_epoch": res.seconds_per_epoch,
        "best_epoch": res.best.get("epoch"),
        "best_step": res.best.get("step"),
    }
    atomic_write_text(path, _json_text(row, tuple(POINT_FIGURES)))
    return row


def recorded_model(done: dict[str, Any], cfg: LearningCurveConfig) -> str:
    """The ``--model`` a finished point was trained from, as it was given there (its ``parameters``); as
    given now for a point written before points kept them."""
    parameters = done.get("parameters")
    model = parameters.get("model") if isinstance(parameters, dict) else None
    return model if isinstance(model, str) else cfg.model


def model_named_alike(recorded: str, given: str) -> bool:
    """Whether two ``--model`` names name one model without loading it: the same name, one model folder
    however named (``models/x``, ``./models/x``, its absolute path), or one registry model (``e5``, its hub
    id), as :func:`~nlsim.encoders.load_encoder` reads them.

    >>> model_named_alike("e5", "intfloat/multilingual-e5-small"), model_named_alike("e5", "no-such-model")
    (True, False)
    """

    def what(name: str) -> str:
        path = Path(name).expanduser()
        if path.is_dir():
            return f"folder {path.resolve()}"
        key = ALIASES.get(name.lower())
        return f"registry {key}" if key is not None else f"name {name}"

    return recorded == given or what(recorded) == what(given)


def check_point(path: Path, done: dict[str, Any], cfg: LearningCurveConfig, data: str, order: str) -> None:
    """Refuse a finished point made with other settings, trained on other pairs than the pair file
    holds now (``data``: their :func:`~nlsim.io.pairs.annotations_digest`; pairs merged or overruled since
    would make one curve of two data sets), or drawn from its training pairs in another order (``order``:
    :func:`draw_digest`; the file re-sorted since, every size still to train would draw other pairs). A point
    written before points recorded their pairs (or their order) is taken, and so is one whose settings were
    hashed with the pair file's name (as then given) among them. Its settings are compared with the model as
    the point names it (:func:`recorded_model`): the model is compared by what it is, by
    :func:`check_points_model`."""
    model = recorded_model(done, cfg)
    keys = (cfg.settings_key(model=model), cfg.settings_key(with_pairs=True, model=model))
    if done.get("settings") not in keys:
        changes = cfg.settings_changes(done.get("parameters"))
        which = f" ({'; '.join(changes)})" if changes else ""
        raise StateError(
            f"{path}: made with other settings{which}; use another --out folder or delete {path.parent}"
        )
    if done.get("data", data) != data:
        raise StateError(
            f"{path}: trained on other pairs than {cfg.pairs} holds now (pairs merged or overruled since); "
            f"use another --out folder, or delete {path.parent} to train the curve again"
        )
    if done.get("train_order", order) != order:
        raise StateError(
            f"{path}: drawn from the training pairs of {cfg.pairs} in another order than the file holds them "
            "now (its rows re-sorted since): each size takes its pairs by position, so the sizes still to "
            f"train would draw other pairs; put the rows back in their first order, use another --out "
            f"folder, or delete {path.parent} to train the curve again"
        )


def check_finished_points(cfg: LearningCurveConfig, pairs: pd.DataFrame) -> None:
    """:func:`check_point` for every finished point in ``--out``, before any work: those of the sizes and
    seeds asked, and the others too (a folder is one curve: new sizes or seeds trained with other settings,
    or on other pairs, beside its points would make two curves of one folder, its baselines scored for one
    of them); and ``baselines.json`` (:func:`read_baselines`)."""
    data, order = annotations_digest(pairs), draw_digest(pairs)
    asked = [run_path(cfg, size, seed) for seed in cfg.seeds for size in cfg.sizes]
    check_names_free(cfg, asked)
    others = sorted((Path(cfg.out) / "runs").glob("size*_seed*.json"))
    for path in dict.fromkeys([*asked, *others]):
        if path.is_file():
            check_point(path, read_point(path), cfg, data, order)
    read_baselines(Path(cfg.out) / "baselines.json")  # an entry edited by hand: refused before any work too


CURVE_FILES = ("baselines.json", "learning_curve.md", "learning_curve.csv", "learning_curve.png")
"""The files a curve writes in ``--out`` beside ``runs/``."""


def check_names_free(cfg: LearningCurveConfig, points: list[Path]) -> None:
    """Refuse, before any work, a name in ``--out`` that the curve writes a file under (``points``, its
    table, plot and baselines) held by a folder, or ``runs/`` held by a file: the write failed only after a
    point trained or a baseline scored, naming a temporary file. What holds the name is not nlsim's to
    delete: the user moves it away."""
    runs = Path(cfg.out) / "runs"
    if runs.exists() and not runs.is_dir():
        raise StateError(
            f"{runs}: a file where the curve keeps its points (a folder); move it away and rerun"
        )
    for path in [*points, *(Path(cfg.out) / name for name in CURVE_FILES)]:
        if path.is_dir():
            raise StateError(f"{path}: a folder where the curve writes its file; move it away and rerun")


def run_baselines(
    cfg: LearningCurveConfig, pairs: pd.DataFrame, log: Callable[[str], None] = say
) -> dict[str, dict[str, Any]]:
    """Score each baseline on the test split (and validation), stored in ``baselines.json`` (resumable): the
    test pairs every point is scored on (:func:`points_test_pairs`)."""
    path = Path(cfg.out) / "baselines.json"
    stored = read_baselines(path)
    test = points_test_pairs(pairs, cfg)
    data = annotations_digest(test)
    for name in cfg.baselines:
        key = _baseline_key(cfg, name)
        if key in stored and stored[key].get("data", data) == data:  # scored on these test pairs
            continue
        log(f"baseline {name} ({cfg.conversion}) on {len(test)} test pairs")
        scorer = load_encoder(cfg.model, threads=cfg.threads) if name == "zero-shot" else get_baseline(name)
        if name == "zero-shot":
            scorer.max_length = cfg.max_length
        stored[key] = {
            "name": name,
            "conversion": cfg.conversion,
            "data": data,
            **({"model": cfg.model, "max_length": cfg.max_length} if name == "zero-shot" else {}),
            **evaluate(scorer, test, cfg.conversion).as_dict(),
        }
        atomic_write_text(path, _json_text(stored, tuple(stored)))
    keys = {_baseline_key(cfg, name) for name in cfg.baselines}
    return {k: v for k, v in stored.items() if k in keys}


def points_test_pairs(pairs: pd.DataFrame, cfg: LearningCurveConfig) -> pd.DataFrame:
    """The test pairs of ``pairs`` (read for training: :func:`load_curve_pairs`) as each point is scored on
    them, as ``nlsim finetune`` and ``nlsim evaluate`` read them: a pair given twice as the model reads it
    (in Traditional characters and again in Simplified ones, ``--convert``) counted once
    (:func:`~nlsim.training.data.once_as_read`), so that the baselines and the points are figures of one
    test set."""
    read = once_as_read(pairs, cfg.pairs, cfg.conversion)
    return read[read["split"] == "test"].reset_index(drop=True)


def _baseline_key(cfg: LearningCurveConfig, name: str) -> str:
    """A baseline's key in ``baselines.json``: its name and conversion, and for the zero-shot encoder its
    model and ``--max-length`` too (the length it embeds at moves its figures; the other baselines read
    whole texts).

    >>> cfg = LearningCurveConfig(pairs="p.tsv", out="curve", max_length=64)
    >>> _baseline_key(cfg, "zero-shot").endswith("/max64"), _baseline_key(cfg, "tfidf-char2")
    (True, 'tfidf-char2/tw2sp')
    """
    if name != "zero-shot":
        return f"{name}/{cfg.conversion}"
    return f"{name}/{cfg.conversion}/{cfg.model}/max{cfg.max_length}"


def summarize(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Mean and sd of the test metrics per size (over seeds, taken in their order: the same figures to the
    last digit for a curve resumed with its seeds in another order); the sd of a size that one seed ran is
    empty (NaN: nothing measured its spread), not 0. A size one of whose runs has a figure undefined (NaN:
    that model gave every test pair one score) has it undefined too, not the mean of its other runs under
    the count of all of them."""
    flat = pd.DataFrame(
        [
            {
                "size": r["size"],
                "seed": r["seed"],
                **{k: r["test"][k] for k in ("spearman", "pearson", "mse", "mae")},
                "val_spearman": r["validation"]["spearman"],
            }
            for r in rows
        ]
    )
    if flat.empty:
        return flat
    flat = flat.sort_values(["size", "seed"], kind="mergesort")  # the figures whatever order the seeds ran in
    g = flat.groupby("size")
    out = pd.DataFrame({"size": sorted(flat["size"].unique())}).set_index("size")
    out["runs"] = g["seed"].count()
    for k in ("spearman", "pearson", "mse", "mae", "val_spearman"):
        every = g[k].count() == out["runs"]  # count() leaves NaN out, as mean() and std() do
        out[f"{k}_mean"] = g[k].mean().where(every)
        out[f"{k}_sd"] = g[k].std(ddof=1).where(every)
    return out.reset_index()


def _mean_sd(mean: float, sd: float, runs: int, digits: int) -> str:
    """``mean ± sd``; the mean alone for one run, whose spread nothing measured (not ``± 0``); ``undefined``
    for a figure a run of the size left undefined (NaN), as ``nlsim evaluate`` says it.

    >>> _mean_sd(float("nan"), float("nan"), 3, 2), _mean_sd(80.0, float("nan"), 1, 2)
    ('undefined', '80.00')
    """
    if pd.isna(mean):
        return "undefined"
    return f"{mean:.{digits}f}" if runs < 2 else f"{mean:.{digits}f} ± {sd:.{digits}f}"


FIGURE_DIGITS = (("spearman", 2), ("pearson", 2), ("mse", 4), ("mae", 4))
"""The test figures of the table, with the digits each is shown to."""


def summary_markdown(summary: pd.DataFrame, baselines: dict[str, dict[str, Any]]) -> str:
    """Markdown table: test metrics mean +/- sd per size (the figure alone where one seed ran), then the
    baselines."""
    lines = [
        "| training pairs | runs | test Spearman | Pearson | MSE | MAE | validation Spearman |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in summary.itertuples(index=False):
        cells = [
            _mean_sd(getattr(r, f"{k}_mean"), getattr(r, f"{k}_sd"), r.runs, digits)
            for k, digits in (*FIGURE_DIGITS, ("val_spearman", 2))
        ]
        lines.append(f"| {r.size} | {r.runs} | " + " | ".join(cells) + " |")
    for b in baselines.values():  # a baseline giving every test pair one score: its correlations undefined
        cells = [_mean_sd(b[k], float("nan"), 1, digits) for k, digits in FIGURE_DIGITS]
        lines.append(f"| baseline: {b['name']} | 1 | " + " | ".join(cells) + " | |")
    return "\n".join(lines)


def plot(
    summary: pd.DataFrame, baselines: dict[str, dict[str, Any]], path: str | Path, title: str = ""
) -> Path:
    """PNG: test Spearman mean +/- sd against training size; baselines as horizontal lines."""
    import matplotlib  # deferred: ~1 s to import, only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: heavy or optional, loaded only when needed
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    if not summary.empty:
        runs = sorted(set(summary["runs"]))
        seeds = f"{runs[0]} seeds" if len(runs) == 1 else f"{runs[0]}-{runs[-1]} seeds"
        ax.errorbar(
            summary["size"],
            summary["spearman_mean"],
            yerr=summary["spearman_sd"].fillna(0.0),  # a size of one run: its point, no bar
            marker="o",
            capsize=4,
            label="fine-tuned (one seed)" if runs == [1] else f"fine-tuned (mean ± sd over {seeds})",
        )
    styles = ["--", ":", "-."]
    for i, b in enumerate(baselines.values()):
        ax.axhline(
            b["spearman"],
            linestyle=styles[i % len(styles)],
            color=f"C{i + 1}",
            label=f"{b['name']} ({spearman_text(b['spearman'], 1)})",
        )
    ax.set_xlabel("training pairs")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole pairs: no 4.5 on a small curve's axis
    ax.set_ylabel("test Spearman x100")
    ax.set_title(title or "Learning curve")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp)
    plt.close(fig)
    return path


@dataclass
class LearningCurveResult:
    rows: list[dict[str, Any]]
    summary: pd.DataFrame
    baselines: dict[str, dict[str, Any]]
    table_md: str
    table_path: Path
    plot_path: Path
    trained: int


declare(
    StageInfo("load-pairs", "read, split, convert and check the annotated pairs", io=True),
    StageInfo("baselines", "score the unsupervised baselines on the test pairs"),
    StageInfo("train-point", "fine-tune one (size, seed) point and score it on test", expensive=True),
    StageInfo("summarize", "the table and the plot", io=True),
)


def check_curve_splits(pairs: pd.DataFrame, cfg: LearningCurveConfig) -> None:
    """Refuse a pair file a curve cannot use, before the first point trains: each point trains on train,
    keeps its best epoch on validation and is scored on test (at least 3 test pairs, not all of one
    score); the largest size must fit in train, no pair may be another split's once converted to one
    script, and every point must be able to train (:func:`check_points_trainable`). The splits are counted
    as each point reads them, as ``nlsim finetune`` does (:func:`~nlsim.training.data.as_trained`): a pair
    given twice as the model reads it (in two scripts) once."""
    for split in ("train", "validation", "test"):
        if not (pairs["split"] == split).any():
            raise InputError(
                cfg.pairs,
                None,
                "split",
                f"no {split} pairs{split_counts(pairs)}: a learning curve trains on train, keeps the best "
                "epoch on validation and scores every point on test",
            )
    read = as_trained(pairs, cfg.pairs, cfg.conversion)  # as each point reads them
    n_train = int((read["split"] == "train").sum())
    if max(cfg.sizes) > n_train:
        raise ConfigError(f"--sizes {max(cfg.sizes)}: more than the {n_train} train pairs of {cfg.pairs}")
    test = read[read["split"] == "test"]  # every point's figure would be NaN: as nlsim evaluate refuses it
    check_scorable(test, cfg.pairs, "test", more=" (a learning curve scores every point on the test split)")
    check_points_trainable(read, cfg)


def check_points_trainable(pairs: pd.DataFrame, cfg: LearningCurveConfig) -> None:
    """Refuse, before any work, a point whose training cannot start (what ``nlsim finetune`` refuses: a
    validation split too small or of one score, a training subset whose pairs all have one score), so
    that no baseline is scored and no earlier point trained for a curve that stops there."""
    scores = pairs.loc[pairs["split"] == "train", "score"].nunique()
    for seed in cfg.seeds:
        for size in cfg.sizes:
            point = cfg.finetune_config(size, seed)
            train, validation, _ = split_pairs(pairs, point)
            if train["score"].nunique() < 2 <= scores:  # one score in the split: check_trainable says so
                raise ConfigError(
                    f"--sizes {size} with seed {seed}: the {size} training pairs drawn from {cfg.pairs} all "
                    f"have the score {train['score'].iloc[0]:g}; nothing to learn (give a larger size)"
                )
            check_trainable(train, validation, point, cfg.pairs)


def finished_points(cfg: LearningCurveConfig) -> dict[Path, dict[str, Any]]:
    """Every finished point in ``--out``'s ``runs/``, by its file (:func:`read_point`)."""
    paths = sorted((Path(cfg.out) / "runs").glob("size*_seed*.json"))
    return {path: read_point(path) for path in paths if path.is_file()}


def check_base_model(cfg: LearningCurveConfig) -> str | None:
    """Load ``--model`` once, before any work, where a point is left to train: a model that cannot load
    (``--model current``, a folder that is no model, an unknown name) is refused before a baseline is scored
    or ``--out`` made, not by the first point after them. A curve whose points are all done needs no model
    (its zero-shot baseline, when asked and not stored, loads it itself), unless a finished point names its
    model otherwise (:func:`model_named_alike`) and recorded its fingerprint: ``None`` then, else the
    model's fingerprint (config, weights, tokenizer, prefix), checked against the finished points
    (:func:`check_points_model`) and recorded by the new ones."""
    named_otherwise = any(
        "model_fingerprint" in done and not model_named_alike(recorded_model(done, cfg), cfg.model)
        for done in finished_points(cfg).values()
    )
    if not named_otherwise and all(
        run_path(cfg, size, seed).is_file() for seed in cfg.seeds for size in cfg.sizes
    ):
        return None
    return str(load_encoder(cfg.model, threads=cfg.threads).fingerprint)


def check_points_model(cfg: LearningCurveConfig, model: str | None) -> None:
    """Refuse, before any work, a curve whose finished points were trained from another model than
    ``--model`` holds now (``model``: its fingerprint, ``None`` where :func:`check_base_model` loaded none):
    the same name, a model folder replaced or trained again since, would make one curve of two models. A
    point is compared by its fingerprint where it recorded one and the model was loaded, else by its model's
    name (:func:`model_named_alike`): the same model named another way (``./models/x`` for ``models/x``)
    resumes the curve. A point written before points recorded their model's fingerprint is taken under a
    name alike."""
    for path, done in finished_points(cfg).items():
        recorded = recorded_model(done, cfg)
        fingerprint = done.get("model_fingerprint")
        if model is not None and fingerprint is not None:
            same = fingerprint == model
        else:
            same = model_named_alike(recorded, cfg.model)
        if not same:
            was = "" if recorded == cfg.model else f" (trained from --model {recorded})"
            raise StateError(
                f"{path}: trained from another model than --model {cfg.model} holds now{was}: its "
                f"weights, configuration or tokenizer differ; use another --out folder, or delete "
                f"{path.parent} to train the curve again"
            )


def precision_here(cfg: LearningCurveConfig) -> str:
    """The arithmetic a point trains in here: ``--train-precision`` as this machine resolves it (``auto``:
    bf16 where the CPU or GPU computes it, else fp32; :func:`nlsim.training.mixed_precision.resolve`)."""
    return resolve_precision(cfg.train_precision, default_device())[0]


def check_points_precision(cfg: LearningCurveConfig) -> None:
    """Refuse, before any work, a curve whose finished points trained in another precision than a point
    left to train would here: a curve started on a CPU with bf16 and resumed on one without (or the
    reverse) would mix both in one table. ``--train-precision`` naming theirs resumes it (bf16 runs on any
    CPU, slower without its instructions). A point written before points recorded their precision is
    taken; a curve whose points are all done trains nothing and is not refused."""
    if all(run_path(cfg, size, seed).is_file() for seed in cfg.seeds for size in cfg.sizes):
        return
    here = precision_here(cfg)
    for path, done in finished_points(cfg).items():
        theirs = done.get("train_precision", here)
        if theirs != here:
            raise StateError(
                f"{path}: trained in {theirs}, where the points left to train would train in {here} here "
                f"(--train-precision {cfg.train_precision}): one curve of two precisions; resume it with "
                f"--train-precision {theirs}, use another --out folder, or delete {path.parent} to train "
                "the curve again"
            )


def run_learning_curve(
    cfg: LearningCurveConfig, log: Callable[[str], None] = say, call: Call = direct
) -> LearningCurveResult:
    """All points (skipping finished ones), the baselines, the summary table (.md + .csv) and the plot;
    each step through ``call`` (:mod:`nlsim.orchestration`)."""
    check_outside_stores({"--out": cfg.out})  # nor into the model store, nlsim pipeline's alone
    check_claimable(cfg.out, "learning-curve", what="--out")  # never into a folder of the user's
    pairs = call("load-pairs", load_curve_pairs, cfg.pairs, log)
    check_curve_splits(pairs, cfg)  # the inputs are checked before --out is made
    check_finished_points(cfg, pairs)
    with (
        claimed(cfg.out, "learning-curve", what="--out", also=(GUARD_NAME,)),  # a failed first step: no --out
        RunLock(cfg.out, what="--out") as lock,  # one curve at a time: two would train the same points
    ):
        if lock.message:  # a curve killed while it held the folder
            log(lock.message)
        check_finished_points(cfg, pairs)  # again, held: the points a curve that held it wrote since
        check_points_precision(cfg)  # before the model loads: it needs none
        model = check_base_model(cfg)  # refused here, it leaves no --out
        check_points_model(cfg, model)
        baselines = call("baselines", run_baselines, cfg, pairs, log) if cfg.baselines else {}
        rows, trained = [], 0
        for seed in cfg.seeds:  # seed-major: a partly done curve already has every size for the first seeds
            for size in cfg.sizes:
                existed = run_path(cfg, size, seed).is_file()
                rows.append(call("train-point", run_one, cfg, size, seed, pairs, log, model))
                trained += not existed
        return call("summarize", write_summary, cfg, rows, baselines, trained)


def _precisions(rows: list[dict[str, Any]]) -> str:
    """The precisions the points trained in, in words (``bf16``; ``bf16 and not recorded`` where points
    written before points recorded it are among them).

    >>> _precisions([{"train_precision": "fp32"}, {}]), _precisions([{"train_precision": "bf16"}])
    ('fp32 and not recorded', 'bf16')
    """
    said = sorted({r.get("train_precision", "not recorded") for r in rows}, key=lambda p: p == "not recorded")
    return " and ".join(said)


def write_summary(
    cfg: LearningCurveConfig,
    rows: list[dict[str, Any]],
    baselines: dict[str, dict[str, Any]],
    trained: int = 0,
) -> LearningCurveResult:
    out = Path(cfg.out)
    summary = summarize(rows)
    md = summary_markdown(summary, baselines)
    atomic_write_text(
        out / "learning_curve.md",
        f"# Learning curve ({cfg.model}, conversion {cfg.conversion}, "
        f"{cfg.loss}, {cfg.epochs} epoch{'' if cfg.epochs == 1 else 's'}, lr {cfg.lr}, "
        f"batch size {cfg.batch_size}, max length {cfg.max_length}, {_precisions(rows)} training; "
        f"seeds {', '.join(map(str, sorted(cfg.seeds)))})\n\n{md}\n",
    )
    with atomic_path(out / "learning_curve.csv", suffix=".csv") as tmp:
        summary.to_csv(tmp, index=False)
    png = plot(
        summary,
        baselines,
        out / "learning_curve.png",
        title=f"{cfg.model}, {cfg.conversion}: test Spearman vs training pairs",
    )
    return LearningCurveResult(rows, summary, baselines, md, out / "learning_curve.md", png, trained)
