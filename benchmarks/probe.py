"""How fast the baseline probe is on SNLI's dev and test files (about 20k labelled rows).

    python benchmarks/probe.py                  # every labelled row of SNLI dev + test (19,666)
    python benchmarks/probe.py --rows 5000      # the first 5,000
    python benchmarks/probe.py --json           # last line: one JSON object

The rows are SNLI's dev and test files from ``../shared/data/snli``, filtered as the Likelihood Splits paper
filters them (no gold label, the placeholder premise, empty hypotheses). Four configs are drawn over them as a
likelihood build draws them, 10% validation and 10% test each: ``random`` (a seeded permutation),
``ll_split`` and ``ll_split_reverse`` (the rows with the lowest / highest given score held out; the scores are
seeded normal draws, so these are random splits of another kind) and ``length`` (the longest hypotheses held
out). The probe (:func:`split_builders.evidence.probe.probe`, the function builds and ``resplit probe`` use)
then trains and scores its baselines on every config: two TF-IDF + logistic regression models per config
(whole input and hypothesis only), each scored on validation and test with a 1,000-resample bootstrap.
The time printed is the probe's alone (the rows read and the configs drawn before the clock starts), in
this process, imports of scikit-learn and scipy included.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared" / "data"
PLACEHOLDER = "Cannot see picture to describe."


def snli_rows(limit: int | None):
    """SNLI dev + test as a ``pyarrow.Table`` (source_id, premise, hypothesis, label), filtered."""
    import pyarrow as pa

    premise, hypothesis, label = [], [], []
    for name in ("dev", "test"):
        with gzip.open(SHARED / "snli" / f"snli_1.0_{name}.jsonl.gz", "rt", encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row["gold_label"] == "-" or row["sentence1"] == PLACEHOLDER or not row["sentence2"].strip():
                    continue
                premise.append(row["sentence1"])
                hypothesis.append(row["sentence2"])
                label.append(row["gold_label"])
    n = len(label) if limit is None else min(limit, len(label))
    return pa.table({"source_id": np.arange(n, dtype=np.int64), "premise": premise[:n],
                     "hypothesis": hypothesis[:n], "label": label[:n]})


def configs(table, seed: int) -> dict:
    """``{config: {split: table}}``: 80/10/10 splits, held out at random, by a seeded score, by length."""
    n = table.num_rows
    rng = np.random.default_rng(seed)
    score = rng.normal(size=n)
    length = np.asarray([len(h.split()) for h in table.column("hypothesis").to_pylist()])
    orders = {"random": rng.permutation(n), "ll_split": np.argsort(-score, kind="stable"),
              "ll_split_reverse": np.argsort(score, kind="stable"), "length": np.argsort(length, kind="stable")}
    held = n // 10
    out = {}
    for name, order in orders.items():
        train, held_out = order[:n - 2 * held], order[n - 2 * held:]
        shuffled = rng.permutation(held_out)
        parts = {"train": train, "validation": shuffled[:held], "test": shuffled[held:]}
        out[name] = {split: table.take(np.sort(rows)) for split, rows in parts.items()}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="the first N labelled rows (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="also print one JSON object (last line)")
    args = parser.parse_args(argv)

    from split_builders.evidence.probe import probe
    from split_builders.evidence.probe_card import format_report

    table = snli_rows(args.rows)
    tables = configs(table, args.seed)
    record = {"fields": {"task": "classification", "text": ["premise", "hypothesis"], "query": "hypothesis",
                         "label": "label", "label_names": ["contradiction", "entailment", "neutral"]}}
    start = time.perf_counter()
    report = probe(tables, record=record, seed=args.seed)
    seconds = time.perf_counter() - start
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"SNLI dev + test: {table.num_rows} rows, {len(tables)} configs (80/10/10), "
          f"probe {seconds:.1f} s ({table.num_rows / seconds:,.0f} rows/s)")
    for line in format_report(report):
        print(line)
    if args.json:
        print(json.dumps({"rows": table.num_rows, "configs": len(tables), "seconds": round(seconds, 2),
                          "report": report}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
