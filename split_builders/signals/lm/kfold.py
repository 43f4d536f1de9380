"""Seeded k-fold partitions and the per-fold training schedule for cross-fitted scoring.

Pure numpy, no I/O: which fold each row belongs to, which training rows are held out to pick
the best checkpoint, and the exact order in which training rows are visited. Everything is a
function of (number of rows, k, seed), so a fold can be recomputed after an interruption and a
run on N processes visits the very same examples in the very same global batches as a run on 1.
"""

from __future__ import annotations

import numpy as np

from split_builders.errors import InvalidParameterError


def assign_folds(n_rows: int, *, k: int = 3, seed: int = 0) -> np.ndarray:
    """The fold (0 .. k-1) of each row.

    Rows are permuted with ``numpy.random.default_rng(seed)`` and dealt into k contiguous
    chunks of the permutation, so fold sizes differ by at most one.

    Parameters
    ----------
    n_rows : int
        Number of rows.
    k : int, default=3
        Number of folds, 2 <= k <= n_rows.
    seed : int, default=0

    Returns
    -------
    numpy.ndarray of int64, shape (n_rows,)
    """
    check_k(k, n_rows)
    permutation = np.random.default_rng(seed).permutation(n_rows)
    folds = np.empty(n_rows, dtype=np.int64)
    for fold, chunk in enumerate(np.array_split(permutation, k)):
        folds[chunk] = fold
    return folds


def check_k(k, n_rows: int) -> None:
    """Raise :class:`InvalidParameterError` unless 2 <= k <= n_rows."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 2 <= k <= n_rows:
        raise InvalidParameterError(
            f"k (number of folds) must be an integer with 2 <= k <= {n_rows} (the number of rows), got {k!r}")


def holdout(train_rows: np.ndarray, *, fraction: float, seed: int, fold: int) -> tuple[np.ndarray, np.ndarray]:
    """Split a fold's training rows into (rows to train on, rows to evaluate on).

    The evaluation rows (``round(fraction * n)``, at least 1, leaving at least 1 to train on)
    choose the best checkpoint by held-out perplexity. Seeded by (seed, fold).
    """
    if not 0 < fraction < 1:
        raise InvalidParameterError(f"eval_fraction must be strictly between 0 and 1, got {fraction!r}")
    n = len(train_rows)
    if n < 2:
        raise InvalidParameterError(
            f"fold {fold} has {n} training row(s); at least 2 are needed (one to train, one to evaluate)")
    n_eval = min(max(1, int(round(fraction * n))), n - 1)
    shuffled = np.random.default_rng([seed, fold]).permutation(train_rows)
    return np.sort(shuffled[n_eval:]), np.sort(shuffled[:n_eval])


def training_schedule(rows: np.ndarray, *, steps: int, batch_size: int, seed: int, fold: int) -> np.ndarray:
    """The rows visited by ``steps`` optimizer steps of ``batch_size`` (global) examples each.

    Epochs are consecutive seeded permutations of ``rows``; the schedule is cut at exactly
    ``steps * batch_size`` examples, so there is never a partial batch. Fed to the Trainer with
    sequential sampling, consecutive slices of ``batch_size`` are the global batches whatever the
    number of processes (each process gets an equal, contiguous share of every global batch).
    """
    needed = steps * batch_size
    stream = epochs(rows, seed=seed, fold=fold)
    return np.concatenate([next(stream) for _ in range(-(-needed // len(rows)))])[:needed]


def epochs(rows: np.ndarray, *, seed: int, fold: int):
    """The endless stream of training epochs of a fold: consecutive seeded permutations of ``rows``
    (seeded by (seed, fold)), the order every step plan reads rows in."""
    rng = np.random.default_rng([seed, fold, 1])
    while True:
        yield rng.permutation(rows)
