"""Likelihood Splits (Godbole & Jia, EACL 2023).

The signal is s(x), the log-likelihood a language model gives the query of each example
(:mod:`split_builders.signals.lm.scoring`). The splitter puts the least likely examples into the evaluation
sets, so a model is tested on the long tail of the distribution; ``reverse=True`` does the
opposite (train on the tail, evaluate on the head).

Two modes, as in the paper:

* classification (``validation_size`` / ``test_size``): label-balanced evaluation sets, optionally
  with length control (within each class, every word-length quantile bucket gives its share of
  evaluation rows, so evaluation is not simply "longer");
* semantic parsing (``train_size``): a fixed number of the most likely rows train, the rest is
  divided at random into validation and test halves.
"""

from __future__ import annotations

import numpy as np

from loading_scripts.labels import encode_labels
from split_builders.splits import DEFAULT_SEED, Split, check_number, check_random_state, check_size, resolve_size
from split_builders.errors import InvalidParameterError
from split_builders.signals.lengths import quantile_buckets
from split_builders.splitters.atom_constraint import balance_atoms
from split_builders.splitters.base import TailSplitter, resolve_eval_sizes
from split_builders.splitters.baselines import LengthSplitter, RandomSplitter
from split_builders.splitters.groups import (Groups, divide_groups, group_parameters, grouped_eval_split,
                                            grouped_train_split)
from split_builders.splitters.partition import tail

# Config names this method contributes to a release, by scoring setting.
CONFIG_NAMES = {
    "prompted": {"plain": "ll_split_pt", "length": "ll_split_pt_len", "reverse": "ll_split_pt_reverse"},
    "given": {"plain": "ll_split", "length": "ll_split_len", "reverse": "ll_split_reverse"},
    "finetuned": {"plain": "ll_split", "length": "ll_split_len", "reverse": "ll_split_reverse"},
}
# Whose likelihood a config's description speaks of, by scoring setting.
SETTING_SCORES = {
    "prompted": "a frozen, prompted LM",
    "given": "the given scores",
    "finetuned": "an LM fine-tuned on the other folds (k-fold cross-fitting)",
}


