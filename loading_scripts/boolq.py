"""BoolQ (Clark et al., 2019) as canonical rows.

Canonical fields: ``source_id``, ``question``, ``passage``, ``title`` (when the source has it)
and ``label`` (ClassLabel false / true, from the boolean ``answer``).
"""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasets.table import InMemoryTable

from loading_scripts.files import read_table
from loading_scripts.frames import SPLIT_COLUMNS
from loading_scripts.hub import load_hub_splits
from loading_scripts.source import Source
from loading_scripts.tables import arrow_table
from loading_scripts.errors import FieldError

HUB_ID = "google/boolq"
DATASET = "BoolQ"  # the dataset's name: a file read here is named "BoolQ (<file>)" (cards, harness task names)
LICENSE = "cc-by-sa-3.0"
CITATION = (
    "@inproceedings{clark-etal-2019-boolq,\n"
    "  title = {BoolQ: Exploring the Surprising Difficulty of Natural Yes/No Questions},\n"
    "  author = {Clark, Christopher and Lee, Kenton and Chang, Ming-Wei and Kwiatkowski, Tom "
    "and Collins, Michael and Toutanova, Kristina},\n  booktitle = {Proceedings of NAACL},\n  year = {2019}\n}"
)
LABEL = datasets.ClassLabel(names=["false", "true"])


def _canonical(table, *, offset: int = 0, split: str | None = None):
    """Canonical columns of a BoolQ table (whole Arrow columns): source_id, question, passage,
    title (null where absent), label (0 false / 1 true, from ``answer``) and source_split."""
    data = arrow_table(table)
    n = len(data)
    answer = data.column("answer").combine_chunks()
    if not pa.types.is_boolean(answer.type):  # truthiness, as bool(value)
        answer = pa.array([bool(value) for value in answer.to_pylist()])
    columns = {"source_id": pa.array(np.arange(offset, offset + n, dtype=np.int64)),
               "question": data.column("question").combine_chunks().cast(pa.string()),
               "passage": data.column("passage").combine_chunks().cast(pa.string()),
               "title": (data.column("title").combine_chunks().cast(pa.string()) if "title" in data.column_names
                         else pa.nulls(n, pa.string())),
               "label": pc.cast(pc.fill_null(answer, False), pa.int64())}
    if split is not None:
        columns["source_split"] = pa.array([split] * n, pa.string())
    return pa.table(columns)


def _dataset(table, features) -> datasets.Dataset:
    return datasets.Dataset(InMemoryTable(table.cast(features.arrow_schema)),
                            info=datasets.DatasetInfo(features=features), fingerprint=f"resplit-boolq-{len(table)}")


def _features(extra: str | None = None) -> datasets.Features:
    features = datasets.Features({
        "source_id": datasets.Value("int64"), "question": datasets.Value("string"),
        "passage": datasets.Value("string"), "title": datasets.Value("string"), "label": LABEL,
    })
    if extra:
        features[extra] = datasets.Value("string")
    return features


def from_jsonl(path: str | Path, *, name: str | None = None) -> Source:
    """Read the official BoolQ jsonl (question, title, answer, passage)."""
    table = read_table(path)
    for column in ("question", "passage", "answer"):
        if column not in table.column_names:
            raise FieldError(column, table.column_names, source=str(path))
    canonical, features = _canonical(table), _features()
    for column in SPLIT_COLUMNS:  # the split each row came from (a DatasetDict's), kept
        if column in table.column_names:
            canonical = canonical.append_column(column, arrow_table(table).column(column).cast(pa.string()))
            features[column] = datasets.Value("string")
    dataset = _dataset(canonical, features)
    return Source(dataset, name=name or f"{DATASET} ({Path(path).name})", task="boolq", prompt_field="passage",
                  query_field="question", label_field="label",
                  source_id_note="0-based line number in the BoolQ jsonl file",
                  license=LICENSE, citation=CITATION, language=("en",), hub_id=HUB_ID)


def from_hub(repo_id: str = HUB_ID, *, splits: list[str] | None = None,
             revision: str | None = None) -> Source:
    """Read BoolQ from the Hub; splits concatenated in order (train, validation)."""
    tables, offset = [], 0
    for split_name, part in load_hub_splits(repo_id, splits or ["train", "validation"], revision=revision):
        tables.append(_canonical(part, offset=offset, split=split_name))
        offset += len(part)
    dataset = _dataset(pa.concat_tables(tables), _features("source_split"))
    return Source(dataset, name=repo_id, task="boolq", prompt_field="passage", query_field="question",
                  label_field="label", revision=revision,
                  source_id_note="0-based row number in the Hub splits concatenated in order "
                                 "(train, validation); source_split names the split",
                  license=LICENSE, citation=CITATION, language=("en",), hub_id=HUB_ID)
