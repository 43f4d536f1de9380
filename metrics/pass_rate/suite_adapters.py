"""A CheckList suite (resplit's JSON format) as test cases: the per-test-case columns of pass_rate.

:func:`suite_testcases` is the one place a suite becomes one row per test case. The metric's
:func:`testcases_from_suite` cuts flat per-example predictions along those rows; resplit's
``behavioural`` method releases the same rows (it loads this file by path). Plain Python: the
metric imports it as ``from .suite_adapters import ...``, so that ``evaluate.load`` copies it
beside ``pass_rate.py``.

A test case's record columns are plain lists and dicts, never JSON text: ``labels`` has one label per
example (None where an example has none), ``meta`` one list of strings per example (``[]`` where there is
none) and ``expectation`` is a dict with every key of :data:`EXPECTATION_KEYS` (None where the suite
leaves one out), so that they are Arrow lists and structs in a dataset.
"""

TESTCASE_SELECTIONS = ("all", "n500", "train", "validation", "test")
# compute()'s per-test-case columns besides predictions and confidences, in its argument order.
TESTCASE_COLUMNS = ("labels", "meta", "functionality", "test_type", "capability", "expectation", "agg_fn")
# The keys of an expectation (and of its slice), in this order; a key the suite leaves out is None.
EXPECTATION_KEYS = ("fn", "value", "tolerance", "label", "increasing", "slice", "doc")
SLICE_KEYS = ("fn", "value", "slice_agg_fn")


def suite_testcases(suite, *, testcases="all", beluga_labels=False, limit=None):
    """One row per selected test case: tests in suite order, test cases in the selection's order.

    Parameters
    ----------
    suite : dict
        A suite in resplit's CheckList JSON format (``tests`` with ``name``, ``type``,
        ``capability``, ``agg_fn``, ``expectation``, ``nested``, ``data``, ``labels``,
        ``meta``; ``checklist_n500_run_idxs`` / ``beluga_split`` for selections).
    testcases : {"all", "n500", "train", "validation", "test"}
        All test cases, CheckList's released n500 sample (``checklist_n500_run_idxs``, in
        that order), or a BELUGA split (``beluga_split``).
    beluga_labels : bool, default=False
        Use BELUGA's relabelling (``beluga_label_override``) where a test has one.
    limit : int, optional
        Keep only the first ``limit`` selected test cases of each test.

    Returns
    -------
    dict of list
        ``functionality_id`` (the test's 0-based position in the suite), ``testcase_id`` (the
        test case's position in the test's ``data``), ``examples`` (each example as the list of
        its text fields: one for sentiment, two for a QQP pair or a SQuAD context and question)
        and the :data:`TESTCASE_COLUMNS`: ``labels`` one label per example (None where there is
        none), ``meta`` one list of strings per example, ``expectation`` a dict with the keys of
        :data:`EXPECTATION_KEYS` (see :func:`testcase_expectation`).
    """
    if testcases not in TESTCASE_SELECTIONS:
        raise ValueError(f"unknown test case selection {testcases!r}; allowed: {', '.join(TESTCASE_SELECTIONS)}")
    columns = {name: [] for name in ("functionality_id", "testcase_id", "examples", *TESTCASE_COLUMNS)}
    for functionality_id, test in enumerate(suite["tests"]):
        chosen = _selected_testcases(test, testcases)[:limit]
        labels = test.get("labels")
        if beluga_labels and test.get("beluga_label_override") is not None:
            labels = test["beluga_label_override"]
        n = len(chosen)
        columns["functionality_id"] += [functionality_id] * n
        columns["testcase_id"] += chosen
        columns["functionality"] += [test["name"]] * n
        columns["test_type"] += [test["type"]] * n
        columns["capability"] += [test["capability"]] * n
        expectation = testcase_expectation(test["expectation"])
        columns["expectation"] += [expectation] * n
        columns["agg_fn"] += [test["agg_fn"]] * n
        for index in chosen:
            case = test["data"][index]
            examples = case if test["nested"] else [case]
            columns["examples"].append([[e] if isinstance(e, str) else list(e) for e in examples])
            columns["labels"].append(_per_example(_per_testcase(labels, index), len(examples), test["nested"]))
            meta = _per_example(_per_testcase(test.get("meta"), index), len(examples), test["nested"])
            columns["meta"].append([_meta_strings(entry) for entry in meta])
    return columns