class LikelihoodSplitter(TailSplitter):
    """Split rows by language-model likelihood.

    Parameters
    ----------
    validation_size, test_size : int or float, default=0.1
        Size of the validation and test sets: a count, or a fraction in (0, 1) of all rows
        (rounded up, as the reference). Evaluation sets are balanced over labels when labels are
        given: class ``ci`` of ``C`` (in order of first appearance along the likelihood order)
        gives ``size // C`` rows, the first class also the remainder, as the reference does.
    train_size : int or float, optional
        Semantic-parsing mode: the ``train_size`` most likely rows train and the rest is halved
        at random into validation and test (validation gets the smaller half, as the reference).
        ``validation_size`` / ``test_size`` are then unused.
    length_buckets : int, optional
        Number of equal-frequency word-length buckets for length control; None for none.
    reverse : bool, default=False
        Put the most likely rows in the evaluation sets instead.
    random_state : int, default=42
        Seed of every random draw (bucket rounding, validation/test division). Ties in likelihood keep
        their row order (a stable sort, as the reference's pandas mergesort).

    Notes
    -----
    With ``groups`` (:meth:`split`), a group is placed by the mean score of its rows: the least likely
    groups are held out whole (:func:`~split_builders.splitters.groups.grouped_eval_split`), label
    balance kept as close as whole groups allow; with ``length_buckets``, groups are bucketed by their
    mean length and each bucket gives its share of held-out rows, its least likely groups first. In
    ``train_size`` mode the most likely groups train, the atom constraint swaps whole groups (a group's
    atoms are its rows' union) and the held-out groups are halved at random into validation and test.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([-3.0, -9.0, -1.0, -7.0, -2.0, -8.0])
    >>> train, validation, test = LikelihoodSplitter(validation_size=1, test_size=1, random_state=0).split(scores)
    >>> sorted(np.concatenate([validation, test]).tolist())  # the two least likely rows
    [1, 5]
    """

    def __init__(self, *, validation_size=0.1, test_size=0.1, train_size=None, length_buckets=None,
                 reverse=False, random_state=DEFAULT_SEED):
        self.train_size = None if train_size is None else check_size(train_size, "train_size", allow_zero=False)
        self.validation_size = check_size(validation_size, "validation_size")
        self.test_size = check_size(test_size, "test_size")
        self.length_buckets = check_number(length_buckets, "length_buckets", integer=True, minimum=1, allow_none=True)
        if not isinstance(reverse, bool):
            raise InvalidParameterError(f"reverse must be True or False, got {reverse!r}")
        self.reverse = reverse
        self.random_state = check_random_state(random_state)

    def check_rows(self, n_rows: int, labels=None, lengths=None) -> None:
        """The checks that need the rows but not their scores (run before anything is scored): the
        sizes leave training rows, every class can give its share of the evaluation sets (``size //
        C``; the first class along the likelihood order, not known before scoring, also gives the
        remainders, which :meth:`split` checks), and the length buckets can be formed (per class, or
        over every row in ``train_size`` mode)."""
        if self.train_size is not None:
            train_size = resolve_size(self.train_size, n_rows)
            if not 0 < train_size < n_rows - 1:
                raise InvalidParameterError(f"train_size ({train_size}) must leave at least 2 of the {n_rows} rows "
                                            "for validation and test")
            groups = [(None, np.arange(n_rows))]
        else:
            n_validation, n_test = resolve_eval_sizes(self.validation_size, self.test_size, n_rows)
            groups = class_groups(labels, n_rows)
            share_validation, share_test = n_validation // len(groups), n_test // len(groups)
            for label, rows in groups:
                if share_validation + share_test >= len(rows):
                    raise InvalidParameterError(
                        f"class {label!r} has {len(rows)} rows but its share of the evaluation sets is "
                        f"{share_validation + share_test} (validation {share_validation} + test {share_test}), "
                        "which leaves no training row; lower validation_size / test_size")
        if self.length_buckets is not None:
            for _, rows in groups:
                quantile_buckets(np.asarray(lengths)[rows], self.length_buckets)

    requires = ("signal",)

    def _reads_labels(self) -> bool:
        return self.train_size is None  # train_size mode refuses labels (it has no evaluation sets to balance)

    def _order(self, n_rows, *, rng=None, signal=None, **inputs) -> np.ndarray:
        """Most likely first (least likely with ``reverse``), ties in row order: the tail is the least likely."""
        key = -signal if self.reverse else signal
        return np.argsort(-key, kind="stable")

    def _split(self, *, signal, labels=None, lengths=None, atoms=None, groups=None) -> Split:
        """Return the row numbers of train, validation and test.

        Parameters
        ----------
        signal : array-like of float, shape (n_rows,)
            The scores: log-likelihood of each row; higher is more likely.
        labels : array-like, shape (n_rows,), optional
            Labels to balance the evaluation sets over (classification mode only).
        lengths : array-like of int, shape (n_rows,), optional
            Word-token lengths; required with ``length_buckets``.
        atoms : sequence of set, shape (n_rows,), optional
            ``train_size`` mode only: the atoms of each row's target program. Rows are then
            swapped until every evaluation atom occurs in train (Shaw et al.'s
            :func:`~split_builders.splitters.atom_constraint.balance_atoms`, offering the least likely
            train rows and the most likely evaluation rows first); ``atom_swaps_`` holds the
            number of swaps.
        groups : array-like of int, shape (n_rows,), optional
            Group number of each row (:func:`~split_builders.splitters.groups.group_codes`): rows of
            a group are never divided (see Notes).

        Returns
        -------
        Split
            Sorted row numbers of train, validation and test (unpacks as ``train, validation, test``);
            together they cover every row exactly once.
        """
        scores = np.asarray(signal, dtype=np.float64)
        if scores.ndim != 1 or scores.size == 0:
            raise InvalidParameterError(f"scores must be a non-empty 1-D array, got shape {scores.shape}")
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise InvalidParameterError(f"{bad.size} score(s) are not finite (rows {bad[:10].tolist()})")
        n_rows = scores.size
        if self.length_buckets is not None:
            if lengths is None:
                raise InvalidParameterError("length_buckets needs the lengths of the rows")
            lengths = np.asarray(lengths)
            if lengths.shape != (n_rows,):
                raise InvalidParameterError(f"lengths has shape {lengths.shape}, expected ({n_rows},)")
        # key: higher = "more likely" in the sense of the split; reverse flips who is in the tail.
        key = -scores if self.reverse else scores
        order = self._order(n_rows, signal=scores)  # most likely first, ties in row order
        rng = np.random.default_rng(self.random_state)
        if atoms is not None:
            if self.train_size is None:
                raise InvalidParameterError("the atom constraint (atoms=...) needs train_size mode")
            if len(atoms) != n_rows:
                raise InvalidParameterError(f"atoms has {len(atoms)} rows, expected {n_rows}")
        if self.train_size is not None and labels is not None:
            raise InvalidParameterError("labels cannot be balanced in train_size mode; pass labels=None")
        if groups is not None:
            groups = Groups(groups)
            if groups.n_rows != n_rows:
                raise InvalidParameterError(f"groups has {groups.n_rows} values, expected {n_rows}")
            return self._split_grouped(key, labels, lengths, atoms, groups, rng)
        if self.train_size is not None:
            return self._split_train_size(key, order, lengths, rng, atoms)

        def pick_eval(class_rows, n_eval, rng):
            return self._pick_eval_by_length(key, class_rows, lengths, n_eval, rng)

        return self._hold_out(order, labels, n_rows, rng, pick_eval=None if self.length_buckets is None else pick_eval)

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(validation_size=12, test_size=12, train_size=None, length_buckets=2, reverse=False,
                      random_state=3),
                 dict(signal=data["scores"], labels=data["labels"], lengths=data["lengths"]), True),
                (dict(validation_size=0.1, test_size=0.1, train_size=80, length_buckets=None, reverse=True,
                      random_state=3), dict(signal=data["scores"], lengths=data["lengths"]), True)]

    def _bucket_quotas(self, rows, lengths, target, rng):
        """Per bucket, (rows of the bucket in sort order, its rounded share of ``target``)."""
        buckets = quantile_buckets(lengths[rows], self.length_buckets)
        quotas = []
        for bucket in range(self.length_buckets):
            bucket_rows = rows[buckets == bucket]
            if bucket_rows.size == 0:
                continue
            exact = target * bucket_rows.size / rows.size
            # Stochastic rounding keeps the expected total right; the fix-up makes it exact.
            share = (target * bucket_rows.size) // rows.size + rng.binomial(1, exact % 1.0)
            quotas.append((bucket_rows, int(share)))
        return quotas

    def _pick_eval_by_length(self, key, class_rows, lengths, n_eval, rng):
        train_parts, eval_parts = [], []
        for bucket_rows, share in self._bucket_quotas(class_rows, lengths, n_eval, rng):
            # The reference sends a whole bucket to eval when share == 0 (a [-0:] slice); not here.
            bucket_train, bucket_eval = tail(bucket_rows, share)
            train_parts.append(bucket_train)
            eval_parts.append(bucket_eval)
        train = _sorted_by(key, np.concatenate(train_parts), descending=False)  # least likely first
        evaluation = _sorted_by(key, np.concatenate(eval_parts), descending=True)  # most likely first
        if len(evaluation) < n_eval:
            moved = n_eval - len(evaluation)
            evaluation = np.concatenate([train[:moved], evaluation])
            train = train[moved:]
        elif len(evaluation) > n_eval:
            moved = len(evaluation) - n_eval
            train = np.concatenate([train, evaluation[:moved]])
            evaluation = evaluation[moved:]
        return train, evaluation

    def _split_train_size(self, key, order, lengths, rng, atoms):
        n_rows = order.size
        train_size = resolve_size(self.train_size, n_rows)
        if not 0 < train_size < n_rows - 1:
            raise InvalidParameterError(
                f"train_size ({train_size}) must leave at least 2 of the {n_rows} rows for validation and test")
        if self.length_buckets is None:
            train = order[:train_size][::-1]  # least likely first
            evaluation = order[train_size:]  # most likely first
        else:
            train_parts, eval_parts = [], []
            for bucket_rows, share in self._bucket_quotas(order, lengths, train_size, rng):
                train_parts.append(bucket_rows[:share])
                eval_parts.append(bucket_rows[share:])
            train = _sorted_by(key, np.concatenate(train_parts), descending=False)
            evaluation = _sorted_by(key, np.concatenate(eval_parts), descending=True)
            if len(train) < train_size:
                moved = train_size - len(train)
                train = np.concatenate([evaluation[:moved], train])
                evaluation = evaluation[moved:]
            elif len(train) > train_size:
                moved = len(train) - train_size
                evaluation = np.concatenate([train[:moved], evaluation])
                train = train[moved:]
        self.atom_swaps_ = 0
        if atoms is not None:
            train, evaluation, self.atom_swaps_ = balance_atoms(train, evaluation, atoms)
            evaluation = np.asarray(evaluation, dtype=np.int64)
        # The reference shuffles the evaluation rows (most likely first) and gives the first half,
        # rounded down, to validation.
        n_dev = len(evaluation) // 2
        shuffled = evaluation[rng.permutation(len(evaluation))]
        return Split.of(train, shuffled[:n_dev], shuffled[n_dev:])


    def _split_grouped(self, key, labels, lengths, atoms, groups: Groups, rng) -> Split:
        """Whole groups, each placed by its mean score (and mean length with ``length_buckets``)."""
        order = np.argsort(-groups.mean(key), kind="stable")  # most likely group first
        buckets = None
        if self.length_buckets is not None:
            buckets = quantile_buckets(groups.mean(lengths), self.length_buckets)
        if self.train_size is not None:
            train_size = resolve_size(self.train_size, groups.n_rows)
            if buckets is None:
                train_groups, eval_groups = grouped_train_split(order, groups, train_size=train_size)
            else:  # each length bucket gives its share of train, its most likely groups first
                in_train = np.zeros(groups.n_groups, dtype=bool)
                for bucket in range(self.length_buckets):
                    members = order[buckets[order] == bucket]
                    share = round(train_size * groups.sizes[members].sum() / groups.n_rows)
                    taken = int(np.searchsorted(np.cumsum(groups.sizes[members]), share, side="left")) + 1
                    in_train[members[:min(taken, members.size)] if share else members[:0]] = True
                train_groups, eval_groups = order[in_train[order]][::-1], order[~in_train[order]]
                if eval_groups.size < 2:
                    raise InvalidParameterError(f"train_size ({train_size}) leaves fewer than 2 groups for "
                                                "validation and test")
            self.atom_swaps_ = 0
            if atoms is not None:
                train_groups, eval_groups, self.atom_swaps_ = balance_atoms(list(train_groups), list(eval_groups),
                                                                            groups.union(atoms))
            validation, test = divide_groups(eval_groups, groups, rng)
            return Split.of(groups.rows(train_groups), validation, test)
        validation_size, test_size = resolve_eval_sizes(self.validation_size, self.test_size, groups.n_rows)
        parts = None
        if buckets is not None:
            n_eval = validation_size + test_size
            parts = []
            for bucket in range(self.length_buckets):
                members = order[buckets[order] == bucket]
                if members.size:
                    parts.append((members, int(round(n_eval * groups.sizes[members].sum() / groups.n_rows))))
        label_codes = None if labels is None else encode_labels(labels, order="sorted")[0]
        return Split.of(*grouped_eval_split(order, groups, label_codes, validation_size=validation_size,
                                            test_size=test_size, rng=rng, parts=parts))


