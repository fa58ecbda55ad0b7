"""The editors' verdicts as records: one :class:`Verdict` per pair of items, :class:`Verdicts` for a store's
(or a daily state's) set, and the constraints they make.

"Same story" (level 1) is a must-link, any lower level ("not the same story") a cannot-link. Only verdicts
on **training** pairs act (:meth:`Verdicts.constraints`): a validation or test pair used as a constraint
would put the editors' answer into the clusters the report is judged on. One verdict per pair: a later one
on the same pair replaces the earlier (:meth:`Verdicts.updated`). A verdict keeps the SHA-256 of the two
texts it was given on (:func:`nlsim.io.editor_file.text_sha256`, as the merge checks them): a verdict on a
text that has changed since does not act (:meth:`Verdict.text_changed`).

A verdict on a training pair the pair file already scores (``nlsim annotate merge --overrule``) is the
editor's newer decision: it **overrules** the earlier ones, which it keeps (:attr:`Verdict.earlier`: each
a :class:`Decision`, its score, who, where from and when; the first is the pair file's own). The pair file
is not changed; what holds is the newer decision (:mod:`nlsim.clusters.verdicts.overrule`).

Example:
    >>> v = Verdicts.from_records([Verdict("a", "b", 1.0, "train"), Verdict("c", "a", 0.0, "train"),
    ...                            Verdict("d", "e", 0.0, "validation")])
    >>> c = v.constraints()
    >>> c.requires("a", "b"), c.forbids("a", "c"), c.forbids("d", "e"), len(v), len(v.acting())
    (True, True, False, 3, 2)
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd

from nlsim.clusters.constraints import LinkConstraints, pair_key
from nlsim.errors import InputError
from nlsim.io.cells import one_line
from nlsim.io.editor_file import pair_id, text_sha256

SAME_STORY = 1.0
"""The rubric level of "same story": a verdict at it is a must-link, one below it a cannot-link."""
LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
ACTING_SPLIT = "train"
"""The only split whose verdicts act on clusters (see the module docstring)."""
SPLITS = ("train", "validation", "test")
COLUMNS = (
    "pair_id",
    "id_a",
    "id_b",
    "score",
    "split",
    "annotator",
    "source",
    "decided_at",
    "sha256_a",
    "sha256_b",
    "earlier",
    "notes",
)
"""A verdict's fields as a table's columns, in order (a store adds its row check:
:data:`nlsim.clusters.verdicts.store.ROW_CHECK`, and leaves out :data:`EARLIER` while no verdict has
earlier decisions and :data:`NOTES` while none has a note:
:func:`nlsim.clusters.verdicts.store.store_text`)."""
EARLIER = "earlier"
"""The column of a verdict's earlier decisions (:meth:`Verdict.cell`): a JSON list of :class:`Decision`
objects, oldest first, each with its note (``notes``) when it has one and ``"superseded": true`` when it is
a mark merged after the newer decision that holds (:attr:`Decision.superseded`); empty for a verdict that
overrules nothing and supersedes no mark."""
NOTES = "notes"
"""The column of an overruling verdict's note (the editor's ``notes`` cell of the row merged: the pair file
does not hold the row, so the store is the note's only record); empty for every other verdict, whose note
is in the pair file's row."""
SUPERSEDED = "superseded"
"""The key, in an :data:`EARLIER` decision, of a mark the verdict supersedes rather than overrules
(:attr:`Decision.superseded`)."""
REQUIRED = ("id_a", "id_b", "score", "split")
"""The columns without which a table holds no verdict."""


