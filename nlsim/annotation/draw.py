"""Drawing new candidate pairs for the editors to score (``nlsim annotate draw``).

Every corpus item's nearest neighbours (cosine of the chosen encoder, or character-bigram TF-IDF) plus random
pairs make the candidate pool; pairs already annotated (either order, by id or by text) are removed, and
so are the items the pair file knows by id with another text (the merge would refuse a pair of one). When the
model carries a reranker (a fine-tuned model folder, or ``current``: the model store's promoted model), the
pool is scored as the report scores it, on the rerank score, and the threshold is the reranker's; otherwise
on the cosine. Then half the budget (rounded up) goes to the pairs nearest the threshold (where the model is
least sure) and the rest is spread evenly over score strata, what does not divide evenly to the strata
nearest the threshold first. The CSV (the editors' file, :mod:`nlsim.io.editor_file`)
lists the near-threshold pairs first, with an empty ``score`` column for the editor (one of the rubric's
five levels: 0, 0.25, 0.5, 0.75, 1; see ``annotations/GUIDELINES.md``). A pair's id is made from its item
ids: the same in every draw.

Drawing refuses, before any work, an ``--out`` that is not a ``.csv`` name, a folder, or an existing file
that is not an editors' file no editor has begun (an editor's scores, notes and name are never overwritten),
a ``--pairs`` that is an editors' file, and ``-n`` below 1.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer

from nlsim.annotation.validate import READ, is_blank, known_pairs, read_keys, same_text
from nlsim.encoders import load_encoder
from nlsim.errors import ConfigError, InputError
from nlsim.evaluation.calibration import load_calibration, warn_other_conversion
from nlsim.evaluation.metrics import convert_texts
from nlsim.io import editor_file
from nlsim.io.atomic import atomic_path
from nlsim.io.corpus import load_items
from nlsim.io.ownership import check_outputs_apart, check_outside_stores, check_replaceable, check_writable
from nlsim.io.pairs import (
    load_pairs,
    normalise_text,
    pair_keys,
    read_pair_table,
)
from nlsim.io.tables import read_table
from nlsim.models.choice import promoted_in
from nlsim.progress import counted, say, warn
from nlsim.rerank.reranker import Reranker, load_reranker

TFIDF = "tfidf-char2"


CURRENT = "current"


def candidate_pool(
    emb: np.ndarray, k: int = 11, n_random: int = 2000, seed: int = 0, block: int = 1024
) -> pd.DataFrame:
    """Rows ``a < b`` and their cosine: each item's ``k`` nearest neighbours (the item itself never among
    them) + ``n_random`` random pairs. ``k`` is 11 by default: the pool every batch so far was drawn from."""
    n = len(emb)
    found: dict[tuple[int, int], float] = {}
    kk = min(k, n)
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
    """``n`` rows of ``pool``: the ``near_fraction`` nearest ``threshold`` first (a half pair rounded up:
    ``-n 1`` draws the pair nearest the threshold), the rest stratified.

    Strata are equal-count bins of similarity over the pool; each gets an equal share (drawn at random
    within the bin). What does not divide evenly goes to the strata nearest the threshold first (by their
    pair nearest it), as does the shortfall of a stratum with fewer pairs than its share: with fewer pairs
    than strata, the strata drawn from are those where the model is least sure, not the lowest ones. Adds
    ``stratum`` (``near-threshold`` or ``sim-bin-K``).

    Example:
        >>> pool = pd.DataFrame({"a": range(10), "b": range(1, 11), "similarity": np.linspace(0, 0.9, 10)})
        >>> select_candidates(pool, 4, 0.5, strata=2, near_fraction=0.5)["stratum"].tolist()[:2]
        ['near-threshold', 'near-threshold']
        >>> select_candidates(pool, 3, 0.8, strata=3, near_fraction=0.5)["stratum"].tolist()
        ['near-threshold', 'near-threshold', 'sim-bin-3']
    """
    if n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    pool = pool.reset_index(drop=True)
    n = min(n, len(pool))
    n_near = min(n, int(np.floor(n * near_fraction + 0.5)))  # half up: Python's round(0.5) is 0
    dist = (pool["similarity"] - threshold).abs()
    near = dist.sort_values(kind="stable").index[:n_near]
    chosen = pool.loc[near].assign(stratum="near-threshold")
    rest = pool.drop(index=near)
    n_rest = n - n_near
    parts = [chosen]
    if n_rest > 0 and len(rest):
        rng = np.random.default_rng(seed)
        bins = pd.qcut(rest["similarity"].rank(method="first"), q=min(strata, len(rest)), labels=False)
        k = int(bins.max()) + 1
        order = _nearest_first(dist.loc[rest.index].to_numpy(), bins.to_numpy(), k)
        per = np.full(k, n_rest // k)
        per[order[: n_rest - per.sum()]] += 1
        per = _shares_held(per, np.bincount(bins.to_numpy(), minlength=k), order)
        for b, count in enumerate(per):
            idx = rest.index[bins.to_numpy() == b]
            take = rng.choice(idx, size=min(int(count), len(idx)), replace=False)
            parts.append(rest.loc[np.sort(take)].assign(stratum=f"sim-bin-{b + 1}"))
    out = pd.concat(parts)
    return out.reset_index(drop=True)


def _nearest_first(dist: np.ndarray, bins: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` strata (``bins``: each pair's) in the order of their pair nearest the threshold (``dist``:
    each pair's distance from it), the lower stratum first where two are as near.

    >>> _nearest_first(np.array([0.5, 0.4, 0.1, 0.2, 0.3]), np.array([0, 0, 1, 1, 2]), 3).tolist()
    [1, 2, 0]
    """
    nearest = np.full(k, np.inf)
    np.minimum.at(nearest, bins, dist)
    return np.argsort(nearest, kind="stable")


