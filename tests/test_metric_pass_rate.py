"""The pass_rate metric: CheckList semantics, against an independent implementation and the
released BERT-on-SQuAD results (through the shared :class:`metric_testing.MetricTester`)."""

import doctest
import gzip
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from metric_testing import MetricTester, assert_close

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tester():
    return MetricTester("pass_rate")


@pytest.fixture(scope="module")
def pass_rate(tester):
    return tester.metric


# ---------------------------------------------------------------------------------------
# An independent implementation, written from SPEC.md: it walks the suite itself, keeps
# every example result in a numpy object array and filters it the way CheckList does.
# ---------------------------------------------------------------------------------------


def ref_clean(s):
    for i, ch in enumerate(s):
        if ch not in set("[a,the,an,in,at] "):
            s = s[i:]
            break
    else:
        s = ""
    while s.endswith("."):
        s = s[:-1]
    return s


def ref_example_result(fn, spec, pred, conf, label, meta, orig_pred, orig_conf):
    if fn == "eq":
        return pred == (label if spec.get("value") is None else spec["value"])
    if fn == "pred_not_equal":
        return pred != spec["value"]
    if fn == "allow_for_neutral":
        if label == 1:
            return pred != 0
        return pred == label
    if fn == "squad_clean_eq":
        return ref_clean(pred) == ref_clean(label)
    if fn == "inv":
        if pred == orig_pred:
            return True
        if conf is None:
            return False
        return abs(conf[orig_pred] - orig_conf[orig_pred]) <= spec["tolerance"]
    if fn == "monotonic":
        lab = orig_pred if spec.get("label") is None else spec["label"]
        t = spec["tolerance"]
        if spec["increasing"]:
            if orig_conf[lab] <= t:
                return None
            return conf[lab] - orig_conf[lab] + t >= 0
        if orig_conf[lab] >= 1 - t:
            return None
        return conf[lab] - orig_conf[lab] - t <= 0
    if fn in ("diff_up", "diff_down"):
        change = orig_conf[0] - conf[0] + conf[2] - orig_conf[2]
        if fn == "diff_up":
            return change + 0.1 >= 0
        return change - 0.1 <= 0
    if fn == "squad_expect_same":
        if not meta:
            return pred == orig_pred
        return pred == re.sub(r"\b" + re.escape(meta[0]) + r"\b", meta[1], orig_pred)
    raise AssertionError(fn)


def ref_testcase(test, preds, confs, case_label, case_meta):
    spec = test["expectation"]
    fn = spec["fn"]
    n = len(preds)
    if fn == "qqp_triplet":
        if preds[0] == 1 and preds[1] == 1:
            result = preds[2] == 1
        elif preds[0] == 0 and preds[1] == 1:
            result = False
        else:
            result = None
    else:
        labels = case_label if isinstance(case_label, list) else [case_label] * n
        metas = case_meta if isinstance(case_meta, list) else [case_meta] * n
        r = np.array(
            [ref_example_result(fn, spec, preds[i], None if confs is None else confs[i], labels[i], metas[i],
                                preds[0], None if confs is None else confs[0]) for i in range(n)],
            dtype=object,
        )
        r = r[r != None]  # noqa: E711 (element-wise, as CheckList filters)
        if r.size == 0:
            result = None
        else:
            if test["agg_fn"] == "all_except_first":
                r = r[1:]
            result = bool(np.all(r.astype(bool)))
    sl = spec.get("slice")
    if result is not None and sl:
        cond = [(preds[0] == sl["value"]) if sl["fn"] == "orig_pred_equal" else (preds[0] != sl["value"])
                for _ in range(n)]
        if sl.get("slice_agg_fn") == "all_except_first":
            cond = cond[1:]
        if not all(cond):
            result = None
    return result


