import numpy as np
import pandas as pd
import pytest

from split_builders.errors import InvalidParameterError
from split_builders.signals.lengths import quantile_buckets, word_length, word_lengths


def test_word_length_matches_nltk_word_tokenize_on_one_sentence():
    # word_tokenize("The man isn't sleeping, he's eating.") ==
    # ['The', 'man', 'is', "n't", 'sleeping', ',', 'he', "'s", 'eating', '.']
    assert word_length("The man isn't sleeping, he's eating.") == 10
    assert word_lengths(["A dog runs.", "Two  cats"]).tolist() == [4, 2]


@pytest.mark.parametrize("seed", range(40))
def test_quantile_buckets_equal_pandas_qcut(seed):
    rng = np.random.default_rng(seed)
    n_buckets = int(rng.integers(2, 7))
    lengths = rng.integers(1, 40, size=int(rng.integers(20, 400)))
    quantiles = [q / n_buckets for q in range(n_buckets + 1)]
    try:
        expected = pd.qcut(pd.Series(lengths), quantiles, labels=False).to_numpy()
    except ValueError:
        with pytest.raises(InvalidParameterError, match="repeat"):
            quantile_buckets(lengths, n_buckets)
        return
    np.testing.assert_array_equal(quantile_buckets(lengths, n_buckets), expected)


def test_repeated_edges_are_refused_with_advice():
    with pytest.raises(InvalidParameterError, match="fewer buckets"):
        quantile_buckets([3, 3, 3, 3, 3, 9], 4)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_bucket_count_is_validated(bad):
    with pytest.raises(InvalidParameterError, match="length_buckets"):
        quantile_buckets([1, 2, 3], bad)
