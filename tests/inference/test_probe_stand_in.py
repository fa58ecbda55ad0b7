"""The probe times a stand-in of the model: its word-embedding table cut to :data:`PROBE_VOCAB` rows, the
rest copied. No timing is asserted: what is checked is what the stand-in computes, what it is keyed by, where
its ONNX exports go, and that its runners never reach a caller."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from nlsim.encoders import load_encoder
from nlsim.encoders.planner import encoder_target
from nlsim.inference.cpu import cpu_info
from nlsim.inference.probe import load_probe, probe_rates
from nlsim.inference.target import PROBE_VOCAB, Target

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


@pytest.fixture(scope="module")
def target() -> Target:
    return encoder_target(load_encoder(FAST_MODEL, backend="torch"))


def test_the_stand_in_computes_what_the_model_computes_for_tokens_in_its_table(target: Target) -> None:
    stand = target.stand_in()
    assert stand.model.get_input_embeddings().num_embeddings == PROBE_VOCAB
    assert target.model.get_input_embeddings().num_embeddings == 30522  # the model is left as it was
    assert target.model.config.vocab_size == 30522
    assert (
        stand.model.get_input_embeddings().weight.data_ptr()
        != target.model.get_input_embeddings().weight.data_ptr()
    )
    batches, shapes = stand.probe_batches()
    assert shapes == [list(s) for s in target.probe_shapes]
    assert all(int(b["input_ids"].max()) < PROBE_VOCAB for b in batches)
    for batch in batches:  # every layer after the table is the model's: the same outputs
        np.testing.assert_allclose(stand.run(None, batch), target.run(None, batch), atol=1e-5)
    # the probe's key is the model's architecture; the export's key is that architecture, not the weights
    assert stand.architecture() == target.architecture()
    assert stand.weights() != target.weights() and target.architecture()[:18] in stand.weights()
    assert stand.path is None and stand.folder() is None
    assert all(int(b["input_ids"].max()) < PROBE_VOCAB for b in stand.check_batches())


def test_a_model_whose_table_is_small_is_its_own_stand_in() -> None:
    small = torch.nn.Embedding(100, 4)

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = small

        def get_input_embeddings(self) -> torch.nn.Module:
            return self.emb

    t = Target(
        kind="encoder",
        identity=lambda: "x",
        weights=lambda: "x",
        model=Tiny(),
        forward=lambda m, f: m.emb(f["input_ids"]).mean(1),
        tokenizer=None,
        max_length=8,
        check_batches=list,
        probe_shapes=(),
        output="y",
        probe_key="tiny",
    )
    assert t.stand_in() is t
    no_table = Target(**{**t.__dict__, "model": torch.nn.Linear(2, 2)})
    assert no_table.stand_in() is no_table


def test_the_probe_times_the_stand_in_and_hands_back_no_runner_of_it(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where an ONNX export is timed beside a lossy path, the stand-in is timed: its export goes under
    ``probes/onnx`` and none of its runners reaches the caller."""
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    runners: dict[str, object] = {}
    excluded: dict[str, str] = {}
    cpu = cpu_info()
    rates = probe_rates(target, ["torch-fp32", "onnx-fp32", "torch-bf16"], 1, cpu, runners, excluded)
    assert not excluded and all(rates[p] > 0 for p in ("torch-fp32", "onnx-fp32", "torch-bf16"))
    assert runners == {}  # a stand-in's runner scores nothing: the caller builds the model's own
    assert load_probe(target.architecture(), 1, cpu) == pytest.approx(rates, abs=0.01)  # the model's key
    exports = sorted(p.name for p in (tmp_path / "probes" / "onnx").iterdir())
    assert exports == [f"probe-{target.architecture()[:18]}"]
    assert not (tmp_path / "onnx").exists()  # the model's own exports are not touched


def test_where_only_exact_paths_are_timed_the_model_itself_is(
    target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With only the exact paths to time (a CPU without VNNI or bf16), ONNX often wins: the probe times the
    model's own export, the one the job then runs, and hands its runners back."""
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    runners: dict[str, object] = {}
    probe_rates(target, ["torch-fp32", "onnx-fp32"], 1, cpu_info(), runners, {})
    assert set(runners) == {"torch-fp32", "onnx-fp32"} and runners["onnx-fp32"] is not None
    assert not (tmp_path / "probes" / "onnx").exists() and (tmp_path / "onnx").is_dir()


def test_a_first_token_beyond_the_cut_table_is_moved_inside_it(target: Target) -> None:
    """A tokenizer whose [CLS] id lies past the stand-in's rows (ModernBERT's 50281) still gives batches the
    stand-in can run."""
    far = dataclasses.replace(target, tokenizer=SimpleNamespace(cls_token_id=30000, bos_token_id=None))
    stand = far.stand_in()
    batches, _ = stand.probe_batches()
    assert all(int(b["input_ids"].max()) < PROBE_VOCAB for b in batches)
    assert int(batches[0]["input_ids"][0, 0]) == 30000 % PROBE_VOCAB
    assert stand.run(None, batches[0]).shape[0] == batches[0]["input_ids"].shape[0]


class Tied(torch.nn.Module):
    """A table whose weight a second module shares (an MLM decoder), with a config."""

    def __init__(self) -> None:
        super().__init__()
        self.config = SimpleNamespace(vocab_size=20000)
        self.emb = torch.nn.Embedding(20000, 4)
        self.out = torch.nn.Linear(4, 20000, bias=False)
        self.out.weight = self.emb.weight

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.emb


def test_a_tied_table_is_cut_everywhere_and_a_model_it_cannot_cut_is_its_own_stand_in(target: Target) -> None:
    tied = dataclasses.replace(target, model=Tied(), probe_key="tied")
    stand = tied.stand_in()
    assert stand.model.emb.num_embeddings == PROBE_VOCAB and stand.model.out.weight is stand.model.emb.weight
    assert tied.model.emb.num_embeddings == 20000 and tied.model.config.vocab_size == 20000

    class Unnamed(Tied):
        def get_input_embeddings(self) -> torch.nn.Module:
            raise NotImplementedError("no table this model can name")

    unnamed = dataclasses.replace(target, model=Unnamed(), probe_key="unnamed")
    assert unnamed.stand_in() is unnamed
