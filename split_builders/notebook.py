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

import tempfile
from pathlib import Path

from split_builders.api import get_method


def split(method, data, /, *, out=None, overwrite: bool = False, progress: bool = False, **options) -> dict:
    """Split ``data`` with a registered method, as ``resplit <method>`` does.

    Parameters
    ----------
    method : str or SplitMethod
        A registry name (``resplit list``) or a method instance.
    data : pandas.DataFrame, datasets.Dataset, datasets.DatasetDict or str
        The rows (a ``DatasetDict``'s splits in order, with a ``source_split`` column), or what
        ``--source`` takes.
    out : str or Path, optional
        Also keep the release folder there (the same folder ``resplit <method> --out`` writes).
    overwrite : bool
        Replace an existing release at ``out``.
    progress : bool
        Progress bars while computing the signal.
    **options
        The method's options, by their names (``resplit <method> --help``).

    Returns
    -------
    dict of str to datasets.DatasetDict
        One ``DatasetDict`` per config, its splits as the release has them, in memory.
    """
    from split_builders.builder import build

    method = get_method(method)
    with tempfile.TemporaryDirectory(prefix="resplit-split-") as work:
        target = Path(out) if out is not None else Path(work) / "release"
        result = build(method, source=data, out=str(target), overwrite=overwrite, progress=progress,
                       log=lambda message: None, **options)
        return release_datasets(result.out)


def prompts(data, /, *, template: str | None = None, task: str | None = None, prompt_field: str | None = None,
            query_field: str | None = None, label_field: str | None = None) -> tuple[list[str], list[str]]:
    """The ``(prompts, queries)`` ``resplit likelihood`` scores for ``data`` in its prompted setting, row by row:
    the same reader (a table as :func:`split` writes it) and the same template choice
    (:func:`~split_builders.signals.lm.prompts.prompted_texts`: ``template``, else the task's, e.g. SNLI's
    ``snli_label``), for scoring with a model of one's own."""
    from loading_scripts import load_source
    from loading_scripts.frames import is_table, table_file
    from split_builders.cache import cache_root
    from split_builders.signals.lm.prompts import prompted_texts

    source = str(table_file(data, cache_root() / "tables")) if is_table(data) else str(data)
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
