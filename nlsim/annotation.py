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
Its pairs are appended to the pair file with split ``train`` unless told otherwise; the file is replaced
atomically, so a refused merge changes nothing.

Example:
    >>> frame = pd.DataFrame({"pair_id": ["x1"], "id_a": ["a"], "id_b": ["b"], "text_a": ["甲"],
    ...                       "text_b": ["乙"], "score": ["0.75"]})
    >>> validate_filled(frame, "filled.csv")["score"].tolist()
    [0.75]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer

from nlsim.encoders import load_encoder
from nlsim.errors import ConfigError, InputError
from nlsim.evaluation.calibration import load_calibration
from nlsim.evaluation.metrics import convert_texts
from nlsim.io import editor_file
from nlsim.io.atomic import atomic_path
from nlsim.io.corpus import load_items
from nlsim.io.model_store import ModelStore
from nlsim.io.ownership import check_outputs_apart, check_writable
from nlsim.io.pairs import SPLITS, load_pairs, pair_keys, read_pair_table, validate_pairs
from nlsim.io.tables import table_format, write_table
from nlsim.progress import say
from nlsim.rerank.reranker import Reranker, load_reranker

LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
TFIDF = "tfidf-char2"
CURRENT = "current"


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
        current = ModelStore(model_store).current()
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
    return pool.assign(
        cosine=cosine, cross_encoder=cross, similarity=reranker.combine(cosine, cross).astype(np.float64)
    )


def embed_items(texts: list[str], model: DrawModel) -> np.ndarray:
    """The items' vectors: the model's encoder, or character-bigram TF-IDF without one."""
    if model.encoder is None:
        mat = TfidfVectorizer(analyzer="char", ngram_range=(2, 2), sublinear_tf=True).fit_transform(texts)
        return mat.astype(np.float32).toarray()
    return model.encoder.encode(texts, progress=True)


