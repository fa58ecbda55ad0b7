"""An editor's overruling verdict: the newer decision on a training pair that the pair file already scores
(the annotators' score, or an earlier editor's merged verdict), and the pairs as training reads them.

``nlsim annotate merge --overrule`` (or an editors' file row whose ``overrule`` cell is true: the report
page sets it on a pair marked where it was already scored) records the editor's score as the pair's verdict
(:func:`overruling`), keeping the decisions it overrules, oldest first, the pair file's own first
(:attr:`~nlsim.clusters.verdicts.records.Verdict.earlier`). The pair file is not changed: it keeps what the
annotators gave. The verdict store holds the newer decision (:mod:`nlsim.clusters.verdicts.pair_file`
checks that it was made on the pair file's row), so it acts in every later report as any verdict does, and
the next training reads it: :func:`training_pairs` is the pair table with each overruled training pair
given the editor's score. Validation and test pairs are never overruled: they judge the reports and the
models.

Example:
    >>> import tempfile, pathlib
    >>> from nlsim.clusters.verdicts.pair_file import pair_rows
    >>> from nlsim.clusters.verdicts.store import save_verdicts, store_path
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> pairs = d / "p.tsv"
    >>> _ = pairs.write_text("pair_id\\tid_a\\tid_b\\ttext_a\\ttext_b\\tscore\\tsplit\\n"
    ...                      "p1\\ta\\tb\\tFloods\\tStorm\\t0.75\\ttrain\\n")
    >>> row = pair_rows(load_pairs(pairs))[("a", "b")]
    >>> newer = overruling(Verdict("a", "b", 0.0, annotator="desk"), None, row, pairs)
    >>> newer.earlier[0].score, newer.earlier[0].source
    (0.75, 'p.tsv')
    >>> save_verdicts(Verdicts.from_records([row.hashed(newer)]), store_path(pairs))
    >>> read = training_pairs(pairs)
    >>> read.pairs["score"].tolist(), len(read.overruled)
    ([0.0], 1)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from nlsim.clusters.constraints import pair_key
from nlsim.clusters.verdicts.pair_file import PairRow, check_store
from nlsim.clusters.verdicts.records import ACTING_SPLIT, Decision, Verdict, Verdicts, decided
from nlsim.io.pairs import item_id, load_pairs


def overruling(verdict: Verdict, prior: Verdict | None, row: PairRow, pairs_file: str | Path) -> Verdict:
    """``verdict`` (an editor's, merged now) as the newer decision on the pair of the pair file's ``row``:
    it keeps the decisions it overrules, oldest first: the earlier ones of ``prior`` (the verdict that held
    on the pair) and ``prior`` itself, or, with no verdict held, the pair file's score (its annotator, the
    pair file's name as the source)."""
    if prior is None:
        earlier: tuple[Decision, ...] = (Decision(round(row.score, 6), row.annotator, Path(pairs_file).name),)
    else:
        earlier = (*prior.earlier, prior.decision)
    return replace(verdict, split=row.split, earlier=earlier)


def with_superseded(prior: Verdict, mark: Decision) -> Verdict:
    """``prior`` (the decision that holds on its pair) with ``mark``, a decision made no later than it and
    merged after it, kept among its earlier decisions in time order (before the first decision dated after
    it; the pair file's own score, undated, stays first): the mark does not act. Among the decisions an
    overruling verdict overrules, it is one of them, as it would be had it been merged first (the pair's
    history, its bytes included, is the same whichever was merged first); a verdict that overruled nothing
    (a pair an editor's file added) keeps it marked superseded
    (:attr:`~nlsim.clusters.verdicts.records.Decision.superseded`), and overrules nothing still.

    >>> earlier = (Decision(0.75, "", "p.tsv"), Decision(0.0, "desk", "m1.csv", "2026-03-02T08:15:00Z"))
    >>> bob = Verdict("a", "b", 0.25, annotator="bob", decided_at="2026-03-04T09:00:00Z", earlier=earlier)
    >>> lin = Decision(0.5, "lin", "m2.csv", "2026-03-01T10:00:00+08:00")
    >>> [(d.annotator, d.superseded) for d in with_superseded(bob, lin).earlier]
    [('', False), ('lin', False), ('desk', False)]
    >>> with_superseded(bob, lin).score
    0.25
    >>> plain = with_superseded(replace(bob, earlier=()), lin)
    >>> [(d.annotator, d.superseded) for d in plain.earlier], plain.overrules
    ([('lin', True)], False)
    """
    when = decided(mark.decided_at)
    at = len(prior.earlier)
    for i, d in enumerate(prior.earlier):
        then = decided(d.decided_at)
        if when is not None and then is not None and then > when:
            at = i
            break
    kept = replace(mark, superseded=not prior.overrules)  # overruled by it, as if merged first
    return replace(prior, earlier=(*prior.earlier[:at], kept, *prior.earlier[at:]))


def holds_already(verdict: Verdict, prior: Verdict | None, *, marked: bool = False) -> bool:
    """Whether ``verdict``'s decision was merged already: ``prior`` (the verdict that holds on the pair) is
    it, or one of the decisions ``prior`` overruled is (the same score by the same editor from the same
    file: a file merged again, or a merge run again after it was killed), or ``prior`` is a verdict rebuilt
    from the pair file (no source: a store lost and rebuilt) giving the pair this score by this editor (the
    file that merged it, merged again to bring back the store's overrules). Nothing new to overrule with: a
    file merged again never undoes a later decision, such as an editor's taking an overrule back. The
    decision that holds, the same score by the same editor from another file (the report page's *Export all
    marks* exports it again with the new marks), is nothing new either; nor is a named editor's own latest
    decision on the pair, from any file, that another editor overruled since (:func:`overruled_since`): the
    page exports the editor's mark again, and an old mark sent again never undoes a colleague's newer
    decision. An editor's own decision changed (another score than their latest) is a new decision.

    A ``marked`` verdict is dated by when its mark was made (a page export's
    :data:`~nlsim.io.editor_file.MARKED_AT`): it was merged already when ``prior`` holds its score by its
    editor, or ``prior`` or one of the decisions it overruled is the same mark (the same score by the same
    editor, made at the same time), from any file. Its editor's score given again in a new mark is not
    (:func:`newer_than` says whether it stands over ``prior``).

    >>> earlier = (Decision(0.25, "", "p.tsv"), Decision(0.0, "ed1", "monday.csv"))
    >>> taken_back = Verdict("a", "b", 0.25, annotator="ed2", source="tuesday.csv", earlier=earlier)
    >>> holds_already(Verdict("a", "b", 0.0, annotator="ed1", source="monday.csv"), taken_back)
    True
    >>> holds_already(Verdict("a", "b", 0.0, annotator="ed1", source="wednesday.csv"), taken_back)
    True
    >>> holds_already(Verdict("a", "b", 0.5, annotator="ed1", source="wednesday.csv"), taken_back)
    False
    >>> holds_already(Verdict("a", "b", 0.25, annotator="ed2", source="friday.csv"), taken_back)
    True
    """
    if prior is None:
        return False
    if prior.annotator == verdict.annotator and abs(prior.score - verdict.score) < 1e-9:
        return True  # the decision that holds, by this editor (exported again, or rebuilt from the pair file)
    if marked:
        return any(_same_mark(d, verdict) for d in (*prior.earlier, prior.decision))
    if overruled_since(verdict, prior) is not None:
        return True  # the editor's own latest decision, sent again after a colleague overruled it
    decisions = [*prior.earlier, prior.decision]
    return any(
        abs(d.score - verdict.score) < 1e-9 and (d.annotator, d.source) == (verdict.annotator, verdict.source)
        for d in decisions
    )


def overruled_since(verdict: Verdict, prior: Verdict | None, *, marked: bool = False) -> Decision | None:
    """The decision of a named editor that ``verdict`` sends again, when another editor's decision
    overruled it since: the editor's own latest decision on the pair (among ``prior``'s earlier decisions)
    gives ``verdict``'s score, and ``prior`` (the verdict that holds) is someone else's. ``None`` otherwise
    (no such decision, an unnamed editor, or the editor's latest decision gives another score: changed).
    A ``marked`` verdict (dated by its mark, :func:`holds_already`) sends again the decision that is the
    same mark, whoever's decision overruled it since.

    >>> earlier = (Decision(0.75, "", "p.tsv"), Decision(0.0, "desk", "marks-1.csv"))
    >>> bobs = Verdict("a", "b", 0.75, annotator="bob", source="bob.csv", earlier=earlier)
    >>> overruled_since(Verdict("a", "b", 0.0, annotator="desk", source="marks-2.csv"), bobs)
    Decision(score=0.0, annotator='desk', source='marks-1.csv', decided_at='', notes='', superseded=False)
    >>> overruled_since(Verdict("a", "b", 0.25, annotator="desk", source="marks-2.csv"), bobs) is None
    True
    """
    if prior is None or not verdict.annotator or (prior.annotator == verdict.annotator and not marked):
        return None
    if marked:
        return next((d for d in reversed(prior.earlier) if _same_mark(d, verdict)), None)
    own = [d for d in prior.earlier if d.annotator == verdict.annotator]
    if own and abs(own[-1].score - verdict.score) < 1e-9:
        return own[-1]
    return None


def kept_mark(prior: Verdict, verdict: Verdict) -> Decision | None:
    """The decision among ``prior``'s earlier ones (the pair's history: overruled, or superseded) that is
    ``verdict``'s mark (the same score by the same editor, marked at one time), ``None`` for none.

    >>> bobs = Decision(0.0, "bob", "m1.csv", "2026-03-03T01:00:00Z")
    >>> lin = Verdict("a", "b", 0.5, annotator="lin", earlier=(Decision(1.0, "desk"), bobs))
    >>> sent = Verdict("a", "b", 0.0, annotator="bob", decided_at="2026-03-03T09:00:00+08:00")
    >>> kept_mark(lin, sent) == bobs, kept_mark(lin, replace(sent, score=1.0))
    (True, None)
    """
    return next((d for d in prior.earlier if _same_mark(d, verdict)), None)


def _same_mark(decision: Decision, verdict: Verdict) -> bool:
    """Whether ``decision`` is ``verdict``'s mark: the same score by the same editor, marked at one time (one
    instant, however written: ``…Z``, ``…+00:00`` or another offset; a text that is no time, as written).

    >>> mark = Verdict("a", "b", 0.0, annotator="desk", decided_at="2026-03-02T08:15:00.000Z")
    >>> _same_mark(Decision(0.0, "desk", "m.csv", "2026-03-02T16:15:00+08:00"), mark)
    True
    """
    if abs(decision.score - verdict.score) >= 1e-9 or decision.annotator != verdict.annotator:
        return False
    if not verdict.decided_at:
        return False
    when, then = decided(decision.decided_at), decided(verdict.decided_at)
    if when is None or then is None:
        return decision.decided_at == verdict.decided_at
    return when == then


def newer_than(verdict: Verdict, prior: Verdict | None) -> bool:
    """Whether ``verdict``, dated by when its mark was made, came after ``prior``'s decision (dated by its
    mark, or when it was merged): the newer of two decisions on a pair stands, whichever was merged first.
    A ``prior`` of no known time (rebuilt from the pair file) is older.

    >>> bob = Verdict("a", "b", 0.75, annotator="bob", decided_at="2026-03-03T09:00:00+08:00")
    >>> newer_than(replace(bob, annotator="desk", decided_at="2026-03-02T08:15:00Z"), bob)
    False
    >>> newer_than(replace(bob, annotator="desk", decided_at="2026-03-04T07:30:00Z"), bob)
    True
    """
    if prior is None or (before := decided(prior.decided_at)) is None:
        return True
    now = decided(verdict.decided_at)
    return now is not None and now > before


@dataclass(frozen=True)
class TrainingPairs:
    """The annotated pairs as training reads them.

    Attributes:
        pairs: the pair table (validated), each training pair an acting overruling verdict holds on given
            the editor's score (every other row as the pair file has it).
        overruled: the overruling verdicts applied (on training pairs only).
        store: the verdict store they came from (``None`` when none applied).
    """

    pairs: pd.DataFrame
    overruled: tuple[Verdict, ...] = ()
    store: Path | None = None


def training_pairs(pairs_file: str | Path, pairs: pd.DataFrame | None = None) -> TrainingPairs:
    """The pairs of ``pairs_file`` (``pairs``: already read and validated) with the scores of the training
    pairs an editor overruled taken from its verdict store, checked against the pair file
    (:func:`~nlsim.clusters.verdicts.pair_file.check_store`). A store with a damaged row is refused (it may
    hold an overrule). Validation and test pairs are read as the pair file has them."""
    table = pairs if pairs is not None else load_pairs(pairs_file)
    if "id_a" not in table.columns or "id_b" not in table.columns:
        return TrainingPairs(table)  # no item ids: no verdict names a pair of it
    check = check_store(pairs_file, table)
    check.refuse_damaged()
    return with_overrules(table, check.verdicts, check.path)


def with_overrules(pairs: pd.DataFrame, verdicts: Verdicts, store: Path | None = None) -> TrainingPairs:
    """``pairs`` with the score of each training pair ``verdicts`` overrule replaced by the editor's.

    >>> table = pd.DataFrame({"id_a": ["a", "c"], "id_b": ["b", "d"], "score": [0.75, 0.75],
    ...                       "split": ["train", "validation"]})
    >>> earlier = (Decision(0.75),)
    >>> v = Verdicts.from_records([Verdict("b", "a", 0.0, earlier=earlier),
    ...                            Verdict("c", "d", 0.0, "validation", earlier=earlier)])
    >>> with_overrules(table, v).pairs["score"].tolist()
    [0.0, 0.75]
    """
    scores = {v.key: v.score for v in verdicts.overruling()}
    if not scores:
        return TrainingPairs(pairs)
    keys = [pair_key(item_id(a), item_id(b)) for a, b in zip(pairs["id_a"], pairs["id_b"], strict=True)]
    train = (pairs["split"].astype(str) == ACTING_SPLIT).to_numpy()
    hit = [bool(t) and k in scores for k, t in zip(keys, train, strict=True)]
    if not any(hit):
        return TrainingPairs(pairs)
    out = pairs.copy()
    out["score"] = [
        scores[k] if h else s for k, h, s in zip(keys, hit, pairs["score"].astype(float), strict=True)
    ]
    applied = {k for k, h in zip(keys, hit, strict=True) if h}
    return TrainingPairs(out, tuple(v for v in verdicts.overruling() if v.key in applied), store)
