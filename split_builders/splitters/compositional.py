"""Length, template and standard (random) splits of semantic-parsing / compositional datasets.

All three follow Shaw et al.'s (2021) released generators, so published splits reproduce:

* :class:`LongestToTestSplitter`: a stable sort by word count (``len(text.split(" "))``) of the
  input or the target; the shortest ``train_size`` rows train, the rest test.
* :class:`TemplateSplitter`: rows grouped by program template (the target with literals
  anonymised; FunQL targets already are), templates in order of first appearance shuffled with
  Python's ``random.Random(seed)``; whole templates go to train until the next one would exceed
  ``train_size``, everything after goes to test. No template is in both.
* :class:`StandardSplitter`: a seeded random split of the given size (numpy ``default_rng``).

Each ``split(...)`` returns a :class:`~split_builders.api.Split` whose validation is empty (the
method may move rows of test to validation afterwards).
"""

from __future__ import annotations

import random
import re
from typing import Sequence

import numpy as np

from split_builders.api import BaseSplitter, Split, check_random_state, check_size
from split_builders.errors import InvalidParameterError
from split_builders.splitters.tmcd import check_train_size

_SQL_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(\.\d+)?\b")


def program_template(target: str, target_language: str) -> str:
    """The template of a program: literals (SQL strings and numbers) replaced by ``value``."""
    if target_language == "sql":
        return _SQL_LITERAL.sub("value", target)
    return target  # FunQL (entities are m0, m1), SCAN and COGS programs are their own template


class LongestToTestSplitter(BaseSplitter):
    """The ``length`` split: longest inputs (or targets) to test.

    As Shaw et al.'s generator: a stable sort by ``len(text.split(" "))`` (ties keep file order,
    as Python's ``sorted``); the shortest ``train_size`` rows train, the rest test.

    Parameters
    ----------
    train_size : int or float
        Train rows (a count in (0, rows) or a fraction in (0, 1), see
        :func:`~split_builders.splitters.tmcd.check_train_size`).
    by : {"input", "target"}, default="input"
        The text whose length counts ("input" reproduces the published length_1 splits).
    """

    def __init__(self, *, train_size, by: str = "input"):
        if by not in ("input", "target"):
            raise InvalidParameterError(f"by must be 'input' or 'target', got {by!r}")
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.by = by

    def split(self, inputs: Sequence[str], targets: Sequence[str]) -> Split:
        """A :class:`~split_builders.api.Split` with train and test (validation empty)."""
        texts = inputs if self.by == "input" else targets
        n = check_train_size(self.train_size, len(texts))
        lengths = np.asarray([len(t.split(" ")) for t in texts])
        order = np.argsort(lengths, kind="stable")  # ties keep file order, as Python's sorted()
        return Split.of(order[:n], (), order[n:])


class TemplateSplitter(BaseSplitter):
    """The ``template`` split: program templates as groups, none in both train and test.

    As Shaw et al.'s generator: templates in order of first appearance, shuffled with Python's
    ``random.Random(random_state)``; whole templates go to train until the next one would exceed
    ``train_size``, and everything after that goes to test (even templates that would still fit).

    Parameters
    ----------
    train_size : int or float
        Upper bound on train rows (whole templates only, so train may be smaller).
    target_language : str, default="funql"
        How a program becomes its template (:func:`program_template`).
    random_state : int or None, default=1
        Seed of the template shuffle (None: fresh randomness).
    """

    def __init__(self, *, train_size, target_language: str = "funql", random_state: int | None = 1):
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.target_language = target_language
        self.random_state = check_random_state(random_state)

    def split(self, targets: Sequence[str]) -> Split:
        """A :class:`~split_builders.api.Split` with train and test (validation empty)."""
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
        return Split.of(train, (), test)


class StandardSplitter(BaseSplitter):
    """The ``standard`` split: ``train_size`` random rows train, the rest test.

    Parameters
    ----------
    train_size : int or float
        Train rows (a count in (0, rows) or a fraction in (0, 1)).
    random_state : int or None, default=1
        Seed of the permutation (numpy ``default_rng``; None: fresh randomness).
    """

    def __init__(self, *, train_size, random_state: int | None = 1):
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.random_state = check_random_state(random_state)

    def split(self, n_rows: int) -> Split:
        """A :class:`~split_builders.api.Split` of ``range(n_rows)`` with train and test."""
        n = check_train_size(self.train_size, n_rows)
        order = np.random.default_rng(self.random_state).permutation(n_rows)
        return Split.of(order[:n], (), order[n:])
