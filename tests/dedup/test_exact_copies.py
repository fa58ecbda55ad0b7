"""Every identical copy grouped: copies of one text among other items, with the default cluster rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from incremental_helpers import HashEncoder, run_daily, state_assignment

from nlsim.clusters import copies as copy_rules
from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup

COPIED = "Ministers met on Tuesday to agree the new budget for rail and road repairs"


def _corpus(repo_root: Path, copies: int) -> pd.DataFrame:
    """200 BBC titles and ``copies`` copies of one wire text, some with other spacing, case and marks."""
    bbc = pd.read_parquet(repo_root / "data/bbc.parquet").drop_duplicates("title").head(200)
    others = pd.DataFrame({"id": bbc["id"], "title": bbc["title"]})
    variants = [COPIED, f"  {COPIED.upper()} ", f"{COPIED}.", f"“{COPIED}”"]
    wire = pd.DataFrame(
        {"id": [f"wire-{i:04d}" for i in range(copies)], "title": [variants[i % 4] for i in range(copies)]}
    )
    return pd.concat([others, wire], ignore_index=True)


def _config(corpus: Path, out: Path, model: str, threshold: float, **kw: object) -> DedupConfig:
    """A report of ``corpus`` into ``out`` with ``model`` at ``threshold``, nothing cached or shown."""
    return DedupConfig.of(
        corpus=corpus,
        out=out,
        model=model,
        convert="none",
        threshold=threshold,
        cache=False,
        progress=False,
        save_index=False,
        **kw,
    )


@pytest.mark.slow
@pytest.mark.parametrize("copies", [10, 100, 1000])
def test_every_copy_is_in_one_cluster_with_the_default_rule(tmp_path, repo_root, fast_encoder, copies):
    _corpus(repo_root, copies).to_parquet(tmp_path / "news.parquet", index=False)
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "paraphrase-MiniLM-L3-v2", 0.95)
    result = run_dedup(cfg, encoder=fast_encoder)
    holding = [set(m) for m in result.clusters["member_ids"] if "wire-0000" in m]
    assert len(holding) == 1
    wire = {f"wire-{i:04d}" for i in range(copies)}
    assert wire <= holding[0], f"{len(wire - holding[0])} of {copies} copies left out"
    # each copy has its pair in the report: a link to the group's first item, marked as an exact copy
    pairs = pd.read_parquet(tmp_path / "out" / "pairs.parquet")
    copy_pairs = pairs[pairs["exact_copy"]]
    assert len(copy_pairs) == copies - 1
    assert set(copy_pairs["id_a"]) == {"wire-0000"} and (copy_pairs["similarity"] == 1.0).all()
    assert copy_pairs["cross_encoder"].isna().all()
    # the run says how many exact copies it grouped
    run = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))
    assert run["counts"]["exact_copies"] == copies - 1
    assert any(m.startswith(f"exact copies: {copies - 1} item") for m in result.messages)


@pytest.mark.parametrize("unseen", ["\u3164", "\u2800", "\ufe0f"])
def test_a_copy_holding_a_character_that_shows_nothing_is_in_its_originals_cluster(
    tmp_path, fast_encoder, unseen
):
    """A Hangul filler, the blank Braille cell or a variation selector after a headline shows nothing: the
    copy that holds one is an exact copy, in the cluster of the headline, whatever the model makes of it
    (the small model put the copy with a trailing Hangul filler in a cluster of its own, apart)."""
    titles = [COPIED, COPIED, f"{COPIED}{unseen}", f"{COPIED} {unseen}", "Storm floods the coastal road"]
    news = pd.DataFrame({"id": ["a", "b", "c", "d", "e"], "title": titles})
    news.to_parquet(tmp_path / "news.parquet", index=False)
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "paraphrase-MiniLM-L3-v2", 0.95)
    result = run_dedup(cfg, encoder=fast_encoder)
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [["a", "b", "c", "d"]]
    pairs = pd.read_parquet(tmp_path / "out" / "pairs.parquet")
    assert pairs["exact_copy"].all() and result.stats.counts.exact_copies == 3


def test_copies_whose_missing_description_an_export_wrote_as_null_are_one_copy_group(tmp_path, fast_encoder):
    """One headline without a description, exported with an empty cell, ``\\N``, ``NULL`` and ``nan``:
    the markers were embedded as words, the four were no copies, and the small model left two of them
    out of the others' cluster. They are exact copies now, in one cluster."""
    news = tmp_path / "news.csv"
    news.write_text(
        "id,title,description\n"
        f"a,{COPIED},\nb,{COPIED},\\N\nc,{COPIED},NULL\nd,{COPIED},nan\ne,Storm floods the coastal road,\n",
        encoding="utf-8",
    )
    result = run_dedup(_config(news, tmp_path / "out", "paraphrase-MiniLM-L3-v2", 0.95), encoder=fast_encoder)
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [["a", "b", "c", "d"]]
    assert result.stats.counts.exact_copies == 3
    assert any("3 description cell(s) hold only a marker of a missing value" in m for m in result.messages)


