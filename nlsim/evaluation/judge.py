"""Judge a written report against the editors' scored pairs: does it put same-story items together?

A *judged* pair is a scored pair (of the chosen split) whose two ids are items of the report's corpus
holding the pair's two texts (compared as :func:`nlsim.io.pairs.normalise_text` does, with the item's
title or its embedded text, in either Chinese script); it is *same story* when its score is at least 0.875
(:data:`nlsim.evaluation.levels.SAME_STORY`). A pair whose ids name other texts in the corpus, or items it
does not hold, is not judged and is counted (``mismatched_pairs``, ``pairs_not_in_corpus``); when no
pair belongs to the corpus the pairs are refused (they are another corpus's), as is a report whose corpus
cannot be found (pass ``--corpus``). The report *groups* two items when it puts them in one cluster, which
is what an editor reads as "the same story":

- **precision**: of the judged pairs the report groups, the share that are same story;
- **recall**: of the judged same-story pairs, the share the report groups (pooled over all of them);
- **F1**, with a 95% interval (``f1_ci95``: percentiles of the F1 over 1,000 bootstrap resamples of the
  judged pairs; with a few dozen same-story pairs one or two of them move the F1 by several points). A
  resample in which the report groups none of the pairs drawn, or that draws no same-story pair, has an
  undefined F1, as the judgement would: it is left out, not counted as 0, and how many were
  (``f1_ci95_left_out``) is given and said beside the interval
  (:func:`nlsim.evaluation.interval.defined_f1_interval`); and
  **unjudged**: how many of the report's pairs no editor scored.

A figure without a denominator (no judged pair grouped, no same-story pair) is undefined: ``None``
(``null`` in JSON), and "undefined" in words, never 0. The same figures counting only the report's pairs
themselves (``pairs.parquet``, not whole clusters; for a daily run, every pair of its window, which its
state keeps) are given as ``pairs_only``. A report folder whose ``run.json``, ``clusters.parquet`` or
``pairs.parquet`` cannot be read (truncated, emptied) is refused by name (:class:`~nlsim.errors.StateError`):
write the report again. So is a folder that is not one run's report
(:func:`nlsim.io.report_folder.check_one_run`): a file whose SHA-256 is not the one its ``run.json``
records (copied in from another report), a report a killed run left half moved in, a report a live run is
writing.

Example:
    >>> import pandas as pd
    >>> clusters = pd.DataFrame({"cluster_id": ["c-a"], "member_ids": [["a", "b", "c"]]})
    >>> reported = pd.DataFrame({"id_a": ["a", "b"], "id_b": ["b", "c"]})
    >>> judged = pd.DataFrame({"id_a": ["a", "a", "d"], "id_b": ["c", "d", "b"], "score": [1.0, 1.0, 0.5]})
    >>> j = judge_tables(clusters, reported, judged, items={"a", "b", "c", "d"})
    >>> j["precision"], j["recall"], j["unjudged_pairs"]
    (1.0, 0.5, 2)
    >>> judge_tables(clusters, reported, judged.iloc[[2]])["precision"] is None  # nothing grouped
    True
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from nlsim.conversion import convert
from nlsim.errors import ConfigError, InputError, StateError
from nlsim.evaluation.figures import rates, split_pairs
from nlsim.evaluation.interval import BOOTSTRAP, defined_f1_interval
from nlsim.evaluation.levels import LEVELS, SAME_STORY
from nlsim.io.atomic import readable_sha256
from nlsim.io.corpus import Corpus, load_corpus
from nlsim.io.corpus_schema import FUTURE_TOLERANCE_DAYS
from nlsim.io.pairs import item_id, load_pairs, normalise_text, warn_unsplit
from nlsim.io.records import json_kind, known_fields
from nlsim.io.report_folder import check_one_run
from nlsim.progress import counted, say, warn


@dataclass(frozen=True)
class PairFigures:
    """Precision, recall and F1 counting only the report's own pairs (``pairs.parquet``; a daily run's:
    its window's, which its state keeps), not whole clusters; ``judged``: how many of them an editor
    scored."""

    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    judged: int = 0


SIZE_BANDS: tuple[tuple[int, int | None], ...] = ((2, 2), (3, 4), (5, 9), (10, None))
"""The cluster-size bands of the purity figures (:func:`purity_by_size`): 2, 3-4, 5-9 and 10+ items, and
the two open bands 3+ and 5+ beside them."""
TOPIC_LEVEL = LEVELS["same-topic-entity"]


@dataclass(frozen=True)
class TopicFigures:
    """The report's topic groups judged: of the judged pairs whose two items share a topic group
    (``judged``), how many the editors scored at the topic level (0.75) or above (``topical``) and that
    share (``precision``); and of the judged pairs at that level, the share a topic group holds
    (``coverage``). ``None``: nothing to divide by."""

    judged: int = 0
    topical: int = 0
    precision: float | None = None
    coverage: float | None = None
    level: float = TOPIC_LEVEL


@dataclass(frozen=True)
class SizePurity:
    """The judged pairs whose two items share a cluster of ``band`` items (``2``, ``3-4``, ``5-9``, ``10+``;
    ``5+``: 5 or more), and the share of them that are the same story (``None``: no such pair)."""

    band: str
    judged: int
    same_story: int
    share: float | None


def size_band(size: int) -> str:
    """The name of the band of :data:`SIZE_BANDS` that a cluster of ``size`` items falls in.

    >>> size_band(2), size_band(4), size_band(9), size_band(31)
    ('2', '3-4', '5-9', '10+')
    """
    for lo, hi in SIZE_BANDS:
        if size >= lo and (hi is None or size <= hi):
            return f"{lo}+" if hi is None else (f"{lo}" if lo == hi else f"{lo}-{hi}")
    raise ValueError(f"a cluster holds 2 items or more, not {size}")


def purity_by_size(
    groups: Iterable[Iterable[Any]], scored: Iterable[tuple[Any, Any, float]], same_story: float = SAME_STORY
) -> list[SizePurity]:
    """The purity of a report's clusters by their size: for each band of :data:`SIZE_BANDS`, and for ``5+``,
    the ``scored`` pairs (``(id_a, id_b, score)``) whose two items share one of the ``groups`` (clusters'
    member ids) of that size, and the share of them that are the same story. Large clusters that chain a
    topic or a series show here first: their pairs are the same story less often than a pair's.

    >>> bands = purity_by_size([["a", "b"]], [("a", "b", 1.0), ("a", "c", 1.0)])
    >>> [(p.band, p.judged, p.share) for p in bands]
    [('2', 1, 1.0), ('3-4', 0, None), ('5-9', 0, None), ('10+', 0, None), ('3+', 0, None), ('5+', 0, None)]
    """
    size: dict[str, int] = {}
    cluster: dict[str, int] = {}
    for i, members in enumerate(groups):
        ids = [str(m) for m in members]
        for m in ids:
            size[m], cluster[m] = len(ids), i
    inside: dict[str, list[bool]] = {}
    for a, b, score in scored:
        a, b = str(a), str(b)
        if a in cluster and cluster[a] == cluster.get(b):
            wide = [f"{lo}+" for lo in (3, 5) if size[a] >= lo]
            for band in [size_band(size[a]), *wide]:
                inside.setdefault(band, []).append(float(score) >= same_story - 1e-9)
    bands = [size_band(lo) for lo, _ in SIZE_BANDS] + ["3+", "5+"]
    return [
        SizePurity(
            band,
            len(got := inside.get(band, [])),
            int(sum(got)),
            round(float(np.mean(got)), 4) if got else None,
        )
        for band in bands
    ]


@dataclass(frozen=True)
class Judgement:
    """A report judged at the cluster level against editors' scored pairs: the figures of the module
    docstring, which scored pairs (``pairs``, ``split``) and which report and corpus they were matched to.
    Two items are the same story to the report when it puts them in one cluster."""

    pairs: str
    split: str
    judged_pairs: int
    same_story_pairs: int
    precision: float | None
    recall: float | None
    f1: float | None
    f1_ci95: list[float] | None = None
    unjudged_pairs: int = 0
    f1_ci95_left_out: int | None = None
    """Of the bootstrap resamples, those left out of ``f1_ci95`` (their F1 undefined); ``None``: no
    interval, or not recorded by an older nlsim."""
    reported_pairs: int = 0
    report: str | None = None
    corpus: str | None = None
    scored_pairs: int | None = None
    mismatched_pairs: int | None = None
    pairs_not_in_corpus: int | None = None
    grouped_judged_pairs: int | None = None
    grouped_same_story_pairs: int | None = None
    pairs_only: PairFigures | None = None
    same_story_level: float = SAME_STORY
    purity_by_size: list[SizePurity] | None = None
    topics: TopicFigures | None = None
    pairs_sha256: str | None = None
    """SHA-256 of the scored-pairs file read (a daily run's input key holds it: the file edited under the
    same name is another input); ``None``: not recorded (an older nlsim, or no file to read)."""

    @classmethod
    def of(cls, figures: Mapping[str, Any]) -> Judgement:
        """The judgement read back from JSON (``run.json``, ``pipeline.json``, ``nlsim judge --json``).
        Entries it does not know are left out, so a record written by a newer nlsim still reads; the
        figures an older one did not record (the scored-pair counts, ``pairs_only``) read as ``None``, not
        recorded, never as 0."""
        known = known_fields(cls, figures)
        if isinstance(known.get("pairs_only"), Mapping):
            known["pairs_only"] = PairFigures(**known_fields(PairFigures, known["pairs_only"]))
        if isinstance(known.get("topics"), Mapping):
            known["topics"] = TopicFigures(**known_fields(TopicFigures, known["topics"]))
        if isinstance(known.get("purity_by_size"), list):
            known["purity_by_size"] = [
                band if isinstance(band, SizePurity) else SizePurity(**known_fields(SizePurity, band))
                for band in known["purity_by_size"]
                if isinstance(band, (SizePurity, Mapping))
            ]
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        """The judgement as plain data, for ``run.json``, ``pipeline.json`` and ``nlsim judge --json``."""
        return asdict(self)


def _key(a: Any, b: Any) -> tuple[str, str]:
    a, b = str(a), str(b)
    return (a, b) if a <= b else (b, a)


def _prf(tp: int, grouped: int, positives: int) -> dict[str, float | None]:
    """Precision, recall and F1, each ``None`` when it has nothing to divide by (undefined, not 0)."""
    return rates(tp, grouped, positives, undefined=None).as_dict()


def figure(value: float | None, digits: int = 3) -> str:
    """A figure in words: ``undefined`` when it had nothing to divide by.

    >>> figure(0.5), figure(None)
    ('0.500', 'undefined')
    """
    return "undefined" if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class PairMatch:
    """How the scored pairs meet the report's corpus: those judged (both ids are items holding the pair's
    texts), those whose ids name other texts there, those naming items it does not hold, and where the
    first mismatch is (1-based data row of the pair file, field, id, the corpus's text, the pair's)."""

    scored: int
    judged: pd.DataFrame
    mismatched: int
    not_in_corpus: int
    first_mismatch: tuple[int, str, str, str, str] | None = None


def match_corpus(scored: pd.DataFrame, corpus: pd.DataFrame, rows: list[int]) -> PairMatch:
    """The scored pairs (``id_a``, ``id_b``, ``text_a``, ``text_b``; ``rows``: their rows in the pair file)
    that belong to ``corpus`` (``id``, ``title``, ``text``): each id an item whose title or embedded text
    is the pair's text (:func:`nlsim.io.pairs.normalise_text`). The judged pairs' ids are given as they
    were matched (:func:`nlsim.io.pairs.item_id`: text, without surrounding spaces)."""
    texts: dict[str, set[str]] = {}
    for item, *held in zip(corpus["id"].astype(str), corpus["title"], corpus["text"], strict=True):
        texts[item] = {normalise_text(f) for f in held}
    keep, mismatched, missing, first = [], 0, 0, None
    for row, a, b, ta, tb in zip(
        rows, scored["id_a"], scored["id_b"], scored["text_a"], scored["text_b"], strict=True
    ):
        ends = [("a", item_id(a), ta), ("b", item_id(b), tb)]
        if any(item not in texts for _, item, _ in ends):
            missing += 1
            keep.append(False)
            continue
        wrong = [(side, item, text) for side, item, text in ends if not _holds(texts[item], text)]
        if wrong and first is None:
            side, item, text = wrong[0]
            held = corpus.loc[corpus["id"].astype(str) == item, "title"].iloc[0]
            first = (row, f"text_{side}", item, str(held), str(text))
        mismatched += bool(wrong)
        keep.append(not wrong)
    judged = scored[keep].reset_index(drop=True)
    for col in ("id_a", "id_b"):  # the ids as they were matched (" n1 " names n1): so they meet the clusters'
        judged[col] = judged[col].map(item_id)
    return PairMatch(len(scored), judged, mismatched, missing, first)


def _holds(held: set[str], text: Any) -> bool:
    """Whether an item whose texts are ``held`` (normalised) is the pair member ``text``: the same text, or
    the same in one script (a pair scored in Simplified Chinese on an item kept in Traditional, or the
    other way round: both read as :func:`nlsim.conversion.convert` ``tw2sp`` reads them).

    Example:
        >>> _holds({normalise_text("颱風凱米今晚登陸")}, "台风凯米今晚登陆")
        True
        >>> _holds({normalise_text("颱風凱米今晚登陸")}, "台风凯米明晚登陆")
        False
    """
    mine = normalise_text(text)
    return mine in held or _one_script(mine) in {_one_script(t) for t in held}


@lru_cache(maxsize=1 << 16)
def _one_script(text: str) -> str:
    """``text`` as OpenCC ``tw2sp`` reads it, converted once however many pairs name its item."""
    return convert([text], "tw2sp")[0]


def judge_tables(
    clusters: pd.DataFrame,
    reported: pd.DataFrame,
    judged: pd.DataFrame,
    *,
    items: Iterable[str] | None = None,
    same_story: float = SAME_STORY,
    topics: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The figures of the module docstring from a report's clusters and pairs and scored pairs (``id_a``,
    ``id_b``, ``score``). ``items``: the ids of the report's corpus (default: every judged pair counts).
    ``topics``: the report's topic groups (``member_ids``), judged at the topic level
    (:func:`topic_figures`)."""
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
    keys = list(scores)
    together = set(grouped)
    figures = _prf(tp, len(grouped), positives)
    ci = (
        None  # an undefined F1 has no interval; a resample's undefined F1 is left out, never counted as 0
        if figures["f1"] is None
        else defined_f1_interval(
            np.fromiter((k in together for k in keys), dtype=bool, count=len(keys)),
            np.fromiter((scores[k] >= same_story - 1e-9 for k in keys), dtype=bool, count=len(keys)),
        )
    )
    return {
        **figures,
        "f1_ci95": None if ci is None else ci.ci,
        "f1_ci95_left_out": None if ci is None or ci.ci is None else ci.left_out,
        "judged_pairs": len(scores),
        "same_story_pairs": int(positives),
        "grouped_judged_pairs": len(grouped),
        "grouped_same_story_pairs": int(tp),
        "reported_pairs": len(edges),
        "unjudged_pairs": len(edges) - len(edge_judged),
        "pairs_only": {**_prf(edge_tp, len(edge_judged), positives), "judged": len(edge_judged)},
        "same_story_level": same_story,
        "purity_by_size": purity_by_size(
            clusters["member_ids"], ((a, b, s) for (a, b), s in scores.items()), same_story
        ),
        "topics": None if topics is None else topic_figures(topics["member_ids"], scores),
    }


