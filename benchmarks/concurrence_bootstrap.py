"""The concurrence metric's bootstrap over models on a CheckList-sized report: 49 configs (1,176 pairs), 4 models,
1,000 resamples, as ``resplit report`` runs it on a whole-suite behavioural release.

Timed side by side in one process: the peer, one ``scipy.stats.kendalltau`` per pair and resample (the metric's
per-pair path, what the report ran before; timed on the first ``--pairs`` pairs and scaled to all of them, as it
takes about a minute in all), and ``kendall_resamples`` (one rank computation per resample for every pair). The
intervals of the timed pairs must be equal.

    python benchmarks/concurrence_bootstrap.py            # the figures, side by side
    python benchmarks/concurrence_bootstrap.py --json     # one JSON line
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=49)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=20, help="pairs the per-pair peer is timed on")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from split_builders.metric_folders import metric_module

    metric = metric_module("concurrence", "concurrence")
    rng = np.random.default_rng(0)
    scores = np.round(rng.random((args.configs, args.models)), 2)  # pass rates: ties happen
    picks = np.random.default_rng(1).integers(0, args.models, size=(args.resamples, args.models))
    pairs = [(i, j) for i in range(args.configs) for j in range(i + 1, args.configs)]

    start = time.perf_counter()
    resampled = metric.kendall_resamples(scores, picks)
    fast = {(i, j): metric._percentile_interval(resampled[:, i, j], 0.95) for i, j in pairs}
    vectorised = time.perf_counter() - start

    timed = pairs[: args.pairs]
    start = time.perf_counter()
    slow = {(i, j): metric._bootstrap_interval([(np.array([scores[i, m]]), np.array([scores[j, m]]))
                                                for m in range(args.models)], "kendall", picks, 0.95)
            for i, j in timed}
    per_pair = (time.perf_counter() - start) / len(timed) * len(pairs)
    equal = all(np.array_equal(fast[p], slow[p], equal_nan=True) for p in timed)
    figures = {"configs": args.configs, "pairs": len(pairs), "models": args.models, "resamples": args.resamples,
               "scipy_per_pair_s": round(per_pair, 2), "scipy_pairs_timed": len(timed),
               "vectorised_s": round(vectorised, 3), "speedup": round(per_pair / vectorised, 1),
               "intervals_equal": equal, "cpu": platform.processor() or platform.machine()}
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{len(pairs)} pairs of {args.configs} configs, {args.models} models, {args.resamples} resamples")
    print(f"  scipy kendalltau per pair and resample  {per_pair:8.2f} s  (timed on {len(timed)} pairs, scaled)")
    print(f"  kendall_resamples (all pairs at once)   {vectorised:8.3f} s")
    print(f"  speed-up {per_pair / vectorised:.0f}x; intervals of the timed pairs equal: {equal}")


if __name__ == "__main__":
    main()
