"""The quality check's record as runs read it: today's name, and the earlier one still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlsim.inference.lossy_verdict import (
    MAX_SCORE_DIFF,
    MAX_SPEARMAN_LOSS,
    MEAN_SCORE_DIFF,
    MIN_COSINE,
    QUALITY_CHECK_JSON,
    RECORD_FORMAT,
    borrow_checked,
    load_quality_check,
    quality_verdict,
    save_quality_check,
)


def record(identity: str, kind: str = "encoder") -> dict:
    return {"format": RECORD_FORMAT, "kind": kind, "identity": identity, "paths": {}}


def test_records_are_written_under_one_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    written = save_quality_check(record("abc"))
    assert written.parent == tmp_path / "quality-check"
    assert load_quality_check("encoder", "abc") == (record("abc"), str(written))
    folder = tmp_path / "model"
    folder.mkdir()
    mine = save_quality_check(record("def"), folder / QUALITY_CHECK_JSON)
    assert load_quality_check("encoder", "def", folder)[1] == str(mine)


def test_records_stored_under_the_earlier_names_are_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    folder = tmp_path / "model"
    (folder / "reranker").mkdir(parents=True)
    (folder / "precision.json").write_text(json.dumps(record("enc")), encoding="utf-8")
    (folder / "reranker" / "precision.json").write_text(json.dumps(record("ce", "cross-encoder")))
    assert load_quality_check("encoder", "enc", folder)[1] == str(folder / "precision.json")
    found, where = load_quality_check("cross-encoder", "ce", folder / "reranker")
    assert found is not None and where.endswith("reranker/precision.json")
    (tmp_path / "precision").mkdir()
    (tmp_path / "precision" / "ce-home.json").write_text(json.dumps(record("home", "cross-encoder")))
    assert load_quality_check("cross-encoder", "home")[0] == record("home", "cross-encoder")
    # today's name wins over the earlier one
    save_quality_check(record("enc") | {"paths": {"x": {}}}, folder / QUALITY_CHECK_JSON)
    assert load_quality_check("encoder", "enc", folder)[0]["paths"] == {"x": {}}


def checked(spearman: float, f1: float = 0.5) -> dict:
    return {"spearman": spearman, "f1": f1, "min_cosine": 0.995}


def test_a_path_left_unchecked_where_the_model_was_trained_takes_a_later_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder's record made on an avx2-only CPU leaves bf16 unchecked; a record made here under
    ``$NLSIM_HOME`` fills that path, judged against its own fp32 reference; what the folder checked wins."""
    from nlsim.inference.lossy_verdict import quality_verdict

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    folder = tmp_path / "model"
    folder.mkdir()
    mine = record("m") | {
        "reference": {"spearman": 95.0, "f1": 0.5},
        "paths": {"torch-bf16": {"not_checked": "no bf16 here"}, "onnx-int8": checked(79.0)},
    }
    save_quality_check(mine, folder / QUALITY_CHECK_JSON)
    assert not quality_verdict(load_quality_check("encoder", "m", folder)[0], "torch-bf16")[0]
    # made on another machine: bf16 within 0.5 of ITS fp32 (90.0), though not of the folder's (95.0)
    here = record("m") | {
        "reference": {"spearman": 90.0, "f1": 0.5},
        "paths": {"torch-bf16": checked(89.8), "onnx-int8": checked(89.9)},
    }
    home = save_quality_check(here)
    merged, where = load_quality_check("encoder", "m", folder)
    assert where == str(folder / QUALITY_CHECK_JSON)  # the model's own record is the one named
    assert merged["paths"]["torch-bf16"]["checked_in"] == str(home)
    assert quality_verdict(merged, "torch-bf16")[0]
    # the folder's own figures for onnx-int8 (16 below its fp32: failed) are not replaced
    assert merged["paths"]["onnx-int8"] == checked(79.0)
    assert not quality_verdict(merged, "onnx-int8")[0]
    # a later record that checked nothing more changes nothing
    save_quality_check(record("m") | {"paths": {"torch-bf16": {"not_checked": "no bf16 there either"}}})
    assert load_quality_check("encoder", "m", folder)[0] == mine


