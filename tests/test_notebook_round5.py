"""The notebook and the shell, round five (issue 46, section 2): ``split_builders.split`` and ``build`` as a notebook
user calls them, and ``resplit ... | head``.

Every case fails on the code before this change, except the positive controls (marked so): the lazy name
``split_builders.registry`` once the submodule is imported; scores given as values; one keyword per option (the
flag's name, ``random_state``/``seed``) and a near miss named; messages in Python's words (the keyword, "your
DataFrame", never the cache's copy of the table); the objects a user holds (a list of dicts, a ``Series``, an array,
an ``IterableDataset``); every registered method from a table of its reader's columns, or one line saying what it
reads; SNLI in the Hub's layout, and its ``-`` rows; a ``DatasetDict``'s split names; a lone surrogate; a cache
that cannot be written; a closed pipe.

The rows are the first 300 lines of SNLI's official dev file (``/work/shared/data``); scores are given, so nothing
is scored.
"""

from __future__ import annotations

import errno
import gzip
import itertools
import json
import os
import subprocess
import sys

import datasets
import numpy as np
import pandas as pd
import pytest

import split_builders
from conftest import FAMILIES, FAMILY_BUILD
from split_builders.api import registry
from split_builders.cli import build_parser, main
from split_builders.errors import DiskFullError, InvalidParameterError, ResplitError, UnknownOptionError
from split_builders.release.folder import Released

ROWS = 300
NAMES = ["entailment", "neutral", "contradiction"]


