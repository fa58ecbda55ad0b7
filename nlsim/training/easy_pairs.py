"""Which training pairs a later epoch can leave out: those the model already scores right.

After an epoch, a pair the model scores within a margin of its graded score adds little to the next
epoch's gradient; leaving it out shortens the epoch (``drop_easy`` of the cross-encoder and of the
bi-encoder). How far off a pair is comes from the training step's own forward pass, the last time the
model trained on it, so measuring costs nothing: the cross-encoder's |sigmoid(logit) - score|; for the
bi-encoder, whose loss reads cosines, not scores, the distance of the score from the straight line that
maps the cosine onto the score scale (fitted on the same pairs, as the reranker maps the cosine). Pairs
never seen count as infinitely far, and same-story pairs (rare, and the ones the report is for) always stay.
Leaving every easy pair out lets their scores drift (the model no longer sees them); :func:`sample_easy`
keeps a share of them each epoch, weighted by its inverse.

Example:
    >>> import numpy as np
    >>> still_hard(np.array([0.02, 0.3, 0.05, np.inf]), np.array([False, False, True, False]), 0.1)
    array([False,  True,  True,  True])
    >>> still_hard(np.array([0.02, 0.05]), np.array([False, False]), 0.1)  # none left: all stay
    array([ True,  True])
    >>> keep, weight = sample_easy(np.array([True, False, False, False]), 0.5, np.random.default_rng(1))
    >>> keep.tolist(), weight.tolist()
    ([True, False, True, False], [1.0, 1.0, 2.0, 1.0])
    >>> line_errors(np.array([0.8, 0.9, 1.0, 0.9]), np.array([0.0, 0.5, 1.0, 1.0])).round(3)
    array([0.125, 0.125, 0.125, 0.375])
"""

from __future__ import annotations

import numpy as np

LATER_EPOCH_SHARE = 0.6
"""About the share of its pair sequences the cross-encoder trains on in an epoch after the first when it
leaves the easy ones out (its time estimates reckon with it): on the bundled pairs (batches 1-5, margin
0.1, a quarter of the easy ones drawn) 0.69 in the second epoch and 0.53-0.54 in the third, on the AMD EPYC
(avx2, fp32; docs/experiments.md, "Easy pairs left out of later epochs")."""


def still_hard(errors: np.ndarray, story: np.ndarray, margin: float) -> np.ndarray:
    """The pairs (or sequences) an epoch keeps under ``drop_easy=margin``: those last scored ``margin`` or
    further from their score (``inf``: never seen), and every same-story one; every pair where that would
    leave none (an epoch of no steps)."""
    keep = (np.asarray(errors) >= margin) | np.asarray(story, dtype=bool)
    return keep if keep.any() else np.ones_like(keep)


def line_errors(cosines: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Each pair's distance from the least-squares line ``score ~ a * cosine + b`` over the pairs whose
    cosine is known (finite); ``inf`` where it is not."""
    cosines, scores = np.asarray(cosines, dtype=np.float64), np.asarray(scores, dtype=np.float64)
    seen = np.isfinite(cosines)
    errors = np.full(len(cosines), np.inf)
    if seen.sum() < 2 or np.ptp(cosines[seen]) == 0:
        return errors
    slope, intercept = np.polyfit(cosines[seen], scores[seen], 1)
    errors[seen] = np.abs(slope * cosines[seen] + intercept - scores[seen])
    return errors


def sample_easy(hard: np.ndarray, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, weight)``: every hard pair, and each easy one with probability ``share``, weighted
    ``1 / share`` (the others 1), so that a loss summed over the kept pairs is an unbiased estimate of
    the loss over all of them; ``share`` 0: the hard pairs alone."""
    hard = np.asarray(hard, dtype=bool)
    drawn = ~hard & (rng.random(len(hard)) < share) if share > 0 else np.zeros_like(hard)
    weight = np.where(drawn, 1.0 / share if share > 0 else 1.0, 1.0)
    return hard | drawn, weight
