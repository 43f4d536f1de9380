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


# ---------------------------------------------------------------------------------------------
# Score intervals of proportions: right at 0 and n, where a percentile bootstrap has a point
# ---------------------------------------------------------------------------------------------
# benchmarks/interval_coverage.py chose them (docs/evaluation.md, "Intervals"): a percentile bootstrap of k of n
# right is [0, 0] at k = 0 and [1, 1] at k = n, and covers p = 0.02 with n = 20 in a third of samples; Wilson's score
# interval holds near 95% at every n and p, Newcombe's hybrid score interval (built from two Wilson intervals) holds
# for a gap, and MOVER-R (Donner & Zou 2012, the same construction for a ratio) for a relative error increase.


def is_binary(values) -> bool:
    """Whether a sample of outcomes is 0/1 (a count of successes: a score interval applies)."""
    values = np.asarray(values, dtype=float)
    return bool(len(values)) and bool(np.isin(values, (0.0, 1.0)).all())


def wilson(successes: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson's score interval of ``successes`` of ``n`` (:meth:`scipy.stats.binomtest(...).proportion_ci
    <scipy.stats._result_classes.BinomTestResult.proportion_ci>`, ``method="wilson"``): [0, 0.088] for 0 of 40, not
    a point; NaNs where ``n`` is 0."""
    from scipy.stats import binomtest

    if n <= 0:
        return math.nan, math.nan
    interval = binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(max(0.0, interval.low)), float(min(1.0, interval.high))


def newcombe(k1: int, n1: int, k2: int, n2: int, confidence: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``k1/n1 - k2/n2`` for independent samples (Newcombe 1998, Stat Med 17:873,
    method 10): the difference less and plus the square roots of the two Wilson intervals' half-widths on the sides
    that move it; within [-1, 1]."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1, confidence)
    l2, u2 = wilson(k2, n2, confidence)
    d = p1 - p2
    return (max(-1.0, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)),
            min(1.0, d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)))


def newcombe_paired(x, y, confidence: float) -> tuple[float, float]:
    """Newcombe's square-and-add interval of ``mean(x) - mean(y)`` for 0/1 outcomes of the same rows (Newcombe 1998,
    Stat Med 17:2635, method 10): the Wilson intervals of both margins, joined with the 2x2 table's correlation
    ``phi``, its numerator ``ad - bc`` less ``n/2`` where it exceeds that, 0 where it lies in [0, n/2]."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    a, b = float(np.sum((x == 1) & (y == 1))), float(np.sum((x == 1) & (y == 0)))
    c, d = float(np.sum((x == 0) & (y == 1))), float(np.sum((x == 0) & (y == 0)))
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(int(a + b), n, confidence)
    l2, u2 = wilson(int(a + c), n, confidence)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    cross = cross - n / 2 if cross > n / 2 else min(cross, 0.0)
    phi = cross / math.sqrt(margins) if margins > 0 else 0.0
    diff = p1 - p2
    lower = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    upper = (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2
    return max(-1.0, diff - math.sqrt(max(lower, 0.0))), min(1.0, diff + math.sqrt(max(upper, 0.0)))


def mover_ratio(k1: int, n1: int, k2: int, n2: int, confidence: float) -> tuple[float, float]:
    """MOVER-R interval of the ratio ``(k1/n1) / (k2/n2)`` of independent proportions from their Wilson intervals
    (Donner & Zou 2012, Stat Methods Med Res 21:347); NaNs where ``k2`` is 0 (no ratio), an infinite upper end
    where the divisor's interval reaches 0."""
    if k2 <= 0:
        return math.nan, math.nan
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1, confidence)
    l2, u2 = wilson(k2, n2, confidence)
    product = p1 * p2
    low = (product - math.sqrt(max(product ** 2 - l1 * u2 * (2 * p1 - l1) * (2 * p2 - u2), 0.0))) / (u2 * (2 * p2 - u2))
    below = l2 * (2 * p2 - l2)
    high = (product + math.sqrt(max(product ** 2 - u1 * l2 * (2 * p1 - u1) * (2 * p2 - l2), 0.0))) / below \
        if below > 0 else math.inf
    return max(0.0, low), high


def relative_error_increase_interval(x, y, confidence: float) -> tuple[float, float]:
    """The interval of ``(error_x - error_y) / error_y`` for 0/1 outcomes ``x`` (a config) and ``y`` (its baseline)
    on different rows: MOVER-R's interval of the ratio of error rates, less 1; NaNs where the baseline has no
    error."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    low, high = mover_ratio(int(len(x) - x.sum()), len(x), int(len(y) - y.sum()), len(y), confidence)
    return low - 1.0, high - 1.0


def is_degenerate(distribution) -> bool:
    """Whether a bootstrap distribution is one value (every resample alike: its interval is a point that says
    nothing of certainty)."""
    if distribution is None:
        return False
    values = np.asarray(distribution, dtype=float)
    values = values[np.isfinite(values)]
    return bool(values.size) and bool(np.all(values == values.flat[0]))


def degenerate_note(distribution, what: str, notes: list) -> None:
    """A note where every bootstrap resample gave the same value: the interval is a point, not certainty."""
    if is_degenerate(distribution):
        value = float(np.asarray(distribution, dtype=float)[np.isfinite(distribution)].flat[0])
        note = (f"{what} is {value:.4f} on every bootstrap resample, so its interval is the point [{value:.4f}, "
                f"{value:.4f}]: the resamples cannot show its uncertainty (too few rows, or every row alike)")
        if note not in notes:
            notes.append(note)


def bootstrap_p(distribution) -> tuple[float, bool]:
    """``(p, bound)``: a paired bootstrap's two-sided p-value, twice the share of resamples on the far side of 0;
    where none is, the test cannot show less than its step ``2 / B`` (B resamples): that is given with ``bound``
    true (``p < 2/B``), never 0."""
    if distribution is None:
        return math.nan, False
    share = min(float(np.mean(distribution <= 0)), float(np.mean(distribution >= 0)))
    if share == 0:
        return min(1.0, 2 / distribution.size), True
    return min(1.0, 2 * share), False


def fmt_p(value, bound: bool) -> str:
    """A p-value as printed: ``<0.0002`` where no bootstrap resample reached the other side of 0 (the test's step),
    ``3.1e-07`` below 0.0001 (an exact test's small p), never ``0.0000``."""
    if value is None or math.isnan(value):
        return "-"
    if bound and value < 1:
        return f"<{value:.2g}"
    if value == 0:
        return "<1e-300"  # below what a float holds
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


# ---------------------------------------------------------------------------------------------
# Concurrence: the test rows resampled within each config (and the models, where there are many)
# ---------------------------------------------------------------------------------------------

MODEL_RESAMPLING = 10
"""From this many models on, a concurrence resample draws the models too (with fewer, a draw of models repeats a few
of them and its tau is mostly 1 or -1: an interval of [1, 1] or [-1, 1] that says nothing of the test sets)."""


def resampled_scores(cells: list, metric: str, n_resamples: int, seed: int) -> np.ndarray:
    """Each model's score on each of its test sets recomputed on ``n_resamples`` resamples of the rows:
    ``cells[b][m]`` is ``(source_ids, arrays)`` of model ``m`` on benchmark ``b`` (``arrays`` as :func:`_arrays`
    gives them); -> (resamples x benchmarks x models). Models evaluated on the same rows of a benchmark share each
    draw (the test set is what is redrawn); a model on other rows is drawn on its own."""
    statistic = _statistic(metric)
    out = np.empty((n_resamples, len(cells), len(cells[0]) if cells else 0))
    for b, models in enumerate(cells):
        rng = np.random.default_rng([seed, b])  # the caller gives one benchmark at a time, its own seed
        shared = all(np.array_equal(ids, models[0][0]) for ids, _ in models)
        index = rng.integers(0, len(models[0][0]), (n_resamples, len(models[0][0]))) if shared else None
        for m, (ids, arrays) in enumerate(models):
            draw = index if shared else rng.integers(0, len(ids), (n_resamples, len(ids)))
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, b, m] = statistic(*(a[draw] for a in arrays), axis=-1)
    return out


def concurrence_intervals(scores: np.ndarray, kendall_resamples, percentile_interval, *, seed: int,
                          confidence: float) -> dict:
    """``{(i, j): [low, high]}`` of Kendall's tau-b between benchmarks i < j over the resamples of
    :func:`resampled_scores`, the models drawn with replacement as well where there are :data:`MODEL_RESAMPLING` or
    more (``kendall_resamples`` and ``percentile_interval``: the ``concurrence`` metric's own)."""
    n_resamples, benchmarks, models = scores.shape
    if models >= MODEL_RESAMPLING:
        picks = np.random.default_rng([seed, benchmarks]).integers(0, models, (n_resamples, models))
    else:
        picks = np.broadcast_to(np.arange(models), (n_resamples, models))
    taus = kendall_resamples(scores, picks)
    return {(i, j): percentile_interval(taus[:, i, j], confidence)
            for i in range(benchmarks) for j in range(i + 1, benchmarks)}
