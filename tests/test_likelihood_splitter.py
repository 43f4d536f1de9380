"""LikelihoodSplitter and the baselines: reference conformance, invariants, validation."""

import json

import numpy as np
import pandas as pd
import pytest

from loading_scripts import load_source
from split_builders import LengthSplitter, LikelihoodSplitter, RandomSplitter
from split_builders.errors import InvalidParameterError
from split_builders.signals.lengths import word_lengths

TASKS = {"snli": (("premise", "hypothesis", "gold_label"), 200), "boolq": (("passage", "question", "label"), 150)}


def _fixture_inputs(reference, task):
    (prompt, query, label), size = TASKS[task]
    source = load_source(str(reference / "inputs" / task / "all_examples.csv"), prompt_field=prompt,
                         query_field=query, label_field=label)
    scores = np.load(reference / "inputs" / task / "all_examples__False_loglikelihoods.npy")
    return scores, source.labels(), word_lengths(source.texts(query)), size


@pytest.mark.parametrize("task,variant,buckets", [("snli", "ll_split", None), ("snli", "ll_split_len4", 4),
                                                  ("boolq", "ll_split", None)])
def test_reproduces_reference_index_files(likelihood_reference, task, variant, buckets):
    scores, labels, lengths, size = _fixture_inputs(likelihood_reference, task)
    splitter = LikelihoodSplitter(validation_size=size, test_size=size, length_buckets=buckets, random_state=42)
    train, dev, test = splitter.split(scores, labels=labels, lengths=lengths)
    folder = likelihood_reference / task / variant
    for name, got in (("train", train), ("dev", dev), ("test", test)):
        expected = json.loads((folder / f"{name}_idx.json").read_text())
        assert set(got.tolist()) == set(expected), f"{task}/{variant} {name} differs from the reference"


def _random_problem(seed, n=300, n_classes=3):
    rng = np.random.default_rng(seed)
    scores = rng.normal(-30, 8, size=n)
    labels = rng.choice([f"c{i}" for i in range(n_classes)], size=n)
    lengths = rng.integers(3, 30, size=n)
    return scores, labels, lengths


@pytest.mark.parametrize("buckets", [None, 3])
@pytest.mark.parametrize("reverse", [False, True])
def test_partition_invariants(buckets, reverse):
    scores, labels, lengths = _random_problem(1)
    train, dev, test = LikelihoodSplitter(validation_size=30, test_size=31, length_buckets=buckets, reverse=reverse,
                                          random_state=7).split(scores, labels=labels, lengths=lengths)
    everything = np.concatenate([train, dev, test])
    assert len(dev) == 30 and len(test) == 31
    assert np.array_equal(np.sort(everything), np.arange(len(scores)))  # full coverage, no overlap
    # label balance: class 0 takes the remainder, every other class floor(size / C)
    dev_counts = sorted(pd.Series(labels[dev]).value_counts().tolist())
    assert dev_counts == [10, 10, 10]
    assert sorted(pd.Series(labels[test]).value_counts().tolist()) == [10, 10, 11]


def test_without_length_control_eval_is_the_least_likely_of_each_class():
    scores, labels, _ = _random_problem(2)
    train, dev, test = LikelihoodSplitter(validation_size=15, test_size=15, random_state=0).split(scores, labels=labels)
    held_out = np.concatenate([dev, test])
    for label in np.unique(labels):
        in_class = labels == label
        worst_train = scores[np.intersect1d(train, np.flatnonzero(in_class))].min()
        best_eval = scores[np.intersect1d(held_out, np.flatnonzero(in_class))].max()
        assert best_eval <= worst_train


def test_reverse_holds_out_the_most_likely():
    scores, _, _ = _random_problem(3)
    train, dev, test = LikelihoodSplitter(validation_size=20, test_size=20, reverse=True, random_state=0).split(scores)
    assert scores[np.concatenate([dev, test])].min() >= scores[train].max()


def test_same_seed_same_split_other_seed_other_division():
    scores, labels, lengths = _random_problem(4)
    make = lambda seed: LikelihoodSplitter(validation_size=30, test_size=30, length_buckets=4,  # noqa: E731
                                           random_state=seed).split(scores, labels=labels, lengths=lengths)
    first, again, other = make(5), make(5), make(6)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[1], other[1])


def test_empty_bucket_share_does_not_send_the_bucket_to_eval():
    # The reference slices rows[-0:] when a bucket's share is 0, sending the whole bucket to eval.
    # Here one tiny bucket (2 of 200 rows, share 0.02 of 1 eval row) must keep its rows in train.
    scores = np.linspace(-1, -200, 200)
    lengths = np.array([1] * 50 + [2] * 50 + [3] * 50 + [4] * 50)
    train, dev, test = LikelihoodSplitter(validation_size=1, test_size=1, length_buckets=4,
                                          random_state=0).split(scores, lengths=lengths)
    assert len(dev) + len(test) == 2
    assert len(train) == 198