def test_a_record_stored_again_under_the_home_keeps_what_another_cpu_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two CPU kinds sharing one ``$NLSIM_HOME``: each one's check keeps the other's figures."""
    from nlsim.inference.lossy_verdict import quality_verdict
    from nlsim.training.lossy_check import store_checks

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    bf16_cpu = record("m") | {
        "reference": {"spearman": 90.0, "f1": 0.5},
        "paths": {"torch-bf16": checked(89.9), "onnx-int8": {"not_checked": "no VNNI"}},
    }
    vnni_cpu = record("m") | {
        "reference": {"spearman": 70.0, "f1": 0.5},
        "paths": {"torch-bf16": {"not_checked": "no bf16"}, "onnx-int8": checked(69.8)},
    }
    (home,) = store_checks({"encoder": bf16_cpu})
    store_checks({"encoder": vnni_cpu})
    both, where = load_quality_check("encoder", "m")
    assert where == str(home)
    assert quality_verdict(both, "onnx-int8")[0]  # 69.8 against its own 70.0
    assert quality_verdict(both, "torch-bf16")[0]  # 89.9 against 90.0, kept from the first CPU
    assert both["paths"]["torch-bf16"]["reference"] == bf16_cpu["reference"]
    store_checks({"encoder": bf16_cpu})  # and back: still both
    assert quality_verdict(load_quality_check("encoder", "m")[0], "onnx-int8")[0]


@pytest.mark.parametrize("text", ["[]", "null", '"checked"', "RECORD_WITH_PATHS_AS_A_LIST"])
def test_a_record_that_is_not_one_nlsim_writes_is_not_used(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quality check record holding JSON that is not an object, or paths that are not one (a file edited by
    hand, another tool's), stopped every run that looked for a lossy path with "AttributeError: 'list'
    object has no attribute 'get'". It is not used, as an unreadable one is not: the record found next
    (here none; with none, no lossy path)."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    written = save_quality_check(record("abc"))
    bad = json.dumps({**record("abc"), "paths": [["onnx-int8", {"spearman": 80.0}]]})
    written.write_text(text.replace("RECORD_WITH_PATHS_AS_A_LIST", bad), encoding="utf-8")
    assert load_quality_check("encoder", "abc") == (None, "")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / QUALITY_CHECK_JSON).write_text(written.read_text(encoding="utf-8"), encoding="utf-8")
    save_quality_check(record("abc"))  # a good record under the home, after the folder's bad one
    assert load_quality_check("encoder", "abc", folder) == (record("abc"), str(written))


@pytest.mark.parametrize(
    "entry",
    [
        {"reference": "fp32", "spearman": 80.0},
        {"first_look": 64, "min_cosine": 0.9},
        {"first_look": {"read": "a fifth", "of": 900}, "min_cosine": 0.9},
        {"first_look": {"read": True, "of": 900}, "min_cosine": 0.9},
    ],
)
def test_a_record_whose_path_entry_is_not_as_nlsim_writes_it_is_not_used(
    entry: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quality check record whose path entry holds a reference that is not an object, or a first look that
    is not one with counts (a file edited by hand, another tool's), stopped every run that looked for a
    lossy path with "AttributeError: 'str' object has no attribute 'get'" or "ValueError: invalid literal
    for int()". It is not used, as a record whose paths are not an object is not: no lossy path."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    reference = {"spearman": 80.0, "f1": 0.5}
    written = save_quality_check({**record("abc"), "reference": reference, "paths": {"onnx-int8": entry}})
    assert load_quality_check("encoder", "abc") == (None, "")
    good = {"spearman": 80.0, "f1": 0.5, "min_cosine": 0.99}
    save_quality_check({**record("abc"), "reference": reference, "paths": {"onnx-int8": good}}, written)
    assert load_quality_check("encoder", "abc")[1] == str(written)


def judged(paths: dict, kind: str = "encoder", reference: dict | None = None) -> dict:
    """A record of ``paths``' figures against fp32 at Spearman 80 (and F1 0.5 unless ``reference`` says)."""
    return record("x", kind) | {"reference": reference or {"spearman": 80.0, "f1": 0.5}, "paths": paths}


def test_figures_exactly_at_a_limit_pass() -> None:
    """The limits are the worst a path may do: a Spearman loss of exactly :data:`MAX_SPEARMAN_LOSS`, the
    same F1, a lowest cosine of exactly :data:`MIN_COSINE`, and score differences of exactly
    :data:`MAX_SCORE_DIFF` and :data:`MEAN_SCORE_DIFF` pass."""
    at_limit = {"spearman": 80.0 - MAX_SPEARMAN_LOSS, "f1": 0.5, "min_cosine": MIN_COSINE}
    assert quality_verdict(judged({"onnx-int8": at_limit}), "onnx-int8")[0]
    ce = {"spearman": 80.0, "f1": 0.5, "max_score_diff": MAX_SCORE_DIFF, "mean_score_diff": MEAN_SCORE_DIFF}
    assert quality_verdict(judged({"onnx-int8": ce}, "cross-encoder"), "onnx-int8")[0]


def test_a_reference_without_f1_judges_the_rest() -> None:
    """A record whose fp32 reference has no same-story F1 (no threshold was calibrated) is judged on
    Spearman and agreement alone; a cross-encoder path with no largest score difference recorded fails."""
    no_f1 = judged({"onnx-int8": {"spearman": 79.9, "min_cosine": 0.99}}, reference={"spearman": 80.0})
    ok, why, _ = quality_verdict(no_f1, "onnx-int8")
    assert ok and "F1" not in why
    mean_only = judged({"onnx-int8": {"spearman": 80.0, "f1": 0.5, "mean_score_diff": 0.01}}, "cross-encoder")
    ok, why, _ = quality_verdict(mean_only, "onnx-int8")
    assert not ok and "scores differ by up to inf" in why


def test_a_path_that_could_not_run_or_was_not_checked_says_so() -> None:
    rec = judged({"onnx-int8": {"error": "no kernel"}, "torch-bf16": {"not_checked": "no bf16 here"}})
    assert quality_verdict(rec, "onnx-int8")[:2] == (False, "the check could not run it (no kernel)")
    assert quality_verdict(rec, "torch-bf16")[:2] == (False, "not checked (no bf16 here)")


def test_a_record_of_another_format_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    save_quality_check(record("abc") | {"format": RECORD_FORMAT + 1})
    assert load_quality_check("encoder", "abc") == (None, "")


def test_only_figures_are_borrowed_and_a_borrowed_entry_keeps_its_reference() -> None:
    """A later record's path that stopped at an error lends nothing; an entry borrowed before (carrying the
    fp32 reference it was measured beside) keeps that reference when it is borrowed again."""
    mine = judged({"torch-bf16": {"not_checked": "no bf16"}})
    failed_there = judged({"torch-bf16": {"error": "no kernel"}})
    assert borrow_checked(mine, failed_there, "there.json") == mine
    own = {"spearman": 89.9, "f1": 0.5, "min_cosine": 0.99, "reference": {"spearman": 90.0, "f1": 0.5}}
    lent = borrow_checked(mine, judged({"torch-bf16": own}), "there.json")["paths"]["torch-bf16"]
    assert lent["reference"] == {"spearman": 90.0, "f1": 0.5} and lent["checked_in"] == "there.json"
