"""One label policy in every family (:mod:`loading_scripts.labels`): a declared label field is
released as ``label``, a ``ClassLabel`` whose names are the source's ``ClassLabel`` order where it
has one, else the label values as text sorted by that text; text columns are ``string`` (never
``large_string``); behavioural rows keep ``labels``, ``meta`` and ``expectation`` as JSON text.
Every registered family's shared example release is checked against the fields it declares; the built-in
families' expected names and values are read from the source files with ``csv`` / ``json``, not through
resplit."""

import csv
import itertools
import json
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from loading_scripts.labels import LABEL, check_label_name, label_column, label_names, release_rows
from split_builders.api import Fields
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.publishing.verify import verify



# ---------------------------------------------------------------------------------------
# The policy on small tables
# ---------------------------------------------------------------------------------------


def _dataset(columns: dict, features=None) -> datasets.Dataset:
    return datasets.Dataset(pa.table(columns), info=datasets.DatasetInfo(features=features))


def test_text_labels_become_a_class_label_with_names_sorted_by_text():
    values = ["neutral", "entailment", None, "contradiction", "neutral", "Zebra"]
    rows = _dataset({"premise": pa.array(["p"] * 6, pa.large_string()), "gold_label": pa.array(values, pa.large_string()),
                     "source_id": pa.array(range(6), pa.int64())})
    released = release_rows(rows, label_field="gold_label")
    assert released.column_names == ["premise", LABEL, "source_id"]  # the label stays in its place
    feature = released.features[LABEL]
    assert isinstance(feature, datasets.ClassLabel)
    assert feature.names == ["Zebra", "contradiction", "entailment", "neutral"]  # code point order: capitals first
    ids = released.data.table.column(LABEL).to_pylist()
    assert [None if i == -1 else feature.names[i] for i in ids] == values  # -1: no label
    assert released.data.table.schema.field("premise").type == pa.string()


def test_integer_labels_are_named_by_their_text_in_text_order():
    values = [2, 10, 1, 2, 10]
    released = release_rows(_dataset({"y": pa.array(values, pa.int64())}), label_field="y")
    names = released.features[LABEL].names
    assert names == sorted({str(v) for v in values}) == ["1", "10", "2"]
    assert [names[i] for i in released.data.table.column(LABEL).to_pylist()] == [str(v) for v in values]


def test_a_source_class_label_keeps_its_order_under_the_name_label():
    feature = datasets.ClassLabel(names=["entailment", "neutral", "contradiction"])
    rows = _dataset({"gold": pa.array([2, 0, 1], pa.int64()), "text": pa.array(["a", "b", "c"])},
                    datasets.Features({"gold": feature, "text": datasets.Value("string")}))
    released = release_rows(rows, label_field="gold")
    assert released.features[LABEL].names == feature.names
    assert released.data.table.column(LABEL).to_pylist() == [2, 0, 1]
    assert label_names(rows, "gold") == feature.names


def test_rows_that_already_follow_the_policy_are_returned_as_they_are():
    feature = datasets.ClassLabel(names=["false", "true"])
    rows = _dataset({"question": ["q"], "label": pa.array([1], pa.int64())},
                    datasets.Features({"question": datasets.Value("string"), "label": feature}))
    assert release_rows(rows, label_field="label") is rows
    assert release_rows(rows) is rows


def test_a_selection_is_released_with_its_own_rows():
    rows = _dataset({"t": pa.array(["a", "b", "c", "d"], pa.large_string()), "l": ["x", "y", "x", "z"]})
    released = release_rows(rows.select([3, 1]), label_field="l")
    assert released.data.table.column("t").to_pylist() == ["d", "b"]
    assert released.features[LABEL].names == ["y", "z"]  # the classes of the rows kept


def test_a_second_label_column_is_refused_in_one_line():
    with pytest.raises(InvalidParameterError) as error:
        check_label_name(["premise", "label", "gold_label"], "gold_label", name="x.csv")
    message = str(error.value)
    assert "'label'" in message and "'gold_label'" in message and "\n" not in message
    check_label_name(["premise", "label"], "label", name="x.csv")  # the label field itself is fine


