"""Packed sequences (nlsim/training/packing.py): the upper layers on real tokens only compute what the
model's own layers compute for them, forwards and backwards."""

from __future__ import annotations

import pytest
import torch

from nlsim.encoders import load_encoder
from nlsim.encoders.encoder import mean_pool
from nlsim.errors import ConfigError
from nlsim.training.packing import PACK_MULTIPLE, Packing, pack_multiple, packed_layer, segment_mean
from nlsim.training.split_encoder import SplitEncoder

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
TEXTS = ["a cat sits on the mat", "news", "stocks fell sharply on friday after the report", "rain"]


@pytest.fixture(scope="module")
def encoder():  # noqa: ANN201 - Encoder
    return load_encoder(FAST_MODEL, backend="torch")


def test_a_packing_places_each_token_in_its_rows_slot() -> None:
    p = Packing.of([3, 1, 2])
    assert p.width == 3 and p.rows == 3
    assert p.slots.tolist() == [0, 1, 2, 3, 6, 7]
    assert p.segment.tolist() == [0, 0, 0, 1, 2, 2]
    assert p.keys[:, 0, 0].tolist() == [[True, True, True], [True, False, False], [True, True, False]]


@pytest.mark.parametrize("frozen", [0, 1])
def test_packed_layers_give_the_padded_layers_hidden_states_and_gradients(encoder, frozen: int) -> None:  # noqa: ANN001
    model = encoder.model.eval()  # no dropout: both paths are then exact
    split = SplitEncoder(model, frozen, pad_id=encoder.pad_id())
    states = split.prepare(encoder.token_ids(TEXTS))
    model.eval()
    rows = [2, 0, 3, 1]
    hidden, mask = split.forward(states, rows)
    padded = mean_pool(hidden, mask)
    packed_hidden, packing = split.forward_packed(states, rows)
    packed = segment_mean(packed_hidden, packing)
    assert torch.allclose(packed, padded, atol=1e-5)
    # the real tokens, row by row, are the padded batch's
    at = 0
    for j, r in enumerate(rows):
        n = int(states.lengths[r])
        assert torch.allclose(packed_hidden[at : at + n], hidden[j, :n], atol=1e-5)
        at += n
    # the same gradients reach the trained weights
    weight = model.encoder.layer[-1].output.dense.weight
    (padded**2).sum().backward()
    want = weight.grad.clone()
    weight.grad = None
    (segment_mean(split.forward_packed(states, rows)[0], packing) ** 2).sum().backward()
    assert torch.allclose(weight.grad, want, atol=1e-4, rtol=1e-4)
    weight.grad = None


def test_trained_embeddings_have_no_states_to_pack(encoder) -> None:  # noqa: ANN001
    split = SplitEncoder(encoder.model, 0, train_embeddings=True, pad_id=encoder.pad_id())
    states = split.prepare(encoder.token_ids(TEXTS))
    with pytest.raises(ConfigError, match="packed sequences need"):
        split.forward_packed(states, [0, 1])


def test_a_packing_pads_its_rows_to_a_multiple() -> None:
    p = Packing.of([3, 2], multiple=8)
    assert (p.tokens, p.pad, p.width) == (5, 3, 3)
    assert Packing.of([3, 5], multiple=8).pad == 0
    assert Packing.of([3, 2]).pad == 0


def test_padding_rows_change_nothing_for_the_real_tokens_dropout_included(encoder) -> None:  # noqa: ANN001
    layer = encoder.model.encoder.layer[0].train()  # dropout on: the masks must be the unpadded run's
    layer.zero_grad()  # what other tests left
    lengths = [4, 1, 3]
    x = torch.randn(sum(lengths), encoder.model.config.hidden_size)
    outputs, grads = [], []
    for multiple in (1, 32):
        p = Packing.of(lengths, multiple=multiple)
        rows = torch.cat([x, x.new_zeros((p.pad, x.shape[1]))]).requires_grad_(True)
        torch.manual_seed(7)
        out = packed_layer(layer, rows, p)
        assert out.shape[0] == (8 if multiple == 1 else 32)
        pooled = segment_mean(out, p)
        (pooled**2).sum().backward()
        outputs.append(pooled.detach())
        grads.append(layer.output.dense.weight.grad.clone())
        assert torch.count_nonzero(rows.grad[p.tokens :]) == 0  # the padding passes no gradient back
        layer.zero_grad()
    layer.eval()
    assert torch.allclose(outputs[0], outputs[1], atol=1e-5)
    assert torch.allclose(grads[0], grads[1], atol=1e-4, rtol=1e-4)


def test_packed_rows_are_padded_inside_a_cpus_bf16_autocast_only(encoder) -> None:  # noqa: ANN001
    split = SplitEncoder(encoder.model.eval(), 1, pad_id=encoder.pad_id())
    states = split.prepare(encoder.token_ids(TEXTS))
    real = int(states.lengths.sum())
    hidden, packing = split.forward_packed(states, [0, 1, 2, 3])
    assert hidden.shape[0] == real and packing.pad == 0
    assert pack_multiple("cpu") == 1
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert pack_multiple("cpu") == PACK_MULTIPLE
        hidden, packing = split.forward_packed(states, [0, 1, 2, 3])
        pooled = segment_mean(hidden.float(), packing)
    assert hidden.shape[0] % PACK_MULTIPLE == 0 and packing.tokens == real and packing.pad > 0
    assert pooled.shape == (4, encoder.model.config.hidden_size)
    exact = segment_mean(*split.forward_packed(states, [0, 1, 2, 3]))
    assert torch.allclose(pooled, exact, atol=0.05)