def test_headlines_whose_figures_differ_only_in_a_decimal_point_are_not_copies(tmp_path):
    """ "up 1.5%" a year before "up 15%": read as one text without its punctuation, the two were reported
    as exact copies (similarity 1, one cluster) though their cosine is far under the threshold."""
    t = pd.Timestamp("2023-04-10 02:00", tz="UTC")
    news = pd.DataFrame(
        {
            "id": ["r23", "r24", "c24", "x"],
            "title": [
                "TSMC March revenue up 1.5% on year",
                "TSMC March revenue up 15% on year",
                "TSMC March revenue up 15 % on year.",
                "Markets rise",
            ],
            "published_at": [t, t + pd.Timedelta(days=366), t + pd.Timedelta(days=366, hours=1), t],
        }
    )
    news.to_parquet(tmp_path / "news.parquet", index=False)
    result = run_dedup(
        _config(tmp_path / "news.parquet", tmp_path / "out", "hash", 0.9), encoder=HashEncoder()
    )
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [["c24", "r24"]]
    pairs = pd.read_parquet(tmp_path / "out" / "pairs.parquet")
    assert list(zip(pairs["id_a"], pairs["id_b"], pairs["exact_copy"], strict=True)) == [("r24", "c24", True)]


def _earlier_copy_key(text: str | tuple[str, ...]) -> str:
    """The copy key nlsim had before a mark between two digits and the characters that show nothing
    counted: NFKC, case folded, without any white space, punctuation or control character (of the text its
    fields make, joined by a space)."""
    import unicodedata

    folded = unicodedata.normalize("NFKC", text if isinstance(text, str) else " ".join(text)).casefold()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] not in "ZPC")


def _days_after_an_earlier_nlsim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Any) -> list[Any]:
    """Two daily runs: the first by an nlsim whose copy key made "up 1.5%" and "up 15%" copies, its state's
    ``MANIFEST.json`` identity then changed by ``edit`` as that nlsim wrote it; the second by this one, whose
    copy of the second headline must not join the first's story. Returns the runs."""
    t = pd.Timestamp("2024-04-10 02:00", tz="UTC")
    days = [
        [("r23", "TSMC March revenue up 1.5% on year"), ("r24", "TSMC March revenue up 15% on year")],
        [("r25", "TSMC March revenue up 15% on year")],
    ]
    state = tmp_path / "state"
    runs = []
    for n, rows in enumerate(days):
        day = pd.DataFrame(rows, columns=["id", "title"]).assign(published_at=t + pd.Timedelta(days=n))
        day.to_parquet(tmp_path / f"day{n}.parquet", index=False)
        with monkeypatch.context() as m:
            if n == 0:  # the day the earlier nlsim ran
                m.setattr(copy_rules, "copy_key", _earlier_copy_key)
            cfg = _config(tmp_path / f"day{n}.parquet", tmp_path / "out", "hash", 0.9)
            runs.append(run_daily(cfg, state, retention_days=None, encoder=HashEncoder()))
        if n == 0:
            assert state_assignment(state) == {"r23": "c-r23", "r24": "c-r23"}
            manifest = json.loads((state / "MANIFEST.json").read_text(encoding="utf-8"))
            edit(manifest["identity"])
            (state / "MANIFEST.json").write_text(json.dumps(manifest), encoding="utf-8")
    kept = state_assignment(state)
    assert sorted(kept) == ["r24", "r25"] and kept["r24"] == kept["r25"]  # r23 alone now
    return runs


