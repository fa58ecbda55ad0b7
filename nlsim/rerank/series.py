"""Series or story: two headlines of one running series (another exam year, another model, another
session's figures) are not one story, however alike they read.

A cross-encoder reads "恒指全日跌53點報21330" and "恒指全日跌53點報15509" as near copies, and its score
saturates at its bound for both the stories and the series. The editors decide such pairs by what the
words name: an exam sitting is one story only within its year, one camera model's price is a story, the
next model's is not, one market session's bulletin is a story, the next session's is not. This module
reads those things from the two texts and says when they conflict:

- ``years``: both texts name a year (``2010``, ``2010年``, ``10年``) and they share none;
- ``codes``: both name a model code (letters with digits: ``600D``, ``E-PL1``, ``IXUS220HS``) and no code
  of one is part of a code of the other;
- ``template``: the two texts are one template once their numbers are masked (character-trigram overlap
  0.5 or more) and each holds a number of two digits or more that the other lacks (a figure replaced),
  unless they name one model code (one camera's two prices are one story: the annotators' rule);
- ``direction``: one text says a thing rose and the other that it fell (``攀升`` against ``下滑``: two
  sessions of one index, :func:`nlsim.rerank.facts.direction_clash`);
- ``dates`` (only when asked for): both name a day (``5月31日``) and share none
  (:func:`nlsim.rerank.facts.date_clash`).

A conflict is a *veto*: the pair's score is held below the threshold in use (:func:`veto_cap`): at
:data:`VETO_CAP`, the rubric's "same topic or entity, another event" (0.75), or, under a threshold at or
below 0.75 (a model whose scores run lower, calibrated at 0.537, say), just under that threshold, so that
a vetoed pair never links whatever the threshold. Chosen on the training split (2,231
pairs, 220 same story): the three tests fire on 201 pairs, none of them the same story; on validation
(715 pairs, 85 same story) on 62, none the same story. ``direction`` and the shared code that spares a
template were added after judging clusters on the validation folds of two trainings' scores; on the
training split ``direction`` fires on 28 more pairs, 2 of them the same story (a morning and an
afternoon session of one day), on validation on 12 more, 1 of them the same story (``python
benchmarks/bench_cluster_rule.py --veto-only``; ``docs/experiments.md``, "Clusters that are stories").
:data:`FIRST_TESTS` are the three tests the veto began with.

Example:
    >>> series_conflict("恒指全日跌53點報21330", "恒指全日跌53點報15509")
    'template'
    >>> series_conflict("2011年考研英語大綱解析", "2010年考研英語真題答案")
    'years'
    >>> series_conflict("佳能600D套機報4399元", "佳能600D套機價格6550元") is None
    True
    >>> series_conflict("波羅的海乾散貨運價指數進一步攀升", "波羅的海乾散貨運價指數下滑")
    'direction'
    >>> vetoed_scores([0.95, 0.97], ["恒指報21330", "萬科中報"], ["恒指報15509", "萬科半年銷售"]).tolist()
    [0.75, 0.97]
    >>> vetoed_scores([0.6], ["恒指報21330"], ["恒指報15509"], threshold=0.537).tolist()[0] < 0.537
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from nlsim.rerank import facts

VETO_CAP = 0.75
"""The highest score a vetoed pair is held at: the rubric's "same topic or entity, another event" (lower
under a threshold at or below it: :func:`veto_cap`)."""

TEMPLATE_OVERLAP = 0.5
"""Character-trigram Jaccard overlap of the number-masked texts at which two texts are one template."""

TESTS = ("years", "codes", "template", "direction")
"""The tests :func:`series_conflict` runs by default, in its order (``dates`` is there to be asked for: on
the validation folds it changed no cluster, and on the training split it vetoed one same-story pair)."""

FIRST_TESTS = ("years", "codes", "template")
"""The tests the veto began with (kept so that the benchmark can judge them beside :data:`TESTS`)."""

NUMBER = re.compile(r"\d+(?:\.\d+)?")
"""A number in a text (``2010``, ``4399``, ``0.09``): what a template's figures are."""
_YEAR = re.compile(r"(?<!\d)(\d{2}|\d{4})(?=年)|(?<![\d.])((?:19|20)\d\d)(?![\d.])")
_CODE = re.compile(r"[A-Za-z]+-?\d+[A-Za-z]*|\d+[A-Za-z]+")


def years(text: str) -> set[int]:
    """The years ``text`` names: four digits from 1900 to 2099, or two or four digits before 年.

    >>> sorted(years("09年6月英語四級 2010年考研 共1500人"))
    [2009, 2010]
    """
    found: set[int] = set()
    for m in _YEAR.finditer(text):
        y = int(m.group(1) or m.group(2))
        if y < 100:
            y += 2000 if y < 50 else 1900
        if 1900 <= y < 2100:
            found.add(y)
    return found


