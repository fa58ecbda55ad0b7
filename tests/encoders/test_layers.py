"""What nlsim reads of an encoder's layers (nlsim.encoders.layers): mean pooling and a digest of tensors."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import torch

from nlsim.encoders.layers import hash_tensors, mean_pool


def _digest(state: dict[str, Any], prefix: str = "p.") -> str:
    h = hashlib.sha256()
    hash_tensors(h, prefix, state)
    return h.hexdigest()


def test_mean_pool_averages_the_tokens_of_each_row_under_its_mask() -> None:
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]])
    pooled = mean_pool(hidden, torch.tensor([[1, 1, 0], [1, 1, 1]]))
    assert pooled.tolist() == [[2.0, 3.0], [7.0, 8.0]]  # the padding token is neither summed nor counted
    assert mean_pool(hidden[:1], torch.tensor([[0, 0, 0]])).tolist() == [[0.0, 0.0]]  # no NaN


def test_the_digest_follows_names_dtypes_shapes_and_values_not_the_order_of_the_state() -> None:
    w = torch.arange(6, dtype=torch.float32)
    base = {"a.weight": w, "b.bias": torch.ones(2)}
    assert _digest(base) == _digest({"b.bias": torch.ones(2), "a.weight": w})  # the state's order
    assert _digest(base) != _digest(base, prefix="q.")
    assert _digest(base) != _digest({**base, "a.weight": w.reshape(2, 3)})  # same bytes, another shape
    assert _digest(base) != _digest({**base, "a.weight": w.view(torch.int32)})  # same bytes, another dtype
    assert _digest(base) != _digest({**base, "a.weight": w + 1})
    assert _digest(base) == _digest({**base, "position_ids": torch.arange(4)})  # a constant range: left out


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_the_digest_of_packed_and_plain_values_names_each_part() -> None:
    assert _digest({"x": (torch.ones(1), torch.zeros(1))}) != _digest({"x": (torch.zeros(1), torch.ones(1))})
    assert _digest({"x": [1, 2]}) != _digest({"x": [2, 1]})
    assert _digest({"a": 1, "b": 2}) != _digest({"a": 2, "b": 1})
    assert _digest({"a": 1}) != _digest({"b": 1})  # a plain value under its own name
    q = torch.quantize_per_tensor(torch.tensor([0.5, 1.0]), scale=0.5, zero_point=0, dtype=torch.qint8)
    assert _digest({"w": q}) == _digest({"w": torch.tensor([0.5, 1.0])})  # read as the values it stands for
