"""Merging an editors' filled file into the pair file (``nlsim annotate merge``), and checking the verdict
store against the pair file (``nlsim annotate verdicts``).

The filled file is checked first (:mod:`~nlsim.annotation.validate`); its pairs are appended to the pair
file with split ``train`` unless told otherwise (:mod:`~nlsim.annotation.pair_file`), and added to the
verdict store beside it (:mod:`nlsim.clusters.verdicts`); a row overruling a training pair already scored
goes into the verdict store only. All of it under a lock on the pair file's folder (one merge at a time): a
refused merge changes nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from nlsim.annotation.pair_file import appended, columns_of, write_checked
from nlsim.annotation.validate import (
    NOTES,
    Scored,
    cell_problems,
    check_new,
    check_texts,
    corpus_texts,
    is_blank,
    known_texts,
    mark_times,
    one_line_notes,
    overrule_rows,
    read_filled,
    same_text,
    split_problems,
    unescape_cells,
    validate_filled,
)
from nlsim.clusters.constraints import pair_key
from nlsim.clusters.verdicts import (
    ACTING_SPLIT,
    Decision,
    PairRow,
    StoreCheck,
    Verdict,
    Verdicts,
    check_store,
    decided,
    holds_already,
    kept_mark,
    newer_than,
    overruled_since,
    overruling,
    pair_rows,
    retire_earlier,
    with_superseded,
    write_store,
)
from nlsim.clusters.verdicts.store import write_store_bytes
from nlsim.errors import ConfigError, InputError
from nlsim.faults import MERGE_FAULT_STAGES, fault_point
from nlsim.io import editor_file
from nlsim.io.cells import one_line
from nlsim.io.lock import LockedError
from nlsim.io.ownership import check_outside_stores
from nlsim.io.pairs import (
    SPLITS,
    check_pair_columns,
    item_id,
    read_pair_table,
    validate_pairs,
)
from nlsim.io.tables import compression, table_format
from nlsim.progress import counted, say, warn

MERGE_LOCK_WAIT = 60.0
"""Seconds a merge waits for another merge into the same folder before it gives up."""


@contextlib.contextmanager
def merge_lock(target: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the folder of ``target`` (one merge into it at a time), waiting up to
    :data:`MERGE_LOCK_WAIT` seconds; the kernel drops it when the process ends, so it never stays stuck.
    A folder that cannot be opened for reading (write and search permission only) gets the lock on
    ``target`` itself; a ``target`` that cannot be opened either is refused by name."""
    try:
        fd = os.open(target.parent, os.O_RDONLY)
    except OSError:  # a folder that may be written but not listed: lock the pair file itself
        try:
            fd = os.open(target, os.O_RDONLY)
        except OSError as exc:
            raise InputError(target, None, None, f"cannot be opened ({exc.strerror or exc})") from None
    try:
        deadline = time.monotonic() + MERGE_LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockedError(
                        f"another merge into {target} is running (waited {MERGE_LOCK_WAIT:g} s); try again "
                        "once it has finished"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock


@dataclass
class MergeResult:
    """What a merge did: pairs added, blank rows skipped, pairs in the file now, their split, the file."""

    added: int
    skipped_blank: int
    total: int
    split: str
    path: Path
    skipped_scored: int = 0
    """Rows skipped because their pair was already annotated (``--skip-scored``)."""
    verdicts: Path | None = None
    """The verdict store the merged pairs were added to (beside the pair file)."""
    overruled: int = 0
    """Training pairs the pair file already scored whose verdict is now the editor's newer decision."""
    confirmed: int = 0
    """Of those, the decisions that give the score the annotators gave and the decision that held gave (an
    editor confirming the annotators' score): they act as editors' verdicts, and change no score."""
    already_held: int = 0
    """Overruling rows whose decision was merged before (a file merged again, marks exported again):
    nothing new."""
    overruled_since: tuple[str, ...] = ()
    """Of those, each row sending again an editor's decision that another editor overruled since, said
    with both decisions (the newer one stands): ``n0/n1: desk's 0 (marks-1.csv, …) … bob's 0.75 …``."""
    older: tuple[str, ...] = ()
    """Overruling rows of a mark made before the decision that holds on their pair (by ``marked_at``): not
    merged, each said with the newer decision, which stands."""
    renoted: tuple[str, ...] = ()
    """Of the overruling rows merged before (:attr:`already_held`), each whose decision is the one that
    holds with another note (a note edited on the page after the overrule was merged): its note is the
    verdict's note in the verdict store now, said with the note it replaces."""
    superseded: int = 0
    """Of :attr:`older`, the marks kept in the verdict store among the earlier decisions on their pair, in
    time order: superseded, they do not act (and a verdict that overruled nothing overrules nothing still)."""
    merged_before: int = 0
    """Rows whose pair was merged before from another file with the same score by the same editor, in
    this split (marks exported again from the report page): skipped."""
    notes_updated: tuple[str, ...] = ()
    """Of those, each row whose note differs from the one the pair file holds for the pair (a note edited
    on the page after its mark was merged): its note is written into the pair file's row, said with the
    note it replaces."""
    renoted_earlier: tuple[str, ...] = ()
    """Of the overruling rows merged before whose decision another one stands over (:attr:`overruled_since`,
    or a mark kept superseded), each with another note than the one kept with its decision among the
    earlier ones on its pair (a note edited on the page since): the edited note is kept with that decision
    now (the note of the decision that stands is its own editor's), said with the note it replaces."""
    new_text: tuple[str, ...] = ()
    """Of the pairs overruled (:attr:`overruled`), each (``id_a/id_b``) decided on another text of an item
    than the pair file holds (the item's headline edited since the pair was scored, as the page showed it):
    the verdict records the new text's hash and acts on it; the pair file keeps the text it was scored on."""
    earliest: tuple[str, ...] = ()
    """Overruling rows of a mark made before the decision that holds on a pair an editor's file added:
    each is the pair file's row of its pair now, and the decision that holds overrules it, as had the
    older file been merged first; each said with the decision that holds."""
    taken_back: tuple[str, ...] = ()
    """Rows on a pair whose verdict was taken back (its pair removed from the pair file), marked before it
    was: not merged (an old export merged again does not bring the verdict back), each said with it."""


def _notes_for(fmt: str, new: pd.DataFrame, log: Callable[[str], None]) -> pd.DataFrame:
    """``new`` as a pair file of format ``fmt`` takes its notes: a TSV one, one line a row, with each run of
    white space holding a tab or a line break read as one space (:func:`one_line_notes`), said in ``log``."""
    if fmt != "tsv":
        return new
    new, folded = one_line_notes(new)
    if folded:
        log(
            f"{folded} note(s) held a tab or a line break: each run of them is read as one space "
            "(a TSV pair file holds one line a row)"
        )
    return new


def _read_target(target: Path) -> pd.DataFrame:
    """The pair file merged into (:func:`~nlsim.io.pairs.read_pair_table`), refused where a column is spelt
    otherwise or has one id column without the other (:func:`~nlsim.io.pairs.check_pair_columns`): the
    merged rows would go into a new column beside it (``split`` beside ``Split``)."""
    original = read_pair_table(target)
    check_pair_columns(original, target)
    return original


def merge_annotations(
    filled: str | Path,
    pairs_file: str | Path,
    *,
    split: str = "train",
    skip_blank: bool = False,
    corpus: str | Path | None = None,
    skip_scored: bool = False,
    overrule: bool = False,
    text_field: str | None = None,
    log: Callable[[str], None] = say,
) -> MergeResult:
    """Validate ``filled`` and append its pairs to ``pairs_file`` with ``split``.

    Each text is checked against its item's known text (the pair file, ``corpus``: its ``text_field``, or
    the first text column :func:`~nlsim.io.corpus.load_items` finds, as ``nlsim annotate draw`` reads it):
    :func:`~nlsim.annotation.validate.check_texts`.

    The editor's ``stratum`` (prefixed ``editor-loop:``), ``annotator`` and ``notes`` are kept (as columns
    of the pair file, empty for older rows). The merged table is validated (no pair twice, none in two
    splits), written beside the pair file, read back and compared before it replaces the file, atomically:
    a refused merge leaves the pair file as it was. A TSV or CSV pair file keeps its existing rows byte for
    byte (byte-order mark and line endings included; but a merged row's note edited on the page since and
    sent again: :func:`_renoted`), and every pair file keeps its permissions; a symbolic link is followed
    (its target is rewritten). One merge into a folder at a time, under a lock (:func:`merge_lock`).

    Every conflict with the pair file is named at once; ``skip_scored`` skips (and counts) the rows whose
    pair is already annotated instead. The merged pairs are also the editors' verdicts, added to the
    store beside the pair file (:mod:`nlsim.clusters.verdicts`) that later reports honour.

    ``overrule`` (or a row's ``overrule`` cell, :data:`editor_file.OVERRULE`): a row whose pair the pair
    file already scores in its training split is the editor's newer decision. It is recorded in the
    verdict store as the pair's verdict, the decisions it overrules kept with it
    (:func:`~nlsim.clusters.verdicts.overruling`), and the pair file is left as it is; a validation or test
    pair is never overruled (refused by name). A decision merged already adds nothing and is counted
    (:func:`~nlsim.clusters.verdicts.holds_already`), nor undoes another editor's newer one (said with both).
    A page export dates each decision by when it was marked (:data:`editor_file.MARKED_AT`): the newer mark
    stands, whoever's, whichever file is merged first (an older one is said, kept superseded)."""
    _check_options(split, corpus, text_field, pairs_file, filled)
    raw, new, early, intent, decided = _read_filled(filled, split, skip_blank=skip_blank, overrule=overrule)
    skipped = int(raw["score"].map(is_blank).sum()) if skip_blank else 0
    path = Path(pairs_file)
    target = Path(os.path.realpath(path)) if path.exists() else path
    fmt = table_format(target, ("parquet", "csv", "tsv"))
    with merge_lock(target):
        data = target.read_bytes() if fmt != "parquet" and target.is_file() else b""
        original = _read_target(target)  # existing rows are written back exactly as read
        _refuse_editors_file(pairs_file, original)
        existing = validate_pairs(original, target, repeated_scores="refuse", misread="refuse")
        new, back = _taken_back(new, existing, decided, path)
        intent |= _kept_marks(new, existing, decided, path, intent)
        renewed = _overruling_training_rows(new, existing, intent)
        in_corpus = corpus_texts(corpus, text_field)
        known = known_texts(existing, pairs_file, corpus, text_field, in_corpus)
        new, found = check_texts(new, known, filled, corpus, renewed=renewed, current=in_corpus)
        new = _notes_for(fmt, new, log)
        early += cell_problems(new, columns_of(original, new)[0], filled, pairs_file)
        scored = _checked(new, existing, decided, path, intent, filled, skip_scored, found, early, renewed)
        fresh, newer, skipped_scored = _parted(new, scored, skip_scored, filled, pairs_file, bool(back))
        label = f"{pairs_file} merged with {filled}"
        notes, renoted = _renoted(new, original, scored.again)
        first = _earliest(newer, scored.overrules, path, existing, decided)
        on_new_text = _new_text_rows(newer, scored.overrules)
        first = {r: k for r, k in first.items() if r not in on_new_text}
        earlier = _earliest_rows(newer, original, first)
        changed = bool(len(fresh) or notes or earlier[1])
        body = appended(original, fresh, split, fmt, data, label, notes, earlier) if changed else None
        # the verdicts are checked and written before the pair file: its rename commits the merge
        rows = scored.overrules
        with _verdicts_kept(fresh, newer, rows, path, existing, decided, log, set(first.values())) as kept:
            if body is not None:
                write_checked(target, body.checked, body.write, label)
    total = len(body.checked) if body is not None else len(existing)
    result = MergeResult(len(fresh), skipped, total, split, path, skipped_scored, notes_updated=renoted)
    result.merged_before, result.taken_back = len(scored.again), back
    kept.told(result)
    _warn_unscored_overrules(fresh, overrule_rows(raw, filled, [], every=False), filled, pairs_file, split)
    log(_merge_said(result, skip_scored))
    return result


def _warn_unscored_overrules(
    fresh: pd.DataFrame, asked: set[int], filled: str | Path, pairs_file: str | Path, split: str = "train"
) -> None:
    """Warn of the rows of ``fresh`` (merged as new pairs of ``split``) whose ``overrule`` cell is true
    (``asked``, sheet rows): the page marked them where their pair was scored, yet the pair file scores no
    such pair (another pair file than the report was given, or a row taken out of it since). Each is merged
    as a new pair all the same: a training pair the editor's verdict, a validation or test pair one that
    judges the report and acts as no verdict. The warning names the file, each sheet row and its item ids,
    and what the rows became."""
    if not asked or "id_a" not in fresh.columns or "id_b" not in fresh.columns:
        return
    rows = fresh.attrs.get("rows") or []
    named = [
        f"sheet row {r} ({item_id(a)}/{item_id(b)})"
        for r, a, b in zip(rows, fresh["id_a"], fresh["id_b"], strict=True)
        if r in asked
    ]
    if named:
        warn(
            f"{filled}: {len(named)} row(s) marked overrule on a pair nobody scored in {pairs_file}, merged "
            + (
                "as new training pairs, each the editor's verdict all the same"
                if split == "train"
                else f"as new {split} pairs, which judge the report and act as no verdict"
            )
            + " (the page showed them scored: was it given another pair file, or was the pair taken out of "
            "it since?): " + "; ".join(named)
        )


def _checked(
    new: pd.DataFrame,
    existing: pd.DataFrame,
    decided: _Decided,
    path: Path,
    intent: set[int],
    filled: str | Path,
    skip_scored: bool,
    found: list[InputError],
    early: list[InputError],
    renewed: set[int],
) -> Scored:
    """The editor's rows ``new`` checked against the pair file at ``path`` (:func:`check_new`, every problem
    named at once), knowing the decisions merged before (:func:`_merged_before`), the marks that
    ``--overrule`` would not merge as a newer decision (:func:`_not_overruling`) and the overruling rows
    that may give an item its new text (``renewed``: :func:`_overruling_training_rows`)."""
    stale = _not_overruling(new, existing, decided, path)
    return check_new(
        new,
        existing,
        filled,
        path,
        skip_scored=skip_scored,
        found=found,
        early=early,
        intent=intent,
        again=_merged_before(new, existing, decided, path, intent),
        older=stale["older"],
        history=stale["history"],
        renewed=renewed,
    )


def _new_text_rows(newer: pd.DataFrame, rows: dict[int, PairRow]) -> set[int]:
    """The overruling rows of ``newer`` (sheet rows, each with its pair's row of the pair file in ``rows``)
    that give an item another text than the pair file's row: such a mark is never written over that row
    (:func:`_earliest`), which keeps the text the pair was scored on; made before the decision that holds,
    it is kept among the pair's earlier decisions."""
    out: set[int] = set()
    if newer.empty or "id_a" not in newer.columns or "id_b" not in newer.columns:
        return out
    for r, a, b, ta, tb in zip(
        newer.attrs["rows"], newer["id_a"], newer["id_b"], newer["text_a"], newer["text_b"], strict=True
    ):
        pair = rows.get(int(r))
        if pair is None:
            continue
        held = {pair.id_a: pair.text_a, pair.id_b: pair.text_b}
        if not (same_text(str(ta), held[item_id(a)]) and same_text(str(tb), held[item_id(b)])):
            out.add(int(r))
    return out


def _overruling_training_rows(new: pd.DataFrame, existing: pd.DataFrame, intent: set[int]) -> set[int]:
    """The sheet rows of ``new`` meant to overrule (``intent``) whose pair the pair file scores by the same
    item ids in its training split: such a mark, made in the page on an item's headline edited since the
    pair was scored, decides on the new text (:func:`~nlsim.annotation.validate.check_texts` allows it
    where the export's hash, or the corpus, vouches for it); the verdict records it, the pair file keeps its
    row."""
    if not intent or "id_a" not in new.columns or "id_b" not in new.columns:
        return set()
    training = {k for k, r in pair_rows(existing).items() if r.split == ACTING_SPLIT}
    rows = [int(r) for r in (new.attrs.get("rows") or range(1, len(new) + 1))]
    return {
        r
        for r, a, b in zip(rows, new["id_a"], new["id_b"], strict=True)
        if r in intent and pair_key(item_id(a), item_id(b)) in training
    }


def _read_filled(
    filled: str | Path, split: str, *, skip_blank: bool, overrule: bool
) -> tuple[pd.DataFrame, pd.DataFrame, list[InputError], set[int], _Decided]:
    """The editors' file ``filled`` as read (its cells unescaped) and its sound rows checked on their own,
    the problems found (refused later, with those the pair file shows), the sheet rows meant to overrule,
    and where and when its decisions were made (each row's mark time)."""
    raw = unescape_cells(read_filled(filled))
    early: list[InputError] = []
    intent = overrule_rows(raw, filled, early, every=overrule)
    decided = _Decided(filled, split, mark_times(raw, filled, early))
    new = validate_filled(raw, filled, skip_blank=skip_blank, problems=early)
    early += split_problems(new, split, filled)
    return raw, new, early, intent, decided


def _check_options(
    split: str,
    corpus: str | Path | None,
    text_field: str | None,
    pairs_file: str | Path,
    filled: str | Path,
) -> None:
    """Refuse a merge's options that cannot be followed: an unknown split, a text column without a corpus, a
    compressed pair file (``pairs.tsv.gz``: read as the file it holds, but a merge writes into it), the pair
    file given as ``filled`` (:func:`_refuse_same_file`), a pair file inside a model store, whose folder a
    merge writes into (the verdict store and the lock beside it:
    :func:`~nlsim.io.ownership.check_outside_stores`)."""
    _refuse_same_file(filled, pairs_file)
    check_outside_stores({"--pairs": pairs_file})
    packed = compression(pairs_file)
    if packed is not None:
        raise ConfigError(
            f"--pairs {pairs_file} is compressed ({packed}): a merge writes the new pairs into the pair "
            f"file, and writes no compressed one; decompress it and merge into {Path(pairs_file).stem}"
        )
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r} (use {', '.join(SPLITS)})")
    if text_field is not None and corpus is None:
        raise ConfigError(f"--text-field {text_field}: a column of --corpus, which is not given")