def test_train_size_mode_keeps_the_most_likely_in_train_and_halves_the_rest():
    scores, _, lengths = _random_problem(5, n=101)
    train, dev, test = LikelihoodSplitter(train_size=60, random_state=42).split(scores)
    assert len(train) == 60 and len(dev) == 20 and len(test) == 21
    assert scores[train].min() >= scores[np.concatenate([dev, test])].max()
    train, dev, test = LikelihoodSplitter(train_size=60, length_buckets=4, random_state=42).split(scores, lengths=lengths)
    assert len(train) == 60 and np.array_equal(np.sort(np.concatenate([train, dev, test])), np.arange(101))


# -- baselines against an independent pandas implementation of the paper's generators --------

def _pandas_reference(frame, sort_values, dev, test, seed):
    """The paper's random/length generators, written with pandas as they were."""
    rng = np.random.default_rng(seed)
    frame = sort_values(frame, rng)
    classes = frame["label"].unique().tolist()
    parts = {"train": [], "dev": [], "test": []}
    for ci, label in enumerate(classes):
        members = frame[frame["label"] == label]
        te, de = test // len(classes), dev // len(classes)
        if ci == 0:
            te, de = te + test % len(classes), de + dev % len(classes)
        held = members[-(te + de):].sample(frac=1, random_state=rng.bit_generator)
        parts["test"].append(held[:te])
        parts["dev"].append(held[te:])
        parts["train"].append(members[:-(te + de)])
    return {k: set(pd.concat(v).index) for k, v in parts.items()}


@pytest.mark.parametrize("seed", [0, 1, 42])
def test_random_baseline_matches_pandas_reference(seed):
    _, labels, _ = _random_problem(seed, n=250)
    frame = pd.DataFrame({"label": labels})
    expected = _pandas_reference(frame, lambda f, rng: f.sample(frac=1, random_state=rng.bit_generator), 40, 41, seed)
    train, dev, test = RandomSplitter(validation_size=40, test_size=41, random_state=seed).split(250, labels=labels)
    assert (set(train), set(dev), set(test)) == (expected["train"], expected["dev"], expected["test"])


@pytest.mark.parametrize("seed", [0, 3])
def test_length_baseline_matches_pandas_reference(seed):
    _, labels, lengths = _random_problem(seed, n=250)
    frame = pd.DataFrame({"label": labels, "length": lengths})
    expected = _pandas_reference(frame, lambda f, rng: f.sort_values("length", kind="mergesort"), 40, 40, seed)
    train, dev, test = LengthSplitter(validation_size=40, test_size=40, random_state=seed).split(lengths=lengths, labels=labels)
    assert (set(train), set(dev), set(test)) == (expected["train"], expected["dev"], expected["test"])


# -- validation ---------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    ({"validation_size": -1}, "validation_size must be >= 0"),
    ({"test_size": 1.5}, r"test_size as a fraction must be in \(0, 1\)"),
    ({"validation_size": "10"}, "validation_size must be a count"),
    ({"train_size": 0}, "train_size must be >= 1"),
    ({"length_buckets": 0}, "length_buckets"),
    ({"reverse": "yes"}, "reverse"),
    ({"random_state": -3}, "random_state"),
])
def test_parameters_are_validated_in_the_constructor(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        LikelihoodSplitter(**kwargs)


def test_sizes_impossible_for_the_data_say_which_class_is_short():
    scores = np.arange(20.0)
    labels = ["a"] * 17 + ["b"] * 3
    with pytest.raises(InvalidParameterError, match="class 'b' has 3 rows but its share"):
        LikelihoodSplitter(validation_size=4, test_size=4).split(scores, labels=labels)
    with pytest.raises(InvalidParameterError, match="must be smaller than the number of rows"):
        LikelihoodSplitter(validation_size=0.5, test_size=0.5).split(scores)


def test_bad_scores_and_missing_lengths_are_reported():
    with pytest.raises(InvalidParameterError, match="not finite"):
        LikelihoodSplitter(validation_size=1, test_size=1).split([1.0, np.nan, 2.0, 3.0])
    with pytest.raises(InvalidParameterError, match="needs the lengths"):
        LikelihoodSplitter(validation_size=1, test_size=1, length_buckets=2).split([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InvalidParameterError, match="labels has 2 values for 4 rows"):
        LikelihoodSplitter(validation_size=1, test_size=1).split([1.0, 2.0, 3.0, 4.0], labels=["a", "b"])