def _shares_held(per: np.ndarray, held: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Each stratum's share ``per`` of the pairs to draw, no more than the stratum ``held``: the shortfall
    of a stratum with fewer pairs than its share (equal-count strata differ by one) goes, one pair a
    stratum in ``order`` (left out: theirs; :func:`select_candidates` gives the nearest the threshold
    first), to those with pairs to spare, so that the draw gives every pair asked that the strata hold.

    >>> _shares_held(np.array([3, 3, 2]), np.array([2, 3, 4])).tolist()
    [2, 3, 3]
    """
    kept = np.minimum(per, held)
    short = int(per.sum() - kept.sum())
    ranked = range(len(kept)) if order is None else [int(b) for b in order]
    while short > 0 and (kept < held).any():
        for b in ranked:
            if short > 0 and kept[b] < held[b]:
                kept[b] += 1
                short -= 1
    return kept


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


def draw_model(
    scorer: str, model_store: str | Path, rerank: bool | None, threads: int | None = None
) -> DrawModel:
    """Load the scorer: TF-IDF, an encoder (with its reranker unless ``rerank`` is False), or ``current``,
    the model store's promoted model; ``threads``: the CPU threads of the encoder and its reranker."""
    if scorer == TFIDF:
        if rerank:
            raise ConfigError(f"--rerank: {TFIDF} has no reranker")
        return DrawModel(TFIDF, TFIDF)
    name, path = scorer, scorer
    if scorer == CURRENT:
        _, promoted = promoted_in(model_store)  # the store checked as a run checks it
        if promoted is None:
            raise ConfigError(
                f"--model current: no model has been promoted in {model_store} yet; name a model or a "
                "fine-tuned model folder"
            )
        name, path = promoted.folder.name, str(promoted.folder)
    encoder = load_encoder(path, threads=threads)
    folder = getattr(encoder, "path", None) or path
    reranker = None if rerank is False else load_reranker(folder, threads=threads)
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
    emb: np.ndarray,
    items: pd.DataFrame,
    done: set[Any],
    *,
    k: int,
    seed: int,
    log: Callable[[str], None],
    texts: list[str] | None = None,
) -> pd.DataFrame:
    """The candidate pool of ``emb``'s neighbours, less what a merge would refuse: the pairs already
    annotated (``done``: keys of :func:`~nlsim.io.pairs.pair_keys`, and :func:`read_keys`), the pairs of two
    texts that are the same once normalised (:func:`~nlsim.io.pairs.normalise_text`), and a second pair with
    the same key as one kept before it (two items of one text, each paired with a third). With ``texts``
    (the items' texts as the model reads them: converted to one script) a text and a pair are compared so
    too: one headline in Traditional and in Simplified characters is no pair to score, nor a pair again."""
    pool = candidate_pool(emb, k=k, seed=seed)
    ids = items["id"].to_numpy()
    raw = items["text"].to_numpy()
    norm = [normalise_text(t) for t in raw]
    read = norm if texts is None else [normalise_text(t) for t in texts]
    keys = pair_keys(pd.DataFrame({"id_a": ids[pool["a"]], "id_b": ids[pool["b"]],
                                   "text_a": raw[pool["a"]], "text_b": raw[pool["b"]]}))  # fmt: skip
    if texts is not None:
        for key, a, b in zip(keys, pool["a"], pool["b"], strict=True):
            key.add((READ, *sorted((read[a], read[b]))))
    taken: set[Any] = set(done)
    keep: list[bool] = []
    for key, a, b in zip(keys, pool["a"], pool["b"], strict=True):
        ok = not (key & taken) and norm[a] != norm[b] and read[a] != read[b]
        keep.append(ok)
        if ok:
            taken |= key
    log(
        f"{sum(keep)} candidate pairs not yet annotated "
        f"({sum(not x for x in keep)} already annotated, repeated or of two equal texts)"
    )
    return pool[keep].reset_index(drop=True)