def ref_suite(suite, flat_preds, flat_confs, ids_of):
    """Per-functionality (passed, failed, filtered) from flat predictions in suite order."""
    out, pos = {}, 0
    for test in suite["tests"]:
        counts = [0, 0, 0]
        for i in ids_of(test):
            size = len(test["data"][i]) if test["nested"] else 1
            preds = flat_preds[pos:pos + size]
            confs = None if flat_confs is None else [np.asarray(c) for c in flat_confs[pos:pos + size]]
            pos += size
            labels = test["labels"]
            label = labels[i] if isinstance(labels, list) else labels
            meta = test["meta"][i] if isinstance(test["meta"], list) else test["meta"]
            result = ref_testcase(test, preds, confs, label, meta)
            counts[0 if result is True else 1 if result is False else 2] += 1
        out[test["name"]] = tuple(counts)
    assert pos == len(flat_preds)
    return out


def counts_of(result):
    return {name: (c["passed"], c["failed"], c["filtered"]) for name, c in result["functionalities"].items()}


# ---------------------------------------------------------------------------------------
# Random suites
# ---------------------------------------------------------------------------------------

_CLASS_SPECS = [
    ({"fn": "eq", "value": None}, "MFT", "all"),
    ({"fn": "eq", "value": 0, "slice": {"fn": "orig_pred_equal", "value": 1, "slice_agg_fn": "all"}}, "DIR", "all_except_first"),
    ({"fn": "pred_not_equal", "value": 0}, "MFT", "all"),
    ({"fn": "allow_for_neutral"}, "MFT", "all"),
    ({"fn": "inv", "tolerance": 0.1}, "INV", "all_except_first"),
    ({"fn": "inv", "tolerance": 0.0}, "INV", "all"),
    ({"fn": "monotonic", "increasing": True, "label": None, "tolerance": 0.1,
      "slice": {"fn": "orig_pred_not_equal", "value": 1, "slice_agg_fn": "all_except_first"}}, "DIR", "all_except_first"),
    ({"fn": "monotonic", "increasing": False, "label": 2, "tolerance": 0.2}, "DIR", "all_except_first"),
    ({"fn": "diff_up", "tolerance": 0.1}, "DIR", "all_except_first"),
    ({"fn": "diff_down", "tolerance": 0.1}, "DIR", "all_except_first"),
]
_WORDS = ["the tent", "tent", "in Paris.", "Paris", "Anna", "an apple", "apple", "Luther", "James said", "Luther said"]


def random_case_label(rng, case, nested):
    """One label for the test case, or (nested, sometimes) one per example."""
    if nested and rng.random() < 0.5:
        return [int(v) for v in rng.integers(0, 3, len(case))]
    return int(rng.integers(0, 3))


def random_class_suite(rng, n_tests=10):
    tests = []
    for k in range(n_tests):
        spec, kind, agg = _CLASS_SPECS[k % len(_CLASS_SPECS)]
        n_cases = int(rng.integers(3, 12))
        nested = kind != "MFT" or rng.random() < 0.3
        data = [[f"x{k}.{i}.{j}" for j in range(int(rng.integers(1, 5)))] if nested else f"x{k}.{i}"
                for i in range(n_cases)]
        if rng.random() < 0.5:
            labels = int(rng.integers(0, 3))  # one label for the whole test
        else:
            labels = [random_case_label(rng, case, nested) for case in data]
        tests.append({"name": f"t{k}:{spec['fn']}", "type": kind, "capability": ["Vocabulary", "Negation", "NER"][k % 3],
                      "agg_fn": agg, "expectation": spec, "nested": nested, "labels": labels, "meta": None, "data": data})
    tests.append({"name": "triplets", "type": "DIR", "capability": "Logic", "agg_fn": "all_except_first",
                  "expectation": {"fn": "qqp_triplet"}, "nested": True, "labels": None, "meta": None,
                  "data": [["a", "b", "c"] for _ in range(12)]})
    return {"suite": "toy", "tests": tests}


