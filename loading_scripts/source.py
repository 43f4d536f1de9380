"""The canonical form every reader returns.

A :class:`Source` is a ``datasets.Dataset`` of canonical rows (a ``source_id`` integer column, the
text fields, an optional label) plus what the rest of resplit needs to know about it: which field
is the prompt, which the query, which the label, where it came from and what was filtered out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import datasets

from split_builders.errors import EmptyTextError, FieldError, InvalidParameterError


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

    @property
    def source_ids(self):
        return self.dataset["source_id"]

    def texts(self, field_name: str) -> list[str]:
        return self.dataset[field_name]

    def labels(self):
        """Label values (class names for a ``ClassLabel``), or None without a label field."""
        if self.label_field is None:
            return None
        values = self.dataset[self.label_field]
        feature = self.dataset.features[self.label_field]
        if isinstance(feature, datasets.ClassLabel):
            return [feature.int2str(v) for v in values]
        return values

    def check_queries(self) -> None:
        """Refuse empty query texts: they have no likelihood and no length."""
        queries = self.texts(self.query_field)
        empty = [sid for sid, q in zip(self.source_ids, queries) if q is None or not str(q).strip()]
        if empty:
            shown = ", ".join(str(s) for s in empty[:10]) + (" ..." if len(empty) > 10 else "")
            raise EmptyTextError(
                f"{len(empty)} row(s) of {self.name} have an empty query field "
                f"{self.query_field!r} (source_id {shown}); drop them or pick another --query-field"
            )

    def content_hash(self) -> str:
        """sha256 of the canonical rows: the source's identity (see :func:`content_sha256`)."""
        return content_sha256(self.dataset)


def content_sha256(dataset: datasets.Dataset) -> str:
    """sha256 of a table's rows, column names and types: the Arrow IPC stream of its columns in
    order, in one chunk (so the same rows hash the same however they were read)."""
    import pyarrow as pa

    table = dataset.data.table
    if dataset._indices is not None:  # a selection: take its rows (no row-by-row rewrite)
        table = table.take(dataset._indices.column(0))
    table = table.replace_schema_metadata(None).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def with_row_numbers(dataset: datasets.Dataset, *, name: str) -> datasets.Dataset:
    """Add ``source_id`` = 0-based row number, or check the one the data already has."""
    if "source_id" in dataset.column_names:
        ids = dataset["source_id"]
        if any(not isinstance(i, int) or isinstance(i, bool) for i in ids):
            raise InvalidParameterError(f"column 'source_id' of {name} must hold integers")
        if len(set(ids)) != len(ids):
            raise InvalidParameterError(f"column 'source_id' of {name} has duplicate values")
        return dataset
    return dataset.add_column("source_id", list(range(len(dataset))))