def topic_figures(groups: Iterable[Iterable[Any]], scores: Mapping[tuple[str, str], float]) -> TopicFigures:
    """The topic groups (``groups``: their member ids) against the judged pairs' ``scores`` (by
    :func:`_key`) at the topic level (:class:`TopicFigures`).

    >>> f = topic_figures([["a", "b", "c"]], {("a", "b"): 0.75, ("a", "c"): 0.5, ("c", "d"): 1.0})
    >>> f.judged, f.topical, f.precision, f.coverage
    (2, 1, 0.5, 0.5)
    """
    topic = {str(m): i for i, members in enumerate(groups) for m in members}
    inside = [k for k in scores if topic.get(k[0]) is not None and topic.get(k[0]) == topic.get(k[1])]
    topical = sum(scores[k] >= TOPIC_LEVEL - 1e-9 for k in inside)
    at_level = sum(s >= TOPIC_LEVEL - 1e-9 for s in scores.values())
    return TopicFigures(
        judged=len(inside),
        topical=int(topical),
        precision=round(topical / len(inside), 4) if inside else None,
        coverage=round(topical / at_level, 4) if at_level else None,
    )


@dataclass(frozen=True)
class Window:
    """What a daily run judged its report on: the items its state kept when the run committed (``id``,
    ``title``, ``text``: the earlier days' with the day's) and every pair among them (``id_a``, ``id_b``),
    read from the state folder ``state`` (``nlsim.dedup.state.run_window``)."""

    run_id: str
    items: pd.DataFrame
    pairs: pd.DataFrame
    state: str


