"""Length of a text in NLTK word tokens, and equal-frequency length buckets.

``nltk.word_tokenize`` needs the punkt data files to split sentences first, and those cannot be
downloaded everywhere. ``NLTKWordTokenizer`` is the word tokenizer ``word_tokenize`` applies to
each sentence, needs no data, and gives the same tokens on a one-sentence text (hypotheses and
questions are one sentence).
"""

from __future__ import annotations

import numpy as np
from nltk.tokenize import NLTKWordTokenizer

from split_builders.errors import InvalidParameterError

_TOKENIZER = NLTKWordTokenizer()


def word_length(text: str) -> int:
    """Number of NLTK word tokens of ``text``."""
    return len(_TOKENIZER.tokenize(text))


def word_lengths(texts) -> np.ndarray:
    """Word-token lengths of many texts, as int64."""
    return np.fromiter((word_length(t) for t in texts), dtype=np.int64, count=len(texts))


def quantile_buckets(lengths, n_buckets: int) -> np.ndarray:
    """Equal-frequency bucket (0 .. n_buckets-1) of each length.

    The same bins as ``pandas.qcut(lengths, [0, 1/B, ..., 1], labels=False)``: edges are the
    linear-interpolation quantiles, bins are closed on the right, and the lowest value belongs to
    bucket 0. Like ``qcut`` it refuses repeated edges, which happen when one length covers more
    than a whole bucket's share of the rows.
    """
    if isinstance(n_buckets, bool) or not isinstance(n_buckets, (int, np.integer)) or n_buckets < 1:
        raise InvalidParameterError(f"length_buckets must be an integer >= 1, got {n_buckets!r}")
    lengths = np.asarray(lengths)
    if lengths.size == 0:
        raise InvalidParameterError("cannot bucket an empty set of lengths")
    quantiles = [q / n_buckets for q in range(n_buckets + 1)]
    edges = np.quantile(lengths, quantiles)
    if np.unique(edges).size != edges.size:
        raise InvalidParameterError(
            f"{n_buckets} equal-frequency length buckets are impossible here: the bucket edges "
            f"{edges.tolist()} repeat (too many rows share one length); use fewer buckets"
        )
    buckets = np.searchsorted(edges, lengths, side="left") - 1
    return np.clip(buckets, 0, n_buckets - 1).astype(np.int64)
