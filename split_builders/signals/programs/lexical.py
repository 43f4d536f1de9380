"""Lexical variants (Sun, Williams & Hupkes 2023, section 4.5): wug words for chosen items.

Each chosen lexical item is replaced, as a whole token, by the same made-up word in inputs and
targets. ``rstr`` words are random lowercase letters, ``rcvcv`` words alternate consonant and
vowel; lengths are drawn in [15, 29]; the reference seed is 555 (:data:`WUG_SEED`). The default items are the target
atoms that also occur as input words (``state``, ``river`` in GeoQuery; nouns and verbs in COGS).
"""

from __future__ import annotations

import string
from typing import Sequence

import numpy as np

from split_builders.splits import check_number
from split_builders.errors import InvalidParameterError

KINDS = ("rstr", "rcvcv")
WUG_SEED = 555  # Sun et al.'s seed of the wug words
VOWELS = "aeiou"
CONSONANTS = "".join(c for c in string.ascii_lowercase if c not in VOWELS)


def shared_items(inputs: Sequence[str], atoms: Sequence) -> list[str]:
    """Atoms that also occur as input words, sorted (the default items to replace)."""
    words = {w for text in inputs for w in text.split()}
    return sorted({a for row in atoms if row for a in row} & words)


class WugReplacer:
    """Map lexical items to wug words and apply the map consistently.

    Parameters
    ----------
    kind : {"rstr", "rcvcv"}
    min_length, max_length : int, default 15 and 29
    random_state : int, default=WUG_SEED
    """

    def __init__(self, *, kind: str = "rstr", min_length: int = 15, max_length: int = 29,
                 random_state: int = WUG_SEED):
        if kind not in KINDS:
            raise InvalidParameterError(f"kind must be one of {KINDS}, got {kind!r}")
        self.kind = kind
        self.min_length = check_number(min_length, "min_length", integer=True, minimum=1)
        self.max_length = check_number(max_length, "max_length", integer=True, minimum=self.min_length)
        self.random_state = random_state

    def fit(self, items: Sequence[str]) -> "WugReplacer":
        rng = np.random.default_rng(self.random_state)
        mapping, used = {}, set()
        for item in sorted(set(items)):
            while True:
                length = int(rng.integers(self.min_length, self.max_length + 1))
                if self.kind == "rstr":
                    word = "".join(rng.choice(list(string.ascii_lowercase), size=length))
                else:
                    start = int(rng.integers(2))
                    word = "".join(rng.choice(list(CONSONANTS if (i + start) % 2 == 0 else VOWELS)) for i in range(length))
                if word not in used:
                    break
            used.add(word)
            mapping[item] = word
        self.mapping_ = mapping
        return self

    def transform(self, texts: Sequence[str]) -> list[str]:
        return [" ".join(self.mapping_.get(token, token) for token in text.split(" ")) for text in texts]