def _refuse_same_file(filled: str | Path, pairs_file: str | Path) -> None:
    """Refuse a ``--filled`` that is the pair file itself (however named: another path, a link): each of
    its rows is a pair the pair file scores, and ``--overrule``, which the refusal of such rows offers, made
    every training pair an editor's verdict that overrules the annotators' score with that same score, each
    acting on the clusters as a link.

    >>> import tempfile
    >>> pairs = Path(tempfile.mkdtemp()) / "p.tsv"
    >>> _ = pairs.write_text("pair_id,score", encoding="utf-8")
    >>> _refuse_same_file(pairs.parent / "." / "p.tsv", pairs)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nlsim.errors.ConfigError: --filled .../p.tsv is the pair file --pairs .../p.tsv itself: ...
    """
    given, target = Path(filled), Path(pairs_file)
    try:
        same = given.is_file() and target.is_file() and given.samefile(target)
    except OSError:
        same = False
    if same:
        raise ConfigError(
            f"--filled {filled} is the pair file --pairs {pairs_file} itself: a merge adds the pairs of an "
            "editors' file (nlsim annotate draw, or a report page's export) to the pair file; give that file "
            "as --filled"
        )


def _refuse_editors_file(pairs_file: str | Path, table: pd.DataFrame) -> None:
    """Refuse a ``--pairs`` that is an editors' file (a drawn file or a page export, by its columns: no
    pair file has exactly those), which a merge or ``--write`` would rewrite: two editors' files given
    the wrong way round. The file is kept as delivered."""
    if editor_file.is_editors_header(table.columns):
        raise ConfigError(
            f"--pairs {pairs_file} is an editors' file (nlsim annotate draw, or a report page's export), not "
            "an annotated pair file: give it as --filled, and the pair file it goes into as --pairs"
        )


