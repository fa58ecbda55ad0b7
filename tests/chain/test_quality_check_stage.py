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
from nlsim.inference.quality_check import QUALITY_CHECK_JSON, load_quality_check, quality_verdict
from nlsim.io.model_store import ModelStore

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
AVX2 = "avx avx2 fma"
BF16 = "avx avx2 fma avx512f avx512bw avx512_bf16"


def test_a_record_made_on_an_avx2_cpu_is_completed_where_bf16_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NLSIM_PROBE", "off")  # no probe: every path the CPU has is worth checking
    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("c" * 64)
    shutil.copytree(load_encoder(FAST_MODEL).path, version)
    store.promote(version, "test")
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
    cfg = PipelineConfig(
        pairs="pairs.tsv",
        corpus="corpus.parquet",
        out=str(tmp_path / "report"),
        model_store=str(store.root),
        base_model=FAST_MODEL,
        convert="none",
        threads=1,
        progress=False,
    )

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
    assert not quality_verdict(record, "torch-bf16")[1].startswith("not checked")
    # once per CPU kind
    assert quality_check_stage(cfg, store, None, validation, None) == {"model": version.name, "reused": True}