def test_a_daily_state_whose_copies_an_earlier_copy_key_grouped_is_paired_again(tmp_path, monkeypatch):
    """A state written by an nlsim whose copy key made "up 1.5%" and "up 15%" copies kept their link: the
    day after the upgrade, a copy of the second joined the first's story, and the two stayed one story
    until they expired. The state's identity names the copy key; one written before it did is paired again
    once, and the run says why."""
    runs = _days_after_an_earlier_nlsim(tmp_path, monkeypatch, lambda i: i["search"].pop("copy_key", None))
    said = " ".join(runs[1].stats.messages)
    assert f"copy_key: state has None, this run uses {copy_rules.COPY_KEY_VERSION}" in said
    assert "pairing the window again" in said


def test_a_daily_state_kept_before_any_search_setting_is_paired_and_embedded_again(tmp_path, monkeypatch):
    """A state written by an nlsim that kept no search settings in its identity at all (no ``search``: the
    nlsims before ``k`` and ``window_hours`` were kept) is older than the copy key and the reading of HTML
    too: its copies were grouped by the first copy key and its texts embedded as words. Its ``k`` and
    ``window_hours`` read as this run's, but it is paired and embedded again once, as a state that names
    ``k`` and not the copy key is, and the run says why."""
    runs = _days_after_an_earlier_nlsim(tmp_path, monkeypatch, lambda i: i.pop("search"))
    switch = runs[1].stats.model_switch
    assert switch is not None and sorted(switch.changed) == ["copy_key", "markup"] and switch.reembed
    said = " ".join(runs[1].stats.messages)
    assert f"copy_key: state has None, this run uses {copy_rules.COPY_KEY_VERSION}" in said


def _pair_file(path: Path, rows: list[tuple[str, str, str, str, float]]) -> Path:
    lines = ["pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore"]
    lines += [f"p{n}\ttrain\t{a}\t{b}\t{ta}\t{tb}\t{s}" for n, (a, b, ta, tb, s) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_editors_not_the_same_story_wins_over_an_exact_copy(tmp_path):
    news = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": ["budget agreed today", "budget agreed today", "budget agreed today", "rain falls"],
            "published_at": pd.to_datetime(
                ["2024-05-01 08:00", "2024-05-01 09:00", "2024-05-01 10:00", None], utc=True
            ),
        }
    )
    news.to_parquet(tmp_path / "news.parquet", index=False)
    pairs = _pair_file(
        tmp_path / "pairs.tsv", [("a", "c", "budget agreed today", "budget agreed today", 0.75)]
    )
    (tmp_path / "pairs.verdicts.csv").write_text(
        "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n,a,c,0.75,train,desk,marks.csv,\n",
        encoding="utf-8",
    )
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "hash", 0.7, annotated_pairs=str(pairs))
    result = run_dedup(cfg, encoder=HashEncoder())
    members = sorted(sorted(m) for m in result.clusters["member_ids"])
    assert members == [["a", "b"]]  # c stays apart from a, and so from a's copy b
    assert result.stats.counts.exact_copies == 1


@pytest.mark.slow
def test_in_a_daily_run_copies_further_apart_than_the_time_window_are_not_copies(tmp_path):
    days = [
        pd.DataFrame({"id": ["a1", "z1"], "title": ["storm hits the coast", "markets rise"]}),
        pd.DataFrame({"id": ["a2", "b2"], "title": ["Storm hits the coast!", "storm hits the coast"]}),
        pd.DataFrame({"id": ["a3"], "title": ["storm hits the coast"]}),
    ]
    paths = []
    for n, (day, hour) in enumerate(zip(days, (8, 10, 9), strict=True)):
        day = day.assign(
            published_at=pd.Timestamp("2024-05-01", tz="UTC") + pd.Timedelta(days=2 * n, hours=hour)
        )
        paths.append(tmp_path / f"day{n}.parquet")
        day.to_parquet(paths[-1], index=False)

    state = tmp_path / "state"
    runs = [
        run_daily(
            _config(p, tmp_path / "out", "hash", 0.99, window_hours=24),
            state,
            retention_days=None,
            encoder=HashEncoder(),
        )
        for p in paths
    ]
    # a2 and b2 came within the hour: copies; a1 and a3 are two days from them: each stands alone
    assert state_assignment(state) == {"a2": "c-a2", "b2": "c-a2"}
    assert [r.stats.counts.exact_copies for r in runs] == [0, 1, 1]


