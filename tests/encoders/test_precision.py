"""Backend and precision chosen on the machine in hand: CPU features, the cached probe, the quality check.

No timings are asserted: probes are written by the tests (``NLSIM_PROBE=cached``, see ``tests/conftest.py``)
and the choice must follow them deterministically.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from stsb_helpers import stsb_sample

from nlsim.encoders import Encoder, load_encoder
from nlsim.encoders.cache import EmbeddingCache
from nlsim.encoders.planner import encoder_target
from nlsim.evaluation.levels import SAME_STORY
from nlsim.inference.choice import LOSSY_MIN_GAIN, decide, select
from nlsim.inference.cpu import CpuInfo, cpu_info, parse_cpuinfo
from nlsim.inference.lossy_verdict import (
    MIN_COSINE,
    RECORD_FORMAT,
    load_quality_check,
    quality_verdict,
    save_quality_check,
)
from nlsim.inference.paths import candidates
from nlsim.inference.probe import save_probe
from nlsim.training.lossy_check import check_encoder, describe_record, same_story_threshold, score_figures

pytest.importorskip("onnxruntime")

AVX512_VNNI_BF16 = "avx2 avx512f avx512bw avx512_vnni avx512_bf16"
TEXTS = [
    "A man is playing a guitar.",
    "Stocks fell sharply on Monday as investors fled to bonds.",
    "x",
    "Floods hit the north after three days of rain; thousands leave their homes. " * 3,
    "A person plays the guitar.",
    "The central bank raised rates by a quarter point.",
]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX512_VNNI_BF16)  # the same CPU rules on every machine
    monkeypatch.setenv("NLSIM_PROBE", "cached")
    return tmp_path


def write_probe(enc: Encoder, rates: dict[str, float]) -> Path:
    return save_probe(encoder_target(enc).architecture(), torch.get_num_threads(), cpu_info(), rates, [])


def stored_check(identity: str, paths: dict[str, dict], kind: str = "encoder") -> dict:
    """A stored quality check with fp32 at Spearman 80 and F1 0.5."""
    return {
        "format": RECORD_FORMAT,
        "kind": kind,
        "identity": identity,
        "reference": {"path": "torch-fp32", "spearman": 80.0, "f1": 0.5},
        "paths": paths,
    }


GOOD = {"spearman": 79.9, "f1": 0.5, "min_cosine": 0.995}


def test_cpu_flags_decide_which_precisions_are_tried() -> None:
    model, flags = parse_cpuinfo("model name\t: Intel(R) Xeon(R)\nflags\t\t: fpu avx512f amx_tile amx_int8\n")
    assert model == "Intel(R) Xeon(R)" and {"amx_tile", "amx_int8"} <= flags
    plain = CpuInfo("old", ("avx2",), 2)
    # without AVX-512 ONNX Runtime's fp32 is no faster: torch fp32 goes first, and is taken unmeasured
    assert candidates("auto", "auto", plain, onnx_ok=True)[0] == ["torch-fp32", "onnx-fp32"]
    assert decide(candidates("auto", "auto", plain, onnx_ok=True)[0], {}, {}, {}).path == "torch-fp32"
    avx512 = CpuInfo("newer", ("avx2", "avx512f"), 2)
    assert candidates("auto", "auto", avx512, onnx_ok=True)[0] == ["onnx-fp32", "torch-fp32"]
    assert decide(candidates("auto", "auto", avx512, onnx_ok=True)[0], {}, {}, {}).path == "onnx-fp32"
    why = candidates("auto", "auto", plain, onnx_ok=True)[1]
    assert "VNNI" in why["onnx-int8"] and "bf16" in why["torch-bf16"]
    # asked for, a precision is tried whatever the CPU
    assert candidates("auto", "int8", plain, onnx_ok=True)[0] == ["onnx-int8", "torch-int8"]
    amx = CpuInfo("xeon", ("avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"), 2)
    assert len(candidates("auto", "auto", amx, onnx_ok=True)[0]) == 5
    assert candidates("auto", "auto", amx, onnx_ok=False)[0] == ["torch-fp32", "torch-bf16", "torch-int8"]
    assert amx.int8_isa == "amx_int8" and amx.bf16_isa == "amx_bf16" and "AMX" in amx.describe()


def test_the_pick_follows_the_probe_and_the_quality_check() -> None:
    cands = ["onnx-fp32", "torch-fp32", "onnx-int8", "torch-bf16"]
    passed = {"onnx-int8": (True, "passed", None), "torch-bf16": (True, "passed", None)}
    probe = {"onnx-fp32": 300.0, "torch-fp32": 200.0, "onnx-int8": 500.0, "torch-bf16": 600.0}
    assert decide(cands, {}, probe, passed).path == "torch-bf16"
    assert decide(cands, {}, {**probe, "onnx-int8": 700.0}, passed).path == "onnx-int8"
    # a lossy path must be clearly faster than the best exact one
    close = {**probe, "onnx-int8": 300.0 * LOSSY_MIN_GAIN * 0.99, "torch-bf16": 310.0}
    assert decide(cands, {}, close, passed).path == "onnx-fp32"
    failed = {"onnx-int8": (False, "failed: Spearman drops 1.00", None), "torch-bf16": (True, "passed", None)}
    pick = decide(cands, {}, {**probe, "onnx-int8": 900.0}, failed)
    assert pick.path == "torch-bf16" and "Spearman drops" in pick.excluded["onnx-int8"]
    # no probe: the exact paths, in their fixed order
    assert decide(cands, {}, {}, passed).path == "onnx-fp32"


def test_quality_verdicts() -> None:
    rec = stored_check("x", {"onnx-int8": GOOD})
    assert quality_verdict(rec, "onnx-int8")[0]
    assert not quality_verdict(None, "onnx-int8")[0]
    assert not quality_verdict(rec, "torch-bf16")[0]  # not checked: not passed
    assert not quality_verdict(stored_check("x", {"onnx-int8": {**GOOD, "spearman": 79.4}}), "onnx-int8")[0]
    assert not quality_verdict(stored_check("x", {"onnx-int8": {**GOOD, "f1": 0.49}}), "onnx-int8")[0]
    low = stored_check("x", {"onnx-int8": {**GOOD, "min_cosine": MIN_COSINE - 0.001}})
    assert "lowest cosine" in quality_verdict(low, "onnx-int8")[1]
    ce = stored_check(
        "x", {"onnx-int8": {**GOOD, "max_score_diff": 0.05, "mean_score_diff": 0.01}}, "cross-encoder"
    )
    assert quality_verdict(ce, "onnx-int8")[0]
    ce["paths"]["onnx-int8"]["mean_score_diff"] = 0.2
    assert not quality_verdict(ce, "onnx-int8")[0]
    assert quality_verdict(None, "onnx-fp32")[0]  # exact paths need no check


@pytest.mark.slow
def test_choice_is_deterministic_given_a_cached_probe(home: Path, l3: Encoder) -> None:
    save_quality_check(
        stored_check(l3.fingerprint, {"onnx-int8": GOOD, "torch-bf16": GOOD, "torch-int8": GOOD})
    )
    write_probe(
        l3, {"onnx-fp32": 300, "torch-fp32": 200, "onnx-int8": 700, "torch-bf16": 500, "torch-int8": 400}
    )
    picks = [select(encoder_target(l3), precision="auto", probe_missing=False).choice for _ in range(3)]
    assert {c.path for c in picks} == {"onnx-int8"}
    assert picks[0].probe["onnx-int8"] == 700 and picks[0].quality_check.startswith("passed")
    write_probe(
        l3, {"onnx-fp32": 300, "torch-fp32": 200, "onnx-int8": 500, "torch-bf16": 650, "torch-int8": 400}
    )
    assert select(encoder_target(l3), precision="auto", probe_missing=False).choice.path == "torch-bf16"
    # through load_encoder: decided at the first big job, vectors tagged with the lossy path
    enc = load_encoder(l3.path, precision="auto")
    assert enc.choice is None and enc.plan(10) is None  # a small job stays on torch fp32
    assert enc.plan(Encoder.AUTO_ONNX_MIN_TEXTS).path == "torch-bf16"
    assert enc.options["precision"] == "bf16" and enc.vectors_tag == "torch-bf16"
    # the default precision of the library is the exact one: the quality check is not even read
    assert load_encoder(l3.path).plan(Encoder.AUTO_ONNX_MIN_TEXTS).path == "onnx-fp32"


def test_a_failing_or_missing_quality_check_falls_back_to_fp32(home: Path, l3: Encoder) -> None:
    fast = {"onnx-fp32": 300, "torch-fp32": 200, "onnx-int8": 900, "torch-bf16": 800, "torch-int8": 700}
    write_probe(l3, fast)
    choice = select(encoder_target(l3), precision="auto", probe_missing=False).choice
    assert choice.path == "onnx-fp32" and "none recorded" in choice.excluded["onnx-int8"]
    bad = {**GOOD, "spearman": 78.0}
    save_quality_check(stored_check(l3.fingerprint, {"onnx-int8": bad, "torch-bf16": bad, "torch-int8": bad}))
    choice = select(encoder_target(l3), precision="auto", probe_missing=False).choice
    assert choice.path == "onnx-fp32" and "Spearman drops 2.00" in choice.excluded["torch-bf16"]
    save_quality_check(stored_check("another model", {"onnx-int8": GOOD}))  # made for other weights: not used
    assert load_quality_check("encoder", "another model")[0] is not None
    assert select(encoder_target(l3), precision="auto", probe_missing=False).choice.path == "onnx-fp32"
    # asked for explicitly, a lossy precision runs without the quality check (and says so)
    forced = select(encoder_target(l3), backend="torch", precision="int8", probe_missing=False).choice
    assert forced.path == "torch-int8" and forced.forced and forced.quality_check.startswith("failed")


@pytest.mark.slow
def test_a_path_that_cannot_be_set_up_is_left_out(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_quality_check(stored_check(l3.fingerprint, {"onnx-int8": GOOD}))
    write_probe(l3, {"onnx-fp32": 300, "torch-fp32": 200, "onnx-int8": 900})
    import nlsim.inference.onnx as ob

    real = ob.onnx_runner

    def broken(encoder, *, threads=None, root=None, precision="fp32"):  # noqa: ANN001, ANN202
        if precision == "int8":
            raise RuntimeError("no int8 kernels today")
        return real(encoder, threads=threads, root=root, precision=precision)

    monkeypatch.setattr(ob, "onnx_runner", broken)
    enc = load_encoder(l3.path, precision="auto")
    out = enc.encode(TEXTS * 200, progress=False)
    assert enc.choice.path == "onnx-fp32" and "could not be set up" in enc.choice.excluded["onnx-int8"]
    np.testing.assert_allclose(out[: len(TEXTS)], l3.encode(TEXTS, progress=False), atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["onnx-int8", "torch-bf16", "torch-int8"])
def test_lossy_vectors_stay_close_to_fp32(home: Path, l3: Encoder, path: str) -> None:
    """The stated bound: where the quality check passes a path, its vectors are within cosine
    MIN_COSINE (0.98) of fp32's; bf16 and ONNX int8 (per-channel) are well inside it on this model."""
    backend, precision = path.split("-")
    enc = load_encoder(l3.path, backend=backend, precision=precision)
    assert enc.choice.path == path
    ref = l3.encode(TEXTS, progress=False)
    got = enc.encode(TEXTS, progress=False)
    low = float((ref * got).sum(axis=1).min())
    assert np.allclose((got**2).sum(axis=1), 1.0, atol=1e-5)
    if (
        path != "torch-int8"
    ):  # torch's per-tensor int8 moves vectors more; the quality check decides per model
        assert low >= MIN_COSINE
    pairs = stsb_sample(train=0, validation=40, test=0)
    record = check_encoder(l3, pairs, paths=[path])
    entry = record["paths"][path]
    assert quality_verdict(record, path)[0] == (entry["min_cosine"] >= MIN_COSINE and entry["passed"])
    if entry["passed"]:
        assert entry["min_cosine"] >= MIN_COSINE


