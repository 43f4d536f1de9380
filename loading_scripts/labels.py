"""The one label and text-column policy of released rows, the same in every family.

* **Label.** A declared label field (``--label-field``, or a named source's own) is released as the
  column ``label``, a ``datasets.ClassLabel`` (int64 class ids in the data, the names in the
  features that ``datasets`` writes into the Parquet schema metadata). Its names are in a stated
  order:

  - the source's ``ClassLabel`` order where the source has one (SNLI: entailment, neutral,
    contradiction; BoolQ: false, true; CURRICULUM's recast labels);
  - else the distinct label values as text (Python's ``str``), **sorted by that text** (Unicode
    code point order, the order :func:`encode_labels` numbers
    classes in): ``contradiction, entailment, neutral``; integers ``0, 1, 10, 2``.

  A row without a label (dropped by the readers before a build) would get class id -1, the
  ``ClassLabel`` convention for "no label".
* **Text.** Every ``large_string`` column is released as ``string`` (the type ``datasets`` gives
  text everywhere else); the values are unchanged.

Rows that already follow the policy (a ``ClassLabel`` named ``label``, no ``large_string`` column)
are returned as they are, so that their release files stay byte-identical.
"""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasets.table import InMemoryTable

from loading_scripts.errors import InvalidParameterError
from loading_scripts.tables import arrow_column, arrow_table

LABEL = "label"
"""The name of the released label column, in every family."""


def encode_labels(values, *, order: str = "sorted") -> tuple[np.ndarray, np.ndarray]:
    """The one label encoder: each row's class id (int64, ``0..C-1``) and the classes (an object
    array of the original values) in id order.

    ``order="sorted"``: classes sorted by their text (as ``np.unique`` of the labels as strings);
    ``order="first"``: in order of first appearance. Whole columns (``pandas.factorize``), no per-row
    Python; a missing label (None / NaN) is a class of its own.
    """
    import pandas as pd

    if order not in ("sorted", "first"):
        raise InvalidParameterError(f"order must be 'sorted' or 'first', got {order!r}")
    codes, classes = pd.factorize(np.asarray(values, dtype=object).reshape(-1), use_na_sentinel=False)
    classes = np.asarray(classes, dtype=object)
    codes = np.asarray(codes, dtype=np.int64)
    if order == "sorted" and classes.size:
        rank = np.argsort(np.asarray([str(c) for c in classes]), kind="stable")
        position = np.empty_like(rank)
        position[rank] = np.arange(rank.size)
        codes, classes = position[codes], classes[rank]
    return codes, classes


def label_names(dataset: datasets.Dataset, field: str) -> list[str]:
    """The class names of ``field`` in class-id order: a ``ClassLabel``'s own names, else the
    distinct non-missing values as text, sorted by that text (see the module docstring)."""
    feature = dataset.features[field]
    if isinstance(feature, datasets.ClassLabel):
        return list(feature.names)
    distinct = pc.unique(arrow_column(dataset, field).drop_null()).to_pylist()
    return sorted({str(value) for value in distinct})


def class_ids(dataset: datasets.Dataset, field: str, names: list[str]) -> np.ndarray:
    """Each row's class id (int64) under ``names`` (:func:`label_names`); -1 for a missing label.
    Whole columns: the distinct values are named once, the rows mapped with one Arrow lookup."""
    column = arrow_column(dataset, field)
    if isinstance(dataset.features[field], datasets.ClassLabel):
        return np.asarray(pc.fill_null(column, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    distinct = pc.unique(column.drop_null())
    position = {name: i for i, name in enumerate(names)}
    # one more entry, -1, for a missing label (index_in gives null, filled with that entry's index)
    ids = np.asarray([position[str(value)] for value in distinct.to_pylist()] + [-1], dtype=np.int64)
    where = pc.fill_null(pc.index_in(column, value_set=distinct), len(distinct))
    return ids[np.asarray(where.to_numpy(zero_copy_only=False), dtype=np.int64)]


def check_label_name(columns, label_field: str | None, *, name: str) -> None:
    """Refuse a table that has a column ``label`` besides a label field of another name: the label
    field is released as ``label`` and the two would collide."""
    if label_field is not None and label_field != LABEL and LABEL in columns:
        raise InvalidParameterError(
            f"{name} has a column {LABEL!r} besides the label field {label_field!r}; released rows name the label "
            f"{LABEL!r}: rename or drop the other {LABEL!r} column, or give --label-field {LABEL}")


def release_rows(dataset: datasets.Dataset, *, label_field: str | None = None) -> datasets.Dataset:
    """``dataset`` as released: the label field as the ``ClassLabel`` column ``label`` (in its place,
    names from :func:`label_names`) and ``large_string`` columns as ``string``. Returns ``dataset``
    itself when nothing changes."""
    features = dataset.features
    relabel = label_field is not None and not (label_field == LABEL
                                               and isinstance(features[LABEL], datasets.ClassLabel))
    large = [f for f, feature in features.items() if isinstance(feature, datasets.Value)
             and feature.dtype == "large_string"]
    if not relabel and not large:
        return dataset
    if label_field is not None:
        check_label_name(dataset.column_names, label_field, name="the rows")
    table = arrow_table(dataset)
    new_features = {}
    for position, field in enumerate(table.column_names):
        feature = features[field]
        if relabel and field == label_field:
            names = label_names(dataset, field)
            ids = pa.array(class_ids(dataset, field, names), pa.int64())
            table = table.set_column(position, LABEL, ids)
            new_features[LABEL] = datasets.ClassLabel(names=[str(n) for n in names])
        elif field in large:
            table = table.set_column(position, field, pc.cast(table.column(field), pa.string()))
            new_features[field] = datasets.Value("string")
        else:
            new_features[field] = feature
    info = dataset.info.copy()
    info.features = datasets.Features(new_features)
    table = table.cast(info.features.arrow_schema)
    # A fingerprint of our own: ``datasets`` would hash the whole table for one.
    return datasets.Dataset(InMemoryTable(table), info=info, fingerprint=f"resplit-release-rows-{len(dataset)}")


def label_column(table: pa.Table, recorded: str | None):
    """The label column of released rows read back (``verify``): the recorded label field where
    the rows have it (releases built before the one label policy: ``gold_label``), else ``label``;
    None when neither is there."""
    if recorded is not None and recorded in table.column_names:
        return recorded
    return LABEL if LABEL in table.column_names else None
