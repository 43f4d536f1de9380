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

from split_builders.api import get_method
from split_builders.errors import InvalidParameterError, ResplitError

# split()'s own keywords, besides the method's options.
OWN_KEYWORDS = ("out", "overwrite", "progress")


def split(method, data, /, *, out=None, overwrite: bool = False, progress: bool = False, **options) -> dict:
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
    **options
        The method's options (``resplit <method> --help``), by their names or their flags' (``dev_size=`` is
        ``validation_size=``; ``random_state=`` is ``seed=``). ``scores=`` takes a ``.npy`` file, or the scores
        themselves: a numpy array, a list or a pandas ``Series``, one log-likelihood per row of ``data``, in its
        order. A keyword that names no option is refused in one line with the option a near miss means.

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
        if options.get("scores") is not None and not isinstance(options["scores"], (str, os.PathLike)):
            options["scores"] = str(given_scores_file(options["scores"], rows, words.get(str(source))))
            words[f"scores file {options['scores']!r}"] = "scores="
            words[options["scores"]] = "your scores"
        with tempfile.TemporaryDirectory(prefix="resplit-split-") as work:
            target = Path(out) if out is not None else Path(work) / "release"
            result = build(method, source=source, out=str(target), overwrite=overwrite, progress=progress,
                           log=lambda message: None, **options)
            return release_datasets(result.out)
    except ResplitError as error:
        error.args = (in_python_words(str(error), method, words),)
        raise


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
