"""The canonical form every reader returns.

A :class:`Source` is a ``datasets.Dataset`` of canonical rows (a ``source_id`` integer column, the
text fields, an optional label) plus what the rest of resplit needs to know about it: which field
is the prompt, which the query, which the label, where it came from and what was filtered out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasets.table import InMemoryTable

from loading_scripts.tables import arrow_column, arrow_table
from loading_scripts.errors import EmptyTextError, FieldError, InvalidParameterError


@dataclass
class Source:
    """Canonical rows of one source dataset and their description.

    Attributes
    ----------
    dataset : datasets.Dataset
        The canonical rows; always has an int64 ``source_id`` column.
    name : str
        Where the rows came from (a Hub id, a path or a bundled sample name).
    task : str or None
        ``"snli"``, ``"boolq"`` or None for a generic table; picks the default prompt template.
    prompt_field : str or None
        The text the language model is conditioned on (None: the query is scored after BOS alone).
    query_field : str
        The text that is scored and whose length is measured.
    label_field : str or None
        The label used to balance evaluation sets; None for no balancing.
    target_field : str or None
        The target program of a semantic-parsing row (SQL, FunQL, ...); its atoms drive the
        atom constraint.
    source_id_note : str
        What ``source_id`` means for this source (shown in the card).
    revision : str or None
        The Hub revision the rows were read at, when known.
    filtered : dict
        Rows dropped by the reader's filter, by reason.
    dropped_ids : dict
        The ``source_id`` of every dropped row, by reason (sorted), when the reader knows them: so
        that :meth:`head` can count what was dropped among the rows it keeps.
    """

    dataset: datasets.Dataset
    name: str
    prompt_field: str | None
    query_field: str
    label_field: str | None = None
    target_field: str | None = None
    task: str | None = None
    source_id_note: str = "0-based row number in the input file"
    revision: str | None = None
    license: str | None = None
    citation: str | None = None
    filtered: dict = field(default_factory=dict)
    dropped_ids: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        columns = self.dataset.column_names
        for role, name in (("prompt", self.prompt_field), ("query", self.query_field),
                           ("label", self.label_field), ("target", self.target_field)):
            if name is not None and name not in columns:
                raise FieldError(name, columns, role=role, source=self.name)
        if "source_id" not in columns:
            raise FieldError("source_id", columns, source=self.name)

    def __len__(self) -> int:
        return len(self.dataset)

    def column(self, field_name: str):
        """One column of the rows as a single Arrow array (:func:`~loading_scripts.tables.arrow_column`:
        ``datasets``' own ``dataset[name]`` is a lazy column that reads row by row)."""
        return arrow_column(self.dataset, field_name)

    @property
    def source_ids(self):
        """Every row's ``source_id`` (int64 array)."""
        return np.asarray(self.column("source_id").to_numpy(zero_copy_only=False), dtype=np.int64)

    def texts(self, field_name: str) -> list[str]:
        return self.column(field_name).to_pylist()

    def labels(self):
        """Label values (class names for a ``ClassLabel``), or None without a label field."""
        if self.label_field is None:
            return None
        values = self.column(self.label_field)
        feature = self.dataset.features[self.label_field]
        if isinstance(feature, datasets.ClassLabel):  # codes to names with one Arrow take
            return pa.array(feature.names, pa.string()).take(values).to_pylist()
        return values.to_pylist()

    def head(self, n: int) -> "Source":
        """Keep the first ``n`` rows (``--limit``); the filter counts become those of the input rows
        they were read from (dropped rows after the last one kept were never reached)."""
        if n >= len(self.dataset):
            return self
        self.dataset = self.dataset.select(range(n))
        if self.dropped_ids:
            last = int(self.dataset[n - 1]["source_id"])
            self.dropped_ids = {reason: ids[ids < last] for reason, ids in self.dropped_ids.items()}
            self.filtered = {reason: int(ids.size) for reason, ids in self.dropped_ids.items()}
        return self

    def check_queries(self) -> None:
        """Refuse empty query texts: they have no likelihood and no length."""
        column = self.column(self.query_field)
        if not pa_is_string(column.type):
            column = column.cast("string")
        # A query with a letter or digit is not empty; the rest (and nulls) are checked with str.strip.
        maybe = np.flatnonzero(~np.asarray(pc.fill_null(pc.match_substring_regex(column, "[A-Za-z0-9]"), False)))
        queries = column.take(maybe).to_pylist() if maybe.size else []
        ids = self.source_ids[maybe] if maybe.size else []
        empty = [int(sid) for sid, q in zip(ids, queries) if q is None or not str(q).strip()]
        if empty:
            shown = ", ".join(str(s) for s in empty[:10]) + (" ..." if len(empty) > 10 else "")
            raise EmptyTextError(
                f"{len(empty)} row(s) of {self.name} have an empty query field "
                f"{self.query_field!r} (source_id {shown}); drop them or pick another --query-field"
            )

    def content_hash(self) -> str:
        """sha256 of the canonical rows: the source's identity (see :func:`content_sha256`)."""
        return content_sha256(self.dataset)


def pa_is_string(data_type) -> bool:
    return pa.types.is_string(data_type) or pa.types.is_large_string(data_type)


def content_sha256(dataset: datasets.Dataset) -> str:
    """sha256 of a table's rows, column names and types: the Arrow IPC stream of its columns in
    order, in one chunk (so the same rows hash the same however they were read)."""
    table = arrow_table(dataset).replace_schema_metadata(None).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def with_row_numbers(dataset: datasets.Dataset, *, name: str) -> datasets.Dataset:
    """Add ``source_id`` = 0-based row number, or check the one the data already has (whole
    columns: Arrow and numpy)."""
    table = arrow_table(dataset)
    if "source_id" in dataset.column_names:
        column = table.column("source_id")
        if not pa.types.is_integer(column.type) or column.null_count:
            raise InvalidParameterError(f"column 'source_id' of {name} must hold integers")
        ids = column.to_numpy()
        if np.unique(ids).size != ids.size:
            raise InvalidParameterError(f"column 'source_id' of {name} has duplicate values")
        return dataset
    table = table.append_column("source_id", pa.array(np.arange(len(dataset), dtype=np.int64)))
    info = dataset.info.copy()
    info.features = datasets.Features({**dataset.features, "source_id": datasets.Value("int64")})
    # A fingerprint of our own: ``datasets`` would hash the whole table for one.
    return datasets.Dataset(InMemoryTable(table), info=info, fingerprint=f"resplit-rows-{len(dataset)}")