def test_a_copy_past_the_window_of_its_groups_first_item_pairs_with_the_copy_inside_it(tmp_path):
    """Copies A, B (+22 h) and C (+44 h) with a 24-hour window: A and B are one group, and C, 22 hours
    after B, was reported as a pair with A, 44 hours apart."""
    times = ["2024-05-01 00:00", "2024-05-01 22:00", "2024-05-02 20:00", "2024-05-01 12:00"]
    news = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": [
                "storm hits the coast",
                "storm hits the coast",
                "Storm hits the coast!",
                "markets rise",
            ],
            "published_at": pd.to_datetime(times, utc=True),
        }
    )
    news.to_parquet(tmp_path / "news.parquet", index=False)
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "hash", 0.7, window_hours=24)
    result = run_dedup(cfg, encoder=HashEncoder())
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [["a", "b", "c"]]
    pairs = pd.read_parquet(tmp_path / "out" / "pairs.parquet")
    apart = (pairs["published_at_b"] - pairs["published_at_a"]).abs()
    assert (apart <= pd.Timedelta(hours=24)).all(), pairs[
        ["id_a", "id_b", "published_at_a", "published_at_b"]
    ]
    assert sorted(zip(pairs["id_a"], pairs["id_b"], strict=True)) == [("a", "b"), ("b", "c")]
    # a and b are one copy group; c, past the window of a, is scored as any pair (its own group)
    assert pairs.set_index("id_b")["exact_copy"].to_dict() == {"b": True, "c": False}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cut", "first", "later"),
    [("order", "z1", "b1"), ("min-cut", "b1", "z1")],
)
def test_a_verdict_parting_two_copies_after_a_day_keeps_the_copy_a_batch_run_keeps(
    tmp_path, cut, first, later
):
    """Day 1 reads ``later`` as a copy of ``first`` (its earliest) in one story with a2 and a3; then an
    editor's "not the same story" between the two copies is merged. The daily run of day 2 parts the group
    and searches the copy it never searched, so its clusters are those of a batch run over both days' items
    with the verdict: the same copy kept in the story, the other alone (each cut its own way)."""
    from nlsim.annotation.merge import merge_annotations

    story = "storm floods the coast road"
    titles = {first: f"{story} tonight", "a2": f"{story} today", "a3": f"{story} again"}
    titles |= {later: titles[first], "q": "markets rise on rate hopes"}
    day = pd.Timestamp("2024-05-01", tz="UTC")
    days = [
        pd.DataFrame(
            {
                "id": list(titles),
                "title": list(titles.values()),
                "published_at": [day + pd.Timedelta(minutes=n) for n in range(len(titles))],
            }
        ),
        pd.DataFrame(
            {"id": ["zz"], "title": ["totally unrelated words"], "published_at": [day + pd.Timedelta(days=1)]}
        ),
    ]
    for n, frame in enumerate(days):
        frame.to_parquet(tmp_path / f"day{n}.parquet", index=False)
    pd.concat(days, ignore_index=True).to_parquet(tmp_path / "all.parquet", index=False)
    pairs = _pair_file(tmp_path / "pairs.tsv", [("q1", "q2", "foo bar", "baz qux", 0.0)])
    kw = {"annotated_pairs": str(pairs), "cluster_cut": cut, "k": 10, "text_fields": ("title",)}
    state = tmp_path / "state"
    first_day = _config(tmp_path / "day0.parquet", tmp_path / "o1", "hash", 0.7, **kw)
    run_daily(first_day, state, retention_days=None, encoder=HashEncoder())
    assert state_assignment(state)[later] == state_assignment(state)[first]  # one story, copies
    marks = tmp_path / "marks.csv"
    pd.DataFrame(
        {
            "id_a": [first],
            "id_b": [later],
            "text_a": [titles[first]],
            "text_b": [titles[later]],
            "score": ["0"],
        }
    ).to_csv(marks, index=False)
    merge_annotations(marks, pairs, log=lambda _: None)
    second_day = _config(tmp_path / "day1.parquet", tmp_path / "o2", "hash", 0.7, **kw)
    run_daily(second_day, state, retention_days=None, encoder=HashEncoder())
    daily = pd.read_parquet(tmp_path / "o2" / "latest" / "window" / "clusters.parquet")
    daily = daily[daily["status"] != "dissolved"]
    batch = run_dedup(
        _config(tmp_path / "all.parquet", tmp_path / "b", "hash", 0.7, **kw), encoder=HashEncoder()
    )
    got = sorted(sorted(m) for m in daily["member_ids"])
    assert got == sorted(sorted(m) for m in batch.clusters["member_ids"])
    assert len(got) == 1 and {"a2", "a3"} < set(got[0]) and len(got[0]) == 3  # one copy kept, one alone


