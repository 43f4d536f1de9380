"""Baseline splits of the Likelihood Splits paper: ``random`` and ``length``.

Both build label-balanced evaluation sets exactly like the likelihood splitter
(:func:`split_builders.splitters.partition.balanced_eval_split`), so the three differ only in which rows
of a class are held out: random ones, or the longest.
"""

from __future__ import annotations

import numpy as np

from split_builders.splits import DEFAULT_SEED, check_number, check_random_state, check_size
from split_builders.errors import InvalidParameterError
from split_builders.splitters.base import TailSplitter, resolve_eval_sizes  # noqa: F401 (resolve_eval_sizes: its names)
from split_builders.splitters.partition import reference_shuffle


class _BalancedBaseline(TailSplitter):
    def __init__(self, *, validation_size=0.1, test_size=0.1, random_state=DEFAULT_SEED):
        self.validation_size = check_size(validation_size, "validation_size")
        self.test_size = check_size(test_size, "test_size")
        self.random_state = check_random_state(random_state)


class RandomSplitter(_BalancedBaseline):
    """Random label-balanced validation and test sets (the paper's ``random`` baseline).

    Parameters
    ----------
    validation_size, test_size : int or float, default=0.1
        Counts, or fractions in (0, 1) of all rows (rounded up).
    random_state : int, default=42
        Seed of the shuffle of the rows (drawn as ``DataFrame.sample(frac=1)`` draws it in the
        reference) and of the validation/test division.

    Notes
    -----
    It reads no signal, only the number of rows (``split(n_rows)``, or any per-row input) and, where given,
    ``labels`` and ``groups``. With ``groups``, whole groups in a seeded random order are held out (label
    balance as close as whole groups allow).
    """

    def _order(self, n_rows, *, rng, groups=None, **inputs):
        n_rows = check_number(n_rows, "n_rows", integer=True, minimum=3)
        resolve_eval_sizes(self.validation_size, self.test_size, n_rows)  # fail before drawing anything
        # The reference draws the shuffle and the validation/test division from one generator, in this order.
        if groups is not None:
            return rng.permutation(groups.n_groups)
        return reference_shuffle(np.arange(n_rows), rng)

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(validation_size=0.1, test_size=0.2, random_state=3), dict(n_rows=data["n_rows"],
                                                                                 labels=data["labels"]), True)]


class LengthSplitter(_BalancedBaseline):
    """The longest rows of each class are held out (the paper's ``length`` baseline).

    Parameters
    ----------
    validation_size, test_size : int or float, default=0.1
        Counts, or fractions in (0, 1) of all rows (rounded up).
    random_state : int, default=42
        Seed of the validation/test division of the held-out rows.

    Notes
    -----
    It orders by ``lengths`` (required); with ``groups``, the groups of the longest mean length are held out
    whole.
    """

    requires = ("lengths",)

    def _order(self, n_rows, *, rng, groups=None, lengths=None, **inputs):
        lengths = np.asarray(lengths)
        if lengths.ndim != 1 or lengths.size < 3:
            raise InvalidParameterError(f"lengths must be a 1-D array of at least 3 values, got shape {lengths.shape}")
        if groups is not None:
            return np.argsort(groups.mean(lengths), kind="stable")  # shortest group first
        return np.argsort(lengths, kind="stable")  # shortest first, ties in row order (pandas' mergesort)

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(validation_size=9, test_size=9, random_state=3), dict(lengths=data["lengths"],
                                                                             labels=data["labels"]), True)]
