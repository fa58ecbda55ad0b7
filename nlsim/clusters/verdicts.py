"""The editors' verdicts: which pairs of items an editor said are (or are not) the same story, kept so
that every later report and daily run honours them.

An editor marks a pair in the report page and the export is merged with ``nlsim annotate merge``: the pair
goes into the pair file (it trains the next model, as before) *and* into this store, a CSV beside the pair
file (:func:`store_path`: ``annotations/thucnews_tw_pairs.tsv`` keeps its verdicts in
``annotations/thucnews_tw_pairs.verdicts.csv``). A report (``nlsim dedup --verdicts FILE``) turns the
verdicts into :class:`~nlsim.clusters.constraints.LinkConstraints`: "same story" (level 1) is a must-link,
any lower level ("not the same story") a cannot-link. A daily run keeps a copy in its state, so the
verdicts act in every later run, across model promotions, whether or not the next run names the file.

Only verdicts on **training** pairs act (:meth:`Verdicts.constraints`): a validation or test pair used as a
constraint would put the editors' answer into the clusters the report is judged on, and the judged figures
would mean nothing. A verdict on such a pair is kept in the store (it is the editors' work) and listed as
not acting.

One verdict per pair: a later one on the same pair replaces the earlier (:meth:`Verdicts.updated`).

Example:
    >>> v = Verdicts.from_records([Verdict("a", "b", 1.0, "train"), Verdict("c", "a", 0.0, "train"),
    ...                            Verdict("d", "e", 0.0, "validation")])
    >>> c = v.constraints()
    >>> c.requires("a", "b"), c.forbids("a", "c"), c.forbids("d", "e"), len(v), len(v.acting())
    (True, True, False, 3, 2)
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nlsim.clusters.constraints import LinkConstraints, pair_key
from nlsim.errors import InputError
from nlsim.io.atomic import atomic_write_text
from nlsim.io.editor_file import pair_id

SAME_STORY = 1.0
"""The rubric level of "same story": a verdict at it is a must-link, one below it a cannot-link."""
LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
ACTING_SPLIT = "train"
"""The only split whose verdicts act on clusters (see the module docstring)."""
SPLITS = ("train", "validation", "test")
COLUMNS = ("pair_id", "id_a", "id_b", "score", "split", "annotator", "source", "decided_at")
"""The store's columns, in order."""
SUFFIX = ".verdicts.csv"


def store_path(pairs_file: str | Path) -> Path:
    """The verdict store kept beside ``pairs_file``: its name without the extension, ``.verdicts.csv``. A
    pair file that is a symbolic link keeps its store beside the file it links to (which a merge rewrites),
    so a report given either path finds the same verdicts.

    >>> store_path("annotations/thucnews_tw_pairs.tsv").as_posix()
    'annotations/thucnews_tw_pairs.verdicts.csv'
    """
    path = Path(pairs_file)
    return _beside(Path(os.path.realpath(path)) if path.is_symlink() else path)


def _beside(path: Path) -> Path:
    """The store's name beside ``path``: its name without the extension, ``.verdicts.csv``."""
    return path.with_name(path.name.rsplit(".", 1)[0] + SUFFIX)


def link_store(pairs_file: str | Path) -> Path | None:
    """The store an earlier nlsim kept beside a pair file that is a symbolic link (beside the link, not the
    file it links to), when there is one: still read, and folded into :func:`store_path`'s at the next
    merge."""
    path = Path(pairs_file)
    if not path.is_symlink():
        return None
    beside = _beside(path)
    return beside if beside.is_file() and beside != store_path(path) else None


@dataclass(frozen=True)
class Verdict:
    """One editor's verdict on a pair of items.

    Attributes:
        id_a, id_b: the two items (either order).
        score: the rubric level the editor gave (1 same story; below 1 not the same story).
        split: the split the pair was merged into (only ``train`` verdicts act on clusters).
        annotator: who gave it ('' when unknown).
        source: the editors' file it came from ('' when unknown).
        decided_at: when it was merged (ISO 8601, '' when unknown).
    """

    id_a: str
    id_b: str
    score: float
    split: str = ACTING_SPLIT
    annotator: str = ""
    source: str = ""
    decided_at: str = ""

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


