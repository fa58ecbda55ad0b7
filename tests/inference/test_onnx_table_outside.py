"""An ONNX export leaves the word-embedding table out of its graph (the runner looks the rows up in the
model's own table), and the probe times the model itself, handing its runners back. No timing is asserted:
what is checked is what the export holds and computes, that the model is left as it was, and which runners
reach the caller."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

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


@pytest.mark.slow
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


@pytest.mark.slow
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


def _tiny_target(model: torch.nn.Module, name: str) -> SimpleNamespace:
    """What an export needs of a model (:class:`nlsim.inference.onnx.Exportable`), for a tiny random one:
    the first token's hidden state out, two padded batches to check."""
    rng = np.random.default_rng(0)

    def batches() -> list[dict[str, np.ndarray]]:
        out = []
        for rows, length in ((3, 5), (2, 9)):
            ids = rng.integers(2, 50, size=(rows, length), dtype=np.int64)
            mask = np.ones_like(ids)
            mask[0, length // 2 :] = 0  # padded
            out.append({"input_ids": ids, "attention_mask": mask})
        return out

    def forward(m: torch.nn.Module, f: dict[str, torch.Tensor]) -> torch.Tensor:
        return m(input_ids=f["input_ids"], attention_mask=f["attention_mask"]).last_hidden_state[:, 0]

    return SimpleNamespace(
        model=model.eval(),
        head=None,
        forward=forward,
        output="y",
        check_batches=batches,
        weights=lambda: name,
        export_name=lambda: name,
    )


def _tiny_distilbert() -> torch.nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=50, dim=16, n_layers=1, n_heads=2, hidden_dim=32)
    return DistilBertModel(config)


def test_a_model_whose_ids_feed_only_the_table_runs_without_them(tmp_path: Path) -> None:
    """DistilBERT (T5's encoder, Llama-style embedders) uses the ids for the table alone: once the table is
    out, the exporter leaves the ids out of the graph, and the runner still looks their rows up."""
    from nlsim.inference.onnx import TABLE_INPUT, onnx_runner

    target = _tiny_target(_tiny_distilbert(), "tiny-distilbert")
    runner = onnx_runner(target, threads=1, root=tmp_path)  # type: ignore[arg-type]
    assert TABLE_INPUT in runner.inputs
    for batch in target.check_batches():
        with torch.inference_mode():
            ref = target.forward(target.model, {k: torch.from_numpy(v) for k, v in batch.items()}).numpy()
        np.testing.assert_allclose(runner(batch), ref, atol=1e-5)


def test_an_export_never_changes_the_model_another_thread_may_be_running(tmp_path: Path) -> None:
    """The export runs a copy whose table is given its rows: the model itself keeps its table (and its
    mode) throughout, so that a forward of it elsewhere computes what it always does."""
    from nlsim.inference.onnx import onnx_runner

    model = _tiny_distilbert().train()
    table = model.get_input_embeddings()
    target = _tiny_target(model, "tiny-distilbert-live")
    model.train()  # as a model in training is
    seen: list[tuple[bool, bool]] = []
    forward = target.forward

    def watching(m: torch.nn.Module, f: dict[str, torch.Tensor]) -> torch.Tensor:
        seen.append((model.get_input_embeddings() is table, model.training))
        return forward(m, f)

    target.forward = watching
    onnx_runner(target, threads=1, root=tmp_path)  # type: ignore[arg-type]
    assert seen and all(seen_table and training for seen_table, training in seen)


def test_a_table_that_changes_its_rows_stays_in_the_graph(tmp_path: Path) -> None:
    """A subclass of ``nn.Embedding`` with a ``forward`` of its own (a scaled table, as BART's or Gemma's)
    is not looked up outside the graph, where its scaling would be missed: the export keeps it."""
    from nlsim.inference.onnx import TABLE_INPUT, onnx_runner

    class Scaled(torch.nn.Embedding):
        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return super().forward(ids) * 8.0

    model = _tiny_distilbert()
    old = model.get_input_embeddings()
    scaled = Scaled(old.num_embeddings, old.embedding_dim)
    scaled.weight.data.copy_(old.weight.data)
    model.set_input_embeddings(scaled)
    target = _tiny_target(model, "tiny-distilbert-scaled")
    runner = onnx_runner(target, threads=1, root=tmp_path)  # type: ignore[arg-type]
    assert TABLE_INPUT not in runner.inputs
    batch = target.check_batches()[1]
    with torch.inference_mode():
        ref = target.forward(model, {k: torch.from_numpy(v) for k, v in batch.items()}).numpy()
    np.testing.assert_allclose(runner(batch), ref, atol=1e-5)


def test_the_stand_in_exports_an_earlier_probe_left_are_removed_and_nothing_else(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Earlier versions kept the ONNX exports of the models' stand-ins under ``probes/onnx``; nothing reads
    them now. Building an ONNX runner removes the folders there that nlsim made, and no other."""
    from nlsim.io.model_cache import ensure_model_folder

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    old = tmp_path / "probes" / "onnx"
    ensure_model_folder(old / "probe-0123", lambda tmp: (tmp / "model.onnx").write_bytes(b"x"), source="old")
    foreign = old / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not nlsim's", encoding="utf-8")
    target.build("onnx-fp32", 1)
    assert sorted(p.name for p in old.iterdir()) == ["mine"]
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "not nlsim's"


def test_an_export_refused_by_its_check_is_not_made_again_until_the_versions_or_weights_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export that differs from torch beyond the limit is refused; it was exported and checked again at
    every run that probed or chose the path (seconds each time, a warning each time, the same answer). The
    refusal is kept beside the exports: the next runner of the same weights is refused at once, saying when
    and until what; it is tried again once torch, onnxruntime or the weights change, and an export that
    passes then leaves no refusal behind."""
    import nlsim.inference.onnx as ob

    made: list[str] = []
    real = ob.export_onnx

    def counted(target: object, out: Path) -> None:
        made.append(str(out))
        real(target, out)  # type: ignore[arg-type]

    monkeypatch.setattr(ob, "export_onnx", counted)
    monkeypatch.setattr(ob, "MAX_ABS_DIFF", -1.0)  # no export passes
    target = _tiny_target(_tiny_distilbert(), "tiny-distilbert-refused")
    for _ in range(2):
        with pytest.raises(StateError, match="differs from torch"):
            ob.onnx_runner(target, threads=1, root=tmp_path)  # type: ignore[arg-type]
    assert len(made) == 1
    with pytest.raises(
        StateError, match=r"refused on \d{4}-\d\d-\d\d.*until torch, onnxruntime or the weights"
    ):
        ob.onnx_runner(target, threads=1, root=tmp_path)  # type: ignore[arg-type]
    assert len(made) == 1 and not (tmp_path / target.export_name()).exists()
    monkeypatch.setattr(ob.torch, "__version__", "9.9.9")  # another torch: tried again
    monkeypatch.setattr(ob, "MAX_ABS_DIFF", 1e-4)
    runner = ob.onnx_runner(target, threads=1, root=tmp_path)  # type: ignore[arg-type]
    assert len(made) == 2 and runner.path == tmp_path / target.export_name() / "model.onnx"
    refusals = json.loads((tmp_path / "refused.json").read_text(encoding="utf-8"))
    assert refusals["exports"] == {}
