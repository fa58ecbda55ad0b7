"""The editors' annotation loop: draw new candidate pairs to score, then validate and merge the filled file.

Drawing: every corpus item's nearest neighbours (cosine of the chosen encoder, or character-bigram
TF-IDF) plus random pairs make the candidate pool; pairs already annotated (either order, by id or by
text) are removed. When the model carries a reranker (a fine-tuned model folder, or ``current``: the model
store's promoted model), the pool is scored as the report scores it, on the rerank score, and the
threshold is the reranker's; otherwise on the cosine. Then half the budget goes to the pairs nearest the
threshold (where the model is least sure) and the rest is spread evenly over score strata. The CSV (the
editors' file, :mod:`nlsim.io.editor_file`) lists the near-threshold pairs first, with an empty ``score``
column for the editor (one of the rubric's five levels: 0, 0.25, 0.5, 0.75, 1; see
``annotations/GUIDELINES.md``). A pair's id is made from its item ids: the same in every draw.

Merging: the filled CSV (a drawn file, or the report page's export) is checked row by row
(``InputError`` with file/row/field): scores on the rubric, no item paired with itself, one text per item
id (in the file and against the pair file), no pair already annotated (named with the pair it repeats).
Its pairs are appended to the pair file with split ``train`` unless told otherwise. The new file is written
beside the old one (existing rows byte for byte, the file's byte-order mark, line endings and permissions
kept; a symbolic link's target rewritten), read back with the pair reader and compared, then renamed into
place, all under a lock on the pair file's folder (one merge at a time): a refused merge changes nothing.
A file without pair ids gets each pair's id made from its item ids (:func:`editor_file.pair_id`).

Drawing refuses, before any work, an ``--out`` that is not a ``.csv`` name, a folder, or an existing file
that is not an unscored editors' file (an editor's scores are never overwritten), and ``-n`` below 1.

Example:
    >>> frame = pd.DataFrame({"pair_id": ["x1"], "id_a": ["a"], "id_b": ["b"], "text_a": ["甲"],
    ...                       "text_b": ["乙"], "score": ["0.75"]})
    >>> validate_filled(frame, "filled.csv")["score"].tolist()
    [0.75]
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import fcntl
import io
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer

from nlsim.clusters.constraints import pair_key
from nlsim.clusters.verdicts import (
    ACTING_SPLIT,
    PairRow,
    StoreCheck,
    Verdict,
    check_store,
    holds_already,
    overruling,
    pair_rows,
    retire_earlier,
    write_store,
)
from nlsim.encoders import load_encoder
from nlsim.errors import ConfigError, InputError, InputErrors
from nlsim.evaluation.calibration import load_calibration
from nlsim.evaluation.metrics import convert_texts
from nlsim.faults import MERGE_FAULT_STAGES, fault_point
from nlsim.io import editor_file
from nlsim.io.atomic import atomic_path, atomic_write_bytes, fsync_dir, sweep_leftovers
from nlsim.io.cells import describe, first_control
from nlsim.io.corpus import load_items
from nlsim.io.lock import LockedError
from nlsim.io.model_store import ModelStore
from nlsim.io.ownership import check_outputs_apart, check_replaceable, check_writable
from nlsim.io.pairs import (
    SPLITS,
    item_id,
    load_pairs,
    normalise_text,
    pair_keys,
    read_pair_table,
    validate_pairs,
)
from nlsim.io.tables import table_format
from nlsim.progress import say
from nlsim.rerank.reranker import Reranker, load_reranker

LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
TFIDF = "tfidf-char2"
CURRENT = "current"
MERGE_LOCK_WAIT = 60.0
"""Seconds a merge waits for another merge into the same folder before it gives up."""


def _known_pairs(frame: pd.DataFrame) -> dict[tuple[str, ...], str]:
    """Every key of every pair of ``frame`` (ids and normalised texts, either order) -> its pair id."""
    known: dict[tuple[str, ...], str] = {}
    for pid, keys in zip(frame["pair_id"], pair_keys(frame), strict=True):
        for key in keys:
            known.setdefault(key, str(pid))
    return known


def candidate_pool(
    emb: np.ndarray, k: int = 10, n_random: int = 2000, seed: int = 0, block: int = 1024
) -> pd.DataFrame:
    """Rows ``a < b`` and their cosine: each item's ``k`` nearest neighbours + ``n_random`` random pairs."""
    n = len(emb)
    found: dict[tuple[int, int], float] = {}
    kk = min(k + 1, n)
    for start in range(0, n, block):
        sims = emb[start : start + block] @ emb.T
        for r in range(sims.shape[0]):
            sims[r, start + r] = -np.inf
        top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        for r in range(sims.shape[0]):
            i = start + r
            for j in top[r]:
                if j != i and np.isfinite(sims[r, j]):
                    found[(min(i, int(j)), max(i, int(j)))] = float(sims[r, j])
    rng = np.random.default_rng(seed)
    for _ in range(n_random):
        i, j = (int(x) for x in rng.choice(n, size=2, replace=False))
        a, b = min(i, j), max(i, j)
        found.setdefault((a, b), float(emb[a] @ emb[b]))
    rows = np.array(list(found.keys()), dtype=np.int64).reshape(-1, 2)
    return pd.DataFrame({"a": rows[:, 0], "b": rows[:, 1], "similarity": list(found.values())})


