"""Lower-layer states kept between two encoders that share their frozen lower part."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nlsim.encoders import load_encoder, lower_states
from nlsim.encoders.lower_states import kept, lower_digest

FAST_MODEL = "paraphrase-MiniLM-L3-v2"
TEXTS = ["a cat sits on the mat", "stocks fall", "rain is expected in the north tomorrow", "news", "a cat"]


def upper_changed(layer: int = 2) -> object:
    """The small model with one layer's weights changed (as fine-tuning changes the upper layers)."""
    enc = load_encoder(FAST_MODEL, backend="torch")
    with torch.no_grad():
        enc.model.encoder.layer[layer].output.dense.weight.mul_(1.5)
    return enc


def test_a_second_encoder_starts_from_the_first_ones_states_and_gets_its_own_vectors() -> None:
    first, second = load_encoder(FAST_MODEL, backend="torch"), upper_changed()
    plain = second.encode(TEXTS, progress=False)
    with kept(first.model, layers=2) as record:
        v_first = first.encode(TEXTS, progress=False, batch_size=2)
        assert (record.computed, record.reused) == (len(TEXTS), 0)
        v_second = second.encode(TEXTS, progress=False, batch_size=3)  # other batches, other padding
    assert record.reused == len(TEXTS)
    np.testing.assert_allclose(v_second, plain, atol=1e-5)
    np.testing.assert_allclose(v_first, first.encode(TEXTS, progress=False), atol=1e-5)
    assert not np.allclose(v_first, v_second, atol=1e-3)  # the upper layers did run with their own weights


def test_texts_not_kept_yet_are_computed_whole_and_kept() -> None:
    first, second = load_encoder(FAST_MODEL, backend="torch"), upper_changed()
    with kept(first.model, layers=1) as record:
        first.encode(TEXTS[:2], progress=False)
        mixed = second.encode(TEXTS, progress=False, batch_size=8)  # one batch: two kept, three not
        assert record.computed == len(TEXTS) and record.reused == 0
        again = second.encode(TEXTS, progress=False, batch_size=8)
        assert record.reused == len(TEXTS)
    np.testing.assert_allclose(mixed, second.encode(TEXTS, progress=False), atol=1e-5)
    np.testing.assert_allclose(again, mixed, atol=1e-5)


def test_an_encoder_with_other_lower_layers_does_not_use_them() -> None:
    first, other = load_encoder(FAST_MODEL, backend="torch"), upper_changed(layer=0)
    assert lower_digest(first.model, 1) != lower_digest(other.model, 1)
    assert lower_digest(first.model, 1) != lower_digest(first.model, 2)
    with kept(first.model, layers=1) as record:
        first.encode(TEXTS, progress=False)
        computed = record.computed
        v = other.encode(TEXTS, progress=False)
        assert (record.computed, record.reused) == (computed, 0)
        assert other._lower_runner() is None and first._lower_runner() is not None
    np.testing.assert_allclose(v, other.encode(TEXTS, progress=False), atol=1e-6)


def test_the_states_are_dropped_on_leaving_and_nothing_is_kept_for_an_uncut_model() -> None:
    enc = load_encoder(FAST_MODEL, backend="torch")
    assert lower_states.current() is None
    with kept(enc.model, layers=1) as outer:
        with kept(enc.model, layers=3) as inner:  # three layers: no upper part left to run
            assert inner.digest == "" and lower_states.current() is None
            enc.encode(TEXTS, progress=False)
        assert lower_states.current() is outer and outer.computed == 0
    assert lower_states.current() is None and enc._lower_runner() is None


@pytest.mark.parametrize("layers", [0, -1])
def test_no_layers_keeps_nothing(layers: int) -> None:
    enc = load_encoder(FAST_MODEL, backend="torch")
    with kept(enc.model, layers=layers) as record:
        assert lower_states.current() is None and record.digest == ""


def test_vectors_kept_for_an_encoder_are_taken_by_that_encoder_alone() -> None:
    first, second, third = load_encoder(FAST_MODEL, backend="torch"), upper_changed(), upper_changed(layer=1)
    whole = second.encode(TEXTS, progress=False)
    marked = {t: -v for t, v in zip(TEXTS[:2], whole[:2], strict=True)}  # recognisable if taken
    with kept(first.model, layers=1) as record:
        first.encode(TEXTS, progress=False)
        assert lower_states.keep_vectors(second, marked) == 2
        got = second.encode(TEXTS, progress=False, batch_size=4)  # a batch with two taken, two computed
        assert record.taken == 2 and record.reused == len(TEXTS) - 2
        np.testing.assert_allclose(got[:2], -whole[:2], atol=1e-6)
        np.testing.assert_allclose(got[2:], whole[2:], atol=1e-5)
        raw = second.encode(TEXTS[:2], progress=False, normalize=False)  # not the normalised ones kept
        assert not np.allclose(raw, -whole[:2], atol=1e-3)
        other = third.encode(TEXTS[:2], progress=False)  # another fingerprint: computed
        assert record.taken == 2 and not np.allclose(other, -whole[:2], atol=1e-3)
    assert lower_states.keep_vectors(second, marked) == 0  # nothing is kept outside the block


class _Stack(torch.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.layer = torch.nn.ModuleList(torch.nn.Linear(2, 2) for _ in range(n))


class _Bert(torch.nn.Module):
    """A BERT-shaped stand-in (``embeddings``, ``encoder.layer``) for what the digest reads."""

    def __init__(self, n: int = 3) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embeddings = torch.nn.Embedding(4, 2)
        self.encoder = _Stack(n)


def test_the_digest_covers_the_embeddings_and_the_frozen_layers_only() -> None:
    model, base = _Bert(), lower_digest(_Bert(), 1)
    assert lower_digest(model, 1) == base
    with torch.no_grad():
        model.encoder.layer[1].weight.add_(1.0)  # above the cut: the same states
    assert lower_digest(model, 1) == base
    with torch.no_grad():
        model.embeddings.weight.add_(1.0)  # below it: other states
    assert lower_digest(model, 1) != base
    frozen = _Bert()
    with torch.no_grad():
        frozen.encoder.layer[0].bias.add_(1.0)
    assert lower_digest(frozen, 1) != base


def test_a_model_is_cut_only_where_an_upper_part_is_left() -> None:
    from nlsim.encoders.lower_states import can_cut

    assert can_cut(_Bert(3), 2) and not can_cut(_Bert(3), 3)
    assert lower_digest(_Bert(3), 3) == "" and lower_digest(torch.nn.Linear(2, 2), 1) == ""
