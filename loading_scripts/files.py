"""Read a local table (CSV, JSON lines, JSON, Parquet; optionally gzipped) into a Dataset.

The rows are read into memory and handed to ``datasets`` directly rather than through
``load_dataset("csv", ...)``: that builder caches by file name, and resplit must never read a
stale copy of a file that changed.

Nothing is read silently wrong: text must be UTF-8 (an error names the line and the byte), a TSV
is read without quote processing (a ``"`` is text, so one stray quote cannot merge lines) and
every TSV line and CSV record must have as many fields as the header (an error names the line).
"""

from __future__ import annotations

import os

import csv
import gzip
import io
import json
from pathlib import Path

import datasets
import pandas as pd
import pyarrow.parquet as pq

from loading_scripts.errors import SourceLoadError

SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet")


def table_format(path: Path) -> str | None:
    """The format of a table file by its suffix (``.gz`` allowed), or None."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in SUFFIXES:
        return suffixes[-1].lstrip(".")
    return None


def open_text(path: Path):
    """Open a text file for reading, gunzipping a ``.gz`` one."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_text(path: Path) -> str:
    """The whole file as text (gunzipped if ``.gz``), strictly UTF-8: a decoding error names the
    file, the line and the byte instead of surfacing from deep inside a parser."""
    raw = path.read_bytes()
    if path.suffix.lower() == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise SourceLoadError(f"{path}: not a readable gzip file ({error})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise SourceLoadError(
            f"{path}: line {line} is not UTF-8 (byte 0x{raw[error.start]:02x} at offset {error.start}); "
            "re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None


def _check_tsv_fields(path: Path, text: str) -> None:
    """Every non-blank line has the header's number of tab-separated fields."""
    lines = text.splitlines()
    expected = lines[0].count("\t") + 1 if lines else 0
    for number, line in enumerate(lines, start=1):
        if line.strip() and line.count("\t") + 1 != expected:
            raise SourceLoadError(f"{path}: line {number} has {line.count(chr(9)) + 1} tab-separated field(s), the "
                                  f"header has {expected}; a TSV line holds one record (quotes are text)")


def _check_csv_fields(path: Path, text: str) -> None:
    """Every CSV record has the header's number of fields (pandas pads short ones silently)."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        return
    for record in reader:
        if record and len(record) != len(header):
            raise SourceLoadError(f"{path}: the record ending on line {reader.line_num} has {len(record)} field(s), "
                                  f"the header has {len(header)}")


def _read_delimited(path: Path, kind: str) -> "pd.DataFrame":
    text = read_text(path)
    if not text.strip():
        raise SourceLoadError(f"{path} is empty: it holds no header and no rows")
    if kind == "tsv":
        _check_tsv_fields(path, text)
        options = {"sep": "\t", "quoting": csv.QUOTE_NONE}
    else:
        _check_csv_fields(path, text)
        options = {"sep": ","}
    try:
        # keep_default_na=False: the text "NA" or "None" is a sentence, not a missing value.
        return pd.read_csv(io.StringIO(text), keep_default_na=False, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as error:
        raise SourceLoadError(f"{path}: not a readable {kind.upper()} file ({str(error).strip()})") from None


def _read_json_lines(path: Path) -> list[dict]:
    rows = []
    with io.StringIO(read_text(path)) as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise SourceLoadError(f"{path}: line {line_number} is not valid JSON ({error.msg})") from None
    return rows


def read_table(path: str | Path) -> datasets.Dataset:
    """Read a CSV/TSV/JSONL/JSON/Parquet file into a ``datasets.Dataset``, rows in file order."""
    path = Path(path)
    if not path.is_file():
        raise SourceLoadError(f"source file {str(path)!r} does not exist")
    kind = table_format(path)
    if kind is None:
        raise SourceLoadError(
            f"cannot tell the format of {str(path)!r}: use one of "
            + ", ".join(SUFFIXES) + " (optionally with .gz)"
        )
    if kind in ("csv", "tsv"):
        frame = _read_delimited(path, kind)
        if frame.empty:
            raise SourceLoadError(f"{path} holds a header but no rows")
        return datasets.Dataset.from_pandas(frame, preserve_index=False)
    if kind == "jsonl":
        rows = _read_json_lines(path)
    elif kind == "json":
        text = read_text(path)
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError:
            rows = _read_json_lines(path)  # a .json file that is really JSON lines
        else:
            if not isinstance(loaded, list):
                raise SourceLoadError(f"{path}: expected a JSON list of objects or JSON lines")
            rows = loaded
    else:
        raw = path.read_bytes()
        if path.suffix.lower() == ".gz":
            raw = gzip.decompress(raw)
        try:
            return datasets.Dataset(pq.read_table(io.BytesIO(raw)))
        except Exception as error:  # pyarrow raises several kinds for a damaged file
            raise SourceLoadError(f"{path}: not a readable Parquet file ({error})") from None
    if not rows:
        raise SourceLoadError(f"{path} holds no rows")
    return datasets.Dataset.from_list(rows)


def cache_root() -> Path:
    """resplit's cache folder: ``$RESPLIT_CACHE``, else ``$XDG_CACHE_HOME/resplit`` or ``~/.cache/resplit``."""
    if os.environ.get("RESPLIT_CACHE"):
        return Path(os.environ["RESPLIT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "resplit"
