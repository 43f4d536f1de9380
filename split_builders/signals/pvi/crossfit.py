"""Pointwise V-information (Ethayarajh, Choi & Swayamdipta, ICML 2022): the signal of difficulty splits.

For an input ``x`` with gold label ``y``, a model ``g`` trained on (x, y) and a null model ``g'``
trained on (null input, y)::

    H_yb = -log2 p_g'(y | null)      H_yx = -log2 p_g(y | x)      PVI(x -> y) = H_yb - H_yx   (bits)

and ``I_V(X -> Y)`` is the mean PVI over the evaluated rows. High PVI means easy, negative PVI hard
(or mislabelled).

The null model. By default it is the label prior of the training rows: a model whose input carries
no information minimises its cross-entropy by predicting the label frequencies, so the prior is the
exact optimum of training on the null input (a trained null model only approximates it; the
reference CSVs show that its ``H_yb`` is constant per label and equal to ``-log2`` of the label
frequency). ``null="trained"`` trains the family on null inputs instead, as the reference code does.

Cross-fitting. The rows are divided into ``folds`` label-stratified folds; the models that score
fold ``i`` are trained on the other folds, so no example's PVI comes from a model that saw it. Each
fold's result is saved as it completes (a checksummed cache entry of plain arrays, no pickles, under
:func:`pvi_cache_dir`) and a rerun with the same inputs resumes from the saved folds.
:func:`check_fold_labels` is the check that the labels can be cross-fitted (methods call it before
any scoring).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_builders.splits import check_number, check_random_state
from split_builders.cache import cache_root, load_arrays, save_arrays
from split_builders.errors import InvalidParameterError

NULL_MODES = ("prior", "trained")


def bits(probabilities) -> np.ndarray:
    """``-log2 p``: the information content (in bits) of probabilities ``p`` in (0, 1]."""
    p = np.asarray(probabilities, dtype=np.float64)
    if np.any(p <= 0) or np.any(p > 1):
        raise InvalidParameterError("probabilities must lie in (0, 1]")
    return -np.log2(p)


def pvi(h_yb, h_yx) -> np.ndarray:
    """PVI in bits from the two conditional entropies: ``H_yb - H_yx`` (elementwise)."""
    h_yb, h_yx = np.asarray(h_yb, dtype=np.float64), np.asarray(h_yx, dtype=np.float64)
    if h_yb.shape != h_yx.shape:
        raise InvalidParameterError(f"H_yb has shape {h_yb.shape} but H_yx has {h_yx.shape}")
    return h_yb - h_yx


def v_information(values) -> float:
    """``I_V``: the mean PVI of the evaluated rows (bits)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise InvalidParameterError("I_V needs at least one PVI value")
    return float(values.mean())


def prior_entropy(train_labels, labels, n_classes: int) -> np.ndarray:
    """``H_yb`` under the label-prior null model: ``-log2`` of each label's frequency in ``train_labels``.

    A label that never occurs in training has probability 0 and infinite ``H_yb``; callers stratify
    folds so that cannot happen when every class has at least ``folds`` rows.
    """
    counts = np.bincount(np.asarray(train_labels, dtype=np.int64), minlength=n_classes).astype(np.float64)
    with np.errstate(divide="ignore"):
        return -np.log2(counts / counts.sum())[np.asarray(labels, dtype=np.int64)]


def pvi_cache_dir(cache_dir=None) -> Path:
    """Where per-fold PVI checkpoints go: ``cache_dir``, else ``<resplit cache>/pvi``."""
    return Path(cache_dir) if cache_dir else cache_root() / "pvi"


def check_fold_labels(labels, folds: int, *, where: str | None = None) -> None:
    """Refuse labels that cannot be cross-fitted over ``folds`` folds: there must be two distinct
    labels and ``folds`` rows of each. ``where`` (a source or phenomenon) starts the message."""
    counts = np.bincount(np.asarray(labels, dtype=np.int64))
    present = counts[counts > 0]
    prefix = f"{where}: " if where else ""
    if present.size < 2:
        raise InvalidParameterError(f"{prefix}PVI needs at least two distinct labels, found {present.size}")
    if present.min() < folds:
        raise InvalidParameterError(f"{prefix}every label needs at least {folds} rows for {folds}-fold "
                                    f"cross-fitting; the rarest has {present.min()} (lower --folds)")


