"""The rerank stage of a report holds a series below the threshold in use (the series veto: at 0.75, or just
under a lower threshold), unless told not to."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from nlsim.dedup import stages
from nlsim.dedup.config import DedupConfig
from nlsim.rerank.reranker import Reranker
from nlsim.rerank.series import VETO_CAP


class _SameCross:
    """A cross-encoder that reads every pair as a near copy: the saturated bound."""

    def predict(
        self, a: list[str], b: list[str], progress: bool = False, runner: object = None
    ) -> np.ndarray:
        return np.full(len(a), 0.95)


TITLES = ["恒指全日跌53點報21330 成交617億元", "恒指全日跌53點報15509 成交539億元", "恒指全日跌53點報21330"]


@pytest.mark.parametrize(("veto", "expected"), [(True, [VETO_CAP, 0.95]), (False, [0.95, 0.95])])
def test_the_rerank_stage_holds_a_series_below_the_threshold(veto: bool, expected: list[float]) -> None:
    window = SimpleNamespace(texts=lambda rows, convert: [TITLES[r] for r in rows])
    reranker = Reranker(cross_encoder=_SameCross(), slope=1.0, intercept=0.0, weight=0.0)
    model = SimpleNamespace(reranker=reranker, threshold=SimpleNamespace(value=0.9), story_floor=0.0)
    config = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False, series_veto=veto)
    candidates = pd.DataFrame({"a": [0, 0], "b": [1, 2], "similarity": [0.97, 0.97]})
    scored, _ = stages.rerank(candidates, window, model, config.model, False)  # type: ignore[arg-type]
    np.testing.assert_allclose(scored["similarity"], expected, atol=1e-6)
    assert scored["similarity"].dtype == np.float32
    np.testing.assert_allclose(scored["cross_encoder"], [0.95, 0.95], atol=1e-6)  # the model's own score kept


class _LowCross:
    """A cross-encoder whose scores run low (a MiniLM version): a series at 0.6, above its threshold."""

    def predict(
        self, a: list[str], b: list[str], progress: bool = False, runner: object = None
    ) -> np.ndarray:
        return np.full(len(a), 0.6)


def test_under_a_threshold_below_the_cap_a_series_is_still_held_below_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A model calibrated at 0.537: the cap of 0.75 would hold nothing; the veto holds the series just under
    the threshold in use, keeps the story's score, and the stage says how many pairs it held."""
    window = SimpleNamespace(texts=lambda rows, convert: [TITLES[r] for r in rows])
    reranker = Reranker(cross_encoder=_LowCross(), slope=1.0, intercept=0.0, weight=0.0)
    threshold = 0.537
    model = SimpleNamespace(reranker=reranker, threshold=SimpleNamespace(value=threshold), story_floor=0.0)
    config = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False)
    candidates = pd.DataFrame({"a": [0, 0], "b": [1, 2], "similarity": [0.7, 0.7]})
    with caplog.at_level(logging.INFO, logger="nlsim"):
        scored, _ = stages.rerank(candidates, window, model, config.model, False)  # type: ignore[arg-type]
    got = scored["similarity"].to_numpy()
    assert got[0] < threshold <= got[1]  # the series no longer links, the story still does
    assert got[0] > threshold - 1e-6  # held just under it, not dropped to the floor
    assert "the series veto held 1 pair(s) below it" in caplog.text


def test_window_links_put_each_pair_in_id_order_and_keep_the_score_found_last() -> None:
    from nlsim.dedup.state import empty_pairs
    from nlsim.dedup.window import Window

    items = pd.DataFrame({"id": ["b", "a", "c", "é"]})
    old = pd.concat(
        [
            empty_pairs(),
            pd.DataFrame(
                {"id_a": ["c", "a"], "id_b": ["a", "é"], "similarity": [0.5, 0.6], "run_id": ["r0", "r0"]}
            ),
        ],
        ignore_index=True,
    ).astype({"id_a": "str", "id_b": "str"})
    window = Window(items, 0, np.arange(4), np.arange(4), ["b", "a", "c", "é"], old_pairs=old, run_id="r1")
    today = pd.DataFrame({"a": [0, 2], "b": [1, 1], "similarity": [0.9, 0.7]})  # b-a, then c-a again
    links = stages.window_links(window, today)
    got = {(r.id_a, r.id_b): (round(float(r.similarity), 2), r.run_id) for r in links.itertuples()}
    assert got == {("a", "é"): (0.6, "r0"), ("a", "b"): (0.9, "r1"), ("a", "c"): (0.7, "r1")}
    assert links["id_a"].dtype == old["id_a"].dtype


class _OneOrderCross:
    """A cross-encoder read one order at a time (as the real one is), every reading 0.7, bounded by 1."""

    def read(
        self, first: list[str], second: list[str], progress: bool = False, runner: object = None
    ) -> np.ndarray:
        return np.full(len(first), 0.7)

    def predict(
        self, a: list[str], b: list[str], progress: bool = False, runner: object = None
    ) -> np.ndarray:
        return np.full(len(a), 0.7)

    def score_bound(self) -> float:
        return 1.0


def test_a_series_pair_the_near_misses_finish_is_held_as_one_read_twice_at_once_is() -> None:
    """A candidate whose first reading cannot reach the threshold waits for its second reading until the
    near misses need it; the series veto held it only when it was read twice at once (a warm pair-score
    cache), so the same input gave other near misses from a cold cache (a series pair at 0.80, not 0.75)."""
    window = SimpleNamespace(texts=lambda rows, convert: [TITLES[r] for r in rows])
    reranker = Reranker(cross_encoder=_OneOrderCross(), slope=1.0, intercept=0.0, weight=0.5)
    model = SimpleNamespace(reranker=reranker, threshold=SimpleNamespace(value=0.9), story_floor=0.0)
    config = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False)
    candidates = pd.DataFrame({"a": [0, 0], "b": [1, 2], "similarity": [0.9, 0.9]})
    scored, unread = stages.rerank(candidates, window, model, config.model, False)  # type: ignore[arg-type]
    assert unread is not None and len(unread) == 2 and scored["similarity"].isna().all()
    done = unread.finish(np.ones(2, dtype=bool))
    np.testing.assert_allclose(done["similarity"], [VETO_CAP, 0.8], atol=1e-6)  # the series, the story
    np.testing.assert_allclose(done["cross_encoder"], [0.7, 0.7], atol=1e-6)  # the model's own score kept
    plain = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False, series_veto=False)
    _, unread = stages.rerank(candidates, window, model, plain.model, False)  # type: ignore[arg-type]
    assert unread is not None
    np.testing.assert_allclose(unread.finish(np.ones(2, dtype=bool))["similarity"], [0.8, 0.8], atol=1e-6)


