"""Corpora split into days, a tiny deterministic encoder, and comparisons for the incremental-run tests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
FAST_MODEL = "paraphrase-MiniLM-L3-v2"
DAY0 = pd.Timestamp("2005-03-01", tz="UTC")


class HashEncoder:
    """Bag of hashed words, L2-normalised: identical word sets have cosine 1, fast and exact.

    >>> e = HashEncoder().encode(["a b", "b a"], progress=False)
    >>> float(e[0] @ e[1])
    1.0
    """

    model_id = "test:hash-words"
    name = "hash-words"
    path = None

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.fingerprint = hashlib.sha256(f"hash-words-{dim}".encode()).hexdigest()

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = True, **_: Any) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in set(t.lower().split()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def story_corpus() -> pd.DataFrame:
    """Planned clusters for :class:`HashEncoder` at threshold 0.7 over three days.

    Day 1: stories A (a1, a2) and B (b1, b2), and lone items c1, d1. Day 2: A grows (a3); c1 gets a copy
    (c2, a new cluster c-c1). Day 3: x bridges A and B (cosine 0.71 with both): with ``--cluster-rule
    components`` they merge into c-a1 (the default support rule keeps them apart: x1's links are too few
    of the member pairs between A and B); d1 gets a copy; an unrelated item.
    """
    A = "alpha beta gamma delta"
    B = "epsilon zeta eta theta"
    rows = [
        ("a1", A, 1, 1),
        ("b1", B, 1, 2),
        ("a2", A, 1, 3),
        ("b2", B, 1, 4),
        ("c1", "kappa lambda mu nu", 1, 5),
        ("d1", "omicron pi rho sigma", 1, 6),
        ("a3", A, 2, 1),
        ("c2", "kappa lambda mu nu", 2, 2),
        ("e1", "tau upsilon phi chi", 2, 3),
        ("x1", f"{A} {B}", 3, 1),
        ("d2", "omicron pi rho sigma", 3, 2),
        ("f1", "psi omega one two", 3, 3),
    ]
    return pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "title": [r[1] for r in rows],
            "description": [""] * len(rows),
            "source": ["wire"] * len(rows),
            "published_at": [DAY0 + pd.Timedelta(days=r[2] - 1, hours=r[3]) for r in rows],
        }
    )


def bbc_corpus(n_other: int = 120, n_rewrites: int = 25) -> pd.DataFrame:
    """English news from ``data/bbc.parquet``: its real same-title duplicates, other articles, and three
    light rewrites of some stories (so clusters grow across days); publication times spread over 10 days,
    in a shuffled order so that copies of a story fall on different days."""
    f = pd.read_parquet(ROOT / "data" / "bbc.parquet")
    dup = f[f.duplicated("title", keep=False)]
    rest = f.drop(dup.index).sample(n_other, random_state=0)
    c = pd.concat([dup, rest]).sample(frac=1, random_state=1).reset_index(drop=True)
    step = pd.Timedelta(days=10) / len(c)
    c["published_at"] = [DAY0 + i * step for i in range(len(c))]
    c = c[["id", "title", "description", "source", "published_at"]]
    rng = np.random.default_rng(2)
    rows = []
    for _, r in c.sample(n_rewrites, random_state=3).iterrows():
        for j, suffix in enumerate((" (update)", " - latest", ": live report")):
            rows.append(
                {
                    "id": f"{r['id']}-v{j}",
                    "title": r["title"] + suffix,
                    "description": r["description"][:100],
                    "source": "Wire",
                    "published_at": r["published_at"] + pd.Timedelta(hours=int(rng.integers(1, 200))),
                }
            )
    out = pd.concat([c, pd.DataFrame(rows)]).sort_values(["published_at", "id"]).reset_index(drop=True)
    out["published_at"] = pd.to_datetime(out["published_at"], utc=True)
    return out


def run_daily(
    config: Any,
    state: Path,
    *,
    retention_days: float | None = 30.0,
    as_of: Any = None,
    rebuild_state: bool = False,
    encoder: Any = None,
) -> Any:
    """One daily (incremental) run of ``config`` on the state folder ``state``."""
    from nlsim.dedup.run import run_dedup

    daily = config.with_(
        state=str(state), retention_days=retention_days, as_of=as_of, rebuild_state=rebuild_state
    )
    return run_dedup(daily, encoder=encoder)


def split_days(corpus: pd.DataFrame, folder: Path, bounds: list[str]) -> list[Path]:
    """Write one Parquet file per day range (``bounds`` are the dates where a new file starts)."""
    folder.mkdir(parents=True, exist_ok=True)
    edges = [pd.Timestamp(b, tz="UTC") for b in bounds]
    paths = []
    lo = None
    for i, hi in enumerate([*edges, None]):
        part = corpus
        if lo is not None:
            part = part[part["published_at"] >= lo]
        if hi is not None:
            part = part[part["published_at"] < hi]
        p = folder / f"day{i + 1}.parquet"
        part.to_parquet(p, index=False)
        paths.append(p)
        lo = hi
    return paths


def state_assignment(state_dir: Path) -> dict[str, str]:
    """Item id -> cluster id of every clustered item in a state folder."""
    from nlsim.dedup.state import open_state

    items = open_state(state_dir).items
    return {str(i): str(c) for i, c in zip(items["id"], items["cluster_id"], strict=True) if pd.notna(c)}


def state_pairs(state_dir: Path) -> set[tuple[str, str]]:
    from nlsim.dedup.state import open_state

    pairs = open_state(state_dir).pairs
    return {tuple(sorted((str(a), str(b)))) for a, b in zip(pairs["id_a"], pairs["id_b"], strict=True)}


def batch_assignment(clusters: pd.DataFrame) -> dict[str, str]:
    """Item id -> cluster id from a batch report's clusters table."""
    return {str(m): str(r.cluster_id) for r in clusters.itertuples() for m in r.member_ids}


