"""Readers that turn a source dataset into canonical rows.

The two entry points pick the reader: :func:`load_source` (a :class:`~loading_scripts.source.Source`
from a bundled sample name, a known dataset name, a local file or a Hub id) and
:func:`load_compositional` (a :class:`~loading_scripts.compositional.CompositionalSource` from a
GeoQuery/Spider/SCAN/COGS folder, an NQG-format file or a Hub id).
"""

from __future__ import annotations

from pathlib import Path

import datasets

from loading_scripts import boolq, cogs, geoquery, nqg, scan, snli, spider
from loading_scripts.compositional import CompositionalSource
from loading_scripts.files import looks_like_path, not_found, read_table, table_format
from loading_scripts.hub import compositional_from_hub, load_hub_splits
from loading_scripts.source import Source, with_row_numbers
from loading_scripts.errors import FieldError, InvalidParameterError, SourceLoadError

NAMED_SOURCES = {
    "snli-sample": "the bundled SNLI sample (2,000 rows of the official dev file)",
    "snli": f"SNLI from the Hub ({snli.HUB_ID}), all splits",
    "boolq": f"BoolQ from the Hub ({boolq.HUB_ID}), all splits",
}
TASKS = ("snli", "boolq")
# The reader of a compositional dataset's folder, by a file found in it (the first match wins).
COMPOSITIONAL_FOLDERS = {
    "geoquery_nqg.tsv": geoquery.load, "tasks.txt": scan.load, "tasks.txt.gz": scan.load,
    "train.tsv": cogs.load, "train.tsv.gz": cogs.load, "dev.json": spider.load, "dev.json.gz": spider.load,
}

__all__ = ["Source", "CompositionalSource", "load_source", "load_compositional", "read_table", "NAMED_SOURCES",
           "TASKS", "COMPOSITIONAL_FOLDERS"]


def detect_task(columns: list[str]) -> str | None:
    """Recognise the official SNLI / BoolQ file layouts by their columns."""
    if {"sentence1", "sentence2", "gold_label"} <= set(columns):
        return "snli"
    if {"question", "passage", "answer"} <= set(columns):
        return "boolq"
    return None


def table_reader(columns, *, task: str | None = None, explicit_fields: bool = False) -> str | None:
    """The dataset reader a local table with ``columns`` is read with: ``task``, else (without fields given,
    ``explicit_fields``) the official SNLI / BoolQ layout its columns show; None for the generic reader, which keeps a
    table's own ``source_id`` column (rows put in ``source_id`` order), where SNLI's and BoolQ's number rows by
    position."""
    return task or (None if explicit_fields else detect_task(list(columns)))