def test_a_daily_run_links_a_copy_group_as_a_batch_run_does_when_a_copy_reads_otherwise(tmp_path):
    """``red, green, blue, black`` is a copy of ``red green blue black`` (its copy key is the same) but not
    one text to the model (the words carry the commas): a full-width or punctuated copy can embed far from
    its group's representative. An earlier item whose words are the copy's found the copy in a batch run
    (its search hit the copy's vector) and joined the group, while a daily run searching the day's
    representative only never saw that link. The representative's vector stands for its group in both
    (docs/report.md: the search reads one item per group): both runs make the same clusters."""
    times = pd.to_datetime(["2024-05-01 08:00", "2024-05-02 08:00", "2024-05-02 09:00"], utc=True)
    news = pd.DataFrame(
        {
            "id": ["x", "n", "m"],
            "title": ["red, green, blue, black white", "red green blue black", "red, green, blue, black"],
            "published_at": times,
        }
    )
    for n, day in enumerate((news.iloc[:1], news.iloc[1:])):
        day.to_parquet(tmp_path / f"day{n}.parquet", index=False)
    news.to_parquet(tmp_path / "all.parquet", index=False)
    state = tmp_path / "state"
    for n in range(2):
        cfg = _config(tmp_path / f"day{n}.parquet", tmp_path / "daily", "hash", 0.7, text_fields=("title",))
        run_daily(cfg, state, retention_days=None, encoder=HashEncoder())
    cfg = _config(tmp_path / "all.parquet", tmp_path / "batch", "hash", 0.7, text_fields=("title",))
    batch = run_dedup(cfg, encoder=HashEncoder())
    batch_clusters = zip(batch.clusters["cluster_id"], batch.clusters["member_ids"], strict=True)
    assert state_assignment(state) == {m: c for c, ms in batch_clusters for m in ms}
    assert state_assignment(state) == {"n": "c-n", "m": "c-n"}  # x stays alone: far from the group's text


def test_an_editors_not_the_same_story_between_two_copies_that_read_apart_is_listed_as_a_split(tmp_path):
    """``a`` and ``c`` are copies (one copy key) that the model reads apart (the commas stay on the words):
    without the verdict they are one story, as copies always are, so the editor's "not the same story"
    split them, and the card of ``a``'s story must say so (``run.json``'s ``editors.cluster_changes``). The
    change was left out: it was judged by the links alone, and the two copies have none."""
    news = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "title": ["budget agreed today", "budget agreed today", "budget, agreed, today!", "rain falls"],
            "published_at": pd.to_datetime(
                ["2024-05-01 08:00", "2024-05-01 09:00", "2024-05-01 10:00", None], utc=True
            ),
        }
    )
    news.to_parquet(tmp_path / "news.parquet", index=False)
    pairs = _pair_file(tmp_path / "pairs.tsv", [("a", "c", news["title"][0], news["title"][2], 0.0)])
    (tmp_path / "pairs.verdicts.csv").write_text(
        "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n,a,c,0,train,desk,marks.csv,\n",
        encoding="utf-8",
    )
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "hash", 0.7, annotated_pairs=str(pairs))
    result = run_dedup(cfg, encoder=HashEncoder())
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [["a", "b"]]
    changes = json.loads((tmp_path / "out" / "run.json").read_text(encoding="utf-8"))["editors"][
        "cluster_changes"
    ]
    assert [(c["id_a"], c["id_b"], c["change"], c["clusters"]) for c in changes] == [
        ("a", "c", "split", ["c-a"])
    ]


