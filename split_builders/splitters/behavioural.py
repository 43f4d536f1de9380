"""BELUGA's per-functionality division of a behavioural suite (Luz de Araujo & Roth 2023).

BELUGA's reference code divides the test-case ids of every functionality with scikit-learn::

    train, held_out = train_test_split(ids, test_size=0.5, random_state=123)
    validation, test = train_test_split(held_out, test_size=0.5, random_state=123)

so each functionality is split 50/25/25, every functionality starting afresh from the same seed.
:class:`BehaviouralSplitter` makes exactly those draws (through
:func:`split_builders.splitters.partition.shuffle_split`, scikit-learn's ``ShuffleSplit``
arithmetic) and, with ``random_state=123``, reproduces BELUGA's published division of every
functionality of the sentiment, QQP and SQuAD suites.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from split_builders.api import BaseSplitter, Split
from split_builders.errors import InvalidParameterError
from split_builders.api import check_random_state
from split_builders.splitters.partition import shuffle_split

BELUGA_SEED = 123


def _check_fraction(value, name: str) -> float:
    """A share of a functionality's test cases: a fraction in (0, 1). Counts make no sense here:
    functionalities differ in size, and BELUGA divides each one by the same fractions."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 < float(value) < 1.0:
        raise InvalidParameterError(f"{name} must be a fraction in (0, 1), got {value!r}")
    return float(value)


class BehaviouralSplitter(BaseSplitter):
    """Divide each functionality's test cases into train, validation and test (BELUGA).

    Every functionality (group) is divided on its own: ``holdout_size`` of its test cases are kept
    out of training, and ``test_share`` of those go to test, the rest to validation. Both divisions
    are scikit-learn's ``train_test_split(..., random_state=random_state)`` draws, restarted from the
    same seed for every functionality, as BELUGA's reference code does. The defaults are BELUGA's
    (50/25/25 with seed 123): they reproduce its published splits.

    Parameters
    ----------
    holdout_size : float, default=0.5
        Fraction of each functionality's test cases kept out of training.
    test_share : float, default=0.5
        Fraction of the held-out test cases that go to test (the rest validate).
    random_state : int, default=123
        Seed of both divisions (BELUGA's is 123). None is refused: BELUGA's divisions are
        reproducible by construction.

    Examples
    --------
    >>> train, validation, test = BehaviouralSplitter().split(["a"] * 4 + ["b"] * 4)
    >>> len(train), len(validation), len(test)
    (4, 2, 2)
    """

    def __init__(self, *, holdout_size=0.5, test_share=0.5, random_state=BELUGA_SEED):
        self.holdout_size = _check_fraction(holdout_size, "holdout_size")
        self.test_share = _check_fraction(test_share, "test_share")
        if random_state is None:
            raise InvalidParameterError("random_state must be a non-negative integer (BELUGA uses 123)")
        self.random_state = check_random_state(random_state)

    def split(self, groups) -> Split:
        """Return the row numbers of train, validation and test.

        Parameters
        ----------
        groups : array-like, shape (n_rows,)
            The functionality of each row; a functionality's rows, in row order, are its test
            cases in test-case-id order (the order BELUGA's ids follow).

        Returns
        -------
        Split
        """
        groups = np.asarray(groups, dtype=object)
        if groups.ndim != 1 or groups.size == 0:
            raise InvalidParameterError("groups must be a non-empty flat list, one functionality per row")
        parts = {"train": [], "validation": [], "test": []}
        for group, rows in _rows_by_group(groups):
            try:
                train, held_out = shuffle_split(rows.size, self.holdout_size, self.random_state)
                validation, test = shuffle_split(held_out.size, self.test_share, self.random_state)
            except InvalidParameterError as error:
                raise InvalidParameterError(f"functionality {group!r}: {error}") from None
            parts["train"].append(rows[train])
            parts["validation"].append(rows[held_out[validation]])
            parts["test"].append(rows[held_out[test]])
        return Split.of(*(np.concatenate(parts[name]) for name in ("train", "validation", "test")))


def _rows_by_group(groups: np.ndarray):
    """``(group, its row numbers in order)`` for every group, in order of first appearance."""
    names, first, inverse = np.unique(groups.astype(str), return_index=True, return_inverse=True)
    order = np.argsort(inverse, kind="stable")  # rows grouped, each group's rows in row order
    bounds = np.cumsum(np.bincount(inverse, minlength=names.size))
    per_group = np.split(order, bounds[:-1])
    for index in np.argsort(first, kind="stable"):
        yield groups[first[index]], per_group[index]
