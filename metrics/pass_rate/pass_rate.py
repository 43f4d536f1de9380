"""Behavioural pass rate: CheckList's test semantics as an `evaluate` metric.

One input row is one CheckList test case: the model's predictions for every example of
the test case, the functionality (CheckList test) it belongs to, the functionality's type
and capability, and its declarative expectation. The metric applies the expectation to
each example, aggregates the example results into one pass / fail / filtered result per
test case, and reports pass rates per functionality, capability and test type.

The semantics follow the suite format of resplit's CheckList suites (``SPEC.md`` next to
the suites): expectations ``eq``, ``pred_not_equal``, ``allow_for_neutral``,
``squad_clean_eq``, ``inv``, ``monotonic``, ``diff_up``, ``diff_down``, ``qqp_triplet``
and ``squad_expect_same``, optional slices, ``agg_fn`` and filtered test cases.

This file holds CheckList's semantics; the adapters live beside it and are attached to the
metric object: ``predictions.py`` (prediction files, a binary sentiment model's classes) and
``suite_adapters.py`` (a whole suite as test-case rows).
"""

import math
import re

import datasets
import evaluate
import numpy as np

from .predictions import check_distributions, read_predictions, sentiment_from_binary
from .suite_adapters import suite_uses_answers, testcase_expectation, testcases_from_suite


_CITATION = """\
@inproceedings{ribeiro-etal-2020-beyond,
    title = "Beyond Accuracy: Behavioral Testing of {NLP} Models with {C}heck{L}ist",
    author = "Ribeiro, Marco Tulio and Wu, Tongshuang and Guestrin, Carlos and Singh, Sameer",
    booktitle = "Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics",
    year = "2020",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2020.acl-main.442",
    pages = "4902--4912",
}
@article{luz-de-araujo-roth-2023-cross,
    title = "Cross-functional Analysis of Generalization in Behavioral Learning",
    author = "Luz de Araujo, Pedro Henrique and Roth, Benjamin",
    journal = "Transactions of the Association for Computational Linguistics",
    volume = "11",
    year = "2023",
    url = "https://aclanthology.org/2023.tacl-1.60",
    pages = "1066--1081",
}
"""

_DESCRIPTION = """\
Pass rate of a model on a CheckList behavioural test suite. Each input row is one test
case (one example, or a group of examples such as an original input and its
perturbations). The functionality's expectation turns each example's prediction into
pass, fail or "filtered" (the expectation does not apply); the results of a test case
are aggregated (`agg_fn`) into one result, and a slice can filter whole test cases.
The pass rate of a functionality is 100 * passed / (test cases not filtered), i.e.
100 minus CheckList's failure rate; the suite score is the mean over functionalities
(BELUGA's suite score), and means per capability and per test type are reported too.
"""

