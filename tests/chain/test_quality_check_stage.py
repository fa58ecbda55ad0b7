"""The chain's quality check stage on a model trained elsewhere: a record made on an avx2-only CPU is
completed on a CPU that has the instructions it lacked, once per CPU kind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from stsb_helpers import stsb_sample

from nlsim.chain.config import PipelineConfig
from nlsim.chain.run import quality_check_stage
from nlsim.encoders import load_encoder
from nlsim.encoders.planner import encoder_target
from nlsim.inference.choice import select
from nlsim.inference.lossy_verdict import QUALITY_CHECK_JSON, load_quality_check, quality_verdict
from nlsim.io.model_store import ModelStore

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
AVX2 = "avx avx2 fma"
BF16 = "avx avx2 fma avx512f avx512bw avx512_bf16"


def config(folder: Path, store: ModelStore) -> PipelineConfig:
    """The chain's options as the stage reads them (the pairs and corpus are never opened here)."""
    return PipelineConfig.of(
        pairs="pairs.tsv",
        corpus="corpus.parquet",
        out=str(folder / "report"),
        model_store=str(store.root),
        base_model=FAST_MODEL,
        convert="none",
        threads=1,
        progress=False,
    )


def promoted_copy(folder: Path, digest: str) -> tuple[ModelStore, Path]:
    """A model store under ``folder`` whose current version is a copy of the fast test model."""
    store = ModelStore(folder / "models")
    store.claim()
    version = store.new_version_dir(digest * 64)
    shutil.copytree(load_encoder(FAST_MODEL).path, version)
    store.register(version, {"fingerprint": digest * 64})
    store.promote(version, "test")
    return store, version


@pytest.mark.slow
def test_a_record_made_on_an_avx2_cpu_is_completed_where_bf16_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")  # no probe: every path the CPU has is worth checking
    store, version = promoted_copy(tmp_path, "c")
    encoder = load_encoder(str(version))
    trained_on_avx2 = {
        "format": 1,
        "kind": "encoder",
        "identity": encoder.fingerprint,
        "reference": {"path": "torch-fp32", "not_scored": "no lossy path is checked here"},
        "paths": {p: {"not_checked": "no VNNI or bf16"} for p in ("onnx-int8", "torch-bf16", "torch-int8")},
    }
    (version / QUALITY_CHECK_JSON).write_text(json.dumps(trained_on_avx2), encoding="utf-8")
    validation = stsb_sample(train=0, validation=24, test=0)
    cfg = config(tmp_path, store)

    # on another avx2-only CPU the folder's record already says all there is: no check, nothing written
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2)
    assert quality_check_stage(cfg, store, None, validation, None)["written"] == []

    # on a CPU with bf16, bf16 is checked here, kept under $NLSIM_HOME, and read with the folder's record
    monkeypatch.setenv("NLSIM_CPU_FLAGS", BF16)
    done = quality_check_stage(cfg, store, None, validation, None)
    assert len(done["written"]) == 1 and done["written"][0].startswith(str(tmp_path / "home"))
    record, where = load_quality_check("encoder", encoder.fingerprint, encoder.path)
    assert where == str(version / QUALITY_CHECK_JSON)
    bf16 = record["paths"]["torch-bf16"]
    assert "spearman" in bf16 and bf16["checked_in"] == done["written"][0]
    # judged against the fp32 figures it was measured beside (the folder's record has none)
    assert quality_verdict(record, "torch-bf16")[0], quality_verdict(record, "torch-bf16")[1]
    # and a run that takes bf16 names the record its figures come from
    chosen = select(encoder_target(encoder), precision="bf16", use_probe=False).choice
    assert chosen.path == "torch-bf16" and chosen.quality_check_file == done["written"][0]
    # once per CPU kind, each kind remembered
    assert quality_check_stage(cfg, store, None, validation, None) == {"model": version.name, "reused": True}
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2)
    assert quality_check_stage(cfg, store, None, validation, None) == {"model": version.name, "reused": True}


