"""PVI arithmetic against the reference outputs, and cross-fitting (no example scored by a model that saw it)."""

import math

import numpy as np
import pandas as pd
import pytest

from split_builders.errors import InvalidParameterError
from split_builders.signals.pvi.crossfit import (CrossFitPVI, bits, group_folds, prior_entropy, pvi, stratified_folds,
                                v_information)
from split_builders.signals.pvi.families import HashedNgramFamily

REFERENCE_FILES = {  # file -> mean PVI stated in reference/pvi/README.md
    "bert-base-cased_cola_id_dev_std.csv": 0.3082,
    "roberta-large_cola_id_dev_std2.csv": 0.3903,
    "bert-base-cased_multinli_validation_std.head200.csv": 0.9654,
}


@pytest.fixture(scope="module")
def reference(shared):
    return shared / "reference" / "pvi"


@pytest.mark.parametrize("name", sorted(REFERENCE_FILES))
def test_pvi_from_the_reference_columns_is_exact(reference, name):
    frame = pd.read_csv(reference / name)
    ours = pvi(frame["H_yb"].to_numpy(), frame["H_yx"].to_numpy())
    assert np.array_equal(ours, frame["PVI"].to_numpy())  # bit for bit, not approximately
    assert v_information(ours) == pytest.approx(REFERENCE_FILES[name], abs=5e-5)


def test_reference_null_entropy_is_a_label_prior(reference):
    """The reference null model predicts one distribution over labels whatever the input: a prior."""
    frame = pd.read_csv(reference / "bert-base-cased_cola_id_dev_std.csv")
    per_label = frame.groupby("label")["H_yb"].unique()
    assert all(np.ptp(v) < 1e-6 for v in per_label)  # constant per label (up to float32 noise)
    h = {label: v[0] for label, v in per_label.items()}
    assert h[1] == pytest.approx(0.4896, abs=1e-4) and h[0] == pytest.approx(1.7970, abs=1e-4)
    prior = {label: 2.0 ** -v for label, v in h.items()}
    assert sum(prior.values()) == pytest.approx(1.0, abs=1e-3)
    # our label-prior null gives exactly -log2 of the training label frequencies
    train_labels = np.repeat([0, 1], [2878, 7122])  # frequencies 0.2878 / 0.7122 as in the file
    ours = prior_entropy(train_labels, np.array([0, 1]), 2)
    assert ours == pytest.approx([h[0], h[1]], abs=1e-3)
    # and the entropy of the model's probability reproduces H_yx
    np.testing.assert_allclose(bits(2.0 ** -frame["H_yx"].to_numpy()), frame["H_yx"].to_numpy(), rtol=1e-12)


def test_bits_and_v_information_refuse_bad_input():
    with pytest.raises(InvalidParameterError, match=r"\(0, 1\]"):
        bits([0.5, 0.0])
    with pytest.raises(InvalidParameterError, match="at least one"):
        v_information([])
    with pytest.raises(InvalidParameterError, match="shape"):
        pvi([1.0, 2.0], [1.0])


class RecordingFamily:
    """Predicts the prior of what it was trained on and remembers every training record."""

    def __init__(self):
        self.seen = []

    def fingerprint(self):
        return {"family": "recording"}

    def fit(self, records, labels, n_classes):
        self.seen.append(set(records))
        counts = np.bincount(labels, minlength=n_classes) + 1.0
        log_prior = np.log(counts / counts.sum())
        outer = self

        class Fitted:
            def predict_log_proba(self, rows):
                outer.scored = getattr(outer, "scored", []) + [set(rows)]
                return np.tile(log_prior, (len(rows), 1))

        return Fitted()


def test_cross_fitting_never_scores_a_row_with_a_model_that_trained_on_it():
    records = [(f"premise {i // 3}", f"hypothesis {i}") for i in range(60)]
    labels = np.arange(60) % 3
    family = RecordingFamily()
    result = CrossFitPVI(family, folds=4).compute(records, labels, 3, groups=[r[0] for r in records])
    assert len(family.seen) == 4
    for trained, scored in zip(family.seen, family.scored):
        assert not trained & scored
        assert len(trained) + len(scored) == 60
    # rows sharing a premise share a fold
    for group in range(20):
        assert len(set(result.fold[group * 3:group * 3 + 3])) == 1


def test_stratified_folds_are_balanced_per_label():
    labels = np.repeat([0, 1, 2], [50, 31, 19])
    folds = stratified_folds(labels, 5, 0)
    for label in range(3):
        counts = np.bincount(folds[labels == label], minlength=5)
        assert counts.max() - counts.min() <= 1
    assert np.bincount(folds).max() - np.bincount(folds).min() <= 1