_KWARGS_DESCRIPTION = """
Computes CheckList pass rates.

Args:
    predictions (`list` of `list`): for each test case, the model's prediction for each
        of its examples, in order: class ids (`int`) or answer strings (`str`).
    confidences (`list` of `list` of `list` of `float`): for each test case, one
        probability vector per example, or an empty list when only predictions are
        known. `inv` uses them for its tolerance; `monotonic`, `diff_up` and
        `diff_down` need them. Each vector must be a distribution (non-negative,
        summing to 1 within 1e-3).
    labels (`list` of `list`): for each test case, one label per example (`None` where an
        example has none): class ids (`int`) or answers (`str`), the predictions' type.
    meta (`list` of `list` of `list` of `str`): for each test case, one list of strings per
        example (`[]` where there is none); only `squad_expect_same` reads it (`[old, new]`).
    functionality (`list` of `str`): the name of the functionality (CheckList test).
    test_type (`list` of `str`): `MFT`, `INV` or `DIR`.
    capability (`list` of `str`): e.g. `Vocabulary`, `Negation`.
    expectation (`list` of `dict`): the functionality's expectation, e.g. `{"fn": "eq"}`,
        `{"fn": "inv", "tolerance": 0.1}`, `{"fn": "monotonic", "increasing": True,
        "tolerance": 0.1, "slice": {"fn": "orig_pred_not_equal", "value": 1,
        "slice_agg_fn": "all_except_first"}}`; keys `fn`, `value`, `tolerance`, `label`,
        `increasing`, `slice` (`fn`, `value`, `slice_agg_fn`) and `doc`, a missing or `None`
        key meaning the default.
    agg_fn (`list` of `str`): `all` or `all_except_first`.
    return_testcase_results (`bool`, default `False`): also return every test case's
        result (1 passed, 0 failed, None filtered) per functionality, in input order;
        `g_score` takes these as suite hits.

Returns:
    functionalities (`dict`): per functionality, `passed`, `failed`, `filtered` (counts
        of test cases) and `pass_rate` (percent; NaN when every test case is filtered).
    pass_rate (`float`): mean pass rate over the functionalities whose rate is defined.
    capabilities (`dict`), types (`dict`): mean pass rate per capability / test type.
    passed, failed, filtered (`int`): totals over all test cases.
    testcase_results (`dict`, only with `return_testcase_results=True`).

The metric object also carries helpers (static methods):
    testcases_from_suite(suite, predictions, confidences=None, testcases="all",
        beluga_labels=False): cut flat per-example predictions, in suite order, into the
        columns above for a suite in resplit's JSON format.
    read_predictions(lines, file_format, answers=False, sentiment_binary=False): parse
        CheckList prediction lines (`pred_only`, `binary_conf`, `softmax`).
    sentiment_from_binary(p_positive): CheckList's three sentiment classes from a
        binary model's p(positive).
    suite_uses_answers(suite): whether a suite's predictions are answer strings.

Examples:
    Two test cases of a minimum functionality test, one passed and one failed:

    >>> import evaluate
    >>> pass_rate = evaluate.load("metrics/pass_rate")
    >>> eq = {"fn": "eq"}
    >>> result = pass_rate.compute(
    ...     predictions=[[2], [0]], confidences=[[], []], labels=[[2], [2]],
    ...     meta=[[[]], [[]]], functionality=["positive words", "positive words"],
    ...     test_type=["MFT", "MFT"], capability=["Vocabulary", "Vocabulary"],
    ...     expectation=[eq, eq], agg_fn=["all", "all"])
    >>> result["functionalities"]
    {'positive words': {'passed': 1, 'failed': 1, 'filtered': 0, 'pass_rate': 50.0}}
    >>> result["pass_rate"], result["types"]
    (50.0, {'MFT': 50.0})

    A whole suite from flat predictions (one per example, in suite order). The
    invariance test passes its first test case (the prediction does not change) and
    fails the second (it changes and p(original class) moves by more than 0.1):

    >>> suite = {"suite": "toy", "tests": [{
    ...     "name": "typos", "type": "INV", "capability": "Robustness",
    ...     "agg_fn": "all_except_first", "expectation": {"fn": "inv", "tolerance": 0.1},
    ...     "nested": True, "labels": None, "meta": None,
    ...     "data": [["good", "godo"], ["bad", "bda"]]}]}
    >>> confidences = [[0.1, 0.9], [0.2, 0.8], [0.7, 0.3], [0.3, 0.7]]
    >>> predictions = [1, 1, 0, 1]
    >>> columns = pass_rate.testcases_from_suite(suite, predictions, confidences)
    >>> pass_rate.compute(**columns)["functionalities"]["typos"]
    {'passed': 1, 'failed': 1, 'filtered': 0, 'pass_rate': 50.0}

    A binary sentiment model's p(positive) as CheckList's three classes:

    >>> predictions, confidences = pass_rate.sentiment_from_binary([0.1, 0.5, 0.8])
    >>> predictions
    [0, 1, 2]
    >>> confidences[1]
    [0.0, 1.0, 0.0]
"""

EXPECTATIONS = (
    "eq", "pred_not_equal", "allow_for_neutral", "squad_clean_eq", "inv", "monotonic",
    "diff_up", "diff_down", "qqp_triplet", "squad_expect_same",
)
TEST_TYPES = ("MFT", "INV", "DIR")
AGG_FNS = ("all", "all_except_first")
SLICE_FNS = ("orig_pred_equal", "orig_pred_not_equal")
# Expectations that need the test case's labels (unless `value` is given, for eq).
_NEEDS_LABELS = ("eq", "allow_for_neutral", "squad_clean_eq")
_NEEDS_CONFIDENCES = ("monotonic", "diff_up", "diff_down")


# ---------------------------------------------------------------------------------------
# Expectations on one example (no reference to the original input)
# ---------------------------------------------------------------------------------------