def random_answer_suite(rng):
    def answers(size):
        return [str(w) for w in rng.choice(_WORDS, size)]

    tests = []
    for k, (fn, kind, agg) in enumerate([("eq", "MFT", "all"), ("squad_clean_eq", "MFT", "all"),
                                         ("inv", "INV", "all_except_first"), ("squad_expect_same", "INV", "all_except_first")]):
        sizes = rng.integers(1, 5, 15)
        data = [[["context", "question"]] * int(s) for s in sizes]
        labels = [answers(int(s)) for s in sizes] if kind == "MFT" else None
        meta = None
        if fn == "squad_expect_same":
            meta = [[{}] + [["Luther", "James"] if rng.random() < 0.7 else None for _ in range(int(s) - 1)] for s in sizes]
        tests.append({"name": f"a{k}:{fn}", "type": kind, "capability": "Robustness", "agg_fn": agg,
                      "expectation": {"fn": fn, "tolerance": 0.1}, "nested": True, "labels": labels, "meta": meta, "data": data})
    return {"suite": "toy-squad", "tests": tests}


def n_examples(suite):
    return sum(len(case) if t["nested"] else 1 for t in suite["tests"] for case in t["data"])


def all_ids(test):
    return range(len(test["data"]))


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


def test_docstring_examples_run(tester):
    tester.run_docstring_examples(at_least=8, optionflags=doctest.ELLIPSIS)  # they load "metrics/pass_rate"


def test_module_loads_with_its_adapters_from_its_folder_its_file_and_as_a_renamed_space(tmp_path):
    """evaluate copies the modules imported as ``from .suite_adapters import ...`` beside the metric,
    however it is loaded; the metric imports nothing of resplit."""
    import shutil

    import evaluate

    folder = REPO / "metrics" / "pass_rate"
    space = tmp_path / "checklist_pass_rate"  # as publishing renames the module after the Space
    shutil.copytree(folder, space)
    (space / "pass_rate.py").rename(space / "checklist_pass_rate.py")
    suite = {"tests": [{"name": "t", "type": "MFT", "capability": "C", "agg_fn": "all", "expectation": {"fn": "eq"},
                        "nested": False, "labels": 1, "meta": None, "data": ["a", "b"]}]}
    for target in (folder, folder / "pass_rate.py", space):
        metric = evaluate.load(str(target), keep_in_memory=True)
        assert metric.compute(**metric.testcases_from_suite(suite, [1, 0]))["pass_rate"] == 50.0
    for path in folder.glob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+(split_builders|loading_scripts)", path.read_text(), re.M), path


def test_squad_bert_reproduces_every_reference_test(pass_rate, shared):
    suite = json.loads(gzip.open(shared / "data/checklist/squad_suite.json.gz", "rt").read())
    lines = gzip.open(shared / "data/checklist/squad_bert_predictions.txt.gz", "rt", encoding="utf-8").read().split("\n")
    lines = lines[:-1] if lines[-1] == "" else lines
    expected = json.loads((shared / "reference/checklist/squad_bert_expected.json").read_text())
    assert pass_rate.suite_uses_answers(suite)
    predictions, confidences = pass_rate.read_predictions(lines, "pred_only", answers=True)
    result = pass_rate.compute(**pass_rate.testcases_from_suite(suite, predictions, confidences))
    got = result["functionalities"]
    assert list(got) == list(expected)  # all 24 tests, in suite order
    for name, reference in expected.items():
        assert (got[name]["passed"], got[name]["failed"], got[name]["filtered"]) == (
            reference["passed"], reference["failed"], reference["filtered"]), name
        assert got[name]["pass_rate"] == pytest.approx(100 - reference["fail_rate"], abs=1e-9), name
    rates = [100 - r["fail_rate"] for r in expected.values()]
    assert result["pass_rate"] == pytest.approx(sum(rates) / len(rates))


