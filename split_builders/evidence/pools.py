"""Row pools: the rows of every config and split of an evidence input, reduced to the distinct rows once.

A :class:`Part` is the rows of one split of one config (rows of a base table, with their ``source_id``);
a :class:`Pool` is the distinct rows of every part (a row repeats across configs) and where each part's
rows are among them, so that per-row work (normalised texts, MinHash, text statistics) is done once per
release. :func:`value_codes` numbers equal values of a column, :func:`as_text` reads a column as one
string per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from split_builders.evidence.fields import is_text_type


@dataclass
class Part:
    """The rows of one split of one config: rows ``rows`` of ``table`` (all of them when None), and
    their identities ``ids`` (``source_id``; the row number within the split where there is none)."""

    table: object
    rows: np.ndarray | None = None
    ids: np.ndarray | None = None

    def __post_init__(self):
        n = self.table.num_rows if self.rows is None else len(self.rows)
        if self.ids is None:
            if "source_id" in self.table.column_names:
                column = self.table.column("source_id")
                ids = np.asarray(column.to_numpy(), dtype=np.int64)
                self.ids = ids if self.rows is None else ids[self.rows]
            else:
                self.ids = np.arange(n, dtype=np.int64)
        self.ids = np.asarray(self.ids, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)

    def taken(self):
        """The part's rows as a table of their own."""
        import pyarrow as pa

        return self.table if self.rows is None else self.table.take(pa.array(self.rows, type=pa.int64()))


def as_text(column):
    """A column as one string per row: lists of strings (at any depth) joined by newlines."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        return column.cast(pa.large_string())
    while pa.types.is_list(column.type.value_type) or pa.types.is_large_list(column.type.value_type):
        inner = column.values
        offsets = np.asarray(inner.offsets)[np.asarray(column.offsets)]
        column = pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)), inner.values,
                                               mask=column.is_null())
    return pc.binary_join(column, "\n").cast(pa.large_string())


def rows_of(table, rows):
    """The rows of ``table`` at ``rows`` (distinct positions, sorted; None: all of them): the table itself where
    they are all of its rows (no copy)."""
    import pyarrow as pa

    if rows is None or len(rows) == table.num_rows:
        return table
    return table.take(pa.array(rows, type=pa.int64()))


def _base_table(table, rows, columns):
    """``table`` restricted to ``rows`` and the ``columns`` it has, texts as strings."""
    import pyarrow as pa

    table = rows_of(table, rows)
    arrays, names = [], []
    for name in columns:
        if name in table.column_names:
            column = table.column(name)
            arrays.append(as_text(column) if is_text_type(column.type) else column.combine_chunks())
            names.append(name)
    if not names:  # keep the row count
        return pa.table({"__rows__": pa.nulls(table.num_rows, pa.int8())})
    return pa.table(arrays, names=names)


def distinct(values) -> np.ndarray:
    """The sorted distinct values of an int64 array (a sort: numpy 2's ``np.unique`` of many distinct
    integers, without ``return_*``, is a hash table many times slower)."""
    values = np.sort(np.asarray(values, dtype=np.int64).reshape(-1))
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if values.size else values


def value_codes(column, *, values: bool = False):
    """One int64 code per row, equal for equal values (nulls: -1), numbered in order of first
    appearance; with ``values``, also the distinct values (code ``k`` is ``values[k]``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_nested(column.type):  # lists and records (a test case's labels) are compared whole
        import json

        column = pa.array([None if v is None else json.dumps(v, sort_keys=True) for v in column.to_pylist()],
                          pa.string())
    encoded = pc.dictionary_encode(column)
    codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return (codes, encoded.dictionary.to_pylist()) if values else codes


def _combined_codes(table) -> np.ndarray:
    """One code per row, equal exactly when every column is equal."""
    key = np.zeros(table.num_rows, dtype=np.int64)
    for name in table.column_names:
        codes = value_codes(table.column(name)) + 1
        key = np.unique(key * (codes.max(initial=0) + 1) + codes, return_inverse=True)[1].reshape(-1)
    return key


class Pool:
    """The distinct rows of every part, and where each part's rows are among them."""

    def __init__(self, parts: dict, columns: list):
        import pyarrow as pa

        bases, positions = {}, {}
        tables = []
        total = 0
        for config, splits in parts.items():
            for split, part in splits.items():
                key = id(part.table)
                if key not in bases:
                    bases[key] = (part.table, [])
                bases[key][1].append((config, split, part))
        for key, (table, members) in bases.items():
            used = [m[2].rows for m in members]
            rows = None if any(r is None for r in used) else distinct(np.concatenate(used))
            tables.append(_base_table(table, rows, columns))
            for config, split, part in members:
                local = (np.arange(table.num_rows, dtype=np.int64) if part.rows is None
                         else np.asarray(part.rows, dtype=np.int64))
                if rows is not None:
                    local = np.searchsorted(rows, local)
                positions[(config, split)] = total + local
            total += tables[-1].num_rows
        allrows = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
        self.columns_of = {}
        for key, (table, members) in bases.items():
            for config, split, _ in members:
                self.columns_of.setdefault(config, set()).update(c for c in columns if c in table.column_names)
        key = _combined_codes(allrows)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # pool rows in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        self.table = allrows.take(pa.array(first[order], type=pa.int64()))
        inverse = rank[inverse.reshape(-1)]
        self.rows = {where: inverse[at] for where, at in positions.items()}
        self.ids = {(config, split): part.ids for config, splits in parts.items() for split, part in splits.items()}

