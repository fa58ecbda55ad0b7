"""The encoder cut in two for training reads exactly what the whole model computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nlsim.encoders import load_encoder, lower_states
from nlsim.errors import ConfigError
from nlsim.training import split_encoder as split_module
from nlsim.training.split_encoder import SplitEncoder, can_split, layer_count

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
TEXTS = ["a cat sits on the mat", "news", "stocks fell sharply on friday after the report", "rain"]


@pytest.fixture(scope="module")
def encoder():  # noqa: ANN201 - Encoder
    return load_encoder(FAST_MODEL, backend="torch")


@pytest.mark.parametrize("frozen", [0, 1, 2])
def test_the_split_forward_equals_the_whole_model(encoder, frozen: int) -> None:  # noqa: ANN001
    model = encoder.model.eval()
    feats = encoder.tokenize(TEXTS)
    with torch.no_grad():
        whole = model(**feats).last_hidden_state
    split = SplitEncoder(model, frozen, pad_id=encoder.pad_id())
    states = split.prepare(encoder.token_ids(TEXTS))
    model.eval()  # no dropout: the upper layers then compute what the whole model does
    with torch.no_grad():
        hidden, mask = split.forward(states, list(range(len(TEXTS))))
    assert hidden.shape[1] % 8 == 0  # padded to a multiple of 8
    for i in range(len(TEXTS)):
        n = int(feats["attention_mask"][i].sum())
        assert torch.allclose(hidden[i, :n], whole[i, :n], atol=1e-5)
        assert int(mask[i].sum()) == n


def test_pairs_keep_their_token_types(encoder) -> None:  # noqa: ANN001
    """MiniLM reads token types: the second text of a pair must be segment 1 in the split forward too."""
    model = encoder.model.eval()
    feats = encoder.tokenizer(["a cat"], ["a kitten"], return_tensors="pt")
    with torch.no_grad():
        whole = model(**feats).last_hidden_state
    split = SplitEncoder(model, 1, pad_id=encoder.pad_id())
    states = split.prepare(feats["input_ids"].tolist(), feats["token_type_ids"].tolist())
    model.eval()
    with torch.no_grad():
        hidden, _ = split.forward(states, [0])
    n = feats["input_ids"].shape[1]
    assert torch.allclose(hidden[0, :n], whole[0], atol=1e-5)


def test_only_the_upper_layers_train(encoder) -> None:  # noqa: ANN001
    split = SplitEncoder(encoder.model, 2, pad_id=encoder.pad_id())
    names = {n for n, p in encoder.model.named_parameters() if p.requires_grad}
    assert names and all(n.startswith("encoder.layer.2.") for n in names)
    assert len(split.parameters()) == len(names)


def test_more_frozen_layers_than_the_model_has_leave_the_top_layer_training(encoder) -> None:  # noqa: ANN001
    split = SplitEncoder(encoder.model, 12, pad_id=encoder.pad_id())
    assert split.frozen_layers == layer_count(encoder.model) - 1 == 2


def test_trained_embeddings_cache_nothing(encoder) -> None:  # noqa: ANN001
    split = SplitEncoder(encoder.model, 0, train_embeddings=True, pad_id=encoder.pad_id())
    states = split.prepare(encoder.token_ids(TEXTS))
    assert states.states is None
    assert encoder.model.get_input_embeddings().weight.requires_grad
    hidden, mask = split.forward(states, [0, 1])
    assert hidden.requires_grad and hidden.shape[0] == 2


def test_refusals(encoder) -> None:  # noqa: ANN001
    with pytest.raises(ConfigError, match=">= 0"):
        SplitEncoder(encoder.model, -1)
    with pytest.raises(ConfigError, match="cannot be frozen"):
        SplitEncoder(encoder.model, 1, train_embeddings=True)
    assert not can_split(torch.nn.Linear(2, 2))
    with pytest.raises(ConfigError, match="not a BERT-style"):
        SplitEncoder(torch.nn.Linear(2, 2))


def test_states_are_computed_once_per_sequence(encoder) -> None:  # noqa: ANN001
    split = SplitEncoder(encoder.model, 2, pad_id=encoder.pad_id())
    states = split.prepare(encoder.token_ids(TEXTS))
    assert len(states) == len(TEXTS)
    assert [s.shape[0] for s in states.states] == list(states.lengths)
    assert np.array_equal(states.lengths, [len(x) for x in encoder.token_ids(TEXTS)])


def test_the_frozen_pass_in_lanes_computes_what_one_thread_does(encoder) -> None:  # noqa: ANN001
    """Each batch on one thread either way (the side-by-side bi-encoder's frozen pass, whose other lane is
    the cross-encoder's thread before it begins): the same states to the bit, tensors training can read."""
    texts = [f"{t} {i}" for i in range(12) for t in TEXTS]  # several batches of 8
    split = SplitEncoder(encoder.model, 2, pad_id=encoder.pad_id())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = split.prepare(encoder.token_ids(texts), batch_size=8)
    finally:
        torch.set_num_threads(threads)
    calls: list[int] = []
    real = split_module.run_batches
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(split_module, "run_batches", lambda b, w, lanes: (calls.append(lanes), real(b, w, lanes)))
        two = split.prepare(encoder.token_ids(texts), batch_size=8, lanes=2)
    assert calls == [2]
    assert all(torch.equal(a, b) for a, b in zip(one.states, two.states, strict=True))
    assert not any(s.is_inference() for s in two.states)
    weight = torch.ones(two.states[0].shape[-1], 1, requires_grad=True)
    (two.states[0] @ weight).sum().backward()  # an inference tensor could not be saved for backward


def test_the_frozen_part_takes_the_states_an_embedding_pass_kept() -> None:
    enc = load_encoder(FAST_MODEL, backend="torch")
    ids = enc.token_ids(TEXTS)
    with lower_states.kept(enc.model, 1) as record:
        enc.encode(TEXTS[:3], progress=False)
        split = SplitEncoder(enc.model, 1, pad_id=enc.pad_id())
        states = split.prepare(ids)
        assert states.kept == 3 and states.states is not None
        for i in range(3):
            assert states.states[i] is record.states[np.asarray(ids[i], dtype=np.int64).tobytes()]
        alone = split.prepare(ids, reuse_kept=False)
        assert alone.kept == 0 and alone.states is not None
        for a, b in zip(states.states, alone.states, strict=True):
            assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)
        typed = split.prepare(ids, [[0] * len(x) for x in ids])  # pair sequences with token types: not kept
        assert typed.kept == 0
        deeper = SplitEncoder(enc.model, 2, pad_id=enc.pad_id())  # states after another layer: not these
        assert deeper.prepare(ids).kept == 0
    assert split.prepare(ids).kept == 0  # nothing is kept outside the block


def test_another_lower_part_takes_no_kept_states() -> None:
    first, second = load_encoder(FAST_MODEL, backend="torch"), load_encoder(FAST_MODEL, backend="torch")
    with torch.no_grad():
        second.model.encoder.layer[0].output.dense.weight.mul_(1.5)
    with lower_states.kept(first.model, 1):
        first.encode(TEXTS, progress=False)
        states = SplitEncoder(second.model, 1, pad_id=second.pad_id()).prepare(second.token_ids(TEXTS))
        assert states.kept == 0
        assert SplitEncoder(first.model, 1, pad_id=first.pad_id()).prepare(first.token_ids(TEXTS)).kept == 4
