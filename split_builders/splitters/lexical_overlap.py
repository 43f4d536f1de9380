"""Lexical-overlap splits: the rows that share the fewest content words with any other row are held out.

:class:`LexicalOverlapSplitter` (pure numpy) holds out the rows of lowest overlap (each row's largest
content-word overlap with any other row, computed by :mod:`split_builders.methods.lexical_overlap`): since the
held-out rows leave the training set, each one's overlap with any training row is at most its signal. Without a
signal it holds out rows in a seeded random order: the ``random`` baseline of the same sizes. With labels the
evaluation sets are label-balanced (:func:`~split_builders.splitters.partition.balanced_eval_split`); with groups
whole groups are held out, those of lowest largest overlap first
(:func:`~split_builders.splitters.groups.grouped_eval_split`).

:func:`lexical_overlap_configs` is the config builder both the build and ``verify`` call.
"""

from __future__ import annotations

import numpy as np

from split_builders.splits import BaseSplitter, ConfigSplit, Split, check_random_state, check_size
from split_builders.errors import InvalidParameterError
from split_builders.splitters.base import resolve_eval_sizes
from split_builders.splitters.groups import Groups, grouped_eval_split
from split_builders.splitters.partition import as_labels, balanced_eval_split, tail


class LexicalOverlapSplitter(BaseSplitter):
    """Hold out the rows (or whole groups) of lowest lexical overlap.

    Parameters
    ----------
    validation_size, test_size : int or float, default=0.1
        Counts, or fractions in (0, 1) of all rows (rounded up); together they leave at least one train row.
    random_state : int, default=42
        Seed of the division of the held-out rows into validation and test (and, without a signal, of the
        random order the rows are held out in).

    Examples
    --------
    >>> LexicalOverlapSplitter(test_size=2, validation_size=1).split([0.9, 0.1, 0.5, 0.8, 0.0]).train.tolist()
    [0, 3]
    """

    def __init__(self, *, validation_size=0.1, test_size=0.1, random_state=42):
        self.validation_size = check_size(validation_size, "validation_size")
        self.test_size = check_size(test_size, "test_size", allow_zero=False)
        self.random_state = check_random_state(random_state)

    requires = ("n_rows",)

    @classmethod
    def _examples(cls, data: dict) -> list:
        overlap = data["rng"].uniform(0, 1, size=data["n_rows"])
        return [(dict(validation_size=0.1, test_size=0.2, random_state=3), dict(signal=overlap, labels=data["labels"]),
                 True),
                (dict(validation_size=5, test_size=5, random_state=42), dict(n_rows=data["n_rows"]), True)]

    def _split(self, *, signal=None, labels=None, groups=None, n_rows: int | None = None) -> Split:
        """Sorted row numbers of train, validation and test (what :meth:`split` returns).

        ``signal``: each row's overlap (lower is held out first; ties in row order); None: a seeded random order
        (then ``n_rows``, or the length of ``labels`` / ``groups``, gives the rows). ``labels``: one per row, the
        evaluation sets label-balanced. ``groups``: one group number per row, no group divided."""
        n = _row_count(signal, labels, groups, n_rows)
        n_validation, n_test = resolve_eval_sizes(self.validation_size, self.test_size, n)
        rng = np.random.default_rng(self.random_state)
        if signal is None:
            overlap = None
        else:
            overlap = np.asarray(signal, dtype=np.float64)
            if np.isnan(overlap).any():
                raise InvalidParameterError("the overlap signal has missing values (NaN)")
        if groups is not None:
            groups = Groups(groups)
            if overlap is None:
                order = rng.permutation(groups.n_groups)
            else:  # a group is as overlapping as its most overlapping row; the least overlapping groups come last
                most = np.full(groups.n_groups, -np.inf)
                np.maximum.at(most, groups.codes, overlap)
                order = np.argsort(-most, kind="stable")
            codes = None
            if labels is not None:
                from loading_scripts.labels import encode_labels

                codes = encode_labels(as_labels(labels, n), order="sorted")[0]
            return Split.of(*grouped_eval_split(order, groups, codes, validation_size=n_validation,
                                                test_size=n_test, rng=rng))
        order = rng.permutation(n) if overlap is None else np.argsort(-overlap, kind="stable")
        labels = np.zeros(n, dtype=np.int64) if labels is None else as_labels(labels, n)
        return Split.of(*balanced_eval_split(order, labels, validation_size=n_validation, test_size=n_test, rng=rng,
                                             pick_eval=lambda rows, k, _: tail(rows, k)))


def _row_count(signal, labels, groups, n_rows) -> int:
    counts = {name: len(values) for name, values in (("signal", signal), ("labels", labels), ("groups", groups))
              if values is not None}
    if n_rows is not None:
        counts["n_rows"] = int(n_rows)
    if not counts:
        raise InvalidParameterError("give the overlap signal, labels, groups or n_rows: the rows to split")
    if len(set(counts.values())) > 1:
        raise InvalidParameterError(f"one value per row is needed; got {counts}")
    n = next(iter(counts.values()))
    if n < 3:
        raise InvalidParameterError(f"{n} row(s) cannot make train, validation and test splits (at least 3 are needed)")
    return n


def lexical_overlap_configs(overlap, *, labels=None, groups=None, validation_size, test_size, random_state,
                            group_field=None) -> list:
    """The two configs: ``lexical_overlap`` (the rows, or whole groups, of lowest overlap held out) and ``random``
    (a seeded random split of the same requested sizes). Parameters record the splitter's and ``grouped_by``."""
    splitter = LexicalOverlapSplitter(validation_size=validation_size, test_size=test_size, random_state=random_state)
    parameters = {**splitter.get_params(), **({"grouped_by": group_field} if groups is not None else {})}
    held = splitter.split(overlap, labels=labels, groups=groups)
    baseline = splitter.split(None, labels=labels, groups=groups, n_rows=len(overlap))
    requested = None
    if groups is not None:  # what whole groups may move the realised sizes from (the build says where they do)
        n_validation, n_test = resolve_eval_sizes(splitter.validation_size, splitter.test_size, len(overlap))
        requested = {"train": len(overlap) - n_validation - n_test, "validation": n_validation, "test": n_test}
    return [ConfigSplit("lexical_overlap", held.as_indices(), method="lexical-overlap", parameters=dict(parameters),
                        description="The rows sharing the fewest content words with any other row held out",
                        requested=requested),
            ConfigSplit("random", baseline.as_indices(), method="lexical-overlap", parameters=dict(parameters),
                        description="A random split of the same sizes", requested=requested)]