def select_candidates(
    pool: pd.DataFrame,
    n: int,
    threshold: float,
    *,
    strata: int = 5,
    near_fraction: float = 0.5,
    seed: int = 0,
) -> pd.DataFrame:
    """``n`` rows of ``pool``: the ``near_fraction`` nearest ``threshold`` first, the rest stratified.

    Strata are equal-count bins of similarity over the pool; each gets an equal share (drawn at random
    within the bin). Adds ``stratum`` (``near-threshold`` or ``sim-bin-K``).

    Example:
        >>> pool = pd.DataFrame({"a": range(10), "b": range(1, 11), "similarity": np.linspace(0, 0.9, 10)})
        >>> select_candidates(pool, 4, 0.5, strata=2, near_fraction=0.5)["stratum"].tolist()[:2]
        ['near-threshold', 'near-threshold']
    """
    if n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    pool = pool.reset_index(drop=True)
    n = min(n, len(pool))
    n_near = int(round(n * near_fraction))
    dist = (pool["similarity"] - threshold).abs()
    near = dist.sort_values(kind="stable").index[:n_near]
    chosen = pool.loc[near].assign(stratum="near-threshold")
    rest = pool.drop(index=near)
    n_rest = n - n_near
    parts = [chosen]
    if n_rest > 0 and len(rest):
        rng = np.random.default_rng(seed)
        bins = pd.qcut(rest["similarity"].rank(method="first"), q=min(strata, len(rest)), labels=False)
        per = np.full(int(bins.max()) + 1, n_rest // (int(bins.max()) + 1))
        per[: n_rest - per.sum()] += 1
        for b, count in enumerate(per):
            idx = rest.index[bins.to_numpy() == b]
            take = rng.choice(idx, size=min(int(count), len(idx)), replace=False)
            parts.append(rest.loc[np.sort(take)].assign(stratum=f"sim-bin-{b + 1}"))
    out = pd.concat(parts)
    return out.reset_index(drop=True)


@dataclass
class DrawResult:
    """Where the drawn pairs went, how many, and the threshold (and its score) they were drawn around."""

    path: Path
    n: int
    threshold: float
    threshold_source: str
    score: str = "cosine"
    """What ``similarity`` is: ``rerank`` (the reranker's score), ``cosine`` or ``tfidf``."""


@dataclass
class DrawModel:
    """The scorer of a draw: the encoder (``None`` for TF-IDF), its reranker, and its name in the file."""

    name: str
    path: str
    encoder: Any = None
    reranker: Reranker | None = None


def draw_model(scorer: str, model_store: str | Path, rerank: bool | None) -> DrawModel:
    """Load the scorer: TF-IDF, an encoder (with its reranker unless ``rerank`` is False), or ``current``,
    the model store's promoted model."""
    if scorer == TFIDF:
        if rerank:
            raise ConfigError(f"--rerank: {TFIDF} has no reranker")
        return DrawModel(TFIDF, TFIDF)
    name, path = scorer, scorer
    if scorer == CURRENT:
        store = ModelStore(model_store)
        missing = store.missing()
        if missing is not None:
            raise ConfigError(
                f"--model current: {missing}; give --model-store the folder `nlsim pipeline` filled"
            )
        current = store.current()
        if current is None:
            raise ConfigError(
                f"--model current: no model has been promoted in {model_store} yet; name a model or a "
                "fine-tuned model folder"
            )
        name, path = current.name, str(current)
    encoder = load_encoder(path)
    reranker = None if rerank is False else load_reranker(getattr(encoder, "path", None) or path)
    if rerank and reranker is None:
        raise ConfigError(f"--rerank: model {scorer!r} has no reranker (train one with nlsim finetune)")
    if reranker is not None:
        say(reranker.describe())
    return DrawModel(name, path, encoder, reranker)


def rerank_pool(pool: pd.DataFrame, texts: list[str], reranker: Reranker) -> pd.DataFrame:
    """The pool scored as a report scores its candidates: ``similarity`` becomes the rerank score, with the
    bi-encoder's ``cosine`` and the ``cross_encoder`` score beside it."""
    if pool.empty:
        return pool.assign(cosine=pool["similarity"], cross_encoder=pool["similarity"])
    a = [texts[i] for i in pool["a"]]
    b = [texts[i] for i in pool["b"]]
    say(f"scoring {len(pool)} candidate pairs with the reranker")
    cross = reranker.cross_scores(a, b, progress=True, precision="fp32")
    cosine = pool["similarity"].to_numpy(dtype=np.float64)
    similarity = reranker.pair_scores(cosine, cross, a, b).astype(np.float64)
    return pool.assign(cosine=cosine, cross_encoder=cross, similarity=similarity)


def embed_items(texts: list[str], model: DrawModel) -> np.ndarray:
    """The items' vectors: the model's encoder, or character-bigram TF-IDF without one."""
    if model.encoder is None:
        mat = TfidfVectorizer(analyzer="char", ngram_range=(2, 2), sublinear_tf=True).fit_transform(texts)
        return mat.astype(np.float32).toarray()
    return model.encoder.encode(texts, progress=True)


def unannotated_pool(
    emb: np.ndarray, items: pd.DataFrame, done: set[Any], *, k: int, seed: int, log: Callable[[str], None]
) -> pd.DataFrame:
    """The candidate pool of ``emb``'s neighbours, less what a merge would refuse: the pairs already
    annotated (``done``: keys of :func:`~nlsim.io.pairs.pair_keys`), the pairs of two texts that are the
    same once normalised (:func:`~nlsim.io.pairs.normalise_text`), and a second pair with the same key as
    one kept before it (two items of one text, each paired with a third)."""
    pool = candidate_pool(emb, k=k, seed=seed)
    ids = items["id"].to_numpy()
    raw = items["text"].to_numpy()
    norm = [normalise_text(t) for t in raw]
    keys = pair_keys(pd.DataFrame({"id_a": ids[pool["a"]], "id_b": ids[pool["b"]],
                                   "text_a": raw[pool["a"]], "text_b": raw[pool["b"]]}))  # fmt: skip
    taken: set[Any] = set(done)
    keep: list[bool] = []
    for key, a, b in zip(keys, pool["a"], pool["b"], strict=True):
        ok = not (key & taken) and norm[a] != norm[b]
        keep.append(ok)
        if ok:
            taken |= key
    log(
        f"{sum(keep)} candidate pairs not yet annotated "
        f"({sum(not x for x in keep)} already annotated, repeated or of two equal texts)"
    )
    return pool[keep].reset_index(drop=True)


def score_pool(
    pool: pd.DataFrame, texts: list[str], model: DrawModel, threshold: float | None
) -> tuple[pd.DataFrame, float, str, str]:
    """The pool on the score pairs are drawn on (the rerank score with a reranker), the threshold they are
    drawn around and where it comes from (given; the reranker's or the encoder's calibration; else the
    pool's median), and the score's name."""
    score = "tfidf" if model.encoder is None else "cosine"
    source = "given"
    if model.reranker is not None:
        pool = rerank_pool(pool, texts, model.reranker)
        score = "rerank"
        if threshold is None and model.reranker.threshold is not None:
            threshold, source = model.reranker.threshold, f"rerank threshold stored with {model.name}"
    elif threshold is None and model.encoder is not None:
        cal = load_calibration(getattr(model.encoder, "path", None) or model.path)
        if cal is not None:
            threshold, source = cal.threshold, f"calibration of {model.name}"
    if threshold is None:
        threshold, source = float(pool["similarity"].median()), "median score of the pool"
    return pool, float(threshold), source, score


def editor_rows(picked: pd.DataFrame, items: pd.DataFrame, model: str, threshold: float) -> pd.DataFrame:
    """The drawn pairs as rows of the editors' file, ``score`` left blank for the editor."""
    ids = items["id"].to_numpy()
    raw = items["text"].to_numpy()
    return pd.DataFrame(
        {
            "pair_id": [
                editor_file.pair_id(ids[a], ids[b]) for a, b in zip(picked["a"], picked["b"], strict=True)
            ],
            "id_a": ids[picked["a"]],
            "id_b": ids[picked["b"]],
            "text_a": raw[picked["a"]],
            "text_b": raw[picked["b"]],
            "similarity": picked["similarity"].round(4).to_numpy(),
            "stratum": picked["stratum"].to_numpy(),
            "score": "",
            "annotator": "",
            "notes": "",
            "model": model,
            "threshold": round(float(threshold), 6),
        },
        columns=list(editor_file.COLUMNS),
    )


def draw_candidates(
    corpus: str | Path,
    annotated: str | Path | None,
    out: str | Path,
    *,
    n: int = 100,
    scorer: str = "multilingual-e5-small",
    conversion: str = "tw2sp",
    threshold: float | None = None,
    text_field: str | None = None,
    k: int = 10,
    seed: int = 0,
    rerank: bool | None = None,
    model_store: str | Path = "models",
    log: Callable[[str], None] = say,
) -> DrawResult:
    """Write ``n`` new candidate pairs from ``corpus`` to the CSV ``out`` for an editor to score.

    ``scorer`` is an encoder name or folder, ``current`` (the promoted model of ``model_store``) or
    ``tfidf-char2``. With a reranker (unless ``rerank`` is False) the pairs are drawn on the rerank score
    around ``threshold`` (default: the reranker's calibrated threshold); otherwise on the cosine around
    ``threshold`` (default: the encoder's ``calibration.json``, else the median of the pool). ``out`` must
    not be one of the inputs (refused before any work).
    """
    if n < 1:
        raise ConfigError(f"-n must be at least 1, got {n}")
    check_outputs_apart({"--corpus": corpus, "--pairs": annotated}, {"--out": out})
    check_out(out)
    check_writable(out, what="--out")
    items = load_items(corpus, text_field)
    if len(items) < 2:
        raise InputError(corpus, None, None, f"{len(items)} item(s): drawing pairs needs at least 2")
    done = set(_known_pairs(load_pairs(annotated))) if annotated else set()
    model = draw_model(scorer, model_store, rerank)
    texts = convert_texts(items["text"].tolist(), conversion)
    try:
        emb = embed_items(texts, model)
    except ValueError as exc:
        if model.encoder is not None:
            raise
        raise InputError(
            corpus,
            None,
            text_field,
            f"{TFIDF} finds no two characters in a row in any text ({exc}); use an encoder (--model)",
        ) from None
    pool = unannotated_pool(emb, items, done, k=k, seed=seed, log=log)
    if pool.empty:
        raise InputError(
            corpus,
            None,
            None,
            "no candidate pair left to draw: every pair found is already annotated"
            + (f" in {annotated}" if annotated else "")
            + " or pairs two equal texts; nothing was written",
        )
    pool, threshold, source, score = score_pool(pool, texts, model, threshold)
    frame = editor_rows(select_candidates(pool, n, threshold, seed=seed), items, model.name, threshold)
    out = Path(out)
    cells = frame.copy()  # opened in a spreadsheet: a text it would run as a formula is kept as text
    for col in ("pair_id", "id_a", "id_b", "text_a", "text_b", "stratum", "model"):
        cells[col] = cells[col].map(lambda v: editor_file.escape(v) if isinstance(v, str) else v)
    with atomic_path(out, suffix=".csv") as tmp:
        cells.to_csv(tmp, index=False, encoding="utf-8-sig")
    log(
        f"wrote {len(frame)} pairs to {out} (drawn on the {score} score around {threshold:.4f}, from "
        f"{source}); fill in `score` with 0, 0.25, 0.5, 0.75 or 1 following annotations/GUIDELINES.md"
    )
    return DrawResult(out, len(frame), float(threshold), source, score)


def check_out(out: str | Path) -> None:
    """Refuse, before any work, a ``--out`` draw must not write: a name not ending in ``.csv``, a folder,
    a file that is not an editors' file nlsim drew, or a drawn file that already holds scores (an
    editor's work, to be merged first)."""
    path = Path(out)
    if path.suffix.lower() != ".csv":
        raise ConfigError(f"--out {out}: draw writes a CSV file; give a name ending in .csv")
    held = editor_file.scores_held(path) if path.exists() and not path.is_dir() else None
    if held:
        raise ConfigError(
            f"--out {out} already holds {held} score(s) filled in by an editor; refusing to overwrite "
            "them: merge it first (nlsim annotate merge) or choose another --out"
        )
    check_replaceable(path, lambda _: held == 0, what="--out", kind="editors' file (nlsim annotate draw)")


def _blank(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return (isinstance(value, float) and np.isnan(value)) or str(value).strip() == ""


def _one_parquet_type(old: pd.Series, new: pd.Series) -> tuple[pd.Series, pd.Series]:
    """A Parquet pair file's column and the editor's values for it (text) in one type Parquet can hold.

    A column of numbers (integer ids, an ``annotations`` count) takes the editor's values as numbers when
    each of them is one, written as that number would be (``7``, not ``007``); otherwise the column is
    written as text, existing values as they read. Empty cells stay empty; a column the editor left empty
    keeps its type.
    """

    def as_text() -> tuple[pd.Series, pd.Series]:
        return old.map(lambda v: None if _blank(v) else str(v)), new.map(lambda v: None if _blank(v) else v)

    if all(_blank(v) for v in new):
        return old, pd.Series([None] * len(new), dtype=object, index=new.index)
    held = [v for v in old if not _blank(v)]
    if all(isinstance(v, str) for v in held):
        return old, new
    numbers = (int, float, np.integer, np.floating)
    if not all(isinstance(v, numbers) and not isinstance(v, (bool, np.bool_)) for v in held):
        return as_text()
    whole = old.dtype.kind != "f" and all(float(v).is_integer() for v in held)
    values: list[object] = []
    for text in (str(v).strip() for v in new):
        if text == "":
            values.append(None)
            continue
        try:
            number: float = int(text) if whole else float(text)
        except ValueError:  # an id such as "n05" beside numeric ones: the column becomes text
            return as_text()
        if whole and (str(number) != text or not -(2**63) <= number < 2**63):
            return as_text()  # "007", "+5", "1_000" or beyond int64 are kept as the editor wrote them
        values.append(number)
    if old.dtype.kind in "iu" and any(v is None for v in values):
        old = old.astype(object)
    return old, pd.Series(values, dtype=object if whole else float, index=new.index)


def _sheet(source: str | Path, row: int | None, field: str | None, reason: str) -> InputError:
    """A problem of an editors' file, named by its sheet row (the header is sheet row 1)."""
    return InputError(source, row, field, reason, sheet=True)


def _check_items(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, problems: list[InputError]
) -> None:
    """No item paired with itself; one text per item id within the file (each problem added to
    ``problems``; a row's empty text is its own problem, not another text)."""
    if "id_a" not in frame.columns or "id_b" not in frame.columns:
        return
    first: dict[str, tuple[str, int]] = {}
    for i, r in enumerate(frame.itertuples(index=False)):
        row = int(rownum[i])
        a, b = item_id(r.id_a), item_id(r.id_b)
        if a and a == b:
            problems.append(_sheet(source, row, "id_b", f"item {a!r} is paired with itself"))
            continue
        for item, text, fld in ((a, r.text_a, "text_a"), (b, r.text_b, "text_b")):
            if not item or _blank(text):
                continue
            seen = first.setdefault(item, (str(text), row))
            if seen[0] != str(text):
                problems.append(
                    _sheet(
                        source,
                        row,
                        fld,
                        f"item {item!r} has another text than at sheet row {seen[1]} ({seen[0]!r})",
                    )
                )


def _semicolon_separated(path: str | Path) -> bool:
    """True when the first line of the text file ``path`` has a ``;`` and no comma: a CSV saved by a
    European Excel, separated by semicolons."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536).decode("utf-8", errors="replace").lstrip("\ufeff")
    except OSError:
        return False
    line = head.split("\n", 1)[0]
    return ";" in line and "," not in line


def _semicolon_error(source: str | Path) -> InputError:
    return InputError(
        source,
        None,
        None,
        "the file looks separated by ';' (as Excel saves CSV in some countries), not by commas: save it as "
        "comma-separated CSV (CSV UTF-8) and merge again",
    )


def read_filled(path: str | Path) -> pd.DataFrame:
    """Read an editors' filled file (CSV, TSV or Parquet); a semicolon-separated CSV is named as such."""
    try:
        return read_pair_table(path)
    except InputError:
        if table_format(path) == "csv" and _semicolon_separated(path):
            raise _semicolon_error(path) from None
        raise


def _level(value: float) -> float | None:
    """The rubric level ``value`` stands for (within 1e-9), or ``None``."""
    return next((lv for lv in LEVELS if abs(value - lv) < 1e-9), None)


def _fill_pair_ids(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, problems: list[InputError]
) -> pd.DataFrame:
    """Every row's pair id: the editor's, or when missing the id :func:`editor_file.pair_id` makes from its
    two item ids; an ``ed-`` id that is not its items' id (a sheet sorted by some columns only), or none
    at all, is a problem added to ``problems`` (the row keeps no pair id).
    """
    has_ids = "id_a" in frame.columns and "id_b" in frame.columns
    given = frame["pair_id"] if "pair_id" in frame.columns else pd.Series([None] * len(frame), dtype=object)
    out: list[Any] = []
    for i, pid in enumerate(given):
        a = item_id(frame["id_a"].iloc[i]) if has_ids else ""
        b = item_id(frame["id_b"].iloc[i]) if has_ids else ""
        made = editor_file.pair_id(a, b) if a and b else None
        if _blank(pid):
            if made is None:
                why = "pair id missing, and no id_a and id_b to make it from"
                problems.append(_sheet(source, int(rownum[i]), "pair_id", why))
            out.append(made)
            continue
        pid = str(pid).strip()
        if made is not None and pid.startswith(editor_file.PAIR_ID_PREFIX) and pid != made:
            problems.append(
                _sheet(
                    source,
                    int(rownum[i]),
                    "pair_id",
                    f"pair id {pid!r} is not the id of its items {a!r} and {b!r} ({made!r}); was the sheet "
                    "sorted by some columns only? Keep each row whole",
                )
            )
            out.append(None)
            continue
        out.append(pid)
    frame = frame.copy()
    if "pair_id" in frame.columns:
        frame["pair_id"] = out
    else:
        frame.insert(0, "pair_id", out)
    return frame


def _refuse(source: str | Path, problems: list[InputError], what: str = "rows refused") -> None:
    """Raise every problem found at once (one line a row), or nothing when there is none."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise InputErrors(source, problems, what)


def _levels(
    scores: pd.Series, rownum: pd.Series, source: str | Path, problems: list[InputError]
) -> list[float]:
    """Each score as its rubric level (NaN where it is none, the problem added to ``problems``)."""
    levels: list[float] = []
    for i, v in enumerate(scores):
        try:
            level = _level(float(v))
            why = "is not one of the rubric's levels 0, 0.25, 0.5, 0.75, 1"
        except (TypeError, ValueError):
            level, why = None, "is not a number"
        if level is None:
            problems.append(_sheet(source, int(rownum[i]), "score", f"score {v!r} {why}"))
        levels.append(float("nan") if level is None else level)  # -0 and 1e-10 are stored as 0
    return levels


def validate_filled(
    frame: pd.DataFrame,
    source: str | Path,
    *,
    skip_blank: bool = False,
    problems: list[InputError] | None = None,
) -> pd.DataFrame:
    """Check an editor's filled file: texts present, pair ids unique (made from the item ids when the file
    has none), scores one of the five levels (stored as the level), no item paired with itself, one text
    per item id, no pair twice. Rows are named by their sheet row (as a spreadsheet shows the file: the
    header is sheet row 1), skipped blank rows counted. Returns the sound rows.

    Every problem of every row is found in one pass: with ``problems`` they are added to it (the merge
    adds the conflicts with the pair file and refuses once); without, they are raised together. A file
    without a ``score`` column or without any scored row is refused at once."""
    if "score" not in frame.columns:
        if len(frame.columns) == 1 and ";" in str(frame.columns[0]):
            raise _semicolon_error(source)
        raise InputError(source, None, "score", "missing column")
    frame = frame.reset_index(drop=True)
    if frame.empty:
        raise InputError(source, None, None, "no pairs to merge (the file has a header only)")
    blank = frame["score"].map(_blank)
    if blank.all():
        raise InputError(source, None, "score", f"no scored pairs to merge ({len(frame)} blank row(s))")
    found: list[InputError] = []
    rownum = pd.Series(np.arange(2, len(frame) + 2))  # sheet rows: the header is row 1
    if blank.any() and not skip_blank:
        why = f"not scored ({int(blank.sum())} blank row(s); score them or pass --skip-blank)"
        found.extend(_sheet(source, int(r), "score", why) for r in rownum[blank.to_numpy()])
    frame, rownum = frame[~blank].reset_index(drop=True), rownum[~blank.to_numpy()].reset_index(drop=True)
    frame = frame.copy()
    for col in ("pair_id", "id_a", "id_b"):  # "n-1 " or a no-break space typed around an id
        if col in frame.columns:
            frame[col] = frame[col].map(lambda v: v.strip() if isinstance(v, str) else v)
    frame["score"] = _levels(frame["score"], rownum, source, found)
    frame = _fill_pair_ids(frame, rownum, source, found)
    _row_problems(frame, rownum, source, found)
    _check_items(frame, rownum, source, found)
    sound = ~rownum.isin({e.row for e in found}).to_numpy()
    first: dict[str, int] = {}
    for i, pid in enumerate(frame["pair_id"]):
        if not sound[i]:
            continue
        if pid in first:
            found.append(
                _sheet(
                    source,
                    int(rownum[i]),
                    "pair_id",
                    f"duplicate pair id {pid!r} (first at sheet row {first[pid]})",
                )
            )
            sound[i] = False
        first.setdefault(pid, int(rownum[i]))
    frame, rownum = frame[sound].reset_index(drop=True), rownum[sound].reset_index(drop=True)
    checked = _whole_file(frame, rownum, source, found)
    if checked is not None:
        _pairs_once(checked, rownum, source, found)
    if problems is None:
        _refuse(source, _unique(found))
    else:
        problems.extend(found)
    if checked is None:
        checked, rownum = frame.iloc[:0].copy(), rownum.iloc[:0]
    sound_rows = ~rownum.isin({e.row for e in found}).to_numpy()
    checked = checked[sound_rows].reset_index(drop=True)
    checked.attrs["rows"] = rownum[sound_rows].tolist()
    return checked


def _row_problems(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, found: list[InputError]
) -> None:
    """Each row checked as a pair file's row (:func:`~nlsim.io.pairs.validate_pairs`: texts, an id without
    a control character, a score, a split), its problem added to ``found`` (a row already named for its
    score or pair id is not named again for it)."""
    named = {(e.row, e.field) for e in found}
    for i in range(len(frame)):
        row = int(rownum[i])
        try:
            validate_pairs(frame.iloc[[i]].assign(pair_id=frame["pair_id"].iloc[i] or f"row-{row}"), source)
        except InputError as exc:
            if (row, exc.field) not in named:
                found.append(_sheet(source, row, exc.field, exc.reason))


def _whole_file(
    frame: pd.DataFrame, rownum: pd.Series, source: str | Path, found: list[InputError]
) -> pd.DataFrame | None:
    """The sound rows normalised as a pair table (:func:`~nlsim.io.pairs.validate_pairs`); what it still
    finds across rows (a pair in two splits) is added to ``found``, and ``None`` returned."""
    if frame.empty:
        return None
    try:
        return validate_pairs(frame, source)
    except InputError as exc:
        row = int(rownum[exc.row - 1]) if exc.row else None
        found.append(_sheet(source, row, exc.field, exc.reason))
        return None


def _pairs_once(
    checked: pd.DataFrame, rownum: pd.Series, source: str | Path, found: list[InputError]
) -> None:
    """No pair twice in the file (by item ids or by texts, either order)."""
    seen: dict[tuple[str, ...], int] = {}
    for i, keys in enumerate(pair_keys(checked)):
        for key in keys:
            if key in seen:
                found.append(
                    _sheet(
                        source,
                        int(rownum[i]),
                        "id_a" if key[0] == "id_a" else "text_a",
                        f"the same pair as sheet row {int(rownum[seen[key]])} appears twice in this file",
                    )
                )
                break
        for key in keys:
            seen.setdefault(key, i)


def _unique(problems: list[InputError]) -> list[InputError]:
    """One problem a row and field (the first found), in the order of the rows."""
    unique: dict[tuple[int, str], InputError] = {}
    for e in problems:
        unique.setdefault((e.row or 0, e.field or ""), e)
    return sorted(unique.values(), key=lambda e: (e.row or 0, e.field or ""))


UNESCAPED = ("pair_id", "id_a", "id_b", "stratum", "annotator", "notes")
"""Cells of an editors' file read without the apostrophe an export put in front of a text a spreadsheet
would run as a formula (:func:`nlsim.io.editor_file.unescape`); ``text_a``/``text_b`` are read so too,
unless the text's hash or known text says the apostrophe is its own (:func:`_check_texts`)."""