def _merge_said(result: MergeResult, skip_scored: bool) -> str:
    """What a merge says it did, in one line."""
    scored_note = f", {result.skipped_scored} already annotated skipped" if skip_scored else ""
    said = (
        f"added {counted(result.added, 'pair', 'pairs')} to {result.path} as {result.split!r} "
        f"({counted(result.skipped_blank, 'blank row', 'blank rows')} skipped{scored_note}); now "
        f"{counted(result.total, 'pair', 'pairs')}"
    )
    if result.overruled:
        confirming = (
            f" ({result.confirmed} of them confirming the score they had, which the editor's verdict now "
            "joins or parts their items by)"
            if result.confirmed
            else ""
        )
        said += (
            f"; {result.overruled} training pair(s) overruled{confirming}: the editor's newer decision is "
            f"their verdict in {result.verdicts} (the earlier kept with it; the pair file keeps its score) "
            "and the next training reads it"
        )
    if result.new_text:
        said += (
            f"; of them, {len(result.new_text)} decided on a text that changed since the pair was scored "
            f"({', '.join(result.new_text)}): the verdict acts on the new text, the pair file keeps the text "
            "it was scored on"
        )
    if result.already_held:
        said += (
            f"; {result.already_held} overruling decision(s) merged before (the same score by the same "
            "editor: a file merged again, or marks exported again): nothing new"
        )
    if result.renoted:
        said += (
            f"; of them, {len(result.renoted)} with a note edited since the overrule was merged: the edited "
            f"note is the verdict's note in {result.verdicts} now: " + "; ".join(result.renoted)
        )
    if result.overruled_since:
        said += (
            f"; of them, {len(result.overruled_since)} overruled since by another editor's newer decision, "
            "which stands (an old mark sent again never undoes it): " + "; ".join(result.overruled_since)
        )
    if result.renoted_earlier:
        said += (
            f"; of them, {len(result.renoted_earlier)} with a note edited since: the edited note is kept "
            f"with that decision among the earlier ones on its pair in {result.verdicts} now (the decision "
            "that stands keeps its own): " + "; ".join(result.renoted_earlier)
        )
    if result.older:
        said += (
            f"; {len(result.older)} mark(s) made no later than the decision that holds on their pair, which "
            "stands (the newer mark stands, whoever's; of two made at one moment, the one merged first): "
            + "; ".join(result.older)
        )
    if result.earliest:
        said += (
            f"; {len(result.earliest)} mark(s) made before the decision that holds on a pair an editor's "
            f"file added: each is the pair's row in {result.path} now, and the decision that holds overrules "
            f"it in {result.verdicts}, which stands (as had the older file been merged first): "
            + "; ".join(result.earliest)
        )
    if result.superseded:
        said += (
            f"; of them, {result.superseded} kept among the earlier decisions on their pair, in time order "
            "(the pair's history, the same whichever file was merged first; they do not act)"
        )
    if result.merged_before:
        said += (
            f"; {result.merged_before} pair(s) merged before from another file with the same score by the "
            "same editor (marks exported again): skipped"
        )
    if result.notes_updated:
        said += (
            f"; of them, {len(result.notes_updated)} with a note edited since the mark was merged: the "
            "edited note is the pair's note in the pair file now: " + "; ".join(result.notes_updated)
        )
    said += _taken_back_said(result.taken_back)
    if result.verdicts is not None and not result.overruled:
        said += f"; the verdicts are kept in {result.verdicts}"
    return said


