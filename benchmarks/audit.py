"""How fast the leakage audit is, and how much of the near-duplicate search's target it finds.

    python benchmarks/audit.py                              # 20k, 100k, 570k rows, then the recall sample
    python benchmarks/audit.py --sizes 20000,100000 --eval 1000 --train 5000
    python benchmarks/audit.py --json                       # last line: one JSON object

**Speed.** SNLI has 570k rows, but only its dev and test files (19,666 labelled rows) are here
(``../shared/data/snli``), so the rows are SNLI-like: premises and hypotheses recombined from the real
ones (the first half of one sentence's words and the second half of another's), about 3.7 hypotheses
per premise as in SNLI's train split, seeded. Five configs are drawn at random over all rows (each a
seeded permutation: 10,000 validation and 10,000 test rows per 570k, the rest train), and the audit
(:func:`split_builders.release.audit.audit`, the function builds and ``resplit audit`` use) runs on
them as a build hands them over: one Arrow table and each config's row positions. The time includes
everything (distinct rows, normalisation, shingles, MinHash, LSH, confirming candidates, the five
configs' counts and examples), not the import of ``datasketch`` (about half a second). The growth
exponent ``b`` of ``time ~ a * rows ** b`` is fitted on the log-log points (1 is linear).

**Recall.** On a sample of the largest table (``--eval`` evaluation rows, ``--train`` train rows; a
tenth of the evaluation rows replaced by a copy of a train row with one word changed), every
evaluation-train pair of different texts whose exact Jaccard similarity of character 5-grams (the
audit's own shingles) is at least the threshold is found by a naive all-pairs comparison (sparse
matrix products of the shingle sets, scipy), and compared with the pairs the audit's MinHash LSH
search returns: recall = found / all, printed side by side with both times.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = REPO.parent / "shared" / "data"
SNLI_ROWS = 570_152
SNLI_EVAL = 10_000


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def real_snli() -> tuple[list, list]:
    """The premises and hypotheses of SNLI's dev and test files (distinct premises)."""
    premises, hypotheses = {}, []
    for name in ("dev", "test"):
        with gzip.open(SHARED / "snli" / f"snli_1.0_{name}.jsonl.gz", "rt", encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                premises[row["sentence1"]] = None
                hypotheses.append(row["sentence2"])
    return list(premises), hypotheses


def _recombined(rng, sentences: list, n: int) -> list:
    """``n`` sentences: the first half of the words of one real sentence, the second half of another's."""
    words = [s.split() for s in sentences]
    first, second = rng.integers(0, len(words), n), rng.integers(0, len(words), n)
    return [" ".join(words[a][: (len(words[a]) + 1) // 2] + words[b][(len(words[b]) + 1) // 2:])
            for a, b in zip(first.tolist(), second.tolist())]


def snli_like(n: int, seed: int = 0):
    """An SNLI-like table of ``n`` rows (premise, hypothesis, gold_label, source_id)."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    premises, hypotheses = real_snli()
    distinct = max(1, round(n / 3.7))
    premise = np.asarray(_recombined(rng, premises, distinct), dtype=object)[np.sort(rng.integers(0, distinct, n))]
    return pa.table({"premise": pa.array(premise.tolist(), pa.large_string()),
                     "hypothesis": pa.array(_recombined(rng, hypotheses, n), pa.large_string()),
                     "gold_label": pa.array(np.asarray(["entailment", "neutral", "contradiction"])[rng.integers(0, 3, n)]),
                     "source_id": pa.array(np.arange(n, dtype=np.int64))})


def random_configs(n: int, k: int = 5, seed: int = 0) -> dict:
    """``k`` configs drawn at random over ``n`` rows: {config: {split: sorted positions}}."""
    size = max(1, round(n * SNLI_EVAL / SNLI_ROWS))
    configs = {}
    for c in range(k):
        order = np.random.default_rng(seed + c).permutation(n)
        configs[f"random_{c}"] = {"train": np.sort(order[2 * size:]), "validation": np.sort(order[:size]),
                                  "test": np.sort(order[size:2 * size])}
    return configs


def time_audit(table, configs, threshold: float) -> tuple[float, dict]:
    from split_builders.release.audit import Part, audit

    parts = {name: {split: Part(table, rows) for split, rows in splits.items()} for name, splits in configs.items()}
    start = time.perf_counter()
    report = audit(parts, threshold=threshold)
    return time.perf_counter() - start, report


# ---------------------------------------------------------------------------------------------
# Recall against a naive all-pairs comparison
# ---------------------------------------------------------------------------------------------


def recall_sample(table, n_eval: int, n_train: int, seed: int = 1) -> tuple[list, list, int]:
    """Normalised texts of ``n_eval`` evaluation and ``n_train`` train rows; a tenth of the evaluation
    rows are a train row with one word changed (planted near-duplicates)."""
    import pyarrow as pa

    from split_builders.release.audit import _examples_text

    rng = np.random.default_rng(seed)
    chosen = rng.choice(table.num_rows, n_eval + n_train, replace=False)
    texts = _examples_text(table.take(pa.array(chosen)), ["premise", "hypothesis"]).to_pylist()
    evaluation, train = texts[:n_eval], texts[n_eval:]
    vocabulary = sorted({w for t in train[:2000] for w in t.split()})
    planted = n_eval // 10
    for i in range(planted):
        words = train[int(rng.integers(0, n_train))].split()
        at = int(rng.integers(0, len(words)))
        words[at] = next(w for w in rng.permutation(vocabulary) if w != words[at])
        evaluation[i] = " ".join(words)
    return evaluation, train, planted


def naive_pairs(evaluation: list, train: list, threshold: float) -> tuple[set, float]:
    """Every (evaluation, train) pair of different texts with Jaccard >= ``threshold``: all pairs,
    exact Jaccard of the shingle sets (sparse products)."""
    from scipy import sparse

    from split_builders.release.audit import shingle_hashes

    start = time.perf_counter()
    values, offsets = shingle_hashes(evaluation + train)
    _, columns = np.unique(values, return_inverse=True)
    rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    matrix = sparse.csr_matrix((np.ones(values.size, dtype=np.float64), (rows, columns.reshape(-1))))
    matrix.data[:] = 1.0
    matrix.sum_duplicates()
    matrix.data[:] = 1.0  # sets, not bags
    sizes = np.asarray(matrix.sum(axis=1)).reshape(-1)
    left, right = matrix[: len(evaluation)], matrix[len(evaluation):].T.tocsc()
    found = set()
    for start_row in range(0, len(evaluation), 250):
        common = (left[start_row:start_row + 250] @ right).toarray()
        union = sizes[start_row:start_row + 250, None] + sizes[None, len(evaluation):] - common
        jaccard = np.divide(common, union, out=np.zeros_like(common), where=union > 0)
        for i, j in zip(*np.nonzero(jaccard >= threshold)):
            if evaluation[start_row + i] != train[j]:
                found.add((start_row + int(i), int(j)))
    return found, time.perf_counter() - start


def lsh_pairs(evaluation: list, train: list, threshold: float) -> tuple[set, float]:
    """The same pairs from the audit's search (distinct texts, MinHash LSH, confirmed candidates)."""
    from split_builders.release.audit import near_duplicate_pairs

    start = time.perf_counter()
    distinct = list(dict.fromkeys(evaluation + train))
    number = {t: k for k, t in enumerate(distinct)}
    u, v, _, _ = near_duplicate_pairs(distinct, threshold=threshold)
    linked: dict = {}
    for a, b in zip(u.tolist(), v.tolist()):
        linked.setdefault(a, set()).add(b)
        linked.setdefault(b, set()).add(a)
    train_rows: dict = {}
    for j, text in enumerate(train):
        train_rows.setdefault(number[text], []).append(j)
    found = set()
    for i, text in enumerate(evaluation):
        for other in linked.get(number[text], ()):
            for j in train_rows.get(other, ()):
                found.add((i, j))
    return found, time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,100000,570000", help="rows per run, comma-separated")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--eval", type=int, default=3000, help="evaluation rows of the recall sample")
    parser.add_argument("--train", type=int, default=20000, help="train rows of the recall sample")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    import datasketch  # noqa: F401  (imported once, outside the timings)

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"CPU: {cpu_model()}; Python {platform.python_version()}, numpy {np.__version__}, "
          f"datasketch {datasketch.__version__ if hasattr(datasketch, '__version__') else '?'}")
    print(f"{'rows':>9}{'distinct texts':>16}{'checked pairs':>14}{'near pairs':>12}{'seconds':>10}{'rows/s':>10}")
    results, table = [], None
    for n in sizes:
        table = snli_like(n)
        seconds, report = time_audit(table, random_configs(n), args.threshold)
        results.append({"rows": n, "seconds": round(seconds, 2), "distinct_texts": report["distinct_texts"],
                        "checked_pairs": report["checked_pairs"], "near_duplicate_pairs": report["near_duplicate_pairs"],
                        "shared_premise_test": report["configs"]["random_0"]["test"]["rates"]["shared"]["premise"]})
        print(f"{n:>9}{report['distinct_texts']:>16}{report['checked_pairs']:>14}{report['near_duplicate_pairs']:>12}"
              f"{seconds:>10.1f}{n / seconds:>10.0f}")
    exponent = None
    if len(results) > 1:
        exponent = float(np.polyfit(np.log([r["rows"] for r in results]), np.log([r["seconds"] for r in results]), 1)[0])
        print(f"time ~ rows^{exponent:.2f} (1 is linear)")

    evaluation, train, planted = recall_sample(table, args.eval, args.train)
    truth, naive_seconds = naive_pairs(evaluation, train, args.threshold)
    found, lsh_seconds = lsh_pairs(evaluation, train, args.threshold)
    recall = len(found & truth) / len(truth) if truth else float("nan")
    extra = len(found - truth)
    print(f"\nrecall sample: {args.eval} evaluation x {args.train} train rows of the {table.num_rows}-row table, "
          f"{planted} planted near-duplicates (one word changed), Jaccard >= {args.threshold:g}")
    print(f"{'':<24}{'pairs':>8}{'seconds':>10}")
    print(f"{'naive all pairs':<24}{len(truth):>8}{naive_seconds:>10.1f}")
    print(f"{'MinHash LSH (audit)':<24}{len(found & truth):>8}{lsh_seconds:>10.1f}   recall {recall:.4f}"
          f"{f', {extra} pair(s) not in the naive set' if extra else ''}")
    if args.json:
        print(json.dumps({"cpu": cpu_model(), "sizes": results, "exponent": exponent,
                          "recall": {"eval": args.eval, "train": args.train, "planted": planted,
                                     "pairs": len(truth), "found": len(found & truth), "recall": recall,
                                     "naive_seconds": round(naive_seconds, 2), "lsh_seconds": round(lsh_seconds, 2)}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
