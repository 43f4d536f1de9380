"""Simple / hard splitting: the median rule, CURRICULUM's midrange rule, and the 60/40 division."""

import math

import numpy as np
import pytest

from split_builders.api import Split
from split_builders.errors import InvalidParameterError
from split_builders.splitters.difficulty import CONFIGS, DifficultySplitter, simple_mask
from split_builders.splitters.partition import shuffle_split


@pytest.mark.parametrize("n, size, seed", [(10, 0.4, 42), (7, 0.4, 42), (2, 0.4, 42), (257, 0.25, 3)])
def test_shuffle_split_is_scikit_learns_train_test_split(n, size, seed):
    from sklearn import model_selection  # the independent reference (a test dependency)
    train, test = shuffle_split(n, size, seed)
    expected_train, expected_test = model_selection.train_test_split(np.arange(n), test_size=size, random_state=seed)
    assert train.tolist() == expected_train.tolist()
    assert test.tolist() == expected_test.tolist()
    assert test.size == math.ceil(size * n)


def test_a_one_row_bucket_goes_to_validation():
    # scikit-learn refuses n=1 (empty train); the same ceil arithmetic puts the row in validation
    train, test = shuffle_split(1, 0.4, 42, allow_empty=True)
    assert train.size == 0 and test.tolist() == [0]


def test_median_rule_is_label_balanced_and_picks_the_top_half():
    rng = np.random.default_rng(0)
    labels = np.repeat(["a", "b", "c"], [40, 41, 19])
    pvi = rng.normal(size=labels.size)
    simple = simple_mask(pvi, labels)
    for label in "abc":
        rows = labels == label
        assert simple[rows].sum() == math.ceil(rows.sum() / 2)
        assert pvi[rows & simple].min() >= pvi[rows & ~simple].max()


def test_midrange_rule_as_curriculum_released_it():
    labels = np.array([0] * 5 + [1] * 4 + [2] * 4)
    pvi = np.array([-2.0, -1.0, 0.5, 1.0, 2.0,    # label 0: t = -2 + (2 + 2) / 2 = 0 -> 3 simple
                    0.5, 0.6, 0.8, 1.5,           # label 1, all positive: t = 0.5 + 2 / 2 = 1.5 -> 1 simple
                    0.301, 0.302, 0.299, 0.3])    # label 2: round(max, 2) == round(min, 2) -> first half
    simple = simple_mask(pvi, labels, threshold="midrange")
    assert simple[:5].tolist() == [False, False, True, True, True]
    assert simple[5:9].tolist() == [False, False, False, True]
    # sorted descending: 0.302, 0.301, 0.3, 0.299 -> the first two are simple
    assert simple[9:].tolist() == [True, True, False, False]
    # label id 0 is treated like any other (CURRICULUM's code zeroes its PVI: not copied)
    assert simple[:5].sum() == 3


def test_splitter_partitions_every_row_and_configs_cross_distribution():
    rng = np.random.default_rng(1)
    labels = np.repeat([0, 1], [60, 40])
    pvi = rng.normal(size=100)
    configs = {c: DifficultySplitter(config=c, random_state=5).split(pvi, labels=labels) for c in CONFIGS}
    assert all(isinstance(split, Split) for split in configs.values())
    simple, hard = configs["simple"], configs["hard"]
    everything = np.concatenate([simple.train, simple.validation, hard.train, hard.validation])
    assert np.array_equal(np.sort(everything), np.arange(100))
    for part in (simple, hard):  # 60/40 per label bucket: 15 of each label's 30 / 20 rows per part
        assert len(part.validation) == math.ceil(0.4 * 30) + math.ceil(0.4 * 20)
        assert part.test.size == 0 and set(part.as_indices()) == {"train", "validation"}
    assert np.array_equal(configs["simple_to_hard"].train, simple.train)
    assert np.array_equal(configs["simple_to_hard"].validation, simple.validation)
    assert np.array_equal(configs["simple_to_hard"].test, np.sort(np.concatenate([hard.train, hard.validation])))
    assert np.array_equal(configs["hard_to_simple"].train, hard.train)
    assert pvi[configs["hard_to_simple"].test].mean() > pvi[configs["hard_to_simple"].train].mean()


def test_get_params_are_the_constructor_parameters():
    splitter = DifficultySplitter.curriculum_compat("hard_to_simple")
    assert splitter.get_params() == {"config": "hard_to_simple", "threshold": "midrange", "validation_size": 0.4,
                                     "random_state": 42}
    assert repr(DifficultySplitter()).startswith("DifficultySplitter(config='simple', threshold='median'")


def test_curriculum_compat_division_matches_train_test_split_per_bucket():
    from sklearn import model_selection  # the independent reference (a test dependency)
    rng = np.random.default_rng(2)
    labels = np.repeat([0, 1], [30, 25])
    pvi = rng.normal(size=55)
    split = DifficultySplitter.curriculum_compat("simple").split(pvi, labels=labels)
    simple = simple_mask(pvi, labels, threshold="midrange")
    expected_val = []
    for label in (0, 1):
        rows = np.flatnonzero(labels == label)
        ordered = rows[np.argsort(-pvi[rows], kind="stable")]
        bucket = ordered[simple[ordered]]
        _, val = model_selection.train_test_split(bucket, test_size=0.4, random_state=42)
        expected_val.extend(val.tolist())
    assert split.validation.tolist() == sorted(expected_val)


@pytest.mark.parametrize("kwargs, message", [
    ({"threshold": "mean"}, "threshold must be one of median, midrange"),
    ({"validation_size": 1.5}, r"validation_size must be a fraction in \(0, 1\)"),
    ({"random_state": "x"}, "random_state"),
    ({"config": "medium"}, "config must be one of simple, hard, simple_to_hard, hard_to_simple"),
])
def test_bad_parameters_fail_in_the_constructor(kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        DifficultySplitter(**kwargs)


def test_non_finite_pvi_is_refused():
    with pytest.raises(InvalidParameterError, match="1 PVI value"):
        DifficultySplitter().split([0.1, np.inf, 0.3, 0.2], labels=[0, 0, 1, 1])