def test_date_in_the_quarantine_path_is_the_runs_date_as_in_the_corpus_path(tmp_path) -> None:
    """``--corpus incoming/{date}.csv --quarantine bad/{date}.csv`` wrote every day's bad rows to one file
    named ``{date}.csv``, over the last day's; ``{date}`` is now filled in, as in ``--corpus``."""
    from nlsim.dedup.paths import check_run_paths
    from nlsim.io.corpus import write_quarantine

    (tmp_path / "in").mkdir()
    (tmp_path / "bad").mkdir()
    for day in ("2026-11-22", "2026-11-23"):
        (tmp_path / "in" / f"{day}.csv").write_text(
            f"id,title\n{day}-a,Floods\n{day}-b,-\n", encoding="utf-8"
        )
        cfg = DedupConfig.of(
            corpus=str(tmp_path / "in" / "{date}.csv"),
            out=str(tmp_path / "out"),
            quarantine=str(tmp_path / "bad" / "{date}.csv"),
            date=day,
            state=str(tmp_path / "state"),
            threshold=0.9,
        )
        assert cfg.input.quarantine_path == str(tmp_path / "bad" / f"{day}.csv")
        check_run_paths(cfg)
        corpus = stages.load(cfg.input, cfg.state)
        assert corpus.ids == [f"{day}-a"]
        write_quarantine(corpus)  # as the run does, once it has succeeded
    kept = {p.name: pd.read_csv(p)["raw_id"].tolist() for p in (tmp_path / "bad").iterdir()}
    assert kept == {"2026-11-22.csv": ["2026-11-22-b"], "2026-11-23.csv": ["2026-11-23-b"]}
    batch = DedupConfig.of(corpus="news.csv", out="rep", quarantine="bad/{date}.csv", date="2026-11-22")
    assert batch.input.quarantine_path == "bad/2026-11-22.csv"  # --date fills in the quarantine's {date}