def year_spans(text: str, among: set[int]) -> set[tuple[int, int]]:
    """Where ``text`` names each year of ``among`` (``98`` of ``98年``, ``1998``), as spans: one year written
    two ways is no figure that changed, while the same digits elsewhere (``共98人``) are a figure.

    >>> sorted(year_spans("98年金融風暴 1998年回顧 共98人", {1998}))
    [(0, 2), (8, 12)]
    """
    found: set[tuple[int, int]] = set()
    for m in _YEAR.finditer(text):
        group = 1 if m.group(1) else 2
        if years(m.group(group) + "年") & among:
            found.add(m.span(group))
    return found


def _figures(text: str, shared: set[int]) -> set[str]:
    """The numbers of ``text`` (:data:`NUMBER`) but those naming a year of ``shared`` (:func:`year_spans`)."""
    named = year_spans(text, shared)
    return {m.group() for m in NUMBER.finditer(text) if m.span() not in named}


def codes(text: str) -> set[str]:
    """The model codes ``text`` names (letters joined to digits), upper-cased, hyphens dropped.

    >>> sorted(codes("奧林巴斯E-PL1報2999元 佳能600D"))
    ['600D', 'PL1']
    """
    return {c.upper().replace("-", "") for c in _CODE.findall(text)}


def _trigrams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(len(text) - 2)}


def template_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' character trigrams once every number is masked (0 when either
    has none): 1 for one template with other figures.

    Example:
        >>> template_overlap("恒指全日跌53點報21330", "恒指全日跌53點報15509")
        1.0
    """
    ta, tb = _trigrams(NUMBER.sub("#", a)), _trigrams(NUMBER.sub("#", b))
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


def _replaced(numbers: set[str]) -> bool:
    """Whether a text's own numbers (those the other text lacks) hold one of two digits or more: a figure
    that changed (a price, an index level, a session), not a count or a room number."""
    return any(len(n.replace(".", "")) >= 2 for n in numbers)


def series_conflict(
    a: str, b: str, tests: Sequence[str] = TESTS, spare_shared_code: bool = True
) -> str | None:
    """Why ``a`` and ``b`` are two items of a series, not one story (the first of ``tests`` that fires:
    ``years``, ``codes``, ``template``, ``direction``, ``dates``), or ``None`` when nothing they name
    conflicts. ``spare_shared_code``: two texts that name one model code are never a template's two
    figures (the veto began without it: ``tests=FIRST_TESTS, spare_shared_code=False``)."""
    ya, yb = years(a), years(b)
    if "years" in tests and ya and yb and not ya & yb:
        return "years"
    ca, cb = codes(a), codes(b)
    if "codes" in tests and ca and cb and not any(x in y or y in x for x in ca for y in cb):
        return "codes"
    shared = ya & yb  # a year both name, written two ways (98年, 1998年), is no figure replaced
    na, nb = _figures(a, shared), _figures(b, shared)
    if "template" in tests and _replaced(na - nb) and _replaced(nb - na):
        spared = spare_shared_code and bool(ca & cb)  # one model's two prices: one story
        if template_overlap(a, b) >= TEMPLATE_OVERLAP and not spared:
            return "template"
    if "direction" in tests and facts.direction_clash(a, b):
        return "direction"
    if "dates" in tests and facts.date_clash(a, b):
        return "dates"
    return None


def veto_cap(threshold: float | None = None) -> float:
    """The score a vetoed pair is held at under ``threshold``: :data:`VETO_CAP`, or under a threshold at or
    below it the largest float32 strictly below the threshold (a report keeps scores as float32 and a pair
    links at ``score >= threshold``), so that a vetoed pair never reaches the threshold in use.

    >>> veto_cap(), veto_cap(0.88)
    (0.75, 0.75)
    >>> cap = veto_cap(0.537)
    >>> cap < 0.537, float(np.float32(cap)) == cap, round(cap, 6)
    (True, True, 0.537)
    """
    if threshold is None or threshold > VETO_CAP:
        return VETO_CAP
    cap = np.nextafter(np.float32(threshold), np.float32(-np.inf))
    while float(cap) >= threshold:  # float32 rounding may land on or above a float64 threshold
        cap = np.nextafter(cap, np.float32(-np.inf))
    return float(cap)


def vetoed_scores(
    scores: Sequence[float] | np.ndarray,
    texts_a: Sequence[str],
    texts_b: Sequence[str],
    threshold: float | None = None,
) -> np.ndarray:
    """``scores`` with every pair that :func:`series_conflict` vetoes held at :func:`veto_cap` of
    ``threshold`` at most (:data:`VETO_CAP` without one); a lower score is never raised."""
    cap = veto_cap(threshold)
    out = np.asarray(scores, dtype=np.float64).copy()
    for i, (a, b) in enumerate(zip(texts_a, texts_b, strict=True)):
        if out[i] > cap and series_conflict(a, b) is not None:
            out[i] = cap
    return out
