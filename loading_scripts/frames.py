"""A table held in memory (a pandas ``DataFrame``, a ``datasets.Dataset`` or ``DatasetDict``) as a source file.

:func:`table_file` writes the table as one Parquet file named by its content, so that a build reads it
through the same readers as ``--source FILE`` (the same field detection, filters, templates and
defaults as the command line) and the same table always gives the same file. A ``DatasetDict``'s splits
are concatenated in their order with a ``source_split`` column naming each row's split (as the Hub
readers do). SNLI as the Hub publishes it (``premise``, ``hypothesis`` and a ``label`` ``ClassLabel``
entailment / neutral / contradiction) is written in the official file layout (``sentence1``,
``sentence2``, ``gold_label``; a label of -1 as ``-``, no gold label), which the SNLI reader recognises,
as ``--source snli`` reads it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from loading_scripts.errors import InvalidParameterError
from loading_scripts.tables import arrow_table

SNLI_LABELS = ("entailment", "neutral", "contradiction")
SOURCE_SPLIT = "source_split"


def is_table(data) -> bool:
    """Whether ``data`` is a table held in memory (what :func:`table_file` writes)."""
    if isinstance(data, (datasets.Dataset, datasets.DatasetDict)):
        return True
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return False
    return isinstance(data, pd.DataFrame)


def as_arrow(data) -> pa.Table:
    """The rows of a ``DataFrame``, ``Dataset`` or ``DatasetDict`` as one Arrow table with their features
    (``ClassLabel`` names included) in the schema's metadata."""
    if isinstance(data, datasets.DatasetDict):
        if not data:
            raise InvalidParameterError("the DatasetDict has no splits: give at least one")
        parts = []
        for name, part in data.items():
            table = as_arrow(part)
            parts.append(table.append_column(SOURCE_SPLIT, pa.array([str(name)] * table.num_rows, pa.string())))
        try:
            return pa.concat_tables(parts)
        except pa.ArrowInvalid as error:
            raise InvalidParameterError(f"the DatasetDict's splits have different columns or types ({error}); "
                                        "give one split, or make their features the same") from None
    if isinstance(data, datasets.Dataset):
        table = arrow_table(data)
        return table.replace_schema_metadata(data.features.arrow_schema.metadata)
    if is_table(data):
        if data.columns.duplicated().any():
            raise InvalidParameterError("the DataFrame has duplicate column names: "
                                        + ", ".join(map(str, data.columns[data.columns.duplicated()])))
        try:
            dataset = datasets.Dataset.from_pandas(data, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as error:
            raise InvalidParameterError(f"the DataFrame cannot be read as a table ({error}); give columns of "
                                        "text, numbers or lists of them") from None
        return as_arrow(dataset)
    raise InvalidParameterError(f"a source is a file, a name, a pandas DataFrame or a datasets.Dataset / "
                                f"DatasetDict, got {type(data).__name__}")


def official_layout(table: pa.Table) -> pa.Table:
    """SNLI in the Hub's layout as the official file layout (see the module docstring); other tables as they are."""
    features = datasets.Features.from_arrow_schema(table.schema) if table.schema.metadata else None
    label = features.get("label") if features else None
    if not ({"premise", "hypothesis"} <= set(table.column_names) and isinstance(label, datasets.ClassLabel)
            and tuple(label.names) == SNLI_LABELS):
        return table
    codes = table.column("label").combine_chunks().fill_null(-1).to_pylist()
    gold = pa.array([SNLI_LABELS[c] if 0 <= c < len(SNLI_LABELS) else "-" for c in codes], pa.string())
    columns = {"sentence1": table.column("premise"), "sentence2": table.column("hypothesis"), "gold_label": gold}
    columns.update({name: table.column(name) for name in table.column_names
                    if name not in ("premise", "hypothesis", "label")})
    return pa.table(columns)


def table_file(data, folder) -> Path:
    """``data`` written as ``<folder>/table-<sha256 prefix>.parquet`` (the hash of the file's bytes), and its
    path: the same table gives the same file, written once (atomically: a temporary file, then a rename)."""
    table = official_layout(as_arrow(data))
    if table.num_rows == 0:
        raise InvalidParameterError("the table has no rows")
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
