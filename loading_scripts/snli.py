"""SNLI (Bowman et al., 2015) as canonical rows, with the Likelihood Splits paper's filter.

Canonical fields: ``source_id``, ``premise``, ``hypothesis``, ``label`` (ClassLabel
entailment / neutral / contradiction), ``pair_id`` (local files) and ``source_split`` (Hub).
The filter (Godbole & Jia, 2023) drops rows with no gold label, the placeholder premise
"Cannot see picture to describe." and empty hypotheses.
"""

from __future__ import annotations

from importlib import resources
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

HUB_ID = "stanfordnlp/snli"
DATASET = "SNLI"  # the dataset's name: a source read here is named "SNLI (<file>)" (cards, harness task names)
LABELS = ("entailment", "neutral", "contradiction")  # the Hub dataset's ClassLabel order
PLACEHOLDER_PREMISE = "Cannot see picture to describe."
SAMPLE_FILE = "snli_1.0_dev_sample.jsonl.gz"
LICENSE = "cc-by-sa-4.0"
CITATION = (
    "@inproceedings{bowman-etal-2015-large,\n"
    "  title = {A large annotated corpus for learning natural language inference},\n"
    "  author = {Bowman, Samuel R. and Angeli, Gabor and Potts, Christopher and Manning, Christopher D.},\n"
    "  booktitle = {Proceedings of EMNLP},\n  year = {2015}\n}"
)
FEATURES = datasets.Features({
    "source_id": datasets.Value("int64"),
    "premise": datasets.Value("string"),
    "hypothesis": datasets.Value("string"),
    "label": datasets.ClassLabel(names=list(LABELS)),
})


def sample_path() -> Path:
    """The bundled SNLI sample (first 2,000 lines of the official dev file)."""
    return Path(resources.files("loading_scripts") / "samples" / SAMPLE_FILE)


def _filter(premise, hypothesis, label) -> tuple[np.ndarray, dict]:
    """Apply the paper's filter to whole columns: ``(kept row positions, {reason: dropped row
    positions})``. A row is dropped for the first reason that applies, in this order: no gold
    label, the placeholder premise (after ``str.strip``), an empty hypothesis (``str.strip``)."""
    no_gold = ~np.asarray(pc.fill_null(pc.is_in(label, value_set=pa.array(LABELS)), False))
    # Arrow finds the few candidates; Python's own strip() decides, so the test is exactly str.strip's.
    maybe_placeholder = np.flatnonzero(np.asarray(pc.fill_null(pc.match_substring(premise, PLACEHOLDER_PREMISE),
                                                               False)))
    placeholder = np.zeros(len(label), dtype=bool)
    placeholder[[i for i in maybe_placeholder.tolist()
                 if premise[i].as_py().strip() == PLACEHOLDER_PREMISE]] = True
    # A hypothesis with a letter or digit is not empty; the others (and nulls) are checked one by one.
    maybe_empty = np.flatnonzero(~np.asarray(pc.fill_null(pc.match_substring_regex(hypothesis, "[A-Za-z0-9]"),
                                                          False)))
    empty = np.zeros(len(label), dtype=bool)
    empty[[i for i in maybe_empty.tolist() if not (hypothesis[i].as_py() or "").strip()]] = True
    placeholder &= ~no_gold
    empty &= ~(no_gold | placeholder)
    dropped = {"no gold label": np.flatnonzero(no_gold), "placeholder premise": np.flatnonzero(placeholder),
               "empty hypothesis": np.flatnonzero(empty)}
    return np.flatnonzero(~(no_gold | placeholder | empty)), dropped


def _canonical(columns: dict, labels, *, name: str, features, **source) -> Source:
    """Canonical rows from whole columns (``source_id`` = position): the filter applied, labels
    encoded as the ClassLabel, the counts of dropped rows kept by reason with their source ids."""
    kept, dropped = _filter(columns["premise"], columns["hypothesis"], labels)
    label_codes = pc_index_in(labels, LABELS)
    table = pa.table({"source_id": pa.array(np.arange(len(labels), dtype=np.int64)), "premise": columns["premise"],
                      "hypothesis": columns["hypothesis"], "label": label_codes,
                      **{k: v for k, v in columns.items() if k not in ("premise", "hypothesis")}})
    table = table.take(pa.array(kept)).cast(features.arrow_schema)
    dataset = datasets.Dataset(InMemoryTable(table), info=datasets.DatasetInfo(features=features),
                               fingerprint=f"resplit-snli-{len(table)}")  # no hashing of the rows
    return Source(dataset, name=name, task="snli", prompt_field="premise", query_field="hypothesis",
                  label_field="label", filtered={reason: int(rows.size) for reason, rows in dropped.items()},
                  dropped_ids=dropped, license=LICENSE, citation=CITATION, language=("en",), hub_id=HUB_ID,
                  **source)


