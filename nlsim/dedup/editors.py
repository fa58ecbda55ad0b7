"""What a report run takes from the editors: the pairs they already scored, and their verdicts.

``nlsim dedup --annotated-pairs PAIRS`` names the annotated pair file (the one ``nlsim annotate merge``
extends; the chain passes its own). From it a run takes:

- **the scored pairs** (every split): the page's review queue never offers them again, and the page is
  given their pair ids (:func:`nlsim.io.editor_file.pair_id`) and the kind of split they are in (training,
  or held out: validation and test), never their scores: an editor may overrule a training pair's score
  in the page, never a held-out one's;
- **the verdicts** kept beside it (:func:`nlsim.clusters.verdicts.store_path`), read checked against the
  pair file (:func:`nlsim.clusters.verdicts.check_store`: a verdict the pair file does not hold never acts,
  a merged pair the store lost is rebuilt from the pair file, a store under an earlier name is read; the
  run says what it found and writes nothing), which act on the clusters (every rule of
  :mod:`nlsim.clusters.rules` honours them): "same story" joins two items, "not the same story" keeps them
  apart. Only verdicts on training pairs act; a pair the file holds in its validation or test split never
  does, whatever the store says (the report is judged on those pairs).

A daily run keeps the verdicts and the scored pairs in its state (:mod:`nlsim.dedup.state`): a later run,
with or without ``--annotated-pairs``, and after a model promotion, still honours the verdicts and never
offers a scored pair for review; a run that names the file adds the verdicts merged since (a later verdict
on a pair replaces the earlier one), and the state's copy of an overrule the file contradicts since (its
score changed by hand: the check's ``unheld``) does not act, as it does not in a report that keeps no
state. Every verdict's pair counts as scored.

Example:
    >>> from nlsim.clusters.verdicts import Verdict, Verdicts
    >>> e = EditorsInput(Verdicts.from_records([Verdict("a", "b", 0.0), Verdict("c", "d", 0.0)]),
    ...                  held_out=frozenset({("c", "d")}))
    >>> e.constraints().cannot_link
    frozenset({('a', 'b')})
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from nlsim.clusters.constraints import LinkConstraints, pair_key
from nlsim.clusters.verdicts import Verdict, Verdicts, check_store, earlier_paths, from_frame, store_path
from nlsim.errors import StateError
from nlsim.io.editor_file import pair_id
from nlsim.io.pairs import item_id, load_pairs
from nlsim.progress import say


@dataclass(frozen=True)
class EditorsInput:
    """The editors' part of a run's input.

    Attributes:
        verdicts: every verdict known to the run (the store's, and a daily state's copy).
        scored: every scored pair of the annotated pair file (any split), of the verdicts and of a daily
            state's record, as ``pair_key``.
        held_out: the validation and test pairs of that file and of the verdicts (``pair_key``): never
            constraints.
        training: the training pairs of that file and of the verdicts (``pair_key``).
        source: where the verdicts came from (the store, the state), for the run record.
        text_changed: the verdicts (``pair_key``) given on another text than one of their items carries now
            (:meth:`checked_texts`): never constraints, until an editor decides on the new text.
    """

    verdicts: Verdicts = field(default_factory=Verdicts)
    scored: frozenset[tuple[str, str]] = frozenset()
    held_out: frozenset[tuple[str, str]] = frozenset()
    source: str = ""
    text_changed: frozenset[tuple[str, str]] = frozenset()
    training: frozenset[tuple[str, str]] = frozenset()

    def scored_ids(self, shown: Iterable[str], among: Iterable[tuple[str, str]] | None = None) -> list[str]:
        """The pair ids (:func:`nlsim.io.editor_file.pair_id`) of the scored pairs (``among`` them: of one
        kind of split) whose two items are among ``shown`` (the items a page shows), sorted.

        >>> e = EditorsInput(scored=frozenset({("a", "b"), ("a", "c")}), held_out=frozenset({("a", "c")}))
        >>> e.scored_ids(["a", "b", "c"], e.held_out) == [pair_id("a", "c")]
        True
        """
        known = set(map(str, shown))
        pairs = self.scored if among is None else self.scored & frozenset(among)
        return sorted(pair_id(a, b) for a, b in pairs if a in known and b in known)

    @property
    def set_aside(self) -> frozenset[tuple[str, str]]:
        """The verdicts (``pair_key``) that never act: on a held-out pair, or given on a changed text."""
        return self.held_out | self.text_changed

    def acting_verdicts(self) -> list[Verdict]:
        """The verdicts that act on clusters and topics: on training pairs, none held out (validation and
        test pairs of the annotated pair file never act, whatever the store says), none whose text changed
        (:meth:`checked_texts`), as :meth:`constraints` has them.

        >>> from nlsim.io.editor_file import text_sha256
        >>> v = Verdict("a", "b", 0.0, sha256_a=text_sha256("Floods"), sha256_b=text_sha256("Storm"))
        >>> EditorsInput(Verdicts.from_records([v])).checked_texts({"a": "Floods north"}).acting_verdicts()
        []
        """
        return [v for v in self.verdicts.acting() if v.key not in self.set_aside]

    def constraints(self) -> LinkConstraints:
        """The acting verdicts (training pairs, none held out, none whose text changed) as must-links and
        cannot-links."""
        c, off = self.verdicts.constraints(), self.set_aside
        return LinkConstraints(must_link=c.must_link - off, cannot_link=c.cannot_link - off)

    def checked_texts(self, texts: Mapping[str, str]) -> EditorsInput:
        """These verdicts with those given on another text than an item of theirs carries in ``texts`` (item
        id to the text the page shows, its title) set apart: an old "not the same story" must not keep two
        items apart that now read the same (:meth:`~nlsim.clusters.verdicts.Verdict.text_changed`).

        >>> from nlsim.clusters.verdicts import Verdict
        >>> from nlsim.io.editor_file import text_sha256
        >>> v = Verdict("a", "b", 0.0, sha256_a=text_sha256("Floods"), sha256_b=text_sha256("Storm"))
        >>> e = EditorsInput(Verdicts.from_records([v])).checked_texts({"a": "Floods", "b": "Floods"})
        >>> e.text_changed, e.constraints().cannot_link
        (frozenset({('a', 'b')}), frozenset())
        """
        changed = frozenset(v.key for v in self.verdicts.acting() if v.text_changed(texts))
        return replace(self, text_changed=changed)


SCORED_COLUMNS = ("id_a", "id_b")
"""The columns every daily state's table of scored pairs holds (``pair_key`` order)."""
SCORED_KIND = "kind"
"""The column a daily state's table of scored pairs adds (declared after :data:`SCORED_COLUMNS`: a state
kept before lacks it): each pair's kind of split, :data:`TRAINING` (a training pair: the page offers an
editor's overrule), :data:`HELD_OUT` (validation or test: never marked) or empty (not known)."""
TRAINING = "train"
HELD_OUT = "held-out"