@dataclass(frozen=True)
class Verdicts:
    """The verdicts of a store, one per pair (by :attr:`Verdict.key`), in the order they were given."""

    records: tuple[Verdict, ...] = ()

    @classmethod
    def from_records(cls, records: Iterable[Verdict]) -> Verdicts:
        """Verdicts from records in the order given; a later verdict on a pair replaces an earlier one."""
        return cls().updated(records)

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
        """The verdicts as a table of :data:`COLUMNS` (what the store and a daily state keep)."""
        return pd.DataFrame(
            {
                "pair_id": [v.pair_id for v in self.records],
                "id_a": [v.id_a for v in self.records],
                "id_b": [v.id_b for v in self.records],
                "score": pd.Series([v.score for v in self.records], dtype="float64"),
                "split": [v.split for v in self.records],
                "annotator": [v.annotator for v in self.records],
                "source": [v.source for v in self.records],
                "decided_at": [v.decided_at for v in self.records],
            },
            columns=list(COLUMNS),
        )


def from_frame(frame: pd.DataFrame, source: str | Path) -> Verdicts:
    """Verdicts from a table of :data:`COLUMNS` (a store read back, a daily state's copy), each row checked:
    both item ids, a rubric level, a known split, a pair id that is its items' id. A bad row is refused by
    ``source``, row and field."""
    missing = [c for c in ("id_a", "id_b", "score", "split") if c not in frame.columns]
    if missing:
        raise InputError(
            source, None, missing[0], f"missing column (a verdict store has {', '.join(COLUMNS)})"
        )
    records: list[Verdict] = []
    for row, r in enumerate(frame.to_dict("records"), start=1):
        ids = [str(r["id_a"] if r["id_a"] is not None else "").strip()]
        ids.append(str(r["id_b"] if r["id_b"] is not None else "").strip())
        for name, value in zip(("id_a", "id_b"), ids, strict=True):
            if not value or value == "nan":
                raise InputError(source, row, name, "item id missing")
        if ids[0] == ids[1]:
            raise InputError(source, row, "id_b", f"item {ids[0]!r} paired with itself")
        try:
            score = float(r["score"])
        except (TypeError, ValueError):
            raise InputError(source, row, "score", f"score {r['score']!r} is not a number") from None
        if math.isnan(score) or not any(abs(score - lv) < 1e-9 for lv in LEVELS):
            raise InputError(source, row, "score", f"score {r['score']!r} is not one of the rubric's levels")
        split = str(r["split"]).strip()
        if split not in SPLITS:
            raise InputError(source, row, "split", f"split {split!r} is not one of {', '.join(SPLITS)}")
        given = str(r.get("pair_id") or "").strip()
        if given and given != pair_id(*ids):
            raise InputError(
                source, row, "pair_id", f"pair id {given!r} is not the id of {ids[0]!r} and {ids[1]!r}"
            )
        text = {k: "" if r.get(k) is None or str(r.get(k)) == "nan" else str(r.get(k)) for k in COLUMNS[5:]}
        records.append(Verdict(ids[0], ids[1], round(score, 2), split, **text))
    return Verdicts.from_records(records)


def load_verdicts(path: str | Path) -> Verdicts:
    """Read a verdict store (a CSV of :data:`COLUMNS`); a file that does not exist holds no verdict."""
    path = Path(path)
    if not path.exists():
        return Verdicts()
    if not path.is_file():
        raise InputError(path, None, None, "the verdict store is not a file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, None, None, "the verdict store is not UTF-8 text") from None
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(path, None, None, f"cannot read the verdict store as CSV ({exc})") from None
    return from_frame(frame, path)


def save_verdicts(verdicts: Verdicts, path: str | Path) -> None:
    """Write the store atomically (a temporary file beside it, then a rename): a failed write leaves the
    previous store as it was."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for v in verdicts.records:
        writer.writerow(
            [v.pair_id, v.id_a, v.id_b, f"{v.score:g}", v.split, v.annotator, v.source, v.decided_at]
        )
    atomic_write_text(path, buf.getvalue())