def pc_index_in(labels, names) -> pa.Array:
    """Position of each label in ``names`` (null where it is not one of them)."""
    return pc.cast(pc.index_in(labels, value_set=pa.array(names)), pa.int64())


def from_jsonl(path: str | Path, *, name: str | None = None) -> Source:
    """Read an official ``snli_1.0_*.jsonl`` file; ``source_id`` is the 0-based line number. A table in the Hub's
    column names (``premise``, ``hypothesis``, ``label``: its names, with ``-`` for no gold label, or its codes
    0 / 1 / 2, with -1) is read the same way (``--task snli``). A column naming the split each row came from
    (``source_split``, a DatasetDict's ``datasetdict_split``: :data:`loading_scripts.frames.SPLIT_COLUMNS`) is
    kept."""
    table = read_table(path)
    data = arrow_table(table)
    string = lambda column: data.column(column).combine_chunks().cast(pa.string())  # noqa: E731
    hub = not {"sentence1", "sentence2", "gold_label"} & set(table.column_names) \
        and {"premise", "hypothesis", "label"} <= set(table.column_names)
    if hub:
        premise, hypothesis, gold = string("premise"), string("hypothesis"), _gold_of_hub_label(data.column("label"))
    else:
        for column in ("sentence1", "sentence2", "gold_label"):
            if column not in table.column_names:
                raise FieldError(column, table.column_names, source=str(path))
        premise, hypothesis, gold = string("sentence1"), string("sentence2"), string("gold_label")
    pair_id = (string("pairID") if "pairID" in table.column_names else pa.nulls(len(data), pa.string()))
    features = FEATURES.copy()
    features["pair_id"] = datasets.Value("string")
    columns = {"premise": premise, "hypothesis": hypothesis, "pair_id": pair_id}
    for column in SPLIT_COLUMNS:
        if column in table.column_names:
            columns[column] = string(column)
            features[column] = datasets.Value("string")
    return _canonical(columns, gold, name=name or f"{DATASET} ({Path(path).name})", features=features,
                      source_id_note="0-based line number in the SNLI jsonl file (pairID kept as pair_id)")


def _gold_of_hub_label(column) -> pa.Array:
    """SNLI's label names from a Hub-layout ``label`` column: codes 0 / 1 / 2 as their names (-1 and null: no
    gold label), names as they are."""
    column = column.combine_chunks()
    if pa.types.is_integer(column.type):
        codes = np.asarray(column.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        names = pa.array([*LABELS, None], pa.string())
        return names.take(pa.array(np.where((codes < 0) | (codes >= len(LABELS)), len(LABELS), codes)))
    return column.cast(pa.string())


def sample() -> Source:
    """The bundled sample: resplit's embedded default source."""
    return from_jsonl(sample_path(), name=f"{DATASET} (sample: first 2,000 lines of snli_1.0_dev.jsonl)")


def from_hub(repo_id: str = HUB_ID, *, splits: list[str] | None = None,
             revision: str | None = None) -> Source:
    """Read SNLI from the Hub; all splits concatenated in order (train, validation, test)."""
    parts = load_hub_splits(repo_id, splits or ["train", "validation", "test"], revision=revision)
    premise, hypothesis, labels, split_names = [], [], [], []
    for split_name, part in parts:
        data = arrow_table(part)
        label = data.column("label").combine_chunks()
        if isinstance(part.features["label"], datasets.ClassLabel):  # codes to names; -1 (no gold) to null
            names = pa.array(part.features["label"].names + [None], pa.string())
            codes = np.asarray(label.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            label = names.take(pa.array(np.where(codes < 0, len(names) - 1, codes)))
        premise.append(data.column("premise").combine_chunks().cast(pa.string()))
        hypothesis.append(data.column("hypothesis").combine_chunks().cast(pa.string()))
        labels.append(label.cast(pa.string()))
        split_names.append(pa.array([split_name] * len(data), pa.string()))
    features = FEATURES.copy()
    features["source_split"] = datasets.Value("string")
    concat = lambda arrays: pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())  # noqa: E731
    return _canonical({"premise": concat(premise), "hypothesis": concat(hypothesis),
                       "source_split": concat(split_names)}, concat(labels), name=repo_id, features=features,
                      revision=revision,
                      source_id_note="0-based row number in the Hub splits concatenated in order "
                                     "(train, validation, test); source_split names the split")