VOLATILE = ("timings_s", "started_at", "finished_at", "state", "corpus", "elapsed_s", "messages")


def report_content(report_dir: Path) -> dict[str, Any]:
    """The comparable content of a report folder: tables and counts, without times and paths."""
    run = json.loads((report_dir / "run.json").read_text())
    pairs = pd.read_parquet(report_dir / "pairs.parquet")
    clusters = pd.read_parquet(report_dir / "clusters.parquet")
    clusters = clusters.assign(
        **{
            c: clusters[c].map(list)
            for c in ("member_ids", "added_ids", "absorbed", "sources")
            if c in clusters
        }
    )
    # how the encoder was run (a path forced by the caller's encoder, or chosen at the first big job) is
    # provenance, not content: the same items and model give the same tables either way
    run.get("model_info", {}).pop("inference", None)
    return {
        "run": {k: v for k, v in run.items() if k not in VOLATILE and k != "files"},
        "pairs": pairs.astype(str).to_dict("records"),
        "clusters": clusters.astype(str).to_dict("records"),
    }


def state_content(state_dir: Path) -> dict[str, Any]:
    """The comparable content of a state: items (without run ids), embeddings, pairs, clusters."""
    from nlsim.dedup.state import open_state

    st = open_state(state_dir)
    items = st.items.drop(columns=["first_seen_run", "embedded_run"]).astype(str)
    return {
        "items": items.to_dict("records"),
        "emb": st.embeddings.round(5).tobytes(),
        "pairs": st.pairs.drop(columns=["run_id"]).astype(str).to_dict("records"),
        "clusters": st.clusters.drop(columns=["created_run", "updated_run"]).astype(str).to_dict("records"),
        "generation": st.generation,
    }


FAULT_THRESHOLD = 0.9
"""Threshold of the kill-test runs (MiniLM-L3 on the BBC stories)."""


def fault_config(corpus: Path, out: Path) -> Any:
    """The ``DedupConfig`` of an in-process run in the kill tests and the reliability benchmark."""
    from nlsim.dedup.config import DedupConfig

    return DedupConfig.of(
        corpus=corpus,
        out=out,
        model=FAST_MODEL,
        convert="none",
        threshold=FAULT_THRESHOLD,
        k=50,
        cache=False,
        progress=False,
    )


def fault_cli_args(corpus: Path, state: Path, out: Path) -> list[str]:
    """The same run as :func:`fault_config`, as an incremental ``nlsim dedup`` command line."""
    import sys

    return [
        sys.executable,
        "-m",
        "nlsim",
        "dedup",
        "--corpus",
        str(corpus),
        "--state",
        str(state),
        "--out",
        str(out),
        "--model",
        FAST_MODEL,
        "--convert",
        "none",
        "--threshold",
        str(FAULT_THRESHOLD),
        "--k",
        "50",
        "--retention-days",
        "0",
        "--no-progress",
    ]
