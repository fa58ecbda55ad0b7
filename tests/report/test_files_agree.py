"""The report's files agree with each other and keep the product's promises, on small random corpora.

Each seed makes a corpus of English and Chinese headlines (:func:`random_corpus`): exact copies that differ
only in what the copy key leaves aside (character width, white space, punctuation, case, Traditional or
Simplified script of one headline, a thousands separator), near copies, unrelated items, items with and
without ``published_at``, and for some seeds an editors' "not the same story" between two copies and
between two near copies. Every report of a run, batch or daily, is read back whole
(:func:`check_report`): the pairs link items of one cluster; ``clusters.parquet``, ``members.csv``,
``stories.json``, ``report.xlsx`` and the page's data list the same clusters, members and representatives;
the counts of ``run.json`` and ``summary.md`` are those of the tables; exact copies end in one cluster
unless a verdict parts them, and a parted pair is shown as docs/report.md says. The same items run day by
day with ``--state`` and ``--date`` end with the clusters of one batch run over them (docs/operations.md:
the window covers the corpus, each item has fewer than ``k`` neighbours, the days come in order).
"""

from __future__ import annotations

import csv
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from incremental_helpers import FAST_MODEL

from nlsim.clusters.copies import copy_key
from nlsim.conversion import convert
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup

ENGLISH = (
    "Typhoon Gaemi makes landfall tonight as offices and schools close",
    "Central bank holds interest rates steady amid inflation worries",
    "Chipmaker reports record revenue on strong demand for servers",
    "Heavy rain floods the coast road and strands hundreds of drivers",
    "Football club signs young striker from rival team",
    "City council approves new budget for rail and road repairs",
    "Scientists discover a new species of frog in the mountains",
    "Airline cancels 3,000 flights after a computer failure",
    "Museum reopens after long renovation with modern art show",
    "Electric car maker cuts prices again in price war",
)
CHINESE = (  # Traditional (Taiwan); the Simplified copies are OpenCC's tw2sp of them
    "颱風凱米今晚登陸 全台停班停課",
    "央行宣布利率維持不變 通膨壓力仍在",
    "台積電第二季營收創新高 人工智慧需求強勁",
    "豪雨造成沿海公路淹水 數百輛車受困",
    "職棒球隊簽下年輕強打 補強陣容",
    "市議會通過新年度預算 鐵路與道路維修",
    "科學家在高山發現新種青蛙",
    "航空公司電腦故障 取消3,000個航班",
    "博物館整修後重新開放 推出現代藝術展",
    "電動車廠再度降價 價格戰升溫",
)
NEAR_EN = ("{} - update", "Watch: {}", "{}, officials say", "{} (live report)")
NEAR_ZH = ("{}（更新）", "影音：{}", "{} 官方證實", "最新消息 {}")


def fullwidth(text: str) -> str:
    """ASCII letters, digits and marks as their full-width forms, spaces as ideographic spaces."""
    return "".join(
        "\u3000" if ch == " " else chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text
    )


def copy_of(text: str, rng: random.Random) -> str:
    """``text`` changed only in what the copy key leaves aside (one to three changes)."""
    changes = [
        fullwidth,
        lambda t: f"  {t} ",
        lambda t: t.replace(" ", "  "),
        lambda t: t.replace(" ", ", "),
        lambda t: f"「{t}」",
        lambda t: f"“{t}”!",
        lambda t: t + "。",
        str.upper,
        lambda t: t.replace(",", ""),  # a thousands separator: 3,000 is 3000
        lambda t: convert([t], "tw2sp")[0],  # the Simplified script of a Traditional headline
    ]
    for change in rng.sample(changes, rng.randint(1, 3)):
        text = change(text)
    return text


@dataclass
class Corpus:
    """A random corpus: its items (ids ``s<story>``, ``s<story>c<n>`` for a copy, ``s<story>n<n>`` for a near
    copy) and the editors' verdicts."""

    frame: pd.DataFrame
    verdicts: list[tuple[str, str]] = field(default_factory=list)
    """Pairs of item ids an editor marked "not the same story" (training pairs, score 0)."""


