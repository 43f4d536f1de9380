"""Read a local table (CSV, JSON lines, JSON, Parquet; optionally gzipped) into a Dataset.

The rows are read into memory and handed to ``datasets`` directly rather than through
``load_dataset("csv", ...)``: that builder caches by file name, and resplit must never read a
stale copy of a file that changed.

Nothing is read silently wrong: text must be UTF-8 (an error names the line and the byte; a UTF-8
byte-order mark, as spreadsheet programs write "CSV UTF-8", is dropped), a TSV is read without quote
processing (a ``"`` is text, so one stray quote cannot merge lines) and every TSV line and CSV record
must have as many fields as the header (an error names the line). A file must be a table of records:
a header (or JSON object keys) that names a column twice, a JSON file that is a list of lists or a
scalar, and a JSON line that is not an object are refused, naming what they are. A JSON column whose
values mix scalar types (``1`` and ``"1"``) is read as text, with a :class:`SourceNote` saying so.
"""

from __future__ import annotations

import os

import csv
import gzip
import io
import json
from pathlib import Path

import warnings

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from loading_scripts.errors import SourceLoadError, SourceNote
from loading_scripts.tables import LONE_SURROGATE, unencodable_text

SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet")


# Name endings of local files (a Hub id has none of them): a source ending so is a path.
FILE_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".parquet", ".gz", ".zip", ".txt", ".npy", ".npz", ".yaml",
                 ".yml", ".pkl", ".arrow", ".bz2", ".xz", ".zst")


def looks_like_path(text: str) -> bool:
    """Whether ``text`` names a local file or folder rather than a Hub id (``org/name``): it starts
    with ``.``, ``/`` or ``~``, has a backslash, two or more ``/`` or a trailing one, ends like a
    data file (:data:`FILE_SUFFIXES`), or its first part is a folder that exists here (``data/x``
    beside a ``data/`` folder)."""
    text = str(text)
    if not text or text.startswith((".", "/", "~")) or "\\" in text or text.count("/") > 1 or text.endswith("/"):
        return True
    if text.lower().endswith(FILE_SUFFIXES):
        return True
    return "/" in text and os.path.isdir(text.split("/", 1)[0])


def path_problem(path) -> str | None:
    """What a local path is when it is not a plain file or folder that can be read, in words (None when it
    is one, or does not exist at all): a symbolic link that leads nowhere (a loop, or to a missing target),
    a FIFO (named pipe), a socket or a device."""
    import errno
    import stat as kinds

    path = os.path.expanduser(str(path))
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symbolic link that loops (it leads back to itself)"
        if os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)!r}, which does not exist"
        if error.errno in (errno.EACCES, errno.EPERM):
            return "a path this user may not read (permission denied)"
        return None
    if kinds.S_ISREG(mode) or kinds.S_ISDIR(mode):
        return None
    if kinds.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a file: resplit reads a file more than once"
    if kinds.S_ISSOCK(mode):
        return "a socket, not a file"
    return "a device, not a file"


def not_found(text: str, what: str = "source", expected: str = "") -> SourceLoadError:
    """The one message for a local path that does not exist: ``file not found: ...`` (what it was
    given as, and what it should be), instead of a Hub lookup that cannot succeed; a path that exists
    as something else (:func:`path_problem`: a FIFO, a symbolic link loop) is named as what it is."""
    special = path_problem(text)
    if special is not None:
        return SourceLoadError(f"{str(text)!r} is {special} ({what}{': ' + expected if expected else ''}); give "
                               "a regular file")
    path = os.path.expanduser(str(text))
    parent = os.path.dirname(os.path.abspath(path))
    where = "" if os.path.isdir(parent) else f"; the folder {os.path.dirname(path) or parent!r} does not exist either"
    return SourceLoadError(f"file not found: {str(text)!r} ({what}{': ' + expected if expected else ''}){where}")


def check_file(path, what: str, expected: str) -> Path:
    """``path`` as a Path when it is a regular file that exists; else one line saying what it is instead
    (missing, a folder, a FIFO, a symbolic link loop) and what was ``expected``. ``what`` names the input
    (``scores file``)."""
    special = path_problem(path)
    if special is not None:
        raise SourceLoadError(f"{what} {str(path)!r} is {special}; give {expected}")
    found = Path(path).expanduser()
    if found.is_dir():
        raise SourceLoadError(f"{what} {str(path)!r} is a folder; give {expected}")
    if not found.is_file():
        raise not_found(str(path), what, expected)
    return found


