"""How fast the leakage audit is, and how much of the near-duplicate search's target it finds.

    python benchmarks/audit.py                              # 20k, 100k, 570k rows, then the recall sample
    python benchmarks/audit.py --sizes 20000,100000 --eval 1000 --train 5000
    python benchmarks/audit.py --json                       # last line: one JSON object
    python benchmarks/audit.py --no-before                  # only the current MinHash (skip the slow column)
    python benchmarks/audit.py --curriculum ../shared/data/curriculum/tasks   # the audit inside a full build

**Speed.** SNLI has 570k rows, but only its dev and test files (19,666 labelled rows) are here
(``../shared/data/snli``), so the rows are SNLI-like: premises and hypotheses recombined from the real
ones (the first half of one sentence's words and the second half of another's), about 3.7 hypotheses
per premise as in SNLI's train split, seeded. Five configs are drawn at random over all rows (each a
seeded permutation: 10,000 validation and 10,000 test rows per 570k, the rest train), and the audit
(:func:`split_builders.evidence.audit.audit`, the function builds and ``resplit audit`` use) runs on
them as a build hands them over: one Arrow table and each config's row positions. The time includes
everything (distinct rows, normalisation, shingles, MinHash, LSH, confirming candidates, the five
configs' counts and examples), not the import of ``datasketch`` (about half a second). The growth
exponent ``b`` of ``time ~ a * rows ** b`` is fitted on the log-log points (1 is linear).

**Before / after.** Each size runs twice, each run in a fresh Python process: *before* with the
audit's former MinHash (one datasketch ``MinHash`` cleared and ``update_batch``-ed per text, kept here
as :func:`per_text_minhash_lsh`) and one LSH index over every text, *after* with the current one (the
signatures of a whole chunk in numpy, :func:`split_builders.evidence.near_duplicates.minhash_signatures`, and one
index per group of configs that share rows, :func:`split_builders.evidence.near_duplicates.text_groups`); both
insert into datasketch's ``MinHashLSH``. Printed side by side: seconds, rows/s, and the audit's peak memory (the process's peak
resident set less its resident set before the audit); the two runs' reports must be identical (the
signatures are bit for bit the same), which the last column says.

**Inside a build.** ``--curriculum TASKS`` runs ``resplit curriculum --data TASKS --out <tmp>
--no-inoculation --no-progress`` (the 36 phenomena) before and after, each in a fresh process, and
times :func:`split_builders.evidence.audit.audit` inside it (a wrapper): the build's seconds, the
audit's seconds and share, the audit's peak memory above the resident set at its start (sampled every
20 ms) and the process's peak.

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
import hashlib
import json
import operator
import platform
import resource
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


def per_text_minhash_lsh(texts: list, *, threshold: float, num_perm: int = 64, progress: bool = False):
    """The audit's former ``minhash_lsh`` (the *before* column): one datasketch ``MinHash`` cleared and
    ``update_batch``-ed with each text's shingle hashes, then inserted into the LSH index."""
    from datasketch import MinHash, MinHashLSH

    from split_builders.evidence.near_duplicates import (_CHUNK, MINHASH_SCHEME, MINHASH_SEED, lsh_parameters,
                                                         shingle_hashes)

    bands, rows = lsh_parameters(threshold, num_perm)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, params=(bands, rows))
    minhash = MinHash(num_perm=num_perm, seed=MINHASH_SEED, hashfunc=operator.index, scheme=MINHASH_SCHEME)
    signatures = np.zeros((len(texts), num_perm), dtype=np.uint32)
    with lsh.insertion_session(buffer_size=_CHUNK) as session:
        for start in range(0, len(texts), _CHUNK):
            values, offsets = shingle_hashes(texts[start:start + _CHUNK])
            shingles = np.split(values, offsets[1:-1]) if len(offsets) > 1 else []
            for k, row in enumerate(shingles):
                if row.size:
                    minhash.clear()
                    minhash.update_batch(row.tolist())
                    signatures[start + k] = minhash.hashvalues
                    session.insert(start + k, minhash, check_duplication=False)
    return signatures, lsh


