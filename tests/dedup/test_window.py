"""The daily window in named steps (classify, expire, restore, prune) over an immutable window, and the
order key's named fields."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from nlsim.clusters.order import OrderKey, order_key_of
from nlsim.dedup.window import Window, batch_window, classify, day_start, expire, prune
from nlsim.io.corpus import Corpus, load_corpus
from nlsim.report.record import Counts

T = pd.Timestamp("2024-03-10", tz="UTC")


def _items(rows: list[tuple[str, str, int]], undated: tuple[str, ...] = ()) -> pd.DataFrame:
    """``(id, content hash, days before T it is retained from)`` as window items; the ``undated`` ones have
    no ``published_at``."""
    retain_from = pd.to_datetime([T - pd.Timedelta(days=r[2]) for r in rows], utc=True)
    return pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "content_hash": [r[1] for r in rows],
            "retain_from": retain_from,
            "published_at": retain_from.where([r[0] not in undated for r in rows]),
        }
    )


def test_classify_and_expire_name_what_happens_to_each_item() -> None:
    kept = _items([("a", "h1", 40), ("b", "h2", 2), ("c", "h3", 1)])
    today = _items([("b", "h2", 2), ("c", "new text", 0), ("d", "h4", 0), ("e", "h5", 50)])
    cutoff = T - pd.Timedelta(days=30)
    assert expire(kept, cutoff) == {"a"} and expire(kept, None) == set()
    got = classify(today, kept, cutoff)
    assert got.status.tolist() == ["skipped", "changed", "new", "too_old"]
    assert got.expired == {"a"} and got.changed == {"c"} and got.gone == {"a", "c"}
    assert today["id"][got.todo].tolist() == ["c", "d"]
    assert got.counts(quarantined=1) == Counts(
        items_in=4, quarantined=1, new=1, changed=1, skipped=1, too_old=1, expired=1
    )


def test_an_item_sent_again_with_a_corrected_time_is_changed_and_one_without_its_date_is_skipped() -> None:
    kept = _items([("a", "h1", 3), ("b", "h2", 3), ("u", "h3", 3), ("x", "h4", 40)], undated=("u",))
    today = _items([("a", "h1", 1), ("b", "h2", 3), ("u", "h3", 1), ("x", "h4", 2)], undated=("b",))
    got = classify(today, kept, T - pd.Timedelta(days=30))
    # a: a corrected time; b: sent again without its date (the kept date stays); u: dated at last;
    # x: expired, and published again within the window with the same text
    assert got.status.tolist() == ["changed", "skipped", "changed", "new"]
    assert got.changed == {"a", "u"} and today["id"][got.todo].tolist() == ["a", "u", "x"]


def test_an_expired_item_that_comes_again_with_new_text_is_new_when_published_again_else_too_old() -> None:
    kept = _items([("a", "h1", 40), ("b", "h2", 40), ("u", "h3", 40), ("s", "h4", 40)])
    today = _items(
        [("a", "new text", 0), ("b", "other", 35), ("u", "other", 0), ("s", "h4", 40)], undated=("u",)
    )
    cutoff = T - pd.Timedelta(days=30)
    got = classify(today, kept, cutoff)
    assert got.status.tolist() == ["new", "too_old", "too_old", "skipped"]
    assert got.expired == {"a", "b", "u", "s"} and got.changed == set()
    assert today["id"][got.todo].tolist() == ["a"]
    counts = got.counts(quarantined=0)
    assert counts.new + counts.changed + counts.skipped + counts.too_old == counts.items_in


def test_prune_drops_pairs_of_items_that_left_and_all_pairs_on_regroup() -> None:
    pairs = pd.DataFrame({"id_a": ["a", "b", "c"], "id_b": ["b", "c", "d"], "similarity": [0.9, 0.8, 0.7]})
    kept = prune(pairs, {"a"}, regroup=False)
    assert list(zip(kept["id_a"], kept["id_b"], strict=True)) == [("b", "c"), ("c", "d")]
    assert kept.index.tolist() == [0, 1]
    assert prune(pairs, set(), regroup=True).empty


def test_a_window_is_never_changed_once_made() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "title": ["x", "y"],
            "description": ["", ""],
            "body": ["", ""],
            "source": ["", ""],
            "lang": ["", ""],
            "url": ["", ""],
            "published_at": pd.to_datetime([None, None], utc=True),
        }
    )
    window = batch_window(Corpus(frame, path="news.csv", text_fields=("title",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        window.items = frame  # type: ignore[misc]
    indexed = dataclasses.replace(window, embeddings=np.zeros((2, 4), np.float32))
    assert window.embeddings is None and indexed.embeddings is not None
    assert isinstance(indexed, Window) and indexed.texts([1], "none") == ["y"]


def test_order_keys_have_named_fields_and_sort_by_the_order_rule() -> None:
    dated = order_key_of("2024-01-02", "b")
    undated = order_key_of(None, "a")
    assert undated == OrderKey(undated=1, ns=0, item_id="a") == OrderKey.of_undated("a")
    assert (dated.undated, dated.item_id) == (0, "b") and dated.ns == pd.Timestamp(
        "2024-01-02", tz="UTC"
    ).value
    assert sorted([undated, dated]) == [dated, undated]


@pytest.mark.parametrize(
    ("zone", "now", "start"),
    [
        ("Africa/Cairo", "2024-04-26T10:00Z", "2024-04-25T22:00Z"),  # 00:00 skipped: clocks go to 01:00
        ("America/Havana", "2024-03-10T17:00Z", "2024-03-10T05:00Z"),
        ("America/Havana", "2024-11-03T17:00Z", "2024-11-03T04:00Z"),  # 00:00 twice: the first
        ("Asia/Taipei", "2024-04-26T10:00Z", "2024-04-25T16:00Z"),
    ],
)
def test_the_start_of_a_day_whose_midnight_a_clock_change_skips_or_repeats(
    zone: str, now: str, start: str
) -> None:
    """An undated day run in Cairo on the day its clocks go from 00:00 to 01:00 stopped with a traceback
    (pandas cannot floor to a midnight that does not exist)."""
    assert day_start(zone, pd.Timestamp(now)) == pd.Timestamp(start)


def test_an_as_of_without_an_offset_is_read_on_the_runs_clock_as_a_published_at_is() -> None:
    """`--as-of 2026-11-22T06:30` with `--timezone Asia/Taipei` was read in UTC (8 hours later than the
    newsroom meant), while a published_at without an offset is read in --timezone; both now are."""
    from types import SimpleNamespace

    from nlsim.dedup.window import _as_of

    daily = SimpleNamespace(as_of="2026-11-22T06:30")
    state = SimpleNamespace(as_of=None)
    times = pd.Series([], dtype="datetime64[ns, UTC]")
    assert _as_of(daily, state, times, "Asia/Taipei") == pd.Timestamp("2026-11-21T22:30Z")
    assert _as_of(daily, state, times) == pd.Timestamp("2026-11-22T06:30Z")  # --timezone's default, UTC
    daily = SimpleNamespace(as_of="2026-11-22T06:30:00+00:00")  # an offset given: as written
    assert _as_of(daily, state, times, "Asia/Taipei") == pd.Timestamp("2026-11-22T06:30Z")


@pytest.mark.parametrize(
    ("zone", "day", "end"),
    [
        ("America/New_York", "2024-03-10", "2024-03-11T04:00Z"),  # 23 hours: 02:00-03:00 skipped
        ("America/New_York", "2024-11-03", "2024-11-04T05:00Z"),  # 25 hours: 01:00-02:00 twice
        ("Africa/Cairo", "2024-04-25", "2024-04-25T22:00Z"),  # the next midnight is skipped: 01:00 then
        ("Asia/Taipei", "2026-11-25", "2026-11-25T16:00Z"),
    ],
)
def test_a_days_end_is_the_next_midnight_on_the_zones_clock_on_a_daylight_saving_day(
    zone: str, day: str, end: str
) -> None:
    """The end of a day whose clocks change was its midnight plus 24 hours: an hour past the next midnight
    on a 23-hour day, an hour before it on a 25-hour day. A quiet day run again after the next day's run,
    whose latest item came at 00:30 the next morning, was not told older (and its report went to
    OUT/latest over the next day's)."""
    import datetime as dt
    from types import SimpleNamespace

    from nlsim.dedup.window import day_end, older_day

    the_day = dt.date.fromisoformat(day)
    assert day_end(the_day, zone) == pd.Timestamp(end)
    quiet = pd.Series([], dtype="datetime64[ns, UTC]")
    next_morning = SimpleNamespace(as_of=(pd.Timestamp(end) + pd.Timedelta(minutes=30)).isoformat())
    same_evening = SimpleNamespace(as_of=(pd.Timestamp(end) - pd.Timedelta(minutes=30)).isoformat())
    assert older_day(next_morning, quiet, day_end(the_day, zone))
    assert not older_day(same_evening, quiet, day_end(the_day, zone))


CLEAN = "Floods in the north kill three"
DAMAGED = [
    "Floods\x00 in the north kill three",  # a NUL, the mark of a damaged export
    "Floods\x00in the north kill three",  # one in the place of a space
    "Floods in the north\x0bkill three",  # Word's line break (a vertical tab) between two words
    "Floods in the north\x85kill three",  # NEL, a C1 control: a line break to line readers
    "Floods in the north\u2028kill three",  # the Unicode line separator
    "\x1b[31mFloods in the north kill three\x1b[0m",  # a terminal's colours
    "Floods in\x07 the north kill three\x7f",  # a bell, a DEL
    "Flo\u200bods in the north kill three",  # a zero-width space inside a word
    "\ufeffFloods in the \ufeffnorth kill three",  # byte-order marks, of files joined
    "\u202bFloods in the north\u202c kill three\u200f",  # direction controls and marks
    "Flo\u00adods in the north kill three",  # a soft hyphen
]


def test_the_model_reads_a_text_without_its_control_and_format_characters(tmp_path) -> None:  # noqa: ANN001
    """A title holding control characters (a NUL, Word's line break ``\\x0b``, a terminal's colour codes) or
    format characters that show nothing (a zero-width space, a byte-order mark, direction controls) reached
    the model as written: the small test model read ``north\\x0bkill`` as ``northkill`` (cosine 0.86 with
    the clean title), ``\\x1b[31m`` as words (0.61), and e5 read each of them as something (0.93 to 0.98).
    The model now reads each such text as the one without them (a control a space, a format character
    nothing), in the run's script too (OpenCC stopped at a NUL), while the corpus, and so the report,
    keeps each title as written."""
    titles = [CLEAN, *DAMAGED, "颱風\x00來了\u200b，全台停班"]
    path = tmp_path / "news.parquet"
    pd.DataFrame({"id": [f"n{i}" for i in range(len(titles))], "title": titles}).to_parquet(path)
    corpus = load_corpus(path)
    window = batch_window(corpus)
    read = window.texts(range(len(titles)), "none")
    assert read[: len(DAMAGED) + 1] == [CLEAN] * (len(DAMAGED) + 1), read
    assert batch_window(corpus).texts([len(titles) - 1], "tw2sp") == ["台风 来了，全台停班"]
    assert corpus.frame["title"].tolist() == titles  # as written, for the report


def test_an_item_retained_from_the_cutoff_itself_is_in_the_window() -> None:
    """The window starts at the cutoff: a kept item retained from that very instant stays, and a new item
    of that instant is added (``new``), not refused as too old; a moment earlier, both are out."""
    cutoff = T - pd.Timedelta(days=30)
    kept = _items([("a", "h1", 30), ("b", "h2", 31)])
    assert expire(kept, cutoff) == {"b"}
    today = _items([("x", "h3", 30), ("y", "h4", 31)])
    assert classify(today, kept, cutoff).status.tolist() == ["new", "too_old"]


def test_a_later_days_copy_that_expires_today_does_not_hold_back_an_older_days_row() -> None:
    """x's kept copy was read by a later day (``keep``) but expires today: the older day's row, dated within
    the window, comes in as a new item, not skipped for a copy that is leaving the window."""
    cutoff = T - pd.Timedelta(days=30)
    kept = _items([("x", "h1", 40), ("k", "h2", 1)])
    today = _items([("x", "other", 0), ("k", "other", 1)])
    got = classify(today, kept, cutoff, keep=frozenset({"x", "k"}))
    assert got.status.tolist() == ["new", "skipped"]
    assert got.held == ("k",) and today["id"][got.todo].tolist() == ["x"]


def test_the_reference_time_never_moves_back_and_stands_still_on_a_day_without_news() -> None:
    """The state's clock is the latest time seen: an ``--as-of`` equal to it is taken (a day run again with
    the same ``--as-of``), a day whose items are all earlier leaves it where it was, and so does a day
    without news, whatever its ``--date``."""
    import datetime as dt
    from types import SimpleNamespace

    from nlsim.dedup.window import _as_of

    clock = pd.Timestamp("2024-03-10T12:00Z")
    state = SimpleNamespace(as_of=clock)
    pinned = SimpleNamespace(as_of=clock.isoformat())
    assert _as_of(pinned, state, pd.Series([], dtype="datetime64[ns, UTC]")) == clock
    unpinned = SimpleNamespace(as_of=None)
    earlier = pd.Series(pd.to_datetime(["2024-03-09T08:00Z"], utc=True))
    assert _as_of(unpinned, state, earlier) == clock
    quiet = pd.Series([], dtype="datetime64[ns, UTC]")
    assert _as_of(unpinned, state, quiet) == clock
    assert _as_of(unpinned, state, quiet, "UTC", dt.date(2024, 3, 12)) == clock


def test_a_changed_item_takes_its_kept_date_and_a_new_undated_item_keeps_its_own_retention() -> None:
    """c comes again without its date (it keeps the kept one); u, new today and undated, is kept from the
    time it was first seen: taking kept dates for c gives u none (it would never expire)."""
    from nlsim.dedup.window import keep_kept

    seen = T + pd.Timedelta(hours=6)
    kept = _items([("c", "h1", 2)]).assign(title="t", source="s", url="http://c")
    add = _items([("c", "new text", 0), ("u", "h2", 0)], undated=("c", "u"))
    add = add.assign(title="t", source="s", url="", retain_from=[seen, seen])
    got = keep_kept(add, kept, {"c"})
    assert got["published_at"].tolist()[0] == T - pd.Timedelta(days=2)
    assert got["retain_from"].tolist() == [T - pd.Timedelta(days=2), seen]
    assert pd.isna(got["published_at"].iloc[1])


def test_a_changed_item_keeps_the_run_that_first_saw_it() -> None:
    """An item whose text changed is embedded again today but was first seen by an earlier run: its
    ``first_seen_run`` stays that run's (the run a day sent again is told by); a new item's is today's."""
    from nlsim.dedup.window import _window_items

    kept = _items([("a", "h1", 2), ("b", "h2", 2)]).assign(first_seen_run="r1", embedded_run="r1")
    today = _items([("a", "new text", 0), ("n", "h3", 0)])
    classified = classify(today, kept, None)
    items, _, n_base = _window_items(kept, today, classified, "r2")
    assert n_base == 1
    assert dict(zip(items["id"], items["first_seen_run"], strict=True)) == {"b": "r1", "a": "r1", "n": "r2"}
    assert items["embedded_run"].tolist() == ["r1", "r2", "r2"]


def test_a_day_some_of_whose_items_are_too_old_is_run() -> None:
    """A day is refused only when every one of its items is older than the window: one too old among
    others is counted ``too_old`` and the day runs."""
    from types import SimpleNamespace

    from nlsim.dedup.window import check_not_all_too_old
    from nlsim.errors import InputError

    cutoff = T - pd.Timedelta(days=30)
    corpus = SimpleNamespace(path="news.csv")
    mixed = classify(_items([("x", "h1", 0), ("y", "h2", 40)]), _items([]), cutoff)
    check_not_all_too_old(corpus, mixed, cutoff, T)  # type: ignore[arg-type]
    old = classify(_items([("y", "h2", 40)]), _items([]), cutoff)
    with pytest.raises(InputError, match="older than the window"):
        check_not_all_too_old(corpus, old, cutoff, T)  # type: ignore[arg-type]


def test_restore_reads_a_missing_cluster_id_as_no_cluster() -> None:
    """A kept item without a cluster or topic (its cell empty: ``None``, or ``NaN`` as pandas fills a cell
    it has no value for) is in none: not in one named ``nan``."""
    from pathlib import Path

    from nlsim.dedup.state import State
    from nlsim.dedup.window import restore

    items = pd.DataFrame({"id": ["a", "b", "c"], "topic_id": ["t-a", "t-a", np.nan]})
    items["cluster_id"] = pd.Series(["c-a", "c-a", np.nan], dtype=object)
    clusters = pd.DataFrame(
        {"cluster_id": ["c-a"], "anchor_undated": [0], "anchor_ns": [T.value], "anchor_id": ["a"]}
    )
    state = State(folder=Path("st"), items=items, clusters=clusters)
    assert restore(state, set())[0] == {"a": "c-a", "b": "c-a"}
    assert restore(state, set(), "topic_id")[0] == {"a": "t-a", "b": "t-a"}


def test_a_day_before_the_newest_day_told_by_its_date_is_older_though_the_clock_stood_still() -> None:
    """The 26th's clock is 15:00; the 27th was run quiet, by its ``--date`` (the clock stood still). A file
    of the 26th with an item at 18:00, run after it, is an older day: it is before the 27th."""
    from types import SimpleNamespace

    from nlsim.dedup.window import _days
    from nlsim.report.record import RunRecord

    clock = pd.Timestamp("2026-11-26T15:00Z")
    state = SimpleNamespace(as_of=clock, items=pd.DataFrame({"published_at": [clock]}))
    last = RunRecord(run_id="r3", newest_day="2026-11-27T00:00:00+00:00")
    times = pd.Series(pd.to_datetime(["2026-11-26T18:00Z"], utc=True))
    older, newest, *_ = _days(state, last, times, None, "UTC", False)  # type: ignore[arg-type]
    assert older and newest == pd.Timestamp("2026-11-27T00:00Z")