def random_corpus(seed: int) -> Corpus:
    """20-40 items over three days in UTC (undated ones last), built from the two headline lists."""
    rng = random.Random(seed)
    start = pd.Timestamp("2024-07-24", tz="UTC")
    rows: list[tuple[str, str]] = []
    copies: list[list[str]] = []
    nears: list[tuple[str, str]] = []
    stories = rng.sample(ENGLISH, rng.randint(3, 6)) + rng.sample(CHINESE, rng.randint(3, 6))
    for s, story in enumerate(stories):
        base = f"s{s}"
        rows.append((base, story))
        group = [base]
        for c in range(rng.choice((0, 0, 1, 2, 3))):
            rows.append((f"{base}c{c}", copy_of(story, rng)))
            group.append(rows[-1][0])
        if len(group) > 1:
            copies.append(group)
        for n in range(rng.choice((0, 1, 1, 2))):
            near = rng.choice(NEAR_ZH if story in CHINESE else NEAR_EN).format(story)
            rows.append((f"{base}n{n}", near))
            nears.append((base, rows[-1][0]))
    rng.shuffle(rows)
    times: list[pd.Timestamp | None] = [
        None if rng.random() < 0.2 else start + pd.Timedelta(minutes=rng.randrange(3 * 24 * 60)) for _ in rows
    ]
    frame = pd.DataFrame(
        {
            "id": [i for i, _ in rows],
            "title": [t for _, t in rows],
            "source": [rng.choice(("cna", "ltn", "Reuters, Taipei", "")) for _ in rows],
            "published_at": pd.to_datetime(times, utc=True),
        }
    )
    verdicts: list[tuple[str, str]] = []
    if seed % 2 and copies:
        verdicts.append(tuple(rng.sample(rng.choice(copies), 2)))  # type: ignore[arg-type]
    if seed % 2 and nears:
        verdicts.append(rng.choice(nears))
    return Corpus(frame, verdicts)


# --- reading a report back ----------------------------------------------------------------------------


def copy_keys(frame: pd.DataFrame) -> dict[str, str]:
    """Each item's copy key, as a run with the default ``--convert tw2sp`` reads its title."""
    titles = convert(frame["title"].astype(str).tolist(), "tw2sp")
    return {str(i): copy_key(t) for i, t in zip(frame["id"], titles, strict=True)}


def order_key(frame: pd.DataFrame) -> dict[str, tuple[int, Any, str]]:
    """Earliest first by ``(published_at, id)``, undated items last (docs/operations.md)."""
    return {
        str(i): (1, 0, str(i)) if pd.isna(t) else (0, t.value, str(i))
        for i, t in zip(frame["id"], frame["published_at"], strict=True)
    }


def listed(cell: str) -> list[str]:
    """A spreadsheet's list cell split into its values (docs/report.md)."""
    return next(csv.reader([cell], skipinitialspace=True)) if cell else []


def page_data(folder: Path) -> dict[str, Any]:
    page = (folder / "index.html").read_text(encoding="utf-8")
    found = re.search(r"<script id='nlsim-data' type='application/json'>(.*?)</script>", page, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


def cluster_views(folder: Path) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """Each file's clusters: cluster id -> (representative, members in the file's order)."""
    clusters = pd.read_parquet(folder / "clusters.parquet")
    views: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
        "clusters.parquet": {
            r.cluster_id: (r.representative, tuple(map(str, r.member_ids))) for r in clusters.itertuples()
        }
    }
    members = pd.read_csv(folder / "members.csv", dtype=str, keep_default_na=False, encoding="utf-8-sig")
    views["members.csv"] = _members_view(members)
    stories = json.loads((folder / "stories.json").read_text(encoding="utf-8"))["stories"]
    views["stories.json"] = {
        s["cluster_id"]: (s["representative"]["id"], tuple(s["member_ids"])) for s in stories
    }
    assert all([m["id"] for m in s["members"]] == s["member_ids"] for s in stories)
    sheets = pd.read_excel(folder / "report.xlsx", sheet_name=None, dtype=str, keep_default_na=False)
    views["report.xlsx clusters"] = {
        r.cluster_id: (r.representative, tuple(listed(r.member_ids))) for r in sheets["clusters"].itertuples()
    }
    views["report.xlsx members"] = _members_view(sheets["members"])
    data = page_data(folder)
    ids = [str(item["id"]) for item in data["items"]]
    views["index.html"] = {
        c["cluster_id"]: (ids[c["representative"]], tuple(ids[m] for m in c["member_ids"]))
        for c in data["clusters"]
    }
    sizes = {s["cluster_id"]: s["size"] for s in stories}
    assert sizes == {r.cluster_id: r.size for r in clusters.itertuples()}, sizes
    pairs = pd.read_parquet(folder / "pairs.parquet")
    shown = {(ids[p["id_a"]], ids[p["id_b"]], c["cluster_id"]) for c in data["clusters"] for p in c["pairs"]}
    listed_pairs = set(zip(pairs["id_a"], pairs["id_b"], pairs["cluster_id"], strict=True))
    assert shown == listed_pairs, f"{folder.name}: the page shows other pairs than pairs.parquet"
    _check_topics(folder, clusters)
    return views