def test_group_folds_keep_groups_together_and_sizes_near_equal():
    groups = np.repeat(np.arange(100), 3)
    folds = group_folds(groups, 5, 7)
    assert all(len(set(folds[groups == g])) == 1 for g in range(100))
    assert np.bincount(folds).max() - np.bincount(folds).min() <= 3


def test_prior_null_is_what_a_trained_null_model_learns(snli_rows):
    records, labels = snli_rows
    # converged full-batch training (no early stopping or temperature) on the null input learns the prior
    family = HashedNgramFamily(n_buckets=2 ** 12, epochs=200, batch_size=1000, calibration_size=0.0,
                               learning_rate=0.05)
    prior = CrossFitPVI(family, folds=2).compute(records, labels, 3, groups=[r[0] for r in records])
    trained = CrossFitPVI(family, folds=2, null="trained").compute(records, labels, 3,
                                                                    groups=[r[0] for r in records])
    np.testing.assert_allclose(trained.h_yb, prior.h_yb, atol=0.05)  # bits
    assert np.array_equal(trained.h_yx, prior.h_yx)


@pytest.fixture(scope="module")
def snli_rows():
    from loading_scripts.snli import sample

    rows = sample().dataset.select(range(450))
    return list(zip(rows["premise"], rows["hypothesis"])), np.asarray(rows["label"])


def test_checkpoints_resume_per_fold(tmp_path, snli_rows):
    records, labels = snli_rows
    groups = [r[0] for r in records]
    family = HashedNgramFamily(epochs=1)
    first = CrossFitPVI(family, folds=3, cache_dir=tmp_path).compute(records, labels, 3, groups=groups)
    saved = sorted(tmp_path.rglob("fold*.entry"))
    assert [p.name for p in saved] == ["fold0.entry", "fold1.entry", "fold2.entry"]
    saved[1].unlink()  # as if the run had stopped during fold 1

    class CountingFamily(HashedNgramFamily):
        fits = 0

        def fit(self, *args, **kwargs):
            CountingFamily.fits += 1
            return super().fit(*args, **kwargs)

    counting = CountingFamily(epochs=1)
    counting.fingerprint = family.fingerprint  # same cache key
    again = CrossFitPVI(counting, folds=3, cache_dir=tmp_path).compute(records, labels, 3, groups=groups)
    assert CountingFamily.fits == 1
    assert np.array_equal(again.pvi, first.pvi)

    # a damaged fold entry is reported and that fold recomputed, never read as garbage
    saved[2].write_bytes(saved[2].read_bytes()[:-16])
    CountingFamily.fits = 0
    third = CrossFitPVI(counting, folds=3, cache_dir=tmp_path).compute(records, labels, 3, groups=groups)
    assert CountingFamily.fits == 1 and np.array_equal(third.pvi, first.pvi)


@pytest.mark.parametrize("kwargs, message", [
    ({"folds": 1}, "folds must be an integer >= 2"),
    ({"null": "zero"}, "null must be one of prior, trained"),
    ({"random_state": -1}, "random_state"),
])
def test_bad_options_are_refused_eagerly(kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        CrossFitPVI(HashedNgramFamily(), **kwargs)


def test_too_few_rows_of_a_label_for_the_folds():
    records = [("a", "b")] * 10
    with pytest.raises(InvalidParameterError, match="rarest has 2"):
        CrossFitPVI(HashedNgramFamily(), folds=5).compute(records, [0] * 8 + [1] * 2, 2)
    with pytest.raises(InvalidParameterError, match=r"label ids must lie in 0\.\.1"):
        CrossFitPVI(HashedNgramFamily(), folds=2).compute(records, [0] * 8 + [2] * 2, 2)


def test_pvi_is_in_bits():
    # one row, p(y|x) = 1/2 and prior 1/4: 2 - 1 = 1 bit
    assert pvi(bits([0.25]), bits([0.5]))[0] == pytest.approx(1.0)
    assert bits([0.5])[0] == pytest.approx(-math.log2(0.5))


def test_group_ids_sort_as_numpy_unique_does():
    from split_builders.signals.pvi.crossfit import _sorted_group_ids

    texts = ["b", "a", "", "é", "e\x00", "e", "Z", "日本", "a", "z\U0001F600", "b"]
    expected = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)[1]
    assert np.array_equal(_sorted_group_ids(texts), expected)
    mixed = [3, "3", None, 2.5, 3]  # not all text: numpy's own path
    assert np.array_equal(_sorted_group_ids(mixed),
                          np.unique(np.asarray(mixed, dtype=object).astype(str), return_inverse=True)[1])