def scored_frame(
    scored: Iterable[tuple[str, str]],
    training: Iterable[tuple[str, str]] = (),
    held_out: Iterable[tuple[str, str]] = (),
) -> pd.DataFrame | None:
    """The scored pairs as the table a daily state keeps (``None`` for none), with the kind of split of
    those among ``training`` and ``held_out`` (:data:`SCORED_KIND`), so that a later run that does not name
    the pair file still knows which of them an editor may overrule and which are held out.

    >>> scored_frame({("b", "c"), ("a", "b")}, training={("b", "c")}).values.tolist()
    [['a', 'b', ''], ['b', 'c', 'train']]
    """
    rows = sorted(scored)
    if not rows:
        return None
    train, held = frozenset(training), frozenset(held_out)
    kinds = [HELD_OUT if key in held else TRAINING if key in train else "" for key in rows]
    frame = pd.DataFrame(rows, columns=list(SCORED_COLUMNS), dtype=str)
    return frame.assign(**{SCORED_KIND: pd.Series(kinds, dtype=str)})


def editors_fingerprint(annotated_pairs: str | Path | None) -> str | None:
    """SHA-256 of the editors' files a run reads (the pair file and its verdict store), ``None`` without
    them: what a daily run's input key holds of the editors."""
    if not annotated_pairs:
        return None
    h = hashlib.sha256()
    for path in (Path(annotated_pairs), store_path(annotated_pairs), *earlier_paths(annotated_pairs)):
        h.update(path.read_bytes() if path.is_file() else b"\x00absent")
        h.update(b"\x1e")
    return h.hexdigest()


