"""The statistics of ``resplit report`` (:mod:`split_builders.evaluation.report`): seeds derived from the table's
cell, Matthews correlation over a trailing axis (vectorised for the bootstrap), bootstrap intervals of one and of two
samples (paired or not), and a cell's point value."""

from __future__ import annotations

import hashlib
import json
import math
import warnings

import numpy as np


def _seed(seed: int, *parts) -> int:
    """A seed for one cell, from the report's seed and the cell's names: the same interval whatever else is in
    the report or the order it is computed in."""
    digest = hashlib.sha256(json.dumps([seed, *map(str, parts)]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def mcc(gold, pred, axis: int = -1):
    """Matthews correlation (Gorodkin's multi-class form, as :func:`sklearn.metrics.matthews_corrcoef`) along
    ``axis`` of integer class arrays, vectorised over the other axes (a bootstrap's resamples); 0 where it is
    undefined, as scikit-learn returns."""
    gold = np.moveaxis(np.asarray(gold), axis, -1).astype(np.int64)
    pred = np.moveaxis(np.asarray(pred), axis, -1).astype(np.int64)
    batch = gold.shape[:-1]
    gold2, pred2 = gold.reshape(-1, gold.shape[-1]), pred.reshape(-1, pred.shape[-1])
    k = int(max(gold2.max(initial=0), pred2.max(initial=0))) + 1
    offsets = (np.arange(gold2.shape[0]) * k)[:, None]
    true_counts = np.bincount((gold2 + offsets).ravel(), minlength=gold2.shape[0] * k).reshape(-1, k)
    pred_counts = np.bincount((pred2 + offsets).ravel(), minlength=gold2.shape[0] * k).reshape(-1, k)
    correct = (gold2 == pred2).sum(axis=1).astype(float)
    n = float(gold2.shape[1])
    t, p = true_counts.astype(float), pred_counts.astype(float)
    cov_tp = correct * n - (t * p).sum(axis=1)
    cov_pp = n * n - (p * p).sum(axis=1)
    cov_tt = n * n - (t * t).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = cov_tp / np.sqrt(cov_tt * cov_pp)
    value = np.where((cov_tt * cov_pp) == 0, 0.0, value)
    return value.reshape(batch) if batch else float(value[0])


def _mean(x, axis=-1):
    return np.mean(x, axis=axis)


def _interval(samples, statistic, *, paired: bool, n_resamples: int, seed: int, confidence: float):
    """``(low, high)`` of a percentile bootstrap (:func:`scipy.stats.bootstrap`); NaNs where a sample has fewer
    than two values or ``n_resamples`` is 0."""
    from scipy.stats import bootstrap

    if n_resamples <= 0 or any(len(s) < 2 for s in samples):
        return (math.nan, math.nan), None
    with warnings.catch_warnings():  # a degenerate distribution (every row right) has a point interval
        warnings.simplefilter("ignore")
        result = bootstrap(tuple(np.asarray(s) for s in samples), statistic, paired=paired, vectorized=True,
                       n_resamples=n_resamples, method="percentile", confidence_level=confidence,
                           random_state=np.random.default_rng(seed), batch=max(1, min(n_resamples, 2_000_000 //
                                                                                           max(len(samples[0]), 1))))
    low, high = np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)
    distribution = np.asarray(result.bootstrap_distribution)
    undefined = ~np.isfinite(distribution)
    if undefined.any():  # a statistic undefined on some resamples (a baseline without errors): left out of them
        alpha = (1 - confidence) / 2
        rows = distribution.reshape(-1, distribution.shape[-1])
        bounds = [np.percentile(row[np.isfinite(row)], [100 * alpha, 100 * (1 - alpha)]) if np.isfinite(row).any()
                  else (math.nan, math.nan) for row in rows]
        low = np.asarray([b[0] for b in bounds]).reshape(low.shape)
        high = np.asarray([b[1] for b in bounds]).reshape(high.shape)
    if low.ndim == 0:
        return (float(low), float(high)), distribution
    return (low.astype(float), high.astype(float)), distribution


def _statistic(metric: str):
    """The statistic of one sample of outcomes: ``(arrays, statistic)`` where arrays are what is resampled."""
    if metric == "mcc":
        return lambda gold, pred, axis=-1: mcc(gold, pred, axis=axis)
    return _mean


def _arrays(cell, metric: str) -> tuple:
    if metric == "mcc":
        return (cell["gold"].to_numpy(dtype=np.int64), cell["pred"].to_numpy(dtype=np.int64))
    return (cell["value"].to_numpy(dtype=float),)


def _point(arrays: tuple, metric: str) -> float:
    return float(mcc(*arrays)) if metric == "mcc" else float(np.mean(arrays[0])) if len(arrays[0]) else math.nan



def _two_sample(samples, statistic, metric, paired, n_resamples, seed, confidence):
    """A bootstrap of a statistic of two samples: paired (the same rows in the same order), or each resampled on
    its own (``scipy.stats.bootstrap(paired=False)``); an MCC sample is its (gold, pred) pair, resampled together."""
    if not paired and metric == "mcc":
        # pairs of columns must move together: resample row indices of each sample
        n_a, n_b = len(samples[0]), len(samples[2])

        def by_index(i, j, axis=-1):
            i, j = i.astype(np.int64), j.astype(np.int64)
            return statistic(samples[0][i], samples[1][i], samples[2][j], samples[3][j], axis=axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            return _interval((np.arange(n_a), np.arange(n_b)), by_index, paired=False, n_resamples=n_resamples,
                             seed=seed, confidence=confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _interval(samples, statistic, paired=paired, n_resamples=n_resamples, seed=seed, confidence=confidence)
