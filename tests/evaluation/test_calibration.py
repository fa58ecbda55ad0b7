"""Threshold calibration: the best-F1 cut on a constructed case, stored and found beside a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.errors import ConfigError, StateError
from nlsim.evaluation.calibration import (
    Calibration,
    calibrate,
    calibrate_scores,
    check_calibratable,
    check_threshold,
    load_calibration,
    save_calibration,
    threshold_metrics,
)
from nlsim.evaluation.judge import purity_by_size
from nlsim.evaluation.levels import SAME_STORY, parse_level


def test_separable_case_cuts_between_the_groups() -> None:
    cos = np.array([0.97, 0.93, 0.91, 0.88, 0.86, 0.80])
    gold = np.array([1.0, 0.75, 0.75, 0.5, 0.25, 0.0])
    cal = calibrate_scores(cos, gold, level=0.75)
    assert cal.threshold == pytest.approx((0.91 + 0.88) / 2)
    assert (cal.precision, cal.recall, cal.f1) == (1.0, 1.0, 1.0)
    assert (cal.n, cal.n_positive) == (6, 3)
    # the same-story level only keeps the top pair
    story = calibrate_scores(cos, gold, level=1.0)
    assert story.threshold == pytest.approx((0.97 + 0.93) / 2)


def test_overlapping_case_picks_the_best_f1() -> None:
    # positives at 0.9, 0.8, 0.6; negatives at 0.85, 0.7, 0.5
    cos = np.array([0.9, 0.85, 0.8, 0.7, 0.6, 0.5])
    gold = np.array([1, 0, 1, 0, 1, 0], dtype=float)
    cal = calibrate_scores(cos, gold, level=0.75)
    # cut below 0.6: P 3/5, R 1, F1 0.75 beats cut below 0.8 (P 2/3, R 2/3, F1 0.667) and 0.9 (F1 0.5)
    assert cal.threshold == pytest.approx(0.55)
    assert cal.f1 == pytest.approx(0.75)
    assert cal.precision == pytest.approx(0.6)


def test_level_needs_both_classes() -> None:
    with pytest.raises(ConfigError, match="need pairs both"):
        calibrate_scores(np.array([0.1, 0.2]), np.array([0.1, 0.2]), level=0.75)
    assert parse_level("same-story") == 0.875
    assert parse_level("1.0") == 1.0  # a number: only the pairs every annotator called the same story
    with pytest.raises(ConfigError):
        parse_level("1.5")


def test_the_same_story_level_counts_as_positive_the_pairs_the_judge_counts_as_the_same_story() -> None:
    # 0.875: two annotators' 1 and 0.75, the same story to `nlsim judge`, so the same to calibration
    cos = np.array([0.95, 0.90, 0.60, 0.50, 0.40])
    gold = np.array([1.0, 0.875, 0.75, 0.25, 0.0])
    scored = [(f"a{i}", f"b{i}", g) for i, g in enumerate(gold)]
    (band, *_) = purity_by_size([[f"a{i}", f"b{i}"] for i in range(len(gold))], scored)
    for cal in (
        calibrate_scores(cos, gold, level=parse_level("same-story"), method="best-f1"),
        calibrate_scores(cos, gold, method="best-f1"),  # the default level
    ):
        assert cal.level == SAME_STORY
        assert cal.n_positive == band.same_story == 2
        assert cal.threshold == pytest.approx(0.75)
        assert cal.f1 == 1.0


def test_save_and_load_beside_a_model_or_standalone(tmp_path: Path) -> None:
    cal = calibrate_scores(np.array([0.9, 0.1]), np.array([1.0, 0.0]), model="m", conversion="tw2sp")
    folder = tmp_path / "model"
    folder.mkdir()
    assert load_calibration(folder) is None
    save_calibration(cal, folder)
    assert (folder / "calibration.json").is_file()
    again = load_calibration(folder)
    assert isinstance(again, Calibration) and again.threshold == cal.threshold and again.conversion == "tw2sp"
    standalone = save_calibration(cal, tmp_path / "e5.json")
    assert load_calibration(standalone).threshold == cal.threshold
    assert load_calibration("multilingual-e5-small") is None
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(StateError):
        load_calibration(tmp_path / "bad.json")
    assert json.loads(standalone.read_text())["model"] == "m"


def test_calibrate_with_a_pair_scorer() -> None:
    pairs = pd.DataFrame(
        {"text_a": ["a", "b", "c", "d"], "text_b": ["a", "b", "x", "y"], "score": [1.0, 0.75, 0.25, 0.0]}
    )

    def scorer(a: list[str], b: list[str]) -> np.ndarray:
        return np.array([0.9 if x == y else 0.3 for x, y in zip(a, b, strict=True)])

    cal = calibrate(scorer, pairs, level=0.75, conversion="none")
    assert cal.threshold == pytest.approx(0.6)
    assert cal.f1 == 1.0


@pytest.mark.parametrize("positives", [1, 2])
def test_a_fallback_from_cross_validated_to_best_f1_is_said_on_the_console(positives: int) -> None:
    """With fewer same-story pairs than folds the cross-validated choice cannot run and the plain best-F1
    cut is taken: the one line ``nlsim calibrate`` prints (and the logs) must say so, not the JSON alone."""
    rng = np.random.default_rng(0)
    cos = rng.uniform(0, 1, 40)
    gold = np.zeros(40)
    gold[np.argsort(-cos)[:positives]] = 1.0
    cal = calibrate_scores(cos, gold, level=0.75, method="cross-validated")
    assert cal.method == "best-f1"
    line = cal.describe()
    assert "cross-validated" in line and "best-f1" in line and f"{positives} pair" in line, line
    again = Calibration(**{**cal.as_dict()})  # read back from calibration.json: still said
    assert again.describe() == line
    asked = calibrate_scores(cos, gold, level=0.75, method="best-f1")  # asked for: nothing to say
    assert "cross-validated" not in asked.describe()


def test_a_run_with_another_conversion_than_its_calibration_file_is_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from nlsim.evaluation.calibration import Calibration, save_calibration
    from nlsim.models.settings import ModelSettings
    from nlsim.models.threshold import resolve_threshold

    cal_file = save_calibration(
        Calibration(0.8, 0.5, 1.0, 1.0, 1.0, 10, 5, conversion="none"), tmp_path / "c.json"
    )
    for convert, warned in (("tw2sp", True), ("none", False)):
        caplog.clear()
        with caplog.at_level("WARNING", logger="nlsim"):
            got = resolve_threshold(ModelSettings(convert=convert, calibration=str(cal_file)), encoder=None)
        assert got.value == pytest.approx(0.8)
        said = (
            f"--convert {convert}: the threshold in {cal_file} was calibrated on texts converted with 'none'"
        )
        assert (said in caplog.text) is warned, caplog.text
        assert ("give --convert none" in caplog.text) is warned


def test_the_cross_validated_choice_runs_with_as_many_pairs_on_each_side_as_folds() -> None:
    """Five pairs above the level and five below are enough for five folds: no fallback. Each fold holds out
    one positive; chosen on the other four, the cut sits just below the lowest of them, so the held-out
    positive is missed when it is the lowest of the five (one fold in five) and nothing negative is ever
    accepted: out of fold 80 of 100 positives found, F1 160/180 (a fold scored against all five positives,
    not its own, would give far less)."""
    from nlsim.evaluation.calibration import CV_FOLDS

    cos = np.linspace(0.95, 0.05, 2 * CV_FOLDS)
    gold = np.r_[np.ones(CV_FOLDS), np.zeros(CV_FOLDS)]
    cal = calibrate_scores(cos, gold, level=0.75)  # the default method
    assert (cal.method, cal.fallback) == ("cross-validated", "")
    assert cal.threshold == pytest.approx((cos[CV_FOLDS - 1] + cos[CV_FOLDS]) / 2)
    assert cal.f1 == 1.0
    assert cal.cv_f1 == pytest.approx(160 / 180, abs=1e-4)


def test_the_out_of_fold_f1_is_below_the_best_cut_on_pairs_the_scores_do_not_separate() -> None:
    """Scores that say nothing of the gold: the best cut on all pairs is luck, and a threshold chosen on four
    fifths and scored on the fifth must show it (an F1 taken on the pairs it was chosen on would not)."""
    rng = np.random.default_rng(3)
    cos = rng.uniform(0, 1, 60)
    gold = (rng.uniform(0, 1, 60) < 0.3).astype(float)
    cal = calibrate_scores(cos, gold, level=0.75)
    assert cal.method == "cross-validated"
    assert cal.cv_f1 is not None and cal.cv_f1 < cal.f1 - 0.05, (cal.cv_f1, cal.f1)


def test_folds_deal_each_fold_its_share_of_positives() -> None:
    from nlsim.evaluation.calibration import CV_FOLDS, _folds

    gold = np.zeros(103, dtype=bool)
    gold[::10] = True  # 11 positives, 92 negatives
    fold = _folds(gold, np.random.default_rng(0))
    for k in range(CV_FOLDS):
        assert int((gold & (fold == k)).sum()) in (11 // CV_FOLDS, 11 // CV_FOLDS + 1)
        assert int((~gold & (fold == k)).sum()) in (92 // CV_FOLDS, 92 // CV_FOLDS + 1)


def test_a_tie_of_f1_takes_the_higher_threshold() -> None:
    # a cut below 0.9 (P 1, R 1/2) and one below 0.6 (P 1/2, R 1) both have F1 2/3
    cal = calibrate_scores(np.array([0.9, 0.8, 0.7, 0.6]), np.array([1.0, 0.0, 0.0, 1.0]), 0.75, "best-f1")
    assert cal.threshold == pytest.approx(0.85)
    assert cal.f1 == pytest.approx(2 / 3, abs=1e-4)


def test_a_tie_of_the_fold_average_takes_the_higher_threshold() -> None:
    from nlsim.evaluation.calibration import Cuts, cross_validated_cut

    scores = np.linspace(0.9, 0.1, 12)
    gold = np.array([1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0], dtype=bool)
    cuts = Cuts.of(scores)
    # two cuts that accept the same pairs score alike on every fold: the first (higher) one is taken
    doubled = Cuts(
        cuts.order, np.repeat(cuts.ends, 2), np.repeat(cuts.thresholds, 2) - np.tile([0, 1e-4], 12)
    )
    best, _ = cross_validated_cut(doubled, gold)
    assert best % 2 == 0


def test_a_threshold_that_accepts_every_pair_is_below_the_lowest_score() -> None:
    # the best cut accepts all three pairs (F1 0.8): the threshold must accept the lowest one too
    cos, gold = np.array([0.9, 0.8, 0.1]), np.array([1.0, 0.0, 1.0])
    cal = calibrate_scores(cos, gold, level=0.75, method="best-f1")
    assert cal.f1 == pytest.approx(0.8)
    assert cal.threshold < 0.1
    assert threshold_metrics(cos, gold, cal.threshold, 0.75)["f1"] == pytest.approx(cal.f1)


def test_pairs_all_on_one_side_of_the_level_are_refused_before_a_model_is_loaded() -> None:
    from nlsim.errors import InputError

    check_calibratable(pd.DataFrame({"score": [1.0, 0.25]}), 0.75, "p.tsv", "validation")
    for scores, said in (([1.0, 0.875], "all of the 2 pairs"), ([0.5, 0.25], "none of the 2 pairs")):
        with pytest.raises(InputError, match=said):
            check_calibratable(pd.DataFrame({"score": scores}), 0.75, "p.tsv", "validation")


def test_a_calibration_file_with_a_level_or_threshold_out_of_range_is_refused(tmp_path: Path) -> None:
    good = Calibration(0.8, 0.875, 1.0, 1.0, 1.0, 10, 5).as_dict()
    for bad, said in (({"level": 0.0}, "level 0.0"), ({"threshold": -1.5}, "threshold -1.5")):
        path = tmp_path / "c.json"
        path.write_text(json.dumps({**good, **bad}), encoding="utf-8")
        with pytest.raises(StateError, match=said):
            load_calibration(path)
    assert check_threshold(-1.0, "t") == -1.0


def test_the_stored_threshold_accepts_the_pairs_its_figures_count_for_scores_closer_than_its_rounding() -> (
    None
):
    """A cut between 0.5 and 0.5000004: rounded to 6 decimals it fell on 0.5, and the stored threshold
    accepted the pair below the cut (precision 0.667 where the calibration said 1.0)."""
    cos, gold = np.array([0.9, 0.5000004, 0.5]), np.array([1.0, 1.0, 0.0])
    cal = calibrate_scores(cos, gold, level=0.75, method="best-f1")
    assert (cal.precision, cal.recall, cal.f1) == (1.0, 1.0, 1.0)
    assert 0.5 < cal.threshold <= 0.5000004
    at = threshold_metrics(cos, gold, cal.threshold, 0.75)
    assert (at["precision"], at["recall"], at["f1"]) == (1.0, 1.0, 1.0)
    assert calibrate_scores(np.array([0.9, 0.8]), np.array([1.0, 0.0]), 0.75, "best-f1").threshold == 0.85