def test_a_verdict_confirming_the_annotators_score_changes_a_cluster_without_overruling_it() -> None:
    """Two training pairs the annotators scored 1 and 0.75: an editor's same-story mark on the first gives
    its score again (a confirmation) and joins a and b; one on the second gives 1 over its 0.75 (an
    overrule) and joins c and d. Each card says which it is."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.verdicts import Decision, Verdict

    confirming = Verdict("a", "b", 1.0, earlier=(Decision(1.0),))
    overruling = Verdict("c", "d", 1.0, earlier=(Decision(0.75),))
    grouped = stages.Grouped(groups=[["a", "b"], ["c", "d"]], free=[["a", "b"], ["c", "d"]], bare=[])
    known = LinkConstraints.from_pairs(must=[("a", "b"), ("c", "d")])
    got = grouped.changes([confirming, overruling], known, {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"})
    assert [(c.id_a, c.overrules, c.confirms) for c in got] == [("a", False, True), ("c", True, False)]


@pytest.mark.slow
def test_the_clusters_a_day_touched_are_listed_from_a_window_of_millions_of_clustered_items() -> None:
    """The report's clusters of a run are those its events name and its assignment still holds. Each event
    built a set of the whole assignment again: 4,000 clusters touched in a window of 2,000,000 clustered
    items read 8 billion entries (a day of 50,000 items spent 6 s on 6,465 clusters, and it grew with the
    window's items times the day's clusters). The day's clusters are listed, with their members, and a
    cluster the assignment no longer holds (dissolved) is not."""
    ids = list(map(str, range(2_000_000)))  # clustered in pairs: 1,000,000 clusters, "c-" + the first id
    cluster_ids = ["c-" + i for i in ids[::2]]
    assignment = dict(zip(ids, (c for c in cluster_ids for _ in (0, 1)), strict=True))
    touched = cluster_ids[::250]  # 4,000 of them, with their items
    items = pd.DataFrame(
        {
            "id": [i for c in touched for i in (c[2:], str(int(c[2:]) + 1))],
            "title": "t",
            "source": "s",
            "url": None,
            "published_at": pd.Timestamp("2024-08-01T08:00Z"),
        }
    )
    events = pd.DataFrame(
        {
            "cluster_id": [*touched, "c-gone"],
            "status": "new",
            "added": [[] for _ in range(len(touched) + 1)],
            "absorbed": [[] for _ in range(len(touched) + 1)],
            "size": 2,
        }
    )
    upd = SimpleNamespace(assignment=assignment, events=events, dissolved={})
    pairs = pd.DataFrame({"id_a": pd.Series(dtype=str), "id_b": pd.Series(dtype=str), "similarity": []})
    opts = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False).clustering
    table = stages._report_clusters(items, upd, pairs, opts)  # type: ignore[arg-type]
    assert sorted(table["cluster_id"]) == sorted(touched)
    listed = table.set_index("cluster_id")["member_ids"]
    assert [list(listed[c]) for c in touched[:2]] == [["0", "1"], ["500", "501"]]


def test_a_lone_late_item_is_loaded_on_a_fixed_clock_or_when_everything_is_kept(tmp_path) -> None:
    """A daily run refuses an item dated a year after the rest, unless ``--as-of`` fixes the window's clock
    (the late item cannot move it) or ``--retention-days 0`` keeps everything (no item expires)."""
    from nlsim.errors import InputError

    (tmp_path / "day.csv").write_text(
        "id,title,published_at\nn1,Floods,2024-05-03T08:00Z\nn2,Storm,2024-05-03T09:00Z\n"
        "n3,Fire,2025-05-03T10:00Z\n",
        encoding="utf-8",
    )
    paths = {"corpus": str(tmp_path / "day.csv"), "out": str(tmp_path / "out"), "state": str(tmp_path / "s")}
    cfg = DedupConfig.of(**paths, threshold=0.9)
    with pytest.raises(InputError, match="row 3, field 'published_at'"):
        stages.load(cfg.input, cfg.state)
    for settings in ({"as_of": "2025-05-03"}, {"retention_days": 0.0}):
        cfg = DedupConfig.of(**paths, threshold=0.9, **settings)
        assert stages.load(cfg.input, cfg.state).ids == ["n1", "n2", "n3"], settings


def test_an_error_for_late_items_names_no_row_once_rows_were_set_aside_and_lists_five_ids() -> None:
    """The error names the first late item's row while rows are still as in the file, and no row once a
    row was quarantined (the frame's rows are no longer the file's); it lists five ids, with "..." only
    when there are more."""
    from nlsim.io.corpus import Corpus

    def error(n_late: int, quarantined: int) -> str:
        times = pd.to_datetime(
            ["2024-05-03T08:00Z"] * (2 * n_late) + ["2025-05-03T08:00Z"] * n_late, utc=True
        )
        frame = pd.DataFrame({"id": [f"n{i}" for i in range(1, len(times) + 1)], "published_at": times})
        set_aside = pd.DataFrame({"row": [9] * quarantined, "field": "title", "reason": "empty"})
        corpus = Corpus(frame, path=Path("day.csv"), quarantined=set_aside)
        with pytest.raises(Exception) as raised:
            stages.check_no_lone_late_items(corpus, 30)
        return str(raised.value)

    assert "row 11" in error(5, 0) and "ids n11, n12, n13, n14, n15)" in error(5, 0)
    assert "row " not in error(5, 1)
    assert "ids n13, n14, n15, n16, n17 ...)" in error(6, 0)


def test_the_linked_pairs_are_those_at_either_threshold_and_the_near_misses_those_rescored_below() -> None:
    """A pair at the story threshold itself is a story link; one whose cosine is the topic threshold itself
    is kept for the topic groups; a topic-only candidate (never rescored: no rerank score) is no near
    miss."""
    from nlsim.models.threshold import Levels

    pairs = pd.DataFrame(
        {
            "a": [0, 0, 0, 1],
            "b": [1, 2, 3, 2],
            "similarity": [0.8, 0.5, np.nan, 0.3],
            "cosine": [0.9, 0.6, 0.7, 0.4],
        }
    ).astype({"similarity": np.float32, "cosine": np.float32})
    kept, below = stages.linked(pairs, Levels(np.float32(0.8), np.float32(0.7)))
    assert list(zip(kept["a"], kept["b"], strict=True)) == [(0, 1), (0, 3)]
    assert list(zip(below["a"], below["b"], strict=True)) == [(0, 2), (1, 2)]


def test_the_rerank_stage_rescores_a_candidate_at_the_floor_and_keeps_the_cosine_of_one_below() -> None:
    """A candidate at the story floor itself can reach the threshold and is read by the cross-encoder; one
    below it keeps its cosine and no rerank score; and the series veto counts only the pairs it held below
    the threshold, not those the cross-encoder left there."""
    window = SimpleNamespace(texts=lambda rows, convert: [TITLES[r] for r in rows])
    reranker = Reranker(cross_encoder=_LowCross(), slope=1.0, intercept=0.0, weight=0.0)
    model = SimpleNamespace(reranker=reranker, threshold=SimpleNamespace(value=0.9), story_floor=0.5)
    config = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False)
    candidates = pd.DataFrame({"a": [0, 0], "b": [1, 2], "similarity": [0.5, 0.4]}).astype(
        {"similarity": np.float32}
    )
    with pytest.MonkeyPatch.context() as patch:
        said: list[str] = []
        patch.setattr(stages, "say", said.append)
        scored, _ = stages.rerank(candidates, window, model, config.model, False)  # type: ignore[arg-type]
    got = {(r.a, r.b): (r.similarity, r.cosine, r.cross_encoder) for r in scored.itertuples()}
    np.testing.assert_allclose(got[(0, 1)][::2], [0.6, 0.6], atol=1e-6)  # read: the rerank score
    assert np.isnan(got[(0, 2)][0]) and np.isnan(got[(0, 2)][2])  # below the floor: not read
    np.testing.assert_allclose(got[(0, 2)][1], 0.4, atol=1e-6)  # its cosine kept
    assert "1 candidate pair: 0 reach the threshold" in said[0]
    assert "the series veto held 0 pair(s)" in said[0]


def test_the_index_says_only_what_differs_from_the_lists_and_probes_asked() -> None:
    """An IVF index with the lists and probes asked says nothing of them; one with fewer lists says so
    when this run built it (a kept one says why in its own line)."""
    from nlsim.dedup.settings import SearchSettings
    from nlsim.search.index import build_index

    vectors = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
    ivf = build_index(vectors, kind="ivf", nlist=4, nprobe=2, use_gpu=False)
    assert stages.lists_said(SearchSettings(index_kind="ivf", nlist=4, nprobe=2), ivf) is None
    more = SearchSettings(index_kind="ivf", nlist=8, nprobe=2)
    assert "--nlist 8" in str(stages.lists_said(more, ivf))
    assert stages.lists_said(more, ivf, new=False) is None


def test_a_verdict_is_a_change_only_where_it_moved_the_clusters() -> None:
    """A same-story verdict on two items a link already joined changed nothing; a not-the-same-story one
    the rule could not honour (a chain still holds its items together) split nothing; one that parted
    exact copies (one story without it, whatever their links) split them."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.verdicts import Verdict

    linked_anyway, unsplit, copies = Verdict("a", "b", 1.0), Verdict("c", "d", 0.0), Verdict("e", "f", 0.0)
    grouped = stages.Grouped(
        groups=[["a", "b"], ["c", "d"], ["e"], ["f"]], free=[["a", "b"], ["c", "d"]], bare=[["a", "b"]]
    )
    known = LinkConstraints.from_pairs(must=[("a", "b")], cannot=[("c", "d"), ("e", "f")])
    assignment = {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c", "e": "c-e", "f": "c-f"}
    got = grouped.changes([linked_anyway, unsplit, copies], known, assignment, copies_apart={("e", "f")})
    assert [(c.id_a, c.id_b, c.change, c.clusters) for c in got] == [("e", "f", stages.SPLIT, ["c-e", "c-f"])]


def test_the_links_a_verdict_cut_count_each_copy_and_each_item_the_verdict_left_alone() -> None:
    """The links the not-the-same-story verdicts cut: a link to a group of copies counts once per copy it
    links, and an item the rule with the verdicts left in no group counts as cut from its old group."""
    from nlsim.clusters.rules import Link

    links = [Link("x", "c1", 0.9), Link("x", "y", 0.9)]
    free = [["x", "c1", "c2", "y"]]
    assert stages.cut_links(links, [["x", "y"], ["c1", "c2"]], free, {"c2": "c1"}) == 2
    # the verdict left x and y in no group of two or more
    assert stages.cut_links([Link("x", "y", 0.9)], [["p", "q"]], [["x", "y"], ["p", "q"]]) == 1


def test_the_editors_record_counts_joins_without_a_link_and_lists_overruled_verdicts_apart() -> None:
    """Of three same-story verdicts, one on items a link already joined, one on items only the verdict
    joined, and one a not-the-same-story verdict kept apart: one joined, one refused, and the refused one is
    listed apart from the decisions. A run with scored pairs and no verdict still has a record."""
    from nlsim.clusters.verdicts import Verdict, Verdicts
    from nlsim.dedup.editors import EditorsInput

    verdicts = [Verdict("a", "b", 1.0), Verdict("c", "d", 1.0), Verdict("e", "f", 1.0)]
    editors = EditorsInput(Verdicts.from_records(verdicts))
    links = pd.DataFrame({"id_a": ["a"], "id_b": ["b"]})
    assignment = {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c", "e": "c-e", "f": "c-f"}
    record = stages.editors_record(editors, editors.constraints(), links, assignment)
    assert record is not None
    assert (record.joined, record.refused) == (1, 1)
    assert record.decisions == [["a", "b", 1.0], ["c", "d", 1.0]]
    assert record.overruled == [["e", "f", 1.0]]
    scored_only = EditorsInput(scored=frozenset({("a", "b")}))
    record = stages.editors_record(scored_only, scored_only.constraints(), links, assignment)
    assert record is not None and record.verdicts == 0


def test_the_rule_without_the_not_the_same_story_verdicts_is_grouped_apart() -> None:
    """With a not-the-same-story verdict, the groups without it (what it cut) are the rule's own, not the
    groups with it: the link it cut is counted."""
    from nlsim.clusters.constraints import LinkConstraints
    from nlsim.clusters.rules import Link

    opts = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False).clustering
    links = [Link("a", "b", 0.9)]
    known = LinkConstraints.from_pairs(cannot=[("a", "b")])
    grouped = stages.grouped_by_rule(opts.story_rule(0.5), links, known, {}, opts.cut)
    assert [sorted(g) for g in grouped.free] == [["a", "b"]]
    assert not any({"a", "b"} <= set(g) for g in grouped.groups)
    assert stages.cut_links(links, grouped.groups, grouped.free) == 1


def test_a_daily_windows_table_lists_clusters_of_two_and_the_days_pairs_only_its_clusters(
    monkeypatch,
) -> None:
    """The window's table of a daily run lists every cluster of two items or more (one of two among them),
    and the day's pairs are those of the clusters the day touched."""
    empty = pd.DataFrame()
    made = stages.Clustering(
        update=SimpleNamespace(assignment={}, events=empty),  # type: ignore[arg-type]
        items=empty,
        pairs_all=empty,
        report_pairs=pd.DataFrame({"cluster_id": ["c-1", "c-2"], "id_a": ["a", "c"], "id_b": ["b", "d"]}),
        report_clusters=pd.DataFrame({"cluster_id": ["c-1"]}),
        window_clusters=empty,
        clusters_state=empty,
        cut=empty,
    )
    table = pd.DataFrame({"cluster_id": ["c-1", "c-2", "c-3"], "size": [2, 3, 1]})
    monkeypatch.setattr(stages, "cluster", lambda *args, **kwargs: made)
    monkeypatch.setattr(stages, "cluster_table", lambda *args, **kwargs: table)
    opts = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False).clustering
    daily = stages.cluster_daily(None, empty, opts)  # type: ignore[arg-type]
    assert daily.window_clusters["cluster_id"].tolist() == ["c-1", "c-2"]
    assert daily.report_pairs["cluster_id"].tolist() == ["c-1"]