def test_the_quality_checks_same_story_f1_counts_a_pair_two_annotators_call_the_same_story() -> None:
    # 0.875 (two annotators' 1 and 0.75) is the same story to calibration and to `nlsim judge`: here too
    scores, gold = np.array([0.9, 0.8, 0.3, 0.2]), np.array([1.0, 0.875, 0.5, 0.0])
    assert score_figures(scores, gold, 0.5)["f1"] == 1.0
    assert same_story_threshold(scores, gold)[0] == pytest.approx(0.55)


@pytest.mark.slow
def test_check_encoder_record_is_stored_and_found(home: Path, l3: Encoder) -> None:
    pairs = stsb_sample(train=0, validation=60, test=0)
    record = check_encoder(l3, pairs, paths=["onnx-int8", "torch-bf16"], pairs_file="stsb")
    assert record["identity"] == l3.fingerprint and record["kind"] == "encoder"
    assert record["threshold"]["gold_level"] == SAME_STORY
    assert "calibrated here" in record["threshold"]["source"]
    assert set(record["paths"]) == {"onnx-int8", "torch-bf16"}
    bf16 = record["paths"]["torch-bf16"]
    assert bf16["min_cosine"] > 0.999 and abs(bf16["spearman"] - record["reference"]["spearman"]) < 0.5
    assert record["cpu"]["flags"] == AVX512_VNNI_BF16.split()
    path = save_quality_check(record)
    found, where = load_quality_check("encoder", l3.fingerprint, l3.path)
    assert found == json.loads(path.read_text()) and where == str(path)


