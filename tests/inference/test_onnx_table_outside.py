"""An ONNX export leaves the word-embedding table out of its graph (the runner looks the rows up in the
model's own table), and the probe times the model itself, handing its runners back. No timing is asserted:
what is checked is what the export holds and computes, that the model is left as it was, and which runners
reach the caller."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from nlsim.encoders import load_encoder
from nlsim.encoders.planner import encoder_target
from nlsim.errors import StateError
from nlsim.inference.cpu import cpu_info
from nlsim.inference.probe import load_probe, probe_rates
from nlsim.inference.target import Target

FAST_MODEL = "paraphrase-MiniLM-L3-v2"

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def target() -> Target:
    return encoder_target(load_encoder(FAST_MODEL, backend="torch"))


def _initializer_shapes(path: Path) -> list[tuple[int, ...]]:
    graph = onnx.load(str(path)).graph
    return [tuple(int(d) for d in init.dims) for init in graph.initializer]


def test_the_export_holds_no_word_table_and_computes_what_torch_computes(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.inference.onnx import TABLE_INPUT

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    table = target.model.get_input_embeddings()
    fp32, int8 = target.build("onnx-fp32", 1), target.build("onnx-int8", 1)
    assert target.model.get_input_embeddings() is table  # the model is given its table back
    assert isinstance(table, torch.nn.Embedding) and table.num_embeddings == 30522
    for runner in (fp32, int8):
        assert TABLE_INPUT in runner.inputs
        shapes = _initializer_shapes(runner.path)
        assert tuple(table.weight.shape) not in shapes  # the 30,522 x 384 table is not in the graph
        assert runner.path.stat().st_size < table.weight.numel() * 4 / 2  # the table alone is 47 MB
    for batch in target.check_batches():  # padded batches of several shapes
        np.testing.assert_allclose(fp32(batch), target.run(None, batch), atol=1e-5)
        assert np.abs(int8(batch) - target.run(None, batch)).max() < 0.5  # int8: close, not equal
    with pytest.raises(StateError, match="word-embedding rows"):
        type(fp32)(fp32.path, threads=1)  # a table-less graph run without the model's table


def test_the_probe_times_the_model_itself_and_hands_its_runners_back(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where an ONNX export is timed beside a lossy path, the export timed is the model's own (the one a
    quality check or a job then runs): the probe hands every runner it built back, so none is built twice."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    runners: dict[str, object] = {}
    excluded: dict[str, str] = {}
    cpu = cpu_info()
    rates = probe_rates(target, ["torch-fp32", "onnx-fp32", "torch-bf16"], 1, cpu, runners, excluded)
    assert not excluded and all(rates[p] > 0 for p in ("torch-fp32", "onnx-fp32", "torch-bf16"))
    assert set(runners) == {"torch-fp32", "onnx-fp32", "torch-bf16"}
    assert runners["torch-fp32"] is None and runners["onnx-fp32"] is not None  # None: plain torch fp32
    batch = target.check_batches()[0]
    np.testing.assert_allclose(target.run(runners["onnx-fp32"], batch), target.run(None, batch), atol=1e-5)
    assert load_probe(target.architecture(), 1, cpu) == pytest.approx(rates, abs=0.01)
    assert [p.name for p in (tmp_path / "onnx").iterdir()] == [target.export_name()]
    assert not (tmp_path / "probes" / "onnx").exists()  # no export of any other model is made
