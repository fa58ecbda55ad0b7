"""A bi-encoder's inference target and planner (nlsim.encoders.planner), with stand-ins: no model runs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from nlsim.encoders import planner
from nlsim.encoders.planner import CHECK_TEXTS, Planner, check_batches, encoder_target, pooled_forward


class _Model(torch.nn.Module):
    """Returns each token's id and type id as its hidden state, in bf16; records what it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, torch.Tensor] = {}

    def forward(self, **feats: torch.Tensor) -> Any:
        self.seen = feats
        types = feats.get("token_type_ids", torch.full_like(feats["input_ids"], -1))
        hidden = torch.stack([feats["input_ids"], types], dim=-1).to(torch.bfloat16)
        return SimpleNamespace(last_hidden_state=hidden)


def test_the_pooled_forward_adds_zero_token_types_where_the_model_reads_them_and_pools_in_fp32() -> None:
    feats = {"input_ids": torch.tensor([[3, 5, 0]]), "attention_mask": torch.tensor([[1, 1, 0]])}
    model = _Model()
    out = pooled_forward(True)(model, feats)
    assert out.dtype == torch.float32 and out.tolist() == [[4.0, 0.0]]
    assert model.seen["token_type_ids"].tolist() == [[0, 0, 0]]
    assert pooled_forward(False)(model, feats).tolist() == [[4.0, -1.0]]
    assert "token_type_ids" not in model.seen  # a model without token types is not given them


def test_a_tokenizer_says_whether_its_model_reads_token_types() -> None:
    assert planner.uses_token_types(SimpleNamespace(model_input_names=["input_ids", "token_type_ids"]))
    assert not planner.uses_token_types(SimpleNamespace(model_input_names=["input_ids", "attention_mask"]))


class _Tokenizer:
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], dict]] = []

    def __call__(self, texts: list[str], **kwargs: Any) -> dict[str, np.ndarray]:
        self.calls.append((texts, kwargs))
        width = min(max(len(t) for t in texts), kwargs["max_length"])
        return {
            "input_ids": np.ones((len(texts), width), np.int32),
            "attention_mask": np.ones((len(texts), width)),
        }


def _encoder() -> Any:
    return SimpleNamespace(
        tokenizer=_Tokenizer(),
        prefix="query: ",
        max_length=48,
        fingerprint="fp",
        weights_digest="wd",
        model=_Model(),
        path="/models/x",
        name="x",
    )


def test_the_export_check_reads_three_batches_of_prefixed_truncated_texts() -> None:
    enc = _encoder()
    batches = check_batches(enc)
    assert [texts for texts, _ in enc.tokenizer.calls] == [
        ["query: " + t for t in group] for group in (CHECK_TEXTS[:1], CHECK_TEXTS, CHECK_TEXTS[1:4])
    ]
    assert all(kw["truncation"] and kw["max_length"] == 48 for _, kw in enc.tokenizer.calls)
    assert [b["input_ids"].shape[0] for b in batches] == [1, len(CHECK_TEXTS), 3]
    assert all(b[k].dtype == np.int64 for b in batches for k in ("input_ids", "attention_mask"))


def test_the_target_describes_the_encoder() -> None:
    enc = _encoder()
    target = encoder_target(enc)
    assert (target.kind, target.output, target.weights, target.max_length) == (
        "encoder",
        "embedding",
        "wd",
        48,
    )
    assert target.identity() == "fp" and target.path == "/models/x" and target.model is enc.model
    assert target.probe_shapes == ((64, 24), (32, 96))


@pytest.mark.parametrize(
    ("backend", "precision", "eager"),
    [("auto", "fp32", False), ("auto", "auto", False), ("torch", "fp32", True), ("auto", "int8", True)],
)
def test_a_forced_backend_or_precision_is_decided_at_load_time(
    backend: str, precision: str, eager: bool
) -> None:
    assert Planner(backend, precision).eager is eager


def test_settling_passes_the_request_and_the_job_size(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(
        planner, "settle", lambda target, what, **kw: seen.update(kw, what=what) or ("c", "r")
    )
    assert Planner("onnx", "int8", threads=3).settle(_encoder(), 5000) == ("c", "r")
    assert seen == {
        "backend": "onnx",
        "precision": "int8",
        "threads": 3,
        "job_items": 5000,
        "what": "embedding with x",
    }
