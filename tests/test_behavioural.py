"""Behavioural (BELUGA) splits: the published division reproduced, configs, release folders."""

from __future__ import annotations

import json

import datasets
import numpy as np
import pytest

from loading_scripts.checklist import read_checklist_suite, validate_suite
from split_builders.api import Split, get_method
from split_builders.builder import build
from split_builders.methods import behavioural
from split_builders.methods.behavioural import PASS_RATE_COLUMNS
from split_builders.splitters.behavioural import BehaviouralSplitter, behavioural_configs
from split_builders.splitters.partition import shuffle_split
from split_builders.errors import InvalidParameterError

# Small real functionalities of the sentiment suite, one of each test type, two capabilities:
# a full release of a whole suite takes minutes, this one seconds.
SMALL = ("single positive words", "single negative words", "single neutral words", "change names",
         "add positive phrases")


@pytest.fixture(scope="module")
def small_suite(shared, tmp_path_factory):
    suite = read_checklist_suite(shared / "data" / "checklist" / "sentiment_suite.json.gz")
    tests = [t for t in suite.tests if t["name"] in SMALL]
    path = tmp_path_factory.mktemp("suite") / "small_suite.json"
    path.write_text(json.dumps({"suite": "sentiment", "tests": tests}))
    return read_checklist_suite(path)


def build_small(suite, out, **options):
    """The small suite's release with BELUGA's draw (seed 123 over the suite's order: the position row order
    rule); returns (folder, configs)."""
    options = {"row_order": "position", **options}
    result = build("behavioural", source=suite.source, out=str(out), seed=123, progress=False, **options)
    return result.out, result.configs


@pytest.fixture(scope="module")
def small_release(small_suite, tmp_path_factory):
    return build_small(small_suite, tmp_path_factory.mktemp("rel") / "checklist-sentiment")


@pytest.mark.parametrize("name", ["sentiment", "qqp", "squad"])
def test_reproduces_beluga_split_of_every_functionality(shared, name):
    suite = read_checklist_suite(shared / "data" / "checklist" / f"{name}_suite.json.gz")
    groups = [t["name"] for t in suite.tests for _ in t["data"]]
    starts = np.cumsum([0] + [len(t["data"]) for t in suite.tests])
    parts = BehaviouralSplitter(random_state=123).split(groups)._asdict()
    reproduced = 0
    for test, start, stop in zip(suite.tests, starts[:-1], starts[1:]):
        ours = {s: (rows[(rows >= start) & (rows < stop)] - start).tolist() for s, rows in parts.items()}
        reproduced += ours == test["beluga_split"]
    assert reproduced == len(suite.tests)


def test_shuffle_split_sizes_and_errors():
    train, test = shuffle_split(17, 0.5, 123)
    assert (len(train), len(test)) == (8, 9)
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(17))
    with pytest.raises(InvalidParameterError, match="cannot split 1 item"):
        shuffle_split(1, 0.5, 123)