def test_a_group_searched_again_for_its_new_copy_reports_no_pair_of_an_earlier_day_again(tmp_path):
    """With --window-hours, a daily run searches a group again on the day it gains a copy; the pairs it
    finds again between items of earlier days (a-b, reported on day 0) were listed again in day 1's
    pairs.parquet, where a daily report shows the pairs that joined its stories that day."""
    day0 = pd.DataFrame(
        {
            "id": ["a", "b"],
            "title": ["storm hits taipei port closing ferries for two days"] * 2,
            "published_at": pd.to_datetime(["2024-05-01 00:00", "2024-05-01 02:00"], utc=True),
        }
    )
    day0.loc[1, "title"] += " now"
    day1 = pd.DataFrame(
        {
            "id": ["a2", "z"],
            "title": ["storm hits taipei port closing ferries for two days", "markets rise on rate hopes"],
            "published_at": pd.to_datetime([None, "2024-05-02 09:00"], utc=True),
        }
    )
    state, listed = tmp_path / "state", []
    for n, day in enumerate((day0, day1)):
        path = tmp_path / f"day{n}.parquet"
        day.to_parquet(path, index=False)
        cfg = _config(path, tmp_path / "out", "hash", 0.6, window_hours=20)
        run_daily(cfg, state, retention_days=None, encoder=HashEncoder())
        pairs = pd.read_parquet(tmp_path / "out" / "latest" / "pairs.parquet")
        listed.append(sorted(zip(pairs["id_a"], pairs["id_b"], strict=True)))
    assert listed == [[("a", "b")], [("a", "a2")]]


class _CountingCross:
    """A cross-encoder read one order at a time (as the real one is) that counts its readings: 0.9 for two
    texts that share their first word, 0.1 for others, bounded by 1."""

    def __init__(self) -> None:
        self.readings = 0

    def read(self, first: list[str], second: list[str], progress: bool = False, runner: object = None) -> Any:
        import numpy as np

        self.readings += len(first)
        same = [x.split()[0] == y.split()[0] for x, y in zip(first, second, strict=True)]
        return np.where(same, 0.9, 0.1)

    def predict(self, a: list[str], b: list[str], progress: bool = False, runner: object = None) -> Any:
        return (self.read(a, b) + self.read(b, a)) / 2

    def score_bound(self) -> float:
        return 1.0

    def digest(self) -> str:
        return "counting"


def _reranked_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, news: pd.DataFrame, **kw: object) -> Any:
    """A batch run of ``news`` with :class:`HashEncoder` and a :class:`_CountingCross` reranker at 0.6.
    Returns the cross-encoder's readings, the clusters and the pairs (ids, similarity, exact_copy)."""
    from dataclasses import replace

    from nlsim.dedup import run as run_module
    from nlsim.rerank.reranker import Reranker

    cross = _CountingCross()
    loaded = run_module.load_model

    def with_reranker(ms: Any, encoder: Any = None) -> Any:
        reranker = Reranker(cross_encoder=cross, slope=1.0, intercept=0.0, weight=0.5)
        return replace(loaded(ms, encoder), reranker=reranker)

    monkeypatch.setattr(run_module, "load_model", with_reranker)
    news.to_parquet(tmp_path / "news.parquet", index=False)
    result = run_dedup(
        _config(tmp_path / "news.parquet", tmp_path / "out", "hash", 0.6, **kw), encoder=HashEncoder()
    )
    pairs = pd.read_parquet(tmp_path / "out" / "pairs.parquet")
    got = sorted(
        zip(pairs["id_a"], pairs["id_b"], pairs["similarity"].round(4), pairs["exact_copy"], strict=True)
    )
    return cross.readings, sorted(sorted(m) for m in result.clusters["member_ids"]), got


