"""Silver pairs: unlabelled corpus pairs scored by a teacher, to widen a few hundred gold training pairs.

Augmented SBERT (Thakur et al., 2021) in three steps, all on training data only:

1. **Pool**: the corpus texts, minus every text of a validation or test pair (so the held-out splits stay
   unseen) and minus duplicates.
2. **Draw** (:func:`draw_silver_pairs`): per anchor text, one of its 3 nearest neighbours and one of
   neighbours 4-10 under the gold-trained bi-encoder, one of its 10 nearest under character-bigram
   TF-IDF, one from its category (when the corpus has one) and one at random: the same mix of lexical,
   topical and random pairs the gold set was drawn from. Pairs already annotated are dropped.
3. **Label** (:func:`label_silver_pairs`): the teacher's score. ``"ensemble"`` (default) is the mean of the
   cross-encoder's probability and the bi-encoder's cosine mapped linearly onto the score scale (the map
   fitted on the gold training pairs); ``"cross-encoder"`` uses the cross-encoder alone.

Example:
    >>> import numpy as np
    >>> texts = ["股市大跌", "股市大涨", "球队夺冠", "球队输球", "天气晴朗", "明天下雨"]
    >>> emb = np.eye(6, dtype=np.float32)
    >>> pairs = draw_silver_pairs(texts, emb, SilverConfig(anchors=3, seed=1))
    >>> bool((pairs["a"] < pairs["b"]).all()), len(pairs) > 0
    (True, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer

from nlsim.errors import ConfigError
from nlsim.evaluation.metrics import convert_texts, pair_similarities
from nlsim.io.atomic import file_sha256
from nlsim.io.corpus import load_items
from nlsim.progress import say
from nlsim.training.bi_encoder import load_base, train_encoder
from nlsim.training.config import TEACHERS, FinetuneConfig, SilverConfig
from nlsim.training.cross_encoder import train_cross_encoder
from nlsim.training.data import PreparedPairs
from nlsim.training.reranker import cosine_to_score_map


def silver_pool(
    texts: Sequence[str], held_out: set[str], categories: Sequence[str] | None = None
) -> pd.DataFrame:
    """Distinct corpus ``text`` (with ``category`` when given) not in ``held_out``, in corpus order."""
    frame = pd.DataFrame({"text": list(texts)})
    if categories is not None:
        frame["category"] = list(categories)
    frame = frame[~frame["text"].isin(held_out)].drop_duplicates("text")
    return frame.reset_index(drop=True)


def _top(sims: np.ndarray, anchor: int, k: int) -> np.ndarray:
    sims = sims.copy()
    sims[anchor] = -np.inf
    k = min(k, len(sims) - 1)
    top = np.argpartition(-sims, k - 1)[:k]
    return top[np.argsort(-sims[top], kind="stable")]


def draw_silver_pairs(
    texts: Sequence[str],
    emb: np.ndarray,
    cfg: SilverConfig,
    categories: Sequence[str] | None = None,
    exclude: set[tuple[str, str]] | None = None,
) -> pd.DataFrame:
    """Index pairs ``a < b`` into ``texts`` with how each was drawn (``source``), see the module doc.

    ``emb`` are L2-normalised bi-encoder vectors of ``texts``; ``exclude`` holds text pairs
    ``(min, max)`` that are already annotated.
    """
    cfg.check()
    n = len(texts)
    if n < 3:
        raise ConfigError(f"silver pool has {n} texts; at least 3 are needed")
    rng = np.random.default_rng(cfg.seed)
    lexical = TfidfVectorizer(analyzer="char", ngram_range=(2, 2), sublinear_tf=True).fit_transform(texts)
    cats = np.asarray(categories) if categories is not None else None
    exclude = exclude or set()
    found: dict[tuple[int, int], str] = {}

    def add(i: int, j: int, source: str) -> None:
        if i == j:
            return
        a, b = min(i, j), max(i, j)
        if (min(texts[a], texts[b]), max(texts[a], texts[b])) in exclude:
            return
        found.setdefault((a, b), source)

    for i in rng.choice(n, size=min(cfg.anchors, n), replace=False).tolist():
        semantic = _top(emb @ emb[i], i, 10)
        add(i, int(semantic[rng.integers(0, min(3, len(semantic)))]), "semantic-near")
        if len(semantic) > 3:
            add(i, int(semantic[rng.integers(3, len(semantic))]), "semantic-mid")
        lex = _top((lexical @ lexical[i].T).toarray().ravel(), i, 10)
        add(i, int(lex[rng.integers(0, len(lex))]), "lexical")
        if cats is not None:
            same = np.flatnonzero(cats == cats[i])
            add(i, int(rng.choice(same)), "same-category")
        add(i, int(rng.integers(0, n)), "random")
    rows = sorted(found)
    return pd.DataFrame(
        {"a": [a for a, _ in rows], "b": [b for _, b in rows], "source": [found[r] for r in rows]}
    )


def label_silver_pairs(
    cross_scores: np.ndarray,
    cosines: np.ndarray | None,
    teacher: str,
    cos_map: tuple[float, float] | None = None,
) -> np.ndarray:
    """The silver score in [0, 1] of each pair (see the module doc for the two teachers)."""
    cross_scores = np.asarray(cross_scores, dtype=np.float64)
    if teacher == "cross-encoder":
        out = cross_scores
    elif teacher == "ensemble":
        if cosines is None or cos_map is None:
            raise ConfigError("the ensemble teacher needs the bi-encoder cosines and their score map")
        mapped = cos_map[0] * np.asarray(cosines, dtype=np.float64) + cos_map[1]
        out = 0.5 * cross_scores + 0.5 * mapped
    else:
        raise ConfigError(f"unknown teacher {teacher!r} (use {', '.join(TEACHERS)})")
    return np.clip(out, 0.0, 1.0).round(4)


@dataclass
class SilverPairs:
    """The labelled silver pairs (converted text, ``split="train"``) and how they were made."""

    pairs: pd.DataFrame
    corpus: str
    corpus_sha256: str
    pool_size: int
    teacher: str
    cos_map: tuple[float, float]
    teacher_bi_encoder: dict
    cross_encoder_history: list[dict]
    seconds: float

    def summary(self) -> dict:
        """What goes in ``training.json`` and the card."""
        return {
            "corpus": self.corpus,
            "corpus_sha256": self.corpus_sha256,
            "pool_size": self.pool_size,
            "pairs": len(self.pairs),
            "by_source": {str(k): int(v) for k, v in self.pairs["stratum"].value_counts().items()},
            "score_mean": round(float(self.pairs["score"].mean()), 4),
            "teacher": self.teacher,
            "cosine_map": list(self.cos_map),
            "teacher_bi_encoder_best": self.teacher_bi_encoder,
            "cross_encoder_history": self.cross_encoder_history,
            "seconds": round(self.seconds, 1),
        }


def make_silver_pairs(
    data: PreparedPairs, cfg: FinetuneConfig, log: Callable[[str], None] = say
) -> SilverPairs:
    """Train the teachers on ``data.train`` (gold), draw silver pairs from ``cfg.silver.corpus``, label them.

    ``data`` is :class:`nlsim.training.PreparedPairs` (converted text), ``cfg`` a
    :class:`nlsim.training.FinetuneConfig`. The teachers are a bi-encoder trained with ``cfg``'s own
    settings and a cross-encoder (``cfg.cross_encoder``); both pick their best epoch on validation.
    """
    t0 = time.perf_counter()
    items = load_items(cfg.silver.corpus, cfg.silver.text_field)
    texts = convert_texts(items["text"].tolist(), cfg.data.conversion)
    categories = items["category"].tolist() if "category" in items.columns else None
    pool = silver_pool(texts, data.held_out, categories)
    log(f"silver pool: {len(pool)} of {len(items)} corpus texts (validation/test texts left out)")

    log("teacher 1/2: bi-encoder on the gold training pairs")
    teacher_cfg = cfg.with_(log_every=0, progress_file=None)
    bi = load_base(teacher_cfg)
    bi_run = train_encoder(bi, data.train, data.validation, teacher_cfg, log=log)
    log("teacher 2/2: cross-encoder on the gold training pairs")
    trained = train_cross_encoder(cfg.model, data.train, data.validation, cfg.cross_encoder_config(), log=log)
    ce, ce_history = trained.ce, trained.history

    emb = bi.encode(pool["text"].tolist(), progress=True)
    categories = pool["category"].tolist() if "category" in pool.columns else None
    drawn = draw_silver_pairs(pool["text"].tolist(), emb, cfg.silver_config(), categories, data.annotated)
    text_a = pool["text"].to_numpy()[drawn["a"].to_numpy()].tolist()
    text_b = pool["text"].to_numpy()[drawn["b"].to_numpy()].tolist()
    log(f"labelling {len(drawn)} silver pairs with the {cfg.silver.teacher} teacher")
    cross = ce.predict(text_a, text_b, progress=True)
    cosines = (emb[drawn["a"].to_numpy()] * emb[drawn["b"].to_numpy()]).sum(axis=1)
    cos_map = cosine_to_score_map(pair_similarities(bi, data.train), data.train["score"].to_numpy())
    scores = label_silver_pairs(cross, cosines, cfg.silver.teacher, cos_map)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"silver-{i:05d}" for i in range(len(drawn))],
            "split": "train",
            "text_a": text_a,
            "text_b": text_b,
            "score": scores,
            "stratum": "silver:" + drawn["source"],
            "cross_encoder": cross.round(4),
            "bi_encoder_cosine": cosines.astype(np.float64).round(4),
        }
    )
    return SilverPairs(
        pairs=pairs,
        corpus=str(cfg.silver.corpus),
        corpus_sha256=file_sha256(cfg.silver.corpus),
        pool_size=len(pool),
        teacher=cfg.silver.teacher,
        cos_map=cos_map,
        teacher_bi_encoder={k: bi_run["best"][k] for k in ("epoch", "step", "spearman")},
        cross_encoder_history=ce_history,
        seconds=time.perf_counter() - t0,
    )