@pytest.mark.parametrize("seed", range(4))
def test_random_class_suites_match_reference(pass_rate, seed):
    rng = np.random.default_rng(seed)
    suite = random_class_suite(rng)
    n = n_examples(suite)
    confidences = rng.dirichlet([0.6, 0.6, 0.6], size=n)
    # Some predictions disagree with the argmax, as with CheckList's pred_and_softmax files.
    predictions = np.where(rng.random(n) < 0.8, confidences.argmax(1), rng.integers(0, 3, n))
    predictions[-36:] %= 2  # the 12 duplicate-question triplets at the end are binary
    predictions = predictions.tolist()
    result = pass_rate.compute(**pass_rate.testcases_from_suite(suite, predictions, confidences.tolist()))
    assert_close(counts_of(result), ref_suite(suite, predictions, confidences.tolist(), all_ids), exact_keys=True)
    totals = np.array(list(counts_of(result).values())).sum(axis=0)
    assert (totals > 0).all()  # the random suites exercise pass, fail and filtered


@pytest.mark.parametrize("seed", range(3))
def test_random_answer_suites_match_reference(pass_rate, seed):
    rng = np.random.default_rng(100 + seed)
    suite = random_answer_suite(rng)
    predictions = [str(w) for w in rng.choice(_WORDS, n_examples(suite))]
    assert pass_rate.suite_uses_answers(suite)
    result = pass_rate.compute(**pass_rate.testcases_from_suite(suite, predictions))
    expected = ref_suite(suite, predictions, None, all_ids)
    assert_close(counts_of(result), expected, exact_keys=True)
    assert sum(c[0] for c in expected.values()) > 0 and sum(c[1] for c in expected.values()) > 0


@pytest.mark.parametrize("name, classes", [("sentiment", 3), ("qqp", 2)])
def test_real_suites_n500_match_reference(pass_rate, shared, name, classes):
    suite = json.loads(gzip.open(shared / f"data/checklist/{name}_suite.json.gz", "rt").read())

    def n500_ids(test):
        run = test["checklist_n500_run_idxs"]
        return range(len(test["data"])) if run is None else run

    size = max(stop for _, stop in suite["test_ranges_n500"].values())
    rng = np.random.default_rng(7)
    confidences = rng.dirichlet(np.full(classes, 0.5), size=size)
    predictions = confidences.argmax(1).tolist()
    columns = pass_rate.testcases_from_suite(suite, predictions, confidences.tolist(), testcases="n500")
    result = pass_rate.compute(**columns)
    assert_close(counts_of(result), ref_suite(suite, predictions, confidences.tolist(), n500_ids), exact_keys=True)
    assert len(result["functionalities"]) == len(suite["tests"])
    # test_ranges_n500 is the same order: each test's slice of lines belongs to it.
    first = suite["tests"][0]
    start, stop = suite["test_ranges_n500"][first["name"]]
    n_first = sum(len(first["data"][i]) if first["nested"] else 1 for i in n500_ids(first))
    assert (start, stop - start) == (0, n_first)


def test_summary_means_skip_undefined_functionalities(pass_rate):
    # "never": monotonic where p(label) is already below the tolerance: every case filtered.
    suite = {"tests": [
        {"name": "ok", "type": "MFT", "capability": "Vocabulary", "agg_fn": "all", "expectation": {"fn": "eq"},
         "nested": False, "labels": 1, "meta": None, "data": ["a", "b", "c", "d"]},
        {"name": "never", "type": "DIR", "capability": "Vocabulary", "agg_fn": "all_except_first",
         "expectation": {"fn": "monotonic", "increasing": True, "label": 0, "tolerance": 0.1},
         "nested": True, "labels": None, "meta": None, "data": [["a", "b"], ["c", "d"]]},
    ]}
    predictions = [1, 1, 0, 1, 1, 1, 1, 1]
    confidences = [[0.1, 0.9]] * 2 + [[0.9, 0.1]] + [[0.1, 0.9]] + [[0.05, 0.95]] * 4
    result = pass_rate.compute(**pass_rate.testcases_from_suite(suite, predictions, confidences))
    assert result["functionalities"]["ok"] == {"passed": 3, "failed": 1, "filtered": 0, "pass_rate": 75.0}
    never = result["functionalities"]["never"]
    assert (never["passed"], never["failed"], never["filtered"]) == (0, 0, 2) and math.isnan(never["pass_rate"])
    assert result["pass_rate"] == 75.0 and result["capabilities"] == {"Vocabulary": 75.0}
    assert result["types"]["MFT"] == 75.0 and math.isnan(result["types"]["DIR"])
    assert (result["passed"], result["failed"], result["filtered"]) == (3, 1, 2)


