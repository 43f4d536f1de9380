"""A table held in memory (a pandas ``DataFrame``, a ``datasets.Dataset`` or ``DatasetDict``, ...) as a source file.

:func:`table_file` writes the table as one Parquet file named by its content, so that a build reads it
through the same readers as ``--source FILE`` (the same field detection, filters, templates and
defaults as the command line) and the same table always gives the same file. What is accepted
(:func:`is_table`, :data:`ACCEPTED`): a ``DataFrame``; a ``Dataset``, ``DatasetDict``, ``IterableDataset`` or
``IterableDatasetDict`` (an iterable one is read whole into memory); a list of dicts, one per row; a pandas
``Series``, a one-dimensional numpy array or a list of texts, read as one column (the ``Series``' name, else
``text``). A ``DatasetDict``'s splits are concatenated in their order with a ``source_split`` column naming
each row's split (as the Hub readers do); rows that already have a ``source_split`` column keep it, and the
split names go to ``datasetdict_split`` instead. SNLI as the Hub publishes it (``premise``, ``hypothesis`` and
a ``label`` that is a ``ClassLabel`` entailment / neutral / contradiction, integer codes 0 / 1 / 2 of them
with -1 for no gold label, or those names with ``-``) is written in the official file layout
(``sentence1``, ``sentence2``, ``gold_label``; no gold label as ``-``), which the SNLI reader recognises, as
``--source snli`` reads it, unless the caller names fields of its own (``layout=False``).

A text that cannot be written as UTF-8 (a lone surrogate such as ``'\\ud800'``) is refused in one line naming
its row and column.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from loading_scripts.errors import InvalidParameterError
from loading_scripts.tables import LONE_SURROGATE, arrow_table, unencodable_text

SNLI_LABELS = ("entailment", "neutral", "contradiction")
SOURCE_SPLIT = "source_split"
DICT_SPLIT = "datasetdict_split"  # a DatasetDict's split names, where its rows already have a source_split
SPLIT_COLUMNS = (SOURCE_SPLIT, DICT_SPLIT)  # the columns that name the split a row came from (readers keep them)
TEXT_COLUMN = "text"  # the column of a Series without a name, an array or a list of texts
ACCEPTED = ("a file or folder, a bundled sample or Hub id, a pandas DataFrame, a datasets.Dataset / DatasetDict / "
            "IterableDataset, a list of dicts (one per row), or a pandas Series / numpy array / list of texts")


def _pandas():
    import pandas as pd

    return pd


def is_table(data) -> bool:
    """Whether ``data`` is a table held in memory that :func:`table_file` writes (see the module docstring)."""
    if isinstance(data, (datasets.Dataset, datasets.DatasetDict, datasets.IterableDataset,
                         datasets.IterableDatasetDict, np.ndarray)):
        return True
    pd = _pandas()
    if isinstance(data, (pd.DataFrame, pd.Series)):
        return True
    if isinstance(data, (list, tuple)) and data:
        return all(isinstance(row, Mapping) for row in data) or all(isinstance(row, str) for row in data)
    return False


def describe(data) -> str:
    """The user's object in words, for a message: ``your DataFrame``, ``your Dataset``, ``your list of dicts``."""
    pd = _pandas()
    kinds = ((pd.DataFrame, "DataFrame"), (pd.Series, "Series"), (np.ndarray, "array"),
             (datasets.DatasetDict, "DatasetDict"), (datasets.IterableDatasetDict, "IterableDatasetDict"),
             (datasets.Dataset, "Dataset"), (datasets.IterableDataset, "IterableDataset"))
    for kind, name in kinds:
        if isinstance(data, kind):
            return f"your {name}"
    if isinstance(data, (list, tuple)) and data and all(isinstance(row, Mapping) for row in data):
        return f"your {type(data).__name__} of dicts"
    if isinstance(data, (list, tuple)) and data and all(isinstance(row, str) for row in data):
        return f"your {type(data).__name__} of texts"
    return f"your {type(data).__name__}"


def _kind_of(data) -> str:
    """What an object that is not accepted is, in words (``a list of int``, ``an empty list``, ``a dict``)."""
    if isinstance(data, (list, tuple)):
        if not data:
            return f"an empty {type(data).__name__}"
        kinds = sorted({type(row).__name__ for row in data})
        return f"a {type(data).__name__} of {' and '.join(kinds[:3])}" + (" ..." if len(kinds) > 3 else "")
    return f"a {type(data).__name__}"


