"""Relatedness levels: the named ones and the range a number must lie in."""

from __future__ import annotations

import pytest

from nlsim.errors import ConfigError
from nlsim.evaluation.levels import parse_level


def test_named_levels() -> None:
    assert parse_level("same-topic-entity") == 0.75
    assert parse_level("same-story") == 0.875


@pytest.mark.parametrize("value", ["0", 0.0, None, "1.01"])
def test_a_level_outside_the_range_or_not_a_number_is_refused(value: object) -> None:
    with pytest.raises(ConfigError):
        parse_level(value)  # type: ignore[arg-type]