def _taken_back_said(rows: tuple[str, ...], shown: int = 10) -> str:
    """What a merge says of the rows it left out on verdicts taken back (:func:`_taken_back`): the first
    ``shown`` of them; '' for none."""
    if not rows:
        return ""
    more = f" and {len(rows) - shown} more" if len(rows) > shown else ""
    return (
        f"; {len(rows)} mark(s) made before their pair's verdict was taken back (its pair removed from the "
        "pair file): not merged (a mark made since is a new decision): " + "; ".join(rows[:shown]) + more
    )


def _parted(
    new: pd.DataFrame,
    scored: Scored,
    skip_scored: bool,
    filled: str | Path,
    pairs_file: str | Path,
    taken_back: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """``new`` parted into the rows the pair file does not score yet (appended to it) and the overruling
    ones (:attr:`~nlsim.annotation.validate.Scored.overrules`: the verdict store only), without those
    ``--skip-scored`` skips; and how many it skipped. A file with no row left is refused as every pair
    already annotated, but where rows on verdicts taken back were left out (``taken_back``: said)."""
    rows = [int(r) for r in (new.attrs.get("rows") or range(1, len(new) + 1))]
    skip = scored.skipped if skip_scored else set()
    gone = skip | scored.again
    fresh = _rows_of(new, rows, [r not in scored.overrules and r not in gone for r in rows])
    newer = _rows_of(new, rows, [r in scored.overrules for r in rows])
    if fresh.empty and newer.empty and not scored.again and not taken_back:
        raise InputError(filled, None, None, f"every pair of the file is already annotated in {pairs_file}")
    return fresh, newer, len(skip & set(rows))


def _merged_before(
    new: pd.DataFrame,
    existing: pd.DataFrame,
    decided: _Decided,
    pairs_file: Path,
    intent: set[int],
) -> set[int]:
    """The sheet rows of ``new`` (not meant to overrule) whose verdict a merge of another file gave already:
    the pair file holds the pair under the same item ids as a merged pair (``editor-loop:``) in the split
    merged into, with the same score by the same annotator, and the verdict store's verdict on it (if any)
    came from a file of another name. The report page's *Export all marks* exports the marks merged before
    with the new ones; those are skipped, not refused. The same file merged again is refused as before, and
    a pair scored otherwise (another level, another editor) stays a conflict; so does a row marked after
    another decision that holds on the pair now (a colleague's overrule): the editor marked it again, a new
    decision, which ``--overrule`` merges."""
    split, filled = decided.split, decided.filled
    if "id_a" not in new.columns or "id_b" not in new.columns:
        return set()
    held = pair_rows(existing)
    if not held:
        return set()
    verdicts = _held_verdicts(pairs_file, existing)
    who = new["annotator"] if "annotator" in new.columns else pd.Series([""] * len(new))
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    again: set[int] = set()
    for row, a, b, score, w in zip(rows, new["id_a"], new["id_b"], new["score"], who, strict=True):
        key = pair_key(item_id(a), item_id(b))
        pair = held.get(key) if item_id(a) and item_id(b) else None
        if int(row) in intent or pair is None or not pair.merged or pair.split != split:
            continue
        annotator = "" if is_blank(w) else str(w).strip()
        if abs(pair.score - float(score)) > 1e-9 or pair.annotator != annotator:
            continue
        v = verdicts.get(key)
        when = decided.times.get(int(row), "")
        mark = Verdict(key[0], key[1], float(score), annotator=annotator, decided_at=when)
        other = v is not None and (v.annotator, v.score) != (annotator, mark.score)
        if other and when and newer_than(mark, v):
            continue  # marked again after a colleague's decision: a new decision, not the old one again
        if v is None or v.source != Path(filled).name:
            again.add(int(row))
    return again


def _kept_marks(
    new: pd.DataFrame, existing: pd.DataFrame, decided: _Decided, pairs_file: Path, intent: set[int]
) -> set[int]:
    """The sheet rows of ``new`` (not meant to overrule) that send again a mark the verdict on their training
    pair keeps in the pair's history (:func:`~nlsim.clusters.verdicts.kept_mark`: overruled since, or
    superseded) and not in the pair file's row, merged from a file of another name: *Export all marks*
    sends every mark again. Each is merged as ``--overrule`` merges it, a decision merged before (nothing
    new; a note edited since kept with it), not refused as already annotated; the same file merged again
    is refused as before, and a mark that is the pair file's row is skipped as merged before
    (:func:`_merged_before`)."""
    if "id_a" not in new.columns or "id_b" not in new.columns or not decided.times:
        return set()
    held = pair_rows(existing)
    verdicts = _held_verdicts(pairs_file, existing) if held else Verdicts()
    who = new["annotator"] if "annotator" in new.columns else pd.Series([""] * len(new))
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    out: set[int] = set()
    for row, a, b, score, w in zip(rows, new["id_a"], new["id_b"], new["score"], who, strict=True):
        when = decided.times.get(int(row), "")
        key = pair_key(item_id(a), item_id(b)) if item_id(a) and item_id(b) else None
        pair, v = (held.get(key), verdicts.get(key)) if key else (None, None)
        if int(row) in intent or not when or pair is None or v is None or pair.split != ACTING_SPLIT:
            continue
        annotator = "" if is_blank(w) else str(w).strip()
        mark = Verdict(key[0], key[1], float(score), annotator=annotator, decided_at=when)
        if pair.merged and pair.annotator == annotator and abs(pair.score - mark.score) < 1e-9:
            continue  # the pair file's row: merged before as a plain row
        kept = kept_mark(v, mark)
        if kept is not None and kept.source != Path(decided.filled).name:
            out.add(int(row))
    return out


def _renoted(
    new: pd.DataFrame, original: pd.DataFrame, again: frozenset[int]
) -> tuple[dict[int, str], tuple[str, ...]]:
    """The notes of the rows of ``new`` merged before (``again``, sheet rows: skipped) that differ from the
    one the pair file ``original`` (as read) holds for their pair, by its row (0-based), each said with the
    note it replaces: a note edited on the page after its mark was merged keeps the mark and its time, so
    the row is the mark merged before, with a newer note. A pair the pair file gives twice (one score: kept,
    counted once by its first row, :func:`~nlsim.io.pairs.count_once`) takes the note in every row of it, so
    the row read holds it, and so does the one kept when the other is removed."""
    if not again or NOTES not in new.columns or not {"id_a", "id_b"} <= set(original.columns):
        return {}, ()
    held: dict[tuple[str, str], list[tuple[int, str]]] = {}
    cells = original[NOTES] if NOTES in original.columns else [""] * len(original)
    for i, (a, b, n) in enumerate(zip(original["id_a"], original["id_b"], cells, strict=True)):
        held.setdefault(pair_key(item_id(a), item_id(b)), []).append((i, "" if is_blank(n) else str(n)))
    rows = [int(r) for r in (new.attrs.get("rows") or range(1, len(new) + 1))]
    notes: dict[int, str] = {}
    said: list[str] = []
    for row, a, b, note in zip(rows, new["id_a"], new["id_b"], new[NOTES], strict=True):
        key = pair_key(item_id(a), item_id(b))
        given = "" if is_blank(note) else str(note)
        stale = [(i, was) for i, was in held.get(key, []) if was != given] if row in again else []
        notes |= {i: given for i, _ in stale}
        if stale:
            said.append(_renote_said(*key, given, stale[0][1]))
    return notes, tuple(said)


def _held_verdicts(pairs_file: Path, existing: pd.DataFrame) -> Verdicts:
    """The verdicts that hold on the pairs of ``existing`` (the pair file ``pairs_file`` as read); none
    for a store that cannot be read (which refuses the merge later, by name)."""
    try:
        return check_store(pairs_file, existing).verdicts
    except InputError:
        return Verdicts()


def _taken_back(
    new: pd.DataFrame, existing: pd.DataFrame, decided: _Decided, pairs_file: Path
) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``new`` without its rows on a pair whose verdict was taken back (its pair removed from the pair file,
    kept so in the verdict store: :class:`~nlsim.clusters.verdicts.store.TakenBack`) marked no later than
    that (``decided.times``: an old export merged again; a row without its mark's time is dated when merged,
    a new decision); and each row left out, said with the verdict taken back and when."""
    if "id_a" not in new.columns or "id_b" not in new.columns:
        return new, ()
    try:
        back = {t.key: t for t in check_store(pairs_file, existing).taken_back}
    except InputError:  # a store that cannot be read refuses the merge later, by name
        return new, ()
    if not back:
        return new, ()
    who = new["annotator"] if "annotator" in new.columns else pd.Series([""] * len(new))
    rows = [int(r) for r in (new.attrs.get("rows") or range(1, len(new) + 1))]
    said: list[str] = []
    keep: list[bool] = []
    for row, a, b, score, w in zip(rows, new["id_a"], new["id_b"], new["score"], who, strict=True):
        t = back.get(pair_key(item_id(a), item_id(b))) if item_id(a) and item_id(b) else None
        when = decided.times.get(row, "")
        keep.append(t is None or not t.stands_over(when))
        if not keep[-1] and t is not None:
            mark = Decision(float(score), "" if is_blank(w) else str(w), Path(decided.filled).name, when)
            said.append(
                f"{t.verdict.id_a}/{t.verdict.id_b}: {_decided_by(mark)} was made before the verdict "
                f"({_decided_by(t.verdict.decision)}) was taken back ({t.at})"
            )
    return _rows_of(new, rows, keep), tuple(said)


def _not_overruling(
    new: pd.DataFrame, existing: pd.DataFrame, decided: _Decided, pairs_file: Path
) -> dict[str, dict[int, str]]:
    """The sheet rows of ``new`` that ``--overrule`` would not merge as a newer decision on their pair,
    each said with why, by :func:`~nlsim.annotation.validate.check_new`'s keyword: ``older``, those it
    would not merge at all, their decision merged before (:func:`~nlsim.clusters.verdicts.holds_already`:
    the same file merged again, say); ``history``, those it would merge into their pair's history, not
    acting, marked (``decided.times``) before the decision that holds on the pair (the verdict store's,
    :func:`~nlsim.clusters.verdicts.newer_than`), which stands."""
    out: dict[int, str] = {}
    history: dict[int, str] = {}
    if "id_a" not in new.columns or "id_b" not in new.columns:
        return {"older": out, "history": history}
    verdicts = _held_verdicts(pairs_file, existing)
    who = new["annotator"] if "annotator" in new.columns else pd.Series([""] * len(new))
    rows = new.attrs.get("rows") or list(range(1, len(new) + 1))
    for row, a, b, score, w in zip(rows, new["id_a"], new["id_b"], new["score"], who, strict=True):
        when = decided.times.get(int(row), "")
        prior = verdicts.get(pair_key(item_id(a), item_id(b))) if item_id(a) and item_id(b) else None
        if prior is None:
            continue
        annotator = "" if is_blank(w) else str(w)
        mark = Verdict(prior.id_a, prior.id_b, float(score), "", annotator, Path(decided.filled).name, when)
        if holds_already(mark, prior, marked=bool(when)):
            out[int(row)] = _both_said(
                mark, mark.decision, prior, "was merged before (nothing new); the decision that holds is"
            )
        elif when and not newer_than(mark, prior):
            history[int(row)] = _not_newer_said(mark, prior) + ", which stands"
    return {"older": out, "history": history}


def _earliest(
    newer: pd.DataFrame,
    rows: dict[int, PairRow],
    pairs_file: Path,
    existing: pd.DataFrame,
    marks: _Decided,
) -> dict[int, tuple[str, str]]:
    """The overruling rows of ``newer`` (sheet rows, each with its pair's row of the pair file in ``rows``)
    that are an editor's mark made before the decision the pair file's row records on a pair an editor's
    file added (its merged row: the verdict that holds, overruling nothing, or the decision it overrules):
    each by sheet row, with its pair. Merged first, such a mark was the pair file's row and the later
    decisions overruled it; so it is now, whichever was merged first (a mark made at the very moment of it
    stays among the earlier decisions: of two made at one moment, the one merged first stands)."""
    if newer.empty or "id_a" not in newer.columns or "id_b" not in newer.columns:
        return {}
    verdicts = _held_verdicts(pairs_file, existing)
    who = newer["annotator"] if "annotator" in newer.columns else pd.Series([""] * len(newer))
    out: dict[int, tuple[str, str]] = {}
    for row, a, b, score, w in zip(
        newer.attrs["rows"], newer["id_a"], newer["id_b"], newer["score"], who, strict=True
    ):
        key = pair_key(item_id(a), item_id(b))
        prior, pair, when = verdicts.get(key), rows.get(int(row)), marks.times.get(int(row), "")
        if prior is None or pair is None or not when or not pair.merged:
            continue
        held = prior.overruled if prior.overrules else (None if prior.earlier else prior.decision)
        if held is None or held.annotator != pair.annotator or abs(held.score - pair.score) >= 1e-9:
            continue  # the pair file's row is not the decision the store gives it
        then, now = decided(held.decided_at), decided(when)
        annotator = "" if is_blank(w) else str(w)
        mark = Verdict(key[0], key[1], float(score), annotator=annotator, decided_at=when)
        if then is None or now is None or now >= then or holds_already(mark, prior, marked=True):
            continue
        out[int(row)] = key
    return out


def _earliest_rows(
    newer: pd.DataFrame, original: pd.DataFrame, first: dict[int, tuple[str, str]]
) -> tuple[pd.DataFrame, dict[int, int]]:
    """The rows of ``newer`` that ``first`` names (:func:`_earliest`), and the rows of the pair file
    ``original`` (as read, 0-based) of their pairs, each with its row among them: the pair file's row
    each is written over."""
    rows = [int(r) for r in newer.attrs.get("rows") or range(1, len(newer) + 1)]
    given = _rows_of(newer, rows, [r in first for r in rows])
    if given.empty:
        return given, {}
    place = {first[r]: j for j, r in enumerate(given.attrs["rows"])}
    at: dict[int, int] = {}
    for i, (a, b) in enumerate(zip(original["id_a"], original["id_b"], strict=True)):
        key = pair_key(item_id(a), item_id(b))
        if key in place:
            at[i] = place[key]
    return given, at


def _rows_of(new: pd.DataFrame, rows: list[int], keep: list[bool]) -> pd.DataFrame:
    """The rows of ``new`` that ``keep`` says, with their sheet rows."""
    out = new[keep].reset_index(drop=True)
    out.attrs["rows"] = [r for r, k in zip(rows, keep, strict=True) if k]
    return out


@dataclass(frozen=True)
class _Kept:
    """What a merge did to the verdict store: its path (``None``: no verdict to keep), the training pairs
    overruled, the overruling rows whose decision already held (of them, those said as overruled since),
    and the marks older than the decision that holds on their pair (said with it)."""

    store: Path | None = None
    overruled: int = 0
    already: int = 0
    since: tuple[str, ...] = ()
    older: tuple[str, ...] = ()
    superseded: int = 0
    renoted: tuple[str, ...] = ()
    renoted_earlier: tuple[str, ...] = ()
    confirmed: int = 0
    earliest: tuple[str, ...] = ()
    new_text: tuple[str, ...] = ()

    def told(self, result: MergeResult) -> None:
        """Put what was done to the verdict store into the merge's ``result``."""
        result.verdicts, result.overruled, result.already_held = self.store, self.overruled, self.already
        result.overruled_since, result.older, result.superseded = self.since, self.older, self.superseded
        result.renoted, result.renoted_earlier, result.confirmed = (
            self.renoted,
            self.renoted_earlier,
            self.confirmed,
        )
        result.earliest, result.new_text = self.earliest, self.new_text


@dataclass(frozen=True)
class _Decided:
    """Where and when a merge's verdicts were decided: the editors' file, the split its new pairs go to, and
    the time each row was marked, by sheet row (a page export's ``marked_at``; a row without one is dated
    when merged)."""

    filled: str | Path
    split: str
    times: dict[int, str]


@contextlib.contextmanager
def _verdicts_kept(
    fresh: pd.DataFrame,
    newer: pd.DataFrame,
    rows: dict[int, PairRow],
    pairs_file: Path,
    existing: pd.DataFrame,
    decided: _Decided,
    log: Callable[[str], None],
    first: set[tuple[str, str]] | None = None,
) -> Iterator[_Kept]:
    """Add the merged pairs that have both item ids (``fresh``) and the overruling rows (``newer``, each
    with its pair's row of the pair file in ``rows``, by sheet row) to the verdict store of ``pairs_file``,
    together with the pair file's write (the body). The store is read and checked against the pair file
    first (:func:`~nlsim.clusters.verdicts.check_store`: a verdict the pair file does not hold is rolled
    back, a merged pair the store lacks rebuilt, a store under an earlier name taken in, each said), so a
    store that cannot be read, or holds a damaged row, refuses the merge before anything is written. An
    overruling row becomes the pair's verdict with the decisions it overrules
    (:func:`~nlsim.clusters.verdicts.overruling`), unless its decision already holds; a mark older than the
    overruling decision that holds goes into that decision's history, superseded
    (:func:`~nlsim.clusters.verdicts.with_superseded`). An overruling verdict the pair file contradicts for
    now (:attr:`~nlsim.clusters.verdicts.StoreCheck.unheld`) is kept, not acting: the store is its only
    record. The store is written (atomically) before the body and put back as
    it was when the body fails or the merge is stopped (Ctrl-C, SIGTERM) before the body is in place; the
    pair file's rename commits the merge's new pairs (its overrules are committed with the store: a merge
    killed in between is merged again whole, the overrules holding already). Yields what it did."""
    records, _ = _new_verdicts(fresh, decided.split, decided)
    wanted, marked = _new_verdicts(newer, ACTING_SPLIT, decided, noted=True)
    if not records and not wanted:
        yield _Kept()
        return
    check = check_store(pairs_file, existing)
    check.refuse_damaged()
    for line in check.notes():
        log(line)
    by_key = {pair_key(r.id_a, r.id_b): r for r in rows.values()}
    noted = NOTES in newer.columns
    kept, overrules, amended = _sorted_out(wanted, marked, check, by_key, pairs_file, noted, first or set())
    store = check.path
    if not records and not overrules and not amended:
        yield kept  # every overrule holds already: nothing to write
        return
    before = store.read_bytes() if store.is_file() else None
    # an overrule the pair file contradicts for now stays (not acting): the store is its only record
    now = [amended.get(v.key, v) for v in check.verdicts.records]  # a longer history, a note: in its place
    held = Verdicts.from_records(check.unheld).updated([*now, *records, *overrules])
    try:  # a merge stopped (Ctrl-C, SIGTERM) once the store is written puts it back, as a failure does
        write_store(check, held)
        fault_point(MERGE_FAULT_STAGES[0])  # the store written, the pair file not yet
        yield kept
    except BaseException:
        write_store_bytes(store, before)  # as it was: its link and permissions kept, or none
        raise
    for gone in retire_earlier(check, held):
        log(f"removed {gone}: every verdict it held is in {store} now")


def _sorted_out(
    wanted: list[Verdict],
    marked: set[tuple[str, str]],
    check: StoreCheck,
    by_key: dict[tuple[str, str], PairRow],
    pairs_file: Path,
    noted: bool = False,
    first: set[tuple[str, str]] | None = None,
) -> tuple[_Kept, list[Verdict], dict[tuple[str, str], Verdict]]:
    """The overruling rows ``wanted`` sorted out against the verdicts that hold (``check``): those merged
    before (:func:`~nlsim.clusters.verdicts.holds_already`), the marks (``marked``: dated by when they were
    made) older than the decision that holds (:func:`~nlsim.clusters.verdicts.newer_than`), and the newer
    decisions, each made the pair's overruling verdict; what the store keeps, those verdicts, and the
    verdicts that hold amended, by pair: with an older mark kept among their earlier decisions, superseded
    (:func:`~nlsim.clusters.verdicts.with_superseded`: a verdict that overruled nothing, a pair an editor's
    file added, overrules nothing still), or, from a file with notes (``noted``), with the note its
    editor's row gives its decision: the decision that holds (:func:`_renoted_verdict`), or the one among
    the earlier decisions that the row sends again (:func:`_renoted_earlier`). A mark on a pair of
    ``first`` (:func:`_earliest`: older than the merged row of another editor, which it is written over in
    the pair file) is the decision the one that holds overrules, as had it been merged first: that verdict
    takes its own note from the pair file's row it held."""
    since: list[str] = []
    earliest: list[str] = []
    older: list[str] = []
    renoted: list[str] = []
    renoted_earlier: list[str] = []
    overrules: list[Verdict] = []
    amended: dict[tuple[str, str], Verdict] = {}
    for v in wanted:
        prior, timed = check.verdicts.get(v.key), v.key in marked
        if holds_already(v, prior, marked=timed):
            if prior is not None and (d := overruled_since(v, prior, marked=timed)) is not None:
                since.append(_both_said(v, d, prior))
                row = by_key[v.key]
                if d == prior.overruled and row.merged and not d.notes and v.notes == row.notes:
                    pass  # the pair file's merged row records the decision, with this note
                elif noted and (renewed := _renoted_earlier(prior, d, v.notes)) is not None:
                    amended[v.key] = renewed
                    renoted_earlier.append(_renote_said(v.id_a, v.id_b, v.notes, d.notes))
            elif prior is not None and noted and (renewed := _renoted_verdict(v, prior)) is not None:
                amended[v.key] = renewed
                renoted.append(_renote_said(v.id_a, v.id_b, v.notes, prior.notes))
        elif prior is not None and v.key in (first or set()):
            earliest.append(_not_newer_said(v, prior))
            mark = replace(v.decision, notes="")  # its note is the pair file's row's
            if prior.overrules and prior.overruled is not None:  # the row's decision, overruled: its note
                at = prior.earlier.index(prior.overruled)
                was = replace(prior.overruled, notes=by_key[v.key].notes)
                earlier = (*prior.earlier[:at], mark, was, *prior.earlier[at + 1 :])
                amended[v.key] = replace(prior, earlier=earlier)
            else:
                amended[v.key] = replace(prior, notes=by_key[v.key].notes, earlier=(mark,))
        elif timed and prior is not None and not newer_than(v, prior):
            older.append(_not_newer_said(v, prior))
            # the pair's history: kept in it, superseded by the decision that holds (which overrules it not)
            amended[v.key] = with_superseded(amended.get(v.key, prior), v.decision)
        else:
            overrules.append(overruling(v, prior, by_key[v.key], pairs_file))
    already = len(wanted) - len(overrules) - len(older) - len(earliest)
    superseded = len(amended) - len(renoted) - len(renoted_earlier) - len(earliest)  # one way a pair
    kept = _Kept(
        check.path,
        len(overrules),
        already,
        tuple(since),
        tuple(older),
        superseded,
        tuple(renoted),
        tuple(renoted_earlier),
        sum(1 for v in overrules if _confirms_held(v)),
        tuple(earliest),
        tuple(f"{v.id_a}/{v.id_b}" for v in overrules if _on_new_text(v, by_key[v.key])),
    )
    return kept, overrules, amended


def _on_new_text(v: Verdict, row: PairRow) -> bool:
    """Whether ``v`` was decided on another text of an item than the pair file's ``row`` holds (the page
    showed the item's headline edited since the pair was scored)."""
    return bool(v.text_changed({row.id_a: row.text_a, row.id_b: row.text_b}))


def _confirms_held(v: Verdict) -> bool:
    """Whether ``v``, an overruling verdict merged now, gives the score the annotators gave its pair
    (:attr:`~nlsim.clusters.verdicts.records.Verdict.confirms`) and the decision that held on it gave too: it
    changes no score. An editor taking a colleague's overrule back to the annotators' score changes one.

    >>> annotators, desk = Decision(0.75, "", "p.tsv"), Decision(0.0, "desk", "m1.csv")
    >>> _confirms_held(Verdict("a", "b", 0.75, earlier=(annotators,)))
    True
    >>> _confirms_held(Verdict("a", "b", 0.75, earlier=(annotators, desk)))
    False
    """
    held = next((d for d in reversed(v.earlier) if not d.superseded), None)
    return v.confirms and held is not None and held.score == v.score


def _renoted_earlier(prior: Verdict, sent: Decision, note: str) -> Verdict | None:
    """``prior``, the verdict that holds on a pair, with ``note`` kept with ``sent``, the decision among its
    earlier ones that an editor's row sends again (its mark, overruled or superseded since), when the note
    kept there is another: a note edited on the page after the mark was merged belongs to that mark, not to
    the decision that stands (its own editor's); ``None`` when the note is the same.

    >>> desk = Decision(0.0, "desk", "m1.csv", "2026-03-02T08:15:00Z", "wire copy")
    >>> bob = Verdict("a", "b", 0.25, annotator="bob", notes="a new lead", earlier=(Decision(0.75), desk))
    >>> got = _renoted_earlier(bob, desk, "wire copy of the flood")
    >>> [d.notes for d in got.earlier], got.notes, _renoted_earlier(bob, desk, "wire copy")
    (['', 'wire copy of the flood'], 'a new lead', None)
    """
    if sent.notes == note:
        return None
    at = max(i for i, d in enumerate(prior.earlier) if d == sent)
    renewed = replace(sent, notes=note)
    return replace(prior, earlier=(*prior.earlier[:at], renewed, *prior.earlier[at + 1 :]))


def _renote_said(id_a: str, id_b: str, note: str, was: str) -> str:
    """A note edited on the page after its mark was merged, said with the note it replaces (the first 80
    characters of each)."""
    return f"{id_a}/{id_b}: {note[:80]!r} (it was {was[:80]!r})"


def _renoted_verdict(mark: Verdict, prior: Verdict | None) -> Verdict | None:
    """``prior``, the overruling verdict that holds on ``mark``'s pair, with ``mark``'s note, when ``mark``
    is its decision sent again (the same score by the same editor) with another note: a note edited on the
    page after the overrule was merged (as the pair file takes the edited note of a row it holds); ``None``
    otherwise."""
    if prior is None or not prior.overrules or prior.annotator != mark.annotator:
        return None
    if abs(prior.score - mark.score) >= 1e-9 or prior.notes == mark.notes:
        return None
    return replace(prior, notes=mark.notes)


def _not_newer_said(mark: Verdict, prior: Verdict) -> str:
    """A mark (dated by when it was made) no newer than ``prior``, the decision that holds on its pair, said
    with it: older, or made at the same moment (of two such, the one merged first stands)."""
    same = decided(mark.decided_at) == decided(prior.decided_at)
    how = (
        "was made at the same moment as the decision that holds,"
        if same
        else "is older than the decision that holds,"
    )
    return _both_said(mark, mark.decision, prior, how)


def _both_said(verdict: Verdict, own: Decision, prior: Verdict, how: str = "was overruled since by") -> str:
    """A row sending ``own`` (its editor's decision) again, said with the newer decision that stands."""

    def one(d: Decision) -> str:
        where = ", ".join(x for x in (d.source, d.decided_at) if x)
        return f"{d.annotator or 'an unnamed editor'}'s {d.score:g}" + (f" ({where})" if where else "")

    return f"{verdict.id_a}/{verdict.id_b}: {one(own)} {how} {one(prior.decision)}"


def _new_verdicts(
    new: pd.DataFrame, split: str, decided: _Decided, *, noted: bool = False
) -> tuple[list[Verdict], set[tuple[str, str]]]:
    """The merged rows that name both items as verdicts, with the hashes of the texts merged, each dated
    when its mark was made (``decided.times``) or else now (when merged), with ``noted`` its note (an
    overruling row's: the pair file does not hold the row; a row it holds keeps its note there); and the
    pairs of those dated by their mark."""
    if "id_a" not in new.columns or "id_b" not in new.columns:
        return [], set()
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    who = new["annotator"] if "annotator" in new.columns else pd.Series([""] * len(new))
    notes = new[NOTES] if noted and NOTES in new.columns else pd.Series([""] * len(new))
    rows = [int(r) for r in (new.attrs.get("rows") or range(1, len(new) + 1))]
    out: list[Verdict] = []
    marked: set[tuple[str, str]] = set()
    for row, a, b, ta, tb, score, w, note in zip(
        rows, new["id_a"], new["id_b"], new["text_a"], new["text_b"], new["score"], who, notes, strict=True
    ):
        if not (item_id(a) and item_id(b)):
            continue
        when = decided.times.get(row)
        v = Verdict(
            item_id(a),
            item_id(b),
            float(score),
            split,
            "" if is_blank(w) else str(w),
            Path(decided.filled).name,
            when or now,
            editor_file.text_sha256(str(ta)),
            editor_file.text_sha256(str(tb)),
            notes="" if is_blank(note) else str(note),
        )
        out.append(v)
        if when:
            marked.add(v.key)
    return out, marked


def check_verdicts(
    pairs_file: str | Path, *, write: bool = False, log: Callable[[str], None] = say
) -> StoreCheck:
    """``nlsim annotate verdicts``: check the verdict store of ``pairs_file`` against the pair file and say
    what holds (:func:`~nlsim.clusters.verdicts.check_store`); with ``write``, write it as it holds (a
    store under an earlier name moved to today's, merged pairs it lacked or held damaged rebuilt, verdicts
    the pair file does not hold taken out), under the merge lock (one merge into a folder at a time)."""
    path = Path(pairs_file)
    target = Path(os.path.realpath(path)) if path.exists() else path
    with merge_lock(target):
        if path.exists():
            _refuse_editors_file(pairs_file, read_pair_table(target))
        check = check_store(path)
        for line in check.notes():
            log(line)
        held = f"{len(check.verdicts)} verdict(s), {len(check.verdicts.acting())} on training pairs"
        overruling = check.verdicts.overruling()
        if confirming := [v for v in overruling if v.confirms]:
            held += (
                f" ({len(overruling) - len(confirming)} overruling the score the pair file gives them, "
                f"{len(confirming)} confirming it)"
            )
        elif overruling:
            held += f" ({len(overruling)} overruling the score the pair file gives them)"
        if check.in_step:
            log(f"{check.path}: {held}; in step with {path}")
        elif write:
            write_store(check)
            gone = retire_earlier(check, check.verdicts)
            log(f"wrote {check.path}: {held}" + "".join(f"; removed {p} (all in it now)" for p in gone))
        else:
            log(f"{check.path} is not in step with {path} ({held} hold): --write writes it")
        for line in noted_lines(check.shown()):
            log(line)
    return check


NOTE_CHARS = 80
"""How much of a note ``nlsim annotate verdicts`` shows in its lines (``--json`` gives it whole)."""


def _cut(note: str, chars: int = NOTE_CHARS) -> str:
    """``note`` on one line (each run of white space holding a line break read as one space), cut to
    ``chars`` characters with "…" when longer.

    >>> _cut("wire copy\\nof the flood"), _cut("x" * 100, 10)
    ('wire copy of the flood', 'xxxxxxxxx…')
    """
    flat = one_line(note, every_break=True).strip()
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _decided_by(d: Decision) -> str:
    """Who gave which score, from where and when: ``desk's 0 (marks-1.csv, 2026-03-02T08:15:00Z)``."""
    where = ", ".join(x for x in (d.source, d.decided_at) if x)
    return f"{d.annotator or 'an unnamed editor'}'s {d.score:g}" + (f" ({where})" if where else "")


def noted_lines(verdicts: Verdicts) -> list[str]:
    """The verdicts that carry an editor's note, or whose earlier decisions do, after a heading: a line for
    the pair, who gave which score, from where and when, and the note (cut to :data:`NOTE_CHARS`:
    ``--json`` has it whole), then a line for each earlier decision with a note, indented."""
    noted = [v for v in verdicts.records if v.notes.strip() or any(d.notes.strip() for d in v.earlier)]
    if not noted:
        return []
    lines = [f"{len(noted)} verdict(s) with an editor's note:"]
    for v in noted:
        lines.append(f"  {v.id_a}/{v.id_b}: {_decided_by(v.decision)}: {_cut(v.notes) or '(no note)'}")
        lines += [f"    earlier, {_decided_by(d)}: {_cut(d.notes)}" for d in v.earlier if d.notes.strip()]
    return lines