@pytest.mark.parametrize("kwargs, message", [
    ({"holdout_size": 1.5}, "holdout_size must be a fraction in \\(0, 1\\)"),
    ({"test_share": 0}, "test_share must be a fraction"),
    ({"random_state": None}, "random_state must be a non-negative integer"),
    ({"random_state": -1}, "random_state must be a non-negative integer"),
])
def test_splitter_validates_eagerly(kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        BehaviouralSplitter(**kwargs)


def test_splitter_names_a_functionality_too_small():
    with pytest.raises(InvalidParameterError, match="functionality 'b': cannot split 1"):
        BehaviouralSplitter().split(["a"] * 4 + ["b"])


def test_held_out_config_semantics():
    functionality = ["f0"] * 8 + ["f1"] * 8 + ["f2"] * 8
    capability = ["A"] * 16 + ["B"] * 8
    kind = ["MFT"] * 8 + ["INV"] * 16
    configs = {c.name: c for c in behavioural_configs(functionality, capability, kind)}
    assert list(configs) == ["seen", "func_0", "func_1", "func_2", "class_A", "class_B", "type_MFT", "type_INV"]
    seen = configs["seen"].indices
    func1 = configs["func_1"].indices
    assert not set(func1["train"]) & set(range(8, 16))
    assert set(func1["test"]) == set(seen["test"]) & set(range(8, 16))
    assert set(func1["train"]) == set(seen["train"]) - set(range(8, 16))
    assert set(configs["class_A"].indices["test"]) == set(seen["test"]) & set(range(16))
    assert set(configs["type_INV"].indices["train"]) == set(seen["train"]) & set(range(8))


def test_unknown_names_list_the_valid_ones():
    args = (["f0"] * 4 + ["f1"] * 4, ["A"] * 8, ["MFT"] * 8)
    with pytest.raises(InvalidParameterError, match="unknown functionality 'nope'; valid functionality names: 'f0', 'f1'"):
        behavioural_configs(*args, functionalities=["nope"])
    with pytest.raises(InvalidParameterError, match="unknown capability 'Logic'; valid capability names: 'A'"):
        behavioural_configs(*args, capabilities=["Logic"])
    with pytest.raises(InvalidParameterError, match="functionality index 5 is out of range 0..1"):
        behavioural_configs(*args, functionalities=[5])
    names = [c.name for c in behavioural_configs(*args, functionalities=["f1"], capabilities=[])]
    assert names == ["seen", "func_1", "type_MFT"]


def test_every_config_loads_with_datasets(small_suite, small_release, hf_cache):
    out, configs = small_release
    names = [c.name for c in configs]
    assert names == ["seen", "func_0", "func_1", "func_2", "func_3", "func_4", "class_Vocabulary", "class_NER",
                     "type_MFT", "type_INV", "type_DIR"]
    for config in configs:
        loaded = datasets.load_dataset(str(out), config.name, cache_dir=hf_cache)
        for split in ("train", "validation", "test"):
            assert loaded[split].num_rows == len(config.indices[split])
            for column in ("functionality", "capability", "label", "testcase_id", "examples", *PASS_RATE_COLUMNS):
                assert column in loaded[split].column_names
            assert "type" not in loaded[split].column_names  # test_type only: no column twice
        if config.name.startswith("func_"):
            held = small_suite.tests[int(config.name[5:])]
            assert set(loaded["test"]["functionality"]) == {held["name"]}
            assert held["name"] not in set(loaded["train"]["functionality"])
            assert sorted(loaded["test"]["testcase_id"]) == held["beluga_split"]["test"]
    seen = datasets.load_dataset(str(out), "seen", cache_dir=hf_cache)
    for i, test in enumerate(small_suite.tests):
        for split in ("train", "validation", "test"):
            ids = [r["testcase_id"] for r in seen[split] if r["functionality"] == test["name"]]
            assert ids == test["beluga_split"][split]
    row = seen["train"][0]
    assert row["examples"] == [[small_suite.tests[0]["data"][row["testcase_id"]]]]
    assert row["labels"] == [2] and row["label"] == 2 and row["test_type"] == "MFT" and row["capability"] == "Vocabulary"
    assert seen["train"].features["label"].names == ["negative", "neutral", "positive"]
    assert row["expectation"]["fn"] == "eq" and row["meta"] == [[]]
    readme = (out / "README.md").read_text()
    assert "config_name: func_3" in readme and "| 4 | change names | NER | INV | 331 |" in readme


def test_pass_rate_reads_config_rows_directly(small_suite, small_release, hf_cache, local_metric):
    out, _ = small_release
    test_rows = datasets.load_dataset(str(out), "seen", split="test", cache_dir=hf_cache)
    sizes = [len(examples) for examples in test_rows["examples"]]
    rng = np.random.default_rng(0)
    confidences = rng.dirichlet(np.ones(3), size=sum(sizes)).tolist()
    predictions = [int(np.argmax(c)) for c in confidences]
    cuts = np.cumsum([0] + sizes)
    pass_rate = local_metric("pass_rate")
    from_rows = pass_rate.compute(
        predictions=[predictions[a:b] for a, b in zip(cuts[:-1], cuts[1:])],
        confidences=[confidences[a:b] for a, b in zip(cuts[:-1], cuts[1:])],
        **{column: test_rows[column] for column in PASS_RATE_COLUMNS})
    # The same predictions cut by pass_rate's own suite reader over BELUGA's test ids.
    columns = pass_rate.testcases_from_suite(small_suite.as_dict(), predictions, confidences,
                                             testcases="test", beluga_labels=True)
    direct = pass_rate.compute(**columns)
    assert from_rows == direct
    assert set(direct["functionalities"]) == set(SMALL)


def test_release_is_byte_identical_when_rebuilt(small_suite, small_release, tmp_path):
    out, _ = small_release
    again, _ = build_small(small_suite, tmp_path / "checklist-sentiment")
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for relative in files:
        assert (out / relative).read_bytes() == (again / relative).read_bytes(), relative


def test_beluga_relabelling_is_applied():
    suite = validate_suite({"suite": "qqp", "tests": [
        {"name": "asym", "type": "MFT", "capability": "SRL", "agg_fn": "all", "expectation": {"fn": "eq"},
         "nested": False, "labels": 1, "meta": None, "beluga_label_override": 0,
         "data": [["a", "b"], ["c", "d"], ["e", "f"], ["g", "h"]]}]})
    assert behavioural.testcase_rows(suite, beluga_labels=True)["labels"] == [[0]] * 4
    assert behavioural.testcase_rows(suite, beluga_labels=False)["label"] == [1] * 4
    assert behavioural.testcase_rows(suite, beluga_labels=True)["examples"][0] == [["a", "b"]]


def test_splitter_is_a_base_splitter_returning_a_split():
    from split_builders.api import BaseSplitter

    splitter = BehaviouralSplitter(holdout_size=0.5, test_share=0.5, random_state=7)
    assert isinstance(splitter, BaseSplitter)
    assert splitter.get_params() == {"holdout_size": 0.5, "test_share": 0.5, "random_state": 7}
    assert repr(splitter) == "BehaviouralSplitter(holdout_size=0.5, test_share=0.5, random_state=7)"
    # Groups need not be contiguous: each group's rows are divided in row order.
    split = splitter.split(["a", "b"] * 6)
    assert isinstance(split, Split) and all(part.dtype == np.int64 for part in split)
    assert sorted(np.concatenate(split).tolist()) == list(range(12))
    assert BehaviouralSplitter().get_params()["random_state"] == 42  # the one default seed (BELUGA's: 123)


def test_release_provenance_and_card(small_suite, small_release):
    import yaml

    from loading_scripts.source import content_sha256

    out, _ = small_release
    readme = (out / "README.md").read_text()
    meta = yaml.safe_load(readme.split("---\n")[1])["resplit"]
    assert meta["method"] == "behavioural" and meta["seed"] == 123 and "BELUGA" in meta["paper"]
    rows = behavioural.testcase_rows(small_suite, beluga_labels=True)
    assert meta["source"]["content_sha256"] == content_sha256(rows)
    assert meta["signal"]["suite_sha256"] == small_suite.sha256
    assert meta["configs"]["func_0"]["parameters"]["held_out"] == {"functionality": "single positive words"}
    assert "reproduces BELUGA's published division" in readme
    for figure in ("seen", "func", "class", "type"):
        assert (out / "figures" / f"{figure}.png").is_file() and f"figures/{figure}.png" in readme


def test_limit_keeps_the_first_test_cases_of_each_functionality(small_suite, tmp_path, hf_cache):
    out, configs = build_small(small_suite, tmp_path / "limited", limit=6)
    seen = datasets.load_dataset(str(out), "seen", cache_dir=hf_cache)
    rows = datasets.concatenate_datasets([seen[s] for s in seen])
    assert rows.num_rows == 6 * len(SMALL)
    assert sorted(set(rows["functionality"])) == sorted(SMALL) and set(rows["testcase_id"]) == set(range(6))
    assert [c.name for c in configs][:6] == ["seen", "func_0", "func_1", "func_2", "func_3", "func_4"]
    with pytest.raises(InvalidParameterError, match="limit must be an integer >= 3, got 2"):
        get_method("behavioural").options(source=small_suite.source, out=str(tmp_path / "x"), limit=2)


def test_names_with_commas_and_comma_separated_selections():
    names = ["used to, but now", "a", "b, c"]
    args = (names[:1] * 4 + names[1:2] * 4 + names[2:] * 4, ["A"] * 12, ["MFT"] * 12)
    picked = lambda selection: [c.name for c in behavioural_configs(*args, functionalities=selection,
                                                                    capabilities=[])][1:-1]
    assert picked(["used to, but now"]) == ["func_0"]
    assert picked(["b, c,used to, but now"]) == ["func_2", "func_0"]
    assert picked(["1,2"]) == ["func_1", "func_2"]
    assert picked([2, "a"]) == ["func_2", "func_1"]
    with pytest.raises(InvalidParameterError, match="unknown functionality 'd'"):
        picked(["a,d"])


def test_source_id_is_the_position_in_the_whole_suite_and_survives_limit(small_suite):
    full = behavioural.testcase_rows(small_suite, beluga_labels=True)
    limited = behavioural.testcase_rows(small_suite, beluga_labels=True, limit=4)
    assert full.column_names[-1] == "source_id" and full.features["source_id"].dtype == "int64"
    assert full["source_id"] == list(range(full.num_rows))
    # The same test case keeps its source_id in a --limit build.
    position = {(f, t): s for f, t, s in zip(full["functionality_id"], full["testcase_id"], full["source_id"])}
    assert limited["source_id"] == [position[f, t] for f, t in zip(limited["functionality_id"],
                                                                    limited["testcase_id"])]
    assert len(set(limited["source_id"])) == limited.num_rows == 4 * len(SMALL)


def test_rows_are_the_metrics_own_test_cases(small_suite, local_metric):
    """One function turns a suite into test cases: the release's rows are pass_rate's."""
    rows = behavioural.testcase_rows(small_suite, beluga_labels=True)
    sizes = [len(examples) for examples in rows["examples"]]
    columns = local_metric("pass_rate").testcases_from_suite(small_suite.as_dict(), [0] * sum(sizes),
                                                             beluga_labels=True)
    assert [len(p) for p in columns["predictions"]] == sizes
    for column in PASS_RATE_COLUMNS:
        assert columns[column] == rows[column], column


# ---------------------------------------------------------------------------------------
# The row contract: a label, lists and records (no JSON text), no column twice
# ---------------------------------------------------------------------------------------


def test_answer_suites_release_answers_and_no_class_label(shared):
    """SQuAD's labels are answers: `labels` is a list of strings per test case, and there is no `label`."""
    suite = read_checklist_suite(shared / "data" / "checklist" / "squad_suite.json.gz")
    assert suite.answers and suite.label_names is None
    rows = behavioural.testcase_rows(suite, beluga_labels=True, limit=3)
    assert "label" not in rows.column_names and "type" not in rows.column_names
    assert rows.features["labels"].feature == datasets.Value("string")
    answered = [r for r in rows if r["labels"][0] is not None]
    assert answered and all(isinstance(v, str) for r in answered for v in r["labels"])
    named = [r for r in rows if r["expectation"]["fn"] == "squad_expect_same" and any(r["meta"])]
    assert named and all(len(m) in (0, 2) for r in named for m in r["meta"])  # [] or [old, new] per example


def test_qqp_classes_and_per_example_labels(shared):
    suite = read_checklist_suite(shared / "data" / "checklist" / "qqp_suite.json.gz")
    assert suite.label_names == ("not_duplicate", "duplicate")
    rows = behavioural.testcase_rows(suite, beluga_labels=True, limit=3)
    assert rows.features["label"].names == ["not_duplicate", "duplicate"]
    for row in rows:
        assert len(row["labels"]) == len(row["examples"]) == len(row["meta"])
        known = {label for label in row["labels"]}
        assert row["label"] == (known.pop() if len(known) == 1 and None not in known else -1)


def _suite(**changes):
    test = {"name": "t", "type": "MFT", "capability": "Vocabulary", "agg_fn": "all", "expectation": {"fn": "eq"},
            "nested": False, "labels": 1, "meta": None, "data": ["a", "b", "c"]}
    top = {key: changes.pop(key) for key in ("suite", "label_names") if key in changes}
    return {"suite": "mine", **top, "tests": [{**test, **changes}]}


def test_a_suite_of_ones_own_names_its_classes():
    assert validate_suite(_suite(label_names=["no", "yes"])).label_names == ("no", "yes")
    assert validate_suite(_suite()).label_names == ("0", "1")  # unnamed: the class ids as names
    rows = behavioural.testcase_rows(validate_suite(_suite(label_names=["no", "yes"])), beluga_labels=True)
    assert rows.features["label"].names == ["no", "yes"] and rows["label"] == [1, 1, 1]


@pytest.mark.parametrize("changes, message", [
    ({"label_names": ["only"]}, r"labels run from 1 to 1 but the suite has 1 classes \(only\)"),
    ({"label_names": "yes,no"}, r"label_names must be a list of distinct non-empty class names"),
    ({"expectation": {"fn": "eq", "margin": 2}}, r"expectation key\(s\) margin unknown"),
    ({"expectation": {"fn": "eq", "slice": {"fn": "orig_pred_equal", "when": 1}}}, r"slice.when unknown"),
    ({"meta": [{"a": 1}, None, None]}, r"meta holds \{'a': 1\}"),
    ({"labels": [1, "x", 0]}, r"mixes class ids and answer strings"),
])
def test_suites_the_rows_cannot_hold_are_refused(changes, message):
    from loading_scripts.errors import SourceLoadError

    with pytest.raises(SourceLoadError, match=message):
        validate_suite(_suite(**changes))