def table_format(path: Path) -> str | None:
    """The format of a table file by its suffix (``.gz`` allowed), or None."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in SUFFIXES:
        return suffixes[-1].lstrip(".")
    return None


def open_text(path: Path):
    """Open a text file for reading, gunzipping a ``.gz`` one; a UTF-8 byte-order mark is dropped."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


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


def check_header(path: Path, names) -> None:
    """Refuse a header that names a column twice (pandas and pyarrow would rename the second
    ``name.1`` and a reader would use the first without a word)."""
    seen = {}
    for position, name in enumerate(names, start=1):
        key = str(name).strip()
        if key in seen:
            raise SourceLoadError(f"{path}: the header names the column {key!r} twice (columns {seen[key]} and "
                                  f"{position}); rename one so that every column has its own name")
        seen[key] = position


def _check_tsv_fields(path: Path, text: str) -> None:
    """Every non-blank line has the header's number of tab-separated fields."""
    lines = text.splitlines()
    if lines:
        check_header(path, lines[0].split("\t"))
    expected = lines[0].count("\t") + 1 if lines else 0
    for number, line in enumerate(lines, start=1):
        if line.strip() and line.count("\t") + 1 != expected:
            raise SourceLoadError(f"{path}: line {number} has {line.count(chr(9)) + 1} tab-separated field(s), the "
                                  f"header has {expected}; a TSV line holds one record (quotes are text)")


def _check_csv_fields(path: Path, text: str) -> None:
    """Every CSV record has the header's number of fields (pandas pads short ones silently)."""
    reader = csv.reader(io.StringIO(text))
    limit = csv.field_size_limit(2**31 - 1)  # a cell longer than the csv module's 128 KiB default is read
    try:
        header = next(reader)
        check_header(path, header)
        for record in reader:
            if record and len(record) != len(header):
                raise SourceLoadError(f"{path}: the record ending on line {reader.line_num} has {len(record)} "
                                      f"field(s), the header has {len(header)}")
    except StopIteration:
        return
    finally:
        csv.field_size_limit(limit)


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
        # low_memory=False: one type per column (chunked inference could mix numbers and text in one).
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False, low_memory=False, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as error:
        raise SourceLoadError(f"{path}: not a readable {kind.upper()} file ({str(error).strip()})") from None
    # A column of numbers with empty cells would be read as text ('12', '12.0', ''): it keeps its numbers
    # (integers where every one is written as one) and an empty cell is a missing value, as a JSON null.
    for name in frame.columns:
        if not pd.api.types.is_string_dtype(frame[name]) and not pd.api.types.is_object_dtype(frame[name]):
            continue
        cells = frame[name].astype(str).str.strip()
        blank = cells == ""
        if blank.any() and not blank.all():
            numbers = pd.to_numeric(cells[~blank], errors="coerce")
            if numbers.notna().all() and (numbers.abs() < float("inf")).all():
                whole = cells[~blank].str.fullmatch(r"[+-]?\d+").all()
                frame[name] = pd.to_numeric(cells.where(~blank), errors="coerce").astype("Int64" if whole else "Float64")
    return frame


def _object(pairs):
    """A JSON object from its key/value pairs, refusing a key given twice (``json`` keeps the last)."""
    record = dict(pairs)
    if len(record) != len(pairs):
        repeated = next(key for i, (key, _) in enumerate(pairs) if key in dict(pairs[:i]))
        raise _RepeatedKey(repeated)
    return record


class _RepeatedKey(ValueError):
    pass


_DECODER = json.JSONDecoder(object_pairs_hook=_object)