def group_folds(groups, folds: int, random_state) -> np.ndarray:
    """Fold number of every row such that rows of one group share a fold.

    Groups are taken in a seeded random order and each goes to the fold with the fewest rows so far,
    which keeps folds near equal in size (and, with many groups, near equal in label mix).
    """
    group_ids = _sorted_group_ids(groups)
    sizes = np.bincount(group_ids)
    order = np.random.RandomState(random_state).permutation(sizes.size)
    fold_of_group = np.empty(sizes.size, dtype=np.int64)
    load = np.zeros(folds, dtype=np.int64)
    for group in order:
        fold = int(np.argmin(load))
        fold_of_group[group] = fold
        load[fold] += sizes[group]
    return fold_of_group[group_ids]


def _sorted_group_ids(groups) -> np.ndarray:
    """Each row's group as its rank among the distinct groups in sorted order: what
    ``np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)[1]`` gives, without
    sorting every row's text (long premises made that the slowest step of cross-fitting). Text groups
    go through Arrow (UTF-8 byte order is code point order, numpy's; trailing NULs dropped as numpy's
    fixed-width strings drop them); anything else through numpy."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        text = pa.array(groups, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeError, TypeError):
        text = None
    if text is None or text.null_count:
        return np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)[1]
    encoded = pc.utf8_rtrim(text, characters="\x00").dictionary_encode()
    rank = np.empty(len(encoded.dictionary), dtype=np.int64)
    rank[pc.array_sort_indices(encoded.dictionary).to_numpy()] = np.arange(rank.size)
    return rank[encoded.indices.to_numpy(zero_copy_only=False)]


def stratified_folds(labels, folds: int, random_state) -> np.ndarray:
    """Fold number of every row: each label's rows shuffled (seeded) and dealt round-robin."""
    labels = np.asarray(labels, dtype=np.int64)
    rng = np.random.RandomState(random_state)
    fold_of_row = np.empty(labels.size, dtype=np.int64)
    offset = 0
    for label in np.unique(labels):
        rows = np.flatnonzero(labels == label)
        rows = rows[rng.permutation(rows.size)]
        # Continue the deal where the previous label stopped, so fold sizes differ by at most one.
        fold_of_row[rows] = (np.arange(rows.size) + offset) % folds
        offset += rows.size
    return fold_of_row


@dataclass
class PVIResult:
    """Per-example PVI and its parts (arrays aligned with the input rows)."""

    pvi: np.ndarray
    h_yx: np.ndarray
    h_yb: np.ndarray
    fold: np.ndarray
    correct: np.ndarray

    @property
    def v_information(self) -> float:
        return v_information(self.pvi)