def judge_report(
    report: str | Path,
    pairs: str | Path,
    *,
    split: str | None = "validation",
    corpus: str | Path | None = None,
    window: Window | None = None,
) -> Judgement:
    """Judge the report folder ``report`` against the scored pairs of ``split`` in ``pairs`` (every split
    with ``None`` or ``"all"``).

    The report's corpus (``corpus``, default the one its ``run.json`` names) decides which pairs belong to
    the report (see the module docstring). A daily run's report is judged as that run judged it: on its
    window's clusters (``window/clusters.parquet``), the items and pairs its state kept (``window``, that
    run's); without them it is refused (its corpus file holds the day's items only, and pairs across days
    would count as not in the corpus).
    """
    folder = Path(report)
    if not folder.is_dir():
        what = "is a file, not a report folder" if folder.exists() else "does not exist"
        raise ConfigError(f"--report {folder}: {what}")
    if not (folder / "pairs.parquet").is_file() or not (folder / "clusters.parquet").is_file():
        latest = folder / "latest"  # a daily run's --out: runs/RUN_ID/, latest/ the newest (report.files)
        hint = (
            f"; it holds a daily run's reports: pass --report {latest} (the newest) or one of "
            f"{folder / 'runs'}"
            if (latest / "clusters.parquet").is_file()
            else ""
        )
        raise ConfigError(
            f"--report {folder}: not a report folder (no pairs.parquet / clusters.parquet){hint}"
        )
    run = read_run_record(folder)
    window_file = folder / "window" / "clusters.parquet"
    clusters = read_report_table(
        folder,
        window_file if window_file.is_file() else folder / "clusters.parquet",
        ("cluster_id", "member_ids"),
    )
    reported = read_report_table(folder, folder / "pairs.parquet", ("id_a", "id_b"))
    topic_file = folder / "topics.parquet"  # absent in a report written before topic groups
    topics = (
        read_report_table(folder, topic_file, ("topic_id", "member_ids")) if topic_file.is_file() else None
    )
    run = check_one_run(folder, say)  # every file the one run's: never another run's figures
    daily = run.get("mode") == "incremental"
    if daily or window is not None:
        check_window(folder, run, corpus, window)
    scored = scored_pairs(pairs, split)
    if window is not None:
        judged = judge_items(
            clusters,
            window.pairs,
            scored,
            window.items,
            pairs=pairs,
            split=split,
            corpus=f"{run.get('corpus')} with the window kept in {window.state}",
            none_in_items="judge",
            topics=topics,
        )
        return replace(judged, report=str(folder))
    source = corpus or run.get("corpus")
    if not source or not Path(source).is_file():
        raise ConfigError(
            f"--corpus: the report's corpus {source or '(not named in its run.json)'} cannot be found; pass "
            "--corpus FILE (the scored pairs' ids and texts are checked against it)"
        )
    text_fields = tuple(str(run.get("text_fields") or "title").split(","))
    items = load_report_corpus(source, text_fields, run)
    check_report_corpus(folder, run, items.frame["id"], source)
    frame = items.frame.assign(text=items.texts())
    judged = judge_items(
        clusters, reported, scored, frame, pairs=pairs, split=split, corpus=str(source), topics=topics
    )
    return replace(judged, report=str(folder))