def test_the_kept_clusters_say_which_run_made_and_last_changed_each() -> None:
    """A cluster new to the state was made and changed by this run; a kept one the run did not touch keeps
    its runs, and so does a topic whose items are none of today's."""
    from nlsim.clusters.order import OrderKey

    key = OrderKey(False, 0, "x")
    upd = SimpleNamespace(events=pd.DataFrame({"cluster_id": []}), anchors={"c-new": key, "c-old": key})
    old = pd.DataFrame(
        {"cluster_id": ["c-old", "t-old"], "created_run": ["r0", "r0"], "updated_run": ["r0", "r0"]}
    )
    window = SimpleNamespace(old_clusters=old, today_ids=["n"], run_id="r1")
    topic = SimpleNamespace(assignment={"x": "t-old"}, anchors={"t-old": key})
    state = stages._clusters_state(upd, window, topic)  # type: ignore[arg-type]
    got = {r.cluster_id: (r.created_run, r.updated_run) for r in state.itertuples()}
    assert got == {"c-new": ("r1", "r1"), "c-old": ("r0", "r0"), "t-old": ("r0", "r0")}


def test_a_day_run_again_lists_the_clusters_its_kept_report_listed_but_the_dissolved(tmp_path) -> None:
    """The day of the state's last run run again reads the report the state keeps; a cluster that report
    listed dissolved is not listed again."""
    kept = tmp_path / "kept"
    kept.mkdir()
    pd.DataFrame(
        {
            "cluster_id": ["c-a", "c-b"],
            "status": ["new", "dissolved"],
            "added_ids": [["a", "b"], []],
            "absorbed": [["c-z"], []],
        }
    ).to_parquet(kept / "clusters.parquet")
    state = SimpleNamespace(last_run={"run_id": "r1"}, report_dir=lambda: kept)
    window = SimpleNamespace(again="r1", state=state)
    carried = stages.carried_clusters(window, tmp_path / "out")  # type: ignore[arg-type]
    assert carried is not None
    assert carried.to_dict("records") == [
        {"cluster_id": "c-a", "status": "new", "added": ["a", "b"], "absorbed": ["c-z"]}
    ]