def _check_topics(folder: Path, clusters: pd.DataFrame) -> None:
    """A story's topic lists it and its members."""
    topics = pd.read_parquet(folder / "topics.parquet").set_index("topic_id")
    for r in clusters[clusters["topic_id"].notna()].itertuples():
        topic = topics.loc[r.topic_id]
        assert r.cluster_id in list(topic["cluster_ids"]), (r.cluster_id, r.topic_id)
        assert set(r.member_ids) <= set(topic["member_ids"]), (r.cluster_id, r.topic_id)


def _members_view(members: pd.DataFrame) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Cluster id -> (representative, members) from the rows of ``members.csv`` or its sheet."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for cid, rows in members.groupby("cluster_id", sort=False):
        reps = rows.loc[rows["representative"].astype(str).str.lower() == "true", "item_id"].tolist()
        assert len(reps) == 1, (cid, reps)
        out[str(cid)] = (reps[0], tuple(rows["item_id"]))
    return out


def check_report(folder: Path, frame: pd.DataFrame, verdicts: list[tuple[str, str]]) -> dict[str, str]:
    """Every check on one report folder of a run over ``frame`` (for a daily run: the window's items);
    returns the report's item id -> cluster id."""
    views = cluster_views(folder)
    first = views["clusters.parquet"]
    for name, view in views.items():
        assert view == first, f"{folder.name}: {name} lists other clusters than clusters.parquet"
    clusters = pd.read_parquet(folder / "clusters.parquet")
    live = clusters[clusters["status"] != "dissolved"]
    assignment: dict[str, str] = {}
    for r in live.itertuples():
        for m in r.member_ids:
            assert m not in assignment, f"{m} is in {assignment.get(m)} and {r.cluster_id}"
            assignment[str(m)] = r.cluster_id
    _check_clusters(live, frame)
    _check_times(folder, live, frame)
    pairs = pd.read_parquet(folder / "pairs.parquet")
    _check_pairs(folder, pairs, assignment, frame, verdicts)
    _check_near_misses(folder, _window_assignment(folder) or assignment)
    _check_counts(folder, pairs, live)
    return assignment


def _check_clusters(live: pd.DataFrame, frame: pd.DataFrame) -> None:
    """Sizes, representatives and ids: ``c-`` + the earliest member."""
    order = order_key(frame)
    titles = dict(zip(frame["id"].astype(str), frame["title"].str.strip(), strict=True))  # as loaded
    for r in live.itertuples():
        members = list(map(str, r.member_ids))
        assert r.size == len(members) >= 2, r
        assert r.representative in members and r.representative_title == titles[r.representative], r
        assert r.cluster_id == "c-" + min(members, key=order.__getitem__), (r.cluster_id, members)


