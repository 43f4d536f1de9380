"""Concurrence: how far two benchmarks agree on how models rank.

Sun, Williams & Hupkes (2023) call two benchmarks concurrent when they rank the same
models in the same order. With several training seeds per model, every seed's score on
benchmark A is paired with every seed's score on benchmark B (per model), and the
concurrence is the correlation of the two resulting vectors: Kendall's tau-b by default,
or Pearson's r or Spearman's rho. Self-concurrence pairs a benchmark with itself (all
seed pairs, a seed with itself included) and shows how stable its ranking is across seeds.
"""

import math
import warnings

import datasets
import evaluate
import numpy as np
from scipy import stats


_CITATION = """\
@inproceedings{sun-etal-2023-validity,
    title = "The Validity of Evaluation Results: Assessing Concurrence Across Compositionality Benchmarks",
    author = "Sun, Kaiser and Williams, Adina and Hupkes, Dieuwke",
    booktitle = "Proceedings of the 27th Conference on Computational Natural Language Learning (CoNLL)",
    year = "2023",
    publisher = "Association for Computational Linguistics",
    url = "https://arxiv.org/abs/2310.17514",
}
"""

_DESCRIPTION = """\
Agreement between benchmarks on the ranking of models (Sun, Williams & Hupkes, 2023).
Input is a long table with one row per (model, benchmark, seed) and its score. For every
pair of benchmarks A and B, each model contributes every (seed of A, seed of B) pair of
scores, and the concurrence is the correlation of the two score vectors: Kendall's tau-b
(default), Pearson's r or Spearman's rho. Self-concurrence (A with itself) is reported
when a benchmark has several seeds for some model. A bootstrap over models gives
confidence intervals.
"""

_KWARGS_DESCRIPTION = """
Computes the concurrence of every pair of benchmarks.

Args:
    model (`list` of `str`): the model of each row.
    benchmark (`list` of `str`): the benchmark of each row.
    seed (`list` of `str` or `int`): the training seed of each row; None or "" when
        each model has one run per benchmark.
    score (`list` of `float`): the model's score on the benchmark with that seed.
    method (`str`, default "kendall"): "kendall" (tau-b), "pearson" or "spearman".
    n_bootstrap (`int`, default 0): bootstrap resamples of the models for confidence
        intervals; 0 for none.
    confidence_level (`float`, default 0.95): of the percentile bootstrap interval.
    random_state (`int`, default 0): seed of the bootstrap.

Returns:
    concurrence (`dict`): "A|B" -> value for every unordered pair of benchmarks (in order
        of first appearance), and "A|A" -> self-concurrence for every benchmark with
        several seeds for some model. NaN when a vector is constant.
    benchmarks (`list`): the benchmarks, in order of first appearance.
    matrix (`list` of `list`): the pairwise values, self-concurrence on the diagonal.
    method (`str`).
    confidence_interval (`dict`, only with `n_bootstrap` > 0): "A|B" -> [low, high].

Examples:
    Two benchmarks that rank three models in the same order (one run each):

    >>> import evaluate
    >>> concurrence = evaluate.load("metrics/concurrence")
    >>> result = concurrence.compute(
    ...     model=["lstm", "t5", "btg", "lstm", "t5", "btg"],
    ...     benchmark=["cogs"] * 3 + ["scan"] * 3,
    ...     seed=[""] * 6,
    ...     score=[0.1, 0.8, 0.6, 0.05, 0.55, 0.4])
    >>> result["concurrence"]
    {'cogs|scan': 1.0}
    >>> result["matrix"]
    [[1.0, 1.0], [1.0, 1.0]]

    With two seeds per model, every seed of one benchmark meets every seed of the other,
    and each benchmark gets a self-concurrence:

    >>> result = concurrence.compute(
    ...     model=["a", "a", "b", "b"] * 2, benchmark=["A"] * 4 + ["B"] * 4,
    ...     seed=[1, 2, 1, 2] * 2, score=[0.1, 0.3, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8],
    ...     method="pearson")
    >>> {pair: round(value, 4) for pair, value in result["concurrence"].items()}
    {'A|B': 0.4, 'A|A': 0.2, 'B|B': 0.8}
"""

METHODS = ("kendall", "pearson", "spearman")
_METHOD_NAMES = {"kendall": "Kendall's tau-b", "pearson": "Pearson's r", "spearman": "Spearman's rho"}


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------


def _no_seed(seed):
    return seed is None or seed == ""