@pytest.mark.slow
@pytest.mark.parametrize("hours_apart", [0, 30])
def test_the_copies_of_one_text_cost_the_cross_encoder_what_one_copy_does(tmp_path, monkeypatch, hours_apart):
    """A wire story sent 6 times, at once (one copy group) or 30 hours apart (a group each under
    ``--window-hours 24``), beside undated variants of it that pair with every copy: each group read the
    same text pairs with the cross-encoder again, 6 times the readings of one copy for the same texts.
    Each pair of texts is read once now: 6 copies cost what one does, and their pairs score as one's."""
    t = pd.Timestamp("2024-05-01 08:00", tz="UTC")
    variants = [
        "Ministers met on Tuesday to agree a new budget for rail and road repairs",
        "Ministers met to agree the new budget for rail and road repairs",
        "Ministers agree the budget for road repairs",
    ]

    def news(copies: int) -> pd.DataFrame:
        rows = [(f"w{i:02d}", COPIED, t + pd.Timedelta(hours=hours_apart * i)) for i in range(copies)]
        rows += [(f"v{i}", text, None) for i, text in enumerate(variants)]
        rows += [("r", "Storm floods the coastal road", t)]
        return pd.DataFrame(rows, columns=["id", "title", "published_at"])

    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    one, _, alone = _reranked_run(tmp_path / "one", monkeypatch, news(1), window_hours=24)
    many, clusters, pairs = _reranked_run(tmp_path / "many", monkeypatch, news(6), window_hours=24)
    assert one > 0 and many == one
    copies = [f"w{i:02d}" for i in range(6)]
    assert set(copies) & set(clusters[0]) and {"v0", "v1", "v2"} <= set(clusters[0])
    # a copy's pair with a variant scores as the lone copy's does, whichever copy holds it
    score = {b: s for a, b, s, _ in alone if a == "w00"} | {a: s for a, b, s, _ in alone if b == "w00"}
    for a, b, s, copy in pairs:
        if not copy and (a in copies) != (b in copies):
            assert s == score[b if a in copies else a], (a, b, s)


def _daily_headline(days: int) -> pd.DataFrame:
    """A headline sent every day at 08:00 for ``days`` days, its rewording an hour after the last copy, and
    an unrelated item on the first day."""
    t = pd.Timestamp("2024-05-01 08:00", tz="UTC")
    rows = [(f"w{i:02d}", COPIED, t + pd.Timedelta(days=i)) for i in range(days)]
    reworded = "Ministers met on Tuesday to agree a new budget for rail and road repairs"
    rows += [
        ("v", reworded, t + pd.Timedelta(days=days - 1, hours=1)),
        ("r", "Storm floods the coastal road", t),
    ]
    return pd.DataFrame(rows, columns=["id", "title", "published_at"])


@pytest.mark.slow
def test_copies_of_earlier_days_out_of_the_time_window_leave_room_for_todays_neighbours(tmp_path):
    """A headline a desk sends every day (a group of its own each day under ``--window-hours 20``) beside
    today's reworded copy of it: the other days' groups, of the same vector, were each day's first hits and
    filled its k neighbours, and were then dropped as out of the window, so today's copy and its rewording,
    an hour apart, were never paired. The neighbours out of the window leave room for those within it."""
    _daily_headline(12).to_parquet(tmp_path / "news.parquet", index=False)
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "hash", 0.9, window_hours=20)
    result = run_dedup(cfg, encoder=HashEncoder())
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [["v", "w11"]]


@pytest.mark.slow
def test_a_daily_run_pairs_todays_copy_of_a_daily_headline_as_a_batch_run_does(tmp_path):
    """The same headline sent every day, a daily run a day: on the twelfth, the state's eleven earlier
    copies filled the day's copy's neighbours as they filled the batch run's."""
    news = _daily_headline(12)
    day = news["published_at"].dt.floor("D")
    for n, (_, rows) in enumerate(news.groupby(day, sort=True)):
        rows.to_parquet(tmp_path / f"day{n:02d}.parquet", index=False)
        cfg = _config(tmp_path / f"day{n:02d}.parquet", tmp_path / "out", "hash", 0.9, window_hours=20)
        run_daily(cfg, tmp_path / "state", retention_days=None, encoder=HashEncoder())
    kept = state_assignment(tmp_path / "state")
    assert kept == {"v": "c-w11", "w11": "c-w11"}