def check_window(
    folder: Path, run: Mapping[str, Any], corpus: str | Path | None, window: Window | None
) -> None:
    """Refuse to judge a daily run's report without the window its run judged (``window``), a window of
    another run, a window with ``--corpus``, and a window given for a batch report."""
    run_id = str(run.get("run_id"))
    if run.get("mode") != "incremental":
        raise ConfigError(
            f"--state: the report {folder} was written by a batch run (nlsim dedup without --state); it is "
            "judged on its corpus, without a state"
        )
    if window is None:
        raise ConfigError(
            f"--report {folder}: a daily run's report (nlsim dedup --state) is judged on the window its "
            f"state kept, the earlier days' items with the day's; its corpus {run.get('corpus')} holds the "
            "day's items only, so pairs across days would count as not in the corpus. Pass --state STATE, "
            f"the state folder run {run_id} committed to"
        )
    if corpus is not None:
        raise ConfigError(
            f"--corpus {corpus}: a daily run's report is judged on the items its state kept (--state), not "
            "on a corpus file; leave --corpus out"
        )
    if window.run_id != run_id:
        raise ConfigError(
            f"--state {window.state}: it holds the window of run {window.run_id}, not of run {run_id} that "
            f"wrote the report {folder} (a state keeps the window of its last run only); judge the latest "
            "run's report, or read the judgement a run records of itself with nlsim dedup --judge-pairs "
            "(its run.json's judge)"
        )


