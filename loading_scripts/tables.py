"""Arrow views of ``datasets.Dataset`` objects, and ``datasets`` calls without their progress bars.

:func:`arrow_table` is the one place that reads a dataset's private selection (``_indices``): a
``Dataset`` after ``select`` or ``filter`` is its full table plus a list of row numbers, and reading
it row by row through ``datasets`` is slow. Everything that wants whole columns goes through here.
"""

from __future__ import annotations

import contextlib
import math
import re

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


def row_keys(table, fields, *, content: bool = False) -> np.ndarray:
    """One key per row, equal when the rows' values of ``fields`` are all equal.

    ``table`` is a ``pyarrow.Table`` or a ``datasets.Dataset``. Nulls are a value of their own (two
    rows without a value are equal in that field). This is the one row-key function: duplicate rows
    (``--dedupe``, the card's duplicate counts), groups and the rows' content order are found with it.

    By default the keys are int64 numbers, equal *exactly* when the rows are (numbered in the table's
    order; with no fields every row is its own key). With ``content`` they are uint64 hashes of the
    values themselves (the row's **content key**): the same row has the same key in any table, read in
    any order, by any reader that gives the same values. Each value is hashed as text (UTF-8; a number
    as Arrow writes it, a list or struct as JSON), with pandas' stable SipHash (``pandas.util.hash_array``
    with its fixed key), and the fields are mixed in the order given (their names are not part of the
    key). Two different rows share a key with probability about 2**-64.
    """
    fields = list(fields)
    if not isinstance(table, pa.Table):
        table = arrow_table(table, fields)
    if content:
        return _content_keys(table, fields)
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


# Content keys: constants of the 64-bit mixer (splitmix64's finaliser) and the hash of a missing value.
_GOLDEN, _MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_NULL_HASH = np.uint64(0x6E756C6C20726F77)  # a missing value ("null row" in ASCII)
_SIPHASH_KEY = "0123456789123456"  # pandas' own default key, given explicitly: the keys must never change


def mix64(values) -> np.ndarray:
    """splitmix64's finaliser over uint64 values (whole arrays; arithmetic modulo 2**64): a bijection whose
    outputs look independent and uniform however alike the inputs are."""
    x = np.asarray(values, dtype=np.uint64) + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


def _content_keys(table: pa.Table, fields: list) -> np.ndarray:
    """:func:`row_keys` with ``content``: each field's values hashed (whole columns), mixed field by field."""
    import pandas as pd
    import pyarrow.compute as pc

    keys = np.zeros(table.num_rows, dtype=np.uint64)
    for name in fields:
        column = table.column(name).combine_chunks()
        if pa.types.is_dictionary(column.type):  # its values, as a plain column of them
            column = column.dictionary_decode()
        if pa.types.is_nested(column.type):
            import json

            texts = pa.array([None if v is None else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
                              for v in column.to_pylist()], pa.large_string())
        elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            texts = column
        else:
            texts = pc.cast(column, pa.large_string())
        missing = np.asarray(texts.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        values = np.asarray(pc.fill_null(texts, "").to_numpy(zero_copy_only=False), dtype=object)
        # every value hashed in C (pandas' categorize=True, hashing distinct values once, is slower on text)
        hashed = pd.util.hash_array(values, encoding="utf8", hash_key=_SIPHASH_KEY, categorize=False)
        keys = mix64(keys * _MIX1 + np.where(missing, _NULL_HASH, hashed))
    return keys


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


LONE_SURROGATE = ("a lone surrogate, which is not text UTF-8 can hold: fix that text (or replace such characters: "
                  "text.encode('utf-8', 'replace').decode('utf-8'))")
"""What a text Arrow cannot hold is and what to do (the end of the one line naming its row and field)."""


def unencodable_text(columns) -> tuple | None:
    """The first text of ``columns`` (``{name: values}``, one value per row; lists and objects searched at any
    depth) that UTF-8 cannot encode, a lone surrogate such as a JSON escape ``"\\ud800"`` or a wrong decoding
    leaves, which Arrow refuses with a ``UnicodeEncodeError`` naming neither row nor field: ``(name, row,
    character, offset)``, or None when every text can be written. Called where Arrow refused, to say where."""

    def problem(value):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:
                return value[error.start], error.start
            return None
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        if isinstance(items, (list, tuple)):
            return next((found for found in map(problem, items) if found), None)
        return None

    for name, values in columns.items():
        if problem(name):
            return name, None, *problem(name)
        for row, value in enumerate(values):
            found = problem(value)
            if found:
                return name, row, *found
    return None



_WHOLE = re.compile(r"\s*[+-]?[0-9]+\s*")
_INT64 = 2 ** 63


def whole_number(value):
    """``value`` as an int, or None where it is not a whole number of int64's range (a fraction, a bool, text,
    missing): the one rule of every id a reader checks (a source's ``source_id``, a run's ids)."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        number = int(value)
    elif isinstance(value, (float, np.floating)):
        if not (math.isfinite(value) and float(value).is_integer()):
            return None
        number = int(value)
    elif isinstance(value, str) and _WHOLE.fullmatch(value):
        number = int(value)
    else:
        return None
    return number if -_INT64 <= number < _INT64 else None


def whole_numbers(values) -> tuple[np.ndarray, int | None]:
    """``(int64 array, position of the first value that is not a whole number or None)`` (:func:`whole_number`, by
    whole columns where the values are numbers)."""
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array.astype(np.int64), None
    if array.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~(np.isfinite(array) & (array == np.floor(array)) & (np.abs(array) < _INT64))
        if bad.any():
            return np.zeros(len(array), np.int64), int(bad.argmax())
        return array.astype(np.int64), None
    if array.dtype.kind in "OU":  # text: checked and cast by whole columns where every value is a whole number
        import pyarrow.compute as pc

        try:
            text = pa.array(array, type=pa.string())
            if text.null_count == 0 and pc.all(pc.match_substring_regex(text, "^" + _WHOLE.pattern + "$")).as_py():
                return np.asarray(pc.cast(pc.utf8_trim_whitespace(text), pa.int64()).to_numpy(), np.int64), None
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all text, or beyond int64: the first such value is found below
            pass
    out = np.zeros(len(array), np.int64)
    for position, value in enumerate(array.tolist()):
        number = whole_number(value)
        if number is None:
            return out, position
        out[position] = number
    return out, None
