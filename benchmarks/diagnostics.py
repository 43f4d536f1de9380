"""How fast the diagnostics against random splits are (issue 23's targets: 200 random splits of 20k rows in
under 30 s, of 570k rows in under 5 minutes, on this machine).

    python benchmarks/diagnostics.py                         # 20k and 570k rows, 200 random splits
    python benchmarks/diagnostics.py --sizes 20000 --null-splits 50
    python benchmarks/diagnostics.py --json                  # last line: one JSON object

The rows are SNLI-like (:func:`benchmarks.audit.snli_like`: premises and hypotheses recombined from the
real ones of SNLI's dev and test files in ``../shared/data/snli``, so that 570k rows are 570k distinct
texts, not 20k texts tiled; seeded), with a seeded normal ``score`` per row as given scores. The configs
are those a likelihood build of them makes (:func:`split_builders.splitters.likelihood.likelihood_configs`:
``ll_split``, ``ll_split_reverse``, ``random``, ``length``; label-balanced, 10,000 validation and 10,000
test rows per 570k), and the diagnostics (:func:`split_builders.evidence.diagnostics.diagnose`, the function
builds and ``resplit diagnose`` use) run on them as a build hands them over: one Arrow table and each
config's row positions, the record declaring the fields (query: the hypothesis). The time printed is the
diagnostics' alone (the rows made and the configs drawn before the clock starts), in this process,
including the per-row statistics (words, wordfreq and pyphen look-ups) and every random split.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from audit import SNLI_EVAL, SNLI_ROWS, cpu_model, snli_like  # noqa: E402  (the audit benchmark's SNLI-like rows)

TARGETS = {20_000: 30.0, 570_000: 300.0}  # seconds (issue 23)


def likelihood_parts(table, seed: int = 0):
    """The parts and parameters of a likelihood build's configs over ``table`` (given scores)."""
    import pyarrow as pa

    from split_builders.evidence.pools import Part
    from split_builders.splitters.likelihood import likelihood_configs

    n = table.num_rows
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=n)
    table = table.append_column("score", pa.array(scores))
    lengths = np.asarray([len(h.split()) for h in table.column("hypothesis").to_pylist()])
    size = max(1, round(n * SNLI_EVAL / SNLI_ROWS))
    configs = likelihood_configs(scores, labels=np.asarray(table.column("gold_label").to_pylist(), dtype=object),
                                 lengths=lengths, setting="given", validation_size=size, test_size=size,
                                 random_state=42)
    parts = {c.name: {s: Part(table, np.asarray(c.indices[s], dtype=np.int64)) for s in c.splits} for c in configs}
    return parts, {c.name: dict(c.parameters) for c in configs}


def one_run(n: int, null_splits: int) -> dict:
    from split_builders.api import Fields
    from split_builders.evidence.diagnostics import diagnose

    table = snli_like(n)
    parts, parameters = likelihood_parts(table)
    record = {"method": "likelihood", "fields": Fields("classification", text=("premise", "hypothesis"),
                                                       query="hypothesis", label="gold_label").record()}
    start = time.perf_counter()
    report = diagnose(parts, record=record, parameters=parameters, null_splits=null_splits, seed=0)
    seconds = time.perf_counter() - start
    test = {c: {k: s["test"][k]["percentile"] for k in ("rare_word_fraction", "length", "score")}
            for c, s in report["configs"].items()}
    return {"rows": n, "configs": len(parts), "null_distributions": len(report["null_distributions"]),
            "null_splits": null_splits, "seconds": round(seconds, 2), "test_percentiles": test}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,570000", help="rows per run, comma-separated")
    parser.add_argument("--null-splits", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    import scipy
    import wordfreq

    wordfreq.zipf_frequency("warm", "en")  # load the word list outside the timings
    print(f"CPU: {cpu_model()}; Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}")
    print(f"{'rows':>9}{'configs':>9}{'nulls':>7}{'random splits':>15}{'seconds':>9}{'target s':>10}{'rows/s':>10}")
    runs = []
    for n in (int(s) for s in args.sizes.split(",") if s.strip()):
        run = one_run(n, args.null_splits)
        target = next((t for size, t in sorted(TARGETS.items()) if n <= size), None)
        runs.append({**run, "target_seconds": target})
        print(f"{n:>9}{run['configs']:>9}{run['null_distributions']:>7}{args.null_splits:>15}{run['seconds']:>9.1f}"
              f"{'-' if target is None else format(target, '.0f'):>10}{n / max(run['seconds'], 1e-9):>10.0f}")
    for run in runs:
        print(f"{run['rows']} rows, test percentiles (rare words, length, score): "
              + "; ".join(f"{c} {p['rare_word_fraction']}/{p['length']}/{p['score']}"
                          for c, p in run["test_percentiles"].items()))
    if args.json:
        print(json.dumps({"cpu": cpu_model(), "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