def class_groups(labels, n_rows: int) -> list:
    """``(label, rows)`` per class, classes in sorted order (one group of every row without labels)."""
    if labels is None:
        return [(None, np.arange(n_rows))]
    codes, classes = encode_labels(labels, order="sorted")
    return [(label, np.flatnonzero(codes == code)) for code, label in enumerate(classes)]


def _sorted_by(key, rows, *, descending):
    """``rows`` stably sorted by ``key`` (ties keep their current order, as pandas' mergesort)."""
    values = key[rows]
    return rows[np.argsort(-values if descending else values, kind="stable")]


def likelihood_configs(scores, *, labels=None, lengths=None, setting: str = "prompted", validation_size=0.1,
                       test_size=0.1, train_size=None, length_buckets=None, atoms=None, random_state=42,
                       baselines: bool = True, groups=None, group_field: str | None = None) -> list:
    """The configs this method contributes to a release, as :class:`~split_builders.api.ConfigSplit`
    (row numbers of ``scores``).

    ``setting`` is ``"prompted"`` (scores from a frozen, prompted LM: ``ll_split_pt*``) or
    ``"given"`` (scores supplied by the user: ``ll_split*``) or ``"finetuned"`` (k-fold cross-fitted
    fine-tuned scores: ``ll_split*``). Classification mode adds the paper's ``random`` and
    ``length`` baselines with the same evaluation sizes and seed (unless ``baselines=False``). ``atoms`` (one
    set per row, ``train_size`` mode) applies the atom constraint to every config. Each config's
    parameters are its splitter's ``get_params()`` plus the setting (and the atom swaps): what
    :func:`config_split` rebuilds it from. ``groups`` (one group number per row, from the column
    ``group_field``) keeps every group in one split of every config, baselines included; the config
    records it as ``grouped_by``.
    """
    from split_builders.splits import ConfigSplit

    if setting not in CONFIG_NAMES:
        raise InvalidParameterError(f"setting must be one of {sorted(CONFIG_NAMES)}, got {setting!r}")
    names = CONFIG_NAMES[setting]
    signal = dict(scores=scores, labels=labels, lengths=lengths, atoms=atoms, groups=groups)
    grouped = group_parameters(groups, group_field)
    whole = "" if groups is None else f"; rows sharing a `{group_field}` kept in one split"
    sizes = ({"train_size": train_size} if train_size is not None
             else {"validation_size": validation_size, "test_size": test_size})
    balanced = ", label-balanced" if labels is not None and train_size is None else ""
    # what the options ask of each split, which whole groups may miss (the build says by how much)
    requested = None if groups is None else (
        {"train": resolve_size(train_size, len(scores))} if train_size is not None
        else dict(zip(("validation", "test"), resolve_eval_sizes(validation_size, test_size, len(scores)))))
    variants = [("plain", None, False, "least likely examples held out")]
    if length_buckets is not None:
        variants.append(("length", length_buckets, False,
                         f"least likely examples held out within each of {length_buckets} word-length quantile buckets"))
    variants.append(("reverse", None, True, "most likely examples held out (train on the tail, evaluate on the head)"))
    configs = []
    for variant, buckets, reverse, what in variants:
        parameters = {**sizes, "length_buckets": buckets, "reverse": reverse, "random_state": random_state}
        split, splitter = config_split("likelihood", parameters, **signal)
        parameters = {**splitter.get_params(), "setting": setting, **grouped}
        if atoms is not None:
            parameters["atom_swaps"] = splitter.atom_swaps_
            what += f"; atom constraint met after {splitter.atom_swaps_} swap(s)"
        configs.append(ConfigSplit(names[variant], split.as_indices(), method="likelihood", parameters=parameters,
                                   description=f"Likelihood split ({SETTING_SCORES[setting]}): {what}{balanced}"
                                               f"{whole}.", requested=requested))
    if train_size is None and baselines:
        balanced = ", label-balanced." if labels is not None else "."
        for method, what in (("random", "random evaluation sets of the same sizes"),
                             ("length", "the longest queries held out")):
            split, splitter = config_split(method, {**sizes, "random_state": random_state}, **signal)
            description = f"Baseline: {what}{balanced}" if groups is None else f"Baseline: {what}{whole}."
            configs.append(ConfigSplit(method, split.as_indices(), method=method,
                                       parameters={**splitter.get_params(), **grouped}, description=description,
                                       requested=requested))
    return configs


SPLITTERS = {"likelihood": LikelihoodSplitter, "random": RandomSplitter, "length": LengthSplitter}
"""The splitter of each config ``method`` this family records."""


def config_split(method: str, parameters: dict, *, scores, labels=None, lengths=None, atoms=None, groups=None):
    """``(split, splitter)`` of one config: the splitter of ``method`` built from ``parameters`` (its
    ``get_params()``, as a config records them; other keys are ignored) and applied to the rows'
    signal. Labels balance the classification mode only; ``random`` needs only the row count;
    ``groups`` (group numbers per row) keeps each group in one split."""
    splitter_class = SPLITTERS[method]
    splitter = splitter_class(**{k: v for k, v in parameters.items() if k in splitter_class._param_names()})
    balance = None if method == "likelihood" and splitter.train_size is not None else labels
    return splitter.split(scores, labels=balance, lengths=lengths, atoms=atoms, groups=groups), splitter
