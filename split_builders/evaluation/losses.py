"""Behavioural training losses (BELUGA) as plain torch functions.

One loss per CheckList test type, each taking a model's logits, so they fit any training loop
or a ``transformers.Trainer`` subclass's ``compute_loss``:

* MFT: cross-entropy against the label, or against a soft label where the expectation is not a
  single class (a binary sentiment model: neutral is ``[1/2, 1/2]``, "not negative"
  ``[1/3, 2/3]``, the centres of CheckList's bands for a binary model's p(positive));
* INV: the KL divergence from the original input's predicted distribution to that of one
  perturbation sampled from the test case (:func:`sample_perturbation`);
* DIR: ``-log(1 - error)``, ``error`` in [0, 1) being how far the perturbation moved the
  prediction the wrong way, for the four comparisons of the suites' DIR tests:
  ``increasing`` / ``decreasing`` confidence in a class and sentiment ``diff_up`` / ``diff_down``.

Every loss returns the mean over the batch (``reduction="none"`` gives one value per row).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from split_builders.errors import InvalidParameterError

# Soft targets over a binary sentiment model's [negative, positive].
SOFT_TARGETS = {"neutral": (0.5, 0.5), "not_negative": (1 / 3, 2 / 3)}
COMPARISONS = ("increasing", "decreasing", "diff_up", "diff_down")
REDUCTIONS = ("mean", "sum", "none")
# error is clamped below 1 so that -log(1 - error) stays finite.
_MAX_ERROR = 1.0 - 1e-7


def _reduce(values: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction not in REDUCTIONS:
        raise InvalidParameterError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    if reduction == "none":
        return values
    return values.mean() if reduction == "mean" else values.sum()


def _check_logits(logits, name: str) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[1] < 2:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise InvalidParameterError(f"{name} must be a tensor of shape (batch, classes >= 2), got {shape}")
    return logits


def _check_pair(original, perturbed):
    _check_logits(original, "original_logits")
    _check_logits(perturbed, "perturbed_logits")
    if original.shape != perturbed.shape:
        raise InvalidParameterError(f"original_logits {tuple(original.shape)} and perturbed_logits "
                                    f"{tuple(perturbed.shape)} must have the same shape")


def mft_loss(logits, targets, *, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy for minimum functionality tests, with hard or soft targets.

    Parameters
    ----------
    logits : torch.Tensor, shape (batch, classes)
    targets : torch.Tensor
        Class ids, shape (batch,), or target distributions, shape (batch, classes)
        (see :func:`soft_target`).
    reduction : {"mean", "sum", "none"}
    """
    _check_logits(logits, "logits")
    if targets.ndim == 1 and not targets.is_floating_point():
        if targets.shape[0] != logits.shape[0]:
            raise InvalidParameterError(f"targets has {targets.shape[0]} labels for {logits.shape[0]} rows of logits")
        return _reduce(F.cross_entropy(logits, targets, reduction="none"), reduction)
    if targets.shape != logits.shape:
        raise InvalidParameterError(f"soft targets must have the logits' shape {tuple(logits.shape)}, "
                                    f"got {tuple(targets.shape)}")
    values = -(targets.to(logits.dtype) * F.log_softmax(logits, dim=-1)).sum(dim=-1)
    return _reduce(values, reduction)


def soft_target(kind: str) -> torch.Tensor:
    """The soft target of a binary sentiment model: ``"neutral"`` or ``"not_negative"``."""
    if kind not in SOFT_TARGETS:
        raise InvalidParameterError(f"unknown soft target {kind!r}; known: {', '.join(SOFT_TARGETS)}")
    return torch.tensor(SOFT_TARGETS[kind])


def invariance_loss(original_logits, perturbed_logits, *, detach_original: bool = False,
                    reduction: str = "mean") -> torch.Tensor:
    """KL(p(original) || p(perturbed)): zero exactly when the prediction does not change.

    ``detach_original=True`` treats the original prediction as a fixed target (gradients
    only through the perturbation).
    """
    _check_pair(original_logits, perturbed_logits)
    if detach_original:
        original_logits = original_logits.detach()
    log_p = F.log_softmax(original_logits, dim=-1)
    log_q = F.log_softmax(perturbed_logits, dim=-1)
    values = (log_p.exp() * (log_p - log_q)).sum(dim=-1)
    return _reduce(values, reduction)


def directional_error(original_logits, perturbed_logits, comparison: str, *, label=None, tolerance: float = 0.0,
                      negative: int = 0, positive: int = -1) -> torch.Tensor:
    """How far each perturbation moved the prediction the wrong way, in [0, 1).

    ``increasing`` / ``decreasing``: the fall / rise of p(label) beyond ``tolerance``
    (label: the original prediction unless given, as in CheckList's ``monotonic``).
    ``diff_up`` / ``diff_down``: with change = (p_orig[neg] - p_new[neg]) + (p_new[pos] - p_orig[pos])
    (CheckList's sentiment change, in [-2, 2]), half of how far change falls below
    ``-tolerance`` (up) or rises above ``tolerance`` (down).
    """
    _check_pair(original_logits, perturbed_logits)
    if comparison not in COMPARISONS:
        raise InvalidParameterError(f"unknown comparison {comparison!r}; known: {', '.join(COMPARISONS)}")
    p = F.softmax(original_logits, dim=-1)
    q = F.softmax(perturbed_logits, dim=-1)
    if comparison in ("increasing", "decreasing"):
        if label is None:
            label = original_logits.detach().argmax(dim=-1)
        label = torch.as_tensor(label, device=p.device).reshape(-1).expand(p.shape[0]).unsqueeze(1)
        change = (q.gather(1, label) - p.gather(1, label)).squeeze(1)
        error = F.relu(-change - tolerance) if comparison == "increasing" else F.relu(change - tolerance)
    else:
        change = (p[:, negative] - q[:, negative]) + (q[:, positive] - p[:, positive])
        error = (F.relu(-change - tolerance) if comparison == "diff_up" else F.relu(change - tolerance)) / 2
    return error.clamp(max=_MAX_ERROR)


def directional_loss(original_logits, perturbed_logits, comparison: str, *, label=None, tolerance: float = 0.0,
                     negative: int = 0, positive: int = -1, reduction: str = "mean") -> torch.Tensor:
    """``-log(1 - error)`` of :func:`directional_error`: 0 when the change goes the right way."""
    error = directional_error(original_logits, perturbed_logits, comparison, label=label, tolerance=tolerance,
                              negative=negative, positive=positive)
    return _reduce(-torch.log1p(-error), reduction)


def sample_perturbation(n_examples: int, generator: torch.Generator | None = None) -> int:
    """Index of one perturbation of a test case whose example 0 is the original input.

    Parameters
    ----------
    n_examples : int
        Examples in the test case (the original plus at least one perturbation).
    generator : torch.Generator, optional
        For reproducible sampling.
    """
    if n_examples < 2:
        raise InvalidParameterError(f"a test case needs an original and at least one perturbation, got {n_examples} example(s)")
    return 1 + int(torch.randint(n_examples - 1, (1,), generator=generator))