def _check_times(folder: Path, live: pd.DataFrame, frame: pd.DataFrame) -> None:
    """A story's first and last times are its members' (dated ones), the same in ``clusters.parquet`` (UTC),
    ``stories.json`` and ``members.csv`` (ISO 8601 with the run's time zone's offset)."""
    zone = json.loads((folder / "run.json").read_text(encoding="utf-8"))["timezone"]
    times = dict(zip(frame["id"].astype(str), frame["published_at"], strict=True))

    def iso(t: Any) -> str | None:
        return None if pd.isna(t) else pd.Timestamp(t).tz_convert(zone).isoformat()

    stories = {
        s["cluster_id"]: s
        for s in json.loads((folder / "stories.json").read_text(encoding="utf-8"))["stories"]
    }
    for r in live.itertuples():
        dated = [times[m] for m in r.member_ids if pd.notna(times[m])]
        first, last = (min(dated), max(dated)) if dated else (None, None)
        assert (iso(r.first_published), iso(r.last_published)) == (iso(first), iso(last)), r.cluster_id
        story = stories[r.cluster_id]
        assert (story["first_published"], story["last_published"]) == (iso(first), iso(last)), story
    members = pd.read_csv(folder / "members.csv", dtype=str, keep_default_na=False, encoding="utf-8-sig")
    for item, when in zip(members["item_id"], members["published_at"], strict=True):
        assert when == (iso(times[item]) or ""), (item, when, times[item])


def _check_pairs(
    folder: Path,
    pairs: pd.DataFrame,
    assignment: dict[str, str],
    frame: pd.DataFrame,
    verdicts: list[tuple[str, str]],
) -> None:
    """Each pair links two items of its cluster, earliest first, at or above the threshold; ``exact_copy``
    says whether their copy keys are one; no pair an editor parted."""
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    keys, order = copy_keys(frame), order_key(frame)
    parted = {frozenset(v) for v in verdicts}
    for p in pairs.itertuples():
        assert assignment.get(p.id_a) == assignment.get(p.id_b) == p.cluster_id, p
        assert order[p.id_a] < order[p.id_b], p
        assert p.similarity >= pd.Series([run["threshold"]], dtype="float32")[0], p
        assert p.exact_copy == (keys[p.id_a] == keys[p.id_b]), (p.id_a, p.id_b, p.exact_copy)
        assert frozenset((p.id_a, p.id_b)) not in parted, p
    clusters = pd.read_parquet(folder / "clusters.parquet").set_index("cluster_id")
    best = {cid: rows["similarity"].max() for cid, rows in pairs.groupby("cluster_id")}
    for cid, top in best.items():  # a daily report lists the day's pairs, its clusters hold the window's
        assert np.float32(clusters.at[cid, "max_similarity"]) >= top, cid
    if run["mode"] == "batch":
        assert all(np.float32(clusters.at[cid, "max_similarity"]) == top for cid, top in best.items())
        _check_connected(clusters, pairs)
    csv_pairs = pd.read_csv(folder / "pairs.csv", dtype=str, keep_default_na=False, encoding="utf-8-sig")
    sheet = pd.read_excel(folder / "report.xlsx", sheet_name="pairs", dtype=str, keep_default_na=False)
    want = sorted(zip(pairs["id_a"], pairs["id_b"], pairs["cluster_id"], strict=True))
    for name, table in (("pairs.csv", csv_pairs), ("report.xlsx pairs", sheet)):
        got = sorted(zip(table["id_a"], table["id_b"], table["cluster_id"], strict=True))
        assert got == want, f"{folder.name}: {name} holds other pairs than pairs.parquet"


def _window_assignment(folder: Path) -> dict[str, str]:
    """A daily report's item id -> cluster id over its whole window (``window/clusters.parquet``: a near
    miss can name a cluster the day did not touch); {} for a batch report."""
    path = folder / "window" / "clusters.parquet"
    if not path.exists():
        return {}
    table = pd.read_parquet(path)
    return {
        str(m): r.cluster_id for r in table[table["status"] != "dissolved"].itertuples() for m in r.member_ids
    }


def _check_connected(clusters: pd.DataFrame, pairs: pd.DataFrame) -> None:
    """The pairs of each story join all its members (no verdict here joins items without a link)."""
    for cid, members in clusters["member_ids"].items():
        rows = pairs[pairs["cluster_id"] == cid]
        reached = {members[0]}
        while True:
            more = {b for a, b in zip(rows["id_a"], rows["id_b"], strict=True) if a in reached} | {
                a for a, b in zip(rows["id_a"], rows["id_b"], strict=True) if b in reached
            }
            if more <= reached:
                break
            reached |= more
        assert reached == set(members), (cid, sorted(set(members) - reached))


