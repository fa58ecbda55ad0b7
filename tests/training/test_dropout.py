"""Dropout with masks from 64-bit draws (nlsim/training/dropout.py): torch's dropout in distribution, the
seed's masks, the same mask forwards and backwards, attention that is torch's own without dropout, and a
thread's own generator."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F

from nlsim.training.dropout import attention, bit_masks_for, drawn_from, drop_threshold, dropout, keep_scale


def _qkv_keys() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(3, 2, 6, 4, generator=g) for _ in range(3))
    keys = (torch.arange(6)[None, :] < torch.tensor([6, 2, 4])[:, None])[:, None, None, :]
    return q, k, v, keys


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_masks_drop_the_rate_asked_in_every_lane_and_keep_the_mean(p: float) -> None:
    torch.manual_seed(0)
    m = keep_scale((250_000, 4), p, dtype=torch.float32, device=torch.device("cpu"))
    dropped = (m == 0).float().mean(dim=0)  # each of a draw's four 16-bit lanes
    assert torch.allclose(dropped, torch.full((4,), p), atol=0.004)
    values = m.unique().tolist()
    assert len(values) == 2 and values[0] == 0.0
    assert values[1] == pytest.approx(1 / (1 - drop_threshold(p) / 32768))
    assert abs(float(m.mean()) - 1.0) < 0.004


def test_masks_follow_the_seed_and_differ_between_calls() -> None:
    x = torch.ones(64, 48)
    torch.manual_seed(7)
    a, b = dropout(x, 0.1), dropout(x, 0.1)
    torch.manual_seed(7)
    assert torch.equal(dropout(x, 0.1), a) and torch.equal(dropout(x, 0.1), b)
    assert not torch.equal(a, b)


def test_the_backward_pass_multiplies_by_the_forward_mask() -> None:
    x = torch.randn(32, 16, requires_grad=True)
    y = dropout(x, 0.25)
    y.sum().backward()
    mask = torch.where(y.detach() == 0, 0.0, y.detach() / x.detach())
    assert torch.allclose(x.grad, mask, atol=1e-6)
    assert 0 < int((x.grad == 0).sum()) < x.numel()


def test_no_rate_or_torch_masks_is_torch_dropout() -> None:
    x = torch.randn(10, 10)
    assert dropout(x, 0.0) is x
    torch.manual_seed(3)
    want = F.dropout(x, 0.2, training=True)
    torch.manual_seed(3)
    assert torch.equal(dropout(x, 0.2, bit_masks=False), want)
    with pytest.raises(ValueError, match="dropout rate"):
        dropout(x, 1.0)


def test_attention_without_dropout_is_torchs_call() -> None:
    q, k, v, keys = _qkv_keys()
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=keys, scale=0.5)
    assert torch.equal(attention(q, k, v, keys, 0.0, 0.5), want)
    torch.manual_seed(2)
    dropped = F.scaled_dot_product_attention(q, k, v, attn_mask=keys, dropout_p=0.1, scale=0.5)
    torch.manual_seed(2)
    assert torch.equal(attention(q, k, v, keys, 0.1, 0.5, bit_masks=False), dropped)


def test_attention_drops_probabilities_with_the_drawn_mask_and_is_unbiased() -> None:
    q, k, v, keys = _qkv_keys()
    torch.manual_seed(11)
    got = attention(q, k, v, keys, 0.2, 0.5)
    torch.manual_seed(11)
    mask = keep_scale((3, 2, 6, 6), 0.2, dtype=torch.float32, device=torch.device("cpu"))
    probs = (q @ k.transpose(-1, -2) * 0.5).masked_fill(~keys, float("-inf")).softmax(-1)
    assert torch.allclose(got, (probs * mask) @ v, atol=1e-5)
    # masked keys are never read, and over many draws the output averages to attention without dropout
    assert torch.all(((probs * mask) == 0) | keys)
    mean = torch.stack([attention(q, k, v, keys, 0.2, 0.5) for _ in range(4000)]).mean(0)
    assert torch.allclose(mean, F.scaled_dot_product_attention(q, k, v, attn_mask=keys, scale=0.5), atol=0.03)


def test_bit_masks_are_drawn_on_cpus_only() -> None:
    assert bit_masks_for("cpu") and bit_masks_for(torch.device("cpu"))
    assert not bit_masks_for("cuda") and not bit_masks_for("cuda:0")


def test_masks_drawn_from_a_threads_own_generator_leave_torchs_default_one_and_other_threads_alone() -> None:
    torch.manual_seed(7)
    alone = dropout(torch.ones(4096), 0.1)  # what torch's default generator gives next, undisturbed
    torch.manual_seed(7)
    own: list[torch.Tensor] = []

    def beside() -> None:
        with drawn_from(torch.Generator().manual_seed(3)):
            own.extend(dropout(torch.ones(4096), 0.1) for _ in range(50))

    worker = threading.Thread(target=beside)
    worker.start()
    worker.join()
    assert torch.equal(dropout(torch.ones(4096), 0.1), alone)
    with drawn_from(torch.Generator().manual_seed(3)):
        again = dropout(torch.ones(4096), 0.1)
    assert torch.equal(again, own[0])
    assert not torch.equal(own[0], own[1])  # drawn afresh at each call
