"""The canonical form every reader returns.

A :class:`Source` is a ``datasets.Dataset`` of canonical rows (a ``source_id`` integer column, the
text fields, an optional label) plus what the rest of resplit needs to know about it: which field
is the prompt, which the query, which the label, where it came from and what was filtered out.

One policy for row-level defects, the same for every reader and family (:func:`check_field_types`,
:func:`missing_labels`): a text field (prompt, query, target, PVI's text fields) must hold text and a
label one scalar per row, else the field is refused by name; a row whose label is missing (null,
empty text, NaN, a ``ClassLabel`` -1) is dropped and counted as :data:`MISSING_LABEL` in the
source's filters (the card's "Rows dropped while reading the source"; ``--strict`` refuses it),
never made a class of its own. Rows are in ascending ``source_id`` order, the order every family
splits them in (and ``verify`` re-derives them in): a file's own ``source_id`` column fixes it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasets.table import InMemoryTable

from loading_scripts.tables import arrow_column, arrow_table, whole_numbers
from loading_scripts.errors import EmptyTextError, FieldError, InvalidParameterError
from loading_scripts.labels import check_label_name

MISSING_LABEL = "no label"
"""The filter reason of rows dropped because their label is missing (the same in every family)."""


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
    language: tuple | None = None  # ISO 639-1 codes of the text, where the dataset is known
    hub_id: str | None = None  # the original dataset's Hub id, where known
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
        check_field_types(self.dataset, name=self.name, label_field=self.label_field,
                          text_fields={role: name for role, name in (("prompt", self.prompt_field),
                                                                     ("query", self.query_field),
                                                                     ("target", self.target_field))
                                       if name is not None})
        if self.label_field is not None:
            check_no_gold_marker(self.dataset, self.label_field, name=self.name,
                                 hint="read the table with the SNLI reader (--task snli), which drops them and "
                                      "says so in the card, or drop those rows yourself")
            self._drop_missing_labels()

    def _drop_missing_labels(self) -> None:
        """Rows without a label leave the canonical rows, counted under :data:`MISSING_LABEL`."""
        missing = missing_labels(self.dataset, self.label_field)
        if not missing.size:
            return
        ids = self.source_ids[missing]
        keep = np.setdiff1d(np.arange(len(self.dataset)), missing)
        self.dataset = self.dataset.select(keep)
        known = self.dropped_ids.get(MISSING_LABEL, np.array([], dtype=np.int64))
        self.dropped_ids = {**self.dropped_ids, MISSING_LABEL: np.sort(np.concatenate([known, ids]))}
        self.filtered = {**self.filtered, MISSING_LABEL: int(self.filtered.get(MISSING_LABEL, 0)) + int(ids.size)}

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
            self.filtered = {**self.filtered, **{reason: int(ids.size) for reason, ids in self.dropped_ids.items()}}
            self.filtered = {reason: count for reason, count in self.filtered.items() if count}
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


def _describe(data_type) -> str:
    """An Arrow type in words, for a message."""
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_fixed_size_list(data_type):
        return f"lists ({data_type})"
    if pa.types.is_struct(data_type) or pa.types.is_map(data_type):
        return f"objects ({data_type})"
    if pa.types.is_boolean(data_type):
        return "true/false values"
    if pa.types.is_integer(data_type) or pa.types.is_floating(data_type) or pa.types.is_decimal(data_type):
        return f"numbers ({data_type})"
    return f"{data_type} values"


def _nested(data_type) -> bool:
    return pa.types.is_nested(data_type)


def check_field_types(dataset: datasets.Dataset, *, name: str, text_fields=(), label_field: str | None = None):
    """Refuse a text field that does not hold text and a label field that does not hold one scalar
    per row, naming the field, what it holds and what to do.

    ``text_fields`` is ``{role: field}`` (prompt, query, target) or a list of fields (role "text").
    A text field may hold text (or nothing at all); a label field text, integers, booleans or numbers,
    and no other column may be named ``label`` (the label field is released under that name).
    """
    schema = arrow_table(dataset).schema
    roles = text_fields.items() if isinstance(text_fields, dict) else (("text", f) for f in text_fields)
    for role, field_name in roles:
        if field_name not in schema.names:
            continue  # a missing field is the caller's FieldError
        data_type = schema.field(field_name).type
        if not (pa_is_string(data_type) or pa.types.is_null(data_type)):
            flag = {"text": "--text-fields", "query": "--query-field", "prompt": "--prompt-field",
                    "target": "--target-field"}[role]
            raise InvalidParameterError(f"{role} field {field_name!r} of {name} holds {_describe(data_type)}, not "
                                        f"text; give a text field with {flag} (or convert the column to text)")
    if label_field is not None and label_field in schema.names:
        data_type = schema.field(label_field).type
        if _nested(data_type) or pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
            raise InvalidParameterError(f"label field {label_field!r} of {name} holds {_describe(data_type)}; a label "
                                        "is one value per row (text or a number): give another --label-field")
        # released as ``label`` (loading_scripts.labels): refused before anything is computed
        check_label_name(schema.names, label_field, name=name)


NLI_LABELS = ("entailment", "neutral", "contradiction")
NO_GOLD_LABEL = "-"
"""SNLI's mark of a pair whose annotators agreed on no label (``gold_label`` ``-``): the SNLI reader drops those
rows; in a table read with field options of one's own, :func:`check_no_gold_marker` refuses it as a class."""


