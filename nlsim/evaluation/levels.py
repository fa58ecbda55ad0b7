"""The relatedness levels of the annotation rubric that a threshold can be calibrated for.

``same-story`` (0.875) asks "do these two items tell the same story?", the question of a duplicate report
and the default everywhere: a pair is the same story at a score of 1.0, or of 0.875 where two annotators gave
1 and 0.75, the one positive set of calibration, ``nlsim judge``, training weights and the quality check;
``same-topic-entity`` (0.75) asks for the same topic and the same place, company or person. A number is a
level too: ``1.0`` takes only the pairs every annotator called the same story.

Example:
    >>> parse_level("same-story"), parse_level("0.75"), parse_level("1.0")
    (0.875, 0.75, 1.0)
"""

from __future__ import annotations

from nlsim.errors import ConfigError

SAME_STORY = 0.875
"""A pair counts as "same story" when its score is at least this (1.0, or two annotators' 1 and 0.75)."""
LEVELS = {"same-topic-entity": 0.75, "same-story": SAME_STORY}
DEFAULT_LEVEL = LEVELS["same-story"]


def parse_level(value: str | float) -> float:
    """A level from a number in (0, 1] or a name (``same-topic-entity`` 0.75, ``same-story`` 0.875)."""
    if isinstance(value, str) and value in LEVELS:
        return LEVELS[value]
    try:
        level = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"unknown level {value!r}: a number in (0, 1] or one of {', '.join(LEVELS)}"
        ) from None
    if not 0.0 < level <= 1.0:
        raise ConfigError(f"level must be in (0, 1], got {level}")
    return level