def _score_table(model, benchmark, seed, score):
    """{benchmark: {model: [scores, one per seed]}}, benchmarks and models in order of appearance."""
    lengths = {"model": len(model), "benchmark": len(benchmark), "seed": len(seed), "score": len(score)}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"model, benchmark, seed and score need one entry per row; got lengths {lengths}")
    table, seen = {}, set()
    for row, (name, bench, run, value) in enumerate(zip(model, benchmark, seed, score)):
        if value is None or not math.isfinite(value):
            raise ValueError(f"row {row} ({name!r} on {bench!r}) has no finite score: {value!r}")
        key = (bench, name, None if _no_seed(run) else run)
        if key in seen:
            what = "without a seed" if key[2] is None else f"with seed {run!r}"
            raise ValueError(
                f"model {name!r} has more than one score on {bench!r} {what} (row {row}); give each run its seed"
            )
        seen.add(key)
        table.setdefault(bench, {}).setdefault(name, []).append(float(value))
    return table


def _check_same_models(table, first, second):
    ours, theirs = set(table[first]), set(table[second])
    if ours != theirs:
        raise ValueError(
            f"benchmarks {first!r} and {second!r} must cover the same models; "
            f"only in {first!r}: {sorted(ours - theirs)}; only in {second!r}: {sorted(theirs - ours)}"
        )
    if len(ours) < 2:
        raise ValueError(f"benchmarks {first!r} and {second!r} share {len(ours)} model(s); a ranking needs at least 2")


def _seed_pair_blocks(scores_a, scores_b, models):
    """Per model, the (A, B) score vectors over every (seed of A, seed of B) pair."""
    blocks = []
    for name in models:
        a = np.asarray(scores_a[name])
        b = np.asarray(scores_b[name])
        blocks.append((np.repeat(a, b.size), np.tile(b, a.size)))
    return blocks


# ---------------------------------------------------------------------------------------
# Correlations
# ---------------------------------------------------------------------------------------