@pytest.mark.slow
def test_a_settled_check_whose_record_was_lost_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The store remembers the check settled for this machine kind; the figures it made live under
    $NLSIM_HOME. A home cleared (or a record torn) must not read as "settled, with fewer paths": the stage
    sees the figures it relied on are gone, says so and checks again."""
    import logging

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", BF16)  # bf16 is checked: figures a report would use
    store, version = promoted_copy(tmp_path, "f")
    validation = stsb_sample(train=0, validation=24, test=0)
    cfg = config(tmp_path, store)
    first = quality_check_stage(cfg, store, None, validation, None)
    assert len(first["written"]) == 1
    assert quality_check_stage(cfg, store, None, validation, None) == {"model": version.name, "reused": True}
    for damage in ("removed", "torn"):
        record = Path(first["written"][0])
        record.unlink() if damage == "removed" else record.write_text(record.read_text()[:40])
        with caplog.at_level(logging.INFO, logger="nlsim"):
            again = quality_check_stage(cfg, store, None, validation, None)
        assert again.get("written") == first["written"], damage
        assert "are gone" in caplog.text and "checked again" in caplog.text
        assert quality_check_stage(cfg, store, None, validation, None)["reused"]


@pytest.mark.slow
def test_a_path_stopped_after_a_first_look_under_a_limit_since_loosened_is_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A version the chain trained is settled by its training's check (its folder's record); where that
    record holds a path stopped after a first look (the cosine floor broken on a fifth of the texts), it
    stays settled while the floor stands. Once the floor is loosened, that figure decides nothing: the stage
    says so and checks the path again, in full, and the figures made then settle it."""
    import logging

    from nlsim.chain.run import mark_checked, quality_marker
    from nlsim.encoders.device import default_device
    from nlsim.inference import lossy_verdict

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", BF16)
    store, version = promoted_copy(tmp_path, "e")
    encoder = load_encoder(str(version))
    look = {"read": 64, "of": 400, "unit": "texts"}
    stopped = {"min_cosine": 0.95, "mean_cosine": 0.99, "first_look": look}
    folder_record = {
        "format": 1,
        "kind": "encoder",
        "identity": encoder.fingerprint,
        "reference": {"path": "torch-fp32", "spearman": 80.0, "f1": 0.5},
        "paths": {"torch-bf16": stopped},
    }
    (version / QUALITY_CHECK_JSON).write_text(json.dumps(folder_record), encoding="utf-8")
    validation = stsb_sample(train=0, validation=24, test=0)
    cfg = config(tmp_path, store)
    mark_checked(store, version, quality_marker(cfg, validation, default_device()))  # as training does
    assert quality_check_stage(cfg, store, None, validation, None)["reused"]
    monkeypatch.setattr(lossy_verdict, "MIN_COSINE", 0.9)  # the floor loosened: 0.95 keeps to it now
    with caplog.at_level(logging.INFO, logger="nlsim"):
        again = quality_check_stage(cfg, store, None, validation, None)
    assert "stopped after a first look under a limit since loosened" in caplog.text
    assert len(again["written"]) == 1
    record = load_quality_check("encoder", encoder.fingerprint, encoder.path)[0]
    assert "spearman" in record["paths"]["torch-bf16"] and "first_look" not in record["paths"]["torch-bf16"]
    # the folder's record stays as it was saved; the figures made here settle the check from now on
    assert json.loads((version / QUALITY_CHECK_JSON).read_text())["paths"]["torch-bf16"] == stopped
    assert quality_check_stage(cfg, store, None, validation, None)["reused"]