def load_report_corpus(source: str | Path, text_fields: tuple[str, ...], run: Mapping[str, Any]) -> Corpus:
    """The report's corpus ``source`` as the run that wrote the report read it: when that run quarantined
    bad rows (``run.json``'s ``quarantined``, ``nlsim dedup --quarantine``), they are left out again (the
    report holds none of their items), not refused; nothing is written for them. A row dated after the
    run's clock (its ``started_at``, and the day of margin the run gave) is one of them, as it was then."""
    if not run.get("quarantined"):
        return load_corpus(source, text_fields=text_fields)
    started = pd.to_datetime(run.get("started_at"), utc=True, errors="coerce")
    not_after = None if pd.isna(started) else started + pd.Timedelta(days=FUTURE_TOLERANCE_DAYS)
    with tempfile.TemporaryDirectory(prefix="nlsim-judge-") as tmp:
        items = load_corpus(
            source,
            text_fields=text_fields,
            quarantine=Path(tmp) / "quarantine.csv",
            timezone=str(run.get("timezone") or "UTC"),
            not_after=not_after,
        )
    say(
        f"{source}: {len(items.quarantined)} bad row(s) left out, as the run that wrote the report left out "
        f"{run['quarantined']} (its --quarantine)"
    )
    return items


REPORT_IDS = Path("index", "ids.parquet")
"""The ids of every item a batch report embedded, in its saved index (``nlsim.search.index.IDS_FILE``)."""


