"""One tester for the ``evaluate`` modules in ``metrics/``, in the spirit of torchmetrics' ``MetricTester``: a
metric is loaded as its users load it, its docstring examples run as written, and its results are compared,
key by key, with an independent reference implementation that the test module writes (plain loops, scipy,
exact enumeration). The metric test modules (``tests/test_metric_*.py``) share it, so each of them holds only
its reference and its cases.

Example::

    tester = MetricTester("g_score")
    tester.run_docstring_examples(at_least=7)
    tester.check_against_reference({"iid_hits": [1, 0]}, {"iid_score": 0.5}, abs=1e-12)
    tester.assert_refused({"iid_hits": [2]}, r"must hold only 0 and 1")
"""

from __future__ import annotations

import doctest
import inspect
import math
import os
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def _working_directory(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def assert_close(actual, expected, *, abs=None, rel=None, exact_keys=False, where="result"):
    """``actual`` equals ``expected``, recursively: dicts key by key (``expected``'s keys, or exactly the same keys
    with ``exact_keys``), lists and tuples item by item, real numbers within ``abs`` / ``rel`` (``pytest.approx``;
    NaN equals NaN), anything else with ``==``. A failure names the path of the first value that differs."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a dict, got {actual!r}"
        if exact_keys:
            assert set(actual) == set(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key, value in expected.items():
            assert key in actual, f"{where}: no {key!r} (has {sorted(actual)})"
            assert_close(actual[key], value, abs=abs, rel=rel, exact_keys=exact_keys, where=f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), \
            f"{where}: {actual!r} != {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, abs=abs, rel=rel, exact_keys=exact_keys, where=f"{where}[{i}]")
    elif isinstance(expected, float) or (isinstance(expected, int) and not isinstance(expected, bool)
                                         and isinstance(actual, float)):
        if isinstance(expected, float) and math.isnan(expected):
            assert isinstance(actual, float) and math.isnan(actual), f"{where}: {actual!r} is not NaN"
        else:
            assert actual == pytest.approx(expected, abs=abs, rel=rel), f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


class MetricTester:
    """The metric ``metrics/<name>``, loaded with ``evaluate.load`` from its folder (in memory: after a
    ``compute()`` that raised, evaluate otherwise waits a second for its cache file's lock)."""

    def __init__(self, name: str):
        import evaluate

        self.name = name
        self.metric = evaluate.load(str(REPO / "metrics" / name), keep_in_memory=True)

    @property
    def module(self):
        """The metric's Python module (its ``_DESCRIPTION``, ``_KWARGS_DESCRIPTION``, ``_CITATION``)."""
        return inspect.getmodule(type(self.metric))

    def compute(self, **inputs):
        return self.metric.compute(**inputs)

    def run_docstring_examples(self, *, at_least: int, optionflags: int = 0) -> doctest.TestResults:
        """Run the Examples of ``_KWARGS_DESCRIPTION`` as written, from the checkout (they load
        ``metrics/<name>``); every example passes and there are at least ``at_least`` of them."""
        parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=optionflags)
        with _working_directory(REPO):
            runner.run(parser.get_doctest(self.module._KWARGS_DESCRIPTION, {}, self.name, None, 0))
        results = runner.summarize(verbose=False)
        assert results.failed == 0, f"{results.failed} of {self.name}'s docstring examples failed"
        assert results.attempted >= at_least, f"{self.name}: {results.attempted} docstring examples, fewer than {at_least}"
        return results

    def check_against_reference(self, inputs: dict, reference, *, abs=None, rel=None, exact_keys=False,
                                options: dict | None = None):
        """``compute(**inputs, **options)`` compared with ``reference``: the expected result, or a function of
        the inputs that returns it (the independent implementation). Returns the metric's result."""
        result = self.compute(**inputs, **(options or {}))
        expected = reference(**inputs) if callable(reference) else reference
        assert_close(result, expected, abs=abs, rel=rel, exact_keys=exact_keys, where=self.name)
        return result

    def assert_refused(self, inputs: dict, message: str, *, error: type = ValueError):
        """``compute(**inputs)`` raises ``error`` whose text matches the regular expression ``message``."""
        with pytest.raises(error, match=message):
            self.compute(**inputs)
