"""How fast the leakage audit and the contamination check are, and how much of the near-duplicate search's target
they find: the LSH engine of the audit (LSH bands in numpy) side by side with datasketch's MinHashLSH and rensa's
(Rust) RMinHashLSH on the same rows.

    python benchmarks/audit.py                              # 20k, 100k, 570k rows, the engines, the recall sample
    python benchmarks/audit.py --sizes 20000,100000 --eval 1000 --train 5000
    python benchmarks/audit.py --json                       # last line: one JSON object
    python benchmarks/audit.py --no-before                  # only the current engine (skip datasketch's column)
    python benchmarks/audit.py --against 20000:570000,20000:2000000   # eval rows : OTHER rows, streamed
    python benchmarks/audit.py --curriculum ../shared/data/curriculum/tasks   # the audit inside a full build

**Speed.** SNLI has 570k rows, but only its dev and test files (19,666 labelled rows) are here
(``../shared/data/snli``), so the rows are SNLI-like: premises and hypotheses recombined from the real
ones (the first half of one sentence's words and the second half of another's), about 3.7 hypotheses
per premise as in SNLI's train split, seeded. Five configs are drawn at random over all rows (each a
seeded permutation: 10,000 validation and 10,000 test rows per 570k, the rest train), and the audit
(:func:`split_builders.evidence.audit.audit`, the function builds and ``resplit audit`` use) runs on
them as a build hands them over: one Arrow table and each config's row positions. Each size runs twice, each
in a fresh Python process: *datasketch* (the same signatures inserted one text at a time into datasketch's
``MinHashLSH``, the former engine, ``near_duplicate_pairs(engine="datasketch")``) and *bands* (each band's
keys sorted in numpy, the current engine). Printed side by side: seconds, CPU seconds, rows/s and the
audit's peak memory (the process's peak resident set less its resident set before the audit); the two
reports must be identical (same signatures, same buckets), which the last column says.

**Engines.** On a sample of the largest table (``--eval`` evaluation rows, ``--train`` train rows; a tenth of
the evaluation rows replaced by a copy of a train row with one word changed), every evaluation-train pair of
different texts whose exact Jaccard of character 5-grams is at least the threshold is found by a naive
all-pairs comparison (sparse matrix products, scipy): the truth. Then each engine searches the same texts with
the same LSH parameters (bands x rows) and confirms its candidates with the same exact Jaccard: *bands*
(the audit's), *datasketch* (``MinHashLSH``) and *rensa* (``RMinHash.from_token_sets`` of each text's 5-gram
strings, ``RMinHashLSH`` with ``bands * rows`` permutations, ``query_all``). Printed: seconds, pairs found,
recall against the truth, and the pairs not in the truth (precision is 1 when there are none).

**Against.** ``--against EVAL:OTHER`` checks ``EVAL`` SNLI-like evaluation rows against an ``OTHER``-row
Parquet file streamed in chunks (:func:`split_builders.evidence.contamination.contamination`, what ``resplit
audit TARGET --against OTHER`` runs), each in a fresh process: seconds and peak memory, so that growth with
OTHER's rows (linear) and memory bounded by the evaluation rows show.

**Inside a build.** ``--curriculum TASKS`` runs ``resplit curriculum --data TASKS --out <tmp>
--no-inoculation --no-progress`` (the 36 phenomena) with each engine, each in a fresh process, and
times :func:`split_builders.evidence.audit.audit` inside it (a wrapper): the build's seconds, the
audit's seconds and share, the audit's peak memory above the resident set at its start (sampled every
20 ms) and the process's peak.

The machine is shared: compare the columns of one run (ratios), not runs on different days.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
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


def use_engine(mode: str) -> None:
    """Make the audit search with ``mode``'s engine (``datasketch`` or ``bands``, the default)."""
    from functools import partial

    from split_builders.evidence import audit as audit_module, near_duplicates

    if mode == "datasketch":
        audit_module.near_duplicate_pairs = partial(near_duplicates.near_duplicate_pairs, engine="datasketch")