def load_source(source: str, *, prompt_field: str | None = None, query_field: str | None = None,
                label_field: str | None = None, target_field: str | None = None,
                task: str | None = None, revision: str | None = None) -> Source:
    """Read ``source`` into canonical rows.

    Parameters
    ----------
    source : str
        ``snli-sample`` (bundled), ``snli`` or ``boolq`` (Hub), a path to a CSV / TSV / JSONL /
        JSON / Parquet file (optionally gzipped), a GeoQuery / Spider / SCAN / COGS folder (its rows as
        :func:`load_compositional` reads them: ``input``, ``target``), or another Hub dataset id.
    prompt_field, query_field, label_field : str, optional
        Field names for generic tables. Not needed for the named sources or for the official
        SNLI / BoolQ file layouts, which are recognised by their columns.
    target_field : str, optional
        The target program of a semantic-parsing source (for the atom constraint). A headerless
        two-column TSV (the NQG format, ``input TAB target``) is read as columns ``input`` and
        ``target``.
    task : {"snli", "boolq"}, optional
        Read a local file with that dataset's reader (field names, filter, prompt template).
    revision : str, optional
        Hub revision (branch, tag or commit) for Hub sources.
    """
    if task is not None and task not in TASKS:
        raise InvalidParameterError(f"unknown task {task!r}; known tasks: {', '.join(TASKS)}")
    explicit_fields = prompt_field is not None or query_field is not None or target_field is not None
    if source == "snli-sample":
        return snli.sample()
    if source in ("snli", "boolq") and not Path(source).exists():
        return (snli if source == "snli" else boolq).from_hub(revision=revision)

    path = Path(source).expanduser()
    if path.is_dir() and any((path / marker).is_file() for marker in COMPOSITIONAL_FOLDERS):
        # a GeoQuery / Spider / SCAN / COGS folder: its rows as the compositional methods read them
        found = load_compositional(source)
        return Source(found.rows, name=found.name, prompt_field=prompt_field,
                      query_field=query_field or nqg.COLUMNS[0], label_field=label_field,
                      target_field=target_field or nqg.COLUMNS[1], source_id_note=found.source_id_note)
    if path.exists():
        if table_format(path) is None:
            raise SourceLoadError(f"cannot read {source!r}: not a CSV/TSV/JSONL/JSON/Parquet file, nor a "
                                  "GeoQuery, Spider, SCAN or COGS folder")
        if table_format(path) == "tsv" and nqg.looks_headerless(path, (prompt_field, query_field, label_field)):
            return Source(nqg.read_dataset(path), name=source, prompt_field=prompt_field,
                          query_field=query_field or nqg.COLUMNS[0], label_field=label_field,
                          target_field=target_field or nqg.COLUMNS[1], source_id_note=nqg.SOURCE_ID_NOTE)
        table = read_table(path)
        detected = table_reader(table.column_names, task=task, explicit_fields=explicit_fields)
        if detected == "snli":
            return snli.from_jsonl(path)
        if detected == "boolq":
            return boolq.from_jsonl(path)
        dataset, name = with_row_numbers(table, name=source), source
        note = "0-based row number in the input file"
        if "source_id" in table.column_names:
            note = "the input file's own source_id column (rows are split in source_id order)"
    elif looks_like_path(source):
        raise not_found(source, "--source", "a CSV/TSV/JSONL/JSON/Parquet file")
    elif "/" in source:
        parts = load_hub_splits(source, revision=revision)
        dataset = with_row_numbers(datasets.concatenate_datasets([p for _, p in parts]), name=source)
        name = source
        note = ("0-based row number in the Hub splits concatenated in order ("
                + ", ".join(n for n, _ in parts) + ")")
    else:
        raise SourceLoadError(
            f"source {source!r} is neither a file that exists, a Hub id (org/name), nor one of: "
            + ", ".join(NAMED_SOURCES)
        )
    if query_field is None:
        raise FieldError("(none given)", dataset.column_names, role="query",
                         source=f"{name}: pass --query-field")
    return Source(dataset, name=name, prompt_field=prompt_field, query_field=query_field,
                  label_field=label_field, target_field=target_field, revision=revision,
                  source_id_note=note, hub_id=None if path.exists() else source)


def load_compositional(source: str) -> CompositionalSource:
    """A GeoQuery/Spider/SCAN/COGS folder (read by its :data:`COMPOSITIONAL_FOLDERS` reader), an
    NQG-format TSV file (``input TAB target``; a ``geoquery_nqg*`` file with GeoQuery's published
    splits beside it), or a Hub dataset id (:func:`~loading_scripts.hub.compositional_from_hub`)."""
    path = Path(source).expanduser()
    if path.is_dir():
        reader = next((read for marker, read in COMPOSITIONAL_FOLDERS.items() if (path / marker).is_file()), None)
        if reader is None:
            raise SourceLoadError(f"{source!r}: not a GeoQuery, Spider, SCAN or COGS folder")
        return reader(path)
    if path.is_file():
        if path.name.startswith("geoquery_nqg"):
            return geoquery.load(path)
        if path.name in ("tasks.txt", "tasks.txt.gz"):  # SCAN's file of every example, without its published splits
            return scan.from_tasks(path)
        marker = next((reader for marker, reader in COMPOSITIONAL_FOLDERS.items() if path.name == marker), None)
        if marker is not None:  # one file of a dataset folder, which its reader reads whole
            dataset = {cogs.load: "COGS", spider.load: "Spider"}.get(marker, "its dataset's")
            raise SourceLoadError(f"{source!r} is one file of a {dataset} folder, which is read whole: give the "
                                  f"folder that holds it ({str(path.parent)!r})")
        if table_format(path) in ("csv", "jsonl", "json", "parquet"):  # a table of input and target columns
            return nqg.from_table(path)
        return nqg.load(path)
    if looks_like_path(source):
        raise not_found(source, "--source", "a GeoQuery/Spider/SCAN/COGS folder or an NQG-format file")
    if "/" in source:
        return compositional_from_hub(source)
    raise SourceLoadError(f"source {source!r} does not exist (give a file in NQG format, a dataset folder "
                          "or a Hub id org/name)")