def test_a_carried_cluster_is_listed_only_when_the_run_left_it_alone_and_yields_to_todays_merges() -> None:
    """Of a day's earlier report, the clusters the run touched again are listed with today's event only,
    and a cluster id that today's run merged elsewhere says where today's merge put it."""
    from nlsim.clusters.assign import ClusterUpdate, events_frame

    assignment = {"a": "c-a", "b": "c-a", "c": "c-c", "d": "c-c"}
    events = events_frame(
        [{"cluster_id": "c-a", "status": "grown", "added": ["b"], "absorbed": []}], assignment
    )
    upd = ClusterUpdate(assignment, {}, events, merged_into={"c-z": "c-a"})
    carried = pd.DataFrame(
        {
            "cluster_id": ["c-a", "c-c"],
            "status": ["new", "new"],
            "added": [["a"], ["c", "d"]],
            "absorbed": [[], ["c-z"]],
        }
    )
    shown = stages.with_carried(upd, carried)
    assert shown.events[["cluster_id", "status"]].values.tolist() == [["c-a", "grown"], ["c-c", "new"]]
    assert shown.merged_into == {"c-z": "c-a"}


def test_a_copy_links_to_its_representative_once_at_the_top_of_the_scale() -> None:
    """Today's copy links to its representative at score 1 with the cosine of their vectors beside it, in
    place of the pair the search found between them; the other pairs stay as they were."""
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], np.float32)
    found = SimpleNamespace(count=1, pairs=lambda rows: (np.array([1]), np.array([0])))
    window = SimpleNamespace(
        copies=found, query_rows=np.array([1]), embeddings=vectors, items=pd.DataFrame(index=range(3))
    )
    pairs = pd.DataFrame({"a": [1, 0], "b": [0, 2], "similarity": [0.97, 0.6]})
    got = stages.with_copies(pairs, window)  # type: ignore[arg-type]
    rows = {
        (r.a, r.b): (round(float(r.similarity), 3), round(float(r.cosine), 3), r.exact_copy)
        for r in got.itertuples()
    }
    assert rows == {(1, 0): (1.0, 0.8, True), (0, 2): (0.6, 0.6, False)}
    assert len(got) == 2


def test_a_kept_index_of_another_kind_is_built_again_and_an_ivf_one_visits_the_probes_asked() -> None:
    """A daily state's IVF index is built again when the run asks for a flat one, and searched with the
    run's ``--nprobe``, not the count the earlier run asked for."""
    from nlsim.dedup.settings import SearchSettings
    from nlsim.search.index import build_index

    vectors = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
    kept = build_index(vectors, kind="ivf", nlist=4, nprobe=1, use_gpu=False)
    assert stages.kept_index(kept, SearchSettings(index_kind="flat", use_gpu=False)) is None
    again = stages.kept_index(kept, SearchSettings(index_kind="ivf", nprobe=3, use_gpu=False))
    assert again is not None and again.params["nprobe"] == 3


def test_a_report_shows_the_items_of_the_windows_clusters_and_of_its_near_misses() -> None:
    """The items a report shows: those of its clusters, of the window's clusters, of its topics, the ends of
    its pairs and of its near misses; no other."""
    items = pd.DataFrame({"id": list("abcdefg"), "title": list("ABCDEFG")})
    members = pd.DataFrame({"member_ids": [["a"]]})
    clustering = stages.Clustering(
        update=None,  # type: ignore[arg-type]
        items=items,
        pairs_all=pd.DataFrame(),
        report_pairs=pd.DataFrame({"id_a": ["b"], "id_b": ["c"]}),
        report_clusters=members,
        window_clusters=pd.DataFrame({"member_ids": [["d"]]}),
        clusters_state=pd.DataFrame(),
        cut=pd.DataFrame(),
        report_topics=pd.DataFrame({"member_ids": [["e"]]}),
    )
    missed = pd.DataFrame({"id_a": ["f"], "id_b": ["a"]})
    assert stages.report_frame(clustering, missed)["id"].tolist() == list("abcdef")


def test_the_near_miss_candidates_are_the_pairs_the_rule_cut_first_then_those_below(monkeypatch) -> None:
    """The pairs at or above the threshold that the cluster rule left in two clusters are near-miss
    candidates, listed before those below the threshold."""
    from nlsim.report import near_misses

    seen: list[pd.DataFrame] = []
    monkeypatch.setattr(
        near_misses, "near_miss_pairs", lambda pairs, labels, count: seen.append(pairs) or pairs.iloc[:0]
    )
    empty = pd.DataFrame()
    clustering = stages.Clustering(
        update=None,  # type: ignore[arg-type]
        items=pd.DataFrame({"cluster_id": ["c-a", "c-b", None]}),
        pairs_all=empty,
        report_pairs=empty,
        report_clusters=empty,
        window_clusters=empty,
        clusters_state=empty,
        cut=pd.DataFrame({"a": [0], "b": [1], "similarity": [0.95]}),
    )
    below = pd.DataFrame({"a": [1], "b": [2], "similarity": [0.5]})
    assert stages.near_misses(below, clustering, 10).empty
    assert seen[0][["a", "b"]].values.tolist() == [[0, 1], [1, 2]]