def one_case(pass_rate, predictions, expectation, agg_fn="all", labels=None, meta=None, confidences=()):
    result = pass_rate.compute(
        predictions=[predictions], confidences=[list(confidences)], labels=[[labels] * len(predictions)],
        meta=[meta or [[]] * len(predictions)], functionality=["f"], test_type=["MFT"], capability=["c"],
        expectation=[expectation], agg_fn=[agg_fn], return_testcase_results=True)
    return result["testcase_results"]["f"][0]


def test_edge_cases(pass_rate):
    # all_except_first with only the original left: nothing to fail, so it passes.
    assert one_case(pass_rate, [0], {"fn": "inv", "tolerance": 0.1}, "all_except_first", confidences=[[1, 0]]) == 1
    # inv: a changed prediction passes when p(original class) moves by at most the tolerance.
    assert one_case(pass_rate, [0, 1], {"fn": "inv", "tolerance": 0.1}, "all_except_first",
                    confidences=[[0.52, 0.48], [0.45, 0.55]]) == 1
    assert one_case(pass_rate, [0, 1], {"fn": "inv", "tolerance": 0.1}, "all_except_first",
                    confidences=[[0.6, 0.4], [0.45, 0.55]]) == 0
    # Answer strings: any change fails, whatever the tolerance.
    assert one_case(pass_rate, ["Paris", "paris"], {"fn": "inv", "tolerance": 0.9}, "all_except_first") == 0
    # The SQuAD cleaning strips a character set, not words.
    assert one_case(pass_rate, ["in Paris."], {"fn": "squad_clean_eq"}, labels="Paris") == 1
    assert one_case(pass_rate, ["the tent"], {"fn": "squad_clean_eq"}, labels="tent") == 1
    assert one_case(pass_rate, ["Paris"], {"fn": "eq"}, labels="Paris.") == 0
    # squad_expect_same rewrites the original answer with the meta pair.
    assert one_case(pass_rate, ["Luther said", "James said"], {"fn": "squad_expect_same"}, "all_except_first",
                    meta=[[], ["Luther", "James"]]) == 1
    # A slice on the original prediction filters the test case.
    spec = {"fn": "eq", "value": 0, "slice": {"fn": "orig_pred_equal", "value": 1, "slice_agg_fn": "all"}}
    assert one_case(pass_rate, [0, 0], spec, "all_except_first") is None
    assert one_case(pass_rate, [1, 0], spec, "all_except_first") == 1
    # qqp_triplet decides the whole test case; agg_fn does not drop its one result.
    triplet = {"fn": "qqp_triplet"}
    triplets = ([1, 1, 1], [1, 1, 0], [0, 1, 1], [1, 0, 1])
    assert [one_case(pass_rate, p, triplet, "all_except_first") for p in triplets] == [1, 0, 0, None]
    # allow_for_neutral: a neutral label accepts positive, not negative.
    assert [one_case(pass_rate, [p], {"fn": "allow_for_neutral"}, labels=1) for p in (2, 1, 0)] == [1, 1, 0]


def ref_three_classes(p):
    if p < 0.5 - 1 / 6:
        return 0, [1 - p, 0.0, p]
    if p > 0.5 + 1 / 6:
        return 2, [1 - p, 0.0, p]
    neutral = 1 - 3 * abs(p - 0.5)
    return 1, ([0.0, neutral, 1 - neutral] if p >= 0.5 else [1 - neutral, neutral, 0.0])


