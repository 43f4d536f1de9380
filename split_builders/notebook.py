"""The notebook API: ``split_builders.split(method, data, **options)``.

One function for every registered method. ``data`` is a pandas ``DataFrame``, a ``datasets.Dataset`` or
``DatasetDict`` (or anything ``--source`` takes: a file, a bundled sample, a Hub id); the options are the
method's (``resplit <method> --help``, as keyword arguments: ``query_field="hypothesis"``,
``scores="scores.npy"``, ``seed=7``). The build is :func:`~split_builders.builder.build`, the command
line's own: the table is written as a Parquet file named by its content
(:func:`loading_scripts.frames.table_file`) and read by the same readers, so the field detection, prompt
template (SNLI's ``snli_label``), filters, defaults and evidence are those of ``resplit <method>
--source FILE`` on the same table. The release folder is written to ``out`` (kept) or to a temporary
folder (removed), and its configs are returned in memory.

>>> import pandas as pd, split_builders                                         # doctest: +SKIP
>>> configs = split_builders.split("likelihood", pd.read_json("snli_1.0_dev.jsonl", lines=True))  # doctest: +SKIP
>>> configs["ll_split"]["test"].features["label"].names                         # doctest: +SKIP
['entailment', 'neutral', 'contradiction']
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from split_builders.registry import get_method
from split_builders.errors import InvalidParameterError, ResplitError

# split()'s own keywords, besides the method's options.
OWN_KEYWORDS = ("out", "overwrite", "progress", "scores_key")


def split(method, data, /, *, out=None, overwrite: bool = False, progress: bool = False, scores_key: str | None = None,
          views=(), **options) -> dict:
    """Split ``data`` with a registered method, as ``resplit <method>`` does.

    Parameters
    ----------
    method : str or SplitMethod
        A registry name (``resplit list``) or a method instance.
    data : pandas.DataFrame, datasets.Dataset, datasets.DatasetDict, list of dicts, ... or str
        The rows (:data:`loading_scripts.frames.ACCEPTED`: a ``DatasetDict``'s splits in order, with a
        ``source_split`` column; an ``IterableDataset`` read whole; a list of dicts one per row; a ``Series``, a
        numpy array or a list of texts as one ``text`` column), or what ``--source`` takes (a path: what
        CURRICULUM and the behavioural method read, a folder of zips and a CheckList suite).
    out : str or Path, optional
        Also keep the release folder there (the same folder ``resplit <method> --out`` writes).
    overwrite : bool
        Replace an existing release at ``out``.
    progress : bool
        Progress bars while computing the signal.
    views : str or iterable of str
        Installed third-party evidence views to run in this build, as ``--view NAME`` (:func:`~split_builders.build`).
    **options
        The method's options (``resplit <method> --help``), by their names or their flags' (``dev_size=`` is
        ``validation_size=``; ``random_state=`` is ``seed=``). ``scores=`` takes a ``.npy`` file, or the scores
        themselves: a numpy array, a list or a pandas ``Series``, one log-likelihood per row of ``data``, in its
        order (by position, whatever ids ``data`` carries: a ``source_id`` column of its own, an index; a
        ``Series`` whose index is not ``data``'s own is ambiguous and refused). A keyword that names no option is
        refused in one line with the option a near miss means.
    scores_key : str, optional
        Align given ``scores=`` by this column of ``data`` instead of by position: ``scores`` is then a mapping
        (a ``dict`` or a ``Series``) from the column's values (each row's once) to the row's log-likelihood.

    Returns
    -------
    dict of str to datasets.DatasetDict
        One ``DatasetDict`` per config, its splits as the release has them, in memory.

    Raises
    ------
    ResplitError
        One line, in this API's words: the keyword (``overwrite=True``, ``query_field=...``) where the command
        line would name its flag, and ``your DataFrame`` (``your Dataset``, ...) where it would name the file.
    """
    from split_builders.builder import build
    from split_builders.options import resolve_keywords

    method = get_method(method)
    aliases = {alias.lstrip("-").replace("-", "_"): "source" for alias in method.source_aliases}
    words = {}  # internal file -> the user's object, for the messages
    try:
        options = resolve_keywords(method.Options, options, where=f"split({method.name!r})", aliases=aliases,
                                   extra=OWN_KEYWORDS)
        if "source" in options:
            raise InvalidParameterError(f"split({method.name!r}) takes the data as its second argument: give it "
                                        "there, not as source=")
        source, rows = data, None
        if data is not None and not isinstance(data, (str, os.PathLike)):
            from loading_scripts.frames import describe
            from split_builders.builder import table_source

            source = table_source(method, data, options)
            words[str(source)] = describe(data)
            rows = _rows_of(source)
        if scores_key is not None and (options.get("scores") is None or rows is None
                                       or isinstance(options["scores"], (str, os.PathLike))):
            raise InvalidParameterError("scores_key= names the column of your table that given scores= (a mapping "
                                        "from its values to scores) are aligned by; give both, or neither")
        if options.get("scores") is not None and not isinstance(options["scores"], (str, os.PathLike)):
            what = words.get(str(source))
            given = options["scores"]
            if rows is not None:  # one score per row of the user's table, put in the order its reader reads them
                given = by_position(given, data, key=scores_key, what=what, table=source)
                given = in_reader_order(given, source, options)
            options["scores"] = str(given_scores_file(given, rows, what))
            words[f"scores file {options['scores']!r}"] = "scores="
            words[options["scores"]] = "your scores"
        with tempfile.TemporaryDirectory(prefix="resplit-split-") as work:
            target = Path(out) if out is not None else Path(work) / "release"
            result = build(method, source=source, out=str(target), overwrite=overwrite, progress=progress, views=views,
                           log=lambda message: None, **options)
            return release_datasets(result.out)
    except ResplitError as error:
        error.args = (in_python_words(str(error), method, words),)
        raise


def by_position(scores, data, *, key: str | None = None, what: str | None = None, table=None):
    """Given scores one per row of ``data`` in its row order: as they are (an array, a list, a ``Series`` whose
    index is ``data``'s own), or, with ``key``, looked up by each row's value of the column ``key`` (``scores`` a
    mapping; the column read from ``data``, else from ``table``, the table file of its rows). Refused in one
    line: a ``Series`` whose index is not ``data``'s (by position or by label? ambiguous),
    a ``key`` that is not a column of ``data`` or whose values repeat, a row whose key has no score."""
    import numpy as np
    import pandas as pd

    what = what or "your data"
    if key is not None:
        try:
            column = list(data[key]) if _has_column(data, key) else _table_column(table, key)
        except (KeyError, TypeError, IndexError, ValueError, OSError):
            raise InvalidParameterError(f"scores_key={key!r} is not a column of {what}; name the column whose values "
                                        "the scores are keyed by") from None
        if len(set(map(_key, column))) != len(column):
            raise InvalidParameterError(f"scores_key={key!r}: the column's values repeat in {what}, so a score "
                                        "cannot name its row; give a column with one value per row")
        lookup = scores.to_dict() if isinstance(scores, pd.Series) else scores
        if not hasattr(lookup, "keys"):
            raise InvalidParameterError(f"scores_key={key!r} aligns scores= by {key!r}: give a dict or a Series from "
                                        f"the column's values to scores, not {type(scores).__name__}")
        lookup = {_key(k): v for k, v in lookup.items()}
        missing = [value for value in column if _key(value) not in lookup]
        if missing:
            raise InvalidParameterError(f"scores= has no score for {len(missing)} row(s) of {what} (scores_key={key!r} "
                                        f"{missing[0]!r} first); give one score per row")
        return np.asarray([lookup[_key(value)] for value in column])
    if isinstance(scores, pd.Series):
        index = getattr(data, "index", None) if isinstance(data, (pd.DataFrame, pd.Series)) else None
        default = isinstance(scores.index, pd.RangeIndex) and scores.index.start == 0 and scores.index.step == 1
        if index is not None and not scores.index.equals(index) and not (
                default and isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1):
            raise InvalidParameterError(f"scores= is a Series whose index is not the index of {what}, so whether it "
                                        "is aligned by position or by label is ambiguous; give scores.to_numpy() "
                                        "(by position) or scores.reindex(df.index) (by label)")
        if index is None and not default:
            raise InvalidParameterError(f"scores= is a Series with an index of its own, and {what} has none to align "
                                        "it by; give scores.to_numpy() (one score per row, in its order)")
    return scores


def _has_column(data, key: str) -> bool:
    """Whether ``data`` (a DataFrame, a Dataset, ...) has the column ``key`` of its own."""
    names = getattr(data, "columns", None)
    names = getattr(data, "column_names", None) if names is None else names
    try:
        return key in names
    except TypeError:  # no columns (a DatasetDict's are per split), or not a table
        return False


def _table_column(table, key: str) -> list:
    """The column ``key`` of the table file ``table`` (the rows as :func:`split` wrote them)."""
    import pyarrow.parquet as pq

    if table is None or key not in pq.read_schema(table).names:
        raise KeyError(key)
    return pq.read_table(table, columns=[key]).column(0).to_pylist()


def _key(value):
    """A key value comparable across numpy and Python types (``np.int64(3)`` and ``3`` alike)."""
    return value.item() if hasattr(value, "item") else value


def in_reader_order(scores, source, options: dict):
    """Scores given in the order of the rows of the table file ``source`` put in the order the source's reader
    reads them, which ``--scores`` takes: a table with a ``source_id`` column of its own is read in ascending
    ``source_id`` order by the generic reader (:func:`loading_scripts.table_reader`), by position by SNLI's and
    BoolQ's. Without that, every row would get another row's score."""
    import numpy as np
    import pyarrow.parquet as pq

    from loading_scripts import table_reader
    from split_builders.builder import FIELD_OPTIONS

    columns = pq.read_schema(source).names
    explicit = any(options.get(name) for name in FIELD_OPTIONS if name not in ("label_field", "text_fields"))
    if "source_id" not in columns or table_reader(columns, task=options.get("task"), explicit_fields=explicit):
        return scores
    ids = pq.read_table(source, columns=["source_id"]).column(0).to_numpy(zero_copy_only=False)
    values = np.asarray(getattr(scores, "to_numpy", lambda: scores)())
    if ids.dtype.kind not in "iu" or values.ndim != 1 or values.size != ids.size:
        return scores  # refused as it is: by the reader (the ids) or by given_scores_file (the values)
    return values[np.argsort(ids, kind="stable")]


def _rows_of(path) -> int:
    """The rows of a table file :func:`~split_builders.builder.table_source` wrote (its Parquet metadata)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def given_scores_file(scores, rows: int | None = None, what: str | None = None) -> Path:
    """Scores given as values (a numpy array, a list, a pandas ``Series``: one log-likelihood per row, in the
    rows' order) as the ``.npy`` file ``--scores`` reads, named by its content in ``$RESPLIT_CACHE/given-scores``.
    Refused in one line: what is not a one-dimensional sequence of numbers, and a count other than ``rows``
    (the rows of ``what``, the user's table) where it is known."""
    import hashlib
    import io

    import numpy as np

    from split_builders.cache import atomic_write, cache_root

    try:
        values = np.asarray(getattr(scores, "to_numpy", lambda: scores)())
    except (TypeError, ValueError) as error:
        raise InvalidParameterError(f"scores= must be a .npy file or numbers (an array, a list or a Series, one "
                                    f"log-likelihood per row), got {type(scores).__name__} ({error})") from None
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        raise InvalidParameterError(f"scores= must be a .npy file or one-dimensional numbers (one log-likelihood per "
                                    f"row), got {type(scores).__name__} of shape {values.shape} and type {values.dtype}")
    if rows is not None and values.size != rows:
        raise InvalidParameterError(f"scores= has {values.size} values but {what or 'the data'} has {rows} rows: give "
                                    "one log-likelihood per row, in its order")
    buffer = io.BytesIO()
    np.save(buffer, values, allow_pickle=False)
    payload = buffer.getvalue()
    path = cache_root() / "given-scores" / f"scores-{hashlib.sha256(payload).hexdigest()[:16]}.npy"
    if not path.is_file():
        atomic_write(path, payload)
    return path


# A command-line flag in a message, with the value written after it where there is one (quoted, or one word).
_FLAG = re.compile(r"--(?P<no>no-)?(?P<name>[a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?P<value> (?:'[^']*'|\"[^\"]*\"|[\w.-]+))?")


def in_python_words(message: str, method, words: dict | None = None) -> str:
    """A message written for the command line in the words of :func:`split`: each of the method's flags as its
    keyword (``--overwrite`` -> ``overwrite=True``, ``--no-inoculation`` -> ``inoculation=False``, ``--query-field``
    -> ``query_field=...``, ``--task snli`` -> ``task='snli'``, ``--out 'x'`` -> ``out='x'``, ``--dev-size 0`` ->
    ``validation_size=0``, ``--source`` ->
    ``data``) and each internal file of ``words`` (the cache's copy of a table) as what the user gave
    (``your DataFrame``)."""
    import dataclasses
    import typing

    from split_builders.options import option_names

    for path, word in sorted((words or {}).items(), key=lambda item: -len(item[0])):
        for text in dict.fromkeys((repr(path), path, Path(path).name)):
            message = message.replace(text, word)
    specs = {spec.name: spec for spec in dataclasses.fields(method.Options)}
    hints = typing.get_type_hints(method.Options)
    names = option_names(method.Options)
    for alias in method.source_aliases:
        names.setdefault(alias.lstrip("-").replace("-", "_"), "source")

    def keyword(match) -> str:
        name = names.get(match["name"].replace("-", "_"))
        value = match["value"] or ""
        if name is None:
            return match[0]
        if name == "source":
            return "data" + value
        if hints.get(name) is bool:
            return f"{name}={not match['no']}" + value
        choices = specs[name].metadata.get("choices") or ()
        word = value.strip()
        if word[:1] in ("'", '"'):
            return f"{name}={word}"
        if word and word in map(str, choices):
            return f"{name}={word!r}"
        if re.fullmatch(r"-?\d+(\.\d+)?", word):
            return f"{name}={word}"
        return f"{name}=..." + value

    return _FLAG.sub(keyword, message)


def prompts(data, /, *, template: str | None = None, task: str | None = None, prompt_field: str | None = None,
            query_field: str | None = None, label_field: str | None = None) -> tuple[list[str], list[str]]:
    """The ``(prompts, queries)`` ``resplit likelihood`` scores for ``data`` in its prompted setting, row by row:
    the same reader (a table as :func:`split` writes it) and the same template choice
    (:func:`~split_builders.signals.lm.prompts.prompted_texts`: ``template``, else the task's, e.g. SNLI's
    ``snli_label``), for scoring with a model of one's own."""
    from loading_scripts import load_source
    from loading_scripts.frames import table_file
    from split_builders.cache import cache_root
    from split_builders.signals.lm.prompts import prompted_texts

    fields = (prompt_field, query_field, label_field)
    source = str(data) if isinstance(data, (str, os.PathLike)) else str(
        table_file(data, cache_root() / "tables", layout=not any(fields)))
    loaded = load_source(source, prompt_field=prompt_field, query_field=query_field, label_field=label_field,
                         task=task)
    _, texts, queries = prompted_texts(loaded, template)
    return texts, queries


def release_datasets(folder) -> dict:
    """Every config of a release folder as a ``DatasetDict`` held in memory (its features, ``ClassLabel``
    names included, from the data files), the data files checked against the card's sha256 first."""
    import datasets
    from datasets.table import InMemoryTable

    from split_builders.release.folder import Released

    released = Released(folder)
    configs = {}
    for config in released.configs:
        parts = {}
        for split in released.files[config]:
            table = released.table(config, split)
            features = datasets.Features.from_arrow_schema(table.schema)
            parts[split] = datasets.Dataset(InMemoryTable(table), info=datasets.DatasetInfo(features=features),
                                            split=datasets.NamedSplit(split))
        configs[config] = datasets.DatasetDict(parts)
    return configs