@dataclass(frozen=True)
class Decision:
    """An earlier decision on a pair that a newer verdict overruled: the score given (the annotators' may
    be any number in [0, 1], their levels' mean), who gave it, where it came from (the editors' file, or
    the pair file for the annotators' own score), when it was decided (its mark's time, or when it was
    merged; '' when unknown) and the editor's note on it, as the verdict store kept it ('' for none: a
    decision the pair file records keeps its note in the pair file's row); ``superseded``: a mark made no
    later than the decision that holds and merged after it, kept in the pair's history only (it was never
    the pair's decision: the verdict does not overrule it, :attr:`Verdict.overrules`).

    >>> Decision.from_cell('[{"score": 0.625, "annotator": "", "source": "p.tsv", "decided_at": ""}]')
    (Decision(score=0.625, annotator='', source='p.tsv', decided_at='', notes='', superseded=False),)
    """

    score: float
    annotator: str = ""
    source: str = ""
    decided_at: str = ""
    notes: str = ""
    superseded: bool = False

    def as_dict(self) -> dict[str, object]:
        """This decision as an object of an :data:`EARLIER` cell: its note only when it has one, and
        ``superseded`` only when it is, so that a history without either is written as before they were
        kept.

        >>> Decision(0.0, "desk").as_dict(), Decision(0.0, "desk", notes="wire copy").as_dict()["notes"]
        ({'score': 0.0, 'annotator': 'desk', 'source': '', 'decided_at': ''}, 'wire copy')
        """
        out = asdict(self)
        for name in (NOTES, SUPERSEDED):
            if not out[name]:
                del out[name]
        return out

    @staticmethod
    def cell(decisions: tuple[Decision, ...]) -> str:
        """``decisions`` as the text of an :data:`EARLIER` cell ('' for none)."""
        if not decisions:
            return ""
        return json.dumps([d.as_dict() for d in decisions], ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_cell(cls, text: str) -> tuple[Decision, ...]:
        """The decisions of an :data:`EARLIER` cell; :class:`ValueError` saying why a cell is not one."""
        if not text.strip():
            return ()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError("not a JSON list of earlier decisions") from None
        if not isinstance(data, list) or not data:
            raise ValueError("not a list of earlier decisions")
        out = []
        fields = {"score", "annotator", "source", "decided_at"}
        for d in data:
            if not isinstance(d, dict) or set(d) - {NOTES, SUPERSEDED} != fields:
                raise ValueError(
                    f"{d!r} is not a decision (score, annotator, source, decided_at[, notes][, superseded])"
                )
            score = d["score"]
            if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
                raise ValueError(f"earlier score {score!r} is not a number in [0, 1]")
            if not all(isinstance(d[k], str) for k in ("annotator", "source", "decided_at")):
                raise ValueError(f"{d!r}: annotator, source and decided_at are text")
            if not isinstance(d.get(NOTES, ""), str):
                raise ValueError(f"{d!r}: notes are text")
            if not isinstance(d.get(SUPERSEDED, False), bool):
                raise ValueError(f"{d!r}: superseded is true or false")
            text = (d["annotator"], d["source"], d["decided_at"], d.get(NOTES, ""))
            out.append(cls(float(score), *text, superseded=d.get(SUPERSEDED, False)))
        return tuple(out)


@dataclass(frozen=True)
class Verdict:
    """One editor's verdict on a pair of items.

    Attributes:
        id_a, id_b: the two items (either order).
        score: the rubric level the editor gave (1 same story; below 1 not the same story).
        split: the split the pair was merged into (only ``train`` verdicts act on clusters).
        annotator: who gave it ('' when unknown).
        source: the editors' file it came from ('' when unknown).
        decided_at: when it was decided (ISO 8601, '' when unknown): the time its mark was made in the report
            page (the export's ``marked_at``), else when it was merged.
        sha256_a, sha256_b: the SHA-256 of the texts of ``id_a`` and ``id_b`` the verdict was given on
            ('' when unknown: a verdict kept before the hashes were).
        earlier: the decisions this verdict overrules, oldest first (the pair file's score first), and the
            marks it supersedes among them in time order (:attr:`Decision.superseded`); empty for a verdict
            that overrules none and supersedes none (:attr:`overrules`).
        notes: the editor's note on an overruling verdict ('' for none, and for a verdict a merge added to
            the pair file, whose row holds its note).
    """

    id_a: str
    id_b: str
    score: float
    split: str = ACTING_SPLIT
    annotator: str = ""
    source: str = ""
    decided_at: str = ""
    sha256_a: str = ""
    sha256_b: str = ""
    earlier: tuple[Decision, ...] = ()
    notes: str = ""

    @property
    def overrules(self) -> bool:
        """Whether this verdict is an editor's newer decision on a pair already scored (it keeps the
        decisions it overrules in :attr:`earlier`): a mark it only supersedes was never the pair's decision.

        >>> bobs = Decision(0.25, "bob", superseded=True)
        >>> plain = Verdict("a", "b", 0.0, earlier=(bobs,))
        >>> overruling = Verdict("a", "b", 0.0, earlier=(Decision(0.75), bobs))
        >>> plain.overrules, overruling.overrules, overruling.overruled.score
        (False, True, 0.75)
        """
        return any(not d.superseded for d in self.earlier)

    @property
    def confirms(self) -> bool:
        """Whether this verdict, an editor's newer decision on a scored pair (:attr:`overrules`), gives the
        score the decision it overrules gave (the annotators' score in the pair file): it acts as an
        editor's verdict, and overrules no score.

        >>> Verdict("a", "b", 0.75, earlier=(Decision(0.75),)).confirms, Verdict("a", "b", 0.0).confirms
        (True, False)
        >>> Verdict("a", "b", 0.0, earlier=(Decision(0.75),)).confirms
        False
        """
        overruled = self.overruled
        return overruled is not None and overruled.score == self.score

    @property
    def overruled(self) -> Decision | None:
        """The first decision this verdict overrules (the pair file's score, or the decision that held on
        the pair), ``None`` when it overrules none (:attr:`overrules`)."""
        return next((d for d in self.earlier if not d.superseded), None)

    @property
    def decision(self) -> Decision:
        """This verdict as a :class:`Decision` (what a later verdict on its pair keeps), its note with it."""
        return Decision(self.score, self.annotator, self.source, self.decided_at, self.notes)

    def cell(self, column: str) -> str:
        """The text of this verdict's cell in ``column`` (one of :data:`COLUMNS`), as a store writes it.

        >>> Verdict("a", "b", 1.0).cell("score"), Verdict("a", "b", 1.0).cell("pair_id")
        ('1', 'ed-f04cdced9736a69d')
        """
        if column == "pair_id":
            return self.pair_id
        if column == "score":
            return f"{self.score:g}"
        if column == EARLIER:
            return Decision.cell(self.earlier)
        return str(getattr(self, column))

    def as_dict(self) -> dict[str, object]:
        """This verdict as one JSON object (``nlsim annotate verdicts --json``): its pair id, fields and
        note whole, its earlier decisions as objects (each with its note, '' for none, and whether it is a
        mark superseded rather than overruled), and whether it overrules them.

        >>> Verdict("a", "b", 0.0, notes="wire copy", earlier=(Decision(0.75),)).as_dict()["earlier"]
        [{'score': 0.75, 'annotator': '', 'source': '', 'decided_at': '', 'notes': '', 'superseded': False}]
        """
        out: dict[str, object] = {"pair_id": self.pair_id, **asdict(self)}
        out[EARLIER] = [asdict(d) for d in self.earlier]
        out["overrules"] = self.overrules
        out["confirms"] = self.confirms
        return out

    @property
    def same_story(self) -> bool:
        """Whether the editor said the two items are the same story (a must-link)."""
        return self.score >= SAME_STORY

    @property
    def key(self) -> tuple[str, str]:
        """The pair as :func:`~nlsim.clusters.constraints.pair_key`."""
        return pair_key(self.id_a, self.id_b)

    @property
    def pair_id(self) -> str:
        """The pair's id in the editors' files (:func:`nlsim.io.editor_file.pair_id`)."""
        return pair_id(self.id_a, self.id_b)

    def text_changed(self, texts: Mapping[str, str]) -> list[str]:
        """The items of this verdict whose text in ``texts`` (item id to text) is not the one the verdict
        was given on (by its hash; an item ``texts`` lacks, or a side without a hash, is not compared).

        >>> v = Verdict("a", "b", 0.0, sha256_a=text_sha256("Floods"), sha256_b=text_sha256("Storm"))
        >>> v.text_changed({"a": "Floods", "b": "Storm"}), v.text_changed({"a": "Floods north"})
        ([], ['a'])
        """
        changed = []
        for item, digest in ((self.id_a, self.sha256_a), (self.id_b, self.sha256_b)):
            text = texts.get(item)
            if digest and text is not None and digest not in _hashes(text):
                changed.append(item)
        return changed


def _hashes(text: str) -> set[str]:
    """The hashes a verdict given on ``text`` may carry: of the text, without white space around it, and
    with each run of white space holding a tab or a line break read as one space (as a merge writes it:
    :func:`nlsim.io.cells.one_line`)."""
    flat = one_line(text, every_break=True)
    return {text_sha256(t) for t in (text, text.strip(), flat, flat.strip())}


@dataclass(frozen=True)
class Verdicts:
    """The verdicts of a store, one per pair (by :attr:`Verdict.key`), in the order they were given."""

    records: tuple[Verdict, ...] = ()

    @classmethod
    def from_records(cls, records: Iterable[Verdict]) -> Verdicts:
        """Verdicts from records in the order given; a later verdict on a pair replaces an earlier one."""
        return cls().updated(records)

    def get(self, key: tuple[str, str]) -> Verdict | None:
        """The verdict on the pair ``key`` (:func:`~nlsim.clusters.constraints.pair_key`), or ``None``."""
        return next((v for v in self.records if v.key == key), None)

    def overruling(self) -> tuple[Verdict, ...]:
        """The acting verdicts that overrule an earlier decision on their pair (:attr:`Verdict.overrules`)."""
        return tuple(v for v in self.acting() if v.overrules)

    def updated(self, records: Iterable[Verdict]) -> Verdicts:
        """These verdicts with ``records`` added (a verdict on a pair already here replaces it)."""
        by_key = {v.key: v for v in self.records}
        for v in records:
            by_key.pop(v.key, None)  # the newer verdict goes last
            by_key[v.key] = v
        return Verdicts(tuple(by_key.values()))

    def acting(self) -> tuple[Verdict, ...]:
        """The verdicts that act on clusters: those on training pairs."""
        return tuple(v for v in self.records if v.split == ACTING_SPLIT)

    def constraints(self) -> LinkConstraints:
        """The acting verdicts as must-links (same story) and cannot-links (not the same story)."""
        acting = self.acting()
        return LinkConstraints.from_pairs(
            must=[(v.id_a, v.id_b) for v in acting if v.same_story],
            cannot=[(v.id_a, v.id_b) for v in acting if not v.same_story],
        )

    def __len__(self) -> int:
        return len(self.records)

    def frame(self) -> pd.DataFrame:
        """The verdicts as a table of :data:`COLUMNS` (what a daily state keeps; :data:`NOTES` only while a
        verdict has a note, so a state without one is written as before)."""
        columns = [c for c in COLUMNS if c != NOTES or any(v.notes for v in self.records)]
        return pd.DataFrame(
            {
                "pair_id": [v.pair_id for v in self.records],
                "id_a": [v.id_a for v in self.records],
                "id_b": [v.id_b for v in self.records],
                "score": pd.Series([v.score for v in self.records], dtype="float64"),
                **{c: [v.cell(c) for v in self.records] for c in columns[4:]},
            },
            columns=columns,
        )


def _cell(r: Mapping[str, object], name: str) -> str:
    value = r.get(name)
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def current_layout(earlier: tuple[Decision, ...]) -> tuple[Decision, ...]:
    """A verdict's ``earlier`` decisions as this nlsim keeps them. An earlier one kept a mark older than an
    overruling verdict, merged after it, marked superseded among the decisions the verdict overrules (after
    the first of them); this one keeps it as one of them, as had it been merged first, which never follows
    an overruled decision with a superseded one. Such a mark is read so (the verdict's decision and what it
    overrules unchanged), and the store's next write writes it so.

    >>> old = (Decision(0.75, "", "p.tsv"), Decision(1.0, "desk", superseded=True))
    >>> [d.superseded for d in current_layout(old)]
    [False, False]
    >>> kept = (Decision(1.0, "desk", superseded=True), Decision(0.0, "bob"))  # overruled since: as it is
    >>> current_layout(kept) == kept
    True
    """
    first = next((i for i, d in enumerate(earlier) if not d.superseded), len(earlier))
    if all(not d.superseded for d in earlier[first:]):
        return earlier
    return (*earlier[:first], *(replace(d, superseded=False) for d in earlier[first:]))


def verdict_from_row(r: Mapping[str, object], source: str | Path, row: int) -> Verdict:
    """One verdict from a table row of :data:`COLUMNS` (cells as read; a column the row lacks is empty),
    checked: both item ids, a rubric level, a known split, a pair id that is its items' id, hashes of 64 hex
    digits, earlier decisions (:class:`Decision`) as a store writes them; its note as it is (none in a
    table without :data:`NOTES`). A bad cell is refused by ``source``, ``row`` and field."""
    ids = [_cell(r, "id_a").strip(), _cell(r, "id_b").strip()]
    for name, value in zip(("id_a", "id_b"), ids, strict=True):
        if not value or value == "nan":
            raise InputError(source, row, name, "item id missing")
    if ids[0] == ids[1]:
        raise InputError(source, row, "id_b", f"item {ids[0]!r} paired with itself")
    try:
        score = float(_cell(r, "score"))
    except ValueError:
        raise InputError(source, row, "score", f"score {_cell(r, 'score')!r} is not a number") from None
    if math.isnan(score) or not any(abs(score - lv) < 1e-9 for lv in LEVELS):
        raise InputError(
            source, row, "score", f"score {_cell(r, 'score')!r} is not one of the rubric's levels"
        )
    split = _cell(r, "split").strip()
    if split not in SPLITS:
        raise InputError(source, row, "split", f"split {split!r} is not one of {', '.join(SPLITS)}")
    given = _cell(r, "pair_id").strip()
    if given and given != pair_id(*ids):
        raise InputError(
            source, row, "pair_id", f"pair id {given!r} is not the id of {ids[0]!r} and {ids[1]!r}"
        )
    text = {k: _cell(r, k) for k in ("annotator", "source", "decided_at", "sha256_a", "sha256_b")}
    for side in ("sha256_a", "sha256_b"):
        digest = text[side]
        if digest and (len(digest) != 64 or any(ch not in "0123456789abcdef" for ch in digest)):
            raise InputError(source, row, side, f"{digest[:70]!r} is not a SHA-256 (64 hex digits)")
    try:
        earlier = current_layout(Decision.from_cell(_cell(r, EARLIER)))
    except ValueError as exc:
        raise InputError(source, row, EARLIER, str(exc)) from None
    return Verdict(ids[0], ids[1], round(score, 2), split, **text, earlier=earlier, notes=_cell(r, NOTES))


def from_frame(frame: pd.DataFrame, source: str | Path) -> Verdicts:
    """Verdicts from a table of :data:`COLUMNS` (a daily state's copy; one kept before the text hashes were
    has no hash columns), each row checked (:func:`verdict_from_row`)."""
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(
            source, None, missing[0], f"missing column (a verdict table has {', '.join(COLUMNS)})"
        )
    rows = frame.to_dict("records")
    return Verdicts.from_records(verdict_from_row(r, source, n) for n, r in enumerate(rows, start=1))


def decided(text: str) -> dt.datetime | None:
    """The time a verdict's (or a decision's) ``decided_at`` says, ``None`` when it says none (unknown, or
    not a time). A time without an offset (a merge writes every one with its offset; a store written
    otherwise may not) is read on UTC, as a corpus's ``published_at`` without one is read on the run's time
    zone, UTC when none is given (a merge has none).

    >>> decided("2026-03-02T08:15:00.000Z") < decided("2026-03-02T17:00:00+08:00"), decided("")
    (True, None)
    >>> decided("2026-03-02T08:15:00") == decided("2026-03-02T16:15:00+08:00")
    True
    """
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