def read_editors(
    annotated_pairs: str | Path | None, kept: pd.DataFrame | None, kept_scored: pd.DataFrame | None = None
) -> EditorsInput:
    """The scored pairs and verdicts of ``annotated_pairs`` (when given) with the verdicts ``kept`` in a
    daily state (a table of :data:`nlsim.clusters.verdicts.COLUMNS`, or ``None``) and its scored pairs
    (``kept_scored``: :func:`scored_frame`'s table, or ``None``). Read before the expensive stages: a bad
    file is refused first, by file, row and field."""
    verdicts = Verdicts()
    sources: list[str] = []
    if kept is not None and len(kept):
        verdicts = from_frame(kept, "the state's verdicts")
        sources.append("the state")
    scored: frozenset[tuple[str, str]] = frozenset()
    kept_training: frozenset[tuple[str, str]] = frozenset()
    kept_held: frozenset[tuple[str, str]] = frozenset()
    if kept_scored is not None and len(kept_scored):
        if list(kept_scored.columns) not in (list(SCORED_COLUMNS), [*SCORED_COLUMNS, SCORED_KIND]):
            raise StateError(f"the state's scored pairs have columns {list(kept_scored.columns)}")
        keys = [
            pair_key(str(a), str(b)) for a, b in zip(kept_scored["id_a"], kept_scored["id_b"], strict=True)
        ]
        scored = frozenset(keys)
        if SCORED_KIND in kept_scored.columns:
            kinds = kept_scored[SCORED_KIND].astype(str).tolist()
            kept_training = frozenset(k for k, kind in zip(keys, kinds, strict=True) if kind == TRAINING)
            kept_held = frozenset(k for k, kind in zip(keys, kinds, strict=True) if kind == HELD_OUT)
    held: frozenset[tuple[str, str]] = frozenset()
    training: frozenset[tuple[str, str]] = frozenset()
    if annotated_pairs:
        pairs = load_pairs(annotated_pairs)
        if "id_a" in pairs.columns and "id_b" in pairs.columns:
            ids = [(item_id(a), item_id(b)) for a, b in zip(pairs["id_a"], pairs["id_b"], strict=True)]
            ok = [a != "" and b != "" and a != b for a, b in ids]
            scored |= frozenset(pair_key(a, b) for (a, b), good in zip(ids, ok, strict=True) if good)
            split = pairs["split"].astype(str).tolist()
            held = frozenset(
                pair_key(a, b)
                for (a, b), good, s in zip(ids, ok, split, strict=True)
                if good and s in ("validation", "test")
            )
            training = frozenset(
                pair_key(a, b)
                for (a, b), good, s in zip(ids, ok, split, strict=True)
                if good and s == "train"
            )
        check = check_store(annotated_pairs, pairs)
        check.refuse_damaged()
        for line in check.notes():
            say(line)
        held_now = {v.key for v in check.verdicts.records}
        unheld = {v.key for v in check.unheld} - held_now
        if unheld:  # an overrule the pair file contradicts since: its row holds, not the state's copy
            verdicts = Verdicts.from_records(v for v in verdicts.records if v.key not in unheld)
        if len(check.verdicts):
            verdicts = verdicts.updated(check.shown().records)
            sources.append(str(check.path))
    known = held | training  # the pair file names a pair's split: it goes before what the state kept
    held |= kept_held - known
    training |= kept_training - known
    scored |= frozenset(v.key for v in verdicts.records)
    held |= frozenset(v.key for v in verdicts.records if v.split in ("validation", "test"))
    training |= frozenset(v.key for v in verdicts.records if v.split == "train") - held
    return EditorsInput(verdicts, scored, held, " and ".join(sources), training=training)