@pytest.mark.slow
def test_embedding_cache_keeps_lossy_vectors_apart(home: Path, l3: Encoder) -> None:
    cache = EmbeddingCache(home / "emb")
    texts = TEXTS * 200
    exact, hit = cache.get_or_compute(texts, load_encoder(l3.path, backend="torch"), "none")
    bf16 = load_encoder(l3.path, backend="torch", precision="bf16")
    lossy, hit2 = cache.get_or_compute(texts, bf16, "none")
    assert not hit and not hit2 and not np.array_equal(exact, lossy)
    again, hit3 = cache.get_or_compute(texts, load_encoder(l3.path, backend="onnx"), "none")  # exact too
    assert hit3 and np.array_equal(again, exact)


@pytest.mark.slow
def test_the_run_record_and_the_log_name_the_choice(
    home: Path, l3: Encoder, repo_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup

    save_quality_check(stored_check(l3.fingerprint, {"onnx-int8": GOOD}))
    write_probe(l3, {"onnx-fp32": 300, "torch-fp32": 200, "onnx-int8": 700})
    corpus = home / "bbc.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:1200].to_parquet(corpus)
    common = dict(
        corpus=str(corpus),
        model=str(l3.path),
        convert="none",
        threshold=0.95,
        text_fields=("description",),
        cache=False,
        progress=False,
    )
    caplog.set_level("INFO", logger="nlsim")
    auto = run_dedup(DedupConfig.of(out=str(home / "auto"), **common))
    inference = auto.summary["model_info"]["inference"]
    assert inference["path"] == "onnx-int8" and inference["quality_check"].startswith("passed")
    assert auto.summary["model_info"]["precision"] == "int8"
    run_json = json.loads((home / "auto" / "run.json").read_text())
    assert run_json["model_info"]["inference"]["path"] == "onnx-int8"
    assert "embedding with" in caplog.text and "onnx-int8" in caplog.text
    exact = run_dedup(DedupConfig.of(out=str(home / "exact"), precision="fp32", **common))
    assert exact.summary["model_info"]["inference"]["path"] == "onnx-fp32"
    # the pairs of the checked int8 run and the exact run: the same, or a measured few apart
    key = ["id_a", "id_b"]
    a = set(map(tuple, auto.pairs[key].to_numpy()))
    b = set(map(tuple, exact.pairs[key].to_numpy()))
    assert len(a ^ b) <= max(2, len(b) // 20)


def test_only_the_lossy_paths_that_can_pay_off_are_checked(home: Path, l3: Encoder) -> None:
    from nlsim.inference.choice import weigh_lossy

    target = encoder_target(l3)
    # a CPU without VNNI or bf16: no lossy path is checked, each named with its reason, nothing probed
    worth = weigh_lossy(target, cpu=CpuInfo("old", ("avx2",), 2))
    keep, skipped = worth.keep, worth.skipped
    assert keep == [] and {"onnx-int8", "torch-int8", "torch-bf16"} <= set(skipped)
    assert all(skipped.values())
    # VNNI and bf16, no probe cached: nothing says a path cannot pay off, so each is checked
    keep = weigh_lossy(target).keep
    assert "torch-bf16" in keep and "onnx-int8" in keep
    # a probe that finds a lossy path no faster than fp32: that path is not checked, and why is said
    write_probe(l3, {"onnx-fp32": 300.0, "torch-fp32": 200.0, "onnx-int8": 320.0, "torch-bf16": 600.0})
    worth = weigh_lossy(target)
    keep, skipped = worth.keep, worth.skipped
    assert "torch-bf16" in keep and "onnx-int8" not in keep
    assert "not faster on this CPU" in skipped["onnx-int8"]


@pytest.mark.slow
def test_a_cpu_with_no_lossy_path_to_check_makes_no_fp32_pass(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an avx2-only CPU nothing is compared with fp32, so the check does not score the pairs at all: each
    path is recorded as not checked, with why, and ``auto`` takes none of them."""
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx avx2 fma")
    calls: list[str] = []
    encode = l3.encode
    monkeypatch.setattr(l3, "encode", lambda *a, **k: calls.append(str(k.get("runner"))) or encode(*a, **k))
    pairs = stsb_sample(train=0, validation=20, test=0)
    record = check_encoder(l3, pairs)
    assert calls == []
    assert record["reference"]["not_scored"] and record["n_pairs"] == len(pairs)
    assert {"onnx-int8", "torch-int8", "torch-bf16"} <= set(record["paths"])
    for path, entry in record["paths"].items():
        assert entry["not_checked"] and entry["passed"] is False
        assert not quality_verdict(record, path)[0]
    assert "no fp32 pass" in describe_record(record)[0]
    # where a path is checked, the fp32 pass is made as before
    monkeypatch.delenv("NLSIM_CPU_FLAGS")
    record = check_encoder(l3, pairs, paths=["torch-bf16"])
    assert "torch" in calls and "spearman" in record["reference"]


@pytest.mark.slow
def test_a_job_too_small_to_repay_the_probe_is_not_timed_and_a_big_one_is(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.inference.probe import PROBE_PAYOFF, PROBE_REPEATS, probe_file

    monkeypatch.setenv("NLSIM_PROBE", "on")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx avx2 fma")  # two exact paths to time, nothing lossy
    target = encoder_target(l3)
    batches, _ = target.probe_batches()
    cost = sum(b["input_ids"].shape[0] for b in batches) * (1 + PROBE_REPEATS) * 2
    small = select(target, job_items=PROBE_PAYOFF * cost - 1).choice
    stored = probe_file(target.architecture(), torch.get_num_threads(), cpu_info())
    assert not stored.exists() and small.probe == {}
    assert small.path == "torch-fp32" and "not timed: a job of" in small.reason  # no AVX-512: no export
    big = select(target, job_items=PROBE_PAYOFF * cost).choice
    assert stored.exists() and set(big.probe) == {"onnx-fp32", "torch-fp32"} and "not timed" not in big.reason
    again = select(target, job_items=10).choice  # a small job reads the cached timing (kept to 2 decimals)
    assert again.probe == pytest.approx(big.probe, abs=0.11) and "not timed" not in again.reason


@pytest.mark.slow
def test_a_small_job_takes_torch_fp32_until_the_onnx_export_is_made(home: Path, l3: Encoder) -> None:
    """Without a timing, a small job on a CPU with AVX-512 (ONNX first in the exact paths' order) takes torch
    fp32 while the export is not made (it could not repay it), and ONNX once it is."""
    target = encoder_target(l3)
    first = select(target, job_items=10).choice
    assert first.path == "torch-fp32" and "no ONNX export yet" in first.reason
    assert not (home / "onnx").exists()  # nothing was exported for it
    target.build("onnx-fp32", 1)
    again = select(target, job_items=10).choice
    assert again.path == "onnx-fp32" and "no ONNX export" not in again.reason and "not timed" in again.reason


@pytest.mark.slow
def test_a_small_job_is_still_timed_where_a_lossy_path_could_win(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.inference.probe import probe_file

    monkeypatch.setenv("NLSIM_PROBE", "on")  # VNNI and bf16 (the fixture's CPU): lossy paths that passed
    save_quality_check(
        stored_check(l3.fingerprint, {"onnx-int8": GOOD, "torch-bf16": GOOD, "torch-int8": GOOD})
    )
    target = encoder_target(l3)
    choice = select(target, job_items=10).choice  # far too small to repay timing two exact paths
    assert probe_file(target.architecture(), torch.get_num_threads(), cpu_info()).exists()
    assert "not timed" not in choice.reason and choice.probe.get("onnx-int8", 0) > 0


@pytest.mark.slow
def test_the_check_stops_at_the_fastest_path_that_passes(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fastest first (the probe): a path that fails (here: cannot be built) gives way to the next; once one
    passes, each slower path is recorded as not checked, with why, and a run here would not check it again;
    on a CPU where a slower-checked path ranks first, it would."""
    from nlsim.inference.target import Target
    from nlsim.training.lossy_check import unchecked_here

    rates = {"onnx-fp32": 300.0, "torch-fp32": 200.0, "onnx-int8": 700.0, "torch-bf16": 600.0}
    write_probe(l3, {**rates, "torch-int8": 400.0})
    build = Target.build
    built: list[str] = []

    def failing_int8(self: Target, path: str, threads: int | None = None) -> object:
        built.append(path)
        if path == "onnx-int8":
            raise RuntimeError("no ONNX here")
        return build(self, path, threads)

    monkeypatch.setattr(Target, "build", failing_int8)
    record = check_encoder(l3, stsb_sample(train=0, validation=40, test=0))
    paths = record["paths"]
    assert built == ["onnx-int8", "torch-bf16"]  # torch-int8 was never built
    assert "RuntimeError" in paths["onnx-int8"]["error"] and paths["torch-bf16"]["passed"]
    assert paths["torch-int8"]["not_checked"].startswith("slower here than torch-bf16, which passed")
    assert not quality_verdict(record, "torch-int8")[0]
    target = encoder_target(l3)
    assert unchecked_here(record, target) == []  # int8 is slower here than bf16: never taken
    write_probe(l3, {**rates, "torch-int8": 900.0})
    assert unchecked_here(record, target) == ["torch-int8"]  # where int8 is the faster, it is checked


AMX = "avx2 avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8"


def recorded_builds(monkeypatch: pytest.MonkeyPatch, failing: tuple[str, ...] = ()) -> list[str]:
    """The paths a quality check or a choice builds, in order, from here on; those in ``failing`` raise."""
    from nlsim.inference.target import Target

    build = Target.build
    built: list[str] = []

    def recorded(self: Target, path: str, threads: int | None = None) -> object:
        built.append(path)
        if path in failing:
            raise RuntimeError(f"no {path} here")
        return build(self, path, threads)

    monkeypatch.setattr(Target, "build", recorded)
    return built


@pytest.mark.slow
def test_a_cpu_with_amx_takes_bf16_untimed_once_it_passed(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU with AMX-BF16 times nothing (``NLSIM_PROBE=on`` or ``cached``; not ``off``): the check
    measures torch-bf16 first and, once it passes, no other lossy path; a job takes it; no probe is
    written. A CPU without AMX reads the same record and lets the probe decide."""
    from nlsim.inference.probe import probe_file
    from nlsim.training.lossy_check import unchecked_here

    monkeypatch.setenv("NLSIM_CPU_FLAGS", AMX)
    monkeypatch.setenv("NLSIM_PROBE", "on")
    built = recorded_builds(monkeypatch)
    record = check_encoder(l3, stsb_sample(train=0, validation=40, test=0))
    target = encoder_target(l3)
    stored = probe_file(target.architecture(), torch.get_num_threads(), cpu_info())
    assert built == ["torch-bf16"] and record["paths"]["torch-bf16"]["passed"] and not stored.exists()
    for path in ("onnx-int8", "torch-int8"):
        assert "AMX-BF16 takes it without timing" in record["paths"][path]["not_checked"]
    assert unchecked_here(record, target) == []
    save_quality_check(record)
    choice = select(target, job_items=100_000).choice
    assert choice.path == "torch-bf16" and "without a probe" in choice.reason and choice.probe == {}
    assert not stored.exists()
    off = select(target, job_items=100_000, probe_missing=False, use_probe=False)  # NLSIM_PROBE=off: no rule
    assert off.choice.path == "onnx-fp32"  # the first candidate in the table's order
    cached = select(target, job_items=100_000, probe_missing=False)  # cached: the rule, nothing timed
    assert cached.choice.path == "torch-bf16" and not stored.exists()
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX512_VNNI_BF16)  # no AMX: the same record, the probe decides
    write_probe(l3, {"onnx-fp32": 300.0, "torch-fp32": 200.0, "onnx-int8": 400.0, "torch-bf16": 600.0})
    assert select(target, job_items=100_000).choice.reason.startswith("fastest in the probe")


def test_amx_flags_count_only_where_the_process_may_use_the_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    from nlsim.inference import cpu as cpu_module

    monkeypatch.delenv("NLSIM_CPU_FLAGS", raising=False)
    text = "model name\t: Xeon\nflags\t\t: avx2 avx512f avx512_bf16 amx_tile amx_bf16 amx_int8\n"
    monkeypatch.setattr(cpu_module, "Path", lambda _: type("F", (), {"read_text": lambda *a, **k: text})())
    for usable, expected in ((True, True), (False, False)):
        monkeypatch.setattr(cpu_module, "amx_usable", lambda usable=usable: usable)
        cpu_module._read.cache_clear()
        found = cpu_info()
        assert found.has_amx is expected and ("amx_bf16" in found.flags) is expected
        assert "avx512_bf16" in found.flags  # what AVX-512 gives stays
    cpu_module._read.cache_clear()


def test_a_cpu_with_amx_checks_the_others_unmeasured_where_bf16_fails(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AMX)
    monkeypatch.setenv("NLSIM_PROBE", "on")
    built = recorded_builds(monkeypatch, failing=("torch-bf16", "onnx-int8"))
    record = check_encoder(l3, stsb_sample(train=0, validation=40, test=0))
    assert built == ["torch-bf16", "onnx-int8", "torch-int8"]  # nothing timed, each checked in turn
    assert "spearman" in record["paths"]["torch-int8"] and "error" in record["paths"]["torch-bf16"]
    failed = {**GOOD, "spearman": 70.0}
    save_quality_check(stored_check(l3.fingerprint, {"torch-bf16": failed, "torch-int8": GOOD}))
    rates = {"onnx-fp32": 300.0, "torch-fp32": 200.0, "torch-int8": 500.0}
    write_probe(l3, rates)  # cached: "on" times nothing more
    choice = select(encoder_target(l3), job_items=100_000).choice
    assert choice.path == "torch-int8" and choice.reason.startswith("fastest in the probe")


@pytest.mark.slow
def test_the_check_takes_the_fp32_vectors_it_is_given(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference of a check given every text's fp32 vector (fine-tuning's validation pass) embeds
    nothing in fp32, and its figures are those of a check that embedded them."""
    from nlsim.training.lossy_check import pair_texts

    pairs = stsb_sample(train=0, validation=40, test=0)
    unique = pair_texts(pairs, None)[0]
    known = dict(zip(unique, l3.encode(unique, progress=False, runner="torch"), strict=True))
    runners: list[str] = []
    encode = l3.encode
    monkeypatch.setattr(l3, "encode", lambda *a, **k: runners.append(str(k.get("runner"))) or encode(*a, **k))
    given = check_encoder(l3, pairs, paths=["torch-bf16"], known=dict(known))
    assert "torch" not in runners
    embedded = check_encoder(l3, pairs, paths=["torch-bf16"])
    assert "torch" in runners
    assert given["reference"] == embedded["reference"] and given["paths"] == embedded["paths"]


def test_the_cross_encoders_reference_reads_only_the_pairs_not_cached(home: Path) -> None:
    from nlsim.rerank.cache import PairScoreCache
    from nlsim.training.lossy_check import fp32_pair_scores

    read: list[tuple[str, str]] = []

    class Scorer:
        def digest(self) -> str:
            return "a-cross-encoder"

        def predict(self, a: list[str], b: list[str]) -> np.ndarray:
            read.extend(zip(a, b, strict=True))
            return np.array([len(x) / (len(x) + len(y)) for x, y in zip(a, b, strict=True)])

    PairScoreCache(None, "a-cross-encoder").store(["cat"], ["a dog"], np.array([0.25]))
    got = fp32_pair_scores(Scorer(), ["cat", "sun", "moon"], ["a dog", "rain", "stars"])
    assert got.tolist() == [0.25, 3 / 7, 4 / 9]  # the cached score taken, not read again
    assert read == [("sun", "rain"), ("moon", "stars")]
    again = fp32_pair_scores(Scorer(), ["rain", "moon"], ["sun", "stars"])  # either order: one pair
    assert again.tolist() == [3 / 7, 4 / 9] and len(read) == 2


def test_the_probe_times_a_long_pass_once_and_a_short_one_best_of_three() -> None:
    from nlsim.inference.probe import PROBE_REPEATS, time_runner

    batch = {"input_ids": np.zeros((4, 8), dtype=np.int64)}
    calls: list[int] = []
    time_runner(lambda b: calls.append(1), [batch], enough_s=60.0)
    assert len(calls) == 1 + PROBE_REPEATS
    calls.clear()
    time_runner(lambda b: calls.append(1), [batch], enough_s=0.0)
    assert len(calls) == 2  # the warm-up and one timed pass


@pytest.mark.slow
def test_a_path_that_breaks_the_cosine_floor_on_a_first_look_is_not_read_further(
    home: Path, l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lowest cosine of all the texts is at most that of a fifth of them: once a first look breaks the
    floor, the verdict is known and the path reads no more (nlsim/training/first_look.py). Under a looser
    floor that figure decides nothing, and the path is checked again, every text read once."""
    from nlsim.inference import lossy_verdict
    from nlsim.inference.lossy_verdict import was_tried
    from nlsim.training.first_look import first_look_rows
    from nlsim.training.lossy_check import pair_texts

    pairs = stsb_sample(train=0, validation=200, test=0)
    unique = pair_texts(pairs, None)[0]
    look = len(first_look_rows(len(unique)))
    assert 2 * look <= len(unique)
    read: list[str] = []
    encode = l3.encode

    def recorded(texts: list[str], **kwargs: object) -> np.ndarray:
        if kwargs.get("runner") != "torch":  # the lossy path's reads, not the fp32 reference's
            read.extend(texts)
        return encode(texts, **kwargs)

    monkeypatch.setattr(l3, "encode", recorded)
    monkeypatch.setattr(lossy_verdict, "MIN_COSINE", 0.9999999)  # bf16 cannot keep to it
    record = check_encoder(l3, pairs, paths=["torch-bf16"])
    entry = record["paths"]["torch-bf16"]
    assert entry["first_look"] == {"read": look, "of": len(unique), "unit": "texts"}
    assert len(read) == look and "spearman" not in entry and entry["passed"] is False
    ok, why, _ = quality_verdict(record, "torch-bf16")
    assert not ok and why.startswith(f"failed on a first look at {look} of {len(unique)} texts: lowest")
    assert was_tried(record, "torch-bf16")
    monkeypatch.setattr(lossy_verdict, "MIN_COSINE", 0.98)  # the floor loosened since: not a verdict
    ok, why, _ = quality_verdict(record, "torch-bf16")
    assert not ok and "not checked in full" in why and not was_tried(record, "torch-bf16")
    read.clear()
    again = check_encoder(l3, pairs, paths=["torch-bf16"])["paths"]["torch-bf16"]
    assert "first_look" not in again and "spearman" in again and sorted(read) == sorted(unique)