_DRAWN = "the pairs are drawn around it all the same"


def score_pool(
    pool: pd.DataFrame, texts: list[str], model: DrawModel, threshold: float | None, conversion: str = ""
) -> tuple[pd.DataFrame, float, str, str]:
    """The pool on the score pairs are drawn on (the rerank score with a reranker), the threshold they are
    drawn around and where it comes from (given; the reranker's or the encoder's calibration; else the
    pool's median), and the score's name. A calibrated threshold of texts converted otherwise than
    ``conversion`` (the texts' ``--convert``) is said
    (:func:`nlsim.evaluation.calibration.warn_other_conversion`)."""
    score = "tfidf" if model.encoder is None else "cosine"
    source = "given"
    if model.reranker is not None:
        pool = rerank_pool(pool, texts, model.reranker)
        score = "rerank"
        if threshold is None and model.reranker.threshold is not None:
            threshold, source = model.reranker.threshold, f"rerank threshold stored with {model.name}"
            calibrated = model.reranker.calibration
            if calibrated is not None and "conversion" in calibrated:
                warn_other_conversion(
                    str(calibrated["conversion"]), conversion, f"the threshold of {model.path}", _DRAWN
                )
    elif threshold is None and model.encoder is not None:
        cal = load_calibration(getattr(model.encoder, "path", None) or model.path)
        if cal is not None:
            threshold, source = cal.threshold, f"calibration of {model.name}"
            warn_other_conversion(cal.conversion, conversion, f"the threshold of {model.path}", _DRAWN)
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
    k: int = 11,
    seed: int = 0,
    rerank: bool | None = None,
    model_store: str | Path = "models",
    threads: int | None = None,
    log: Callable[[str], None] = say,
) -> DrawResult:
    """Write ``n`` new candidate pairs from ``corpus`` to the CSV ``out`` for an editor to score.

    ``scorer`` is an encoder name or folder, ``current`` (the promoted model of ``model_store``) or
    ``tfidf-char2``. With a reranker (unless ``rerank`` is False) the pairs are drawn on the rerank score
    around ``threshold`` (default: the reranker's calibrated threshold); otherwise on the cosine around
    ``threshold`` (default: the encoder's ``calibration.json``, else the median of the pool). ``out`` must
    not be one of the inputs (refused before any work). ``threads``: the CPU threads of the encoder and its
    reranker (default: torch's and ONNX Runtime's own choice).
    """
    if n < 1:
        raise ConfigError(f"-n must be at least 1, got {n}")
    if scorer == TFIDF and threads is not None:
        raise ConfigError(f"--threads: {TFIDF} has no threads to set (a sparse TF-IDF)")
    check_outputs_apart({"--corpus": corpus, "--pairs": annotated}, {"--out": out})
    check_outside_stores({"--out": out})
    check_out(out)
    check_writable(out, what="--out")
    check_pairs_file(annotated)
    items = load_items(corpus, text_field)
    if len(items) < 2:
        raise InputError(corpus, None, None, f"{len(items)} item(s): drawing pairs needs at least 2")
    items, done = drawable(items, corpus, annotated, conversion)
    model = draw_model(scorer, model_store, rerank, threads)
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
    pool = unannotated_pool(emb, items, done, k=k, seed=seed, log=log, texts=texts)
    if pool.empty:
        raise InputError(
            corpus,
            None,
            None,
            "no candidate pair left to draw: every pair found is already annotated"
            + (f" in {annotated}" if annotated else "")
            + " or pairs two equal texts; nothing was written",
        )
    pool, threshold, source, score = score_pool(pool, texts, model, threshold, conversion)
    frame = editor_rows(select_candidates(pool, n, threshold, seed=seed), items, model.name, threshold)
    out = Path(out)
    cells = frame.copy()  # opened in a spreadsheet: a text it would run as a formula is kept as text
    for col in ("pair_id", "id_a", "id_b", "text_a", "text_b", "stratum", "model"):
        cells[col] = cells[col].map(lambda v: editor_file.escape(v) if isinstance(v, str) else v)
    with atomic_path(out, suffix=".csv") as tmp, open(tmp, "w", encoding="utf-8-sig", newline="") as fh:
        # text cells quoted, as the page's export writes them: a ";" starts no cell where a spreadsheet splits
        csv.writer(fh, lineterminator="\n").writerow(cells.columns)
        cells.to_csv(fh, index=False, header=False, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    log(
        f"wrote {counted(len(frame), 'pair', 'pairs')} to {out} (drawn on the {score} score around "
        f"{threshold:.4f}, from {source}); fill in `score` with 0, 0.25, 0.5, 0.75 or 1 following "
        "annotations/GUIDELINES.md"
    )
    return DrawResult(out, len(frame), float(threshold), source, score)


def check_pairs_file(annotated: str | Path | None) -> None:
    """Refuse, before the corpus is read, a ``--pairs`` that is an editors' file (a drawn file or a report
    page's export, by its columns) in place of the annotated pair file: the draw would propose again every
    pair the pair file holds (nothing when no ``--pairs`` is given)."""
    if annotated and editor_file.is_editors_header(read_pair_table(annotated).columns):
        raise ConfigError(
            f"--pairs {annotated} is an editors' file (nlsim annotate draw, or a report page's export), not "
            "the annotated pair file: give the pair file, whose pairs are never drawn again (merge the "
            "editors' file into it first: nlsim annotate merge)"
        )


def drawable(
    items: pd.DataFrame, corpus: str | Path, annotated: str | Path | None, conversion: str
) -> tuple[pd.DataFrame, set[Any]]:
    """The corpus ``items`` a draw may pair (:func:`without_changed_items`) and the keys of the pairs the
    pair file ``annotated`` holds (none without one), by id and by text, as written and as the model reads
    them (``conversion``); fewer than two items left is refused."""
    if not annotated:
        return items, set()
    scored = load_pairs(annotated)
    done = set(known_pairs(scored)) | set(read_keys(scored["text_a"], scored["text_b"], conversion))
    items = without_changed_items(items, scored, annotated, corpus)
    if len(items) < 2:
        raise InputError(
            corpus,
            None,
            None,
            f"{len(items)} item(s) whose text is the pair file's, if it knows them: drawing pairs needs at "
            "least 2",
        )
    return items, done


def without_changed_items(
    items: pd.DataFrame, scored: pd.DataFrame, annotated: str | Path, corpus: str | Path, shown: int = 5
) -> pd.DataFrame:
    """``items`` less those the pair file ``annotated`` (read: ``scored``) knows by id with another text
    (a headline edited since the pair was scored, a corpus numbered anew): the merge refuses a pair of
    such an item (one text an item), so none is drawn. White space around a text, and a run of it holding
    a line break, count as none (:func:`~nlsim.annotation.validate.same_text`, as the merge compares). The
    items left out are said (:func:`~nlsim.progress.warn`), each with the pair file's row and field."""
    if "id_a" not in scored.columns or "id_b" not in scored.columns:
        return items
    known: dict[str, tuple[str, int, str]] = {}  # item id: its text in the pair file, the row, the field
    for side in ("a", "b"):
        for row, item, text in zip(scored.index, scored[f"id_{side}"], scored[f"text_{side}"], strict=True):
            if not is_blank(item):
                known.setdefault(str(item).strip(), (str(text), int(row) + 1, f"text_{side}"))
    changed: list[tuple[str, int, str]] = []
    keep: list[bool] = []
    for item, text in zip(items["id"], items["text"], strict=True):
        there = known.get(str(item).strip())
        differs = there is not None and not same_text(str(text), there[0])
        keep.append(not differs)
        if there is not None and differs:
            changed.append((str(item), there[1], there[2]))
    if changed:
        named = [f"row {row} ({field}): {item}" for item, row, field in sorted(changed, key=_by_row)]
        listed = ", ".join(named[:shown]) + (" ..." if len(named) > shown else "")
        warn(
            f"{corpus}: {len(changed)} item(s) have another text than in {annotated} ({listed}) and are left "
            "out of the draw: a merge refuses a pair of an item given another text than the pair file's "
            "(one text an item)"
        )
    return items[keep].reset_index(drop=True)


def _by_row(change: tuple[str, int, str]) -> tuple[int, str]:
    """A left-out item's place in the pair file: its row, then its field."""
    return change[1], change[2]


def _editors_cells(path: Path) -> dict[str, int]:
    """How many cells of the columns only an editor fills (``annotator``, ``notes``) the drawn file ``path``
    holds filled, by column (those filled only)."""
    frame = read_table(path, allowed=("csv",))
    filled = {col: int(sum(1 for v in frame[col] if str(v).strip() != "")) for col in EDITORS_OWN}
    return {col: n for col, n in filled.items() if n}


EDITORS_OWN = ("annotator", "notes")
"""The columns of a drawn file that draw leaves empty and only an editor fills, beside ``score``."""


def check_out(out: str | Path) -> None:
    """Refuse, before any work, a ``--out`` draw must not write: a name not ending in ``.csv``, a folder,
    a file that is not an editors' file nlsim drew, or a drawn file that already holds scores, notes or an
    annotator's name (an editor's work, to be merged first)."""
    path = Path(out)
    if path.suffix.lower() != ".csv":
        raise ConfigError(f"--out {out}: draw writes a CSV file; give a name ending in .csv")
    held = editor_file.scores_held(path) if path.exists() and not path.is_dir() else None
    if held:
        raise ConfigError(
            f"--out {out} already holds {held} score(s) filled in by an editor; refusing to overwrite "
            "them: merge it first (nlsim annotate merge) or choose another --out"
        )
    if held == 0:
        begun = _editors_cells(path)
        if begun:
            cells = ", ".join(f"{n} filled cell(s) of {col}" for col, n in begun.items())
            raise ConfigError(
                f"--out {out} already holds {cells} (an editor's work begun, no score yet); refusing to "
                "overwrite them: have it scored and merged, or choose another --out"
            )
    check_replaceable(
        path, lambda _: held == 0, what="--out", kind="drawn editors' file (nlsim annotate draw)"
    )