def test_verify_reads_the_label_under_either_name():
    old = pa.table({"gold_label": ["a"], "source_id": [0]})
    new = pa.table({"label": [0], "source_id": [0]})
    assert label_column(old, "gold_label") == "gold_label"
    assert label_column(new, "gold_label") == "label"
    assert label_column(pa.table({"source_id": [0]}), "gold_label") is None


# ---------------------------------------------------------------------------------------
# Every registered family, built through the CLI
# ---------------------------------------------------------------------------------------


def _source(family_args, family) -> Path:
    args = family_args[family]
    return Path(args[args.index("--source") + 1])


def _limit(family_args, family) -> int | None:
    args = family_args[family]
    return int(args[args.index("--limit") + 1]) if "--limit" in args else None


def _build(family, args, out):
    assert main([family, *args, "--seed", "3", "--out", str(out), "--no-progress"]) == 0, family
    return out


@pytest.fixture(scope="module")
def releases(family_releases):
    """Every registered family's shared example release (read-only)."""
    return family_releases


def _record(folder):
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])["resplit"]


def _parquet_files(folder):
    files = sorted(folder.glob("*/*.parquet"))
    assert files
    return files


def _features(path) -> datasets.Features:
    """The features ``datasets`` wrote into the Parquet schema metadata, read with pyarrow and json only."""
    metadata = json.loads(pq.read_schema(path).metadata[b"huggingface"])
    return datasets.Features.from_dict(metadata["info"]["features"])


def _csv_labels(path, rows=None):
    with open(path, newline="", encoding="utf-8") as handle:
        return [record["gold_label"] for record in itertools.islice(csv.DictReader(handle), rows)]


def _expected_label_names(family, family_args):
    """The names the built-in families' example sources should give their ``label``, read from the source files."""
    source, limit = _source(family_args, family), _limit(family_args, family)
    if family == "likelihood":  # text labels: sorted by text
        return sorted(set(_csv_labels(source, limit)))
    if family == "pvi":
        with open(source, encoding="utf-8") as handle:
            values = [json.loads(line)["gold_label"] for line in handle if line.strip()][:limit]
        return sorted(set(values))
    if family == "curriculum":  # the reader's ClassLabel order (CURRICULUM's recast labels)
        from loading_scripts.curriculum import read_curriculum

        (phenomenon,) = read_curriculum(str(source), phenomena=["verbnet"], limit=limit)
        return phenomenon.rows.features["label"].names
    raise AssertionError(family)


# Every registered method's text columns are string and a declared label a ClassLabel in its declared order: the
# ``labels`` check of split_builders.testing (tests/test_registered_methods.py).


@pytest.mark.parametrize("family", ["likelihood", "pvi", "curriculum"])
def test_the_label_names_are_the_sources_in_stated_order(family, releases, family_args):
    """Text labels sorted by text (CSV, JSON lines); CURRICULUM's reader's ClassLabel order; the names read from
    the source files with ``csv`` / ``json``, not through resplit."""
    expected = _expected_label_names(family, family_args)
    for path in _parquet_files(releases[family]):
        assert _features(path)[LABEL].names == expected, path
    declared = Fields.from_record(_record(releases[family]))
    assert declared.label == LABEL and list(declared.label_names) == expected


def test_the_families_without_class_labels_declare_no_class_names(releases):
    assert Fields.from_record(_record(releases["tmcd"])).label is None


def test_behavioural_rows_declare_the_class_label_they_release(releases):
    """A CheckList suite's test cases carry a ``label`` ClassLabel (their class, -1 where examples differ): the
    declared names are the released feature's, in every data file."""
    declared = Fields.from_record(_record(releases["behavioural"]))
    assert declared.label == LABEL and declared.label_names
    for path in _parquet_files(releases["behavioural"]):
        assert _features(path)[LABEL].names == list(declared.label_names), path


