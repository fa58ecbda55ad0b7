"""A model as its inference paths see it (:class:`nlsim.inference.target.Target`): the probe's synthetic
batches and key, the ONNX export's folder name, the runner each path builds, and where its record lives."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch
from transformers import DistilBertConfig

from nlsim.inference.target import GPU_PROBE_ROWS, Target, config_digest, lossy_copy, model_device


class Configured(torch.nn.Linear):
    """A linear layer with a transformers config (what the probe's key and vocabulary are read from)."""

    def __init__(self, **config: object) -> None:
        super().__init__(2, 2)
        self.config = DistilBertConfig(
            vocab_size=5000, dim=16, n_layers=1, n_heads=2, hidden_dim=32, **config
        )


class OnGpu(Target):
    @property
    def device(self) -> torch.device:
        return torch.device("cuda", 0)


def target(kind: str = "encoder", cls: int | None = 101, token_types: bool = False, **kw: object) -> Target:
    tokenizer = SimpleNamespace(cls_token_id=cls, bos_token_id=0, __len__=lambda: 30)
    fields = {
        "kind": kind,
        "identity": lambda: "id",
        "weights": lambda: "0123456789abcdef" * 4,
        "model": Configured(),
        "forward": lambda m, f: m(f["x"]),
        "tokenizer": tokenizer,
        "max_length": 16,
        "check_batches": list,
        "probe_shapes": ((4, 8), (2, 64)),
        "output": "y",
        "token_types": token_types,
    }
    return (kw.pop("cls_", Target))(**{**fields, **kw})


def test_the_probes_batches_follow_the_shapes_the_length_limit_and_the_device() -> None:
    batches, shapes = target().probe_batches()
    assert shapes == [[4, 8], [2, 16]]  # cut to max_length
    assert [b["input_ids"].shape for b in batches] == [(4, 8), (2, 16)]
    assert all(
        (b["input_ids"][:, 0] == 101).all() and set(b) == {"input_ids", "attention_mask"} for b in batches
    )
    # ids drawn from the model's vocabulary (5,000), not the tokenizer's length
    assert max(int(b["input_ids"][:, 1:].max()) for b in batches) >= 30
    gpu_shapes = target(cls_=OnGpu).probe_batches()[1]
    assert gpu_shapes == [[4 * GPU_PROBE_ROWS, 8], [2 * GPU_PROBE_ROWS, 16]] and GPU_PROBE_ROWS > 1


def test_a_tokenizer_without_a_cls_token_starts_with_bos_and_token_types_go_where_asked() -> None:
    (batch, _), _ = target(cls=None, token_types=True).probe_batches()
    assert (batch["input_ids"][:, 0] == 0).all()
    assert (batch["token_type_ids"] == 0).all() and batch["token_type_ids"].shape == batch["input_ids"].shape


def test_the_probes_key_is_the_architecture_and_the_shapes_timed() -> None:
    assert target().architecture() == target().architecture()
    assert target().architecture() != target(probe_shapes=((4, 8),)).architecture()
    # the dtype and the name a config was saved with do not change what is timed
    assert config_digest(Configured(torch_dtype="float32").config) == config_digest(Configured().config)
    assert "_name_or_path" not in config_digest(Configured().config)


def test_the_export_folder_is_named_by_the_kind_and_the_weights() -> None:
    assert target().export_name() == "0123456789abcdef01234567"
    assert target("cross-encoder").export_name() == "ce-0123456789abcdef01234567"


def test_torch_fp32_is_the_model_itself_and_a_lossy_copy_leaves_it_fp32() -> None:
    t = target()
    assert t.build("torch-fp32", None) is None
    half = lossy_copy(t.model, "bf16")
    assert half.weight.dtype == torch.bfloat16 and t.model.weight.dtype == torch.float32


def test_a_model_folder_is_one_that_exists(tmp_path: Path) -> None:
    assert target(path=tmp_path).folder() == tmp_path
    assert target(path=tmp_path / "gone").folder() is None
    assert model_device(torch.nn.ReLU()) == torch.device("cpu")