def testcase_expectation(spec):
    """A suite's expectation as a record with every key of :data:`EXPECTATION_KEYS` (and of
    :data:`SLICE_KEYS` in its slice), None where the suite leaves a key out: one shape for every
    test, as an Arrow struct needs. ``None`` and an absent key mean the same to the metric."""
    unknown = sorted(set(spec) - set(EXPECTATION_KEYS))
    if unknown:
        raise ValueError(f"expectation {spec.get('fn')!r} has unknown key(s) {', '.join(unknown)}; "
                         f"an expectation has {', '.join(EXPECTATION_KEYS)}")
    record = {key: spec.get(key) for key in EXPECTATION_KEYS}
    if record["slice"] is not None:
        record["slice"] = {key: record["slice"].get(key) for key in SLICE_KEYS}
    if record["tolerance"] is not None:
        record["tolerance"] = float(record["tolerance"])
    return record


def testcases_from_suite(suite, predictions, confidences=None, testcases="all", beluga_labels=False):
    """Cut flat per-example predictions into the per-test-case columns of ``compute``.

    Parameters
    ----------
    suite : dict
        A suite in resplit's CheckList JSON format (see :func:`suite_testcases`).
    predictions : sequence
        One prediction per example of the selected test cases: tests in suite order,
        test cases in order, examples in order.
    confidences : sequence of sequence of float, optional
        One probability vector per example, aligned with ``predictions``.
    testcases : {"all", "n500", "train", "validation", "test"}
        Which test cases the predictions cover (see :func:`suite_testcases`).
    beluga_labels : bool, default=False
        Use BELUGA's relabelling (``beluga_label_override``) where a test has one.

    Returns
    -------
    dict
        Keyword arguments for ``compute``.
    """
    rows = suite_testcases(suite, testcases=testcases, beluga_labels=beluga_labels)
    if confidences is not None and len(confidences) != len(predictions):
        raise ValueError(f"got {len(predictions)} predictions but {len(confidences)} probability vectors")
    sizes = [len(examples) for examples in rows["examples"]]
    if sum(sizes) != len(predictions):
        raise ValueError(
            f"suite {suite.get('suite', '?')!r} has {sum(sizes)} examples in its {testcases!r} test cases "
            f"but {len(predictions)} predictions were given"
        )
    columns = {"predictions": [], "confidences": []}
    start = 0
    for size in sizes:
        stop = start + size
        columns["predictions"].append(list(predictions[start:stop]))
        columns["confidences"].append([] if confidences is None else [list(v) for v in confidences[start:stop]])
        start = stop
    columns.update({name: rows[name] for name in TESTCASE_COLUMNS})
    return columns


def suite_uses_answers(suite):
    """Whether a suite's predictions are answer strings (SQuAD) rather than class ids."""
    for test in suite["tests"]:
        labels = test.get("labels")
        while isinstance(labels, list) and labels:
            labels = labels[0]
        if isinstance(labels, str):
            return True
        if isinstance(labels, int):
            return False
    return False


def _selected_testcases(test, testcases):
    count = len(test["data"])
    if testcases == "all":
        return list(range(count))
    if testcases == "n500":
        run = test.get("checklist_n500_run_idxs")
        # Tests CheckList ran in full have no sample.
        return list(range(count)) if run is None else list(run)
    return list(test["beluga_split"][testcases])


def _per_testcase(value, index):
    """A test's ``labels`` / ``meta`` for one test case: one value for the whole test, or one per test case."""
    return value[index] if isinstance(value, list) else value


def _per_example(value, count, nested):
    """A test case's label or meta for each of its ``count`` examples: a nested test case's list has one
    entry per example; any other value (and a plain test case's value) is every example's."""
    if nested and isinstance(value, list) and len(value) == count:
        return list(value)
    return [value] * count


def _meta_strings(entry):
    """One example's metadata as a list of strings: None or an empty record is ``[]``, a string ``[text]``,
    a list of strings as it is (``squad_expect_same``'s ``[old, new]``)."""
    if entry is None or entry == {} or entry == []:
        return []
    if isinstance(entry, str):
        return [entry]
    if isinstance(entry, list) and all(isinstance(part, str) for part in entry):
        return list(entry)
    raise ValueError(f"an example's meta is a string, a list of strings or null, got {entry!r:.80}")