def test_sentiment_from_binary_matches_reference(pass_rate):
    p = np.concatenate([np.random.default_rng(3).random(500), [0.0, 1 / 3, 0.5, 2 / 3, 1.0]])
    predictions, confidences = pass_rate.sentiment_from_binary(p)
    for value, pred, conf in zip(p, predictions, confidences):
        ref_pred, ref_conf = ref_three_classes(float(value))
        assert pred == ref_pred
        assert conf == pytest.approx(ref_conf, abs=1e-12)
        assert sum(conf) == pytest.approx(1.0)
    assert predictions[-5:] == [0, 0, 1, 1, 2]  # 1/3 falls negative, 2/3 neutral, as in CheckList
    assert set(predictions) == {0, 1, 2}


def test_read_predictions_formats(pass_rate):
    assert pass_rate.read_predictions(["0", "2"], "pred_only") == ([0, 2], None)
    assert pass_rate.read_predictions(["1906", " a b "], "pred_only", answers=True) == (["1906", " a b "], None)
    preds, confs = pass_rate.read_predictions(["0.5", "0.9"], "binary_conf")
    assert preds == [0, 1] and np.allclose(confs, [[0.5, 0.5], [0.1, 0.9]])
    preds, confs = pass_rate.read_predictions(["0.2 0.3 0.5", "0.6 0.2 0.2"], "softmax")
    assert preds == [2, 0] and confs[0] == [0.2, 0.3, 0.5]
    assert pass_rate.read_predictions(["0.9"], "binary_conf", sentiment_binary=True) == pass_rate.sentiment_from_binary([0.9])
    assert pass_rate.read_predictions(["0.1 0.9"], "softmax", sentiment_binary=True) == pass_rate.sentiment_from_binary([0.9])


def test_random_inputs_through_file_formats_agree(pass_rate):
    """binary_conf lines and the equivalent softmax lines give the same results."""
    rng = np.random.default_rng(11)
    suite = random_class_suite(rng)
    suite["tests"].pop()  # the duplicate-question triplets need binary predictions
    p = rng.random(n_examples(suite)).tolist()
    a = pass_rate.read_predictions([f"{x!r}" for x in p], "binary_conf", sentiment_binary=True)
    b = pass_rate.read_predictions([f"{1 - x!r} {x!r}" for x in p], "softmax", sentiment_binary=True)
    ra = pass_rate.compute(**pass_rate.testcases_from_suite(suite, *a))
    rb = pass_rate.compute(**pass_rate.testcases_from_suite(suite, *b))
    assert counts_of(ra) == counts_of(rb) == ref_suite(suite, a[0], a[1], all_ids)


def row(**overrides):
    columns = {"predictions": [[1, 1]], "confidences": [[]], "labels": [[1, 1]], "meta": [[[], []]],
               "functionality": ["f"], "test_type": ["MFT"], "capability": ["c"],
               "expectation": [{"fn": "eq"}], "agg_fn": ["all"]}
    columns.update(overrides)
    return columns


@pytest.mark.parametrize("overrides, message", [
    ({"expectation": [{"fn": "equals"}]}, r"unknown expectation name .*'equals'; allowed: eq, pred_not_equal, allow_for_neutral"),
    ({"expectation": ['{"fn": "eq"}']}, r"expectation is a dict per test case, not JSON text"),
    ({"labels": ["[1, 1]"]}, r"labels is a list with one label per example per test case, not JSON text"),
    ({"expectation": [{"fn": "eq", "margin": 1}]}, r"unknown key\(s\) margin"),
    ({"expectation": [{"fn": "eq", "slice": {"fn": "pred_is"}}]}, r"unknown slice name .*'pred_is'; allowed: orig_pred_equal"),
    ({"test_type": ["UNIT"]}, r"unknown test type .*'UNIT'; allowed: MFT, INV, DIR"),
    ({"agg_fn": ["any"]}, r"unknown agg_fn .*'any'; allowed: all, all_except_first"),
    ({"confidences": [[[0.5, 0.7], [0.5, 0.5]]]}, r"example 0 of test case 0 \(functionality 'f'\) sums to 1.2, not 1"),
    ({"confidences": [[[1.5, -0.5], [0.5, 0.5]]]}, r"negative or non-finite"),
    ({"confidences": [[[0.5, 0.5]]]}, r"2 predictions but 1 probability vectors"),
    ({"confidences": [[[0.5, 0.5], [0.5, 0.5]]], "predictions": [[1, 2]]}, r"class id below 2"),
    ({"labels": [[1, 1, 1]]}, r"has 2 examples but 3 labels"),
    ({"labels": [[1, None]]}, r"expectation 'eq' .* needs a label for every example"),
    ({"expectation": [{"fn": "monotonic", "tolerance": 0.1}]}, r"needs probability vectors"),
    ({"expectation": [{"fn": "qqp_triplet"}]}, r"needs exactly 3 examples, got 2"),
    ({"expectation": [{"fn": "qqp_triplet"}], "predictions": [[1, 2, 1]]}, r"needs binary \(0/1\) predictions"),
    ({"predictions": [[]]}, r"has no predictions"),
])
def test_bad_rows_are_named(tester, overrides, message):
    tester.assert_refused(row(**overrides), message)