def _clean_squad_answer(text):
    """CheckList's SQuAD answer cleaning, quirks included.

    ``str.lstrip`` takes a *set of characters*, so every leading character out of
    ``[a,the,an,in,at] `` is removed (``"the tent"`` cleans to ``""``), not whole words.
    """
    return text.lstrip("[a,the,an,in,at] ").rstrip(".")


def _eq(pred, label, spec):
    target = label if spec.get("value") is None else spec["value"]
    return pred == target


def _pred_not_equal(pred, label, spec):
    return pred != spec.get("value")


def _allow_for_neutral(pred, label, spec):
    # A neutral label accepts anything but negative.
    return pred != 0 if label == 1 else pred == label


def _squad_clean_eq(pred, label, spec):
    return _clean_squad_answer(pred) == _clean_squad_answer(label)


_SINGLE = {
    "eq": _eq,
    "pred_not_equal": _pred_not_equal,
    "allow_for_neutral": _allow_for_neutral,
    "squad_clean_eq": _squad_clean_eq,
}


# ---------------------------------------------------------------------------------------
# Expectations against the first example of the test case (the original input)
# ---------------------------------------------------------------------------------------


def _inv(orig, new, meta, spec):
    if new.pred == orig.pred:
        return True
    if orig.conf is None:
        # Without confidences (answer strings, labels only) any change fails.
        return False
    delta = new.conf[orig.pred] - orig.conf[orig.pred]
    return abs(delta) <= spec.get("tolerance", 0.0)


def _monotonic(orig, new, meta, spec):
    tolerance = spec.get("tolerance", 0.0)
    label = orig.pred if spec.get("label") is None else spec["label"]
    before = orig.conf[label]
    change = new.conf[label] - before
    # When p(label) is too close to 0 (increasing) or 1 (decreasing) to move the wrong
    # way by more than the tolerance, the example cannot fail: CheckList filters it.
    if spec.get("increasing", True):
        if before <= tolerance:
            return None
        return change + tolerance >= 0
    if before >= 1 - tolerance:
        return None
    return change - tolerance <= 0


def _sentiment_change(orig, new):
    """How much more positive the new input is: less negative mass plus more positive."""
    return (orig.conf[0] - new.conf[0]) + (new.conf[2] - orig.conf[2])


def _diff_up(orig, new, meta, spec):
    return _sentiment_change(orig, new) + spec.get("tolerance", 0.1) >= 0


def _diff_down(orig, new, meta, spec):
    return _sentiment_change(orig, new) - spec.get("tolerance", 0.1) <= 0


def _squad_expect_same(orig, new, meta, spec):
    if not meta:
        return new.pred == orig.pred
    old_word, new_word = meta[0], meta[1]
    expected = re.sub(r"\b%s\b" % re.escape(old_word), new_word, orig.pred)
    return new.pred == expected


_PAIRWISE = {
    "inv": _inv,
    "monotonic": _monotonic,
    "diff_up": _diff_up,
    "diff_down": _diff_down,
    "squad_expect_same": _squad_expect_same,
}


# ---------------------------------------------------------------------------------------
# Expectations on the whole test case
# ---------------------------------------------------------------------------------------


def _qqp_triplet(preds):
    """Implication test on [p(x, a), p(x, b), p(a, b)], as released by CheckList.

    If x duplicates a and b, a must duplicate b. The released suite also fails every
    test case with p(x, a) = 0 and p(x, b) = 1; that is kept so that results match
    CheckList's. Other test cases say nothing about implication and are filtered.
    """
    first, second, third = preds
    if first == 1 and second == 1:
        return third == 1
    if first == 0 and second == 1:
        return False
    return None


# ---------------------------------------------------------------------------------------
# One test case
# ---------------------------------------------------------------------------------------


class _Example:
    """One example's prediction and probability vector (None without confidences)."""

    __slots__ = ("pred", "conf")

    def __init__(self, pred, conf):
        self.pred = pred
        self.conf = conf


def _aggregate(results, agg_fn):
    """CheckList's aggregation: drop filtered results, then (optionally) the first."""
    kept = [r for r in results if r is not None]
    if not kept:
        return None
    if agg_fn == "all_except_first":
        kept = kept[1:]
    return all(kept)


