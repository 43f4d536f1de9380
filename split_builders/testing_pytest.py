"""The conformance check as pytest parameters, as scikit-learn's ``parametrize_with_checks``: one test per check of
a split method, in a plug-in's own test suite.

>>> from split_builders.testing_pytest import method_checks
>>> @pytest.mark.parametrize("check", method_checks(MyMethod))  # doctest: +SKIP
... def test_conformance(check, tmp_path):
...     check(tmp_path)
"""

from __future__ import annotations

import functools

from split_builders.testing import CHECKS, check_method, expected_failures_checked


def method_checks(method, *, data=None, expected_failures=None) -> list:
    """One ``pytest.param`` per check of :data:`~split_builders.testing.CHECKS`, for ``pytest.mark.parametrize``, its
    id the check's name: each value is a function of a scratch folder (``tmp_path``) that runs that check on
    ``method`` (:func:`~split_builders.testing.check_method`, ``data`` where its examples read); a check of
    ``expected_failures`` (``{check: reason}``) is marked ``xfail``, strict (one that passes fails the test)."""
    import pytest

    expected = expected_failures_checked(expected_failures)
    return [pytest.param(functools.partial(_run, method, data, name), id=name,
                         marks=[pytest.mark.xfail(reason=expected[name], strict=True, raises=AssertionError)]
                         if name in expected else [])
            for name in CHECKS]


def _run(method, data, name: str, work) -> list:
    return check_method(method, data=data, work=work, checks=[name])