def test_a_state_keeps_that_its_rerank_scores_were_not_held_by_the_series_veto() -> None:
    """A daily state's identity says when the series veto was off, so that turning it on again scores the
    kept pairs again; with the veto on (or no reranker) it says nothing of it."""
    encoder = SimpleNamespace(model_id="m", fingerprint="f", dim=4)
    model = SimpleNamespace(
        encoder=encoder,
        reranker=SimpleNamespace(fingerprint="r"),
        threshold=SimpleNamespace(value=0.9),
        topic=None,
    )
    for veto, said in ((False, {"series_veto": False}), (True, {})):
        cfg = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False, series_veto=veto)
        search = stages._window_identity(model, cfg).search  # type: ignore[arg-type]
        assert {k: v for k, v in search.items() if k == "series_veto"} == said


def test_verdicts_on_changed_texts_are_named_three_at_most_and_the_rest_counted(monkeypatch) -> None:
    """The run names up to three verdicts given on another text than their items carry now, and counts
    the rest ("and 0 more" is never said)."""
    said: list[str] = []
    monkeypatch.setattr(stages, "say", said.append)

    def run(n: int) -> str:
        changed = frozenset((f"a{i}", f"b{i}") for i in range(n))
        checked = SimpleNamespace(text_changed=changed)
        monkeypatch.setattr(
            stages, "read_editors", lambda *args: SimpleNamespace(checked_texts=lambda titles: checked)
        )
        window = SimpleNamespace(state=None, ids=np.array(["x"]), items=pd.DataFrame({"title": ["X"]}))
        opts = SimpleNamespace(annotated_pairs=None)
        assert stages.editors(opts, window) is checked  # type: ignore[arg-type]
        return said[-1]

    assert "(a0/b0, a1/b1, a2/b2)" in run(3)
    assert "(a0/b0, a1/b1, a2/b2 and 1 more)" in run(4)


def test_a_moved_judge_file_takes_the_digest_the_last_run_recorded_for_it(monkeypatch) -> None:
    """``--judge-pairs`` that cannot be read is the file the state's last run judged on (of the same split,
    ``all`` when none is named), with the digest that run recorded; a run that recorded none leaves it
    unread."""
    state = SimpleNamespace(last_run={"judge": "…"})

    def recorded(sha: str) -> None:
        judge = SimpleNamespace(pairs="p.tsv", split="all", pairs_sha256=sha)
        monkeypatch.setattr(
            stages.RunRecord, "from_dict", staticmethod(lambda d: SimpleNamespace(judge=judge))
        )

    recorded("abc")
    assert stages.judged_digest(["p.tsv", None, None], state) == ["p.tsv", None, "abc"]  # type: ignore[arg-type]
    assert stages.judged_digest(["p.tsv", "test", None], state) == ["p.tsv", "test", None]  # type: ignore[arg-type]
    recorded("")
    assert stages.judged_digest(["p.tsv", None, None], state) == ["p.tsv", None, None]  # type: ignore[arg-type]


def test_the_rerank_stage_counts_a_pair_at_the_threshold_itself_as_reaching_it(monkeypatch) -> None:
    """A pair links at ``score >= threshold``: the stage's count of the pairs that reach it says so."""
    said: list[str] = []
    monkeypatch.setattr(stages, "say", said.append)
    window = SimpleNamespace(texts=lambda rows, convert: [TITLES[r] for r in rows])
    reranker = Reranker(cross_encoder=_LowCross(), slope=1.0, intercept=0.0, weight=0.0)
    threshold = float(np.float32(0.6))  # the rerank score itself
    model = SimpleNamespace(reranker=reranker, threshold=SimpleNamespace(value=threshold), story_floor=0.0)
    config = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False, series_veto=False)
    candidates = pd.DataFrame({"a": [0], "b": [2], "similarity": [0.7]})
    scored, _ = stages.rerank(candidates, window, model, config.model, False)  # type: ignore[arg-type]
    assert float(scored["similarity"].iloc[0]) == threshold
    assert "1 candidate pair: 1 reaches the threshold" in said[0]


def _copied_window(query_rows: list[int]) -> SimpleNamespace:
    """Three items, the third a copy of the first (one group of two), the window's rows ``query_rows``
    today's."""
    copies = SimpleNamespace(count=1, same_text=None, rep=np.array([0, 1, 0]))
    times = pd.to_datetime(["2024-05-03T08:00Z", "2024-05-03T09:00Z", "2024-05-03T10:00Z"], utc=True)
    return SimpleNamespace(
        ids=np.array(["x0", "x1", "x2"]),
        query_rows=np.array(query_rows, np.int64),
        copies=copies,
        index=None,
        embeddings=np.array([[1.0, 0.0], [0.8, 0.6], [1.0, 0.0]], np.float32),
        items=pd.DataFrame({"published_at": times}),
        old_pairs=pd.DataFrame({"id_a": [], "id_b": []}),
    )


def test_a_group_that_gained_a_copy_keeps_only_the_pairs_with_todays_items() -> None:
    """Within a time window a group that gained a copy today is searched again by its representative; what
    it finds between earlier days' items alone is a pair those days found, and is left out."""
    from nlsim.dedup.settings import SearchSettings

    searched: list[list[int]] = []

    def search(index, vectors, rows, **kwargs) -> pd.DataFrame:  # noqa: ANN001
        searched.append(rows.tolist())
        return pd.DataFrame({"a": [0, 2], "b": [1, 1], "similarity": np.float32([0.8, 0.8])})

    window = _copied_window([2])
    found = stages.neighbors(window, SearchSettings(k=10, window_hours=24), 0.5, False, search)  # type: ignore[arg-type]
    assert searched == [[0]]
    assert list(zip(found["a"], found["b"], strict=True)) == [(2, 1)]


