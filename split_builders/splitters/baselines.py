"""Baseline splits of the Likelihood Splits paper: ``random`` and ``length``.

Both build label-balanced evaluation sets exactly like the likelihood splitter
(:func:`split_builders.splitters.partition.balanced_eval_split`), so the three differ only in which rows
of a class are held out: random ones, or the longest.
"""

from __future__ import annotations

import numpy as np

from loading_scripts.labels import encode_labels
from split_builders.api import BaseSplitter, Split, check_number, check_random_state, check_size, resolve_size
from split_builders.errors import InvalidParameterError
from split_builders.splitters.groups import Groups, grouped_eval_split
from split_builders.splitters.partition import as_labels, balanced_eval_split, reference_shuffle, tail


def resolve_eval_sizes(validation_size, test_size, n_rows: int) -> tuple[int, int]:
    """Validation and test counts for ``n_rows`` rows (a fraction is rounded up, as scikit-learn and
    the reference generators do); together they must leave at least one training row."""
    n_validation, n_test = resolve_size(validation_size, n_rows), resolve_size(test_size, n_rows)
    if n_validation + n_test >= n_rows:
        raise InvalidParameterError(f"validation_size ({n_validation}) + test_size ({n_test}) must be smaller than "
                                    f"the number of rows ({n_rows})")
    return n_validation, n_test


class _BalancedBaseline(BaseSplitter):
    def __init__(self, *, validation_size=0.1, test_size=0.1, random_state=None):
        self.validation_size = check_size(validation_size, "validation_size")
        self.test_size = check_size(test_size, "test_size")
        self.random_state = check_random_state(random_state)

    def _split(self, order, labels, n_rows, rng) -> Split:
        """Hold out the last rows of each class along ``order``; ``rng`` divides them into validation
        and test."""
        n_validation, n_test = resolve_eval_sizes(self.validation_size, self.test_size, n_rows)
        return Split.of(*balanced_eval_split(order, as_labels(labels, n_rows), validation_size=n_validation,
                                             test_size=n_test, rng=rng, pick_eval=lambda rows, n, _: tail(rows, n)))

    def _split_groups(self, order, labels, groups, rng) -> Split:
        """Hold out whole groups from the end of the group order ``order``."""
        groups = groups if isinstance(groups, Groups) else Groups(groups)
        n_validation, n_test = resolve_eval_sizes(self.validation_size, self.test_size, groups.n_rows)
        label_codes = None if labels is None else encode_labels(as_labels(labels, groups.n_rows), order="sorted")[0]
        return Split.of(*grouped_eval_split(order, groups, label_codes, validation_size=n_validation,
                                            test_size=n_test, rng=rng))


def _groups(groups, n_rows: int) -> Groups:
    groups = Groups(groups)
    if groups.n_rows != n_rows:
        raise InvalidParameterError(f"groups has {groups.n_rows} values, expected {n_rows}")
    return groups


class RandomSplitter(_BalancedBaseline):
    """Random label-balanced validation and test sets (the paper's ``random`` baseline).

    Parameters
    ----------
    validation_size, test_size : int or float, default=0.1
        Counts, or fractions in (0, 1) of all rows (rounded up).
    random_state : int, optional
        Seed of the shuffle of the rows (drawn as ``DataFrame.sample(frac=1)`` draws it in the
        reference) and of the validation/test division.

    Notes
    -----
    With ``groups``, whole groups in a seeded random order are held out (label balance as close as
    whole groups allow).
    """

    def split(self, n_rows: int, labels=None, groups=None) -> Split:
        """Return the sorted row numbers of train, validation and test for ``n_rows`` rows
        (``groups``: a group number per row; no group is divided)."""
        n_rows = check_number(n_rows, "n_rows", integer=True, minimum=3)
        resolve_eval_sizes(self.validation_size, self.test_size, n_rows)  # fail before drawing anything
        # The reference draws the shuffle and the validation/test division from one generator, in this order.
        rng = np.random.default_rng(self.random_state)
        if groups is not None:
            groups = _groups(groups, n_rows)
            return self._split_groups(rng.permutation(groups.n_groups), labels, groups, rng)
        order = reference_shuffle(np.arange(n_rows), rng)
        return self._split(order, labels, n_rows, rng)


class LengthSplitter(_BalancedBaseline):
    """The longest rows of each class are held out (the paper's ``length`` baseline).

    Parameters
    ----------
    validation_size, test_size : int or float, default=0.1
        Counts, or fractions in (0, 1) of all rows (rounded up).
    random_state : int, optional
        Seed of the validation/test division of the held-out rows.

    Notes
    -----
    With ``groups``, the groups of the longest mean length are held out whole.
    """

    def split(self, lengths, labels=None, groups=None) -> Split:
        """Return the sorted row numbers of train, validation and test (``groups``: a group number
        per row; no group is divided)."""
        lengths = np.asarray(lengths)
        if lengths.ndim != 1 or lengths.size < 3:
            raise InvalidParameterError(f"lengths must be a 1-D array of at least 3 values, got shape {lengths.shape}")
        if groups is not None:
            groups = _groups(groups, lengths.size)
            order = np.argsort(groups.mean(lengths), kind="stable")  # shortest group first
            return self._split_groups(order, labels, groups, np.random.default_rng(self.random_state))
        order = np.argsort(lengths, kind="stable")  # shortest first, ties in row order (pandas' mergesort)
        return self._split(order, labels, lengths.size, np.random.default_rng(self.random_state))