def as_arrow(data) -> pa.Table:
    """The rows of a table held in memory (see the module docstring) as one Arrow table with their features
    (``ClassLabel`` names included) in the schema's metadata."""
    if isinstance(data, datasets.IterableDatasetDict):
        data = datasets.DatasetDict({name: _materialised(part) for name, part in data.items()})
    if isinstance(data, datasets.IterableDataset):
        data = _materialised(data)
    if isinstance(data, datasets.DatasetDict):
        if not data:
            raise InvalidParameterError("your DatasetDict has no splits: give at least one")
        parts = [(name, as_arrow(part)) for name, part in data.items()]
        # The split names go to source_split, unless the rows already name a split there (a Hub reader's column,
        # an earlier release's rows): theirs is kept, and the DatasetDict's names go beside it.
        column = DICT_SPLIT if any(SOURCE_SPLIT in table.column_names for _, table in parts) else SOURCE_SPLIT
        if any(column in table.column_names for _, table in parts):
            raise InvalidParameterError(f"the rows of your DatasetDict already have columns {SOURCE_SPLIT!r} and "
                                        f"{DICT_SPLIT!r}, where the name of each row's split would go; rename one")
        parts = [table.append_column(column, pa.array([str(name)] * table.num_rows, pa.string()))
                 for name, table in parts]
        try:
            return pa.concat_tables(parts)
        except pa.ArrowInvalid as error:
            raise InvalidParameterError(f"your DatasetDict's splits have different columns or types ({error}); "
                                        "give one split, or make their features the same") from None
    if isinstance(data, datasets.Dataset):
        table = arrow_table(data)
        return table.replace_schema_metadata(data.features.arrow_schema.metadata)
    pd = _pandas()
    if isinstance(data, pd.Series):
        name = TEXT_COLUMN if data.name is None else str(data.name)
        return _frame_table(data.to_frame(name=name), "your Series")
    if isinstance(data, np.ndarray):
        if data.ndim != 1 or data.dtype.kind not in "OUS":
            raise InvalidParameterError(f"your array ({data.ndim}-dimensional, {data.dtype}) is read as one column of "
                                        "texts, so it must be a one-dimensional array of strings; give a pandas "
                                        "DataFrame (or a list of dicts) for rows of several fields")
        return _frame_table(pd.DataFrame({TEXT_COLUMN: pd.Series(list(data), dtype=object)}), "your array")
    if isinstance(data, pd.DataFrame):
        return _frame_table(data, "your DataFrame")
    if is_table(data):  # a list of dicts (one per row) or of texts
        what = describe(data)
        if isinstance(data[0], str):
            return _frame_table(pd.DataFrame({TEXT_COLUMN: pd.Series(list(data), dtype=object)}), what)
        rows = [dict(row) for row in data]
        try:
            frame = pd.DataFrame(rows)
        except UnicodeEncodeError:  # pandas' own string columns cannot hold a lone surrogate either
            frame = pd.DataFrame(rows, dtype=object)
        return _frame_table(frame, what)
    raise InvalidParameterError(f"a source is {ACCEPTED}; got {_kind_of(data)}")


def _materialised(data: datasets.IterableDataset) -> datasets.Dataset:
    """An ``IterableDataset`` read whole into memory, its features kept where it declares them."""
    rows = list(data)
    if not rows:
        raise InvalidParameterError("your IterableDataset yields no rows")
    try:
        return datasets.Dataset.from_list(rows, features=data.features)
    except (pa.ArrowException, TypeError, ValueError) as error:
        raise InvalidParameterError(f"your IterableDataset's rows cannot be read as a table ({error}); give rows of "
                                    "text, numbers or lists of them") from None


def _frame_table(frame, what: str) -> pa.Table:
    """A ``DataFrame`` (or what was turned into one) as an Arrow table, refused in one line naming ``what`` where
    it cannot be one."""
    if frame.columns.duplicated().any():
        raise InvalidParameterError(f"{what} has duplicate column names: "
                                    + ", ".join(map(str, frame.columns[frame.columns.duplicated()])))
    try:
        dataset = datasets.Dataset.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as error:
        unwritable = _unwritable_text(frame, what)
        if unwritable:
            raise InvalidParameterError(unwritable) from None
        raise InvalidParameterError(f"{what} cannot be read as a table ({error}); give columns of text, numbers or "
                                    "lists of them") from None
    return as_arrow(dataset)


