"""The rerank stage of a report holds a series at 0.75 (the series veto), unless told not to."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from nlsim.dedup import stages
from nlsim.dedup.config import DedupConfig
from nlsim.rerank.reranker import Reranker
from nlsim.rerank.series import VETO_CAP


class _SameCross:
    """A cross-encoder that reads every pair as a near copy: the saturated bound."""

    def predict(
        self, a: list[str], b: list[str], progress: bool = False, runner: object = None
    ) -> np.ndarray:
        return np.full(len(a), 0.95)


TITLES = ["恒指全日跌53點報21330 成交617億元", "恒指全日跌53點報15509 成交539億元", "恒指全日跌53點報21330"]


@pytest.mark.parametrize(("veto", "expected"), [(True, [VETO_CAP, 0.95]), (False, [0.95, 0.95])])
def test_the_rerank_stage_holds_a_series_below_the_threshold(veto: bool, expected: list[float]) -> None:
    window = SimpleNamespace(texts=lambda rows, convert: [TITLES[r] for r in rows])
    reranker = Reranker(cross_encoder=_SameCross(), slope=1.0, intercept=0.0, weight=0.0)
    model = SimpleNamespace(reranker=reranker, threshold=SimpleNamespace(value=0.9))
    config = DedupConfig.of(corpus="c.parquet", out="out", cache=False, progress=False, series_veto=veto)
    candidates = pd.DataFrame({"a": [0, 0], "b": [1, 2], "similarity": [0.97, 0.97]})
    scored = stages.rerank(candidates, window, model, config.model, False)  # type: ignore[arg-type]
    np.testing.assert_allclose(scored["similarity"], expected, atol=1e-6)
    assert scored["similarity"].dtype == np.float32
    np.testing.assert_allclose(scored["cross_encoder"], [0.95, 0.95], atol=1e-6)  # the model's own score kept
