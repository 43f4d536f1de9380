"""Per-row text statistics for the diagnostics: word tokens, rare words, syllables, sentences, the
Flesch-Kincaid grade, and the row x vocabulary matrix of word counts (for unseen-word rates).

Whole columns: the texts are lower-cased and split into words by Arrow kernels; the vocabulary is
the dictionary of the flattened words, so every word type is looked up once.

* a **word** is a maximal run of letters, digits and inner apostrophes (``man's``, ``2014``), lower case;
* a **rare word** is a word with a letter whose Zipf frequency in ``wordfreq``'s bundled English list
  is below ``RARE_ZIPF`` = 3, i.e. fewer than one occurrence per million words (the Likelihood Splits
  paper used SUBTLEXus at <= 1 per million); a word absent from the list has Zipf 0 and is rare;
* **syllables** of a word: its ``pyphen`` (``en_US`` hyphenation dictionary, shipped with the package)
  hyphenation points plus one;
* **sentences** of a text: its runs of ``.``, ``!`` or ``?``, at least one where it has words;
* **Flesch-Kincaid grade** of a text: ``0.39 * words / sentences + 11.8 * syllables / words - 15.59``
  (NaN for a text without words).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RARE_ZIPF = 3.0
WORD_SPLIT = r"[^\p{L}\p{N}'’]+"  # words are what lies between runs of other characters
APOSTROPHES = "'’"
SENTENCE_END = r"[.!?]+"
HYPHENATION = "en_US"


@dataclass
class TextStats:
    """Per row: ``words``, ``rare`` words, ``syllables``, ``sentences`` (int64 arrays); ``counts``: a
    scipy CSR matrix of word counts (rows x ``vocabulary``)."""

    words: np.ndarray
    rare: np.ndarray
    syllables: np.ndarray
    sentences: np.ndarray
    counts: object
    vocabulary: list

    @property
    def fk_grade(self) -> np.ndarray:
        """The Flesch-Kincaid grade of every row (NaN for a row without words)."""
        words = self.words.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            grade = 0.39 * words / np.maximum(self.sentences, 1) + 11.8 * self.syllables / words - 15.59
        return np.where(self.words > 0, grade, np.nan)


def words_of(column):
    """``(owner, words)``: the lower-cased words of every text of ``column`` (a pyarrow string array;
    nulls have none), flattened, with the row each comes from."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    column = column.cast(pa.large_string()).fill_null("")
    lists = pc.split_pattern_regex(pc.utf8_lower(column), pattern=WORD_SPLIT)
    flat = pc.utf8_trim(pc.list_flatten(lists), characters=APOSTROPHES)
    owner = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
    keep = pc.not_equal(flat, "")
    return owner[np.asarray(keep, dtype=bool)], pc.filter(flat, keep)


def rare_words(vocabulary: list, language: str = "en") -> np.ndarray:
    """Whether each word type is rare: it has a letter and its ``wordfreq`` Zipf frequency is below
    ``RARE_ZIPF``."""
    from wordfreq import zipf_frequency

    return np.fromiter((any(c.isalpha() for c in w) and zipf_frequency(w, language) < RARE_ZIPF for w in vocabulary),
                       dtype=bool, count=len(vocabulary))


def syllables(vocabulary: list) -> np.ndarray:
    """Syllables of each word type: ``pyphen`` hyphenation points plus one."""
    import pyphen

    dictionary = pyphen.Pyphen(lang=HYPHENATION)
    return np.fromiter((len(dictionary.positions(w)) + 1 for w in vocabulary), dtype=np.int64, count=len(vocabulary))


def text_stats(column, *, language: str = "en") -> TextStats:
    """The statistics of every text of ``column`` (a pyarrow string array or chunked array)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from scipy import sparse

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(column)
    owner, flat = words_of(column)
    encoded = pc.dictionary_encode(flat)
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    vocabulary = encoded.dictionary.to_pylist()
    counts = sparse.csr_matrix((np.ones(codes.size, dtype=np.float32), (owner, codes)), shape=(n, len(vocabulary)))
    counts.sum_duplicates()
    words = np.bincount(owner, minlength=n).astype(np.int64)
    rare = np.bincount(owner, weights=rare_words(vocabulary, language)[codes], minlength=n).astype(np.int64)
    syllable_counts = np.bincount(owner, weights=syllables(vocabulary)[codes], minlength=n).astype(np.int64)
    ends = pc.count_substring_regex(column.cast(pa.large_string()).fill_null(""), pattern=SENTENCE_END)
    sentences = np.where(words > 0, np.maximum(np.asarray(ends, dtype=np.int64), 1), 0)
    return TextStats(words, rare, syllable_counts, sentences, counts, vocabulary)