def _unwritable_text(frame, what: str) -> str | None:
    """The one line for the first text of ``frame`` that UTF-8 cannot hold (a lone surrogate, as a wrongly
    decoded file or ``surrogateescape`` leaves; :func:`~loading_scripts.tables.unencodable_text`), naming its row and
    column; None when there is none."""
    found = unencodable_text({column: frame[column].tolist() for column in frame.columns
                              if frame[column].dtype == object})
    if found is None:
        return None
    column, position, character, offset = found
    if position is None:
        return f"a column name of {what} ({column!r}) holds {character!r} at character {offset}, {LONE_SURROGATE}"
    label = frame.index[position]
    row = f"row {position}" + (f" (index {label!r})" if label != position else "")
    return f"{row} of column {column!r} of {what} holds {character!r} at character {offset}, {LONE_SURROGATE}"


def official_layout(table: pa.Table) -> pa.Table:
    """SNLI in the Hub's layout as the official file layout (see the module docstring); other tables as they are."""
    gold = _snli_gold_labels(table)
    if gold is None:
        return table
    columns = {"sentence1": table.column("premise"), "sentence2": table.column("hypothesis"), "gold_label": gold}
    columns.update({name: table.column(name) for name in table.column_names
                    if name not in ("premise", "hypothesis", "label")})
    return pa.table(columns)


def _snli_gold_labels(table: pa.Table):
    """The ``gold_label`` column (names, ``-`` for none) of a table in SNLI's Hub layout, else None: ``premise``,
    ``hypothesis`` and a ``label`` that is SNLI's ``ClassLabel``, integer codes of it (0, 1 and 2 all present,
    -1 or null for no gold label) or its names (with ``-`` for none)."""
    if not {"premise", "hypothesis", "label"} <= set(table.column_names):
        return None
    features = datasets.Features.from_arrow_schema(table.schema) if table.schema.metadata else None
    feature = features.get("label") if features else None
    column = table.column("label").combine_chunks()
    if isinstance(feature, datasets.ClassLabel):
        if tuple(feature.names) != SNLI_LABELS:
            return None
    elif pa.types.is_integer(column.type):
        values = set(column.drop_null().to_pylist())
        if not ({0, 1, 2} <= values <= {-1, 0, 1, 2}):
            return None
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        values = set(column.to_pylist())
        if not (values & set(SNLI_LABELS) and values <= {*SNLI_LABELS, "-", None}):
            return None
        return column.cast(pa.string()).fill_null("-")
    else:
        return None
    codes = column.fill_null(-1).to_pylist()
    return pa.array([SNLI_LABELS[c] if 0 <= c < len(SNLI_LABELS) else "-" for c in codes], pa.string())


def source_table(data, *, layout: bool = True) -> pa.Table:
    """The rows of ``data`` as the table :func:`table_file` writes: :func:`as_arrow`, in SNLI's official layout
    where it is SNLI in the Hub's (``layout``), refused when it has no rows."""
    table = as_arrow(data)
    if layout:
        table = official_layout(table)
    if table.num_rows == 0:
        raise InvalidParameterError(f"{describe(data)} has no rows")
    return table


def write_table_file(table: pa.Table, folder) -> Path:
    """``table`` written as ``<folder>/table-<sha256 prefix>.parquet`` (the hash of the file's bytes), and its
    path: the same table gives the same file, written once (atomically: a temporary file, then a rename)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".table-", suffix=".parquet", dir=folder)
    os.close(handle)
    try:
        pq.write_table(table, temporary)
        digest = hashlib.sha256(Path(temporary).read_bytes()).hexdigest()
        path = folder / f"table-{digest[:16]}.parquet"
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return path


def table_file(data, folder, *, layout: bool = True) -> Path:
    """``data`` (:func:`source_table`) written as one Parquet file named by its content (:func:`write_table_file`)."""
    return write_table_file(source_table(data, layout=layout), folder)