def check_no_gold_marker(dataset: datasets.Dataset, label_field: str, *, name: str, hint: str) -> None:
    """Refuse a text label column holding SNLI's label names and ``-`` (:data:`NO_GOLD_LABEL`): read as it is,
    ``-`` would be a class of its own (refused later, if at all, by a sizing message about a class named ``-``).
    The one line says what ``-`` is and ``hint``, how to drop those rows."""
    column = arrow_column(dataset, label_field)
    if not pa_is_string(column.type):
        return
    counts = {entry["values"]: entry["counts"] for entry in pc.value_counts(column).to_pylist()}
    labels = {value for value in counts if value is not None and value != NO_GOLD_LABEL}
    if NO_GOLD_LABEL not in counts or not labels or not labels <= set(NLI_LABELS):
        return
    raise InvalidParameterError(
        f"label field {label_field!r} of {name} holds {NO_GOLD_LABEL!r} in {counts[NO_GOLD_LABEL]} row(s) beside "
        f"{' / '.join(label for label in NLI_LABELS if label in labels)}: {NO_GOLD_LABEL!r} is how SNLI marks a pair "
        f"without a gold label (the SNLI reader drops such rows), not a class; {hint}")


def missing_labels(dataset: datasets.Dataset, label_field: str) -> np.ndarray:
    """Positions (sorted) of the rows whose label is missing: null, empty or blank text, NaN, or a
    ``ClassLabel``'s -1 (no label)."""
    column = arrow_column(dataset, label_field)
    missing = column.is_null()
    data_type = column.type
    if pa_is_string(data_type):
        missing = pc.or_(missing, pc.equal(pc.utf8_trim_whitespace(column), ""))
    elif pa.types.is_floating(data_type):
        missing = pc.or_(missing, pc.is_nan(column))
    elif pa.types.is_integer(data_type) and isinstance(dataset.features.get(label_field), datasets.ClassLabel):
        missing = pc.or_(missing, pc.less(column, 0))
    return np.flatnonzero(np.asarray(pc.fill_null(missing, True).to_numpy(zero_copy_only=False), dtype=bool))


def content_sha256(dataset: datasets.Dataset) -> str:
    """sha256 of a table's rows, column names and types: the Arrow IPC stream of its columns in
    order, in one chunk (so the same rows hash the same however they were read)."""
    table = arrow_table(dataset).replace_schema_metadata(None).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def source_id_values(column, name: str, *, first_row: int = 0) -> np.ndarray:
    """The ``source_id`` column of ``name`` as int64 ids, checked as every reader checks them: integers, or text
    or floats that are whole numbers (read as those integers), one per row. A missing id (null, NaN) or a value that
    is no integer is refused in one line naming its row (counted from 1; ``first_row``: the rows before this
    chunk) and the value."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    fix = "ids must be whole numbers, one per row; fix it, or rename the column to read it as data"
    if column.null_count:
        row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise InvalidParameterError(f"column 'source_id' of {name} has no value on row {first_row + row + 1}; {fix}")
    if pa.types.is_integer(column.type):
        return np.asarray(column.to_numpy(), dtype=np.int64)
    ids, row = whole_numbers(column.to_numpy(zero_copy_only=False))
    if row is None:
        return ids
    raise InvalidParameterError(f"column 'source_id' of {name} holds {column[row].as_py()!r} on row "
                                f"{first_row + row + 1}, which is not an integer; {fix}")


def check_unique_ids(ids: np.ndarray, name: str) -> None:
    """Refuse, in one line naming the first repeat (its value and the two rows, counted from 1), ids that repeat."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
    if repeated.size:
        second = int(order[1:][repeated].min())
        first = int(np.flatnonzero(ids == ids[second])[0])
        raise InvalidParameterError(f"column 'source_id' of {name} repeats {int(ids[second])} (rows {first + 1} and "
                                    f"{second + 1}); an id names one row: fix it, or rename the column to read it as "
                                    "data")


def with_row_numbers(dataset: datasets.Dataset, *, name: str) -> datasets.Dataset:
    """Add ``source_id`` = 0-based row number, or check the one the data already has (whole
    columns: Arrow and numpy). Rows that carry their own ``source_id`` are put in ascending
    ``source_id`` order: the order every family splits rows in, and the one ``verify`` re-derives
    the configs in from the released rows (which hold ``source_id``, not the file's order)."""
    table = arrow_table(dataset)
    if "source_id" in dataset.column_names:
        ids = source_id_values(table.column("source_id"), name)
        check_unique_ids(ids, name)
        if not pa.types.is_integer(table.column("source_id").type):  # integers given as text: read as integers
            table = table.set_column(table.column_names.index("source_id"), "source_id", pa.array(ids, pa.int64()))
            order = np.argsort(ids, kind="stable")
            table = table.take(pa.array(order)).combine_chunks()
            info = dataset.info.copy()
            info.features = datasets.Features({**dataset.features, "source_id": datasets.Value("int64")})
            return datasets.Dataset(InMemoryTable(table), info=info, fingerprint=f"resplit-rows-ids-{len(dataset)}")
        if ids.size > 1 and (np.diff(ids) < 0).any():
            order = np.argsort(ids, kind="stable")
            table = table.take(pa.array(order)).combine_chunks()
            return datasets.Dataset(InMemoryTable(table), info=dataset.info.copy(),
                                    fingerprint=f"resplit-rows-sorted-{len(dataset)}")
        return dataset
    table = table.append_column("source_id", pa.array(np.arange(len(dataset), dtype=np.int64)))
    info = dataset.info.copy()
    info.features = datasets.Features({**dataset.features, "source_id": datasets.Value("int64")})
    # A fingerprint of our own: ``datasets`` would hash the whole table for one.
    return datasets.Dataset(InMemoryTable(table), info=info, fingerprint=f"resplit-rows-{len(dataset)}")