@pytest.mark.slow
def test_a_check_settled_on_a_first_look_kept_under_the_home_is_made_again_once_the_limit_loosens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A folder with no record of its own is checked by the stage, its record kept under $NLSIM_HOME: a path
    stopped there after a first look settles the check while the floor stands, and is read again in full
    once it is loosened."""
    import logging

    from nlsim.inference import lossy_verdict

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", BF16)
    store, version = promoted_copy(tmp_path, "d")
    encoder = load_encoder(str(version))
    validation = stsb_sample(train=0, validation=200, test=0)  # enough texts for a first look
    cfg = config(tmp_path, store)
    monkeypatch.setattr(lossy_verdict, "MIN_COSINE", 0.9999999)  # bf16 cannot keep to it
    first = quality_check_stage(cfg, store, None, validation, None)
    assert len(first["written"]) == 1 and first["written"][0].startswith(str(tmp_path / "home"))
    stopped = load_quality_check("encoder", encoder.fingerprint, encoder.path)[0]["paths"]["torch-bf16"]
    assert "first_look" in stopped and "spearman" not in stopped
    assert quality_check_stage(cfg, store, None, validation, None)["reused"]
    monkeypatch.setattr(lossy_verdict, "MIN_COSINE", 0.98)
    with caplog.at_level(logging.INFO, logger="nlsim"):
        again = quality_check_stage(cfg, store, None, validation, None)
    assert "torch-bf16 stopped after a first look under a limit since loosened" in caplog.text
    assert again["written"] == first["written"]
    record = load_quality_check("encoder", encoder.fingerprint, encoder.path)[0]
    assert "spearman" in record["paths"]["torch-bf16"] and "first_look" not in record["paths"]["torch-bf16"]
    assert quality_check_stage(cfg, store, None, validation, None)["reused"]


@pytest.mark.slow
def test_a_path_that_failed_to_run_is_not_tried_on_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no promoted model (the zero-shot base: no marker in the store), a path whose check could not
    run is recorded with its error, and the next run does not check again."""
    import nlsim.training.lossy_check as made

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", BF16)
    store = ModelStore(tmp_path / "models")
    base = load_encoder(FAST_MODEL)
    validation = stsb_sample(train=0, validation=24, test=0)
    cfg = config(tmp_path, store)
    checks = []
    real = made.check_encoder

    def counted(*args: object, **kwargs: object) -> dict:
        checks.append(1)
        return real(*args, **kwargs)

    def broken(self: object, path: str, threads: object = None) -> object:
        raise RuntimeError("no kernel for this path here")

    monkeypatch.setattr(made, "check_encoder", counted)
    monkeypatch.setattr(type(made.encoder_target(base)), "build", broken)
    quality_check_stage(cfg, store, base, validation, None)
    record, _ = load_quality_check("encoder", base.fingerprint, base.path)
    assert record["paths"]["torch-bf16"].get("error")
    quality_check_stage(cfg, store, base, validation, None)
    assert checks == [1]


def test_a_check_settled_at_one_thread_count_is_settled_again_at_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which lossy CPU paths are worth checking is timed at the run's thread count, so the store's
    marker says the count: a model settled with 1 thread is looked at again with 2, then remembered."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2)
    store, version = promoted_copy(tmp_path, "d")
    validation = stsb_sample(train=0, validation=24, test=0)
    one = config(tmp_path, store)
    two = one.with_(threads=2)
    reused = {"model": version.name, "reused": True}
    assert "written" in quality_check_stage(one, store, None, validation, None)
    assert quality_check_stage(one, store, None, validation, None) == reused
    assert "written" in quality_check_stage(two, store, None, validation, None)
    for cfg in (one, two):
        assert quality_check_stage(cfg, store, None, validation, None) == reused