def _slice_holds(examples, slice_spec):
    orig_pred = examples[0].pred
    if slice_spec["fn"] == "orig_pred_equal":
        conditions = [orig_pred == slice_spec.get("value") for _ in examples]
    else:
        conditions = [orig_pred != slice_spec.get("value") for _ in examples]
    if slice_spec.get("slice_agg_fn", "all") == "all_except_first":
        conditions = conditions[1:]
    return all(conditions)


def _testcase_result(examples, labels, meta, spec, agg_fn):
    """True (passed), False (failed) or None (filtered) for one test case."""
    fn = spec["fn"]
    if fn == "qqp_triplet":
        # A test-case expectation gives one result directly; agg_fn does not apply.
        result = _qqp_triplet([example.pred for example in examples])
    elif fn in _SINGLE:
        check = _SINGLE[fn]
        results = [check(ex.pred, label, spec) for ex, label in zip(examples, labels)]
        result = _aggregate(results, agg_fn)
    else:
        check = _PAIRWISE[fn]
        orig = examples[0]
        results = [check(orig, ex, example_meta, spec) for ex, example_meta in zip(examples, meta)]
        result = _aggregate(results, agg_fn)
    if result is not None and "slice" in spec and not _slice_holds(examples, spec["slice"]):
        return None
    return None if result is None else bool(result)


# ---------------------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------------------


def _where(index, functionality):
    return f"test case {index} (functionality {functionality!r})"


def _record(value, where):
    """An expectation (or its slice) without its None entries (and a slice of None values): None and a
    missing key mean the default."""
    if not isinstance(value, dict):
        raise ValueError(f"the expectation of {where} must be a dict with an 'fn' key, got {value!r:.80}")
    record = {key: _record(item, where) if isinstance(item, dict) else item for key, item in value.items()}
    return {key: item for key, item in record.items() if item is not None and item != {}}


def _check_choice(value, allowed, what):
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; allowed: {', '.join(allowed)}")


def _check_expectation(spec, where):
    if not isinstance(spec, dict) or "fn" not in spec:
        raise ValueError(f"the expectation of {where} must be a dict with an 'fn' key, got {spec!r}")
    _check_choice(spec["fn"], EXPECTATIONS, f"expectation name in {where}:")
    if "slice" in spec:
        slice_spec = spec["slice"]
        if not isinstance(slice_spec, dict):
            raise ValueError(f"the slice of {where} must be a dict, got {slice_spec!r}")
        _check_choice(slice_spec.get("fn"), SLICE_FNS, f"slice name in {where}:")
        _check_choice(slice_spec.get("slice_agg_fn", "all"), AGG_FNS, f"slice_agg_fn in {where}:")


def _examples(predictions, confidences, where):
    if len(predictions) == 0:
        raise ValueError(f"{where} has no predictions")
    if len(confidences) == 0:
        return [_Example(pred, None) for pred in predictions]
    if len(confidences) != len(predictions):
        raise ValueError(
            f"{where} has {len(predictions)} predictions but {len(confidences)} probability vectors"
        )
    matrix = check_distributions(confidences, lambda row: where if row is None else f"example {row} of {where}")
    classes = matrix.shape[1]
    for position, pred in enumerate(predictions):
        if isinstance(pred, bool) or not isinstance(pred, (int, np.integer)) or not 0 <= pred < classes:
            raise ValueError(
                f"the prediction of example {position} of {where} must be a class id below {classes} "
                f"(the length of its probability vector), got {pred!r}"
            )
    return [_Example(pred, conf) for pred, conf in zip(predictions, matrix)]


