"""Behavioural losses on hand-computed values and gradients."""

from __future__ import annotations

import math

import pytest
import torch

from split_builders.evaluation.losses import (
    directional_error, directional_loss, invariance_loss, mft_loss, sample_perturbation, soft_target,
)
from split_builders.errors import InvalidParameterError

LN3 = math.log(3.0)


def test_mft_hard_label_is_cross_entropy():
    logits = torch.tensor([[0.0, LN3]], requires_grad=True)  # p = [1/4, 3/4]
    loss = mft_loss(logits, torch.tensor([1]))
    assert loss.item() == pytest.approx(-math.log(0.75))
    loss.backward()
    assert logits.grad.tolist()[0] == pytest.approx([0.25, -0.25])  # p - onehot


def test_mft_soft_labels_for_not_negative_and_neutral():
    logits = torch.zeros(2, 2, requires_grad=True)  # p = [1/2, 1/2]
    targets = torch.stack([soft_target("not_negative"), soft_target("neutral")])
    assert targets.tolist()[0] == pytest.approx([1 / 3, 2 / 3])
    losses = mft_loss(logits, targets, reduction="none")
    assert losses.tolist() == pytest.approx([math.log(2), math.log(2)])
    losses.sum().backward()
    assert logits.grad.flatten().tolist() == pytest.approx([1 / 6, -1 / 6, 0.0, 0.0], abs=1e-7)  # p - target


def test_invariance_loss_value_and_gradients():
    original = torch.tensor([[0.0, 0.0]], requires_grad=True)  # p = [1/2, 1/2]
    perturbed = torch.tensor([[LN3, 0.0]], requires_grad=True)  # q = [3/4, 1/4]
    loss = invariance_loss(original, perturbed)
    kl = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)  # = ln(4/3) / 2
    assert loss.item() == pytest.approx(kl)
    loss.backward()
    assert perturbed.grad.tolist()[0] == pytest.approx([0.25, -0.25])  # q - p
    # d KL / d z_orig,i = p_i (log(p_i / q_i) - KL)
    expected = [0.5 * (math.log(0.5 / 0.75) - kl), 0.5 * (math.log(0.5 / 0.25) - kl)]
    assert original.grad.tolist()[0] == pytest.approx(expected)
    same = invariance_loss(torch.tensor([[1.0, 2.0]]), torch.tensor([[1.0, 2.0]]))
    assert same.item() == pytest.approx(0.0, abs=1e-7)


def test_invariance_loss_can_detach_the_original():
    original = torch.tensor([[0.0, 0.0]], requires_grad=True)
    perturbed = torch.tensor([[LN3, 0.0]], requires_grad=True)
    invariance_loss(original, perturbed, detach_original=True).backward()
    assert original.grad is None


def test_directional_increasing_value_and_gradient():
    original = torch.tensor([[0.0, LN3]])  # p = [1/4, 3/4], predicted class 1
    perturbed = torch.tensor([[0.0, 0.0]], requires_grad=True)  # q = [1/2, 1/2]: p(1) fell by 1/4
    loss = directional_loss(original, perturbed, "increasing")
    assert loss.item() == pytest.approx(-math.log(0.75))
    loss.backward()
    # -d log(1 - (p1 - q1)) / dz = -(1 / 0.75) * dq1/dz, dq1/dz = q1 (onehot_1 - q) = [-1/4, 1/4]
    assert perturbed.grad.tolist()[0] == pytest.approx([1 / 3, -1 / 3])
    # The right direction costs nothing; tolerance absorbs small wrong moves.
    assert directional_loss(original, perturbed.detach(), "decreasing").item() == 0.0
    assert directional_loss(original, perturbed.detach(), "increasing", tolerance=0.25).item() == pytest.approx(0.0, abs=1e-6)
    assert directional_error(original, perturbed.detach(), "increasing", label=0).item() == 0.0


def test_directional_sentiment_diff_up_and_down():
    original = torch.log(torch.tensor([[0.2, 0.3, 0.5]]))
    perturbed = torch.log(torch.tensor([[0.4, 0.4, 0.2]]))
    # change = (0.2 - 0.4) + (0.2 - 0.5) = -0.5: more negative
    assert directional_error(original, perturbed, "diff_up").item() == pytest.approx(0.25)
    assert directional_loss(original, perturbed, "diff_up").item() == pytest.approx(-math.log(0.75))
    assert directional_loss(original, perturbed, "diff_down").item() == 0.0
    assert directional_error(original, perturbed, "diff_up", tolerance=0.1).item() == pytest.approx(0.2)


def test_batches_reduce_to_the_mean():
    original = torch.zeros(3, 2)
    perturbed = torch.tensor([[LN3, 0.0], [0.0, 0.0], [0.0, LN3]])
    each = invariance_loss(original, perturbed, reduction="none")
    assert each.shape == (3,)
    assert invariance_loss(original, perturbed).item() == pytest.approx(each.mean().item())


@pytest.mark.parametrize("call, message", [
    (lambda: mft_loss(torch.zeros(2, 3), torch.tensor([0, 1, 2])), "targets has 3 labels for 2 rows"),
    (lambda: mft_loss(torch.zeros(2, 3), torch.zeros(2, 2)), "soft targets must have the logits' shape \\(2, 3\\)"),
    (lambda: mft_loss(torch.zeros(3), torch.tensor([0])), "logits must be a tensor of shape \\(batch, classes >= 2\\)"),
    (lambda: invariance_loss(torch.zeros(2, 3), torch.zeros(3, 3)), "must have the same shape"),
    (lambda: directional_loss(torch.zeros(1, 2), torch.zeros(1, 2), "sideways"), "unknown comparison 'sideways'"),
    (lambda: mft_loss(torch.zeros(1, 2), torch.tensor([0]), reduction="max"), "reduction must be one of"),
    (lambda: soft_target("positive-ish"), "unknown soft target"),
    (lambda: sample_perturbation(1), "at least one perturbation"),
])
def test_wrong_shapes_and_names(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()


def test_sample_perturbation_never_picks_the_original():
    generator = torch.Generator().manual_seed(0)
    picks = {sample_perturbation(4, generator) for _ in range(50)}
    assert picks == {1, 2, 3}
