"""Judge a written report against the editors' scored pairs: does it put same-story items together?

A *judged* pair is a scored pair (of the chosen split) whose two items are both in the report's corpus; it
is *same story* when its score is at least 0.875 (:data:`nlsim.evaluation.levels.SAME_STORY`). The report
*groups* two items when it puts them in one cluster, which is what an editor reads as "the same story":

- **precision**: of the judged pairs the report groups, the share that are same story;
- **recall**: of the judged same-story pairs, the share the report groups (pooled over all of them);
- **F1**; and **unjudged**: how many of the report's pairs no editor scored.

The same figures counting only the report's pairs themselves (``pairs.parquet``, not whole clusters) are
given as ``pairs_only``.

Example:
    >>> import pandas as pd
    >>> clusters = pd.DataFrame({"cluster_id": ["c-a"], "member_ids": [["a", "b", "c"]]})
    >>> reported = pd.DataFrame({"id_a": ["a", "b"], "id_b": ["b", "c"]})
    >>> judged = pd.DataFrame({"id_a": ["a", "a", "d"], "id_b": ["c", "d", "b"], "score": [1.0, 1.0, 0.5]})
    >>> j = judge_tables(clusters, reported, judged, items={"a", "b", "c", "d"})
    >>> j["precision"], j["recall"], j["unjudged_pairs"]
    (1.0, 0.5, 2)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from nlsim.errors import ConfigError, InputError
from nlsim.evaluation.levels import SAME_STORY
from nlsim.io.corpus import load_corpus
from nlsim.io.pairs import load_pairs


def _key(a: Any, b: Any) -> tuple[str, str]:
    a, b = str(a), str(b)
    return (a, b) if a <= b else (b, a)


def _prf(tp: int, grouped: int, positives: int) -> dict[str, Any]:
    precision = tp / grouped if grouped else float("nan")
    recall = tp / positives if positives else float("nan")
    f1 = (
        2 * precision * recall / (precision + recall)
        if grouped and positives and (precision + recall)
        else 0.0
    )
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def judge_tables(
    clusters: pd.DataFrame,
    reported: pd.DataFrame,
    judged: pd.DataFrame,
    *,
    items: Iterable[str] | None = None,
    same_story: float = SAME_STORY,
) -> dict[str, Any]:
    """The figures of the module docstring from a report's clusters and pairs and scored pairs (``id_a``,
    ``id_b``, ``score``). ``items``: the ids of the report's corpus (default: every judged pair counts)."""
    cluster_of = {
        str(m): str(c)
        for c, ms in zip(clusters["cluster_id"], clusters["member_ids"], strict=True)
        for m in ms
    }
    edges = {_key(a, b) for a, b in zip(reported["id_a"], reported["id_b"], strict=True)}
    known = set(map(str, items)) if items is not None else None
    scores: dict[tuple[str, str], float] = {}
    for a, b, s in zip(judged["id_a"], judged["id_b"], judged["score"], strict=True):
        if known is None or (str(a) in known and str(b) in known):
            scores[_key(a, b)] = float(s)
    positives = sum(s >= same_story - 1e-9 for s in scores.values())
    grouped = [
        k for k in scores if cluster_of.get(k[0]) is not None and cluster_of.get(k[0]) == cluster_of.get(k[1])
    ]
    tp = sum(scores[k] >= same_story - 1e-9 for k in grouped)
    edge_judged = [k for k in edges if k in scores]
    edge_tp = sum(scores[k] >= same_story - 1e-9 for k in edge_judged)
    return {
        **_prf(tp, len(grouped), positives),
        "judged_pairs": len(scores),
        "same_story_pairs": int(positives),
        "grouped_judged_pairs": len(grouped),
        "grouped_same_story_pairs": int(tp),
        "reported_pairs": len(edges),
        "unjudged_pairs": len(edges) - len(edge_judged),
        "pairs_only": {**_prf(edge_tp, len(edge_judged), positives), "judged": len(edge_judged)},
        "same_story_level": same_story,
    }


def judge_report(
    report: str | Path,
    pairs: str | Path,
    *,
    split: str | None = "validation",
    corpus: str | Path | None = None,
) -> dict[str, Any]:
    """Judge the report folder ``report`` against the scored pairs of ``split`` in ``pairs``.

    The report's corpus (``corpus``, default the one its ``run.json`` names) decides which pairs can be
    judged; a daily report is judged on its window's clusters (``window/clusters.parquet``).
    """
    folder = Path(report)
    if not (folder / "pairs.parquet").is_file() or not (folder / "clusters.parquet").is_file():
        raise ConfigError(f"--report {folder}: not a report folder (no pairs.parquet / clusters.parquet)")
    run = (
        json.loads((folder / "run.json").read_text(encoding="utf-8"))
        if (folder / "run.json").is_file()
        else {}
    )
    window = folder / "window" / "clusters.parquet"
    clusters = pd.read_parquet(window if window.is_file() else folder / "clusters.parquet")
    reported = pd.read_parquet(folder / "pairs.parquet")
    judged = load_pairs(pairs, split)
    for col in ("id_a", "id_b"):
        if col not in judged.columns:
            raise InputError(
                pairs, None, col, "the scored pairs need item ids (id_a, id_b) to be matched to a report"
            )
    source = corpus or run.get("corpus")
    items = None
    if source and Path(source).is_file():
        items = load_corpus(source, text_fields=("title",)).frame["id"].astype(str).tolist()
    result = judge_tables(clusters, reported, judged, items=items)
    return {
        "report": str(folder),
        "pairs": str(pairs),
        "split": split or "all",
        "corpus": str(source or ""),
        **result,
    }


def describe(j: dict[str, Any]) -> str:
    """One paragraph for logs and the command line."""
    po = j["pairs_only"]
    return (
        f"same story (score >= {j['same_story_level']}) on {j['judged_pairs']} judged {j['split']} pairs "
        f"({j['same_story_pairs']} same story): precision {j['precision']:.3f}, recall {j['recall']:.3f}, "
        f"F1 {j['f1']:.3f} (items in one cluster); counting the reported pairs only: P {po['precision']:.3f} "
        f"R {po['recall']:.3f} F1 {po['f1']:.3f}; {j['unjudged_pairs']} of {j['reported_pairs']} reported "
        "pairs "
        "were not judged"
    )