def _resident_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def one_run(n: int, mode: str, threshold: float) -> dict:
    """One audit of ``n`` rows in this process with the ``before`` or ``after`` MinHash: seconds, the
    audit's peak memory above the resident set before it (MiB), and a digest of the report."""
    import datasketch  # noqa: F401  (imported outside the timing)

    from split_builders.evidence import audit as audit_module, near_duplicates

    if mode == "before":
        near_duplicates.minhash_lsh = per_text_minhash_lsh
        audit_module.text_groups = lambda pool, columns: None  # one index over every text
    table, configs = snli_like(n), random_configs(n)
    before, cpu = _resident_mb(), time.process_time()
    seconds, report = time_audit(table, configs, threshold)
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    counts = {key: report[key] for key in ("distinct_texts", "checked_pairs", "near_duplicate_pairs")}
    digest = hashlib.sha256(json.dumps([report["configs"], counts], sort_keys=True).encode()).hexdigest()
    return {"rows": n, "mode": mode, "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "audit_peak_mb": round(max(peak - before, 0.0)),
            "digest": digest, **counts,
            "shared_premise_test": report["configs"]["random_0"]["test"]["rates"]["shared"]["premise"]}


def run_fresh(n: int, mode: str, threshold: float) -> dict:
    """:func:`one_run` in a fresh Python process (its own peak memory)."""
    out = subprocess.run([sys.executable, __file__, "--one", str(n), "--mode", mode, "--threshold", str(threshold)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def curriculum_run(tasks: str, mode: str) -> dict:
    """One full CURRICULUM build (no inoculation configs) in this process, the audit timed inside it."""
    import tempfile
    import threading

    from split_builders.cli import main as resplit
    from split_builders.evidence import audit as audit_module, near_duplicates

    if mode == "before":
        near_duplicates.minhash_lsh = per_text_minhash_lsh
        audit_module.text_groups = lambda pool, columns: None  # one index over every text
    inner, seen = audit_module.audit, {}

    def timed(*args, **kwargs):
        start_mb, peak, done = _resident_mb(), [0.0], threading.Event()

        def sample():
            while not done.wait(0.02):
                peak[0] = max(peak[0], _resident_mb())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start, cpu = time.perf_counter(), time.process_time()
        try:
            report = inner(*args, **kwargs)
        finally:
            done.set()
            sampler.join()
        counts = json.dumps((report or {}).get("configs"), sort_keys=True).encode()
        seen.update(seconds=time.perf_counter() - start, cpu_seconds=time.process_time() - cpu,
                    peak_mb=max(peak[0], _resident_mb()) - start_mb, distinct_texts=(report or {}).get("distinct_texts"),
                    digest=hashlib.sha256(counts).hexdigest())
        return report

    audit_module.audit = timed
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as work:
        start, cpu = time.perf_counter(), time.process_time()
        code = resplit(["curriculum", "--data", tasks, "--out", str(Path(work) / "out"), "--no-inoculation",
                        "--no-progress"])
        build, build_cpu = time.perf_counter() - start, time.process_time() - cpu
    if code != 0:
        raise SystemExit(f"the build failed (exit {code})")
    return {"mode": mode, "build_seconds": round(build, 1), "audit_seconds": round(seen["seconds"], 1),
            "audit_share": round(seen["seconds"] / build, 3), "build_cpu_seconds": round(build_cpu, 1),
            "audit_cpu_seconds": round(seen["cpu_seconds"], 1), "audit_peak_mb": round(seen["peak_mb"]),
            "process_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "distinct_texts": seen["distinct_texts"], "digest": seen["digest"]}


def curriculum(tasks: str, before: bool) -> list:
    """:func:`curriculum_run` after (and before) in fresh processes, printed side by side."""
    runs = []
    for mode in ("before", "after") if before else ("after",):
        out = subprocess.run([sys.executable, __file__, "--curriculum", tasks, "--mode", mode, "--one", "-1"],
                             capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    print(f"full CURRICULUM build (36 phenomena, --no-inoculation), {runs[0]['distinct_texts']} distinct texts audited")
    print(f"{'':<8}{'build s':>9}{'audit s':>9}{'share':>7}{'build CPU s':>13}{'audit CPU s':>13}"
          f"{'audit peak MiB':>16}{'process peak MiB':>18}")
    for run in runs:
        print(f"{run['mode']:<8}{run['build_seconds']:>9.1f}{run['audit_seconds']:>9.1f}{run['audit_share']:>7.0%}"
              f"{run['build_cpu_seconds']:>13.1f}{run['audit_cpu_seconds']:>13.1f}"
              f"{run['audit_peak_mb']:>16d}{run['process_peak_mb']:>18d}")
    if len(runs) == 2:
        print(f"same audit report: {'yes' if runs[0]['digest'] == runs[1]['digest'] else 'NO'}")
    return runs


def time_audit(table, configs, threshold: float) -> tuple[float, dict]:
    from split_builders.evidence.audit import audit
    from split_builders.evidence.pools import Part

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

    from split_builders.evidence.near_duplicates import examples_text as _examples_text

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

    from split_builders.evidence.near_duplicates import shingle_hashes

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
    from split_builders.evidence.near_duplicates import near_duplicate_pairs

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
    parser.add_argument("--no-before", action="store_true", help="skip the former per-text MinHash (before)")
    parser.add_argument("--curriculum", metavar="TASKS", help="time the audit inside a full CURRICULUM build of "
                                                                 "the zips in TASKS (and nothing else)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one run in this process (run_fresh)
    parser.add_argument("--mode", choices=("before", "after"), default="after", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.curriculum and args.one:
        print(json.dumps(curriculum_run(args.curriculum, args.mode)))
        return 0
    if args.curriculum:
        runs = curriculum(args.curriculum, before=not args.no_before)
        if args.json:
            print(json.dumps({"cpu": cpu_model(), "curriculum": runs}))
        return 0
    if args.one:
        print(json.dumps(one_run(args.one, args.mode, args.threshold)))
        return 0
    import datasketch  # noqa: F401  (imported once, outside the timings)

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"CPU: {cpu_model()}; Python {platform.python_version()}, numpy {np.__version__}, "
          f"datasketch {datasketch.__version__ if hasattr(datasketch, '__version__') else '?'}")
    print(f"{'rows':>9}{'distinct texts':>16}{'checked pairs':>14}{'near pairs':>12}"
          f"{'s before':>10}{'s after':>9}{'CPU s before':>14}{'CPU s after':>13}{'rows/s before':>15}{'rows/s after':>14}"
          f"{'MiB before':>12}{'MiB after':>11}{'same report':>13}")
    results, table = [], None
    for n in sizes:
        after = run_fresh(n, "after", args.threshold)
        before = None if args.no_before else run_fresh(n, "before", args.threshold)
        results.append({**{k: v for k, v in after.items() if k not in ("mode", "digest")},
                        "before": None if before is None else {"seconds": before["seconds"],
                                                               "cpu_seconds": before["cpu_seconds"],
                                                               "audit_peak_mb": before["audit_peak_mb"]},
                        "same_report": None if before is None else before["digest"] == after["digest"]})
        cell = lambda run, key, fmt: "-" if run is None else format(run[key], fmt)  # noqa: E731
        rate = lambda run: "-" if run is None else f"{n / max(run['seconds'], 1e-9):.0f}"  # noqa: E731
        print(f"{n:>9}{after['distinct_texts']:>16}{after['checked_pairs']:>14}{after['near_duplicate_pairs']:>12}"
              f"{cell(before, 'seconds', '.1f'):>10}{after['seconds']:>9.1f}"
              f"{cell(before, 'cpu_seconds', '.1f'):>14}{after['cpu_seconds']:>13.1f}{rate(before):>15}{rate(after):>14}"
              f"{cell(before, 'audit_peak_mb', 'd'):>12}{after['audit_peak_mb']:>11d}"
              f"{'-' if before is None else ('yes' if results[-1]['same_report'] else 'NO'):>13}")
    table = snli_like(sizes[-1])
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
