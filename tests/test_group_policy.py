"""One policy for ``--group-field`` in every family that keeps groups whole (it implements ``groups()``):

* a field with no value in any row (all null, NaN or empty) is refused in one line, nothing written;
* a row with no value is a group of its own: the terminal and the card say how many, the configs record it
  (``missing_group_values``), and the card's audit never counts a missing value as shared, so the card's "no
  group straddles train, validation and test" is what its own audit shows;
* the group column keeps its type in the released rows (a number stays a number, not ``'12.0'``);
* a field too coarse for the requested sizes (three values) is said on the terminal and in the card: sizes far
  from the requested ones, and configs that hold the same evaluation rows.

The cases run for every grouping method of the registry as the ``group_policy`` check of
:func:`split_builders.testing.check_method` (``tests/test_registered_methods.py``), each method building its source
with a group column from its own ``group_example`` (its ``example`` check fails for a grouping method without one).
Here: the policy's own functions.
"""

from __future__ import annotations

import numpy as np
import pytest

from split_builders.api import ConfigSplit, SplitMethod, registry
from split_builders.errors import InvalidParameterError


def _config(name, validation, test, rows=None):
    return ConfigSplit(name, {"train": np.arange(10, 20), "validation": np.asarray(validation),
                              "test": np.asarray(test)}, method="x", parameters={"grouped_by": "g"}, rows=rows)


def test_configs_holding_the_same_evaluation_rows_are_said():
    from split_builders.splitters.groups import identical_configs, size_gaps

    configs = [_config("a", [1, 2], [3, 4]), _config("b", [2, 1], [4, 3]), _config("c", [1, 2], [3, 5]),
               _config("d", [1, 2], [3, 4], rows=object())]
    assert identical_configs(configs) == [["a", "b"]]
    assert "`a` and `b` hold the same validation and test rows: they test the same thing" in size_gaps(configs)


def test_some_registered_method_keeps_groups_whole_and_declares_its_group_example():
    grouping = [method for method in registry().values() if method.supports_groups]
    assert grouping, "no registered method keeps groups whole"
    assert all(type(method).group_example is not SplitMethod.group_example for method in grouping)


def test_the_policy_itself():
    from split_builders.splitters.groups import column_groups, fold_groups, group_codes, group_parameters

    import datasets

    codes = group_codes(["x", None, "", float("nan"), "x", " "])
    assert codes[0] == codes[4] and len(set(codes.tolist())) == 5  # each missing value its own group
    folds = fold_groups(["x", None, "", "x"])
    assert folds[0] == folds[3] and len({folds[1], folds[2], folds[0]}) == 3
    assert fold_groups(["a", "b"]) == ["a", "b"]  # nothing missing: the values themselves (folds unchanged)
    table = datasets.Dataset.from_dict({"g": [1, None, 2], "label": ["a", "b", "a"]})
    found = column_groups(table, "g")
    assert group_parameters(found, "g") == {"grouped_by": "g", "missing_group_values": 1}
    assert group_parameters(found[:2], "g") == {"grouped_by": "g"}  # a slice is plain numbers
    with pytest.raises(InvalidParameterError, match="is the label field"):
        column_groups(table, "label", label_field="label")
