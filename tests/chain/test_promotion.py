"""The promotion gate's parts (nlsim/chain/promotion.py) that need no model: the decision on two models'
figures, and the digest that names the pairs they were scored on."""

from __future__ import annotations

import pandas as pd

from nlsim.chain.promotion import decide, split_digest


def test_a_candidate_no_better_on_either_figure_is_not_promoted() -> None:
    same = {"spearman": 88.5, "cv_f1": 0.61}
    promoted, reason = decide(dict(same), dict(same), "v0003")
    assert not promoted and reason.startswith("no better than v0003 on validation")
    assert decide({"spearman": 88.5, "cv_f1": 0.62}, same, "v0003")[0]


def _pairs(score: float = 0.75) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "text_a": ["颱風來襲", "股市收盤"],
            "text_b": ["颱風登陸", "股市開盤"],
            "score": [score, 0.0],
        }
    )


def test_the_validation_digest_names_the_pairs_and_their_scores_in_any_row_order() -> None:
    digest = split_digest(_pairs())
    assert split_digest(_pairs().iloc[::-1]) == digest  # the same pairs, another order
    assert split_digest(_pairs(score=1.0)) != digest  # a score changed: figures of other pairs
    assert split_digest(_pairs().assign(text_b=["颱風登陸", "股市收盤"])) != digest
