"""Arrow views of ``datasets.Dataset`` objects, and ``datasets`` calls without their progress bars.

:func:`arrow_table` is the one place that reads a dataset's private selection (``_indices``): a
``Dataset`` after ``select`` or ``filter`` is its full table plus a list of row numbers, and reading
it row by row through ``datasets`` is slow. Everything that wants whole columns goes through here.
"""

from __future__ import annotations

import contextlib

import datasets
import numpy as np
import pyarrow as pa


def arrow_table(dataset, columns=None):
    """The rows of ``dataset`` (its selection applied with Arrow's ``take``) as a ``pyarrow.Table``,
    restricted to ``columns`` when given."""
    table = dataset.data.table
    if columns is not None:
        table = table.select(list(columns))
    if dataset._indices is not None:
        table = table.take(dataset._indices.column(0))
    return table


def arrow_column(dataset, name: str):
    """One column of ``dataset`` as a single Arrow array."""
    return arrow_table(dataset, [name]).column(name).combine_chunks()


def row_keys(table, fields) -> np.ndarray:
    """One int64 per row, equal exactly when the rows' values of ``fields`` are all equal.

    ``table`` is a ``pyarrow.Table`` or a ``datasets.Dataset``. Nulls are a value of their own (two
    rows without a value are equal in that field). With no fields every row is its own key. This is
    the one row-key function: duplicate rows (``--dedupe``, the card's duplicate counts) and groups
    are found with it.
    """
    fields = list(fields)
    if not isinstance(table, pa.Table):
        table = arrow_table(table, fields)
    codes = []
    for name in fields:
        encoded = table.column(name).combine_chunks().dictionary_encode()
        codes.append(np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64))
    if not codes:
        return np.arange(table.num_rows, dtype=np.int64)
    ids = codes[0]
    for more in codes[1:]:  # pairs of codes as one int64, renumbered densely (so it never overflows)
        ids = np.unique(ids * (int(more.max(initial=-1)) + 2) + (more + 1), return_inverse=True)[1].reshape(-1)
    return ids.astype(np.int64)


@contextlib.contextmanager
def quiet_datasets(*, logs: bool = False):
    """No ``datasets`` progress bars inside (one bar per file written or column added is noise); with ``logs``
    none of its (and ``huggingface_hub``'s) log lines either: "Failed to read file ..." before the error that
    the caller reports in its own line."""
    import logging

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    loggers = [logging.getLogger(name) for name in ("datasets", "huggingface_hub")] if logs else []
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
        if not was_disabled:
            datasets.enable_progress_bars()