def check_report_corpus(folder: Path, run: dict[str, Any], ids: pd.Series, source: str | Path) -> None:
    """Refuse a corpus other than the one a batch report was made from (its ``index/ids.parquet`` lists
    every item it embedded): the scored pairs of items the report never saw would count as missed."""
    path = folder / REPORT_IDS
    if run.get("mode") != "batch" or not path.is_file():
        return
    reported = set(read_report_table(folder, path, ("id",))["id"].astype(str))
    given = set(ids.astype(str))
    if reported == given:
        return
    unknown, unseen = len(given - reported), len(reported - given)
    raise ConfigError(
        f"--corpus {source} is not the corpus the report {folder} was made from: "
        f"{unknown:,} of its {counted(len(given), 'item', 'items')} {_are(unknown)} not in the report, "
        f"{unseen:,} of the report's {counted(len(reported), 'item', 'items')} ({path}) {_are(unseen)} not "
        "in it. Pass the corpus the report was made from"
    )


def _are(n: int) -> str:
    """The verb of ``n`` (items): ``is`` for one, ``are`` for any other count."""
    return "is" if n == 1 else "are"


def _damaged(folder: Path, path: Path, what: str) -> StateError:
    """The error for a report file that cannot be read: it names the file and says to write the report
    again (one line: ``what`` is folded onto it)."""
    return StateError(
        f"{path}: {' '.join(what.split())}; the report folder {folder} is damaged (a truncated or emptied "
        "file?): write the report again (run the nlsim dedup or nlsim pipeline that wrote it)"
    )


def read_run_record(folder: Path) -> dict[str, Any]:
    """The run record (``run.json``) of the report folder ``folder`` as plain data, ``{}`` without one; a
    :class:`StateError` when it is not a JSON object (:func:`_damaged`)."""
    path = folder / "run.json"
    if not path.is_file():
        return {}
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError: a truncated or overwritten file
        raise _damaged(folder, path, f"not valid JSON ({exc})") from None
    if not isinstance(run, dict):
        raise _damaged(folder, path, f"not a run record (a JSON {json_kind(run)}, not an object)")
    return run


