"""How long ``resplit report`` takes: 4 runs x 5 configs x 2,000 test rows, every interval included.

A likelihood release of SNLI's dev set (9,842 rows with a label; seeded random log-likelihoods given with
``--scores``, so nothing is scored) with 2,000 test rows per config, and four predictions tables (one run per
model, each row right with a planted probability). Timed: ``report()`` in this process (10,000-resample
bootstrap intervals of every result, gap and relative error increase, McNemar's test of every pair of models,
the concurrence of the four models' rankings), and beside it the peer, what a user writes by hand today (the
issue's "30-line script": per config accuracy, a percentile bootstrap in a Python loop as tutorials show,
the difference to random and the relative error increase), on the same tables.

    python benchmarks/report.py                 # the figures, side by side
    python benchmarks/report.py --json          # one JSON line
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SNLI = REPO.parent / "shared" / "data" / "snli" / "snli_1.0_dev.jsonl.gz"
MODELS = {"m1": 0.88, "m2": 0.80, "m3": 0.71, "m4": 0.62}


def build(work: Path) -> Path:
    from split_builders.cli import main

    scores = work / "scores.npy"
    np.save(scores, np.random.default_rng(0).normal(-40, 10, 9842))
    out = work / "release"
    code = main(["likelihood", "--source", str(SNLI), "--task", "snli", "--scores", str(scores), "--test-size", "2000",
                 "--dev-size", "1000", "--length-buckets", "4", "--null-splits", "0", "--out", str(out),
                 "--no-progress"])
    if code:
        raise SystemExit(f"the build exited {code}")
    return out


def runs(release: Path, work: Path) -> list:
    import pandas as pd
    import pyarrow.parquet as pq

    configs = sorted(p.name for p in release.iterdir() if p.is_dir() and any(p.glob("test-*.parquet")))[:5]
    rng = np.random.default_rng(1)
    paths = []
    for model, rate in MODELS.items():
        rows = []
        for i, config in enumerate(configs):
            (file,) = (release / config).glob("test-*.parquet")
            ids = pq.read_table(file, columns=["source_id"]).column("source_id").to_numpy()
            correct = rng.random(len(ids)) < rate - (0 if config == "random" else 0.03 * (i + 1))
            rows.append(pd.DataFrame({"model": model, "config": config, "split": "test", "source_id": ids,
                                      "correct": correct.astype(int)}))
        path = work / f"{model}.csv"
        pd.concat(rows).to_csv(path, index=False)
        paths.append(path)
    return paths, configs


def by_hand(paths, configs, iterations=10_000) -> dict:
    """The peer: what a user writes today, per model and config (a bootstrap loop over numpy draws)."""
    import pandas as pd

    out = {}
    for path in paths:
        frame = pd.read_csv(path)
        for model, part in frame.groupby("model"):
            base = part[part["config"] == "random"]["correct"].to_numpy()
            for config in configs:
                x = part[part["config"] == config]["correct"].to_numpy()
                rng = np.random.default_rng(0)
                means = [x[rng.integers(0, len(x), len(x))].mean() for _ in range(iterations)]
                low, high = np.percentile(means, [2.5, 97.5])
                gaps, increases = [], []
                for _ in range(iterations if config != "random" else 0):
                    a, b = x[rng.integers(0, len(x), len(x))].mean(), base[rng.integers(0, len(base), len(base))].mean()
                    gaps.append(a - b)
                    increases.append(((1 - a) - (1 - b)) / (1 - b))
                out[(model, config)] = (x.mean(), low, high, *(np.percentile(gaps, [2.5, 97.5]) if gaps else ()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
    from split_builders.evaluation.report import report

    cpu = next((line.split(":", 1)[1].strip() for line in subprocess.run(["lscpu"], capture_output=True, text=True)
                .stdout.splitlines() if line.startswith("Model name")), platform.processor())
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        release = build(work)
        paths, configs = runs(release, work)
        start = time.perf_counter()
        result = report(release, [str(p) for p in paths], n_resamples=10_000)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        by_hand(paths, configs)
        peer = time.perf_counter() - start
    figures = {"cpu": cpu, "cores": os.cpu_count(), "runs": len(paths), "configs": len(configs), "test_rows": 2000,
               "report_seconds": round(ours, 2), "by_hand_seconds": round(peer, 2),
               "tables": {name: len(frame) for name, frame in result.tables().items()}}
    if args.json:
        print(json.dumps(figures))
        return
    print(f"resplit report, {len(paths)} runs x {len(configs)} configs x 2,000 test rows ({cpu}, {os.cpu_count()} cores)")
    print(f"  resplit report (every table, 10,000-resample intervals): {ours:6.2f} s   {figures['tables']}")
    print(f"  by hand (per-config bootstrap loop, gap and increase only): {peer:6.2f} s")


if __name__ == "__main__":
    main()