def correlation(x, y, method="kendall"):
    """Kendall's tau-b, Pearson's r or Spearman's rho of two vectors (scipy); NaN if constant."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    function = {"kendall": stats.kendalltau, "pearson": stats.pearsonr, "spearman": stats.spearmanr}[method]
    with warnings.catch_warnings():
        # A constant vector has no ranking: scipy warns and returns NaN, which we report.
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(function(x, y).statistic)


def _concurrence(blocks, method):
    x = np.concatenate([bx for bx, _ in blocks])
    y = np.concatenate([by for _, by in blocks])
    return correlation(x, y, method)


def _bootstrap_interval(blocks, method, picks, confidence_level):
    """Percentile interval of the concurrence over resamples of the models.

    ``picks`` holds one row of model indices (drawn with replacement) per resample.
    """
    values = np.array([_concurrence([blocks[i] for i in pick], method) for pick in picks])
    return _percentile_interval(values, confidence_level)


def kendall_resamples(scores, picks):
    """Kendall's tau-b of every pair of benchmarks in every resample of the models, one rank computation per
    resample for all pairs: ``scores`` (benchmarks x models, one run each; or resamples x benchmarks x models, each
    resample's own scores, as when the test rows are resampled too), ``picks`` (resamples x models, model indices
    drawn with replacement) -> (resamples x benchmarks x benchmarks).

    Each resample's pairs of drawn models are ranked once per benchmark (the sign of their difference: 0 for a
    tie); a matrix product then gives every pair of benchmarks its concordant minus discordant count, and tau-b is
    that over the square roots of the pairs untied in each, in scipy.stats.kendalltau's own arithmetic (the same
    value, NaN where a benchmark's drawn scores are all tied).
    """
    scores = np.asarray(scores, dtype=float)
    picks = np.asarray(picks)
    first, second = np.triu_indices(picks.shape[1], 1)
    benchmarks = scores.shape[-2]
    out = np.empty((len(picks), benchmarks, benchmarks))
    chunk = max(1, 4_000_000 // max(1, benchmarks * len(first)))  # resamples at a time (a few tens of MB)
    for start in range(0, len(picks), chunk):
        if scores.ndim == 3:  # each resample's own scores, its models drawn
            block = np.take_along_axis(scores[start:start + chunk], picks[start:start + chunk, None, :], axis=2)
            drawn = block.transpose(1, 0, 2)
        else:
            drawn = scores[:, picks[start:start + chunk]]  # benchmarks x resamples x models
        signs = np.sign(drawn[:, :, first] - drawn[:, :, second]).transpose(1, 0, 2)  # resamples x benchmarks x pairs
        agreement = signs @ signs.transpose(0, 2, 1)  # concordant - discordant pairs
        untied = np.sqrt(np.abs(signs).sum(axis=2))
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = agreement / untied[:, :, None] / untied[:, None, :]
        tau[(untied[:, :, None] == 0) | (untied[:, None, :] == 0)] = np.nan
        out[start:start + chunk] = np.clip(tau, -1.0, 1.0)
    return out


def _percentile_interval(values, confidence_level):
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return [float("nan"), float("nan")]
    tail = (1 - confidence_level) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return [float(low), float(high)]


# ---------------------------------------------------------------------------------------
# All pairs
# ---------------------------------------------------------------------------------------


def _check_options(method, n_bootstrap, confidence_level):
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) or n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be a non-negative integer, got {n_bootstrap!r}")
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must lie strictly between 0 and 1, got {confidence_level!r}")


def compute_concurrence(
    model, benchmark, seed, score, method="kendall", n_bootstrap=0, confidence_level=0.95, random_state=0
):
    """Concurrence of every pair of benchmarks (see ``_KWARGS_DESCRIPTION``)."""
    _check_options(method, n_bootstrap, confidence_level)
    table = _score_table(model, benchmark, seed, score)
    benchmarks = list(table)
    if len(benchmarks) < 2:
        raise ValueError(f"concurrence compares benchmarks; got only {benchmarks}")
    models = list(table[benchmarks[0]])
    # One set of resamples for all pairs, so that every interval sees the same "worlds".
    picks = np.random.default_rng(random_state).integers(0, len(models), size=(n_bootstrap, len(models)))
    resampled = None  # Kendall's tau-b of one run per model: every pair of every resample at once
    if n_bootstrap and method == "kendall" and all(
        set(table[b]) == set(models) and all(len(runs) == 1 for runs in table[b].values()) for b in benchmarks
    ):
        resampled = kendall_resamples([[table[b][m][0] for m in models] for b in benchmarks], picks)
    matrix = np.full((len(benchmarks), len(benchmarks)), np.nan)
    values, intervals = {}, {}
    pairs = [(i, j) for i in range(len(benchmarks)) for j in range(i + 1, len(benchmarks))]
    selves = [(i, i) for i in range(len(benchmarks))]
    for i, j in pairs + selves:
        first, second = benchmarks[i], benchmarks[j]
        _check_same_models(table, first, second)
        blocks = _seed_pair_blocks(table[first], table[second], models)
        matrix[i, j] = matrix[j, i] = _concurrence(blocks, method)
        several_seeds = any(len(runs) > 1 for runs in table[first].values())
        if i == j and not several_seeds:
            continue  # one run per model: self-concurrence is 1 by construction
        key = f"{first}|{second}"
        values[key] = float(matrix[i, j])
        if n_bootstrap and resampled is not None:
            intervals[key] = _percentile_interval(resampled[:, i, j], confidence_level)
        elif n_bootstrap:
            intervals[key] = _bootstrap_interval(blocks, method, picks, confidence_level)
    result = {"concurrence": values, "benchmarks": benchmarks, "matrix": matrix.tolist(), "method": method}
    if n_bootstrap:
        result["confidence_interval"] = intervals
    return result


def plot_heatmap(result, path, title=None):
    """Write the pairwise concurrence matrix of a ``compute`` result as a heatmap PNG.

    Parameters
    ----------
    result : dict
        The output of ``compute`` (needs ``benchmarks``, ``matrix`` and ``method``).
    path : str or os.PathLike
        Where to write the PNG.
    title : str, optional
        Defaults to the method's name.

    Returns
    -------
    str
        ``path`` as a string.
    """
    # A bare Figure draws to a file without pyplot, leaving the caller's backend alone.
    from matplotlib.figure import Figure

    names = result["benchmarks"]
    matrix = np.asarray(result["matrix"], dtype=float)
    size = 1.2 + 0.9 * len(names)
    figure = Figure(figsize=(size + 1.5, size))
    axes = figure.subplots()
    image = axes.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
    axes.set_xticks(range(len(names)), labels=names, rotation=45, ha="right")
    axes.set_yticks(range(len(names)), labels=names)
    for (row, column), value in np.ndenumerate(matrix):
        text = "n/a" if np.isnan(value) else f"{value:.2f}"
        color = "black" if abs(np.nan_to_num(value)) < 0.6 else "white"  # readable on dark cells
        axes.text(column, row, text, ha="center", va="center", color=color)
    label = _METHOD_NAMES[result["method"]]
    figure.colorbar(image, ax=axes, label=label)
    axes.set_title(title or f"concurrence ({label})")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return str(path)


def _features(seed_type):
    return datasets.Features(
        {
            "model": datasets.Value("string"),
            "benchmark": datasets.Value("string"),
            "seed": datasets.Value(seed_type),
            "score": datasets.Value("float64"),
        }
    )


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Concurrence(evaluate.Metric):
    """Kendall tau-b / Pearson / Spearman agreement of model rankings between benchmarks."""

    plot_heatmap = staticmethod(plot_heatmap)
    correlation = staticmethod(correlation)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # Seeds are names (strings) or numbers; evaluate picks the one that fits.
            features=[_features("string"), _features("int64")],
            reference_urls=["https://arxiv.org/abs/2310.17514"],
        )

    def _compute(
        self, model, benchmark, seed, score, method="kendall", n_bootstrap=0, confidence_level=0.95, random_state=0
    ):
        return compute_concurrence(model, benchmark, seed, score, method, n_bootstrap, confidence_level, random_state)