def test_inconsistent_functionality_and_mismatched_columns(pass_rate):
    two = {key: value * 2 for key, value in row().items()}
    two["capability"] = ["Negation", "NER"]
    with pytest.raises(ValueError, match=r"functionality 'f' has capability 'Negation' .* but 'NER' in test case 1"):
        pass_rate.compute(**two)
    short = row()
    short["labels"] = [[1], [1]]
    with pytest.raises(ValueError, match=r"Mismatch in the number of predictions \(1\) and labels \(2\)"):
        pass_rate.compute(**short)


def test_suite_helper_errors(pass_rate):
    suite = random_class_suite(np.random.default_rng(0), n_tests=2)
    n = n_examples(suite)
    with pytest.raises(ValueError, match=rf"has {n} examples in its 'all' test cases but {n - 1} predictions"):
        pass_rate.testcases_from_suite(suite, [0] * (n - 1))
    with pytest.raises(ValueError, match=r"unknown test case selection 'dev'; allowed: all, n500, train"):
        pass_rate.testcases_from_suite(suite, [0] * n, testcases="dev")
    with pytest.raises(ValueError, match=rf"got {n} predictions but 2 probability vectors"):
        pass_rate.testcases_from_suite(suite, [0] * n, [[1.0, 0.0]] * 2)
    with pytest.raises(ValueError, match=r"unknown prediction file format 'jsonl'; allowed: pred_only, binary_conf, softmax"):
        pass_rate.read_predictions(["0"], "jsonl")
    with pytest.raises(ValueError, match=r"pred_only line 2 is not a class id: 'positive'"):
        pass_rate.read_predictions(["0", "positive"], "pred_only")
    with pytest.raises(ValueError, match=r"binary_conf line 1 is not a probability"):
        pass_rate.read_predictions(["1.5"], "binary_conf")
    with pytest.raises(ValueError, match=r"prediction line 2 sums to 0.9, not 1"):
        pass_rate.read_predictions(["0.5 0.5", "0.4 0.5"], "softmax")
    with pytest.raises(ValueError, match=r"sentiment_binary needs p\(positive\)"):
        pass_rate.read_predictions(["1"], "pred_only", sentiment_binary=True)


def test_beluga_selection_and_relabelling(pass_rate):
    test = {"name": "order", "type": "MFT", "capability": "SRL", "agg_fn": "all", "expectation": {"fn": "eq"},
            "nested": False, "labels": 1, "beluga_label_override": 0, "meta": None, "data": ["a", "b", "c", "d"],
            "beluga_split": {"train": [0, 1], "validation": [2], "test": [3]}}
    suite = {"tests": [test]}
    columns = pass_rate.testcases_from_suite(suite, [0], testcases="test")
    assert pass_rate.compute(**columns)["functionalities"]["order"]["failed"] == 1
    columns = pass_rate.testcases_from_suite(suite, [0], testcases="test", beluga_labels=True)
    assert pass_rate.compute(**columns)["functionalities"]["order"]["passed"] == 1