def test_a_group_is_searched_again_only_once_it_has_more_copies_than_neighbours_asked() -> None:
    """Without a time window, a group that gained a copy is searched again only when it has more copies
    than ``k`` (it asks for as many neighbours as it has copies): with as many, an earlier search gave it
    all it asks for."""
    from nlsim.dedup.settings import SearchSettings

    searched: list[list[int]] = []

    def search(index, vectors, rows, **kwargs) -> pd.DataFrame:  # noqa: ANN001
        searched.append(rows.tolist())
        return pd.DataFrame({"a": [], "b": [], "similarity": np.float32([])})

    for k in (2, 1):
        stages.neighbors(_copied_window([2]), SearchSettings(k=k), 0.5, False, search)  # type: ignore[arg-type]
    assert searched == [[], [0]]


def test_only_pairs_with_an_unreadable_end_are_left_out_and_a_readable_window_says_nothing() -> None:
    """A text the model reads nothing of drops the candidate pairs it is in, and the run says so; a window
    whose texts the model reads says nothing and keeps every pair."""
    texts = ["Floods", "Storm", "𠀀𠀁"]
    window = SimpleNamespace(
        texts=lambda rows, convert: [texts[r] for r in rows], ids=np.array(["a", "b", "c"])
    )
    encoder = SimpleNamespace(name="e5", unreadable=lambda ts: np.array([t.startswith("𠀀") for t in ts]))
    model = SimpleNamespace(encoder=encoder)
    scoring = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False).model
    pairs = pd.DataFrame({"a": [0, 0], "b": [1, 2], "similarity": [0.9, 1.0]})
    kept, said = stages.readable(pairs, window, model, scoring)  # type: ignore[arg-type]
    assert list(zip(kept["a"], kept["b"], strict=True)) == [(0, 1)]
    assert said is not None and "'c'" in said and "left out of the 1 candidate pair(s)" in said
    kept, said = stages.readable(pairs.iloc[:1], window, model, scoring)  # type: ignore[arg-type]
    assert len(kept) == 1 and said is None


def test_no_report_is_carried_for_a_run_that_is_no_days_run_again() -> None:
    """A run that is no day's run again reads no earlier report; one that is reads OUT/runs/<its id>/ when
    that run is not the state's last."""
    state = SimpleNamespace(last_run={"run_id": ""}, report_dir=lambda: Path("kept"))
    assert stages.carried_folder(SimpleNamespace(again="", state=state), "out") is None  # type: ignore[arg-type]
    assert stages.carried_folder(SimpleNamespace(again="r1", state=state), "out") == Path("out/runs/r1")  # type: ignore[arg-type]


def test_a_window_without_copies_says_nothing_of_them() -> None:
    """The run speaks of exact copies only when the window has some."""
    none = SimpleNamespace(copies=SimpleNamespace(count=0, groups=lambda: []))
    assert stages.copies_said(none) is None  # type: ignore[arg-type]
    two = SimpleNamespace(copies=SimpleNamespace(count=1, groups=lambda: [["a", "b"]]))
    assert "1 item(s) repeat the text of another, in 1 group(s)" in str(stages.copies_said(two))  # type: ignore[arg-type]


def test_the_index_says_nprobe_alone_does_not_apply_to_a_flat_index(monkeypatch) -> None:
    """``--nprobe`` without ``--nlist`` on a flat index is ignored, and the run says so."""
    from nlsim.dedup.settings import SearchSettings
    from nlsim.dedup.window import Window

    said: list[str] = []
    monkeypatch.setattr(stages, "say", said.append)
    items = pd.DataFrame({"id": ["a", "b"]})
    window = Window(items, 0, np.arange(2), np.arange(2), ["a", "b"])
    model = SimpleNamespace(encoder=SimpleNamespace(dim=2))
    emb = np.eye(2, dtype=np.float32)
    built = stages.index(window, emb, SearchSettings(index_kind="flat", nprobe=4, use_gpu=False), model)  # type: ignore[arg-type]
    assert built.index.ntotal == 2
    assert any("--nlist/--nprobe apply to IVF indexes only" in s for s in said), said


def test_items_whose_cosine_is_the_topic_threshold_itself_share_a_topic() -> None:
    """A link reaches the topic threshold at ``cosine >= threshold``: two items at it share a topic."""
    from nlsim.clusters.order import order_keys
    from nlsim.clusters.verdicts import Verdicts
    from nlsim.dedup.editors import EditorsInput
    from nlsim.models.threshold import Levels

    ids = ["x", "y"]
    window = SimpleNamespace(
        ids=np.array(ids), previous_topics={}, topic_anchors={}, today_ids=ids, regroup=False
    )
    pairs_all = pd.DataFrame(
        {"id_a": ["x"], "id_b": ["y"], "similarity": [np.nan], "cosine": np.float32([0.7])}
    )
    opts = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False).clustering
    keys = order_keys(ids, pd.Series(pd.to_datetime(["2024-05-03", "2024-05-04"], utc=True)))
    levels = Levels(0.9, float(np.float32(0.7)))
    got = stages.topics(window, {}, pairs_all, opts, EditorsInput(Verdicts()), levels, keys)  # type: ignore[arg-type]
    assert set(got.assignment) == {"x", "y"} and len(set(got.assignment.values())) == 1