def _unescape_cells(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for col in (c for c in UNESCAPED if c in frame.columns):
        frame[col] = frame[col].map(lambda v: editor_file.unescape(v) if isinstance(v, str) else v)
    return frame


def _corpus_texts(corpus: str | Path) -> dict[str, str]:
    """Each item's text in ``corpus`` (as ``nlsim annotate draw`` reads it), by id."""
    items = load_items(corpus)
    return {str(i): str(t) for i, t in zip(items["id"], items["text"], strict=True)}


def _known_texts(
    existing: pd.DataFrame, pairs_file: str | Path, corpus: str | Path | None
) -> dict[str, tuple[str, str]]:
    """Each item's known text and where it is known: the pair file first, then the corpus."""
    known: dict[str, tuple[str, str]] = {}
    if "id_a" in existing.columns and "id_b" in existing.columns:
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            for item, text in zip(existing[col], existing[tcol], strict=True):
                if not _blank(item):
                    known.setdefault(str(item).strip(), (str(text), str(pairs_file)))
    for item, text in (_corpus_texts(corpus) if corpus is not None else {}).items():
        known.setdefault(item, (text, f"the corpus {corpus}"))
    return known


SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def _hashed(
    options: list[str], digest: str, filled: str | Path, row: int, side: str, problems: list[InputError]
) -> list[str]:
    """The readings of a text cell whose SHA-256 is ``digest`` (all of them without one); a bad or
    unmatched hash is added to ``problems``."""
    if not digest:
        return options
    tcol, hcol = f"text_{side}", f"sha256_{side}"
    if not SHA256_HEX.match(digest):
        problems.append(_sheet(filled, row, hcol, f"{digest[:70]!r} is not a SHA-256 (64 hex digits)"))
        return []
    kept = [o for o in options if editor_file.text_sha256(o) == digest]
    if not kept:
        problems.append(
            _sheet(
                filled,
                row,
                tcol,
                f"the text is not the one the report page exported (its {hcol} differs): it was changed "
                "after the export (a spreadsheet that ran it as a formula keeps the result); export the pair "
                "again, or restore the text",
            )
        )
    return kept


def _check_texts(
    new: pd.DataFrame,
    known: dict[str, tuple[str, str]],
    filled: str | Path,
    corpus: str | Path | None = None,
) -> tuple[pd.DataFrame, list[InputError]]:
    """Each row's texts as the editors' file means them, checked against what is known of its items, and
    every problem found (none raised here: the merge names them all at once, :func:`_check_new`).

    A text cell with an apostrophe in front of a formula character is read without it, unless its hash or
    its item's known text is the cell as written. With a hash column (:data:`editor_file.HASH_COLUMNS`) the
    text must be the one exported (a spreadsheet that ran a formula saves its value instead); where the
    item's text is known (``known``: the pair file, the corpus) the text must be that one, and a row whose
    two ids were swapped with their texts left in place is named as such (the pair id is the same in either
    order, so only the texts tell). With a ``corpus``, an item id that neither the pair file nor the
    corpus holds is a problem too (a mistyped id could never act). Problems name the file, the row and the
    field."""
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    problems: list[InputError] = []
    has_ids = "id_a" in new.columns and "id_b" in new.columns
    texts: dict[str, list[str]] = {"a": [], "b": []}
    for i in range(len(new)):
        row = int(rows[i])
        ids = {s: item_id(new[f"id_{s}"].iloc[i]) if has_ids else "" for s in "ab"}
        chosen: dict[str, str] = {}
        for side in "ab":
            tcol, hcol = f"text_{side}", f"sha256_{side}"
            raw = str(new[tcol].iloc[i])
            options = list(dict.fromkeys([raw, editor_file.unescape(raw)]))
            digest = "" if hcol not in new.columns or _blank(new[hcol].iloc[i]) else str(new[hcol].iloc[i])
            options = _hashed(options, digest.strip().lower(), filled, row, side, problems) or [raw]
            item = known.get(ids[side])
            if item is None and corpus is not None and ids[side]:
                problems.append(
                    _sheet(
                        filled,
                        row,
                        f"id_{side}",
                        f"item {ids[side]!r} is neither in the pair file nor in the corpus {corpus}",
                    )
                )
            if item is not None:
                options = [o for o in options if o.strip() == item[0].strip()] or options
            chosen[side] = options[-1]
        for side, other in (("a", "b"), ("b", "a")):
            item = known.get(ids[side])
            if item is None or chosen[side].strip() == item[0].strip():
                continue
            if chosen[other].strip() == item[0].strip():
                problems.append(
                    _sheet(
                        filled,
                        row,
                        f"id_{side}",
                        f"id_a {ids['a']!r} and id_b {ids['b']!r} look swapped: text_{other} is the text of "
                        f"{ids[side]!r} in {item[1]}; keep each id beside its own text",
                    )
                )
                break
            problems.append(
                _sheet(
                    filled,
                    row,
                    f"text_{side}",
                    f"item {ids[side]!r} has another text than in {item[1]} ({item[0]!r})",
                )
            )
        texts["a"].append(chosen["a"])
        texts["b"].append(chosen["b"])
    out = new.copy()
    out["text_a"], out["text_b"] = texts["a"], texts["b"]
    out.attrs = dict(new.attrs)
    return out, problems


def _conflicts(
    new: pd.DataFrame, existing: pd.DataFrame, filled: str | Path, pairs_file: str | Path
) -> tuple[list[InputError], list[InputError]]:
    """Every conflict of ``new`` with the pair file at once: the rows whose pair is already annotated (by
    pair id, item ids or texts), and the rows naming an item id whose text differs from the pair file's.
    Returns ``(already annotated, other conflicts)``, each problem named by file, row and field."""
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    known_ids = set(existing["pair_id"])
    known = _known_pairs(existing)
    texts: dict[str, str] = {}
    if "id_a" in existing.columns and "id_b" in existing.columns:
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            for item, text in zip(existing[col], existing[tcol], strict=True):
                if not _blank(item):
                    texts.setdefault(str(item).strip(), str(text))
    scored: list[InputError] = []
    other: list[InputError] = []
    for i, (r, keys) in enumerate(zip(new.itertuples(index=False), pair_keys(new), strict=True)):
        row = int(rows[i])
        what = f"pair {r.pair_id!r}"
        if hasattr(r, "id_a") and hasattr(r, "id_b"):
            what += f" ({r.id_a} / {r.id_b})"
        if r.pair_id in known_ids:
            scored.append(_sheet(filled, row, "pair_id", f"{what} is already annotated in {pairs_file}"))
        else:
            for key in keys:
                if key in known:
                    scored.append(
                        _sheet(
                            filled,
                            row,
                            "id_a" if key[0] == "id_a" else "text_a",
                            f"{what} is already annotated in {pairs_file} as {known[key]!r}",
                        )
                    )
                    break
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            item = str(getattr(r, col, "") or "").strip()
            text = str(getattr(r, tcol))
            if item in texts and texts[item] != text:
                other.append(
                    _sheet(
                        filled,
                        row,
                        tcol,
                        f"item {item!r} has another text than in {pairs_file} ({texts[item]!r})",
                    )
                )
    return scored, other


def _overrule_rows(
    raw: pd.DataFrame, filled: str | Path, early: list[InputError], *, every: bool
) -> set[int]:
    """The sheet rows of the editors' file ``raw`` whose editor means to overrule a pair already scored:
    every row with ``every`` (``--overrule``), else those whose :data:`editor_file.OVERRULE` cell is true
    (a cell that is neither true nor false is a problem added to ``early``)."""
    rows = range(2, len(raw) + 2)  # sheet rows: the header is row 1
    if every:
        return set(rows)
    if editor_file.OVERRULE not in raw.columns:
        return set()
    marked = set()
    for row, cell in zip(rows, raw[editor_file.OVERRULE], strict=True):
        said = editor_file.overrule_cell(cell)
        if said is None:
            why = f"{str(cell)[:40]!r} is neither true nor false (does the editor mean to overrule?)"
            early.append(_sheet(filled, row, editor_file.OVERRULE, why))
        elif said:
            marked.add(row)
    return marked


@dataclass(frozen=True)
class _Scored:
    """The rows of an editors' file whose pair the pair file already scores, by sheet row."""

    conflicts: tuple[InputError, ...] = ()
    """Each such row, named (already annotated), but those merged as overruling verdicts."""
    overrules: dict[int, PairRow] = field(default_factory=dict)
    """The rows merged as an editor's newer decision, each with its pair's row of the pair file."""
    refused: tuple[InputError, ...] = ()
    """Rows meant to overrule a pair that cannot be overruled (validation or test; other item ids)."""
    could: int = 0
    """Rows of :attr:`conflicts` on training pairs, which ``--overrule`` would merge."""

    @property
    def skipped(self) -> set[int]:
        """The rows ``--skip-scored`` skips: the conflicts and the refused overrules."""
        return {e.row for e in (*self.conflicts, *self.refused) if e.row is not None}


def _scored(
    new: pd.DataFrame,
    existing: pd.DataFrame,
    conflicts: list[InputError],
    filled: str | Path,
    intent: set[int],
) -> _Scored:
    """The rows of ``new`` the pair file already scores (``conflicts``, by :func:`_conflicts`), parted:
    those meant to overrule (``intent``, sheet rows) whose pair the pair file holds by the same item ids in
    its training split are overrules; one on a validation or test pair, or on a pair the pair file holds
    under other item ids, is refused by name; the rest stay conflicts."""
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    at = {int(r): i for i, r in enumerate(rows)}
    held = pair_rows(existing)
    overrules: dict[int, PairRow] = {}
    refused: list[InputError] = []
    plain: list[InputError] = []
    could = 0
    for e in conflicts:
        i = at[int(e.row or 0)]
        key = pair_key(item_id(new["id_a"].iloc[i]), item_id(new["id_b"].iloc[i])) if "id_a" in new else None
        row = held.get(key) if key else None
        trainable = row is not None and row.split == ACTING_SPLIT
        if e.row not in intent:
            plain.append(e)
            could += trainable
        elif trainable and row is not None:
            overrules[int(e.row or 0)] = row
        else:
            refused.append(_unoverruled(e, row, filled))
    return _Scored(tuple(plain), overrules, tuple(refused), could)


def _unoverruled(e: InputError, row: PairRow | None, filled: str | Path) -> InputError:
    """Why the row of conflict ``e`` cannot overrule the pair file's ``row`` of its pair."""
    if row is None:
        why = (
            f"{e.reason}, but not under these item ids: an overrule names the pair by the item ids the pair "
            "file gives it"
        )
    else:
        why = (
            f"{e.reason} in its {row.split or 'unnamed'} split: only a training pair is overruled "
            "(validation and test pairs judge the reports and the models, as the annotators scored them)"
        )
    return _sheet(filled, e.row, e.field, why)


def _check_new(
    new: pd.DataFrame,
    existing: pd.DataFrame,
    filled: str | Path,
    pairs_file: str | Path,
    *,
    skip_scored: bool = False,
    found: list[InputError] | None = None,
    early: list[InputError] | None = None,
    intent: set[int] | None = None,
) -> _Scored:
    """Refuse the editors' file naming every problem at once, one line a row and field: ``early`` (the
    file's own, :func:`validate_filled`, and the cells the pair file cannot hold, :func:`_cell_problems`),
    the conflicts of its sound rows ``new`` with the pair file (:func:`_conflicts`) and ``found``
    (:func:`_check_texts`' problems); a row meant to overrule (``intent``, sheet rows) a training pair is
    no conflict (:func:`_scored`); with ``skip_scored`` a pair already annotated is no conflict (the
    merge skips it, and what else its row holds). Returns the rows the pair file already scores."""
    conflicts, other = _conflicts(new, existing, filled, pairs_file)
    scored = _scored(new, existing, conflicts, filled, intent or set())
    found = found or []
    early = early or []
    if skip_scored:
        early = [e for e in early if e.row not in scored.skipped]
        found = [e for e in found if e.row not in scored.skipped]
    texts_named = {e.row for e in found}  # a row's texts are checked once: other is the same check
    problems = _unique(
        [
            *early,
            *found,
            *(e for e in other if e.row not in texts_named),
            *([] if skip_scored else [*scored.conflicts, *scored.refused]),
        ]
    )
    if not problems:
        return scored
    what = "problems, each to fix in the file" if early or found else "rows conflict with the pair file"
    if scored.conflicts and not skip_scored:
        hint = f"{len(scored.conflicts)} already annotated: pass --skip-scored to merge the others"
        if scored.could:
            hint += (
                f", or --overrule to merge the {scored.could} training pair(s) among them as the editor's "
                "newer decision"
            )
        what += f" ({hint})"
        if len(problems) == 1:  # one refusal: the row itself says what else to do
            e = problems[0]
            problems = [InputError(e.file, e.row, e.field, f"{e.reason} ({hint})", sheet=e.sheet)]
    _refuse(filled, problems, what)
    return scored


def _parted(
    new: pd.DataFrame, scored: _Scored, skip_scored: bool, filled: str | Path, pairs_file: str | Path
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """``new`` parted into the rows the pair file does not score yet (appended to it) and the overruling
    ones (:attr:`_Scored.overrules`: the verdict store only), without those ``--skip-scored`` skips; and
    how many it skipped."""
    rows = [int(r) for r in (new.attrs.get("rows") or range(1, len(new) + 1))]
    skip = scored.skipped if skip_scored else set()
    fresh = _rows_of(new, rows, [r not in scored.overrules and r not in skip for r in rows])
    newer = _rows_of(new, rows, [r in scored.overrules for r in rows])
    if fresh.empty and newer.empty:
        raise InputError(filled, None, None, f"every pair of the file is already annotated in {pairs_file}")
    return fresh, newer, len(skip & set(rows))


def _rows_of(new: pd.DataFrame, rows: list[int], keep: list[bool]) -> pd.DataFrame:
    """The rows of ``new`` that ``keep`` says, with their sheet rows."""
    out = new[keep].reset_index(drop=True)
    out.attrs["rows"] = [r for r, k in zip(rows, keep, strict=True) if k]
    return out


@dataclass
class MergeResult:
    """What a merge did: pairs added, blank rows skipped, pairs in the file now, their split, the file."""

    added: int
    skipped_blank: int
    total: int
    split: str
    path: Path
    skipped_scored: int = 0
    """Rows skipped because their pair was already annotated (``--skip-scored``)."""
    verdicts: Path | None = None
    """The verdict store the merged pairs were added to (beside the pair file)."""
    overruled: int = 0
    """Training pairs the pair file already scored whose verdict is now the editor's newer decision."""
    already_held: int = 0
    """Overruling rows whose decision already held (merged before from the same file): nothing new."""


BOM = b"\xef\xbb\xbf"


def _bad_char(text: str, tsv: bool) -> str | None:
    """The first character of ``text`` a pair file must not hold, or ``None``: a control character or a
    line or paragraph separator (:func:`nlsim.io.cells.first_control`: a NUL ends a text in many tools, a
    vertical tab, form feed or U+2028 ends a row for a line reader, others show nothing), and in a TSV pair
    file (it has no quoting) a tab, carriage return or newline too; a CSV or Parquet cell may hold those."""
    return first_control(text, allowed="" if tsv else "\t\r\n")


def _cell_problems(
    new: pd.DataFrame, columns: list[str], filled: str | Path, pairs_file: str | Path
) -> list[InputError]:
    """Each cell of the editor's file the pair file cannot hold intact, by its sheet row and field."""
    tsv = table_format(pairs_file) == "tsv"
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    problems = []
    for col in (c for c in columns if c in new.columns):
        for i, value in enumerate(new[col]):
            if _blank(value):
                continue
            ch = _bad_char(str(value), tsv)
            if ch is None:
                continue
            if ch in "\t\r\n":
                what, kind = f"a tab or newline (U+{ord(ch):04X})", "the TSV pair file"
            else:
                what, kind = describe(ch), "a pair file"
            problems.append(
                _sheet(
                    filled,
                    int(rows[i]),
                    str(col),
                    f"{what} cannot be written to {kind} ({pairs_file}); remove it",
                )
            )
    return problems


@contextlib.contextmanager
def merge_lock(target: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the folder of ``target`` (one merge into it at a time), waiting up to
    :data:`MERGE_LOCK_WAIT` seconds; the kernel drops it when the process ends, so it never stays stuck.
    A folder that cannot be opened for reading (write and search permission only) gets the lock on
    ``target`` itself; a ``target`` that cannot be opened either is refused by name."""
    try:
        fd = os.open(target.parent, os.O_RDONLY)
    except OSError:  # a folder that may be written but not listed: lock the pair file itself
        try:
            fd = os.open(target, os.O_RDONLY)
        except OSError as exc:
            raise InputError(target, None, None, f"cannot be opened ({exc.strerror or exc})") from None
    try:
        deadline = time.monotonic() + MERGE_LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockedError(
                        f"another merge into {target} is running (waited {MERGE_LOCK_WAIT:g} s); try again "
                        "once it has finished"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


def _line_ending(data: bytes) -> bytes:
    """The line ending of a text file: ``\\r\\n`` when its first line ends so, ``\\r`` in a file without
    any ``\\n`` that has ``\\r`` (old Mac endings, as Excel for Mac writes), else ``\\n``."""
    end = data.find(b"\n")
    if end < 0:
        return b"\r" if b"\r" in data else b"\n"
    return b"\r\n" if end > 0 and data[end - 1 : end] == b"\r" else b"\n"


def _widen(text: str, fmt: str, extra: list[str], newline: str = "\n") -> str:
    """``text`` (a CSV or TSV file without its byte-order mark, records ending in ``newline``: ``\\n``,
    a ``\\r`` before it kept, or ``\\r`` alone) with the columns ``extra`` added: their names after the
    header's, an empty cell after every row's; every existing cell and line ending kept. A CSV field is
    quoted only when its first character is a quote (as the csv reader reads it: ``5"`` inside a field is a
    character), and ``""`` inside a quoted field is one quote.

    Example:
        >>> _widen('a,b\\r\\n1,"x\\r\\ny"\\r\\n2,5"\\r\\n', "csv", ["notes"])
        'a,b,notes\\r\\n1,"x\\r\\ny",\\r\\n2,5",\\r\\n'
    """
    sep = "," if fmt == "csv" else "\t"
    end = "\r" if newline == "\r" else "\n"
    out: list[str] = []
    header = True
    start = 0
    quoted = False
    field_start = True
    i = 0
    while i <= len(text):
        ch = text[i] if i < len(text) else end
        if quoted:
            if ch == '"':
                if text[i + 1 : i + 2] == '"':
                    i += 1  # an escaped quote
                else:
                    quoted = False
        elif fmt == "csv" and ch == '"' and field_start:
            quoted = True
            field_start = False
        elif ch == end:
            record = text[start:i]
            cr = end == "\n" and record.endswith("\r")
            body = record[:-1] if cr else record
            if body.strip():
                body += sep + sep.join(extra) if header else sep * len(extra)
                header = False
            out.append(body + ("\r" if cr else "") + (end if i < len(text) else ""))
            start = i + 1
            field_start = True
        else:
            field_start = ch == sep
        i += 1
    return "".join(out)


def _text_bytes(data: bytes, fmt: str, extra: list[str], add: pd.DataFrame) -> bytes:
    """The pair file's bytes ``data`` with the rows of ``add`` appended: the existing rows byte for byte
    (byte-order mark and line endings kept; ``extra`` columns added empty), the new ones in the same style.
    """
    bom = BOM if data.startswith(BOM) else b""
    newline = _line_ending(data)
    body = data[len(bom) :]
    if extra:
        body = _widen(body.decode("utf-8"), fmt, extra, newline.decode()).encode("utf-8")
    if body and not body.endswith(newline[-1:]):
        body += newline
    buf = io.StringIO()
    rows = add.astype(str).to_numpy().tolist()
    if fmt == "csv":
        csv.writer(buf, lineterminator=newline.decode()).writerows(rows)
    else:
        buf.write("".join("\t".join(r) + newline.decode() for r in rows))
    return bom + body + buf.getvalue().encode("utf-8")


def _expected(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["pair_id", "text_a", "text_b", "split"]].astype(str).reset_index(drop=True)


def _write_checked(target: Path, merged: pd.DataFrame, write: Callable[[Path], None], label: str) -> None:
    """Write the merged pair file with ``write`` into a temporary file beside ``target``, read it back
    with :func:`~nlsim.io.pairs.load_pairs` and, only when it gives the same pairs (count, ids, texts,
    splits, scores), rename it over ``target`` keeping ``target``'s permissions. Otherwise refuse
    (:class:`InputError`) and leave ``target`` as it was."""
    mode = stat.S_IMODE(os.stat(target).st_mode)
    sweep_leftovers(target.parent, target.name)  # the full copy a merge killed before its rename left
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    tmp = Path(name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until this merge ends (sweep_leftovers spares it)
        write(tmp)
        os.chmod(tmp, mode)
        try:
            back = load_pairs(tmp)
        except InputError as exc:
            where = f"row {exc.row}: " if exc.row else ""
            raise InputError(
                target,
                None,
                None,
                f"the merged file would not read back ({where}{exc.reason}); nothing changed",
            ) from None
        want = _expected(merged)
        got = _expected(back)
        same = len(back) == len(merged) and got.equals(want)
        same = same and np.allclose(back["score"].to_numpy(float), merged["score"].to_numpy(float))
        if not same:
            n_bad = len(back) if len(back) != len(merged) else int((got != want).any(axis=1).sum())
            raise InputError(
                target,
                None,
                None,
                f"the merged file reads back as {len(back)} pairs, not the {len(merged)} of {label} "
                f"({n_bad} differ); nothing changed",
            )
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def merge_annotations(
    filled: str | Path,
    pairs_file: str | Path,
    *,
    split: str = "train",
    skip_blank: bool = False,
    corpus: str | Path | None = None,
    skip_scored: bool = False,
    overrule: bool = False,
    log: Callable[[str], None] = say,
) -> MergeResult:
    """Validate ``filled`` and append its pairs to ``pairs_file`` with ``split``.

    Each text is checked against its item's known text (the pair file, ``corpus``): :func:`_check_texts`.

    The editor's ``stratum`` (prefixed ``editor-loop:``), ``annotator`` and ``notes`` are kept (as columns
    of the pair file, empty for older rows). The merged table is validated (no pair twice, none in two
    splits), written beside the pair file, read back and compared before it replaces the file, atomically:
    a refused merge leaves the pair file as it was. A TSV or CSV pair file keeps its existing rows byte for
    byte (byte-order mark and line endings included), and every pair file keeps its permissions; a
    symbolic link is followed (its target is rewritten). One merge into a folder at a time: the pair file
    is read under a lock (:func:`merge_lock`).

    Every conflict with the pair file is named at once; ``skip_scored`` skips (and counts) the rows whose
    pair is already annotated instead. The merged pairs are also the editors' verdicts, added to the
    store beside the pair file (:mod:`nlsim.clusters.verdicts`) that later reports honour.

    ``overrule`` (or a row's ``overrule`` cell, :data:`editor_file.OVERRULE`): a row whose pair the pair
    file already scores in its training split is the editor's newer decision. It is recorded in the
    verdict store as the pair's verdict, the decisions it overrules kept with it
    (:func:`~nlsim.clusters.verdicts.overruling`), and the pair file is left as it is; a validation or test
    pair is never overruled (refused by name). A row whose decision already holds (the same score from the
    same editor and file: a file merged again) adds nothing and is counted.
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r} (use {', '.join(SPLITS)})")
    raw = _unescape_cells(read_filled(filled))
    early: list[InputError] = []
    intent = _overrule_rows(raw, filled, early, every=overrule)
    new = validate_filled(raw, filled, skip_blank=skip_blank, problems=early)
    skipped = int(raw["score"].map(_blank).sum()) if skip_blank else 0
    path = Path(pairs_file)
    target = Path(os.path.realpath(path)) if path.exists() else path
    fmt = table_format(target, ("parquet", "csv", "tsv"))
    with merge_lock(target):
        data = target.read_bytes() if fmt != "parquet" and target.is_file() else b""
        original = read_pair_table(target)  # existing rows are written back exactly as read
        existing = validate_pairs(original, target, repeated_scores="refuse")  # what load_pairs checks
        new, found = _check_texts(new, _known_texts(existing, pairs_file, corpus), filled, corpus)
        early += _cell_problems(new, _columns_of(original, new)[0], filled, pairs_file)
        scored = _check_new(
            new,
            existing,
            filled,
            pairs_file,
            skip_scored=skip_scored,
            found=found,
            early=early,
            intent=intent,
        )
        fresh, newer, skipped_scored = _parted(new, scored, skip_scored, filled, pairs_file)
        label = f"{pairs_file} merged with {filled}"
        body = _appended(original, fresh, split, fmt, data, label) if len(fresh) else None
        # the verdicts are checked and written before the pair file: its rename commits the merge
        with _verdicts_kept(fresh, newer, scored.overrules, path, existing, split, filled, log) as kept:
            if body is not None:
                _write_checked(target, body.checked, body.write, label)
    total = len(body.checked) if body is not None else len(existing)
    result = MergeResult(
        len(fresh), skipped, total, split, path, skipped_scored, kept.store, kept.overruled, kept.already
    )
    log(_merge_said(result, skip_scored))
    return result


def _merge_said(result: MergeResult, skip_scored: bool) -> str:
    """What a merge says it did, in one line."""
    scored_note = f", {result.skipped_scored} already annotated skipped" if skip_scored else ""
    said = (
        f"added {result.added} pairs to {result.path} as {result.split!r} "
        f"({result.skipped_blank} blank rows skipped{scored_note}); now {result.total} pairs"
    )
    if result.overruled:
        said += (
            f"; {result.overruled} training pair(s) overruled: the editor's newer decision is their verdict "
            f"in {result.verdicts} (the earlier kept with it; the pair file keeps its score) and the next "
            "training reads it"
        )
    if result.already_held:
        said += f"; {result.already_held} overruling decision(s) already held (merged before): nothing new"
    if result.verdicts is not None and not result.overruled:
        said += f"; the verdicts are kept in {result.verdicts}"
    return said


@dataclass(frozen=True)
class _Body:
    """The pair file as a merge leaves it (validated) and the writer of its bytes."""

    checked: pd.DataFrame
    write: Callable[[Path], None]


def _appended(
    original: pd.DataFrame, fresh: pd.DataFrame, split: str, fmt: str, data: bytes, label: str
) -> _Body:
    """The pair file ``original`` (its bytes ``data`` for a text file) with the rows ``fresh`` appended in
    ``split``, validated before anything is written (no pair twice, none in two splits)."""
    columns, extra = _columns_of(original, fresh)
    for col in extra:
        original[col] = ""
    add = _rows_to_add(fresh, columns, split)
    if fmt == "parquet":  # one type a column (TSV and CSV cells are all text)
        if pd.api.types.is_numeric_dtype(original["score"]):
            add["score"] = add["score"].astype(float)  # a text score column takes the editor's as text
        for col in columns:
            if col != "score":
                original[col], add[col] = _one_parquet_type(original[col], add[col])
    merged = pd.concat([original, add], ignore_index=True)
    checked = validate_pairs(merged, label)  # before the file is replaced

    def write(tmp: Path) -> None:
        if fmt == "parquet":
            merged.to_parquet(tmp, index=False)
        else:
            tmp.write_bytes(_text_bytes(data, fmt, extra, add[columns]))

    return _Body(checked, write)


def _columns_of(original: pd.DataFrame, new: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The merged pair file's columns, and those of them it adds: the editors' columns ``new`` fills
    (:data:`editor_file.KEPT`), and ``split`` for a file without splits (empty for its rows)."""
    columns = list(original.columns)
    extra: list[str] = []
    for col in editor_file.KEPT:
        if col in new.columns and new[col].astype(str).str.strip().ne("").any() and col not in columns:
            columns.append(col)
            extra.append(col)
    if "split" not in columns:
        columns.append("split")
        extra.append("split")
    return columns, extra


def _rows_to_add(new: pd.DataFrame, columns: list[str], split: str) -> pd.DataFrame:
    """The editors' rows as the pair file's rows (its ``columns``, as text), in ``split``."""
    add = pd.DataFrame({c: new[c].astype(str) if c in new.columns else "" for c in columns})
    add["split"] = split
    add["score"] = new["score"].map(lambda s: f"{s + 0.0:g}")
    if "annotations" in columns:
        add["annotations"] = add["score"]
    if "stratum" in columns:
        add["stratum"] = (
            (f"{editor_file.MERGED}:" + new["stratum"].astype(str))
            if "stratum" in new.columns
            else editor_file.MERGED
        )
    return add


@dataclass(frozen=True)
class _Kept:
    """What a merge did to the verdict store: its path (``None``: no verdict to keep), the training pairs
    overruled, and the overruling rows whose decision already held."""

    store: Path | None = None
    overruled: int = 0
    already: int = 0


@contextlib.contextmanager
def _verdicts_kept(
    fresh: pd.DataFrame,
    newer: pd.DataFrame,
    rows: dict[int, PairRow],
    pairs_file: Path,
    existing: pd.DataFrame,
    split: str,
    filled: str | Path,
    log: Callable[[str], None],
) -> Iterator[_Kept]:
    """Add the merged pairs that have both item ids (``fresh``) and the overruling rows (``newer``, each
    with its pair's row of the pair file in ``rows``, by sheet row) to the verdict store of ``pairs_file``,
    together with the pair file's write (the body). The store is read and checked against the pair file
    first (:func:`~nlsim.clusters.verdicts.check_store`: a verdict the pair file does not hold is rolled
    back, a merged pair the store lacks rebuilt, a store under an earlier name taken in, each said), so a
    store that cannot be read, or holds a damaged row, refuses the merge before anything is written. An
    overruling row becomes the pair's verdict with the decisions it overrules
    (:func:`~nlsim.clusters.verdicts.overruling`), unless its decision already holds. The store is written
    (atomically) before the body and put back as it was when the body fails; the pair file's rename commits
    the merge's new pairs (its overrules are committed with the store: a merge stopped in between is merged
    again whole, the overrules holding already). Yields what it did."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    records = _new_verdicts(fresh, split, filled, now)
    wanted = _new_verdicts(newer, ACTING_SPLIT, filled, now)
    if not records and not wanted:
        yield _Kept()
        return
    check = check_store(pairs_file, existing)
    check.refuse_damaged()
    for line in check.notes():
        log(line)
    by_key = {pair_key(r.id_a, r.id_b): r for r in rows.values()}
    overrules = [
        overruling(v, check.verdicts.get(v.key), by_key[v.key], pairs_file)
        for v in wanted
        if not holds_already(v, check.verdicts.get(v.key))
    ]
    store = check.path
    kept = _Kept(store, len(overrules), len(wanted) - len(overrules))
    if not records and not overrules:
        yield kept  # every overrule holds already: nothing to write
        return
    before = store.read_bytes() if store.is_file() else None
    held = check.verdicts.updated([*records, *overrules])
    write_store(check, held)
    fault_point(MERGE_FAULT_STAGES[0])  # the store written, the pair file not yet
    try:
        yield kept
    except BaseException:
        if before is None:
            store.unlink(missing_ok=True)
        else:
            atomic_write_bytes(store, before)
        raise
    for gone in retire_earlier(check, held):
        log(f"removed {gone}: every verdict it held is in {store} now")


def _new_verdicts(new: pd.DataFrame, split: str, filled: str | Path, now: str) -> list[Verdict]:
    """The merged rows that name both items as verdicts, merged at ``now``, with the hashes of the texts
    merged."""
    if "id_a" not in new.columns or "id_b" not in new.columns:
        return []
    who = new["annotator"] if "annotator" in new.columns else pd.Series([""] * len(new))
    return [
        Verdict(
            item_id(a),
            item_id(b),
            float(score),
            split,
            "" if _blank(w) else str(w),
            Path(filled).name,
            now,
            editor_file.text_sha256(str(ta)),
            editor_file.text_sha256(str(tb)),
        )
        for a, b, ta, tb, score, w in zip(
            new["id_a"], new["id_b"], new["text_a"], new["text_b"], new["score"], who, strict=True
        )
        if item_id(a) and item_id(b)
    ]


def check_verdicts(
    pairs_file: str | Path, *, write: bool = False, log: Callable[[str], None] = say
) -> StoreCheck:
    """``nlsim annotate verdicts``: check the verdict store of ``pairs_file`` against the pair file and say
    what holds (:func:`~nlsim.clusters.verdicts.check_store`); with ``write``, write it as it holds (a
    store under an earlier name moved to today's, merged pairs it lacked or held damaged rebuilt, verdicts
    the pair file does not hold taken out), under the merge lock (one merge into a folder at a time)."""
    path = Path(pairs_file)
    target = Path(os.path.realpath(path)) if path.exists() else path
    with merge_lock(target):
        check = check_store(path)
        for line in check.notes():
            log(line)
        held = f"{len(check.verdicts)} verdict(s), {len(check.verdicts.acting())} on training pairs"
        if check.verdicts.overruling():
            held += f" ({len(check.verdicts.overruling())} overruling the score the pair file gives them)"
        if check.in_step:
            log(f"{check.path}: {held}; in step with {path}")
        elif write:
            write_store(check)
            gone = retire_earlier(check, check.verdicts)
            log(f"wrote {check.path}: {held}" + "".join(f"; removed {p} (all in it now)" for p in gone))
        else:
            log(f"{check.path} is not in step with {path} ({held} hold): --write writes it")
    return check