def _check_near_misses(folder: Path, assignment: dict[str, str]) -> None:
    """Near misses name each item's cluster, are never two items of one cluster, best first."""
    near = pd.read_parquet(folder / "near_misses.parquet")
    for p in near.itertuples():
        a, b = assignment.get(p.id_a), assignment.get(p.id_b)
        assert (a, b) == (
            None if pd.isna(p.cluster_a) else p.cluster_a,
            None if pd.isna(p.cluster_b) else p.cluster_b,
        ), p
        assert a is None or a != b, p
    assert near["similarity"].is_monotonic_decreasing, near[["id_a", "id_b", "similarity"]]


def _check_counts(folder: Path, pairs: pd.DataFrame, live: pd.DataFrame) -> None:
    """``run.json``'s counts are the tables', and ``summary.md`` says the same."""
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    counts = run["counts"]
    near = pd.read_parquet(folder / "near_misses.parquet")
    topics = pd.read_parquet(folder / "topics.parquet")
    got = {
        "pairs": len(pairs),
        "clusters": len(live),
        "clustered_items": int(live["size"].sum()),
        "near_misses": len(near),
        "topics": len(topics),
    }
    assert {k: counts[k] for k in got} == got, folder
    assert (run["pairs"], run["clusters"], run["clustered_items"]) == (
        got["pairs"],
        got["clusters"],
        got["clustered_items"],
    )
    summary = (folder / "summary.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| (\w+) \| (\d+) \|$", summary, re.M))
    assert {k: int(v) for k, v in table.items() if k in counts} == counts, folder
    for line, value in (
        ("pairs", len(pairs)),
        ("clusters", len(live)),
        ("clustered items", got["clustered_items"]),
    ):
        assert f"\n- {line}: {value}\n" in summary, (line, value)


def check_copies(
    folder: Path, assignment: dict[str, str], frame: pd.DataFrame, verdicts: list[tuple[str, str]]
) -> None:
    """Items of one copy key are one cluster, unless an editor's verdict parts two of them: then those two
    are in no cluster together, and the run lists the verdict's split (docs/report.md)."""
    groups: dict[str, list[str]] = {}
    for item, key in copy_keys(frame).items():
        groups.setdefault(key, []).append(item)
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    for members in (g for g in groups.values() if len(g) > 1):
        cut = [v for v in verdicts if set(v) <= set(members)]
        if not cut:
            assert {assignment.get(m) for m in members} != {None}, members
            assert len({assignment.get(m) for m in members}) == 1, {m: assignment.get(m) for m in members}
            continue
        for a, b in cut:
            assert assignment.get(a) is None or assignment.get(a) != assignment.get(b), (a, b)
            changes = run["editors"]["cluster_changes"]
            assert any({c["id_a"], c["id_b"]} == {a, b} and c["change"] == "split" for c in changes), changes


# --- the runs -----------------------------------------------------------------------------------------

SEEDS = (0, 1, 2, 3, 4, 17)
"""A handful of seeds, among them those that found a disagreement (0, 3: a copy read otherwise by the
model; 1, 17: copies an editor parted), half of them with verdicts (the odd ones)."""
THRESHOLD = 0.85


def _config(corpus: Path | str, out: Path, **kw: Any) -> DedupConfig:
    return DedupConfig.of(
        corpus=corpus, out=out, model=FAST_MODEL, threshold=THRESHOLD, k=50, cache=False, progress=False,
        save_index=False, backend="torch", **kw,
    )  # fmt: skip