def test_a_story_pair_a_verdict_parted_is_a_near_miss_candidate_not_a_report_pair() -> None:
    """Two items linked above the threshold that an editor's "not the same story" keeps apart are in no
    cluster: their pair is not the report's (no cluster holds it) but a near-miss candidate the rule cut,
    and the editors' record counts the link cut and the split."""
    from nlsim.clusters.verdicts import Verdict, Verdicts
    from nlsim.dedup.editors import EditorsInput
    from nlsim.dedup.window import Window
    from nlsim.models.threshold import Levels

    ids = ["a", "b", "c"]
    times = pd.to_datetime(["2024-05-03T08:00Z", "2024-05-03T09:00Z", "2024-05-03T10:00Z"], utc=True)
    items = pd.DataFrame(
        {
            "id": ids,
            "title": ["Floods", "Floods again", "Storm"],
            "source": "s",
            "url": None,
            "published_at": times,
        }
    )
    window = Window(items, 0, np.arange(3), np.arange(3), ids, run_id="r1")
    opts = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False).clustering
    editors = EditorsInput(Verdicts.from_records([Verdict("a", "b", 0.0)]))
    pairs = pd.DataFrame({"a": [0], "b": [1], "similarity": np.float32([0.95])})
    made = stages.cluster(window, pairs, opts, editors, Levels(0.9))
    assert made.items["cluster_id"].isna().all()
    assert made.report_pairs.empty
    assert list(zip(made.cut["a"], made.cut["b"], strict=True)) == [(0, 1)]
    assert made.editors is not None and made.editors.links_cut == 1
    assert [(c.id_a, c.id_b, c.change) for c in made.editors.cluster_changes] == [("a", "b", stages.SPLIT)]


def test_copies_a_verdict_parts_are_searched_again_with_the_other_ends_of_their_kept_pairs() -> None:
    """An earlier day's two copies (read as one item) that an editor's "not the same story" now parts are
    each searched for their own neighbours, and the pairs the state kept with the group go, their other
    ends searched again (whichever side of the kept pair, in id order, the group is on); without the
    verdict nothing is searched again and the kept pair stays."""
    from nlsim.clusters.verdicts import Verdict, Verdicts
    from nlsim.dedup.editors import EditorsInput
    from nlsim.dedup.window import Window

    ids = ["c", "x", "y"]
    items = pd.DataFrame(
        {
            "id": ids,
            "title": ["Storm", "Floods", "Floods"],
            "raw_text": ["Storm", "Floods", "Floods"],
            "published_at": pd.to_datetime(
                ["2024-05-03T08:00Z", "2024-05-03T09:00Z", "2024-05-03T10:00Z"], utc=True
            ),
        }
    )
    old = pd.DataFrame({"id_a": ["c"], "id_b": ["x"], "similarity": [0.9], "run_id": ["r0"]})
    none = np.zeros(0, np.int64)
    window = Window(items, 3, none, none, [], old_pairs=old, run_id="r1")
    cfg = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False)
    parted = stages.copies(
        window, cfg.model, cfg.search, EditorsInput(Verdicts.from_records([Verdict("x", "y", 0.0)]))
    )
    assert parted.query_rows.tolist() == [0, 1, 2] and parted.old_pairs.empty
    kept = stages.copies(window, cfg.model, cfg.search, EditorsInput())
    assert kept.query_rows.tolist() == [] and len(kept.old_pairs) == 1 and kept.copies.count == 1


def test_the_parts_of_one_text_the_time_window_cut_apart_are_scored_by_its_first_copy() -> None:
    """A text the time window cut into items of one part each has no copy, but is one text to the search: a
    pair found with its later part is scored by the vector of its first (one text, one score), not by the
    later part's own (a vector read otherwise)."""
    from nlsim.dedup.settings import SearchSettings

    window = _copied_window([2])
    window.copies = SimpleNamespace(count=0, same_text=np.array([0, 1, 0]), rep=np.array([0, 1, 2]))
    window.embeddings = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], np.float32)

    def search(index, vectors, rows, **kwargs) -> pd.DataFrame:  # noqa: ANN001
        assert kwargs["same_text"].tolist() == [0, 1, 0]
        return pd.DataFrame({"a": [2], "b": [1], "similarity": np.float32([0.6])})

    found = stages.neighbors(window, SearchSettings(k=10), 0.5, False, search)  # type: ignore[arg-type]
    np.testing.assert_allclose(found["similarity"], [0.8], atol=1e-6)


def test_a_group_searched_again_for_more_neighbours_keeps_only_the_pairs_no_earlier_day_kept() -> None:
    """A group that now has more copies than ``k`` is searched again for more neighbours: a pair it finds
    between earlier days' items that the state already keeps is not found again; one no earlier day found
    is kept."""
    from nlsim.dedup.settings import SearchSettings

    def search(index, vectors, rows, **kwargs) -> pd.DataFrame:  # noqa: ANN001
        return pd.DataFrame({"a": [0], "b": [1], "similarity": np.float32([0.8])})

    window = _copied_window([2])
    assert len(stages.neighbors(window, SearchSettings(k=1), 0.5, False, search)) == 1  # type: ignore[arg-type]
    window.old_pairs = pd.DataFrame({"id_a": ["x0"], "id_b": ["x1"]})
    assert stages.neighbors(window, SearchSettings(k=1), 0.5, False, search).empty  # type: ignore[arg-type]


def test_a_window_with_no_kept_vectors_builds_its_ivf_index_from_todays() -> None:
    """A window with no kept item (a daily run's first day) builds its index from the day's vectors, which
    train an IVF index's lists; a kept part of no vector trains none."""
    from nlsim.dedup.settings import SearchSettings
    from nlsim.dedup.window import Window

    ids = [f"i{i}" for i in range(64)]
    window = Window(pd.DataFrame({"id": ids}), 0, np.arange(64), np.arange(64), ids)
    emb = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
    model = SimpleNamespace(encoder=SimpleNamespace(dim=8))
    search = SearchSettings(index_kind="ivf", nlist=4, nprobe=2, use_gpu=False)
    built = stages.index(window, emb, search, model)  # type: ignore[arg-type]
    assert (built.index.kind, built.index.ntotal) == ("ivf", 64)
    np.testing.assert_array_equal(built.embeddings, emb)