def _fingerprint(records, labels, family, params) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps({"family": family.fingerprint(), **params}, sort_keys=True).encode())
    for record, label in zip(records, labels):
        digest.update(json.dumps([list(record), int(label)], ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def _take(records, rows):
    """The records at ``rows``: a family's prepared records select themselves (``take``)."""
    if hasattr(records, "take"):
        return records.take(rows)
    return [records[i] for i in rows]


class CrossFitPVI:
    """Cross-fitted PVI: every row scored by models trained on the other folds.

    Parameters
    ----------
    family : predictive family
        An object with ``fit(records, labels, n_classes)`` returning a fitted model that has
        ``predict_log_proba(records)`` (natural log, shape ``(n, n_classes)``) and a
        ``fingerprint()`` dict; see :mod:`split_builders.signals.pvi.families`.
    folds : int, default 5
        Number of folds (>= 2).
    null : {"prior", "trained"}, default "prior"
        The null model: the training folds' label prior (the exact optimum of training on the null
        input), or the family trained on null inputs (every field empty).
    random_state : int, default 42
        Seed of the fold assignment (the family has its own seed).
    cache_dir : path, optional
        Where each fold's scores are saved as it completes; a rerun resumes from them.
    """

    def __init__(self, family, *, folds: int = 5, null: str = "prior", random_state: int = 42,
                 cache_dir=None):
        if not (hasattr(family, "fit") and hasattr(family, "fingerprint")):
            raise InvalidParameterError(f"family must have fit() and fingerprint(), got {type(family).__name__}")
        if null not in NULL_MODES:
            raise InvalidParameterError(f"null must be one of {', '.join(NULL_MODES)}, got {null!r}")
        self.family = family
        self.folds = check_number(folds, "folds", integer=True, minimum=2)
        self.null = null
        self.random_state = check_random_state(random_state)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None

    def compute(self, records, labels, n_classes: int, *, groups=None, progress=None) -> PVIResult:
        """PVI of every row.

        Parameters
        ----------
        records : list of tuple of str
            The input fields of each row (for NLI ``(premise, hypothesis)``).
        labels : array of int
            Label ids in ``0 .. n_classes - 1``.
        groups : sequence, optional
            Rows with the same group value share a fold. For NLI pass the premise: datasets that
            pair one premise with one hypothesis per label (SNLI, most of CURRICULUM) otherwise let
            the model learn, from a premise's other rows, the labels the held-out row does *not*
            have, and the held-out PVI drops below chance.
        progress : callable, optional
            Called as ``progress(done, folds)`` after each fold.
        """
        records = [tuple("" if f is None else str(f) for f in r) for r in records]
        labels = np.asarray(labels, dtype=np.int64)
        if len(records) != labels.size:
            raise InvalidParameterError(f"{len(records)} records but {labels.size} labels")
        if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
            raise InvalidParameterError(f"label ids must lie in 0..{n_classes - 1}")
        check_fold_labels(labels, self.folds)
        if groups is not None:
            if len(groups) != labels.size:
                raise InvalidParameterError(f"{len(groups)} groups but {labels.size} labels")
            fold_of_row = group_folds(groups, self.folds, self.random_state)
            n_labels = np.unique(labels).size
            n_groups = len(set(groups))
            for fold in range(self.folds):
                if np.unique(labels[fold_of_row != fold]).size < n_labels:
                    if n_groups < self.folds:  # the cause is the groups, not the number of folds
                        same = " (every row has the same text)" if len(set(records)) == 1 else ""
                        raise InvalidParameterError(
                            f"the rows form {n_groups} group(s) of equal group-field values{same}, fewer than the "
                            f"{self.folds} folds: rows of a group share a fold, so a fold's training rows lack a "
                            "label; give rows with different texts, or --group-field none")
                    raise InvalidParameterError(f"fold {fold}: its training folds lack a label; use fewer folds")
        else:
            fold_of_row = stratified_folds(labels, self.folds, self.random_state)
        h_yx = np.empty(labels.size)
        h_yb = np.empty(labels.size)
        correct = np.empty(labels.size, dtype=bool)
        # The key's names are those of saved caches ("n_folds": the count, "folds": the assignment's hash).
        key = _fingerprint(records, labels, self.family,
                           {"n_folds": self.folds, "null": self.null, "seed": self.random_state,
                            "folds": hashlib.sha256(fold_of_row.tobytes()).hexdigest()})
        null_width = len(records[0]) if records else 1
        encode = getattr(self.family, "encode", None)
        prepared = None  # the records as the family reads them, prepared at the first fold to compute
        for fold in range(self.folds):
            test = np.flatnonzero(fold_of_row == fold)
            cached = self.cache_dir / key / f"fold{fold}.entry" if self.cache_dir else None
            saved = load_arrays(cached) if cached is not None else None  # None: absent or damaged
            if saved is not None and saved["h_yx"].shape == (test.size,):
                h_yx[test], h_yb[test], correct[test] = saved["h_yx"], saved["h_yb"], saved["correct"]
            else:
                train = np.flatnonzero(fold_of_row != fold)
                if prepared is None:
                    prepared = encode(records) if encode is not None else records
                model = self.family.fit(_take(prepared, train), labels[train], n_classes)
                log_proba = np.asarray(model.predict_log_proba(_take(prepared, test)), dtype=np.float64)
                # natural log -> bits
                h_yx[test] = -log_proba[np.arange(test.size), labels[test]] / np.log(2)
                correct[test] = log_proba.argmax(axis=1) == labels[test]
                if self.null == "prior":
                    h_yb[test] = prior_entropy(labels[train], labels[test], n_classes)
                else:
                    null_records = [("",) * null_width] * train.size
                    null_model = self.family.fit(null_records, labels[train], n_classes)
                    null_lp = np.asarray(null_model.predict_log_proba([("",) * null_width]), dtype=np.float64)[0]
                    h_yb[test] = -null_lp[labels[test]] / np.log(2)
                if cached is not None:
                    save_arrays(cached, h_yx=h_yx[test], h_yb=h_yb[test], correct=correct[test])
            if progress is not None:
                progress(fold + 1, self.folds)
        return PVIResult(pvi=pvi(h_yb, h_yx), h_yx=h_yx, h_yb=h_yb, fold=fold_of_row, correct=correct)
