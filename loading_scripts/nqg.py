"""Headerless two-column TSV files: the NQG format of the semantic-parsing datasets.

Shaw et al.'s NQG code (and the Likelihood Splits and TMCD code built on it) keeps a dataset as
one example per line, ``input TAB target`` (GeoQuery: ``question TAB FunQL``; Spider:
``db_id: question TAB sql``). The lines are split by hand rather than with a CSV reader: SQL
targets hold double quotes that a CSV reader would take for quoting.
"""

from __future__ import annotations

import re
from pathlib import Path

import datasets

from loading_scripts.compositional import CompositionalSource, guess_target_language, rows_dataset
from loading_scripts.files import open_text, read_table, read_text
from loading_scripts.source import check_field_types, with_row_numbers
from loading_scripts.tables import arrow_column
from loading_scripts.errors import SourceLoadError

COLUMNS = ("input", "target")
SOURCE_ID_NOTE = "0-based line number in the input file"


def read_pairs(path: str | Path) -> list[tuple[str, str]]:
    """``(input, target)`` per line, in file order, read as strictly as the table readers
    (:func:`loading_scripts.files.read_text`: UTF-8, a bad byte named with its line). A line with
    other than exactly two tab-separated fields is an error naming the line and its field count
    (a quote is text, so a stray one cannot merge lines; a blank line is an error too, as source
    ids are line numbers); a file without a line is an error."""
    path = Path(path)
    if not path.is_file():
        raise SourceLoadError(f"source file {str(path)!r} does not exist")
    # Lines end at "\n" only (str.splitlines would also cut at U+2028 and other separators in a text).
    lines = read_text(path).split("\n")
    if lines[-1] == "":
        lines.pop()
    pairs = []
    for line_number, line in enumerate(lines, start=1):
        fields = line.rstrip("\r").split("\t")
        if len(fields) != 2:
            raise SourceLoadError(
                f"{path}: line {line_number} has {len(fields)} tab-separated field(s); the NQG format is "
                "one 'input<TAB>target' pair per line")
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise SourceLoadError(f"{path} holds no 'input<TAB>target' line (the file is empty)")
    return pairs


def read_dataset(path: str | Path) -> datasets.Dataset:
    """The file as a Dataset with columns ``source_id`` (line number), ``input`` and ``target``."""
    pairs = read_pairs(path)
    return datasets.Dataset.from_dict({
        "source_id": list(range(len(pairs))),
        COLUMNS[0]: [p[0] for p in pairs],
        COLUMNS[1]: [p[1] for p in pairs],
    })


def load(path: str | Path) -> CompositionalSource:
    """The file as a compositional source, its target language guessed from its targets."""
    pairs = read_pairs(path)
    targets = [p[1] for p in pairs]
    return CompositionalSource(rows_dataset([p[0] for p in pairs], targets), name=str(path),
                               target_language=guess_target_language(targets), source_id_note=SOURCE_ID_NOTE)


TABLE_NOTE = "0-based row number in the table (its own source_id column where it has one)"


def from_table(path: str | Path, *, name: str | None = None) -> CompositionalSource:
    """A table file (CSV, JSON lines, JSON or Parquet: what ``split_builders.split`` writes for a DataFrame) whose
    ``input`` and ``target`` columns are the rows the NQG reader produces, as a compositional source: its target
    language guessed from its targets, its other columns kept beside them. A table without both columns, or
    with a row that lacks one of them, is refused in one line naming what it has."""
    name = name or str(path)
    table = read_table(path)
    missing = [column for column in COLUMNS if column not in table.column_names]
    if missing:
        raise SourceLoadError(f"{name} has no {' and no '.join(repr(c) for c in missing)} column: a table read as "
                              "compositional rows has one example per row, its question in 'input' and its program "
                              f"in 'target' (it has {', '.join(repr(c) for c in table.column_names)}); rename its "
                              "columns, or give a GeoQuery / Spider / SCAN / COGS folder or an NQG-format file")
    check_field_types(table, name=name, text_fields=list(COLUMNS))
    for column in COLUMNS:
        values = arrow_column(table, column)
        if values.null_count:
            row = next(i for i, value in enumerate(values.to_pylist()) if value is None)
            raise SourceLoadError(f"row {row} of {name} has no {column!r}: every example needs its question "
                                  "(input) and its program (target); drop the row or fill it in")
    rows = with_row_numbers(table, name=name)
    order = ["source_id", *COLUMNS, *(c for c in rows.column_names if c not in ("source_id", *COLUMNS))]
    rows = rows.select_columns(order)
    return CompositionalSource(rows, name=name, target_language=guess_target_language(rows["target"]),
                               source_id_note=TABLE_NOTE if "source_id" not in table.column_names
                               else "the table's own source_id column (rows are split in source_id order)")


def looks_headerless(path: str | Path, wanted_fields=()) -> bool:
    """True for a TSV whose first line is data, not a header naming the fields asked for.

    A file is taken as NQG-format when every line checked has exactly two fields and its first
    line does not name any of ``wanted_fields`` (so ``input<TAB>target`` as a first line is a
    header, as is any first line naming a requested field).
    """
    with open_text(Path(path)) as handle:
        first_lines = [line.rstrip("\r\n") for _, line in zip(range(5), handle)]
    if not first_lines or any(len(line.split("\t")) != 2 for line in first_lines):
        return False
    header = set(first_lines[0].split("\t"))
    return not (header & ({*COLUMNS} | {f for f in wanted_fields if f}))


_DB_PREFIX = re.compile(r"^[A-Za-z0-9_]+:\s")


def questions(inputs: list[str]) -> list[str]:
    """The natural-language question of each NQG input.

    Spider's NQG inputs read ``db_id: question`` (optionally followed by `` | schema``). When
    *every* input has such a prefix, it is removed (and a schema suffix cut off), as the
    Likelihood Splits code does before measuring length; otherwise inputs are returned as is
    (GeoQuery's inputs are plain questions).
    """
    if not inputs or not all(_DB_PREFIX.match(text) for text in inputs):
        return list(inputs)
    return [text.split(":", 1)[1].split(" | ", 1)[0].strip() for text in inputs]
