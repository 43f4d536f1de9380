"""Baseline splits of the Likelihood Splits paper: ``random`` and ``length``.

Both build label-balanced evaluation sets exactly like the likelihood splitter
(:func:`split_builders.splitters.partition.balanced_eval_split`), so the three differ only in which rows
of a class are held out: random ones, or the longest.
"""

from __future__ import annotations

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.splitters.partition import (
    as_labels, balanced_eval_split, check_random_state, check_size, reference_shuffle, resolve_size, tail,
)


class _BalancedBaseline:
    def __init__(self, *, dev_size=0.1, test_size=0.1, random_state=None):
        self.dev_size = check_size(dev_size, "dev_size")
        self.test_size = check_size(test_size, "test_size")
        self.random_state = check_random_state(random_state)

    def get_params(self) -> dict:
        return {"dev_size": self.dev_size, "test_size": self.test_size, "random_state": self.random_state}

    def _sizes(self, n_rows):
        dev_size, test_size = resolve_size(self.dev_size, n_rows), resolve_size(self.test_size, n_rows)
        if dev_size + test_size >= n_rows:
            raise InvalidParameterError(
                f"dev_size ({dev_size}) + test_size ({test_size}) must be smaller than the "
                f"number of rows ({n_rows})")
        return dev_size, test_size


class RandomSplitter(_BalancedBaseline):
    """Random label-balanced dev and test sets (the paper's ``random`` baseline).

    Parameters
    ----------
    dev_size, test_size : int or float, default=0.1
        Counts, or fractions in (0, 1) of all rows.
    random_state : int, optional
    """

    def split(self, n_rows: int, labels=None):
        """Return sorted row numbers of train, validation and test for ``n_rows`` rows."""
        if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 3:
            raise InvalidParameterError(f"n_rows must be an integer >= 3, got {n_rows!r}")
        dev_size, test_size = self._sizes(n_rows)
        rng = np.random.default_rng(self.random_state)
        order = reference_shuffle(np.arange(n_rows), rng)
        return balanced_eval_split(order, as_labels(labels, n_rows), dev_size=dev_size, test_size=test_size,
                                   rng=rng, pick_eval=lambda rows, n, _: tail(rows, n))


class LengthSplitter(_BalancedBaseline):
    """The longest rows of each class are held out (the paper's ``length`` baseline).

    Parameters
    ----------
    dev_size, test_size : int or float, default=0.1
    random_state : int, optional
        Seed of the dev/test division of the held-out rows.
    """

    def split(self, lengths, labels=None):
        """Return sorted row numbers of train, validation and test."""
        lengths = np.asarray(lengths)
        if lengths.ndim != 1 or lengths.size < 3:
            raise InvalidParameterError(f"lengths must be a 1-D array of at least 3 values, got shape {lengths.shape}")
        dev_size, test_size = self._sizes(lengths.size)
        rng = np.random.default_rng(self.random_state)
        order = np.argsort(lengths, kind="stable")  # shortest first, ties in row order
        return balanced_eval_split(order, as_labels(labels, lengths.size), dev_size=dev_size,
                                   test_size=test_size, rng=rng, pick_eval=lambda rows, n, _: tail(rows, n))
