"""Length, template and standard (random) splits of semantic-parsing / compositional datasets.

All three follow Shaw et al.'s (2021) released generators, so published splits reproduce:

* :class:`LongestToTestSplitter`: a stable sort by word count (``len(text.split(" "))``) of the
  input or the target; the shortest ``train_size`` rows train, the rest test.
* :class:`TemplateSplitter`: rows grouped by program template (the target with literals
  anonymised; FunQL targets already are), templates in order of first appearance shuffled with
  Python's ``random.Random(seed)``; whole templates go to train until the next one would exceed
  ``train_size``, everything after goes to test. No template is in both.
* :class:`StandardSplitter`: a seeded random split of the given size (numpy ``default_rng``).
"""

from __future__ import annotations

import random
import re
from typing import Sequence

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.splitters.partition import check_random_state
from split_builders.splitters.tmcd import check_train_size

_SQL_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(\.\d+)?\b")


def program_template(target: str, target_language: str) -> str:
    """The template of a program: literals (SQL strings and numbers) replaced by ``value``."""
    if target_language == "sql":
        return _SQL_LITERAL.sub("value", target)
    return target  # FunQL (entities are m0, m1), SCAN and COGS programs are their own template


class LongestToTestSplitter:
    """The ``length`` split: longest inputs (or targets) to test.

    Parameters
    ----------
    train_size : int or float
    by : {"input", "target"}, default="input" (reproduces the published length_1 splits)
    """

    def __init__(self, *, train_size, by: str = "input"):
        if by not in ("input", "target"):
            raise InvalidParameterError(f"by must be 'input' or 'target', got {by!r}")
        self.train_size, self.by = train_size, by

    def get_params(self) -> dict:
        return {"train_size": self.train_size, "by": self.by}

    def split(self, inputs: Sequence[str], targets: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        texts = inputs if self.by == "input" else targets
        n = check_train_size(self.train_size, len(texts))
        lengths = np.asarray([len(t.split(" ")) for t in texts])
        order = np.argsort(lengths, kind="stable")  # ties keep file order, as Python's sorted()
        return np.sort(order[:n]), np.sort(order[n:])


class TemplateSplitter:
    """The ``template`` split: program templates as groups, none in both train and test.

    Parameters
    ----------
    train_size : int or float
        Upper bound on train rows (whole templates only, so train may be smaller).
    target_language : str, default="funql"
    random_state : int, default=1
    """

    def __init__(self, *, train_size, target_language: str = "funql", random_state: int = 1):
        self.train_size, self.target_language = train_size, target_language
        self.random_state = check_random_state(random_state)

    def get_params(self) -> dict:
        return {"train_size": self.train_size, "target_language": self.target_language,
                "random_state": self.random_state}

    def split(self, targets: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        n = check_train_size(self.train_size, len(targets))
        groups: dict = {}
        for row, target in enumerate(targets):
            groups.setdefault(program_template(target, self.target_language), []).append(row)
        templates = list(groups)
        random.Random(self.random_state).shuffle(templates)
        train, test, filling = [], [], True
        for template in templates:
            if filling and len(train) + len(groups[template]) > n:
                filling = False  # from here on everything is test, as in the reference
            (train if filling else test).extend(groups[template])
        if not train or not test:
            raise InvalidParameterError(f"train_size {n} leaves {'train' if not train else 'test'} empty: "
                                        f"the first template alone has {len(groups[templates[0]])} rows")
        return np.sort(np.asarray(train)), np.sort(np.asarray(test))


class StandardSplitter:
    """The ``standard`` split: ``train_size`` random rows train, the rest test."""

    def __init__(self, *, train_size, random_state: int = 1):
        self.train_size, self.random_state = train_size, check_random_state(random_state)

    def get_params(self) -> dict:
        return {"train_size": self.train_size, "random_state": self.random_state}

    def split(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        n = check_train_size(self.train_size, n_rows)
        order = np.random.default_rng(self.random_state).permutation(n_rows)
        return np.sort(order[:n]), np.sort(order[n:])