def _per_example(value, count, what, where):
    """A test case's labels or meta: one entry per example."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"the {what} of {where} must be a list with one entry per example, got {value!r:.80}")
    if len(value) != count:
        raise ValueError(f"{where} has {count} examples but {len(value)} {what}")
    return list(value)


def _check_needs(spec, examples, labels, where):
    fn = spec["fn"]
    if fn in _NEEDS_LABELS and spec.get("value") is None and any(label is None for label in labels):
        raise ValueError(f"expectation {fn!r} of {where} needs a label for every example, but some are None")
    if fn in _NEEDS_CONFIDENCES and examples[0].conf is None:
        raise ValueError(f"expectation {fn!r} of {where} needs probability vectors (confidences), got none")
    if fn in ("diff_up", "diff_down") and examples[0].conf.size < 3:
        raise ValueError(f"expectation {fn!r} of {where} needs 3-class sentiment probability vectors")
    if fn == "qqp_triplet":
        if len(examples) != 3:
            raise ValueError(f"expectation 'qqp_triplet' of {where} needs exactly 3 examples, got {len(examples)}")
        if any(ex.pred not in (0, 1) for ex in examples):
            raise ValueError(f"expectation 'qqp_triplet' of {where} needs binary (0/1) predictions")
    if fn == "monotonic" and spec.get("label") is not None and not 0 <= spec["label"] < examples[0].conf.size:
        raise ValueError(f"the monotonic label {spec['label']!r} of {where} is not a class of its probability vectors")


class _Functionality:
    """Running counts of one functionality, and the attributes its rows must share."""

    def __init__(self, test_type, capability, spec, agg_fn):
        self.attributes = {"test_type": test_type, "capability": capability, "expectation": spec, "agg_fn": agg_fn}
        self.results = []

    def check_same(self, name, index, **attributes):
        for key, value in attributes.items():
            if value != self.attributes[key]:
                raise ValueError(
                    f"functionality {name!r} has {key} {self.attributes[key]!r} in an earlier test case "
                    f"but {value!r} in test case {index}; all its test cases must agree"
                )

    def summary(self):
        passed = sum(1 for r in self.results if r is True)
        failed = sum(1 for r in self.results if r is False)
        filtered = len(self.results) - passed - failed
        rate = 100.0 * passed / (passed + failed) if passed + failed else float("nan")
        return {"passed": passed, "failed": failed, "filtered": filtered, "pass_rate": rate}


def _mean(values):
    """Mean of the defined (non-NaN) values; NaN when there are none."""
    defined = [v for v in values if not math.isnan(v)]
    return float(sum(defined) / len(defined)) if defined else float("nan")


def _grouped_means(summaries, functionalities, key):
    groups = {}
    for name, summary in summaries.items():
        groups.setdefault(functionalities[name].attributes[key], []).append(summary["pass_rate"])
    return {group: _mean(rates) for group, rates in groups.items()}


def _evaluate_row(index, row, functionalities):
    """Check one test case's row and add its result to its functionality."""
    preds, confs, labels, meta, name, kind, cap, spec, agg = row
    where = _where(index, name)
    _check_choice(kind, TEST_TYPES, f"test type in {where}:")
    _check_choice(agg, AGG_FNS, f"agg_fn in {where}:")
    spec = _record(spec, where)
    _check_expectation(spec, where)
    functionality = functionalities.setdefault(name, _Functionality(kind, cap, spec, agg))
    functionality.check_same(name, index, test_type=kind, capability=cap, expectation=spec, agg_fn=agg)
    examples = _examples(list(preds), list(confs), where)
    count = len(examples)
    # Labels and meta are read only by the expectations that use them.
    example_labels = [None] * count
    if spec["fn"] in _NEEDS_LABELS and spec.get("value") is None:
        example_labels = _per_example(labels, count, "labels", where)
    _check_needs(spec, examples, example_labels, where)
    example_meta = [None] * count
    if spec["fn"] == "squad_expect_same":
        example_meta = _per_example(meta, count, "meta entries", where)
    functionality.results.append(_testcase_result(examples, example_labels, example_meta, spec, agg))


def compute_pass_rates(
    predictions, confidences, labels, meta, functionality, test_type, capability, expectation, agg_fn,
    return_testcase_results=False,
):
    """Pass rates of test cases given column-wise (see ``_KWARGS_DESCRIPTION``)."""
    columns = (predictions, confidences, labels, meta, functionality, test_type, capability, expectation, agg_fn)
    if len({len(column) for column in columns}) != 1:
        raise ValueError(f"all inputs need one entry per test case; got lengths {[len(c) for c in columns]}")
    functionalities = {}
    for index, row in enumerate(zip(*columns)):
        _evaluate_row(index, row, functionalities)
    return _summarise(functionalities, return_testcase_results)


