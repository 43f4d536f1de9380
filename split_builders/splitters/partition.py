"""Shared machinery of the splitters: size checks and label-balanced evaluation sets.

Godbole & Jia's generators (likelihood, length and random splits) all build evaluation sets the
same way, and resplit reproduces their random draws exactly:

* classes are taken in order of first appearance in the sorted order of the rows;
* class ``ci`` of ``C`` gets ``test // C`` test and ``dev // C`` dev rows, class 0 also the
  remainders;
* a method-specific rule picks the class's evaluation rows (for example its least likely rows);
* those rows are shuffled the way ``pandas.DataFrame.sample(frac=1, random_state=rng.bit_generator)``
  shuffles (a legacy ``RandomState`` over the generator's bit generator, so the draws interleave
  with the generator's own), and the first ``te`` go to test, the rest to dev.
"""

from __future__ import annotations

import math
import numpy as np

from split_builders.errors import InvalidParameterError


def shuffle_split(n: int, test_size: float, random_state, *, allow_empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(train, test)`` of ``n`` items exactly as scikit-learn's
    ``train_test_split(shuffle=True, test_size=test_size, random_state=random_state)`` picks them.

    scikit-learn's ``ShuffleSplit`` draws ``RandomState(random_state).permutation(n)``; the first
    ``ceil(test_size * n)`` positions are the test part and the remaining ``n - ceil(test_size * n)``
    the train part (in permutation order). Like scikit-learn, an empty part is an error, unless
    ``allow_empty`` (a group too small to divide then goes wholly to test, or to train when
    ``test_size * n`` is 0).
    """
    if not 0.0 < float(test_size) < 1.0:
        raise InvalidParameterError(f"test_size must be a fraction in (0, 1), got {test_size!r}")
    n_test = int(math.ceil(test_size * n))
    n_train = n - n_test
    if (n_train == 0 or n_test == 0) and not allow_empty:
        raise InvalidParameterError(f"cannot split {n} item(s) with test_size={test_size}: one part is empty")
    permutation = np.random.RandomState(random_state).permutation(n)
    return permutation[n_test:], permutation[:n_test]


def as_labels(labels, n_rows: int) -> np.ndarray:
    """Labels as an object array of length ``n_rows`` (all one class when None)."""
    if labels is None:
        return np.zeros(n_rows, dtype=np.int64)
    labels = np.asarray(labels, dtype=object)
    if labels.shape != (n_rows,):
        raise InvalidParameterError(f"labels has {labels.shape[0] if labels.ndim else 0} values for {n_rows} rows")
    return labels


def classes_in_order(order: np.ndarray, labels: np.ndarray) -> list:
    """Distinct labels in order of first appearance along ``order``."""
    seen, classes = set(), []
    for label in labels[order]:
        if label not in seen:
            seen.add(label)
            classes.append(label)
    return classes


def reference_shuffle(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``rows`` reordered as ``DataFrame.sample(frac=1, random_state=rng.bit_generator)`` would."""
    permutation = np.random.RandomState(rng.bit_generator).permutation(len(rows))
    return rows[permutation]


def balanced_eval_split(order, labels, *, validation_size: int, test_size: int, rng, pick_eval):
    """Label-balanced dev/test sets; everything else is train.

    Parameters
    ----------
    order : ndarray of int
        Row numbers in the method's sort order (the rows picked for evaluation come last).
    labels : ndarray
        One label per row.
    validation_size, test_size : int
        Total sizes over all classes.
    rng : numpy.random.Generator
    pick_eval : callable
        ``pick_eval(class_rows, n_eval, rng) -> (train_rows, eval_rows)``, ``class_rows`` in sort order.

    Returns
    -------
    train, dev, test : ndarray of int
    """
    classes = classes_in_order(order, labels)
    n_classes = len(classes)
    train, dev, test = [], [], []
    for ci, label in enumerate(classes):
        class_rows = order[labels[order] == label]
        n_test = test_size // n_classes + (test_size % n_classes if ci == 0 else 0)
        n_dev = validation_size // n_classes + (validation_size % n_classes if ci == 0 else 0)
        n_eval = n_test + n_dev
        if n_eval >= len(class_rows):
            raise InvalidParameterError(
                f"class {label!r} has {len(class_rows)} rows but its share of the evaluation sets is "
                f"{n_eval} (dev {n_dev} + test {n_test}), which leaves no training row; "
                "lower validation_size / test_size"
            )
        class_train, class_eval = pick_eval(class_rows, n_eval, rng)
        class_eval = reference_shuffle(class_eval, rng)
        test.append(class_eval[:n_test])
        dev.append(class_eval[n_test:])
        train.append(class_train)
    return tuple(np.sort(np.concatenate(part)).astype(np.int64) for part in (train, dev, test))


def tail(rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Split ``rows`` into (all but the last ``n``, the last ``n``)."""
    cut = len(rows) - n
    return rows[:cut], rows[cut:]
