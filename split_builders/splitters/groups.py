"""Whole groups: rows that share a value of ``--group-field`` never straddle train / validation / test.

A per-example split of a source whose examples come in groups (SNLI's three hypotheses per premise,
BoolQ's questions per passage, Spider's questions per database) puts members of one group on both
sides, and a model can score the evaluation rows by what it memorised of the group in train. With a
group field every family keeps its own rule but applies it to groups:

* :func:`group_codes` / :func:`column_groups` number the groups. **One policy for missing values in
  every family**: a row whose value is missing (null, NaN, empty text) is a group of its own (it may sit
  in any split); the configs record how many (``missing_group_values``), and the terminal and the card say
  it (:func:`size_gaps`); a field with no value at all is refused (nothing to keep together);
* :class:`Groups` aggregates per-row values to groups (mean score, mean length, label counts, the
  union of atoms) and expands chosen groups back to sorted rows;
* :func:`grouped_eval_split` is the grouped counterpart of
  :func:`split_builders.splitters.partition.balanced_eval_split`: whole groups are taken for
  evaluation from the end of the method's order (the least likely, the longest, a random order)
  until the evaluation sizes are reached, keeping the label balance as close as whole groups allow,
  then divided into validation and test by a seeded shuffle of the groups.

Sizes are met as closely as whole groups allow: a split may hold up to one group's rows more than
asked, which the card's size table shows.
"""

from __future__ import annotations

import numpy as np

from split_builders.errors import FieldError, InvalidParameterError


class GroupCodes(np.ndarray):
    """Group numbers (int64, one per row) that also say how many rows had no value (``missing``), each a
    group of its own; a config builder records that count (:func:`group_parameters`). A slice or a copy
    made by arithmetic is a plain set of numbers (``missing`` 0)."""

    def __new__(cls, codes, *, missing: int = 0, field: str | None = None):
        array = np.asarray(codes, dtype=np.int64).view(cls)
        array.missing, array.field = int(missing), field
        return array

    def __array_finalize__(self, obj):
        self.missing, self.field = 0, None


def missing_mask(values) -> np.ndarray:
    """True for each value that is missing: None, NaN or text that is empty or only whitespace."""
    import pandas as pd

    values = np.asarray(values, dtype=object).reshape(-1)
    blank = np.fromiter((isinstance(v, str) and not v.strip() for v in values), dtype=bool, count=values.size)
    return np.asarray(pd.isna(values), dtype=bool) | blank


def group_codes(values) -> np.ndarray:
    """The group number (int64, ``0..G-1`` in order of first appearance) of every row; rows whose
    value is missing (None, NaN, empty text) are each a group of their own."""
    import pandas as pd

    values = np.asarray(values, dtype=object).reshape(-1)
    missing = np.flatnonzero(missing_mask(values))
    if missing.size:
        values = values.copy()
        for row in missing.tolist():  # a key no present value can equal: a group of one row
            values[row] = ("resplit: missing group value", row)
    codes, _ = pd.factorize(values)
    return codes.astype(np.int64)


def column_groups(dataset, field: str, *, source: str | None = None, label_field: str | None = None) -> np.ndarray:
    """Group numbers of ``dataset``'s ``field`` column (a ``datasets.Dataset``), a :class:`GroupCodes`; refuses
    a missing field (naming the available ones), a list or struct column, the label field (``label_field``:
    whole classes in one split) and a field with no value in any row."""
    from loading_scripts.tables import arrow_column

    if field not in dataset.column_names:
        raise FieldError(field, dataset.column_names, role="group", source=source)
    if label_field is not None and field == label_field:
        raise InvalidParameterError(f"--group-field {field!r} is the label field: every row of a class would go to "
                                    "one split (evaluation sets of one class, or none); group by a field that "
                                    "several examples share, e.g. the premise or the passage")
    column = arrow_column(dataset, field)
    import pyarrow as pa

    if pa.types.is_nested(column.type):
        raise InvalidParameterError(f"group field {field!r} holds {column.type} values; a group field must hold "
                                    "one text or number per row")
    values = column.to_numpy(zero_copy_only=False)
    missing = int(missing_mask(values).sum())
    if values.size and missing == values.size:
        raise InvalidParameterError(f"group field {field!r} has no value in any of the {values.size} rows"
                                    f"{f' of {source}' if source else ''} (all null or empty): there is nothing to "
                                    "keep together; choose a field with values, or leave out --group-field")
    return GroupCodes(group_codes(values), missing=missing, field=field)