def _summarise(functionalities, return_testcase_results):
    summaries = {name: f.summary() for name, f in functionalities.items()}
    result = {
        "functionalities": summaries,
        "pass_rate": _mean([s["pass_rate"] for s in summaries.values()]),
        "capabilities": _grouped_means(summaries, functionalities, "capability"),
        "types": _grouped_means(summaries, functionalities, "test_type"),
        "passed": sum(s["passed"] for s in summaries.values()),
        "failed": sum(s["failed"] for s in summaries.values()),
        "filtered": sum(s["filtered"] for s in summaries.values()),
    }
    if return_testcase_results:
        result["testcase_results"] = {
            name: [None if r is None else int(r) for r in f.results] for name, f in functionalities.items()
        }
    return result


# ---------------------------------------------------------------------------------------
# The evaluate module
# ---------------------------------------------------------------------------------------


def expectation_feature(value_type):
    """An expectation as a record (`datasets` features): `value` and the slice's `value` have the
    labels' type (`int64` class ids or `string` answers)."""
    text, value = datasets.Value("string"), datasets.Value(value_type)
    return {
        "fn": text, "value": value, "tolerance": datasets.Value("float64"), "label": datasets.Value("int64"),
        "increasing": datasets.Value("bool"), "slice": {"fn": text, "value": value, "slice_agg_fn": text},
        "doc": text,
    }


def _features(prediction_type):
    text = datasets.Value("string")
    return datasets.Features(
        {
            "predictions": datasets.Sequence(datasets.Value(prediction_type)),
            "confidences": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
            "labels": datasets.Sequence(datasets.Value(prediction_type)),
            "meta": datasets.Sequence(datasets.Sequence(text)),
            "functionality": text,
            "test_type": text,
            "capability": text,
            "expectation": expectation_feature(prediction_type),
            "agg_fn": text,
        }
    )


# The record columns and what each holds per test case (they were JSON text before).
_RECORD_COLUMNS = {"labels": "a list with one label per example", "meta": "a list of lists of strings",
                   "expectation": "a dict"}


def _completed(spec):
    """An expectation with every key (None where left out); anything else is left for the checks to name."""
    try:
        return testcase_expectation(spec) if isinstance(spec, dict) else spec
    except (AttributeError, TypeError, ValueError) as error:
        raise ValueError(f"expectation {spec!r:.80}: {error}") from None


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PassRate(evaluate.Metric):
    """CheckList pass rates per functionality, capability and test type."""

    # Helpers reachable from the object that `evaluate.load` returns.
    testcases_from_suite = staticmethod(testcases_from_suite)
    read_predictions = staticmethod(read_predictions)
    sentiment_from_binary = staticmethod(sentiment_from_binary)
    suite_uses_answers = staticmethod(suite_uses_answers)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # Answer strings (SQuAD) or class ids; evaluate picks the one that fits.
            features=[_features("string"), _features("int64")],
            homepage="https://github.com/marcotcr/checklist",
            codebase_urls=["https://github.com/marcotcr/checklist", "https://github.com/peluz/beluga"],
            reference_urls=["https://aclanthology.org/2020.acl-main.442", "https://aclanthology.org/2023.tacl-1.60"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """`evaluate`'s compute, with each expectation completed to every key first (a key left out is
        None), so that `{"fn": "eq"}` fits the expectation's record."""
        for column, shape in _RECORD_COLUMNS.items():
            values = kwargs.get(column)
            if values is None or isinstance(values, (str, dict)) or not hasattr(values, "__iter__"):
                continue
            values = kwargs[column] = list(values)  # a dataset's column (datasets 4: a lazy Column) as a list
            if any(isinstance(value, str) for value in values):
                raise ValueError(f"{column} is {shape} per test case, not JSON text (decode it with json.loads "
                                 "first: earlier resplit releases stored JSON text)")
        if isinstance(kwargs.get("expectation"), list):
            kwargs["expectation"] = [_completed(spec) for spec in kwargs["expectation"]]
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _enforce_nested_string_type(self, schema, obj):
        # None is a missing value (an Arrow null: no label, no slice, no doc), which `evaluate`'s check
        # that strings are strings would refuse.
        if obj is None:
            return None
        return super()._enforce_nested_string_type(schema, obj)

    def _compute(
        self, predictions, confidences, labels, meta, functionality, test_type, capability, expectation, agg_fn,
        return_testcase_results=False,
    ):
        return compute_pass_rates(
            predictions, confidences, labels, meta, functionality, test_type, capability, expectation, agg_fn,
            return_testcase_results=return_testcase_results,
        )