def unannotated_pool(
    emb: np.ndarray, items: pd.DataFrame, done: set[Any], *, k: int, seed: int, log: Callable[[str], None]
) -> pd.DataFrame:
    """The candidate pool of ``emb``'s neighbours, less the pairs already annotated (``done``) and the pairs
    of two identical texts."""
    pool = candidate_pool(emb, k=k, seed=seed)
    ids = items["id"].to_numpy()
    raw = items["text"].to_numpy()
    keys = pair_keys(pd.DataFrame({"id_a": ids[pool["a"]], "id_b": ids[pool["b"]],
                                   "text_a": raw[pool["a"]], "text_b": raw[pool["b"]]}))  # fmt: skip
    keep = [not (k & done) and raw[a] != raw[b] for k, a, b in zip(keys, pool["a"], pool["b"], strict=True)]
    log(
        f"{sum(keep)} candidate pairs not yet annotated "
        f"({sum(not x for x in keep)} already annotated or identical)"
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
    check_outputs_apart({"--corpus": corpus, "--pairs": annotated}, {"--out": out})
    check_writable(out, what="--out")
    items = load_items(corpus, text_field)
    done = set(_known_pairs(load_pairs(annotated))) if annotated else set()
    model = draw_model(scorer, model_store, rerank)
    texts = convert_texts(items["text"].tolist(), conversion)
    pool = unannotated_pool(embed_items(texts, model), items, done, k=k, seed=seed, log=log)
    pool, threshold, source, score = score_pool(pool, texts, model, threshold)
    frame = editor_rows(select_candidates(pool, n, threshold, seed=seed), items, model.name, threshold)
    out = Path(out)
    with atomic_path(out, suffix=".csv") as tmp:
        frame.to_csv(tmp, index=False, encoding="utf-8-sig")
    log(
        f"wrote {len(frame)} pairs to {out} (drawn on the {score} score around {threshold:.4f}, from "
        f"{source}); fill in `score` with 0, 0.25, 0.5, 0.75 or 1 following annotations/GUIDELINES.md"
    )
    return DrawResult(out, len(frame), float(threshold), source, score)


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


def _check_items(frame: pd.DataFrame, rownum: pd.Series, source: str | Path) -> None:
    """No item paired with itself; one text per item id within the file."""
    if "id_a" not in frame.columns or "id_b" not in frame.columns:
        return
    first: dict[str, tuple[str, int]] = {}
    for i, r in enumerate(frame.itertuples(index=False)):
        row = int(rownum[i])
        a, b = str(r.id_a).strip(), str(r.id_b).strip()
        if a and a == b:
            raise InputError(source, row, "id_b", f"item {a!r} is paired with itself")
        for item, text, fld in ((a, r.text_a, "text_a"), (b, r.text_b, "text_b")):
            if not item:
                continue
            seen = first.setdefault(item, (str(text), row))
            if seen[0] != str(text):
                raise InputError(
                    source, row, fld, f"item {item!r} has another text than at row {seen[1]} ({seen[0]!r})"
                )


def validate_filled(frame: pd.DataFrame, source: str | Path, *, skip_blank: bool = False) -> pd.DataFrame:
    """Check an editor's filled file: texts present, pair ids unique, scores one of the five levels, no item
    paired with itself, one text per item id."""
    if "score" not in frame.columns:
        raise InputError(source, None, "score", "missing column")
    frame = frame.reset_index(drop=True)
    if frame.empty:
        raise InputError(source, None, None, "no pairs to merge (the file has a header only)")
    blank = frame["score"].map(_blank)
    if blank.any() and not skip_blank:
        row = int(np.flatnonzero(blank.to_numpy())[0]) + 1
        raise InputError(
            source,
            row,
            "score",
            f"not scored ({int(blank.sum())} blank row(s); score them or pass --skip-blank)",
        )
    if blank.all():
        raise InputError(source, None, "score", f"no scored pairs to merge ({len(frame)} blank row(s))")
    rownum = pd.Series(np.arange(1, len(frame) + 1))
    frame, rownum = frame[~blank].reset_index(drop=True), rownum[~blank.to_numpy()].reset_index(drop=True)
    for i, v in enumerate(frame["score"]):
        try:
            value = float(v)
        except (TypeError, ValueError):
            raise InputError(source, int(rownum[i]), "score", f"score {v!r} is not a number") from None
        if not any(abs(value - lv) < 1e-9 for lv in LEVELS):
            raise InputError(
                source,
                int(rownum[i]),
                "score",
                f"score {v!r} is not one of the rubric's levels 0, 0.25, 0.5, 0.75, 1",
            )
    try:
        checked = validate_pairs(frame, source)
    except InputError as exc:
        row = int(rownum[exc.row - 1]) if exc.row else None
        raise InputError(source, row, exc.field, exc.reason) from None
    _check_items(checked, rownum, source)
    seen: dict[tuple[str, ...], int] = {}
    for i, keys in enumerate(pair_keys(checked)):
        for key in keys:
            if key in seen:
                raise InputError(
                    source,
                    int(rownum[i]),
                    "id_a" if key[0] == "id_a" else "text_a",
                    f"the same pair as row {int(rownum[seen[key]])} appears twice in this file",
                )
            seen[key] = i
    checked.attrs["rows"] = rownum.tolist()
    return checked


def _check_new(new: pd.DataFrame, existing: pd.DataFrame, filled: str | Path, pairs_file: str | Path) -> None:
    """Refuse a pair already annotated (by pair id, item ids or texts) and an item id whose text differs
    from the pair file's."""
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    known_ids = set(existing["pair_id"])
    known = _known_pairs(existing)
    texts: dict[str, str] = {}
    if "id_a" in existing.columns and "id_b" in existing.columns:
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            for item, text in zip(existing[col], existing[tcol], strict=True):
                if not _blank(item):
                    texts.setdefault(str(item).strip(), str(text))
    for i, (r, keys) in enumerate(zip(new.itertuples(index=False), pair_keys(new), strict=True)):
        row = int(rows[i])
        what = f"pair {r.pair_id!r}"
        if hasattr(r, "id_a") and hasattr(r, "id_b"):
            what += f" ({r.id_a} / {r.id_b})"
        if r.pair_id in known_ids:
            raise InputError(filled, row, "pair_id", f"{what} is already annotated in {pairs_file}")
        for key in keys:
            if key in known:
                raise InputError(
                    filled,
                    row,
                    "id_a" if key[0] == "id_a" else "text_a",
                    f"{what} is already annotated in {pairs_file} as {known[key]!r}",
                )
        for col, tcol in (("id_a", "text_a"), ("id_b", "text_b")):
            item = str(getattr(r, col, "") or "").strip()
            text = str(getattr(r, tcol))
            if item in texts and texts[item] != text:
                raise InputError(
                    filled,
                    row,
                    tcol,
                    f"item {item!r} has another text than in {pairs_file} ({texts[item]!r})",
                )


@dataclass
class MergeResult:
    added: int
    skipped_blank: int
    total: int
    split: str
    path: Path


def merge_annotations(
    filled: str | Path,
    pairs_file: str | Path,
    *,
    split: str = "train",
    skip_blank: bool = False,
    log: Callable[[str], None] = say,
) -> MergeResult:
    """Validate ``filled`` and append its pairs to ``pairs_file`` with ``split``.

    The editor's ``stratum`` (prefixed ``editor-loop:``), ``annotator`` and ``notes`` are kept (as columns
    of the pair file, empty for older rows). The
    merged table is validated (no pair twice, none in two splits) before the file is replaced, atomically:
    a refused merge leaves the pair file as it was.
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r} (use {', '.join(SPLITS)})")
    raw = read_pair_table(filled)
    new = validate_filled(raw, filled, skip_blank=skip_blank)
    skipped = len(raw) - len(new)
    existing = load_pairs(pairs_file)
    _check_new(new, existing, filled, pairs_file)
    path = Path(pairs_file)
    original = read_pair_table(pairs_file)  # existing rows are written back exactly as read
    columns = list(original.columns)
    for extra in editor_file.KEPT:
        if extra in new.columns and new[extra].astype(str).str.strip().ne("").any() and extra not in columns:
            original[extra] = ""
            columns.append(extra)
    if table_format(path) == "tsv":  # TSV has no quoting: say which row of the editor's file cannot go in
        rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
        for col in (c for c in columns if c in new.columns):
            bad = new[col].astype(str).str.contains(r"[\t\r\n]", regex=True).to_numpy()
            if bad.any():
                raise InputError(
                    filled,
                    int(rows[int(np.flatnonzero(bad)[0])]),
                    str(col),
                    f"a tab or newline cannot be written to the TSV pair file {pairs_file}",
                )
    add = pd.DataFrame({c: new[c].astype(str) if c in new.columns else "" for c in columns})
    add["split"] = split
    add["score"] = new["score"].map(lambda s: f"{s:g}")
    if "annotations" in columns:
        add["annotations"] = add["score"]
    if "stratum" in columns:
        add["stratum"] = (
            (f"{editor_file.MERGED}:" + new["stratum"].astype(str))
            if "stratum" in new.columns
            else editor_file.MERGED
        )
    if path.suffix == ".parquet":  # one type a column (TSV and CSV cells are all text)
        if pd.api.types.is_numeric_dtype(original["score"]):
            add["score"] = add["score"].astype(float)  # a text score column takes the editor's as text
        for col in columns:
            if col != "score":
                original[col], add[col] = _one_parquet_type(original[col], add[col])
    merged = pd.concat([original, add], ignore_index=True)
    validate_pairs(merged, f"{pairs_file} merged with {filled}")  # before the file is replaced
    write_table(merged, path)
    log(
        f"added {len(add)} pairs to {path} as {split!r} "
        f"({skipped} blank rows skipped); now {len(merged)} pairs"
    )
    return MergeResult(len(add), skipped, len(merged), split, path)
