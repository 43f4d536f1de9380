"""Shared machinery of the splitters: size checks and label-balanced evaluation sets.

Godbole & Jia's generators (likelihood, length and random splits) all build evaluation sets the
same way, and resplit reproduces their random draws exactly:

* classes are taken in order of first appearance in the sorted order of the rows;
* class ``ci`` of ``C`` gets ``test // C`` test and ``dev // C`` dev rows, class 0 also the
  remainders;
* a method-specific rule picks the class's evaluation rows (for example its least likely rows);
* those rows are shuffled the way ``pandas.DataFrame.sample(frac=1, random_state=rng.bit_generator)``
  shuffles (a legacy ``RandomState`` over the generator's bit generator, so the draws interleave
  with the generator's own), and the first ``te`` go to test, the rest to dev.
"""

from __future__ import annotations

import math
import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.options import ROW_ORDERS  # the option's choices: one definition


def shuffle_split(n: int, test_size: float, random_state, *, allow_empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(train, test)`` of ``n`` items exactly as scikit-learn's
    ``train_test_split(shuffle=True, test_size=test_size, random_state=random_state)`` picks them.

    scikit-learn's ``ShuffleSplit`` draws ``RandomState(random_state).permutation(n)``; the first
    ``ceil(test_size * n)`` positions are the test part and the remaining ``n - ceil(test_size * n)``
    the train part (in permutation order). Like scikit-learn, an empty part is an error, unless
    ``allow_empty`` (a group too small to divide then goes wholly to test, or to train when
    ``test_size * n`` is 0).
    """
    if not 0.0 < float(test_size) < 1.0:
        raise InvalidParameterError(f"test_size must be a fraction in (0, 1), got {test_size!r}")
    n_test = int(math.ceil(test_size * n))
    n_train = n - n_test
    if (n_train == 0 or n_test == 0) and not allow_empty:
        raise InvalidParameterError(f"cannot split {n} item(s) with test_size={test_size}: one part is empty")
    permutation = np.random.RandomState(random_state).permutation(n)
    return permutation[n_test:], permutation[:n_test]


def as_labels(labels, n_rows: int) -> np.ndarray:
    """Labels as an object array of length ``n_rows`` (all one class when None)."""
    if labels is None:
        return np.zeros(n_rows, dtype=np.int64)
    labels = np.asarray(labels, dtype=object)
    if labels.shape != (n_rows,):
        raise InvalidParameterError(f"labels has {labels.shape[0] if labels.ndim else 0} values for {n_rows} rows")
    return labels


def classes_in_order(order: np.ndarray, labels: np.ndarray) -> list:
    """Distinct labels in order of first appearance along ``order``."""
    seen, classes = set(), []
    for label in labels[order]:
        if label not in seen:
            seen.add(label)
            classes.append(label)
    return classes


def reference_shuffle(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``rows`` reordered as ``DataFrame.sample(frac=1, random_state=rng.bit_generator)`` would."""
    permutation = np.random.RandomState(rng.bit_generator).permutation(len(rows))
    return rows[permutation]


def balanced_eval_split(order, labels, *, validation_size: int, test_size: int, rng, pick_eval):
    """Label-balanced dev/test sets; everything else is train.

    Parameters
    ----------
    order : ndarray of int
        Row numbers in the method's sort order (the rows picked for evaluation come last).
    labels : ndarray
        One label per row.
    validation_size, test_size : int
        Total sizes over all classes.
    rng : numpy.random.Generator
    pick_eval : callable
        ``pick_eval(class_rows, n_eval, rng) -> (train_rows, eval_rows)``, ``class_rows`` in sort order.

    Returns
    -------
    train, dev, test : ndarray of int
    """
    classes = classes_in_order(order, labels)
    n_classes = len(classes)
    train, dev, test = [], [], []
    for ci, label in enumerate(classes):
        class_rows = order[labels[order] == label]
        n_test = test_size // n_classes + (test_size % n_classes if ci == 0 else 0)
        n_dev = validation_size // n_classes + (validation_size % n_classes if ci == 0 else 0)
        n_eval = n_test + n_dev
        if n_eval >= len(class_rows):
            raise InvalidParameterError(
                f"class {label!r} has {len(class_rows)} rows but its share of the evaluation sets is "
                f"{n_eval} (dev {n_dev} + test {n_test}), which leaves no training row; "
                "lower validation_size / test_size"
            )
        class_train, class_eval = pick_eval(class_rows, n_eval, rng)
        class_eval = reference_shuffle(class_eval, rng)
        test.append(class_eval[:n_test])
        dev.append(class_eval[n_test:])
        train.append(class_train)
    return tuple(np.sort(np.concatenate(part)).astype(np.int64) for part in (train, dev, test))


def tail(rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Split ``rows`` into (all but the last ``n``, the last ``n``)."""
    cut = len(rows) - n
    return rows[:cut], rows[cut:]


# ---------------------------------------------------------------------------------------------
# The row order rule: what ties and random draws follow
# ---------------------------------------------------------------------------------------------

CONTENT, POSITION = ROW_ORDERS
"""The rules a release's configs may be built under (recorded as the option ``row_order``):

* ``content`` (resplit's default since the rule was recorded): every draw and every tie-break follows the
  rows' **content keys** (:func:`loading_scripts.tables.row_keys` with ``content=True``) and the seed, never
  their position, so the same rows in any order, through any reader, give the same configs;
* ``position``: the rows' order in the source, as the reference generators draw (BELUGA's division,
  CURRICULUM's sampler, Shaw et al.'s generators, the Likelihood Splits baselines) and as every release
  built before the rule was recorded (which therefore re-derive under it)."""


def recorded_row_order(parameters) -> str:
    """The rule a release was built under: its recorded ``row_order``, else ``position`` (a release from
    before the rule was recorded)."""
    value = (parameters or {}).get("row_order")
    return value if value in ROW_ORDERS else POSITION


def content_keys(table, fields, *, label=None, label_names=None) -> np.ndarray:
    """The rows' content keys (uint64, :func:`loading_scripts.tables.row_keys` with ``content=True``) over
    the text ``fields`` of ``table`` (a ``pyarrow.Table`` or ``datasets.Dataset``; a field named twice or
    None counts once) and, where given, the label: the column ``label`` of class ids (-1 or null: none)
    read as their names ``label_names``, so that a label hashes as its name whichever ids a reader gave it (a
    column of text is taken as the names themselves)."""
    import pyarrow as pa

    from loading_scripts.tables import arrow_table, row_keys

    fields = [f for f in dict.fromkeys(fields) if f is not None]
    if not isinstance(table, pa.Table):
        table = arrow_table(table, [*fields, *([label] if label is not None else [])])
    columns = {f"text{i}": table.column(f) for i, f in enumerate(fields)}
    kind = None if label is None else table.schema.field(label).type
    if kind is not None and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        columns["label"] = table.column(label)  # the names themselves (rows released before the one label policy)
    elif kind is not None:
        ids = np.asarray(table.column(label).to_numpy(zero_copy_only=False), dtype=np.float64)
        missing = ~np.isfinite(ids) | (ids < 0)
        ids = np.where(missing, 0, ids).astype(np.int64)
        names = pa.array([str(n) for n in label_names or ()], pa.string())
        columns["label"] = names.take(pa.array(ids, mask=missing)) if len(names) else pa.nulls(len(ids), pa.string())
    return row_keys(pa.table(columns), list(columns), content=True)


def source_content_keys(dataset, fields, *, label_field: str | None = None) -> np.ndarray:
    """:func:`content_keys` of a source's rows (a ``datasets.Dataset``): the text ``fields`` and the label
    field's values read as the classes they are released as (:func:`~loading_scripts.labels.label_names`,
    :func:`~loading_scripts.labels.class_ids`), so that the released rows give the same keys."""
    import pyarrow as pa

    from loading_scripts.labels import class_ids, label_names
    from loading_scripts.tables import arrow_table

    fields = [f for f in dict.fromkeys(fields) if f is not None]
    table = arrow_table(dataset, fields)
    if label_field is None:
        return content_keys(table, fields)
    names = label_names(dataset, label_field)
    table = table.append_column(_LABEL, pa.array(class_ids(dataset, label_field, names), pa.int64()))
    return content_keys(table, fields, label=_LABEL, label_names=names)


_LABEL = "\x00label"  # the label's class ids beside the text fields (a name no field has)


def content_order(keys, random_state) -> np.ndarray:
    """The rows' content order: a seeded draw from each row's content key, ascending (rows with the same
    key, that is the same content, keep their relative order). A permutation of ``range(len(keys))``;
    the rows' order in the input does not change which content comes where."""
    from loading_scripts.tables import mix64

    keys = np.asarray(keys, dtype=np.uint64)
    seed = np.random.SeedSequence().entropy if random_state is None else int(random_state)
    salt = mix64(np.asarray([seed % 2**64], dtype=np.uint64))[0]
    return np.argsort(mix64(keys ^ salt), kind="stable").astype(np.int64)


def take_rows(values, order: np.ndarray, *, groups: bool = False):
    """``values`` (one per row: an array, a list, or None) at ``order``. ``groups``: group numbers,
    renumbered in order of first appearance along ``order`` (what :func:`~split_builders.splitters.groups.
    group_codes` would number them), keeping what they record (``missing``, ``field``)."""
    if values is None:
        return None
    if groups:
        from split_builders.splitters.groups import GroupCodes, group_codes

        codes = np.asarray(values, dtype=np.int64)[order]
        return GroupCodes(group_codes(codes), missing=getattr(values, "missing", 0), field=getattr(values, "field", None))
    if isinstance(values, np.ndarray):
        return values[order]
    return [values[i] for i in order.tolist()]


def back_in_place(values, order: np.ndarray) -> np.ndarray:
    """Per-row values computed over the rows taken in ``order`` (a signal), back in the rows' own order."""
    values = np.asarray(values)
    out = np.empty_like(values)
    out[order] = values
    return out


def restore_rows(configs, order: np.ndarray) -> list:
    """Configs built over the rows taken in ``order`` (:func:`in_row_order`), their indices mapped back to
    the rows' own numbers (sorted). An index past the rows (``k * n + i``, a config over a copy of them:
    TMCD's wug-word variants) maps to the same copy."""
    n = order.size
    for config in configs:
        config.indices = {split: np.sort(order[rows % n] + (rows // n) * n).astype(np.int64)
                          for split, rows in ((s, np.asarray(v, dtype=np.int64)) for s, v in config.indices.items())}
    return configs


def in_row_order(build, keys, seed, /, *, per_row: dict, groups: str | None = None, row_numbers: tuple = (),
                 **arguments) -> list:
    """``build(**per_row, **arguments)``, a config builder, under the row order rule.

    ``keys`` None (the ``position`` rule): as it is. Content keys (one per row): the per-row inputs ``per_row``
    (``{argument: values}``; ``groups`` names the one holding group numbers) are taken in the rows'
    :func:`content_order` under ``seed``, the arguments named in ``row_numbers`` (row numbers, or dicts of
    them: published splits) are renumbered to match, the builder runs on them, and every config's
    indices are mapped back (:func:`restore_rows`). Any draw or tie-break the builder makes over row positions
    then follows the rows' content and the seed only."""
    if keys is None:
        return build(**per_row, **arguments)
    order = content_order(keys, seed)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    taken = {name: take_rows(values, order, groups=name == groups) for name, values in per_row.items()}
    for name in row_numbers:
        arguments[name] = _renumber(arguments.get(name), inverse)
    return restore_rows(build(**taken, **arguments), order)


def _renumber(value, inverse: np.ndarray):
    """Row numbers (an array, or dicts of them) as the same rows' numbers in the new order (sorted)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {key: _renumber(item, inverse) for key, item in value.items()}
    return np.sort(inverse[np.asarray(value, dtype=np.int64)])