def read_report_table(folder: Path, path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """The Parquet file ``path`` of the report folder ``folder``, which must hold ``columns``; a
    :class:`StateError` when it cannot be read or lacks one (:func:`_damaged`)."""
    try:
        frame = pd.read_parquet(path)
    except (ValueError, pa.ArrowException) as exc:  # ArrowInvalid: a truncated, empty or foreign file
        raise _damaged(folder, path, f"cannot be read as Parquet ({exc})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise _damaged(folder, path, f"has no column {', '.join(missing)}")
    return frame


def judge_items(
    clusters: pd.DataFrame,
    reported: pd.DataFrame,
    scored: pd.DataFrame,
    items: pd.DataFrame,
    *,
    pairs: str | Path,
    split: str | None,
    corpus: str,
    none_in_items: Literal["refuse", "judge"] = "refuse",
    topics: pd.DataFrame | None = None,
) -> Judgement:
    """Judge a report's ``clusters`` and ``reported`` pairs against the ``scored`` pairs (of ``split`` in the
    file ``pairs``; every split with ``None`` or ``"all"``) that belong to its ``items`` (``id`` and
    ``text`` of the report's corpus, named ``corpus``); refused by name when none belongs.
    ``none_in_items="judge"``: when none belongs, a judgement of 0 judged pairs instead, the pairs left
    out counted (a daily run's window keeps only recent items, and an item whose headline was corrected
    holds another text than the one scored)."""
    split = None if split == "all" else split
    match = match_corpus(scored, items, [int(i) + 1 for i in scored.index])
    if none_in_items == "refuse":
        _refuse_none_belong(match, scored, items, pairs=pairs, split=split, corpus=corpus)
    figures = judge_tables(clusters, reported, match.judged, topics=topics)
    pairs_only = PairFigures(**figures.pop("pairs_only"))
    judged = Judgement(
        pairs=str(pairs),
        pairs_sha256=readable_sha256(pairs),
        split=split or "all",
        corpus=corpus,
        scored_pairs=match.scored,
        mismatched_pairs=match.mismatched,
        pairs_not_in_corpus=match.not_in_corpus,
        pairs_only=pairs_only,
        **figures,
    )
    said = nothing_judged(judged)
    if said is not None:  # a window that holds none of them: judged on 0 pairs, and told
        warn(said)
    return judged


def nothing_judged(j: Judgement) -> str | None:
    """The warning of a judgement that could judge no scored pair (a daily run's window that holds none of
    them, with their texts), in the words a batch run is refused in; ``None`` when some pair was judged.

    Example:
        >>> j = Judgement(pairs="p.tsv", split="validation", judged_pairs=0, same_story_pairs=0,
        ...     precision=None, recall=None, f1=None, corpus="day.csv with the window kept in st",
        ...     scored_pairs=4, mismatched_pairs=0, pairs_not_in_corpus=4)
        >>> print(nothing_judged(j))  # doctest: +ELLIPSIS
        --judge-pairs p.tsv: no pair could be judged: none of the 4 scored validation pairs names two ...
    """
    if j.judged_pairs or not j.scored_pairs:
        return None
    name = split_pairs(None if j.split == "all" else j.split)
    if j.mismatched_pairs:
        why = (
            f"belongs to this run's window ({j.corpus}): {j.mismatched_pairs} name items whose text there is "
            f"another one (a corrected headline), {j.pairs_not_in_corpus} name items it does not hold"
        )
    else:
        why = (
            f"names two items of this run's window ({j.corpus}): their ids are not among its items "
            "(retention dropped them, or the pairs are of another corpus)"
        )
    return (
        f"--judge-pairs {j.pairs}: no pair could be judged: none of the {j.scored_pairs} scored {name} "
        f"{why}; the figures are undefined, and the run goes on"
    )


def _zeros_lost(scored: pd.DataFrame, items: pd.DataFrame) -> str:
    """What the refusal of pairs none of which names two items adds when their ids are the corpus's ids
    of digits without their leading zeros (``1`` for ``001``: a spreadsheet saved them as numbers), else
    ``""``.

    >>> _zeros_lost(pd.DataFrame({"id_a": ["7"], "id_b": ["8"]}), pd.DataFrame({"id": ["007", "008"]}))[:47]
    "; '7' is the corpus's '007' without its leading"
    """
    held = set(items["id"].astype(str))
    padded = {i.lstrip("0") or "0": i for i in held if i.isdigit() and i.startswith("0")}
    if not padded or "id_a" not in scored.columns or "id_b" not in scored.columns:
        return ""
    ids = (item_id(v) for col in ("id_a", "id_b") for v in scored[col])
    lost = next((i for i in ids if i in padded and i not in held), None)
    if lost is None:
        return ""
    return (
        f"; {lost!r} is the corpus's {padded[lost]!r} without its leading zeros: a spreadsheet saved the "
        "pair file's ids as numbers; write them as the corpus does (open the file with the id columns as "
        "Text)"
    )


def scored_pairs(pairs: str | Path, split: str | None) -> pd.DataFrame:
    """The scored pairs of ``split`` in the file ``pairs`` (every split with ``None`` or ``"all"``), with
    item ids to match."""
    split = None if split == "all" else split
    every = load_pairs(pairs)
    scored = every[every["split"] == split] if split is not None else every
    if scored.empty:
        load_pairs(pairs, split)  # says why: an unknown split, or none of its pairs in the file
    if split is not None:
        warn_unsplit(every, split, pairs)
    for col in ("id_a", "id_b"):
        if col not in scored.columns:
            raise InputError(
                pairs, None, col, "the scored pairs need item ids (id_a, id_b) to be matched to a report"
            )
        for k, value in enumerate(scored[col]):  # 101.0 would name no item: a corpus id is text or an integer
            if isinstance(value, (float, np.floating)) and not np.isnan(value):
                raise InputError(
                    pairs,
                    int(scored.index[k]) + 1,
                    col,
                    f"item id {value!r} is a float: ids must be text or integers, as a corpus's are",
                )
    id_a, id_b = (scored[col].map(item_id).to_numpy() for col in ("id_a", "id_b"))
    empty = (id_a == "") | (id_b == "")
    same = ~empty & (id_a == id_b)
    if same.any():  # an item paired with itself says nothing about the report
        k = int(np.flatnonzero(same)[0])
        row = int(scored.index[k]) + 1  # load_pairs numbers the file's rows from 0
        raise InputError(pairs, row, "id_b", f"item {id_a[k]!r} is paired with itself")
    if len(scored) and empty.all():  # some without ids are counted as not in the corpus, all is a wrong file
        raise InputError(
            pairs,
            None,
            "id_a",
            f"none of the {len(scored)} scored {split_pairs(split)} has both item ids (id_a, id_b): a "
            "report is judged on the pairs whose ids name its items",
        )
    return scored


def interval(ci: list[float] | None, left_out: int | None = None) -> str:
    """`` [lo, hi] 95%`` for a figure's interval ('' without one), with the resamples it leaves out.

    >>> print(interval([0.3333, 1.0], 339))  # doctest: +NORMALIZE_WHITESPACE
    [0.333, 1.000] 95% (over the 661 of 1,000 resamples whose F1 is defined: 339 group none of the pairs
    they draw or draw no same-story pair)
    """
    if not ci:
        return ""
    if not left_out:
        return f" [{ci[0]:.3f}, {ci[1]:.3f}] 95%"
    return (
        f" [{ci[0]:.3f}, {ci[1]:.3f}] 95% (over the {BOOTSTRAP - left_out:,} of {BOOTSTRAP:,} resamples "
        f"whose F1 is defined: {left_out:,} group none of the pairs they draw or draw no same-story pair)"
    )


def headline(j: Judgement) -> str:
    """The judgement in one line for the chain's last words: precision, recall, F1 and the purity of the
    clusters of 5 or more items (where a report chains a topic or a series).

    >>> j = Judgement("p.tsv", "validation", 715, 85, 0.702, 0.553, 0.618,
    ...               purity_by_size=[SizePurity("5+", 19, 14, 0.7368)])
    >>> print(headline(j))  # doctest: +NORMALIZE_WHITESPACE
    same story on the validation pairs: precision 0.702, recall 0.553, F1 0.618;
    inside clusters of 5+ items 0.74 (19 judged pairs)
    """
    large = next((p for p in j.purity_by_size or [] if p.band == "5+"), None)
    text = (
        f"same story on the {split_pairs(j.split)}: precision {figure(j.precision)}, "
        f"recall {figure(j.recall)}, F1 {figure(j.f1)}"
    )
    if large is not None:
        text += f"; inside clusters of 5+ items {figure(large.share, 2)} ({large.judged} judged pairs)"
    if j.topics is not None:
        text += (
            f"; inside topic groups {figure(j.topics.precision, 2)} at the topic level or above "
            f"({j.topics.judged} judged pairs)"
        )
    return text


def describe(j: Judgement) -> str:
    """One paragraph for logs and the command line."""
    po = j.pairs_only
    text = (
        f"same story (score >= {j.same_story_level}) on {j.judged_pairs} judged {split_pairs(j.split)} "
        f"({j.same_story_pairs} same story): precision {figure(j.precision)}, recall "
        f"{figure(j.recall)}, F1 {figure(j.f1)}{interval(j.f1_ci95, j.f1_ci95_left_out)} "
        "(items in one cluster); "
    )
    if po is not None:  # not recorded by an older nlsim
        text += (
            f"counting the reported pairs only: P {figure(po.precision)} R {figure(po.recall)} "
            f"F1 {figure(po.f1)}; "
        )
    text += f"{j.unjudged_pairs} of {j.reported_pairs} reported pairs were not judged"
    if j.purity_by_size:  # not recorded by an older nlsim
        text += "; the same story inside clusters of " + ", ".join(
            f"{p.band} items {figure(p.share, 2)} ({p.judged})" for p in j.purity_by_size
        )
    if j.topics is not None:
        t = j.topics
        text += (
            f"; {t.judged} judged pairs inside topic groups, {figure(t.precision, 2)} of them at the topic "
            f"level ({t.level}) or above, holding {figure(t.coverage, 2)} of the pairs at that level"
        )
    left = (j.mismatched_pairs or 0) + (j.pairs_not_in_corpus or 0)
    if left:
        text += (
            f"; {left} of the {j.scored_pairs} scored {split_pairs(j.split)} were not judged "
            f"({j.mismatched_pairs} name items whose text in the corpus is another one, "
            f"{j.pairs_not_in_corpus} name items not in it)"
        )
    if j.scored_pairs is not None:  # not recorded by an older nlsim
        repeated = j.scored_pairs - left - j.judged_pairs
        if repeated > 0:  # one pair in two rows (the same ids, in either order): judged once
            text += (
                f"; {repeated} of the {j.scored_pairs} scored {split_pairs(j.split, 'rows')} repeat a pair, "
                "counted once"
            )
    return text


def belongs_to_corpus(
    scored: pd.DataFrame, items: pd.DataFrame, *, pairs: str | Path, split: str | None, corpus: str
) -> None:
    """Refuse (:class:`InputError`, as :func:`judge_items` does) ``scored`` pairs none of which belongs to
    the report's ``items`` (``id``, ``title``, ``text``): a batch run checks it once its corpus is loaded,
    before the expensive stages, rather than at its judge stage."""
    split = None if split == "all" else split
    match = match_corpus(scored, items, [int(i) + 1 for i in scored.index])
    _refuse_none_belong(match, scored, items, pairs=pairs, split=split, corpus=corpus)


def _refuse_none_belong(
    match: PairMatch,
    scored: pd.DataFrame,
    items: pd.DataFrame,
    *,
    pairs: str | Path,
    split: str | None,
    corpus: str,
) -> None:
    """The refusal of scored pairs none of which belongs to the report's corpus (none when one does)."""
    if not match.judged.empty:
        return
    name = split_pairs(split)
    if match.first_mismatch is not None:
        row, field, item, held, text = match.first_mismatch
        raise InputError(
            pairs,
            row,
            field,
            f"none of the {match.scored} scored {name} belongs to the report's corpus {corpus}: "
            f"{match.mismatched} name items whose text there is another one (e.g. {item!r} is "
            f"{held[:60]!r} there, {text[:60]!r} here), {match.not_in_corpus} name items it does not "
            "hold",
        )
    raise InputError(
        pairs,
        None,
        "id_a",
        f"none of the {match.scored} scored {name} names two items of the report's corpus {corpus}: "
        "their ids are not in the report's corpus" + _zeros_lost(scored, items),
    )
