"""``split_builders.split(method, data, **options)`` on a DataFrame and on a Dataset gives the command line's rows.

The table is 300 rows of SNLI's official dev file; the scores are given (``--scores``), so nothing is scored.
"""

import gzip
import itertools
import json

import datasets
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import split_builders
import split_builders.notebook
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.release.folder import Released

ROWS = 300


@pytest.fixture(scope="module")
def table(shared, tmp_path_factory):
    """``(DataFrame, the same rows as a JSONL file, a scores file)``."""
    work = tmp_path_factory.mktemp("notebook")
    with gzip.open(shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz", "rt", encoding="utf-8") as handle:
        lines = list(itertools.islice(handle, ROWS))
    (work / "table.jsonl").write_text("".join(lines), encoding="utf-8")
    frame = pd.DataFrame([json.loads(line) for line in lines])
    scores = work / "scores.npy"
    np.save(scores, np.random.default_rng(3).normal(-40, 8, size=ROWS))
    return frame, work / "table.jsonl", scores


@pytest.fixture(scope="module")
def cli_release(table, tmp_path_factory):
    _, path, scores = table
    out = tmp_path_factory.mktemp("cli") / "release"
    assert main(["likelihood", "--source", str(path), "--scores", str(scores), "--null-splits", "0", "--seed", "7",
                 "--out", str(out), "--no-progress"]) == 0
    return Released(out)


def rows_of(configs: dict) -> dict:
    return {config: {split: rows.data.table.to_pydict() for split, rows in splits.items()}
            for config, splits in configs.items()}


def cli_rows(released: Released) -> dict:
    return {config: {split: released.table(config, split).to_pydict() for split in released.files[config]}
            for config in released.configs}


def test_a_dataframe_and_a_dataset_give_the_cli_rows(table, cli_release, tmp_path):
    frame, _, scores = table
    expected = cli_rows(cli_release)
    from_frame = split_builders.split("likelihood", frame, scores=str(scores), null_splits=0, seed=7,
                                      out=tmp_path / "kept")
    assert rows_of(from_frame) == expected
    assert set(from_frame) == set(cli_release.configs) and len(expected["ll_split"]["test"]["label"]) > 0
    kept = Released(tmp_path / "kept")  # out= keeps the release folder: the same data files
    for config in kept.configs:
        for split in kept.files[config]:
            assert kept.sha256(config, split) == cli_release.sha256(config, split)
    from_dataset = split_builders.split("likelihood", datasets.Dataset.from_pandas(frame), scores=str(scores),
                                        null_splits=0, seed=7)
    assert rows_of(from_dataset) == expected
    test = from_dataset["ll_split"]["test"]
    assert test.features["label"].names == ["entailment", "neutral", "contradiction"]


def test_snli_in_the_hub_layout_reads_as_snli(table):
    """SNLI as the Hub publishes it (premise, hypothesis, a ClassLabel) goes through the SNLI reader: the same
    filter and the prompt template the CLI applies to SNLI (``snli_label``), not the generic one."""
    from loading_scripts import load_source
    from loading_scripts.frames import table_file
    from split_builders.signals.lm.prompts import resolve_template

    frame = table[0]
    names = ["entailment", "neutral", "contradiction"]
    hub = datasets.Dataset.from_dict(
        {"premise": frame["sentence1"].tolist(), "hypothesis": frame["sentence2"].tolist(),
         "label": [names.index(g) if g in names else -1 for g in frame["gold_label"]]},
        features=datasets.Features({"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=names)}))
    source = load_source(str(table_file(hub, table[1].parent / "tables")))
    official = load_source(str(table[1]))
    assert source.task == official.task == "snli"
    assert resolve_template(None, task=source.task, prompt_field=source.prompt_field,
                            query_field=source.query_field).name == "snli_label"
    assert source.filtered == official.filtered
    for column in ("premise", "hypothesis", "label", "source_id"):
        assert list(source.dataset[column]) == list(official.dataset[column])
    # What resplit likelihood scores: the label-conditioned prompt, for the Hub layout as for the official file.
    texts, queries = split_builders.notebook.prompts(hub)
    assert (texts, queries) == split_builders.notebook.prompts(table[0])
    first = official.dataset[0]
    label = names[first["label"]]
    wording = {"entailment": "entailed", "neutral": "neutral", "contradiction": "a contradiction"}[label]
    assert texts[0] == f"Premise: {first['premise']} This hypothesis is {wording}:"
    assert queries[0] == f" {first['hypothesis']}"


def test_the_same_table_is_the_same_file(table, tmp_path):
    from loading_scripts.frames import table_file

    frame = table[0]
    first = table_file(frame, tmp_path)
    assert table_file(frame.copy(), tmp_path) == first and len(list(tmp_path.iterdir())) == 1
    assert pq.read_table(first).num_rows == ROWS
    assert table_file(frame.iloc[:-1], tmp_path) != first


def test_a_dataset_dict_keeps_its_split_names(table, tmp_path):
    from loading_scripts.frames import as_arrow

    data = datasets.Dataset.from_pandas(table[0][["sentence1", "sentence2", "gold_label"]])
    both = datasets.DatasetDict({"a": data.select(range(5)), "b": data.select(range(5, 8))})
    assert as_arrow(both).column("source_split").to_pylist() == ["a"] * 5 + ["b"] * 3


@pytest.mark.parametrize("data, message", [
    ([1, 2, 3], "a source is a file or folder, .* a pandas DataFrame, a datasets.Dataset / DatasetDict / "
                "IterableDataset, a list of dicts .*; got a list of int"),
    (pd.DataFrame({"text": []}), "your DataFrame has no rows"),
    (datasets.DatasetDict(), "your DatasetDict has no splits"),
])
def test_bad_tables_are_one_message(data, message, tmp_path):
    from loading_scripts.frames import table_file

    with pytest.raises(InvalidParameterError, match=message):
        table_file(data, tmp_path)