@pytest.mark.slow
def test_a_lossy_path_that_pays_only_at_another_thread_count_is_checked_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe (cached here, never timed) finds bf16 no faster with 1 thread and twice as fast with 2:
    the stage settles the model with bf16 not checked at 1 thread, then checks bf16 at 2."""
    from nlsim.inference.cpu import cpu_info
    from nlsim.inference.probe import save_probe

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "cached")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", BF16)
    store, version = promoted_copy(tmp_path, "e")
    encoder = load_encoder(str(version))
    arch = encoder_target(encoder).architecture()
    exact = {"onnx-fp32": 100.0, "torch-fp32": 100.0}
    save_probe(arch, 1, cpu_info(), {**exact, "torch-bf16": 104.0}, [])
    save_probe(arch, 2, cpu_info(), {**exact, "torch-bf16": 200.0}, [])
    validation = stsb_sample(train=0, validation=24, test=0)
    one = config(tmp_path, store)

    quality_check_stage(one, store, None, validation, None)
    bf16 = load_quality_check("encoder", encoder.fingerprint, encoder.path)[0]["paths"]["torch-bf16"]
    assert "spearman" not in bf16 and "not faster" in bf16["not_checked"]

    done = quality_check_stage(one.with_(threads=2), store, None, validation, None)
    assert len(done["written"]) == 1
    bf16 = load_quality_check("encoder", encoder.fingerprint, encoder.path)[0]["paths"]["torch-bf16"]
    assert "spearman" in bf16


@pytest.mark.slow
def test_the_zero_shot_check_takes_the_baselines_vectors_as_its_fp32_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline embedded the validation texts with the base model on an exact path: the zero-shot check
    compares the lossy paths with those vectors, and embeds none of them in fp32 again."""
    from nlsim.chain.run import zero_shot_scores

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", BF16)
    store = ModelStore(tmp_path / "models")
    base = load_encoder(FAST_MODEL, backend="torch")
    validation = stsb_sample(train=0, validation=24, test=0)
    cfg = config(tmp_path, store)
    scores, _, vectors = zero_shot_scores(cfg, base, validation, validation.iloc[:0])
    texts = set(validation["text_a"]) | set(validation["text_b"])
    assert set(vectors) == texts and len(scores) == len(validation)
    fp32: list[str] = []
    encode = base.encode

    def counted(texts: list[str], *args: object, **kwargs: object) -> object:
        if kwargs.get("runner") == "torch":
            fp32.extend(texts)
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(base, "encode", counted)
    quality_check_stage(cfg, store, base, validation, None, vectors)
    record, _ = load_quality_check("encoder", base.fingerprint, base.path)
    assert fp32 == [] and record["paths"]["torch-bf16"]["passed"]
    assert record["reference"]["spearman"] == pytest.approx(100 * _spearman(scores, validation), abs=0.006)


def _spearman(scores: object, pairs: object) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(scores, pairs["score"]).statistic)  # type: ignore[index]


def test_a_report_without_its_reranker_checks_the_bi_encoder_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --no-rerank the report never runs the model's reranker: its quality check neither loads nor
    checks it (a damaged reranker is no reason to stop such a chain), and a check so settled does not
    settle a report that reranks, nor does it set one aside when one is settled."""
    import nlsim.rerank.reranker as reranker_module
    import nlsim.training.lossy_check as lossy_check

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2)
    store, version = promoted_copy(tmp_path, "a")
    validation = stsb_sample(train=0, validation=24, test=0)
    reranks = config(tmp_path, store)
    alone = reranks.with_(rerank=False)
    reused = {"model": version.name, "reused": True}

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("the reranker was read for a report made without it")

    with monkeypatch.context() as patched:
        patched.setattr(reranker_module, "load_reranker", unread)
        patched.setattr(lossy_check, "check_cross_encoder", unread)
        assert "written" in quality_check_stage(alone, store, None, validation, None)
        assert quality_check_stage(alone, store, None, validation, None) == reused
    assert "written" in quality_check_stage(reranks, store, None, validation, None)  # not settled by it
    fresh = tmp_path / "again"
    store, version = promoted_copy(fresh, "b")
    reranks, alone = config(fresh, store), config(fresh, store).with_(rerank=False)
    assert "written" in quality_check_stage(reranks, store, None, validation, None)
    reused = {"model": version.name, "reused": True}
    assert quality_check_stage(alone, store, None, validation, None) == reused


def test_a_lost_reranker_record_unsettles_only_a_report_that_reranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The figures a settled check relied on are looked for in the model parts the report uses: a
    cross-encoder record gone says so for a report that reranks, and nothing for one made without its
    reranker, whose check stays settled."""
    import nlsim.chain.run as chain_run

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))  # no record kept there
    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("e" * 64)
    version.mkdir(parents=True)
    store.register(version, {"fingerprint": version.name})
    gone = {"kind": "cross-encoder", "identity": "f" * 64, "folder": "", "checked": ["torch-bf16"]}
    chain_run.mark_checked(store, version, "m", [gone])
    chain_run.mark_checked(store, version, "m:cosine", [gone])
    lost = chain_run.lost_figures(store, version, "m")
    assert lost == "the cross-encoder's figures for torch-bf16 are gone (its record was removed or damaged)"
    assert chain_run.lost_figures(store, version, "m", ("encoder",)) is None
    alone, reranks = PipelineConfig.of(rerank=False), PipelineConfig.of(rerank=True)
    assert chain_run.settled(alone, store, version, "m:cosine") and not chain_run.settled(
        reranks, store, version, "m"
    )