@pytest.mark.slow
def test_a_copy_holding_control_or_format_characters_is_in_its_originals_cluster_as_written(
    tmp_path, fast_encoder
):
    """Titles that differ from one headline only by control characters (a NUL, Word's line break, a
    terminal's colour codes) or format characters (a zero-width space, a byte-order mark, direction
    controls) are copies of it: the one in colour codes was read as another text (``31m...0m``), alone in a
    cluster of its own, and the model read each of the others as another text. They are one cluster, each
    exact copy's vector the headline's, and the report's tables keep every title as written."""
    from tests.dedup.test_window import CLEAN, DAMAGED

    titles = [CLEAN, *DAMAGED, "Central bank raises interest rates again"]
    ids = [f"n{i:02d}" for i in range(len(titles))]
    pd.DataFrame({"id": ids, "title": titles}).to_parquet(tmp_path / "news.parquet", index=False)
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "paraphrase-MiniLM-L3-v2", 0.95)
    result = run_dedup(cfg, encoder=fast_encoder)
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [ids[:-1]]
    pairs = pd.read_parquet(tmp_path / "out" / "pairs.parquet")
    assert pairs["exact_copy"].all() and (pairs["cosine"] == 1.0).all(), pairs[["id_b", "cosine"]]
    shown = dict(zip(pairs["id_b"], pairs["title_b"], strict=True))
    assert [shown[i] for i in ids[1:-1]] == DAMAGED


FLOODS = "Heavy rain flooded roads across the north on Monday, and thousands were told to leave their homes."


def _floods() -> pd.DataFrame:
    """One story's copies with a title and a description: the wire's credit closing the title differs, or
    a dateline opens the description; and another story."""
    times = pd.to_datetime(["2024-05-01 08:00", "2024-05-01 09:00", "2024-05-01 10:00", "2024-05-01 11:00"])
    return pd.DataFrame(
        {
            "id": ["ap", "reuters", "cna", "other"],
            "title": [
                "Floods hit the north - AP",
                "Floods hit the north - Reuters",
                "Floods hit the north",
                "Central bank holds interest rates",
            ],
            "description": [FLOODS, FLOODS, f"TAIPEI (CNA) - {FLOODS}", "The bank kept its main rate at 2%."],
            "published_at": times.tz_localize("UTC"),
        }
    )


def test_copies_whose_title_credit_or_description_dateline_differs_are_one_copy_group(tmp_path, fast_encoder):
    """With ``--text-fields title,description`` (the default), a credit closing a title and a dateline
    opening a description stood mid-text in the joined text: the three copies of one wire story keyed
    apart, no exact copy. Each field is read without them: they are exact copies, in one cluster."""
    _floods().to_parquet(tmp_path / "news.parquet", index=False)
    cfg = _config(tmp_path / "news.parquet", tmp_path / "out", "paraphrase-MiniLM-L3-v2", 0.95)
    result = run_dedup(cfg, encoder=fast_encoder)
    assert result.stats.counts.exact_copies == 2
    assert sorted(sorted(m) for m in result.clusters["member_ids"]) == [["ap", "cna", "reuters"]]
    pairs = pd.read_parquet(tmp_path / "out" / "pairs.parquet")
    assert {(a, b) for a, b, c in pairs[["id_a", "id_b", "exact_copy"]].itertuples(index=False) if c} == {
        ("ap", "reuters"),
        ("ap", "cna"),
    }


def test_a_daily_run_keys_a_kept_items_fields_as_a_batch_run_does(tmp_path):
    """A kept item's fields are read from the state (its title and its text) as today's from the corpus:
    the copies of a story sent over two days are one copy group, as in a batch run."""
    news = _floods()
    for n, day in enumerate((news.iloc[[0, 3]], news.iloc[[1, 2]])):
        day.to_parquet(tmp_path / f"day{n}.parquet", index=False)
    news.to_parquet(tmp_path / "all.parquet", index=False)
    state = tmp_path / "state"
    for n in range(2):
        cfg = _config(tmp_path / f"day{n}.parquet", tmp_path / "daily", "hash", 0.99)
        daily = run_daily(cfg, state, retention_days=None, encoder=HashEncoder())
    batch = run_dedup(
        _config(tmp_path / "all.parquet", tmp_path / "batch", "hash", 0.99), encoder=HashEncoder()
    )
    assert batch.stats.counts.exact_copies == 2 and daily.stats.counts.exact_copies == 2
    assert state_assignment(state) == {"ap": "c-ap", "reuters": "c-ap", "cna": "c-ap"}