def group_parameters(groups, group_field: str | None) -> dict:
    """What a grouped config records of its groups: ``grouped_by`` (the field) and, where some rows had no
    value, ``missing_group_values`` (how many: each is a group of its own); nothing without groups."""
    if groups is None:
        return {}
    missing = int(getattr(groups, "missing", 0) or 0)
    return {"grouped_by": group_field, **({"missing_group_values": missing} if missing else {})}


def fold_groups(values) -> list:
    """The values that group rows into cross-fitting folds, under the same policy: a missing value is a group
    of its own (a unique key in its place); the values themselves where none is missing."""
    values = list(values)
    missing = np.flatnonzero(missing_mask(np.asarray(values, dtype=object)))
    for row in missing.tolist():
        values[row] = f"\x00resplit: no group value, row {row}"
    return values


class Groups:
    """The groups of the rows (``codes``: one group number per row).

    Parameters
    ----------
    codes : array-like of int, shape (n_rows,)
        ``0..G-1``, as :func:`group_codes` numbers them.
    """

    def __init__(self, codes):
        codes = np.asarray(codes, dtype=np.int64).reshape(-1)
        if codes.size == 0:
            raise InvalidParameterError("groups must hold one group number per row")
        if codes.min() < 0:
            raise InvalidParameterError("group numbers must be non-negative")
        self.codes = codes
        self.sizes = np.bincount(codes)
        self.n_groups = int(self.sizes.size)

    @property
    def n_rows(self) -> int:
        return int(self.codes.size)

    def mean(self, values) -> np.ndarray:
        """The mean of ``values`` (one per row) over each group's rows."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != self.codes.shape:
            raise InvalidParameterError(f"expected {self.n_rows} values, one per row, got shape {values.shape}")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(self.codes, weights=values, minlength=self.n_groups) / self.sizes

    def label_counts(self, label_codes, n_classes: int) -> np.ndarray:
        """``(n_groups, n_classes)`` rows of each class in each group."""
        flat = self.codes * n_classes + np.asarray(label_codes, dtype=np.int64)
        return np.bincount(flat, minlength=self.n_groups * n_classes).reshape(self.n_groups, n_classes)

    def rows(self, group_ids) -> np.ndarray:
        """The sorted row numbers of the groups ``group_ids``."""
        chosen = np.zeros(self.n_groups, dtype=bool)
        chosen[np.asarray(group_ids, dtype=np.int64)] = True
        return np.flatnonzero(chosen[self.codes]).astype(np.int64)

    def union(self, per_row) -> list:
        """The union of each group's rows' sets (``per_row[i]`` a set), one frozenset per group."""
        out = [set() for _ in range(self.n_groups)]
        for row, group in enumerate(self.codes.tolist()):
            out[group].update(per_row[row])
        return [frozenset(s) for s in out]

    def straddling(self, split) -> int:
        """How many groups have rows in more than one part of ``split`` (a mapping of part ->
        rows, or a tuple of row arrays): zero for a grouped split."""
        parts = split.values() if isinstance(split, dict) else split
        seen = np.zeros(self.n_groups, dtype=np.int64)
        for rows in parts:
            rows = np.asarray(rows, dtype=np.int64)
            if rows.size:
                seen += np.bincount(np.unique(self.codes[rows]), minlength=self.n_groups)
        return int((seen > 1).sum())


def _take(order, counts, sizes, n_target: int, class_targets, taken) -> int:
    """Walk the group ids ``order`` (best first) and mark in ``taken`` each group whose label counts
    fit under ``class_targets`` (decremented in place) until ``n_target`` rows are taken; then, if
    short, take further groups in order regardless of labels. Returns the rows taken."""
    total = 0
    targets = [int(t) for t in class_targets]
    rows_of = sizes.tolist()
    per_class = counts.tolist()
    for group in order.tolist():
        if total >= n_target:
            break
        if taken[group]:
            continue
        need = per_class[group]
        if all(n <= t for n, t in zip(need, targets)):
            taken[group] = True
            total += rows_of[group]
            targets = [t - n for n, t in zip(need, targets)]
    for group in order.tolist():  # what labels alone could not fill
        if total >= n_target:
            break
        if not taken[group]:
            taken[group] = True
            total += rows_of[group]
    return total


def grouped_eval_split(order, groups: Groups, label_codes=None, *, validation_size: int, test_size: int, rng,
                       parts=None):
    """Validation and test sets of whole groups; everything else is train.

    Parameters
    ----------
    order : ndarray of int
        Group ids in the method's order, the groups to hold out last (least likely last, longest
        last, ...).
    groups : Groups
    label_codes : ndarray of int, optional
        Each row's class (``0..C-1``). Each class gets ``size // C`` rows of each evaluation set as
        far as whole groups allow (groups whose labels would overfill a class are passed over, then
        used if the sizes cannot be reached otherwise).
    validation_size, test_size : int
        Rows wanted in each evaluation set (met up to one group's rows more).
    rng : numpy.random.Generator
        Shuffles the held-out groups before they are divided into test and validation.
    parts : list of (ndarray, int), optional
        Instead of one walk along ``order``: ``(group ids in order, rows wanted)`` per part (length
        buckets), each walked on its own; a final walk along ``order`` tops up what they left short.

    Returns
    -------
    train, validation, test : ndarray of int
        Sorted row numbers.
    """
    order = np.asarray(order, dtype=np.int64)
    n_classes = 1 if label_codes is None else int(np.max(label_codes)) + 1
    counts = groups.label_counts(np.zeros(groups.n_rows, dtype=np.int64) if label_codes is None else label_codes,
                                 n_classes)
    n_eval = validation_size + test_size
    if n_eval >= groups.n_rows:
        raise InvalidParameterError(f"validation_size ({validation_size}) + test_size ({test_size}) must be smaller "
                                    f"than the number of rows ({groups.n_rows})")
    held = np.zeros(groups.n_groups, dtype=bool)
    tail_first = order[::-1]
    total = 0
    for part_order, wanted in parts or [(order, n_eval)]:
        part_order = np.asarray(part_order, dtype=np.int64)[::-1]
        total += _take(part_order, counts, groups.sizes, wanted, [wanted // n_classes] * n_classes, held)
    if total < n_eval:
        remaining = [max(0, n_eval // n_classes - int(c)) for c in counts[held].sum(axis=0)]
        total += _take(tail_first, counts, groups.sizes, n_eval - total, remaining, held)
    if held.all():
        raise InvalidParameterError(f"the evaluation sets ({n_eval} rows) take every group: no training row is left "
                                    "(lower validation_size / test_size)")
    held_ids = np.flatnonzero(held)
    shuffled = held_ids[rng.permutation(held_ids.size)]
    in_test = np.zeros(groups.n_groups, dtype=bool)
    _take(shuffled, counts, groups.sizes, test_size, [test_size // n_classes] * n_classes, in_test)
    if held_ids.size > 1 and in_test[held_ids].all():  # keep a validation group when there are two
        in_test[shuffled[-1]] = False
    test = groups.rows(np.flatnonzero(in_test))
    validation = groups.rows(np.flatnonzero(held & ~in_test))
    train = groups.rows(np.flatnonzero(~held))
    return train, validation, test


def grouped_train_split(order, groups: Groups, *, train_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Semantic-parsing mode: whole groups from the front of ``order`` (the most likely first) train
    until ``train_size`` rows are reached; ``(train group ids in order, evaluation group ids in
    order)``, train least likely first and evaluation most likely first, as the row version."""
    order = np.asarray(order, dtype=np.int64)
    cumulative = np.cumsum(groups.sizes[order])
    n_train_groups = int(np.searchsorted(cumulative, train_size, side="left")) + 1
    n_train_groups = min(n_train_groups, order.size - 1)
    if n_train_groups < 1 or order.size - n_train_groups < 2:
        raise InvalidParameterError(f"train_size ({train_size}) leaves fewer than 2 groups for validation and test; "
                                    f"there are {order.size} groups")
    return order[:n_train_groups][::-1], order[n_train_groups:]


def divide_groups(group_ids, groups: Groups, rng, *, first_share: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Shuffle ``group_ids`` and cut them where ``first_share`` of their rows (rounded down) is
    reached: ``(first rows, second rows)``, sorted (validation and test halves of held-out groups)."""
    group_ids = np.asarray(group_ids, dtype=np.int64)
    shuffled = group_ids[rng.permutation(group_ids.size)]
    wanted = int(groups.sizes[group_ids].sum() * first_share)
    cumulative = np.cumsum(groups.sizes[shuffled])
    cut = int(np.searchsorted(cumulative, wanted, side="right"))
    cut = min(max(cut, 1 if shuffled.size > 1 else 0), shuffled.size - 1 if shuffled.size > 1 else shuffled.size)
    return groups.rows(shuffled[:cut]), groups.rows(shuffled[cut:])


SIZE_TOLERANCE = 0.05
"""How far (a share of the requested rows) whole groups may move a split's size before the build says so."""


def size_gaps(configs, *, tolerance: float = SIZE_TOLERANCE) -> list[str]:
    """What whole groups did to the configs, one line each, which the terminal and the card say: how many rows
    had no group value (each a group of its own, :func:`group_parameters`); each config whose whole groups made
    a split's size differ from the one its options asked for
    (:attr:`~split_builders.splits.ConfigSplit.requested`) by more than ``tolerance`` of it, e.g.
    ``ll_split: validation 130 rows for 197 requested, test 367 for 197``; and configs that came out holding the
    same evaluation rows (:func:`identical_configs`: a field too coarse to tell them apart)."""
    lines = []
    missing = {(c.parameters.get("grouped_by"), c.parameters.get("missing_group_values"))
               for c in configs if c.parameters.get("missing_group_values")}
    for field, count in sorted(missing, key=str):
        lines.append(f"{count} row(s) have no `{field}` value (null or empty): each is a group of its own")
    for config in configs:
        gaps = [(split, len(config.indices.get(split, ())), int(wanted))
                for split, wanted in (config.requested or {}).items()
                if abs(len(config.indices.get(split, ())) - int(wanted)) > tolerance * int(wanted)]
        if gaps:
            lines.append(f"{config.name}: " + ", ".join(f"{split} {got} rows for {wanted} requested"
                                                       for split, got, wanted in gaps))
    for names in identical_configs([c for c in configs if c.parameters.get("grouped_by")]):
        shown = ", ".join(f"`{n}`" for n in names[:-1]) + f" and `{names[-1]}`"
        lines.append(f"{shown} hold the same validation and test rows: they test the same thing")
    return lines


def identical_configs(configs) -> list[list[str]]:
    """Names of the configs (two or more) whose validation and test splits hold the same rows (the same
    ``membership_sha256`` of each), among configs over the same rows; in config order."""
    from split_builders.splits import membership_sha256

    same = {}
    for config in configs:
        evaluation = [s for s in ("validation", "test") if len(config.indices.get(s, ()))]
        if not evaluation:
            continue
        key = (id(config.rows), tuple((s, membership_sha256(config.indices[s])) for s in evaluation))
        same.setdefault(key, []).append(config.name)
    return [names for names in same.values() if len(names) > 1]