def _resident_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def one_run(n: int, mode: str, threshold: float) -> dict:
    """One audit of ``n`` rows in this process with ``mode``'s engine: seconds, the audit's peak memory
    above the resident set before it (MiB), and a digest of the report."""
    import datasketch  # noqa: F401  (imported outside the timing)

    from split_builders.evidence import near_duplicates

    near_duplicates.permutations()  # datasketch's permutations, outside the timing
    use_engine(mode)
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
    from split_builders.evidence import audit as audit_module

    use_engine(mode)
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
    for mode in ("datasketch", "bands") if before else ("bands",):
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
        union = sizes[start_row:min(start_row + 250, len(evaluation)), None] + sizes[None, len(evaluation):] - common
        jaccard = np.divide(common, union, out=np.zeros_like(common), where=union > 0)
        for i, j in zip(*np.nonzero(jaccard >= threshold)):
            if evaluation[start_row + i] != train[j]:
                found.add((start_row + int(i), int(j)))
    return found, time.perf_counter() - start


def _pairs_of(evaluation: list, train: list, search) -> tuple[set, float]:
    """The (evaluation, train) row pairs of different texts that ``search(distinct texts, left, right)`` returns
    as ``(u, v)`` positions in the distinct texts, and its seconds."""
    distinct = list(dict.fromkeys(evaluation + train))
    number = {t: k for k, t in enumerate(distinct)}
    left, right = np.zeros(len(distinct), dtype=bool), np.zeros(len(distinct), dtype=bool)
    left[[number[t] for t in evaluation]] = True
    right[[number[t] for t in train]] = True
    start = time.perf_counter()
    u, v = search(distinct, left, right)
    seconds = time.perf_counter() - start
    linked: dict = {}
    for a, b in zip(np.asarray(u).tolist(), np.asarray(v).tolist()):
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
    return found, seconds


def audit_engine(engine: str, threshold: float):
    """The audit's search (:func:`~split_builders.evidence.near_duplicates.near_duplicate_pairs`) with ``engine``."""
    from split_builders.evidence.near_duplicates import near_duplicate_pairs

    def search(texts, left, right):
        u, v, _, _ = near_duplicate_pairs(texts, threshold=threshold, left=left, right=right, engine=engine)
        return u, v
    return search


def rensa_engine(threshold: float):
    """rensa's search: ``RMinHash`` of each text's character 5-gram strings (``from_token_sets``, in Rust), the
    train texts in an ``RMinHashLSH`` of the audit's bands x rows, every evaluation text queried
    (``query_all``), candidates confirmed with the audit's exact Jaccard."""
    from rensa import RMinHash, RMinHashLSH

    from split_builders.evidence.near_duplicates import MINHASH_SEED, NGRAM, exact_jaccard, lsh_parameters

    bands, rows = lsh_parameters(threshold)

    def search(texts, left, right):
        tokens = [[t[i:i + NGRAM] for i in range(len(t) - NGRAM + 1)] if len(t) >= NGRAM else ([t] if t else [])
                  for t in texts]
        sketches = RMinHash.from_token_sets(tokens, bands * rows, MINHASH_SEED)
        index = RMinHashLSH(threshold, bands * rows, bands)
        keys = np.flatnonzero(right & np.array([bool(t) for t in tokens]))
        index.insert_pairs([(int(k), sketches[k]) for k in keys.tolist()])
        queries = np.flatnonzero(left & np.array([bool(t) for t in tokens]))
        candidates = index.query_all([sketches[k] for k in queries.tolist()])
        u = np.repeat(queries, [len(c) for c in candidates])
        v = np.fromiter((k for c in candidates for k in c), dtype=np.int64, count=int(u.size))
        keep = u != v
        pairs = np.stack([np.minimum(u[keep], v[keep]), np.maximum(u[keep], v[keep])], axis=1)
        pairs = np.unique(pairs, axis=0) if len(pairs) else pairs.reshape(0, 2)
        jaccard = exact_jaccard(texts, pairs)
        found = pairs[jaccard >= threshold]
        return found[:, 0], found[:, 1]
    return search