@pytest.fixture(scope="module")
def snli(shared, tmp_path_factory):
    """``(DataFrame of the official file's rows, the same rows as a JSONL file, their scores as a .npy file)``."""
    work = tmp_path_factory.mktemp("round5")
    with gzip.open(shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz", "rt", encoding="utf-8") as handle:
        lines = list(itertools.islice(handle, ROWS))
    (work / "table.jsonl").write_text("".join(lines), encoding="utf-8")
    frame = pd.DataFrame([json.loads(line) for line in lines])
    assert (frame["gold_label"] == "-").sum() > 0  # the rows hold SNLI's no-gold-label marker
    scores = work / "scores.npy"
    np.save(scores, np.random.default_rng(3).normal(-40, 8, size=ROWS))
    return frame, work / "table.jsonl", scores


def rows_of(configs: dict) -> dict:
    return {config: {split: rows.data.table.to_pydict() for split, rows in splits.items()}
            for config, splits in configs.items()}


def one_line(error: BaseException) -> str:
    """The message, checked to be one line in the notebook's words: no flag, no cache file, no traceback."""
    message = str(error)
    assert "\n" not in message and len(message) < 700, message
    assert ".parquet" not in message and "/tables/" not in message and "Traceback" not in message, message
    return message


def hub_layout(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as ``load_dataset("stanfordnlp/snli")[...].to_pandas()`` gives them: integer codes, -1 for none."""
    return pd.DataFrame({"premise": frame["sentence1"], "hypothesis": frame["sentence2"],
                         "label": [NAMES.index(g) if g in NAMES else -1 for g in frame["gold_label"]]})


# -- the registry, by the package's lazy name -----------------------------------------------------------------------

def test_the_registry_by_the_packages_name_after_other_imports():
    import split_builders.builder  # noqa: F401  (imports the submodule split_builders.registry)
    from split_builders import LikelihoodSplitter  # noqa: F401

    assert sorted(split_builders.registry()) == sorted(registry())  # was: 'module' object is not callable


def test_no_lazy_name_is_hidden_by_a_submodule_of_its_name():
    """Every lazy name of the package (PEP 562) that is also a submodule's name (``registry``) still works as the
    name once the submodule is imported: the package's attribute is then the submodule."""
    import importlib
    import importlib.util

    for name, module in split_builders._EXPORTS.items():
        if importlib.util.find_spec(f"split_builders.{name}") is None:
            continue
        importlib.import_module(f"split_builders.{name}")
        function = getattr(importlib.import_module(module), name)
        assert callable(getattr(split_builders, name)), name
        assert getattr(split_builders, name)() == function(), name


@pytest.mark.parametrize("first", ["", "from split_builders import LikelihoodSplitter; import split_builders.builder"])
def test_the_registry_by_the_packages_name_in_a_fresh_interpreter(first):
    """Positive control (no import before) and the README's line after other imports, in a fresh process."""
    code = f"import split_builders\n{first}\nprint(sorted(split_builders.registry()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "'likelihood'" in done.stdout and "'tmcd'" in done.stdout


# -- scores given as values ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def split_by_the_scores_file(snli) -> dict:
    """The rows of each config that ``split`` gives the DataFrame with the scores as their .npy file (seed 7): what
    the same scores given as values must give (computed once for the three kinds)."""
    frame, _, path = snli
    return rows_of(split_builders.split("likelihood", frame, scores=str(path), null_splits=0, seed=7))


@pytest.mark.parametrize("kind", ["array", "list", "series"])
def test_scores_given_as_values_are_the_scores_file(snli, split_by_the_scores_file, kind):
    frame, _, path = snli
    expected = split_by_the_scores_file
    values = np.load(path)
    given = {"array": values, "list": values.tolist(), "series": pd.Series(values)}[kind]
    assert rows_of(split_builders.split("likelihood", frame, scores=given, null_splits=0, seed=7)) == expected


@pytest.mark.parametrize("scores, expected", [
    (np.zeros(ROWS - 1), "scores= has 299 values but your DataFrame has 300 rows"),
    (np.zeros((ROWS, 2)), "scores= must be a .npy file or one-dimensional numbers"),
    (np.array(["a"] * ROWS), "scores= must be a .npy file or one-dimensional numbers"),
])
def test_scores_given_as_values_are_checked_in_one_line(snli, scores, expected):
    with pytest.raises(InvalidParameterError) as caught:
        split_builders.split("likelihood", snli[0], scores=scores, null_splits=0)
    assert expected in one_line(caught.value)


# -- one name per option ---------------------------------------------------------------------------------------------

def test_the_flags_name_and_random_state_are_keywords(snli):
    frame, _, path = snli
    expected = rows_of(split_builders.split("likelihood", frame, scores=str(path), null_splits=0, seed=3,
                                            validation_size=20, test_size=20))
    by_flag = split_builders.split("likelihood", frame, scores=str(path), null_splits=0, random_state=3, dev_size=20,
                                   test_size=20)
    assert rows_of(by_flag) == expected and len(by_flag["ll_split"]["validation"]) == 20


def test_build_takes_the_flags_name_too(snli, tmp_path):
    result = split_builders.build("likelihood", source=snli[0], out=str(tmp_path / "built"), scores=str(snli[2]),
                                  null_splits=0, dev_size=20, test_size=20, random_state=3, progress=False,
                                  log=lambda message: None)
    assert result.sizes["ll_split"]["validation"] == 20 and result.options.seed == 3


@pytest.mark.parametrize("keyword, expected", [
    ("tset_size", "split('likelihood') has no option tset_size=; did you mean test_size=?"),
    ("sede", "did you mean seed=?"),
    ("overwirte", "did you mean overwrite=?"),
    ("random_stat", "did you mean seed=?"),
])
def test_a_misspelled_keyword_is_one_line_with_the_near_miss(snli, keyword, expected):
    with pytest.raises(UnknownOptionError) as caught:
        split_builders.split("likelihood", snli[0], scores=str(snli[2]), **{keyword: 1})
    assert isinstance(caught.value, TypeError)  # what Python's own unexpected keyword is
    assert expected in one_line(caught.value)


def test_one_option_named_twice_is_refused(snli):
    with pytest.raises(InvalidParameterError, match=r"dev_size= and validation_size= name the same option"):
        split_builders.split("likelihood", snli[0], scores=str(snli[2]), dev_size=5, validation_size=5)


# -- messages in Python's words --------------------------------------------------------------------------------------

def test_an_existing_out_names_the_keyword(snli, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("x")
    with pytest.raises(ResplitError) as caught:
        split_builders.split("likelihood", snli[0], scores=str(snli[2]), out=tmp_path / "out")
    message = one_line(caught.value)
    assert "overwrite=True" in message and "--" not in message, message


def test_a_missing_field_names_the_keyword_and_the_dataframe(snli):
    frame = snli[0][["sentence1", "sentence2"]]  # no label, no SNLI layout: the fields must be named
    with pytest.raises(ResplitError) as caught:
        split_builders.split("likelihood", frame, scores=str(snli[2]))
    message = one_line(caught.value)
    assert "your DataFrame" in message and "query_field=" in message and "--" not in message, message


def test_a_missing_field_names_the_dataset(snli):
    data = datasets.Dataset.from_pandas(snli[0][["sentence1", "sentence2"]])
    with pytest.raises(ResplitError) as caught:
        split_builders.split("pvi", data, label_field="sentence1")
    message = one_line(caught.value)
    assert "your Dataset" in message and "text_fields=" in message and "--" not in message, message


def test_the_command_line_still_names_its_flags(snli, tmp_path, capsys):
    """Positive control: the same refusal on the command line names the flag."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("x")
    assert main(["likelihood", "--source", str(snli[1]), "--scores", str(snli[2]), "--out", str(tmp_path / "out")]) == 2
    assert "pass --overwrite" in capsys.readouterr().err


# -- what a user holds -----------------------------------------------------------------------------------------------

def test_a_list_of_dicts_is_its_dataframe(snli):
    frame, _, path = snli
    expected = rows_of(split_builders.split("likelihood", frame, scores=str(path), null_splits=0))
    records = [json.loads(line) for line in snli[1].read_text(encoding="utf-8").splitlines()]
    assert rows_of(split_builders.split("likelihood", records, scores=str(path), null_splits=0)) == expected


def test_an_iterable_dataset_is_its_dataset(snli):
    frame, _, path = snli
    data = datasets.Dataset.from_pandas(frame[["sentence1", "sentence2", "gold_label"]])
    expected = rows_of(split_builders.split("likelihood", data, scores=str(path), null_splits=0))
    iterable = split_builders.split("likelihood", data.to_iterable_dataset(), scores=str(path), null_splits=0)
    assert rows_of(iterable) == expected


@pytest.mark.parametrize("kind", ["series", "array", "list"])
def test_texts_are_one_text_column(snli, kind):
    texts = snli[0]["sentence2"]
    data = {"series": texts.rename(None), "array": texts.to_numpy(dtype=object), "list": texts.tolist()}[kind]
    configs = split_builders.split("likelihood", data, scores=str(snli[2]), query_field="text", null_splits=0)
    test = configs["ll_split"]["test"]
    assert set(test.column_names) >= {"text", "source_id"} and set(test["text"]) <= set(texts)


@pytest.mark.parametrize("data, expected", [
    ([1, 2, 3], "got a list of int"),
    ({"text": ["a"]}, "got a dict"),
    ([], "got an empty list"),
    (np.zeros((3, 2)), "your array (2-dimensional, float64) is read as one column of texts"),
])
def test_what_is_not_a_table_says_what_is(data, expected):
    with pytest.raises(InvalidParameterError) as caught:
        split_builders.split("likelihood", data)
    message = one_line(caught.value)
    assert expected in message and "must be text" not in message
    assert "list of dicts" in message or "array" in message


# -- every registered method from a table of its reader's columns ----------------------------------------------------

def example_keywords(family, shared, work) -> tuple[str, dict]:
    """The method's example arguments (its own, over the shared data) as the CLI parses them: ``(source, keywords)``."""
    args = [str(a) for a in registry()[family].example_arguments(shared, work)]
    parsed = vars(build_parser().parse_args([family, *args, "--out", str(work / "unused")]))
    command_only = ("func", "command", "no_progress", "verbose", "enable_views", "out")
    values = {k: v for k, v in parsed.items() if k not in command_only}
    return values.pop("source"), values


def reader_frame(method, source) -> pd.DataFrame:
    """The rows its reader produces, as a DataFrame: the compositional readers' ``source_id``, ``input``, ``target``
    for a method that declares those columns; the table file's own columns for the others."""
    from loading_scripts import load_compositional
    from loading_scripts.files import read_table

    if method.table_columns:
        return load_compositional(source).rows.to_pandas()[["source_id", *method.table_columns]]
    return read_table(source).to_pandas()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_method_reads_a_table_of_its_readers_columns_or_says_what_it_reads(family, shared, tmp_path,
                                                                                   family_releases):
    method = registry()[family]
    source, values = example_keywords(family, shared, tmp_path)
    if method.table_columns is None:
        with pytest.raises(InvalidParameterError) as caught:
            split_builders.split(family, pd.DataFrame({"text": ["a", "b"]}), **values)
        message = one_line(caught.value)
        assert f"{family} does not read a table: its source is {method.source_kind}" in message
        assert "your DataFrame" in message
        return
    # the command's build of the same example arguments with --seed 7: the session's shared release of the family
    # (conftest.FAMILY_BUILD; its diagnostics' null splits do not move a row)
    assert FAMILY_BUILD[:2] == ("--seed", "7")
    cli = Released(family_releases[family])
    configs = split_builders.split(family, reader_frame(method, source), seed=7, null_splits=0, **values)
    common = set(configs) & set(cli.configs)
    assert common, (sorted(configs), cli.configs)
    for config in common:
        for split in cli.files[config]:
            expected = cli.table(config, split).column("source_id").to_pylist()
            assert configs[config][split]["source_id"] == expected, (config, split)


def test_a_method_that_reads_no_table_still_reads_its_path(shared):
    """Positive control: CURRICULUM from its folder of zips, as ``data``."""
    configs = split_builders.split("curriculum", str(shared / "data" / "curriculum"), phenomena="verbnet",
                                   null_splits=0)
    assert "verbnet" in configs and len(configs["verbnet"]["train"]) > 0


def test_tmcd_names_the_columns_a_table_needs(snli):
    with pytest.raises(InvalidParameterError) as caught:
        split_builders.split("tmcd", snli[0])
    message = one_line(caught.value)
    assert "tmcd reads a table with columns 'input' and 'target'" in message and "your DataFrame" in message


def test_a_table_file_of_input_and_target_is_a_compositional_source(shared, tmp_path, capsys):
    """``resplit tmcd --source rows.jsonl`` (was: read as an NQG file, "line 1 has 1 tab-separated field")."""
    from loading_scripts import nqg

    pairs = nqg.read_pairs(shared / "data" / "geoquery" / "geoquery_nqg.tsv")
    table = tmp_path / "rows.jsonl"
    table.write_text("".join(json.dumps({"input": i, "target": t}) + "\n" for i, t in pairs), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["tmcd", "--source", str(table), "--train-size", "440", "--iterations", "50", "--restarts", "1",
                 "--configs", "tmcd,length", "--null-splits", "0", "--out", str(out), "--no-progress"]) == 0, \
        capsys.readouterr().err
    assert {"tmcd", "length"} <= set(Released(out).configs)


def test_a_table_file_without_input_and_target_is_one_line(snli, capsys, tmp_path):
    err = _refused(["tmcd", "--source", str(snli[1]), "--out", str(tmp_path / "never")], capsys)
    assert "has no 'input' and no 'target' column" in err
    assert not (tmp_path / "never").exists()


# -- SNLI as users hold it ---------------------------------------------------------------------------------------------

def test_snli_in_the_hubs_layout_as_a_dataframe_reads_as_snli(snli):
    """``load_dataset("stanfordnlp/snli")[...].to_pandas()``: integer labels, -1 for no gold label (was: pass
    --query-field). The same rows and configs as the official file's."""
    frame, path, scores = snli
    official = split_builders.split("likelihood", frame, scores=str(scores), null_splits=0)
    hub = split_builders.split("likelihood", hub_layout(frame), scores=str(scores), null_splits=0)
    for config in official:
        for split in official[config]:
            for column in ("source_id", "premise", "hypothesis", "label", "score"):
                assert hub[config][split][column] == official[config][split][column], (config, split, column)


def test_snli_in_the_hubs_layout_with_label_names_drops_the_dashes(snli):
    frame, _, scores = snli
    named = frame.rename(columns={"sentence1": "premise", "sentence2": "hypothesis", "gold_label": "label"})
    configs = split_builders.split("likelihood", named[["premise", "hypothesis", "label"]], scores=str(scores),
                                   null_splits=0)
    assert configs["ll_split"]["test"].features["label"].names == NAMES


def test_a_user_table_with_snlis_dash_says_what_the_dash_is(snli):
    frame, _, scores = snli
    named = frame.rename(columns={"sentence1": "premise", "sentence2": "hypothesis", "gold_label": "label"})
    fields = dict(prompt_field="premise", query_field="hypothesis", label_field="label")
    with pytest.raises(InvalidParameterError) as caught:
        split_builders.split("likelihood", named, scores=str(scores), null_splits=0, **fields)
    message = one_line(caught.value)
    dashes = int((frame["gold_label"] == "-").sum())
    assert f"holds '-' in {dashes} row(s)" in message and "SNLI marks a pair without a gold label" in message
    assert "task='snli'" in message and "class '-'" not in message
    # The way out it names: the SNLI reader, which drops them and counts them in the card.
    configs = split_builders.split("likelihood", named, scores=str(scores), null_splits=0, task="snli", **fields)
    assert sum(len(part) for part in configs["ll_split"].values()) == ROWS - dashes


def test_a_user_csv_with_snlis_dash_on_the_command_line(snli, tmp_path, capsys):
    frame = snli[0]
    path = tmp_path / "mine.csv"
    frame.rename(columns={"sentence1": "premise", "sentence2": "hypothesis"})[
        ["premise", "hypothesis", "gold_label"]].to_csv(path, index=False)
    err = _refused(["likelihood", "--source", str(path), "--prompt-field", "premise", "--query-field", "hypothesis",
                    "--label-field", "gold_label", "--scores", str(snli[2]), "--out", str(tmp_path / "o")], capsys)
    assert "'-' is how SNLI marks a pair without a gold label" in err and "--task snli" in err


def test_pvi_says_what_the_dash_is_too(snli):
    frame = snli[0]
    with pytest.raises(InvalidParameterError) as caught:
        split_builders.split("pvi", frame, text_fields="sentence1,sentence2", label_field="gold_label", folds=2)
    assert "SNLI marks a pair without a gold label" in one_line(caught.value)


# -- a DatasetDict's split names ---------------------------------------------------------------------------------------

def test_a_dataset_dict_whose_rows_have_a_source_split(snli):
    """Was: "the header names the column 'source_split' twice". The rows' own column is kept; the DatasetDict's
    split names go beside it."""
    data = datasets.Dataset.from_pandas(snli[0][["sentence1", "sentence2", "gold_label"]])
    data = data.add_column("source_split", ["dev"] * ROWS)
    both = datasets.DatasetDict({"a": data.select(range(150)), "b": data.select(range(150, ROWS))})
    configs = split_builders.split("likelihood", both, scores=str(snli[2]), null_splits=0)
    rows = pd.concat([configs["ll_split"][split].to_pandas() for split in configs["ll_split"]])
    assert set(rows["source_split"]) == {"dev"}
    assert dict(zip(rows["source_id"], rows["datasetdict_split"])) == {i: "a" if i < 150 else "b"
                                                                       for i in rows["source_id"]}


@pytest.mark.parametrize("layout", ["official", "hub"])
def test_an_snli_shaped_dataset_dict_keeps_its_split_names(snli, layout):
    frame = snli[0][["sentence1", "sentence2", "gold_label"]] if layout == "official" else hub_layout(snli[0])
    data = datasets.Dataset.from_pandas(frame)
    both = datasets.DatasetDict({"train": data.select(range(200)), "test": data.select(range(200, ROWS))})
    configs = split_builders.split("likelihood", both, scores=str(snli[2]), null_splits=0)
    rows = pd.concat([configs["ll_split"][split].to_pandas() for split in configs["ll_split"]])
    assert dict(zip(rows["source_id"], rows["source_split"])) == {i: "train" if i < 200 else "test"
                                                                 for i in rows["source_id"]}


# -- text UTF-8 cannot hold, a cache that cannot be written -----------------------------------------------------------

@pytest.mark.parametrize("kind", ["frame", "records"])
def test_a_lone_surrogate_is_one_line_naming_its_row_and_column(snli, kind):
    frame = snli[0][["sentence1", "sentence2", "gold_label"]].astype(object)
    frame.loc[3, "sentence2"] = "A man \ud800 sleeps."
    data = frame if kind == "frame" else frame.to_dict("records")
    with pytest.raises(InvalidParameterError) as caught:
        split_builders.split("likelihood", data, scores=str(snli[2]), null_splits=0)
    message = one_line(caught.value)
    assert "row 3 of column 'sentence2'" in message and "lone surrogate" in message


def test_a_cache_that_is_not_a_folder_is_one_line(snli, tmp_path, monkeypatch):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("RESPLIT_CACHE", str(blocker / "resplit"))
    with pytest.raises(ResplitError) as caught:
        split_builders.split("likelihood", snli[0], scores=str(snli[2]), null_splits=0)
    message = one_line(caught.value)
    assert "resplit's cache folder" in message and "$RESPLIT_CACHE" in message and "your DataFrame" in message


def test_a_full_cache_is_one_line(snli, monkeypatch):
    import pyarrow.parquet as pq

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    with pytest.raises(DiskFullError) as caught:
        split_builders.split("likelihood", snli[0].iloc[:-1], scores=str(snli[2]), null_splits=0)
    assert "no space left" in one_line(caught.value)


def test_a_cache_entry_that_cannot_be_written_is_one_line(tmp_path):
    from split_builders.cache import atomic_write

    (tmp_path / "file").write_text("x")
    with pytest.raises(ResplitError, match=r"cannot write the cache entry e\.npz into resplit's cache folder"):
        atomic_write(tmp_path / "file" / "scores" / "e.npz", b"payload")


# -- the shell: a reader that stops reading -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def release(snli, tmp_path_factory):
    out = tmp_path_factory.mktemp("piped") / "release"
    assert main(["likelihood", "--source", str(snli[1]), "--scores", str(snli[2]), "--null-splits", "0", "--out",
                 str(out), "--no-progress"]) == 0
    return out


def _piped(args, *, closed: bool) -> subprocess.CompletedProcess:
    """``resplit ARGS`` with its standard output a pipe whose reader is gone (``| head`` that has read enough)."""
    read, write = os.pipe()
    if closed:
        os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "split_builders.cli", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
        if not closed:
            os.close(read)
    return done


def _commands(release, shared):
    checklist = shared / "data" / "checklist"
    return {"show": ["show", str(release), "ll_split", "--rows", "20"],
            "pass-rate": ["pass-rate", "--suite", str(checklist / "squad_suite.json.gz"), "--predictions",
                          str(checklist / "squad_bert_predictions.txt.gz"), "--format", "pred_only"]}


@pytest.mark.parametrize("command", ["show", "pass-rate"])
def test_a_closed_pipe_ends_quietly(command, release, shared):
    done = _piped(_commands(release, shared)[command], closed=True)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.stderr.strip() == ""


@pytest.mark.parametrize("command", ["show", "pass-rate"])
def test_an_open_pipe_is_read_whole(command, release, shared, capsys):
    """Positive control: with its output read, the same command exits 0 and prints (in this process: the closed
    pipe's test above is the one about the process; a second interpreter, and pass-rate's metric imports, cost 5-10 s
    here)."""
    capsys.readouterr()
    assert main(_commands(release, shared)[command]) == 0
    printed, err = capsys.readouterr()
    assert printed.strip() and not err.strip(), err


# -- tracebacks and unclear messages of the same round (issue 46: "Tracebacks", "Unclear") -------------------------------

def test_audit_with_a_low_threshold_runs(release, capsys):
    """``audit --threshold 0.01`` (was: ``ZeroDivisionError`` choosing the LSH bands)."""
    assert main(["audit", str(release), "--threshold", "0.01"]) == 0, capsys.readouterr().err


def test_a_scan_file_cut_short_is_one_line(shared, tmp_path, capsys):
    folder = tmp_path / "scan"
    folder.mkdir()
    whole = (shared / "data" / "scan" / "tasks.txt.gz").read_bytes()
    (folder / "tasks.txt.gz").write_bytes(whole[: len(whole) // 2])
    err = _refused(["mcd", "--source", str(folder), "--out", str(tmp_path / "o")], capsys)
    assert "not a complete gzip file" in err


def test_a_published_mcd_file_without_its_keys_is_one_line(shared, tmp_path, capsys):
    folder = tmp_path / "scan"
    (folder / "mcd_split").mkdir(parents=True)
    (folder / "tasks.txt.gz").write_bytes((shared / "data" / "scan" / "tasks.txt.gz").read_bytes())
    (folder / "mcd_split" / "mcd1.json").write_text(json.dumps({"trainIdxs": [0, 1, 2]}))
    err = _refused(["mcd", "--source", str(folder), "--measure", "mcd1", "--out", str(tmp_path / "o")], capsys)
    assert "mcd1.json' has no 'testIdxs' list" in err


def test_scans_tasks_file_is_read_as_scan(shared, tmp_path, capsys):
    """``mcd --source scan/tasks.txt.gz`` (was: read as an NQG file)."""
    out = tmp_path / "o"
    assert main(["mcd", "--source", str(shared / "data" / "scan" / "tasks.txt.gz"), "--limit", "1500", "--train-size",
                 "600", "--test-size", "75", "--candidates", "64", "--restarts", "1", "--swaps", "100",
                 "--null-splits", "0", "--out", str(out), "--no-progress"]) == 0, capsys.readouterr().err
    assert "mcd" in Released(out).configs


def test_one_file_of_a_cogs_folder_names_the_folder(shared, tmp_path, capsys):
    err = _refused(["tmcd", "--source", str(shared / "data" / "cogs" / "train.tsv.gz"), "--out", str(tmp_path / "o")],
                   capsys)
    assert "one file of a COGS folder" in err and str(shared / "data" / "cogs") in err


def test_no_evaluation_rows_is_said_as_sizes(snli, tmp_path, capsys):
    err = _refused(["likelihood", "--source", str(snli[1]), "--scores", str(snli[2]), "--dev-size", "0", "--test-size",
                    "0", "--out", str(tmp_path / "o")], capsys)
    assert "--dev-size 0 and --test-size 0 leave no row to evaluate on" in err and "audit" not in err


def test_a_pvi_model_path_that_is_not_there_is_said_as_a_path(tmp_path, capsys):
    err = _refused(["pvi", "--family", "transformers", "--model", str(tmp_path / "nonexistent"), "--limit", "60",
                    "--folds", "2", "--out", str(tmp_path / "o"), "--no-progress"], capsys)
    assert "not a folder with a transformers model (nothing is there)" in err and "Repo id" not in err


# -- helpers -------------------------------------------------------------------------------------------------------------

def _refused(argv, capsys) -> str:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err