def _shape(value) -> str:
    """What a JSON value is, in words (for a message)."""
    if isinstance(value, list):
        return "a list of lists" if value and all(isinstance(v, list) for v in value) else "a list"
    return {dict: "an object", str: "a string", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _decode(path: Path, text: str, where: str):
    try:
        return _DECODER.decode(text)
    except _RepeatedKey as error:
        raise SourceLoadError(f"{path}: {where} names the field {error.args[0]!r} twice; give every field its "
                              "own name") from None


def _read_json_lines(path: Path, text: str | None = None) -> list[dict]:
    rows = []
    with io.StringIO(read_text(path) if text is None else text) as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = _decode(path, line, f"the record on line {line_number}")
            except json.JSONDecodeError as error:
                raise SourceLoadError(f"{path}: line {line_number} is not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise SourceLoadError(f"{path}: line {line_number} is {_shape(record)}, not a JSON object; a JSON "
                                      "lines table holds one object (field: value, ...) per line")
            rows.append(record)
    return rows


def _records_dataset(path: Path, rows: list[dict]) -> datasets.Dataset:
    """Records as columns (every field any record has, in order of first appearance; None where a
    record lacks it). A column whose values mix scalar types is read as text (JSON's spelling:
    ``1``, ``true``), with a :class:`SourceNote`; one that mixes lists or objects with other values,
    or values Arrow cannot hold in one column, is refused naming it."""
    names = dict.fromkeys(key for row in rows for key in row)
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        kinds = set(map(type, values)) - {type(None)}
        if len(kinds) > 1 and not kinds <= {int, float}:
            nested = kinds & {list, dict}
            if nested:
                raise SourceLoadError(
                    f"{path}: field {name!r} holds {' and '.join(sorted(_kind(k) for k in kinds))} values; a "
                    "column holds one kind of value (give it the same shape in every record)")
            warnings.warn(SourceNote(
                f"field {name!r} of {path.name} mixes {' and '.join(sorted(_kind(k) for k in kinds))} values: "
                "read as text"), stacklevel=2)
            values = [v if v is None or isinstance(v, str) else json.dumps(v) for v in values]
        columns[name] = values
    try:
        return datasets.Dataset(pa.table(columns))
    except UnicodeEncodeError:  # Arrow names neither the row nor the field
        name, row, character, offset = unencodable_text(columns)
        where = "a field's name" if row is None else f"field {name!r} of row {row}"
        raise SourceLoadError(f"{path}: {where} holds {character!r} at character {offset}, {LONE_SURROGATE}") from None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        bad = next((n for n, v in columns.items() if not _arrow_ok(v)), None)
        where = f"field {bad!r}" if bad is not None else "a field"
        raise SourceLoadError(f"{path}: {where} holds values of different shapes in different records "
                              f"({str(error).splitlines()[0]}); give it the same shape in every record") from None


def _kind(kind: type) -> str:
    return {str: "text", int: "integer", float: "number", bool: "boolean", list: "list", dict: "object"}.get(
        kind, kind.__name__)


def _arrow_ok(values) -> bool:
    try:
        pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return False
    return True


def read_table(path: str | Path) -> datasets.Dataset:
    """Read a CSV/TSV/JSONL/JSON/Parquet file into a ``datasets.Dataset``, rows in file order."""
    path = Path(path)
    if not path.is_file() or path_problem(path):
        if path.is_dir():
            raise SourceLoadError(f"{str(path)!r} is a folder, not a table file (CSV/TSV/JSONL/JSON/Parquet)")
        raise not_found(str(path), "source", "a CSV/TSV/JSONL/JSON/Parquet file")
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
        if not text.strip():
            raise SourceLoadError(f"{path} is empty: it holds no rows")
        try:
            loaded = _decode(path, text, "a record")
        except json.JSONDecodeError:
            rows = _read_json_lines(path, text)  # a .json file that is really JSON lines
        else:
            if not isinstance(loaded, list):
                raise SourceLoadError(f"{path} is {_shape(loaded)}, not a table: expected a JSON list of objects "
                                      "(one per row) or JSON lines")
            bad = next((i for i, row in enumerate(loaded) if not isinstance(row, dict)), None)
            if bad is not None:
                raise SourceLoadError(f"{path} is {_shape(loaded)}, not a table of records: element {bad + 1} is "
                                      f"{_shape(loaded[bad])}; expected a JSON list of objects (one per row)")
            rows = loaded
    else:
        raw = path.read_bytes()
        if path.suffix.lower() == ".gz":
            raw = gzip.decompress(raw)
        try:
            check_header(path, pq.read_schema(io.BytesIO(raw)).names)
            table = pq.read_table(io.BytesIO(raw))
        except SourceLoadError:
            raise
        except Exception as error:  # pyarrow raises several kinds for a damaged file
            raise SourceLoadError(f"{path}: not a readable Parquet file ({error})") from None
        return datasets.Dataset(table)
    if not rows:
        raise SourceLoadError(f"{path} holds no rows")
    return _records_dataset(path, rows)


def cache_root() -> Path:
    """resplit's cache folder: ``$RESPLIT_CACHE``, else ``$XDG_CACHE_HOME/resplit`` or ``~/.cache/resplit``."""
    if os.environ.get("RESPLIT_CACHE"):
        return Path(os.environ["RESPLIT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "resplit"
