"""Cosine-MSE and CoSENT: values on hand-made vectors, gradients that point the right way."""

from __future__ import annotations

import math

import pytest
import torch

from nlsim.errors import ConfigError
from nlsim.training.losses import cosent_loss, cosine_mse_loss, get_loss, story_ranking_loss


def test_cosine_mse_value() -> None:
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # cosines 1 and 0
    assert float(cosine_mse_loss(u, v, torch.tensor([0.5, 0.5]))) == pytest.approx(0.25)


def test_cosent_value_and_order_only() -> None:
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # cosines 1, 0
    right = float(cosent_loss(u * 0.05, v * 0.05, torch.tensor([0.9, 0.1])))  # scale-free: cosines
    wrong = float(cosent_loss(u, v, torch.tensor([0.1, 0.9])))
    assert right == pytest.approx(math.log(1 + math.exp(20 * (0 - 1))), abs=1e-6)
    assert wrong == pytest.approx(math.log(1 + math.exp(20 * (1 - 0))), rel=1e-5)
    # only the order of the scores matters
    assert float(cosent_loss(u, v, torch.tensor([0.6, 0.5]))) == pytest.approx(right)


@pytest.mark.parametrize("name", ["mse", "cosent"])
def test_gradient_raises_the_cosine_of_a_related_pair(name: str) -> None:
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[0.6, 0.8], [0.8, 0.6]], requires_grad=True)  # cosines 0.6, 0.8
    loss = get_loss(name)(u, v, torch.tensor([1.0, 0.0]))
    loss.backward()
    with torch.no_grad():
        v2 = v - 0.01 * v.grad
    cos = torch.nn.functional.cosine_similarity(u, v2)
    assert cos[0] > 0.6 and cos[1] < 0.8


def test_unknown_loss() -> None:
    with pytest.raises(ConfigError, match="unknown loss"):
        get_loss("hinge")


def test_story_ranking_value_and_no_pairs_of_pairs() -> None:
    logits = torch.tensor([2.0, 0.0, 1.0])
    story = torch.tensor([True, False, False])  # one same-story pair above two others
    expected = (math.log1p(math.exp(0.0 - 2.0)) + math.log1p(math.exp(1.0 - 2.0))) / 2
    assert float(story_ranking_loss(logits, story)) == pytest.approx(expected, rel=1e-6)
    assert float(story_ranking_loss(logits, torch.zeros(3, dtype=torch.bool))) == 0.0
    assert float(story_ranking_loss(logits, torch.ones(3, dtype=torch.bool))) == 0.0


def test_story_ranking_gradient_pushes_same_story_above_the_rest() -> None:
    logits = torch.tensor([0.0, 1.0], requires_grad=True)  # the same-story pair ranked below
    story_ranking_loss(logits, torch.tensor([True, False])).backward()
    assert logits.grad[0] < 0 < logits.grad[1]