def test_pandas_and_pyarrow_see_the_label_names_through_the_class_label(releases, family_args):
    """A CSV-built release read without ``datasets``: each row's class id names the source file's label."""
    import pandas as pd

    labels = _csv_labels(_source(family_args, "likelihood"))  # source_id = row number in the file
    for path in _parquet_files(releases["likelihood"]):
        names = _features(path)[LABEL].names
        frame = pd.read_parquet(path)
        assert frame[LABEL].dtype == np.int64
        assert [names[i] for i in frame[LABEL]] == [labels[i] for i in frame["source_id"]]


def test_datasets_decodes_the_released_label_to_the_source_value(releases, family_args, hf_cache):
    labels = _csv_labels(_source(family_args, "likelihood"))
    loaded = datasets.load_dataset(str(releases["likelihood"]), "ll_split", cache_dir=hf_cache)
    for split in loaded:
        feature = loaded[split].features[LABEL]
        table = loaded[split].data.table
        ids, sources = table.column(LABEL).to_pylist(), table.column("source_id").to_pylist()
        assert [feature.int2str(i) for i in ids] == [labels[s] for s in sources]


def test_a_source_class_label_order_is_kept_in_a_pvi_release(tmp_path):
    """SNLI's ClassLabel (entailment, neutral, contradiction) is not re-sorted."""
    from loading_scripts import load_source

    out = _build("pvi", ["--source", "snli-sample", "--folds", "2", "--limit", "150", "--cache-dir",
                         str(tmp_path / "pvi-cache")], tmp_path / "pvi-snli")
    names = load_source("snli-sample").dataset.features["label"].names
    for path in _parquet_files(out):
        assert _features(path)[LABEL].names == names
    declared = Fields.from_record(_record(out))  # what lm-eval tasks take their choice order from
    assert declared.label == LABEL and list(declared.label_names) == names
    assert verify(str(out), load=False).ok


def test_behavioural_rows_are_lists_and_records_with_a_class_label(releases):
    for path in _parquet_files(releases["behavioural"])[:3]:
        table = pq.read_table(path)
        assert table.schema.field("examples").type == pa.list_(pa.list_(pa.string()))
        assert pa.types.is_list(table.schema.field("labels").type)  # one label per example, no JSON text
        assert table.schema.field("meta").type == pa.list_(pa.list_(pa.string()))
        assert pa.types.is_struct(table.schema.field("expectation").type)
        assert isinstance(_features(path)[LABEL], datasets.ClassLabel) and "type" not in table.schema.names


@pytest.mark.parametrize("family", ["likelihood", "pvi"])
def test_a_release_built_before_the_policy_still_verifies(family, family_args, tmp_path, monkeypatch):
    """Rows released as read (``gold_label`` text, ``large_string`` in the CSV): what resplit built
    before the policy. ``verify`` re-derives every config from them."""
    import loading_scripts.labels

    monkeypatch.setattr(loading_scripts.labels, "release_rows", lambda dataset, **_: dataset)
    out = _build(family, family_args[family], tmp_path / "old")
    monkeypatch.undo()
    schema = pq.read_schema(_parquet_files(out)[0])
    assert "gold_label" in schema.names and LABEL not in schema.names
    report = verify(str(out), load=False)
    assert report.ok
    configs = set(_record(out)["configs"])
    assert {f.config for f in report.findings if f.level == 2 and f.status == "identical"} == configs


def test_a_source_with_a_second_label_column_is_refused_before_the_build(tmp_path, capsys):
    source = tmp_path / "two_labels.csv"
    source.write_text("premise,hypothesis,gold_label,label\n"
                      + "".join(f"a {i},b {i},{'yes' if i % 2 else 'no'},x\n" for i in range(40)))
    scores = tmp_path / "scores.npy"
    np.save(scores, np.arange(40, dtype=np.float64))
    out = tmp_path / "out"
    assert main(["likelihood", "--source", str(source), "--prompt-field", "premise", "--query-field", "hypothesis",
                 "--label-field", "gold_label", "--scores", str(scores), "--dev-size", "4", "--test-size", "4",
                 "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'label'" in err and "'gold_label'" in err
    assert not out.exists()