def _editors(folder: Path, corpus: Corpus) -> dict[str, str]:
    """``annotated_pairs`` naming a pair file whose merged verdicts are ``corpus.verdicts`` (none: {})."""
    from nlsim.annotation.merge import merge_annotations

    if not corpus.verdicts:
        return {}
    pairs = folder / "pairs.tsv"
    pairs.write_text(
        "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\nq1\ttrain\tz1\tz2\tone\ttwo\t0\n",
        encoding="utf-8",
    )
    titles = dict(zip(corpus.frame["id"], corpus.frame["title"], strict=True))
    marks = pd.DataFrame(
        {
            "id_a": [a for a, _ in corpus.verdicts],
            "id_b": [b for _, b in corpus.verdicts],
            "text_a": [titles[a] for a, _ in corpus.verdicts],
            "text_b": [titles[b] for _, b in corpus.verdicts],
            "score": "0",
            "annotator": "desk",
        }
    )
    marks.to_csv(folder / "marks.csv", index=False)
    merge_annotations(folder / "marks.csv", pairs, log=lambda _: None)
    return {"annotated_pairs": str(pairs)}


def test_random_corpora_are_made_as_planned() -> None:
    """The generator's copies share a copy key, and its near copies do not (else the checks test nothing)."""
    for seed in range(40):
        frame = random_corpus(seed).frame
        keys = copy_keys(frame)
        for item in frame["id"]:
            base = re.sub(r"[cn]\d+$", "", item)
            assert (keys[item] == keys[base]) == (item == base or item[len(base)] == "c"), (seed, item)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_a_batch_reports_files_agree(tmp_path: Path, fast_encoder: Any, seed: int) -> None:
    corpus = random_corpus(seed)
    corpus.frame.to_parquet(tmp_path / "news.parquet", index=False)
    editors = _editors(tmp_path, corpus)
    run_dedup(_config(tmp_path / "news.parquet", tmp_path / "out", **editors), encoder=fast_encoder)
    assignment = check_report(tmp_path / "out", corpus.frame, corpus.verdicts)
    check_copies(tmp_path / "out", assignment, corpus.frame, corpus.verdicts)
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["counts"]["items_in"] == len(corpus.frame)


@pytest.mark.slow
@pytest.mark.parametrize("window_hours", [None, 20.0])
@pytest.mark.parametrize("seed", SEEDS)
def test_daily_runs_over_the_days_end_with_the_batch_runs_clusters(
    tmp_path: Path, fast_encoder: Any, seed: int, window_hours: float | None
) -> None:
    """With ``--window-hours`` too: a group of copies that gains a copy on a later day (an undated one, one
    sent late) pairs as the batch run's group with every copy does (seeds 0 and 3 found one that did not)."""
    corpus = random_corpus(seed)
    frame = corpus.frame
    editors = _editors(tmp_path, corpus)
    days = sorted({t.date().isoformat() for t in frame["published_at"].dropna()})
    assert len(days) >= 2
    undated_day = days[-1]
    (tmp_path / "in").mkdir()
    seen = []
    for day in days:
        dated = frame["published_at"].dt.date.astype(str) == day
        part = frame[dated | (frame["published_at"].isna() & (day == undated_day))]
        part.to_parquet(tmp_path / "in" / f"{day}.parquet", index=False)
        run_dedup(
            _config(
                str(tmp_path / "in" / "{date}.parquet"), tmp_path / "daily", date=day,
                state=str(tmp_path / "state"), retention_days=None, window_hours=window_hours, **editors,
            ),
            encoder=fast_encoder,
        )  # fmt: skip
        seen.append(part)
        window = pd.concat(seen, ignore_index=True)
        if window_hours is None:  # within a window, copies further apart are scored as any pair
            check_report(tmp_path / "daily" / "latest", window, corpus.verdicts)
    frame.to_parquet(tmp_path / "news.parquet", index=False)
    batch_run = _config(tmp_path / "news.parquet", tmp_path / "batch", window_hours=window_hours, **editors)
    run_dedup(batch_run, encoder=fast_encoder)
    batch = pd.read_parquet(tmp_path / "batch" / "clusters.parquet")
    daily = pd.read_parquet(tmp_path / "daily" / "latest" / "window" / "clusters.parquet")
    daily = daily[daily["status"] != "dissolved"]

    def listing(table: pd.DataFrame) -> list[tuple[str, str, list[str]]]:
        return sorted((r.cluster_id, r.representative, sorted(r.member_ids)) for r in table.itertuples())

    assert listing(daily) == listing(batch)