def engines(evaluation: list, train: list, threshold: float, *, rensa: bool = True) -> list[dict]:
    """Each engine on the same sample: seconds, the pairs it finds, recall and pairs outside the truth."""
    truth, naive_seconds = naive_pairs(evaluation, train, threshold)
    runs = [{"engine": "naive all pairs", "seconds": naive_seconds, "pairs": len(truth), "recall": 1.0, "extra": 0}]
    for name, search in (("bands (audit)", audit_engine("bands", threshold)),
                         ("datasketch MinHashLSH", audit_engine("datasketch", threshold)),
                         *((("rensa RMinHashLSH", rensa_engine(threshold)),) if rensa else ())):
        found, seconds = _pairs_of(evaluation, train, search)
        runs.append({"engine": name, "seconds": seconds, "pairs": len(found & truth),
                     "recall": len(found & truth) / len(truth) if truth else float("nan"), "extra": len(found - truth)})
    return runs


# ---------------------------------------------------------------------------------------------
# Against: evaluation rows indexed, a large OTHER streamed
# ---------------------------------------------------------------------------------------------


def against_run(n_eval: int, n_other: int, threshold: float) -> dict:
    """In this process: ``n_eval`` SNLI-like evaluation rows against an ``n_other``-row Parquet file (a tenth of
    the evaluation rows planted in it), streamed; seconds and peak memory of the check. The OTHER file is written
    first, outside the timing: one 500,000-row SNLI-like block written again and again (every chunk is still
    normalised, MinHashed and looked up on its own: the check does not know the blocks repeat)."""
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from split_builders.api import Fields
    from split_builders.evidence.contamination import contamination
    from split_builders.evidence.near_duplicates import permutations
    from split_builders.evidence.pools import Part

    permutations()
    evaluation = snli_like(n_eval, seed=7)
    with tempfile.TemporaryDirectory(prefix="against-bench-") as work:
        other = Path(work) / "other.parquet"
        writer, block = None, snli_like(min(500_000, n_other), seed=100)  # one block, written again and again
        for start in range(0, n_other, 500_000):
            chunk = block.slice(0, min(500_000, n_other - start))
            if start == 0:
                chunk = pa.concat_tables([evaluation.slice(0, n_eval // 10), chunk.slice(n_eval // 10)])
            writer = writer or pq.ParquetWriter(other, chunk.schema)
            writer.write_table(chunk)
        writer.close()
        del chunk, block
        parts = {"default": {"test": Part(evaluation)}}
        fields = Fields("classification", text=("premise", "hypothesis"), label="gold_label")
        before, cpu = _resident_mb(), time.process_time()
        start = time.perf_counter()
        report, _ = contamination(parts, fields, [str(other)], work=work, threshold=threshold)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    entry = report["against"]["default"]["test"]
    return {"eval": n_eval, "other": n_other, "seconds": round(seconds, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2), "peak_mb": round(peak),
            "check_peak_mb": round(max(peak - before, 0.0)), **{k: entry[k] for k in ("clean", "input_contaminated",
                                                                                       "input_label_contaminated")}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,100000,570000", help="rows per run, comma-separated (none: 0)")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--eval", type=int, default=3000, help="evaluation rows of the recall sample")
    parser.add_argument("--train", type=int, default=20000, help="train rows of the recall sample")
    parser.add_argument("--against", default="", help="EVAL:OTHER row counts of streamed checks, comma-separated")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--no-before", action="store_true", help="skip datasketch's engine in the size runs")
    parser.add_argument("--curriculum", metavar="TASKS", help="time the audit inside a full CURRICULUM build of "
                                                                 "the zips in TASKS (and nothing else)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one run in this process (run_fresh)
    parser.add_argument("--one-against", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("datasketch", "bands"), default="bands", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_against:
        n_eval, n_other = (int(x) for x in args.one_against.split(":"))
        print(json.dumps(against_run(n_eval, n_other, args.threshold)))
        return 0
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

    from importlib.metadata import PackageNotFoundError, version

    try:
        import rensa  # noqa: F401
        rensa_version = version("rensa")
    except (ImportError, PackageNotFoundError):
        rensa_version = "not installed (pip install rensa): its row is left out"

    sizes = [int(s) for s in args.sizes.split(",") if s.strip() and int(s)]
    print(f"CPU: {cpu_model()} ({os.cpu_count()} cores, shared); Python {platform.python_version()}, numpy "
          f"{np.__version__}, datasketch {version('datasketch')}, rensa {rensa_version}")
    results = []
    if sizes:
        print(f"{'rows':>9}{'distinct texts':>16}{'checked pairs':>14}{'near pairs':>12}"
              f"{'s datasketch':>14}{'s bands':>9}{'CPU s datasketch':>18}{'CPU s bands':>13}{'ratio':>7}"
              f"{'MiB datasketch':>16}{'MiB bands':>11}{'same report':>13}")
    for n in sizes:
        after = run_fresh(n, "bands", args.threshold)
        before = None if args.no_before else run_fresh(n, "datasketch", args.threshold)
        results.append({**{k: v for k, v in after.items() if k not in ("mode", "digest")},
                        "datasketch": None if before is None else {"seconds": before["seconds"],
                                                                   "cpu_seconds": before["cpu_seconds"],
                                                                   "audit_peak_mb": before["audit_peak_mb"]},
                        "same_report": None if before is None else before["digest"] == after["digest"]})
        cell = lambda run, key, fmt: "-" if run is None else format(run[key], fmt)  # noqa: E731
        ratio = "-" if before is None else f"{before['cpu_seconds'] / max(after['cpu_seconds'], 1e-9):.1f}x"
        print(f"{n:>9}{after['distinct_texts']:>16}{after['checked_pairs']:>14}{after['near_duplicate_pairs']:>12}"
              f"{cell(before, 'seconds', '.1f'):>14}{after['seconds']:>9.1f}"
              f"{cell(before, 'cpu_seconds', '.1f'):>18}{after['cpu_seconds']:>13.1f}{ratio:>7}"
              f"{cell(before, 'audit_peak_mb', 'd'):>16}{after['audit_peak_mb']:>11d}"
              f"{'-' if before is None else ('yes' if results[-1]['same_report'] else 'NO'):>13}")
    exponent = None
    if len(results) > 1:
        exponent = float(np.polyfit(np.log([r["rows"] for r in results]), np.log([r["seconds"] for r in results]), 1)[0])
        print(f"time ~ rows^{exponent:.2f} (1 is linear)")

    runs = []
    if args.eval and args.train:  # --eval 0: no engines' sample
        table = snli_like(max(sizes or [100_000]))
        evaluation, train, planted = recall_sample(table, args.eval, args.train)
        runs = engines(evaluation, train, args.threshold, rensa="not installed" not in rensa_version)
        print(f"\nengines on one sample: {args.eval} evaluation x {args.train} train rows of the {table.num_rows}-row "
              f"table, {planted} planted near-duplicates (one word changed), Jaccard >= {args.threshold:g}")
        print(f"{'':<24}{'seconds':>9}{'pairs':>8}{'recall':>9}{'not in truth':>14}")
        for run in runs:
            print(f"{run['engine']:<24}{run['seconds']:>9.2f}{run['pairs']:>8}{run['recall']:>9.4f}{run['extra']:>14}")

    against = []
    for spec in [a for a in args.against.split(",") if a.strip()]:
        out = subprocess.run([sys.executable, __file__, "--one-against", spec, "--threshold", str(args.threshold)],
                             capture_output=True, text=True, check=True).stdout
        against.append(json.loads(out.strip().splitlines()[-1]))
    if against:
        print(f"\nagainst: evaluation rows indexed, OTHER (Parquet) streamed in chunks")
        print(f"{'eval':>8}{'other':>10}{'seconds':>9}{'CPU s':>8}{'check peak MiB':>16}{'process peak MiB':>18}"
              f"{'clean':>8}{'input':>7}{'input+label':>13}")
        for run in against:
            print(f"{run['eval']:>8}{run['other']:>10}{run['seconds']:>9.1f}{run['cpu_seconds']:>8.1f}"
                  f"{run['check_peak_mb']:>16d}{run['peak_mb']:>18d}{run['clean']:>8}{run['input_contaminated']:>7}"
                  f"{run['input_label_contaminated']:>13}")
    if args.json:
        print(json.dumps({"cpu": cpu_model(), "sizes": results, "exponent": exponent, "engines": runs,
                          "against": against}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
