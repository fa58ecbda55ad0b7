"""The editors' annotation loop: draw new candidate pairs to score, then validate and merge the filled file.

Drawing: every corpus item's nearest neighbours (cosine of the chosen encoder, or character-bigram
TF-IDF) plus random pairs make the candidate pool; pairs already annotated (either order, by id or by
text) are removed; then half the budget goes to the pairs nearest the calibrated threshold (where the
model is least sure) and the rest is spread evenly over similarity strata. The CSV lists the
near-threshold pairs first, with an empty ``score`` column for the editor (one of the rubric's five levels:
0, 0.25, 0.5, 0.75, 1; see ``annotations/GUIDELINES.md``).

Merging: the filled CSV is checked row by row (``InputError`` with file/row/field), its pairs must be new,
and they are appended to the pair file with split ``train`` unless told otherwise.

Example:
    >>> frame = pd.DataFrame({"pair_id": ["x1"], "id_a": ["a"], "id_b": ["b"], "text_a": ["甲"],
    ...                       "text_b": ["乙"], "score": ["0.75"]})
    >>> validate_filled(frame, "filled.csv")["score"].tolist()
    [0.75]
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer

from nlsim.encoders import load_encoder
from nlsim.errors import ConfigError, InputError
from nlsim.evaluation.calibration import load_calibration
from nlsim.evaluation.metrics import convert_texts
from nlsim.io.atomic import atomic_path
from nlsim.io.corpus import load_items
from nlsim.io.ownership import check_outputs_apart, check_writable
from nlsim.io.pairs import SPLITS, load_pairs, read_pair_table, validate_pairs
from nlsim.io.tables import write_table
from nlsim.progress import say

LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
KEPT_COLUMNS = ("annotator", "notes")
"""Columns of a filled file that a merge keeps beside the pairs."""
CANDIDATE_COLUMNS = (
    "pair_id",
    "id_a",
    "id_b",
    "text_a",
    "text_b",
    "similarity",
    "stratum",
    "score",
    "annotator",
    "notes",
)


def _pair_keys(frame: pd.DataFrame) -> set[tuple[str, str]]:
    keys: set[tuple[str, str]] = set()
    for col_a, col_b in (("id_a", "id_b"), ("text_a", "text_b")):
        if col_a in frame.columns and col_b in frame.columns:
            for a, b in zip(frame[col_a].astype(str), frame[col_b].astype(str), strict=True):
                keys.add((min(a, b), max(a, b)))
    return keys


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
    path: Path
    n: int
    threshold: float
    threshold_source: str


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
    log: Callable[[str], None] = say,
) -> DrawResult:
    """Write ``n`` new candidate pairs from ``corpus`` to the CSV ``out`` for an editor to score.

    ``scorer`` is an encoder name/folder or ``tfidf-char2``; ``threshold`` defaults to the encoder's
    ``calibration.json``, else the median similarity of the pool. ``out`` must not be one of the inputs
    (refused before any work).
    """
    check_outputs_apart({"--corpus": corpus, "--pairs": annotated}, {"--out": out})
    check_writable(out, what="--out")
    items = load_items(corpus, text_field)
    texts = convert_texts(items["text"].tolist(), conversion)
    if scorer == "tfidf-char2":
        mat = TfidfVectorizer(analyzer="char", ngram_range=(2, 2), sublinear_tf=True).fit_transform(texts)
        emb = mat.astype(np.float32).toarray()
    else:
        emb = load_encoder(scorer).encode(texts, progress=True)
    pool = candidate_pool(emb, k=k, seed=seed)
    done = _pair_keys(load_pairs(annotated)) if annotated else set()
    ids = items["id"].to_numpy()
    raw = items["text"].to_numpy()
    keep = [
        (
            (min(ids[a], ids[b]), max(ids[a], ids[b])) not in done
            and (min(raw[a], raw[b]), max(raw[a], raw[b])) not in done
            and raw[a] != raw[b]
        )
        for a, b in zip(pool["a"], pool["b"], strict=True)
    ]
    pool = pool[keep]
    log(
        f"{len(pool)} candidate pairs not yet annotated "
        f"({sum(not x for x in keep)} already annotated or identical)"
    )
    source = "given"
    if threshold is None:
        cal = load_calibration(scorer) if scorer != "tfidf-char2" else None
        if cal is not None:
            threshold, source = cal.threshold, f"calibration of {scorer}"
        else:
            threshold, source = float(pool["similarity"].median()), "median similarity of the pool"
    picked = select_candidates(pool, n, threshold, seed=seed)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d%H%M")
    frame = pd.DataFrame(
        {
            "pair_id": [f"ed{stamp}-{i + 1:04d}" for i in range(len(picked))],
            "id_a": ids[picked["a"]],
            "id_b": ids[picked["b"]],
            "text_a": raw[picked["a"]],
            "text_b": raw[picked["b"]],
            "similarity": picked["similarity"].round(4).to_numpy(),
            "stratum": picked["stratum"].to_numpy(),
            "score": "",
            "annotator": "",
            "notes": "",
        }
    )
    out = Path(out)
    with atomic_path(out, suffix=".csv") as tmp:
        frame.to_csv(tmp, index=False, encoding="utf-8-sig")
    log(
        f"wrote {len(frame)} pairs to {out} (threshold {threshold:.4f} from {source}); fill in `score` with "
        "0, 0.25, 0.5, 0.75 or 1 following annotations/GUIDELINES.md"
    )
    return DrawResult(out, len(frame), float(threshold), source)


def validate_filled(frame: pd.DataFrame, source: str | Path, *, skip_blank: bool = False) -> pd.DataFrame:
    """Check an editor's filled file: texts present, pair ids unique, scores one of the five levels."""
    if "score" not in frame.columns:
        raise InputError(source, None, "score", "missing column")
    frame = frame.reset_index(drop=True)
    blank = frame["score"].map(
        lambda v: v is None or (isinstance(v, float) and np.isnan(v)) or str(v).strip() == ""
    )
    if blank.any() and not skip_blank:
        row = int(np.flatnonzero(blank.to_numpy())[0]) + 1
        raise InputError(
            source,
            row,
            "score",
            f"not scored ({int(blank.sum())} blank row(s); score them or pass --skip-blank)",
        )
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
    dup = checked.apply(lambda r: (min(r.text_a, r.text_b), max(r.text_a, r.text_b)), axis=1).duplicated()
    if dup.any():
        raise InputError(
            source,
            int(rownum[int(np.flatnonzero(dup.to_numpy())[0])]),
            "text_a",
            "the same pair appears twice in this file",
        )
    return checked


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

    The editor's ``annotator`` and ``notes`` are kept (as columns of the pair file, empty for older rows).
    The merged table is validated (no pair twice, none in two splits) before the file is replaced,
    atomically: a refused merge leaves the pair file as it was.
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r} (use {', '.join(SPLITS)})")
    raw = read_pair_table(filled)
    new = validate_filled(raw, filled, skip_blank=skip_blank)
    skipped = len(raw) - len(new)
    existing = load_pairs(pairs_file)
    known_ids = set(existing["pair_id"])
    known_pairs = _pair_keys(existing)
    for i, r in enumerate(new.itertuples(index=False)):
        if r.pair_id in known_ids:
            raise InputError(filled, i + 1, "pair_id", f"pair id {r.pair_id!r} is already annotated")
        rec = r._asdict()
        for a, b in ((rec.get("id_a"), rec.get("id_b")), (r.text_a, r.text_b)):
            if a is not None and b is not None and (min(str(a), str(b)), max(str(a), str(b))) in known_pairs:
                raise InputError(filled, i + 1, "text_a", f"pair {r.pair_id!r} is already annotated")
    original = read_pair_table(pairs_file)  # existing rows are written back exactly as read
    columns = list(original.columns)
    for extra in KEPT_COLUMNS:
        if extra in new.columns and new[extra].astype(str).str.strip().ne("").any() and extra not in columns:
            original[extra] = ""
            columns.append(extra)
    add = pd.DataFrame({c: new[c].astype(str) if c in new.columns else "" for c in columns})
    add["split"] = split
    add["score"] = new["score"].map(lambda s: f"{s:g}")
    if "annotations" in columns:
        add["annotations"] = add["score"]
    if "stratum" in columns:
        add["stratum"] = (
            ("editor-loop:" + new["stratum"].astype(str)) if "stratum" in new.columns else "editor-loop"
        )
    path = Path(pairs_file)
    if path.suffix == ".parquet":
        add["score"] = add["score"].astype(float)
    merged = pd.concat([original, add], ignore_index=True)
    validate_pairs(merged, f"{pairs_file} merged with {filled}")  # before the file is replaced
    write_table(merged, path)
    log(
        f"added {len(add)} pairs to {path} as {split!r} "
        f"({skipped} blank rows skipped); now {len(merged)} pairs"
    )
    return MergeResult(len(add), skipped, len(merged), split, path)
