"""Which interval ``resplit report`` gives an accuracy, a gap and a relative error increase: empirical coverage
at a nominal 95%, per method side by side, n in {20, 100, 500, 5000} and accuracy from 0 to 1 (0 and 1 included).

1. One accuracy (k of n right): the percentile bootstrap (what the report gave), Wilson's score interval and
   Clopper-Pearson's exact interval (both ``scipy.stats.binomtest(...).proportion_ci``). Their coverage is exact:
   every interval depends on k alone, so coverage is the binomial probability of the k whose interval holds p.
   The bootstrap of k of n is drawn as it is (a resample's mean of k ones among n is Binomial(n, k/n) / n), with
   ``--resamples`` draws per k and the percentile interval of numpy, as ``scipy.stats.bootstrap`` takes it.
2. A gap (two independent test sets of n rows, accuracies p1 and p2): the percentile bootstrap vs Newcombe's
   hybrid score interval; ``--trials`` simulated pairs per cell (Monte Carlo error about 0.5 points at 95%).
3. A relative error increase ``(e1 - e2) / e2`` (e = 1 - accuracy): the bootstrap vs MOVER-R (Donner & Zou 2012)
   from Wilson intervals; among trials where the baseline made an error (else neither reports an interval).

    python benchmarks/interval_coverage.py                  # the three tables (a minute or two)
    python benchmarks/interval_coverage.py --markdown       # as docs/evaluation.md shows them
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from split_builders.evaluation.statistics import mover_ratio, newcombe  # noqa: E402

LEVEL = 0.95
SIZES = (20, 100, 500, 5000)
RATES = (0.0, 0.02, 0.5, 0.98, 1.0)
GAPS = ((0.0, 0.0), (0.02, 0.0), (0.02, 0.02), (0.5, 0.45), (0.98, 0.98), (0.98, 1.0), (1.0, 1.0))
INCREASES = ((0.98, 0.98), (0.96, 0.98), (0.5, 0.6), (0.0, 0.5), (0.9, 0.5))  # (config, baseline) accuracies


@functools.lru_cache(maxsize=None)
def _ci(k: int, n: int, method: str) -> tuple[float, float]:
    from scipy.stats import binomtest

    interval = binomtest(k, n).proportion_ci(confidence_level=LEVEL, method=method)
    return float(interval.low), float(interval.high)


_newcombe = functools.lru_cache(maxsize=None)(lambda k1, n1, k2, n2: newcombe(k1, n1, k2, n2, LEVEL))
_mover = functools.lru_cache(maxsize=None)(lambda k1, n1, k2, n2: mover_ratio(k1, n1, k2, n2, LEVEL))


def _percentile(values):
    alpha = (1 - LEVEL) / 2
    return np.percentile(values, [100 * alpha, 100 * (1 - alpha)], axis=-1)


def single(n: int, p: float, resamples: int, rng) -> dict:
    """Exact coverage of each method for one accuracy: the binomial probability of the k whose interval holds p."""
    from scipy.stats import binom

    ks = np.arange(n + 1)
    weight = binom.pmf(ks, n, p)
    ks, weight = ks[weight > 1e-12], weight[weight > 1e-12]
    out = {}
    draws = rng.binomial(n, ks[:, None] / n, (len(ks), resamples)) / n
    low, high = _percentile(draws)
    out["bootstrap"] = float(np.sum(weight * ((low <= p) & (p <= high))))
    for name, method in (("wilson", "wilson"), ("clopper_pearson", "exact")):
        held = [lo <= p <= hi for lo, hi in (_ci(int(k), n, method) for k in ks)]
        out[name] = float(np.sum(weight * np.asarray(held)))
    return out


def gap(n: int, p1: float, p2: float, trials: int, resamples: int, rng) -> dict:
    k1, k2 = rng.binomial(n, p1, trials), rng.binomial(n, p2, trials)
    truth = p1 - p2
    boot = (rng.binomial(n, k1[:, None] / n, (trials, resamples)) - rng.binomial(n, k2[:, None] / n,
                                                                                  (trials, resamples))) / n
    low, high = _percentile(boot)
    held = [lo <= truth <= hi for lo, hi in (_newcombe(int(a), n, int(b), n) for a, b in zip(k1, k2))]
    return {"bootstrap": float(np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high))),
            "newcombe": float(np.mean(held))}


def increase(n: int, p1: float, p2: float, trials: int, resamples: int, rng) -> dict:
    e1, e2 = 1 - p1, 1 - p2
    truth = e1 / e2 - 1
    err1, err2 = rng.binomial(n, e1, trials), rng.binomial(n, e2, trials)
    defined = err2 > 0
    err1, err2 = err1[defined], err2[defined]
    b1 = rng.binomial(n, err1[:, None] / n, (len(err1), resamples)) / n
    b2 = rng.binomial(n, err2[:, None] / n, (len(err2), resamples)) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(b2 > 0, b1 / b2 - 1, np.nan)
    alpha = (1 - LEVEL) / 2
    low, high = np.nanpercentile(ratio, [100 * alpha, 100 * (1 - alpha)], axis=-1)
    held = [lo - 1 <= truth + 1e-12 and truth - 1e-12 <= hi - 1
            for lo, hi in (_mover(int(a), n, int(b), n) for a, b in zip(err1, err2))]
    return {"bootstrap": float(np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high))),
            "mover_r": float(np.mean(held)), "defined": float(np.mean(defined))}


def _case(case) -> str:
    return f"{case[0]:g} vs {case[1]:g}" if isinstance(case, tuple) else f"{case:g}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per interval")
    parser.add_argument("--trials", type=int, default=2000, help="simulated pairs of test sets per gap cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="Markdown tables")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()

    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731

    def table(title, methods, cases, compute):
        """Rows: the case (accuracy, or pair); columns: n; each cell the methods' coverage side by side."""
        cells = {(case, n): compute(n, case) for case in cases for n in SIZES}
        if args.markdown:
            print(f"\n{title}, % ({' / '.join(methods.values())})\n")
            print("| " + " | ".join(["accuracy", *(f"n = {n}" for n in SIZES)]) + " |")
            print("|" + "---|" * (len(SIZES) + 1))
            for case in cases:
                print(f"| {_case(case)} | " + " | ".join(" / ".join(pct(cells[(case, n)][m]) for m in methods)
                                                       for n in SIZES) + " |")
            return
        print(f"\n{title}\n" + "".join(f"{h:>16}" for h in ["n", "accuracy", *methods.values()]))
        for n in SIZES:
            for case in cases:
                print("".join(f"{c:>16}" for c in [str(n), _case(case), *(pct(cells[(case, n)][m]) + "%"
                                                                           for m in methods)]))

    table("One accuracy: coverage of a nominal 95% interval (exact over k)",
          {"bootstrap": "bootstrap", "wilson": "Wilson", "clopper_pearson": "Clopper-Pearson"}, RATES,
          lambda n, p: single(n, p, args.resamples, rng))
    table(f"A gap (two test sets of n rows, {args.trials} trials)", {"bootstrap": "bootstrap", "newcombe": "Newcombe"},
          GAPS, lambda n, pair: gap(n, *pair, args.trials, args.resamples, rng))
    table(f"A relative error increase, config vs baseline accuracy ({args.trials} trials, those whose baseline erred)",
          {"bootstrap": "bootstrap", "mover_r": "MOVER-R"}, INCREASES,
          lambda n, pair: increase(n, *pair, args.trials, args.resamples, rng))
    print(f"\n({time.perf_counter() - start:.0f} s; {args.resamples} resamples per bootstrap, seed {args.seed})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
