"""The tail hold-out, done once: :class:`TailSplitter`, the base of every splitter that holds out the tail of an
order (``random``, ``length``, the likelihood split, ``length`` and ``standard`` of the compositional releases).
A tail splitter fills only :meth:`TailSplitter._order`.
"""

from __future__ import annotations

import numpy as np

from loading_scripts.labels import encode_labels
from split_builders.splits import BaseSplitter, Split, resolve_size
from split_builders.errors import InvalidParameterError
from split_builders.splitters.groups import Groups, grouped_eval_split
from split_builders.splitters.partition import as_labels, balanced_eval_split, tail


def resolve_eval_sizes(validation_size, test_size, n_rows: int) -> tuple[int, int]:
    """Validation and test counts for ``n_rows`` rows (a fraction is rounded up, as scikit-learn and
    the reference generators do); together they must leave at least one training row."""
    n_validation, n_test = resolve_size(validation_size, n_rows), resolve_size(test_size, n_rows)
    if n_validation + n_test >= n_rows:
        raise InvalidParameterError(f"validation_size ({n_validation}) + test_size ({n_test}) must be smaller than "
                                    f"the number of rows ({n_rows})")
    return n_validation, n_test


def check_groups(groups, n_rows: int) -> Groups:
    """``groups`` (a group number per row, or :class:`Groups`) as :class:`Groups` of ``n_rows`` rows."""
    groups = groups if isinstance(groups, Groups) else Groups(groups)
    if groups.n_rows != n_rows:
        raise InvalidParameterError(f"groups has {groups.n_rows} values, expected {n_rows}")
    return groups


class TailSplitter(BaseSplitter):
    """Holds out the tail of an order: the one hold-out of every tail splitter, which fills only :meth:`_order`.

    By the sizes its constructor sets:

    * ``validation_size`` and ``test_size``: label-balanced evaluation sets (class ``ci`` of ``C`` gives ``size //
      C`` rows, :func:`~split_builders.splitters.partition.balanced_eval_split`), the last rows of each class along
      the order, divided into validation and test by the seeded generator; with ``groups``, whole groups from the
      end of the group order (:func:`~split_builders.splitters.groups.grouped_eval_split`);
    * ``train_size``: the first ``train_size`` rows of the order train, the rest test (validation empty;
      :func:`~split_builders.splitters.tmcd.train_count`).

    One generator, ``numpy.random.default_rng(random_state)``, is handed to :meth:`_order` and then divides the
    held-out rows, in that order.
    """

    requires = ("n_rows",)

    def _order(self, n_rows: int, *, rng, groups: Groups | None = None, **inputs) -> np.ndarray:
        """The rows in order, the held-out tail last (with ``groups``: the group numbers in order). ``inputs``:
        the keywords of :meth:`split`; an input the order needs and lacks, or that is malformed, is refused
        here."""
        raise NotImplementedError

    def _split(self, *, n_rows, labels=None, groups=None, progress=False, **inputs) -> Split:
        rng = np.random.default_rng(getattr(self, "random_state", None))
        if getattr(self, "train_size", None) is not None:
            from split_builders.splitters.tmcd import train_count

            n = train_count(self.train_size, n_rows)
            order = self._order(n_rows, rng=rng, **inputs)
            return Split.of(order[:n], (), order[n:])
        if groups is not None:
            groups = check_groups(groups, n_rows)
        order = self._order(n_rows, rng=rng, groups=groups, **inputs)
        if groups is not None:
            return self._hold_out_groups(order, labels, groups, rng)
        return self._hold_out(order, labels, n_rows, rng)

    def _hold_out(self, order, labels, n_rows: int, rng, pick_eval=None) -> Split:
        """Hold out the last rows of each class along ``order`` (``pick_eval(rows, n, rng)``: ``(kept, held
        out)`` of a class's rows, the tail by default); ``rng`` divides them into validation and test."""
        n_validation, n_test = resolve_eval_sizes(self.validation_size, self.test_size, n_rows)
        return Split.of(*balanced_eval_split(order, as_labels(labels, n_rows), validation_size=n_validation,
                                             test_size=n_test, rng=rng,
                                             pick_eval=pick_eval or (lambda rows, n, _: tail(rows, n))))

    def _hold_out_groups(self, order, labels, groups: Groups, rng) -> Split:
        """Hold out whole groups from the end of the group order ``order``."""
        n_validation, n_test = resolve_eval_sizes(self.validation_size, self.test_size, groups.n_rows)
        label_codes = None if labels is None else encode_labels(as_labels(labels, groups.n_rows), order="sorted")[0]
        return Split.of(*grouped_eval_split(order, groups, label_codes, validation_size=n_validation,
                                            test_size=n_test, rng=rng))
